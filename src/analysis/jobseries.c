/*
 * jobseries.c - a job's time series: a bounded overview over the whole job
 * (buckets that double in width) and the last ticks at full resolution.
 */
#include "analysis/jobseries.h"

/* 100 years: the longest a job's series may span. */
#define JS_MAX_SPAN_MS (100LL * 366 * 86400 * 1000)

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample/figures.h"
#include "store/tick.h"

static const char *const metric_names[JSM__COUNT] = {
    [JSM_CORES] = "cores",
    [JSM_RSS_BYTES] = "rss_bytes",
    [JSM_SWAP_BYTES] = "swap_bytes",
    [JSM_READ_BPS] = "read_bps",
    [JSM_WRITE_BPS] = "write_bps",
    [JSM_HOST_CPU_PCT] = "host_cpu_pct",
    [JSM_HOST_IOWAIT_PCT] = "host_iowait_pct",
    [JSM_HOST_MEM_USED_BYTES] = "host_mem_used_bytes",
    [JSM_PSI_MEM_PCT] = "psi_mem_pct",
    [JSM_PSI_IO_PCT] = "psi_io_pct",
    [JSM_HOST_NET_BPS] = "host_net_bps",
    [JSM_GPU_UTIL_PCT] = "gpu_util_pct",
    [JSM_GPU_MEM_BYTES] = "gpu_mem_bytes",
    [JSM_GPU_POWER_W] = "gpu_power_w",
    [JSM_GPU_PCIE_BPS] = "gpu_pcie_bps",
    [JSM_GPU_NVLINK_BPS] = "gpu_nvlink_bps",
    [JSM_GPU_THROTTLED] = "gpu_throttled",
    [JSM_GPUS_BUSY] = "gpus_busy",
};

static const char *const gpu_metric_names[JSG__COUNT] = {
    [JSG_UTIL_PCT] = "util_pct",
    [JSG_MEM_BYTES] = "mem_bytes",
    [JSG_POWER_W] = "power_w",
    [JSG_PCIE_BPS] = "pcie_bps",
    [JSG_NVLINK_BPS] = "nvlink_bps",
    [JSG_THROTTLED] = "throttled",
    [JSG_SM_ACTIVE_PCT] = "sm_active_pct",
    [JSG_SM_OCCUPANCY_PCT] = "sm_occupancy_pct",
    [JSG_TENSOR_ACTIVE_PCT] = "tensor_active_pct",
    [JSG_DRAM_ACTIVE_PCT] = "dram_active_pct",
    [JSG_THROTTLE_POWER_PCT] = "throttle_power_pct",
};

/* GPU busy threshold for JSM_GPUS_BUSY and the analysis' "GPUs busy". */
#define GPU_BUSY_PCT 5.0

const char *jobseries_metric_name(int metric)
{
	return metric >= 0 && metric < JSM__COUNT ? metric_names[metric] : "?";
}

const char *jobseries_gpu_metric_name(int metric)
{
	return metric >= 0 && metric < JSG__COUNT ? gpu_metric_names[metric] : "?";
}

static void track_clear(struct js_track *t)
{
	memset(t->sum, 0, sizeof(t->sum));
	memset(t->n, 0, sizeof(t->n));
	for (size_t i = 0; i < JS_RING; i++)
		t->ring[i] = NAN;
}

static struct js_track *track_new(void)
{
	struct js_track *t = malloc(sizeof(*t));

	if (t)
		track_clear(t);
	return t;
}

void jobseries_init(struct jobseries *js, int64_t interval_ms)
{
	memset(js, 0, sizeof(*js));
	js->interval_ms = interval_ms > 0 ? interval_ms : 1000;
	js->interval_since_ms = INT64_MIN;
	js->bucket_ms = js->interval_ms;
}

void jobseries_release(struct jobseries *js)
{
	for (int m = 0; m < JSM__COUNT; m++)
		free(js->m[m]);
	for (int i = 0; i < js->ngpus; i++)
		free(js->gpu[i]);
	memset(js, 0, sizeof(*js));
}

