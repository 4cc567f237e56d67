/*
 * test_http_front.c - the HTTP server's front door judge (http/front.h):
 * which first bytes of a connection wait for more, pass to the server,
 * or are refused with which status; and the JSON answer's bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/front.h"

static enum http_front_verdict judge(const char *s, struct http_front_refusal *why)
{
	return http_front_judge(s, strlen(s), why);
}

static void test_requests_pass_or_wait(void **state)
{
	struct http_front_refusal why = {0};

	(void)state;
	assert_int_equal(judge("GET / HTTP/1.1\r\nHost: x\r\n\r\n", &why), HTTP_FRONT_PASS);
	assert_int_equal(
	    judge("\r\nPOST /api/v1/ingest HTTP/1.0\nContent-Length: 12\n\nbody", &why),
	    HTTP_FRONT_PASS);
	assert_int_equal(judge("GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", &why), HTTP_FRONT_PASS);
	assert_int_equal(judge("", &why), HTTP_FRONT_MORE);
	assert_int_equal(judge("GE", &why), HTTP_FRONT_MORE);
	assert_int_equal(judge("GET /status", &why), HTTP_FRONT_MORE);
	assert_int_equal(judge("GET / HTTP/1.1\r\nHost: x\r\n", &why), HTTP_FRONT_MORE);
	/* the largest Content-Length that fits: passed on (the handler's 413) */
	assert_int_equal(
	    judge("POST / HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\n", &why),
	    HTTP_FRONT_PASS);
}

static void refused(const char *s, size_t len, int status)
{
	struct http_front_refusal why = {0};

	assert_int_equal(http_front_judge(s, len, &why), HTTP_FRONT_REFUSE);
	assert_int_equal(why.status, status);
	assert_non_null(why.msg);
}

static void test_garbage_refused(void **state)
{
	static const char tls[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
	char *big = malloc(HTTP_FRONT_HEAD_MAX);

	(void)state;
	refused(tls, sizeof(tls) - 1, 400); /* a TLS hello: no line end needed to know */
	refused("hello there\r\n", 13, 400);
	refused("GET\r\n", 5, 400);
	refused("GET /\r\n\r\n", 9, 400);		 /* HTTP/0.9 */
	refused("GET / HTTP/2.0\r\n\r\n", 18, 400);	 /* not ours */
	refused("GET /a\x01 HTTP/1.1\r\n\r\n", 20, 400); /* a control byte */
	refused("AVERYLONGMETHODNAMEX / HTTP/1.1\r\n", 33, 400);
	refused("GET / HTTP/1.1\r\nno colon\r\n\r\n", 28, 400);
	refused("GET / HTTP/1.1\r\n: x\r\n\r\n", 23, 400);
	refused("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 31, 400);
	refused("POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 41, 400);
	refused("POST / HTTP/1.1\r\nContent-Length: \r\n\r\n", 38, 400);
	refused("POST / HTTP/1.1\r\ncontent-length: 18446744073709551616\r\n\r\n", 56, 413);
	refused("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 59, 413);
	assert_non_null(big);
	/* a request line that fills the head: 414; headers that do: 431 */
	memset(big, 'a', HTTP_FRONT_HEAD_MAX);
	memcpy(big, "GET /", 5);
	refused(big, HTTP_FRONT_HEAD_MAX, 414);
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	refused(big, HTTP_FRONT_HEAD_MAX, 431);
	/* nothing but bytes of a method, the whole head long */
	memset(big, 'A', HTTP_FRONT_HEAD_MAX);
	refused(big, HTTP_FRONT_HEAD_MAX, 400);
	free(big);
}

static void test_too_many_fields(void **state)
{
	char buf[HTTP_FRONT_HEAD_MAX];
	size_t n = 0;
	struct http_front_refusal why = {0};

	(void)state;
	n += (size_t)snprintf(buf, sizeof(buf), "GET / HTTP/1.1\r\n");
	for (int i = 0; i < HTTP_FRONT_FIELDS_MAX; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "X%d: y\r\n", i);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\r\n");
	assert_int_equal(http_front_judge(buf, n, &why), HTTP_FRONT_PASS);
	n -= 2;
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "Y: z\r\n\r\n");
	refused(buf, n, 431);
}

static void test_answer_bytes(void **state)
{
	char out[512];
	size_t n = http_front_answer(out, sizeof(out), 414, "request line too long");
	const char *body = "{\"error\":\"request line too long\",\"status\":414}\n";
	char want[512];

	(void)state;
	snprintf(
	    want, sizeof(want),
	    "HTTP/1.1 414 URI Too Long\r\nConnection: close\r\nContent-Type: application/json\r\n"
	    "Cache-Control: no-store\r\nContent-Length: %zu\r\n\r\n%s",
	    strlen(body), body);
	assert_int_equal(n, strlen(want));
	assert_string_equal(out, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_requests_pass_or_wait),
	    cmocka_unit_test(test_garbage_refused),
	    cmocka_unit_test(test_too_many_fields),
	    cmocka_unit_test(test_answer_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
