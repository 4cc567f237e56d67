/*
 * plot.c - `jobscope report --plot`: the chart model's panels (chart.h)
 * over one time axis, drawn by cairo into PNG, PDF or SVG under a header:
 * a job's timelines (plot_write) or any chart set with its own words
 * (plot_chart_write: a session's, session_plot.c), or any drawing at all
 * (plot_draw_write: jobscope trial's, trial_render.c).  Panels without a
 * series are left out.  cairo is loaded on the first plot (cairo_dl.h), so
 * nothing else maps it.
 */
#include "report/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "report/cairo_dl.h"
#include "report/chart.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Layout in pixels (points in PDF and SVG). */
#define PLOT_WIDTH     1200
#define MARGIN_LEFT    86
#define MARGIN_RIGHT   24
#define HEADER_H       56 /* the job's line and the analysis' line */
#define EVENT_BAND_H   16 /* event labels above the first panel */
#define PANEL_H	       180
#define DEVICE_PANEL_H 120
#define PANEL_TITLE_H  22
#define PANEL_GAP      16 /* under each plot area: the time labels of the last one */
#define AXIS_H	       30 /* the time axis caption */
#define NO_SAMPLES_H   120
#define X_TICKS_MAX    12

enum plot_format { PLOT_UNKNOWN, PLOT_PNG, PLOT_PDF, PLOT_SVG };

struct rgb {
	double r, g, b;
};

static const struct rgb palette[] = {
    {0.122, 0.467, 0.706}, {1.000, 0.498, 0.055}, {0.173, 0.627, 0.173},
    {0.839, 0.153, 0.157}, {0.580, 0.404, 0.741}, {0.549, 0.337, 0.294},
    {0.890, 0.467, 0.761}, {0.737, 0.741, 0.133}, {0.090, 0.745, 0.812},
};
static const struct rgb ink = {0.13, 0.13, 0.13};
static const struct rgb faint_ink = {0.40, 0.40, 0.40};
static const struct rgb grid_colour = {0.90, 0.90, 0.90};
static const struct rgb frame_colour = {0.70, 0.70, 0.70};
static const struct rgb limit_colour = {0.30, 0.30, 0.30};
static const struct rgb event_colour = {0.75, 0.10, 0.45};

struct rect {
	double x, y, w, h;
};

/* What one drawing reads: the chart model and the words around it. */
struct plot {
	const struct chart_set *cs;
	const struct plot_titles *titles;
	double x_step_s; /* time between vertical grid lines */
	int width, height;
};

static enum plot_format plot_format_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *dot = strrchr(slash ? slash + 1 : path, '.');

	if (!dot)
		return PLOT_UNKNOWN;
	if (strcasecmp(dot, ".png") == 0)
		return PLOT_PNG;
	if (strcasecmp(dot, ".pdf") == 0)
		return PLOT_PDF;
	if (strcasecmp(dot, ".svg") == 0)
		return PLOT_SVG;
	return PLOT_UNKNOWN;
}

bool plot_format_known(const char *path)
{
	return plot_format_of(path) != PLOT_UNKNOWN;
}

/* ---- text ---- */

/*
 * Copies src for display: cairo puts itself in an error state on invalid
 * UTF-8 (a command line can hold any bytes), so bad bytes become '?' and
 * control characters spaces.
 */
static void text_clean(char *dst, size_t size, const char *src)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t n = strlen(src), out = 0;

	for (size_t i = 0; i < n && out + 1 < size;) {
		uint32_t cp;
		size_t len = utf8_decode(src + i, n - i, &cp);

		if (!len) {
			dst[out++] = '?';
			i++;
		} else if (out + len >= size) {
			break;
		} else if (len == 1) {
			dst[out++] = s[i] < 0x20 || s[i] == 0x7f ? ' ' : (char)s[i];
			i++;
		} else {
			memcpy(dst + out, s + i, len);
			out += len;
			i += len;
		}
	}
	dst[out] = '\0';
}

static double text_width(cairo_t *cr, const char *text)
{
	cairo_text_extents_t ext;

	cairo_fn.text_extents(cr, text, &ext);
	return ext.x_advance;
}

/* The length in bytes of the first nchars characters of clean UTF-8 text. */
static size_t utf8_offset(const char *text, size_t nchars)
{
	size_t i;

	for (i = 0; text[i]; i++)
		if (((unsigned char)text[i] & 0xc0) != 0x80 && nchars-- == 0)
			break;
	return i;
}

