/*
 * write.h - the store's writes (writer.c; store/tick.h writes one tick with
 * them): nodes, jobs, the tick's transaction, every fact and dimension row,
 * job summaries and rollups.  Errors and threads: store.h.
 */
#ifndef JOBSCOPE_STORE_WRITE_H
#define JOBSCOPE_STORE_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* nodes: one row per hostname; *node_id receives its id. */
int store_node(struct store *st, const char *hostname, int32_t cores, uint64_t mem_total_bytes,
	       int64_t boot_ms, int64_t *node_id);

/*
 * Inserts the job (job->id set).  A "run" job with an empty job_id (a
 * `jobscope run`) is named by its row id; the agent, seeing a run from
 * outside, gives the run's own id.
 */
int store_job_begin(struct store *st, struct job_record *job);
/*
 * Rewrites job job->id as it stands now: end, exit, counts, and what is
 * learned after begin (pid, ...).  Its key (node, scheduler, job_id,
 * start) does not change.
 */
int store_job_update(struct store *st, const struct job_record *job);

/*
 * A tick: begin, puts, commit.  On a failed put, call store_tick_abort.
 *
 * A writable connection is always in one of these states (writer.c's
 * header lists them in full, the way SQLite's pager lists its own, with
 * what holds in each):
 *
 *   IDLE         no transaction open (in_tick false).  A put outside a tick
 *                runs in a transaction of its own: BEGIN, next_seq brought
 *                up to the file's (another writer may have added rows),
 *                the rows, COMMIT; back to IDLE either way, and after a
 *                failure rolled back with next_seq as it was.
 *   TICK         store_tick_begin: BEGIN, next_seq brought up to the file's
 *                and kept as tick_seq, in_tick set, tick_err 0.  Each put
 *                joins the transaction; each fact row takes next_seq++.
 *   TICK_FAILED  a put failed inside the tick: tick_err holds its -errno.
 *                SQLite may already have rolled the transaction back, so
 *                every later put returns tick_err and writes nothing (rows
 *                must never go out one by one in autocommit).
 *
 *   commit  TICK: COMMIT, IDLE; if COMMIT fails, as TICK_FAILED.
 *           TICK_FAILED: ROLLBACK, next_seq = tick_seq, tick_err returned;
 *           IDLE.
 *   abort   ROLLBACK, next_seq = tick_seq; IDLE.  IDLE: nothing.
 *
 * store_tick_begin in TICK or TICK_FAILED is refused (-EINVAL): a tick
 * never nests.  So a seq is never used twice and a tick is all or nothing;
 * the caller's process-row cache follows (tick.h: rows kept or lost).
 */
int store_tick_begin(struct store *st);
int store_tick_commit(struct store *st);
void store_tick_abort(struct store *st);

int store_put_host(struct store *st, int64_t node_id, int64_t ts_ms, const struct host_sample *h);
/*
 * procs dimension row; *proc_row receives its id.  Upsert on (node,pid,start).
 * container: a pod's process's container name (schema 14), or NULL.
 */
int store_put_proc_info(struct store *st, int64_t node_id, int64_t job_row,
			const struct proc_info *p, const char *container, int64_t *proc_row);
/*
 * Marks a process ended (end_ms) or renamed after exec (comm, cmdline; its
 * container, learned at its exec, or NULL: unchanged).
 */
int store_update_proc_info(struct store *st, int64_t proc_row, const struct proc_info *p,
			   const char *container);
int store_put_proc_sample(struct store *st, int64_t proc_row, int64_t ts_ms,
			  const struct proc_sample *s);
int store_put_job_sample(struct store *st, int64_t job_row, int64_t ts_ms,
			 const struct job_sample *s);
int store_put_event(struct store *st, int64_t node_id, int64_t job_row,
		    const struct event_record *e);

/* devices: one row per (node, uuid), refreshed; *device_row receives its id. */
int store_put_device(struct store *st, int64_t node_id, struct device_record *dev);
int store_put_gpu_sample(struct store *st, int64_t device_row, int64_t ts_ms,
			 const struct gpu_sample *s);
/*
 * One process on a GPU at one tick: the job's with its procs row (proc_row),
 * and everybody else's summed into one row with pid 0 and proc_row 0, so
 * that a reader can split the device's energy between the job and the rest.
 */
int store_put_gpu_proc(struct store *st, int64_t device_row, int64_t proc_row, int64_t job_row,
		       int64_t ts_ms, const struct gpu_proc *p);

/*
 * A job's summary at its end (kept for ever, unlike the samples): the
 * figures history queries need as columns, and the whole report as JSON.
 * Missing values: has_* false / NAN for the percentages.
 */
struct job_summary_record {
	int64_t job_row;
	int64_t wall_ms;
	uint64_t cpu_ms;
	double cpu_avg_cores, cpu_peak_cores, cpu_efficiency_pct;
	uint64_t rss_peak_bytes;
	double mem_efficiency_pct;
	bool has_io;
	uint64_t read_bytes, write_bytes;
	int32_t gpus_used;
	double gpu_util_avg_pct, gpu_util_p95_pct;
	bool has_gpu_mem;
	uint64_t gpu_mem_peak_bytes;
	bool has_gpu_energy;
	uint64_t gpu_energy_mj;
	/*
	 * What the SMs did (schema 17), the job's part over the GPUs it used
	 * as its report's analysis.efficiency.gpu has them: activity percent
	 * 0-100, throttle GPU-seconds.  Written only with has_gpu_prof, and
	 * then each NAN as NULL (unknown).
	 */
	bool has_gpu_prof;
	double sm_active_avg_pct, sm_occupancy_avg_pct, tensor_active_avg_pct, dram_active_avg_pct;
	double fp64_active_avg_pct, fp32_active_avg_pct, fp16_active_avg_pct;
	double throttle_power_s, throttle_thermal_s;
	const char *report_json; /* may be NULL */
};
/* Inserts or replaces the summary of job job_row. */
int store_put_job_summary(struct store *st, const struct job_summary_record *s);

/*
 * Rollups: min/avg/max of one metric of one entity over a bucket of
 * tier_ms (60000: the 1-minute tier, 3600000: the 1-hour tier).  entity is
 * "host" (entity_id 0), "job" (job row id) or "gpu" (device row id).
 */
struct rollup_record {
	int64_t tier_ms;
	int64_t node_id;
	const char *entity;
	int64_t entity_id;
	const char *metric;
	int64_t ts_ms; /* bucket start */
	int64_t n;
	double min, avg, max;
};
int store_put_rollup(struct store *st, const struct rollup_record *r);

#endif
