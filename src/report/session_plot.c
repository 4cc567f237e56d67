/*
 * session_plot.c - a profiling session's plots (`jobscope report --session
 * NAME --plot F`): one picture per device, drawn from the session's frames
 * by the cairo backend of the chart model (plot.c):
 *
 *   F-NODE-host.ext   the node's CPU (% busy), memory used, storage and
 *                     network rates
 *   F-NODE-gpuI.ext   GPU I of the node: utilization, memory used,
 *                     PCIe and NVLink traffic, power
 *
 * All on the session's time axis (from its start to its end, or now), so
 * pictures side by side line up.  A session without any frame gets F
 * itself, saying so.
 *
 * Node by node (store_for_each_frame gives every frame of a node before
 * the next node's), so one node's points are in memory at a time.  A
 * series is at most SP_POINTS means of consecutive frames: a point holds
 * one frame at first and twice as many each time the node outgrows them
 * (neighbours merged).  A gap (no frame for three intervals and at least
 * 3 s, as the export counts them) is never bridged by a point or a line.
 */
#include "report/session_export.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "report/chart.h"
#include "report/report.h"
#include "store/profiling.h"

#define SP_POINTS 1024

enum sp_host_metric { SPH_CPU, SPH_MEM, SPH_READ, SPH_WRITE, SPH_RX, SPH_TX, SPH__COUNT };
enum sp_gpu_metric {
	SPG_UTIL,
	SPG_MEM,
	SPG_PCIE_RX,
	SPG_PCIE_TX,
	SPG_NVLINK_RX,
	SPG_NVLINK_TX,
	SPG_POWER,
	SPG__COUNT
};

struct sp_mean {
	double sum;
	uint32_t n; /* 0: nothing measured (NAN) */
};

struct sp_gpu {
	int index;
	char uuid[GPU_UUID_MAX];
	char name[GPU_NAME_MAX];
	struct sp_mean v[SP_POINTS][SPG__COUNT]; /* by the node's point */
};

/* One node's points. */
struct sp_node {
	char hostname[256];
	size_t npoints;
	uint32_t per_point; /* frames a point may hold */
	int64_t frames, gaps, last_ms, min_gap_ms;
	double t_sum_ms[SP_POINTS]; /* of the frames' times from the origin */
	uint32_t nframes[SP_POINTS];
	bool gap_before[SP_POINTS];
	struct sp_mean host[SP_POINTS][SPH__COUNT];
	int ngpus;
	struct sp_gpu *gpu[GPU_MAX_DEVICES];
};

struct sp_ctx {
	const struct session_record *s;
	const char *path;
	struct strbuf *written;
	int64_t origin_ms, end_ms;
	struct sp_node *node; /* the node whose frames come now */
	bool has_node;
	size_t files;
};

static void mean_add(struct sp_mean *m, double v)
{
	if (isnan(v))
		return;
	m->sum += v;
	m->n++;
}

static void mean_merge(struct sp_mean *into, const struct sp_mean *from)
{
	into->sum += from->sum;
	into->n += from->n;
}

static double mean_of(const struct sp_mean *m)
{
	return m->n ? m->sum / m->n : NAN;
}

static void node_reset(struct sp_node *n, const char *host)
{
	for (int i = 0; i < n->ngpus; i++)
		free(n->gpu[i]);
	memset(n, 0, sizeof(*n));
	snprintf(n->hostname, sizeof(n->hostname), "%s", host);
	n->per_point = 1;
}

/* Point from merged into point into (of the node and each of its GPUs). */
static void point_merge(struct sp_node *n, size_t into, size_t from)
{
	n->t_sum_ms[into] += n->t_sum_ms[from];
	n->nframes[into] += n->nframes[from];
	for (int k = 0; k < SPH__COUNT; k++)
		mean_merge(&n->host[into][k], &n->host[from][k]);
	for (int g = 0; g < n->ngpus; g++)
		for (int k = 0; k < SPG__COUNT; k++)
			mean_merge(&n->gpu[g]->v[into][k], &n->gpu[g]->v[from][k]);
}

