/*
 * trial.c - `jobscope trial`'s runs (see trial.h).
 *
 *   trial_first_cpus     the placement's CPUs: the first k of our mask
 *   make_mem_cgroup      its memory limit: a cgroup v2 with memory.max
 *   run_once             one `jobscope run`, placed in the child before exec
 *   measure              the run's store read: throughput and wall time
 *   trial_run_all        every placement, repeats going round them
 */
#include <errno.h>
#include <fcntl.h>
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

#include "analysis/jobreport.h"
#include "common/exitcode.h"
#include "common/log.h"
#include "common/fmt.h"
#include "run/trial.h"
#include "store/store.h"
#include "store/jobdata.h"
#include "store/reader.h"
#include "store/write.h"

#define TRIAL_CGROUP2_MOUNT "/sys/fs/cgroup"

int trial_first_cpus(int k, cpu_set_t *set, int *avail)
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
static int measure(const struct trial_runner *o, const char *db, struct trial_placement *p, int run)
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
	p->contended[run] = r->an.cpu_contended;
	p->stopped[run] = job.timed_out;
	if (r->an.cpu_contended)
		log_warn(
		    0,
		    "run %d: measured under CPU contention (the node %.0f%% busy, %.1f cores of "
		    "it other work's): its throughput is the machine's",
		    run + 1, r->an.host_cpu_busy_pct, r->an.other_cores_avg);
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
static int run_once(const struct trial_runner *o, struct trial_placement *p, int run, int index,
		    const char *db)
{
	char timeout[32], grace[32], interval[32], name[64], cg[4096] = "", file[4200];
	const char *head[] = {"jobscope",     "run", "--db",	    db,	      "--timeout", timeout,
			      "--kill-after", grace, "--interval",  interval, "--report",  "none",
			      "--name",	      name,  "--trial-run", "--"};
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
	if (p->cpus > 0 && trial_first_cpus(p->cpus, &set, &avail)) {
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
		char devs[4224]; /* "0,1,...,g-1": room for more GPUs than a node has */

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

int trial_run_all(const struct trial_runner *o, struct trial *t, char *dir, size_t dirsize,
		  int *failed, int *stopped_by)
{
	const char *tmp = getenv("TMPDIR");
	char db[4200];
	int ret;

	*failed = 0;
	*stopped_by = 0;
	snprintf(dir, dirsize, "%s/jobscope-trial-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return log_err(-errno, "cannot create a directory for the runs' stores");
	/*
	 * Repeats go round the placements (1, 2, 4, 1, 2, 4, ...), so that a
	 * load from elsewhere that comes and goes falls on all of them alike.
	 */
	catch_signals();
	for (int r = 0; r < o->repeat && !trial_signal; r++)
		for (size_t i = 0; i < t->nplace && !trial_signal; i++) {
			struct trial_placement *p = &t->place[i];

			if (p->runs < r)
				continue; /* it could not be run before */
			snprintf(db, sizeof(db), "%s/trial-%zu-%d.sqlite", dir, i + 1, r + 1);
			ret = run_once(o, p, r, (int)i, db);
			if (ret) {
				(*failed)++;
				continue;
			}
			p->runs = r + 1;
			if (measure(o, db, p, r))
				(*failed)++;
			if (!o->keep)
				remove_store(db);
		}
	*stopped_by = trial_signal;
	if (!o->keep)
		rmdir(dir);
	else
		t->store_dir = dir;
	return 0;
}

int trial_vary_parse(struct trial_vary *v, const char *arg, char *why, size_t whysize)
{
	char buf[512], *save = NULL, *tok, *list;
	const char *key;
	int *count;

	if (snprintf(buf, sizeof(buf), "%s", arg) >= (int)sizeof(buf))
		return snprintf(why, whysize, "--vary '%.40s...' is too long", arg), -EINVAL;
	list = strchr(buf, '=');
	if (!list)
		return snprintf(why, whysize, "--vary wants RES=LIST, not '%s'", arg), -EINVAL;
	*list++ = '\0';
	key = buf;
	if (strcmp(key, "cpus") == 0)
		count = &v->ncpus;
	else if (strcmp(key, "gpus") == 0)
		count = &v->ngpus;
	else if (strcmp(key, "mem") == 0)
		count = &v->nmem;
	else
		return snprintf(why, whysize, "--vary: '%s' is not cpus, gpus or mem", key),
		       -EINVAL;
	if (*count)
		return snprintf(why, whysize, "--vary %s given twice", key), -EINVAL;
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (*count == TRIAL_MAX_VALUES)
			return snprintf(why, whysize, "--vary %s: at most %d values", key,
					TRIAL_MAX_VALUES),
			       -EINVAL;
		if (count == &v->nmem) {
			uint64_t *b = &v->mem_bytes[*count];

			if (parse_size_bytes(tok, b) || *b < 4096 || *b >= (1ULL << 62))
				return snprintf(why, whysize, "--vary mem: bad size '%s'", tok),
				       -EINVAL;
		} else {
			char *end;
			long n;

			errno = 0;
			n = strtol(tok, &end, 10);
			if (errno || end == tok || *end || n < (count == &v->ngpus ? 0 : 1) ||
			    n > 4096)
				return snprintf(why, whysize, "--vary %s: bad count '%s'", key,
						tok),
				       -EINVAL;
			(count == &v->ncpus ? v->cpus : v->gpus)[*count] = (int)n;
		}
		(*count)++;
	}
	if (!*count)
		return snprintf(why, whysize, "--vary %s: no values", key), -EINVAL;
	return 0;
}

int trial_place(struct trial *t, const struct trial_vary *v)
{
	for (int c = 0; c < (v->ncpus ? v->ncpus : 1); c++)
		for (int g = 0; g < (v->ngpus ? v->ngpus : 1); g++)
			for (int m = 0; m < (v->nmem ? v->nmem : 1); m++) {
				struct trial_placement *p;

				if (t->nplace == TRIAL_MAX_PLACEMENTS)
					return -E2BIG;
				p = &t->place[t->nplace++];
				p->cpus = v->ncpus ? v->cpus[c] : 0;
				p->gpus = v->ngpus ? v->gpus[g] : -1;
				p->mem_bytes = v->nmem ? v->mem_bytes[m] : 0;
			}
	return 0;
}
