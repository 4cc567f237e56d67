/*
 * counter.h - a cumulative counter's growth between two readings, by the
 * rule its kind of counter follows when the second reading is below the
 * first.  Every figure made from two readings of a counter (rates, shares,
 * totals: sample/figures.h for the host's, jobs' and GPUs' figures, and
 * app energy) goes through here, and each counter is given its rule by name:
 *
 *   COUNTER_UNKNOWN  a sum over things that come and go (a host's disks and
 *                    interfaces, a job's processes, pressure stall time of
 *                    a re-created cgroup): going back says something left,
 *                    and how much the rest grew is not known: no figure.
 *   COUNTER_RESET    a counter its owner sets back to 0 (a GPU's energy and
 *                    NVLink counters when the driver reloads or they are
 *                    reset): the growth is the second reading.
 *   COUNTER_WRAP     a counter that wraps at a known maximum (RAPL's
 *                    energy_uj at max_energy_range_uj): max - first +
 *                    second; with no maximum above the first, unknown.
 *
 * Pure functions; no state.
 */
#ifndef JOBSCOPE_COUNTER_H
#define JOBSCOPE_COUNTER_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

enum counter_rule { COUNTER_UNKNOWN, COUNTER_RESET, COUNTER_WRAP };

/* Each counter's rule, named where the figures are made. */
#define COUNTER_RULE_HOST_IO	COUNTER_UNKNOWN /* disk and network bytes: summed over devices */
#define COUNTER_RULE_PSI	COUNTER_UNKNOWN /* pressure stall µs */
#define COUNTER_RULE_JOB	COUNTER_UNKNOWN /* a job's CPU ms and I/O bytes: summed over processes */
#define COUNTER_RULE_PROC_CPU	COUNTER_UNKNOWN /* one process's CPU ms (a pid reused) */
#define COUNTER_RULE_GPU_NVLINK COUNTER_RESET	/* NVML's NVLink byte counters */
#define COUNTER_RULE_GPU_ENERGY COUNTER_RESET	/* NVML's total energy since the driver loaded */
#define COUNTER_RULE_RAPL	COUNTER_WRAP	/* powercap energy_uj */
#define COUNTER_RULE_GPU_VIOL	COUNTER_RESET	/* NVML's throttle (violation) ns, per reason */

/* The growth from before to now into *out: false when the rule cannot say. */
static inline bool counter_growth(uint64_t before, uint64_t now, enum counter_rule rule,
				  uint64_t max, uint64_t *out)
{
	if (now >= before) {
		*out = now - before;
		return true;
	}
	switch (rule) {
	case COUNTER_RESET:
		*out = now;
		return true;
	case COUNTER_WRAP:
		if (max <= before)
			return false;
		*out = max - before + now;
		return true;
	case COUNTER_UNKNOWN:
	default:
		return false;
	}
}

/* The growth per second over span_s seconds; NAN when unknown or span_s <= 0. */
static inline double counter_rate(uint64_t before, uint64_t now, double span_s,
				  enum counter_rule rule)
{
	uint64_t d;

	if (!(span_s > 0) || !counter_growth(before, now, rule, 0, &d))
		return NAN;
	return (double)d / span_s;
}

#endif
