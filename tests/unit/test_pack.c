/*
 * test_pack.c - packs (store/pack.h, packs.h): the codec round trip on
 * every kind of cell, corrupt blobs refused without a crash, and a store
 * whose rows are packed in steps reading exactly as before through the
 * T_all tables, the replay and the export, with seq going on above the
 * packs and retention taking whole packs.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "common/jsonw.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "fixture.h"
#include "store/pack.h"
#include "store/rowset.h"
#include "store/store.h"
#include "store/reader.h"
#include "store/sync.h"
#include "store/upkeep.h"
#include "store/write.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Rows of every kind of cell: counters, extremes, reals, text with a NUL, blobs, NULLs. */
static void fill_rows(struct pack_rows *p, size_t n)
{
	static const int64_t extremes[] = {INT64_MIN, INT64_MAX, 0, -1, 1, INT64_MIN + 1};

	for (size_t i = 0; i < n; i++) {
		size_t r;

		assert_int_equal(pack_rows_add(p, &r), 0);
		pack_set_int(p, r, 0, 1000 + (int64_t)i * 7);
		pack_set_int(p, r, 1, 1700000000000 + (int64_t)(i / 3) * 1000);
		pack_set_int(p, r, 2, extremes[i % 6]);
		if (i % 5 == 0)
			pack_set_null(p, r, 3);
		else
			pack_set_int(p, r, 3, (int64_t)(next_rand() % 100000));
		pack_set_float(p, r, 4, i % 7 == 0 ? NAN : (double)i / 3.0);
		assert_int_equal(pack_set_text(p, r, 5, SQLITE_TEXT, "a\0b", i % 4), 0);
		assert_int_equal(pack_set_text(p, r, 6, SQLITE_BLOB, "\x01\x02\x03", i % 3), 0);
		pack_set_int(p, r, 7, (int64_t)(i * i));
	}
}

static void assert_same_cell(const struct pack_rows *a, size_t ra, const struct pack_rows *b,
			     size_t rb, int c)
{
	size_t la, lb;

	assert_int_equal(pack_type(a, ra, c), pack_type(b, rb, c));
	switch (pack_type(a, ra, c)) {
	case SQLITE_TEXT:
	case SQLITE_BLOB: {
		const char *sa = pack_text(a, ra, c, &la), *sb = pack_text(b, rb, c, &lb);

		assert_int_equal(la, lb);
		if (la)
			assert_memory_equal(sa, sb, la);
		break;
	}
	case SQLITE_NULL:
		break;
	default: /* integers, and reals bit for bit (NaN too) */
		assert_true(pack_int(a, ra, c) == pack_int(b, rb, c));
	}
}

static void test_codec_round_trip(void **state)
{
	struct pack_rows in, out;
	struct strbuf blob;
	size_t order[500], raw;

	(void)state;
	pack_rows_init(&in, 8);
	pack_rows_init(&out, 8);
	strbuf_init(&blob, 0);
	fill_rows(&in, 500);
	for (size_t i = 0; i < 500; i++)
		order[i] = 499 - i; /* reversed: the order given is the order kept */
	assert_int_equal(pack_encode(&in, order, 500, &blob, &raw), 0);
	assert_true(raw > blob.len);
	assert_int_equal(pack_decode(&out, blob.buf, blob.len, 500), 0);
	assert_int_equal(out.nrows, 500);
	for (size_t i = 0; i < 500; i++)
		for (int c = 0; c < 8; c++)
			assert_same_cell(&in, order[i], &out, i, c);

	/* the row count in the packs row must agree */
	assert_int_equal(pack_decode(&out, blob.buf, blob.len, 499), -EBADMSG);
	/* a blob of 8 columns into 9: the ninth NULL; into 7: refused */
	pack_rows_release(&out);
	pack_rows_init(&out, 9);
	assert_int_equal(pack_decode(&out, blob.buf, blob.len, -1), 0);
	assert_int_equal(pack_type(&out, 10, 8), SQLITE_NULL);
	pack_rows_release(&out);
	pack_rows_init(&out, 7);
	assert_int_equal(pack_decode(&out, blob.buf, blob.len, -1), -EBADMSG);

	/* no rows at all */
	assert_int_equal(pack_encode(&in, NULL, 0, &blob, &raw), 0);
	pack_rows_release(&out);
	pack_rows_init(&out, 8);
	assert_int_equal(pack_decode(&out, blob.buf, blob.len, 0), 0);
	assert_int_equal(out.nrows, 0);
	/* out of range */
	order[0] = 500;
	assert_int_equal(pack_encode(&in, order, 1, &blob, &raw), -EINVAL);

	pack_rows_release(&in);
	pack_rows_release(&out);
	strbuf_release(&blob);
}

