/*
 * test_proc.c - /proc/PID parsers on captured and hand-made fixtures, and
 * the readers on the sysroot1 tree (live, unreadable-io, vanished, zombie
 * and kernel-thread processes).
 *
 * Fixture text is loaded into an exact-size buffer with no terminating NUL,
 * so a parser that reads past len trips ASan in the sanitized build.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#include "common/sysroot.h"
#include "sample/proc.h"

#define PROC_FIXTURE(name) FIXTURES_DIR "/proc/" name
#define SYSROOT1	   FIXTURES_DIR "/sysroot1"

static int parse_stat_file(const char *path, struct proc_stat *st)
{
	size_t len;
	char *text = fixture_load(path, &len);
	int ret = proc_parse_stat(text, len, st);

	free(text);
	return ret;
}

static int parse_status_file(const char *path, struct proc_status *st)
{
	size_t len;
	char *text = fixture_load(path, &len);
	int ret = proc_parse_status(text, len, st);

	free(text);
	return ret;
}

static int parse_io_file(const char *path, struct proc_io *io)
{
	size_t len;
	char *text = fixture_load(path, &len);
	int ret = proc_parse_io(text, len, io);

	free(text);
	return ret;
}

static size_t format_file(const char *path, char *out, size_t size)
{
	size_t len, n;
	char *raw = fixture_load(path, &len);

	n = proc_format_cmdline(raw, len, out, size);
	free(raw);
	return n;
}

static void test_stat_captured(void **state)
{
	struct proc_stat st;

	(void)state;
	assert_int_equal(parse_stat_file(PROC_FIXTURE("stat_python"), &st), 0);
	assert_int_equal(st.pid, 4862);
	assert_string_equal(st.comm, "python3");
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.ppid, 4860);
	assert_int_equal(st.pgrp, 4860);
	assert_int_equal(st.session, 3037);
	assert_int_equal(st.utime_ticks, 5);
	assert_int_equal(st.stime_ticks, 6);
	assert_int_equal(st.cutime_ticks, 10);
	assert_int_equal(st.cstime_ticks, 11);
	assert_int_equal(st.num_threads, 4);
	assert_int_equal(st.start_ticks, 43223);
	assert_int_equal(st.vsize_bytes, 251912192);
	assert_int_equal(st.rss_pages, 5404);
}

static void test_stat_kthread_and_zombie(void **state)
{
	struct proc_stat st;

	(void)state;
	assert_int_equal(parse_stat_file(PROC_FIXTURE("stat_kthread"), &st), 0);
	assert_int_equal(st.pid, 2);
	assert_string_equal(st.comm, "kthreadd");
	assert_true(st.flags & PROC_PF_KTHREAD);
	assert_int_equal(st.ppid, 0);
	assert_int_equal(st.pgrp, 0);
	assert_int_equal(st.start_ticks, 19);
	assert_int_equal(st.vsize_bytes, 0);
	assert_int_equal(st.rss_pages, 0);

	assert_int_equal(parse_stat_file(PROC_FIXTURE("stat_zombie"), &st), 0);
	assert_int_equal(st.pid, 4828);
	assert_int_equal(st.state, 'Z');
	assert_false(st.flags & PROC_PF_KTHREAD);
	assert_int_equal(st.ppid, 4826);
	assert_int_equal(st.num_threads, 1);
	assert_int_equal(st.start_ticks, 42735);
}

/* comm runs from the first '(' to the last ')'. */
static void test_stat_odd_comm(void **state)
{
	struct proc_stat st;

	(void)state;
	assert_int_equal(parse_stat_file(PROC_FIXTURE("stat_comm_parens"), &st), 0);
	assert_string_equal(st.comm, "(a) b)");
	assert_int_equal(st.pid, 1234);
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.ppid, 1);
	assert_int_equal(st.utime_ticks, 7);
	assert_int_equal(st.stime_ticks, 3);
	assert_int_equal(st.cutime_ticks, 2);
	assert_int_equal(st.cstime_ticks, 1);
	assert_int_equal(st.num_threads, 2);
	assert_int_equal(st.start_ticks, 500);
	assert_int_equal(st.vsize_bytes, 1048576);
	assert_int_equal(st.rss_pages, 25);

	assert_int_equal(parse_stat_file(PROC_FIXTURE("stat_comm_close"), &st), 0);
	assert_string_equal(st.comm, ") )");
	assert_int_equal(st.pid, 77);
	assert_int_equal(st.rss_pages, 25);

	assert_int_equal(parse_stat_file(PROC_FIXTURE("stat_comm_newline"), &st), 0);
	assert_string_equal(st.comm, "tmux: server\nx");
	assert_int_equal(st.pid, 88);
	assert_int_equal(st.start_ticks, 500);

	/* longer than PROC_COMM_MAX: cut, the fields after it still parse */
	assert_int_equal(parse_stat_file(PROC_FIXTURE("stat_comm_long"), &st), 0);
	assert_int_equal(strlen(st.comm), PROC_COMM_MAX - 1);
	assert_int_equal(st.comm[0], 'x');
	assert_int_equal(st.rss_pages, 25);
}