static void point_move(struct sp_node *n, size_t to, size_t from)
{
	if (to == from)
		return;
	n->t_sum_ms[to] = n->t_sum_ms[from];
	n->nframes[to] = n->nframes[from];
	n->gap_before[to] = n->gap_before[from];
	memcpy(n->host[to], n->host[from], sizeof(n->host[to]));
	for (int g = 0; g < n->ngpus; g++)
		memcpy(n->gpu[g]->v[to], n->gpu[g]->v[from], sizeof(n->gpu[g]->v[to]));
}

/*
 * Doubles what a point holds and merges neighbours to fit; across gaps
 * only when nothing else would free a point (a gap after every point).
 */
static void node_halve(struct sp_node *n)
{
	n->per_point *= 2;
	for (int pass = 0; pass < 2; pass++) {
		size_t out = 0;

		for (size_t i = 0; i < n->npoints; i++) {
			if (out > 0 && (pass == 1 || !n->gap_before[i]) &&
			    n->nframes[out - 1] + n->nframes[i] <= n->per_point) {
				point_merge(n, out - 1, i);
			} else {
				point_move(n, out, i);
				out++;
			}
		}
		n->npoints = out;
		if (out < SP_POINTS)
			return;
	}
}

/* The node's GPU of fg's index, made at its first frame: 0, or -ENOMEM. */
static int gpu_of(struct sp_node *n, const struct session_frame_gpu *fg, struct sp_gpu **out)
{
	struct sp_gpu *g;

	*out = NULL;
	for (int i = 0; i < n->ngpus; i++)
		if (n->gpu[i]->index == fg->index) {
			*out = n->gpu[i];
			return 0;
		}
	if (n->ngpus == GPU_MAX_DEVICES)
		return 0; /* more indexes over time than a node can hold at once: not drawn */
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->index = fg->index;
	snprintf(g->uuid, sizeof(g->uuid), "%s", fg->uuid);
	snprintf(g->name, sizeof(g->name), "%s", fg->name);
	n->gpu[n->ngpus++] = g;
	*out = g;
	return 0;
}

static bool needs_point(const struct sp_node *n, bool gap)
{
	return !n->npoints || gap || n->nframes[n->npoints - 1] >= n->per_point;
}

static int node_add(struct sp_node *n, const struct session_frame *f, int64_t origin_ms)
{
	bool gap = false;
	size_t p;

	if (n->frames) {
		int64_t d = f->ts_ms - n->last_ms;

		/* three missed intervals (and at least 3 s) make a gap, as in the export */
		gap = n->min_gap_ms && d > 3 * n->min_gap_ms && d >= 3000;
		if (d > 0 && (n->min_gap_ms == 0 || d < n->min_gap_ms))
			n->min_gap_ms = d;
	}
	n->gaps += gap;
	n->frames++;
	n->last_ms = f->ts_ms;
	if (needs_point(n, gap) && n->npoints == SP_POINTS)
		node_halve(n);
	if (needs_point(n, gap) && n->npoints < SP_POINTS) {
		p = n->npoints++;
		n->t_sum_ms[p] = 0;
		n->nframes[p] = 0;
		n->gap_before[p] = gap && p > 0;
		memset(n->host[p], 0, sizeof(n->host[p]));
		for (int g = 0; g < n->ngpus; g++)
			memset(n->gpu[g]->v[p], 0, sizeof(n->gpu[g]->v[p]));
	}
	p = n->npoints - 1;
	n->t_sum_ms[p] += (double)(f->ts_ms - origin_ms);
	n->nframes[p]++;
	mean_add(&n->host[p][SPH_CPU], f->cpu_util_pct);
	mean_add(&n->host[p][SPH_MEM], f->mem_used_bytes);
	mean_add(&n->host[p][SPH_READ], f->disk_read_bps);
	mean_add(&n->host[p][SPH_WRITE], f->disk_write_bps);
	mean_add(&n->host[p][SPH_RX], f->net_rx_bps);
	mean_add(&n->host[p][SPH_TX], f->net_tx_bps);
	for (int i = 0; i < f->ngpus; i++) {
		const struct session_frame_gpu *fg = &f->gpu[i];
		struct sp_gpu *g;

		if (gpu_of(n, fg, &g))
			return log_err(-ENOMEM, "cannot plot the session");
		if (!g)
			continue;
		mean_add(&g->v[p][SPG_UTIL], fg->util_pct);
		mean_add(&g->v[p][SPG_MEM], fg->mem_used_bytes);
		mean_add(&g->v[p][SPG_PCIE_RX], fg->pcie_rx_bps);
		mean_add(&g->v[p][SPG_PCIE_TX], fg->pcie_tx_bps);
		mean_add(&g->v[p][SPG_NVLINK_RX], fg->nvlink_rx_bps);
		mean_add(&g->v[p][SPG_NVLINK_TX], fg->nvlink_tx_bps);
		mean_add(&g->v[p][SPG_POWER], fg->power_w);
	}
	return 0;
}

