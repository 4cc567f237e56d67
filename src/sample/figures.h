/*
 * figures.h - every figure made from two readings, defined once (below's
 * Model::new(sample, last)): a host's, a job's and a GPU's figures from a
 * reading, the one before it (NULL: none) and the interval between them
 * in milliseconds.  Each counter grows by its named rule when it goes back
 * (common/counter.h); a figure that cannot be known is NAN, never 0.
 *
 * The rollups (agent/tick.c), the report's summary, job series and app
 * phases (analysis/), the session frames (store/frames.c), gswarm's view
 * (head/gswarm.c) and session export (report/session_gswarm.c), `top`'s
 * job and process CPU (top/source_*.c), the job table's live rates
 * (attrib/jobs.c) and each GPU's energy share (attrib/gpu_share.c) all
 * call these functions; SQL returns the raw counters (a job's processes
 * for `top --head`: store/queries.c).
 *
 * Pure functions on caller-owned structs; no state, no I/O, thread-safe.
 */
#ifndef JOBSCOPE_FIGURES_H
#define JOBSCOPE_FIGURES_H

#include <stdbool.h>
#include <stdint.h>

#include "gpu/gpu.h"
#include "host.h"
#include "sample.h"

/*
 * The counters and gauges of one host reading that figures are made of:
 * small enough to keep as "the reading before", and to fill from a
 * store's row (store/frames.c) as well as from a host_sample.
 */
struct host_reading {
	uint32_t valid;	    /* enum host_valid: HOST_HAS_CPU, _MEM, _LOAD, _DISK, _NET, _PSI_* */
	uint32_t mem_valid; /* enum meminfo_valid: MEMINFO_TOTAL, MEMINFO_AVAILABLE */
	struct cpu_times cpu;
	uint64_t mem_total_bytes;
	uint64_t mem_available_bytes;
	uint32_t load1_milli;
	uint64_t disk_read_bytes;
	uint64_t disk_write_bytes;
	uint64_t net_rx_bytes;
	uint64_t net_tx_bytes;
	bool psi_mem_some_valid;
	bool psi_io_some_valid;
	uint64_t psi_mem_some_us;
	uint64_t psi_io_some_us;
};

void host_reading_of(const struct host_sample *h, struct host_reading *out);

/*
 * A host's figures; NAN where unknown.  The rates need the reading before
 * and interval_ms > 0; the gauges (memory used, load) only the reading.
 */
struct host_figures {
	double cpu_busy_pct;   /* sample/host.h's "CPU busy", 0-100 */
	double cpu_iowait_pct; /* iowait's share of all CPU time, 0-100 */
	double mem_used_bytes; /* total - available */
	double mem_used_pct;   /* mem_used_bytes' share of the total, 0-100 */
	double load1;
	double disk_read_bps; /* COUNTER_RULE_HOST_IO */
	double disk_write_bps;
	double net_rx_bps;
	double net_tx_bps;
	double net_bps;	    /* received and sent: the rate of their sum */
	double psi_mem_pct; /* "some" stall's share of the time, 0-100 (COUNTER_RULE_PSI) */
	double psi_io_pct;
};

void host_figures(const struct host_reading *cur, const struct host_reading *prev,
		  int64_t interval_ms, struct host_figures *out);

/* A process's CPU time: its user + system (its reaped children's not). */
uint64_t proc_cpu_ms(const struct proc_sample *s);

/*
 * A process's CPU in % of one core between two readings of its
 * proc_cpu_ms interval_ms apart (COUNTER_RULE_PROC_CPU: a pid reused, a
 * time that went back, is unknown); NAN where unknown or interval_ms <= 0.
 */
double proc_cpu_pct(uint64_t prev_cpu_ms, uint64_t cpu_ms, int64_t interval_ms);

/*
 * A job's CPU time: its processes' user + system, or its cgroup's when
 * that counts more (exited processes the sampler never saw included).
 */
uint64_t job_cpu_ms(const struct job_sample *s);

/*
 * A job's figures between two of its samples (COUNTER_RULE_JOB); NAN where
 * unknown.  The growth needs the sample before, the rates interval_ms > 0.
 */
struct job_figures {
	double proc_cpu_ms; /* its processes' user + system: the growth */
	double cores;	    /* job_cpu_ms's growth per ms: cores in use */
	double proc_cores;  /* its processes' user + system alone, per ms */
	double wait_cores;  /* threads runnable but waiting for a CPU, in cores (JS_CPU_WAIT) */
	double read_bps;    /* JS_IO */
	double write_bps;
};

