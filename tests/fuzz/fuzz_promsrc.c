/*
 * fuzz_promsrc.c - libFuzzer target for what jobscope reads of Prometheus
 * (prom/promsrc.h): any bytes as a range query's answer give series or an
 * error with its message terminated; then a whole report of each kind of
 * key, every query answered with the same bytes (status 200, then 400),
 * builds a report or fails with -errno: never a crash, a leak or a hang.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "prom/promsrc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct canned {
	const char *body;
	size_t len;
	long status;
};

static int canned_get(void *ctx, const char *url, struct strbuf *answer, long *status)
{
	const struct canned *c = ctx;

	(void)url;
	*status = c->status;
	return strbuf_add(answer, c->body, c->len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = {"slurm:777", "ml/trainer-0", "node7"};
	char *buf = malloc(size ? size : 1), err[128];
	struct job_report *r = malloc(sizeof(*r));
	struct canned c = {buf, size, 200};
	struct promsrc_transport t = {canned_get, &c};
	struct prom_matrix m;
	struct job_record job;
	char sources[256];
	int ret;

	if (!buf || !r)
		abort();
	static FILE *quiet;

	if (!quiet)
		quiet = fopen("/dev/null", "w");
	log_set_file(quiet); /* every input fails a query or two: that is the point */
	memcpy(buf, data, size);
	memset(err, 'x', sizeof(err));
	ret = prom_matrix_parse(buf, size, &m, err, sizeof(err));
	if (ret && (strnlen(err, sizeof(err)) >= sizeof(err) || !err[0]))
		abort();
	for (size_t i = 0; !ret && i < m.n; i++)
		for (size_t k = 1; k < m.series[i].n; k++)
			if (m.series[i].ts_ms[k] <= m.series[i].ts_ms[k - 1])
				abort();
	prom_matrix_release(&m);
	for (int kind = 0; kind < 3; kind++)
		for (int s = 0; s < 2; s++) {
			/* the fixtures' time: 2023-11-14T22:13:20Z, an hour of it */
			struct promsrc_query q = {"http://prom:9090", (enum promsrc_key)kind,
						  keys[kind],	      1700000000000LL,
						  1700003600000LL,    5000};

			c.status = s ? 400 : 200;
			ret = promsrc_report(&q, &t, &job, r, sources, sizeof(sources));
			if (ret > 0 || (ret == 0 && job.end_ms < job.start_ms))
				abort();
			job_report_release(r);
		}
	free(r);
	free(buf);
	return 0;
}
