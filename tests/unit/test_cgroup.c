/*
 * test_cgroup.c - the cgroup parsers on captured-format text (Linux 6.x
 * cpu.stat, memory.stat, io.stat; v1 cpuacct.stat, memory.stat and
 * blkio.throttle.io_service_bytes): good input, missing keys, garbage,
 * every truncation, overflow; and the readers on the fixture trees
 * tests/fixtures/cgroup/{v1,v2} (a Slurm job, a Kubernetes burstable pod,
 * cgroups without limits) and on small trees built in a temporary
 * directory (joined and hybrid mounts, fallbacks, broken limit files).
 *
 * Parser input is copied into an exact-size buffer with no NUL after it, so
 * a parser that reads past len trips ASan in the sanitized build.
 */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"

#include "common/sysroot.h"
#include "sample/cgroup.h"

#define CG_V1 FIXTURES_DIR "/cgroup/v1"
#define CG_V2 FIXTURES_DIR "/cgroup/v2"

#define V1_JOB	 "/slurm_vm/uid_0/job_5"
#define V1_MUNGE "/system.slice/munge.service"
#define V2_JOB	 "/system.slice/vm_slurmstepd.scope/job_7"
#define V2_POD                                                                                     \
	"/kubepods.slice/kubepods-burstable.slice/"                                                \
	"kubepods-burstable-pod1234abcd_5678_90ab_cdef_0123456789ab.slice"
#define V2_SESSION "/user.slice/user-1000.slice/session-3.scope"

#define ALL_SAMPLE_BITS (CG_CPU | CG_CPU_SPLIT | CG_MEM | CG_MEM_PEAK | CG_MEM_ANON | CG_IO)
/* memory.stat's other values: v2 has all four, v1 no swapcached */
#define V2_MEMSTAT_BITS (CG_MEM_SHMEM | CG_MEM_SWAPCACHED | CG_MEM_FILE)
#define V1_MEMSTAT_BITS (CG_MEM_SHMEM | CG_MEM_FILE)

/* ---- helpers ---- */

static char *exact_copy(const char *text, size_t len)
{
	char *buf = malloc(len ? len : 1);

	assert_non_null(buf);
	memcpy(buf, text, len);
	return buf;
}

enum parser {
	P_CPU_STAT,
	P_CPUACCT_STAT,
	P_MEMORY_STAT,
	P_IO_STAT,
	P_BLKIO,
};

static int run_parser(enum parser p, const char *text, size_t len, struct cgroup_sample *s)
{
	char *buf = exact_copy(text, len);
	int ret = -1;

	switch (p) {
	case P_CPU_STAT:
		ret = cgroup_parse_cpu_stat(buf, len, s);
		break;
	case P_CPUACCT_STAT:
		ret = cgroup_parse_cpuacct_stat(buf, len, 100, s);
		break;
	case P_MEMORY_STAT:
		ret = cgroup_parse_memory_stat(buf, len, s);
		break;
	case P_IO_STAT:
		ret = cgroup_parse_io_stat(buf, len, s);
		break;
	case P_BLKIO:
		ret = cgroup_parse_blkio_bytes(buf, len, s);
		break;
	}
	free(buf);
	return ret;
}

static int parse(enum parser p, const char *text, struct cgroup_sample *s)
{
	return run_parser(p, text, strlen(text), s);
}

static int parse_file(enum parser p, const char *path, struct cgroup_sample *s)
{
	size_t len;
	char *text = fixture_load(path, &len);
	int ret = run_parser(p, text, len, s);

	free(text);
	return ret;
}

/* A sample every field of which is a recognisable junk value. */
static void poison(struct cgroup_sample *s)
{
	memset(s, 0xa5, sizeof(*s));
}

/* The text is refused and nothing at all was written. */
static void assert_rejected(enum parser p, const char *text)
{
	struct cgroup_sample s, before;

	poison(&s);
	before = s;
	if (parse(p, text, &s) != -EINVAL)
		fail_msg("parser %d accepted '%s'", (int)p, text);
	assert_memory_equal(&s, &before, sizeof(s));
}

/*
 * Every prefix of the text parses or is refused, never crashes; a refusal
 * writes nothing.  Returns how many prefixes parsed.
 */
static int parse_prefixes(enum parser p, const char *path)
{
	size_t len, n;
	char *text = fixture_load(path, &len);
	int ok = 0;

	for (n = 0; n <= len; n++) {
		struct cgroup_sample s, before;
		int ret;

		poison(&s);
		before = s;
		ret = run_parser(p, text, n, &s);
		if (ret == 0) {
			ok++;
		} else {
			assert_int_equal(ret, -EINVAL);
			assert_memory_equal(&s, &before, sizeof(s));
		}
	}
	free(text);
	return ok;
}

static int parse_u64(const char *text, uint64_t *v)
{
	size_t len = strlen(text);
	char *buf = exact_copy(text, len);
	int ret = cgroup_parse_u64(buf, len, v);

	free(buf);
	return ret;
}

static uint64_t ticks_us(uint64_t ticks)
{
	long hz = sysconf(_SC_CLK_TCK);

	return ticks * 1000000 / (uint64_t)(hz > 0 ? hz : 100);
}

/* ---- cpu.stat ---- */

static void test_cpu_stat(void **state)
{
	struct cgroup_sample s = {0};

	(void)state;
	assert_int_equal(parse_file(P_CPU_STAT, CG_V2 "/sys/fs/cgroup" V2_POD "/cpu.stat", &s), 0);
	assert_int_equal(s.valid, CG_CPU | CG_CPU_SPLIT);
	assert_int_equal(s.cpu_usage_us, 88123456789ull);
	assert_int_equal(s.cpu_user_us, 80012345678ull);
	assert_int_equal(s.cpu_system_us, 8111111111ull);

	/* no final newline, blanks around, keys in another order */
	memset(&s, 0, sizeof(s));
	assert_int_equal(parse(P_CPU_STAT, "system_usec 3\n  user_usec\t2  \nusage_usec 5", &s), 0);
	assert_int_equal(s.valid, CG_CPU | CG_CPU_SPLIT);
	assert_int_equal(s.cpu_usage_us, 5);
	assert_int_equal(s.cpu_user_us, 2);
	assert_int_equal(s.cpu_system_us, 3);
}

