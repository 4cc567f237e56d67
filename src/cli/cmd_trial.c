/*
 * cmd_trial.c - `jobscope trial --vary cpus=1,2,4 ... -- CMD [ARGS...]`:
 * its options, the placements (the cross product of the --vary lists), the
 * runs (run/trial.h: each under `jobscope run`, placed and measured), the
 * fit and the output (report/trial.h, docs/trial.md), and the exit status.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "report/report.h"
#include "report/trial.h"
#include "run/trial.h"

#define TRIAL_MAX_VALUES    16
#define TRIAL_DEFAULT_MS    60000
#define TRIAL_GRACE_MS	    5000
#define TRIAL_INTERVAL_MS   250

struct trial_opts {
	int cpus[TRIAL_MAX_VALUES], ncpus;
	int gpus[TRIAL_MAX_VALUES], ngpus;
	uint64_t mem[TRIAL_MAX_VALUES];
	int nmem;
	int64_t duration_ms, grace_ms, interval_ms;
	int repeat;
	const char *metric;
	bool json;
	const char *plot;
	double min_eff;
	bool keep;
	char **argv;
};

static const char trial_usage[] =
    "usage: jobscope trial --vary RES=V1,V2,... [--vary ...] [OPTIONS] -- CMD [ARGS...]\n"
    "\n"
    "Run CMD briefly at each placement (the cross product of the --vary lists),\n"
    "each under `jobscope run`, measure its throughput, fit Amdahl's law to the\n"
    "speedups and recommend how much to request (docs/trial.md).\n"
    "\n"
    "Options:\n"
    "      --vary cpus=LIST   CPU counts: the affinity mask is the first N CPUs this\n"
    "                         process may use (more than it may use is an error)\n"
    "      --vary gpus=LIST   GPU counts: CUDA_VISIBLE_DEVICES=0,..,N-1\n"
    "      --vary mem=LIST    memory limits (512M, 2G, 1.5G: binary units) through a\n"
    "                         cgroup v2 memory.max; where none can be made the run\n"
    "                         goes unlimited and the output says so\n"
    "      --metric NAME      throughput is this StatsD metric's rate (a counter's\n"
    "                         sum per second, a gauge's mean value); default: CPU\n"
    "                         work per second, or GPU work when the job used GPUs\n"
    "  -d, --duration DUR     each run's length at most (default 60s): then its tree\n"
    "                         gets SIGTERM, and SIGKILL after --kill-after\n"
    "      --kill-after DUR   (default 5s)\n"
    "  -i, --interval DUR     `jobscope run`'s sampling interval (default 250ms)\n"
    "      --repeat N         runs per placement (default 1, at most 16)\n"
    "      --min-efficiency X\n"
    "                         the recommendation's bar, 0 < X <= 1 (default 0.5)\n"
    "  -f, --format FORMAT    text (default) or json, on stdout\n"
    "      --plot FILE        throughput and efficiency against resources: .png,\n"
    "                         .pdf or .svg\n"
    "      --keep             keep the runs' stores (their directory is printed)\n"
    "  -h, --help             show this help\n"
    "\n"
    "CMD's stdout goes to stderr, so that stdout holds the trial's result alone.\n"
    "\n"
    "SIGINT, SIGTERM and SIGHUP are passed to the run under way; the runs done\n"
    "so far are then reported, and the trial exits 128+N.\n"
    "\n"
    "Exit status: 0 when every placement ran (whatever CMD's own status); 1 when\n"
    "one could not be run or measured; 2 for a usage error.\n";

/* "2G", "512M", "1.5GiB", "4096" (bytes): binary units. */
static int parse_mem(const char *s, uint64_t *out)
{
	char *end;
	double v, mult = 1;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v > 0))
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		mult = 1024.0;
		end++;
		break;
	case 'm':
	case 'M':
		mult = 1024.0 * 1024;
		end++;
		break;
	case 'g':
	case 'G':
		mult = 1024.0 * 1024 * 1024;
		end++;
		break;
	case 't':
	case 'T':
		mult = 1024.0 * 1024 * 1024 * 1024;
		end++;
		break;
	default:
		break;
	}
	if (mult > 1 && *end == 'i')
		end++;
	if (*end == 'B')
		end++;
	if (*end || !(v * mult >= 4096 && v * mult < 0x1p62))
		return -EINVAL;
	*out = (uint64_t)(v * mult);
	return 0;
}

