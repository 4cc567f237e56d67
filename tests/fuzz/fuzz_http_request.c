/*
 * fuzz_http_request.c - libFuzzer target for the server's request reader
 * (http/reqparse.h): any bytes a connection sends, read as the server
 * reads them.  A head that passes splits (or is refused as not a path)
 * with every header NUL-ended inside it; a chunked body decodes to no more
 * than max_body bytes, below what it was decoded from, whatever the pieces
 * the bytes came in.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/reqparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_BODY 4096

/* Decodes buf[start, len) fed in pieces of step bytes; the result, and the decoded end. */
static int chunked(const char *src, size_t len, size_t start, size_t step, size_t *out)
{
	char *buf = malloc(len ? len : 1);
	struct http_chunked ch;
	size_t fed = start;
	int r = 0;

	if (!buf)
		abort();
	memcpy(buf, src, start);
	http_chunked_init(&ch, start);
	while (r == 0 && fed < len) {
		size_t n = len - fed < step ? len - fed : step;

		memcpy(buf + fed, src + fed, n);
		fed += n;
		r = http_chunked_step(&ch, buf, fed, start, MAX_BODY);
		if (ch.out > ch.raw || ch.raw > fed || ch.out - start > MAX_BODY)
			abort();
	}
	*out = ch.out;
	free(buf);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_front_refusal why = {0, NULL};
	struct http_req_fields f;
	struct http_req_info ri;
	char *buf;

	if (http_req_scan((const char *)data, size, &ri, &why) != HTTP_FRONT_PASS) {
		if (why.msg == NULL && why.status != 0)
			abort();
		return 0;
	}
	if (ri.head_len == 0 || ri.head_len > size || ri.head_len > HTTP_FRONT_HEAD_MAX)
		abort();
	buf = malloc(size + 1);
	if (!buf)
		abort();
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (http_req_split(buf, ri.head_len, &f) == 0) {
		if (!f.method || !f.path || f.path[0] != '/')
			abort();
		for (size_t i = 0; i < f.nheaders; i++)
			if (f.name[i] < buf || f.value[i] < buf ||
			    f.value[i] >= buf + ri.head_len || strlen(f.value[i]) >= ri.head_len)
				abort();
	}
	if (ri.chunked) {
		size_t whole, pieces;
		int a = chunked((const char *)data, size, ri.head_len, size, &whole);
		int b = chunked((const char *)data, size, ri.head_len, 3, &pieces);

		/* the same bytes decode the same in one piece and in many */
		if (a != b || (a == 1 && whole != pieces))
			abort();
	}
	free(buf);
	return 0;
}
