/*
 * cmd_compact.c - `jobscope compact`: its options and exit status; the
 * store's upkeep that readers profit from, run now and to the end, is
 * analysis/compact.h's.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/compact.h"
#include "cli.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "store/store.h"
#include "store/upkeep.h"

static const char compact_head[] =
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
    "\n";

static const char compact_tail[] =
    "\n"
    "Exit status: 0 done; 1 a step failed (the others ran); 2 usage error or\n"
    "unusable store.\n";

static int cmd_compact(int argc, char **argv)
{
	static const struct opt_cmd cmd = {"compact", compact_head, compact_tail, 25, 0, 0};
	struct compact_opts o = {0};
	const char *db = NULL;
	bool unpack = false;
	const struct opt opts[] = {
	    OPT_STRING(0, "db", &db, "PATH",
		       "the store (default ~/.local/share/jobscope/jobscope.db)"),
	    OPT_DURATION(0, "older-than", &o.older_than_ms, 0, 0, "30m, 2h",
			 "pack only rows older than DUR; leave checkpoints that\n"
			 "are at most DUR behind their job's last row, and\n"
			 "jobs shorter than DUR without one (default 0:\n"
			 "every row, every job up to its end)"),
	    OPT_FLAG(0, "no-pack", &o.no_pack, "checkpoints only: the rows stay plain"),
	    OPT_FLAG(0, "unpack", &unpack, "packs back into rows (nothing else is done)"),
	    OPT_END(),
	};
	char dflt[4096];
	struct store *st;
	int first, exit_code = 0;

	exit_code = opt_parse(&cmd, opts, argc, argv, &first);
	if (exit_code)
		return exit_code == OPT_DONE ? 0 : exit_code;
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
	exit_code = (unpack ? compact_unpack(st) : compact_store(st, &o)) ? EXIT_FAIL : 0;
	store_close(st);
	return exit_code;
}

const struct cli_command cmd_compact_def = {
    "compact",
    cmd_compact,
    "bring report checkpoints up to date, pack old rows (or --unpack them)",
};
