/*
 * test_taskstats.c - the taskstats exit listener: the parser on datagrams
 * built here (a single-threaded process's exit, a thread's, the last
 * thread's with the group's record, an older kernel's shorter struct, cut
 * and lying messages), and, as root, a real child's own figures at its exit
 * against what it measured of itself.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>

#include "sample/taskstats.h"

#define FAMILY 0x1d

static struct taskstats_exit seen[8];
static int nseen;

static void on_exit_rec(const struct taskstats_exit *e, void *arg)
{
	(void)arg;
	if (nseen < 8)
		seen[nseen++] = *e;
}

static size_t put_attr(unsigned char *buf, uint16_t type, const void *data, size_t len)
{
	struct nlattr a = {.nla_len = (uint16_t)(NLA_HDRLEN + len), .nla_type = type};

	memcpy(buf, &a, sizeof(a));
	memcpy(buf + NLA_HDRLEN, data, len);
	memset(buf + NLA_HDRLEN + len, 0, NLA_ALIGN(a.nla_len) - a.nla_len);
	return NLA_ALIGN(a.nla_len);
}

/* An aggregate: its id and the first stats_len bytes of ts, nested. */
static size_t put_aggr(unsigned char *buf, uint16_t type, uint16_t id_type, uint32_t id,
		       const struct taskstats *ts, size_t stats_len)
{
	unsigned char inner[sizeof(struct taskstats) + 64];
	size_t n = put_attr(inner, id_type, &id, sizeof(id));

	n += put_attr(inner + n, TASKSTATS_TYPE_STATS, ts, stats_len);
	return put_attr(buf, type | NLA_F_NESTED, inner, n);
}

/* A message: netlink and genl headers, the thread's record, the group's if last. */
static size_t put_exit(unsigned char *buf, const struct taskstats *ts, size_t stats_len,
		       bool with_tgid)
{
	struct nlmsghdr h = {.nlmsg_type = FAMILY};
	struct genlmsghdr g = {.cmd = TASKSTATS_CMD_NEW, .version = 1};
	size_t n = NLMSG_HDRLEN + GENL_HDRLEN;

	n += put_aggr(buf + n, TASKSTATS_TYPE_AGGR_PID, TASKSTATS_TYPE_PID, ts->ac_pid, ts,
		      stats_len);
	if (with_tgid)
		n += put_aggr(buf + n, TASKSTATS_TYPE_AGGR_TGID, TASKSTATS_TYPE_TGID, ts->ac_tgid,
			      ts, stats_len);
	h.nlmsg_len = (uint32_t)n;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + NLMSG_HDRLEN, &g, sizeof(g));
	return NLMSG_ALIGN(n);
}

static struct taskstats stats(uint32_t pid, uint32_t tgid, uint32_t ppid, const char *comm)
{
	struct taskstats ts;

	memset(&ts, 0, sizeof(ts));
	ts.version = TASKSTATS_VERSION;
	ts.ac_pid = pid;
	ts.ac_tgid = tgid;
	ts.ac_ppid = ppid;
	snprintf(ts.ac_comm, sizeof(ts.ac_comm), "%s", comm);
	ts.ac_utime = 123456;
	ts.ac_stime = 7890;
	ts.ac_etime = 250000;
	ts.hiwater_rss = 20480; /* KB */
	ts.read_bytes = 4096;
	ts.write_bytes = 8192;
	return ts;
}

