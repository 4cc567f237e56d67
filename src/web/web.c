/*
 * web.c - the dashboard's routes: a page is one HTML shell (the
 * navigation, an empty main, app.js) that app.js fills from the API; the
 * assets come from web_assets.c; /ui/events turns a topic list into API
 * paths for http_watch.
 */
#include "web/web.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/*
 * The pages' policy: only this server, no inline script.  The job page
 * shows the report (report_html.c: one inline <style>, no script) in a
 * frame made from a blob, which inherits this policy: it alone allows
 * inline styles and blob frames.
 */
#define WEB_CSP "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'"
#define WEB_CSP_JOB                                                                                \
	"default-src 'self'; style-src 'self' 'unsafe-inline'; frame-src blob:; base-uri 'none'; " \
	"form-action 'self'; frame-ancestors 'self'"

struct web_page {
	const char *path; /* after /ui/ */
	const char *name; /* data-page */
	const char *title;
	bool head, agent; /* served by */
};

static const struct web_page web_pages[] = {
    {"", "cluster", "Cluster", true, false},
    {"", "node", "This node", false, true},
    {"job", "job", "Job", true, true},
    {"jobs", "jobs", "Jobs", true, false},
    {"node", "host", "Node", true, false},
    {"history", "history", "History", true, false},
    {"sessions", "sessions", "Sessions", true, false},
};

static void secure_headers(struct http_response *res, const char *csp)
{
	http_add_header(res, "Content-Security-Policy", csp);
	http_add_header(res, "X-Content-Type-Options", "nosniff");
	http_add_header(res, "Referrer-Policy", "no-referrer");
}

static void nav_link(struct strbuf *out, const char *href, const char *label, bool current)
{
	strbuf_addf(out, "<li><a href=\"%s\"%s>%s</a></li>", href,
		    current ? " aria-current=\"page\"" : "", label);
}

static void render_page(const struct web_page *p, bool head, struct http_response *res)
{
	struct strbuf *out = &res->body;

	res->content_type = "text/html; charset=utf-8";
	secure_headers(res, strcmp(p->name, "job") == 0 ? WEB_CSP_JOB : WEB_CSP);
	strbuf_addf(
	    out,
	    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	    "<title>%s · jobscope</title>\n"
	    "<link rel=\"icon\" href=\"/ui/static/icon.svg\">\n"
	    "<link rel=\"stylesheet\" href=\"/ui/static/app.css\">\n"
	    "<script src=\"/ui/static/app.js\" defer></script>\n</head>\n"
	    "<body data-page=\"%s\" data-server=\"%s\">\n"
	    "<a class=\"skip\" href=\"#main\">Skip to content</a>\n"
	    "<header>\n<span class=\"brand\">jobscope</span>\n<nav aria-label=\"Pages\"><ul>",
	    p->title, p->name, head ? "head" : "agent");
	if (head) {
		nav_link(out, "/ui/", "Cluster", strcmp(p->name, "cluster") == 0);
		/* app.js calls it "My jobs" when the head shows the caller their own alone */
		strbuf_addf(out, "<li><a id=\"nav-jobs\" href=\"/ui/jobs\"%s>Jobs</a></li>",
			    strcmp(p->name, "jobs") == 0 ? " aria-current=\"page\"" : "");
		nav_link(out, "/ui/history", "History", strcmp(p->name, "history") == 0);
		nav_link(out, "/ui/sessions", "Sessions", strcmp(p->name, "sessions") == 0);
	} else {
		nav_link(out, "/ui/", "This node", strcmp(p->name, "node") == 0);
	}
	strbuf_addstr(out, "</ul></nav>\n");
	if (head)
		strbuf_addstr(
		    out, "<form id=\"token-form\" class=\"token\">"
			 "<span id=\"whoami\" class=\"whoami\"></span>"
			 "<label for=\"token\">Token</label>"
			 "<input id=\"token\" type=\"password\" autocomplete=\"off\" "
			 "placeholder=\"read or admin token\">"
			 "<button type=\"submit\">Use</button>"
			 "<button type=\"button\" id=\"token-clear\">Forget</button></form>\n");
	strbuf_addf(out,
		    "</header>\n<main id=\"main\" tabindex=\"-1\">\n<h1 id=\"title\">%s</h1>\n"
		    "<p id=\"status\" role=\"status\" aria-live=\"polite\"></p>\n"
		    "<div id=\"content\"></div>\n</main>\n</body>\n</html>\n",
		    p->title);
}

static void not_found(struct http_response *res)
{
	res->status = 404;
	res->content_type = "text/plain; charset=utf-8";
	secure_headers(res, WEB_CSP);
	strbuf_addstr(&res->body, "no such page\n");
}

