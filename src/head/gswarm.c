/*
 * gswarm.c - gswarm-profiler's shapes of the head's answers, beside ours:
 * the GPUs of each client as gswarm's /status (`gpu_info`) and /clients
 * (`gpus`) give them, `client_data` of /metrics/latest in gswarm's units,
 * and POST /profiling/record (/record_time): per-request timings an application
 * posts.  docs/gswarm.md says what each field means and where our values
 * differ from gswarm's README (its code is what clients follow).
 *
 * A client is an agent; it is connected while it is healthy (heard of
 * within HEAD_UNHEALTHY_INTERVALS of its intervals), as gswarm's client
 * is while its stream is open.
 */
#include "head/head.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/timeutil.h"
#include "net/api.h"
#include "sample/figures.h"
#include "store/queries.h"
#include "store/profiling.h"
#include "store/reader.h"
#include "store/sync.h"

bool head_agent_connected(const struct agent_record *a, int64_t now_ms)
{
	return a->interval_ms > 0 &&
	       now_ms - a->last_seen_ms <= HEAD_UNHEALTHY_INTERVALS * a->interval_ms;
}

/*
 * gswarm writes "<name>.json" in its working directory.  Ours: the name's
 * bytes, with '/', '\\', '%' (and a leading '.') as %XX, so that any name
 * makes one file inside the session directory; past 200 bytes the name is
 * cut (at a character) and ends "~" and 8 hex digits of its FNV-1a hash,
 * which keeps distinct names apart.
 */
void head_session_file(const char *name, const char *ext, char *buf, size_t size)
{
	uint32_t hash = 2166136261u;
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		hash = (hash ^ *p) * 16777619u;
	for (const unsigned char *p = (const unsigned char *)name; *p && o + 16 < size; p++) {
		bool esc = *p == '/' || *p == '\\' || *p == '%' ||
			   (*p == '.' && p == (const unsigned char *)name);

		if (o >= 200 && (*p & 0xc0) != 0x80) {
			o += (size_t)snprintf(buf + o, size - o, "~%08x", hash);
			break;
		}
		if (esc)
			o += (size_t)snprintf(buf + o, size - o, "%%%02X", *p);
		else
			buf[o++] = (char)*p;
	}
	buf[o] = '\0';
	snprintf(buf + o, size - o, "%s", ext);
}

/* ---- the GPUs of every agent, as gswarm names them ---- */

static int gpu_row(const struct store_row *r, void *arg)
{
	struct head_gpu_list *l = arg;
	struct head_gpu *g;

	if (ARRAY_GROW(l->v, l->n, l->cap, 64))
		return -ENOMEM;
	g = &l->v[l->n++];
	snprintf(g->agent_id, sizeof(g->agent_id), "%s", r->text[0]);
	snprintf(g->hostname, sizeof(g->hostname), "%s", r->text[1]);
	g->idx = (int)r->num[2];
	snprintf(g->uuid, sizeof(g->uuid), "%s", r->text[3]);
	snprintf(g->name, sizeof(g->name), "%s", r->text[4]);
	g->has_mem = !r->null[5];
	g->mem_total_bytes = (int64_t)r->num[5];
	return 0;
}

/* by agent, then index: each agent's GPUs are one run, found by bisection */
static int by_agent(const void *a, const void *b)
{
	const struct head_gpu *x = a, *y = b;
	int c = strcmp(x->agent_id, y->agent_id);

	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

int head_gpu_list_load(struct store *st, struct head_gpu_list *l)
{
	int ret;

	memset(l, 0, sizeof(*l));
	ret = store_query_device_rows(st, gpu_row, l);
	if (!ret && l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), by_agent);
	return ret;
}

