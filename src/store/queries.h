/*
 * queries.h - the store's named read queries: the SQL behind the head's
 * read API (/api/v1/..., /metrics, /metrics/latest, /status), the jobs
 * list the head and the agent page through, and the history of
 * reservations, so that no module above the store holds SQL.
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
#include <stddef.h>
#include <stdint.h>

#include "common/jsonw.h"
#include "store/store.h"
#include "store/reader.h"

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

/*
 * The jobs list, a page at a time: newest first by start_ms, then by row
 * id (unique), so a page starts exactly after the last row of the one
 * before (the cursor) and paging while jobs are added neither skips nor
 * repeats a job.  A job is running while its row has no end_ms.
 */
#define STORE_JOBS_LIMIT_DEFAULT 100
#define STORE_JOBS_LIMIT_MAX	 10000

enum store_jobs_state { STORE_JOBS_ALL, STORE_JOBS_RUNNING, STORE_JOBS_ENDED };

/* Where a page ends: the (start_ms, row id) of its last job. */
struct store_jobs_cursor {
	int64_t start_ms, id;
};
/* A cursor's text: opaque to clients, at most this long with its NUL. */
#define STORE_JOBS_CURSOR_MAX 48
void store_jobs_cursor_format(const struct store_jobs_cursor *c, char *buf, size_t size);
/* A cursor store_jobs_cursor_format wrote: 0, or -EINVAL for anything else. */
int store_jobs_cursor_parse(const char *s, struct store_jobs_cursor *out);

struct store_jobs_filter {
	const char *user, *node;  /* NULL or "": any */
	struct store_window when; /* jobs that overlap it */
	enum store_jobs_state state;
	bool with_sessions; /* the "session" scheduler's jobs too (the agent lists them) */
	int64_t job_row;    /* > 0: that row only */
	bool has_after;	    /* a page after this cursor; else the first page */
	struct store_jobs_cursor after;
	int64_t limit; /* 1..STORE_JOBS_LIMIT_MAX; 0: STORE_JOBS_LIMIT_DEFAULT */
};

/* The columns of a row of store_query_jobs, in order. */
enum store_jobs_col {
	STORE_JOBS_COL_ID,
	STORE_JOBS_COL_KEY, /* scheduler:job_id:start_ms */
	STORE_JOBS_COL_NODE,
	STORE_JOBS_COL_SCHEDULER,
	STORE_JOBS_COL_JOB_ID,
	STORE_JOBS_COL_STEP,
	STORE_JOBS_COL_USER,
	STORE_JOBS_COL_UID,
	STORE_JOBS_COL_COMMAND,
	STORE_JOBS_COL_START_MS,
	STORE_JOBS_COL_END_MS,
	STORE_JOBS_COL_CGROUP,
	STORE_JOBS_COL_QOS,
	STORE_JOBS_COL_RESERVATION_SOURCE,
	STORE_JOBS_COL_RESERVED_CPUS,
	STORE_JOBS_COL_RESERVED_MEM_BYTES,
	STORE_JOBS_COL_RESERVED_GPUS,
	STORE_JOBS_COL_RESERVED_GPU_LIST,
	STORE_JOBS_COL_SLUID,	    /* Slurm 26.05's name of the job's cgroup; NULL if none */
	STORE_JOBS_COL_HAS_SUMMARY, /* 1 when it has a summary, else 0 */
	/* the summary's figures: NULL while it runs (or when none was stored) */
	STORE_JOBS_COL_CPU_MS,
	STORE_JOBS_COL_CPU_EFFICIENCY_PCT,
	STORE_JOBS_COL_RSS_PEAK_BYTES,
	STORE_JOBS_COL_MEM_EFFICIENCY_PCT,
	STORE_JOBS_COL_GPUS_USED,
	STORE_JOBS_COL_GPU_UTIL_AVG_PCT,
	STORE_JOBS_COL_GPU_ENERGY_MJ,
	STORE_JOBS_COL_NAME, /* its name (jobscope run --name, SLURM_JOB_NAME), or NULL */
	/* what the SMs did, the job's part (schema 17; NULL: unknown, or an older store) */
	STORE_JOBS_COL_SM_ACTIVE_AVG_PCT,
	STORE_JOBS_COL_SM_OCCUPANCY_AVG_PCT,
	STORE_JOBS_COL_TENSOR_ACTIVE_AVG_PCT,
	STORE_JOBS_COL_DRAM_ACTIVE_AVG_PCT,
	STORE_JOBS_COL_FP64_ACTIVE_AVG_PCT,
	STORE_JOBS_COL_FP32_ACTIVE_AVG_PCT,
	STORE_JOBS_COL_FP16_ACTIVE_AVG_PCT,
	STORE_JOBS_COL_THROTTLE_POWER_S,
	STORE_JOBS_COL_THROTTLE_THERMAL_S,
	/* a running job's use now (NULL when it ended, or for what is not known) */
	STORE_JOBS_COL_USE_TS_MS,	       /* its last job_samples row */
	STORE_JOBS_COL_USE_CPU_MS,	       /* its CPU so far, at that row */
	STORE_JOBS_COL_USE_RSS_BYTES,	       /* resident memory at that row */
	STORE_JOBS_COL_USE_CORES,	       /* cores busy over its last rows */
	STORE_JOBS_COL_USE_CPU_EFFICIENCY_PCT, /* over its life so far */
	STORE_JOBS_COL_USE_GPU_UTIL_PCT,       /* its processes' SM %, per GPU they are on */
	STORE_JOBS_COL__COUNT
};

