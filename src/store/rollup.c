/*
 * rollup.c - min/avg/max accumulators over the 1-minute and 1-hour tiers,
 * the rows they write (store_put_rollup), a GPU reading's series
 * (rollup_gpu_values), and the rows read back over a period
 * (store_for_each_rollup, rollup_period_add).  See rollup.h.
 */
#include "store/rollup.h"
#include "store/conn.h"
#include "store/write.h"
#include "sample/figures.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

const int64_t rollup_tier_ms[ROLLUP_TIERS] = {60000, 3600000};

const char *const rollup_host_metric_names[ROLLUP_HOST__COUNT] = {
    "cpu_busy_pct",   "mem_used_bytes", "load1",      "disk_read_bps",
    "disk_write_bps", "net_rx_bps",	"net_tx_bps",
};
const char *const rollup_job_metric_names[ROLLUP_JOB__COUNT] = {"cpu_cores", "rss_bytes",
								"read_bps", "write_bps"};
const char *const rollup_gpu_metric_names[ROLLUP_GPU__COUNT] = {
    [ROLLUP_GPU_UTIL_PCT] = "util_pct",
    [ROLLUP_GPU_MEM_USED_BYTES] = "mem_used_bytes",
    [ROLLUP_GPU_POWER_W] = "power_w",
    [ROLLUP_GPU_GR_ACTIVE_PCT] = "gr_active_pct",
    [ROLLUP_GPU_SM_ACTIVE_PCT] = "sm_active_pct",
    [ROLLUP_GPU_SM_OCCUPANCY_PCT] = "sm_occupancy_pct",
    [ROLLUP_GPU_TENSOR_ACTIVE_PCT] = "tensor_active_pct",
    [ROLLUP_GPU_DRAM_ACTIVE_PCT] = "dram_active_pct",
    [ROLLUP_GPU_FP64_ACTIVE_PCT] = "fp64_active_pct",
    [ROLLUP_GPU_FP32_ACTIVE_PCT] = "fp32_active_pct",
    [ROLLUP_GPU_FP16_ACTIVE_PCT] = "fp16_active_pct",
    [ROLLUP_GPU_THROTTLE_POWER_S] = "throttle_power_s",
    [ROLLUP_GPU_THROTTLE_THERMAL_S] = "throttle_thermal_s",
    [ROLLUP_GPU_THROTTLE_SYNC_BOOST_S] = "throttle_sync_boost_s",
    [ROLLUP_GPU_THROTTLE_BOARD_LIMIT_S] = "throttle_board_limit_s",
    [ROLLUP_GPU_THROTTLE_LOW_UTIL_S] = "throttle_low_util_s",
    [ROLLUP_GPU_THROTTLE_RELIABILITY_S] = "throttle_reliability_s",
    [ROLLUP_GPU_THROTTLE_APP_CLOCKS_S] = "throttle_app_clocks_s",
    [ROLLUP_GPU_THROTTLE_BASE_CLOCKS_S] = "throttle_base_clocks_s",
    [ROLLUP_GPU_THROTTLE_SW_THERMAL_S] = "throttle_sw_thermal_s",
    [ROLLUP_GPU_THROTTLE_HW_THERMAL_S] = "throttle_hw_thermal_s",
    [ROLLUP_GPU_THROTTLE_HW_POWER_BRAKE_S] = "throttle_hw_power_brake_s",
};

/* The activity series: each figure of struct gpu_sample and its bit of prof_valid. */
/* The activity series (sample/figures.h's readers of the fields). */
static const struct {
	enum rollup_gpu_metric m;
	enum gpu_activity a;
} activity[] = {
    {ROLLUP_GPU_GR_ACTIVE_PCT, GPU_ACTIVITY_GR},
    {ROLLUP_GPU_SM_ACTIVE_PCT, GPU_ACTIVITY_SM},
    {ROLLUP_GPU_SM_OCCUPANCY_PCT, GPU_ACTIVITY_SM_OCCUPANCY},
    {ROLLUP_GPU_TENSOR_ACTIVE_PCT, GPU_ACTIVITY_TENSOR},
    {ROLLUP_GPU_DRAM_ACTIVE_PCT, GPU_ACTIVITY_DRAM},
    {ROLLUP_GPU_FP64_ACTIVE_PCT, GPU_ACTIVITY_FP64},
    {ROLLUP_GPU_FP32_ACTIVE_PCT, GPU_ACTIVITY_FP32},
    {ROLLUP_GPU_FP16_ACTIVE_PCT, GPU_ACTIVITY_FP16},
};

