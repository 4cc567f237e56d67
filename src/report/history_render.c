/*
 * history_render.c - the history tables (analysis/history.c) as text, JSON,
 * CSV and an HTML fragment.
 */
#include "report/report.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/history.h"
#include "common/jsonw.h"
#include "common/timeutil.h"

/* "N jobs used more than they reserved: an efficiency above 100% is theirs" */
static void jobs_over_sentence(struct strbuf *out, int64_t n)
{
	strbuf_addf(out,
		    "%" PRId64
		    " job%s used more than %s reserved: an efficiency above 100%% is theirs",
		    n, n == 1 ? "" : "s", n == 1 ? "it" : "they");
}

static const char *key_label(const struct history *h, const struct history_row *r)
{
	/* weekday keys sort by a leading digit ("0 Mon"): show the name */
	return h->by == HISTORY_BY_WEEKDAY && r->key[0] && r->key[1] == ' ' ? r->key + 2 : r->key;
}

static void text_num(struct strbuf *out, int width, double v, int decimals)
{
	if (isnan(v))
		strbuf_addf(out, " %*s", width, "-");
	else
		strbuf_addf(out, " %*.*f", width, decimals, v);
}

/*
 * What the SMs did, in the text and HTML tables: SM active and tensor
 * active (history_gpu_act_names' first and third), shown only when some
 * job has them, so that a store without GPM keeps its table as it was.
 */
static const int shown_acts[] = {0, 2};
#define SHOWN_ACTS (int)(sizeof(shown_acts) / sizeof(shown_acts[0]))

static bool shows_acts(const struct history *h)
{
	for (int k = 0; k < SHOWN_ACTS; k++)
		if (!isnan(history_gpu_act_pct(&h->total, shown_acts[k])))
			return true;
	return false;
}

static void text_row(struct strbuf *out, const char *label, int kw, const struct history_row *r,
		     bool acts)
{
	strbuf_addf(out, "  %-*.*s %6" PRId64, kw, kw, label, r->jobs);
	text_num(out, 8, r->wall_h, 1);
	text_num(out, 9, r->core_h_reserved, 1);
	text_num(out, 9, r->core_h_used, 1);
	text_num(out, 5, history_cpu_eff_pct(r), 0);
	text_num(out, 9, history_idle_core_h(r), 1);
	text_num(out, 8, r->gpu_h_reserved, 1);
	text_num(out, 8, r->has_gpu_util ? r->gpu_h_used : NAN, 1);
	text_num(out, 5, history_gpu_eff_pct(r), 0);
	text_num(out, 8, r->gpu_h_reserved > 0 ? history_idle_gpu_h(r) : NAN, 1);
	for (int k = 0; acts && k < SHOWN_ACTS; k++)
		text_num(out, 5, history_gpu_act_pct(r, shown_acts[k]), 0);
	text_num(out, 9, r->has_mem_reserved ? r->mem_gib_h_reserved : NAN, 1);
	text_num(out, 9, r->mem_gib_h_peak, 1);
	text_num(out, 5, history_mem_eff_pct(r), 0);
	strbuf_addch(out, '\n');
}

