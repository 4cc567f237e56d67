/*
 * store.h - the embedded SQLite store: schema, writer and reader.
 *
 * One file, WAL mode, one transaction per tick.  Integer columns with units
 * in their names (ms since the epoch, bytes, ms of CPU).  Missing values are
 * NULL.  The schema is versioned with PRAGMA user_version and marked with
 * PRAGMA application_id = 0x4A53434F ('JSCO'); a file that is not ours is
 * never written to, and a newer schema is refused.
 *
 * Every fact row (host_samples, cpu_samples, disk_samples, net_samples,
 * proc_samples, job_samples, events; gap records too) has a `seq` drawn
 * from one counter that only grows, the resend cursor for agents
 * (DESIGN.md section 5).
 *
 * Errors: 0 or -errno; a function that fails has printed a message naming
 * the file (log.h).  -EPROTO: not a jobscope store (foreign or corrupt),
 * -EPROTONOSUPPORT: written by a newer jobscope, -ENOSPC: disk full,
 * -ENOENT: no such job.  A failed tick is rolled back whole and the store
 * stays usable.  Not thread-safe: one store per thread.
 *
 * Where it lives (src/store/): open.c open, close, meta; schema.c the
 * schema and its migrations; writer.c nodes, jobs, ticks and every put;
 * read.c jobs and queries; replay.c store_replay_job; retention.c;
 * sessions.c and frames.c (a head's sessions); export.c and ingest.c
 * (streaming to a head, as row sets: rowset.h); cuda.c (the CUDA tables).
 * Headers of their own:
 * tick.h (one tick's rows, for run and the agent), rollup.h, queries.h
 * (the named read queries), rowset.h.  Internal headers: conn.h (the
 * connection, error helpers), schema.h, writer.h, column.h.
 */
#ifndef JOBSCOPE_STORE_H
#define JOBSCOPE_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "attrib/job.h"
#include "common/jsonw.h"
#include "common/strbuf.h"
#include "app/appstat.h"
#include "cuda/cudastat.h"
#include "sample/gpu/gpu.h"
#include "sample/host.h"
#include "sample/sample.h"

#define STORE_SCHEMA_VERSION 10
#define STORE_APPLICATION_ID 0x4A53434F
/*
 * Stores up to this size get a full PRAGMA quick_check when opened: about
 * 40 ms, which a report can pay (a packed week of an 8-GPU node is 115 MB,
 * 0.16 s of checking: more than its report).
 */
#define STORE_QUICK_CHECK_MAX_BYTES ((int64_t)32 << 20)

struct store;

enum store_open_flags {
	STORE_READONLY = 0,
	STORE_CREATE = 1u << 0, /* create the file and its parent directories */
	/* no quick_check at open: another connection of this process just did it */
	STORE_CHECKED = 1u << 1,
};

int store_open(const char *path, unsigned flags, struct store **out);
void store_close(struct store *st);
/*
 * Every commit fsynced (PRAGMA synchronous = FULL): for a head, which
 * acknowledges commits.  In PostgreSQL (whose commits are durable) it
 * makes st the database's one writer instead: a session advisory lock,
 * -EBUSY when another head holds it (two would draw the same seqs).
 */
int store_set_durable(struct store *st);
/*
 * WAL checkpoints: by default the commit that fills 1000 pages of WAL runs
 * one (and waits for it).  A writer that must not wait (the head's
 * committer) turns that off, and another connection runs store_checkpoint
 * (PASSIVE: it copies what no reader still needs, beside the writer).
 */
#define STORE_WAL_RESTART_FRAMES 16384 /* pages: 64 MiB of WAL at 4 KiB */
int store_set_autocheckpoint(struct store *st, bool on);
int store_checkpoint(struct store *st);
const char *store_path(const struct store *st);

/* The meta table: a value by key (0, or -ENOENT), and setting one. */
int store_meta_get(struct store *st, const char *key, char *buf, size_t size);
int store_meta_set(struct store *st, const char *key, const char *value);

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

/* A tick: begin, puts, commit.  On a failed put, call store_tick_abort. */
int store_tick_begin(struct store *st);
int store_tick_commit(struct store *st);
void store_tick_abort(struct store *st);

