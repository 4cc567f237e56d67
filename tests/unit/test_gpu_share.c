/*
 * test_gpu_share.c - each job's share of a GPU (attrib/gpu_share.h): the
 * device's energy of an interval, the split rule on fixtures (SM share of
 * the window, memory, alone, idle, unattributed), jobs sharing devices
 * tick by tick with the device's account adding up, a job alone over its
 * whole life (the first and last intervals included), and missing
 * per-process data kept missing.
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

/* The rule on fixtures: SM share, else memory, else alone; idle and unattributed apart. */
static void test_fraction_rule(void **state)
{
	struct gpu_share_total none = {0, 0, 0};
	struct gpu_share_total a = {60, 3 * GIB, 2}, b = {20, 1 * GIB, 1};
	struct gpu_share_total all = {80, 4 * GIB, 3};

	(void)state;
	/* by SM: 60 of 80 and 20 of 80; a part not there gets 0 */
	assert_true(gpu_share_fraction(&a, &all) == 0.75);
	assert_true(gpu_share_fraction(&b, &all) == 0.25);
	assert_true(gpu_share_fraction(&none, &all) == 0);
	assert_true(gpu_share_splits(&all, false));
	/* all at 0% SM (a window of idle samples): by memory */
	a.sm_util_pct = b.sm_util_pct = all.sm_util_pct = 0;
	assert_true(gpu_share_fraction(&a, &all) == 0.75);
	assert_true(gpu_share_fraction(&b, &all) == 0.25);
	/* neither: a part alone gets all, parts together nobody (unattributed) */
	a.mem_bytes = b.mem_bytes = all.mem_bytes = 0;
	assert_true(isnan(gpu_share_fraction(&a, &all)));
	assert_true(isnan(gpu_share_fraction(&b, &all)));
	assert_false(gpu_share_splits(&all, false));
	all.nprocs = 2;
	assert_true(gpu_share_fraction(&a, &all) == 1);
	assert_true(gpu_share_fraction(&none, &all) == 0);
	assert_true(gpu_share_splits(&all, true));
	/* nobody there: idle */
	assert_true(isnan(gpu_share_fraction(&none, &none)));
	assert_false(gpu_share_splits(&none, true));
}

/*
 * The window rule's arithmetic: a job there for the whole window at 80%
 * and one that started half way through at 80% (NVML's window average
 * reads 40%) share the interval's energy 2:1.
 */
static void test_window_shares(void **state)
{
	struct job_gpu_use a = {0}, b = {0};
	struct gpu_share_total tot = {0, 0, 0}, pa = {0, 0, 0}, pb = {0, 0, 0};
	struct gpu_proc whole = proc(10, GPU_PROC_MEM | GPU_PROC_UTIL, 4 * GIB, 80);
	struct gpu_proc half = proc(20, GPU_PROC_MEM | GPU_PROC_UTIL, 4 * GIB, 40);

	(void)state;
	gpu_share_add(&tot, &a, &whole);
	gpu_share_add(&tot, &b, &half);
	gpu_share_total_add(&pa, &whole);
	gpu_share_total_add(&pb, &half);
	assert_int_equal(tot.nprocs, 2);
	assert_true(tot.sm_util_pct == 120.0);
	assert_true(a.now && a.has_util && a.sm_util_pct == 80);
	assert_true(b.now && b.has_util && b.sm_util_pct == 40);
	assert_float_equal(gpu_share_fraction(&pa, &tot) * 900.0, 600.0, 1e-9);
	assert_float_equal(gpu_share_fraction(&pb, &tot) * 900.0, 300.0, 1e-9);
}

/* A job not on the device at this tick: not now, still used, no memory. */
static void test_begin(void **state)
{
	struct job_gpu_use a = {0};
	struct gpu_share_total tot = {0, 0, 0};
	struct gpu_proc pa = proc(10, GPU_PROC_MEM | GPU_PROC_UTIL, GIB, 37);

	(void)state;
	gpu_share_add(&tot, &a, &pa);
	assert_true(a.now && a.used && a.has_mem);
	gpu_share_begin(&a);
	assert_false(a.now);
	assert_true(a.used);
	assert_false(a.has_mem);
	assert_false(a.has_util);
}

