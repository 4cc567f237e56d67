/*
 * reportckpt.h - report checkpoints: a job's summary and series (the
 * state of struct job_report before job_report_finish) saved in the store
 * after its rows up to a seq, so that a report restores it and replays
 * only the rows after it (store table report_ckpts, docs/report.md).
 *
 * The blob: "JSCK", the format (report_ckpt_format(): a version and the
 * layout of the structs, so that a jobscope whose structs differ ignores
 * the blob), then a zstd frame of the structs' contents, pointers written
 * as what they point to.  Decoding trusts nothing: every count, index and
 * time is checked, every string terminated, every flag made 0 or 1; a
 * blob in any doubt is refused (-EPROTO) and the caller replays in full.
 *
 * Kept up to date by analysis/ckptmaint.h.
 *
 * Errors: 0 or -errno (-EPROTO: not a usable checkpoint, -ESTALE: of
 * another format or another job, -ENOMEM).  Not thread-safe.
 */
#ifndef JOBSCOPE_REPORTCKPT_H
#define JOBSCOPE_REPORTCKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/jobseries.h"
#include "analysis/summary.h"
#include "store/store.h"
#include "store/reader.h"

/*
 * What a checkpoint covers: the job's rows up to seq; the last tick's
 * time; the time of its last host or GPU row (rows the job's end bounds).
 */
struct report_ckpt_mark {
	int64_t seq, ts_ms, window_ms;
};

int64_t report_ckpt_format(void);
/* The blob of s and js (not finished) for job, after mark: *data malloc'd. */
int report_ckpt_encode(const struct summary *s, const struct jobseries *js,
		       const struct job_record *job, const struct report_ckpt_mark *mark,
		       void **data, size_t *size);
/*
 * s and js (released first by the caller, or fresh) from a blob made for
 * job: on failure both are released and left as job_report_init leaves
 * them.  job: the job as it is now (its end may have come since).
 */
int report_ckpt_decode(const void *data, size_t size, const struct job_record *job,
		       struct summary *s, struct jobseries *js, struct report_ckpt_mark *mark);

/* Encodes s and js and saves them as job's checkpoint in st (store_ckpt_put). */
int report_ckpt_save(struct store *st, const struct summary *s, const struct jobseries *js,
		     const struct job_record *job, const struct report_ckpt_mark *mark,
		     int64_t now_ms);

/* Whether JOBSCOPE_NO_CKPT=1 asks every report for a whole replay. */
bool report_ckpt_disabled(void);

#endif