/* Absent keys leave their fields and bits alone, so results combine. */
static void test_cpu_stat_missing_keys(void **state)
{
	struct cgroup_sample s;

	(void)state;
	poison(&s);
	s.valid = CG_MEM;
	assert_int_equal(parse(P_CPU_STAT, "usage_usec 7\nnr_periods 0\n", &s), 0);
	assert_int_equal(s.valid, CG_MEM | CG_CPU);
	assert_int_equal(s.cpu_usage_us, 7);
	assert_int_equal(s.cpu_user_us, 0xa5a5a5a5a5a5a5a5ull);

	/* user without system is no split */
	poison(&s);
	s.valid = 0;
	assert_int_equal(parse(P_CPU_STAT, "user_usec 7\n", &s), 0);
	assert_int_equal(s.valid, 0);
	assert_int_equal(s.cpu_user_us, 0xa5a5a5a5a5a5a5a5ull);

	/* well-formed, none of ours */
	s.valid = 0;
	assert_int_equal(parse(P_CPU_STAT, "nr_periods 1\nnr_throttled 0\n", &s), 0);
	assert_int_equal(s.valid, 0);
}

static void test_cpu_stat_rejects(void **state)
{
	(void)state;
	assert_rejected(P_CPU_STAT, "");
	assert_rejected(P_CPU_STAT, "\n \n\t\n");
	assert_rejected(P_CPU_STAT, "hello");
	assert_rejected(P_CPU_STAT, "usage_usec");
	assert_rejected(P_CPU_STAT, "usage_usec abc\n");
	assert_rejected(P_CPU_STAT, "usage_usec -5\n");
	assert_rejected(P_CPU_STAT, "usage_usec 5 6\n");
	assert_rejected(P_CPU_STAT, "usage_usec 5x\n");
	assert_rejected(P_CPU_STAT, "usage_usec=5\n");
	assert_rejected(P_CPU_STAT, "usage_usec 5\r\n");
	assert_rejected(P_CPU_STAT, "usage_usec 1.5\n");
	/* cut inside the next key */
	assert_rejected(P_CPU_STAT, "usage_usec 100\nuser_us");
	assert_rejected(P_CPU_STAT, "usage_usec 100\nuser_usec ");
	assert_rejected(P_CPU_STAT, "\xff\xfe\x00\x01");
	/* overflow */
	assert_rejected(P_CPU_STAT, "usage_usec 18446744073709551616\n");
	assert_rejected(P_CPU_STAT, "usage_usec 99999999999999999999999999\n");
}

static void test_cpu_stat_limits(void **state)
{
	struct cgroup_sample s = {0};

	(void)state;
	assert_int_equal(parse(P_CPU_STAT, "usage_usec 18446744073709551615\n", &s), 0);
	assert_int_equal(s.cpu_usage_us, UINT64_MAX);
	assert_int_equal(parse(P_CPU_STAT, "usage_usec 0000000000000000000000000001\n", &s), 0);
	assert_int_equal(s.cpu_usage_us, 1);
	/* a NUL byte is part of a key, not its end */
	assert_int_equal(run_parser(P_CPU_STAT, "usage_usec\0 5\nuser_usec 2", 25, &s), 0);
	assert_int_equal(s.cpu_usage_us, 1);
	/* every cut of a real file parses or fails cleanly */
	assert_true(parse_prefixes(P_CPU_STAT, CG_V2 "/sys/fs/cgroup" V2_JOB "/cpu.stat") > 0);
}

/* ---- cpuacct.stat ---- */

static void test_cpuacct_stat(void **state)
{
	struct cgroup_sample s = {0};
	char *buf;

	(void)state;
	assert_int_equal(
	    parse_file(P_CPUACCT_STAT, CG_V1 "/sys/fs/cgroup/cpuacct" V1_JOB "/cpuacct.stat", &s),
	    0);
	assert_int_equal(s.valid, CG_CPU_SPLIT);
	assert_int_equal(s.cpu_user_us, 6123450000ull);
	assert_int_equal(s.cpu_system_us, 987650000ull);

	/* other tick rates; hz <= 0 is taken as 100 */
	buf = exact_copy("user 612345\nsystem 1\n", 21);
	assert_int_equal(cgroup_parse_cpuacct_stat(buf, 21, 250, &s), 0);
	assert_int_equal(s.cpu_user_us, 2449380000ull);
	assert_int_equal(s.cpu_system_us, 4000);
	assert_int_equal(cgroup_parse_cpuacct_stat(buf, 21, 0, &s), 0);
	assert_int_equal(s.cpu_user_us, 6123450000ull);
	assert_int_equal(cgroup_parse_cpuacct_stat(buf, 21, -3, &s), 0);
	assert_int_equal(s.cpu_system_us, 10000);
	assert_int_equal(cgroup_parse_cpuacct_stat(buf, 21, 0x7fffffffffffffffL, &s), 0);
	assert_int_equal(s.cpu_user_us, 0);
	free(buf);
}

static void test_cpuacct_stat_edges(void **state)
{
	struct cgroup_sample s;

	(void)state;
	/* only one of the two: nothing */
	poison(&s);
	s.valid = CG_CPU;
	assert_int_equal(parse(P_CPUACCT_STAT, "user 5\n", &s), 0);
	assert_int_equal(s.valid, CG_CPU);
	assert_int_equal(s.cpu_user_us, 0xa5a5a5a5a5a5a5a5ull);
	assert_int_equal(parse(P_CPUACCT_STAT, "system 5\nnice 3\n", &s), 0);
	assert_int_equal(s.valid, CG_CPU);

	/* the largest tick count that still fits in microseconds at 100 Hz */
	memset(&s, 0, sizeof(s));
	assert_int_equal(parse(P_CPUACCT_STAT, "user 18446744073709\nsystem 0\n", &s), 0);
	assert_int_equal(s.cpu_user_us, 184467440737090000ull);
	assert_int_equal(s.cpu_system_us, 0);

	assert_rejected(P_CPUACCT_STAT, "");
	assert_rejected(P_CPUACCT_STAT, "user\nsystem 5\n");
	assert_rejected(P_CPUACCT_STAT, "user 5\nsyst");
	assert_rejected(P_CPUACCT_STAT, "user five\nsystem 5\n");
	assert_rejected(P_CPUACCT_STAT, "0::/\n");
	/* ticks fit, microseconds do not */
	assert_rejected(P_CPUACCT_STAT, "user 18446744073709551615\nsystem 0\n");
	assert_rejected(P_CPUACCT_STAT, "user 184467440737095517\nsystem 0\n");
	assert_rejected(P_CPUACCT_STAT, "user 1\nsystem 18446744073709551616\n");
	assert_true(parse_prefixes(P_CPUACCT_STAT,
				   CG_V1 "/sys/fs/cgroup/cpuacct" V1_JOB "/cpuacct.stat") > 0);
}

/* ---- memory.stat ---- */

