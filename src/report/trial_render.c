/*
 * trial_render.c - `jobscope trial`'s results: the derived figures
 * (trial_analyse), the text table, the JSON document and the plot of
 * throughput and efficiency against resources.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/fmt.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "report/cairo_dl.h"
#include "report/trial.h"

const char *trial_source_name(enum trial_source s)
{
	switch (s) {
	case TRIAL_SOURCE_METRIC:
		return "metric";
	case TRIAL_SOURCE_CPU:
		return "cpu";
	case TRIAL_SOURCE_GPU:
		return "gpu";
	case TRIAL_SOURCE_NONE:
		break;
	}
	return NULL;
}

/* The dimensions other than the fitted one, as a group's label. */
static void other_dims(const struct trial *t, const struct trial_placement *p, char *buf,
		       size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	if (p->cpus > 0 && (!t->resource || strcmp(t->resource, "cpus") != 0))
		len +=
		    (size_t)snprintf(buf + len, size - len, "%scpus=%d", len ? " " : "", p->cpus);
	if (len < size && p->gpus >= 0 && (!t->resource || strcmp(t->resource, "gpus") != 0))
		len +=
		    (size_t)snprintf(buf + len, size - len, "%sgpus=%d", len ? " " : "", p->gpus);
	if (len < size && p->mem_bytes) {
		char b[32];

		snprintf(buf + len, size - len, "%smem=%s", len ? " " : "",
			 fmt_bytes(b, sizeof(b), p->mem_bytes));
	}
}

void trial_analyse(struct trial *t)
{
	struct scaling_point pts[TRIAL_MAX_PLACEMENTS];

	t->ngroups = 0;
	for (size_t i = 0; i < t->nplace; i++) {
		struct trial_placement *p = &t->place[i];
		char label[64];
		size_t g;

		p->throughput = p->runs > 0 ? 0 : NAN;
		for (int r = 0; r < p->runs; r++)
			p->throughput += p->throughput_run[r] / p->runs;
		p->n = !t->resource ? NAN : strcmp(t->resource, "gpus") == 0 ? p->gpus : p->cpus;
		other_dims(t, p, label, sizeof(label));
		for (g = 0; g < t->ngroups; g++)
			if (strcmp(t->group[g].label, label) == 0)
				break;
		if (g == t->ngroups) {
			memset(&t->group[g], 0, sizeof(t->group[g]));
			snprintf(t->group[g].label, sizeof(t->group[g].label), "%s", label);
			t->ngroups++;
		}
		p->group = (int)g;
	}
	for (size_t g = 0; g < t->ngroups; g++) {
		struct trial_group *grp = &t->group[g];
		size_t n = 0;
		double t0 = NAN, n0 = NAN;

		grp->nmax = 0;
		grp->contended_runs = 0;
		for (size_t i = 0; i < t->nplace; i++) {
			const struct trial_placement *p = &t->place[i];

			if (p->group != (int)g)
				continue;
			/* each repeat is a point: the fit weighs the spread; a run measured
			 * under contention measured the machine, not the program: left out */
			for (int r = 0; r < p->runs && n < TRIAL_MAX_PLACEMENTS; r++) {
				if (p->contended[r])
					grp->contended_runs++;
				else
					pts[n++] =
					    (struct scaling_point){p->n, p->throughput_run[r]};
			}
			if (p->n > grp->nmax)
				grp->nmax = p->n;
		}
		scaling_fit(pts, n, &grp->fit);
		/* speedups from the fit's baseline; without one (every run left out), from the
		 * smallest placement measured */
		for (size_t i = 0; i < t->nplace; i++) {
			const struct trial_placement *p = &t->place[i];

			if (p->group != (int)g)
				continue;
			if (isnan(grp->fit.n0) ? isfinite(p->throughput) && (isnan(n0) || p->n < n0)
					       : p->n == grp->fit.n0) {
				t0 = p->throughput;
				n0 = p->n;
			}
		}
		for (size_t i = 0; i < t->nplace; i++) {
			struct trial_placement *p = &t->place[i];

			if (p->group != (int)g)
				continue;
			p->speedup = t0 > 0 ? p->throughput / t0 : NAN;
			p->efficiency = scaling_efficiency(p->speedup, n0, p->n);
		}
		grp->recommend =
		    scaling_recommend(&grp->fit, t->min_eff, grp->nmax * SCALING_RECOMMEND_FACTOR,
				      &grp->recommend_capped);
		for (int k = 0; k < 2; k++) {
			bool fitted = grp->fit.verdict != SCALING_NO_FIT;

			grp->pred_n[k] = grp->nmax * (k == 0 ? 2 : 4);
			grp->pred_speedup[k] =
			    fitted ? scaling_amdahl_speedup(grp->fit.p, grp->fit.n0, grp->pred_n[k])
				   : NAN;
			grp->pred_eff[k] =
			    scaling_efficiency(grp->pred_speedup[k], grp->fit.n0, grp->pred_n[k]);
		}
	}
}

