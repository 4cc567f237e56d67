/*
 * test_retention.c - retention against a head's cursor: age never deletes
 * a row above the acknowledged seq (nor a process whose rows the head
 * lacks), only the size cap does, and then a gap record says exactly which
 * rows went; the record streams (export) and lands at a head (ingest) with
 * the head's node id, counted per agent.
 *
 * Each test works in its own mkdtemp directory under /tmp.  The store is
 * filled by hand: tick i at T0 + i s holds a host row (no per-CPU, disk or
 * interface rows) and a sample of each process alive then, so seqs and
 * times are known exactly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/log.h"
#include "store/rowset.h"
#include "store/store.h"
#include "store/sync.h"
#include "store/upkeep.h"
#include "store/write.h"

#define T0 1700000000000LL

struct fixture {
	char dir[64];
	char path[128], head_path[128];
	FILE *log;
	struct store *st;
	int64_t node;
	int64_t p1, p2, p3; /* procs rows: ending at ticks 10, 30, never */
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/jobscope-test-retention-XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->path, sizeof(fx->path), "%s/agent.db", fx->dir);
	snprintf(fx->head_path, sizeof(fx->head_path), "%s/head.db", fx->dir);
	fx->log = tmpfile();
	if (!fx->log)
		return -1;
	log_set_file(fx->log);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	if (fx->st)
		store_close(fx->st);
	log_set_file(NULL);
	fclose(fx->log);
	fixture_rm_tree(fx->dir);
	free(fx);
	return 0;
}

/* One integer from a query on a separate read-only connection (-1: no row). */
static int64_t sql_i64(const char *path, const char *sql)
{
	sqlite3_stmt *stmt;
	sqlite3 *db;
	int64_t v = -1;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
	if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return v;
}

#define ALL_ROWS                                                                                   \
	"(SELECT seq, ts_ms FROM host_samples UNION ALL SELECT seq, ts_ms FROM proc_samples)"

static int64_t rows_where(struct fixture *fx, const char *cond)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM " ALL_ROWS " WHERE %s", cond);
	return sql_i64(fx->path, sql);
}

/* ticks 0..n-1: a host row, then a sample of each live process */
static void fill(struct fixture *fx, int n)
{
	struct host_sample *h = calloc(1, sizeof(*h));
	struct proc_info p;
	struct proc_sample ps;
	int64_t *rows[3] = {&fx->p1, &fx->p2, &fx->p3};
	const int ends[3] = {10, 30, -1};

	assert_non_null(h);
	h->valid = HOST_HAS_MEM;
	h->mem.valid = MEMINFO_TOTAL;
	h->mem.total_bytes = 1 << 30;
	assert_int_equal(store_open(fx->path, STORE_CREATE, &fx->st), 0);
	assert_int_equal(store_node(fx->st, "node-a", 2, 1 << 30, 0, &fx->node), 0);
	for (int k = 0; k < 3; k++) {
		memset(&p, 0, sizeof(p));
		p.pid = 100 + k;
		p.start_ms = T0 - 1000;
		snprintf(p.comm, sizeof(p.comm), "p%d", k + 1);
		assert_int_equal(store_put_proc_info(fx->st, fx->node, 0, &p, NULL, rows[k]), 0);
	}
	memset(&ps, 0, sizeof(ps));
	for (int i = 0; i < n; i++) {
		int64_t ts = T0 + 1000LL * i;

		assert_int_equal(store_tick_begin(fx->st), 0);
		assert_int_equal(store_put_host(fx->st, fx->node, ts, h), 0);
		for (int k = 0; k < 3; k++) {
			if (ends[k] >= 0 && i > ends[k])
				continue;
			ps.user_ms = (uint64_t)i;
			assert_int_equal(store_put_proc_sample(fx->st, *rows[k], ts, &ps), 0);
			if (i == ends[k]) {
				memset(&p, 0, sizeof(p));
				p.pid = 100 + k;
				p.start_ms = T0 - 1000;
				p.end_ms = ts;
				snprintf(p.comm, sizeof(p.comm), "p%d", k + 1);
				assert_int_equal(store_update_proc_info(fx->st, *rows[k], &p, NULL), 0);
			}
		}
		assert_int_equal(store_tick_commit(fx->st), 0);
	}
	free(h);
}

