/*
 * cmd_run.c - `jobscope run [OPTIONS] -- CMD [ARGS...]`.
 *
 * Starts CMD as a child with stdin/stdout/stderr untouched, becomes a child
 * subreaper so that every descendant stays in the tree, samples the host
 * and the tree at start, every interval and once more at exit, stores each
 * tick in one transaction, and prints the report when the tree is gone.
 *
 * One thread, one poll() loop over a signalfd (SIGCHLD, forwarded signals)
 * and two timerfds (ticks, --timeout).  Children are reaped with
 * waitid(WNOWAIT) first, so their final CPU and I/O are read from /proc
 * while they are zombies, then with wait4() for the exact rusage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common/log.h"
#include "common/sysroot.h"
#include "common/timeutil.h"
#include "analysis/jobreport.h"
#include "analysis/appsummary.h"
#include "analysis/cudatables.h"
#include "analysis/reportckpt.h"
#include "cli/run_app.h"
#include "cuda/collect.h"
#include "report/report.h"
#include "sample/gpu/gpu_set.h"
#include "sample/host.h"
#include "sample/ptree.h"
#include "store/store.h"
#include "store/tick.h"

#define RUN_MIN_INTERVAL_MS 50
#define RUN_MAX_GPU_PROCS   4096    /* processes on all GPUs at one tick */
#define RUN_MAX_GPU_EVENTS  64	    /* GPU events taken per tick */
#define RUN_PACK_AFTER_MS   3600000 /* --pack-after's default */
#define RUN_CUDA_MIN_MS	    200	    /* the CUDA hook's interval: the run's, at least this */
#define RUN_CUDA_FINISH_MS  2000    /* for the hooks' last frames after the tree is gone */
#define RUN_POLL_FDS	    (3 + 2 + 1 + CUDA_COLLECT_MAX_PEERS)

enum report_format { REPORT_TEXT, REPORT_JSON, REPORT_NONE };

struct run_opts {
	int64_t interval_ms;
	int64_t timeout_ms; /* 0: none */
	int64_t kill_after_ms;
	const char *name;
	const char *db;
	char db_buf[4096];
	enum report_format report;
	const char *report_file;
	bool no_wait;
	int64_t pack_after_ms; /* 0: never */
	bool cuda;
	const char *cupti; /* --cupti: libcupti's path */
	bool no_statsd;
	char **argv;
};

struct run_state {
	const struct run_opts *opt;
	struct store *st;
	int64_t node_id;
	struct job_record job;
	struct wallclock wc;
	struct host_sampler hs;
	struct host_sample *host;
	struct ptree pt;
	struct summary sum;
	struct jobseries js;
	struct analysis an;
	struct store_packer packer; /* --pack-after */
	sigset_t orig_mask;
	struct rlimit orig_nofile; /* restored for CMD */
	bool nofile_raised;
	int sigfd, tickfd, timeoutfd;

	pid_t child;
	bool child_done;
	bool no_children;
	bool timed_out;
	bool killed; /* the SIGKILL stage of --timeout has run */
	int64_t timeout_at_ms;

	struct gpu_set gpus;
	struct device_record devs[GPU_MAX_DEVICES];
	struct gpu_sample gsample[GPU_MAX_DEVICES];
	bool gsample_ok[GPU_MAX_DEVICES];
	struct gpu_set_procs gprocs; /* the job's processes on each GPU, and one for the others */
	struct event_record gevents[RUN_MAX_GPU_EVENTS];
	size_t ngevents;

	/* --cuda: the hook's socket, and the run's own note (pid 0) */
	struct cuda_collector cuda;
	struct cuda_proc cuda_note;
	struct cuda_tables cuda_tables; /* read back from the store for the report */
	char cuda_dir[256];
	char cuda_hook[4096];
	int cuda_err; /* the first CUDA snapshot that could not be stored */

	struct run_app app;	    /* StatsD lines and markers from the command */
	struct app_summary app_sum; /* ...read back from the store for the report */

	int64_t tick_no;
	int64_t lost, first_lost_ms, last_lost_ms;
	int64_t last_tick_ms;
	bool event_lost; /* an event not stored: the live summary is not the store's */
	int lost_err;
	bool scan_warned;
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

static int parse_opts(int argc, char **argv, struct run_opts *o)
{
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

	memset(o, 0, sizeof(*o));
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
				o->report = REPORT_TEXT;
			else if (strcmp(optarg, "json") == 0)
				o->report = REPORT_JSON;
			else if (strcmp(optarg, "none") == 0)
				o->report = REPORT_NONE;
			else
				return cli_usage_error(
				    "run", "bad --report '%s' (text, json or none)", optarg);
			break;
		case 'o':
			o->report_file = optarg;
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
		if (cli_default_db(o->db_buf, sizeof(o->db_buf)))
			return EXIT_USAGE;
		o->db = o->db_buf;
	}
	return 0;
}

