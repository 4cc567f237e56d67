/*
 * verdicts.h - what a job's numbers mean: efficiency against what it
 * reserved, scaling hints, hogging, its bottleneck, its period, memory
 * trends with a forecast, its type, and the verdicts people act on.
 *
 * analysis_run() reads a finished summary and job series (it keeps no
 * pointer to them) and fills a struct analysis; every figure that cannot
 * be judged (data too short, metric missing) is NAN / false, and the
 * verdicts say so in words rather than guessing.  Every verdict carries
 * the evidence it rests on (named numbers with units) and the next step.
 * Pure computation: no I/O, no allocation, thread-safe.
 */
#ifndef JOBSCOPE_ANALYSIS_H
#define JOBSCOPE_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/classify.h"
#include "analysis/jobseries.h"
#include "analysis/summary.h"

/* Fewer samples than this, or a shorter job: "too short to judge". */
#define ANALYSIS_MIN_SAMPLES 10

enum verdict_severity { VERDICT_INFO, VERDICT_WARNING, VERDICT_CRITICAL };

#define VERDICT_EVIDENCE_MAX 8
struct verdict_evidence {
	const char *name; /* "gpu_util_mean_pct": a static string */
	double value;	  /* NAN: unknown (written null) */
};

struct verdict {
	const char *kind; /* "gpu_unused", "mem_over_requested", ...: static */
	enum verdict_severity severity;
	char message[256]; /* what was found, in plain words, with the numbers */
	char advice[256];  /* the next step ("request --mem=4G next time"); "" if none */
	size_t nevidence;
	struct verdict_evidence evidence[VERDICT_EVIDENCE_MAX];
};

/* A memory trend: host (the job's RSS) or one GPU's memory. */
struct memory_trend {
	bool valid;
	double slope_bps;	/* bytes per second, robust (Theil-Sen) */
	double r2;		/* of the line, 0..1 */
	double level_bytes;	/* Holt's level at the end */
	double limit_bytes;	/* what it runs out of; NAN: no known limit */
	double time_to_limit_s; /* NAN: not heading there */
	bool growing;		/* a steady rise: slope clearly above noise */
};

#define ANALYSIS_VERDICTS_MAX 28

struct analysis {
	bool too_short; /* fewer than ANALYSIS_MIN_SAMPLES samples */
	double duration_s;
	size_t samples;

	/* CPU efficiency */
	double cores_avg, cores_p95;
	double cores_reserved; /* reserved, else the affinity mask; NAN: unknown */
	bool cores_from_reservation;
	double cpu_eff_pct; /* cores_avg / cores_reserved * 100 */
	/* memory */
	double mem_peak_bytes;
	double mem_reserved_bytes; /* NAN: nothing reserved */
	double mem_eff_pct;
	/* GPUs */
	int gpus_on_node;
	int gpus_reserved;		    /* -1: unknown */
	int gpus_touched;		    /* a process of the job was on it */
	int gpus_busy;			    /* touched and more than 5% busy on average */
	double gpu_util_mean, gpu_util_p95; /* over the job's GPUs */
	double gpu_mem_peak_bytes, gpu_mem_total_bytes;
	double gpu_throttled_frac;
	/*
	 * What the SMs did on the job's GPUs together, over its time on them
	 * (summary_gpus_activity_pct), percent: the devices' figures (what
	 * the verdicts judge, as utilization is the device's) and the job's
	 * part of them on shared GPUs; throttle seconds per reason summed
	 * over its GPUs, and the most of any one GPU for power.  NAN: unknown.
	 */
	double gpu_activity_pct[GPU_ACTIVITY__COUNT];
	double gpu_activity_job_pct[GPU_ACTIVITY__COUNT];
	double gpu_throttle_s[GPU_VIOLATION__COUNT];
	double gpu_throttle_power_max_s;

	/* scaling: how much of what it had it kept busy */
	double cores_busy_frac; /* share of the time it used >= 90% of its cores */
	double gpus_busy_avg;	/* GPUs > 5% busy, mean over time */
	char scaling_cpu[256];	/* "more cores would not help: ..." */
	char scaling_gpu[256];

	/* hogging: reserved but idle, weighted by how busy the node was */
	double idle_cores_avg; /* reserved - used */
	double idle_gpus_avg;
	double node_busy_pct; /* the node's CPU busy share, the job's own use excluded */
	double hog_score;     /* idle core- and GPU-equivalents x node busy share */

	/*
	 * contention: the node's CPUs held by other work while the job could
	 * have used more (then its CPU figures are the machine's, not its own,
	 * and no advice is drawn from them)
	 */
	double host_cpu_busy_pct; /* the node's CPUs busy, 0-100, the job's own use included */
	double other_cores_avg;	  /* cores busy with other work than the job's */
	double psi_cpu_some_pct;  /* share of the time a runnable task waited for a CPU; NAN */
	double wait_cores_avg;	  /* the job's own threads waiting for a CPU, on average; NAN */
	bool cpu_contended;

	/* period and trend */
	bool has_period;
	double period_s, period_confidence;
	const char *period_metric; /* "gpu_util_pct", "cores" or "rss_bytes" */
	bool cyclic;		   /* Alnair's "cyclic pattern": confidence >= 0.5 */
	struct memory_trend host_mem, gpu_mem;

	/* classes */
	struct job_features features;
	enum bottleneck bottleneck;
	char bottleneck_reason[256];
	enum job_type job_type;
	char job_type_reason[256];

	size_t nverdicts;
	struct verdict verdicts[ANALYSIS_VERDICTS_MAX];
};

/* s and js finished; never fails (what cannot be judged is left NAN). */
void analysis_run(const struct summary *s, const struct jobseries *js, struct analysis *out);
const char *verdict_severity_name(enum verdict_severity s);
/* The inverse of verdict_severity_name; VERDICT_INFO for anything else. */
enum verdict_severity verdict_severity_parse(const char *name);
/*
 * Whether a judged trend is steady enough to quote its rate: its line
 * explains enough of the series (r2 >= the threshold `growing` uses) and
 * is not flat.  Every renderer asks this one question; when it is false
 * they say "no steady trend" and no rate.
 */
bool memory_trend_steady(const struct memory_trend *t);

#endif
