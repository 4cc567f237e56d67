/*
 * test_procev.c - the process events connector: the parser on datagrams
 * built here (a process's fork, a thread's, other events, a cut message;
 * the ends of processes with their times), a child's end dated live,
 * and, as root, a scan of every process on the real kernel that learns of a
 * new process from its events without listing /proc and accounts it to its
 * end with the exact CPU its parent reaped.
 */
#include <errno.h>
#include <setjmp.h>
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

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include "sample/procev.h"
#include "sample/ptree.h"

/*
 * A datagram: header, connector message, event, back to back (as a struct,
 * cn_msg's flexible array would sit mid-struct, which clang refuses).
 */
#define DG_MSG (sizeof(struct nlmsghdr))
#define DG_EV  (DG_MSG + sizeof(struct cn_msg))
#define DG_LEN (DG_EV + sizeof(struct proc_event))

static size_t put_event(unsigned char *buf, unsigned what, int32_t pid, int32_t tgid)
{
	struct nlmsghdr hdr;
	struct cn_msg msg;
	struct proc_event ev;

	memset(&hdr, 0, sizeof(hdr));
	memset(&msg, 0, sizeof(msg));
	memset(&ev, 0, sizeof(ev));
	hdr.nlmsg_len = DG_LEN;
	hdr.nlmsg_type = NLMSG_DONE;
	msg.id.idx = CN_IDX_PROC;
	msg.id.val = CN_VAL_PROC;
	msg.len = sizeof(ev);
	ev.what = what;
	ev.event_data.fork.parent_pid = 1;
	ev.event_data.fork.parent_tgid = 1;
	ev.event_data.fork.child_pid = pid;
	ev.event_data.fork.child_tgid = tgid;
	memset(buf, 0, NLMSG_ALIGN(DG_LEN));
	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + DG_MSG, &msg, sizeof(msg));
	memcpy(buf + DG_EV, &ev, sizeof(ev));
	return NLMSG_ALIGN(DG_LEN);
}

/* A process's (pid == tgid) or a thread's end, stamped ns. */
static size_t put_exit(unsigned char *buf, int32_t pid, int32_t tgid, uint64_t ns)
{
	struct proc_event ev;
	size_t len = put_event(buf, PROC_EVENT_EXIT, 0, 0);

	memcpy(&ev, buf + DG_EV, sizeof(ev));
	memset(&ev.event_data, 0, sizeof(ev.event_data));
	ev.timestamp_ns = ns;
	ev.event_data.exit.process_pid = pid;
	ev.event_data.exit.process_tgid = tgid;
	memcpy(buf + DG_EV, &ev, sizeof(ev));
	return len;
}

static void set_u32(unsigned char *at, uint32_t v)
{
	memcpy(at, &v, sizeof(v));
}

static int32_t seen[8];
static size_t nseen;

static void on_pid(int32_t pid, void *arg)
{
	(void)arg;
	if (nseen < 8)
		seen[nseen++] = pid;
}

static void test_parse(void **state)
{
	unsigned char buf[1024];
	size_t len = 0;

	(void)state;
	nseen = 0;
	len += put_event(buf + len, PROC_EVENT_FORK, 4242, 4242);
	len += put_event(buf + len, PROC_EVENT_FORK, 4243, 4242); /* a thread */
	len += put_event(buf + len, PROC_EVENT_EXIT, 4242, 4242);
	len += put_event(buf + len, PROC_EVENT_EXEC, 4244, 4244);
	len += put_event(buf + len, PROC_EVENT_FORK, 77, 77);
	assert_int_equal(procev_parse(buf, len, on_pid, NULL), 0);
	assert_int_equal(nseen, 2);
	assert_int_equal(seen[0], 4242);
	assert_int_equal(seen[1], 77);

	/* cut anywhere: what is whole is read, nothing past len */
	for (size_t cut = 0; cut < DG_LEN; cut++) {
		nseen = 0;
		procev_parse(buf, cut, on_pid, NULL);
		assert_int_equal(nseen, 0);
	}
	/* another connector's message, a length that lies */
	nseen = 0;
	len = put_event(buf, PROC_EVENT_FORK, 5, 5);
	set_u32(buf + DG_MSG + offsetof(struct cn_msg, id.idx), CN_IDX_PROC + 1);
	assert_int_equal(procev_parse(buf, len, on_pid, NULL), 1);
	put_event(buf, PROC_EVENT_FORK, 5, 5);
	set_u32(buf + offsetof(struct nlmsghdr, nlmsg_len), 4000);
	assert_int_equal(procev_parse(buf, len, on_pid, NULL), 1);
	assert_int_equal(nseen, 0);
}

static int32_t exit_pid[8];
static int64_t exit_ns[8];
static size_t nexit;

static void on_exit_event(int32_t pid, int64_t ns, void *arg)
{
	(void)arg;
	if (nexit < 8) {
		exit_pid[nexit] = pid;
		exit_ns[nexit++] = ns;
	}
}

