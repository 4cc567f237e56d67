/*
 * test_appstat.c - the app metrics' model (src/app/appstat.c): type names,
 * the sketch's accuracy on known data, its exact merge, negatives and
 * zeros, the bin cap, the text form's round trip and every malformed text
 * refused; app_point_merge.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "app/appstat.h"

#include "sketch_fixture.h"

static void test_types(void **state)
{
	enum app_type t;

	(void)state;
	for (int i = 0; i < APP_TYPES; i++) {
		assert_int_equal(app_type_parse(app_type_name((enum app_type)i), &t), 0);
		assert_int_equal(t, i);
	}
	assert_string_equal(app_type_name(APP_TIMER), "timer");
	assert_string_equal(app_type_name(APP_DISTRIBUTION), "distribution");
	assert_int_equal(app_type_parse("ms", &t), -EINVAL);
	assert_int_equal(app_type_parse("", &t), -EINVAL);
	assert_true(app_type_has_sketch(APP_HISTOGRAM));
	assert_false(app_type_has_sketch(APP_COUNTER));
	assert_false(app_type_has_sketch(APP_SET));
}

/* The element at rank q (count - 1) of 1..n, as the sketch ranks. */
static double true_quantile(int n, double q)
{
	return floor(q * (n - 1)) + 1;
}

static void test_sketch_quantiles(void **state)
{
	struct app_sketch s;
	double v;

	(void)state;
	/* the hard-coded log(gamma) is the one alpha gives */
	assert_true(fabs(log1p(2 * APP_SKETCH_ALPHA / (1 - APP_SKETCH_ALPHA)) -
			 0.020000666706669525) < 1e-15);
	app_sketch_init(&s);
	assert_false(app_sketch_quantile(&s, 0.5, &v));
	for (int i = 1; i <= 10000; i++)
		assert_int_equal(app_sketch_add(&s, i, 1), 0);
	assert_true(app_sketch_count(&s) == 10000);
	for (int k = 0; k <= 100; k++) {
		double q = k / 100.0, t = true_quantile(10000, q);

		assert_true(app_sketch_quantile(&s, q, &v));
		assert_true(fabs(v - t) <= APP_SKETCH_ALPHA * t + 1e-9);
	}
	assert_true(app_sketch_quantile(&s, 0.99, &v));
	assert_true(v >= 9900 * 0.99 && v <= 9900 * 1.01);
	assert_false(app_sketch_quantile(&s, 1.5, &v));
	assert_false(app_sketch_quantile(&s, -0.1, &v));
	/* four decades are 461 keys; small integers leave gaps: 315 used */
	assert_true(s.pos.n >= 314 && s.pos.n <= 316);
	assert_int_equal(s.neg.n, 0);
	assert_int_equal(app_sketch_add(&s, NAN, 1), -EINVAL);
	assert_int_equal(app_sketch_add(&s, INFINITY, 1), -EINVAL);
	assert_int_equal(app_sketch_add(&s, 1, 0), -EINVAL);
	assert_int_equal(app_sketch_add(&s, 1, -1), -EINVAL);
	assert_true(app_sketch_count(&s) == 10000);
	app_sketch_release(&s);
}

/* One 12.5 ms timing: its p50 is 12.5, not its bucket's value; the seen range bounds every quantile. */
static void test_quantile_within_seen_range(void **state)
{
	struct app_sketch s;
	double v;

	(void)state;
	app_sketch_init(&s);
	assert_int_equal(app_sketch_add(&s, 12.5, 1), 0);
	assert_true(app_sketch_quantile(&s, 0.5, &v));
	assert_true(v != 12.5); /* the sketch alone: its bucket's value */
	assert_true(app_quantile(&s, 12.5, 12.5, 0.5, &v));
	assert_true(v == 12.5);
	assert_true(app_quantile(&s, 12.5, 12.5, 0.99, &v));
	assert_true(v == 12.5);
	assert_int_equal(app_sketch_add(&s, 80.0, 1), 0);
	assert_true(app_quantile(&s, 12.5, 80.0, 1.0, &v));
	assert_true(v <= 80.0 && v > 79.0);
	assert_true(app_quantile(&s, 12.5, 80.0, 0.0, &v));
	assert_true(v >= 12.5 && v < 12.6);
	app_sketch_release(&s);
}

