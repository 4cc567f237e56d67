/*
 * classify.c - bottleneck and job type by rules over the job's features
 * (see classify.h).  The thresholds follow what job-efficiency tools tell
 * their users (shared/reference/verdicts.md): a GPU under 40% busy is
 * underused; 90% of the allowed cores is saturated; 20% iowait (or tasks
 * stalled on I/O 30% of the time) is I/O-bound.
 */
#include "analysis/classify.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#define MIN_DURATION_S	  10.0
#define MIN_SAMPLES	  10
#define GPU_LOW_PCT	  40.0
#define GPU_BUSY_PCT	  70.0
#define CORES_SATURATED	  0.9
#define IOWAIT_HIGH_PCT	  20.0
#define THROTTLED_SHARE	  0.2
#define PCIE_HIGH	  0.7
#define PSI_MEM_HIGH_PCT  10.0
#define PSI_IO_HIGH_PCT	  30.0
#define MEM_AT_LIMIT	  0.95
#define PERIODIC	  0.5

const char *bottleneck_name(enum bottleneck b)
{
	static const char *const n[] = {"unknown", "idle", "cpu_feeding_gpu", "cpu", "io",
					"memory",  "pcie", "gpu_throttled",   "gpu"};

	return (size_t)b < sizeof(n) / sizeof(n[0]) ? n[b] : "unknown";
}

const char *job_type_name(enum job_type t)
{
	static const char *const n[] = {"unknown", "idle", "training", "inference", "interactive",
					"batch"};

	return (size_t)t < sizeof(n) / sizeof(n[0]) ? n[t] : "unknown";
}

static bool known(double v)
{
	return !isnan(v);
}

static bool too_short(const struct job_features *f, char *reason, size_t size)
{
	if (f->duration_s >= MIN_DURATION_S && f->samples >= MIN_SAMPLES)
		return false;
	snprintf(reason, size, "too short to judge: %.0f s and %zu samples (at least %.0f s and %d)",
		 f->duration_s, f->samples, MIN_DURATION_S, MIN_SAMPLES);
	return true;
}

static bool saturated(const struct job_features *f)
{
	return f->cores_allowed > 0 &&
	       (f->cores_avg >= CORES_SATURATED * f->cores_allowed ||
		(known(f->cores_saturated_frac) && f->cores_saturated_frac >= 0.5));
}

enum bottleneck classify_bottleneck(const struct job_features *f, char *reason, size_t size)
{
	bool gpu = known(f->gpu_util_avg);

