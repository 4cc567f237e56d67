/*
 * web.h - the dashboard: HTML pages under /ui/ that draw the server's own
 * JSON API in the browser, their CSS and JavaScript (compiled into the
 * binary: nothing is fetched from anywhere else), and /ui/events, a
 * server-sent event stream of API answers (http/http.h's http_watch).
 *
 * The head registers web_head_* in its route table, the agent web_agent_*
 * (read-only pages: the node now and a job).  Pages and assets hold no data
 * (public routes); the data comes from the API with the API's own access
 * rules, the browser sending the token the user typed.  Every page answer
 * carries a Content-Security-Policy (default-src 'self').  docs/web.md.
 *
 * Handlers: the route table's (http/http.h), arg unused.  Thread-safe.
 */
#ifndef JOBSCOPE_WEB_H
#define JOBSCOPE_WEB_H

#include <stdbool.h>
#include <stddef.h>

#include "http/http.h"

#define WEB_PREFIX  "/ui/"
#define WEB_EVENTS  "/ui/events"
#define WEB_KEY_MAX 200 /* a job key in /ui/events?job= */

/* GET /ui/ (cluster), /ui/job?key=, /ui/jobs, /ui/node?name=, /ui/history, /ui/sessions,
 * /ui/static/... */
void web_head_page(void *arg, const struct http_request *req, struct http_response *res);
/* GET /ui/ (this node), /ui/job?key=, /ui/static/... */
void web_agent_page(void *arg, const struct http_request *req, struct http_response *res);
/* GET /ui/events?topics=a,b[&job=KEY] */
void web_head_events(void *arg, const struct http_request *req, struct http_response *res);
void web_agent_events(void *arg, const struct http_request *req, struct http_response *res);

/*
 * The API paths a topic list asks: topics "nodes,gpus" -> paths and event
 * names, into out (n at most HTTP_WATCH_PATHS).  A topic the server does
 * not know, a repeated one, "job" or "report" without a key or a key with other bytes
 * than [A-Za-z0-9:._@+-] (at most 200): -EINVAL.  A parser of outside
 * input without I/O (unit-tested, fuzzed).
 */
struct web_topics {
	size_t n;
	char path[HTTP_WATCH_PATHS][HTTP_WATCH_PATH_MAX];
	const char *event[HTTP_WATCH_PATHS];
};
int web_topics_parse(bool head, const char *topics, const char *job_key, struct web_topics *out);

/* The compiled-in assets (web_assets.c, made by embed_assets.py). */
struct web_asset {
	const char *name; /* "app.js" */
	const char *content_type;
	const char *data;
	size_t len;
};
extern const struct web_asset web_assets[]; /* ends with a NULL name */

#endif
