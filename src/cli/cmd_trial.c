/*
 * cmd_trial.c - `jobscope trial --vary cpus=1,2,4 ... -- CMD [ARGS...]`.
 *
 * Runs CMD once per placement (the cross product of the --vary lists) and
 * repeat, each under `jobscope run` (this very binary, /proc/self/exe) with
 * its own store in a temporary directory, for --duration at most (then
 * `run --timeout` stops the tree: SIGTERM, SIGKILL after --kill-after).
 * The placement is made in the child before it executes `run`, and
 * `run` and CMD inherit it: the affinity mask (the first k CPUs this
 * process may use), CUDA_VISIBLE_DEVICES=0..g-1, and a cgroup v2 with
 * memory.max when one can be made here (else the run goes on unlimited,
 * flagged in the output: never pretended).  Then each store is read:
 * throughput is the --metric's rate, else CPU or GPU work per second.
 * report/trial.h fits and renders (docs/trial.md).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "analysis/jobreport.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "report/report.h"
#include "report/trial.h"
#include "store/store.h"

#define TRIAL_MAX_VALUES    16
#define TRIAL_DEFAULT_MS    60000
#define TRIAL_GRACE_MS	    5000
#define TRIAL_INTERVAL_MS   250
#define TRIAL_CGROUP2_MOUNT "/sys/fs/cgroup"

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

/* ---- placement ---- */

/* The first k CPUs of this process's mask into set; -ERANGE when it has fewer. */
static int first_cpus(int k, cpu_set_t *set, int *avail)
{
	cpu_set_t mine;
	int got = 0;

	CPU_ZERO(set);
	if (sched_getaffinity(0, sizeof(mine), &mine))
		return -errno;
	*avail = CPU_COUNT(&mine);
	for (int cpu = 0; cpu < CPU_SETSIZE && got < k; cpu++)
		if (CPU_ISSET(cpu, &mine)) {
			CPU_SET(cpu, set);
			got++;
		}
	return got == k ? 0 : -ERANGE;
}

/* The reason a memory limit was not applied, truncated to fit. */
static void __attribute__((format(printf, 3, 4)))
say_why(char *why, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
}

