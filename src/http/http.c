/*
 * http.c - the HTTP server: worker threads, each polling its connections
 * with epoll, that read requests, call the handler and write answers;
 * answers deferred to another thread; event streams.  Connections are
 * accepted by the front door (front.h), heads parsed by reqparse.h, HTTPS
 * through GnuTLS loaded when asked for (tls.h).
 *
 * A connection belongs to one worker from its handover to its close: only
 * that thread reads, writes or frees it.  Other threads reach it through
 * the worker's queues (under its lock) and its eventfd: the front door's
 * new connections, the answers another thread completed, the watcher's
 * rounds of event streams, the stop.
 */
#include "http/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "http/front.h"
#include "http/reqparse.h"
#include "http/tls.h"
#include "http/urlquery.h"

#define HTTP_IN_FIRST	    (16 * 1024) /* a connection's first read buffer */
#define HTTP_OUT_KEEP	    (64 * 1024) /* an output buffer larger than this is freed once empty */
#define HTTP_STREAM_BACKLOG (1 << 20)	/* event bytes a stream's client may leave unread */
#define HTTP_SWEEP_MS	    1000	/* how often a worker looks for timed-out connections */
#define HTTP_LINGER_MS	    1000 /* a closing connection drained this long after its answer */
#define HTTP_EVENTS	    256

enum conn_state {
	CONN_HANDSHAKE, /* TLS: not through yet */
	CONN_READ,	/* reading a request, or idle between two */
	CONN_DEFERRED,	/* its handler's answer not done yet: nothing read meanwhile */
	CONN_STREAM,	/* an event stream: written each round, its input dropped */
	CONN_CLOSING,	/* its last answer written, then (plain) drained until the peer's end */
};

/*
 * An event stream (http_watch): its paths, asked through the server's own
 * handler on the connection's worker every watch interval, and what was
 * last sent for each.
 */
struct http_stream {
	char auth[512];			    /* the Authorization header, "" for none */
	char principal[HTTP_PRINCIPAL_MAX]; /* the opening request's caller, "" for none */
	size_t npaths;
	char path[HTTP_WATCH_PATHS][HTTP_WATCH_PATH_MAX];
	char event[HTTP_WATCH_PATHS][32];
	uint64_t last_hash[HTTP_WATCH_PATHS];
	bool sent[HTTP_WATCH_PATHS];
	bool chunked; /* HTTP/1.1: each round's events one chunk; 1.0: until the close */
	int64_t last_write_ms;
};

/* A request the server makes itself: its query and Authorization header. */
struct http_synth {
	struct url_query q;
	const char *authorization;
	const char *principal; /* the stream's caller, NULL for none */
};

struct http_worker;

struct http_conn {
	struct http_worker *w;
	struct http_conn *prev, *next; /* the worker's connections */
	struct http_conn *qnext;       /* on the worker's incoming or done queue */
	int fd;
	unsigned slot; /* in the front door's table */
	socklen_t salen;
	struct sockaddr_storage sa;
	struct tls_session *tls;
	enum conn_state state;
	bool peer_done;	    /* its client sent its end */
	bool close_after;   /* the answer in hand is the connection's last */
	bool lingering;	    /* CLOSING: our end sent, its bytes dropped until its end */
	int64_t last_io_ms; /* its last byte read or written */
	char *in;	    /* bytes read and not yet consumed: [0, in_len) */
	size_t in_len, in_cap;
	bool in_full;	   /* the last read stopped at a full buffer, not the socket's end */
	struct strbuf out; /* bytes to write: [out_off, out.len) */
	size_t out_off;
	size_t tls_again; /* TLS: how many bytes the send that would block was given */
	/* the request in hand */
	bool have_head;
	struct http_req_info ri;
	struct http_chunked ch;
	bool continue_sent;
	/* its handler's: http_defer, http_watch, http_set_principal */
	bool deferred;
	struct http_response res; /* the deferred answer */
	struct http_stream *watch;
	bool streaming; /* counted in the server's and its worker's streams */
	char principal[HTTP_PRINCIPAL_MAX];
};

struct http_worker {
	struct http_server *s;
	pthread_t thread;
	bool started;
	int epfd, wakefd;
	/* under lock: what other threads hand this one */
	pthread_mutex_t lock;
	struct http_conn *incoming, *done;
	bool streams_due, stopping;
	bool woken; /* the eventfd was written and not read yet */
	/* this thread's */
	struct http_conn *conns;
	unsigned nstreams; /* read by the watcher (atomic) */
	int64_t now_ms, next_sweep_ms, date_s;
	char date[40];
	struct strbuf head;	       /* an answer's status line and headers */
	struct http_req_fields fields; /* the request being handled */
	struct url_query query;	       /* its arguments */
};

struct http_server {
	http_handler_fn fn;
	void *arg;
	size_t max_body; /* 0: GET only */
	unsigned header_timeout_ms, idle_timeout_ms;
	uint16_t port;
	struct http_front *front;
	struct tls_creds *tls;
	struct http_worker *workers;
	unsigned nworkers, next_worker; /* next_worker: the front door's thread's */
	/* event streams: their count and the watcher's state, under stream_lock */
	pthread_mutex_t stream_lock;
	pthread_cond_t stream_wake;
	pthread_t watcher;
	bool watcher_started, stopping;
	unsigned nstreams, max_streams, watch_interval_ms;
};

int http_add_header(struct http_response *res, const char *name, const char *value)
{
	for (size_t i = 0; i < HTTP_MAX_HEADERS; i++) {
		if (!res->headers[i].name) {
			res->headers[i].name = name;
			res->headers[i].value = value;
			return 0;
		}
	}
	return -ENOSPC;
}

