/*
 * test_analysis.c - the analysis of a job built tick by tick with known
 * figures: efficiency notes with the value to ask for, GPUs used of those
 * reserved, hogging weighted by how busy the node was, memory forecasts,
 * "too short to judge", the series' bounded overview, and a sampling
 * interval that changes while the job runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jobreport.h"

#define MIB   (1024ULL * 1024)
#define GIB   (1024ull * 1024 * 1024)
#define T0_MS 1767571200000LL

/* A node of 16 cores and 64 GiB, sampled every second. */
struct sim {
	struct job_report r;
	struct job_record job;
	struct host_sample *host;
	struct job_sample js;
	struct device_record dev[4];
	int ngpus;
	double cpu_ms_total; /* the host's busy ms */
	double idle_ms_total;
};

static struct sim *sim_new(double reserved_cpus, uint64_t reserved_mem, int reserved_gpus,
			   int ngpus)
{
	struct sim *m = calloc(1, sizeof(*m));

	m->host = calloc(1, sizeof(*m->host));
	snprintf(m->job.scheduler, sizeof(m->job.scheduler), "slurm");
	snprintf(m->job.job_id, sizeof(m->job.job_id), "42");
	snprintf(m->job.reservation_source, sizeof(m->job.reservation_source), "slurm_env");
	m->job.id = 1;
	m->job.start_ms = T0_MS;
	m->job.interval_ms = 1000;
	m->job.cores_allowed = 16;
	m->job.host_cores = 16;
	m->job.host_mem_bytes = 64 * GIB;
	m->job.reserved_cpus = reserved_cpus;
	m->job.reserved_mem_bytes = reserved_mem;
	m->job.has_reserved_gpus = reserved_gpus >= 0;
	m->job.reserved_gpus = reserved_gpus;
	m->ngpus = ngpus;
	for (int i = 0; i < ngpus; i++) {
		m->dev[i].id = i + 1;
		m->dev[i].info.index = i;
		snprintf(m->dev[i].info.uuid, sizeof(m->dev[i].info.uuid), "GPU-%d", i);
		m->dev[i].info.valid = GPU_INFO_MEM_TOTAL;
		m->dev[i].info.mem_total_bytes = 80 * GIB;
		m->dev[i].info.supported = GPU_UTIL | GPU_MEM_USED | GPU_PROC_MEM;
	}
	job_report_init(&m->r, &m->job);
	return m;
}

/*
 * One tick: the job used `cores` with `rss` bytes; the node was busy
 * `host_busy` cores in all (the job's included); GPU i at util[i] percent,
 * the job's process on it when on[i].
 */
static void sim_tick(struct sim *m, int t, double cores, uint64_t rss, double host_busy,
		     const int *util, const bool *on)
{
	int64_t ts = T0_MS + (int64_t)t * 1000;
	struct host_sample *h = m->host;

	m->cpu_ms_total += host_busy * 1000;
	m->idle_ms_total += (16 - host_busy) * 1000;
	h->valid = HOST_HAS_CPU | HOST_HAS_MEM;
	h->cpu.ncpus = 16;
	h->cpu.total.user_ms = (uint64_t)m->cpu_ms_total;
	h->cpu.total.idle_ms = (uint64_t)m->idle_ms_total;
	h->mem.valid = MEMINFO_TOTAL | MEMINFO_AVAILABLE;
	h->mem.total_bytes = 64 * GIB;
	h->mem.available_bytes = 64 * GIB - rss;
	summary_add_host(&m->r.sum, ts, h);
	jobseries_add_host(&m->r.js, ts, h);

	m->js.nprocs = 1;
	m->js.user_ms += (uint64_t)(cores * 1000);
	m->js.rss_bytes = rss;
	summary_add_job(&m->r.sum, ts, &m->js);
	jobseries_add_job(&m->r.js, ts, &m->js);

	for (int i = 0; i < m->ngpus; i++) {
		struct gpu_sample g = {.valid = GPU_UTIL | GPU_MEM_USED,
				       .util_pct = (uint32_t)util[i],
				       .mem_used_bytes = on[i] ? 10 * GIB : 0};
		struct proc_info p = {.pid = 100, .start_ms = T0_MS};
		struct gpu_proc gp = {.pid = 100, .valid = GPU_PROC_MEM, .mem_bytes = 10 * GIB};

		summary_add_gpu(&m->r.sum, &m->dev[i], ts, &g);
		jobseries_add_gpu(&m->r.js, &m->dev[i], ts, &g);
		if (on[i])
			summary_add_gpu_proc(&m->r.sum, &m->dev[i], &p, ts, &gp);
	}
}

