/*
 * test_http_server.c - the HTTP server (http/http.h) on 127.0.0.1, spoken to
 * on raw sockets: pipelined requests answered in order, a chunked body and
 * one sent byte by byte, "100 Continue", HEAD, HTTP/1.0 with and without
 * keep-alive, bodies refused before they are read, a bad later request on
 * a kept-alive connection, a deferred answer completed by another thread
 * (and the request behind it answered after it), an answer larger than
 * the socket's buffers, and the idle and header timeouts.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "http/http.h"

#define BIG_BYTES (4u << 20)

static void *complete_later(void *arg)
{
	struct http_pending *p = arg;
	struct timespec ts = {0, 100 * 1000 * 1000};

	nanosleep(&ts, NULL);
	strbuf_addstr(&http_pending_response(p)->body, "{\"deferred\": true}\n");
	http_pending_done(p);
	return NULL;
}

static void handler(void *arg, const struct http_request *req, struct http_response *res)
{
	(void)arg;
	if (strcmp(req->path, "/defer") == 0) {
		pthread_t t;

		assert_int_equal(pthread_create(&t, NULL, complete_later, http_defer(req)), 0);
		pthread_detach(t);
		return;
	}
	if (strcmp(req->path, "/big") == 0) {
		res->content_type = "text/plain";
		for (unsigned i = 0; i < BIG_BYTES / 64; i++)
			strbuf_addf(&res->body, "%063u\n", i);
		return;
	}
	/* /echo and anything else: what the server read */
	res->content_type = "text/plain";
	strbuf_addf(&res->body, "%s %s x=%s a=%s len=%zu body=", req->method, req->path,
		    http_query_arg(req, "x") ? http_query_arg(req, "x") : "-",
		    http_header(req, "X-A") ? http_header(req, "X-A") : "-", req->body_len);
	strbuf_add(&res->body, req->body ? req->body : "", req->body_len);
}

static struct http_server *start(unsigned idle_s, unsigned header_s)
{
	struct http_options o = {
	    .max_body = 100000, .idle_timeout_s = idle_s, .header_timeout_s = header_s};
	struct http_server *s;

	assert_int_equal(http_start_opts("127.0.0.1:0", &o, handler, NULL, &s), 0);
	return s;
}

