/*
 * cudatables.h - the CUDA tables of a job as Nsight Systems prints them
 * (`nsys nvprof`): CUDA API, kernels, and memory operations (by time and by
 * size), for the job (every process's rows of one kind and name merged,
 * cuda_stat_merge) and for each process, with what is derived from them:
 * each row's share of its table's time, a kernel's share of the job's wall
 * time, a memory operation's bandwidth.  Built from the store's snapshots
 * (store_get_cuda_procs), or from snapshots at hand.
 *
 * Ownership: the tables own the processes they were built from; a row's
 * stat is a copy whose name points into them (valid until
 * cuda_tables_release).  cuda_tables_init cannot fail; build and load
 * return 0 or -errno (-ENOMEM; store errors printed); after a failure the
 * tables are as init left them.  Missing values are NAN.  Not thread-safe.
 */
#ifndef JOBSCOPE_CUDATABLES_H
#define JOBSCOPE_CUDATABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda/cudastat.h"
#include "store/store.h"
#include "store/jobdata.h"

/* Nsight's three tables; memcpy and memset rows share the memory one. */
enum cuda_table_id {
	CUDA_TABLE_API,
	CUDA_TABLE_KERNEL,
	CUDA_TABLE_MEM,
	CUDA_TABLES,
};

struct cuda_table_row {
	struct cuda_stat s;	  /* its name is the tables' processes' */
	double time_pct;	  /* of its table's total time; NAN when that is 0 */
	double wall_pct;	  /* kernels: total time over the job's wall time; NAN else */
	double avg_ns, stddev_ns; /* stddev: sample (n - 1), 0 for one */
	/* memory operations (NAN for the others) */
	double avg_bytes, stddev_bytes;
	double gb_per_s; /* bytes / total_ns: GB/s; NAN when total_ns is 0 */
};

struct cuda_table {
	struct cuda_table_row *rows; /* by total_ns, largest first, then by name */
	size_t nrows;
	uint64_t total_ns;
	size_t *by_size; /* memory table: row indexes by bytes, largest first, then name */
};

/* One set of the three tables: the job's, or a process's. */
struct cuda_table_set {
	const struct cuda_proc *proc; /* NULL for the job's */
	struct cuda_table t[CUDA_TABLES];
	uint64_t total_ns; /* of the three tables */
};

#define CUDA_NOTE_MAX 320
struct cuda_tables {
	bool present;	/* anything stored for the job */
	double wall_ns; /* the job's wall time; NAN when not known */
	struct cuda_table_set job;
	/* the processes (pid above 0), by pid, each with its tables */
	struct cuda_proc *procs;
	struct cuda_table_set *sets;
	size_t nprocs;
	size_t *by_time; /* sets' indexes by total_ns, largest first, then by pid */
	const struct cuda_proc *job_proc; /* pid 0's row (the job's note), or NULL */
	/* what a reader must know first: the job's note, processes not ok, records dropped */
	char (*notes)[CUDA_NOTE_MAX];
	size_t nnotes;
};

void cuda_tables_init(struct cuda_tables *t);
void cuda_tables_release(struct cuda_tables *t);
/*
 * Builds t (released first) from nprocs snapshots in any order, taking them
 * over: the array (malloc'd) and each proc are the tables' after the call,
 * whatever it returns.  wall_ms: the job's wall time, 0 when not known.
 */
int cuda_tables_build(struct cuda_tables *t, struct cuda_proc *procs, size_t nprocs,
		      int64_t wall_ms);
/* The same from a job's rows in the store (none: present is false). */
int cuda_tables_load(struct cuda_tables *t, struct store *st, int64_t job_id, int64_t wall_ms);
/* The table of a kind (memcpy and memset: CUDA_TABLE_MEM). */
enum cuda_table_id cuda_table_of(enum cuda_stat_kind kind);

#endif
