/*
 * chart.h - the chart model: what a job's timelines show, with no drawing
 * in it.  report_html.c draws it as inline SVG, plot.c with cairo.
 *
 * From a summary and its job series, chart_set_build makes the panels in
 * order: CPU, memory, storage I/O, then (on a node with GPUs) GPU
 * utilization, memory, interconnect and power, then one small panel per
 * device when more than one is shown.  A panel has a title, a y axis with
 * round ticks, its series (values already scaled, NAN where nothing was
 * measured: a gap, never a 0), at most one dashed reference line with its
 * label, and the colour of each series as an index into the backend's own
 * palette.  All panels share one time axis (seconds since the job started)
 * and the event marks.
 *
 * GPUs shown: the job's devices; when it had none, every device of the
 * node, labelled "(not the job's)".
 *
 * Ownership: chart_set_build allocates the set, chart_set_free frees it
 * and everything in it; the set does not point into the summary except
 * through chart_event.event.  Errors: 0 or -ENOMEM.  Not thread-safe, but
 * sets built apart share nothing.
 */
#ifndef JOBSCOPE_CHART_H
#define JOBSCOPE_CHART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/jobseries.h"
#include "analysis/summary.h"

/* CPU, memory, I/O, four GPU panels, then one per device. */
#define CHART_MAX_PANELS (8 + JS_MAX_GPUS)
#define CHART_MAX_SERIES (2 * JS_MAX_GPUS) /* PCIe and NVLink of every device */
#define CHART_INK	 (-1)		   /* a series' colour: the text's */

enum chart_unit { CHART_CORES, CHART_BYTES, CHART_RATE, CHART_PCT, CHART_WATTS, CHART_PLAIN };

enum chart_kind {
	CHART_CPU,
	CHART_MEMORY,
	CHART_IO,
	CHART_GPU_UTIL,
	CHART_GPU_MEMORY,
	CHART_GPU_LINK,
	CHART_GPU_POWER,
	CHART_GPU_DEVICE,   /* one device: utilization, memory as a share */
	CHART_NODE_CPU,	    /* a node's CPUs busy, 0-100% (a session's plots) */
	CHART_NODE_NET,	    /* a node's network traffic, bytes/s */
	CHART_APP,	    /* a program's own metric (report_app.c), in its own units */
	CHART_GPU_ACTIVITY, /* what the SMs did (GPM) and power throttling, 0-100% */
};

/*
 * A y axis from 0 to max (shown units) with a tick every step; a raw value
 * v is shown as v / div in unit ("cores", "%", "MiB", "GiB/s", "W").
 */
struct chart_axis {
	double max, step, div;
	char unit[16];
};

struct chart_series {
	char label[48];
	int gpu;    /* the device's slot in the job series; -1: a JSM_* metric */
	int metric; /* JSM_* or JSG_* */
	int colour; /* index into the backend's palette (modulo its size), or CHART_INK */
	bool dashed;
	double *v; /* the set's npoints values, NAN where missing */
};

struct chart_panel {
	enum chart_kind kind;
	char id[16];	    /* "cpu", "gpu-util", "gpu-0" */
	char title[256];    /* may hold a device's name: any bytes */
	char quantity[32];  /* what the y axis measures: "CPU", "memory" */
	const char *empty;  /* said instead of the chart when no series has a value */
	bool small;	    /* a per-device panel: drawn lower, fewer ticks */
	double ref;	    /* the reference line (reserved, capacity, limit); NAN: none */
	char ref_label[64]; /* "reserved: 4 cores", "device memory: 80.0 GiB" */
	double vmax;	    /* the largest value drawn, the reference line's included */
	struct chart_axis y;
	size_t nseries;
	struct chart_series series[CHART_MAX_SERIES];
};

/* An event on the time axis, numbered from 1 as the summary lists them. */
struct chart_event {
	double t_s;
	size_t number;
	const struct event_record *event;
};

struct chart_set {
	int64_t origin_ms; /* t = 0: the job's start */
	double span_s;	   /* the time axis' length, at least 1 s */
	int64_t bucket_ms; /* each point is the mean over this */
	size_t npoints;
	double *t_s;	 /* the points' times, shared by every series */
	bool node_gpus;	 /* the node has GPUs (the job series saw some) */
	int gpus_hidden; /* the node's devices left out: not the job's */
	size_t npanels;	 /* 0: no samples */
	struct chart_panel panels[CHART_MAX_PANELS];
	size_t nevents;
	struct chart_event *events;
};

/* js may be NULL or empty: no panels, the time axis from the summary. */
int chart_set_build(const struct summary *s, const struct jobseries *js, struct chart_set **out);
void chart_set_free(struct chart_set *cs);

/*
 * A set for points the caller has rather than a job series (a profiling
 * session's frames): npoints times t_s (seconds from origin_ms, copied),
 * a time axis span_s long (at least 1 s), no events.  Its panels are made
 * with chart_panel_begin, chart_panel_add and chart_panel_end, in order.
 */
int chart_set_new(int64_t origin_ms, double span_s, const double *t_s, size_t npoints,
		  struct chart_set **out);
/* The next panel of cs (NULL when the set is full). */
struct chart_panel *chart_panel_begin(struct chart_set *cs, enum chart_kind kind, const char *id,
				      const char *title, const char *quantity);
/*
 * A series of the set's npoints values (copied; NAN where nothing was
 * measured), unless none of them is a number or the panel is full:
 * 0 or -ENOMEM.
 */
int chart_panel_add(struct chart_set *cs, struct chart_panel *p, const char *label, int colour,
		    bool dashed, const double *v);
/* Closes the panel begun last (its y axis); one without series is dropped unless keep_empty. */
void chart_panel_end(struct chart_set *cs, struct chart_panel *p, bool keep_empty);

/*
 * The cairo backend (plot.c) for any chart set: the panels with series
 * over one time axis, under a header (title, then title_tail, which is
 * never cut; a subtitle), to path as PNG, PDF or SVG by its extension.
 * no_data: said instead when no panel has a series.  Nothing is left at
 * path when it fails: -EINVAL (unknown extension), -ENOMEM, -EIO or a
 * write's -errno, each with a message.
 */
struct plot_titles {
	const char *title, *title_tail, *subtitle; /* any bytes; "" or NULL: none */
	const char *time_caption;		   /* "elapsed time since the job started" */
	const char *no_data;			   /* "no samples: nothing to plot for this job" */
};
int plot_chart_write(const char *path, const struct chart_set *cs, const struct plot_titles *t);

/* The smallest 1, 2, 2.5 or 5 times a power of ten not below raw (> 0). */
double chart_nice_step(double raw);
/*
 * The axis for values up to vmax (raw units) with about nticks intervals:
 * a floor for an all-zero series, shares on 0-100%, bytes in binary units,
 * and room above a reference line at ref (NAN: none) so it clears the top.
 */
void chart_axis_pick(struct chart_axis *ax, enum chart_unit unit, double vmax, double ref,
		     int nticks);

#endif