/*
 * Cuts clean UTF-8 text (in place) to fit max_w, ending in an ellipsis.
 * A binary search over whole characters: a 4 KiB command line costs a
 * dozen measurements, and no probe ends inside a character (cairo would
 * take that for invalid text and stop drawing).
 */
static void text_fit(cairo_t *cr, char *text, size_t size, double max_w)
{
	static const char ellipsis[] = "\xe2\x80\xa6";
	size_t len = strlen(text), lo = 0, hi = 0, keep;
	char *probe;

	if (text_width(cr, text) <= max_w || size < sizeof(ellipsis))
		return;
	probe = malloc(len + sizeof(ellipsis));
	if (!probe) {
		text[0] = '\0'; /* better no text than text over the chart */
		return;
	}
	for (size_t i = 0; i < len; i++)
		hi += ((unsigned char)text[i] & 0xc0) != 0x80; /* characters */
	while (lo < hi) {
		size_t mid = (lo + hi + 1) / 2, off = utf8_offset(text, mid);

		memcpy(probe, text, off);
		memcpy(probe + off, ellipsis, sizeof(ellipsis));
		if (text_width(cr, probe) <= max_w)
			lo = mid;
		else
			hi = mid - 1;
	}
	free(probe);
	keep = utf8_offset(text, lo);
	while (keep + sizeof(ellipsis) > size)
		keep = utf8_offset(text, --lo);
	memcpy(text + keep, ellipsis, sizeof(ellipsis));
}

static void set_colour(cairo_t *cr, struct rgb c)
{
	cairo_fn.set_source_rgb(cr, c.r, c.g, c.b);
}

static void set_font(cairo_t *cr, double size, bool bold)
{
	cairo_fn.select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
				  bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
	cairo_fn.set_font_size(cr, size);
}

/* align: 0 left, 0.5 centre, 1 right of x. */
static void show_text(cairo_t *cr, double x, double y, double align, const char *text)
{
	cairo_fn.move_to(cr, x - align * text_width(cr, text), y);
	cairo_fn.show_text(cr, text);
}
/* ---- axes ---- */

/* Time grid steps people read at a glance: 15 s, 5 min, 6 h, not 20 min. */
static double time_step_s(double span_s)
{
	static const double steps[] = {
	    0.1, 0.2, 0.5,  1,	  2,	5,     10,    15,    30,    60,	    120,    300,
	    600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800,
	};

	for (size_t i = 0; i < ARRAY_SIZE(steps); i++)
		if (span_s / steps[i] <= X_TICKS_MAX)
			return steps[i];
	return 86400.0 * chart_nice_step(span_s / 86400.0 / X_TICKS_MAX);
}

/* "0", "2.5 s", "45 s", "1 min 30 s", "2 h", "1 d 6 h": the two largest parts. */
static void format_elapsed(char *buf, size_t size, double t_s)
{
	static const struct {
		long s;
		const char *unit;
	} parts[] = {{86400, "d"}, {3600, "h"}, {60, "min"}, {1, "s"}};
	long left;
	size_t len = 0;
	int shown = 0;

	if (t_s < 0.05) {
		snprintf(buf, size, "0");
		return;
	}
	if (t_s < 60.0) {
		snprintf(buf, size, "%.3g s", t_s);
		return;
	}
	left = lround(t_s);
	buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(parts) && shown < 2 && len < size; i++) {
		long n = left / parts[i].s;

		left %= parts[i].s;
		if (!n && !shown)
			continue;
		if (n)
			len += (size_t)snprintf(buf + len, size - len, "%s%ld %s", shown ? " " : "",
						n, parts[i].unit);
		/* a zero after the first part still ends the label: "2 h", not "2 h 5 s" */
		shown++;
	}
}

/* ---- layout ---- */

/* Panels without a value are left out of the picture. */
static bool panel_drawn(const struct chart_panel *panel)
{
	return panel->nseries > 0;
}

static int panel_height(const struct chart_panel *panel)
{
	return panel->small ? DEVICE_PANEL_H : PANEL_H;
}

static size_t panels_drawn(const struct chart_set *cs)
{
	size_t n = 0;

	for (size_t i = 0; i < cs->npanels; i++)
		n += panel_drawn(&cs->panels[i]);
	return n;
}

