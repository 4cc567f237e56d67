/*
 * agent.c - the agent's life: setup (the store, the host, the GPUs, the
 * process tree and the job table), the loop, and the release.
 *
 * One sampling thread: a poll() loop over a signalfd (SIGTERM/SIGINT stop
 * after flushing the tick in flight, SIGHUP reopens the log file), a
 * timerfd (each expiry is a tick: tick.c) and, with --cuda-socket, the
 * CUDA hooks' connections (cuda.c), read as their frames come.
 * The HTTP server's thread (http.h) answers from the view each tick
 * publishes (routes.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sqlite3.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "agent/agent.h"
#include "common/log.h"
#include "common/sysroot.h"
#include "common/token.h"
#include "store/tick.h"
#include "store/write.h"

/*
 * SQLite's page caches (the tick's connection, the API's, the head
 * sender's) are given back above this, process-wide: by default each grows
 * to 2 MiB as the store grows, while a tick touches a few dozen pages; the
 * rest is in the kernel's page cache anyway.
 */
#define AGENT_SQLITE_HEAP_BYTES (512 * 1024)

static void setup_gpus(struct agent *a)
{
	struct gpu_set *set = &a->gpus;

	gpu_set_init(set);
	gpu_set_open(set);
	store_tick_put_devices(a->st, a->node_id, set, a->devs);
}

/*
 * The kubelet's pod-resources, asked on a thread of its own: at the path
 * given, or at the kubelet's default when this node has a kubelet (its
 * pod-resources directory is there; the socket itself may come later, a
 * kubelet restart makes it anew).
 */
static int setup_podres(struct agent *a)
{
	const char *path = a->opt->pod_resources_socket;
	struct stat st;

	podres_table_init(&a->podres_table);
	if (path && strcmp(path, "none") == 0)
		return 0;
	if (!path && stat("/var/lib/kubelet/pod-resources", &st) != 0)
		return 0;
	return kubelet_poller_start(path ? path : KUBELET_PODRES_SOCKET, path != NULL,
				    KUBELET_REFRESH_MS, &a->podres);
}

static int setup(struct agent *a)
{
	const struct agent_opts *o = a->opt;
	struct rlimit rl;
	int32_t cores;
	int ret;

	ret = log_open_file(o->log_file);
	if (ret)
		return ret;
	sqlite3_soft_heap_limit64(AGENT_SQLITE_HEAP_BYTES);
	ret = store_open(o->db, STORE_CREATE, &a->st);
	if (ret)
		return ret;
	a->host = calloc(1, sizeof(*a->host));
	a->host_prev = calloc(1, sizeof(*a->host_prev));
	a->gevents = calloc(AGENT_MAX_GPU_EVENTS, sizeof(*a->gevents));
	if (!a->host || !a->host_prev || !a->gevents ||
	    gpu_set_procs_alloc(&a->gprocs, AGENT_MAX_GPU_PROCS, false))
		return log_err(-ENOMEM, "out of memory");
	host_sampler_init(&a->hs, sysconf(_SC_CLK_TCK));
	ret = host_sample_read(&a->hs, a->host);
	if (ret)
		log_warn(ret, "cannot read %s/proc/stat: host figures will be missing",
			 sysroot_get());
	if (gethostname(a->hostname, sizeof(a->hostname)) < 0)
		snprintf(a->hostname, sizeof(a->hostname), "localhost");
	a->hostname[sizeof(a->hostname) - 1] = '\0';
	wallclock_init(&a->wc);
	if (a->opt->sim_clock)
		a->wc.sim_ms = a->wc.anchor_ms; /* agent_tick moves it */
	a->started_ms = wallclock_now_ms(&a->wc);
	cores = ret ? 0 : host_online_cpus(a->host);
	ret = store_node(a->st, a->hostname, cores, ret ? 0 : a->host->mem.total_bytes,
			 host_boot_ms(a->host), &a->node_id);
	if (ret)
		return ret;
	setup_gpus(a);
	/* one descriptor per process is kept open: raise the soft limit */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	ptree_init_all(&a->pt, sysconf(_SC_CLK_TCK), host_boot_ms(a->host));
	ret = ptree_watch_tasks(&a->pt);
	if (ret == 0) {
		log_debug("agent: processes read with the kernel's task iterator");
	} else {
		log_debug("agent: no task iterator (%s): a schedstat read a process",
			  strerror(-ret));
		ret = ptree_watch_events(&a->pt);
		if (ret)
			log_debug("agent: no process events (%s): /proc is listed every tick",
				  strerror(-ret));
	}
	jobs_init(&a->jobs, a->hostname, a->node_id, cores, a->host->mem.total_bytes,
		  o->interval_ms);
	k8s_names_init(&a->jobs.k8s, o->k8s_bundle_dir);
	pthread_mutex_init(&a->view_lock, NULL);
	pthread_cond_init(&a->view_cond, NULL);
	a->view_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (a->view_efd < 0)
		return log_err(-errno, "cannot make an eventfd");
	return 0;
}

