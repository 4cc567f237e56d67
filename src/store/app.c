/*
 * app.c - app metrics (schema 10: app_samples) and markers (schema 1:
 * marks): one row per metric per tick, its sketch as text, and the job's
 * markers.  Each row takes the next fact seq, so the head's sender sends
 * them (export.c) and the head copies them (ingest.c).  See store.h.
 *
 *   store_put_app_points      one tick's points of a job
 *   store_put_app_marks       markers of a job
 *   store_for_each_app_point  a job's points in a window, by time
 *   store_get_app_marks       a job's markers, by time
 */
#include "store/conn.h"
#include "store/facts.h"
#include "store/writer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/log.h"
#include "store/jobdata.h"

#define APP_SCHEMA 10

/* Each table's columns after its key (facts.h), in its order. */
#define APP_NAMES  FACT_NAMES(APP_SAMPLE_COLUMNS)
#define MARK_NAMES FACT_NAMES(MARK_COLUMNS)

/* The first bind failure of a row, or SQLITE_OK. */
struct app_binder {
	struct db_stmt *stmt;
	int col, rc;
};

static void note(struct app_binder *b, int rc)
{
	if (b->rc == SQLITE_OK)
		b->rc = rc;
}

static void bind_i64(struct app_binder *b, int64_t v)
{
	note(b, db_bind_int64(b->stmt, ++b->col, v));
}

static void bind_real(struct app_binder *b, bool have, double v)
{
	if (have && isfinite(v))
		note(b, db_bind_double(b->stmt, ++b->col, v));
	else
		note(b, db_bind_null(b->stmt, ++b->col));
}

static void bind_text(struct app_binder *b, const char *s, int n)
{
	if (s)
		note(b, db_bind_text(b->stmt, ++b->col, s, n, SQLITE_STATIC));
	else
		note(b, db_bind_null(b->stmt, ++b->col));
}

static void binder_reset(struct app_binder *b)
{
	db_reset(b->stmt);
	b->col = 0;
	b->rc = SQLITE_OK;
}

/* Runs a bound statement that returns no row, taking the next seq: 0 or -errno (said). */
static int step_seq(struct store *st, struct app_binder *b, const char *what)
{
	int rc = b->rc == SQLITE_OK ? db_step(b->stmt) : b->rc;

	if (rc != SQLITE_DONE && rc != SQLITE_OK)
		return store__write_fail(st, rc, what);
	st->next_seq++;
	return 0;
}

/* Ends a write: PostgreSQL's INSERTs sent ahead are waited for here, not at the tick's commit. */
static int write_end(struct store *st, bool own, int ret, const char *what)
{
	if (!ret) {
		int rc = db_flush(&st->conn);

		if (rc != SQLITE_OK)
			ret = store__write_fail(st, rc, what);
	}
	return store__write_end(st, own, ret);
}

_Static_assert(FACT_NCOLUMNS(APP_SAMPLE_COLUMNS) == 9, "put_points binds 9, read back in order");

static int put_points(struct store *st, int64_t job_id, int64_t ts_ms, const struct app_point *pts,
		      size_t n, struct strbuf *sk)
{
	static const char what[] = "keep a job's app metrics";
	struct app_binder b = {0};
	int rc, ret = 0;

	rc = db_prepare(
	    &st->conn,
	    FACT_INSERT(app_samples, "seq, job_id, ts_ms", "?, ?, ?", APP_SAMPLE_COLUMNS), &b.stmt);
	if (rc != SQLITE_OK)
		return store__write_fail(st, rc, what);
	for (size_t i = 0; i < n && !ret; i++) {
		const struct app_point *p = &pts[i];
		bool has = p->count > 0 && isfinite(p->count);

		if (!has || (unsigned)p->type >= APP_TYPES)
			continue; /* nothing received: no row */
		strbuf_reset(sk);
		if (app_type_has_sketch(p->type)) {
			ret = app_sketch_format(&p->sk, sk);
			if (ret) {
				ret = log_err(ret, "cannot keep the sketch of app metric '%s'",
					      p->name);
				break;
			}
		}
		binder_reset(&b);
		bind_i64(&b, st->next_seq);
		bind_i64(&b, job_id);
		bind_i64(&b, ts_ms);
		bind_text(&b, p->name, (int)strnlen(p->name, sizeof(p->name)));
		bind_text(&b, app_type_name(p->type), -1);
		bind_text(&b, p->tags, (int)strnlen(p->tags, sizeof(p->tags)));
		bind_real(&b, true, p->count);
		bind_real(&b, true, p->sum);
		bind_real(&b, true, p->min);
		bind_real(&b, true, p->max);
		bind_real(&b, true, p->last);
		bind_text(&b, app_type_has_sketch(p->type) ? strbuf_str(sk) : NULL, -1);
		ret = step_seq(st, &b, what);
	}
	db_finalize(b.stmt);
	return ret;
}

int store_put_app_points(struct store *st, int64_t job_id, int64_t ts_ms,
			 const struct app_point *pts, size_t n)
{
	struct strbuf sk;
	bool own;
	int ret;

	if (st->schema_version < APP_SCHEMA)
		return log_err(-EPROTONOSUPPORT,
			       "store '%s' is older than schema %d: it has no app metrics",
			       st->path, APP_SCHEMA);
	if (!n)
		return 0;
	strbuf_init(&sk, 1 << 20);
	ret = store__write_begin(st, &own);
	if (!ret) {
		ret = put_points(st, job_id, ts_ms, pts, n, &sk);
		ret = write_end(st, own, ret, "keep a job's app metrics");
	}
	strbuf_release(&sk);
	return ret;
}

