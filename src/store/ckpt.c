/*
 * ckpt.c - the report_ckpts table: a job's report state saved after its
 * rows up to a seq (analysis/reportckpt.c makes and reads the blobs), and
 * which jobs' checkpoints are due.
 *
 *   store_ckpt_get, store_ckpt_put   one job's checkpoint
 *   store_ckpt_for_each_due          the jobs whose checkpoint is behind
 */
#include "store/conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "store/reader.h"

/* The blob of a checkpoint is the size of a report's state: a few MiB at most. */
#define STORE_CKPT_MAX_BYTES (256 << 20)

int store_ckpt_get(struct store *st, int64_t job_id, struct store_ckpt *out)
{
	struct db_stmt *stmt;
	const void *blob;
	int rc, ret, n;

	memset(out, 0, sizeof(*out));
	if (st->schema_version < 6)
		return -ENOENT;
	ret = store__prepare(st,
			     "SELECT seq, ts_ms, format, made_ms, data FROM report_ckpts"
			     " WHERE job_id = ?",
			     "read a report checkpoint", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, job_id);
	rc = db_step(stmt);
	if (rc == SQLITE_ROW) {
		out->job_id = job_id;
		out->seq = db_column_int64(stmt, 0);
		out->ts_ms = db_column_int64(stmt, 1);
		out->format = db_column_int64(stmt, 2);
		out->made_ms = db_column_int64(stmt, 3);
		blob = db_column_blob(stmt, 4);
		n = db_column_bytes(stmt, 4);
		if (n <= 0 || n > STORE_CKPT_MAX_BYTES || !blob) {
			ret = -ENOENT; /* nothing a reader could use */
		} else if (!(out->data = malloc((size_t)n))) {
			ret = log_err(-ENOMEM, "cannot read a report checkpoint");
		} else {
			memcpy(out->data, blob, (size_t)n);
			out->size = (size_t)n;
		}
	} else if (rc == SQLITE_DONE) {
		ret = -ENOENT;
	} else {
		ret = store__read_fail(st, rc, "read a report checkpoint");
	}
	db_finalize(stmt);
	return ret;
}

int store_ckpt_put(struct store *st, const struct store_ckpt *c)
{
	struct db_stmt *stmt;
	int rc, ret;

	if (st->schema_version < 6)
		return -EPROTONOSUPPORT;
	if (c->size > STORE_CKPT_MAX_BYTES)
		return log_err(-E2BIG, "a report checkpoint of %zu bytes is too big", c->size);
	ret =
	    store__prepare(st,
			   "INSERT INTO report_ckpts (job_id, seq, ts_ms, format, made_ms, data)"
			   " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (job_id) DO UPDATE SET"
			   " seq = excluded.seq, ts_ms = excluded.ts_ms, format = excluded.format,"
			   " made_ms = excluded.made_ms, data = excluded.data",
			   "save a report checkpoint", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, c->job_id);
	db_bind_int64(stmt, 2, c->seq);
	db_bind_int64(stmt, 3, c->ts_ms);
	db_bind_int64(stmt, 4, c->format);
	db_bind_int64(stmt, 5, c->made_ms);
	db_bind_blob(stmt, 6, c->data, (int)c->size, SQLITE_STATIC);
	rc = db_step(stmt);
	db_finalize(stmt);
	if (rc != SQLITE_DONE)
		return store__read_fail(st, rc, "save a report checkpoint");
	return 0;
}

/*
 * The job's first and last job rows through its (job_id, ts_ms) index: a
 * seek each (and one through the packs' (tbl, key) index; packed rows are
 * older than plain ones).  A job without a checkpoint is due once its rows
 * in this store span more than the lag: a shorter span replays fast, no blob
 * for it, however long ago the job started (a head that agents of
 * long-running jobs join holds only the rows since).  One with a checkpoint
 * when that is more than the lag behind, of another format, or the job has
 * ended after it.
 */
static const char ckpt_due_sql[] =
    "SELECT id, has, seq, ts_ms, format, last_ms FROM ("
    " SELECT j.id AS id, j.end_ms AS end_ms,"
    " c.job_id IS NOT NULL AS has, c.seq AS seq, c.ts_ms AS ts_ms, c.format AS format,"
    /* the first job row: the oldest pack's (packs.h), else a plain one */
    " least((SELECT p.ts_lo FROM packs p WHERE p.tbl = 'job_samples' AND p.key = j.id"
    " ORDER BY p.seq_lo LIMIT 1),"
    " (SELECT min(s.ts_ms) FROM job_samples s WHERE s.job_id = j.id)) AS first_ms,"
    /* the last job row: a plain one, else the newest of its packs' */
    " greatest((SELECT max(s.ts_ms) FROM job_samples s WHERE s.job_id = j.id),"
    " (SELECT max(p.ts_hi) FROM packs p WHERE p.tbl = 'job_samples' AND p.key = j.id))"
    " AS last_ms"
    " FROM jobs j LEFT JOIN report_ckpts c ON c.job_id = j.id) AS d"
    " WHERE last_ms IS NOT NULL AND (CASE WHEN has THEN format != ?2 OR last_ms - ts_ms > ?1"
    " OR (end_ms IS NOT NULL AND ts_ms < last_ms) ELSE last_ms - first_ms > ?1 END)"
    " ORDER BY id";

int store_ckpt_for_each_due(struct store *st, int64_t lag_ms, int64_t format,
			    int (*fn)(const struct store_ckpt_due *d, void *arg), void *arg)
{
	struct store_ckpt_due d;
	struct db_stmt *stmt;
	int rc, ret;

	if (st->schema_version < 6)
		return 0;
	ret = store__prepare(st, ckpt_due_sql, "list the jobs due a report checkpoint", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, lag_ms);
	db_bind_int64(stmt, 2, format);
	while ((rc = db_step(stmt)) == SQLITE_ROW) {
		memset(&d, 0, sizeof(d));
		d.job_id = db_column_int64(stmt, 0);
		d.has_ckpt = db_column_int64(stmt, 1) != 0;
		d.seq = db_column_int64(stmt, 2);
		d.ts_ms = db_column_int64(stmt, 3);
		d.format = db_column_int64(stmt, 4);
		d.last_ms = db_column_int64(stmt, 5);
		ret = fn(&d, arg);
		if (ret)
			break;
	}
	if (!ret && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "list the jobs due a report checkpoint");
	db_finalize(stmt);
	return ret;
}
