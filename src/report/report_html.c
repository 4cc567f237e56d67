/*
 * report_html.c - the run report as one self-contained HTML page: header,
 * verdicts, key figures, the analysis, inline SVG line charts of the job
 * series, the busiest processes and the events.
 *
 * No script and no URL anywhere: markup plus CSS in one <style>, and a
 * Content-Security-Policy that forbids fetching anything, so the page
 * opens offline and never calls home.  Charts scale through their viewBox
 * (phone to wide screen); wide tables scroll sideways.  Everything that
 * comes from the job (command, names, messages) goes through html_text(),
 * which escapes markup and drops control characters; a figure that is
 * missing prints as an em dash, never as 0, and a chart line breaks where
 * a value is missing instead of being drawn through it.
 */
#include "report/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fmt.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "report/chart.h"

#define B(buf) buf, sizeof(buf)

#define MISSING	    "\xe2\x80\x94" /* an em dash: a figure that is not known */
#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD, for control characters and bad bytes */
#define ELLIPSIS    "\xe2\x80\xa6"
#define INK	    "#5b6472" /* a series in the text's colour: muted, as the axes */

#define MAX_PROCS	15  /* rows in the process table */
#define MAX_EVENT_MARKS 100 /* events marked on each chart */
#define TITLE_MAX_BYTES 80  /* of the command in <title> */

/* Chart geometry, in viewBox units. */
#define CW  560.0 /* width */
#define CH  270.0 /* height */
#define CML 58.0  /* margins: left (y tick labels) */
#define CMR 14.0  /* right */
#define CMT 36.0  /* top (the y axis title) */
#define CMB 46.0  /* bottom (x tick labels and title) */
#define CPW (CW - CML - CMR)
#define CPH (CH - CMT - CMB)

/* Okabe-Ito and friends: tell-apart colours, also for colour-blind readers. */
static const char *const palette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00",
				      "#56b4e9", "#8c564b", "#7f7f7f", "#bcbd22", "#17becf"};

static const char css[] =
    ":root{--fg:#1d2430;--muted:#5b6472;--bg:#fff;--card:#f4f6f9;--line:#d6dbe2;"
    "--info:#2f6fb3;--warn:#a86400;--crit:#c62828}\n"
    "@media (prefers-color-scheme:dark){:root{--fg:#e6e9ee;--muted:#9aa3ae;--bg:#14181e;"
    "--card:#1d232b;--line:#38414c;--info:#6aa7e8;--warn:#e0a040;--crit:#ef6a6a}}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0;background:var(--bg);color:var(--fg);"
    "font:15px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif}\n"
    "main{max-width:1180px;margin:0 auto;padding:16px}\n"
    "h1{font-size:1.4em;margin:.2em 0 .4em;overflow-wrap:anywhere}\n"
    "h2{font-size:1.15em;margin:1.6em 0 .6em;padding-bottom:.2em;"
    "border-bottom:1px solid var(--line)}\n"
    "code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92em}\n"
    ".cmd{background:var(--card);padding:8px 10px;border-radius:6px;overflow-wrap:anywhere}\n"
    "dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0}\n"
    "dl.meta dt{color:var(--muted)}\n"
    "dl.meta dd{margin:0;overflow-wrap:anywhere}\n"
    ".bad{color:var(--crit);font-weight:600}\n"
    ".verdict{border-left:5px solid var(--info);background:var(--card);border-radius:6px;"
    "padding:8px 12px;margin:10px 0}\n"
    ".verdict.warning{border-color:var(--warn)}\n"
    ".verdict.critical{border-color:var(--crit)}\n"
    ".verdict p{margin:.3em 0}\n"
    ".badge{display:inline-block;font-size:.72em;font-weight:700;text-transform:uppercase;"
    "letter-spacing:.04em;padding:1px 7px;border-radius:10px;color:#fff;"
    "background:var(--info);margin-right:6px;vertical-align:2px}\n"
    ".warning .badge{background:var(--warn)}\n"
    ".critical .badge{background:var(--crit)}\n"
    ".advice{font-weight:600}\n"
    ".kind{color:var(--muted);font-size:.8em;margin-left:6px}\n"
    ".scroll{overflow-x:auto}\n"
    "table{border-collapse:collapse;font-size:.9em}\n"
    "th,td{padding:3px 12px 3px 0;text-align:left;vertical-align:top;"
    "border-bottom:1px solid var(--line)}\n"
    "th{color:var(--muted);font-weight:600}\n"
    ".n{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}\n"
    "td.cmd{background:none;padding:3px 0;min-width:16em;overflow-wrap:anywhere}\n"
    ".figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,230px),1fr));"
    "gap:10px}\n"
    ".fig{background:var(--card);border-radius:6px;padding:8px 12px}\n"
    ".fig .k{color:var(--muted);font-size:.85em}\n"
    ".fig .v{font-size:1.35em;font-weight:650}\n"
    ".fig .d{color:var(--muted);font-size:.85em}\n"
    "dl.analysis dt{font-weight:600;margin-top:.5em}\n"
    "dl.analysis dd{margin:0 0 0 1em}\n"
    ".charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,520px),1fr));"
    "gap:16px}\n"
    "figure{margin:0;background:var(--card);border-radius:6px;padding:8px;min-width:0}\n"
    "figcaption{font-weight:600;margin:0 0 4px}\n"
    "svg.chart{display:block;width:100%;height:auto}\n"
    "svg .grid{stroke:var(--line);stroke-width:1}\n"
    "svg .frame{stroke:var(--muted);stroke-width:1}\n"
    "svg text{fill:var(--muted);font-size:14px}\n"
    "svg text.ytitle,svg text.xtitle{fill:var(--fg)}\n"
    "svg .ref{stroke:var(--fg);stroke-width:1.5;stroke-dasharray:7 5;fill:none}\n"
    "svg .ev{stroke:var(--muted);stroke-width:1;stroke-dasharray:2 3}\n"
    "svg text.evn{font-size:11px}\n"
    "svg path.s{fill:none;stroke-width:2;stroke-linejoin:round;stroke-linecap:round}\n"
    "@media (max-width:600px){svg text{font-size:19px}svg text.evn{font-size:14px}"
    "svg path.s{stroke-width:3}}\n"
    ".legend{list-style:none;padding:0;margin:4px 0 0;display:flex;flex-wrap:wrap;"
    "gap:2px 14px;font-size:.85em}\n"
    ".sw{display:inline-block;width:16px;height:0;border-top:3px solid;"
    "vertical-align:middle;margin-right:5px}\n"
    ".sw.ref{border-top:2px dashed var(--fg)}\n"
    ".sw.ev{border-top:2px dotted var(--muted)}\n"
    ".muted{color:var(--muted)}\n"
    "footer{margin:2em 0 1em;color:var(--muted);font-size:.85em}\n";

