/*
 * test_reportckpt.c - report checkpoints (analysis/reportckpt.h): a state
 * saved mid-job and restored goes on to exactly the report of the state
 * that was never saved (text, JSON and CSV, byte for byte); blobs that are
 * truncated, flipped, of another format or another job, or whose counts
 * and indexes lie, are refused or at worst restore a state the report
 * renders without a fault (ASan/UBSan builds check that too).
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
#include <zstd.h>

#include <cmocka.h>

#include "analysis/jobreport.h"
#include "analysis/reportckpt.h"
#include "common/strbuf.h"
#include "report/report.h"
#include "store/tick.h"

#define T0     1767571200000LL
#define NGPUS  2
#define NPROCS 3

/* reportckpt.c's payload header: its counts' offsets (see struct ckpt_head) */
#define HEAD_SIZE	  88
#define HEAD_NPROCS	  48
#define HEAD_NEVENTS	  56
#define HEAD_NGPUS_SUM	  64
#define HEAD_NGPUS_SERIES 68
#define HEAD_TRACKS	  72
#define HEAD_HAS_GPUS	  76

static struct job_record make_job(void)
{
	struct job_record j;

	memset(&j, 0, sizeof(j));
	j.id = 42;
	snprintf(j.scheduler, sizeof(j.scheduler), "slurm");
	snprintf(j.job_id, sizeof(j.job_id), "4242");
	snprintf(j.hostname, sizeof(j.hostname), "node01");
	j.start_ms = T0;
	j.interval_ms = 1000;
	j.cores_allowed = 8;
	j.host_cores = 16;
	j.host_mem_bytes = 64ull << 30;
	return j;
}

static void make_dev(int i, struct device_record *d)
{
	memset(d, 0, sizeof(*d));
	d->id = 10 + i;
	snprintf(d->vendor, sizeof(d->vendor), "nvidia");
	d->info.index = i;
	snprintf(d->info.uuid, sizeof(d->info.uuid), "GPU-%04d", i);
	snprintf(d->info.name, sizeof(d->info.name), "Test GPU");
	d->info.valid = GPU_INFO_MEM_TOTAL;
	d->info.mem_total_bytes = 80ull << 30;
	d->info.supported = GPU_UTIL | GPU_MEM_USED | GPU_POWER | GPU_ENERGY | GPU_PCIE |
			    GPU_PROC_MEM | GPU_PROC_UTIL;
}

/*
 * Ticks [from, to) of a job with three processes (one starting late),
 * two GPUs, an event now and then and an interval change at tick 900,
 * fed as a replay feeds them (jobreport.c's order).
 */
