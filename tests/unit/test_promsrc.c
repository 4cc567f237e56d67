/*
 * test_promsrc.c - reports from Prometheus (prom/promsrc.h) on fixture
 * answers: the range-query parser on captured JSON (values, NaN and
 * infinities as missing, labels cleaned, Prometheus' own error, answers
 * that are not a matrix), then whole reports through a fake transport that
 * answers each PromQL query the way Prometheus would for series of a known
 * shape (cgroup_exporter's Slurm job: exact CPU efficiency, a counter
 * reset, the grid's span), and the failures: no series, an error answer,
 * no Prometheus, a bad key.
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

#include "fixture.h"
#include "common/log.h"
#include "prom/promsrc.h"

#define FIX(name) FIXTURES_DIR "/prometheus/" name

static int parse_fixture(const char *path, struct prom_matrix *m, char *err, size_t size)
{
	size_t len;
	char *body = fixture_load(path, &len);
	int ret = prom_matrix_parse(body, len, m, err, size);

	free(body);
	return ret;
}

static void test_parse_matrix(void **state)
{
	struct prom_matrix m;
	char err[256];

	(void)state;
	assert_int_equal(parse_fixture(FIX("matrix.json"), &m, err, sizeof(err)), 0);
	assert_int_equal(m.n, 2);
	assert_string_equal(prom_series_label(&m.series[0], "UUID"), "GPU-0a1b");
	assert_string_equal(prom_series_label(&m.series[0], "namespace"), "ml");
	assert_null(prom_series_label(&m.series[0], "nope"));
	assert_int_equal(m.series[0].n, 4);
	assert_int_equal(m.series[0].ts_ms[0], 1700000000000LL);
	assert_int_equal(m.series[0].ts_ms[1], 1700000005000LL);
	assert_true(m.series[0].v[0] == 20000.0);
	assert_true(m.series[0].v[1] == 20480.5);
	assert_true(isnan(m.series[0].v[2])); /* "NaN": missing */
	assert_true(isnan(m.series[0].v[3])); /* "+Inf": missing, not a number to add */
	assert_int_equal(m.series[1].ts_ms[0], 1700000000001LL);
	assert_true(m.series[1].v[0] == 1000.0);
	/* a control character in a label does not reach a terminal */
	assert_string_equal(prom_series_label(&m.series[1], "modelName"), "bad?name");
	prom_matrix_release(&m);
	assert_int_equal(m.n, 0);

	assert_int_equal(parse_fixture(FIX("empty.json"), &m, err, sizeof(err)), 0);
	assert_int_equal(m.n, 0);
	prom_matrix_release(&m);
}

static void test_parse_refused(void **state)
{
	struct prom_matrix m;
	char err[256];

	(void)state;
	assert_int_equal(parse_fixture(FIX("error.json"), &m, err, sizeof(err)), -EREMOTEIO);
	assert_string_equal(err, "bad_data: invalid parameter \"query\": 1:10: parse error: "
				 "unexpected \"}\"?");
	prom_matrix_release(&m);
	assert_int_equal(parse_fixture(FIX("vector.json"), &m, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "matrix"));
	prom_matrix_release(&m);
	assert_int_equal(parse_fixture(FIX("unordered.json"), &m, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "points out of time order");
	prom_matrix_release(&m);
	assert_int_equal(parse_fixture(FIX("badvalue.json"), &m, err, sizeof(err)), -EPROTO);
	prom_matrix_release(&m);
	assert_int_equal(prom_matrix_parse("<html>", 6, &m, err, sizeof(err)), -EPROTO);
	prom_matrix_release(&m);
	assert_int_equal(prom_matrix_parse(NULL, 0, &m, err, sizeof(err)), -EPROTO);
	prom_matrix_release(&m);
	/* a time before 1970 or past the store's range */
	assert_int_equal(
	    prom_matrix_parse("{\"status\":\"success\",\"data\":{\"resultType\":"
			      "\"matrix\",\"result\":[{\"metric\":{},\"values\":"
			      "[[-1,\"1\"]]}]}}",
			      strlen("{\"status\":\"success\",\"data\":{\"resultType\":"
				     "\"matrix\",\"result\":[{\"metric\":{},\"values\":"
				     "[[-1,\"1\"]]}]}}"),
			      &m, err, sizeof(err)),
	    -EPROTO);
	prom_matrix_release(&m);
}

/* ---- a fake Prometheus ---------------------------------------------------------------------- */

#define T0_S  1700000000LL
#define JOB_S 600

struct fake {
	int mode; /* 0: series; 1: none; 2: error answer; 3: unreachable; 4: counter reset */
	int asked;
};

static void url_decode(const char *s, size_t n, char *out, size_t size)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k + 1 < size; i++) {
		if (s[i] == '%' && i + 2 < n) {
			char hex[3] = {s[i + 1], s[i + 2], 0};

			out[k++] = (char)strtol(hex, NULL, 16);
			i += 2;
		} else {
			out[k++] = s[i];
		}
	}
	out[k] = '\0';
}

