/*
 * test_rapl.c - host energy: the RAPL zones of a fixture powercap tree
 * (names, subzones named after their parents, a zone without a readable
 * counter left out), no tree at all, a counter that wraps between two
 * reads of a tree the test rewrites, the host sampler carrying the zones,
 * and energy_samples through the tick writer and back.
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
#include <sys/stat.h>

#include "common/log.h"
#include "common/sysroot.h"
#include "sample/host.h"
#include "sample/ptree.h"
#include "sample/rapl.h"
#include "store/store.h"
#include "store/tick.h"
#include "store/jobdata.h"
#include "store/write.h"

#define ROOT FIXTURES_DIR "/sysroot_libs"

static void test_parse(void **state)
{
	uint64_t v = 7;

	(void)state;
	assert_int_equal(rapl_parse_u64("123456789\n", 10, &v), 0);
	assert_int_equal(v, 123456789);
	assert_int_equal(rapl_parse_u64("18446744073709551615\n", 21, &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(rapl_parse_u64("18446744073709551616\n", 21, &v), -EINVAL);
	assert_int_equal(rapl_parse_u64("", 0, &v), -EINVAL);
	assert_int_equal(rapl_parse_u64("12 kB\n", 6, &v), -EINVAL);
	assert_int_equal(rapl_parse_u64("-1\n", 3, &v), -EINVAL);
	assert_int_equal(rapl_parse_u64("42", 1, &v), 0); /* only len counts */
	assert_int_equal(v, 4);
}

static void test_delta(void **state)
{
	uint64_t d;

	(void)state;
	assert_true(rapl_delta_uj(100, 250, 1000, &d));
	assert_int_equal(d, 150);
	/* wrapped once: 900 -> 1000 (= 0) -> 50 */
	assert_true(rapl_delta_uj(900, 50, 1000, &d));
	assert_int_equal(d, 150);
	assert_false(rapl_delta_uj(900, 50, 0, &d));	 /* wrap point unknown */
	assert_false(rapl_delta_uj(2000, 50, 1000, &d)); /* cannot be */
}

