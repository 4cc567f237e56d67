/*
 * head_api.c - the head's read endpoints: gswarm-profiler's GET /status and
 * GET /metrics/latest, the versioned /api/v1 queries (nodes, gpus, jobs,
 * one job, series, one session) and GET /metrics for Prometheus.
 *
 * The SQL is ours and fixed; what comes from the request only binds
 * parameters (checked first: integers where integers are expected, metric
 * names from a list).  Answers are JSON with units in the field names.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/log.h"
#include "common/prom.h"
#include "common/timeutil.h"
#include "head.h"
#include "report/report_query.h"

#define API_MAX_ROWS "10000"

/* A node's latest host sample, with its agent's health. */
static const char sql_nodes[] =
    "SELECT n.hostname AS node, n.cores, n.mem_total_bytes, a.agent_id,"
    " a.last_seen_ms, a.interval_ms, a.acked_seq,"
    " (a.interval_ms > 0 AND ?1 - a.last_seen_ms <= 3 * a.interval_ms) AS healthy,"
    " h.ts_ms, h.mem_available_bytes, h.load1_milli, h.procs_running,"
    " (SELECT count(*) FROM devices d WHERE d.node_id = n.id) AS gpus"
    " FROM nodes n LEFT JOIN agents a ON a.node_id = n.id"
    " LEFT JOIN host_samples h ON h.seq = (SELECT seq FROM host_samples"
    " WHERE node_id = n.id ORDER BY ts_ms DESC LIMIT 1)"
    " ORDER BY n.hostname";

static const char sql_gpus[] =
    "SELECT n.hostname AS node, d.idx AS \"index\", d.uuid, d.name, d.vendor,"
    " d.mem_total_bytes, g.ts_ms, g.util_pct, g.mem_used_bytes, g.power_mw, g.temp_c,"
    " g.pcie_rx_bps, g.pcie_tx_bps"
    " FROM devices d JOIN nodes n ON n.id = d.node_id"
    " LEFT JOIN gpu_samples g ON g.seq = (SELECT seq FROM gpu_samples"
    " WHERE device_id = d.id ORDER BY ts_ms DESC LIMIT 1)"
    " ORDER BY n.hostname, d.idx";

/* ?1 user, ?2 node, ?3 since, ?4 until ("" = any) */
static const char sql_jobs[] =
    "SELECT j.scheduler || ':' || j.job_id || ':' || j.start_ms AS key, n.hostname AS node,"
    " j.scheduler, j.job_id, j.user, j.command, j.start_ms, j.end_ms,"
    " j.reservation_source, j.reserved_cpus, j.reserved_mem_bytes, j.reserved_gpus,"
    " s.cpu_ms, s.cpu_efficiency_pct, s.rss_peak_bytes, s.mem_efficiency_pct, s.gpus_used,"
    " s.gpu_util_avg_pct, s.gpu_energy_mj"
    " FROM jobs j JOIN nodes n ON n.id = j.node_id"
    " LEFT JOIN job_summaries s ON s.job_id = j.id"
    " WHERE j.scheduler <> 'session' AND (?1 IS NULL OR j.user = ?1)"
    " AND (?2 IS NULL OR n.hostname = ?2)"
    " AND (?3 IS NULL OR j.end_ms IS NULL OR j.end_ms >= ?3)"
    " AND (?4 IS NULL OR j.start_ms <= ?4)"
    " ORDER BY j.start_ms DESC LIMIT " API_MAX_ROWS;

static const char sql_job[] =
    "SELECT j.scheduler || ':' || j.job_id || ':' || j.start_ms AS key, n.hostname AS node,"
    " j.scheduler, j.job_id, j.step, j.user, j.uid, j.command, j.start_ms, j.end_ms, j.cgroup,"
    " j.qos, j.reservation_source, j.reserved_cpus, j.reserved_mem_bytes, j.reserved_gpus,"
    " j.reserved_gpu_list FROM jobs j JOIN nodes n ON n.id = j.node_id WHERE j.id = ?1";

static const char sql_session_nodes[] =
    "SELECT n.hostname AS node, count(h.seq) AS frames, min(h.ts_ms) AS first_ms,"
    " max(h.ts_ms) AS last_ms FROM nodes n JOIN host_samples h ON h.node_id = n.id"
    " WHERE h.ts_ms BETWEEN ?1 AND ?2"
    " AND (?3 IS NULL OR ',' || ?3 || ',' LIKE '%,' || n.hostname || ',%')"
    " GROUP BY n.id ORDER BY n.hostname";

