/*
 * appsummary.c - a job's app metrics merged over the run and per phase,
 * its markers as phases with the job's CPU, memory and GPU figures
 * between them, and its energy per unit of work.  See appsummary.h.
 *
 *   app_summary_load     points (one pass), markers, phases (one replay), energy
 *   app_metric_timeline  a metric's timeline as values
 */
#include "analysis/appsummary.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/counter.h"
#include "common/array.h"
#include "common/log.h"
#include "sample/figures.h"
#include "store/jobdata.h"
#include "store/reader.h"

void app_summary_init(struct app_summary *a)
{
	memset(a, 0, sizeof(*a));
	a->wall_s = NAN;
	a->energy.gpu_j = NAN;
	a->energy.host_j = NAN;
}

static void phases_release(struct app_summary *a)
{
	for (size_t i = 0; i < a->nphases; i++) {
		if (a->phases[i].m)
			for (size_t k = 0; k < a->nmetrics; k++)
				app_sketch_release(&a->phases[i].m[k].sk);
		free(a->phases[i].m);
	}
	free(a->phases);
	a->phases = NULL;
	a->nphases = 0;
}

void app_summary_release(struct app_summary *a)
{
	phases_release(a);
	for (size_t i = 0; i < a->nmetrics; i++) {
		app_point_release(&a->metrics[i].total);
		free(a->metrics[i].tl);
	}
	free(a->metrics);
	free(a->marks);
	app_summary_init(a);
}

double app_j_per_unit(double j, double units)
{
	return isfinite(j) && units > 0 && isfinite(units) ? j / units : NAN;
}

const char *app_type_unit(enum app_type t)
{
	return t == APP_TIMER ? "ms" : NULL;
}

static int metric_cmp(const struct app_point *a, const char *name, enum app_type type,
		      const char *tags)
{
	int c = strcmp(a->name, name);

	if (c)
		return c;
	if (a->type != type)
		return a->type < type ? -1 : 1;
	return strcmp(a->tags, tags);
}

