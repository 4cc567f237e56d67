/*
 * pattern.c - js-pattern: workloads with a known shape for the report's
 * analysis tests: a periodic loop (CPU and memory rise and fall every
 * period, like a training step) and a slow memory leak.
 */
#include <getopt.h>
#include <string.h>

#define PROG_NAME "js-pattern"

#include "helper.h"

static volatile uint64_t sink;

static void sleep_until(double t)
{
	double d = t - now_s();

	if (d > 0)
		sleep_s(d);
}

/* Each period: busy with mib MiB touched for 60% of it, then freed and asleep. */
static void periodic(double period, double seconds, size_t mib)
{
	double start = now_s();

	for (double t = start; t < start + seconds; t += period) {
		char *p = mib ? malloc(mib << 20) : NULL;

		if (mib && !p)
			err(1, "malloc");
		if (p) {
			memset(p, 1, mib << 20);
			/*
			 * read back, a byte a page: a store only freed after is
			 * dead to the compiler, which dropped the memset (the
			 * job's memory never rose)
			 */
			for (size_t i = 0; i < mib << 20; i += 4096)
				sink += (uint64_t)p[i];
		}
		sink += spin_until(t + 0.6 * period, 4096);
		free(p);
		sleep_until(t + period);
	}
}

/* A leak: rate MiB/s, allocated and touched every 100 ms and never freed. */
static void leak(double rate, double seconds)
{
	double start = now_s();
	size_t step = (size_t)(rate * 1024 * 1024 / 10);

	for (double t = start; t < start + seconds; t += 0.1) {
		char *p = malloc(step);

		if (!p)
			err(1, "malloc");
		memset(p, 1, step);
		sink += (uint64_t)(uintptr_t)p;
		sleep_until(t + 0.1);
	}
}

static void usage(FILE *out, int status)
{
	print_usage(out, status,
		    "usage: js-pattern --period S --seconds T [--mib M]\n"
		    "       js-pattern --leak MIB_PER_S --seconds T\n",
		    "A periodic loop (busy 60%% of each period with M MiB touched, then idle\n"
		    "with it freed), or a memory leak at a steady rate.\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"period", required_argument, NULL, 'p'}, {"seconds", required_argument, NULL, 's'},
	    {"mib", required_argument, NULL, 'm'},    {"leak", required_argument, NULL, 'l'},
	    {"help", no_argument, NULL, 'h'},	      {NULL, 0, NULL, 0},
	};
	double period = 0, seconds = 0, rate = 0;
	long mib = 0;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			period = parse_seconds("--period", optarg);
			break;
		case 's':
			seconds = parse_seconds("--seconds", optarg);
			break;
		case 'm':
			mib = (long)parse_count("--mib", optarg, 0, 4096);
			break;
		case 'l':
			rate = parse_seconds("--leak", optarg);
			break;
		case 'h':
			usage(stdout, 0);
			break;
		default:
			usage(stderr, 2);
		}
	}
	if (seconds <= 0 || (period <= 0) == (rate <= 0) || mib < 0)
		usage(stderr, 2);
	if (period > 0)
		periodic(period, seconds, (size_t)mib);
	else
		leak(rate, seconds);
	return 0;
}
