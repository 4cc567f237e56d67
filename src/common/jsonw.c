/* jsonw.c - streaming JSON writer (see jsonw.h). */
#include "jsonw.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/decfmt.h"

void jsonw_init(struct jsonw *w, struct strbuf *out, bool pretty)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
	w->pretty = pretty;
}

int jsonw_error(const struct jsonw *w)
{
	return w->error;
}

static void put(struct jsonw *w, const char *s, size_t len)
{
	int ret;

	if (w->error)
		return;
	ret = strbuf_add(w->out, s, len);
	if (ret)
		w->error = ret;
}

static void puts_(struct jsonw *w, const char *s)
{
	put(w, s, strlen(s));
}

static void newline_indent(struct jsonw *w)
{
	static const char spaces[] = "\n" /* and two spaces a level, JSONW_MAX_DEPTH levels */
				     "                                "
				     "                                ";
	_Static_assert(sizeof(spaces) == 2 + 2 * JSONW_MAX_DEPTH, "a line's indent at most");

	if (!w->pretty)
		return;
	put(w, spaces, 1 + 2 * (size_t)w->depth); /* depth is at most JSONW_MAX_DEPTH */
}

/* Separator and indentation before a value or a key. */
static void before_value(struct jsonw *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (w->need_comma[w->depth])
		put(w, ",", 1);
	if (w->depth > 0)
		newline_indent(w);
	w->need_comma[w->depth] = true;
}

static void open_(struct jsonw *w, const char *c)
{
	before_value(w);
	if (w->depth >= JSONW_MAX_DEPTH) {
		if (!w->error)
			w->error = -E2BIG;
		return;
	}
	puts_(w, c);
	w->depth++;
	w->need_comma[w->depth] = false;
}

static void close_(struct jsonw *w, const char *c)
{
	bool had_items;

	if (w->depth == 0) {
		if (!w->error)
			w->error = -EINVAL;
		return;
	}
	had_items = w->need_comma[w->depth];
	w->depth--;
	if (had_items)
		newline_indent(w);
	puts_(w, c);
}

void jsonw_obj_begin(struct jsonw *w)
{
	open_(w, "{");
}

void jsonw_obj_end(struct jsonw *w)
{
	close_(w, "}");
}

void jsonw_arr_begin(struct jsonw *w)
{
	open_(w, "[");
}

void jsonw_arr_end(struct jsonw *w)
{
	close_(w, "]");
}

/* Length of a valid UTF-8 sequence at s (max n bytes), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* The escape of a byte JSON does not take as it is: NULL for one it does. */
static const char *escape_of(unsigned char c, char esc[8])
{
	switch (c) {
	case '"':
		return "\\\"";
	case '\\':
		return "\\\\";
	case '\n':
		return "\\n";
	case '\r':
		return "\\r";
	case '\t':
		return "\\t";
	default:
		break;
	}
	if (c < 0x20 || c == 0x7f) {
		snprintf(esc, 8, "\\u%04x", c);
		return esc;
	}
	return NULL;
}

/*
 * s quoted: each run of bytes that go as they are (printable ASCII, valid
 * UTF-8) put in one piece; escapes and U+FFFD for a byte that is not
 * UTF-8 between them.
 */
static void put_string(struct jsonw *w, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0;

	put(w, "\"", 1);
	while (i < n) {
		unsigned char c = p[i];
		const char *esc;
		char buf[8];
		size_t len;

		if (c >= 0x80) {
			len = utf8_len(p + i, n - i);
			if (len) {
				i += len;
				continue;
			}
			esc = "\xef\xbf\xbd"; /* U+FFFD */
		} else {
			esc = escape_of(c, buf);
			if (!esc) {
				i++;
				continue;
			}
		}
		put(w, s + run, i - run);
		put(w, esc, strlen(esc));
		run = ++i;
	}
	put(w, s + run, n - run);
	put(w, "\"", 1);
}

void jsonw_key(struct jsonw *w, const char *key)
{
	before_value(w);
	put_string(w, key, strlen(key));
	put(w, w->pretty ? ": " : ":", w->pretty ? 2 : 1);
	w->after_key = true;
}

void jsonw_strn(struct jsonw *w, const char *s, size_t len)
{
	before_value(w);
	put_string(w, s, len);
}

void jsonw_str(struct jsonw *w, const char *s)
{
	jsonw_strn(w, s, strlen(s));
}

void jsonw_int(struct jsonw *w, int64_t v)
{
	char buf[32];

	before_value(w);
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	puts_(w, buf);
}

void jsonw_uint(struct jsonw *w, uint64_t v)
{
	char buf[32];

	before_value(w);
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	puts_(w, buf);
}

void jsonw_double(struct jsonw *w, double v, int decimals)
{
	char buf[400]; /* "%.9f" of the largest double: 319 bytes */

	if (!isfinite(v)) {
		jsonw_null(w);
		return;
	}
	before_value(w);
	if (decimals < 0)
		decimals = 0;
	if (decimals > 9)
		decimals = 9;
	dec_fixed(buf, sizeof(buf), v, decimals); /* printf's "%.*f", without its cost */
	/* "-0.000" reads oddly in a report */
	if (buf[0] == '-' && strspn(buf + 1, "0.") == strlen(buf + 1))
		memmove(buf, buf + 1, strlen(buf));
	puts_(w, buf);
}

void jsonw_bool(struct jsonw *w, bool v)
{
	before_value(w);
	puts_(w, v ? "true" : "false");
}

void jsonw_null(struct jsonw *w)
{
	before_value(w);
	puts_(w, "null");
}

void jsonw_raw(struct jsonw *w, const char *json, size_t len)
{
	before_value(w);
	if (!w->error)
		w->error = strbuf_add(w->out, json, len);
}

void jsonw_kv_str(struct jsonw *w, const char *key, const char *s)
{
	jsonw_key(w, key);
	jsonw_str(w, s);
}

void jsonw_kv_int(struct jsonw *w, const char *key, int64_t v)
{
	jsonw_key(w, key);
	jsonw_int(w, v);
}

void jsonw_kv_double(struct jsonw *w, const char *key, double v, int decimals)
{
	jsonw_key(w, key);
	jsonw_double(w, v, decimals);
}

void jsonw_kv_bool(struct jsonw *w, const char *key, bool v)
{
	jsonw_key(w, key);
	jsonw_bool(w, v);
}

void jsonw_kv_null(struct jsonw *w, const char *key)
{
	jsonw_key(w, key);
	jsonw_null(w);
}

void jsonw_kv_int_opt(struct jsonw *w, const char *key, bool valid, int64_t v)
{
	jsonw_key(w, key);
	if (valid)
		jsonw_int(w, v);
	else
		jsonw_null(w);
}

void jsonw_kv_double_opt(struct jsonw *w, const char *key, bool valid, double v, int decimals)
{
	jsonw_key(w, key);
	if (valid)
		jsonw_double(w, v, decimals);
	else
		jsonw_null(w);
}

void jsonw_kv_str_opt(struct jsonw *w, const char *key, const char *s)
{
	jsonw_key(w, key);
	if (s)
		jsonw_str(w, s);
	else
		jsonw_null(w);
}