void http_error(struct http_response *res, int status, const char *msg)
{
	struct jsonw w;

	res->status = status;
	res->content_type = "application/json";
	strbuf_reset(&res->body);
	jsonw_init(&w, &res->body, false);
	jsonw_obj_begin(&w);
	jsonw_kv_str(&w, "error", msg);
	jsonw_kv_int(&w, "status", status);
	jsonw_obj_end(&w);
	strbuf_addch(&res->body, '\n');
}

int http_parse_listen(const char *listen, struct sockaddr_storage *sa, unsigned *salen)
{
	char host[128];
	const char *colon;
	char *end;
	long port;
	size_t hlen;

	memset(sa, 0, sizeof(*sa));
	if (!listen)
		return -EINVAL;
	colon = strrchr(listen, ':');
	if (!colon)
		return -EINVAL;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end || errno || port < 0 || port > 65535)
		return -EINVAL;
	hlen = (size_t)(colon - listen);
	if (hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, listen, hlen);
	host[hlen] = '\0';
	if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;

		host[hlen - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
			return -EINVAL;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*salen = sizeof(*s6);
		return 0;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)sa;

	s4->sin_family = AF_INET;
	s4->sin_port = htons((uint16_t)port);
	if (hlen == 0 || strcmp(host, "*") == 0)
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (strcmp(host, "localhost") == 0)
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
		return -EINVAL;
	*salen = sizeof(*s4);
	return 0;
}

/* ---- a connection's bytes ---- */

static void worker_wake(struct http_worker *w);

