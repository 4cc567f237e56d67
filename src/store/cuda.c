/*
 * cuda.c - the CUDA tables of schema 9 (cuda_procs, cuda_stats): each
 * process's newest snapshot of what the CUDA hook counted, replaced whole,
 * and read back per job.  Each replacement takes the next fact seq (so the
 * head's sender sends it: export.c).  See store.h.
 *
 *   store_put_cuda_proc    one process's snapshot (its row and its stats)
 *   store_get_cuda_procs   every process of a job, by pid
 */
#include "store/conn.h"
#include "store/facts.h"
#include "store/writer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "store/jobdata.h"

#define CUDA_PROC_NAMES	   FACT_NAMES(CUDA_PROC_COLUMNS)
#define CUDA_PROC_EXCLUDED FACT_EXCLUDED(CUDA_PROC_COLUMNS)

#define CUDA_SCHEMA 9

/* The first bind failure of a row, or SQLITE_OK. */
struct cuda_binder {
	struct db_stmt *stmt;
	int col, rc;
};

static void bind_i64(struct cuda_binder *b, int64_t v)
{
	int rc = db_bind_int64(b->stmt, ++b->col, v);

	if (b->rc == SQLITE_OK)
		b->rc = rc;
}

static void bind_null(struct cuda_binder *b)
{
	int rc = db_bind_null(b->stmt, ++b->col);

	if (b->rc == SQLITE_OK)
		b->rc = rc;
}

static void bind_u64_if(struct cuda_binder *b, bool have, uint64_t v)
{
	if (have)
		bind_i64(b, (int64_t)v); /* bit for bit: read back as uint64_t */
	else
		bind_null(b);
}

static void bind_real_if(struct cuda_binder *b, bool have, double v)
{
	int rc;

	if (!have || !isfinite(v)) {
		bind_null(b);
		return;
	}
	rc = db_bind_double(b->stmt, ++b->col, v);
	if (b->rc == SQLITE_OK)
		b->rc = rc;
}

static void bind_text_opt(struct cuda_binder *b, const char *s)
{
	int rc;

	if (!s || !*s) {
		bind_null(b);
		return;
	}
	rc = db_bind_text(b->stmt, ++b->col, s, -1, SQLITE_STATIC);
	if (b->rc == SQLITE_OK)
		b->rc = rc;
}

