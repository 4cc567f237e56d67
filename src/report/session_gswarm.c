/*
 * session_gswarm.c - a profiling session as the file gswarm-profiler's
 * head writes when a run stops (<name>.json: its frames, summaries by
 * device and by client, and the per-request timings), byte for byte as
 * Python's json.dumps(obj, indent=2) lays it out, so that gswarm's own
 * tools (`gsprof stat`, draw_metrics) read it.  docs/gswarm.md says what
 * each field holds and where that differs from gswarm's README.
 *
 *   py_str, py_time               Python's spellings of a str, a naive
 *                                 local datetime (a float's: common/decfmt.h)
 *   on_tick                       one frame (store_for_each_session_tick)
 *   write_summaries               summary_by_device, summary_by_client
 *   on_request,                   request_time_info
 *   session_gswarm_other
 *   session_export_gswarm
 */
#include "report/session_export.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "common/decfmt.h"
#include "common/log.h"
#include "common/progress.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "sample/figures.h"
#include "store/profiling.h"

/* A figure older than this many of its node's intervals is not the node's now. */
#define GSWARM_STALE_INTERVALS 3
/* `other` objects with more keys than this are written as {} */
#define GSWARM_OTHER_MAX_KEYS 1000

/* One GPU's strings of the frame being written, and its sums for the summary. */
struct gswarm_gpu {
	char *id_json; /* "host:idx:name", quoted and escaped */
	char util[48], mem[48], rx[48], tx[48], bw[48];
	double util_sum, mem_sum;
	int64_t util_n, mem_n;
};

struct gswarm_node {
	bool has; /* in this frame's dram_util and disk_util */
	char dram[48], disk[48];
	double dram_sum, disk_sum;
	int64_t n;
};

struct gswarm_ctx {
	struct strbuf *out;
	struct gswarm_gpu *gpu;
	struct gswarm_node *node;
	size_t ngpus, nnodes;
	char **host_json;		/* each node's hostname, quoted and escaped */
	size_t *client_order, nclients; /* nodes by their first frame with figures */
	int64_t frames, frames_total;
	const struct progress_hook *progress;
	char app[REQUEST_APP_MAX]; /* request_time_info: the app whose list is open */
	int64_t requests;
	int spill_fd; /* session_export_spill at each frame's end; -1: none */
};

/* s as json.dumps(ensure_ascii=True) writes a str; bytes that are not UTF-8 as U+FFFD. */
static void py_str(struct strbuf *out, const char *s)
{
	size_t left = strlen(s);

	strbuf_addch(out, '"');
	while (left) {
		unsigned char c = (unsigned char)*s;
		uint32_t cp;
		size_t n;

		if (c == '"' || c == '\\') {
			strbuf_addch(out, '\\');
			strbuf_addch(out, (char)c);
		} else if (c == '\n') {
			strbuf_addstr(out, "\\n");
		} else if (c == '\r') {
			strbuf_addstr(out, "\\r");
		} else if (c == '\t') {
			strbuf_addstr(out, "\\t");
		} else if (c == '\b') {
			strbuf_addstr(out, "\\b");
		} else if (c == '\f') {
			strbuf_addstr(out, "\\f");
		} else if (c >= 0x20 && c <= 0x7e) {
			strbuf_addch(out, (char)c);
		} else if (c < 0x80) {
			strbuf_addf(out, "\\u%04x", c);
		} else {
			n = utf8_decode(s, left, &cp);
			if (!n) {
				cp = 0xfffd;
				n = 1;
			}
			if (cp >= 0x10000)
				strbuf_addf(out, "\\u%04x\\u%04x", 0xd800 + ((cp - 0x10000) >> 10),
					    0xdc00 + ((cp - 0x10000) & 0x3ff));
			else
				strbuf_addf(out, "\\u%04x", cp);
			s += n;
			left -= n;
			continue;
		}
		s++;
		left--;
	}
	strbuf_addch(out, '"');
}

