/*
 * promtypes.h - what the parts of a report from Prometheus share
 * (prom/promsrc.h: the question and its answers; prom/promgrid.h: their
 * pure parts): Prometheus' caps, a range query's series, the question.
 * Types and constants only.
 */
#ifndef JOBSCOPE_PROMTYPES_H
#define JOBSCOPE_PROMTYPES_H

#include <stddef.h>
#include <stdint.h>

/* Prometheus answers at most 11,000 points per series of a range query. */
#define PROMSRC_MAX_POINTS	11000
#define PROMSRC_MAX_SERIES	4096
#define PROMSRC_MAX_LABELS	64
#define PROMSRC_ANSWER_MAX	((size_t)256 << 20)
#define PROMSRC_DEFAULT_STEP_MS 15000
/* Prometheus' default lookback: a point takes the last sample this old at most. */
#define PROMSRC_LOOKBACK_MS (300 * 1000)

struct prom_label {
	char *name, *value;
};

struct prom_series {
	struct prom_label *labels;
	size_t nlabels;
	int64_t *ts_ms;
	double *v; /* NAN for "NaN" and infinities: missing */
	size_t n;
};

struct prom_matrix {
	struct prom_series *series;
	size_t n;
};

enum promsrc_key { PROMSRC_JOB, PROMSRC_POD, PROMSRC_NODE };

struct promsrc_query {
	const char *url; /* http://prometheus:9090 */
	enum promsrc_key kind;
	const char *key; /* scheduler:id or id; NS/NAME; a node's name */
	int64_t since_ms, until_ms;
	int64_t step_ms; /* 0: the scrape interval measured (else 15 s), widened to fit the span */
};

#endif
