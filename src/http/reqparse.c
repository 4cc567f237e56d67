/*
 * reqparse.c - a request's head scanned (the fields the server acts on),
 * split in place for its handler, and a chunked body decoded in place.
 */
#include "http/reqparse.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "http/urlquery.h"

/* ---- scanning ---- */

/* Whether the comma-separated list [v, v + n) holds tok (case-insensitive). */
static bool list_has(const char *v, size_t n, const char *tok)
{
	size_t tn = strlen(tok);

	while (n) {
		const char *comma = memchr(v, ',', n);
		size_t part = comma ? (size_t)(comma - v) : n;
		const char *p = v;
		size_t pn = part;

		http_trim(&p, &pn);
		if (pn == tn && strncasecmp(p, tok, tn) == 0)
			return true;
		if (!comma)
			break;
		v += part + 1;
		n -= part + 1;
	}
	return false;
}

static bool name_is(const char *line, size_t n, const char *name)
{
	return strlen(name) == n && strncasecmp(line, name, n) == 0;
}

static enum http_front_verdict scan_refuse(struct http_front_refusal *why, int status,
					   const char *msg)
{
	why->status = status;
	why->msg = msg;
	return HTTP_FRONT_REFUSE;
}

/* One header line's effect on *ri; false with why when it makes the request one we refuse. */
static bool scan_field(const char *line, size_t n, struct http_req_info *ri,
		       struct http_front_refusal *why)
{
	const char *colon = memchr(line, ':', n), *v;
	size_t name_n, vn;

	if (!colon) /* a folded line: the judge let it through, nothing here acts on it */
		return true;
	name_n = (size_t)(colon - line);
	v = colon + 1;
	vn = n - name_n - 1;
	http_trim(&v, &vn);
	if (name_is(line, name_n, "Content-Length")) {
		uint64_t len = 0;

		for (size_t i = 0; i < vn; i++)
			len = len * 10 + (uint64_t)(v[i] - '0'); /* digits that fit: the judge's */
		if (len > INT64_MAX) {
			scan_refuse(why, 413, "request body too large");
			return false;
		}
		if (ri->content_length >= 0 && (uint64_t)ri->content_length != len) {
			scan_refuse(why, 400, "two different Content-Length values");
			return false;
		}
		ri->content_length = (int64_t)len;
	} else if (name_is(line, name_n, "Transfer-Encoding")) {
		if (!(vn == 7 && strncasecmp(v, "chunked", 7) == 0)) {
			scan_refuse(why, 501, "only the chunked transfer coding is served");
			return false;
		}
		ri->chunked = true;
	} else if (name_is(line, name_n, "Connection")) {
		ri->conn_close |= list_has(v, vn, "close");
		ri->conn_keep_alive |= list_has(v, vn, "keep-alive");
	} else if (name_is(line, name_n, "Expect")) {
		ri->expect_continue |= vn == 12 && strncasecmp(v, "100-continue", 12) == 0;
	}
	return true;
}

enum http_front_verdict http_req_scan(const char *buf, size_t len, struct http_req_info *ri,
				      struct http_front_refusal *why)
{
	const char *p = buf, *end = buf + len, *next = end;
	enum http_front_verdict v;
	long n;

	v = http_front_judge(buf, len < HTTP_FRONT_HEAD_MAX ? len : HTTP_FRONT_HEAD_MAX, why);
	if (v != HTTP_FRONT_PASS)
		return v;
	memset(ri, 0, sizeof(*ri));
	ri->content_length = -1;
	while (*p == '\r' || *p == '\n')
		p++;
	/* the judge passed a whole head: every line below has its LF */
	n = http_line(p, end, &next);
	if (memcmp(p, "GET ", 4) == 0)
		ri->method = HTTP_METHOD_GET;
	else if (memcmp(p, "HEAD ", 5) == 0)
		ri->method = HTTP_METHOD_HEAD;
	else if (memcmp(p, "POST ", 5) == 0)
		ri->method = HTTP_METHOD_POST;
	ri->http10 = memcmp(p + n - 3, "1.0", 3) == 0;
	for (p = next; (n = http_line(p, end, &next)) > 0; p = next)
		if (!scan_field(p, (size_t)n, ri, why))
			return HTTP_FRONT_REFUSE;
	ri->head_len = (size_t)(next - buf);
	if (ri->chunked && ri->content_length >= 0)
		return scan_refuse(why, 400, "both Content-Length and Transfer-Encoding");
	return HTTP_FRONT_PASS;
}

/* ---- splitting ---- */