static void join_argv(char **argv, char *out, size_t size)
{
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; argv[i] && len + 1 < size; i++) {
		int n = snprintf(out + len, size - len, "%s%s", i ? " " : "", argv[i]);

		if (n < 0)
			break;
		len += (size_t)n;
	}
	if (len >= size && size > 4)
		memcpy(out + size - 4, "...", 4);
}

/*
 * Writes one tick (store/tick.h: the rows of every process are the run's
 * job's); on failure rolls back and counts the tick as lost.
 */
static void store_tick(struct run_state *r, int64_t ts_ms, bool host_ok)
{
	struct store *st = r->st;
	struct store_tick_rows t = {
	    .st = st,
	    .node_id = r->node_id,
	    .ts_ms = ts_ms,
	    .tick_no = r->tick_no,
	    .host = host_ok ? r->host : NULL,
	    .pt = &r->pt,
	    .jobs = NULL,
	    .job_row = r->job.id,
	    .ndevices = r->gpus.ndevices,
	    .devs = r->devs,
	    .gsample = r->gsample,
	    .gsample_ok = r->gsample_ok,
	    .gprocs = &r->gprocs,
	    .events = r->gevents,
	    .nevents = r->ngevents,
	};
	int ret = store_tick_begin(st);

	if (!ret)
		ret = store_tick_put_host(&t);
	if (!ret)
		ret = store_tick_put_procs(&t);
	if (!ret)
		ret = store_put_job_sample(st, r->job.id, ts_ms, ptree_job(&r->pt));
	if (!ret)
		ret = store_tick_put_gpus(&t);
	if (!ret)
		ret = store_tick_put_events(&t);
	if (!ret)
		ret = run_app_put(&r->app, st, r->job.id, ts_ms);
	if (!ret)
		ret = store_tick_commit(st);
	if (!ret) {
		store_tick_rows_kept(&t);
		r->packer.after_ms = r->opt->pack_after_ms;
		store_pack_tick(st, &r->packer, ts_ms, INT64_MAX);
		return;
	}
	store_tick_abort(st);
	store_tick_rows_lost(&t);
	if (r->lost == 0)
		log_warn(ret,
			 "cannot store samples in '%s' (the run goes on; the report will say "
			 "what was lost)",
			 store_path(st));
	if (r->lost == 0)
		r->first_lost_ms = ts_ms;
	r->last_lost_ms = ts_ms;
	r->lost_err = ret;
	r->lost++;
}

/*
 * Every GPU: its reading, the processes on it (the tree's one by one, the
 * others' folded into one entry: their sum is all the energy split needs)
 * and the events since the last tick.  What fails is left out, never 0.
 */
/* ---- --cuda ---- */

/* libjobscope-cuda.so: $JOBSCOPE_CUDA_HOOK, next to this binary, or where it is installed. */
static int find_cuda_hook(char *out, size_t size, char *tried, size_t tsize)
{
	const char *given = getenv("JOBSCOPE_CUDA_HOOK");
	char exe[4096], cand[3][4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;
	size_t ncand = 0, used = 0;

	if (given && *given) {
		snprintf(out, size, "%s", given);
		snprintf(tried, tsize, "%s", given);
		return access(given, R_OK) == 0 ? 0 : -ENOENT;
	}
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(cand[ncand++], sizeof(cand[0]), "%.4000s/libjobscope-cuda.so",
				 exe);
			snprintf(cand[ncand++], sizeof(cand[0]),
				 "%.4000s/../lib/jobscope/libjobscope-cuda.so", exe);
		}
	}
	snprintf(cand[ncand++], sizeof(cand[0]), "%s/libjobscope-cuda.so", JOBSCOPE_HOOK_DIR);
	tried[0] = '\0';
	for (size_t i = 0; i < ncand; i++) {
		if (realpath(cand[i], out) && strlen(out) < size && access(out, R_OK) == 0)
			return 0;
		if (used < tsize) {
			int w =
			    snprintf(tried + used, tsize - used, "%s%s", i ? ", " : "", cand[i]);

			if (w > 0)
				used += (size_t)w;
		}
	}
	return -ENOENT;
}

