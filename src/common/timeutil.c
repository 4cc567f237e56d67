/* timeutil.c - clocks, duration parsing and timestamp formatting. */
#include "timeutil.h"

#include <errno.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>

int64_t time_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t time_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return timespec_ns(&ts);
}

static void deadline_on(clockid_t clock, struct timespec *until, int64_t ms)
{
	clock_gettime(clock, until);
	until->tv_sec += ms / 1000;
	until->tv_nsec += (ms % 1000) * 1000000;
	if (until->tv_nsec >= 1000000000) {
		until->tv_sec++;
		until->tv_nsec -= 1000000000;
	}
}

void time_deadline_ms(struct timespec *until, int64_t ms)
{
	deadline_on(CLOCK_REALTIME, until, ms);
}

void time_deadline_mono_ms(struct timespec *until, int64_t ms)
{
	deadline_on(CLOCK_MONOTONIC, until, ms);
}

void time_cond_init_mono(pthread_cond_t *cond)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
}

void wallclock_init(struct wallclock *wc)
{
	wc->anchor_ns = time_mono_ns();
	wc->anchor_ms = time_now_ms();
	wc->sim_ms = 0;
}

int64_t wallclock_now_ms(const struct wallclock *wc)
{
	if (wc->sim_ms > 0)
		return wc->sim_ms;
	return wc->anchor_ms + (time_mono_ns() - wc->anchor_ns) / 1000000;
}

int parse_duration_ms(const char *s, int64_t *out_ms)
{
	static const struct {
		const char *unit;
		double ms;
	} units[] = {
	    {"us", 0.001},  {"ms", 1},	     {"s", 1000},      {"m", 60000},
	    {"h", 3600000}, {"d", 86400000}, {"w", 604800000}, {"y", 31536000000.0}, /* 365 d */
	    {"", 1000},
	};
	char *end;
	double v;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno == ERANGE || !isfinite(v) || v < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit) == 0) {
			double ms = v * units[i].ms;

			if (ms > 9.0e15)
				return -ERANGE;
			*out_ms = (int64_t)ceil(ms - 1e-9);
			if (*out_ms == 0 && v > 0)
				*out_ms = 1;
			return 0;
		}
	}
	return -EINVAL;
}

void format_rfc3339_ms(int64_t ms, char *buf, size_t size)
{
	time_t secs = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
	int frac = (int)(ms - (int64_t)secs * 1000);
	struct tm tm;

	gmtime_r(&secs, &tm);
	snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

void format_local_compact(int64_t ms, char *buf, size_t size)
{
	time_t secs = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
	struct tm tm;

	localtime_r(&secs, &tm);
	snprintf(buf, size, "%04d%02d%02d_%02d%02d%02d", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

int parse_time_ms(const char *s, int64_t now_ms, int64_t *ms)
{
	size_t len = s ? strlen(s) : 0;
	int64_t v = 0, age;

	if (len == 0)
		return -EINVAL;
	if (strspn(s, "0123456789") == len) {
		for (const char *p = s; *p; p++) {
			if (v > (INT64_MAX - (*p - '0')) / 10)
				return -EINVAL;
			v = v * 10 + (*p - '0');
		}
		*ms = v;
		return 0;
	}
	if (parse_rfc3339_ms(s, &v) == 0 && v >= 0) {
		*ms = v;
		return 0;
	}
	/* an age names its unit: a bare number is ms since the epoch, above */
	if (s[len - 1] >= 'a' && s[len - 1] <= 'z' && parse_duration_ms(s, &age) == 0 &&
	    age <= now_ms) {
		*ms = now_ms - age;
		return 0;
	}
	return -EINVAL;
}

void format_duration_ms(int64_t ms, char *buf, size_t size)
{
	if (ms < 0)
		ms = 0;
	if (ms < 1000)
		snprintf(buf, size, "%dms", (int)ms);
	else if (ms < 60000)
		snprintf(buf, size, "%.2fs", (double)ms / 1000.0);
	else if (ms < 3600000)
		snprintf(buf, size, "%dm %02ds", (int)(ms / 60000), (int)(ms / 1000 % 60));
	else
		snprintf(buf, size, "%dh %02dm %02ds", (int)(ms / 3600000), (int)(ms / 60000 % 60),
			 (int)(ms / 1000 % 60));
}

int parse_rfc3339_ms(const char *s, int64_t *ms)
{
	struct tm tm;
	int y, mo, d, h, mi, sec, n = 0, frac_ms = 0, off_min = 0;
	const char *p;
	time_t t;

	if (!s ||
	    sscanf(s, "%4d-%2d-%2d%*1[T t]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 ||
	    n != 19)
		return -EINVAL;
	p = s + n;
	if (*p == '.') {
		int digits = 0;

		for (p++; *p >= '0' && *p <= '9'; p++, digits++)
			if (digits < 3)
				frac_ms = frac_ms * 10 + (*p - '0');
		if (digits == 0)
			return -EINVAL;
		for (; digits < 3; digits++)
			frac_ms *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int oh, om;

		if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2 || strlen(p) != 6 || oh > 23 || om > 59)
			return -EINVAL;
		off_min = (oh * 60 + om) * (*p == '-' ? -1 : 1);
		p += 6;
	} else {
		return -EINVAL;
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || y < 1970)
		return -EINVAL;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return -EINVAL;
	*ms = ((int64_t)t - (int64_t)off_min * 60) * 1000 + frac_ms;
	return 0;
}

void time_arm_timer(int fd, int64_t first_ms, int64_t interval_ms)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = first_ms / 1000;
	its.it_value.tv_nsec = (first_ms % 1000) * 1000000;
	its.it_interval.tv_sec = interval_ms / 1000;
	its.it_interval.tv_nsec = (interval_ms % 1000) * 1000000;
	timerfd_settime(fd, 0, &its, NULL);
}