void head_gpu_list_release(struct head_gpu_list *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* gswarm's {"id": "host:idx:name", "name", "physical_idx", "hostname"}, then ours */
static void gpu_json(struct jsonw *w, const struct head_gpu *g)
{
	char id[sizeof(g->hostname) + sizeof(g->name) + 16];

	snprintf(id, sizeof(id), "%s:%d:%s", g->hostname, g->idx, g->name);
	jsonw_obj_begin(w);
	jsonw_kv_str(w, "id", id);
	jsonw_kv_str(w, "name", g->name);
	jsonw_kv_int(w, "physical_idx", g->idx);
	jsonw_kv_str(w, "hostname", g->hostname);
	jsonw_kv_str(w, "uuid", g->uuid);
	jsonw_kv_int_opt(w, "memory_total_bytes", g->has_mem, g->mem_total_bytes);
	jsonw_obj_end(w);
}

int head_gpus_of_json(struct jsonw *w, const struct head_gpu_list *l, const char *agent_id)
{
	size_t lo = 0, hi = l->n;
	int n = 0;

	while (lo < hi) { /* the first GPU whose agent is not before agent_id */
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(l->v[mid].agent_id, agent_id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	jsonw_arr_begin(w);
	for (; lo < l->n && strcmp(l->v[lo].agent_id, agent_id) == 0; lo++, n++)
		gpu_json(w, &l->v[lo]);
	jsonw_arr_end(w);
	return n;
}

/* ---- /metrics/latest's client_data ---- */

/* a row of store_query_gswarm_gpus, kept: its agent_id, name, and numbers by column */
#define LATEST_GPU_COLS 14
struct latest_gpu {
	char agent_id[64];
	char name[128];
	double num[LATEST_GPU_COLS];
	bool null[LATEST_GPU_COLS];
};

struct latest_ctx {
	struct jsonw *w;
	int64_t now_ms;
	/* every agent's GPUs, by agent_id and index: one query, not one an agent */
	struct latest_gpu *gpu;
	size_t ngpus, alloc;
};

/* a value in gswarm's payload: always a number (gswarm's client sends 0.0 for what it cannot read)
 */
static void gs_num(struct jsonw *w, const char *key, bool valid, double v)
{
	jsonw_kv_double(w, key, valid && isfinite(v) ? v : 0.0, 6);
}

/* columns ts (ts_ms, NVLink rx, tx) of a kept store_query_gswarm_gpus row as a sample */
static int64_t nvlink_of(const struct latest_gpu *g, int ts, struct gpu_sample *out)
{
	*out = (struct gpu_sample){0};
	if (!g->null[ts + 1] && !g->null[ts + 2]) {
		out->valid = GPU_NVLINK;
		out->nvlink_rx_bytes = (uint64_t)g->num[ts + 1];
		out->nvlink_tx_bytes = (uint64_t)g->num[ts + 2];
	}
	return g->null[ts] ? -1 : (int64_t)g->num[ts];
}

static int keep_gpu(const struct store_row *r, void *arg)
{
	struct latest_ctx *c = arg;
	struct latest_gpu *g;

	if (ARRAY_GROW(c->gpu, c->ngpus, c->alloc, 64))
		return -ENOMEM;
	g = &c->gpu[c->ngpus++];
	snprintf(g->agent_id, sizeof(g->agent_id), "%s", r->text[0]);
	snprintf(g->name, sizeof(g->name), "%s", r->text[2]);
	for (int k = 1; k < LATEST_GPU_COLS; k++) {
		g->num[k] = r->num[k];
		g->null[k] = r->null[k];
	}
	return 0;
}

/*
 * by agent, then index, in strcmp's order whatever the database's collation
 * (PostgreSQL's may not be "C"): each agent's GPUs are one run, found by
 * bisection
 */
static int by_agent_idx(const void *a, const void *b)
{
	const struct latest_gpu *x = a, *y = b;
	int c = strcmp(x->agent_id, y->agent_id);

	return c ? c : (x->num[1] > y->num[1]) - (x->num[1] < y->num[1]);
}

/* a GPU kept by keep_gpu, in gswarm's shape */
static void latest_gpu(struct jsonw *w, const struct latest_gpu *g)
{
	struct gpu_sample cur, prev;
	int64_t ts = nvlink_of(g, 8, &cur), prev_ts = nvlink_of(g, 11, &prev);
	struct gpu_figures f;
	double nv_rx, nv_tx;

	/* the rates from the latest sample and the one before (sample/figures.h) */
	gpu_figures(&cur, ts >= 0 && prev_ts >= 0 ? &prev : NULL, ts - prev_ts, &f);
	nv_rx = f.nvlink_rx_bps;
	nv_tx = f.nvlink_tx_bps;

	jsonw_obj_begin(w);
	jsonw_kv_int(w, "physical_idx", (int64_t)g->num[1]);
	jsonw_kv_str(w, "name", g->name);
	/* fractions, as gswarm's client sends them (nvitop's percent / 100) */
	gs_num(w, "gpu_util", !g->null[4], g->num[4] / 100.0);
	gs_num(w, "mem_util", !g->null[3] && !g->null[5] && g->num[3] > 0, g->num[5] / g->num[3]);
	/*
	 * KiB/s, and named as gswarm's client names them: its "rx" is what
	 * nvitop's pcie_throughput() gives first, the GPU's transmit.
	 */
	gs_num(w, "dram_bw_gbps_rx", !g->null[7], g->num[7] / 1024.0);
	gs_num(w, "dram_bw_gbps_tx", !g->null[6], g->num[6] / 1024.0);
	gs_num(w, "nvlink_bw_gbps_rx", !isnan(nv_rx), nv_rx / 1024.0);
	gs_num(w, "nvlink_bw_gbps_tx", !isnan(nv_tx), nv_tx / 1024.0);
	jsonw_obj_end(w);
}

static int latest_node(const struct store_row *r, void *arg)
{
	struct latest_ctx *c = arg;
	struct jsonw *w = c->w;
	struct agent_record a = {.interval_ms = (int64_t)r->num[3],
				 .last_seen_ms = (int64_t)r->num[2]};
	double total = r->num[4], avail = r->num[5];
	size_t lo = 0, hi = c->ngpus;

	if (r->null[3] || !head_agent_connected(&a, c->now_ms))
		return 0;
	jsonw_key(w, r->text[0]);
	jsonw_obj_begin(w);
	jsonw_key(w, "gpus_metrics");
	jsonw_arr_begin(w);
	while (lo < hi) { /* the agent's first GPU: bisection over the kept rows */
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(c->gpu[mid].agent_id, r->text[0]) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < c->ngpus && strcmp(c->gpu[lo].agent_id, r->text[0]) == 0; lo++)
		latest_gpu(w, &c->gpu[lo]);
	jsonw_arr_end(w);
	jsonw_key(w, "p2p_links");
	jsonw_arr_begin(w);
	jsonw_arr_end(w);
	jsonw_key(w, "system_metrics");
	jsonw_obj_begin(w);
	/* percent, as psutil's virtual_memory().percent and disk_usage("/").percent */
	gs_num(w, "dram_util", !r->null[4] && !r->null[5] && total > 0,
	       100.0 * (total - avail) / total);
	gs_num(w, "disk_util", !r->null[6] && !r->null[7] && r->num[7] > 0,
	       100.0 * r->num[6] / r->num[7]);
	jsonw_obj_end(w);
	jsonw_obj_end(w);
	return 0;
}

int head_client_data_json(struct store *st, struct jsonw *w, int64_t now_ms)
{
	struct latest_ctx c = {.w = w, .now_ms = now_ms};
	int ret;

	ret = store_query_gswarm_gpus(st, keep_gpu, &c);
	if (!ret && c.ngpus > 1)
		qsort(c.gpu, c.ngpus, sizeof(*c.gpu), by_agent_idx);
	jsonw_key(w, "client_data");
	jsonw_obj_begin(w);
	if (!ret)
		ret = store_query_gswarm_nodes(st, latest_node, &c);
	jsonw_obj_end(w);
	free(c.gpu);
	return ret;
}

/* ---- POST /profiling/record and /record_time ---- */

void head_request_record(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct request_record r;
	struct jsonw w;
	char msg[300];
	bool missing;
	int ret;

	strbuf_reset(&res->body);
	jsonw_init(&w, &res->body, false);
	ret = api_parse_request_record(req->body, req->body_len, time_now_ms(), &r, &missing, msg,
				       sizeof(msg));
	if (!ret)
		ret = store_request_add(h->st, &r) ? -EIO : 0;
	free((char *)r.other);
	/*
	 * gswarm (FastAPI) answers a body that does not validate 422 with
	 * {"detail": [...]}; we say why in "detail" too, and in our "error".
	 */
	res->status = ret == 0 ? 200 : ret == -EIO ? 503 : missing ? 422 : 400;
	if (ret == -EIO)
		snprintf(msg, sizeof(msg), "the store cannot be written");
	jsonw_obj_begin(&w);
	jsonw_kv_bool(&w, "success", ret == 0);
	jsonw_kv_str(&w, "message", ret == 0 ? "Time consumption recorded successfully" : msg);
	if (ret) {
		jsonw_kv_str(&w, "detail", msg);
		jsonw_kv_str(&w, "error", msg);
		jsonw_kv_int(&w, "status", res->status);
	}
	jsonw_obj_end(&w);
	strbuf_addch(&res->body, '\n');
}
