/*
 * test_appsummary.c - a job's app metrics, phases and energy per unit of
 * work from a store built with known figures (analysis/appsummary.h),
 * through job_report_load as `jobscope report` loads them, and what the
 * text and JSON reports make of them.
 *
 * The job: 10 s, ticks of 1 s.  Markers "load" at 0 s and "train" at 4 s.
 * load: 0.5 cores, RSS 100 MB x tick (peak 400 MB), GPU 10 % busy, 100 J
 * a tick; train: 2 cores, RSS 1 GB with 1.5 GB at 7 s, GPU 90 %, 300 J a
 * tick.  A counter "samples" (10 a tick, then 50), a timer "step" (100..109
 * ms each tick, then 1..50 ms), a gauge "queue" (the tick's number), a set
 * "users" (tick % 3 + 1 members).  RAPL: package-0 (5 J a tick, wrapping
 * at 1000 J), package-1 (3 J), package-0/dram (1 J: inside package-0).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "analysis/appsummary.h"
#include "analysis/jobreport.h"
#include "common/log.h"
#include "report/report.h"
#include "store/store.h"
#include "store/jobdata.h"
#include "store/write.h"

#define T0 1700000000000LL
#define MB 1000000ull

struct fixture {
	char dir[64], path[128];
	FILE *log;
	struct store *st;
	struct job_record job;
	int64_t node;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/jobscope-test-appsum-XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->path, sizeof(fx->path), "%s/store.db", fx->dir);
	fx->log = tmpfile();
	log_set_file(fx->log);
	if (store_open(fx->path, STORE_CREATE, &fx->st))
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	store_close(fx->st);
	log_set_file(NULL);
	fclose(fx->log);
	fixture_rm_tree(fx->dir);
	free(fx);
	return 0;
}

static void point(struct app_point *p, const char *name, enum app_type t)
{
	app_point_init(p);
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->type = t;
}

/* Adds value v (weight 1) to a point's figures. */
static void value(struct app_point *p, double v)
{
	if (p->count == 0 || v < p->min)
		p->min = v;
	if (p->count == 0 || v > p->max)
		p->max = v;
	p->count++;
	p->sum += v;
	p->last = v;
	if (app_type_has_sketch(p->type))
		assert_int_equal(app_sketch_add(&p->sk, v, 1), 0);
}

static void put_energy(struct fixture *fx, int64_t node, int64_t ts, const char *zone, uint64_t uj,
		       uint64_t max_uj)
{
	struct store_energy_sample e = {.ts_ms = ts, .energy_uj = uj, .max_uj = max_uj};

	snprintf(e.zone, sizeof(e.zone), "%s", zone);
	assert_int_equal(store_put_energy_samples(fx->st, node, &e, 1), 0);
}

