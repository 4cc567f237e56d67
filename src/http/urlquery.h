/*
 * urlquery.h - a URL query string ("a=1&b=x%20y") parsed into name/value
 * pairs, percent-decoded ('+' as a space), in fixed storage.
 *
 * Every request's arguments are read through this: a client's and the
 * server's own (an event stream re-asking a path, http.h).  No
 * allocation: a query longer than URL_QUERY_MAX bytes, with more than
 * URL_QUERY_ARGS pairs, a bad escape ("%zz", "%4") or a decoded NUL is
 * refused with -EINVAL and leaves q empty.
 */
#ifndef JOBSCOPE_URLQUERY_H
#define JOBSCOPE_URLQUERY_H

#include <stddef.h>

#define URL_QUERY_MAX  8192 /* a request head's (HTTP_FRONT_HEAD_MAX) whole */
#define URL_QUERY_ARGS 64

struct url_query {
	size_t n;
	const char *name[URL_QUERY_ARGS];
	const char *value[URL_QUERY_ARGS];	      /* "" for "a" and "a=" */
	char buf[URL_QUERY_MAX + 2 * URL_QUERY_ARGS]; /* each part decoded, NUL-ended */
};

/* query: the text after '?' (may be NULL or ""). 0 or -EINVAL. */
int url_query_parse(const char *query, struct url_query *q);
/* A hex digit's value (either case), or -1. */
int url_hex_value(char c);
/* The first value of name, or NULL. */
const char *url_query_get(const struct url_query *q, const char *name);

#endif