static void serve_page(bool head, const struct http_request *req, struct http_response *res)
{
	const char *rest = req->path + strlen(WEB_PREFIX);

	if (strncmp(rest, "static/", 7) == 0) {
		for (const struct web_asset *a = web_assets; a->name; a++) {
			if (strcmp(a->name, rest + 7) == 0) {
				res->content_type = a->content_type;
				http_add_header(res, "X-Content-Type-Options", "nosniff");
				strbuf_add(&res->body, a->data, a->len);
				return;
			}
		}
		not_found(res);
		return;
	}
	for (size_t i = 0; i < sizeof(web_pages) / sizeof(web_pages[0]); i++) {
		const struct web_page *p = &web_pages[i];

		if ((head ? p->head : p->agent) && strcmp(p->path, rest) == 0) {
			render_page(p, head, res);
			return;
		}
	}
	not_found(res);
}

void web_head_page(void *arg, const struct http_request *req, struct http_response *res)
{
	(void)arg;
	serve_page(true, req, res);
}

void web_agent_page(void *arg, const struct http_request *req, struct http_response *res)
{
	(void)arg;
	serve_page(false, req, res);
}

/* ---- events ---- */

struct web_topic {
	const char *name;
	const char *head_path, *agent_path; /* NULL: not on that server */
};

static const struct web_topic web_topic_table[] = {
    {"nodes", "/api/v1/nodes", NULL},
    {"node", NULL, "/api/v1/node"},
    {"gpus", "/api/v1/gpus", "/api/v1/gpus"},
    {"jobs", "/api/v1/jobs?state=running", "/api/v1/jobs?state=running"},
    {"sessions", "/profiling/sessions", NULL},
    {"job", "/api/v1/jobs/", "/api/v1/jobs/"}, /* + the key */
    /* the job's report as JSON (built from the store on every pass: the head alone) */
    {"report", "/api/v1/report?format=json&job=", NULL}, /* + the key */
};

static bool key_ok(const char *key)
{
	size_t n = key ? strlen(key) : 0;

	if (n == 0 || n > WEB_KEY_MAX)
		return false;
	return strspn(key,
		      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789:._@+-") == n;
}

int web_topics_parse(bool head, const char *topics, const char *job_key, struct web_topics *out)
{
	const char *p = topics;

	out->n = 0;
	if (!topics || !*topics)
		return -EINVAL;
	while (*p) {
		size_t len = strcspn(p, ","), i, k;
		const struct web_topic *t = NULL;
		const char *path;

		for (i = 0; i < sizeof(web_topic_table) / sizeof(web_topic_table[0]); i++) {
			if (strlen(web_topic_table[i].name) == len &&
			    strncmp(web_topic_table[i].name, p, len) == 0)
				t = &web_topic_table[i];
		}
		path = t ? (head ? t->head_path : t->agent_path) : NULL;
		if (!path || out->n == HTTP_WATCH_PATHS)
			goto bad;
		for (k = 0; k < out->n; k++)
			if (strcmp(out->event[k], t->name) == 0)
				goto bad;
		if (strcmp(t->name, "job") == 0 || strcmp(t->name, "report") == 0) {
			if (!key_ok(job_key))
				goto bad;
			snprintf(out->path[out->n], HTTP_WATCH_PATH_MAX, "%s%s", path, job_key);
		} else {
			snprintf(out->path[out->n], HTTP_WATCH_PATH_MAX, "%s", path);
		}
		out->event[out->n++] = t->name;
		p += len;
		if (*p == ',' && *++p == '\0')
			goto bad; /* "a," */
	}
	return 0;
bad:
	out->n = 0;
	return -EINVAL;
}

static void serve_events(bool head, const struct http_request *req, struct http_response *res)
{
	struct web_topics t;
	const char *paths[HTTP_WATCH_PATHS];

	if (web_topics_parse(head, http_query_arg(req, "topics"), http_query_arg(req, "job"), &t)) {
		http_error(res, 400,
			   head ? "topics: a list of nodes, gpus, jobs, sessions, job, "
				  "report (with job=KEY)"
				: "topics: a list of node, gpus, jobs, job (with job=KEY)");
		return;
	}
	for (size_t i = 0; i < t.n; i++)
		paths[i] = t.path[i];
	if (http_watch(req, paths, t.event, t.n))
		http_error(res, 500, "cannot open the event stream");
}

void web_head_events(void *arg, const struct http_request *req, struct http_response *res)
{
	(void)arg;
	serve_events(true, req, res);
}

void web_agent_events(void *arg, const struct http_request *req, struct http_response *res)
{
	(void)arg;
	serve_events(false, req, res);
}