/* The job described above; gpu: with its GPU (and the job alone on it). */
static void build(struct fixture *fx, bool gpu, bool marks)
{
	struct store *st = fx->st;
	struct device_record dev;
	struct proc_info p;
	int64_t prow, other;

	assert_int_equal(store_node(st, "node-a", 8, 64ull << 30, 1, &fx->node), 0);
	assert_int_equal(store_node(st, "node-b", 8, 64ull << 30, 1, &other), 0);
	memset(&fx->job, 0, sizeof(fx->job));
	fx->job.node_id = fx->node;
	snprintf(fx->job.scheduler, sizeof(fx->job.scheduler), "slurm");
	snprintf(fx->job.job_id, sizeof(fx->job.job_id), "42");
	fx->job.start_ms = T0;
	fx->job.interval_ms = 1000;
	fx->job.cores_allowed = 8;
	assert_int_equal(store_job_begin(st, &fx->job), 0);
	memset(&p, 0, sizeof(p));
	p.pid = 4242;
	p.ppid = 1;
	p.start_ms = T0;
	snprintf(p.comm, sizeof(p.comm), "train");
	assert_int_equal(store_put_proc_info(st, fx->node, fx->job.id, &p, NULL, &prow), 0);
	memset(&dev, 0, sizeof(dev));
	snprintf(dev.vendor, sizeof(dev.vendor), "NVIDIA");
	dev.info.index = 0;
	snprintf(dev.info.uuid, sizeof(dev.info.uuid), "GPU-0");
	dev.info.supported = GPU_UTIL | GPU_ENERGY;
	if (gpu)
		assert_int_equal(store_put_device(st, fx->node, &dev), 0);

	uint64_t cpu = 0, gpu_mj = 5000000;
	for (int k = 1; k <= 10; k++) {
		bool train = k > 4;
		int64_t ts = T0 + 1000 * k;
		struct job_sample js = {.nprocs = 1};
		struct app_point pts[4];

		cpu += train ? 2000 : 500;
		js.user_ms = cpu;
		js.rss_bytes = train ? (k == 7 ? 1500 * MB : 1000 * MB) : 100 * MB * (uint64_t)k;
		assert_int_equal(store_tick_begin(st), 0);
		assert_int_equal(store_put_job_sample(st, fx->job.id, ts, &js), 0);
		if (gpu) {
			struct gpu_sample g = {.valid = GPU_UTIL | GPU_ENERGY};
			struct gpu_proc gp = {.pid = 4242, .valid = GPU_PROC_UTIL};

			gpu_mj += train ? 300000 : 100000;
			g.util_pct = train ? 90 : 10;
			g.energy_mj = gpu_mj;
			gp.sm_util_pct = g.util_pct;
			assert_int_equal(store_put_gpu_sample(st, dev.id, ts, &g), 0);
			assert_int_equal(store_put_gpu_proc(st, dev.id, prow, fx->job.id, ts, &gp),
					 0);
		}
		point(&pts[0], "samples", APP_COUNTER);
		value(&pts[0], train ? 50 : 10);
		point(&pts[1], "step", APP_TIMER);
		for (int v = 1; v <= (train ? 50 : 10); v++)
			value(&pts[1], train ? v : 99 + v);
		point(&pts[2], "queue", APP_GAUGE);
		value(&pts[2], k);
		point(&pts[3], "users", APP_SET);
		pts[3].count = 5;
		pts[3].last = k % 3 + 1;
		assert_int_equal(store_put_app_points(st, fx->job.id, ts, pts, 4), 0);
		assert_int_equal(store_tick_commit(st), 0);
		for (int i = 0; i < 4; i++)
			app_point_release(&pts[i]);
	}
	if (marks) {
		struct app_mark m[2] = {{.ts_ms = T0 + 4000, .name = "train"},
					{.ts_ms = T0, .name = "load"}};

		assert_int_equal(store_put_app_marks(st, fx->job.id, m, 2), 0);
	}
	/* RAPL: ticks 0..10; package-0 wraps at 1000 J between 0 and 1 */
	for (int k = 0; k <= 10; k++) {
		int64_t ts = T0 + 1000 * k;

		put_energy(fx, fx->node, ts, "package-0",
			   (999000000ull + 5000000ull * k) % 1000000000ull, 1000000000ull);
		put_energy(fx, fx->node, ts, "package-1", 7000000ull + 3000000ull * k, 0);
		put_energy(fx, fx->node, ts, "package-0/dram", 1000000ull * k, 0);
		put_energy(fx, other, ts, "package-0", 1ull << 40 >> (k % 2), 0); /* another node */
	}
	put_energy(fx, fx->node, T0 + 20000, "package-0", 1, 0); /* after the job: not its */
	fx->job.end_ms = T0 + 10000;
	assert_int_equal(store_job_update(st, &fx->job), 0);
}

static const struct app_metric *metric(const struct app_summary *a, const char *name)
{
	for (size_t i = 0; i < a->nmetrics; i++)
		if (strcmp(a->metrics[i].total.name, name) == 0)
			return &a->metrics[i];
	fail_msg("no metric %s", name);
	return NULL;
}

static void assert_within(double got, double lo, double hi)
{
	if (!(got >= lo && got <= hi))
		fail_msg("%g is not in [%g, %g]", got, lo, hi);
}