static void cuda_note(struct run_state *r, enum cuda_proc_state state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void cuda_note(struct run_state *r, enum cuda_proc_state state, const char *fmt, ...)
{
	va_list ap;

	r->cuda_note.state = state;
	va_start(ap, fmt);
	vsnprintf(r->cuda_note.message, sizeof(r->cuda_note.message), fmt, ap);
	va_end(ap);
	if (state != CUDA_PROC_OK)
		log_warn(0, "--cuda: %s", r->cuda_note.message);
}

/*
 * The hook's socket in a directory of our own, and the variables CMD gets
 * (child_environ).  Failing here only costs the tables: the run goes on,
 * and the note says why.
 */
static void setup_cuda(struct run_state *r)
{
	const char *other = getenv("CUDA_INJECTION64_PATH");
	const char *tmp = getenv("TMPDIR");
	char tried[1024], path[300];
	int ret;

	if (!r->opt->cuda)
		return;
	/* our own hook, set for every task by a site (docs/cuda.md): the run takes it over */
	if (other && *other && strcmp(basename(other), "libjobscope-cuda.so") != 0) {
		cuda_note(r, CUDA_PROC_BUSY,
			  "CUDA_INJECTION64_PATH is already set (%.150s): another profiler (nsys?) "
			  "injects into CUDA, so --cuda backs off",
			  other);
		return;
	}
	if (find_cuda_hook(r->cuda_hook, sizeof(r->cuda_hook), tried, sizeof(tried))) {
		cuda_note(r, CUDA_PROC_ERROR,
			  "libjobscope-cuda.so not found (tried %.180s): set JOBSCOPE_CUDA_HOOK",
			  tried);
		return;
	}
	snprintf(r->cuda_dir, sizeof(r->cuda_dir), "%.200s/jobscope-cuda-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(r->cuda_dir)) {
		cuda_note(r, CUDA_PROC_ERROR,
			  "cannot make a directory for the CUDA socket in %.150s: %s",
			  tmp && *tmp ? tmp : "/tmp", strerror(errno));
		r->cuda_dir[0] = '\0';
		return;
	}
	snprintf(path, sizeof(path), "%s/sock", r->cuda_dir);
	ret = cuda_collector_listen(
	    &r->cuda, path,
	    r->opt->interval_ms > RUN_CUDA_MIN_MS ? r->opt->interval_ms : RUN_CUDA_MIN_MS, false);
	if (ret)
		cuda_note(r, CUDA_PROC_ERROR, "cannot listen for the CUDA hook: %s",
			  strerror(-ret));
}

static int store_cuda_proc(void *arg, const struct cuda_proc *p)
{
	struct run_state *r = arg;
	int ret = store_put_cuda_proc(r->st, r->job.id, p, wallclock_now_ms(&r->wc));

	if (ret && !r->cuda_err) {
		r->cuda_err = ret;
		log_warn(ret, "cannot store the CUDA tables of pid %d in '%s'", (int)p->pid,
			 store_path(r->st));
	}
	return ret;
}

/* The hooks' last frames, every table stored, and the run's note. */
static void finish_cuda(struct run_state *r)
{
	int ret;

	if (!r->opt->cuda)
		return;
	if (r->cuda.listen_fd >= 0) {
		cuda_collector_finish(&r->cuda, RUN_CUDA_FINISH_MS);
		cuda_collector_drain(&r->cuda, store_cuda_proc, r);
		if (r->cuda.seen == 0)
			cuda_note(
			    r, CUDA_PROC_OFF,
			    "no process of the run initialised CUDA (a CUDA program loads the "
			    "hook in cuInit): no CUDA tables");
	}
	store_cuda_proc(r, &r->cuda_note);
	ret = cuda_tables_load(&r->cuda_tables, r->st, r->job.id,
			       wallclock_now_ms(&r->wc) - r->job.start_ms);
	if (ret)
		log_warn(ret, "cannot read the CUDA tables of run %" PRId64 " back", r->job.id);
}

/* The run's CUDA tables as the store holds them (a replay shows the same), or NULL. */
static const struct cuda_tables *cuda_of(struct run_state *r)
{
	return r->cuda_tables.present ? &r->cuda_tables : NULL;
}

static void release_cuda(struct run_state *r)
{
	cuda_tables_release(&r->cuda_tables);
	cuda_collector_release(&r->cuda);
	cuda_proc_release(&r->cuda_note);
	if (r->cuda_dir[0])
		rmdir(r->cuda_dir);
}

static void sample_gpus(struct run_state *r, int64_t ts)
{
	r->ngevents = 0;
	gpu_set_processes(&r->gpus, &r->pt, r->gsample, r->gsample_ok, &r->gprocs);
	r->ngevents = gpu_set_events(&r->gpus, ts, r->gevents, RUN_MAX_GPU_EVENTS);
}

static void tick(struct run_state *r)
{
	int64_t ts = wallclock_now_ms(&r->wc);
	bool host_ok = host_sample_read(&r->hs, r->host) == 0;
	int ret;

	r->tick_no++;
	r->last_tick_ms = ts;
	ret = ptree_scan(&r->pt, ts);
	if (ret && !r->scan_warned) {
		log_warn(ret, "cannot read the process tree");
		r->scan_warned = true;
	}
	ptree_set_sampler_cpu(&r->pt, proc_self_cpu_ms());
	r->job.samples++;

	if (host_ok) {
		summary_add_host(&r->sum, ts, r->host);
		jobseries_add_host(&r->js, ts, r->host);
	}
	for (size_t i = 0; i < r->pt.nprocs; i++) {
		const struct ptree_proc *p = &r->pt.procs[i];

		if (p->emit)
			summary_add_proc(&r->sum, &p->info, ts, &p->cur);
	}
	summary_add_job(&r->sum, ts, ptree_job(&r->pt));
	jobseries_add_job(&r->js, ts, ptree_job(&r->pt));
	if (r->gpus.ndevices || r->gpus.nopened) {
		sample_gpus(r, ts);
		for (int i = 0; i < r->gpus.ndevices; i++) {
			if (!r->gsample_ok[i])
				continue;
			summary_add_gpu(&r->sum, &r->devs[i], ts, &r->gsample[i]);
			jobseries_add_gpu(&r->js, &r->devs[i], ts, &r->gsample[i]);
			for (size_t k = 0; k < r->gprocs.n; k++) {
				const struct gpu_set_proc *gp = &r->gprocs.proc[k];

				if (gp->dev == i)
					summary_add_gpu_proc(&r->sum, &r->devs[i],
							     gp->proc ? &gp->proc->info : NULL, ts,
							     &gp->g);
			}
		}
		for (size_t k = 0; k < r->ngevents; k++)
			summary_add_event(&r->sum, &r->gevents[k]);
	}
	store_tick(r, ts, host_ok);
	if (r->cuda.listen_fd >= 0)
		cuda_collector_drain(&r->cuda, store_cuda_proc, r);
}

static void record_status(struct run_state *r, int status)
{
	r->child_done = true;
	r->job.has_exit = true;
	if (WIFSIGNALED(status)) {
		r->job.signal = WTERMSIG(status);
		r->job.exit_code = 128 + r->job.signal;
	} else {
		r->job.signal = 0;
		r->job.exit_code = WEXITSTATUS(status);
	}
}

/* Reaps every child that has exited, reading its last values first. */
static void reap(struct run_state *r)
{
	for (;;) {
		siginfo_t si;
		struct rusage ru;
		int status;
		pid_t pid;

		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				r->no_children = true;
			return;
		}
		if (si.si_pid == 0)
			return;
		ptree_child_exiting(&r->pt, si.si_pid);
		pid = wait4(si.si_pid, &status, 0, &ru);
		if (pid < 0)
			return;
		ptree_child_reaped(&r->pt, pid, &ru, wallclock_now_ms(&r->wc));
		if (pid == r->child)
			record_status(r, status);
	}
}