static void test_memory_stat(void **state)
{
	struct cgroup_sample s = {0};

	(void)state;
	/* v2: anon */
	assert_int_equal(
	    parse_file(P_MEMORY_STAT, CG_V2 "/sys/fs/cgroup" V2_JOB "/memory.stat", &s), 0);
	assert_int_equal(s.valid, CG_MEM_ANON | CG_MEM_SHMEM | CG_MEM_SWAPCACHED | CG_MEM_FILE);
	assert_int_equal(s.mem_anon_bytes, 2952790016ull);
	assert_int_equal(s.mem_file_bytes, 251658240ull);
	assert_int_equal(s.mem_shmem_bytes, 16777216ull);
	assert_int_equal(s.mem_swapcached_bytes, 4096);

	/* v1: total_rss (the subtree) over rss (the job's own, here 0) */
	memset(&s, 0, sizeof(s));
	assert_int_equal(
	    parse_file(P_MEMORY_STAT, CG_V1 "/sys/fs/cgroup/memory" V1_JOB "/memory.stat", &s), 0);
	assert_int_equal(s.valid, CG_MEM_ANON | CG_MEM_SHMEM | CG_MEM_FILE); /* v1: no swapcached */
	assert_int_equal(s.mem_anon_bytes, 1073741824ull);
	assert_int_equal(s.mem_file_bytes, 214749184ull); /* total_cache, not cache */
	assert_int_equal(s.mem_shmem_bytes, 0);

	assert_int_equal(parse(P_MEMORY_STAT, "total_rss 9\nrss 7\n", &s), 0);
	assert_int_equal(s.mem_anon_bytes, 9);
	assert_int_equal(parse(P_MEMORY_STAT, "rss 7\ntotal_rss 9\n", &s), 0);
	assert_int_equal(s.mem_anon_bytes, 9);
	/* without use_hierarchy's totals: rss */
	assert_int_equal(parse(P_MEMORY_STAT, "cache 5\nrss 7\nrss_huge 0\n", &s), 0);
	assert_int_equal(s.mem_anon_bytes, 7);
	/* anon is never v1, and wins */
	assert_int_equal(parse(P_MEMORY_STAT, "rss 7\nanon 3\ntotal_rss 9\n", &s), 0);
	assert_int_equal(s.mem_anon_bytes, 3);
	/* a prefix of a key is another key */
	assert_int_equal(parse(P_MEMORY_STAT, "anon_thp 4\nrss_huge 6\ntotal_rss_huge 8\n", &s), 0);
	assert_int_equal(s.mem_anon_bytes, 3);

	/* shmem, swapcached and the page cache: v2 keys, else v1's totals, else v1's own */
	memset(&s, 0, sizeof(s));
	assert_int_equal(parse(P_MEMORY_STAT,
			       "anon 100\nfile 40\nshmem 30\nswapcached 7\nshmem_thp 9\nfile_dirty 2\n",
			       &s),
			 0);
	assert_int_equal(s.mem_shmem_bytes, 30);
	assert_int_equal(s.mem_swapcached_bytes, 7);
	assert_int_equal(s.mem_file_bytes, 40);
	memset(&s, 0, sizeof(s));
	assert_int_equal(parse(P_MEMORY_STAT, "shmem 1\ncache 2\ntotal_shmem 11\ntotal_cache 12\n", &s),
			 0);
	assert_int_equal(s.valid, CG_MEM_SHMEM | CG_MEM_FILE);
	assert_int_equal(s.mem_shmem_bytes, 11);
	assert_int_equal(s.mem_file_bytes, 12);
	memset(&s, 0, sizeof(s));
	assert_int_equal(parse(P_MEMORY_STAT, "shmem 1\ncache 2\n", &s), 0);
	assert_int_equal(s.mem_shmem_bytes, 1);
	assert_int_equal(s.mem_file_bytes, 2);
}

static void test_memory_stat_edges(void **state)
{
	struct cgroup_sample s;

	(void)state;
	poison(&s);
	s.valid = CG_IO;
	assert_int_equal(parse(P_MEMORY_STAT, "kernel 6\nslab 5\n", &s), 0);
	assert_int_equal(s.valid, CG_IO);
	assert_int_equal(s.mem_anon_bytes, 0xa5a5a5a5a5a5a5a5ull);

	assert_rejected(P_MEMORY_STAT, "");
	assert_rejected(P_MEMORY_STAT, "anon\n");
	assert_rejected(P_MEMORY_STAT, "anon 5\nfile");
	assert_rejected(P_MEMORY_STAT, "anon 5 kB\n");
	assert_rejected(P_MEMORY_STAT, "MemTotal:  16384 kB\n");
	assert_rejected(P_MEMORY_STAT, "anon 18446744073709551616\n");
	assert_rejected(P_MEMORY_STAT, "anon 1\n\x80\x81 garbage here\n");
	assert_true(parse_prefixes(P_MEMORY_STAT,
				   CG_V1 "/sys/fs/cgroup/memory" V1_MUNGE "/memory.stat") > 0);
	assert_true(parse_prefixes(P_MEMORY_STAT, CG_V2 "/sys/fs/cgroup" V2_POD "/memory.stat") >
		    0);
}

/* ---- io.stat ---- */

static void test_io_stat(void **state)
{
	struct cgroup_sample s = {0};

	(void)state;
	assert_int_equal(parse_file(P_IO_STAT, CG_V2 "/sys/fs/cgroup" V2_JOB "/io.stat", &s), 0);
	assert_int_equal(s.valid, CG_IO);
	assert_int_equal(s.io_read_bytes, 1258291200ull + 524288);
	assert_int_equal(s.io_write_bytes, 3221225472ull);

	/* no devices yet: no I/O */
	poison(&s);
	s.valid = 0;
	assert_int_equal(parse(P_IO_STAT, "", &s), 0);
	assert_int_equal(s.valid, CG_IO);
	assert_int_equal(s.io_read_bytes, 0);
	assert_int_equal(s.io_write_bytes, 0);

	/* what iocost and iolatency add to a line is skipped */
	assert_int_equal(parse(P_IO_STAT,
			       "8:16 rbytes=1 wbytes=2 rios=1 wios=1 dbytes=0 dios=0 "
			       "cost.vrate=100.00 cost.usage=12 cost.wait=0 cost.indebt=0 "
			       "cost.indelay=0\n"
			       "8:0 wbytes=20 rbytes=10 rios=1 wios=1 dbytes=0 dios=0 depth=max "
			       "avg_lat=0 win=0\n"
			       "\n",
			       &s),
			 0);
	assert_int_equal(s.io_read_bytes, 11);
	assert_int_equal(s.io_write_bytes, 22);

	/* each device up to the limit; the sum may be exactly the limit */
	assert_int_equal(parse(P_IO_STAT,
			       "8:0 rbytes=18446744073709551614 wbytes=0\n"
			       "8:16 rbytes=1 wbytes=18446744073709551615",
			       &s),
			 0);
	assert_int_equal(s.io_read_bytes, UINT64_MAX);
	assert_int_equal(s.io_write_bytes, UINT64_MAX);
}

