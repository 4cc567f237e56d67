/*
 * session_export.c - a profiling session's data as a head's store holds it,
 * rendered: every frame as JSON (gswarm-profiler's shape, but numbers, not
 * strings; utilization 0-100; units named in the file) or CSV, with
 * summaries by device and by node, the gaps (frameless stretches, and the
 * agents' records of rows their size cap lost) and the jobs that ran
 * meanwhile, and its requests' timings per application (session_requests.c)
 * (`jobscope export --session`); and the same in words and tables
 * (`jobscope report --session`).  Every tick of every node in the window is
 * a frame, and each frame also carries the node's host figures, so a node
 * without GPUs has frames too.
 */
#include "report/session_export.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fmt.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "report/report.h"
#include "report/session_requests.h"
#include "store/profiling.h"
#include "store/reader.h"
#include "store/upkeep.h"

#define EXPORT_MAX_SERIES 4096

struct series {
	char key[400];		     /* "host:index:name" or the host name */
	int64_t last_ms, min_gap_ms; /* nodes: for gaps */
	int64_t n, n_util;
	double util_sum, util_max, mem_max, power_sum;
	int64_t n_power;
};

#define EXPORT_MAX_GAPS 1000
/*
 * A gap: time without frames from a node (computed here), or an agent's
 * record of rows its size cap deleted before the head held them.
 */
struct gap {
	char node[256];
	int64_t from_ms, to_ms;
	bool recorded; /* gap records (store_for_each_gap), merged while their seqs run on */
	int64_t lost_rows, records, from_seq, to_seq; /* recorded only */
};

struct export_ctx {
	struct strbuf *out;
	struct jsonw w;
	bool csv;
	bool text; /* a report: summaries only */
	struct gap gaps[EXPORT_MAX_GAPS];
	size_t ngaps;
	struct series *dev, *node;
	size_t ndev, nnode;
	int64_t frames;
	const struct progress_hook *progress;
	int64_t from_ms, until_ms; /* the window, for progress: frames come in time order */
	int spill_fd;		   /* session_export_spill at each frame's end; -1: none */
};

static struct series *series_of(struct series *s, size_t *n, const char *key)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(s[i].key, key) == 0)
			return &s[i];
	if (*n >= EXPORT_MAX_SERIES)
		return NULL;
	memset(&s[*n], 0, sizeof(s[*n]));
	snprintf(s[*n].key, sizeof(s[*n].key), "%s", key);
	s[*n].util_max = s[*n].mem_max = NAN;
	return &s[(*n)++];
}

static void max_in(double *m, double v)
{
	if (!isnan(v) && (isnan(*m) || v > *m))
		*m = v;
}

static void gpu_array(struct jsonw *w, const char *key, const struct session_frame *f,
		      size_t offset, int decimals)
{
	jsonw_key(w, key);
	jsonw_arr_begin(w);
	for (int i = 0; i < f->ngpus; i++)
		jsonw_double(w, *(const double *)((const char *)&f->gpu[i] + offset), decimals);
	jsonw_arr_end(w);
}