/* The agent's id for a head: kept in its store, so a restart is the same agent. */
static int agent_id(struct agent *a)
{
	unsigned char raw[12];
	FILE *f;

	if (store_meta_get(a->st, "agent_id", a->agent_id, sizeof(a->agent_id)) == 0 &&
	    a->agent_id[0])
		return 0;
	f = fopen("/dev/urandom", "rb");
	if (!f || fread(raw, 1, sizeof(raw), f) != sizeof(raw)) {
		if (f)
			fclose(f);
		return log_err(-EIO, "cannot make an agent id");
	}
	fclose(f);
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(a->agent_id + 2 * i, 3, "%02x", raw[i]);
	return store_meta_set(a->st, "agent_id", a->agent_id);
}

static int start_sender(struct agent *a)
{
	struct sender_opts so;
	char token[256];
	int ret;

	if (!a->opt->head)
		return 0;
	ret = agent_id(a);
	if (ret)
		return ret;
	memset(&so, 0, sizeof(so));
	so.urls = a->opt->heads;
	so.nurls = a->opt->nheads;
	so.ca_file = a->opt->ca_file;
	so.db_path = store_path(a->st);
	if (a->opt->token_file) {
		ret = token_read_file(a->opt->token_file, token, sizeof(token));
		if (ret)
			return ret;
		so.token = token;
		so.token_file = a->opt->token_file;
	}
	snprintf(so.who.agent_id, sizeof(so.who.agent_id), "%s", a->agent_id);
	snprintf(so.who.hostname, sizeof(so.who.hostname), "%s", a->hostname);
	so.who.cores = a->jobs.host_cores;
	so.who.mem_total_bytes = a->jobs.host_mem_bytes;
	so.who.boot_ms = host_boot_ms(a->host);
	so.who.interval_ms = a->opt->interval_ms;
	progress_meter_init(&a->catchup, 2, a->opt->progress, "jobscope agent: catching up",
			    "rows");
	so.progress = progress_meter_hook(&a->catchup);
	ret = sender_start(&so, &a->sender);
	if (!ret && a->opt->nheads > 1)
		log_info(
		    "agent: streaming to %s (the first of %d heads, tried in turn) as agent %s",
		    a->opt->head, a->opt->nheads, a->agent_id);
	else if (!ret)
		log_info("agent: streaming to %s as agent %s", a->opt->head, a->agent_id);
	return ret;
}

/* After the first tick, so that the endpoints never answer "no data yet". */
static int start_http(struct agent *a)
{
	const char *listen = a->opt->listen, *colon;
	int ret;

	if (!listen)
		return 0;
	memset(&a->acc, 0, sizeof(a->acc));
	if (a->opt->read_token_file) {
		ret = access_load_token(a->opt->read_token_file, a->acc.read_token,
					sizeof(a->acc.read_token));
		if (ret)
			return ret;
		a->acc.has_read_token = true;
	}
	a->acc.insecure = a->opt->insecure;
	access_settle(&a->acc, listen);
	if (a->acc.insecure)
		log_warn(0,
			 "agent: --insecure: anyone who can reach %s reads every job of this "
			 "node (command lines too)",
			 listen);
	else if (!a->acc.open && !a->acc.has_read_token)
		log_info("agent: %s serves /metrics to anyone; its API and dashboard (every "
			 "user's command lines) need --read-token-file or --insecure",
			 listen);
	ret = http_start(listen, agent_http, a, &a->http);
	if (ret)
		return ret;
	agent_publish_view(a);
	/* tests and scripts read the port chosen for port 0 from this line */
	colon = strrchr(listen, ':');
	log_info("agent: listening on %.*s:%u", (int)(colon - listen), listen,
		 (unsigned)http_port(a->http));
	return 0;
}

