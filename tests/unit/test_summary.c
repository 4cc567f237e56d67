/*
 * test_summary.c - the report's arithmetic on synthetic samples: averages,
 * peak windows, RSS peaks from ticks and high-water marks, the timeline's
 * halving, host deltas, GPU energy shares (the first interval of a job
 * first seen after its start included), and the JSON it renders.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/report.h"
#include "analysis/summary.h"

#define T0 1700000000000LL

static struct job_record make_job(int64_t interval_ms, int cores)
{
	struct job_record j;

	memset(&j, 0, sizeof(j));
	j.id = 7;
	snprintf(j.scheduler, sizeof(j.scheduler), "run");
	snprintf(j.command, sizeof(j.command), "busy --threads 2");
	snprintf(j.hostname, sizeof(j.hostname), "node1");
	j.start_ms = T0;
	j.interval_ms = interval_ms;
	j.cores_allowed = cores;
	j.host_cores = cores;
	j.host_mem_bytes = 8ull << 30;
	return j;
}

/* A job burning `cores` from t=0 to t=dur_ms, sampled every interval. */
static void feed_constant(struct summary *s, double cores, int64_t dur_ms, int64_t interval)
{
	for (int64_t t = 0; t <= dur_ms; t += interval) {
		struct job_sample j;

		memset(&j, 0, sizeof(j));
		j.user_ms = (uint64_t)(cores * (double)t);
		j.rss_bytes = 100ull << 20;
		j.nprocs = 1;
		j.valid = JS_IO;
		j.write_bytes = (uint64_t)t * 1000; /* 1 MB/s */
		summary_add_job(s, T0 + t, &j);
	}
}

static void test_cores_avg_and_peak(void **state)
{
	struct job_record job = make_job(100, 4);
	struct summary s;

	(void)state;
	summary_init(&s, &job);
	feed_constant(&s, 2.0, 10000, 100);
	job.end_ms = T0 + 10000;
	summary_finish(&s, &job);
	assert_float_equal(summary_cpu_seconds(&s), 20.0, 1e-9);
	assert_float_equal(summary_duration_s(&s), 10.0, 1e-9);
	assert_float_equal(summary_cores_avg(&s), 2.0, 1e-9);
	assert_float_equal(s.cores_peak, 2.0, 1e-9);
	assert_float_equal(summary_efficiency_pct(&s), 50.0, 1e-9);
	assert_float_equal(s.write_peak_bps, 1e6, 1e-3);
	assert_int_equal(s.samples, 101);
	summary_release(&s);
}

static void test_peak_window_smooths_quantization(void **state)
{
	/* 10 ms CPU ticks at a 50 ms interval: single intervals read 0.8 or
	 * 1.2 cores; the 500 ms window reads the truth, 1.0 */
	struct job_record job = make_job(50, 2);
	struct summary s;
	uint64_t cpu = 0;

	(void)state;
	summary_init(&s, &job);
	for (int i = 0; i <= 100; i++) {
		struct job_sample j;

		memset(&j, 0, sizeof(j));
		if (i > 0)
			cpu += (i % 2) ? 40 : 60;
		j.user_ms = cpu;
		summary_add_job(&s, T0 + i * 50, &j);
	}
	job.end_ms = T0 + 5000;
	summary_finish(&s, &job);
	assert_float_equal(s.cores_peak, 1.0, 1e-9);
	summary_release(&s);
}

static void test_short_run_has_a_peak(void **state)
{
	struct job_record job = make_job(500, 2);
	struct summary s;
	struct job_sample a, b;

	(void)state;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	b.user_ms = 150;
	summary_init(&s, &job);
	summary_add_job(&s, T0, &a);
	summary_add_job(&s, T0 + 300, &b);
	job.end_ms = T0 + 300;
	summary_finish(&s, &job);
	assert_float_equal(s.cores_peak, 0.5, 1e-9);
	summary_release(&s);
}

