/*
 * series.c - period by autocorrelation (through an FFT), trend by a
 * robust line (Theil-Sen) and Holt's double exponential smoothing.
 */
#include "analysis/series.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#define SERIES_MAX	  (1u << 22) /* samples: 48 days at 1 s */
#define PERIOD_MIN_CORR	  0.3
#define THEIL_SEN_MAX_PTS 2000 /* longer series are thinned for the median of slopes */

/* In-place iterative radix-2 FFT of (re, im), n a power of two. */
static void fft(double *re, double *im, size_t n, bool inverse)
{
	for (size_t i = 1, j = 0; i < n; i++) {
		size_t bit = n >> 1;

		for (; j & bit; bit >>= 1)
			j ^= bit;
		j ^= bit;
		if (i < j) {
			double t = re[i];

			re[i] = re[j];
			re[j] = t;
			t = im[i];
			im[i] = im[j];
			im[j] = t;
		}
	}
	for (size_t len = 2; len <= n; len <<= 1) {
		double ang = 2 * M_PI / (double)len * (inverse ? 1 : -1);
		double wr = cos(ang), wi = sin(ang);

		for (size_t i = 0; i < n; i += len) {
			double cr = 1, ci = 0;

			for (size_t k = 0; k < len / 2; k++) {
				size_t a = i + k, b = i + k + len / 2;
				double xr = re[b] * cr - im[b] * ci, xi = re[b] * ci + im[b] * cr;
				double t;

				re[b] = re[a] - xr;
				im[b] = im[a] - xi;
				re[a] += xr;
				im[a] += xi;
				t = cr * wr - ci * wi;
				ci = cr * wi + ci * wr;
				cr = t;
			}
		}
	}
}

/* Missing values filled by linear interpolation; -ENODATA if all are missing. */
static int fill(const double *x, size_t n, double *out)
{
	size_t first = 0, prev;

	while (first < n && isnan(x[first]))
		first++;
	if (first == n)
		return -ENODATA;
	for (size_t i = 0; i <= first; i++)
		out[i] = x[first];
	prev = first;
	for (size_t i = first + 1; i < n; i++) {
		if (isnan(x[i]))
			continue;
		for (size_t k = prev + 1; k <= i; k++)
			out[k] = x[prev] + (x[i] - x[prev]) * (double)(k - prev) / (double)(i - prev);
		prev = i;
	}
	for (size_t i = prev + 1; i < n; i++)
		out[i] = x[prev];
	return 0;
}

