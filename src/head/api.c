/*
 * api.c - the head's read API: gswarm-profiler's GET /metrics/latest, the
 * versioned /api/v1 queries (nodes, gpus, jobs, one job, series, one
 * session), GET /api/v1/report (`jobscope report` on the head's store) and
 * GET /metrics for Prometheus.
 *
 * The queries are the store's (store/queries.h); what comes from the
 * request is checked first (times, a series' metric against the store's
 * list).  Answers are JSON with units in the field names, each ending in a
 * newline; a store that cannot be read answers 503.
 */
#include "head/head.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "prom/expo.h"
#include "prom/families.h"
#include "common/timeutil.h"
#include "net/api.h"
#include "report/report_query.h"
#include "report/session_export.h"
#include "sample/host.h"
#include "store/queries.h"
#include "store/profiling.h"
#include "store/reader.h"

/* A time parameter (parse_time_ms's forms); absent or "": none. */
static bool time_param(const char *s, bool *has, int64_t *out)
{
	*has = false;
	if (!s || !*s)
		return true;
	if (parse_time_ms(s, time_now_ms(), out))
		return false;
	*has = true;
	return true;
}

/* ?since=&until= into when: false (and a 400 in res) when one is not a time */
static bool window_param(const struct http_request *req, struct http_response *res,
			 struct store_window *when)
{
	if (!time_param(http_query_arg(req, "since"), &when->has_since, &when->since_ms) ||
	    !time_param(http_query_arg(req, "until"), &when->has_until, &when->until_ms)) {
		http_error(res, 400, "since/until: ms since the epoch, RFC 3339, or an age (2h)");
		return false;
	}
	return true;
}

/* false (and a 503 in res) when a query failed */
static bool answered(int ret, struct http_response *res)
{
	if (ret) {
		http_error(res, 503, "the store cannot be read");
		return false;
	}
	return true;
}

/* The end of a JSON answer: its newline. */
static void json_done(struct http_response *res)
{
	if (res->status == 200)
		strbuf_addch(&res->body, '\n');
}

/*
 * Whose jobs a caller's answer may hold: NULL for everyone's (an admin, a
 * reader, an open head), else the caller's own user name.  false (a 403
 * in res) for a caller who sees no one's: a token that is not a person's.
 */
static bool own_user(const struct head *h, const char **user, struct http_response *res)
{
	*user = NULL;
	if (head_sees_all(h))
		return true;
	if (!h->who.user[0]) {
		http_error(res, 403, "this token reads no user's jobs");
		return false;
	}
	*user = h->who.user;
	return true;
}

/* A user's filter: theirs when they name none, 403 when they name another's. */
static bool user_filter(const struct head *h, const char **user, struct http_response *res)
{
	const char *own;

	if (!own_user(h, &own, res))
		return false;
	if (own && *user && (*user)[0] && strcmp(*user, own) != 0) {
		http_error(res, 403, "a user sees their own jobs alone");
		return false;
	}
	if (own)
		*user = own;
	return true;
}

/* GET /api/v1/whoami: the caller as this head sees it */
void head_api_whoami(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct jsonw w;

	if (!access_identify(&h->acc, req, &h->who, res))
		return;
	jsonw_init(&w, &res->body, true);
	jsonw_obj_begin(&w);
	jsonw_kv_str_opt(&w, "user", h->who.user[0] ? h->who.user : NULL);
	jsonw_kv_int_opt(&w, "uid", h->who.uid >= 0, h->who.uid);
	jsonw_kv_str(&w, "role", caller_role_name(h->who.role));
	jsonw_kv_str(&w, "auth",
		     h->who.role == CALLER_ANONYMOUS	? (h->acc.open ? "open" : "none")
		     : strcmp(h->who.via, "munge") == 0 ? "munge"
		     : strcmp(h->who.via, "proxy") == 0 ? "proxy"
							: "token");
	jsonw_kv_str(&w, "sees",
		     head_sees_all(h)					 ? "all"
		     : h->who.role != CALLER_ANONYMOUS && h->who.user[0] ? "own"
									 : "nothing");
	jsonw_kv_bool(&w, "insecure", h->acc.insecure);
	jsonw_obj_end(&w);
	json_done(res);
}

