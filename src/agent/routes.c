/*
 * routes.c - the agent's endpoints: a route table (http/http.h), every route
 * public, served from the view the last tick published; a job that is not
 * live is looked up in the store, through the HTTP thread's own read-only
 * connection.  /api/v1/jobs is a page of the store's jobs (the head's
 * query, net/api.h), each running one with its live figures from the view.
 *
 * Before the first view: 503 "no sample yet" on every path.  A path no
 * route has: 404 "no such endpoint".  /api/v1/jobs/{key} for a key that is
 * neither live nor stored: 404 "no such job" (400 for a malformed key).
 * /api/v1/jobs with a bad parameter: 400.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "common/jsonw.h"
#include "prom/expo.h"
#include "net/api.h"
#include "store/queries.h"
#include "web/web.h"
#include "store/reader.h"

/* What a route's handler gets: the agent, and the view it holds the lock on. */
struct agent_request {
	struct agent *a;
	const struct agent_view *v;
	/* the jobs/{key} route: not live, to be looked up in the store after the unlock */
	const char *store_key;
	/* the jobs route: a page of the store, read after the unlock */
	bool jobs_page;
};

static void route_metrics(void *arg, const struct http_request *req, struct http_response *res)
{
	const struct agent_view *v = ((struct agent_request *)arg)->v;

	(void)req;
	res->content_type = PROM_CONTENT_TYPE;
	strbuf_add(&res->body, v->metrics.buf, v->metrics.len);
}

static void route_node(void *arg, const struct http_request *req, struct http_response *res)
{
	const struct agent_view *v = ((struct agent_request *)arg)->v;

	(void)req;
	strbuf_add(&res->body, v->node.buf, v->node.len);
}

static void route_gpus(void *arg, const struct http_request *req, struct http_response *res)
{
	const struct agent_view *v = ((struct agent_request *)arg)->v;

	(void)req;
	strbuf_add(&res->body, v->gpus.buf, v->gpus.len);
}

static void route_jobs(void *arg, const struct http_request *req, struct http_response *res)
{
	(void)req, (void)res;
	((struct agent_request *)arg)->jobs_page = true;
}

static bool key_matches(const struct agent_view_job *j, const char *key)
{
	return jobs_key_matches(key, j->key, j->scheduler, j->job_id);
}

#define JOBS_PREFIX "/api/v1/jobs/"

/*
 * One job's answer: the head's shape ({"job": its fields, "summary",
 * "processes"}, which the dashboard and `jobscope top` read), then the
 * rest of the object as the list has it, each field at the top as this
 * endpoint answered before the head's shape was taken (for the readers
 * of that one).  obj is the job's object, its first fields_len bytes its
 * own fields; more: what the object lacks of the head's shape.
 */
static void job_answer(struct strbuf *o, const char *obj, size_t len, size_t fields_len,
		       const char *more)
{
	strbuf_addstr(o, "{\"job\":");
	strbuf_add(o, obj, fields_len);
	strbuf_addstr(o, "},");
	strbuf_addstr(o, more);
	strbuf_add(o, obj + 1, len - 1);
	strbuf_addch(o, '\n');
}

/* A live job from the view; else the key is left for the store. */
static void route_job(void *arg, const struct http_request *req, struct http_response *res)
{
	struct agent_request *ar = arg;
	const struct agent_view *v = ar->v;
	const char *key = req->path + strlen(JOBS_PREFIX);

	for (size_t k = 0; k < v->njobs; k++) {
		const struct agent_view_job *vj = &v->job[k];

		if (!key_matches(vj, key))
			continue;
		/* running: no summary yet; its processes are in the object */
		job_answer(&res->body, v->job_json.buf + vj->json_off, vj->json_len, vj->fields_len,
			   "\"summary\":null,");
		return;
	}
	ar->store_key = key;
}

static void route_index(void *arg, const struct http_request *req, struct http_response *res)
{
	(void)arg, (void)req;
	res->content_type = "text/plain; charset=utf-8";
	strbuf_addstr(&res->body, "jobscope agent " JOBSCOPE_VERSION
				  "\n/metrics /api/v1/node /api/v1/gpus /api/v1/jobs "
				  "/api/v1/jobs/{key}\n");
}

/*
 * /metrics is open, as every exporter's is; what shows every user's
 * command lines (the API, its event streams) is open on loopback or with
 * --insecure, else it needs --read-token-file's token (http/access.h).
 */
