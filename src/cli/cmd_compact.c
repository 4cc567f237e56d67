/*
 * cmd_compact.c - `jobscope compact`: the store's upkeep that readers
 * profit from, run now and to the end, as a list of steps over one write
 * connection: every job's report checkpoint brought up to date
 * (analysis/ckptmaint.h), so that a report replays only the rows after
 * it; the rows older than --older-than packed (store.h, packs); the free
 * pages given back.  --unpack instead turns packs back into rows.
 */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/ckptmaint.h"
#include "cli.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "store/store.h"
#include "store/upkeep.h"

static const char compact_usage[] =
    "usage: jobscope compact [--db PATH] [--older-than DUR] [--no-pack]\n"
    "       jobscope compact [--db PATH] --unpack\n"
    "\n"
    "Bring the store's report checkpoints up to date: each job's report state\n"
    "after its rows so far, saved in the store, so that `jobscope report` (and\n"
    "the agent, and a head) replays only the rows after it.  Then pack the raw\n"
    "rows older than DUR into compressed column blobs (readers see no change;\n"
    "an agent's rows only up to what its head acknowledged) and give the freed\n"
    "pages back.  Agents and `jobscope run` do both as they go (--pack-after,\n"
    "--report-checkpoint); this does all of it now (after copying a store, or\n"
    "for a store kept plain).\n"
    "--unpack turns every pack back into plain rows, for SQL on the file with\n"
    "the sqlite3 shell (which does not see inside packs).\n"
    "\n"
    "Options:\n"
    "      --db PATH          the store (default ~/.local/share/jobscope/jobscope.db)\n"
    "      --older-than DUR   pack only rows older than DUR; leave checkpoints that\n"
    "                         are at most DUR behind their job's last row, and\n"
    "                         jobs shorter than DUR without one (default 0:\n"
    "                         every row, every job up to its end)\n"
    "      --no-pack          checkpoints only: the rows stay plain\n"
    "      --unpack           packs back into rows (nothing else is done)\n"
    "  -h, --help             show this help\n"
    "\n"
    "Exit status: 0 done; 1 a step failed (the others ran); 2 usage error or\n"
    "unusable store.\n";

struct compact_opts {
	int64_t older_than_ms;
	bool unpack, no_pack;
};

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

/* --unpack: the packs' rows back in their tables. */
static int unpack(struct store *st)
{
	uint64_t before, after;
	int64_t rows;
	int ret = store_unpack(st, &rows);

	if (ret)
		return ret;
	log_info("compact: %lld rows unpacked", (long long)rows);
	return store_reclaim(st, &before, &after);
}

static int cmd_compact(int argc, char **argv)
{
	enum { OPT_DB = 256, OPT_OLDER, OPT_UNPACK, OPT_NO_PACK };
	static const struct option longopts[] = {
	    {"db", required_argument, NULL, OPT_DB},
	    {"older-than", required_argument, NULL, OPT_OLDER},
	    {"unpack", no_argument, NULL, OPT_UNPACK},
	    {"no-pack", no_argument, NULL, OPT_NO_PACK},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct compact_opts o = {0};
	const char *db = NULL;
	char dflt[4096];
	struct store *st;
	int c, exit_code = 0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_DB:
			db = optarg;
			break;
		case OPT_OLDER:
			if (parse_duration_ms(optarg, &o.older_than_ms) || o.older_than_ms < 0)
				return cli_usage_error("compact", "bad --older-than '%s' (30m, 2h)",
						       optarg);
			break;
		case OPT_UNPACK:
			o.unpack = true;
			break;
		case OPT_NO_PACK:
			o.no_pack = true;
			break;
		case 'h':
			fputs(compact_usage, stdout);
			return 0;
		default:
			return cli_option_error("compact", c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("compact", "unexpected argument '%s'", argv[optind]);
	if (!db) {
		if (cli_default_db(dflt, sizeof(dflt)))
			return EXIT_USAGE;
		db = dflt;
	}
	/* compacting creates no store */
	if (access(db, F_OK) != 0)
		return log_err(EXIT_USAGE, "cannot open store '%s': %s", db, strerror(errno));
	if (cli_open_store(db, STORE_CREATE, &st))
		return EXIT_USAGE;
	if (o.unpack) {
		exit_code = unpack(st) ? EXIT_FAIL : 0;
		store_close(st);
		return exit_code;
	}
	for (size_t i = 0; i < sizeof(compact_steps) / sizeof(compact_steps[0]); i++)
		if (compact_steps[i].run(st, &o)) {
			log_err(0, "compact: the step '%s' failed", compact_steps[i].name);
			exit_code = EXIT_FAIL;
		}
	store_close(st);
	return exit_code;
}

const struct cli_command cmd_compact_def = {
    "compact",
    cmd_compact,
    "bring report checkpoints up to date, pack old rows (or --unpack them)",
    compact_usage,
};