/* Counters one tick apart, rows sorted by entity: a small fraction of their raw size. */
static void test_codec_counters_compress(void **state)
{
	struct pack_rows in, out;
	struct strbuf blob;
	size_t raw;

	(void)state;
	pack_rows_init(&in, 4);
	pack_rows_init(&out, 4);
	strbuf_init(&blob, 0);
	for (int proc = 0; proc < 4; proc++)
		for (int t = 0; t < 1000; t++) {
			size_t r;

			assert_int_equal(pack_rows_add(&in, &r), 0);
			pack_set_int(&in, r, 0, 5000000 + t * 4 + proc);   /* seq */
			pack_set_int(&in, r, 1, 1700000000000 + t * 1000); /* ts */
			pack_set_int(&in, r, 2, 123456 + t * 990 + proc);  /* CPU ms */
			pack_set_int(&in, r, 3, 1 << 30);		   /* RSS */
		}
	assert_int_equal(pack_encode(&in, NULL, in.nrows, &blob, &raw), 0);
	/* 16,000 values in well under a byte each */
	assert_true(blob.len < 16000 / 8);
	assert_int_equal(pack_decode(&out, blob.buf, blob.len, 4000), 0);
	for (size_t r = 0; r < 4000; r++)
		for (int c = 0; c < 4; c++)
			assert_same_cell(&in, r, &out, r, c);
	pack_rows_release(&in);
	pack_rows_release(&out);
	strbuf_release(&blob);
}

/* Every truncation and every bit flip: an error or rows, never a crash. */
static void test_codec_corrupt(void **state)
{
	struct pack_rows in, out;
	struct strbuf blob;
	size_t raw;
	char *copy;

	(void)state;
	pack_rows_init(&in, 8);
	pack_rows_init(&out, 8);
	strbuf_init(&blob, 0);
	fill_rows(&in, 40);
	assert_int_equal(pack_encode(&in, NULL, 40, &blob, &raw), 0);
	copy = malloc(blob.len);
	assert_non_null(copy);
	for (size_t len = 0; len < blob.len; len++) {
		pack_rows_clear(&out);
		assert_int_equal(pack_decode(&out, blob.buf, len, -1), -EBADMSG);
	}
	for (size_t i = 0; i < blob.len * 8; i++) {
		memcpy(copy, blob.buf, blob.len);
		copy[i / 8] ^= (char)(1 << (i % 8));
		pack_rows_clear(&out);
		(void)pack_decode(&out, copy, blob.len, -1);
	}
	assert_int_equal(pack_decode(&out, "not a pack", 10, -1), -EBADMSG);
	free(copy);
	pack_rows_release(&in);
	pack_rows_release(&out);
	strbuf_release(&blob);
}

/* The store. */

struct fixture {
	char dir[64];
	char path[128];
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/jobscope-test-pack-XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->path, sizeof(fx->path), "%s/store.db", fx->dir);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	fixture_rm_tree(fx->dir);
	free(fx);
	return 0;
}

#define T0     1700000000000
#define NPROCS 5

struct world {
	int64_t node, procs[NPROCS];
	struct job_record job, other;
	int ticks;
};

