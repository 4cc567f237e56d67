/*
 * ckptmaint.c - report checkpoints brought up to date (see ckptmaint.h):
 *
 *   collect_due            the due jobs, at most max_jobs
 *   ckpt_job               one job: restore, replay the rows after, save
 *   report_ckpt_maintain   all of them, up to one seq bound
 */
#include "analysis/ckptmaint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jobreport.h"
#include "analysis/reportckpt.h"
#include "common/log.h"
#include "store/tick.h"
#include "store/reader.h"
#include "store/sync.h"

#define CKPT_DUE_MAX 64

struct due_list {
	struct store_ckpt_due d[CKPT_DUE_MAX];
	int n, max;
};

static int collect_due(const struct store_ckpt_due *d, void *arg)
{
	struct due_list *l = arg;

	l->d[l->n++] = *d;
	return l->n == l->max; /* full: stop */
}

static int save_in_store(void *arg, const struct store_ckpt *c)
{
	return store_ckpt_put(arg, c);
}

/*
 * One job: its checkpoint (or nothing), the rows after it up to upto_seq
 * (at most max_rows), saved.  *saved: whether there was anything new.
 */
static int ckpt_job(struct store *st, const struct store_ckpt_due *d, int64_t now_ms,
		    int64_t upto_seq, const struct report_ckpt_opts *o, bool *saved)
{
	struct store_replay_span span = {.upto_seq = upto_seq};
	struct report_ckpt_mark mark;
	struct job_record job;
	struct job_report *r;
	struct store_ckpt c;
	bool restored = false;
	int ret;

	*saved = false;
	ret = store_get_job(st, d->job_id, &job);
	if (ret)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	job_report_init(r, &job);
	if (d->has_ckpt && d->format == report_ckpt_format() &&
	    job_report_restore(r, st, &job, &mark) == 0) {
		span.after_seq = mark.seq;
		span.from_ms = mark.ts_ms;
		span.last_window_ms = mark.window_ms;
		restored = true;
	}
	span.max_rows = o->max_rows > 0 ? o->max_rows : REPORT_CKPT_MAX_ROWS;
	ret = job_report_replay(r, st, &job, &span);
	if (ret || (restored && span.last_seq == span.after_seq))
		goto out_release;
	mark.seq = span.last_seq;
	mark.ts_ms = span.last_ms;
	mark.window_ms = span.last_window_ms;
	memset(&c, 0, sizeof(c));
	c.job_id = job.id;
	c.seq = mark.seq;
	c.ts_ms = mark.ts_ms;
	c.format = report_ckpt_format();
	c.made_ms = now_ms;
	ret = report_ckpt_encode(&r->sum, &r->js, &job, &mark, &c.data, &c.size);
	if (!ret)
		ret = o->save ? o->save(o->save_arg, &c) : save_in_store(st, &c);
	*saved = ret == 0;
	free(c.data);
out_release:
	job_report_release(r);
	free(r);
	return ret;
}

int report_ckpt_maintain(struct store *st, int64_t now_ms, const struct report_ckpt_opts *o,
			 int *done)
{
	struct due_list *l;
	int64_t upto_seq;
	int ret, first = 0;

	*done = 0;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->max = o->max_jobs > 0 && o->max_jobs < CKPT_DUE_MAX ? o->max_jobs : CKPT_DUE_MAX;
	/*
	 * The seq bound first: every row up to it is committed, so the
	 * replays' cursors, whenever they start reading, all hold them.
	 */
	ret = store_max_seq(st, &upto_seq);
	if (!ret)
		ret = store_ckpt_for_each_due(st, o->lag_ms, report_ckpt_format(), collect_due, l);
	if (ret > 0)
		ret = 0;
	for (int i = 0; i < l->n && !ret; i++) {
		bool saved;
		int r = ckpt_job(st, &l->d[i], now_ms, upto_seq, o, &saved);

		if (r && r != -ENOENT) {
			log_warn(r, "no report checkpoint for job %lld in '%s'",
				 (long long)l->d[i].job_id, store_path(st));
			if (!first)
				first = r;
		}
		*done += saved;
	}
	free(l);
	return ret ? ret : first;
}