static void test_rss_peak_from_hwm(void **state)
{
	struct job_record job = make_job(500, 2);
	struct summary s;
	struct job_sample j;
	struct proc_info p;
	struct proc_sample ps;
	int64_t at = 0;

	(void)state;
	summary_init(&s, &job);
	memset(&j, 0, sizeof(j));
	j.rss_bytes = 10 << 20;
	summary_add_job(&s, T0 + 500, &j);
	j.rss_bytes = 50 << 20;
	summary_add_job(&s, T0 + 1000, &j);
	assert_int_equal(summary_rss_peak(&s, &at), 50 << 20);
	assert_int_equal(at, T0 + 1000);

	/* a process peaked at 300 MiB between two ticks: its high-water mark says so */
	memset(&p, 0, sizeof(p));
	p.pid = 42;
	p.start_ms = T0 + 10;
	snprintf(p.comm, sizeof(p.comm), "memtouch");
	memset(&ps, 0, sizeof(ps));
	ps.valid = PS_RSS | PS_HWM;
	ps.rss_bytes = 1 << 20;
	ps.hwm_bytes = 300 << 20;
	summary_add_proc(&s, &p, T0 + 1500, &ps);
	assert_int_equal(summary_rss_peak(&s, &at), 300 << 20);
	assert_int_equal(at, T0 + 1500);
	assert_int_equal(s.nprocs, 1);
	assert_int_equal(s.procs[0].rss_peak_bytes, 300 << 20);
	summary_release(&s);
}

static void test_procs_merge_and_order(void **state)
{
	struct job_record job = make_job(500, 2);
	struct summary s;
	const struct proc_summary *top[3];

	(void)state;
	summary_init(&s, &job);
	/* 1000 processes, the same pid reused with another start time */
	for (int i = 0; i < 1000; i++) {
		struct proc_info p;
		struct proc_sample ps;

		memset(&p, 0, sizeof(p));
		memset(&ps, 0, sizeof(ps));
		p.pid = 100 + (i % 500);
		p.start_ms = T0 + (i / 500) * 1000;
		snprintf(p.cmdline, sizeof(p.cmdline), "worker %d", i);
		ps.user_ms = (uint64_t)i;
		summary_add_proc(&s, &p, T0 + 100, &ps);
		ps.user_ms = (uint64_t)i * 2; /* cumulative: later rows win */
		ps.valid = PS_IO;
		ps.read_bytes = 5;
		summary_add_proc(&s, &p, T0 + 200, &ps);
	}
	assert_int_equal(s.nprocs, 1000);
	assert_int_equal(summary_procs_by_cpu(&s, top, 3), 3);
	assert_int_equal(top[0]->user_ms, 1998);
	assert_string_equal(top[0]->cmdline, "worker 999");
	assert_int_equal(top[1]->user_ms, 1996);
	assert_true(top[0]->has_io);
	summary_release(&s);
}

static void test_timeline_halves(void **state)
{
	struct job_record job = make_job(100, 1);
	struct summary s;
	int used = 0;
	uint64_t cpu = 0;

	(void)state;
	summary_init(&s, &job);
	/* 1000 s at 100 ms: 10001 samples into 60 buckets */
	feed_constant(&s, 1.0, 1000000, 100);
	for (int i = 0; i < SUMMARY_BUCKETS; i++) {
		if (!s.buckets[i].used)
			continue;
		used++;
		cpu += s.buckets[i].cpu_ms;
		assert_float_equal((double)s.buckets[i].cpu_ms / (double)s.buckets[i].span_ms, 1.0,
				   1e-9);
	}
	assert_true(used >= SUMMARY_BUCKETS / 2 && used <= SUMMARY_BUCKETS);
	assert_int_equal(cpu, 1000000);
	assert_true(s.bucket_ms >= 1000000 / SUMMARY_BUCKETS);
	summary_release(&s);
}

/* One job sample: cumulative CPU cpu_ms, rss bytes. */
static void add_job_at(struct summary *s, int64_t t, uint64_t cpu_ms, uint64_t rss)
{
	struct job_sample j;

	memset(&j, 0, sizeof(j));
	j.nprocs = 1;
	j.user_ms = cpu_ms;
	j.rss_bytes = rss;
	summary_add_job(s, T0 + t, &j);
}

/* The agent's `interval` event: the ticks after t come interval_ms apart. */
static void add_interval_at(struct summary *s, int64_t t, int64_t interval_ms)
{
	struct event_record e;

	memset(&e, 0, sizeof(e));
	e.ts_ms = T0 + t;
	snprintf(e.kind, sizeof(e.kind), "interval");
	e.value = interval_ms;
	assert_int_equal(summary_add_event(s, &e), 0);
}

