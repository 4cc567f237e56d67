/*
 * appsummary.h - what a job's program said of its own work (app metrics
 * and markers, app/appstat.h), summed up for the reports:
 *
 *   metrics   each metric (name, type, tags) merged over the run: count,
 *             sum, min, max, mean; p50/p95/p99 from the merged sketches
 *             (timers, histograms, distributions); rate per second for
 *             counters (sum over the job's wall time); last for gauges;
 *             distinct for sets (the most members in one tick); and a
 *             timeline of at most APP_TIMELINE_POINTS buckets (counters:
 *             per second, gauges and sets: last, sketches: p50 of the tick;
 *             a bucket the mean of its ticks, widened by halving as the
 *             job grows), sorted by name, type, tags.
 *   phases    marker i to marker i+1 (the last: to the job's end): mean CPU
 *             cores, peak RSS, mean GPU utilization and the energy of the
 *             job's GPUs, and each counter's and sketch metric's figures,
 *             from the job's tick rows.  A tick's rows stand for the
 *             interval that ends at it: (t - interval, t] belongs to the
 *             phase with start < t <= end.
 *   energy    the job's GPU energy (summary: each GPU's job share) and the
 *             host's (RAPL zones of energy_samples over the job's span;
 *             wraps at max_uj counted; only top-level zones, no '/', in the
 *             total, the others are inside them), for energy per unit of
 *             work: joules over a counter's total.
 *
 * Missing values are NAN (has_* false), never 0.  Lifecycle: init (cannot
 * fail), load (0 or -errno: store errors printed; after a failure the
 * summary is as init left it), release.  Not thread-safe.
 */
#ifndef JOBSCOPE_APPSUMMARY_H
#define JOBSCOPE_APPSUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app/appstat.h"
#include "analysis/summary.h"
#include "store/store.h"

#define APP_SUMMARY_MAX_METRICS 1000 /* metrics kept (more: counted in dropped_metrics) */
#define APP_SUMMARY_MAX_PHASES	256  /* phases kept (more: counted in dropped_phases) */
#define APP_TIMELINE_POINTS	512
#define APP_ENERGY_ZONES_MAX	64

struct app_timeline {
	int64_t t0_ms, bucket_ms; /* bucket i covers [t0 + i * bucket, + bucket) */
	size_t n;		  /* buckets in use */
	double sum[APP_TIMELINE_POINTS];
	uint32_t cnt[APP_TIMELINE_POINTS];
};

struct app_metric {
	struct app_point total; /* merged over the run (its name, tags, type) */
	int64_t ticks;		/* ticks with lines */
	double mean;		/* sum / count */
	double p50, p95, p99;	/* sketch types; NAN else */
	double rate_per_s;	/* counters: sum over the wall time; NAN else */
	double last;		/* gauges: the newest value; NAN else */
	double distinct;	/* sets: most members in one tick; NAN else */
	struct app_timeline *tl;
};

/* A metric between two markers (counters and sketch types). */
struct app_phase_metric {
	double count, sum;
	double min, max; /* of the values seen (min > max: none yet) */
	struct app_sketch sk;
};

struct app_phase {
	char name[APP_NAME_MAX];
	int64_t start_ms, end_ms;
	double cores_mean;	 /* CPU seconds per second; NAN without job rows */
	uint64_t rss_peak_bytes; /* valid when has_rss */
	bool has_rss;
	double gpu_util_mean_pct;   /* the job's GPUs; NAN without */
	double gpu_energy_j;	    /* the job's GPUs' counters; NAN without */
	struct app_phase_metric *m; /* one per metric (same index) */
	/* accumulators */
	double cpu_ms, cpu_span_ms, util_sum, util_n, energy_mj;
	bool has_energy;
};

struct app_energy_gpu {
	int index;
	char uuid[GPU_UUID_MAX];
	double energy_j; /* the job's share (summary's job_energy_mj) */
};

struct app_energy_zone {
	char zone[64];
	double energy_j;
	bool top; /* no '/' in its name: counted in the host total */
};

struct app_energy {
	double gpu_j; /* the job's GPUs together; NAN when none has energy */
	struct app_energy_gpu gpus[GPU_MAX_DEVICES];
	int ngpus;
	double host_j; /* top-level RAPL zones; NAN when none */
	struct app_energy_zone zones[APP_ENERGY_ZONES_MAX];
	size_t nzones;
};

struct app_summary {
	bool present; /* any metric or marker stored */
	double wall_s;
	struct app_metric *metrics;
	size_t nmetrics, metrics_alloc;
	uint64_t dropped_metrics;
	struct app_mark *marks;
	size_t nmarks;
	struct app_phase *phases;
	size_t nphases;
	uint64_t dropped_phases;
	struct app_energy energy;
	int64_t interval_ms; /* the tick the counter timelines are per second of */
};

void app_summary_init(struct app_summary *a);
void app_summary_release(struct app_summary *a);
/*
 * The app metrics, markers and energy of the job of s (finished: its GPUs
 * and times are read) from st.  Phases replay the job's rows (only when it
 * has markers).
 */
int app_summary_load(struct app_summary *a, struct store *st, const struct summary *s);
/* j / units: NAN when either is missing or units is not above 0. */
double app_j_per_unit(double j, double units);
/* The metric's timeline: up to APP_TIMELINE_POINTS values (NAN: an empty bucket) into out. */
size_t app_metric_timeline(const struct app_metric *m, double *out);
/* A type's unit, "ms" for timers, else NULL (the program's own). */
const char *app_type_unit(enum app_type t);

#endif
