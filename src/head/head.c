/*
 * head.c - the head's life: setup (log, tokens, store, signals, TLS, the
 * HTTP server), the wait for a signal, and the release (see head.h).
 *
 * The HTTP server's threads answer every request and decode batches; the
 * committer thread (ingest.c) writes them; the main thread only waits on a
 * signalfd: SIGTERM/SIGINT stop the head (a batch in flight is either
 * committed and answered or not answered, and the agent resends it),
 * SIGHUP reopens the log file.
 *
 * Connections: the file-descriptor limit is raised to what max_conns
 * needs; when the hard limit is lower, the default is lowered to fit (with
 * a warning), and an explicit --max-connections that cannot fit is an
 * error.
 */
#include "head/head.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "analysis/ckptmaint.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "db/pg.h"
#include "net/wire.h"
#include "store/reader.h"
#include "store/upkeep.h"

static int read_pem(const char *path, struct strbuf *sb)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return log_err(-errno, "cannot read '%s'", path);
	ret = strbuf_read_fd(sb, fd);
	close(fd);
	if (ret)
		return log_err(ret, "cannot read '%s'", path);
	return 0;
}

/* Read connections, one per request in flight, handed out by head_reader_get. */
struct head_readers {
	pthread_mutex_t lock;
	pthread_cond_t freed;
	size_t n, nfree;
	struct store **all, **free;
};

struct store *head_reader_get(struct head *h)
{
	struct head_readers *r = h->readers;
	struct store *st;

	pthread_mutex_lock(&r->lock);
	while (r->nfree == 0)
		pthread_cond_wait(&r->freed, &r->lock);
	st = r->free[--r->nfree];
	pthread_mutex_unlock(&r->lock);
	return st;
}

void head_reader_put(struct head *h, struct store *st)
{
	struct head_readers *r = h->readers;

	pthread_mutex_lock(&r->lock);
	r->free[r->nfree++] = st;
	pthread_cond_signal(&r->freed);
	pthread_mutex_unlock(&r->lock);
}

static void readers_close(struct head *h)
{
	struct head_readers *r = h->readers;

	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		store_close(r->all[i]);
	pthread_cond_destroy(&r->freed);
	pthread_mutex_destroy(&r->lock);
	free(r->all);
	free(r->free);
	free(r);
	h->readers = NULL;
}

/* n read connections on the head's store (after the writer created it). */
static int readers_open(struct head *h, const char *db, size_t n)
{
	struct head_readers *r = calloc(1, sizeof(*r));
	int ret = 0;

	if (!r || !(r->all = calloc(n, sizeof(*r->all))) || !(r->free = calloc(n, sizeof(*r->free)))) {
		if (r)
			free(r->all);
		free(r);
		return log_err(-ENOMEM, "out of memory");
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->freed, NULL);
	h->readers = r;
	for (; r->n < n && !ret; r->n++) {
		ret = store_open(db, STORE_READONLY | STORE_CHECKED, &r->all[r->n]);
		if (ret)
			break;
		r->free[r->nfree++] = r->all[r->n];
	}
	if (ret)
		readers_close(h);
	return ret;
}

/*
 * A maintenance thread with a store connection of its own: step() every
 * every_s seconds, and at once again while it says more is due, until
 * stopped.  The head has two: the WAL checkpointer and report checkpoints.
 */
struct head_worker {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	struct store *st;
	struct head *h;
	int every_s;
	bool (*step)(struct head_worker *w); /* true: more due now */
	bool at_start;			     /* a first step at once */
	bool joined;			     /* worker_join: the thread has ended */
	bool kicked;			     /* worker_kick: a step at once */
};

