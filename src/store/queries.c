/*
 * queries.c - the store's named read queries (see queries.h): the head's
 * read API (nodes, GPUs, one job, a session's nodes, series), the jobs
 * list a page at a time (head and agent) and its cursor, the head's
 * /status GPU list and Prometheus figures, and the history's job rows.
 *
 * The SQL is ours and fixed; parameters are bound (store_query_json and
 * store_query_rows bind a decimal string as an integer, "" as NULL), and
 * what reaches SQL text, a series' metric and a jobs page's state clause,
 * comes from a fixed list.
 */
#include "store/queries.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "sample/figures.h"
#include "store/conn.h"
#include "store/reader.h"

#define STR_(x) #x
#define STR(x)	STR_(x)

/*
 * A join of one row of a fact table, the first of the rows where cond in
 * the order tail gives (e.g. a node's latest host sample), as alias; one
 * query text a backend ([0] SQLite, [1] PostgreSQL: latest_sql).  SQLite
 * finds the row's seq by the table's (key, ts_ms) index and the row by its
 * rowid.  PostgreSQL's fact tables have no b-tree on seq (pgschema.c), and
 * a correlated subquery in a join's condition is no index key there (the
 * planner hashes the whole table instead): a LATERAL subquery, which reads
 * the row through the (key, ts_ms) index.
 */
#define LATEST_SQ(join, alias, table, cond, tail)                                                  \
	" " join " " table " " alias " ON " alias ".seq = (SELECT seq FROM " table " WHERE " cond  \
	" " tail ")"
#define LATEST_PG(join, alias, table, cond, tail)                                                  \
	" " join " LATERAL (SELECT * FROM " table " WHERE " cond " " tail ") " alias " ON true"
#define LATEST_BOTH(sql)                                                                           \
	{                                                                                          \
		sql(LATEST_SQ), sql(LATEST_PG)                                                     \
	}
#define LATEST_ONE "ORDER BY ts_ms DESC LIMIT 1"

static const char *latest_sql(const struct store *st, const char *const sql[2])
{
	return sql[st->conn.pg != NULL];
}

/* A node's latest host sample, with its agent's health. */
#define SQL_NODES(L)                                                                               \
	"SELECT n.hostname AS node, n.cores, n.mem_total_bytes, a.agent_id,"                       \
	" a.last_seen_ms, a.interval_ms, a.acked_seq,"                                             \
	" (a.interval_ms > 0 AND ?1 - a.last_seen_ms <= 3 * a.interval_ms) AS healthy,"            \
	" h.ts_ms, h.mem_available_bytes, h.load1_milli, h.procs_running,"                         \
	" (SELECT count(*) FROM devices d WHERE d.node_id = n.id) AS gpus"                         \
	" FROM nodes n LEFT JOIN agents a ON a.node_id = n.id" L(                                  \
	    "LEFT JOIN", "h", "host_samples", "node_id = n.id", LATEST_ONE) " ORDER BY n.hostname"
static const char *const sql_nodes[2] = LATEST_BOTH(SQL_NODES);

#define SQL_GPUS(L)                                                                                \
	"SELECT n.hostname AS node, d.idx AS \"index\", d.uuid, d.name, d.vendor,"                 \
	" d.mem_total_bytes, g.ts_ms, g.util_pct, g.mem_used_bytes, g.power_mw, g.temp_c,"         \
	" g.pcie_rx_bps, g.pcie_tx_bps"                                                            \
	" FROM devices d JOIN nodes n ON n.id = d.node_id" L(                                      \
	    "LEFT JOIN", "g", "gpu_samples", "device_id = d.id",                                   \
	    LATEST_ONE) " ORDER BY n.hostname, d.idx"
static const char *const sql_gpus[2] = LATEST_BOTH(SQL_GPUS);

/*
 * The jobs list, a page: ?1 user, ?2 node, ?3 since, ?4 until ("" = any),
 * ?5 with sessions (1/0), ?6 one row ("" = any), ?7 and ?8 the cursor's
 * start_ms and id ("" = the first page), ?9 how many rows; the %s: the
 * sluid column (NULL before schema 12), jobs_use_columns, jobs_use_joins
 * and the state's clause (jobs_state[]).  The columns: enum store_jobs_col.
 *
 * "start_ms <= the smaller of until and the cursor" repeats what the other
 * terms say in a form an index on start_ms can seek to, so that a deep
 * page does not scan every newer job first; "end_ms IS NULL" is written
 * out (not bound) so that jobs_end finds the running jobs.
 */
