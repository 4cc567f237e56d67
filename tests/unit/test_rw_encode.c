/*
 * test_rw_encode.c - the remote-write body (prom/rw_encode.c) byte for byte
 * against a WriteRequest encoded by hand, snappy round trips, and the
 * relabelling rules (prom/rw_relabel.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "prom/rw_encode.h"
#include "prom/rw_relabel.h"

/*
 * WriteRequest{timeseries: [{labels: [{__name__, up}, {job, a}],
 * samples: [{1.0, 1000}]}]}, field by field:
 *   0a 28                      timeseries (1, len 40)
 *     0a 0e                    labels (1, len 14)
 *       0a 08 "__name__"       name (1)
 *       12 02 "up"             value (2)
 *     0a 08                    labels (1, len 8)
 *       0a 03 "job" 12 01 "a"
 *     12 0c                    samples (2, len 12)
 *       09 00..f0 3f           value (1, fixed64): 1.0 little-endian
 *       10 e8 07               timestamp (2, varint): 1000
 */
static const unsigned char one_series[] = {
    0x0a, 0x28, 0x0a, 0x0e, 0x0a, 0x08, '_',  '_',  'n',  'a',	'm',  'e',  '_',  '_',
    0x12, 0x02, 'u',  'p',  0x0a, 0x08, 0x0a, 0x03, 'j',  'o',	'b',  0x12, 0x01, 'a',
    0x12, 0x0c, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f, 0x10, 0xe8, 0x07,
};

static void test_encode_one_series(void **state)
{
	struct rw_label lab[] = {{"__name__", "up"}, {"job", "a"}};
	struct rw_sample smp[] = {{1.0, 1000}};
	struct rw_series s = {lab, 2, smp, 1};
	struct strbuf out;

	(void)state;
	strbuf_init(&out, 1 << 20);
	assert_int_equal(rw_encode_write_request(&s, 1, &out), 0);
	assert_int_equal(out.len, sizeof(one_series));
	assert_memory_equal(out.buf, one_series, sizeof(one_series));
	strbuf_release(&out);
}

/*
 * Two series, one of two samples: a value of -2.5, 0.0 and 3.0, and
 * timestamps past 2^35 (6-byte varints).
 */
static void test_encode_two_series(void **state)
{
	struct rw_label a[] = {{"__name__", "x"}};
	struct rw_label b[] = {{"__name__", "y"}};
	struct rw_sample sa[] = {{-2.5, 1763950000123LL}, {0.0, 1763950001123LL}};
	struct rw_sample sb[] = {{3.0, 1}};
	struct rw_series s[] = {{a, 1, sa, 2}, {b, 1, sb, 1}};
	/*
	 * -2.5 = 0xc004000000000000; 1763950000123 = fb ef f3 9c ab 33 and
	 * 1763950001123 = e3 f7 f3 9c ab 33 (7 bits a byte, low first); a
	 * sample is 09 + 8 bytes + 10 + the varint: 16 bytes here, 11 for y's.
	 */
	static const unsigned char want[] = {
	    0x0a, 0x33, /* series x, len 15 + 2 * 18 */
	    0x0a, 0x0d, 0x0a, 0x08, '_', '_', 'n', 'a', 'm', 'e', '_', '_', 0x12, 0x01, 'x',
	    0x12, 0x10, 0x09, 0, 0, 0, 0, 0, 0, 0x04, 0xc0, 0x10, 0xfb, 0xef, 0xf3, 0x9c, 0xab,
	    0x33, 0x12, 0x10, 0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0xe3, 0xf7, 0xf3, 0x9c, 0xab,
	    0x33, 0x0a, 0x1c, /* series y, len 15 + 13 */
	    0x0a, 0x0d, 0x0a, 0x08, '_', '_', 'n', 'a', 'm', 'e', '_', '_', 0x12, 0x01, 'y',
	    0x12, 0x0b, 0x09, 0, 0, 0, 0, 0, 0, 0x08, 0x40, 0x10, 0x01,
	};
	struct strbuf out;

	(void)state;
	strbuf_init(&out, 1 << 20);
	assert_int_equal(rw_encode_write_request(s, 2, &out), 0);
	assert_int_equal(out.len, sizeof(want));
	assert_memory_equal(out.buf, want, sizeof(want));
	strbuf_release(&out);
}