/* One read: bytes read, 0 at the client's end, or -errno (-EAGAIN, -EINTR: again). */
static ssize_t conn_recv(struct http_conn *c, void *buf, size_t len)
{
	ssize_t n;

	if (c->tls)
		return tls_recv(c->tls, buf, len);
	n = recv(c->fd, buf, len, 0);
	if (n >= 0)
		return n;
	return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

/* The most c->in may hold now: a head, or the request whose head is in (and a little more). */
static size_t conn_in_limit(const struct http_conn *c)
{
	const struct http_server *s = c->w->s;

	if (!c->have_head)
		return HTTP_IN_FIRST > HTTP_FRONT_HEAD_MAX ? HTTP_IN_FIRST : HTTP_FRONT_HEAD_MAX;
	if (c->ri.chunked)
		return c->ri.head_len + s->max_body + 2 * 4096 + HTTP_IN_FIRST;
	return c->ri.head_len + (size_t)(c->ri.content_length > 0 ? c->ri.content_length : 0) +
	       HTTP_IN_FIRST;
}

/*
 * Reads what the socket holds into c->in, as far as conn_in_limit lets it
 * grow (in_full: it stopped there); 0, or -errno to close the connection.
 */
static int conn_read(struct http_conn *c)
{
	for (;;) {
		ssize_t n;

		c->in_full = false;
		if (c->peer_done)
			return 0;
		if (c->in_len == c->in_cap) {
			size_t limit = conn_in_limit(c), cap;
			char *in;

			if (c->in_cap >= limit) {
				c->in_full = true; /* the request in it is answered first */
				return 0;
			}
			/* doubled as bytes come, not what a Content-Length claims at once */
			cap = c->in_cap ? c->in_cap * 2 : HTTP_IN_FIRST;
			if (cap > limit)
				cap = limit;
			in = realloc(c->in, cap);
			if (!in)
				return -ENOMEM;
			c->in = in;
			c->in_cap = cap;
		}
		n = conn_recv(c, c->in + c->in_len, c->in_cap - c->in_len);
		if (n > 0) {
			c->in_len += (size_t)n;
			c->last_io_ms = c->w->now_ms;
		} else if (n == 0) {
			c->peer_done = true;
		} else if (n == -EAGAIN) {
			return 0;
		} else if (n != -EINTR) {
			return (int)n;
		}
	}
}

/* The first used bytes of c->in gone (the request answered); the buffer freed once empty. */
static void conn_consume(struct http_conn *c, size_t used)
{
	if (used < c->in_len) {
		memmove(c->in, c->in + used, c->in_len - used);
		c->in_len -= used;
		return;
	}
	free(c->in);
	c->in = NULL;
	c->in_len = c->in_cap = 0;
}

/* Writes what c->out holds: 0 when all is, -EAGAIN when the socket is full, else -errno. */
static int conn_flush(struct http_conn *c)
{
	while (c->out_off < c->out.len) {
		size_t n = c->out.len - c->out_off;
		ssize_t r;

		if (c->tls) {
			if (c->tls_again)
				n = c->tls_again; /* GnuTLS: the same bytes again */
			r = tls_send(c->tls, c->out.buf + c->out_off, n);
		} else {
			r = send(c->fd, c->out.buf + c->out_off, n, MSG_NOSIGNAL);
			if (r < 0)
				r = errno == EWOULDBLOCK ? -EAGAIN : -errno;
		}
		if (r > 0) {
			c->out_off += (size_t)r;
			c->tls_again = 0;
			c->last_io_ms = c->w->now_ms;
		} else if (r == -EAGAIN) {
			if (c->tls)
				c->tls_again = n;
			return -EAGAIN;
		} else if (r != -EINTR) {
			return r < 0 ? (int)r : -EPIPE;
		}
	}
	if (c->out.alloc > HTTP_OUT_KEEP)
		strbuf_release(&c->out);
	else
		strbuf_reset(&c->out);
	c->out_off = 0;
	return 0;
}

/*
 * head then body written: at once with one sendmsg when nothing waits
 * before them (plain HTTP), the rest kept in c->out.
 */
static int conn_write(struct http_conn *c, const char *head, size_t head_len, const char *body,
		      size_t body_len)
{
	size_t done = 0;

	if (!c->tls && c->out_off == c->out.len) {
		struct iovec iov[2] = {{(void *)head, head_len}, {(void *)body, body_len}};
		struct msghdr msg = {.msg_iov = iov, .msg_iovlen = body_len ? 2 : 1};
		ssize_t r = sendmsg(c->fd, &msg, MSG_NOSIGNAL); /* writev, without SIGPIPE */

		if (r > 0) {
			done = (size_t)r;
			c->last_io_ms = c->w->now_ms;
		}
	}
	if (done < head_len && strbuf_add(&c->out, head + done, head_len - done))
		return -ENOMEM;
	done = done > head_len ? done - head_len : 0;
	if (done < body_len && strbuf_add(&c->out, body + done, body_len - done))
		return -ENOMEM;
	return 0;
}

static void conn_date(struct http_worker *w)
{
	time_t t = (time_t)(w->now_ms / 1000);
	struct tm tm;

	if (t == w->date_s)
		return;
	w->date_s = t;
	gmtime_r(&t, &tm);
	strftime(w->date, sizeof(w->date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* The status line and the headers every answer has, into w->head. */
static void head_begin(struct http_worker *w, int status, const char *content_type)
{
	conn_date(w);
	strbuf_reset(&w->head);
	strbuf_addf(&w->head,
		    "HTTP/1.1 %d %s\r\nDate: %s\r\nContent-Type: %s\r\nCache-Control: no-store\r\n",
		    status, http_reason(status), w->date, content_type);
}

/* An answer queued (a HEAD request's without its body); c closes after it when it must. */
static void conn_respond(struct http_conn *c, const struct http_response *res)
{
	struct http_worker *w = c->w;
	bool head_only = c->ri.method == HTTP_METHOD_HEAD;

	head_begin(w, res->status, res->content_type ? res->content_type : "application/json");
	for (size_t i = 0; i < HTTP_MAX_HEADERS && res->headers[i].name; i++)
		strbuf_addf(&w->head, "%s: %s\r\n", res->headers[i].name, res->headers[i].value);
	strbuf_addf(&w->head, "Content-Length: %zu\r\n", res->body.len);
	if (c->close_after)
		strbuf_addstr(&w->head, "Connection: close\r\n");
	else if (c->ri.http10)
		strbuf_addstr(&w->head, "Connection: keep-alive\r\n");
	strbuf_add(&w->head, "\r\n", 2);
	if (strbuf_error(&w->head) || conn_write(c, w->head.buf, w->head.len, res->body.buf,
						 head_only || !res->body.buf ? 0 : res->body.len))
		c->close_after = true; /* what could be queued goes; nothing more */
	if (c->close_after)
		c->state = CONN_CLOSING;
}

/* A JSON error answer, the connection's last (the rest of its request is never read). */
static void conn_refuse(struct http_conn *c, int status, const char *msg)
{
	struct http_response res = {status, "application/json", {0}, {{0}}};

	log_debug("http: refused a request: %d %s", status, msg);
	strbuf_init(&res.body, 4096);
	http_error(&res, status, msg);
	c->close_after = true;
	conn_respond(c, &res);
	strbuf_release(&res.body);
}

/* ---- requests ---- */

/* A head the server refuses before its body: its status and message, or 0. */
static int head_refusal(const struct http_server *s, const struct http_req_info *ri,
			const char **msg)
{
	bool post = ri->method == HTTP_METHOD_POST;

	if (ri->method == HTTP_METHOD_OTHER)
		return *msg = "method not allowed", 405;
	if (post && s->max_body == 0)
		return *msg = "method not allowed: use GET", 405;
	if (!post && (ri->content_length > 0 || ri->chunked))
		return *msg = "this endpoint takes no request body", 413;
	if (post && ri->content_length > 0 && (uint64_t)ri->content_length > s->max_body)
		return *msg = "request body too large", 413;
	return 0;
}

/* "100 Continue" once, to a client that waits for it before it sends its body. */
static void conn_continue(struct http_conn *c)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

	if (!c->ri.expect_continue || c->ri.http10 || c->continue_sent)
		return;
	c->continue_sent = true;
	if (conn_write(c, cont, sizeof(cont) - 1, NULL, 0) || conn_flush(c) == -EPIPE)
		c->close_after = true;
}

static void stream_start(struct http_conn *c);

/* The handler called for the request whose head is buf[0, head_len) and body in c->in. */
static void conn_dispatch(struct http_conn *c, size_t body_start, size_t body_len)
{
	struct http_worker *w = c->w;
	struct http_server *s = w->s;
	struct http_request req;
	struct http_response res = {200, "application/json; charset=utf-8", {0}, {{0}}};

	c->close_after = c->ri.conn_close || (c->ri.http10 && !c->ri.conn_keep_alive);
	if (http_req_split(c->in, c->ri.head_len, &w->fields)) {
		conn_refuse(c, 400, "bad request target: a path is needed");
		return;
	}
	if (url_query_parse(w->fields.query, &w->query)) {
		conn_refuse(c, 400, "bad query string");
		return;
	}
	req = (struct http_request){w->fields.method,	w->fields.path, c,
				    c->in + body_start, body_len,	c};
	c->principal[0] = '\0';
	strbuf_init(&res.body, 64 << 20);
	s->fn(s->arg, &req, &res);
	if (c->deferred)
		c->state = CONN_DEFERRED;
	else if (c->watch)
		stream_start(c);
	else
		conn_respond(c, &res);
	strbuf_release(&res.body);
}

/*
 * The request at the start of c->in: answered (or deferred, or a stream
 * begun) and its bytes consumed, true; false while more bytes are needed.
 */
static bool conn_request(struct http_conn *c)
{
	struct http_server *s = c->w->s;
	struct http_front_refusal why;
	size_t body_start, body_len, used;
	const char *msg;
	int status;

	if (!c->have_head) {
		switch (http_req_scan(c->in ? c->in : "", c->in_len, &c->ri, &why)) {
		case HTTP_FRONT_MORE:
			return false;
		case HTTP_FRONT_REFUSE:
			conn_refuse(c, why.status, why.msg);
			return true;
		case HTTP_FRONT_PASS:
			break;
		}
		status = head_refusal(s, &c->ri, &msg);
		if (status) {
			conn_refuse(c, status, msg);
			return true;
		}
		c->have_head = true;
		c->continue_sent = false;
		if (c->ri.chunked)
			http_chunked_init(&c->ch, c->ri.head_len);
	}
	body_start = c->ri.head_len;
	if (c->ri.chunked) {
		int r = http_chunked_step(&c->ch, c->in, c->in_len, body_start, s->max_body);

		if (r < 0) {
			c->have_head = false;
			conn_refuse(c, r == -EFBIG ? 413 : 400,
				    r == -EFBIG ? "request body too large" : "bad chunked body");
			return true;
		}
		if (r == 0) {
			/* what is decoded stays; the raw bytes not yet decoded move down to it */
			memmove(c->in + c->ch.out, c->in + c->ch.raw, c->in_len - c->ch.raw);
			c->in_len -= c->ch.raw - c->ch.out;
			c->ch.raw = c->ch.out;
			conn_continue(c);
			return false;
		}
		body_len = c->ch.out - body_start;
		used = c->ch.raw;
	} else {
		uint64_t len = c->ri.content_length > 0 ? (uint64_t)c->ri.content_length : 0;

		if (c->in_len - body_start < len) {
			conn_continue(c);
			return false;
		}
		body_len = (size_t)len;
		used = body_start + body_len;
	}
	c->have_head = false;
	conn_dispatch(c, body_start, body_len);
	conn_consume(c, used);
	return true;
}

static void conn_close(struct http_conn *c);
static void stream_input(struct http_conn *c);

/* What a closing connection sends is read and dropped; its end (or an error) closes it. */
static void conn_drain(struct http_conn *c)
{
	do {
		c->in_len = 0;
		if (conn_read(c) || c->peer_done) {
			conn_close(c);
			return;
		}
	} while (c->in_len == c->in_cap);
}

/*
 * Moves c on as far as it can: its output written, then (reading) each
 * whole request it sent answered in turn.  May close and free c.
 */
static void conn_run(struct http_conn *c)
{
	for (;;) {
		int r = conn_flush(c);

		if (r == -EAGAIN)
			return;
		if (r < 0) {
			conn_close(c);
			return;
		}
		switch (c->state) {
		case CONN_HANDSHAKE:
		case CONN_DEFERRED:
			return;
		case CONN_STREAM:
			stream_input(c);
			return;
		case CONN_CLOSING:
			if (c->tls || (!c->lingering && shutdown(c->fd, SHUT_WR))) {
				conn_close(c);
				return;
			}
			if (!c->lingering) {
				c->lingering = true;
				c->last_io_ms = c->w->now_ms;
			}
			conn_drain(c);
			return;
		case CONN_READ:
			break;
		}
		if (conn_read(c)) {
			conn_close(c);
			return;
		}
		if (conn_request(c))
			continue;
		if (c->peer_done) { /* nothing whole is left, and no more will come */
			conn_close(c);
			return;
		}
		/*
		 * The read stopped at a full buffer, not at the socket's end:
		 * now that the head is known (or a chunk decoded) the buffer
		 * may grow, and the bytes still in the socket will bring no
		 * epoll event (edge-triggered).  A request that cannot fit
		 * what the server takes is refused (never reached: the head
		 * and body caps refuse first).
		 */
		if (!c->in_full)
			return;
		if (c->in_cap >= conn_in_limit(c) && c->in_len == c->in_cap) {
			c->have_head = false;
			conn_refuse(c, 413, "request too large");
		}
	}
}

static void conn_handshake(struct http_conn *c)
{
	for (;;) {
		int r = tls_handshake(c->tls);

		if (r == 0) {
			c->state = CONN_READ;
			c->last_io_ms = c->w->now_ms;
			conn_run(c);
			return;
		}
		if (r == -EAGAIN)
			return;
		if (r != -EINTR) {
			conn_close(c);
			return;
		}
	}
}

/* ---- deferred answers ---- */

struct http_pending *http_defer(const struct http_request *req)
{
	struct http_conn *c = req->priv;

	c->deferred = true;
	c->res.status = 200;
	c->res.content_type = "application/json; charset=utf-8";
	memset(c->res.headers, 0, sizeof(c->res.headers));
	strbuf_init(&c->res.body, 64 << 20);
	return (struct http_pending *)c;
}

struct http_response *http_pending_response(struct http_pending *p)
{
	return &((struct http_conn *)p)->res;
}

void http_pending_done(struct http_pending *p)
{
	struct http_conn *c = (struct http_conn *)p;
	struct http_worker *w = c->w;

	pthread_mutex_lock(&w->lock);
	c->qnext = w->done;
	w->done = c;
	worker_wake(w);
	pthread_mutex_unlock(&w->lock);
}

/* On c's worker: its deferred answer sent, then its next requests. */
static void conn_deferred_done(struct http_conn *c)
{
	c->deferred = false;
	c->state = CONN_READ;
	conn_respond(c, &c->res);
	strbuf_release(&c->res.body);
	conn_run(c);
}

/* ---- event streams ---- */

int http_watch(const struct http_request *req, const char *const *paths, const char *const *events,
	       size_t n)
{
	struct http_conn *c = req->priv;
	const char *auth = http_header(req, "Authorization");
	struct http_stream *st;

	if (!req->conn || n == 0 || n > HTTP_WATCH_PATHS || c->watch)
		return -EINVAL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	if (auth && strlen(auth) >= sizeof(st->auth))
		goto bad;
	snprintf(st->auth, sizeof(st->auth), "%s", auth ? auth : "");
	snprintf(st->principal, sizeof(st->principal), "%s", c->principal);
	for (size_t i = 0; i < n; i++) {
		if (strlen(paths[i]) >= sizeof(st->path[i]) || paths[i][0] != '/' ||
		    strlen(events[i]) >= sizeof(st->event[i]) || strpbrk(events[i], "\r\n"))
			goto bad;
		strcpy(st->path[i], paths[i]);
		strcpy(st->event[i], events[i]);
	}
	st->npaths = n;
	c->watch = st;
	return 0;
bad:
	free(st);
	return -EINVAL;
}

/* One event: "event: NAME", a "data:" line for each line of body, a blank line. */
static void add_event(struct strbuf *out, const char *name, const struct strbuf *body)
{
	const char *p = body->buf ? body->buf : "", *end = p + body->len;

	while (end > p && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	strbuf_addf(out, "event: %s\n", name);
	do {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *stop = nl ? nl : end;

		strbuf_add(out, "data: ", 6);
		strbuf_add(out, p, (size_t)(stop - p));
		strbuf_addch(out, '\n');
		p = nl ? nl + 1 : end;
	} while (p < end);
	strbuf_addch(out, '\n');
}

/* Asks st's paths through the server's own handler; the events for what changed into out. */
static void stream_poll(struct http_server *s, struct http_stream *st, int64_t now_ms,
			struct strbuf *out)
{
	size_t before = out->len;

	for (size_t i = 0; i < st->npaths; i++) {
		struct http_synth sy = {.authorization = st->auth[0] ? st->auth : NULL,
					.principal = st->principal[0] ? st->principal : NULL};
		char path[HTTP_WATCH_PATH_MAX];
		char *q;
		struct http_request req = {"GET", path, NULL, NULL, 0, &sy};
		struct http_response res = {200, "application/json; charset=utf-8", {0}, {{0}}};
		uint64_t h;

		strcpy(path, st->path[i]);
		q = strchr(path, '?');
		if (q)
			*q++ = '\0';
		strbuf_init(&res.body, 64 << 20);
		if (url_query_parse(q, &sy.q))
			http_error(&res, 400, "bad query");
		else
			s->fn(s->arg, &req, &res);
		h = fnv1a(fnv1a(FNV1A_SEED, &res.status, sizeof(res.status)),
			  res.body.buf ? res.body.buf : "", res.body.len);
		if (!st->sent[i] || h != st->last_hash[i]) {
			add_event(out, res.status == 200 ? st->event[i] : "error", &res.body);
			st->sent[i] = true;
			st->last_hash[i] = h;
		}
		strbuf_release(&res.body);
	}
	if (out->len == before && now_ms - st->last_write_ms >= HTTP_WATCH_PING_MS)
		strbuf_addstr(out, ": ping\n\n");
	if (out->len != before)
		st->last_write_ms = now_ms;
}

/*
 * A stream's round: what changed queued (one chunk over HTTP/1.1); false
 * when the stream is to end: a client that reads nothing once
 * HTTP_STREAM_BACKLOG bytes wait for it.
 */
static bool stream_fill(struct http_conn *c)
{
	struct http_stream *st = c->watch;
	struct strbuf ev;

	strbuf_init(&ev, HTTP_STREAM_BACKLOG);
	stream_poll(c->w->s, st, c->w->now_ms, &ev);
	if (ev.len && st->chunked)
		strbuf_addf(&c->out, "%zx\r\n", ev.len);
	if (ev.len)
		strbuf_add(&c->out, ev.buf, ev.len);
	if (ev.len && st->chunked)
		strbuf_add(&c->out, "\r\n", 2);
	strbuf_release(&ev);
	return !strbuf_error(&c->out) && c->out.len - c->out_off <= HTTP_STREAM_BACKLOG;
}

/* The watcher's round on c's worker: its events written (c may be closed). */
static void stream_round(struct http_conn *c)
{
	if (stream_fill(c))
		conn_run(c);
	else
		conn_close(c);
}

/* The handler called http_watch: the stream's head, and its first events at once (or a 503). */
static void stream_start(struct http_conn *c)
{
	struct http_worker *w = c->w;
	struct http_server *s = w->s;
	bool head_only = c->ri.method == HTTP_METHOD_HEAD, full;

	pthread_mutex_lock(&s->stream_lock);
	full = s->nstreams >= s->max_streams || s->stopping;
	if (!full && !head_only)
		s->nstreams++;
	pthread_mutex_unlock(&s->stream_lock);
	if (full) {
		free(c->watch);
		c->watch = NULL;
		conn_refuse(c, 503, "too many event streams; try again later");
		return;
	}
	if (head_only) { /* the stream's head alone, then the end: no stream counted */
		free(c->watch);
		c->watch = NULL;
		head_begin(w, 200, "text/event-stream; charset=utf-8");
		strbuf_addstr(&w->head, "Connection: close\r\n\r\n");
		if (!strbuf_error(&w->head))
			conn_write(c, w->head.buf, w->head.len, NULL, 0);
		c->close_after = true;
		c->state = CONN_CLOSING;
		return;
	}
	c->watch->chunked = !c->ri.http10;
	c->state = CONN_STREAM;
	c->streaming = true;
	__atomic_add_fetch(&w->nstreams, 1, __ATOMIC_RELAXED);
	head_begin(w, 200, "text/event-stream; charset=utf-8");
	strbuf_addstr(&w->head, c->watch->chunked
				    ? "X-Accel-Buffering: no\r\nTransfer-Encoding: "
				      "chunked\r\n\r\n"
				    : "X-Accel-Buffering: no\r\nConnection: close\r\n\r\n");
	/* written by the caller's conn_run, which alone may close c */
	if (strbuf_error(&w->head) || conn_write(c, w->head.buf, w->head.len, NULL, 0) ||
	    !stream_fill(c))
		c->state = CONN_CLOSING;
}

/* What a stream's client sends is dropped; its end closes the stream. */
static void stream_input(struct http_conn *c)
{
	char buf[4096];

	for (;;) {
		ssize_t n = conn_recv(c, buf, sizeof(buf));

		if (n > 0 || n == -EINTR)
			continue;
		if (n != -EAGAIN)
			conn_close(c);
		return;
	}
}

/* The stream's end: the last chunk, written if the socket takes it now. */
static void stream_end(struct http_conn *c)
{
	if (c->watch->chunked && strbuf_add(&c->out, "0\r\n\r\n", 5) == 0)
		conn_flush(c);
}

static void streams_wake(struct http_server *s)
{
	for (unsigned i = 0; i < s->nworkers; i++) {
		struct http_worker *w = &s->workers[i];

		if (!__atomic_load_n(&w->nstreams, __ATOMIC_RELAXED))
			continue;
		pthread_mutex_lock(&w->lock);
		w->streams_due = true;
		worker_wake(w);
		pthread_mutex_unlock(&w->lock);
	}
}

static void *watcher_main(void *arg)
{
	struct http_server *s = arg;

	pthread_mutex_lock(&s->stream_lock);
	while (!s->stopping) {
		struct timespec until;

		time_deadline_ms(&until, s->watch_interval_ms);
		pthread_cond_timedwait(&s->stream_wake, &s->stream_lock, &until);
		if (s->stopping)
			break;
		pthread_mutex_unlock(&s->stream_lock);
		streams_wake(s);
		pthread_mutex_lock(&s->stream_lock);
	}
	pthread_mutex_unlock(&s->stream_lock);
	return NULL;
}

/* ---- workers ---- */

/* Under w->lock: its thread woken (once until it reads its eventfd). */
static void worker_wake(struct http_worker *w)
{
	uint64_t one = 1;

	if (w->woken)
		return;
	w->woken = true;
	if (write(w->wakefd, &one, sizeof(one)) != sizeof(one))
		log_warn(0, "http: cannot wake a server thread");
}

static void conn_close(struct http_conn *c)
{
	struct http_worker *w = c->w;
	struct http_server *s = w->s;

	if (c->watch) {
		if (c->streaming) {
			pthread_mutex_lock(&s->stream_lock);
			s->nstreams--;
			pthread_mutex_unlock(&s->stream_lock);
			__atomic_sub_fetch(&w->nstreams, 1, __ATOMIC_RELAXED);
		}
		free(c->watch);
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	tls_session_free(c->tls);
	close(c->fd); /* and out of the worker's epoll */
	http_front_release(s->front, c->slot);
	free(c->in);
	strbuf_release(&c->out);
	strbuf_release(&c->res.body);
	free(c);
}

/* A connection the front door handed over: polled from now on, its first bytes read at once. */
static void conn_adopt(struct http_worker *w, struct http_conn *c)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
				 .data.ptr = c};

	c->w = w;
	c->last_io_ms = w->now_ms;
	strbuf_init(&c->out, 64 << 20);
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	if (w->s->tls) {
		c->state = CONN_HANDSHAKE;
		c->tls = tls_session_new(w->s->tls, c->fd);
	}
	if ((w->s->tls && !c->tls) || epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->fd, &ev)) {
		conn_close(c);
		return;
	}
	if (c->state == CONN_HANDSHAKE)
		conn_handshake(c);
	else
		conn_run(c);
}

/* Closes what waited past its timeout: a request not in, an idle keep-alive, a drained close. */
static void worker_sweep(struct http_worker *w)
{
	const struct http_server *s = w->s;
	struct http_conn *c, *next;

	for (c = w->conns; c; c = next) {
		int64_t limit;

		next = c->next;
		switch (c->state) {
		case CONN_DEFERRED:
		case CONN_STREAM: /* its pings find a client that went away */
			continue;
		case CONN_CLOSING:
			limit = c->lingering ? HTTP_LINGER_MS : s->idle_timeout_ms;
			break;
		case CONN_HANDSHAKE:
			limit = s->header_timeout_ms;
			break;
		default:
			limit = c->out_off < c->out.len	    ? s->idle_timeout_ms
				: c->in_len || c->have_head ? s->header_timeout_ms
							    : s->idle_timeout_ms;
			break;
		}
		if (w->now_ms - c->last_io_ms >= limit)
			conn_close(c);
	}
	w->next_sweep_ms = w->now_ms + HTTP_SWEEP_MS;
}

/* What other threads handed this one: new connections, answers done, a streams' round. */
static bool worker_woken(struct http_worker *w)
{
	struct http_conn *incoming, *done, *c, *next;
	bool streams, stopping;
	uint64_t v;

	if (read(w->wakefd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_debug("http: a server thread's eventfd: %s", strerror(errno));
	pthread_mutex_lock(&w->lock);
	incoming = w->incoming;
	done = w->done;
	streams = w->streams_due;
	stopping = w->stopping;
	w->incoming = w->done = NULL;
	w->streams_due = false;
	w->woken = false;
	pthread_mutex_unlock(&w->lock);
	for (c = incoming; c; c = next) {
		next = c->qnext;
		conn_adopt(w, c);
	}
	for (c = done; c; c = next) {
		next = c->qnext;
		conn_deferred_done(c);
	}
	for (c = w->conns; streams && c; c = next) {
		next = c->next;
		if (c->state == CONN_STREAM)
			stream_round(c);
	}
	return !stopping;
}

static void *worker_main(void *arg)
{
	struct http_worker *w = arg;
	struct epoll_event evs[HTTP_EVENTS];
	bool running = true;

	while (running) {
		int64_t wait_ms;
		bool woken = false;
		int n;

		w->now_ms = time_now_ms();
		wait_ms = w->next_sweep_ms - w->now_ms;
		n = epoll_wait(w->epfd, evs, HTTP_EVENTS,
			       wait_ms < 0		 ? 0
			       : wait_ms > HTTP_SWEEP_MS ? HTTP_SWEEP_MS
							 : (int)wait_ms);
		w->now_ms = time_now_ms();
		for (int i = 0; i < n; i++) {
			struct http_conn *c = evs[i].data.ptr;

			if (evs[i].data.ptr == w) {
				woken = true;
				continue;
			}
			if (c->state == CONN_HANDSHAKE)
				conn_handshake(c);
			else
				conn_run(c);
		}
		/* after the events: what is closed below is in none of them */
		if (woken)
			running = worker_woken(w);
		if (w->now_ms >= w->next_sweep_ms)
			worker_sweep(w);
	}
	while (w->conns) {
		if (w->conns->state == CONN_STREAM)
			stream_end(w->conns);
		conn_close(w->conns);
	}
	return NULL;
}

/* The front door's thread: a connection given to the next worker. */
static void server_adopt(void *arg, int fd, const struct sockaddr_storage *sa, socklen_t salen,
			 unsigned slot)
{
	struct http_server *s = arg;
	struct http_worker *w = &s->workers[s->next_worker++ % s->nworkers];
	struct http_conn *c = calloc(1, sizeof(*c));

	if (!c) {
		close(fd);
		http_front_release(s->front, slot);
		return;
	}
	c->fd = fd;
	c->slot = slot;
	c->sa = *sa;
	c->salen = salen;
	c->state = CONN_READ;
	pthread_mutex_lock(&w->lock);
	c->qnext = w->incoming;
	w->incoming = c;
	worker_wake(w);
	pthread_mutex_unlock(&w->lock);
}

/* ---- starting and stopping ---- */

static unsigned or_default(unsigned v, unsigned def)
{
	return v ? v : def;
}

/* The listening socket the front door accepts on: its fd, or -errno. */
static int listen_on(const struct sockaddr_storage *sa, unsigned salen)
{
	int one = 1, fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)sa, salen) || listen(fd, 4096)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* The port a listening socket was given (port 0: the kernel's choice). */
static uint16_t bound_port(int fd)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);

	if (getsockname(fd, (struct sockaddr *)&sa, &len))
		return 0;
	return ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
					      : ((struct sockaddr_in *)&sa)->sin_port);
}

static int worker_start(struct http_server *s, struct http_worker *w)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = w};

	w->s = s;
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	w->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_init(&w->lock, NULL);
	strbuf_init(&w->head, 64 << 10);
	if (w->epfd < 0 || w->wakefd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wakefd, &ev))
		return -errno;
	if (pthread_create(&w->thread, NULL, worker_main, w))
		return -EAGAIN;
	w->started = true;
	return 0;
}