static void test_missing_per_process_data(void **state)
{
	struct job_gpu_use a = {0};
	struct gpu_share_total tot = {0, 0, 0};
	struct gpu_proc pa = proc(10, 0, 0, 0);

	(void)state;
	gpu_share_add(&tot, &a, &pa);
	/* on the device, but its memory and SM are unknown, not 0 */
	assert_true(a.now && a.used);
	assert_false(a.has_mem);
	assert_false(a.has_util);
	assert_int_equal(tot.nprocs, 1);
}

/* A table of jobs for gpu_share_jobs: n jobs, processes tagged 1..n. */
struct table {
	struct jobs t;
	struct ptree_proc p[3];
	struct gpu_set_proc gp[8];
	struct gpu_set_procs procs;
};

static void table_init(struct table *x, size_t njobs)
{
	memset(x, 0, sizeof(*x));
	x->t.job = calloc(njobs, sizeof(*x->t.job));
	assert_non_null(x->t.job);
	x->t.njobs = njobs;
	for (int i = 0; i < 3; i++)
		x->p[i].tag = i + 1;
	x->procs.proc = x->gp;
	x->procs.max = 8;
}

static void check_account(const struct gpu_share_device *d)
{
	assert_float_equal(d->energy_mj,
			   d->jobs_mj + d->others_mj + d->unattributed_mj + d->idle_mj, 1e-6);
}

/* Two ticks of a table of two jobs on two devices, through gpu_share_jobs_account. */
static void test_jobs_table(void **state)
{
	struct table x;
	struct ptree_proc stranger;
	struct gpu_share_device acct[2];
	bool ok[2] = {true, true};
	double mj[2] = {900.0, NAN};

	(void)state;
	table_init(&x, 2);
	memset(&stranger, 0, sizeof(stranger)); /* in the tree, of no job */
	memset(acct, 0, sizeof(acct));
	x.gp[0] =
	    (struct gpu_set_proc){0, &x.p[0], proc(1, GPU_PROC_MEM | GPU_PROC_UTIL, 5 * GIB, 20)};
	x.gp[1] =
	    (struct gpu_set_proc){0, &x.p[1], proc(2, GPU_PROC_MEM | GPU_PROC_UTIL, 1 * GIB, 10)};
	x.gp[2] = (struct gpu_set_proc){0, &stranger, proc(3, GPU_PROC_UTIL, 0, 30)};
	x.gp[3] = (struct gpu_set_proc){1, &x.p[1], proc(2, GPU_PROC_MEM, 7 * GIB, 0)};
	x.procs.n = 4;
	gpu_share_jobs_account(&x.t, 2, ok, &x.procs, mj, acct);
	assert_int_equal(x.t.job[0].gpu[0].mem_bytes, 5 * GIB);
	assert_true(x.t.job[0].gpu[0].energy_mj == 300.0); /* 20 of 60 */
	assert_true(x.t.job[1].gpu[0].energy_mj == 150.0); /* 10 of 60 */
	assert_true(acct[0].others_mj == 450.0);	   /* 30 of 60 */
	assert_true(x.t.job[1].gpu[1].now && x.t.job[1].gpu[1].has_mem);
	assert_false(x.t.job[1].gpu[1].has_util);
	assert_true(x.t.job[1].gpu[1].energy_mj == 0.0); /* device 1's energy unknown */
	assert_true(acct[1].energy_mj == 0.0);
	assert_false(x.t.job[0].gpu[1].used);
	/* the next tick: job 1 left device 0; energy adds up */
	x.procs.n = 1;
	mj[0] = 600.0;
	gpu_share_jobs_account(&x.t, 2, ok, &x.procs, mj, acct);
	assert_true(x.t.job[0].gpu[0].energy_mj == 900.0); /* 300 + all of 600 */
	assert_true(x.t.job[1].gpu[0].used);
	assert_false(x.t.job[1].gpu[0].now);
	assert_false(x.t.job[1].gpu[0].has_mem);
	assert_true(x.t.job[1].gpu[0].energy_mj == 150.0);
	/* and a tick with nobody there: idle, nobody's */
	x.procs.n = 0;
	gpu_share_jobs_account(&x.t, 2, ok, &x.procs, mj, acct);
	assert_true(x.t.job[0].gpu[0].energy_mj == 900.0);
	assert_true(acct[0].energy_mj == 2100.0);
	assert_true(acct[0].jobs_mj == 1050.0);
	assert_true(acct[0].idle_mj == 600.0);
	check_account(&acct[0]);
	/* without an account, the same shares */
	x.procs.n = 1;
	gpu_share_jobs(&x.t, 2, ok, &x.procs, mj);
	assert_true(x.t.job[0].gpu[0].energy_mj == 1500.0);
	free(x.t.job);
}

