/*
 * test_statsd.c - the StatsD / DogStatsD parser and the aggregator
 * (src/app/statsd.c): every type, rates, tags made canonical, multi-value
 * lines, events with their exact lengths, service checks, a table of bad
 * lines; gauges' deltas across ticks, sets' distinct members, the caps.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "app/statsd.h"

static struct statsd_line line;

static int parse(const char *s)
{
	return statsd_parse_line(s, strlen(s), &line);
}

static void test_parse_types(void **state)
{
	(void)state;
	assert_int_equal(parse("frames:3|c"), 0);
	assert_int_equal(line.kind, STATSD_METRIC);
	assert_string_equal(line.name, "frames");
	assert_int_equal(line.type, APP_COUNTER);
	assert_int_equal(line.nvalues, 1);
	assert_true(line.values[0] == 3);
	assert_true(line.rate == 1);
	assert_string_equal(line.tags, "");

	assert_int_equal(parse("temp:-4.5|g"), 0);
	assert_int_equal(line.type, APP_GAUGE);
	assert_true(line.delta);
	assert_true(line.values[0] == -4.5);
	assert_int_equal(parse("temp:4.5e2|g"), 0);
	assert_false(line.delta);
	assert_true(line.values[0] == 450);
	assert_int_equal(parse("temp:+7|g"), 0);
	assert_true(line.delta);
	assert_true(line.values[0] == 7);

	assert_int_equal(parse("req.latency:12.5|ms"), 0);
	assert_int_equal(line.type, APP_TIMER);
	assert_true(line.values[0] == 12.5);
	assert_int_equal(parse("size:.5|h"), 0);
	assert_int_equal(line.type, APP_HISTOGRAM);
	assert_true(line.values[0] == 0.5);
	assert_int_equal(parse("size:-3|d"), 0);
	assert_int_equal(line.type, APP_DISTRIBUTION);
	assert_true(line.values[0] == -3);

	assert_int_equal(parse("users:10.0.0.1:8080|s"), 0);
	assert_int_equal(line.type, APP_SET);
	assert_int_equal(line.nvalues, 0);
	assert_int_equal(line.member_len, strlen("10.0.0.1:8080"));
	assert_memory_equal(line.member, "10.0.0.1:8080", line.member_len);

	/* a name may hold anything but control characters, '|' and ':' */
	assert_int_equal(parse("my app.frames/s #1:1|c"), 0);
	assert_string_equal(line.name, "my app.frames/s #1");
}

static void test_parse_fields(void **state)
{
	(void)state;
	assert_int_equal(parse("frames:3|c|@0.5"), 0);
	assert_true(line.rate == 0.5);
	assert_int_equal(parse("frames:3|c|@1"), 0);
	assert_true(line.rate == 1);
	assert_int_equal(parse("t:3|ms|@0.25|#b:2,a:1,b:2,,c|c:abc123|T1700000000"), 0);
	assert_true(line.rate == 0.25);
	assert_string_equal(line.tags, "a:1,b:2,c");
	assert_true(line.ts_ms == 1700000000000);
	assert_int_equal(parse("t:3|ms|#z,y,x|@0.1"), 0);
	assert_string_equal(line.tags, "x,y,z");
	assert_true(line.rate == 0.1);
	/* DogStatsD's later fields (e:, card:) are known to be ignorable */
	assert_int_equal(parse("t:3|ms|e:it-false,cn-x|card:high"), 0);

	/* multi-value (DogStatsD 1.1) */
	assert_int_equal(parse("lat:1:2.5:-3|h|#k:v"), 0);
	assert_int_equal(line.nvalues, 3);
	assert_true(line.values[0] == 1 && line.values[1] == 2.5 && line.values[2] == -3);
	assert_int_equal(parse("g:+1:-2|g"), 0);
	assert_true(line.delta);
	assert_int_equal(line.nvalues, 2);

	/* tag lookups */
	assert_int_equal(parse("x:1|c|#job:42,cluster,env:prod:eu"), 0);
	{
		char val[16];

		assert_true(statsd_tag_get(line.tags, "job", val, sizeof(val)));
		assert_string_equal(val, "42");
		assert_true(statsd_tag_get(line.tags, "cluster", val, sizeof(val)));
		assert_string_equal(val, "");
		assert_true(statsd_tag_get(line.tags, "env", val, sizeof(val)));
		assert_string_equal(val, "prod:eu");
		assert_false(statsd_tag_get(line.tags, "jo", val, sizeof(val)));
		assert_false(statsd_tag_get(line.tags, "clusters", val, sizeof(val)));
		assert_false(statsd_tag_get("", "job", val, sizeof(val)));
		assert_true(statsd_tag_get("job:123456789", "job", val, 4));
		assert_string_equal(val, "123");
	}
}

