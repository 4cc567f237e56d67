/*
 * report_app.c - what the job's program said of its own work
 * (analysis/appsummary.h) in every report: the "Application metrics",
 * "Phases" and "Energy per unit of work" tables as text, the JSON report's
 * "app" value, the HTML page's section with each metric's timeline, and
 * a plot panel per metric.
 *
 *   report_app_text     the three tables (nothing when nothing was stored)
 *   report_app_json     the "app" value (null when nothing was stored)
 *   report_app_html     <section id="app">
 *   report_app_panels   a panel per metric added to a job's chart set
 *
 * A value that is not known prints "-" (text, HTML) or null (JSON), never 0.
 */
#include "report/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/appsummary.h"
#include "common/fmt.h"
#include "common/jsonw.h"
#include "report/chart.h"

#define APP_CELL_MAX   64
#define APP_COLS_MAX   12
#define APP_PANELS_MAX 12 /* metrics drawn (HTML and plots): the first by name */

/* A number as the tables print it: "-" when not known. */
static const char *fmt_num(char *buf, size_t size, double v)
{
	if (!isfinite(v))
		snprintf(buf, size, "-");
	else if (fabs(v) < 1e15 && v == floor(v))
		snprintf(buf, size, "%.0f", v);
	else if (fabs(v) >= 1.0)
		snprintf(buf, size, "%.2f", v);
	else
		snprintf(buf, size, "%.3g", v);
	return buf;
}

/* Joules per unit as the tables print them: four significant digits, "-" when not known. */
static const char *fmt_sig(char *buf, size_t size, double v)
{
	if (!isfinite(v))
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.4g", v);
	return buf;
}

/* "name" or "name{tags}"; cut to size with "..." at its end. */
static void metric_label(const struct app_point *p, char *buf, size_t size)
{
	int n;

	if (p->tags[0])
		n = snprintf(buf, size, "%s{%s}", p->name, p->tags);
	else
		n = snprintf(buf, size, "%s", p->name);
	if (n >= 0 && (size_t)n >= size && size > 4)
		memcpy(buf + size - 4, "...", 4);
}

/*
 * A text table: the first column left-aligned (as wide as its widest
 * cell, at most 60), the others right-aligned.
 */
struct text_table {
	size_t ncols, nrows;
	char (*cells)[APP_COLS_MAX][APP_CELL_MAX];
};

static int table_row(struct text_table *t, size_t *alloc)
{
	if (t->nrows == *alloc) {
		size_t grown_n = *alloc ? *alloc * 2 : 16;
		void *grown = realloc(t->cells, grown_n * sizeof(*t->cells));

		if (!grown)
			return -ENOMEM;
		t->cells = grown;
		*alloc = grown_n;
	}
	memset(t->cells[t->nrows], 0, sizeof(t->cells[0]));
	t->nrows++;
	return 0;
}

static void table_print(const struct text_table *t, struct strbuf *out)
{
	size_t w[APP_COLS_MAX] = {0};

	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < t->ncols; c++) {
			size_t n = strlen(t->cells[r][c]);

			if (n > w[c])
				w[c] = n;
		}
	for (size_t r = 0; r < t->nrows; r++) {
		strbuf_addstr(out, "    ");
		for (size_t c = 0; c < t->ncols; c++) {
			if (c == 0)
				strbuf_addf(out, "%-*s", (int)w[c], t->cells[r][c]);
			else
				strbuf_addf(out, "  %*s", (int)w[c], t->cells[r][c]);
		}
		/* no trailing blanks after a short last cell */
		while (out->len && out->buf[out->len - 1] == ' ')
			out->len--;
		strbuf_addch(out, '\n');
	}
}

#define CELL(t, c) (t).cells[(t).nrows - 1][c], APP_CELL_MAX

