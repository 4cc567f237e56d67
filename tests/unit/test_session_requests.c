/*
 * test_session_requests.c - a session's per-request timings: nearest-rank
 * percentiles on fixed values, the `other` objects parsed safely, and the
 * JSON and text they render.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/jsonw.h"
#include "common/strbuf.h"
#include "report/session_requests.h"
#include "store/profiling.h"

static void test_percentile_nearest_rank(void **state)
{
	double one[] = {7.5};
	double ten[10], twenty[20], hundred[100];

	(void)state;
	for (int i = 0; i < 10; i++)
		ten[i] = 10.0 * (i + 1); /* 10 .. 100 */
	for (int i = 0; i < 20; i++)
		twenty[i] = i + 1; /* 1 .. 20 */
	for (int i = 0; i < 100; i++)
		hundred[i] = i + 1; /* 1 .. 100 */

	assert_true(isnan(request_percentile(one, 0, 50)));
	assert_true(isnan(request_percentile(one, 1, 0)));
	assert_true(isnan(request_percentile(one, 1, 101)));
	assert_true(request_percentile(one, 1, 1) == 7.5);
	assert_true(request_percentile(one, 1, 50) == 7.5);
	assert_true(request_percentile(one, 1, 100) == 7.5);

	/* rank ceil(p n / 100): 50 of 10 is the 5th, 95 and 99 the 10th */
	assert_true(request_percentile(ten, 10, 50) == 50);
	assert_true(request_percentile(ten, 10, 95) == 100);
	assert_true(request_percentile(ten, 10, 99) == 100);
	assert_true(request_percentile(ten, 10, 1) == 10);
	assert_true(request_percentile(ten, 10, 10) == 10);
	assert_true(request_percentile(ten, 10, 11) == 20);
	/* 95 * 20 / 100 is exactly 19 (in floating point 19.000000000000004) */
	assert_true(request_percentile(twenty, 20, 95) == 19);
	assert_true(request_percentile(twenty, 20, 50) == 10);
	assert_true(request_percentile(twenty, 20, 99) == 20);
	assert_true(request_percentile(hundred, 100, 50) == 50);
	assert_true(request_percentile(hundred, 100, 95) == 95);
	assert_true(request_percentile(hundred, 100, 99) == 99);
	assert_true(request_percentile(hundred, 100, 100) == 100);
}

static void add(struct session_requests *r, const char *app, double q, double p, const char *other)
{
	struct request_record req;

	memset(&req, 0, sizeof(req));
	snprintf(req.app, sizeof(req.app), "%s", app);
	req.queue_s = q;
	req.processing_s = p;
	req.other = other;
	assert_int_equal(session_requests_add(r, &req), 0);
}

static void test_requests_per_app(void **state)
{
	struct session_requests r;
	struct strbuf sb;
	struct jsonw w;
	char *big;

	(void)state;
	session_requests_init(&r);
	/* given out of order: sorted by finish */
	add(&r, "llm", 0.004, 0.250, "{\"prefill\": 0.1, \"decode\": 0.15}");
	add(&r, "llm", 0.001, 0.125, "{\"prefill\": 0.05, \"note\": \"x\", \"n\": [1]}");
	add(&r, "llm", 0.002, 0.5, "not json");
	add(&r, "llm", 0.003, 0.375, "[0.1]");
	add(&r, "asr", 1.5, 2, NULL);
	big = malloc(70000);
	assert_non_null(big);
	memset(big, ' ', 69999);
	big[0] = '{';
	memcpy(big + 69990, "\"x\": 1}", 8); /* over the cap: not parsed */
	add(&r, "asr", 0.5, 1, big);
	free(big);
	session_requests_finish(&r);

	assert_int_equal(r.napps, 2);
	assert_string_equal(r.apps[0].app, "llm");
	assert_int_equal(r.apps[0].count, 4);
	assert_int_equal(r.apps[0].nkeys, 2);
	assert_string_equal(r.apps[0].key[0], "prefill");
	assert_string_equal(r.apps[0].key[1], "decode");
	assert_int_equal(r.apps[0].other[0].n, 2);
	assert_int_equal(r.apps[1].nkeys, 0);

	strbuf_init(&sb, 1 << 20);
	jsonw_init(&w, &sb, false);
	jsonw_obj_begin(&w);
	session_requests_json(&r, &w);
	jsonw_obj_end(&w);
	assert_int_equal(jsonw_error(&w), 0);
	assert_string_equal(
	    strbuf_str(&sb),
	    "{\"requests\":{\"llm\":{\"count\":4,"
	    "\"queue_ms\":{\"p50\":2.000,\"p95\":4.000,\"p99\":4.000,\"max\":4.000},"
	    "\"processing_ms\":{\"p50\":250.000,\"p95\":500.000,\"p99\":500.000,\"max\":500.000},"
	    "\"other_ms\":{\"prefill\":{\"count\":2,\"p50\":50.000,\"p95\":100.000,\"p99\":100.000,"
	    "\"max\":100.000},\"decode\":{\"count\":1,\"p50\":150.000,\"p95\":150.000,"
	    "\"p99\":150.000,\"max\":150.000}}},"
	    "\"asr\":{\"count\":2,"
	    "\"queue_ms\":{\"p50\":500.000,\"p95\":1500.000,\"p99\":1500.000,\"max\":1500.000},"
	    "\"processing_ms\":{\"p50\":1000.000,\"p95\":2000.000,\"p99\":2000.000,"
	    "\"max\":2000.000},\"other_ms\":{}}},\"requests_left_out\":0}");

	strbuf_reset(&sb);
	session_requests_text(&r, &sb);
	assert_non_null(strstr(strbuf_str(&sb), "  llm: 4 requests\n"));
	assert_non_null(strstr(strbuf_str(&sb), "    processing                    4    250.000"
						"    500.000    500.000    500.000\n"));
	assert_non_null(strstr(strbuf_str(&sb), "    prefill                       2     50.000"
						"    100.000    100.000    100.000\n"));
	strbuf_release(&sb);
	session_requests_release(&r);
	assert_int_equal(r.napps, 0);
}

/* No requests: the JSON has an empty object, the text nothing. */
static void test_requests_none(void **state)
{
	struct session_requests r;
	struct strbuf sb;
	struct jsonw w;

	(void)state;
	session_requests_init(&r);
	session_requests_finish(&r);
	strbuf_init(&sb, 1 << 20);
	session_requests_text(&r, &sb);
	assert_string_equal(strbuf_str(&sb), "");
	jsonw_init(&w, &sb, false);
	jsonw_obj_begin(&w);
	session_requests_json(&r, &w);
	jsonw_obj_end(&w);
	assert_string_equal(strbuf_str(&sb), "{\"requests\":{},\"requests_left_out\":0}");
	strbuf_release(&sb);
	session_requests_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_percentile_nearest_rank),
	    cmocka_unit_test(test_requests_per_app),
	    cmocka_unit_test(test_requests_none),
	};

	return cmocka_run_group_tests_name("session requests", tests, NULL, NULL);
}