/* Ticks at 1 s: a host row, processes (one asleep: no rows), the jobs' rows. */
static void write_ticks(struct store *st, struct world *w, int n)
{
	for (int k = 0; k < n; k++, w->ticks++) {
		int64_t ts = T0 + (int64_t)w->ticks * 1000;
		struct host_sample *h = calloc(1, sizeof(*h));
		struct job_sample js = {JS_IO, NPROCS, 0, 0, 0, 0, 0, 0, 1};

		assert_non_null(h);
		h->valid = HOST_HAS_CPU | HOST_HAS_MEM | HOST_HAS_LOAD;
		h->cpu.total = (struct cpu_times){(uint64_t)w->ticks * 1500,
						  0,
						  (uint64_t)w->ticks * 90,
						  (uint64_t)w->ticks * 400,
						  7,
						  1,
						  2,
						  0};
		h->cpu.ncpus = 2;
		h->mem.valid = ~0u;
		h->mem.total_bytes = 16ull << 30;
		h->mem.available_bytes = (8ull << 30) - (uint64_t)(w->ticks % 17) * 4096;
		h->load.load1_milli = (uint32_t)(1000 + w->ticks % 300);
		assert_int_equal(store_tick_begin(st), 0);
		assert_int_equal(store_put_host(st, w->node, ts, h), 0);
		for (int p = 0; p < NPROCS; p++) {
			struct proc_sample ps = {PS_RSS | PS_HWM | PS_IO | PS_THREADS,
						 'R',
						 4,
						 (uint64_t)w->ticks * (100 + (uint64_t)p * 10),
						 20,
						 0,
						 0,
						 (uint64_t)(p + 1) << 20,
						 (uint64_t)(p + 2) << 20,
						 0,
						 (uint64_t)w->ticks * 4096,
						 0};

			if (p == 3 && w->ticks % 10) /* asleep: a row only when it moved */
				continue;
			assert_int_equal(store_put_proc_sample(st, w->procs[p], ts, &ps), 0);
		}
		js.user_ms = (uint64_t)w->ticks * 700;
		assert_int_equal(store_put_job_sample(st, w->job.id, ts, &js), 0);
		assert_int_equal(store_put_job_sample(st, w->other.id, ts, &js), 0);
		if (w->ticks % 50 == 7) {
			struct event_record ev = {ts, "exit", 42, 1, "a message"};

			assert_int_equal(store_put_event(st, w->node, w->job.id, &ev), 0);
		}
		assert_int_equal(store_tick_commit(st), 0);
		free(h);
	}
}

static struct store *make_world(struct fixture *fx, struct world *w)
{
	struct store *st = NULL;

	memset(w, 0, sizeof(*w));
	assert_int_equal(store_open(fx->path, STORE_CREATE, &st), 0);
	assert_int_equal(store_node(st, "node-a", 2, 16ull << 30, 0, &w->node), 0);
	w->job.node_id = w->other.node_id = w->node;
	snprintf(w->job.scheduler, sizeof(w->job.scheduler), "run");
	snprintf(w->other.scheduler, sizeof(w->other.scheduler), "run");
	snprintf(w->other.job_id, sizeof(w->other.job_id), "2");
	w->job.start_ms = w->other.start_ms = T0;
	assert_int_equal(store_job_begin(st, &w->job), 0);
	assert_int_equal(store_job_begin(st, &w->other), 0);
	for (int p = 0; p < NPROCS; p++) {
		struct proc_info pi = {0};

		pi.pid = 100 + p;
		pi.ppid = 1;
		pi.start_ms = T0 - 10;
		snprintf(pi.comm, sizeof(pi.comm), "worker%d", p);
		snprintf(pi.cmdline, sizeof(pi.cmdline), "worker --rank %d", p);
		assert_int_equal(store_put_proc_info(st, w->node, p < 4 ? w->job.id : w->other.id,
						     &pi, NULL, &w->procs[p]),
				 0);
	}
	return st;
}