static void feed(struct summary *s, struct jobseries *js, int from, int to)
{
	struct host_sample *h = calloc(1, sizeof(*h));

	assert_non_null(h);
	for (int t = from; t < to; t++) {
		int64_t step = t < 900 ? 1000 : 2000;
		int64_t ts = T0 + (t < 900 ? t * 1000LL : 900000LL + (t - 900) * step);
		double phase = (double)(t % 37) / 37.0;
		struct job_sample j;

		memset(h, 0, sizeof(*h));
		h->valid = HOST_HAS_CPU | HOST_HAS_MEM | HOST_HAS_NET | HOST_HAS_LOAD;
		h->cpu.ncpus = 16;
		h->cpu.total.user_ms = (uint64_t)t * 9000 + (uint64_t)(phase * 500);
		h->cpu.total.idle_ms = (uint64_t)t * 7000;
		h->cpu.total.iowait_ms = (uint64_t)t * 100;
		h->mem.valid = MEMINFO_AVAILABLE;
		h->mem.total_bytes = 64ull << 30;
		h->mem.available_bytes = (40ull << 30) - (uint64_t)(t % 50) * (64ull << 20);
		h->net_rx_bytes = (uint64_t)t * 123456;
		h->net_tx_bytes = (uint64_t)t * 654321;
		h->load.load1_milli = (uint32_t)(1000 + t % 300);
		summary_add_host(s, ts, h);
		jobseries_add_host(js, ts, h);

		for (int k = 0; k < NPROCS; k++) {
			struct proc_info p;
			struct proc_sample ps;

			if (k == 2 && t < 300)
				continue; /* a process that starts later */
			memset(&p, 0, sizeof(p));
			memset(&ps, 0, sizeof(ps));
			p.pid = 100 + k;
			p.ppid = k ? 100 : 1;
			p.start_ms = T0 + (k == 2 ? 300000 : 0);
			snprintf(p.comm, sizeof(p.comm), "worker%d", k);
			snprintf(p.cmdline, sizeof(p.cmdline), "python train.py --rank %d", k);
			ps.valid = PS_RSS | PS_HWM | PS_IO | PS_THREADS;
			ps.user_ms = (uint64_t)t * (300 + 100 * k);
			ps.system_ms = (uint64_t)t * 20;
			ps.rss_bytes = (1ull << 30) + (uint64_t)(t % 97) * (1 << 20) * (k + 1);
			ps.hwm_bytes = ps.rss_bytes + (1 << 20);
			ps.read_bytes = (uint64_t)t * 4096 * (k + 1);
			ps.write_bytes = (uint64_t)t * 8192;
			ps.threads = 4 + k;
			summary_add_proc(s, &p, ts, &ps);
		}

		memset(&j, 0, sizeof(j));
		j.valid = JS_IO | JS_SWAP;
		j.nprocs = t < 300 ? 2 : 3;
		j.user_ms = (uint64_t)t * 1100 + (uint64_t)(phase * 3000);
		j.system_ms = (uint64_t)t * 60;
		j.rss_bytes = (3ull << 30) + (uint64_t)(t % 97) * (3 << 20);
		j.read_bytes = (uint64_t)t * 12288;
		j.write_bytes = (uint64_t)t * 24576;
		summary_add_job(s, ts, &j);
		jobseries_add_job(js, ts, &j);

		for (int i = 0; i < NGPUS; i++) {
			struct device_record d;
			struct gpu_sample g;
			struct gpu_proc gp;
			struct proc_info p;

			make_dev(i, &d);
			memset(&g, 0, sizeof(g));
			g.valid = GPU_UTIL | GPU_MEM_USED | GPU_POWER | GPU_ENERGY | GPU_PCIE;
			g.util_pct = (uint32_t)((t * (i + 3)) % 101);
			g.mem_used_bytes = (20ull << 30) + (uint64_t)(t % 13) * (1 << 28);
			g.power_mw = 150000 + (uint32_t)(t % 41) * 2000;
			g.energy_mj = (uint64_t)t * 200000;
			g.pcie_rx_bps = (uint64_t)(t % 7) * 1000000;
			g.pcie_tx_bps = (uint64_t)(t % 5) * 1000000;
			summary_add_gpu(s, &d, ts, &g);
			jobseries_add_gpu(js, &d, ts, &g);
			memset(&gp, 0, sizeof(gp));
			memset(&p, 0, sizeof(p));
			p.pid = 100 + i;
			p.start_ms = T0;
			gp.pid = (uint32_t)p.pid;
			gp.valid = GPU_PROC_MEM | GPU_PROC_UTIL;
			gp.mem_bytes = 10ull << 30;
			gp.sm_util_pct = g.util_pct;
			summary_add_gpu_proc(s, &d, &p, ts, &gp);
		}

		if (t % 250 == 17 || t == 900) {
			struct event_record e;

			memset(&e, 0, sizeof(e));
			e.ts_ms = ts;
			if (t == 900) {
				snprintf(e.kind, sizeof(e.kind), "%s", STORE_EVENT_INTERVAL);
				e.value = 2000;
				jobseries_set_interval(js, ts, 2000);
			} else {
				snprintf(e.kind, sizeof(e.kind), "xid");
				e.value = 79;
				e.has_gpu = true;
				e.gpu = t % NGPUS;
				snprintf(e.message, sizeof(e.message), "GPU fell off the bus at %d",
					 t);
			}
			summary_add_event(s, &e);
		}
	}
	free(h);
}

/* The whole report of a state, finished: text, JSON and CSV, one after the other. */
static void render(struct job_report *r, const struct job_record *job, struct strbuf *out)
{
	struct report_options ro = {.utf8 = true, .max_procs = 10};

	job_report_finish(r, job);
	assert_int_equal(report_text(&r->sum, &r->an, &ro, out), 0);
	assert_int_equal(report_json(&r->sum, &r->an, NULL, NULL, out), 0);
	assert_int_equal(report_csv(&r->sum, &r->js, out), 0);
}

static void encode_at(const struct job_record *job, int ticks, void **blob, size_t *size)
{
	struct job_report *r = calloc(1, sizeof(*r));
	struct report_ckpt_mark mark = {
	    .seq = 1000 + ticks, .ts_ms = T0 + ticks * 1000LL, .window_ms = T0 + ticks * 1000LL};

	assert_non_null(r);
	job_report_init(r, job);
	feed(&r->sum, &r->js, 0, ticks);
	assert_int_equal(report_ckpt_encode(&r->sum, &r->js, job, &mark, blob, size), 0);
	job_report_release(r);
	free(r);
}

