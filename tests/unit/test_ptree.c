/*
 * test_ptree.c - the process-tree sampler on a fake /proc built by the test:
 * who is in the tree, which processes emit rows, the lazy refresh of status
 * and io, pid reuse, processes vanishing between two files, and the job
 * totals when children are reaped by their parent or by the ancestor.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"

#include "common/sysroot.h"
#include "sample/ptree.h"

#define ANCESTOR 10
#define BOOT_MS	 1000000

static char root[64];

static void put_file(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	assert_true(snprintf(path, sizeof(path), "%s%s", root, rel) < (int)sizeof(path));
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A process with CPU in ticks (hz 100: 1 tick = 10 ms) and RSS in kB. */
static void put_proc(int pid, int ppid, const char *comm, char state, int utime, int cutime,
		     int rss_kb, int start_ticks, long long read_bytes)
{
	char dir[256], text[512];

	snprintf(dir, sizeof(dir), "%s/proc/%d", root, pid);
	mkdir(dir, 0755);
	snprintf(dir, sizeof(dir), "/proc/%d/stat", pid);
	snprintf(text, sizeof(text),
		 "%d (%s) %c %d %d %d 0 -1 4194304 100 0 0 0 %d 0 %d 0 20 0 1 0 %d 1000000 %d "
		 "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
		 pid, comm, state, ppid, pid, pid, utime, cutime, start_ticks, rss_kb / 4);
	put_file(dir, text);
	snprintf(dir, sizeof(dir), "/proc/%d/status", pid);
	snprintf(text, sizeof(text),
		 "Name:\t%s\nState:\t%c\nUid:\t0\t0\t0\t0\nVmHWM:\t%d kB\nVmRSS:\t%d kB\n"
		 "VmSwap:\t0 kB\nThreads:\t1\n",
		 comm, state, rss_kb * 2, rss_kb);
	put_file(dir, text);
	snprintf(dir, sizeof(dir), "/proc/%d/io", pid);
	snprintf(text, sizeof(text),
		 "rchar: 1\nwchar: 1\nsyscr: 1\nsyscw: 1\nread_bytes: %lld\nwrite_bytes: 0\n"
		 "cancelled_write_bytes: 0\n",
		 read_bytes);
	put_file(dir, text);
	snprintf(dir, sizeof(dir), "/proc/%d/cmdline", pid);
	put_file(dir, comm);
}

/* A kernel thread: PF_KTHREAD (0x200000) among its flags, no memory, no io. */
static void put_kthread(int pid, int ppid, const char *comm)
{
	char dir[256], text[512];

	snprintf(dir, sizeof(dir), "%s/proc/%d", root, pid);
	mkdir(dir, 0755);
	snprintf(dir, sizeof(dir), "/proc/%d/stat", pid);
	snprintf(
	    text, sizeof(text),
	    "%d (%s) S %d 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 19 0 0 "
	    "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
	    pid, comm, ppid);
	put_file(dir, text);
	snprintf(dir, sizeof(dir), "/proc/%d/status", pid);
	snprintf(text, sizeof(text), "Name:\t%s\nState:\tS\nUid:\t0\t0\t0\t0\nThreads:\t1\n", comm);
	put_file(dir, text);
	snprintf(dir, sizeof(dir), "/proc/%d/cmdline", pid);
	put_file(dir, "");
}

static void remove_proc(int pid)
{
	char dir[256];

	snprintf(dir, sizeof(dir), "%s/proc/%d", root, pid);
	assert_int_equal(fixture_rm_tree(dir), 0);
}

static int setup(void **state)
{
	char dir[128];

	(void)state;
	snprintf(root, sizeof(root), "/tmp/jobscope-ptree-XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/proc", root);
	mkdir(dir, 0755);
	sysroot_set(root);
	put_proc(1, 0, "init", 'S', 5, 0, 1000, 1, 0);
	put_proc(ANCESTOR, 1, "jobscope", 'S', 1, 0, 2000, 50, 0);
	put_proc(99, 1, "other", 'R', 500, 0, 5000, 60, 0); /* not in the tree */
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(fixture_rm_tree(root), 0);
	sysroot_set(NULL);
	return 0;
}

static struct ptree_proc *find(struct ptree *pt, int pid)
{
	for (size_t i = 0; i < pt->nprocs; i++)
		if (pt->procs[i].info.pid == pid)
			return &pt->procs[i];
	return NULL;
}

