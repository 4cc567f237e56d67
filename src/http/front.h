/*
 * front.h - the HTTP server's front door (http.c's, not for other modules).
 *
 * One thread accepts every connection and holds it until the head of its
 * first request is in: a connection that never sends one (a port scan, a
 * slow client) costs the server's threads nothing.  The head is judged
 * here (http_front_judge, no I/O: the server judges every later request
 * with it too) and the connection either handed to the server (the peeked
 * bytes still unread) or answered with one JSON error and closed.  Over
 * TLS nothing can be judged before the handshake: each connection is
 * handed over as it is accepted.
 *
 * The door also keeps the table of every connection, held or handed over,
 * so that the caps on connections at once and from one address count them
 * all: the server gives a slot back with http_front_release when it closes
 * the connection (from any thread).
 *
 * Ownership: http_front_start() takes the listening socket;
 * http_front_stop() ends the accepting thread (no more handovers, slots
 * may still be released), http_front_free() closes the listening socket
 * and every connection still held.  Errors: 0 or -errno.
 */
#ifndef JOBSCOPE_HTTP_FRONT_H
#define JOBSCOPE_HTTP_FRONT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* a request's head, bytes */
#define HTTP_FRONT_HEAD_MAX   8192
#define HTTP_FRONT_FIELDS_MAX 64 /* header lines */
#define HTTP_FRONT_METHOD_MAX 16

enum http_front_verdict {
	HTTP_FRONT_MORE,   /* a request's head so far: wait for more */
	HTTP_FRONT_PASS,   /* a whole head the server takes */
	HTTP_FRONT_REFUSE, /* not a request we serve: answer status, msg and close */
};

struct http_front_refusal {
	int status;
	const char *msg;
};

/* Judges the first len bytes a connection sent (at most HTTP_FRONT_HEAD_MAX). */
enum http_front_verdict http_front_judge(const char *buf, size_t len,
					 struct http_front_refusal *why);

/*
 * The line at p, up to end: its length without its CR (a bare LF ends a
 * line too), *next set past its LF; -1, *next untouched, when no LF is in.
 */
long http_line(const char *p, const char *end, const char **next);
/* [*v, *v + *n) without the spaces and tabs around it. */
void http_trim(const char **v, size_t *n);

/* The reason phrase of a status ("Not Found"); "Unknown" for one not listed. */
const char *http_reason(int status);

/* The bytes of a JSON error answer (the API's {"error", "status"}) into out; its length. */
size_t http_front_answer(char *out, size_t max, int status, const char *msg);

struct http_front;

/* Takes a connection over: its socket (non-blocking), address and slot in the door's table. */
typedef void (*http_front_adopt_fn)(void *arg, int fd, const struct sockaddr_storage *sa,
				    socklen_t salen, unsigned slot);

struct http_front_opts {
	unsigned max_conns;	   /* at once, held or handed over */
	unsigned max_conns_per_ip; /* 0: no cap */
	unsigned timeout_ms;	   /* a first head not in by then: closed */
	bool judge;		   /* false (TLS): handed over as accepted */
	http_front_adopt_fn adopt; /* called on the accepting thread */
	void *adopt_arg;
};

int http_front_start(int listen_fd, const struct http_front_opts *o, struct http_front **out);
/* A handed-over connection's slot free again (it is closed). */
void http_front_release(struct http_front *f, unsigned slot);
void http_front_stop(struct http_front *f);
void http_front_free(struct http_front *f);

#endif
