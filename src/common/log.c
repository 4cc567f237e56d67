/* log.c - "jobscope: ..." messages with errno text appended (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static enum log_level log_level = LOG_INFO;
static FILE *log_file;

void log_set_level(enum log_level level)
{
	log_level = level;
}

enum log_level log_get_level(void)
{
	return log_level;
}

void log_set_file(FILE *f)
{
	log_file = f;
}

static void log_vprint(const char *prefix, int ret, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

static void log_vprint(const char *prefix, int ret, const char *fmt, va_list ap)
{
	FILE *out = log_file ? log_file : stderr;

	fputs("jobscope: ", out);
	if (prefix)
		fputs(prefix, out);
	vfprintf(out, fmt, ap);
	if (ret < 0)
		fprintf(out, ": %s", strerror(-ret));
	fputc('\n', out);
	fflush(out);
}

int log_err(int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vprint(NULL, ret, fmt, ap);
	va_end(ap);
	return ret;
}

int log_warn(int ret, const char *fmt, ...)
{
	va_list ap;

	if (log_level < LOG_WARN)
		return ret;
	va_start(ap, fmt);
	log_vprint("warning: ", ret, fmt, ap);
	va_end(ap);
	return ret;
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	if (log_level < LOG_INFO)
		return;
	va_start(ap, fmt);
	log_vprint(NULL, 0, fmt, ap);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;

	if (log_level < LOG_DEBUG)
		return;
	va_start(ap, fmt);
	log_vprint("debug: ", 0, fmt, ap);
	va_end(ap);
}

int log_open_file(const char *path)
{
	static FILE *opened; /* the file the previous call opened: closed after the switch */
	FILE *f;

	if (!path)
		return 0;
	f = fopen(path, "a");
	if (!f)
		return log_err(-errno, "cannot open --log-file '%s'", path);
	setvbuf(f, NULL, _IOLBF, 0);
	log_set_file(f);
	if (opened)
		fclose(opened);
	opened = f;
	return 0;
}