/* Ends right after field 24 with no newline: the least that parses. */
static void test_stat_minimal(void **state)
{
	struct proc_stat st;

	(void)state;
	assert_int_equal(parse_stat_file(PROC_FIXTURE("stat_minimal"), &st), 0);
	assert_string_equal(st.comm, "min");
	assert_int_equal(st.state, 'R');
	assert_int_equal(st.rss_pages, 25);
	assert_int_equal(st.vsize_bytes, 1048576);
}

/* A stat line with fields 26-28 and 45-51 (proc_stat.layout's) as given. */
static int parse_layout(const char *code_stack, const char *tail, uint64_t *layout)
{
	char line[512];
	struct proc_stat st;
	char *text;
	int n, ret;

	n = snprintf(line, sizeof(line),
		     "3800 (python3) R 3796 3796 31092 0 -1 4194304 98 0 0 0 0 0 0 0 20 0 1 0"
		     " 1132163 3133440 357 18446744073709551615 %s 0 0 0 0 0 0 0 0 0 17 0 0 0"
		     " 0 0 0%s\n",
		     code_stack, tail);
	text = malloc((size_t)n);
	assert_non_null(text);
	memcpy(text, line, (size_t)n); /* no NUL: ASan sees a read past len */
	ret = proc_parse_stat(text, (size_t)n, &st);
	free(text);
	*layout = st.layout;
	return ret;
}

/*
 * The layout digest: the same for the same addresses (a fork keeps its
 * parent's), another when one moves (an exec), 0 when the kernel hides
 * them or the line stops before field 51.
 */
static void test_stat_layout(void **state)
{
	static const char *const cs = "94296575258624 94296575278505 140723874139760";
	static const char *const tail = " 94296575294512 94296575296128 94296968978432"
					" 140723874142652 140723874142672 140723874142672"
					" 140723874144235 0";
	uint64_t a, b, c;

	(void)state;
	assert_int_equal(parse_layout(cs, tail, &a), 0);
	assert_true(a != 0);
	assert_int_equal(parse_layout(cs, tail, &b), 0);
	assert_true(a == b);
	/* a new stack, the rest alike */
	assert_int_equal(parse_layout("94296575258624 94296575278505 140723874139761", tail, &b),
			 0);
	assert_true(b != 0 && b != a);
	/* the environment one byte longer */
	assert_int_equal(parse_layout(cs,
				      " 94296575294512 94296575296128 94296968978432"
				      " 140723874142652 140723874142672 140723874142672"
				      " 140723874144236 0",
				      &c),
			 0);
	assert_true(c != 0 && c != a && c != b);
	/* not ours to trace: 1 1 0, then zeros */
	assert_int_equal(parse_layout("1 1 0", " 0 0 0 0 0 0 0 0", &b), 0);
	assert_true(b == 0);
	/* a kernel before 3.5 stops at field 44; a field that is not a number */
	assert_int_equal(parse_layout(cs, "", &b), 0);
	assert_true(b == 0);
	assert_int_equal(parse_layout(cs, " 94296575294512 x 1 2 3 4 5 0", &b), 0);
	assert_true(b == 0);
}