/*
 * What NVML gives on the window rule for the reported case: a job alone
 * on a 350 W GPU for 2 s sampled every 200 ms, whose process appeared 50
 * ms into a window and left 150 ms into another.  Each interval's 70 J
 * goes to it, the first and last included (by the window's samples: the
 * process of the last is `gone`, in no list, without memory): 11
 * intervals touched, 11 x 70 J where the device drew 350 W, and the
 * intervals with nobody there are idle.
 */
static void test_job_alone_whole_life(void **state)
{
	struct table x;
	struct gpu_share_device acct;
	bool ok[1] = {true};
	double mj[1];

	(void)state;
	table_init(&x, 1);
	memset(&acct, 0, sizeof(acct));
	for (int tick = 0; tick < 13; tick++) {
		x.procs.n = 0;
		mj[0] = 70000.0; /* 350 W x 200 ms */
		if (tick == 0 || tick == 12) {
			mj[0] = 10000.0; /* idle: 50 W */
		} else if (tick == 1) {
			/* 150 ms of 200 at 90%: 68% over the window, in the lists */
			x.gp[0] = (struct gpu_set_proc){
			    0, &x.p[0], proc(77, GPU_PROC_MEM | GPU_PROC_UTIL, GIB, 68)};
			x.procs.n = 1;
		} else if (tick == 11) {
			/* it left 150 ms into the window: its samples only */
			x.gp[0] = (struct gpu_set_proc){0, &x.p[0], proc(77, GPU_PROC_UTIL, 0, 68)};
			x.gp[0].g.gone = true;
			x.procs.n = 1;
		} else {
			x.gp[0] = (struct gpu_set_proc){
			    0, &x.p[0], proc(77, GPU_PROC_MEM | GPU_PROC_UTIL, GIB, 90)};
			x.procs.n = 1;
		}
		gpu_share_jobs_account(&x.t, 1, ok, &x.procs, mj, &acct);
	}
	assert_float_equal(x.t.job[0].gpu[0].energy_mj, 11 * 70000.0, 1e-6);
	assert_float_equal(acct.jobs_mj, 11 * 70000.0, 1e-6);
	assert_float_equal(acct.idle_mj, 20000.0, 1e-6);
	assert_true(acct.others_mj == 0 && acct.unattributed_mj == 0);
	check_account(&acct);
	free(x.t.job);
}

/* Two jobs and nothing to split by: unattributed, counted, never a job's. */
static void test_unattributed(void **state)
{
	struct table x;
	struct gpu_share_device acct;
	bool ok[1] = {true};
	double mj[1] = {500.0};

	(void)state;
	table_init(&x, 2);
	memset(&acct, 0, sizeof(acct));
	x.gp[0] = (struct gpu_set_proc){0, &x.p[0], proc(1, 0, 0, 0)};
	x.gp[1] = (struct gpu_set_proc){0, &x.p[1], proc(2, 0, 0, 0)};
	x.procs.n = 2;
	gpu_share_jobs_account(&x.t, 1, ok, &x.procs, mj, &acct);
	assert_true(x.t.job[0].gpu[0].now && x.t.job[1].gpu[0].now);
	assert_true(x.t.job[0].gpu[0].energy_mj == 0 && x.t.job[1].gpu[0].energy_mj == 0);
	assert_true(acct.unattributed_mj == 500.0);
	/* processes of no job (NULL: not in the process table) alone: theirs */
	x.gp[0].proc = x.gp[1].proc = NULL;
	gpu_share_jobs_account(&x.t, 1, ok, &x.procs, mj, &acct);
	assert_true(acct.others_mj == 500.0);
	check_account(&acct);
	free(x.t.job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_energy_delta),
	    cmocka_unit_test(test_fraction_rule),
	    cmocka_unit_test(test_window_shares),
	    cmocka_unit_test(test_begin),
	    cmocka_unit_test(test_missing_per_process_data),
	    cmocka_unit_test(test_jobs_table),
	    cmocka_unit_test(test_job_alone_whole_life),
	    cmocka_unit_test(test_unattributed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
