/*
 * status.c - what the head says of itself and its agents: GET / (who it
 * is), GET /clients (the agents, with their health: an agent is unhealthy
 * after HEAD_UNHEALTHY_INTERVALS of its intervals without a batch) and
 * GET /status (gswarm's fields with gswarm's types: frequency, the
 * latest session's file and frames, connected clients, GPUs; then ours).
 */
#include "head/head.h"

#include <stdio.h>
#include <string.h>

#include "common/timeutil.h"
#include "store/queries.h"

struct clients_ctx {
	struct jsonw *w;
	int64_t now_ms;
	const struct head_gpu_list *gpus;
	int n;
};

static int client_json(const struct agent_record *a, void *arg)
{
	struct clients_ctx *c = arg;
	struct jsonw *w = c->w;

	jsonw_obj_begin(w);
	jsonw_kv_str(w, "client_id", a->agent_id);
	jsonw_kv_str(w, "hostname", a->hostname);
	jsonw_kv_int(w, "gpu_count", a->gpus);
	jsonw_key(w, "gpus");
	head_gpus_of_json(w, c->gpus, a->agent_id);
	jsonw_kv_int(w, "acked_seq", a->acked_seq);
	jsonw_kv_int(w, "first_seen_ms", a->first_seen_ms);
	jsonw_kv_int(w, "last_seen_ms", a->last_seen_ms);
	jsonw_kv_int_opt(w, "interval_ms", a->interval_ms > 0, a->interval_ms);
	/* unhealthy after 3 missed intervals (a batch per interval when current) */
	jsonw_kv_bool(w, "healthy", head_agent_connected(a, c->now_ms));
	jsonw_kv_int(w, "batches", a->batches);
	jsonw_kv_int(w, "rows", a->rows);
	/* rows its size cap deleted before we held them, by its gap records */
	jsonw_kv_int_opt(w, "lost_rows", a->has_gaps, a->lost_rows);
	jsonw_kv_int_opt(w, "gaps", a->has_gaps, a->gaps);
	jsonw_obj_end(w);
	c->n++;
	return 0;
}

/* "clients": [...], "total_clients": N */
static int clients_json(struct head *h, struct jsonw *w, const struct head_gpu_list *gpus)
{
	struct clients_ctx c = {w, time_now_ms(), gpus, 0};
	int ret;

	jsonw_key(w, "clients");
	jsonw_arr_begin(w);
	ret = store_for_each_agent(h->st, client_json, &c);
	jsonw_arr_end(w);
	jsonw_kv_int(w, "total_clients", c.n);
	return ret;
}

struct status_ctx {
	struct jsonw *w;
	int64_t now_ms;
	int64_t interval_ms; /* the smallest active session interval, else the agents' */
	int active;
	struct session_record latest; /* the session started last (an active one first) */
	bool has_latest;
	const struct head_gpu_list *gpus;
	int total_gpus;
};

static int status_session(const struct session_record *s, void *arg)
{
	struct status_ctx *c = arg;
	bool active = s->end_ms == 0;

	c->active += active;
	if (active && s->interval_ms > 0 && (c->interval_ms == 0 || s->interval_ms < c->interval_ms))
		c->interval_ms = s->interval_ms;
	/* sessions come by start: the last active one, else the last one */
	if (active || !c->has_latest || c->latest.end_ms != 0) {
		c->latest = *s;
		c->has_latest = true;
	}
	return 0;
}

static int status_active_session(const struct session_record *s, void *arg)
{
	head_session_json(arg, s, time_now_ms());
	return 0;
}

static int status_agent_interval(const struct agent_record *a, void *arg)
{
	struct status_ctx *c = arg;

	if (head_agent_connected(a, c->now_ms) && (c->interval_ms == 0 || a->interval_ms < c->interval_ms))
		c->interval_ms = a->interval_ms;
	return 0;
}

static int status_client(const struct agent_record *a, void *arg)
{
	struct status_ctx *c = arg;

	if (head_agent_connected(a, c->now_ms))
		jsonw_str(c->w, a->agent_id);
	return 0;
}