/* Everything a reader can see: each T_all table in seq order, and a job's window by time. */
static char *dump(struct store *st, const struct world *w)
{
	static const char *const sql[] = {
	    "SELECT * FROM host_samples_all ORDER BY seq",
	    "SELECT * FROM proc_samples_all ORDER BY seq",
	    "SELECT * FROM job_samples_all ORDER BY seq",
	    "SELECT * FROM cpu_samples_all ORDER BY seq",
	    "SELECT * FROM proc_samples_all WHERE job_id = ?1 ORDER BY seq",
	    "SELECT seq, ts_ms FROM host_samples_all WHERE node_id = ?2 AND ts_ms >= ?3"
	    " AND ts_ms <= ?4 ORDER BY ts_ms, seq",
	    "SELECT count(*), sum(user_ms) FROM proc_samples_all WHERE seq > ?5",
	    "SELECT * FROM job_samples_all WHERE job_id = ?1 AND seq > ?5 AND seq <= ?6"
	    " ORDER BY seq",
	};
	char a[6][32];
	const char *params[] = {a[0], a[1], a[2], a[3], a[4], a[5], NULL};
	struct strbuf out;
	struct jsonw jw;
	int64_t n;

	snprintf(a[0], sizeof(a[0]), "%lld", (long long)w->job.id);
	snprintf(a[1], sizeof(a[1]), "%lld", (long long)w->node);
	snprintf(a[2], sizeof(a[2]), "%lld", (long long)T0 + 33500);
	snprintf(a[3], sizeof(a[3]), "%lld", (long long)T0 + 140000);
	snprintf(a[4], sizeof(a[4]), "%d", 400);
	snprintf(a[5], sizeof(a[5]), "%d", 1300);
	strbuf_init(&out, 0);
	for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]); i++) {
		jsonw_init(&jw, &out, false);
		assert_int_equal(store_query_json(st, sql[i], params, false, &jw, &n), 0);
		assert_true(n > 0);
		strbuf_addch(&out, '\n');
	}
	return strbuf_detach(&out, NULL);
}

/* A job replayed: every row it hands out, in order. */
static void on_job(void *arg, int64_t ts_ms, const struct job_sample *s)
{
	strbuf_addf(arg, "j%lld:%llu ", (long long)ts_ms, (unsigned long long)s->user_ms);
}

static void on_proc(void *arg, const struct proc_info *p, int64_t ts_ms,
		    const struct proc_sample *s)
{
	strbuf_addf(arg, "p%d@%lld:%llu ", p->pid, (long long)ts_ms,
		    (unsigned long long)s->user_ms);
}

static void on_host(void *arg, int64_t ts_ms, const struct host_sample *h)
{
	strbuf_addf(arg, "h%lld:%llu/%d ", (long long)ts_ms,
		    (unsigned long long)h->cpu.total.user_ms, h->cpu.ncpus);
}

static void on_event(void *arg, const struct event_record *e)
{
	strbuf_addf(arg, "e%lld:%s ", (long long)e->ts_ms, e->kind);
}

static char *replay(struct store *st, const struct world *w)
{
	struct store_replay_ops ops = {
	    .host = on_host, .job = on_job, .proc = on_proc, .event = on_event};
	struct strbuf out;

	strbuf_init(&out, 0);
	assert_int_equal(store_replay_job(st, w->job.id, &ops, &out), 0);
	return strbuf_detach(&out, NULL);
}

static char *export_all(struct store *st)
{
	struct store_rowset rs;
	struct strbuf out;
	int64_t after = 0, to, max, n;

	strbuf_init(&out, 0);
	store_rowset_init(&rs, 0);
	do {
		assert_int_equal(store_export_batch(st, after, 97, &rs, &to, &max, &n), 0);
		for (size_t t = 0; t < rs.ntables; t++) {
			const struct store_table *tb = &rs.tables[t];

			strbuf_addf(&out, "%s:%zu[", tb->name, tb->nrows);
			for (size_t c = 0; c < tb->nrows * (size_t)tb->ncols; c++) {
				const struct store_value *v = &tb->cells[c];

				if (v->type == STORE_VALUE_INT)
					strbuf_addf(&out, "%lld,", (long long)v->i);
				else if (v->type == STORE_VALUE_REAL)
					strbuf_addf(&out, "%.17g,", v->d);
				else if (v->type == STORE_VALUE_TEXT)
					strbuf_addf(&out, "'%.*s',", (int)v->len, v->s);
				else
					strbuf_addstr(&out, "null,");
			}
			strbuf_addstr(&out, "] ");
		}
		after = to;
	} while (to < max);
	store_rowset_release(&rs);
	return strbuf_detach(&out, NULL);
}