/* The ends of processes with the kernel's time; threads' ends and forks are not ends. */
static void test_parse_exits(void **state)
{
	unsigned char buf[1024];
	size_t len = 0;

	(void)state;
	nseen = nexit = 0;
	len += put_exit(buf + len, 4242, 4242, 123456789);
	len += put_exit(buf + len, 4243, 4242, 5); /* a thread */
	len += put_event(buf + len, PROC_EVENT_FORK, 77, 77);
	len += put_exit(buf + len, 88, 88, 987654321012);
	assert_int_equal(procev_parse_events(buf, len, NULL, on_exit_event, NULL), 0);
	assert_int_equal(nexit, 2);
	assert_int_equal(exit_pid[0], 4242);
	assert_int_equal(exit_ns[0], 123456789);
	assert_int_equal(exit_pid[1], 88);
	assert_int_equal(exit_ns[1], 987654321012);
	assert_int_equal(nseen, 0);
	/* both at once */
	nexit = 0;
	assert_int_equal(procev_parse_events(buf, len, on_pid, on_exit_event, NULL), 0);
	assert_int_equal(nseen, 1);
	assert_int_equal(nexit, 2);
	for (size_t cut = 0; cut < DG_LEN; cut++) {
		nexit = 0;
		procev_parse_events(buf, cut, NULL, on_exit_event, NULL);
		assert_int_equal(nexit, 0);
	}
}

/* As root: a child's end, gathered by procev_open_exits, within the parent's watch of it. */
static void test_live_exit_time(void **state)
{
	struct procev ev;
	struct timespec t0, t1;
	int64_t ns = -1;
	pid_t child;
	int status;

	(void)state;
	procev_init(&ev);
	if (procev_open_exits(&ev) != 0)
		skip(); /* not root */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, &status, 0), child);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* the event may be queued a moment after the wait returns: a deadline, not a sleep */
	for (int i = 0; i < 500 && ns < 0; i++) {
		assert_int_equal(procev_drain(&ev), 0);
		for (size_t k = 0; k < ev.nexits; k++)
			if (ev.exits[k].pid == child)
				ns = ev.exits[k].mono_ns;
		if (ns < 0)
			usleep(10000);
	}
	assert_true(ns >= (int64_t)t0.tv_sec * 1000000000 + t0.tv_nsec);
	assert_true(ns <= (int64_t)t1.tv_sec * 1000000000 + t1.tv_nsec);
	procev_close(&ev);
}

static uint64_t self_cutime_ticks(void)
{
	char text[1024], *p;
	unsigned long long v[4];
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n;

	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	p = strrchr(text, ')');
	assert_non_null(p);
	/* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime */
	assert_int_equal(sscanf(p + 2,
				"%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
				&v[0], &v[1], &v[2], &v[3]),
			 4);
	return v[2] + v[3];
}

static void burn_cpu_ms(long ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

/* Until process pid sleeps (state S in its stat), 30 s at most (a deadline: a loaded machine). */
static void wait_asleep(pid_t pid)
{
	char path[64], buf[512];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 3000; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		const char *paren;

		if (f)
			fclose(f);
		buf[n] = '\0';
		paren = strrchr(buf, ')');
		if (paren && paren[1] == ' ' && paren[2] == 'S')
			return;
		usleep(10000);
	}
	fail_msg("process %d never slept", (int)pid);
}

static void test_live_events(void **state)
{
	struct ptree pt;
	struct ptree_proc *p;
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t cutime0, cutime1;
	int go[2], status;
	pid_t child;
	char c = 0;

	(void)state;
	ptree_init_all(&pt, hz, 0);
	if (ptree_watch_events(&pt) != 0) {
		ptree_release(&pt);
		skip(); /* not root: the scans list /proc, tested elsewhere */
	}
	assert_int_equal(ptree_scan(&pt, 1000), 0);
	assert_int_equal(pt.listings, 1);

	assert_int_equal(pipe(go), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		burn_cpu_ms(60);
		_exit(0);
	}
	close(go[0]);
	/* found from its fork event, /proc not listed again */
	assert_int_equal(ptree_scan(&pt, 2000), 0);
	assert_int_equal(pt.listings, 1);
	p = ptree_find(&pt, child);
	assert_non_null(p);
	assert_true(p->emit);

	/*
	 * asleep on the pipe: its stat is not read.  On a loaded machine the
	 * child may still have been running towards its read() at the scan
	 * above: once it sleeps, one scan takes in what it used meanwhile.
	 */
	wait_asleep(child);
	assert_int_equal(ptree_scan(&pt, 2500), 0);
	assert_int_equal(ptree_scan(&pt, 3000), 0);
	assert_true(pt.stat_skips > 0);
	assert_false(ptree_find(&pt, child)->emit);

	/* it runs, ends and is reaped between two scans */
	cutime0 = self_cutime_ticks();
	assert_int_equal(write(go[1], &c, 1), 1);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cutime1 = self_cutime_ticks();
	assert_int_equal(ptree_scan(&pt, 4000), 0);
	assert_int_equal(pt.listings, 1);
	p = ptree_find_recent(&pt, child);
	assert_non_null(p);
	assert_false(p->alive);
	assert_true(p->emit);
	assert_int_equal(p->info.end_ms, 4000);
	assert_true(cutime1 > cutime0);
	assert_int_equal(p->cur.user_ms + p->cur.system_ms, (cutime1 - cutime0) * 1000 / hz);
	close(go[1]);
	ptree_release(&pt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_parse_exits),
	    cmocka_unit_test(test_live_exit_time),
	    cmocka_unit_test(test_live_events),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