/*
 * path with "-HOST-host" or "-HOST-gpuI" before its extension (the
 * suffixes keep a node called "a-gpu0" from taking GPU 0 of "a"'s name);
 * bytes of the host name that do not belong in a file name become '_'.
 */
static int plot_path(char *buf, size_t size, const char *path, const char *host, int gpu)
{
	const char *slash = strrchr(path, '/');
	const char *dot = strrchr(slash ? slash + 1 : path, '.');
	size_t stem = dot ? (size_t)(dot - path) : strlen(path), len;
	int n;

	n = snprintf(buf, size, "%.*s-", (int)stem, path);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	len = (size_t)n;
	for (const char *c = host; *c && len + 1 < size; c++)
		buf[len++] = (strchr("._-", *c) || (*c >= 'a' && *c <= 'z') ||
			      (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))
				 ? *c
				 : '_';
	buf[len] = '\0';
	if (gpu >= 0)
		n = snprintf(buf + len, size - len, "-gpu%d%s", gpu, dot ? dot : "");
	else
		n = snprintf(buf + len, size - len, "-host%s", dot ? dot : "");
	return n < 0 || (size_t)n >= size - len ? -ENAMETOOLONG : 0;
}

/* The points' times, with a missing point where a gap breaks the line: the entry of each. */
static size_t layout(const struct sp_node *n, double *t_s, size_t *entry)
{
	size_t k = 0;

	for (size_t i = 0; i < n->npoints; i++) {
		double t = n->t_sum_ms[i] / n->nframes[i] / 1000.0;

		if (n->gap_before[i] && k > 0) {
			t_s[k] = (t_s[k - 1] + t) / 2; /* a point with no value: the line breaks */
			k++;
		}
		entry[i] = k;
		t_s[k++] = t;
	}
	return k;
}

/* The means of one metric into v at the points' entries; NAN elsewhere. */
static void values(const struct sp_mean (*m)[SPH__COUNT], const struct sp_gpu *g, int metric,
		   const size_t *entry, size_t npoints, size_t nentries, double *v)
{
	for (size_t i = 0; i < nentries; i++)
		v[i] = NAN;
	for (size_t i = 0; i < npoints; i++)
		v[entry[i]] = g ? mean_of(&g->v[i][metric]) : mean_of(&m[i][metric]);
}

struct series_spec {
	int metric;
	const char *label;
	int colour;
	bool dashed;
};

struct panel_spec {
	enum chart_kind kind;
	const char *id, *title, *quantity;
	struct series_spec series[4];
};