void head_api_nodes(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct jsonw w;

	(void)req;
	jsonw_init(&w, &res->body, true);
	jsonw_obj_begin(&w);
	jsonw_key(&w, "nodes");
	if (!answered(store_query_nodes(h->st, time_now_ms(), &w), res))
		return;
	jsonw_obj_end(&w);
	json_done(res);
}

void head_api_gpus(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct jsonw w;

	(void)req;
	jsonw_init(&w, &res->body, true);
	jsonw_obj_begin(&w);
	jsonw_key(&w, "gpus");
	if (!answered(store_query_gpus(h->st, &w), res))
		return;
	jsonw_obj_end(&w);
	json_done(res);
}

/*
 * "use": a running job's use now, from its last sample rows (queries.c says
 * how each is made); null for an ended job or one without a row yet.  A
 * figure that is not known is null.
 */
static void job_use_json(const struct store_row *r, struct jsonw *w)
{
	static const struct {
		const char *name;
		int col;
		bool real;
	} fields[] = {
	    {"ts_ms", STORE_JOBS_COL_USE_TS_MS, false},
	    {"cpu_ms", STORE_JOBS_COL_USE_CPU_MS, false},
	    {"cores", STORE_JOBS_COL_USE_CORES, true},
	    {"cpu_efficiency_pct", STORE_JOBS_COL_USE_CPU_EFFICIENCY_PCT, true},
	    {"rss_bytes", STORE_JOBS_COL_USE_RSS_BYTES, false},
	    {"gpu_util_pct", STORE_JOBS_COL_USE_GPU_UTIL_PCT, true},
	};

	jsonw_key(w, "use");
	if (r->null[STORE_JOBS_COL_USE_TS_MS]) {
		jsonw_null(w);
		return;
	}
	jsonw_obj_begin(w);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		int c = fields[i].col;

		jsonw_key(w, fields[i].name);
		if (r->null[c])
			jsonw_null(w);
		else if (fields[i].real)
			jsonw_double(w, r->num[c], 3);
		else
			jsonw_int(w, (int64_t)r->num[c]);
	}
	jsonw_obj_end(w);
}

