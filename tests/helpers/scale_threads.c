/* scale_threads.c - js-scale_threads: CPU work in as many threads as the
 * process has CPUs (its affinity mask), each independent of the others, so
 * that throughput grows linearly with CPUs: Amdahl's p = 1.  Reports
 * items/s as the StatsD counter work.items and on stdout (scale.h).
 */
#include <math.h>

#define PROG_NAME "js-scale_threads"
#include "scale.h"

#define ITEM_STEPS (1UL << 18) /* xorshift steps in one item: about 0.5 ms */

static volatile uint64_t sink;

static void usage(FILE *out, int status)
{
	print_usage(
	    out, status, "usage: js-scale_threads [--seconds S]\n",
	    "\n"
	    "  --seconds S   run S seconds (default: until SIGTERM or SIGINT)\n"
	    "\n"
	    "One worker per CPU of the affinity mask; one JSON line on stdout at the end.\n");
}

static void scale_work(unsigned id, unsigned nthreads)
{
	(void)nthreads;
	sink = xorshift_steps(XORSHIFT_SEED + id, ITEM_STEPS);
}

int main(int argc, char **argv)
{
	double seconds = scale_parse_seconds(argc, argv, NULL);

	return scale_main(scale_cpus(), seconds);
}