static const struct panel_spec node_panels[] = {
    {CHART_NODE_CPU, "cpu", "CPU busy, % of the node's CPUs", "CPU", {{SPH_CPU, "busy", 0, false}}},
    {CHART_MEMORY,
     "memory",
     "Memory used (total - available)",
     "memory",
     {{SPH_MEM, "used", 0, false}}},
    {CHART_IO,
     "io",
     "Storage I/O rate",
     "I/O",
     {{SPH_READ, "read", 0, false}, {SPH_WRITE, "written", 1, false}}},
    {CHART_NODE_NET,
     "net",
     "Network rate",
     "network",
     {{SPH_RX, "received", 0, false}, {SPH_TX, "sent", 1, false}}},
};

static const struct panel_spec gpu_panels[] = {
    {CHART_GPU_UTIL, "gpu-util", "Utilization", "utilization", {{SPG_UTIL, "busy", 0, false}}},
    {CHART_GPU_MEMORY, "gpu-memory", "Memory used", "GPU memory", {{SPG_MEM, "used", 0, false}}},
    {CHART_GPU_LINK,
     "gpu-link",
     "Interconnect: PCIe (solid), NVLink (dashed)",
     "traffic",
     {{SPG_PCIE_RX, "PCIe rx", 0, false},
      {SPG_PCIE_TX, "PCIe tx", 1, false},
      {SPG_NVLINK_RX, "NVLink rx", 0, true},
      {SPG_NVLINK_TX, "NVLink tx", 1, true}}},
    {CHART_GPU_POWER, "gpu-power", "Power", "power", {{SPG_POWER, "power", 0, false}}},
};

/* One device's picture: the node's (g NULL) or one GPU's. */
static int write_device(struct sp_ctx *c, const struct sp_node *n, const struct sp_gpu *g,
			const double *t_s, const size_t *entry, size_t nentries, double *v)
{
	const struct panel_spec *spec = g ? gpu_panels : node_panels;
	size_t nspec = g ? sizeof(gpu_panels) / sizeof(gpu_panels[0])
			 : sizeof(node_panels) / sizeof(node_panels[0]);
	char path[4096], title[600], tail[128], subtitle[400], t0[40], t1[40], dur[32];
	struct plot_titles t = {title, tail, subtitle, "elapsed time since the session started",
				"nothing measured on this device in the session"};
	struct chart_set *cs;
	int ret;

	ret = plot_path(path, sizeof(path), c->path, n->hostname, g ? g->index : -1);
	if (ret)
		return log_err(ret, "cannot plot '%s' of the session", n->hostname);
	ret = chart_set_new(c->origin_ms, (double)(c->end_ms - c->origin_ms) / 1000.0, t_s,
			    nentries, &cs);
	if (ret)
		return log_err(ret, "cannot plot '%s'", path);
	for (size_t i = 0; i < nspec && !ret; i++) {
		struct chart_panel *p = chart_panel_begin(cs, spec[i].kind, spec[i].id,
							  spec[i].title, spec[i].quantity);

		for (size_t k = 0; p && !ret && k < 4 && spec[i].series[k].label; k++) {
			values(n->host, g, spec[i].series[k].metric, entry, n->npoints, nentries,
			       v);
			ret =
			    chart_panel_add(cs, p, spec[i].series[k].label,
					    spec[i].series[k].colour, spec[i].series[k].dashed, v);
		}
		if (p)
			chart_panel_end(cs, p, false);
	}
	if (ret) {
		chart_set_free(cs);
		return log_err(ret, "cannot plot '%s'", path);
	}
	if (g)
		snprintf(title, sizeof(title), "session %s  \xc2\xb7  %s GPU %d  \xc2\xb7  %s",
			 c->s->name, n->hostname, g->index, g->name);
	else
		snprintf(title, sizeof(title), "session %s  \xc2\xb7  %s", c->s->name, n->hostname);
	format_duration_ms(c->end_ms - c->origin_ms, dur, sizeof(dur));
	snprintf(tail, sizeof(tail), "  \xc2\xb7  %s%s", dur,
		 c->s->end_ms ? "" : " (still active)");
	format_rfc3339_ms(c->origin_ms, t0, sizeof(t0));
	format_rfc3339_ms(c->end_ms, t1, sizeof(t1));
	snprintf(subtitle, sizeof(subtitle),
		 "%s%s%s to %s  \xc2\xb7  %" PRId64 " frames  \xc2\xb7  %" PRId64 " gap%s",
		 g ? g->uuid : "", g ? "  \xc2\xb7  " : "", t0, t1, n->frames, n->gaps,
		 n->gaps == 1 ? "" : "s");
	ret = plot_chart_write(path, cs, &t);
	chart_set_free(cs);
	if (ret)
		return ret;
	c->files++;
	strbuf_addstr(c->written, path);
	strbuf_addch(c->written, '\n');
	return 0;
}