/*
 * The interval the ticks follow, and whether the store holds the `interval`
 * event that says so: reports judge each sample by the interval in effect
 * (store/tick.h), and a job started now gets it as its own.
 */
struct interval_state {
	int64_t cur_ms;
	int64_t since_ms; /* the tick after which it holds */
	bool stored;
};

/* Writes the pending `interval` event; a failure (logged by the store) is retried later. */
static void store_interval(struct agent *a, struct interval_state *iv)
{
	char msg[96];

	if (iv->stored)
		return;
	snprintf(msg, sizeof(msg), "sampling every %lldms%s", (long long)iv->cur_ms,
		 iv->cur_ms != a->opt->interval_ms ? " for a profiling session" : "");
	iv->stored = store_tick_put_interval(a->st, a->node_id, iv->since_ms, iv->cur_ms, msg) == 0;
}

/*
 * The interval a head's profiling session asks for (through the ingest
 * answer), else our own; the timer follows when it changes, from the tick
 * just taken (at last_ts).
 */
static void follow_sessions(struct agent *a, int tickfd, struct interval_state *iv, int64_t last_ts)
{
	struct sender_stats ss;
	int64_t want = a->opt->interval_ms;

	if (!a->sender)
		return;
	sender_get_stats(a->sender, &ss);
	if (ss.head_interval_ms > 0)
		want = ss.head_interval_ms < AGENT_MIN_INTERVAL_MS ? AGENT_MIN_INTERVAL_MS
								   : ss.head_interval_ms;
	if (want == iv->cur_ms)
		return;
	if (want != a->opt->interval_ms)
		log_info("agent: sampling every %lldms for a profiling session", (long long)want);
	else
		log_info("agent: back to sampling every %lldms", (long long)want);
	iv->cur_ms = want;
	iv->since_ms = last_ts;
	iv->stored = false;
	a->jobs.interval_ms = want; /* the interval of the jobs that start now */
	time_arm_timer(tickfd, want, want);
}

static int loop(struct agent *a, int sigfd, int tickfd, struct interval_state *iv)
{
	int64_t deadline =
	    a->opt->exit_after_ms ? wallclock_now_ms(&a->wc) + a->opt->exit_after_ms : 0;
	bool sim = a->opt->sim_clock;

	for (;;) {
		/*
		 * the signals, the timer, the HTTP thread asking for the jobs'
		 * view, and the CUDA hooks' socket and connections
		 */
		struct pollfd fds[3 + 2 + 1 + CUDA_COLLECT_MAX_PEERS] = {
		    {.fd = sigfd, .events = POLLIN},
		    {.fd = tickfd, .events = POLLIN},
		    {.fd = a->view_efd, .events = POLLIN},
		};
		size_t napp = agent_app_fds(a, fds + 3, 2);
		size_t nfds = 3 + napp;

		nfds += cuda_collector_fds(&a->cuda, fds + nfds, 1 + CUDA_COLLECT_MAX_PEERS);
		struct signalfd_siginfo si;
		uint64_t n;

		/* a simulated clock: the next tick at once */
		if (poll(fds, nfds, sim ? 0 : -1) < 0) {
			if (errno == EINTR)
				continue;
			return log_err(-errno, "poll");
		}
		if (napp)
			agent_app_handle(a, fds + 3, napp);
		if (nfds > 3 + napp)
			cuda_collector_handle(&a->cuda, fds + 3 + napp, nfds - 3 - napp);
		if (fds[2].revents & POLLIN)
			agent_view_jobs(a);
		while (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGHUP) {
				if (log_open_file(a->opt->log_file) == 0)
					log_info("agent: log file reopened");
				continue;
			}
			log_info("agent: %s received: storing the last tick and exiting",
				 strsignal((int)si.ssi_signo));
			return 0;
		}
		if (sim ||
		    ((fds[1].revents & POLLIN) && read(tickfd, &n, sizeof(n)) == sizeof(n))) {
			int64_t lost = a->lost_ticks;

			agent_tick(a);
			follow_sessions(a, tickfd, iv, a->host_ts);
			/* a store that failed the tick would fail this too: after the next */
			if (a->lost_ticks == lost)
				store_interval(a, iv);
		}
		if (deadline && wallclock_now_ms(&a->wc) >= deadline)
			return 0;
	}
}