/* A job of the list: its stored row, flat, each figure as the store holds it. */
static int job_json(const struct store_row *r, void *arg)
{
	static const struct {
		const char *name;
		int col;
		char type; /* 's' text, 'i' integer, 'd' real */
	} fields[] = {
	    {"key", STORE_JOBS_COL_KEY, 's'},
	    {"node", STORE_JOBS_COL_NODE, 's'},
	    {"scheduler", STORE_JOBS_COL_SCHEDULER, 's'},
	    {"job_id", STORE_JOBS_COL_JOB_ID, 's'},
	    {"name", STORE_JOBS_COL_NAME, 's'},
	    {"sluid", STORE_JOBS_COL_SLUID, 's'},
	    {"user", STORE_JOBS_COL_USER, 's'},
	    {"command", STORE_JOBS_COL_COMMAND, 's'},
	    {"start_ms", STORE_JOBS_COL_START_MS, 'i'},
	    {"end_ms", STORE_JOBS_COL_END_MS, 'i'},
	    {"reservation_source", STORE_JOBS_COL_RESERVATION_SOURCE, 's'},
	    {"reserved_cpus", STORE_JOBS_COL_RESERVED_CPUS, 'd'},
	    {"reserved_mem_bytes", STORE_JOBS_COL_RESERVED_MEM_BYTES, 'i'},
	    {"reserved_gpus", STORE_JOBS_COL_RESERVED_GPUS, 'i'},
	    {"cpu_ms", STORE_JOBS_COL_CPU_MS, 'i'},
	    {"cpu_efficiency_pct", STORE_JOBS_COL_CPU_EFFICIENCY_PCT, 'd'},
	    {"rss_peak_bytes", STORE_JOBS_COL_RSS_PEAK_BYTES, 'i'},
	    {"mem_efficiency_pct", STORE_JOBS_COL_MEM_EFFICIENCY_PCT, 'd'},
	    {"gpus_used", STORE_JOBS_COL_GPUS_USED, 'i'},
	    {"gpu_util_avg_pct", STORE_JOBS_COL_GPU_UTIL_AVG_PCT, 'd'},
	    {"gpu_energy_mj", STORE_JOBS_COL_GPU_ENERGY_MJ, 'i'},
	    {"sm_active_avg_pct", STORE_JOBS_COL_SM_ACTIVE_AVG_PCT, 'd'},
	    {"sm_occupancy_avg_pct", STORE_JOBS_COL_SM_OCCUPANCY_AVG_PCT, 'd'},
	    {"tensor_active_avg_pct", STORE_JOBS_COL_TENSOR_ACTIVE_AVG_PCT, 'd'},
	    {"dram_active_avg_pct", STORE_JOBS_COL_DRAM_ACTIVE_AVG_PCT, 'd'},
	    {"fp64_active_avg_pct", STORE_JOBS_COL_FP64_ACTIVE_AVG_PCT, 'd'},
	    {"fp32_active_avg_pct", STORE_JOBS_COL_FP32_ACTIVE_AVG_PCT, 'd'},
	    {"fp16_active_avg_pct", STORE_JOBS_COL_FP16_ACTIVE_AVG_PCT, 'd'},
	    {"throttle_power_s", STORE_JOBS_COL_THROTTLE_POWER_S, 'd'},
	    {"throttle_thermal_s", STORE_JOBS_COL_THROTTLE_THERMAL_S, 'd'},
	};
	struct jsonw *w = arg;

	jsonw_obj_begin(w);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		int c = fields[i].col;

		jsonw_key(w, fields[i].name);
		if (r->null[c])
			jsonw_null(w);
		else if (fields[i].type == 's')
			jsonw_str(w, r->text[c]);
		else if (fields[i].type == 'i')
			jsonw_int(w, (int64_t)r->num[c]);
		else
			jsonw_double(w, r->num[c], 3);
		if (c == STORE_JOBS_COL_END_MS)
			jsonw_kv_str(w, "state", r->null[c] ? "running" : "ended");
	}
	job_use_json(r, w);
	jsonw_obj_end(w);
	return jsonw_error(w);
}

/* /api/v1/jobs?state=S&user=U&node=N&since=T&until=T&limit=L&cursor=C: a page */
void head_api_jobs(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct store_jobs_filter f;
	struct store_jobs_cursor next;
	char err[160], cur[STORE_JOBS_CURSOR_MAX];
	struct jsonw w;
	bool more;

	if (api_jobs_query(req, time_now_ms(), &f, err, sizeof(err))) {
		http_error(res, 400, err);
		return;
	}
	if (!user_filter(h, &f.user, res))
		return;
	jsonw_init(&w, &res->body, true);
	jsonw_obj_begin(&w);
	jsonw_key(&w, "jobs");
	jsonw_arr_begin(&w);
	if (!answered(store_query_jobs(h->st, &f, job_json, &w, &more, &next), res))
		return;
	jsonw_arr_end(&w);
	jsonw_key(&w, "next");
	if (more) {
		store_jobs_cursor_format(&next, cur, sizeof(cur));
		jsonw_str(&w, cur);
	} else {
		jsonw_null(&w);
	}
	jsonw_obj_end(&w);
	json_done(res);
}