/* The node's pictures: its own, then each GPU's. */
static int node_flush(struct sp_ctx *c)
{
	const struct sp_node *n = c->node;
	double *t_s = malloc(2 * SP_POINTS * sizeof(*t_s));
	double *v = malloc(2 * SP_POINTS * sizeof(*v));
	size_t *entry = malloc(SP_POINTS * sizeof(*entry));
	size_t nentries;
	int ret = 0;

	if (!t_s || !v || !entry) {
		ret = log_err(-ENOMEM, "cannot plot the session");
		goto out_free;
	}
	nentries = layout(n, t_s, entry);
	ret = write_device(c, n, NULL, t_s, entry, nentries, v);
	for (int g = 0; !ret && g < n->ngpus; g++)
		ret = write_device(c, n, n->gpu[g], t_s, entry, nentries, v);
out_free:
	free(t_s);
	free(v);
	free(entry);
	return ret;
}

static int on_frame(const struct session_frame *f, void *arg)
{
	struct sp_ctx *c = arg;
	int ret;

	if (!c->has_node || strcmp(c->node->hostname, f->hostname) != 0) {
		if (c->has_node) {
			ret = node_flush(c);
			if (ret)
				return ret;
		}
		node_reset(c->node, f->hostname);
		c->has_node = true;
	}
	return node_add(c->node, f, c->origin_ms);
}

/* A session without a frame: one picture at path, saying so. */
static int write_empty(struct sp_ctx *c)
{
	char title[300];
	struct plot_titles t = {title, "", "", "elapsed time since the session started",
				"no frames: no node was sampled in the session's window"};
	struct chart_set *cs;
	int ret;

	ret =
	    chart_set_new(c->origin_ms, (double)(c->end_ms - c->origin_ms) / 1000.0, NULL, 0, &cs);
	if (ret)
		return log_err(ret, "cannot plot '%s'", c->path);
	snprintf(title, sizeof(title), "session %s", c->s->name);
	ret = plot_chart_write(c->path, cs, &t);
	chart_set_free(cs);
	if (!ret) {
		c->files++;
		strbuf_addstr(c->written, c->path);
		strbuf_addch(c->written, '\n');
	}
	return ret;
}

int session_export_plots(struct store *st, const struct session_record *s, const char *path,
			 struct strbuf *written)
{
	struct sp_ctx c = {.s = s, .path = path, .written = written};
	int ret;

	if (!plot_format_known(path))
		return log_err(-EINVAL, "cannot plot to '%s': use .png, .pdf or .svg", path);
	c.origin_ms = s->start_ms;
	c.end_ms = s->end_ms ? s->end_ms : time_now_ms();
	c.node = calloc(1, sizeof(*c.node));
	if (!c.node)
		return log_err(-ENOMEM, "cannot plot the session");
	ret = store_for_each_frame(st, s, c.end_ms, on_frame, &c);
	if (!ret && c.has_node)
		ret = node_flush(&c);
	if (!ret && !c.files)
		ret = write_empty(&c);
	if (c.has_node)
		node_reset(c.node, "");
	free(c.node);
	return ret;
}

