/*
 * test_app_collect.c - the StatsD sockets (src/app/collect.c) on real
 * sockets: a Unix datagram socket whose senders' pids come from the
 * kernel (a forked child's pid checked), UDP on 127.0.0.1 with the port
 * the kernel picked, truncated datagrams, stale and foreign socket files,
 * the handle bound, and statsd_send with each environment variable.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <cmocka.h>

#include "app/statsd.h"

#define MAX_GOT 64

struct got {
	size_t n;
	char data[MAX_GOT][256];
	size_t len[MAX_GOT];
	int32_t pid[MAX_GOT];
};

static void on_datagram(void *arg, const char *data, size_t len, int32_t pid)
{
	struct got *g = arg;

	if (g->n < MAX_GOT) {
		size_t keep = len < 255 ? len : 255;

		memcpy(g->data[g->n], data, keep);
		g->data[g->n][keep] = '\0';
		g->len[g->n] = len;
		g->pid[g->n] = pid;
	}
	g->n++;
}

static char dir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/js-app-collect-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

/* Polls the collector until want datagrams came (5 s at most). */
static void wait_for(struct app_collector *c, struct got *g, size_t want)
{
	for (int i = 0; i < 500 && g->n < want; i++) {
		struct pollfd fds[2];
		size_t n = app_collector_fds(c, fds, 2);

		if (poll(fds, n, 10) > 0)
			app_collector_handle(c, fds, n, on_datagram, g);
	}
	assert_int_equal(g->n, want);
}

static void send_unix_from(const char *path, const char *msg)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	strcpy(sun.sun_path, path);
	assert_true(fd >= 0);
	assert_int_equal(sendto(fd, msg, strlen(msg), 0, (struct sockaddr *)&sun, sizeof(sun)),
			 (ssize_t)strlen(msg));
	close(fd);
}

static void test_unix_pids(void **state)
{
	struct app_collector c;
	struct got g = {0};
	char path[128];
	struct stat st;
	pid_t child;
	int status;

	(void)state;
	snprintf(path, sizeof(path), "%s/statsd.sock", dir);
	app_collector_init(&c);
	assert_int_equal(app_collector_open_unix(&c, path, false), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(c.udp_fd, -1);

	send_unix_from(path, "parent:1|c");
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

		strcpy(sun.sun_path, path);
		_exit(sendto(fd, "child:1|c", 9, 0, (struct sockaddr *)&sun, sizeof(sun)) == 9 ? 0
											       : 1);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	wait_for(&c, &g, 2);
	assert_string_equal(g.data[0], "parent:1|c");
	assert_int_equal(g.pid[0], getpid());
	assert_string_equal(g.data[1], "child:1|c");
	assert_int_equal(g.pid[1], child);
	assert_int_equal(c.datagrams, 2);
	assert_int_equal(c.bytes, 19);

	/* a live receiver's socket is not taken over */
	{
		struct app_collector other;

		app_collector_init(&other);
		assert_int_equal(app_collector_open_unix(&other, path, true), -EADDRINUSE);
		app_collector_release(&other);
	}
	app_collector_release(&c);
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(errno, ENOENT);
}

static void test_unix_stale_and_foreign(void **state)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct app_collector c;
	struct got g = {0};
	char path[128];
	struct stat st;
	int fd;

	(void)state;
	/* a socket file whose receiver is gone: replaced */
	snprintf(path, sizeof(path), "%s/stale.sock", dir);
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
	app_collector_init(&c);
	assert_int_equal(app_collector_open_unix(&c, path, true), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0666);
	send_unix_from(path, "x:1|c");
	wait_for(&c, &g, 1);
	assert_int_equal(g.pid[0], getpid());
	assert_int_equal(app_collector_open_unix(&c, path, true), -EBUSY);
	app_collector_release(&c);

	/* a file that is not a socket: never removed */
	snprintf(path, sizeof(path), "%s/plain", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	app_collector_init(&c);
	assert_int_equal(app_collector_open_unix(&c, path, false), -EEXIST);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	app_collector_release(&c);
	assert_int_equal(stat(path, &st), 0);
	/* too long a path */
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(app_collector_open_unix(&c, path, false), -ENAMETOOLONG);
}

static void test_unix_truncated(void **state)
{
	struct app_collector c;
	struct got g = {0};
	char path[128];
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	size_t big = APP_DGRAM_MAX + 1000;
	char *msg = malloc(big);
	int fd, sndbuf = 1 << 20;

	(void)state;
	snprintf(path, sizeof(path), "%s/trunc.sock", dir);
	app_collector_init(&c);
	assert_int_equal(app_collector_open_unix(&c, path, false), 0);
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	memset(msg, 'a', big);
	memcpy(msg, "first:1|c\n", 10);
	if (sendto(fd, msg, big, 0, (struct sockaddr *)&sun, sizeof(sun)) != (ssize_t)big) {
		close(fd);
		free(msg);
		app_collector_release(&c);
		skip(); /* wmem_max too small for a datagram this long here */
	}
	close(fd);
	/* drain: nothing is waited for */
	app_collector_drain(&c, on_datagram, &g);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.len[0], APP_DGRAM_MAX);
	assert_memory_equal(g.data[0], "first:1|c\n", 10);
	app_collector_drain(&c, on_datagram, &g);
	assert_int_equal(g.n, 1);
	free(msg);
	app_collector_release(&c);
}

