/*
 * status.c - what the head says of itself and its agents: GET / (who it
 * is), GET /clients (the agents, with their health: an agent is unhealthy
 * after HEAD_UNHEALTHY_INTERVALS of its intervals without a batch) and
 * GET /status (gswarm's fields: sessions, frequency, connected clients,
 * GPUs; then ours).
 */
#include "head/head.h"

#include <stdio.h>
#include <string.h>

#include "common/timeutil.h"
#include "store/queries.h"

struct clients_ctx {
	struct jsonw *w;
	int64_t now_ms;
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
	jsonw_kv_int(w, "acked_seq", a->acked_seq);
	jsonw_kv_int(w, "first_seen_ms", a->first_seen_ms);
	jsonw_kv_int(w, "last_seen_ms", a->last_seen_ms);
	jsonw_kv_int_opt(w, "interval_ms", a->interval_ms > 0, a->interval_ms);
	/* unhealthy after 3 missed intervals (a batch per interval when current) */
	jsonw_kv_bool(w, "healthy",
		      a->interval_ms > 0 &&
			  c->now_ms - a->last_seen_ms <= HEAD_UNHEALTHY_INTERVALS * a->interval_ms);
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
static int clients_json(struct head *h, struct jsonw *w)
{
	struct clients_ctx c = {w, time_now_ms(), 0};
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
	int64_t interval_ms; /* the smallest active session interval */
	int active;
	char files[1024];
	size_t files_len;
};

static int status_session(const struct session_record *s, void *arg)
{
	struct status_ctx *c = arg;

	c->active++;
	if (s->interval_ms > 0 && (c->interval_ms == 0 || s->interval_ms < c->interval_ms))
		c->interval_ms = s->interval_ms;
	if (c->files_len + strlen(s->name) + 7 < sizeof(c->files))
		c->files_len +=
		    (size_t)snprintf(c->files + c->files_len, sizeof(c->files) - c->files_len,
				     "%s%s.json", c->files_len ? "," : "", s->name);
	head_session_json(c->w, s);
	return 0;
}

static int status_client(const struct agent_record *a, void *arg)
{
	struct status_ctx *c = arg;

	if (a->interval_ms > 0 &&
	    c->now_ms - a->last_seen_ms <= HEAD_UNHEALTHY_INTERVALS * a->interval_ms)
		jsonw_str(c->w, a->agent_id);
	return 0;
}

/* a row of store_query_device_rows */
static int status_gpu(const struct store_row *r, void *arg)
{
	struct jsonw *w = arg;

	jsonw_obj_begin(w);
	jsonw_kv_str(w, "client_id", r->text[0]);
	jsonw_kv_str(w, "node", r->text[1]);
	jsonw_kv_int(w, "index", (int64_t)r->num[2]);
	jsonw_kv_str(w, "uuid", r->text[3]);
	jsonw_kv_str(w, "name", r->text[4]);
	jsonw_kv_int_opt(w, "memory_total_bytes", !r->null[5], (int64_t)r->num[5]);
	jsonw_obj_end(w);
	return 0;
}

/*
 * gswarm's GET /status: its fields (freq as the smallest active session
 * interval in ms, or null; the GPUs of every client), plus ours.
 */
static int status_json(struct head *h, struct jsonw *w)
{
	struct status_ctx c = {w, time_now_ms(), 0, 0, "", 0};
	int ret;

	jsonw_obj_begin(w);
	jsonw_key(w, "active_sessions");
	jsonw_arr_begin(w);
	ret = store_for_each_session(h->st, true, status_session, &c);
	jsonw_arr_end(w);
	if (ret)
		return ret;
	jsonw_kv_int_opt(w, "freq", c.interval_ms > 0, c.interval_ms);
	jsonw_kv_str(w, "freq_unit", "ms");
	jsonw_kv_bool(w, "enable_bandwidth_profiling", true);
	jsonw_kv_bool(w, "enable_nvlink_profiling", true);
	jsonw_kv_bool(w, "is_profiling", c.active > 0);
	jsonw_kv_str_opt(w, "output_filename", c.files_len ? c.files : NULL);
	jsonw_kv_int(w, "frame_id_counter", (int64_t)h->batches);
	jsonw_key(w, "connected_clients");
	jsonw_arr_begin(w);
	ret = store_for_each_agent(h->st, status_client, &c);
	jsonw_arr_end(w);
	if (ret)
		return ret;
	jsonw_key(w, "gpu_info");
	jsonw_arr_begin(w);
	ret = store_query_device_rows(h->st, status_gpu, w);
	jsonw_arr_end(w);
	if (ret)
		return ret;
	jsonw_kv_str(w, "version", JOBSCOPE_VERSION);
	jsonw_kv_int(w, "started_ms", h->started_ms);
	jsonw_kv_str(w, "store", store_path(h->st));
	jsonw_kv_int(w, "batches", (int64_t)h->batches);
	jsonw_kv_int(w, "refused_batches", (int64_t)h->refused);
	ret = clients_json(h, w);
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

	(void)req;
	jsonw_init(&w, &res->body, true);
	jsonw_obj_begin(&w);
	if (clients_json(h, &w)) {
		http_error(res, 503, "the store cannot be read");
		return;
	}
	jsonw_obj_end(&w);
	strbuf_addch(&res->body, '\n');
}

void head_status(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct jsonw w;

	(void)req;
	jsonw_init(&w, &res->body, true);
	if (status_json(h, &w)) {
		http_error(res, 503, "the store cannot be read");
		return;
	}
	strbuf_addch(&res->body, '\n');
}