/* Every metric merged over the run: exact figures, quantiles within 1 %. */
static void test_metrics(void **state)
{
	struct fixture *fx = *state;
	struct job_report *r = calloc(1, sizeof(*r));
	const struct app_metric *m;
	double tl[APP_TIMELINE_POINTS];
	size_t n;

	build(fx, false, false);
	assert_int_equal(job_report_load(r, fx->st, &fx->job), 0);
	assert_true(r->app.present);
	assert_int_equal(r->app.nmetrics, 4);
	/* sorted by name */
	assert_string_equal(r->app.metrics[0].total.name, "queue");
	assert_string_equal(r->app.metrics[3].total.name, "users");

	m = metric(&r->app, "samples");
	assert_true(m->total.sum == 340);
	assert_true(m->total.count == 10);
	assert_int_equal(m->ticks, 10);
	assert_float_equal(m->rate_per_s, 34.0, 1e-12);
	assert_true(isnan(m->p50) && isnan(m->last) && isnan(m->distinct));
	/* per second in each tick: 10, then 50 */
	n = app_metric_timeline(m, tl);
	assert_int_equal(n, 11);
	assert_true(isnan(tl[0]));
	assert_float_equal(tl[1], 10, 1e-12);
	assert_float_equal(tl[4], 10, 1e-12);
	assert_float_equal(tl[5], 50, 1e-12);

	/* 1..50 six times, 100..109 four times: 340 values */
	m = metric(&r->app, "step");
	assert_true(m->total.count == 340);
	assert_true(m->total.sum == 6 * 1275 + 4 * 1045);
	assert_true(m->total.min == 1 && m->total.max == 109);
	assert_float_equal(m->mean, 11830.0 / 340.0, 1e-12);
	assert_within(m->p50, 29 * 0.99, 29 * 1.01);
	assert_within(m->p95, 105 * 0.99, 105 * 1.01);
	assert_within(m->p99, 108 * 0.99, 109 * 1.01);
	assert_true(isnan(m->rate_per_s));

	m = metric(&r->app, "queue");
	assert_true(m->last == 10);
	assert_true(isnan(m->p50) && isnan(m->rate_per_s));
	n = app_metric_timeline(m, tl);
	assert_float_equal(tl[7], 7, 1e-12);

	m = metric(&r->app, "users");
	assert_true(m->distinct == 3);
	assert_true(isnan(m->mean) && isnan(m->last));

	/* no markers: no phases; no GPU: RAPL alone */
	assert_int_equal(r->app.nphases, 0);
	assert_true(isnan(r->app.energy.gpu_j));
	assert_int_equal(r->app.energy.ngpus, 0);
	job_report_release(r);
	free(r);
}

/* Phases: the CPU, memory, GPU and app figures between the markers. */
static void test_phases(void **state)
{
	struct fixture *fx = *state;
	struct job_report *r = calloc(1, sizeof(*r));
	const struct app_phase *ph;
	size_t samples = 0, step = 0;
	double q;

	build(fx, true, true);
	assert_int_equal(job_report_load(r, fx->st, &fx->job), 0);
	assert_int_equal(r->app.nmarks, 2);
	assert_int_equal(r->app.nphases, 2);
	for (size_t i = 0; i < r->app.nmetrics; i++) {
		if (strcmp(r->app.metrics[i].total.name, "samples") == 0)
			samples = i;
		if (strcmp(r->app.metrics[i].total.name, "step") == 0)
			step = i;
	}

	ph = &r->app.phases[0];
	assert_string_equal(ph->name, "load");
	assert_int_equal(ph->start_ms, T0);
	assert_int_equal(ph->end_ms, T0 + 4000);
	assert_float_equal(ph->cores_mean, 0.5, 1e-12);
	assert_true(ph->has_rss);
	assert_int_equal(ph->rss_peak_bytes, 400 * MB);
	assert_float_equal(ph->gpu_util_mean_pct, 10, 1e-12);
	assert_float_equal(ph->gpu_energy_j, 300,
			   1e-9); /* ticks 2-4: the first has no reading before */
	assert_true(ph->m[samples].sum == 40);
	assert_true(app_sketch_quantile(&ph->m[step].sk, 0.5, &q));
	assert_within(q, 104 * 0.99, 105 * 1.01);

	ph = &r->app.phases[1];
	assert_string_equal(ph->name, "train");
	assert_int_equal(ph->start_ms, T0 + 4000);
	assert_int_equal(ph->end_ms, T0 + 10000);
	assert_float_equal(ph->cores_mean, 2.0, 1e-12);
	assert_int_equal(ph->rss_peak_bytes, 1500 * MB);
	assert_float_equal(ph->gpu_util_mean_pct, 90, 1e-12);
	assert_float_equal(ph->gpu_energy_j, 1800, 1e-9);
	assert_true(ph->m[samples].sum == 300);
	assert_true(app_sketch_quantile(&ph->m[step].sk, 0.5, &q));
	assert_within(q, 25 * 0.99, 26 * 1.01);
	job_report_release(r);
	free(r);
}

