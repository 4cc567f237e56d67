/*
 * rollup.c - min/avg/max accumulators over the 1-minute and 1-hour tiers,
 * and the rows they write (store_put_rollup).  See rollup.h.
 */
#include "store/rollup.h"
#include "store/write.h"

#include <math.h>

const int64_t rollup_tier_ms[ROLLUP_TIERS] = {60000, 3600000};

const char *const rollup_host_metric_names[ROLLUP_HOST__COUNT] = {
    "cpu_busy_pct",   "mem_used_bytes", "load1",      "disk_read_bps",
    "disk_write_bps", "net_rx_bps",	"net_tx_bps",
};
const char *const rollup_job_metric_names[ROLLUP_JOB__COUNT] = {"cpu_cores", "rss_bytes",
								"read_bps", "write_bps"};
const char *const rollup_gpu_metric_names[ROLLUP_GPU__COUNT] = {"util_pct", "mem_used_bytes",
								"power_w"};

bool rollup_acc_add(struct rollup_acc *acc, int64_t tier_ms, int64_t ts_ms, double v,
		    struct rollup_acc *closed)
{
	int64_t bucket = ts_ms - ts_ms % tier_ms;
	bool did_close = false;

	if (isnan(v))
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
	}
	acc->n++;
	acc->sum += v;
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
	out->avg = acc->n ? acc->sum / (double)acc->n : 0;
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
	int ret = 0;

	for (int t = 0; t < ROLLUP_TIERS; t++) {
		struct rollup_acc closed;
		int r;

		if (!rollup_acc_add(&acc[t], rollup_tier_ms[t], ts_ms, v, &closed))
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