/* ts_ms as Python's datetime.fromtimestamp(t).isoformat(): local, naive. */
static void py_time(int64_t ts_ms, char *buf, size_t size)
{
	time_t t = (time_t)(ts_ms / 1000);
	int usec = (int)(ts_ms % 1000) * 1000;
	struct tm tm;

	if (!localtime_r(&t, &tm)) {
		snprintf(buf, size, "1970-01-01T00:00:00");
		return;
	}
	strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	if (usec) /* isoformat() leaves out a zero fraction */
		snprintf(buf + strlen(buf), size - strlen(buf), ".%06d", usec);
}

static void indent(struct strbuf *out, int n)
{
	for (int i = 0; i < n; i++)
		strbuf_addch(out, ' ');
}

/* A frame's "key": [items], one item a line (NULL items left out), [] when none */
static void str_list(struct gswarm_ctx *c, const char *key, size_t n,
		     const char *(*item)(struct gswarm_ctx *, size_t))
{
	size_t written = 0;

	indent(c->out, 6);
	strbuf_addf(c->out, "\"%s\": [", key);
	for (size_t i = 0; i < n; i++) {
		const char *s = item(c, i);

		if (!s)
			continue;
		strbuf_addstr(c->out, written++ ? ",\n" : "\n");
		indent(c->out, 8);
		strbuf_addstr(c->out, s);
	}
	if (written) {
		strbuf_addch(c->out, '\n');
		indent(c->out, 6);
	}
	strbuf_addstr(c->out, "],\n");
}

/* The list items: already JSON (quoted) */
static const char *item_id(struct gswarm_ctx *c, size_t i)
{
	return c->gpu[i].id_json;
}
static const char *item_util(struct gswarm_ctx *c, size_t i)
{
	return c->gpu[i].util;
}
static const char *item_mem(struct gswarm_ctx *c, size_t i)
{
	return c->gpu[i].mem;
}
static const char *item_rx(struct gswarm_ctx *c, size_t i)
{
	return c->gpu[i].rx;
}
static const char *item_tx(struct gswarm_ctx *c, size_t i)
{
	return c->gpu[i].tx;
}
static const char *item_bw(struct gswarm_ctx *c, size_t i)
{
	return c->gpu[i].bw;
}
static const char *item_dram(struct gswarm_ctx *c, size_t i)
{
	return c->node[i].has ? c->node[i].dram : NULL;
}
static const char *item_disk(struct gswarm_ctx *c, size_t i)
{
	return c->node[i].has ? c->node[i].disk : NULL;
}

static char *json_of(const char *s)
{
	struct strbuf b;

	strbuf_init(&b, STRBUF_DEFAULT_MAX);
	py_str(&b, s);
	if (strbuf_error(&b)) {
		strbuf_release(&b);
		return NULL;
	}
	return strbuf_detach(&b, NULL);
}

/* The GPU and node lists are the same in every tick: their names once. */
static int gswarm_lists(struct gswarm_ctx *c, const struct session_tick *t)
{
	char id[GPU_NAME_MAX + 300];

	c->ngpus = t->ngpus;
	c->nnodes = t->nnodes;
	c->gpu = calloc(t->ngpus ? t->ngpus : 1, sizeof(*c->gpu));
	c->node = calloc(t->nnodes ? t->nnodes : 1, sizeof(*c->node));
	c->host_json = calloc(t->nnodes ? t->nnodes : 1, sizeof(*c->host_json));
	c->client_order = calloc(t->nnodes ? t->nnodes : 1, sizeof(*c->client_order));
	if (!c->gpu || !c->node || !c->host_json || !c->client_order)
		return -ENOMEM;
	for (size_t i = 0; i < t->ngpus; i++) {
		const struct session_tick_gpu *g = &t->gpus[i];

		snprintf(id, sizeof(id), "%s:%d:%s", t->nodes[g->node].hostname, g->index, g->name);
		c->gpu[i].id_json = json_of(id);
		if (!c->gpu[i].id_json)
			return -ENOMEM;
	}
	for (size_t i = 0; i < t->nnodes; i++) {
		c->host_json[i] = json_of(t->nodes[i].hostname);
		if (!c->host_json[i])
			return -ENOMEM;
	}
	return 0;
}