#define JOBS_MAX_MS "9223372036854775807"
/*
 * A running job's use now (STORE_JOBS_COL_USE_*), from its last job_samples
 * row u and the one before, v.  The agent writes a row only when a value
 * moved: the cores are its CPU from v to u over the time from v to the
 * node's last host row (a quiet job's cores fall towards 0, not stay at its
 * last burst); the CPU efficiency is over its life so far, as the summary's
 * (reserved cores, else the cores it may use); the GPU utilization is its
 * processes' SM % at each GPU's last process row, summed per GPU, over the
 * GPUs they are on.  Ended jobs: NULL (their summary has the figures).
 */
static const char jobs_use_columns[] =
    ", u.ts_ms, u.user_ms + u.system_ms, u.rss_bytes,"
    " (u.user_ms + u.system_ms - v.user_ms - v.system_ms) * 1.0 / nullif(greatest(u.ts_ms,"
    " (SELECT max(h.ts_ms) FROM host_samples h WHERE h.node_id = j.node_id)) - v.ts_ms, 0),"
    " CASE WHEN u.ts_ms > j.start_ms AND coalesce(nullif(j.reserved_cpus, 0), j.cores_allowed)"
    " > 0 THEN (u.user_ms + u.system_ms) * 100.0 / (coalesce(nullif(j.reserved_cpus, 0),"
    " j.cores_allowed) * (u.ts_ms - j.start_ms)) END,"
    " CASE WHEN u.seq IS NOT NULL THEN (SELECT sum(gp.sm_util_pct) * 1.0 /"
    " count(DISTINCT gp.device_id) FROM gpu_proc_samples gp JOIN devices d ON"
    " d.id = gp.device_id WHERE d.node_id = j.node_id AND gp.job_id = j.id AND gp.ts_ms ="
    " (SELECT max(g2.ts_ms) FROM gpu_proc_samples g2 WHERE g2.device_id = d.id)) END";
#define JOBS_USE_JOINS(L)                                                                          \
	L("LEFT JOIN", "u", "job_samples", "job_id = j.id AND j.end_ms IS NULL", LATEST_ONE)       \
	L("LEFT JOIN", "v", "job_samples", "job_id = j.id AND ts_ms < u.ts_ms", LATEST_ONE)
static const char *const jobs_use_joins[2] = LATEST_BOTH(JOBS_USE_JOINS);
static const char sql_jobs_page[] =
    "SELECT j.id, j.scheduler || ':' || j.job_id || ':' || j.start_ms AS key, n.hostname,"
    " j.scheduler, j.job_id, j.step, j.user, j.uid, j.command, j.start_ms, j.end_ms, j.cgroup,"
    " j.qos, j.reservation_source, j.reserved_cpus, j.reserved_mem_bytes, j.reserved_gpus,"
    " j.reserved_gpu_list, %s, s.job_id IS NOT NULL,"
    " s.cpu_ms, s.cpu_efficiency_pct, s.rss_peak_bytes,"
    " s.mem_efficiency_pct, s.gpus_used, s.gpu_util_avg_pct, s.gpu_energy_mj, j.name%s%s"
    " FROM jobs j JOIN nodes n ON n.id = j.node_id"
    " LEFT JOIN job_summaries s ON s.job_id = j.id%s"
    " WHERE (?5 = 1 OR j.scheduler <> 'session') AND (j.user = ?1 OR ?1 IS NULL)"
    " AND (n.hostname = ?2 OR ?2 IS NULL)"
    " AND (j.end_ms IS NULL OR j.end_ms >= ?3 OR ?3 IS NULL)"
    " AND (j.start_ms <= ?4 OR ?4 IS NULL)%s"
    " AND (j.id = ?6 OR ?6 IS NULL)"
    " AND j.start_ms <= least(coalesce(?4, " JOBS_MAX_MS "), coalesce(?7, " JOBS_MAX_MS "))"
    " AND ((j.start_ms, j.id) < (?7, ?8) OR ?7 IS NULL)"
    " ORDER BY j.start_ms DESC, j.id DESC LIMIT ?9";