static void assert_bucket(const struct summary *s, int i, int64_t span_ms, uint64_t cpu_ms)
{
	if (s->buckets[i].span_ms != span_ms || s->buckets[i].cpu_ms != cpu_ms)
		fail_msg("bucket %d: span %lld ms, cpu %llu ms; expected %lld, %llu", i,
			 (long long)s->buckets[i].span_ms, (unsigned long long)s->buckets[i].cpu_ms,
			 (long long)span_ms, (unsigned long long)cpu_ms);
	assert_true(s->buckets[i].used);
}

/*
 * Configured at 1 s, the agent sampled every 200 ms from t=10 s to t=20 s
 * (a head's session), then every second again.  1 core, then 2 cores with
 * 3 cores over [14.2 s, 14.8 s], then 1 core.  With the job's 1 s taken
 * for the spacing, each 200 ms interval read as a short last one and
 * joined the bucket before (bucket 9 read 1.33 cores), and the 1 s peak
 * window hid the 600 ms burst (2.6 cores).
 */
static void test_interval_change_1000_to_200(void **state)
{
	struct job_record job = make_job(1000, 4);
	uint64_t rss = 100ull << 20, cpu = 0;
	struct summary s;
	int64_t t;

	(void)state;
	summary_init(&s, &job);
	for (t = 0; t <= 10000; t += 1000) {
		cpu = (uint64_t)t;
		add_job_at(&s, t, cpu, rss);
	}
	add_interval_at(&s, 10000, 200);
	for (t = 10200; t <= 20000; t += 200) {
		cpu += t > 14200 && t <= 14800 ? 600 : 400;
		add_job_at(&s, t, cpu, rss);
	}
	add_interval_at(&s, 20000, 1000);
	for (t = 21000; t <= 30000; t += 1000) {
		cpu += 1000;
		add_job_at(&s, t, cpu, rss);
	}
	job.end_ms = T0 + 30000;
	summary_finish(&s, &job);

	assert_int_equal(s.samples, 11 + 50 + 10);
	assert_int_equal(cpu, 10000 + 20000 + 600 + 10000);
	assert_float_equal(summary_cpu_seconds(&s), 40.6, 1e-9);
	assert_float_equal(summary_cores_avg(&s), 40.6 / 30.0, 1e-9);
	assert_float_equal(s.cores_peak, 3.0, 1e-9);
	assert_int_equal(s.cores_peak_at_ms, T0 + 14800);
	assert_int_equal(s.interval_ms, 1000);
	assert_int_equal(s.bucket_ms, 1000);
	for (int i = 0; i < 10; i++)
		assert_bucket(&s, i, 1000, 1000);
	for (int i = 10; i < 20; i++)
		assert_bucket(&s, i, 1000, i == 14 ? 2600 : 2000);
	for (int i = 20; i < 30; i++)
		assert_bucket(&s, i, 1000, 1000);
	assert_bucket(&s, 30, 0, 0); /* the last sample: its RSS only */
	assert_int_equal(s.buckets[30].rss_max, rss);
	assert_false(s.buckets[31].used);
	/* both changes are the job's events, for the charts */
	assert_int_equal(s.nevents, 2);
	assert_string_equal(s.events[0].kind, "interval");
	assert_int_equal(s.events[0].ts_ms, T0 + 10000);
	assert_int_equal(s.events[0].value, 200);
	assert_int_equal(s.events[1].value, 1000);
	summary_release(&s);
}

/*
 * Started under a session at 200 ms, back to 1 s at t=4.8 s: 2 cores,
 * then 1 core at 200 MiB.  The 1 s intervals are real ones, not rows left
 * out; the buckets widen to 1.6 s (200 ms doubled until it holds an
 * interval) so none is left empty between two samples.  An event that
 * says what is already in effect, or nonsense, changes nothing and is not
 * listed.
 */
