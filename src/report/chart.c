/*
 * chart.c - the chart model (chart.h): the time axis, the panels with
 * their series, reference lines and y axes, and the event marks, built
 * from a summary and its job series for the SVG and the cairo backends.
 */
#include "report/chart.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fmt.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define NTICKS	     4 /* y intervals of a panel */
#define NTICKS_SMALL 2 /* of a per-device panel */

/* ---- axes ---- */

double chart_nice_step(double raw)
{
	double mag = pow(10.0, floor(log10(raw)));
	double f = raw / mag;

	if (f <= 1.0)
		return mag;
	if (f <= 2.0)
		return 2 * mag;
	if (f <= 2.5)
		return 2.5 * mag;
	if (f <= 5.0)
		return 5 * mag;
	return 10 * mag;
}

void chart_axis_pick(struct chart_axis *ax, enum chart_unit unit, double vmax, double ref,
		     int nticks)
{
	static const char *const bytes[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	static const double floor_of[] = {
	    [CHART_CORES] = 1, [CHART_BYTES] = 1024, [CHART_RATE] = 1024,
	    [CHART_PCT] = 100, [CHART_WATTS] = 10,   [CHART_PLAIN] = 1,
	};
	size_t k = 0;

	/* an all-zero series still gets a readable axis: 0-1 KiB, not fractions of a byte */
	if (!(vmax >= floor_of[unit]))
		vmax = floor_of[unit];
	if (ref > vmax)
		vmax = ref;
	ax->div = 1.0;
	if (unit == CHART_PCT && vmax <= 100.0) {
		/* shares read best on their whole range */
		snprintf(ax->unit, sizeof(ax->unit), "%%");
		ax->max = 100.0;
		ax->step = nticks >= 4 ? 25.0 : 50.0;
		return;
	}
	if (unit == CHART_BYTES || unit == CHART_RATE) {
		while (vmax / ax->div >= 1024.0 && k + 1 < ARRAY_SIZE(bytes)) {
			ax->div *= 1024.0;
			k++;
		}
		snprintf(ax->unit, sizeof(ax->unit), "%s%s", bytes[k],
			 unit == CHART_RATE ? "/s" : "");
	} else {
		snprintf(ax->unit, sizeof(ax->unit), "%s",
			 unit == CHART_PCT     ? "%"
			 : unit == CHART_WATTS ? "W"
			 : unit == CHART_PLAIN ? ""
					       : "cores");
	}
	ax->step = chart_nice_step(vmax / ax->div / nticks);
	ax->max = ceil(vmax / ax->div / ax->step - 1e-9) * ax->step;
	/* a reference line on the frame's top edge would hide in it */
	if (ref / ax->div >= ax->max - 1e-9)
		ax->max += ax->step;
}

/* ---- panels ---- */

struct builder {
	struct chart_set *cs;
	const struct summary *s;
	const struct jobseries *js;
	bool shown[JS_MAX_GPUS]; /* the devices drawn */
	int nshown;
};

struct chart_panel *chart_panel_begin(struct chart_set *cs, enum chart_kind kind, const char *id,
				      const char *title, const char *quantity)
{
	struct chart_panel *p;

	if (cs->npanels >= CHART_MAX_PANELS)
		return NULL;
	p = &cs->panels[cs->npanels];
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	snprintf(p->id, sizeof(p->id), "%s", id);
	snprintf(p->title, sizeof(p->title), "%s", title);
	snprintf(p->quantity, sizeof(p->quantity), "%s", quantity);
	p->empty = "no data";
	p->ref = NAN;
	return p;
}

static enum chart_unit panel_unit(const struct chart_panel *p)
{
	switch (p->kind) {
	case CHART_CPU:
		return CHART_CORES;
	case CHART_MEMORY:
	case CHART_GPU_MEMORY:
		return CHART_BYTES;
	case CHART_IO:
	case CHART_GPU_LINK:
	case CHART_NODE_NET:
		return CHART_RATE;
	case CHART_GPU_POWER:
		return CHART_WATTS;
	case CHART_APP:
		return CHART_PLAIN;
	default:
		return CHART_PCT;
	}
}

/* Closes the panel begun last: its axis; keep_empty: kept without series, to say so. */
void chart_panel_end(struct chart_set *cs, struct chart_panel *p, bool keep_empty)
{
	double vmax = isfinite(p->ref) ? p->ref : 0;

	if (!p->nseries && !keep_empty)
		return;
	for (size_t k = 0; k < p->nseries; k++)
		for (size_t i = 0; i < cs->npoints; i++)
			if (isfinite(p->series[k].v[i]) && p->series[k].v[i] > vmax)
				vmax = p->series[k].v[i];
	p->vmax = vmax;
	chart_axis_pick(&p->y, panel_unit(p), vmax, p->ref, p->small ? NTICKS_SMALL : NTICKS);
	cs->npanels++;
}

/* For the job's builder: its panels always fit (CHART_MAX_PANELS counts them). */
static struct chart_panel *panel_begin(struct builder *b, enum chart_kind kind, const char *id,
				       const char *title, const char *quantity)
{
	return chart_panel_begin(b->cs, kind, id, title, quantity);
}

static void panel_end(struct builder *b, struct chart_panel *p, bool keep_empty)
{
	chart_panel_end(b->cs, p, keep_empty);
}

static void panel_set_ref(struct chart_panel *p, double ref, const char *label)
{
	if (!(ref > 0))
		return;
	p->ref = ref;
	snprintf(p->ref_label, sizeof(p->ref_label), "%s", label);
}

/*
 * Adds a series if the metric has a value: its overview times scale.
 * NULL when it has none (or the panel is full); -ENOMEM in *err.
 */
static struct chart_series *panel_add(struct builder *b, struct chart_panel *p, int gpu, int metric,
				      double scale, int colour, bool dashed, const char *label,
				      int *err)
{
	struct chart_series *cs;
	size_t n;

	if (*err || p->nseries == CHART_MAX_SERIES || !jobseries_has(b->js, gpu, metric))
		return NULL;
	cs = &p->series[p->nseries];
	cs->v = malloc(JS_POINTS * sizeof(*cs->v));
	if (!cs->v) {
		*err = -ENOMEM;
		return NULL;
	}
	p->nseries++;
	n = jobseries_overview(b->js, gpu, metric, cs->v);
	for (size_t i = 0; i < n; i++)
		cs->v[i] *= scale; /* NAN stays NAN */
	cs->gpu = gpu;
	cs->metric = metric;
	cs->colour = colour;
	cs->dashed = dashed;
	snprintf(cs->label, sizeof(cs->label), "%s", label);
	return cs;
}

static void device_label(const struct builder *b, int slot, const char *what, char *buf,
			 size_t size)
{
	const struct js_gpu *g = b->js->gpu[slot];

	snprintf(buf, size, "GPU %d%s%s%s", g->index, what[0] ? " " : "", what,
		 g->job ? "" : " (not the job's)");
}

/* metric of every device shown, in the device's colour. */
static void panel_add_devices(struct builder *b, struct chart_panel *p, int metric, bool dashed,
			      const char *what, int *err)
{
	char label[48];

	for (int i = 0; i < b->js->ngpus && i < JS_MAX_GPUS; i++) {
		if (!b->shown[i])
			continue;
		device_label(b, i, what, label, sizeof(label));
		panel_add(b, p, i, metric, 1.0, i, dashed, label, err);
	}
}

static const struct gpu_summary *device_summary(const struct builder *b, int slot)
{
	const struct summary *s = b->s;

	for (int i = 0; s->gpus && i < s->ngpus; i++)
		if (strcmp(s->gpus[i].dev.info.uuid, b->js->gpu[slot]->uuid) == 0)
			return &s->gpus[i];
	return NULL;
}

/* The shown devices' memory size (or power limit) when they all share one; NAN otherwise. */
static double common_device_value(const struct builder *b, bool power)
{
	double value = NAN;

	for (int i = 0; i < b->js->ngpus && i < JS_MAX_GPUS; i++) {
		const struct gpu_summary *g = device_summary(b, i);
		double v;

		if (!b->shown[i])
			continue;
		if (power)
			v = g && (g->dev.info.valid & GPU_INFO_POWER_LIMIT)
				? g->dev.info.power_limit_mw / 1000.0
				: NAN;
		else
			v = b->js->gpu[i]->mem_total_bytes ? (double)b->js->gpu[i]->mem_total_bytes
							   : NAN;
		if (isnan(v) || (!isnan(value) && v != value))
			return NAN;
		value = v;
	}
	return value;
}

static void add_cpu(struct builder *b, int *err)
{
	const struct job_record *job = &b->s->job;
	struct chart_panel *p = panel_begin(b, CHART_CPU, "cpu", "CPU cores used", "CPU");
	char label[64];

	panel_add(b, p, -1, JSM_CORES, 1.0, 0, false, "cores used", err);
	/* the reservation is what the job paid for; the affinity mask what it could use */
	if (job->reserved_cpus > 0) {
		snprintf(label, sizeof(label), "reserved: %.4g cores", job->reserved_cpus);
		panel_set_ref(p, job->reserved_cpus, label);
	} else if (job->cores_allowed > 0) {
		snprintf(label, sizeof(label), "allowed: %d cores", job->cores_allowed);
		panel_set_ref(p, job->cores_allowed, label);
	}
	panel_end(b, p, true);
}

static void add_memory(struct builder *b, int *err)
{
	const struct job_record *job = &b->s->job;
	struct chart_panel *p =
	    panel_begin(b, CHART_MEMORY, "memory", "Memory (resident set)", "memory");
	char label[64], size[32];

	panel_add(b, p, -1, JSM_RSS_BYTES, 1.0, 0, false, "RSS", err);
	panel_add(b, p, -1, JSM_SWAP_BYTES, 1.0, 1, false, "swap", err);
	if (job->reserved_mem_bytes) {
		snprintf(label, sizeof(label), "reserved: %s",
			 fmt_bytes(size, sizeof(size), job->reserved_mem_bytes));
		panel_set_ref(p, (double)job->reserved_mem_bytes, label);
	}
	panel_end(b, p, true);
}

static void add_io(struct builder *b, int *err)
{
	struct chart_panel *p = panel_begin(b, CHART_IO, "io", "Storage I/O rate", "I/O");

	p->empty = b->s && b->s->origin.kind == SAMPLE_SOURCE_PROMETHEUS
		       ? "no I/O figures (none in Prometheus)"
		       : "no I/O figures (/proc/PID/io not readable)";
	panel_add(b, p, -1, JSM_READ_BPS, 1.0, 0, false, "read", err);
	panel_add(b, p, -1, JSM_WRITE_BPS, 1.0, 1, false, "written", err);
	panel_end(b, p, true);
}

static void add_gpus(struct builder *b, int *err)
{
	struct chart_panel *p;
	char label[64], size[32];
	double v;

	p = panel_begin(b, CHART_GPU_UTIL, "gpu-util", "GPU utilization, per device",
			"utilization");
	panel_add_devices(b, p, JSG_UTIL_PCT, false, "", err);
	panel_end(b, p, true);

	p = panel_begin(b, CHART_GPU_MEMORY, "gpu-memory", "GPU memory used, per device",
			"GPU memory");
	panel_add_devices(b, p, JSG_MEM_BYTES, false, "", err);
	v = common_device_value(b, false);
	if (v > 0) {
		snprintf(label, sizeof(label), "device memory: %s",
			 fmt_bytes(size, sizeof(size), (uint64_t)v));
		panel_set_ref(p, v, label);
	}
	panel_end(b, p, true);

	/* drawn only when the driver gives traffic figures */
	p = panel_begin(b, CHART_GPU_LINK, "gpu-link",
			"GPU interconnect: PCIe rx+tx (solid), NVLink rx+tx (dashed)", "traffic");
	panel_add_devices(b, p, JSG_PCIE_BPS, false, "PCIe", err);
	panel_add_devices(b, p, JSG_NVLINK_BPS, true, "NVLink", err);
	panel_end(b, p, false);

	p = panel_begin(b, CHART_GPU_POWER, "gpu-power", "GPU power, per device", "power");
	p->empty = "the driver gives no power readings";
	panel_add_devices(b, p, JSG_POWER_W, false, "", err);
	v = common_device_value(b, true);
	if (v > 0) {
		snprintf(label, sizeof(label), "power limit: %.0f W", v);
		panel_set_ref(p, v, label);
	}
	panel_end(b, p, true);
}

/*
 * What the SMs did (GPM), drawn only when the driver gives it: one device's
 * SM active, tensor and DRAM activity and the share of time power held it
 * back; several devices' SM active (solid) and tensor activity (dashed).
 */
static bool series_above_zero(const struct builder *b, const struct chart_series *cs)
{
	for (size_t i = 0; i < b->cs->npoints; i++)
		if (cs->v[i] > 0) /* NAN is not */
			return true;
	return false;
}

static void add_gpu_activity(struct builder *b, int *err)
{
	struct chart_series *cs;
	struct chart_panel *p;
	char label[64];

	if (b->nshown == 1) {
		p = panel_begin(b, CHART_GPU_ACTIVITY, "gpu-activity",
				"GPU activity (GPM) and time throttled by power", "activity");
		for (int i = 0; i < b->js->ngpus && i < JS_MAX_GPUS; i++) {
			if (!b->shown[i])
				continue;
			panel_add(b, p, i, JSG_SM_ACTIVE_PCT, 1.0, 0, false, "SM active", err);
			panel_add(b, p, i, JSG_TENSOR_ACTIVE_PCT, 1.0, 1, false, "tensor active",
				  err);
			panel_add(b, p, i, JSG_DRAM_ACTIVE_PCT, 1.0, 2, false, "DRAM active", err);
			cs = panel_add(b, p, i, JSG_THROTTLE_POWER_PCT, 1.0, CHART_INK, true,
				       "throttled by power", err);
			/* a driver without GPM that never held the GPU back: no panel of zeros */
			if (cs && p->nseries == 1 && !series_above_zero(b, cs)) {
				free(cs->v);
				cs->v = NULL;
				p->nseries--;
			}
		}
		panel_end(b, p, false);
		return;
	}
	p = panel_begin(b, CHART_GPU_ACTIVITY, "gpu-activity",
			"GPU activity (GPM): SM active (solid), tensor active (dashed)",
			"activity");
	for (int i = 0; i < b->js->ngpus && i < JS_MAX_GPUS; i++) {
		if (!b->shown[i])
			continue;
		device_label(b, i, "SM active", label, sizeof(label));
		panel_add(b, p, i, JSG_SM_ACTIVE_PCT, 1.0, i, false, label, err);
		device_label(b, i, "tensor", label, sizeof(label));
		panel_add(b, p, i, JSG_TENSOR_ACTIVE_PCT, 1.0, i, true, label, err);
	}
	panel_end(b, p, false);
}

/* Several devices: one small panel each, memory as a share of the device's. */
static void add_device(struct builder *b, int slot, int *err)
{
	const struct js_gpu *g = b->js->gpu[slot];
	const struct gpu_summary *gs = device_summary(b, slot);
	struct chart_panel *p;
	char who[48], size[32], id[16], title[sizeof(who) + GPU_NAME_MAX + 64];

	device_label(b, slot, "", who, sizeof(who));
	if (g->mem_total_bytes)
		snprintf(title, sizeof(title), "%s%s%s: utilization, memory (%% of %s)", who,
			 gs ? ", " : "", gs ? gs->dev.info.name : "",
			 fmt_bytes(size, sizeof(size), g->mem_total_bytes));
	else
		snprintf(title, sizeof(title), "%s%s%s: utilization", who, gs ? ", " : "",
			 gs ? gs->dev.info.name : "");
	snprintf(id, sizeof(id), "gpu-%d", slot);
	p = panel_begin(b, CHART_GPU_DEVICE, id, title, "utilization, memory");
	p->small = true;
	panel_add(b, p, slot, JSG_UTIL_PCT, 1.0, slot, false, "utilization", err);
	if (g->mem_total_bytes)
		panel_add(b, p, slot, JSG_MEM_BYTES, 100.0 / (double)g->mem_total_bytes, CHART_INK,
			  true, "memory", err);
	panel_end(b, p, false);
}

/* The job's devices; every device when it had none. */
static void pick_devices(struct builder *b)
{
	const struct jobseries *js = b->js;
	bool any_job = false;

	for (int i = 0; i < js->ngpus && i < JS_MAX_GPUS; i++)
		any_job |= js->gpu[i] && js->gpu[i]->job;
	for (int i = 0; i < js->ngpus && i < JS_MAX_GPUS; i++) {
		b->shown[i] = js->gpu[i] && (!any_job || js->gpu[i]->job);
		b->nshown += b->shown[i];
		b->cs->gpus_hidden += js->gpu[i] && !b->shown[i];
	}
}

static int build_panels(struct builder *b)
{
	int err = 0;

	add_cpu(b, &err);
	add_memory(b, &err);
	add_io(b, &err);
	if (b->js->ngpus > 0) {
		pick_devices(b);
		add_gpus(b, &err);
		add_gpu_activity(b, &err);
	}
	for (int i = 0; b->nshown > 1 && i < b->js->ngpus && i < JS_MAX_GPUS; i++)
		if (b->shown[i])
			add_device(b, i, &err);
	return err;
}

/* ---- time ---- */

/*
 * The time axis: from the job's start (or its first sample, if that came
 * first) to its end, its last sample, or its last point, whichever is last.
 * A point sits where its bucket's ticks sit on average: a bucket holds
 * ticks from its start on, one interval apart.
 */
static int build_time_axis(struct chart_set *cs, const struct summary *s,
			   const struct jobseries *js)
{
	int64_t end_ms = s->job.end_ms ? s->job.end_ms : s->last_ms;
	double last_s = 0;

	cs->origin_ms = s->job.start_ms;
	if (js) {
		int64_t mid =
		    js->bucket_ms > js->interval_ms ? (js->bucket_ms - js->interval_ms) / 2 : 0;

		if (cs->origin_ms <= 0 || cs->origin_ms > js->t0_ms)
			cs->origin_ms = js->t0_ms;
		cs->bucket_ms = js->bucket_ms;
		cs->npoints = js->npoints;
		cs->t_s = malloc(JS_POINTS * sizeof(*cs->t_s));
		if (!cs->t_s)
			return -ENOMEM;
		for (size_t i = 0; i < cs->npoints; i++)
			cs->t_s[i] =
			    (double)(js->t0_ms + (int64_t)i * js->bucket_ms + mid - cs->origin_ms) /
			    1000.0;
		last_s = cs->t_s[cs->npoints - 1];
	}
	cs->span_s = fmax((double)(end_ms - cs->origin_ms) / 1000.0, last_s);
	if (!(cs->span_s >= 1.0))
		cs->span_s = 1.0;
	return 0;
}

static int build_events(struct chart_set *cs, const struct summary *s)
{
	if (!s->nevents)
		return 0;
	cs->events = calloc(s->nevents, sizeof(*cs->events));
	if (!cs->events)
		return -ENOMEM;
	for (size_t i = 0; i < s->nevents; i++) {
		double t_s = (double)(s->events[i].ts_ms - cs->origin_ms) / 1000.0;

		if (t_s < 0 || t_s > cs->span_s)
			continue;
		cs->events[cs->nevents].t_s = t_s;
		cs->events[cs->nevents].number = i + 1;
		cs->events[cs->nevents].event = &s->events[i];
		cs->nevents++;
	}
	return 0;
}

int chart_set_build(const struct summary *s, const struct jobseries *js, struct chart_set **out)
{
	struct chart_set *cs = calloc(1, sizeof(*cs));
	struct builder b = {.cs = cs, .s = s, .js = js};
	int ret;

	*out = NULL;
	if (!cs)
		return -ENOMEM;
	if (js && (!js->npoints || js->bucket_ms <= 0))
		b.js = js = NULL;
	cs->node_gpus = js && js->ngpus > 0;
	ret = build_time_axis(cs, s, js);
	if (!ret)
		ret = build_events(cs, s);
	if (!ret && js)
		ret = build_panels(&b);
	if (ret) {
		chart_set_free(cs);
		return ret;
	}
	*out = cs;
	return 0;
}

int chart_set_new(int64_t origin_ms, double span_s, const double *t_s, size_t npoints,
		  struct chart_set **out)
{
	struct chart_set *cs = calloc(1, sizeof(*cs));

	*out = NULL;
	if (!cs)
		return -ENOMEM;
	cs->origin_ms = origin_ms;
	cs->span_s = span_s >= 1.0 ? span_s : 1.0;
	if (npoints) {
		cs->t_s = malloc(npoints * sizeof(*cs->t_s));
		if (!cs->t_s) {
			free(cs);
			return -ENOMEM;
		}
		memcpy(cs->t_s, t_s, npoints * sizeof(*cs->t_s));
	}
	cs->npoints = npoints;
	*out = cs;
	return 0;
}

int chart_panel_add(struct chart_set *cs, struct chart_panel *p, const char *label, int colour,
		    bool dashed, const double *v)
{
	struct chart_series *l;
	bool any = false;

	for (size_t i = 0; i < cs->npoints && !any; i++)
		any = isfinite(v[i]);
	if (!any || p->nseries == CHART_MAX_SERIES)
		return 0;
	l = &p->series[p->nseries];
	memset(l, 0, sizeof(*l));
	l->v = malloc(cs->npoints * sizeof(*l->v));
	if (!l->v)
		return -ENOMEM;
	memcpy(l->v, v, cs->npoints * sizeof(*l->v));
	p->nseries++;
	l->gpu = -1;
	l->metric = -1;
	l->colour = colour;
	l->dashed = dashed;
	snprintf(l->label, sizeof(l->label), "%s", label);
	return 0;
}

void chart_set_free(struct chart_set *cs)
{
	if (!cs)
		return;
	/* a panel left unfinished by an error still owns its series */
	for (size_t i = 0; i <= cs->npanels && i < CHART_MAX_PANELS; i++)
		for (size_t k = 0; k < cs->panels[i].nseries; k++)
			free(cs->panels[i].series[k].v);
	free(cs->t_s);
	free(cs->events);
	free(cs);
}