static void worker_stop(struct http_worker *w)
{
	struct http_conn *c, *next;

	if (w->started) {
		pthread_mutex_lock(&w->lock);
		w->stopping = true;
		worker_wake(w);
		pthread_mutex_unlock(&w->lock);
		pthread_join(w->thread, NULL);
	}
	for (c = w->incoming; c; c = next) { /* handed over as it stopped */
		next = c->qnext;
		close(c->fd);
		free(c);
	}
	if (w->epfd >= 0)
		close(w->epfd);
	if (w->wakefd >= 0)
		close(w->wakefd);
	pthread_mutex_destroy(&w->lock);
	strbuf_release(&w->head);
}

/*
 * Stops what started, in the order that keeps every thread's view whole:
 * no more rounds of streams, no more handovers, then the workers (they
 * give their slots back to the door), then the door's table.
 */
static void server_free(struct http_server *s)
{
	if (s->watcher_started) {
		pthread_mutex_lock(&s->stream_lock);
		s->stopping = true;
		pthread_cond_signal(&s->stream_wake);
		pthread_mutex_unlock(&s->stream_lock);
		pthread_join(s->watcher, NULL);
	}
	http_front_stop(s->front);
	for (unsigned i = 0; s->workers && i < s->nworkers; i++)
		worker_stop(&s->workers[i]);
	http_front_free(s->front);
	free(s->workers);
	tls_creds_free(s->tls);
	pthread_mutex_destroy(&s->stream_lock);
	pthread_cond_destroy(&s->stream_wake);
	free(s);
}

