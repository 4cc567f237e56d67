/*
 * http.c - the HTTP server: libmicrohttpd with internal epoll threads,
 * one handler for every request, bodies refused or capped, answers
 * deferred by suspending the connection; connections accepted by the
 * front door (front.h), which answers a first request MHD would answer in HTML.
 */
#include "http/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/hash.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "http/front.h"
#include "http/urlquery.h"

#define HTTP_CONN_MEMORY (16 * 1024)

struct http_server {
	struct MHD_Daemon *d;
	struct http_front *front; /* our accepting thread (front.h); NULL over TLS */
	char mhd_msg[256];	  /* libmicrohttpd's last message, said in ours */
	size_t max_body;	  /* 0: GET only */
	http_handler_fn fn;
	void *arg;
	uint16_t port;
	unsigned idle_timeout_s;
	bool timeout_per_request; /* TLS: each request's headers in, the idle timeout set */
	/*
	 * Orders a deferred answer's threads: the handler's (which suspends
	 * the connection), the one that completes it (which resumes it), and
	 * the handler's again once resumed (which sends it, after which the
	 * request is freed).  The server's, not the request's: the completing
	 * thread still holds it when the resumed connection may already be
	 * answered and freed.
	 */
	pthread_mutex_t defer_lock;
	/* event streams (http_watch): the list, its count and the watcher's state, under
	 * stream_lock */
	pthread_mutex_t stream_lock;
	pthread_cond_t stream_wake;
	pthread_t watcher;
	bool watcher_started, stopping;
	struct http_stream *streams;
	unsigned nstreams, max_streams, watch_interval_ms;
};

/*
 * An event stream.  Its paths are asked on libmicrohttpd's thread, in
 * stream_read, as any request's handler runs: never on the watcher's, so a
 * server's handlers keep their threading (the agent's are single-threaded).
 * With nothing to send that thread suspends the connection; every watch
 * interval the watcher marks each stream due and resumes the suspended
 * ones.  Who sets suspended back to false resumes the connection, once.
 * The list, due and suspended under the server's stream_lock; the rest is
 * the connection's thread's.  Freed with its response (stream_free).
 */
struct http_stream {
	struct http_server *s;
	struct MHD_Connection *c;
	struct http_stream *next;
	bool suspended, due;
	char auth[512];			    /* the Authorization header, "" for none */
	char principal[HTTP_PRINCIPAL_MAX]; /* the opening request's caller, "" for none */
	size_t npaths;
	char path[HTTP_WATCH_PATHS][HTTP_WATCH_PATH_MAX];
	char event[HTTP_WATCH_PATHS][32];
	uint64_t last_hash[HTTP_WATCH_PATHS];
	bool sent[HTTP_WATCH_PATHS];
	int64_t last_write_ms;
	struct strbuf out; /* events not yet written */
	size_t out_off;
};

/* A request the server makes itself: its query and Authorization header. */
struct http_synth {
	struct url_query q;
	const char *authorization;
	const char *principal; /* the stream's caller, NULL for none */
};

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

const char *http_query_arg(const struct http_request *req, const char *name)
{
	if (!req->conn)
		return url_query_get(&((const struct http_synth *)req->priv)->q, name);
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

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

static enum MHD_Result send_response(struct MHD_Connection *c, struct http_response *res)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(res->body.len, res->body.buf ? res->body.buf : "",
					    MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", res->content_type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	for (size_t i = 0; i < HTTP_MAX_HEADERS && res->headers[i].name; i++)
		MHD_add_response_header(r, res->headers[i].name, res->headers[i].value);
	ret = MHD_queue_response(c, (unsigned)res->status, r);
	MHD_destroy_response(r);
	return ret;
}

/*
 * A request in flight: its body so far, and a deferred answer (its flags
 * under the server's defer_lock).
 */
struct http_conn {
	struct strbuf body;
	bool too_big;
	struct http_server *s;
	struct MHD_Connection *c;
	bool deferred, suspended, done;
	struct http_response res;	    /* the deferred answer */
	struct http_stream *watch;	    /* http_watch's, until its answer is queued */
	char principal[HTTP_PRINCIPAL_MAX]; /* http_set_principal's, "" until then */
};

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_conn *hc = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (!hc)
		return;
	strbuf_release(&hc->body);
	strbuf_release(&hc->res.body);
	if (hc->watch)
		strbuf_release(&hc->watch->out);
	free(hc->watch);
	free(hc);
	*con_cls = NULL;
}

static bool is_method(const char *m, const char *want)
{
	return strcmp(m, want) == 0;
}