/* Checkpoints at several points (before and after the overview halves, the ring wraps, the
 * interval changes): the rest fed after the restore gives the same bytes as no checkpoint. */
static void test_round_trip(void **state)
{
	static const int cuts[] = {0, 1, 300, 1024, 1500, 4500};
	const int total = 4700;
	struct job_record job = make_job();
	struct job_report *whole = calloc(1, sizeof(*whole)), *r = calloc(1, sizeof(*r));
	struct strbuf want, got;

	(void)state;
	assert_non_null(whole);
	assert_non_null(r);
	strbuf_init(&want, 0);
	job_report_init(whole, &job);
	feed(&whole->sum, &whole->js, 0, total);
	render(whole, &job, &want);
	assert_true(want.len > 1000);
	for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
		struct report_ckpt_mark mark;
		void *blob;
		size_t size;

		encode_at(&job, cuts[c], &blob, &size);
		job_report_init(r, &job);
		assert_int_equal(report_ckpt_decode(blob, size, &job, &r->sum, &r->js, &mark), 0);
		assert_int_equal(mark.seq, 1000 + cuts[c]);
		assert_int_equal(mark.ts_ms, T0 + cuts[c] * 1000LL);
		feed(&r->sum, &r->js, cuts[c], total);
		strbuf_init(&got, 0);
		render(r, &job, &got);
		assert_int_equal(got.len, want.len);
		assert_memory_equal(got.buf, want.buf, want.len);
		strbuf_release(&got);
		job_report_release(r);
		free(blob);
	}
	job_report_release(whole);
	strbuf_release(&want);
	free(whole);
	free(r);
}

/* Many processes (the index restored at the size it had grown to): found again, not added twice. */
static void test_many_procs(void **state)
{
	struct job_record job = make_job();
	struct job_report *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct report_ckpt_mark mark = {5, T0, T0};
	struct strbuf sa, sb;
	void *blob;
	size_t size;

	(void)state;
	job_report_init(a, &job);
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			assert_int_equal(
			    report_ckpt_encode(&a->sum, &a->js, &job, &mark, &blob, &size), 0);
			job_report_init(b, &job);
			assert_int_equal(
			    report_ckpt_decode(blob, size, &job, &b->sum, &b->js, &mark), 0);
			free(blob);
		}
		for (int k = 0; k < 1500; k++) {
			struct proc_info p;
			struct proc_sample ps;

			memset(&p, 0, sizeof(p));
			memset(&ps, 0, sizeof(ps));
			p.pid = 1000 + k;
			p.start_ms = T0 + k;
			snprintf(p.comm, sizeof(p.comm), "p%d", k);
			ps.valid = PS_RSS;
			ps.rss_bytes = (uint64_t)(k + 1) << 20;
			ps.user_ms = (uint64_t)(pass + 1) * (uint64_t)k;
			summary_add_proc(&a->sum, &p, T0 + pass * 1000, &ps);
			if (pass == 1)
				summary_add_proc(&b->sum, &p, T0 + pass * 1000, &ps);
		}
	}
	assert_int_equal(b->sum.nprocs, 1500);
	assert_int_equal(b->sum.proc_index_size, a->sum.proc_index_size);
	strbuf_init(&sa, 0);
	strbuf_init(&sb, 0);
	render(a, &job, &sa);
	render(b, &job, &sb);
	assert_int_equal(sa.len, sb.len);
	assert_memory_equal(sa.buf, sb.buf, sa.len);
	strbuf_release(&sa);
	strbuf_release(&sb);
	job_report_release(a);
	job_report_release(b);
	free(a);
	free(b);
}

/* A finished series is no state to go on from: not encoded. */
static void test_finished_refused(void **state)
{
	struct job_record job = make_job();
	struct job_report *r = calloc(1, sizeof(*r));
	struct report_ckpt_mark mark = {1, T0, T0};
	void *blob;
	size_t size;

	(void)state;
	job_report_init(r, &job);
	feed(&r->sum, &r->js, 0, 10);
	job_report_finish(r, &job);
	assert_int_equal(report_ckpt_encode(&r->sum, &r->js, &job, &mark, &blob, &size), -EINVAL);
	assert_null(blob);
	job_report_release(r);
	free(r);
}

