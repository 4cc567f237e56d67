/*
 * promsrc.h - a job's report from series already in Prometheus: jobscope's
 * own, or dcgm-exporter + cAdvisor + node_exporter (+ cgroup_exporter for a
 * Slurm job), asked with range queries (GET /api/v1/query_range) and fed,
 * tick by tick, to the same summary and series a store's replay feeds
 * (analysis/jobreport.h), so every analysis and renderer is the store's.
 *
 * prom_matrix_parse: one query_range answer (JSON) to series of points; no
 * I/O, every length and number checked.  promsrc_report: the whole
 * question, through a transport (curl, or a test's canned answers); it
 * fills a job record and a finished job_report (initialized by it; the
 * caller releases it, also on failure) and says in `sources` which
 * exporters it read.  Errors: 0 or -errno, said with log_err: -ENOENT when
 * no source has matching series, -EIO when Prometheus cannot be reached or
 * answers an error, -EPROTO for an answer that is not Prometheus', -EINVAL
 * for a question that cannot be asked (bad key, window, step).
 * Missing is NAN in the matrices and left out of the samples, never 0.
 * Not thread-safe.
 */
#ifndef JOBSCOPE_PROMSRC_H
#define JOBSCOPE_PROMSRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/jobreport.h"
#include "common/strbuf.h"

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

/*
 * A query_range answer: 0 with the series (maybe none); -EREMOTEIO with
 * Prometheus' own error (status "error") in err; -EPROTO for anything else
 * (not JSON, not a matrix, a number out of range, past the caps), said in err.
 * m is emptied first and always released by prom_matrix_release.
 */
int prom_matrix_parse(const char *body, size_t len, struct prom_matrix *m, char *err,
		      size_t errsize);
void prom_matrix_release(struct prom_matrix *m);
/* A label's value, NULL when the series has none. */
const char *prom_series_label(const struct prom_series *s, const char *name);

enum promsrc_key { PROMSRC_JOB, PROMSRC_POD, PROMSRC_NODE };

struct promsrc_transport {
	/* GET url (whole): 0 with *status and the body, or -errno already said */
	int (*get)(void *ctx, const char *url, struct strbuf *answer, long *status);
	void *ctx;
};

/* libcurl (http/curl_dl.h), 30 s per request, answers capped at PROMSRC_ANSWER_MAX. */
extern const struct promsrc_transport promsrc_curl;

struct promsrc_query {
	const char *url; /* http://prometheus:9090 */
	enum promsrc_key kind;
	const char *key; /* scheduler:id or id; NS/NAME; a node's name */
	int64_t since_ms, until_ms;
	int64_t step_ms; /* 0: the scrape interval measured (else 15 s), widened to fit the span */
};

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

int promsrc_report(const struct promsrc_query *q, const struct promsrc_transport *t,
		   struct job_record *job, struct job_report *r, char *sources, size_t size);

#endif