/* Percent-decodes s in place (a bad escape kept as it is); -EINVAL for "%00". */
static int path_decode(char *s)
{
	char *o = s;

	for (char *p = s; *p; p++) {
		int hi, lo;

		if (*p == '%' && (hi = url_hex_value(p[1])) >= 0 &&
		    (lo = url_hex_value(p[2])) >= 0) {
			if (hi == 0 && lo == 0)
				return -EINVAL;
			*o++ = (char)(hi << 4 | lo);
			p += 2;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return 0;
}

/* The target's path: origin form "/p?q", or absolute form "http://host/p?q" (its path). */
static char *target_path(char *t)
{
	static char root[] = ""; /* read as "/" by the caller, never written */
	char *slash;

	if (t[0] == '/')
		return t;
	if (strncasecmp(t, "http://", 7) && strncasecmp(t, "https://", 8))
		return NULL;
	/* past the authority: "/p?q", or "?q" (the path "": its '?' is cut below), or nothing */
	slash = strstr(t, "//") + 2;
	slash += strcspn(slash, "/?");
	return *slash ? slash : root;
}

int http_req_split(char *buf, size_t head_len, struct http_req_fields *f)
{
	char *p = buf, *end = buf + head_len, *sp, *q, *path;
	const char *next = end;
	long n;

	memset(f, 0, sizeof(*f));
	while (*p == '\r' || *p == '\n')
		p++;
	n = http_line(p, end, &next);
	p[n] = '\0';
	sp = strchr(p, ' ');
	*sp = '\0';
	f->method = p;
	p = sp + 1;
	sp = strrchr(p, ' '); /* before "HTTP/1.x" */
	*sp = '\0';
	path = target_path(p);
	if (!path)
		return -EINVAL;
	q = strchr(path, '?');
	if (q) {
		*q = '\0';
		f->query = q + 1;
	}
	if (path[0] && path_decode(path))
		return -EINVAL;
	f->path = path[0] ? path : "/";
	for (p = (char *)next; (n = http_line(p, end, &next)) > 0; p = (char *)next) {
		char *colon, *v, *ve;

		if (p[0] == ' ' || p[0] == '\t') {
			/* a folded line: the previous value goes on, joined with spaces */
			if (f->nheaders) {
				char *prev_end = (char *)f->value[f->nheaders - 1];

				prev_end += strlen(prev_end);
				memset(prev_end, ' ', (size_t)(p - prev_end));
				ve = p + n;
				while (ve > f->value[f->nheaders - 1] &&
				       (ve[-1] == ' ' || ve[-1] == '\t'))
					ve--;
				*ve = '\0';
			}
			continue;
		}
		colon = memchr(p, ':', (size_t)n);
		*colon = '\0';
		v = colon + 1;
		ve = p + n;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		*ve = '\0';
		if (f->nheaders < HTTP_FRONT_FIELDS_MAX) {
			f->name[f->nheaders] = p;
			f->value[f->nheaders++] = v;
		}
	}
	return 0;
}

const char *http_req_header(const struct http_req_fields *f, const char *name)
{
	for (size_t i = 0; i < f->nheaders; i++)
		if (strcasecmp(f->name[i], name) == 0)
			return f->value[i];
	return NULL;
}

/* ---- chunked bodies ---- */

enum { CH_SIZE, CH_DATA, CH_DATA_END, CH_TRAILER, CH_DONE };

#define CH_LINE_MAX 4096 /* a chunk-size line (with extensions) or a trailer line */

void http_chunked_init(struct http_chunked *ch, size_t body_start)
{
	memset(ch, 0, sizeof(*ch));
	ch->raw = ch->out = body_start;
	ch->phase = CH_SIZE;
}

/* A chunk-size line "1a;ext=x": its size, or -EINVAL. */
static int chunk_size(const char *p, long n, uint64_t *size)
{
	long i = 0;

	*size = 0;
	for (; i < n && url_hex_value(p[i]) >= 0; i++) {
		if (*size >> 60)
			return -EINVAL;
		*size = *size << 4 | (uint64_t)url_hex_value(p[i]);
	}
	if (i == 0)
		return -EINVAL;
	while (i < n && (p[i] == ' ' || p[i] == '\t'))
		i++;
	return i == n || p[i] == ';' ? 0 : -EINVAL;
}

int http_chunked_step(struct http_chunked *ch, char *buf, size_t len, size_t body_start,
		      size_t max_body)
{
	const char *end = buf + len, *next = end;
	long n;

	while (ch->phase != CH_DONE) {
		char *p = buf + ch->raw;

		if (ch->phase == CH_DATA) {
			size_t have = len - ch->raw,
			       take = have < ch->left ? have : (size_t)ch->left;

			if (take == 0)
				return 0;
			memmove(buf + ch->out, p, take);
			ch->out += take;
			ch->raw += take;
			ch->left -= take;
			if (ch->left == 0)
				ch->phase = CH_DATA_END;
			continue;
		}
		n = http_line(p, end, &next);
		if (n < 0)
			return len - ch->raw > CH_LINE_MAX ? -EINVAL : 0;
		if (n > CH_LINE_MAX)
			return -EINVAL;
		ch->raw = (size_t)(next - buf);
		switch (ch->phase) {
		case CH_SIZE:
			if (chunk_size(p, n, &ch->left))
				return -EINVAL;
			if (ch->left > max_body || ch->out - body_start > max_body - ch->left)
				return -EFBIG;
			ch->phase = ch->left ? CH_DATA : CH_TRAILER;
			break;
		case CH_DATA_END:
			if (n != 0)
				return -EINVAL;
			ch->phase = CH_SIZE;
			break;
		default: /* CH_TRAILER: fields after the last chunk, read and dropped */
			if (n == 0)
				ch->phase = CH_DONE;
			break;
		}
	}
	return 1;
}