static void test_io_stat_rejects(void **state)
{
	(void)state;
	assert_rejected(P_IO_STAT, "8:0 rbytes=5\n");
	assert_rejected(P_IO_STAT, "8:0 wbytes=5 rios=1\n");
	assert_rejected(P_IO_STAT, "8:0\n");
	assert_rejected(P_IO_STAT, "sda rbytes=1 wbytes=2\n");
	assert_rejected(P_IO_STAT, "8: rbytes=1 wbytes=2\n");
	assert_rejected(P_IO_STAT, ":0 rbytes=1 wbytes=2\n");
	assert_rejected(P_IO_STAT, "8:0x rbytes=1 wbytes=2\n");
	assert_rejected(P_IO_STAT, "8:0 rbytes= wbytes=2\n");
	assert_rejected(P_IO_STAT, "8:0 rbytes=abc wbytes=2\n");
	assert_rejected(P_IO_STAT, "8:0 rbytes=1.5 wbytes=2\n");
	assert_rejected(P_IO_STAT, "8:0 rbytes=1 rbytes=1 wbytes=2\n");
	assert_rejected(P_IO_STAT, "8:0 rbytes=1 wbytes=2\n8:16 rbytes=1 wby");
	assert_rejected(P_IO_STAT, "8:0 rbytes=18446744073709551616 wbytes=2\n");
	assert_rejected(P_IO_STAT, "8:0 rbytes=18446744073709551615 wbytes=0\n"
				   "8:16 rbytes=1 wbytes=0\n");
	assert_rejected(P_IO_STAT, "8:0 Read 5\nTotal 5\n");
	assert_rejected(P_IO_STAT, "\x01\x02\x03");
	assert_true(parse_prefixes(P_IO_STAT, CG_V2 "/sys/fs/cgroup" V2_POD "/io.stat") > 0);
}

/* ---- blkio.throttle.io_service_bytes ---- */

static void test_blkio(void **state)
{
	struct cgroup_sample s = {0};

	(void)state;
	assert_int_equal(parse_file(P_BLKIO,
				    CG_V1 "/sys/fs/cgroup/blkio" V1_JOB
					  "/blkio.throttle.io_service_bytes_recursive",
				    &s),
			 0);
	assert_int_equal(s.valid, CG_IO);
	assert_int_equal(s.io_read_bytes, 734003200ull + 4096);
	assert_int_equal(s.io_write_bytes, 2147483648ull + 8192);

	/* a cgroup that did no I/O */
	poison(&s);
	s.valid = CG_CPU;
	assert_int_equal(parse(P_BLKIO, "Total 0\n", &s), 0);
	assert_int_equal(s.valid, CG_CPU | CG_IO);
	assert_int_equal(s.io_read_bytes, 0);
	assert_int_equal(s.io_write_bytes, 0);

	/* before 4.19: no Discard */
	assert_int_equal(parse(P_BLKIO,
			       "8:0 Read 1\n8:0 Write 2\n8:0 Sync 3\n8:0 Async 0\n8:0 Total 3\n"
			       "Total 3",
			       &s),
			 0);
	assert_int_equal(s.io_read_bytes, 1);
	assert_int_equal(s.io_write_bytes, 2);
}

static void test_blkio_rejects(void **state)
{
	(void)state;
	assert_rejected(P_BLKIO, "");
	/* cut before the final Total */
	assert_rejected(P_BLKIO, "8:0 Read 1\n8:0 Write 2\n");
	assert_rejected(P_BLKIO, "8:0 Read 1\n8:0 Wri");
	assert_rejected(P_BLKIO, "Total\n");
	assert_rejected(P_BLKIO, "Total 5 6\n");
	assert_rejected(P_BLKIO, "Total x\n");
	assert_rejected(P_BLKIO, "8:0 Read\nTotal 0\n");
	assert_rejected(P_BLKIO, "8:0 Peek 5\nTotal 0\n");
	assert_rejected(P_BLKIO, "sda Read 5\nTotal 0\n");
	assert_rejected(P_BLKIO, "8:0 Read 5 extra\nTotal 0\n");
	assert_rejected(P_BLKIO, "8:0 rbytes=1 wbytes=2\n");
	assert_rejected(P_BLKIO, "8:0 Read 18446744073709551615\n8:16 Read 1\nTotal 0\n");
	assert_rejected(P_BLKIO, "8:0 Write 18446744073709551616\nTotal 0\n");
	assert_true(parse_prefixes(P_BLKIO,
				   CG_V1 "/sys/fs/cgroup/blkio" V1_JOB
					 "/blkio.throttle.io_service_bytes_recursive") > 0);
}

/* ---- one-number files ---- */

static void test_parse_u64(void **state)
{
	static const char *const bad[] = {
	    "",		  "\n",	  "-1",	 "12a", "1 2", "maxx",
	    "max 100000", "0x10", "1.5", "+1",	"Max", "18446744073709551616",
	    "\xff",
	};
	uint64_t v = 42;
	size_t i;

	(void)state;
	assert_int_equal(parse_u64("123\n", &v), 0);
	assert_int_equal(v, 123);
	assert_int_equal(parse_u64(" \t0\n\n", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse_u64("18446744073709551615", &v), 0);
	assert_int_equal(v, UINT64_MAX);
	v = 42;
	assert_int_equal(parse_u64("max\n", &v), -ENODATA);
	assert_int_equal(parse_u64("max", &v), -ENODATA);
	assert_int_equal(v, 42);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse_u64(bad[i], &v) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
		assert_int_equal(v, 42);
	}
	/* the length is the end, even with digits after it */
	{
		char *buf = exact_copy("12345", 5);

		assert_int_equal(cgroup_parse_u64(buf, 3, &v), 0);
		assert_int_equal(v, 123);
		assert_int_equal(cgroup_parse_u64(buf, 0, &v), -EINVAL);
		free(buf);
	}
}

/* ---- detection and readers on the fixture trees ---- */

static int v1_setup(void **state)
{
	static struct cgroup_layout l;

	sysroot_set(CG_V1);
	if (cgroup_detect(&l) != 0)
		return -1;
	*state = &l;
	return 0;
}

static int v2_setup(void **state)
{
	static struct cgroup_layout l;

	sysroot_set(CG_V2);
	if (cgroup_detect(&l) != 0)
		return -1;
	*state = &l;
	return 0;
}

static int root_teardown(void **state)
{
	(void)state;
	sysroot_set("");
	return 0;
}

static void test_detect_v1(void **state)
{
	const struct cgroup_layout *l = *state;

	assert_int_equal(l->version, CGROUP_V1);
	assert_string_equal(l->unified, "");
	assert_string_equal(l->memory, "/sys/fs/cgroup/memory");
	assert_string_equal(l->cpuacct, "/sys/fs/cgroup/cpuacct");
	assert_string_equal(l->cpu, "/sys/fs/cgroup/cpu");
	assert_string_equal(l->cpuset, "/sys/fs/cgroup/cpuset");
	assert_string_equal(l->blkio, "/sys/fs/cgroup/blkio");
}

