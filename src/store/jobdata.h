/*
 * jobdata.h - what is kept with a job besides its samples: its CUDA tables
 * (cuda.c), its app metrics and markers (app.c), the host's energy
 * counters (energy.c) and the libraries its processes loaded (libs.c),
 * each written and read back.  Errors and threads: store.h.
 */
#ifndef JOBSCOPE_STORE_JOBDATA_H
#define JOBSCOPE_STORE_JOBDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app/appstat.h"
#include "cuda/cudastat.h"
#include "store/store.h"

/*
 * CUDA tables (cuda.c, schema 9: cuda_procs and cuda_stats): each process's
 * newest snapshot of what the CUDA hook counted (cuda/cudastat.h), kept
 * with the job for ever, like its summary.  pid 0 is the job's own row:
 * its state and message are the job's note (no stats).
 *
 * put: replaces the (job, pid) row and all its stats with p's, at once:
 * in the tick's transaction when one is open (store_tick_begin: committed
 * or rolled back with the tick), else in a transaction of its own.  The
 * row takes the next fact seq, so the agent's batches to a head carry the
 * snapshots that changed (export.c) and the head puts them in turn
 * (ingest.c: the newest replaces the older).  Stats
 * of one kind and name given twice are merged (cuda_stat_merge).  Counts
 * and sizes are kept bit for bit (an INTEGER column holds a uint64_t
 * above 2^63 as negative; read back it is the same).  -EPROTONOSUPPORT
 * on a store older than schema 9, -EINVAL for a pid below 0.
 *
 * get: every process of the job, by pid (NULL and 0 when none, also in a
 * store older than schema 9); the caller frees each with
 * cuda_proc_release and the array with free.  A row of a kind or state
 * this version does not know is skipped (a stat) or read as "error".
 */
int store_put_cuda_proc(struct store *st, int64_t job_id, const struct cuda_proc *p,
			int64_t now_ms);
int store_get_cuda_procs(struct store *st, int64_t job_id, struct cuda_proc **procs,
			 size_t *nprocs);

/*
 * App metrics and markers (app.c, schema 10: app_samples; marks, schema 1).
 *
 * put_app_points: one row per point, all at ts_ms (the tick's time), each
 * taking the next fact seq; in the tick's transaction when one is open
 * (store_tick_begin), else in one of its own.  A point with count 0 is
 * not stored.  -EPROTONOSUPPORT on a store older than schema 10.
 * put_app_marks: one marks row each (name, text; value NULL).
 *
 * for_each_app_point: the job's rows with from_ms <= ts_ms < to_ms (0,
 * INT64_MAX: all), by ts_ms then name, type, tags; fn's non-zero stops
 * and is returned.  A row whose type or sketch this version cannot read is
 * skipped.  get_app_marks: the job's markers by time (NULL and 0 when
 * none, also on an older store); free the array with free.
 */
int store_put_app_points(struct store *st, int64_t job_id, int64_t ts_ms,
			 const struct app_point *pts, size_t n);
int store_put_app_marks(struct store *st, int64_t job_id, const struct app_mark *marks, size_t n);
int store_for_each_app_point(struct store *st, int64_t job_id, int64_t from_ms, int64_t to_ms,
			     int (*fn)(void *arg, int64_t ts_ms, const struct app_point *p),
			     void *arg);
int store_get_app_marks(struct store *st, int64_t job_id, struct app_mark **marks, size_t *n);

/*
 * Host energy (energy.c, schema 10: energy_samples): each RAPL zone's
 * cumulative counter at a tick, in uJ, with the value it wraps at (0:
 * unknown).  get: the node's samples with from_ms <= ts_ms < to_ms, by
 * zone then time; free the array with free.
 */
struct store_energy_sample {
	int64_t ts_ms;
	char zone[64]; /* "package-0", "package-0/dram", "psys" ... */
	uint64_t energy_uj;
	uint64_t max_uj;
};
int store_put_energy_samples(struct store *st, int64_t node_id, const struct store_energy_sample *s,
			     size_t n);
int store_get_energy_samples(struct store *st, int64_t node_id, int64_t from_ms, int64_t to_ms,
			     struct store_energy_sample **out, size_t *n);

/*
 * Libraries and frameworks a process loaded (libs.c, schema 10: proc_libs),
 * one row per (process, name) when first seen.  get: a job's, distinct by
 * name and version, with the number of its processes that loaded each.
 */
struct store_proc_lib {
	char name[64];	  /* "pytorch", "cuda-runtime", "nccl", ... */
	char version[64]; /* "" when unknown */
	char path[256];	  /* the file it was seen in */
	int64_t nprocs;	  /* get: processes of the job that loaded it */
};
int store_put_proc_libs(struct store *st, int64_t proc_id, int64_t ts_ms,
			const struct store_proc_lib *libs, size_t n);
int store_get_job_libs(struct store *st, int64_t job_id, struct store_proc_lib **out, size_t *n);

#endif
