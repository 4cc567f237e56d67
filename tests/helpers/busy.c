/* busy.c - js-busy: burn a known amount of CPU, or sleep, for the tests.
 *
 * Three modes: N threads spinning for S seconds of wall time, a plain sleep,
 * and a fixed count of xorshift steps used to time jobscope's own overhead.
 */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define SPIN_CHECK_STEPS (1UL << 20) /* xorshift steps between two clock reads */
#define MAX_THREADS	 1024
#define MAX_WORK	 1000000UL /* million steps */

enum busy_mode { MODE_NONE, MODE_SPIN, MODE_SLEEP, MODE_WORK };

static volatile uint64_t sink; /* keeps the compiler from dropping the work */

static void usage(FILE *out, int status)
{
	fputs("usage: js-busy --seconds S [--threads N]\n"
	      "       js-busy --sleep S\n"
	      "       js-busy --work N\n",
	      out);
	if (status == 0)
		fputs("\n"
		      "  --seconds S   N threads spin for S seconds of wall time (S may be "
		      "fractional)\n"
		      "  --threads N   number of spinning threads (default 1)\n"
		      "  --sleep S     sleep S seconds without using CPU\n"
		      "  --work N      one thread, N million xorshift steps, no clock reads;\n"
		      "                benchmarks use N=2000: about 3.5 s of CPU on a 2.1 GHz\n"
		      "                AMD EPYC core\n"
		      "\n"
		      "Prints one JSON line with wall and CPU seconds (getrusage RUSAGE_SELF).\n",
		      out);
	exit(status);
}

static void bad_value(const char *opt, const char *arg)
{
	fprintf(stderr, "js-busy: invalid value for --%s: '%s'\n", opt, arg);
	usage(stderr, 2);
}

static double parse_seconds(const char *opt, const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= 0 && v <= 1e6))
		bad_value(opt, arg);
	return v;
}

static unsigned long parse_count(const char *opt, const char *arg, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || arg[0] < '0' || arg[0] > '9' || *end || v < 1 || v > max)
		bad_value(opt, arg);
	return v;
}

static double now_s(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		err(1, "clock_gettime");
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_self_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		err(1, "getrusage");
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Each step depends on the previous one, so it can be neither vectorised nor skipped. */
static uint64_t xorshift_steps(uint64_t x, unsigned long steps)
{
	while (steps--) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

static void *spin_thread(void *arg)
{
	double deadline = *(const double *)arg;
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	while (now_s() < deadline)
		x = xorshift_steps(x, SPIN_CHECK_STEPS);
	sink = x;
	return NULL;
}

static void spin(unsigned long nthreads, double seconds)
{
	pthread_t tids[MAX_THREADS];
	double start = now_s(), deadline = start + seconds;
	unsigned long i;
	int ret;

	for (i = 0; i < nthreads; i++) {
		ret = pthread_create(&tids[i], NULL, spin_thread, &deadline);
		if (ret) {
			errno = ret;
			err(1, "pthread_create");
		}
	}
	for (i = 0; i < nthreads; i++) {
		ret = pthread_join(tids[i], NULL);
		if (ret) {
			errno = ret;
			err(1, "pthread_join");
		}
	}
	printf("{\"threads\":%lu,\"wall_seconds\":%.3f,\"cpu_seconds\":%.3f}\n", nthreads,
	       now_s() - start, cpu_self_s());
}

static void sleep_for(double seconds)
{
	struct timespec ts = {.tv_sec = (time_t)seconds};

	ts.tv_nsec = (long)((seconds - ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts))
		if (errno != EINTR)
			err(1, "nanosleep");
	printf("{\"cpu_seconds\":%.3f}\n", cpu_self_s());
}

static void work(unsigned long millions)
{
	double start = now_s();

	sink = xorshift_steps(0x9e3779b97f4a7c15ULL, millions * 1000000UL);
	printf("{\"work\":%lu,\"wall_seconds\":%.3f,\"cpu_seconds\":%.3f}\n", millions,
	       now_s() - start, cpu_self_s());
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"threads", required_argument, NULL, 't'}, /* only with --seconds */
	    {"seconds", required_argument, NULL, 's'},
	    {"sleep", required_argument, NULL, 'S'},
	    {"work", required_argument, NULL, 'w'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	enum busy_mode mode = MODE_NONE;
	unsigned long nthreads = 0, millions = 0;
	double seconds = 0;
	int c, nmodes = 0;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			nthreads = parse_count("threads", optarg, MAX_THREADS);
			break;
		case 's':
			seconds = parse_seconds("seconds", optarg);
			mode = MODE_SPIN;
			nmodes++;
			break;
		case 'S':
			seconds = parse_seconds("sleep", optarg);
			mode = MODE_SLEEP;
			nmodes++;
			break;
		case 'w':
			millions = parse_count("work", optarg, MAX_WORK);
			mode = MODE_WORK;
			nmodes++;
			break;
		case 'h':
			usage(stdout, 0);
			break;
		default:
			usage(stderr, 2);
		}
	}
	if (optind < argc || nmodes != 1 || (nthreads && mode != MODE_SPIN))
		usage(stderr, 2);

	if (mode == MODE_SPIN)
		spin(nthreads ? nthreads : 1, seconds);
	else if (mode == MODE_SLEEP)
		sleep_for(seconds);
	else
		work(millions);
	if (fflush(stdout))
		err(1, "stdout");
	return 0;
}