/* --- text ------------------------------------------------------------- */

static void html_char(struct strbuf *out, unsigned char c)
{
	switch (c) {
	case '&':
		strbuf_addstr(out, "&amp;");
		break;
	case '<':
		strbuf_addstr(out, "&lt;");
		break;
	case '>':
		strbuf_addstr(out, "&gt;");
		break;
	case '"':
		strbuf_addstr(out, "&quot;");
		break;
	case '\'':
		strbuf_addstr(out, "&#39;");
		break;
	case '\t':
	case '\n':
	case '\r':
		strbuf_addch(out, ' ');
		break;
	default:
		if (c < 0x20 || c == 0x7f)
			strbuf_addstr(out, REPLACEMENT);
		else
			strbuf_addch(out, (char)c);
	}
}

/*
 * Text for an element or an attribute value: markup characters escaped,
 * whitespace controls as spaces, other control characters (C0, DEL, C1)
 * and bytes that are not UTF-8 as U+FFFD.  At most max bytes of str are
 * shown (a code point is never cut), then an ellipsis.
 */
static void html_text_max(struct strbuf *out, const char *str, size_t max)
{
	const unsigned char *p = (const unsigned char *)(str ? str : "");
	size_t used = 0, left = strlen((const char *)p);
	uint32_t cp;

	while (*p) {
		size_t n = utf8_decode((const char *)p, left, &cp);

		if (used + (n ? n : 1) > max) {
			strbuf_addstr(out, ELLIPSIS);
			return;
		}
		if (n == 0) {
			strbuf_addstr(out, REPLACEMENT);
			n = 1;
		} else if (n == 1) {
			html_char(out, *p);
		} else if (cp <= 0x9f) {
			strbuf_addstr(out, REPLACEMENT);
		} else {
			strbuf_add(out, p, n);
		}
		p += n;
		used += n;
		left -= n;
	}
}

static void html_text(struct strbuf *out, const char *str)
{
	html_text_max(out, str, SIZE_MAX);
}

void report_html_text(struct strbuf *out, const char *str)
{
	html_text(out, str);
}

/* A number with a unit suffix, or the dash when it is not known. */
static void html_fixed(struct strbuf *out, double v, int decimals, const char *suffix)
{
	if (!isfinite(v))
		strbuf_addstr(out, MISSING);
	else
		strbuf_addf(out, "%.*f%s", decimals, v, suffix);
}

static void html_bytes(struct strbuf *out, double v)
{
	char buf[32];

	if (!isfinite(v) || v < 0)
		strbuf_addstr(out, MISSING);
	else
		strbuf_addstr(out, fmt_bytes(B(buf), (uint64_t)llround(v)));
}

static void html_duration(struct strbuf *out, int64_t ms)
{
	char buf[40];

	format_duration_ms(ms, B(buf));
	html_text(out, buf);
}

/* --- header ----------------------------------------------------------- */

static bool is_run(const struct job_record *j)
{
	return !j->scheduler[0] || strcmp(j->scheduler, "run") == 0;
}

/* "jobscope run 12 “name”", "jobscope job slurm:123 ..." */
static void job_title(const struct job_record *j, struct strbuf *out)
{
	if (is_run(j)) {
		strbuf_addf(out, "jobscope run %lld", (long long)j->id);
	} else {
		strbuf_addstr(out, "jobscope job ");
		html_text(out, j->scheduler);
		strbuf_addch(out, ':');
		html_text(out, j->job_id);
	}
	if (j->name[0]) {
		strbuf_addstr(out, " \xe2\x80\x9c");
		html_text(out, j->name);
		strbuf_addstr(out, "\xe2\x80\x9d");
	}
}

static void head(const struct summary *s, struct strbuf *out)
{
	strbuf_addstr(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
			   "<meta name=\"viewport\" content=\"width=device-width, "
			   "initial-scale=1\">\n"
			   "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
			   "'none'; style-src 'unsafe-inline'\">\n"
			   "<meta name=\"generator\" content=\"jobscope " JOBSCOPE_VERSION "\">\n"
			   "<title>");
	job_title(&s->job, out);
	strbuf_addstr(out, ": ");
	html_text_max(out, s->job.command, TITLE_MAX_BYTES);
	strbuf_addf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n", css);
}

static void meta_row(struct strbuf *out, const char *term)
{
	strbuf_addf(out, "<dt>%s</dt><dd>", term);
}

static void header_exit(const struct job_record *j, struct strbuf *out)
{
	bool bad = j->has_exit && (j->signal || j->exit_code || j->timed_out);

	strbuf_addstr(out, bad ? "<dt>exit</dt><dd class=\"bad\">" : "<dt>exit</dt><dd>");
	if (!j->has_exit) {
		strbuf_addstr(out, MISSING " (not recorded)");
	} else if (j->signal) {
		strbuf_addf(out, "killed by signal %d (", j->signal);
		html_text(out, strsignal(j->signal));
		strbuf_addf(out, "), status %d", 128 + j->signal);
	} else {
		strbuf_addf(out, "exit code %d", j->exit_code);
	}
	if (j->has_exit && j->timed_out)
		strbuf_addstr(out, "; timed out: stopped by --timeout");
	strbuf_addstr(out, "</dd>\n");
}

