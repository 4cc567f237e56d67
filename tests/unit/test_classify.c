/*
 * test_classify.c - every bottleneck and job type from features built for
 * it, and not from the others' (a table of cases and their one answer).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/classify.h"

static struct job_features base(void)
{
	struct job_features f = {
	    .duration_s = 3600, .samples = 3600, .cores_avg = 1.0, .cores_allowed = 8,
	    .cores_saturated_frac = 0, .busy_frac = 1.0, .gpu_util_avg = NAN, .gpu_util_p95 = NAN,
	    .throttled_frac = NAN, .pcie_frac = NAN, .iowait_pct = 1, .psi_io_some_pct = NAN, .read_bps_avg = 0,
	    .write_bps_avg = 0, .mem_peak_frac = 0.3, .swap_bytes_peak = 0, .psi_mem_some_pct = 0,
	    .period_confidence = NAN, .net_bps_avg = 0,
	};
	return f;
}

static void test_bottlenecks(void **state)
{
	struct {
		const char *what;
		struct job_features f;
		enum bottleneck want;
	} c[12];
	size_t n = 0;
	char reason[256];

	(void)state;
	c[n].what = "short";
	c[n].f = base();
	c[n].f.duration_s = 9;
	c[n++].want = BOTTLENECK_UNKNOWN;
	c[n].what = "idle";
	c[n].f = base();
	c[n].f.cores_avg = 0.01;
	c[n++].want = BOTTLENECK_IDLE;
	c[n].what = "data loader";
	c[n].f = base();
	c[n].f.gpu_util_avg = 15;
	c[n].f.cores_avg = 7.8;
	c[n++].want = BOTTLENECK_CPU_FEEDING;
	c[n].what = "cpu";
	c[n].f = base();
	c[n].f.cores_avg = 7.9;
	c[n++].want = BOTTLENECK_CPU;
	c[n].what = "io";
	c[n].f = base();
	c[n].f.iowait_pct = 45;
	c[n].f.read_bps_avg = 300e6;
	c[n++].want = BOTTLENECK_IO;
	c[n].what = "memory at limit";
	c[n].f = base();
	c[n].f.mem_peak_frac = 0.99;
	c[n++].want = BOTTLENECK_MEMORY;
	c[n].what = "swapping";
	c[n].f = base();
	c[n].f.swap_bytes_peak = 1e9;
	c[n].f.psi_mem_some_pct = 30;
	c[n++].want = BOTTLENECK_MEMORY;
	c[n].what = "pcie";
	c[n].f = base();
	c[n].f.gpu_util_avg = 50;
	c[n].f.pcie_frac = 0.85;
	c[n++].want = BOTTLENECK_PCIE;
	c[n].what = "throttled";
	c[n].f = base();
	c[n].f.gpu_util_avg = 95;
	c[n].f.throttled_frac = 0.6;
	c[n++].want = BOTTLENECK_GPU_THROTTLED;
	c[n].what = "gpu bound";
	c[n].f = base();
	c[n].f.gpu_util_avg = 93;
	c[n].f.throttled_frac = 0;
	c[n].f.pcie_frac = 0.1;
	c[n++].want = BOTTLENECK_GPU;
	for (size_t i = 0; i < n; i++) {
		enum bottleneck got = classify_bottleneck(&c[i].f, reason, sizeof(reason));

		if (got != c[i].want)
			fail_msg("%s: got %s (%s), want %s", c[i].what, bottleneck_name(got), reason,
				 bottleneck_name(c[i].want));
		assert_true(reason[0] != '\0');
	}
}

static void test_job_types(void **state)
{
	struct job_features f;
	char reason[256];

	(void)state;
	f = base();
	f.gpu_util_avg = 85;
	f.gpu_util_p95 = 99;
	f.period_confidence = 0.8;
	assert_int_equal(classify_job_type(&f, reason, sizeof(reason)), JOB_TYPE_TRAINING);
	f = base();
	f.gpu_util_avg = 12;
	f.gpu_util_p95 = 70;
	f.net_bps_avg = 5e6;
	f.busy_frac = 0.6;
	assert_int_equal(classify_job_type(&f, reason, sizeof(reason)), JOB_TYPE_INFERENCE);
	f = base();
	f.busy_frac = 0.05;
	f.cores_avg = 0.1;
	assert_int_equal(classify_job_type(&f, reason, sizeof(reason)), JOB_TYPE_INTERACTIVE);
	f = base();
	f.cores_avg = 0.0;
	assert_int_equal(classify_job_type(&f, reason, sizeof(reason)), JOB_TYPE_IDLE);
	f = base();
	f.cores_avg = 6;
	assert_int_equal(classify_job_type(&f, reason, sizeof(reason)), JOB_TYPE_BATCH);
	f = base();
	f.duration_s = 5;
	assert_int_equal(classify_job_type(&f, reason, sizeof(reason)), JOB_TYPE_UNKNOWN);
	assert_non_null(strstr(reason, "too short"));
	/* a periodic CPU job without GPUs is training-like too */
	f = base();
	f.cores_avg = 4;
	f.period_confidence = 0.9;
	assert_int_equal(classify_job_type(&f, reason, sizeof(reason)), JOB_TYPE_TRAINING);
	assert_string_equal(job_type_name(JOB_TYPE_INFERENCE), "inference");
	assert_string_equal(bottleneck_name(BOTTLENECK_CPU_FEEDING), "cpu_feeding_gpu");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bottlenecks),
	    cmocka_unit_test(test_job_types),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
