/*
 * plot.c - `jobscope report --plot`: panels of timelines over one time axis
 * (elapsed since the job started), drawn by cairo into PNG, PDF or SVG.
 */
#include "report/report.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/fmt.h"
#include "common/log.h"
#include "common/timeutil.h"

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
#define Y_TICK_MIN_PX  30

/* CPU, memory, I/O, then GPU utilization, memory, traffic, power, then devices. */
#define MAX_PANELS (7 + JS_MAX_GPUS)
#define MAX_LINES  (2 * JS_MAX_GPUS) /* PCIe and NVLink of every device */

enum plot_format { PLOT_UNKNOWN, PLOT_PNG, PLOT_PDF, PLOT_SVG };

enum plot_unit { UNIT_CORES, UNIT_BYTES, UNIT_PCT, UNIT_WATTS, UNIT_BPS };

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

struct plot_line {
	int gpu, metric; /* as jobseries_overview takes them */
	double scale;	 /* 100 / device memory: memory as a share on a % axis */
	struct rgb colour;
	bool dashed;
	char label[48];
};

struct plot_panel {
	char title[160];
	enum plot_unit unit;
	int height;
	double limit; /* a dashed reference line (reserved, capacity); NAN: none */
	char limit_label[48];
	size_t nlines;
	struct plot_line lines[MAX_LINES];
};

struct rect {
	double x, y, w, h;
};

/* What one drawing reads: the inputs, the time axis, the panels. */
struct plot {
	const struct summary *s;
	const struct jobseries *js;
	const struct analysis *an;
	int64_t origin_ms; /* x = 0: the job's start */
	double span_s;	   /* length of the time axis */
	double x_step_s;   /* time between vertical grid lines */
	int width, height;
	size_t npanels;
	struct plot_panel panels[MAX_PANELS + 1]; /* + the one being built */
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

/* Length of the UTF-8 sequence at s (at most n bytes), 0 if it is not valid. */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

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
		size_t len = utf8_seq_len(s + i, n - i);

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

	cairo_text_extents(cr, text, &ext);
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
	cairo_set_source_rgb(cr, c.r, c.g, c.b);
}

static void set_font(cairo_t *cr, double size, bool bold)
{
	cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
			       bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, size);
}

/* align: 0 left, 0.5 centre, 1 right of x. */
static void show_text(cairo_t *cr, double x, double y, double align, const char *text)
{
	cairo_move_to(cr, x - align * text_width(cr, text), y);
	cairo_show_text(cr, text);
}

/* ---- axes ---- */

/* The smallest 1, 2 or 5 times a power of ten not below raw (> 0). */
static double nice_step(double raw)
{
	double mag = pow(10.0, floor(log10(raw)));
	double f = raw / mag;

	return (f <= 1.0 ? 1.0 : f <= 2.0 ? 2.0 : f <= 5.0 ? 5.0 : 10.0) * mag;
}

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
	return 86400.0 * nice_step(span_s / 86400.0 / X_TICKS_MAX);
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

/* A y axis: 0 to max, gridded every step, labels in units of div. */
struct y_axis {
	double max, step, div;
	const char *suffix;
};

/*
 * data_max: the largest value drawn; limit: a reference line (NAN: none),
 * kept below the top edge so its line and label stay clear of the frame.
 */