static void test_interval_change_200_to_1000(void **state)
{
	struct job_record job = make_job(200, 4);
	uint64_t cpu = 0;
	struct summary s;
	int64_t t;

	(void)state;
	summary_init(&s, &job);
	add_interval_at(&s, -5000, 200); /* the one in effect at the start */
	for (t = 0; t <= 4800; t += 200) {
		cpu = (uint64_t)t * 2;
		add_job_at(&s, t, cpu, 100ull << 20);
	}
	add_interval_at(&s, 4800, 1000);
	add_interval_at(&s, 4800, 0);
	add_interval_at(&s, 4800, -1000);
	add_interval_at(&s, 4800, 1000LL << 40);
	for (t = 5800; t <= 12800; t += 1000) {
		cpu += 1000;
		add_job_at(&s, t, cpu, 200ull << 20);
	}
	job.end_ms = T0 + 12800;
	summary_finish(&s, &job);

	assert_int_equal(s.interval_ms, 1000);
	assert_int_equal(s.bucket_ms, 1600);
	for (int i = 0; i < 3; i++)
		assert_bucket(&s, i, 1600, 3200);
	assert_bucket(&s, 3, 2000, 2000); /* the intervals from 4.8 s and 5.8 s */
	assert_bucket(&s, 4, 2000, 2000);
	assert_bucket(&s, 5, 1000, 1000);
	assert_bucket(&s, 6, 2000, 2000);
	assert_bucket(&s, 7, 1000, 1000);
	assert_bucket(&s, 8, 0, 0);
	assert_int_equal(s.buckets[2].rss_max, 100ull << 20);
	assert_int_equal(s.buckets[3].rss_max, 200ull << 20);
	assert_float_equal(summary_cores_avg(&s), (9600.0 + 8000.0) / 12800.0, 1e-9);
	assert_float_equal(s.cores_peak, 2.0, 1e-9);
	assert_int_equal(s.nevents, 1);
	assert_int_equal(s.events[0].value, 1000);
	summary_release(&s);
}

static void test_host_util_and_json(void **state)
{
	struct job_record job = make_job(500, 2);
	struct summary s;
	struct host_sample *h = calloc(1, sizeof(*h));
	struct strbuf out;

	(void)state;
	assert_non_null(h);
	summary_init(&s, &job);
	h->valid = HOST_HAS_CPU | HOST_HAS_NET | HOST_HAS_MEM;
	h->mem.valid = MEMINFO_AVAILABLE;
	h->mem.available_bytes = 4ull << 30;
	h->cpu.total.user_ms = 1000;
	h->cpu.total.idle_ms = 1000;
	h->net_rx_bytes = 100;
	summary_add_host(&s, T0, h);
	h->cpu.total.user_ms = 1750; /* +750 busy */
	h->cpu.total.idle_ms = 1250; /* +250 idle */
	h->net_rx_bytes = 1100;
	h->mem.available_bytes = 3ull << 30;
	summary_add_host(&s, T0 + 1000, h);
	assert_float_equal(summary_host_cpu_util_pct(&s), 75.0, 1e-9);
	assert_int_equal(s.host_mem_available_min, 3ull << 30);

	job.end_ms = T0 + 1000;
	job.has_exit = true;
	job.exit_code = 3;
	summary_finish(&s, &job);
	strbuf_init(&out, 0);
	assert_int_equal(report_json(&s, NULL, NULL, NULL, &out), 0);
	/* no job samples: CPU and memory are unknown (null), not 0 */
	assert_non_null(strstr(out.buf, "\"cpu_seconds\": null"));
	assert_non_null(strstr(out.buf, "\"rss_peak_bytes\": null"));
	assert_non_null(strstr(out.buf, "\"read_bytes\": null"));
	assert_non_null(strstr(out.buf, "\"exit_code\": 3"));
	assert_non_null(strstr(out.buf, "\"signal\": null"));
	assert_non_null(strstr(out.buf, "\"rx_bytes\": 1000"));
	assert_non_null(strstr(out.buf, "\"cpu_util_avg_pct\": 75.0"));
	assert_non_null(strstr(out.buf, "\"io_some\": null"));
	strbuf_release(&out);
	summary_release(&s);
	free(h);
}

