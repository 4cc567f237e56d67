/*
 * run.c - `jobscope run`'s engine (see run.h): setup, the tick, the loop,
 * the run's end and its report.  CMD's start, reaping and signals are
 * child.c's; --cuda is cuda.c's; StatsD is app.c's.
 *
 *   store_tick            one tick's rows in one transaction, or counted lost
 *   tick                  host, tree, GPUs: the live summary and the store
 *   add_event, finish_job the run's events, its end, summary and checkpoint
 *   render_report         text or JSON
 *   setup, loop           the store, the samplers; poll() until the tree is gone
 *   run_command           all of it
 */
#include <errno.h>
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

#include "analysis/reportckpt.h"
#include "attrib/jobs.h"
#include "common/exitcode.h"
#include "common/log.h"
#include "common/sysroot.h"
#include "common/timeutil.h"
#include "report/report.h"
#include "run/run.h"
#include "run/state.h"
#include "store/tick.h"
#include "store/sync.h"
#include "store/upkeep.h"
#include "store/write.h"

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
		struct proc_info info;

		if (!p->emit)
			continue;
		ptree_info_get(p, &info);
		summary_add_proc(&r->sum, &info, ts, &p->cur);
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
				struct proc_info info;

				if (gp->dev != i)
					continue;
				if (gp->proc)
					ptree_info_get(gp->proc, &info);
				summary_add_gpu_proc(&r->sum, &r->devs[i], gp->proc ? &info : NULL,
						     ts, &gp->g);
			}
		}
		for (size_t k = 0; k < r->ngevents; k++)
			summary_add_event(&r->sum, &r->gevents[k]);
	}
	store_tick(r, ts, host_ok);
	if (r->cuda.listen_fd >= 0)
		cuda_collector_drain(&r->cuda, run__cuda_store_proc, r);
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
	if (report_json(&r->sum, &r->an, run__cuda_tables(r), &r->app_sum, &json) == 0)
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
			  "%s of %.3gs reached: SIGTERM sent%s",
			  r->opt->for_trial ? "--duration" : "--timeout",
			  r->opt->timeout_ms / 1000.0, r->killed ? ", then SIGKILL" : "");
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

