/*
 * test_rollup.c - the rollup accumulators (store/rollup.h): buckets of each
 * tier, exact min/avg/max, a bucket written when a later one opens, missing
 * values left out, and the rows that reach the store.
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

/* Rows of the rollups table as "tier entity id metric ts n min avg max" lines. */
static void read_rows(const char *path, char *out, size_t size)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	size_t len = 0;

	out[0] = '\0';
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT tier_ms, entity, entity_id, metric, ts_ms, n,"
					    " min, avg, max FROM rollups ORDER BY id",
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
	assert_string_equal(rows, "60000 job 42 cpu_cores 3540000 2 1 2 3\n"
				  "3600000 job 42 cpu_cores 0 2 1 2 3\n"
				  "60000 job 42 cpu_cores 3600000 1 10 10 10\n"
				  "3600000 job 42 cpu_cores 3600000 2 10 15 20\n"
				  "60000 job 42 cpu_cores 3660000 1 20 20 20\n");
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
	assert_int_equal(rollup_tier_ms[0], 60000);
	assert_int_equal(rollup_tier_ms[1], 3600000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bucket_min_avg_max), cmocka_unit_test(test_flush_at_boundary),
	    cmocka_unit_test(test_nan_left_out),       cmocka_unit_test(test_rows_in_store),
	    cmocka_unit_test(test_metric_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