/* This process's cgroup v2 directory, from /proc/self/cgroup's "0::" line. */
static int own_cgroup2(char *buf, size_t size, char *why, size_t whysize)
{
	char line[4096];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int ret = -ENOENT;

	if (!f) {
		say_why(why, whysize, "cannot read /proc/self/cgroup: %s", strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		ret = snprintf(buf, size, "%s%s", TRIAL_CGROUP2_MOUNT, line + 3) < (int)size
			  ? 0
			  : -ENAMETOOLONG;
		break;
	}
	fclose(f);
	if (ret == -ENOENT)
		say_why(why, whysize, "this process is in no cgroup v2 (/proc/self/cgroup)");
	return ret;
}

static bool file_has_word(const char *path, const char *word)
{
	char text[1024], *save = NULL;
	FILE *f = fopen(path, "re");
	bool found = false;

	if (!f)
		return false;
	if (fgets(text, sizeof(text), f))
		for (char *w = strtok_r(text, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
			found |= strcmp(w, word) == 0;
	fclose(f);
	return found;
}

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * A cgroup v2 child of our own cgroup with memory.max = bytes, at path:
 * 0, or -errno with why filled.  The memory controller must be on in our
 * cgroup's subtree_control (a cgroup with processes cannot turn it on: the
 * "no internal processes" rule), or be turned on there by us.
 */
static int make_mem_cgroup(uint64_t bytes, int index, char *path, size_t size, char *why,
			   size_t whysize)
{
	char base[4096], file[4200], val[32];
	int ret;

	/* hybrid hierarchies mount v2 at /sys/fs/cgroup/unified: the memory controller is v1's
	 * there */
	if (!file_has_word(TRIAL_CGROUP2_MOUNT "/cgroup.controllers", "memory")) {
		say_why(why, whysize,
			"no cgroup v2 memory controller at %s (a v1 or hybrid hierarchy)",
			TRIAL_CGROUP2_MOUNT);
		return -ENOTSUP;
	}
	ret = own_cgroup2(base, sizeof(base), why, whysize);
	if (ret)
		return ret;
	snprintf(file, sizeof(file), "%s/cgroup.subtree_control", base);
	if (!file_has_word(file, "memory")) {
		ret = write_text(file, "+memory");
		if (ret) {
			say_why(why, whysize, "cannot enable the memory controller in %s: %s", file,
				strerror(-ret));
			return ret;
		}
	}
	if (snprintf(path, size, "%s/jobscope-trial-%d-%d", base, (int)getpid(), index) >=
	    (int)size)
		return -ENAMETOOLONG;
	if (mkdir(path, 0755) && errno != EEXIST) {
		ret = -errno;
		say_why(why, whysize, "cannot create cgroup %s: %s", path, strerror(errno));
		return ret;
	}
	snprintf(file, sizeof(file), "%s/memory.max", path);
	snprintf(val, sizeof(val), "%" PRIu64, bytes);
	ret = write_text(file, val);
	if (ret) {
		say_why(why, whysize, "cannot write %s: %s", file, strerror(-ret));
		rmdir(path);
		return ret;
	}
	return 0;
}

/* ---- one run ---- */

/*
 * SIGINT, SIGTERM or SIGHUP to the trial: passed to the `jobscope run`
 * under way (which passes it to CMD), then no more runs; what was measured
 * is printed and the trial exits 128+N.
 */
static volatile sig_atomic_t trial_signal;
static volatile pid_t trial_child;

static void on_signal(int sig)
{
	trial_signal = sig;
	if (trial_child > 0)
		kill(trial_child, sig);
}

static void catch_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

struct app_rate {
	const char *name;
	double sum, gauge_sum;
	int64_t gauge_n;
	bool counter, seen;
};

static int on_app_point(void *arg, int64_t ts_ms, const struct app_point *p)
{
	struct app_rate *a = arg;

	(void)ts_ms;
	if (strcmp(p->name, a->name) != 0 || p->count <= 0)
		return 0;
	if (p->type == APP_COUNTER) {
		a->sum += p->sum;
		a->counter = a->seen = true;
	} else if (p->type == APP_GAUGE) {
		a->gauge_sum += p->last;
		a->gauge_n++;
		a->seen = true;
	}
	return 0;
}

static int find_first_job(const struct job_record *job, void *arg)
{
	*(struct job_record *)arg = *job;
	return 1;
}

/*
 * Reads the run's store: its one job's summary, and the app metric when
 * asked.  The throughput is NAN when nothing says it.
 */
static int measure(const struct trial_opts *o, const char *db, struct trial_placement *p, int run)
{
	struct job_summary_record rec;
	struct job_record job = {0};
	struct job_report *r;
	struct store *st;
	double wall_s;
	int ret;

	p->throughput_run[run] = NAN;
	p->wall_s[run] = NAN;
	ret = store_open(db, STORE_READONLY, &st);
	if (ret)
		return log_err(ret, "cannot open the run's store '%s'", db);
	ret = store_for_each_job(st, find_first_job, &job);
	if (ret != 1) {
		ret = log_err(ret < 0 ? ret : -ENOENT, "no run in '%s'", db);
		goto out_close;
	}
	r = malloc(sizeof(*r));
	if (!r) {
		ret = -ENOMEM;
		goto out_close;
	}
	ret = job_report_load(r, st, &job);
	if (ret) {
		log_err(ret, "cannot read the run in '%s'", db);
		goto out_free;
	}
	summary_to_record(&r->sum, &rec);
	wall_s = summary_duration_s(&r->sum);
	p->wall_s[run] = wall_s;
	if (o->metric) {
		struct app_rate a = {.name = o->metric};

		p->source = TRIAL_SOURCE_METRIC;
		ret = store_for_each_app_point(st, job.id, 0, INT64_MAX, on_app_point, &a);
		if (ret) {
			log_err(ret, "cannot read the app metrics in '%s'", db);
			goto out_release;
		}
		if (!a.seen)
			log_warn(0, "run %d: no metric '%s' was received", run + 1, o->metric);
		else if (a.counter && wall_s > 0)
			p->throughput_run[run] = a.sum / wall_s;
		else if (!a.counter)
			p->throughput_run[run] = a.gauge_sum / (double)a.gauge_n;
	} else if (rec.gpus_used > 0 && isfinite(rec.gpu_util_avg_pct)) {
		p->source = TRIAL_SOURCE_GPU;
		p->throughput_run[run] = rec.gpu_util_avg_pct / 100.0 * rec.gpus_used;
	} else {
		p->source = TRIAL_SOURCE_CPU;
		if (r->sum.samples > 0 && wall_s > 0)
			p->throughput_run[run] = summary_cpu_seconds(&r->sum) / wall_s;
	}
out_release:
	job_report_release(r);
out_free:
	free(r);
out_close:
	store_close(st);
	return ret;
}

static void remove_store(const char *db)
{
	static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
	char path[4200];

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", db, suffixes[i]);
		unlink(path);
	}
}

/* Runs `jobscope run` at placement p (run number `run`) into db: 0 or -errno. */
static int run_once(const struct trial_opts *o, struct trial_placement *p, int run, int index,
		    const char *db)
{
	char timeout[32], grace[32], interval[32], name[64], cg[4096] = "", file[4200];
	const char *head[] = {"jobscope", "run",	  "--db",   db,		  "--timeout",
			      timeout,	  "--kill-after", grace,    "--interval", interval,
			      "--report", "none",	  "--name", name,	  "--"};
	size_t nhead = sizeof(head) / sizeof(head[0]), nargs = 0;
	char **argv;
	cpu_set_t set;
	pid_t pid;
	int status, avail;

	while (o->argv[nargs])
		nargs++;
	argv = calloc(nhead + nargs + 1, sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	snprintf(timeout, sizeof(timeout), "%" PRId64 "ms", o->duration_ms);
	snprintf(grace, sizeof(grace), "%" PRId64 "ms", o->grace_ms);
	snprintf(interval, sizeof(interval), "%" PRId64 "ms", o->interval_ms);
	snprintf(name, sizeof(name), "trial-%d-%d", index + 1, run + 1);
	memcpy(argv, head, sizeof(head));
	memcpy(argv + nhead, o->argv, nargs * sizeof(*argv));
	if (p->cpus > 0 && first_cpus(p->cpus, &set, &avail)) {
		free(argv);
		return -ERANGE;
	}
	if (p->mem_bytes) {
		p->mem_applied = make_mem_cgroup(p->mem_bytes, index, cg, sizeof(cg), p->mem_note,
						 sizeof(p->mem_note)) == 0;
		if (!p->mem_applied)
			cg[0] = '\0';
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		free(argv);
		return log_err(-errno, "fork");
	}
	if (pid == 0) {
		char devs[TRIAL_MAX_VALUES * 8 + 4096];

		if (p->cpus > 0 && sched_setaffinity(0, sizeof(set), &set))
			_exit(EXIT_RUN_FAILED);
		if (p->gpus >= 0) {
			size_t len = 0;

			devs[0] = '\0';
			for (int g = 0; g < p->gpus && len < sizeof(devs) - 8; g++)
				len += (size_t)snprintf(devs + len, sizeof(devs) - len, "%s%d",
							g ? "," : "", g);
			setenv("CUDA_VISIBLE_DEVICES", devs, 1);
		}
		if (cg[0]) {
			snprintf(file, sizeof(file), "%s/cgroup.procs", cg);
			if (write_text(file, "0"))
				_exit(EXIT_RUN_FAILED);
		}
		if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			_exit(EXIT_RUN_FAILED);
		execv("/proc/self/exe", argv);
		fprintf(stderr, "jobscope: cannot run /proc/self/exe: %s\n", strerror(errno));
		_exit(EXIT_CANNOT_EXEC);
	}
	free(argv);
	trial_child = pid;
	if (trial_signal)
		kill(pid, trial_signal);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			trial_child = 0;
			return log_err(-errno, "waitpid");
		}
	trial_child = 0;
	if (cg[0] && rmdir(cg))
		log_warn(0, "cannot remove cgroup %s: %s", cg, strerror(errno));
	p->exit_status[run] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	/* run's own failures: the command's status is CMD's, anything else is measured */
	if (p->exit_status[run] == EXIT_USAGE || p->exit_status[run] == EXIT_RUN_FAILED ||
	    p->exit_status[run] == EXIT_CANNOT_EXEC || p->exit_status[run] == EXIT_NOT_FOUND)
		log_warn(0, "run %d of placement %d: `jobscope run` exited %d", run + 1, index + 1,
			 p->exit_status[run]);
	return 0;
}

static int cmd_trial(int argc, char **argv)
{
	struct trial_opts o;
	struct trial *t;
	struct strbuf out;
	char dir[4096], db[4200];
	const char *tmp = getenv("TMPDIR");
	cpu_set_t set;
	int ret, avail, failed = 0;

	ret = parse_opts(argc, argv, &o);
	if (ret)
		return ret;
	for (int i = 0; i < o.ncpus; i++)
		if (first_cpus(o.cpus[i], &set, &avail) == -ERANGE)
			return cli_usage_error("trial",
					       "--vary cpus=%d: this process may use %d CPU%s only",
					       o.cpus[i], avail, avail == 1 ? "" : "s");
	t = calloc(1, sizeof(*t));
	if (!t)
		return log_err(EXIT_FAIL, "out of memory");
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
	snprintf(dir, sizeof(dir), "%s/jobscope-trial-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		log_err(0, "cannot create a directory for the runs' stores: %s", strerror(errno));
		free(t);
		return EXIT_FAIL;
	}
	/*
	 * Repeats go round the placements (1, 2, 4, 1, 2, 4, ...), so that a
	 * load from elsewhere that comes and goes falls on all of them alike.
	 */
	catch_signals();
	for (int r = 0; r < o.repeat && !trial_signal; r++)
		for (size_t i = 0; i < t->nplace && !trial_signal; i++) {
			struct trial_placement *p = &t->place[i];

			if (p->runs < r)
				continue; /* it could not be run before */
			snprintf(db, sizeof(db), "%s/trial-%zu-%d.sqlite", dir, i + 1, r + 1);
			ret = run_once(&o, p, r, (int)i, db);
			if (ret) {
				failed++;
				continue;
			}
			p->runs = r + 1;
			if (measure(&o, db, p, r))
				failed++;
			if (!o.keep)
				remove_store(db);
		}
	if (trial_signal)
		log_warn(0, "trial: stopped by signal %d: the runs done so far", (int)trial_signal);
	if (!o.keep)
		rmdir(dir);
	else
		t->store_dir = dir;
	trial_analyse(t);
	strbuf_init(&out, 1 << 22);
	ret = o.json ? trial_json(t, &out) : trial_text(t, &out);
	if (ret == 0)
		fputs(strbuf_str(&out), stdout);
	strbuf_release(&out);
	if (ret == 0 && o.plot && trial_plot(t, o.plot))
		ret = -EIO;
	free(t);
	if (trial_signal)
		return 128 + trial_signal;
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