/* The slot of p's metric in the sorted metrics: *found says whether it is there. */
static size_t metric_slot(const struct app_summary *a, const struct app_point *p, bool *found)
{
	size_t lo = 0, hi = a->nmetrics;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = metric_cmp(&a->metrics[mid].total, p->name, p->type, p->tags);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static const struct app_metric *metric_find(const struct app_summary *a, const struct app_point *p)
{
	bool found;
	size_t at = metric_slot(a, p, &found);

	return found ? &a->metrics[at] : NULL;
}

/* The metric of p, added when new; NULL when over the cap (counted) or out of memory. */
static struct app_metric *metric_of(struct app_summary *a, const struct app_point *p, int64_t t0_ms,
				    int64_t interval_ms, int *err)
{
	struct app_metric *m;
	bool found;
	size_t at = metric_slot(a, p, &found);

	if (found)
		return &a->metrics[at];
	if (a->nmetrics == APP_SUMMARY_MAX_METRICS) {
		a->dropped_metrics++;
		return NULL;
	}
	if (ARRAY_GROW(a->metrics, a->nmetrics, a->metrics_alloc, 16)) {
		*err = -ENOMEM;
		return NULL;
	}
	memmove(&a->metrics[at + 1], &a->metrics[at], (a->nmetrics - at) * sizeof(*a->metrics));
	a->nmetrics++;
	m = &a->metrics[at];
	memset(m, 0, sizeof(*m));
	app_point_init(&m->total);
	memcpy(m->total.name, p->name, sizeof(m->total.name));
	memcpy(m->total.tags, p->tags, sizeof(m->total.tags));
	m->total.type = p->type;
	m->distinct = NAN;
	m->tl = calloc(1, sizeof(*m->tl));
	if (!m->tl) {
		*err = -ENOMEM;
		return NULL;
	}
	m->tl->t0_ms = t0_ms;
	m->tl->bucket_ms = interval_ms > 0 ? interval_ms : 1000;
	return m;
}

/* Bucket i takes buckets 2i and 2i+1: the timeline halves its resolution. */
static void timeline_halve(struct app_timeline *tl)
{
	size_t n = 0;

	for (size_t i = 0; i < tl->n; i += 2) {
		double sum = tl->sum[i];
		uint32_t cnt = tl->cnt[i];

		if (i + 1 < tl->n) {
			sum += tl->sum[i + 1];
			cnt += tl->cnt[i + 1];
		}
		tl->sum[n] = sum;
		tl->cnt[n++] = cnt;
	}
	memset(&tl->sum[n], 0, (APP_TIMELINE_POINTS - n) * sizeof(tl->sum[0]));
	memset(&tl->cnt[n], 0, (APP_TIMELINE_POINTS - n) * sizeof(tl->cnt[0]));
	tl->n = n;
	tl->bucket_ms *= 2;
}

static void timeline_add(struct app_timeline *tl, int64_t ts_ms, double v)
{
	int64_t i;

	if (!isfinite(v) || ts_ms < tl->t0_ms)
		return;
	while ((i = (ts_ms - tl->t0_ms) / tl->bucket_ms) >= APP_TIMELINE_POINTS)
		timeline_halve(tl);
	tl->sum[i] += v;
	tl->cnt[i]++;
	if ((size_t)i + 1 > tl->n)
		tl->n = (size_t)i + 1;
}

size_t app_metric_timeline(const struct app_metric *m, double *out)
{
	if (!m->tl)
		return 0;
	for (size_t i = 0; i < m->tl->n; i++)
		out[i] = m->tl->cnt[i] ? m->tl->sum[i] / m->tl->cnt[i] : NAN;
	return m->tl->n;
}

/* What a tick's point puts on its metric's timeline. */
static double tick_value(const struct app_point *p, int64_t interval_ms)
{
	double q;

	switch (p->type) {
	case APP_COUNTER:
		return interval_ms > 0 ? p->sum * 1000.0 / (double)interval_ms : NAN;
	case APP_GAUGE:
	case APP_SET:
		return p->last;
	default:
		return app_quantile(&p->sk, p->min, p->max, 0.5, &q) ? q : NAN;
	}
}

struct point_pass {
	struct app_summary *a;
	int64_t t0_ms, interval_ms;
	int err;
};

static int add_point(void *arg, int64_t ts_ms, const struct app_point *p)
{
	struct point_pass *pp = arg;
	struct app_metric *m = metric_of(pp->a, p, pp->t0_ms, pp->interval_ms, &pp->err);
	int ret;

	if (!m)
		return pp->err;
	ret = app_point_merge(&m->total, p);
	if (ret)
		return ret;
	m->ticks++;
	if (p->type == APP_SET && (isnan(m->distinct) || p->last > m->distinct))
		m->distinct = p->last;
	timeline_add(m->tl, ts_ms, tick_value(p, pp->interval_ms));
	return 0;
}

static void metric_finish(struct app_metric *m, double wall_s)
{
	const struct app_point *t = &m->total;
	bool sk = app_type_has_sketch(t->type);

	m->mean = t->count > 0 ? t->sum / t->count : NAN;
	m->p50 = m->p95 = m->p99 = NAN;
	if (sk) {
		app_quantile(&t->sk, t->min, t->max, 0.50, &m->p50);
		app_quantile(&t->sk, t->min, t->max, 0.95, &m->p95);
		app_quantile(&t->sk, t->min, t->max, 0.99, &m->p99);
	}
	m->rate_per_s = t->type == APP_COUNTER && wall_s > 0 ? t->sum / wall_s : NAN;
	m->last = t->type == APP_GAUGE ? t->last : NAN;
	if (t->type == APP_SET)
		m->mean = NAN; /* a set's count is lines: no mean of members */
}

/* --- phases --------------------------------------------------------------- */

struct phase_pass {
	struct app_summary *a;
	const struct summary *s;
	int64_t prev_job_ms;
	struct job_sample prev_job; /* zero at the job's start: its CPU counters start at 0 */
	/* each GPU's previous reading with an energy counter */
	char uuids[GPU_MAX_DEVICES][GPU_UUID_MAX];
	struct gpu_sample prev[GPU_MAX_DEVICES];
	int64_t prev_ms[GPU_MAX_DEVICES];
	bool has_prev[GPU_MAX_DEVICES];
	int ngpus;
	int err;
};

/* The phase holding the interval that ends at t: start < t <= end; NULL when none. */
static struct app_phase *phase_at(struct app_summary *a, int64_t t)
{
	size_t lo = 0, hi = a->nphases;

	/* the last phase with start < t */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->phases[mid].start_ms < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || t > a->phases[lo - 1].end_ms)
		return NULL;
	return &a->phases[lo - 1];
}

static void phase_job(void *arg, int64_t ts_ms, const struct job_sample *j)
{
	struct phase_pass *pp = arg;
	struct app_phase *ph = phase_at(pp->a, ts_ms);

	if (ph && ts_ms > pp->prev_job_ms) {
		struct job_figures f;

		/* a process that left takes its CPU time along: none counted */
		job_figures(j, &pp->prev_job, ts_ms - pp->prev_job_ms, &f);
		ph->cpu_ms += isnan(f.proc_cpu_ms) ? 0 : f.proc_cpu_ms;
		ph->cpu_span_ms += (double)(ts_ms - pp->prev_job_ms);
		if (!ph->has_rss || j->rss_bytes > ph->rss_peak_bytes)
			ph->rss_peak_bytes = j->rss_bytes;
		ph->has_rss = true;
	}
	if (ts_ms >= pp->prev_job_ms) {
		pp->prev_job_ms = ts_ms;
		pp->prev_job = *j;
	}
}