int http_start(const char *listen, http_handler_fn fn, void *arg, struct http_server **out)
{
	static const struct http_options none;

	return http_start_opts(listen, &none, fn, arg, out);
}

int http_start_opts(const char *listen, const struct http_options *o, http_handler_fn fn, void *arg,
		    struct http_server **out)
{
	struct sockaddr_storage sa;
	struct http_front_opts fo;
	struct http_server *s;
	unsigned salen;
	int lfd, ret;

	*out = NULL;
	if (http_parse_listen(listen, &sa, &salen))
		return log_err(-EINVAL, "bad listen address '%s' (ADDR:PORT, e.g. 127.0.0.1:9464)",
			       listen);
	s = calloc(1, sizeof(*s));
	if (!s)
		return log_err(-ENOMEM, "out of memory");
	s->fn = fn;
	s->arg = arg;
	s->max_body = o->max_body;
	s->header_timeout_ms =
	    or_default(o->header_timeout_s, HTTP_DEFAULT_HEADER_TIMEOUT_S) * 1000u;
	s->idle_timeout_ms = or_default(o->idle_timeout_s, HTTP_DEFAULT_IDLE_TIMEOUT_S) * 1000u;
	s->max_streams = or_default(o->max_streams, HTTP_DEFAULT_STREAMS);
	s->watch_interval_ms = or_default(o->watch_interval_ms, HTTP_DEFAULT_WATCH_MS);
	pthread_mutex_init(&s->stream_lock, NULL);
	pthread_cond_init(&s->stream_wake, NULL);
	s->nworkers = or_default(o->threads, 1);
	s->workers = calloc(s->nworkers, sizeof(*s->workers));
	if (!s->workers) {
		server_free(s);
		return log_err(-ENOMEM, "out of memory");
	}
	for (unsigned i = 0; i < s->nworkers; i++)
		s->workers[i].epfd = s->workers[i].wakefd = -1;
	if (o->tls_cert_pem && o->tls_key_pem) {
		ret = tls_creds_new(o->tls_cert_pem, o->tls_key_pem, &s->tls); /* says why */
		if (ret) {
			server_free(s);
			return ret;
		}
	}
	lfd = listen_on(&sa, salen);
	if (lfd < 0) {
		server_free(s);
		log_err(0, "cannot listen on %s: %s", listen, strerror(-lfd));
		return lfd;
	}
	s->port = bound_port(lfd);
	for (unsigned i = 0; i < s->nworkers; i++) {
		ret = worker_start(s, &s->workers[i]);
		if (ret) {
			close(lfd);
			server_free(s);
			return log_err(ret, "cannot start the HTTP server's threads");
		}
	}
	fo = (struct http_front_opts){
	    .max_conns = or_default(o->max_conns, HTTP_DEFAULT_CONNS),
	    .max_conns_per_ip = o->max_conns_per_ip,
	    .timeout_ms = s->header_timeout_ms,
	    .judge = !s->tls,
	    .adopt = server_adopt,
	    .adopt_arg = s,
	};
	ret = http_front_start(lfd, &fo, &s->front); /* lfd is its now */
	if (ret) {
		server_free(s);
		return log_err(ret, "cannot start the HTTP server's accepting thread");
	}
	if (pthread_create(&s->watcher, NULL, watcher_main, s) == 0)
		s->watcher_started = true;
	else
		log_warn(0, "no thread for event streams: they send nothing");
	*out = s;
	return 0;
}