static const char *unit_of(const struct trial *t)
{
	for (size_t i = 0; i < t->nplace; i++)
		switch (t->place[i].source) {
		case TRIAL_SOURCE_METRIC:
			return "metric per second";
		case TRIAL_SOURCE_CPU:
			return "CPU-seconds per second";
		case TRIAL_SOURCE_GPU:
			return "GPUs busy (mean SM utilization x GPUs)";
		case TRIAL_SOURCE_NONE:
			break;
		}
	return "nothing measured";
}

static void text_num(struct strbuf *out, int width, double v, int decimals)
{
	if (isfinite(v))
		strbuf_addf(out, " %*.*f", width, decimals, v);
	else
		strbuf_addf(out, " %*s", width, "-");
}

static const char *verdict_text(enum scaling_verdict v)
{
	switch (v) {
	case SCALING_NO_FIT:
		return "no fit: fewer than two resource counts with a throughput";
	case SCALING_FITS:
		return "fits";
	case SCALING_POOR_FIT:
		return "does not fit: the error exceeds 15%";
	case SCALING_FALLS:
		return "does not fit: throughput falls with more resources (memory bandwidth "
		       "or contention, not a serial fraction)";
	}
	return "?";
}

/* "1 CPU", "4 CPUs", "2 GPUs" */
static const char *res_noun(const struct trial *t, double n)
{
	bool gpus = t->resource && strcmp(t->resource, "gpus") == 0;

	if (n == 1)
		return gpus ? "GPU" : "CPU";
	return gpus ? "GPUs" : "CPUs";
}

static bool placement_contended(const struct trial_placement *p)
{
	for (int r = 0; r < p->runs; r++)
		if (p->contended[r])
			return true;
	return false;
}

static void text_group(const struct trial *t, const struct trial_group *g, struct strbuf *out)
{

	strbuf_addf(out, "\nAmdahl's law%s%s: ", g->label[0] ? " at " : "", g->label);
	if (g->fit.verdict == SCALING_NO_FIT)
		strbuf_addf(out, "%s\n", verdict_text(g->fit.verdict));
	else
		strbuf_addf(out, "p = %.3f (parallel fraction), RMS relative error %.1f%%: %s\n",
			    g->fit.p, 100 * g->fit.rms_rel_err, verdict_text(g->fit.verdict));
	if (g->contended_runs)
		strbuf_addf(out,
			    "  %d run%s measured beside other work that held the node's CPUs: left "
			    "out of the fit, its throughput is the machine's, not the program's "
			    "(run the trial again with the CPUs to itself)\n",
			    g->contended_runs, g->contended_runs == 1 ? " was" : "s were");
	if (g->fit.verdict == SCALING_NO_FIT)
		return;
	for (int k = 0; k < 2; k++)
		strbuf_addf(
		    out, "  predicted at %g %s: speedup %.2fx, efficiency %.2f%s\n", g->pred_n[k],
		    res_noun(t, g->pred_n[k]), g->pred_speedup[k], g->pred_eff[k],
		    g->fit.verdict == SCALING_FITS ? "" : " (the law does not fit: unreliable)");
	if (isfinite(g->recommend))
		strbuf_addf(out,
			    "  recommendation: %g %s (the largest count whose last step still adds "
			    ">= %.2f of %g %s's throughput%s)\n",
			    g->recommend, res_noun(t, g->recommend), t->min_eff, g->fit.n0,
			    res_noun(t, g->fit.n0),
			    g->recommend_capped ? "; capped at 16x the largest tried" : "");
	else
		strbuf_addf(out, "  recommendation: none (no fit)\n");
}