/* The throttle series: each violation counter (sample/figures.h), ns. */
static const struct {
	enum rollup_gpu_metric m;
	enum gpu_violation v;
} throttle[] = {
    {ROLLUP_GPU_THROTTLE_POWER_S, GPU_VIOLATION_POWER},
    {ROLLUP_GPU_THROTTLE_THERMAL_S, GPU_VIOLATION_THERMAL},
    {ROLLUP_GPU_THROTTLE_SYNC_BOOST_S, GPU_VIOLATION_SYNC_BOOST},
    {ROLLUP_GPU_THROTTLE_BOARD_LIMIT_S, GPU_VIOLATION_BOARD_LIMIT},
    {ROLLUP_GPU_THROTTLE_LOW_UTIL_S, GPU_VIOLATION_LOW_UTIL},
    {ROLLUP_GPU_THROTTLE_RELIABILITY_S, GPU_VIOLATION_RELIABILITY},
    {ROLLUP_GPU_THROTTLE_APP_CLOCKS_S, GPU_VIOLATION_APP_CLOCKS},
    {ROLLUP_GPU_THROTTLE_BASE_CLOCKS_S, GPU_VIOLATION_BASE_CLOCKS},
    {ROLLUP_GPU_THROTTLE_SW_THERMAL_S, GPU_VIOLATION_SW_THERMAL},
    {ROLLUP_GPU_THROTTLE_HW_THERMAL_S, GPU_VIOLATION_HW_THERMAL},
    {ROLLUP_GPU_THROTTLE_HW_POWER_BRAKE_S, GPU_VIOLATION_HW_POWER_BRAKE},
};
_Static_assert(ROLLUP_GPU_POWER_W + 1 + sizeof(activity) / sizeof(activity[0]) +
		       sizeof(throttle) / sizeof(throttle[0]) ==
		   ROLLUP_GPU__COUNT,
	       "every GPU rollup series is made");

void rollup_gpu_values(const struct gpu_sample *cur, const struct gpu_sample *prev, int64_t dt_ms,
		       struct rollup_gpu_values *out)
{
	for (int m = 0; m < ROLLUP_GPU__COUNT; m++) {
		out->v[m] = NAN;
		out->w[m] = 1;
	}
	if (cur->valid & GPU_UTIL)
		out->v[ROLLUP_GPU_UTIL_PCT] = cur->util_pct;
	if (cur->valid & GPU_MEM_USED)
		out->v[ROLLUP_GPU_MEM_USED_BYTES] = (double)cur->mem_used_bytes;
	if (cur->valid & GPU_POWER)
		out->v[ROLLUP_GPU_POWER_W] = cur->power_mw / 1000.0;
	for (size_t i = 0; i < sizeof(activity) / sizeof(activity[0]); i++) {
		double pct = gpu_activity_pct(cur, activity[i].a);

		if (isnan(pct) || !prev || dt_ms <= 0)
			continue;
		out->v[activity[i].m] = pct;
		out->w[activity[i].m] = (double)dt_ms / 1000.0;
	}
	for (size_t i = 0; i < sizeof(throttle) / sizeof(throttle[0]); i++) {
		uint32_t bit = gpu_violation_kinds[throttle[i].v].prof;
		uint64_t now, before;

		if (!prev || !(cur->prof_valid & bit) || !(prev->prof_valid & bit))
			continue;
		now = gpu_violation_ns(cur, throttle[i].v);
		before = gpu_violation_ns(prev, throttle[i].v);
		/* backwards: the counter was reset (a driver reload), counted from 0 */
		out->v[throttle[i].m] = (double)(now >= before ? now - before : now) / 1e9;
	}
}

bool rollup_acc_add(struct rollup_acc *acc, int64_t tier_ms, int64_t ts_ms, double v,
		    struct rollup_acc *closed)
{
	return rollup_acc_add_w(acc, tier_ms, ts_ms, v, 1, closed);
}

bool rollup_acc_add_w(struct rollup_acc *acc, int64_t tier_ms, int64_t ts_ms, double v, double w,
		      struct rollup_acc *closed)
{
	int64_t bucket = ts_ms - ts_ms % tier_ms;
	bool did_close = false;

	if (isnan(v) || !(w > 0))
		return false;
	if (acc->n > 0 && acc->bucket_ms != bucket) {
		*closed = *acc;
		did_close = true;
		acc->n = 0;
	}
	if (acc->n == 0) {
		acc->bucket_ms = bucket;
		acc->min = acc->max = v;
		acc->sum = 0;
		acc->wsum = 0;
	}
	acc->n++;
	acc->sum += v * w;
	acc->wsum += w;
	if (v < acc->min)
		acc->min = v;
	if (v > acc->max)
		acc->max = v;
	return did_close;
}