/*
 * One page of the jobs f selects: fn is called with each row (columns
 * above; every figure as the store holds it, NULL as NULL), at most
 * f->limit of them; fn returns 0, or -errno to stop with it.  *has_next
 * says whether another page follows; then *next is the cursor to ask it
 * with.  -EINVAL for a limit or state out of range.
 */
int store_query_jobs(struct store *st, const struct store_jobs_filter *f, store_row_fn fn,
		     void *arg, bool *has_next, struct store_jobs_cursor *next);
/* One job's row (its object, or null when there is no such row). */
int store_query_job(struct store *st, int64_t job_row, struct jsonw *w);
/* [{"pid", "ppid", "uid", "comm", "sampled_ms", "cpu_ms", "rss_bytes"}]: its live processes' last
 * rows */
int store_query_job_procs(struct store *st, int64_t job_row, struct jsonw *w);
/*
 * What each node sent between from_ms and to_ms (nodes: "a,b", or NULL or
 * "" for every node): node, frames, first_ms, last_ms.
 */
int store_query_session_nodes(struct store *st, int64_t from_ms, int64_t to_ms, const char *nodes,
			      struct jsonw *w);

/* The nodes with a host row in [from_ms, to_ms]: hostname, by name. */
int store_query_nodes_sent(struct store *st, int64_t from_ms, int64_t to_ms, store_row_fn fn,
			   void *arg);

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
 * gswarm's /metrics/latest.  Each agent's node, by hostname: agent_id,
 * hostname, last_seen_ms, interval_ms, and the latest mem_total_bytes,
 * mem_available_bytes, root filesystem used_bytes and total_bytes (NULL
 * when none).  Each GPU of every agent's node, in one query, by agent_id
 * and index: agent_id, idx, name, mem_total_bytes, then of its latest
 * sample util_pct, mem_used_bytes, pcie_rx_bps, pcie_tx_bps, ts_ms,
 * nvlink_rx_bytes, nvlink_tx_bytes, then of the sample before ts_ms,
 * nvlink_rx_bytes, nvlink_tx_bytes.
 */
int store_query_gswarm_nodes(struct store *st, store_row_fn fn, void *arg);
int store_query_gswarm_gpus(struct store *st, store_row_fn fn, void *arg);

/*
 * The jobs that ran in [since_ms, until_ms) (user, node: NULL or "" for
 * any), by start: id, scheduler, job_id, user ("" when none), hostname,
 * start_ms, end_ms, the last job sample's ts_ms, reserved_cpus,
 * cores_allowed, cpu_ms, reserved_mem_bytes, rss_peak_bytes,
 * reserved_gpus, gpus_used, gpu_util_avg_pct, whether it has a
 * summary (1/0), then (from column STORE_HISTORY_COL_GPM) the summary's
 * sm_active_avg_pct, sm_occupancy_avg_pct, tensor_active_avg_pct,
 * dram_active_avg_pct, fp64_active_avg_pct, fp32_active_avg_pct,
 * fp16_active_avg_pct, throttle_power_s, throttle_thermal_s.  Stores
 * before schema 3 have no reservations and no summaries: those columns
 * are NULL, "has a summary" 0; before schema 17 the last nine are NULL.
 */
enum { STORE_HISTORY_COL_GPM = 17, STORE_HISTORY_GPM_COLS = 9 };
int store_history_rows(struct store *st, int64_t since_ms, int64_t until_ms, const char *user,
		       const char *node, store_row_fn fn, void *arg);

#endif
