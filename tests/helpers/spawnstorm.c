/* spawnstorm.c - js-spawnstorm: a rapid stream of short-lived processes.
 *
 * Forks --count children one after another; each burns about 1 ms of CPU and
 * exits.  Processes vanish between two reads of their /proc files, which the
 * sampler must survive.  With --depth D each child first runs a nested chain.
 */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_COUNT 10000000UL
#define MAX_DEPTH 64UL
#define BURN_S	  0.001

static volatile uint64_t sink;

static void usage(FILE *out, int status)
{
	fputs("usage: js-spawnstorm --count N [--depth D]\n", out);
	if (status == 0)
		fputs("\n"
		      "  --count N   fork N children in sequence, waiting for each\n"
		      "  --depth D   each child forks a child of its own (and waits for it),\n"
		      "              D levels deep (default 0)\n"
		      "\n"
		      "Every process burns about 1 ms of CPU.  Prints {\"spawned\":N}.\n",
		      out);
	exit(status);
}

static unsigned long parse_count(const char *opt, const char *arg, unsigned long min,
				 unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || arg[0] < '0' || arg[0] > '9' || *end || v < min || v > max) {
		fprintf(stderr, "js-spawnstorm: invalid value for --%s: '%s'\n", opt, arg);
		usage(stderr, 2);
	}
	return v;
}

static double now_s(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		err(1, "clock_gettime");
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void burn(double seconds)
{
	double deadline = now_s() + seconds;
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	int i;

	while (now_s() < deadline) {
		for (i = 0; i < 4096; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
	}
	sink = x;
}

/* Forks one child that burns, recurses @depth more levels, and exits. */
static void spawn(unsigned long depth)
{
	pid_t pid;
	int status;

	pid = fork();
	if (pid < 0)
		err(1, "fork");
	if (pid == 0) {
		burn(BURN_S);
		if (depth > 0)
			spawn(depth - 1);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			err(1, "waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		errx(1, "child %d failed (status 0x%x)", (int)pid, status);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"count", required_argument, NULL, 'c'},
	    {"depth", required_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	unsigned long count = 0, depth = 0, i;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			count = parse_count("count", optarg, 1, MAX_COUNT);
			break;
		case 'd':
			depth = parse_count("depth", optarg, 0, MAX_DEPTH);
			break;
		case 'h':
			usage(stdout, 0);
			break;
		default:
			usage(stderr, 2);
		}
	}
	if (optind < argc || !count)
		usage(stderr, 2);

	fflush(stdout);
	for (i = 0; i < count; i++)
		spawn(depth);

	printf("{\"spawned\":%lu}\n", count);
	if (fflush(stdout))
		err(1, "stdout");
	return 0;
}