static void sim_finish(struct sim *m, int ticks)
{
	m->job.end_ms = T0_MS + (int64_t)(ticks - 1) * 1000;
	m->job.samples = ticks;
	job_report_finish(&m->r, &m->job);
}

static void sim_free(struct sim *m)
{
	job_report_release(&m->r);
	free(m->host);
	free(m);
}

static const struct verdict *find(const struct analysis *a, const char *kind)
{
	for (size_t i = 0; i < a->nverdicts; i++)
		if (strcmp(a->verdicts[i].kind, kind) == 0)
			return &a->verdicts[i];
	return NULL;
}

/* strstr through a call GCC does not see into (it warns about NULL verdicts otherwise) */
static __attribute__((noinline)) bool contains(const char *hay, const char *needle)
{
	return hay && strstr(hay, needle) != NULL;
}

static double evidence_of(const struct verdict *v, const char *name)
{
	for (size_t i = 0; i < v->nevidence; i++)
		if (strcmp(v->evidence[i].name, name) == 0)
			return v->evidence[i].value;
	fail_msg("no evidence %s in %s", name, v->kind);
	return NAN;
}

/* Asked for 64 GiB and 8 cores, peaked at 3 GiB on 1 core: the notes and the values to ask. */
static void test_over_requested(void **state)
{
	struct sim *m = sim_new(8, 64 * GIB, -1, 0);
	const struct verdict *v;

	(void)state;
	for (int t = 0; t < 120; t++)
		sim_tick(m, t, 1.0, 3 * GIB, 1.0, NULL, NULL);
	sim_finish(m, 120);
	v = find(&m->r.an, "mem_over_requested");
	assert_non_null(v);
	assert_true(contains(v->message, "asked for 64.0 GiB of memory, peaked at 3.00 GiB"));
	/* 3 GiB + 25% = 3.75 GiB: 3840 MiB, a whole number of 256 MiB steps */
	assert_true(contains(v->advice, "--mem=3840M"));
	assert_float_equal(evidence_of(v, "mem_peak_bytes"), 3.0 * GIB, 1);
	v = find(&m->r.an, "cpu_idle");
	assert_non_null(v);
	assert_int_equal(v->severity, VERDICT_WARNING); /* 12.5% of a reservation */
	assert_true(contains(v->advice, "request 1 core"));
	assert_float_equal(m->r.an.cpu_eff_pct, 12.5, 0.5);
	assert_true(m->r.an.cores_from_reservation);
	assert_true(contains(m->r.an.scaling_cpu, "more cores would not help"));
	sim_free(m);
}

/*
 * CPU advice that fits what the job did: one core reserved and hardly used
 * (it slept or waited) is not told to "make it parallel"; a program that
 * kept one of the 16 cores it could use busy, with nothing reserved, is.
 */
static void test_cpu_idle_advice(void **state)
{
	for (int k = 0; k < 2; k++) {
		struct sim *m = sim_new(k == 0 ? 1 : 0, 0, -1, 0);
		const struct verdict *v;

		(void)state;
		if (k == 1)
			m->job.reservation_source[0] = '\0';
		for (int t = 0; t < 120; t++)
			sim_tick(m, t, k == 0 ? 0.05 : 1.0, GIB, k == 0 ? 0.05 : 1.0, NULL, NULL);
		sim_finish(m, 120);
		v = find(&m->r.an, "cpu_idle");
		assert_non_null(v);
		if (k == 0) {
			assert_true(contains(v->advice, "off the CPU most of the time"));
			assert_false(contains(v->advice, "parallel"));
		} else {
			assert_true(contains(v->advice, "make it parallel"));
		}
		sim_free(m);
	}
}