int store_put_host(struct store *st, int64_t node_id, int64_t ts_ms, const struct host_sample *h);
/* procs dimension row; *proc_row receives its id.  Upsert on (node,pid,start). */
int store_put_proc_info(struct store *st, int64_t node_id, int64_t job_row,
			const struct proc_info *p, int64_t *proc_row);
/* Marks a process ended (end_ms) or renamed after exec (comm, cmdline). */
int store_update_proc_info(struct store *st, int64_t proc_row, const struct proc_info *p);
int store_put_proc_sample(struct store *st, int64_t proc_row, int64_t ts_ms,
			  const struct proc_sample *s);
int store_put_job_sample(struct store *st, int64_t job_row, int64_t ts_ms,
			 const struct job_sample *s);
int store_put_event(struct store *st, int64_t node_id, int64_t job_row,
		    const struct event_record *e);

/* A GPU of a node (devices table). */
struct device_record {
	int64_t id; /* row id */
	char vendor[16];
	char driver_version[GPU_VERSION_MAX];
	struct gpu_device_info info;
};

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

/*
 * Retention, applied a little at a time: each call deletes at most
 * `budget` rows per table, oldest first, so it never stalls a tick.
 *   raw rows (samples, events) older than raw_ms, but none the head does
 *   not hold; gap records older than raw_ms that it holds; 1-minute
 *   rollups older than m1_ms; 1-hour rollups older than h1_ms (0: keep for
 *   ever); then, while the file's used size is above max_bytes (0: no
 *   cap), the oldest raw rows (gap records never), then the oldest
 *   1-minute, then 1-hour rollups.
 * head: what a head holds of this store (NULL: no head, no bound).  Only
 * the size cap deletes rows it does not hold, never those in doubt (sent,
 * unanswered: the head may have committed them), and each step that does
 * writes a gap record (table gaps, with a seq of its own, so it streams to
 * the head) and adds to the meta counters lost_rows_total and gaps_total,
 * in the same transaction.  The step keeps head's two seqs in meta
 * (head_acked_seq, head_sent_seq), so a restarted agent has its bound
 * before its head answers.  Jobs and their summaries are never deleted.
 */
struct store_retention {
	int64_t raw_ms, m1_ms, h1_ms;
	uint64_t max_bytes;
};
/*
 * A head's retention: every fact row older than cutoff_ms goes.  In a
 * PostgreSQL store the day partitions that end by then are dropped whole
 * (*dropped: how many) and older rows of the default partitions deleted;
 * in a file, rows are deleted 10,000 at a time.  *deleted: rows deleted.
 * Jobs, summaries, sessions and gap records stay.
 */
int store_drop_before(struct store *st, int64_t cutoff_ms, int64_t *dropped, int64_t *deleted);

struct store_head_bound {
	int64_t acked_seq; /* the head holds every row up to it */
	int64_t sent_seq;  /* rows in (acked_seq, sent_seq] were sent and not answered */
};
/* A gap record: rows deleted before a head held them. */
struct store_gap {
	int64_t seq, node_id;
	char hostname[256]; /* of node_id; "" when not known */
	int64_t ts_ms;	    /* when the rows were deleted */
	bool has_span;
	int64_t from_ms, to_ms;	  /* the times of the rows lost (has_span) */
	int64_t from_seq, to_seq; /* their seqs in the store that lost them */
	int64_t rows;
	char reason[32]; /* "size_cap" */
};
/* What a step did: rows deleted; of them, rows lost (then *gap says which). */
struct store_retention_result {
	int64_t deleted;
	int64_t lost;
	struct store_gap gap;
};
int store_retention_step(struct store *st, int64_t now_ms, const struct store_retention *r,
			 const struct store_head_bound *head, int budget,
			 struct store_retention_result *res);
/*
 * Gap records of node_id (0: every node) whose rows' times meet
 * [from_ms, to_ms], by node and then oldest first (from_seq); fn returning non-zero stops and is
 * returned.  A store older than schema 5 has none.
 */
int store_for_each_gap(struct store *st, int64_t node_id, int64_t from_ms, int64_t to_ms,
		       int (*fn)(const struct store_gap *g, void *arg), void *arg);
