/*
 * fuzz_requests.c - libFuzzer target for a request's `other` object as a
 * session's report parses it (session_requests_add): any text, then the
 * JSON and the text rendered from it, which must be whole.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/strbuf.h"
#include "report/session_requests.h"
#include "store/profiling.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct request_record req = {.queue_s = 0.5, .processing_s = 1.25};
	struct session_requests r;
	char *s = malloc(size + 1);
	struct strbuf sb;
	struct jsonw w;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	memcpy(req.app, "app", 4);
	req.other = s;
	session_requests_init(&r);
	/* twice: the second finds the keys the first made */
	if (session_requests_add(&r, &req) || session_requests_add(&r, &req))
		abort();
	session_requests_finish(&r);
	if (r.napps != 1 || r.apps[0].count != 2 || r.apps[0].nkeys > SESSION_REQUESTS_MAX_KEYS)
		abort();
	strbuf_init(&sb, 16 << 20);
	jsonw_init(&w, &sb, false);
	jsonw_obj_begin(&w);
	session_requests_json(&r, &w);
	jsonw_obj_end(&w);
	if (jsonw_error(&w))
		abort();
	session_requests_text(&r, &sb);
	strbuf_release(&sb);
	session_requests_release(&r);
	free(s);
	return 0;
}