uint16_t http_port(const struct http_server *s)
{
	return s->port;
}

void http_stop(struct http_server *s)
{
	if (s)
		server_free(s);
}

/* ---- what a handler asks of its request ---- */

const char *http_header(const struct http_request *req, const char *name)
{
	if (!req->conn) {
		const struct http_synth *sy = req->priv;

		return strcasecmp(name, "Authorization") == 0 ? sy->authorization : NULL;
	}
	return http_req_header(&((const struct http_conn *)req->conn)->w->fields, name);
}

const char *http_query_arg(const struct http_request *req, const char *name)
{
	if (!req->conn)
		return url_query_get(&((const struct http_synth *)req->priv)->q, name);
	return url_query_get(&((const struct http_conn *)req->conn)->w->query, name);
}

const char *http_principal(const struct http_request *req)
{
	if (!req->conn)
		return ((const struct http_synth *)req->priv)->principal;
	return ((const struct http_conn *)req->priv)->principal[0]
		   ? ((const struct http_conn *)req->priv)->principal
		   : NULL;
}

int http_set_principal(const struct http_request *req, const char *principal)
{
	struct http_conn *c = req->priv;

	if (!req->conn || strlen(principal) >= sizeof(c->principal))
		return -EINVAL;
	strcpy(c->principal, principal);
	return 0;
}

