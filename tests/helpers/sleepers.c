/* sleepers.c - js-sleepers: many idle processes at once.
 *
 * Forks --count children (fork only, no exec, so a thousand start in well
 * under a second) that each sleep --seconds, then waits for all of them.
 */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROG_NAME "js-sleepers"
#include "helper.h"

#define MAX_COUNT 100000UL

static void usage(FILE *out, int status)
{
	print_usage(out, status, "usage: js-sleepers --count N --seconds S [--ready-file F]\n",
		    "\n"
		    "  --count N        fork N children\n"
		    "  --seconds S      each child sleeps S seconds, then exits\n"
		    "  --ready-file F   write our pid to F once all children exist\n"
		    "\n"
		    "Children die with the parent (PR_SET_PDEATHSIG).  Prints {\"count\":N}.\n");
}

static void sleeper(pid_t parent, double seconds)
{
	/* A killed parent must not leave a thousand orphans behind. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL))
		err(1, "prctl(PR_SET_PDEATHSIG)");
	if (getppid() != parent)
		_exit(0);
	sleep_s(seconds);
	_exit(0);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"count", required_argument, NULL, 'c'},
	    {"seconds", required_argument, NULL, 's'},
	    {"ready-file", required_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	unsigned long count = 0, i, failed = 0;
	const char *ready_file = NULL;
	double seconds = -1;
	pid_t self, pid;
	int c, status;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			count = parse_count("count", optarg, 1, MAX_COUNT);
			break;
		case 's':
			seconds = parse_seconds("seconds", optarg);
			break;
		case 'r':
			ready_file = optarg;
			break;
		case 'h':
			usage(stdout, 0);
		default:
			usage(stderr, 2);
		}
	}
	if (optind < argc || !count || seconds < 0 || (ready_file && !*ready_file))
		usage(stderr, 2);

	self = getpid();
	fflush(stdout);
	for (i = 0; i < count; i++) {
		pid = fork();
		if (pid < 0)
			err(1, "fork (after %lu children)", i);
		if (pid == 0)
			sleeper(self, seconds);
	}
	if (ready_file)
		write_file_atomic(ready_file, "ready file", "%d\n", (int)getpid());

	for (i = 0; i < count; i++) {
		while ((pid = wait(&status)) < 0 && errno == EINTR)
			;
		if (pid < 0)
			err(1, "wait");
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	}
	if (failed)
		errx(1, "%lu of %lu children did not exit cleanly", failed, count);

	printf("{\"count\":%lu}\n", count);
	if (fflush(stdout))
		err(1, "stdout");
	return 0;
}
