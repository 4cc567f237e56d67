/*
 * reportckpt.c - a report's state as a checkpoint blob and back (see
 * reportckpt.h); ckptmaint.c keeps jobs' checkpoints up to date.
 *
 *   struct wbuf, struct rbuf             the payload written and read
 *   encode_summary, encode_series        the structs, pointers as contents
 *   check_summary, check_series, ...     what a restore must not trust
 *   report_ckpt_encode, report_ckpt_decode, report_ckpt_save
 */
#include "analysis/reportckpt.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "store/tick.h"
#include "store/reader.h"

/* Bump when the meaning of a field changes without its size changing. */
#define CKPT_VERSION 2 /* 2: a GPU's activity and throttle seconds */
#define CKPT_MAGIC   "JSCK"
/* Decompressed payloads larger than this are refused: the structs are a few MiB. */
#define CKPT_MAX_PAYLOAD (64u << 20)
/* A checkpoint's times lie within this of the epoch (JOB_REPORT_MAX_MS both ways). */
#define CKPT_MAX_MS	 JOB_REPORT_MAX_MS
#define CKPT_MAX_PROCS	 (1u << 22)
#define CKPT_MAX_CMDLINE (1u << 20)
#define CKPT_NO_CMDLINE	 UINT32_MAX

/* The payload header, after which the structs come in order. */
struct ckpt_head {
	int64_t job_id, start_ms, end_ms, interval_ms;
	int64_t seq, ts_ms;
	uint64_t nprocs, nevents;
	int32_t ngpus_sum, ngpus_series;
	uint32_t tracks; /* bit m: jobseries m[m] present */
	uint32_t has_gpus;
	int64_t window_ms;
};

int64_t report_ckpt_format(void)
{
	/* the sizes of what is copied whole: a change of layout makes a new format */
	static const uint64_t parts[] = {
	    CKPT_VERSION,
	    sizeof(struct summary),
	    sizeof(struct proc_summary),
	    sizeof(struct gpu_summary),
	    sizeof(struct event_record),
	    sizeof(struct jobseries),
	    sizeof(struct js_track),
	    sizeof(struct js_gpu),
	    sizeof(struct ckpt_head),
	    SUMMARY_BUCKETS,
	    JS_POINTS,
	    JS_RING,
	    JSM__COUNT,
	    JSG__COUNT,
	    GPU_MAX_DEVICES,
	    JS_MAX_GPUS,
	};
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		h ^= parts[i];
		h *= 1099511628211ull;
	}
	return (int64_t)(h >> 33); /* positive, fits a column */
}

/* ---- writing ---- */

static int put(struct strbuf *b, const void *p, size_t n)
{
	return strbuf_add(b, p, n);
}

static int encode_summary(struct strbuf *b, const struct summary *s)
{
	struct summary copy = *s;
	int ret;

	copy.procs = NULL;
	copy.procs_alloc = 0;
	copy.proc_index = NULL;
	copy.proc_index_size = 0;
	copy.events = NULL;
	copy.events_alloc = 0;
	copy.gpus = NULL;
	copy.libs = NULL; /* read from the store with the report (summary_load_libs) */
	copy.nlibs = 0;
	ret = put(b, &copy, sizeof(copy));
	for (size_t i = 0; i < s->nprocs && !ret; i++) {
		struct proc_summary p = s->procs[i];
		uint32_t len = p.cmdline ? (uint32_t)strlen(p.cmdline) : CKPT_NO_CMDLINE;

		p.cmdline = NULL;
		ret = put(b, &p, sizeof(p));
		ret = ret ?: put(b, &len, sizeof(len));
		if (!ret && len != CKPT_NO_CMDLINE)
			ret = put(b, s->procs[i].cmdline, len);
	}
	if (!ret && s->nevents)
		ret = put(b, s->events, s->nevents * sizeof(s->events[0]));
	if (!ret && s->gpus && s->ngpus > 0)
		ret = put(b, s->gpus, (size_t)s->ngpus * sizeof(s->gpus[0]));
	return ret;
}

