/*
 * test_host.c - machine-wide parsers on captured and hand-made fixtures,
 * and host_sample_read() on the sysroot1 and sysroot2 trees: exact values,
 * whole-disk filtering and its cache, and valid bits for missing files.
 *
 * Fixture text is loaded into an exact-size buffer with no terminating NUL,
 * so a parser that reads past len trips ASan in the sanitized build.
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
#include <sys/statvfs.h>

#include <cmocka.h>

#include "fixture.h"

#include "common/sysroot.h"
#include "common/strbuf.h"
#include "sample/host.h"

#define HOST_FIXTURE(name) FIXTURES_DIR "/host/" name
#define SYSROOT1	   FIXTURES_DIR "/sysroot1"
#define SYSROOT2	   FIXTURES_DIR "/sysroot2"

/* host_cpu_stat and host_sample are too big to want on the stack. */
static struct host_cpu_stat cpu;

static int parse_stat_file(const char *path, long hz)
{
	size_t len;
	char *text = fixture_load(path, &len);
	int ret = host_parse_stat(text, len, hz, &cpu);

	free(text);
	return ret;
}

static int parse_meminfo_file(const char *path, struct host_meminfo *mi)
{
	size_t len;
	char *text = fixture_load(path, &len);
	int ret = host_parse_meminfo(text, len, mi);

	free(text);
	return ret;
}

static int parse_diskstats_file(const char *path, struct disk_stat *d, int max, int *n)
{
	size_t len;
	char *text = fixture_load(path, &len);
	int ret = host_parse_diskstats(text, len, d, max, n);

	free(text);
	return ret;
}

static int parse_netdev_file(const char *path, struct net_stat *ns, int max, int *n)
{
	size_t len;
	char *text = fixture_load(path, &len);
	int ret = host_parse_netdev(text, len, ns, max, n);

	free(text);
	return ret;
}

static int parse_loadavg_file(const char *path, struct host_loadavg *la)
{
	size_t len;
	char *text = fixture_load(path, &len);
	int ret = host_parse_loadavg(text, len, la);

	free(text);
	return ret;
}

static int parse_pressure_file(const char *path, struct host_psi *psi)
{
	size_t len;
	char *text = fixture_load(path, &len);
	int ret = host_parse_pressure(text, len, psi);

	free(text);
	return ret;
}

static void assert_cpu_times(const struct cpu_times *t, uint64_t user, uint64_t nice,
			     uint64_t system, uint64_t idle, uint64_t iowait, uint64_t irq,
			     uint64_t softirq, uint64_t steal)
{
	assert_int_equal(t->user_ms, user);
	assert_int_equal(t->nice_ms, nice);
	assert_int_equal(t->system_ms, system);
	assert_int_equal(t->idle_ms, idle);
	assert_int_equal(t->iowait_ms, iowait);
	assert_int_equal(t->irq_ms, irq);
	assert_int_equal(t->softirq_ms, softirq);
	assert_int_equal(t->steal_ms, steal);
}

static void test_stat_captured(void **state)
{
	(void)state;
	assert_int_equal(parse_stat_file(HOST_FIXTURE("stat"), 100), 0);
	assert_cpu_times(&cpu.total, 38370, 0, 27980, 787840, 2430, 0, 1150, 0);
	assert_int_equal(cpu.ncpus, 2);
	assert_int_equal(cpu.cpu_id[0], 0);
	assert_int_equal(cpu.cpu_id[1], 1);
	assert_cpu_times(&cpu.cpu[0], 19200, 0, 11840, 397060, 70, 0, 570, 0);
	assert_cpu_times(&cpu.cpu[1], 19160, 0, 16140, 390780, 2360, 0, 570, 0);
	assert_int_equal(cpu.btime_s, 1795339649);
	assert_int_equal(cpu.ctxt, 237712);
	assert_int_equal(cpu.procs_running, 1);
	assert_int_equal(cpu.procs_blocked, 0);
}

/* Old kernels print fewer columns: the missing ones are 0. */
static void test_stat_old_kernels(void **state)
{
	(void)state;
	assert_int_equal(parse_stat_file(HOST_FIXTURE("stat_old"), 100), 0);
	assert_cpu_times(&cpu.total, 50000, 100, 20000, 900000, 3000, 200, 400, 0);
	assert_int_equal(cpu.ncpus, 2);
	assert_cpu_times(&cpu.cpu[1], 25000, 50, 10000, 450000, 1500, 100, 200, 0);
	assert_int_equal(cpu.btime_s, 1100000000);
	assert_int_equal(cpu.ctxt, 5555555);
	assert_int_equal(cpu.procs_running, 2);

	/* 2.4: four columns, and no ctxt or procs_* lines; hz 250 */
	assert_int_equal(parse_stat_file(HOST_FIXTURE("stat_24"), 250), 0);
	assert_cpu_times(&cpu.total, 400, 0, 200, 4000, 0, 0, 0, 0);
	assert_int_equal(cpu.ncpus, 1);
	assert_int_equal(cpu.btime_s, 900000000);
	assert_int_equal(cpu.ctxt, 0);
	assert_int_equal(cpu.procs_running, 0);
}