/* The report, as --report asks, into out. */
static int render_report(struct run_state *r, struct strbuf *out)
{
	struct report_options ro = {
	    .utf8 = r->opt->utf8, .max_procs = 10, .cuda = run__cuda_tables(r), .app = &r->app_sum};
	int ret;

	if (r->opt->report == RUN_REPORT_NONE)
		return 0;
	if (r->opt->report == RUN_REPORT_JSON) {
		ret = report_json(&r->sum, &r->an, run__cuda_tables(r), &r->app_sum, out);
	} else {
		ret = report_text(&r->sum, &r->an, &ro, out);
		strbuf_addf(out,
			    "  Stored    as run %" PRId64 " in %s (jobscope report %" PRId64 ")\n",
			    r->job.id, store_path(r->st), r->job.id);
	}
	if (ret)
		strbuf_reset(out);
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

/*
 * The reservation of the job jobscope runs in, as the agent reads it: inside
 * a Slurm job its SLURM_* variables, then the limits of the job's cgroup
 * (or of the unit or container it runs in) for what they leave unset.  Its
 * name too, when --name gave none: SLURM_JOB_NAME.
 */
static void run_reservation(struct run_state *r)
{
	extern char **environ;
	struct job_attribution a;
	struct cgroup_layout cg;
	struct strbuf cgtext, env;
	char path[64];
	bool have_cg;

	strbuf_init(&cgtext, 1 << 20);
	strbuf_init(&env, 1 << 20);
	for (char **e = environ; e && *e; e++)
		strbuf_add(&env, *e, strlen(*e) + 1);
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)getpid());
	have_cg = sysroot_read(path, &cgtext) == 0;
	jobs_attribute(have_cg ? cgtext.buf : NULL, have_cg ? cgtext.len : 0, env.buf, env.len,
		       r->job.uid, 0, &a);
	if (cgroup_detect(&cg) != 0)
		a.cgroup[0] = '\0';
	jobs_reservation(&a, &cg, r->job.host_cores, r->job.host_mem_bytes, &r->job);
	if (!r->job.name[0] && (a.env.valid & SLURM_ENV_JOB_NAME))
		snprintf(r->job.name, sizeof(r->job.name), "%s", a.env.job_name);
	if (r->job.reservation_source[0])
		log_debug("run: the reservation from %s: %.4g CPUs, %" PRIu64 " bytes",
			  r->job.reservation_source, r->job.reserved_cpus,
			  r->job.reserved_mem_bytes);
	strbuf_release(&cgtext);
	strbuf_release(&env);
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
	run_reservation(r);

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
	run__cuda_setup(r);
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
	/*
	 * root: whether each process ran, for all of them in one read.  Before
	 * the exit listener: the child that loads the iterator is not the run's.
	 */
	ret = ptree_watch_tasks(&r->pt);
	if (ret)
		log_debug("no task iterator (%s): a schedstat read a process", strerror(-ret));
	/*
	 * Each process's own figures at its exit, even one that lives between
	 * two ticks (ptree.h); without (not root) the tree is read at ticks only.
	 */
	ret = ptree_watch_exits(&r->pt);
	if (ret)
		log_debug("no taskstats exit listener (%s): processes that end between two "
			  "samples are not seen",
			  strerror(-ret));
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
		int64_t since_ms = (time_mono_ns() - r->exits_read_ns) / 1000000;
		int64_t batch_ms =
		    ptree_exits_dated(&r->pt) ? RUN_EXITS_DATED_BATCH_MS : RUN_EXITS_BATCH_MS;
		int timeout = -1;

		fds[0] = (struct pollfd){.fd = r->sigfd, .events = POLLIN};
		fds[1] = (struct pollfd){.fd = r->tickfd, .events = POLLIN};
		fds[2] = (struct pollfd){.fd = r->timeoutfd, .events = POLLIN};
		/*
		 * exits read as they come, in batches (state.h): a negative fd is left
		 * out by poll
		 */
		fds[3] = (struct pollfd){.fd = ptree_exits_fd(&r->pt), .events = POLLIN};
		if (fds[3].fd >= 0 && since_ms < batch_ms) {
			fds[3].fd = -1;
			timeout = (int)(batch_ms - since_ms);
		}
		napp = run_app_fds(&r->app, fds + 4, 2);
		nfds = 4 + napp;
		nfds += cuda_collector_fds(&r->cuda, fds + nfds, RUN_POLL_FDS - nfds);

		if (poll(fds, nfds, timeout) < 0) {
			if (errno == EINTR)
				continue;
			log_err(-errno, "poll");
			return;
		}
		if (fds[3].revents & POLLIN) {
			ptree_drain_exits(&r->pt);
			r->exits_read_ns = time_mono_ns();
		}
		if (napp)
			run_app_handle(&r->app, fds + 4, napp, wallclock_now_ms(&r->wc), r->st,
				       r->job.id);
		if (nfds > 4 + napp)
			cuda_collector_handle(&r->cuda, fds + 4 + napp, nfds - 4 - napp);
		if (fds[0].revents & POLLIN)
			run__on_signal(r);
		if (fds[2].revents & POLLIN)
			run__on_timeout(r);
		if (fds[1].revents & POLLIN) {
			uint64_t n;

			if (read(r->tickfd, &n, sizeof(n)) == sizeof(n)) {
				/*
				 * A child's end is reaped on SIGCHLD; asked again each
				 * tick (one waitid), so that a SIGCHLD some library's
				 * thread took costs an interval, never the run.
				 */
				if (!r->child_done)
					run__reap(r);
				tick(r);
			}
		}
		if (r->child_done && !run_over(r) && !told_waiting) {
			tick(r);
			if (ptree_job(&r->pt)->nprocs > 0)
				log_info("%s exited; waiting for the %u process%s it left running "
					 "(%s)",
					 r->opt->argv[0], ptree_job(&r->pt)->nprocs,
					 ptree_job(&r->pt)->nprocs == 1 ? "" : "es",
					 r->opt->for_trial ? "at most --duration"
							   : "--no-wait to stop now");
			told_waiting = true;
		}
	}
}