int trial_text(const struct trial *t, struct strbuf *out)
{
	bool any_mem_note = false;
	char b[32];

	strbuf_addf(out, "jobscope trial: %s, %.3g s per run, %d run%s per placement\n", t->argv[0],
		    t->duration_ms / 1000.0, t->repeat, t->repeat == 1 ? "" : "s");
	strbuf_addf(out, "throughput: %s%s%s\n\n", t->metric ? t->metric : "",
		    t->metric ? ", " : "", unit_of(t));
	strbuf_addf(out, "%6s %6s %10s %12s %8s %10s %6s\n", "cpus", "gpus", "mem", "throughput",
		    "speedup", "efficiency", "exit");
	for (size_t i = 0; i < t->nplace; i++) {
		const struct trial_placement *p = &t->place[i];

		if (p->cpus > 0)
			strbuf_addf(out, "%6d", p->cpus);
		else
			strbuf_addf(out, "%6s", "all");
		if (p->gpus >= 0)
			strbuf_addf(out, " %6d", p->gpus);
		else
			strbuf_addf(out, " %6s", "-");
		if (p->mem_bytes)
			strbuf_addf(out, " %9s%s", fmt_bytes(b, sizeof(b), p->mem_bytes),
				    p->mem_applied ? " " : "!");
		else
			strbuf_addf(out, " %10s", "-");
		text_num(out, 12, p->throughput, 4);
		text_num(out, 8, p->speedup, 2);
		text_num(out, 10, p->efficiency, 2);
		if (p->runs && p->stopped[p->runs - 1])
			strbuf_addf(out, " %6s",
				    "stop"); /* the trial's --duration, not the program */
		else
			strbuf_addf(out, " %6d", p->runs ? p->exit_status[p->runs - 1] : -1);
		strbuf_addf(out, "%s\n", placement_contended(p) ? "  contended" : "");
		if (p->mem_bytes && !p->mem_applied)
			any_mem_note = true;
	}
	if (any_mem_note)
		for (size_t i = 0; i < t->nplace; i++)
			if (t->place[i].mem_bytes && !t->place[i].mem_applied) {
				strbuf_addf(out, "! memory limit NOT applied: %s\n",
					    t->place[i].mem_note);
				break;
			}
	if (!t->resource)
		strbuf_addf(out, "\nNo fit: neither cpus nor gpus was varied.\n");
	else
		for (size_t g = 0; g < t->ngroups; g++)
			text_group(t, &t->group[g], out);
	if (t->store_dir)
		strbuf_addf(out, "\nstores kept in %s\n", t->store_dir);
	return strbuf_error(out);
}

