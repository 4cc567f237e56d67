/*
 * cmd_export.c - `jobscope export --session NAME`: a profiling session's
 * data from a head's store, as JSON frames in gswarm-profiler's shape (but
 * numbers, not strings; utilization 0-100; units named in the file), CSV,
 * or the very file gswarm-profiler's head writes at stop (--format gswarm);
 * from the store file (--db, on the head's machine) or from a running head
 * over HTTP (--head URL: its /api/v1/sessions/NAME/export, the same bytes).
 * This file parses the options, picks the source and the exit code;
 * report/session_export.c renders the frames (here or on the head).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "common/log.h"
#include "common/outfile.h"
#include "common/progress.h"
#include "common/token.h"
#include "net/client.h"
#include "report/session_export.h"
#include "store/store.h"
#include "store/profiling.h"

#define EXPORT_DEFAULT_DB "/var/lib/jobscope/head.db"
#define EXPORT_MAX_BYTES  ((size_t)1 << 32)

static const char export_head[] =
    "usage: jobscope export --session NAME [--db PATH | --head URL [--token-file F]]\n"
    "                       [--format json|csv|gswarm] [-o FILE]\n"
    "\n"
    "Write a profiling session's data from a head's store: every sample of its\n"
    "nodes in its window, as frames (GPU arrays in gswarm-profiler's shape, with\n"
    "numbers and named units, plus each node's CPU, memory, disk and network),\n"
    "with summaries by device and by node, and the jobs that ran meanwhile.\n"
    "--head asks a running head for the same bytes over HTTP, from anywhere.\n"
    "\n";

static const char export_tail[] =
    "\n"
    "On a terminal, the frames written so far show on stderr (NO_PROGRESS=1: never).\n"
    "\n"
    "Exit status: 0 written; 1 no such session, the head cannot be reached,\n"
    "refused the token or answered something else; 2 usage error (a name that\n"
    "is not a session's), unusable store or unreadable token file.\n";

/*
 * Where an export from the store goes, as it is written (a session of any
 * length in the same memory): stdout as it comes; a regular file whole or
 * not at all (common/outfile.h); anything else (a pipe, a device) directly.
 */
struct export_dest {
	struct outfile file;
	bool whole; /* file is an outfile */
};

static int dest_open(struct export_dest *d, const char *path)
{
	struct stat sb;
	int ret = 0;

	d->whole = false;
	d->file.path = path;
	if (strcmp(path, "-") == 0) {
		d->file.fd = STDOUT_FILENO;
		return 0;
	}
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		d->file.fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
		if (d->file.fd < 0)
			ret = -errno;
	} else {
		d->whole = true;
		ret = outfile_open(&d->file, path);
	}
	return ret ? log_err(ret, "cannot write '%s'", d->whole ? d->file.tmp : path) : 0;
}

/* ret: how the export went; the file kept (renamed into place) only when all is well. */
static int dest_close(struct export_dest *d, int ret)
{
	int was = ret;

	if (d->file.fd == STDOUT_FILENO)
		return ret;
	if (d->whole)
		ret = outfile_close(&d->file, ret, false);
	else if (close(d->file.fd) < 0 && !ret)
		ret = -errno;
	return ret && !was ? log_err(ret, "cannot write '%s'", d->file.path) : ret;
}

/* From the store file, written to output as it comes. */
static int export_from_store(const char *db, const char *session, const char *format,
			     const char *output)
{
	struct session_record s;
	struct progress_meter meter;
	struct export_dest dest;
	struct strbuf out;
	struct store *st;
	int ret;

	/* frames written, on a terminal (progress.h) */
	progress_meter_init(&meter, 2, progress_wanted(2, false), "jobscope export", "frames");
	if (cli_open_store(db, STORE_READONLY, &st))
		return EXIT_USAGE;
	ret = store_session_get(st, session, &s);
	if (ret == -ENOENT)
		log_err(0, "no session '%s' in '%s'", session, store_path(st));
	if (ret || dest_open(&dest, output)) {
		store_close(st);
		return EXIT_FAIL;
	}
	strbuf_init(&out, EXPORT_MAX_BYTES);
	if (strcmp(format, "gswarm") == 0)
		ret = session_export_gswarm_progress(st, &s, &out, dest.file.fd,
						     progress_meter_hook(&meter));
	else
		ret = session_export_frames_progress(st, &s, strcmp(format, "csv") == 0, &out,
						     dest.file.fd, progress_meter_hook(&meter));
	if (!ret)
		ret = session_export_spill(&out, dest.file.fd, 0);
	ret = dest_close(&dest, ret);
	strbuf_release(&out);
	store_close(st);
	return ret ? EXIT_FAIL : 0;
}

