/*
 * retention.c - ageing out a store a little at a time: raw rows,
 * then the 1-minute and 1-hour rollup tiers, then a size cap.
 *
 * Raw rows are deleted by seq, never by time: seq grows with time, is every
 * fact table's primary key, and so a cut in time becomes one seq bound
 * found through host_samples' (node, ts) index, and each DELETE is a short
 * range scan at the start of a B-tree.  A step deletes at most `budget`
 * rows per table, so a backlog (a new, shorter age limit; a first start on
 * an old file) drains over several ticks instead of stalling one.
 */
#include "store/conn.h"

#include <errno.h>
#include <stdio.h>

#include "common/log.h"

/* Fact tables, every one keyed by seq. */
static const char *const retention_tables[] = {
    "host_samples", "cpu_samples", "disk_samples", "net_samples", "proc_samples",
    "job_samples",  "events",	   "marks",	   "gpu_samples", "gpu_proc_samples",
};

static int ret_fail(struct store *st, int rc, const char *what)
{
	int ret = store__errno(st->db, rc);

	if (ret == 0)
		ret = -EIO;
	if (ret == -ENOSPC)
		return ret;
	return log_err(ret, "cannot %s in store '%s' (%s)", what, st->path, store__errmsg(st));
}

/* Runs sql with up to two int64 parameters; *changes receives the rows changed. */
static int run2(struct store *st, const char *sql, int64_t a, int64_t b, int64_t *changes)
{
	sqlite3_stmt *stmt;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &stmt, NULL);

	if (rc != SQLITE_OK)
		return ret_fail(st, rc, "age out data");
	if (sqlite3_bind_parameter_count(stmt) >= 1)
		sqlite3_bind_int64(stmt, 1, a);
	if (sqlite3_bind_parameter_count(stmt) >= 2)
		sqlite3_bind_int64(stmt, 2, b);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return ret_fail(st, rc, "age out data");
	if (changes)
		*changes += sqlite3_changes(st->db);
	return 0;
}

/* An int64 from a query with one parameter; *found false when NULL or no row. */
static int query1(struct store *st, const char *sql, int64_t a, int64_t *out, bool *found)
{
	sqlite3_stmt *stmt;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &stmt, NULL);

	*found = false;
	if (rc != SQLITE_OK)
		return ret_fail(st, rc, "age out data");
	if (sqlite3_bind_parameter_count(stmt) >= 1)
		sqlite3_bind_int64(stmt, 1, a);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL) {
		*out = sqlite3_column_int64(stmt, 0);
		*found = true;
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return ret_fail(st, rc, "age out data");
	return 0;
}

int store_used_bytes(struct store *st, uint64_t *bytes)
{
	int64_t pages, free_pages, page_size;
	bool f1, f2, f3;
	int ret;

	ret = query1(st, "PRAGMA page_count", 0, &pages, &f1);
	if (!ret)
		ret = query1(st, "PRAGMA freelist_count", 0, &free_pages, &f2);
	if (!ret)
		ret = query1(st, "PRAGMA page_size", 0, &page_size, &f3);
	if (ret)
		return ret;
	if (!f1 || !f2 || !f3)
		return -EIO;
	*bytes = (uint64_t)(pages - free_pages) * (uint64_t)page_size;
	return 0;
}

/* Deletes up to budget rows of every fact table with seq < cut. */
static int delete_raw_before(struct store *st, int64_t cut, int budget, int64_t *deleted)
{
	char sql[256];
	int ret;

	for (size_t i = 0; i < sizeof(retention_tables) / sizeof(retention_tables[0]); i++) {
		if (st->schema_version < 2 && (i == 8 || i == 9))
			continue;
		snprintf(sql, sizeof(sql),
			 "DELETE FROM %s WHERE seq IN (SELECT seq FROM %s WHERE seq < ?1"
			 " ORDER BY seq LIMIT ?2)",
			 retention_tables[i], retention_tables[i]);
		ret = run2(st, sql, cut, budget, deleted);
		if (ret)
			return ret;
	}
	return 0;
}

/* The first seq written at or after ts_ms (host rows are written every tick). */
static int seq_at(struct store *st, int64_t ts_ms, int64_t *seq, bool *found)
{
	return query1(st,
		      "SELECT min(seq) FROM host_samples WHERE node_id IN (SELECT id FROM nodes)"
		      " AND ts_ms >= ?1",
		      ts_ms, seq, found);
}