static void test_parse(void **state)
{
	unsigned char buf[4096];
	struct taskstats a = stats(100, 100, 1, "python3");
	struct taskstats t = stats(201, 200, 1, "worker");
	struct taskstats l = stats(200, 200, 1, "app");
	size_t len = 0;

	(void)state;
	nseen = 0;
	len += put_exit(buf + len, &a, sizeof(a), false);
	len += put_exit(buf + len, &t, sizeof(t), false);
	len += put_exit(buf + len, &l, sizeof(l), true);
	assert_int_equal(taskstats_parse(buf, len, FAMILY, on_exit_rec, NULL), 0);
	assert_int_equal(nseen, 3);
	assert_int_equal(seen[0].pid, 100);
	assert_int_equal(seen[0].tgid, 100);
	assert_int_equal(seen[0].ppid, 1);
	assert_true(seen[0].group_dead); /* single-threaded: its only thread */
	assert_string_equal(seen[0].comm, "python3");
	assert_int_equal(seen[0].user_us, 123456);
	assert_int_equal(seen[0].system_us, 7890);
	assert_int_equal(seen[0].elapsed_us, 250000);
	assert_true(seen[0].has_hiwater);
	assert_int_equal(seen[0].hiwater_rss_bytes, 20480 * 1024);
	assert_true(seen[0].has_io);
	assert_int_equal(seen[0].read_bytes, 4096);
	assert_int_equal(seen[0].write_bytes, 8192);
	/* a thread's exit, the process going on; then its last thread's */
	assert_int_equal(seen[1].pid, 201);
	assert_int_equal(seen[1].tgid, 200);
	assert_false(seen[1].group_dead);
	assert_int_equal(seen[2].pid, 200);
	assert_true(seen[2].group_dead);

	/* another family's message, another command: not ours */
	nseen = 0;
	len = put_exit(buf, &a, sizeof(a), false);
	assert_int_equal(taskstats_parse(buf, len, FAMILY + 1, on_exit_rec, NULL), 1);
	buf[NLMSG_HDRLEN] = TASKSTATS_CMD_GET;
	assert_int_equal(taskstats_parse(buf, len, FAMILY, on_exit_rec, NULL), 1);
	assert_int_equal(nseen, 0);
}

static void test_parse_old_kernel(void **state)
{
	unsigned char buf[4096];
	struct taskstats a = stats(300, 300, 1, "sh");
	size_t len;

	(void)state;
	/* a struct that ends before the memory and I/O fields and before ac_tgid */
	nseen = 0;
	len = put_exit(buf, &a, offsetof(struct taskstats, ac_minflt), false);
	assert_int_equal(taskstats_parse(buf, len, FAMILY, on_exit_rec, NULL), 0);
	assert_int_equal(nseen, 1);
	assert_int_equal(seen[0].tgid, 300);
	assert_int_equal(seen[0].user_us, 123456);
	assert_false(seen[0].has_hiwater);
	assert_false(seen[0].has_io);
}

static void test_parse_cut(void **state)
{
	unsigned char buf[4096];
	struct taskstats a = stats(100, 100, 1, "python3");
	size_t len = put_exit(buf, &a, sizeof(a), false);

	(void)state;
	/* cut anywhere: nothing past len is read, and nothing half-read is reported */
	for (size_t cut = 0; cut < len; cut++) {
		unsigned char *copy = malloc(cut ? cut : 1);

		memcpy(copy, buf, cut);
		nseen = 0;
		taskstats_parse(copy, cut, FAMILY, on_exit_rec, NULL);
		assert_int_equal(nseen, 0);
		free(copy);
	}
	/* a length that lies: the message is longer than the datagram */
	nseen = 0;
	((struct nlmsghdr *)buf)->nlmsg_len = 4000;
	assert_int_equal(taskstats_parse(buf, len, FAMILY, on_exit_rec, NULL), 1);
	assert_int_equal(nseen, 0);
}

