/*
 * test_gpu_share.c - each job's share of a GPU (attrib/gpu_share.h): the
 * device's energy of an interval, a GPU shared by two jobs (memory, SM and
 * energy split by share, exact), a job alone, and missing per-process data
 * kept missing.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attrib/gpu_share.h"

#define GIB (1024ull * 1024 * 1024)

static struct gpu_proc proc(uint32_t pid, uint32_t valid, uint64_t mem, uint32_t sm)
{
	struct gpu_proc g = {.pid = pid, .valid = valid, .mem_bytes = mem, .sm_util_pct = sm};

	return g;
}

static void test_energy_delta(void **state)
{
	struct gpu_sample prev = {0}, cur = {0};

	(void)state;
	/* no earlier reading: unknown */
	cur.valid = GPU_ENERGY | GPU_POWER;
	cur.energy_mj = 5000;
	cur.power_mw = 250000;
	assert_true(isnan(gpu_share_energy_delta_mj(&cur, NULL, 1000)));
	/* the counter's delta when both readings have it */
	prev.valid = GPU_ENERGY;
	prev.energy_mj = 4200;
	assert_true(gpu_share_energy_delta_mj(&cur, &prev, 1000) == 800.0);
	/* a counter that went back (a driver reload): power x time */
	prev.energy_mj = 9000;
	assert_true(gpu_share_energy_delta_mj(&cur, &prev, 500) == 125000.0);
	/* no counter: power x time, 250 W over 2 s = 500 J */
	prev.valid = 0;
	assert_true(gpu_share_energy_delta_mj(&cur, &prev, 2000) == 500000.0);
	/* neither: unknown, not 0 */
	cur.valid = GPU_UTIL;
	assert_true(isnan(gpu_share_energy_delta_mj(&cur, &prev, 2000)));
}

static void test_two_jobs_by_sm(void **state)
{
	struct job_gpu_use a = {0}, b = {0};
	struct gpu_share_total tot = {0, 0};
	struct gpu_proc pa1 = proc(10, GPU_PROC_MEM | GPU_PROC_UTIL, 4 * GIB, 45);
	struct gpu_proc pa2 = proc(11, GPU_PROC_MEM | GPU_PROC_UTIL, 2 * GIB, 15);
	struct gpu_proc pb = proc(20, GPU_PROC_MEM | GPU_PROC_UTIL, 2 * GIB, 20);
	struct gpu_proc other = proc(30, GPU_PROC_MEM | GPU_PROC_UTIL, 8 * GIB, 20);

	(void)state;
	gpu_share_begin(&a);
	gpu_share_begin(&b);
	gpu_share_add(&tot, &a, &pa1);
	gpu_share_add(&tot, &b, &pb);
	gpu_share_add(&tot, NULL, &other); /* nobody's job: counts in the total */
	gpu_share_add(&tot, &a, &pa2);
	assert_true(tot.sm_util_pct == 100.0);
	assert_true(tot.mem_bytes == (double)(16 * GIB));
	assert_true(a.now && a.used && a.has_mem && a.has_util);
	assert_int_equal(a.mem_bytes, 6 * GIB);
	assert_int_equal(a.sm_util_pct, 60);
	assert_int_equal(b.mem_bytes, 2 * GIB);
	assert_int_equal(b.sm_util_pct, 20);
	/* 1000 J over the interval: 60% and 20% of it */
	assert_true(gpu_share_energy_mj(&a, &tot, 1000000.0) == 600000.0);
	assert_true(gpu_share_energy_mj(&b, &tot, 1000000.0) == 200000.0);
	/* unknown device energy: unknown shares */
	assert_true(isnan(gpu_share_energy_mj(&a, &tot, NAN)));
}

static void test_two_jobs_by_memory(void **state)
{
	struct job_gpu_use a = {0}, b = {0};
	struct gpu_share_total tot = {0, 0};
	struct gpu_proc pa = proc(10, GPU_PROC_MEM, 3 * GIB, 0);
	struct gpu_proc pb = proc(20, GPU_PROC_MEM, 1 * GIB, 0);

	(void)state;
	gpu_share_add(&tot, &a, &pa);
	gpu_share_add(&tot, &b, &pb);
	/* no per-process utilization from the driver: split by memory */
	assert_false(a.has_util);
	assert_true(tot.sm_util_pct == 0);
	assert_true(gpu_share_energy_mj(&a, &tot, 2000.0) == 1500.0);
	assert_true(gpu_share_energy_mj(&b, &tot, 2000.0) == 500.0);
}

