/*
 * routes.c - the agent's endpoints: a route table (net/http.h), every route
 * public, served from the view the last tick published; a job that is not
 * live is looked up in the store, through the HTTP thread's own read-only
 * connection.
 *
 * Before the first view: 503 "no sample yet" on every path.  A path no
 * route has: 404 "no such endpoint".  /api/v1/jobs/{key} for a key that is
 * neither live nor stored: 404 "no such job" (400 for a malformed key).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "common/jsonw.h"
#include "common/prom.h"

/* What a route's handler gets: the agent, and the view it holds the lock on. */
struct agent_request {
	struct agent *a;
	const struct agent_view *v;
	/* the jobs/{key} route: not live, to be looked up in the store after the unlock */
	const char *store_key;
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
	const struct agent_view *v = ((struct agent_request *)arg)->v;

	(void)req;
	strbuf_add(&res->body, v->jobs.buf, v->jobs.len);
}

static bool key_matches(const struct agent_view_job *j, const char *key)
{
	char sj[JOB_KEY_MAX];

	if (strcmp(j->key, key) == 0 || strcmp(j->job_id, key) == 0)
		return true;
	snprintf(sj, sizeof(sj), "%s:%s", j->scheduler, j->job_id);
	return strcmp(sj, key) == 0;
}

#define JOBS_PREFIX "/api/v1/jobs/"

/* A live job from the view; else the key is left for the store. */
static void route_job(void *arg, const struct http_request *req, struct http_response *res)
{
	struct agent_request *ar = arg;
	const struct agent_view *v = ar->v;
	const char *key = req->path + strlen(JOBS_PREFIX);

	for (size_t k = 0; k < v->njobs; k++) {
		if (!key_matches(&v->job[k], key))
			continue;
		strbuf_add(&res->body, v->job_json.buf + v->job[k].json_off, v->job[k].json_len);
		strbuf_addch(&res->body, '\n');
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

static const struct http_route agent_routes[] = {
    {"GET", "/metrics", false, HTTP_ACCESS_PUBLIC, route_metrics},
    {"GET", "/api/v1/node", false, HTTP_ACCESS_PUBLIC, route_node},
    {"GET", "/api/v1/gpus", false, HTTP_ACCESS_PUBLIC, route_gpus},
    {"GET", "/api/v1/jobs", false, HTTP_ACCESS_PUBLIC, route_jobs},
    {"GET", JOBS_PREFIX, true, HTTP_ACCESS_PUBLIC, route_job},
    {"GET", "/", false, HTTP_ACCESS_PUBLIC, route_index},
    {NULL, NULL, false, HTTP_ACCESS_PUBLIC, NULL},
};

/* An ended job from the store: its record and, when stored, its summary. */
static void job_from_store(struct agent *a, const char *key, struct http_response *res)
{
	struct job_record *job;
	int64_t id;
	int ret;

	if (!a->read_st && store_open(store_path(a->st), STORE_READONLY, &a->read_st)) {
		http_error(res, 503, "the store cannot be read");
		return;
	}
	ret = store_find_job_key(a->read_st, key, &id);
	if (ret == -EINVAL) {
		http_error(res, 400,
			   "malformed job key: use scheduler:id:start_ms, scheduler:id or id");
		return;
	}
	if (ret) {
		http_error(res, 404, "no such job");
		return;
	}
	job = calloc(1, sizeof(*job));
	if (!job || store_get_job(a->read_st, id, job)) {
		free(job);
		http_error(res, 500, "cannot read the job");
		return;
	}
	{
		struct jsonw w;
		char k[JOB_KEY_MAX];

		jobs_format_key(k, sizeof(k), job->scheduler, job->job_id, job->start_ms);
		jsonw_init(&w, &res->body, false);
		jsonw_obj_begin(&w);
		jsonw_kv_str(&w, "key", k);
		jsonw_kv_str(&w, "scheduler", job->scheduler);
		jsonw_kv_str(&w, "job_id", job->job_id);
		jsonw_kv_str(&w, "node", job->hostname);
		jsonw_kv_str(&w, "user", job->user);
		jsonw_kv_int(&w, "start_ms", job->start_ms);
		jsonw_kv_int_opt(&w, "end_ms", job->end_ms > 0, job->end_ms);
		jsonw_kv_bool(&w, "live", false);
		jsonw_kv_int(&w, "store_id", job->id);
		jsonw_key(&w, "summary");
		{
			struct strbuf sum;

			strbuf_init(&sum, 0);
			if (store_get_job_summary_json(a->read_st, id, &sum) == 0 && sum.len) {
				while (sum.len && sum.buf[sum.len - 1] == '\n')
					sum.len--;
				jsonw_raw(&w, sum.buf, sum.len); /* the report, as we wrote it */
			} else {
				jsonw_null(&w);
			}
			strbuf_release(&sum);
		}
		jsonw_obj_end(&w);
		strbuf_addch(&res->body, '\n');
	}
	free(job);
}

void agent_http(void *arg, const struct http_request *req, struct http_response *res)
{
	struct agent_request ar = {.a = arg};
	const struct http_route *r;
	int status = 404;

	pthread_mutex_lock(&ar.a->view_lock);
	ar.a->scrapes++;
	ar.v = ar.a->view;
	if (!ar.v) {
		pthread_mutex_unlock(&ar.a->view_lock);
		http_error(res, 503, "no sample yet");
		return;
	}
	r = http_route_find(agent_routes, req, &status);
	if (r)
		r->fn(&ar, req, res);
	else
		http_error(res, status, status == 405 ? "method not allowed" : "no such endpoint");
	pthread_mutex_unlock(&ar.a->view_lock);
	/* the store is read without the view's lock: a tick does not wait for it */
	if (ar.store_key)
		job_from_store(ar.a, ar.store_key, res);
}