static int on_frame(const struct session_frame *f, void *arg)
{
	struct export_ctx *c = arg;
	struct series *ns = series_of(c->node, &c->nnode, f->hostname);
	char t[40], id[400];

	c->frames++;
	if (c->progress)
		progress_step(c->progress, c->frames,
			      c->until_ms > c->from_ms ? (double)(f->ts_ms - c->from_ms) /
							     (double)(c->until_ms - c->from_ms)
						       : -1);
	format_rfc3339_ms(f->ts_ms, t, sizeof(t));
	if (ns && ns->last_ms) {
		int64_t gap = f->ts_ms - ns->last_ms;

		/* three missed intervals (and at least 3 s) make a gap */
		if (ns->min_gap_ms && gap > 3 * ns->min_gap_ms && gap >= 3000 &&
		    c->ngaps < EXPORT_MAX_GAPS) {
			struct gap *g = &c->gaps[c->ngaps++];

			snprintf(g->node, sizeof(g->node), "%s", f->hostname);
			g->from_ms = ns->last_ms;
			g->to_ms = f->ts_ms;
		}
		if (gap > 0 && (ns->min_gap_ms == 0 || gap < ns->min_gap_ms))
			ns->min_gap_ms = gap;
	}
	if (ns)
		ns->last_ms = f->ts_ms;
	if (ns) {
		ns->n++;
		if (!isnan(f->cpu_util_pct)) {
			ns->n_util++;
			ns->util_sum += f->cpu_util_pct;
		}
		max_in(&ns->util_max, f->cpu_util_pct);
		max_in(&ns->mem_max, f->mem_used_bytes);
	}
	for (int i = 0; i < f->ngpus; i++) {
		const struct session_frame_gpu *g = &f->gpu[i];
		struct series *ds;

		snprintf(id, sizeof(id), "%s:%d:%s", f->hostname, g->index, g->name);
		ds = series_of(c->dev, &c->ndev, id);
		if (!ds)
			continue;
		ds->n++;
		if (!isnan(g->util_pct)) {
			ds->n_util++;
			ds->util_sum += g->util_pct;
		}
		max_in(&ds->util_max, g->util_pct);
		max_in(&ds->mem_max, g->mem_used_bytes);
		if (!isnan(g->power_w)) {
			ds->n_power++;
			ds->power_sum += g->power_w;
		}
	}
	if (c->text)
		return 0;
	if (c->csv) {
		for (int i = 0; i < (f->ngpus ? f->ngpus : 1); i++) {
			const struct session_frame_gpu *g = f->ngpus ? &f->gpu[i] : NULL;

			strbuf_addf(c->out, "%" PRId64 ",%s,%" PRId64 ",%s", f->frame_id, t,
				    f->ts_ms, f->hostname);
			if (g) {
				strbuf_addf(c->out, ",%s:%d:%s", f->hostname, g->index, g->name);
				report_csv_num(c->out, g->util_pct, 0);
				report_csv_num(c->out, g->mem_used_bytes, 0);
				report_csv_num(c->out, g->pcie_rx_bps, 0);
				report_csv_num(c->out, g->pcie_tx_bps, 0);
				report_csv_num(c->out, g->nvlink_rx_bps, 0);
				report_csv_num(c->out, g->nvlink_tx_bps, 0);
				report_csv_num(c->out, g->power_w, 3);
			} else {
				strbuf_addstr(c->out, ",,,,,,,,");
			}
			report_csv_num(c->out, f->cpu_util_pct, 2);
			report_csv_num(c->out, f->mem_used_bytes, 0);
			report_csv_num(c->out, f->load1, 2);
			report_csv_num(c->out, f->disk_read_bps, 0);
			report_csv_num(c->out, f->disk_write_bps, 0);
			report_csv_num(c->out, f->net_rx_bps, 0);
			report_csv_num(c->out, f->net_tx_bps, 0);
			strbuf_addch(c->out, '\n');
		}
		return session_export_spill(c->out, c->spill_fd, SESSION_EXPORT_SPILL_BYTES);
	}
	jsonw_obj_begin(&c->w);
	jsonw_kv_int(&c->w, "frame_id", f->frame_id);
	jsonw_kv_str(&c->w, "time", t);
	jsonw_kv_int(&c->w, "time_ms", f->ts_ms);
	jsonw_kv_str(&c->w, "node", f->hostname);
	jsonw_key(&c->w, "gpu_id");
	jsonw_arr_begin(&c->w);
	for (int i = 0; i < f->ngpus; i++) {
		snprintf(id, sizeof(id), "%s:%d:%s", f->hostname, f->gpu[i].index, f->gpu[i].name);
		jsonw_str(&c->w, id);
	}
	jsonw_arr_end(&c->w);
	gpu_array(&c->w, "gpu_util", f, offsetof(struct session_frame_gpu, util_pct), 0);
	gpu_array(&c->w, "gpu_memory", f, offsetof(struct session_frame_gpu, mem_used_bytes), 0);
	gpu_array(&c->w, "pcie_rx", f, offsetof(struct session_frame_gpu, pcie_rx_bps), 0);
	gpu_array(&c->w, "pcie_tx", f, offsetof(struct session_frame_gpu, pcie_tx_bps), 0);
	gpu_array(&c->w, "nvlink_rx", f, offsetof(struct session_frame_gpu, nvlink_rx_bps), 0);
	gpu_array(&c->w, "nvlink_tx", f, offsetof(struct session_frame_gpu, nvlink_tx_bps), 0);
	gpu_array(&c->w, "gpu_power", f, offsetof(struct session_frame_gpu, power_w), 3);
	jsonw_key(&c->w, "cpu_util");
	jsonw_double(&c->w, f->cpu_util_pct, 2);
	jsonw_key(&c->w, "mem_used");
	jsonw_double(&c->w, f->mem_used_bytes, 0);
	jsonw_key(&c->w, "load1");
	jsonw_double(&c->w, f->load1, 2);
	jsonw_key(&c->w, "disk_read");
	jsonw_double(&c->w, f->disk_read_bps, 0);
	jsonw_key(&c->w, "disk_write");
	jsonw_double(&c->w, f->disk_write_bps, 0);
	jsonw_key(&c->w, "net_rx");
	jsonw_double(&c->w, f->net_rx_bps, 0);
	jsonw_key(&c->w, "net_tx");
	jsonw_double(&c->w, f->net_tx_bps, 0);
	jsonw_obj_end(&c->w);
	if (jsonw_error(&c->w))
		return jsonw_error(&c->w);
	return session_export_spill(c->out, c->spill_fd, SESSION_EXPORT_SPILL_BYTES);
}

