/*
 * upkeep.h - keeping a store's size: retention (retention.c), a head's
 * partitions dropped (pgschema.c), the heads of one PostgreSQL database
 * and their upkeep lease (heads.c), packs of closed rows (packer.c) and the
 * file's free pages given back.  Errors and threads: store.h.
 */
#ifndef JOBSCOPE_STORE_UPKEEP_H
#define JOBSCOPE_STORE_UPKEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

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
 * Heads on one PostgreSQL database (heads.c; a file has one head: every
 * call does nothing, store_head_beat says it holds the lease).  A head
 * beats every few seconds: its row's seen_ms is the server's clock, and it
 * takes or renews the upkeep lease for lease_ms (*holder: it holds it
 * now); only the holder runs retention, report checkpoints, remote write
 * and annotations.  A holder that dies stops renewing, and another head
 * takes the lease once it expired.
 */
struct head_record {
	char id[128];	    /* HOSTNAME:PID:STARTED_MS */
	char hostname[256]; /* where it runs */
	char listen[128];   /* its --listen, with the port it got */
	int64_t pid, started_ms;
	int64_t seen_ms;	  /* its last beat (the database's clock) */
	bool holds_lease;	  /* store_for_each_head: it holds the upkeep lease now */
	int64_t lease_expires_ms; /* when that lease expires unless renewed; 0: not the holder */
};
int store_heads_setup(struct store *st);
int store_head_beat(struct store *st, const struct head_record *me, int64_t lease_ms, bool *holder);
int store_head_leave(struct store *st, const char *id);
/* Every head that beat in the last day, oldest first; *now_ms: the database's clock. */
int store_for_each_head(struct store *st, int64_t *now_ms,
			int (*fn)(const struct head_record *h, void *arg), void *arg);

#endif
