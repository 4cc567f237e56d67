/*
 * test_history.c - reserved against used over a window (analysis/history.h):
 * work without a reservation (a login session that could use the whole
 * node, a daemon) reserves nothing and leaves the efficiencies alone; the
 * efficiencies are the reserved jobs' own use over their reservations,
 * computed here from the jobs' figures; a job that used more than it
 * reserved is counted, and only then does an efficiency pass 100.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/history.h"

#define GIB  (1024.0 * 1024 * 1024)
#define T0   1767225600000LL /* 2026-01-01T00:00:00Z */
#define HOUR 3600000LL

static struct history_job job(int64_t row, const char *user, double cores, double cpu_h,
			      double mem_res_gib, double peak_gib)
{
	struct history_job j;

	memset(&j, 0, sizeof(j));
	j.row = row;
	snprintf(j.key, sizeof(j.key), "slurm:%lld", (long long)row);
	snprintf(j.user, sizeof(j.user), "%s", user);
	snprintf(j.node, sizeof(j.node), "node01");
	j.start_ms = T0;
	j.end_ms = T0 + HOUR; /* one hour each */
	j.cores = cores;
	j.cpu_s = cpu_h * 3600.0;
	j.mem_reserved_bytes = isnan(mem_res_gib) ? NAN : mem_res_gib * GIB;
	j.mem_peak_bytes = peak_gib * GIB;
	j.gpu_util_pct = NAN;
	for (int k = 0; k < HISTORY_GPU_ACTS; k++)
		j.gpu_act_pct[k] = NAN;
	for (int k = 0; k < HISTORY_GPU_THROTTLES; k++)
		j.gpu_throttle_s[k] = NAN;
	return j;
}

static void test_unreserved_reserves_nothing(void **state)
{
	/* reserved: 4 cores, used 2; 8 GiB, peaked at 2 */
	struct history_job a = job(1, "alice", 4, 2, 8, 2);
	/* a login session: no reservation, 10 core-hours and 60 GiB */
	struct history_job b = job(2, "root", NAN, 10, NAN, 60);
	struct history h;

	(void)state;
	history_init(&h, HISTORY_BY_USER, T0, T0 + 24 * HOUR);
	assert_int_equal(history_add(&h, &a), 0);
	assert_int_equal(history_add(&h, &b), 0);
	history_sort(&h);
	assert_int_equal(h.total.jobs, 2);
	assert_float_equal(h.total.core_h_reserved, 4.0, 1e-9);
	assert_float_equal(h.total.core_h_used, 12.0, 1e-9); /* everyone's use is still shown */
	assert_float_equal(history_cpu_eff_pct(&h.total), 100.0 * 2 / 4, 1e-9);
	assert_float_equal(history_mem_eff_pct(&h.total), 100.0 * 2 / 8, 1e-9);
	assert_float_equal(history_idle_core_h(&h.total), 2.0, 1e-9);
	assert_int_equal(h.total.jobs_over, 0);
	/* the login's own row: nothing reserved, no efficiency (not 0, not 1000 %) */
	for (size_t i = 0; i < h.nrows; i++)
		if (strcmp(h.rows[i].key, "root") == 0) {
			assert_true(isnan(history_cpu_eff_pct(&h.rows[i])));
			assert_true(isnan(history_mem_eff_pct(&h.rows[i])));
			assert_float_equal(h.rows[i].core_h_reserved, 0, 1e-12);
		}
	history_release(&h);
}