/* Where a reservation came from, in words (job.h's reservation_source). */
static const char *reservation_words(const char *source)
{
	if (strcmp(source, "slurm_env") == 0)
		return "the Slurm environment";
	if (strcmp(source, "pod_resources") == 0)
		return "the kubelet's pod resources, cgroup limits";
	return "cgroup limits";
}

/* What a scheduler reserved (agent jobs). */
static void header_reservation(const struct job_record *j, struct strbuf *out)
{
	char mem[32];

	if (!j->reservation_source[0])
		return;
	meta_row(out, "reserved");
	if (j->reserved_cpus > 0)
		strbuf_addf(out, "%.4g CPU%s", j->reserved_cpus, j->reserved_cpus == 1 ? "" : "s");
	else
		strbuf_addstr(out, MISSING " CPUs");
	if (j->reserved_mem_bytes)
		strbuf_addf(out, ", %s memory", fmt_bytes(B(mem), j->reserved_mem_bytes));
	if (j->has_reserved_gpus)
		strbuf_addf(out, ", %d GPU%s", j->reserved_gpus, j->reserved_gpus == 1 ? "" : "s");
	strbuf_addf(out, " (from %s)</dd>\n", reservation_words(j->reservation_source));
}

static void header(const struct summary *s, struct strbuf *out)
{
	const struct job_record *j = &s->job;
	char start[40], mem[32];

	strbuf_addstr(out, "<header>\n<h1>");
	job_title(j, out);
	strbuf_addstr(out, "</h1>\n<p class=\"cmd\"><code>");
	html_text(out, j->command);
	strbuf_addstr(out, "</code></p>\n<dl class=\"meta\">\n");
	meta_row(out, "host");
	html_text(out, j->hostname);
	if (j->host_cores > 0)
		strbuf_addf(out, " (%d cores, %s)", j->host_cores,
			    fmt_bytes(B(mem), j->host_mem_bytes));
	strbuf_addstr(out, "</dd>\n");
	if (j->user[0]) {
		meta_row(out, "user");
		html_text(out, j->user);
		strbuf_addstr(out, "</dd>\n");
	}
	meta_row(out, "started");
	if (j->start_ms > 0) {
		format_rfc3339_ms(j->start_ms, B(start));
		html_text(out, start);
	} else {
		strbuf_addstr(out, MISSING);
	}
	strbuf_addstr(out, "</dd>\n");
	meta_row(out, "duration");
	if (j->end_ms > 0)
		html_duration(out, j->end_ms - j->start_ms);
	else
		strbuf_addstr(out, MISSING " (still running or interrupted)");
	strbuf_addstr(out, "</dd>\n");
	header_exit(j, out);
	header_reservation(j, out);
	strbuf_addstr(out, "</dl>\n</header>\n");
}

/* --- verdicts --------------------------------------------------------- */

static bool ends_with(const char *str, const char *suffix)
{
	size_t a = strlen(str), b = strlen(suffix);

	return a >= b && strcmp(str + a - b, suffix) == 0;
}

/* An evidence value in the unit its name ends with. */
static void evidence_value(struct strbuf *out, const char *name, double v)
{
	char buf[32];
	const char *sign = v < 0 ? "-" : "";

	if (!isfinite(v))
		strbuf_addstr(out, MISSING);
	else if (ends_with(name, "_bps") || ends_with(name, "_bytes_per_s"))
		strbuf_addf(out, "%s%s", sign, fmt_rate(B(buf), fabs(v)));
	else if (ends_with(name, "_bytes"))
		strbuf_addf(out, "%s%s", sign, fmt_bytes(B(buf), (uint64_t)llround(fabs(v))));
	else if (ends_with(name, "_pct"))
		strbuf_addf(out, "%.1f%%", v);
	else if (ends_with(name, "_frac"))
		strbuf_addf(out, "%.1f%%", v * 100.0);
	else if (ends_with(name, "_s") && fabs(v) < 1e12)
		html_duration(out, llround(v * 1000.0));
	else
		strbuf_addf(out, "%.4g", v);
}

static void verdict_evidence_table(const struct verdict *v, struct strbuf *out)
{
	if (!v->nevidence)
		return;
	strbuf_addstr(out, "<div class=\"scroll\"><table class=\"evidence\">\n"
			   "<tr><th>evidence</th><th class=\"n\">value</th></tr>\n");
	for (size_t k = 0; k < v->nevidence; k++) {
		const struct verdict_evidence *e = &v->evidence[k];

		strbuf_addstr(out, "<tr><td><code>");
		html_text(out, e->name);
		strbuf_addstr(out, "</code></td><td class=\"n\"");
		if (isfinite(e->value))
			strbuf_addf(out, " title=\"%.17g\"", e->value);
		strbuf_addch(out, '>');
		evidence_value(out, e->name, e->value);
		strbuf_addstr(out, "</td></tr>\n");
	}
	strbuf_addstr(out, "</table></div>\n");
}

static void section_verdicts(const struct analysis *a, struct strbuf *out)
{
	strbuf_addstr(out, "<section id=\"verdicts\">\n<h2>Verdicts</h2>\n");
	if (!a->nverdicts)
		strbuf_addstr(out, "<p>Nothing to fix: it used what it had.</p>\n");
	for (size_t i = 0; i < a->nverdicts; i++) {
		const struct verdict *v = &a->verdicts[i];
		const char *sev = verdict_severity_name(v->severity);

		strbuf_addf(out, "<div class=\"verdict %s\">\n<p><span class=\"badge\">%s</span>",
			    sev, sev);
		html_text(out, v->message);
		strbuf_addstr(out, "<span class=\"kind\">");
		html_text(out, v->kind);
		strbuf_addstr(out, "</span></p>\n");
		if (v->advice[0]) {
			strbuf_addstr(out, "<p class=\"advice\">\xe2\x86\x92 ");
			html_text(out, v->advice);
			strbuf_addstr(out, "</p>\n");
		}
		verdict_evidence_table(v, out);
		strbuf_addstr(out, "</div>\n");
	}
	strbuf_addstr(out, "</section>\n");
}