static const struct http_route agent_routes[] = {
    {"GET", "/metrics", false, HTTP_ACCESS_PUBLIC, route_metrics},
    {"GET", "/api/v1/node", false, HTTP_ACCESS_READER, route_node},
    {"GET", "/api/v1/gpus", false, HTTP_ACCESS_READER, route_gpus},
    {"GET", "/api/v1/jobs", false, HTTP_ACCESS_READER, route_jobs},
    {"GET", JOBS_PREFIX, true, HTTP_ACCESS_READER, route_job},
    {"GET", "/", false, HTTP_ACCESS_PUBLIC, route_index},
    /* the dashboard (web/), read-only: its pages hold no data */
    {"GET", WEB_EVENTS, false, HTTP_ACCESS_READER, web_agent_events},
    {"GET", WEB_PREFIX, false, HTTP_ACCESS_PUBLIC, web_agent_page},
    {"GET", WEB_PREFIX, true, HTTP_ACCESS_PUBLIC, web_agent_page},
    {NULL, NULL, false, HTTP_ACCESS_PUBLIC, NULL},
};

/* The HTTP thread's own read-only connection to the store, opened at first use. */
static int read_store(struct agent *a, struct http_response *res)
{
	if (!a->read_st && store_open(store_path(a->st), STORE_READONLY, &a->read_st)) {
		http_error(res, 503, "the store cannot be read");
		return -EIO;
	}
	return 0;
}

/* The rows of a page, each a stored job's object, until the view says which run. */
struct page_job {
	int64_t store_id;
	bool running;
	size_t json_off, json_len; /* in page.json */
	size_t fields_len;	   /* its start before the summary: the job's own fields */
};

struct page {
	struct page_job *job;
	size_t n, alloc;
	struct strbuf json;
	const char *summary_json; /* one job: its stored report, written in (NULL: none) */
	size_t summary_len;
};

static int page_row(const struct store_row *r, void *arg)
{
	struct page *pg = arg;
	struct page_job *pj;
	struct jsonw w;

	if (pg->n == pg->alloc) {
		size_t alloc = pg->alloc ? 2 * pg->alloc : 64;
		struct page_job *job = realloc(pg->job, alloc * sizeof(*job));

		if (!job)
			return -ENOMEM;
		pg->job = job;
		pg->alloc = alloc;
	}
	pj = &pg->job[pg->n++];
	pj->store_id = (int64_t)r->num[STORE_JOBS_COL_ID];
	pj->running = r->null[STORE_JOBS_COL_END_MS];
	pj->json_off = pg->json.len;
	jsonw_init(&w, &pg->json, false);
	jsonw_obj_begin(&w);
	agent_json_stored_job(&w, r);
	pj->fields_len = pg->json.len - pj->json_off;
	if (pg->summary_json) {
		jsonw_key(&w, "summary");
		jsonw_raw(&w, pg->summary_json, pg->summary_len);
	}
	jsonw_obj_end(&w);
	pj->json_len = pg->json.len - pj->json_off;
	return jsonw_error(&w);
}

static void page_release(struct page *pg)
{
	free(pg->job);
	strbuf_release(&pg->json);
}

/*
 * Under view_lock: the view with its jobs' objects (agent.h: Threads),
 * which the sampler thread renders at its next tick from now on, and now
 * if the view has none: asked through view_efd and waited for, at most
 * AGENT_VIEW_WAIT_MS.  False when they did not come.
 */