static void test_text_report(void **state)
{
	struct job_record job = make_job(100, 4);
	struct summary s;
	struct strbuf out;
	struct report_options ro = {.utf8 = false, .max_procs = 5};

	(void)state;
	summary_init(&s, &job);
	feed_constant(&s, 2.0, 10000, 100);
	job.end_ms = T0 + 10000;
	job.has_exit = true;
	job.signal = 15;
	job.exit_code = 143;
	job.timed_out = true;
	summary_finish(&s, &job);
	strbuf_init(&out, 0);
	assert_int_equal(report_text(&s, NULL, &ro, &out), 0);
	assert_non_null(strstr(out.buf, "20.00s CPU"));
	assert_non_null(strstr(out.buf, "2.00 cores on average, peak 2.00"));
	assert_non_null(strstr(out.buf, "efficiency 50.0% of the 4 cores"));
	assert_non_null(strstr(out.buf, "killed by signal 15"));
	assert_non_null(strstr(out.buf, "TIMED OUT"));
	assert_non_null(strstr(out.buf, "Timeline"));
	strbuf_release(&out);
	summary_release(&s);
}

static void test_events_capped(void **state)
{
	struct job_record job = make_job(100, 1);
	struct summary s;
	struct event_record e;

	(void)state;
	memset(&e, 0, sizeof(e));
	snprintf(e.kind, sizeof(e.kind), "exit");
	summary_init(&s, &job);
	for (int i = 0; i < 10005; i++)
		assert_int_equal(summary_add_event(&s, &e), 0);
	assert_int_equal(s.nevents, 10000);
	assert_int_equal(s.events_dropped, 5);
	summary_release(&s);
}

static void test_gpu_energy_split(void **state)
{
	struct job_record job = make_job(1000, 2);
	struct summary s;
	struct device_record dev;
	struct gpu_sample g;
	struct gpu_proc mine, other;
	struct proc_info p;

	(void)state;
	memset(&dev, 0, sizeof(dev));
	snprintf(dev.info.uuid, sizeof(dev.info.uuid), "GPU-x");
	memset(&p, 0, sizeof(p));
	p.pid = 42;
	p.start_ms = T0;
	memset(&mine, 0, sizeof(mine));
	mine.pid = 42;
	mine.valid = GPU_PROC_UTIL | GPU_PROC_MEM;
	mine.sm_util_pct = 75;
	mine.mem_bytes = 1 << 20;
	other = mine;
	other.pid = 7;
	other.sm_util_pct = 25;
	other.mem_bytes = 3 << 20;
	memset(&g, 0, sizeof(g));
	g.valid = GPU_ENERGY | GPU_UTIL;
	summary_init(&s, &job);

	/* t=0..1 s: 100 J; SM shares 75/25: the job gets 75 J */
	g.energy_mj = 1000000;
	g.util_pct = 10;
	summary_add_gpu(&s, &dev, T0, &g);
	summary_add_gpu_proc(&s, &dev, &p, T0, &mine);
	summary_add_gpu_proc(&s, &dev, NULL, T0, &other);
	g.energy_mj = 1100000;
	g.util_pct = 90;
	summary_add_gpu(&s, &dev, T0 + 1000, &g);
	summary_add_gpu_proc(&s, &dev, &p, T0 + 1000, &mine);
	summary_add_gpu_proc(&s, &dev, NULL, T0 + 1000, &other);
	/* t=1..2 s: 50 J; no utilization: by memory, 1/4 -> 12.5 J */
	mine.valid = other.valid = GPU_PROC_MEM;
	g.energy_mj = 1150000;
	g.util_pct = 90;
	summary_add_gpu(&s, &dev, T0 + 2000, &g);
	summary_add_gpu_proc(&s, &dev, &p, T0 + 2000, &mine);
	summary_add_gpu_proc(&s, &dev, NULL, T0 + 2000, &other);
	/* t=2..3 s: the counter was reset to 20 J: 20 J, alone: all of it */
	g.energy_mj = 20000;
	summary_add_gpu(&s, &dev, T0 + 3000, &g);
	summary_add_gpu_proc(&s, &dev, &p, T0 + 3000, &mine);
	/* t=3..4 s: 10 J shared with another process, nothing to split by: nobody's */
	g.energy_mj = 30000;
	mine.valid = other.valid = 0;
	summary_add_gpu(&s, &dev, T0 + 4000, &g);
	summary_add_gpu_proc(&s, &dev, &p, T0 + 4000, &mine);
	summary_add_gpu_proc(&s, &dev, NULL, T0 + 4000, &other);
	job.end_ms = T0 + 4000;
	summary_finish(&s, &job);

	assert_int_equal(s.ngpus, 1);
	assert_true(s.gpus[0].used);
	assert_float_equal(s.gpus[0].energy_mj, 180000, 1e-6);
	assert_float_equal(s.gpus[0].job_energy_mj, 75000 + 12500 + 20000, 1e-6);
	assert_float_equal(s.gpus[0].unattributed_mj, 10000, 1e-6);
	assert_float_equal(s.gpus[0].others_mj, 25000 + 37500, 1e-6);
	assert_float_equal(s.gpus[0].idle_mj, 0, 1e-6);
	assert_int_equal(s.gpus[0].energy_span_ms, 4000);
	assert_int_equal(summary_gpu_util_pct(&s.gpus[0], 50), 90);
	assert_int_equal(summary_gpu_util_pct(&s.gpus[0], 20), 10);
	assert_int_equal(summary_gpu_util_pct(&s.gpus[0], 95), 90);
	assert_int_equal(s.procs[0].gpu_mem_peak_bytes, 1 << 20);
	assert_int_equal(s.procs[0].gpu_util_n, 2);
	summary_release(&s);
}

