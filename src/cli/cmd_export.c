/*
 * cmd_export.c - `jobscope export --session NAME`: a profiling session's
 * data from a head's store, as JSON frames in gswarm-profiler's shape (but
 * numbers, not strings; utilization 0-100; units named in the file) or CSV.
 * This file parses the options, opens the store and picks the exit code;
 * report/session_export.c renders the frames.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/log.h"
#include "report/session_export.h"
#include "store/store.h"

#define EXPORT_DEFAULT_DB "/var/lib/jobscope/head.db"

static const char export_usage[] =
    "usage: jobscope export --session NAME [--db PATH] [--format json|csv] [-o FILE]\n"
    "\n"
    "Write a profiling session's data from a head's store: every sample of its\n"
    "nodes in its window, as frames (GPU arrays in gswarm-profiler's shape, with\n"
    "numbers and named units, plus each node's CPU, memory, disk and network),\n"
    "with summaries by device and by node, and the jobs that ran meanwhile.\n"
    "\n"
    "Options:\n"
    "  -s, --session NAME     the session (its latest run, if the name was reused)\n"
    "      --db PATH          the head's store (default " EXPORT_DEFAULT_DB ")\n"
    "  -f, --format FORMAT    json (default) or csv (one row per frame and GPU)\n"
    "  -o, --output FILE      write there instead of stdout\n"
    "  -h, --help             show this help\n";

static int cmd_export(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"session", required_argument, NULL, 's'},
	    {"db", required_argument, NULL, 'd'},
	    {"format", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *session = NULL, *db = EXPORT_DEFAULT_DB, *output = "-";
	struct session_record s;
	struct store *st;
	struct strbuf out;
	bool csv = false;
	int c, ret, exit_code = 0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":s:f:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			session = optarg;
			break;
		case 'd':
			db = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "csv") == 0)
				csv = true;
			else if (strcmp(optarg, "json") != 0)
				return cli_usage_error("export", "bad --format '%s' (json or csv)",
						       optarg);
			break;
		case 'o':
			output = optarg;
			break;
		case 'h':
			fputs(export_usage, stdout);
			return 0;
		default:
			return cli_option_error("export", c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("export", "unexpected argument '%s'", argv[optind]);
	if (!session)
		return cli_usage_error("export", "which session? --session NAME");
	if (cli_open_store(db, STORE_READONLY, &st))
		return EXIT_USAGE;
	ret = store_session_get(st, session, &s);
	if (ret) {
		if (ret == -ENOENT)
			log_err(0, "no session '%s' in '%s'", session, store_path(st));
		store_close(st);
		return EXIT_FAIL;
	}
	strbuf_init(&out, (size_t)1 << 32);
	ret = session_export_frames(st, &s, csv, &out);
	if (!ret)
		ret = cli_write_file(output, out.buf, out.len);
	if (ret)
		exit_code = EXIT_FAIL;
	strbuf_release(&out);
	store_close(st);
	return exit_code;
}

const struct cli_command cmd_export_def = {
    "export",
    cmd_export,
    "write a profiling session's frames (JSON, CSV) from a head's store",
    export_usage,
};