void rollup_acc_record(const struct rollup_acc *acc, int64_t tier_ms, const struct rollup_series *s,
		       struct rollup_record *out)
{
	out->tier_ms = tier_ms;
	out->node_id = s->node_id;
	out->entity = s->entity;
	out->entity_id = s->entity_id;
	out->metric = s->metric;
	out->ts_ms = acc->bucket_ms;
	out->n = acc->n;
	out->min = acc->min;
	out->avg = acc->n && acc->wsum > 0 ? acc->sum / acc->wsum : 0;
	out->max = acc->max;
}

static int put(struct store *st, const struct rollup_series *s, const struct rollup_acc *acc, int t)
{
	struct rollup_record r;

	rollup_acc_record(acc, rollup_tier_ms[t], s, &r);
	return store_put_rollup(st, &r);
}

int rollup_add(struct store *st, const struct rollup_series *s, struct rollup_acc acc[ROLLUP_TIERS],
	       int64_t ts_ms, double v)
{
	return rollup_add_w(st, s, acc, ts_ms, v, 1);
}

int rollup_add_w(struct store *st, const struct rollup_series *s,
		 struct rollup_acc acc[ROLLUP_TIERS], int64_t ts_ms, double v, double w)
{
	int ret = 0;

	for (int t = 0; t < ROLLUP_TIERS; t++) {
		struct rollup_acc closed;
		int r;

		if (!rollup_acc_add_w(&acc[t], rollup_tier_ms[t], ts_ms, v, w, &closed))
			continue;
		r = put(st, s, &closed, t);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

int rollup_flush(struct store *st, const struct rollup_series *s, struct rollup_acc *acc, int t)
{
	int ret = 0;

	if (acc->n > 0)
		ret = put(st, s, acc, t);
	acc->n = 0;
	acc->bucket_ms = 0;
	return ret;
}

int store_for_each_rollup(struct store *st, const struct rollup_query *q,
			  int (*fn)(const struct rollup_record *r, void *arg), void *arg)
{
	struct rollup_record r;
	struct db_stmt *stmt;
	char entity[32], metric[64];
	int rc = SQLITE_DONE, ret;

	if (st->schema_version < 3)
		return 0;
	ret =
	    store__prepare(st,
			   "SELECT tier_ms, node_id, entity, entity_id, metric, ts_ms, n, min, avg,"
			   " max FROM rollups WHERE tier_ms = ?1 AND ts_ms >= ?2 AND ts_ms < ?3"
			   " AND (?4 IS NULL OR entity = ?4) AND (?5 < 0 OR entity_id = ?5)"
			   " AND (?6 IS NULL OR metric = ?6)"
			   " ORDER BY node_id, entity, entity_id, metric, ts_ms",
			   "read the rollups", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, q->tier_ms);
	db_bind_int64(stmt, 2, q->since_ms);
	db_bind_int64(stmt, 3, q->until_ms);
	if (q->entity)
		db_bind_text(stmt, 4, q->entity, -1, SQLITE_STATIC);
	else
		db_bind_null(stmt, 4);
	db_bind_int64(stmt, 5, q->entity_id);
	if (q->metric)
		db_bind_text(stmt, 6, q->metric, -1, SQLITE_STATIC);
	else
		db_bind_null(stmt, 6);
	while (!ret && (rc = db_step(stmt)) == SQLITE_ROW) {
		const unsigned char *e = db_column_text(stmt, 2), *m = db_column_text(stmt, 4);

		snprintf(entity, sizeof(entity), "%s", e ? (const char *)e : "");
		snprintf(metric, sizeof(metric), "%s", m ? (const char *)m : "");
		r.tier_ms = db_column_int64(stmt, 0);
		r.node_id = db_column_int64(stmt, 1);
		r.entity = entity;
		r.entity_id = db_column_int64(stmt, 3);
		r.metric = metric;
		r.ts_ms = db_column_int64(stmt, 5);
		r.n = db_column_int64(stmt, 6);
		r.min = db_column_type(stmt, 7) == SQLITE_NULL ? NAN : db_column_double(stmt, 7);
		r.avg = db_column_type(stmt, 8) == SQLITE_NULL ? NAN : db_column_double(stmt, 8);
		r.max = db_column_type(stmt, 9) == SQLITE_NULL ? NAN : db_column_double(stmt, 9);
		ret = fn(&r, arg);
	}
	if (!ret && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "read the rollups");
	db_finalize(stmt);
	return ret;
}

void rollup_period_add(struct rollup_period *p, const struct rollup_record *r)
{
	if (r->n <= 0 || isnan(r->avg))
		return;
	if (p->n == 0 || r->min < p->min)
		p->min = r->min;
	if (p->n == 0 || r->max > p->max)
		p->max = r->max;
	p->n += r->n;
	p->total += r->avg * (double)r->n;
	p->avg = p->total / (double)p->n;
}