/* The seq of tick i's host row. */
static int64_t host_seq(struct fixture *fx, int i)
{
	char sql[128];

	snprintf(sql, sizeof(sql), "SELECT seq FROM host_samples WHERE ts_ms = %lld",
		 (long long)(T0 + 1000LL * i));
	return sql_i64(fx->path, sql);
}

#define NO_HEAD (-1)

/* A retention step with a head that holds up to acked (NO_HEAD: none), nothing in doubt. */
static int step(struct fixture *fx, int64_t now_ms, const struct store_retention *r, int64_t acked,
		struct store_retention_result *res)
{
	struct store_head_bound head = {acked, acked};

	return store_retention_step(fx->st, now_ms, r, acked == NO_HEAD ? NULL : &head, 100000,
				    res);
}

static int64_t meta(const char *path, const char *key)
{
	char sql[128];

	snprintf(sql, sizeof(sql), "SELECT CAST(value AS INTEGER) FROM meta WHERE key = '%s'", key);
	return sql_i64(path, sql);
}

static void test_age_stops_at_acked(void **state)
{
	struct fixture *fx = *state;
	struct store_retention r = {.raw_ms = 50000};
	struct store_retention_result res;
	int64_t acked, above, now = T0 + 100000, cut;
	char cond[64];

	fill(fx, 100);
	/* the head holds ticks 0..19 and half of tick 20's process rows */
	acked = host_seq(fx, 20) + 1;
	snprintf(cond, sizeof(cond), "seq > %lld", (long long)acked);
	above = rows_where(fx, cond);
	assert_int_equal(step(fx, now, &r, acked, &res), 0);
	assert_int_equal(res.lost, 0);
	/* everything up to acked went (procs p1 too), nothing above it */
	snprintf(cond, sizeof(cond), "seq <= %lld", (long long)acked);
	assert_int_equal(rows_where(fx, cond), 0);
	snprintf(cond, sizeof(cond), "seq > %lld", (long long)acked);
	assert_int_equal(rows_where(fx, cond), above);
	assert_int_equal(res.deleted, acked + 1 /* p1's procs row */);
	/*
	 * p1 ended at tick 10, before the first process row the head lacks
	 * (tick 20): gone.  p2 ended at tick 30, before the age cut (50) but
	 * with rows the head lacks: kept, or its rows could not be sent.
	 */
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM procs WHERE comm = 'p1'"), 0);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM procs WHERE comm = 'p2'"), 1);
	assert_int_equal(meta(fx->path, "head_acked_seq"), acked);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM gaps"), 0);
	assert_int_equal(meta(fx->path, "lost_rows_total"), -1);

	/* the head catches up past the age cut: age decides again, as without a head */
	cut = host_seq(fx, 50);
	assert_int_equal(step(fx, now, &r, cut + 500, &res), 0);
	assert_int_equal(sql_i64(fx->path, "SELECT min(seq) FROM " ALL_ROWS), cut);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM procs WHERE comm = 'p2'"), 0);
	assert_int_equal(meta(fx->path, "head_acked_seq"), cut + 500);
	assert_int_equal(res.lost, 0);
}

static void test_no_head_no_bound(void **state)
{
	struct fixture *fx = *state;
	struct store_retention r = {.raw_ms = 50000};
	struct store_retention_result res;

	fill(fx, 100);
	assert_int_equal(step(fx, T0 + 100000, &r, NO_HEAD, &res), 0);
	assert_int_equal(sql_i64(fx->path, "SELECT min(seq) FROM " ALL_ROWS), host_seq(fx, 50));
	assert_int_equal(res.lost, 0);
	assert_int_equal(meta(fx->path, "head_acked_seq"), -1);
	/* a head that holds nothing yet: age deletes nothing at all */
	store_close(fx->st);
	fx->st = NULL;
	unlink(fx->path);
	fill(fx, 100);
	assert_int_equal(step(fx, T0 + 100000, &r, 0, &res), 0);
	assert_int_equal(res.deleted, 0);
	assert_int_equal(sql_i64(fx->path, "SELECT min(seq) FROM " ALL_ROWS), 1);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM procs"), 3);
}

struct gaps_seen {
	int n;
	struct store_gap g[4];
};