int history_text(const struct history *h, struct strbuf *out)
{
	char since[40], until[40];
	bool acts = shows_acts(h);
	int kw = 8;

	for (size_t i = 0; i < h->nrows; i++) {
		int len = (int)strlen(key_label(h, &h->rows[i]));

		if (len > kw)
			kw = len > 40 ? 40 : len;
	}
	format_rfc3339_ms(h->since_ms, since, sizeof(since));
	format_rfc3339_ms(h->until_ms, until, sizeof(until));
	strbuf_addf(out, "jobscope history by %s, %s .. %s: %" PRId64 " jobs, %zu rows\n",
		    history_by_name(h->by), since, until, h->total.jobs, h->nrows);
	strbuf_addstr(out, "  reserved vs used; idle = reserved - used; GPU-h used weighted by "
			   "utilization");
	if (h->by == HISTORY_BY_HOUR || h->by == HISTORY_BY_WEEKDAY)
		strbuf_addstr(out, "; local time");
	else
		strbuf_addstr(out, "; most idle GPU-hours, then core-hours, first");
	strbuf_addstr(out, "\n\n");
	strbuf_addf(out, "  %-*s %6s %8s %9s %9s %5s %9s %8s %8s %5s %8s%s %9s %9s %5s\n", kw,
		    history_by_name(h->by), "jobs", "wall h", "core-h", "core-h", "CPU", "idle",
		    "GPU-h", "GPU-h", "GPU", "idle", acts ? "    SM  tens" : "", "mem", "mem peak",
		    "mem");
	strbuf_addf(out, "  %-*s %6s %8s %9s %9s %5s %9s %8s %8s %5s %8s%s %9s %9s %5s\n", kw, "",
		    "", "", "reserved", "used", "eff%", "core-h", "reserved", "used", "eff%",
		    "GPU-h", acts ? "  act%  act%" : "", "GiB-h", "GiB-h", "eff%");
	for (size_t i = 0; i < h->nrows; i++)
		text_row(out, key_label(h, &h->rows[i]), kw, &h->rows[i], acts);
	text_row(out, "total", kw, &h->total, acts);
	strbuf_addstr(out, "\n  efficiencies are over the jobs that reserved: work without a "
			   "reservation (a login, a daemon) reserves nothing\n");
	if (acts)
		strbuf_addstr(out,
			      "  SM act% and tens act%: SM active and tensor active, the jobs' "
			      "part of their GPUs, weighted by GPU-hours\n");
	if (h->total.jobs_over) {
		strbuf_addstr(out, "  ");
		jobs_over_sentence(out, h->total.jobs_over);
		strbuf_addch(out, '\n');
	}
	if (h->jobs_without_summary)
		strbuf_addf(out,
			    "\n  %" PRId64
			    " job%s without a stored summary (still running) counted "
			    "from their samples\n",
			    h->jobs_without_summary, h->jobs_without_summary == 1 ? "" : "s");
	return strbuf_error(out);
}

static void json_row(struct jsonw *w, const struct history *h, const struct history_row *r)
{
	jsonw_obj_begin(w);
	jsonw_kv_str(w, "key", key_label(h, r));
	jsonw_kv_int(w, "jobs", r->jobs);
	jsonw_kv_double(w, "wall_hours", r->wall_h, 6);
	jsonw_kv_double(w, "core_hours_reserved", r->core_h_reserved, 6);
	jsonw_kv_double(w, "core_hours_used", r->core_h_used, 6);
	jsonw_kv_double(w, "core_hours_idle", history_idle_core_h(r), 6);
	jsonw_kv_double(w, "core_hours_used_of_reserved", r->core_h_used_of_reserved, 6);
	jsonw_kv_double(w, "cpu_efficiency_pct", history_cpu_eff_pct(r), 1);
	jsonw_kv_double(w, "gpu_hours_reserved", r->gpu_h_reserved, 6);
	jsonw_kv_double(w, "gpu_hours_used", r->has_gpu_util ? r->gpu_h_used : NAN, 6);
	jsonw_kv_double(w, "gpu_hours_idle", r->gpu_h_reserved > 0 ? history_idle_gpu_h(r) : NAN,
			6);
	jsonw_kv_double(w, "gpu_efficiency_pct", history_gpu_eff_pct(r), 1);
	for (int k = 0; k < HISTORY_GPU_ACTS; k++)
		jsonw_kv_double(w, history_gpu_act_names[k], history_gpu_act_pct(r, k), 2);
	for (int k = 0; k < HISTORY_GPU_THROTTLES; k++)
		jsonw_kv_double(w, history_gpu_throttle_names[k], r->gpu_throttle_s[k], 3);
	jsonw_kv_double(w, "mem_gib_hours_reserved",
			r->has_mem_reserved ? r->mem_gib_h_reserved : NAN, 6);
	jsonw_kv_double(w, "mem_gib_hours_peak", r->mem_gib_h_peak, 6);
	jsonw_kv_double(w, "mem_gib_hours_peak_of_reserved", r->mem_gib_h_peak_of_reserved, 6);
	jsonw_kv_double(w, "mem_efficiency_pct", history_mem_eff_pct(r), 1);
	jsonw_kv_int(w, "jobs_over_reservation", r->jobs_over);
	jsonw_obj_end(w);
}

