/*
 * profiling.h - a head's profiling sessions, the requests applications
 * post to it, and a session's data frame by frame or on a frame clock
 * (sessions.c, frames.c).  Errors and threads: store.h.
 */
#ifndef JOBSCOPE_STORE_PROFILING_H
#define JOBSCOPE_STORE_PROFILING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

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
	int64_t end_ms;		       /* 0 while active */
	int64_t interval_ms;	       /* 0: the agents' own */
	char nodes[SESSION_NODES_MAX]; /* "a,b" or "" for every node */
	bool cuda;		       /* asks its nodes' agents for CUDA tables (schema 9) */
	char owner[64]; /* the head's user who started it (schema 13); "": a token, the CLI */
};
/* -EEXIST when a session of that name is active. */
int store_session_start(struct store *st, struct session_record *s);
/*
 * Stops the active session `name` (NULL: every active one) of owner (NULL:
 * anyone's); *stopped: how many.
 */
int store_session_stop(struct store *st, const char *name, const char *owner, int64_t end_ms,
		       int *stopped);
/* Changes with each session started or stopped through st (a cache of them is stale). */
uint64_t store_sessions_generation(const struct store *st);
/* Sessions by start (active_only: those still running). */
int store_for_each_session(struct store *st, bool active_only,
			   int (*fn)(const struct session_record *s, void *arg), void *arg);
/* The latest session of that name: 0 or -ENOENT. */
int store_session_get(struct store *st, const char *name, struct session_record *out);

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
				   int (*fn)(const struct request_record *r, void *arg), void *arg);

#endif
