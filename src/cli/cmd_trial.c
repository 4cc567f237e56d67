/*
 * cmd_trial.c - `jobscope trial --vary cpus=1,2,4 ... -- CMD [ARGS...]`:
 * its options and its exit status.  The placements and the runs are
 * run/trial.h's, the fit and the output report/trial.h's (docs/trial.md).
 */
#include <errno.h>
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

#define TRIAL_DEFAULT_MS  60000
#define TRIAL_GRACE_MS	  5000
#define TRIAL_INTERVAL_MS 250

struct trial_opts {
	struct trial_vary vary;
	struct trial_runner run;
	const char *plot;
	int format; /* 0 text, 1 json */
	double min_eff;
};

static const char trial_head[] =
    "usage: jobscope trial --vary RES=V1,V2,... [--vary ...] [OPTIONS] -- CMD [ARGS...]\n"
    "\n"
    "Run CMD briefly at each placement (the cross product of the --vary lists),\n"
    "each under `jobscope run`, measure its throughput, fit Amdahl's law to the\n"
    "speedups and recommend how much to request (docs/trial.md).\n"
    "\n";

static const char trial_tail[] =
    "\n"
    "CMD's stdout goes to stderr, so that stdout holds the trial's result alone.\n"
    "\n"
    "SIGINT, SIGTERM and SIGHUP are passed to the run under way; the runs done\n"
    "so far are then reported, and the trial exits 128+N.\n"
    "\n"
    "Exit status: 0 when every placement ran (whatever CMD's own status); 1 when\n"
    "one could not be run or measured; 2 for a usage error.\n";

static int add_vary(const struct opt *opt, const char *arg)
{
	char why[256];

	if (trial_vary_parse(opt->value, arg, why, sizeof(why)))
		return usage_error("trial", "%s", why);
	return 0;
}

static int set_metric(const struct opt *opt, const char *arg)
{
	if (!arg[0] || strlen(arg) >= APP_NAME_MAX)
		return usage_error("trial", "bad --metric name");
	*(const char **)opt->value = arg;
	return 0;
}

static int set_min_eff(const struct opt *opt, const char *arg)
{
	double *x = opt->value;
	char *end;

	errno = 0;
	*x = strtod(arg, &end);
	if (errno || end == arg || *end || !(*x > 0 && *x <= 1))
		return usage_error("trial", "bad --min-efficiency '%s' (0 < X <= 1)", arg);
	return 0;
}