static void test_tree_and_totals(void **state)
{
	struct ptree pt;
	struct ptree_proc *p;
	const struct job_sample *j;

	(void)state;
	put_proc(20, ANCESTOR, "sh", 'S', 10, 0, 1000, 100, 0);
	put_proc(21, 20, "worker", 'R', 100, 0, 4000, 110, 4096);
	put_proc(22, 21, "grandchild", 'S', 7, 0, 800, 120, 0);
	ptree_init(&pt, ANCESTOR, 100, BOOT_MS);

	assert_int_equal(ptree_scan(&pt, BOOT_MS + 5000), 0);
	assert_int_equal(pt.nprocs, 3);
	assert_null(find(&pt, 99));
	assert_null(find(&pt, 1));
	p = find(&pt, 21);
	assert_non_null(p);
	assert_true(p->emit);
	assert_int_equal(p->info.ppid, 20);
	assert_int_equal(p->info.start_ms, BOOT_MS + 1100);
	assert_string_equal(p->info.comm, "worker");
	assert_string_equal(p->info.cmdline, "worker");
	assert_int_equal(p->cur.user_ms, 1000);
	assert_int_equal(p->cur.rss_bytes, 4000 * 1024);
	assert_int_equal(p->cur.hwm_bytes, 8000 * 1024);
	assert_int_equal(p->cur.read_bytes, 4096);
	j = ptree_job(&pt);
	assert_int_equal(j->nprocs, 3);
	assert_int_equal(j->user_ms, 1170);
	assert_int_equal(j->rss_bytes, (1000 + 4000 + 800) * 1024);
	assert_int_equal(j->read_bytes, 4096);
	assert_true(j->valid & JS_IO);

	/* nothing moved: no rows; the worker keeps running: a row */
	put_proc(21, 20, "worker", 'R', 150, 0, 4000, 110, 8192);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 5500), 0);
	assert_false(find(&pt, 20)->emit);
	assert_false(find(&pt, 22)->emit);
	assert_true(find(&pt, 21)->emit);
	assert_int_equal(ptree_job(&pt)->user_ms, 1670);

	/*
	 * The grandchild used 2 more ticks, exited and was reaped by the worker
	 * between two scans: its CPU moved to the worker's cutime (9 ticks),
	 * which also tells its exact final value (90 ms, not the 70 last seen).
	 */
	remove_proc(22);
	put_proc(21, 20, "worker", 'R', 160, 9, 4000, 110, 8192);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 6000), 0);
	p = find(&pt, 22);
	assert_non_null(p);
	assert_false(p->alive);
	assert_true(p->emit);
	assert_int_equal(p->cur.state, 'X');
	assert_int_equal(p->cur.user_ms, 90);
	assert_int_equal(p->info.end_ms, BOOT_MS + 6000);
	j = ptree_job(&pt);
	assert_int_equal(j->nprocs, 2);
	assert_int_equal(j->user_ms, 100 + 1600 + 90);
	/* its last row went out: it is dropped at the next scan */
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 6500), 0);
	assert_null(find(&pt, 22));
	ptree_release(&pt);
}

/*
 * Every process but kernel threads (the agent), told by the kernel's flag and
 * not by kthreadd's pid: in a pid namespace (a container, a test of its own)
 * pid 2 is a user process and kernel threads are not seen; outside, pid 2 is
 * kthreadd and its children are kernel threads.
 */
static void test_all_but_kernel_threads(void **state)
{
	struct ptree pt;

	(void)state;
	put_proc(1, 0, "init", 'S', 1, 0, 1000, 10, 0);
	put_proc(2, 1, "sh", 'S', 2, 0, 1000, 20, 0); /* a container's second process */
	put_proc(3, 2, "worker", 'R', 30, 0, 4000, 30, 0);
	put_kthread(4, 0, "kthreadd"); /* a kernel thread at any pid */
	put_kthread(5, 4, "kworker/0:1");
	ptree_init_all(&pt, 100, BOOT_MS);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 5000), 0);
	/* with setup's 10 and 99 */
	assert_int_equal(pt.nprocs, 5);
	assert_non_null(find(&pt, 1));
	assert_non_null(find(&pt, 2));
	assert_non_null(find(&pt, 3));
	assert_null(find(&pt, 4));
	assert_null(find(&pt, 5));
	assert_int_equal(ptree_job(&pt)->user_ms, 10 + 20 + 300 + 10 + 5000);
	/* jobscope_node_processes: user-space only, as the task iterator lists them */
	assert_int_equal(pt.system_processes, 5);
	ptree_release(&pt);
}

