/*
 * http.h - a small HTTP/1.1 server on libmicrohttpd for the agent's (and
 * later the head's) endpoints.
 *
 * One internal thread answers every connection; a route's handler runs on
 * it, so handlers must be quick and must lock what they share with the
 * sampler.  GET and HEAD always; POST only on a server started with a body
 * cap (http_start_opts), bodies above it refused with 413 before a byte of
 * them is read; any other method 405.
 *
 * Ownership: http_start() returns a server the caller stops with
 * http_stop().  Errors: 0 or -errno, with a message (log.h).
 */
#ifndef JOBSCOPE_HTTP_H
#define JOBSCOPE_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

#define HTTP_MAX_BODY (1024 * 1024)

struct http_request {
	const char *method; /* "GET", "HEAD", "POST" */
	const char *path;   /* "/api/v1/jobs/slurm:5:1732270000123", no query */
	void *conn;	    /* for http_query_arg, http_header */
	const char *body;   /* POST: the whole body (not NUL-terminated), at most the cap */
	size_t body_len;
};

struct http_response {
	int status;
	const char *content_type;
	struct strbuf body;
};

/* A request header's value, or NULL. */
const char *http_header(const struct http_request *req, const char *name);
/* The value of ?name= in the request's query string, or NULL. */
const char *http_query_arg(const struct http_request *req, const char *name);

/*
 * A handler fills res (status defaults to 200, content type to JSON) and
 * returns 0; any error is the handler's to turn into a status.
 */
typedef void (*http_handler_fn)(void *arg, const struct http_request *req,
				struct http_response *res);

struct http_server;

/*
 * listen: "ADDR:PORT" ("127.0.0.1:9464", "[::1]:9464", ":9464" for every
 * address; port 0 picks a free port).  *out receives the server.
 */
int http_start(const char *listen, http_handler_fn fn, void *arg, struct http_server **out);
struct http_options {
	size_t max_body;	  /* POST bodies up to this (larger: 413, unread); 0: GET only */
	const char *tls_cert_pem; /* both set: HTTPS only (GnuTLS through libmicrohttpd) */
	const char *tls_key_pem;
};
int http_start_opts(const char *listen, const struct http_options *o, http_handler_fn fn,
		    void *arg, struct http_server **out);
/* The port actually bound. */
uint16_t http_port(const struct http_server *s);
void http_stop(struct http_server *s);

/* "ADDR:PORT" -> a socket address; -EINVAL when it is not one. */
struct sockaddr_storage;
int http_parse_listen(const char *listen, struct sockaddr_storage *sa, unsigned *salen);

/* A JSON error body {"error": msg} with that status. */
void http_error(struct http_response *res, int status, const char *msg);

#endif