/* One reading of device dev at T0 + t_ms: power_mw and energy counter mj. */
static void gpu_reading(struct summary *s, const struct device_record *dev, int64_t t_ms,
			uint32_t power_mw, uint64_t mj)
{
	struct gpu_sample g;

	memset(&g, 0, sizeof(g));
	g.valid = GPU_ENERGY | GPU_POWER | GPU_PCIE;
	g.pcie_rx_bps = 1000;
	g.power_mw = power_mw;
	g.energy_mj = mj;
	summary_add_gpu(s, dev, T0 + t_ms, &g);
}

/*
 * An agent's job, first seen at the tick after its start: its first GPU
 * reading has no reading before it in the job's window.  The part of that
 * interval since its process started (150 - 50 ms at 350 W) is its, then
 * every interval by the counter; a tick with nobody on the GPU is idle.
 * Not when the job was not on the GPU at that reading, nor when its
 * process started more than two intervals before it (an agent started
 * late: unknown).
 */
static void test_gpu_first_interval(void **state)
{
	struct job_record job = make_job(200, 1);
	struct device_record dev;
	struct gpu_proc mine;
	struct proc_info p;
	struct summary s;

	(void)state;
	memset(&dev, 0, sizeof(dev));
	snprintf(dev.info.uuid, sizeof(dev.info.uuid), "GPU-x");
	memset(&p, 0, sizeof(p));
	p.pid = 42;
	p.start_ms = T0 + 50;
	memset(&mine, 0, sizeof(mine));
	mine.pid = 42;
	mine.valid = GPU_PROC_UTIL | GPU_PROC_MEM;
	mine.sm_util_pct = 45; /* half of the window at 90% */
	mine.mem_bytes = 1 << 20;

	summary_init(&s, &job);
	gpu_reading(&s, &dev, 150, 350000, 1000000);
	summary_add_gpu_proc(&s, &dev, &p, T0 + 150, &mine);
	gpu_reading(&s, &dev, 350, 350000, 1070000);
	summary_add_gpu_proc(&s, &dev, &p, T0 + 350, &mine);
	gpu_reading(&s, &dev, 550, 0, 1100000); /* it left: nobody there */
	job.end_ms = T0 + 550;
	summary_finish(&s, &job);
	assert_float_equal(s.gpus[0].energy_mj, 35000 + 70000 + 30000, 1e-6);
	assert_float_equal(s.gpus[0].job_energy_mj, 35000 + 70000, 1e-6);
	assert_float_equal(s.gpus[0].idle_mj, 30000, 1e-6);
	assert_int_equal(s.gpus[0].energy_span_ms, 100 + 200 + 200);
	assert_float_equal(s.gpus[0].pcie_rx_bytes, 1000 * 0.5, 1e-9); /* over the same span */
	summary_release(&s);

	/*
	 * not on the GPU at its first reading: nothing before it is counted;
	 * (150, 350] is split by the processes at 350, where it is
	 */
	summary_init(&s, &job);
	gpu_reading(&s, &dev, 150, 350000, 1000000);
	gpu_reading(&s, &dev, 350, 350000, 1070000);
	summary_add_gpu_proc(&s, &dev, &p, T0 + 350, &mine);
	summary_finish(&s, &job);
	assert_float_equal(s.gpus[0].energy_mj, 70000, 1e-6);
	assert_float_equal(s.gpus[0].job_energy_mj, 70000, 1e-6);
	assert_int_equal(s.gpus[0].energy_span_ms, 200);
	summary_release(&s);

	/* its process started long before the first reading: unknown */
	p.start_ms = T0 - 10000;
	summary_init(&s, &job);
	gpu_reading(&s, &dev, 150, 350000, 1000000);
	summary_add_gpu_proc(&s, &dev, &p, T0 + 150, &mine);
	summary_finish(&s, &job);
	assert_false(s.gpus[0].has_energy);
	assert_float_equal(s.gpus[0].job_energy_mj, 0, 1e-6);
	summary_release(&s);
}