/* /api/v1/series: the columns a series may be of (no other name reaches SQL) */
static const char *const host_series[] = {
    "cpu_user_ms",     "cpu_system_ms",	      "cpu_idle_ms",	 "cpu_iowait_ms",
    "mem_available_bytes", "mem_free_bytes",  "swap_free_bytes", "load1_milli",
    "procs_running",   "procs_blocked",	      "disk_read_bytes", "disk_write_bytes",
    "net_rx_bytes",    "net_tx_bytes",	      NULL,
};
static const char *const gpu_series[] = {
    "util_pct",	   "mem_util_pct", "mem_used_bytes", "pcie_rx_bps", "pcie_tx_bps",
    "nvlink_rx_bytes", "nvlink_tx_bytes", "power_mw",     "energy_mj",   "temp_c",
    "sm_clock_mhz",    NULL,
};

static bool in_list(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (strcmp(*list, name) == 0)
			return true;
	return false;
}

/* A time parameter: ms since the epoch, RFC 3339, or "2h" (that long ago). */
static bool time_param(const char *s, char *out, size_t size)
{
	int64_t ms;
	char *end;

	if (!s || !*s) {
		out[0] = '\0';
		return true;
	}
	ms = strtoll(s, &end, 10);
	if (*end == '\0' && ms >= 0) {
		snprintf(out, size, "%" PRId64, ms);
		return true;
	}
	if (parse_duration_ms(s, &ms) == 0) {
		snprintf(out, size, "%" PRId64, time_now_ms() - ms);
		return true;
	}
	if (parse_rfc3339_ms(s, &ms) == 0) {
		snprintf(out, size, "%" PRId64, ms);
		return true;
	}
	return false;
}

static bool query(struct head *h, struct http_response *res, struct jsonw *w, const char *sql,
		  const char *const *params, bool first_only)
{
	int64_t n;

	if (store_query_json(h->st, sql, params, first_only, w, &n)) {
		http_error(res, 503, "the store cannot be read");
		return false;
	}
	return true;
}

static void api_nodes(struct head *h, struct http_response *res, struct jsonw *w)
{
	char now[32];
	const char *p[] = {now, NULL};

	snprintf(now, sizeof(now), "%" PRId64, time_now_ms());
	jsonw_obj_begin(w);
	jsonw_key(w, "nodes");
	if (!query(h, res, w, sql_nodes, p, false))
		return;
	jsonw_obj_end(w);
}

static void api_gpus(struct head *h, struct http_response *res, struct jsonw *w)
{
	jsonw_obj_begin(w);
	jsonw_key(w, "gpus");
	if (!query(h, res, w, sql_gpus, NULL, false))
		return;
	jsonw_obj_end(w);
}

static void api_jobs(struct head *h, const struct http_request *req, struct http_response *res,
		     struct jsonw *w)
{
	char since[32], until[32];
	const char *user = http_query_arg(req, "user"), *node = http_query_arg(req, "node");
	const char *p[] = {user ? user : "", node ? node : "", since, until, NULL};

	if (!time_param(http_query_arg(req, "since"), since, sizeof(since)) ||
	    !time_param(http_query_arg(req, "until"), until, sizeof(until))) {
		http_error(res, 400, "since/until: ms since the epoch, RFC 3339, or an age (2h)");
		return;
	}
	jsonw_obj_begin(w);
	jsonw_key(w, "jobs");
	if (!query(h, res, w, sql_jobs, p, false))
		return;
	jsonw_obj_end(w);
}

static void api_job(struct head *h, const char *key, struct http_response *res,
		    struct jsonw *w)
{
	struct strbuf sum;
	char id[32];
	const char *p[] = {id, NULL};
	int64_t row;
	int ret = store_find_job_key(h->st, key, &row);

	if (ret == -EINVAL) {
		http_error(res, 400, "malformed job key: scheduler:id:start_ms, scheduler:id or id");
		return;
	}
	if (ret) {
		http_error(res, ret == -ENOENT ? 404 : 503,
			   ret == -ENOENT ? "no such job" : "the store cannot be read");
		return;
	}
	snprintf(id, sizeof(id), "%" PRId64, row);
	jsonw_obj_begin(w);
	jsonw_key(w, "job");
	if (!query(h, res, w, sql_job, p, true))
		return;
	jsonw_key(w, "summary");
	strbuf_init(&sum, 0);
	if (store_get_job_summary_json(h->st, row, &sum) == 0 && sum.len) {
		while (sum.len && sum.buf[sum.len - 1] == '\n')
			sum.len--;
		jsonw_raw(w, sum.buf, sum.len);
	} else {
		jsonw_null(w);
	}
	strbuf_release(&sum);
	jsonw_obj_end(w);
}