static void y_axis_pick(struct y_axis *ax, enum plot_unit unit, double data_max, double limit,
			int nticks)
{
	static const char *const bytes[] = {" B", " KiB", " MiB", " GiB", " TiB", " PiB"};
	static const char *const rates[] = {" B/s",   " KiB/s", " MiB/s",
					    " GiB/s", " TiB/s", " PiB/s"};
	static const double floor_of[] = {
	    [UNIT_CORES] = 1,  [UNIT_BYTES] = 1024, [UNIT_PCT] = 100,
	    [UNIT_WATTS] = 10, [UNIT_BPS] = 1024,
	};
	size_t k = 0;

	/* an all-zero series still gets a readable axis */
	if (!(data_max >= floor_of[unit]))
		data_max = floor_of[unit];
	if (unit == UNIT_PCT && data_max <= 100.0) {
		/* shares read best on their whole range */
		ax->div = 1.0;
		ax->suffix = "%";
		ax->max = 100.0;
		ax->step = nticks >= 4 ? 25.0 : 50.0;
		return;
	}
	ax->div = 1.0;
	ax->suffix = unit == UNIT_PCT ? "%" : unit == UNIT_WATTS ? " W" : "";
	if (unit == UNIT_BYTES || unit == UNIT_BPS) {
		while (data_max / ax->div >= 1024.0 && k + 1 < ARRAY_SIZE(bytes)) {
			ax->div *= 1024.0;
			k++;
		}
		ax->suffix = unit == UNIT_BYTES ? bytes[k] : rates[k];
	}
	ax->step = nice_step(data_max / ax->div / nticks);
	ax->max = ceil(data_max / ax->div / ax->step - 1e-9) * ax->step;
	if (limit / ax->div >= ax->max - 1e-9)
		ax->max += ax->step;
}

/* ---- panels from the series ---- */

/* Where bucket i's samples sit on average: a bucket holds ticks from its start on. */
static double bucket_time_s(const struct plot *p, size_t i)
{
	const struct jobseries *js = p->js;
	int64_t mid = js->bucket_ms > js->interval_ms ? (js->bucket_ms - js->interval_ms) / 2 : 0;

	return (double)(js->t0_ms + (int64_t)i * js->bucket_ms + mid - p->origin_ms) / 1000.0;
}

static struct plot_panel *panel_begin(struct plot *p, enum plot_unit unit, int height,
				      const char *title)
{
	struct plot_panel *panel = &p->panels[p->npanels];

	memset(panel, 0, sizeof(*panel));
	panel->unit = unit;
	panel->height = height;
	panel->limit = NAN;
	text_clean(panel->title, sizeof(panel->title), title);
	return panel;
}

/* Keeps the panel begun last if any of its lines has a value. */
static void panel_end(struct plot *p, const struct plot_panel *panel)
{
	if (panel->nlines && p->npanels < MAX_PANELS)
		p->npanels++;
}

/* The line added, or NULL: the metric has no value (or the panel is full). */
static struct plot_line *panel_add_line(const struct plot *p, struct plot_panel *panel, int gpu,
					int metric, struct rgb colour, bool dashed,
					const char *label)
{
	struct plot_line *l;

	if (panel->nlines == MAX_LINES || !jobseries_has(p->js, gpu, metric))
		return NULL;
	l = &panel->lines[panel->nlines++];
	l->gpu = gpu;
	l->metric = metric;
	l->scale = 1.0;
	l->colour = colour;
	l->dashed = dashed;
	text_clean(l->label, sizeof(l->label), label);
	return l;
}

static void panel_set_limit(struct plot_panel *panel, double limit, const char *label)
{
	if (!(limit > 0))
		return;
	panel->limit = limit;
	snprintf(panel->limit_label, sizeof(panel->limit_label), "%s", label);
}

static void add_cpu_panel(struct plot *p)
{
	const struct job_record *job = &p->s->job;
	struct plot_panel *panel = panel_begin(p, UNIT_CORES, PANEL_H, "CPU: cores used");
	char label[48];

	panel_add_line(p, panel, -1, JSM_CORES, palette[0], false, "cores");
	/* the reservation is what the job paid for; the affinity mask what it could use */
	if (job->reserved_cpus > 0) {
		snprintf(label, sizeof(label), "reserved %g cores", job->reserved_cpus);
		panel_set_limit(panel, job->reserved_cpus, label);
	} else if (job->cores_allowed > 0) {
		snprintf(label, sizeof(label), "allowed %d cores", job->cores_allowed);
		panel_set_limit(panel, job->cores_allowed, label);
	}
	panel_end(p, panel);
}

