/*
 * outfile.h - a file written whole or not at all: written as PATH.tmp
 * beside it and renamed over PATH once all of it is in (synced first when
 * asked), the temporary file removed on failure.  For files of any size
 * written as they are made (a session's export, the head's session files).
 *
 * Errors: -errno, not said (the caller knows what it was writing).
 */
#ifndef JOBSCOPE_OUTFILE_H
#define JOBSCOPE_OUTFILE_H

#include <limits.h>
#include <stdbool.h>

struct outfile {
	const char *path; /* the caller's, kept until outfile_close */
	char tmp[PATH_MAX];
	int fd; /* write here */
};

/* PATH.tmp created (or emptied), mode 0644 less the umask. */
int outfile_open(struct outfile *f, const char *path);
/*
 * ret: how the writing went.  0 and PATH in place (fsync'd first with
 * sync), or the first error: ret, or the close's, sync's or rename's.
 */
int outfile_close(struct outfile *f, int ret, bool sync);

#endif