/* --- key figures ------------------------------------------------------ */

static void fig_begin(struct strbuf *out, const char *key)
{
	strbuf_addf(out, "<div class=\"fig\"><div class=\"k\">%s</div><div class=\"v\">", key);
}

static void fig_detail(struct strbuf *out)
{
	strbuf_addstr(out, "</div><div class=\"d\">");
}

static void fig_end(struct strbuf *out)
{
	strbuf_addstr(out, "</div></div>\n");
}

static void fig_cpu(const struct summary *s, const struct analysis *a, struct strbuf *out)
{
	fig_begin(out, "CPU efficiency");
	html_fixed(out, a->cpu_eff_pct, 1, "%");
	fig_detail(out);
	html_fixed(out, a->cores_avg, 2, " cores on average");
	if (isfinite(a->cores_reserved))
		strbuf_addf(out, " of %.4g %s", a->cores_reserved,
			    a->cores_from_reservation ? "reserved" : "allowed");
	strbuf_addstr(out, ", p95 ");
	html_fixed(out, a->cores_p95, 2, "");
	fig_end(out);

	fig_begin(out, "CPU time");
	html_fixed(out, s->samples > 0 ? summary_cpu_seconds(s) : NAN, 2, " s");
	fig_detail(out);
	if (s->samples > 0)
		strbuf_addf(out, "user %.2f s, system %.2f s", s->last.user_ms / 1000.0,
			    s->last.system_ms / 1000.0);
	else
		strbuf_addstr(out, MISSING);
	fig_end(out);
}

static void fig_memory(const struct summary *s, const struct analysis *a, struct strbuf *out)
{
	fig_begin(out, "Memory peak vs reserved");
	html_bytes(out, a->mem_peak_bytes);
	strbuf_addstr(out, " / ");
	html_bytes(out, a->mem_reserved_bytes);
	fig_detail(out);
	if (isfinite(a->mem_eff_pct))
		strbuf_addf(out, "%.1f%% of the reservation", a->mem_eff_pct);
	else
		strbuf_addstr(out, "nothing reserved");
	if (s->job.host_mem_bytes && isfinite(a->mem_peak_bytes))
		strbuf_addf(out, "; %.1f%% of the host",
			    a->mem_peak_bytes * 100.0 / (double)s->job.host_mem_bytes);
	fig_end(out);
}

static void fig_io(const struct summary *s, struct strbuf *out)
{
	bool have = s->has_io && (s->last.valid & JS_IO);
	char a[32], b[32];

	fig_begin(out, "Storage read / written");
	if (have)
		strbuf_addf(out, "%s / %s", fmt_bytes(B(a), s->last.read_bytes),
			    fmt_bytes(B(b), s->last.write_bytes));
	else
		strbuf_addstr(out, MISSING);
	fig_detail(out);
	if (have)
		strbuf_addf(out, "peak %s read, %s written", fmt_rate(B(a), s->read_peak_bps),
			    fmt_rate(B(b), s->write_peak_bps));
	if (have && s->origin.kind == SAMPLE_SOURCE_PROMETHEUS && s->origin.io_from[0]) {
		strbuf_addstr(out, "; from ");
		html_text(out, s->origin.io_from);
	} else if (!have)
		html_text(out, s->origin.kind == SAMPLE_SOURCE_PROMETHEUS
				   ? s->origin.io_from
				   : "/proc/PID/io not readable");
	fig_end(out);
}

/* Two activities (enum gpu_activity) in one figure: the job's part, then the devices'. */
static void fig_activity_pair(const struct analysis *a, const char *title, int x, int y,
			      struct strbuf *out)
{
	const double *job = a->gpu_activity_job_pct, *dev = a->gpu_activity_pct;

	if (!isfinite(dev[x]) && !isfinite(dev[y]))
		return;
	fig_begin(out, title);
	html_fixed(out, job[x], 1, "%");
	strbuf_addstr(out, " / ");
	html_fixed(out, job[y], 1, "%");
	fig_detail(out);
	strbuf_addstr(out, "the job's part, over its time on its GPUs (GPM); the devices': ");
	html_fixed(out, dev[x], 1, "%");
	strbuf_addstr(out, " / ");
	html_fixed(out, dev[y], 1, "%");
	fig_end(out);
}

/* What the SMs did and how long power held the GPUs back, where the driver says. */
static void fig_gpu_activity(const struct analysis *a, struct strbuf *out)
{
	fig_activity_pair(a, "SM active / occupancy", GPU_ACTIVITY_SM, GPU_ACTIVITY_SM_OCCUPANCY,
			  out);
	fig_activity_pair(a, "Tensor / DRAM active", GPU_ACTIVITY_TENSOR, GPU_ACTIVITY_DRAM, out);
	fig_activity_pair(a, "FP32 / FP16 active", GPU_ACTIVITY_FP32, GPU_ACTIVITY_FP16, out);
	if (isfinite(a->gpu_throttle_s[GPU_VIOLATION_POWER])) {
		fig_begin(out, "Throttled by power / thermal");
		html_fixed(out, a->gpu_throttle_s[GPU_VIOLATION_POWER], 1, " s");
		strbuf_addstr(out, " / ");
		html_fixed(out, a->gpu_throttle_s[GPU_VIOLATION_THERMAL], 1, " s");
		fig_detail(out);
		strbuf_addstr(out, "the driver's violation counters, summed over the job's GPUs "
				   "(GPU-seconds)");
		fig_end(out);
	}
}