/* Answers a request at once (on the first call: its body is never read). */
static enum MHD_Result answer_now(struct MHD_Connection *c, int status, const char *msg)
{
	struct http_response res = {status, "application/json; charset=utf-8", {0}};
	enum MHD_Result ret;

	strbuf_init(&res.body, 4096);
	http_error(&res, status, msg);
	ret = send_response(c, &res);
	strbuf_release(&res.body);
	return ret;
}

struct http_pending *http_defer(const struct http_request *req)
{
	struct http_conn *hc = req->priv;

	hc->deferred = true;
	hc->res.status = 200;
	hc->res.content_type = "application/json; charset=utf-8";
	strbuf_init(&hc->res.body, 64 << 20);
	return (struct http_pending *)hc;
}

struct http_response *http_pending_response(struct http_pending *p)
{
	return &((struct http_conn *)p)->res;
}

void http_pending_done(struct http_pending *p)
{
	struct http_conn *hc = (struct http_conn *)p;
	struct http_server *s = hc->s;

	/* once resumed, hc may be answered and freed: not touched after the unlock */
	pthread_mutex_lock(&s->defer_lock);
	hc->done = true;
	if (hc->suspended)
		MHD_resume_connection(hc->c);
	pthread_mutex_unlock(&s->defer_lock);
}

/* The handler deferred its answer: suspend until it is done (or send it, if it already is). */
static enum MHD_Result wait_deferred(struct http_conn *hc)
{
	bool done;

	pthread_mutex_lock(&hc->s->defer_lock);
	done = hc->done;
	if (!done) {
		hc->suspended = true;
		MHD_suspend_connection(hc->c);
	}
	pthread_mutex_unlock(&hc->s->defer_lock);
	return done ? send_response(hc->c, &hc->res) : MHD_YES;
}

/* ---- event streams ---- */

int http_watch(const struct http_request *req, const char *const *paths, const char *const *events,
	       size_t n)
{
	struct http_conn *hc = req->priv;
	const char *auth = http_header(req, "Authorization");
	struct http_stream *st;

	if (!req->conn || n == 0 || n > HTTP_WATCH_PATHS || hc->watch)
		return -EINVAL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	if (auth && strlen(auth) >= sizeof(st->auth))
		goto bad;
	snprintf(st->auth, sizeof(st->auth), "%s", auth ? auth : "");
	snprintf(st->principal, sizeof(st->principal), "%s", hc->principal);
	for (size_t i = 0; i < n; i++) {
		if (strlen(paths[i]) >= sizeof(st->path[i]) || paths[i][0] != '/' ||
		    strlen(events[i]) >= sizeof(st->event[i]) || strpbrk(events[i], "\r\n"))
			goto bad;
		strcpy(st->path[i], paths[i]);
		strcpy(st->event[i], events[i]);
	}
	st->npaths = n;
	st->s = hc->s;
	st->c = hc->c;
	st->due = true; /* its first events at once */
	strbuf_init(&st->out, 64 << 20);
	hc->watch = st;
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

/* Asks st's paths through the server's own handler; the events for what changed into st->out. */
static void stream_poll(struct http_server *s, struct http_stream *st, int64_t now_ms)
{
	size_t before = st->out.len;

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
			add_event(&st->out, res.status == 200 ? st->event[i] : "error", &res.body);
			st->sent[i] = true;
			st->last_hash[i] = h;
		}
		strbuf_release(&res.body);
	}
	if (st->out.len == before && now_ms - st->last_write_ms >= HTTP_WATCH_PING_MS)
		strbuf_addstr(&st->out, ": ping\n\n");
	if (st->out.len != before)
		st->last_write_ms = now_ms;
}

/* Copies what is queued to buf; 0 when nothing is. */
static ssize_t stream_take(struct http_stream *st, char *buf, size_t max)
{
	size_t left = st->out.len - st->out_off, n = left < max ? left : max;

	memcpy(buf, st->out.buf + st->out_off, n);
	st->out_off += n;
	if (st->out_off == st->out.len) {
		strbuf_reset(&st->out);
		st->out_off = 0;
	}
	return (ssize_t)n;
}

/*
 * libmicrohttpd's thread: the events queued; else, when due, the paths
 * asked again; else a suspension until the watcher's next round.
 */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct http_stream *st = cls;
	struct http_server *s = st->s;

	(void)pos;
	for (;;) {
		bool due;

		if (st->out.len > st->out_off)
			return stream_take(st, buf, max);
		pthread_mutex_lock(&s->stream_lock);
		if (s->stopping) {
			pthread_mutex_unlock(&s->stream_lock);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		due = st->due;
		st->due = false;
		if (!due) {
			st->suspended = true;
			MHD_suspend_connection(st->c);
			pthread_mutex_unlock(&s->stream_lock);
			return 0;
		}
		pthread_mutex_unlock(&s->stream_lock);
		stream_poll(s, st, time_now_ms());
	}
}