static void test_over_reservation_is_said(void **state)
{
	struct history_job a = job(1, "alice", 4, 2, 8, 2);
	/* 1 core and 1 GiB reserved, 1.5 cores and 3 GiB used: over */
	struct history_job c = job(3, "carol", 1, 1.5, 1, 3);
	/* within: 2 cores used exactly, its memory at the limit */
	struct history_job d = job(4, "dave", 2, 2, 2, 2);
	struct history h;

	(void)state;
	history_init(&h, HISTORY_BY_USER, T0, T0 + 24 * HOUR);
	assert_int_equal(history_add(&h, &a), 0);
	assert_int_equal(history_add(&h, &c), 0);
	assert_int_equal(history_add(&h, &d), 0);
	history_sort(&h);
	assert_int_equal(h.total.jobs_over, 1);
	assert_float_equal(history_cpu_eff_pct(&h.total), 100.0 * (2 + 1.5 + 2) / (4 + 1 + 2),
			   1e-9);
	assert_float_equal(history_mem_eff_pct(&h.total), 100.0 * (2 + 3 + 2) / (8 + 1 + 2), 1e-9);
	for (size_t i = 0; i < h.nrows; i++)
		if (strcmp(h.rows[i].key, "carol") == 0) {
			assert_int_equal(h.rows[i].jobs_over, 1);
			assert_float_equal(history_cpu_eff_pct(&h.rows[i]), 150.0, 1e-9);
			assert_float_equal(history_mem_eff_pct(&h.rows[i]), 300.0, 1e-9);
		} else {
			assert_int_equal(h.rows[i].jobs_over, 0);
			assert_true(history_cpu_eff_pct(&h.rows[i]) <= 100.0);
			assert_true(history_mem_eff_pct(&h.rows[i]) <= 100.0);
		}
	history_release(&h);
}

/*
 * What the SMs did: a row's activity is its jobs' weighted by GPU-hours used
 * (as utilization), a job without the figure left out; throttle seconds
 * summed, each job's part inside the window; by job, each job's own.
 */
static void test_gpu_activity_weighted(void **state)
{
	struct history_job a = job(1, "alice", 4, 1, 8, 1), b = job(2, "alice", 4, 1, 8, 1);
	struct history_job c = job(3, "alice", 4, 1, 8, 1);
	struct history h;

	(void)state;
	a.gpus = a.gpus_used = 1;
	a.gpu_util_pct = 90;
	a.gpu_act_pct[0] = 60; /* sm_active_avg_pct */
	a.gpu_throttle_s[0] = 100;
	b.gpus = b.gpus_used = 2;
	b.gpu_util_pct = 90;
	b.gpu_act_pct[0] = 30;
	b.gpu_throttle_s[0] = 50;
	b.end_ms = T0 + 2 * HOUR; /* two hours: 4 GPU-hours */
	c.gpus = c.gpus_used = 4;
	c.gpu_util_pct = 90; /* no GPM: out of the average */
	assert_int_equal(strcmp(history_gpu_act_names[0], "sm_active_avg_pct"), 0);
	assert_int_equal(strcmp(history_gpu_throttle_names[0], "throttle_power_s"), 0);

	history_init(&h, HISTORY_BY_USER, T0, T0 + 24 * HOUR);
	assert_int_equal(history_add(&h, &a), 0);
	assert_int_equal(history_add(&h, &b), 0);
	assert_int_equal(history_add(&h, &c), 0);
	assert_float_equal(history_gpu_act_pct(&h.total, 0), (60.0 * 1 + 30.0 * 4) / 5, 1e-9);
	assert_true(isnan(history_gpu_act_pct(&h.total, 2))); /* nobody's tensor figure */
	assert_float_equal(h.total.gpu_throttle_s[0], 150, 1e-9);
	assert_true(isnan(h.total.gpu_throttle_s[1]));
	history_release(&h);

	/* a window with half of b: half its throttle seconds, its activity unchanged */
	history_init(&h, HISTORY_BY_JOB, T0 + HOUR, T0 + 24 * HOUR);
	assert_int_equal(history_add(&h, &b), 0);
	assert_int_equal(h.nrows, 1);
	assert_float_equal(history_gpu_act_pct(&h.rows[0], 0), 30, 1e-9);
	assert_float_equal(h.rows[0].gpu_throttle_s[0], 25, 1e-9);
	history_release(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unreserved_reserves_nothing),
	    cmocka_unit_test(test_over_reservation_is_said),
	    cmocka_unit_test(test_gpu_activity_weighted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