static void add_memory_panel(struct plot *p)
{
	const struct job_record *job = &p->s->job;
	struct plot_panel *panel = panel_begin(p, UNIT_BYTES, PANEL_H, "Memory: resident set");
	char label[48], size[16];

	panel_add_line(p, panel, -1, JSM_RSS_BYTES, palette[0], false, "RSS");
	panel_add_line(p, panel, -1, JSM_SWAP_BYTES, palette[1], false, "swap");
	if (job->reserved_mem_bytes) {
		snprintf(label, sizeof(label), "reserved %s",
			 fmt_bytes(size, sizeof(size), job->reserved_mem_bytes));
		panel_set_limit(panel, (double)job->reserved_mem_bytes, label);
	}
	panel_end(p, panel);
}

static void add_io_panel(struct plot *p)
{
	struct plot_panel *panel = panel_begin(p, UNIT_BPS, PANEL_H, "Storage I/O");

	panel_add_line(p, panel, -1, JSM_READ_BPS, palette[0], false, "read");
	panel_add_line(p, panel, -1, JSM_WRITE_BPS, palette[1], false, "write");
	panel_end(p, panel);
}

static const struct gpu_summary *device_summary(const struct plot *p, int slot)
{
	const struct summary *s = p->s;

	for (int i = 0; s->gpus && i < s->ngpus; i++)
		if (strcmp(s->gpus[i].dev.info.uuid, p->js->gpu[slot]->uuid) == 0)
			return &s->gpus[i];
	return NULL;
}

static void device_label(const struct plot *p, int slot, const char *what, char *buf, size_t size)
{
	const struct js_gpu *g = p->js->gpu[slot];

	/* the node's other devices are drawn too, marked, so an idle one is seen */
	snprintf(buf, size, "GPU %d%s%s%s", g->index, what[0] ? " " : "", what,
		 g->job ? "" : " (not the job's)");
}

static struct rgb device_colour(int slot)
{
	return palette[(size_t)slot % ARRAY_SIZE(palette)];
}

/* Adds metric of every device, one colour per device. */
static void add_device_lines(const struct plot *p, struct plot_panel *panel, int metric,
			     bool dashed, const char *what)
{
	char label[48];

	for (int i = 0; i < p->js->ngpus; i++) {
		device_label(p, i, what, label, sizeof(label));
		panel_add_line(p, panel, i, metric, device_colour(i), dashed, label);
	}
}

/* The devices' memory size (or power limit) when they all share one; NAN otherwise. */
static double common_device_value(const struct plot *p, uint32_t valid_bit, bool power)
{
	double value = NAN;

	for (int i = 0; i < p->js->ngpus; i++) {
		const struct gpu_summary *g = device_summary(p, i);
		double v;

		if (!g || !(g->dev.info.valid & valid_bit))
			return NAN;
		v = power ? g->dev.info.power_limit_mw / 1000.0
			  : (double)g->dev.info.mem_total_bytes;
		if (!isnan(value) && v != value)
			return NAN;
		value = v;
	}
	return value;
}

static void add_gpu_panels(struct plot *p)
{
	struct plot_panel *panel;
	char label[48], size[16];
	double v;

	panel = panel_begin(p, UNIT_PCT, PANEL_H, "GPU utilization");
	add_device_lines(p, panel, JSG_UTIL_PCT, false, "");
	panel_end(p, panel);

	panel = panel_begin(p, UNIT_BYTES, PANEL_H, "GPU memory used");
	add_device_lines(p, panel, JSG_MEM_BYTES, false, "");
	v = common_device_value(p, GPU_INFO_MEM_TOTAL, false);
	if (v > 0) {
		snprintf(label, sizeof(label), "device memory %s",
			 fmt_bytes(size, sizeof(size), (uint64_t)v));
		panel_set_limit(panel, v, label);
	}
	panel_end(p, panel);

	panel = panel_begin(p, UNIT_BPS, PANEL_H,
			    "GPU interconnect: PCIe rx+tx (solid), NVLink rx+tx (dashed)");
	add_device_lines(p, panel, JSG_PCIE_BPS, false, "PCIe");
	add_device_lines(p, panel, JSG_NVLINK_BPS, true, "NVLink");
	panel_end(p, panel);

	panel = panel_begin(p, UNIT_WATTS, PANEL_H, "GPU power draw");
	add_device_lines(p, panel, JSG_POWER_W, false, "");
	v = common_device_value(p, GPU_INFO_POWER_LIMIT, true);
	if (v > 0) {
		snprintf(label, sizeof(label), "power limit %.0f W", v);
		panel_set_limit(panel, v, label);
	}
	panel_end(p, panel);
}