static void test_lazy_refresh(void **state)
{
	struct ptree pt;

	(void)state;
	put_proc(30, ANCESTOR, "sleeper", 'S', 10, 0, 1000, 200, 0);
	ptree_init(&pt, ANCESTOR, 100, BOOT_MS);
	assert_int_equal(ptree_scan(&pt, BOOT_MS), 0);
	assert_int_equal(find(&pt, 30)->cur.rss_bytes, 1000 * 1024);

	/* status changed but stat did not: not read again before the full refresh */
	put_file("/proc/30/status", "Name:\tsleeper\nVmHWM:\t9999 kB\nVmRSS:\t1000 kB\n");
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 500), 0);
	assert_int_equal(find(&pt, 30)->cur.hwm_bytes, 2000 * 1024);
	assert_false(find(&pt, 30)->emit);

	/* ...but after PTREE_FULL_REFRESH_MS it is */
	assert_int_equal(ptree_scan(&pt, BOOT_MS + PTREE_FULL_REFRESH_MS + 1), 0);
	assert_int_equal(find(&pt, 30)->cur.hwm_bytes, 9999 * 1024);
	assert_true(find(&pt, 30)->emit);

	/* a move in stat reads status at once */
	put_proc(30, ANCESTOR, "sleeper", 'S', 11, 0, 1200, 200, 0);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + PTREE_FULL_REFRESH_MS + 100), 0);
	assert_int_equal(find(&pt, 30)->cur.rss_bytes, 1200 * 1024);
	ptree_release(&pt);
}

static void test_pid_reuse_and_vanishing(void **state)
{
	struct ptree pt;
	struct ptree_proc *p;

	(void)state;
	put_proc(40, ANCESTOR, "first", 'S', 10, 0, 1000, 300, 0);
	put_proc(41, ANCESTOR, "noio", 'S', 10, 0, 1000, 310, 0);
	remove_proc(41);
	put_proc(41, ANCESTOR, "noio", 'S', 10, 0, 1000, 310, 0);
	{
		char path[256];

		snprintf(path, sizeof(path), "%s/proc/41/io", root);
		unlink(path);
	}
	ptree_init(&pt, ANCESTOR, 100, BOOT_MS);
	assert_int_equal(ptree_scan(&pt, BOOT_MS), 0);
	p = find(&pt, 41);
	assert_non_null(p);
	assert_false(p->cur.valid & PS_IO); /* unreadable io is missing, not 0 */
	assert_true(ptree_job(&pt)->valid & JS_IO);

	/*
	 * pid 40 is reused by another process (another start time).  On procfs
	 * the old process's kept-open stat descriptor then fails (ESRCH); a
	 * fixture file would not, so read by path from here on.
	 */
	pt.fd_cache = false;
	remove_proc(40);
	put_proc(40, ANCESTOR, "second", 'S', 3, 0, 1000, 900, 0);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 500), 0);
	{
		int alive = 0, ended = 0;

		for (size_t i = 0; i < pt.nprocs; i++) {
			if (pt.procs[i].info.pid != 40)
				continue;
			if (pt.procs[i].alive) {
				alive++;
				assert_string_equal(pt.procs[i].info.comm, "second");
			} else {
				ended++;
				assert_string_equal(pt.procs[i].info.comm, "first");
			}
		}
		assert_int_equal(alive, 1);
		assert_int_equal(ended, 1);
	}

	/* a process whose stat is there but whose other files are gone */
	{
		char path[256];

		put_proc(42, ANCESTOR, "vanishing", 'S', 10, 0, 1000, 950, 0);
		snprintf(path, sizeof(path), "%s/proc/42/status", root);
		unlink(path);
		snprintf(path, sizeof(path), "%s/proc/42/io", root);
		unlink(path);
		snprintf(path, sizeof(path), "%s/proc/42/cmdline", root);
		unlink(path);
	}
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 1000), 0);
	p = find(&pt, 42);
	assert_non_null(p);
	assert_false(p->cur.valid & (PS_RSS | PS_IO));
	assert_int_equal(p->cur.user_ms, 100);
	assert_string_equal(p->info.cmdline, "");
	ptree_release(&pt);
}