static bool fresh(int64_t row_ms, int64_t now_ms, const struct session_tick_node *n)
{
	return row_ms > 0 && now_ms - row_ms <= GSWARM_STALE_INTERVALS * n->interval_ms;
}

/* "%.2f" of x, quoted, as gswarm's f-strings write it (a missing figure: 0.00) */
static void fixed2(char *buf, size_t size, double x)
{
	buf[0] = '"';
	dec_fixed(buf + 1, size - 2, x, 2);
	strcat(buf, "\"");
}

/* A byte count from a row as an integer: false for NULL (NAN), negative or past 2^64. */
static bool row_bytes(double x, uint64_t *out)
{
	if (!(x >= 0 && x < 18446744073709551616.0))
		return false;
	*out = (uint64_t)x;
	return true;
}

/* The node's memory in use, in % of its total, by the model (sample/figures.h); NAN: unknown. */
static double node_mem_pct(const struct session_tick_node *n)
{
	struct host_reading r = {.valid = HOST_HAS_MEM};
	struct host_figures f;

	if (row_bytes(n->mem_total_bytes, &r.mem_total_bytes))
		r.mem_valid |= MEMINFO_TOTAL;
	if (row_bytes(n->mem_available_bytes, &r.mem_available_bytes))
		r.mem_valid |= MEMINFO_AVAILABLE;
	host_figures(&r, NULL, 0, &f);
	return f.mem_used_pct;
}

static int on_tick(const struct session_tick *t, void *arg)
{
	struct gswarm_ctx *c = arg;
	struct strbuf *out = c->out;
	char when[48];
	int ret;

	if (!c->gpu && (ret = gswarm_lists(c, t)))
		return log_err(ret, "out of memory");
	for (size_t i = 0; i < t->ngpus; i++) {
		const struct session_tick_gpu *g = &t->gpus[i];
		struct gswarm_gpu *o = &c->gpu[i];
		bool now = fresh(g->ts_ms, t->ts_ms, &t->nodes[g->node]);
		double util = 0, mem = 0, rx = 0, tx = 0;
		char b[DEC_PY_REPR_MAX];

		if (now && !isnan(g->util_pct)) {
			util = g->util_pct / 100.0; /* gswarm: gpu_percent() / 100 */
			o->util_sum += util;
			o->util_n++;
		}
		if (now && !isnan(g->mem_used_bytes) && g->mem_total_bytes > 0) {
			/* nvitop's memory_percent() rounds to 0.1 %, gswarm divides by 100 */
			mem = dec_round(100.0 * g->mem_used_bytes / g->mem_total_bytes, 1) / 100.0;
			o->mem_sum += mem;
			o->mem_n++;
		}
		/* nvitop's pcie_throughput() is (tx, rx) KiB/s; gswarm keeps it as (rx, tx) */
		if (now && !isnan(g->pcie_tx_bps))
			rx = g->pcie_tx_bps / 1024.0;
		if (now && !isnan(g->pcie_rx_bps))
			tx = g->pcie_rx_bps / 1024.0;
		fixed2(o->util, sizeof(o->util), util);
		fixed2(o->mem, sizeof(o->mem), mem);
		fixed2(o->rx, sizeof(o->rx), rx);
		fixed2(o->tx, sizeof(o->tx), tx);
		/* str(float(rx_str) + float(tx_str)) */
		dec_py_repr(dec_round(rx, 2) + dec_round(tx, 2), b, sizeof(b));
		snprintf(o->bw, sizeof(o->bw), "\"%s\"", b);
	}
	for (size_t i = 0; i < t->nnodes; i++) {
		const struct session_tick_node *n = &t->nodes[i];
		struct gswarm_node *o = &c->node[i];
		double dram, disk;

		/* psutil's percents, rounded to 0.1 as psutil does; both or neither */
		dram = node_mem_pct(n);
		o->has = fresh(n->host_ts_ms, t->ts_ms, n) && fresh(n->fs_ts_ms, t->ts_ms, n) &&
			 !isnan(dram) && n->fs_total_bytes > 0 && !isnan(n->fs_used_bytes);
		if (!o->has)
			continue;
		dram = dec_round(dram, 1);
		disk = dec_round(100.0 * n->fs_used_bytes / n->fs_total_bytes, 1);
		fixed2(o->dram, sizeof(o->dram), dram);
		fixed2(o->disk, sizeof(o->disk), disk);
		o->dram_sum += dram;
		o->disk_sum += disk;
		if (o->n++ == 0)
			c->client_order[c->nclients++] = i;
	}

	strbuf_addstr(out, c->frames++ ? ",\n    {\n" : "\n    {\n");
	if (c->progress)
		progress_step(c->progress, c->frames,
			      c->frames_total > 0 ? (double)c->frames / c->frames_total : -1);
	py_time(t->ts_ms, when, sizeof(when));
	strbuf_addf(out, "      \"frame_id\": %" PRId64 ",\n      \"time\": \"%s\",\n", t->frame_id,
		    when);
	str_list(c, "gpu_id", c->ngpus, item_id);
	str_list(c, "gpu_util", c->ngpus, item_util);
	str_list(c, "gpu_memory", c->ngpus, item_mem);
	str_list(c, "dram_util", c->nnodes, item_dram);
	str_list(c, "disk_util", c->nnodes, item_disk);
	str_list(c, "dram_bandwidth", c->ngpus, item_bw);
	str_list(c, "dram_bandwidth_rx", c->ngpus, item_rx);
	str_list(c, "dram_bandwidth_tx", c->ngpus, item_tx);
	strbuf_addstr(out, "      \"gpu_bandwidth\": []\n    }");
	/* past the cap: stop reading; with a file, its bytes so far written there */
	return session_export_spill(out, c->spill_fd, SESSION_EXPORT_SPILL_BYTES);
}