static int collect_gap(const struct store_gap *g, void *arg)
{
	struct gaps_seen *s = arg;

	if (s->n < 4)
		s->g[s->n] = *g;
	s->n++;
	return 0;
}

/* A step of the size cap as retention_cap computes it: the rows below its cut. */
static int64_t cap_cut(struct fixture *fx)
{
	int64_t oldest = sql_i64(fx->path, "SELECT min(seq) FROM host_samples");
	int64_t next = 1 + sql_i64(fx->path, "SELECT max(seq) FROM (SELECT seq FROM host_samples"
					     " UNION ALL SELECT seq FROM proc_samples"
					     " UNION ALL SELECT seq FROM gaps)");

	return oldest + (next - oldest) / 10;
}

static void test_size_cap_counts_and_records(void **state)
{
	struct fixture *fx = *state;
	struct store_retention r = {.max_bytes = 1}; /* always over */
	struct store_retention_result res;
	struct gaps_seen seen = {0};
	int64_t acked, cut, want, max_before, to_ms;
	char cond[96], sql[256];

	fill(fx, 100);
	acked = host_seq(fx, 5) - 1; /* ticks 0..4 held */
	/* first the rows the head holds: no loss */
	assert_int_equal(step(fx, T0 + 100000, &r, acked, &res), 0);
	assert_int_equal(res.deleted, acked);
	assert_int_equal(res.lost, 0);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM gaps"), 0);

	/* then those it lacks: counted exactly, and recorded */
	cut = cap_cut(fx);
	snprintf(cond, sizeof(cond), "seq > %lld AND seq < %lld", (long long)acked, (long long)cut);
	want = rows_where(fx, cond);
	assert_true(want > 10);
	max_before = sql_i64(fx->path, "SELECT max(seq) FROM " ALL_ROWS);
	snprintf(sql, sizeof(sql), "SELECT max(ts_ms) FROM " ALL_ROWS " WHERE %s", cond);
	to_ms = sql_i64(fx->path, sql);
	assert_int_equal(step(fx, T0 + 100000, &r, acked, &res), 0);
	assert_int_equal(res.lost, want);
	assert_int_equal(res.deleted, want);
	assert_int_equal(rows_where(fx, cond), 0);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM gaps"), 1);
	assert_int_equal(sql_i64(fx->path, "SELECT seq FROM gaps"), max_before + 1);
	assert_int_equal(sql_i64(fx->path, "SELECT node_id FROM gaps"), fx->node);
	assert_int_equal(sql_i64(fx->path, "SELECT rows FROM gaps"), want);
	assert_int_equal(sql_i64(fx->path, "SELECT from_seq FROM gaps"), acked + 1);
	assert_int_equal(sql_i64(fx->path, "SELECT to_seq FROM gaps"), cut - 1);
	assert_int_equal(sql_i64(fx->path, "SELECT from_ms FROM gaps"), T0 + 5000);
	assert_int_equal(sql_i64(fx->path, "SELECT to_ms FROM gaps"), to_ms);
	assert_int_equal(res.gap.to_ms, to_ms);
	assert_int_equal(res.gap.rows, want);
	assert_string_equal(res.gap.reason, "size_cap");
	assert_int_equal(meta(fx->path, "lost_rows_total"), want);
	assert_int_equal(meta(fx->path, "gaps_total"), 1);

	/* a second step: a second record, the totals add up */
	cut = cap_cut(fx);
	snprintf(cond, sizeof(cond), "seq > %lld AND seq < %lld", (long long)acked, (long long)cut);
	{
		int64_t want2 = rows_where(fx, cond);

		assert_int_equal(step(fx, T0 + 100000, &r, acked, &res), 0);
		assert_int_equal(res.lost, want2);
		assert_int_equal(meta(fx->path, "lost_rows_total"), want + want2);
		assert_int_equal(meta(fx->path, "gaps_total"), 2);
		want += want2;
	}
	/* the size cap never deletes a gap record */
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM gaps"), 2);
	assert_int_equal(store_for_each_gap(fx->st, fx->node, 0, INT64_MAX, collect_gap, &seen), 0);
	assert_int_equal(seen.n, 2);
	assert_true(seen.g[0].from_seq < seen.g[1].from_seq);
	assert_int_equal(seen.g[0].to_seq + 1, seen.g[1].from_seq);
	assert_int_equal(seen.g[0].rows + seen.g[1].rows, want);
	assert_string_equal(seen.g[0].hostname, "node-a");
	assert_true(seen.g[0].has_span);
	/* by time: a window after the loss meets neither record */
	seen.n = 0;
	assert_int_equal(store_for_each_gap(fx->st, 0, T0 + 90000, T0 + 99000, collect_gap, &seen),
			 0);
	assert_int_equal(seen.n, 0);
	/* another node has none */
	seen.n = 0;
	assert_int_equal(store_for_each_gap(fx->st, fx->node + 1, 0, INT64_MAX, collect_gap, &seen),
			 0);
	assert_int_equal(seen.n, 0);

	/*
	 * Age takes every row below the oldest young host row, but a record
	 * by its own time: the cap took the host rows of its seqs, not its age.
	 */
	r = (struct store_retention){.raw_ms = 10000};
	assert_int_equal(step(fx, T0 + 100000, &r, NO_HEAD, &res), 0);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM gaps"), 2);
	assert_int_equal(sql_i64(fx->path, "SELECT min(seq) FROM " ALL_ROWS), host_seq(fx, 90));
	/* ... and only once the head holds it */
	assert_int_equal(step(fx, T0 + 111000, &r, seen.g[0].seq, &res), 0);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM gaps"), 1);
	assert_int_equal(step(fx, T0 + 111000, &r, NO_HEAD, &res), 0);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM gaps"), 0);
	/* the totals stay: they count what was ever lost */
	assert_int_equal(meta(fx->path, "lost_rows_total"), want);
	assert_int_equal(meta(fx->path, "gaps_total"), 2);
}