/*
 * The overview (session_export_plot): one picture of the whole session,
 * every GPU of every node a line in each panel, labelled "host:index".
 * Nodes tick at their own times, and a chart set has one time axis, so
 * the session's window is cut into OV_BINS bins; a series' value in a bin
 * is the mean of its frames there.  Between two bins sits a joint: the
 * midpoint of its neighbours when the series ran on, NAN (the line breaks)
 * when it had a gap there (the export's rule, node_add) or no value on one
 * side; empty bins inside a stretch without a gap take the line through
 * them, as a line drawn from frame to frame would.
 */
#define OV_BINS	      400
#define OV_MAX_SERIES 256

enum ov_metric { OV_UTIL, OV_MEM, OV_PCIE, OV_NVLINK, OV_CPU, OV_HOST_MEM, OV__COUNT };

struct ov_series {
	char label[48]; /* "host:index", or the host for a node */
	bool gpu;	/* a GPU's, else a node's */
	int64_t frames, last_ms, min_gap_ms;
	int last_bin;		  /* of the last frame; -1: none yet */
	bool gap_before[OV_BINS]; /* a gap ended at a frame of this bin */
	struct sp_mean v[OV_BINS][OV__COUNT];
};

struct ov_ctx {
	int64_t origin_ms, end_ms;
	double bin_ms;
	size_t nseries, left_out;
	struct ov_series *series[OV_MAX_SERIES];
	int64_t frames;
	bool any_gpu;
};

static struct ov_series *ov_series_of(struct ov_ctx *c, const char *host, int index, bool gpu)
{
	char label[sizeof(((struct ov_series *)0)->label)];
	struct ov_series *s;

	if (gpu)
		snprintf(label, sizeof(label), "%.40s:%d", host, index);
	else
		snprintf(label, sizeof(label), "%s", host);
	for (size_t i = 0; i < c->nseries; i++)
		if (c->series[i]->gpu == gpu && strcmp(c->series[i]->label, label) == 0)
			return c->series[i];
	if (c->nseries == OV_MAX_SERIES)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(s->label, sizeof(s->label), "%s", label);
	s->gpu = gpu;
	s->last_bin = -1;
	c->series[c->nseries++] = s;
	return s;
}

/* A frame of the series at ts_ms: its bin, and whether a gap came before it. */
static int ov_bin(struct ov_ctx *c, struct ov_series *s, int64_t ts_ms)
{
	double b = floor((double)(ts_ms - c->origin_ms) / c->bin_ms);
	int bin = b < 0 ? 0 : b >= OV_BINS ? OV_BINS - 1 : (int)b;

	if (s->frames) {
		int64_t d = ts_ms - s->last_ms;

		if (s->min_gap_ms && d > 3 * s->min_gap_ms && d >= 3000)
			s->gap_before[bin] = true;
		if (d > 0 && (s->min_gap_ms == 0 || d < s->min_gap_ms))
			s->min_gap_ms = d;
	}
	s->frames++;
	s->last_ms = ts_ms;
	s->last_bin = bin;
	return bin;
}

static double sum_or_nan(double a, double b)
{
	return isnan(a) || isnan(b) ? NAN : a + b;
}

