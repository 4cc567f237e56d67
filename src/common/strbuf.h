/*
 * strbuf.h - a growable byte buffer with a hard size cap.
 *
 * Contract: strbuf_init() cannot fail and allocates nothing; strbuf_release()
 * frees.  The buffer is always NUL-terminated once anything was added
 * (buf may be NULL before that: use strbuf_str()).  Every growing call
 * returns 0 or -ENOMEM, or -E2BIG when the result would exceed max_len; on
 * error the contents are unchanged.  strbuf_detach() is the only way to take
 * ownership of the memory.  Not thread-safe.
 */
#ifndef JOBSCOPE_STRBUF_H
#define JOBSCOPE_STRBUF_H

#include <stddef.h>

struct strbuf {
	char *buf;
	size_t len;
	size_t alloc;
	size_t max_len;
	int err; /* sticky: the first growth that failed (-E2BIG, -ENOMEM), else 0 */
};

#define STRBUF_DEFAULT_MAX ((size_t)64 << 20)

void strbuf_init(struct strbuf *sb, size_t max_len);
void strbuf_release(struct strbuf *sb);
void strbuf_reset(struct strbuf *sb);
int strbuf_grow(struct strbuf *sb, size_t extra);
int strbuf_add(struct strbuf *sb, const void *data, size_t len);
int strbuf_addstr(struct strbuf *sb, const char *s);
int strbuf_addch(struct strbuf *sb, char c);
int strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *strbuf_str(const struct strbuf *sb);
/* 0, or why an append since init (or reset) was cut short. */
static inline int strbuf_error(const struct strbuf *sb)
{
	return sb->err;
}
char *strbuf_detach(struct strbuf *sb, size_t *len);
/* Reads fd to EOF, appending.  -E2BIG if the file is larger than the cap. */
int strbuf_read_fd(struct strbuf *sb, int fd);

#endif