int http_peer(const struct http_request *req, struct sockaddr_storage *sa)
{
	const struct http_conn *c = req->conn;

	if (!c)
		return -ENOENT;
	memset(sa, 0, sizeof(*sa));
	memcpy(sa, &c->sa, c->salen <= sizeof(*sa) ? c->salen : sizeof(*sa));
	return 0;
}

/* ---- routes ---- */

static bool route_method_is(const struct http_route *r, const char *method)
{
	if (strcmp(r->method, method) == 0)
		return true;
	return strcmp(r->method, "GET") == 0 && strcmp(method, "HEAD") == 0;
}

static bool route_path_is(const struct http_route *r, const char *path)
{
	size_t n;

	if (!r->prefix)
		return strcmp(r->path, path) == 0;
	n = strlen(r->path);
	return strncmp(r->path, path, n) == 0 && path[n] != '\0';
}

const struct http_route *http_route_find(const struct http_route *table,
					 const struct http_request *req, int *status)
{
	const struct http_route *r;
	bool path_known = false;

	for (r = table; r->path; r++) {
		if (!route_path_is(r, req->path))
			continue;
		if (route_method_is(r, req->method))
			return r;
		path_known = true;
	}
	*status = path_known ? 405 : 404;
	return NULL;
}

const char *http_access_name(enum http_access a)
{
	static const char *const names[] = {"anonymous", "user",  "reader",
					    "agent",	 "admin", "owner"};

	return (size_t)a < sizeof(names) / sizeof(names[0]) ? names[a] : "?";
}
