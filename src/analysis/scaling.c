/*
 * scaling.c - speedup, efficiency, Amdahl's law fitted by least squares
 * on the relative error, and the recommendation drawn from it.
 */
#include <math.h>

#include "analysis/scaling.h"

#define FIT_GRID 200 /* grid steps over [0, 1] before the golden-section search */

double scaling_amdahl_speedup(double p, double n0, double n)
{
	if (!(n > 0) || !(n0 > 0) || !isfinite(p))
		return NAN;
	return 1.0 / ((1.0 - p) + p * n0 / n);
}

double scaling_efficiency(double speedup, double n0, double n)
{
	if (!(n > 0) || !(n0 > 0))
		return NAN;
	return speedup / (n / n0);
}

static bool usable(const struct scaling_point *p)
{
	return p->n > 0 && isfinite(p->n) && p->throughput > 0 && isfinite(p->throughput);
}

/* Sum of squared relative errors of the predicted speedups at p. */
static double sq_rel_err(const struct scaling_point *pts, size_t n, double n0, double t0, double p)
{
	double sum = 0;

	for (size_t i = 0; i < n; i++) {
		double s, pred;

		if (!usable(&pts[i]))
			continue;
		s = pts[i].throughput / t0;
		pred = scaling_amdahl_speedup(p, n0, pts[i].n);
		sum += ((pred - s) / s) * ((pred - s) / s);
	}
	return sum;
}

/*
 * Throughput at each n as the mean of its points (repeats), then whether
 * any larger n has less than (1 - tolerance) of a smaller one's.
 */
static bool falls(const struct scaling_point *pts, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double ti = 0, tj;
		int ni = 0;

		if (!usable(&pts[i]))
			continue;
		for (size_t k = 0; k < n; k++)
			if (usable(&pts[k]) && pts[k].n == pts[i].n) {
				ti += pts[k].throughput;
				ni++;
			}
		ti /= ni;
		for (size_t j = 0; j < n; j++) {
			int nj = 0;

			if (!usable(&pts[j]) || !(pts[j].n > pts[i].n))
				continue;
			tj = 0;
			for (size_t k = 0; k < n; k++)
				if (usable(&pts[k]) && pts[k].n == pts[j].n) {
					tj += pts[k].throughput;
					nj++;
				}
			tj /= nj;
			if (tj < ti * (1.0 - SCALING_FALL_TOLERANCE))
				return true;
		}
	}
	return false;
}

void scaling_fit(const struct scaling_point *pts, size_t n, struct scaling_fit *out)
{
	double n0 = INFINITY, nmax = 0, t0 = 0, best_p = 0, best = INFINITY, lo, hi;
	size_t used = 0;
	int n0_count = 0;
	const double phi = (sqrt(5.0) - 1) / 2;

	*out = (struct scaling_fit){
	    .verdict = SCALING_NO_FIT, .n0 = NAN, .p = NAN, .rms_rel_err = NAN};
	for (size_t i = 0; i < n; i++) {
		if (!usable(&pts[i]))
			continue;
		used++;
		if (pts[i].n < n0)
			n0 = pts[i].n;
		if (pts[i].n > nmax)
			nmax = pts[i].n;
	}
	out->npoints = used;
	if (used == 0)
		return;
	out->n0 = n0;
	if (!(nmax > n0))
		return;
	/* the baseline: the mean of the repeats at n0 */
	for (size_t i = 0; i < n; i++)
		if (usable(&pts[i]) && pts[i].n == n0) {
			t0 += pts[i].throughput;
			n0_count++;
		}
	t0 /= n0_count;

	for (int g = 0; g <= FIT_GRID; g++) {
		double p = (double)g / FIT_GRID, e = sq_rel_err(pts, n, n0, t0, p);

		if (e < best) {
			best = e;
			best_p = p;
		}
	}
	lo = fmax(0.0, best_p - 1.0 / FIT_GRID);
	hi = fmin(1.0, best_p + 1.0 / FIT_GRID);
	for (int it = 0; it < 60; it++) {
		double a = hi - phi * (hi - lo), b = lo + phi * (hi - lo);

		if (sq_rel_err(pts, n, n0, t0, a) < sq_rel_err(pts, n, n0, t0, b))
			hi = b;
		else
			lo = a;
	}
	if (sq_rel_err(pts, n, n0, t0, (lo + hi) / 2) < best)
		best_p = (lo + hi) / 2;
	out->p = best_p;
	out->rms_rel_err = sqrt(sq_rel_err(pts, n, n0, t0, best_p) / (double)used);
	if (falls(pts, n))
		out->verdict = SCALING_FALLS;
	else if (out->rms_rel_err > SCALING_MAX_RMS_REL_ERR)
		out->verdict = SCALING_POOR_FIT;
	else
		out->verdict = SCALING_FITS;
}

double scaling_recommend(const struct scaling_fit *f, double min_eff, double max_n, bool *capped)
{
	double prev = 1.0;

	*capped = false;
	if (f->verdict != SCALING_FITS || !(f->n0 > 0) || !(max_n >= f->n0) || !isfinite(max_n))
		return NAN;
	for (double k = 2;; k++) {
		double s = scaling_amdahl_speedup(f->p, f->n0, f->n0 * k);

		if (f->n0 * k > max_n) {
			*capped = true;
			return f->n0 * (k - 1);
		}
		if (s - prev < min_eff)
			return f->n0 * (k - 1);
		prev = s;
	}
}

const char *scaling_verdict_name(enum scaling_verdict v)
{
	switch (v) {
	case SCALING_NO_FIT:
		return "no-fit";
	case SCALING_FITS:
		return "fits";
	case SCALING_POOR_FIT:
		return "does-not-fit";
	case SCALING_FALLS:
		return "falls";
	}
	return "?";
}