/*
 * The GPU's timeline: a reading holds for the interval that ended at it.
 * Ticks at 100 ms, one of them late (250 -> 400 ms, past the bucket of
 * 300 ms): every bucket has the GPU's value, none is empty; an interval
 * across two buckets is split by its milliseconds in each.  After a gap
 * of more than three intervals (the GPU lost) the buckets between stay
 * empty (2 s at least: late ticks are not gaps): a gap in the readings is
 * a gap in the chart.
 */
static void gpu_util_at(struct summary *s, const struct device_record *dev, int64_t t_ms,
			uint32_t pct)
{
	struct gpu_sample g;

	memset(&g, 0, sizeof(g));
	g.valid = GPU_UTIL;
	g.util_pct = pct;
	summary_add_gpu(s, dev, T0 + t_ms, &g);
}

static double bucket_util(const struct gpu_summary *g, int i)
{
	return g->bucket_util_ms[i] ? g->bucket_util_pct_ms[i] / (double)g->bucket_util_ms[i]
				    : NAN;
}

static void test_gpu_timeline_late_tick_and_gap(void **state)
{
	struct job_record job = make_job(100, 1);
	struct device_record dev;
	struct summary s;
	const struct gpu_summary *g;
	static const int64_t at[] = {0, 100, 200, 250, 400, 500, 600, 2700};
	static const uint32_t pct[] = {60, 60, 60, 60, 20, 60, 60, 60};

	(void)state;
	memset(&dev, 0, sizeof(dev));
	snprintf(dev.info.uuid, sizeof(dev.info.uuid), "GPU-x");
	summary_init(&s, &job);
	feed_constant(&s, 1.0, 2700, 100);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		gpu_util_at(&s, &dev, at[i], pct[i]);
	g = &s.gpus[0];
	assert_int_equal(s.bucket_ms, 100); /* 28 buckets of SUMMARY_BUCKETS */
	assert_float_equal(bucket_util(g, 0), 60, 1e-9); /* (0,100] and the first reading */
	assert_float_equal(bucket_util(g, 1), 60, 1e-9);
	/* (250, 400] at 20%: half of bucket 2 was 60%, half 20% ... */
	assert_float_equal(bucket_util(g, 2), 40, 1e-9);
	/* ... and bucket 3 is all of it: 20%, not empty */
	assert_float_equal(bucket_util(g, 3), 20, 1e-9);
	assert_float_equal(bucket_util(g, 4), 60, 1e-9);
	assert_float_equal(bucket_util(g, 5), 60, 1e-9);
	for (int i = 6; i < 27; i++)
		assert_true(isnan(bucket_util(g, i))); /* 600 -> 2700: lost, no value */
	assert_float_equal(bucket_util(g, 27), 60, 1e-9);
	summary_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cores_avg_and_peak),
	    cmocka_unit_test(test_peak_window_smooths_quantization),
	    cmocka_unit_test(test_short_run_has_a_peak),
	    cmocka_unit_test(test_rss_peak_from_hwm),
	    cmocka_unit_test(test_procs_merge_and_order),
	    cmocka_unit_test(test_timeline_halves),
	    cmocka_unit_test(test_interval_change_1000_to_200),
	    cmocka_unit_test(test_interval_change_200_to_1000),
	    cmocka_unit_test(test_host_util_and_json),
	    cmocka_unit_test(test_text_report),
	    cmocka_unit_test(test_events_capped),
	    cmocka_unit_test(test_gpu_energy_split),
	    cmocka_unit_test(test_gpu_first_interval),
	    cmocka_unit_test(test_gpu_timeline_late_tick_and_gap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