/*
 * Rows sent without an answer may be held by a head that died before
 * answering: the size cap leaves them and loses the rows after them, so
 * nothing the head holds is ever counted lost.
 */
static void test_size_cap_spares_rows_in_doubt(void **state)
{
	struct fixture *fx = *state;
	struct store_retention r = {.max_bytes = 1};
	struct store_retention_result res;
	struct store_head_bound head;
	int64_t acked, sent, span, want;
	char cond[96];

	fill(fx, 100);
	acked = host_seq(fx, 5) - 1;
	sent = host_seq(fx, 20) - 1;
	head = (struct store_head_bound){acked, sent};
	assert_int_equal(store_retention_step(fx->st, T0 + 100000, &r, &head, 100000, &res), 0);
	assert_int_equal(res.deleted, acked);
	assert_int_equal(res.lost, 0);
	assert_int_equal(meta(fx->path, "head_acked_seq"), acked);
	assert_int_equal(meta(fx->path, "head_sent_seq"), sent);
	/* the cut (a tenth of what is left) falls among the rows in doubt: past them */
	span = (1 + sql_i64(fx->path, "SELECT max(seq) FROM " ALL_ROWS) - (acked + 1)) / 10;
	assert_true(acked + 1 + span <= sent);
	snprintf(cond, sizeof(cond), "seq > %lld AND seq < %lld", (long long)sent,
		 (long long)(sent + 1 + span));
	want = rows_where(fx, cond);
	assert_int_equal(store_retention_step(fx->st, T0 + 100000, &r, &head, 100000, &res), 0);
	assert_int_equal(res.lost, want);
	assert_int_equal(res.gap.from_seq, sent + 1);
	assert_int_equal(res.gap.to_seq, sent + span);
	snprintf(cond, sizeof(cond), "seq > %lld AND seq <= %lld", (long long)acked,
		 (long long)sent);
	assert_int_equal(rows_where(fx, cond), sent - acked);
}