static void test_sketch_negative_zero(void **state)
{
	struct app_sketch s;
	double v;

	(void)state;
	app_sketch_init(&s);
	/* -100..100: 100 negatives, one zero (twice weighted), 100 positives */
	for (int i = -100; i <= 100; i++)
		assert_int_equal(app_sketch_add(&s, i, i == 0 ? 2 : 1), 0);
	assert_true(s.zero == 2);
	assert_true(app_sketch_count(&s) == 202);
	assert_true(app_sketch_quantile(&s, 0, &v));
	assert_true(fabs(v + 100) <= 1.0);
	assert_true(app_sketch_quantile(&s, 1, &v));
	assert_true(fabs(v - 100) <= 1.0);
	/* ranks 100 and 101 (of 0..201) are the zeros */
	assert_true(app_sketch_quantile(&s, 100.0 / 201, &v));
	assert_true(v == 0);
	assert_true(app_sketch_quantile(&s, 99.0 / 201, &v));
	assert_true(fabs(v + 1) <= 0.01);
	assert_true(app_sketch_quantile(&s, 102.0 / 201, &v));
	assert_true(fabs(v - 1) <= 0.01);
	/* weights: 3 of weight 10 outweigh 1000 of weight 0.001 */
	app_sketch_release(&s);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(app_sketch_add(&s, 5, 0.001), 0);
	assert_int_equal(app_sketch_add(&s, -7, 30), 0);
	assert_true(app_sketch_quantile(&s, 0.5, &v));
	assert_true(fabs(v + 7) <= 0.07);
	/* a value too small for the buckets counts as zero */
	assert_int_equal(app_sketch_add(&s, 1e-310, 1), 0);
	assert_true(s.zero == 1);
	app_sketch_release(&s);
}

static void test_sketch_merge(void **state)
{
	struct app_sketch all, a, b, empty;

	(void)state;
	app_sketch_init(&all);
	app_sketch_init(&a);
	app_sketch_init(&b);
	app_sketch_init(&empty);
	for (int i = -500; i <= 3000; i += 7) {
		struct app_sketch *half = (i / 7) % 3 ? &a : &b;

		assert_int_equal(app_sketch_add(&all, i * 1.5, 1), 0);
		assert_int_equal(app_sketch_add(half, i * 1.5, 1), 0);
	}
	assert_int_equal(app_sketch_merge(&a, &b), 0);
	assert_sketch_equal(&a, &all);
	assert_int_equal(app_sketch_merge(&a, &empty), 0);
	assert_sketch_equal(&a, &all);
	assert_int_equal(app_sketch_merge(&empty, &all), 0);
	assert_sketch_equal(&empty, &all);
	app_sketch_release(&all);
	app_sketch_release(&a);
	app_sketch_release(&b);
	app_sketch_release(&empty);
}

