/*
 * http.h - a small HTTP/1.1 server of our own for the agent's and the
 * head's endpoints, with route tables (struct http_route).
 *
 * Worker threads (one by default, more with http_options.threads) each
 * poll their connections with an epoll of their own; a connection stays
 * with one worker, and a route's handler runs on it, so handlers must be
 * quick and must lock what they share.  Requests of a connection are
 * answered in the order they came (pipelining); bodies with
 * Content-Length or chunked; "Expect: 100-continue" answered; HTTP/1.0
 * kept alive only when it asks.  A handler that
 * waits for something (the head's group commit) defers its answer
 * (http_defer): its thread goes on with other connections, and the answer
 * is sent when another thread completes it.  GET and HEAD always; POST
 * only on a server started with a body cap (http_start_opts), bodies above
 * it refused with 413 before a byte of them is read; any other method 405.
 *
 * Connections: at most max_conns (beyond it, refused at accept), at most
 * max_conns_per_ip from one address; one whose request headers have not
 * come within header_timeout_s of its last byte is closed, and an idle
 * keep-alive connection after idle_timeout_s.
 *
 * Ownership: http_start() returns a server the caller stops with
 * http_stop().  Errors: 0 or -errno, with a message (log.h).
 */
#ifndef JOBSCOPE_HTTP_H
#define JOBSCOPE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

#define HTTP_MAX_BODY (1024 * 1024)

struct http_request {
	const char *method; /* "GET", "HEAD", "POST" */
	const char *path;   /* "/api/v1/jobs/slurm:5:1732270000123", no query */
	void *conn;	  /* for http_query_arg, http_header; NULL: the server's own (http_watch) */
	const char *body; /* POST: the whole body (not NUL-terminated), at most the cap */
	size_t body_len;
	void *priv; /* http.c's, for http_defer */
};

#define HTTP_MAX_HEADERS 4
struct http_response {
	int status;
	const char *content_type;
	struct strbuf body;
	/* more headers (static strings: sent as they are), see http_add_header */
	struct {
		const char *name, *value;
	} headers[HTTP_MAX_HEADERS];
};

/* Adds a header to the answer (name and value must outlive it); -ENOSPC when full. */
int http_add_header(struct http_response *res, const char *name, const char *value);

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
	const char *tls_cert_pem; /* both set: HTTPS only (GnuTLS, loaded then: tls.h) */
	const char *tls_key_pem;
	unsigned threads;	   /* polling threads; 0: 1 */
	unsigned max_conns;	   /* 0: HTTP_DEFAULT_CONNS */
	unsigned max_conns_per_ip; /* 0: no cap by address */
	unsigned header_timeout_s; /* 0: HTTP_DEFAULT_HEADER_TIMEOUT_S */
	unsigned idle_timeout_s;   /* 0: HTTP_DEFAULT_IDLE_TIMEOUT_S */
	unsigned max_streams;	   /* event streams at once (http_watch); 0: HTTP_DEFAULT_STREAMS */
	unsigned
	    watch_interval_ms; /* how often a stream's paths are asked; 0: HTTP_DEFAULT_WATCH_MS */
};
#define HTTP_DEFAULT_STREAMS	      32
#define HTTP_DEFAULT_WATCH_MS	      1000
#define HTTP_WATCH_PING_MS	      15000
#define HTTP_WATCH_PATHS	      4
#define HTTP_WATCH_PATH_MAX	      512
#define HTTP_DEFAULT_CONNS	      256
#define HTTP_DEFAULT_HEADER_TIMEOUT_S 10
#define HTTP_DEFAULT_IDLE_TIMEOUT_S   30

/*
 * A deferred answer.  A handler calls http_defer(req) and returns without
 * filling res; later any thread fills http_pending_response(p) (status,
 * content type, body, as a handler would) and calls http_pending_done(p)
 * once, after which p is gone.  Every deferred answer must be done before
 * http_stop.
 */
struct http_pending;