/* A leaf child of the ancestor scanned once, then reaped with ru: its peak then. */
static uint64_t leaf_reaped(int32_t pid, const struct rusage *ru, uint64_t spawn_image)
{
	struct ptree pt;
	uint64_t hwm;

	put_proc(pid, ANCESTOR, "leaf", 'S', 100, 0, 0, 400, 1000);
	ptree_init(&pt, ANCESTOR, 100, BOOT_MS);
	pt.spawn_image_bytes = spawn_image;
	assert_int_equal(ptree_scan(&pt, BOOT_MS), 0);
	put_proc(pid, ANCESTOR, "leaf", 'Z', 120, 0, 0, 400, 1000);
	ptree_child_exiting(&pt, pid);
	remove_proc(pid);
	ptree_child_reaped(&pt, pid, ru, BOOT_MS + 800);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 1000), 0);
	hwm = find(&pt, pid)->cur.hwm_bytes;
	ptree_release(&pt);
	return hwm;
}

static void test_reaped_by_ancestor(void **state)
{
	struct ptree pt;
	struct rusage ru;
	const struct job_sample *j;

	(void)state;
	put_proc(50, ANCESTOR, "cmd", 'S', 100, 30, 1000, 400, 1000);
	ptree_init(&pt, ANCESTOR, 100, BOOT_MS);
	assert_int_equal(ptree_scan(&pt, BOOT_MS), 0);
	assert_int_equal(ptree_job(&pt)->user_ms, 1300);

	/* it exits: read while a zombie, then reaped with an exact rusage */
	put_proc(50, ANCESTOR, "cmd", 'Z', 120, 30, 0, 400, 5000);
	ptree_child_exiting(&pt, 50);
	memset(&ru, 0, sizeof(ru));
	ru.ru_utime.tv_sec = 1;
	ru.ru_utime.tv_usec = 505000; /* own 1.2 s + children 0.3 s, finer than ticks */
	ru.ru_maxrss = 300 * 1024;    /* kB */
	remove_proc(50);
	ptree_child_reaped(&pt, 50, &ru, BOOT_MS + 800);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 1000), 0);
	j = ptree_job(&pt);
	assert_int_equal(j->nprocs, 0);
	assert_int_equal(j->user_ms, 1505);
	assert_int_equal(j->read_bytes, 5000);
	assert_true(find(&pt, 50)->emit);
	/* it reaped children (0.3 s of theirs): ru_maxrss may be theirs, not its own */
	assert_int_not_equal(find(&pt, 50)->cur.hwm_bytes, 300ull << 20);
	assert_int_equal(find(&pt, 50)->info.end_ms, BOOT_MS + 800);
	ptree_release(&pt);

	/* a process that reaped none: ru_maxrss is its own peak, even one between two scans */
	assert_int_equal(leaf_reaped(51, &ru, 0), 300ull << 20);
	/*
	 * ...but not where its image from fork to exec, a copy of its parent's
	 * (400 MiB), may be all ru_maxrss holds: the peak stays /proc's
	 */
	assert_true(leaf_reaped(52, &ru, 400ull << 20) < 300ull << 20);
}

/*
 * A worker and the parent that waited for it both end between two scans
 * (the parent reaped by its own parent): the grandparent's cutime grew by
 * the parent's own CPU plus the worker's.  The parent's row takes the
 * worker in its reaped-children values, as last seen, and only the rest as
 * its own, so the rows add up to the tree's total once.
 */
static void test_parent_and_worker_end_together(void **state)
{
	struct ptree pt;
	struct ptree_proc *parent, *worker;

	(void)state;
	put_proc(40, ANCESTOR, "sh", 'S', 1, 0, 1000, 300, 0);
	put_proc(41, 40, "loadgen", 'S', 2, 0, 1000, 310, 0);
	put_proc(42, 41, "worker", 'R', 100, 0, 1000, 320, 0);
	ptree_init(&pt, ANCESTOR, 100, BOOT_MS);
	assert_int_equal(ptree_scan(&pt, BOOT_MS), 0);
	assert_int_equal(ptree_job(&pt)->user_ms, 1030);

	/* the worker used 10 ticks more, the parent 1 more: 113 ticks in all */
	remove_proc(42);
	remove_proc(41);
	put_proc(40, ANCESTOR, "sh", 'S', 1, 113, 1000, 300, 0);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 1000), 0);
	parent = find(&pt, 41);
	worker = find(&pt, 42);
	assert_non_null(parent);
	assert_non_null(worker);
	assert_int_equal(worker->cur.user_ms, 1000);
	assert_int_equal(parent->cur.child_user_ms, 1000);
	assert_int_equal(parent->cur.user_ms, 130);
	assert_int_equal(ptree_job(&pt)->user_ms, 10 + 1130);
	ptree_release(&pt);
}