static int encode_series(struct strbuf *b, const struct jobseries *js)
{
	struct jobseries copy = *js;
	int ret;

	memset(copy.m, 0, sizeof(copy.m));
	memset(copy.gpu, 0, sizeof(copy.gpu));
	ret = put(b, &copy, sizeof(copy));
	for (int m = 0; m < JSM__COUNT && !ret; m++)
		if (js->m[m])
			ret = put(b, js->m[m], sizeof(*js->m[m]));
	for (int i = 0; i < js->ngpus && !ret; i++)
		ret = put(b, js->gpu[i], sizeof(*js->gpu[i]));
	return ret;
}

int report_ckpt_encode(const struct summary *s, const struct jobseries *js,
		       const struct job_record *job, const struct report_ckpt_mark *mark,
		       void **data, size_t *size)
{
	struct ckpt_head h;
	struct strbuf b;
	int64_t format = report_ckpt_format();
	uint32_t format32 = (uint32_t)format;
	size_t bound, n;
	char *out;
	int ret;

	*data = NULL;
	*size = 0;
	if (js->finished)
		return -EINVAL; /* finish changed the series: not a state to go on from */
	memset(&h, 0, sizeof(h));
	h.job_id = job->id;
	h.start_ms = job->start_ms;
	h.end_ms = job->end_ms;
	h.interval_ms = job->interval_ms;
	h.seq = mark->seq;
	h.ts_ms = mark->ts_ms;
	h.window_ms = mark->window_ms;
	h.nprocs = s->nprocs;
	h.nevents = s->nevents;
	h.ngpus_sum = s->gpus ? s->ngpus : 0;
	h.has_gpus = s->gpus != NULL;
	h.ngpus_series = js->ngpus;
	for (int m = 0; m < JSM__COUNT; m++)
		if (js->m[m])
			h.tracks |= 1u << m;
	strbuf_init(&b, 0);
	ret = put(&b, &h, sizeof(h));
	ret = ret ?: encode_summary(&b, s);
	ret = ret ?: encode_series(&b, js);
	if (ret)
		goto out_release;
	bound = ZSTD_compressBound(b.len);
	out = malloc(8 + bound);
	if (!out) {
		ret = -ENOMEM;
		goto out_release;
	}
	memcpy(out, CKPT_MAGIC, 4);
	memcpy(out + 4, &format32, 4);
	n = ZSTD_compress(out + 8, bound, b.buf, b.len, 1);
	if (ZSTD_isError(n)) {
		free(out);
		ret = -EIO;
		goto out_release;
	}
	*data = out;
	*size = 8 + n;
out_release:
	strbuf_release(&b);
	return ret;
}

/* ---- reading: nothing in the blob is trusted ---- */

struct rbuf {
	const unsigned char *p;
	size_t left;
};

static bool take(struct rbuf *r, void *dst, size_t n)
{
	if (n > r->left)
		return false;
	memcpy(dst, r->p, n);
	r->p += n;
	r->left -= n;
	return true;
}

/* A flag read as bytes: 0 or 1 from then on (any other byte is no bool). */
static void fix_bool(bool *b)
{
	unsigned char c;

	memcpy(&c, b, 1);
	c = c != 0;
	memcpy(b, &c, 1);
}

#define FIX_BOOLS(...)                                                                             \
	do {                                                                                       \
		bool *bools_[] = {__VA_ARGS__};                                                    \
		for (size_t k_ = 0; k_ < sizeof(bools_) / sizeof(bools_[0]); k_++)                 \
			fix_bool(bools_[k_]);                                                      \
	} while (0)

#define TERMINATE(a) ((a)[sizeof(a) - 1] = '\0')

static bool ms_ok(int64_t ms)
{
	return ms >= -CKPT_MAX_MS && ms <= CKPT_MAX_MS;
}

/*
 * A figure a replay could have made: finite, and no larger than a sum of
 * 64-bit counters over a long job (a track's bucket sums up to a million
 * samples of them).
 */
