/*
 * client.h - one HTTP request to a head (the CLI's session, status and
 * clients commands), through libcurl.  The answer body is capped.
 * Errors: 0 (any HTTP status: see *status) or -errno with a message
 * (cannot connect, timeout).
 */
#ifndef JOBSCOPE_CLIENT_H
#define JOBSCOPE_CLIENT_H

#include "common/strbuf.h"

/* base "http://head:8091"; path "/profiling/start"; body NULL for GET. */
int http_client_request(const char *base, const char *path, const char *token,
			const char *body, struct strbuf *answer, long *status);

#endif