/* /proc/PID/schedstat: the run time of its main thread, ns. */
static void put_schedstat(int pid, unsigned long long run_ns)
{
	char rel[64], text[96];

	snprintf(rel, sizeof(rel), "/proc/%d/schedstat", pid);
	snprintf(text, sizeof(text), "%llu 4242 7\n", run_ns);
	put_file(rel, text);
}

/*
 * A single-threaded process whose schedstat did not move keeps its last
 * stat, unread (so a stat that changes behind schedstat's back shows it was
 * not read); once schedstat moves, its stat is read and its CPU is exact.
 */
static void test_skip_until_it_runs(void **state)
{
	struct ptree pt;
	uint64_t reads;

	(void)state;
	put_proc(30, ANCESTOR, "sleeper", 'S', 10, 0, 1000, 200, 0);
	put_schedstat(30, 100000000);
	ptree_init(&pt, ANCESTOR, 100, BOOT_MS);
	assert_int_equal(ptree_scan(&pt, BOOT_MS), 0);
	assert_int_equal(find(&pt, 30)->cur.user_ms, 100);
	reads = pt.stat_reads;

	put_proc(30, ANCESTOR, "sleeper", 'S', 25, 0, 1000, 200, 0);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 1000), 0);
	assert_int_equal(find(&pt, 30)->cur.user_ms, 100);
	assert_false(find(&pt, 30)->emit);
	assert_int_equal(pt.stat_skips, 1);
	assert_int_equal(pt.stat_reads - reads, 2); /* init and jobscope, which have none */

	put_schedstat(30, 250000000);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 2000), 0);
	assert_int_equal(find(&pt, 30)->cur.user_ms, 250);
	assert_true(find(&pt, 30)->emit);
	assert_int_equal(ptree_job(&pt)->user_ms, 250);

	/* a stat kept PTREE_FULL_REFRESH_MS is read again, run or not */
	put_proc(30, ANCESTOR, "sleeper", 'S', 25, 0, 1500, 200, 0);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 3000), 0);
	assert_int_equal(find(&pt, 30)->cur.rss_bytes, 1000 * 1024);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 2000 + PTREE_FULL_REFRESH_MS), 0);
	assert_int_equal(find(&pt, 30)->cur.rss_bytes, 1500 * 1024);
	assert_true(find(&pt, 30)->emit);
	ptree_release(&pt);
}

/*
 * Within RLIMIT_NOFILE - PTREE_FD_MARGIN descriptors are kept; the other
 * processes are read by path, with the same figures, and every descriptor
 * kept is given back.
 */
static void test_fd_budget(void **state)
{
	struct rlimit saved, low;
	struct ptree pt;

	(void)state;
	for (int pid = 30; pid < 34; pid++) {
		put_proc(pid, ANCESTOR, "sleeper", 'S', pid, 0, 1000, 200 + pid, 0);
		put_schedstat(pid, 100000000);
	}
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
	low = saved;
	low.rlim_cur = PTREE_FD_MARGIN + 3;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	ptree_init(&pt, ANCESTOR, 100, BOOT_MS);
	assert_int_equal(ptree_scan(&pt, BOOT_MS), 0);
	assert_true(pt.kept_fds <= 3);
	for (int pid = 30; pid < 34; pid++)
		assert_int_equal(find(&pt, pid)->cur.user_ms, pid * 10);
	for (int pid = 30; pid < 34; pid++) {
		put_proc(pid, ANCESTOR, "sleeper", 'S', pid + 5, 0, 1000, 200 + pid, 0);
		put_schedstat(pid, 200000000);
	}
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 1000), 0);
	assert_true(pt.kept_fds <= 3);
	for (int pid = 30; pid < 34; pid++)
		assert_int_equal(find(&pt, pid)->cur.user_ms, (pid + 5) * 10);
	remove_proc(31);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 2000), 0);
	assert_false(find(&pt, 31)->alive);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 3000), 0);
	ptree_release(&pt);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);

	/* with room, all are kept, and all given back */
	ptree_init(&pt, ANCESTOR, 100, BOOT_MS);
	assert_int_equal(ptree_scan(&pt, BOOT_MS), 0);
	/* stat of init and of 99 (no schedstat there), stat and schedstat of 30, 32, 33 */
	assert_int_equal(pt.kept_fds, 2 + 2 * 3);
	ptree_release(&pt);
}

