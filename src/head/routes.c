/*
 * routes.c - the head's endpoints as one table, each with the access it
 * needs, and the dispatcher that checks the access (auth.c) before it
 * calls the route's handler.
 *
 * The dispatcher also gives each handler its store connection (head.h).
 *
 * Kept from before the table, on purpose (clients and tests rely on them):
 *   - GET on a POST-only endpoint answers 405 in that endpoint's own shape,
 *     without asking for a token (the rows with public access below);
 *   - a POST to any other path is 404, without asking for a token;
 *   - a GET of an unknown path asks for the read token first, then 404, so
 *     that a reader without it learns nothing of which paths exist.
 */
#include "head/head.h"
#include "web/web.h"
#include "store/profiling.h"

#include <stdlib.h>
#include <string.h>

/*
 * /api/v1/sessions/NAME/export is the session's export (sessions.c), any
 * other /api/v1/sessions/NAME the session itself (api.c).  The server gives
 * the path percent-decoded, and a name may hold '/': the path's last
 * "/export" is the export's (a session called "x/export" is listed by
 * /profiling/sessions; its path is the export of "x").
 */
static void head_session_paths(void *arg, const struct http_request *req, struct http_response *res)
{
	const char *name = req->path + strlen("/api/v1/sessions/");
	size_t len = strlen(name), suffix = strlen("/export");
	char want[SESSION_NAME_MAX];
	bool export = len > suffix && strcmp(name + len - suffix, "/export") == 0;

	if (export)
		len -= suffix;
	if (len == 0 || len >= sizeof(want)) {
		http_error(res, 404, "no such session");
		return;
	}
	memcpy(want, name, len);
	want[len] = '\0';
	if (export)
		head_session_export(arg, want, req, res);
	else
		head_api_session(arg, want, req, res);
}

static const struct http_route head_routes[] = {
    /* agents */
    {"POST", "/api/v1/ingest", false, HTTP_ACCESS_INGEST, head_ingest},
    {"GET", "/api/v1/ingest", false, HTTP_ACCESS_PUBLIC, head_ingest_not_post},
    /* profiling sessions (gswarm's calls) */
    {"POST", "/profiling/start", false, HTTP_ACCESS_OWNER, head_session_start},
    {"GET", "/profiling/start", false, HTTP_ACCESS_PUBLIC, head_session_not_post},
    {"POST", "/profiling/stop", false, HTTP_ACCESS_OWNER, head_session_stop},
    {"GET", "/profiling/stop", false, HTTP_ACCESS_PUBLIC, head_session_not_post},
    {"GET", "/profiling/sessions", false, HTTP_ACCESS_USER, head_sessions},
    /* per-request timings (later gswarm: /profiling/record, earlier /record_time) */
    {"POST", "/profiling/record", false, HTTP_ACCESS_ADMIN, head_request_record},
    {"GET", "/profiling/record", false, HTTP_ACCESS_PUBLIC, head_session_not_post},
    {"POST", "/record_time", false, HTTP_ACCESS_ADMIN, head_request_record},
    {"GET", "/record_time", false, HTTP_ACCESS_PUBLIC, head_session_not_post},
    /* the head and its agents */
    {"GET", "/", false, HTTP_ACCESS_USER, head_root},
    {"GET", "/status", false, HTTP_ACCESS_USER, head_status},
    {"GET", "/clients", false, HTTP_ACCESS_USER, head_clients},
    /* the read API: a user's answers hold their own jobs alone (api.c) */
    {"GET", "/api/v1/whoami", false, HTTP_ACCESS_PUBLIC, head_api_whoami},
    {"GET", "/metrics", false, HTTP_ACCESS_READER, head_metrics},
    {"GET", "/metrics/latest", false, HTTP_ACCESS_USER, head_metrics_latest},
    {"GET", "/api/v1/report", false, HTTP_ACCESS_USER, head_api_report},
    {"GET", "/api/v1/nodes", false, HTTP_ACCESS_USER, head_api_nodes},
    {"GET", "/api/v1/gpus", false, HTTP_ACCESS_USER, head_api_gpus},
    {"GET", "/api/v1/jobs", false, HTTP_ACCESS_USER, head_api_jobs},
    {"GET", "/api/v1/jobs/", true, HTTP_ACCESS_USER, head_api_job},
    {"GET", "/api/v1/sessions/", true, HTTP_ACCESS_USER, head_session_paths}, /* and .../export */
    {"GET", "/api/v1/series", false, HTTP_ACCESS_USER, head_api_series},
    /* the dashboard (web/): pages hold no data, the events are reads */
    {"GET", WEB_EVENTS, false, HTTP_ACCESS_USER, web_head_events},
    {"GET", WEB_PREFIX, false, HTTP_ACCESS_PUBLIC, web_head_page},
    {"GET", WEB_PREFIX, true, HTTP_ACCESS_PUBLIC, web_head_page},
    {NULL, NULL, false, HTTP_ACCESS_PUBLIC, NULL},
};

/*
 * A handler's view of the head: its counters as of now, and a store
 * connection for this request alone (see head.h).  Ingest gets the head
 * itself: it only queues for the committer.
 */
void head_http(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg, view;
	const struct http_route *r;
	struct caller who;
	int status;

	r = http_route_find(head_routes, req, &status);
	if (!r) {
		if (strcmp(req->method, "POST") == 0 ||
		    (access_identify(&h->acc, req, &who, res) &&
		     access_permits(&h->acc, &who, HTTP_ACCESS_USER, res)))
			http_error(res, 404, "no such endpoint");
		return;
	}
	/* a public route's caller is anonymous (/api/v1/whoami finds its own) */
	memset(&who, 0, sizeof(who));
	who.via = "none";
	who.uid = -1;
	if (r->access != HTTP_ACCESS_PUBLIC && (!access_identify(&h->acc, req, &who, res) ||
						!access_permits(&h->acc, &who, r->access, res)))
		return;
	if (r->access == HTTP_ACCESS_INGEST) {
		r->fn(h, req, res);
		return;
	}
	view = *h;
	view.who = who;
	head_ingest_counters(h, &view.batches, &view.refused, &view.groups);
	if (r->access == HTTP_ACCESS_ADMIN || r->access == HTTP_ACCESS_OWNER) {
		view.stopped = NULL;
		view.nstopped = 0;
		pthread_mutex_lock(&h->wlock);
		view.st = h->writer;
		r->fn(&view, req, res);
		pthread_mutex_unlock(&h->wlock);
		/* a stop's files, written from a read connection: ingest goes on meanwhile */
		if (view.nstopped)
			head_session_files(h, view.stopped, view.nstopped, res);
		free(view.stopped);
		return;
	}
	view.st = head_reader_get(h);
	if (!view.st) {
		http_error(res, 503, "the head cannot read its store now");
		return;
	}
	r->fn(&view, req, res);
	head_reader_put(h, view.st);
}
