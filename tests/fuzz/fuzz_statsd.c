/*
 * fuzz_statsd.c - libFuzzer target for what programs send to the StatsD
 * sockets and what the store reads back: the first byte picks the parser,
 * the rest is its input.
 *   even: a datagram fed to an aggregator twice (two ticks, so that the
 *         gauges' memory is used), each tick taken and released; every
 *         point's sketch must format and parse back to the same text
 *   odd:  a sketch's text form (app_sketch_parse), which when accepted
 *         must format, parse and format again to the same text
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app/statsd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_sketch(const struct app_sketch *s)
{
	struct app_sketch back;
	struct strbuf a, b;

	strbuf_init(&a, 0);
	strbuf_init(&b, 0);
	app_sketch_init(&back);
	if (app_sketch_format(s, &a) == 0) {
		if (app_sketch_parse(&back, strbuf_str(&a), a.len) ||
		    app_sketch_format(&back, &b) || a.len != b.len ||
		    memcmp(strbuf_str(&a), strbuf_str(&b), a.len) != 0)
			abort();
	}
	app_sketch_release(&back);
	strbuf_release(&a);
	strbuf_release(&b);
}

static void take(struct app_agg *a)
{
	struct app_point *pts;
	struct app_mark *marks;
	size_t npts, nmarks;
	double q;

	app_agg_take(a, &pts, &npts, &marks, &nmarks);
	for (size_t i = 0; i < npts; i++) {
		if (app_type_has_sketch(pts[i].type)) {
			app_sketch_quantile(&pts[i].sk, 0.99, &q);
			check_sketch(&pts[i].sk);
		}
		app_point_release(&pts[i]);
	}
	free(pts);
	free(marks);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data + 1;

	if (size == 0)
		return 0;
	if (data[0] % 2 == 0) {
		struct app_agg a;
		char val[64];

		app_agg_init(&a);
		app_agg_feed(&a, text, size - 1, 42, 1000);
		take(&a);
		app_agg_feed(&a, text, size - 1, 0, 2000);
		take(&a);
		app_agg_release(&a);
		/* the tag lookup on the parsed line's canonical tags */
		{
			struct statsd_line l;
			const char *nl = memchr(text, '\n', size - 1);

			if (statsd_parse_line(text, nl ? (size_t)(nl - text) : size - 1, &l) == 0)
				statsd_tag_get(l.tags, "job", val, sizeof(val));
		}
	} else {
		struct app_sketch s;

		app_sketch_init(&s);
		if (app_sketch_parse(&s, text, size - 1) == 0) {
			double q;

			/* "1.0" and "1" both parse: the check is format, parse, format */
			app_sketch_quantile(&s, 0.5, &q);
			check_sketch(&s);
		}
		app_sketch_release(&s);
	}
	return 0;
}
