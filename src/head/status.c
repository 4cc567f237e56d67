/*
 * status.c - what the head says of itself and its agents: GET / (who it
 * is), GET /clients (the agents, with their health: an agent is unhealthy
 * after HEAD_UNHEALTHY_INTERVALS of its intervals without a batch) and
 * GET /status (gswarm's fields with gswarm's types: frequency, the
 * latest session's file and frames, connected clients, GPUs; then ours).
 */
#include "head/head.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/timeutil.h"
#include "report/session_export.h"
#include "store/queries.h"
#include "store/profiling.h"
#include "store/sync.h"

/*
 * What /status and /clients tell of the agents, read once per request (the
 * agents query counts each one's devices and gap records): every agent, by
 * hostname, and every GPU, by agent.
 */
struct cluster {
	struct agent_record *agents;
	size_t nagents, alloc;
	struct head_gpu_list gpus;
	int64_t now_ms;
};

static int cluster_agent(const struct agent_record *a, void *arg)
{
	struct cluster *c = arg;

	if (ARRAY_GROW(c->agents, c->nagents, c->alloc, 16))
		return -ENOMEM;
	c->agents[c->nagents++] = *a;
	return 0;
}

static void cluster_release(struct cluster *c)
{
	free(c->agents);
	head_gpu_list_release(&c->gpus);
}

static int cluster_load(struct store *st, struct cluster *c)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->now_ms = time_now_ms();
	ret = head_gpu_list_load(st, &c->gpus);
	if (!ret)
		ret = store_for_each_agent(st, cluster_agent, c);
	return ret;
}

static void client_json(struct jsonw *w, const struct cluster *c, const struct agent_record *a)
{
	jsonw_obj_begin(w);
	jsonw_kv_str(w, "client_id", a->agent_id);
	jsonw_kv_str(w, "hostname", a->hostname);
	jsonw_kv_int(w, "gpu_count", a->gpus);
	jsonw_key(w, "gpus");
	head_gpus_of_json(w, &c->gpus, a->agent_id);
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
}

/* "clients": [...], "total_clients": N */
static void clients_json(struct jsonw *w, const struct cluster *c)
{
	jsonw_key(w, "clients");
	jsonw_arr_begin(w);
	for (size_t i = 0; i < c->nagents; i++)
		client_json(w, c, &c->agents[i]);
	jsonw_arr_end(w);
	jsonw_kv_int(w, "total_clients", (int64_t)c->nagents);
}

struct status_ctx {
	int64_t now_ms;
	int64_t interval_ms; /* the smallest active session interval, else the agents' */
	int active;
	struct session_record latest; /* the session started last (an active one first) */
	bool has_latest;
};

static int status_session(const struct session_record *s, void *arg)
{
	struct status_ctx *c = arg;
	bool active = s->end_ms == 0;

	c->active += active;
	if (active && s->interval_ms > 0 &&
	    (c->interval_ms == 0 || s->interval_ms < c->interval_ms))
		c->interval_ms = s->interval_ms;
	/* sessions come by start: the last active one, else the last one */
	if (active || !c->has_latest || c->latest.end_ms != 0) {
		c->latest = *s;
		c->has_latest = true;
	}
	return 0;
}

struct heads_ctx {
	struct jsonw *w;
	const struct head *h;
	char holder[128];
};

static int status_head(const struct head_record *r, void *arg)
{
	struct heads_ctx *c = arg;
	struct jsonw *w = c->w;

	jsonw_obj_begin(w);
	jsonw_kv_str(w, "id", r->id);
	jsonw_kv_str(w, "hostname", r->hostname);
	jsonw_kv_str(w, "listen", r->listen);
	jsonw_kv_int(w, "pid", r->pid);
	jsonw_kv_int(w, "started_ms", r->started_ms);
	jsonw_kv_int(w, "seen_ms", r->seen_ms);
	jsonw_kv_bool(w, "self", strcmp(r->id, c->h->me.id) == 0);
	/* a file's head holds it for ever: no expiry */
	jsonw_kv_int_opt(w, "lease_expires_ms", r->holds_lease && r->lease_expires_ms > 0,
			 r->lease_expires_ms);
	jsonw_kv_bool(w, "upkeep_lease", r->holds_lease);
	jsonw_obj_end(w);
	if (r->holds_lease)
		snprintf(c->holder, sizeof(c->holder), "%s", r->id);
	return 0;
}

/*
 * "head_id", "heads" (every head of this database that beat in the last
 * day, from its heads table; a file's head alone) and "upkeep_lease" (the
 * id of the head that runs retention, report checkpoints and remote write;
 * null when none holds it now).  seen_ms and the expiry are the database's
 * clock, as is "heads_now_ms" (a file's head: its own clock).
 */
static void heads_json(struct head *h, struct jsonw *w)
{
	struct heads_ctx c = {.w = w, .h = h};
	int64_t now_ms = 0;

	jsonw_kv_str(w, "head_id", h->me.id);
	jsonw_key(w, "heads");
	jsonw_arr_begin(w);
	if (!h->writer_is_pg) {
		struct head_record me = h->me;

		me.seen_ms = now_ms = time_now_ms();
		me.holds_lease = true;
		status_head(&me, &c);
	} else {
		/* a failure (the table not made yet) lists none */
		store_for_each_head(h->st, &now_ms, status_head, &c);
	}
	jsonw_arr_end(w);
	jsonw_kv_int_opt(w, "heads_now_ms", now_ms > 0, now_ms);
	if (c.holder[0])
		jsonw_kv_str(w, "upkeep_lease", c.holder);
	else
		jsonw_kv_null(w, "upkeep_lease");
}