static bool node_in(const struct session_record *s, const char *node)
{
	char list[SESSION_NODES_MAX + 2], want[300];

	if (!s->nodes[0])
		return true;
	snprintf(list, sizeof(list), ",%s,", s->nodes);
	snprintf(want, sizeof(want), ",%s,", node);
	return strstr(list, want) != NULL;
}

struct records_ctx {
	struct export_ctx *c;
	const struct session_record *s;
	size_t first; /* c->gaps[first..] are records */
};

/*
 * A size cap deletes the oldest rows its head lacks, a step at a time, so
 * an outage leaves a record per step: one whose seqs run on from the
 * previous one's is the same stretch of loss, and is merged into it.
 */
static int on_gap_record(const struct store_gap *g, void *arg)
{
	struct records_ctx *rc = arg;
	struct export_ctx *c = rc->c;
	struct gap *out, *prev = c->ngaps > rc->first ? &c->gaps[c->ngaps - 1] : NULL;

	if (!g->has_span || !node_in(rc->s, g->hostname))
		return 0;
	if (prev && strcmp(prev->node, g->hostname) == 0 && g->from_seq <= prev->to_seq + 1) {
		if (g->from_ms < prev->from_ms)
			prev->from_ms = g->from_ms;
		if (g->to_ms > prev->to_ms)
			prev->to_ms = g->to_ms;
		if (g->to_seq > prev->to_seq)
			prev->to_seq = g->to_seq;
		prev->lost_rows += g->rows;
		prev->records++;
		return 0;
	}
	if (c->ngaps >= EXPORT_MAX_GAPS)
		return 0;
	out = &c->gaps[c->ngaps++];
	memset(out, 0, sizeof(*out));
	snprintf(out->node, sizeof(out->node), "%s", g->hostname);
	out->from_ms = g->from_ms;
	out->to_ms = g->to_ms;
	out->recorded = true;
	out->lost_rows = g->rows;
	out->records = 1;
	out->from_seq = g->from_seq;
	out->to_seq = g->to_seq;
	return 0;
}

static int gap_cmp(const void *x, const void *y)
{
	const struct gap *a = x, *b = y;
	int n = strcmp(a->node, b->node);

	if (a->from_ms != b->from_ms)
		return a->from_ms < b->from_ms ? -1 : 1;
	return n ? n : (int)b->recorded - (int)a->recorded;
}

/*
 * The gap records of the session's nodes in its window joined to the gaps
 * the frames showed: a frameless stretch that a record of the same node
 * falls into is that record's (the rows were sampled, then lost), not an
 * agent that was down.  In time order.
 */
static int merge_gap_records(struct store *st, const struct session_record *s, int64_t until,
			     struct export_ctx *c)
{
	struct records_ctx rc = {c, s, c->ngaps};
	size_t computed = c->ngaps, n = 0;
	int ret;

