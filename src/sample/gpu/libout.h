/*
 * libout.h - what a vendor GPU library writes on stdout and stderr while
 * it is loaded and initialised, caught instead of reaching the terminal.
 *
 * librocm_smi64 prints "Failed to open drm root directory ..." and
 * "Exception caught: rsmi_init." on every machine without an AMD GPU;
 * the backends say it at debug level instead ("rocm: the library said:
 * ..."), or inside their warning when the library truly fails.
 *
 * libout_begin() flushes stdio and points fds 1 and 2 at an anonymous
 * file (memfd: no pipe to fill, whatever the library writes);
 * libout_end() flushes again, puts the original fds back and returns what
 * was written as one printable line.  If the capture cannot be set up
 * (no memfd, fd 1 or 2 closed), the library writes where it always did
 * and the text is "".
 *
 * Not thread-safe, and process-wide: fds 1 and 2 belong to every thread,
 * so whatever another thread writes meanwhile would be caught too.  It is
 * only called from gpu_set_open(), which runs at start before any thread
 * (gpu_set.h); nothing may log between begin and end.
 */
#ifndef JOBSCOPE_GPU_LIBOUT_H
#define JOBSCOPE_GPU_LIBOUT_H

#include <stdbool.h>
#include <stddef.h>

#define LIBOUT_READ_MAX 8192 /* raw bytes read back; more is cut, with "..." */

struct libout {
	int fd;	      /* the memfd; -1: not capturing */
	int saved[2]; /* the original fds 1 and 2 */
};

void libout_begin(struct libout *c);
/* Ends the capture; text receives the output cleaned (libout_clean), "" if none. */
void libout_end(struct libout *c, char *text, size_t size);

/*
 * raw (n bytes, anything) as one line into out (size > 0, always
 * terminated): each line trimmed, empty lines dropped, lines joined with
 * " | ", tabs as spaces and other bytes outside printable ASCII as '?';
 * cut with "..." when it does not fit, or when cut is set (raw was itself
 * cut short).  Returns the length written.
 */
size_t libout_clean(const char *raw, size_t n, bool cut, char *out, size_t size);

/* "; it said: SAID" in buf for the end of a warning, "" when said is empty; returns buf. */
const char *libout_said(char *buf, size_t size, const char *said);

#endif