static int ov_on_frame(const struct session_frame *f, void *arg)
{
	struct ov_ctx *c = arg;
	struct ov_series *s;
	int bin;

	c->frames++;
	s = ov_series_of(c, f->hostname, 0, false);
	if (!s)
		goto out_full;
	bin = ov_bin(c, s, f->ts_ms);
	mean_add(&s->v[bin][OV_CPU], f->cpu_util_pct);
	mean_add(&s->v[bin][OV_HOST_MEM], f->mem_used_bytes);
	for (int i = 0; i < f->ngpus; i++) {
		const struct session_frame_gpu *g = &f->gpu[i];

		c->any_gpu = true;
		s = ov_series_of(c, f->hostname, g->index, true);
		if (!s)
			goto out_full;
		bin = ov_bin(c, s, f->ts_ms);
		mean_add(&s->v[bin][OV_UTIL], g->util_pct);
		mean_add(&s->v[bin][OV_MEM], g->mem_used_bytes);
		mean_add(&s->v[bin][OV_PCIE], sum_or_nan(g->pcie_rx_bps, g->pcie_tx_bps));
		mean_add(&s->v[bin][OV_NVLINK], sum_or_nan(g->nvlink_rx_bps, g->nvlink_tx_bps));
	}
	return 0;
out_full:
	c->left_out++; /* more series than a picture holds, or no memory: not drawn */
	return 0;
}

/*
 * One series' metric on the set's 2 * OV_BINS - 1 entries (bin b at 2b,
 * the joint after it at 2b + 1).
 */
static void ov_values(const struct ov_series *s, int metric, double *v)
{
	int prev = -1; /* the last bin with a value */

	for (int i = 0; i < 2 * OV_BINS - 1; i++)
		v[i] = NAN;
	for (int b = 0; b < OV_BINS; b++) {
		bool gap = false;

		if (!s->v[b][metric].n)
			continue;
		v[2 * b] = mean_of(&s->v[b][metric]);
		for (int k = prev + 1; prev >= 0 && k <= b; k++)
			gap |= s->gap_before[k];
		if (prev >= 0 && !gap) {
			/* the line from the last value to this one, through the bins between */
			double a = v[2 * prev], z = v[2 * b];

			for (int e = 2 * prev + 1; e < 2 * b; e++)
				v[e] =
				    a + (z - a) * (double)(e - 2 * prev) / (double)(2 * (b - prev));
		}
		prev = b;
	}
}

struct ov_panel {
	enum chart_kind kind;
	int metric;
	const char *id, *title, *quantity, *empty;
};

static const struct ov_panel ov_gpu_panels[] = {
    {CHART_GPU_UTIL, OV_UTIL, "gpu-util", "GPU utilization, % busy", "utilization",
     "no utilization measured"},
    {CHART_GPU_MEMORY, OV_MEM, "gpu-memory", "GPU memory used, bytes (binary units)", "GPU memory",
     "no memory use measured"},
    {CHART_GPU_LINK, OV_PCIE, "gpu-pcie", "PCIe traffic, rx + tx, bytes/s", "PCIe",
     "no PCIe traffic measured (ROCm does not report it)"},
    {CHART_GPU_LINK, OV_NVLINK, "gpu-nvlink", "NVLink traffic, rx + tx, bytes/s", "NVLink",
     "no NVLink traffic measured (no NVLink, or not reported)"},
};

static const struct ov_panel ov_node_panels[] = {
    {CHART_NODE_CPU, OV_CPU, "cpu", "CPU busy, % of the node's CPUs", "CPU", "no CPU use measured"},
    {CHART_MEMORY, OV_HOST_MEM, "memory", "Memory used (total - available), bytes (binary units)",
     "memory", "no memory use measured"},
};