/*
 * 8 cores reserved, 1 used, on a 16-core node that other work kept 15.5
 * cores busy: contended, and no advice drawn from its CPU figures.  The same
 * job on a quiet node: "request 1 core".
 */
static void test_contended_gives_no_cpu_advice(void **state)
{
	/* 0: a quiet node; 1: a busy one, wait unknown; 2: busy, its threads waited a
	 * core's worth; 3: busy, its threads hardly waited (serial, its CPU its own) */
	for (int k = 0; k < 4; k++) {
		struct sim *m = sim_new(8, 64 * GIB, -1, 0);
		const struct verdict *v;

		(void)state;
		for (int t = 0; t < 120; t++) {
			if (k >= 2) {
				m->js.valid |= JS_CPU_WAIT;
				m->js.cpu_wait_ms += k == 2 ? 1000 : 10;
			}
			sim_tick(m, t, 1.0, 3 * GIB, k ? 16.0 : 1.0, NULL, NULL);
		}
		sim_finish(m, 120);
		assert_int_equal(m->r.an.cpu_contended, k == 1 || k == 2);
		v = find(&m->r.an, "cpu_idle");
		assert_non_null(v);
		if (k == 1 || k == 2) {
			assert_float_equal(m->r.an.other_cores_avg, 15.0, 0.01);
			assert_float_equal(m->r.an.host_cpu_busy_pct, 100.0, 0.01);
			assert_non_null(find(&m->r.an, "cpu_contended"));
			assert_false(contains(v->advice, "request"));
			assert_true(contains(m->r.an.scaling_cpu, "cannot be judged"));
		} else {
			assert_null(find(&m->r.an, "cpu_contended"));
			assert_true(contains(v->advice, "request 1 core"));
		}
		if (k >= 2)
			assert_float_equal(m->r.an.wait_cores_avg, k == 2 ? 1.0 : 0.01, 1e-9);
		else
			assert_true(isnan(m->r.an.wait_cores_avg));
		sim_free(m);
	}
}

/* The memory advice in the job's own scale: MiB under 1 GiB, 256 MiB steps, whole GiB from 16 GiB.
 */
static void test_mem_advice_scale(void **state)
{
	static const struct {
		uint64_t reserved, peak;
		const char *want;
	} cases[] = {
	    {1 * GIB, 209 * MIB,
	     "--mem=262M (the peak"},		  /* 261.25 MiB up: never "1G", the request */
	    {4 * GIB, 900 * MIB, "--mem=1280M "}, /* 1125 MiB: five 256 MiB steps */
	    {128 * GIB, 40 * GIB, "--mem=50G "},
	    {20 * GIB, 2 * GIB, "--mem=2560M "},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sim *m = sim_new(1, cases[i].reserved, -1, 0);
		const struct verdict *v;

		for (int t = 0; t < 60; t++)
			sim_tick(m, t, 1.0, cases[i].peak, 1.0, NULL, NULL);
		sim_finish(m, 60);
		v = find(&m->r.an, "mem_over_requested");
		assert_non_null(v);
		if (!contains(v->advice, cases[i].want))
			fail_msg("case %zu: '%s', not '%s'", i, v->advice, cases[i].want);
		sim_free(m);
	}
}

/*
 * Ticks about a second apart but jittered (900-1100 ms): two fall into one
 * 1 s bucket and none into the next.  That bucket is no gap in the data:
 * the overview gives it its neighbours' mean.  A lost tick (2 s between
 * the ticks around a bucket) stays a gap.
 */
