/*
 * log.h - messages for people, in one format: "jobscope: <message>".
 *
 * Contract: every function writes one line to stderr (or the log file set by
 * log_set_file) and never fails.  log_err() and log_warn() return the value
 * passed in, so an error is reported and passed on in one statement:
 *
 *         return log_err(-errno, "cannot open store '%s'", path);
 *
 * When ret is a negative errno, ": strerror(-ret)" is appended.  Pass 0 (or
 * a positive value) to print the message alone.  Not thread-safe by design:
 * jobscope's sampler is single-threaded.
 */
#ifndef JOBSCOPE_LOG_H
#define JOBSCOPE_LOG_H

#include <stdio.h>

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* NULL restores stderr.  The FILE stays owned by the caller. */
void log_set_file(FILE *f);

int log_err(int ret, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int log_warn(int ret, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Messages go to path from now on (appended, line-buffered); NULL keeps
 * stderr.  Called again (on SIGHUP) it reopens the file logrotate moved
 * and closes the one it replaces.
 */
int log_open_file(const char *path);

#endif