static int by_kind_name(const void *pa, const void *pb)
{
	const struct cuda_stat *a = *(const struct cuda_stat *const *)pa;
	const struct cuda_stat *b = *(const struct cuda_stat *const *)pb;

	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* A cached statement back to its unbound state, for the next use. */
static void done_with(struct db_stmt *stmt)
{
	db_reset(stmt);
	db_clear_bindings(stmt);
}

/* Runs a bound statement that returns no row: 0 or -errno (said). */
static int step_done(struct store *st, struct cuda_binder *b, const char *what)
{
	int rc = b->rc == SQLITE_OK ? db_step(b->stmt) : b->rc;

	if (rc != SQLITE_DONE && rc != SQLITE_OK)
		return store__write_fail(st, rc, what);
	return 0;
}

_Static_assert(FACT_NCOLUMNS(CUDA_PROC_COLUMNS) == 8, "put_proc_row binds 8, read_procs reads 7");

/* A process's row replaced whole: its new seq and every column (facts.h). */
/* clang-format off */
static const char cuda_proc_upsert[] =
    FACT_INSERT(cuda_procs, "seq, job_id, pid", "?, ?, ?", CUDA_PROC_COLUMNS)
    " ON CONFLICT (job_id, pid) DO UPDATE SET seq = excluded.seq" CUDA_PROC_EXCLUDED;
/* clang-format on */

static int put_proc_row(struct store *st, int64_t job_id, const struct cuda_proc *p, int64_t now_ms)
{
	struct cuda_binder b = {0};
	int rc, ret;

	rc = store__cached_stmt(st, cuda_proc_upsert, &b.stmt);
	if (rc != SQLITE_OK)
		return store__write_fail(st, rc, "keep a process's CUDA state");
	bind_i64(&b, st->next_seq); /* the fact seq: a head is sent what changed */
	bind_i64(&b, job_id);
	bind_i64(&b, p->pid);
	bind_text_opt(&b, cuda_proc_state_name(p->state));
	bind_text_opt(&b, p->message[0] ? p->message : NULL);
	bind_u64_if(&b, p->cupti_version != 0, p->cupti_version);
	bind_i64(&b, p->contexts);
	bind_i64(&b, (int64_t)p->dropped);
	bind_i64(&b, (int64_t)p->seq);
	bind_i64(&b, p->final);
	bind_i64(&b, now_ms);
	ret = step_done(st, &b, "keep a process's CUDA state");
	done_with(b.stmt);
	if (!ret)
		st->next_seq++;
	return ret;
}

static int put_stat_rows(struct store *st, int64_t job_id, int32_t pid,
			 const struct cuda_stat *const *sorted, size_t n)
{
	struct cuda_binder b = {0};
	int rc, ret = 0;

	rc = store__cached_stmt(
	    st,
	    "INSERT INTO cuda_stats (job_id, pid, kind, name, count, total_ns, min_ns,"
	    " max_ns, m2_ns2, bytes, min_bytes, max_bytes, m2_bytes2)"
	    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	    &b.stmt);
	if (rc != SQLITE_OK)
		return store__write_fail(st, rc, "keep a process's CUDA tables");
	for (size_t i = 0; i < n && !ret;) {
		struct cuda_stat s = *sorted[i];
		bool mem;

		/* the same kind and name again: one row of both */
		for (i++; i < n && by_kind_name(&sorted[i - 1], &sorted[i]) == 0; i++)
			cuda_stat_merge(&s, sorted[i]);
		mem = s.kind == CUDA_STAT_MEMCPY || s.kind == CUDA_STAT_MEMSET;
		db_reset(b.stmt);
		b.col = 0;
		b.rc = SQLITE_OK;
		bind_i64(&b, job_id);
		bind_i64(&b, pid);
		bind_text_opt(&b, cuda_stat_kind_name(s.kind));
		rc = db_bind_text(b.stmt, ++b.col, s.name, -1, SQLITE_STATIC);
		if (b.rc == SQLITE_OK)
			b.rc = rc;
		bind_i64(&b, (int64_t)s.count);
		bind_i64(&b, (int64_t)s.total_ns);
		bind_u64_if(&b, s.count > 0, s.min_ns);
		bind_u64_if(&b, s.count > 0, s.max_ns);
		bind_real_if(&b, s.count > 0, s.m2_ns2);
		bind_u64_if(&b, mem, s.bytes);
		bind_u64_if(&b, mem && s.count > 0, s.min_bytes);
		bind_u64_if(&b, mem && s.count > 0, s.max_bytes);
		bind_real_if(&b, mem && s.count > 0, s.m2_bytes2);
		ret = step_done(st, &b, "keep a process's CUDA tables");
	}
	done_with(b.stmt);
	return ret;
}

static int delete_stats(struct store *st, int64_t job_id, int32_t pid)
{
	struct cuda_binder b = {0};
	int rc, ret;

	rc = store__cached_stmt(st, "DELETE FROM cuda_stats WHERE job_id = ? AND pid = ?", &b.stmt);
	if (rc != SQLITE_OK)
		return store__write_fail(st, rc, "replace a process's CUDA tables");
	bind_i64(&b, job_id);
	bind_i64(&b, pid);
	ret = step_done(st, &b, "replace a process's CUDA tables");
	done_with(b.stmt);
	return ret;
}

int store_put_cuda_proc(struct store *st, int64_t job_id, const struct cuda_proc *p, int64_t now_ms)
{
	const struct cuda_stat **sorted = NULL;
	bool own;
	int ret;

	if (st->schema_version < CUDA_SCHEMA)
		return log_err(-EPROTONOSUPPORT,
			       "store '%s' is older than schema %d: it has no CUDA tables",
			       st->path, CUDA_SCHEMA);
	if (p->pid < 0)
		return log_err(-EINVAL, "store '%s': CUDA tables of pid %d", st->path, (int)p->pid);
	if (p->nstats) {
		sorted = malloc(p->nstats * sizeof(*sorted));
		if (!sorted)
			return log_err(-ENOMEM, "cannot keep the CUDA tables of pid %d",
				       (int)p->pid);
		for (size_t i = 0; i < p->nstats; i++)
			sorted[i] = &p->stats[i];
		qsort(sorted, p->nstats, sizeof(*sorted), by_kind_name);
	}
	ret = store__write_begin(st, &own);
	if (ret)
		goto out_free;
	ret = delete_stats(st, job_id, p->pid);
	if (!ret)
		ret = put_proc_row(st, job_id, p, now_ms);
	if (!ret && p->nstats)
		ret = put_stat_rows(st, job_id, p->pid, sorted, p->nstats);
	/* PostgreSQL sends INSERTs ahead: their failure is known here, not at the tick's commit */
	if (!ret) {
		int rc = db_flush(&st->conn);

		if (rc != SQLITE_OK)
			ret = store__write_fail(st, rc, "keep a process's CUDA tables");
	}
	ret = store__write_end(st, own, ret);
out_free:
	free(sorted);
	return ret;
}

/* The proc of pid in procs (sorted by pid), or NULL. */
static struct cuda_proc *proc_of(struct cuda_proc *procs, size_t n, int64_t pid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (procs[mid].pid == pid)
			return &procs[mid];
		if (procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int read_procs(struct store *st, int64_t job_id, struct cuda_proc **procs, size_t *n)
{
	struct db_stmt *stmt;
	size_t alloc = 0;
	int rc, ret;

	ret = store__prepare(
	    st, "SELECT pid" CUDA_PROC_NAMES " FROM cuda_procs WHERE job_id = ? ORDER BY pid",
	    "read the CUDA tables", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, job_id);
	while ((rc = db_step(stmt)) == SQLITE_ROW) {
		struct cuda_proc *p;
		int64_t pid = db_column_int64(stmt, 0);
		const char *state = db_column_str(stmt, 1);

		if (pid < 0 || pid > INT32_MAX)
			continue;
		if (*n == alloc) {
			size_t grown_n = alloc ? alloc * 2 : 8;
			struct cuda_proc *grown = realloc(*procs, grown_n * sizeof(*grown));

			if (!grown) {
				ret = log_err(-ENOMEM, "cannot read the CUDA tables");
				break;
			}
			*procs = grown;
			alloc = grown_n;
		}
		p = &(*procs)[(*n)++];
		cuda_proc_init(p);
		p->pid = (int32_t)pid;
		snprintf(p->message, sizeof(p->message), "%s", db_column_str(stmt, 2));
		if (cuda_proc_state_parse(state, &p->state)) {
			/* a state of a newer version: not ok, and its name says what */
			p->state = CUDA_PROC_ERROR;
			if (!p->message[0])
				snprintf(p->message, sizeof(p->message), "state %.64s", state);
		}
		p->cupti_version = (uint32_t)db_column_int64(stmt, 3);
		p->contexts = (uint32_t)db_column_int64(stmt, 4);
		p->dropped = (uint64_t)db_column_int64(stmt, 5);
		p->seq = (uint64_t)db_column_int64(stmt, 6);
		p->final = db_column_int64(stmt, 7) != 0;
	}
	if (!ret && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "read the CUDA tables");
	db_finalize(stmt);
	return ret;
}

static int read_stats(struct store *st, int64_t job_id, struct cuda_proc *procs, size_t n)
{
	struct db_stmt *stmt;
	int rc, ret;

	ret =
	    store__prepare(st,
			   "SELECT pid, kind, name, count, total_ns, min_ns, max_ns, m2_ns2, bytes,"
			   " min_bytes, max_bytes, m2_bytes2 FROM cuda_stats WHERE job_id = ?"
			   " ORDER BY pid, kind, name",
			   "read the CUDA tables", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, job_id);
	while ((rc = db_step(stmt)) == SQLITE_ROW) {
		struct cuda_proc *p = proc_of(procs, n, db_column_int64(stmt, 0));
		enum cuda_stat_kind kind;
		struct cuda_stat *s;

		if (!p || cuda_stat_kind_parse(db_column_str(stmt, 1), &kind))
			continue; /* no process row, or a kind of a newer version */
		s = cuda_proc_add(p, kind, db_column_str(stmt, 2));
		if (!s) {
			ret = log_err(-ENOMEM, "cannot read the CUDA tables");
			break;
		}
		s->count = (uint64_t)db_column_int64(stmt, 3);
		s->total_ns = (uint64_t)db_column_int64(stmt, 4);
		s->min_ns = (uint64_t)db_column_int64(stmt, 5);
		s->max_ns = (uint64_t)db_column_int64(stmt, 6);
		s->m2_ns2 = db_column_double(stmt, 7);
		s->bytes = (uint64_t)db_column_int64(stmt, 8);
		s->min_bytes = (uint64_t)db_column_int64(stmt, 9);
		s->max_bytes = (uint64_t)db_column_int64(stmt, 10);
		s->m2_bytes2 = db_column_double(stmt, 11);
	}
	if (!ret && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "read the CUDA tables");
	db_finalize(stmt);
	return ret;
}

int store_get_cuda_procs(struct store *st, int64_t job_id, struct cuda_proc **procs, size_t *nprocs)
{
	int ret;

	*procs = NULL;
	*nprocs = 0;
	if (st->schema_version < CUDA_SCHEMA)
		return 0;
	ret = read_procs(st, job_id, procs, nprocs);
	if (!ret)
		ret = read_stats(st, job_id, *procs, *nprocs);
	if (ret) {
		for (size_t i = 0; i < *nprocs; i++)
			cuda_proc_release(&(*procs)[i]);
		free(*procs);
		*procs = NULL;
		*nprocs = 0;
	}
	return ret;
}
