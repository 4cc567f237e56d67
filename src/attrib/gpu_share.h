/*
 * gpu_share.h - each job's share of each GPU: the memory and SM
 * utilization of its processes on the device, and its part of the energy
 * the device used over the interval.
 *
 * The device's energy of an interval is its energy counter's delta when
 * both readings have one, else power x time.  It is split among the jobs
 * on the device at this tick by their share of the SM utilization of all
 * the device's processes (others' included), else, when the driver gives
 * no per-process utilization, by their share of its processes' memory.
 * Without either, nobody gets a share: missing, not 0.
 *
 * The accounting is on plain structs: a job's struct job_gpu_use for one
 * device (attrib/jobs.h) and a device's totals.  The functions are pure but
 * for gpu_share_jobs, which walks the live job table.  Not thread-safe.
 */
#ifndef JOBSCOPE_GPU_SHARE_H
#define JOBSCOPE_GPU_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "attrib/jobs.h"
#include "sample/gpu/gpu_set.h"

/* What all the processes on one device use at this tick: the split's denominators. */
struct gpu_share_total {
	double sm_util_pct; /* sum of those that have one */
	double mem_bytes;   /* ... */
};

/*
 * The device's energy between two readings dt_ms apart, mJ; prev NULL when
 * there is no earlier reading.  NAN when it cannot be known.
 */
double gpu_share_energy_delta_mj(const struct gpu_sample *cur, const struct gpu_sample *prev,
				 int64_t dt_ms);

/* A new tick: the job is on the device no more until a process of it is seen. */
void gpu_share_begin(struct job_gpu_use *u);
/*
 * One process on the device: into the device's totals and, when it is a
 * job's (u not NULL), into the job's use.  What the driver does not give
 * for the process stays missing in u.
 */
void gpu_share_add(struct gpu_share_total *tot, struct job_gpu_use *u, const struct gpu_proc *g);
/*
 * The job's part of device_mj, the device's energy over the interval: by SM
 * share, else by memory share.  NAN when the job is not on the device now,
 * when device_mj is NAN, or when the device's processes give neither.
 */
double gpu_share_energy_mj(const struct job_gpu_use *u, const struct gpu_share_total *tot,
			   double device_mj);

/*
 * Every device's processes at this tick (procs, from gpu_set_processes) to
 * the live jobs of t: each job's use of each device (job.gpu[dev]) and
 * its share of the device's energy, device_mj[dev] (NAN: unknown).
 */
void gpu_share_jobs(struct jobs *t, int ndevices, const bool *ok, const struct gpu_set_procs *procs,
		    const double *device_mj);

#endif
