/*
 * report.h - render a job's report: text for people, JSON and CSV for
 * programs, one self-contained HTML page, and timeline plots (cairo).
 *
 * The renderers read a finished summary and, when given, its job series and
 * analysis (NULL: the analysis sections are left out of text and HTML and
 * written null in JSON).  Text, JSON, CSV and HTML append to a strbuf the
 * caller owns; all return 0 or -errno (-E2BIG past the buffer's cap).  The
 * JSON schema is documented in docs/report-json.md and versioned by its
 * "schema" field; missing values are null, never 0.  The HTML page's charts
 * and the plots draw the same chart model (report/chart.h).
 */
#ifndef JOBSCOPE_REPORT_H
#define JOBSCOPE_REPORT_H

#include <stdbool.h>

#include "analysis/verdicts.h"
#include "common/strbuf.h"
#include "analysis/jobseries.h"
#include "analysis/summary.h"

#define REPORT_JSON_SCHEMA 2

struct app_summary;
struct chart_set;
struct cuda_tables;
struct jsonw;

struct report_options {
	bool utf8;	  /* sparklines with block characters, else ASCII */
	size_t max_procs; /* text: rows in the process table (0: 10) */
	/* `jobscope run --cuda`'s tables (analysis/cudatables.h); NULL or not present: none */
	const struct cuda_tables *cuda;
	/* the program's own metrics, markers, energy per unit (analysis/appsummary.h); NULL: none */
	const struct app_summary *app;
};

int report_text(const struct summary *s, const struct analysis *an,
		const struct report_options *opt, struct strbuf *out);
/*
 * cuda: the job's CUDA tables, or NULL ("cuda": null, as when none are
 * stored); app: its app metrics, or NULL ("app": null, as when none).
 */
int report_json(const struct summary *s, const struct analysis *an,
		const struct cuda_tables *cuda, const struct app_summary *app, struct strbuf *out);
/* One verdict as the text report prints it (first: with the "Verdicts" label). */
void report_text_verdict(struct strbuf *out, bool first, enum verdict_severity severity,
			 const char *message, const char *advice);
/*
 * CSV: a header line and one row per time bucket of the overview (time,
 * then every metric the job has, then each GPU's), RFC 4180 quoting.
 */
int report_csv(const struct summary *s, const struct jobseries *js, struct strbuf *out);
/* ",V" with that many decimals, or "," alone for a missing (NAN) value. */
void report_csv_num(struct strbuf *out, double v, int decimals);
/*
 * One self-contained HTML page: verdicts, figures, inline SVG charts of the
 * timelines, no script and nothing fetched.  js and an may not be NULL.
 */
int report_html(const struct summary *s, const struct jobseries *js, const struct analysis *an,
		const struct cuda_tables *cuda, const struct app_summary *app, struct strbuf *out);
/* The panels of cs from the first'th on, as the page draws its charts. */
void report_html_charts(const struct chart_set *cs, size_t first, struct strbuf *out);
/*
 * The CUDA tables (report_cuda.c; nothing, or null, when t is NULL or has
 * nothing stored): as text in the layout of Nsight Systems' `nsys nvprof`
 * (notes, the job's API, kernel and memory-operation tables, then with
 * more than one process each process's, at most max_procs of them, those
 * with the most CUDA time; 0: 8); the JSON report's "cuda" value; the HTML
 * page's section.
 */
int report_cuda_text(const struct cuda_tables *t, size_t max_procs, struct strbuf *out);
void report_cuda_json(struct jsonw *w, const struct cuda_tables *t);
void report_cuda_html(const struct cuda_tables *t, struct strbuf *out);
/*
 * The program's own metrics (report_app.c; nothing, or null, when a is NULL
 * or has nothing stored): the text report's "Application metrics", "Phases"
 * and "Energy per unit of work" tables; the JSON report's "app" value; the
 * HTML page's section with each metric's timeline; a plot panel per metric
 * (the first APP_PANELS_MAX by name) added to a job's chart set.
 */
int report_app_text(const struct app_summary *a, const struct summary *s, struct strbuf *out);
void report_app_json(struct jsonw *w, const struct app_summary *a);
int report_app_html(const struct app_summary *a, const struct summary *s,
		    const struct jobseries *js, struct strbuf *out);
int report_app_panels(struct chart_set *cs, const struct app_summary *a);
/*
 * The frameworks and libraries of s (report_libs.c): the text report's
 * "Frameworks:" line (nothing when none), the JSON report's "libs" key and
 * array, the HTML page's section (nothing when none).
 */
void report_libs_text(const struct summary *s, struct strbuf *out);
void report_libs_json(struct jsonw *w, const struct summary *s);
void report_libs_html(const struct summary *s, struct strbuf *out);
/* Text for HTML: markup escaped, control characters and bytes not UTF-8 as U+FFFD. */
void report_html_text(struct strbuf *out, const char *str);

/*
 * Timeline charts (CPU, memory, GPU utilization and memory, PCIe/NVLink,
 * power; events marked; one panel per device for multi-GPU jobs) written
 * to path as PNG, PDF or SVG by its extension (cairo).  -EINVAL for
 * another extension (with a message), -EIO when cairo fails.  A panel per
 * app metric follows the job's (app NULL: none).
 */
int plot_write(const char *path, const struct summary *s, const struct jobseries *js,
	       const struct analysis *an, const struct app_summary *app);
/* Whether plot_write knows path's extension. */
bool plot_format_known(const char *path);

/* The history tables (analysis/history.h), in rows as history_sort left them. */
struct history;
int history_text(const struct history *h, struct strbuf *out);
int history_json(const struct history *h, struct strbuf *out);
int history_csv(const struct history *h, struct strbuf *out);
int history_html(const struct history *h, struct strbuf *out);

#endif
