/*
 * floor_all.c - bench-floor-all: the bare cost of reading every process of
 * the node, the floor of the agent benchmark (bench/agent_cost.py).
 *
 * Every interval it lists /proc and, for every pid, opens, reads once and
 * closes stat, statm and io, throwing the text away: no parsing, no
 * storage, no descriptors kept open, no process skipped.  `jobscope agent`
 * samples every process of the node each tick; an agent that keeps
 * descriptors open or skips idle processes can go below this.
 *
 * Build: cc -O2 -Wall -Wextra -Werror -o bench-floor-all bench/floor_all.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define READ_BUF_SIZE	4096
#define MAX_INTERVAL_MS 3600000L
#define MAX_SECONDS	86400L
#define NSEC_PER_SEC	1000000000L

static const char *const pid_files[] = {"stat", "statm", "io"};

struct floor_stats {
	unsigned long ticks, late_ticks;
	unsigned long files_read, files_failed, bytes_read;
	size_t last_scanned;
};

static void usage(FILE *out, int status)
{
	fputs("usage: bench-floor-all --interval-ms N --seconds S\n", out);
	if (status == 0)
		fputs("\n"
		      "Every N ms for S seconds, list /proc and open, read and close\n"
		      "/proc/PID/stat, statm and io of every process, with no parsing.\n"
		      "Prints one JSON line of counts at the end.\n",
		      out);
	exit(status);
}

static long parse_long(const char *opt, const char *arg, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max) {
		fprintf(stderr, "bench-floor-all: invalid value for --%s: '%s'\n", opt, arg);
		usage(stderr, 2);
	}
	return v;
}

/*
 * Reads a whole /proc file (the first READ_BUF_SIZE - 1 bytes into buf, the
 * rest discarded); returns the bytes kept, or -1 if it cannot be opened or
 * read (a process that just exited; io of a process we may not trace).
 */
static ssize_t read_proc_file(const char *path, char *buf, struct floor_stats *fs)
{
	ssize_t n, kept;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fs->files_failed++;
		return -1;
	}
	n = read(fd, buf, READ_BUF_SIZE - 1);
	kept = n;
	while (n == READ_BUF_SIZE - 1) {
		char discard[READ_BUF_SIZE];

		n = read(fd, discard, sizeof(discard));
		if (n > 0)
			fs->bytes_read += (unsigned long)n;
	}
	close(fd);
	if (kept < 0) {
		fs->files_failed++;
		return -1;
	}
	buf[kept] = '\0';
	fs->files_read++;
	fs->bytes_read += (unsigned long)kept;
	return kept;
}

static bool is_pid_name(const char *name)
{
	if (*name < '1' || *name > '9')
		return false;
	for (name++; *name; name++)
		if (*name < '0' || *name > '9')
			return false;
	return true;
}

static void read_all(struct floor_stats *fs)
{
	char path[64], buf[READ_BUF_SIZE];
	struct dirent *de;
	size_t scanned = 0;
	DIR *dir;

	dir = opendir("/proc");
	if (!dir)
		err(1, "opendir /proc");
	while ((de = readdir(dir)) != NULL) {
		int pid;

		if (!is_pid_name(de->d_name))
			continue;
		pid = atoi(de->d_name);
		scanned++;
		for (size_t i = 0; i < sizeof(pid_files) / sizeof(pid_files[0]); i++) {
			snprintf(path, sizeof(path), "/proc/%d/%s", pid, pid_files[i]);
			read_proc_file(path, buf, fs);
		}
	}
	closedir(dir);
	fs->last_scanned = scanned;
}

static void timespec_add_ns(struct timespec *ts, long ns)
{
	ts->tv_sec += ns / NSEC_PER_SEC;
	ts->tv_nsec += ns % NSEC_PER_SEC;
	if (ts->tv_nsec >= NSEC_PER_SEC) {
		ts->tv_sec++;
		ts->tv_nsec -= NSEC_PER_SEC;
	}
}

static bool timespec_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static double self_cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"interval-ms", required_argument, NULL, 'i'},
		{"seconds", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct floor_stats fs = {0};
	struct timespec next, end, now;
	long interval_ms = 0, seconds = -1;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			interval_ms = parse_long("interval-ms", optarg, 1, MAX_INTERVAL_MS);
			break;
		case 's':
			seconds = parse_long("seconds", optarg, 0, MAX_SECONDS);
			break;
		case 'h':
			usage(stdout, 0);
			break;
		default:
			usage(stderr, 2);
		}
	}
	if (optind < argc || !interval_ms || seconds < 0)
		usage(stderr, 2);

	if (clock_gettime(CLOCK_MONOTONIC, &next))
		err(1, "clock_gettime");
	end = next;
	end.tv_sec += seconds;
	while (timespec_before(&next, &end)) {
		read_all(&fs);
		fs.ticks++;

		timespec_add_ns(&next, interval_ms * 1000000L);
		if (clock_gettime(CLOCK_MONOTONIC, &now))
			err(1, "clock_gettime");
		/* behind schedule: skip the ticks already missed, as a timerfd would */
		while (!timespec_before(&now, &next)) {
			timespec_add_ns(&next, interval_ms * 1000000L);
			fs.late_ticks++;
		}
		if (!timespec_before(&next, &end))
			break;
		while ((c = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL)) == EINTR)
			;
		if (c)
			errx(1, "clock_nanosleep: %s", strerror(c));
	}

	printf("{\"ticks\":%lu,\"late_ticks\":%lu,\"files_read\":%lu,\"files_failed\":%lu,"
	       "\"bytes_read\":%lu,\"last_scanned\":%zu,\"cpu_ms\":%.1f}\n",
	       fs.ticks, fs.late_ticks, fs.files_read, fs.files_failed, fs.bytes_read,
	       fs.last_scanned, self_cpu_ms());
	return fflush(stdout) ? 1 : 0;
}
