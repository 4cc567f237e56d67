/*
 * test_session_gswarm.c - `jobscope export --format gswarm` on a store
 * written row by row through the store API: three sessions rendered and
 * compared byte for byte with tests/fixtures/gswarm/ (which
 * tests/integration/test_session_gswarm.py reads back with Python's json
 * and gswarm's stat logic), the -E2BIG cap, and a session on an empty store.
 *
 * The store: node alpha (GPU 0 with every figure; GPU 1 whose utilization
 * and PCIe are NOT_SUPPORTED), beta (no GPU), gamma (one GPU with a name
 * that is not ASCII, no root filesystem figures, its agent gone after
 * T0 + 2 s) and old (rows only long before).  Requests posted to the head
 * at known times, some with `other` times that are not an object of
 * numbers.  TZ=UTC, so that the naive local times are known.
 *
 * UPDATE_GOLDEN=1 rewrites the fixtures instead of comparing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "report/session_export.h"
#include "store/conn.h" /* st->conn.sq: fs_samples rows, which no put function writes here */
#include "store/store.h"
#include "store/profiling.h"
#include "store/write.h"

#define T0	   1700000000000LL /* 2023-11-14T22:13:20 UTC */
#define GOLDEN_DIR FIXTURES_DIR "/gswarm"
#define GIB	   (1ull << 30)

struct fixture {
	char dir[64];
	char path[128];
	struct store *st;
};

static void host_row(struct store *st, int64_t node, int64_t ts, uint64_t total, uint64_t avail)
{
	struct host_sample h;

	memset(&h, 0, sizeof(h));
	h.valid = HOST_HAS_MEM;
	h.mem.valid = MEMINFO_TOTAL | MEMINFO_AVAILABLE;
	h.mem.total_bytes = total;
	h.mem.available_bytes = avail;
	assert_int_equal(store_put_host(st, node, ts, &h), 0);
}

static void fs_row(struct store *st, int64_t node, int64_t ts, int64_t used, int64_t total)
{
	char sql[256];

	snprintf(sql, sizeof(sql),
		 "INSERT INTO fs_samples (node_id, ts_ms, mount, used_bytes, total_bytes)"
		 " VALUES (%lld, %lld, '/', %lld, %lld)",
		 (long long)node, (long long)ts, (long long)used, (long long)total);
	assert_int_equal(sqlite3_exec(st->conn.sq, sql, NULL, NULL, NULL), SQLITE_OK);
}

static int64_t device(struct store *st, int64_t node, int index, const char *uuid, const char *name,
		      uint64_t mem_total)
{
	struct device_record d;

	memset(&d, 0, sizeof(d));
	snprintf(d.vendor, sizeof(d.vendor), "NVIDIA");
	d.info.index = index;
	snprintf(d.info.uuid, sizeof(d.info.uuid), "%s", uuid);
	snprintf(d.info.name, sizeof(d.info.name), "%s", name);
	d.info.valid = GPU_INFO_MEM_TOTAL;
	d.info.mem_total_bytes = mem_total;
	assert_int_equal(store_put_device(st, node, &d), 0);
	return d.id;
}

static void gpu_row(struct store *st, int64_t dev, int64_t ts, uint32_t valid, uint32_t util,
		    uint64_t mem_used, uint64_t rx_bps, uint64_t tx_bps)
{
	struct gpu_sample g;

	memset(&g, 0, sizeof(g));
	g.valid = valid;
	g.util_pct = util;
	g.mem_used_bytes = mem_used;
	g.pcie_rx_bps = rx_bps;
	g.pcie_tx_bps = tx_bps;
	assert_int_equal(store_put_gpu_sample(st, dev, ts, &g), 0);
}

static void request(struct store *st, int64_t ts, const char *app, double q, double p,
		    const char *other)
{
	struct request_record r;

	memset(&r, 0, sizeof(r));
	r.ts_ms = ts;
	snprintf(r.app, sizeof(r.app), "%s", app);
	r.queue_s = q;
	r.processing_s = p;
	r.other = other;
	assert_int_equal(store_request_add(st, &r), 0);
}