int trial_json(const struct trial *t, struct strbuf *out)
{
	struct jsonw w;

	jsonw_init(&w, out, true);
	jsonw_obj_begin(&w);
	jsonw_key(&w, "command");
	jsonw_arr_begin(&w);
	for (size_t i = 0; t->argv[i]; i++)
		jsonw_str(&w, t->argv[i]);
	jsonw_arr_end(&w);
	jsonw_kv_int(&w, "duration_ms", t->duration_ms);
	jsonw_kv_int(&w, "repeat", t->repeat);
	jsonw_kv_str_opt(&w, "metric", t->metric);
	jsonw_kv_str_opt(&w, "resource", t->resource);
	jsonw_kv_double(&w, "min_efficiency", t->min_eff, 3);
	jsonw_kv_double(&w, "max_rms_rel_err", SCALING_MAX_RMS_REL_ERR, 3);
	jsonw_key(&w, "placements");
	jsonw_arr_begin(&w);
	for (size_t i = 0; i < t->nplace; i++) {
		const struct trial_placement *p = &t->place[i];

		jsonw_obj_begin(&w);
		jsonw_kv_int_opt(&w, "cpus", p->cpus > 0, p->cpus);
		jsonw_kv_int_opt(&w, "gpus", p->gpus >= 0, p->gpus);
		jsonw_kv_int_opt(&w, "mem_bytes", p->mem_bytes > 0, (int64_t)p->mem_bytes);
		if (p->mem_bytes) {
			jsonw_kv_bool(&w, "mem_limit_applied", p->mem_applied);
			jsonw_kv_str_opt(&w, "mem_limit_note", p->mem_applied ? NULL : p->mem_note);
		} else {
			jsonw_kv_null(&w, "mem_limit_applied");
			jsonw_kv_null(&w, "mem_limit_note");
		}
		jsonw_kv_str_opt(&w, "source", trial_source_name(p->source));
		jsonw_kv_double(&w, "throughput", p->throughput, 6);
		jsonw_key(&w, "runs");
		jsonw_arr_begin(&w);
		for (int r = 0; r < p->runs; r++) {
			jsonw_obj_begin(&w);
			jsonw_kv_double(&w, "throughput", p->throughput_run[r], 6);
			jsonw_kv_double(&w, "wall_s", p->wall_s[r], 3);
			jsonw_kv_int(&w, "exit_status", p->exit_status[r]);
			jsonw_kv_bool(&w, "cpu_contended", p->contended[r]);
			jsonw_kv_bool(&w, "stopped_at_duration", p->stopped[r]);
			jsonw_obj_end(&w);
		}
		jsonw_arr_end(&w);
		jsonw_kv_double(&w, "n", p->n, 0);
		jsonw_kv_double(&w, "speedup", p->speedup, 4);
		jsonw_kv_double(&w, "efficiency", p->efficiency, 4);
		jsonw_kv_int(&w, "group", p->group);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_key(&w, "fits");
	jsonw_arr_begin(&w);
	for (size_t g = 0; t->resource && g < t->ngroups; g++) {
		const struct trial_group *grp = &t->group[g];

		jsonw_obj_begin(&w);
		jsonw_kv_str(&w, "group", grp->label);
		jsonw_kv_double(&w, "n0", grp->fit.n0, 0);
		jsonw_kv_int(&w, "points", (int64_t)grp->fit.npoints);
		jsonw_kv_str(&w, "verdict", scaling_verdict_name(grp->fit.verdict));
		jsonw_kv_bool(&w, "fits", grp->fit.verdict == SCALING_FITS);
		jsonw_kv_int(&w, "contended_runs", grp->contended_runs);
		jsonw_kv_str(&w, "note", verdict_text(grp->fit.verdict));
		jsonw_kv_double(&w, "p", grp->fit.p, 4);
		jsonw_kv_double(&w, "rms_rel_err", grp->fit.rms_rel_err, 4);
		jsonw_kv_double(&w, "recommended", grp->recommend, 0);
		jsonw_kv_bool(&w, "recommended_capped", grp->recommend_capped);
		jsonw_key(&w, "predicted");
		jsonw_arr_begin(&w);
		for (int k = 0; k < 2; k++) {
			jsonw_obj_begin(&w);
			jsonw_kv_double(&w, "n", grp->pred_n[k], 0);
			jsonw_kv_double(&w, "speedup", grp->pred_speedup[k], 4);
			jsonw_kv_double(&w, "efficiency", grp->pred_eff[k], 4);
			jsonw_obj_end(&w);
		}
		jsonw_arr_end(&w);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_kv_str_opt(&w, "stores", t->store_dir);
	jsonw_obj_end(&w);
	strbuf_addch(out, '\n');
	return jsonw_error(&w) ? jsonw_error(&w) : strbuf_error(out);
}

/* ---- the plot: throughput (left) and efficiency (right) against n ---- */

#define PLOT_W	  960
#define PLOT_H	  420
#define PANEL_PAD 60

static const double palette[][3] = {
    {0.12, 0.47, 0.71}, {0.85, 0.37, 0.01}, {0.17, 0.63, 0.17},
    {0.84, 0.15, 0.16}, {0.58, 0.40, 0.74}, {0.55, 0.34, 0.29},
};

struct panel_area {
	double x, y, w, h; /* the plotting area */
	double xmax, ymax;
};

static double px(const struct panel_area *a, double n)
{
	return a->x + a->w * n / a->xmax;
}

static double py(const struct panel_area *a, double v)
{
	return a->y + a->h - a->h * v / a->ymax;
}

static void draw_text(cairo_t *cr, double x, double y, const char *s, bool centre)
{
	cairo_text_extents_t ext;

	cairo_fn.text_extents(cr, s, &ext);
	cairo_fn.move_to(cr, centre ? x - ext.width / 2 : x, y);
	cairo_fn.show_text(cr, s);
}

static void draw_axes(cairo_t *cr, const struct panel_area *a, const char *title,
		      const char *xlabel)
{
	char b[32];

	cairo_fn.set_source_rgb(cr, 0, 0, 0);
	cairo_fn.set_line_width(cr, 1);
	cairo_fn.move_to(cr, a->x, a->y);
	cairo_fn.line_to(cr, a->x, a->y + a->h);
	cairo_fn.line_to(cr, a->x + a->w, a->y + a->h);
	cairo_fn.stroke(cr);
	cairo_fn.set_font_size(cr, 13);
	draw_text(cr, a->x + a->w / 2, a->y - 14, title, true);
	cairo_fn.set_font_size(cr, 11);
	draw_text(cr, a->x + a->w / 2, a->y + a->h + 34, xlabel, true);
	for (int i = 0; i <= 4; i++) {
		double v = a->ymax * i / 4, n = a->xmax * i / 4;

		snprintf(b, sizeof(b), "%.3g", v);
		draw_text(cr, a->x - 44, py(a, v) + 4, b, false);
		snprintf(b, sizeof(b), "%.3g", n);
		draw_text(cr, px(a, n), a->y + a->h + 16, b, true);
	}
}

static void draw_curve(cairo_t *cr, const struct panel_area *a, const struct trial_group *g,
		       double t0, bool efficiency)
{
	bool first = true;

	if (g->fit.verdict == SCALING_NO_FIT)
		return;
	for (int i = 0; i <= 200; i++) {
		double n = g->fit.n0 + (a->xmax - g->fit.n0) * i / 200.0;
		double s = scaling_amdahl_speedup(g->fit.p, g->fit.n0, n);
		double v = efficiency ? scaling_efficiency(s, g->fit.n0, n) : s * t0;

		if (!isfinite(v))
			continue;
		if (first)
			cairo_fn.move_to(cr, px(a, n), py(a, fmin(v, a->ymax)));
		else
			cairo_fn.line_to(cr, px(a, n), py(a, fmin(v, a->ymax)));
		first = false;
	}
	cairo_fn.stroke(cr);
}

static void draw_trial(cairo_t *cr, const struct trial *t)
{
	struct panel_area thr = {PANEL_PAD, 50, PLOT_W / 2.0 - 1.5 * PANEL_PAD, PLOT_H - 110, 0, 0};
	struct panel_area eff = thr;
	const char *res = t->resource ? t->resource : "resources";
	char xlabel[64];
	static const double dash[] = {5, 4};

	eff.x = PLOT_W / 2.0 + PANEL_PAD / 2.0;
	eff.ymax = 1.25;
	for (size_t i = 0; i < t->nplace; i++) {
		const struct trial_placement *p = &t->place[i];

		if (p->n > thr.xmax)
			thr.xmax = p->n;
		for (int r = 0; r < p->runs; r++)
			if (isfinite(p->throughput_run[r]) && p->throughput_run[r] > thr.ymax)
				thr.ymax = p->throughput_run[r];
		if (isfinite(p->efficiency) && p->efficiency > eff.ymax)
			eff.ymax = p->efficiency;
	}
	thr.xmax = thr.xmax > 0 ? thr.xmax * 2 : 1; /* room for the prediction at 2x */
	eff.xmax = thr.xmax;
	thr.ymax = thr.ymax > 0 ? thr.ymax * 2.2 : 1;
	cairo_fn.set_source_rgb(cr, 1, 1, 1);
	cairo_fn.paint(cr);
	cairo_fn.select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
				  CAIRO_FONT_WEIGHT_NORMAL);
	snprintf(xlabel, sizeof(xlabel), "%s (points: measured, lines: Amdahl fit)", res);
	draw_axes(cr, &thr, unit_of(t), xlabel);
	draw_axes(cr, &eff, "efficiency", xlabel);
	/* the efficiency threshold */
	cairo_fn.set_source_rgb(cr, 0.5, 0.5, 0.5);
	cairo_fn.set_dash(cr, dash, 2, 0);
	cairo_fn.move_to(cr, eff.x, py(&eff, t->min_eff));
	cairo_fn.line_to(cr, eff.x + eff.w, py(&eff, t->min_eff));
	cairo_fn.stroke(cr);
	cairo_fn.set_dash(cr, NULL, 0, 0);
	for (size_t g = 0; g < t->ngroups; g++) {
		const double *c = palette[g % (sizeof(palette) / sizeof(palette[0]))];
		double t0 = NAN;

		cairo_fn.set_source_rgb(cr, c[0], c[1], c[2]);
		cairo_fn.set_line_width(cr, 2);
		for (size_t i = 0; i < t->nplace; i++) {
			const struct trial_placement *p = &t->place[i];

			if (p->group != (int)g || !isfinite(p->n))
				continue;
			if (p->n == t->group[g].fit.n0)
				t0 = p->throughput;
			for (int r = 0; r < p->runs; r++)
				if (isfinite(p->throughput_run[r])) {
					cairo_fn.new_sub_path(cr);
					cairo_fn.arc(cr, px(&thr, p->n),
						     py(&thr, p->throughput_run[r]), 4, 0,
						     2 * M_PI);
					cairo_fn.fill(cr);
				}
			if (isfinite(p->efficiency)) {
				cairo_fn.new_sub_path(cr);
				cairo_fn.arc(cr, px(&eff, p->n), py(&eff, p->efficiency), 4, 0,
					     2 * M_PI);
				cairo_fn.fill(cr);
			}
		}
		if (t->resource && isfinite(t0)) {
			draw_curve(cr, &thr, &t->group[g], t0, false);
			draw_curve(cr, &eff, &t->group[g], t0, true);
		}
		if (t->group[g].label[0]) {
			cairo_fn.set_font_size(cr, 11);
			draw_text(cr, thr.x + 8, thr.y + 14 + 14.0 * (double)g, t->group[g].label,
				  false);
		}
	}
}

static void draw_trial_cb(cairo_t *cr, const void *arg)
{
	draw_trial(cr, arg);
}

int trial_plot(const struct trial *t, const char *path)
{
	return plot_draw_write(path, PLOT_W, PLOT_H, draw_trial_cb, t);
}