static int delete_rollups_before(struct store *st, int64_t tier_ms, int64_t ts_ms, int budget,
				 int64_t *deleted)
{
	char sql[256];

	snprintf(sql, sizeof(sql),
		 "DELETE FROM rollups WHERE id IN (SELECT id FROM rollups WHERE tier_ms = %lld"
		 " AND ts_ms < ?1 ORDER BY ts_ms LIMIT ?2)",
		 (long long)tier_ms);
	return run2(st, sql, ts_ms, budget, deleted);
}

/*
 * Processes that ended before the raw cut: their sample rows are older
 * than the cut too (a few may outlive them by a step; readers join and
 * drop those).  Oldest ids first; the scan passes over the processes that
 * still live, a bounded number.
 */
static int delete_old_procs(struct store *st, int64_t before_ms, int budget, int64_t *deleted)
{
	return run2(st,
		    "DELETE FROM procs WHERE id IN (SELECT id FROM procs WHERE end_ms IS NOT NULL"
		    " AND end_ms < ?1 ORDER BY id LIMIT ?2)",
		    before_ms, budget, deleted);
}

static int retention_body(struct store *st, int64_t now_ms, const struct store_retention *r,
			  int budget, int64_t *deleted)
{
	int64_t cut, oldest;
	uint64_t used;
	bool found;
	int ret;

	if (r->raw_ms > 0) {
		ret = seq_at(st, now_ms - r->raw_ms, &cut, &found);
		if (ret)
			return ret;
		if (!found) /* nothing that young: everything older may go */
			cut = st->next_seq;
		ret = delete_raw_before(st, cut, budget, deleted);
		if (ret)
			return ret;
		ret = delete_old_procs(st, now_ms - r->raw_ms, budget, deleted);
		if (ret)
			return ret;
	}
	if (st->schema_version >= 3) {
		if (r->m1_ms > 0) {
			ret = delete_rollups_before(st, 60000, now_ms - r->m1_ms, budget, deleted);
			if (ret)
				return ret;
		}
		if (r->h1_ms > 0) {
			ret = delete_rollups_before(st, 3600000, now_ms - r->h1_ms, budget,
						    deleted);
			if (ret)
				return ret;
		}
	}
	if (r->max_bytes == 0)
		return 0;
	ret = store_used_bytes(st, &used);
	if (ret || used <= r->max_bytes)
		return ret;
	/* over the cap: the oldest raw rows go first, then the finer tier */
	ret = query1(st, "SELECT min(seq) FROM host_samples", 0, &oldest, &found);
	if (ret)
		return ret;
	if (found) {
		int64_t before = *deleted;
		/* a tenth of what is left per step: a small store is not wiped at once */
		int64_t span = (st->next_seq - oldest) / 10;

		ret = delete_raw_before(st, oldest + (span > 0 ? span : 1), budget, deleted);
		if (ret || *deleted > before)
			return ret;
	}
	if (st->schema_version < 3)
		return 0;
	ret = query1(st, "SELECT min(ts_ms) FROM rollups WHERE tier_ms = 60000", 0, &oldest, &found);
	if (ret)
		return ret;
	if (found)
		return delete_rollups_before(st, 60000, oldest + 3600000, budget, deleted);
	ret = query1(st, "SELECT min(ts_ms) FROM rollups WHERE tier_ms = 3600000", 0, &oldest,
		     &found);
	if (ret || !found)
		return ret;
	return delete_rollups_before(st, 3600000, oldest + 86400000, budget, deleted);
}

int store_retention_step(struct store *st, int64_t now_ms, const struct store_retention *r,
			 int budget, int64_t *deleted)
{
	int ret;

	*deleted = 0;
	if (!st->writable || st->in_tick)
		return -EINVAL;
	if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return ret_fail(st, sqlite3_errcode(st->db), "age out data");
	ret = retention_body(st, now_ms, r, budget, deleted);
	if (ret) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		*deleted = 0;
		return ret;
	}
	if (sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		ret = ret_fail(st, sqlite3_errcode(st->db), "age out data");
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		*deleted = 0;
		return ret;
	}
	/* give freed pages back to the file system, a few at a time */
	if (*deleted > 0)
		sqlite3_exec(st->db, "PRAGMA incremental_vacuum(256)", NULL, NULL, NULL);
	return 0;
}