	ret = store_for_each_gap(st, 0, s->start_ms, until, on_gap_record, &rc);
	if (ret)
		return ret;
	for (size_t i = 0; i < computed; i++) {
		bool explained = false;

		for (size_t k = computed; k < c->ngaps && !explained; k++)
			explained = strcmp(c->gaps[k].node, c->gaps[i].node) == 0 &&
				    c->gaps[k].from_ms <= c->gaps[i].to_ms &&
				    c->gaps[k].to_ms >= c->gaps[i].from_ms;
		if (!explained)
			c->gaps[n++] = c->gaps[i];
	}
	memmove(&c->gaps[n], &c->gaps[computed], (c->ngaps - computed) * sizeof(c->gaps[0]));
	c->ngaps = n + (c->ngaps - computed);
	qsort(c->gaps, c->ngaps, sizeof(c->gaps[0]), gap_cmp);
	return 0;
}

struct jobs_ctx {
	struct jsonw *w;
	const struct session_record *s;
	int64_t until;
};

static int on_job(const struct job_record *j, void *arg)
{
	struct jobs_ctx *c = arg;
	struct jsonw *w = c->w;
	char key[200];

	if (strcmp(j->scheduler, "session") == 0 || j->start_ms > c->until ||
	    (j->end_ms && j->end_ms < c->s->start_ms))
		return 0;
	if (!node_in(c->s, j->hostname))
		return 0;
	/* a user's session is about their work: other users' jobs (command lines) stay out */
	if (c->s->owner[0] && strcmp(j->user, c->s->owner) != 0)
		return 0;
	snprintf(key, sizeof(key), "%s:%s:%" PRId64, j->scheduler, j->job_id, j->start_ms);
	jsonw_obj_begin(w);
	jsonw_kv_str(w, "key", key);
	jsonw_kv_str(w, "node", j->hostname);
	jsonw_kv_str(w, "scheduler", j->scheduler);
	jsonw_kv_str(w, "job_id", j->job_id);
	jsonw_kv_str(w, "user", j->user);
	jsonw_kv_str(w, "command", j->command);
	jsonw_kv_int(w, "start_ms", j->start_ms);
	jsonw_kv_int_opt(w, "end_ms", j->end_ms > 0, j->end_ms);
	jsonw_kv_double_opt(w, "reserved_cpus", j->reserved_cpus > 0, j->reserved_cpus, 3);
	jsonw_kv_int_opt(w, "reserved_memory_bytes", j->reserved_mem_bytes > 0,
			 (int64_t)j->reserved_mem_bytes);
	jsonw_kv_int_opt(w, "reserved_gpus", j->has_reserved_gpus, j->reserved_gpus);
	jsonw_obj_end(w);
	return 0;
}

static void summaries(struct export_ctx *c, struct jsonw *w)
{
	jsonw_key(w, "summary_by_device");
	jsonw_obj_begin(w);
	for (size_t i = 0; i < c->ndev; i++) {
		const struct series *s = &c->dev[i];

		jsonw_key(w, s->key);
		jsonw_obj_begin(w);
		jsonw_kv_int(w, "frames", s->n);
		jsonw_kv_double_opt(w, "gpu_util_avg", s->n_util > 0,
				    s->n_util ? s->util_sum / (double)s->n_util : 0, 2);
		jsonw_key(w, "gpu_util_max");
		jsonw_double(w, s->util_max, 0);
		jsonw_key(w, "gpu_memory_max");
		jsonw_double(w, s->mem_max, 0);
		jsonw_kv_double_opt(w, "gpu_power_avg", s->n_power > 0,
				    s->n_power ? s->power_sum / (double)s->n_power : 0, 3);
		jsonw_obj_end(w);
	}
	jsonw_obj_end(w);
	jsonw_key(w, "summary_by_node");
	jsonw_obj_begin(w);
	for (size_t i = 0; i < c->nnode; i++) {
		const struct series *s = &c->node[i];

		jsonw_key(w, s->key);
		jsonw_obj_begin(w);
		jsonw_kv_int(w, "frames", s->n);
		jsonw_kv_double_opt(w, "cpu_util_avg", s->n_util > 0,
				    s->n_util ? s->util_sum / (double)s->n_util : 0, 2);
		jsonw_key(w, "cpu_util_max");
		jsonw_double(w, s->util_max, 2);
		jsonw_key(w, "mem_used_max");
		jsonw_double(w, s->mem_max, 0);
		jsonw_obj_end(w);
	}
	jsonw_obj_end(w);
}