/* by enum store_jobs_state */
static const char *const jobs_state[] = {"", " AND j.end_ms IS NULL", " AND j.end_ms IS NOT NULL"};

static const char sql_job[] =
    "SELECT j.scheduler || ':' || j.job_id || ':' || j.start_ms AS key, n.hostname AS node,"
    " j.scheduler, j.job_id, j.step, j.user, j.uid, j.command, j.start_ms, j.end_ms, j.cgroup,"
    " j.qos, j.reservation_source, j.reserved_cpus, j.reserved_mem_bytes, j.reserved_gpus,"
    " j.reserved_gpu_list, %s AS sluid, j.name FROM jobs j JOIN nodes n ON n.id = j.node_id"
    " WHERE j.id = ?1";

/*
 * A summary's GPM columns (schema 17), in the order of STORE_JOBS_COL_SM_ACTIVE_AVG_PCT..
 * and of store_history_rows; NULLs before.
 */
static const char summary_gpm_v17[] =
    ", s.sm_active_avg_pct, s.sm_occupancy_avg_pct, s.tensor_active_avg_pct,"
    " s.dram_active_avg_pct, s.fp64_active_avg_pct, s.fp32_active_avg_pct,"
    " s.fp16_active_avg_pct, s.throttle_power_s, s.throttle_thermal_s";
static const char summary_gpm_none[] = ", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL";

static const char *summary_gpm_columns(const struct store *st)
{
	return st->schema_version >= 17 ? summary_gpm_v17 : summary_gpm_none;
}

/* The jobs' sluid column: schema 12 added it. */
static const char *sluid_column(const struct store *st)
{
	return st->schema_version >= 12 ? "j.sluid" : "NULL";
}

/*
 * The live processes of a job on every node it runs on (jobscope top
 * --head): the rows that share its key (scheduler, id, start), each
 * process with its node and its last row, found in one pass over the
 * job's samples (index proc_samples_job).  The raw CPU counters:
 * store_query_job_procs makes cpu_ms of them (sample/figures.h).
 */
enum { JOB_PROCS_USER_MS = 6, JOB_PROCS_SYSTEM_MS = 7 };
#define JOB_PROCS_HEAD                                                                             \
	"SELECT n.hostname AS node, p.pid, p.ppid, p.uid, p.comm, s.ts_ms AS sampled_ms,"          \
	" s.user_ms, s.system_ms, s.rss_bytes FROM jobs k"                                         \
	" JOIN jobs j ON j.scheduler = k.scheduler AND j.job_id = k.job_id"                        \
	" AND j.start_ms = k.start_ms JOIN nodes n ON n.id = j.node_id"                            \
	" JOIN procs p ON p.job_id = j.id AND p.end_ms IS NULL"
#define JOB_PROCS_JOBS                                                                             \
	" (SELECT j2.id FROM jobs k2 JOIN jobs j2 ON j2.scheduler = k2.scheduler"                  \
	" AND j2.job_id = k2.job_id AND j2.start_ms = k2.start_ms WHERE k2.id = ?1)"
/*
 * each process's latest sample: by rowid in SQLite, in one pass over the job's rows in
 * PostgreSQL (proc_samples_all: the head's are in sets, pgschema.c)
 */
static const char *const sql_job_procs[2] = {
    JOB_PROCS_HEAD
    " JOIN (SELECT proc_id, max(seq) AS seq FROM proc_samples WHERE job_id IN" JOB_PROCS_JOBS
    " GROUP BY proc_id) l ON l.proc_id = p.id"
    " JOIN proc_samples s ON s.seq = l.seq WHERE k.id = ?1 ORDER BY n.hostname, p.pid",
    JOB_PROCS_HEAD
    " JOIN (SELECT DISTINCT ON (proc_id) * FROM proc_samples_all WHERE job_id IN" JOB_PROCS_JOBS
    " ORDER BY proc_id, seq DESC) s ON s.proc_id = p.id"
    " WHERE k.id = ?1 ORDER BY n.hostname, p.pid"};

