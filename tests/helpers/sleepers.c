/* sleepers.c - js-sleepers: many idle processes at once.
 *
 * Forks --count children (fork only, no exec, so a thousand start in well
 * under a second) that each sleep --seconds, then waits for all of them.
 */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_COUNT 100000UL

static void usage(FILE *out, int status)
{
	fputs("usage: js-sleepers --count N --seconds S [--ready-file F]\n", out);
	if (status == 0)
		fputs("\n"
		      "  --count N        fork N children\n"
		      "  --seconds S      each child sleeps S seconds, then exits\n"
		      "  --ready-file F   write our pid to F once all children exist\n"
		      "\n"
		      "Children die with the parent (PR_SET_PDEATHSIG).  Prints {\"count\":N}.\n",
		      out);
	exit(status);
}

static void bad_value(const char *opt, const char *arg)
{
	fprintf(stderr, "js-sleepers: invalid value for --%s: '%s'\n", opt, arg);
	usage(stderr, 2);
}

static void sleeper(pid_t parent, double seconds)
{
	struct timespec ts = {.tv_sec = (time_t)seconds};

	/* A killed parent must not leave a thousand orphans behind. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL))
		err(1, "prctl(PR_SET_PDEATHSIG)");
	if (getppid() != parent)
		_exit(0);
	ts.tv_nsec = (long)((seconds - ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts))
		if (errno != EINTR)
			err(1, "nanosleep");
	_exit(0);
}

static void write_ready_file(const char *path)
{
	char tmp[PATH_MAX];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		errx(1, "ready file path too long: '%s'", path);
	f = fopen(tmp, "w");
	if (!f)
		err(1, "cannot open '%s'", tmp);
	fprintf(f, "%d\n", (int)getpid());
	if (fclose(f))
		err(1, "cannot write '%s'", tmp);
	if (rename(tmp, path))
		err(1, "cannot rename '%s' to '%s'", tmp, path);
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
	char *end;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			errno = 0;
			count = strtoul(optarg, &end, 10);
			if (errno || optarg[0] < '0' || optarg[0] > '9' || *end || count < 1 ||
			    count > MAX_COUNT)
				bad_value("count", optarg);
			break;
		case 's':
			errno = 0;
			seconds = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(seconds >= 0 && seconds <= 1e6))
				bad_value("seconds", optarg);
			break;
		case 'r':
			ready_file = optarg;
			break;
		case 'h':
			usage(stdout, 0);
			break;
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
		write_ready_file(ready_file);

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