static int parse_vary(struct trial_opts *o, const char *arg)
{
	char buf[512], *save = NULL, *tok, *list;
	const char *key;
	int *count;

	if (snprintf(buf, sizeof(buf), "%s", arg) >= (int)sizeof(buf))
		return cli_usage_error("trial", "--vary '%.40s...' is too long", arg);
	list = strchr(buf, '=');
	if (!list)
		return cli_usage_error("trial", "--vary wants RES=LIST, not '%s'", arg);
	*list++ = '\0';
	key = buf;
	if (strcmp(key, "cpus") == 0)
		count = &o->ncpus;
	else if (strcmp(key, "gpus") == 0)
		count = &o->ngpus;
	else if (strcmp(key, "mem") == 0)
		count = &o->nmem;
	else
		return cli_usage_error("trial", "--vary: '%s' is not cpus, gpus or mem", key);
	if (*count)
		return cli_usage_error("trial", "--vary %s given twice", key);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (*count == TRIAL_MAX_VALUES)
			return cli_usage_error("trial", "--vary %s: at most %d values", key,
					       TRIAL_MAX_VALUES);
		if (count == &o->nmem) {
			if (parse_mem(tok, &o->mem[*count]))
				return cli_usage_error("trial", "--vary mem: bad size '%s'", tok);
		} else {
			char *end;
			long v;

			errno = 0;
			v = strtol(tok, &end, 10);
			if (errno || end == tok || *end || v < (count == &o->ngpus ? 0 : 1) ||
			    v > 4096)
				return cli_usage_error("trial", "--vary %s: bad count '%s'", key,
						       tok);
			(count == &o->ncpus ? o->cpus : o->gpus)[*count] = (int)v;
		}
		(*count)++;
	}
	if (!*count)
		return cli_usage_error("trial", "--vary %s: no values", key);
	return 0;
}

static int parse_opts(int argc, char **argv, struct trial_opts *o)
{
	static const struct option longopts[] = {
	    {"vary", required_argument, NULL, 'V'},
	    {"metric", required_argument, NULL, 'm'},
	    {"duration", required_argument, NULL, 'd'},
	    {"kill-after", required_argument, NULL, 'k'},
	    {"interval", required_argument, NULL, 'i'},
	    {"repeat", required_argument, NULL, 'r'},
	    {"min-efficiency", required_argument, NULL, 'e'},
	    {"format", required_argument, NULL, 'f'},
	    {"plot", required_argument, NULL, 'p'},
	    {"keep", no_argument, NULL, 'K'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	char *end;
	int c, ret;

	*o = (struct trial_opts){.duration_ms = TRIAL_DEFAULT_MS,
				 .grace_ms = TRIAL_GRACE_MS,
				 .interval_ms = TRIAL_INTERVAL_MS,
				 .repeat = 1,
				 .min_eff = SCALING_DEFAULT_MIN_EFF};
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:d:i:f:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'V':
			ret = parse_vary(o, optarg);
			if (ret)
				return ret;
			break;
		case 'm':
			if (!optarg[0] || strlen(optarg) >= APP_NAME_MAX)
				return cli_usage_error("trial", "bad --metric name");
			o->metric = optarg;
			break;
		case 'd':
			if (parse_duration_ms(optarg, &o->duration_ms) || o->duration_ms < 100)
				return cli_usage_error(
				    "trial", "bad --duration '%s' (at least 100ms)", optarg);
			break;
		case 'k':
			if (parse_duration_ms(optarg, &o->grace_ms))
				return cli_usage_error("trial", "bad --kill-after '%s'", optarg);
			break;
		case 'i':
			if (parse_duration_ms(optarg, &o->interval_ms) || o->interval_ms < 50)
				return cli_usage_error(
				    "trial", "bad --interval '%s' (at least 50ms)", optarg);
			break;
		case 'r':
			errno = 0;
			o->repeat = (int)strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || o->repeat < 1 ||
			    o->repeat > TRIAL_MAX_REPEAT)
				return cli_usage_error("trial", "bad --repeat '%s' (1 to %d)",
						       optarg, TRIAL_MAX_REPEAT);
			break;
		case 'e':
			errno = 0;
			o->min_eff = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->min_eff > 0 && o->min_eff <= 1))
				return cli_usage_error(
				    "trial", "bad --min-efficiency '%s' (0 < X <= 1)", optarg);
			break;
		case 'f':
			if (strcmp(optarg, "json") == 0)
				o->json = true;
			else if (strcmp(optarg, "text") != 0)
				return cli_usage_error("trial", "bad --format '%s' (text or json)",
						       optarg);
			break;
		case 'p':
			o->plot = optarg;
			break;
		case 'K':
			o->keep = true;
			break;
		case 'h':
			fputs(trial_usage, stdout);
			exit(0);
		default:
			return cli_option_error("trial", c, argv);
		}
	}
	if (optind < argc && strcmp(argv[optind - 1], "--") != 0 && strcmp(argv[optind], "--") == 0)
		optind++;
	if (optind >= argc)
		return cli_usage_error("trial", "no command given");
	if (!o->ncpus && !o->ngpus && !o->nmem)
		return cli_usage_error("trial",
				       "nothing to vary: give --vary cpus=LIST (or gpus, mem)");
	if (o->plot && !plot_format_known(o->plot))
		return cli_usage_error("trial", "--plot '%s': use .png, .pdf or .svg", o->plot);
	o->argv = argv + optind;
	return 0;
}