static const char sql_session_nodes[] =
    "SELECT n.hostname AS node, count(h.seq) AS frames, min(h.ts_ms) AS first_ms,"
    " max(h.ts_ms) AS last_ms FROM nodes n JOIN host_samples h ON h.node_id = n.id"
    " WHERE h.ts_ms BETWEEN ?1 AND ?2"
    " AND (',' || ?3 || ',' LIKE '%,' || n.hostname || ',%' OR ?3 IS NULL)"
    " GROUP BY n.id ORDER BY n.hostname";

/* the nodes with a host row in [?1, ?2] (a session's stop: which sent nothing) */
static const char sql_nodes_sent[] =
    "SELECT n.hostname FROM nodes n WHERE EXISTS (SELECT 1 FROM host_samples_all h"
    " WHERE h.node_id = n.id AND h.ts_ms >= ?1 AND h.ts_ms <= ?2) ORDER BY n.hostname";

/*
 * series: ?1 node, ?2 since, ?3 until, ?4 the GPU's index or uuid; %s the
 * metric, then (schema 16) what keeps a MIG instance, which has its
 * parent's index, out of its parent's series: an instance by its uuid.
 */
static const char sql_series_gpu[] =
    "SELECT g.ts_ms, g.%s AS value FROM gpu_samples g JOIN devices d ON"
    " d.id = g.device_id JOIN nodes n ON n.id = d.node_id WHERE n.hostname = ?1"
    " AND (CAST(d.idx AS TEXT) = CAST(?4 AS TEXT)%s OR d.uuid = CAST(?4 AS TEXT))"
    " AND (g.ts_ms >= ?2 OR ?2 IS NULL) AND (g.ts_ms <= ?3 OR ?3 IS NULL)"
    " ORDER BY g.ts_ms LIMIT " STR(STORE_SERIES_MAX_POINTS);
static const char sql_series_host[] =
    "SELECT h.ts_ms, h.%s AS value FROM host_samples h JOIN nodes n ON"
    " n.id = h.node_id WHERE n.hostname = ?1 AND (h.ts_ms >= ?2 OR ?2 IS NULL)"
    " AND (h.ts_ms <= ?3 OR ?3 IS NULL) ORDER BY h.ts_ms LIMIT " STR(STORE_SERIES_MAX_POINTS);

/* The columns a series may be of (no other name reaches SQL). */
static const char *const host_series[] = {
    "cpu_user_ms",     "cpu_system_ms",	   "cpu_idle_ms",  "cpu_iowait_ms", "mem_available_bytes",
    "mem_free_bytes",  "swap_free_bytes",  "load1_milli",  "procs_running", "procs_blocked",
    "disk_read_bytes", "disk_write_bytes", "net_rx_bytes", "net_tx_bytes",  NULL,
};
/* from "gr_active_pct100" on: schema 16's (a head's store is always upgraded to it) */
static const char *const gpu_series[] = {
    "util_pct",
    "mem_util_pct",
    "mem_used_bytes",
    "pcie_rx_bps",
    "pcie_tx_bps",
    "nvlink_rx_bytes",
    "nvlink_tx_bytes",
    "power_mw",
    "energy_mj",
    "temp_c",
    "sm_clock_mhz",
    "gr_active_pct100",
    "sm_active_pct100",
    "sm_occupancy_pct100",
    "tensor_active_pct100",
    "dram_active_pct100",
    "fp64_active_pct100",
    "fp32_active_pct100",
    "fp16_active_pct100",
    "viol_power_ns",
    "viol_thermal_ns",
    NULL,
};

static const char sql_devices[] =
    "SELECT a.agent_id, n.hostname, d.idx, d.uuid, d.name,"
    " d.mem_total_bytes FROM devices d JOIN nodes n ON n.id = d.node_id"
    " LEFT JOIN agents a ON a.node_id = n.id ORDER BY n.hostname, d.idx";

