/* helper.h - what the js-* workloads in tests/helpers/ have in common: option
 * values that exit 2 with usage, the monotonic clock, CPU time, sleeping, the
 * xorshift busy loop, reaping a child and a file written atomically by rename.
 */
#ifndef JS_HELPER_H
#define JS_HELPER_H

#include <err.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

/*
 * Each program defines PROG_NAME ("js-busy") before including this header, and
 * defines usage(), which prints its synopsis to @out and exits with @status.
 * Every other failure is err(3)-style: "js-busy: clock_gettime: ...", exit 1.
 */
#ifndef PROG_NAME
#error "define PROG_NAME before including helper.h"
#endif

#define MAX_SECONDS   1e6 /* the largest --seconds, --sleep or --hold, about 11 days */
#define XORSHIFT_SEED 0x9e3779b97f4a7c15ULL

static void usage(FILE *out, int status) __attribute__((noreturn));

/*
 * The body of every usage(): the synopsis alone for a usage error (status 2,
 * to stderr), followed by @options for --help (status 0, to stdout).
 */
static inline __attribute__((noreturn)) void print_usage(FILE *out, int status,
							 const char *synopsis, const char *options)
{
	fputs(synopsis, out);
	if (status == 0)
		fputs(options, out);
	exit(status);
}

/* "js-busy: invalid value for --seconds: 'x'", then the synopsis; exits 2. */
static inline __attribute__((noreturn)) void bad_value(const char *opt, const char *arg)
{
	fprintf(stderr, PROG_NAME ": invalid value for --%s: '%s'\n", opt, arg);
	usage(stderr, 2);
}

/* Seconds in [0, MAX_SECONDS], fractions allowed; anything else is bad_value(). */
static inline double parse_seconds(const char *opt, const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= 0 && v <= MAX_SECONDS))
		bad_value(opt, arg);
	return v;
}

/* A count in [@min, @max], decimal digits only (no sign, no blanks). */
static inline unsigned long parse_count(const char *opt, const char *arg, unsigned long min,
					unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || arg[0] < '0' || arg[0] > '9' || *end || v < min || v > max)
		bad_value(opt, arg);
	return v;
}

static inline double now_s(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		err(1, "clock_gettime");
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* User plus system CPU seconds of @who: RUSAGE_SELF or RUSAGE_CHILDREN. */
static inline double cpu_s(int who)
{
	struct rusage ru;

	if (getrusage(who, &ru))
		err(1, "getrusage");
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Sleeps the whole of @seconds (>= 0), whatever signals interrupt it. */
static inline void sleep_s(double seconds)
{
	struct timespec ts = {.tv_sec = (time_t)seconds};

	ts.tv_nsec = (long)((seconds - ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts))
		if (errno != EINTR)
			err(1, "nanosleep");
}

/* Each step depends on the previous one, so it can be neither vectorised nor skipped. */
static inline uint64_t xorshift_steps(uint64_t x, unsigned long steps)
{
	while (steps--) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

/*
 * Burns CPU until the monotonic clock passes @deadline, reading the clock
 * every @check_steps steps.  Store the result in a volatile sink, or the
 * compiler may drop the work.
 */
static inline uint64_t spin_until(double deadline, unsigned long check_steps)
{
	uint64_t x = XORSHIFT_SEED;

	while (now_s() < deadline)
		x = xorshift_steps(x, check_steps);
	return x;
}

/* Waits for the child @pid, through EINTR; returns its wait status. */
static inline int wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			err(1, "waitpid");
	return status;
}

/*
 * Writes the file @path as @path.tmp and renames it into place, so whoever
 * polls for @path never reads it half written.  @what names it in messages.
 */
static inline __attribute__((format(printf, 3, 4))) void
write_file_atomic(const char *path, const char *what, const char *fmt, ...)
{
	char tmp[PATH_MAX];
	va_list ap;
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		errx(1, "%s path too long: '%s'", what, path);
	f = fopen(tmp, "w");
	if (!f)
		err(1, "cannot open '%s'", tmp);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	if (fclose(f))
		err(1, "cannot write '%s'", tmp);
	if (rename(tmp, path))
		err(1, "cannot rename '%s' to '%s'", tmp, path);
}

#endif /* JS_HELPER_H */
