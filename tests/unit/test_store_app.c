/*
 * test_store_app.c - app metrics and markers in the store (schema 10:
 * app_samples; marks): points of every type written and read back value
 * for value with their sketches, points of nothing received left out,
 * the window and the order of a read, rows kept or dropped with the tick
 * they were written in, a schema 9 store read as empty (puts refused),
 * and rows streamed from an agent's store to a head's (export, ingest).
 *
 * Every test runs on SQLite; with JOBSCOPE_TEST_PG_URL (a PostgreSQL
 * database) the same tests run again on it, each with job ids of its own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"
#include "sketch_fixture.h"
#include "store_fixture.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "store/rowset.h"
#include "store/store.h"
#include "store/jobdata.h"
#include "store/reader.h"
#include "store/write.h"
#include "store_schema16.h"

static void point(struct app_point *p, const char *name, const char *tags, enum app_type t,
		  double count, double sum, double min, double max, double last)
{
	app_point_init(p);
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->tags, sizeof(p->tags), "%s", tags);
	p->type = t;
	p->count = count;
	p->sum = sum;
	p->min = min;
	p->max = max;
	p->last = last;
}

/* One tick's points: a counter, a gauge, a timer with a sketch of 1..100 ms, a set, nothing. */
#define NPTS 5
static void fill(struct app_point pts[NPTS])
{
	point(&pts[0], "frames", "", APP_COUNTER, 4, 120, 10, 50, 50);
	point(&pts[1], "queue", "host:a,q:1", APP_GAUGE, 3, 21, 5, 9, 7);
	point(&pts[2], "step", "phase:'train' \xc3\xbc", APP_TIMER, 100, 5050, 1, 100, 100);
	for (int v = 1; v <= 100; v++)
		assert_int_equal(app_sketch_add(&pts[2].sk, v, 1), 0);
	assert_int_equal(app_sketch_add(&pts[2].sk, -3, 0.5), 0);
	assert_int_equal(app_sketch_add(&pts[2].sk, 0, 2), 0);
	point(&pts[3], "users", "", APP_SET, 6, 0, 0, 0, 4);
	point(&pts[4], "idle", "", APP_COUNTER, 0, 0, 0, 0, 0); /* nothing: no row */
}

static void release(struct app_point *pts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		app_point_release(&pts[i]);
}

struct got {
	int64_t ts[16];
	struct app_point p[16];
	size_t n;
	size_t stop_after; /* 0: never */
};

static int collect(void *arg, int64_t ts_ms, const struct app_point *p)
{
	struct got *g = arg;

	assert_true(g->n < 16);
	g->ts[g->n] = ts_ms;
	g->p[g->n] = *p;
	app_sketch_init(&g->p[g->n].sk);
	assert_int_equal(app_sketch_merge(&g->p[g->n].sk, &p->sk), 0);
	g->n++;
	return g->stop_after && g->n == g->stop_after ? 7 : 0;
}

static void assert_same_point(const struct app_point *a, const struct app_point *b)
{
	assert_string_equal(a->name, b->name);
	assert_string_equal(a->tags, b->tags);
	assert_int_equal(a->type, b->type);
	assert_true(a->count == b->count);
	assert_true(a->sum == b->sum);
	assert_true(a->min == b->min);
	assert_true(a->max == b->max);
	assert_true(a->last == b->last);
	assert_sketch_equal(&a->sk, &b->sk);
}

