/*
 * front.c - the HTTP server's front door: a request's head judged
 * (http_front_judge, no I/O), then the thread that accepts, peeks at each
 * connection's first bytes and hands it to the server's threads or
 * answers it, and the table of every connection, held or handed over.
 */
#include "http/front.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <netinet/in.h>
#include <unistd.h>

#include "common/jsonw.h"
#include "common/log.h"
#include "common/timeutil.h"

/* ---- the judge ---- */

/* RFC 9110's tchar: the bytes of a method or a header name */
static bool is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static enum http_front_verdict refuse(struct http_front_refusal *why, int status, const char *msg)
{
	why->status = status;
	why->msg = msg;
	return HTTP_FRONT_REFUSE;
}

long http_line(const char *p, const char *end, const char **next)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));

	if (!nl)
		return -1;
	*next = nl + 1;
	return (long)(nl - p) - (nl > p && nl[-1] == '\r');
}

void http_trim(const char **v, size_t *n)
{
	while (*n && (**v == ' ' || **v == '\t'))
		(*v)++, (*n)--;
	while (*n && ((*v)[*n - 1] == ' ' || (*v)[*n - 1] == '\t'))
		(*n)--;
}

/* Content-Length's value: digits that fit 64 bits, or the refusal. */
static bool content_length_ok(const char *v, size_t n, struct http_front_refusal *why)
{
	uint64_t len = 0;

	http_trim(&v, &n);
	if (n == 0) {
		refuse(why, 400, "bad Content-Length");
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned char)v[i] - '0';

		if (d > 9) {
			refuse(why, 400, "bad Content-Length");
			return false;
		}
		if (len > (UINT64_MAX - d) / 10) {
			refuse(why, 413, "request body too large");
			return false;
		}
		len = len * 10 + d;
	}
	return true;
}

static bool version_ok(const char *line, long n)
{
	return n > 9 && (memcmp(line + n - 9, " HTTP/1.1", 9) == 0 ||
			 memcmp(line + n - 9, " HTTP/1.0", 9) == 0);
}

enum http_front_verdict http_front_judge(const char *buf, size_t len,
					 struct http_front_refusal *why)
{
	const char *p = buf, *end = buf + len, *line, *next = end;
	bool full = len >= HTTP_FRONT_HEAD_MAX;
	unsigned fields = 0;
	long n;
	size_t m = 0;

	while (p < end && (*p == '\r' || *p == '\n')) /* empty lines before it are tolerated */
		p++;
	while (p + m < end && m <= HTTP_FRONT_METHOD_MAX && is_tchar((unsigned char)p[m]))
		m++;
	if (m > HTTP_FRONT_METHOD_MAX)
		return refuse(why, 400, "not an HTTP request");
	if (p + m == end)
		return full ? refuse(why, 400, "not an HTTP request") : HTTP_FRONT_MORE;
	if (m == 0 || p[m] != ' ')
		return refuse(why, 400, "not an HTTP request");
	n = http_line(p, end, &next);
	if (n < 0)
		return full ? refuse(why, 414, "request line too long") : HTTP_FRONT_MORE;
	for (long i = (long)m; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return refuse(why, 400, "bad request line");
	if (!version_ok(p, n) || n < (long)m + 11) /* "M / HTTP/1.1" */
		return refuse(why, 400, "bad request line: METHOD TARGET HTTP/1.1");
	for (line = next;; line = next) {
		const char *colon;

		n = http_line(line, end, &next);
		if (n < 0)
			return full ? refuse(why, 431, "request headers too large")
				    : HTTP_FRONT_MORE;
		if (n == 0)
			return HTTP_FRONT_PASS;
		if (++fields > HTTP_FRONT_FIELDS_MAX)
			return refuse(why, 431, "too many request headers");
		if (line[0] == ' ' || line[0] == '\t')
			continue; /* a folded line: the server joins it to the one before */
		colon = memchr(line, ':', (size_t)n);
		if (!colon || colon == line)
			return refuse(why, 400, "bad header line");
		for (const char *c = line; c < colon; c++)
			if (!is_tchar((unsigned char)*c))
				return refuse(why, 400, "bad header line");
		if (colon - line == 14 && strncasecmp(line, "Content-Length", 14) == 0 &&
		    !content_length_ok(colon + 1, (size_t)(line + n - colon - 1), why))
			return HTTP_FRONT_REFUSE;
	}
}

const char *http_reason(int status)
{
	static const struct {
		int status;
		const char *reason;
	} reasons[] = {
	    {100, "Continue"},
	    {200, "OK"},
	    {201, "Created"},
	    {202, "Accepted"},
	    {204, "No Content"},
	    {206, "Partial Content"},
	    {301, "Moved Permanently"},
	    {302, "Found"},
	    {303, "See Other"},
	    {304, "Not Modified"},
	    {307, "Temporary Redirect"},
	    {308, "Permanent Redirect"},
	    {400, "Bad Request"},
	    {401, "Unauthorized"},
	    {403, "Forbidden"},
	    {404, "Not Found"},
	    {405, "Method Not Allowed"},
	    {406, "Not Acceptable"},
	    {408, "Request Timeout"},
	    {409, "Conflict"},
	    {410, "Gone"},
	    {411, "Length Required"},
	    {412, "Precondition Failed"},
	    {413, "Content Too Large"},
	    {414, "URI Too Long"},
	    {415, "Unsupported Media Type"},
	    {416, "Range Not Satisfiable"},
	    {422, "Unprocessable Content"},
	    {429, "Too Many Requests"},
	    {431, "Request Header Fields Too Large"},
	    {500, "Internal Server Error"},
	    {501, "Not Implemented"},
	    {502, "Bad Gateway"},
	    {503, "Service Unavailable"},
	    {504, "Gateway Timeout"},
	    {507, "Insufficient Storage"},
	};

	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reasons[i].status == status)
			return reasons[i].reason;
	return "Unknown";
}

