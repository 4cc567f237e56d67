/*
 * retention.c - ageing out a store a little at a time: raw rows,
 * then the 1-minute and 1-hour rollup tiers, then a size cap; and the gap
 * records of rows the size cap deleted before a head held them.
 *
 * Raw rows are deleted by seq, never by time: seq grows with time, is every
 * fact table's primary key, and so a cut in time becomes one seq bound
 * found through host_samples' (node, ts) index, and each DELETE is a short
 * range scan at the start of a B-tree.  A step deletes at most `budget`
 * rows per table, so a backlog (a new, shorter age limit; a first start on
 * an old file) drains over several ticks instead of stalling one.
 *
 * A head's acknowledged seq bounds the cut: age never deletes a row the
 * head does not hold (one more min() on the cut).  Only the size cap does,
 * past the rows in doubt (sent, not answered), and what it deletes there
 * it counts and records (gaps).  Inside, "no head" is an acked seq of
 * NO_HEAD, above every seq.
 *
 *   store_retention_step   one step, in one transaction
 *   store_for_each_gap     the gap records, for the agent, the head, reports
 */
#include "store/conn.h"
#include "store/facts.h"
#include "store/writer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "store/upkeep.h"

/*
 * What ages out: the fact tables of facts.h marked FACT_TIMED.  Not the
 * gap records: a record's seq is younger than the rows it is
 * about, and the size cap may have taken every host row of its time, so
 * it ages by its own time (delete_old_gaps) and the size cap leaves it.
 */
#define NO_HEAD INT64_MAX

/* Runs sql with up to three int64 parameters; *changes receives the rows changed. */
static int run3(struct store *st, const char *sql, int64_t a, int64_t b, int64_t c,
		int64_t *changes)
{
	struct db_stmt *stmt;
	int rc = db_prepare(&st->conn, sql, &stmt);

	if (rc != SQLITE_OK)
		return store__write_fail(st, rc, "age out data");
	if (db_bind_parameter_count(stmt) >= 1)
		db_bind_int64(stmt, 1, a);
	if (db_bind_parameter_count(stmt) >= 2)
		db_bind_int64(stmt, 2, b);
	if (db_bind_parameter_count(stmt) >= 3)
		db_bind_int64(stmt, 3, c);
	rc = db_step(stmt);
	db_finalize(stmt);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return store__write_fail(st, rc, "age out data");
	if (changes)
		*changes += db_changes(&st->conn);
	return 0;
}

static int run2(struct store *st, const char *sql, int64_t a, int64_t b, int64_t *changes)
{
	return run3(st, sql, a, b, 0, changes);
}

int store_used_bytes(struct store *st, uint64_t *bytes)
{
	int64_t pages, free_pages, page_size;
	bool f1, f2, f3;
	int ret;

	ret = store__query_i64_opt(st, "PRAGMA page_count", 0, &pages, &f1);
	if (!ret)
		ret = store__query_i64_opt(st, "PRAGMA freelist_count", 0, &free_pages, &f2);
	if (!ret)
		ret = store__query_i64_opt(st, "PRAGMA page_size", 0, &page_size, &f3);
	if (ret)
		return ret;
	if (!f1 || !f2 || !f3)
		return -EIO;
	*bytes = (uint64_t)(pages - free_pages) * (uint64_t)page_size;
	return 0;
}

/*
 * Packs wholly below the cut, the oldest `budget` first (a pack that
 * straddles it waits for the next cut); their rows counted in *deleted.
 */
static int delete_packs_before(struct store *st, int64_t cut, int budget, int64_t *deleted)
{
	struct db_stmt *stmt;
	int rc = db_prepare(&st->conn,
			    "DELETE FROM packs WHERE id IN (SELECT id FROM packs WHERE"
			    " seq_hi < ?1 ORDER BY seq_hi LIMIT ?2) RETURNING nrows",
			    &stmt);

	if (rc != SQLITE_OK)
		return store__write_fail(st, rc, "age out data");
	db_bind_int64(stmt, 1, cut);
	db_bind_int64(stmt, 2, budget);
	while ((rc = db_step(stmt)) == SQLITE_ROW)
		*deleted += db_column_int64(stmt, 0);
	db_finalize(stmt);
	return rc == SQLITE_DONE ? 0 : store__write_fail(st, rc, "age out data");
}