/* Decodes; on success the state must render (the sanitizers watch). */
static int try_decode(const void *blob, size_t size, const struct job_record *job)
{
	struct job_report *r = calloc(1, sizeof(*r));
	struct report_ckpt_mark mark;
	struct strbuf out;
	int ret;

	assert_non_null(r);
	job_report_init(r, job);
	ret = report_ckpt_decode(blob, size, job, &r->sum, &r->js, &mark);
	if (ret) {
		/* refused: the state is a fresh one */
		assert_int_equal(r->sum.nprocs, 0);
		assert_null(r->sum.gpus);
		assert_int_equal(r->js.ngpus, 0);
		assert_int_equal(r->js.npoints, 0);
	} else {
		strbuf_init(&out, 0);
		feed(&r->sum, &r->js, 1200, 1203);
		render(r, job, &out);
		strbuf_release(&out);
	}
	job_report_release(r);
	free(r);
	return ret;
}

static void test_truncated_and_flipped(void **state)
{
	struct job_record job = make_job();
	void *blob;
	size_t size;
	unsigned char *copy;

	(void)state;
	encode_at(&job, 1200, &blob, &size);
	copy = malloc(size);
	assert_non_null(copy);
	assert_int_equal(try_decode(blob, size, &job), 0);
	/* every length short of the whole: refused */
	for (size_t n = 0; n < size; n += n < 16 ? 1 : 1 + size / 100) {
		memcpy(copy, blob, n);
		assert_int_not_equal(try_decode(copy, n, &job), 0);
	}
	/* bits flipped in the compressed bytes: refused, or a state that renders */
	for (size_t at = 0; at < size; at += 1 + size / 120) {
		memcpy(copy, blob, size);
		copy[at] ^= (unsigned char)(1u << (at % 8));
		try_decode(copy, size, &job);
	}
	/* magic and format */
	memcpy(copy, blob, size);
	copy[0] = 'X';
	assert_int_equal(try_decode(copy, size, &job), -EPROTO);
	memcpy(copy, blob, size);
	copy[5] ^= 1;
	assert_int_equal(try_decode(copy, size, &job), -ESTALE);
	free(copy);
	free(blob);
}

/* Another job, or this one changed since: stale, never restored. */
static void test_other_job(void **state)
{
	struct job_record job = make_job(), other;
	void *blob;
	size_t size;

	(void)state;
	encode_at(&job, 100, &blob, &size);
	other = job;
	other.id = 43;
	assert_int_equal(try_decode(blob, size, &other), -ESTALE);
	other = job;
	other.start_ms += 1;
	assert_int_equal(try_decode(blob, size, &other), -ESTALE);
	other = job;
	other.interval_ms = 500;
	assert_int_equal(try_decode(blob, size, &other), -ESTALE);
	/* ended before the checkpoint's last tick: it holds rows a replay leaves out */
	other = job;
	other.end_ms = T0 + 50000;
	assert_int_equal(try_decode(blob, size, &other), -ESTALE);
	/* ended after it: fine */
	other.end_ms = T0 + 100000;
	assert_int_equal(try_decode(blob, size, &other), 0);
	free(blob);
}

/* The payload of a blob, and a blob of a payload (same magic and format). */
static unsigned char *payload_of(const void *blob, size_t size, size_t *len)
{
	unsigned long long n = ZSTD_getFrameContentSize((const char *)blob + 8, size - 8);
	unsigned char *p;

	assert_true(n != ZSTD_CONTENTSIZE_ERROR && n != ZSTD_CONTENTSIZE_UNKNOWN);
	p = malloc(n);
	assert_non_null(p);
	assert_int_equal(ZSTD_decompress(p, n, (const char *)blob + 8, size - 8), n);
	*len = n;
	return p;
}

static unsigned char *blob_of(const void *orig, const unsigned char *payload, size_t len,
			      size_t *size)
{
	size_t bound = ZSTD_compressBound(len);
	unsigned char *b = malloc(8 + bound);
	size_t n;

	assert_non_null(b);
	memcpy(b, orig, 8);
	n = ZSTD_compress(b + 8, bound, payload, len, 1);
	assert_false(ZSTD_isError(n));
	*size = 8 + n;
	return b;
}

static int decode_mutated(const void *blob, const unsigned char *payload, size_t len, size_t at,
			  const void *val, size_t vlen, const struct job_record *job)
{
	unsigned char *p = malloc(len), *b;
	size_t size;
	int ret;

	assert_non_null(p);
	memcpy(p, payload, len);
	memcpy(p + at, val, vlen);
	b = blob_of(blob, p, len, &size);
	ret = try_decode(b, size, job);
	free(b);
	free(p);
	return ret;
}