static int status_gpu_info(const struct agent_record *a, void *arg)
{
	struct status_ctx *c = arg;

	if (head_agent_connected(a, c->now_ms)) {
		jsonw_key(c->w, a->agent_id);
		c->total_gpus += head_gpus_of_json(c->w, c->gpus, a->agent_id);
	}
	return 0;
}

/*
 * gswarm's GET /status, its fields with its types (docs/gswarm.md), then
 * ours: the active sessions, the head's counters and every agent.
 */
static int status_json(struct head *h, struct jsonw *w, const struct head_gpu_list *gpus)
{
	struct status_ctx c = {.w = w, .now_ms = time_now_ms(), .gpus = gpus};
	char file[HEAD_SESSION_FILE_MAX];
	int ret;

	ret = store_for_each_session(h->st, false, status_session, &c);
	if (!ret && c.interval_ms == 0)
		ret = store_for_each_agent(h->st, status_agent_interval, &c);
	if (ret)
		return ret;
	jsonw_obj_begin(w);
	jsonw_kv_int(w, "freq", c.interval_ms > 0 ? c.interval_ms : HEAD_GSWARM_PERIOD_MS);
	jsonw_kv_bool(w, "enable_bandwidth_profiling", true);
	jsonw_kv_bool(w, "enable_nvlink_profiling", true);
	jsonw_kv_bool(w, "is_profiling", c.active > 0);
	file[0] = '\0';
	if (c.has_latest)
		head_session_file(c.latest.name, ".json", file, sizeof(file));
	jsonw_kv_str(w, "output_filename", file);
	jsonw_kv_int(w, "frame_id_counter",
		     c.has_latest ? head_session_frames(&c.latest, c.now_ms) : 0);
	jsonw_key(w, "connected_clients");
	jsonw_arr_begin(w);
	ret = store_for_each_agent(h->st, status_client, &c);
	jsonw_arr_end(w);
	jsonw_key(w, "gpu_info");
	jsonw_obj_begin(w);
	if (!ret)
		ret = store_for_each_agent(h->st, status_gpu_info, &c);
	jsonw_obj_end(w);
	jsonw_kv_int(w, "total_gpus", c.total_gpus);
	jsonw_key(w, "active_sessions");
	jsonw_arr_begin(w);
	if (!ret)
		ret = store_for_each_session(h->st, true, status_active_session, w);
	jsonw_arr_end(w);
	if (ret)
		return ret;
	jsonw_kv_str(w, "freq_unit", "ms");
	jsonw_kv_str(w, "version", JOBSCOPE_VERSION);
	jsonw_kv_int(w, "started_ms", h->started_ms);
	jsonw_kv_str(w, "store", store_path(h->st));
	jsonw_kv_int(w, "batches", (int64_t)h->batches);
	jsonw_kv_int(w, "refused_batches", (int64_t)h->refused);
	ret = clients_json(h, w, gpus);
	jsonw_obj_end(w);
	return ret;
}

void head_root(void *arg, const struct http_request *req, struct http_response *res)
{
	struct jsonw w;

	(void)arg;
	(void)req;
	jsonw_init(&w, &res->body, true);
	jsonw_obj_begin(&w);
	jsonw_kv_str(&w, "message", "jobscope head");
	jsonw_kv_str(&w, "version", JOBSCOPE_VERSION);
	jsonw_obj_end(&w);
	strbuf_addch(&res->body, '\n');
}

void head_clients(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct jsonw w;

	struct head_gpu_list gpus;

	(void)req;
	jsonw_init(&w, &res->body, true);
	jsonw_obj_begin(&w);
	if (head_gpu_list_load(h->st, &gpus) || clients_json(h, &w, &gpus)) {
		head_gpu_list_release(&gpus);
		http_error(res, 503, "the store cannot be read");
		return;
	}
	head_gpu_list_release(&gpus);
	jsonw_obj_end(&w);
	strbuf_addch(&res->body, '\n');
}

void head_status(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct jsonw w;

	struct head_gpu_list gpus;

	(void)req;
	jsonw_init(&w, &res->body, true);
	if (head_gpu_list_load(h->st, &gpus) || status_json(h, &w, &gpus)) {
		head_gpu_list_release(&gpus);
		http_error(res, 503, "the store cannot be read");
		return;
	}
	head_gpu_list_release(&gpus);
	strbuf_addch(&res->body, '\n');
}