/* Deletes up to budget rows of every fact table with seq < cut, and packs wholly below it. */
static int delete_raw_before(struct store *st, int64_t cut, int budget, int64_t *deleted)
{
	char sql[256];
	int ret;

	for (int i = 0; i < store_nfacts; i++) {
		if (st->schema_version < store_facts[i].since ||
		    !(store_facts[i].flags & FACT_TIMED))
			continue;
		snprintf(sql, sizeof(sql),
			 "DELETE FROM %s WHERE seq IN (SELECT seq FROM %s WHERE seq < ?1"
			 " ORDER BY seq LIMIT ?2)",
			 store_facts[i].name, store_facts[i].name);
		ret = run2(st, sql, cut, budget, deleted);
		if (ret)
			return ret;
	}
	return st->schema_version >= 6 ? delete_packs_before(st, cut, budget, deleted) : 0;
}

/* The rows a head never got: their count, seqs and times. */
struct lost_span {
	int64_t rows, from_seq, to_seq, from_ms, to_ms;
};

static void lost_add(struct lost_span *l, int64_t seq, int64_t ts_ms)
{
	if (l->rows == 0 || seq < l->from_seq)
		l->from_seq = seq;
	if (l->rows == 0 || seq > l->to_seq)
		l->to_seq = seq;
	if (l->rows == 0 || ts_ms < l->from_ms)
		l->from_ms = ts_ms;
	if (l->rows == 0 || ts_ms > l->to_ms)
		l->to_ms = ts_ms;
	l->rows++;
}

/*
 * Gap records recorded before ts_ms that the head holds.  Their times grow
 * with their seqs, so the old ones are a prefix: only the first `budget`
 * are looked at, however many there are.
 */
static int delete_old_gaps(struct store *st, int64_t ts_ms, int64_t acked, int budget,
			   int64_t *deleted)
{
	if (st->schema_version < 5)
		return 0;
	return run3(st,
		    "DELETE FROM gaps WHERE seq IN (SELECT seq FROM (SELECT seq, ts_ms FROM gaps"
		    " WHERE seq <= ?2 ORDER BY seq LIMIT ?3) WHERE ts_ms < ?1)",
		    ts_ms, acked, budget, deleted);
}

/*
 * Deletes up to budget rows of every fact table with acked < seq < cut,
 * each one counted into *l (RETURNING: the rows that went, not an estimate).
 */
static int delete_unacked_before(struct store *st, int64_t acked, int64_t cut, int budget,
				 struct lost_span *l)
{
	char sql[256];
	struct db_stmt *stmt;
	int rc;

	for (int i = 0; i < store_nfacts; i++) {
		if (st->schema_version < store_facts[i].since ||
		    !(store_facts[i].flags & FACT_TIMED))
			continue;
		snprintf(sql, sizeof(sql),
			 "DELETE FROM %s WHERE seq IN (SELECT seq FROM %s WHERE seq > ?1"
			 " AND seq < ?2 ORDER BY seq LIMIT ?3) RETURNING seq, ts_ms",
			 store_facts[i].name, store_facts[i].name);
		rc = db_prepare(&st->conn, sql, &stmt);
		if (rc != SQLITE_OK)
			return store__write_fail(st, rc, "age out data");
		db_bind_int64(stmt, 1, acked);
		db_bind_int64(stmt, 2, cut);
		db_bind_int64(stmt, 3, budget);
		while ((rc = db_step(stmt)) == SQLITE_ROW)
			lost_add(l, db_column_int64(stmt, 0), db_column_int64(stmt, 1));
		db_finalize(stmt);
		if (rc != SQLITE_DONE)
			return store__write_fail(st, rc, "age out data");
	}
	return 0;
}

_Static_assert(FACT_NCOLUMNS(GAP_COLUMNS) == 6, "record_gap binds, store_for_each_gap reads 6");

/*
 * The gap record of what delete_unacked_before took, with the next seq (it
 * streams like a fact row), and the meta counters, in the step's
 * transaction.  Its node: the one the store's newest host row is of.
 */
static int record_gap(struct store *st, int64_t now_ms, const struct lost_span *l,
		      struct store_gap *g)
{
	struct db_stmt *stmt;
	int64_t node_id;
	bool found;
	int rc, ret;

