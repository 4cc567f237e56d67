/*
 * gpu_share.c - each job's share of each GPU: memory, SM utilization and
 * the energy of the interval, split by the rule of gpu_share.h (SM share
 * of the window, else memory share, else all to a part alone; idle and
 * unattributed energy kept apart).
 */
#include "gpu_share.h"

#include <math.h>

#include "sample/figures.h"

double gpu_share_energy_delta_mj(const struct gpu_sample *cur, const struct gpu_sample *prev,
				 int64_t dt_ms)
{
	struct gpu_figures f;

	gpu_figures(cur, prev, dt_ms, &f);
	return f.interval_energy_mj;
}

void gpu_share_total_add(struct gpu_share_total *tot, const struct gpu_proc *g)
{
	tot->sm_util_pct += g->valid & GPU_PROC_UTIL ? g->sm_util_pct : 0;
	tot->mem_bytes += g->valid & GPU_PROC_MEM ? (double)g->mem_bytes : 0;
	tot->nprocs++;
}

double gpu_share_fraction(const struct gpu_share_total *part, const struct gpu_share_total *all)
{
	if (all->nprocs == 0)
		return NAN; /* idle */
	if (part->nprocs == 0)
		return 0;
	if (all->sm_util_pct > 0)
		return part->sm_util_pct / all->sm_util_pct;
	if (all->mem_bytes > 0)
		return part->mem_bytes / all->mem_bytes;
	if (part->nprocs == all->nprocs)
		return 1; /* alone: nothing to split */
	return NAN;	  /* with others, nothing to split by: unattributed */
}

bool gpu_share_splits(const struct gpu_share_total *all, bool alone)
{
	return all->nprocs > 0 && (all->sm_util_pct > 0 || all->mem_bytes > 0 || alone);
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
	gpu_share_total_add(tot, g);
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

/* The job of a GPU process, or NULL (nobody's: not in the process table). */
static struct job_entry *job_of(struct jobs *t, const struct gpu_set_proc *gp)
{
	return gp->proc ? jobs_of(t, gp->proc) : NULL;
}

struct gpu_share_total gpu_share_job_part(const struct jobs *t, const struct gpu_set_procs *procs,
					  int dev, const struct job_entry *j)
{
	struct gpu_share_total part = {0, 0, 0};
	int32_t tag = (int32_t)(j - t->job) + 1;

	for (size_t p = 0; p < procs->n; p++)
		if (procs->proc[p].dev == dev && procs->proc[p].proc &&
		    procs->proc[p].proc->tag == tag)
			gpu_share_total_add(&part, &procs->proc[p].g);
	return part;
}

struct gpu_share_total gpu_share_device_total(const struct gpu_set_procs *procs, int dev)
{
	struct gpu_share_total all = {0, 0, 0};

	for (size_t p = 0; p < procs->n; p++)
		if (procs->proc[p].dev == dev)
			gpu_share_total_add(&all, &procs->proc[p].g);
	return all;
}

/* Device i's energy of the interval, mj, to its jobs, and where it went into acct. */
static void split_device(struct jobs *t, const struct gpu_set_procs *procs, int i,
			 const struct gpu_share_total *all, const struct gpu_share_total *others,
			 double mj, struct gpu_share_device *acct)
{
	bool alone = others->nprocs == all->nprocs;
	double f;

	for (size_t k = 0; k < t->njobs; k++) {
		struct job_gpu_use *u = &t->job[k].gpu[i];
		struct gpu_share_total part;

		if (!u->now)
			continue;
		part = gpu_share_job_part(t, procs, i, &t->job[k]);
		alone = alone || part.nprocs == all->nprocs;
		f = gpu_share_fraction(&part, all);
		if (isnan(f))
			continue;
		u->energy_mj += f * mj;
		if (acct)
			acct->jobs_mj += f * mj;
	}
	if (!acct)
		return;
	acct->energy_mj += mj;
	if (all->nprocs == 0)
		acct->idle_mj += mj;
	else if (!gpu_share_splits(all, alone))
		acct->unattributed_mj += mj;
	else
		acct->others_mj += gpu_share_fraction(others, all) * mj;
}

void gpu_share_jobs_account(struct jobs *t, int ndevices, const bool *ok,
			    const struct gpu_set_procs *procs, const double *device_mj,
			    struct gpu_share_device *acct)
{
	for (size_t k = 0; k < t->njobs; k++)
		for (int i = 0; i < ndevices && i < GPU_MAX_DEVICES; i++)
			gpu_share_begin(&t->job[k].gpu[i]);
	for (int i = 0; i < ndevices && i < GPU_MAX_DEVICES; i++) {
		struct gpu_share_total all = {0, 0, 0}, others = {0, 0, 0};

		if (!ok[i])
			continue;
		for (size_t p = 0; p < procs->n; p++) {
			const struct gpu_set_proc *gp = &procs->proc[p];
			struct job_entry *j;

			if (gp->dev != i)
				continue;
			j = job_of(t, gp);
			gpu_share_add(&all, j ? &j->gpu[i] : NULL, &gp->g);
			if (!j)
				gpu_share_total_add(&others, &gp->g);
		}
		if (!isnan(device_mj[i]))
			split_device(t, procs, i, &all, &others, device_mj[i],
				     acct ? &acct[i] : NULL);
	}
}

void gpu_share_jobs(struct jobs *t, int ndevices, const bool *ok, const struct gpu_set_procs *procs,
		    const double *device_mj)
{
	gpu_share_jobs_account(t, ndevices, ok, procs, device_mj, NULL);
}
