/*
 * scaling.h - how a program's throughput scales with the resources it is
 * given: speedup, efficiency and Amdahl's law fitted to short trial runs
 * (`jobscope trial`, docs/trial.md).
 *
 * Points are (n, throughput) with n the count of the resource varied (CPUs
 * or GPUs) and throughput in any unit of work per second.  Relative to the
 * smallest n0: speedup S(n) = T(n) / T(n0), efficiency E(n) = S(n) / (n/n0).
 * Amdahl's law with parallel fraction p:  S(n) = 1 / ((1 - p) + p * n0/n).
 *
 * scaling_fit: p in [0, 1] minimising the squared relative error of the
 * predicted speedups (a grid, then golden-section search: the error is
 * smooth in p), its RMS relative error, and whether the law fits: it does
 * not when the error exceeds SCALING_MAX_RMS_REL_ERR, or when throughput
 * falls by more than SCALING_FALL_TOLERANCE from one n to a larger one
 * (memory bandwidth or lock contention, not a serial fraction).  Fewer
 * than two distinct n, or a point without a positive finite throughput:
 * no fit at all.  Pure functions: no I/O, no allocation, thread-safe.
 */
#ifndef JOBSCOPE_SCALING_H
#define JOBSCOPE_SCALING_H

#include <stdbool.h>
#include <stddef.h>

#define SCALING_MAX_POINTS	 64
#define SCALING_MAX_RMS_REL_ERR	 0.15 /* above: "does not fit" */
#define SCALING_FALL_TOLERANCE	 0.10 /* a fall by more than 10% with more resources */
#define SCALING_DEFAULT_MIN_EFF	 0.5
#define SCALING_RECOMMEND_FACTOR 16 /* recommendations stop at 16x the largest n tried */

struct scaling_point {
	double n;	   /* resources: CPUs or GPUs, > 0 */
	double throughput; /* work per second; NAN: not measured */
};

enum scaling_verdict {
	SCALING_NO_FIT,	  /* fewer than two usable points: nothing fitted */
	SCALING_FITS,	  /* Amdahl's law within SCALING_MAX_RMS_REL_ERR */
	SCALING_POOR_FIT, /* fitted, error above the threshold */
	SCALING_FALLS,	  /* throughput falls with more resources */
};

struct scaling_fit {
	enum scaling_verdict verdict;
	double n0;	    /* the smallest n with a throughput */
	double p;	    /* parallel fraction; NAN with SCALING_NO_FIT */
	double rms_rel_err; /* of the predicted speedups; NAN with SCALING_NO_FIT */
	size_t npoints;	    /* points used */
};

/* Speedup relative to n0 under Amdahl's law; NAN for n or n0 <= 0. */
double scaling_amdahl_speedup(double p, double n0, double n);
/* speedup / (n / n0) */
double scaling_efficiency(double speedup, double n0, double n);
void scaling_fit(const struct scaling_point *pts, size_t n, struct scaling_fit *out);
/*
 * What to ask for under the fitted law: the largest n = n0 * k (k = 1, 2,
 * ...) such that the step from n0 * (k-1) to n0 * k still adds at least
 * min_eff of n0's throughput (the marginal efficiency: what the last
 * resources added are worth), at most max_n (finite; *capped then true).  A serial
 * program gets n0; a linear one max_n.  NAN for a fit that is not
 * SCALING_FITS.
 */
double scaling_recommend(const struct scaling_fit *f, double min_eff, double max_n, bool *capped);
const char *
scaling_verdict_name(enum scaling_verdict v); /* "fits", "does-not-fit", "falls", "no-fit" */

#endif
