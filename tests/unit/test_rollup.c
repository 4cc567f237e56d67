/*
 * test_rollup.c - the rollup accumulators (store/rollup.h): buckets of each
 * tier, exact min/avg/max, a bucket written when a later one opens, missing
 * values left out, and the rows that reach the store; the GPU's series of
 * one reading (activity weighted by its interval, throttle seconds from
 * the violation counters) and an hour of them.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "common/log.h"
#include "store/rollup.h"
#include "store/write.h"

static void test_bucket_min_avg_max(void **state)
{
	struct rollup_acc acc = {0}, closed;
	struct rollup_record rec;
	struct rollup_series s = {7, "host", 0, "load1"};

	(void)state;
	/* 10:02:00.000 .. 10:02:59.999 is one minute bucket */
	assert_false(rollup_acc_add(&acc, 60000, 36120000, 2.5, &closed));
	assert_false(rollup_acc_add(&acc, 60000, 36130500, 0.5, &closed));
	assert_false(rollup_acc_add(&acc, 60000, 36179999, 6.0, &closed));
	assert_int_equal(acc.bucket_ms, 36120000);
	assert_int_equal(acc.n, 3);
	assert_true(acc.min == 0.5);
	assert_true(acc.max == 6.0);
	assert_true(acc.sum == 9.0);
	rollup_acc_record(&acc, 60000, &s, &rec);
	assert_int_equal(rec.tier_ms, 60000);
	assert_int_equal(rec.node_id, 7);
	assert_string_equal(rec.entity, "host");
	assert_int_equal(rec.entity_id, 0);
	assert_string_equal(rec.metric, "load1");
	assert_int_equal(rec.ts_ms, 36120000);
	assert_int_equal(rec.n, 3);
	assert_true(rec.min == 0.5);
	assert_true(rec.avg == 3.0);
	assert_true(rec.max == 6.0);
}

static void test_flush_at_boundary(void **state)
{
	struct rollup_acc acc = {0}, closed;

	(void)state;
	assert_false(rollup_acc_add(&acc, 60000, 59000, 4.0, &closed));
	assert_false(rollup_acc_add(&acc, 60000, 59999, 8.0, &closed));
	memset(&closed, 0, sizeof(closed));
	/* the first ms of the next minute closes the open bucket */
	assert_true(rollup_acc_add(&acc, 60000, 60000, 1.0, &closed));
	assert_int_equal(closed.bucket_ms, 0);
	assert_int_equal(closed.n, 2);
	assert_true(closed.min == 4.0);
	assert_true(closed.max == 8.0);
	assert_true(closed.sum == 12.0);
	/* ... and opens one with that value alone */
	assert_int_equal(acc.bucket_ms, 60000);
	assert_int_equal(acc.n, 1);
	assert_true(acc.min == 1.0);
	assert_true(acc.max == 1.0);
	assert_true(acc.sum == 1.0);
	/* the hour tier keeps both minutes in one bucket */
	memset(&acc, 0, sizeof(acc));
	assert_false(rollup_acc_add(&acc, 3600000, 59000, 4.0, &closed));
	assert_false(rollup_acc_add(&acc, 3600000, 60000, 1.0, &closed));
	assert_int_equal(acc.n, 2);
	assert_int_equal(acc.bucket_ms, 0);
	assert_true(rollup_acc_add(&acc, 3600000, 3600000, 9.0, &closed));
	assert_int_equal(closed.n, 2);
	assert_true(closed.sum == 5.0);
}

static void test_nan_left_out(void **state)
{
	struct rollup_acc acc = {0}, closed;

	(void)state;
	/* a missing value neither opens a bucket... */
	assert_false(rollup_acc_add(&acc, 60000, 1000, NAN, &closed));
	assert_int_equal(acc.n, 0);
	assert_false(rollup_acc_add(&acc, 60000, 1000, 3.0, &closed));
	/* ...nor closes one, nor counts in it */
	assert_false(rollup_acc_add(&acc, 60000, 61000, NAN, &closed));
	assert_int_equal(acc.bucket_ms, 0);
	assert_int_equal(acc.n, 1);
	assert_true(acc.min == 3.0 && acc.max == 3.0 && acc.sum == 3.0);
}