	ret = store__query_i64_opt(
	    st,
	    "SELECT coalesce((SELECT node_id FROM host_samples ORDER BY seq DESC LIMIT 1),"
	    " (SELECT min(id) FROM nodes), 0)",
	    0, &node_id, &found);
	if (ret)
		return ret;
	memset(g, 0, sizeof(*g));
	g->seq = st->next_seq;
	g->node_id = found ? node_id : 0;
	g->ts_ms = now_ms;
	g->has_span = true;
	g->from_ms = l->from_ms;
	g->to_ms = l->to_ms;
	g->from_seq = l->from_seq;
	g->to_seq = l->to_seq;
	g->rows = l->rows;
	snprintf(g->reason, sizeof(g->reason), "size_cap");
	rc = db_prepare(&st->conn, FACT_INSERT(gaps, "seq, node_id, ts_ms", "?, ?, ?", GAP_COLUMNS),
			&stmt);
	if (rc != SQLITE_OK)
		return store__write_fail(st, rc, "record lost rows");
	db_bind_int64(stmt, 1, g->seq);
	db_bind_int64(stmt, 2, g->node_id);
	db_bind_int64(stmt, 3, g->ts_ms);
	db_bind_int64(stmt, 4, g->from_ms);
	db_bind_int64(stmt, 5, g->to_ms);
	db_bind_int64(stmt, 6, g->from_seq);
	db_bind_int64(stmt, 7, g->to_seq);
	db_bind_int64(stmt, 8, g->rows);
	db_bind_text(stmt, 9, g->reason, -1, SQLITE_STATIC);
	rc = db_step(stmt);
	db_finalize(stmt);
	if (rc != SQLITE_DONE)
		return store__write_fail(st, rc, "record lost rows");
	st->next_seq++;
	ret = run2(
	    st,
	    "INSERT INTO meta (key, value) VALUES ('lost_rows_total', CAST(?1 AS TEXT))"
	    " ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + ?1 AS TEXT)",
	    l->rows, 0, NULL);
	if (!ret)
		ret =
		    run2(st,
			 "INSERT INTO meta (key, value) VALUES ('gaps_total', '1')"
			 " ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1"
			 " AS TEXT)",
			 0, 0, NULL);
	return ret;
}

/*
 * head_acked_seq and head_sent_seq in meta: the bound a restarted agent
 * starts from (written when they moved).
 */
static int keep_head(struct store *st, const struct store_head_bound *head)
{
	static const char sql[] = "INSERT INTO meta (key, value) VALUES (?1, CAST(?2 AS TEXT))"
				  " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
				  " WHERE value <> excluded.value";
	const char *keys[] = {"head_acked_seq", "head_sent_seq"};
	int64_t vals[] = {head->acked_seq, head->sent_seq};
	struct db_stmt *stmt;
	int rc = SQLITE_DONE;

	for (int i = 0; i < 2 && rc == SQLITE_DONE; i++) {
		rc = db_prepare(&st->conn, sql, &stmt);
		if (rc != SQLITE_OK)
			break;
		db_bind_text(stmt, 1, keys[i], -1, SQLITE_STATIC);
		db_bind_int64(stmt, 2, vals[i]);
		rc = db_step(stmt);
		db_finalize(stmt);
	}
	return rc == SQLITE_DONE ? 0 : store__write_fail(st, rc, "keep the head's cursor");
}

/*
 * The first seq written at or after ts_ms (host rows are written every
 * tick); of packed hours, the first seq of the first host pack that
 * reaches ts_ms (a pack goes whole, when all of it is older).
 */
static int seq_at(struct store *st, int64_t ts_ms, int64_t *seq, bool *found)
{
	int ret;

	if (st->schema_version < 6)
		return store__query_i64_opt(
		    st,
		    "SELECT min(seq) FROM host_samples WHERE node_id IN (SELECT id FROM nodes)"
		    " AND ts_ms >= ?1",
		    ts_ms, seq, found);
	/* min() of two scalars is NULL when either is: each NULL made the largest int64 */
	ret = store__query_i64_opt(
	    st,
	    "SELECT min(coalesce((SELECT min(seq_lo) FROM packs WHERE tbl = 'host_samples'"
	    " AND ts_hi >= ?1), 9223372036854775807), coalesce((SELECT min(seq) FROM"
	    " host_samples WHERE node_id IN (SELECT id FROM nodes) AND ts_ms >= ?1),"
	    " 9223372036854775807))",
	    ts_ms, seq, found);
	if (!ret && *found && *seq == INT64_MAX)
		*found = false;
	return ret;
}