size_t http_front_answer(char *out, size_t max, int status, const char *msg)
{
	struct strbuf body;
	struct jsonw w;
	int n;

	strbuf_init(&body, 1024);
	jsonw_init(&w, &body, false);
	jsonw_obj_begin(&w);
	jsonw_kv_str(&w, "error", msg);
	jsonw_kv_int(&w, "status", status);
	jsonw_obj_end(&w);
	strbuf_addch(&body, '\n');
	n = snprintf(out, max,
		     "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Type: application/json\r\n"
		     "Cache-Control: no-store\r\nContent-Length: %zu\r\n\r\n%s",
		     status, http_reason(status), body.len, body.buf ? body.buf : "");
	strbuf_release(&body);
	return n < 0 ? 0 : (size_t)n < max ? (size_t)n : max - 1;
}

/* ---- the door ---- */

#define LINGER_MS 1000 /* a refused connection drained this long before its close */

/*
 * A slot: free (fd -1), held here (judged or, closing, drained when it
 * sends), or handed over (the server's until http_front_release).  fd,
 * handed and sa under the door's lock; closing and deadline_ms are the
 * accepting thread's.
 */
struct front_conn {
	int fd;
	bool handed, closing;
	socklen_t salen;
	struct sockaddr_storage sa;
	int64_t deadline_ms;
};

struct http_front {
	int lfd, epfd, wakefd;
	http_front_adopt_fn adopt;
	void *adopt_arg;
	bool judge;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	struct front_conn *conns;
	unsigned max_conns, max_per_ip, timeout_ms;
	unsigned high;		 /* slots [0, high) may be in use */
	unsigned nfree;		 /* free slots */
	int64_t accept_again_ms; /* out of descriptors or slots: accepting paused until then */
};

enum { TAG_LISTEN, TAG_WAKE, TAG_CONN };