static int parse_opts(int argc, char **argv, struct trial_opts *o)
{
	static const struct opt_cmd cmd = {"trial", trial_head,		 trial_tail,
					   25,	    OPT_STOP_AT_OPERAND, -1};
	static const char *const formats[] = {"text", "json", NULL};
	const struct opt opts[] = {
	    OPT_CALLBACK(0, "vary", &o->vary, "RES=LIST",
			 "cpus=LIST: CPU counts: the affinity mask is the first N\n"
			 "CPUs this process may use (more than it may use is an\n"
			 "error); gpus=LIST: GPU counts: CUDA_VISIBLE_DEVICES=\n"
			 "0,..,N-1; mem=LIST: memory limits (512M, 2G, 1.5G: binary\n"
			 "units) through a cgroup v2 memory.max; where none can be\n"
			 "made the run goes unlimited and the output says so",
			 add_vary),
	    OPT_CALLBACK(0, "metric", &o->run.metric, "NAME",
			 "throughput is this StatsD metric's rate (a counter's\n"
			 "sum per second, a gauge's mean value); default: CPU\n"
			 "work per second, or GPU work when the job used GPUs",
			 set_metric),
	    OPT_DURATION('d', "duration", &o->run.duration_ms, 100, 0, "at least 100ms",
			 "each run's length at most (default 60s): then its tree\n"
			 "gets SIGTERM, and SIGKILL after --kill-after"),
	    OPT_DURATION(0, "kill-after", &o->run.grace_ms, 0, 0, NULL,
			 "SIGKILL this long after --duration's SIGTERM\n"
			 "(default 5s)"),
	    OPT_DURATION('i', "interval", &o->run.interval_ms, 50, 0, "at least 50ms",
			 "time between each run's samples (default 250ms,\n"
			 "at least 50ms)"),
	    OPT_INT(0, "repeat", &o->run.repeat, "N", 1, TRIAL_MAX_REPEAT,
		    "runs per placement (default 1, at most 16)"),
	    OPT_CALLBACK(0, "min-efficiency", &o->min_eff, "X",
			 "the recommendation's bar, 0 < X <= 1 (default 0.5)", set_min_eff),
	    OPT_CHOICE('f', "format", &o->format, "FORMAT", formats,
		       "text (default) or json, on stdout"),
	    OPT_STRING(0, "plot", &o->plot, "FILE",
		       "throughput and efficiency against resources: .png,\n"
		       ".pdf or .svg"),
	    OPT_FLAG(0, "keep", &o->run.keep, "keep the runs' stores (their directory is printed)"),
	    OPT_END(),
	};
	int first, ret;

	*o = (struct trial_opts){.run = {.duration_ms = TRIAL_DEFAULT_MS,
					 .grace_ms = TRIAL_GRACE_MS,
					 .interval_ms = TRIAL_INTERVAL_MS,
					 .repeat = 1},
				 .min_eff = SCALING_DEFAULT_MIN_EFF};
	ret = opt_parse(&cmd, opts, argc, argv, &first);
	if (ret)
		return ret;
	if (first < argc && strcmp(argv[first - 1], "--") != 0 && strcmp(argv[first], "--") == 0)
		first++;
	if (first >= argc)
		return usage_error("trial", "no command given");
	if (!o->vary.ncpus && !o->vary.ngpus && !o->vary.nmem)
		return usage_error("trial",
				   "nothing to vary: give --vary cpus=LIST (or gpus, mem)");
	if (o->plot && !plot_format_known(o->plot))
		return usage_error("trial", "--plot '%s': use .png, .pdf or .svg", o->plot);
	o->run.argv = argv + first;
	return 0;
}

static int cmd_trial(int argc, char **argv)
{
	struct trial_opts o;
	struct trial *t;
	struct strbuf out;
	char dir[4096];
	cpu_set_t set;
	int ret, avail, failed = 0, stopped_by = 0;

	ret = parse_opts(argc, argv, &o);
	if (ret)
		return ret == OPT_DONE ? 0 : ret;
	for (int i = 0; i < o.vary.ncpus; i++)
		if (trial_first_cpus(o.vary.cpus[i], &set, &avail) == -ERANGE)
			return usage_error("trial",
					   "--vary cpus=%d: this process may use %d CPU%s only",
					   o.vary.cpus[i], avail, avail == 1 ? "" : "s");
	t = calloc(1, sizeof(*t));
	if (!t)
		return log_err(EXIT_FAIL, "out of memory");
	t->argv = o.run.argv;
	t->duration_ms = o.run.duration_ms;
	t->repeat = o.run.repeat;
	t->metric = o.run.metric;
	t->min_eff = o.min_eff;
	t->resource = o.vary.ngpus > 1	 ? "gpus"
		      : o.vary.ncpus > 0 ? "cpus"
		      : o.vary.ngpus	 ? "gpus"
					 : NULL;
	if (trial_place(t, &o.vary)) {
		free(t);
		return usage_error("trial", "more than %d placements", TRIAL_MAX_PLACEMENTS);
	}
	if (trial_run_all(&o.run, t, dir, sizeof(dir), &failed, &stopped_by)) {
		free(t);
		return EXIT_FAIL;
	}
	if (stopped_by)
		log_warn(0, "trial: stopped by signal %d: the runs done so far", stopped_by);
	trial_analyse(t);
	strbuf_init(&out, 1 << 22);
	ret = o.format == 1 ? trial_json(t, &out) : trial_text(t, &out);
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
};
