/*
 * app.h - `jobscope run`'s StatsD receiver (app/statsd.h): a UDP
 * port on 127.0.0.1 the kernel picks and a Unix datagram socket in a
 * private directory, named to the command through STATSD_HOST,
 * STATSD_PORT and JOBSCOPE_STATSD_SOCKET.  Every line is the run's job's;
 * each tick's points and markers are stored in the tick's transaction.
 * When the environment already named a StatsD server (STATSD_HOST and
 * STATSD_PORT), what arrives is relayed to it as well, so the job's
 * metrics still reach the site's own collector.
 *
 * Nothing here stops a run: a socket that cannot be made is logged and
 * the run goes on without app metrics.
 */
#ifndef JOBSCOPE_RUN_APP_H
#define JOBSCOPE_RUN_APP_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include "app/statsd.h"

struct store;

struct run_app {
	bool on;
	struct app_collector col;
	struct app_agg agg;
	char dir[256]; /* the Unix socket's directory ("" when none) */
	char port[8];  /* the UDP port, as text for the environment */
	int relay_fd;  /* connected to the environment's StatsD server; -1: none */
	char relay_to[300];
	int64_t now_ms; /* the time lines are received at (the loop's) */
	bool marked;	/* a marker came with the last datagrams: cut the tick there */
};

void run_app_init(struct run_app *a);
/* Opens the sockets (and the relay); a failure leaves a->on false, logged. */
void run_app_setup(struct run_app *a);
size_t run_app_fds(const struct run_app *a, struct pollfd *fds, size_t max);
/*
 * Reads the ready sockets.  When a marker came, what was aggregated so far
 * (the marker included) is stored at once under job_id at the marker's
 * time, in a transaction of its own: the lines sent before a marker belong
 * to the phase it ends, however short, not to the tick it falls in.
 */
void run_app_handle(struct run_app *a, const struct pollfd *fds, size_t n, int64_t now_ms,
		    struct store *st, int64_t job_id);
/* Reads what is queued (the command has ended), without waiting. */
void run_app_drain(struct run_app *a, int64_t now_ms);
/*
 * Stores the tick's points and markers under job_id at ts_ms, inside the
 * tick's transaction.  The aggregator starts the next tick empty either
 * way: what a rolled-back tick loses goes with the tick's other rows (the
 * run's lost_samples event counts the ticks).
 */
int run_app_put(struct run_app *a, struct store *st, int64_t job_id, int64_t ts_ms);
void run_app_release(struct run_app *a);

#endif
