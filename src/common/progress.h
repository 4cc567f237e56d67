/*
 * progress.h - a one-line progress indicator on a terminal, and the small
 * interface long loops report through.
 *
 * Lower layers never print: a loop that may take long (a report's replay,
 * an export's frames, the agent's catch-up after an outage) takes a
 * `const struct progress_hook *` (NULL: nobody listens) and calls
 * progress_step() as it goes and progress_finish() at its end.  The
 * command that started the work decides whether anyone listens: it makes
 * a progress_meter, which draws "jobscope report: 45%, 12,345 rows, 3s
 * left" on stderr, only when progress_wanted() says so (stderr is a
 * terminal, no NO_PROGRESS, no --quiet).  The meter redraws at most every
 * PROGRESS_REDRAW_MS, waits PROGRESS_DELAY_MS before its first line (quick
 * work shows nothing), never wraps past the terminal's width and erases its
 * line at the end, so what follows starts on a clean line.
 *
 * A meter belongs to one thread at a time; it never fails (a write error
 * turns it off).  progress_format and progress_due are pure, for tests.
 */
#ifndef JOBSCOPE_PROGRESS_H
#define JOBSCOPE_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROGRESS_REDRAW_MS 100 /* at most ten lines a second */
#define PROGRESS_DELAY_MS  300 /* nothing for work quicker than this */

struct progress_hook {
	/* count: items done (rows, frames); fraction: 0..1, or < 0 when the total is unknown */
	void (*step)(void *arg, int64_t count, double fraction);
	void (*finish)(void *arg);
	void *arg;
};

static inline void progress_step(const struct progress_hook *h, int64_t count, double fraction)
{
	if (h && h->step)
		h->step(h->arg, count, fraction);
}

static inline void progress_finish(const struct progress_hook *h)
{
	if (h && h->finish)
		h->finish(h->arg);
}

struct progress_meter {
	const char *label; /* "jobscope export" */
	const char *unit;  /* "frames" */
	int fd;
	bool enabled, drawn;
	int64_t start_ms, last_ms, delay_ms;
	struct progress_hook hook;
};

/*
 * Whether to show progress on fd: it is a terminal, $NO_PROGRESS is unset
 * (or empty or "0") and the command was not asked to be quiet.
 */
bool progress_wanted(int fd, bool quiet);
/*
 * A meter drawing on fd when enabled; label and unit must outlive it.
 * $JOBSCOPE_PROGRESS_DELAY_MS replaces PROGRESS_DELAY_MS (tests).
 */
void progress_meter_init(struct progress_meter *m, int fd, bool enabled, const char *label,
			 const char *unit);
/* The hook that feeds m, or NULL when m is off (the loops then do nothing). */
const struct progress_hook *progress_meter_hook(struct progress_meter *m);
void progress_meter_update(struct progress_meter *m, int64_t count, double fraction);
/* The same at now_ms (tests). */
void progress_meter_update_at(struct progress_meter *m, int64_t now_ms, int64_t count,
			      double fraction);
/* Erases its line if it drew one; it may be used again after. */
void progress_meter_finish(struct progress_meter *m);

/*
 * "LABEL: 12,345 UNIT, 4s" (total unknown) or "LABEL: 45%, 12,345 UNIT,
 * 3s left" into buf (truncated to size - 1 characters); the time left is
 * the elapsed time scaled by what remains, once 1% is done.
 */
void progress_format(char *buf, size_t size, const char *label, const char *unit, int64_t count,
		     double fraction, int64_t elapsed_ms);
/* Whether a meter started at start_ms, last drawn at last_ms (0: never), draws at now_ms. */
bool progress_due(int64_t now_ms, int64_t start_ms, int64_t last_ms, int64_t delay_ms);

#endif
