/*
 * test_summary_gpm.c - what the SMs did, in a job's summary: GPM activity
 * averaged over time with irregular intervals (the first reading says
 * nothing of the time before it), throttle seconds from violation
 * counters that go back, the job's part on a GPU shared with another
 * job by the energy's rule, the JSON names, and the verdicts drawn from
 * them.  Every expected value is computed here from the test's inputs.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/jobreport.h"
#include "analysis/summary.h"
#include "report/report.h"
#include "sample/figures.h"

#define T0 1700000000000LL

static struct job_record make_job(int64_t interval_ms)
{
	struct job_record j;

	memset(&j, 0, sizeof(j));
	j.id = 7;
	snprintf(j.scheduler, sizeof(j.scheduler), "run");
	snprintf(j.command, sizeof(j.command), "train");
	j.start_ms = T0;
	j.interval_ms = interval_ms;
	j.cores_allowed = 2;
	return j;
}

static struct device_record make_dev(const char *uuid)
{
	struct device_record d;

	memset(&d, 0, sizeof(d));
	d.id = 1;
	snprintf(d.info.uuid, sizeof(d.info.uuid), "%s", uuid);
	snprintf(d.info.name, sizeof(d.info.name), "NVIDIA H100");
	snprintf(d.vendor, sizeof(d.vendor), "NVIDIA");
	return d;
}

/* percent as the driver gives it (x 100) */
static uint32_t pct100(double pct)
{
	return (uint32_t)llround(pct * 100);
}

/*
 * Readings at irregular times; SM active changes every reading, tensor is
 * given only by some.  The first reading's figures (valid, 99 %) say
 * nothing: no interval ends at it.  Job alone on the device: its part is
 * the device's.
 */
static void test_activity_time_weighted(void **state)
{
	static const int64_t t_ms[] = {0, 100, 400, 450, 1450, 1700};
	static const double sm[] = {99, 60, 20, 80, 10, 45.5};
	static const bool has_tensor[] = {true, true, false, true, true, false};
	static const double tensor[] = {99, 30, 0, 50, 5, 0};
	struct job_record job = make_job(100);
	struct device_record dev = make_dev("GPU-a");
	struct proc_info p = {.pid = 42, .start_ms = T0};
	struct gpu_proc gp = {.pid = 42, .valid = GPU_PROC_UTIL, .sm_util_pct = 50};
	double sm_sum = 0, tensor_sum = 0;
	int64_t ms = 0, tensor_ms = 0;
	struct summary s;

	(void)state;
	summary_init(&s, &job);
	for (size_t i = 0; i < sizeof(t_ms) / sizeof(t_ms[0]); i++) {
		struct gpu_sample g = {.valid = GPU_UTIL, .util_pct = 90};

		g.prof_valid = GPU_PROF_SM_ACTIVE | (has_tensor[i] ? GPU_PROF_TENSOR_ACTIVE : 0);
		g.sm_active_pct100 = pct100(sm[i]);
		g.tensor_active_pct100 = pct100(tensor[i]);
		summary_add_gpu(&s, &dev, T0 + t_ms[i], &g);
		summary_add_gpu_proc(&s, &dev, &p, T0 + t_ms[i], &gp);
		if (i == 0)
			continue;
		sm_sum += sm[i] * (double)(t_ms[i] - t_ms[i - 1]);
		ms += t_ms[i] - t_ms[i - 1];
		if (has_tensor[i]) {
			tensor_sum += tensor[i] * (double)(t_ms[i] - t_ms[i - 1]);
			tensor_ms += t_ms[i] - t_ms[i - 1];
		}
	}
	job.end_ms = T0 + 1700;
	summary_finish(&s, &job);
	assert_float_equal(summary_gpu_activity_pct(&s.gpus[0], GPU_ACTIVITY_SM, true),
			   sm_sum / (double)ms, 1e-9);
	assert_float_equal(summary_gpu_activity_pct(&s.gpus[0], GPU_ACTIVITY_SM, false),
			   sm_sum / (double)ms, 1e-9);
	assert_float_equal(summary_gpu_activity_pct(&s.gpus[0], GPU_ACTIVITY_TENSOR, true),
			   tensor_sum / (double)tensor_ms, 1e-9);
	/* never given: unknown, not 0 */
	assert_true(isnan(summary_gpu_activity_pct(&s.gpus[0], GPU_ACTIVITY_DRAM, true)));
	assert_true(isnan(summary_gpu_throttle_s(&s.gpus[0], GPU_VIOLATION_POWER)));
	/* the job's GPUs together: the one */
	assert_float_equal(summary_gpus_activity_pct(&s, GPU_ACTIVITY_SM, true),
			   sm_sum / (double)ms, 1e-9);
	summary_release(&s);
}

