/*
 * test_taskiter.c - the kernel's task iterator: the parser on records built
 * here (threads added to their process, a thread whose leader is gone, an
 * order the kernel does not give, a cut record); as root, on the real
 * kernel, its figures of children this test made against what /proc says of
 * each of their threads, and a scan of every process through it that does
 * not read the stat of a sleeping process of three threads, and does once
 * a thread of it ran.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/types.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sample/proc.h"
#include "sample/procev.h"
#include "sample/ptree.h"
#include "sample/taskiter.h"
#include "sample/taskiter_rec.h"

static struct taskiter_rec rec(int32_t tgid, int32_t tid, uint64_t run, uint64_t wait,
			       uint64_t start)
{
	struct taskiter_rec r;

	memset(&r, 0, sizeof(r));
	r.tgid = tgid;
	r.tid = tid;
	r.run_ns = run;
	r.wait_ns = wait;
	r.start_ns = start;
	return r;
}

static void test_parse(void **state)
{
	struct taskiter_rec recs[] = {
	    rec(10, 10, 100, 7, 5000), rec(10, 11, 20, 1, 0), rec(20, 20, 3, 0, 6000),
	    rec(10, 12, 5, 2, 0),      rec(99, 98, 9, 9, 0), /* its leader is not listed */
	    rec(15, 15, 1, 1, 5500),			     /* out of order */
	};
	struct taskiter ti;
	const struct taskiter_proc *p;

	(void)state;
	taskiter_init(&ti);
	assert_int_equal(taskiter_parse(&ti, recs, sizeof(recs)), 0);
	assert_int_equal(ti.nprocs, 3);
	assert_int_equal(ti.procs[0].pid, 10);
	assert_int_equal(ti.procs[1].pid, 15);
	assert_int_equal(ti.procs[2].pid, 20);
	p = taskiter_find(&ti, 10);
	assert_non_null(p);
	assert_int_equal(p->threads, 3);
	assert_int_equal(p->run_ns, 125);
	assert_int_equal(p->wait_ns, 10);
	assert_int_equal(p->start_ns, 5000);
	p = taskiter_find(&ti, 20);
	assert_non_null(p);
	assert_int_equal(p->threads, 1);
	assert_int_equal(p->run_ns, 3);
	assert_int_equal(p->start_ns, 6000);
	assert_non_null(taskiter_find(&ti, 15));
	assert_null(taskiter_find(&ti, 99));
	assert_null(taskiter_find(&ti, 11)); /* a thread is not a process */
	assert_null(taskiter_find(&ti, 0));

	/* a cut record: refused, nothing read past len */
	assert_int_equal(taskiter_parse(&ti, recs, sizeof(recs) - 1), -EINVAL);
	/* nothing: no process */
	assert_int_equal(taskiter_parse(&ti, recs, 0), 0);
	assert_int_equal(ti.nprocs, 0);
	assert_null(taskiter_find(&ti, 10));
	taskiter_close(&ti);
}

static void test_turned_off(void **state)
{
	struct taskiter ti;

	(void)state;
	taskiter_init(&ti);
	setenv("JOBSCOPE_NO_BPF", "1", 1);
	assert_int_equal(taskiter_open(&ti), -ENOTSUP);
	unsetenv("JOBSCOPE_NO_BPF");
	assert_int_equal(ti.fd, -1);
	assert_int_equal(taskiter_read(&ti), -EBADF);
	/* no libbpf: the loader child says so, and nothing is kept */
	setenv("JOBSCOPE_LIBBPF_LIBRARY", "/nonexistent/libbpf.so.1", 1);
	if (geteuid() == 0 && procev_pid_ns_is_first())
		assert_int_equal(taskiter_open(&ti), -ENOENT);
	unsetenv("JOBSCOPE_LIBBPF_LIBRARY");
	assert_int_equal(ti.fd, -1);
	taskiter_close(&ti);
}

/* ---- live, as root ---- */

static void burn_cpu_ms(long ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

static int wake_fd = -1; /* the child's threads block reading it */

static void *child_thread(void *arg)
{
	char c;

	burn_cpu_ms((long)(intptr_t)arg);
	while (read(wake_fd, &c, 1) == 1)
		burn_cpu_ms(30); /* one thread a byte: it runs, then sleeps again */
	return NULL;
}

/*
 * A child of three threads that each burn some CPU, then sleep reading a
 * pipe; `ready` gets a byte once they are all started.
 */
static pid_t start_child(int *wake_write)
{
	int wake[2], ready[2];
	pid_t pid;
	char c = 0;

	assert_int_equal(pipe(wake), 0);
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t t[2];

		close(wake[1]);
		close(ready[0]);
		wake_fd = wake[0];
		for (int i = 0; i < 2; i++)
			if (pthread_create(&t[i], NULL, child_thread,
					   (void *)(intptr_t)(20 + 10 * i)))
				_exit(1);
		burn_cpu_ms(10);
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		child_thread((void *)(intptr_t)0);
		_exit(0);
	}
	close(wake[0]);
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	*wake_write = wake[1];
	return pid;
}