void job_figures(const struct job_sample *cur, const struct job_sample *prev, int64_t interval_ms,
		 struct job_figures *out);

/*
 * The GPM activity figures of a GPU reading (gpu.h's enum gpu_prof), in
 * report order: name is the report's stem (JSON "<name>_avg_pct"), label
 * the words a text report prints.
 */
enum gpu_activity {
	GPU_ACTIVITY_SM,
	GPU_ACTIVITY_SM_OCCUPANCY,
	GPU_ACTIVITY_TENSOR,
	GPU_ACTIVITY_DFMA_TENSOR,
	GPU_ACTIVITY_HMMA_TENSOR,
	GPU_ACTIVITY_IMMA_TENSOR,
	GPU_ACTIVITY_DRAM,
	GPU_ACTIVITY_FP64,
	GPU_ACTIVITY_FP32,
	GPU_ACTIVITY_FP16,
	GPU_ACTIVITY_GR,
	GPU_ACTIVITY__COUNT
};

struct gpu_activity_kind {
	uint32_t prof;	   /* its enum gpu_prof bit */
	const char *name;  /* "sm_active" */
	const char *label; /* "SM active" */
};

extern const struct gpu_activity_kind gpu_activity_kinds[GPU_ACTIVITY__COUNT];

/* The reading's figure in percent 0-100; NAN when it does not have it. */
double gpu_activity_pct(const struct gpu_sample *s, enum gpu_activity a);

/* The throttle (violation) reasons with a counter, in report order. */
enum gpu_violation {
	GPU_VIOLATION_POWER,
	GPU_VIOLATION_THERMAL,
	GPU_VIOLATION_SYNC_BOOST,
	GPU_VIOLATION_BOARD_LIMIT,
	GPU_VIOLATION_LOW_UTIL,
	GPU_VIOLATION_RELIABILITY,
	GPU_VIOLATION_APP_CLOCKS,
	GPU_VIOLATION_BASE_CLOCKS,
	GPU_VIOLATION_SW_THERMAL,
	GPU_VIOLATION_HW_THERMAL,
	GPU_VIOLATION_HW_POWER_BRAKE,
	GPU_VIOLATION__COUNT
};

struct gpu_violation_kind {
	uint32_t prof;	   /* its enum gpu_prof bit */
	const char *name;  /* "power": JSON "throttle_power_s" */
	const char *label; /* "power" */
};

extern const struct gpu_violation_kind gpu_violation_kinds[GPU_VIOLATION__COUNT];

/* The reading's cumulative counter in ns (valid or not: check prof_valid). */
uint64_t gpu_violation_ns(const struct gpu_sample *s, enum gpu_violation v);

/*
 * A GPU's figures between two of its samples; NAN where unknown.  NVLink
 * and energy are counters (COUNTER_RULE_GPU_NVLINK, COUNTER_RULE_GPU_ENERGY);
 * the growths need no interval, the rates interval_ms > 0.
 */
struct gpu_figures {
	double nvlink_rx_bytes; /* growth over the interval */
	double nvlink_tx_bytes;
	double nvlink_rx_bps;
	double nvlink_tx_bps;
	double nvlink_bps; /* both ways: the rate of their sum */
	double energy_mj;  /* the energy counter's growth */
	/*
	 * Trapezoids between two gauges over interval_ms > 0, each where
	 * both readings have it: PCIe bytes from the two rates, and energy
	 * from the two powers (the summary's energy where no counter says).
	 */
	double pcie_rx_bytes;
	double pcie_tx_bytes;
	double power_energy_mj;
	/*
	 * The device's energy over the interval as each job's share splits it
	 * (attrib/gpu_share.h): the counter's growth where it grew, else power
	 * now x interval.  Unlike energy_mj, a counter that went back (a driver
	 * reload) is not taken as reset; the summary's total uses energy_mj.
	 */
	double interval_energy_mj;
	/*
	 * What the SMs did over the interval: the later reading's GPM
	 * figures (each is the driver's average over the interval that ended
	 * at it), in percent 0-100; NAN without the reading before (the
	 * first reading says nothing of the time before it) or the figure.
	 */
	double activity_pct[GPU_ACTIVITY__COUNT];
	/*
	 * Seconds the device was held back for each reason in the interval:
	 * the violation counter's growth (COUNTER_RULE_GPU_VIOL: a
	 * counter that went back counts from 0); NAN unless both readings
	 * have it.
	 */
	double throttle_s[GPU_VIOLATION__COUNT];
};

void gpu_figures(const struct gpu_sample *cur, const struct gpu_sample *prev, int64_t interval_ms,
		 struct gpu_figures *out);

#endif
