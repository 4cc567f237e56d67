/* spawnstorm.c - js-spawnstorm: a rapid stream of short-lived processes.
 *
 * Forks --count children one after another; each burns about 1 ms of CPU and
 * exits.  Processes vanish between two reads of their /proc files, which the
 * sampler must survive.  With --depth D each child first runs a nested chain.
 */
#include <err.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROG_NAME "js-spawnstorm"
#include "helper.h"

#define MAX_COUNT 10000000UL
#define MAX_DEPTH 64UL
#define BURN_S	  0.001

static volatile uint64_t sink;

static void usage(FILE *out, int status)
{
	print_usage(out, status, "usage: js-spawnstorm --count N [--depth D]\n",
		    "\n"
		    "  --count N   fork N children in sequence, waiting for each\n"
		    "  --depth D   each child forks a child of its own (and waits for it),\n"
		    "              D levels deep (default 0)\n"
		    "\n"
		    "Every process burns about 1 ms of CPU.  Prints {\"spawned\":N}.\n");
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
		sink = spin_until(now_s() + BURN_S, 4096);
		if (depth > 0)
			spawn(depth - 1);
		_exit(0);
	}
	status = wait_child(pid);
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
