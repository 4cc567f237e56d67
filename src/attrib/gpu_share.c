/*
 * gpu_share.c - each job's share of each GPU: memory, SM utilization and
 * the energy of the interval, split by SM share, else by memory share.
 * See gpu_share.h.
 */
#include "gpu_share.h"

#include <math.h>

double gpu_share_energy_delta_mj(const struct gpu_sample *cur, const struct gpu_sample *prev,
				 int64_t dt_ms)
{
	if (!prev)
		return NAN;
	if ((cur->valid & GPU_ENERGY) && (prev->valid & GPU_ENERGY) &&
	    cur->energy_mj >= prev->energy_mj)
		return (double)(cur->energy_mj - prev->energy_mj);
	if (cur->valid & GPU_POWER)
		return cur->power_mw * (double)dt_ms / 1000.0;
	return NAN;
}

void gpu_share_begin(struct job_gpu_use *u)
{
	u->now = false;
	u->mem_bytes = 0;
	u->sm_util_pct = 0;
	u->has_mem = u->has_util = false;
}

void gpu_share_add(struct gpu_share_total *tot, struct job_gpu_use *u, const struct gpu_proc *g)
{
	tot->sm_util_pct += g->valid & GPU_PROC_UTIL ? g->sm_util_pct : 0;
	tot->mem_bytes += g->valid & GPU_PROC_MEM ? (double)g->mem_bytes : 0;
	if (!u)
		return;
	u->used = u->now = true;
	if (g->valid & GPU_PROC_MEM) {
		u->mem_bytes += g->mem_bytes;
		u->has_mem = true;
	}
	if (g->valid & GPU_PROC_UTIL) {
		u->sm_util_pct += g->sm_util_pct;
		u->has_util = true;
	}
}

double gpu_share_energy_mj(const struct job_gpu_use *u, const struct gpu_share_total *tot,
			   double device_mj)
{
	if (!u->now || isnan(device_mj))
		return NAN;
	if (tot->sm_util_pct > 0)
		return device_mj * u->sm_util_pct / tot->sm_util_pct;
	if (tot->mem_bytes > 0)
		return device_mj * (double)u->mem_bytes / tot->mem_bytes;
	return NAN;
}

void gpu_share_jobs(struct jobs *t, int ndevices, const bool *ok, const struct gpu_set_procs *procs,
		    const double *device_mj)
{
	for (size_t k = 0; k < t->njobs; k++)
		for (int i = 0; i < ndevices && i < GPU_MAX_DEVICES; i++)
			gpu_share_begin(&t->job[k].gpu[i]);
	for (int i = 0; i < ndevices && i < GPU_MAX_DEVICES; i++) {
		struct gpu_share_total tot = {0, 0};

		if (!ok[i])
			continue;
		for (size_t p = 0; p < procs->n; p++) {
			const struct gpu_set_proc *gp = &procs->proc[p];
			struct job_entry *j;

			if (gp->dev != i)
				continue;
			j = gp->proc ? jobs_of(t, gp->proc) : NULL;
			gpu_share_add(&tot, j ? &j->gpu[i] : NULL, &gp->g);
		}
		if (isnan(device_mj[i]))
			continue;
		for (size_t k = 0; k < t->njobs; k++) {
			struct job_gpu_use *u = &t->job[k].gpu[i];
			double e = gpu_share_energy_mj(u, &tot, device_mj[i]);

			if (!isnan(e))
				u->energy_mj += e;
		}
	}
}