/* Multi-GPU jobs: one small panel per device, memory as a share of the device's. */
static void add_device_panel(struct plot *p, int slot)
{
	const struct js_gpu *g = p->js->gpu[slot];
	const struct gpu_summary *gs = device_summary(p, slot);
	struct plot_panel *panel;
	char who[48], size[16], title[sizeof(who) + GPU_NAME_MAX + 64];

	device_label(p, slot, "", who, sizeof(who));
	if (g->mem_total_bytes)
		snprintf(title, sizeof(title), "%s%s%s: utilization, memory (%% of %s)", who,
			 gs ? ", " : "", gs ? gs->dev.info.name : "",
			 fmt_bytes(size, sizeof(size), g->mem_total_bytes));
	else
		snprintf(title, sizeof(title), "%s%s%s: utilization", who, gs ? ", " : "",
			 gs ? gs->dev.info.name : "");
	panel = panel_begin(p, UNIT_PCT, DEVICE_PANEL_H, title);
	panel_add_line(p, panel, slot, JSG_UTIL_PCT, device_colour(slot), false, "utilization");
	if (g->mem_total_bytes) {
		struct plot_line *mem =
		    panel_add_line(p, panel, slot, JSG_MEM_BYTES, ink, true, "memory");

		if (mem)
			mem->scale = 100.0 / (double)g->mem_total_bytes;
	}
	panel_end(p, panel);
}

static void build_panels(struct plot *p)
{
	if (!p->js)
		return;
	add_cpu_panel(p);
	add_memory_panel(p);
	add_io_panel(p);
	if (p->js->ngpus > 0)
		add_gpu_panels(p);
	if (p->js->ngpus > 1)
		for (int i = 0; i < p->js->ngpus; i++)
			add_device_panel(p, i);
}

/* The time axis: from the job's start to its end or its last bucket. */
static void build_time_axis(struct plot *p)
{
	const struct summary *s = p->s;
	int64_t end_ms = s->job.end_ms ? s->job.end_ms : s->last_ms;
	double last_s = 0;

	p->origin_ms = s->job.start_ms;
	if (p->js && p->js->npoints) {
		if (p->origin_ms <= 0)
			p->origin_ms = p->js->t0_ms;
		last_s = bucket_time_s(p, p->js->npoints - 1);
	}
	p->span_s = fmax((double)(end_ms - p->origin_ms) / 1000.0, last_s);
	if (!(p->span_s >= 1.0))
		p->span_s = 1.0;
	p->x_step_s = time_step_s(p->span_s);
}

static void build_layout(struct plot *p)
{
	p->width = PLOT_WIDTH;
	p->height = HEADER_H + EVENT_BAND_H + AXIS_H;
	if (!p->npanels)
		p->height += NO_SAMPLES_H;
	for (size_t i = 0; i < p->npanels; i++)
		p->height += p->panels[i].height;
}

/* ---- drawing ---- */

static double x_of(const struct plot *p, const struct rect *area, double t_s)
{
	return area->x + t_s / p->span_s * area->w;
}

static double y_of(const struct rect *area, const struct y_axis *ax, double v)
{
	return area->y + area->h - v / ax->div / ax->max * area->h;
}

/* Crisp one-pixel lines: on pixel centres. */
static double snap(double v)
{
	return floor(v) + 0.5;
}

static void panel_area(const struct plot_panel *panel, double top, struct rect *area)
{
	area->x = MARGIN_LEFT;
	area->y = top + PANEL_TITLE_H;
	area->w = PLOT_WIDTH - MARGIN_LEFT - MARGIN_RIGHT;
	area->h = panel->height - PANEL_TITLE_H - PANEL_GAP;
}