static void test_fixture_zones(void **state)
{
	struct rapl r;
	struct rapl_reading z[RAPL_MAX_ZONES];

	(void)state;
	sysroot_set(ROOT);
	rapl_init(&r);
	/* intel-rapl (no number) is the control type; intel-rapl:2 has no counter */
	assert_int_equal(rapl_read(&r, z, RAPL_MAX_ZONES), 4);
	assert_string_equal(z[0].zone, "package-0");
	assert_int_equal(z[0].energy_uj, 123456789);
	assert_int_equal(z[0].max_uj, 262143328850ull);
	assert_string_equal(z[1].zone, "package-0/dram");
	assert_int_equal(z[1].energy_uj, 4567890);
	assert_int_equal(z[1].max_uj, 65712999613ull);
	assert_string_equal(z[2].zone, "package-0/core");
	assert_int_equal(z[2].energy_uj, 99);
	assert_int_equal(z[2].max_uj, 0); /* no max_energy_range_uj: unknown */
	assert_string_equal(z[3].zone, "psys");
	assert_true(z[3].energy_uj == 18446744073709551000ull);
	/* room for fewer */
	assert_int_equal(rapl_read(&r, z, 2), 2);
	rapl_release(&r);

	/* no powercap at all: no zones, no error */
	sysroot_set(FIXTURES_DIR "/sysroot1");
	rapl_init(&r);
	assert_int_equal(rapl_read(&r, z, RAPL_MAX_ZONES), 0);
	rapl_release(&r);
	sysroot_set(NULL);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_wrap_between_reads(void **state)
{
	char root[] = "/tmp/jobscope-test-rapl-XXXXXX", zone[200];
	struct rapl r;
	struct rapl_reading a, b;
	uint64_t d;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(zone, sizeof(zone), "mkdir -p '%s/sys/class/powercap/intel-rapl:0'", root);
	assert_int_equal(system(zone), 0);
	snprintf(zone, sizeof(zone), "%s/sys/class/powercap/intel-rapl:0", root);
	write_file(zone, "name", "package-0\n");
	write_file(zone, "max_energy_range_uj", "262143328850\n");
	write_file(zone, "energy_uj", "262143000000\n");
	sysroot_set(root);
	rapl_init(&r);
	assert_int_equal(rapl_read(&r, &a, 1), 1);
	write_file(zone, "energy_uj", "5000\n");
	assert_int_equal(rapl_read(&r, &b, 1), 1);
	assert_int_equal(b.energy_uj, 5000);
	assert_true(rapl_delta_uj(a.energy_uj, b.energy_uj, b.max_uj, &d));
	assert_int_equal(d, 262143328850ull - 262143000000ull + 5000);
	/* the counter becomes unreadable (root's): the zone is left out, no error */
	write_file(zone, "energy_uj", "garbage\n");
	assert_int_equal(rapl_read(&r, &b, 1), 0);
	rapl_release(&r);
	sysroot_set(NULL);
	fixture_rm_tree(root);
}

static void test_host_and_store(void **state)
{
	char dir[] = "/tmp/jobscope-test-rapl-XXXXXX", path[128];
	struct host_sampler hs;
	struct host_sample *h = calloc(1, sizeof(*h));
	struct store_tick_rows t;
	struct store_energy_sample *e;
	struct store *st;
	struct ptree pt;
	int64_t node;
	size_t n;

	(void)state;
	assert_non_null(h);
	sysroot_set(ROOT);
	host_sampler_init(&hs, 100);
	assert_int_equal(host_sample_read(&hs, h), 0);
	assert_true(h->valid & HOST_HAS_ENERGY);
	assert_int_equal(h->nenergy, 4);
	sysroot_set(NULL);

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/store.db", dir);
	/* JOBSCOPE_TEST_PG_URL: the same in a PostgreSQL store (a head's) */
	assert_int_equal(
	    store_open(getenv("JOBSCOPE_TEST_PG_URL") ? getenv("JOBSCOPE_TEST_PG_URL") : path,
		       STORE_CREATE, &st),
	    0);
	assert_int_equal(store_node(st, "node-rapl", 4, 1 << 30, 1, &node), 0);
	ptree_init(&pt, 1, 100, 0);
	memset(&t, 0, sizeof(t));
	t.st = st;
	t.node_id = node;
	t.pt = &pt;
	t.host = h;
	for (int tick = 1; tick <= 2; tick++) {
		t.ts_ms = 1700000000000 + 1000 * tick;
		h->energy[0].energy_uj = 1000 * (uint64_t)tick;
		assert_int_equal(store_tick_begin(st), 0);
		assert_int_equal(store_tick_put_host(&t), 0);
		assert_int_equal(store_tick_commit(st), 0);
	}
	assert_int_equal(store_get_energy_samples(st, node, 0, INT64_MAX, &e, &n), 0);
	assert_int_equal(n, 8);
	/* by zone, then time */
	assert_string_equal(e[0].zone, "package-0");
	assert_int_equal(e[0].ts_ms, 1700000001000);
	assert_int_equal(e[0].energy_uj, 1000);
	assert_int_equal(e[0].max_uj, 262143328850ull);
	assert_string_equal(e[1].zone, "package-0");
	assert_int_equal(e[1].energy_uj, 2000);
	assert_string_equal(e[2].zone, "package-0/core");
	assert_int_equal(e[2].max_uj, 0);
	assert_string_equal(e[6].zone, "psys");
	assert_true(e[6].energy_uj == 18446744073709551000ull); /* above 2^63, bit for bit */
	assert_true(e[6].max_uj == UINT64_MAX);
	free(e);
	/* a window: only the second tick */
	assert_int_equal(store_get_energy_samples(st, node, 1700000001500, INT64_MAX, &e, &n), 0);
	assert_int_equal(n, 4);
	free(e);
	assert_int_equal(store_get_energy_samples(st, node + 1, 0, INT64_MAX, &e, &n), 0);
	assert_int_equal(n, 0);
	ptree_release(&pt);
	store_close(st);
	host_sampler_release(&hs);
	free(h);
	fixture_rm_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),	   cmocka_unit_test(test_delta),
	    cmocka_unit_test(test_fixture_zones),  cmocka_unit_test(test_wrap_between_reads),
	    cmocka_unit_test(test_host_and_store),
	};

	log_set_file(stderr);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