static bool num_ok(double v)
{
	return isfinite(v) && fabs(v) < 1e20;
}

static bool sum_ok(double v)
{
	return isfinite(v) && fabs(v) < 1e26;
}

static bool device_ok(struct device_record *d)
{
	TERMINATE(d->vendor);
	TERMINATE(d->driver_version);
	TERMINATE(d->info.uuid);
	TERMINATE(d->info.name);
	TERMINATE(d->info.pci_bus_id);
	return true;
}

static bool gpu_summary_ok(struct gpu_summary *g)
{
	FIX_BOOLS(&g->used, &g->has_mem, &g->has_pcie, &g->has_nvlink, &g->has_energy, &g->has_ecc,
		  &g->has_temp, &g->has_last, &g->pending, &g->pending_first);
	device_ok(&g->dev);
	if (g->samples < 0 || g->util_n < 0 || g->throttle_n < 0 || g->throttled < 0 ||
	    !ms_ok(g->energy_span_ms) || !ms_ok(g->last_ms) || !ms_ok(g->first_max_ms) ||
	    !ms_ok(g->job_proc_start_ms) || !ms_ok(g->util_last_ms))
		return false;
	for (int i = 0; i < SUMMARY_BUCKETS; i++)
		if (!num_ok(g->bucket_util_pct_ms[i]) || g->bucket_util_pct_ms[i] < 0 ||
		    g->bucket_util_ms[i] < 0)
			return false;
	if (!num_ok(g->pcie_rx_bytes) || !num_ok(g->pcie_tx_bytes) || !num_ok(g->energy_mj) ||
	    !num_ok(g->job_energy_mj) || !num_ok(g->unattributed_mj) || !num_ok(g->others_mj) ||
	    !num_ok(g->idle_mj) || !num_ok(g->pending_mj) || !num_ok(g->first_power_mw) ||
	    !num_ok(g->job_part.sm_util_pct) || !num_ok(g->job_part.mem_bytes) ||
	    !num_ok(g->all_part.sm_util_pct) || !num_ok(g->all_part.mem_bytes))
		return false;
	fix_bool(&g->act_pending);
	if (!ms_ok(g->act_pending_ms) || g->act_pending_ms < 0)
		return false;
	for (int i = 0; i < GPU_ACTIVITY__COUNT; i++)
		if (!num_ok(g->act_dev_pct_ms[i]) || !num_ok(g->act_job_pct_ms[i]) ||
		    g->act_dev_pct_ms[i] < 0 || g->act_job_pct_ms[i] < 0 ||
		    !ms_ok(g->act_dev_ms[i]) || !ms_ok(g->act_job_ms[i]) || g->act_dev_ms[i] < 0 ||
		    g->act_job_ms[i] < 0 ||
		    /* NAN: not in that reading; else a percentage */
		    (!isnan(g->act_pending_pct[i]) &&
		     !(g->act_pending_pct[i] >= 0 && g->act_pending_pct[i] <= 100)))
			return false;
	for (int i = 0; i < GPU_VIOLATION__COUNT; i++)
		if (!num_ok(g->throttle_s[i]) || g->throttle_s[i] < 0)
			return false;
	g->throttle_known &= (1u << GPU_VIOLATION__COUNT) - 1;
	return true;
}

static bool host_point_ok(const struct host_point *h)
{
	return ms_ok(h->ts_ms) && h->ncpus >= 0 && h->ncpus <= 1 << 20;
}