static void fig_gpus(const struct analysis *a, struct strbuf *out)
{
	fig_begin(out, "GPUs reserved / touched / busy");
	if (a->gpus_reserved >= 0)
		strbuf_addf(out, "%d", a->gpus_reserved);
	else
		strbuf_addstr(out, MISSING);
	if (a->gpus_on_node > 0 && a->gpus_touched >= 0)
		strbuf_addf(out, " / %d / %d", a->gpus_touched, a->gpus_busy);
	else
		strbuf_addstr(out, " / " MISSING " / " MISSING);
	fig_detail(out);
	if (a->gpus_on_node > 0)
		strbuf_addf(out, "%d on the node; busy: more than 5%% on average", a->gpus_on_node);
	else
		strbuf_addstr(out, "no GPU on the node");
	fig_end(out);

	fig_begin(out, "GPU utilization mean / p95");
	html_fixed(out, a->gpu_util_mean, 1, "%");
	strbuf_addstr(out, " / ");
	html_fixed(out, a->gpu_util_p95, 0, "%");
	fig_detail(out);
	strbuf_addstr(out, "over the job's GPUs; memory peak ");
	html_bytes(out, a->gpu_mem_peak_bytes);
	strbuf_addstr(out, " of ");
	html_bytes(out, a->gpu_mem_total_bytes);
	fig_end(out);
	fig_gpu_activity(a, out);
}

static void section_figures(const struct summary *s, const struct analysis *a, struct strbuf *out)
{
	strbuf_addstr(out,
		      "<section id=\"figures\">\n<h2>Key figures</h2>\n<div class=\"figs\">\n");
	fig_cpu(s, a, out);
	fig_memory(s, a, out);
	fig_gpus(a, out);
	fig_io(s, out);
	strbuf_addstr(out, "</div>\n</section>\n");
}

/* --- analysis --------------------------------------------------------- */

static void analysis_row(struct strbuf *out, const char *term)
{
	strbuf_addf(out, "<dt>%s</dt>\n<dd>", term);
}

static void trend_row(const char *term, const struct memory_trend *t, struct strbuf *out)
{
	char rate[32];

	analysis_row(out, term);
	if (!t->valid) {
		strbuf_addstr(out, MISSING " (not judged)</dd>\n");
		return;
	}
	if (!memory_trend_steady(t)) {
		/* as the text report: a line that explains little of it has no rate */
		strbuf_addstr(out, "no steady trend</dd>\n");
		return;
	}
	fmt_bytes(B(rate), (uint64_t)llround(fabs(t->slope_bps * 3600)));
	strbuf_addf(out, "%s%s/h over the second half of the job (r\xc2\xb2 %.2f)",
		    t->slope_bps < 0 ? "-" : "+", rate, t->r2);
	if (t->growing && isfinite(t->time_to_limit_s)) {
		strbuf_addstr(out, ", reaches its limit (");
		html_bytes(out, t->limit_bytes);
		strbuf_addstr(out, ") in ~");
		html_duration(out, llround(t->time_to_limit_s * 1000.0));
	} else if (t->growing) {
		strbuf_addstr(out, ", growing; no known limit to reach");
	}
	strbuf_addstr(out, "</dd>\n");
}

static void hogging_row(const struct analysis *a, struct strbuf *out)
{
	analysis_row(out, "Hogging");
	if (!isfinite(a->hog_score)) {
		strbuf_addstr(out, a->too_short ? MISSING " (too short to judge)"
				   : isfinite(a->idle_cores_avg) || isfinite(a->idle_gpus_avg)
				       ? MISSING " (how busy the rest of the node was is unknown)"
				       : MISSING " (nothing reserved to judge against)");
		strbuf_addstr(out, "</dd>\n");
		return;
	}
	html_fixed(out, a->idle_cores_avg, 1, " idle cores, ");
	html_fixed(out, a->idle_gpus_avg, 1, " idle GPUs reserved; the rest of the node ");
	html_fixed(out, a->node_busy_pct, 0, "% busy");
	strbuf_addf(out, " (score %.2f)</dd>\n", a->hog_score);
}

/* "Job type: batch: sustained work ..." */
static void class_row(struct strbuf *out, const char *term, const char *name, const char *reason)
{
	analysis_row(out, term);
	html_text(out, name);
	strbuf_addstr(out, ": ");
	html_text(out, reason);
	strbuf_addstr(out, "</dd>\n");
}

static void period_row(const struct analysis *a, struct strbuf *out)
{
	analysis_row(out, "Period");
	if (a->has_period) {
		strbuf_addf(out, "%.2f s in ", a->period_s);
		html_text(out, a->period_metric);
		strbuf_addf(out, " (confidence %.2f%s)", a->period_confidence,
			    a->cyclic ? ", cyclic" : "");
	} else {
		strbuf_addstr(out, a->too_short ? MISSING " (too short to judge)" : "none found");
	}
	strbuf_addstr(out, "</dd>\n");
}

static void section_analysis(const struct analysis *a, struct strbuf *out)
{
	strbuf_addstr(out,
		      "<section id=\"analysis\">\n<h2>Analysis</h2>\n<dl class=\"analysis\">\n");
	class_row(out, "Job type",
		  a->job_type == JOB_TYPE_UNKNOWN ? "cannot be judged" : job_type_name(a->job_type),
		  a->job_type_reason);
	class_row(out, "Bottleneck",
		  a->bottleneck == BOTTLENECK_UNKNOWN ? "none clear"
						      : bottleneck_name(a->bottleneck),
		  a->bottleneck_reason);
	analysis_row(out, "Scaling");
	html_text(out, a->scaling_cpu[0] ? a->scaling_cpu : MISSING);
	if (a->scaling_gpu[0]) {
		strbuf_addstr(out, "<br>");
		html_text(out, a->scaling_gpu);
	}
	strbuf_addstr(out, "</dd>\n");
	period_row(a, out);
	trend_row("Memory trend", &a->host_mem, out);
	trend_row("GPU memory trend", &a->gpu_mem, out);
	hogging_row(a, out);
	strbuf_addstr(out, "</dl>\n</section>\n");
}