/* The response is gone (the client went away, a write failed, the server stops). */
static void stream_free(void *cls)
{
	struct http_stream *st = cls;
	struct http_server *s = st->s;
	struct http_stream **pp;

	pthread_mutex_lock(&s->stream_lock);
	for (pp = &s->streams; *pp; pp = &(*pp)->next) {
		if (*pp == st) {
			*pp = st->next;
			s->nstreams--;
			break;
		}
	}
	pthread_mutex_unlock(&s->stream_lock);
	strbuf_release(&st->out);
	free(st);
}

/* The handler called http_watch: queue the stream's answer (or 503 when there are too many). */
static enum MHD_Result send_stream(struct http_conn *hc)
{
	struct http_server *s = hc->s;
	struct http_stream *st = hc->watch;
	struct MHD_Response *r;
	enum MHD_Result ret;

	pthread_mutex_lock(&s->stream_lock);
	if (s->nstreams >= s->max_streams || s->stopping) {
		pthread_mutex_unlock(&s->stream_lock);
		return answer_now(hc->c, 503, "too many event streams; try again later");
	}
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, st, stream_free);
	if (!r) {
		pthread_mutex_unlock(&s->stream_lock);
		return MHD_NO;
	}
	hc->watch = NULL; /* the response's now: stream_free */
	st->next = s->streams;
	s->streams = st;
	s->nstreams++;
	pthread_mutex_unlock(&s->stream_lock);
	MHD_add_response_header(r, "Content-Type", "text/event-stream; charset=utf-8");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Accel-Buffering", "no");
	ret = MHD_queue_response(hc->c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/*
 * Resumes the suspended streams (all due, or all ending when the server
 * stops); resumed outside the lock, each by the one who took it off.
 */
static void streams_round(struct http_server *s, struct MHD_Connection **resume)
{
	size_t n = 0;

	for (struct http_stream *st = s->streams; st; st = st->next) {
		st->due = true;
		if (st->suspended) {
			st->suspended = false;
			resume[n++] = st->c; /* suspended: alive until resumed */
		}
	}
	pthread_mutex_unlock(&s->stream_lock);
	for (size_t i = 0; i < n; i++)
		MHD_resume_connection(resume[i]);
	pthread_mutex_lock(&s->stream_lock);
}

static void *watcher_main(void *arg)
{
	struct http_server *s = arg;
	struct MHD_Connection **resume = calloc(s->max_streams, sizeof(*resume));

	pthread_mutex_lock(&s->stream_lock);
	while (!s->stopping && resume) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += (long)(s->watch_interval_ms % 1000) * 1000000L;
		until.tv_sec += s->watch_interval_ms / 1000 + until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&s->stream_wake, &s->stream_lock, &until);
		if (!s->stopping)
			streams_round(s, resume);
	}
	pthread_mutex_unlock(&s->stream_lock);
	free(resume);
	return NULL;
}

