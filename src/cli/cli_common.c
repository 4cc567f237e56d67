/* cli_common.c - helpers shared by the subcommands (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/sysroot.h"
#include "common/timeutil.h"
#include "sample/host.h"
#include "store/store.h"

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

int cli_set_sysroot(const struct opt *opt, const char *arg)
{
	(void)opt;
	sysroot_set(arg);
	return 0;
}