static void release(struct agent *a)
{
	pthread_mutex_lock(&a->view_lock);
	a->view_stopping = true;
	pthread_cond_broadcast(&a->view_cond);
	pthread_mutex_unlock(&a->view_lock);
	agent_cuda_release(a);
	agent_app_release(a);
	kubelet_poller_stop(a->podres);
	podres_table_release(&a->podres_table);
	rw_stop(a->rw);
	k8s_annotate_stop(a->k8s);
	sender_stop(a->sender);
	if (a->http)
		http_stop(a->http);
	agent_view_free(a->view);
	if (a->view_efd >= 0)
		close(a->view_efd);
	if (a->read_st)
		store_close(a->read_st);
	jobs_release(&a->jobs);
	ptree_release(&a->pt);
	gpu_set_close(&a->gpus);
	gpu_set_procs_release(&a->gprocs);
	free(a->gevents);
	free(a->jroll);
	host_sampler_release(&a->hs);
	free(a->host);
	free(a->host_prev);
	if (a->st)
		store_close(a->st);
}

int agent_main(const struct agent_opts *o, enum agent_failure *failure)
{
	struct agent *a = calloc(1, sizeof(*a));
	struct interval_state iv = {.cur_ms = o->interval_ms};
	sigset_t mask, orig;
	int sigfd = -1, tickfd = -1, ret;

	*failure = AGENT_FAIL_SYSTEM;
	if (!a) {
		log_err(0, "out of memory");
		return -ENOMEM;
	}
	a->opt = o;
	a->view_efd = -1;
	cuda_collector_init(&a->cuda);
	app_collector_init(&a->app);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	/* blocked before the HTTP thread starts, so it inherits the mask */
	sigprocmask(SIG_BLOCK, &mask, &orig);
	signal(SIGPIPE, SIG_IGN);
	ret = setup(a);
	if (!ret)
		ret = agent_cuda_setup(a);
	if (!ret)
		ret = setup_podres(a);
	if (!ret)
		ret = agent_app_setup(a);
	if (ret) {
		*failure = AGENT_FAIL_SETUP;
		goto out_release;
	}
	sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	tickfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (sigfd < 0 || tickfd < 0) {
		ret = log_err(-errno, "cannot set up signal and timer descriptors");
		goto out_release;
	}
	agent_tick(a);
	/*
	 * The interval the ticks after the first come at (a restart may have
	 * changed it); written after the first tick's rows, which retention
	 * keeps as long as the rows after them.
	 */
	iv.since_ms = a->host_ts;
	store_interval(a, &iv);
	ret = start_http(a);
	if (!ret)
		ret = start_sender(a);
	if (!ret)
		ret = rw_start(&o->rw, store_path(a->st), o->interval_ms, &a->rw);
	if (!ret && o->k8s.enabled) {
		struct k8s_annotate_opts ko = o->k8s;

		ko.local_node = a->hostname; /* its own node only */
		ret = k8s_annotate_start(&ko, store_path(a->st), &a->k8s);
	}
	if (ret) {
		*failure = AGENT_FAIL_SETUP;
		goto out_release;
	}
	time_arm_timer(tickfd, o->interval_ms, o->interval_ms);
	/* a failure there: the last tick is still stored */
	ret = loop(a, sigfd, tickfd, &iv);
	/* the last tick: what happened since the previous one */
	agent_tick(a);
	if (store_tick_begin(a->st) == 0) {
		agent_rollups_flush_all(a);
		if (store_tick_commit(a->st))
			store_tick_abort(a->st);
	}
	/* a head that is there gets the last tick too (else it gets it next time) */
	if (a->sender && !sender_flush(a->sender, o->stop_timeout_ms))
		log_info("agent: the head does not hold the last rows yet: they go with the next "
			 "start");
	if (a->rw && !rw_flush(a->rw, o->stop_timeout_ms))
		log_info("agent: a remote-write target does not hold the last rows yet: they go "
			 "with the next start");
out_release:
	if (sigfd >= 0)
		close(sigfd);
	if (tickfd >= 0)
		close(tickfd);
	release(a);
	free(a);
	/*
	 * The signals stay blocked: a second SIGTERM that came during the
	 * shutdown must not turn this clean exit into a death by signal.
	 */
	(void)orig;
	return ret;
}