static void build_layout(struct plot *p)
{
	p->x_step_s = time_step_s(p->cs->span_s);
	p->width = PLOT_WIDTH;
	p->height = HEADER_H + EVENT_BAND_H + AXIS_H;
	if (!panels_drawn(p->cs))
		p->height += NO_SAMPLES_H;
	for (size_t i = 0; i < p->cs->npanels; i++)
		if (panel_drawn(&p->cs->panels[i]))
			p->height += panel_height(&p->cs->panels[i]);
}

/* ---- drawing ---- */

static double x_of(const struct plot *p, const struct rect *area, double t_s)
{
	return area->x + t_s / p->cs->span_s * area->w;
}

static double y_of(const struct rect *area, const struct chart_axis *ax, double v)
{
	return area->y + area->h - v / ax->div / ax->max * area->h;
}

/* Crisp one-pixel lines: on pixel centres. */
static double snap(double v)
{
	return floor(v) + 0.5;
}

static void panel_area(const struct chart_panel *panel, double top, struct rect *area)
{
	area->x = MARGIN_LEFT;
	area->y = top + PANEL_TITLE_H;
	area->w = PLOT_WIDTH - MARGIN_LEFT - MARGIN_RIGHT;
	area->h = panel_height(panel) - PANEL_TITLE_H - PANEL_GAP;
}

static struct rgb series_colour(const struct chart_series *l)
{
	return l->colour == CHART_INK ? ink : palette[(size_t)l->colour % ARRAY_SIZE(palette)];
}

/* Tick labels carry the unit, but for cores (the title says so) and at 0. */
static const char *tick_suffix(const struct chart_axis *ax, char *buf, size_t size)
{
	if (strcmp(ax->unit, "cores") == 0)
		return "";
	snprintf(buf, size, "%s%s", strcmp(ax->unit, "%") == 0 ? "" : " ", ax->unit);
	return buf;
}

static void draw_grid(cairo_t *cr, const struct plot *p, const struct rect *area,
		      const struct chart_axis *ax)
{
	char label[32], suffix[20];

	tick_suffix(ax, suffix, sizeof(suffix));
	cairo_fn.set_line_width(cr, 1.0);
	set_font(cr, 10, false);
	for (int k = 0; k * ax->step <= ax->max + 1e-9; k++) {
		double y = snap(y_of(area, ax, k * ax->step * ax->div));

		set_colour(cr, grid_colour);
		cairo_fn.move_to(cr, area->x, y);
		cairo_fn.line_to(cr, area->x + area->w, y);
		cairo_fn.stroke(cr);
		snprintf(label, sizeof(label), "%.4g%s", k * ax->step,
			 k ? tick_suffix(ax, suffix, sizeof(suffix)) : "");
		set_colour(cr, faint_ink);
		show_text(cr, area->x - 6, y + 3.5, 1.0, label);
	}
	set_colour(cr, grid_colour);
	for (int k = 1; k * p->x_step_s < p->cs->span_s; k++) {
		double x = snap(x_of(p, area, k * p->x_step_s));

		cairo_fn.move_to(cr, x, area->y);
		cairo_fn.line_to(cr, x, area->y + area->h);
	}
	cairo_fn.stroke(cr);
}

static void set_line_style(cairo_t *cr, const struct chart_series *l)
{
	static const double dash[] = {6.0, 4.0};

	set_colour(cr, series_colour(l));
	cairo_fn.set_line_width(cr, 1.6);
	cairo_fn.set_dash(cr, dash, l->dashed ? 2 : 0, 0);
}

/*
 * One series, broken where a bucket is missing: a line drawn across a hole
 * would show values nobody measured.  A point with no neighbour gets a dot.
 */
static void draw_series(cairo_t *cr, const struct plot *p, const struct rect *area,
			const struct chart_axis *ax, const struct chart_series *l)
{
	const double *v = l->v;
	size_t n = p->cs->npoints;

	set_line_style(cr, l);
	cairo_fn.set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
	for (size_t i = 0; i < n; i++) {
		bool prev = i > 0 && isfinite(v[i - 1]), next = i + 1 < n && isfinite(v[i + 1]);
		double x = x_of(p, area, p->cs->t_s[i]);
		double y;

		if (!isfinite(v[i]))
			continue;
		y = y_of(area, ax, v[i]);
		if (prev) {
			cairo_fn.line_to(cr, x, y);
		} else if (next) {
			cairo_fn.move_to(cr, x, y);
		} else {
			cairo_fn.new_sub_path(cr);
			cairo_fn.arc(cr, x, y, 1.8, 0, 2 * M_PI);
			cairo_fn.fill(cr);
		}
		if (prev && !next)
			cairo_fn.stroke(cr);
	}
	cairo_fn.stroke(cr);
	cairo_fn.set_dash(cr, NULL, 0, 0);
}