/*
 * Violation counters: power's differences, a counter that went back
 * (a driver reload) counting from 0; the first reading gives nothing
 * before it; thermal given from the third reading on counts from there.
 */
static void test_throttle_counter_reset(void **state)
{
	static const uint64_t power_ns[] = {7000000000ull, 7500000000ull, 8200000000ull,
					    300000000ull, 800000000ull};
	static const uint64_t thermal_ns[] = {0, 0, 1000000000ull, 1250000000ull, 1250000000ull};
	struct job_record job = make_job(1000);
	struct device_record dev = make_dev("GPU-a");
	struct proc_info p = {.pid = 42, .start_ms = T0};
	struct gpu_proc gp = {.pid = 42};
	double power_s = 0, thermal_s = 0;
	struct summary s;
	struct gpu_figures f;

	(void)state;
	summary_init(&s, &job);
	for (size_t i = 0; i < 5; i++) {
		struct gpu_sample g = {0};

		g.prof_valid = GPU_PROF_VIOL_POWER | (i >= 2 ? GPU_PROF_VIOL_THERMAL : 0);
		g.viol_power_ns = power_ns[i];
		g.viol_thermal_ns = thermal_ns[i];
		summary_add_gpu(&s, &dev, T0 + (int64_t)i * 1000, &g);
		summary_add_gpu_proc(&s, &dev, &p, T0 + (int64_t)i * 1000, &gp);
		if (i == 0)
			continue;
		/* by the rule: growth, or the reading itself after going back */
		power_s +=
		    (power_ns[i] >= power_ns[i - 1] ? power_ns[i] - power_ns[i - 1] : power_ns[i]) /
		    1e9;
		if (i >= 3)
			thermal_s += (double)(thermal_ns[i] - thermal_ns[i - 1]) / 1e9;
	}
	job.end_ms = T0 + 4000;
	summary_finish(&s, &job);
	assert_float_equal(summary_gpu_throttle_s(&s.gpus[0], GPU_VIOLATION_POWER), power_s, 1e-9);
	assert_float_equal(summary_gpu_throttle_s(&s.gpus[0], GPU_VIOLATION_THERMAL), thermal_s,
			   1e-9);
	assert_true(isnan(summary_gpu_throttle_s(&s.gpus[0], GPU_VIOLATION_SW_THERMAL)));
	assert_float_equal(summary_gpus_throttle_s(&s, GPU_VIOLATION_POWER), power_s, 1e-9);
	summary_release(&s);

	/* figures.c alone: a reset counts from 0, no reading before is unknown */
	{
		struct gpu_sample a = {.prof_valid = GPU_PROF_VIOL_POWER, .viol_power_ns = 5000};
		struct gpu_sample b = {.prof_valid = GPU_PROF_VIOL_POWER, .viol_power_ns = 2000};

		gpu_figures(&b, &a, 1000, &f);
		assert_float_equal(f.throttle_s[GPU_VIOLATION_POWER], 2000 / 1e9, 1e-15);
		gpu_figures(&b, NULL, 1000, &f);
		assert_true(isnan(f.throttle_s[GPU_VIOLATION_POWER]));
		assert_true(isnan(f.activity_pct[GPU_ACTIVITY_SM]));
	}
}

/*
 * A GPU shared by the job (pid 42) and another job's process (pid 7):
 *   0..1 s  SM shares 75/25: the job's part is 75 % of the device's;
 *   1..3 s  no SM figures: by memory, 1 of 4 MiB;
 *   3..4 s  nothing to split by: the device's counts, the job's part is unknown;
 *   4..5 s  only the other process: not the job's time on the device.
 */
