/*
 * sessions.c - named profiling sessions (gswarm's /profiling calls): POST
 * /profiling/start and /profiling/stop (admin), GET /profiling/sessions,
 * and GET /api/v1/sessions/NAME/export (read: what `jobscope export` and
 * `jobscope report --session` print, so that they can ask a head).
 * While a session is active its nodes' agents sample at its interval,
 * told through the ingest answer (ingest.c).  Sessions live in the store,
 * so they outlive a restart of the head.
 */
#include "head/head.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/timeutil.h"
#include "net/api.h"
#include "report/session_export.h"

/* {"success", "message"[, "error"]} with that status: the /profiling calls' answers */
static void json_answer(struct http_response *res, int status, bool success, const char *msg)
{
	struct jsonw w;

	res->status = status;
	strbuf_reset(&res->body);
	jsonw_init(&w, &res->body, false);
	jsonw_obj_begin(&w);
	jsonw_kv_bool(&w, "success", success);
	jsonw_kv_str(&w, "message", msg);
	if (!success)
		jsonw_kv_str(&w, "error", msg);
	jsonw_obj_end(&w);
	strbuf_addch(&res->body, '\n');
}

void head_session_not_post(void *arg, const struct http_request *req, struct http_response *res)
{
	(void)arg;
	(void)req;
	json_answer(res, 405, false, "POST a JSON object");
}

/* POST /profiling/start {"name"?, "interval_ms"?, "nodes"?: [..] or "a,b"} */
void head_session_start(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct session_record s;
	char msg[300];
	int ret;

	if (api_parse_session_start(req->body, req->body_len, time_now_ms(), &s, msg,
				    sizeof(msg))) {
		json_answer(res, 400, false, msg);
		return;
	}
	ret = store_session_start(h->st, &s);
	if (ret == -EEXIST) {
		snprintf(msg, sizeof(msg), "session '%s' is already active", s.name);
		json_answer(res, 409, false, msg);
	} else if (ret) {
		json_answer(res, 503, false, "the store cannot be written");
	} else {
		struct jsonw w;

		strbuf_reset(&res->body);
		jsonw_init(&w, &res->body, false);
		jsonw_obj_begin(&w);
		jsonw_kv_bool(&w, "success", true);
		snprintf(msg, sizeof(msg), "session '%s' started", s.name);
		jsonw_kv_str(&w, "message", msg);
		jsonw_kv_str(&w, "name", s.name);
		snprintf(msg, sizeof(msg), "%s.json", s.name);
		jsonw_kv_str(&w, "output_file", msg);
		jsonw_kv_int(&w, "start_ms", s.start_ms);
		jsonw_kv_int_opt(&w, "interval_ms", s.interval_ms > 0, s.interval_ms);
		jsonw_obj_end(&w);
		strbuf_addch(&res->body, '\n');
	}
}

/* POST /profiling/stop {"name"?}: no name stops every active session. */
void head_session_stop(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	char name[SESSION_NAME_MAX], msg[300];
	bool has_name;
	int stopped = 0;

	if (api_parse_session_stop(req->body, req->body_len, name, sizeof(name), &has_name, msg,
				   sizeof(msg))) {
		json_answer(res, 400, false, msg);
	} else if (store_session_stop(h->st, has_name ? name : NULL, time_now_ms(), &stopped)) {
		json_answer(res, 503, false, "the store cannot be written");
	} else if (stopped == 0 && has_name) {
		snprintf(msg, sizeof(msg), "no active session '%.200s'", name);
		json_answer(res, 404, false, msg);
	} else {
		snprintf(msg, sizeof(msg), "%d session%s stopped", stopped,
			 stopped == 1 ? "" : "s");
		json_answer(res, 200, true, msg);
	}
}