/* The summary's own fields (its arrays come after). */
static bool summary_ok(struct summary *s)
{
	FIX_BOOLS(&s->has_swap, &s->has_cg_mem_peak, &s->has_cg_cpu, &s->has_io,
		  &s->gpu_procs_known, &s->has_cpu_wait);
	if (!ms_ok(s->cpu_wait_first_ts) || !ms_ok(s->cpu_wait_last_ts))
		return false;
	if (s->interval_ms < 0 || s->interval_ms > STORE_INTERVAL_MAX_MS || s->bucket_ms < 1 ||
	    s->bucket_ms > CKPT_MAX_MS || s->samples < 0 || s->host_samples < 0)
		return false;
	if (!ms_ok(s->first_ms) || !ms_ok(s->last_ms) || !ms_ok(s->prev_last_ms) ||
	    !ms_ok(s->win_start_ms) || !ms_ok(s->cores_peak_at_ms) || !ms_ok(s->rss_peak_at_ms) ||
	    !ms_ok(s->hwm_peak_at_ms) || !host_point_ok(&s->host_first) ||
	    !host_point_ok(&s->host_last))
		return false;
	if (!num_ok(s->cores_peak) || !num_ok(s->read_peak_bps) || !num_ok(s->write_peak_bps))
		return false;
	for (int i = 0; i < SUMMARY_BUCKETS; i++) {
		fix_bool(&s->buckets[i].used);
		if (!ms_ok(s->buckets[i].start_ms) || !ms_ok(s->buckets[i].span_ms))
			return false;
	}
	return true;
}

static bool proc_ok(struct proc_summary *p)
{
	FIX_BOOLS(&p->has_rss, &p->has_swap, &p->has_io, &p->has_gpu_mem);
	TERMINATE(p->comm);
	return ms_ok(p->start_ms) && ms_ok(p->end_ms) && p->gpu_util_n >= 0;
}

static bool event_ok(struct event_record *e)
{
	fix_bool(&e->has_gpu);
	TERMINATE(e->kind);
	TERMINATE(e->message);
	return ms_ok(e->ts_ms);
}

static int decode_procs(struct rbuf *r, struct summary *s, uint64_t n)
{
	if (n > CKPT_MAX_PROCS || n * sizeof(struct proc_summary) > r->left)
		return -EPROTO;
	s->nprocs = 0;
	if (!n)
		return 0;
	s->procs = calloc(n, sizeof(*s->procs));
	if (!s->procs)
		return -ENOMEM;
	s->procs_alloc = n;
	for (uint64_t i = 0; i < n; i++) {
		struct proc_summary *p = &s->procs[i];
		uint32_t len;

		if (!take(r, p, sizeof(*p)))
			return -EPROTO;
		p->cmdline = NULL;
		s->nprocs = i + 1; /* released with the summary from here on */
		if (!proc_ok(p) || !take(r, &len, sizeof(len)))
			return -EPROTO;
		if (len == CKPT_NO_CMDLINE)
			continue;
		if (len > CKPT_MAX_CMDLINE || len > r->left)
			return -EPROTO;
		p->cmdline = malloc((size_t)len + 1);
		if (!p->cmdline)
			return -ENOMEM;
		take(r, p->cmdline, len);
		p->cmdline[len] = '\0';
	}
	return summary_index_procs(s);
}

static int decode_summary(struct rbuf *r, const struct ckpt_head *h, struct summary *s)
{
	int ret;

	if (!take(r, s, sizeof(*s)))
		return -EPROTO;
	/* nothing the blob says about memory is kept: counts come from the head */
	s->procs = NULL;
	s->nprocs = s->procs_alloc = 0;
	s->proc_index = NULL;
	s->proc_index_size = 0;
	s->events = NULL;
	s->nevents = s->events_alloc = 0;
	s->gpus = NULL;
	s->libs = NULL;
	s->nlibs = 0;
	s->ngpus = 0;
	if (!summary_ok(s))
		return -EPROTO;
	ret = decode_procs(r, s, h->nprocs);
	if (ret)
		return ret;
	if (h->nevents > 10000 || h->nevents * sizeof(struct event_record) > r->left)
		return -EPROTO;
	if (h->nevents) {
		s->events = calloc(h->nevents, sizeof(*s->events));
		if (!s->events)
			return -ENOMEM;
		s->events_alloc = h->nevents;
		take(r, s->events, h->nevents * sizeof(*s->events));
		s->nevents = h->nevents;
		for (size_t i = 0; i < s->nevents; i++)
			if (!event_ok(&s->events[i]))
				return -EPROTO;
	}
	if (h->ngpus_sum < 0 || h->ngpus_sum > GPU_MAX_DEVICES || h->has_gpus > 1 ||
	    (h->ngpus_sum && !h->has_gpus))
		return -EPROTO;
	if (h->has_gpus) {
		s->gpus = calloc(GPU_MAX_DEVICES, sizeof(*s->gpus));
		if (!s->gpus)
			return -ENOMEM;
		if (!take(r, s->gpus, (size_t)h->ngpus_sum * sizeof(*s->gpus)))
			return -EPROTO;
		s->ngpus = h->ngpus_sum;
		for (int i = 0; i < s->ngpus; i++)
			if (!gpu_summary_ok(&s->gpus[i]))
				return -EPROTO;
	}
	return 0;
}

