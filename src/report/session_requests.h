/*
 * session_requests.h - the per-request timings of a profiling session
 * (the head's requests table, gswarm's POST /profiling/record), per
 * application: count, and p50/p95/p99/max of queue time, processing time
 * and each named time of the requests' `other` objects, in ms.
 *
 * Percentiles are nearest-rank: the p-th percentile of n sorted values is
 * the value of rank ceil(p/100 * n) (1-based), always one of the values,
 * never an interpolation.
 *
 * Ownership: a session_requests owns everything it holds;
 * session_requests_init cannot fail, session_requests_release frees.
 * Errors: 0 or -errno (-ENOMEM, a store error).  A request's `other` that
 * is not a JSON object of numbers loses only what is not a number.
 * Not thread-safe.
 */
#ifndef JOBSCOPE_SESSION_REQUESTS_H
#define JOBSCOPE_SESSION_REQUESTS_H

#include <stddef.h>
#include <stdint.h>

#include "common/jsonw.h"
#include "common/strbuf.h"
#include "store/store.h"
#include "store/profiling.h"

#define SESSION_REQUESTS_MAX_APPS 256
#define SESSION_REQUESTS_MAX_KEYS 16 /* named times of `other` per app */
#define SESSION_REQUESTS_KEY_MAX  64

/* Values in ms, in the order they came; sorted by session_requests_finish. */
struct request_values {
	double *ms;
	size_t n, alloc;
};

struct request_app {
	char app[REQUEST_APP_MAX];
	size_t count; /* requests */
	struct request_values queue, processing;
	size_t nkeys;
	char key[SESSION_REQUESTS_MAX_KEYS][SESSION_REQUESTS_KEY_MAX];
	struct request_values other[SESSION_REQUESTS_MAX_KEYS];
};

struct session_requests {
	struct request_app *apps;
	size_t napps, alloc;
	int64_t dropped; /* requests of apps past SESSION_REQUESTS_MAX_APPS */
};

void session_requests_init(struct session_requests *r);
void session_requests_release(struct session_requests *r);
/* The requests of s's window (up to now while it is active), per app, sorted. */
int session_requests_load(struct store *st, const struct session_record *s,
			  struct session_requests *r);
/* One request added (ts_ms and id unused); then session_requests_finish. */
int session_requests_add(struct session_requests *r, const struct request_record *req);
void session_requests_finish(struct session_requests *r);

/*
 * The nearest-rank pct-th percentile (1 <= pct <= 100) of n sorted values:
 * sorted[ceil(pct * n / 100) - 1], in integers (95 * 20 / 100 is 19, not
 * 19.000000000000004); NAN when n is 0 or pct is out of range.
 */
double request_percentile(const double *sorted, size_t n, unsigned pct);

/* A table per app: count, p50/p95/p99/max in ms.  Nothing when there is none. */
void session_requests_text(const struct session_requests *r, struct strbuf *out);
/* "requests": {APP: {"count", "queue_ms": {...}, "processing_ms": {...}, "other_ms": {...}}} */
void session_requests_json(const struct session_requests *r, struct jsonw *w);

#endif