static void track_halve(struct js_track *t)
{
	for (size_t i = 0; i < JS_POINTS / 2; i++) {
		t->sum[i] = t->sum[2 * i] + t->sum[2 * i + 1];
		t->n[i] = t->n[2 * i] + t->n[2 * i + 1];
	}
	memset(t->sum + JS_POINTS / 2, 0, sizeof(t->sum) / 2);
	memset(t->n + JS_POINTS / 2, 0, sizeof(t->n) / 2);
}

/* Merges neighbouring buckets of every track: the overview now spans twice as long. */
static void overview_halve(struct jobseries *js)
{
	for (int m = 0; m < JSM__COUNT; m++)
		if (js->m[m])
			track_halve(js->m[m]);
	for (int i = 0; i < js->ngpus; i++)
		for (int m = 0; m < JSG__COUNT; m++)
			track_halve(&js->gpu[i]->t[m]);
	for (size_t i = 0; i < JS_POINTS / 2; i++) {
		int64_t f0 = js->tick_first[2 * i], f1 = js->tick_first[2 * i + 1];
		int64_t l0 = js->tick_last[2 * i], l1 = js->tick_last[2 * i + 1];

		js->tick_first[i] = f0 ? f0 : f1;
		js->tick_last[i] = l1 ? l1 : l0;
	}
	memset(js->tick_first + JS_POINTS / 2, 0, sizeof(js->tick_first) / 2);
	memset(js->tick_last + JS_POINTS / 2, 0, sizeof(js->tick_last) / 2);
	js->bucket_ms *= 2;
	js->npoints = (js->npoints + 1) / 2;
}

void jobseries_set_interval(struct jobseries *js, int64_t ts_ms, int64_t interval_ms)
{
	if (interval_ms <= 0 || interval_ms > STORE_INTERVAL_MAX_MS ||
	    interval_ms == js->interval_ms)
		return;
	js->interval_ms = interval_ms;
	js->interval_since_ms = ts_ms;
	/* with samples, the buckets widen when the next one comes (locate) */
	if (!js->has_t0 && js->bucket_ms < interval_ms)
		js->bucket_ms = interval_ms;
}

/*
 * The overview bucket and the ring slot of time ts; -1 for a time before
 * the series began (the ring only moves forward).
 */
static int locate(struct jobseries *js, int64_t ts_ms, size_t *bucket, ssize_t *slot)
{
	int64_t idx;

	if (!js->has_t0) {
		js->t0_ms = ts_ms;
		js->has_t0 = true;
	}
	/* before the first sample, or centuries after it (a corrupt store): not kept */
	if (ts_ms < js->t0_ms || __builtin_sub_overflow(ts_ms, js->t0_ms, &idx) ||
	    idx > JS_MAX_SPAN_MS)
		return -1;
	/* buckets narrower than the interval would be empty one in two */
	while (js->bucket_ms < js->interval_ms)
		overview_halve(js);
	idx /= js->bucket_ms;
	while (idx >= JS_POINTS) {
		overview_halve(js);
		idx = (ts_ms - js->t0_ms) / js->bucket_ms;
	}
	*bucket = (size_t)idx;
	if (*bucket + 1 > js->npoints)
		js->npoints = *bucket + 1;
	if (!js->tick_first[*bucket] || ts_ms - js->t0_ms + 1 < js->tick_first[*bucket])
		js->tick_first[*bucket] = ts_ms - js->t0_ms + 1;
	if (ts_ms - js->t0_ms + 1 > js->tick_last[*bucket])
		js->tick_last[*bucket] = ts_ms - js->t0_ms + 1;

	*slot = -1;
	if (js->ring_len && ts_ms == js->ring_last_ms) {
		*slot = (ssize_t)((js->ring_head + JS_RING - 1) % JS_RING);
	} else if (!js->ring_len || ts_ms > js->ring_last_ms) {
		size_t s = js->ring_head;

		for (int m = 0; m < JSM__COUNT; m++)
			if (js->m[m])
				js->m[m]->ring[s] = NAN;
		for (int i = 0; i < js->ngpus; i++)
			for (int m = 0; m < JSG__COUNT; m++)
				js->gpu[i]->t[m].ring[s] = NAN;
		js->ring_ts[s] = ts_ms;
		js->ring_last_ms = ts_ms;
		js->ring_head = (s + 1) % JS_RING;
		if (js->ring_len < JS_RING)
			js->ring_len++;
		*slot = (ssize_t)s;
	}
	return 0;
}