/* Bytes the store's pages hold (page_count - freelist_count) * page_size. */
int store_used_bytes(struct store *st, uint64_t *bytes);

/*
 * Packing (docs/store.md, Packs): every fact row written before before_ms,
 * with seq <= max_seq (an agent's head's acknowledged seq; INT64_MAX
 * without a head), moved into compressed column blobs in one transaction,
 * at most max_seqs seqs past the last step's cut (0: no limit).  Readers
 * see no difference.  Not inside a tick.  0 or -errno (-EINVAL: a
 * read-only store or an open tick; -EOPNOTSUPP: a head's store, which is
 * never packed); a store older than schema 6 packs nothing.
 */
struct store_pack_result {
	int64_t rows, packs;
	int64_t bytes;	   /* the packs' blobs */
	int64_t raw_bytes; /* the same before zstd */
	int64_t cut_seq;   /* every row at or below it is packed */
	bool more;	   /* max_seqs stopped the step short */
};
int store_pack_step(struct store *st, int64_t before_ms, int64_t max_seq, int64_t max_seqs,
		    struct store_pack_result *res);

/*
 * Packing as a writer goes (the agent's tick, `jobscope run`'s): a step of
 * at most STORE_PACK_STEP_SEQS when due, packing what is older than
 * after_ms (0: never), then the next one after_ms later, or at the next
 * call while a backlog lasts.  max_seq as store_pack_step's.  Zero-init
 * the struct, then set after_ms.  Failures are logged and retried later.
 */
#define STORE_PACK_STEP_SEQS 65536
struct store_packer {
	int64_t after_ms;
	int64_t next_ms;
	struct store_pack_result total; /* what every step so far packed */
};
void store_pack_tick(struct store *st, struct store_packer *p, int64_t now_ms, int64_t max_seq);
/*
 * Every pack back into plain rows, in one transaction (`jobscope compact
 * --unpack`: for plain SQL on the file).  Packing as the writers go
 * starts again unless they are told --pack-after 0.  *rows: rows restored.
 */
int store_unpack(struct store *st, int64_t *rows);
/*
 * The file's free pages given back (incremental vacuum, or VACUUM for a
 * file made without auto_vacuum) and the WAL truncated; the file's size
 * before and after.  Not inside a tick.
 */
int store_reclaim(struct store *st, uint64_t *bytes_before, uint64_t *bytes_after);

/*
 * Streaming to a head (docs/wire.md).  The agent side: every fact row with
 * after_seq < seq <= *to_seq (at most max_rows of them: seq is one counter
 * across the fact tables) and the dimension rows they reference, read in
 * one transaction into out (released first; a table only when it has
 * rows, facts first).  *max_seq: the highest seq when read; *nrows: rows.
 * The row set and batch types: store/rowset.h.
 */
struct store_rowset;
struct store_batch;
int store_export_batch(struct store *st, int64_t after_seq, int64_t max_rows,
		       struct store_rowset *out, int64_t *to_seq, int64_t *max_seq,
		       int64_t *nrows);
/* The highest seq of any fact row (0 in an empty store). */
int store_max_seq(struct store *st, int64_t *max_seq);
/*
 * As store_export_batch over the seqs (after_seq, after_seq + max_seqs],
 * but only host_samples, gpu_samples and job_samples, with the devices and
 * jobs they reference: what remote write sends (prom/remote_write.c).
 */
int store_export_metrics(struct store *st, int64_t after_seq, int64_t max_seqs,
			 struct store_rowset *out, int64_t *to_seq, int64_t *max_seq,
			 int64_t *nrows);

/*
 * Remote-write cursors (rwcursor.c, schema 8): the seq up to which a
 * target URL answered 2xx.  get: 0, -ENOENT (never written; also a store
 * older than schema 8), or -errno.  set: one autocommit upsert.
 */
int store_rw_cursor_get(struct store *st, const char *url, int64_t *acked_seq);
int store_rw_cursor_set(struct store *st, const char *url, int64_t acked_seq, int64_t now_ms);
/* nodes.hostname of node_id into buf: 0, -ENOENT, or -errno. */
int store_node_hostname(struct store *st, int64_t node_id, char *buf, size_t size);

