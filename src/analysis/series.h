/*
 * series.h - analysis of one evenly sampled series (issue 6 groundwork):
 * its period, by autocorrelation, and its trend, by a robust line fit and
 * Holt's method, with the time it takes to reach a limit.
 *
 * Pure functions over arrays: no I/O, no allocation beyond what they say,
 * thread-safe.  A series is n values sampled every dt seconds; NAN values
 * are missing (interpolated over for the period, skipped for the trend).
 * Errors: 0 or -errno (-EINVAL: bad arguments, -ENODATA: too short or too
 * flat to judge, which callers report as "cannot be judged", never as 0).
 */
#ifndef JOBSCOPE_SERIES_H
#define JOBSCOPE_SERIES_H

#include <stddef.h>

struct period_result {
	double period_s;   /* the iteration period */
	double confidence; /* 0..1: the autocorrelation at that lag */
	size_t lag;	   /* in samples */
};

/*
 * The dominant period of x: the first clear peak of the autocorrelation
 * (above 0.3, after it has dipped below 0), refined by parabolic
 * interpolation.  Needs at least 3 periods in the series; the
 * autocorrelation is computed through an FFT (O(n log n)).  -ENODATA when
 * there is no period (white noise, a flat line, a trend only).
 */
int series_period(const double *x, size_t n, double dt, struct period_result *out);

struct trend_result {
	double slope;	   /* units per second (Theil-Sen: the median of pairwise slopes) */
	double intercept;  /* at t = 0 (the first sample) */
	double level;	   /* Holt's smoothed level at the last sample */
	double holt_slope; /* Holt's smoothed slope, units per second */
	double r2;	   /* of the line, 0..1 */
};

/* A robust line through x and Holt's level and slope (alpha, beta in 0..1). */
int series_trend(const double *x, size_t n, double dt, double alpha, double beta,
		 struct trend_result *out);

/*
 * Seconds from the last sample until the trend reaches limit: from Holt's
 * level, at the robust slope (Holt's own slope follows outliers); -ENODATA
 * when it does not head there.
 */
int series_time_to(const struct trend_result *t, double limit, double *seconds);

#endif
