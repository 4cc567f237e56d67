/*
 * client.h - requests to a head (the CLI's session, status, clients,
 * report and export commands), through libcurl.  Answers are capped by
 * the strbuf the caller gives.
 * Errors: 0 (any HTTP status: see *status) or -errno with a message
 * (cannot connect, timeout, an answer past the cap).  Not thread-safe
 * before curl_global_init (the CLI runs one request at a time).
 */
#ifndef JOBSCOPE_CLIENT_H
#define JOBSCOPE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"

/* base "http://head:8091"; path "/profiling/start"; body NULL for GET. */
int http_client_request(const char *base, const char *path, const char *token, const char *body,
			struct strbuf *answer, long *status);

/*
 * A session's export from the head at base: GET
 * /api/v1/sessions/NAME/export?format=F (F: "json", "csv", "text" or "gswarm", the
 * bytes `jobscope export --db` or `jobscope report --session` print) into
 * out, which holds nothing else on success and is left empty otherwise.
 * 0, or -errno after a message that says what to do:
 *   -EINVAL   name is not a session's name (nothing is asked)
 *   -EIO      the head cannot be reached, or answered an error of its own
 *   -EACCES   it wants a token (401), -EPERM: not this one (403)
 *   -ENOENT   it has no session of that name (404)
 *   -EPROTO   what answered is not a jobscope head's export (a proxy's
 *             page, another server): wrong type or shape
 *   -E2BIG    the answer is larger than out's cap
 */
int http_client_session_export(const char *base, const char *token, const char *name,
			       const char *format, struct strbuf *out);

/*
 * GET path with the query "?name=value&..." of the pairs whose value is
 * not NULL (names[i], values[i]; values percent-encoded), into answer: a
 * head's /api/v1/report.  0 for a 200; -ENOENT (404, 400) or -EIO after a
 * message with the head's answer; or http_client_request's errors.
 */
int http_client_get_query(const char *base, const char *path, const char *token,
			  const char *const *names, const char *const *values, size_t n,
			  struct strbuf *answer);

/*
 * The "error" of a head's JSON error body ({"error": "...", "status": N})
 * into msg, control characters as spaces; false (msg "") when body is not
 * one.  Any bytes are safe (fuzzed: tests/fuzz/fuzz_client.c).
 */
bool http_client_error_text(const char *body, size_t len, char *msg, size_t size);

#endif
