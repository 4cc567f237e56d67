/*
 * rollup.h - min/avg/max rollups: what the agent keeps of a series once its
 * raw samples are past retention.
 *
 * A series (node, entity, entity id, metric) has one accumulator per tier:
 * 1 minute and 1 hour.  A value goes into the open bucket of each tier; a
 * value in a later bucket closes the open one, which is written as one row
 * of the store's rollups table (store_put_rollup).  Missing values (NAN)
 * are left out: they are not 0.  A bucket written in two parts (a restart)
 * is merged by the store (its avg weighted by each part's n).
 *
 * A value may carry a weight (rollup_add_w): the avg is then sum(v w) /
 * sum(w), n still the count of values.  The GPU's activity figures (GPM's,
 * each an average over the interval since the device's previous reading)
 * are weighted by that interval in seconds: a time-weighted average over
 * the readings that had the figure.  The throttle series are the seconds
 * held back for the reason in each reading's interval (the difference of
 * the violation counter; one that went backwards was reset and counts
 * from 0), unweighted: a bucket's seconds are avg x n, exact, also across
 * the store's merge.
 *
 * rollup_acc_add(_w), rollup_acc_record, rollup_gpu_values and
 * rollup_period_add are pure (unit tests, no store);
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
	double min, max;
	double sum;  /* of value x weight (1 unless rollup_acc_add_w) */
	double wsum; /* of the weights */
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
	/* enum gpu_prof's activity, percent, time-weighted */
	ROLLUP_GPU_GR_ACTIVE_PCT,
	ROLLUP_GPU_SM_ACTIVE_PCT,
	ROLLUP_GPU_SM_OCCUPANCY_PCT,
	ROLLUP_GPU_TENSOR_ACTIVE_PCT,
	ROLLUP_GPU_DRAM_ACTIVE_PCT,
	ROLLUP_GPU_FP64_ACTIVE_PCT,
	ROLLUP_GPU_FP32_ACTIVE_PCT,
	ROLLUP_GPU_FP16_ACTIVE_PCT,
	/* seconds held back per reading's interval, by violation counter */
	ROLLUP_GPU_THROTTLE_POWER_S,
	ROLLUP_GPU_THROTTLE_THERMAL_S,
	ROLLUP_GPU_THROTTLE_SYNC_BOOST_S,
	ROLLUP_GPU_THROTTLE_BOARD_LIMIT_S,
	ROLLUP_GPU_THROTTLE_LOW_UTIL_S,
	ROLLUP_GPU_THROTTLE_RELIABILITY_S,
	ROLLUP_GPU_THROTTLE_APP_CLOCKS_S,
	ROLLUP_GPU_THROTTLE_BASE_CLOCKS_S,
	ROLLUP_GPU_THROTTLE_SW_THERMAL_S,
	ROLLUP_GPU_THROTTLE_HW_THERMAL_S,
	ROLLUP_GPU_THROTTLE_HW_POWER_BRAKE_S,
	ROLLUP_GPU__COUNT
};
extern const char *const rollup_host_metric_names[ROLLUP_HOST__COUNT];
extern const char *const rollup_job_metric_names[ROLLUP_JOB__COUNT];
extern const char *const rollup_gpu_metric_names[ROLLUP_GPU__COUNT];

/*
 * A GPU's rollup values of one reading, by enum rollup_gpu_metric (NAN:
 * missing), and the weight of each: cur the reading, prev the device's
 * previous one (NULL: none), dt_ms the time between them.  Utilization,
 * memory and power weigh 1; an activity figure dt_ms / 1000 (NAN without
 * a previous reading: no interval to weigh it by); a throttle series is
 * (cur - prev) / 1e9 s of its counter, cur / 1e9 when the counter went
 * backwards, NAN unless both readings have it.
 */
struct rollup_gpu_values {
	double v[ROLLUP_GPU__COUNT];
	double w[ROLLUP_GPU__COUNT];
};
void rollup_gpu_values(const struct gpu_sample *cur, const struct gpu_sample *prev, int64_t dt_ms,
		       struct rollup_gpu_values *out);

/*
 * v at ts_ms into one tier's accumulator (bucket length tier_ms).  Returns
 * true when v falls in a later bucket than the open one: *closed then
 * receives the bucket that closed (to be written), and acc holds v alone.
 * NAN changes nothing and returns false.
 */
bool rollup_acc_add(struct rollup_acc *acc, int64_t tier_ms, int64_t ts_ms, double v,
		    struct rollup_acc *closed);
/* The same with weight w (> 0; else, or NAN, v is left out). */
bool rollup_acc_add_w(struct rollup_acc *acc, int64_t tier_ms, int64_t ts_ms, double v, double w,
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
/* The same with weight w (rollup_acc_add_w). */
int rollup_add_w(struct store *st, const struct rollup_series *s,
		 struct rollup_acc acc[ROLLUP_TIERS], int64_t ts_ms, double v, double w);
/*
 * Writes the open bucket of tier t (if any) and empties it: a job that
 * ended, or the agent's exit (partial buckets merge on restart).
 */
int rollup_flush(struct store *st, const struct rollup_series *s, struct rollup_acc *acc, int t);

/*
 * Reading them back (a history over months): the rows of tier tier_ms
 * whose buckets start in [since_ms, until_ms), of one entity kind, entity
 * id and metric (NULL / -1: any), by node, entity, id, metric and time;
 * fn's non-zero stops and is returned.  The record's strings live until fn
 * returns.  A store older than schema 3 has none.  0 or -errno.
 */
struct rollup_query {
	int64_t tier_ms;
	int64_t since_ms, until_ms;
	const char *entity; /* NULL: any */
	int64_t entity_id;  /* -1: any */
	const char *metric; /* NULL: any */
};
int store_for_each_rollup(struct store *st, const struct rollup_query *q,
			  int (*fn)(const struct rollup_record *r, void *arg), void *arg);

/*
 * A period made of one series' buckets (zero-init, then each row): n
 * values in all, their min and max, total the sum of avg x n (a throttle
 * series' seconds held back in the period, exactly), avg total / n (an
 * activity series' average over the period: each bucket's time-weighted
 * average weighted by its values, the time weighting itself when the
 * ticks were evenly spaced).
 */
struct rollup_period {
	int64_t n;
	double min, max, total, avg;
};
void rollup_period_add(struct rollup_period *p, const struct rollup_record *r);

#endif
