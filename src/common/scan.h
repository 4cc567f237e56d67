/*
 * scan.h - a bounded cursor over text that is not NUL-terminated, shared by
 * the /proc, /sys and cgroup parsers (sample/) and the identity parsers
 * (attrib/); and spans: a struct scan taken as a whole value (span_*).
 *
 * Every function stops at `end`: the text may be raw bytes from a fuzzer.
 * Number scanners return 0 or -EINVAL (no digits, overflow, or not followed
 * by a delimiter) and leave *out alone on error.  Header-only: these run for
 * every field of every process each tick and are meant to be inlined.
 */
#ifndef JOBSCOPE_SCAN_H
#define JOBSCOPE_SCAN_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct scan {
	const char *pos;
	const char *end;
};

static inline bool scan_is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static inline void scan_blanks(struct scan *s)
{
	while (s->pos < s->end && scan_is_blank(*s->pos))
		s->pos++;
}

static inline bool scan_at_end(const struct scan *s)
{
	return s->pos == s->end;
}

/* True at the end of the text or of a field (blank or newline). */
static inline bool scan_at_delim(const struct scan *s)
{
	return s->pos == s->end || scan_is_blank(*s->pos) || *s->pos == '\n';
}

/* Splits off the next line (without its '\n'); false when none is left. */
static inline bool scan_line(struct scan *s, struct scan *line)
{
	const char *nl;

	if (s->pos >= s->end)
		return false;
	nl = memchr(s->pos, '\n', (size_t)(s->end - s->pos));
	line->pos = s->pos;
	line->end = nl ? nl : s->end;
	s->pos = nl ? nl + 1 : s->end;
	return true;
}

/* The next line with something on it, leading blanks skipped; false at the end. */
static inline bool scan_nonblank_line(struct scan *s, struct scan *line)
{
	while (scan_line(s, line)) {
		scan_blanks(line);
		if (!scan_at_end(line))
			return true;
	}
	return false;
}