static int status_active_session(const struct session_record *s, void *arg)
{
	head_session_json(arg, s, time_now_ms());
	return 0;
}

/*
 * gswarm's GET /status, its fields with its types (docs/gswarm.md), then
 * ours: the active sessions, the head's counters and every agent.
 */
static int status_json(struct head *h, struct jsonw *w, const struct cluster *cl)
{
	struct status_ctx c = {.now_ms = cl->now_ms};
	char file[HEAD_SESSION_FILE_MAX];
	int64_t sessions_ms;
	int ret, total_gpus = 0;

	ret = store_for_each_session(h->st, false, status_session, &c);
	if (ret)
		return ret;
	sessions_ms = c.interval_ms;
	/* no active session asks an interval: the connected agents' smallest */
	for (size_t i = 0; i < cl->nagents && !sessions_ms; i++)
		if (head_agent_connected(&cl->agents[i], c.now_ms) &&
		    (c.interval_ms == 0 || cl->agents[i].interval_ms < c.interval_ms))
			c.interval_ms = cl->agents[i].interval_ms;
	jsonw_obj_begin(w);
	jsonw_kv_int(w, "freq", c.interval_ms > 0 ? c.interval_ms : SESSION_GSWARM_PERIOD_MS);
	jsonw_kv_bool(w, "enable_bandwidth_profiling", true);
	jsonw_kv_bool(w, "enable_nvlink_profiling", true);
	jsonw_kv_bool(w, "is_profiling", c.active > 0);
	file[0] = '\0';
	if (c.has_latest)
		head_session_file(c.latest.name, ".json", file, sizeof(file));
	jsonw_kv_str(w, "output_filename", file);
	jsonw_kv_int(w, "frame_id_counter",
		     c.has_latest ? session_gswarm_frames(&c.latest, c.now_ms) : 0);
	jsonw_key(w, "connected_clients");
	jsonw_arr_begin(w);
	for (size_t i = 0; i < cl->nagents; i++)
		if (head_agent_connected(&cl->agents[i], c.now_ms))
			jsonw_str(w, cl->agents[i].agent_id);
	jsonw_arr_end(w);
	jsonw_key(w, "gpu_info");
	jsonw_obj_begin(w);
	for (size_t i = 0; i < cl->nagents; i++)
		if (head_agent_connected(&cl->agents[i], c.now_ms)) {
			jsonw_key(w, cl->agents[i].agent_id);
			total_gpus += head_gpus_of_json(w, &cl->gpus, cl->agents[i].agent_id);
		}
	jsonw_obj_end(w);
	jsonw_kv_int(w, "total_gpus", total_gpus);
	jsonw_key(w, "active_sessions");
	jsonw_arr_begin(w);
	ret = store_for_each_session(h->st, true, status_active_session, w);
	jsonw_arr_end(w);
	if (ret)
		return ret;
	jsonw_kv_str(w, "freq_unit", "ms");
	jsonw_kv_str(w, "version", JOBSCOPE_VERSION);
	jsonw_kv_int(w, "started_ms", h->started_ms);
	jsonw_kv_str(w, "store", store_path(h->st));
	/* --insecure said where an operator looks, not only in the log at start */
	jsonw_kv_bool(w, "insecure", h->acc.insecure);
	jsonw_key(w, "warnings");
	jsonw_arr_begin(w);
	if (h->acc.insecure)
		jsonw_str(w,
			  h->acc.has_token
			      ? "--insecure: anyone who can reach this head reads every user's jobs"
			      : "--insecure: anyone who can reach this head reads every user's "
				"jobs, sends rows and starts sessions");
	jsonw_arr_end(w);
	jsonw_kv_int(w, "batches", (int64_t)h->batches);
	jsonw_kv_int(w, "refused_batches", (int64_t)h->refused);
	heads_json(h, w);
	clients_json(w, cl);
	jsonw_obj_end(w);
	return 0;
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
	struct cluster cl;
	struct jsonw w;

	(void)req;
	if (cluster_load(h->st, &cl)) {
		cluster_release(&cl);
		http_error(res, 503, "the store cannot be read");
		return;
	}
	jsonw_init(&w, &res->body, true);
	jsonw_obj_begin(&w);
	clients_json(&w, &cl);
	jsonw_obj_end(&w);
	strbuf_addch(&res->body, '\n');
	cluster_release(&cl);
}

void head_status(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct cluster cl;
	struct jsonw w;
	int ret;

	(void)req;
	ret = cluster_load(h->st, &cl);
	jsonw_init(&w, &res->body, true);
	if (ret || status_json(h, &w, &cl)) {
		const char *why = store_errmsg(h->st);
		char msg[640];

		/* a database away says why (libpq's message): the operator's first look */
		snprintf(msg, sizeof(msg), "the store cannot be read%s%s%s", why[0] ? " (" : "",
			 why, why[0] ? ")" : "");
		cluster_release(&cl);
		http_error(res, 503, msg);
		return;
	}
	cluster_release(&cl);
	strbuf_addch(&res->body, '\n');
}