/* Rows of the rollups table as "tier entity id metric ts n min avg max" lines, in its order. */
static void read_rows(const char *path, char *out, size_t size)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	size_t len = 0;

	out[0] = '\0';
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(
	    sqlite3_prepare_v2(
		db,
		"SELECT tier_ms, entity, entity_id, metric, ts_ms, n,"
		" min, avg, max FROM rollups ORDER BY tier_ms, ts_ms, entity, entity_id, metric",
		-1, &q, NULL),
	    SQLITE_OK);
	while (sqlite3_step(q) == SQLITE_ROW && len < size)
		len += (size_t)snprintf(
		    out + len, size - len, "%lld %s %lld %s %lld %lld %g %g %g\n",
		    sqlite3_column_int64(q, 0), (const char *)sqlite3_column_text(q, 1),
		    sqlite3_column_int64(q, 2), (const char *)sqlite3_column_text(q, 3),
		    sqlite3_column_int64(q, 4), sqlite3_column_int64(q, 5),
		    sqlite3_column_double(q, 6), sqlite3_column_double(q, 7),
		    sqlite3_column_double(q, 8));
	sqlite3_finalize(q);
	sqlite3_close(db);
}

static void test_rows_in_store(void **state)
{
	char dir[] = "/tmp/jobscope-test-rollup-XXXXXX", path[256], rows[1024];
	struct rollup_acc acc[ROLLUP_TIERS] = {{0}};
	struct rollup_series s = {1, "job", 42, "cpu_cores"};
	struct store *st;
	FILE *log = tmpfile();

	(void)state;
	assert_non_null(log);
	log_set_file(log);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/store.db", dir);
	assert_int_equal(store_open(path, STORE_CREATE, &st), 0);
	assert_int_equal(store_tick_begin(st), 0);
	assert_int_equal(rollup_add(st, &s, acc, 3599000, 1.0), 0);
	assert_int_equal(rollup_add(st, &s, acc, 3599500, 3.0), 0);
	assert_int_equal(rollup_add(st, &s, acc, 3600000, NAN), 0);
	/* both tiers close at 1:00:00: the minute's row, then the hour's */
	assert_int_equal(rollup_add(st, &s, acc, 3600000, 10.0), 0);
	assert_int_equal(rollup_add(st, &s, acc, 3661000, 20.0), 0);
	/* on exit: the open buckets, hour tier first here */
	assert_int_equal(rollup_flush(st, &s, &acc[1], 1), 0);
	assert_int_equal(acc[1].n, 0);
	assert_int_equal(rollup_flush(st, &s, &acc[0], 0), 0);
	/* an empty bucket writes nothing */
	assert_int_equal(rollup_flush(st, &s, &acc[0], 0), 0);
	assert_int_equal(store_tick_commit(st), 0);
	store_close(st);
	read_rows(path, rows, sizeof(rows));
	/* in the table's order (schema 18): tier, then time */
	assert_string_equal(rows, "60000 job 42 cpu_cores 3540000 2 1 2 3\n"
				  "60000 job 42 cpu_cores 3600000 1 10 10 10\n"
				  "60000 job 42 cpu_cores 3660000 1 20 20 20\n"
				  "3600000 job 42 cpu_cores 0 2 1 2 3\n"
				  "3600000 job 42 cpu_cores 3600000 2 10 15 20\n");
	unlink(path);
	snprintf(path, sizeof(path), "%s/store.db-wal", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/store.db-shm", dir);
	unlink(path);
	rmdir(dir);
	log_set_file(NULL);
	fclose(log);
}

/* One reading of a GPU: its time, SM active (percent x 100; -1: missing), power violation ns (-1:
 * missing). */
struct reading {
	int64_t ts;
	int64_t sm_pct100;
	int64_t viol_ns;
};

static void reading_sample(const struct reading *r, struct gpu_sample *s)
{
	memset(s, 0, sizeof(*s));
	s->valid = GPU_UTIL;
	s->util_pct = 100;
	if (r->sm_pct100 >= 0) {
		s->prof_valid |= GPU_PROF_SM_ACTIVE;
		s->sm_active_pct100 = (uint32_t)r->sm_pct100;
	}
	if (r->viol_ns >= 0) {
		s->prof_valid |= GPU_PROF_VIOL_POWER;
		s->viol_power_ns = (uint64_t)r->viol_ns;
	}
}

static void test_gpu_values(void **state)
{
	struct gpu_sample prev, cur;
	struct rollup_gpu_values v;

	(void)state;
	memset(&prev, 0, sizeof(prev));
	memset(&cur, 0, sizeof(cur));
	cur.valid = GPU_UTIL | GPU_POWER;
	cur.util_pct = 97;
	cur.power_mw = 512500;
	cur.prof_valid = GPU_PROF_SM_ACTIVE | GPU_PROF_TENSOR_ACTIVE | GPU_PROF_VIOL_POWER |
			 GPU_PROF_VIOL_THERMAL | GPU_PROF_VIOL_SW_THERMAL;
	cur.sm_active_pct100 = 6150;
	cur.tensor_active_pct100 = 2500;
	cur.dram_active_pct100 = 3300; /* its bit clear: missing */
	cur.viol_power_ns = 1500000000;
	cur.viol_thermal_ns = 2000000000;
	cur.viol_sw_thermal_ns = 7;

	/* the first reading: no interval, so no activity and no throttle time */
	rollup_gpu_values(&cur, NULL, 0, &v);
	assert_true(v.v[ROLLUP_GPU_UTIL_PCT] == 97 && v.w[ROLLUP_GPU_UTIL_PCT] == 1);
	assert_true(v.v[ROLLUP_GPU_POWER_W] == 512.5);
	assert_true(isnan(v.v[ROLLUP_GPU_MEM_USED_BYTES]));
	assert_true(isnan(v.v[ROLLUP_GPU_SM_ACTIVE_PCT]));
	assert_true(isnan(v.v[ROLLUP_GPU_THROTTLE_POWER_S]));

	prev.prof_valid = GPU_PROF_VIOL_POWER | GPU_PROF_VIOL_THERMAL;
	prev.viol_power_ns = 1000000000;
	prev.viol_thermal_ns = 5000000000; /* more than now: reset, counted from 0 */
	prev.viol_sw_thermal_ns = 3;	   /* its bit clear in prev: no difference */
	rollup_gpu_values(&cur, &prev, 2500, &v);
	assert_true(v.v[ROLLUP_GPU_SM_ACTIVE_PCT] == 61.5);
	assert_true(v.w[ROLLUP_GPU_SM_ACTIVE_PCT] == 2.5);
	assert_true(v.v[ROLLUP_GPU_TENSOR_ACTIVE_PCT] == 25);
	assert_true(isnan(v.v[ROLLUP_GPU_DRAM_ACTIVE_PCT]));
	assert_true(isnan(v.v[ROLLUP_GPU_FP64_ACTIVE_PCT]));
	assert_true(v.v[ROLLUP_GPU_THROTTLE_POWER_S] == 0.5);
	assert_true(v.w[ROLLUP_GPU_THROTTLE_POWER_S] == 1);
	assert_true(v.v[ROLLUP_GPU_THROTTLE_THERMAL_S] == 2.0);
	assert_true(isnan(v.v[ROLLUP_GPU_THROTTLE_SW_THERMAL_S]));
	assert_true(isnan(v.v[ROLLUP_GPU_THROTTLE_HW_POWER_BRAKE_S]));
	/* no time between the two: an activity figure has nothing to weigh it by */
	rollup_gpu_values(&cur, &prev, 0, &v);
	assert_true(isnan(v.v[ROLLUP_GPU_SM_ACTIVE_PCT]));
	assert_true(v.v[ROLLUP_GPU_THROTTLE_POWER_S] == 0.5);
}

/*
 * An hour of irregular readings through rollup_gpu_values and the hour
 * tier: SM active's avg is its time-weighted mean over the readings that
 * had it, the power throttle's avg x n the seconds of the counter's
 * differences (a reset counted from 0), both computed here from the
 * readings themselves.
 */
static void test_gpu_hour(void **state)
{
	static const struct reading r[] = {
	    {3600000, 5000, 0},		  /* first: no interval */
	    {3601000, 6000, 400000000},	  /* 1 s */
	    {3603000, -1, 900000000},	  /* 2 s, SM active missing */
	    {3606000, 8000, 300000000},	  /* 3 s, the counter reset */
	    {3606500, 2000, -1},	  /* 0.5 s, the counter missing */
	    {3611500, 10000, 2800000000}, /* 5 s, after a reading without it */
	    {3671500, 4000, 2900000000},  /* 60 s: the next minute */
	};
	size_t n = sizeof(r) / sizeof(r[0]);
	struct rollup_acc sm = {0}, thr = {0}, closed;
	struct rollup_series s = {1, "gpu", 3, "sm_active_pct"};
	struct rollup_record rec;
	double want_sum = 0, want_w = 0, want_s = 0;
	int64_t want_n = 0;

	(void)state;
	for (size_t i = 0; i < n; i++) {
		struct gpu_sample cur, prev;
		struct rollup_gpu_values v;

		reading_sample(&r[i], &cur);
		if (i)
			reading_sample(&r[i - 1], &prev);
		rollup_gpu_values(&cur, i ? &prev : NULL, i ? r[i].ts - r[i - 1].ts : 0, &v);
		assert_false(rollup_acc_add_w(&sm, 3600000, r[i].ts, v.v[ROLLUP_GPU_SM_ACTIVE_PCT],
					      v.w[ROLLUP_GPU_SM_ACTIVE_PCT], &closed));
		assert_false(rollup_acc_add_w(&thr, 3600000, r[i].ts,
					      v.v[ROLLUP_GPU_THROTTLE_POWER_S],
					      v.w[ROLLUP_GPU_THROTTLE_POWER_S], &closed));
		/* the expectation, from the readings */
		if (i && r[i].sm_pct100 >= 0) {
			double dt = (double)(r[i].ts - r[i - 1].ts) / 1000;

			want_sum += (double)r[i].sm_pct100 / 100 * dt;
			want_w += dt;
		}
		if (i && r[i].viol_ns >= 0 && r[i - 1].viol_ns >= 0) {
			int64_t d = r[i].viol_ns >= r[i - 1].viol_ns
					? r[i].viol_ns - r[i - 1].viol_ns
					: r[i].viol_ns;

			want_s += (double)d / 1e9;
			want_n++;
		}
	}
	rollup_acc_record(&sm, 3600000, &s, &rec);
	assert_int_equal(rec.n, 5);
	assert_true(rec.min == 20 && rec.max == 100);
	assert_true(fabs(rec.avg - want_sum / want_w) < 1e-12);
	/* (60x1 + 80x3 + 20x0.5 + 100x5 + 40x60) / 69.5 */
	assert_true(fabs(rec.avg - 3210.0 / 69.5) < 1e-12);
	s.metric = "throttle_power_s";
	rollup_acc_record(&thr, 3600000, &s, &rec);
	assert_int_equal(rec.n, want_n);
	assert_int_equal(rec.n, 4);
	assert_true(fabs(rec.avg * (double)rec.n - want_s) < 1e-12);
	/* 0.4 + 0.5 + 0.3 (reset) + 0.1 */
	assert_true(fabs(rec.avg * (double)rec.n - 1.3) < 1e-12);
	assert_true(rec.min == 0.1 && rec.max == 0.5);
}

/* A bucket written in two parts (a restart): the store's merge keeps the throttle seconds. */
static void test_gpu_throttle_merged(void **state)
{
	char dir[] = "/tmp/jobscope-test-rollup-XXXXXX", path[256], rows[1024];
	struct rollup_acc acc[ROLLUP_TIERS] = {{0}};
	struct rollup_series s = {1, "gpu", 3, "throttle_power_s"};
	struct store *st;
	FILE *log = tmpfile();

	(void)state;
	assert_non_null(log);
	log_set_file(log);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/store.db", dir);
	assert_int_equal(store_open(path, STORE_CREATE, &st), 0);
	assert_int_equal(store_tick_begin(st), 0);
	assert_int_equal(rollup_add_w(st, &s, acc, 3601000, 0.25, 1), 0);
	assert_int_equal(rollup_add_w(st, &s, acc, 3602000, 0.5, 1), 0);
	assert_int_equal(rollup_flush(st, &s, &acc[1], 1), 0); /* the agent stops */
	assert_int_equal(rollup_add_w(st, &s, acc, 3605000, 2.0, 1), 0);
	assert_int_equal(rollup_flush(st, &s, &acc[1], 1), 0);
	assert_int_equal(store_tick_commit(st), 0);
	store_close(st);
	read_rows(path, rows, sizeof(rows));
	/* n 3, avg 2.75 / 3: the seconds are avg x n = 2.75 */
	assert_string_equal(rows, "3600000 gpu 3 throttle_power_s 3600000 3 0.25 0.916667 2\n");
	unlink(path);
	snprintf(path, sizeof(path), "%s/store.db-wal", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/store.db-shm", dir);
	unlink(path);
	rmdir(dir);
	log_set_file(NULL);
	fclose(log);
}

static int collect_period(const struct rollup_record *r, void *arg)
{
	struct rollup_period *p = arg;

	assert_string_equal(r->entity, "gpu");
	assert_int_equal(r->entity_id, 3);
	rollup_period_add(p, r);
	return 0;
}

/*
 * Three hours of a GPU's ticks through the agent's path (rollup_gpu_values,
 * rollup_add_w) into a store, read back as one period of the hour tier: the
 * throttle seconds are the counter's own growth, SM active the average of
 * the ticks (evenly spaced: their time-weighted average).
 */
static void test_gpu_period_read_back(void **state)
{
	char dir[] = "/tmp/jobscope-test-rollup-XXXXXX", path[256];
	struct rollup_acc sm[ROLLUP_TIERS] = {{0}}, thr[ROLLUP_TIERS] = {{0}};
	struct rollup_series s_sm = {1, "gpu", 3, "sm_active_pct"};
	struct rollup_series s_thr = {1, "gpu", 3, "throttle_power_s"};
	struct rollup_query q = {3600000, 0, 3 * 3600000, "gpu", 3, "throttle_power_s"};
	struct rollup_period p_thr = {0}, p_sm = {0};
	struct gpu_sample prev, cur;
	struct store *st;
	FILE *log = tmpfile();
	double want_sm = 0;
	uint64_t viol = 0, first_viol = 0;
	int nsm = 0;

	(void)state;
	assert_non_null(log);
	log_set_file(log);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/store.db", dir);
	assert_int_equal(store_open(path, STORE_CREATE, &st), 0);
	assert_int_equal(store_tick_begin(st), 0);
	/* a tick every 10 s from 0:00:10 to 3:00:00 */
	for (int64_t ts = 10000; ts < 3 * 3600000; ts += 10000) {
		struct rollup_gpu_values v;
		uint32_t pct100 = (uint32_t)((ts / 10000) % 97) * 100 + 17;

		memset(&cur, 0, sizeof(cur));
		cur.prof_valid = GPU_PROF_SM_ACTIVE | GPU_PROF_VIOL_POWER;
		cur.sm_active_pct100 = pct100;
		viol += (uint64_t)(ts % 7) * 1000000000ull / 3; /* some ns each tick */
		cur.viol_power_ns = viol;
		if (ts == 10000)
			first_viol = viol;
		rollup_gpu_values(&cur, ts == 10000 ? NULL : &prev, 10000, &v);
		if (ts != 10000) {
			want_sm += pct100 / 100.0;
			nsm++;
		}
		assert_int_equal(rollup_add_w(st, &s_sm, sm, ts, v.v[ROLLUP_GPU_SM_ACTIVE_PCT],
					      v.w[ROLLUP_GPU_SM_ACTIVE_PCT]),
				 0);
		assert_int_equal(rollup_add_w(st, &s_thr, thr, ts, v.v[ROLLUP_GPU_THROTTLE_POWER_S],
					      v.w[ROLLUP_GPU_THROTTLE_POWER_S]),
				 0);
		prev = cur;
	}
	for (int t = 0; t < ROLLUP_TIERS; t++) {
		assert_int_equal(rollup_flush(st, &s_sm, &sm[t], t), 0);
		assert_int_equal(rollup_flush(st, &s_thr, &thr[t], t), 0);
	}
	assert_int_equal(store_tick_commit(st), 0);

	assert_int_equal(store_for_each_rollup(st, &q, collect_period, &p_thr), 0);
	assert_int_equal(p_thr.n, nsm);
	assert_true(fabs(p_thr.total - (double)(viol - first_viol) / 1e9) < 1e-6);
	q.metric = "sm_active_pct";
	assert_int_equal(store_for_each_rollup(st, &q, collect_period, &p_sm), 0);
	assert_int_equal(p_sm.n, nsm);
	assert_true(fabs(p_sm.avg - want_sm / nsm) < 1e-9);
	assert_true(p_sm.min == 0.17 && p_sm.max == 96.17);
	/* the minute tier says the same; a window of the first hour only: less */
	q.tier_ms = 60000;
	memset(&p_sm, 0, sizeof(p_sm));
	assert_int_equal(store_for_each_rollup(st, &q, collect_period, &p_sm), 0);
	assert_int_equal(p_sm.n, nsm);
	assert_true(fabs(p_sm.avg - want_sm / nsm) < 1e-9);
	q.until_ms = 3600000;
	memset(&p_sm, 0, sizeof(p_sm));
	assert_int_equal(store_for_each_rollup(st, &q, collect_period, &p_sm), 0);
	assert_int_equal(p_sm.n, 359 - 1); /* 0:00:20 .. 0:59:50 */
	store_close(st);
	unlink(path);
	snprintf(path, sizeof(path), "%s/store.db-wal", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/store.db-shm", dir);
	unlink(path);
	rmdir(dir);
	log_set_file(NULL);
	fclose(log);
}

static void test_metric_names(void **state)
{
	(void)state;
	/* names in the store: fixed, whoever writes them (the agent, js-mkstore) */
	assert_string_equal(rollup_host_metric_names[ROLLUP_HOST_CPU_BUSY_PCT], "cpu_busy_pct");
	assert_string_equal(rollup_host_metric_names[ROLLUP_HOST_NET_TX_BPS], "net_tx_bps");
	assert_string_equal(rollup_job_metric_names[ROLLUP_JOB_WRITE_BPS], "write_bps");
	assert_string_equal(rollup_gpu_metric_names[ROLLUP_GPU_POWER_W], "power_w");
	assert_string_equal(rollup_gpu_metric_names[ROLLUP_GPU_SM_ACTIVE_PCT], "sm_active_pct");
	assert_string_equal(rollup_gpu_metric_names[ROLLUP_GPU_THROTTLE_POWER_S],
			    "throttle_power_s");
	assert_string_equal(rollup_gpu_metric_names[ROLLUP_GPU_THROTTLE_HW_POWER_BRAKE_S],
			    "throttle_hw_power_brake_s");
	for (int m = 0; m < ROLLUP_GPU__COUNT; m++)
		assert_non_null(rollup_gpu_metric_names[m]);
	assert_int_equal(rollup_tier_ms[0], 60000);
	assert_int_equal(rollup_tier_ms[1], 3600000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bucket_min_avg_max),
	    cmocka_unit_test(test_flush_at_boundary),
	    cmocka_unit_test(test_nan_left_out),
	    cmocka_unit_test(test_rows_in_store),
	    cmocka_unit_test(test_metric_names),
	    cmocka_unit_test(test_gpu_values),
	    cmocka_unit_test(test_gpu_hour),
	    cmocka_unit_test(test_gpu_throttle_merged),
	    cmocka_unit_test(test_gpu_period_read_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