static void api_session(struct head *h, const char *name, struct http_response *res,
			struct jsonw *w)
{
	struct session_record s;
	char from[32], to[32];
	const char *p[] = {from, to, NULL, NULL};
	char t[40];

	if (store_session_get(h->st, name, &s)) {
		http_error(res, 404, "no such session");
		return;
	}
	snprintf(from, sizeof(from), "%" PRId64, s.start_ms);
	snprintf(to, sizeof(to), "%" PRId64, s.end_ms ? s.end_ms : time_now_ms());
	p[2] = s.nodes;
	jsonw_obj_begin(w);
	jsonw_kv_str(w, "name", s.name);
	jsonw_kv_bool(w, "is_active", s.end_ms == 0);
	format_rfc3339_ms(s.start_ms, t, sizeof(t));
	jsonw_kv_str(w, "start_time", t);
	jsonw_kv_int(w, "start_ms", s.start_ms);
	jsonw_kv_int_opt(w, "end_ms", s.end_ms > 0, s.end_ms);
	jsonw_kv_int_opt(w, "interval_ms", s.interval_ms > 0, s.interval_ms);
	jsonw_kv_str_opt(w, "nodes", s.nodes[0] ? s.nodes : NULL);
	jsonw_key(w, "by_node");
	if (!query(h, res, w, sql_session_nodes, p, false))
		return;
	jsonw_obj_end(w);
}

/* /api/v1/series?node=N&metric=M[&gpu=I][&since=T][&until=T]: raw samples */
static void api_series(struct head *h, const struct http_request *req,
		       struct http_response *res, struct jsonw *w)
{
	const char *node = http_query_arg(req, "node"), *metric = http_query_arg(req, "metric");
	const char *gpu = http_query_arg(req, "gpu");
	char since[32], until[32], sql[768];
	const char *p[] = {node, since, until, gpu, NULL};
	bool is_gpu = gpu != NULL;

	if (!node || !metric) {
		http_error(res, 400, "node and metric are required");
		return;
	}
	if (!time_param(http_query_arg(req, "since"), since, sizeof(since)) ||
	    !time_param(http_query_arg(req, "until"), until, sizeof(until))) {
		http_error(res, 400, "since/until: ms since the epoch, RFC 3339, or an age (2h)");
		return;
	}
	if (is_gpu ? !in_list(gpu_series, metric) : !in_list(host_series, metric)) {
		http_error(res, 400, is_gpu ? "metric: a gpu_samples column (docs/store.md)"
					    : "metric: a host_samples column (docs/store.md)");
		return;
	}
	if (is_gpu)
		snprintf(sql, sizeof(sql),
			 "SELECT g.ts_ms, g.%s AS value FROM gpu_samples g JOIN devices d ON"
			 " d.id = g.device_id JOIN nodes n ON n.id = d.node_id WHERE n.hostname = ?1"
			 " AND d.idx = ?4 AND (?2 IS NULL OR g.ts_ms >= ?2) AND (?3 IS NULL OR"
			 " g.ts_ms <= ?3) ORDER BY g.ts_ms LIMIT 100000",
			 metric);
	else
		snprintf(sql, sizeof(sql),
			 "SELECT h.ts_ms, h.%s AS value FROM host_samples h JOIN nodes n ON"
			 " n.id = h.node_id WHERE n.hostname = ?1 AND (?2 IS NULL OR h.ts_ms >= ?2)"
			 " AND (?3 IS NULL OR h.ts_ms <= ?3) ORDER BY h.ts_ms LIMIT 100000",
			 metric);
	jsonw_obj_begin(w);
	jsonw_kv_str(w, "node", node);
	jsonw_kv_str(w, "metric", metric);
	jsonw_key(w, "points");
	if (!query(h, res, w, sql, p, false))
		return;
	jsonw_obj_end(w);
}