/*
 * The head side: commits a batch (net/wire.c decodes it) in one
 * transaction and says which seq of this agent the store now holds
 * (*acked_seq).  Rows at or below what it held already are skipped, so a
 * batch sent twice changes nothing.  -EINVAL (with errmsg filled) for a
 * batch that does not fit the schema: nothing is written.
 */
int store_ingest(struct store *st, const struct store_batch *b, int64_t now_ms,
		 int64_t *acked_seq, char *errmsg, size_t errmsg_size);
/*
 * Group commit: the batches that arrived together, in one transaction
 * (fsynced on a durable store), each in a savepoint of its own.  Each
 * item's ret: 0 (committed, acked_seq set) or -EINVAL (refused alone,
 * errmsg says why).  Returns 0 when the group committed; otherwise the
 * error (-ENOSPC, -EIO, ...) that rolled the whole group back, which is
 * then every item's ret as well.
 */
struct store_ingest_item {
	const struct store_batch *b;
	int ret;
	int64_t acked_seq;
	char errmsg[256];
};
int store_ingest_group(struct store *st, struct store_ingest_item *items, size_t n,
		       int64_t now_ms);
/* An agent streaming to this store (a head's). */
struct agent_record {
	char agent_id[64];
	char hostname[256];
	int64_t acked_seq, first_seen_ms, last_seen_ms, interval_ms, batches, rows, gpus;
	bool has_gaps;		  /* false: a store older than schema 5 */
	int64_t gaps, lost_rows; /* its gap records, and the rows they say it lost */
};
/* Agents by hostname; fn returning non-zero stops and is returned. */
int store_for_each_agent(struct store *st, int (*fn)(const struct agent_record *a, void *arg),
			 void *arg);
/* What the store holds of an agent: 0 and *acked_seq (0 for a new agent). */
int store_agent_cursor(struct store *st, const char *agent_id, int64_t *acked_seq);

/*
 * Profiling sessions (a head's): named, concurrent, overlapping windows of
 * time over all nodes or some, each with the interval the agents sample at
 * while it is active.  Kept in the store, so they outlive a head restart.
 */
#define SESSION_NAME_MAX  128
#define SESSION_NODES_MAX 1024
struct session_record {
	int64_t id;
	char name[SESSION_NAME_MAX];
	int64_t start_ms;
	int64_t end_ms;	     /* 0 while active */
	int64_t interval_ms; /* 0: the agents' own */
	char nodes[SESSION_NODES_MAX]; /* "a,b" or "" for every node */
	bool cuda;		       /* asks its nodes' agents for CUDA tables (schema 9) */
};
/* -EEXIST when a session of that name is active. */
int store_session_start(struct store *st, struct session_record *s);
/* Stops the active session `name` (NULL: every active one); *stopped: how many. */
int store_session_stop(struct store *st, const char *name, int64_t end_ms, int *stopped);
/* Sessions by start (active_only: those still running). */
int store_for_each_session(struct store *st, bool active_only,
			   int (*fn)(const struct session_record *s, void *arg), void *arg);
/* The latest session of that name: 0 or -ENOENT. */
int store_session_get(struct store *st, const char *name, struct session_record *out);
/*
 * What the active sessions ask of a node: the smallest interval among
 * those covering it (0: none asks), whether one asks for CUDA tables, and
 * their names, apart by 0x1f (a name holds no control character).
 */
int store_session_control(struct store *st, const char *hostname, int64_t *interval_ms,
			  bool *cuda, char *names, size_t size);

/*
 * Per-request timings an application posts to a head (gswarm's POST
 * /profiling/record): kept with the time they came, so that every session
 * whose window holds that time shows them.  other: a JSON object of more
 * named times in seconds (as the request gave it, re-serialized), or NULL.
 */
#define REQUEST_APP_MAX 256
struct request_record {
	int64_t id;
	int64_t ts_ms;
	char app[REQUEST_APP_MAX];
	double queue_s, processing_s;
	const char *other; /* JSON object text, or NULL */
};
int store_request_add(struct store *st, struct request_record *r);
/* The requests recorded in [from_ms, to_ms] (to_ms 0: up to now), by app then time. */
int store_for_each_request(struct store *st, int64_t from_ms, int64_t to_ms,
			   int (*fn)(const struct request_record *r, void *arg), void *arg);