/* --- charts ----------------------------------------------------------- */

/* The time axis in s, min or h (by the job's length), a tick every step of those. */
struct time_axis {
	double div, step;
	const char *unit;
};

static void time_axis_pick(struct time_axis *ax, double span_s)
{
	if (span_s <= 180) {
		ax->div = 1;
		ax->unit = "s";
	} else if (span_s <= 3 * 3600) {
		ax->div = 60;
		ax->unit = "min";
	} else {
		ax->div = 3600;
		ax->unit = "h";
	}
	ax->step = chart_nice_step(span_s / ax->div / 5);
}

/* What every chart of the page shares: the model and its time axis. */
struct chart_frame {
	const struct chart_set *cs;
	struct time_axis x;
};

static const char *series_colour(const struct chart_series *cs)
{
	if (cs->colour == CHART_INK)
		return INK;
	return palette[(size_t)cs->colour % (sizeof(palette) / sizeof(palette[0]))];
}

static double chart_x(const struct chart_frame *f, double t_s)
{
	if (t_s < 0)
		t_s = 0;
	if (t_s > f->cs->span_s)
		t_s = f->cs->span_s;
	return CML + CPW * t_s / f->cs->span_s;
}

static double chart_y(const struct chart_axis *y, double v)
{
	double r = v / (y->max * y->div);

	if (r < 0)
		r = 0;
	if (r > 1)
		r = 1;
	return CMT + CPH * (1 - r);
}

static void chart_grid(const struct chart_frame *f, const struct chart_panel *c, struct strbuf *out)
{
	const struct chart_axis *y = &c->y;
	double span = f->cs->span_s;
	int k;

	for (k = 0; k <= 40 && k * y->step <= y->max * (1 + 1e-9); k++) {
		double py = chart_y(y, k * y->step * y->div);

		strbuf_addf(out,
			    "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
			    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n",
			    CML, py, CML + CPW, py, CML - 6, py + 5, k * y->step);
	}
	for (k = 0; k <= 60 && k * f->x.step <= span / f->x.div * (1 + 1e-9); k++) {
		double px = chart_x(f, k * f->x.step * f->x.div);

		strbuf_addf(
		    out,
		    "<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
		    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.4g</text>\n",
		    px, CMT + CPH, px, CMT + CPH + 4, px, CMT + CPH + 19, k * f->x.step);
	}
	strbuf_addf(out,
		    "<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
		    "<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		    CML, CMT, CML, CMT + CPH, CML, CMT + CPH, CML + CPW, CMT + CPH);
	strbuf_addstr(out, "<text class=\"ytitle\" x=\"4\" y=\"20\">");
	html_text(out, c->quantity);
	strbuf_addstr(out, " (");
	html_text(out, y->unit);
	strbuf_addf(out,
		    ")</text>\n<text class=\"xtitle\" x=\"%.1f\" y=\"%.1f\" "
		    "text-anchor=\"middle\">time since start (",
		    CML + CPW / 2, CH - 4);
	html_text(out, f->x.unit);
	strbuf_addstr(out, ")</text>\n");
}

static void chart_ref(const struct chart_panel *c, struct strbuf *out)
{
	double py;

	if (!isfinite(c->ref) || c->ref <= 0)
		return;
	py = chart_y(&c->y, c->ref);
	strbuf_addf(out, "<line class=\"ref\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		    CML, py, CML + CPW, py);
}

/* Events as dotted verticals, numbered as in the events list. */
static size_t chart_events(const struct chart_frame *f, struct strbuf *out)
{
	const struct chart_set *cs = f->cs;
	size_t marked = 0;

	for (size_t i = 0; i < cs->nevents && marked < MAX_EVENT_MARKS; i++) {
		const struct event_record *e = cs->events[i].event;
		double px = chart_x(f, cs->events[i].t_s);

		strbuf_addf(out, "<g><title>#%zu +", cs->events[i].number);
		html_duration(out, e->ts_ms - cs->origin_ms);
		strbuf_addch(out, ' ');
		html_text(out, e->kind);
		strbuf_addstr(out, ": ");
		html_text(out, e->message);
		/* the number right of its line, left of it at the right edge */
		strbuf_addf(out,
			    "</title><line class=\"ev\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
			    "y2=\"%.1f\"/><text class=\"evn\" x=\"%.1f\" y=\"%.1f\" "
			    "text-anchor=\"%s\">%zu</text></g>\n",
			    px, CMT, px, CMT + CPH, px > CML + CPW - 24 ? px - 2 : px + 2, CMT + 10,
			    px > CML + CPW - 24 ? "end" : "start", cs->events[i].number);
		marked++;
	}
	return marked;
}

/*
 * One series: a path that lifts the pen at every missing value (never a
 * line through a gap, never a 0 for it), and a dot for a value alone
 * between gaps, which a path would not show.
 */
static void chart_line(const struct chart_frame *f, const struct chart_axis *y,
		       const struct chart_series *cs, struct strbuf *out)
{
	const double *v = cs->v, *t = f->cs->t_s;
	size_t n = f->cs->npoints;
	const char *color = series_colour(cs);
	bool pen = false;

	strbuf_addf(out, "<path class=\"s\" stroke=\"%s\"%s d=\"", color,
		    cs->dashed ? " stroke-dasharray=\"6 4\"" : "");
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(v[i])) {
			pen = false;
			continue;
		}
		strbuf_addf(out, "%s%.1f %.1f", pen ? " L" : (i ? " M" : "M"), chart_x(f, t[i]),
			    chart_y(y, v[i]));
		pen = true;
	}
	strbuf_addstr(out, "\"/>\n");
	for (size_t i = 0; i < n; i++) {
		bool alone = isfinite(v[i]) && (i == 0 || !isfinite(v[i - 1])) &&
			     (i + 1 == n || !isfinite(v[i + 1]));

		if (alone)
			strbuf_addf(out,
				    "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
				    chart_x(f, t[i]), chart_y(y, v[i]), color);
	}
}