static void test_jitter_is_no_gap(void **state)
{
	static const int64_t at[] = {0, 900, 1950, 3050, 4000, 6000, 7000};
	static const double mem_gib[] = {1, 2, 3, 5, 6, 7, 8};
	struct jobseries *js = calloc(1, sizeof(*js));
	struct host_sample *h = calloc(1, sizeof(*h));
	double out[JS_POINTS];
	size_t n;

	(void)state;
	assert_non_null(js);
	assert_non_null(h);
	jobseries_init(js, 1000);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		h->valid = HOST_HAS_MEM;
		h->mem.valid = MEMINFO_TOTAL | MEMINFO_AVAILABLE;
		h->mem.total_bytes = 64 * GIB;
		h->mem.available_bytes = 64 * GIB - (uint64_t)(mem_gib[i] * GIB);
		assert_int_equal(jobseries_add_host(js, T0_MS + at[i], h), 0);
	}
	n = jobseries_overview(js, -1, JSM_HOST_MEM_USED_BYTES, out);
	assert_int_equal(n, 8);
	assert_float_equal(out[0], 1.5 * GIB, 1); /* the two ticks of bucket 0 */
	assert_float_equal(out[1], 3 * GIB, 1);
	/* bucket 2: no tick, 1.1 s between the ticks around it: their mean */
	assert_float_equal(out[2], (3 + 5) / 2.0 * GIB, 1);
	assert_float_equal(out[3], 5 * GIB, 1);
	/* bucket 5: the tick at 5 s was lost (2 s between its neighbours) */
	assert_true(isnan(out[5]));
	assert_float_equal(out[6], 7 * GIB, 1);
	jobseries_release(js);
	free(js);
	free(h);
}

/* 4 GPUs reserved, one used at 90%: "used 1 of 4 GPUs", ask for 1. */
static void test_gpus_unused(void **state)
{
	struct sim *m = sim_new(8, 0, 4, 4);
	int util[4] = {90, 0, 0, 0};
	bool on[4] = {true, false, false, false};
	const struct verdict *v;

	(void)state;
	for (int t = 0; t < 60; t++)
		sim_tick(m, t, 2.0, GIB, 2.0, util, on);
	sim_finish(m, 60);
	assert_int_equal(m->r.an.gpus_touched, 1);
	assert_int_equal(m->r.an.gpus_busy, 1);
	assert_float_equal(m->r.an.gpu_util_mean, 90, 0.01);
	v = find(&m->r.an, "gpus_unused");
	assert_non_null(v);
	assert_string_equal(v->message, "used 1 of 4 GPUs");
	assert_string_equal(v->advice, "request 1 GPU, not 4");
	assert_null(find(&m->r.an, "gpu_low_util"));
	assert_true(contains(m->r.an.scaling_gpu, "GPU-bound (90% busy)"));
	assert_int_equal(m->r.an.bottleneck, BOTTLENECK_GPU);
	sim_free(m);
}

/* A reserved GPU never touched: critical. */
static void test_gpu_reserved_never_used(void **state)
{
	struct sim *m = sim_new(4, 0, 1, 1);
	int util[1] = {0};
	bool on[1] = {false};
	const struct verdict *v;

	(void)state;
	for (int t = 0; t < 60; t++)
		sim_tick(m, t, 3.9, GIB, 3.9, util, on);
	sim_finish(m, 60);
	v = find(&m->r.an, "gpu_unused");
	assert_non_null(v);
	assert_int_equal(v->severity, VERDICT_CRITICAL);
	assert_int_equal(m->r.an.verdicts[0].severity, VERDICT_CRITICAL); /* most severe first */
	sim_free(m);
}

/* 8 idle reserved cores on a node the others keep busy: hogging; on an idle node: not. */
static void test_hogging_weighted_by_node(void **state)
{
	struct sim *busy = sim_new(8, 0, -1, 0), *quiet = sim_new(8, 0, -1, 0);

	(void)state;
	for (int t = 0; t < 120; t++) {
		sim_tick(busy, t, 0.1, GIB, 0.1 + 7.5, NULL, NULL); /* others: 7.5 of the 8 left */
		sim_tick(quiet, t, 0.1, GIB, 0.1, NULL, NULL);
	}
	sim_finish(busy, 120);
	sim_finish(quiet, 120);
	assert_float_equal(busy->r.an.idle_cores_avg, 7.9, 0.01);
	assert_float_equal(busy->r.an.node_busy_pct, 93.75, 0.5);
	assert_non_null(find(&busy->r.an, "hogging"));
	assert_float_equal(quiet->r.an.idle_cores_avg, 7.9, 0.01);
	assert_float_equal(quiet->r.an.node_busy_pct, 0, 0.5);
	assert_null(find(&quiet->r.an, "hogging"));
	assert_int_equal(quiet->r.an.bottleneck, BOTTLENECK_UNKNOWN);
	sim_free(busy);
	sim_free(quiet);
}