static double panel_max(const struct plot *p, const struct plot_panel *panel)
{
	double v[JS_POINTS], max = panel->limit > 0 ? panel->limit : 0;

	for (size_t l = 0; l < panel->nlines; l++) {
		size_t n =
		    jobseries_overview(p->js, panel->lines[l].gpu, panel->lines[l].metric, v);

		for (size_t i = 0; i < n; i++)
			if (isfinite(v[i]))
				max = fmax(max, v[i] * panel->lines[l].scale);
	}
	return max;
}

static void draw_grid(cairo_t *cr, const struct plot *p, const struct rect *area,
		      const struct y_axis *ax)
{
	char label[32];

	cairo_set_line_width(cr, 1.0);
	set_font(cr, 10, false);
	for (int k = 0; k * ax->step <= ax->max + 1e-9; k++) {
		double y = snap(y_of(area, ax, k * ax->step * ax->div));

		set_colour(cr, grid_colour);
		cairo_move_to(cr, area->x, y);
		cairo_line_to(cr, area->x + area->w, y);
		cairo_stroke(cr);
		snprintf(label, sizeof(label), "%.4g%s", k * ax->step, k ? ax->suffix : "");
		set_colour(cr, faint_ink);
		show_text(cr, area->x - 6, y + 3.5, 1.0, label);
	}
	set_colour(cr, grid_colour);
	for (int k = 1; k * p->x_step_s < p->span_s; k++) {
		double x = snap(x_of(p, area, k * p->x_step_s));

		cairo_move_to(cr, x, area->y);
		cairo_line_to(cr, x, area->y + area->h);
	}
	cairo_stroke(cr);
}

static void set_line_style(cairo_t *cr, const struct plot_line *l)
{
	static const double dash[] = {6.0, 4.0};

	set_colour(cr, l->colour);
	cairo_set_line_width(cr, 1.6);
	cairo_set_dash(cr, dash, l->dashed ? 2 : 0, 0);
}

/*
 * One series, broken where a bucket is missing: a line drawn across a hole
 * would show values nobody measured.  A point with no neighbour gets a dot.
 */
static void draw_series(cairo_t *cr, const struct plot *p, const struct rect *area,
			const struct y_axis *ax, const struct plot_line *l)
{
	double v[JS_POINTS];
	size_t n = jobseries_overview(p->js, l->gpu, l->metric, v);

	set_line_style(cr, l);
	cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
	for (size_t i = 0; i < n; i++) {
		bool prev = i > 0 && isfinite(v[i - 1]), next = i + 1 < n && isfinite(v[i + 1]);
		double x = x_of(p, area, bucket_time_s(p, i));
		double y;

		if (!isfinite(v[i]))
			continue;
		y = y_of(area, ax, v[i] * l->scale);
		if (prev) {
			cairo_line_to(cr, x, y);
		} else if (next) {
			cairo_move_to(cr, x, y);
		} else {
			cairo_new_sub_path(cr);
			cairo_arc(cr, x, y, 1.8, 0, 2 * M_PI);
			cairo_fill(cr);
		}
		if (prev && !next)
			cairo_stroke(cr);
	}
	cairo_stroke(cr);
	cairo_set_dash(cr, NULL, 0, 0);
}

static void draw_limit(cairo_t *cr, const struct rect *area, const struct y_axis *ax,
		       const struct plot_panel *panel)
{
	static const double dash[] = {4.0, 3.0};
	double y;

	if (isnan(panel->limit))
		return;
	y = snap(y_of(area, ax, panel->limit));
	set_colour(cr, limit_colour);
	cairo_set_line_width(cr, 1.0);
	cairo_set_dash(cr, dash, 2, 0);
	cairo_move_to(cr, area->x, y);
	cairo_line_to(cr, area->x + area->w, y);
	cairo_stroke(cr);
	cairo_set_dash(cr, NULL, 0, 0);
}

