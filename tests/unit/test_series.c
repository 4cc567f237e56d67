/*
 * test_series.c - period and trend on synthetic series with known answers:
 * a 7.5 s period plus noise found within 5%, none in white noise nor in a
 * flat line or a pure trend, a linear leak's growth and time to a limit
 * within 10%, missing values, and bad arguments.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "analysis/series.h"

/* a reproducible noise source: xorshift, uniform in [-1, 1] */
static double noise(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (double)(*s % 2000001) / 1000000.0 - 1.0;
}

static void test_period_found(void **state)
{
	enum { N = 600 };
	double x[N];
	uint64_t seed = 42;
	struct period_result p;

	(void)state;
	/* 10 minutes at 1 s of a training loop: 7.5 s iterations, noisy */
	for (int i = 0; i < N; i++)
		x[i] = 50 + 40 * sin(2 * M_PI * i / 7.5) + 8 * noise(&seed);
	assert_int_equal(series_period(x, N, 1.0, &p), 0);
	assert_true(fabs(p.period_s - 7.5) <= 0.05 * 7.5);
	assert_true(p.confidence > 0.5);
	/* the same at 100 ms sampling: 75 samples a period */
	{
		static double y[3000];

		for (int i = 0; i < 3000; i++)
			y[i] = (fmod(i * 0.1, 7.5) < 5.0 ? 95 : 5) + 10 * noise(&seed);
		assert_int_equal(series_period(y, 3000, 0.1, &p), 0);
		assert_true(fabs(p.period_s - 7.5) <= 0.05 * 7.5);
	}
}

static void test_no_period(void **state)
{
	enum { N = 1000 };
	double x[N];
	uint64_t seed = 7;
	struct period_result p;

	(void)state;
	for (int i = 0; i < N; i++)
		x[i] = 50 + 20 * noise(&seed);
	assert_int_equal(series_period(x, N, 1.0, &p), -ENODATA);
	for (int i = 0; i < N; i++)
		x[i] = 3.0;
	assert_int_equal(series_period(x, N, 1.0, &p), -ENODATA);
	for (int i = 0; i < N; i++)
		x[i] = 0.5 * i;
	assert_int_equal(series_period(x, N, 1.0, &p), -ENODATA);
	assert_int_equal(series_period(x, 5, 1.0, &p), -ENODATA);
	assert_int_equal(series_period(x, N, 0, &p), -EINVAL);
}

static void test_period_with_gaps(void **state)
{
	enum { N = 400 };
	double x[N];
	struct period_result p;

	(void)state;
	for (int i = 0; i < N; i++)
		x[i] = i % 13 == 0 ? NAN : 10 * sin(2 * M_PI * i / 20.0);
	assert_int_equal(series_period(x, N, 0.5, &p), 0);
	assert_true(fabs(p.period_s - 10.0) <= 0.5);
}

static void test_trend_and_forecast(void **state)
{
	enum { N = 3600 };
	static double x[N];
	uint64_t seed = 3;
	struct trend_result t;
	double secs;

	(void)state;
	/* a leak: 2 GiB growing 1 MiB/s, noisy, with outliers */
	for (int i = 0; i < N; i++)
		x[i] = 2048.0 + 1.0 * i + 30 * noise(&seed) + (i % 500 == 0 ? 4000 : 0);
	assert_int_equal(series_trend(x, N, 1.0, 0.2, 0.05, &t), 0);
	assert_true(fabs(t.slope - 1.0) <= 0.1);
	assert_true(t.r2 > 0.5);
	/* 8 GiB limit: (8192 - ~5647) / 1 s ~ 2545 s */
	assert_int_equal(series_time_to(&t, 8192.0, &secs), 0);
	assert_true(fabs(secs - (8192.0 - (2048.0 + N - 1))) <= 0.1 * 2545);
	/* without outliers Holt's own slope agrees */
	for (int i = 0; i < N; i++)
		x[i] = 2048.0 + 1.0 * i + 30 * noise(&seed);
	assert_int_equal(series_trend(x, N, 1.0, 0.2, 0.05, &t), 0);
	assert_true(fabs(t.holt_slope - 1.0) <= 0.1);
	assert_true(t.r2 > 0.99);
	/* shrinking usage never reaches a higher limit */
	for (int i = 0; i < N; i++)
		x[i] = 5000.0 - 0.5 * i;
	assert_int_equal(series_trend(x, N, 1.0, 0.3, 0.1, &t), 0);
	assert_true(fabs(t.slope + 0.5) < 1e-9);
	assert_int_equal(series_time_to(&t, 8192.0, &secs), -ENODATA);
	assert_int_equal(series_time_to(&t, 1000.0, &secs), 0);
	assert_true(secs > 0);
}

static void test_trend_bad_input(void **state)
{
	double x[4] = {NAN, 1, NAN, 2};
	struct trend_result t;

	(void)state;
	assert_int_equal(series_trend(x, 4, 1.0, 0.5, 0.1, &t), -ENODATA);
	assert_int_equal(series_trend(x, 4, 0.0, 0.5, 0.1, &t), -EINVAL);
	assert_int_equal(series_trend(x, 4, 1.0, 0.0, 0.1, &t), -EINVAL);
	assert_int_equal(series_trend(NULL, 4, 1.0, 0.5, 0.1, &t), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_period_found),	  cmocka_unit_test(test_no_period),
	    cmocka_unit_test(test_period_with_gaps),  cmocka_unit_test(test_trend_and_forecast),
	    cmocka_unit_test(test_trend_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