static void test_sketch_cap(void **state)
{
	struct app_sketch s, t;
	double v;

	(void)state;
	app_sketch_init(&s);
	app_sketch_init(&t);
	/* values over 1e-150..1e150: ~34,500 keys, kept to APP_SKETCH_MAX */
	for (int i = -150; i <= 150; i++)
		for (int j = 1; j < 100; j++)
			assert_int_equal(app_sketch_add(&s, pow(10, i) * (1 + j / 100.0), 1), 0);
	assert_int_equal(s.pos.n, APP_SKETCH_MAX);
	assert_true(app_sketch_count(&s) == 301 * 99);
	for (size_t i = 1; i < s.pos.n; i++)
		assert_true(s.pos.b[i].key > s.pos.b[i - 1].key);
	/* the highest values keep their accuracy */
	assert_true(app_sketch_quantile(&s, 1, &v));
	assert_true(fabs(v - 1.99e150) <= 0.01 * 1.99e150);
	/* full, with keys 2, 4, ...: each way a new key is collapsed */
	{
		struct app_sketch f;
		const double lg = 0.020000666706669525;

		app_sketch_init(&f);
		for (int k = 1; k <= APP_SKETCH_MAX; k++)
			assert_int_equal(app_sketch_add(&f, exp((2 * k - 0.5) * lg), 1), 0);
		assert_int_equal(f.pos.n, APP_SKETCH_MAX);
		assert_int_equal(f.pos.b[0].key, 2);
		/* below the lowest key: into it */
		assert_int_equal(app_sketch_add(&f, 0.5, 2), 0);
		assert_int_equal(f.pos.b[0].key, 2);
		assert_true(f.pos.b[0].n == 3);
		/* between the lowest two (key 3): the lowest moves up to it */
		assert_int_equal(app_sketch_add(&f, exp(2.5 * lg), 1), 0);
		assert_int_equal(f.pos.b[0].key, 3);
		assert_true(f.pos.b[0].n == 4);
		assert_int_equal(f.pos.b[1].key, 4);
		assert_true(f.pos.b[1].n == 1);
		/* higher (key 7): the lowest two become one (key 4), 7 comes in */
		assert_int_equal(app_sketch_add(&f, exp(6.5 * lg), 1), 0);
		assert_int_equal(f.pos.n, APP_SKETCH_MAX);
		assert_int_equal(f.pos.b[0].key, 4);
		assert_true(f.pos.b[0].n == 5);
		assert_int_equal(f.pos.b[1].key, 6);
		assert_int_equal(f.pos.b[2].key, 7);
		assert_true(f.pos.b[2].n == 1);
		assert_int_equal(f.pos.b[3].key, 8);
		assert_true(app_sketch_count(&f) == APP_SKETCH_MAX + 4);
		app_sketch_release(&f);
	}
	/* a merge over the cap collapses the lowest too, and counts stay */
	for (int i = 1; i <= 5000; i++)
		assert_int_equal(app_sketch_add(&t, -1e-100 * i, 1), 0);
	assert_int_equal(app_sketch_merge(&t, &s), 0);
	assert_int_equal(app_sketch_merge(&t, &s), 0);
	assert_int_equal(t.pos.n, APP_SKETCH_MAX);
	assert_true(app_sketch_count(&t) == 2 * 301 * 99 + 5000);
	app_sketch_release(&s);
	app_sketch_release(&t);
}

static void test_sketch_text(void **state)
{
	struct app_sketch s, back;
	struct strbuf sb;

	(void)state;
	app_sketch_init(&s);
	app_sketch_init(&back);
	strbuf_init(&sb, 0);
	assert_int_equal(app_sketch_format(&s, &sb), 0);
	assert_int_equal(sb.len, 0);
	assert_int_equal(app_sketch_parse(&back, "", 0), 0);
	assert_true(app_sketch_count(&back) == 0);

	assert_int_equal(app_sketch_add(&s, 1, 1), 0);
	assert_int_equal(app_sketch_add(&s, 1, 0.5), 0);
	assert_int_equal(app_sketch_add(&s, 100, 1), 0);
	assert_int_equal(app_sketch_add(&s, 0, 3), 0);
	assert_int_equal(app_sketch_add(&s, -2, 0.1), 0);
	assert_int_equal(app_sketch_format(&s, &sb), 0);
	/* key of 1 is 0; of 100 ceil(4.60517 / 0.0200007) = 231; of 2: 35 */
	assert_string_equal(strbuf_str(&sb), "z=3;p=0:1.5,231:1;n=35:0.10000000000000001");
	assert_int_equal(app_sketch_parse(&back, sb.buf, sb.len), 0);
	assert_sketch_equal(&s, &back);

	/* only one part present, each alone */
	assert_int_equal(app_sketch_parse(&back, "n=-3:2", 6), 0);
	assert_int_equal(back.neg.n, 1);
	assert_int_equal(back.neg.b[0].key, -3);
	assert_true(back.zero == 0 && back.pos.n == 0);
	assert_int_equal(app_sketch_parse(&back, "z=1e+300", 8), 0);
	assert_true(back.zero == 1e300);

	/* many ticks: a round trip of a big sketch too */
	for (int i = 1; i < 3000; i++)
		assert_int_equal(app_sketch_add(&s, i * 0.37, 1.0 / 3), 0);
	strbuf_reset(&sb);
	assert_int_equal(app_sketch_format(&s, &sb), 0);
	assert_int_equal(app_sketch_parse(&back, sb.buf, sb.len), 0);
	assert_sketch_equal(&s, &back);
	strbuf_release(&sb);
	app_sketch_release(&s);
	app_sketch_release(&back);
}