static void test_job_alone(void **state)
{
	struct job_gpu_use a = {0};
	struct gpu_share_total tot = {0, 0};
	struct gpu_proc pa = proc(10, GPU_PROC_MEM | GPU_PROC_UTIL, GIB, 37);

	(void)state;
	gpu_share_add(&tot, &a, &pa);
	assert_true(gpu_share_energy_mj(&a, &tot, 1234.0) == 1234.0);
	/* a job not on the device at this tick gets nothing */
	gpu_share_begin(&a);
	assert_false(a.now);
	assert_true(a.used);
	assert_true(isnan(gpu_share_energy_mj(&a, &tot, 1234.0)));
}

static void test_missing_per_process_data(void **state)
{
	struct job_gpu_use a = {0};
	struct gpu_share_total tot = {0, 0};
	struct gpu_proc pa = proc(10, 0, 0, 0);

	(void)state;
	gpu_share_add(&tot, &a, &pa);
	/* on the device, but its memory and SM are unknown, not 0 */
	assert_true(a.now && a.used);
	assert_false(a.has_mem);
	assert_false(a.has_util);
	/* and with no basis for a split, no share: missing, not 0 */
	assert_true(isnan(gpu_share_energy_mj(&a, &tot, 5000.0)));
}

/* Two ticks of a table of two jobs on two devices, through gpu_share_jobs. */
static void test_jobs_table(void **state)
{
	struct jobs t;
	struct ptree_proc p1, p2, stranger;
	struct gpu_set_proc gp[4];
	struct gpu_set_procs procs = {.proc = gp, .n = 0, .max = 4};
	bool ok[2] = {true, true};
	double mj[2] = {900.0, NAN};

	(void)state;
	memset(&t, 0, sizeof(t));
	t.job = calloc(2, sizeof(*t.job));
	assert_non_null(t.job);
	t.njobs = 2;
	memset(&p1, 0, sizeof(p1));
	memset(&p2, 0, sizeof(p2));
	memset(&stranger, 0, sizeof(stranger));
	p1.tag = 1; /* job 0 */
	p2.tag = 2; /* job 1 */
	gp[0] = (struct gpu_set_proc){0, &p1, proc(1, GPU_PROC_MEM | GPU_PROC_UTIL, 5 * GIB, 20)};
	gp[1] = (struct gpu_set_proc){0, &p2, proc(2, GPU_PROC_MEM | GPU_PROC_UTIL, 1 * GIB, 10)};
	gp[2] = (struct gpu_set_proc){0, &stranger, proc(3, GPU_PROC_UTIL, 0, 30)};
	gp[3] = (struct gpu_set_proc){1, &p2, proc(2, GPU_PROC_MEM, 7 * GIB, 0)};
	procs.n = 4;
	gpu_share_jobs(&t, 2, ok, &procs, mj);
	assert_int_equal(t.job[0].gpu[0].mem_bytes, 5 * GIB);
	assert_true(t.job[0].gpu[0].energy_mj == 300.0); /* 20 of 60 */
	assert_true(t.job[1].gpu[0].energy_mj == 150.0); /* 10 of 60 */
	assert_true(t.job[1].gpu[1].now && t.job[1].gpu[1].has_mem);
	assert_false(t.job[1].gpu[1].has_util);
	assert_true(t.job[1].gpu[1].energy_mj == 0.0); /* device 1's energy unknown */
	assert_false(t.job[0].gpu[1].used);
	/* the next tick: job 1 left device 0; energy adds up */
	procs.n = 1;
	mj[0] = 600.0;
	gpu_share_jobs(&t, 2, ok, &procs, mj);
	assert_true(t.job[0].gpu[0].energy_mj == 900.0); /* 300 + all of 600 */
	assert_true(t.job[1].gpu[0].used);
	assert_false(t.job[1].gpu[0].now);
	assert_false(t.job[1].gpu[0].has_mem);
	assert_true(t.job[1].gpu[0].energy_mj == 150.0);
	free(t.job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_energy_delta),
	    cmocka_unit_test(test_two_jobs_by_sm),
	    cmocka_unit_test(test_two_jobs_by_memory),
	    cmocka_unit_test(test_job_alone),
	    cmocka_unit_test(test_missing_per_process_data),
	    cmocka_unit_test(test_jobs_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
