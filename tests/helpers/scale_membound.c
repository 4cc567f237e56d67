/* scale_membound.c - js-scale_membound: one worker per CPU of the affinity
 * mask, each streaming over its own slice of one large array (default 256
 * MiB, far beyond any cache), so that throughput is bounded by memory
 * bandwidth rather than CPUs.  One item = one MiB read and written.
 * Whether two threads beat one depends on the machine's memory system:
 * the tests only check that a trial reports what it measured.
 */
#include <math.h>
#include <sys/mman.h>

#define PROG_NAME "js-scale_membound"
#include "scale.h"

#define ITEM_BYTES (1UL << 20)

static uint64_t *array;
static size_t array_words;
static size_t cursor[SCALE_MAX_THREADS]; /* each worker's position in its slice, in words */

static void usage(FILE *out, int status)
{
	print_usage(
	    out, status, "usage: js-scale_membound [--seconds S] [--mb MIB]\n",
	    "\n"
	    "  --seconds S   run S seconds (default: until SIGTERM or SIGINT)\n"
	    "  --mb MIB      the array's size (default 256)\n"
	    "\n"
	    "One worker per CPU of the affinity mask; one JSON line on stdout at the end.\n");
}

static void scale_work(unsigned id, unsigned nthreads)
{
	size_t slice = array_words / nthreads, words = ITEM_BYTES / sizeof(uint64_t);
	uint64_t *base = array + (size_t)id * slice;
	size_t at = cursor[id];

	for (size_t i = 0; i < words; i++) {
		base[at] = base[at] * 3 + 1;
		if (++at == slice)
			at = 0;
	}
	cursor[id] = at;
}

int main(int argc, char **argv)
{
	unsigned long mb = 256;
	double seconds = scale_parse_seconds(argc, argv, &mb);
	unsigned n = scale_cpus();

	scale_catch_signals(); /* a run stopped while the array fills still writes its line */
	array_words = mb * (1UL << 20) / sizeof(uint64_t);
	if (array_words / n < ITEM_BYTES / sizeof(uint64_t))
		errx(1, "--mb %lu is too small for %u threads", mb, n);
	array = mmap(NULL, array_words * sizeof(uint64_t), PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (array == MAP_FAILED)
		err(1, "mmap %lu MiB", mb);
	memset(array, 1, array_words * sizeof(uint64_t)); /* fault it all in before timing */
	return scale_main(n, seconds);
}
