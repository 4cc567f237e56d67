/*
 * queries.h - the store's named read queries: the SQL behind the head's
 * read API (/api/v1/..., /metrics, /metrics/latest, /status) and behind the
 * history of reservations, so that no module above the store holds SQL.
 *
 * The *_json queries write their rows into w as JSON (an array of objects
 * keyed by column name, as store_query_json does; integer columns named
 * "is_*" or "healthy" as booleans); the *_rows queries call fn with each
 * row (struct store_row) in the column order given here.  What comes from
 * a request only binds parameters; a series' metric is checked against a
 * fixed list before it is named in SQL.
 *
 * Errors: 0 or -errno, printed (the store's convention); fn returning
 * non-zero stops and is returned.  Not thread-safe: the store's thread.
 */
#ifndef JOBSCOPE_STORE_QUERIES_H
#define JOBSCOPE_STORE_QUERIES_H

#include <stdbool.h>
#include <stdint.h>

#include "common/jsonw.h"
#include "store/store.h"

/* Rows the list queries (jobs) answer at most. */
#define STORE_QUERY_MAX_ROWS 10000
/* Points a series answers at most. */
#define STORE_SERIES_MAX_POINTS 100000

typedef int (*store_row_fn)(const struct store_row *r, void *arg);

/* A window of time, each end optional (ms since the epoch). */
struct store_window {
	bool has_since, has_until;
	int64_t since_ms, until_ms;
};

/*
 * Every node with its latest host sample and its agent (healthy: sent
 * within 3 of its intervals at now_ms): node, cores, mem_total_bytes,
 * agent_id, last_seen_ms, interval_ms, acked_seq, healthy, ts_ms,
 * mem_available_bytes, load1_milli, procs_running, gpus.
 */
int store_query_nodes(struct store *st, int64_t now_ms, struct jsonw *w);
/*
 * Every GPU with its latest sample: node, index, uuid, name, vendor,
 * mem_total_bytes, ts_ms, util_pct, mem_used_bytes, power_mw, temp_c,
 * pcie_rx_bps, pcie_tx_bps.
 */
int store_query_gpus(struct store *st, struct jsonw *w);

/* Jobs (not sessions) by start, newest first, at most STORE_QUERY_MAX_ROWS. */
struct store_jobs_filter {
	const char *user, *node;  /* NULL or "": any */
	struct store_window when; /* jobs that overlap it */
};
int store_query_jobs(struct store *st, const struct store_jobs_filter *f, struct jsonw *w);
/* One job's row (its object, or null when there is no such row). */
int store_query_job(struct store *st, int64_t job_row, struct jsonw *w);
/*
 * What each node sent between from_ms and to_ms (nodes: "a,b", or NULL or
 * "" for every node): node, frames, first_ms, last_ms.
 */
int store_query_session_nodes(struct store *st, int64_t from_ms, int64_t to_ms, const char *nodes,
			      struct jsonw *w);

/* Whether metric is a column a series may be of (gpu: of gpu_samples, else host_samples). */
bool store_series_metric_ok(bool gpu, const char *metric);
/*
 * A node's raw samples of one metric (ts_ms, value) in time order, at most
 * STORE_SERIES_MAX_POINTS; gpu: the index of one of its GPUs (NULL: the
 * host's).  -EINVAL for a metric store_series_metric_ok refuses.
 */
struct store_series_query {
	const char *node, *metric, *gpu;
	struct store_window when;
};
int store_query_series(struct store *st, const struct store_series_query *q, struct jsonw *w);

/*
 * Every GPU of every node, by hostname and index: agent_id (of the node's
 * agent, "" when none), hostname, idx, uuid, name, mem_total_bytes.
 */
int store_query_device_rows(struct store *st, store_row_fn fn, void *arg);
/*
 * Each node's latest host sample, by hostname: hostname, ts_ms,
 * mem_total_bytes, mem_available_bytes, load1_milli, user CPU ms (user +
 * nice), system CPU ms (system + irq + softirq), idle CPU ms, iowait CPU
 * ms, and its agent's last_seen_ms and interval_ms (NULL without agent).
 */
int store_query_latest_host_rows(struct store *st, store_row_fn fn, void *arg);
/* Each GPU's latest sample, by hostname and index: hostname, idx, uuid, util_pct,
 * mem_used_bytes, power_mw. */
int store_query_latest_gpu_rows(struct store *st, store_row_fn fn, void *arg);

/*
 * The jobs that ran in [since_ms, until_ms) (user, node: NULL or "" for
 * any), by start: id, scheduler, job_id, user ("" when none), hostname,
 * start_ms, end_ms, the last job sample's ts_ms, reserved_cpus,
 * cores_allowed, cpu_ms, reserved_mem_bytes, rss_peak_bytes,
 * reserved_gpus, gpus_used, gpu_util_avg_pct, and whether it has a
 * summary (1/0).  Stores before schema 3 have no reservations and no
 * summaries: those columns are NULL, the last 0.
 */
int store_history_rows(struct store *st, int64_t since_ms, int64_t until_ms, const char *user,
		       const char *node, store_row_fn fn, void *arg);

#endif
