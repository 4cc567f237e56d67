/*
 * summary.h - what a run report says, accumulated from samples.
 *
 * The same summary is fed live by `jobscope run` (every tick) and replayed
 * from the store by `jobscope report` (report/jobreport.h), through the
 * same calls in the same order, so both print the same report.  It keeps streaming statistics
 * (peaks, first/last values, a timeline of at most SUMMARY_BUCKETS buckets
 * that halves its resolution as the run grows) and one entry per process,
 * so memory does not grow with the length of a run.
 *
 * Units: ms since the epoch for times, bytes, CPU ms.  `valid` style flags
 * say what is missing.  Lifecycle: summary_init (cannot fail),
 * summary_add_*, summary_finish, then the renderers; summary_release frees.
 * Adding returns 0 or -ENOMEM.  Not thread-safe.
 */
#ifndef JOBSCOPE_SUMMARY_H
#define JOBSCOPE_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>

#include "attrib/gpu_share.h"
#include "sample/figures.h"
#include "sample/host.h"
#include "sample/sample.h"
#include "store/store.h"
#include "store/jobdata.h"
#include "store/write.h"

/* Times after this (ms since the epoch, about the year 3084) are a corrupt store's. */
#define JOB_REPORT_MAX_MS ((int64_t)1 << 45)

#define SUMMARY_BUCKETS 60
/* Peaks are averages over windows at least this long (or one interval). */
#define SUMMARY_PEAK_WINDOW_MS 500

struct summary_bucket {
	int64_t start_ms;
	int64_t span_ms;  /* time covered by samples in the bucket */
	uint64_t cpu_ms;  /* CPU used over span_ms */
	uint64_t rss_max; /* largest tree RSS seen in the bucket */
	bool used;
};

/*
 * One GPU over the run.  The device's energy is split between the job and
 * the other processes on it interval by interval, by the rule of
 * attrib/gpu_share.h: SM utilization share (on NVML, of the window's
 * samples), else memory share, else all of it to the job alone there.
 * energy_mj = job_energy_mj + others_mj + unattributed_mj + idle_mj.
 */
struct gpu_summary {
	struct device_record dev;
	bool used; /* a process of the job was on it */
	int64_t samples;
	uint64_t util_hist[101]; /* samples per utilization %: exact percentiles */
	int64_t util_n;
	uint64_t util_sum;
	uint64_t mem_used_peak_bytes;
	bool has_mem;
	double pcie_rx_bytes, pcie_tx_bytes; /* rates integrated over time */
	bool has_pcie;
	uint64_t nvlink_rx_bytes, nvlink_tx_bytes; /* counter deltas */
	bool has_nvlink;
	double energy_mj;	/* the device's, over the run */
	double job_energy_mj;	/* the job's share */
	double unattributed_mj; /* shared with others, no utilization nor memory to split by */
	double others_mj;	/* the other processes' shares */
	double idle_mj;		/* no process on the device */
	bool has_energy;
	int64_t energy_span_ms; /* time the energy figures cover */
	int64_t throttle_n, throttled;
	uint64_t ecc_corrected_first, ecc_corrected_last;
	uint64_t ecc_uncorrected_first, ecc_uncorrected_last;
	bool has_ecc;
	int64_t temp_max_c;
	bool has_temp;
	/*
	 * utilization per timeline bucket (the summary's buckets, halved with
	 * them), weighted by time: a reading holds for the interval that ended
	 * at it, spread over the buckets that interval covers, so a tick that
	 * came late leaves no bucket without a value the GPU had
	 */
	double bucket_util_pct_ms[SUMMARY_BUCKETS];
	int64_t bucket_util_ms[SUMMARY_BUCKETS];
	int64_t util_last_ms; /* the last reading with a utilization; 0: none */
	/* the last sample, and the interval that ended there waiting for its shares */
	bool has_last;
	int64_t last_ms;
	struct gpu_sample last;
	bool pending;
	double pending_mj;
	/*
	 * pending is the interval that ends at the first reading: its part
	 * since the job's processes there started (at most max_ms), at the
	 * reading's power and PCIe rates: the reading before is not the job's
	 */
	bool pending_first;
	double first_power_mw;
	int64_t first_max_ms;
	int64_t job_proc_start_ms; /* the earliest of the job's processes there; 0: none */
	struct gpu_share_total job_part, all_part; /* the processes at that reading */
	/*
	 * What the SMs did (sample/figures.h's enum gpu_activity), over the
	 * intervals the job was on the device (a process of it at the reading
	 * that ends the interval; the first reading ends none): the device's
	 * percent x ms and the ms they cover, and the job's part, the
	 * device's figure x the job's share of the interval by the energy's
	 * rule (gpu_share_fraction), over the ms where that share is known.
	 * A MIG instance is a device of its own: its figures are its own.
	 */
	double act_dev_pct_ms[GPU_ACTIVITY__COUNT];
	int64_t act_dev_ms[GPU_ACTIVITY__COUNT];
	double act_job_pct_ms[GPU_ACTIVITY__COUNT];
	int64_t act_job_ms[GPU_ACTIVITY__COUNT];
	/* the interval that ended at the last reading, waiting for its shares */
	bool act_pending;
	int64_t act_pending_ms;
	double act_pending_pct[GPU_ACTIVITY__COUNT]; /* NAN: not in that reading */
	/*
	 * Throttle (violation) seconds per reason (enum gpu_violation) over
	 * every interval between the device's readings: the device's, not
	 * split (a throttled device is slow for every job on it).
	 */
	double throttle_s[GPU_VIOLATION__COUNT];
	uint32_t throttle_known; /* bit v: throttle_s[v] has an interval */
};