static void summary_pair(struct strbuf *out, const char *key_json, const char *k1, double v1,
			 const char *k2, double v2, bool first)
{
	strbuf_addstr(out, first ? "\n    " : ",\n    ");
	strbuf_addstr(out, key_json);
	strbuf_addf(out, ": {\n      \"%s\": \"%.2f\",\n      \"%s\": \"%.2f\"\n    }", k1, v1, k2,
		    v2);
}

/* By device in frame order; by client in the order each first had figures. */
static void write_summaries(struct gswarm_ctx *c)
{
	struct strbuf *out = c->out;
	bool any = false;

	strbuf_addstr(out, ",\n  \"summary_by_device\": {");
	for (size_t i = 0; c->frames && i < c->ngpus; i++) {
		const struct gswarm_gpu *g = &c->gpu[i];

		summary_pair(out, g->id_json, "avg_gpu_util",
			     g->util_n ? g->util_sum / (double)g->util_n : 0, "avg_gpu_memory",
			     g->mem_n ? g->mem_sum / (double)g->mem_n : 0, !any);
		any = true;
	}
	strbuf_addstr(out, any ? "\n  },\n  \"summary_by_client\": {"
			       : "},\n  \"summary_by_client\": {");
	any = false;
	for (size_t k = 0; k < c->nclients; k++) {
		const struct gswarm_node *n = &c->node[c->client_order[k]];

		summary_pair(out, c->host_json[c->client_order[k]], "avg_dram_util",
			     n->dram_sum / (double)n->n, "avg_disk_util",
			     n->disk_sum / (double)n->n, !any);
		any = true;
	}
	strbuf_addstr(out, any ? "\n  }" : "}");
}

/*
 * A request's other times: the store's JSON text, distrusted: an object of
 * numbers is written as Python would (a key given twice keeps its first
 * place and its last value), anything else as {}.
 */