/* Written and read back value for value, by time then name; a window; fn's stop. */
static void test_round_trip(void **state)
{
	struct fixture *fx = *state;
	int64_t job = fx->job_base + 1;
	struct app_point pts[NPTS], later;
	struct store *st = open_store(fx);
	struct got g = {0};
	double q, want;

	fill(pts);
	assert_int_equal(store_put_app_points(st, job, 2000, pts, NPTS), 0);
	point(&later, "frames", "", APP_COUNTER, 1, 0.5, 0.5, 0.5, 0.5);
	assert_int_equal(store_put_app_points(st, job, 3000, &later, 1), 0);
	assert_int_equal(store_put_app_points(st, job + 1, 2000, pts, 1), 0); /* another job */

	assert_int_equal(store_for_each_app_point(st, job, 0, INT64_MAX, collect, &g), 0);
	assert_int_equal(g.n, 5); /* the empty point has no row */
	/* by time, then name: frames, queue, step, users; then the later tick */
	assert_same_point(&g.p[0], &pts[0]);
	assert_same_point(&g.p[1], &pts[1]);
	assert_same_point(&g.p[2], &pts[2]);
	assert_same_point(&g.p[3], &pts[3]);
	assert_same_point(&g.p[4], &later);
	for (int i = 0; i < 4; i++)
		assert_int_equal(g.ts[i], 2000);
	assert_int_equal(g.ts[4], 3000);
	/* the same sketch: the same quantiles */
	assert_true(app_sketch_quantile(&g.p[2].sk, 0.95, &q));
	assert_true(app_sketch_quantile(&pts[2].sk, 0.95, &want));
	assert_true(q == want);
	assert_float_equal(q, 95, 95 * 0.02);
	release(g.p, g.n);

	/* the window is [from, to) */
	memset(&g, 0, sizeof(g));
	assert_int_equal(store_for_each_app_point(st, job, 2001, 3001, collect, &g), 0);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.ts[0], 3000);
	release(g.p, g.n);
	memset(&g, 0, sizeof(g));
	assert_int_equal(store_for_each_app_point(st, job, 2000, 3000, collect, &g), 0);
	assert_int_equal(g.n, 4);
	release(g.p, g.n);

	/* fn's non-zero stops the walk and is returned */
	memset(&g, 0, sizeof(g));
	g.stop_after = 2;
	assert_int_equal(store_for_each_app_point(st, job, 0, INT64_MAX, collect, &g), 7);
	assert_int_equal(g.n, 2);
	release(g.p, g.n);
	release(pts, NPTS);
	app_point_release(&later);
	store_close(st);
}

