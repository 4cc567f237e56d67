/*
 * urlquery.c - a query string split at '&' and '=', each part
 * percent-decoded into the struct's own buffer.
 */
#include "http/urlquery.h"

#include <errno.h>
#include <string.h>

int url_hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes src[0..len) to out (room checked by the caller: never longer); -EINVAL on a bad escape or
 * a NUL. */
static int decode(const char *src, size_t len, char *out)
{
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		char c = src[i];

		if (c == '+') {
			c = ' ';
		} else if (c == '%') {
			int hi, lo;

			if (i + 2 >= len)
				return -EINVAL;
			hi = url_hex_value(src[i + 1]);
			lo = url_hex_value(src[i + 2]);
			if (hi < 0 || lo < 0)
				return -EINVAL;
			c = (char)(hi << 4 | lo);
			i += 2;
		}
		if (c == '\0')
			return -EINVAL;
		out[o++] = c;
	}
	out[o] = '\0';
	return (int)o;
}

int url_query_parse(const char *query, struct url_query *q)
{
	size_t len, used = 0;
	const char *p, *end;

	q->n = 0;
	if (!query || !*query)
		return 0;
	len = strlen(query);
	if (len > URL_QUERY_MAX)
		return -EINVAL;
	end = query + len;
	for (p = query; p < end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *stop = amp ? amp : end;
		const char *eq = memchr(p, '=', (size_t)(stop - p));
		const char *name_end = eq ? eq : stop;
		int n;

		if (stop == p) { /* "a=1&&b=2": an empty pair is skipped */
			p = stop + 1;
			continue;
		}
		if (q->n == URL_QUERY_ARGS)
			goto bad;
		/* name and value each decode to at most their length plus a NUL */
		q->name[q->n] = q->buf + used;
		n = decode(p, (size_t)(name_end - p), q->buf + used);
		if (n < 0)
			goto bad;
		used += (size_t)n + 1;
		q->value[q->n] = q->buf + used;
		n = eq ? decode(eq + 1, (size_t)(stop - eq - 1), q->buf + used)
		       : decode("", 0, q->buf + used);
		if (n < 0)
			goto bad;
		used += (size_t)n + 1;
		q->n++;
		p = amp ? amp + 1 : end;
	}
	return 0;
bad:
	q->n = 0;
	return -EINVAL;
}

const char *url_query_get(const struct url_query *q, const char *name)
{
	for (size_t i = 0; i < q->n; i++)
		if (strcmp(q->name[i], name) == 0)
			return q->value[i];
	return NULL;
}