static void test_detect_v2(void **state)
{
	const struct cgroup_layout *l = *state;

	assert_int_equal(l->version, CGROUP_V2);
	assert_string_equal(l->unified, "/sys/fs/cgroup");
	assert_string_equal(l->memory, "");
	assert_string_equal(l->cpuacct, "");
	assert_string_equal(l->blkio, "");
}

static void test_detect_none(void **state)
{
	struct cgroup_layout l;

	(void)state;
	memset(&l, 0x5a, sizeof(l));
	sysroot_set(FIXTURES_DIR "/sysroot1");
	assert_int_equal(cgroup_detect(&l), -ENOENT);
	assert_int_equal(l.version, CGROUP_NONE);
	assert_string_equal(l.unified, "");
	assert_string_equal(l.memory, "");
	sysroot_set(FIXTURES_DIR "/no-such-root");
	assert_int_equal(cgroup_detect(&l), -ENOENT);
	sysroot_set("");
}

static void test_v1_slurm_job(void **state)
{
	const struct cgroup_layout *l = *state;
	struct cgroup_sample s;
	struct cgroup_limits lim;

	assert_int_equal(cgroup_read_sample(l, V1_JOB, &s), 0);
	assert_int_equal(s.valid, ALL_SAMPLE_BITS | V1_MEMSTAT_BITS);
	assert_int_equal(s.cpu_usage_us, 7384512345ull);
	assert_int_equal(s.cpu_user_us, ticks_us(612345));
	assert_int_equal(s.cpu_system_us, ticks_us(98765));
	assert_int_equal(s.mem_current_bytes, 1288491008ull);
	assert_int_equal(s.mem_peak_bytes, 2147479552ull);
	assert_int_equal(s.mem_anon_bytes, 1073741824ull);
	/* the _recursive file, not the job's own (8:0 only) */
	assert_int_equal(s.io_read_bytes, 734003200ull + 4096);
	assert_int_equal(s.io_write_bytes, 2147483648ull + 8192);

	assert_int_equal(cgroup_read_limits(l, V1_JOB, &lim), 0);
	assert_int_equal(lim.valid, CG_LIM_CPUSET | CG_LIM_CPU_QUOTA | CG_LIM_MEM);
	assert_int_equal(lim.cpuset_cpus, 4);
	assert_true(lim.cpu_quota_cores == 4.0);
	assert_int_equal(lim.mem_limit_bytes, 4294967296ull);

	/* a trailing '/' is the same cgroup */
	assert_int_equal(cgroup_read_limits(l, V1_JOB "/", &lim), 0);
	assert_int_equal(lim.cpuset_cpus, 4);
	assert_int_equal(lim.mem_limit_bytes, 4294967296ull);
}

/* No limits (-1 quota, ~2^63 bytes) and no cpuset directory: all bits clear. */
static void test_v1_no_limits(void **state)
{
	const struct cgroup_layout *l = *state;
	struct cgroup_sample s;
	struct cgroup_limits lim;

	assert_int_equal(cgroup_read_limits(l, V1_MUNGE, &lim), 0);
	assert_int_equal(lim.valid, 0);
	assert_int_equal(lim.cpuset_cpus, 0);
	assert_int_equal(lim.mem_limit_bytes, 0);

	/* only the plain blkio file: it is read instead */
	assert_int_equal(cgroup_read_sample(l, V1_MUNGE, &s), 0);
	assert_int_equal(s.valid, ALL_SAMPLE_BITS | V1_MEMSTAT_BITS);
	assert_int_equal(s.cpu_usage_us, 48211234ull);
	assert_int_equal(s.cpu_user_us, ticks_us(3120));
	assert_int_equal(s.mem_current_bytes, 9437184);
	assert_int_equal(s.mem_peak_bytes, 15728640);
	assert_int_equal(s.mem_anon_bytes, 2367488);
	assert_int_equal(s.io_read_bytes, 0);
	assert_int_equal(s.io_write_bytes, 0);
}

/* The root: the controllers' top directories, where only cpuset has files. */
static void test_v1_root(void **state)
{
	const struct cgroup_layout *l = *state;
	struct cgroup_sample s;
	struct cgroup_limits lim;

	assert_int_equal(cgroup_read_sample(l, "/", &s), 0);
	assert_int_equal(s.valid, 0);
	assert_int_equal(cgroup_read_limits(l, "/", &lim), 0);
	assert_int_equal(lim.valid, CG_LIM_CPUSET);
	assert_int_equal(lim.cpuset_cpus, 128);
}

static void test_v2_slurm_job(void **state)
{
	const struct cgroup_layout *l = *state;
	struct cgroup_sample s;
	struct cgroup_limits lim;

	assert_int_equal(cgroup_read_sample(l, V2_JOB, &s), 0);
	assert_int_equal(s.valid, ALL_SAMPLE_BITS | V2_MEMSTAT_BITS);
	assert_int_equal(s.cpu_usage_us, 5312345678ull);
	assert_int_equal(s.cpu_user_us, 4987654321ull);
	assert_int_equal(s.cpu_system_us, 324691357ull);
	assert_int_equal(s.mem_current_bytes, 3221225472ull);
	assert_int_equal(s.mem_peak_bytes, 3758096384ull);
	assert_int_equal(s.mem_anon_bytes, 2952790016ull);
	assert_int_equal(s.io_read_bytes, 1258291200ull + 524288);
	assert_int_equal(s.io_write_bytes, 3221225472ull);

	/* Slurm sets no CPU quota: "max 100000" */
	assert_int_equal(cgroup_read_limits(l, V2_JOB, &lim), 0);
	assert_int_equal(lim.valid, CG_LIM_CPUSET | CG_LIM_MEM);
	assert_int_equal(lim.cpuset_cpus, 4);
	assert_true(lim.cpu_quota_cores == 0);
	assert_int_equal(lim.mem_limit_bytes, 4294967296ull);
}

/* cpuset.cpus is empty (inherited): cpuset.cpus.effective says 0-15. */
static void test_v2_k8s_pod(void **state)
{
	const struct cgroup_layout *l = *state;
	struct cgroup_sample s;
	struct cgroup_limits lim;

	assert_int_equal(cgroup_read_limits(l, V2_POD, &lim), 0);
	assert_int_equal(lim.valid, CG_LIM_CPUSET | CG_LIM_CPU_QUOTA | CG_LIM_MEM);
	assert_int_equal(lim.cpuset_cpus, 16);
	assert_true(lim.cpu_quota_cores == 1.5);
	assert_int_equal(lim.mem_limit_bytes, 536870912ull);

	assert_int_equal(cgroup_read_sample(l, V2_POD, &s), 0);
	assert_int_equal(s.valid, ALL_SAMPLE_BITS | V2_MEMSTAT_BITS);
	assert_int_equal(s.cpu_usage_us, 88123456789ull);
	assert_int_equal(s.mem_current_bytes, 402653184ull);
	assert_int_equal(s.mem_peak_bytes, 498073600ull);
	assert_int_equal(s.mem_anon_bytes, 335544320ull);
	assert_int_equal(s.io_read_bytes, 10485760ull + 1048576);
	assert_int_equal(s.io_write_bytes, 20971520ull + 2097152);
}

