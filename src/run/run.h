/*
 * run.h - `jobscope run`'s engine: CMD started as a child with its stdin,
 * stdout and stderr untouched; this process a child subreaper, so that every
 * descendant stays in the tree; the host and the tree sampled at start, every
 * interval and once more at exit, each tick stored in one transaction; and
 * the report made when the tree is gone.  cli/cmd_run.c parses the options
 * and writes the report where they say.
 *
 * run_command: the run, whole.  Returns the exit status `jobscope run` ends
 * with (common/exitcode.h): CMD's (128+N if signal N killed it), EXIT_USAGE
 * when the store cannot be used (nothing is started), EXIT_NOT_FOUND or
 * EXIT_CANNOT_EXEC when CMD cannot be run, EXIT_RUN_FAILED when jobscope fails
 * after starting it.  *report gets the report (empty with RUN_REPORT_NONE or
 * when it could not be made, said on stderr); the caller's to write.  Not
 * thread-safe: one run per process (signals, the subreaper).
 */
#ifndef JOBSCOPE_RUN_H
#define JOBSCOPE_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "common/strbuf.h"

#define RUN_MIN_INTERVAL_MS 50
#define RUN_PACK_AFTER_MS   3600000 /* --pack-after's default */

enum run_report { RUN_REPORT_TEXT, RUN_REPORT_JSON, RUN_REPORT_NONE };

struct run_opts {
	int64_t interval_ms;
	int64_t timeout_ms; /* 0: none */
	int64_t kill_after_ms;
	const char *name;
	const char *db;
	enum run_report report;
	bool utf8; /* the text report's sparklines in UTF-8 */
	bool no_wait;
	int64_t pack_after_ms; /* 0: never */
	bool cuda;
	const char *cupti; /* --cupti: libcupti's path */
	bool no_statsd;
	bool for_trial; /* run by `jobscope trial`: messages name its options, not run's */
	char **argv;
};

int run_command(const struct run_opts *o, struct strbuf *report);

#endif