static void test_parse_values_max(void **state)
{
	char buf[4096];
	size_t n = 0;

	(void)state;
	n += (size_t)snprintf(buf, sizeof(buf), "v");
	for (int i = 0; i < STATSD_MAX_VALUES; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, ":%d", i);
	snprintf(buf + n, sizeof(buf) - n, "|h");
	assert_int_equal(parse(buf), 0);
	assert_int_equal(line.nvalues, STATSD_MAX_VALUES);
	assert_true(line.values[255] == 255);
	snprintf(buf + n, sizeof(buf) - n, ":1|h");
	assert_int_equal(parse(buf), -EINVAL);
}

/* Numbers read without strtod (plain decimals) are the very doubles strtod gives. */
static void test_parse_numbers(void **state)
{
	static const char *const nums[] = {
		"0",	 "-0",	     "1.",	"+.5",	 "0.1",	 "0.3",		   "123456789012345",
		"1e3",	 "1.5E-3",   "-2.675",	"9.995", "3.14159265358979", "0.000000000000001",
		"1e308", "12345678901234567890", ".1234567890123456789",
	};
	char buf[128];
	uint64_t x = 88172645463325252ULL;

	(void)state;
	for (size_t i = 0; i < sizeof(nums) / sizeof(*nums); i++) {
		snprintf(buf, sizeof(buf), "n:%s|g", nums[i]);
		assert_int_equal(parse(buf), 0);
		assert_memory_equal(&line.values[0], &(double){strtod(nums[i], NULL)},
				    sizeof(double));
	}
	for (int i = 0; i < 100000; i++) {
		char num[32];
		double want;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		snprintf(num, sizeof(num), "%.*f", (int)(x % 12), (double)(x >> 20) / 1e6);
		num[15] = '\0';
		if (num[strlen(num) - 1] == '.')
			continue;
		want = strtod(num, NULL);
		snprintf(buf, sizeof(buf), "n:%s|ms", num);
		assert_int_equal(parse(buf), 0);
		if (memcmp(&line.values[0], &want, sizeof(want)) != 0)
			fail_msg("'%s': %.17g, strtod %.17g", num, line.values[0], want);
	}
}

static void test_parse_events(void **state)
{
	(void)state;
	assert_int_equal(parse("_e{5,4}:start|text"), 0);
	assert_int_equal(line.kind, STATSD_EVENT);
	assert_string_equal(line.name, "start");
	assert_string_equal(line.text, "text");
	assert_true(line.ts_ms == 0);

	/* the lengths say where title and text end: '|' may be in them */
	assert_int_equal(parse("_e{3,11}:a|b|line\\nline2|d:1700000001|h:host|p:low|#z,a:1"), 0);
	assert_string_equal(line.name, "a|b");
	assert_string_equal(line.text, "line\nline2");
	assert_true(line.ts_ms == 1700000001000);
	assert_string_equal(line.tags, "a:1,z");
	assert_int_equal(parse("_e{5,0}:phase|"), 0);
	assert_string_equal(line.text, "");

	/* service checks: recognised */
	assert_int_equal(parse("_sc|db.up|0|#env:prod|m:fine"), 0);
	assert_int_equal(line.kind, STATSD_SERVICE_CHECK);
	assert_string_equal(line.name, "db.up");
}

