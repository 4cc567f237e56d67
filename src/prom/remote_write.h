/*
 * remote_write.h - Prometheus remote write from a store (docs/remote-write.md).
 *
 * One thread per target URL reads the store by seq from the target's
 * cursor (schema 8's rw_cursors: the seq up to which it answered 2xx),
 * turns the fact rows into series named as the agent's /metrics names
 * them (docs/metrics.md), with a `node` label, and POSTs them as
 * snappy-compressed protobuf WriteRequests (rw_encode.h).  The cursor
 * moves, and is written to the store, only after every request of a batch
 * was answered 2xx; a 400 (or another 4xx but 429) is logged and that
 * request skipped; 5xx, 429 and network errors are retried with capped
 * backoff, so a receiver that was down gets everything once it is back.
 *
 * Lifecycle: rw_start (after the store exists), rw_kick after each tick,
 * rw_flush before a clean exit, rw_stop (joins).  rw_get_bound and
 * rw_hold_reads are safe from any thread; a NULL struct rw is "no remote
 * write" for every call.
 */
#ifndef JOBSCOPE_REMOTE_WRITE_H
#define JOBSCOPE_REMOTE_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "http/shipper.h"
#include "prom/rw_relabel.h"

#define RW_MAX_TARGETS	      8
#define RW_DEFAULT_MAX_SERIES 2000
#define RW_DEFAULT_BATCH_MS   5000 /* Prometheus' batch_send_deadline */

/* The options, shared by every target (cmd_agent.c, cmd_head.c). */
struct rw_opts {
	const char *urls[RW_MAX_TARGETS];
	int nurls;
	const char *bearer_token_file; /* "Authorization: Bearer <its contents>" */
	const char *basic_auth_file;   /* "user:password" */
	const char *ca_file;	       /* PEM CA bundle for https targets */
	const char *relabel[RW_RELABEL_MAX];
	int nrelabel;
	int max_series;	  /* series per request; 0: RW_DEFAULT_MAX_SERIES */
	int64_t batch_ms; /* when current, a request at most this often; 0: the default, -1: none */
};

struct rw;

/* interval_ms: how often to look for new rows when not kicked. */
int rw_start(const struct rw_opts *o, const char *db_path, int64_t interval_ms, struct rw **out);
void rw_kick(struct rw *r);
/* Waits until every target holds the store's rows (or timeout_ms): true when all do. */
bool rw_flush(struct rw *r, int64_t timeout_ms);
void rw_stop(struct rw *r);
/*
 * The retention bound: every target holds rows up to *acked_seq (the
 * least of them; -1 until each read its cursor); rows up to *sent_seq may
 * be on their way.  False when r is NULL.
 */
bool rw_get_bound(struct rw *r, int64_t *acked_seq, int64_t *sent_seq);
/* Target i's state (0 <= i < rw_targets(r)), for /metrics and /api/v1/node. */
struct rw_stats {
	const char *url;
	/* its shipper's state (http/shipper.h): connected (the last request was answered
	 * 2xx), acked_seq (every row up to it answered; -1: not read yet), max_seq,
	 * failures (network, 5xx, 429, 4xx), last_ok_ms, refused (401, 403), last_error */
	struct shipper_stats ship;
};
int rw_targets(struct rw *r);
void rw_get_stats(struct rw *r, int i, struct rw_stats *out);
void rw_hold_reads(struct rw *r);
void rw_release_reads(struct rw *r);

#endif
