/*
 * timeutil.h - clocks, durations and timestamps.
 *
 * Time in jobscope is int64 milliseconds since the Unix epoch, UTC ("_ms"),
 * or int64 nanoseconds of CLOCK_MONOTONIC ("_ns") for measuring intervals.
 * Parsers return 0 or -EINVAL/-ERANGE and leave *out untouched on error.
 */
#ifndef JOBSCOPE_TIMEUTIL_H
#define JOBSCOPE_TIMEUTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

int64_t time_now_ms(void);
int64_t time_mono_ns(void);

/* A clock_gettime() reading in ns. */
static inline int64_t timespec_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}
/* The CLOCK_REALTIME instant ms (>= 0) from now: a pthread_cond_timedwait deadline. */
void time_deadline_ms(struct timespec *until, int64_t ms);
/*
 * The same on CLOCK_MONOTONIC, for a condition variable made by
 * time_cond_init_mono: a step of the system clock moves no deadline.
 */
void time_deadline_mono_ms(struct timespec *until, int64_t ms);
void time_cond_init_mono(pthread_cond_t *cond);

/*
 * A wall clock that cannot go backwards: anchored to the real time once,
 * then advanced by CLOCK_MONOTONIC, so differences between two stamps are
 * real elapsed time even if the system clock is stepped during a run.
 */
struct wallclock {
	int64_t anchor_ms;
	int64_t anchor_ns;
	int64_t sim_ms; /* > 0: a simulated clock, this instant, moved by its owner */
};
void wallclock_init(struct wallclock *wc);
int64_t wallclock_now_ms(const struct wallclock *wc);

/*
 * "250ms", "2s", "1.5s", "1m", "2h", "1d", "2w", "2y" (365 days), "100us"; a
 * bare number is seconds.
 * Result in milliseconds (microsecond inputs are rounded up to 1 ms when
 * non-zero).  Negative, empty, overflowing or unknown-unit input: -EINVAL or
 * -ERANGE.
 */
int parse_duration_ms(const char *s, int64_t *out_ms);

/* "2026-11-22T09:28:15.123Z" into buf (at least 32 bytes). */
void format_rfc3339_ms(int64_t ms, char *buf, size_t size);
/* "20261122_102815" in the local time zone (gswarm's default names), at least 16 bytes. */
void format_local_compact(int64_t ms, char *buf, size_t size);
/*
 * "2026-11-22T12:38:04Z", "...04.907Z", "...04+02:00" (a space for the T
 * too) -> ms since the epoch.  0 or -EINVAL.
 */
int parse_rfc3339_ms(const char *s, int64_t *ms);
/*
 * A point in time as the CLI and the HTTP APIs take it: ms since the epoch
 * (decimal digits only), RFC 3339, or an age before now_ms (a duration with
 * its unit: "2h", "7d", "90s").  0 or -EINVAL (an age reaching before the
 * epoch too); the one parser of --since/--until and since=/until=.
 */
int parse_time_ms(const char *s, int64_t now_ms, int64_t *ms);
/* "1h 02m 03s", "2.51s", "350ms" */
void format_duration_ms(int64_t ms, char *buf, size_t size);

/* Arms the timerfd fd to fire after first_ms, then every interval_ms (0: once). */
void time_arm_timer(int fd, int64_t first_ms, int64_t interval_ms);

#endif