void session_gswarm_other(struct strbuf *out, const char *text)
{
	cJSON *doc = text ? cJSON_Parse(text) : NULL;
	const cJSON *e;
	char num[48];
	int n = 0;
	bool ok = cJSON_IsObject(doc);

	for (e = ok ? doc->child : NULL; e && ok; e = e->next)
		ok = cJSON_IsNumber(e) && e->string && ++n <= GSWARM_OTHER_MAX_KEYS;
	if (!ok || n == 0) {
		strbuf_addstr(out, "{}");
		cJSON_Delete(doc);
		return;
	}
	strbuf_addch(out, '{');
	n = 0;
	for (e = doc->child; e; e = e->next) {
		const cJSON *seen, *last = e;

		for (seen = doc->child; seen != e && strcmp(seen->string, e->string);
		     seen = seen->next)
			;
		if (seen != e)
			continue; /* written at its first place */
		for (const cJSON *l = e->next; l; l = l->next)
			if (strcmp(l->string, e->string) == 0)
				last = l;
		strbuf_addstr(out, n++ ? ",\n          " : "\n          ");
		py_str(out, e->string);
		dec_py_repr(last->valuedouble, num, sizeof(num));
		strbuf_addf(out, ": %s", num);
	}
	strbuf_addstr(out, "\n        }");
	cJSON_Delete(doc);
}

static int on_request(const struct request_record *r, void *arg)
{
	struct gswarm_ctx *c = arg;
	struct strbuf *out = c->out;
	char q[48], p[48];

	if (c->requests == 0 || strcmp(r->app, c->app) != 0) {
		if (c->requests)
			strbuf_addstr(out, "\n    ],");
		strbuf_addstr(out, "\n    ");
		py_str(out, r->app);
		strbuf_addstr(out, ": [\n      {\n");
		snprintf(c->app, sizeof(c->app), "%s", r->app);
	} else {
		strbuf_addstr(out, ",\n      {\n");
	}
	c->requests++;
	dec_py_repr(r->queue_s, q, sizeof(q));
	dec_py_repr(r->processing_s, p, sizeof(p));
	strbuf_addf(out,
		    "        \"queue_time\": %s,\n        \"processing_time\": %s,\n"
		    "        \"other_times\": ",
		    q, p);
	session_gswarm_other(out, r->other);
	strbuf_addstr(out, "\n      }");
	return strbuf_error(out);
}

int64_t session_gswarm_period_ms(const struct session_record *s)
{
	return s->interval_ms > 0 ? s->interval_ms : SESSION_GSWARM_PERIOD_MS;
}

/* frame k (from 1) is at start + k periods, up to the end (now while active) */
int64_t session_gswarm_frames(const struct session_record *s, int64_t now_ms)
{
	int64_t end = s->end_ms > 0 ? s->end_ms : now_ms;

	return end > s->start_ms ? (end - s->start_ms) / session_gswarm_period_ms(s) : 0;
}

int session_export_gswarm(struct store *st, const struct session_record *s, struct strbuf *out)
{
	return session_export_gswarm_progress(st, s, out, -1, NULL);
}

int session_export_gswarm_progress(struct store *st, const struct session_record *s,
				   struct strbuf *out, int spill_fd,
				   const struct progress_hook *progress)
{
	struct gswarm_ctx c;
	int64_t now = time_now_ms();
	int ret;

	memset(&c, 0, sizeof(c));
	c.out = out;
	c.spill_fd = spill_fd;
	c.progress = progress;
	c.frames_total = session_gswarm_frames(s, now);
	strbuf_addstr(out, "{\n  \"frames\": [");
	ret = store_for_each_session_tick(st, s, now, session_gswarm_period_ms(s), on_tick, &c);
	if (ret)
		goto out_free;
	strbuf_addstr(out, c.frames ? "\n  ]" : "]");
	write_summaries(&c);
	strbuf_addstr(out, ",\n  \"request_time_info\": {");
	ret = store_for_each_request_arrived(st, s->start_ms, s->end_ms ? s->end_ms : now,
					     on_request, &c);
	if (ret)
		goto out_free;
	strbuf_addstr(out, c.requests ? "\n    ]\n  }\n}" : "}\n}");
	ret = strbuf_error(out);
out_free:
	progress_finish(progress);
	if (!ret)
		ret = strbuf_error(out); /* past its cap: cut short, not an export */
	for (size_t i = 0; c.gpu && i < c.ngpus; i++)
		free(c.gpu[i].id_json);
	for (size_t i = 0; c.host_json && i < c.nnodes; i++)
		free(c.host_json[i]);
	free(c.gpu);
	free(c.node);
	free(c.host_json);
	free(c.client_order);
	return ret;
}
