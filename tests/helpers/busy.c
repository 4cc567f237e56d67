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

#define PROG_NAME "js-busy"
#include "helper.h"

#define SPIN_CHECK_STEPS (1UL << 20) /* xorshift steps between two clock reads */
#define MAX_THREADS	 1024
#define MAX_WORK	 1000000UL /* million steps */

enum busy_mode { MODE_NONE, MODE_SPIN, MODE_SLEEP, MODE_WORK };

static volatile uint64_t sink; /* keeps the compiler from dropping the work */

static void usage(FILE *out, int status)
{
	print_usage(out, status,
		    "usage: js-busy --seconds S [--threads N]\n"
		    "       js-busy --sleep S\n"
		    "       js-busy --work N\n",
		    "\n"
		    "  --seconds S   N threads spin for S seconds of wall time (S may be "
		    "fractional)\n"
		    "  --threads N   number of spinning threads (default 1)\n"
		    "  --sleep S     sleep S seconds without using CPU\n"
		    "  --work N      one thread, N million xorshift steps, no clock reads;\n"
		    "                benchmarks use N=2000: about 3.5 s of CPU on a 2.1 GHz\n"
		    "                AMD EPYC core\n"
		    "\n"
		    "Prints one JSON line with wall and CPU seconds (getrusage RUSAGE_SELF).\n");
}

static void *spin_thread(void *arg)
{
	sink = spin_until(*(const double *)arg, SPIN_CHECK_STEPS);
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
	       now_s() - start, cpu_s(RUSAGE_SELF));
}

static void sleep_for(double seconds)
{
	sleep_s(seconds);
	printf("{\"cpu_seconds\":%.3f}\n", cpu_s(RUSAGE_SELF));
}

static void work(unsigned long millions)
{
	double start = now_s();

	sink = xorshift_steps(XORSHIFT_SEED, millions * 1000000UL);
	printf("{\"work\":%lu,\"wall_seconds\":%.3f,\"cpu_seconds\":%.3f}\n", millions,
	       now_s() - start, cpu_s(RUSAGE_SELF));
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
			nthreads = parse_count("threads", optarg, 1, MAX_THREADS);
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
			millions = parse_count("work", optarg, 1, MAX_WORK);
			mode = MODE_WORK;
			nmodes++;
			break;
		case 'h':
			usage(stdout, 0);
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