static void track_put(struct js_track *t, size_t bucket, ssize_t slot, double v)
{
	if (isnan(v))
		return;
	t->sum[bucket] += v;
	t->n[bucket]++;
	if (slot >= 0)
		t->ring[slot] = v;
}

static int put(struct jobseries *js, int metric, size_t bucket, ssize_t slot, double v)
{
	if (isnan(v))
		return 0;
	if (!js->m[metric]) {
		js->m[metric] = track_new();
		if (!js->m[metric])
			return -ENOMEM;
	}
	track_put(js->m[metric], bucket, slot, v);
	return 0;
}

int jobseries_add_host(struct jobseries *js, int64_t ts_ms, const struct host_sample *h)
{
	struct host_reading cur, prev;
	struct host_figures f;
	size_t bucket;
	ssize_t slot;
	int ret;

	if (locate(js, ts_ms, &bucket, &slot))
		return 0;
	/*
	 * The reading before, as the series keeps it (its checkpoint's layout):
	 * the network's two counters as their sum, which is all net_bps needs.
	 */
	prev = (struct host_reading){
	    .valid = js->prev_host_valid,
	    .cpu = js->prev_cpu,
	    .net_rx_bytes = js->prev_net_bytes,
	    .psi_mem_some_us = js->prev_psi_mem_us,
	    .psi_io_some_us = js->prev_psi_io_us,
	};
	host_reading_of(h, &cur);
	host_figures(&cur, js->has_prev_host && ts_ms > js->prev_host_ms ? &prev : NULL,
		     ts_ms - js->prev_host_ms, &f);
	ret = put(js, JSM_HOST_MEM_USED_BYTES, bucket, slot, f.mem_used_bytes);
	ret = ret ?: put(js, JSM_HOST_CPU_PCT, bucket, slot, f.cpu_busy_pct);
	ret = ret ?: put(js, JSM_HOST_IOWAIT_PCT, bucket, slot, f.cpu_iowait_pct);
	ret = ret ?: put(js, JSM_HOST_NET_BPS, bucket, slot, f.net_bps);
	ret = ret ?: put(js, JSM_PSI_MEM_PCT, bucket, slot, f.psi_mem_pct);
	ret = ret ?: put(js, JSM_PSI_IO_PCT, bucket, slot, f.psi_io_pct);
	js->has_prev_host = true;
	js->prev_host_ms = ts_ms;
	js->prev_host_valid = h->valid;
	js->prev_cpu = h->cpu.total;
	js->prev_psi_mem_us = h->psi_mem.some_total_us;
	js->prev_psi_io_us = h->psi_io.some_total_us;
	js->prev_net_bytes = h->net_rx_bytes + h->net_tx_bytes;
	return ret;
}