static int delete_rollups_before(struct store *st, int64_t tier_ms, int64_t ts_ms, int budget,
				 int64_t *deleted)
{
	char sql[256];

	snprintf(sql, sizeof(sql),
		 "DELETE FROM rollups WHERE (tier_ms, ts_ms, node_id, entity, entity_id, metric)"
		 " IN (SELECT tier_ms, ts_ms, node_id, entity, entity_id, metric FROM rollups"
		 " WHERE tier_ms = %lld AND ts_ms < ?1 ORDER BY ts_ms LIMIT ?2)",
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

/*
 * The time before which ended processes may go: the raw cut's, and, with
 * a head, never past the first process row it does not hold (a process's
 * rows are written at ticks no later than its end_ms, so one that ended
 * before that row's time has none the head lacks; seq and time grow
 * together, so the first row above acked is the earliest).
 */
static int procs_cut_ms(struct store *st, int64_t raw_cut_ms, int64_t acked, int64_t *cut_ms)
{
	static const char *const sql[] = {
	    "SELECT ts_ms FROM proc_samples WHERE seq > ?1 ORDER BY seq LIMIT 1",
	    "SELECT ts_ms FROM gpu_proc_samples WHERE seq > ?1 ORDER BY seq LIMIT 1",
	};
	int64_t ts;
	bool found;
	int ret;

	*cut_ms = raw_cut_ms;
	if (acked == NO_HEAD)
		return 0;
	for (size_t i = 0; i < (st->schema_version >= 2 ? 2 : 1); i++) {
		ret = store__query_i64_opt(st, sql[i], acked, &ts, &found);
		if (ret)
			return ret;
		if (found && ts < *cut_ms)
			*cut_ms = ts;
	}
	return 0;
}

/*
 * Over the size cap: the oldest raw rows, those the head holds first, then
 * those it does not (counted, and recorded as a gap), then the finer
 * rollup tier.  Rows in doubt, in (acked, doubt], stay: the head that
 * died before answering for them may hold them, and they would be counted
 * lost when they are not; the rows lost are the oldest after them, a
 * tenth of what is left.
 */
static int retention_cap(struct store *st, int64_t now_ms, int64_t acked, int64_t doubt, int budget,
			 struct store_retention_result *res)
{
	int64_t oldest, before = res->deleted;
	bool found;
	int ret;

	ret = store__query_i64_opt(
	    st,
	    st->schema_version >= 6
		/* the oldest pack by its end: its start is close enough for a tenth */
		? "SELECT min(coalesce((SELECT min(seq) FROM host_samples),"
		  " (SELECT seq_lo FROM packs ORDER BY seq_hi LIMIT 1)),"
		  " coalesce((SELECT seq_lo FROM packs ORDER BY seq_hi LIMIT 1),"
		  " (SELECT min(seq) FROM host_samples)))"
		: "SELECT min(seq) FROM host_samples",
	    0, &oldest, &found);
	if (ret)
		return ret;
	if (found) {
		/* a tenth of what is left per step: a small store is not wiped at once */
		int64_t span = (st->next_seq - oldest) / 10;
		int64_t cut = oldest + (span > 0 ? span : 1);
		struct lost_span l = {0};

		ret = delete_raw_before(st, acked < cut ? acked + 1 : cut, budget, &res->deleted);
		if (ret || res->deleted > before)
			return ret;
		if (doubt != NO_HEAD) {
			if (cut <= doubt + 1)
				cut = doubt + 1 + (span > 0 ? span : 1);
			ret = delete_unacked_before(st, doubt, cut, budget, &l);
			if (ret)
				return ret;
		}
		if (l.rows > 0) {
			res->deleted += l.rows;
			res->lost = l.rows;
			return record_gap(st, now_ms, &l, &res->gap);
		}
	}
	if (st->schema_version < 3)
		return 0;
	ret = store__query_i64_opt(st, "SELECT min(ts_ms) FROM rollups WHERE tier_ms = 60000", 0,
				   &oldest, &found);
	if (ret)
		return ret;
	if (found)
		return delete_rollups_before(st, 60000, oldest + 3600000, budget, &res->deleted);
	ret = store__query_i64_opt(st, "SELECT min(ts_ms) FROM rollups WHERE tier_ms = 3600000", 0,
				   &oldest, &found);
	if (ret || !found)
		return ret;
	return delete_rollups_before(st, 3600000, oldest + 86400000, budget, &res->deleted);
}

static int retention_body(struct store *st, int64_t now_ms, const struct store_retention *r,
			  const struct store_head_bound *head, int budget,
			  struct store_retention_result *res)
{
	int64_t acked = head ? head->acked_seq : NO_HEAD, cut, procs_ms;
	int64_t doubt = head && head->sent_seq > acked ? head->sent_seq : acked;
	uint64_t used;
	bool found;
	int ret;

	if (head && st->schema_version >= 5) {
		ret = keep_head(st, head);
		if (ret)
			return ret;
	}
	if (r->raw_ms > 0) {
		ret = seq_at(st, now_ms - r->raw_ms, &cut, &found);
		if (ret)
			return ret;
		if (!found) /* nothing that young: everything older may go */
			cut = st->next_seq;
		if (acked < cut) /* ... but nothing the head does not hold */
			cut = acked + 1;
		ret = delete_raw_before(st, cut, budget, &res->deleted);
		if (!ret)
			ret = delete_old_gaps(st, now_ms - r->raw_ms, acked, budget, &res->deleted);
		if (ret)
			return ret;
		ret = procs_cut_ms(st, now_ms - r->raw_ms, acked, &procs_ms);
		if (!ret)
			ret = delete_old_procs(st, procs_ms, budget, &res->deleted);
		if (ret)
			return ret;
	}
	if (st->schema_version >= 3) {
		if (r->m1_ms > 0) {
			ret = delete_rollups_before(st, 60000, now_ms - r->m1_ms, budget,
						    &res->deleted);
			if (ret)
				return ret;
		}
		if (r->h1_ms > 0) {
			ret = delete_rollups_before(st, 3600000, now_ms - r->h1_ms, budget,
						    &res->deleted);
			if (ret)
				return ret;
		}
	}
	if (r->max_bytes == 0)
		return 0;
	ret = store_used_bytes(st, &used);
	if (ret || used <= r->max_bytes)
		return ret;
	return retention_cap(st, now_ms, acked, doubt, budget, res);
}

int store_retention_step(struct store *st, int64_t now_ms, const struct store_retention *r,
			 const struct store_head_bound *head, int budget,
			 struct store_retention_result *res)
{
	bool own;
	int ret;

	memset(res, 0, sizeof(*res));
	if (!st->writable || st->in_tick || (head && (head->acked_seq < 0 || head->sent_seq < 0)))
		return -EINVAL;
	/* its own transaction, with the seq counter synced: a gap record takes a seq */
	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	ret = retention_body(st, now_ms, r, head, budget, res);
	ret = store__write_end(st, own, ret);
	if (ret) {
		memset(res, 0, sizeof(*res));
		return ret;
	}
	/* give freed pages back to the file system, a few at a time */
	if (res->deleted > 0)
		db_exec(&st->conn, "PRAGMA incremental_vacuum(256)");
	return 0;
}

int store_for_each_gap(struct store *st, int64_t node_id, int64_t from_ms, int64_t to_ms,
		       int (*fn)(const struct store_gap *g, void *arg), void *arg)
{
	struct store_gap g;
	struct db_stmt *stmt;
	int rc = SQLITE_DONE, ret;

	if (st->schema_version < 5)
		return 0;
	/* a record without times (none are written so) meets every window */
	ret = store__prepare(st,
			     "SELECT s.seq, s.node_id, n.hostname, s.ts_ms" FACT_S_NAMES(
				 GAP_COLUMNS) " FROM gaps s LEFT JOIN nodes n ON n.id = s.node_id"
					      " WHERE (?1 = 0 OR s.node_id = ?1)"
					      " AND (s.to_ms IS NULL OR s.to_ms >= ?2)"
					      " AND (s.from_ms IS NULL OR s.from_ms <= ?3)"
					      " ORDER BY s.node_id, s.from_seq, s.seq",
			     "read the gap records", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, node_id);
	db_bind_int64(stmt, 2, from_ms);
	db_bind_int64(stmt, 3, to_ms);
	while (!ret && (rc = db_step(stmt)) == SQLITE_ROW) {
		const unsigned char *host = db_column_text(stmt, 2);
		const unsigned char *reason = db_column_text(stmt, 9);

		memset(&g, 0, sizeof(g));
		g.seq = db_column_int64(stmt, 0);
		g.node_id = db_column_int64(stmt, 1);
		snprintf(g.hostname, sizeof(g.hostname), "%s", host ? (const char *)host : "");
		g.ts_ms = db_column_int64(stmt, 3);
		g.has_span = db_column_type(stmt, 4) != SQLITE_NULL &&
			     db_column_type(stmt, 5) != SQLITE_NULL;
		g.from_ms = db_column_int64(stmt, 4);
		g.to_ms = db_column_int64(stmt, 5);
		g.from_seq = db_column_int64(stmt, 6);
		g.to_seq = db_column_int64(stmt, 7);
		g.rows = db_column_int64(stmt, 8);
		snprintf(g.reason, sizeof(g.reason), "%s", reason ? (const char *)reason : "");
		ret = fn(&g, arg);
	}
	if (!ret && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "read the gap records");
	db_finalize(stmt);
	return ret;
}