/* Sends sig to CMD, or to the whole tree. */
static void signal_tree(struct run_state *r, int sig, bool whole_tree)
{
	if (!r->child_done)
		kill(r->child, sig);
	if (!whole_tree && !r->child_done)
		return;
	for (size_t i = 0; i < r->pt.nprocs; i++) {
		const struct ptree_proc *p = &r->pt.procs[i];

		if (p->alive && p->info.pid != r->child)
			kill(p->info.pid, sig);
	}
}

static void on_timeout(struct run_state *r)
{
	uint64_t n;

	if (read(r->timeoutfd, &n, sizeof(n)) < 0)
		return;
	if (!r->timed_out) {
		/* refresh the tree so processes started since the last tick get it too */
		ptree_scan(&r->pt, wallclock_now_ms(&r->wc));
		r->timed_out = true;
		r->timeout_at_ms = wallclock_now_ms(&r->wc);
		log_info("--timeout reached: sending SIGTERM to the command's processes");
		signal_tree(r, SIGTERM, true);
		if (r->opt->kill_after_ms > 0) {
			time_arm_timer(r->timeoutfd, r->opt->kill_after_ms, 0);
			return;
		}
	}
	if (!r->killed) {
		r->killed = true;
		ptree_scan(&r->pt, wallclock_now_ms(&r->wc));
		log_info("still running %s after SIGTERM: sending SIGKILL",
			 r->opt->kill_after_ms ? "--kill-after" : "");
		signal_tree(r, SIGKILL, true);
	}
}

static void on_signal(struct run_state *r)
{
	struct signalfd_siginfo si;

	while (read(r->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			reap(r);
			continue;
		}
		/*
		 * A signal the terminal sent (Ctrl-C) reached CMD already: it is
		 * in our process group.  Pass on only those a process sent us.
		 */
		if (si.ssi_code == SI_KERNEL)
			continue;
		signal_tree(r, (int)si.ssi_signo, false);
	}
}

/*
 * CMD's environment: ours plus JOBSCOPE_RUN_ID (and with --cuda the hook's
 * variables), built before fork() because a GPU library may have started
 * threads, and after fork() only async-signal-safe calls are allowed (no
 * setenv, no malloc).  *nadded: the entries at the end that we allocated.
 */
static int env_add(char **envp, size_t at, size_t *added, const char *key, const char *value)
{
	char *entry;

	if (asprintf(&entry, "%s%s", key, value) < 0)
		return -ENOMEM;
	envp[at + (*added)++] = entry;
	return 0;
}

