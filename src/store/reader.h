/*
 * reader.h - reading a store: queries as JSON or rows, jobs by id, key or
 * in order, a job's rows replayed (replay.c), and report checkpoints
 * (ckpt.c).  Errors and threads: store.h.
 */
#ifndef JOBSCOPE_STORE_READER_H
#define JOBSCOPE_STORE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/jsonw.h"
#include "common/strbuf.h"
#include "store/store.h"

/*
 * Runs one read-only SELECT and writes its rows into w as JSON objects
 * keyed by column name (an array; or only the first row's object, or null,
 * with first_only); integer columns named "is_*" or "healthy" as booleans.
 * params: NULL-terminated strings bound to ?1, ?2...,
 * as integers when they are integers, NULL for "".  For query endpoints
 * whose SQL is the caller's own (never built from input).  *nrows: rows.
 */
int store_query_json(struct store *st, const char *sql, const char *const *params, bool first_only,
		     struct jsonw *w, int64_t *nrows);

/* The same, a row at a time: each column as text, as a number, and whether NULL. */
#define STORE_ROW_MAX 48 /* the jobs list has 43 */
struct store_row {
	int ncols;
	const char *text[STORE_ROW_MAX]; /* "" for NULL */
	double num[STORE_ROW_MAX];
	bool null[STORE_ROW_MAX];
};
int store_query_rows(struct store *st, const char *sql, const char *const *params,
		     int (*fn)(const struct store_row *r, void *arg), void *arg);

/* Reader */
int store_get_job(struct store *st, int64_t id, struct job_record *out);
/*
 * The row of the job with that key: 0, or -ENOENT.  start_ms matches within
 * STORE_JOB_START_SLACK_MS (process start times are computed from a boot
 * time each agent start measures anew); *stored_start_ms receives the row's.
 */
#define STORE_JOB_START_SLACK_MS 50
int store_find_job(struct store *st, int64_t node_id, const char *scheduler, const char *job_id,
		   int64_t start_ms, int64_t *id, int64_t *stored_start_ms);
/*
 * The latest job (by start) whose key matches "scheduler:job_id:start_ms",
 * "scheduler:job_id" or "job_id": 0, -ENOENT, or -EINVAL for a malformed key.
 */
int store_find_job_key(struct store *st, const char *key, int64_t *id);
/* A job's summary as JSON (job_summaries.report_json) into out: 0 or -ENOENT. */
int store_get_job_summary_json(struct store *st, int64_t id, struct strbuf *out);
/* Jobs in start order; fn returning non-zero stops and is returned. */
int store_for_each_job(struct store *st, int (*fn)(const struct job_record *job, void *arg),
		       void *arg);

/*
 * Replays a job's rows in the order they were written (seq): host samples
 * of its node between its start and end, its job samples, its processes'
 * samples and its events, with its node's `interval` events (store/tick.h:
 * the one in effect at its start and those up to its end).  Any callback
 * may be NULL.  The pointers passed
 * are valid only during the call.
 */
struct store_replay_ops {
	void (*host)(void *arg, int64_t ts_ms, const struct host_sample *h);
	void (*job)(void *arg, int64_t ts_ms, const struct job_sample *s);
	void (*proc)(void *arg, const struct proc_info *p, int64_t ts_ms,
		     const struct proc_sample *s);
	void (*event)(void *arg, const struct event_record *e);
	/* GPUs of the job's node in its window (schema 2 and later) */
	void (*gpu)(void *arg, const struct device_record *dev, int64_t ts_ms,
		    const struct gpu_sample *s);
	/* p: the job's process, or NULL for another process on the device */
	void (*gpu_proc)(void *arg, const struct device_record *dev, const struct proc_info *p,
			 int64_t ts_ms, const struct gpu_proc *g);
	/*
	 * Host samples with their totals only: no per-CPU, per-disk and
	 * per-interface rows (two thirds of a tick's rows on a 32-core node);
	 * cpu.ncpus then comes from the host row and cpu.cpu[] is not filled,
	 * ndisks and nnets are 0.
	 */
	bool host_totals_only;
};
int store_replay_job(struct store *st, int64_t id, const struct store_replay_ops *ops, void *arg);
/*
 * Part of a replay, for a report restored from a checkpoint (table
 * report_ckpts).  after_seq: only rows with a larger seq (0: from the
 * first); from_ms: the host and GPU rows from then on (they are written
 * tick by tick, so a node's seq grows with their time; 0: from the job's
 * start); upto_seq: no row with a larger seq (0: no bound; with it, rows
 * committed later do not split what was read); max_rows: stop after so
 * many (0: no bound).  Out: last_seq, the seq of the last row replayed
 * (after_seq when none); last_ms, the latest time of a row replayed other
 * than an event (from_ms when none); complete, whether every row up to upto_seq
 * (or all) was replayed.
 */
struct store_replay_span {
	int64_t after_seq, from_ms, upto_seq, max_rows;
	int64_t last_seq, last_ms;
	/* in and out: the same of host and GPU rows (their window ends with the job) */
	int64_t last_window_ms;
	bool complete;
};
int store_replay_job_span(struct store *st, int64_t id, const struct store_replay_ops *ops,
			  void *arg, struct store_replay_span *span);
/*
 * The job's processes (procs rows) and its node's devices, as they are
 * now; either callback may be NULL.
 */
struct store_replay_dims {
	void (*proc)(void *arg, const struct proc_info *p);
	void (*device)(void *arg, const struct device_record *dev);
};
int store_replay_job_dims(struct store *st, int64_t id, const struct store_replay_dims *dims,
			  void *arg);

/*
 * Report checkpoints (table report_ckpts, schema 6): a job's report state
 * after every row up to seq, whose last row (events aside) was at ts_ms, as
 * an opaque blob of a format (analysis/reportckpt.h makes and reads them).
 * get: 0 (data malloc'd, the caller frees it), -ENOENT (none, or a store
 * older than schema 6).  put: inserts or replaces; -EPROTONOSUPPORT on a
 * store older than schema 6.
 */
struct store_ckpt {
	int64_t job_id, seq, ts_ms, format, made_ms;
	void *data;
	size_t size;
};
int store_ckpt_get(struct store *st, int64_t job_id, struct store_ckpt *out);
int store_ckpt_put(struct store *st, const struct store_ckpt *c);
/*
 * The jobs whose checkpoint is due, oldest first: none yet and the job's
 * rows span more than lag_ms (shorter jobs get none), or one of another
 * format, more than lag_ms behind the job's last job row, or the job has
 * ended after the checkpoint's last tick.  Jobs without rows are left
 * out.  fn returning non-zero stops and is returned.
 */
struct store_ckpt_due {
	int64_t job_id;
	bool has_ckpt;
	int64_t seq, ts_ms, format; /* the checkpoint's, when has_ckpt */
	int64_t last_ms;	    /* the job's last job row */
};
int store_ckpt_for_each_due(struct store *st, int64_t lag_ms, int64_t format,
			    int (*fn)(const struct store_ckpt_due *d, void *arg), void *arg);

#endif