int jobseries_add_job(struct jobseries *js, int64_t ts_ms, const struct job_sample *j)
{
	struct job_figures f;
	size_t bucket;
	ssize_t slot;
	int ret;

	if (locate(js, ts_ms, &bucket, &slot))
		return 0;
	/*
	 * No process left, or only zombies (the job's last sample): no memory
	 * to speak of, which is not 0 - a live process always has some.
	 */
	ret = j->nprocs && j->rss_bytes ? put(js, JSM_RSS_BYTES, bucket, slot, (double)j->rss_bytes)
					: 0;
	if (j->nprocs && j->valid & JS_SWAP)
		ret = ret ?: put(js, JSM_SWAP_BYTES, bucket, slot, (double)j->swap_bytes);
	job_figures(j, js->has_prev_job && ts_ms > js->prev_job_ms ? &js->prev_job : NULL,
		    ts_ms - js->prev_job_ms, &f);
	ret = ret ?: put(js, JSM_CORES, bucket, slot, f.proc_cores);
	ret = ret ?: put(js, JSM_READ_BPS, bucket, slot, f.read_bps);
	ret = ret ?: put(js, JSM_WRITE_BPS, bucket, slot, f.write_bps);
	js->has_prev_job = true;
	js->prev_job_ms = ts_ms;
	js->prev_job = *j;
	return ret;
}

void jobseries_refresh_device(struct jobseries *js, const struct device_record *dev)
{
	for (int i = 0; i < js->ngpus; i++) {
		struct js_gpu *g = js->gpu[i];

		if (strcmp(g->uuid, dev->info.uuid) != 0)
			continue;
		g->index = dev->info.index;
		g->mem_total_bytes =
		    dev->info.valid & GPU_INFO_MEM_TOTAL ? dev->info.mem_total_bytes : 0;
	}
}

static struct js_gpu *gpu_slot(struct jobseries *js, const struct device_record *dev)
{
	struct js_gpu *g;

	for (int i = 0; i < js->ngpus; i++)
		if (strcmp(js->gpu[i]->uuid, dev->info.uuid) == 0)
			return js->gpu[i];
	if (js->ngpus == JS_MAX_GPUS)
		return NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	snprintf(g->uuid, sizeof(g->uuid), "%s", dev->info.uuid);
	g->index = dev->info.index;
	if (dev->info.valid & GPU_INFO_MEM_TOTAL)
		g->mem_total_bytes = dev->info.mem_total_bytes;
	for (int m = 0; m < JSG__COUNT; m++)
		track_clear(&g->t[m]);
	/* a device first seen mid-ring has no values in the slots before */
	js->gpu[js->ngpus++] = g;
	return g;
}