static bool track_ok(const struct js_track *t)
{
	for (size_t i = 0; i < JS_POINTS; i++)
		if (!sum_ok(t->sum[i]))
			return false;
	for (size_t i = 0; i < JS_RING; i++)
		if (!isnan(t->ring[i]) && !num_ok(t->ring[i]))
			return false;
	return true;
}

static bool series_ok(struct jobseries *js)
{
	FIX_BOOLS(&js->has_t0, &js->has_prev_job, &js->has_prev_host, &js->finished);
	if (js->finished || js->interval_ms < 1 || js->interval_ms > STORE_INTERVAL_MAX_MS ||
	    js->bucket_ms < 1 || js->bucket_ms > CKPT_MAX_MS || js->npoints > JS_POINTS ||
	    js->ring_len > JS_RING || js->ring_head >= JS_RING ||
	    (js->ring_len < JS_RING && js->ring_head != js->ring_len))
		return false;
	if ((js->interval_since_ms != INT64_MIN && !ms_ok(js->interval_since_ms)) ||
	    !ms_ok(js->t0_ms) || !ms_ok(js->ring_last_ms) || !ms_ok(js->prev_job_ms) ||
	    !ms_ok(js->prev_host_ms))
		return false;
	for (size_t i = 0; i < JS_RING; i++)
		if (!ms_ok(js->ring_ts[i]))
			return false;
	/* each bucket's ticks: none (0, 0), or 1 <= first <= last, within the span kept */
	for (size_t i = 0; i < JS_POINTS; i++)
		if (js->tick_first[i] < 0 || js->tick_last[i] < js->tick_first[i] ||
		    js->tick_last[i] > CKPT_MAX_MS || (!js->tick_first[i] && js->tick_last[i]))
			return false;
	return true;
}

static int decode_series(struct rbuf *r, const struct ckpt_head *h, struct jobseries *js)
{
	if (!take(r, js, sizeof(*js)))
		return -EPROTO;
	memset(js->m, 0, sizeof(js->m));
	memset(js->gpu, 0, sizeof(js->gpu));
	js->ngpus = 0;
	if (!series_ok(js) || h->tracks >> JSM__COUNT || h->ngpus_series < 0 ||
	    h->ngpus_series > JS_MAX_GPUS)
		return -EPROTO;
	for (int m = 0; m < JSM__COUNT; m++) {
		if (!(h->tracks & 1u << m))
			continue;
		js->m[m] = malloc(sizeof(*js->m[m]));
		if (!js->m[m])
			return -ENOMEM;
		if (!take(r, js->m[m], sizeof(*js->m[m])) || !track_ok(js->m[m]))
			return -EPROTO;
	}
	for (int i = 0; i < h->ngpus_series; i++) {
		struct js_gpu *g = malloc(sizeof(*g));

		if (!g)
			return -ENOMEM;
		js->gpu[i] = g;
		js->ngpus = i + 1;
		if (!take(r, g, sizeof(*g)))
			return -EPROTO;
		FIX_BOOLS(&g->job, &g->has_last_nvlink, &g->has_last_viol);
		TERMINATE(g->uuid);
		g->job = false; /* finish decides */
		if (!ms_ok(g->last_nvlink_ms) || !ms_ok(g->last_viol_ms))
			return -EPROTO;
		for (int m = 0; m < JSG__COUNT; m++)
			if (!track_ok(&g->t[m]))
				return -EPROTO;
	}
	return 0;
}

