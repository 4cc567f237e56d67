/*
 * reqparse.h - an HTTP/1.x request read from the bytes a connection sent:
 * its head judged and scanned (http_req_scan, nothing changed), split in
 * place for its handler (http_req_split), and a chunked body decoded in
 * place as it arrives (http_chunked_step).  No I/O and no allocation: the
 * server (http.c) owns the buffer, these only read and rewrite it.
 *
 * Errors: a refusal (status and message, http/front.h's struct) or a
 * negative return, as each function says.  Thread-safe: no state of its own.
 */
#ifndef JOBSCOPE_HTTP_REQPARSE_H
#define JOBSCOPE_HTTP_REQPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/front.h"

enum http_method { HTTP_METHOD_OTHER, HTTP_METHOD_GET, HTTP_METHOD_HEAD, HTTP_METHOD_POST };

/* What the server needs of a request's head before its body is in. */
struct http_req_info {
	enum http_method method;
	size_t head_len;	/* the empty lines before it, its lines and the blank line */
	int64_t content_length; /* -1: none */
	bool http10;		/* "HTTP/1.0": closed after the answer unless keep-alive */
	bool conn_close;	/* "Connection: close" */
	bool conn_keep_alive;	/* "Connection: keep-alive" */
	bool chunked;		/* "Transfer-Encoding: chunked" */
	bool expect_continue;	/* "Expect: 100-continue" */
};

/*
 * The head at the start of buf[0, len): HTTP_FRONT_MORE until it is all in,
 * HTTP_FRONT_REFUSE with why (front.h's judge, then: a Content-Length given
 * twice with two values, both Content-Length and Transfer-Encoding, a
 * transfer coding other than chunked), or HTTP_FRONT_PASS with *ri filled.
 */
enum http_front_verdict http_req_scan(const char *buf, size_t len, struct http_req_info *ri,
				      struct http_front_refusal *why);

/* A request's parts, pointing into its buffer, each NUL-ended there. */
struct http_req_fields {
	const char *method;
	const char *path;  /* percent-decoded ("%41" is "A"; a bad escape kept as it is) */
	const char *query; /* the raw text after '?', or NULL */
	size_t nheaders;
	const char *name[HTTP_FRONT_FIELDS_MAX];
	const char *value[HTTP_FRONT_FIELDS_MAX]; /* trimmed; a folded line joined by spaces */
};

/*
 * Splits the head buf[0, head_len) that http_req_scan passed, in place
 * (NULs written over separators): 0, or -EINVAL when its target is not a
 * path ("*", a path with "%00"; the caller answers 400).
 */
int http_req_split(char *buf, size_t head_len, struct http_req_fields *f);

/* The value of a header (case-insensitive name, the first given), or NULL. */
const char *http_req_header(const struct http_req_fields *f, const char *name);

/*
 * A chunked body, decoded in place: the data of each chunk moved down to
 * buf[out], from the raw bytes at buf[raw]; both start at the head's end.
 */
struct http_chunked {
	size_t raw, out;
	uint64_t left; /* bytes of the current chunk's data still to come */
	int phase;
};

void http_chunked_init(struct http_chunked *ch, size_t body_start);

/*
 * Goes on decoding buf[ch->raw, len).  1: the body is whole (buf[start,
 * ch->out), the next request at buf[ch->raw]); 0: more is needed;
 * -EINVAL: not chunked coding; -EFBIG: the data passes max_body bytes.
 */
int http_chunked_step(struct http_chunked *ch, char *buf, size_t len, size_t body_start,
		      size_t max_body);

#endif
