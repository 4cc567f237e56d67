/*
 * cmd_run.c - `jobscope run [OPTIONS] -- CMD [ARGS...]`: its options, its
 * --help and where the report goes; the run itself is run/run.h's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/sysroot.h"
#include "common/timeutil.h"
#include "run/run.h"

/* The engine's options, and what only the command knows. */
struct run_cli {
	struct run_opts run;
	const char *report_file; /* NULL: stderr */
	char db_buf[4096];
};

static const char run_head[] =
    "usage: jobscope run [OPTIONS] [--] CMD [ARGS...]\n"
    "\n"
    "Run CMD, sample its whole process tree and the host, and print a report\n"
    "when it ends.  CMD's stdin, stdout and stderr are left alone: the report\n"
    "goes to stderr or --report-file.  The samples are kept in a SQLite store\n"
    "for `jobscope report`.\n"
    "\n";

static const char run_tail[] =
    "\n"
    "App metrics: CMD's environment gets STATSD_HOST=127.0.0.1, STATSD_PORT (a\n"
    "fresh UDP port) and JOBSCOPE_STATSD_SOCKET (a Unix datagram socket): StatsD\n"
    "and DogStatsD lines sent there (counters, gauges, timers, histograms, sets,\n"
    "events) are stored per tick and reported; `jobscope mark NAME` sets a\n"
    "marker, and the report's phases run from marker to marker.  When\n"
    "STATSD_HOST and STATSD_PORT were set, the lines are relayed there too\n"
    "(docs/app-metrics.md).\n"
    "\n"
    "Signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to jobscope are passed to\n"
    "CMD; one that comes before CMD started (while the GPUs are opened) stops\n"
    "jobscope without starting it.  jobscope is a child subreaper: processes CMD\n"
    "double-forks stay in the tree and are counted.  $JOBSCOPE_RUN_ID is set in\n"
    "CMD's environment.\n"
    "\n"
    "GPUs: NVIDIA GPUs are sampled through NVML and AMD ones through ROCm SMI\n"
    "when their library is there ($JOBSCOPE_NVML_LIBRARY, $JOBSCOPE_ROCM_SMI_LIBRARY\n"
    "name others); `jobscope gpus` shows what is found.\n"
    "\n"
    "Exit status: CMD's (128+N if killed by signal N); 2 for a usage error or a\n"
    "store that cannot be used (nothing is started); 126 if CMD cannot be\n"
    "executed, 127 if it is not found; 125 if jobscope fails after starting it.\n";

static int set_cupti(const struct opt *opt, const char *arg)
{
	struct run_opts *o = opt->value;

	if (!arg[0])
		return usage_error("run", "--cupti needs a path");
	o->cupti = arg;
	o->cuda = true;
	return 0;
}