static void test_activity_split_two_jobs(void **state)
{
	static const double sm[] = {0, 80, 40, 40, 70, 90};
	static const double share[] = {NAN, 0.75, 0.25, 0.25, NAN, NAN};
	static const bool mine_there[] = {true, true, true, true, true, false};
	static const uint32_t valid[] = {
	    GPU_PROC_UTIL, GPU_PROC_UTIL, GPU_PROC_MEM, GPU_PROC_MEM, 0, GPU_PROC_UTIL};
	struct job_record job = make_job(1000);
	struct device_record dev = make_dev("GPU-s");
	struct proc_info p = {.pid = 42, .start_ms = T0};
	double dev_sum = 0, job_sum = 0;
	int64_t dev_ms = 0, job_ms = 0;
	struct job_summary_record rec;
	struct summary s;

	(void)state;
	summary_init(&s, &job);
	for (size_t i = 0; i < 6; i++) {
		struct gpu_sample g = {.prof_valid = GPU_PROF_SM_ACTIVE | GPU_PROF_DRAM_ACTIVE};
		struct gpu_proc mine = {
		    .pid = 42, .valid = valid[i], .sm_util_pct = 75, .mem_bytes = 1 << 20};
		struct gpu_proc other = {
		    .pid = 7, .valid = valid[i], .sm_util_pct = 25, .mem_bytes = 3 << 20};
		int64_t ts = T0 + (int64_t)i * 1000;

		g.sm_active_pct100 = pct100(sm[i]);
		g.dram_active_pct100 = pct100(sm[i] / 2);
		summary_add_gpu(&s, &dev, ts, &g);
		if (mine_there[i])
			summary_add_gpu_proc(&s, &dev, &p, ts, &mine);
		summary_add_gpu_proc(&s, &dev, NULL, ts, &other);
		if (i == 0 || !mine_there[i])
			continue;
		dev_sum += sm[i] * 1000;
		dev_ms += 1000;
		if (!isnan(share[i])) {
			job_sum += sm[i] * share[i] * 1000;
			job_ms += 1000;
		}
	}
	job.end_ms = T0 + 5000;
	summary_finish(&s, &job);
	assert_float_equal(summary_gpu_activity_pct(&s.gpus[0], GPU_ACTIVITY_SM, false),
			   dev_sum / (double)dev_ms, 1e-9);
	assert_float_equal(summary_gpu_activity_pct(&s.gpus[0], GPU_ACTIVITY_SM, true),
			   job_sum / (double)job_ms, 1e-9);
	assert_float_equal(summary_gpu_activity_pct(&s.gpus[0], GPU_ACTIVITY_DRAM, true),
			   job_sum / 2 / (double)job_ms, 1e-9);
	/* the job's summary row (schema 17) keeps the job's part, not the device's */
	summary_to_record(&s, &rec);
	assert_true(rec.has_gpu_prof);
	assert_float_equal(rec.sm_active_avg_pct, job_sum / (double)job_ms, 1e-9);
	assert_float_equal(rec.dram_active_avg_pct, job_sum / 2 / (double)job_ms, 1e-9);
	assert_true(isnan(rec.tensor_active_avg_pct)); /* its bit never set */
	assert_true(isnan(rec.throttle_power_s));      /* no violation counters */
	summary_release(&s);
}

/* strstr through a call GCC does not see into */
static __attribute__((noinline)) bool contains(const char *hay, const char *needle)
{
	return hay && strstr(hay, needle) != NULL;
}

