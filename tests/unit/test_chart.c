/*
 * test_chart.c - the chart model (report/chart.h) on jobs built tick by
 * tick with known figures: the panels of a job without GPUs, with one and
 * with two (one panel per device), the devices that are not the job's,
 * round y ticks for a few ranges, a gap kept where samples are missing,
 * the reference lines' labels and the event marks; a set built from the
 * caller's points (a session's plots).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jobreport.h"
#include "report/chart.h"

#define GIB   (1024ull * 1024 * 1024)
#define T0_MS 1767571200000LL
#define TICKS 10

/* A job on a node of 16 cores, sampled every second, on ngpus devices of 80 GiB. */
struct sim {
	struct job_report r;
	struct job_record job;
	struct job_sample js;
	struct device_record dev[2];
	int ngpus;
};

static struct sim *sim_new(double reserved_cpus, uint64_t reserved_mem, int ngpus)
{
	struct sim *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	m->job.id = 1;
	m->job.start_ms = T0_MS;
	m->job.interval_ms = 1000;
	m->job.cores_allowed = 16;
	m->job.reserved_cpus = reserved_cpus;
	m->job.reserved_mem_bytes = reserved_mem;
	m->ngpus = ngpus;
	for (int i = 0; i < ngpus; i++) {
		m->dev[i].id = i + 1;
		m->dev[i].info.index = i;
		snprintf(m->dev[i].info.uuid, sizeof(m->dev[i].info.uuid), "GPU-%d", i);
		snprintf(m->dev[i].info.name, sizeof(m->dev[i].info.name), "Test GPU");
		m->dev[i].info.valid = GPU_INFO_MEM_TOTAL;
		m->dev[i].info.mem_total_bytes = 80 * GIB;
		m->dev[i].info.supported = GPU_UTIL | GPU_MEM_USED | GPU_PROC_MEM;
	}
	job_report_init(&m->r, &m->job);
	return m;
}

/*
 * One tick: the job busy 2 cores with 1 GiB resident; GPU i at 50 + 10 i
 * percent with 10 GiB used, the job's process on it when on_gpu[i];
 * gpu_lost: no GPU sample this tick (the driver did not answer).
 */
static void sim_tick(struct sim *m, int t, const bool *on_gpu, bool gpu_lost)
{
	int64_t ts = T0_MS + (int64_t)t * 1000;

	m->js.nprocs = 1;
	m->js.user_ms += 2000;
	m->js.rss_bytes = GIB;
	summary_add_job(&m->r.sum, ts, &m->js);
	jobseries_add_job(&m->r.js, ts, &m->js);
	for (int i = 0; i < m->ngpus && !gpu_lost; i++) {
		struct gpu_sample g = {.valid = GPU_UTIL | GPU_MEM_USED,
				       .util_pct = (uint32_t)(50 + 10 * i),
				       .mem_used_bytes = 10 * GIB};
		struct proc_info p = {.pid = 100, .start_ms = T0_MS};
		struct gpu_proc gp = {.pid = 100, .valid = GPU_PROC_MEM, .mem_bytes = 10 * GIB};

		summary_add_gpu(&m->r.sum, &m->dev[i], ts, &g);
		jobseries_add_gpu(&m->r.js, &m->dev[i], ts, &g);
		if (on_gpu[i])
			summary_add_gpu_proc(&m->r.sum, &m->dev[i], &p, ts, &gp);
	}
}

/* TICKS ticks; the GPUs lost at ticks 4 and 5 when lose is set. */
static struct chart_set *sim_run(struct sim *m, const bool *on_gpu, bool lose)
{
	struct chart_set *cs;

	for (int t = 0; t < TICKS; t++)
		sim_tick(m, t, on_gpu, lose && (t == 4 || t == 5));
	m->job.end_ms = T0_MS + (TICKS - 1) * 1000;
	m->job.samples = TICKS;
	job_report_finish(&m->r, &m->job);
	assert_int_equal(chart_set_build(&m->r.sum, &m->r.js, &cs), 0);
	return cs;
}