static int64_t sql_count(struct store *st, const char *sql)
{
	int64_t n = -1;
	struct strbuf out;
	struct jsonw jw;
	int64_t rows;

	strbuf_init(&out, 0);
	jsonw_init(&jw, &out, false);
	assert_int_equal(store_query_json(st, sql, NULL, true, &jw, &rows), 0);
	/* {"n":123} */
	assert_int_equal(sscanf(strbuf_str(&out), "{\"n\":%lld}", (long long *)&n), 1);
	strbuf_release(&out);
	return n;
}

/* The store reads as it did: the T_all tables, the job's replay, the export. */
static void assert_reads_as(struct store *st, const struct world *w, const char *d0, const char *r0,
			    const char *e0)
{
	char *d1 = dump(st, w), *r1 = replay(st, w), *e1 = export_all(st);

	assert_string_equal(d0, d1);
	assert_string_equal(r0, r1);
	assert_string_equal(e0, e1);
	free(d1);
	free(r1);
	free(e1);
}

static void test_store_packed_reads_the_same(void **state)
{
	struct fixture *fx = *state;
	struct store_pack_result res;
	struct world w;
	struct store *st = make_world(fx, &w);
	char *d0, *r0, *e0, *d1;
	int64_t rows_before;

	write_ticks(st, &w, 3700);
	d0 = dump(st, &w);
	r0 = replay(st, &w);
	e0 = export_all(st);
	rows_before = sql_count(st, "SELECT count(*) AS n FROM proc_samples");

	/* the first 20 minutes, in steps of at most 3000 seqs */
	do
		assert_int_equal(store_pack_step(st, T0 + 1200 * 1000, INT64_MAX, 3000, &res), 0);
	while (res.more);
	assert_true(sql_count(st, "SELECT count(*) AS n FROM packs") > 0);
	assert_true(sql_count(st, "SELECT count(*) AS n FROM proc_samples") < rows_before);
	assert_int_equal(sql_count(st, "SELECT count(*) AS n FROM host_samples WHERE ts_ms < "
				       "1700001200000"),
			 0);
	assert_reads_as(st, &w, d0, r0, e0);

	/* then everything but the last tick's rows, and a head's cursor bounding it */
	assert_int_equal(store_pack_step(st, T0 + 3699 * 1000, 20000, 0, &res), 0);
	assert_int_equal(res.cut_seq, 20000);
	assert_int_equal(store_pack_step(st, T0 + 3699 * 1000, INT64_MAX, 0, &res), 0);
	assert_true(res.rows > 0);
	assert_true(res.bytes < res.raw_bytes);
	assert_reads_as(st, &w, d0, r0, e0);
	/* unpacked: plain rows, read the same; packed again */
	{
		int64_t rows;

		assert_int_equal(store_unpack(st, &rows), 0);
		assert_true(rows > 0);
		assert_int_equal(sql_count(st, "SELECT count(*) AS n FROM packs"), 0);
		d1 = dump(st, &w);
		assert_string_equal(d0, d1);
		free(d1);
		assert_int_equal(store_pack_step(st, T0 + 3699 * 1000, INT64_MAX, 0, &res), 0);
		assert_int_equal(res.rows, rows);
	}
	free(d0);
	free(r0);
	free(e0);

	/* reopened, read-only: the same; written to again: seq goes on above the packs */
	store_close(st);
	assert_int_equal(store_open(fx->path, 0, &st), 0);
	d1 = replay(st, &w);
	assert_non_null(strstr(d1, "j1700003699000:2589300 "));
	free(d1);
	store_close(st);
	assert_int_equal(store_open(fx->path, STORE_CREATE, &st), 0);
	{
		int64_t max_before, max_after;
		struct store_rowset rs;
		int64_t to, n;

		store_rowset_init(&rs, 0);
		assert_int_equal(store_export_batch(st, 0, 1, &rs, &to, &max_before, &n), 0);
		write_ticks(st, &w, 1);
		assert_int_equal(store_export_batch(st, 0, 1, &rs, &to, &max_after, &n), 0);
		assert_true(max_after > max_before);
		store_rowset_release(&rs);
	}
	store_close(st);
}

