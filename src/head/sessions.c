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
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/array.h"
#include "common/log.h"
#include "common/outfile.h"
#include "common/timeutil.h"
#include "net/api.h"
#include "report/session_export.h"
#include "store/profiling.h"
#include "store/queries.h"
#include "store/reader.h"

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

/* Node names from a query's column col, ",a,b," (to find ",a,"). */
struct known_nodes {
	struct strbuf names;
	int col;
};

static int known_node(const struct store_row *r, void *arg)
{
	struct known_nodes *k = arg;

	strbuf_addf(&k->names, "%s,", r->text[k->col]);
	return 0;
}

/*
 * The nodes a session names that no agent of this head is on, into out
 * (",a,b" joined by ", "): they will send nothing.  "" when all are known
 * (or the session names none, or the agents cannot be read).
 */
static void unknown_nodes(struct head *h, const struct session_record *s, char *out, size_t size)
{
	struct known_nodes k;
	char nodes[SESSION_NODES_MAX], want[300], *save = NULL;
	size_t len = 0;

	out[0] = '\0';
	if (!s->nodes[0])
		return;
	strbuf_init(&k.names, 1 << 20);
	strbuf_addch(&k.names, ',');
	k.col = 1;
	if (store_query_gswarm_nodes(h->st, known_node, &k) == 0) {
		snprintf(nodes, sizeof(nodes), "%s", s->nodes);
		for (char *n = strtok_r(nodes, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
			snprintf(want, sizeof(want), ",%s,", n);
			if (!strstr(strbuf_str(&k.names), want) && len < size)
				len += (size_t)snprintf(out + len, size - len, "%s%s",
							len ? ", " : "", n);
		}
	}
	strbuf_release(&k.names);
}

/*
 * The nodes of a stopped session that sent nothing in its window, into out
 * (joined by ", "): those it names, or (naming none) those of every agent
 * of this head, without a host row from start to end.  "" when every one
 * sent (or the store cannot be read: a stop is not failed for a warning).
 */
static void silent_nodes(struct head *h, const struct session_record *s, char *out, size_t size)
{
	struct known_nodes sent = {.col = 0}, want = {.col = 1};
	char *save = NULL, *list;
	size_t len = 0;

	out[0] = '\0';
	strbuf_init(&sent.names, 1 << 20);
	strbuf_init(&want.names, 1 << 20);
	strbuf_addch(&sent.names, ',');
	if (s->nodes[0])
		strbuf_addstr(&want.names, s->nodes);
	if (store_query_nodes_sent(h->st, s->start_ms, s->end_ms, known_node, &sent) ||
	    (!s->nodes[0] && store_query_gswarm_nodes(h->st, known_node, &want)) ||
	    strbuf_error(&sent.names) || strbuf_error(&want.names))
		goto out_release;
	list = want.names.buf;
	for (char *n = list ? strtok_r(list, ",", &save) : NULL; n;
	     n = strtok_r(NULL, ",", &save)) {
		char key[300];

		snprintf(key, sizeof(key), ",%s,", n);
		if (strstr(strbuf_str(&sent.names), key))
			continue;
		/* said once (an all-node session lists a node once per agent) */
		strbuf_addstr(&sent.names, key + 1);
		if (len < size)
			len += (size_t)snprintf(out + len, size - len, "%s%s", len ? ", " : "", n);
	}
out_release:
	strbuf_release(&sent.names);
	strbuf_release(&want.names);
}

/*
 * Whether the view's caller may see session s: everyone's data, or a
 * session they started.
 */
bool head_session_visible(const struct head *h, const struct session_record *s)
{
	return head_sees_all(h) || (s->owner[0] && strcmp(s->owner, h->who.user) == 0);
}

/* The user a view's caller starts and stops sessions as: a person's name, or NULL (a token). */
static const char *session_owner(const struct head *h)
{
	return h->who.user[0] ? h->who.user : NULL;
}

/*
 * POST /profiling/start {"name"?, "interval_ms"?, "nodes"?: [..] or "a,b", "cuda"?: bool}.
 * As gswarm: a name already active is 200 {"success": false, "message":
 * "Profiling is already active.", "output_file": ""}.  Unlike gswarm,
 * sessions of other names run at the same time.
 */
void head_session_start(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct session_record s;
	char msg[300], file[HEAD_SESSION_FILE_MAX], unknown[512];
	struct jsonw w;
	int ret;

	if (api_parse_session_start(req->body, req->body_len, time_now_ms(), &s, msg,
				    sizeof(msg))) {
		json_answer(res, 400, false, msg);
		return;
	}
	/* a person's session is theirs: they see it, stop it, and its export lists their jobs */
	if (session_owner(h))
		snprintf(s.owner, sizeof(s.owner), "%s", session_owner(h));
	ret = store_session_start(h->st, &s);
	if (ret && ret != -EEXIST) {
		json_answer(res, 503, false, "the store cannot be written");
		return;
	}
	head_session_file(s.name, ".json", file, sizeof(file));
	strbuf_reset(&res->body);
	jsonw_init(&w, &res->body, false);
	jsonw_obj_begin(&w);
	jsonw_kv_bool(&w, "success", ret == 0);
	jsonw_kv_str(&w, "message", ret ? "Profiling is already active." : "Profiling started.");
	jsonw_kv_str(&w, "output_file", ret ? "" : file);
	jsonw_kv_str(&w, "name", s.name);
	if (!ret) {
		jsonw_kv_int(&w, "start_ms", s.start_ms);
		jsonw_kv_int_opt(&w, "interval_ms", s.interval_ms > 0, s.interval_ms);
		jsonw_kv_bool(&w, "cuda", s.cuda);
		/* a node no agent of this head is on sends nothing: said now, not at the export */
		unknown_nodes(h, &s, unknown, sizeof(unknown));
		if (unknown[0]) {
			snprintf(msg, sizeof(msg),
				 "no agent of node%s %.200s streams to this head: %s will send "
				 "nothing",
				 strchr(unknown, ',') ? "s" : "", unknown,
				 strchr(unknown, ',') ? "they" : "it");
			jsonw_kv_str(&w, "warning", msg);
			log_warn(0, "head: session '%s': %s", s.name, msg);
		}
	} else {
		snprintf(msg, sizeof(msg), "session '%s' is already active", s.name);
		jsonw_kv_str(&w, "error", msg);
	}
	jsonw_obj_end(&w);
	strbuf_addch(&res->body, '\n');
	if (!ret)
		log_info("head: session '%s' started", s.name);
}

struct stopping {
	const char *name;  /* NULL: every active session */
	const char *owner; /* NULL: anyone's */
	struct session_record *v;
	size_t n, cap;
	bool others; /* name is active, another user's */
};

static int stopping_one(const struct session_record *s, void *arg)
{
	struct stopping *c = arg;

	if (c->name && strcmp(s->name, c->name) != 0)
		return 0;
	if (c->owner && strcmp(s->owner, c->owner) != 0) {
		c->others = true;
		return 0;
	}
	if (ARRAY_GROW(c->v, c->n, c->cap, 4))
		return -ENOMEM;
	c->v[c->n++] = *s;
	return 0;
}

/*
 * Stops the active session called name (NULL: every one) at end_ms; the
 * sessions stopped, as they now are, into *out (the caller frees it).
 */
static int sessions_stop(struct store *st, const char *name, const char *owner, int64_t end_ms,
			 struct session_record **out, size_t *n, bool *others)
{
	struct stopping c = {name, owner, NULL, 0, 0, false};
	int stopped = 0, ret;

	*out = NULL;
	*n = 0;
	/* the writer is ours alone (under wlock): nothing starts or stops between the two */
	ret = store_for_each_session(st, true, stopping_one, &c);
	if (!ret && c.n)
		ret = store_session_stop(st, name, owner, end_ms, &stopped);
	*others = c.others;
	if (ret) {
		free(c.v);
		return ret;
	}
	for (size_t i = 0; i < c.n; i++)
		c.v[i].end_ms = end_ms;
	*out = c.v;
	*n = c.n;
	return 0;
}

/*
 * POST /profiling/stop {"name"?}: that session, or every active one.  As
 * gswarm, nothing to stop is 200 {"success": false, "message": "Profiling
 * is not active."}; unlike gswarm, a name stops that session alone (gswarm
 * ignores the body and stops its one run).  At the stop each session's
 * files are written (head_session_files, with --session-dir).
 */
void head_session_stop(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	char name[SESSION_NAME_MAX], msg[600], silent[512];
	struct session_record *stopped = NULL;
	size_t n = 0;
	bool has_name, others = false;
	int ret;

	if (api_parse_session_stop(req->body, req->body_len, name, sizeof(name), &has_name, msg,
				   sizeof(msg))) {
		json_answer(res, 400, false, msg);
		return;
	}
	/* a user stops their own sessions; an admin anyone's */
	ret =
	    sessions_stop(h->st, has_name ? name : NULL, head_sees_all(h) ? NULL : session_owner(h),
			  time_now_ms(), &stopped, &n, &others);
	if (ret) {
		json_answer(res, 503, false, "the store cannot be written");
	} else if (n == 0 && has_name && others) {
		snprintf(msg, sizeof(msg), "session '%.200s' is another user's", name);
		json_answer(res, 403, false, msg);
	} else if (n == 0) {
		if (has_name)
			snprintf(msg, sizeof(msg),
				 "Profiling is not active. (no active session '%.200s')", name);
		json_answer(res, 200, false, has_name ? msg : "Profiling is not active.");
	} else {
		struct strbuf files;
		struct jsonw w;
		char file[HEAD_SESSION_FILE_MAX];

		strbuf_init(&files, 0);
		for (size_t i = 0; i < n; i++) {
			head_session_file(stopped[i].name, ".json", file, sizeof(file));
			if (h->opt->session_dir)
				strbuf_addf(&files, "%s%s/%s", i ? ", " : "", h->opt->session_dir,
					    file);
			else
				strbuf_addf(&files, "%s%s", i ? ", " : "", stopped[i].name);
		}
		strbuf_reset(&res->body);
		jsonw_init(&w, &res->body, false);
		jsonw_obj_begin(&w);
		jsonw_kv_bool(&w, "success", true);
		/* gswarm says where its file went; without --session-dir there is none */
		snprintf(msg, sizeof(msg),
			 h->opt->session_dir
			     ? "Profiling stopped. Data saved to %.500s"
			     : "Profiling stopped. The data stays in the head's store (jobscope "
			       "export --session %.400s --format gswarm)",
			 files.buf ? files.buf : "");
		jsonw_kv_str(&w, "message", msg);
		jsonw_kv_null(&w, "output_file");
		jsonw_kv_int(&w, "stopped", (int64_t)n);
		/* a node that sent nothing is said at the stop, not found in the file */
		strbuf_reset(&files);
		for (size_t i = 0; i < n; i++) {
			silent_nodes(h, &stopped[i], silent, sizeof(silent));
			if (!silent[0])
				continue;
			snprintf(msg, sizeof(msg), "session '%.200s': node%s %.300s sent nothing",
				 stopped[i].name, strchr(silent, ',') ? "s" : "", silent);
			log_warn(0, "head: %s", msg);
			strbuf_addf(&files, "%s%s", files.len ? "; " : "", msg);
		}
		if (files.len)
			jsonw_kv_str(&w, "warning", strbuf_str(&files));
		jsonw_obj_end(&w);
		strbuf_addch(&res->body, '\n');
		strbuf_release(&files);
		for (size_t i = 0; i < n; i++)
			log_info("head: session '%s' stopped", stopped[i].name);
		/* the dispatcher writes their files once the writer is free (head_session_files) */
		h->stopped = stopped;
		h->nstopped = n;
		stopped = NULL;
	}
	free(stopped);
}

void head_session_json(struct jsonw *w, const struct session_record *s, int64_t now_ms)
{
	char t[40], file[HEAD_SESSION_FILE_MAX];

	jsonw_obj_begin(w);
	jsonw_kv_str(w, "name", s->name);
	/* gswarm's session lister reads "active" and "frames" */
	jsonw_kv_bool(w, "active", s->end_ms == 0);
	jsonw_kv_bool(w, "is_active", s->end_ms == 0);
	jsonw_kv_int(w, "frames", session_gswarm_frames(s, now_ms));
	format_rfc3339_ms(s->start_ms, t, sizeof(t));
	jsonw_kv_str(w, "start_time", t);
	jsonw_kv_int(w, "start_ms", s->start_ms);
	jsonw_kv_int_opt(w, "end_ms", s->end_ms > 0, s->end_ms);
	jsonw_kv_int_opt(w, "interval_ms", s->interval_ms > 0, s->interval_ms);
	jsonw_kv_bool(w, "cuda", s->cuda);
	jsonw_kv_str_opt(w, "owner", s->owner[0] ? s->owner : NULL);
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
	head_session_file(s->name, ".json", file, sizeof(file));
	jsonw_kv_str(w, "output_file", file);
	jsonw_obj_end(w);
}

struct sessions_ctx {
	const struct head *h;
	struct jsonw *w;
	int64_t now_ms;
	int total, active;
};

static int session_each(const struct session_record *s, void *arg)
{
	struct sessions_ctx *c = arg;

	if (!head_session_visible(c->h, s))
		return 0;
	head_session_json(c->w, s, c->now_ms);
	c->total++;
	c->active += s->end_ms == 0;
	return 0;
}

/* GET /profiling/sessions: every session, by start */
void head_sessions(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct sessions_ctx c = {h, NULL, time_now_ms(), 0, 0};
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
void head_session_export(void *arg, const char *want, const struct http_request *req,
			 struct http_response *res)
{
	static const char *const formats[][2] = {
	    {"json", "application/json"},
	    {"csv", "text/csv; charset=utf-8"},
	    {"text", "text/plain; charset=utf-8"},
	    {"gswarm", "application/json"},
	};
	struct head *h = arg;
	const char *format = http_query_arg(req, "format");
	char msg[300];
	struct session_record s;
	size_t f = 0;
	int ret;

	while (format && f < sizeof(formats) / sizeof(formats[0]) && strcmp(format, formats[f][0]))
		f++;
	if (f == sizeof(formats) / sizeof(formats[0])) {
		http_error(res, 400, "format: json (default), csv, text or gswarm");
		return;
	}
	ret = store_session_get(h->st, want, &s);
	if (!ret && !head_session_visible(h, &s))
		ret = -ENOENT;
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

/*
 * s's gswarm file at path, written as it is rendered (a session of any
 * length in the same memory), whole or not at all: a temporary file
 * renamed over it once synced.
 */
static int write_gswarm_file(struct store *st, const struct session_record *s, const char *path,
			     struct strbuf *out)
{
	struct outfile f;
	int ret = outfile_open(&f, path);

	if (ret)
		return ret;
	strbuf_reset(out);
	ret = session_export_gswarm_progress(st, s, out, f.fd, NULL);
	if (!ret)
		ret = session_export_spill(out, f.fd, 0);
	return outfile_close(&f, ret, true);
}

/* The stop's answer when a file could not be written: said, not "Data saved". */
static void files_failed(struct http_response *res, size_t nstopped, const char *failed)
{
	char msg[1200];
	struct jsonw w;

	snprintf(msg, sizeof(msg),
		 "Profiling stopped, but its data could not be saved to %.900s. The session "
		 "stays in the head's store: jobscope export --session NAME --format gswarm "
		 "writes the file",
		 failed);
	strbuf_reset(&res->body);
	jsonw_init(&w, &res->body, false);
	jsonw_obj_begin(&w);
	jsonw_kv_bool(&w, "success", true);
	jsonw_kv_str(&w, "message", msg);
	jsonw_kv_null(&w, "output_file");
	jsonw_kv_int(&w, "stopped", (int64_t)nstopped);
	jsonw_obj_end(&w);
	strbuf_addch(&res->body, '\n');
}

/*
 * gswarm writes "<name>.json" and draws "<name>.png" when its run stops.
 * Here each file is written from a read connection; a failure is logged,
 * said in the stop's answer (res) and loses nothing (the session stays in
 * the store: `jobscope export --session NAME --format gswarm` writes the
 * same file later).
 */
void head_session_files(struct head *h, const struct session_record *s, size_t n,
			struct http_response *res)
{
	char file[HEAD_SESSION_FILE_MAX], path[PATH_MAX];
	struct strbuf out, failed;
	struct store *st;

	if (!h->opt->session_dir)
		return;
	st = head_reader_get(h);
	if (!st) {
		log_warn(0, "head: the session files cannot be written: no store connection");
		files_failed(res, n, "its files (the head cannot read its store now)");
		return;
	}
	strbuf_init(&out, 0);
	strbuf_init(&failed, 0);
	for (size_t i = 0; i < n; i++) {
		int ret;

		head_session_file(s[i].name, ".json", file, sizeof(file));
		snprintf(path, sizeof(path), "%s/%s", h->opt->session_dir, file);
		ret = write_gswarm_file(st, &s[i], path, &out);
		if (ret) {
			log_warn(ret, "head: session '%s': cannot write %s", s[i].name, path);
			strbuf_addf(&failed, "%s%s (%s)", failed.len ? ", " : "", path,
				    strerror(-ret));
		} else {
			log_info("head: session '%s' written to %s", s[i].name, path);
		}
		head_session_file(s[i].name, ".png", file, sizeof(file));
		snprintf(path, sizeof(path), "%s/%s", h->opt->session_dir, file);
		if (session_export_plot(st, &s[i], path))
			log_warn(0, "head: session '%s': cannot draw %s", s[i].name, path);
	}
	if (failed.len)
		files_failed(res, n, strbuf_str(&failed));
	strbuf_release(&failed);
	strbuf_release(&out);
	head_reader_put(h, st);
}
