/*
 * analysis.c - from a job's summary and series to figures, classes and
 * verdicts (DESIGN.md section 7).  The thresholds are named below; the
 * verdicts follow what jobstats, seff and job_defense_shield tell users
 * (a finding, its numbers, the value to ask for next time).
 */
#include "analysis/verdicts.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/series.h"
#include "common/fmt.h"

#define GPU_BUSY_PCT	   5.0	/* a GPU above this on average is "busy" */
#define GPU_LOW_UTIL_PCT   50.0 /* mean utilization under this: "low" */
#define CPU_LOW_EFF_PCT	   50.0 /* CPU efficiency under this: cores idle */
#define MEM_OVER_PCT	   50.0 /* peak under this share of the reservation: over-requested */
#define MEM_NEAR_LIMIT_PCT 90.0
#define MEM_HEADROOM	   1.25 /* advice: the peak plus a quarter */
#define THROTTLED_FRAC	   0.10
/* What the SMs did (GPM), percent of the time, the devices' over the job's time on them */
#define SM_IDLE_UTIL_PCT      50.0 /* utilization at or above this: the GPU looks busy... */
#define SM_IDLE_ACTIVE_PCT    30.0 /* ...but SM active under this... */
#define SM_IDLE_OCCUPANCY_PCT 20.0 /* ...or occupancy under this: SMs mostly idle */
#define DRAM_BOUND_PCT	      50.0 /* DRAM bandwidth used at or above this... */
#define DRAM_BOUND_PIPES_PCT  30.0 /* ...while no compute pipe is this busy: memory bound */
#define FP16_NOTABLE_PCT      5.0  /* FP16/BF16 pipes at least this busy: half-precision work */
#define TENSOR_UNUSED_PCT     1.0  /* tensor pipes under this: unused */
#define THROTTLE_POWER_FRAC   0.10 /* throttled by power this share of the run (one GPU) */
#define HOG_NODE_BUSY_PCT  50.0 /* others kept the node this busy: idle reservations hurt */
#define HOG_MIN_EQUIV	   1.0	/* idle core- or GPU-equivalents that make a hog */
#define CYCLIC_CONFIDENCE  0.5	/* Alnair's cyclic-pattern flag */
#define PERIOD_MIN_CV	   0.1	/* a cycle counts in a series swinging this much */
#define TREND_MIN_R2	   0.6
#define TREND_MIN_RISE	   0.05 /* of the level over the window fitted */
#define HOLT_ALPHA	   0.5
#define HOLT_BETA	   0.2
/* PCIe traffic is judged against a gen3 x16 link both ways, 32 GB/s. */
#define PCIE_LINK_BPS 32e9

static const char *const severity_names[] = {"info", "warning", "critical"};

const char *verdict_severity_name(enum verdict_severity s)
{
	return (size_t)s < sizeof(severity_names) / sizeof(severity_names[0]) ? severity_names[s]
									      : "info";
}

enum verdict_severity verdict_severity_parse(const char *name)
{
	for (size_t i = 0; name && i < sizeof(severity_names) / sizeof(severity_names[0]); i++)
		if (strcmp(name, severity_names[i]) == 0)
			return (enum verdict_severity)i;
	return VERDICT_INFO;
}