int series_period(const double *x, size_t n, double dt, struct period_result *out)
{
	size_t m = 1, maxlag = n / 3, lag, peak = 0;
	double *re, *im, mean = 0, var, best = 0;
	bool dipped = false;
	int ret = 0;

	if (!x || n < 12 || n > SERIES_MAX || !(dt > 0))
		return n < 12 ? -ENODATA : -EINVAL;
	while (m < 2 * n)
		m <<= 1;
	re = calloc(m, sizeof(*re));
	im = calloc(m, sizeof(*im));
	if (!re || !im) {
		free(re);
		free(im);
		return -ENOMEM;
	}
	ret = fill(x, n, re);
	if (ret)
		goto out_free;
	for (size_t i = 0; i < n; i++)
		mean += re[i];
	mean /= (double)n;
	for (size_t i = 0; i < n; i++)
		re[i] -= mean;
	/* autocorrelation = IFFT(|FFT(x)|^2), zero-padded so it is not circular */
	fft(re, im, m, false);
	for (size_t i = 0; i < m; i++) {
		re[i] = re[i] * re[i] + im[i] * im[i];
		im[i] = 0;
	}
	fft(re, im, m, true);
	var = re[0];
	if (!(var > 1e-12 * (double)m)) {
		ret = -ENODATA; /* a flat line */
		goto out_free;
	}
	/* normalised, and corrected for the shrinking overlap at larger lags */
	for (lag = 1; lag < maxlag; lag++) {
		double r = re[lag] / var * (double)n / (double)(n - lag);

		if (r < 0)
			dipped = true;
		if (!dipped)
			continue;
		if (r > best) {
			best = r;
			peak = lag;
		} else if (peak && r < best - 0.1) {
			break; /* past the first peak */
		}
	}
	if (!peak || best < PERIOD_MIN_CORR || peak + 1 >= maxlag) {
		ret = -ENODATA;
		goto out_free;
	}
	{
		/* parabolic interpolation around the peak, for sub-sample periods */
		double y0 = re[peak - 1] * (double)n / (double)(n - peak + 1);
		double y1 = re[peak] * (double)n / (double)(n - peak);
		double y2 = re[peak + 1] * (double)n / (double)(n - peak - 1);
		double den = y0 - 2 * y1 + y2, shift = den != 0 ? 0.5 * (y0 - y2) / den : 0;

		if (shift < -0.5 || shift > 0.5)
			shift = 0;
		out->lag = peak;
		out->period_s = ((double)peak + shift) * dt;
		out->confidence = best > 1 ? 1 : best;
	}
out_free:
	free(re);
	free(im);
	return ret;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int series_trend(const double *x, size_t n, double dt, double alpha, double beta,
		 struct trend_result *out)
{
	size_t step, npts = 0, nslopes = 0, k = 0, valid = 0;
	double *t, *v, *slopes, level = NAN, slope = 0, sx = 0, sy = 0, ss_tot = 0, ss_res = 0;
	int ret = 0;

	if (!x || !(dt > 0) || !(alpha > 0 && alpha <= 1) || !(beta >= 0 && beta <= 1) ||
	    n > SERIES_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		valid += !isnan(x[i]);
	if (valid < 3)
		return -ENODATA;
	step = valid > THEIL_SEN_MAX_PTS ? valid / THEIL_SEN_MAX_PTS + 1 : 1;
	t = malloc(valid * sizeof(*t));
	v = malloc(valid * sizeof(*v));
	slopes = malloc((THEIL_SEN_MAX_PTS + 1) * (THEIL_SEN_MAX_PTS + 1) / 2 * sizeof(*slopes));
	if (!t || !v || !slopes) {
		ret = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < n; i++) {
		if (isnan(x[i]))
			continue;
		if (k++ % step == 0) {
			t[npts] = (double)i * dt;
			v[npts] = x[i];
			npts++;
		}
	}
	/* Theil-Sen: the median of the slopes between every pair of points */
	for (size_t i = 0; i < npts; i++)
		for (size_t j = i + 1; j < npts; j++)
			if (t[j] > t[i])
				slopes[nslopes++] = (v[j] - v[i]) / (t[j] - t[i]);
	qsort(slopes, nslopes, sizeof(*slopes), cmp_double);
	out->slope = nslopes % 2 ? slopes[nslopes / 2]
				 : (slopes[nslopes / 2 - 1] + slopes[nslopes / 2]) / 2;
	/* intercept: the median of v - slope * t */
	for (size_t i = 0; i < npts; i++)
		slopes[i] = v[i] - out->slope * t[i];
	qsort(slopes, npts, sizeof(*slopes), cmp_double);
	out->intercept = npts % 2 ? slopes[npts / 2] : (slopes[npts / 2 - 1] + slopes[npts / 2]) / 2;
	for (size_t i = 0; i < npts; i++) {
		sx += v[i];
		sy += 1;
	}
	sx /= sy;
	for (size_t i = 0; i < npts; i++) {
		double fit = out->intercept + out->slope * t[i];

		ss_tot += (v[i] - sx) * (v[i] - sx);
		ss_res += (v[i] - fit) * (v[i] - fit);
	}
	out->r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;
	if (out->r2 < 0)
		out->r2 = 0;
	/* Holt: level and slope (per sample), over every sample */
	for (size_t i = 0; i < n; i++) {
		double prev_level;

		if (isnan(x[i]))
			continue;
		if (isnan(level)) {
			level = x[i];
			slope = out->slope * dt;
			continue;
		}
		prev_level = level;
		level = alpha * x[i] + (1 - alpha) * (level + slope);
		slope = beta * (level - prev_level) + (1 - beta) * slope;
	}
	out->level = level;
	out->holt_slope = slope / dt;
out_free:
	free(t);
	free(v);
	free(slopes);
	return ret;
}

int series_time_to(const struct trend_result *t, double limit, double *seconds)
{
	double gap = limit - t->level;

	/* Holt's level (where it is now), the robust slope (where it heads) */
	if (isnan(t->level) || isnan(t->slope) || t->slope == 0 || (gap > 0) != (t->slope > 0))
		return -ENODATA;
	*seconds = gap / t->slope;
	return 0;
}