static void test_udp(void **state)
{
	struct app_collector c;
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct got g = {0};
	int fd;

	(void)state;
	app_collector_init(&c);
	assert_int_equal(app_collector_open_udp(&c, "not-an-address", 0), -EINVAL);
	assert_int_equal(app_collector_open_udp(&c, "127.0.0.1", 0), 0);
	assert_true(c.udp_port > 0);
	assert_int_equal(c.unix_fd, -1);
	sin.sin_port = htons(c.udp_port);
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	for (int i = 0; i < 3; i++) {
		char msg[32];
		int n = snprintf(msg, sizeof(msg), "udp:%d|c", i);

		assert_int_equal(
		    sendto(fd, msg, (size_t)n, 0, (struct sockaddr *)&sin, sizeof(sin)), n);
	}
	close(fd);
	wait_for(&c, &g, 3);
	for (int i = 0; i < 3; i++) {
		char want[32];

		snprintf(want, sizeof(want), "udp:%d|c", i);
		assert_string_equal(g.data[i], want);
		assert_int_equal(g.pid[i], 0);
	}
	/* the same port again: taken */
	{
		struct app_collector other;

		app_collector_init(&other);
		assert_int_equal(app_collector_open_udp(&other, "127.0.0.1", c.udp_port),
				 -EADDRINUSE);
		app_collector_release(&other);
	}
	app_collector_release(&c);
}

/*
 * A flood is read in batches: one handle call returns after 10,000
 * datagrams (when the receive queue held more), drain takes the rest.
 */
static void test_handle_bound(void **state)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct app_collector c;
	struct got g = {0};
	struct pollfd fds[2];
	size_t n, first;
	int fd;

	(void)state;
	app_collector_init(&c);
	assert_int_equal(app_collector_open_udp(&c, "127.0.0.1", 0), 0);
	sin.sin_port = htons(c.udp_port);
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	for (int i = 0; i < 12000; i++)
		assert_int_equal(sendto(fd, "f", 1, 0, (struct sockaddr *)&sin, sizeof(sin)), 1);
	close(fd);
	n = app_collector_fds(&c, fds, 2);
	assert_int_equal(n, 1);
	assert_int_equal(poll(fds, n, 1000), 1);
	app_collector_handle(&c, fds, n, on_datagram, &g);
	first = g.n;
	app_collector_drain(&c, on_datagram, &g);
	/* what the queue held depends on the kernel's limits: at most 12,000 */
	print_message("%zu of 12000 datagrams were queued\n", g.n);
	assert_true(g.n > 0 && g.n <= 12000);
	assert_int_equal(first, g.n < 10000 ? g.n : 10000);
	assert_int_equal(c.datagrams, g.n);
	app_collector_release(&c);
}

