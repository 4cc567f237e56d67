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
#include "prom/promgrid.h"
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
	int mode; /* 0: series; 1: none; 2: error answer; 3: unreachable; 4: counter reset;
		     node_get's 5: scrapes jitter around whole seconds */
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

/* ---- the step, the disks ----------------------------------------------------------------------
 */

/* timestamp()'s answer at 1 s from t0: the last sample at or before each point, every iv s from ph
 */
static void stamps(struct strbuf *b, const char *labels, double t0, int n, double iv, double ph)
{
	strbuf_addf(b, "{\"metric\":{%s},\"values\":[", labels);
	for (int i = 0; i < n; i++) {
		double t = t0 + i, last = ph + floor((t - ph) / iv) * iv;

		strbuf_addf(b, "%s[%.3f,\"%.3f\"]", i ? "," : "", t, last);
	}
	strbuf_addstr(b, "]}");
}

static int64_t interval_of(const char *series)
{
	struct strbuf b;
	struct prom_matrix m;
	char err[256];
	int64_t ms;

	strbuf_init(&b, 0);
	strbuf_addf(&b,
		    "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[%s]}}",
		    series);
	assert_int_equal(prom_matrix_parse(b.buf, b.len, &m, err, sizeof(err)), 0);
	ms = promsrc_sample_interval_ms(&m);
	prom_matrix_release(&m);
	strbuf_release(&b);
	return ms;
}

static void test_sample_interval(void **state)
{
	struct strbuf s;

	(void)state;
	strbuf_init(&s, 0);
	/* scraped every second at .437: each point a new sample */
	stamps(&s, "\"instance\":\"a\"", 1700000000, 120, 1, 0.437);
	assert_int_equal(interval_of(s.buf), 1000);
	/* every 15 s: the same time repeated 15 points, then the next */
	strbuf_reset(&s);
	stamps(&s, "\"instance\":\"a\"", 1700000000, 120, 15, 0.2);
	assert_int_equal(interval_of(s.buf), 15000);
	/* two targets at 5 s, their phases apart: each counted on its own */
	strbuf_reset(&s);
	stamps(&s, "\"instance\":\"a\"", 1700000000, 60, 5, 0.1);
	strbuf_addch(&s, ',');
	stamps(&s, "\"instance\":\"b\"", 1700000000, 60, 5, 2.6);
	assert_int_equal(interval_of(s.buf), 5000);
	/* a gap of missed scrapes does not move the median */
	strbuf_reset(&s);
	strbuf_addstr(&s, "{\"metric\":{},\"values\":[[1,\"1\"],[2,\"2\"],[3,\"3\"],[4,\"4\"],"
			  "[5,\"4\"],[6,\"4\"],[7,\"7\"],[8,\"8\"]]}");
	assert_int_equal(interval_of(s.buf), 1000);
	/* one sample, or none: unknown */
	assert_int_equal(interval_of("{\"metric\":{},\"values\":[[1,\"1\"],[2,\"1\"]]}"), 0);
	assert_int_equal(interval_of(""), 0);
	strbuf_release(&s);
}

static void test_auto_step(void **state)
{
	char why[160];

	(void)state;
	assert_int_equal(promsrc_auto_step_ms(120000, 1000, why, sizeof(why)), 1000);
	assert_string_equal(why, "the scrape interval, measured from the samples' timestamps");
	assert_int_equal(promsrc_auto_step_ms(120000, 1004, why, sizeof(why)), 1000);
	assert_int_equal(promsrc_auto_step_ms(120000, 30000, why, sizeof(why)), 30000);
	/* finer than Prometheus' floor here: 1 s */
	assert_int_equal(promsrc_auto_step_ms(120000, 250, why, sizeof(why)), 1000);
	assert_non_null(strstr(why, "250 ms apart"));
	/* unknown: 15 s, said */
	assert_int_equal(promsrc_auto_step_ms(120000, 0, why, sizeof(why)), 15000);
	assert_non_null(strstr(why, "default"));
	/* 10 h at 1 s are 36,001 points: widened to fit 3,666 */
	assert_int_equal(promsrc_auto_step_ms(36000000, 1000, why, sizeof(why)), 10000);
	assert_non_null(strstr(why, "widened from 1 s"));
	assert_true(36000000 / 10000 <= PROMSRC_MAX_POINTS / 3);
}

