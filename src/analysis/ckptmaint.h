/*
 * ckptmaint.h - the maintenance of report checkpoints (analysis/reportckpt.h):
 * jobs whose checkpoint is due are restored from it, fed the rows after it
 * (analysis/jobreport.h) and saved again.  The agent and the head call it
 * from their ticks, `jobscope compact` once.
 */
#ifndef JOBSCOPE_CKPTMAINT_H
#define JOBSCOPE_CKPTMAINT_H

#include <stdint.h>

#include "store/store.h"
#include "store/reader.h"

/* A running job's checkpoint is brought up to date when this far behind its last row. */
#define REPORT_CKPT_LAG_MS (3600 * 1000)
/* Rows replayed per job per maintenance call (about 1 s of work). */
#define REPORT_CKPT_MAX_ROWS 200000

/*
 * Maintenance: brings due checkpoints up to date (store_ckpt_for_each_due):
 * at most max_jobs jobs, each by at most max_rows rows (0: the defaults
 * above), lag_ms behind at most (0: up to the last row).  save: how a
 * checkpoint is written (NULL: store_ckpt_put on st; the head saves
 * through its writer).  *done: checkpoints saved.  Returns 0 or the first
 * error (a job that fails is logged and skipped).
 */
struct report_ckpt_opts {
	int64_t lag_ms;
	int max_jobs;
	int64_t max_rows;
	int (*save)(void *arg, const struct store_ckpt *c);
	void *save_arg;
};
int report_ckpt_maintain(struct store *st, int64_t now_ms, const struct report_ckpt_opts *o,
			 int *done);

#endif