static int text_metrics(const struct app_summary *a, struct strbuf *out)
{
	static const char *const head[] = {"name", "type", "count", "sum", "min",    "max",
					   "mean", "p50",  "p95",   "p99", "rate/s", "last"};
	struct text_table t = {.ncols = 12};
	size_t alloc = 0;
	int ret;

	strbuf_addstr(out, "\n  Application metrics\n");
	ret = table_row(&t, &alloc);
	for (size_t c = 0; !ret && c < t.ncols; c++)
		snprintf(CELL(t, c), "%s", head[c]);
	for (size_t i = 0; !ret && i < a->nmetrics; i++) {
		const struct app_metric *m = &a->metrics[i];
		const struct app_point *p = &m->total;
		double last = p->type == APP_SET ? m->distinct : m->last;

		ret = table_row(&t, &alloc);
		if (ret)
			break;
		metric_label(p, CELL(t, 0));
		snprintf(CELL(t, 1), "%s", app_type_name(p->type));
		fmt_num(CELL(t, 2), p->count);
		fmt_num(CELL(t, 3), p->type == APP_SET ? NAN : p->sum);
		fmt_num(CELL(t, 4), p->type == APP_SET ? NAN : p->min);
		fmt_num(CELL(t, 5), p->type == APP_SET ? NAN : p->max);
		fmt_num(CELL(t, 6), m->mean);
		fmt_num(CELL(t, 7), m->p50);
		fmt_num(CELL(t, 8), m->p95);
		fmt_num(CELL(t, 9), m->p99);
		fmt_num(CELL(t, 10), m->rate_per_s);
		fmt_num(CELL(t, 11), last);
	}
	if (!ret)
		table_print(&t, out);
	if (!ret && a->dropped_metrics)
		strbuf_addf(out, "    (%llu more metrics left out)\n",
			    (unsigned long long)a->dropped_metrics);
	if (!ret && a->nmetrics)
		strbuf_addstr(out,
			      "    Timers are in ms; last: a gauge's newest value, a set's most "
			      "distinct members in one tick.\n");
	free(t.cells);
	return ret;
}

/* The phase's figures of its counters and sketch metrics, on one line. */
static void phase_app_line(const struct app_summary *a, const struct app_phase *ph,
			   struct strbuf *out)
{
	double secs = (double)(ph->end_ms - ph->start_ms) / 1000.0;
	bool any = false;

	for (size_t k = 0; k < a->nmetrics; k++) {
		const struct app_point *p = &a->metrics[k].total;
		const struct app_phase_metric *pm = &ph->m[k];
		char label[APP_NAME_MAX + APP_TAGS_MAX + 2], b1[APP_CELL_MAX], b2[APP_CELL_MAX];
		double q;

		if (!(pm->count > 0))
			continue;
		metric_label(p, label, sizeof(label));
		strbuf_addstr(out, any ? "; " : "      ");
		any = true;
		if (p->type == APP_COUNTER)
			strbuf_addf(out, "%s %s (%s/s)", label, fmt_num(b1, sizeof(b1), pm->sum),
				    fmt_num(b2, sizeof(b2), secs > 0 ? pm->sum / secs : NAN));
		else
			strbuf_addf(
			    out, "%s p50 %s%s", label,
			    fmt_num(b1, sizeof(b1),
				    app_quantile(&pm->sk, pm->min, pm->max, 0.5, &q) ? q : NAN),
			    p->type == APP_TIMER ? " ms" : "");
	}
	if (any)
		strbuf_addch(out, '\n');
}