/* Retention by age takes whole packs, and the size cap finds the oldest among them. */
static void test_store_packs_age_out(void **state)
{
	struct fixture *fx = *state;
	struct store_retention r = {.raw_ms = 1800 * 1000};
	struct store_retention_result res;
	struct store_pack_result pr;
	struct world w;
	struct store *st = make_world(fx, &w);
	int64_t packed;

	write_ticks(st, &w, 3600);
	do
		assert_int_equal(store_pack_step(st, T0 + 3000 * 1000, INT64_MAX, 3000, &pr), 0);
	while (pr.more);
	packed = sql_count(st, "SELECT count(*) AS n FROM packs");
	assert_true(packed > 0);
	/* now = T0 + 3600 s: rows before T0 + 1800 s go, the packs wholly before it */
	do
		assert_int_equal(store_retention_step(st, T0 + 3600 * 1000, &r, NULL, 100000, &res),
				 0);
	while (res.deleted > 0);
	assert_true(sql_count(st, "SELECT count(*) AS n FROM packs") < packed);
	assert_int_equal(sql_count(st, "SELECT count(*) AS n FROM host_samples_all WHERE ts_ms >= "
				       "1700001800000"),
			 1800);
	packed = sql_count(st, "SELECT count(*) AS n FROM packs");
	/* 20 minutes later, rows before T0 + 2900 s go: the packs wholly before it */
	do
		assert_int_equal(store_retention_step(st, T0 + 4700 * 1000, &r, NULL, 100000, &res),
				 0);
	while (res.deleted > 0);
	assert_true(sql_count(st, "SELECT count(*) AS n FROM packs") < packed);
	assert_true(sql_count(st, "SELECT count(*) AS n FROM packs") > 0);
	assert_true(sql_count(st, "SELECT count(*) AS n FROM host_samples_all WHERE ts_ms < "
				  "1700002900000") < 2900);
	assert_int_equal(sql_count(st, "SELECT count(*) AS n FROM host_samples_all WHERE ts_ms >= "
				       "1700002900000"),
			 700);
	/* and with nothing that young, everything */
	do
		assert_int_equal(store_retention_step(st, T0 + 9000 * 1000, &r, NULL, 100000, &res),
				 0);
	while (res.deleted > 0);
	assert_int_equal(sql_count(st, "SELECT count(*) AS n FROM packs"), 0);
	assert_int_equal(sql_count(st, "SELECT count(*) AS n FROM host_samples_all"), 0);
	store_close(st);

	/* a head's store (agents stream to it) is never packed */
	{
		sqlite3 *db;

		assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
		assert_int_equal(sqlite3_exec(db,
					      "INSERT INTO agents (agent_id, node_id)"
					      " VALUES ('a1', 1)",
					      NULL, NULL, NULL),
				 SQLITE_OK);
		sqlite3_close(db);
	}
	assert_int_equal(store_open(fx->path, STORE_CREATE, &st), 0);
	write_ticks(st, &w, 10);
	assert_int_equal(store_pack_step(st, INT64_MAX, INT64_MAX, 0, &pr), -EOPNOTSUPP);
	assert_int_equal(sql_count(st, "SELECT count(*) AS n FROM packs"), 0);
	store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_codec_round_trip),
	    cmocka_unit_test(test_codec_counters_compress),
	    cmocka_unit_test(test_codec_corrupt),
	    cmocka_unit_test_setup_teardown(test_store_packed_reads_the_same, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_store_packs_age_out, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