static void session(struct store *st, const char *name, int64_t start, int64_t end,
		    int64_t interval)
{
	struct session_record s;
	int stopped;

	memset(&s, 0, sizeof(s));
	snprintf(s.name, sizeof(s.name), "%s", name);
	s.start_ms = start;
	s.interval_ms = interval;
	assert_int_equal(store_session_start(st, &s), 0);
	assert_int_equal(store_session_stop(st, name, NULL, end, &stopped), 0);
	assert_int_equal(stopped, 1);
}

static void fill(struct store *st)
{
	const uint32_t all = GPU_UTIL | GPU_MEM_USED | GPU_PCIE;
	int64_t alpha, beta, gamma, old, a0, a1, g0;

	assert_int_equal(store_node(st, "alpha", 8, 16 * GIB, 1, &alpha), 0);
	assert_int_equal(store_node(st, "beta", 4, 8 * GIB, 1, &beta), 0);
	assert_int_equal(store_node(st, "gamma", 4, 8 * GIB, 1, &gamma), 0);
	assert_int_equal(store_node(st, "old", 4, 8 * GIB, 1, &old), 0);
	a0 = device(st, alpha, 0, "GPU-a0", "NVIDIA A100-SXM4-80GB", 80 * GIB);
	a1 = device(st, alpha, 1, "GPU-a1", "NVIDIA A100-SXM4-80GB", 80 * GIB);
	g0 = device(st, gamma, 0, "GPU-g0", "Tesla \xc3\x84\"x\" \xf0\x9f\x9a\x80", 16 * GIB);
	device(st, old, 0, "GPU-o0", "NVIDIA T4", 16 * GIB);

	assert_int_equal(store_tick_begin(st), 0);
	host_row(st, old, T0 - 3600000, 8 * GIB, 4 * GIB);
	for (int i = 0; i <= 7; i++) {
		int64_t ts = T0 + i * 1000;

		host_row(st, alpha, ts, 16 * GIB, 12 * GIB - (uint64_t)i * 100 * (1 << 20));
		host_row(st, beta, ts, 8 * GIB, 8 * GIB - (uint64_t)(i + 1) * 123456789);
		fs_row(st, alpha, ts, 40000000000LL + i * 1000000000LL, 100000000000LL);
		if (i % 2 == 0) /* beta's filesystem every other tick */
			fs_row(st, beta, ts, 333333333333LL, 1000000000000LL);
		/* alpha 0: everything; PCIe in bytes/s of whole KiB and not */
		gpu_row(st, a0, ts, all, 90 - (uint32_t)i * 10, (40 + (uint64_t)i) * GIB / 2,
			1234567 + (uint64_t)i * 1024, 333333);
		/* alpha 1: utilization and PCIe NOT_SUPPORTED */
		gpu_row(st, a1, ts, GPU_MEM_USED, 0, 8 * GIB, 0, 0);
		if (i <= 2) { /* gamma's agent stops after T0 + 2 s */
			host_row(st, gamma, ts, 8 * GIB, 2 * GIB);
			gpu_row(st, g0, ts + 100, all, 50, 4 * GIB, 1024, 2048);
		}
	}
	assert_int_equal(store_tick_commit(st), 0);

	request(st, T0 + 100, "early", 0.5, 0.25, NULL);
	request(st, T0 + 500, "serve", 0.1, 1.25, "{\"tokenize\": 0.01, \"decode\": 2}");
	request(st, T0 + 600, "batch-\xc3\xbc", 1e-05, 12345678901234567890.0, "[1, 2]");
	request(st, T0 + 700, "serve", 0, 1.0 / 3.0, "{\"a\": 1, \"b\": \"x\"}");
	request(st, T0 + 800, "serve", 1e16, 123456.789, "{\"x\": 1, \"y\": 2.5, \"x\": 3}");
	request(st, T0 + 900, "batch-\xc3\xbc", 1e17, 0.0001, "not json");
	request(st, T0 + 9000, "late", 1, 1, NULL);

	session(st, "busy", T0 + 250, T0 + 5250, 1000);
	session(st, "whole", T0, T0 + 1999, 0);
	session(st, "empty", T0 + 8000, T0 + 8500, 0);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/jobscope-test-gswarm-XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->path, sizeof(fx->path), "%s/head.db", fx->dir);
	if (store_open(fx->path, STORE_CREATE, &fx->st))
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	store_close(fx->st);
	fixture_rm_tree(fx->dir);
	free(fx);
	return 0;
}