int jobseries_add_gpu(struct jobseries *js, const struct device_record *dev, int64_t ts_ms,
		      const struct gpu_sample *s)
{
	struct js_gpu *g;
	size_t bucket;
	ssize_t slot;

	if (locate(js, ts_ms, &bucket, &slot))
		return 0;
	g = gpu_slot(js, dev);
	if (!g)
		return js->ngpus == JS_MAX_GPUS ? 0 : -ENOMEM;
	if (s->valid & GPU_UTIL)
		track_put(&g->t[JSG_UTIL_PCT], bucket, slot, s->util_pct);
	if (s->valid & GPU_MEM_USED)
		track_put(&g->t[JSG_MEM_BYTES], bucket, slot, (double)s->mem_used_bytes);
	if (s->valid & GPU_POWER)
		track_put(&g->t[JSG_POWER_W], bucket, slot, s->power_mw / 1000.0);
	if (s->valid & GPU_PCIE)
		track_put(&g->t[JSG_PCIE_BPS], bucket, slot,
			  (double)s->pcie_rx_bps + (double)s->pcie_tx_bps);
	if (s->valid & GPU_THROTTLE)
		track_put(&g->t[JSG_THROTTLED], bucket, slot,
			  (s->throttle_reasons & GPU_THROTTLE_SLOWDOWN) ? 1.0 : 0.0);
	if (s->valid & GPU_NVLINK) {
		/* the reading before as the series keeps it: both ways' sum */
		struct gpu_sample last = {.valid = GPU_NVLINK,
					  .nvlink_rx_bytes = g->last_nvlink_bytes};
		struct gpu_figures f;

		if (g->has_last_nvlink && ts_ms > g->last_nvlink_ms) {
			gpu_figures(s, &last, ts_ms - g->last_nvlink_ms, &f);
			track_put(&g->t[JSG_NVLINK_BPS], bucket, slot, f.nvlink_bps);
		}
		g->has_last_nvlink = true;
		g->last_nvlink_ms = ts_ms;
		g->last_nvlink_bytes = s->nvlink_rx_bytes + s->nvlink_tx_bytes;
	}
	{
		static const int act[][2] = {
		    {JSG_SM_ACTIVE_PCT, GPU_ACTIVITY_SM},
		    {JSG_SM_OCCUPANCY_PCT, GPU_ACTIVITY_SM_OCCUPANCY},
		    {JSG_TENSOR_ACTIVE_PCT, GPU_ACTIVITY_TENSOR},
		    {JSG_DRAM_ACTIVE_PCT, GPU_ACTIVITY_DRAM},
		};

		for (size_t i = 0; i < sizeof(act) / sizeof(act[0]); i++) {
			double v = gpu_activity_pct(s, act[i][1]);

			if (!isnan(v))
				track_put(&g->t[act[i][0]], bucket, slot, v);
		}
	}
	if (s->prof_valid & GPU_PROF_VIOL_POWER) {
		/* the reading before as the series keeps it: the power counter alone */
		struct gpu_sample last = {.prof_valid = GPU_PROF_VIOL_POWER,
					  .viol_power_ns = g->last_viol_power_ns};
		struct gpu_figures f;

		if (g->has_last_viol && ts_ms > g->last_viol_ms) {
			gpu_figures(s, &last, ts_ms - g->last_viol_ms, &f);
			if (!isnan(f.throttle_s[GPU_VIOLATION_POWER]))
				track_put(
				    &g->t[JSG_THROTTLE_POWER_PCT], bucket, slot,
				    fmin(100.0, 100.0 * f.throttle_s[GPU_VIOLATION_POWER] /
						    ((double)(ts_ms - g->last_viol_ms) / 1000.0)));
		}
		g->has_last_viol = true;
		g->last_viol_ms = ts_ms;
		g->last_viol_power_ns = s->viol_power_ns;
	}
	return 0;
}

static bool listed(const char *uuid, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(uuid, list[i]) == 0)
			return true;
	return false;
}

/* Slot k of a track: its ring's value, or its overview bucket's mean. */
static double slot_value(const struct js_track *t, bool ring, size_t k)
{
	if (ring)
		return t->ring[k];
	return t->n[k] ? t->sum[k] / t->n[k] : NAN;
}

/* Sets slot k (a bucket takes v as its one sample; NAN leaves it empty). */
static void slot_set(struct js_track *t, bool ring, size_t k, double v)
{
	if (ring) {
		t->ring[k] = v;
	} else if (!isnan(v)) {
		t->sum[k] = v;
		t->n[k] = 1;
	}
}

/*
 * The aggregates over the job's devices at slot k: the mean utilization of
 * those that reported one and how many were busy, the mean throttled
 * share, and sums of memory, power and traffic.
 */
static void aggregate_slot(struct jobseries *js, bool ring, size_t k)
{
	static const int sum_of[][2] = {
	    {JSM_GPU_MEM_BYTES, JSG_MEM_BYTES},
	    {JSM_GPU_POWER_W, JSG_POWER_W},
	    {JSM_GPU_PCIE_BPS, JSG_PCIE_BPS},
	    {JSM_GPU_NVLINK_BPS, JSG_NVLINK_BPS},
	};
	double util = 0, busy = 0, thr = 0;
	int nu = 0, nt = 0;

	for (int i = 0; i < js->ngpus; i++) {
		const struct js_gpu *g = js->gpu[i];
		double u = slot_value(&g->t[JSG_UTIL_PCT], ring, k);
		double t = slot_value(&g->t[JSG_THROTTLED], ring, k);

		if (!g->job)
			continue;
		if (!isnan(u)) {
			util += u;
			busy += u > GPU_BUSY_PCT;
			nu++;
		}
		if (!isnan(t)) {
			thr += t;
			nt++;
		}
	}
	slot_set(js->m[JSM_GPU_UTIL_PCT], ring, k, nu ? util / nu : NAN);
	slot_set(js->m[JSM_GPUS_BUSY], ring, k, nu ? busy : NAN);
	slot_set(js->m[JSM_GPU_THROTTLED], ring, k, nt ? thr / nt : NAN);
	for (size_t a = 0; a < sizeof(sum_of) / sizeof(sum_of[0]); a++) {
		double sum = 0;
		int n = 0;

		for (int i = 0; i < js->ngpus; i++) {
			double v = slot_value(&js->gpu[i]->t[sum_of[a][1]], ring, k);

			if (js->gpu[i]->job && !isnan(v)) {
				sum += v;
				n++;
			}
		}
		slot_set(js->m[sum_of[a][0]], ring, k, n ? sum : NAN);
	}
}