/* Whether the device is one of the job's (all when the summary knows no process lists). */
static bool job_gpu(const struct summary *s, const char *uuid)
{
	if (!s->gpu_procs_known)
		return true;
	for (int i = 0; i < s->ngpus; i++)
		if (s->gpus[i].used && strcmp(s->gpus[i].dev.info.uuid, uuid) == 0)
			return true;
	return false;
}

static void phase_gpu(void *arg, const struct device_record *dev, int64_t ts_ms,
		      const struct gpu_sample *g)
{
	struct phase_pass *pp = arg;
	struct app_phase *ph;
	int d;

	if (!job_gpu(pp->s, dev->info.uuid))
		return;
	for (d = 0; d < pp->ngpus && strcmp(pp->uuids[d], dev->info.uuid); d++)
		;
	if (d == pp->ngpus) {
		if (d == GPU_MAX_DEVICES)
			return;
		snprintf(pp->uuids[d], sizeof(pp->uuids[d]), "%s", dev->info.uuid);
		pp->ngpus++;
	}
	ph = phase_at(pp->a, ts_ms);
	if (ph && (g->valid & GPU_UTIL)) {
		ph->util_sum += g->util_pct;
		ph->util_n++;
	}
	if (!(g->valid & GPU_ENERGY))
		return;
	if (ph && pp->has_prev[d]) {
		struct gpu_figures f;

		/* the counter's growth, a driver reload counted from 0, as the summary's */
		gpu_figures(g, &pp->prev[d], ts_ms - pp->prev_ms[d], &f);
		if (!isnan(f.energy_mj)) {
			ph->energy_mj += f.energy_mj;
			ph->has_energy = true;
		}
	}
	pp->prev[d] = *g;
	pp->prev_ms[d] = ts_ms;
	pp->has_prev[d] = true;
}

/* The job's end as the reports take it: its end, else its last row. */
static int64_t job_end_ms(const struct summary *s)
{
	if (s->job.end_ms)
		return s->job.end_ms;
	return s->last_ms > s->job.start_ms ? s->last_ms : INT64_MAX;
}

static int phases_make(struct app_summary *a, const struct summary *s)
{
	int64_t end = job_end_ms(s);

	if (!a->nmarks)
		return 0;
	a->nphases = a->nmarks < APP_SUMMARY_MAX_PHASES ? a->nmarks : APP_SUMMARY_MAX_PHASES;
	a->dropped_phases = a->nmarks - a->nphases;
	a->phases = calloc(a->nphases, sizeof(*a->phases));
	if (!a->phases) {
		a->nphases = 0;
		return -ENOMEM;
	}
	for (size_t i = 0; i < a->nphases; i++) {
		struct app_phase *ph = &a->phases[i];

		snprintf(ph->name, sizeof(ph->name), "%s", a->marks[i].name);
		ph->start_ms = a->marks[i].ts_ms;
		ph->end_ms = i + 1 < a->nmarks ? a->marks[i + 1].ts_ms : end;
		if (ph->end_ms < ph->start_ms)
			ph->end_ms = ph->start_ms;
		ph->m = calloc(a->nmetrics ? a->nmetrics : 1, sizeof(*ph->m));
		if (!ph->m)
			return -ENOMEM;
	}
	return 0;
}

static int phase_point(void *arg, int64_t ts_ms, const struct app_point *p)
{
	struct app_summary *a = arg;
	struct app_phase *ph = phase_at(a, ts_ms);
	const struct app_metric *m;
	struct app_phase_metric *pm;

	if (!ph || (p->type != APP_COUNTER && !app_type_has_sketch(p->type)))
		return 0;
	m = metric_find(a, p);
	if (!m)
		return 0;
	pm = &ph->m[m - a->metrics];
	if (pm->count == 0 || p->min < pm->min)
		pm->min = p->min;
	if (pm->count == 0 || p->max > pm->max)
		pm->max = p->max;
	pm->count += p->count;
	pm->sum += p->sum;
	return app_type_has_sketch(p->type) ? app_sketch_merge(&pm->sk, &p->sk) : 0;
}

static void phase_finish(struct app_phase *ph)
{
	ph->cores_mean = ph->cpu_span_ms > 0 ? ph->cpu_ms / ph->cpu_span_ms : NAN;
	ph->gpu_util_mean_pct = ph->util_n > 0 ? ph->util_sum / ph->util_n : NAN;
	ph->gpu_energy_j = ph->has_energy ? ph->energy_mj / 1000.0 : NAN;
}

