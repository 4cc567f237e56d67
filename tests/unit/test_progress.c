/* test_progress.c - the progress line's text, its throttle, what a meter writes, and when it is
 * wanted. */
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/progress.h"

static void test_format_unknown_total(void **state)
{
	char buf[128];

	(void)state;
	progress_format(buf, sizeof(buf), "jobscope export", "frames", 1234567, -1, 4200);
	assert_string_equal(buf, "jobscope export: 1,234,567 frames, 5s");
	progress_format(buf, sizeof(buf), "jobscope export", "frames", 0, NAN, 0);
	assert_string_equal(buf, "jobscope export: 0 frames, 0s");
	progress_format(buf, sizeof(buf), "x", "rows", -5, -1, 125000);
	assert_string_equal(buf, "x: 0 rows, 2m05s");
}

static void test_format_percent_and_eta(void **state)
{
	char buf[128];

	(void)state;
	/* a quarter in 3 s: three times as long left */
	progress_format(buf, sizeof(buf), "jobscope report", "rows", 12345, 0.25, 3000);
	assert_string_equal(buf, "jobscope report: 25%, 12,345 rows, 9s left");
	progress_format(buf, sizeof(buf), "r", "rows", 10, 0.5, 3600 * 1000);
	assert_string_equal(buf, "r: 50%, 10 rows, 1h00m left");
	/* under 1%: no guess yet */
	progress_format(buf, sizeof(buf), "r", "rows", 1, 0.005, 1000);
	assert_string_equal(buf, "r: 0%, 1 rows");
	/* done, and past done, is 100% without a time left */
	progress_format(buf, sizeof(buf), "r", "rows", 7, 1.0, 1000);
	assert_string_equal(buf, "r: 100%, 7 rows");
	progress_format(buf, sizeof(buf), "r", "rows", 7, 3.5, 1000);
	assert_string_equal(buf, "r: 100%, 7 rows");
	/* cut to the buffer */
	progress_format(buf, 8, "jobscope report", "rows", 7, 0.5, 1000);
	assert_string_equal(buf, "jobscop");
}

static void test_due(void **state)
{
	(void)state;
	/* nothing before the delay */
	assert_false(progress_due(1299, 1000, 0, 300));
	assert_true(progress_due(1300, 1000, 0, 300));
	/* then at most one line per PROGRESS_REDRAW_MS */
	assert_false(progress_due(1399, 1000, 1300, 300));
	assert_true(progress_due(1400, 1000, 1300, 300));
	assert_true(progress_due(5, 5, 0, 0));
}

/* What a meter writes to a pipe, read back. */
static size_t drain(int fd, char *buf, size_t size)
{
	ssize_t n = read(fd, buf, size - 1);

	buf[n > 0 ? n : 0] = '\0';
	return n > 0 ? (size_t)n : 0;
}

static void test_meter_draws_throttled_and_erases(void **state)
{
	struct progress_meter m;
	char buf[1024];
	int p[2];

	(void)state;
	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	unsetenv("JOBSCOPE_PROGRESS_DELAY_MS");
	progress_meter_init(&m, p[1], true, "jobscope report", "rows");
	m.start_ms = 10000;
	assert_non_null(progress_meter_hook(&m));
	progress_meter_update_at(&m, 10100, 5, 0.1); /* in the delay */
	assert_int_equal(drain(p[0], buf, sizeof(buf)), 0);
	progress_meter_update_at(&m, 10300, 50, 0.5);
	drain(p[0], buf, sizeof(buf));
	/* a pipe has no width: 80 columns */
	assert_string_equal(buf, "\r\033[Kjobscope report: 50%, 50 rows, 1s left");
	/* ten a second at most: these 99 ms later draw nothing */
	for (int t = 10301; t < 10400; t += 7)
		progress_meter_update_at(&m, t, t, 0.6);
	assert_int_equal(drain(p[0], buf, sizeof(buf)), 0);
	progress_step(progress_meter_hook(&m), 60, 0.6); /* the hook: now, long after */
	drain(p[0], buf, sizeof(buf));
	assert_non_null(strstr(buf, "jobscope report: 60%, 60 rows, "));
	progress_finish(progress_meter_hook(&m));
	drain(p[0], buf, sizeof(buf));
	assert_string_equal(buf, "\r\033[K");
	/* finished without a line drawn: nothing to erase */
	progress_meter_finish(&m);
	assert_int_equal(drain(p[0], buf, sizeof(buf)), 0);
	close(p[0]);
	close(p[1]);
}

static void test_meter_off_writes_nothing(void **state)
{
	struct progress_meter m;
	char buf[64];
	int p[2];

	(void)state;
	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	progress_meter_init(&m, p[1], false, "x", "rows");
	assert_null(progress_meter_hook(&m));
	progress_meter_update_at(&m, m.start_ms + 100000, 1, 0.5);
	progress_meter_finish(&m);
	/* the hook's helpers take NULL */
	progress_step(NULL, 1, 0.5);
	progress_finish(NULL);
	assert_int_equal(drain(p[0], buf, sizeof(buf)), 0);
	close(p[0]);
	close(p[1]);
}

static void test_meter_long_line_cut(void **state)
{
	static const char label[] =
	    "a label far longer than any terminal line is wide, so long that it must be cut short "
	    "by the meter";
	struct progress_meter m;
	char buf[1024];
	int p[2];

	(void)state;
	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	setenv("JOBSCOPE_PROGRESS_DELAY_MS", "0", 1);
	progress_meter_init(&m, p[1], true, label, "rows");
	assert_int_equal(m.delay_ms, 0);
	progress_meter_update_at(&m, m.start_ms, 1, -1);
	drain(p[0], buf, sizeof(buf));
	assert_int_equal(strlen(buf), 4 + 79); /* "\r\033[K", then 79 columns */
	assert_memory_equal(buf + 4, label, 79);
	setenv("JOBSCOPE_PROGRESS_DELAY_MS", "junk", 1);
	progress_meter_init(&m, p[1], true, label, "rows");
	assert_int_equal(m.delay_ms, PROGRESS_DELAY_MS);
	unsetenv("JOBSCOPE_PROGRESS_DELAY_MS");
	close(p[0]);
	close(p[1]);
}

static void test_wanted(void **state)
{
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	unsetenv("NO_PROGRESS");
	assert_false(progress_wanted(p[1], false)); /* a pipe */
	assert_false(progress_wanted(-1, false));
	close(p[0]);
	close(p[1]);
	/* a terminal, when the test runs on one (a pty under `script` does) */
	if (isatty(2)) {
		assert_true(progress_wanted(2, false));
		assert_false(progress_wanted(2, true));
		setenv("NO_PROGRESS", "1", 1);
		assert_false(progress_wanted(2, false));
		setenv("NO_PROGRESS", "0", 1);
		assert_true(progress_wanted(2, false));
		unsetenv("NO_PROGRESS");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_format_unknown_total),
	    cmocka_unit_test(test_format_percent_and_eta),
	    cmocka_unit_test(test_due),
	    cmocka_unit_test(test_meter_draws_throttled_and_erases),
	    cmocka_unit_test(test_meter_off_writes_nothing),
	    cmocka_unit_test(test_meter_long_line_cut),
	    cmocka_unit_test(test_wanted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