struct proc_summary {
	int32_t pid;
	int32_t ppid;
	int64_t start_ms;
	int64_t end_ms; /* 0: still running when the report was made */
	char comm[PROC_COMM_MAX];
	char *cmdline;
	uint64_t user_ms;
	uint64_t system_ms;
	uint64_t rss_peak_bytes; /* max of sampled RSS and the kernel's high-water mark */
	bool has_rss;
	uint64_t swap_peak_bytes;
	bool has_swap;
	uint64_t read_bytes;
	uint64_t write_bytes;
	bool has_io;
	uint32_t threads_peak;
	uint64_t gpu_mem_peak_bytes;
	bool has_gpu_mem;
	uint64_t gpu_util_sum;
	int64_t gpu_util_n;
};

/* Host-wide values kept from the first and last host samples. */
struct host_point {
	int64_t ts_ms;
	uint32_t valid; /* enum host_valid */
	struct cpu_times cpu;
	int ncpus;
	uint64_t mem_total_bytes;
	uint64_t mem_available_bytes;
	uint64_t disk_read_bytes, disk_write_bytes;
	uint64_t net_rx_bytes, net_tx_bytes, net_rx_packets, net_tx_packets;
	uint64_t psi_cpu_some_us, psi_mem_some_us, psi_mem_full_us, psi_io_some_us, psi_io_full_us;
};

/*
 * Where the samples came from, so that a report speaks its source's terms
 * (its options, its metrics' names) and never another's: jobscope's own
 * sampler (a store, a run; all zero), or series read from Prometheus
 * (prom/promsrc.h), which also says how it chose the step between points
 * and where the I/O figures came from (or why there are none).
 */
enum sample_source { SAMPLE_SOURCE_JOBSCOPE, SAMPLE_SOURCE_PROMETHEUS };

struct summary_origin {
	enum sample_source kind;
	char step_why[160]; /* "the scrape interval, from the samples' timestamps" */
	char io_from[320];  /* "node_exporter's node_disk_..._bytes_total of vda", or why none */
};

struct summary {
	struct job_record job;
	struct summary_origin origin; /* set by the source after summary_init */
	/*
	 * The sampling interval in effect (0: unknown): the job's, then what
	 * each `interval` event said (an agent under a head's profiling
	 * session).  Gaps, short last intervals and the peak window are judged
	 * by it, never by the job's configured interval.
	 */
	int64_t interval_ms;

	/* job samples */
	int64_t samples;
	int64_t first_ms, last_ms;
	int64_t prev_last_ms; /* the sample before the last */
	struct job_sample last;
	double cores_peak;
	int64_t cores_peak_at_ms;
	uint64_t rss_peak_bytes;
	int64_t rss_peak_at_ms;
	uint64_t swap_peak_bytes;
	bool has_swap;
	/* the job's cgroup (agent jobs) */
	uint64_t cg_mem_peak_bytes;
	bool has_cg_mem_peak;
	uint64_t cg_cpu_ms;
	bool has_cg_cpu;
	/* its threads' run-queue wait (cumulative), at the first and last rows that had it */
	uint64_t cpu_wait_first_ms, cpu_wait_last_ms;
	int64_t cpu_wait_first_ts, cpu_wait_last_ts;
	bool has_cpu_wait;
	double read_peak_bps, write_peak_bps;
	bool has_io;
	/* the open peak window */
	int64_t win_start_ms;
	struct job_sample win_start;

	int64_t bucket_ms; /* width of one timeline bucket */
	struct summary_bucket buckets[SUMMARY_BUCKETS];

	/* host samples */
	int64_t host_samples;
	struct host_point host_first, host_last;
	uint64_t host_mem_available_min;
	uint32_t host_load1_max_milli;

	/* processes: open addressing on (pid, start) */
	struct proc_summary *procs;
	size_t nprocs, procs_alloc;
	int32_t *proc_index;
	size_t proc_index_size;
	uint64_t hwm_peak_bytes; /* largest single-process RSS high-water mark */
	int64_t hwm_peak_at_ms;

	struct event_record *events;
	size_t nevents, events_alloc;
	uint64_t events_dropped;

