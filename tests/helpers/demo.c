/* demo.c - js-demo: the multi-phase example job shown in the README.
 *
 * Phase 1 "load" writes, fsyncs and reads back a 64 MiB temporary file (I/O);
 * phase 2 "train" runs two compute threads while the main thread grows a
 * buffer to 256 MiB (CPU and memory); phase 3 "eval" does CPU work in a
 * forked child (a second process).  Each phase looks different on a chart.
 *
 * Like an instrumented program, it says what it does over StatsD when
 * $STATSD_HOST and $STATSD_PORT are set (jobscope run sets them): a marker
 * (a DogStatsD event) at each phase, the bytes it loaded, and the matrix
 * products it computed with the time each took (a counter and a timer).
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROG_NAME "js-demo"
#include "helper.h"

#define LOAD_BYTES	(64UL << 20)
#define IO_CHUNK	(1UL << 20)
#define TRAIN_THREADS	2
#define TRAIN_MAX_BYTES (256UL << 20)
#define TRAIN_STEPS	32
#define MAT_N		96

#define STATSD_EVERY 64 /* products per counter line */

static volatile double sink;
static int statsd_fd = -1;
static struct sockaddr_in statsd_to;

/* $STATSD_HOST (a numeric IPv4 address) and $STATSD_PORT, when both are set. */
static void statsd_open(void)
{
	const char *host = getenv("STATSD_HOST"), *port = getenv("STATSD_PORT");

	if (!host || !port)
		return;
	statsd_to.sin_family = AF_INET;
	statsd_to.sin_port = htons((uint16_t)atoi(port));
	if (inet_pton(AF_INET, host, &statsd_to.sin_addr) != 1)
		return;
	statsd_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
}

/* One StatsD line; lost silently, as StatsD clients do. */
static void statsd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void statsd(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	if (statsd_fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof(line))
		(void)sendto(statsd_fd, line, (size_t)n, 0, (struct sockaddr *)&statsd_to,
			     sizeof(statsd_to));
}

/* A marker: the phase's name as a DogStatsD event. */
static void statsd_mark(const char *name)
{
	statsd("_e{%zu,0}:%s|", strlen(name), name);
}

static void usage(FILE *out, int status)
{
	print_usage(out, status, "usage: js-demo [--seconds S]\n",
		    "\n"
		    "  --seconds S   about how long the whole job takes (default 8)\n"
		    "\n"
		    "Progress goes to stderr.  Prints {\"phases\":3,\"cpu_seconds\":Y}, the CPU\n"
		    "time of this process and its child (getrusage SELF + CHILDREN).\n");
}

static void sleep_until(double deadline)
{
	double left = deadline - now_s();

	if (left > 0)
		sleep_s(left);
}

static void phase_load(void)
{
	const char *dir = getenv("TMPDIR");
	char path[PATH_MAX], *buf;
	size_t done;
	ssize_t n;
	int fd, ret;

	if (!dir || !*dir)
		dir = "/tmp";
	if (snprintf(path, sizeof(path), "%s/js-demo-XXXXXX", dir) >= (int)sizeof(path))
		errx(1, "TMPDIR is too long");
	fd = mkstemp(path);
	if (fd < 0)
		err(1, "cannot create a temporary file in '%s'", dir);
	/* Unlinked at once, so it is gone however we exit. */
	if (unlink(path))
		err(1, "cannot remove '%s'", path);
	fprintf(stderr, "demo: phase 1/3 load: 64 MiB through %s\n", path);
	statsd_mark("load");

	buf = malloc(IO_CHUNK);
	if (!buf)
		err(1, "malloc");
	for (done = 0; done < IO_CHUNK; done++)
		buf[done] = (char)('0' + done % 10);
	for (done = 0; done < LOAD_BYTES;) {
		n = write(fd, buf + done % IO_CHUNK, IO_CHUNK - done % IO_CHUNK);
		if (n < 0 && errno != EINTR)
			err(1, "cannot write '%s'", path);
		if (n > 0)
			done += (size_t)n;
	}
	if (fsync(fd))
		err(1, "cannot fsync '%s'", path);
	/* Drop the now clean pages so the read-back really comes from the disk. */
	ret = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (ret) {
		errno = ret;
		err(1, "posix_fadvise");
	}
	if (lseek(fd, 0, SEEK_SET) < 0)
		err(1, "lseek");
	while ((n = read(fd, buf, IO_CHUNK)) != 0) {
		if (n < 0 && errno != EINTR)
			err(1, "cannot read '%s'", path);
		if (n > 0) {
			sink += buf[n - 1];
			statsd("demo.bytes_loaded:%zd|c", n);
		}
	}
	if (close(fd))
		err(1, "cannot close '%s'", path);
	free(buf);
}