static void test_v2_no_limits(void **state)
{
	const struct cgroup_layout *l = *state;
	struct cgroup_sample s;
	struct cgroup_limits lim;

	assert_int_equal(cgroup_read_limits(l, V2_SESSION, &lim), 0);
	assert_int_equal(lim.valid, 0);

	/* io.stat is there and empty: no I/O, which is a value */
	assert_int_equal(cgroup_read_sample(l, V2_SESSION, &s), 0);
	assert_int_equal(s.valid, ALL_SAMPLE_BITS | V2_MEMSTAT_BITS);
	assert_int_equal(s.cpu_usage_us, 45678901);
	assert_int_equal(s.mem_current_bytes, 75497472);
	assert_int_equal(s.io_read_bytes, 0);
	assert_int_equal(s.io_write_bytes, 0);
}

/* The root cgroup has cpu.stat and the cpuset, nothing else. */
static void test_v2_root(void **state)
{
	const struct cgroup_layout *l = *state;
	struct cgroup_sample s;
	struct cgroup_limits lim;

	assert_int_equal(cgroup_read_sample(l, "/", &s), 0);
	assert_int_equal(s.valid, CG_CPU | CG_CPU_SPLIT);
	assert_int_equal(s.cpu_usage_us, 912345678901ull);
	assert_int_equal(cgroup_read_limits(l, "/", &lim), 0);
	assert_int_equal(lim.valid, CG_LIM_CPUSET);
	assert_int_equal(lim.cpuset_cpus, 16);
}

/* Missing cgroups, paths that are not cgroups, paths that climb out. */
static void test_bad_paths(void **state)
{
	static const char *const invalid[] = {
	    "",
	    "system.slice",
	    "relative/job_7",
	    "/..",
	    "/system.slice/..",
	    "/a/../b",
	    "/system.slice/../../etc",
	    "//..",
	    "/a/../",
	};
	const struct cgroup_layout *l = *state;
	struct cgroup_sample s;
	struct cgroup_limits lim;
	char longpath[5000];
	size_t i;

	for (i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		memset(&s, 0x5a, sizeof(s));
		memset(&lim, 0x5a, sizeof(lim));
		if (cgroup_read_sample(l, invalid[i], &s) != -EINVAL ||
		    cgroup_read_limits(l, invalid[i], &lim) != -EINVAL)
			fail_msg("accepted '%s'", invalid[i]);
		assert_int_equal(s.valid, 0);
		assert_int_equal(lim.valid, 0);
	}
	assert_int_equal(cgroup_read_sample(l, NULL, &s), -EINVAL);

	/* names with dots in them are fine (and absent here) */
	assert_int_equal(cgroup_read_sample(l, "/a/..b", &s), -ENOENT);
	assert_int_equal(cgroup_read_sample(l, "/a/b..", &s), -ENOENT);
	assert_int_equal(cgroup_read_limits(l, "/...", &lim), -ENOENT);

	memset(&s, 0x5a, sizeof(s));
	assert_int_equal(cgroup_read_sample(l, "/system.slice/job_999", &s), -ENOENT);
	assert_int_equal(s.valid, 0);
	assert_int_equal(s.cpu_usage_us, 0);
	assert_int_equal(cgroup_read_limits(l, "/system.slice/job_999", &lim), -ENOENT);
	/* a file is not a cgroup */
	assert_int_equal(cgroup_read_sample(l, V2_JOB "/cpu.stat", &s), -ENOENT);
	assert_int_equal(cgroup_read_limits(l, V2_JOB "/cpu.max/x", &lim), -ENOENT);

	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	assert_int_equal(cgroup_read_sample(l, longpath, &s), -ENAMETOOLONG);
	longpath[4000] = '\0';
	assert_int_equal(cgroup_read_limits(l, longpath, &lim), -ENAMETOOLONG);
}

static void test_no_layout(void **state)
{
	struct cgroup_layout none;
	struct cgroup_sample s;
	struct cgroup_limits lim;

	(void)state;
	memset(&none, 0, sizeof(none));
	assert_int_equal(cgroup_read_sample(&none, V2_JOB, &s), -ENOENT);
	assert_int_equal(s.valid, 0);
	assert_int_equal(cgroup_read_limits(&none, V2_JOB, &lim), -ENOENT);
	assert_int_equal(lim.valid, 0);
	/* v1 with every controller absent */
	none.version = CGROUP_V1;
	assert_int_equal(cgroup_read_sample(&none, "/", &s), -ENOENT);
	assert_int_equal(cgroup_read_limits(&none, "/", &lim), -ENOENT);
}

/* ---- small trees built on the spot ---- */

static char tmp_root[64];

static void put(const char *rel, const char *text)
{
	char path[512];
	char *p;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp_root, rel);
	for (p = path + strlen(tmp_root) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			fail_msg("mkdir '%s': %s", path, strerror(errno));
		*p = '/';
	}
	if (!text) {
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			fail_msg("mkdir '%s': %s", path, strerror(errno));
		return;
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}


static int tmp_setup(void **state)
{
	(void)state;
	snprintf(tmp_root, sizeof(tmp_root), "/tmp/test_cgroup.XXXXXX");
	if (!mkdtemp(tmp_root))
		return -1;
	sysroot_set(tmp_root);
	return 0;
}

static int tmp_teardown(void **state)
{
	(void)state;
	sysroot_set("");
	return fixture_rm_tree(tmp_root);
}