/* Markers: by time whatever the order they came in; none for another job. */
static void test_marks(void **state)
{
	struct fixture *fx = *state;
	int64_t job = fx->job_base + 1;
	struct store *st = open_store(fx);
	struct app_mark m[3], *got = (struct app_mark *)1;
	size_t n = 9;

	memset(m, 0, sizeof(m));
	m[0].ts_ms = 5000;
	snprintf(m[0].name, sizeof(m[0].name), "eval");
	snprintf(m[0].text, sizeof(m[0].text), "epoch 1 \"done\"");
	m[1].ts_ms = 1000;
	snprintf(m[1].name, sizeof(m[1].name), "train");
	m[2].ts_ms = 9000;
	snprintf(m[2].name, sizeof(m[2].name), "save");
	assert_int_equal(store_put_app_marks(st, job, m, 3), 0);
	assert_int_equal(store_get_app_marks(st, job, &got, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(got[0].name, "train");
	assert_int_equal(got[0].ts_ms, 1000);
	assert_string_equal(got[0].text, "");
	assert_string_equal(got[1].name, "eval");
	assert_string_equal(got[1].text, "epoch 1 \"done\"");
	assert_string_equal(got[2].name, "save");
	assert_int_equal(got[2].ts_ms, 9000);
	free(got);
	assert_int_equal(store_get_app_marks(st, job + 1, &got, &n), 0);
	assert_int_equal(n, 0);
	assert_null(got);
	store_close(st);
}

/* In a tick they are the tick's: rolled back with it, committed with it. */
static void test_in_tick(void **state)
{
	struct fixture *fx = *state;
	int64_t job = fx->job_base + 1;
	struct app_point pts[NPTS];
	struct app_mark m = {.ts_ms = 1500, .name = "warmup"};
	struct store *st = open_store(fx);
	struct app_mark *marks;
	struct got g = {0};
	size_t n;

	fill(pts);
	assert_int_equal(store_tick_begin(st), 0);
	assert_int_equal(store_put_app_points(st, job, 1000, pts, NPTS), 0);
	assert_int_equal(store_put_app_marks(st, job, &m, 1), 0);
	store_tick_abort(st);
	assert_int_equal(store_for_each_app_point(st, job, 0, INT64_MAX, collect, &g), 0);
	assert_int_equal(g.n, 0);
	assert_int_equal(store_get_app_marks(st, job, &marks, &n), 0);
	assert_int_equal(n, 0);

	assert_int_equal(store_tick_begin(st), 0);
	assert_int_equal(store_put_app_points(st, job, 1000, pts, NPTS), 0);
	assert_int_equal(store_put_app_marks(st, job, &m, 1), 0);
	assert_int_equal(store_tick_commit(st), 0);
	assert_int_equal(store_for_each_app_point(st, job, 0, INT64_MAX, collect, &g), 0);
	assert_int_equal(g.n, 4);
	release(g.p, g.n);
	assert_int_equal(store_get_app_marks(st, job, &marks, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(marks[0].name, "warmup");
	free(marks);
	release(pts, NPTS);
	store_close(st);
}

/* An agent's points and markers streamed to a head: the same under the head's job, once. */
static void test_streamed_to_a_head(void **state)
{
	struct fixture *fx = *state;
	char agent_path[160], host[32];
	struct store *agent, *head = open_store(fx);
	struct job_record job;
	struct app_point pts[NPTS];
	struct app_mark m = {.ts_ms = 1700000001500, .name = "train", .text = "go"}, *marks;
	int64_t node, head_node, head_job, start, acked;
	struct got a = {0}, h = {0};
	size_t n;

	snprintf(agent_path, sizeof(agent_path), "%s/agent.db", fx->dir);
	snprintf(host, sizeof(host), "node-%lld", (long long)fx->job_base);
	assert_int_equal(store_open(agent_path, STORE_CREATE, &agent), 0);
	assert_int_equal(store_node(agent, host, 4, 1 << 30, 1, &node), 0);
	memset(&job, 0, sizeof(job));
	job.node_id = node;
	snprintf(job.scheduler, sizeof(job.scheduler), "slurm");
	snprintf(job.job_id, sizeof(job.job_id), "7201");
	job.start_ms = 1700000000000;
	assert_int_equal(store_job_begin(agent, &job), 0);
	fill(pts);
	assert_int_equal(store_put_app_points(agent, job.id, 1700000001000, pts, NPTS), 0);
	assert_int_equal(store_put_app_marks(agent, job.id, &m, 1), 0);

	acked = stream(agent, head, host, 0, NULL);
	assert_true(acked > 0);
	assert_int_equal(store_node(head, host, 4, 1 << 30, 1, &head_node), 0);
	assert_int_equal(
	    store_find_job(head, head_node, "slurm", "7201", job.start_ms, &head_job, &start), 0);
	assert_int_equal(store_for_each_app_point(agent, job.id, 0, INT64_MAX, collect, &a), 0);
	assert_int_equal(store_for_each_app_point(head, head_job, 0, INT64_MAX, collect, &h), 0);
	assert_int_equal(a.n, 4);
	assert_int_equal(h.n, 4);
	for (size_t i = 0; i < a.n; i++) {
		assert_int_equal(a.ts[i], h.ts[i]);
		assert_same_point(&a.p[i], &h.p[i]);
	}
	release(h.p, h.n);
	assert_int_equal(store_get_app_marks(head, head_job, &marks, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(marks[0].name, "train");
	assert_string_equal(marks[0].text, "go");
	assert_int_equal(marks[0].ts_ms, 1700000001500);
	free(marks);

	/* the batch again (its answer lost): nothing twice */
	assert_int_equal(stream(agent, head, host, 0, NULL), acked);
	memset(&h, 0, sizeof(h));
	assert_int_equal(store_for_each_app_point(head, head_job, 0, INT64_MAX, collect, &h), 0);
	assert_int_equal(h.n, 4);
	release(h.p, h.n);
	release(a.p, a.n);
	release(pts, NPTS);
	store_close(agent);
	store_close(head);
}

/* A schema 9 store: read as having no app metrics, puts refused; upgraded when opened to write. */
static void test_older_schema(void **state)
{
	struct fixture *fx = *state;
	struct app_point pts[NPTS];
	struct store *st = open_store(fx);
	struct got g = {0};

	store_close(st);
	write_sql(
	    fx, "DROP TABLE app_samples; DROP TABLE energy_samples; DROP INDEX marks_job_ts;"
		" DROP TABLE proc_libs; ALTER TABLE job_samples DROP COLUMN cpu_wait_ms;"
		" ALTER TABLE jobs DROP COLUMN sluid; ALTER TABLE sessions DROP COLUMN owner;"
		" ALTER TABLE procs DROP COLUMN container; ALTER TABLE jobs DROP COLUMN k8s_owner;"
		" ALTER TABLE jobs DROP COLUMN k8s_owner_label;" STORE_UNDO_SCHEMA16
		" PRAGMA user_version = 9");
	fill(pts);
	assert_int_equal(store_open(fx->path, STORE_READONLY, &st), 0);
	assert_int_equal(store_for_each_app_point(st, 1, 0, INT64_MAX, collect, &g), 0);
	assert_int_equal(g.n, 0);
	assert_int_equal(store_put_app_points(st, 1, 1000, pts, NPTS), -EPROTONOSUPPORT);
	store_close(st);

	st = open_store(fx);
	assert_int_equal(store_put_app_points(st, 1, 1000, pts, NPTS), 0);
	assert_int_equal(store_for_each_app_point(st, 1, 0, INT64_MAX, collect, &g), 0);
	assert_int_equal(g.n, 4);
	release(g.p, g.n);
	release(pts, NPTS);
	store_close(st);
}

/* A row of a type this version does not know, or a sketch it cannot read, is left out. */
static void test_unknown_rows_skipped(void **state)
{
	struct fixture *fx = *state;
	struct store *st = open_store(fx);
	struct got g = {0};

	store_close(st);
	write_sql(fx, "INSERT INTO app_samples (seq, job_id, ts_ms, name, type, tags, count, sum,"
		      " min, max, last, sketch) VALUES"
		      " (100, 1, 1000, 'a', 'quantum', '', 1, 1, 1, 1, 1, NULL),"
		      " (101, 1, 1000, 'b', 'timer', '', 1, 1, 1, 1, 1, 'p=1:x'),"
		      " (102, 1, 1000, 'c', 'timer', '', 1, 2, 2, 2, 2, 'p=35:1'),"
		      " (103, 1, 1000, 'd', 'counter', '', 0, 0, NULL, NULL, NULL, NULL)");
	st = open_store(fx);
	assert_int_equal(store_for_each_app_point(st, 1, 0, INT64_MAX, collect, &g), 0);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.p[0].name, "c");
	assert_true(app_sketch_count(&g.p[0].sk) == 1);
	release(g.p, g.n);
	store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_marks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_in_tick, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_streamed_to_a_head, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_older_schema, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unknown_rows_skipped, setup, teardown),
	};
	const struct CMUnitTest pg_tests[] = {
	    cmocka_unit_test_setup_teardown(test_round_trip, setup_pg, teardown),
	    cmocka_unit_test_setup_teardown(test_marks, setup_pg, teardown),
	    cmocka_unit_test_setup_teardown(test_in_tick, setup_pg, teardown),
	    cmocka_unit_test_setup_teardown(test_streamed_to_a_head, setup_pg, teardown),
	};
	int failed;

	next_job_base = ((int64_t)time(NULL) * 100000 + getpid() % 100000) * 1000;
	failed = cmocka_run_group_tests_name("sqlite", tests, NULL, NULL);
	if (getenv("JOBSCOPE_TEST_PG_URL"))
		failed += cmocka_run_group_tests_name("postgresql", pg_tests, NULL, NULL);
	return failed;
}