/* Repeated small matrix products until @deadline: the stand-in for real work. */
static void compute_until(double deadline)
{
	double *a, *b, *c, acc, batch_start = now_s();
	int i, j, k, round = 0, batch = 0;

	a = calloc(3 * MAT_N * MAT_N, sizeof(*a));
	if (!a)
		err(1, "calloc");
	b = a + MAT_N * MAT_N;
	c = b + MAT_N * MAT_N;
	for (i = 0; i < MAT_N * MAT_N; i++) {
		a[i] = (double)(i % 7) / (7.0 * MAT_N);
		b[i] = (double)(i % 5) / (5.0 * MAT_N);
	}
	while (now_s() < deadline) {
		for (i = 0; i < MAT_N; i++) {
			for (j = 0; j < MAT_N; j++) {
				acc = 0;
				for (k = 0; k < MAT_N; k++)
					acc += a[i * MAT_N + k] * b[k * MAT_N + j];
				c[i * MAT_N + j] = acc;
			}
		}
		/* Feed one product back so that no round repeats the previous one. */
		round = (round + 1) % (MAT_N * MAT_N);
		a[round] = c[round]; /* entries stay below 1/MAT_N */
		if (++batch == STATSD_EVERY) {
			double t = now_s();

			statsd("demo.products:%d|c\ndemo.product:%.3f|ms", batch,
			       (t - batch_start) * 1e3 / batch);
			batch = 0;
			batch_start = t;
		}
	}
	if (batch)
		statsd("demo.products:%d|c", batch);
	sink += c[0];
	free(a);
}

static void *train_thread(void *deadline)
{
	compute_until(*(const double *)deadline);
	return NULL;
}

/* The "buffer" grows in chunks: realloc would copy it under a sanitizer. */
static void phase_train(double seconds)
{
	double start = now_s(), deadline = start + seconds;
	const size_t chunk_bytes = TRAIN_MAX_BYTES / TRAIN_STEPS;
	char *chunks[TRAIN_STEPS] = {NULL};
	pthread_t tids[TRAIN_THREADS];
	size_t off;
	int i, ret = 0;

	fprintf(stderr, "demo: phase 2/3 train: %d threads, buffer up to 256 MiB, %.1f s\n",
		TRAIN_THREADS, seconds);
	statsd_mark("train");
	for (i = 0; i < TRAIN_THREADS && !ret; i++)
		ret = pthread_create(&tids[i], NULL, train_thread, &deadline);
	for (i = 0; i < TRAIN_STEPS && !ret; i++) {
		chunks[i] = malloc(chunk_bytes);
		if (!chunks[i])
			err(1, "cannot grow the buffer to %zu MiB", chunk_bytes * (i + 1) >> 20);
		for (off = 0; off < chunk_bytes; off += 4096)
			chunks[i][off] = 1;
		sleep_until(start + seconds * (i + 1) / TRAIN_STEPS);
	}
	for (i = 0; i < TRAIN_THREADS && !ret; i++)
		ret = pthread_join(tids[i], NULL);
	if (ret) {
		errno = ret;
		err(1, "cannot run the training threads");
	}
	for (i = 0; i < TRAIN_STEPS; i++)
		free(chunks[i]);
}

static void phase_eval(double seconds)
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		err(1, "fork");
	if (pid == 0) {
		compute_until(now_s() + seconds);
		_exit(0);
	}
	fprintf(stderr, "demo: phase 3/3 eval: child %d, %.1f s\n", (int)pid, seconds);
	statsd_mark("eval");
	status = wait_child(pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		errx(1, "eval child failed (status 0x%x)", status);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"seconds", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	double seconds = 8, start, eval_s, train_s;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			seconds = parse_seconds("seconds", optarg);
			if (!(seconds > 0 && seconds <= 1e5)) /* positive, about a day at most */
				bad_value("seconds", optarg);
			break;
		case 'h':
			usage(stdout, 0);
		default:
			usage(stderr, 2);
		}
	}
	if (optind < argc)
		usage(stderr, 2);

	/* Load takes what the disk needs; eval gets 1/8, train the rest. */
	statsd_open();
	start = now_s();
	phase_load();
	eval_s = seconds / 8;
	train_s = seconds - eval_s - (now_s() - start);
	if (train_s < seconds / 4)
		train_s = seconds / 4;
	phase_train(train_s);
	phase_eval(eval_s);
	fprintf(stderr, "demo: done in %.1f s\n", now_s() - start);

	printf("{\"phases\":3,\"cpu_seconds\":%.3f}\n",
	       cpu_s(RUSAGE_SELF) + cpu_s(RUSAGE_CHILDREN));
	if (fflush(stdout))
		err(1, "stdout");
	return 0;
}
