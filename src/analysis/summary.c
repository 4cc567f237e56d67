/*
 * summary.c - accumulate a run's report from its samples (see summary.h).
 * Live and replayed runs go through exactly these functions.
 */
#include "analysis/summary.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "sample/figures.h"
#include "store/tick.h"
#include "store/jobdata.h"
#include "store/write.h"

#define SUMMARY_MAX_EVENTS 10000

void summary_init(struct summary *s, const struct job_record *job)
{
	memset(s, 0, sizeof(*s));
	if (job)
		s->job = *job;
	s->interval_ms = s->job.interval_ms > 0 ? s->job.interval_ms : 0;
	s->bucket_ms = s->job.interval_ms > 0 ? s->job.interval_ms : 500;
	s->host_mem_available_min = UINT64_MAX;
}

void summary_release(struct summary *s)
{
	for (size_t i = 0; i < s->nprocs; i++)
		free(s->procs[i].cmdline);
	free(s->procs);
	free(s->proc_index);
	free(s->events);
	free(s->gpus);
	free(s->libs);
	memset(s, 0, sizeof(*s));
}

int summary_load_libs(struct summary *s, struct store *st)
{
	free(s->libs);
	s->libs = NULL;
	s->nlibs = 0;
	return store_get_job_libs(st, s->job.id, &s->libs, &s->nlibs);
}