/* cpu and cpuacct co-mounted, found through either name. */
static void test_tmp_joined_mount(void **state)
{
	struct cgroup_layout l;
	struct cgroup_sample s;
	struct cgroup_limits lim;

	(void)state;
	put("sys/fs/cgroup/cpu,cpuacct/job/cpuacct.usage", "5000\n");
	put("sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "50000\n");
	put("sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
	assert_int_equal(cgroup_detect(&l), 0);
	assert_int_equal(l.version, CGROUP_V1);
	assert_string_equal(l.cpu, "/sys/fs/cgroup/cpu,cpuacct");
	assert_string_equal(l.cpuacct, "/sys/fs/cgroup/cpu,cpuacct");
	assert_string_equal(l.memory, "");
	assert_int_equal(cgroup_read_sample(&l, "/job", &s), 0);
	assert_int_equal(s.valid, CG_CPU);
	assert_int_equal(s.cpu_usage_us, 5);
	assert_int_equal(cgroup_read_limits(&l, "/job", &lim), 0);
	assert_int_equal(lim.valid, CG_LIM_CPU_QUOTA);
	assert_true(lim.cpu_quota_cores == 0.5);

	/* hybrid: v1 controllers and an empty v2 at unified/ */
	put("sys/fs/cgroup/unified/cgroup.controllers", "");
	put("sys/fs/cgroup/memory", NULL);
	assert_int_equal(cgroup_detect(&l), 0);
	assert_int_equal(l.version, CGROUP_V1);
	assert_string_equal(l.memory, "/sys/fs/cgroup/memory");
	assert_string_equal(l.cpuset, "");
	assert_string_equal(l.unified, "");
}

/* v1 limit files at and around their edges. */
static void test_tmp_v1_limits(void **state)
{
	static const struct {
		const char *quota, *period, *mem, *cpus, *effective;
		uint32_t valid;
		double cores;
		uint64_t bytes;
		int ncpus;
	} cases[] = {
	    /* just under 2^62 is a limit, 2^62 is none */
	    {"-1", "100000", "4611686018427383808\n", "0-3", NULL, CG_LIM_MEM | CG_LIM_CPUSET, 0,
	     4611686018427383808ull, 4},
	    {"-1\n", "100000", "4611686018427387904\n", "0-3\n", "", CG_LIM_CPUSET, 0, 0, 4},
	    {"-2", "100000", "max", "0,2,4,6", "", CG_LIM_CPUSET, 0, 0, 4},
	    {"150000", "0", "x", "", NULL, 0, 0, 0, 0},
	    {"150000", "-1", "-1", "3-1", "garbage", 0, 0, 0, 0},
	    {"0", "100000", "0", "0-3,2", NULL, CG_LIM_MEM, 0, 0, 0},
	    {"150000", "100000", "", "1-1048576", "5", CG_LIM_CPU_QUOTA | CG_LIM_CPUSET, 1.5, 0, 1},
	    {"1000", "100000", "4096", "0-1", "0-", CG_LIM_CPU_QUOTA | CG_LIM_MEM | CG_LIM_CPUSET,
	     0.01, 4096, 2},
	};
	struct cgroup_layout l;
	struct cgroup_limits lim;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char dir[64];

		snprintf(dir, sizeof(dir), "case%zu", i);
#define PUT(ctl, file, text)                                                                       \
	do {                                                                                       \
		char rel[128];                                                                     \
		snprintf(rel, sizeof(rel), "sys/fs/cgroup/" ctl "/%s/" file, dir);                 \
		put(rel, text);                                                                    \
	} while (0)
		PUT("cpu", "cpu.cfs_quota_us", cases[i].quota);
		PUT("cpu", "cpu.cfs_period_us", cases[i].period);
		PUT("memory", "memory.limit_in_bytes", cases[i].mem);
		PUT("cpuset", "cpuset.cpus", cases[i].cpus);
		if (cases[i].effective)
			PUT("cpuset", "cpuset.effective_cpus", cases[i].effective);
#undef PUT
		assert_int_equal(cgroup_detect(&l), 0);
		assert_int_equal(l.version, CGROUP_V1);
		snprintf(dir, sizeof(dir), "/case%zu", i);
		assert_int_equal(cgroup_read_limits(&l, dir, &lim), 0);
		if (lim.valid != cases[i].valid)
			fail_msg("case %zu: valid %#x, expected %#x", i, lim.valid, cases[i].valid);
		assert_true(lim.cpu_quota_cores == cases[i].cores);
		assert_int_equal(lim.mem_limit_bytes, cases[i].bytes);
		assert_int_equal(lim.cpuset_cpus, cases[i].ncpus);
	}
}

/* v2 limit files: cpu.max forms, broken files, the cpuset fallback. */
static void test_tmp_v2_limits(void **state)
{
	static const struct {
		const char *cpu_max, *mem_max, *cpus, *effective;
		uint32_t valid;
		double cores;
		uint64_t bytes;
		int ncpus;
	} cases[] = {
	    {"200000 100000\n", "1073741824\n", NULL, "0-7\n",
	     CG_LIM_CPU_QUOTA | CG_LIM_MEM | CG_LIM_CPUSET, 2.0, 1073741824, 8},
	    {"max 100000\n", "max\n", "0-3\n", NULL, CG_LIM_CPUSET, 0, 0, 4},
	    {"max\n", "0\n", "2,4-5\n", "\n", CG_LIM_MEM | CG_LIM_CPUSET, 0, 0, 3},
	    {"50000 100000", "-1", "banana", "1,3", CG_LIM_CPU_QUOTA | CG_LIM_CPUSET, 0.5, 0, 2},
	    {"0 100000", "12k", "", "", 0, 0, 0, 0},
	    {"200000 0", "max 5", NULL, NULL, 0, 0, 0, 0},
	    {"200000", "", "1-", "-1", 0, 0, 0, 0},
	    {"200000 100000 7", "\xff", "1,,2", "1;2", 0, 0, 0, 0},
	    {"200000\n100000", "18446744073709551616", "0-3 ", " 4-5\n", CG_LIM_CPUSET, 0, 0, 2},
	    {"banana", "18446744073709551615", "0", NULL, CG_LIM_MEM | CG_LIM_CPUSET, 0, UINT64_MAX,
	     1},
	    {"max max", "\n5\n", NULL, "0-1048575", CG_LIM_MEM | CG_LIM_CPUSET, 0, 5, 1048576},
	};
	struct cgroup_layout l;
	struct cgroup_limits lim;
	size_t i;

	(void)state;
	put("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
	assert_int_equal(cgroup_detect(&l), 0);
	assert_int_equal(l.version, CGROUP_V2);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char rel[128], cg[32];

		snprintf(cg, sizeof(cg), "/case%zu", i);
		snprintf(rel, sizeof(rel), "sys/fs/cgroup%s/cpu.max", cg);
		put(rel, cases[i].cpu_max);
		snprintf(rel, sizeof(rel), "sys/fs/cgroup%s/memory.max", cg);
		put(rel, cases[i].mem_max);
		if (cases[i].cpus) {
			snprintf(rel, sizeof(rel), "sys/fs/cgroup%s/cpuset.cpus", cg);
			put(rel, cases[i].cpus);
		}
		if (cases[i].effective) {
			snprintf(rel, sizeof(rel), "sys/fs/cgroup%s/cpuset.cpus.effective", cg);
			put(rel, cases[i].effective);
		}
		assert_int_equal(cgroup_read_limits(&l, cg, &lim), 0);
		if (lim.valid != cases[i].valid)
			fail_msg("case %zu: valid %#x, expected %#x", i, lim.valid, cases[i].valid);
		assert_true(lim.cpu_quota_cores == cases[i].cores);
		assert_int_equal(lim.mem_limit_bytes, cases[i].bytes);
		assert_int_equal(lim.cpuset_cpus, cases[i].ncpus);
	}
}

/* A sample with files missing or broken: each only loses its own bit. */
static void test_tmp_v2_partial_sample(void **state)
{
	struct cgroup_layout l;
	struct cgroup_sample s;

	(void)state;
	put("sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
	put("sys/fs/cgroup/old/cpu.stat", "usage_usec 10\nuser_usec 6\nsystem_usec 4\n");
	put("sys/fs/cgroup/old/memory.current", "4096\n");
	/* no memory.peak before 5.19, no io.stat without the io controller */
	put("sys/fs/cgroup/old/memory.stat", "anon 1\nfile\n");
	assert_int_equal(cgroup_detect(&l), 0);
	assert_int_equal(cgroup_read_sample(&l, "/old", &s), 0);
	assert_int_equal(s.valid, CG_CPU | CG_CPU_SPLIT | CG_MEM);
	assert_int_equal(s.cpu_usage_us, 10);
	assert_int_equal(s.mem_current_bytes, 4096);
	assert_int_equal(s.mem_peak_bytes, 0);
	assert_int_equal(s.mem_anon_bytes, 0);

	put("sys/fs/cgroup/empty", NULL);
	assert_int_equal(cgroup_read_sample(&l, "/empty", &s), 0);
	assert_int_equal(s.valid, 0);

	put("sys/fs/cgroup/broken/cpu.stat", "usage_usec 10\nuser_usec");
	put("sys/fs/cgroup/broken/memory.current", "max\n");
	put("sys/fs/cgroup/broken/memory.peak", "12\n");
	put("sys/fs/cgroup/broken/io.stat", "8:0 rbytes=1\n");
	assert_int_equal(cgroup_read_sample(&l, "/broken", &s), 0);
	assert_int_equal(s.valid, CG_MEM_PEAK);
	assert_int_equal(s.mem_peak_bytes, 12);
}

/* v1 with only some controllers holding the cgroup. */
static void test_tmp_v1_partial_sample(void **state)
{
	struct cgroup_layout l;
	struct cgroup_sample s;
	struct cgroup_limits lim;

	(void)state;
	put("sys/fs/cgroup/memory", NULL);
	put("sys/fs/cgroup/cpuacct", NULL);
	put("sys/fs/cgroup/blkio/job/blkio.throttle.io_service_bytes_recursive",
	    "8:0 Read 7\n8:0 Write 9\n8:0 Sync 16\n8:0 Async 0\n8:0 Discard 0\n8:0 Total 16\n"
	    "Total 16\n");
	put("sys/fs/cgroup/blkio/job/blkio.throttle.io_service_bytes", "Total 0\n");
	assert_int_equal(cgroup_detect(&l), 0);
	assert_int_equal(cgroup_read_sample(&l, "/job", &s), 0);
	assert_int_equal(s.valid, CG_IO);
	assert_int_equal(s.io_read_bytes, 7);
	assert_int_equal(s.io_write_bytes, 9);
	/* the limits' controllers (cpuset, cpu, memory) do not have it */
	assert_int_equal(cgroup_read_limits(&l, "/job", &lim), -ENOENT);

	/* a broken _recursive file is not replaced by the plain one */
	put("sys/fs/cgroup/blkio/job/blkio.throttle.io_service_bytes_recursive", "8:0 Read 7\n");
	put("sys/fs/cgroup/memory/job/memory.usage_in_bytes", "8192\n");
	put("sys/fs/cgroup/memory/job/memory.max_usage_in_bytes", "max\n");
	put("sys/fs/cgroup/cpuacct/job/cpuacct.usage", "999\n");
	put("sys/fs/cgroup/cpuacct/job/cpuacct.stat", "user 1\n");
	assert_int_equal(cgroup_read_sample(&l, "/job", &s), 0);
	assert_int_equal(s.valid, CG_MEM | CG_CPU);
	assert_int_equal(s.mem_current_bytes, 8192);
	assert_int_equal(s.cpu_usage_us, 0);
}

int main(void)
{
	const struct CMUnitTest parsers[] = {
	    cmocka_unit_test(test_cpu_stat),
	    cmocka_unit_test(test_cpu_stat_missing_keys),
	    cmocka_unit_test(test_cpu_stat_rejects),
	    cmocka_unit_test(test_cpu_stat_limits),
	    cmocka_unit_test(test_cpuacct_stat),
	    cmocka_unit_test(test_cpuacct_stat_edges),
	    cmocka_unit_test(test_memory_stat),
	    cmocka_unit_test(test_memory_stat_edges),
	    cmocka_unit_test(test_io_stat),
	    cmocka_unit_test(test_io_stat_rejects),
	    cmocka_unit_test(test_blkio),
	    cmocka_unit_test(test_blkio_rejects),
	    cmocka_unit_test(test_parse_u64),
	};
	const struct CMUnitTest v1[] = {
	    cmocka_unit_test(test_detect_v1),	 cmocka_unit_test(test_v1_slurm_job),
	    cmocka_unit_test(test_v1_no_limits), cmocka_unit_test(test_v1_root),
	    cmocka_unit_test(test_no_layout),
	};
	const struct CMUnitTest v2[] = {
	    cmocka_unit_test(test_detect_v2),  cmocka_unit_test(test_v2_slurm_job),
	    cmocka_unit_test(test_v2_k8s_pod), cmocka_unit_test(test_v2_no_limits),
	    cmocka_unit_test(test_v2_root),    cmocka_unit_test(test_bad_paths),
	};
	const struct CMUnitTest tmp[] = {
	    cmocka_unit_test(test_detect_none),
	    cmocka_unit_test_setup_teardown(test_tmp_joined_mount, tmp_setup, tmp_teardown),
	    cmocka_unit_test_setup_teardown(test_tmp_v1_limits, tmp_setup, tmp_teardown),
	    cmocka_unit_test_setup_teardown(test_tmp_v2_limits, tmp_setup, tmp_teardown),
	    cmocka_unit_test_setup_teardown(test_tmp_v2_partial_sample, tmp_setup, tmp_teardown),
	    cmocka_unit_test_setup_teardown(test_tmp_v1_partial_sample, tmp_setup, tmp_teardown),
	};
	int failed;

	failed = cmocka_run_group_tests_name("cgroup parsers", parsers, NULL, NULL);
	failed += cmocka_run_group_tests_name("cgroup v1 tree", v1, v1_setup, root_teardown);
	failed += cmocka_run_group_tests_name("cgroup v2 tree", v2, v2_setup, root_teardown);
	failed += cmocka_run_group_tests_name("cgroup built trees", tmp, NULL, NULL);
	return failed ? 1 : 0;
}