int history_json(const struct history *h, struct strbuf *out)
{
	struct jsonw w;
	char since[40], until[40];

	format_rfc3339_ms(h->since_ms, since, sizeof(since));
	format_rfc3339_ms(h->until_ms, until, sizeof(until));
	jsonw_init(&w, out, true);
	jsonw_obj_begin(&w);
	jsonw_kv_int(&w, "schema", 1);
	jsonw_kv_str(&w, "kind", "history");
	jsonw_kv_str(&w, "by", history_by_name(h->by));
	jsonw_kv_str(&w, "since", since);
	jsonw_kv_str(&w, "until", until);
	jsonw_kv_int(&w, "since_ms", h->since_ms);
	jsonw_kv_int(&w, "until_ms", h->until_ms);
	jsonw_kv_int(&w, "jobs_without_summary", h->jobs_without_summary);
	jsonw_key(&w, "rows");
	jsonw_arr_begin(&w);
	for (size_t i = 0; i < h->nrows; i++)
		json_row(&w, h, &h->rows[i]);
	jsonw_arr_end(&w);
	jsonw_key(&w, "total");
	json_row(&w, h, &h->total);
	jsonw_obj_end(&w);
	if (!jsonw_error(&w))
		strbuf_addch(out, '\n');
	return jsonw_error(&w) ?: strbuf_error(out);
}

/* A CSV field, quoted when it needs to be (RFC 4180). */
static void csv_field(struct strbuf *out, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		strbuf_addstr(out, s);
		return;
	}
	strbuf_addch(out, '"');
	for (; *s; s++) {
		if (*s == '"')
			strbuf_addch(out, '"');
		strbuf_addch(out, *s);
	}
	strbuf_addch(out, '"');
}

static void csv_row(struct strbuf *out, const struct history *h, const struct history_row *r)
{
	csv_field(out, key_label(h, r));
	strbuf_addf(out, ",%" PRId64, r->jobs);
	report_csv_num(out, r->wall_h, 3);
	report_csv_num(out, r->core_h_reserved, 3);
	report_csv_num(out, r->core_h_used, 3);
	report_csv_num(out, history_idle_core_h(r), 3);
	report_csv_num(out, r->gpu_h_reserved, 3);
	report_csv_num(out, r->has_gpu_util ? r->gpu_h_used : NAN, 3);
	report_csv_num(out, r->gpu_h_reserved > 0 ? history_idle_gpu_h(r) : NAN, 3);
	report_csv_num(out, r->has_mem_reserved ? r->mem_gib_h_reserved : NAN, 3);
	report_csv_num(out, r->mem_gib_h_peak, 3);
	report_csv_num(out, history_cpu_eff_pct(r), 1);
	report_csv_num(out, history_gpu_eff_pct(r), 1);
	report_csv_num(out, history_mem_eff_pct(r), 1);
	strbuf_addf(out, ",%" PRId64, r->jobs_over);
	for (int k = 0; k < HISTORY_GPU_ACTS; k++)
		report_csv_num(out, history_gpu_act_pct(r, k), 2);
	for (int k = 0; k < HISTORY_GPU_THROTTLES; k++)
		report_csv_num(out, r->gpu_throttle_s[k], 3);
	strbuf_addch(out, '\n');
}

int history_csv(const struct history *h, struct strbuf *out)
{
	strbuf_addf(out,
		    "%s,jobs,wall_hours,core_hours_reserved,core_hours_used,core_hours_idle,"
		    "gpu_hours_reserved,gpu_hours_used,gpu_hours_idle,mem_gib_hours_reserved,"
		    "mem_gib_hours_peak,cpu_efficiency_pct,gpu_efficiency_pct,"
		    "mem_efficiency_pct,jobs_over_reservation",
		    history_by_name(h->by));
	for (int k = 0; k < HISTORY_GPU_ACTS; k++)
		strbuf_addf(out, ",%s", history_gpu_act_names[k]);
	for (int k = 0; k < HISTORY_GPU_THROTTLES; k++)
		strbuf_addf(out, ",%s", history_gpu_throttle_names[k]);
	strbuf_addch(out, '\n');
	for (size_t i = 0; i < h->nrows; i++)
		csv_row(out, h, &h->rows[i]);
	csv_row(out, h, &h->total);
	return strbuf_error(out);
}

