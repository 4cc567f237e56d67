/*
 * sysroot.h - the swappable root under which /proc and /sys are read.
 *
 * Everything jobscope reads from the kernel goes through here, so parsers
 * and samplers run on captured fixture trees in tests.  The root is "" (the
 * real /) unless set by --sysroot or $JOBSCOPE_SYSROOT.  Paths passed in are
 * absolute kernel paths ("/proc/123/stat"); the root is prefixed.
 *
 * sysroot_read() returns 0 or -errno (-ENOENT when a process vanished,
 * -EACCES when not ours, -E2BIG beyond the buffer's cap).  Not thread-safe
 * (the root is global state, set once at start).
 */
#ifndef JOBSCOPE_SYSROOT_H
#define JOBSCOPE_SYSROOT_H

#include <stdbool.h>
#include <stddef.h>

#include "strbuf.h"

void sysroot_set(const char *root);
const char *sysroot_get(void);
/* Builds root+path into buf; -ENAMETOOLONG if it does not fit. */
int sysroot_path(char *buf, size_t size, const char *path);
int sysroot_open(const char *path, int flags);
/* Replaces sb's contents with the file's. */
int sysroot_read(const char *path, struct strbuf *sb);
/*
 * The same for a file already open: reads it whole from offset 0 with
 * pread(), so a descriptor kept open across ticks gives fresh contents
 * each time.  -ENOENT when the process behind a /proc file is gone.
 */
int sysroot_read_fd(int fd, struct strbuf *sb);
bool sysroot_exists(const char *path);

#endif
