/*
 * promgrid.h - the pure parts of a report from Prometheus (prom/promsrc.c):
 * the time grid every range query of one report shares and the columns
 * on it (counters made monotonic as rate() does), PromQL text (strings,
 * regular expressions, a node's instance matcher, URL encoding), the key
 * of --job/--pod/--node, the choice of the step (the scrape interval
 * measured from the samples' timestamps) and node_exporter's real disks.
 *
 * No I/O; no allocation but what strbuf does (its errors stay in the
 * strbuf, strbuf_error).  promsrc_parse_key says what is wrong with
 * log_err and returns -EINVAL.  Missing is NAN on the grid.  Thread-safe.
 */
#ifndef JOBSCOPE_PROMGRID_H
#define JOBSCOPE_PROMGRID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "prom/promtypes.h"

/* n points, step_ms apart from start_ms: the instants of every query of one report */
struct grid {
	int64_t start_ms, step_ms;
	size_t n;
};

/* The grid over [from, to], step wide; -EINVAL for no span, -E2BIG past Prometheus' points. */
int grid_of(int64_t from, int64_t to, int64_t step, struct grid *g);
/* A series' points on the grid: NAN where it has none (or one off the grid). */
void grid_dense(const struct grid *g, const struct prom_series *s, double *out);
/* A counter made monotonic as rate() does; missing points take the value before (0 first). */
void grid_counter_fix(double *v, size_t n);
/* v rounded, 0 for negatives and NAN, 2^63 past it. */
uint64_t grid_u64(double v);
/* The first and the last value of a column, NAN when none. */
double grid_first_of(const double *v, size_t n);
double grid_last_of(const double *v, size_t n);

/* s %-encoded for a URL's query; ms as seconds with 3 decimals. */
void promql_url_encode(struct strbuf *u, const char *s);
void promql_add_seconds(struct strbuf *u, int64_t ms);
/* s as the inside of a PromQL "..." string; as a regular expression matching itself exactly. */
void promql_str(struct strbuf *b, const char *s);
void promql_regex_literal(struct strbuf *b, const char *s);
/* The host part of an instance ("10.0.0.5:9100" -> "10.0.0.5"; "[::1]:9100" -> "[::1]"). */
void promql_instance_host(const char *inst, char *host, size_t size);
/* `instance=~"HOST(:PORT)?"` for a node named host. */
void promql_host_matcher(struct strbuf *b, const char *host);

/* The key asked about, in parts. */
struct promsrc_key_parts {
	char scheduler[16], id[64]; /* --job */
	char ns[256], name[256];    /* --pod */
	char node[256];		    /* --node */
};

int promsrc_parse_key(const struct promsrc_query *q, struct promsrc_key_parts *k);

/*
 * The time between an exporter's samples (its scrape interval), in ms,
 * from the answer to `timestamp(...)` asked at a step finer than it: each
 * point is the time (s) of the last sample at or before it, so the
 * distinct values of a series are its samples' times.  The median of the
 * gaps between them over all series; 0 when there are fewer than two.
 */
int64_t promsrc_sample_interval_ms(const struct prom_matrix *m);

/*
 * The step when --step is not given: the scrape interval (scrape_ms, 0
 * when unknown: PROMSRC_DEFAULT_STEP_MS) in whole seconds, at least 1 s,
 * widened so that span_ms takes at most a third of Prometheus' points.
 * Why, in words, in why.
 */
int64_t promsrc_auto_step_ms(int64_t span_ms, int64_t scrape_ms, char *why, size_t size);

/*
 * node_exporter's disk device that is a whole physical (or virtual) disk,
 * whose bytes no other counted device also counts: not a partition
 * (sda1, nvme0n1p2, mmcblk0p1), not a loop, RAM, optical or network
 * block device, not device-mapper or software RAID over other disks.
 */
bool promsrc_real_disk(const char *device);

#endif
