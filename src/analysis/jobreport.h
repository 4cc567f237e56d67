/*
 * jobreport.h - a job's whole report: its summary, its time series and
 * their analysis, loaded from a store in one replay, or finished from what
 * `jobscope run` fed live.
 *
 * job_report_load: job_report_init + the job's report checkpoint when it
 * has a valid one + one replay of the rows after it (all of them without)
 * into summary and series + job_report_finish + the job's CUDA tables (a
 * failure to read them is warned about and leaves them empty).
 * job_report_finish: both finished, the series' GPU
 * aggregates over the job's devices, the analysis run.  Errors: 0 or
 * -errno (store errors printed; -EPROTO for a job whose times are not
 * plausible; rows with such times are left out).  job_report_release
 * frees.  About 3 MiB of series whatever the job's length.  Not
 * thread-safe.
 */
#ifndef JOBSCOPE_JOBREPORT_H
#define JOBSCOPE_JOBREPORT_H

#include "analysis/appsummary.h"
#include "analysis/cudatables.h"
#include "analysis/verdicts.h"
#include "analysis/jobseries.h"
#include "store/store.h"
#include "analysis/summary.h"
#include "store/reader.h"

struct progress_hook;

struct job_report {
	struct summary sum;
	struct jobseries js;
	struct analysis an;
	struct cuda_tables cuda; /* `jobscope run --cuda`'s tables (present: stored) */
	struct app_summary app;	 /* the program's own metrics and markers (present: stored) */
	/* job_report_load_progress's listener (NULL: none), the rows replayed, their window */
	const struct progress_hook *progress;
	int64_t progress_rows, progress_from_ms, progress_until_ms;
};

void job_report_init(struct job_report *r, const struct job_record *job);
void job_report_release(struct job_report *r);
int job_report_load(struct job_report *r, struct store *st, const struct job_record *job);
/*
 * job_report_load telling progress (common/progress.h) the rows replayed
 * and how far into the job's time they are, and finishing it at the end.
 */
int job_report_load_progress(struct job_report *r, struct store *st, const struct job_record *job,
			     const struct progress_hook *progress);
void job_report_finish(struct job_report *r, const struct job_record *job);
/*
 * The steps of a load from a checkpoint (analysis/reportckpt.h):
 * job_report_restore puts the job's checkpoint into r (initialized) and
 * says what it covers: 0, -ENOENT (none), -ESTALE (of another format or
 * an older shape of the job), -EPROTO (corrupt: said so); on failure r is
 * as job_report_init left it.  job_report_replay feeds r the job's rows
 * of span (not finished).  job_report_refresh takes the job's processes
 * and devices as they are now, as a whole replay has them.  job_report_load
 * does all three unless JOBSCOPE_NO_CKPT=1.
 */
struct report_ckpt_mark;
int job_report_restore(struct job_report *r, struct store *st, const struct job_record *job,
		       struct report_ckpt_mark *mark);
int job_report_replay(struct job_report *r, struct store *st, const struct job_record *job,
		      struct store_replay_span *span);
int job_report_refresh(struct job_report *r, struct store *st, const struct job_record *job);
/* After summary_finish: the series' GPU aggregates, then the analysis. */
void job_report_analyse(const struct summary *s, struct jobseries *js, struct analysis *an);

#endif
