/* outfile.c - a file written whole or not at all (see outfile.h). */
#include "common/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int outfile_open(struct outfile *f, const char *path)
{
	f->path = path;
	f->fd = -1;
	if ((size_t)snprintf(f->tmp, sizeof(f->tmp), "%s.tmp", path) >= sizeof(f->tmp))
		return -ENAMETOOLONG;
	f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	return f->fd < 0 ? -errno : 0;
}

int outfile_close(struct outfile *f, int ret, bool sync)
{
	if (!ret && sync && fsync(f->fd))
		ret = -errno;
	if (close(f->fd) && !ret)
		ret = -errno;
	f->fd = -1;
	if (!ret && rename(f->tmp, f->path))
		ret = -errno;
	if (ret)
		unlink(f->tmp);
	return ret;
}