/* Decimal digits right here; -EINVAL if there are none or too many. */
static inline int scan_digits(struct scan *s, uint64_t *out)
{
	const char *start = s->pos;
	uint64_t v = 0;

	while (s->pos < s->end && *s->pos >= '0' && *s->pos <= '9') {
		unsigned int d = (unsigned int)(*s->pos - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
		s->pos++;
	}
	if (s->pos == start)
		return -EINVAL;
	*out = v;
	return 0;
}

/* One whitespace-separated number field. */
static inline int scan_u64(struct scan *s, uint64_t *out)
{
	uint64_t v;
	int ret;

	scan_blanks(s);
	ret = scan_digits(s, &v);
	if (ret)
		return ret;
	if (!scan_at_delim(s))
		return -EINVAL;
	*out = v;
	return 0;
}

static inline int scan_u32(struct scan *s, uint32_t *out)
{
	uint64_t v;
	int ret = scan_u64(s, &v);

	if (ret)
		return ret;
	if (v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* A signed field that must fit in int32_t (pids, process groups). */
static inline int scan_i32(struct scan *s, int32_t *out)
{
	bool neg = false;
	uint64_t v;
	int ret;

	scan_blanks(s);
	if (s->pos < s->end && *s->pos == '-') {
		neg = true;
		s->pos++;
		/* "- 5" is not a number */
		if (s->pos < s->end && scan_is_blank(*s->pos))
			return -EINVAL;
	}
	ret = scan_u64(s, &v);
	if (ret)
		return ret;
	if (v > (uint64_t)INT32_MAX + neg)
		return -EINVAL;
	*out = neg ? (int32_t)(-(int64_t)v) : (int32_t)v;
	return 0;
}

/* Skips one field of anything but blanks and newlines. */
static inline int scan_skip_field(struct scan *s)
{
	const char *start;

	scan_blanks(s);
	start = s->pos;
	while (!scan_at_delim(s))
		s->pos++;
	return s->pos == start ? -EINVAL : 0;
}

/* "word" followed by a blank at the start of a line: moves past it. */
static inline bool scan_word(struct scan *line, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(line->end - line->pos) <= n || memcmp(line->pos, word, n) != 0 ||
	    !scan_is_blank(line->pos[n]))
		return false;
	line->pos += n;
	return true;
}

/* "Key:" at the start of a line: moves past the colon. */
static inline bool scan_key(struct scan *line, const char *key)
{
	size_t n = strlen(key);

	if ((size_t)(line->end - line->pos) <= n || memcmp(line->pos, key, n) != 0 ||
	    line->pos[n] != ':')
		return false;
	line->pos += n + 1;
	return true;
}

/* "   1234 kB" to the end of the line -> bytes; -EINVAL without the unit. */
static inline int scan_kb(struct scan *line, uint64_t *bytes)
{
	uint64_t kb;
	int ret = scan_u64(line, &kb);

	if (ret)
		return ret;
	scan_blanks(line);
	if (line->end - line->pos < 2 || memcmp(line->pos, "kB", 2) != 0)
		return -EINVAL;
	line->pos += 2;
	scan_blanks(line);
	if (line->pos != line->end || kb > UINT64_MAX / 1024)
		return -EINVAL;
	*bytes = kb * 1024;
	return 0;
}

/* Clock ticks to milliseconds, split so that ticks * 1000 cannot overflow. */
static inline uint64_t scan_ticks_to_ms(uint64_t ticks, long hz)
{
	uint64_t h = hz > 0 ? (uint64_t)hz : 100;

	return ticks / h * 1000 + ticks % h * 1000 / h;
}

/* ---- spans: a struct scan as one value ---- */

static inline size_t span_len(const struct scan *s)
{
	return (size_t)(s->end - s->pos);
}

static inline bool span_eq(const struct scan *s, const char *lit)
{
	size_t n = strlen(lit);

	return span_len(s) == n && memcmp(s->pos, lit, n) == 0;
}

static inline bool span_starts(const struct scan *s, const char *lit)
{
	size_t n = strlen(lit);

	return span_len(s) >= n && memcmp(s->pos, lit, n) == 0;
}

static inline bool span_ends(const struct scan *s, const char *lit)
{
	size_t n = strlen(lit);

	return span_len(s) >= n && memcmp(s->end - n, lit, n) == 0;
}

/*
 * Splits s at its first c: head gets what comes before it and s what
 * follows.  false when there is no c: then head gets all of s, and s is
 * left empty.
 */
static inline bool span_split(struct scan *s, char c, struct scan *head)
{
	const char *at = s->pos < s->end ? memchr(s->pos, c, span_len(s)) : NULL;

	head->pos = s->pos;
	head->end = at ? at : s->end;
	s->pos = at ? at + 1 : s->end;
	return at != NULL;
}

/* Copies the span as a string if it fits (with its NUL); false if not. */
static inline bool span_copy(char *dst, size_t size, const struct scan *s)
{
	size_t n = span_len(s);

	if (n >= size)
		return false;
	memcpy(dst, s->pos, n);
	dst[n] = '\0';
	return true;
}

/* Drops blanks and newlines at both ends: one-value files end with '\n'. */
static inline void span_trim(struct scan *s)
{
	while (s->pos < s->end && (scan_is_blank(*s->pos) || *s->pos == '\n'))
		s->pos++;
	while (s->end > s->pos && (scan_is_blank(s->end[-1]) || s->end[-1] == '\n'))
		s->end--;
}

/* The next field of a line: a run of anything but blanks (a line has no '\n'). */
static inline bool span_field(struct scan *line, struct scan *field)
{
	scan_blanks(line);
	field->pos = line->pos;
	while (!scan_at_delim(line))
		line->pos++;
	field->end = line->pos;
	return field->pos != field->end;
}

/*
 * The whole span is decimal digits (no sign, no blanks) that fit in 64
 * bits; *out is left alone when not.
 */
static inline bool span_u64(const struct scan *s, uint64_t *out)
{
	struct scan c = *s;
	uint64_t v;

	if (scan_digits(&c, &v) || !scan_at_end(&c))
		return false;
	*out = v;
	return true;
}

#endif