/* This kernel's line for this process (ours to trace) has a layout. */
static void test_stat_layout_live(void **state)
{
	char buf[1024];
	struct proc_stat st;
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n;

	(void)state;
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(proc_parse_stat(buf, n, &st), 0);
	assert_true(st.layout != 0);
}

static void test_stat_rejects(void **state)
{
	static const char *const bad[] = {
	    "1 (a)",
	    "(a) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 6 7",
	    "x (a) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 6 7",
	    "0 (a) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 6 7",
	    "-5 (a) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 6 7",
	    "1 (a)S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 6 7",
	    "1 (a) SS 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 6 7",
	    "1 (a) S x 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 6 7",
	    "1 (a) S 1 1 1 0 -1 0 0 0 0 0 1 -1 0 0 20 0 1 0 5 6 7",
	    "1 (a) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 6 99999999999999999999",
	    "1 (a) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 6 7x",
	    "1 (a) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 6\n7",
	    "1 )a( S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 6 7",
	    "1 (a) S 99999999999 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 6 7",
	};
	struct proc_stat st;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&st, 0xab, sizeof(st));
		assert_int_equal(proc_parse_stat(bad[i], strlen(bad[i]), &st), -EINVAL);
		/* out is left alone on error */
		assert_int_equal(st.pid, (int32_t)0xabababab);
	}
	assert_int_equal(parse_stat_file(PROC_FIXTURE("stat_truncated_midline"), &st), -EINVAL);
	assert_int_equal(parse_stat_file(PROC_FIXTURE("stat_truncated_field22"), &st), -EINVAL);
	assert_int_equal(parse_stat_file(PROC_FIXTURE("stat_empty"), &st), -EINVAL);
	assert_int_equal(parse_stat_file(PROC_FIXTURE("stat_garbage"), &st), -EINVAL);
	assert_int_equal(proc_parse_stat("", 0, &st), -EINVAL);
}

/* The text goes on in memory, but len says it ends before field 24. */
static void test_stat_stops_at_len(void **state)
{
	const char *text = "1 (a) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 6 789";
	struct proc_stat st;
	size_t len = strlen(text);

	(void)state;
	assert_int_equal(proc_parse_stat(text, len, &st), 0);
	assert_int_equal(st.rss_pages, 789);
	assert_int_equal(proc_parse_stat(text, len - 2, &st), 0);
	assert_int_equal(st.rss_pages, 7);
	assert_int_equal(proc_parse_stat(text, len - 4, &st), -EINVAL);
	/* with the closing parenthesis beyond len there is no comm */
	assert_int_equal(proc_parse_stat(text, 4, &st), -EINVAL);
}

static void test_status_captured(void **state)
{
	struct proc_status st;

	(void)state;
	assert_int_equal(parse_status_file(PROC_FIXTURE("status_python"), &st), 0);
	assert_int_equal(st.valid, PROC_STATUS_RSS | PROC_STATUS_HWM | PROC_STATUS_SWAP |
				       PROC_STATUS_UID | PROC_STATUS_THREADS | PROC_STATUS_NSPID);
	assert_int_equal(st.nspid, 4862);
	assert_int_equal(st.rss_bytes, 21840ull * 1024);
	assert_int_equal(st.hwm_bytes, 21840ull * 1024);
	assert_int_equal(st.swap_bytes, 0);
	assert_int_equal(st.uid, 0);
	assert_int_equal(st.threads, 4);
}

/* Kernel threads and zombies have no Vm* lines: missing, not zero. */
static void test_status_no_vm(void **state)
{
	struct proc_status st;

	(void)state;
	assert_int_equal(parse_status_file(PROC_FIXTURE("status_kthread"), &st), 0);
	assert_int_equal(st.valid, PROC_STATUS_UID | PROC_STATUS_THREADS | PROC_STATUS_NSPID);
	assert_int_equal(st.nspid, 2);
	assert_int_equal(st.threads, 1);
	assert_int_equal(st.uid, 0);

	assert_int_equal(parse_status_file(PROC_FIXTURE("status_zombie"), &st), 0);
	assert_int_equal(st.valid, PROC_STATUS_UID | PROC_STATUS_THREADS | PROC_STATUS_NSPID);
	assert_int_equal(st.threads, 1);
}