/* Outside the clip: a limit at the top of the axis keeps its label. */
static void draw_limit_label(cairo_t *cr, const struct rect *area, const struct y_axis *ax,
			     const struct plot_panel *panel)
{
	if (isnan(panel->limit))
		return;
	set_colour(cr, limit_colour);
	set_font(cr, 10, false);
	show_text(cr, area->x + area->w - 4, snap(y_of(area, ax, panel->limit)) - 4, 1.0,
		  panel->limit_label);
}

static double legend_entry_width(cairo_t *cr, const struct plot_line *l)
{
	return 20 + text_width(cr, l->label) + 14;
}

/* Right-aligned in the title row, as many entries as fit, then "+N more". */
static void draw_legend(cairo_t *cr, const struct plot_panel *panel, double right, double left,
			double baseline)
{
	char more[32] = "";
	double w = 0, x;
	size_t shown = panel->nlines;

	set_font(cr, 10, false);
	for (size_t i = 0; i < panel->nlines; i++)
		w += legend_entry_width(cr, &panel->lines[i]);
	while (shown > 0 && right - w < left) {
		shown--;
		w -= legend_entry_width(cr, &panel->lines[shown]);
		snprintf(more, sizeof(more), "+%zu more", panel->nlines - shown);
		if (shown == panel->nlines - 1)
			w += text_width(cr, more);
	}
	x = right - w;
	for (size_t i = 0; i < shown; i++) {
		const struct plot_line *l = &panel->lines[i];

		set_line_style(cr, l);
		cairo_move_to(cr, x, baseline - 3.5);
		cairo_line_to(cr, x + 16, baseline - 3.5);
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		set_colour(cr, ink);
		show_text(cr, x + 20, baseline, 0, l->label);
		x += legend_entry_width(cr, l);
	}
	if (more[0])
		show_text(cr, x, baseline, 0, more);
}

static void draw_frame(cairo_t *cr, const struct rect *area)
{
	set_colour(cr, frame_colour);
	cairo_set_line_width(cr, 1.0);
	cairo_rectangle(cr, snap(area->x), snap(area->y), floor(area->w), floor(area->h));
	cairo_stroke(cr);
}

static void draw_panel(cairo_t *cr, const struct plot *p, const struct plot_panel *panel,
		       double top)
{
	struct rect area;
	struct y_axis ax;
	char title[160];
	double title_w;

	panel_area(panel, top, &area);
	y_axis_pick(&ax, panel->unit, panel_max(p, panel), panel->limit,
		    (int)fmax(2, fmin(6, area.h / Y_TICK_MIN_PX)));
	draw_grid(cr, p, &area, &ax);
	draw_frame(cr, &area);

	cairo_save(cr);
	cairo_rectangle(cr, area.x, area.y - 1, area.w, area.h + 2);
	cairo_clip(cr);
	draw_limit(cr, &area, &ax, panel);
	for (size_t l = 0; l < panel->nlines; l++)
		draw_series(cr, p, &area, &ax, &panel->lines[l]);
	cairo_restore(cr);
	draw_limit_label(cr, &area, &ax, panel);

	set_font(cr, 12, true);
	snprintf(title, sizeof(title), "%s", panel->title);
	text_fit(cr, title, sizeof(title), area.w * 0.6);
	set_colour(cr, ink);
	show_text(cr, area.x, top + 15, 0, title);
	title_w = text_width(cr, title);
	draw_legend(cr, panel, area.x + area.w, area.x + title_w + 24, top + 15);
}

