/*
 * cudastat.h - what the CUDA hook measures in one process: for every CUDA
 * API function, kernel and memory operation, the count and the durations'
 * total, minimum, maximum and spread (and, for memory operations, the same
 * of their sizes), since the process started.  The hook sends a whole
 * snapshot each time (cumulative, so a lost or repeated one loses nothing);
 * the receiver keeps the newest per process; the store keeps it per job and
 * process; analysis merges processes into the job's tables.
 *
 * Units: durations in ns, sizes in bytes.  m2 is the sum of squared
 * deviations from the mean (ns^2, bytes^2): the sample variance is
 * m2 / (count - 1), and two sets merge exactly (cuda_stat_merge, Chan et
 * al.).  A stat owns its name (malloc'd); cuda_stat_release frees it.
 */
#ifndef JOBSCOPE_CUDASTAT_H
#define JOBSCOPE_CUDASTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CUDA_NAME_MAX 4096 /* bytes of a name kept, NUL included (longer: cut) */

enum cuda_stat_kind {
	CUDA_STAT_API,	  /* a runtime or driver API call: name "cudaLaunchKernel" */
	CUDA_STAT_KERNEL, /* a kernel: its demangled name */
	CUDA_STAT_MEMCPY, /* a copy: "[CUDA memcpy HtoD]" ... (Nsight's names) */
	CUDA_STAT_MEMSET, /* "[CUDA memset]" */
	CUDA_STAT_KINDS,
};

struct cuda_stat {
	enum cuda_stat_kind kind;
	char *name;
	uint64_t count;
	uint64_t total_ns, min_ns, max_ns;
	double m2_ns2;
	/* memory operations only (0 for the others) */
	uint64_t bytes, min_bytes, max_bytes;
	double m2_bytes2;
};

/* Why a process has no tables, or "ok". */
enum cuda_proc_state {
	CUDA_PROC_OK,	    /* CUPTI records flow */
	CUDA_PROC_NO_CUPTI, /* libcupti not found or too old */
	CUDA_PROC_BUSY,	    /* another profiler holds CUPTI (nsys, ncu, a framework's) */
	CUDA_PROC_ERROR,    /* CUPTI refused: the message says why */
	CUDA_PROC_OFF,	    /* loaded, but nobody asked for tables */
	CUDA_PROC_STATES,
};

/* One process's newest snapshot. */
struct cuda_proc {
	int32_t pid;
	enum cuda_proc_state state;
	char message[256];	/* for a state other than ok */
	uint32_t cupti_version; /* cuptiGetVersion's; 0: unknown */
	uint32_t contexts;	/* CUDA contexts it created */
	uint64_t dropped;	/* records CUPTI dropped */
	uint64_t seq;		/* snapshot number, from 1 */
	bool final;		/* sent at the process's exit */
	struct cuda_stat *stats;
	size_t nstats, alloc;
};

const char *cuda_stat_kind_name(enum cuda_stat_kind kind); /* "api", "kernel", ... */
int cuda_stat_kind_parse(const char *s, enum cuda_stat_kind *out);
const char *cuda_proc_state_name(enum cuda_proc_state state); /* "ok", "no_cupti", ... */
int cuda_proc_state_parse(const char *s, enum cuda_proc_state *out);

/* Nsight's name of a CUPTI copy kind: "[CUDA memcpy HtoD]"; "[CUDA memcpy Unknown]" else. */
const char *cuda_memcpy_name(unsigned copy_kind);

/* The standard deviation (sample, n - 1) of a stat's durations or sizes; 0 for one. */
double cuda_stat_stddev_ns(const struct cuda_stat *s);
double cuda_stat_stddev_bytes(const struct cuda_stat *s);
/* into += from (same kind and name): counts, totals, extremes and m2 merged. */
void cuda_stat_merge(struct cuda_stat *into, const struct cuda_stat *from);

void cuda_proc_init(struct cuda_proc *p);
void cuda_proc_release(struct cuda_proc *p);
/* A new stat at the end of p's (name copied, cut at CUDA_NAME_MAX); NULL when out of memory. */
struct cuda_stat *cuda_proc_add(struct cuda_proc *p, enum cuda_stat_kind kind, const char *name);
/* Moves src's contents into dst (dst released first); src is left empty. */
void cuda_proc_move(struct cuda_proc *dst, struct cuda_proc *src);

#endif