static int dial(const struct http_server *s)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(http_port(s))};
	struct timeval tv = {10, 0};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void put(int fd, const char *s)
{
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

/* One answer: its status, headers (NUL-ended) and body (Content-Length's bytes). */
struct answer {
	int status;
	char head[2048];
	char *body;
	size_t body_len;
};

static char pending[1 << 16]; /* bytes read past the last answer (one connection at a time) */
static size_t npending;

static bool read_answer(int fd, struct answer *a, bool head_only)
{
	char *end;
	size_t want;
	const char *cl;

	memset(a, 0, sizeof(*a));
	for (;;) {
		ssize_t n;

		pending[npending] = '\0';
		end = strstr(pending, "\r\n\r\n");
		if (end)
			break;
		n = read(fd, pending + npending, sizeof(pending) - npending - 1);
		if (n <= 0)
			return false;
		npending += (size_t)n;
	}
	memcpy(a->head, pending, (size_t)(end - pending));
	a->status = atoi(pending + 9);
	cl = strcasestr(a->head, "Content-Length: ");
	want = cl && !head_only ? strtoul(cl + 16, NULL, 10) : 0;
	a->body = malloc(want + 1);
	assert_non_null(a->body);
	npending -= (size_t)(end + 4 - pending);
	memmove(pending, end + 4, npending);
	while (a->body_len < want) {
		size_t take = npending < want - a->body_len ? npending : want - a->body_len;
		ssize_t n;

		memcpy(a->body + a->body_len, pending, take);
		a->body_len += take;
		npending -= take;
		memmove(pending, pending + take, npending);
		if (a->body_len == want)
			break;
		n = read(fd, pending, sizeof(pending) - 1);
		if (n <= 0)
			return false;
		npending = (size_t)n;
	}
	a->body[a->body_len] = '\0';
	return true;
}

static void expect(int fd, int status, const char *body)
{
	struct answer a;

	assert_true(read_answer(fd, &a, false));
	assert_int_equal(a.status, status);
	if (body)
		assert_string_equal(a.body, body);
	free(a.body);
}

/* The server closed the connection (read returns 0, or a reset). */
static bool closed(int fd)
{
	char c;

	return npending == 0 && read(fd, &c, 1) <= 0;
}

/* Bodies larger than a connection's first read buffer (16 KiB), whole and chunked. */
static void big_bodies(int fd)
{
	static const char prefix[] = "POST /echo x=- a=- len=60000 body=";
	const size_t at = sizeof(prefix) - 1;
	struct strbuf req, want;
	struct answer a;

	strbuf_init(&req, 1 << 20);
	strbuf_init(&want, 1 << 20);
	strbuf_addstr(&want, prefix);
	for (int i = 0; i < 60000; i++)
		strbuf_addch(&want, (char)('a' + i % 26));
	strbuf_addstr(&req, "POST /echo HTTP/1.1\r\nContent-Length: 60000\r\n\r\n");
	strbuf_add(&req, want.buf + at, 60000);
	strbuf_addstr(&req, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
	for (int i = 0; i < 60; i++) {
		strbuf_addstr(&req, "3e8\r\n");
		strbuf_add(&req, want.buf + at + i * 1000, 1000);
		strbuf_addstr(&req, "\r\n");
	}
	strbuf_addstr(&req, "0\r\n\r\n");
	assert_int_equal(write(fd, req.buf, req.len), (ssize_t)req.len);
	for (int k = 0; k < 2; k++) {
		assert_true(read_answer(fd, &a, false));
		assert_int_equal(a.status, 200);
		assert_int_equal(a.body_len, want.len);
		assert_memory_equal(a.body, want.buf, want.len);
		free(a.body);
	}
	strbuf_release(&req);
	strbuf_release(&want);
}

static void test_pipelined_and_chunked(void **state)
{
	struct http_server *s = start(0, 0);
	int fd = dial(s);
	const char *chunked = "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
			      "3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\n\r\n";

	(void)state;
	npending = 0;
	put(fd, "GET /echo?x=1 HTTP/1.1\r\nX-A: one\r\n\r\nGET /echo?x=a+b%21 HTTP/1.1\r\n\r\n"
		"POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
	expect(fd, 200, "GET /echo x=1 a=one len=0 body=");
	expect(fd, 200, "GET /echo x=a b! a=- len=0 body=");
	expect(fd, 200, "POST /echo x=- a=- len=5 body=hello");
	/* a chunked body, then the same byte by byte */
	put(fd, chunked);
	expect(fd, 200, "POST /echo x=- a=- len=7 body=abcdefg");
	for (const char *p = chunked; *p; p++) {
		assert_int_equal(write(fd, p, 1), 1);
		if (p[1] && (p - chunked) % 7 == 0) {
			struct timespec ts = {0, 1000 * 1000};

			nanosleep(&ts, NULL);
		}
	}
	expect(fd, 200, "POST /echo x=- a=- len=7 body=abcdefg");
	big_bodies(fd);
	close(fd);
	http_stop(s);
}

static void test_continue_head_and_http10(void **state)
{
	struct http_server *s = start(0, 0);
	int fd = dial(s);
	struct answer get, head;

	(void)state;
	npending = 0;
	put(fd, "POST /echo HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
	expect(fd, 100, NULL);
	put(fd, "xyz");
	expect(fd, 200, "POST /echo x=- a=- len=3 body=xyz");
	/* HEAD: GET's length, no body; the next answer right behind it */
	put(fd,
	    "GET /echo HTTP/1.1\r\n\r\nHEAD /echo HTTP/1.1\r\n\r\nGET /echo?x=2 HTTP/1.1\r\n\r\n");
	assert_true(read_answer(fd, &get, false));
	assert_true(read_answer(fd, &head, true));
	assert_int_equal(head.status, 200);
	/* the handler saw "HEAD": its body, one byte longer than GET's, counted and not sent */
	assert_non_null(strstr(head.head, "Content-Length: 30"));
	assert_int_equal(get.body_len, 29);
	expect(fd, 200, "GET /echo x=2 a=- len=0 body=");
	free(get.body);
	free(head.body);
	close(fd);
	/* HTTP/1.0: closed after its answer, unless it asks for keep-alive */
	fd = dial(s);
	npending = 0;
	put(fd, "GET /echo HTTP/1.0\r\n\r\n");
	assert_true(read_answer(fd, &get, false));
	assert_non_null(strstr(get.head, "Connection: close"));
	free(get.body);
	assert_true(closed(fd));
	close(fd);
	fd = dial(s);
	npending = 0;
	put(fd, "GET /echo HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	assert_true(read_answer(fd, &get, false));
	assert_non_null(strstr(get.head, "Connection: keep-alive"));
	free(get.body);
	put(fd, "GET /echo?x=3 HTTP/1.0\r\n\r\n");
	expect(fd, 200, "GET /echo x=3 a=- len=0 body=");
	assert_true(closed(fd));
	close(fd);
	http_stop(s);
}

static void refused_then_closed(struct http_server *s, const char *req, int status)
{
	int fd = dial(s);
	struct answer a;

	npending = 0;
	put(fd, req);
	if (strstr(req, "Bad Name"))
		expect(fd, 200, NULL); /* the good one first */
	assert_true(read_answer(fd, &a, false));
	assert_int_equal(a.status, status);
	assert_non_null(strstr(a.head, "Content-Type: application/json"));
	assert_non_null(strstr(a.head, "Connection: close"));
	assert_non_null(strstr(a.body, "\"error\""));
	free(a.body);
	assert_true(closed(fd));
	close(fd);
}

static void test_refusals(void **state)
{
	struct http_server *s = start(0, 0);

	(void)state;
	/* bodies refused before they are read: over the cap, to a GET */
	refused_then_closed(s, "POST /echo HTTP/1.1\r\nContent-Length: 100001\r\n\r\n", 413);
	refused_then_closed(s, "GET /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", 413);
	refused_then_closed(s,
			    "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
			    "186a1\r\n",
			    413);
	refused_then_closed(s, "DELETE /echo HTTP/1.1\r\n\r\n", 405);
	refused_then_closed(s, "GET /echo?x=%zz HTTP/1.1\r\n\r\n", 400);
	refused_then_closed(s, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
			    400);
	/* a bad request after a good one on the same connection: one JSON error too */
	refused_then_closed(
	    s, "GET /echo HTTP/1.1\r\n\r\nGET /echo HTTP/1.1\r\nBad Name: x\r\n\r\n", 400);
	http_stop(s);
}

static void test_deferred_and_big(void **state)
{
	struct http_server *s = start(0, 0);
	int fd = dial(s);
	struct answer a;

	(void)state;
	npending = 0;
	/* the request behind a deferred one waits for it */
	put(fd, "GET /defer HTTP/1.1\r\n\r\nGET /echo?x=after HTTP/1.1\r\n\r\n");
	expect(fd, 200, "{\"deferred\": true}\n");
	expect(fd, 200, "GET /echo x=after a=- len=0 body=");
	/* 4 MiB: more than the socket takes at once, read slowly */
	put(fd, "GET /big HTTP/1.1\r\n\r\n");
	assert_true(read_answer(fd, &a, false));
	assert_int_equal(a.status, 200);
	assert_int_equal(a.body_len, BIG_BYTES);
	for (unsigned i = 0; i < BIG_BYTES / 64; i += 4099) {
		char line[65];

		snprintf(line, sizeof(line), "%063u\n", i);
		assert_memory_equal(a.body + (size_t)i * 64, line, 64);
	}
	free(a.body);
	put(fd, "GET /echo HTTP/1.1\r\n\r\n"); /* the connection goes on */
	expect(fd, 200, "GET /echo x=- a=- len=0 body=");
	close(fd);
	/* clients gone (reset) before their big answers: the server goes on */
	for (int i = 0; i < 3; i++) {
		struct linger reset = {1, 0};

		fd = dial(s);
		put(fd, "GET /big HTTP/1.1\r\n\r\nGET /big HTTP/1.1\r\n\r\n");
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
		close(fd);
	}
	fd = dial(s);
	npending = 0;
	put(fd, "GET /echo HTTP/1.1\r\n\r\n");
	expect(fd, 200, "GET /echo x=- a=- len=0 body=");
	close(fd);
	http_stop(s);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * An idle keep-alive connection closed after the idle timeout (5 s), one
 * whose next request stopped half-way after the header timeout (1 s); a
 * worker looks once a second, so each may take a second more.
 */
static void test_timeouts(void **state)
{
	struct http_server *s = start(5, 1);
	int fd = dial(s);
	double t;

	(void)state;
	npending = 0;
	put(fd, "GET /echo HTTP/1.1\r\n\r\n");
	expect(fd, 200, NULL);
	t = now_s();
	assert_true(closed(fd));
	assert_true(now_s() - t >= 4.5);
	close(fd);
	fd = dial(s);
	npending = 0;
	put(fd, "GET /echo HTTP/1.1\r\n\r\nGET /echo HTTP/1.1\r\n"); /* the second never ends */
	expect(fd, 200, NULL);
	t = now_s();
	assert_true(closed(fd));
	assert_true(now_s() - t >= 0.5 && now_s() - t < 4.5);
	close(fd);
	http_stop(s);
}

/* HTTPS without GnuTLS on the machine: a clear refusal to start, nothing half-made. */
static void test_tls_without_gnutls(void **state)
{
	struct http_options o = {.tls_cert_pem = "-----BEGIN CERTIFICATE-----\n",
				 .tls_key_pem = "-----BEGIN PRIVATE KEY-----\n"};
	struct http_server *s = (struct http_server *)&o;

	(void)state;
	setenv("JOBSCOPE_GNUTLS_LIBRARY", "/nonexistent/libgnutls.so.30", 1);
	assert_int_equal(http_start_opts("127.0.0.1:0", &o, handler, NULL, &s), -ENOENT);
	assert_null(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pipelined_and_chunked),
	    cmocka_unit_test(test_continue_head_and_http10),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_deferred_and_big),
	    cmocka_unit_test(test_timeouts),
	    cmocka_unit_test(test_tls_without_gnutls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
