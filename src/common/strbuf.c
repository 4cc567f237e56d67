/* strbuf.c - growable, capped byte buffer (see strbuf.h). */
#include "strbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void strbuf_init(struct strbuf *sb, size_t max_len)
{
	sb->buf = NULL;
	sb->len = 0;
	sb->alloc = 0;
	sb->err = 0;
	sb->max_len = max_len ? max_len : STRBUF_DEFAULT_MAX;
}

void strbuf_release(struct strbuf *sb)
{
	free(sb->buf);
	strbuf_init(sb, sb->max_len);
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	sb->err = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

int strbuf_grow(struct strbuf *sb, size_t extra)
{
	size_t want, alloc;
	char *p;

	if (extra > sb->max_len || sb->len > sb->max_len - extra)
		return sb->err = -E2BIG;
	want = sb->len + extra + 1;
	if (want <= sb->alloc)
		return 0;
	alloc = sb->alloc ? sb->alloc : 64;
	while (alloc < want)
		alloc *= 2;
	if (alloc > sb->max_len + 1)
		alloc = sb->max_len + 1;
	p = realloc(sb->buf, alloc);
	if (!p)
		return sb->err = -ENOMEM;
	if (!sb->buf)
		p[0] = '\0';
	sb->buf = p;
	sb->alloc = alloc;
	return 0;
}

int strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	int ret = strbuf_grow(sb, len);

	if (ret)
		return ret;
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int strbuf_addstr(struct strbuf *sb, const char *s)
{
	return strbuf_add(sb, s, strlen(s));
}

int strbuf_addch(struct strbuf *sb, char c)
{
	return strbuf_add(sb, &c, 1);
}

int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n, ret;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	ret = strbuf_grow(sb, (size_t)n);
	if (ret)
		return ret;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
	return 0;
}

const char *strbuf_str(const struct strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}

char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	char *p = sb->buf;

	if (!p)
		p = calloc(1, 1);
	if (len)
		*len = sb->len;
	strbuf_init(sb, sb->max_len);
	return p;
}

int strbuf_read_fd(struct strbuf *sb, int fd)
{
	for (;;) {
		ssize_t n;
		int ret;

		if (!sb->buf || sb->alloc - sb->len - 1 == 0) {
			size_t want = sb->alloc > 4096 ? sb->alloc : 4096;

			if (want > sb->max_len - sb->len)
				want = sb->max_len - sb->len;
			if (want == 0) {
				/* At the cap: more data means the file is too big. */
				char probe;

				do
					n = read(fd, &probe, 1);
				while (n < 0 && errno == EINTR);
				if (n < 0)
					return -errno;
				return n ? -E2BIG : 0;
			}
			ret = strbuf_grow(sb, want);
			if (ret)
				return ret;
		}
		n = read(fd, sb->buf + sb->len, sb->alloc - sb->len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return 0;
		sb->len += (size_t)n;
		sb->buf[sb->len] = '\0';
	}
}
