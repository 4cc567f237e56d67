/*
 * floor.c - bench-floor: the bare cost of reading what `jobscope run` reads.
 *
 * Every interval it reads the same /proc files as jobscope and throws the
 * text away: every /proc/PID/stat (only ppid is extracted, to find the
 * tree), then status and io of each descendant of --root (and its cmdline
 * the first time the pid is seen), then the host files.  No other parsing,
 * no storage, no report; but also no cleverness: each file is opened, read
 * once and closed, every tick.  The sampler-cost benchmark compares
 * jobscope's CPU time per tick against this program's; a sampler that keeps
 * descriptors open or skips idle processes can go below it.
 *
 * Build: cc -O2 -Wall -Wextra -Werror -o build/bench-floor bench/floor.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define READ_BUF_SIZE	 4096
#define MAX_INTERVAL_MS	 3600000L
#define MAX_SECONDS	 86400L
#define NSEC_PER_SEC	 1000000000L

static const char *const host_files[] = {
	"/proc/stat",	       "/proc/meminfo",	       "/proc/diskstats",
	"/proc/net/dev",       "/proc/loadavg",	       "/proc/pressure/cpu",
	"/proc/pressure/memory", "/proc/pressure/io",
};

/* One process of this tick's scan of /proc. */
struct pid_entry {
	int pid;
	int ppid;
};

/* A growable array of pid_entry; pids alone use only the pid field. */
struct pid_list {
	struct pid_entry *v;
	size_t n, alloc;
};

struct floor_stats {
	unsigned long ticks, late_ticks;
	unsigned long files_read, bytes_read;
	size_t last_scanned, last_descendants;
};

static void usage(FILE *out, int status)
{
	fputs("usage: bench-floor --root PID --interval-ms N --seconds S\n", out);
	if (status == 0)
		fputs("\n"
		      "Every N ms for S seconds, read what `jobscope run` reads from /proc\n"
		      "(every /proc/PID/stat; status, io and, once, cmdline of each descendant\n"
		      "of PID; the host files) with no parsing beyond finding the tree.\n"
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
		fprintf(stderr, "bench-floor: invalid value for --%s: '%s'\n", opt, arg);
		usage(stderr, 2);
	}
	return v;
}

static void pid_list_push(struct pid_list *l, int pid, int ppid)
{
	if (l->n == l->alloc) {
		size_t n = l->alloc ? l->alloc * 2 : 1024;
		struct pid_entry *v = realloc(l->v, n * sizeof(*v));

		if (!v)
			err(1, "realloc");
		l->v = v;
		l->alloc = n;
	}
	l->v[l->n].pid = pid;
	l->v[l->n].ppid = ppid;
	l->n++;
}

/*
 * Reads a whole /proc file into buf (discarding all but the first
 * READ_BUF_SIZE - 1 bytes); returns the bytes kept, or -1 if it cannot be
 * read (a process that just exited).  One read() is enough for every file
 * smaller than the buffer: procfs fills the buffer as far as it can.
 */
static ssize_t read_proc_file(const char *path, char *buf, struct floor_stats *fs)
{
	ssize_t n, kept;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, READ_BUF_SIZE - 1);
	kept = n;
	while (n == READ_BUF_SIZE - 1) {
		char discard[READ_BUF_SIZE];

		n = read(fd, discard, sizeof(discard));
		if (n > 0)
			fs->bytes_read += (unsigned long)n;
	}
	close(fd);
	if (kept < 0)
		return -1;
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

/* ppid is the second field after the ')' that ends comm (comm may hold ')'). */
static int stat_ppid(const char *text)
{
	const char *p = strrchr(text, ')');

	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
		return -1;
	return (int)strtol(p + 4, NULL, 10);
}

/* Fills scan with (pid, ppid) of every process in /proc. */
static void scan_proc(struct pid_list *scan, struct floor_stats *fs)
{
	char path[64], buf[READ_BUF_SIZE];
	struct dirent *de;
	DIR *dir;

	scan->n = 0;
	dir = opendir("/proc");
	if (!dir)
		err(1, "opendir /proc");
	while ((de = readdir(dir)) != NULL) {
		int pid, ppid;

		if (!is_pid_name(de->d_name))
			continue;
		pid = atoi(de->d_name);
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		if (read_proc_file(path, buf, fs) < 0)
			continue;
		ppid = stat_ppid(buf);
		if (ppid >= 0)
			pid_list_push(scan, pid, ppid);
	}
	closedir(dir);
	fs->last_scanned = scan->n;
}