static void *worker_thread(void *arg)
{
	struct head_worker *w = arg;
	bool again = w->at_start; /* set before the thread started */

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		struct timespec until;

		if (!again && !w->kicked) {
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += w->every_s;
			pthread_cond_timedwait(&w->wake, &w->lock, &until);
		}
		w->kicked = false;
		if (w->stop)
			break;
		pthread_mutex_unlock(&w->lock);
		again = w->step(w);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static int worker_start(struct head *h, const char *db, int every_s, bool at_start,
			bool (*step)(struct head_worker *w), const char *what,
			struct head_worker **out)
{
	struct head_worker *w = calloc(1, sizeof(*w));
	int ret;

	if (!w)
		return log_err(-ENOMEM, "out of memory");
	ret = store_open(db, STORE_CREATE | STORE_CHECKED, &w->st);
	if (ret) {
		free(w);
		return ret;
	}
	w->h = h;
	w->every_s = every_s;
	w->step = step;
	w->at_start = at_start;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	if (pthread_create(&w->thread, NULL, worker_thread, w) != 0) {
		pthread_cond_destroy(&w->wake);
		pthread_mutex_destroy(&w->lock);
		store_close(w->st);
		free(w);
		return log_err(-EAGAIN, "cannot start the head's %s thread", what);
	}
	*out = w;
	return 0;
}

/* A step at once (the upkeep lease was just taken), not at the next look. */
static void worker_kick(struct head_worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->kicked = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

/* The thread told to stop and joined; its connection stays open until worker_stop. */
static void worker_join(struct head_worker *w)
{
	if (w->joined)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	w->joined = true;
}

static void worker_stop(struct head_worker **wp)
{
	struct head_worker *w = *wp;

	if (!w)
		return;
	worker_join(w);
	store_close(w->st);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w);
	*wp = NULL;
}

/*
 * The checkpointer: the WAL copied into the store file every second by a
 * connection of its own, so that no commit waits for a checkpoint (an
 * autocheckpoint in the committer held a group for hundreds of ms).
 */
static bool checkpointer_step(struct head_worker *w)
{
	store_checkpoint(w->st);
	return false;
}

static int checkpointer_start(struct head *h, const char *db)
{
	int ret = worker_start(h, db, 1, false, checkpointer_step, "checkpoint", &h->ckpt);

	if (!ret)
		ret = store_set_autocheckpoint(h->writer, false);
	if (ret)
		worker_stop(&h->ckpt);
	return ret;
}

/*
 * Retention (--retention): the samples older than the cutoff go, on a
 * connection of its own.  In PostgreSQL whole day partitions are dropped,
 * which costs nothing of the committer's time; in a file, rows are
 * deleted a bounded number at a time between its commits.
 */
static bool retention_step(struct head_worker *w)
{
	int64_t dropped, deleted;

	if (!head_runs_upkeep(w->h))
		return false;
	if (store_drop_before(w->st, time_now_ms() - w->h->opt->retention_ms, &dropped, &deleted) ==
		0 &&
	    (dropped || deleted))
		log_info("head: retention: %" PRId64 " day partitions dropped, %" PRId64
			 " rows deleted",
			 dropped, deleted);
	return false;
}

/* How often retention looks: a tenth of the retention, 1 s to 60 s. */
static int retention_every_s(int64_t retention_ms)
{
	int64_t s = retention_ms / 10000;

	return s < 1 ? 1 : s > 60 ? 60 : (int)s;
}

/*
 * Report checkpoints (analysis/ckptmaint.h): a thread with a connection
 * of its own reads and replays; only saving takes the writer, under its
 * lock, for one small INSERT, so ingest never waits for a replay.  Looks
 * every HEAD_REPORTS_EVERY_S seconds, at once again while some are due.
 */
#define HEAD_REPORTS_EVERY_S 10
#define HEAD_REPORTS_JOBS    8

static int reports_save(void *arg, const struct store_ckpt *c)
{
	struct head *h = arg;
	int ret;

	pthread_mutex_lock(&h->wlock);
	ret = store_ckpt_put(h->writer, c);
	pthread_mutex_unlock(&h->wlock);
	return ret;
}

static bool reports_step(struct head_worker *w)
{
	struct report_ckpt_opts ro = {
	    .lag_ms = w->h->opt->ckpt_lag_ms > 0 ? w->h->opt->ckpt_lag_ms : REPORT_CKPT_LAG_MS,
	    .max_jobs = HEAD_REPORTS_JOBS,
	    .save = reports_save,
	    .save_arg = w->h,
	};
	int done = 0;

	if (!head_runs_upkeep(w->h))
		return false;
	/* a failure said why: again at the next look */
	return report_ckpt_maintain(w->st, time_now_ms(), &ro, &done) == 0 && done > 0;
}

/*
 * The upkeep's lease (PostgreSQL): several heads may serve one database,
 * and what must run once (retention, report checkpoints, remote write,
 * annotations) runs on the head that holds the lease row (store/heads.c).
 * A beat every third of the lease renews it; a head that cannot renew
 * (the database is away) stops its upkeep a beat before the lease can
 * expire, so that the next holder never overlaps it.  Remote write and
 * annotations start when the lease is taken and stop when it is lost: a
 * new holder resumes remote write from the cursor in the database.
 */
bool head_runs_upkeep(struct head *h)
{
	bool on;

	pthread_mutex_lock(&h->upkeep_lock);
	on = h->upkeep && (!h->writer_is_pg || time_mono_ns() < h->upkeep_until_ns);
	pthread_mutex_unlock(&h->upkeep_lock);
	return on;
}

static int64_t lease_beat_ms(const struct head *h)
{
	int64_t b = h->lease_ms / 3;

	return b < 1000 ? 1000 : b;
}

/* Remote write and annotations started (on) or stopped: 0, or -errno (said why) from a start. */
static int upkeep_switch(struct head *h, bool on)
{
	const struct head_opts *o = h->opt;
	int ret = 0;

	if (on && !h->rw)
		/* remote write reads the store on its own connections, every 0.5 s */
		ret = rw_start(&o->rw, o->db, 500, &h->rw);
	/* annotations read the store on a connection and thread of their own */
	if (!ret && on && !h->k8s)
		ret = k8s_annotate_start(&o->k8s, o->db, &h->k8s);
	if (!on) {
		/* what the agents sent until now reaches the targets that are up */
		if (h->rw && !rw_flush(h->rw, 2000))
			log_info(
			    "head: a remote-write target does not hold the last rows yet: they "
			    "go with the next start");
		rw_stop(h->rw);
		h->rw = NULL;
		k8s_annotate_stop(h->k8s);
		h->k8s = NULL;
	}
	return ret;
}

/* One beat: the lease taken, renewed or lost.  0, or -errno when a start failed. */
static int lease_beat(struct head *h, struct store *st)
{
	int64_t t0 = time_mono_ns();
	bool holder = false, was, on;
	int ret = store_head_beat(st, &h->me, h->lease_ms, &holder);

	pthread_mutex_lock(&h->upkeep_lock);
	was = h->upkeep && t0 < h->upkeep_until_ns;
	if (holder) {
		h->upkeep = true;
		/* a beat's margin: the next holder waits the whole lease from our last renewal */
		h->upkeep_until_ns = t0 + (h->lease_ms - lease_beat_ms(h)) * 1000000;
	} else if (!ret) {
		h->upkeep = false; /* another head holds it */
	}
	/* a failed beat keeps what it held until upkeep_until_ns */
	on = h->upkeep && t0 < h->upkeep_until_ns;
	pthread_mutex_unlock(&h->upkeep_lock);
	if (on && !was) {
		log_info("head: %s holds the upkeep lease: it runs retention, report checkpoints,"
			 " remote write and annotations",
			 h->me.id);
		/* what the last holder left is due now, not at the next look (60 s at most) */
		worker_kick(h->retention);
		worker_kick(h->reports);
	} else if (!on && was)
		log_info("head: %s no longer holds the upkeep lease", h->me.id);
	if (on != was || (on && (!h->rw || !h->k8s))) {
		int r = upkeep_switch(h, on);

		if (r)
			return r;
	}
	return 0;
}

static bool lease_step(struct head_worker *w)
{
	lease_beat(w->h, w->st); /* a failed start said why: again at the next beat */
	return false;
}

/*
 * The heads' table and this head's first beat (PostgreSQL), else the
 * upkeep at once (a file); then the lease thread.  0, or -errno said why;
 * *setup: the failure is the options' (remote write, annotations).
 */
static int lease_start(struct head *h, unsigned port, bool *setup)
{
	const struct head_opts *o = h->opt;
	const char *colon = strrchr(o->listen, ':');
	int ret;

	*setup = false;
	/* the views read it from now on (set once, before the lease thread beats) */
	snprintf(h->me.listen, sizeof(h->me.listen), "%.*s:%u",
		 colon ? (int)(colon - o->listen) : (int)strlen(o->listen), o->listen, port);
	if (!h->writer_is_pg) { /* h->upkeep since the start */
		ret = upkeep_switch(h, true);
		*setup = ret != 0;
		return ret;
	}
	ret = worker_start(h, o->db, (int)(lease_beat_ms(h) / 1000), false, lease_step, "lease",
			   &h->lease);
	if (ret)
		return ret;
	/* -EBUSY: a head of an older jobscope writes the database */
	ret = store_heads_setup(h->lease->st);
	if (!ret) {
		/* the thread's first beat waits for this one */
		pthread_mutex_lock(&h->lease->lock);
		ret = lease_beat(h, h->lease->st);
		pthread_mutex_unlock(&h->lease->lock);
	}
	*setup = ret != 0;
	return ret;
}

/* This head as the heads table lists it (but its address): HOSTNAME:PID:STARTED_MS. */
static void head_identity(struct head *h)
{
	char host[256];

	h->lease_ms = h->opt->lease_ms > 0 ? h->opt->lease_ms : HEAD_DEFAULT_LEASE_MS;
	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	snprintf(h->me.hostname, sizeof(h->me.hostname), "%s", host);
	h->me.pid = getpid();
	h->me.started_ms = h->started_ms;
	snprintf(h->me.id, sizeof(h->me.id), "%.80s:%d:%" PRId64, host, (int)getpid(),
		 h->started_ms);
}

/* The lease thread stopped, the upkeep with it, and the lease given up for another head. */
static void lease_stop(struct head *h)
{
	struct store *st = h->lease ? h->lease->st : NULL;

	if (h->lease)
		worker_join(h->lease);
	pthread_mutex_lock(&h->upkeep_lock);
	h->upkeep = false;
	pthread_mutex_unlock(&h->upkeep_lock);
	upkeep_switch(h, false);
	if (st && store_head_leave(st, h->me.id) == 0)
		log_info("head: %s left the heads table", h->me.id);
	worker_stop(&h->lease);
}

/*
 * A file has one head (SQLite would take two, but their upkeep and their
 * seqs are one head's): an exclusive flock on it, held while the head
 * runs, refuses a second.  flock is not SQLite's fcntl lock: the two do
 * not meet.  0, or -EBUSY said why.
 */
static int sqlite_head_lock(struct head *h, const char *db)
{
	h->sqlite_lock_fd = open(db, O_RDONLY | O_CLOEXEC);
	if (h->sqlite_lock_fd < 0)
		return log_err(-errno, "cannot open store '%s'", db);
	if (flock(h->sqlite_lock_fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	close(h->sqlite_lock_fd);
	h->sqlite_lock_fd = -1;
	return log_err(-EBUSY,
		       "store '%s' is written by another jobscope head: one head per SQLite"
		       " file (several heads share a PostgreSQL --db)",
		       db);
}

static unsigned online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 2 ? 2 : n > 16 ? 16 : (unsigned)n;
}

/*
 * Raises the file-descriptor limit for the connections: 0 with
 * h->max_conns set, or -EMFILE (said why) when an explicit max cannot fit.
 */
#define HEAD_SPARE_FDS 64 /* the store, its readers, the log, the listening socket */
static int head_fd_limit(struct head *h, const struct head_opts *o, unsigned threads)
{
	struct rlimit rl;
	rlim_t want;
	unsigned max = o->max_conns ? o->max_conns : HEAD_DEFAULT_CONNS;

	want = (rlim_t)max + HEAD_SPARE_FDS + threads * 2;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return log_err(-errno, "cannot read the file-descriptor limit");
	if (rl.rlim_cur < want) {
		struct rlimit up = {want, rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want
					      ? rl.rlim_max
					      : want};

		/* root may raise the hard limit too; others up to it */
		if (setrlimit(RLIMIT_NOFILE, &up) != 0) {
			up.rlim_cur = rl.rlim_max;
			up.rlim_max = rl.rlim_max;
			if (setrlimit(RLIMIT_NOFILE, &up) != 0)
				up.rlim_cur = rl.rlim_cur;
		}
		rl = up;
	}
	if (rl.rlim_cur >= want) {
		h->max_conns = max;
		return 0;
	}
	if (o->max_conns) {
		log_err(0,
			"--max-connections %u needs %llu file descriptors, but the limit is %llu "
			"(raise it: ulimit -n, LimitNOFILE= in a systemd unit; or ask for fewer)",
			max, (unsigned long long)want, (unsigned long long)rl.rlim_cur);
		return -EMFILE;
	}
	if (rl.rlim_cur < HEAD_SPARE_FDS + 16)
		return log_err(-EMFILE, "the file-descriptor limit (%llu) leaves no room for "
					"connections (raise it: ulimit -n)",
			       (unsigned long long)rl.rlim_cur);
	h->max_conns = (unsigned)(rl.rlim_cur - HEAD_SPARE_FDS - threads * 2);
	log_warn(0, "head: the file-descriptor limit (%llu) allows %u connections, not %u "
		 "(raise it: ulimit -n, LimitNOFILE= in a systemd unit)",
		 (unsigned long long)rl.rlim_cur, h->max_conns, max);
	return 0;
}

static bool dir_writable(const char *path)
{
	struct stat sb;

	if (stat(path, &sb))
		return false;
	if (!S_ISDIR(sb.st_mode)) {
		errno = ENOTDIR;
		return false;
	}
	return access(path, W_OK | X_OK) == 0;
}

/* The log, the tokens, --session-dir and the store (durable, and its readers): 0 or -errno, said why. */
static int head_open(struct head *h, const struct head_opts *o, size_t nreaders)
{
	int ret;

	ret = log_open_file(o->log_file);
	if (!ret)
		ret = head_auth_load(h, o);
	if (!ret && o->session_dir && !dir_writable(o->session_dir))
		ret = log_err(-errno, "--session-dir '%s': not a directory this head can write in",
			      o->session_dir);
	if (!ret)
		ret = store_open(o->db, STORE_CREATE, &h->writer);
	if (ret)
		return ret;
	if (!h->writer_is_pg && sqlite_head_lock(h, o->db)) {
		store_close(h->writer);
		h->writer = NULL;
		return -EBUSY;
	}
	/* an acknowledged batch is on disk: the agent will never send it again */
	ret = store_set_durable(h->writer);
	if (!ret)
		ret = readers_open(h, o->db, nreaders);
	if (ret) {
		store_close(h->writer);
		h->writer = NULL;
		if (h->sqlite_lock_fd >= 0)
			close(h->sqlite_lock_fd);
		h->sqlite_lock_fd = -1;
	}
	return ret;
}

/* --tls-cert and --tls-key into hopts (both or neither): 0 or -errno, said why. */
static int head_tls(const struct head_opts *o, struct strbuf *cert, struct strbuf *key,
		    struct http_options *hopts)
{
	if (!o->tls_cert_file && !o->tls_key_file)
		return 0;
	if (!o->tls_cert_file || !o->tls_key_file) {
		log_err(0, "--tls-cert and --tls-key go together");
		return -EINVAL;
	}
	if (read_pem(o->tls_cert_file, cert) || read_pem(o->tls_key_file, key))
		return -EINVAL;
	hopts->tls_cert_pem = strbuf_str(cert);
	hopts->tls_key_pem = strbuf_str(key);
	return 0;
}

/* Until SIGTERM, SIGINT or the deadline (0: none); SIGHUP reopens the log. */
static void head_wait(int sigfd, const char *log_file, int64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = sigfd, .events = POLLIN};
		struct signalfd_siginfo si;
		int timeout = deadline ? (int)(deadline - time_now_ms()) : -1;

		if (deadline && timeout <= 0)
			break;
		if (poll(&p, 1, timeout) <= 0)
			continue;
		if (read(sigfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGHUP) {
			if (log_open_file(log_file) == 0)
				log_info("head: log file reopened");
			continue;
		}
		log_info("head: %s received: exiting", strsignal((int)si.ssi_signo));
		break;
	}
}

enum head_result head_main(const struct head_opts *o)
{
	struct head h;
	struct http_server *srv = NULL;
	sigset_t mask, orig;
	int sigfd = -1;
	enum head_result result = HEAD_OK;
	const char *colon;
	unsigned threads = o->threads ? o->threads : online_cpus();
	struct http_options hopts = {
	    .max_body = WIRE_MAX_BODY,
	    .threads = threads,
	    .max_conns_per_ip = o->max_conns_per_ip ? o->max_conns_per_ip
						    : HEAD_DEFAULT_CONNS_PER_IP,
	    .header_timeout_s = HEAD_HEADER_TIMEOUT_S,
	    .idle_timeout_s = HEAD_IDLE_TIMEOUT_S,
	};
	struct strbuf cert, key;
	bool setup;

	/*
	 * Every batch allocates and frees a few MiB (the body, the parsed
	 * JSON): without this glibc gives it back to the kernel after each one
	 * and faults it in again, a third of the head's CPU (bench/RESULTS.md).
	 */
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	memset(&h, 0, sizeof(h));
	pthread_mutex_init(&h.wlock, NULL);
	pthread_mutex_init(&h.upkeep_lock, NULL);
	h.sqlite_lock_fd = -1;
	h.writer_is_pg = pg_is_url(o->db);
	h.upkeep = !h.writer_is_pg; /* a file's head runs it from the start */
	strbuf_init(&cert, 1 << 20);
	strbuf_init(&key, 1 << 20);
	h.opt = o;
	h.started_ms = time_now_ms();
	head_identity(&h);
	if (head_fd_limit(&h, o, threads))
		return o->max_conns ? HEAD_FAIL_SETUP : HEAD_FAIL_SYSTEM;
	hopts.max_conns = h.max_conns;
	/* a read connection for every HTTP thread, and two for reads that overlap */
	if (head_open(&h, o, threads + 2))
		return HEAD_FAIL_SETUP;
	/* blocked before the threads start, so that they inherit the mask */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &orig);
	signal(SIGPIPE, SIG_IGN);
	sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (head_tls(o, &cert, &key, &hopts)) {
		result = HEAD_FAIL_SETUP;
		goto out;
	}
	if (sigfd < 0 || checkpointer_start(&h, o->db) || head_ingest_start(&h) ||
	    worker_start(&h, o->db, HEAD_REPORTS_EVERY_S, false, reports_step, "report checkpoint",
			 &h.reports) ||
	    (o->retention_ms > 0 &&
	     worker_start(&h, o->db, retention_every_s(o->retention_ms), true, retention_step,
			  "retention", &h.retention))) {
		result = HEAD_FAIL_SYSTEM;
		goto out;
	}
	if (http_start_opts(o->listen, &hopts, head_http, &h, &srv)) {
		result = HEAD_FAIL_SETUP;
		goto out;
	}
	/* the upkeep: at once with a file, with the lease on PostgreSQL */
	if (lease_start(&h, (unsigned)http_port(srv), &setup)) {
		result = setup ? HEAD_FAIL_SETUP : HEAD_FAIL_SYSTEM;
		goto out;
	}
	colon = strrchr(o->listen, ':');
	log_info("head: listening on %.*s:%u (%u threads, up to %u connections, %u per address)",
		 (int)(colon - o->listen), o->listen, (unsigned)http_port(srv), threads,
		 h.max_conns, hopts.max_conns_per_ip);
	head_wait(sigfd, o->log_file, o->exit_after_ms ? time_now_ms() + o->exit_after_ms : 0);
out:
	/*
	 * The committer first: it commits and answers what is queued (new
	 * batches get a 503 from now on), so that no answer is left deferred
	 * when the server stops.
	 */
	head_ingest_stop(&h);
	http_stop(srv);
	/* remote write flushed and stopped, the lease given up for another head */
	lease_stop(&h);
	head_ingest_free(&h);
	worker_stop(&h.reports);
	worker_stop(&h.retention);
	worker_stop(&h.ckpt);
	if (sigfd >= 0)
		close(sigfd);
	readers_close(&h);
	store_close(h.writer);
	if (h.sqlite_lock_fd >= 0)
		close(h.sqlite_lock_fd);
	pthread_mutex_destroy(&h.upkeep_lock);
	pthread_mutex_destroy(&h.wlock);
	sigprocmask(SIG_SETMASK, &orig, NULL);
	strbuf_release(&cert);
	/* the key does not linger in freed memory */
	if (key.buf)
		memset(key.buf, 0, key.alloc);
	strbuf_release(&key);
	return result;
}