/* /api/v1/jobs/KEY: the job's row and its summary */
void head_api_job(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	const char *key = req->path + strlen("/api/v1/jobs/");
	struct strbuf sum;
	struct job_record job;
	const char *own;
	struct jsonw w;
	int64_t row;
	int ret;

	if (!own_user(h, &own, res))
		return;
	ret = store_find_job_key(h->st, key, &row);
	jsonw_init(&w, &res->body, true);
	if (ret == -EINVAL) {
		http_error(res, 400,
			   "malformed job key: scheduler:id:start_ms, scheduler:id or id");
		return;
	}
	/* another user's job is not there for this caller */
	if (!ret && own && !(ret = store_get_job(h->st, row, &job)) && strcmp(job.user, own) != 0)
		ret = -ENOENT;
	if (ret) {
		http_error(res, ret == -ENOENT ? 404 : 503,
			   ret == -ENOENT ? "no such job" : "the store cannot be read");
		return;
	}
	jsonw_obj_begin(&w);
	jsonw_key(&w, "job");
	if (!answered(store_query_job(h->st, row, &w), res))
		return;
	jsonw_key(&w, "summary");
	strbuf_init(&sum, 0);
	if (store_get_job_summary_json(h->st, row, &sum) == 0 && sum.len) {
		while (sum.len && sum.buf[sum.len - 1] == '\n')
			sum.len--;
		jsonw_raw(&w, sum.buf, sum.len);
	} else {
		jsonw_null(&w);
	}
	strbuf_release(&sum);
	/* jobscope top --head: the processes its node's agent last sent */
	jsonw_key(&w, "processes");
	if (!answered(store_query_job_procs(h->st, row, &w), res))
		return;
	jsonw_obj_end(&w);
	json_done(res);
}

/* /api/v1/sessions/NAME: the session and what each of its nodes sent in it */
void head_api_session(void *arg, const char *name, const struct http_request *req,
		      struct http_response *res)
{
	struct head *h = arg;
	struct session_record s;
	struct jsonw w;
	char t[40];

	jsonw_init(&w, &res->body, true);
	if (store_session_get(h->st, name, &s) || !head_session_visible(h, &s)) {
		http_error(res, 404, "no such session");
		return;
	}
	jsonw_obj_begin(&w);
	(void)req;
	jsonw_kv_str(&w, "name", s.name);
	jsonw_kv_bool(&w, "is_active", s.end_ms == 0);
	format_rfc3339_ms(s.start_ms, t, sizeof(t));
	jsonw_kv_str(&w, "start_time", t);
	jsonw_kv_int(&w, "start_ms", s.start_ms);
	jsonw_kv_int_opt(&w, "end_ms", s.end_ms > 0, s.end_ms);
	jsonw_kv_int_opt(&w, "interval_ms", s.interval_ms > 0, s.interval_ms);
	/* the session's frames, as /profiling/sessions and its gswarm file count them */
	jsonw_kv_int(&w, "frames", session_gswarm_frames(&s, time_now_ms()));
	jsonw_kv_str_opt(&w, "nodes", s.nodes[0] ? s.nodes : NULL);
	jsonw_key(&w, "by_node");
	if (!answered(store_query_session_nodes(h->st, s.start_ms,
						s.end_ms ? s.end_ms : time_now_ms(), s.nodes, &w),
		      res))
		return;
	jsonw_obj_end(&w);
	json_done(res);
}

/* /api/v1/series?node=N&metric=M[&gpu=I][&since=T][&until=T]: raw samples */
void head_api_series(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct store_series_query q = {http_query_arg(req, "node"), http_query_arg(req, "metric"),
				       http_query_arg(req, "gpu")};
	bool is_gpu = q.gpu != NULL;
	struct jsonw w;

	jsonw_init(&w, &res->body, true);
	if (!q.node || !q.metric) {
		http_error(res, 400, "node and metric are required");
		return;
	}
	if (!window_param(req, res, &q.when))
		return;
	if (!store_series_metric_ok(is_gpu, q.metric)) {
		http_error(res, 400,
			   is_gpu ? "metric: a gpu_samples column (docs/store.md)"
				  : "metric: a host_samples column (docs/store.md)");
		return;
	}
	jsonw_obj_begin(&w);
	jsonw_kv_str(&w, "node", q.node);
	jsonw_kv_str(&w, "metric", q.metric);
	jsonw_key(&w, "points");
	if (!answered(store_query_series(h->st, &q, &w), res))
		return;
	jsonw_obj_end(&w);
	json_done(res);
}