/* Threads other than the main one are not in schedstat: never skipped. */
static void test_no_skip_with_threads(void **state)
{
	struct ptree pt;

	(void)state;
	put_proc(30, ANCESTOR, "server", 'S', 10, 0, 1000, 200, 0);
	put_file("/proc/30/stat", "30 (server) S 10 30 30 0 -1 4194304 100 0 0 0 10 0 0 0 20 0 "
				  "4 0 200 1000000 250 18446744073709551615 1 1 0 0 0 0 0 0 0 "
				  "0 0 0 17 0 0 0 0 0 0\n");
	put_schedstat(30, 100000000);
	ptree_init(&pt, ANCESTOR, 100, BOOT_MS);
	assert_int_equal(ptree_scan(&pt, BOOT_MS), 0);
	put_file("/proc/30/stat", "30 (server) S 10 30 30 0 -1 4194304 100 0 0 0 90 0 0 0 20 0 "
				  "4 0 200 1000000 250 18446744073709551615 1 1 0 0 0 0 0 0 0 "
				  "0 0 0 17 0 0 0 0 0 0\n");
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 1000), 0);
	assert_int_equal(pt.stat_skips, 0);
	assert_int_equal(find(&pt, 30)->cur.user_ms, 900);
	ptree_release(&pt);
}

/*
 * A child skipped while sleeping runs, exits and is reaped by its parent
 * between two scans: it ends with its final CPU, exact from the parent's
 * cutime.  Its sibling, reparented without running when the parent ends,
 * is read again and stays in the tree.
 */
static void test_skipped_child_ends(void **state)
{
	struct ptree pt;
	struct ptree_proc *p;

	(void)state;
	put_proc(32, ANCESTOR, "parent", 'S', 5, 0, 1000, 300, 0);
	put_proc(31, 32, "child", 'S', 10, 0, 1000, 310, 0);
	put_proc(33, 32, "sibling", 'S', 3, 0, 1000, 320, 0);
	put_schedstat(32, 50000000);
	put_schedstat(31, 100000000);
	put_schedstat(33, 30000000);
	ptree_init(&pt, ANCESTOR, 100, BOOT_MS);
	assert_int_equal(ptree_scan(&pt, BOOT_MS), 0);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 1000), 0);
	assert_int_equal(pt.stat_skips, 3);
	assert_int_equal(find(&pt, 31)->cur.user_ms, 100);

	/* the child ran to 37 ticks and exited; the parent reaped it */
	remove_proc(31);
	put_proc(32, ANCESTOR, "parent", 'S', 6, 37, 1000, 300, 0);
	put_schedstat(32, 60000000);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 2000), 0);
	p = find(&pt, 31);
	assert_non_null(p);
	assert_false(p->alive);
	assert_true(p->emit);
	assert_int_equal(p->cur.user_ms, 370);
	assert_int_equal(p->info.end_ms, BOOT_MS + 2000);
	assert_int_equal(ptree_job(&pt)->user_ms, 60 + 370 + 30);

	/* the parent ends; the sibling, asleep, now has the subreaper as parent */
	remove_proc(32);
	put_proc(33, ANCESTOR, "sibling", 'S', 3, 0, 1000, 320, 0);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 3000), 0);
	p = find(&pt, 33);
	assert_true(p->alive);
	assert_int_equal(p->info.ppid, ANCESTOR);
	assert_false(find(&pt, 32)->alive);
	ptree_release(&pt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_tree_and_totals, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_all_but_kernel_threads, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lazy_refresh, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pid_reuse_and_vanishing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reaped_by_ancestor, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_parent_and_worker_end_together, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_skip_until_it_runs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_skip_with_threads, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fd_budget, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_skipped_child_ends, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