int session_export_spill(struct strbuf *out, int fd, size_t min)
{
	size_t off = 0;

	if (fd < 0 || out->len < min || out->len == 0)
		return strbuf_error(out);
	if (strbuf_error(out))
		return strbuf_error(out);
	while (off < out->len) {
		ssize_t n = write(fd, out->buf + off, out->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return log_err(-errno, "cannot write the session's export");
		off += (size_t)n;
	}
	strbuf_reset(out);
	return 0;
}

int session_export_frames(struct store *st, const struct session_record *s, bool csv,
			  struct strbuf *out)
{
	return session_export_frames_progress(st, s, csv, out, -1, NULL);
}

int session_export_frames_progress(struct store *st, const struct session_record *s, bool csv,
				   struct strbuf *out, int spill_fd,
				   const struct progress_hook *progress)
{
	struct export_ctx c;
	struct jobs_ctx jc;
	char t[40];
	int ret;

	memset(&c, 0, sizeof(c));
	c.out = out;
	c.csv = csv;
	c.spill_fd = spill_fd;
	c.progress = progress;
	c.from_ms = s->start_ms;
	c.until_ms = s->end_ms ? s->end_ms : time_now_ms();
	c.dev = calloc(EXPORT_MAX_SERIES, sizeof(*c.dev));
	c.node = calloc(EXPORT_MAX_SERIES, sizeof(*c.node));
	if (!c.dev || !c.node) {
		free(c.dev);
		free(c.node);
		return log_err(-ENOMEM, "out of memory");
	}
	if (csv) {
		strbuf_addstr(out,
			      "frame_id,time,time_ms,node,gpu_id,gpu_util_pct,gpu_memory_bytes,"
			      "pcie_rx_bps,pcie_tx_bps,nvlink_rx_bps,nvlink_tx_bps,gpu_power_w,"
			      "cpu_util_pct,mem_used_bytes,load1,disk_read_bps,disk_write_bps,"
			      "net_rx_bps,net_tx_bps\n");
		ret = store_for_each_frame(st, s, time_now_ms(), on_frame, &c);
		goto out_free;
	}
	jsonw_init(&c.w, out, false);
	jsonw_obj_begin(&c.w);
	jsonw_kv_str(&c.w, "session_name", s->name);
	format_rfc3339_ms(s->start_ms, t, sizeof(t));
	jsonw_kv_str(&c.w, "start_time", t);
	if (s->end_ms) {
		format_rfc3339_ms(s->end_ms, t, sizeof(t));
		jsonw_kv_str(&c.w, "end_time", t);
	} else {
		jsonw_kv_null(&c.w, "end_time");
	}
	jsonw_kv_int(&c.w, "start_ms", s->start_ms);
	jsonw_kv_int_opt(&c.w, "end_ms", s->end_ms > 0, s->end_ms);
	jsonw_kv_int_opt(&c.w, "interval_ms", s->interval_ms > 0, s->interval_ms);
	jsonw_key(&c.w, "units");
	jsonw_obj_begin(&c.w);
	jsonw_kv_str(&c.w, "time", "RFC 3339, UTC (time_ms: ms since the Unix epoch)");
	jsonw_kv_str(&c.w, "gpu_util", "percent, 0-100");
	jsonw_kv_str(&c.w, "gpu_memory", "bytes");
	jsonw_kv_str(&c.w, "pcie_rx", "bytes/s");
	jsonw_kv_str(&c.w, "pcie_tx", "bytes/s");
	jsonw_kv_str(&c.w, "nvlink_rx", "bytes/s (measured traffic, not link capacity)");
	jsonw_kv_str(&c.w, "nvlink_tx", "bytes/s (measured traffic, not link capacity)");
	jsonw_kv_str(&c.w, "gpu_power", "watts");
	jsonw_kv_str(&c.w, "cpu_util", "percent of all the node's CPUs, 0-100");
	jsonw_kv_str(&c.w, "mem_used", "bytes (MemTotal - MemAvailable)");
	jsonw_kv_str(&c.w, "load1", "1-minute load average");
	jsonw_kv_str(&c.w, "disk_read", "bytes/s");
	jsonw_kv_str(&c.w, "disk_write", "bytes/s");
	jsonw_kv_str(&c.w, "net_rx", "bytes/s");
	jsonw_kv_str(&c.w, "net_tx", "bytes/s");
	jsonw_obj_end(&c.w);
	jsonw_key(&c.w, "frames");
	jsonw_arr_begin(&c.w);
	ret = store_for_each_frame(st, s, time_now_ms(), on_frame, &c);
	jsonw_arr_end(&c.w);
	if (ret)
		goto out_free;
	jsonw_kv_int(&c.w, "frame_count", c.frames);
	/*
	 * frames above are each node's samples; the session's frames, one a
	 * period from its start, are what list, status and its gswarm file count
	 */
	jsonw_kv_int(&c.w, "session_frames", session_gswarm_frames(s, c.until_ms));
	summaries(&c, &c.w);
	ret = merge_gap_records(st, s, s->end_ms ? s->end_ms : time_now_ms(), &c);
	if (ret)
		goto out_free;
	jsonw_key(&c.w, "gaps");
	jsonw_arr_begin(&c.w);
	for (size_t i = 0; i < c.ngaps; i++) {
		const struct gap *g = &c.gaps[i];

		jsonw_obj_begin(&c.w);
		jsonw_kv_str(&c.w, "node", g->node);
		jsonw_kv_int(&c.w, "from_ms", g->from_ms);
		jsonw_kv_int(&c.w, "to_ms", g->to_ms);
		jsonw_kv_double(&c.w, "seconds", (g->to_ms - g->from_ms) / 1000.0, 3);
		jsonw_kv_str(&c.w, "cause", g->recorded ? "size_cap" : "no_samples");
		jsonw_kv_int_opt(&c.w, "lost_rows", g->recorded, g->lost_rows);
		jsonw_kv_int_opt(&c.w, "records", g->recorded, g->records);
		jsonw_kv_str(&c.w, "reason",
			     g->recorded ? "rows the node's agent sampled were deleted by its size "
					   "cap (--max-db-size) before the head held them"
					 : "no samples from the node: its agent was down or "
					   "unhealthy (rows it did sample are never lost)");
		jsonw_obj_end(&c.w);
	}
	jsonw_arr_end(&c.w);
	jsonw_key(&c.w, "jobs");
	jsonw_arr_begin(&c.w);
	jc.w = &c.w;
	jc.s = s;
	jc.until = s->end_ms ? s->end_ms : time_now_ms();
	ret = store_for_each_job(st, on_job, &jc);
	jsonw_arr_end(&c.w);
	if (!ret) {
		struct session_requests reqs;

		session_requests_init(&reqs);
		ret = session_requests_load(st, s, &reqs);
		if (!ret)
			session_requests_json(&reqs, &c.w);
		session_requests_release(&reqs);
	}
	jsonw_obj_end(&c.w);
	strbuf_addch(out, '\n');
	if (!ret)
		ret = jsonw_error(&c.w);
out_free:
	progress_finish(progress);
	if (!ret)
		ret = strbuf_error(out); /* past its cap: cut short, not an export */
	free(c.dev);
	free(c.node);
	return ret;
}

int session_export_report(struct store *st, const char *name, struct strbuf *out)
{
	struct session_requests reqs;
	struct session_record s;
	struct export_ctx *c;
	char t0[40], t1[40], dur[32];
	int ret;

	ret = store_session_get(st, name, &s);
	if (ret == -ENOENT)
		return log_err(ret, "no session '%s' in '%s'", name, store_path(st));
	if (ret)
		return ret;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->text = true;
	c->spill_fd = -1;
	c->dev = calloc(EXPORT_MAX_SERIES, sizeof(*c->dev));
	c->node = calloc(EXPORT_MAX_SERIES, sizeof(*c->node));
	if (!c->dev || !c->node) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = store_for_each_frame(st, &s, time_now_ms(), on_frame, c);
	if (!ret)
		ret = merge_gap_records(st, &s, s.end_ms ? s.end_ms : time_now_ms(), c);
	if (ret)
		goto out_free;
	format_rfc3339_ms(s.start_ms, t0, sizeof(t0));
	if (s.end_ms)
		format_rfc3339_ms(s.end_ms, t1, sizeof(t1));
	format_duration_ms((s.end_ms ? s.end_ms : time_now_ms()) - s.start_ms, dur, sizeof(dur));
	strbuf_addf(out, "jobscope session %s: %s to %s (%s%s)\n", s.name, t0,
		    s.end_ms ? t1 : "now", dur, s.end_ms ? "" : ", still active");
	strbuf_addf(out,
		    "  nodes %s, sampling %s; %" PRId64 " frames (one a %" PRId64 "ms), %" PRId64
		    " samples from its nodes\n",
		    s.nodes[0] ? s.nodes : "all",
		    s.interval_ms ? "at the session's interval" : "as the agents do",
		    session_gswarm_frames(&s, s.end_ms ? s.end_ms : time_now_ms()),
		    session_gswarm_period_ms(&s), c->frames);
	if (s.interval_ms)
		strbuf_addf(out, "  interval %" PRId64 "ms\n", s.interval_ms);
	strbuf_addstr(out,
		      "\n  Nodes                     samples   CPU avg   CPU max   memory max\n");
	for (size_t i = 0; i < c->nnode; i++) {
		const struct series *n = &c->node[i];
		char mem[32] = "-";

		if (!isnan(n->mem_max))
			fmt_bytes(mem, sizeof(mem), (uint64_t)n->mem_max);
		strbuf_addf(out, "  %-24s %8" PRId64 "   %6.1f%%   %6.1f%%   %10s\n", n->key, n->n,
			    n->n_util ? n->util_sum / (double)n->n_util : NAN, n->util_max, mem);
	}
	if (c->ndev) {
		strbuf_addstr(
		    out, "\n  GPUs                                 samples  util avg  util max  "
			 "memory max  power avg\n");
		for (size_t i = 0; i < c->ndev; i++) {
			const struct series *d = &c->dev[i];
			char mem[32] = "-";

			if (!isnan(d->mem_max))
				fmt_bytes(mem, sizeof(mem), (uint64_t)d->mem_max);
			strbuf_addf(
			    out, "  %-36s %8" PRId64 "   %6.1f%%   %6.0f%%  %10s  %8.1f W\n",
			    d->key, d->n, d->n_util ? d->util_sum / (double)d->n_util : NAN,
			    d->util_max, mem, d->n_power ? d->power_sum / (double)d->n_power : NAN);
		}
	}
	if (c->ngaps) {
		strbuf_addstr(out, "\n  Gaps (no samples from a node for 3 intervals or more; "
				   "rows an agent lost)\n");
		for (size_t i = 0; i < c->ngaps; i++) {
			const struct gap *g = &c->gaps[i];

			format_rfc3339_ms(g->from_ms, t0, sizeof(t0));
			format_duration_ms(g->to_ms - g->from_ms, dur, sizeof(dur));
			if (g->recorded)
				strbuf_addf(out,
					    "  %-24s from %s for %s: %" PRId64 " rows lost by the "
					    "agent's size cap before the head held them\n",
					    g->node, t0, dur, g->lost_rows);
			else
				strbuf_addf(out,
					    "  %-24s from %s for %s: its agent was down or "
					    "unhealthy\n",
					    g->node, t0, dur);
		}
	}
	session_requests_init(&reqs);
	ret = session_requests_load(st, &s, &reqs);
	if (!ret)
		session_requests_text(&reqs, out);
	session_requests_release(&reqs);
	if (ret)
		goto out_free;
	strbuf_addf(out,
		    "\n  Every sample, per device and per node: jobscope export --session %s\n",
		    s.name);
	ret = strbuf_error(out);
out_free:
	free(c->dev);
	free(c->node);
	free(c);
	return ret;
}