static void test_split_cpu(void **state)
{
	uint64_t u = 4000, s = 100000;
	unsigned char buf[4096];
	struct taskstats a = stats(100, 100, 1, "python3");

	(void)state;
	/* the exact total, in the sampled proportion; one side alone takes it all */
	taskstats_split_cpu(119000, &u, &s);
	assert_int_equal(u + s, 119000);
	assert_int_equal(u, 4576);
	u = 0, s = 8000;
	taskstats_split_cpu(9500, &u, &s);
	assert_int_equal(u, 0);
	assert_int_equal(s, 9500);
	u = 8000, s = 0;
	taskstats_split_cpu(9500, &u, &s);
	assert_int_equal(u, 9500);
	assert_int_equal(s, 0);
	/* a message with the scheduler's run time: that is the total */
	a.cpu_run_virtual_total = 140000000; /* ns */
	nseen = 0;
	taskstats_parse(buf, put_exit(buf, &a, sizeof(a), false), FAMILY, on_exit_rec, NULL);
	assert_int_equal(nseen, 1);
	assert_int_equal(seen[0].user_us + seen[0].system_us, 140000);
}

struct live {
	pid_t pid;
	struct taskstats_exit e;
	bool found;
};

static void on_live(const struct taskstats_exit *e, void *arg)
{
	struct live *l = arg;

	if (e->tgid == l->pid) {
		l->e = *e;
		l->found = true;
	}
}

/*
 * A child touches 24 MiB and burns CPU, then tells its own getrusage; the
 * kernel's figures at its exit are its own, whatever wait4 adds.
 */
static void test_live_child(void **state)
{
	struct taskstats_listener ls;
	struct live l = {0};
	struct rusage own, ru;
	int fds[2], status, ret;

	(void)state;
	taskstats_listener_init(&ls);
	ret = taskstats_listener_open(&ls);
	if (ret) {
		printf("# skipped: no taskstats listener (%s)\n", strerror(-ret));
		return;
	}
	assert_int_equal(pipe(fds), 0);
	l.pid = fork();
	assert_true(l.pid >= 0);
	if (l.pid == 0) {
		size_t n = 24u << 20;
		volatile char *m = malloc(n);
		struct timespec t0, t;

		for (size_t i = 0; i < n; i += 4096)
			m[i] = 1;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
		do
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
		while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 100);
		getrusage(RUSAGE_SELF, &own);
		if (write(fds[1], &own, sizeof(own)) != sizeof(own))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &own, sizeof(own)), sizeof(own));
	close(fds[0]);
	assert_int_equal(wait4(l.pid, &status, 0, &ru), l.pid);
	assert_int_equal(taskstats_listener_drain(&ls, on_live, &l), 0);
	taskstats_listener_close(&ls);
	assert_true(l.found);
	assert_true(l.e.group_dead);
	/* its peak: what it saw of itself, give or take the exit path's pages */
	assert_true(l.e.has_hiwater);
	assert_true(l.e.hiwater_rss_bytes >= (uint64_t)own.ru_maxrss * 1024);
	assert_true(l.e.hiwater_rss_bytes <= (uint64_t)own.ru_maxrss * 1024 + (512u << 10));
	printf("# taskstats %llu+%llu us, own getrusage %ld.%06ld+%ld.%06ld, wait4 "
	       "%ld.%06ld+%ld.%06ld\n",
	       (unsigned long long)l.e.user_us, (unsigned long long)l.e.system_us,
	       (long)own.ru_utime.tv_sec, (long)own.ru_utime.tv_usec, (long)own.ru_stime.tv_sec,
	       (long)own.ru_stime.tv_usec, (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
	       (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
	/* its CPU: at least what it had used when it measured, at most what wait4 says */
	assert_true(l.e.user_us + l.e.system_us >=
		    (uint64_t)(own.ru_utime.tv_sec + own.ru_stime.tv_sec) * 1000000 +
			(uint64_t)(own.ru_utime.tv_usec + own.ru_stime.tv_usec));
	assert_true(l.e.user_us + l.e.system_us <=
		    (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
			(uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) + 1000);
	assert_int_equal(l.e.ppid, getpid());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),      cmocka_unit_test(test_parse_old_kernel),
	    cmocka_unit_test(test_parse_cut),  cmocka_unit_test(test_split_cpu),
	    cmocka_unit_test(test_live_child),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