/* Prometheus: the cluster's latest values. */
#define SQL_LATEST_HOST(L)                                                                         \
	"SELECT n.hostname, h.ts_ms, h.mem_total_bytes, h.mem_available_bytes, h.load1_milli,"     \
	" h.cpu_user_ms, h.cpu_nice_ms, h.cpu_system_ms, h.cpu_irq_ms, h.cpu_softirq_ms,"          \
	" h.cpu_idle_ms, h.cpu_iowait_ms, a.last_seen_ms, a.interval_ms"                           \
	" FROM nodes n" L(                                                                         \
	    "JOIN", "h", "host_samples", "node_id = n.id",                                         \
	    LATEST_ONE) " LEFT JOIN agents a ON a.node_id = n.id ORDER BY n.hostname"
static const char *const sql_latest_host[2] = LATEST_BOTH(SQL_LATEST_HOST);
#define SQL_LATEST_GPU(L)                                                                          \
	"SELECT n.hostname, d.idx, d.uuid, g.util_pct, g.mem_used_bytes, g.power_mw"               \
	" FROM devices d JOIN nodes n ON n.id = d.node_id" L(                                      \
	    "JOIN", "g", "gpu_samples", "device_id = d.id",                                        \
	    LATEST_ONE) " ORDER BY n.hostname, d.idx"
static const char *const sql_latest_gpu[2] = LATEST_BOTH(SQL_LATEST_GPU);

/*
 * gswarm's views of the agents (/metrics/latest): each agent's node with its
 * latest memory and root filesystem figures, and each of its GPUs with its
 * latest sample and the one before (NVLink counters make rates).
 */
#define SQL_GSWARM_NODES(L)                                                                        \
	"SELECT a.agent_id, n.hostname, a.last_seen_ms, a.interval_ms, h.mem_total_bytes,"         \
	" h.mem_available_bytes, f.used_bytes, f.total_bytes"                                      \
	" FROM agents a JOIN nodes n ON n.id = a.node_id" L("LEFT JOIN", "h", "host_samples",      \
							    "node_id = n.id", LATEST_ONE)          \
	    L("LEFT JOIN", "f", "fs_samples", "node_id = n.id",                                    \
	      LATEST_ONE) " ORDER BY n.hostname, a.agent_id"
static const char *const sql_gswarm_nodes[2] = LATEST_BOTH(SQL_GSWARM_NODES);
#define SQL_GSWARM_GPUS(L)                                                                         \
	"SELECT a.agent_id, d.idx, d.name, d.mem_total_bytes, g.util_pct, g.mem_used_bytes,"       \
	" g.pcie_rx_bps, g.pcie_tx_bps, g.ts_ms, g.nvlink_rx_bytes, g.nvlink_tx_bytes,"            \
	" p.ts_ms, p.nvlink_rx_bytes, p.nvlink_tx_bytes"                                           \
	" FROM agents a JOIN devices d ON d.node_id = a.node_id" L(                                \
	    "LEFT JOIN", "g", "gpu_samples", "device_id = d.id", LATEST_ONE)                       \
	    L("LEFT JOIN", "p", "gpu_samples", "device_id = d.id",                                 \
	      LATEST_ONE " OFFSET 1") " ORDER BY a.agent_id, d.idx"
static const char *const sql_gswarm_gpus[2] = LATEST_BOTH(SQL_GSWARM_GPUS);

/* history: schema 3 and later have reservations and summaries */
static const char sql_history_v3[] =
    "SELECT j.id, j.scheduler, j.job_id, COALESCE(j.user, ''), n.hostname, j.start_ms,"
    " j.end_ms, (SELECT MAX(ts_ms) FROM job_samples WHERE job_id = j.id),"
    " j.reserved_cpus, j.cores_allowed, s.cpu_ms, j.reserved_mem_bytes, s.rss_peak_bytes,"
    " j.reserved_gpus, s.gpus_used, s.gpu_util_avg_pct, s.job_id IS NOT NULL%s"
    " FROM jobs j JOIN nodes n ON n.id = j.node_id"
    " LEFT JOIN job_summaries s ON s.job_id = j.id"
    " WHERE j.start_ms < ?2 AND (j.end_ms IS NULL OR j.end_ms > ?1)"
    " AND (j.user = ?3 OR ?3 IS NULL) AND (n.hostname = ?4 OR ?4 IS NULL)"
    " ORDER BY j.start_ms, j.id";