/* Counts and indexes that lie: refused, whatever the rest says. */
static void test_hostile_counts(void **state)
{
	struct job_record job = make_job();
	const uint64_t huge64 = 1ull << 40;
	const int32_t bad32[] = {-1, 17, 1 << 30};
	const uint32_t tracks = 0xffffffffu, has_gpus = 2;
	const size_t sum_at = HEAD_SIZE, js_at = HEAD_SIZE + sizeof(struct summary);
	const int64_t zero = 0, minus = -5, far = INT64_MIN + 1;
	const size_t big = JS_POINTS + 1, ring = JS_RING, ring_over = JS_RING + 1;
	unsigned char *payload;
	void *blob, *empty;
	size_t size, esize, len, elen;

	(void)state;
	encode_at(&job, 1200, &blob, &size);
	payload = payload_of(blob, size, &len);
	assert_int_equal(decode_mutated(blob, payload, len, 0, &job.id, 8, &job), 0);
	assert_int_not_equal(decode_mutated(blob, payload, len, HEAD_NPROCS, &huge64, 8, &job), 0);
	assert_int_not_equal(decode_mutated(blob, payload, len, HEAD_NEVENTS, &huge64, 8, &job), 0);
	for (size_t i = 0; i < sizeof(bad32) / sizeof(bad32[0]); i++) {
		assert_int_not_equal(
		    decode_mutated(blob, payload, len, HEAD_NGPUS_SUM, &bad32[i], 4, &job), 0);
		assert_int_not_equal(
		    decode_mutated(blob, payload, len, HEAD_NGPUS_SERIES, &bad32[i], 4, &job), 0);
	}
	assert_int_not_equal(decode_mutated(blob, payload, len, HEAD_TRACKS, &tracks, 4, &job), 0);
	assert_int_not_equal(decode_mutated(blob, payload, len, HEAD_HAS_GPUS, &has_gpus, 4, &job),
			     0);
	/* the summary's own fields */
	assert_int_equal(decode_mutated(blob, payload, len,
					sum_at + offsetof(struct summary, bucket_ms), &zero, 8,
					&job),
			 -EPROTO);
	assert_int_equal(decode_mutated(blob, payload, len,
					sum_at + offsetof(struct summary, interval_ms), &minus, 8,
					&job),
			 -EPROTO);
	assert_int_equal(decode_mutated(blob, payload, len,
					sum_at + offsetof(struct summary, first_ms), &far, 8, &job),
			 -EPROTO);
	/* every byte of the payload in turn set to 0xff: refused or renders */
	for (size_t at = 0; at < len; at += 1 + len / 120) {
		unsigned char ff = 0xff;

		decode_mutated(blob, payload, len, at, &ff, 1, &job);
	}
	free(payload);

	/* an empty state: its series right after the summary */
	encode_at(&job, 0, &empty, &esize);
	payload = payload_of(empty, esize, &elen);
	assert_int_equal(elen, HEAD_SIZE + sizeof(struct summary) + sizeof(struct jobseries));
	assert_int_equal(decode_mutated(empty, payload, elen, 0, &job.id, 8, &job), 0);
	assert_int_equal(decode_mutated(empty, payload, elen,
					js_at + offsetof(struct jobseries, npoints), &big,
					sizeof(big), &job),
			 -EPROTO);
	assert_int_equal(decode_mutated(empty, payload, elen,
					js_at + offsetof(struct jobseries, ring_head), &ring,
					sizeof(ring), &job),
			 -EPROTO);
	assert_int_equal(decode_mutated(empty, payload, elen,
					js_at + offsetof(struct jobseries, ring_len), &ring_over,
					sizeof(ring_over), &job),
			 -EPROTO);
	assert_int_equal(decode_mutated(empty, payload, elen,
					js_at + offsetof(struct jobseries, bucket_ms), &zero, 8,
					&job),
			 -EPROTO);
	/* trailing bytes: refused */
	{
		unsigned char *longer = calloc(1, elen + 3), *b;
		size_t bsize;

		assert_non_null(longer);
		memcpy(longer, payload, elen);
		b = blob_of(empty, longer, elen + 3, &bsize);
		assert_int_equal(try_decode(b, bsize, &job), -EPROTO);
		free(b);
		free(longer);
	}
	free(payload);
	free(empty);
	free(blob);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),	     cmocka_unit_test(test_many_procs),
	    cmocka_unit_test(test_finished_refused), cmocka_unit_test(test_truncated_and_flipped),
	    cmocka_unit_test(test_other_job),	     cmocka_unit_test(test_hostile_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