/* From a running head: its /api/v1/sessions/NAME/export. */
static int export_from_head(const char *head, const char *token_file, const char *session,
			    const char *format, struct strbuf *out)
{
	char token[256];
	int ret;

	if (token_file && token_read_file(token_file, token, sizeof(token)))
		return EXIT_USAGE;
	ret = http_client_session_export(head, token_file ? token : NULL, session, format, out);
	return ret == -EINVAL ? EXIT_USAGE : ret ? EXIT_FAIL : 0;
}

static int cmd_export(int argc, char **argv)
{
	static const struct opt_cmd cmd = {"export", export_head, export_tail, 25, 0, 0};
	static const char *const formats[] = {"json", "csv", "gswarm", NULL};
	const char *session = NULL, *db = NULL, *head = NULL, *output = "-", *token_opt = NULL;
	int format = 0;
	const struct opt opts[] = {
	    OPT_STRING('s', "session", &session, "NAME",
		       "the session (its latest run, if the name was reused)"),
	    OPT_STRING(0, "db", &db, "PATH", "the head's store (default " EXPORT_DEFAULT_DB ")"),
	    OPT_STRING(0, "head", &head, "URL",
		       "ask the head at URL (http://head:8091) instead; without\n"
		       "--db or --head: $JOBSCOPE_HEAD when set"),
	    OPT_STRING(0, "token-file", &token_opt, "F",
		       "its read token (default $JOBSCOPE_TOKEN_FILE)"),
	    OPT_CHOICE('f', "format", &format, "FORMAT", formats,
		       "json (default), csv (one row per frame and GPU) or\n"
		       "gswarm: the file gswarm-profiler's head writes at\n"
		       "stop, which `gsprof stat` reads (docs/gswarm.md)"),
	    OPT_STRING('o', "output", &output, "FILE",
		       "write there instead of stdout (a file appears only\n"
		       "once it is all in)"),
	    OPT_END(),
	};
	const char *token_file;
	struct strbuf out;
	int first, exit_code = opt_parse(&cmd, opts, argc, argv, &first);

	if (exit_code)
		return exit_code == OPT_DONE ? 0 : exit_code;
	token_file = token_opt ? token_opt : getenv("JOBSCOPE_TOKEN_FILE");
	/* no source named: the head of $JOBSCOPE_HEAD, as `session` and `status` take it */
	if (!db && !head && getenv("JOBSCOPE_HEAD") && *getenv("JOBSCOPE_HEAD"))
		head = getenv("JOBSCOPE_HEAD");
	if (!session)
		return usage_error("export", "which session? --session NAME");
	if (db && head)
		return usage_error("export", "--db or --head, not both");
	if (token_opt && !head)
		return usage_error("export", "--token-file is a head's token: with --head");
	if (head && !*head)
		return usage_error("export", "--head: a URL (http://head:8091)");
	if (!head)
		return export_from_store(db ? db : EXPORT_DEFAULT_DB, session, formats[format],
					 output);
	/* the head's answer whole (its answer cap): a failure never leaves half a file */
	strbuf_init(&out, EXPORT_MAX_BYTES);
	exit_code = export_from_head(head, token_file, session, formats[format], &out);
	if (!exit_code && cli_write_file(output, out.buf ? out.buf : "", out.len))
		exit_code = EXIT_FAIL;
	strbuf_release(&out);
	return exit_code;
}

const struct cli_command cmd_export_def = {
    "export",
    cmd_export,
    "write a profiling session's frames (JSON, CSV, gswarm's file) from a head's store or a head",
};