static void draw_limit(cairo_t *cr, const struct rect *area, const struct chart_panel *panel)
{
	static const double dash[] = {4.0, 3.0};
	double y;

	if (isnan(panel->ref))
		return;
	y = snap(y_of(area, &panel->y, panel->ref));
	set_colour(cr, limit_colour);
	cairo_fn.set_line_width(cr, 1.0);
	cairo_fn.set_dash(cr, dash, 2, 0);
	cairo_fn.move_to(cr, area->x, y);
	cairo_fn.line_to(cr, area->x + area->w, y);
	cairo_fn.stroke(cr);
	cairo_fn.set_dash(cr, NULL, 0, 0);
}

/* Outside the clip: a limit at the top of the axis keeps its label. */
static void draw_limit_label(cairo_t *cr, const struct rect *area, const struct chart_panel *panel)
{
	char label[sizeof(panel->ref_label)];

	if (isnan(panel->ref))
		return;
	text_clean(label, sizeof(label), panel->ref_label);
	set_colour(cr, limit_colour);
	set_font(cr, 10, false);
	show_text(cr, area->x + area->w - 4, snap(y_of(area, &panel->y, panel->ref)) - 4, 1.0,
		  label);
}

static double legend_entry_width(cairo_t *cr, const char *label)
{
	return 20 + text_width(cr, label) + 14;
}

/* Right-aligned in the title row, as many entries as fit, then "+N more". */
static void draw_legend(cairo_t *cr, const struct chart_panel *panel, double right, double left,
			double baseline)
{
	char more[32] = "", labels[CHART_MAX_SERIES][sizeof(panel->series[0].label)];
	double w = 0, x;
	size_t shown = panel->nseries;

	set_font(cr, 10, false);
	for (size_t i = 0; i < panel->nseries; i++) {
		text_clean(labels[i], sizeof(labels[i]), panel->series[i].label);
		w += legend_entry_width(cr, labels[i]);
	}
	while (shown > 0 && right - w < left) {
		shown--;
		w -= legend_entry_width(cr, labels[shown]);
		snprintf(more, sizeof(more), "+%zu more", panel->nseries - shown);
		if (shown == panel->nseries - 1)
			w += text_width(cr, more);
	}
	x = right - w;
	for (size_t i = 0; i < shown; i++) {
		set_line_style(cr, &panel->series[i]);
		cairo_fn.move_to(cr, x, baseline - 3.5);
		cairo_fn.line_to(cr, x + 16, baseline - 3.5);
		cairo_fn.stroke(cr);
		cairo_fn.set_dash(cr, NULL, 0, 0);
		set_colour(cr, ink);
		show_text(cr, x + 20, baseline, 0, labels[i]);
		x += legend_entry_width(cr, labels[i]);
	}
	if (more[0])
		show_text(cr, x, baseline, 0, more);
}

static void draw_frame(cairo_t *cr, const struct rect *area)
{
	set_colour(cr, frame_colour);
	cairo_fn.set_line_width(cr, 1.0);
	cairo_fn.rectangle(cr, snap(area->x), snap(area->y), floor(area->w), floor(area->h));
	cairo_fn.stroke(cr);
}

static void draw_panel(cairo_t *cr, const struct plot *p, const struct chart_panel *panel,
		       double top)
{
	struct rect area;
	char title[sizeof(panel->title)];
	double title_w;

	panel_area(panel, top, &area);
	draw_grid(cr, p, &area, &panel->y);
	draw_frame(cr, &area);

	cairo_fn.save(cr);
	cairo_fn.rectangle(cr, area.x, area.y - 1, area.w, area.h + 2);
	cairo_fn.clip(cr);
	draw_limit(cr, &area, panel);
	for (size_t l = 0; l < panel->nseries; l++)
		draw_series(cr, p, &area, &panel->y, &panel->series[l]);
	cairo_fn.restore(cr);
	draw_limit_label(cr, &area, panel);

	set_font(cr, 12, true);
	text_clean(title, sizeof(title), panel->title);
	text_fit(cr, title, sizeof(title), area.w * 0.6);
	set_colour(cr, ink);
	show_text(cr, area.x, top + 15, 0, title);
	title_w = text_width(cr, title);
	draw_legend(cr, panel, area.x + area.w, area.x + title_w + 24, top + 15);
}