static int ov_write(struct ov_ctx *c, const struct session_record *s, const char *path)
{
	const struct ov_panel *spec = c->any_gpu ? ov_gpu_panels : ov_node_panels;
	size_t nspec = c->any_gpu ? sizeof(ov_gpu_panels) / sizeof(ov_gpu_panels[0])
				  : sizeof(ov_node_panels) / sizeof(ov_node_panels[0]);
	char title[600], tail[128], subtitle[400], t0[40], t1[40], dur[32], bin[32];
	struct plot_titles t = {title, tail, subtitle, "elapsed time since the session started",
				"no frames: no node was sampled in the session's window"};
	double t_s[2 * OV_BINS - 1], *v = NULL;
	struct chart_set *cs = NULL;
	size_t nkind = 0, nentries = c->frames ? 2 * OV_BINS - 1 : 0;
	int ret = 0;

	for (size_t i = 0; i < nentries; i++)
		t_s[i] = ((double)i + 1) * c->bin_ms / 2.0 / 1000.0; /* bin centres, joints */
	v = malloc(sizeof(t_s));
	if (!v)
		return log_err(-ENOMEM, "cannot plot '%s'", path);
	ret = chart_set_new(c->origin_ms, (double)(c->end_ms - c->origin_ms) / 1000.0,
			    nentries ? t_s : NULL, nentries, &cs);
	if (ret)
		goto out_free;
	for (size_t i = 0; c->frames && i < nspec && !ret; i++) {
		struct chart_panel *p = chart_panel_begin(cs, spec[i].kind, spec[i].id,
							  spec[i].title, spec[i].quantity);
		int colour = 0;

		if (!p)
			break;
		p->empty = spec[i].empty;
		for (size_t k = 0; k < c->nseries && !ret; k++) {
			if (c->series[k]->gpu != c->any_gpu)
				continue;
			nkind += i == 0;
			ov_values(c->series[k], spec[i].metric, v);
			/* a series' colour is the same in every panel: its place among the lines */
			ret = chart_panel_add(cs, p, c->series[k]->label, colour++, false, v);
		}
		chart_panel_end(cs, p, false); /* nothing measured: left out */
	}
	if (ret)
		goto out_free;
	snprintf(title, sizeof(title), "session %s%s", s->name,
		 !c->frames   ? ""
		 : c->any_gpu ? "  \xc2\xb7  every GPU"
			      : "  \xc2\xb7  no GPU in this session: the nodes' CPU and memory");
	format_duration_ms(c->end_ms - c->origin_ms, dur, sizeof(dur));
	snprintf(tail, sizeof(tail), "  \xc2\xb7  %s%s", dur, s->end_ms ? "" : " (still active)");
	format_rfc3339_ms(c->origin_ms, t0, sizeof(t0));
	format_rfc3339_ms(c->end_ms, t1, sizeof(t1));
	/* the bin: "12 ms" or "1.5 s" (a short session's bins are below a tenth of a second) */
	snprintf(bin, sizeof(bin), c->bin_ms < 1000 ? "%.0f ms" : "%.1f s",
		 c->bin_ms < 1000 ? (double)c->bin_ms : c->bin_ms / 1000.0);
	snprintf(
	    subtitle, sizeof(subtitle),
	    "%s to %s  \xc2\xb7  %" PRId64 " frames  \xc2\xb7  one line per %s, means over %s"
	    "%s",
	    t0, t1, c->frames, c->any_gpu ? "GPU (node:index)" : "node", bin,
	    nkind > CHART_MAX_SERIES || c->left_out ? "  \xc2\xb7  some not drawn (too many)" : "");
	ret = plot_chart_write(path, cs, &t);
out_free:
	chart_set_free(cs);
	free(v);
	return ret;
}

int session_export_plot(struct store *st, const struct session_record *s, const char *path)
{
	struct ov_ctx *c;
	int ret;

	if (!plot_format_known(path))
		return log_err(-EINVAL, "cannot plot to '%s': use .png, .pdf or .svg", path);
	c = calloc(1, sizeof(*c));
	if (!c)
		return log_err(-ENOMEM, "cannot plot the session");
	c->origin_ms = s->start_ms;
	c->end_ms = s->end_ms ? s->end_ms : time_now_ms();
	if (c->end_ms < c->origin_ms + 1)
		c->end_ms = c->origin_ms + 1;
	c->bin_ms = (double)(c->end_ms - c->origin_ms) / OV_BINS;
	ret = store_for_each_frame(st, s, c->end_ms, ov_on_frame, c);
	if (!ret)
		ret = ov_write(c, s, path);
	for (size_t i = 0; i < c->nseries; i++)
		free(c->series[i]);
	free(c);
	return ret;
}
