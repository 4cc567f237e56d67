/*
 * test_http_reqparse.c - a request's head scanned and split (http/reqparse.h):
 * the fields the server acts on, what it refuses, the path decoded, the
 * headers trimmed and folded; a chunked body decoded in place whatever
 * the bytes' arrival; the reason phrases.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/reqparse.h"

static enum http_front_verdict scan(const char *s, struct http_req_info *ri,
				    struct http_front_refusal *why)
{
	return http_req_scan(s, strlen(s), ri, why);
}

static void test_scan_fields(void **state)
{
	struct http_req_info ri;
	struct http_front_refusal why;
	const char *post = "\r\nPOST /api/v1/ingest HTTP/1.1\r\nHost: h\r\ncontent-length: 12\r\n"
			   "Connection: Keep-Alive, Upgrade\r\nExpect: 100-Continue\r\n\r\nbody";

	(void)state;
	assert_int_equal(scan(post, &ri, &why), HTTP_FRONT_PASS);
	assert_int_equal(ri.method, HTTP_METHOD_POST);
	assert_int_equal(ri.head_len, strlen(post) - 4);
	assert_int_equal(ri.content_length, 12);
	assert_true(ri.conn_keep_alive);
	assert_false(ri.conn_close);
	assert_true(ri.expect_continue);
	assert_false(ri.http10);
	assert_false(ri.chunked);

	assert_int_equal(scan("HEAD / HTTP/1.0\nConnection: close\n\n", &ri, &why),
			 HTTP_FRONT_PASS);
	assert_int_equal(ri.method, HTTP_METHOD_HEAD);
	assert_true(ri.http10);
	assert_true(ri.conn_close);
	assert_int_equal(ri.content_length, -1);
	assert_int_equal(ri.head_len, 35);

	assert_int_equal(scan("PUT /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &ri, &why),
			 HTTP_FRONT_PASS);
	assert_int_equal(ri.method, HTTP_METHOD_OTHER);
	assert_true(ri.chunked);
	/* the same length twice is one length */
	assert_int_equal(
	    scan("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", &ri, &why),
	    HTTP_FRONT_PASS);
	assert_int_equal(ri.content_length, 3);
	assert_int_equal(scan("GET / HTTP/1.1\r\nHost: x\r\n", &ri, &why), HTTP_FRONT_MORE);
}

static void refused(const char *s, int status)
{
	struct http_req_info ri;
	struct http_front_refusal why = {0};

	assert_int_equal(http_req_scan(s, strlen(s), &ri, &why), HTTP_FRONT_REFUSE);
	assert_int_equal(why.status, status);
	assert_non_null(why.msg);
}

