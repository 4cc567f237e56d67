/*
 * appstat.h - application metrics: what a program says of its own work
 * through StatsD / DogStatsD lines (statsd.h parses them), aggregated per
 * tick and per metric, and the markers it sets (DogStatsD events, `jobscope
 * mark`), which become the phases of a report.
 *
 * A metric is its name, its type and its tags (canonical: sorted, joined
 * with ',', "" when none); the same name with other tags is another series.
 * One app_point is one metric over one tick:
 *
 *   counter    count: increments received (weighted 1/rate), sum: their total
 *              (weighted 1/rate: "frames:3|c|@0.5" adds 6)
 *   gauge      last: the newest value (a "+3" / "-3" line moves the last one,
 *              across ticks: the aggregator remembers it); count: values
 *              set (a line "g:1:2|g" sets two); min, max, sum: of the
 *              values it took in the tick
 *   timer, histogram, distribution
 *              count (weighted), sum, min, max, last, and sk: the values'
 *              sketch, from which p50/p95/p99 come; timers are in ms, as
 *              StatsD sends them
 *   set        count: lines; last (and min, max): members distinct within
 *              the tick; sum: 0
 *
 * Counters' min, max and last are of the values as sent (not weighted).
 *
 * min/max/last/sum are meaningful only when count > 0.  Units are the
 * program's own (a timer's are ms); nothing is converted.
 *
 * The sketch is a log-bucketed histogram with relative accuracy
 * APP_SKETCH_ALPHA (a DDSketch): a value v > 0 falls in bucket
 * ceil(log_gamma(v)), gamma = (1 + alpha) / (1 - alpha); negatives mirror
 * it; zeros are counted apart.  Any quantile it gives is within alpha of a
 * value that was given (relative error), two sketches merge exactly
 * (bucket counts add), and it is serialised as text (app_sketch_format) so
 * that rows stream to a head like any other column.
 */
#ifndef JOBSCOPE_APPSTAT_H
#define JOBSCOPE_APPSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

#define APP_NAME_MAX	 256  /* bytes of a metric or marker name, NUL included */
#define APP_TAGS_MAX	 1024 /* bytes of the canonical tags, NUL included */
#define APP_SKETCH_ALPHA 0.01 /* the sketch's relative accuracy */
#define APP_SKETCH_MAX	 4096 /* buckets per sign at most (lowest ones merged beyond) */

enum app_type {
	APP_COUNTER,
	APP_GAUGE,
	APP_TIMER,	  /* "ms" */
	APP_HISTOGRAM,	  /* "h" */
	APP_DISTRIBUTION, /* "d" */
	APP_SET,	  /* "s" */
	APP_TYPES,
};

struct app_bin {
	int32_t key;
	double n;
};

/* Bins sorted by key, no key twice. */
struct app_bins {
	struct app_bin *b;
	size_t n, alloc;
};

struct app_sketch {
	double zero; /* values == 0 (and |v| below the smallest bucket) */
	struct app_bins pos, neg;
};

struct app_point {
	char name[APP_NAME_MAX];
	char tags[APP_TAGS_MAX];
	enum app_type type;
	double count, sum, min, max, last;
	struct app_sketch sk; /* timer, histogram, distribution only */
};

/* A marker: a phase starts at it and lasts until the next one or the end. */
struct app_mark {
	int64_t ts_ms;
	char name[APP_NAME_MAX];
	char text[APP_TAGS_MAX]; /* the event's text, "" when none */
	int32_t pid;		 /* the sender (agent: SO_PASSCRED), 0: unknown */
};

const char *app_type_name(enum app_type t);	       /* "counter", "gauge", "timer", ... */
int app_type_parse(const char *s, enum app_type *out); /* 0 or -EINVAL */
bool app_type_has_sketch(enum app_type t);

void app_sketch_init(struct app_sketch *s);
void app_sketch_release(struct app_sketch *s);
/* Adds value v with weight w (> 0).  -ENOMEM leaves s as it was. */
int app_sketch_add(struct app_sketch *s, double v, double w);
/* into += from.  -ENOMEM leaves into as it was. */
int app_sketch_merge(struct app_sketch *into, const struct app_sketch *from);
double app_sketch_count(const struct app_sketch *s);
/* The q-quantile (0 <= q <= 1) of what was added; false when empty. */
bool app_sketch_quantile(const struct app_sketch *s, double q, double *out);
/*
 * The same, never outside [min, max], the values actually seen: one 12.5 ms
 * timing's p50 is 12.5, not its bucket's 12.55.  (A sketch's answer is
 * within alpha of the truth; the range the values came in is exact.)
 */
bool app_quantile(const struct app_sketch *s, double min, double max, double q, double *out);
/*
 * Text form: "z=N;p=K:N,K:N;n=K:N" (counts %.17g; empty parts left out;
 * "" for an empty sketch).  parse replaces what the (initialised) s
 * held: 0, or -EINVAL for text that is not this form (s is left empty
 * then), -ENOMEM.  It allocates at most APP_SKETCH_MAX bins per sign,
 * counted before anything is allocated.  Counts saturate at DBL_MAX.
 */
int app_sketch_format(const struct app_sketch *s, struct strbuf *out);
int app_sketch_parse(struct app_sketch *s, const char *text, size_t len);

void app_point_init(struct app_point *p);
void app_point_release(struct app_point *p);
/* into += from (same name, type and tags): counts, sums, extremes, sketch; last from `from`. */
int app_point_merge(struct app_point *into, const struct app_point *from);

#endif