static double param(const char *url, const char *name)
{
	const char *p = strstr(url, name);

	assert_non_null(p);
	return strtod(p + strlen(name), NULL);
}

/* The value of each series of the fake job at t seconds after T0. */
static double cpu_at(const struct fake *f, double t)
{
	if (f->mode == 4 && t >= 300)
		return 1.5 * (t - 300); /* the counter restarted at 300 s */
	return 10 + 1.5 * t;
}

static int fake_get(void *ctx, const char *url, struct strbuf *answer, long *status)
{
	struct fake *f = ctx;
	const char *q = strstr(url, "query=");
	char query[1024];
	double start, end, step;
	int kind;

	f->asked++;
	if (f->mode == 3)
		return log_err(-EIO, "cannot reach Prometheus: Connection refused");
	assert_non_null(q);
	url_decode(q + 6, strcspn(q + 6, "&"), query, sizeof(query));
	start = param(url, "&start=");
	end = param(url, "&end=");
	step = param(url, "&step=");
	*status = 200;
	if (f->mode == 2) {
		*status = 400;
		strbuf_addstr(answer, "{\"status\":\"error\",\"errorType\":\"bad_data\","
				      "\"error\":\"boom\"}");
		return 0;
	}
	/* 1: the probe; 2: CPU; 3: cgroup_cpus; 4: RSS; 0: no such series */
	kind = f->mode == 1 ? 0
	       : strncmp(query,
			 "timestamp(cgroup_cpu_total_seconds{jobid=\"777\",step=\"\",task=\"\"}",
			 62) == 0
		   ? 1
	       : strncmp(query, "cgroup_cpu_total_seconds{jobid=\"777\"", 36) == 0 ? 2
	       : strncmp(query, "cgroup_cpus{", 12) == 0			   ? 3
	       : strncmp(query, "cgroup_memory_rss_bytes{", 24) == 0		   ? 4
										   : 0;
	strbuf_addstr(answer, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
			      "\"result\":[");
	if (kind) {
		bool first = true;

		strbuf_addstr(answer, "{\"metric\":{\"jobid\":\"777\",\"instance\":\"node3:9306\"},"
				      "\"values\":[");
		for (double t = start; t <= end + 1e-9; t += step) {
			double s = t - (double)T0_S, v;

			if (s < 0 || s > JOB_S)
				continue;
			v = kind == 1	? t
			    : kind == 2 ? cpu_at(f, s)
			    : kind == 3 ? 2
					: 1e9 + 1e6 * s;
			strbuf_addf(answer, "%s[%.3f,\"%.17g\"]", first ? "" : ",", t, v);
			first = false;
		}
		strbuf_addstr(answer, "]}");
	}
	strbuf_addstr(answer, "]}}");
	return 0;
}

static int report_of(struct fake *f, const char *key, enum promsrc_key kind, struct job_record *job,
		     struct job_report *r)
{
	struct promsrc_transport t = {fake_get, f};
	struct promsrc_query q = {
	    .url = "http://prom:9090/",
	    .kind = kind,
	    .key = key,
	    .since_ms = T0_S * 1000,
	    .until_ms = (T0_S + 3600) * 1000,
	    .step_ms = 5000,
	};
	char sources[256];

