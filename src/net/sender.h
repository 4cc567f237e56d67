/*
 * sender.h - the agent's stream to a head (docs/wire.md).
 *
 * A thread of its own reads the agent's store (its spool, through its own
 * read-only connection) from the cursor the head last acknowledged, sends
 * batches to POST <head>/api/v1/ingest over one keep-alive connection
 * (libcurl), and moves the cursor to what the head answers it holds.  Any
 * failure (head down, network cut, a 5xx, a restart of either side) is
 * retried from the cursor with capped exponential backoff: the store holds
 * everything not yet acknowledged, so there is no buffer to overflow.  A
 * 401 or 403 (a wrong or missing token) is said once as an error and asked
 * again every minute, or as soon as --token-file holds another token.  The
 * batch grows while there is a backlog, so it catches up after an outage.
 *
 * Lifecycle: sender_start (after the store exists), sender_kick after each
 * tick, sender_stop (joins; a send in flight is given its timeout).
 * sender_get_stats and sender_hold_reads are safe from any thread.
 */
#ifndef JOBSCOPE_SENDER_H
#define JOBSCOPE_SENDER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/progress.h"
#include "http/shipper.h"
#include "net/wire.h"

struct sender_opts {
	const char *url;	/* the head: "http://10.0.0.1:8091" */
	const char *token;	/* bearer token, or NULL */
	const char *token_file; /* where token was read: read again after a refusal; or NULL */
	const char *ca_file; /* PEM CA bundle to trust for an https head, or NULL: the system's */
	const char *db_path; /* the agent's store */
	struct store_sender who;
	/*
	 * Told of a catch-up (a backlog after an outage: rows sent, the part of
	 * it the head holds) from the sender's thread, finished once current;
	 * NULL: nobody.  It must stay valid until sender_stop.
	 */
	const struct progress_hook *progress;
};

struct sender_stats {
	/* the stream's own state (http/shipper.h): connected, cursor_known, acked_seq (what
	 * the head holds of us, when cursor_known), sent_seq, max_seq, batches, rows,
	 * failures, last_ok_ms, refused (the head refused our token), last_error */
	struct shipper_stats ship;
	int64_t head_interval_ms; /* what the head last asked for (0: nothing) */
	bool head_cuda;		  /* ... whether it asked for CUDA tables */
};

struct sender;

int sender_start(const struct sender_opts *o, struct sender **out);
void sender_kick(struct sender *s);
void sender_stop(struct sender *s);
/*
 * Waits until the head holds every row the store had when called (or
 * timeout_ms passed): true when it does.  For a clean shutdown.
 */
bool sender_flush(struct sender *s, int64_t timeout_ms);
void sender_get_stats(struct sender *s, struct sender_stats *out);
/*
 * While held, the sender reads no batch from the store: the agent's
 * retention holds it from reading the bound (acked_seq, sent_seq) until
 * its step committed, so no batch on its way to the head holds a row the
 * step counted lost.  NULL: nothing to hold.
 */
void sender_hold_reads(struct sender *s);
void sender_release_reads(struct sender *s);

#endif