static int cmp_ppid(const void *a, const void *b)
{
	const struct pid_entry *x = a, *y = b;

	return (x->ppid > y->ppid) - (x->ppid < y->ppid);
}

static int cmp_pid(const void *a, const void *b)
{
	const struct pid_entry *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* First entry of scan (sorted by ppid) whose ppid is at least ppid. */
static size_t lower_bound_ppid(const struct pid_list *scan, int ppid)
{
	size_t lo = 0, hi = scan->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (scan->v[mid].ppid < ppid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Breadth-first walk from root over scan sorted by ppid; out ends sorted by
 * pid.  out doubles as the queue.
 */
static void find_descendants(struct pid_list *scan, int root, struct pid_list *out)
{
	size_t head = 0;

	qsort(scan->v, scan->n, sizeof(*scan->v), cmp_ppid);
	out->n = 0;
	for (int parent = root;; parent = out->v[head++].pid) {
		for (size_t i = lower_bound_ppid(scan, parent);
		     i < scan->n && scan->v[i].ppid == parent; i++)
			pid_list_push(out, scan->v[i].pid, parent);
		if (head == out->n)
			break;
	}
	qsort(out->v, out->n, sizeof(*out->v), cmp_pid);
}

static bool pid_list_has(const struct pid_list *sorted, int pid)
{
	struct pid_entry key = {.pid = pid};

	return bsearch(&key, sorted->v, sorted->n, sizeof(key), cmp_pid) != NULL;
}

static void read_descendants(const struct pid_list *desc, const struct pid_list *seen,
			     struct floor_stats *fs)
{
	char path[64], buf[READ_BUF_SIZE];

	for (size_t i = 0; i < desc->n; i++) {
		int pid = desc->v[i].pid;

		snprintf(path, sizeof(path), "/proc/%d/status", pid);
		read_proc_file(path, buf, fs);
		snprintf(path, sizeof(path), "/proc/%d/io", pid);
		read_proc_file(path, buf, fs);
		if (!pid_list_has(seen, pid)) {
			snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
			read_proc_file(path, buf, fs);
		}
	}
	fs->last_descendants = desc->n;
}

static void read_host(struct floor_stats *fs)
{
	char buf[READ_BUF_SIZE];

	for (size_t i = 0; i < sizeof(host_files) / sizeof(host_files[0]); i++)
		read_proc_file(host_files[i], buf, fs);
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
		{"root", required_argument, NULL, 'r'},
		{"interval-ms", required_argument, NULL, 'i'},
		{"seconds", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct pid_list scan = {0}, desc = {0}, seen = {0}, tmp;
	struct floor_stats fs = {0};
	struct timespec next, end, now;
	long interval_ms = 0, seconds = -1;
	int root = 0, c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			root = (int)parse_long("root", optarg, 1, INT_MAX);
			break;
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
	if (optind < argc || !root || !interval_ms || seconds < 0)
		usage(stderr, 2);

	if (clock_gettime(CLOCK_MONOTONIC, &next))
		err(1, "clock_gettime");
	end = next;
	end.tv_sec += seconds;
	while (timespec_before(&next, &end)) {
		read_host(&fs);
		scan_proc(&scan, &fs);
		find_descendants(&scan, root, &desc);
		read_descendants(&desc, &seen, &fs);
		/* this tick's descendants are the ones whose cmdline is known */
		tmp = seen;
		seen = desc;
		desc = tmp;
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

	printf("{\"ticks\":%lu,\"late_ticks\":%lu,\"files_read\":%lu,\"bytes_read\":%lu,"
	       "\"last_scanned\":%zu,\"last_descendants\":%zu,\"cpu_ms\":%.1f}\n",
	       fs.ticks, fs.late_ticks, fs.files_read, fs.bytes_read, fs.last_scanned,
	       fs.last_descendants, self_cpu_ms());
	free(scan.v);
	free(desc.v);
	free(seen.v);
	return fflush(stdout) ? 1 : 0;
}