/* The payload out of the blob: 0, -ESTALE (another format), -EPROTO. */
static int unpack(const void *data, size_t size, void **payload, size_t *len)
{
	const unsigned char *p = data;
	uint32_t format;
	unsigned long long n;
	size_t got;

	*payload = NULL;
	if (size < 8 || memcmp(p, CKPT_MAGIC, 4) != 0)
		return -EPROTO;
	memcpy(&format, p + 4, 4);
	if (format != (uint32_t)report_ckpt_format())
		return -ESTALE;
	n = ZSTD_getFrameContentSize(p + 8, size - 8);
	if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN || n > CKPT_MAX_PAYLOAD ||
	    n < sizeof(struct ckpt_head))
		return -EPROTO;
	*payload = malloc((size_t)n);
	if (!*payload)
		return -ENOMEM;
	got = ZSTD_decompress(*payload, (size_t)n, p + 8, size - 8);
	if (ZSTD_isError(got) || got != n) {
		free(*payload);
		*payload = NULL;
		return -EPROTO;
	}
	*len = (size_t)n;
	return 0;
}

int report_ckpt_decode(const void *data, size_t size, const struct job_record *job,
		       struct summary *s, struct jobseries *js, struct report_ckpt_mark *mark)
{
	struct ckpt_head h;
	struct rbuf r;
	void *payload;
	size_t len;
	int ret;

	summary_init(s, job);
	jobseries_init(js, job->interval_ms);
	ret = unpack(data, size, &payload, &len);
	if (ret)
		return ret;
	r = (struct rbuf){payload, len};
	if (!take(&r, &h, sizeof(h))) {
		ret = -EPROTO;
		goto out_free;
	}
	/*
	 * Another job, or this one changed: its end came since the checkpoint
	 * (fine, unless the checkpoint holds host or GPU rows after that end,
	 * which a replay leaves out), or it changed (reopened after a restart).
	 */
	if (h.job_id != job->id || h.start_ms != job->start_ms ||
	    h.interval_ms != job->interval_ms ||
	    (h.end_ms != job->end_ms && (h.end_ms || h.window_ms > job->end_ms))) {
		ret = -ESTALE;
		goto out_free;
	}
	if (h.seq < 0 || !ms_ok(h.ts_ms) || !ms_ok(h.window_ms)) {
		ret = -EPROTO;
		goto out_free;
	}
	ret = decode_summary(&r, &h, s);
	ret = ret ?: decode_series(&r, &h, js);
	if (!ret && r.left)
		ret = -EPROTO;
	if (!ret) {
		s->job = *job; /* as a whole replay has it, from job_report_init */
		mark->seq = h.seq;
		mark->ts_ms = h.ts_ms;
		mark->window_ms = h.window_ms;
	}
out_free:
	free(payload);
	if (ret) {
		summary_release(s);
		jobseries_release(js);
		summary_init(s, job);
		jobseries_init(js, job->interval_ms);
	}
	return ret;
}

bool report_ckpt_disabled(void)
{
	const char *v = getenv("JOBSCOPE_NO_CKPT");

	return v && v[0] && strcmp(v, "0") != 0;
}

int report_ckpt_save(struct store *st, const struct summary *s, const struct jobseries *js,
		     const struct job_record *job, const struct report_ckpt_mark *mark,
		     int64_t now_ms)
{
	struct store_ckpt c = {
	    .job_id = job->id,
	    .seq = mark->seq,
	    .ts_ms = mark->ts_ms,
	    .format = report_ckpt_format(),
	    .made_ms = now_ms,
	};
	int ret;

	ret = report_ckpt_encode(s, js, job, mark, &c.data, &c.size);
	if (!ret)
		ret = store_ckpt_put(st, &c);
	free(c.data);
	return ret;
}
