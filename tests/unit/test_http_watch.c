/*
 * test_http_watch.c - the HTTP server's event streams (http/http.h,
 * http_watch) on a real server on 127.0.0.1: the first event at once, an
 * unchanged answer not sent again, a changed one sent, a status other than
 * 200 as an "error" event, the query and Authorization header replayed, the
 * bound on streams, and a stream freed when its client goes away.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "http/http.h"

/* What /value answers: its version and status, changed by the test. */
static pthread_mutex_t value_lock = PTHREAD_MUTEX_INITIALIZER;
static int value_version = 1, value_status = 200;
static int value_asked;

static void handler(void *arg, const struct http_request *req, struct http_response *res)
{
	(void)arg;
	if (strcmp(req->path, "/events") == 0) {
		const char *paths[] = {"/value?x=a%20b", "/whoami"};
		const char *events[] = {"value", "who"};

		if (http_watch(req, paths, events, 2))
			http_error(res, 500, "no stream");
		return;
	}
	if (strcmp(req->path, "/value") == 0) {
		const char *x = http_query_arg(req, "x");

		pthread_mutex_lock(&value_lock);
		value_asked++;
		res->status = value_status;
		strbuf_addf(&res->body, "{\"version\": %d,\n\"x\": \"%s\"}\n", value_version,
			    x ? x : "(none)");
		pthread_mutex_unlock(&value_lock);
		return;
	}
	if (strcmp(req->path, "/whoami") == 0) {
		const char *auth = http_header(req, "Authorization");

		strbuf_addf(&res->body, "\"%s\"", auth ? auth : "nobody");
		return;
	}
	http_error(res, 404, "no");
}

static void set_value(int version, int status)
{
	pthread_mutex_lock(&value_lock);
	value_version = version;
	value_status = status;
	pthread_mutex_unlock(&value_lock);
}

static int open_stream(uint16_t port, const char *auth, char *head, size_t cap)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct timeval tv = {5, 0};
	char req[256];
	size_t got = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	snprintf(req, sizeof(req), "GET /events HTTP/1.1\r\nHost: x\r\n%s%s%s\r\n",
		 auth ? "Authorization: " : "", auth ? auth : "", auth ? "\r\n" : "");
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	/* the status line and headers */
	while (got + 1 < cap && !strstr(head, "\r\n\r\n")) {
		ssize_t n = read(fd, head + got, 1);

		if (n <= 0)
			break;
		got += (size_t)n;
		head[got] = '\0';
	}
	return fd;
}

/* Reads until text holds want (or 5 s pass); the stream so far in buf. */
static bool read_until(int fd, char *buf, size_t cap, size_t *len, const char *want)
{
	while (!strstr(buf, want)) {
		ssize_t n;

		if (*len + 1 >= cap)
			return false;
		n = read(fd, buf + *len, cap - *len - 1);
		if (n <= 0)
			return false;
		*len += (size_t)n;
		buf[*len] = '\0';
	}
	return true;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static void stream_events(void **state)
{
	struct http_options o = {.max_streams = 2, .watch_interval_ms = 50};
	struct http_server *s;
	char head[2048] = "", buf[16384] = "";
	size_t len = 0;
	int fd, asked;

	(void)state;
	assert_int_equal(http_start_opts("127.0.0.1:0", &o, handler, NULL, &s), 0);
	fd = open_stream(http_port(s), "Bearer t0k", head, sizeof(head));
	assert_non_null(strstr(head, "HTTP/1.1 200"));
	assert_non_null(strstr(head, "Content-Type: text/event-stream"));
	/* the first events at once: each line of the body a data line, the query decoded */
	assert_true(read_until(fd, buf, sizeof(buf), &len,
			       "event: value\ndata: {\"version\": 1,\ndata: \"x\": \"a b\"}\n\n"));
	assert_true(read_until(fd, buf, sizeof(buf), &len, "event: who\ndata: \"Bearer t0k\"\n\n"));
	/* unchanged: asked again every 50 ms (three times here, 30 s at most: a loaded
	 * machine may be slow to run the watcher), never sent again */
	pthread_mutex_lock(&value_lock);
	asked = value_asked;
	pthread_mutex_unlock(&value_lock);
	for (int i = 0; i < 600; i++) {
		bool enough;

		pthread_mutex_lock(&value_lock);
		enough = value_asked >= asked + 3;
		pthread_mutex_unlock(&value_lock);
		if (enough)
			break;
		usleep(50 * 1000);
	}
	pthread_mutex_lock(&value_lock);
	assert_true(value_asked >= asked + 3);
	pthread_mutex_unlock(&value_lock);
	set_value(2, 200);
	assert_true(read_until(fd, buf, sizeof(buf), &len, "data: {\"version\": 2,"));
	assert_int_equal(count(buf, "event: value\n"), 2);
	assert_int_equal(count(buf, "event: who\n"), 1);
	/* another status: an "error" event with the body */
	set_value(3, 503);
	assert_true(read_until(fd, buf, sizeof(buf), &len, "event: error\ndata: {\"version\": 3,"));
	set_value(1, 200);
	close(fd);
	http_stop(s);
}

/* HEAD of a stream: its head, then the end; it holds no stream. */
static void head_of_stream(uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct timeval tv = {5, 0};
	const char req[] = "HEAD /events HTTP/1.1\r\nHost: x\r\n\r\n";
	char buf[2048];
	size_t len = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(fd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	while (len + 1 < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - len - 1)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	assert_non_null(strstr(buf, "HTTP/1.1 200"));
	assert_non_null(strstr(buf, "Content-Type: text/event-stream"));
	assert_null(strstr(buf, "event:")); /* no events: read until the server closed */
	close(fd);
}

static void stream_bound_and_cleanup(void **state)
{
	struct http_options o = {.max_streams = 2, .watch_interval_ms = 50};
	struct http_server *s;
	char head[2048];
	int a, b, c;

	(void)state;
	assert_int_equal(http_start_opts("127.0.0.1:0", &o, handler, NULL, &s), 0);
	head_of_stream(http_port(s));
	head_of_stream(http_port(s));
	head_of_stream(http_port(s)); /* more than max_streams: none was counted */
	head[0] = '\0';
	a = open_stream(http_port(s), NULL, head, sizeof(head));
	assert_non_null(strstr(head, "200"));
	head[0] = '\0';
	b = open_stream(http_port(s), NULL, head, sizeof(head));
	assert_non_null(strstr(head, "200"));
	head[0] = '\0';
	c = open_stream(http_port(s), NULL, head, sizeof(head));
	assert_non_null(strstr(head, "HTTP/1.1 503"));
	close(c);
	/* a client goes away: found at the next write (the value changes every round) */
	close(a);
	for (int i = 0; i < 100; i++) {
		head[0] = '\0';
		set_value(100 + i, 200);
		usleep(50 * 1000);
		c = open_stream(http_port(s), NULL, head, sizeof(head));
		if (strstr(head, "200"))
			break;
		close(c);
		c = -1;
	}
	assert_true(c >= 0);
	/* the server stops with streams open (suspended ones resumed to end) */
	http_stop(s);
	close(b);
	close(c);
	set_value(1, 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(stream_events),
	    cmocka_unit_test(stream_bound_and_cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
