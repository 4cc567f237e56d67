/*
 * sync.h - a store streamed to a head and to remote-write targets: the
 * agent's side (export.c, rwcursor.c) and the head's (ingest.c), with the
 * agents a head knows.  The row set and batch types: store/rowset.h.
 * Errors and threads: store.h.
 */
#ifndef JOBSCOPE_STORE_SYNC_H
#define JOBSCOPE_STORE_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

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
		       struct store_rowset *out, int64_t *to_seq, int64_t *max_seq, int64_t *nrows);
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
int store_ingest(struct store *st, const struct store_batch *b, int64_t now_ms, int64_t *acked_seq,
		 char *errmsg, size_t errmsg_size);
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
int store_ingest_group(struct store *st, struct store_ingest_item *items, size_t n, int64_t now_ms);
/* An agent streaming to this store (a head's). */
struct agent_record {
	char agent_id[64];
	char hostname[256];
	int64_t acked_seq, first_seen_ms, last_seen_ms, interval_ms, batches, rows, gpus;
	bool has_gaps;		 /* false: a store older than schema 5 */
	int64_t gaps, lost_rows; /* its gap records, and the rows they say it lost */
};
/* Agents by hostname; fn returning non-zero stops and is returned. */
int store_for_each_agent(struct store *st, int (*fn)(const struct agent_record *a, void *arg),
			 void *arg);
/* What the store holds of an agent: 0 and *acked_seq (0 for a new agent). */
int store_agent_cursor(struct store *st, const char *agent_id, int64_t *acked_seq);

#endif