static int cmd_trial(int argc, char **argv)
{
	struct trial_opts o;
	struct trial *t;
	struct strbuf out;
	struct trial_runner runner;
	char dir[4096];
	cpu_set_t set;
	int ret, avail, failed = 0, stopped_by = 0;

	ret = parse_opts(argc, argv, &o);
	if (ret)
		return ret;
	for (int i = 0; i < o.ncpus; i++)
		if (trial_first_cpus(o.cpus[i], &set, &avail) == -ERANGE)
			return cli_usage_error("trial",
					       "--vary cpus=%d: this process may use %d CPU%s only",
					       o.cpus[i], avail, avail == 1 ? "" : "s");
	t = calloc(1, sizeof(*t));
	if (!t)
		return log_err(EXIT_FAIL, "out of memory");
	runner = (struct trial_runner){.duration_ms = o.duration_ms,
				       .grace_ms = o.grace_ms,
				       .interval_ms = o.interval_ms,
				       .repeat = o.repeat,
				       .metric = o.metric,
				       .keep = o.keep,
				       .argv = o.argv};
	t->argv = o.argv;
	t->duration_ms = o.duration_ms;
	t->repeat = o.repeat;
	t->metric = o.metric;
	t->min_eff = o.min_eff;
	t->resource = o.ngpus > 1 ? "gpus" : o.ncpus > 0 ? "cpus" : o.ngpus ? "gpus" : NULL;
	for (int c = 0; c < (o.ncpus ? o.ncpus : 1); c++)
		for (int g = 0; g < (o.ngpus ? o.ngpus : 1); g++)
			for (int m = 0; m < (o.nmem ? o.nmem : 1); m++) {
				struct trial_placement *p;

				if (t->nplace == TRIAL_MAX_PLACEMENTS) {
					free(t);
					return cli_usage_error("trial", "more than %d placements",
							       TRIAL_MAX_PLACEMENTS);
				}
				p = &t->place[t->nplace++];
				p->cpus = o.ncpus ? o.cpus[c] : 0;
				p->gpus = o.ngpus ? o.gpus[g] : -1;
				p->mem_bytes = o.nmem ? o.mem[m] : 0;
			}
	if (trial_run_all(&runner, t, dir, sizeof(dir), &failed, &stopped_by)) {
		free(t);
		return EXIT_FAIL;
	}
	if (stopped_by)
		log_warn(0, "trial: stopped by signal %d: the runs done so far", stopped_by);
	trial_analyse(t);
	strbuf_init(&out, 1 << 22);
	ret = o.json ? trial_json(t, &out) : trial_text(t, &out);
	if (ret == 0)
		fputs(strbuf_str(&out), stdout);
	strbuf_release(&out);
	if (ret == 0 && o.plot && trial_plot(t, o.plot))
		ret = -EIO;
	free(t);
	if (stopped_by)
		return 128 + stopped_by;
	if (fflush(stdout) || ret)
		return EXIT_FAIL;
	return failed ? EXIT_FAIL : 0;
}

const struct cli_command cmd_trial_def = {
    "trial",
    cmd_trial,
    "run a command at several placements and predict how it scales",
    trial_usage,
};