/* 1 MiB/s for 10 minutes against 8 GiB reserved: the time to the limit. */
static void test_leak_forecast(void **state)
{
	struct sim *m = sim_new(2, 8 * GIB, -1, 0);
	const struct verdict *v;
	double level = GIB + 599.0 * 1024 * 1024;

	(void)state;
	for (int t = 0; t < 600; t++)
		sim_tick(m, t, 1.0, GIB + (uint64_t)t * 1024 * 1024, 1.0, NULL, NULL);
	sim_finish(m, 600);
	assert_true(m->r.an.host_mem.growing);
	assert_float_equal(m->r.an.host_mem.slope_bps, 1024 * 1024, 1024);
	assert_float_equal(m->r.an.host_mem.time_to_limit_s, (8 * GIB - level) / (1024 * 1024), 60);
	v = find(&m->r.an, "mem_growing");
	assert_non_null(v);
	assert_true(contains(v->message, "out of memory"));
	sim_free(m);
}

static void test_too_short(void **state)
{
	struct sim *m = sim_new(2, 0, -1, 0);

	(void)state;
	for (int t = 0; t < 5; t++)
		sim_tick(m, t, 1.0, GIB, 1.0, NULL, NULL);
	sim_finish(m, 5);
	assert_true(m->r.an.too_short);
	assert_int_equal(m->r.an.nverdicts, 1);
	assert_string_equal(m->r.an.verdicts[0].kind, "too_short");
	assert_int_equal(m->r.an.bottleneck, BOTTLENECK_UNKNOWN);
	assert_false(m->r.an.has_period);
	sim_free(m);
}

/* A week at 1 s stays within JS_POINTS buckets, each the mean of its samples. */
static void test_series_bounded(void **state)
{
	struct jobseries js;
	struct job_sample j = {.nprocs = 1, .rss_bytes = 1};
	double *ov = malloc(JS_POINTS * sizeof(double)), *det = malloc(JS_RING * sizeof(double));
	int64_t first;
	size_t n;

	(void)state;
	jobseries_init(&js, 1000);
	for (int64_t t = 0; t < 7 * 86400; t++) {
		j.user_ms += 500; /* half a core */
		j.rss_bytes = (uint64_t)t;
		jobseries_add_job(&js, T0_MS + t * 1000, &j);
	}
	jobseries_finish(&js, NULL, 0);
	n = jobseries_overview(&js, -1, JSM_CORES, ov);
	assert_true(n <= JS_POINTS);
	assert_true(js.bucket_ms * (int64_t)n >= 7 * 86400 * 1000LL);
	assert_float_equal(ov[n / 2], 0.5, 1e-9);
	n = jobseries_detail(&js, -1, JSM_RSS_BYTES, det, &first);
	assert_int_equal(n, JS_RING);
	assert_int_equal(first, T0_MS + (7 * 86400 - JS_RING) * 1000LL);
	assert_float_equal(det[n - 1], 7 * 86400 - 1, 0);
	free(ov);
	free(det);
	jobseries_release(&js);
}

/* Both views of a job's report get the agent's `interval` event, as a replay hands it. */
static void interval_event(struct job_report *r, int64_t ts_ms, int64_t interval_ms)
{
	struct event_record e = {.ts_ms = ts_ms, .kind = "interval", .value = interval_ms};

	assert_int_equal(summary_add_event(&r->sum, &e), 0);
	jobseries_set_interval(&r->js, ts_ms, interval_ms);
}

static void job_tick(struct job_report *r, int64_t ts_ms, struct job_sample *j, double cpu_ms)
{
	j->nprocs = 1;
	j->rss_bytes = GIB;
	j->user_ms += (uint64_t)cpu_ms;
	summary_add_job(&r->sum, ts_ms, j);
	jobseries_add_job(&r->js, ts_ms, j);
}