static void test_status_partial(void **state)
{
	const char *text = "Name:\tx\nUid:\t1000\t1001\t1002\t1003\nVmSwap:\t 12 kB\nThreads:\t7";
	struct proc_status st;

	(void)state;
	/* cut inside VmRSS's number: that field is missing, the rest stays */
	assert_int_equal(parse_status_file(PROC_FIXTURE("status_truncated"), &st), 0);
	assert_int_equal(st.valid, PROC_STATUS_HWM | PROC_STATUS_UID | PROC_STATUS_NSPID);
	assert_int_equal(st.hwm_bytes, 21840ull * 1024);

	/* no trailing newline; Uid is the real (first) one */
	assert_int_equal(proc_parse_status(text, strlen(text), &st), 0);
	assert_int_equal(st.valid, PROC_STATUS_UID | PROC_STATUS_SWAP | PROC_STATUS_THREADS);
	assert_int_equal(st.uid, 1000);
	assert_int_equal(st.swap_bytes, 12 * 1024);
	assert_int_equal(st.threads, 7);

	/* a unit other than kB is not trusted */
	assert_int_equal(proc_parse_status("VmRSS:\t5 MB\nThreads:\t1\n", 23, &st), 0);
	assert_int_equal(st.valid, PROC_STATUS_THREADS);
}

static void test_status_rejects(void **state)
{
	struct proc_status st;

	(void)state;
	assert_int_equal(parse_status_file(PROC_FIXTURE("status_empty"), &st), -EINVAL);
	assert_int_equal(proc_parse_status("hello\nworld\n", 12, &st), -EINVAL);
	assert_int_equal(proc_parse_status("Threads:", 8, &st), -EINVAL);
	assert_int_equal(proc_parse_status("Uid:\t-1\n", 8, &st), -EINVAL);
	assert_int_equal(proc_parse_status("Threads:\t4294967296\n", 20, &st), -EINVAL);
}

static void test_schedstat(void **state)
{
	const char *t = "18446744073709551615 2 3\n";
	uint64_t run_ns = 7;

	(void)state;
	assert_int_equal(proc_parse_schedstat("123456789 4242 17\n", 18, &run_ns), 0);
	assert_int_equal(run_ns, 123456789);
	assert_int_equal(proc_parse_schedstat(t, strlen(t), &run_ns), 0);
	assert_true(run_ns == UINT64_MAX);
	/* the length is the end, not a NUL */
	assert_int_equal(proc_parse_schedstat("98765", 3, &run_ns), 0);
	assert_int_equal(run_ns, 987);
	run_ns = 7;
	assert_int_equal(proc_parse_schedstat("18446744073709551616 0 0", 24, &run_ns), -EINVAL);
	assert_int_equal(proc_parse_schedstat("", 0, &run_ns), -EINVAL);
	assert_int_equal(proc_parse_schedstat("-5 0 0", 6, &run_ns), -EINVAL);
	assert_int_equal(proc_parse_schedstat("12x 0 0", 7, &run_ns), -EINVAL);
	assert_int_equal(run_ns, 7);
	{
		uint64_t wait_ns = 9;
		bool has = true;

		/* field 2: the run-queue wait */
		assert_int_equal(
		    proc_parse_schedstat_wait("123456789 4242 17\n", 18, &run_ns, &wait_ns, &has),
		    0);
		assert_true(has && run_ns == 123456789 && wait_ns == 4242);
		/* no second field, or a bad one: run_ns alone */
		assert_int_equal(proc_parse_schedstat_wait("55\n", 3, &run_ns, &wait_ns, &has), 0);
		assert_true(!has && run_ns == 55);
		assert_int_equal(proc_parse_schedstat_wait("56 7x 1", 7, &run_ns, &wait_ns, &has),
				 0);
		assert_true(!has && run_ns == 56);
		assert_int_equal(proc_parse_schedstat_wait("57 99999999999999999999 1", 25, &run_ns,
							   &wait_ns, &has),
				 0);
		assert_true(!has && run_ns == 57);
		assert_int_equal(proc_parse_schedstat_wait("x 1 2", 5, &run_ns, &wait_ns, &has),
				 -EINVAL);
		assert_false(has);
	}
}