/* gswarm's GET /metrics/latest: each client's latest host and GPU figures */
static void metrics_latest(struct head *h, struct http_response *res, struct jsonw *w)
{
	char t[40];

	char now[32];
	const char *p[] = {now, NULL};

	snprintf(now, sizeof(now), "%" PRId64, time_now_ms());
	format_rfc3339_ms(time_now_ms(), t, sizeof(t));
	jsonw_obj_begin(w);
	jsonw_kv_str(w, "timestamp", t);
	jsonw_key(w, "nodes");
	if (!query(h, res, w, sql_nodes, p, false))
		return;
	jsonw_key(w, "gpus");
	if (!query(h, res, w, sql_gpus, NULL, false))
		return;
	jsonw_obj_end(w);
}

/* Prometheus text for the cluster's latest values (labels node, gpu, uuid). */
static const char sql_prom_nodes[] =
    "SELECT n.hostname, h.ts_ms, h.mem_total_bytes, h.mem_available_bytes, h.load1_milli,"
    " h.cpu_user_ms + h.cpu_nice_ms, h.cpu_system_ms + h.cpu_irq_ms + h.cpu_softirq_ms,"
    " h.cpu_idle_ms, h.cpu_iowait_ms, a.last_seen_ms, a.interval_ms"
    " FROM nodes n JOIN host_samples h ON h.seq = (SELECT seq FROM host_samples"
    " WHERE node_id = n.id ORDER BY ts_ms DESC LIMIT 1)"
    " LEFT JOIN agents a ON a.node_id = n.id ORDER BY n.hostname";
static const char sql_prom_gpus[] =
    "SELECT n.hostname, d.idx, d.uuid, g.util_pct, g.mem_used_bytes, g.power_mw"
    " FROM devices d JOIN nodes n ON n.id = d.node_id JOIN gpu_samples g ON g.seq ="
    " (SELECT seq FROM gpu_samples WHERE device_id = d.id ORDER BY ts_ms DESC LIMIT 1)"
    " ORDER BY n.hostname, d.idx";

/* name{node="..."[,gpu="i",uuid="..."]} value, when the column is not NULL */
static bool prom_row(struct strbuf *o, const char *name, const struct store_row *r, int col,
		     double scale, int gpu_col)
{
	if (r->null[col])
		return false;
	strbuf_addf(o, "%s{node=\"", name);
	prom_label_value(o, r->text[0]);
	if (gpu_col >= 0) {
		strbuf_addf(o, "\",gpu=\"%s\",uuid=\"", r->text[gpu_col]);
		prom_label_value(o, r->text[gpu_col + 1]);
	}
	strbuf_addstr(o, "\"} ");
	prom_value(o, r->num[col] * scale);
	strbuf_addch(o, '\n');
	return true;
}

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

	if (c->col < 0) {
		/* agent health: 1 when it sent within 3 of its intervals */
		bool healthy = !r->null[9] && !r->null[10] && r->num[10] > 0 &&
			       (double)c->now_ms - r->num[9] <= HEAD_UNHEALTHY_INTERVALS * r->num[10];

		strbuf_addstr(c->o, "jobscope_head_agent_healthy{node=\"");
		prom_label_value(c->o, r->text[0]);
		strbuf_addf(c->o, "\"} %d\n", healthy);
		c->n++;
		return 0;
	}
	c->n += prom_row(c->o, c->name, r, c->col, c->scale, c->gpu_col);
	return 0;
}

