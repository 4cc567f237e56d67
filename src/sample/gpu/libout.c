/* libout.c - catch a vendor library's stdout and stderr during its start (libout.h). */
#include "libout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void libout_begin(struct libout *c)
{
	c->fd = -1;
	c->saved[0] = -1;
	c->saved[1] = -1;
	fflush(stdout);
	fflush(stderr);
	c->saved[0] = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	c->saved[1] = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (c->saved[0] < 0 || c->saved[1] < 0)
		goto out_close; /* fd 1 or 2 closed: nothing to keep clean */
	c->fd = memfd_create("jobscope-gpu-library-output", MFD_CLOEXEC);
	if (c->fd < 0)
		goto out_close;
	if (dup2(c->fd, STDOUT_FILENO) < 0)
		goto out_close;
	if (dup2(c->fd, STDERR_FILENO) < 0) {
		dup2(c->saved[0], STDOUT_FILENO);
		goto out_close;
	}
	return;

out_close:
	for (int i = 0; i < 2; i++)
		if (c->saved[i] >= 0)
			close(c->saved[i]);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->saved[0] = -1;
	c->saved[1] = -1;
}

void libout_end(struct libout *c, char *text, size_t size)
{
	char raw[LIBOUT_READ_MAX];
	struct stat st;
	ssize_t n;

	if (size)
		text[0] = '\0';
	if (c->fd < 0)
		return;
	/* what the library left in stdio's buffers belongs to the capture too */
	fflush(stdout);
	fflush(stderr);
	dup2(c->saved[0], STDOUT_FILENO);
	dup2(c->saved[1], STDERR_FILENO);
	close(c->saved[0]);
	close(c->saved[1]);
	do
		n = pread(c->fd, raw, sizeof(raw), 0);
	while (n < 0 && errno == EINTR);
	if (n > 0 && size)
		libout_clean(raw, (size_t)n, fstat(c->fd, &st) == 0 && st.st_size > (off_t)n, text,
			     size);
	close(c->fd);
	c->fd = -1;
}

/* Appends s (len bytes) to out at *at if it fits before the room kept for "...". */
static bool put(char *out, size_t room, size_t *at, const char *s, size_t len)
{
	if (*at + len > room)
		return false;
	memcpy(out + *at, s, len);
	*at += len;
	return true;
}

size_t libout_clean(const char *raw, size_t n, bool cut, char *out, size_t size)
{
	static const char more[] = "...";
	size_t room, at = 0, i = 0;
	bool full = false;

	if (size == 0)
		return 0;
	room = size - 1;
	while (i < n && !full) {
		size_t start = i, end;

		while (i < n && raw[i] != '\n' && raw[i] != '\r')
			i++;
		end = i;
		if (i < n)
			i++;
		while (start < end && (raw[start] == ' ' || raw[start] == '\t'))
			start++;
		while (end > start && (raw[end - 1] == ' ' || raw[end - 1] == '\t'))
			end--;
		if (start == end)
			continue;
		if (at > 0 && !put(out, room, &at, " | ", 3)) {
			full = true;
			break;
		}
		for (size_t k = start; k < end; k++) {
			unsigned char ch = (unsigned char)raw[k];
			char o = ch == '\t' ? ' ' : (ch >= 0x20 && ch < 0x7f ? (char)ch : '?');

			if (!put(out, room, &at, &o, 1)) {
				full = true;
				break;
			}
		}
	}
	if (full || cut) {
		/* room for "...", and no separator left hanging before it */
		if (at + sizeof(more) > size)
			at = size >= sizeof(more) ? size - sizeof(more) : 0;
		while (at > 0 && (out[at - 1] == ' ' || out[at - 1] == '|'))
			at--;
		if (at + sizeof(more) <= size) {
			memcpy(out + at, more, sizeof(more) - 1);
			at += sizeof(more) - 1;
		}
	}
	out[at] = '\0';
	return at;
}

const char *libout_said(char *buf, size_t size, const char *said)
{
	if (said[0])
		snprintf(buf, size, "; it said: %s", said);
	else if (size)
		buf[0] = '\0';
	return buf;
}