/*
 * Server-sent events (text/event-stream).  A GET handler calls
 * http_watch(req, paths, events, n) instead of filling res: the answer
 * becomes a stream, and every watch interval the server asks its own
 * handler for GET paths[i] (a path with an optional "?query", re-asked with
 * this request's Authorization header, so access is checked each time) and
 * sends the body as an event named events[i] whenever it (or its status)
 * changed since the last one sent; the first at once.  An answer with
 * another status than 200 goes out as an event named "error" (its body as
 * it is: the API's {"error", "status"}).  A comment
 * line every HTTP_WATCH_PING_MS keeps proxies from closing it and finds a
 * client that went away (the write fails, the stream is freed).
 *
 * The paths are asked on the server's own threads, as requests are (a
 * handler so asked sees conn == NULL; it must not defer).  No thread waits
 * on a stream: between events its connection is suspended.  At most max_streams at once: beyond,
 * 503.  Streams end at http_stop.  Returns 0, or -EINVAL (a path too long, n out of range) /
 * -ENOMEM; on an error res is untouched and the handler answers.
 */
int http_watch(const struct http_request *req, const char *const *paths, const char *const *events,
	       size_t n);
struct http_pending *http_defer(const struct http_request *req);
struct http_response *http_pending_response(struct http_pending *p);
void http_pending_done(struct http_pending *p);
int http_start_opts(const char *listen, const struct http_options *o, http_handler_fn fn, void *arg,
		    struct http_server **out);
/* The port actually bound. */
uint16_t http_port(const struct http_server *s);
void http_stop(struct http_server *s);

/* "ADDR:PORT" -> a socket address; -EINVAL when it is not one. */
struct sockaddr_storage;
int http_parse_listen(const char *listen, struct sockaddr_storage *sa, unsigned *salen);

/*
 * Route tables: a server's endpoints as data, one row each, with the access
 * the route needs.  The server's owner checks the access before it calls
 * the handler (the head's auth.c); the agent's routes are all public.  A
 * table ends with a row whose path is NULL.
 */
enum http_access {
	HTTP_ACCESS_PUBLIC, /* anyone ("anonymous") */
	HTTP_ACCESS_USER,   /* any known caller; a user sees their own jobs */
	HTTP_ACCESS_READER, /* every user's data: the read or admin token, an admin */
	HTTP_ACCESS_INGEST, /* an agent's token ("agent") */
	HTTP_ACCESS_ADMIN,  /* an admin: the admin token (else the agents'), --admins */
	HTTP_ACCESS_OWNER,  /* a user, on what they own (their sessions); an admin */
};
struct http_route {
	const char *method; /* "GET" (also answers HEAD) or "POST" */
	const char *path;   /* the whole path; with prefix, what the path starts with */
	bool prefix;	    /* the path goes on past it (at least one more byte) */
	enum http_access access;
	http_handler_fn fn; /* arg: the context the owner passes to http_route_call */
};
/*
 * The route of req in table: NULL with *status 404 when no route has its
 * path, 405 when one has it for another method.  The first match wins.
 */
const struct http_route *http_route_find(const struct http_route *table,
					 const struct http_request *req, int *status);
/* The access's name in docs/http-api.md: anonymous, user, reader, agent, admin, owner. */
const char *http_access_name(enum http_access a);

/*
 * The caller of a request, as its server's owner established it (an
 * opaque text of at most HTTP_PRINCIPAL_MAX - 1 bytes, http/access.h's):
 * set once per request, and carried by an event stream to each of its
 * re-asks, whose requests have it from the start.  NULL: not set.
 */
#define HTTP_PRINCIPAL_MAX 128
const char *http_principal(const struct http_request *req);
int http_set_principal(const struct http_request *req, const char *principal);
/* The address a request came from; -ENOENT for the server's own requests. */
int http_peer(const struct http_request *req, struct sockaddr_storage *sa);

/* A JSON error body {"error": msg} with that status. */
void http_error(struct http_response *res, int status, const char *msg);

#endif