static void stop_child(pid_t pid, int wake_write)
{
	int status;

	close(wake_write);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

/* What /proc says of pid's threads: their run and wait summed, and how many. */
struct threads_sum {
	uint64_t run_ns, wait_ns;
	uint32_t threads;
	bool asleep; /* every thread in S */
};

static struct threads_sum proc_threads(pid_t pid)
{
	struct threads_sum s = {0, 0, 0, true};
	char path[128], buf[512];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	assert_non_null(dir);
	while ((d = readdir(dir)) != NULL) {
		unsigned long long run, wait;
		const char *paren;
		FILE *f;
		size_t n;

		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/schedstat", (int)pid, d->d_name);
		f = fopen(path, "r");
		assert_non_null(f);
		assert_int_equal(fscanf(f, "%llu %llu", &run, &wait), 2);
		fclose(f);
		s.run_ns += run;
		s.wait_ns += wait;
		s.threads++;
		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/stat", (int)pid, d->d_name);
		f = fopen(path, "r");
		assert_non_null(f);
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		paren = strrchr(buf, ')');
		if (!paren || paren[1] != ' ' || paren[2] != 'S')
			s.asleep = false;
	}
	closedir(dir);
	return s;
}

/* Until every thread of pid sleeps and stays asleep across two readings; 30 s at most. */
static struct threads_sum wait_asleep(pid_t pid, uint32_t threads)
{
	for (int i = 0; i < 3000; i++) {
		struct threads_sum a = proc_threads(pid), b;

		usleep(10000);
		b = proc_threads(pid);
		if (a.asleep && b.asleep && a.threads == threads && a.run_ns == b.run_ns &&
		    a.wait_ns == b.wait_ns)
			return b;
	}
	fail_msg("process %d never slept", (int)pid);
	return proc_threads(pid);
}

static void test_live_matches_proc(void **state)
{
	struct taskiter ti;
	const struct taskiter_proc *p;
	struct threads_sum before, after;
	struct proc_reader reader;
	struct proc_stat st;
	long hz = sysconf(_SC_CLK_TCK);
	int wake;
	pid_t child;

	(void)state;
	taskiter_init(&ti);
	if (taskiter_open(&ti) != 0)
		skip(); /* not root, or no BPF here: ptree reads schedstat, tested elsewhere */
	child = start_child(&wake);
	before = wait_asleep(child, 3);
	assert_int_equal(taskiter_read(&ti), 0);
	after = proc_threads(child);
	p = taskiter_find(&ti, child);
	assert_non_null(p);
	/* asleep throughout: the kernel's figures did not move while read twice */
	assert_int_equal(before.run_ns, after.run_ns);
	assert_int_equal(p->threads, 3);
	assert_int_equal(p->run_ns, after.run_ns);
	assert_int_equal(p->wait_ns, after.wait_ns);
	assert_true(p->run_ns >= 60 * 1000000ull); /* 10 + 20 + 30 ms burnt, at least */
	proc_reader_init(&reader, hz);
	assert_int_equal(proc_read_stat(&reader, child, &st), 0);
	assert_int_equal(p->start_ns / (1000000000ull / (uint64_t)hz), st.start_ticks);
	/* this process too, and no thread counted as a process */
	assert_non_null(taskiter_find(&ti, getpid()));
	for (size_t i = 0; i < ti.nprocs; i++)
		assert_true(ti.procs[i].threads >= 1);

	/* ended and reaped: gone from the next read */
	stop_child(child, wake);
	assert_int_equal(taskiter_read(&ti), 0);
	assert_null(taskiter_find(&ti, child));
	proc_reader_release(&reader);
	taskiter_close(&ti);
}

static struct ptree_scan_entry *scan_entry(struct ptree *pt, pid_t pid)
{
	for (size_t i = 0; i < pt->nscan; i++)
		if (pt->scan[i].pid == pid)
			return &pt->scan[i];
	return NULL;
}

static void test_live_scan_skips_sleeping_threads(void **state)
{
	struct ptree pt;
	struct ptree_scan_entry *e;
	struct ptree_proc *p;
	struct threads_sum s;
	struct proc_reader reader;
	struct proc_stat st;
	long hz = sysconf(_SC_CLK_TCK);
	int64_t ts = 1000;
	int wake;
	pid_t child;
	char c = 1;

	(void)state;
	ptree_init_all(&pt, hz, 0);
	if (ptree_watch_tasks(&pt) != 0) {
		ptree_release(&pt);
		skip(); /* not root, or no BPF here */
	}
	child = start_child(&wake);
	s = wait_asleep(child, 3);
	assert_int_equal(ptree_scan(&pt, ts += 100), 0);
	e = scan_entry(&pt, child);
	assert_non_null(e);
	assert_true(e->all_threads);
	assert_int_equal(e->threads, 3);
	/*
	 * asleep, every thread: the next scans copy its stat (a process of
	 * three threads: before the iterator, its stat was read every tick)
	 */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ptree_scan(&pt, ts += 100), 0);
		e = scan_entry(&pt, child);
		assert_non_null(e);
		if (proc_threads(child).run_ns == s.run_ns)
			assert_true(e->stat_copied);
	}
	p = ptree_find(&pt, child);
	assert_non_null(p);
	/* every thread's run-queue wait, without /proc/PID/task */
	assert_true(p->cur.valid & PS_CPU_WAIT);
	assert_int_equal(p->cur.cpu_wait_ms, proc_threads(child).wait_ns / 1000000);

	/* one of its threads runs 30 ms: the next scan reads its stat, and its CPU */
	assert_int_equal(write(wake, &c, 1), 1);
	s = wait_asleep(child, 3);
	assert_int_equal(ptree_scan(&pt, ts += 100), 0);
	e = scan_entry(&pt, child);
	assert_non_null(e);
	assert_false(e->stat_copied);
	assert_int_equal(e->run_ns, s.run_ns);
	proc_reader_init(&reader, hz);
	assert_int_equal(proc_read_stat(&reader, child, &st), 0);
	p = ptree_find(&pt, child);
	assert_int_equal(p->cur.user_ms + p->cur.system_ms,
			 proc_ticks_to_ms(&reader, st.utime_ticks) +
			     proc_ticks_to_ms(&reader, st.stime_ticks));
	assert_true(p->cur.user_ms + p->cur.system_ms >= 60);
	proc_reader_release(&reader);
	stop_child(child, wake);
	ptree_release(&pt);
}