static int text_phases(const struct app_summary *a, const struct summary *s, struct strbuf *out)
{
	static const char *const head[] = {"phase",    "start s",    "duration s", "cores",
					   "rss peak", "gpu util %", "gpu J"};
	struct text_table t = {.ncols = 7};
	size_t alloc = 0;
	int ret;

	if (!a->nphases)
		return 0;
	strbuf_addstr(out, "\n  Phases (from the program's markers)\n");
	ret = table_row(&t, &alloc);
	for (size_t c = 0; !ret && c < t.ncols; c++)
		snprintf(CELL(t, c), "%s", head[c]);
	for (size_t i = 0; i < a->nphases && !ret; i++) {
		const struct app_phase *ph = &a->phases[i];
		char bytes[32];

		ret = table_row(&t, &alloc);
		if (ret)
			break;
		snprintf(CELL(t, 0), "%zu %.40s", i + 1, ph->name);
		snprintf(CELL(t, 1), "%.1f", (double)(ph->start_ms - s->job.start_ms) / 1e3);
		snprintf(CELL(t, 2), "%.1f", (double)(ph->end_ms - ph->start_ms) / 1e3);
		if (isfinite(ph->cores_mean))
			snprintf(CELL(t, 3), "%.2f", ph->cores_mean);
		else
			snprintf(CELL(t, 3), "-");
		snprintf(CELL(t, 4), "%s",
			 ph->has_rss ? fmt_bytes(bytes, sizeof(bytes), ph->rss_peak_bytes) : "-");
		if (isfinite(ph->gpu_util_mean_pct))
			snprintf(CELL(t, 5), "%.1f", ph->gpu_util_mean_pct);
		else
			snprintf(CELL(t, 5), "-");
		fmt_num(CELL(t, 6), ph->gpu_energy_j);
	}
	if (!ret)
		table_print(&t, out);
	free(t.cells);
	for (size_t i = 0; i < a->nphases && !ret && a->nmetrics; i++) {
		struct strbuf line;

		strbuf_init(&line, 1 << 20);
		phase_app_line(a, &a->phases[i], &line);
		if (line.len)
			strbuf_addf(out, "    %zu %.40s:%s", i + 1, a->phases[i].name,
				    strbuf_str(&line) + 5);
		strbuf_release(&line);
	}
	if (!ret && a->dropped_phases)
		strbuf_addf(out, "    (%llu more phases left out)\n",
			    (unsigned long long)a->dropped_phases);
	return ret;
}

static bool has_energy_rows(const struct app_summary *a)
{
	if (!isfinite(a->energy.gpu_j) && !isfinite(a->energy.host_j))
		return false;
	for (size_t i = 0; i < a->nmetrics; i++)
		if (a->metrics[i].total.type == APP_COUNTER && a->metrics[i].total.sum > 0)
			return true;
	return false;
}

static int text_energy(const struct app_summary *a, struct strbuf *out)
{
	const struct app_energy *e = &a->energy;
	struct text_table t = {.ncols = 4 + (size_t)(e->ngpus > 1 ? e->ngpus : 0)};
	size_t alloc = 0;
	char b[APP_CELL_MAX];
	int ret;

	if (!has_energy_rows(a))
		return 0;
	if (t.ncols > APP_COLS_MAX)
		t.ncols = APP_COLS_MAX;
	strbuf_addstr(out, "\n  Energy per unit of work\n");
	strbuf_addf(out, "    GPU energy (the job's share): %s%s", fmt_num(b, sizeof(b), e->gpu_j),
		    isfinite(e->gpu_j) ? " J" : "");
	strbuf_addf(out, "; host energy (RAPL, top-level zones): %s%s\n",
		    fmt_num(b, sizeof(b), e->host_j), isfinite(e->host_j) ? " J" : "");
	ret = table_row(&t, &alloc);
	if (!ret) {
		snprintf(CELL(t, 0), "counter");
		snprintf(CELL(t, 1), "units");
		snprintf(CELL(t, 2), "GPU J/unit");
		snprintf(CELL(t, 3), "host J/unit");
		for (size_t g = 4; g < t.ncols; g++)
			snprintf(CELL(t, g), "GPU %d J/unit", e->gpus[g - 4].index);
	}
	for (size_t i = 0; !ret && i < a->nmetrics; i++) {
		const struct app_point *p = &a->metrics[i].total;

		if (p->type != APP_COUNTER || !(p->sum > 0))
			continue;
		ret = table_row(&t, &alloc);
		if (ret)
			break;
		metric_label(p, CELL(t, 0));
		fmt_num(CELL(t, 1), p->sum);
		fmt_sig(CELL(t, 2), app_j_per_unit(e->gpu_j, p->sum));
		fmt_sig(CELL(t, 3), app_j_per_unit(e->host_j, p->sum));
		for (size_t g = 4; g < t.ncols; g++)
			fmt_sig(CELL(t, g), app_j_per_unit(e->gpus[g - 4].energy_j, p->sum));
	}
	if (!ret)
		table_print(&t, out);
	free(t.cells);
	return ret;
}