static void draw_time_labels(cairo_t *cr, const struct plot *p, const struct rect *area)
{
	char label[128];

	set_font(cr, 10, false);
	set_colour(cr, faint_ink);
	for (int k = 0; k * p->x_step_s <= p->cs->span_s + 1e-9; k++) {
		double x = x_of(p, area, k * p->x_step_s), align = k == 0 ? 0 : 0.5;

		format_elapsed(label, sizeof(label), k * p->x_step_s);
		if (x + text_width(cr, label) / 2 > PLOT_WIDTH - 2)
			align = 1.0;
		show_text(cr, x, area->y + area->h + 13, align, label);
	}
	set_colour(cr, ink);
	text_clean(label, sizeof(label), p->titles->time_caption ? p->titles->time_caption : "");
	show_text(cr, area->x + area->w / 2, area->y + area->h + PANEL_GAP + 16, 0.5, label);
}

static void event_label(const struct event_record *e, char *buf, size_t size)
{
	char raw[64];

	if (strcmp(e->kind, "xid") == 0)
		snprintf(raw, sizeof(raw), "XID %lld", (long long)e->value);
	else
		snprintf(raw, sizeof(raw), "%s", e->kind);
	if (e->has_gpu)
		snprintf(raw + strlen(raw), sizeof(raw) - strlen(raw), " GPU %d", e->gpu);
	text_clean(buf, size, raw);
}

/* Events cross each plot area as dashed lines, under the panel's titles. */
static void draw_event_lines(cairo_t *cr, const struct plot *p, const struct rect *area)
{
	static const double dash[] = {3.0, 3.0};

	cairo_fn.set_source_rgba(cr, event_colour.r, event_colour.g, event_colour.b, 0.7);
	cairo_fn.set_line_width(cr, 1.0);
	cairo_fn.set_dash(cr, dash, 2, 0);
	for (size_t i = 0; i < p->cs->nevents; i++) {
		double x = snap(x_of(p, area, p->cs->events[i].t_s));

		cairo_fn.move_to(cr, x, area->y);
		cairo_fn.line_to(cr, x, area->y + area->h);
	}
	cairo_fn.stroke(cr);
	cairo_fn.set_dash(cr, NULL, 0, 0);
}

/*
 * Event labels in the band above the first panel; a label that would
 * cover the previous one is left out (its lines stay).
 */
static void draw_event_labels(cairo_t *cr, const struct plot *p, const struct rect *first)
{
	double label_end = -1;
	char label[64];

	set_font(cr, 9, false);
	set_colour(cr, event_colour);
	for (size_t i = 0; i < p->cs->nevents; i++) {
		double x, w;

		event_label(p->cs->events[i].event, label, sizeof(label));
		w = text_width(cr, label);
		x = snap(x_of(p, first, p->cs->events[i].t_s));
		/* right of the line, or left of it at the right edge */
		x = x + 3 + w > first->x + first->w ? x - 3 - w : x + 3;
		if (x < label_end + 4)
			continue;
		show_text(cr, x, first->y - PANEL_TITLE_H - 4, 0, label);
		label_end = x + w;
	}
}

/* The title (cut to leave room for its tail) and the subtitle under it. */
static void draw_header(cairo_t *cr, const struct plot *p)
{
	const struct plot_titles *t = p->titles;
	char line[1024], after[320];
	double width = PLOT_WIDTH - MARGIN_LEFT - MARGIN_RIGHT;

	text_clean(after, sizeof(after), t->title_tail ? t->title_tail : "");
	text_clean(line, sizeof(line), t->title ? t->title : "");
	set_font(cr, 15, true);
	text_fit(cr, line, sizeof(line), width - text_width(cr, after));
	set_colour(cr, ink);
	show_text(cr, MARGIN_LEFT, 22, 0, line);
	cairo_fn.show_text(cr, after);
	if (!t->subtitle || !t->subtitle[0])
		return;
	text_clean(line, sizeof(line), t->subtitle);
	set_font(cr, 12, false);
	text_fit(cr, line, sizeof(line), width);
	set_colour(cr, faint_ink);
	show_text(cr, MARGIN_LEFT, 42, 0, line);
}

