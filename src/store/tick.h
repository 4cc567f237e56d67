/*
 * tick.h - the rows of one tick: the host, every process that moved, the
 * GPUs and the processes on them, and the tick's events, written in the
 * transaction of store_tick_begin/commit (store.h).
 *
 * `jobscope run` (one job: the tree under its command) and the agent (a
 * table of live jobs) write a tick the same way but for their job rows:
 * run writes the one job's sample, the agent begins, samples and updates
 * every job, and adds its rollups and the summaries of jobs that ended.
 * So each caller lists the calls, in this order, between begin and commit:
 *
 *	store_tick_put_host, [its job rows: new jobs], store_tick_put_procs,
 *	[job samples], store_tick_put_gpus, store_tick_put_events, [rollups]
 *
 * and after the commit calls store_tick_rows_kept, after an abort
 * store_tick_rows_lost (the process rows first written in the tick are
 * forgotten, so the next tick writes them again).
 *
 * Ownership: struct store_tick_rows only points at the caller's data for
 * the time of the calls.  Errors: 0 or the store's -errno (the tick is
 * then to be aborted).  Not thread-safe.
 */
#ifndef JOBSCOPE_STORE_TICK_H
#define JOBSCOPE_STORE_TICK_H

#include <stdbool.h>
#include <stdint.h>

#include "attrib/jobs.h"
#include "sample/gpu/gpu_set.h"
#include "sample/ptree.h"
#include "store/store.h"
#include "store/write.h"

struct store_tick_rows {
	struct store *st;
	int64_t node_id;
	int64_t ts_ms;
	int64_t tick_no;		/* stamps the process rows first written now */
	const struct host_sample *host; /* NULL: not read this tick */
	struct ptree *pt;
	/*
	 * The job row of each process's rows: its job's in jobs (0 while it
	 * has none), or job_row for all when jobs is NULL.  The events' too.
	 */
	struct jobs *jobs;
	int64_t job_row;
	int ndevices;
	const struct device_record *devs; /* devs[i].id 0: not in the store, left out */
	const struct gpu_sample *gsample;
	const bool *gsample_ok;
	const struct gpu_set_procs *gprocs; /* NULL: none */
	const struct event_record *events;
	size_t nevents;
};

/*
 * Before the first tick: a devices row for each GPU of set, with its vendor
 * and the driver version of its backend, into devs[0 .. set->ndevices).  A
 * device the store refuses keeps id 0 (its samples are then left out).
 */
void store_tick_put_devices(struct store *st, int64_t node_id, const struct gpu_set *set,
			    struct device_record *devs);

int store_tick_put_host(const struct store_tick_rows *t);
/* Every process that emits: its info row when new (or changed), and its sample. */
int store_tick_put_procs(const struct store_tick_rows *t);
/* Each device read that has a row: its sample, then the processes on it. */
int store_tick_put_gpus(const struct store_tick_rows *t);
int store_tick_put_events(const struct store_tick_rows *t);

/*
 * The node's sampling interval changed (or the agent started): an `events`
 * row of kind STORE_EVENT_INTERVAL, job_id NULL, value interval_ms, meaning
 * "from the tick at ts_ms on, the next tick comes interval_ms later"
 * (docs/store.md).  Replaying a job hands the ones of its node to its event
 * callback, so its report judges each sample by the interval in effect.
 * why: the message ("" for none).  Its own transaction, or the caller's.
 */
#define STORE_EVENT_INTERVAL "interval"
/* The longest interval such an event may say; readers ignore other values. */
#define STORE_INTERVAL_MAX_MS (24LL * 3600 * 1000)
int store_tick_put_interval(struct store *st, int64_t node_id, int64_t ts_ms, int64_t interval_ms,
			    const char *why);

/* After the commit: the processes' changed info is stored. */
void store_tick_rows_kept(const struct store_tick_rows *t);
/* After an abort: the process rows first written in this tick do not exist. */
void store_tick_rows_lost(const struct store_tick_rows *t);

#endif