/* A session's data, frame by frame (every tick of every node in its window). */
struct session_frame_gpu {
	int index;
	char uuid[GPU_UUID_MAX];
	char name[GPU_NAME_MAX];
	double util_pct, mem_used_bytes, pcie_rx_bps, pcie_tx_bps; /* NAN: missing */
	double nvlink_rx_bps, nvlink_tx_bps, power_w;
};
struct session_frame {
	int64_t frame_id; /* from 0, over the nodes in hostname order */
	const char *hostname;
	int64_t ts_ms;
	/* the node's figures over the interval that ended at this tick; NAN: missing */
	double cpu_util_pct, mem_used_bytes, load1;
	double disk_read_bps, disk_write_bps, net_rx_bps, net_tx_bps;
	int ngpus;
	struct session_frame_gpu gpu[GPU_MAX_DEVICES];
};
/* now_ms: the end of a session still active. */
int store_for_each_frame(struct store *st, const struct session_record *s, int64_t now_ms,
			 int (*fn)(const struct session_frame *f, void *arg), void *arg);

/*
 * A session on a frame clock, as gswarm-profiler's head sees its clients
 * (frames.c): at start + k * period_ms for k = 1, 2... up to its end (now_ms
 * while active), every node of the session and every GPU of those nodes,
 * each with its latest row at or before that time and that row's time.
 * The nodes are those with host or GPU rows from 3 of their intervals
 * before the start on, by hostname; their GPUs those with rows, by index:
 * the same lists in every tick.  Whether a row is too old to count is the
 * reader's call (interval_ms is there for it).  NAN: missing.
 */
struct session_tick_node {
	char hostname[256];
	int64_t interval_ms; /* its agents' sampling interval, at least the session's; else 1000 */
	int64_t host_ts_ms;  /* the latest host row's time; 0: none yet */
	double mem_total_bytes, mem_available_bytes;
	int64_t fs_ts_ms; /* the latest fs_samples row's (its root filesystem); 0: none yet */
	double fs_used_bytes, fs_total_bytes;
};
struct session_tick_gpu {
	size_t node; /* in nodes[] */
	int index;
	char name[GPU_NAME_MAX];
	double mem_total_bytes;
	int64_t ts_ms; /* the latest sample's time; 0: none yet */
	double util_pct, mem_used_bytes, pcie_rx_bps, pcie_tx_bps;
};
struct session_tick {
	int64_t frame_id; /* from 1 */
	int64_t ts_ms;
	size_t nnodes, ngpus;
	const struct session_tick_node *nodes;
	const struct session_tick_gpu *gpus;
};
int store_for_each_session_tick(struct store *st, const struct session_record *s, int64_t now_ms,
				int64_t period_ms,
				int (*fn)(const struct session_tick *t, void *arg), void *arg);
/*
 * The requests of [from_ms, to_ms] (to_ms 0: up to now) in the order they
 * came (row order), an app's all together, the apps by their first request:
 * the order gswarm's head lists them in (a dict of lists, filled as posted).
 */
int store_for_each_request_arrived(struct store *st, int64_t from_ms, int64_t to_ms,
				   int (*fn)(const struct request_record *r, void *arg),
				   void *arg);

/*
 * Runs one read-only SELECT and writes its rows into w as JSON objects
 * keyed by column name (an array; or only the first row's object, or null,
 * with first_only); integer columns named "is_*" or "healthy" as booleans.
 * params: NULL-terminated strings bound to ?1, ?2...,
 * as integers when they are integers, NULL for "".  For query endpoints
 * whose SQL is the caller's own (never built from input).  *nrows: rows.
 */
int store_query_json(struct store *st, const char *sql, const char *const *params,
		     bool first_only, struct jsonw *w, int64_t *nrows);

/* The same, a row at a time: each column as text, as a number, and whether NULL. */
#define STORE_ROW_MAX 32
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