static void test_send(void **state)
{
	struct app_collector c;
	struct got g = {0};
	char path[128], where[160], port[16], want[180];

	(void)state;
	snprintf(path, sizeof(path), "%s/send.sock", dir);
	app_collector_init(&c);
	assert_int_equal(app_collector_open_unix(&c, path, false), 0);
	assert_int_equal(app_collector_open_udp(&c, "127.0.0.1", 0), 0);
	snprintf(port, sizeof(port), "%u", c.udp_port);

	/* the socket first */
	setenv("JOBSCOPE_STATSD_SOCKET", path, 1);
	setenv("STATSD_HOST", "127.0.0.1", 1);
	setenv("STATSD_PORT", port, 1);
	assert_int_equal(statsd_send("a:1|c", 5, where, sizeof(where)), 0);
	snprintf(want, sizeof(want), "unix:%s", path);
	assert_string_equal(where, want);
	wait_for(&c, &g, 1);
	assert_string_equal(g.data[0], "a:1|c");
	assert_int_equal(g.pid[0], getpid());

	/* then STATSD_HOST / STATSD_PORT, a name resolved */
	setenv("JOBSCOPE_STATSD_SOCKET", "", 1);
	setenv("STATSD_HOST", "localhost", 1);
	assert_int_equal(statsd_send("b:2|c", 5, where, sizeof(where)), 0);
	snprintf(want, sizeof(want), "udp:localhost:%s", port);
	assert_string_equal(where, want);
	unsetenv("JOBSCOPE_STATSD_SOCKET");
	setenv("STATSD_HOST", "127.0.0.1", 1);
	assert_int_equal(statsd_send("c:3|c", 5, where, sizeof(where)), 0);
	/* localhost may resolve to ::1 first, where nobody listens: c:3 must come */
	for (int i = 0; i < 500 && (g.n < 2 || strcmp(g.data[g.n - 1], "c:3|c") != 0); i++) {
		struct pollfd fds[2];
		size_t n = app_collector_fds(&c, fds, 2);

		if (poll(fds, n, 10) > 0)
			app_collector_handle(&c, fds, n, on_datagram, &g);
	}
	assert_string_equal(g.data[g.n - 1], "c:3|c");
	assert_int_equal(g.pid[g.n - 1], 0);

	/* bad ports; the default says where it goes */
	setenv("STATSD_PORT", "99999", 1);
	assert_int_equal(statsd_send("d:1|c", 5, where, sizeof(where)), -EINVAL);
	setenv("STATSD_PORT", "12ab", 1);
	assert_int_equal(statsd_send("d:1|c", 5, where, sizeof(where)), -EINVAL);
	unsetenv("STATSD_HOST");
	unsetenv("STATSD_PORT");
	setenv("JOBSCOPE_STATSD_SOCKET", "/nonexistent/dir/sock", 1);
	assert_true(statsd_send("d:1|c", 5, where, sizeof(where)) < 0);
	assert_string_equal(where, "unix:/nonexistent/dir/sock");
	unsetenv("JOBSCOPE_STATSD_SOCKET");
	/* the default: 127.0.0.1:8125 (UDP: the send succeeds, heard or not) */
	assert_int_equal(statsd_send("d:1|c", 5, where, sizeof(where)), 0);
	assert_string_equal(where, "udp:127.0.0.1:8125");
	app_collector_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unix_pids),	   cmocka_unit_test(test_unix_stale_and_foreign),
	    cmocka_unit_test(test_unix_truncated), cmocka_unit_test(test_udp),
	    cmocka_unit_test(test_handle_bound),   cmocka_unit_test(test_send),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