static void test_scan_refusals(void **state)
{
	(void)state;
	refused("hello\r\n\r\n", 400);				      /* the judge's */
	refused("POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400); /* the judge's */
	refused("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400);
	refused("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
	refused("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501);
	refused("POST / HTTP/1.1\r\nContent-Length: 9223372036854775808\r\n\r\n", 413);
}

static void test_split(void **state)
{
	char head[] =
	    "GET /api/v1/jobs/slurm%3A5%3a1%zz%4?x=a%20b&y=1 HTTP/1.1\r\n"
	    "Host:  h  \r\nX-Long: one\r\n  two\r\n\tthree \r\nAuthorization: Bearer t\r\n\r\n";
	char abs[] = "GET http://h:1/metrics?q=1 HTTP/1.1\r\n\r\n";
	char bare[] = "GET http://h:1?q=2 HTTP/1.1\r\n\r\n";
	char slashq[] = "GET https://h?next=/a/b HTTP/1.1\r\n\r\n";
	char nul[] = "GET /a%00b HTTP/1.1\r\n\r\n";
	char star[] = "OPTIONS * HTTP/1.1\r\n\r\n";
	struct http_req_fields f;

	(void)state;
	assert_int_equal(http_req_split(head, sizeof(head) - 1, &f), 0);
	assert_string_equal(f.method, "GET");
	assert_string_equal(f.path, "/api/v1/jobs/slurm:5:1%zz%4"); /* bad escapes kept */
	assert_string_equal(f.query, "x=a%20b&y=1");
	assert_int_equal(f.nheaders, 3);
	assert_string_equal(http_req_header(&f, "host"), "h");
	/* a folded line: its line end as spaces, joined to the line before */
	assert_string_equal(http_req_header(&f, "X-Long"), "one    two  \tthree");
	assert_string_equal(http_req_header(&f, "AUTHORIZATION"), "Bearer t");
	assert_null(http_req_header(&f, "Cookie"));

	assert_int_equal(http_req_split(abs, sizeof(abs) - 1, &f), 0);
	assert_string_equal(f.path, "/metrics");
	assert_string_equal(f.query, "q=1");
	assert_int_equal(http_req_split(bare, sizeof(bare) - 1, &f), 0);
	assert_string_equal(f.path, "/");
	assert_string_equal(f.query, "q=2");
	assert_int_equal(http_req_split(slashq, sizeof(slashq) - 1, &f), 0);
	assert_string_equal(f.path, "/");
	assert_string_equal(f.query, "next=/a/b");
	assert_int_equal(http_req_split(nul, sizeof(nul) - 1, &f), -EINVAL);
	assert_int_equal(http_req_split(star, sizeof(star) - 1, &f), -EINVAL);
}

/* Decodes raw fed step bytes at a time; the body and where the next request starts. */
static int decode(const char *raw, size_t step, size_t max, char *body, size_t *body_len,
		  size_t *next)
{
	size_t len = strlen(raw), fed = 0;
	char *buf = malloc(len + 1);
	struct http_chunked ch;
	int r = 0;

	assert_non_null(buf);
	http_chunked_init(&ch, 0);
	while (fed < len && r == 0) {
		size_t n = len - fed < step ? len - fed : step;

		memcpy(buf + fed, raw + fed, n); /* in place: what was decoded stays below ch.raw */
		fed += n;
		r = http_chunked_step(&ch, buf, fed, 0, max);
	}
	if (r == 1) {
		memcpy(body, buf, ch.out);
		body[ch.out] = '\0';
		*body_len = ch.out;
		*next = ch.raw;
	}
	free(buf);
	return r;
}

static void test_chunked(void **state)
{
	const char *raw = "5;name=v\r\nhello\r\n1A\r\n abcdefghijklmnopqrstuvwxy\r\n0\r\n"
			  "Trailer: x\r\n\r\nGET /next";
	char body[64];
	size_t len, next;

	(void)state;
	for (size_t step = 1; step <= strlen(raw); step++) {
		assert_int_equal(decode(raw, step, 1 << 20, body, &len, &next), 1);
		assert_string_equal(body, "hello abcdefghijklmnopqrstuvwxy");
		assert_int_equal(len, 31);
		assert_string_equal(raw + next, "GET /next");
	}
	assert_int_equal(decode("0\r\n\r\n", 1, 10, body, &len, &next), 1);
	assert_int_equal(len, 0);
	/* LF alone ends lines too */
	assert_int_equal(decode("3\nabc\n0\n\n", 2, 10, body, &len, &next), 1);
	assert_string_equal(body, "abc");
	/* too big: one chunk, or the sum */
	assert_int_equal(decode("b\r\nhello world\r\n0\r\n\r\n", 64, 10, body, &len, &next),
			 -EFBIG);
	assert_int_equal(
	    decode("6\r\nhello \r\n6\r\nworld!\r\n0\r\n\r\n", 64, 10, body, &len, &next), -EFBIG);
	assert_int_equal(decode("fffffffffffffffff\r\n", 64, 10, body, &len, &next), -EINVAL);
	assert_int_equal(decode("zz\r\n", 64, 10, body, &len, &next), -EINVAL);
	assert_int_equal(decode("3\r\nabcX\r\n", 64, 10, body, &len, &next), -EINVAL);
	assert_int_equal(decode("\r\n", 64, 10, body, &len, &next), -EINVAL);
	/* not finished yet */
	assert_int_equal(decode("3\r\nab", 64, 10, body, &len, &next), 0);
}

static void test_reasons(void **state)
{
	(void)state;
	assert_string_equal(http_reason(200), "OK");
	assert_string_equal(http_reason(404), "Not Found");
	assert_string_equal(http_reason(413), "Content Too Large");
	assert_string_equal(http_reason(503), "Service Unavailable");
	assert_string_equal(http_reason(299), "Unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scan_fields), cmocka_unit_test(test_scan_refusals),
	    cmocka_unit_test(test_split),	cmocka_unit_test(test_chunked),
	    cmocka_unit_test(test_reasons),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