int report_app_text(const struct app_summary *a, const struct summary *s, struct strbuf *out)
{
	int ret;

	if (!a || !a->present)
		return 0;
	ret = a->nmetrics || a->dropped_metrics ? text_metrics(a, out) : 0;
	if (!ret)
		ret = text_phases(a, s, out);
	if (!ret)
		ret = text_energy(a, out);
	return ret ?: strbuf_error(out);
}

/* --- JSON ------------------------------------------------------------------ */

static void kv_num(struct jsonw *w, const char *key, double v)
{
	jsonw_kv_double_opt(w, key, isfinite(v), v, 6);
}

static void json_metric(struct jsonw *w, const struct app_metric *m)
{
	const struct app_point *p = &m->total;
	bool set = p->type == APP_SET;

	jsonw_obj_begin(w);
	jsonw_kv_str(w, "name", p->name);
	jsonw_kv_str(w, "tags", p->tags);
	jsonw_kv_str(w, "type", app_type_name(p->type));
	jsonw_kv_str_opt(w, "unit", app_type_unit(p->type));
	jsonw_kv_int(w, "ticks", m->ticks);
	kv_num(w, "count", p->count);
	kv_num(w, "sum", set ? NAN : p->sum);
	kv_num(w, "min", set ? NAN : p->min);
	kv_num(w, "max", set ? NAN : p->max);
	kv_num(w, "mean", m->mean);
	kv_num(w, "p50", m->p50);
	kv_num(w, "p95", m->p95);
	kv_num(w, "p99", m->p99);
	kv_num(w, "rate_per_s", m->rate_per_s);
	kv_num(w, "last", m->last);
	kv_num(w, "distinct", m->distinct);
	jsonw_obj_end(w);
}