/* gswarm's GET /metrics/latest: each client's latest host and GPU figures */
void head_metrics_latest(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct jsonw w;
	char t[40];
	int64_t now_ms = time_now_ms();

	(void)req;
	jsonw_init(&w, &res->body, true);
	format_rfc3339_ms(time_now_ms(), t, sizeof(t));
	jsonw_obj_begin(&w);
	jsonw_kv_str(&w, "timestamp", t);
	/* gswarm's shape first (its units: docs/gswarm.md), then ours */
	if (!answered(head_client_data_json(h->st, &w, now_ms), res))
		return;
	jsonw_key(&w, "nodes");
	if (!answered(store_query_nodes(h->st, now_ms, &w), res))
		return;
	jsonw_key(&w, "gpus");
	if (!answered(store_query_gpus(h->st, &w), res))
		return;
	jsonw_obj_end(&w);
	json_done(res);
}

/* name{node="..."[,gpu="i",uuid="..."]} value */
static bool prom_row_value(struct strbuf *o, const char *name, const struct store_row *r,
			   double value, int gpu_col)
{
	strbuf_addf(o, "%s{node=\"", name);
	prom_label_value(o, r->text[0]);
	if (gpu_col >= 0) {
		strbuf_addf(o, "\",gpu=\"%s\",uuid=\"", r->text[gpu_col]);
		prom_label_value(o, r->text[gpu_col + 1]);
	}
	strbuf_addstr(o, "\"} ");
	prom_value(o, value);
	strbuf_addch(o, '\n');
	return true;
}

/* The same for a column's value, when it is not NULL. */
static bool prom_row(struct strbuf *o, const char *name, const struct store_row *r, int col,
		     double scale, int gpu_col)
{
	return !r->null[col] && prom_row_value(o, name, r, r->num[col] * scale, gpu_col);
}

/* The CPU modes' families: made from the raw counters, not a column */
#define PROM_COL_CPU_USER   (-2)
#define PROM_COL_CPU_SYSTEM (-3)

struct prom_ctx {
	struct strbuf *o;
	const char *name;
	int col;
	double scale;
	int gpu_col;
	int64_t now_ms;
	int n; /* series written in this family */
};

static int prom_each(const struct store_row *r, void *arg)
{
	struct prom_ctx *c = arg;

	if (c->col == PROM_COL_CPU_USER || c->col == PROM_COL_CPU_SYSTEM) {
		/* the raw counters (columns 5-9) made modes as the agent makes them */
		struct cpu_times t = {0};

		for (int k = 5; k <= 9; k++)
			if (r->null[k])
				return 0;
		t.user_ms = (uint64_t)r->num[5];
		t.nice_ms = (uint64_t)r->num[6];
		t.system_ms = (uint64_t)r->num[7];
		t.irq_ms = (uint64_t)r->num[8];
		t.softirq_ms = (uint64_t)r->num[9];
		c->n +=
		    prom_row_value(c->o, c->name, r,
				   (double)(c->col == PROM_COL_CPU_USER ? cpu_user_mode_ms(&t)
									: cpu_system_mode_ms(&t)) *
				       c->scale,
				   c->gpu_col);
		return 0;
	}
	if (c->col < 0) {
		/* agent health: 1 when it sent within 3 of its intervals */
		bool healthy =
		    !r->null[12] && !r->null[13] && r->num[13] > 0 &&
		    (double)c->now_ms - r->num[12] <= HEAD_UNHEALTHY_INTERVALS * r->num[13];

		strbuf_addf(c->o, "%s{node=\"", prom_fam_name(PF_HEAD_AGENT_HEALTHY));
		prom_label_value(c->o, r->text[0]);
		strbuf_addf(c->o, "\"} %d\n", healthy);
		c->n++;
		return 0;
	}
	c->n += prom_row(c->o, c->name, r, c->col, c->scale, c->gpu_col);
	return 0;
}

