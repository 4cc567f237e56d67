/*
 * rollup.h - min/avg/max rollups: what the agent keeps of a series once its
 * raw samples are past retention.
 *
 * A series (node, entity, entity id, metric) has one accumulator per tier:
 * 1 minute and 1 hour.  A value goes into the open bucket of each tier; a
 * value in a later bucket closes the open one, which is written as one row
 * of the store's rollups table (store_put_rollup).  Missing values (NAN)
 * are left out: they are not 0.  A bucket written in two parts (a restart)
 * is merged by the store.
 *
 * rollup_acc_add and rollup_acc_record are pure (unit tests, no store);
 * rollup_add and rollup_flush write through the store and return 0 or the
 * store's -errno.  The caller owns the accumulators.  Not thread-safe.
 */
#ifndef JOBSCOPE_ROLLUP_H
#define JOBSCOPE_ROLLUP_H

#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"
#include "store/write.h"

#define ROLLUP_TIERS 2

/* the tiers' bucket lengths: 1 minute, 1 hour */
extern const int64_t rollup_tier_ms[ROLLUP_TIERS];

/* min/avg/max over one bucket of a tier */
struct rollup_acc {
	int64_t bucket_ms; /* start of the open bucket, 0 if none */
	int64_t n;	   /* values in it; 0: no open bucket */
	double min, max, sum;
};

/* Which series a rollup row is of: the row's key in the store. */
struct rollup_series {
	int64_t node_id;
	const char *entity; /* "host", "job", "gpu" */
	int64_t entity_id;  /* 0 for the host, the job's or device's row */
	const char *metric;
};

/* The metrics the agent rolls up, by entity, and their names in the store. */
enum rollup_host_metric {
	ROLLUP_HOST_CPU_BUSY_PCT,
	ROLLUP_HOST_MEM_USED_BYTES,
	ROLLUP_HOST_LOAD1,
	ROLLUP_HOST_DISK_READ_BPS,
	ROLLUP_HOST_DISK_WRITE_BPS,
	ROLLUP_HOST_NET_RX_BPS,
	ROLLUP_HOST_NET_TX_BPS,
	ROLLUP_HOST__COUNT
};
enum rollup_job_metric {
	ROLLUP_JOB_CPU_CORES,
	ROLLUP_JOB_RSS_BYTES,
	ROLLUP_JOB_READ_BPS,
	ROLLUP_JOB_WRITE_BPS,
	ROLLUP_JOB__COUNT
};
enum rollup_gpu_metric {
	ROLLUP_GPU_UTIL_PCT,
	ROLLUP_GPU_MEM_USED_BYTES,
	ROLLUP_GPU_POWER_W,
	ROLLUP_GPU__COUNT
};
extern const char *const rollup_host_metric_names[ROLLUP_HOST__COUNT];
extern const char *const rollup_job_metric_names[ROLLUP_JOB__COUNT];
extern const char *const rollup_gpu_metric_names[ROLLUP_GPU__COUNT];

/*
 * v at ts_ms into one tier's accumulator (bucket length tier_ms).  Returns
 * true when v falls in a later bucket than the open one: *closed then
 * receives the bucket that closed (to be written), and acc holds v alone.
 * NAN changes nothing and returns false.
 */
bool rollup_acc_add(struct rollup_acc *acc, int64_t tier_ms, int64_t ts_ms, double v,
		    struct rollup_acc *closed);
/* acc's bucket as the store's row of series s in tier tier_ms. */
void rollup_acc_record(const struct rollup_acc *acc, int64_t tier_ms, const struct rollup_series *s,
		       struct rollup_record *out);

/*
 * v at ts_ms into both tiers of a series (acc[t] for rollup_tier_ms[t]),
 * writing the buckets that closed.  Both tiers take v whatever a write
 * returned; the first error is returned.
 */
int rollup_add(struct store *st, const struct rollup_series *s, struct rollup_acc acc[ROLLUP_TIERS],
	       int64_t ts_ms, double v);
/*
 * Writes the open bucket of tier t (if any) and empties it: a job that
 * ended, or the agent's exit (partial buckets merge on restart).
 */
int rollup_flush(struct store *st, const struct rollup_series *s, struct rollup_acc *acc, int t);

#endif