static void html_num(struct strbuf *out, double v, int decimals)
{
	if (isnan(v))
		strbuf_addstr(out, "<td>&mdash;</td>");
	else
		strbuf_addf(out, "<td>%.*f</td>", decimals, v);
}

static void html_row(struct strbuf *out, const struct history *h, const struct history_row *r,
		     bool acts)
{
	strbuf_addstr(out, "<tr><th>");
	report_html_text(out, key_label(h, r));
	strbuf_addf(out, "</th><td>%" PRId64 "</td>", r->jobs);
	html_num(out, r->wall_h, 1);
	html_num(out, r->core_h_reserved, 1);
	html_num(out, r->core_h_used, 1);
	html_num(out, history_cpu_eff_pct(r), 0);
	html_num(out, history_idle_core_h(r), 1);
	html_num(out, r->gpu_h_reserved, 1);
	html_num(out, r->has_gpu_util ? r->gpu_h_used : NAN, 1);
	html_num(out, history_gpu_eff_pct(r), 0);
	html_num(out, r->gpu_h_reserved > 0 ? history_idle_gpu_h(r) : NAN, 1);
	for (int k = 0; acts && k < SHOWN_ACTS; k++)
		html_num(out, history_gpu_act_pct(r, shown_acts[k]), 0);
	html_num(out, r->has_mem_reserved ? r->mem_gib_h_reserved : NAN, 1);
	html_num(out, r->mem_gib_h_peak, 1);
	html_num(out, history_mem_eff_pct(r), 0);
	strbuf_addstr(out, "</tr>\n");
}

int history_html(const struct history *h, struct strbuf *out)
{
	char since[40], until[40];
	bool acts = shows_acts(h);

	format_rfc3339_ms(h->since_ms, since, sizeof(since));
	format_rfc3339_ms(h->until_ms, until, sizeof(until));
	strbuf_addstr(out,
		      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
		      "<title>jobscope history</title><style>"
		      "body{font-family:system-ui,sans-serif;margin:1rem;color:#222}"
		      ".wrap{overflow-x:auto}table{border-collapse:collapse;font-size:.9rem}"
		      "th,td{padding:.25rem .5rem;border-bottom:1px solid #ddd;text-align:right}"
		      "th:first-child{text-align:left}tr.total{font-weight:bold}"
		      "</style></head><body>\n");
	strbuf_addf(out,
		    "<h1>History by %s</h1>\n<p>%s .. %s: %" PRId64 " jobs. Idle = reserved "
		    "&minus; used; GPU-hours used are weighted by utilization.</p>\n",
		    history_by_name(h->by), since, until, h->total.jobs);
	strbuf_addf(out,
		    "<div class=\"wrap\"><table><thead><tr><th>%s</th><th>jobs</th>"
		    "<th>wall h</th><th>core-h reserved</th><th>core-h used</th>"
		    "<th>CPU eff %%</th><th>idle core-h</th><th>GPU-h reserved</th>"
		    "<th>GPU-h used</th><th>GPU eff %%</th><th>idle GPU-h</th>%s"
		    "<th>mem GiB-h reserved</th><th>mem peak GiB-h</th><th>mem eff %%</th>"
		    "</tr></thead><tbody>\n",
		    history_by_name(h->by),
		    acts ? "<th>SM active %</th><th>tensor active %</th>" : "");
	for (size_t i = 0; i < h->nrows; i++)
		html_row(out, h, &h->rows[i], acts);
	strbuf_addstr(out, "</tbody><tfoot class=\"total\">");
	html_row(out, h, &h->total, acts);
	strbuf_addstr(out, "</tfoot></table></div>\n<p>Efficiencies are over the jobs that "
			   "reserved: work without a reservation (a login, a daemon) reserves "
			   "nothing.");
	if (h->total.jobs_over) {
		strbuf_addch(out, ' ');
		jobs_over_sentence(out, h->total.jobs_over);
		strbuf_addch(out, '.');
	}
	strbuf_addstr(out, "</p></body></html>\n");
	return strbuf_error(out);
}