static void metrics(struct head *h, struct http_response *res)
{
	static const struct {
		const char *name, *type, *help;
		bool gpu;
		int col;
		double scale;
	} fam[] = {
	    {"jobscope_node_memory_total_bytes", "gauge", "Memory of each node, bytes.", false, 2, 1},
	    {"jobscope_node_memory_available_bytes", "gauge", "MemAvailable, bytes.", false, 3, 1},
	    {"jobscope_node_load1", "gauge", "1-minute load average.", false, 4, 0.001},
	    {"jobscope_node_cpu_user_seconds_total", "counter", "CPU time in user mode, seconds.",
	     false, 5, 0.001},
	    {"jobscope_node_cpu_system_seconds_total", "counter",
	     "CPU time in the kernel, seconds.", false, 6, 0.001},
	    {"jobscope_node_cpu_idle_seconds_total", "counter", "Idle CPU time, seconds.", false, 7,
	     0.001},
	    {"jobscope_node_last_sample_timestamp_seconds", "gauge",
	     "When the node's latest sample was taken.", false, 1, 0.001},
	    {"jobscope_head_agent_healthy", "gauge",
	     "1 when the node's agent sent within 3 of its intervals.", false, -1, 1},
	    {"jobscope_gpu_utilization_percent", "gauge", "GPU utilization, 0-100.", true, 3, 1},
	    {"jobscope_gpu_memory_used_bytes", "gauge", "GPU memory in use, bytes.", true, 4, 1},
	    {"jobscope_gpu_power_watts", "gauge", "GPU power draw, watts.", true, 5, 0.001},
	};
	struct prom_ctx c = {&res->body, NULL, 0, 1, -1, time_now_ms(), 0};

	res->content_type = PROM_CONTENT_TYPE;
	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		size_t mark = res->body.len;

		prom_family(&res->body, fam[f].name, fam[f].type, fam[f].help);
		c.name = fam[f].name;
		c.col = fam[f].col;
		c.scale = fam[f].scale;
		c.gpu_col = fam[f].gpu ? 1 : -1;
		c.n = 0;
		if (store_query_rows(h->st, fam[f].gpu ? sql_prom_gpus : sql_prom_nodes, NULL,
				     prom_each, &c)) {
			http_error(res, 503, "the store cannot be read");
			return;
		}
		if (c.n == 0)
			res->body.len = mark; /* no series: no family */
	}
	prom_family(&res->body, "jobscope_head_batches_total", "counter",
		    "Batches taken from agents since the head started.");
	strbuf_addf(&res->body, "jobscope_head_batches_total %" PRIu64 "\n", h->batches);
	prom_family(&res->body, "jobscope_head_refused_batches_total", "counter",
		    "Batches refused (400) since the head started.");
	strbuf_addf(&res->body, "jobscope_head_refused_batches_total %" PRIu64 "\n", h->refused);
}

/*
 * GET /api/v1/report?job=KEY|run=ID|user=U|node=N&since=T&until=T&by=K&format=F:
 * `jobscope report` run on the head's store (jobscope report --head asks it).
 */
static void api_report(struct head *h, const struct http_request *req, struct http_response *res)
{
	static const char *const types[] = {"text/plain; charset=utf-8", "application/json",
					    "text/csv; charset=utf-8", "text/html; charset=utf-8"};
	struct report_query q = {.utf8 = true};
	const char *since = http_query_arg(req, "since"), *until = http_query_arg(req, "until");
	const char *by = http_query_arg(req, "by"), *format = http_query_arg(req, "format");
	int64_t now_ms = time_now_ms();
	char err[512];
	int ret;

	q.job_key = http_query_arg(req, "job");
	q.run_id = http_query_arg(req, "run");
	q.user = http_query_arg(req, "user");
	q.node = http_query_arg(req, "node");
	if ((format && report_format_parse(format, &q.format)) ||
	    (by && history_by_parse(by, &q.by)) ||
	    (since && report_parse_time(since, now_ms, &q.since_ms)) ||
	    (until && report_parse_time(until, now_ms, &q.until_ms))) {
		http_error(res, 400, "bad format, by, since or until");
		return;
	}
	q.has_by = by != NULL;
	q.has_since = since != NULL;
	q.has_until = until != NULL;
	ret = report_query_run(h->st, &q, now_ms, &res->body, err, sizeof(err));
	if (ret) {
		strbuf_reset(&res->body);
		http_error(res, ret == -ENOENT ? 404 : ret == -EINVAL ? 400 : 503, err);
		return;
	}
	res->content_type = types[q.format];
}

bool head_api(struct head *h, const struct http_request *req, struct http_response *res)
{
	const char *path = req->path;
	struct jsonw w;

	if (strcmp(path, "/metrics") == 0) {
		metrics(h, res);
		return true;
	}
	if (strcmp(path, "/api/v1/report") == 0) {
		api_report(h, req, res);
		return true;
	}
	jsonw_init(&w, &res->body, true);
	if (strcmp(path, "/api/v1/nodes") == 0)
		api_nodes(h, res, &w);
	else if (strcmp(path, "/api/v1/gpus") == 0)
		api_gpus(h, res, &w);
	else if (strcmp(path, "/api/v1/jobs") == 0)
		api_jobs(h, req, res, &w);
	else if (strncmp(path, "/api/v1/jobs/", 13) == 0 && path[13])
		api_job(h, path + 13, res, &w);
	else if (strncmp(path, "/api/v1/sessions/", 17) == 0 && path[17])
		api_session(h, path + 17, res, &w);
	else if (strcmp(path, "/api/v1/series") == 0)
		api_series(h, req, res, &w);
	else if (strcmp(path, "/metrics/latest") == 0)
		metrics_latest(h, res, &w);
	else
		return false;
	if (res->status == 200)
		strbuf_addch(&res->body, '\n');
	return true;
}