static void test_parse_bad(void **state)
{
	static const char *const bad[] = {
		"",
		"frames",
		"frames:3",
		"frames:3|",
		"frames:3|x",
		"frames:3|cc",
		"frames:3|C",
		":3|c",
		"frames:|c",
		"frames:abc|c",
		"frames:nan|c",
		"frames:inf|g",
		"frames:-infinity|ms",
		"frames:0x10|c",
		"frames:1e999|c",
		"frames:1e|c",
		"frames:1.2.3|c",
		"frames:+|c",
		"frames:1 |c",
		"frames:1::2|h",
		"frames:1:|h",
		"frames:3|c|",
		"frames:3|c||#a",
		"frames:3|c|@",
		"frames:3|c|@0",
		"frames:3|c|@1.5",
		"frames:3|c|@-0.5",
		"frames:3|c|@nan",
		"frames:3|c|@1e-320",
		"frames:3|c|@0.5|@0.5",
		"frames:3|c|#a|#b",
		"frames:3|c|T",
		"frames:3|c|T12x",
		"frames:3|c|Tnow",
		"frames:3|c|bogus",
		"frames:3|c|:x",
		"frames:3|c|X:1",
		"g:5:+1|g",
		"g:+1:5|g",
		"users:|s",
		"fra\tmes:3|c",
		"fra\x01mes:3|c",
		"a|b:3|c",
		"frames:3|c|#a\tb",
		"_e{5,4}:start|tex",
		"_e{5,4}:start|textx",
		"_e{5,4}:star|text",
		"_e{6,4}:start|text",
		"_e{5,4}start|text",
		"_e{5,4:start|text",
		"_e{,4}:start|text",
		"_e{5}:start|text",
		"_e{0,4}:|text",
		"_e{5,4}:start|text|",
		"_e{5,4}:start|text|d:",
		"_e{5,4}:start|text|d:x",
		"_e{5,4}:start|text|zz",
		"_e{5,4}:start|text|#a|#b",
		"_e{999999,4}:start|text",
		"_e{5,99999}:start|text",
		"_sc|",
		"_sc||0",
		"_sc|db|",
		"_sc|db|4",
		"_sc|db|ok",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		if (parse(bad[i]) != -EINVAL)
			fail_msg("parsed '%s'", bad[i]);
}

static void test_parse_lengths(void **state)
{
	char buf[3000];

	(void)state;
	/* a name of APP_NAME_MAX - 1 bytes is the longest */
	memset(buf, 'n', APP_NAME_MAX - 1);
	strcpy(buf + APP_NAME_MAX - 1, ":1|c");
	assert_int_equal(parse(buf), 0);
	assert_int_equal(strlen(line.name), APP_NAME_MAX - 1);
	memset(buf, 'n', APP_NAME_MAX);
	strcpy(buf + APP_NAME_MAX, ":1|c");
	assert_int_equal(parse(buf), -EINVAL);
	/* tags longer than APP_TAGS_MAX - 1 once canonical */
	strcpy(buf, "x:1|c|#");
	memset(buf + 7, 't', APP_TAGS_MAX - 1);
	buf[7 + APP_TAGS_MAX - 1] = '\0';
	assert_int_equal(parse(buf), 0);
	strcat(buf, "t");
	assert_int_equal(parse(buf), -EINVAL);
	/* ... but duplicates that fold below the limit are fine */
	strcpy(buf, "x:1|c|#");
	for (int i = 0; i < 200; i++)
		strcat(buf, "dup:tag,");
	assert_int_equal(parse(buf), 0);
	assert_string_equal(line.tags, "dup:tag");
	/* a number too long for its bounded copy */
	strcpy(buf, "x:");
	memset(buf + 2, '1', 100);
	strcpy(buf + 102, "|c");
	assert_int_equal(parse(buf), -EINVAL);
	/* the line's length is what counts, not a NUL */
	assert_int_equal(statsd_parse_line("x:1|c|#a", 5, &line), 0);
	assert_string_equal(line.tags, "");
	assert_int_equal(statsd_parse_line("x:1|c\0", 6, &line), -EINVAL);
}

/* ---- the aggregator ---- */

static struct app_point *pts;
static struct app_mark *marks;
static size_t npts, nmarks;

static void take(struct app_agg *a)
{
	app_agg_take(a, &pts, &npts, &marks, &nmarks);
}

static void drop(void)
{
	for (size_t i = 0; i < npts; i++)
		app_point_release(&pts[i]);
	free(pts);
	free(marks);
	pts = NULL;
	marks = NULL;
}

static const struct app_point *find(const char *name, const char *tags, enum app_type type)
{
	for (size_t i = 0; i < npts; i++)
		if (strcmp(pts[i].name, name) == 0 && strcmp(pts[i].tags, tags) == 0 &&
		    pts[i].type == type)
			return &pts[i];
	fail_msg("no point %s{%s}", name, tags);
	return NULL;
}

static void feed(struct app_agg *a, const char *s)
{
	app_agg_feed(a, s, strlen(s), 77, 5000);
}

static void test_agg_counters_timers(void **state)
{
	const struct app_point *p;
	struct app_agg a;
	double v;

	(void)state;
	app_agg_init(&a);
	feed(&a, "frames:3|c|@0.5\nframes:2|c\r\n\nframes:1|c|#b,a\n"
		 "frames:4|c|#a,b|@0.25\nlat:10|ms\nlat:20:30|ms|@0.5\nbogus\n\r\n");
	assert_int_equal(a.lines, 7);
	assert_int_equal(a.bad_lines, 1);
	assert_int_equal(a.dropped, 0);
	take(&a);
	assert_int_equal(npts, 3);
	assert_int_equal(nmarks, 0);
	p = find("frames", "", APP_COUNTER);
	assert_true(p->sum == 8 && p->count == 3);
	assert_true(p->min == 2 && p->max == 3 && p->last == 2);
	p = find("frames", "a,b", APP_COUNTER);
	assert_true(p->sum == 17 && p->count == 5);
	p = find("lat", "", APP_TIMER);
	/* 10 once, 20 and 30 each weighted 2 */
	assert_true(p->count == 5 && p->sum == 110);
	assert_true(p->min == 10 && p->max == 30 && p->last == 30);
	assert_true(app_sketch_count(&p->sk) == 5);
	assert_true(app_sketch_quantile(&p->sk, 1, &v));
	assert_true(fabs(v - 30) <= 0.3);
	assert_true(app_sketch_quantile(&p->sk, 0, &v));
	assert_true(fabs(v - 10) <= 0.1);
	assert_true(app_sketch_quantile(&p->sk, 0.5, &v)); /* rank 2 of 10,20,20,30,30 */
	assert_true(fabs(v - 20) <= 0.2);
	drop();

	/* the next tick starts empty */
	feed(&a, "frames:1|c");
	take(&a);
	assert_int_equal(npts, 1);
	assert_true(pts[0].sum == 1 && pts[0].count == 1);
	drop();
	take(&a);
	assert_int_equal(npts, 0);
	assert_null(pts);
	drop();
	app_agg_release(&a);
}

static void test_agg_gauges(void **state)
{
	const struct app_point *p;
	struct app_agg a;

	(void)state;
	app_agg_init(&a);
	/* a delta before any value starts from 0 */
	feed(&a, "q:+5|g\nq:-2|g\nlevel:10|g|#x\nlevel:12|g|#x");
	take(&a);
	assert_int_equal(npts, 2);
	p = find("q", "", APP_GAUGE);
	assert_true(p->last == 3 && p->count == 2 && p->min == 3 && p->max == 5);
	p = find("level", "x", APP_GAUGE);
	assert_true(p->last == 12 && p->count == 2 && p->min == 10);
	drop();
	/* the next tick: deltas move the remembered values */
	feed(&a, "q:+1:+1|g\nlevel:-20|g|#x\nlevel:+1|g");
	take(&a);
	assert_int_equal(npts, 3);
	assert_true(find("q", "", APP_GAUGE)->last == 5);
	assert_true(find("q", "", APP_GAUGE)->count == 2);
	assert_true(find("level", "x", APP_GAUGE)->last == -8);
	assert_true(find("level", "", APP_GAUGE)->last == 1); /* other tags: another gauge */
	drop();
	feed(&a, "q:0|g\nq:-1|g");
	take(&a);
	assert_true(find("q", "", APP_GAUGE)->last == -1);
	drop();
	app_agg_release(&a);
}

static void test_agg_sets(void **state)
{
	struct app_agg a;
	char buf[64];

	(void)state;
	app_agg_init(&a);
	feed(&a, "u:alice|s\nu:bob|s\nu:alice|s\nu:carol|s|#t\nv:alice|s");
	take(&a);
	assert_int_equal(npts, 3);
	assert_true(find("u", "", APP_SET)->last == 2);
	assert_true(find("u", "", APP_SET)->count == 3);
	assert_true(find("u", "t", APP_SET)->last == 1);
	assert_true(find("v", "", APP_SET)->last == 1);
	drop();
	/* distinct within a tick: alice again counts */
	feed(&a, "u:alice|s");
	take(&a);
	assert_true(find("u", "", APP_SET)->last == 1);
	drop();
	/* the members' cap, all sets together */
	for (int i = 0; i < APP_AGG_MAX_SET + 10; i++) {
		snprintf(buf, sizeof(buf), "big:m%d|s", i);
		feed(&a, buf);
	}
	feed(&a, "big:m0|s");
	assert_int_equal(a.dropped, 10);
	take(&a);
	assert_true(find("big", "", APP_SET)->last == APP_AGG_MAX_SET);
	assert_true(find("big", "", APP_SET)->count == APP_AGG_MAX_SET + 1);
	drop();
	app_agg_release(&a);
}

static void test_agg_events(void **state)
{
	struct app_agg a;

	(void)state;
	app_agg_init(&a);
	feed(&a, "_e{5,0}:train|\n_e{4,5}:eval|a\\nb.|d:1700000002\n_sc|db|0\n_e{4,0}:bad|");
	assert_int_equal(a.lines, 4);
	assert_int_equal(a.bad_lines, 1);
	take(&a);
	assert_int_equal(npts, 0);
	assert_int_equal(nmarks, 2);
	assert_string_equal(marks[0].name, "train");
	assert_true(marks[0].ts_ms == 5000);
	assert_int_equal(marks[0].pid, 77);
	assert_string_equal(marks[1].name, "eval");
	assert_string_equal(marks[1].text, "a\nb.");
	assert_true(marks[1].ts_ms == 1700000002000);
	drop();
	/* app_agg_add directly */
	assert_int_equal(statsd_parse_line("_e{1,0}:x|", 10, &line), 0);
	assert_int_equal(app_agg_add(&a, &line, 9, 123), 0);
	assert_int_equal(a.lines, 5);
	take(&a);
	assert_int_equal(nmarks, 1);
	assert_true(marks[0].ts_ms == 123 && marks[0].pid == 9);
	drop();
	app_agg_release(&a);
}

static void test_agg_caps(void **state)
{
	struct app_agg a;
	char buf[64];

	(void)state;
	app_agg_init(&a);
	for (int i = 0; i < APP_AGG_MAX_SERIES + 5; i++) {
		snprintf(buf, sizeof(buf), "m%d:1|c", i);
		feed(&a, buf);
	}
	feed(&a, "m0:1|c"); /* a known series still counts */
	for (int i = 0; i < APP_AGG_MAX_MARKS + 3; i++)
		feed(&a, "_e{1,0}:x|");
	assert_int_equal(a.dropped, 8);
	assert_int_equal(a.bad_lines, 0);
	take(&a);
	assert_int_equal(npts, APP_AGG_MAX_SERIES);
	assert_int_equal(nmarks, APP_AGG_MAX_MARKS);
	assert_true(find("m0", "", APP_COUNTER)->sum == 2);
	drop();
	/* the next tick has room again */
	feed(&a, "new:1|c");
	take(&a);
	assert_int_equal(npts, 1);
	drop();
	/* gauges are remembered across ticks, 10,000 at most */
	for (int i = 0; i < APP_AGG_MAX_SERIES; i++) {
		snprintf(buf, sizeof(buf), "g%d:%d|g", i, i);
		feed(&a, buf);
	}
	take(&a);
	drop();
	feed(&a, "g77:+1|g\ngnew:1|g");
	assert_int_equal(a.dropped, 9);
	take(&a);
	assert_int_equal(npts, 1);
	assert_true(find("g77", "", APP_GAUGE)->last == 78);
	drop();
	app_agg_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_types),
		cmocka_unit_test(test_parse_fields),
		cmocka_unit_test(test_parse_values_max),
		cmocka_unit_test(test_parse_numbers),
		cmocka_unit_test(test_parse_events),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_parse_lengths),
		cmocka_unit_test(test_agg_counters_timers),
		cmocka_unit_test(test_agg_gauges),
		cmocka_unit_test(test_agg_sets),
		cmocka_unit_test(test_agg_events),
		cmocka_unit_test(test_agg_caps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