/* The run's row ended, its command never having run: exit_code, now. */
static void end_unstarted(struct run_state *r, int exit_code)
{
	r->job.has_exit = true;
	r->job.exit_code = exit_code;
	r->job.end_ms = wallclock_now_ms(&r->wc);
	store_job_update(r->st, &r->job);
}

/* A stop signal of mask (not SIGCHLD) already pending, taken off: its number, or 0. */
static int stopped_while_setting_up(const sigset_t *mask)
{
	const struct timespec now = {0, 0};
	sigset_t stops = *mask;
	int sig;

	sigdelset(&stops, SIGCHLD);
	sig = sigtimedwait(&stops, NULL, &now);
	return sig > 0 ? sig : 0;
}

int run_command(const struct run_opts *o, struct strbuf *report)
{
	struct run_state r;
	sigset_t mask;
	int ret, exit_code, stop;

	memset(&r, 0, sizeof(r));
	r.opt = o;
	r.sigfd = r.tickfd = r.timeoutfd = -1;
	cuda_collector_init(&r.cuda);
	run_app_init(&r.app);
	app_summary_init(&r.app_sum);
	cuda_proc_init(&r.cuda_note);
	cuda_tables_init(&r.cuda_tables);
	/*
	 * Blocked before setup: libnvidia-ml starts a thread of its own in
	 * nvmlInit, which inherits this mask.  Blocked after, the thread would
	 * take (and, SIGCHLD, drop) the signals meant for the signalfd: the
	 * command's end was never seen on a real GPU (docs/gpu.md).
	 */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigprocmask(SIG_BLOCK, &mask, &r.orig_mask);
	ret = setup(&r);
	if (ret) {
		exit_code = EXIT_USAGE;
		goto out_restore;
	}
	stop = stopped_while_setting_up(&mask);
	if (stop) {
		/* ^C while the GPUs were opened (a second or more on a large node) */
		log_info("%s before '%s' started: not starting it", strsignal(stop), o->argv[0]);
		exit_code = 128 + stop;
		end_unstarted(&r, exit_code);
		goto out_restore;
	}
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

	ret = run__spawn(&r);
	if (ret) {
		int status;

		log_err(ret, "cannot run '%s'", o->argv[0]);
		if (r.child > 0)
			waitpid(r.child, &status, 0);
		exit_code = ret == -ENOENT ? EXIT_NOT_FOUND
			    : r.child > 0  ? EXIT_CANNOT_EXEC
					   : EXIT_RUN_FAILED;
		end_unstarted(&r, exit_code);
		goto out_restore;
	}
	signal(SIGPIPE, SIG_IGN);
	r.job.pid = r.child;

	tick(&r);
	time_arm_timer(r.tickfd, o->interval_ms, o->interval_ms);
	if (o->timeout_ms)
		time_arm_timer(r.timeoutfd, o->timeout_ms, 0);
	loop(&r);
	run__reap(&r);
	run_app_drain(&r.app, wallclock_now_ms(&r.wc)); /* its last lines, still queued */
	ptree_exits_final(&r.pt);			/* all reaped: every exit event is in */
	tick(&r); /* the last sample: every process's final values */
	run__cuda_finish(&r);

	finish_job(&r, wallclock_now_ms(&r.wc));
	if (render_report(&r, report))
		log_warn(0, "the report could not be written");
	exit_code = r.job.exit_code;

out_restore:
	sigprocmask(SIG_SETMASK, &r.orig_mask, NULL);
	if (r.sigfd >= 0)
		close(r.sigfd);
	if (r.tickfd >= 0)
		close(r.tickfd);
	if (r.timeoutfd >= 0)
		close(r.timeoutfd);
	run__cuda_release(&r);
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
