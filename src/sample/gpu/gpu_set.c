/* gpu_set.c - open every vendor backend and number their devices together. */
#include "gpu_set.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct gpu_backend *const gpu_backends[] = {
    &gpu_backend_nvml,
    &gpu_backend_rocm,
    NULL,
};

void gpu_set_init(struct gpu_set *set)
{
	memset(set, 0, sizeof(*set));
}

static void add_devices(struct gpu_set *set, const struct gpu_opened *o)
{
	int n = 0;

	if (o->backend->count(o->ctx, &n) || n <= 0)
		return;
	for (int i = 0; i < n && set->ndevices < GPU_MAX_DEVICES; i++) {
		struct gpu_dev *d = &set->dev[set->ndevices];

		memset(d, 0, sizeof(*d));
		if (o->backend->info(o->ctx, i, &d->info))
			continue; /* a device that cannot even say who it is */
		/* some cards have no unique id: the bus position identifies them */
		if (!d->info.uuid[0])
			snprintf(d->info.uuid, sizeof(d->info.uuid), "%s-%s", o->backend->name,
				 d->info.pci_bus_id[0] ? d->info.pci_bus_id : "unknown");
		d->backend = o->backend;
		d->ctx = o->ctx;
		d->pos = i;
		/* a MIG device's parent, by its position in set->dev[] */
		if (d->info.mig) {
			int parent = -1;

			for (int k = set->ndevices - 1; k >= 0 && parent < 0; k--)
				if (set->dev[k].ctx == o->ctx &&
				    set->dev[k].pos == d->info.mig_parent)
					parent = k;
			d->info.mig_parent = parent;
		}
		set->ndevices++;
	}
}

int gpu_set_open(struct gpu_set *set)
{
	for (size_t i = 0; gpu_backends[i] && set->nvendors < GPU_MAX_BACKENDS; i++) {
		struct gpu_vendor *v = &set->vendor[set->nvendors++];
		struct gpu_opened *o = &set->opened[set->nopened];
		int before = set->ndevices;
		int ret;

		memset(v, 0, sizeof(*v));
		memset(o, 0, sizeof(*o));
		v->backend = gpu_backends[i];
		ret = gpu_backends[i]->open(&o->ctx, &v->note);
		if (ret) {
			/* -ENOMEM and the like: the backend did not get to say */
			if (ret != -ENOENT && ret != -ENXIO && ret != -ENODEV)
				v->note.state = GPU_LIB_FAILED;
			continue;
		}
		o->backend = gpu_backends[i];
		o->backend->versions(o->ctx, o->driver, sizeof(o->driver), o->library,
				     sizeof(o->library));
		set->nopened++;
		add_devices(set, o);
		v->ndevices = set->ndevices - before;
		for (int k = before; k < set->ndevices; k++)
			v->nmig += set->dev[k].info.mig;
		if (v->ndevices == 0 && v->note.state == GPU_LIB_OPEN) {
			/* devices it counted but could not describe */
			v->note.state = GPU_LIB_NO_GPU;
			snprintf(v->note.detail, sizeof(v->note.detail), "no usable %s GPU",
				 v->backend->vendor);
		}
	}
	return 0;
}

void gpu_vendor_describe(const struct gpu_vendor *v, char *buf, size_t size)
{
	const struct gpu_open_note *n = &v->note;
	const char *lib = n->library[0] ? n->library : v->backend->name;

	switch (n->state) {
	case GPU_LIB_ABSENT:
		snprintf(buf, size, "%s not found", lib);
		break;
	case GPU_LIB_NO_GPU:
		snprintf(buf, size, "%s found, %s", lib, n->detail[0] ? n->detail : "no GPU");
		break;
	case GPU_LIB_FAILED:
		snprintf(buf, size, "%s found, cannot start: %s", lib,
			 n->detail[0] ? n->detail : "unknown error");
		break;
	case GPU_LIB_OPEN:
	default:
		if (v->nmig)
			snprintf(buf, size, "%s: %d GPU%s, %d MIG device%s", lib,
				 v->ndevices - v->nmig, v->ndevices - v->nmig == 1 ? "" : "s",
				 v->nmig, v->nmig == 1 ? "" : "s");
		else
			snprintf(buf, size, "%s: %d GPU%s", lib, v->ndevices,
				 v->ndevices == 1 ? "" : "s");
		break;
	}
}

const char *gpu_lib_state_name(enum gpu_lib_state state)
{
	switch (state) {
	case GPU_LIB_ABSENT:
		return "absent";
	case GPU_LIB_NO_GPU:
		return "no_gpu";
	case GPU_LIB_FAILED:
		return "failed";
	case GPU_LIB_OPEN:
	default:
		return "open";
	}
}

void gpu_set_close(struct gpu_set *set)
{
	for (int i = 0; i < set->nopened; i++)
		set->opened[i].backend->close(set->opened[i].ctx);
	gpu_set_init(set);
}

int gpu_set_sample(struct gpu_set *set, int i, struct gpu_sample *out)
{
	struct gpu_dev *d = &set->dev[i];
	int ret;

	memset(out, 0, sizeof(*out));
	if (d->lost)
		return -ENODEV;
	ret = d->backend->sample(d->ctx, d->pos, out);
	if (ret == -ENODEV)
		d->lost = true;
	return ret;
}

