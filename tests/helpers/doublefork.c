/* doublefork.c - js-doublefork: leave an orphan that outlives its parent.
 *
 * The classic double fork: the child forks a grandchild and exits at once, so
 * the grandchild is reparented (to jobscope, a child subreaper, when run under
 * it) and keeps spinning after this process has printed its pid and exited.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROG_NAME "js-doublefork"
#include "helper.h"

static volatile uint64_t sink;

static void usage(FILE *out, int status)
{
	print_usage(out, status, "usage: js-doublefork --seconds S [--report FILE] [--setsid]\n",
		    "\n"
		    "  --seconds S     the grandchild spins for S seconds of wall time\n"
		    "  --report FILE   at the end the grandchild writes its CPU time there as\n"
		    "                  {\"grandchild_cpu_seconds\":Y} (atomically, by rename)\n"
		    "  --setsid        the child starts a new session before the second fork\n"
		    "\n"
		    "Prints {\"grandchild_pid\":P} as soon as the middle child has exited.\n"
		    "The grandchild's stdin, stdout and stderr are /dev/null.\n");
}

/*
 * Detached from the caller's pipes: whoever captures our output must see EOF
 * when the original process exits, not when the orphan does.  Errors from here
 * on are only visible as a missing report.
 */
static void grandchild(double seconds, const char *report)
{
	double deadline = now_s() + seconds;
	int fd;

	fd = open("/dev/null", O_RDWR);
	if (fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		err(1, "cannot redirect to /dev/null");
	if (fd > 2)
		close(fd);
	sink = spin_until(deadline, 1000000);
	if (report)
		write_file_atomic(report, "report", "{\"grandchild_cpu_seconds\":%.3f}\n",
				  cpu_s(RUSAGE_SELF));
	_exit(0);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"seconds", required_argument, NULL, 's'},
	    {"report", required_argument, NULL, 'r'},
	    {"setsid", no_argument, NULL, 'S'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *report = NULL;
	bool new_session = false;
	double seconds = -1;
	pid_t child, gc_pid;
	int c, status, pipefd[2];
	ssize_t n;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			seconds = parse_seconds("seconds", optarg);
			break;
		case 'r':
			report = optarg;
			break;
		case 'S':
			new_session = true;
			break;
		case 'h':
			usage(stdout, 0);
		default:
			usage(stderr, 2);
		}
	}
	if (optind < argc || seconds < 0 || (report && !*report))
		usage(stderr, 2);

	/* The middle child passes the grandchild's pid back through a pipe. */
	if (pipe2(pipefd, O_CLOEXEC))
		err(1, "pipe2");
	fflush(stdout);
	child = fork();
	if (child < 0)
		err(1, "fork");
	if (child == 0) {
		close(pipefd[0]);
		if (new_session && setsid() < 0)
			err(1, "setsid");
		gc_pid = fork();
		if (gc_pid < 0)
			err(1, "fork");
		if (gc_pid == 0) {
			close(pipefd[1]);
			grandchild(seconds, report);
		}
		if (write(pipefd[1], &gc_pid, sizeof(gc_pid)) != sizeof(gc_pid))
			err(1, "cannot pass the grandchild pid");
		_exit(0);
	}

	close(pipefd[1]);
	do
		n = read(pipefd[0], &gc_pid, sizeof(gc_pid));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		err(1, "cannot read the grandchild pid");
	close(pipefd[0]);
	status = wait_child(child);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || n != sizeof(gc_pid))
		errx(1, "the middle child failed (status 0x%x)", status);

	printf("{\"grandchild_pid\":%d}\n", (int)gc_pid);
	if (fflush(stdout))
		err(1, "stdout");
	return 0;
}