/* The JSON names, the device's twins, null for what is missing, and a MIG slice named. */
static void test_activity_json(void **state)
{
	struct job_record job = make_job(1000);
	struct device_record parent = make_dev("GPU-p"), dev = make_dev("MIG-p-1");
	struct proc_info p = {.pid = 42, .start_ms = T0};
	struct gpu_proc gp = {.pid = 42};
	struct summary s;
	struct strbuf out;

	(void)state;
	parent.info.mig_enabled = true;
	dev.id = 2;
	dev.info.mig = true;
	dev.info.gpu_instance_id = 1;
	dev.info.compute_instance_id = 0;
	snprintf(dev.info.mig_profile, sizeof(dev.info.mig_profile), "1g.10gb");
	summary_init(&s, &job);
	for (int i = 0; i < 3; i++) {
		struct gpu_sample g = {.prof_valid = GPU_PROF_SM_ACTIVE | GPU_PROF_VIOL_POWER};
		struct gpu_sample pg = {.valid = GPU_POWER, .power_mw = 100000};

		g.sm_active_pct100 = 6150;
		g.viol_power_ns = (uint64_t)i * 500000000ull;
		summary_add_gpu(&s, &parent, T0 + i * 1000, &pg);
		summary_add_gpu(&s, &dev, T0 + i * 1000, &g);
		summary_add_gpu_proc(&s, &dev, &p, T0 + i * 1000, &gp);
	}
	job.end_ms = T0 + 2000;
	summary_finish(&s, &job);
	strbuf_init(&out, 0);
	assert_int_equal(report_json(&s, NULL, NULL, NULL, &out), 0);
	assert_true(contains(out.buf, "\"sm_active_avg_pct\": 61.50"));
	assert_true(contains(out.buf, "\"device_sm_active_avg_pct\": 61.50"));
	assert_true(contains(out.buf, "\"tensor_active_avg_pct\": null"));
	assert_true(contains(out.buf, "\"throttle_power_s\": 1.000"));
	assert_true(contains(out.buf, "\"throttle_thermal_s\": null"));
	assert_true(contains(out.buf, "\"profile\": \"1g.10gb\""));
	assert_true(contains(out.buf, "\"gpu_instance_id\": 1"));
	assert_true(contains(out.buf, "\"parent_uuid\": \"GPU-p\""));
	strbuf_release(&out);
	strbuf_init(&out, 0);
	assert_int_equal(report_text(&s, NULL, NULL, &out), 0);
	assert_true(contains(out.buf, "MIG 1g.10gb, GPU instance 1, compute instance 0, of GPU 0"));
	assert_true(contains(out.buf, "SM active 61.5%"));
	assert_true(contains(out.buf, "throttled by power 1.000 s"));
	strbuf_release(&out);
	summary_release(&s);
}

/* A job's report over 60 one-second ticks with the given GPM figures on its one GPU. */
struct gpm_case {
	int util;
	double sm, occupancy, tensor, dram, fp16, fp32;
	double power_frac; /* of each second held back by power */
};

static void run_case(const struct gpm_case *c, struct job_report *r)
{
	struct job_record job = make_job(1000);
	struct device_record dev = make_dev("GPU-v");
	struct proc_info p = {.pid = 42, .start_ms = T0};
	struct gpu_proc gp = {.pid = 42, .valid = GPU_PROC_MEM, .mem_bytes = 1 << 30};
	struct job_sample js = {.nprocs = 1, .rss_bytes = 1 << 30};

	job_report_init(r, &job);
	for (int t = 0; t < 60; t++) {
		int64_t ts = T0 + (int64_t)t * 1000;
		struct gpu_sample g = {.valid = GPU_UTIL, .util_pct = (uint32_t)c->util};

		g.prof_valid = GPU_PROF_SM_ACTIVE | GPU_PROF_SM_OCCUPANCY | GPU_PROF_TENSOR_ACTIVE |
			       GPU_PROF_DRAM_ACTIVE | GPU_PROF_FP16_ACTIVE | GPU_PROF_FP32_ACTIVE |
			       GPU_PROF_VIOL_POWER;
		g.sm_active_pct100 = pct100(c->sm);
		g.sm_occupancy_pct100 = pct100(c->occupancy);
		g.tensor_active_pct100 = pct100(c->tensor);
		g.dram_active_pct100 = pct100(c->dram);
		g.fp16_active_pct100 = pct100(c->fp16);
		g.fp32_active_pct100 = pct100(c->fp32);
		g.viol_power_ns = (uint64_t)llround(c->power_frac * 1e9 * t);
		js.user_ms += 500;
		summary_add_job(&r->sum, ts, &js);
		jobseries_add_job(&r->js, ts, &js);
		summary_add_gpu(&r->sum, &dev, ts, &g);
		jobseries_add_gpu(&r->js, &dev, ts, &g);
		summary_add_gpu_proc(&r->sum, &dev, &p, ts, &gp);
	}
	job.end_ms = T0 + 59000;
	job.samples = 60;
	job_report_finish(r, &job);
}

static const struct verdict *find(const struct analysis *a, const char *kind)
{
	for (size_t i = 0; i < a->nverdicts; i++)
		if (strcmp(a->verdicts[i].kind, kind) == 0)
			return &a->verdicts[i];
	return NULL;
}

static double evidence_of(const struct verdict *v, const char *name)
{
	for (size_t i = 0; i < v->nevidence; i++)
		if (strcmp(v->evidence[i].name, name) == 0)
			return v->evidence[i].value;
	fail_msg("no evidence %s in %s", name, v->kind);
	return NAN;
}