/* A read that fails lists /proc for that scan; ten in a row, for good. */
static void test_live_failed_reads(void **state)
{
	struct ptree pt;
	long hz = sysconf(_SC_CLK_TCK);
	int64_t ts = 1000;
	int real;

	(void)state;
	ptree_init_all(&pt, hz, 0);
	if (ptree_watch_tasks(&pt) != 0) {
		ptree_release(&pt);
		skip(); /* not root, or no BPF here */
	}
	assert_int_equal(ptree_scan(&pt, ts += 100), 0);
	assert_int_equal(pt.listings, 0);
	assert_non_null(ptree_find(&pt, getpid()));
	/* not an iterator's link: BPF_ITER_CREATE refuses it */
	real = pt.tasks.fd;
	pt.tasks.fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(pt.tasks.fd >= 0);
	assert_int_equal(ptree_scan(&pt, ts += 100), 0);
	assert_int_equal(pt.listings, 1); /* /proc listed instead */
	assert_int_equal(pt.tasks_failed, 1);
	assert_non_null(ptree_find(&pt, getpid()));
	close(pt.tasks.fd);
	pt.tasks.fd = real;
	assert_int_equal(ptree_scan(&pt, ts += 100), 0);
	assert_int_equal(pt.listings, 1); /* the iterator again */
	assert_int_equal(pt.tasks_failed, 0);
	/* ten in a row: closed, and /proc from then on */
	pt.tasks.fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	for (int i = 0; i < PTREE_TASKS_MAX_FAILED; i++)
		assert_int_equal(ptree_scan(&pt, ts += 100), 0);
	assert_int_equal(pt.tasks.fd, -1);
	assert_int_equal(pt.listings, 1 + PTREE_TASKS_MAX_FAILED);
	assert_int_equal(ptree_scan(&pt, ts += 100), 0);
	assert_non_null(ptree_find(&pt, getpid()));
	close(real);
	ptree_release(&pt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_turned_off),
	    cmocka_unit_test(test_live_matches_proc),
	    cmocka_unit_test(test_live_scan_skips_sleeping_threads),
	    cmocka_unit_test(test_live_failed_reads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