static void test_io(void **state)
{
	struct proc_io io;

	(void)state;
	assert_int_equal(parse_io_file(PROC_FIXTURE("io_python"), &io), 0);
	assert_int_equal(io.rchar, 1685851);
	assert_int_equal(io.wchar, 1710);
	assert_int_equal(io.syscr, 667);
	assert_int_equal(io.syscw, 29);
	assert_int_equal(io.read_bytes, 462848);
	assert_int_equal(io.write_bytes, 0);
	assert_int_equal(io.cancelled_write_bytes, 0);

	/* fields other than read_bytes and write_bytes may be absent */
	memset(&io, 0xff, sizeof(io));
	assert_int_equal(parse_io_file(PROC_FIXTURE("io_missing_fields"), &io), 0);
	assert_int_equal(io.rchar, 4096);
	assert_int_equal(io.wchar, 1024);
	assert_int_equal(io.syscr, 0);
	assert_int_equal(io.syscw, 0);
	assert_int_equal(io.read_bytes, 8192);
	assert_int_equal(io.write_bytes, 512);
	assert_int_equal(io.cancelled_write_bytes, 0);

	assert_int_equal(parse_io_file(PROC_FIXTURE("io_no_bytes"), &io), -EINVAL);
	assert_int_equal(parse_io_file(PROC_FIXTURE("io_empty"), &io), -EINVAL);
	assert_int_equal(proc_parse_io("read_bytes: 1\nwrite_bytes: x\n", 29, &io), -EINVAL);
	/* "read_bytes" is not "cancelled_write_bytes", nor a prefix match */
	assert_int_equal(proc_parse_io("read_bytesx: 1\nwrite_bytes: 2\n", 30, &io), -EINVAL);
}