static void test_snappy_round_trip(void **state)
{
	struct strbuf z, back;
	char big[100000];

	(void)state;
	strbuf_init(&z, 1 << 20);
	strbuf_init(&back, 1 << 20);
	/* the fixture: a block starts with the uncompressed length as a varint */
	assert_int_equal(rw_snappy_compress((const char *)one_series, sizeof(one_series), &z), 0);
	assert_int_equal((unsigned char)z.buf[0], sizeof(one_series));
	assert_int_equal(rw_snappy_uncompress(z.buf, z.len, &back), 0);
	assert_int_equal(back.len, sizeof(one_series));
	assert_memory_equal(back.buf, one_series, sizeof(one_series));
	/* repetitive bodies shrink, and come back whole */
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = "jobscope_job_cpu_seconds_total"[i % 30];
	assert_int_equal(rw_snappy_compress(big, sizeof(big), &z), 0);
	assert_true(z.len < sizeof(big) / 10);
	assert_int_equal(rw_snappy_uncompress(z.buf, z.len, &back), 0);
	assert_int_equal(back.len, sizeof(big));
	assert_memory_equal(back.buf, big, sizeof(big));
	/* the empty body, and garbage refused */
	assert_int_equal(rw_snappy_compress("", 0, &z), 0);
	assert_int_equal(z.len, 1);
	assert_int_equal(rw_snappy_uncompress("\xff\xff\xff\xff\x7f garbage", 14, &back), -EINVAL);
	strbuf_release(&z);
	strbuf_release(&back);
}

static void test_relabel(void **state)
{
	static const char *const bad[] = {
	    "", "rename:", "rename:a", "rename:a=", "rename:1a=b", "rename:a=b c", "drop:",
	    "drop:a-b", "drop~:", "drop~:(((", "label:__x=1", "label:x=", "label:x=a\nb",
	    "label:=v", "keep:a", "label:9x=1",
	    /* stacked repetition operators: an error in Prometheus' RE2, gigabytes in regcomp */
	    "drop~:a++", "drop~:a*{2}", "drop~:g+++++++++++++++++++++++++++++++++seconds",
	    "drop~:a+??",
	};
	struct rw_rule r[4];
	const char *why;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		assert_int_equal(rw_relabel_parse(bad[i], &r[0], &why), -EINVAL);
		assert_non_null(why);
		assert_true(why[0] != '\0');
		rw_relabel_free(&r[0]);
	}
	assert_int_equal(rw_relabel_parse("rename:jobscope_job_cpu_seconds_total=job_cpu", &r[0],
					  &why),
			 0);
	assert_int_equal(rw_relabel_parse("drop:jobscope_node_load1", &r[1], &why), 0);
	/* RE2's non-greedy mark and escaped operators are no stack */
	assert_int_equal(rw_relabel_parse("drop~:a+?b\\++c{1,2}?", &r[2], &why), 0);
	rw_relabel_free(&r[2]);
	assert_int_equal(rw_relabel_parse("drop~:jobscope_gpu_.*", &r[2], &why), 0);
	assert_int_equal(rw_relabel_parse("label:cluster=alpha one", &r[3], &why), 0);
	assert_int_equal(r[3].kind, RW_LABEL);
	assert_string_equal(r[3].a, "cluster");
	assert_string_equal(r[3].b, "alpha one");
	assert_string_equal(rw_relabel_name(r, 4, "jobscope_job_cpu_seconds_total"), "job_cpu");
	assert_null(rw_relabel_name(r, 4, "jobscope_node_load1"));
	assert_null(rw_relabel_name(r, 4, "jobscope_gpu_power_watts"));
	/* the regex covers the whole name */
	assert_string_equal(rw_relabel_name(r, 4, "x_jobscope_gpu_power_watts"),
			    "x_jobscope_gpu_power_watts");
	assert_string_equal(rw_relabel_name(r, 4, "jobscope_node_load15"), "jobscope_node_load15");
	for (int i = 0; i < 4; i++)
		rw_relabel_free(&r[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_encode_one_series),
	    cmocka_unit_test(test_encode_two_series),
	    cmocka_unit_test(test_snappy_round_trip),
	    cmocka_unit_test(test_relabel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