static struct verdict *verdict_add(struct analysis *a, const char *kind, enum verdict_severity sev,
				   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static struct verdict *verdict_add(struct analysis *a, const char *kind, enum verdict_severity sev,
				   const char *fmt, ...)
{
	static struct verdict sink; /* the overflow: never read */
	struct verdict *v;
	va_list ap;

	if (a->nverdicts == ANALYSIS_VERDICTS_MAX)
		v = &sink;
	else
		v = &a->verdicts[a->nverdicts++];
	memset(v, 0, sizeof(*v));
	v->kind = kind;
	v->severity = sev;
	va_start(ap, fmt);
	vsnprintf(v->message, sizeof(v->message), fmt, ap);
	va_end(ap);
	return v;
}

static void evidence(struct verdict *v, const char *name, double value)
{
	if (v->nevidence < VERDICT_EVIDENCE_MAX)
		v->evidence[v->nevidence++] = (struct verdict_evidence){name, value};
}

static void advise(struct verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void advise(struct verdict *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v->advice, sizeof(v->advice), fmt, ap);
	va_end(ap);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The p-th percentile (nearest rank) of the values of x that are not NAN. */
static double percentile(const double *x, size_t n, double p, double *scratch)
{
	size_t k = 0;
	double rank;

	for (size_t i = 0; i < n; i++)
		if (!isnan(x[i]))
			scratch[k++] = x[i];
	if (!k)
		return NAN;
	qsort(scratch, k, sizeof(*scratch), cmp_double);
	rank = ceil(p / 100.0 * (double)k); /* 1-based */
	return scratch[rank < 1 ? 0 : rank > (double)k ? k - 1 : (size_t)rank - 1];
}

static double mean(const double *x, size_t n)
{
	double sum = 0;
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (!isnan(x[i])) {
			sum += x[i];
			k++;
		}
	return k ? sum / (double)k : NAN;
}

/* Share of the non-NAN values of x that are >= (above) or < threshold. */
static double share(const double *x, size_t n, double threshold, bool above)
{
	size_t k = 0, hit = 0;

	for (size_t i = 0; i < n; i++)
		if (!isnan(x[i])) {
			k++;
			hit += above ? x[i] >= threshold : x[i] < threshold;
		}
	return k ? (double)hit / (double)k : NAN;
}

/* Series scratch space, on the heap: the overview and the detail of one metric. */
struct work {
	double ov[JS_POINTS];
	/* the node's busy cores that were not the job's, per overview point
	 * (figures_others; NAN where unknown), and the node's busy share */
	double others[JS_POINTS];
	size_t nothers;
	double host_busy_pct;
	double det[JS_RING];
	double tmp[JS_RING];
};

static void figures_cpu_mem(struct analysis *a, const struct summary *s, const struct jobseries *js,
			    struct work *w)
{
	const struct job_record *j = &s->job;
	size_t n;

	a->cores_avg = summary_cores_avg(s);
	a->cores_from_reservation = j->reserved_cpus > 0;
	a->cores_reserved = j->reserved_cpus > 0   ? j->reserved_cpus
			    : j->cores_allowed > 0 ? (double)j->cores_allowed
						   : NAN;
	a->cpu_eff_pct = a->cores_reserved > 0 ? 100.0 * a->cores_avg / a->cores_reserved : NAN;
	n = jobseries_overview(js, -1, JSM_CORES, w->ov);
	a->cores_p95 = percentile(w->ov, n, 95, w->tmp);
	a->cores_busy_frac =
	    a->cores_reserved > 0 ? share(w->ov, n, 0.9 * a->cores_reserved, true) : NAN;
	a->features.busy_frac = share(w->ov, n, 0.05, true);
	a->features.cores_saturated_frac = a->cores_busy_frac;

	a->mem_peak_bytes = (double)summary_rss_peak(s, NULL);
	if (s->has_cg_mem_peak && (double)s->cg_mem_peak_bytes > a->mem_peak_bytes)
		a->mem_peak_bytes = (double)s->cg_mem_peak_bytes;
	a->mem_reserved_bytes = j->reserved_mem_bytes ? (double)j->reserved_mem_bytes : NAN;
	a->mem_eff_pct =
	    a->mem_reserved_bytes > 0 ? 100.0 * a->mem_peak_bytes / a->mem_reserved_bytes : NAN;
}

static bool gpu_is_jobs(const struct summary *s, const struct gpu_summary *g)
{
	return !s->gpu_procs_known || g->used;
}

static void figures_gpu(struct analysis *a, const struct summary *s, const struct jobseries *js,
			struct work *w)
{
	uint64_t hist[101] = {0}, n = 0, sum = 0;
	size_t k;

	a->gpus_on_node = s->ngpus;
	a->gpus_reserved = s->job.has_reserved_gpus ? s->job.reserved_gpus : -1;
	a->gpus_touched = s->gpu_procs_known ? 0 : -1;
	a->gpu_util_mean = a->gpu_util_p95 = a->gpu_mem_peak_bytes = a->gpu_mem_total_bytes = NAN;
	a->gpus_busy = 0;
	for (int i = 0; i < s->ngpus; i++) {
		const struct gpu_summary *g = &s->gpus[i];

		if (!gpu_is_jobs(s, g))
			continue;
		if (s->gpu_procs_known)
			a->gpus_touched++;
		for (int u = 0; u <= 100; u++)
			hist[u] += g->util_hist[u];
		n += (uint64_t)g->util_n;
		sum += g->util_sum;
		if (g->util_n && (double)g->util_sum / (double)g->util_n > GPU_BUSY_PCT)
			a->gpus_busy++;
		if (g->has_mem && (isnan(a->gpu_mem_peak_bytes) ||
				   (double)g->mem_used_peak_bytes > a->gpu_mem_peak_bytes)) {
			a->gpu_mem_peak_bytes = (double)g->mem_used_peak_bytes;
			a->gpu_mem_total_bytes = g->dev.info.valid & GPU_INFO_MEM_TOTAL
						     ? (double)g->dev.info.mem_total_bytes
						     : NAN;
		}
	}
	if (n) {
		uint64_t rank = (uint64_t)ceil(0.95 * (double)n), seen = 0;

		a->gpu_util_mean = (double)sum / (double)n;
		for (int u = 0; u <= 100; u++) {
			seen += hist[u];
			if (seen >= rank) {
				a->gpu_util_p95 = u;
				break;
			}
		}
	}
	for (int i = 0; i < GPU_ACTIVITY__COUNT; i++) {
		a->gpu_activity_pct[i] = summary_gpus_activity_pct(s, i, false);
		a->gpu_activity_job_pct[i] = summary_gpus_activity_pct(s, i, true);
	}
	for (int i = 0; i < GPU_VIOLATION__COUNT; i++)
		a->gpu_throttle_s[i] = summary_gpus_throttle_s(s, i);
	for (int i = 0; i < s->ngpus; i++) {
		double t = summary_gpu_throttle_s(&s->gpus[i], GPU_VIOLATION_POWER);

		if (s->gpus[i].used && !isnan(t) &&
		    (isnan(a->gpu_throttle_power_max_s) || t > a->gpu_throttle_power_max_s))
			a->gpu_throttle_power_max_s = t;
	}
	k = jobseries_overview(js, -1, JSM_GPU_THROTTLED, w->ov);
	a->gpu_throttled_frac = mean(w->ov, k);
	k = jobseries_overview(js, -1, JSM_GPUS_BUSY, w->ov);
	a->gpus_busy_avg = mean(w->ov, k);
	k = jobseries_overview(js, -1, JSM_GPU_PCIE_BPS, w->ov);
	a->features.pcie_frac = mean(w->ov, k) / PCIE_LINK_BPS;
}

/* The job's GPUs: those it touched, or all when the driver gave no process lists. */
static int job_gpu_count(const struct analysis *a)
{
	return a->gpus_touched >= 0 ? a->gpus_touched : a->gpus_on_node;
}

static int host_cores_of(const struct summary *s)
{
	return s->job.host_cores > 0 ? s->job.host_cores : s->host_last.ncpus;
}

/* The node's busy share, and the cores of it that were not the job's: read once for
 * hogging and contention. */
static void figures_others(const struct summary *s, const struct jobseries *js, struct work *w)
{
	int host_cores = host_cores_of(s);
	size_t n = jobseries_overview(js, -1, JSM_HOST_CPU_PCT, w->others);
	double cores[JS_POINTS];

	w->host_busy_pct = mean(w->others, n);
	w->nothers = 0;
	if (host_cores <= 0 || !n)
		return;
	jobseries_overview(js, -1, JSM_CORES, cores);
	for (size_t i = 0; i < n; i++)
		w->others[i] = isnan(w->others[i])
				   ? NAN
				   : fmax(0.0, w->others[i] * host_cores / 100.0 -
						   (isnan(cores[i]) ? 0 : cores[i]));
	w->nothers = n;
}

static void figures_hogging(struct analysis *a, const struct summary *s, const struct jobseries *js,
			    struct work *w)
{
	int host_cores = host_cores_of(s);
	double others_cpu = NAN, others_gpu = NAN, reserved_gpus;
	size_t n, others = 0;

	a->idle_cores_avg = a->idle_gpus_avg = a->node_busy_pct = a->hog_score = NAN;
	/*
	 * The node's busy share, the job's own use taken out, relative to the
	 * room the job left: what others could have used.
	 */
	if (w->nothers) {
		double room = host_cores - (a->cores_reserved > 0 ? a->cores_reserved : 0);

		/* a job holding the whole node leaves no room to judge by */
		for (size_t i = 0; i < w->nothers; i++)
			w->ov[i] = isnan(w->others[i]) || room <= 0
				       ? NAN
				       : fmin(100.0, w->others[i] / room * 100.0);
		others_cpu = mean(w->ov, w->nothers);
	}
	/* the node's other GPUs: how busy they were */
	if (js->ngpus) {
		double sum = 0;

		for (int i = 0; i < js->ngpus; i++) {
			if (js->gpu[i]->job)
				continue;
			n = jobseries_overview(js, i, JSG_UTIL_PCT, w->ov);
			if (!isnan(mean(w->ov, n))) {
				sum += mean(w->ov, n);
				others++;
			}
		}
		if (others)
			others_gpu = sum / (double)others;
	}
	a->node_busy_pct =
	    others ? (isnan(others_cpu) ? others_gpu : fmax(others_cpu, others_gpu)) : others_cpu;
	if (a->cores_from_reservation && !isnan(a->cores_avg))
		a->idle_cores_avg = fmax(0.0, a->cores_reserved - a->cores_avg);
	reserved_gpus = a->gpus_reserved >= 0 ? a->gpus_reserved : NAN;
	if (!isnan(reserved_gpus))
		a->idle_gpus_avg =
		    fmax(0.0, reserved_gpus - (isnan(a->gpus_busy_avg) ? 0 : a->gpus_busy_avg));
	if (!isnan(a->node_busy_pct) && (!isnan(a->idle_cores_avg) || !isnan(a->idle_gpus_avg))) {
		/* a GPU idles as much capacity as a node's worth of cores per GPU */
		double per_gpu = s->ngpus ? (double)host_cores / s->ngpus : 0;
		double idle = (isnan(a->idle_cores_avg) ? 0 : a->idle_cores_avg) +
			      (isnan(a->idle_gpus_avg) ? 0 : a->idle_gpus_avg * per_gpu);

		a->hog_score = idle * a->node_busy_pct / 100.0;
	}
}

/*
 * Contention: the node's CPUs near all busy, with half a core or more of it
 * other work's, and (when the kernel says) runnable tasks waiting for a CPU a
 * fifth of the time or more, while the job used less than it could: what it
 * did not use was not free to use.
 */
#define CONTENDED_HOST_BUSY_PCT 90.0
#define CONTENDED_OTHER_CORES	0.5
#define CONTENDED_PSI_CPU_PCT	20.0
#define CONTENDED_UNDER_SHARE	0.9
#define CONTENDED_WAIT_CORES	0.1 /* its threads waiting, on average (schedstat) */
#define CONTENDED_WAIT_SHARE	0.1 /* ... and against the cores it ran */

static void figures_contention(struct analysis *a, const struct summary *s, const struct work *w)
{
	const struct host_point *h0 = &s->host_first, *h1 = &s->host_last;

	a->host_cpu_busy_pct = w->host_busy_pct;
	a->other_cores_avg = w->nothers ? mean(w->others, w->nothers) : NAN;
	a->psi_cpu_some_pct = a->wait_cores_avg = NAN;
	/* the job's own threads waiting for a CPU (schedstat): starved, or not */
	if (s->has_cpu_wait && s->cpu_wait_last_ts > s->cpu_wait_first_ts &&
	    s->cpu_wait_last_ms >= s->cpu_wait_first_ms)
		a->wait_cores_avg = (double)(s->cpu_wait_last_ms - s->cpu_wait_first_ms) /
				    (double)(s->cpu_wait_last_ts - s->cpu_wait_first_ts);
	if ((h0->valid & h1->valid & HOST_HAS_PSI_CPU) && h1->ts_ms > h0->ts_ms &&
	    h1->psi_cpu_some_us >= h0->psi_cpu_some_us)
		a->psi_cpu_some_pct =
		    fmin(100.0, (double)(h1->psi_cpu_some_us - h0->psi_cpu_some_us) /
				    (double)(h1->ts_ms - h0->ts_ms) / 10.0);
	a->cpu_contended =
	    !isnan(a->host_cpu_busy_pct) && a->host_cpu_busy_pct >= CONTENDED_HOST_BUSY_PCT &&
	    !isnan(a->other_cores_avg) && a->other_cores_avg >= CONTENDED_OTHER_CORES &&
	    (isnan(a->psi_cpu_some_pct) || a->psi_cpu_some_pct >= CONTENDED_PSI_CPU_PCT) &&
	    /* its own threads waited (known: a serial or I/O-bound job on a busy node did not) */
	    (isnan(a->wait_cores_avg) ||
	     (a->wait_cores_avg >= CONTENDED_WAIT_CORES &&
	      a->wait_cores_avg >= CONTENDED_WAIT_SHARE * a->cores_avg)) &&
	    !isnan(a->cores_avg) && a->cores_reserved > 0 &&
	    a->cores_avg < CONTENDED_UNDER_SHARE * a->cores_reserved;
}

/* The scaling hints: would more cores, more GPUs, help? */
static void figures_scaling(struct analysis *a)
{
	int gpus = job_gpu_count(a);

	if (!(a->cores_reserved > 0) || isnan(a->cores_avg))
		snprintf(a->scaling_cpu, sizeof(a->scaling_cpu),
			 "cannot be judged: the cores it had are unknown");
	else if (a->cpu_contended)
		snprintf(a->scaling_cpu, sizeof(a->scaling_cpu),
			 "cannot be judged: other work held the node's CPUs (%.1f cores of it on "
			 "average)",
			 a->other_cores_avg);
	else if (!isnan(a->cores_busy_frac) && a->cores_busy_frac >= 0.5)
		snprintf(a->scaling_cpu, sizeof(a->scaling_cpu),
			 "more cores may help: all %.0f were busy %.0f%% of the time (if the code "
			 "runs in parallel)",
			 a->cores_reserved, 100 * a->cores_busy_frac);
	else if (!isnan(a->cores_p95) && a->cores_p95 < 0.75 * a->cores_reserved)
		snprintf(a->scaling_cpu, sizeof(a->scaling_cpu),
			 "more cores would not help: it kept %.1f of %.0f busy on average, %.1f at "
			 "its p95",
			 a->cores_avg, a->cores_reserved, a->cores_p95);
	else
		snprintf(a->scaling_cpu, sizeof(a->scaling_cpu),
			 "more cores would help little: %.1f of %.0f busy on average", a->cores_avg,
			 a->cores_reserved);

	if (gpus <= 0 || isnan(a->gpu_util_mean))
		a->scaling_gpu[0] = '\0';
	else if (a->gpus_busy < gpus)
		snprintf(a->scaling_gpu, sizeof(a->scaling_gpu),
			 "more GPUs would not help: it kept %d of %d busy", a->gpus_busy, gpus);
	else if (a->gpu_util_mean >= 80)
		snprintf(a->scaling_gpu, sizeof(a->scaling_gpu),
			 "GPU-bound (%.0f%% busy): more or faster GPUs would help if the code "
			 "scales across them",
			 a->gpu_util_mean);
	else if (a->bottleneck == BOTTLENECK_CPU_FEEDING)
		snprintf(
		    a->scaling_gpu, sizeof(a->scaling_gpu),
		    "more GPUs would not help: they wait on the CPU; more cores per GPU would");
	else
		snprintf(a->scaling_gpu, sizeof(a->scaling_gpu),
			 "more GPUs would not help: they were %.0f%% busy on average",
			 a->gpu_util_mean);
}

/*
 * Whether a series swings enough for a cycle in it to mean anything: its
 * standard deviation at least PERIOD_MIN_CV of its mean.  A flat load has
 * tiny regular dips (the sampler's own ticks, a checkpoint every second)
 * that autocorrelate perfectly well.
 */
static bool swings(const double *x, size_t n)
{
	double m = mean(x, n), ss = 0;
	size_t k = 0;

	if (isnan(m) || m <= 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isnan(x[i])) {
			ss += (x[i] - m) * (x[i] - m);
			k++;
		}
	return k > 1 && sqrt(ss / (double)(k - 1)) >= PERIOD_MIN_CV * m;
}

/* Period: the strongest cycle in GPU utilization, CPU or memory. */
static void figures_period(struct analysis *a, const struct jobseries *js, struct work *w)
{
	static const int metrics[] = {JSM_GPU_UTIL_PCT, JSM_CORES, JSM_RSS_BYTES};

	a->period_s = a->period_confidence = NAN;
	for (size_t m = 0; m < sizeof(metrics) / sizeof(metrics[0]); m++) {
		struct period_result r;
		int64_t t0;
		size_t n;

		if (!jobseries_has(js, -1, metrics[m]))
			continue;
		/*
		 * The last ticks at full resolution (at the interval in
		 * effect), then the whole job in buckets, unless those are the
		 * same ticks over again.
		 */
		n = jobseries_detail(js, -1, metrics[m], w->det, &t0);
		if ((!swings(w->det, n) ||
		     series_period(w->det, n, js->interval_ms / 1000.0, &r) != 0) &&
		    ((js->bucket_ms == js->interval_ms && js->interval_since_ms == INT64_MIN) ||
		     !swings(w->ov, jobseries_overview(js, -1, metrics[m], w->ov)) ||
		     series_period(w->ov, js->npoints, js->bucket_ms / 1000.0, &r) != 0))
			continue;
		if (!a->has_period || r.confidence > a->period_confidence) {
			a->has_period = true;
			a->period_s = r.period_s;
			a->period_confidence = r.confidence;
			a->period_metric = jobseries_metric_name(metrics[m]);
		}
	}
	a->cyclic = a->has_period && a->period_confidence >= CYCLIC_CONFIDENCE;
	a->features.period_confidence = a->has_period ? a->period_confidence : NAN;
}

/* A trend not (yet) judged: every figure missing. */
static void trend_unknown(struct memory_trend *t)
{
	memset(t, 0, sizeof(*t));
	t->slope_bps = t->r2 = t->level_bytes = t->limit_bytes = t->time_to_limit_s = NAN;
}

/*
 * A memory trend over the second half of the job (the first often holds a
 * ramp as data loads): a steady rise, its rate and when it meets limit.
 */
static void trend_of(struct memory_trend *t, const double *x, size_t n, double dt, double limit)
{
	struct trend_result r;
	size_t from = n / 2;
	double level;

	trend_unknown(t);
	t->limit_bytes = limit > 0 ? limit : NAN;
	if (n - from < ANALYSIS_MIN_SAMPLES)
		from = n >= ANALYSIS_MIN_SAMPLES ? n - ANALYSIS_MIN_SAMPLES : 0;
	if (series_trend(x + from, n - from, dt, HOLT_ALPHA, HOLT_BETA, &r) != 0)
		return;
	t->valid = true;
	t->slope_bps = r.slope;
	t->r2 = r.r2;
	t->level_bytes = r.level;
	level = fabs(r.level) > 0 ? fabs(r.level) : 1;
	t->growing = r.slope > 0 && r.r2 >= TREND_MIN_R2 &&
		     r.slope * dt * (double)(n - from) >= TREND_MIN_RISE * level;
	if (t->growing && limit > 0) {
		double s;

		if (series_time_to(&r, limit, &s) == 0)
			t->time_to_limit_s = s;
	}
}

bool memory_trend_steady(const struct memory_trend *t)
{
	return t->valid && t->r2 >= TREND_MIN_R2 && isfinite(t->slope_bps) && t->slope_bps != 0;
}

/* What the job's memory runs out of: its reservation, else the host's memory; NAN. */
static double mem_limit(const struct analysis *a, const struct summary *s)
{
	if (a->mem_reserved_bytes > 0)
		return a->mem_reserved_bytes;
	return s->job.host_mem_bytes ? (double)s->job.host_mem_bytes : NAN;
}

static void figures_trend(struct analysis *a, const struct summary *s, const struct jobseries *js,
			  struct work *w)
{
	double dt = js->bucket_ms / 1000.0;
	double limit = mem_limit(a, s);
	size_t n;

	n = jobseries_overview(js, -1, JSM_RSS_BYTES, w->ov);
	trend_of(&a->host_mem, w->ov, n, dt, limit);
	/* GPU memory: the job's device that runs out first */
	for (int i = 0; i < js->ngpus; i++) {
		struct memory_trend t;

		if (!js->gpu[i]->job)
			continue;
		n = jobseries_overview(js, i, JSG_MEM_BYTES, w->ov);
		trend_of(&t, w->ov, n, dt,
			 js->gpu[i]->mem_total_bytes ? (double)js->gpu[i]->mem_total_bytes : NAN);
		if (!t.valid)
			continue;
		if (!a->gpu_mem.valid || (t.growing && !a->gpu_mem.growing) ||
		    (!isnan(t.time_to_limit_s) && (isnan(a->gpu_mem.time_to_limit_s) ||
						   t.time_to_limit_s < a->gpu_mem.time_to_limit_s)))
			a->gpu_mem = t;
	}
}

static void features_fill(struct analysis *a, const struct summary *s, const struct jobseries *js,
			  struct work *w)
{
	struct job_features *f = &a->features;
	double limit = mem_limit(a, s);
	size_t n;

	f->duration_s = a->duration_s;
	f->samples = a->samples;
	f->cores_avg = isnan(a->cores_avg) ? 0 : a->cores_avg;
	f->cores_allowed = a->cores_reserved > 0 ? a->cores_reserved : 0;
	f->gpu_util_avg = job_gpu_count(a) > 0 ? a->gpu_util_mean : NAN;
	f->gpu_util_p95 = job_gpu_count(a) > 0 ? a->gpu_util_p95 : NAN;
	f->throttled_frac = a->gpu_throttled_frac;
	n = jobseries_overview(js, -1, JSM_HOST_IOWAIT_PCT, w->ov);
	f->iowait_pct = mean(w->ov, n);
	n = jobseries_overview(js, -1, JSM_PSI_IO_PCT, w->ov);
	f->psi_io_some_pct = mean(w->ov, n);
	n = jobseries_overview(js, -1, JSM_READ_BPS, w->ov);
	f->read_bps_avg = mean(w->ov, n);
	n = jobseries_overview(js, -1, JSM_WRITE_BPS, w->ov);
	f->write_bps_avg = mean(w->ov, n);
	f->mem_peak_frac = limit > 0 ? a->mem_peak_bytes / limit : NAN;
	f->swap_bytes_peak = s->has_swap ? (double)s->swap_peak_bytes : NAN;
	n = jobseries_overview(js, -1, JSM_PSI_MEM_PCT, w->ov);
	f->psi_mem_some_pct = mean(w->ov, n);
	n = jobseries_overview(js, -1, JSM_HOST_NET_BPS, w->ov);
	f->net_bps_avg = mean(w->ov, n);
}

static void gib(char *buf, size_t size, double bytes)
{
	fmt_bytes(buf, size, bytes > 0 ? (uint64_t)bytes : 0);
}

/*
 * The --mem value to ask for next time: the peak with headroom, rounded up
 * in the job's own scale, as Slurm takes it (a whole number and a unit):
 * whole GiB from 16 GiB, 256 MiB steps from 1 GiB, else whole MiB ("262M").
 * Rounding never reaches the request itself when the advice is to ask for
 * less (below: the finer unit is used instead).
 */
static void mem_request(char *buf, size_t size, double peak, double reserved)
{
	const double mib = 1024.0 * 1024, want = peak * MEM_HEADROOM;
	double g = ceil(want / (1024 * mib)), q = ceil(want / (256 * mib)) * 256,
	       m = ceil(want / mib);
	bool less = reserved > 0 && want < reserved;

	if (want >= 16 * 1024 * mib && (!less || g * 1024 * mib < reserved))
		m = g * 1024;
	else if (want >= 1024 * mib && (!less || q * mib < reserved))
		m = q;
	if (m < 1)
		m = 1;
	if (fmod(m, 1024) == 0)
		snprintf(buf, size, "%.0fG", m / 1024);
	else
		snprintf(buf, size, "%.0fM", m);
}

static void verdicts_gpu(struct analysis *a)
{
	int gpus = job_gpu_count(a);
	struct verdict *v;
	char b1[32], b2[32];

	if (a->gpus_reserved > 0 && a->gpus_touched == 0) {
		v = verdict_add(a, "gpu_unused", VERDICT_CRITICAL,
				"it reserved %d GPU%s and used none", a->gpus_reserved,
				a->gpus_reserved == 1 ? "" : "s");
		evidence(v, "gpus_reserved", a->gpus_reserved);
		evidence(v, "gpus_touched", 0);
		advise(v, "check that the code runs on the GPU (CUDA/ROCm visible, the framework's "
			  "device set), or ask for no GPU");
		return;
	}
	if (gpus <= 0 || isnan(a->gpu_util_mean))
		return;
	if (a->gpu_util_p95 <= 0) {
		v = verdict_add(a, "gpu_idle", VERDICT_CRITICAL,
				"its GPU%s stayed at 0%% utilization for the whole job",
				gpus == 1 ? "" : "s");
		evidence(v, "gpu_util_p95_pct", a->gpu_util_p95);
		advise(v, "is the code GPU-enabled? Run it without a GPU, or fix the device setup");
		return;
	}
	if (a->gpus_reserved > 0 && a->gpus_busy < a->gpus_reserved) {
		v = verdict_add(a, "gpus_unused", VERDICT_WARNING, "used %d of %d GPUs",
				a->gpus_busy, a->gpus_reserved);
		evidence(v, "gpus_reserved", a->gpus_reserved);
		evidence(v, "gpus_busy", a->gpus_busy);
		evidence(v, "gpus_touched", a->gpus_touched);
		advise(v, "request %d GPU%s, not %d", a->gpus_busy > 0 ? a->gpus_busy : 1,
		       a->gpus_busy > 1 ? "s" : "", a->gpus_reserved);
	} else if (a->gpus_touched > 0 && a->gpus_busy < a->gpus_touched) {
		v = verdict_add(a, "gpus_unused", VERDICT_WARNING,
				"kept %d of the %d GPUs it used busy", a->gpus_busy,
				a->gpus_touched);
		evidence(v, "gpus_touched", a->gpus_touched);
		evidence(v, "gpus_busy", a->gpus_busy);
		advise(v, "request %d GPU%s", a->gpus_busy > 0 ? a->gpus_busy : 1,
		       a->gpus_busy > 1 ? "s" : "");
	}
	if (a->gpu_util_mean < GPU_LOW_UTIL_PCT) {
		v = verdict_add(a, "gpu_low_util", VERDICT_WARNING,
				"its GPUs were %.0f%% busy on average (p95 %.0f%%)",
				a->gpu_util_mean, a->gpu_util_p95);
		evidence(v, "gpu_util_mean_pct", a->gpu_util_mean);
		evidence(v, "gpu_util_p95_pct", a->gpu_util_p95);
		evidence(v, "cpu_cores_avg", a->cores_avg);
		if (a->bottleneck == BOTTLENECK_CPU_FEEDING)
			advise(v,
			       "the CPU cannot feed the GPU: ask for more cores per GPU and more "
			       "data-loader workers");
		else
			advise(v,
			       "common causes: data loading on too few cores, small batches, I/O");
		if (a->gpu_util_mean < 20 && !isnan(a->gpu_mem_peak_bytes) &&
		    a->gpu_mem_peak_bytes < 10e9 && a->gpu_mem_total_bytes >= 40e9) {
			gib(b1, sizeof(b1), a->gpu_mem_peak_bytes);
			gib(b2, sizeof(b2), a->gpu_mem_total_bytes);
			v = verdict_add(a, "gpu_too_large", VERDICT_INFO,
					"%.0f%% busy and %s of %s memory: a smaller GPU or a MIG "
					"slice would do",
					a->gpu_util_mean, b1, b2);
			evidence(v, "gpu_util_mean_pct", a->gpu_util_mean);
			evidence(v, "gpu_mem_peak_bytes", a->gpu_mem_peak_bytes);
			evidence(v, "gpu_mem_total_bytes", a->gpu_mem_total_bytes);
			advise(v, "request a smaller GPU model or a MIG slice");
		}
	}
	if (!isnan(a->gpu_throttled_frac) && a->gpu_throttled_frac >= THROTTLED_FRAC) {
		v = verdict_add(a, "gpu_throttled", VERDICT_WARNING,
				"its GPUs slowed themselves (power or thermal) %.0f%% of the time",
				100 * a->gpu_throttled_frac);
		evidence(v, "throttled_frac", a->gpu_throttled_frac);
		advise(v, "not the job's fault: tell the administrators (cooling, power caps)");
	}
}

/*
 * What the SMs did (GPM): the devices' figures over the job's time on its
 * GPUs, judged as utilization is (a shared GPU's work is not scaled down
 * to the job's part, which would make its SMs look idle).
 */
static void verdicts_gpu_activity(struct analysis *a)
{
	const double *act = a->gpu_activity_pct;
	double sm = act[GPU_ACTIVITY_SM], occ = act[GPU_ACTIVITY_SM_OCCUPANCY];
	double tensor = act[GPU_ACTIVITY_TENSOR], dram = act[GPU_ACTIVITY_DRAM];
	double fp16 = act[GPU_ACTIVITY_FP16], pipes = NAN;
	struct verdict *v;

	if (!isnan(a->gpu_util_mean) && a->gpu_util_mean >= SM_IDLE_UTIL_PCT &&
	    ((!isnan(sm) && sm < SM_IDLE_ACTIVE_PCT) ||
	     (!isnan(occ) && occ < SM_IDLE_OCCUPANCY_PCT))) {
		char occ_words[48] = "", sm_words[48] = "";

		if (!isnan(occ))
			snprintf(occ_words, sizeof(occ_words), "occupancy %.0f %%, ", occ);
		if (!isnan(sm))
			snprintf(sm_words, sizeof(sm_words), "SM active %.0f %%, ", sm);
		v = verdict_add(a, "gpu_sm_idle", VERDICT_WARNING,
				"GPU busy but SMs mostly idle (%s%sutilization %.0f %%)", occ_words,
				sm_words, a->gpu_util_mean);
		evidence(v, "gpu_util_mean_pct", a->gpu_util_mean);
		evidence(v, "sm_active_avg_pct", sm);
		evidence(v, "sm_occupancy_avg_pct", occ);
		advise(v, "kernels too small or too few to fill the GPU: larger batches, fused or "
			  "concurrent kernels (CUDA graphs, streams)");
	}
	/* the busiest compute pipe known: tensor, FP64, FP32, FP16 */
	for (int i = 0; i < GPU_ACTIVITY__COUNT; i++)
		if ((i == GPU_ACTIVITY_TENSOR || i == GPU_ACTIVITY_FP64 || i == GPU_ACTIVITY_FP32 ||
		     i == GPU_ACTIVITY_FP16) &&
		    !isnan(act[i]) && (isnan(pipes) || act[i] > pipes))
			pipes = act[i];
	if (isnan(pipes))
		pipes = sm;
	if (!isnan(dram) && dram >= DRAM_BOUND_PCT && !isnan(pipes) &&
	    pipes < DRAM_BOUND_PIPES_PCT) {
		v = verdict_add(a, "gpu_memory_bound", VERDICT_INFO,
				"memory-bandwidth bound: DRAM %.0f %% active, the busiest compute "
				"pipe %.0f %%",
				dram, pipes);
		evidence(v, "dram_active_avg_pct", dram);
		evidence(v, "sm_active_avg_pct", sm);
		evidence(v, "tensor_active_avg_pct", tensor);
		evidence(v, "fp32_active_avg_pct", act[GPU_ACTIVITY_FP32]);
		evidence(v, "fp16_active_avg_pct", fp16);
		advise(v, "more work per byte: fuse kernels, keep data in shared memory, lower "
			  "precision to move fewer bytes");
	}
	if (!isnan(fp16) && fp16 >= FP16_NOTABLE_PCT && !isnan(tensor) &&
	    tensor < TENSOR_UNUSED_PCT) {
		v = verdict_add(a, "gpu_tensor_unused", VERDICT_INFO,
				"tensor cores unused by a job doing FP16/BF16 work (FP16 %.0f %% "
				"active, tensor %.1f %%)",
				fp16, tensor);
		evidence(v, "fp16_active_avg_pct", fp16);
		evidence(v, "tensor_active_avg_pct", tensor);
		advise(v, "use the framework's mixed precision (torch.autocast, cuBLAS/cuDNN "
			  "math modes) and matrix sizes in multiples of 8");
	}
	if (!isnan(a->gpu_throttle_power_max_s) && a->duration_s > 0 &&
	    a->gpu_throttle_power_max_s >= THROTTLE_POWER_FRAC * a->duration_s) {
		v = verdict_add(a, "gpu_power_throttled", VERDICT_WARNING,
				"throttled by power for %.1f s (%.0f %% of the run)",
				a->gpu_throttle_power_max_s,
				100 * a->gpu_throttle_power_max_s / a->duration_s);
		evidence(v, "throttle_power_s", a->gpu_throttle_power_max_s);
		evidence(v, "duration_s", a->duration_s);
		advise(v, "not the job's fault: tell the administrators (power cap, power "
			  "delivery)");
	}
}

static void verdicts_cpu_mem(struct analysis *a, const struct summary *s)
{
	struct verdict *v;
	char b1[32], b2[32];

	if (a->cpu_contended) {
		char waited[128] = "";

		if (!isnan(a->wait_cores_avg))
			snprintf(waited, sizeof(waited),
				 ", and its threads waited for a CPU: %.1f of them on average",
				 a->wait_cores_avg);
		else if (!isnan(a->psi_cpu_some_pct))
			snprintf(waited, sizeof(waited),
				 ", and runnable tasks waited for a CPU %.0f%% of the time",
				 a->psi_cpu_some_pct);
		v = verdict_add(
		    a, "cpu_contended", VERDICT_WARNING,
		    "other work held the node's CPUs: %.0f%% busy, %.1f cores of it not "
		    "this job's%s; it used %.1f of the %.0f cores it could",
		    a->host_cpu_busy_pct, a->other_cores_avg, waited, a->cores_avg,
		    a->cores_reserved);
		evidence(v, "host_cpu_busy_pct", a->host_cpu_busy_pct);
		evidence(v, "wait_cores_avg", a->wait_cores_avg);
		evidence(v, "other_cores_avg", a->other_cores_avg);
		evidence(v, "psi_cpu_some_pct", a->psi_cpu_some_pct);
		evidence(v, "cpu_cores_avg", a->cores_avg);
		advise(v, "profile it again with its cores to itself (an idle node, or cores "
			  "reserved for it) before changing the request: its CPU figures are the "
			  "machine's, not its own");
	}
	if (!isnan(a->cpu_eff_pct) && a->cpu_eff_pct < CPU_LOW_EFF_PCT &&
	    (a->cores_from_reservation || a->cores_reserved > 1)) {
		double want = ceil(fmax(1.0, isnan(a->cores_p95) ? a->cores_avg : a->cores_p95));

		v = verdict_add(a, "cpu_idle",
				a->cpu_eff_pct < 25 && a->cores_from_reservation ? VERDICT_WARNING
										 : VERDICT_INFO,
				"used %.1f of %.0f cores on average (CPU efficiency %.0f%%)",
				a->cores_avg, a->cores_reserved, a->cpu_eff_pct);
		evidence(v, "cpu_cores_avg", a->cores_avg);
		evidence(v, "cpu_cores_p95", a->cores_p95);
		evidence(v, "cores_reserved", a->cores_reserved);
		evidence(v, "cpu_efficiency_pct", a->cpu_eff_pct);
		if (a->cpu_contended)
			advise(v, "none from this run: the CPUs were contended (cpu_contended)");
		else if (a->cores_from_reservation && want < a->cores_reserved)
			advise(v, "request %.0f core%s (--cpus-per-task=%.0f)", want,
			       want == 1 ? "" : "s", want);
		else if ((isnan(a->cores_p95) ? a->cores_avg : a->cores_p95) < 0.5)
			/* not a matter of cores: even one was mostly left idle */
			advise(v,
			       "it was off the CPU most of the time (waiting for I/O, the network, "
			       "a sleep or a lock): fewer or more cores would not change that");
		else if (want <= 1)
			advise(v, "the code runs on one core: make it parallel, or use one core");
	}
	if (!isnan(a->mem_eff_pct) && a->mem_eff_pct < MEM_OVER_PCT) {
		char want[32];

		mem_request(want, sizeof(want), a->mem_peak_bytes, a->mem_reserved_bytes);

		gib(b1, sizeof(b1), a->mem_reserved_bytes);
		gib(b2, sizeof(b2), a->mem_peak_bytes);
		v = verdict_add(
		    a, "mem_over_requested", a->mem_eff_pct < 20 ? VERDICT_WARNING : VERDICT_INFO,
		    "asked for %s of memory, peaked at %s (%.0f%%)", b1, b2, a->mem_eff_pct);
		evidence(v, "mem_reserved_bytes", a->mem_reserved_bytes);
		evidence(v, "mem_peak_bytes", a->mem_peak_bytes);
		evidence(v, "mem_efficiency_pct", a->mem_eff_pct);
		advise(v, "request --mem=%s (the peak plus 25%%)", want);
	} else if (!isnan(a->mem_eff_pct) && a->mem_eff_pct >= MEM_NEAR_LIMIT_PCT) {
		gib(b1, sizeof(b1), a->mem_reserved_bytes);
		gib(b2, sizeof(b2), a->mem_peak_bytes);
		v = verdict_add(a, "mem_near_limit", VERDICT_WARNING,
				"memory peaked at %s, %.0f%% of the %s it asked for", b2,
				a->mem_eff_pct, b1);
		evidence(v, "mem_peak_bytes", a->mem_peak_bytes);
		evidence(v, "mem_reserved_bytes", a->mem_reserved_bytes);
		mem_request(b1, sizeof(b1), a->mem_peak_bytes, a->mem_reserved_bytes);
		advise(v, "request --mem=%s, or reduce its memory use", b1);
	}
	if (s->has_swap && s->swap_peak_bytes > 0 && !isnan(a->features.psi_mem_some_pct) &&
	    a->features.psi_mem_some_pct >= 10) {
		gib(b1, sizeof(b1), (double)s->swap_peak_bytes);
		v = verdict_add(
		    a, "mem_swapping", VERDICT_WARNING,
		    "it swapped (up to %s) and tasks stalled on memory %.0f%% of the time", b1,
		    a->features.psi_mem_some_pct);
		evidence(v, "swap_peak_bytes", (double)s->swap_peak_bytes);
		evidence(v, "psi_mem_some_pct", a->features.psi_mem_some_pct);
		advise(v, "request more memory");
	}
}

static void human_duration(char *buf, size_t size, double s)
{
	if (s < 120)
		snprintf(buf, size, "%.0f s", s);
	else if (s < 7200)
		snprintf(buf, size, "%.0f min", s / 60);
	else if (s < 172800)
		snprintf(buf, size, "%.1f h", s / 3600);
	else
		snprintf(buf, size, "%.1f days", s / 86400);
}

static void verdict_trend(struct analysis *a, const struct memory_trend *t, const char *kind,
			  const char *what)
{
	struct verdict *v;
	char rate[32], when[32], lim[32];

	if (!t->growing)
		return;
	fmt_bytes(rate, sizeof(rate), (uint64_t)(t->slope_bps * 3600));
	if (!isnan(t->time_to_limit_s)) {
		human_duration(when, sizeof(when), t->time_to_limit_s);
		gib(lim, sizeof(lim), t->limit_bytes);
		v = verdict_add(a, kind,
				t->time_to_limit_s < 3600 ? VERDICT_CRITICAL : VERDICT_WARNING,
				"%s grows by %s/h: out of %s (%s) in ~%s at this rate", what, rate,
				what, lim, when);
	} else {
		v = verdict_add(a, kind, VERDICT_INFO, "%s grows steadily by %s/h", what, rate);
	}
	evidence(v, "slope_bytes_per_s", t->slope_bps);
	evidence(v, "r2", t->r2);
	evidence(v, "level_bytes", t->level_bytes);
	evidence(v, "limit_bytes", t->limit_bytes);
	evidence(v, "time_to_limit_s", t->time_to_limit_s);
	advise(v, "look for a leak (a growing cache, tensors kept across iterations), or raise "
		  "the limit");
}

/* What limited the job, in words for a verdict. */
static const char *limit_words(enum bottleneck b)
{
	switch (b) {
	case BOTTLENECK_IDLE:
		return "it hardly did anything";
	case BOTTLENECK_CPU_FEEDING:
		return "data loading on the CPU held the GPUs back";
	case BOTTLENECK_CPU:
		return "the CPU was the limit";
	case BOTTLENECK_IO:
		return "storage I/O was the limit";
	case BOTTLENECK_MEMORY:
		return "memory was the limit";
	case BOTTLENECK_PCIE:
		return "host-GPU transfers (PCIe) were the limit";
	default:
		return bottleneck_name(b);
	}
}

static void verdicts_other(struct analysis *a)
{
	struct verdict *v;

	if (!isnan(a->hog_score) && a->hog_score >= HOG_MIN_EQUIV &&
	    a->node_busy_pct >= HOG_NODE_BUSY_PCT) {
		v = verdict_add(a, "hogging", VERDICT_WARNING,
				"it held %.1f idle cores and %.1f idle GPUs while the rest of the "
				"node was %.0f%% busy",
				isnan(a->idle_cores_avg) ? 0 : a->idle_cores_avg,
				isnan(a->idle_gpus_avg) ? 0 : a->idle_gpus_avg, a->node_busy_pct);
		evidence(v, "idle_cores_avg", a->idle_cores_avg);
		evidence(v, "idle_gpus_avg", a->idle_gpus_avg);
		evidence(v, "node_busy_pct", a->node_busy_pct);
		evidence(v, "hog_score", a->hog_score);
		advise(v, "reserve what the job uses so others can run beside it");
	}
	verdict_trend(a, &a->host_mem, "mem_growing", "memory");
	verdict_trend(a, &a->gpu_mem, "gpu_mem_growing", "GPU memory");
	if (a->bottleneck != BOTTLENECK_UNKNOWN && a->bottleneck != BOTTLENECK_GPU &&
	    a->bottleneck != BOTTLENECK_GPU_THROTTLED) {
		v = verdict_add(a, "bottleneck",
				a->bottleneck == BOTTLENECK_IDLE ? VERDICT_WARNING : VERDICT_INFO,
				"%s: %s", limit_words(a->bottleneck), a->bottleneck_reason);
		evidence(v, "cpu_cores_avg", a->cores_avg);
		evidence(v, "gpu_util_mean_pct", a->features.gpu_util_avg);
		evidence(v, "iowait_pct", a->features.iowait_pct);
		evidence(v, "psi_io_some_pct", a->features.psi_io_some_pct);
		evidence(v, "read_bps", a->features.read_bps_avg);
		evidence(v, "write_bps", a->features.write_bps_avg);
		evidence(v, "mem_peak_frac", a->features.mem_peak_frac);
	}
	if (a->has_period) {
		v = verdict_add(a, "period", VERDICT_INFO,
				"%s repeats every %.2f s (confidence %.2f)%s",
				strcmp(a->period_metric, "gpu_util_pct") == 0 ? "GPU utilization"
				: strcmp(a->period_metric, "cores") == 0      ? "CPU use"
									      : "memory",
				a->period_s, a->period_confidence,
				a->cyclic ? ": a cyclic pattern, like a training loop" : "");
		evidence(v, "period_s", a->period_s);
		evidence(v, "confidence", a->period_confidence);
	}
}

void analysis_run(const struct summary *s, const struct jobseries *js, struct analysis *out)
{
	struct analysis *a = out;
	struct work *w;
	struct verdict *v;

	memset(a, 0, sizeof(*a));
	a->duration_s = summary_duration_s(s);
	a->samples = s->samples > 0 ? (size_t)s->samples : 0;
	/* a job known only by its GPUs (an exporter's, prom/promsrc.h): their readings */
	for (int i = 0; !s->samples && i < s->ngpus; i++)
		if (s->gpus[i].samples > 0 && (size_t)s->gpus[i].samples > a->samples)
			a->samples = (size_t)s->gpus[i].samples;
	a->too_short = a->samples < ANALYSIS_MIN_SAMPLES;
	a->period_s = a->period_confidence = NAN;
	a->gpu_throttle_power_max_s = NAN;
	for (int i = 0; i < GPU_ACTIVITY__COUNT; i++)
		a->gpu_activity_pct[i] = a->gpu_activity_job_pct[i] = NAN;
	for (int i = 0; i < GPU_VIOLATION__COUNT; i++)
		a->gpu_throttle_s[i] = NAN;
	trend_unknown(&a->host_mem);
	trend_unknown(&a->gpu_mem);
	w = malloc(sizeof(*w));
	if (w) {
		figures_cpu_mem(a, s, js, w);
		figures_gpu(a, s, js, w);
		figures_others(s, js, w);
		figures_hogging(a, s, js, w);
		figures_contention(a, s, w);
	} else {
		a->too_short = true; /* cannot even judge: everything stays unknown */
	}
	if (a->too_short || !w) {
		/* the figures above stay; the judgments do not */
		a->bottleneck = BOTTLENECK_UNKNOWN;
		a->job_type = JOB_TYPE_UNKNOWN;
		a->hog_score = NAN;
		snprintf(a->bottleneck_reason, sizeof(a->bottleneck_reason),
			 "too short to judge: %zu samples (at least %d)", a->samples,
			 ANALYSIS_MIN_SAMPLES);
		snprintf(a->job_type_reason, sizeof(a->job_type_reason), "%s",
			 a->bottleneck_reason);
		a->features.period_confidence = NAN;
		v = verdict_add(a, "too_short", VERDICT_INFO,
				"too short to judge its bottleneck, period or trends: %zu %s "
				"over %.1f s (at least %d)",
				a->samples,
				s->origin.kind == SAMPLE_SOURCE_PROMETHEUS ? "points" : "samples",
				a->duration_s, ANALYSIS_MIN_SAMPLES);
		evidence(v, "samples", (double)a->samples);
		evidence(v, "duration_s", a->duration_s);
		/* in the source's own terms: run's option, or report --prometheus's */
		if (s->origin.kind == SAMPLE_SOURCE_PROMETHEUS)
			advise(v, "ask for points closer together (a shorter --step, down to the "
				  "scrape interval) or a longer window (an earlier --since)");
		else
			advise(v, "sample more often (--interval) or profile a longer run");
		figures_scaling(a);
		free(w);
		return;
	}
	figures_period(a, js, w);
	figures_trend(a, s, js, w);
	features_fill(a, s, js, w);
	a->bottleneck =
	    classify_bottleneck(&a->features, a->bottleneck_reason, sizeof(a->bottleneck_reason));
	a->job_type =
	    classify_job_type(&a->features, a->job_type_reason, sizeof(a->job_type_reason));
	figures_scaling(a);
	verdicts_gpu(a);
	verdicts_gpu_activity(a);
	verdicts_cpu_mem(a, s);
	verdicts_other(a);
	/* the most severe first, in the order found otherwise */
	for (size_t i = 1; i < a->nverdicts; i++)
		for (size_t k = i; k > 0 && a->verdicts[k].severity > a->verdicts[k - 1].severity;
		     k--) {
			struct verdict t = a->verdicts[k];

			a->verdicts[k] = a->verdicts[k - 1];
			a->verdicts[k - 1] = t;
		}
	free(w);
}
