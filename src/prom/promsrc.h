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

#include <stddef.h>
#include <stdint.h>

#include "analysis/jobreport.h"
#include "common/strbuf.h"
#include "prom/promtypes.h"

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

struct promsrc_transport {
	/* GET url (whole): 0 with *status and the body, or -errno already said */
	int (*get)(void *ctx, const char *url, struct strbuf *answer, long *status);
	void *ctx;
};

/* libcurl (http/curl_dl.h), 30 s per request, answers capped at PROMSRC_ANSWER_MAX. */
extern const struct promsrc_transport promsrc_curl;

int promsrc_report(const struct promsrc_query *q, const struct promsrc_transport *t,
		   struct job_record *job, struct job_report *r, char *sources, size_t size);

#endif
