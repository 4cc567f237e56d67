/* sysroot.c - read /proc and /sys under a swappable root (see sysroot.h). */
#include "sysroot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char sysroot[4096];

void sysroot_set(const char *root)
{
	size_t n;

	if (!root)
		root = "";
	snprintf(sysroot, sizeof(sysroot), "%s", root);
	n = strlen(sysroot);
	while (n > 0 && sysroot[n - 1] == '/')
		sysroot[--n] = '\0';
}

const char *sysroot_get(void)
{
	return sysroot;
}

int sysroot_path(char *buf, size_t size, const char *path)
{
	int n = snprintf(buf, size, "%s%s", sysroot, path);

	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

int sysroot_open(const char *path, int flags)
{
	char full[4096 + 256];
	int ret = sysroot_path(full, sizeof(full), path);
	int fd;

	if (ret)
		return ret;
	fd = open(full, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int sysroot_read(const char *path, struct strbuf *sb)
{
	int fd = sysroot_open(path, O_RDONLY);
	int ret;

	if (fd < 0)
		return fd;
	strbuf_reset(sb);
	ret = strbuf_read_fd(sb, fd);
	close(fd);
	/* A process that exits while we read its files reads as ESRCH. */
	if (ret == -ESRCH)
		ret = -ENOENT;
	return ret;
}

bool sysroot_exists(const char *path)
{
	char full[4096 + 256];

	if (sysroot_path(full, sizeof(full), path))
		return false;
	return access(full, F_OK) == 0;
}