static char **child_environ(const struct run_state *r, size_t *nadded)
{
	extern char **environ;
	static const char *const ours[] = {
	    "JOBSCOPE_RUN_ID=",	       "CUDA_INJECTION64_PATH=", "JOBSCOPE_CUDA_SOCKET=",
	    "JOBSCOPE_CUPTI_LIBRARY=", "STATSD_HOST=",		 "STATSD_PORT=",
	    "JOBSCOPE_STATSD_SOCKET="};
	size_t n = 0, out = 0, added = 0;
	char id[32];
	char **envp;
	int ret;

	while (environ[n])
		n++;
	envp = calloc(n + 8, sizeof(*envp));
	if (!envp)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		bool replaced = false;

		/*
		 * JOBSCOPE_RUN_ID always, the hook's with --cuda, the CUPTI path
		 * with --cupti, StatsD's when the receiver is on (the socket's
		 * even when it has none: a parent run's would be wrong here)
		 */
		for (size_t k = 0; k < sizeof(ours) / sizeof(ours[0]); k++)
			replaced |=
			    strncmp(environ[i], ours[k], strlen(ours[k])) == 0 &&
			    (k == 0 ||
			     (k < 4 && r->cuda.listen_fd >= 0 && (k < 3 || r->opt->cupti)) ||
			     (k >= 4 && r->app.on));
		if (!replaced)
			envp[out++] = environ[i];
	}
	snprintf(id, sizeof(id), "%" PRId64, r->job.id);
	ret = env_add(envp, out, &added, ours[0], id);
	if (!ret && r->cuda.listen_fd >= 0) {
		ret = env_add(envp, out, &added, ours[1], r->cuda_hook);
		if (!ret)
			ret = env_add(envp, out, &added, ours[2], r->cuda.path);
		if (!ret && r->opt->cupti)
			ret = env_add(envp, out, &added, ours[3], r->opt->cupti);
	}
	if (!ret && r->app.on) {
		ret = env_add(envp, out, &added, ours[4], "127.0.0.1");
		if (!ret)
			ret = env_add(envp, out, &added, ours[5], r->app.port);
		if (!ret && r->app.col.unix_fd >= 0)
			ret = env_add(envp, out, &added, ours[6], r->app.col.path);
	}
	*nadded = added;
	if (ret) {
		for (size_t i = 0; i < added; i++)
			free(envp[out + i]);
		free(envp);
		return NULL;
	}
	return envp;
}

static void free_environ(char **envp, size_t nadded)
{
	size_t n = 0;

	while (envp[n])
		n++;
	for (size_t i = 0; i < nadded; i++)
		free(envp[n - 1 - i]);
	free(envp);
}

static int spawn(struct run_state *r)
{
	int pipefd[2];
	int child_errno = 0;
	ssize_t n;
	size_t nadded = 0;
	char **envp = child_environ(r, &nadded);

	if (!envp)
		return log_err(-ENOMEM, "out of memory");
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		int ret = -errno;

		free_environ(envp, nadded);
		return log_err(ret, "pipe");
	}
	r->child = fork();
	if (r->child < 0) {
		int ret = -errno;

		close(pipefd[0]);
		close(pipefd[1]);
		free_environ(envp, nadded);
		return log_err(ret, "cannot start '%s'", r->opt->argv[0]);
	}
	if (r->child == 0) {
		int e;

		close(pipefd[0]);
		signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_SETMASK, &r->orig_mask, NULL);
		if (r->nofile_raised)
			setrlimit(RLIMIT_NOFILE, &r->orig_nofile);
		execvpe(r->opt->argv[0], r->opt->argv, envp);
		e = errno;
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			_exit(EXIT_RUN_FAILED);
		_exit(e == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
	}
	close(pipefd[1]);
	free_environ(envp, nadded); /* ours; the rest are environ's */
	do
		n = read(pipefd[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n == (ssize_t)sizeof(child_errno))
		return -child_errno;
	return 0;
}

