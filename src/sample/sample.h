/*
 * sample.h - what one tick records about a job and its processes.
 *
 * These are the values the store keeps and the report is built from; the
 * process tree sampler (ptree.h) produces them live, the store reader
 * replays them.  Units: times in ms (CPU times are cumulative), sizes in
 * bytes, I/O in cumulative bytes.  A value whose bit is clear in `valid` is
 * missing (unreadable or not provided by this kernel), never 0.
 */
#ifndef JOBSCOPE_SAMPLE_H
#define JOBSCOPE_SAMPLE_H

#include <stdbool.h>
#include <stdint.h>

#include "proc.h"

/* Identity and description of one process: (pid, start_ms) is unique. */
struct proc_info {
	int32_t pid;
	int32_t ppid;
	int64_t start_ms; /* process start, ms since the epoch */
	uint32_t uid;
	char comm[PROC_COMM_MAX];
	char cmdline[PROC_CMDLINE_MAX];
	int64_t end_ms; /* 0 while alive */
};

enum proc_sample_valid {
	PS_RSS = 1u << 0,
	PS_HWM = 1u << 1,
	PS_SWAP = 1u << 2,
	PS_IO = 1u << 3,
	PS_THREADS = 1u << 4,
	PS_CPU_WAIT = 1u << 5, /* cpu_wait_ms: schedstat's run-queue wait of its threads */
};

/* One process at one tick. */
struct proc_sample {
	uint32_t valid; /* enum proc_sample_valid; CPU times are always valid */
	char state;
	uint32_t threads;
	uint64_t user_ms;
	uint64_t system_ms;
	uint64_t child_user_ms; /* reaped children, from stat's cutime */
	uint64_t child_system_ms;
	uint64_t rss_bytes;
	uint64_t hwm_bytes; /* peak RSS so far (VmHWM, or ru_maxrss at exit) */
	uint64_t swap_bytes;
	uint64_t read_bytes; /* storage bytes, from io */
	uint64_t write_bytes;
	/* time its threads (those alive now) spent runnable, waiting for a CPU */
	uint64_t cpu_wait_ms;
};

enum job_sample_valid {
	JS_IO = 1u << 0, /* at least one process's io was readable */
	JS_SWAP = 1u << 1,
	JS_CG_CPU = 1u << 2,	  /* cg_cpu_ms: the job's cgroup (agent) */
	JS_CG_MEM = 1u << 3,	  /* cg_mem_bytes */
	JS_CG_MEM_PEAK = 1u << 4, /* cg_mem_peak_bytes */
	JS_CPU_WAIT = 1u << 5,	  /* cpu_wait_ms: at least one process's threads' wait was read */
};

/*
 * A whole job (process tree) at one tick.  cpu and I/O are cumulative over
 * the job's life, including processes that already exited; rss and swap
 * are sums over the processes alive at the tick.
 */
struct job_sample {
	uint32_t valid; /* enum job_sample_valid */
	uint32_t nprocs;
	uint64_t user_ms;
	uint64_t system_ms;
	uint64_t rss_bytes;
	uint64_t swap_bytes;
	uint64_t read_bytes;
	uint64_t write_bytes;
	uint64_t sampler_cpu_ms; /* jobscope's own CPU time so far */
	/* from the job's cgroup, when it has one: exact, exited processes included */
	uint64_t cg_cpu_ms;	    /* cumulative */
	uint64_t cg_mem_bytes;	    /* memory charged now (page cache included) */
	uint64_t cg_mem_peak_bytes; /* its peak so far */
	/*
	 * cumulative: time its processes' threads spent runnable, waiting for a
	 * CPU (schedstat), the ended ones' included as far as they were seen
	 */
	uint64_t cpu_wait_ms;
};

/* Something that happened at a point in time. */
struct event_record {
	int64_t ts_ms;
	char kind[32]; /* "exit", "signal", "timeout", "lost_samples", ... */
	int32_t pid;   /* 0 when not about a process */
	int64_t value;
	char message[256];
	int32_t gpu; /* the GPU's index when has_gpu */
	bool has_gpu;
};

#endif