static void test_real_disk(void **state)
{
	static const char *const real[] = {"sda",      "vda",	  "xvdb", "hdc", "nvme0n1",
					   "nvme12n3", "mmcblk0", "sdaa", NULL};
	static const char *const not [] = {"sda1",  "vda2", "xvdb1", "nvme0n1p1", "mmcblk0p2",
					   "loop0", "ram1", "zram0", "dm-0",	  "md127",
					   "sr0",   "fd0",  "nbd3",  "",	  NULL};

	(void)state;
	for (int i = 0; real[i]; i++)
		assert_true(promsrc_real_disk(real[i]));
	for (int i = 0; not [i]; i++) {
		if (promsrc_real_disk(not [i]))
			fail_msg("'%s' counted as a real disk", not [i]);
	}
}

/*
 * node_exporter scraped every second (samples on whole seconds): 2 CPUs
 * each 0.5 s/s user, 0.125 nice, 0.25 system, 0.0625 softirq, the rest
 * idle; disks vda (1,000 B/s read, 4,096 written), its partition vda1,
 * loop0 and dm-0 over vda (all 1e6 B/s: not counted), nvme0n1 (500 read).
 */
#define NODE_S 90

static double node_at(const char *q, double s, int series)
{
	double t = floor(s); /* the last sample at or before */

	if (strstr(q, "mode=\"user\""))
		return 1000 + 0.5 * t;
	if (strstr(q, "mode=\"nice\""))
		return 10 + 0.125 * t;
	if (strstr(q, "mode=\"system\""))
		return 500 + 0.25 * t;
	if (strstr(q, "mode=\"softirq\""))
		return 20 + 0.0625 * t;
	if (strstr(q, "mode=\"idle\""))
		return 9000 + 0.0625 * t;
	if (strncmp(q, "node_memory_MemTotal", 20) == 0)
		return 8e9;
	if (strncmp(q, "node_memory_MemAvailable", 24) == 0)
		return 5e9;
	if (strncmp(q, "node_load1", 10) == 0)
		return 1.5;
	if (strncmp(q, "node_disk_read", 14) == 0)
		return series == 0 ? 7e9 + 1000 * t : series == 4 ? 3e9 + 500 * t : 1e12 + 1e6 * t;
	if (strncmp(q, "node_disk_written", 17) == 0)
		return series == 0 ? 5e9 + 4096 * t : series == 4 ? 100 : 1e12 + 1e6 * t;
	return (double)T0_S + t; /* timestamp() */
}

/* Scrape k at k + 2 ms (k odd) or k - 1 ms (k even, but 0): the last at or before s. */
static double jittered_last(double s)
{
	double k = floor(s + 0.001);

	for (;; k--) {
		double at = k == 0 ? 0 : fmod(k, 2) == 1 ? k + 0.002 : k - 0.001;

		if (at <= s + 1e-9)
			return at;
	}
}

static int node_get(void *ctx, const char *url, struct strbuf *answer, long *status)
{
	static const char *const devs[] = {"vda", "vda1", "loop0", "dm-0", "nvme0n1"};
	struct fake *f = ctx;
	const char *q = strstr(url, "query=");
	char query[1024];
	double start, end, step;
	int nseries;

	f->asked++;
	assert_non_null(q);
	url_decode(q + 6, strcspn(q + 6, "&"), query, sizeof(query));
	start = param(url, "&start=");
	end = param(url, "&end=");
	step = param(url, "&step=");
	*status = 200;
	nseries = strstr(query, "node_disk_")				? 5
		  : strstr(query, "jobscope_") || strstr(query, "DCGM") ? 0
		  : strstr(query, "mode=\"user\"") || strstr(query, "mode=\"nice\"") ||
			  strstr(query, "mode=\"system\"") || strstr(query, "mode=\"softirq\"") ||
			  strstr(query, "mode=\"idle\"")
		      ? 2
		  : strstr(query, "mode=") ? 0
					   : 1;
	strbuf_addstr(answer, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
			      "\"result\":[");
	for (int k = 0; k < nseries; k++) {
		bool first = true;

		strbuf_addf(
		    answer,
		    "%s{\"metric\":{\"instance\":\"n1:9100\",\"cpu\":\"%d\",\"device\":\"%s\"},"
		    "\"values\":[",
		    k ? "," : "", k, strstr(query, "node_disk_") ? devs[k] : "");
		for (double t = start; t <= end + 1e-9; t += step) {
			double s = t - (double)T0_S;

			if (s < 0 || s > NODE_S + 0.999)
				continue;
			strbuf_addf(answer, "%s[%.3f,\"%.17g\"]", first ? "" : ",", t,
				    f->mode == 5 && strstr(query, "timestamp(")
					? (double)T0_S + jittered_last(s)
					: node_at(query, s, k));
			first = false;
		}
		strbuf_addstr(answer, "]}");
	}
	strbuf_addstr(answer, "]}}");
	return 0;
}