static void json_phase(struct jsonw *w, const struct app_summary *a, const struct app_phase *ph)
{
	double secs = (double)(ph->end_ms - ph->start_ms) / 1000.0;

	jsonw_obj_begin(w);
	jsonw_kv_str(w, "name", ph->name);
	jsonw_kv_int(w, "start_ms", ph->start_ms);
	jsonw_kv_int(w, "end_ms", ph->end_ms);
	kv_num(w, "duration_s", secs);
	kv_num(w, "cpu_cores_mean", ph->cores_mean);
	jsonw_kv_int_opt(w, "rss_peak_bytes", ph->has_rss, (int64_t)ph->rss_peak_bytes);
	kv_num(w, "gpu_util_mean_pct", ph->gpu_util_mean_pct);
	kv_num(w, "gpu_energy_j", ph->gpu_energy_j);
	jsonw_key(w, "metrics");
	jsonw_arr_begin(w);
	for (size_t k = 0; k < a->nmetrics; k++) {
		const struct app_point *p = &a->metrics[k].total;
		const struct app_phase_metric *pm = &ph->m[k];
		double q;

		if (!(pm->count > 0))
			continue;
		jsonw_obj_begin(w);
		jsonw_kv_str(w, "name", p->name);
		jsonw_kv_str(w, "tags", p->tags);
		jsonw_kv_str(w, "type", app_type_name(p->type));
		kv_num(w, "count", pm->count);
		kv_num(w, "sum", pm->sum);
		kv_num(w, "rate_per_s", p->type == APP_COUNTER && secs > 0 ? pm->sum / secs : NAN);
		kv_num(w, "p50",
		       app_type_has_sketch(p->type) &&
			       app_quantile(&pm->sk, pm->min, pm->max, 0.5, &q)
			   ? q
			   : NAN);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
	jsonw_obj_end(w);
}

static void json_energy(struct jsonw *w, const struct app_summary *a)
{
	const struct app_energy *e = &a->energy;

	jsonw_obj_begin(w);
	kv_num(w, "gpu_energy_j", e->gpu_j);
	kv_num(w, "host_energy_j", e->host_j);
	jsonw_key(w, "gpus");
	jsonw_arr_begin(w);
	for (int g = 0; g < e->ngpus; g++) {
		jsonw_obj_begin(w);
		jsonw_kv_int(w, "index", e->gpus[g].index);
		jsonw_kv_str(w, "uuid", e->gpus[g].uuid);
		kv_num(w, "energy_j", e->gpus[g].energy_j);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
	jsonw_key(w, "host_zones");
	jsonw_arr_begin(w);
	for (size_t z = 0; z < e->nzones; z++) {
		jsonw_obj_begin(w);
		jsonw_kv_str(w, "zone", e->zones[z].zone);
		kv_num(w, "energy_j", e->zones[z].energy_j);
		jsonw_kv_bool(w, "in_total", e->zones[z].top);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
	jsonw_key(w, "counters");
	jsonw_arr_begin(w);
	for (size_t i = 0; i < a->nmetrics; i++) {
		const struct app_point *p = &a->metrics[i].total;

		if (p->type != APP_COUNTER)
			continue;
		jsonw_obj_begin(w);
		jsonw_kv_str(w, "name", p->name);
		jsonw_kv_str(w, "tags", p->tags);
		kv_num(w, "units", p->sum);
		kv_num(w, "gpu_j_per_unit", app_j_per_unit(e->gpu_j, p->sum));
		kv_num(w, "host_j_per_unit", app_j_per_unit(e->host_j, p->sum));
		jsonw_key(w, "gpus");
		jsonw_arr_begin(w);
		for (int g = 0; g < e->ngpus; g++) {
			jsonw_obj_begin(w);
			jsonw_kv_int(w, "index", e->gpus[g].index);
			kv_num(w, "j_per_unit", app_j_per_unit(e->gpus[g].energy_j, p->sum));
			jsonw_obj_end(w);
		}
		jsonw_arr_end(w);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
	jsonw_obj_end(w);
}

void report_app_json(struct jsonw *w, const struct app_summary *a)
{
	if (!a || !a->present) {
		jsonw_null(w);
		return;
	}
	jsonw_obj_begin(w);
	jsonw_key(w, "metrics");
	jsonw_arr_begin(w);
	for (size_t i = 0; i < a->nmetrics; i++)
		json_metric(w, &a->metrics[i]);
	jsonw_arr_end(w);
	jsonw_kv_int(w, "dropped_metrics", (int64_t)a->dropped_metrics);
	jsonw_key(w, "marks");
	jsonw_arr_begin(w);
	for (size_t i = 0; i < a->nmarks; i++) {
		jsonw_obj_begin(w);
		jsonw_kv_int(w, "ts_ms", a->marks[i].ts_ms);
		jsonw_kv_str(w, "name", a->marks[i].name);
		jsonw_kv_str_opt(w, "text", a->marks[i].text[0] ? a->marks[i].text : NULL);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
	jsonw_key(w, "phases");
	jsonw_arr_begin(w);
	for (size_t i = 0; i < a->nphases; i++)
		json_phase(w, a, &a->phases[i]);
	jsonw_arr_end(w);
	jsonw_kv_int(w, "dropped_phases", (int64_t)a->dropped_phases);
	jsonw_key(w, "energy_per_unit");
	json_energy(w, a);
	jsonw_obj_end(w);
}

/* --- charts (HTML and plots) ---------------------------------------------- */

/*
 * The metric's value over [from_ms, from_ms + width_ms): the mean of its
 * ticks there (its timeline's buckets that start in it); NAN when none.
 */
static double timeline_over(const struct app_timeline *tl, int64_t from_ms, int64_t width_ms)
{
	double sum = 0;
	uint32_t n = 0;

	for (size_t i = 0; i < tl->n; i++) {
		int64_t t = tl->t0_ms + (int64_t)i * tl->bucket_ms;

		if (t >= from_ms && t < from_ms + width_ms) {
			sum += tl->sum[i];
			n += tl->cnt[i];
		}
	}
	return n ? sum / n : NAN;
}

static const char *chart_title(const struct app_point *p, char *buf, size_t size)
{
	char label[APP_NAME_MAX + APP_TAGS_MAX + 2];

	metric_label(p, label, sizeof(label));
	snprintf(buf, size, "%.200s (%s%s)", label, app_type_name(p->type),
		 p->type == APP_COUNTER			      ? ", per second"
		 : p->type == APP_GAUGE || p->type == APP_SET ? ", last"
							      : ", p50 of each tick");
	return buf;
}

int report_app_panels(struct chart_set *cs, const struct app_summary *a)
{
	double *v;
	int ret = 0;
	size_t shown = 0;

	if (!a || !a->nmetrics || !cs->npoints)
		return 0;
	v = malloc(cs->npoints * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < a->nmetrics && shown < APP_PANELS_MAX && !ret; i++) {
		const struct app_metric *m = &a->metrics[i];
		struct chart_panel *p;
		char id[16], title[256];

		if (!m->tl)
			continue;
		for (size_t k = 0; k < cs->npoints; k++)
			v[k] = timeline_over(
			    m->tl, cs->origin_ms + llround(cs->t_s[k] * 1000.0) - cs->bucket_ms / 2,
			    cs->bucket_ms > 0 ? cs->bucket_ms : 1);
		snprintf(id, sizeof(id), "app-%u", (unsigned)i);
		p = chart_panel_begin(cs, CHART_APP, id,
				      chart_title(&m->total, title, sizeof(title)), m->total.name);
		if (!p)
			break;
		p->empty = "no value in this metric's ticks";
		ret = chart_panel_add(cs, p, m->total.name, 0, false, v);
		if (!ret) {
			chart_panel_end(cs, p, false);
			snprintf(p->y.unit, sizeof(p->y.unit), "%s",
				 m->total.type == APP_COUNTER ? "/s"
				 : m->total.type == APP_TIMER ? "ms"
							      : "");
			shown++;
		}
	}
	free(v);
	return ret;
}

/* --- HTML ------------------------------------------------------------------ */

static void td_num(struct strbuf *out, double v)
{
	char b[APP_CELL_MAX];

	strbuf_addf(out, "<td class=\"n\">%s</td>", fmt_num(b, sizeof(b), v));
}

static void td_text(struct strbuf *out, const char *s)
{
	strbuf_addstr(out, "<td>");
	report_html_text(out, s);
	strbuf_addstr(out, "</td>");
}

static void html_metrics(const struct app_summary *a, struct strbuf *out)
{
	strbuf_addstr(out,
		      "<h3>Application metrics</h3>\n<table>\n<tr><th>name</th><th>type</th>"
		      "<th>count</th><th>sum</th><th>min</th><th>max</th><th>mean</th>"
		      "<th>p50</th><th>p95</th><th>p99</th><th>rate/s</th><th>last</th></tr>\n");
	for (size_t i = 0; i < a->nmetrics; i++) {
		const struct app_metric *m = &a->metrics[i];
		const struct app_point *p = &m->total;
		char label[APP_NAME_MAX + APP_TAGS_MAX + 2];
		bool set = p->type == APP_SET;

		metric_label(p, label, sizeof(label));
		strbuf_addstr(out, "<tr>");
		td_text(out, label);
		td_text(out, app_type_name(p->type));
		td_num(out, p->count);
		td_num(out, set ? NAN : p->sum);
		td_num(out, set ? NAN : p->min);
		td_num(out, set ? NAN : p->max);
		td_num(out, m->mean);
		td_num(out, m->p50);
		td_num(out, m->p95);
		td_num(out, m->p99);
		td_num(out, m->rate_per_s);
		td_num(out, set ? m->distinct : m->last);
		strbuf_addstr(out, "</tr>\n");
	}
	strbuf_addstr(out, "</table>\n");
}

static void html_phases(const struct app_summary *a, const struct summary *s, struct strbuf *out)
{
	if (!a->nphases)
		return;
	strbuf_addstr(out, "<h3>Phases</h3>\n<table>\n<tr><th>#</th><th>phase</th><th>start s</th>"
			   "<th>duration s</th><th>cores</th><th>RSS peak</th><th>GPU util %</th>"
			   "<th>GPU J</th><th>app</th></tr>\n");
	for (size_t i = 0; i < a->nphases; i++) {
		const struct app_phase *ph = &a->phases[i];
		struct strbuf line;
		char bytes[32];

		strbuf_addf(out, "<tr><td class=\"n\">%zu</td>", i + 1);
		td_text(out, ph->name);
		td_num(out, round((double)(ph->start_ms - s->job.start_ms) / 100.0) / 10.0);
		td_num(out, round((double)(ph->end_ms - ph->start_ms) / 100.0) / 10.0);
		td_num(out, round(ph->cores_mean * 100.0) / 100.0);
		td_text(out,
			ph->has_rss ? fmt_bytes(bytes, sizeof(bytes), ph->rss_peak_bytes) : "-");
		td_num(out, round(ph->gpu_util_mean_pct * 10.0) / 10.0);
		td_num(out, ph->gpu_energy_j);
		strbuf_init(&line, 1 << 16);
		phase_app_line(a, ph, &line);
		while (line.len &&
		       (line.buf[line.len - 1] == '\n' || line.buf[line.len - 1] == ' '))
			line.len--;
		if (line.buf)
			line.buf[line.len] = '\0';
		td_text(out, line.len ? strbuf_str(&line) + strspn(strbuf_str(&line), " ") : "-");
		strbuf_release(&line);
		strbuf_addstr(out, "</tr>\n");
	}
	strbuf_addstr(out, "</table>\n");
}

static void html_energy(const struct app_summary *a, struct strbuf *out)
{
	const struct app_energy *e = &a->energy;
	char b[APP_CELL_MAX];

	if (!has_energy_rows(a))
		return;
	strbuf_addf(out,
		    "<h3>Energy per unit of work</h3>\n<p>GPU energy (the job's share): %s J; ",
		    fmt_num(b, sizeof(b), e->gpu_j));
	strbuf_addf(out, "host energy (RAPL, top-level zones): %s J.</p>\n",
		    fmt_num(b, sizeof(b), e->host_j));
	strbuf_addstr(out, "<table>\n<tr><th>counter</th><th>units</th><th>GPU J/unit</th>"
			   "<th>host J/unit</th>");
	for (int g = 0; e->ngpus > 1 && g < e->ngpus; g++)
		strbuf_addf(out, "<th>GPU %d J/unit</th>", e->gpus[g].index);
	strbuf_addstr(out, "</tr>\n");
	for (size_t i = 0; i < a->nmetrics; i++) {
		const struct app_point *p = &a->metrics[i].total;
		char label[APP_NAME_MAX + APP_TAGS_MAX + 2];

		if (p->type != APP_COUNTER || !(p->sum > 0))
			continue;
		metric_label(p, label, sizeof(label));
		strbuf_addstr(out, "<tr>");
		td_text(out, label);
		td_num(out, p->sum);
		td_num(out, app_j_per_unit(e->gpu_j, p->sum));
		td_num(out, app_j_per_unit(e->host_j, p->sum));
		for (int g = 0; e->ngpus > 1 && g < e->ngpus; g++)
			td_num(out, app_j_per_unit(e->gpus[g].energy_j, p->sum));
		strbuf_addstr(out, "</tr>\n");
	}
	strbuf_addstr(out, "</table>\n");
}

int report_app_html(const struct app_summary *a, const struct summary *s,
		    const struct jobseries *js, struct strbuf *out)
{
	struct chart_set *cs = NULL;
	int ret = 0;

	if (!a || !a->present)
		return 0;
	strbuf_addstr(out, "<section id=\"app\">\n<h2>What the program said</h2>\n");
	if (a->nmetrics) {
		html_metrics(a, out);
		ret = chart_set_build(s, js, &cs);
		if (!ret) {
			size_t first = cs->npanels;

			ret = report_app_panels(cs, a);
			if (!ret && cs->npanels > first) {
				strbuf_addstr(out, "<h3>Timelines</h3>\n");
				report_html_charts(cs, first, out);
			}
			chart_set_free(cs);
		}
	}
	if (!ret) {
		html_phases(a, s, out);
		html_energy(a, out);
		strbuf_addstr(out, "</section>\n");
	}
	return ret ?: strbuf_error(out);
}