static void test_verdicts(void **state)
{
	struct job_report *r = calloc(1, sizeof(*r));
	const struct verdict *v;
	char want[128];

	(void)state;
	assert_non_null(r);
	/* busy by utilization, SMs idle: occupancy 12 % */
	run_case(&(struct gpm_case){.util = 95,
				    .sm = 25,
				    .occupancy = 12,
				    .tensor = 0,
				    .dram = 5,
				    .fp16 = 0,
				    .fp32 = 10},
		 r);
	v = find(&r->an, "gpu_sm_idle");
	assert_non_null(v);
	assert_true(contains(v->message, "GPU busy but SMs mostly idle (occupancy 12 %"));
	assert_float_equal(evidence_of(v, "sm_occupancy_avg_pct"), 12, 1e-9);
	assert_float_equal(evidence_of(v, "gpu_util_mean_pct"), 95, 1e-9);
	assert_null(find(&r->an, "gpu_memory_bound"));
	assert_null(find(&r->an, "gpu_power_throttled"));
	job_report_release(r);

	/* DRAM 70 %, the pipes at most 20 %: memory-bandwidth bound */
	run_case(&(struct gpm_case){.util = 99,
				    .sm = 80,
				    .occupancy = 50,
				    .tensor = 0,
				    .dram = 70,
				    .fp16 = 0,
				    .fp32 = 20},
		 r);
	v = find(&r->an, "gpu_memory_bound");
	assert_non_null(v);
	assert_true(contains(v->message, "memory-bandwidth bound"));
	assert_float_equal(evidence_of(v, "dram_active_avg_pct"), 70, 1e-9);
	assert_null(find(&r->an, "gpu_sm_idle"));
	assert_null(find(&r->an, "gpu_tensor_unused"));
	job_report_release(r);

	/* FP16 30 % with the tensor cores at 0; power held it back 0.4 s of each second */
	run_case(&(struct gpm_case){.util = 90,
				    .sm = 70,
				    .occupancy = 45,
				    .tensor = 0,
				    .dram = 20,
				    .fp16 = 30,
				    .fp32 = 5,
				    .power_frac = 0.4},
		 r);
	v = find(&r->an, "gpu_tensor_unused");
	assert_non_null(v);
	assert_true(contains(v->message, "tensor cores unused by a job doing FP16/BF16 work"));
	assert_float_equal(evidence_of(v, "fp16_active_avg_pct"), 30, 1e-9);
	v = find(&r->an, "gpu_power_throttled");
	assert_non_null(v);
	/* 59 intervals of 1 s, 0.4 s each */
	snprintf(want, sizeof(want), "throttled by power for %.1f s", 59 * 0.4);
	assert_true(contains(v->message, want));
	assert_float_equal(evidence_of(v, "throttle_power_s"), 59 * 0.4, 1e-6);
	assert_float_equal(r->an.gpu_throttle_s[GPU_VIOLATION_POWER], 59 * 0.4, 1e-6);
	/* the series: 40 % of each interval throttled, SM active as given; none before the first */
	{
		double pts[JS_POINTS];
		size_t n = jobseries_overview(&r->js, 0, JSG_THROTTLE_POWER_PCT, pts);

		assert_true(n >= 59);
		assert_true(isnan(pts[0]));
		for (size_t i = 1; i < n; i++)
			assert_float_equal(pts[i], 40, 1e-6);
		n = jobseries_overview(&r->js, 0, JSG_SM_ACTIVE_PCT, pts);
		for (size_t i = 0; i < n; i++)
			assert_float_equal(pts[i], 70, 1e-9);
	}
	job_report_release(r);

	/* tensor cores busy: none of them */
	run_case(&(struct gpm_case){.util = 90,
				    .sm = 70,
				    .occupancy = 45,
				    .tensor = 40,
				    .dram = 20,
				    .fp16 = 30,
				    .fp32 = 5},
		 r);
	assert_null(find(&r->an, "gpu_tensor_unused"));
	assert_null(find(&r->an, "gpu_sm_idle"));
	assert_null(find(&r->an, "gpu_memory_bound"));
	assert_null(find(&r->an, "gpu_power_throttled"));
	assert_float_equal(r->an.gpu_activity_job_pct[GPU_ACTIVITY_TENSOR], 40, 1e-9);
	job_report_release(r);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_activity_time_weighted),
	    cmocka_unit_test(test_throttle_counter_reset),
	    cmocka_unit_test(test_activity_split_two_jobs),
	    cmocka_unit_test(test_activity_json),
	    cmocka_unit_test(test_verdicts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
