/*
 * jobreport.h - a job's whole report: its summary, its time series and
 * their analysis, loaded from a store in one replay, or finished from what
 * `jobscope run` fed live.
 *
 * job_report_load: job_report_init + one replay into summary and series +
 * job_report_finish.  job_report_finish: both finished, the series' GPU
 * aggregates over the job's devices, the analysis run.  Errors: 0 or
 * -errno (store errors printed; -EPROTO for a job whose times are not
 * plausible; rows with such times are left out).  job_report_release
 * frees.  About 3 MiB of series whatever the job's length.  Not
 * thread-safe.
 */
#ifndef JOBSCOPE_JOBREPORT_H
#define JOBSCOPE_JOBREPORT_H

#include "analysis/verdicts.h"
#include "analysis/jobseries.h"
#include "store/store.h"
#include "analysis/summary.h"

/* Times after this (ms since the epoch, about the year 3084) are a corrupt store's. */
#define JOB_REPORT_MAX_MS ((int64_t)1 << 45)

struct job_report {
	struct summary sum;
	struct jobseries js;
	struct analysis an;
};

void job_report_init(struct job_report *r, const struct job_record *job);
void job_report_release(struct job_report *r);
int job_report_load(struct job_report *r, struct store *st, const struct job_record *job);
void job_report_finish(struct job_report *r, const struct job_record *job);
/* After summary_finish: the series' GPU aggregates, then the analysis. */
void job_report_analyse(const struct summary *s, struct jobseries *js, struct analysis *an);

#endif
