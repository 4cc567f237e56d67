/*
 * progress.c - the progress line (progress.h): its text, its throttle, and
 * drawing it over itself with a carriage return and an erase to the line's
 * end (ECMA-48 EL, which every terminal since the VT100 knows).
 */
#include "common/progress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/fmt.h"
#include "common/timeutil.h"

#define ERASE_LINE "\r\033[K"

bool progress_wanted(int fd, bool quiet)
{
	const char *off = getenv("NO_PROGRESS");

	if (quiet || (off && *off && strcmp(off, "0") != 0))
		return false;
	return isatty(fd) == 1;
}

static void hook_step(void *arg, int64_t count, double fraction)
{
	progress_meter_update(arg, count, fraction);
}

static void hook_finish(void *arg)
{
	progress_meter_finish(arg);
}

void progress_meter_init(struct progress_meter *m, int fd, bool enabled, const char *label,
			 const char *unit)
{
	const char *delay = getenv("JOBSCOPE_PROGRESS_DELAY_MS");
	char *end;
	long long v;

	memset(m, 0, sizeof(*m));
	m->label = label;
	m->unit = unit;
	m->fd = fd;
	m->enabled = enabled;
	m->start_ms = time_now_ms();
	m->delay_ms = PROGRESS_DELAY_MS;
	if (delay && *delay) {
		v = strtoll(delay, &end, 10);
		if (!*end && v >= 0 && v <= 60000)
			m->delay_ms = v;
	}
	m->hook = (struct progress_hook){hook_step, hook_finish, m};
}

const struct progress_hook *progress_meter_hook(struct progress_meter *m)
{
	return m && m->enabled ? &m->hook : NULL;
}

static void put(struct progress_meter *m, const char *s, size_t len)
{
	while (len > 0) {
		ssize_t n = write(m->fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			m->enabled = false; /* a terminal gone: no more lines */
			return;
		}
		s += n;
		len -= (size_t)n;
	}
}

/* The terminal's width, so that the line never wraps (a wrapped line cannot be erased). */
static size_t columns(int fd)
{
	struct winsize ws;

	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 10)
		return ws.ws_col;
	return 80;
}

void progress_meter_update_at(struct progress_meter *m, int64_t now_ms, int64_t count,
			      double fraction)
{
	char line[256];
	size_t width, len;

	if (!m->enabled || !progress_due(now_ms, m->start_ms, m->last_ms, m->delay_ms))
		return;
	m->last_ms = now_ms;
	memcpy(line, ERASE_LINE, sizeof(ERASE_LINE) - 1);
	progress_format(line + sizeof(ERASE_LINE) - 1, sizeof(line) - (sizeof(ERASE_LINE) - 1),
			m->label, m->unit, count, fraction, now_ms - m->start_ms);
	width = columns(m->fd) - 1;
	len = strlen(line);
	if (len > sizeof(ERASE_LINE) - 1 + width)
		len = sizeof(ERASE_LINE) - 1 + width;
	put(m, line, len);
	m->drawn = m->enabled;
}

void progress_meter_update(struct progress_meter *m, int64_t count, double fraction)
{
	if (m->enabled)
		progress_meter_update_at(m, time_now_ms(), count, fraction);
}

void progress_meter_finish(struct progress_meter *m)
{
	if (m->drawn)
		put(m, ERASE_LINE, sizeof(ERASE_LINE) - 1);
	m->drawn = false;
	m->last_ms = 0;
	m->start_ms = time_now_ms();
}

/* 4s, 2m05s, 1h02m */
static void format_left(char *buf, size_t size, int64_t ms)
{
	int64_t s = (ms + 999) / 1000;

	if (s < 60)
		snprintf(buf, size, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(buf, size, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
	else
		snprintf(buf, size, "%lldh%02lldm", (long long)(s / 3600),
			 (long long)(s % 3600 / 60));
}

void progress_format(char *buf, size_t size, const char *label, const char *unit, int64_t count,
		     double fraction, int64_t elapsed_ms)
{
	char n[32], t[32];

	if (size == 0)
		return;
	fmt_count(n, sizeof(n), count > 0 ? (uint64_t)count : 0);
	if (elapsed_ms < 0)
		elapsed_ms = 0;
	if (!(fraction >= 0)) { /* unknown (NaN too) */
		format_left(t, sizeof(t), elapsed_ms);
		snprintf(buf, size, "%s: %s %s, %s", label, n, unit, t);
		return;
	}
	if (fraction > 1)
		fraction = 1;
	if (fraction >= 0.01 && fraction < 1) {
		format_left(t, sizeof(t), (int64_t)(elapsed_ms * (1 - fraction) / fraction));
		snprintf(buf, size, "%s: %d%%, %s %s, %s left", label, (int)(fraction * 100), n,
			 unit, t);
	} else {
		snprintf(buf, size, "%s: %d%%, %s %s", label, (int)(fraction * 100), n, unit);
	}
}

bool progress_due(int64_t now_ms, int64_t start_ms, int64_t last_ms, int64_t delay_ms)
{
	if (now_ms - start_ms < delay_ms)
		return false;
	return last_ms == 0 || now_ms - last_ms >= PROGRESS_REDRAW_MS;
}
