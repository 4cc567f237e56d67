/* scale.h - what the js-scale-* workloads share: N worker threads counting
 * items of work, a reporter that sends the count as the StatsD counter
 * `work.items` (plain UDP to $STATSD_HOST:$STATSD_PORT when both are set)
 * every SCALE_REPORT_S, and one JSON line on stdout at the end:
 *   {"threads":N,"items":I,"seconds":W,"items_per_s":R}
 * They run for --seconds S (0: until SIGTERM/SIGINT) and end cleanly on
 * either signal, so a trial that stops them still gets the line.
 * Each program defines PROG_NAME, usage() and scale_work(), the kernel: one
 * item of work by worker `id` of `nthreads`, as long as it takes.
 */
#ifndef JS_SCALE_H
#define JS_SCALE_H

#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helper.h"

#define SCALE_REPORT_S	  0.2
#define SCALE_MAX_THREADS 1024

static void scale_work(unsigned id, unsigned nthreads);

static atomic_ullong scale_items;
static atomic_int scale_stop;
static volatile sig_atomic_t scale_signalled;

struct scale_worker {
	pthread_t tid;
	unsigned id, nthreads;
};

static void scale_on_signal(int sig)
{
	(void)sig;
	scale_signalled = 1;
}

static void *scale_worker_main(void *arg)
{
	const struct scale_worker *w = arg;

	while (!atomic_load_explicit(&scale_stop, memory_order_relaxed)) {
		scale_work(w->id, w->nthreads);
		atomic_fetch_add_explicit(&scale_items, 1, memory_order_relaxed);
	}
	return NULL;
}

/* The CPUs this process may run on: what a trial's placement gave it. */
static inline unsigned scale_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		err(1, "sched_getaffinity");
	return (unsigned)CPU_COUNT(&set);
}

/* A UDP socket connected to $STATSD_HOST:$STATSD_PORT, or -1 when unset. */
static inline int scale_statsd_open(void)
{
	const char *host = getenv("STATSD_HOST"), *port = getenv("STATSD_PORT");
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM}, *ai;
	int fd, rc;

	if (!host || !*host || !port || !*port)
		return -1;
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc)
		errx(1, "cannot resolve StatsD %s:%s: %s", host, port, gai_strerror(rc));
	fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		err(1, "socket");
	if (connect(fd, ai->ai_addr, ai->ai_addrlen))
		err(1, "connect to StatsD %s:%s", host, port);
	freeaddrinfo(ai);
	return fd;
}

static inline void scale_statsd_send(int fd, unsigned long long items)
{
	char line[64];
	int len;

	if (fd < 0 || items == 0)
		return;
	len = snprintf(line, sizeof(line), "work.items:%llu|c", items);
	/* a lost datagram is lost work in the figure: nothing to retry on */
	(void)send(fd, line, (size_t)len, 0);
}

/* Runs nthreads workers for seconds (0: until a signal), reporting as above. */
/*
 * SIGTERM and SIGINT end the run with its line written; a helper that
 * prepares before scale_main (a large array to fault in) calls this first,
 * so that a signal during its preparation still gets the line.
 */
static inline void scale_catch_signals(void)
{
	struct sigaction sa = {.sa_handler = scale_on_signal};

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) || sigaction(SIGINT, &sa, NULL))
		err(1, "sigaction");
}

static inline int scale_main(unsigned nthreads, double seconds)
{
	static struct scale_worker w[SCALE_MAX_THREADS];
	unsigned long long sent = 0, now_items;
	double start, end, deadline;
	int fd = scale_statsd_open();

	if (nthreads < 1 || nthreads > SCALE_MAX_THREADS)
		errx(1, "%u threads: 1 to %d", nthreads, SCALE_MAX_THREADS);
	scale_catch_signals();
	start = now_s();
	deadline = seconds > 0 ? start + seconds : INFINITY;
	for (unsigned i = 0; i < nthreads; i++) {
		w[i].id = i;
		w[i].nthreads = nthreads;
		errno = pthread_create(&w[i].tid, NULL, scale_worker_main, &w[i]);
		if (errno)
			err(1, "pthread_create");
	}
	while (!scale_signalled && now_s() < deadline) {
		double left = deadline - now_s();

		sleep_s(left < SCALE_REPORT_S ? (left > 0 ? left : 0) : SCALE_REPORT_S);
		now_items = atomic_load(&scale_items);
		scale_statsd_send(fd, now_items - sent);
		sent = now_items;
	}
	atomic_store(&scale_stop, 1);
	end = now_s();
	now_items = atomic_load(&scale_items); /* items finished in time; the rest are dropped */
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(w[i].tid, NULL);
	scale_statsd_send(fd, now_items - sent);
	printf("{\"threads\":%u,\"items\":%llu,\"seconds\":%.6f,\"items_per_s\":%.3f}\n", nthreads,
	       now_items, end - start, end > start ? now_items / (end - start) : 0.0);
	fflush(stdout);
	if (fd >= 0)
		close(fd);
	return 0;
}

/* --seconds S and --help, common to the three programs; returns S. */
static inline double scale_parse_seconds(int argc, char **argv, unsigned long *mb)
{
	static const struct option longopts[] = {
	    {"seconds", required_argument, NULL, 's'},
	    {"mb", required_argument, NULL, 'm'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	double seconds = 0;
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			seconds = parse_seconds("seconds", optarg);
			break;
		case 'm':
			if (!mb)
				usage(stderr, 2);
			*mb = parse_count("mb", optarg, 1, 65536);
			break;
		case 'h':
			usage(stdout, 0);
		default:
			usage(stderr, 2);
		}
	}
	if (optind != argc)
		usage(stderr, 2);
	return seconds;
}

#endif /* JS_SCALE_H */
