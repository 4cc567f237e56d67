/*
 * gpu_share.h - each job's share of each GPU: the memory and SM
 * utilization of its processes on the device, and its part of the energy
 * the device used over the interval.
 *
 * The rule (one for the agent's live figures and for job summaries,
 * analysis/summary.c).  The device's energy of the interval (t_prev, t_now]
 * is, live, its energy counter's growth when it grew, else power now x
 * time (sample/figures.h's interval_energy_mj); a summary takes the
 * counter's growth (a reset counted from 0), else the two powers'
 * trapezoid (energy_mj, power_energy_mj; docs/metrics.md says why).  It
 * is split among the processes that gpu_set_processes() gives at t_now, by:
 *   1. SM utilization, when any is above 0.  On NVML it is each process's
 *      share of the driver's utilization samples of that very window
 *      (returned at the t_now call): a process that started, or ended,
 *      between the two readings has its part of the interval;
 *   2. else memory, when any is known (the process lists at t_now; ROCm's
 *      CU occupancy is read at t_now, so ROCm splits by the lists);
 *   3. else all of it to the processes there when they are one part's
 *      (one job's) alone.
 * What is left is never lost silently: an interval with no process on the
 * device is idle energy, one with processes and nothing to split them by
 * is unattributed (struct gpu_share_device).
 *
 * The accounting is on plain structs: a job's struct job_gpu_use for one
 * device (attrib/jobs.h), the totals of a part and of a device.  The
 * functions are pure but for gpu_share_jobs*, which walk the live job
 * table.  Not thread-safe.
 */
#ifndef JOBSCOPE_GPU_SHARE_H
#define JOBSCOPE_GPU_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "attrib/jobs.h"
#include "sample/gpu/gpu_set.h"

/*
 * What some of the processes on one device (a job's, or all of them: the
 * split's denominators) add up to at this tick.
 */
struct gpu_share_total {
	double sm_util_pct; /* sum of those that have one */
	double mem_bytes;   /* ... */
	unsigned nprocs;    /* how many there are, known figures or not */
};

/*
 * A device's energy over the intervals counted, and where it went: always
 * energy_mj = jobs_mj + others_mj + unattributed_mj + idle_mj.
 */
struct gpu_share_device {
	double energy_mj;	/* the device's */
	double jobs_mj;		/* given to jobs */
	double others_mj;	/* given to processes of no job (not in the process table) */
	double unattributed_mj; /* several parts there, nothing to split by */
	double idle_mj;		/* no process there */
};

/*
 * The device's energy between two readings dt_ms apart, mJ; prev NULL when
 * there is no earlier reading.  NAN when it cannot be known.
 * sample/figures.h's interval_energy_mj.
 */
double gpu_share_energy_delta_mj(const struct gpu_sample *cur, const struct gpu_sample *prev,
				 int64_t dt_ms);

/* One process into a part's or a device's totals. */
void gpu_share_total_add(struct gpu_share_total *tot, const struct gpu_proc *g);
/*
 * The part's fraction of the device's energy, in [0, 1], by the rule
 * above: 0 for a part with no process there; NAN when no process is there
 * (idle) or when the part is there with others and nothing to split by
 * (unattributed).
 */
double gpu_share_fraction(const struct gpu_share_total *part, const struct gpu_share_total *all);
/*
 * What job j's processes on device dev add up to at this tick (j is an
 * entry of t), and what all processes there do.
 */
struct gpu_share_total gpu_share_job_part(const struct jobs *t, const struct gpu_set_procs *procs,
					  int dev, const struct job_entry *j);
struct gpu_share_total gpu_share_device_total(const struct gpu_set_procs *procs, int dev);
/*
 * Whether the interval's energy goes to the processes there, by some
 * basis (else it is idle or unattributed); alone: one part has them all.
 */
bool gpu_share_splits(const struct gpu_share_total *all, bool alone);

/* A new tick: the job is on the device no more until a process of it is seen. */
void gpu_share_begin(struct job_gpu_use *u);
/*
 * One process on the device: into the device's totals and, when it is a
 * job's (u not NULL), into the job's use.  What the driver does not give
 * for the process stays missing in u.
 */
void gpu_share_add(struct gpu_share_total *tot, struct job_gpu_use *u, const struct gpu_proc *g);

/*
 * Every device's processes at this tick (procs, from gpu_set_processes) to
 * the live jobs of t: each job's use of each device (job.gpu[dev]) and
 * its share of the device's energy, device_mj[dev] (NAN: unknown).
 */
void gpu_share_jobs(struct jobs *t, int ndevices, const bool *ok, const struct gpu_set_procs *procs,
		    const double *device_mj);
/* ... and where each device's energy went, added to acct[dev] (NULL: not kept). */
void gpu_share_jobs_account(struct jobs *t, int ndevices, const bool *ok,
			    const struct gpu_set_procs *procs, const double *device_mj,
			    struct gpu_share_device *acct);

#endif
