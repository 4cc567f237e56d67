/*
 * tick.c - the rows of one tick that `jobscope run` and the agent write the
 * same way: host, processes, GPUs, events, and the process rows' state
 * after a commit or an abort, the devices rows written before the first
 * tick, and the event that says the sampling interval changed.  See tick.h.
 */
#include "store/tick.h"

#include "store/conn.h"
#include "store/jobdata.h"
#include "store/write.h"

#include <stdio.h>
#include <string.h>

/* The host's RAPL zones (sample/rapl.h), when it has any readable. */
static int put_energy(const struct store_tick_rows *t)
{
	struct store_energy_sample e[RAPL_MAX_ZONES];
	int n = t->host->nenergy < RAPL_MAX_ZONES ? t->host->nenergy : RAPL_MAX_ZONES;

	if (!(t->host->valid & HOST_HAS_ENERGY) || n <= 0 || t->st->schema_version < 10)
		return 0;
	memset(e, 0, sizeof(e));
	for (int i = 0; i < n; i++) {
		e[i].ts_ms = t->ts_ms;
		snprintf(e[i].zone, sizeof(e[i].zone), "%s", t->host->energy[i].zone);
		e[i].energy_uj = t->host->energy[i].energy_uj;
		e[i].max_uj = t->host->energy[i].max_uj;
	}
	return store_put_energy_samples(t->st, t->node_id, e, (size_t)n);
}

int store_tick_put_host(const struct store_tick_rows *t)
{
	int ret;

	if (!t->host)
		return 0;
	ret = store_put_host(t->st, t->node_id, t->ts_ms, t->host);
	return ret ? ret : put_energy(t);
}

/*
 * The libraries the sampler found in p (sample/libs.h) since its last rows:
 * one proc_libs row each, once p has its procs row.
 */
static int put_libs(const struct store_tick_rows *t, struct ptree_proc *p)
{
	struct store_proc_lib l[LIBS_MAX];
	size_t n = 0;
	int ret;

	if (!p->libs || p->row <= 0 || p->libs_stored >= p->libs->n || t->st->schema_version < 10)
		return 0;
	for (size_t i = p->libs_stored; i < p->libs->n && n < LIBS_MAX; i++, n++) {
		memset(&l[n], 0, sizeof(l[n]));
		snprintf(l[n].name, sizeof(l[n].name), "%s", p->libs->lib[i].name);
		snprintf(l[n].version, sizeof(l[n].version), "%s", p->libs->lib[i].version);
		snprintf(l[n].path, sizeof(l[n].path), "%s", p->libs->lib[i].path);
	}
	ret = store_put_proc_libs(t->st, p->row, t->ts_ms, l, n);
	if (!ret) {
		if (p->libs_stored_tick != t->tick_no)
			p->libs_stored_undo = p->libs_stored;
		p->libs_stored_tick = t->tick_no;
		p->libs_stored = p->libs->n;
	}
	return ret;
}

static int64_t job_row_of(const struct store_tick_rows *t, const struct ptree_proc *p)
{
	const struct job_entry *j;

	if (!t->jobs)
		return t->job_row;
	j = p ? jobs_of(t->jobs, p) : NULL;
	return j ? j->rec.id : 0;
}

/* A pod's process's container name (attrib/jobs.h), or NULL. */
static const char *container_of(const struct store_tick_rows *t, const struct ptree_proc *p)
{
	const struct job_entry *j;

	if (!t->jobs || !p->container)
		return NULL;
	j = jobs_of(t->jobs, p);
	return j && p->container <= j->k8s.ncontainers ? j->k8s.container[p->container - 1].name
						       : NULL;
}