static void draw_time_labels(cairo_t *cr, const struct plot *p, const struct rect *area)
{
	char label[32];

	set_font(cr, 10, false);
	set_colour(cr, faint_ink);
	for (int k = 0; k * p->x_step_s <= p->span_s + 1e-9; k++) {
		double x = x_of(p, area, k * p->x_step_s), align = k == 0 ? 0 : 0.5;

		format_elapsed(label, sizeof(label), k * p->x_step_s);
		if (x + text_width(cr, label) / 2 > PLOT_WIDTH - 2)
			align = 1.0;
		show_text(cr, x, area->y + area->h + 13, align, label);
	}
	set_colour(cr, ink);
	show_text(cr, area->x + area->w / 2, area->y + area->h + PANEL_GAP + 16, 0.5,
		  "elapsed time since the job started");
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

/* An event's time on the axis; false when it falls outside. */
static bool event_time_s(const struct plot *p, const struct event_record *e, double *t_s)
{
	*t_s = (double)(e->ts_ms - p->origin_ms) / 1000.0;
	return *t_s >= 0 && *t_s <= p->span_s;
}

/* Events cross each plot area as dashed lines, under the panel's titles. */
static void draw_event_lines(cairo_t *cr, const struct plot *p, const struct rect *area)
{
	static const double dash[] = {3.0, 3.0};
	double t_s;

	cairo_set_source_rgba(cr, event_colour.r, event_colour.g, event_colour.b, 0.7);
	cairo_set_line_width(cr, 1.0);
	cairo_set_dash(cr, dash, 2, 0);
	for (size_t i = 0; i < p->s->nevents; i++) {
		double x;

		if (!event_time_s(p, &p->s->events[i], &t_s))
			continue;
		x = snap(x_of(p, area, t_s));
		cairo_move_to(cr, x, area->y);
		cairo_line_to(cr, x, area->y + area->h);
	}
	cairo_stroke(cr);
	cairo_set_dash(cr, NULL, 0, 0);
}

/*
 * Event labels in the band above the first panel; a label that would
 * cover the previous one is left out (its lines stay).
 */
static void draw_event_labels(cairo_t *cr, const struct plot *p, const struct rect *first)
{
	double label_end = -1, t_s;
	char label[64];

	set_font(cr, 9, false);
	set_colour(cr, event_colour);
	for (size_t i = 0; i < p->s->nevents; i++) {
		double x, w;

		if (!event_time_s(p, &p->s->events[i], &t_s))
			continue;
		event_label(&p->s->events[i], label, sizeof(label));
		w = text_width(cr, label);
		x = snap(x_of(p, first, t_s));
		/* right of the line, or left of it at the right edge */
		x = x + 3 + w > first->x + first->w ? x - 3 - w : x + 3;
		if (x < label_end + 4)
			continue;
		show_text(cr, x, first->y - PANEL_TITLE_H - 4, 0, label);
		label_end = x + w;
	}
}

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

static void draw_header(cairo_t *cr, const struct plot *p)
{
	const struct job_record *job = &p->s->job;
	char raw[1024], line[1024], duration[40], after[320];
	double width = PLOT_WIDTH - MARGIN_LEFT - MARGIN_RIGHT;

	format_duration_ms((int64_t)(p->span_s * 1000.0), duration, sizeof(duration));
	snprintf(raw, sizeof(raw), "  \xc2\xb7  %s  \xc2\xb7  %s%s", job->hostname, duration,
		 job->end_ms ? "" : " (still running or interrupted)");
	text_clean(after, sizeof(after), raw);
	set_font(cr, 15, true);
	/* a scheduler's job is known by its id first; 900 bytes are more than a line */
	if (job->scheduler[0] && strcmp(job->scheduler, "run") != 0 && job->job_id[0])
		snprintf(raw, sizeof(raw), "%s %s  \xc2\xb7  %.900s", job->scheduler, job->job_id,
			 job->command[0] ? job->command : job->name);
	else
		snprintf(raw, sizeof(raw), "%.900s", job->command[0] ? job->command : job->name);
	text_clean(line, sizeof(line), raw);
	/* the command gives way to the host and duration */
	text_fit(cr, line, sizeof(line), width - text_width(cr, after));
	set_colour(cr, ink);
	show_text(cr, MARGIN_LEFT, 22, 0, line);
	cairo_show_text(cr, after);
	if (!p->an)
		return;
	analysis_line(p->an, raw, sizeof(raw));
	text_clean(line, sizeof(line), raw);
	set_font(cr, 12, false);
	text_fit(cr, line, sizeof(line), width);
	set_colour(cr, faint_ink);
	show_text(cr, MARGIN_LEFT, 42, 0, line);
}

static void draw_no_samples(cairo_t *cr, double top)
{
	struct rect area = {MARGIN_LEFT, top + 10, PLOT_WIDTH - MARGIN_LEFT - MARGIN_RIGHT,
			    NO_SAMPLES_H - 30};

	draw_frame(cr, &area);
	set_font(cr, 14, false);
	set_colour(cr, faint_ink);
	show_text(cr, area.x + area.w / 2, area.y + area.h / 2 + 5, 0.5,
		  "no samples: nothing to plot for this job");
}

static void draw_plot(cairo_t *cr, const struct plot *p)
{
	double top = HEADER_H + EVENT_BAND_H;
	struct rect area;

	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	draw_header(cr, p);
	if (!p->npanels) {
		draw_no_samples(cr, top);
		return;
	}
	panel_area(&p->panels[0], top, &area);
	draw_event_labels(cr, p, &area);
	for (size_t i = 0; i < p->npanels; i++) {
		panel_area(&p->panels[i], top, &area);
		draw_panel(cr, p, &p->panels[i], top);
		draw_event_lines(cr, p, &area);
		top += p->panels[i].height;
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
		return cairo_pdf_surface_create_for_stream(sink_write, sink, w, h);
	case PLOT_SVG:
		return cairo_svg_surface_create_for_stream(sink_write, sink, w, h);
	default:
		return cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
	}
}

/* cairo's status as -errno: our own write errors keep their errno. */
static int cairo_error(const char *path, const struct plot_sink *sink, cairo_status_t st)
{
	if (sink->err)
		return log_err(-sink->err, "cannot write plot '%s'", path);
	log_err(0, "cannot write plot '%s': %s", path, cairo_status_to_string(st));
	return st == CAIRO_STATUS_NO_MEMORY ? -ENOMEM : -EIO;
}

/* Draws p onto a new surface and writes it through sink. */
static int render(const char *path, enum plot_format format, const struct plot *p,
		  struct plot_sink *sink)
{
	cairo_surface_t *surface = surface_create(format, sink, p->width, p->height);
	cairo_status_t st = cairo_surface_status(surface);
	cairo_t *cr;

	if (st != CAIRO_STATUS_SUCCESS)
		goto out_destroy_surface;
	cr = cairo_create(surface);
	draw_plot(cr, p);
	if (format != PLOT_PNG)
		cairo_show_page(cr);
	st = cairo_status(cr);
	cairo_destroy(cr);
	if (st != CAIRO_STATUS_SUCCESS)
		goto out_destroy_surface;
	if (format == PLOT_PNG)
		st = cairo_surface_write_to_png_stream(surface, sink_write, sink);
	cairo_surface_finish(surface);
	if (st == CAIRO_STATUS_SUCCESS)
		st = cairo_surface_status(surface);
out_destroy_surface:
	cairo_surface_destroy(surface);
	return st == CAIRO_STATUS_SUCCESS ? 0 : cairo_error(path, sink, st);
}

int plot_write(const char *path, const struct summary *s, const struct jobseries *js,
	       const struct analysis *an)
{
	enum plot_format format = plot_format_of(path);
	struct plot_sink sink = {0};
	struct plot *p;
	int ret;

	if (format == PLOT_UNKNOWN) {
		log_err(0, "cannot plot to '%s': unknown format, use .png, .pdf or .svg", path);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return log_err(-ENOMEM, "cannot plot '%s'", path);
	p->s = s;
	p->js = js && js->npoints ? js : NULL;
	p->an = an;
	build_time_axis(p);
	build_panels(p);
	build_layout(p);

	sink.f = fopen(path, "wbe");
	if (!sink.f) {
		ret = log_err(-errno, "cannot write plot '%s'", path);
		goto out_free_plot;
	}
	ret = render(path, format, p, &sink);
	if (fclose(sink.f) && !ret)
		ret = log_err(-errno, "cannot write plot '%s'", path);
	if (ret)
		unlink(path); /* no half-written picture left behind */
out_free_plot:
	free(p);
	return ret;
}
