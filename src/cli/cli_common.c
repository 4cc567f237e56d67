/* cli_common.c - helpers shared by the subcommands (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/sysroot.h"
#include "common/timeutil.h"
#include "sample/host.h"
#include "store/store.h"

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("jobscope: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'jobscope %s%s--help'.\n", cmd ? cmd : "", cmd ? " " : "");
	return EXIT_USAGE;
}

int cli_option_error(const char *cmd, int opt, char **argv)
{
	if (opt == ':')
		return cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
	return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
}

int cli_open_store(const char *db, unsigned flags, struct store **st)
{
	char buf[4096];

	if (!db) {
		if (cli_default_db(buf, sizeof(buf)))
			return EXIT_USAGE;
		db = buf;
	}
	return store_open(db, flags, st) ? EXIT_USAGE : 0;
}

int cli_default_db(char *buf, size_t size)
{
	const char *xdg = getenv("XDG_DATA_HOME");
	const char *home = getenv("HOME");
	int n;

	if (xdg && xdg[0] == '/') {
		n = snprintf(buf, size, "%s/jobscope/jobscope.db", xdg);
	} else {
		if (!home || !home[0]) {
			struct passwd *pw = getpwuid(getuid());

			home = pw ? pw->pw_dir : NULL;
		}
		if (!home || !home[0])
			return log_err(-ENOENT,
				       "no home directory to keep the store in: use --db PATH");
		n = snprintf(buf, size, "%s/.local/share/jobscope/jobscope.db", home);
	}
	if (n < 0 || (size_t)n >= size)
		return log_err(-ENAMETOOLONG, "default store path");
	return 0;
}

int cli_write_file(const char *path, const char *data, size_t len)
{
	int fd;
	size_t off = 0;

	if (strcmp(path, "-") == 0)
		fd = STDOUT_FILENO;
	else
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return log_err(-errno, "cannot write '%s'", path);
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0) {
			int ret = -errno;

			if (errno == EINTR)
				continue;
			if (fd != STDOUT_FILENO)
				close(fd);
			return log_err(ret, "cannot write '%s'", path);
		}
		off += (size_t)n;
	}
	if (fd != STDOUT_FILENO && close(fd) < 0)
		return log_err(-errno, "cannot write '%s'", path);
	return 0;
}

bool cli_utf8(void)
{
	const char *cs;

	setlocale(LC_CTYPE, "");
	cs = nl_langinfo(CODESET);
	return cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
}

uint64_t cli_self_cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

int64_t cli_boot_ms(const struct host_sample *h)
{
	struct timespec ts;

	if (sysroot_get()[0] == '\0' && clock_gettime(CLOCK_BOOTTIME, &ts) == 0)
		return time_now_ms() - ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	return h->cpu.btime_s * 1000;
}

void cli_arm_timer(int fd, int64_t first_ms, int64_t interval_ms)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = first_ms / 1000;
	its.it_value.tv_nsec = (first_ms % 1000) * 1000000;
	its.it_interval.tv_sec = interval_ms / 1000;
	its.it_interval.tv_nsec = (interval_ms % 1000) * 1000000;
	timerfd_settime(fd, 0, &its, NULL);
}

int cli_read_token(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return log_err(-errno, "cannot read the token file '%s'", path);
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	if (n == 0)
		return log_err(-EINVAL, "the token file '%s' is empty", path);
	return 0;
}

int cli_open_log(const char *path)
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