int store_tick_put_procs(const struct store_tick_rows *t)
{
	int ret = 0;

	for (size_t i = 0; i < t->pt->nprocs && !ret; i++) {
		struct ptree_proc *p = &t->pt->procs[i];

		if (!p->emit) {
			ret = put_libs(t, p);
			continue;
		}
		if (p->row == 0) {
			struct proc_info info;

			ptree_info_get(p, &info);
			ret = store_put_proc_info(t->st, t->node_id, job_row_of(t, p), &info,
						  container_of(t, p), &p->row);
			p->row_tick = t->tick_no;
		} else if (p->info_dirty || !p->alive) {
			struct proc_info info;

			ptree_info_get(p, &info);
			ret = store_update_proc_info(t->st, p->row, &info, container_of(t, p));
		}
		if (!ret)
			ret = store_put_proc_sample(t->st, p->row, t->ts_ms, &p->cur);
		if (!ret)
			ret = put_libs(t, p);
	}
	return ret;
}

int store_tick_put_gpus(const struct store_tick_rows *t)
{
	int ret = 0;

	for (int i = 0; i < t->ndevices && !ret; i++) {
		if (!t->gsample_ok[i] || !t->devs[i].id)
			continue;
		ret = store_put_gpu_sample(t->st, t->devs[i].id, t->ts_ms, &t->gsample[i]);
		for (size_t k = 0; t->gprocs && k < t->gprocs->n && !ret; k++) {
			const struct gpu_set_proc *gp = &t->gprocs->proc[k];

			if (gp->dev != i)
				continue;
			ret = store_put_gpu_proc(t->st, t->devs[i].id, gp->proc ? gp->proc->row : 0,
						 job_row_of(t, gp->proc), t->ts_ms, &gp->g);
		}
	}
	return ret;
}

int store_tick_put_events(const struct store_tick_rows *t)
{
	int ret = 0;

	for (size_t k = 0; k < t->nevents && !ret; k++)
		ret = store_put_event(t->st, t->node_id, t->job_row, &t->events[k]);
	return ret;
}

int store_tick_put_interval(struct store *st, int64_t node_id, int64_t ts_ms, int64_t interval_ms,
			    const char *why)
{
	struct event_record e;

	memset(&e, 0, sizeof(e));
	e.ts_ms = ts_ms;
	snprintf(e.kind, sizeof(e.kind), "%s", STORE_EVENT_INTERVAL);
	e.value = interval_ms;
	snprintf(e.message, sizeof(e.message), "%s", why ? why : "");
	return store_put_event(st, node_id, 0, &e);
}

void store_tick_rows_kept(const struct store_tick_rows *t)
{
	for (size_t i = 0; i < t->pt->nprocs; i++)
		if (t->pt->procs[i].emit)
			t->pt->procs[i].info_dirty = false;
}

void store_tick_rows_lost(const struct store_tick_rows *t)
{
	for (size_t i = 0; i < t->pt->nprocs; i++) {
		struct ptree_proc *p = &t->pt->procs[i];

		if (p->row_tick == t->tick_no)
			p->row = 0;
		if (p->libs_stored_tick == t->tick_no) {
			p->libs_stored = p->libs_stored_undo;
			p->libs_stored_tick = 0;
		}
	}
}

/*
 * A MIG instance's parent: info.mig_parent is its position in set->dev[]
 * (gpu_set.h).  "" when that is no whole GPU.
 */
static void mig_parent_uuid(const struct gpu_set *set, int i, char *out, size_t size)
{
	int p = set->dev[i].info.mig_parent;

	out[0] = '\0';
	if (p >= 0 && p < set->ndevices && p != i && !set->dev[p].info.mig)
		snprintf(out, size, "%s", set->dev[p].info.uuid);
}

void store_tick_put_devices(struct store *st, int64_t node_id, const struct gpu_set *set,
			    struct device_record *devs)
{
	for (int i = 0; i < set->ndevices; i++) {
		struct device_record *d = &devs[i];

		memset(d, 0, sizeof(*d));
		d->info = set->dev[i].info;
		snprintf(d->vendor, sizeof(d->vendor), "%s", set->dev[i].backend->vendor);
		for (int b = 0; b < set->nopened; b++)
			if (set->opened[b].backend == set->dev[i].backend)
				snprintf(d->driver_version, sizeof(d->driver_version), "%s",
					 set->opened[b].driver);
		if (d->info.mig)
			mig_parent_uuid(set, i, d->mig_parent_uuid, sizeof(d->mig_parent_uuid));
		if (store_put_device(st, node_id, d))
			d->id = 0;
	}
}