static void draw_no_samples(cairo_t *cr, const struct plot *p, double top)
{
	struct rect area = {MARGIN_LEFT, top + 10, PLOT_WIDTH - MARGIN_LEFT - MARGIN_RIGHT,
			    NO_SAMPLES_H - 30};
	char said[256];

	text_clean(said, sizeof(said), p->titles->no_data ? p->titles->no_data : "no data");
	draw_frame(cr, &area);
	set_font(cr, 14, false);
	set_colour(cr, faint_ink);
	show_text(cr, area.x + area.w / 2, area.y + area.h / 2 + 5, 0.5, said);
}

static void draw_plot(cairo_t *cr, const struct plot *p)
{
	const struct chart_set *cs = p->cs;
	double top = HEADER_H + EVENT_BAND_H;
	struct rect area = {0}; /* set by the first panel drawn: there is one (panels_drawn) */
	bool first = true;

	cairo_fn.set_source_rgb(cr, 1, 1, 1);
	cairo_fn.paint(cr);
	draw_header(cr, p);
	if (!panels_drawn(cs)) {
		draw_no_samples(cr, p, top);
		return;
	}
	for (size_t i = 0; i < cs->npanels; i++) {
		if (!panel_drawn(&cs->panels[i]))
			continue;
		panel_area(&cs->panels[i], top, &area);
		if (first)
			draw_event_labels(cr, p, &area);
		first = false;
		draw_panel(cr, p, &cs->panels[i], top);
		draw_event_lines(cr, p, &area);
		top += panel_height(&cs->panels[i]);
	}
	draw_time_labels(cr, p, &area);
}

/* ---- output ---- */

struct plot_sink {
	FILE *f;
	int err; /* the first write's errno */
};

static cairo_status_t sink_write(void *closure, const unsigned char *data, unsigned int length)
{
	struct plot_sink *sink = closure;

	if (sink->err)
		return CAIRO_STATUS_WRITE_ERROR;
	errno = 0;
	if (fwrite(data, 1, length, sink->f) != length) {
		sink->err = errno ? errno : EIO;
		return CAIRO_STATUS_WRITE_ERROR;
	}
	return CAIRO_STATUS_SUCCESS;
}

static cairo_surface_t *surface_create(enum plot_format format, struct plot_sink *sink, int w,
				       int h)
{
	switch (format) {
	case PLOT_PDF:
		return cairo_fn.pdf_surface_create_for_stream(sink_write, sink, w, h);
	case PLOT_SVG:
		return cairo_fn.svg_surface_create_for_stream(sink_write, sink, w, h);
	default:
		return cairo_fn.image_surface_create(CAIRO_FORMAT_RGB24, w, h);
	}
}

/* cairo's status as -errno: our own write errors keep their errno. */
static int cairo_error(const char *path, const struct plot_sink *sink, cairo_status_t st)
{
	if (sink->err)
		return log_err(-sink->err, "cannot write plot '%s'", path);
	log_err(0, "cannot write plot '%s': %s", path, cairo_fn.status_to_string(st));
	return st == CAIRO_STATUS_NO_MEMORY ? -ENOMEM : -EIO;
}

/* Draws onto a new w x h surface and writes it through sink. */
static int render(const char *path, enum plot_format format, int w, int h, plot_draw_fn *draw,
		  const void *arg, struct plot_sink *sink)
{
	cairo_surface_t *surface = surface_create(format, sink, w, h);
	cairo_status_t st = cairo_fn.surface_status(surface);
	cairo_t *cr;

	if (st != CAIRO_STATUS_SUCCESS)
		goto out_destroy_surface;
	cr = cairo_fn.create(surface);
	draw(cr, arg);
	if (format != PLOT_PNG)
		cairo_fn.show_page(cr);
	st = cairo_fn.status(cr);
	cairo_fn.destroy(cr);
	if (st != CAIRO_STATUS_SUCCESS)
		goto out_destroy_surface;
	if (format == PLOT_PNG)
		st = cairo_fn.surface_write_to_png_stream(surface, sink_write, sink);
	cairo_fn.surface_finish(surface);
	if (st == CAIRO_STATUS_SUCCESS)
		st = cairo_fn.surface_status(surface);
out_destroy_surface:
	cairo_fn.surface_destroy(surface);
	return st == CAIRO_STATUS_SUCCESS ? 0 : cairo_error(path, sink, st);
}