static void test_gap_streams_to_head(void **state)
{
	struct fixture *fx = *state;
	struct store_retention r = {.max_bytes = 1};
	struct store_retention_result res;
	struct store_batch *b = calloc(1, sizeof(*b));
	struct store *head = NULL;
	struct gaps_seen seen = {0};
	int64_t to_seq, max_seq, nrows, acked = 0, head_node;
	char err[256];

	assert_non_null(b);
	fill(fx, 40);
	/* the head holds nothing: the first step already loses */
	assert_int_equal(step(fx, T0 + 50000, &r, 0, &res), 0);
	assert_true(res.lost > 0);
	assert_int_equal(store_max_seq(fx->st, &max_seq), 0);
	assert_int_equal(max_seq, res.gap.seq);

	store_rowset_init(&b->rows, 0);
	snprintf(b->who.agent_id, sizeof(b->who.agent_id), "agent-1");
	snprintf(b->who.hostname, sizeof(b->who.hostname), "node-a");
	b->who.interval_ms = 1000;
	assert_int_equal(store_export_batch(fx->st, 0, 0, &b->rows, &to_seq, &max_seq, &nrows), 0);
	assert_int_equal(to_seq, res.gap.seq);
	assert_non_null(store_rowset_table(&b->rows, "gaps"));
	assert_int_equal(store_rowset_table(&b->rows, "gaps")->nrows, 1);
	b->from_seq = 0;
	b->to_seq = to_seq;
	b->max_seq = max_seq;

	assert_int_equal(store_open(fx->head_path, STORE_CREATE, &head), 0);
	/* another node first, so that the head's node id differs from the agent's */
	assert_int_equal(store_node(head, "node-0", 1, 1, 0, &head_node), 0);
	assert_int_equal(store_ingest(head, b, T0 + 50000, &acked, err, sizeof(err)), 0);
	assert_int_equal(acked, to_seq);
	head_node = sql_i64(fx->head_path, "SELECT id FROM nodes WHERE hostname = 'node-a'");
	assert_int_not_equal(head_node, fx->node);
	assert_int_equal(store_for_each_gap(head, head_node, 0, INT64_MAX, collect_gap, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.g[0].rows, res.lost);
	assert_int_equal(seen.g[0].from_seq, res.gap.from_seq); /* the agent's seqs, kept */
	assert_int_equal(seen.g[0].to_seq, res.gap.to_seq);
	assert_int_equal(seen.g[0].from_ms, res.gap.from_ms);
	assert_int_equal(seen.g[0].to_ms, res.gap.to_ms);
	assert_string_equal(seen.g[0].hostname, "node-a");
	/* the same batch again adds nothing */
	assert_int_equal(store_ingest(head, b, T0 + 51000, &acked, err, sizeof(err)), 0);
	assert_int_equal(sql_i64(fx->head_path, "SELECT count(*) FROM gaps"), 1);
	store_rowset_release(&b->rows);
	store_close(head);
	free(b);
}

static int agent_gaps(const struct agent_record *a, void *arg)
{
	struct agent_record *out = arg;

	*out = *a;
	return 0;
}

static void test_head_counts_per_agent(void **state)
{
	struct fixture *fx = *state;
	struct store_retention r = {.max_bytes = 1};
	struct store_retention_result res1, res2;
	struct store_batch *b = calloc(1, sizeof(*b));
	struct agent_record a;
	struct store *head = NULL;
	int64_t to_seq, max_seq, nrows, acked = 0;
	char err[256];

	assert_non_null(b);
	fill(fx, 60);
	assert_int_equal(step(fx, T0 + 70000, &r, 0, &res1), 0);
	assert_int_equal(step(fx, T0 + 70000, &r, 0, &res2), 0);
	assert_true(res1.lost > 0 && res2.lost > 0);
	store_rowset_init(&b->rows, 0);
	snprintf(b->who.agent_id, sizeof(b->who.agent_id), "agent-1");
	snprintf(b->who.hostname, sizeof(b->who.hostname), "node-a");
	b->who.interval_ms = 1000;
	assert_int_equal(store_export_batch(fx->st, 0, 0, &b->rows, &to_seq, &max_seq, &nrows), 0);
	b->to_seq = to_seq;
	assert_int_equal(store_open(fx->head_path, STORE_CREATE, &head), 0);
	assert_int_equal(store_ingest(head, b, T0 + 70000, &acked, err, sizeof(err)), 0);
	memset(&a, 0, sizeof(a));
	assert_int_equal(store_for_each_agent(head, agent_gaps, &a), 0);
	assert_string_equal(a.agent_id, "agent-1");
	assert_true(a.has_gaps);
	assert_int_equal(a.gaps, 2);
	assert_int_equal(a.lost_rows, res1.lost + res2.lost);
	store_rowset_release(&b->rows);
	store_close(head);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_age_stops_at_acked, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_head_no_bound, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_size_cap_counts_and_records, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_size_cap_spares_rows_in_doubt, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_gap_streams_to_head, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_head_counts_per_agent, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
