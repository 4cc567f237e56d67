/*
 * report_csv.c - a job's timeline as CSV: one row per overview bucket, a
 * column per metric the job has (units in the names), then per GPU.
 * Missing values are empty fields, never 0.
 */
#include "report/report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "common/timeutil.h"

struct column {
	int gpu; /* -1: a JSM_* metric */
	int metric;
	double *v;
};

static void put_value(struct strbuf *out, double v)
{
	if (isnan(v))
		return;
	if (v == floor(v) && fabs(v) < 1e15)
		strbuf_addf(out, "%.0f", v);
	else
		strbuf_addf(out, "%.6g", v);
}

int report_csv(const struct summary *s, const struct jobseries *js, struct strbuf *out)
{
	struct column cols[JSM__COUNT + JS_MAX_GPUS * JSG__COUNT];
	size_t ncols = 0, n = js->npoints;
	int ret = 0;

	(void)s;
	for (int m = 0; m < JSM__COUNT; m++)
		if (jobseries_has(js, -1, m))
			cols[ncols++] = (struct column){-1, m, NULL};
	for (int g = 0; g < js->ngpus; g++)
		for (int m = 0; m < JSG__COUNT; m++)
			if (jobseries_has(js, g, m))
				cols[ncols++] = (struct column){g, m, NULL};
	for (size_t c = 0; c < ncols; c++) {
		cols[c].v = malloc(JS_POINTS * sizeof(double));
		if (!cols[c].v) {
			ret = -ENOMEM;
			goto out_free;
		}
		jobseries_overview(js, cols[c].gpu, cols[c].metric, cols[c].v);
	}
	strbuf_addstr(out, "time,ts_ms,span_ms");
	for (size_t c = 0; c < ncols; c++) {
		if (cols[c].gpu < 0)
			strbuf_addf(out, ",%s", jobseries_metric_name(cols[c].metric));
		else
			strbuf_addf(out, ",gpu%d_%s", js->gpu[cols[c].gpu]->index,
				    jobseries_gpu_metric_name(cols[c].metric));
	}
	strbuf_addch(out, '\n');
	for (size_t i = 0; i < n; i++) {
		int64_t ts = js->t0_ms + (int64_t)i * js->bucket_ms;
		char when[40];

		format_rfc3339_ms(ts, when, sizeof(when));
		strbuf_addf(out, "%s,%" PRId64 ",%" PRId64, when, ts, js->bucket_ms);
		for (size_t c = 0; c < ncols; c++) {
			strbuf_addch(out, ',');
			put_value(out, cols[c].v[i]);
		}
		strbuf_addch(out, '\n');
	}
	ret = strbuf_error(out);
out_free:
	for (size_t c = 0; c < ncols; c++)
		free(cols[c].v);
	return ret;
}

void report_csv_num(struct strbuf *out, double v, int decimals)
{
	if (isnan(v))
		strbuf_addch(out, ',');
	else
		strbuf_addf(out, ",%.*f", decimals, v);
}
