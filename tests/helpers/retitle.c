/* retitle.c - js-retitle: a parent that forks a worker which rewrites its
 * process title the way setproctitle, PostgreSQL, gunicorn and Ray do.
 *
 * The worker renames itself (prctl PR_SET_NAME, which is what `ps -o comm`
 * and /proc/PID/stat show) and overwrites the whole argv area through to the
 * end of the environment strings with its title and NULs, after moving its
 * environment elsewhere so getenv() still works: /proc/PID/cmdline then shows
 * the title and /proc/PID/environ shows no variable at all.  It burns CPU,
 * prints its own rusage and exits; the parent waits for it.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#define PROG_NAME "js-retitle"
#include "helper.h"

#define SPIN_CHECK_STEPS (1UL << 18) /* xorshift steps between two clock reads */
#define ENVIRON_READ_MAX (1 << 20)

extern char **environ;

static volatile uint64_t sink; /* keeps the compiler from dropping the work */

static void usage(FILE *out, int status)
{
	print_usage(out, status,
		    "usage: js-retitle --seconds S [--rename-after S] [--title T] [--pid-file F]\n",
		    "\n"
		    "  --seconds S       the worker spins for S seconds of wall time\n"
		    "  --rename-after S  ... of which the first S before it renames itself\n"
		    "                    (default 0: at once)\n"
		    "  --title T         its new title (default \"js-retitle: worker\")\n"
		    "  --pid-file F      the worker writes its pid to F once renamed\n"
		    "\n"
		    "The worker prints one JSON line: its pid, its CPU (getrusage RUSAGE_SELF,\n"
		    "user + system ms) and whether a job variable (SLURM_JOB_ID,\n"
		    "JOBSCOPE_RUN_ID) could still be read in /proc/self/environ after the\n"
		    "rename.  The parent exits with the worker's status.\n");
}

/*
 * setproctitle's trick: the argv strings and then the environment strings
 * lie end to end; the title may use all of that space once the environment
 * has been copied out of it.
 */
static void set_title(int argc, char **argv, const char *title)
{
	char *area = argv[0], *end = argv[0] + strlen(argv[0]);
	size_t n = 0, size;
	char **copy;

	for (int i = 1; i < argc; i++)
		if (argv[i] == end + 1)
			end = argv[i] + strlen(argv[i]);
	for (; environ[n]; n++)
		if (environ[n] == end + 1)
			end = environ[n] + strlen(environ[n]);
	copy = calloc(n + 1, sizeof(*copy));
	if (!copy)
		err(1, "calloc");
	for (size_t i = 0; i < n; i++) {
		copy[i] = strdup(environ[i]);
		if (!copy[i])
			err(1, "strdup");
	}
	environ = copy;
	size = (size_t)(end - area) + 1;
	memset(area, 0, size);
	snprintf(area, size, "%s", title);
	if (prctl(PR_SET_NAME, title, 0, 0, 0))
		err(1, "prctl PR_SET_NAME");
}

/* Does /proc/self/environ still name a job? */
static int environ_names_job(void)
{
	static char buf[ENVIRON_READ_MAX];
	size_t len = 0;
	ssize_t n;
	int fd = open("/proc/self/environ", O_RDONLY);

	if (fd < 0)
		err(1, "cannot open /proc/self/environ");
	while (len < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err(1, "cannot read /proc/self/environ");
		}
		len += (size_t)n;
	}
	close(fd);
	for (size_t i = 0; i < len; i += strnlen(buf + i, len - i) + 1)
		if (strncmp(buf + i, "SLURM_JOB_ID=", 13) == 0 ||
		    strncmp(buf + i, "JOBSCOPE_RUN_ID=", 16) == 0)
			return 1;
	return 0;
}

static void worker(int argc, char **argv, double seconds, double rename_after, const char *title,
		   const char *pid_file)
{
	double start = now_s();
	struct rusage ru;
	int named;

	sink = spin_until(start + rename_after, SPIN_CHECK_STEPS);
	set_title(argc, argv, title);
	named = environ_names_job();
	if (pid_file)
		write_file_atomic(pid_file, "pid file", "%d\n", (int)getpid());
	sink = spin_until(start + seconds, SPIN_CHECK_STEPS);
	if (getrusage(RUSAGE_SELF, &ru))
		err(1, "getrusage");
	printf("{\"worker_pid\":%d,\"user_ms\":%ld,\"system_ms\":%ld,\"cpu_ms\":%ld,"
	       "\"environ_names_job\":%s}\n",
	       (int)getpid(), ru.ru_utime.tv_sec * 1000L + ru.ru_utime.tv_usec / 1000,
	       ru.ru_stime.tv_sec * 1000L + ru.ru_stime.tv_usec / 1000,
	       (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000L +
		   (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000,
	       named ? "true" : "false");
	exit(0);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"seconds", required_argument, NULL, 's'},
	    {"rename-after", required_argument, NULL, 'r'},
	    {"title", required_argument, NULL, 't'},
	    {"pid-file", required_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	double seconds = -1, rename_after = 0;
	char *title = NULL, *pid_file = NULL;
	int c, status;
	pid_t pid;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			seconds = parse_seconds("seconds", optarg);
			break;
		case 'r':
			rename_after = parse_seconds("rename-after", optarg);
			break;
		case 't':
			title = optarg;
			break;
		case 'p':
			pid_file = optarg;
			break;
		case 'h':
			usage(stdout, 0);
		default:
			usage(stderr, 2);
		}
	}
	if (optind != argc || seconds < 0 || rename_after > seconds)
		usage(stderr, 2);
	/* the strings live in the area the worker overwrites */
	title = strdup(title ? title : "js-retitle: worker");
	if (!title || (pid_file && !(pid_file = strdup(pid_file))))
		err(1, "strdup");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		err(1, "fork");
	if (pid == 0)
		worker(argc, argv, seconds, rename_after, title, pid_file);
	status = wait_child(pid);
	if (WIFSIGNALED(status))
		errx(1, "the worker was killed by signal %d", WTERMSIG(status));
	return WEXITSTATUS(status);
}