static void add_event(struct run_state *r, int64_t ts_ms, const char *kind, int32_t pid,
		      int64_t value, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* The run's summary and verdicts, kept for `jobscope report --by ...` history. */
static void store_run_summary(struct run_state *r)
{
	struct job_summary_record rec;
	struct strbuf json;

	strbuf_init(&json, 0);
	summary_to_record(&r->sum, &rec);
	if (report_json(&r->sum, &r->an, cuda_of(r), &r->app_sum, &json) == 0)
		rec.report_json = strbuf_str(&json);
	if (store_put_job_summary(r->st, &rec))
		log_warn(0, "the summary of run %" PRId64 " is not recorded in '%s'", r->job.id,
			 store_path(r->st));
	strbuf_release(&json);
}

static void add_event(struct run_state *r, int64_t ts_ms, const char *kind, int32_t pid,
		      int64_t value, const char *fmt, ...)
{
	struct event_record e;
	va_list ap;

	memset(&e, 0, sizeof(e));
	e.ts_ms = ts_ms;
	snprintf(e.kind, sizeof(e.kind), "%s", kind);
	e.pid = pid;
	e.value = value;
	va_start(ap, fmt);
	vsnprintf(e.message, sizeof(e.message), fmt, ap);
	va_end(ap);
	summary_add_event(&r->sum, &e);
	if (store_tick_begin(r->st) == 0) {
		if (store_put_event(r->st, r->node_id, r->job.id, &e) == 0 &&
		    store_tick_commit(r->st) == 0)
			return;
		store_tick_abort(r->st);
	}
	r->event_lost = true;
	log_warn(0, "cannot store the '%s' event of run %" PRId64 " in '%s'", kind, r->job.id,
		 store_path(r->st));
}

/*
 * The live summary and series, which went through the same calls as a
 * replay of what was stored, as the run's report checkpoint: a later
 * `jobscope report` restores it instead of replaying the run.  Only when
 * every row was stored (else the store holds less than they do).
 */
static void save_report_ckpt(struct run_state *r)
{
	struct report_ckpt_mark mark = {.ts_ms = r->last_tick_ms, .window_ms = r->last_tick_ms};
	int ret;

	ret = store_max_seq(r->st, &mark.seq);
	if (!ret)
		ret = report_ckpt_save(r->st, &r->sum, &r->js, &r->job, &mark,
				       wallclock_now_ms(&r->wc));
	if (ret && ret != -EPROTONOSUPPORT)
		log_warn(ret, "no report checkpoint for run %" PRId64 " in '%s'", r->job.id,
			 store_path(r->st));
}

static void finish_job(struct run_state *r, int64_t end_ms)
{
	struct job_record *j = &r->job;
	char lost_from[32], lost_to[32];
	int ret;

	j->end_ms = end_ms;
	j->timed_out = r->timed_out;
	j->lost_samples = r->lost;
	j->sampler_cpu_ms = (int64_t)proc_self_cpu_ms();
	if (r->timed_out)
		add_event(r, r->timeout_at_ms, "timeout", j->pid, r->opt->timeout_ms,
			  "--timeout of %.3gs reached: SIGTERM sent%s", r->opt->timeout_ms / 1000.0,
			  r->killed ? ", then SIGKILL" : "");
	if (j->signal)
		add_event(r, end_ms, "signal", j->pid, j->signal, "%s killed by signal %d (%s)",
			  r->opt->argv[0], j->signal, strsignal(j->signal));
	else
		add_event(r, end_ms, "exit", j->pid, j->exit_code, "%s exited with code %d",
			  r->opt->argv[0], j->exit_code);
	if (r->app.agg.bad_lines || r->app.agg.dropped)
		add_event(r, end_ms, "statsd_dropped", 0,
			  (int64_t)(r->app.agg.bad_lines + r->app.agg.dropped),
			  "StatsD: %llu of %llu lines dropped (%llu not valid, %llu over the caps)",
			  (unsigned long long)(r->app.agg.bad_lines + r->app.agg.dropped),
			  (unsigned long long)r->app.agg.lines,
			  (unsigned long long)r->app.agg.bad_lines,
			  (unsigned long long)r->app.agg.dropped);
	if (r->lost) {
		format_duration_ms(r->first_lost_ms - j->start_ms, lost_from, sizeof(lost_from));
		format_duration_ms(r->last_lost_ms - j->start_ms, lost_to, sizeof(lost_to));
		add_event(r, r->first_lost_ms, "lost_samples", 0, r->lost,
			  "%" PRId64 " samples between +%s and +%s not stored: %s", r->lost,
			  lost_from, lost_to, strerror(-r->lost_err));
	}
	if (store_job_update(r->st, j))
		log_warn(0, "the end of run %" PRId64 " is not recorded in '%s'", j->id,
			 store_path(r->st));
	else if (!r->lost && !r->event_lost)
		save_report_ckpt(r);
	if (summary_load_libs(&r->sum, r->st))
		log_warn(0, "the libraries of run %" PRId64 " cannot be read back from '%s'", j->id,
			 store_path(r->st));
	summary_finish(&r->sum, j);
	job_report_analyse(&r->sum, &r->js, &r->an);
	ret = app_summary_load(&r->app_sum, r->st, &r->sum);
	if (ret)
		log_warn(ret, "the app metrics of run %" PRId64 " cannot be read back from '%s'",
			 j->id, store_path(r->st));
	store_run_summary(r);
}

static int print_report(struct run_state *r)
{
	struct strbuf out;
	struct report_options ro = {
	    .utf8 = cli_utf8(), .max_procs = 10, .cuda = cuda_of(r), .app = &r->app_sum};
	int ret;

	if (r->opt->report == REPORT_NONE)
		return 0;
	strbuf_init(&out, 0);
	if (r->opt->report == REPORT_JSON) {
		ret = report_json(&r->sum, &r->an, cuda_of(r), &r->app_sum, &out);
	} else {
		ret = report_text(&r->sum, &r->an, &ro, &out);
		strbuf_addf(&out,
			    "  Stored    as run %" PRId64 " in %s (jobscope report %" PRId64 ")\n",
			    r->job.id, store_path(r->st), r->job.id);
	}
	if (!ret) {
		if (r->opt->report_file)
			ret = cli_write_file(r->opt->report_file, out.buf, out.len);
		else
			fwrite(out.buf, 1, out.len, stderr);
	}
	strbuf_release(&out);
	return ret;
}

/* Opens the GPU libraries there are; a GPU that cannot be stored is only left out of the store. */
static int setup_gpus(struct run_state *r)
{
	struct gpu_set *set = &r->gpus;

	gpu_set_init(set);
	gpu_set_open(set);
	if (set->ndevices == 0)
		return 0;
	if (gpu_set_procs_alloc(&r->gprocs, RUN_MAX_GPU_PROCS, true))
		return log_err(-ENOMEM, "out of memory");
	store_tick_put_devices(r->st, r->node_id, set, r->devs);
	return 0;
}

static int setup(struct run_state *r)
{
	const struct run_opts *o = r->opt;
	char host[256];
	struct passwd *pw;
	cpu_set_t set;
	int ret;

	ret = store_open(o->db, STORE_CREATE, &r->st);
	if (ret)
		return ret;
	r->host = calloc(1, sizeof(*r->host));
	if (!r->host)
		return log_err(-ENOMEM, "out of memory");
	host_sampler_init(&r->hs, sysconf(_SC_CLK_TCK));
	ret = host_sample_read(&r->hs, r->host);
	if (ret)
		log_warn(ret, "cannot read %s/proc/stat: host figures will be missing",
			 sysroot_get());
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';

	wallclock_init(&r->wc);
	memset(&r->job, 0, sizeof(r->job));
	snprintf(r->job.hostname, sizeof(r->job.hostname), "%s", host);
	snprintf(r->job.scheduler, sizeof(r->job.scheduler), "run");
	snprintf(r->job.name, sizeof(r->job.name), "%s", o->name ? o->name : "");
	join_argv(o->argv, r->job.command, sizeof(r->job.command));
	r->job.uid = getuid();
	pw = getpwuid(r->job.uid);
	snprintf(r->job.user, sizeof(r->job.user), "%s", pw ? pw->pw_name : "");
	r->job.interval_ms = o->interval_ms;
	r->job.host_cores = ret ? 0 : host_online_cpus(r->host);
	r->job.host_mem_bytes = ret ? 0 : r->host->mem.total_bytes;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		r->job.cores_allowed = CPU_COUNT(&set);
	r->job.start_ms = wallclock_now_ms(&r->wc);

	ret = store_node(r->st, host, r->job.host_cores, r->job.host_mem_bytes,
			 host_boot_ms(r->host), &r->node_id);
	if (!ret) {
		r->job.node_id = r->node_id;
		ret = store_job_begin(r->st, &r->job);
	}
	if (ret)
		return ret;
	ret = setup_gpus(r);
	if (ret)
		return ret;
	setup_cuda(r);
	if (!o->no_statsd)
		run_app_setup(&r->app);
	/* the sampler keeps /proc/PID/stat open: one descriptor per process */
	if (getrlimit(RLIMIT_NOFILE, &r->orig_nofile) == 0 &&
	    r->orig_nofile.rlim_cur < r->orig_nofile.rlim_max) {
		struct rlimit raised = r->orig_nofile;

		raised.rlim_cur = raised.rlim_max;
		r->nofile_raised = setrlimit(RLIMIT_NOFILE, &raised) == 0;
	}
	ptree_init(&r->pt, getpid(), sysconf(_SC_CLK_TCK), host_boot_ms(r->host));
	summary_init(&r->sum, &r->job);
	jobseries_init(&r->js, r->job.interval_ms);
	return 0;
}

static bool run_over(const struct run_state *r)
{
	return r->child_done && (r->no_children || r->opt->no_wait);
}

static void loop(struct run_state *r)
{
	bool told_waiting = false;

	while (!run_over(r)) {
		struct pollfd
		    fds[RUN_POLL_FDS]; /* set as far as used: no 8 KiB to clear each wake */
		size_t nfds, napp;

		fds[0] = (struct pollfd){.fd = r->sigfd, .events = POLLIN};
		fds[1] = (struct pollfd){.fd = r->tickfd, .events = POLLIN};
		fds[2] = (struct pollfd){.fd = r->timeoutfd, .events = POLLIN};
		napp = run_app_fds(&r->app, fds + 3, 2);
		nfds = 3 + napp;
		nfds += cuda_collector_fds(&r->cuda, fds + nfds, RUN_POLL_FDS - nfds);

		if (poll(fds, nfds, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_err(-errno, "poll");
			return;
		}
		if (napp)
			run_app_handle(&r->app, fds + 3, napp, wallclock_now_ms(&r->wc), r->st,
				       r->job.id);
		if (nfds > 3 + napp)
			cuda_collector_handle(&r->cuda, fds + 3 + napp, nfds - 3 - napp);
		if (fds[0].revents & POLLIN)
			on_signal(r);
		if (fds[2].revents & POLLIN)
			on_timeout(r);
		if (fds[1].revents & POLLIN) {
			uint64_t n;

			if (read(r->tickfd, &n, sizeof(n)) == sizeof(n))
				tick(r);
		}
		if (r->child_done && !run_over(r) && !told_waiting) {
			tick(r);
			if (ptree_job(&r->pt)->nprocs > 0)
				log_info("%s exited; waiting for the %u process%s it left running "
					 "(--no-wait to stop now)",
					 r->opt->argv[0], ptree_job(&r->pt)->nprocs,
					 ptree_job(&r->pt)->nprocs == 1 ? "" : "es");
			told_waiting = true;
		}
	}
}

static int run(const struct run_opts *o)
{
	struct run_state r;
	sigset_t mask;
	int ret, exit_code;

	memset(&r, 0, sizeof(r));
	r.opt = o;
	r.sigfd = r.tickfd = r.timeoutfd = -1;
	cuda_collector_init(&r.cuda);
	run_app_init(&r.app);
	app_summary_init(&r.app_sum);
	cuda_proc_init(&r.cuda_note);
	cuda_tables_init(&r.cuda_tables);
	ret = setup(&r);
	if (ret) {
		exit_code = EXIT_USAGE;
		goto out_release;
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigprocmask(SIG_BLOCK, &mask, &r.orig_mask);
	r.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	r.tickfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	r.timeoutfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (r.sigfd < 0 || r.tickfd < 0 || r.timeoutfd < 0) {
		log_err(-errno, "cannot set up signal and timer descriptors");
		exit_code = EXIT_RUN_FAILED;
		goto out_restore;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		log_warn(-errno, "cannot become a child subreaper: double-forked processes "
				 "will escape the tree");

	ret = spawn(&r);
	if (ret) {
		int status;

		log_err(ret, "cannot run '%s'", o->argv[0]);
		if (r.child > 0)
			waitpid(r.child, &status, 0);
		exit_code = ret == -ENOENT ? EXIT_NOT_FOUND
			    : r.child > 0  ? EXIT_CANNOT_EXEC
					   : EXIT_RUN_FAILED;
		r.job.has_exit = true;
		r.job.exit_code = exit_code;
		r.job.end_ms = wallclock_now_ms(&r.wc);
		store_job_update(r.st, &r.job);
		goto out_restore;
	}
	signal(SIGPIPE, SIG_IGN);
	r.job.pid = r.child;

	tick(&r);
	time_arm_timer(r.tickfd, o->interval_ms, o->interval_ms);
	if (o->timeout_ms)
		time_arm_timer(r.timeoutfd, o->timeout_ms, 0);
	loop(&r);
	reap(&r);
	run_app_drain(&r.app, wallclock_now_ms(&r.wc)); /* its last lines, still queued */
	tick(&r); /* the last sample: every process's final values */
	finish_cuda(&r);

	finish_job(&r, wallclock_now_ms(&r.wc));
	if (print_report(&r))
		log_warn(0, "the report could not be written");
	exit_code = r.job.exit_code;

out_restore:
	sigprocmask(SIG_SETMASK, &r.orig_mask, NULL);
out_release:
	if (r.sigfd >= 0)
		close(r.sigfd);
	if (r.tickfd >= 0)
		close(r.tickfd);
	if (r.timeoutfd >= 0)
		close(r.timeoutfd);
	release_cuda(&r);
	run_app_release(&r.app);
	app_summary_release(&r.app_sum);
	summary_release(&r.sum);
	jobseries_release(&r.js);
	ptree_release(&r.pt);
	gpu_set_close(&r.gpus);
	gpu_set_procs_release(&r.gprocs);
	host_sampler_release(&r.hs);
	free(r.host);
	if (r.st)
		store_close(r.st);
	return exit_code;
}

static int cmd_run(int argc, char **argv)
{
	struct run_opts o;
	const char *root = getenv("JOBSCOPE_SYSROOT");
	int ret;

	if (root)
		sysroot_set(root);
	ret = parse_opts(argc, argv, &o);
	if (ret < 0)
		return 0; /* --help */
	if (ret)
		return ret;
	return run(&o);
}

const struct cli_command cmd_run_def = {
    "run",
    cmd_run,
    "run a command and report what it used",
    run_usage,
};