static void test_cmdline_captured(void **state)
{
	char out[PROC_CMDLINE_MAX];
	size_t n;

	(void)state;
	/* newlines inside the -c argument are control characters */
	n = format_file(PROC_FIXTURE("cmdline_python"), out, sizeof(out));
	assert_int_equal(n, strlen(out));
	assert_string_equal(out,
			    "/root/.pyenv/versions/3.11.7/bin/python3 -c import "
			    "threading,time?for _ in range(3): "
			    "threading.Thread(target=time.sleep,args=(30,),daemon=True).start()?"
			    "b=bytearray(8<<20)?time.sleep(30) two words --flag");

	assert_int_equal(format_file(PROC_FIXTURE("cmdline_kthread"), out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(format_file(PROC_FIXTURE("cmdline_zombie"), out, sizeof(out)), 0);
	assert_string_equal(out, "");

	assert_int_equal(format_file(PROC_FIXTURE("cmdline_setproctitle"), out, sizeof(out)), 21);
	assert_string_equal(out, "nginx: worker process");

	format_file(PROC_FIXTURE("cmdline_odd"), out, sizeof(out));
	assert_string_equal(out, "/usr/bin/caf\xc3\xa9 --t?b ?");
}

static void test_cmdline_cut(void **state)
{
	const char raw[] = {'a', 'b', 'c', 'd', 'e', 'f', '\0', 'g', 'h', 'i', 'j'};
	const char utf8[] = "abc\xc3\xa9"
			    "defgh";
	char out[16];

	(void)state;
	assert_int_equal(proc_format_cmdline(raw, sizeof(raw), out, 16), 11);
	assert_string_equal(out, "abcdef ghij");
	/* exactly fits */
	assert_int_equal(proc_format_cmdline(raw, sizeof(raw), out, 12), 11);
	assert_string_equal(out, "abcdef ghij");
	assert_int_equal(proc_format_cmdline(raw, sizeof(raw), out, 11), 10);
	assert_string_equal(out, "abcdef ...");
	assert_int_equal(proc_format_cmdline(raw, sizeof(raw), out, 8), 7);
	assert_string_equal(out, "abcd...");
	assert_int_equal(proc_format_cmdline(raw, sizeof(raw), out, 4), 3);
	assert_string_equal(out, "...");
	assert_int_equal(proc_format_cmdline(raw, sizeof(raw), out, 2), 1);
	assert_string_equal(out, ".");
	assert_int_equal(proc_format_cmdline(raw, sizeof(raw), out, 1), 0);
	assert_string_equal(out, "");
	out[0] = 'z';
	assert_int_equal(proc_format_cmdline(raw, sizeof(raw), out, 0), 0);
	assert_int_equal(out[0], 'z');

	/* trailing NULs do not count towards the length */
	assert_int_equal(proc_format_cmdline("abc\0\0\0\0\0", 8, out, 4), 3);
	assert_string_equal(out, "abc");
	assert_int_equal(proc_format_cmdline("\0\0", 2, out, 4), 0);
	assert_string_equal(out, "");
	assert_int_equal(proc_format_cmdline("", 0, out, 4), 0);
	assert_string_equal(out, "");

	/* no half UTF-8 character before the dots */
	assert_int_equal(proc_format_cmdline(utf8, strlen(utf8), out, 8), 6);
	assert_string_equal(out, "abc...");
	/* here the whole character fits before the dots */
	assert_int_equal(proc_format_cmdline(utf8, strlen(utf8), out, 9), 8);
	assert_string_equal(out, "abc\xc3\xa9...");
}

static int sysroot1_setup(void **state)
{
	struct proc_reader *r = malloc(sizeof(*r));

	if (!r)
		return -1;
	sysroot_set(SYSROOT1);
	proc_reader_init(r, 100);
	*state = r;
	return 0;
}

static int sysroot1_teardown(void **state)
{
	proc_reader_release(*state);
	free(*state);
	sysroot_set("");
	return 0;
}

static void test_read_live(void **state)
{
	struct proc_reader *r = *state;
	struct proc_stat st;
	struct proc_status status;
	struct proc_io io;
	char cmd[PROC_CMDLINE_MAX];

	assert_int_equal(proc_read_stat(r, 1, &st), 0);
	assert_int_equal(st.pid, 1);
	assert_string_equal(st.comm, "systemd");
	assert_int_equal(st.ppid, 0);
	assert_int_equal(st.utime_ticks, 250);
	assert_int_equal(st.stime_ticks, 180);
	assert_int_equal(st.cutime_ticks, 9000);
	assert_int_equal(st.cstime_ticks, 4000);
	assert_int_equal(st.start_ticks, 12);
	assert_int_equal(st.vsize_bytes, 170000000);
	assert_int_equal(st.rss_pages, 3200);
	assert_int_equal(proc_ticks_to_ms(r, st.utime_ticks), 2500);

	assert_int_equal(proc_read_status(r, 1, &status), 0);
	assert_int_equal(status.valid, PROC_STATUS_RSS | PROC_STATUS_HWM | PROC_STATUS_SWAP |
					   PROC_STATUS_UID | PROC_STATUS_THREADS |
					   PROC_STATUS_NSPID);
	assert_int_equal(status.rss_bytes, 12800 * 1024);
	assert_int_equal(status.hwm_bytes, 14000 * 1024);
	assert_int_equal(status.swap_bytes, 16 * 1024);
	assert_int_equal(status.threads, 1);

	assert_int_equal(proc_read_io(r, 1, &io), 0);
	assert_int_equal(io.rchar, 1000000);
	assert_int_equal(io.wchar, 200000);
	assert_int_equal(io.syscr, 3000);
	assert_int_equal(io.syscw, 400);
	assert_int_equal(io.read_bytes, 5242880);
	assert_int_equal(io.write_bytes, 1048576);
	assert_int_equal(io.cancelled_write_bytes, 4096);

	assert_int_equal(proc_read_cmdline(r, 1, cmd, sizeof(cmd)), 0);
	assert_string_equal(cmd, "/sbin/init splash");
}

/* "/sbin/init\0splash\0": cut only when "/sbin/init splash" does not fit. */
static void test_read_cmdline_sizes(void **state)
{
	struct proc_reader *r = *state;
	char cmd[64];

	assert_int_equal(proc_read_cmdline(r, 1, cmd, 18), 0);
	assert_string_equal(cmd, "/sbin/init splash");
	assert_int_equal(proc_read_cmdline(r, 1, cmd, 17), 0);
	assert_string_equal(cmd, "/sbin/init sp...");
	assert_int_equal(proc_read_cmdline(r, 1, cmd, 8), 0);
	assert_string_equal(cmd, "/sbi...");
	assert_int_equal(proc_read_cmdline(r, 1, cmd, 0), -EINVAL);

	/* NUL padding left by setproctitle() after the first size + 1 bytes */
	assert_int_equal(proc_read_cmdline(r, 400, cmd, 14), 0);
	assert_string_equal(cmd, "nginx: worker");
	assert_int_equal(proc_read_cmdline(r, 400, cmd, 16), 0);
	assert_string_equal(cmd, "nginx: worker");
	assert_int_equal(proc_read_cmdline(r, 400, cmd, 13), 0);
	assert_string_equal(cmd, "nginx: wo...");
}

static void test_read_kthread_zombie(void **state)
{
	struct proc_reader *r = *state;
	struct proc_stat st;
	struct proc_status status;
	struct proc_io io;
	char cmd[PROC_CMDLINE_MAX];

	assert_int_equal(proc_read_status(r, 2, &status), 0);
	assert_int_equal(status.valid, PROC_STATUS_UID | PROC_STATUS_THREADS | PROC_STATUS_NSPID);
	assert_int_equal(proc_read_io(r, 2, &io), 0);
	assert_int_equal(io.read_bytes, 0);
	strcpy(cmd, "junk");
	assert_int_equal(proc_read_cmdline(r, 2, cmd, sizeof(cmd)), 0);
	assert_string_equal(cmd, "");

	assert_int_equal(proc_read_stat(r, 300, &st), 0);
	assert_int_equal(st.pid, 300);
	assert_int_equal(st.state, 'Z');
	assert_int_equal(proc_read_status(r, 300, &status), 0);
	assert_int_equal(status.valid, PROC_STATUS_UID | PROC_STATUS_THREADS | PROC_STATUS_NSPID);
	assert_int_equal(proc_read_cmdline(r, 300, cmd, sizeof(cmd)), 0);
	assert_string_equal(cmd, "");

	assert_int_equal(proc_read_stat(r, 400, &st), 0);
	assert_string_equal(st.comm, ") )");
	assert_int_equal(st.utime_ticks, 1);
	assert_int_equal(st.stime_ticks, 2);
}

/* pid 100 lives but its io file is not there: unreadable, not gone. */
static void test_read_io_unreadable(void **state)
{
	struct proc_reader *r = *state;
	struct proc_stat st;
	struct proc_status status;
	struct proc_io io;
	char cmd[PROC_CMDLINE_MAX];

	assert_int_equal(proc_read_io(r, 100, &io), -EACCES);
	assert_int_equal(proc_read_stat(r, 100, &st), 0);
	assert_string_equal(st.comm, "worker (x)");
	assert_int_equal(st.state, 'R');
	assert_int_equal(st.utime_ticks, 1234);
	assert_int_equal(st.num_threads, 4);
	assert_int_equal(proc_ticks_to_ms(r, st.stime_ticks), 5670);
	assert_int_equal(proc_read_status(r, 100, &status), 0);
	assert_int_equal(status.uid, 1000);
	assert_int_equal(status.threads, 4);
	assert_int_equal(proc_read_cmdline(r, 100, cmd, sizeof(cmd)), 0);
	assert_string_equal(cmd, "worker --jobs=4");
}

/* pid 200 exited after its stat was read; pid 999 never existed. */
static void test_read_vanished(void **state)
{
	struct proc_reader *r = *state;
	struct proc_stat st;
	struct proc_status status;
	struct proc_io io;
	char cmd[PROC_CMDLINE_MAX];

	assert_int_equal(proc_read_stat(r, 200, &st), 0);
	assert_string_equal(st.comm, "short");
	assert_int_equal(proc_read_status(r, 200, &status), -ENOENT);
	strcpy(cmd, "junk");
	assert_int_equal(proc_read_cmdline(r, 200, cmd, sizeof(cmd)), -ENOENT);

	assert_int_equal(proc_read_stat(r, 999, &st), -ENOENT);
	assert_int_equal(proc_read_status(r, 999, &status), -ENOENT);
	assert_int_equal(proc_read_io(r, 999, &io), -ENOENT);
	assert_int_equal(proc_read_cmdline(r, 999, cmd, sizeof(cmd)), -ENOENT);
	assert_int_equal(proc_read_stat(r, -1, &st), -EINVAL);
}

struct pid_list {
	int n;
	int pids[16];
	int stop_at;
};

static int collect_pid(int pid, void *arg)
{
	struct pid_list *l = arg;

	if (l->n < 16)
		l->pids[l->n++] = pid;
	return pid == l->stop_at ? 42 : 0;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void test_for_each_pid(void **state)
{
	struct pid_list l = {.n = 0, .stop_at = -1};

	(void)state;
	assert_int_equal(proc_for_each_pid(collect_pid, &l), 0);
	assert_int_equal(l.n, 6);
	qsort(l.pids, (size_t)l.n, sizeof(int), cmp_int);
	assert_int_equal(l.pids[0], 1);
	assert_int_equal(l.pids[1], 2);
	assert_int_equal(l.pids[2], 100);
	assert_int_equal(l.pids[3], 200);
	assert_int_equal(l.pids[4], 300);
	assert_int_equal(l.pids[5], 400);

	/* non-zero from fn stops the walk and is passed on */
	l.n = 0;
	l.stop_at = 200;
	assert_int_equal(proc_for_each_pid(collect_pid, &l), 42);
	assert_int_equal(l.pids[l.n - 1], 200);

	sysroot_set(FIXTURES_DIR "/no-such-root");
	assert_int_equal(proc_for_each_pid(collect_pid, &l), -ENOENT);
	sysroot_set(SYSROOT1);
}

static void test_ticks_to_ms(void **state)
{
	struct proc_reader r;

	(void)state;
	proc_reader_init(&r, 100);
	assert_int_equal(proc_ticks_to_ms(&r, 0), 0);
	assert_int_equal(proc_ticks_to_ms(&r, 1), 10);
	assert_int_equal(proc_ticks_to_ms(&r, 12345), 123450);
	/* no overflow in ticks * 1000 */
	assert_int_equal(proc_ticks_to_ms(&r, UINT64_MAX / 100), UINT64_MAX / 100 * 10);
	proc_reader_release(&r);

	proc_reader_init(&r, 250);
	assert_int_equal(proc_ticks_to_ms(&r, 1), 4);
	assert_int_equal(proc_ticks_to_ms(&r, 251), 1004);
	proc_reader_release(&r);

	/* a bogus hz falls back to USER_HZ's usual 100 */
	proc_reader_init(&r, 0);
	assert_int_equal(proc_ticks_to_ms(&r, 3), 30);
	proc_reader_release(&r);
}

int main(void)
{
	const struct CMUnitTest parsers[] = {
	    cmocka_unit_test(test_stat_captured),
	    cmocka_unit_test(test_schedstat),
	    cmocka_unit_test(test_stat_kthread_and_zombie),
	    cmocka_unit_test(test_stat_odd_comm),
	    cmocka_unit_test(test_stat_minimal),
	    cmocka_unit_test(test_stat_layout),
	    cmocka_unit_test(test_stat_layout_live),
	    cmocka_unit_test(test_stat_rejects),
	    cmocka_unit_test(test_stat_stops_at_len),
	    cmocka_unit_test(test_status_captured),
	    cmocka_unit_test(test_status_no_vm),
	    cmocka_unit_test(test_status_partial),
	    cmocka_unit_test(test_status_rejects),
	    cmocka_unit_test(test_io),
	    cmocka_unit_test(test_cmdline_captured),
	    cmocka_unit_test(test_cmdline_cut),
	    cmocka_unit_test(test_ticks_to_ms),
	};
	const struct CMUnitTest readers[] = {
	    cmocka_unit_test(test_read_live),		cmocka_unit_test(test_read_cmdline_sizes),
	    cmocka_unit_test(test_read_kthread_zombie), cmocka_unit_test(test_read_io_unreadable),
	    cmocka_unit_test(test_read_vanished),	cmocka_unit_test(test_for_each_pid),
	};
	int failed;

	failed = cmocka_run_group_tests_name("proc parsers", parsers, NULL, NULL);
	failed +=
	    cmocka_run_group_tests_name("proc readers", readers, sysroot1_setup, sysroot1_teardown);
	return failed ? 1 : 0;
}