void jobseries_finish(struct jobseries *js, const char *const *job_gpus, size_t njob_gpus)
{
	int njob = 0;

	if (js->finished)
		return;
	js->finished = true;
	for (int i = 0; i < js->ngpus; i++) {
		js->gpu[i]->job = !njob_gpus || listed(js->gpu[i]->uuid, job_gpus, njob_gpus);
		njob += js->gpu[i]->job;
	}
	if (!njob)
		return;
	for (int m = JSM_GPU_UTIL_PCT; m <= JSM_GPUS_BUSY; m++) {
		js->m[m] = track_new();
		if (!js->m[m])
			return; /* the aggregates stay missing */
	}
	/* each overview bucket holds one "sample": the mean over the devices */
	for (size_t k = 0; k < js->npoints; k++)
		aggregate_slot(js, false, k);
	for (size_t k = 0; k < JS_RING; k++)
		aggregate_slot(js, true, k);
}

static const struct js_track *track_of(const struct jobseries *js, int gpu, int metric)
{
	if (gpu < 0)
		return metric >= 0 && metric < JSM__COUNT ? js->m[metric] : NULL;
	if (gpu >= js->ngpus || metric < 0 || metric >= JSG__COUNT)
		return NULL;
	return &js->gpu[gpu]->t[metric];
}

size_t jobseries_overview(const struct jobseries *js, int gpu, int metric, double *out)
{
	const struct js_track *t = track_of(js, gpu, metric);

	for (size_t i = 0; i < js->npoints; i++)
		out[i] = t && t->n[i] ? t->sum[i] / t->n[i] : NAN;
	/* a bucket no tick fell into, between two that got ticks about an interval apart */
	for (size_t i = 1; i + 1 < js->npoints; i++)
		if (t && isnan(out[i]) && !js->tick_first[i] && js->tick_last[i - 1] &&
		    js->tick_first[i + 1] && !isnan(out[i - 1]) && t->n[i + 1] &&
		    2 * (js->tick_first[i + 1] - js->tick_last[i - 1]) < 3 * js->interval_ms)
			out[i] = (out[i - 1] + t->sum[i + 1] / t->n[i + 1]) / 2;
	return js->npoints;
}

size_t jobseries_detail(const struct jobseries *js, int gpu, int metric, double *out,
			int64_t *t_first_ms)
{
	const struct js_track *t = track_of(js, gpu, metric);
	size_t first = (js->ring_head + JS_RING - js->ring_len) % JS_RING, n = js->ring_len;

	/* the ticks before the interval's last change are spaced otherwise */
	while (n && js->ring_ts[first] <= js->interval_since_ms) {
		first = (first + 1) % JS_RING;
		n--;
	}
	*t_first_ms = n ? js->ring_ts[first] : 0;
	for (size_t i = 0; i < n; i++)
		out[i] = t ? t->ring[(first + i) % JS_RING] : NAN;
	return n;
}

bool jobseries_has(const struct jobseries *js, int gpu, int metric)
{
	const struct js_track *t = track_of(js, gpu, metric);

	if (!t)
		return false;
	for (size_t i = 0; i < js->npoints; i++)
		if (t->n[i])
			return true;
	return false;
}