static void chart_legend(const struct chart_panel *c, size_t marked, struct strbuf *out)
{
	strbuf_addstr(out, "<ul class=\"legend\">\n");
	for (size_t k = 0; k < c->nseries; k++) {
		strbuf_addf(out, "<li><span class=\"sw\" style=\"border-color:%s%s\"></span>",
			    series_colour(&c->series[k]),
			    c->series[k].dashed ? ";border-top-style:dashed" : "");
		html_text(out, c->series[k].label);
		strbuf_addstr(out, "</li>\n");
	}
	if (isfinite(c->ref) && c->ref > 0) {
		strbuf_addstr(out, "<li><span class=\"sw ref\"></span>");
		html_text(out, c->ref_label);
		strbuf_addstr(out, "</li>\n");
	}
	if (marked)
		strbuf_addstr(out, "<li><span class=\"sw ev\"></span>events, numbered as in the "
				   "events list</li>\n");
	strbuf_addstr(out, "</ul>\n");
}

static void chart_render(const struct chart_frame *f, const struct chart_panel *c,
			 struct strbuf *out)
{
	size_t marked;

	strbuf_addstr(out, "<figure>\n<figcaption>");
	html_text(out, c->title);
	strbuf_addstr(out, "</figcaption>\n");
	if (!c->nseries) {
		strbuf_addstr(out, "<p class=\"muted\">");
		html_text(out, c->empty);
		strbuf_addstr(out, "</p>\n</figure>\n");
		return;
	}
	strbuf_addf(out,
		    "<svg class=\"chart\" id=\"chart-%s\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
		    "aria-label=\"",
		    c->id, CW, CH);
	html_text(out, c->title);
	strbuf_addstr(out, "\">\n");
	chart_grid(f, c, out);
	chart_ref(c, out);
	marked = chart_events(f, out);
	for (size_t k = 0; k < c->nseries; k++)
		chart_line(f, &c->y, &c->series[k], out);
	strbuf_addstr(out, "</svg>\n");
	chart_legend(c, marked, out);
	strbuf_addstr(out, "</figure>\n");
}

static int section_charts(const struct summary *s, const struct jobseries *js, struct strbuf *out)
{
	struct chart_frame f;
	struct chart_set *cs;
	int ret;

	ret = chart_set_build(s, js, &cs);
	if (ret)
		return ret;
	strbuf_addstr(out, "<section id=\"charts\">\n<h2>Timelines</h2>\n");
	if (!cs->npanels) {
		strbuf_addstr(out,
			      "<p class=\"muted\">No samples: nothing to draw.</p>\n</section>\n");
		goto out_free_charts;
	}
	f.cs = cs;
	time_axis_pick(&f.x, cs->span_s);
	strbuf_addf(out,
		    "<p class=\"muted\">Each point is the mean over %.4g s.</p>\n"
		    "<div class=\"charts\">\n",
		    (double)cs->bucket_ms / 1000.0);
	for (size_t i = 0; i < cs->npanels; i++)
		chart_render(&f, &cs->panels[i], out);
	strbuf_addstr(out, "</div>\n");
	if (!cs->node_gpus)
		strbuf_addstr(out, "<p class=\"muted\">No GPU on this node: no GPU charts.</p>\n");
	else if (cs->gpus_hidden)
		strbuf_addf(out,
			    "<p class=\"muted\">The GPU charts show the job's devices; %d other%s "
			    "on the node %s not shown.</p>\n",
			    cs->gpus_hidden, cs->gpus_hidden == 1 ? "" : "s",
			    cs->gpus_hidden == 1 ? "is" : "are");
	strbuf_addstr(out, "</section>\n");
out_free_charts:
	chart_set_free(cs);
	return 0;
}

/* --- processes and events --------------------------------------------- */

static void td_bytes(struct strbuf *out, bool have, uint64_t v)
{
	strbuf_addstr(out, "<td class=\"n\">");
	html_bytes(out, have ? (double)v : NAN);
	strbuf_addstr(out, "</td>");
}

static void proc_row(const struct summary *s, const struct proc_summary *p, struct strbuf *out)
{
	const char *cmd = p->cmdline && p->cmdline[0] ? p->cmdline : p->comm;

	strbuf_addf(out,
		    "<tr><td class=\"n\">%d</td><td class=\"n\">%d</td>"
		    "<td class=\"n\">%.2f s</td>",
		    p->pid, p->ppid, (p->user_ms + p->system_ms) / 1000.0);
	td_bytes(out, p->has_rss, p->rss_peak_bytes);
	td_bytes(out, p->has_io, p->read_bytes);
	td_bytes(out, p->has_io, p->write_bytes);
	if (s->ngpus > 0)
		td_bytes(out, p->has_gpu_mem || s->gpu_procs_known, p->gpu_mem_peak_bytes);
	strbuf_addstr(out, "<td class=\"n\">");
	if (p->end_ms)
		html_duration(out, p->end_ms - p->start_ms);
	else
		strbuf_addstr(out, "running");
	strbuf_addstr(out, "</td><td class=\"cmd\"><code>");
	html_text(out, cmd);
	strbuf_addstr(out, "</code></td></tr>\n");
}

