/*
 * app.c - `jobscope run`'s StatsD receiver (app.h).
 */
#include "run/app.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "store/store.h"
#include "store/jobdata.h"

void run_app_init(struct run_app *a)
{
	memset(a, 0, sizeof(*a));
	app_collector_init(&a->col);
	app_agg_init(&a->agg);
	a->relay_fd = -1;
}

/*
 * A socket connected to $STATSD_HOST:$STATSD_PORT when both are set: the
 * job's lines go there too.  Failing to resolve it is a warning.
 */
static void setup_relay(struct run_app *a)
{
	const char *host = getenv("STATSD_HOST"), *port = getenv("STATSD_PORT");
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM};
	struct addrinfo *res = NULL;
	int rc;

	if (!host || !*host || !port || !*port)
		return;
	snprintf(a->relay_to, sizeof(a->relay_to), "%.200s:%.20s", host, port);
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc) {
		log_warn(0, "StatsD: cannot relay to $STATSD_HOST:$STATSD_PORT (%s): %s",
			 a->relay_to, gai_strerror(rc));
		return;
	}
	a->relay_fd = socket(res->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a->relay_fd >= 0 && connect(a->relay_fd, res->ai_addr, res->ai_addrlen) < 0) {
		log_warn(-errno, "StatsD: cannot relay to %s", a->relay_to);
		close(a->relay_fd);
		a->relay_fd = -1;
	}
	freeaddrinfo(res);
	if (a->relay_fd >= 0)
		log_info(
		    "StatsD: the command's lines are relayed to %s ($STATSD_HOST:$STATSD_PORT)",
		    a->relay_to);
}

void run_app_setup(struct run_app *a)
{
	const char *tmp = getenv("TMPDIR");
	char path[300];
	int ret;

	setup_relay(a);
	ret = app_collector_open_udp(&a->col, "127.0.0.1", 0);
	if (ret) {
		log_warn(ret, "StatsD: no UDP port for the command's app metrics");
		return;
	}
	snprintf(a->port, sizeof(a->port), "%u", (unsigned)a->col.udp_port);
	snprintf(a->dir, sizeof(a->dir), "%.200s/jobscope-statsd-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(a->dir)) {
		log_warn(-errno, "StatsD: cannot make a directory for the socket in %s (UDP only)",
			 tmp && *tmp ? tmp : "/tmp");
		a->dir[0] = '\0';
	} else {
		snprintf(path, sizeof(path), "%s/statsd.sock", a->dir);
		ret = app_collector_open_unix(&a->col, path, false);
		if (ret)
			log_warn(ret, "StatsD: no Unix socket for the command (UDP only)");
	}
	a->on = true;
}

size_t run_app_fds(const struct run_app *a, struct pollfd *fds, size_t max)
{
	return a->on ? app_collector_fds(&a->col, fds, max) : 0;
}

static void on_datagram(void *arg, const char *data, size_t len, int32_t pid)
{
	struct run_app *a = arg;
	size_t marks = a->agg.nmarks;

	app_agg_feed(&a->agg, data, len, pid, a->now_ms);
	a->marked |= a->agg.nmarks > marks;
	if (a->relay_fd >= 0 && send(a->relay_fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
	    errno != EAGAIN && errno != ECONNREFUSED) {
		log_warn(-errno, "StatsD: relaying to %s stopped", a->relay_to);
		close(a->relay_fd);
		a->relay_fd = -1;
	}
}

void run_app_handle(struct run_app *a, const struct pollfd *fds, size_t n, int64_t now_ms,
		    struct store *st, int64_t job_id)
{
	if (!a->on)
		return;
	a->now_ms = now_ms;
	app_collector_handle(&a->col, fds, n, on_datagram, a);
	if (a->marked) {
		a->marked = false;
		run_app_put(a, st, job_id, now_ms); /* a failure is the store's to say */
	}
}

void run_app_drain(struct run_app *a, int64_t now_ms)
{
	if (!a->on)
		return;
	a->now_ms = now_ms;
	app_collector_drain(&a->col, on_datagram, a);
}

int run_app_put(struct run_app *a, struct store *st, int64_t job_id, int64_t ts_ms)
{
	struct app_point *pts = NULL;
	struct app_mark *marks = NULL;
	size_t npts = 0, nmarks = 0;
	int ret = 0;

	if (!a->on)
		return 0;
	app_agg_take(&a->agg, &pts, &npts, &marks, &nmarks);
	if (npts)
		ret = store_put_app_points(st, job_id, ts_ms, pts, npts);
	if (!ret && nmarks)
		ret = store_put_app_marks(st, job_id, marks, nmarks);
	for (size_t i = 0; i < npts; i++)
		app_point_release(&pts[i]);
	free(pts);
	free(marks);
	return ret;
}

void run_app_release(struct run_app *a)
{
	if (a->agg.bad_lines || a->agg.dropped)
		log_info(
		    "StatsD: %llu line%s received, %llu not valid, %llu over the caps (dropped)",
		    (unsigned long long)a->agg.lines, a->agg.lines == 1 ? "" : "s",
		    (unsigned long long)a->agg.bad_lines, (unsigned long long)a->agg.dropped);
	app_collector_release(&a->col);
	app_agg_release(&a->agg);
	if (a->relay_fd >= 0)
		close(a->relay_fd);
	if (a->dir[0])
		rmdir(a->dir);
	a->relay_fd = -1;
	a->dir[0] = '\0';
}