static bool view_with_jobs(struct agent *a)
{
	struct timespec until;
	uint64_t one = 1;

	a->jobs_asked = true;
	if (!a->view || a->view->has_jobs)
		return a->view != NULL;
	time_deadline_ms(&until, AGENT_VIEW_WAIT_MS);
	while (a->view && !a->view->has_jobs && !a->view_stopping) {
		if (!a->jobs_wanted) {
			a->jobs_wanted = true;
			if (write(a->view_efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
				break;
		}
		if (pthread_cond_timedwait(&a->view_cond, &a->view_lock, &until) == ETIMEDOUT)
			break;
	}
	return a->view && a->view->has_jobs;
}

/* A running job's object from the view, when it is live there; else NULL. */
static const struct agent_view_job *live_job(const struct agent_view *v, int64_t store_id)
{
	for (size_t k = 0; k < v->njobs; k++)
		if (v->job[k].store_id == store_id)
			return &v->job[k];
	return NULL;
}

/*
 * /api/v1/jobs: a page of the store's jobs (sessions too: the agent lists
 * what runs on its node), read without the view's lock so that a tick
 * does not wait for it; then, under the lock, each job the store says is
 * running and the view has live is written with its live figures.  A job
 * the store has not taken yet has no place in the order: it waits for its
 * row (one tick).
 */
static void jobs_page(struct agent *a, const struct http_request *req, struct http_response *res)
{
	struct page pg = {0};
	struct store_jobs_filter f;
	struct store_jobs_cursor next;
	char err[160], cur[STORE_JOBS_CURSOR_MAX];
	struct jsonw w;
	bool more, live;
	int ret;

	if (api_jobs_query(req, time_now_ms(), &f, err, sizeof(err))) {
		http_error(res, 400, err);
		return;
	}
	f.with_sessions = true;
	if (read_store(a, res))
		return;
	strbuf_init(&pg.json, 0);
	ret = store_query_jobs(a->read_st, &f, page_row, &pg, &more, &next);
	if (ret) {
		http_error(res, ret == -ENOMEM ? 500 : 503,
			   ret == -ENOMEM ? "out of memory" : "the store cannot be read");
		goto out_release_page;
	}
	jsonw_init(&w, &res->body, false);
	jsonw_obj_begin(&w);
	jsonw_kv_str(&w, "node", a->hostname);
	jsonw_key(&w, "jobs");
	jsonw_arr_begin(&w);
	pthread_mutex_lock(&a->view_lock);
	live = view_with_jobs(a);
	for (size_t k = 0; k < pg.n; k++) {
		const struct page_job *pj = &pg.job[k];
		const struct agent_view_job *vj =
		    pj->running && live ? live_job(a->view, pj->store_id) : NULL;

		if (vj)
			jsonw_raw(&w, a->view->job_json.buf + vj->json_off, vj->json_len);
		else
			jsonw_raw(&w, pg.json.buf + pj->json_off, pj->json_len);
	}
	pthread_mutex_unlock(&a->view_lock);
	jsonw_arr_end(&w);
	jsonw_key(&w, "next");
	if (more) {
		store_jobs_cursor_format(&next, cur, sizeof(cur));
		jsonw_str(&w, cur);
	} else {
		jsonw_null(&w);
	}
	jsonw_obj_end(&w);
	strbuf_addch(&res->body, '\n');
	if (jsonw_error(&w) || strbuf_error(&res->body))
		http_error(res, 500, "cannot write the answer");
out_release_page:
	page_release(&pg);
}

/* A job from the store that is not live: its object and its stored report (job_answer). */
static void job_from_store(struct agent *a, const char *key, struct http_response *res)
{
	struct store_jobs_filter f = {.with_sessions = true, .limit = 1};
	struct store_jobs_cursor next;
	struct page pg = {0};
	struct strbuf sum;
	bool more;
	int ret;

	if (read_store(a, res))
		return;
	ret = store_find_job_key(a->read_st, key, &f.job_row);
	if (ret == -EINVAL) {
		http_error(res, 400,
			   "malformed job key: use scheduler:id:start_ms, scheduler:id or id");
		return;
	}
	if (ret) {
		http_error(res, 404, "no such job");
		return;
	}
	strbuf_init(&sum, 0);
	strbuf_init(&pg.json, 0);
	if (store_get_job_summary_json(a->read_st, f.job_row, &sum) == 0 && sum.len) {
		while (sum.len && sum.buf[sum.len - 1] == '\n')
			sum.len--;
		pg.summary_json = sum.buf; /* the report, as we wrote it */
		pg.summary_len = sum.len;
	} else {
		pg.summary_json = "null";
		pg.summary_len = 4;
	}
	ret = store_query_jobs(a->read_st, &f, page_row, &pg, &more, &next);
	if (ret || pg.n != 1) {
		http_error(res, 500, "cannot read the job");
	} else {
		/* not live: no process of it is alive (the head's "processes" is [] too) */
		job_answer(&res->body, pg.json.buf, pg.json.len, pg.job[0].fields_len,
			   "\"processes\":[],");
	}
	page_release(&pg);
	strbuf_release(&sum);
}

void agent_http(void *arg, const struct http_request *req, struct http_response *res)
{
	struct agent_request ar = {.a = arg};
	const struct http_route *r;
	struct caller who;
	int status = 404;
	bool jobs_late;

	r = http_route_find(agent_routes, req, &status);
	if (r && r->access != HTTP_ACCESS_PUBLIC &&
	    (!access_identify(&ar.a->acc, req, &who, res) ||
	     !access_permits(&ar.a->acc, &who, r->access, res)))
		return;
	pthread_mutex_lock(&ar.a->view_lock);
	ar.a->scrapes++;
	/* (the wait lets a tick swap the view: ar.v is taken after it) */
	jobs_late = r && r->fn == route_job && ar.a->view && !view_with_jobs(ar.a);
	ar.v = ar.a->view;
	if (!ar.v) {
		pthread_mutex_unlock(&ar.a->view_lock);
		http_error(res, 503, "no sample yet");
		return;
	}
	if (jobs_late)
		http_error(res, 503, "the jobs' live figures are not ready: the agent is busy");
	else if (r)
		r->fn(&ar, req, res);
	else
		http_error(res, status, status == 405 ? "method not allowed" : "no such endpoint");
	pthread_mutex_unlock(&ar.a->view_lock);
	/* the store is read without the view's lock: a tick does not wait for it */
	if (ar.store_key)
		job_from_store(ar.a, ar.store_key, res);
	if (ar.jobs_page)
		jobs_page(ar.a, req, res);
}