/*
 * Configured at 1 s, sampled at 200 ms by a head's session from t=59 s: a
 * minute flat at 1 core, then a minute of a 4 s cycle (2 s at 3 cores, 2 s
 * at half a core).  The detail holds only the 200 ms ticks, so the cycle
 * reads 4 s; taken as 1 s apart, its 20 ticks read 20 s.
 */
static void test_period_after_interval_change(void **state)
{
	struct job_record job = {
	    .id = 1, .start_ms = T0_MS, .interval_ms = 1000, .cores_allowed = 16, .host_cores = 16};
	struct job_report *r = calloc(1, sizeof(*r));
	double *det = malloc(JS_RING * sizeof(double));
	struct job_sample j = {0};
	int64_t ts = T0_MS, first;
	size_t n;

	(void)state;
	job_report_init(r, &job);
	for (int i = 0; i < 60; i++, ts += 1000)
		job_tick(r, ts, &j, 1000);
	ts -= 1000;
	interval_event(r, ts, 200);
	for (int i = 0; i < 300; i++) {
		ts += 200;
		job_tick(r, ts, &j, (i / 10) % 2 ? 100 : 600);
	}
	job.end_ms = ts;
	job_report_finish(r, &job);
	n = jobseries_detail(&r->js, -1, JSM_CORES, det, &first);
	assert_int_equal(n, 300);
	assert_int_equal(first, T0_MS + 59200);
	assert_float_equal(det[0], 3.0, 1e-9);
	assert_float_equal(det[10], 0.5, 1e-9);
	assert_true(r->an.has_period);
	assert_string_equal(r->an.period_metric, "cores");
	assert_float_equal(r->an.period_s, 4.0, 0.05);
	free(det);
	job_report_release(r);
	free(r);
}

/*
 * Started at 200 ms under a session, back to 1 s at t=4.8 s: the overview's
 * buckets widen to 1.6 s, so no bucket is left empty between two samples,
 * and the detail keeps the 1 s ticks only.
 */
static void test_overview_after_longer_interval(void **state)
{
	static const double want[] = {2.0, 2.0, 2.0, 1.5, 1.0, 1.0, 1.0, 1.0, 1.0};
	double *ov = malloc(JS_POINTS * sizeof(double)), *det = malloc(JS_RING * sizeof(double));
	struct jobseries js;
	struct job_sample j = {.nprocs = 1, .rss_bytes = 1};
	int64_t first;
	size_t n;

	(void)state;
	jobseries_init(&js, 200);
	for (int64_t t = 0; t <= 4800; t += 200) {
		j.user_ms = (uint64_t)t * 2;
		jobseries_add_job(&js, T0_MS + t, &j);
	}
	jobseries_set_interval(&js, T0_MS + 4800, 1000);
	for (int64_t t = 5800; t <= 12800; t += 1000) {
		j.user_ms += 1000;
		jobseries_add_job(&js, T0_MS + t, &j);
	}
	jobseries_finish(&js, NULL, 0);
	assert_int_equal(js.bucket_ms, 1600);
	n = jobseries_overview(&js, -1, JSM_CORES, ov);
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < n; i++)
		assert_float_equal(ov[i], want[i], 1e-9);
	n = jobseries_detail(&js, -1, JSM_CORES, det, &first);
	assert_int_equal(n, 8);
	assert_int_equal(first, T0_MS + 5800);
	for (size_t i = 0; i < n; i++)
		assert_float_equal(det[i], 1.0, 1e-9);
	free(ov);
	free(det);
	jobseries_release(&js);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_over_requested),
	    cmocka_unit_test(test_cpu_idle_advice),
	    cmocka_unit_test(test_mem_advice_scale),
	    cmocka_unit_test(test_contended_gives_no_cpu_advice),
	    cmocka_unit_test(test_jitter_is_no_gap),
	    cmocka_unit_test(test_gpus_unused),
	    cmocka_unit_test(test_gpu_reserved_never_used),
	    cmocka_unit_test(test_hogging_weighted_by_node),
	    cmocka_unit_test(test_leak_forecast),
	    cmocka_unit_test(test_too_short),
	    cmocka_unit_test(test_series_bounded),
	    cmocka_unit_test(test_period_after_interval_change),
	    cmocka_unit_test(test_overview_after_longer_interval),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
