/*
 * classify.h - what limited a job (its bottleneck) and what kind of job it
 * was, from features of its series (issue 6 groundwork).  Pure functions:
 * features in, a class and the reason in plain words out.  A feature that
 * is unknown is NAN; a verdict that rests on one is not made ("cannot be
 * judged" rather than a guess).
 */
#ifndef JOBSCOPE_CLASSIFY_H
#define JOBSCOPE_CLASSIFY_H

#include <stddef.h>

struct job_features {
	double duration_s;
	size_t samples;
	double cores_avg;	     /* CPU cores used on average */
	double cores_allowed;	     /* reserved, else the affinity mask */
	double cores_saturated_frac; /* share of the time it used >= 90% of them */
	double busy_frac;	     /* share of the time it used > 0.05 cores */
	double gpu_util_avg;	     /* 0-100 over the GPUs it used; NAN: no GPU */
	double gpu_util_p95;
	double throttled_frac;	     /* share of GPU samples with a throttle reason; NAN */
	double pcie_frac;	     /* PCIe traffic / link capacity, 0-1; NAN */
	double iowait_pct;	     /* the node's, 0-100; NAN */
	double psi_io_some_pct;	     /* the node's time stalled on I/O, 0-100; NAN */
	double read_bps_avg, write_bps_avg;
	double mem_peak_frac;	     /* memory peak / limit, 0-1; NAN */
	double swap_bytes_peak;	     /* NAN */
	double psi_mem_some_pct;     /* time stalled on memory, 0-100; NAN */
	double period_confidence;    /* of its GPU (else CPU) utilization period; NAN */
	double net_bps_avg;	     /* NAN */
};

enum bottleneck {
	BOTTLENECK_UNKNOWN,	 /* too short, or nothing to go on */
	BOTTLENECK_IDLE,	 /* it hardly did anything */
	BOTTLENECK_CPU_FEEDING,	 /* GPU idle while the CPU cores are saturated: data loading */
	BOTTLENECK_CPU,		 /* CPU-bound, no GPU */
	BOTTLENECK_IO,		 /* waiting on storage */
	BOTTLENECK_MEMORY,	 /* swapping, or stalled on memory, or at its limit */
	BOTTLENECK_PCIE,	 /* host <-> GPU transfers */
	BOTTLENECK_GPU_THROTTLED, /* the GPU slowed itself (power, thermal) */
	BOTTLENECK_GPU,		 /* the GPU is busy: healthy */
};

enum job_type {
	JOB_TYPE_UNKNOWN,
	JOB_TYPE_IDLE,
	JOB_TYPE_TRAINING,    /* sustained, periodic GPU (or CPU) work */
	JOB_TYPE_INFERENCE,   /* a long-running service: bursts, traffic, no period */
	JOB_TYPE_INTERACTIVE, /* mostly idle with short bursts */
	JOB_TYPE_BATCH,	      /* sustained work without a period */
};

const char *bottleneck_name(enum bottleneck b);
const char *job_type_name(enum job_type t);

/* reason: the evidence in words ("GPU 12% busy while 3.9 of 4 cores were busy") */
enum bottleneck classify_bottleneck(const struct job_features *f, char *reason, size_t size);
enum job_type classify_job_type(const struct job_features *f, char *reason, size_t size);

#endif