_Static_assert(FACT_NCOLUMNS(MARK_COLUMNS) == 3, "store_put_app_marks binds 3, read back in order");

int store_put_app_marks(struct store *st, int64_t job_id, const struct app_mark *marks, size_t n)
{
	static const char what[] = "keep a job's markers";
	struct app_binder b = {0};
	bool own;
	int rc, ret;

	if (!n)
		return 0;
	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	rc = db_prepare(&st->conn,
			FACT_INSERT(marks, "seq, job_id, ts_ms", "?, ?, ?", MARK_COLUMNS), &b.stmt);
	if (rc != SQLITE_OK)
		return store__write_end(st, own, store__write_fail(st, rc, what));
	for (size_t i = 0; i < n && !ret; i++) {
		const struct app_mark *m = &marks[i];
		size_t tl = strnlen(m->text, sizeof(m->text));

		binder_reset(&b);
		bind_i64(&b, st->next_seq);
		bind_i64(&b, job_id);
		bind_i64(&b, m->ts_ms);
		bind_text(&b, m->name, (int)strnlen(m->name, sizeof(m->name)));
		bind_real(&b, false, 0); /* value: never written */
		bind_text(&b, tl ? m->text : NULL, (int)tl);
		ret = step_seq(st, &b, what);
	}
	db_finalize(b.stmt);
	return write_end(st, own, ret, what);
}

/* A column that may be NULL: NAN then. */
static double column_real(struct db_stmt *s, int c)
{
	return db_column_type(s, c) == SQLITE_NULL ? NAN : db_column_double(s, c);
}

int store_for_each_app_point(struct store *st, int64_t job_id, int64_t from_ms, int64_t to_ms,
			     int (*fn)(void *arg, int64_t ts_ms, const struct app_point *p),
			     void *arg)
{
	struct app_point *p;
	struct db_stmt *stmt;
	int rc, ret;

	if (st->schema_version < APP_SCHEMA)
		return 0;
	p = malloc(sizeof(*p));
	if (!p)
		return log_err(-ENOMEM, "cannot read the app metrics");
	ret = store__prepare(st,
			     "SELECT ts_ms" APP_NAMES " FROM app_samples"
			     " WHERE job_id = ? AND ts_ms >= ? AND ts_ms < ?"
			     " ORDER BY ts_ms, name, type, tags, seq",
			     "read the app metrics", &stmt);
	if (ret)
		goto out_free;
	db_bind_int64(stmt, 1, job_id);
	db_bind_int64(stmt, 2, from_ms);
	db_bind_int64(stmt, 3, to_ms);
	while ((rc = db_step(stmt)) == SQLITE_ROW) {
		const char *type = (const char *)db_column_text(stmt, 2);
		const char *sk = (const char *)db_column_text(stmt, 9);
		enum app_type t;

		if (!type || app_type_parse(type, &t))
			continue; /* a type of a newer version */
		app_point_init(p);
		snprintf(p->name, sizeof(p->name), "%s", db_column_str(stmt, 1));
		snprintf(p->tags, sizeof(p->tags), "%s", db_column_str(stmt, 3));
		p->type = t;
		p->count = column_real(stmt, 4);
		p->sum = column_real(stmt, 5);
		p->min = column_real(stmt, 6);
		p->max = column_real(stmt, 7);
		p->last = column_real(stmt, 8);
		if (!(p->count > 0) || !isfinite(p->count))
			continue;
		if (sk && app_type_has_sketch(t) &&
		    app_sketch_parse(&p->sk, sk, (size_t)db_column_bytes(stmt, 9)))
			continue; /* a sketch this version cannot read: the row is left out */
		ret = fn(arg, db_column_int64(stmt, 0), p);
		app_point_release(p);
		if (ret)
			break;
	}
	if (!ret && rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = store__read_fail(st, rc, "read the app metrics");
	db_finalize(stmt);
out_free:
	free(p);
	return ret;
}

int store_get_app_marks(struct store *st, int64_t job_id, struct app_mark **marks, size_t *n)
{
	struct db_stmt *stmt;
	size_t alloc = 0;
	int rc, ret;

	*marks = NULL;
	*n = 0;
	ret = store__prepare(
	    st, "SELECT ts_ms" MARK_NAMES " FROM marks WHERE job_id = ? ORDER BY ts_ms, seq",
	    "read the job's markers", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, job_id);
	while ((rc = db_step(stmt)) == SQLITE_ROW) {
		struct app_mark *m;

		if (ARRAY_GROW(*marks, *n, alloc, 8)) {
			ret = log_err(-ENOMEM, "cannot read the job's markers");
			break;
		}
		m = &(*marks)[(*n)++];
		memset(m, 0, sizeof(*m));
		m->ts_ms = db_column_int64(stmt, 0);
		snprintf(m->name, sizeof(m->name), "%s", db_column_str(stmt, 1));
		snprintf(m->text, sizeof(m->text), "%s", db_column_str(stmt, 3));
	}
	if (!ret && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "read the job's markers");
	db_finalize(stmt);
	if (ret) {
		free(*marks);
		*marks = NULL;
		*n = 0;
	}
	return ret;
}