/* Energy per unit of work: the job's GPU energy and the host's RAPL zones, a wrap counted. */
static void test_energy_per_unit(void **state)
{
	struct fixture *fx = *state;
	struct job_report *r = calloc(1, sizeof(*r));
	const struct app_energy *e;
	const struct gpu_summary *g;

	build(fx, true, false);
	assert_int_equal(job_report_load(r, fx->st, &fx->job), 0);
	e = &r->app.energy;
	/* package-0 50 J (across its wrap) + package-1 30 J; dram (10 J) is inside package-0 */
	assert_float_equal(e->host_j, 80.0, 1e-9);
	assert_int_equal(e->nzones, 3);
	assert_string_equal(e->zones[0].zone, "package-0");
	assert_float_equal(e->zones[0].energy_j, 50.0, 1e-9);
	assert_string_equal(e->zones[1].zone, "package-0/dram");
	assert_float_equal(e->zones[1].energy_j, 10.0, 1e-9);
	assert_false(e->zones[1].top);
	assert_float_equal(app_j_per_unit(e->host_j, 340), 80.0 / 340.0, 1e-12);

	/* the GPU: the job's share as the summary splits it, alone there */
	assert_int_equal(r->sum.ngpus, 1);
	g = &r->sum.gpus[0];
	assert_true(g->has_energy && g->used);
	assert_int_equal(e->ngpus, 1);
	assert_string_equal(e->gpus[0].uuid, "GPU-0");
	assert_float_equal(e->gpus[0].energy_j, g->job_energy_mj / 1000.0, 1e-9);
	assert_float_equal(e->gpu_j, g->job_energy_mj / 1000.0, 1e-9);
	/* readings 2..10 at least: 3 x 100 J + 6 x 300 J */
	assert_within(e->gpu_j, 2100, 2200);
	assert_true(isnan(app_j_per_unit(e->gpu_j, 0)));
	assert_true(isnan(app_j_per_unit(NAN, 10)));
	job_report_release(r);
	free(r);
}

static cJSON *item(cJSON *o, const char *key)
{
	cJSON *i = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!i)
		fail_msg("no key %s", key);
	return i;
}