static const char sql_history_v1[] =
    "SELECT j.id, j.scheduler, j.job_id, COALESCE(j.user, ''), n.hostname, j.start_ms,"
    " j.end_ms, (SELECT MAX(ts_ms) FROM job_samples WHERE job_id = j.id),"
    " NULL, j.cores_allowed, NULL, NULL, NULL, NULL, NULL, NULL, 0,"
    " NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"
    " FROM jobs j JOIN nodes n ON n.id = j.node_id"
    " WHERE j.start_ms < ?2 AND (j.end_ms IS NULL OR j.end_ms > ?1)"
    " AND (j.user = ?3 OR ?3 IS NULL) AND (n.hostname = ?4 OR ?4 IS NULL)"
    " ORDER BY j.start_ms, j.id";

/* A parameter: the number in decimal ("" when absent: bound as NULL). */
static const char *param_ms(char *buf, size_t size, bool has, int64_t ms)
{
	if (has)
		snprintf(buf, size, "%" PRId64, ms);
	else
		buf[0] = '\0';
	return buf;
}

static int query_json(struct store *st, const char *sql, const char *const *params, bool first_only,
		      struct jsonw *w)
{
	int64_t n;

	return store_query_json(st, sql, params, first_only, w, &n);
}

int store_query_nodes(struct store *st, int64_t now_ms, struct jsonw *w)
{
	char now[32];
	const char *p[] = {now, NULL};

	snprintf(now, sizeof(now), "%" PRId64, now_ms);
	return query_json(st, latest_sql(st, sql_nodes), p, false, w);
}

int store_query_gpus(struct store *st, struct jsonw *w)
{
	return query_json(st, latest_sql(st, sql_gpus), NULL, false, w);
}

/* "j1.<start_ms>.<id>": the version tag lets the format change without misreading old ones */
#define CURSOR_TAG "j1."

void store_jobs_cursor_format(const struct store_jobs_cursor *c, char *buf, size_t size)
{
	snprintf(buf, size, CURSOR_TAG "%" PRId64 ".%" PRId64, c->start_ms, c->id);
}