	return promsrc_report(&q, &t, job, r, sources, sizeof(sources));
}

static void test_report_cgroup_exporter(void **state)
{
	struct fake f = {0, 0};
	struct job_report *r = malloc(sizeof(*r));
	struct job_record job;

	(void)state;
	assert_non_null(r);
	assert_int_equal(report_of(&f, "slurm:777", PROMSRC_JOB, &job, r), 0);
	/* the span of the samples, not of the window asked */
	assert_int_equal(job.start_ms, T0_S * 1000);
	assert_int_equal(job.end_ms, (T0_S + JOB_S) * 1000);
	assert_int_equal(job.interval_ms, 5000);
	assert_string_equal(job.scheduler, "slurm");
	assert_string_equal(job.job_id, "777");
	assert_string_equal(job.hostname, "node3");
	assert_true(job.reserved_cpus == 2.0);
	assert_int_equal(job.reserved_mem_bytes, 0); /* no cgroup_memory_total_bytes: unknown */
	assert_false(job.has_reserved_gpus);
	assert_int_equal(r->sum.samples, JOB_S / 5 + 1);
	/* 1.5 s/s of CPU from 10 s at the start: 900 s in 600 s */
	assert_true(summary_cpu_seconds(&r->sum) == 900.0);
	assert_true(summary_cores_avg(&r->sum) == 1.5);
	assert_true(summary_efficiency_pct(&r->sum) == 75.0);
	assert_int_equal(summary_rss_peak(&r->sum, NULL), 1000000000ULL + 600000000ULL);
	assert_int_equal(r->sum.host_samples, 0); /* no node_exporter: no host, not zeros */
	assert_int_equal(r->sum.ngpus, 0);
	job_report_release(r);
	free(r);
}

static void test_report_counter_reset(void **state)
{
	struct fake f = {4, 0};
	struct job_report *r = malloc(sizeof(*r));
	struct job_record job;

	(void)state;
	assert_non_null(r);
	assert_int_equal(report_of(&f, "777", PROMSRC_JOB, &job, r), 0);
	/*
	 * as rate() counts it: 442.5 s up to 295 s, then 0 at 300 s restarts the
	 * count from there (the 7.5 s between the last two points are lost)
	 */
	assert_true(summary_cpu_seconds(&r->sum) == 442.5 + 1.5 * 300);
	job_report_release(r);
	free(r);
}

static void test_report_failures(void **state)
{
	struct job_report *r = malloc(sizeof(*r));
	struct job_record job;
	struct fake none = {1, 0}, error = {2, 0}, down = {3, 0};

	(void)state;
	assert_non_null(r);
	assert_int_equal(report_of(&none, "777", PROMSRC_JOB, &job, r), -ENOENT);
	assert_int_equal(none.asked, 4); /* jobscope, cgroup_exporter, dcgm, nvidia_gpu */
	job_report_release(r);
	assert_int_equal(report_of(&none, "ml/pod", PROMSRC_POD, &job, r), -ENOENT);
	job_report_release(r);
	assert_int_equal(report_of(&error, "777", PROMSRC_JOB, &job, r), -EIO);
	assert_int_equal(error.asked, 1);
	job_report_release(r);
	assert_int_equal(report_of(&down, "777", PROMSRC_JOB, &job, r), -EIO);
	job_report_release(r);
	assert_int_equal(report_of(&down, "no-namespace", PROMSRC_POD, &job, r), -EINVAL);
	job_report_release(r);
	assert_int_equal(report_of(&down, "a/b/c", PROMSRC_POD, &job, r), -EINVAL);
	job_report_release(r);
	assert_int_equal(report_of(&down, "bad\nkey", PROMSRC_JOB, &job, r), -EINVAL);
	job_report_release(r);
	assert_int_equal(down.asked, 1); /* bad keys ask nothing */
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_matrix),
	    cmocka_unit_test(test_parse_refused),
	    cmocka_unit_test(test_report_cgroup_exporter),
	    cmocka_unit_test(test_report_counter_reset),
	    cmocka_unit_test(test_report_failures),
	};

	log_set_level(LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