/* The reports: JSON "app" with null for what is missing, the text tables. */
static void test_reports(void **state)
{
	struct fixture *fx = *state;
	struct job_report *r = calloc(1, sizeof(*r));
	struct report_options ro = {.max_procs = 10};
	struct strbuf out;
	cJSON *root, *app, *m, *ep, *c;

	build(fx, true, true);
	assert_int_equal(job_report_load(r, fx->st, &fx->job), 0);
	strbuf_init(&out, 1 << 24);
	assert_int_equal(report_json(&r->sum, &r->an, &r->cuda, &r->app, &out), 0);
	root = cJSON_Parse(strbuf_str(&out));
	assert_non_null(root);
	app = item(root, "app");
	m = cJSON_GetArrayItem(item(app, "metrics"), 1); /* samples */
	assert_string_equal(item(m, "name")->valuestring, "samples");
	assert_true(cJSON_IsNull(item(m, "p50")));
	assert_true(cJSON_IsNull(item(m, "last")));
	assert_true(cJSON_IsNull(item(m, "unit")));
	assert_float_equal(item(m, "rate_per_s")->valuedouble, 34, 1e-9);
	m = cJSON_GetArrayItem(item(app, "metrics"), 2); /* step */
	assert_string_equal(item(m, "unit")->valuestring, "ms");
	assert_true(cJSON_IsNull(item(m, "rate_per_s")));
	assert_int_equal(cJSON_GetArraySize(item(app, "phases")), 2);
	c = cJSON_GetArrayItem(item(app, "phases"), 1);
	assert_float_equal(item(c, "cpu_cores_mean")->valuedouble, 2, 1e-9);
	assert_float_equal(item(c, "gpu_energy_j")->valuedouble, 1800, 1e-9);
	c = cJSON_GetArrayItem(item(c, "metrics"), 0);
	assert_string_equal(item(c, "name")->valuestring, "samples");
	assert_float_equal(item(c, "rate_per_s")->valuedouble, 50, 1e-9);
	ep = item(app, "energy_per_unit");
	assert_float_equal(item(ep, "host_energy_j")->valuedouble, 80, 1e-9);
	c = cJSON_GetArrayItem(item(ep, "counters"), 0);
	assert_float_equal(item(c, "host_j_per_unit")->valuedouble, 80.0 / 340.0, 1e-6);
	assert_float_equal(item(c, "gpu_j_per_unit")->valuedouble, r->app.energy.gpu_j / 340.0,
			   1e-6);
	cJSON_Delete(root);

	strbuf_reset(&out);
	ro.app = &r->app;
	assert_int_equal(report_text(&r->sum, &r->an, &ro, &out), 0);
	if (getenv("DUMP"))
		fputs(strbuf_str(&out), stderr);
	assert_non_null(strstr(strbuf_str(&out), "\n  Application metrics\n"));
	assert_non_null(
	    strstr(strbuf_str(&out),
		   "    samples  counter     10    340   10   50     34      -       -       -"
		   "      34     -\n"));
	assert_non_null(strstr(strbuf_str(&out), "\n  Phases (from the program's markers)\n"));
	assert_non_null(strstr(strbuf_str(&out), "    2 train: samples 300 (50/s); step p50 "));
	assert_non_null(strstr(strbuf_str(&out), "\n  Energy per unit of work\n"));
	assert_non_null(strstr(strbuf_str(&out), "host energy (RAPL, top-level zones): 80 J\n"));

	strbuf_reset(&out);
	assert_int_equal(report_html(&r->sum, &r->js, &r->an, &r->cuda, &r->app, &out), 0);
	assert_non_null(strstr(strbuf_str(&out), "<section id=\"app\">"));
	assert_non_null(strstr(strbuf_str(&out), "id=\"chart-app-1\""));
	strbuf_release(&out);
	job_report_release(r);
	free(r);
}

/* A job without app metrics: nothing in text and HTML, "app": null in JSON. */
static void test_none(void **state)
{
	struct fixture *fx = *state;
	struct job_report *r = calloc(1, sizeof(*r));
	struct report_options ro = {.max_procs = 10};
	struct job_sample js = {.nprocs = 1, .user_ms = 10};
	struct strbuf out;

	assert_int_equal(store_node(fx->st, "node-a", 8, 1ull << 30, 1, &fx->node), 0);
	memset(&fx->job, 0, sizeof(fx->job));
	fx->job.node_id = fx->node;
	snprintf(fx->job.scheduler, sizeof(fx->job.scheduler), "run");
	fx->job.start_ms = T0;
	fx->job.interval_ms = 1000;
	assert_int_equal(store_job_begin(fx->st, &fx->job), 0);
	assert_int_equal(store_put_job_sample(fx->st, fx->job.id, T0 + 1000, &js), 0);
	fx->job.end_ms = T0 + 1000;
	assert_int_equal(store_job_update(fx->st, &fx->job), 0);
	assert_int_equal(job_report_load(r, fx->st, &fx->job), 0);
	assert_false(r->app.present);
	strbuf_init(&out, 1 << 24);
	assert_int_equal(report_json(&r->sum, &r->an, &r->cuda, &r->app, &out), 0);
	assert_non_null(strstr(strbuf_str(&out), "\"app\": null\n}"));
	strbuf_reset(&out);
	ro.app = &r->app;
	assert_int_equal(report_text(&r->sum, &r->an, &ro, &out), 0);
	assert_null(strstr(strbuf_str(&out), "Application metrics"));
	strbuf_release(&out);
	job_report_release(r);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_phases, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_energy_per_unit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reports, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_none, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