/* A held connection closed, its slot freed (the accepting thread's). */
static void conn_close(struct http_front *f, struct front_conn *c)
{
	epoll_ctl(f->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	pthread_mutex_lock(&f->lock);
	c->fd = -1;
	f->nfree++;
	pthread_mutex_unlock(&f->lock);
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
	return false;
}

/*
 * A slot for a new connection from sa, taken (under the lock), or NULL:
 * none free, or as many from its address as it may have, held or handed.
 */
static struct front_conn *conn_slot(struct http_front *f, int fd, const struct sockaddr_storage *sa,
				    socklen_t salen)
{
	struct front_conn *free_slot = NULL;
	unsigned from_addr = 0;

	pthread_mutex_lock(&f->lock);
	for (unsigned i = 0; i < f->max_conns; i++) {
		struct front_conn *c = &f->conns[i];

		if (c->fd < 0) {
			if (!free_slot)
				free_slot = c;
			if (i >= f->high)
				break;
		} else if (f->max_per_ip && same_addr(&c->sa, sa) && ++from_addr >= f->max_per_ip) {
			free_slot = NULL;
			break;
		}
	}
	if (free_slot) {
		if ((unsigned)(free_slot - f->conns) >= f->high)
			f->high = (unsigned)(free_slot - f->conns) + 1;
		free_slot->fd = fd;
		free_slot->handed = false;
		free_slot->salen = salen;
		free_slot->sa = *sa;
		f->nfree--;
	}
	pthread_mutex_unlock(&f->lock);
	return free_slot;
}

/* Accepting paused for 100 ms: the connections wait in the listen backlog. */
static void accept_pause(struct http_front *f, int64_t now)
{
	struct epoll_event ev = {.events = 0, .data.u64 = TAG_LISTEN};

	f->accept_again_ms = now + 100;
	epoll_ctl(f->epfd, EPOLL_CTL_MOD, f->lfd, &ev);
}

static bool slot_free(struct http_front *f)
{
	bool any;

	pthread_mutex_lock(&f->lock);
	any = f->nfree > 0;
	pthread_mutex_unlock(&f->lock);
	return any;
}

/* Hands a held connection to the server (its bytes still unread). */
static void conn_hand_over(struct http_front *f, struct front_conn *c)
{
	unsigned slot = (unsigned)(c - f->conns);

	if (f->judge)
		epoll_ctl(f->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	pthread_mutex_lock(&f->lock);
	c->handed = true;
	pthread_mutex_unlock(&f->lock);
	f->adopt(f->adopt_arg, c->fd, &c->sa, c->salen, slot);
}

static void accept_all(struct http_front *f, int64_t now)
{
	for (;;) {
		struct sockaddr_storage sa;
		socklen_t salen = sizeof(sa);
		struct front_conn *c;
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET};
		int fd;

		if (!slot_free(f)) { /* as many as the server takes: not accepted yet */
			accept_pause(f, now);
			return;
		}
		fd = accept4(f->lfd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				log_debug("http: accept: %s; accepting again in 100 ms",
					  strerror(errno));
				accept_pause(f, now);
				return;
			}
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		c = conn_slot(f, fd, &sa, salen);
		if (!c) {
			close(fd);
			continue;
		}
		c->closing = false;
		c->deadline_ms = now + f->timeout_ms;
		if (!f->judge) { /* TLS: its bytes can only be judged once decrypted */
			conn_hand_over(f, c);
			continue;
		}
		ev.data.u64 = TAG_CONN + (uint64_t)(c - f->conns);
		if (epoll_ctl(f->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			http_front_release(f, (unsigned)(c - f->conns));
		}
	}
}

/* Answers a refused connection, then drains it until its client closes or LINGER_MS passes. */
static void conn_refuse(struct http_front *f, struct front_conn *c,
			const struct http_front_refusal *why, int64_t now)
{
	char out[1024];
	size_t n = http_front_answer(out, sizeof(out), why->status, why->msg);

	log_debug("http: refused a connection's first request: %d %s", why->status, why->msg);
	if (send(c->fd, out, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 || shutdown(c->fd, SHUT_WR)) {
		conn_close(f, c);
		return;
	}
	c->closing = true;
	c->deadline_ms = now + LINGER_MS;
}

/* What a closing connection sent is read and dropped; its end closes it. */
static void conn_drain(struct http_front *f, struct front_conn *c)
{
	char buf[4096];
	ssize_t n;

	while ((n = recv(c->fd, buf, sizeof(buf), 0)) > 0)
		;
	if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		conn_close(f, c);
}

static void conn_ready(struct http_front *f, struct front_conn *c, uint32_t events, int64_t now)
{
	char buf[HTTP_FRONT_HEAD_MAX];
	struct http_front_refusal why;
	ssize_t n;

	if (c->closing) {
		conn_drain(f, c);
		return;
	}
	n = recv(c->fd, buf, sizeof(buf), MSG_PEEK);
	if (n <= 0) {
		/* gone before a whole request (n == 0), or an error */
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			conn_close(f, c);
		return;
	}
	switch (http_front_judge(buf, (size_t)n, &why)) {
	case HTTP_FRONT_MORE:
		if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) /* no more will come */
			conn_close(f, c);
		return;
	case HTTP_FRONT_REFUSE:
		conn_refuse(f, c, &why, now);
		return;
	case HTTP_FRONT_PASS:
		break;
	}
	conn_hand_over(f, c);
}

static void expire(struct http_front *f, int64_t now)
{
	unsigned high = 0;

	pthread_mutex_lock(&f->lock);
	for (unsigned i = 0; i < f->high; i++) {
		struct front_conn *c = &f->conns[i];

		if (c->fd >= 0 && !c->handed && now >= c->deadline_ms) {
			/* a head not in in time, or a refused one drained */
			epoll_ctl(f->epfd, EPOLL_CTL_DEL, c->fd, NULL);
			close(c->fd);
			c->fd = -1;
			f->nfree++;
		}
		if (c->fd >= 0)
			high = i + 1;
	}
	f->high = high;
	pthread_mutex_unlock(&f->lock);
	if (f->accept_again_ms && now >= f->accept_again_ms) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_LISTEN};

		f->accept_again_ms = 0;
		epoll_ctl(f->epfd, EPOLL_CTL_MOD, f->lfd, &ev);
	}
}