static int phases_load(struct app_summary *a, struct store *st, const struct summary *s)
{
	static const struct store_replay_ops ops = {
	    .job = phase_job,
	    .gpu = phase_gpu,
	    .host_totals_only = true,
	};
	struct phase_pass *pp;
	int ret;

	ret = phases_make(a, s);
	if (ret || !a->nphases)
		return ret;
	pp = calloc(1, sizeof(*pp));
	if (!pp)
		return -ENOMEM;
	pp->a = a;
	pp->s = s;
	pp->prev_job_ms = s->job.start_ms; /* the job's CPU counter starts at 0 there */
	ret = store_replay_job(st, s->job.id, &ops, pp);
	free(pp);
	if (!ret)
		ret = store_for_each_app_point(st, s->job.id, a->phases[0].start_ms + 1,
					       a->phases[a->nphases - 1].end_ms == INT64_MAX
						   ? INT64_MAX
						   : a->phases[a->nphases - 1].end_ms + 1,
					       phase_point, a);
	for (size_t i = 0; i < a->nphases; i++)
		phase_finish(&a->phases[i]);
	return ret;
}

/* --- energy --------------------------------------------------------------- */

static void energy_gpus(struct app_energy *e, const struct summary *s)
{
	double total = 0;

	for (int i = 0; i < s->ngpus && e->ngpus < GPU_MAX_DEVICES; i++) {
		const struct gpu_summary *g = &s->gpus[i];
		struct app_energy_gpu *eg;

		if (!g->has_energy || (s->gpu_procs_known && !g->used))
			continue;
		eg = &e->gpus[e->ngpus++];
		eg->index = g->dev.info.index;
		snprintf(eg->uuid, sizeof(eg->uuid), "%s", g->dev.info.uuid);
		eg->energy_j = g->job_energy_mj / 1000.0;
		total += eg->energy_j;
	}
	if (e->ngpus)
		e->gpu_j = total;
}

/*
 * Each zone's increase over the job's span: the sum of its readings'
 * increments, a reading below the one before being a wrap at max_uj (a
 * zone whose max is not known cannot be followed across one: that
 * increment is left out).
 */
static int energy_host(struct app_energy *e, struct store *st, const struct summary *s)
{
	struct store_energy_sample *rows;
	int64_t end = job_end_ms(s);
	size_t n;
	double total = 0;
	bool any = false;
	int ret;

	ret = store_get_energy_samples(st, s->job.node_id, s->job.start_ms,
				       end == INT64_MAX ? INT64_MAX : end + 1, &rows, &n);
	if (ret)
		return ret;
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		double uj = 0;

		for (; j < n && strcmp(rows[j].zone, rows[i].zone) == 0; j++) {
			uint64_t d;

			if (counter_growth(rows[j - 1].energy_uj, rows[j].energy_uj,
					   COUNTER_RULE_RAPL, rows[j].max_uj, &d))
				uj += (double)d;
		}
		if (j - i >= 2 && e->nzones < APP_ENERGY_ZONES_MAX) {
			struct app_energy_zone *z = &e->zones[e->nzones++];

			snprintf(z->zone, sizeof(z->zone), "%s", rows[i].zone);
			z->energy_j = uj / 1e6;
			z->top = !strchr(z->zone, '/');
			if (z->top) {
				total += z->energy_j;
				any = true;
			}
		}
		i = j;
	}
	free(rows);
	if (any)
		e->host_j = total;
	return 0;
}

int app_summary_load(struct app_summary *a, struct store *st, const struct summary *s)
{
	struct point_pass pp = {.a = a, .t0_ms = s->job.start_ms};
	double wall = summary_duration_s(s);
	int ret;

	app_summary_init(a);
	a->wall_s = wall > 0 ? wall : NAN;
	a->interval_ms = s->interval_ms > 0 ? s->interval_ms : s->job.interval_ms;
	pp.interval_ms = a->interval_ms;
	ret = store_for_each_app_point(st, s->job.id, 0, INT64_MAX, add_point, &pp);
	if (!ret)
		ret = store_get_app_marks(st, s->job.id, &a->marks, &a->nmarks);
	if (ret)
		goto out_fail;
	for (size_t i = 0; i < a->nmetrics; i++)
		metric_finish(&a->metrics[i], a->wall_s);
	a->present = a->nmetrics || a->nmarks;
	if (!a->present)
		return 0;
	ret = phases_load(a, st, s);
	if (!ret)
		ret = energy_host(&a->energy, st, s);
	if (ret)
		goto out_fail;
	energy_gpus(&a->energy, s);
	return 0;
out_fail:
	app_summary_release(a);
	return ret == -ENOMEM ? log_err(ret, "cannot summarise the app metrics") : ret;
}
