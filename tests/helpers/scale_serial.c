/* scale_serial.c - js-scale_serial: the same CPU work as js-scale-threads
 * in one thread whatever CPUs it is given: Amdahl's p = 0.  Reports items/s
 * as the StatsD counter work.items and on stdout (scale.h).
 */
#include <math.h>

#define PROG_NAME "js-scale_serial"
#include "scale.h"

#define ITEM_STEPS (1UL << 18)

static volatile uint64_t sink;

static void usage(FILE *out, int status)
{
	print_usage(out, status, "usage: js-scale_serial [--seconds S]\n",
		    "\n"
		    "  --seconds S   run S seconds (default: until SIGTERM or SIGINT)\n"
		    "\n"
		    "One worker whatever the affinity mask; one JSON line on stdout at the end.\n");
}

static void scale_work(unsigned id, unsigned nthreads)
{
	(void)nthreads;
	sink = xorshift_steps(XORSHIFT_SEED + id, ITEM_STEPS);
}

int main(int argc, char **argv)
{
	double seconds = scale_parse_seconds(argc, argv, NULL);

	return scale_main(1, seconds);
}
