/* test_common.c - strbuf caps, duration parsing, time formats, JSON writer, human units. */
#include <errno.h>
#include <float.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/array.h"
#include "common/counter.h"
#include "common/fmt.h"
#include "common/jsonw.h"
#include "common/strbuf.h"
#include "common/sysroot.h"
#include "common/timeutil.h"

static void test_strbuf_cap(void **state)
{
	struct strbuf sb;

	(void)state;
	strbuf_init(&sb, 8);
	assert_int_equal(strbuf_addstr(&sb, "abcd"), 0);
	assert_int_equal(strbuf_addstr(&sb, "efgh"), 0);
	assert_int_equal(strbuf_addch(&sb, 'x'), -E2BIG);
	assert_string_equal(strbuf_str(&sb), "abcdefgh");
	assert_int_equal(strbuf_addf(&sb, "%d", 1), -E2BIG);
	assert_int_equal(sb.len, 8);
	strbuf_reset(&sb);
	assert_int_equal(strbuf_addf(&sb, "%05d", 42), 0);
	assert_string_equal(strbuf_str(&sb), "00042");
	strbuf_release(&sb);
	assert_string_equal(strbuf_str(&sb), "");
}

static void test_strbuf_read_fd(void **state)
{
	char path[] = "/tmp/jobscope-test-XXXXXX";
	int fd = mkstemp(path);
	char data[10000];
	struct strbuf sb;

	(void)state;
	assert_true(fd >= 0);
	memset(data, 'q', sizeof(data));
	assert_int_equal(write(fd, data, sizeof(data)), (ssize_t)sizeof(data));
	lseek(fd, 0, SEEK_SET);
	strbuf_init(&sb, 0);
	assert_int_equal(strbuf_read_fd(&sb, fd), 0);
	assert_int_equal(sb.len, sizeof(data));
	strbuf_release(&sb);

	/* exactly at the cap: fine; one byte more: -E2BIG */
	lseek(fd, 0, SEEK_SET);
	strbuf_init(&sb, sizeof(data));
	assert_int_equal(strbuf_read_fd(&sb, fd), 0);
	assert_int_equal(sb.len, sizeof(data));
	strbuf_release(&sb);
	lseek(fd, 0, SEEK_SET);
	strbuf_init(&sb, sizeof(data) - 1);
	assert_int_equal(strbuf_read_fd(&sb, fd), -E2BIG);
	strbuf_release(&sb);
	close(fd);
	unlink(path);
}

static void test_duration(void **state)
{
	static const struct {
		const char *in;
		int64_t ms;
	} good[] = {
	    {"250ms", 250},	   {"2s", 2000},     {"1m", 60000}, {"1.5s", 1500},
	    {"2h", 7200000},	   {"1d", 86400000}, {"3", 3000},   {"0.05", 50},
	    {"100us", 1},	   {"1500us", 2},    {"0s", 0},	    {"2w", 1209600000},
	    {"2y", 63072000000LL}, /* a year is 365 days */
	};
	static const char *const bad[] = {
	    "",	      "-1s", "s",   "5x",   "1.2.3s", "10 s", " 5s", "+5s",
	    "1e400s", "nan", "inf", "5ms ", "1yr",    "1Y",   "y",
	};
	int64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = -1;
		assert_int_equal(parse_duration_ms(good[i].in, &v), 0);
		assert_int_equal(v, good[i].ms);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 77;
		assert_true(parse_duration_ms(bad[i], &v) < 0);
		assert_int_equal(v, 77);
	}
	assert_int_equal(parse_duration_ms("999999999999d", &v), -ERANGE);
	assert_int_equal(parse_duration_ms("300000y", &v), -ERANGE);
}