	int ngpus;
	struct gpu_summary *gpus; /* GPU_MAX_DEVICES, allocated with the first GPU */
	bool gpu_procs_known;	  /* some device gave process lists */

	/* frameworks and libraries its processes loaded (summary_load_libs; not checkpointed) */
	struct store_proc_lib *libs;
	size_t nlibs;
};

void summary_init(struct summary *s, const struct job_record *job);
void summary_release(struct summary *s);
int summary_add_host(struct summary *s, int64_t ts_ms, const struct host_sample *h);
int summary_add_job(struct summary *s, int64_t ts_ms, const struct job_sample *j);
int summary_add_proc(struct summary *s, const struct proc_info *p, int64_t ts_ms,
		     const struct proc_sample *ps);
/*
 * An event of the job.  One of kind `interval` (store/tick.h) also sets the
 * interval the samples after it are judged by (summary_set_interval), and
 * is listed only when it changes it within the job.
 */
int summary_add_event(struct summary *s, const struct event_record *e);
/*
 * The samples added from now on come interval_ms apart (1 ms to
 * STORE_INTERVAL_MAX_MS; other values are ignored).  The timeline's buckets
 * widen to at least one interval when the next sample comes, so a longer
 * interval leaves no empty bucket between samples.
 */
void summary_set_interval(struct summary *s, int64_t interval_ms);
/* A GPU sample, then the processes on that GPU at the same time (p NULL: not the job's). */
int summary_add_gpu(struct summary *s, const struct device_record *dev, int64_t ts_ms,
		    const struct gpu_sample *g);
int summary_add_gpu_proc(struct summary *s, const struct device_record *dev,
			 const struct proc_info *p, int64_t ts_ms, const struct gpu_proc *g);
/*
 * After summary_add_gpu: the device was the job's alone at that reading,
 * as an exporter that maps whole devices to a job or pod says
 * (prom/promsrc.h), without process lists: the job used it, and the
 * interval's energy is the job's.
 */
int summary_add_gpu_alone(struct summary *s, const struct device_record *dev);
/*
 * For a summary restored from a checkpoint (analysis/reportckpt.h):
 * summary_index_procs rebuilds the process index over procs[0..nprocs);
 * summary_refresh_proc sets what a process's samples take from its procs
 * row (parent, name, command line, end) to that row as it is now, as a
 * whole replay would have set it (a process not in the summary is left
 * out); summary_refresh_device does the same for a GPU's device row.
 */
int summary_index_procs(struct summary *s);
int summary_refresh_proc(struct summary *s, const struct proc_info *p);
void summary_refresh_device(struct summary *s, const struct device_record *dev);
/*
 * A GPU's time-weighted average of an activity over the job's time on it,
 * percent 0-100: the job's part (job true) or the device's; NAN without
 * an interval that has it.
 */
double summary_gpu_activity_pct(const struct gpu_summary *g, enum gpu_activity a, bool job);
/* Throttle seconds for reason v on the GPU; NAN when no interval had the counter. */
double summary_gpu_throttle_s(const struct gpu_summary *g, enum gpu_violation v);
/*
 * The same over the job's GPUs together (those it used): activity weighted
 * by each GPU's time, throttle seconds summed (GPU-seconds); NAN: none.
 */
double summary_gpus_activity_pct(const struct summary *s, enum gpu_activity a, bool job);
double summary_gpus_throttle_s(const struct summary *s, enum gpu_violation v);
/* The utilization percentile (0-100) of a GPU; -1 without samples. */
int summary_gpu_util_pct(const struct gpu_summary *g, double pct);
/* Takes the final job record (end, exit status, counts). */
void summary_finish(struct summary *s, const struct job_record *job);
/*
 * The job's frameworks and libraries as the store holds them (proc_libs,
 * store_get_job_libs), replacing those s had: 0 or the store's -errno.
 */
int summary_load_libs(struct summary *s, struct store *st);

/* Derived figures, with the rules the report documents. */
double summary_cpu_seconds(const struct summary *s);
double summary_duration_s(const struct summary *s);
/* cpu seconds / wall seconds; NAN when the run lasted 0 ms or has no job sample */
double summary_cores_avg(const struct summary *s);
/* cores_avg / cores_allowed * 100; NAN when unknown */
double summary_efficiency_pct(const struct summary *s);
/* max(tree RSS at a tick, any process's high-water mark) */
uint64_t summary_rss_peak(const struct summary *s, int64_t *at_ms);
/* The figures job_summaries keeps (report_json left NULL). */
void summary_to_record(const struct summary *s, struct job_summary_record *out);
/* Memory peak / reserved memory in %, NAN when nothing was reserved. */
double summary_mem_efficiency_pct(const struct summary *s);
/* host CPU busy share between first and last host sample, 0-100; NAN if unknown */
double summary_host_cpu_util_pct(const struct summary *s);
/* Processes sorted by CPU time, biggest first (pointers into s). */
size_t summary_procs_by_cpu(const struct summary *s, const struct proc_summary **out, size_t max);

#endif
