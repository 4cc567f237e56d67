/*
 * cmd_run.c - `jobscope run [OPTIONS] -- CMD [ARGS...]`: its options, its
 * --help and where the report goes; the run itself is run/run.h's.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static const char run_usage[] =
    "usage: jobscope run [OPTIONS] [--] CMD [ARGS...]\n"
    "\n"
    "Run CMD, sample its whole process tree and the host, and print a report\n"
    "when it ends.  CMD's stdin, stdout and stderr are left alone: the report\n"
    "goes to stderr or --report-file.  The samples are kept in a SQLite store\n"
    "for `jobscope report`.\n"
    "\n"
    "Options:\n"
    "  -i, --interval DUR     time between samples (default 500ms, at least 50ms);\n"
    "                         DUR is a number with a unit: 250ms, 2s, 1.5m, 1h\n"
    "  -t, --timeout DUR      send SIGTERM to the tree after DUR, then SIGKILL\n"
    "      --kill-after DUR   ...this long after SIGTERM (default 10s)\n"
    "  -n, --name NAME        a name for the run, shown in reports\n"
    "      --db PATH          the store (default $XDG_DATA_HOME/jobscope/jobscope.db,\n"
    "                         i.e. ~/.local/share/jobscope/jobscope.db)\n"
    "  -r, --report FORMAT    text (default), json or none\n"
    "  -o, --report-file PATH\n"
    "                         write the report there instead of stderr\n"
    "      --no-wait          end when CMD exits, even if processes it started\n"
    "                         in the background still run (default: wait for them)\n"
    "      --pack-after DUR   pack the store's raw rows older than DUR into\n"
    "                         compressed column blobs as the run goes (default 1h;\n"
    "                         0 = never); reports read them as before\n"
    "      --cuda             CUDA API, kernel and memory-operation tables (as Nsight\n"
    "                         Systems prints them) for every CUDA process of the\n"
    "                         tree, through libjobscope-cuda.so and CUPTI (no\n"
    "                         Nsight needed; docs/cuda.md)\n"
    "      --cupti PATH       the libcupti to use (default: the one next to the\n"
    "                         program's CUDA runtime, then the usual places)\n"
    "      --no-statsd        no StatsD receiver: STATSD_HOST, STATSD_PORT and\n"
    "                         JOBSCOPE_STATSD_SOCKET are left as they are\n"
    "  -h, --help             show this help\n"
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
    "CMD.  jobscope is a child subreaper: processes CMD double-forks stay in the\n"
    "tree and are counted.  $JOBSCOPE_RUN_ID is set in CMD's environment.\n"
    "\n"
    "GPUs: NVIDIA GPUs are sampled through NVML and AMD ones through ROCm SMI\n"
    "when their library is there ($JOBSCOPE_NVML_LIBRARY, $JOBSCOPE_ROCM_SMI_LIBRARY\n"
    "name others); `jobscope gpus` shows what is found.\n"
    "\n"
    "Exit status: CMD's (128+N if killed by signal N); 2 for a usage error or a\n"
    "store that cannot be used (nothing is started); 126 if CMD cannot be\n"
    "executed, 127 if it is not found; 125 if jobscope fails after starting it.\n";

static int parse_opts(int argc, char **argv, struct run_cli *rc)
{
	struct run_opts *o = &rc->run;
	static const struct option longopts[] = {
	    {"interval", required_argument, NULL, 'i'},
	    {"timeout", required_argument, NULL, 't'},
	    {"kill-after", required_argument, NULL, 'k'},
	    {"name", required_argument, NULL, 'n'},
	    {"db", required_argument, NULL, 'd'},
	    {"report", required_argument, NULL, 'r'},
	    {"report-file", required_argument, NULL, 'o'},
	    {"no-wait", no_argument, NULL, 'W'},
	    {"pack-after", required_argument, NULL, 'P'},
	    {"cuda", no_argument, NULL, 'C'},
	    {"cupti", required_argument, NULL, 'U'},
	    {"no-statsd", no_argument, NULL, 'N'},
	    {"sysroot", required_argument, NULL, 'S'}, /* hidden: for tests */
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	memset(rc, 0, sizeof(*rc));
	o->interval_ms = 500;
	o->kill_after_ms = 10000;
	o->pack_after_ms = RUN_PACK_AFTER_MS;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:i:t:n:r:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (parse_duration_ms(optarg, &o->interval_ms))
				return cli_usage_error(
				    "run", "bad --interval '%s' (e.g. 250ms, 2s)", optarg);
			if (o->interval_ms < RUN_MIN_INTERVAL_MS)
				return cli_usage_error("run",
						       "--interval %s is below the minimum, %dms",
						       optarg, RUN_MIN_INTERVAL_MS);
			break;
		case 't':
			if (parse_duration_ms(optarg, &o->timeout_ms) || o->timeout_ms == 0)
				return cli_usage_error("run", "bad --timeout '%s' (e.g. 30s, 2h)",
						       optarg);
			break;
		case 'k':
			if (parse_duration_ms(optarg, &o->kill_after_ms))
				return cli_usage_error("run", "bad --kill-after '%s' (e.g. 10s)",
						       optarg);
			break;
		case 'n':
			o->name = optarg;
			break;
		case 'd':
			if (!optarg[0])
				return cli_usage_error("run", "--db needs a path");
			o->db = optarg;
			break;
		case 'r':
			if (strcmp(optarg, "text") == 0)
				o->report = RUN_REPORT_TEXT;
			else if (strcmp(optarg, "json") == 0)
				o->report = RUN_REPORT_JSON;
			else if (strcmp(optarg, "none") == 0)
				o->report = RUN_REPORT_NONE;
			else
				return cli_usage_error(
				    "run", "bad --report '%s' (text, json or none)", optarg);
			break;
		case 'o':
			rc->report_file = optarg;
			break;
		case 'W':
			o->no_wait = true;
			break;
		case 'P':
			if (parse_duration_ms(optarg, &o->pack_after_ms))
				return cli_usage_error("run", "bad --pack-after '%s' (e.g. 1h, 0)",
						       optarg);
			break;
		case 'C':
			o->cuda = true;
			break;
		case 'U':
			if (!optarg[0])
				return cli_usage_error("run", "--cupti needs a path");
			o->cupti = optarg;
			o->cuda = true;
			break;
		case 'N':
			o->no_statsd = true;
			break;
		case 'S':
			sysroot_set(optarg);
			break;
		case 'h':
			fputs(run_usage, stdout);
			return -1;
		default:
			return cli_option_error("run", c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error("run", "no command to run");
	o->argv = argv + optind;
	if (!o->db) {
		if (cli_default_db(rc->db_buf, sizeof(rc->db_buf)))
			return EXIT_USAGE;
		o->db = rc->db_buf;
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
	if (ret < 0)
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
    run_usage,
};