/* node n1's report over the fake's whole span, at the scrape interval */
static struct promsrc_query node_query(void)
{
	return (struct promsrc_query){
	    .url = "http://prom:9090",
	    .kind = PROMSRC_NODE,
	    .key = "n1",
	    .since_ms = (T0_S - 60) * 1000,
	    .until_ms = (T0_S + NODE_S) * 1000,
	    .step_ms = 0, /* the scrape interval */
	};
}

static void test_report_node_exporter(void **state)
{
	struct fake f = {0, 0};
	struct promsrc_transport t = {node_get, &f};
	struct promsrc_query q = node_query();
	struct job_report *r = malloc(sizeof(*r));
	struct job_record job;
	char sources[512];

	(void)state;
	assert_non_null(r);
	assert_int_equal(promsrc_report(&q, &t, &job, r, sources, sizeof(sources)), 0);
	/* the samples' own interval, said; a point per sample */
	assert_int_equal(job.interval_ms, 1000);
	assert_int_equal(job.start_ms, T0_S * 1000);
	assert_int_equal(r->sum.samples, NODE_S + 1);
	assert_int_equal(r->sum.origin.kind, SAMPLE_SOURCE_PROMETHEUS);
	assert_string_equal(r->sum.origin.step_why,
			    "the scrape interval, measured from the samples' timestamps");
	assert_non_null(strstr(sources, "91 points, 1 s apart (the scrape interval"));
	/* user + nice, system + softirq, over 2 CPUs */
	assert_int_equal(r->sum.last.user_ms, 2 * 625 * NODE_S);
	assert_int_equal(r->sum.last.system_ms, 2 * 3125 * NODE_S / 10);
	/* the real disks' bytes over the window */
	assert_true(r->sum.has_io);
	assert_int_equal(r->sum.last.read_bytes, 1500 * NODE_S);
	assert_int_equal(r->sum.last.write_bytes, 4096 * NODE_S);
	assert_string_equal(r->sum.origin.io_from,
			    "node_exporter's node_disk_read_bytes_total and "
			    "node_disk_written_bytes_total, summed over its disks vda, nvme0n1");
	job_report_release(r);
	/* a window too short for the analysis says so in --step's and --since's words */
	q.since_ms = (T0_S + NODE_S - 5) * 1000;
	assert_int_equal(promsrc_report(&q, &t, &job, r, sources, sizeof(sources)), 0);
	assert_true(r->an.too_short);
	f.asked = 0;
	for (size_t i = 0; i < r->an.nverdicts; i++)
		if (strcmp(r->an.verdicts[i].kind, "too_short") == 0) {
			f.asked = -1;
			assert_non_null(strstr(r->an.verdicts[i].advice, "--step"));
			assert_non_null(strstr(r->an.verdicts[i].advice, "--since"));
			assert_null(strstr(r->an.verdicts[i].advice, "--interval"));
			assert_non_null(strstr(r->an.verdicts[i].message, "points"));
		}
	assert_int_equal(f.asked, -1); /* the verdict was there */
	job_report_release(r);

	/*
	 * Scrapes 1 s apart whose times jitter a few ms either side of the
	 * whole seconds (0, 1.002, 1.999, 3.002, 3.999, …): on a 1 s grid from
	 * the first, every other one is hidden and the gaps read 2 s (a loaded
	 * machine's real Prometheus did this); the step is still the scrape
	 * interval, the median gap: 997 or 1,002 ms.
	 */
	f.mode = 5;
	q = node_query();
	assert_int_equal(promsrc_report(&q, &t, &job, r, sources, sizeof(sources)), 0);
	assert_int_equal(job.interval_ms, 1000);
	assert_true(strstr(r->sum.origin.step_why, "the scrape interval (997 ms)") ||
		    strstr(r->sum.origin.step_why, "the scrape interval (1002 ms)"));
	job_report_release(r);
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
	    cmocka_unit_test(test_sample_interval),
	    cmocka_unit_test(test_auto_step),
	    cmocka_unit_test(test_real_disk),
	    cmocka_unit_test(test_report_node_exporter),
	};

	log_set_level(LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