static int parse_opts(int argc, char **argv, struct run_cli *rc)
{
	static const struct opt_cmd cmd = {"run", run_head, run_tail, 25, OPT_STOP_AT_OPERAND, -1};
	static const char *const reports[] = {"text", "json", "none", NULL};
	struct run_opts *o = &rc->run;
	const struct opt opts[] = {
	    OPT_DURATION_MIN('i', "interval", &o->interval_ms, RUN_MIN_INTERVAL_MS,
			     "e.g. 250ms, 2s",
			     "time between samples (default 500ms, at least 50ms);\n"
			     "DUR is a number with a unit: 250ms, 2s, 1.5m, 1h"),
	    OPT_DURATION('t', "timeout", &o->timeout_ms, 1, 0, "e.g. 30s, 2h",
			 "send SIGTERM to the tree after DUR, then SIGKILL"),
	    OPT_DURATION(0, "kill-after", &o->kill_after_ms, 0, 0, "e.g. 10s",
			 "...this long after SIGTERM (default 10s)"),
	    OPT_STRING('n', "name", &o->name, "NAME", "a name for the run, shown in reports"),
	    OPT_PATH(0, "db", &o->db, "PATH", "a path",
		     "the store (default $XDG_DATA_HOME/jobscope/jobscope.db,\n"
		     "i.e. ~/.local/share/jobscope/jobscope.db)"),
	    OPT_CHOICE('r', "report", &o->report, "FORMAT", reports,
		       "text (default), json or none"),
	    OPT_STRING('o', "report-file", &rc->report_file, "PATH",
		       "write the report there instead of stderr"),
	    OPT_FLAG(0, "no-wait", &o->no_wait,
		     "end when CMD exits, even if processes it started\n"
		     "in the background still run (default: wait for them)"),
	    OPT_DURATION(0, "pack-after", &o->pack_after_ms, 0, 0, "e.g. 1h, 0",
			 "pack the store's raw rows older than DUR into\n"
			 "compressed column blobs as the run goes (default 1h;\n"
			 "0 = never); reports read them as before"),
	    OPT_FLAG(0, "cuda", &o->cuda,
		     "CUDA API, kernel and memory-operation tables (as Nsight\n"
		     "Systems prints them) for every CUDA process of the\n"
		     "tree, through libjobscope-cuda.so and CUPTI (no\n"
		     "Nsight needed; docs/cuda.md)"),
	    OPT_CALLBACK(0, "cupti", o, "PATH",
			 "the libcupti to use (default: the one next to the\n"
			 "program's CUDA runtime, then the usual places)",
			 set_cupti),
	    OPT_FLAG(0, "no-statsd", &o->no_statsd,
		     "no StatsD receiver: STATSD_HOST, STATSD_PORT and\n"
		     "JOBSCOPE_STATSD_SOCKET are left as they are"),
	    /* hidden: for tests */
	    OPT_HIDDEN_CALLBACK("sysroot", "DIR", cli_set_sysroot),
	    /* hidden: `jobscope trial`'s runs, whose messages name trial's options */
	    {.type = OPTION_FLAG,
	     .long_name = "trial-run",
	     .value = &o->for_trial,
	     .flags = OPT_HIDDEN},
	    OPT_END(),
	};
	int first, ret;

	memset(rc, 0, sizeof(*rc));
	o->interval_ms = 500;
	o->kill_after_ms = 10000;
	o->pack_after_ms = RUN_PACK_AFTER_MS;
	ret = opt_parse(&cmd, opts, argc, argv, &first);
	if (ret)
		return ret;
	if (first >= argc)
		return usage_error("run", "no command to run");
	o->argv = argv + first;
	if (!o->db) {
		/* the default store's directory is made when missing; a --db's is not */
		if (cli_default_db(rc->db_buf, sizeof(rc->db_buf)))
			return EXIT_USAGE;
		o->db = rc->db_buf;
	} else {
		struct stat sb;
		const char *slash = strrchr(o->db, '/');
		char dir[4096];

		snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - o->db) : 1,
			 slash ? o->db : ".");
		if (slash == o->db)
			snprintf(dir, sizeof(dir), "/");
		if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
			return usage_error(
			    "run",
			    "--db '%s': no directory '%s' (a typo? make it first, or "
			    "leave --db out for the default store)",
			    o->db, dir);
	}
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	struct run_cli c;
	struct strbuf report;
	const char *root = getenv("JOBSCOPE_SYSROOT");
	int ret, exit_code;

	if (root)
		sysroot_set(root);
	ret = parse_opts(argc, argv, &c);
	if (ret == OPT_DONE)
		return 0; /* --help */
	if (ret)
		return ret;
	c.run.utf8 = cli_utf8();
	strbuf_init(&report, 0);
	exit_code = run_command(&c.run, &report);
	if (report.len) {
		if (c.report_file)
			ret = cli_write_file(c.report_file, report.buf, report.len);
		else
			fwrite(report.buf, 1, report.len, stderr);
		if (ret)
			log_warn(0, "the report could not be written");
	}
	strbuf_release(&report);
	return exit_code;
}

const struct cli_command cmd_run_def = {
    "run",
    cmd_run,
    "run a command and report what it used",
};