void head_session_json(struct jsonw *w, const struct session_record *s)
{
	char t[40], file[SESSION_NAME_MAX + 8];

	jsonw_obj_begin(w);
	jsonw_kv_str(w, "name", s->name);
	jsonw_kv_bool(w, "is_active", s->end_ms == 0);
	format_rfc3339_ms(s->start_ms, t, sizeof(t));
	jsonw_kv_str(w, "start_time", t);
	jsonw_kv_int(w, "start_ms", s->start_ms);
	jsonw_kv_int_opt(w, "end_ms", s->end_ms > 0, s->end_ms);
	jsonw_kv_int_opt(w, "interval_ms", s->interval_ms > 0, s->interval_ms);
	jsonw_key(w, "nodes");
	if (s->nodes[0]) {
		char nodes[SESSION_NODES_MAX], *save = NULL;

		snprintf(nodes, sizeof(nodes), "%s", s->nodes);
		jsonw_arr_begin(w);
		for (char *n = strtok_r(nodes, ",", &save); n; n = strtok_r(NULL, ",", &save))
			jsonw_str(w, n);
		jsonw_arr_end(w);
	} else {
		jsonw_null(w); /* every node */
	}
	snprintf(file, sizeof(file), "%s.json", s->name);
	jsonw_kv_str(w, "output_file", file);
	jsonw_obj_end(w);
}

struct sessions_ctx {
	struct jsonw *w;
	int total, active;
};

static int session_each(const struct session_record *s, void *arg)
{
	struct sessions_ctx *c = arg;

	head_session_json(c->w, s);
	c->total++;
	c->active += s->end_ms == 0;
	return 0;
}

/* GET /profiling/sessions: every session, by start */
void head_sessions(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct sessions_ctx c = {NULL, 0, 0};
	struct jsonw w;

	(void)req;
	jsonw_init(&w, &res->body, true);
	c.w = &w;
	jsonw_obj_begin(&w);
	jsonw_key(&w, "sessions");
	jsonw_arr_begin(&w);
	if (store_for_each_session(h->st, false, session_each, &c)) {
		http_error(res, 503, "the store cannot be read");
		return;
	}
	jsonw_arr_end(&w);
	jsonw_kv_int(&w, "total_sessions", c.total);
	jsonw_kv_int(&w, "active_sessions", c.active);
	jsonw_obj_end(&w);
	strbuf_addch(&res->body, '\n');
}

/*
 * GET /api/v1/sessions/NAME/export?format=json|csv|text|gswarm: the bytes
 * `jobscope export --session NAME [--format csv|gswarm]` (json, csv, gswarm) or
 * `jobscope report --session NAME` (text) print on the head's store,
 * rendered by the same code (report/session_export.c).  The answer is
 * built whole (its size is the server's answer cap): a session past it
 * gets a 500 that says so.
 */
void head_session_export(void *arg, const struct http_request *req, struct http_response *res)
{
	static const char *const formats[][2] = {
	    {"json", "application/json"},
	    {"csv", "text/csv; charset=utf-8"},
	    {"text", "text/plain; charset=utf-8"},
	    {"gswarm", "application/json"},
	};
	struct head *h = arg;
	const char *name = req->path + strlen("/api/v1/sessions/");
	const char *format = http_query_arg(req, "format");
	char want[SESSION_NAME_MAX], msg[300];
	struct session_record s;
	size_t len = strcspn(name, "/"), f = 0;
	int ret;

	while (format && f < sizeof(formats) / sizeof(formats[0]) && strcmp(format, formats[f][0]))
		f++;
	if (f == sizeof(formats) / sizeof(formats[0])) {
		http_error(res, 400, "format: json (default), csv, text or gswarm");
		return;
	}
	if (len >= sizeof(want)) {
		http_error(res, 404, "no such session");
		return;
	}
	memcpy(want, name, len);
	want[len] = '\0';
	ret = store_session_get(h->st, want, &s);
	if (ret) {
		snprintf(msg, sizeof(msg), "no session '%s'", want);
		http_error(res, ret == -ENOENT ? 404 : 503,
			   ret == -ENOENT ? msg : "the store cannot be read");
		return;
	}
	strbuf_reset(&res->body);
	ret = f == 2   ? session_export_report(h->st, s.name, &res->body)
	      : f == 3 ? session_export_gswarm(h->st, &s, &res->body)
		       : session_export_frames(h->st, &s, f == 1, &res->body);
	if (ret == -E2BIG) {
		snprintf(msg, sizeof(msg),
			 "the export of '%s' is larger than the head's answer cap (%zu MiB): "
			 "run `jobscope export --db` on the head's machine",
			 s.name, res->body.max_len >> 20);
		http_error(res, 500, msg);
	} else if (ret) {
		http_error(res, 503, "the store cannot be read");
	} else {
		res->content_type = formats[f][1];
	}
}