static void test_time_format(void **state)
{
	char buf[64];

	(void)state;
	format_rfc3339_ms(0, buf, sizeof(buf));
	assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
	format_rfc3339_ms(1795340895123LL, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-22T09:48:15.123Z");
	format_duration_ms(350, buf, sizeof(buf));
	assert_string_equal(buf, "350ms");
	format_duration_ms(2510, buf, sizeof(buf));
	assert_string_equal(buf, "2.51s");
	format_duration_ms(62000, buf, sizeof(buf));
	assert_string_equal(buf, "1m 02s");
	format_duration_ms(3723000, buf, sizeof(buf));
	assert_string_equal(buf, "1h 02m 03s");
}

static void test_wallclock_monotonic(void **state)
{
	struct wallclock wc;
	int64_t a, b, m0, m1, now;

	(void)state;
	wallclock_init(&wc);
	m0 = time_mono_ns();
	a = wallclock_now_ms(&wc);
	usleep(20000);
	b = wallclock_now_ms(&wc);
	m1 = time_mono_ns();
	/* at least the sleep, at most what the monotonic clock saw around it */
	assert_true(b - a >= 19 && b - a <= (m1 - m0) / 1000000 + 1);
	/* anchored to the wall clock: now is a's time plus what passed since, to the ms */
	now = time_now_ms();
	assert_true(now - a >= -1 && now - a <= (time_mono_ns() - m0) / 1000000 + 1);
}

static void test_jsonw(void **state)
{
	struct strbuf sb;
	struct jsonw w;

	(void)state;
	strbuf_init(&sb, 0);
	jsonw_init(&w, &sb, false);
	jsonw_obj_begin(&w);
	jsonw_kv_str(&w, "s",
		     "a\"b\\c\n\x01\xff"
		     "é");
	jsonw_kv_int(&w, "i", -5);
	jsonw_kv_double(&w, "d", 1.23456, 2);
	jsonw_kv_double(&w, "nan", NAN, 2);
	jsonw_kv_double(&w, "negzero", -0.0001, 2);
	jsonw_kv_int_opt(&w, "missing", false, 3);
	jsonw_key(&w, "a");
	jsonw_arr_begin(&w);
	jsonw_int(&w, 1);
	jsonw_bool(&w, true);
	jsonw_obj_begin(&w);
	jsonw_obj_end(&w);
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	assert_int_equal(jsonw_error(&w), 0);
	assert_string_equal(
	    strbuf_str(&sb),
	    "{\"s\":\"a\\\"b\\\\c\\n\\u0001\xef\xbf\xbd\xc3\xa9\",\"i\":-5,\"d\":1.23,"
	    "\"nan\":null,\"negzero\":0.00,\"missing\":null,\"a\":[1,true,{}]}");
	strbuf_release(&sb);

	/* runs of plain bytes between escapes, at either end, invalid UTF-8 of each kind */
	strbuf_init(&sb, 0);
	jsonw_init(&w, &sb, false);
	jsonw_arr_begin(&w);
	jsonw_str(&w, "\tplain run\x7f\xf0\x9f\x98\x80 emoji\r");
	jsonw_str(&w, "overlong \xc0\xaf surrogate \xed\xa0\x80 cut \xe6\x97");
	jsonw_strn(&w, "nul\0inside", 10);
	jsonw_str(&w, "");
	jsonw_str(&w, "\"\"");
	jsonw_arr_end(&w);
	assert_int_equal(jsonw_error(&w), 0);
	assert_string_equal(strbuf_str(&sb),
			    "[\"\\tplain run\\u007f\xf0\x9f\x98\x80 emoji\\r\","
			    "\"overlong \xef\xbf\xbd\xef\xbf\xbd surrogate \xef\xbf\xbd\xef\xbf\xbd"
			    "\xef\xbf\xbd cut \xef\xbf\xbd\xef\xbf\xbd\","
			    "\"nul\\u0000inside\",\"\",\"\\\"\\\"\"]");
	strbuf_release(&sb);

	/* the largest double, whole (a 64-byte buffer cut it to 63 digits) */
	strbuf_init(&sb, 0);
	jsonw_init(&w, &sb, false);
	jsonw_double(&w, -DBL_MAX, 9);
	{
		char want[400];

		snprintf(want, sizeof(want), "%.9f", -DBL_MAX);
		assert_int_equal(strlen(want), 320);
		assert_string_equal(strbuf_str(&sb), want);
	}
	strbuf_release(&sb);

	/* pretty printing */
	strbuf_init(&sb, 0);
	jsonw_init(&w, &sb, true);
	jsonw_obj_begin(&w);
	jsonw_kv_int(&w, "a", 1);
	jsonw_key(&w, "b");
	jsonw_arr_begin(&w);
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	assert_string_equal(strbuf_str(&sb), "{\n  \"a\": 1,\n  \"b\": []\n}");
	strbuf_release(&sb);

	/* errors stick: too deep, unbalanced, over the cap */
	strbuf_init(&sb, 0);
	jsonw_init(&w, &sb, false);
	for (int i = 0; i < JSONW_MAX_DEPTH + 2; i++)
		jsonw_arr_begin(&w);
	assert_int_equal(jsonw_error(&w), -E2BIG);
	strbuf_release(&sb);
	strbuf_init(&sb, 0);
	jsonw_init(&w, &sb, false);
	jsonw_obj_end(&w);
	assert_int_equal(jsonw_error(&w), -EINVAL);
	strbuf_release(&sb);
	strbuf_init(&sb, 4);
	jsonw_init(&w, &sb, false);
	jsonw_str(&w, "too long");
	assert_int_equal(jsonw_error(&w), -E2BIG);
	strbuf_release(&sb);
}

static void test_fmt(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(fmt_bytes(buf, sizeof(buf), 0), "0 B");
	assert_string_equal(fmt_bytes(buf, sizeof(buf), 1023), "1023 B");
	assert_string_equal(fmt_bytes(buf, sizeof(buf), 1536), "1.50 KiB");
	assert_string_equal(fmt_bytes(buf, sizeof(buf), 300ull << 20), "300 MiB");
	assert_string_equal(fmt_bytes(buf, sizeof(buf), 25ull << 30), "25.0 GiB");
	assert_string_equal(fmt_rate(buf, sizeof(buf), 2.0 * 1048576), "2.00 MiB/s");
	assert_string_equal(fmt_count(buf, sizeof(buf), 1234567), "1,234,567");
	assert_string_equal(fmt_count(buf, sizeof(buf), 12), "12");
}

static void test_sysroot(void **state)
{
	struct strbuf sb;
	char path[64];

	(void)state;
	sysroot_set("/nonexistent-root///");
	assert_string_equal(sysroot_get(), "/nonexistent-root");
	assert_int_equal(sysroot_path(path, sizeof(path), "/proc/stat"), 0);
	assert_string_equal(path, "/nonexistent-root/proc/stat");
	assert_int_equal(sysroot_path(path, 8, "/proc/stat"), -ENAMETOOLONG);
	strbuf_init(&sb, 0);
	assert_int_equal(sysroot_read("/proc/stat", &sb), -ENOENT);
	assert_false(sysroot_exists("/proc"));
	sysroot_set(NULL);
	assert_true(sysroot_exists("/proc/self/stat"));
	assert_int_equal(sysroot_read("/proc/self/stat", &sb), 0);
	assert_true(sb.len > 20);
	strbuf_release(&sb);
}

static void test_rfc3339_parse(void **state)
{
	int64_t ms;
	char buf[40];

	(void)state;
	assert_int_equal(parse_rfc3339_ms("2026-11-22T12:38:04Z", &ms), 0);
	assert_int_equal(ms, 1795351084000);
	assert_int_equal(parse_rfc3339_ms("2026-11-22T12:38:04.907Z", &ms), 0);
	assert_int_equal(ms, 1795351084907);
	assert_int_equal(parse_rfc3339_ms("2026-11-22 12:38:04.9Z", &ms), 0);
	assert_int_equal(ms, 1795351084900);
	assert_int_equal(parse_rfc3339_ms("2026-11-22T14:38:04+02:00", &ms), 0);
	assert_int_equal(ms, 1795351084000);
	assert_int_equal(parse_rfc3339_ms("2026-11-22T07:38:04.5-05:00", &ms), 0);
	assert_int_equal(ms, 1795351084500);
	format_rfc3339_ms(1795351084907, buf, sizeof(buf));
	assert_int_equal(parse_rfc3339_ms(buf, &ms), 0);
	assert_int_equal(ms, 1795351084907);
	static const char *const bad[] = {"",
					  "2026-11-22",
					  "2026-11-22T12:38:04",
					  "2026-13-22T12:38:04Z",
					  "2026-11-22T12:38:04.Z",
					  "2026-11-22T12:38:04Zx",
					  "2026-11-22T12:38:04+2:00",
					  "1969-12-31T23:59:59Z",
					  "x026-11-22T12:38:04Z"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse_rfc3339_ms(bad[i], &ms), -EINVAL);
}

static void test_array_grow(void **state)
{
	int64_t *items = NULL;
	size_t used = 0, alloc = 0, i;

	(void)state;
	/* the first growth allocates `first` slots, then each doubles */
	for (i = 0; i < 100; i++) {
		assert_int_equal(ARRAY_GROW(items, used, alloc, 4), 0);
		items[used++] = (int64_t)i * 3;
		if (i == 0)
			assert_int_equal(alloc, 4);
		if (i == 4)
			assert_int_equal(alloc, 8);
	}
	assert_int_equal(used, 100);
	assert_int_equal(alloc, 128);
	for (i = 0; i < used; i++)
		assert_int_equal(items[i], (int64_t)i * 3);
	/* room left: nothing moves */
	used = 50;
	assert_int_equal(ARRAY_GROW(items, used, alloc, 4), 0);
	assert_int_equal(alloc, 128);
	/* a size that overflows is refused and the array is kept as it was */
	{
		void *p = items;
		size_t huge = SIZE_MAX / 16 + 1;

		assert_int_equal(array_grow(&p, &huge, huge, 4, 16), -ENOMEM);
		assert_ptr_equal(p, items);
		assert_int_equal(huge, SIZE_MAX / 16 + 1);
	}
	free(items);
}

/* Each rule for a counter that went back (common/counter.h). */
static void test_counter_rules(void **state)
{
	uint64_t d = 99;

	(void)state;
	/* forward: the difference, whatever the rule */
	for (int r = COUNTER_UNKNOWN; r <= COUNTER_WRAP; r++) {
		assert_true(counter_growth(100, 250, (enum counter_rule)r, 1000, &d));
		assert_int_equal(d, 150);
	}
	/* back: unknown, from 0, or around the maximum */
	assert_false(counter_growth(250, 100, COUNTER_UNKNOWN, 1000, &d));
	assert_true(counter_growth(250, 100, COUNTER_RESET, 0, &d));
	assert_int_equal(d, 100);
	assert_true(counter_growth(900, 100, COUNTER_WRAP, 1000, &d));
	assert_int_equal(d, 200);
	assert_false(counter_growth(900, 100, COUNTER_WRAP, 0, &d)); /* no maximum known */
	assert_false(counter_growth(900, 100, COUNTER_WRAP, 900, &d));
	/* rates: per second; NAN when unknown or over no time */
	assert_true(counter_rate(1000, 3000, 2.0, COUNTER_RULE_HOST_IO) == 1000.0);
	assert_true(isnan(counter_rate(3000, 1000, 2.0, COUNTER_RULE_HOST_IO)));
	assert_true(counter_rate(3000, 1000, 2.0, COUNTER_RULE_GPU_NVLINK) == 500.0);
	assert_true(isnan(counter_rate(1000, 3000, 0.0, COUNTER_RULE_HOST_IO)));
	assert_true(isnan(counter_rate(1000, 3000, NAN, COUNTER_RULE_HOST_IO)));
}

/*
 * A deadline on CLOCK_MONOTONIC with a condition variable on that clock: a
 * wait until it times out once that clock has passed it.
 */
static void test_deadline_mono(void **state)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cond;
	struct timespec t0, until, t1;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	time_deadline_mono_ms(&until, 1999);
	assert_true(until.tv_nsec >= 0 && until.tv_nsec < 1000000000);
	assert_true(timespec_ns(&until) - timespec_ns(&t0) >= 1999 * 1000000ll);
	time_cond_init_mono(&cond);
	time_deadline_mono_ms(&until, 20);
	pthread_mutex_lock(&lock);
	while (pthread_cond_timedwait(&cond, &lock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&lock);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(timespec_ns(&t1) >= timespec_ns(&until));
	pthread_cond_destroy(&cond);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_counter_rules),
	    cmocka_unit_test(test_strbuf_cap),
	    cmocka_unit_test(test_array_grow),
	    cmocka_unit_test(test_strbuf_read_fd),
	    cmocka_unit_test(test_deadline_mono),
	    cmocka_unit_test(test_duration),
	    cmocka_unit_test(test_time_format),
	    cmocka_unit_test(test_rfc3339_parse),
	    cmocka_unit_test(test_wallclock_monotonic),
	    cmocka_unit_test(test_jsonw),
	    cmocka_unit_test(test_fmt),
	    cmocka_unit_test(test_sysroot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