/* Ends every stream: each suspended one is resumed to read its end. */
static void streams_stop(struct http_server *s)
{
	struct MHD_Connection **resume;

	pthread_mutex_lock(&s->stream_lock);
	s->stopping = true;
	pthread_cond_signal(&s->stream_wake);
	pthread_mutex_unlock(&s->stream_lock);
	if (s->watcher_started)
		pthread_join(s->watcher, NULL);
	pthread_mutex_lock(&s->stream_lock);
	resume = calloc(s->max_streams, sizeof(*resume));
	if (resume)
		streams_round(s, resume);
	pthread_mutex_unlock(&s->stream_lock);
	free(resume);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct http_server *s = cls;
	struct http_conn *hc = *con_cls;
	struct http_request req = {method, url, c, NULL, 0, hc};
	struct http_response res = {200, "application/json; charset=utf-8", {0}};
	enum MHD_Result ret;

	(void)version;
	if (!hc) {
		/*
		 * The headers.  A refused request (a method we do not serve, a
		 * body larger than the cap) is answered now, so its body is
		 * never read; libmicrohttpd then closes the connection.  Others
		 * are answered once the body (if any) is in, so the connection
		 * is kept alive.
		 */
		const char *clen =
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
		unsigned long long len = clen ? strtoull(clen, NULL, 10) : 0;
		bool post = is_method(method, "POST");

		/*
		 * headers in: from now on the connection may idle as long as
		 * keep-alive allows.  Over TLS only: without it the front door
		 * held the first request's headers to their timeout, and the
		 * daemon's timeout is the idle one.  (A connection of its own
		 * timeout is on libmicrohttpd's list that each turn of its
		 * loop walks whole: at 2,000 agents, most of its time.)
		 */
		if (s->timeout_per_request)
			MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
						  s->idle_timeout_s);
		if (!is_method(method, "GET") && !is_method(method, "HEAD") && !post)
			return answer_now(c, 405, "method not allowed");
		if (post && s->max_body == 0)
			return answer_now(c, 405, "method not allowed: use GET");
		if (!post && len > 0)
			return answer_now(c, 413, "this endpoint takes no request body");
		if (len > s->max_body && post)
			return answer_now(c, 413, "request body too large");
		hc = calloc(1, sizeof(*hc));
		if (!hc)
			return MHD_NO;
		strbuf_init(&hc->body, s->max_body ? s->max_body : 1);
		hc->s = s;
		hc->c = c;
		*con_cls = hc;
		return MHD_YES;
	}
	if (hc->deferred) { /* resumed: the answer is done once its thread lets go */
		bool done;

		pthread_mutex_lock(&s->defer_lock);
		done = hc->done;
		pthread_mutex_unlock(&s->defer_lock);
		return done ? send_response(c, &hc->res) : MHD_YES;
	}
	if (*upload_data_size != 0) {
		/* chunked bodies have no Content-Length: the cap is checked here too */
		if (!hc->too_big && strbuf_add(&hc->body, upload_data, *upload_data_size))
			hc->too_big = true;
		*upload_data_size = 0;
		return MHD_YES;
	}
	strbuf_init(&res.body, 64 << 20);
	if (hc->too_big) {
		http_error(&res, 413, "request body too large");
	} else {
		req.body = hc->body.buf ? hc->body.buf : "";
		req.body_len = hc->body.len;
		s->fn(s->arg, &req, &res);
	}
	if (hc->deferred) {
		strbuf_release(&res.body);
		return wait_deferred(hc);
	}
	if (hc->watch) {
		strbuf_release(&res.body);
		return send_stream(hc);
	}
	ret = send_response(c, &res);
	strbuf_release(&res.body);
	return ret;
}

const char *http_header(const struct http_request *req, const char *name)
{
	if (!req->conn) {
		const struct http_synth *sy = req->priv;

		return strcasecmp(name, "Authorization") == 0 ? sy->authorization : NULL;
	}
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

/*
 * libmicrohttpd's own messages (a bind that failed, a TLS key refused): kept
 * for the failure's message and logged at debug level, never printed raw.
 */
static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct http_server *s = cls;
	size_t n;

	vsnprintf(s->mhd_msg, sizeof(s->mhd_msg), fmt, ap);
	n = strlen(s->mhd_msg);
	while (n && (s->mhd_msg[n - 1] == '\n' || s->mhd_msg[n - 1] == '\r'))
		s->mhd_msg[--n] = '\0';
	log_debug("libmicrohttpd: %s", s->mhd_msg);
}

int http_start(const char *listen, http_handler_fn fn, void *arg, struct http_server **out)
{
	static const struct http_options none;

	return http_start_opts(listen, &none, fn, arg, out);
}

static void server_free(struct http_server *s)
{
	pthread_mutex_destroy(&s->defer_lock);
	pthread_mutex_destroy(&s->stream_lock);
	pthread_cond_destroy(&s->stream_wake);
	free(s);
}

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

