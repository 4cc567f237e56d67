/*
 * fuzz_http_front.c - libFuzzer target for the HTTP front door's judge
 * (http/front.h): any first bytes of a connection.  A refusal names one
 * of the statuses it may send, with a message, and its answer is one JSON
 * error; a head it passes ends with a blank line; a verdict on a prefix
 * of what it passed is never a refusal (the bytes came in pieces).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/front.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_front_refusal why = {0, NULL};
	const char *buf = (const char *)data;
	enum http_front_verdict v;
	char out[1024];
	size_t n;

	if (size > HTTP_FRONT_HEAD_MAX)
		size = HTTP_FRONT_HEAD_MAX;
	v = http_front_judge(buf, size, &why);
	if (v == HTTP_FRONT_REFUSE) {
		if (!why.msg || (why.status != 400 && why.status != 413 && why.status != 414 &&
				 why.status != 431))
			abort();
		n = http_front_answer(out, sizeof(out), why.status, why.msg);
		if (n == 0 || n >= sizeof(out) || memcmp(out, "HTTP/1.1 ", 9) != 0 ||
		    !memmem(out, n, "application/json", 16) || !memmem(out, n, "\r\n\r\n{", 5))
			abort();
	} else if (v == HTTP_FRONT_PASS) {
		if (!memmem(buf, size, "\n\r\n", 3) && !memmem(buf, size, "\n\n", 2))
			abort();
		for (size_t k = 1; k < size; k += 1 + k / 4)
			if (http_front_judge(buf, k, &why) == HTTP_FRONT_REFUSE)
				abort();
	} else if (v != HTTP_FRONT_MORE) {
		abort();
	}
	return 0;
}