/*
 * CUDA tables (cuda.c, schema 9: cuda_procs and cuda_stats): each process's
 * newest snapshot of what the CUDA hook counted (cuda/cudastat.h), kept
 * with the job for ever, like its summary.  pid 0 is the job's own row:
 * its state and message are the job's note (no stats).
 *
 * put: replaces the (job, pid) row and all its stats with p's, at once:
 * in the tick's transaction when one is open (store_tick_begin: committed
 * or rolled back with the tick), else in a transaction of its own.  The
 * row takes the next fact seq, so the agent's batches to a head carry the
 * snapshots that changed (export.c) and the head puts them in turn
 * (ingest.c: the newest replaces the older).  Stats
 * of one kind and name given twice are merged (cuda_stat_merge).  Counts
 * and sizes are kept bit for bit (an INTEGER column holds a uint64_t
 * above 2^63 as negative; read back it is the same).  -EPROTONOSUPPORT
 * on a store older than schema 9, -EINVAL for a pid below 0.
 *
 * get: every process of the job, by pid (NULL and 0 when none, also in a
 * store older than schema 9); the caller frees each with
 * cuda_proc_release and the array with free.  A row of a kind or state
 * this version does not know is skipped (a stat) or read as "error".
 */
int store_put_cuda_proc(struct store *st, int64_t job_id, const struct cuda_proc *p,
			int64_t now_ms);
int store_get_cuda_procs(struct store *st, int64_t job_id, struct cuda_proc **procs,
			 size_t *nprocs);

/*
 * App metrics and markers (app.c, schema 10: app_samples; marks, schema 1).
 *
 * put_app_points: one row per point, all at ts_ms (the tick's time), each
 * taking the next fact seq; in the tick's transaction when one is open
 * (store_tick_begin), else in one of its own.  A point with count 0 is
 * not stored.  -EPROTONOSUPPORT on a store older than schema 10.
 * put_app_marks: one marks row each (name, text; value NULL).
 *
 * for_each_app_point: the job's rows with from_ms <= ts_ms < to_ms (0,
 * INT64_MAX: all), by ts_ms then name, type, tags; fn's non-zero stops
 * and is returned.  A row whose type or sketch this version cannot read is
 * skipped.  get_app_marks: the job's markers by time (NULL and 0 when
 * none, also on an older store); free the array with free.
 */
int store_put_app_points(struct store *st, int64_t job_id, int64_t ts_ms,
			 const struct app_point *pts, size_t n);
int store_put_app_marks(struct store *st, int64_t job_id, const struct app_mark *marks, size_t n);
int store_for_each_app_point(struct store *st, int64_t job_id, int64_t from_ms, int64_t to_ms,
			     int (*fn)(void *arg, int64_t ts_ms, const struct app_point *p),
			     void *arg);
int store_get_app_marks(struct store *st, int64_t job_id, struct app_mark **marks, size_t *n);

/*
 * Host energy (energy.c, schema 10: energy_samples): each RAPL zone's
 * cumulative counter at a tick, in uJ, with the value it wraps at (0:
 * unknown).  get: the node's samples with from_ms <= ts_ms < to_ms, by
 * zone then time; free the array with free.
 */
struct store_energy_sample {
	int64_t ts_ms;
	char zone[64]; /* "package-0", "package-0/dram", "psys" ... */
	uint64_t energy_uj;
	uint64_t max_uj;
};
int store_put_energy_samples(struct store *st, int64_t node_id,
			     const struct store_energy_sample *s, size_t n);
int store_get_energy_samples(struct store *st, int64_t node_id, int64_t from_ms, int64_t to_ms,
			     struct store_energy_sample **out, size_t *n);

/*
 * Libraries and frameworks a process loaded (libs.c, schema 10: proc_libs),
 * one row per (process, name) when first seen.  get: a job's, distinct by
 * name and version, with the number of its processes that loaded each.
 */
struct store_proc_lib {
	char name[64];	   /* "pytorch", "cuda-runtime", "nccl", ... */
	char version[64];  /* "" when unknown */
	char path[256];	   /* the file it was seen in */
	int64_t nprocs;	   /* get: processes of the job that loaded it */
};
int store_put_proc_libs(struct store *st, int64_t proc_id, int64_t ts_ms,
			const struct store_proc_lib *libs, size_t n);
int store_get_job_libs(struct store *st, int64_t job_id, struct store_proc_lib **out, size_t *n);

#endif
