/*
 * front.h - the HTTP server's front door (http.c's, not for other modules).
 *
 * libmicrohttpd 0.9.75 answers the requests it cannot parse itself, before
 * any callback of ours: with built-in HTML bodies, the status line and
 * headers twice for a bad Content-Length, and holds bytes that have no line
 * end until its timeout.  So the server accepts its connections itself and
 * holds each until the head of its first request is in; the head is judged
 * here (http_front_judge, no I/O) and the connection either handed to
 * libmicrohttpd (MHD_add_connection, the peeked bytes still unread) or
 * answered with one JSON error and closed.  Later requests of a keep-alive
 * connection, and every request over TLS, meet libmicrohttpd's own checks.
 *
 * Ownership: http_front_start() takes the listening socket; http_front_stop()
 * closes it and every connection not yet handed over.  Errors: 0 or -errno.
 * One thread of its own, started by http_front_start().
 */
#ifndef JOBSCOPE_HTTP_FRONT_H
#define JOBSCOPE_HTTP_FRONT_H

#include <stddef.h>
#include <sys/socket.h>

/* a first request's head, bytes (libmicrohttpd's pool, HTTP_CONN_MEMORY, holds twice that) */
#define HTTP_FRONT_HEAD_MAX   8192
#define HTTP_FRONT_FIELDS_MAX 64 /* header lines */
#define HTTP_FRONT_METHOD_MAX 16

enum http_front_verdict {
	HTTP_FRONT_MORE,   /* a request's head so far: wait for more */
	HTTP_FRONT_PASS,   /* a whole head that libmicrohttpd will take */
	HTTP_FRONT_REFUSE, /* not a request we serve: answer status, msg and close */
};

struct http_front_refusal {
	int status;
	const char *msg;
};

/* Judges the first len bytes a connection sent (at most HTTP_FRONT_HEAD_MAX). */
enum http_front_verdict http_front_judge(const char *buf, size_t len,
					 struct http_front_refusal *why);

/* The bytes of a JSON error answer (the API's {"error", "status"}) into out; its length. */
size_t http_front_answer(char *out, size_t max, int status, const char *msg);

struct MHD_Daemon;
struct http_front;

struct http_front_opts {
	unsigned max_conns;	   /* held at once */
	unsigned max_conns_per_ip; /* 0: no cap */
	unsigned timeout_ms;	   /* a head not in by then: closed */
};

int http_front_start(int listen_fd, struct MHD_Daemon *d, const struct http_front_opts *o,
		     struct http_front **out);
void http_front_stop(struct http_front *f);

#endif