int http_start_opts(const char *listen, const struct http_options *o, http_handler_fn fn, void *arg,
		    struct http_server **out)
{
	struct sockaddr_storage sa;
	const union MHD_DaemonInfo *info;
	struct http_server *s;
	unsigned salen, threads = or_default(o->threads, 1);
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG |
			 MHD_ALLOW_SUSPEND_RESUME;
	struct MHD_OptionItem opts[16];
	size_t n = 0;
	bool tls = o->tls_cert_pem && o->tls_key_pem;
	int lfd = -1;

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
	pthread_mutex_init(&s->defer_lock, NULL);
	pthread_mutex_init(&s->stream_lock, NULL);
	pthread_cond_init(&s->stream_wake, NULL);
	s->max_streams = or_default(o->max_streams, HTTP_DEFAULT_STREAMS);
	s->watch_interval_ms = or_default(o->watch_interval_ms, HTTP_DEFAULT_WATCH_MS);
	s->idle_timeout_s = or_default(o->idle_timeout_s, HTTP_DEFAULT_IDLE_TIMEOUT_S);
	if (sa.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (tls) {
		/* TLS bytes cannot be judged before the handshake: libmicrohttpd accepts itself */
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &sa};
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096, NULL};
	} else {
		/* the front door (front.h) accepts, judges first requests, hands over the rest */
		lfd = listen_on(&sa, salen);
		if (lfd < 0) {
			server_free(s);
			log_err(0, "cannot listen on %s: %s", listen, strerror(-lfd));
			return lfd;
		}
		flags |= MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
	}
	opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT,
					    or_default(o->max_conns, HTTP_DEFAULT_CONNS), NULL};
	/*
	 * Over TLS libmicrohttpd reads the first request's headers: the header
	 * timeout until they are in, then on_request gives the connection the
	 * idle one.  Otherwise the front door held them to the header timeout,
	 * and every connection has the idle timeout.
	 */
	s->timeout_per_request = tls;
	opts[n++] = (struct MHD_OptionItem){
	    MHD_OPTION_CONNECTION_TIMEOUT,
	    tls ? or_default(o->header_timeout_s, HTTP_DEFAULT_HEADER_TIMEOUT_S)
		: s->idle_timeout_s,
	    NULL};
	/* headers and the read buffer of a connection (bodies go to our own buffer) */
	opts[n++] =
	    (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_CONN_MEMORY, NULL};
	opts[n++] =
	    (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, NULL};
	if (o->max_conns_per_ip)
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
						    o->max_conns_per_ip, NULL};
	if (threads > 1)
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, threads, NULL};
	if (tls) {
		if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			server_free(s);
			return log_err(-ENOTSUP, "this libmicrohttpd has no TLS");
		}
		flags |= MHD_USE_TLS;
		opts[n++] =
		    (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)o->tls_key_pem};
		opts[n++] =
		    (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)o->tls_cert_pem};
	}
	/* its own messages through ours: a failure's detail in our message, not a raw line before
	 * it */
	opts[n++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, s};
	opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_ARRAY, opts,
				MHD_OPTION_END);
	if (!s->d) {
		char why[300];

		if (lfd >= 0)
			close(lfd);
		const char *colon = strrchr(s->mhd_msg, ':');

		/* "Failed to bind to port 0: Address already in use": the port is ours
		 * (MHD was given the whole address), the reason is what to say */
		snprintf(why, sizeof(why), "%s",
			 strncmp(s->mhd_msg, "Failed to bind", 14) == 0 && colon ? colon + 2
										 : s->mhd_msg);
		server_free(s);
		if (why[0]) {
			log_err(0, "cannot listen on %s: %s", listen, why);
			return -EADDRINUSE;
		}
		return log_err(-EADDRINUSE,
			       "cannot listen on %s (in use, not an address of this "
			       "machine, or a bad TLS key or certificate?)",
			       listen);
	}
	if (lfd >= 0) {
		struct http_front_opts fo = {
		    .max_conns = or_default(o->max_conns, HTTP_DEFAULT_CONNS),
		    .max_conns_per_ip = o->max_conns_per_ip,
		    .timeout_ms =
			or_default(o->header_timeout_s, HTTP_DEFAULT_HEADER_TIMEOUT_S) * 1000u,
		};
		int ret;

		s->port = bound_port(lfd);
		ret = http_front_start(lfd, s->d, &fo, &s->front); /* lfd is its now */
		if (ret) {
			MHD_stop_daemon(s->d);
			server_free(s);
			return log_err(ret, "cannot start the HTTP server's accepting thread");
		}
	} else {
		info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
		s->port = info ? info->port : 0;
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
	if (!s)
		return;
	streams_stop(s);
	http_front_stop(s->front); /* nothing handed over while libmicrohttpd stops */
	MHD_stop_daemon(s->d);
	server_free(s);
}

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
	struct http_conn *hc = req->priv;

	if (!req->conn || strlen(principal) >= sizeof(hc->principal))
		return -EINVAL;
	strcpy(hc->principal, principal);
	return 0;
}

int http_peer(const struct http_request *req, struct sockaddr_storage *sa)
{
	const union MHD_ConnectionInfo *ci;
	socklen_t len;

	if (!req->conn)
		return -ENOENT;
	ci = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!ci || !ci->client_addr)
		return -ENOENT;
	len = ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						     : sizeof(struct sockaddr_in);
	memset(sa, 0, sizeof(*sa));
	memcpy(sa, ci->client_addr, len);
	return 0;
}