/* Prometheus text for the cluster's latest values (labels node, gpu, uuid). */
void head_metrics(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	/* the store columns of the latest rows' queries (store_query_latest_*_rows) */
	static const struct {
		enum prom_fam id;
		bool gpu;
		int col;
	} fam[] = {
	    {PF_NODE_MEMORY_TOTAL, false, 2},
	    {PF_NODE_MEMORY_AVAILABLE, false, 3},
	    {PF_NODE_LOAD1, false, 4},
	    {PF_NODE_CPU_USER_SECONDS, false, PROM_COL_CPU_USER},
	    {PF_NODE_CPU_SYSTEM_SECONDS, false, PROM_COL_CPU_SYSTEM},
	    {PF_NODE_CPU_IDLE_SECONDS, false, 10},
	    {PF_NODE_LAST_SAMPLE, false, 1},
	    {PF_HEAD_AGENT_HEALTHY, false, -1},
	    {PF_GPU_UTIL, true, 3},
	    {PF_GPU_MEMORY_USED, true, 4},
	    {PF_GPU_POWER, true, 5},
	};
	struct prom_ctx c = {&res->body, NULL, 0, 1, -1, time_now_ms(), 0};

	(void)req;
	res->content_type = PROM_CONTENT_TYPE;
	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		size_t mark = res->body.len;

		prom_family_head(&res->body, fam[f].id);
		c.name = prom_fam_name(fam[f].id);
		c.col = fam[f].col;
		c.scale = prom_families[fam[f].id].scale;
		c.gpu_col = fam[f].gpu ? 1 : -1;
		c.n = 0;
		if ((fam[f].gpu ? store_query_latest_gpu_rows
				: store_query_latest_host_rows)(h->st, prom_each, &c)) {
			http_error(res, 503, "the store cannot be read");
			return;
		}
		if (c.n == 0)
			res->body.len = mark; /* no series: no family */
	}
	prom_family_head(&res->body, PF_HEAD_BATCHES);
	strbuf_addf(&res->body, "%s %" PRIu64 "\n", prom_fam_name(PF_HEAD_BATCHES), h->batches);
	prom_family_head(&res->body, PF_HEAD_REFUSED_BATCHES);
	strbuf_addf(&res->body, "%s %" PRIu64 "\n", prom_fam_name(PF_HEAD_REFUSED_BATCHES),
		    h->refused);
	prom_family_head(&res->body, PF_HEAD_COMMIT_GROUPS);
	strbuf_addf(&res->body, "%s %" PRIu64 "\n", prom_fam_name(PF_HEAD_COMMIT_GROUPS),
		    h->groups);
}

/*
 * GET /api/v1/report?job=KEY|run=ID|k8s_job=NS/NAME|user=U|node=N&since=T&until=T&by=K&format=F:
 * `jobscope report` run on the head's store (jobscope report --head asks it).
 */
void head_api_report(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	static const char *const types[] = {"text/plain; charset=utf-8", "application/json",
					    "text/csv; charset=utf-8", "text/html; charset=utf-8"};
	/* errors name the store so, not by its path on the head's machine */
	struct report_query q = {.utf8 = true, .store_label = "the head's store"};
	const char *since = http_query_arg(req, "since"), *until = http_query_arg(req, "until");
	const char *by = http_query_arg(req, "by"), *format = http_query_arg(req, "format");
	int64_t now_ms = time_now_ms();
	char err[512];
	int ret;

	q.job_key = http_query_arg(req, "job");
	q.k8s_job = http_query_arg(req, "k8s_job");
	q.run_id = http_query_arg(req, "run");
	q.user = http_query_arg(req, "user");
	q.node = http_query_arg(req, "node");
	if (!own_user(h, &q.owner, res))
		return;
	if ((format && report_format_parse(format, &q.format)) ||
	    (by && history_by_parse(by, &q.by)) ||
	    (since && parse_time_ms(since, now_ms, &q.since_ms)) ||
	    (until && parse_time_ms(until, now_ms, &q.until_ms))) {
		http_error(res, 400, "bad format, by, since or until");
		return;
	}
	q.has_by = by != NULL;
	q.has_since = since != NULL;
	q.has_until = until != NULL;
	ret = report_query_run(h->st, &q, now_ms, &res->body, err, sizeof(err));
	if (ret) {
		strbuf_reset(&res->body);
		http_error(res,
			   ret == -ENOENT   ? 404
			   : ret == -EINVAL ? 400
			   : ret == -EACCES ? 403
					    : 503,
			   err);
		return;
	}
	res->content_type = types[q.format];
}