/* The processes of device i not in the tree, summed into one entry (pid 0). */
static void fold_other(struct gpu_set_proc *others, const struct gpu_proc *g)
{
	others->g.valid |= g->valid & (GPU_PROC_MEM | GPU_PROC_UTIL | GPU_PROC_MEM_UTIL);
	others->g.mem_bytes += g->valid & GPU_PROC_MEM ? g->mem_bytes : 0;
	others->g.sm_util_pct += g->valid & GPU_PROC_UTIL ? g->sm_util_pct : 0;
	others->g.mem_util_pct += g->valid & GPU_PROC_MEM_UTIL ? g->mem_util_pct : 0;
}

/*
 * The tree's entry of a GPU process: a live one, or for a process that
 * used the device in the window and is gone, the entry it left (kept until
 * the next scan), so that the window's share still goes to its job.
 */
static struct ptree_proc *tree_proc(struct ptree *pt, const struct gpu_proc *g)
{
	struct ptree_proc *p = ptree_find(pt, (pid_t)g->pid);

	if (!p && !g->gone)
		return ptree_find_reported(pt, (pid_t)g->pid); /* a container's pid, maybe */
	if (p)
		return p;
	p = ptree_find_recent(pt, (pid_t)g->pid);
	if (p)
		return p;
	/* reaped by us (`jobscope run`'s child) before the scan: not in the index */
	for (size_t i = 0; i < pt->nprocs; i++)
		if (!pt->procs[i].alive && pt->procs[i].info.pid == (pid_t)g->pid)
			return &pt->procs[i];
	return NULL;
}

void gpu_set_processes(struct gpu_set *set, struct ptree *pt, struct gpu_sample *sample, bool *ok,
		       struct gpu_set_procs *out)
{
	out->n = 0;
	for (int i = 0; i < set->ndevices; i++) {
		struct gpu_dev *d = &set->dev[i];
		struct gpu_set_proc others = {.dev = i};
		size_t reserve = out->fold_others ? 1 : 0, room = 0, n = 0;
		bool any_other = false;

		ok[i] = gpu_set_sample(set, i, &sample[i]) == 0;
		if (!ok[i])
			continue;
		if (out->n + reserve < out->max)
			room = out->max - out->n - reserve;
		if (d->backend->processes(d->ctx, d->pos, out->scratch, room, &n))
			n = 0;
		for (size_t k = 0; k < n; k++) {
			const struct gpu_proc *g = &out->scratch[k];
			struct ptree_proc *p = pt ? tree_proc(pt, g) : NULL;
			struct gpu_set_proc *gp;

			/*
			 * Folded, everybody else's costs one row a tick on a busy
			 * shared GPU, not one per process.
			 */
			if (!p && out->fold_others) {
				fold_other(&others, g);
				any_other = true;
				continue;
			}
			gp = &out->proc[out->n++];
			gp->dev = i;
			gp->g = *g;
			gp->proc = p;
		}
		if (any_other)
			out->proc[out->n++] = others;
	}
}

int gpu_set_procs_alloc(struct gpu_set_procs *p, size_t max, bool fold_others)
{
	memset(p, 0, sizeof(*p));
	p->proc = calloc(max, sizeof(*p->proc));
	p->scratch = calloc(max, sizeof(*p->scratch));
	if (!p->proc || !p->scratch) {
		gpu_set_procs_release(p);
		return -ENOMEM;
	}
	p->max = max;
	p->fold_others = fold_others;
	return 0;
}

void gpu_set_procs_release(struct gpu_set_procs *p)
{
	free(p->proc);
	free(p->scratch);
	memset(p, 0, sizeof(*p));
}

uint64_t gpu_set_calls(const struct gpu_set *set)
{
	uint64_t n = 0;

	for (int i = 0; i < set->nopened; i++)
		n += set->opened[i].backend->calls(set->opened[i].ctx);
	return n;
}

const char *gpu_event_kind_name(enum gpu_event_kind kind)
{
	switch (kind) {
	case GPU_EVENT_XID:
		return "xid";
	case GPU_EVENT_ECC_SBE:
		return "ecc_corrected";
	case GPU_EVENT_ECC_DBE:
		return "ecc_uncorrected";
	case GPU_EVENT_THERMAL:
		return "gpu_thermal";
	case GPU_EVENT_RESET:
		return "gpu_reset";
	case GPU_EVENT_VMFAULT:
		return "gpu_vm_fault";
	case GPU_EVENT_LOST:
		return "gpu_lost";
	default:
		return "gpu_event";
	}
}

size_t gpu_set_events(struct gpu_set *set, int64_t ts_ms, struct event_record *out, size_t max)
{
	size_t count = 0;

	for (int b = 0; b < set->nopened && count < max; b++) {
		const struct gpu_opened *o = &set->opened[b];
		struct gpu_event ev[64];
		size_t n = 0, room = max - count;

		if (o->backend->events(o->ctx, ev, room < 64 ? room : 64, &n))
			continue;
		for (size_t k = 0; k < n; k++) {
			struct event_record *e = &out[count++];

			memset(e, 0, sizeof(*e));
			e->ts_ms = ts_ms;
			snprintf(e->kind, sizeof(e->kind), "%s", gpu_event_kind_name(ev[k].kind));
			e->value = (int64_t)ev[k].data;
			e->has_gpu = true;
			e->gpu = ev[k].index;
			snprintf(e->message, sizeof(e->message), "%s", ev[k].message);
		}
	}
	return count;
}
