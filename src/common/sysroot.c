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

int sysroot_read_fd(int fd, struct strbuf *sb)
{
	strbuf_reset(sb);
	for (;;) {
		size_t room;
		ssize_t n;
		int ret;

		if (!sb->buf || sb->alloc - sb->len - 1 < 4096) {
			ret = strbuf_grow(sb, sb->alloc > 4096 ? sb->alloc : 4096);
			if (ret == -E2BIG)
				ret = strbuf_grow(sb, 1);
			if (ret)
				return ret;
		}
		room = sb->alloc - sb->len - 1;
		n = pread(fd, sb->buf + sb->len, room, (off_t)sb->len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* a process that exits while we read its files reads as ESRCH */
			return errno == ESRCH ? -ENOENT : -errno;
		}
		sb->len += (size_t)n;
		sb->buf[sb->len] = '\0';
		/*
		 * procfs and sysfs files produce their whole text for a read
		 * that has room for it, so a short read is the end: this saves
		 * the read() that would return 0, a quarter of the system calls
		 * per file.
		 */
		if ((size_t)n < room)
			return 0;
	}
}

int sysroot_read(const char *path, struct strbuf *sb)
{
	int fd = sysroot_open(path, O_RDONLY);
	int ret;

	if (fd < 0)
		return fd;
	ret = sysroot_read_fd(fd, sb);
	close(fd);
	return ret;
}

bool sysroot_exists(const char *path)
{
	char full[4096 + 256];

	if (sysroot_path(full, sizeof(full), path))
		return false;
	return access(full, F_OK) == 0;
}