/* Decimal digits, no sign, no leading zero, up to end or a '.': *p moves past them. */
static int cursor_number(const char **p, int64_t *out)
{
	const char *s = *p;
	int64_t v = 0;

	if (*s < '0' || *s > '9' || (*s == '0' && s[1] >= '0' && s[1] <= '9'))
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (INT64_MAX - (*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	*p = s;
	return 0;
}

int store_jobs_cursor_parse(const char *s, struct store_jobs_cursor *out)
{
	struct store_jobs_cursor c;
	const char *p = s;

	if (!s || strnlen(s, STORE_JOBS_CURSOR_MAX) >= STORE_JOBS_CURSOR_MAX ||
	    strncmp(p, CURSOR_TAG, strlen(CURSOR_TAG)) != 0)
		return -EINVAL;
	p += strlen(CURSOR_TAG);
	if (cursor_number(&p, &c.start_ms) || *p++ != '.' || cursor_number(&p, &c.id) || *p ||
	    c.id <= 0)
		return -EINVAL;
	*out = c;
	return 0;
}

/* store_query_jobs' row counter: the caller's first limit rows, then the one that says "more". */
struct jobs_page {
	store_row_fn fn;
	void *arg;
	int64_t limit, rows;
	struct store_jobs_cursor last;
	bool more;
};

#define JOBS_PAGE_FULL 1 /* > 0: no error, only "stop" */

static int jobs_page_row(const struct store_row *r, void *arg)
{
	struct jobs_page *pg = arg;
	int ret;

	if (pg->rows == pg->limit) {
		pg->more = true;
		return JOBS_PAGE_FULL;
	}
	ret = pg->fn(r, pg->arg);
	if (ret)
		return ret < 0 ? ret : -ECANCELED;
	pg->rows++;
	pg->last.id = (int64_t)r->num[STORE_JOBS_COL_ID];
	pg->last.start_ms = (int64_t)r->num[STORE_JOBS_COL_START_MS];
	return 0;
}

int store_query_jobs(struct store *st, const struct store_jobs_filter *f, store_row_fn fn,
		     void *arg, bool *has_next, struct store_jobs_cursor *next)
{
	struct jobs_page pg = {
	    .fn = fn, .arg = arg, .limit = f->limit ? f->limit : STORE_JOBS_LIMIT_DEFAULT};
	char since[24], until[24], row[24], after_ms[24], after_id[24], limit[24], sql[4096];
	const char *p[] = {f->user ? f->user : "",
			   f->node ? f->node : "",
			   param_ms(since, sizeof(since), f->when.has_since, f->when.since_ms),
			   param_ms(until, sizeof(until), f->when.has_until, f->when.until_ms),
			   f->with_sessions ? "1" : "0",
			   param_ms(row, sizeof(row), f->job_row > 0, f->job_row),
			   param_ms(after_ms, sizeof(after_ms), f->has_after, f->after.start_ms),
			   param_ms(after_id, sizeof(after_id), f->has_after, f->after.id),
			   limit,
			   NULL};
	int ret;

	*has_next = false;
	if (pg.limit < 1 || pg.limit > STORE_JOBS_LIMIT_MAX || f->state < STORE_JOBS_ALL ||
	    f->state > STORE_JOBS_ENDED)
		return log_err(-EINVAL, "jobs: a limit of 1 to %d and a known state, please",
			       STORE_JOBS_LIMIT_MAX);
	snprintf(sql, sizeof(sql), sql_jobs_page, sluid_column(st), summary_gpm_columns(st),
		 jobs_use_columns, latest_sql(st, jobs_use_joins), jobs_state[f->state]);
	/* one more row than the page: is there a next page? */
	snprintf(limit, sizeof(limit), "%" PRId64, pg.limit + 1);
	ret = store_query_rows(st, sql, p, jobs_page_row, &pg);
	if (ret == JOBS_PAGE_FULL)
		ret = 0;
	if (ret)
		return ret;
	*has_next = pg.more;
	if (pg.more)
		*next = pg.last;
	return 0;
}

int store_query_job(struct store *st, int64_t job_row, struct jsonw *w)
{
	char id[32], sql[1024];
	const char *p[] = {id, NULL};

	snprintf(id, sizeof(id), "%" PRId64, job_row);
	snprintf(sql, sizeof(sql), sql_job, sluid_column(st));
	return query_json(st, sql, p, true, w);
}

/* A process row's CPU time as the model makes it; false when a count is NULL. */
static bool job_procs_cpu_ms(struct db_stmt *stmt, int64_t *out)
{
	struct proc_sample s = {0};

	if (db_column_type(stmt, JOB_PROCS_USER_MS) == SQLITE_NULL ||
	    db_column_type(stmt, JOB_PROCS_SYSTEM_MS) == SQLITE_NULL)
		return false;
	s.user_ms = (uint64_t)db_column_int64(stmt, JOB_PROCS_USER_MS);
	s.system_ms = (uint64_t)db_column_int64(stmt, JOB_PROCS_SYSTEM_MS);
	*out = (int64_t)proc_cpu_ms(&s);
	return true;
}

/* As store_query_json writes rows, with cpu_ms in the place of the two counters. */
int store_query_job_procs(struct store *st, int64_t job_row, struct jsonw *w)
{
	char id[32];
	const char *p[] = {id, NULL};
	struct db_stmt *stmt;
	int64_t cpu_ms;
	int rc, ret;

	snprintf(id, sizeof(id), "%" PRId64, job_row);
	ret = store__prepare(st, latest_sql(st, sql_job_procs), "query", &stmt);
	if (ret)
		return ret;
	store__bind_params(stmt, p);
	jsonw_arr_begin(w);
	while ((rc = db_step(stmt)) == SQLITE_ROW) {
		int ncols = db_column_count(stmt); /* known once run, for PostgreSQL */

		jsonw_obj_begin(w);
		for (int c = 0; c < ncols; c++) {
			if (c == JOB_PROCS_SYSTEM_MS)
				continue;
			if (c == JOB_PROCS_USER_MS) {
				jsonw_key(w, "cpu_ms");
				if (job_procs_cpu_ms(stmt, &cpu_ms))
					jsonw_int(w, cpu_ms);
				else
					jsonw_null(w);
				continue;
			}
			jsonw_key(w, db_column_name(stmt, c));
			store__json_column(w, stmt, c);
		}
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "query");
	db_finalize(stmt);
	return ret ? ret : jsonw_error(w);
}

int store_query_session_nodes(struct store *st, int64_t from_ms, int64_t to_ms, const char *nodes,
			      struct jsonw *w)
{
	char from[32], to[32];
	const char *p[] = {from, to, nodes, NULL};

	snprintf(from, sizeof(from), "%" PRId64, from_ms);
	snprintf(to, sizeof(to), "%" PRId64, to_ms);
	return query_json(st, sql_session_nodes, p, false, w);
}

int store_query_nodes_sent(struct store *st, int64_t from_ms, int64_t to_ms, store_row_fn fn,
			   void *arg)
{
	char from[32], to[32];
	const char *p[] = {from, to, NULL};

	snprintf(from, sizeof(from), "%" PRId64, from_ms);
	snprintf(to, sizeof(to), "%" PRId64, to_ms);
	return store_query_rows(st, sql_nodes_sent, p, fn, arg);
}

bool store_series_metric_ok(bool gpu, const char *metric)
{
	for (const char *const *m = gpu ? gpu_series : host_series; *m; m++)
		if (strcmp(*m, metric) == 0)
			return true;
	return false;
}

int store_query_series(struct store *st, const struct store_series_query *q, struct jsonw *w)
{
	char since[32], until[32], sql[768];
	const char *p[] = {
	    q->node, param_ms(since, sizeof(since), q->when.has_since, q->when.since_ms),
	    param_ms(until, sizeof(until), q->when.has_until, q->when.until_ms), q->gpu, NULL};
	bool gpu = q->gpu != NULL;

	if (!q->node || !q->metric || !store_series_metric_ok(gpu, q->metric))
		return log_err(-EINVAL, "no series of '%s'", q->metric ? q->metric : "");
	if (gpu)
		snprintf(sql, sizeof(sql), sql_series_gpu, q->metric,
			 st->schema_version >= 16 ? " AND d.mig = 0" : "");
	else
		snprintf(sql, sizeof(sql), sql_series_host, q->metric);
	return query_json(st, sql, p, false, w);
}

int store_query_device_rows(struct store *st, store_row_fn fn, void *arg)
{
	return store_query_rows(st, sql_devices, NULL, fn, arg);
}

int store_query_latest_host_rows(struct store *st, store_row_fn fn, void *arg)
{
	return store_query_rows(st, latest_sql(st, sql_latest_host), NULL, fn, arg);
}

int store_query_latest_gpu_rows(struct store *st, store_row_fn fn, void *arg)
{
	return store_query_rows(st, latest_sql(st, sql_latest_gpu), NULL, fn, arg);
}

int store_query_gswarm_nodes(struct store *st, store_row_fn fn, void *arg)
{
	return store_query_rows(st, latest_sql(st, sql_gswarm_nodes), NULL, fn, arg);
}

int store_query_gswarm_gpus(struct store *st, store_row_fn fn, void *arg)
{
	return store_query_rows(st, latest_sql(st, sql_gswarm_gpus), NULL, fn, arg);
}

int store_history_rows(struct store *st, int64_t since_ms, int64_t until_ms, const char *user,
		       const char *node, store_row_fn fn, void *arg)
{
	char since[24], until[24], sql[2048];
	const char *params[] = {since, until, user ? user : "", node ? node : "", NULL};

	snprintf(since, sizeof(since), "%" PRId64, since_ms);
	snprintf(until, sizeof(until), "%" PRId64, until_ms);
	/* the schema the store was opened with: no PRAGMA query per call */
	if (st->schema_version < 3)
		return store_query_rows(st, sql_history_v1, params, fn, arg);
	snprintf(sql, sizeof(sql), sql_history_v3, summary_gpm_columns(st));
	return store_query_rows(st, sql, params, fn, arg);
}