static uint64_t cpu_of(const struct job_sample *j)
{
	return j->user_ms + j->system_ms;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* Halve the timeline's resolution: bucket i takes buckets 2i and 2i+1. */
static void timeline_halve(struct summary *s)
{
	for (int i = 0; i < SUMMARY_BUCKETS / 2; i++) {
		struct summary_bucket *a = &s->buckets[2 * i], *b = &s->buckets[2 * i + 1];
		struct summary_bucket m;

		memset(&m, 0, sizeof(m));
		m.used = a->used || b->used;
		m.start_ms = s->first_ms + (int64_t)i * s->bucket_ms * 2;
		m.span_ms = a->span_ms + b->span_ms;
		m.cpu_ms = a->cpu_ms + b->cpu_ms;
		m.rss_max = a->rss_max > b->rss_max ? a->rss_max : b->rss_max;
		s->buckets[i] = m;
	}
	memset(&s->buckets[SUMMARY_BUCKETS / 2], 0,
	       sizeof(s->buckets[0]) * (SUMMARY_BUCKETS - SUMMARY_BUCKETS / 2));
	for (int g = 0; g < s->ngpus; g++) {
		struct gpu_summary *gs = &s->gpus[g];

		for (int i = 0; i < SUMMARY_BUCKETS / 2; i++) {
			gs->bucket_util_pct_ms[i] =
			    gs->bucket_util_pct_ms[2 * i] + gs->bucket_util_pct_ms[2 * i + 1];
			gs->bucket_util_ms[i] =
			    gs->bucket_util_ms[2 * i] + gs->bucket_util_ms[2 * i + 1];
		}
		for (int i = SUMMARY_BUCKETS / 2; i < SUMMARY_BUCKETS; i++) {
			gs->bucket_util_pct_ms[i] = 0;
			gs->bucket_util_ms[i] = 0;
		}
	}
	s->bucket_ms *= 2;
}

static struct summary_bucket *timeline_bucket(struct summary *s, int64_t ts_ms)
{
	int64_t idx;

	/* an interval wider than a bucket would leave every other bucket empty */
	while (s->bucket_ms < s->interval_ms)
		timeline_halve(s);
	for (;;) {
		idx = (ts_ms - s->first_ms) / s->bucket_ms;
		if (idx < 0)
			idx = 0;
		if (idx < SUMMARY_BUCKETS)
			break;
		timeline_halve(s);
	}
	if (!s->buckets[idx].used) {
		s->buckets[idx].used = true;
		s->buckets[idx].start_ms = s->first_ms + idx * s->bucket_ms;
	}
	return &s->buckets[idx];
}

/*
 * [t, to) walked bucket by bucket: the bucket holding t (the resolution
 * halved first when it must be), with the milliseconds of [t, to) it holds
 * in *part; NULL when none are left.
 */
static struct summary_bucket *timeline_part(struct summary *s, int64_t t, int64_t to, int64_t *part)
{
	struct summary_bucket *b;
	int64_t end;

	if (t >= to)
		return NULL;
	b = timeline_bucket(s, t);
	end = b->start_ms + s->bucket_ms;
	*part = (end < to ? end : to) - t;
	return *part > 0 ? b : NULL;
}

static int64_t peak_window_ms(const struct summary *s)
{
	return s->interval_ms > SUMMARY_PEAK_WINDOW_MS ? s->interval_ms : SUMMARY_PEAK_WINDOW_MS;
}

void summary_set_interval(struct summary *s, int64_t interval_ms)
{
	if (interval_ms <= 0 || interval_ms > STORE_INTERVAL_MAX_MS)
		return;
	s->interval_ms = interval_ms;
	/* with samples, the buckets widen when the next one comes (timeline_bucket) */
	if (!s->samples && s->bucket_ms < interval_ms)
		s->bucket_ms = interval_ms;
}

static void close_window(struct summary *s, int64_t ts_ms, const struct job_sample *j)
{
	double dt_s = (double)(ts_ms - s->win_start_ms) / 1000.0;
	double cores, rbps, wbps;

	if (dt_s <= 0)
		return;
	cores = (double)sub0(cpu_of(j), cpu_of(&s->win_start)) / 1000.0 / dt_s;
	if (cores > s->cores_peak) {
		s->cores_peak = cores;
		s->cores_peak_at_ms = ts_ms;
	}
	if ((j->valid & JS_IO) && (s->win_start.valid & JS_IO)) {
		rbps = (double)sub0(j->read_bytes, s->win_start.read_bytes) / dt_s;
		wbps = (double)sub0(j->write_bytes, s->win_start.write_bytes) / dt_s;
		if (rbps > s->read_peak_bps)
			s->read_peak_bps = rbps;
		if (wbps > s->write_peak_bps)
			s->write_peak_bps = wbps;
	}
	s->win_start = *j;
	s->win_start_ms = ts_ms;
}

int summary_add_job(struct summary *s, int64_t ts_ms, const struct job_sample *j)
{
	struct summary_bucket *b;

	if (s->samples == 0) {
		/*
		 * The tree had used nothing when it started: the first peak
		 * window counts from an all-zero reading at the start, so a
		 * burst before the first sample (a file written in the first
		 * milliseconds) still shows in the peak rates.  The timeline
		 * starts at the first sample: a few ms are no basis for a rate.
		 */
		s->first_ms = ts_ms;
		s->last = *j;
		s->last_ms = ts_ms;
		s->win_start = *j;
		s->win_start_ms = ts_ms;
		if (s->job.start_ms > 0 && s->job.start_ms < ts_ms) {
			memset(&s->win_start, 0, sizeof(s->win_start));
			s->win_start.valid = j->valid;
			s->win_start_ms = s->job.start_ms;
		}
	}
	s->samples++;
	if ((j->valid & JS_CG_MEM_PEAK) && j->cg_mem_peak_bytes >= s->cg_mem_peak_bytes) {
		s->cg_mem_peak_bytes = j->cg_mem_peak_bytes;
		s->has_cg_mem_peak = true;
	}
	if (j->valid & JS_CG_CPU) {
		s->cg_cpu_ms = j->cg_cpu_ms;
		s->has_cg_cpu = true;
	}
	if (j->valid & JS_CPU_WAIT) {
		if (!s->has_cpu_wait) {
			s->cpu_wait_first_ms = j->cpu_wait_ms;
			s->cpu_wait_first_ts = ts_ms;
			s->has_cpu_wait = true;
		}
		s->cpu_wait_last_ms = j->cpu_wait_ms;
		s->cpu_wait_last_ts = ts_ms;
	}
	/*
	 * An interval's CPU goes to the bucket it started in; a short one (the
	 * last sample, taken at exit) joins the interval before it, so a few
	 * ms of quantized CPU time do not show as a spike.  Short and long are
	 * judged by the interval in effect, which a head's session may change.
	 */
	timeline_bucket(s, ts_ms); /* may halve the resolution first */
	if (s->samples > 1 && s->interval_ms > 0 && ts_ms - s->last_ms > s->interval_ms * 3 / 2) {
		/*
		 * Rows left out because nothing moved (the agent writes a job's
		 * row only when it changed): the last row held all along.  The
		 * interval's CPU is spread over the buckets it covers, and each
		 * of them saw the last RSS.
		 */
		uint64_t cpu = sub0(cpu_of(j), cpu_of(&s->last));
		int64_t total = ts_ms - s->last_ms, part;
		struct summary_bucket *gb;

		for (int64_t t = s->last_ms; (gb = timeline_part(s, t, ts_ms, &part)); t += part) {
			gb->span_ms += part;
			gb->cpu_ms += (uint64_t)((double)cpu * (double)part / (double)total);
			if (t > s->last_ms && s->last.rss_bytes > gb->rss_max)
				gb->rss_max = s->last.rss_bytes;
		}
	} else if (ts_ms > s->last_ms) {
		int64_t from = s->last_ms;

		if (s->samples > 1 && (ts_ms - s->last_ms) * 2 < s->interval_ms)
			from = s->prev_last_ms;
		b = timeline_bucket(s, from);
		b->span_ms += ts_ms - s->last_ms;
		b->cpu_ms += sub0(cpu_of(j), cpu_of(&s->last));
	}
	b = timeline_bucket(s, ts_ms);
	if (j->rss_bytes > b->rss_max)
		b->rss_max = j->rss_bytes;
	if (s->samples == 1 || j->rss_bytes > s->rss_peak_bytes) {
		s->rss_peak_bytes = j->rss_bytes;
		s->rss_peak_at_ms = ts_ms;
	}
	if (j->valid & JS_SWAP) {
		s->has_swap = true;
		if (j->swap_bytes > s->swap_peak_bytes)
			s->swap_peak_bytes = j->swap_bytes;
	}
	if (j->valid & JS_IO)
		s->has_io = true;
	if (ts_ms - s->win_start_ms >= peak_window_ms(s))
		close_window(s, ts_ms, j);
	s->prev_last_ms = s->last_ms;
	s->last = *j;
	s->last_ms = ts_ms;
	return 0;
}

static size_t proc_slot(int32_t pid, int64_t start_ms, size_t size)
{
	uint64_t h = (uint64_t)(uint32_t)pid * 0x9e3779b97f4a7c15ull ^ (uint64_t)start_ms;

	h ^= h >> 29;
	return (size_t)(h * 0xbf58476d1ce4e5b9ull >> 7) & (size - 1);
}

static int proc_index_grow(struct summary *s)
{
	size_t size = s->proc_index_size ? s->proc_index_size * 2 : 256;
	int32_t *idx = calloc(size, sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < s->nprocs; i++) {
		size_t k = proc_slot(s->procs[i].pid, s->procs[i].start_ms, size);

		while (idx[k])
			k = (k + 1) & (size - 1);
		idx[k] = (int32_t)i + 1;
	}
	free(s->proc_index);
	s->proc_index = idx;
	s->proc_index_size = size;
	return 0;
}

int summary_index_procs(struct summary *s)
{
	size_t size = 256;

	/* the size proc_lookup would have grown to, built at once */
	while ((s->nprocs + 1) * 2 > size)
		size *= 2;
	free(s->proc_index);
	s->proc_index = NULL;
	s->proc_index_size = size / 2 >= 256 ? size / 2 : 0;
	return proc_index_grow(s) ? -ENOMEM : 0;
}

static struct proc_summary *proc_find(struct summary *s, const struct proc_info *p)
{
	size_t k;

	if (!s->proc_index_size)
		return NULL;
	k = proc_slot(p->pid, p->start_ms, s->proc_index_size);
	while (s->proc_index[k]) {
		struct proc_summary *ps = &s->procs[s->proc_index[k] - 1];

		if (ps->pid == p->pid && ps->start_ms == p->start_ms)
			return ps;
		k = (k + 1) & (s->proc_index_size - 1);
	}
	return NULL;
}

int summary_refresh_proc(struct summary *s, const struct proc_info *p)
{
	struct proc_summary *e = proc_find(s, p);

	if (!e)
		return 0;
	/* summary_add_proc on every sample with this row gives these */
	e->ppid = p->ppid;
	snprintf(e->comm, sizeof(e->comm), "%s", p->comm);
	free(e->cmdline);
	e->cmdline = NULL;
	if (p->cmdline[0] && !(e->cmdline = strdup(p->cmdline)))
		return -ENOMEM;
	e->end_ms = p->end_ms;
	return 0;
}

static struct proc_summary *proc_lookup(struct summary *s, const struct proc_info *p)
{
	struct proc_summary *ps;
	size_t k;

	if (s->proc_index_size) {
		k = proc_slot(p->pid, p->start_ms, s->proc_index_size);
		while (s->proc_index[k]) {
			ps = &s->procs[s->proc_index[k] - 1];
			if (ps->pid == p->pid && ps->start_ms == p->start_ms)
				return ps;
			k = (k + 1) & (s->proc_index_size - 1);
		}
	}
	if ((s->nprocs + 1) * 2 > s->proc_index_size && proc_index_grow(s))
		return NULL;
	if (ARRAY_GROW(s->procs, s->nprocs, s->procs_alloc, 32))
		return NULL;
	ps = &s->procs[s->nprocs];
	memset(ps, 0, sizeof(*ps));
	ps->pid = p->pid;
	ps->start_ms = p->start_ms;
	k = proc_slot(p->pid, p->start_ms, s->proc_index_size);
	while (s->proc_index[k])
		k = (k + 1) & (s->proc_index_size - 1);
	s->proc_index[k] = (int32_t)s->nprocs + 1;
	s->nprocs++;
	return ps;
}

int summary_add_proc(struct summary *s, const struct proc_info *p, int64_t ts_ms,
		     const struct proc_sample *ps)
{
	struct proc_summary *e = proc_lookup(s, p);
	uint64_t peak;

	if (!e)
		return -ENOMEM;
	e->ppid = p->ppid;
	if (p->comm[0] && strcmp(e->comm, p->comm) != 0)
		snprintf(e->comm, sizeof(e->comm), "%s", p->comm);
	if (p->cmdline[0] && (!e->cmdline || strcmp(e->cmdline, p->cmdline) != 0)) {
		char *c = strdup(p->cmdline);

		if (!c)
			return -ENOMEM;
		free(e->cmdline);
		e->cmdline = c;
	}
	if (p->end_ms)
		e->end_ms = p->end_ms;
	if (ps->user_ms > e->user_ms)
		e->user_ms = ps->user_ms;
	if (ps->system_ms > e->system_ms)
		e->system_ms = ps->system_ms;
	peak = 0;
	if (ps->valid & PS_RSS)
		peak = ps->rss_bytes;
	if ((ps->valid & PS_HWM) && ps->hwm_bytes > peak)
		peak = ps->hwm_bytes;
	if (ps->valid & (PS_RSS | PS_HWM)) {
		e->has_rss = true;
		if (peak > e->rss_peak_bytes)
			e->rss_peak_bytes = peak;
	}
	if ((ps->valid & PS_HWM) && ps->hwm_bytes > s->hwm_peak_bytes) {
		s->hwm_peak_bytes = ps->hwm_bytes;
		s->hwm_peak_at_ms = ts_ms;
	}
	if (ps->valid & PS_SWAP) {
		e->has_swap = true;
		if (ps->swap_bytes > e->swap_peak_bytes)
			e->swap_peak_bytes = ps->swap_bytes;
	}
	if (ps->valid & PS_IO) {
		e->has_io = true;
		if (ps->read_bytes > e->read_bytes)
			e->read_bytes = ps->read_bytes;
		if (ps->write_bytes > e->write_bytes)
			e->write_bytes = ps->write_bytes;
	}
	if ((ps->valid & PS_THREADS) && ps->threads > e->threads_peak)
		e->threads_peak = ps->threads;
	return 0;
}

static void host_point_from(struct host_point *hp, int64_t ts_ms, const struct host_sample *h)
{
	memset(hp, 0, sizeof(*hp));
	hp->ts_ms = ts_ms;
	hp->valid = h->valid;
	hp->cpu = h->cpu.total;
	hp->ncpus = h->cpu.ncpus;
	hp->mem_total_bytes = h->mem.total_bytes;
	hp->mem_available_bytes = h->mem.available_bytes;
	hp->disk_read_bytes = h->disk_read_bytes;
	hp->disk_write_bytes = h->disk_write_bytes;
	hp->net_rx_bytes = h->net_rx_bytes;
	hp->net_tx_bytes = h->net_tx_bytes;
	hp->net_rx_packets = h->net_rx_packets;
	hp->net_tx_packets = h->net_tx_packets;
	hp->psi_cpu_some_us = h->psi_cpu.some_total_us;
	hp->psi_mem_some_us = h->psi_mem.some_total_us;
	hp->psi_mem_full_us = h->psi_mem.full_total_us;
	hp->psi_io_some_us = h->psi_io.some_total_us;
	hp->psi_io_full_us = h->psi_io.full_total_us;
}

int summary_add_host(struct summary *s, int64_t ts_ms, const struct host_sample *h)
{
	if (s->host_samples == 0)
		host_point_from(&s->host_first, ts_ms, h);
	host_point_from(&s->host_last, ts_ms, h);
	s->host_samples++;
	if ((h->valid & HOST_HAS_MEM) && (h->mem.valid & MEMINFO_AVAILABLE) &&
	    h->mem.available_bytes < s->host_mem_available_min)
		s->host_mem_available_min = h->mem.available_bytes;
	if ((h->valid & HOST_HAS_LOAD) && h->load.load1_milli > s->host_load1_max_milli)
		s->host_load1_max_milli = h->load.load1_milli;
	return 0;
}

int summary_add_event(struct summary *s, const struct event_record *e)
{
	if (strcmp(e->kind, STORE_EVENT_INTERVAL) == 0) {
		bool listed = e->value > 0 && e->value <= STORE_INTERVAL_MAX_MS &&
			      e->value != s->interval_ms && e->ts_ms >= s->job.start_ms;

		summary_set_interval(s, e->value);
		if (!listed)
			return 0;
	}
	if (s->nevents >= SUMMARY_MAX_EVENTS) {
		s->events_dropped++;
		return 0;
	}
	if (ARRAY_GROW(s->events, s->nevents, s->events_alloc, 16))
		return -ENOMEM;
	s->events[s->nevents++] = *e;
	return 0;
}

static void gpu_settle(struct gpu_summary *g);

void summary_finish(struct summary *s, const struct job_record *job)
{
	if (job)
		s->job = *job;
	for (int i = 0; i < s->ngpus; i++) {
		gpu_settle(&s->gpus[i]);
		/*
		 * A driver that lists processes and listed none of the job's:
		 * the job used none of its devices (not "unknown").
		 */
		if (s->gpus[i].dev.info.supported & (GPU_PROC_MEM | GPU_PROC_UTIL))
			s->gpu_procs_known = true;
	}
	/* A run shorter than one peak window still has a peak: its average. */
	if (s->cores_peak == 0 && s->last_ms > s->win_start_ms)
		close_window(s, s->last_ms, &s->last);
}

double summary_cpu_seconds(const struct summary *s)
{
	return s->samples ? (double)cpu_of(&s->last) / 1000.0 : 0.0;
}

double summary_duration_s(const struct summary *s)
{
	int64_t end = s->job.end_ms ? s->job.end_ms : s->last_ms;

	if (end < s->job.start_ms)
		return 0.0;
	return (double)(end - s->job.start_ms) / 1000.0;
}

double summary_cores_avg(const struct summary *s)
{
	double d = summary_duration_s(s);

	/* no sample of the job (a GPU-only job from Prometheus): unknown, not 0 */
	return d > 0 && s->samples ? summary_cpu_seconds(s) / d : NAN;
}

double summary_efficiency_pct(const struct summary *s)
{
	double avg = summary_cores_avg(s);

	/* a scheduler's reservation (maybe fractional: a CPU quota), else the affinity mask */
	double cores = s->job.reserved_cpus > 0 ? s->job.reserved_cpus : s->job.cores_allowed;

	if (cores <= 0 || isnan(avg))
		return NAN;
	return avg / cores * 100.0;
}

uint64_t summary_rss_peak(const struct summary *s, int64_t *at_ms)
{
	if (s->hwm_peak_bytes > s->rss_peak_bytes) {
		if (at_ms)
			*at_ms = s->hwm_peak_at_ms;
		return s->hwm_peak_bytes;
	}
	if (at_ms)
		*at_ms = s->rss_peak_at_ms;
	return s->rss_peak_bytes;
}

double summary_host_cpu_util_pct(const struct summary *s)
{
	if (s->host_samples < 2 || !(s->host_first.valid & HOST_HAS_CPU))
		return NAN;
	return cpu_busy_pct(&s->host_first.cpu, &s->host_last.cpu);
}

static int by_cpu(const void *pa, const void *pb)
{
	const struct proc_summary *a = *(const struct proc_summary *const *)pa;
	const struct proc_summary *b = *(const struct proc_summary *const *)pb;
	uint64_t ca = a->user_ms + a->system_ms, cb = b->user_ms + b->system_ms;

	if (ca != cb)
		return ca > cb ? -1 : 1;
	if (a->start_ms != b->start_ms)
		return a->start_ms < b->start_ms ? -1 : 1;
	return a->pid < b->pid ? -1 : a->pid > b->pid;
}

size_t summary_procs_by_cpu(const struct summary *s, const struct proc_summary **out, size_t max)
{
	size_t n = s->nprocs < max ? s->nprocs : max;
	const struct proc_summary **all;

	if (s->nprocs == 0)
		return 0;
	all = malloc(s->nprocs * sizeof(*all));
	if (!all) {
		for (size_t i = 0; i < n; i++)
			out[i] = &s->procs[i];
		return n;
	}
	for (size_t i = 0; i < s->nprocs; i++)
		all[i] = &s->procs[i];
	qsort(all, s->nprocs, sizeof(*all), by_cpu);
	memcpy(out, all, n * sizeof(*out));
	free(all);
	return n;
}

static struct gpu_summary *gpu_lookup(struct summary *s, const struct device_record *dev)
{
	for (int i = 0; i < s->ngpus; i++)
		if (strcmp(s->gpus[i].dev.info.uuid, dev->info.uuid) == 0)
			return &s->gpus[i];
	if (!s->gpus) {
		s->gpus = calloc(GPU_MAX_DEVICES, sizeof(*s->gpus));
		if (!s->gpus)
			return NULL;
	}
	if (s->ngpus == GPU_MAX_DEVICES)
		return NULL;
	memset(&s->gpus[s->ngpus], 0, sizeof(s->gpus[0]));
	s->gpus[s->ngpus].dev = *dev;
	return &s->gpus[s->ngpus++];
}

void summary_refresh_device(struct summary *s, const struct device_record *dev)
{
	for (int i = 0; i < s->ngpus; i++)
		if (s->gpus[i].dev.id == dev->id)
			s->gpus[i].dev = *dev;
}

/*
 * The activity of the interval that ended at the last sample, when the job
 * was there: the device's figures, and the job's part of each by the share
 * the energy is split by (attrib/gpu_share.h); unknown when it is there
 * with others and nothing tells them apart.
 */
static void gpu_settle_activity(struct gpu_summary *g)
{
	double f;

	if (!g->act_pending)
		return;
	g->act_pending = false;
	if (g->job_part.nprocs == 0)
		return; /* not the job's time on the device */
	f = gpu_share_fraction(&g->job_part, &g->all_part);
	for (int a = 0; a < GPU_ACTIVITY__COUNT; a++) {
		double v = g->act_pending_pct[a];

		if (isnan(v))
			continue;
		g->act_dev_pct_ms[a] += v * (double)g->act_pending_ms;
		g->act_dev_ms[a] += g->act_pending_ms;
		if (!isnan(f)) {
			g->act_job_pct_ms[a] += v * f * (double)g->act_pending_ms;
			g->act_job_ms[a] += g->act_pending_ms;
		}
	}
}

/* Splits the energy of the interval that ended at the last sample (attrib/gpu_share.h). */
static void gpu_settle_energy(struct gpu_summary *g)
{
	double f;

	if (!g->pending)
		return;
	g->pending = false;
	if (g->pending_first) {
		int64_t span_ms = g->last_ms - g->job_proc_start_ms;

		g->pending_first = false;
		if (!g->job_proc_start_ms || span_ms <= 0 || span_ms > g->first_max_ms)
			return; /* the job was not on it yet, or long before: unknown */
		g->pending_mj = g->first_power_mw * (double)span_ms / 1000.0;
		g->energy_mj += g->pending_mj;
		g->energy_span_ms += span_ms;
		g->has_energy = true;
		if (g->last.valid & GPU_PCIE) { /* the same span at the same reading's rates */
			g->pcie_rx_bytes += (double)g->last.pcie_rx_bps * (double)span_ms / 1000.0;
			g->pcie_tx_bytes += (double)g->last.pcie_tx_bps * (double)span_ms / 1000.0;
			g->has_pcie = true;
		}
	}
	f = gpu_share_fraction(&g->job_part, &g->all_part);
	if (!isnan(f)) {
		g->job_energy_mj += g->pending_mj * f;
		g->others_mj += g->pending_mj * (1 - f);
	} else if (g->all_part.nprocs == 0) {
		g->idle_mj += g->pending_mj;
	} else {
		/* on the GPU with others and nothing to tell them apart: no guess */
		g->unattributed_mj += g->pending_mj;
	}
}

static void gpu_settle(struct gpu_summary *g)
{
	gpu_settle_activity(g);
	gpu_settle_energy(g);
}

/*
 * A utilization reading is the GPU's over the interval that ended at it: it
 * goes to the buckets that interval covers, by the milliseconds it has in
 * each.  The first reading, and one after a gap (no readings for three
 * intervals: the GPU was lost, the agent stopped), count for one interval
 * in their own bucket: a gap in the readings stays a gap in the chart.
 * Three intervals, and 2 s at least: a loaded machine's late ticks are
 * not gaps.
 */
static void gpu_timeline_add(struct summary *s, struct gpu_summary *g, int64_t ts_ms, uint32_t u)
{
	int64_t from = g->util_last_ms, interval = s->interval_ms > 0 ? s->interval_ms : 1;
	int64_t gap = 3 * interval > 2000 ? 3 * interval : 2000;

	if (from <= 0 || ts_ms <= from || ts_ms - from > gap) {
		struct summary_bucket *b = timeline_bucket(s, ts_ms);

		g->bucket_util_pct_ms[b - s->buckets] += (double)u * (double)interval;
		g->bucket_util_ms[b - s->buckets] += interval;
	} else {
		struct summary_bucket *b;
		int64_t part;

		for (int64_t t = from; (b = timeline_part(s, t, ts_ms, &part)); t += part) {
			g->bucket_util_pct_ms[b - s->buckets] += (double)u * (double)part;
			g->bucket_util_ms[b - s->buckets] += part;
		}
	}
	if (ts_ms > g->util_last_ms)
		g->util_last_ms = ts_ms;
}

int summary_add_gpu(struct summary *s, const struct device_record *dev, int64_t ts_ms,
		    const struct gpu_sample *x)
{
	struct gpu_summary *g = gpu_lookup(s, dev);
	const struct gpu_sample *l;

	if (!g)
		return -ENOMEM;
	gpu_settle(g);
	g->samples++;
	if (x->valid & GPU_UTIL) {
		uint32_t u = x->util_pct > 100 ? 100 : x->util_pct;

		g->util_hist[u]++;
		g->util_sum += u;
		g->util_n++;
		if (s->samples > 0) /* the timeline starts with the first job sample */
			gpu_timeline_add(s, g, ts_ms, u);
	}
	if ((x->valid & GPU_MEM_USED) &&
	    (!g->has_mem || x->mem_used_bytes > g->mem_used_peak_bytes)) {
		g->mem_used_peak_bytes = x->mem_used_bytes;
		g->has_mem = true;
	}
	if (x->valid & GPU_THROTTLE) {
		g->throttle_n++;
		if (x->throttle_reasons & GPU_THROTTLE_SLOWDOWN)
			g->throttled++;
	}
	if (x->valid & GPU_TEMP && (!g->has_temp || x->temp_c > g->temp_max_c)) {
		g->temp_max_c = x->temp_c;
		g->has_temp = true;
	}
	if (x->valid & GPU_ECC) {
		if (!g->has_ecc) {
			g->ecc_corrected_first = x->ecc_corrected;
			g->ecc_uncorrected_first = x->ecc_uncorrected;
		}
		g->ecc_corrected_last = x->ecc_corrected;
		g->ecc_uncorrected_last = x->ecc_uncorrected;
		g->has_ecc = true;
	}
	l = &g->last;
	if (g->has_last && ts_ms > g->last_ms) {
		struct gpu_figures gf;
		double mj;

		gpu_figures(x, l, ts_ms - g->last_ms, &gf);
		g->act_pending_ms = ts_ms - g->last_ms;
		for (int a = 0; a < GPU_ACTIVITY__COUNT; a++) {
			g->act_pending_pct[a] = gf.activity_pct[a];
			if (!isnan(gf.activity_pct[a]))
				g->act_pending = true;
		}
		for (int v = 0; v < GPU_VIOLATION__COUNT; v++)
			if (!isnan(gf.throttle_s[v])) {
				g->throttle_s[v] += gf.throttle_s[v];
				g->throttle_known |= 1u << v;
			}
		if (!isnan(gf.pcie_rx_bytes)) { /* trapezoids between two instantaneous rates */
			g->pcie_rx_bytes += gf.pcie_rx_bytes;
			g->pcie_tx_bytes += gf.pcie_tx_bytes;
			g->has_pcie = true;
		}
		if (!isnan(gf.nvlink_rx_bytes) && !isnan(gf.nvlink_tx_bytes)) {
			g->nvlink_rx_bytes += (uint64_t)gf.nvlink_rx_bytes;
			g->nvlink_tx_bytes += (uint64_t)gf.nvlink_tx_bytes;
			g->has_nvlink = true;
		}
		/* the energy counter's growth (a reset counted from 0), else power's trapezoid */
		mj = !isnan(gf.energy_mj) ? gf.energy_mj : gf.power_energy_mj;
		if (!isnan(mj)) {
			g->energy_mj += mj;
			g->energy_span_ms += ts_ms - g->last_ms;
			g->has_energy = true;
			g->pending = true;
			g->pending_mj = mj;
		}
	} else if (!g->has_last && (x->valid & GPU_POWER) && s->job.interval_ms > 0) {
		/*
		 * The first reading: a job that started within the interval
		 * before it (an agent's, first seen at this tick; two
		 * intervals, for late ticks) has the reading before outside
		 * its window.  The part of that interval since its processes
		 * there started is taken as power x time (gpu_settle).
		 */
		g->pending = g->pending_first = true;
		g->first_power_mw = x->power_mw;
		g->first_max_ms = 2 * s->job.interval_ms;
	}
	g->job_proc_start_ms = 0;
	memset(&g->job_part, 0, sizeof(g->job_part));
	memset(&g->all_part, 0, sizeof(g->all_part));
	g->last = *x;
	g->last_ms = ts_ms;
	g->has_last = true;
	return 0;
}

int summary_add_gpu_alone(struct summary *s, const struct device_record *dev)
{
	struct gpu_summary *g = gpu_lookup(s, dev);
	const struct gpu_proc whole = {0};

	if (!g)
		return -ENOMEM;
	s->gpu_procs_known = true;
	g->used = true;
	gpu_share_total_add(&g->all_part, &whole);
	gpu_share_total_add(&g->job_part, &whole);
	if (!g->job_proc_start_ms)
		g->job_proc_start_ms = s->job.start_ms;
	return 0;
}

int summary_add_gpu_proc(struct summary *s, const struct device_record *dev,
			 const struct proc_info *p, int64_t ts_ms, const struct gpu_proc *x)
{
	struct gpu_summary *g = gpu_lookup(s, dev);
	struct proc_summary *e;

	if (!g)
		return -ENOMEM;
	s->gpu_procs_known = true;
	gpu_share_total_add(&g->all_part, x);
	if (!p)
		return 0;
	g->used = true;
	gpu_share_total_add(&g->job_part, x);
	if (p->start_ms > 0 && (!g->job_proc_start_ms || p->start_ms < g->job_proc_start_ms))
		g->job_proc_start_ms = p->start_ms;
	e = proc_lookup(s, p);
	if (!e)
		return -ENOMEM;
	if ((x->valid & GPU_PROC_MEM) &&
	    (!e->has_gpu_mem || x->mem_bytes > e->gpu_mem_peak_bytes)) {
		e->gpu_mem_peak_bytes = x->mem_bytes;
		e->has_gpu_mem = true;
	}
	if (x->valid & GPU_PROC_UTIL) {
		e->gpu_util_sum += x->sm_util_pct;
		e->gpu_util_n++;
	}
	(void)ts_ms;
	return 0;
}

double summary_gpu_activity_pct(const struct gpu_summary *g, enum gpu_activity a, bool job)
{
	int64_t ms;

	if ((unsigned)a >= GPU_ACTIVITY__COUNT)
		return NAN;
	ms = job ? g->act_job_ms[a] : g->act_dev_ms[a];
	if (ms <= 0)
		return NAN;
	return (job ? g->act_job_pct_ms[a] : g->act_dev_pct_ms[a]) / (double)ms;
}

double summary_gpu_throttle_s(const struct gpu_summary *g, enum gpu_violation v)
{
	if ((unsigned)v >= GPU_VIOLATION__COUNT || !(g->throttle_known & (1u << v)))
		return NAN;
	return g->throttle_s[v];
}

double summary_gpus_activity_pct(const struct summary *s, enum gpu_activity a, bool job)
{
	double pct_ms = 0;
	int64_t ms = 0;

	if ((unsigned)a >= GPU_ACTIVITY__COUNT)
		return NAN;
	for (int i = 0; i < s->ngpus; i++) {
		const struct gpu_summary *g = &s->gpus[i];

		if (!g->used)
			continue;
		pct_ms += job ? g->act_job_pct_ms[a] : g->act_dev_pct_ms[a];
		ms += job ? g->act_job_ms[a] : g->act_dev_ms[a];
	}
	return ms > 0 ? pct_ms / (double)ms : NAN;
}

double summary_gpus_throttle_s(const struct summary *s, enum gpu_violation v)
{
	double sum = NAN;

	for (int i = 0; i < s->ngpus; i++) {
		double t;

		if (!s->gpus[i].used)
			continue;
		t = summary_gpu_throttle_s(&s->gpus[i], v);
		if (!isnan(t))
			sum = isnan(sum) ? t : sum + t;
	}
	return sum;
}

int summary_gpu_util_pct(const struct gpu_summary *g, double pct)
{
	uint64_t want, seen = 0;

	if (g->util_n == 0)
		return -1;
	/* nearest rank: the smallest value with at least pct% of samples at or below it */
	want = (uint64_t)ceil(pct / 100.0 * (double)g->util_n);
	if (want == 0)
		want = 1;
	for (int v = 0; v <= 100; v++) {
		seen += g->util_hist[v];
		if (seen >= want)
			return v;
	}
	return 100;
}

double summary_mem_efficiency_pct(const struct summary *s)
{
	if (s->job.reserved_mem_bytes == 0)
		return NAN;
	return 100.0 * (double)summary_rss_peak(s, NULL) / (double)s->job.reserved_mem_bytes;
}

void summary_to_record(const struct summary *s, struct job_summary_record *out)
{
	uint64_t util_sum = 0;
	int64_t util_n = 0;
	int p95 = -1;

	memset(out, 0, sizeof(*out));
	out->job_row = s->job.id;
	out->wall_ms = (int64_t)(summary_duration_s(s) * 1000.0);
	out->cpu_ms = (uint64_t)(summary_cpu_seconds(s) * 1000.0);
	out->cpu_avg_cores = summary_cores_avg(s);
	out->cpu_peak_cores = s->cores_peak;
	out->cpu_efficiency_pct = summary_efficiency_pct(s);
	out->rss_peak_bytes = summary_rss_peak(s, NULL);
	out->mem_efficiency_pct = summary_mem_efficiency_pct(s);
	out->has_io = s->has_io;
	out->read_bytes = s->last.read_bytes;
	out->write_bytes = s->last.write_bytes;
	out->gpu_util_avg_pct = NAN;
	out->gpu_util_p95_pct = NAN;
	for (int i = 0; i < s->ngpus; i++) {
		const struct gpu_summary *g = &s->gpus[i];
		int p;

		if (!g->used)
			continue;
		out->gpus_used++;
		util_sum += g->util_sum;
		util_n += g->util_n;
		p = summary_gpu_util_pct(g, 95);
		if (p > p95)
			p95 = p;
		if (g->has_mem) {
			out->has_gpu_mem = true;
			if (g->mem_used_peak_bytes > out->gpu_mem_peak_bytes)
				out->gpu_mem_peak_bytes = g->mem_used_peak_bytes;
		}
		if (g->has_energy) {
			out->has_gpu_energy = true;
			out->gpu_energy_mj += (uint64_t)g->job_energy_mj;
		}
	}
	if (util_n > 0) {
		out->gpu_util_avg_pct = (double)util_sum / (double)util_n;
		out->gpu_util_p95_pct = p95;
	}
	/* what the SMs did: the job's part, as analysis.efficiency.gpu has it (verdicts.c) */
	out->has_gpu_prof = out->gpus_used > 0;
	out->sm_active_avg_pct = summary_gpus_activity_pct(s, GPU_ACTIVITY_SM, true);
	out->sm_occupancy_avg_pct = summary_gpus_activity_pct(s, GPU_ACTIVITY_SM_OCCUPANCY, true);
	out->tensor_active_avg_pct = summary_gpus_activity_pct(s, GPU_ACTIVITY_TENSOR, true);
	out->dram_active_avg_pct = summary_gpus_activity_pct(s, GPU_ACTIVITY_DRAM, true);
	out->fp64_active_avg_pct = summary_gpus_activity_pct(s, GPU_ACTIVITY_FP64, true);
	out->fp32_active_avg_pct = summary_gpus_activity_pct(s, GPU_ACTIVITY_FP32, true);
	out->fp16_active_avg_pct = summary_gpus_activity_pct(s, GPU_ACTIVITY_FP16, true);
	out->throttle_power_s = summary_gpus_throttle_s(s, GPU_VIOLATION_POWER);
	out->throttle_thermal_s = summary_gpus_throttle_s(s, GPU_VIOLATION_THERMAL);
}
