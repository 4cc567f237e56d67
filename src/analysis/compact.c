/* compact.c - `jobscope compact`'s steps (compact.h). */
#include "analysis/compact.h"

#include <errno.h>
#include <stdlib.h>

#include "analysis/ckptmaint.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "store/store.h"
#include "store/upkeep.h"

struct compact_step {
	const char *name;
	int (*run)(struct store *st, const struct compact_opts *o);
};

/* Every due job, a bounded batch at a time, until none is left. */
static int step_report_ckpts(struct store *st, const struct compact_opts *o)
{
	struct report_ckpt_opts ro = {.lag_ms = o->older_than_ms, .max_rows = INT64_MAX / 2};
	/* tests: one pass of at most N rows per job, which leaves checkpoints mid-job */
	const char *rows = getenv("JOBSCOPE_CKPT_ROWS");
	int64_t t0 = time_now_ms();
	int total = 0, done, ret;

	if (rows && atoll(rows) > 0)
		ro.max_rows = atoll(rows);
	do {
		ret = report_ckpt_maintain(st, time_now_ms(), &ro, &done);
		total += done;
	} while (!ret && done > 0 && ro.max_rows == INT64_MAX / 2);
	log_info("compact: %d report checkpoints made in %lld ms", total,
		 (long long)(time_now_ms() - t0));
	return ret;
}

/* Rows older than --older-than, never past an agent's head's acknowledged seq. */
static int step_pack(struct store *st, const struct compact_opts *o)
{
	struct store_pack_result res, total = {0};
	int64_t t0 = time_now_ms(), max_seq = INT64_MAX;
	char acked[32];
	int ret;

	if (o->no_pack)
		return 0;
	if (store_meta_get(st, "head_acked_seq", acked, sizeof(acked)) == 0 && atoll(acked) > 0)
		max_seq = atoll(acked);
	do {
		ret = store_pack_step(st, t0 - o->older_than_ms, max_seq, STORE_PACK_STEP_SEQS * 16,
				      &res);
		if (ret == -EOPNOTSUPP) {
			log_info("compact: a head's store: its rows stay plain");
			return 0;
		}
		total.rows += res.rows;
		total.packs += res.packs;
		total.bytes += res.bytes;
		total.raw_bytes += res.raw_bytes;
	} while (!ret && res.more);
	log_info("compact: %lld rows packed into %lld packs, %lld bytes (%lld before zstd), in "
		 "%lld ms",
		 (long long)total.rows, (long long)total.packs, (long long)total.bytes,
		 (long long)total.raw_bytes, (long long)(time_now_ms() - t0));
	return ret;
}

static int step_reclaim(struct store *st, const struct compact_opts *o)
{
	uint64_t before, after;
	int ret = store_reclaim(st, &before, &after);

	(void)o;
	if (!ret)
		log_info("compact: the file went from %llu to %llu bytes",
			 (unsigned long long)before, (unsigned long long)after);
	return ret;
}

static const struct compact_step compact_steps[] = {
    {"report checkpoints", step_report_ckpts},
    {"packs", step_pack},
    {"free pages", step_reclaim},
};

int compact_unpack(struct store *st)
{
	uint64_t before, after;
	int64_t rows;
	int ret = store_unpack(st, &rows);

	if (ret)
		return ret;
	log_info("compact: %lld rows unpacked", (long long)rows);
	return store_reclaim(st, &before, &after);
}

int compact_store(struct store *st, const struct compact_opts *o)
{
	int ret = 0;

	for (size_t i = 0; i < sizeof(compact_steps) / sizeof(compact_steps[0]); i++) {
		int r = compact_steps[i].run(st, o);

		if (r) {
			log_err(0, "compact: the step '%s' failed", compact_steps[i].name);
			ret = r;
		}
	}
	return ret;
}