static void *front_main(void *arg)
{
	struct http_front *f = arg;
	struct epoll_event evs[64];

	for (;;) {
		int n = epoll_wait(f->epfd, evs, 64, 100);
		int64_t now = time_now_ms();

		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;
			struct front_conn *c;
			bool held;

			if (tag == TAG_WAKE)
				return NULL;
			if (tag == TAG_LISTEN) {
				accept_all(f, now);
				continue;
			}
			c = &f->conns[tag - TAG_CONN];
			pthread_mutex_lock(&f->lock);
			held = c->fd >= 0 && !c->handed;
			pthread_mutex_unlock(&f->lock);
			if (held)
				conn_ready(f, c, evs[i].events, now);
		}
		expire(f, now);
	}
}

void http_front_release(struct http_front *f, unsigned slot)
{
	pthread_mutex_lock(&f->lock);
	f->conns[slot].fd = -1;
	f->conns[slot].handed = false;
	f->nfree++;
	pthread_mutex_unlock(&f->lock);
}

void http_front_free(struct http_front *f)
{
	if (!f)
		return;
	if (f->conns)
		for (unsigned i = 0; i < f->max_conns; i++)
			if (f->conns[i].fd >= 0 && !f->conns[i].handed)
				close(f->conns[i].fd);
	free(f->conns);
	if (f->epfd >= 0)
		close(f->epfd);
	if (f->wakefd >= 0)
		close(f->wakefd);
	close(f->lfd);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

int http_front_start(int listen_fd, const struct http_front_opts *o, struct http_front **out)
{
	struct http_front *f = calloc(1, sizeof(*f));
	struct epoll_event ev = {.events = EPOLLIN};
	int ret;

	*out = NULL;
	if (!f) {
		close(listen_fd);
		return -ENOMEM;
	}
	pthread_mutex_init(&f->lock, NULL);
	f->lfd = listen_fd;
	f->adopt = o->adopt;
	f->adopt_arg = o->adopt_arg;
	f->judge = o->judge;
	f->max_conns = o->max_conns ? o->max_conns : 1;
	f->nfree = f->max_conns;
	f->max_per_ip = o->max_conns_per_ip;
	f->timeout_ms = o->timeout_ms;
	f->conns = calloc(f->max_conns, sizeof(*f->conns));
	for (unsigned i = 0; f->conns && i < f->max_conns; i++)
		f->conns[i].fd = -1;
	f->epfd = epoll_create1(EPOLL_CLOEXEC);
	f->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!f->conns || f->epfd < 0 || f->wakefd < 0) {
		ret = f->conns ? -errno : -ENOMEM;
		goto out_free;
	}
	ev.data.u64 = TAG_LISTEN;
	if (epoll_ctl(f->epfd, EPOLL_CTL_ADD, f->lfd, &ev)) {
		ret = -errno;
		goto out_free;
	}
	ev.data.u64 = TAG_WAKE;
	if (epoll_ctl(f->epfd, EPOLL_CTL_ADD, f->wakefd, &ev)) {
		ret = -errno;
		goto out_free;
	}
	ret = -pthread_create(&f->thread, NULL, front_main, f);
	if (ret)
		goto out_free;
	f->thread_started = true;
	*out = f;
	return 0;
out_free:
	http_front_free(f);
	return ret;
}

void http_front_stop(struct http_front *f)
{
	uint64_t one = 1;

	if (!f || !f->thread_started)
		return;
	if (write(f->wakefd, &one, sizeof(one)) != sizeof(one))
		log_warn(0, "http: cannot wake the accepting thread");
	pthread_join(f->thread, NULL);
	f->thread_started = false;
}