int plot_draw_write(const char *path, int w, int h, plot_draw_fn *draw, const void *arg)
{
	enum plot_format format = plot_format_of(path);
	struct plot_sink sink = {0};
	int ret;

	if (format == PLOT_UNKNOWN) {
		log_err(0, "cannot plot to '%s': unknown format, use .png, .pdf or .svg", path);
		return -EINVAL;
	}
	ret = cairo_dl_load();
	if (ret)
		return ret;
	sink.f = fopen(path, "wbe");
	if (!sink.f)
		return log_err(-errno, "cannot write plot '%s'", path);
	ret = render(path, format, w, h, draw, arg, &sink);
	if (fclose(sink.f) && !ret)
		ret = log_err(-errno, "cannot write plot '%s'", path);
	if (ret)
		unlink(path); /* no half-written picture left behind */
	return ret;
}

static void draw_plot_cb(cairo_t *cr, const void *arg)
{
	draw_plot(cr, arg);
}

int plot_chart_write(const char *path, const struct chart_set *cs, const struct plot_titles *t)
{
	struct plot p = {.cs = cs, .titles = t};

	build_layout(&p);
	return plot_draw_write(path, p.width, p.height, draw_plot_cb, &p);
}

/* "bottleneck: gpu (...)  ·  type: training  ·  period 7.5 s" */
static void analysis_line(const struct analysis *an, char *buf, size_t size)
{
	size_t len;

	if (an->too_short) {
		snprintf(buf, size, "too short to judge: %zu sample%s", an->samples,
			 an->samples == 1 ? "" : "s");
		return;
	}
	len = (size_t)snprintf(buf, size, "bottleneck: %s", bottleneck_name(an->bottleneck));
	if (an->bottleneck_reason[0] && len < size)
		len += (size_t)snprintf(buf + len, size - len, " (%s)", an->bottleneck_reason);
	if (len < size)
		len += (size_t)snprintf(buf + len, size - len, "  \xc2\xb7  type: %s",
					job_type_name(an->job_type));
	if (an->has_period && len < size) {
		char period[40];

		format_duration_ms(llround(an->period_s * 1000.0), period, sizeof(period));
		snprintf(buf + len, size - len, "  \xc2\xb7  period %s", period);
	}
}

int plot_write(const char *path, const struct summary *s, const struct jobseries *js,
	       const struct analysis *an, const struct app_summary *app)
{
	const struct job_record *job = &s->job;
	char title[1024], tail[352], subtitle[1024] = "", duration[40];
	struct plot_titles t = {title, tail, subtitle, "elapsed time since the job started",
				"no samples: nothing to plot for this job"};
	struct chart_set *cs = NULL;
	int ret;

	if (!plot_format_known(path)) {
		log_err(0, "cannot plot to '%s': unknown format, use .png, .pdf or .svg", path);
		return -EINVAL;
	}
	ret = chart_set_build(s, js, &cs);
	if (!ret)
		ret = report_app_panels(cs, app);
	if (ret) {
		chart_set_free(cs);
		return log_err(ret, "cannot plot '%s'", path);
	}
	/* a scheduler's job is known by its id first; 900 bytes are more than a line */
	if (job->scheduler[0] && strcmp(job->scheduler, "run") != 0 && job->job_id[0])
		snprintf(title, sizeof(title), "%s %s  \xc2\xb7  %.900s", job->scheduler,
			 job->job_id, job->command[0] ? job->command : job->name);
	else
		snprintf(title, sizeof(title), "%.900s",
			 job->command[0] ? job->command : job->name);
	/* the command gives way to the host and duration */
	format_duration_ms((int64_t)(cs->span_s * 1000.0), duration, sizeof(duration));
	snprintf(tail, sizeof(tail), "  \xc2\xb7  %.256s  \xc2\xb7  %s%s", job->hostname, duration,
		 job->end_ms ? "" : " (still running or interrupted)");
	if (an)
		analysis_line(an, subtitle, sizeof(subtitle));
	ret = plot_chart_write(path, cs, &t);
	chart_set_free(cs);
	return ret;
}
