/*
 * jobseries.h - a job's time series, for the analysis and the charts.
 *
 * Fed through the same calls as the summary (live by `jobscope run`,
 * replayed from the store by `jobscope report`), it keeps two views of
 * each metric, both bounded whatever the length of the job:
 *   - the overview: at most JS_POINTS buckets over the whole job, each the
 *     mean of the samples in it; a bucket is one interval wide at first and
 *     doubles in width (neighbours merged) each time the job outgrows them;
 *   - the detail: the last JS_RING ticks at full resolution, for the
 *     period of training loops (which buckets of minutes would hide).
 * The sampling interval may change while a job runs (an agent under a
 * head's profiling session, told by `interval` events): the overview's
 * buckets are then widened to at least the new interval, and the detail
 * keeps only the ticks taken at the interval in effect.
 * Values are derived per tick: rates from counter deltas, shares from
 * /proc/stat deltas.  A value that could not be derived is NAN, never 0.
 *
 * GPUs: per device (the first JS_MAX_GPUS devices seen, in the order the
 * summary numbers them); jobseries_finish() averages the job's devices
 * (those a process of the job was on; all of them when the driver gave no
 * process lists) into the JSG_* "job" aggregates.
 *
 * Lifecycle: jobseries_init, jobseries_add_*, jobseries_finish; readers
 * after; jobseries_release frees.  Adding returns 0 or -ENOMEM.  Not
 * thread-safe.
 */
#ifndef JOBSCOPE_JOBSERIES_H
#define JOBSCOPE_JOBSERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sample/gpu/gpu.h"
#include "sample/host.h"
#include "sample/sample.h"
#include "store/store.h"

#define JS_POINTS   1024
#define JS_RING	    4096
#define JS_MAX_GPUS 16

/* Host and job metrics. */
enum js_metric {
	JSM_CORES,	     /* CPU cores the job used (cpu seconds per second) */
	JSM_RSS_BYTES,	     /* the job's resident memory */
	JSM_SWAP_BYTES,	     /* the job's swap */
	JSM_READ_BPS,	     /* the job's storage reads, bytes/s */
	JSM_WRITE_BPS,	     /* the job's storage writes, bytes/s */
	JSM_HOST_CPU_PCT,    /* the node's CPUs busy, 0-100 */
	JSM_HOST_IOWAIT_PCT, /* the node's CPU time in iowait, 0-100 */
	JSM_HOST_MEM_USED_BYTES, /* the node's memory in use (total - available) */
	JSM_PSI_MEM_PCT,     /* share of time some task stalled on memory, 0-100 */
	JSM_PSI_IO_PCT,	     /* share of time some task stalled on I/O, 0-100 */
	JSM_HOST_NET_BPS,    /* the node's network traffic, rx + tx, bytes/s */
	JSM_GPU_UTIL_PCT,    /* mean over the job's GPUs, 0-100 (after finish) */
	JSM_GPU_MEM_BYTES,   /* sum of device memory used over the job's GPUs */
	JSM_GPU_POWER_W,     /* sum over the job's GPUs */
	JSM_GPU_PCIE_BPS,    /* rx + tx, sum over the job's GPUs */
	JSM_GPU_NVLINK_BPS,  /* rx + tx, sum over the job's GPUs */
	JSM_GPU_THROTTLED,   /* share of the job's GPUs with a throttle reason, 0-1 */
	JSM_GPUS_BUSY,	     /* the job's GPUs more than 5% busy */
	JSM__COUNT
};

/* Per device. */
enum js_gpu_metric {
	JSG_UTIL_PCT,
	JSG_MEM_BYTES,
	JSG_POWER_W,
	JSG_PCIE_BPS,
	JSG_NVLINK_BPS,
	JSG_THROTTLED, /* 1 slowed down (power, thermal: GPU_THROTTLE_SLOWDOWN), 0 not */
	/* what the SMs did (GPM), percent 0-100 over the interval that ended at the reading */
	JSG_SM_ACTIVE_PCT,
	JSG_SM_OCCUPANCY_PCT,
	JSG_TENSOR_ACTIVE_PCT,
	JSG_DRAM_ACTIVE_PCT,
	/* the share of the interval held back by power (violation counter), percent 0-100 */
	JSG_THROTTLE_POWER_PCT,
	JSG__COUNT
};

struct js_track {
	double sum[JS_POINTS];
	uint32_t n[JS_POINTS];
	double ring[JS_RING];
};

