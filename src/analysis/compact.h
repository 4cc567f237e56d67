/*
 * compact.h - `jobscope compact`'s work on a store, run now and to the
 * end as a list of steps over one write connection: every job's report
 * checkpoint brought up to date (ckptmaint.h), so that a report replays
 * only the rows after it; the rows older than older_than_ms packed
 * (store/upkeep.h); the free pages given back.  compact_unpack turns the
 * packs back into rows.  Each step says what it did (log_info).
 */
#ifndef JOBSCOPE_COMPACT_H
#define JOBSCOPE_COMPACT_H

#include <stdbool.h>
#include <stdint.h>

struct store;

struct compact_opts {
	int64_t older_than_ms;
	bool no_pack; /* checkpoints only */
};

/* Every step, the others run when one fails: 0, or -errno of the last that failed (said). */
int compact_store(struct store *st, const struct compact_opts *o);
/* The packs' rows back in their tables, then the free pages given back. */
int compact_unpack(struct store *st);

#endif