/* The export of session name, compared with (or written to) GOLDEN_DIR/name.json */
static void check_golden(struct store *st, const char *name)
{
	struct session_record s;
	struct strbuf out;
	char path[512];
	size_t len;
	char *want;

	assert_int_equal(store_session_get(st, name, &s), 0);
	strbuf_init(&out, STRBUF_DEFAULT_MAX);
	assert_int_equal(session_export_gswarm(st, &s, &out), 0);
	snprintf(path, sizeof(path), "%s/%s.json", GOLDEN_DIR, name);
	if (getenv("UPDATE_GOLDEN")) {
		FILE *f = fopen(path, "wb");

		assert_non_null(f);
		assert_int_equal(fwrite(out.buf, 1, out.len, f), out.len);
		assert_int_equal(fclose(f), 0);
	}
	want = fixture_load(path, &len);
	if (len != out.len || memcmp(want, out.buf, len) != 0) {
		size_t i = 0;

		while (i < len && i < out.len && want[i] == out.buf[i])
			i++;
		fail_msg("%s: %zu bytes, want %zu; first difference at byte %zu: ...%.60s...", name,
			 out.len, len, i, out.buf + (i > 20 ? i - 20 : 0));
	}
	free(want);
	strbuf_release(&out);
}

static void test_golden(void **state)
{
	struct fixture *fx = *state;

	fill(fx->st);
	check_golden(fx->st, "busy");
	check_golden(fx->st, "whole");
	check_golden(fx->st, "empty");
}

/* Past the buffer's cap: -E2BIG, not a file cut short. */
static void test_cap(void **state)
{
	struct fixture *fx = *state;
	struct session_record s;
	struct strbuf out;

	fill(fx->st);
	assert_int_equal(store_session_get(fx->st, "busy", &s), 0);
	strbuf_init(&out, 1000);
	assert_int_equal(session_export_gswarm(fx->st, &s, &out), -E2BIG);
	strbuf_release(&out);
}

/* A session with no node and no request: the empty file gswarm's HEAD head writes. */
static void test_empty_store(void **state)
{
	struct fixture *fx = *state;
	struct session_record s;
	struct strbuf out;

	session(fx->st, "nothing", T0, T0 + 2500, 0);
	assert_int_equal(store_session_get(fx->st, "nothing", &s), 0);
	strbuf_init(&out, STRBUF_DEFAULT_MAX);
	assert_int_equal(session_export_gswarm(fx->st, &s, &out), 0);
	assert_string_equal(out.buf, "{\n"
				     "  \"frames\": [\n"
				     "    {\n"
				     "      \"frame_id\": 1,\n"
				     "      \"time\": \"2023-11-14T22:13:21\",\n"
				     "      \"gpu_id\": [],\n"
				     "      \"gpu_util\": [],\n"
				     "      \"gpu_memory\": [],\n"
				     "      \"dram_util\": [],\n"
				     "      \"disk_util\": [],\n"
				     "      \"dram_bandwidth\": [],\n"
				     "      \"dram_bandwidth_rx\": [],\n"
				     "      \"dram_bandwidth_tx\": [],\n"
				     "      \"gpu_bandwidth\": []\n"
				     "    },\n"
				     "    {\n"
				     "      \"frame_id\": 2,\n"
				     "      \"time\": \"2023-11-14T22:13:22\",\n"
				     "      \"gpu_id\": [],\n"
				     "      \"gpu_util\": [],\n"
				     "      \"gpu_memory\": [],\n"
				     "      \"dram_util\": [],\n"
				     "      \"disk_util\": [],\n"
				     "      \"dram_bandwidth\": [],\n"
				     "      \"dram_bandwidth_rx\": [],\n"
				     "      \"dram_bandwidth_tx\": [],\n"
				     "      \"gpu_bandwidth\": []\n"
				     "    }\n"
				     "  ],\n"
				     "  \"summary_by_device\": {},\n"
				     "  \"summary_by_client\": {},\n"
				     "  \"request_time_info\": {}\n"
				     "}");
	strbuf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_golden, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_empty_store, setup, teardown),
	};

	setenv("TZ", "UTC", 1);
	tzset();
	log_set_file(stderr);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