struct js_gpu {
	char uuid[GPU_UUID_MAX];
	int index;
	bool job; /* set by finish: counted in the JSM_GPU_* aggregates */
	uint64_t mem_total_bytes; /* 0: unknown */
	bool has_last_nvlink;
	int64_t last_nvlink_ms;
	uint64_t last_nvlink_bytes;
	bool has_last_viol;
	int64_t last_viol_ms;
	uint64_t last_viol_power_ns;
	struct js_track t[JSG__COUNT];
};

struct jobseries {
	int64_t interval_ms;	   /* the sampling interval in effect (the detail's step) */
	int64_t interval_since_ms; /* the tick it took effect after; INT64_MIN: from the start */
	int64_t t0_ms;	     /* the overview's origin: the first sample */
	bool has_t0;
	int64_t bucket_ms;   /* overview bucket width */
	size_t npoints;	     /* overview buckets in use */
	/* detail ring: slots by tick time, the newest at ring_head - 1 */
	size_t ring_len;     /* slots filled, <= JS_RING */
	size_t ring_head;    /* next slot to write */
	int64_t ring_last_ms; /* time of the newest slot */
	int64_t ring_ts[JS_RING];
	/*
	 * Each overview bucket's first and last tick, as ms after t0_ms plus 1
	 * (0: no tick in it): a bucket a late tick left empty between two that
	 * got two is told from one a lost tick left empty (jobseries_overview).
	 */
	int64_t tick_first[JS_POINTS], tick_last[JS_POINTS];
	struct js_track *m[JSM__COUNT]; /* allocated by init's first add */
	int ngpus;
	struct js_gpu *gpu[JS_MAX_GPUS];
	/* previous samples for deltas */
	bool has_prev_job, has_prev_host;
	int64_t prev_job_ms, prev_host_ms;
	struct job_sample prev_job;
	struct cpu_times prev_cpu;
	uint64_t prev_psi_mem_us, prev_psi_io_us, prev_net_bytes;
	uint32_t prev_host_valid;
	bool finished;
};

void jobseries_init(struct jobseries *js, int64_t interval_ms);
void jobseries_release(struct jobseries *js);
/*
 * The ticks after ts_ms come interval_ms apart (1 ms to STORE_INTERVAL_MAX_MS;
 * other values are ignored).  Calls come in time order with the adds.
 */
void jobseries_set_interval(struct jobseries *js, int64_t ts_ms, int64_t interval_ms);
int jobseries_add_host(struct jobseries *js, int64_t ts_ms, const struct host_sample *h);
int jobseries_add_job(struct jobseries *js, int64_t ts_ms, const struct job_sample *j);
int jobseries_add_gpu(struct jobseries *js, const struct device_record *dev, int64_t ts_ms,
		      const struct gpu_sample *g);
/*
 * A series restored from a checkpoint takes a device's row as it is now
 * (its index, its memory), as a whole replay would have at first sight.
 */
void jobseries_refresh_device(struct jobseries *js, const struct device_record *dev);
/*
 * Computes the JSM_GPU_* aggregates over the devices marked in job_gpus
 * (uuids; NULL or none: every device).  Call once, after the last add.
 */
void jobseries_finish(struct jobseries *js, const char *const *job_gpus, size_t njob_gpus);

/*
 * The overview of a metric: npoints values (NAN for an empty bucket) into
 * out, which has room for JS_POINTS; returns the count.  Bucket i covers
 * [t0_ms + i * bucket_ms, + bucket_ms).  gpu: -1 for a JSM_* metric, else
 * the device's slot and a JSG_* metric.  A bucket is NAN only when the
 * data has a gap there: one that no tick fell into because its neighbours
 * got two (ticks ~1 interval apart, jittered: 925 and 1068 ms) takes the
 * mean of its neighbours; one left by a lost tick (1.5 intervals or more
 * between the ticks around it), a stopped agent or a missing value stays
 * NAN.
 */
size_t jobseries_overview(const struct jobseries *js, int gpu, int metric, double *out);
/*
 * The detail: the last ticks at full resolution, oldest first, into out
 * (room for JS_RING): those taken at the interval in effect, interval_ms
 * apart (after interval_since_ms); *t_first_ms: the time of the first.
 * Returns the count.
 */
size_t jobseries_detail(const struct jobseries *js, int gpu, int metric, double *out,
			int64_t *t_first_ms);
/* Whether a metric has any value at all. */
bool jobseries_has(const struct jobseries *js, int gpu, int metric);
const char *jobseries_metric_name(int metric);	  /* JSM_*: "cores", ... */
const char *jobseries_gpu_metric_name(int metric); /* JSG_*: "util_pct", ... */

#endif