	if (too_short(f, reason, size))
		return BOTTLENECK_UNKNOWN;
	if (f->cores_avg < 0.05 && (!gpu || f->gpu_util_avg < 2)) {
		snprintf(reason, size, "%.2f cores on average%s", f->cores_avg,
			 gpu ? " and its GPUs idle" : "");
		return BOTTLENECK_IDLE;
	}
	if (gpu && known(f->throttled_frac) && f->throttled_frac >= THROTTLED_SHARE) {
		snprintf(reason, size, "its GPUs were throttled %.0f%% of the time",
			 100 * f->throttled_frac);
		return BOTTLENECK_GPU_THROTTLED;
	}
	if ((known(f->swap_bytes_peak) && f->swap_bytes_peak > 0 && known(f->psi_mem_some_pct) &&
	     f->psi_mem_some_pct >= PSI_MEM_HIGH_PCT) ||
	    (known(f->mem_peak_frac) && f->mem_peak_frac >= MEM_AT_LIMIT)) {
		if (known(f->mem_peak_frac) && f->mem_peak_frac >= MEM_AT_LIMIT)
			snprintf(reason, size, "its memory peaked at %.0f%% of its limit",
				 100 * f->mem_peak_frac);
		else
			snprintf(reason, size, "it swapped, and tasks stalled on memory %.0f%% of the time",
				 f->psi_mem_some_pct);
		return BOTTLENECK_MEMORY;
	}
	if (gpu && f->gpu_util_avg < GPU_LOW_PCT && saturated(f)) {
		snprintf(reason, size,
			 "GPU %.0f%% busy while %.1f of its %.0f cores were busy: the CPU cannot "
			 "feed the GPU (data loading); ask for more cores per GPU",
			 f->gpu_util_avg, f->cores_avg, f->cores_allowed);
		return BOTTLENECK_CPU_FEEDING;
	}
	if (((known(f->iowait_pct) && f->iowait_pct >= IOWAIT_HIGH_PCT) ||
	     (known(f->psi_io_some_pct) && f->psi_io_some_pct >= PSI_IO_HIGH_PCT)) &&
	    (!gpu || f->gpu_util_avg < GPU_LOW_PCT) && !saturated(f)) {
		snprintf(reason, size,
			 "waiting on storage: the node's CPUs %.0f%% in iowait, tasks stalled on "
			 "I/O %.0f%% of the time (reading %.1f MB/s, writing %.1f MB/s)",
			 f->iowait_pct, f->psi_io_some_pct, f->read_bps_avg / 1e6,
			 f->write_bps_avg / 1e6);
		return BOTTLENECK_IO;
	}
	if (gpu && known(f->pcie_frac) && f->pcie_frac >= PCIE_HIGH &&
	    f->gpu_util_avg < GPU_BUSY_PCT) {
		snprintf(reason, size, "PCIe %.0f%% of its capacity while the GPU was %.0f%% busy",
			 100 * f->pcie_frac, f->gpu_util_avg);
		return BOTTLENECK_PCIE;
	}
	if (gpu && f->gpu_util_avg >= GPU_BUSY_PCT) {
		snprintf(reason, size, "its GPUs were %.0f%% busy: the GPU is the limit, as it should be",
			 f->gpu_util_avg);
		return BOTTLENECK_GPU;
	}
	if (!gpu && saturated(f)) {
		snprintf(reason, size, "%.1f of its %.0f cores busy (more cores may help if it is "
				       "parallel)",
			 f->cores_avg, f->cores_allowed);
		return BOTTLENECK_CPU;
	}
	if (f->cores_allowed <= 0 && gpu) /* cores unknown (a GPU exporter's job) */
		snprintf(reason, size, "no single limit stands out (GPU partly busy)");
	else
		snprintf(reason, size, "no single limit stands out (%.1f cores of %.0f%s)",
			 f->cores_avg, f->cores_allowed, gpu ? ", GPU partly busy" : "");
	return BOTTLENECK_UNKNOWN;
}

enum job_type classify_job_type(const struct job_features *f, char *reason, size_t size)
{
	bool gpu = known(f->gpu_util_avg);
	bool periodic = known(f->period_confidence) && f->period_confidence >= PERIODIC;
	double busy = known(f->busy_frac) ? f->busy_frac : NAN;

	if (too_short(f, reason, size))
		return JOB_TYPE_UNKNOWN;
	if (f->cores_avg < 0.05 && (!gpu || f->gpu_util_avg < 2)) {
		snprintf(reason, size, "%.2f cores and %s on average", f->cores_avg,
			 gpu ? "idle GPUs" : "no GPU");
		return JOB_TYPE_IDLE;
	}
	if (periodic && ((gpu && f->gpu_util_avg >= 20) || (!gpu && known(busy) && busy >= 0.5))) {
		snprintf(reason, size, "sustained work in a regular cycle (period confidence %.2f)%s",
			 f->period_confidence, gpu ? " on its GPUs" : "");
		return JOB_TYPE_TRAINING;
	}
	if (known(busy) && busy < 0.2) {
		snprintf(reason, size, "busy only %.0f%% of the time, in short bursts", 100 * busy);
		return JOB_TYPE_INTERACTIVE;
	}
	if (gpu && known(f->gpu_util_p95) && f->gpu_util_p95 >= 2 * f->gpu_util_avg &&
	    f->gpu_util_avg < GPU_LOW_PCT && !periodic && known(f->net_bps_avg) &&
	    f->net_bps_avg > 1e4) {
		snprintf(reason, size,
			 "GPU bursts (p95 %.0f%%, mean %.0f%%) without a cycle, with network "
			 "traffic: a service answering requests",
			 f->gpu_util_p95, f->gpu_util_avg);
		return JOB_TYPE_INFERENCE;
	}
	snprintf(reason, size, "sustained work without a regular cycle (%.1f cores%s)",
		 f->cores_avg, gpu ? ", GPUs" : "");
	return JOB_TYPE_BATCH;
}