static int section_procs(const struct summary *s, struct strbuf *out)
{
	const struct proc_summary **top;
	size_t n;

	strbuf_addstr(out, "<section id=\"processes\">\n<h2>Top processes</h2>\n");
	if (s->nprocs == 0) {
		strbuf_addstr(out, "<p class=\"muted\">No process was seen.</p>\n</section>\n");
		return 0;
	}
	top = calloc(MAX_PROCS, sizeof(*top));
	if (!top)
		return -ENOMEM;
	n = summary_procs_by_cpu(s, top, MAX_PROCS);
	strbuf_addf(out, "<p>%zu process%s in all%s.</p>\n", s->nprocs, s->nprocs == 1 ? "" : "es",
		    s->nprocs > n ? "; the busiest by CPU time" : "");
	strbuf_addstr(out, "<div class=\"scroll\"><table>\n<tr><th class=\"n\">PID</th>"
			   "<th class=\"n\">PPID</th><th class=\"n\">CPU</th>"
			   "<th class=\"n\">RSS peak</th><th class=\"n\">read</th>"
			   "<th class=\"n\">written</th>");
	if (s->ngpus > 0)
		strbuf_addstr(out, "<th class=\"n\">GPU memory</th>");
	strbuf_addstr(out, "<th class=\"n\">lived</th><th>command</th></tr>\n");
	for (size_t i = 0; i < n; i++)
		proc_row(s, top[i], out);
	strbuf_addstr(out, "</table></div>\n</section>\n");
	free(top);
	return 0;
}

static void event_row(const struct summary *s, size_t i, struct strbuf *out)
{
	const struct event_record *e = &s->events[i];
	char when[40];

	format_rfc3339_ms(e->ts_ms, B(when));
	strbuf_addf(out, "<tr><td class=\"n\">%zu</td><td class=\"n\" title=\"", i + 1);
	html_text(out, when);
	strbuf_addstr(out, e->ts_ms < s->job.start_ms ? "\">-" : "\">+");
	html_duration(out, llabs(e->ts_ms - s->job.start_ms));
	strbuf_addstr(out, "</td><td><code>");
	html_text(out, e->kind);
	strbuf_addstr(out, "</code></td><td class=\"n\">");
	if (e->has_gpu)
		strbuf_addf(out, "%d", e->gpu);
	else
		strbuf_addstr(out, MISSING);
	strbuf_addstr(out, "</td><td>");
	html_text(out, e->message);
	strbuf_addstr(out, "</td></tr>\n");
}

static void section_events(const struct summary *s, struct strbuf *out)
{
	strbuf_addstr(out, "<section id=\"events\">\n<h2>Events</h2>\n");
	if (s->nevents == 0) {
		strbuf_addstr(out, "<p class=\"muted\">None.</p>\n</section>\n");
		return;
	}
	strbuf_addstr(out, "<div class=\"scroll\"><table>\n<tr><th class=\"n\">#</th>"
			   "<th class=\"n\">time</th><th>kind</th><th class=\"n\">GPU</th>"
			   "<th>message</th></tr>\n");
	for (size_t i = 0; i < s->nevents; i++)
		event_row(s, i, out);
	strbuf_addstr(out, "</table></div>\n");
	if (s->events_dropped)
		strbuf_addf(out, "<p class=\"muted\">%llu more not shown.</p>\n",
			    (unsigned long long)s->events_dropped);
	strbuf_addstr(out, "</section>\n");
}

static void footer(const struct summary *s, struct strbuf *out)
{
	const struct job_record *j = &s->job;
	double dur = summary_duration_s(s);

	if (s->origin.kind == SAMPLE_SOURCE_PROMETHEUS) { /* prom/promsrc.h: no sampler */
		strbuf_addf(out, "<footer>\n<p>jobscope " JOBSCOPE_VERSION ": %lld points every ",
			    (long long)j->samples);
		html_duration(out, j->interval_ms);
		strbuf_addstr(out, ", read from Prometheus");
		if (s->origin.step_why[0]) {
			strbuf_addstr(out, " (that step: ");
			html_text(out, s->origin.step_why);
			strbuf_addch(out, ')');
		}
		strbuf_addstr(out, ".</p>\n</footer>\n");
		return;
	}
	strbuf_addf(out, "<footer>\n<p>jobscope " JOBSCOPE_VERSION ": %lld samples every ",
		    (long long)j->samples);
	html_duration(out, j->interval_ms);
	strbuf_addf(out, "; the sampler used %.3f s of CPU", j->sampler_cpu_ms / 1000.0);
	if (dur > 0)
		strbuf_addf(out, " (%.2f%% of one core)", j->sampler_cpu_ms / 10.0 / dur);
	strbuf_addstr(out, ".</p>\n");
	if (j->lost_samples)
		strbuf_addf(out,
			    "<p class=\"bad\">%lld of %lld samples could not be stored (see the "
			    "events): the stored copy of this job is incomplete.</p>\n",
			    (long long)j->lost_samples, (long long)j->samples);
	strbuf_addstr(out, "</footer>\n");
}

void report_html_charts(const struct chart_set *cs, size_t first, struct strbuf *out)
{
	struct chart_frame f = {.cs = cs};

	time_axis_pick(&f.x, cs->span_s);
	strbuf_addstr(out, "<div class=\"charts\">\n");
	for (size_t i = first; i < cs->npanels; i++)
		chart_render(&f, &cs->panels[i], out);
	strbuf_addstr(out, "</div>\n");
}

int report_html(const struct summary *s, const struct jobseries *js, const struct analysis *an,
		const struct cuda_tables *cuda, const struct app_summary *app, struct strbuf *out)
{
	int ret = 0;

	head(s, out);
	header(s, out);
	if (an) {
		section_verdicts(an, out);
		section_figures(s, an, out);
		section_analysis(an, out);
	}
	if (js)
		ret = section_charts(s, js, out);
	if (!ret)
		ret = section_procs(s, out);
	if (ret)
		return ret;
	report_libs_html(s, out);
	report_cuda_html(cuda, out);
	ret = report_app_html(app, s, js, out);
	if (ret)
		return ret;
	section_events(s, out);
	footer(s, out);
	strbuf_addstr(out, "</main>\n</body>\n</html>\n");
	return strbuf_error(out);
}