static void test_stat_rejects(void **state)
{
	static const char *const bad[] = {
	    "cpu  1 2 3\n",
	    "cpu  1 2 3 x\n",
	    "cpu  1 2 3 4\ncpuX 1 2 3 4\n",
	    "cpu  1 2 3 4\ncpu70000 1 2 3 4\n",
	    "cpu  1 2 3 4\nctxt -1\n",
	    "cpu  1 2 3 4\nbtime 99999999999999999999\n",
	    "cpu  1 2 3 4\nbtime 18446744073709551615\n",
	    "cpu  1 2 3 4x\n",
	    "intr 1 2 3\n",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(host_parse_stat(bad[i], strlen(bad[i]), 100, &cpu), -EINVAL);
	assert_int_equal(parse_stat_file(HOST_FIXTURE("stat_truncated"), 100), -EINVAL);
	assert_int_equal(parse_stat_file(HOST_FIXTURE("stat_empty"), 100), -EINVAL);
	assert_int_equal(parse_stat_file(HOST_FIXTURE("stat_nocpu"), 100), -EINVAL);
}

/* A very long intr line, and more cpuN lines than HOST_MAX_CPUS. */
static void test_stat_big(void **state)
{
	struct strbuf sb;
	int i;

	(void)state;
	strbuf_init(&sb, 0);
	assert_int_equal(strbuf_addstr(&sb, "cpu  10 0 10 10 0 0 0 0 0 0\n"), 0);
	for (i = 0; i < HOST_MAX_CPUS + 6; i++)
		assert_int_equal(strbuf_addf(&sb, "cpu%d %d 0 1 2 0 0 0 0 0 0\n", i, i), 0);
	assert_int_equal(strbuf_addstr(&sb, "intr 999"), 0);
	for (i = 0; i < 100000; i++)
		assert_int_equal(strbuf_addstr(&sb, " 12"), 0);
	assert_int_equal(strbuf_addstr(&sb, "\nctxt 77\nbtime 5\n"), 0);

	assert_int_equal(host_parse_stat(sb.buf, sb.len, 100, &cpu), 0);
	assert_int_equal(cpu.ncpus, HOST_MAX_CPUS);
	assert_int_equal(cpu.cpu_id[HOST_MAX_CPUS - 1], HOST_MAX_CPUS - 1);
	assert_int_equal(cpu.cpu[HOST_MAX_CPUS - 1].user_ms, (HOST_MAX_CPUS - 1) * 10);
	assert_int_equal(cpu.ctxt, 77);
	assert_int_equal(cpu.btime_s, 5);
	strbuf_release(&sb);
}

static void test_meminfo(void **state)
{
	struct host_meminfo mi;

	(void)state;
	assert_int_equal(parse_meminfo_file(HOST_FIXTURE("meminfo"), &mi), 0);
	assert_int_equal(mi.valid, 0xff);
	assert_int_equal(mi.total_bytes, 24683620ull * 1024);
	assert_int_equal(mi.free_bytes, 24252200ull * 1024);
	assert_int_equal(mi.available_bytes, 24363268ull * 1024);
	assert_int_equal(mi.buffers_bytes, 2816ull * 1024);
	assert_int_equal(mi.cached_bytes, 298968ull * 1024);
	assert_int_equal(mi.swap_total_bytes, 0);
	assert_int_equal(mi.swap_free_bytes, 0);
	assert_int_equal(mi.shmem_bytes, 8884ull * 1024);

	/* before 3.14 there is no MemAvailable: missing, not 0 */
	assert_int_equal(parse_meminfo_file(HOST_FIXTURE("meminfo_old"), &mi), 0);
	assert_int_equal(mi.valid, 0xff & ~MEMINFO_AVAILABLE);
	assert_int_equal(mi.total_bytes, 8061404ull * 1024);
	assert_int_equal(mi.free_bytes, 3123456ull * 1024);
	assert_int_equal(mi.buffers_bytes, 204800ull * 1024);
	assert_int_equal(mi.cached_bytes, 2097152ull * 1024);
	assert_int_equal(mi.swap_total_bytes, 4194300ull * 1024);
	assert_int_equal(mi.swap_free_bytes, 4194000ull * 1024);
	assert_int_equal(mi.shmem_bytes, 65536ull * 1024);

	/* cut inside MemFree's number: only that field is lost */
	assert_int_equal(parse_meminfo_file(HOST_FIXTURE("meminfo_truncated"), &mi), 0);
	assert_int_equal(mi.valid, MEMINFO_TOTAL);
	assert_int_equal(mi.total_bytes, 8061404ull * 1024);

	assert_int_equal(parse_meminfo_file(HOST_FIXTURE("meminfo_empty"), &mi), -EINVAL);
	assert_int_equal(host_parse_meminfo("MemTotalx: 5 kB\n", 16, &mi), -EINVAL);
	assert_int_equal(host_parse_meminfo("MemTotal: 5 MB\n", 15, &mi), -EINVAL);
	assert_int_equal(host_parse_meminfo("MemTotal: 18446744073709551615 kB", 33, &mi), -EINVAL);
}

static void assert_disk(const struct disk_stat *d, const char *name, uint64_t reads,
			uint64_t read_sectors, uint64_t writes, uint64_t write_sectors,
			uint64_t io_ms)
{
	assert_string_equal(d->name, name);
	assert_int_equal(d->reads, reads);
	assert_int_equal(d->read_bytes, read_sectors * 512);
	assert_int_equal(d->writes, writes);
	assert_int_equal(d->write_bytes, write_sectors * 512);
	assert_int_equal(d->io_ms, io_ms);
}

static void test_diskstats(void **state)
{
	struct disk_stat d[16];
	int n;

	(void)state;
	assert_int_equal(parse_diskstats_file(HOST_FIXTURE("diskstats"), d, 16, &n), 0);
	assert_int_equal(n, 10);
	assert_disk(&d[0], "loop0", 0, 0, 0, 0, 0);
	assert_disk(&d[8], "vda", 30186, 2589058, 3027, 396048, 4096);
	assert_disk(&d[9], "zram0", 0, 0, 0, 0, 0);

	/* 14 fields (before 4.18), 18 (4.18) and 20 (5.5) */
	assert_int_equal(parse_diskstats_file(HOST_FIXTURE("diskstats_14"), d, 16, &n), 0);
	assert_int_equal(n, 2);
	assert_disk(&d[0], "sda", 1000, 20000, 500, 8000, 600);
	assert_disk(&d[1], "sda1", 900, 18000, 500, 8000, 580);
	assert_int_equal(parse_diskstats_file(HOST_FIXTURE("diskstats_18"), d, 16, &n), 0);
	assert_int_equal(n, 2);
	assert_disk(&d[0], "nvme0n1", 4000, 64000, 2000, 32000, 1500);
	assert_int_equal(parse_diskstats_file(HOST_FIXTURE("diskstats_20"), d, 16, &n), 0);
	assert_int_equal(n, 2);
	assert_disk(&d[0], "vda", 28006, 2095898, 2947, 394416, 3780);

	assert_int_equal(parse_diskstats_file(HOST_FIXTURE("diskstats_mixed"), d, 16, &n), 0);
	assert_int_equal(n, 6);
	assert_disk(&d[2], "nvme0n1", 4000, 64000, 2000, 32000, 1500);
	assert_disk(&d[5], "vda1", 27000, 2090000, 2947, 394416, 3760);
	/* more lines than max: the first max are kept */
	assert_int_equal(parse_diskstats_file(HOST_FIXTURE("diskstats_mixed"), d, 3, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(d[2].name, "nvme0n1");

	assert_int_equal(parse_diskstats_file(HOST_FIXTURE("diskstats_empty"), d, 16, &n), 0);
	assert_int_equal(n, 0);
}

static void test_diskstats_rejects(void **state)
{
	static const char *const bad[] = {
	    "8 0 sda 1 2 3 4 5 6 7 8 9 10\n",
	    "8 0 sda 1 2 3 4 5 6 7 8 9 10 x\n",
	    "8 0 0123456789012345678901234567890123 1 2 3 4 5 6 7 8 9 10 11\n",
	    "8 0 sda 1 2 36028797018963968 4 5 6 7 8 9 10 11\n",
	    "8 x sda 1 2 3 4 5 6 7 8 9 10 11\n",
	    "8 0\n",
	};
	struct disk_stat d[4];
	size_t i;
	int n;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = 99;
		assert_int_equal(host_parse_diskstats(bad[i], strlen(bad[i]), d, 4, &n), -EINVAL);
		assert_int_equal(n, 0);
	}
	assert_int_equal(parse_diskstats_file(HOST_FIXTURE("diskstats_truncated"), d, 4, &n),
			 -EINVAL);
	assert_int_equal(parse_diskstats_file(HOST_FIXTURE("diskstats_short"), d, 4, &n), -EINVAL);
}

static void assert_net(const struct net_stat *ns, const char *name, uint64_t rx_bytes,
		       uint64_t rx_packets, uint64_t tx_bytes, uint64_t tx_packets)
{
	assert_string_equal(ns->name, name);
	assert_int_equal(ns->rx_bytes, rx_bytes);
	assert_int_equal(ns->rx_packets, rx_packets);
	assert_int_equal(ns->tx_bytes, tx_bytes);
	assert_int_equal(ns->tx_packets, tx_packets);
}

static void test_netdev(void **state)
{
	struct net_stat ns[8];
	int n;

	(void)state;
	assert_int_equal(parse_netdev_file(HOST_FIXTURE("netdev"), ns, 8, &n), 0);
	assert_int_equal(n, 4);
	assert_net(&ns[0], "lo", 3267, 29, 3267, 29);
	assert_net(&ns[1], "ifb0", 0, 0, 0, 0);
	assert_net(&ns[3], "eth0", 19392386, 777, 51533, 694);

	/* "eth0:1234567890" has no space after the colon */
	assert_int_equal(parse_netdev_file(HOST_FIXTURE("netdev_odd"), ns, 8, &n), 0);
	assert_int_equal(n, 4);
	assert_net(&ns[0], "lo", 123456, 789, 123456, 789);
	assert_net(&ns[1], "eth0", 1234567890, 9876543, 987654321, 654321);
	assert_net(&ns[2], "veth1234abcd", 500, 5, 700, 7);
	assert_net(&ns[3], "docker0", 0, 0, 0, 0);
	assert_int_equal(parse_netdev_file(HOST_FIXTURE("netdev_odd"), ns, 2, &n), 0);
	assert_int_equal(n, 2);

	assert_int_equal(parse_netdev_file(HOST_FIXTURE("netdev_header_only"), ns, 8, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(parse_netdev_file(HOST_FIXTURE("netdev_truncated"), ns, 8, &n), -EINVAL);
	assert_int_equal(parse_netdev_file(HOST_FIXTURE("netdev_empty"), ns, 8, &n), -EINVAL);
	assert_int_equal(host_parse_netdev("a|\nb|\n eth0 1 2 3 4 5 6 7 8 9 10\n", 33, ns, 8, &n),
			 -EINVAL);
	assert_int_equal(host_parse_netdev("a|\nb|\n: 1 2 3 4 5 6 7 8 9 10\n", 29, ns, 8, &n),
			 -EINVAL);
	assert_int_equal(host_parse_netdev("a\nb\n", 4, ns, 8, &n), -EINVAL);
}

static void test_loadavg(void **state)
{
	struct host_loadavg la;

	(void)state;
	assert_int_equal(parse_loadavg_file(HOST_FIXTURE("loadavg"), &la), 0);
	assert_int_equal(la.load1_milli, 260);
	assert_int_equal(la.load5_milli, 100);
	assert_int_equal(la.load15_milli, 30);
	assert_int_equal(la.running, 1);
	assert_int_equal(la.total, 85);

	assert_int_equal(parse_loadavg_file(HOST_FIXTURE("loadavg_nonl"), &la), 0);
	assert_int_equal(la.load1_milli, 12340);
	assert_int_equal(la.load5_milli, 5600);
	assert_int_equal(la.load15_milli, 70);
	assert_int_equal(la.running, 10);
	assert_int_equal(la.total, 1234);

	/* extra decimals are cut, a whole number is fine */
	assert_int_equal(host_parse_loadavg("1.23456 7 0.5 1/2", 17, &la), 0);
	assert_int_equal(la.load1_milli, 1234);
	assert_int_equal(la.load5_milli, 7000);
	assert_int_equal(la.load15_milli, 500);

	assert_int_equal(parse_loadavg_file(HOST_FIXTURE("loadavg_short"), &la), -EINVAL);
	assert_int_equal(host_parse_loadavg("", 0, &la), -EINVAL);
	assert_int_equal(host_parse_loadavg("1. 2 3 1/2", 10, &la), -EINVAL);
	assert_int_equal(host_parse_loadavg("1 2 3 1/", 8, &la), -EINVAL);
	assert_int_equal(host_parse_loadavg("1 2 3 1 2", 9, &la), -EINVAL);
	assert_int_equal(host_parse_loadavg("5000000 2 3 1/2", 15, &la), -EINVAL);
	/* len stops inside "1/2": the '/' is never seen */
	assert_int_equal(host_parse_loadavg("1 2 3 1/2", 7, &la), -EINVAL);
}

static void test_pressure(void **state)
{
	struct host_psi psi;

	(void)state;
	assert_int_equal(parse_pressure_file(HOST_FIXTURE("pressure_cpu"), &psi), 0);
	assert_true(psi.some_valid);
	assert_true(psi.full_valid);
	assert_int_equal(psi.some_total_us, 7974780);
	assert_int_equal(psi.full_total_us, 0);

	assert_int_equal(parse_pressure_file(HOST_FIXTURE("pressure_io"), &psi), 0);
	assert_int_equal(psi.some_total_us, 2247434);
	assert_int_equal(psi.full_total_us, 2035889);
	assert_int_equal(parse_pressure_file(HOST_FIXTURE("pressure_memory"), &psi), 0);
	assert_true(psi.some_valid && psi.full_valid);
	assert_int_equal(psi.some_total_us, 0);

	/* cpu has no "full" line before 5.13 */
	assert_int_equal(parse_pressure_file(HOST_FIXTURE("pressure_cpu_nofull"), &psi), 0);
	assert_true(psi.some_valid);
	assert_false(psi.full_valid);
	assert_int_equal(psi.some_total_us, 987654321);

	assert_int_equal(parse_pressure_file(HOST_FIXTURE("pressure_nototal"), &psi), -EINVAL);
	assert_int_equal(host_parse_pressure("", 0, &psi), -EINVAL);
	assert_int_equal(host_parse_pressure("some total=", 11, &psi), -EINVAL);
	assert_int_equal(host_parse_pressure("some total=12x", 14, &psi), -EINVAL);
	assert_int_equal(host_parse_pressure("other total=5\n", 14, &psi), -EINVAL);
	assert_int_equal(host_parse_pressure("some total=5\nother\n", 19, &psi), 0);
	assert_int_equal(psi.some_total_us, 5);
}

struct sampler_fixture {
	struct host_sampler hs;
	struct host_sample sample;
};

static int sampler_setup(void **state)
{
	struct sampler_fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	host_sampler_init(&f->hs, 100);
	sysroot_set(SYSROOT1);
	*state = f;
	return 0;
}

static int sampler_teardown(void **state)
{
	struct sampler_fixture *f = *state;

	host_sampler_release(&f->hs);
	free(f);
	sysroot_set("");
	return 0;
}

static void assert_sysroot1_sample(const struct host_sample *s)
{
	assert_int_equal(s->valid, HOST_HAS_CPU | HOST_HAS_MEM | HOST_HAS_DISK | HOST_HAS_NET |
				       HOST_HAS_LOAD | HOST_HAS_PSI_CPU | HOST_HAS_PSI_MEM |
				       HOST_HAS_PSI_IO | HOST_HAS_ROOT_FS);
	assert_cpu_times(&s->cpu.total, 10000, 200, 3000, 400000, 500, 60, 700, 80);
	assert_int_equal(s->cpu.ncpus, 3);
	assert_int_equal(s->cpu.cpu_id[0], 0);
	assert_int_equal(s->cpu.cpu_id[1], 1);
	assert_int_equal(s->cpu.cpu_id[2], 3);
	assert_cpu_times(&s->cpu.cpu[2], 3000, 50, 1000, 100000, 100, 10, 150, 20);
	assert_int_equal(s->cpu.btime_s, 1700000000);
	assert_int_equal(s->cpu.ctxt, 987654);
	assert_int_equal(s->cpu.procs_running, 3);
	assert_int_equal(s->cpu.procs_blocked, 1);
	assert_int_equal(host_online_cpus(s), 3);

	assert_int_equal(s->mem.valid, 0xff);
	assert_int_equal(s->mem.total_bytes, 16000000ull * 1024);
	assert_int_equal(s->mem.free_bytes, 4000000ull * 1024);
	assert_int_equal(s->mem.available_bytes, 10000000ull * 1024);
	assert_int_equal(s->mem.buffers_bytes, 100000ull * 1024);
	assert_int_equal(s->mem.cached_bytes, 5000000ull * 1024);
	assert_int_equal(s->mem.swap_total_bytes, 2000000ull * 1024);
	assert_int_equal(s->mem.swap_free_bytes, 1500000ull * 1024);
	assert_int_equal(s->mem.shmem_bytes, 200000ull * 1024);

	assert_int_equal(s->load.load1_milli, 520);
	assert_int_equal(s->load.load5_milli, 580);
	assert_int_equal(s->load.load15_milli, 590);
	assert_int_equal(s->load.running, 2);
	assert_int_equal(s->load.total, 345);

	assert_true(s->psi_cpu.some_valid);
	assert_false(s->psi_cpu.full_valid);
	assert_int_equal(s->psi_cpu.some_total_us, 1234567);
	assert_int_equal(s->psi_mem.some_total_us, 2222);
	assert_int_equal(s->psi_mem.full_total_us, 1111);
	assert_int_equal(s->psi_io.some_total_us, 4444);
	assert_int_equal(s->psi_io.full_total_us, 3333);

	/* loop0, partitions, dm-0 and zram0 have no /sys/block/NAME/device */
	assert_int_equal(s->ndisks, 2);
	assert_disk(&s->disks[0], "sda", 1000, 20000, 500, 8000, 600);
	assert_disk(&s->disks[1], "vda", 28006, 2095898, 2947, 394416, 3780);
	assert_int_equal(s->disk_reads, 1000 + 28006);
	assert_int_equal(s->disk_writes, 500 + 2947);
	assert_int_equal(s->disk_read_bytes, (20000ull + 2095898) * 512);
	assert_int_equal(s->disk_write_bytes, (8000ull + 394416) * 512);

	/* every interface but lo */
	assert_int_equal(s->nnets, 3);
	assert_net(&s->nets[0], "eth0", 1234567890, 9876543, 987654321, 654321);
	assert_net(&s->nets[1], "veth1234abcd", 500, 5, 700, 7);
	assert_net(&s->nets[2], "docker0", 0, 0, 0, 0);
	assert_int_equal(s->net_rx_bytes, 1234567890ull + 500);
	assert_int_equal(s->net_tx_bytes, 987654321ull + 700);
	assert_int_equal(s->net_rx_packets, 9876543 + 5);
	assert_int_equal(s->net_tx_packets, 654321 + 7);
}

static bool known_whole(const struct host_sampler *hs, const char *name)
{
	int i;

	for (i = 0; i < hs->nknown; i++) {
		if (strcmp(hs->known_name[i], name) == 0)
			return hs->known_whole[i];
	}
	fail_msg("disk '%s' not in the cache", name);
	return false;
}

/*
 * psutil.disk_usage: used = (f_blocks - f_bfree) * f_frsize, percent =
 * used / (used + f_bavail * f_frsize) * 100.  Numbers of a 100 GiB root
 * with 5 % reserved for root: 26,214,400 blocks of 4 KiB, 15,000,000 free,
 * 13,689,280 free to users.
 */
static void test_fs_from_statvfs(void **state)
{
	struct host_fs fs;

	(void)state;
	assert_int_equal(host_fs_from_statvfs(26214400, 15000000, 13689280, 4096, &fs), 0);
	assert_int_equal(fs.used_bytes, 45934182400ull);		   /* 11,214,400 blocks */
	assert_int_equal(fs.total_bytes, 45934182400ull + 56071290880ull); /* + 13,689,280 */
	/* psutil's percent, 45.03 %, not used / f_blocks (42.78 %) */
	assert_true(fabs(100.0 * (double)fs.used_bytes / (double)fs.total_bytes - 45.0317) < 1e-3);

	/* a full disk (users have nothing left), an empty one */
	assert_int_equal(host_fs_from_statvfs(1000, 40, 0, 512, &fs), 0);
	assert_int_equal(fs.used_bytes, 960 * 512);
	assert_int_equal(fs.total_bytes, 960 * 512);
	assert_int_equal(host_fs_from_statvfs(1000, 1000, 950, 1024, &fs), 0);
	assert_int_equal(fs.used_bytes, 0);
	assert_int_equal(fs.total_bytes, 950 * 1024);

	/* counts that cannot be: nothing is made up */
	assert_int_equal(host_fs_from_statvfs(1000, 1001, 10, 4096, &fs), -EINVAL);
	assert_int_equal(host_fs_from_statvfs(1000, 10, 10, 0, &fs), -EINVAL);
	assert_int_equal(host_fs_from_statvfs(0, 0, 0, 4096, &fs), -EINVAL);
	assert_int_equal(host_fs_from_statvfs(1000, 1000, 0, 4096, &fs), -EINVAL);
	assert_int_equal(host_fs_from_statvfs(UINT64_MAX, 0, 0, 4096, &fs), -EOVERFLOW);
	assert_int_equal(host_fs_from_statvfs(1000, 10, UINT64_MAX / 2, 4, &fs), -EOVERFLOW);
	assert_int_equal(host_fs_from_statvfs(UINT64_MAX / 2, 0, UINT64_MAX / 2 + 2, 1, &fs),
			 -EOVERFLOW);
	assert_int_equal(fs.used_bytes, 0);
	assert_int_equal(fs.total_bytes, 0);
}

/* The sampler's root file system is the sysroot's: statvfs of that directory. */
static void assert_root_fs(const struct host_sample *s, const char *root)
{
	struct statvfs before, after;
	struct host_fs lo, hi;

	/* the file system may change between the reads: the sample lies between them */
	assert_int_equal(statvfs(root, &before), 0);
	assert_true(s->valid & HOST_HAS_ROOT_FS);
	assert_int_equal(statvfs(root, &after), 0);
	assert_int_equal(host_fs_from_statvfs(before.f_blocks, before.f_bfree, before.f_bavail,
					      before.f_frsize, &lo),
			 0);
	assert_int_equal(host_fs_from_statvfs(after.f_blocks, after.f_bfree, after.f_bavail,
					      after.f_frsize, &hi),
			 0);
	assert_true(s->root_fs.total_bytes > 0);
	assert_true(s->root_fs.used_bytes <= s->root_fs.total_bytes);
	assert_true(llabs((long long)(s->root_fs.used_bytes - lo.used_bytes)) <=
		    llabs((long long)(hi.used_bytes - lo.used_bytes)) + (1 << 20));
}

static void test_sample_sysroot1(void **state)
{
	struct sampler_fixture *f = *state;

	assert_int_equal(host_sample_read(&f->hs, &f->sample), 0);
	assert_sysroot1_sample(&f->sample);
	assert_root_fs(&f->sample, SYSROOT1);
	assert_int_equal(f->hs.nknown, 7);
	assert_true(known_whole(&f->hs, "sda"));
	assert_true(known_whole(&f->hs, "vda"));
	assert_false(known_whole(&f->hs, "sda1"));
	assert_false(known_whole(&f->hs, "vda1"));
	assert_false(known_whole(&f->hs, "loop0"));
	assert_false(known_whole(&f->hs, "dm-0"));
	assert_false(known_whole(&f->hs, "zram0"));

	/* the next tick reads the same and learns no new names */
	memset(&f->sample, 0x5a, sizeof(f->sample));
	assert_int_equal(host_sample_read(&f->hs, &f->sample), 0);
	assert_sysroot1_sample(&f->sample);
	assert_int_equal(f->hs.nknown, 7);
}

/*
 * sysroot2 has no net/dev and no pressure, a loadavg that does not parse,
 * an old meminfo, and disks sda (no device link there) and sdb.
 */
static void test_sample_missing_files(void **state)
{
	struct sampler_fixture *f = *state;
	struct host_sample *s = &f->sample;

	sysroot_set(SYSROOT2);
	memset(s, 0x5a, sizeof(*s));
	assert_int_equal(host_sample_read(&f->hs, s), 0);
	assert_int_equal(s->valid, HOST_HAS_CPU | HOST_HAS_MEM | HOST_HAS_DISK | HOST_HAS_ROOT_FS);
	assert_int_equal(s->cpu.ncpus, 2);
	assert_int_equal(s->cpu.total.user_ms, 50000);
	assert_int_equal(s->mem.valid, 0xff & ~MEMINFO_AVAILABLE);
	assert_int_equal(s->ndisks, 1);
	assert_disk(&s->disks[0], "sdb", 30, 240, 40, 320, 5);
	assert_int_equal(s->disk_read_bytes, 240 * 512);
	/* what is missing is cleared, not left over */
	assert_int_equal(s->nnets, 0);
	assert_int_equal(s->net_rx_bytes, 0);
	assert_int_equal(s->load.load1_milli, 0);
	assert_false(s->psi_cpu.some_valid);
	assert_false(s->psi_io.full_valid);
	assert_int_equal(s->psi_mem.some_total_us, 0);
	assert_int_equal(host_online_cpus(s), 2);
}

/* Whole-disk decisions are made once per name: sda stays a disk. */
static void test_sample_disk_cache(void **state)
{
	struct sampler_fixture *f = *state;
	struct host_sample *s = &f->sample;

	assert_int_equal(host_sample_read(&f->hs, s), 0);
	assert_int_equal(f->hs.nknown, 7);
	sysroot_set(SYSROOT2);
	assert_int_equal(host_sample_read(&f->hs, s), 0);
	assert_int_equal(f->hs.nknown, 8);
	assert_int_equal(s->ndisks, 2);
	assert_string_equal(s->disks[0].name, "sda");
	assert_string_equal(s->disks[1].name, "sdb");
	assert_int_equal(s->disk_reads, 10 + 30);
	assert_int_equal(s->disk_write_bytes, (160 + 320) * 512);
}

static void test_sample_no_stat(void **state)
{
	struct sampler_fixture *f = *state;

	sysroot_set(FIXTURES_DIR "/no-such-root");
	assert_int_equal(host_sample_read(&f->hs, &f->sample), -ENOENT);
	assert_int_equal(f->sample.valid, 0);
	assert_int_equal(host_online_cpus(&f->sample), 1);
}

/*
 * The real root: the same boot time at every call (two clocks cut to ms
 * each, as before, gave one ms or the other from call to call), within a
 * second of the kernel's btime (whole seconds, cut); a sysroot: its btime.
 */
static void test_boot_ms(void **state)
{
	struct host_sample h;
	int64_t first, differ = 0;
	unsigned long long btime = 0;
	char line[256];
	FILE *f;

	(void)state;
	memset(&h, 0, sizeof(h));
	h.cpu.btime_s = 1700000000;
	sysroot_set("");
	first = host_boot_ms(&h);
	for (int i = 0; i < 20000; i++)
		differ += host_boot_ms(&h) != first;
	assert_int_equal(differ, 0);
	f = fopen("/proc/stat", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %llu", &btime) == 1)
			break;
	fclose(f);
	assert_true(btime > 0);
	assert_true(first >= (int64_t)btime * 1000 - 1000 && first < (int64_t)btime * 1000 + 2000);

	sysroot_set(SYSROOT1);
	assert_int_equal(host_boot_ms(&h), 1700000000000);
	sysroot_set("");
}

/*
 * "CPU busy" (sample/host.h): user + nice + system + irq + softirq + steal
 * over that plus idle + iowait, between two readings; NAN when a sum went
 * back (two boots, a reset counter) or no time passed.
 */
static void test_cpu_busy_pct(void **state)
{
	struct cpu_times a = {.user_ms = 1000, .nice_ms = 10, .system_ms = 200, .idle_ms = 5000,
			      .iowait_ms = 50, .irq_ms = 5, .softirq_ms = 5, .steal_ms = 0};
	struct cpu_times b = a;

	(void)state;
	assert_int_equal(cpu_busy_ms(&a), 1220);
	assert_int_equal(cpu_idle_ms(&a), 5050);
	/* 300 ms busy (iowait is idle), 700 ms idle */
	b.user_ms += 200;
	b.system_ms += 60;
	b.steal_ms += 40;
	b.idle_ms += 600;
	b.iowait_ms += 100;
	assert_float_equal(cpu_busy_pct(&a, &b), 30.0, 1e-12);
	assert_true(isnan(cpu_busy_pct(&a, &a))); /* no time */
	assert_true(isnan(cpu_busy_pct(&b, &a))); /* back: not a figure */
	b = a;
	b.user_ms += 100;
	b.idle_ms -= 1; /* idle went back, busy on: still two boots' */
	assert_true(isnan(cpu_busy_pct(&a, &b)));
}

int main(void)
{
	const struct CMUnitTest parsers[] = {
	    cmocka_unit_test(test_stat_captured),     cmocka_unit_test(test_stat_old_kernels),
	    cmocka_unit_test(test_stat_rejects),      cmocka_unit_test(test_stat_big),
	    cmocka_unit_test(test_meminfo),	      cmocka_unit_test(test_diskstats),
	    cmocka_unit_test(test_diskstats_rejects), cmocka_unit_test(test_netdev),
	    cmocka_unit_test(test_loadavg),	      cmocka_unit_test(test_pressure),
	    cmocka_unit_test(test_fs_from_statvfs),   cmocka_unit_test(test_boot_ms),
	};
	const struct CMUnitTest sampler[] = {
	    cmocka_unit_test_setup_teardown(test_sample_sysroot1, sampler_setup, sampler_teardown),
	    cmocka_unit_test_setup_teardown(test_sample_missing_files, sampler_setup,
					    sampler_teardown),
	    cmocka_unit_test_setup_teardown(test_sample_disk_cache, sampler_setup,
					    sampler_teardown),
	    cmocka_unit_test_setup_teardown(test_sample_no_stat, sampler_setup, sampler_teardown),
	    cmocka_unit_test(test_cpu_busy_pct),
	};
	int failed;

	failed = cmocka_run_group_tests_name("host parsers", parsers, NULL, NULL);
	failed += cmocka_run_group_tests_name("host sampler", sampler, NULL, NULL);
	return failed ? 1 : 0;
}
