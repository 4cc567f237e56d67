/*
 * state.h - what the files of run/ share (not part of the API): the run's
 * state, and the calls between run.c (setup, the tick, the loop, the end),
 * child.c (CMD's environment, its start, reaping, signals, --timeout) and
 * cuda.c (--cuda: the hook's socket and the tables).
 *
 * One thread, one poll() loop over a signalfd (SIGCHLD, forwarded signals)
 * and two timerfds (ticks, --timeout).  Children are reaped with
 * waitid(WNOWAIT) first, so their final CPU and I/O are read from /proc
 * while they are zombies, then with wait4() for the exact rusage.
 */
#ifndef JOBSCOPE_RUN_STATE_H
#define JOBSCOPE_RUN_STATE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "analysis/appsummary.h"
#include "analysis/cudatables.h"
#include "analysis/jobreport.h"
#include "cuda/collect.h"
#include "run/app.h"
#include "sample/gpu/gpu_set.h"
#include "sample/host.h"
#include "sample/ptree.h"
#include "store/store.h"
#include "store/upkeep.h"

struct run_opts; /* run.h */

#define RUN_MAX_GPU_PROCS  4096 /* processes on all GPUs at one tick */
#define RUN_MAX_GPU_EVENTS 64	/* GPU events taken per tick */
#define RUN_CUDA_MIN_MS	   200	/* the CUDA hook's interval: the run's, at least this */
#define RUN_CUDA_FINISH_MS 2000 /* for the hooks' last frames after the tree is gone */
#define RUN_POLL_FDS	   (4 + 2 + 1 + CUDA_COLLECT_MAX_PEERS)
/*
 * taskstats exits read at most this often: a machine's every exit is one message, and
 * waking for each cost 11 times the sampler's CPU at 844 exits/s (bench/exit_cost.py).
 * Dated by the kernel, a second apart (the sockets' buffers hold some 10,000); else
 * dated when read, 20 ms apart.
 */
#define RUN_EXITS_BATCH_MS	 20
#define RUN_EXITS_DATED_BATCH_MS 1000

struct run_state {
	const struct run_opts *opt;
	int64_t exits_read_ns; /* when the taskstats exits were last read (monotonic) */
	struct store *st;
	int64_t node_id;
	struct job_record job;
	struct wallclock wc;
	struct host_sampler hs;
	struct host_sample *host;
	struct ptree pt;
	struct summary sum;
	struct jobseries js;
	struct analysis an;
	struct store_packer packer; /* --pack-after */
	sigset_t orig_mask;
	struct rlimit orig_nofile; /* restored for CMD */
	bool nofile_raised;
	int sigfd, tickfd, timeoutfd;

	pid_t child;
	bool child_done;
	bool no_children;
	bool timed_out;
	bool killed; /* the SIGKILL stage of --timeout has run */
	int64_t timeout_at_ms;

	struct gpu_set gpus;
	struct device_record devs[GPU_MAX_DEVICES];
	struct gpu_sample gsample[GPU_MAX_DEVICES];
	bool gsample_ok[GPU_MAX_DEVICES];
	struct gpu_set_procs gprocs; /* the job's processes on each GPU, and one for the others */
	struct event_record gevents[RUN_MAX_GPU_EVENTS];
	size_t ngevents;

	/* --cuda: the hook's socket, and the run's own note (pid 0) */
	struct cuda_collector cuda;
	struct cuda_proc cuda_note;
	struct cuda_tables cuda_tables; /* read back from the store for the report */
	char cuda_dir[256];
	char cuda_hook[4096];
	int cuda_err; /* the first CUDA snapshot that could not be stored */

	struct run_app app;	    /* StatsD lines and markers from the command */
	struct app_summary app_sum; /* ...read back from the store for the report */

	int64_t tick_no;
	int64_t lost, first_lost_ms, last_lost_ms;
	int64_t last_tick_ms;
	bool event_lost; /* an event not stored: the live summary is not the store's */
	int lost_err;
	bool scan_warned;
};

/* child.c */
/* Starts CMD: 0, or -errno (its exec's, when CMD could not be run). */
int run__spawn(struct run_state *r);
/* Reaps every child that has exited, reading its last values first. */
void run__reap(struct run_state *r);
/* The signalfd is readable: SIGCHLD reaps, the others go to CMD. */
void run__on_signal(struct run_state *r);
/* The --timeout timer fired: SIGTERM to the tree, then SIGKILL. */
void run__on_timeout(struct run_state *r);

/* cuda.c */
/* The hook's socket and CMD's variables; a failure only costs the tables. */
void run__cuda_setup(struct run_state *r);
/* cuda_collector_drain's callback: a process's tables stored under the run. */
int run__cuda_store_proc(void *arg, const struct cuda_proc *p);
/* The hooks' last frames, every table stored, and the run's note. */
void run__cuda_finish(struct run_state *r);
/* The run's CUDA tables as the store holds them (a replay shows the same), or NULL. */
const struct cuda_tables *run__cuda_tables(struct run_state *r);
void run__cuda_release(struct run_state *r);

#endif