static void sim_free(struct sim *m)
{
	job_report_release(&m->r);
	free(m);
}

static void assert_panel_ids(const struct chart_set *cs, const char *const *ids, size_t n)
{
	assert_int_equal(cs->npanels, n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(cs->panels[i].id, ids[i]);
}

static void test_nice_step(void **state)
{
	(void)state;
	assert_float_equal(chart_nice_step(1.0), 1.0, 1e-12);
	assert_float_equal(chart_nice_step(1.2), 2.0, 1e-12);
	assert_float_equal(chart_nice_step(2.2), 2.5, 1e-12);
	assert_float_equal(chart_nice_step(3.0), 5.0, 1e-12);
	assert_float_equal(chart_nice_step(7.0), 10.0, 1e-12);
	assert_float_equal(chart_nice_step(0.012), 0.02, 1e-12);
	assert_float_equal(chart_nice_step(450.0), 500.0, 1e-9);
}

static void test_axis_ranges(void **state)
{
	struct chart_axis ax;

	(void)state;
	/* 3.2 cores: 0-4 by 1; a reservation of 4 on the top edge gets a step above it */
	chart_axis_pick(&ax, CHART_CORES, 3.2, NAN, 4);
	assert_float_equal(ax.max, 4, 1e-12);
	assert_float_equal(ax.step, 1, 1e-12);
	assert_float_equal(ax.div, 1, 0);
	assert_string_equal(ax.unit, "cores");
	chart_axis_pick(&ax, CHART_CORES, 3.2, 4, 4);
	assert_float_equal(ax.max, 5, 1e-12);
	/* shares: the whole 0-100 range, by 25 (by 50 on a small panel), past it as needed */
	chart_axis_pick(&ax, CHART_PCT, 60, NAN, 4);
	assert_float_equal(ax.max, 100, 0);
	assert_float_equal(ax.step, 25, 0);
	assert_string_equal(ax.unit, "%");
	chart_axis_pick(&ax, CHART_PCT, 60, NAN, 2);
	assert_float_equal(ax.step, 50, 0);
	chart_axis_pick(&ax, CHART_PCT, 180, NAN, 4);
	assert_float_equal(ax.max, 200, 1e-12);
	assert_float_equal(ax.step, 50, 1e-12);
	/* bytes in binary units: 3 GiB on 0-3 GiB by 1; nothing at all on 0-1 KiB */
	chart_axis_pick(&ax, CHART_BYTES, 3.0 * GIB, NAN, 4);
	assert_float_equal(ax.div, (double)GIB, 0);
	assert_float_equal(ax.max, 3, 1e-12);
	assert_float_equal(ax.step, 1, 1e-12);
	assert_string_equal(ax.unit, "GiB");
	chart_axis_pick(&ax, CHART_RATE, 0, NAN, 4);
	assert_float_equal(ax.div, 1024, 0);
	assert_float_equal(ax.max, 1, 1e-12);
	assert_float_equal(ax.step, 0.25, 1e-12);
	assert_string_equal(ax.unit, "KiB/s");
	chart_axis_pick(&ax, CHART_RATE, 5.0 * 1024 * 1024, NAN, 4);
	assert_float_equal(ax.max, 6, 1e-12);
	assert_float_equal(ax.step, 2, 1e-12);
	assert_string_equal(ax.unit, "MiB/s");
	/* 330 W under a 400 W limit: 0-500 by 100 */
	chart_axis_pick(&ax, CHART_WATTS, 330, 400, 4);
	assert_float_equal(ax.max, 500, 1e-9);
	assert_float_equal(ax.step, 100, 1e-9);
	assert_string_equal(ax.unit, "W");
}

static void test_job_without_gpus(void **state)
{
	static const char *const ids[] = {"cpu", "memory", "io"};
	struct sim *m = sim_new(4, 8 * GIB, 0);
	struct chart_set *cs = sim_run(m, NULL, false);
	const struct chart_panel *cpu = &cs->panels[0], *mem = &cs->panels[1];

	(void)state;
	assert_panel_ids(cs, ids, 3);
	assert_false(cs->node_gpus);
	assert_int_equal(cs->gpus_hidden, 0);
	/* the time axis: one point a second from the start, 9 s long */
	assert_int_equal(cs->origin_ms, T0_MS);
	assert_float_equal(cs->span_s, 9, 1e-12);
	assert_int_equal(cs->bucket_ms, 1000);
	assert_int_equal(cs->npoints, TICKS);
	assert_float_equal(cs->t_s[0], 0, 0);
	assert_float_equal(cs->t_s[9], 9, 1e-12);
	/* CPU: 2 cores used (from the second tick: a rate needs two), under the reservation */
	assert_string_equal(cpu->title, "CPU cores used");
	assert_int_equal(cpu->nseries, 1);
	assert_string_equal(cpu->series[0].label, "cores used");
	assert_true(isnan(cpu->series[0].v[0]));
	assert_float_equal(cpu->series[0].v[5], 2, 1e-9);
	assert_float_equal(cpu->ref, 4, 0);
	assert_string_equal(cpu->ref_label, "reserved: 4 cores");
	assert_float_equal(cpu->y.max, 5, 1e-12); /* the line at 4 clear of the top */
	/* memory: RSS at 1 GiB, the swap never measured, the reservation's line */
	assert_int_equal(mem->nseries, 1);
	assert_string_equal(mem->series[0].label, "RSS");
	assert_float_equal(mem->series[0].v[3], (double)GIB, 1);
	assert_float_equal(mem->ref, 8.0 * GIB, 0);
	assert_string_equal(mem->ref_label, "reserved: 8.00 GiB");
	assert_string_equal(mem->y.unit, "GiB");
	/* no I/O figures: the panel stays, to say so */
	assert_int_equal(cs->panels[2].nseries, 0);
	assert_string_equal(cs->panels[2].empty, "no I/O figures (/proc/PID/io not readable)");
	chart_set_free(cs);
	sim_free(m);
}

static void test_cores_allowed_label(void **state)
{
	struct sim *m = sim_new(0, 0, 0);
	struct chart_set *cs = sim_run(m, NULL, false);

	(void)state;
	assert_float_equal(cs->panels[0].ref, 16, 0);
	assert_string_equal(cs->panels[0].ref_label, "allowed: 16 cores");
	assert_true(isnan(cs->panels[1].ref));
	assert_string_equal(cs->panels[1].ref_label, "");
	chart_set_free(cs);
	sim_free(m);
}

static void test_job_with_one_gpu(void **state)
{
	static const char *const ids[] = {"cpu",      "memory",	    "io",
					  "gpu-util", "gpu-memory", "gpu-power"};
	static const bool on[] = {true};
	struct sim *m = sim_new(4, 0, 1);
	struct chart_set *cs = sim_run(m, on, false);
	const struct chart_panel *util = &cs->panels[3], *mem = &cs->panels[4];

	(void)state;
	/* no traffic figures: no interconnect panel; one device: no per-device panel */
	assert_panel_ids(cs, ids, 6);
	assert_true(cs->node_gpus);
	assert_int_equal(util->nseries, 1);
	assert_string_equal(util->series[0].label, "GPU 0");
	assert_int_equal(util->series[0].colour, 0);
	assert_float_equal(util->series[0].v[2], 50, 1e-9);
	assert_float_equal(util->y.max, 100, 0);
	assert_string_equal(mem->ref_label, "device memory: 80.0 GiB");
	assert_float_equal(mem->ref, 80.0 * GIB, 0);
	assert_float_equal(mem->y.max, 100, 1e-9); /* 80 GiB by 20, and a step above the line */
	/* no power readings: said, not drawn */
	assert_int_equal(cs->panels[5].nseries, 0);
	assert_string_equal(cs->panels[5].empty, "the driver gives no power readings");
	chart_set_free(cs);
	sim_free(m);
}

static void test_two_gpus_per_device_panels(void **state)
{
	static const char *const ids[] = {"cpu",	"memory",    "io",    "gpu-util",
					  "gpu-memory", "gpu-power", "gpu-0", "gpu-1"};
	static const bool on[] = {true, true};
	struct sim *m = sim_new(4, 0, 2);
	struct chart_set *cs = sim_run(m, on, false);
	const struct chart_panel *dev1 = &cs->panels[7];

	(void)state;
	assert_panel_ids(cs, ids, 8);
	assert_int_equal(cs->panels[3].nseries, 2);
	assert_string_equal(cs->panels[3].series[1].label, "GPU 1");
	assert_int_equal(cs->panels[3].series[1].colour, 1);
	assert_true(dev1->small);
	assert_int_equal(dev1->kind, CHART_GPU_DEVICE);
	assert_string_equal(dev1->title, "GPU 1, Test GPU: utilization, memory (% of 80.0 GiB)");
	assert_int_equal(dev1->nseries, 2);
	assert_string_equal(dev1->series[0].label, "utilization");
	assert_float_equal(dev1->series[0].v[1], 60, 1e-9);
	assert_int_equal(dev1->series[0].colour, 1);
	/* memory as a share of the device's: 10 of 80 GiB */
	assert_string_equal(dev1->series[1].label, "memory");
	assert_float_equal(dev1->series[1].v[1], 12.5, 1e-9);
	assert_int_equal(dev1->series[1].colour, CHART_INK);
	assert_true(dev1->series[1].dashed);
	assert_float_equal(dev1->y.step, 50, 0); /* fewer ticks on a small panel */
	chart_set_free(cs);
	sim_free(m);
}

static void test_devices_not_the_jobs(void **state)
{
	static const bool on[] = {true, false};
	struct sim *m = sim_new(4, 0, 2);
	struct chart_set *cs = sim_run(m, on, false);

	(void)state;
	/* only GPU 0 is the job's: GPU 1 left out, and one device needs no own panel */
	assert_int_equal(cs->npanels, 6);
	assert_int_equal(cs->gpus_hidden, 1);
	assert_int_equal(cs->panels[3].nseries, 1);
	assert_string_equal(cs->panels[3].series[0].label, "GPU 0");
	chart_set_free(cs);
	sim_free(m);
}

static void test_gap_kept(void **state)
{
	static const bool on[] = {true};
	struct sim *m = sim_new(4, 0, 1);
	struct chart_set *cs = sim_run(m, on, true);
	const struct chart_series *util = &cs->panels[3].series[0];

	(void)state;
	/* no sample at 4 s and 5 s: missing there, never 0, and the line goes on after */
	assert_float_equal(util->v[3], 50, 1e-9);
	assert_true(isnan(util->v[4]));
	assert_true(isnan(util->v[5]));
	assert_float_equal(util->v[6], 50, 1e-9);
	assert_float_equal(cs->panels[0].series[0].v[5], 2, 1e-9); /* the CPU has no gap */
	chart_set_free(cs);
	sim_free(m);
}

static void test_events_marked(void **state)
{
	struct sim *m = sim_new(4, 0, 0);
	struct event_record early = {.ts_ms = T0_MS - 5000}, xid = {.ts_ms = T0_MS + 3500};
	struct chart_set *cs;

	(void)state;
	snprintf(early.kind, sizeof(early.kind), "start");
	snprintf(xid.kind, sizeof(xid.kind), "xid");
	assert_int_equal(summary_add_event(&m->r.sum, &early), 0);
	assert_int_equal(summary_add_event(&m->r.sum, &xid), 0);
	cs = sim_run(m, NULL, false);
	/* the one before the start is off the axis; the other keeps its number */
	assert_int_equal(cs->nevents, 1);
	assert_int_equal(cs->events[0].number, 2);
	assert_float_equal(cs->events[0].t_s, 3.5, 1e-12);
	assert_string_equal(cs->events[0].event->kind, "xid");
	chart_set_free(cs);
	sim_free(m);
}

static void test_no_samples(void **state)
{
	struct sim *m = sim_new(4, 0, 0);
	struct chart_set *cs;

	(void)state;
	m->job.end_ms = T0_MS + 2500;
	job_report_finish(&m->r, &m->job);
	assert_int_equal(chart_set_build(&m->r.sum, &m->r.js, &cs), 0);
	assert_int_equal(cs->npanels, 0);
	assert_float_equal(cs->span_s, 2.5, 1e-12);
	chart_set_free(cs);
	assert_int_equal(chart_set_build(&m->r.sum, NULL, &cs), 0);
	assert_int_equal(cs->npanels, 0);
	chart_set_free(cs);
	sim_free(m);
}

/* A set from the caller's points (a session's): values copied, all-NAN series left out. */
static void test_set_from_points(void **state)
{
	const double t_s[4] = {0.5, 1.5, 2.5, 3.5};
	double busy[4] = {50, NAN, 70, 90}, none[4] = {NAN, NAN, NAN, NAN};
	double mem[4] = {GIB, 2.0 * GIB, 3.0 * GIB, 3.5 * GIB};
	struct chart_set *cs;
	struct chart_panel *p;

	(void)state;
	assert_int_equal(chart_set_new(T0_MS, 0.2, t_s, 4, &cs), 0);
	assert_true(cs->span_s == 1.0); /* at least a second */
	assert_int_equal(cs->npoints, 4);
	assert_true(cs->t_s[3] == 3.5);
	p = chart_panel_begin(cs, CHART_NODE_CPU, "cpu", "CPU busy", "CPU");
	assert_non_null(p);
	assert_int_equal(chart_panel_add(cs, p, "busy", 0, false, busy), 0);
	assert_int_equal(chart_panel_add(cs, p, "nothing", 1, false, none), 0);
	busy[0] = 1; /* copied: the set keeps its own */
	chart_panel_end(cs, p, false);
	assert_int_equal(cs->npanels, 1);
	assert_int_equal(p->nseries, 1);
	assert_true(p->series[0].v[0] == 50 && isnan(p->series[0].v[1]));
	assert_string_equal(p->y.unit, "%");
	assert_true(p->y.max == 100);
	p = chart_panel_begin(cs, CHART_MEMORY, "memory", "Memory used", "memory");
	assert_int_equal(chart_panel_add(cs, p, "used", 0, false, mem), 0);
	chart_panel_end(cs, p, false);
	assert_string_equal(cs->panels[1].y.unit, "GiB");
	assert_true(cs->panels[1].y.max == 4);
	p = chart_panel_begin(cs, CHART_NODE_NET, "net", "Network", "network");
	assert_int_equal(chart_panel_add(cs, p, "rx", 0, false, none), 0);
	chart_panel_end(cs, p, false); /* no series: dropped */
	assert_int_equal(cs->npanels, 2);
	while ((p = chart_panel_begin(cs, CHART_IO, "io", "I/O", "I/O")))
		chart_panel_end(cs, p, true);
	assert_int_equal(cs->npanels, CHART_MAX_PANELS); /* then NULL: full */
	chart_set_free(cs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nice_step),
	    cmocka_unit_test(test_axis_ranges),
	    cmocka_unit_test(test_job_without_gpus),
	    cmocka_unit_test(test_cores_allowed_label),
	    cmocka_unit_test(test_job_with_one_gpu),
	    cmocka_unit_test(test_two_gpus_per_device_panels),
	    cmocka_unit_test(test_devices_not_the_jobs),
	    cmocka_unit_test(test_gap_kept),
	    cmocka_unit_test(test_events_marked),
	    cmocka_unit_test(test_no_samples),
	    cmocka_unit_test(test_set_from_points),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