static void test_sketch_malformed(void **state)
{
	static const char *const bad[] = {
		"z",		 "z=",		  "z=0",	  "z=-1",	    "z=nan",
		"z=inf",	 "z=0x10",	  "z=1;",	  ";z=1",	    "z=1;z=1",
		"p=1:1;z=1",	 "n=1:1;p=1:1",	  "q=1:1",	  "p=",		    "p=1",
		"p=1:",		 "p=:1",	  "p=1:1,",	  "p=,1:1",	    "p=1:1,,2:1",
		"p=2:1,1:1",	 "p=1:1,1:1",	  "p=x:1",	  "p=1.5:1",	    "p=1:0",
		"p=99999999:1",	 "p=40000:1",	  "p=-40000:1",	  "p=--1:1",	    "p=1:1e999",
		"p=1:1:1",	 "P=1:1",	  " z=1",	  "z=1 ",	    "z=1e",
		"p=0:1;n=0:1;",	 "z=1;;p=0:1",	  "p=-:1",	    "p=1:+",
	};
	struct app_sketch s;
	struct strbuf sb;

	(void)state;
	app_sketch_init(&s);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		assert_int_equal(app_sketch_add(&s, 3, 1), 0);
		if (app_sketch_parse(&s, bad[i], strlen(bad[i])) != -EINVAL)
			fail_msg("parsed '%s'", bad[i]);
		assert_true(app_sketch_count(&s) == 0);
	}
	/* embedded NUL; and more bins than the cap */
	assert_int_equal(app_sketch_parse(&s, "z=1\0", 4), -EINVAL);
	strbuf_init(&sb, 0);
	strbuf_addstr(&sb, "p=");
	for (int i = 0; i <= APP_SKETCH_MAX; i++)
		strbuf_addf(&sb, "%s%d:1", i ? "," : "", i);
	assert_int_equal(app_sketch_parse(&s, sb.buf, sb.len), -EINVAL);
	/* exactly the cap is fine */
	sb.len = (size_t)(strrchr(sb.buf, ',') - sb.buf);
	assert_int_equal(app_sketch_parse(&s, sb.buf, sb.len), 0);
	assert_int_equal(s.pos.n, APP_SKETCH_MAX);
	strbuf_release(&sb);
	app_sketch_release(&s);
}

static void test_point_merge(void **state)
{
	struct app_point a, b, empty;
	double v;

	(void)state;
	app_point_init(&a);
	app_point_init(&b);
	app_point_init(&empty);
	a.type = b.type = empty.type = APP_TIMER;
	a.count = 2;
	a.sum = 30;
	a.min = 10;
	a.max = 20;
	a.last = 20;
	assert_int_equal(app_sketch_add(&a.sk, 10, 1), 0);
	assert_int_equal(app_sketch_add(&a.sk, 20, 1), 0);
	b.count = 1;
	b.sum = 5;
	b.min = b.max = b.last = 5;
	assert_int_equal(app_sketch_add(&b.sk, 5, 1), 0);
	assert_int_equal(app_point_merge(&empty, &a), 0);
	assert_true(empty.min == 10 && empty.max == 20 && empty.count == 2);
	assert_int_equal(app_point_merge(&a, &b), 0);
	assert_true(a.count == 3 && a.sum == 35 && a.min == 5 && a.max == 20 && a.last == 5);
	assert_true(app_sketch_quantile(&a.sk, 0, &v));
	assert_true(fabs(v - 5) <= 0.05);
	app_point_release(&b);
	app_point_init(&b);
	b.type = APP_TIMER;
	assert_int_equal(app_point_merge(&a, &b), 0); /* nothing: last stays */
	assert_true(a.count == 3 && a.last == 5 && a.min == 5);
	b.type = APP_COUNTER;
	assert_int_equal(app_point_merge(&a, &b), -EINVAL);
	app_point_release(&a);
	app_point_release(&b);
	app_point_release(&empty);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_sketch_quantiles),
		cmocka_unit_test(test_quantile_within_seen_range),
		cmocka_unit_test(test_sketch_negative_zero),
		cmocka_unit_test(test_sketch_merge),
		cmocka_unit_test(test_sketch_cap),
		cmocka_unit_test(test_sketch_text),
		cmocka_unit_test(test_sketch_malformed),
		cmocka_unit_test(test_point_merge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
