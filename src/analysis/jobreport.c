/*
 * jobreport.c - one replay of a job's rows feeds its summary and its
 * series (with its node's interval changes); then the analysis, and a
 * verdict when its node's agent lost rows during its lifetime (gap records).
 */
#include "analysis/jobreport.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/progress.h"
#include "common/timeutil.h"
#include "analysis/reportckpt.h"
#include "store/tick.h"
#include "store/reader.h"
#include "store/upkeep.h"

void job_report_init(struct job_report *r, const struct job_record *job)
{
	summary_init(&r->sum, job);
	jobseries_init(&r->js, job->interval_ms);
	memset(&r->an, 0, sizeof(r->an));
	cuda_tables_init(&r->cuda);
	app_summary_init(&r->app);
	r->progress = NULL;
	r->progress_rows = 0;
}

void job_report_release(struct job_report *r)
{
	summary_release(&r->sum);
	jobseries_release(&r->js);
	cuda_tables_release(&r->cuda);
	app_summary_release(&r->app);
}

/*
 * Rows whose time is not a plausible one (before 1970, after the year
 * 3000: a corrupt store) are left out, so that no difference of two times
 * can overflow further on.
 */
static bool sane_ms(int64_t ms)
{
	return ms >= 0 && ms <= JOB_REPORT_MAX_MS;
}

/* A row replayed: the rows come in time order, so how far is its time into the window. */
static void step(struct job_report *r, int64_t ts_ms)
{
	int64_t span_ms = r->progress_until_ms - r->progress_from_ms;

	if (!r->progress)
		return;
	r->progress_rows++;
	progress_step(r->progress, r->progress_rows,
		      span_ms > 0 ? (double)(ts_ms - r->progress_from_ms) / (double)span_ms : -1);
}

static void replay_host(void *arg, int64_t ts_ms, const struct host_sample *h)
{
	struct job_report *r = arg;

	step(r, ts_ms);
	if (!sane_ms(ts_ms))
		return;
	summary_add_host(&r->sum, ts_ms, h);
	jobseries_add_host(&r->js, ts_ms, h);
}

static void replay_job(void *arg, int64_t ts_ms, const struct job_sample *j)
{
	struct job_report *r = arg;

	step(r, ts_ms);
	if (!sane_ms(ts_ms))
		return;
	summary_add_job(&r->sum, ts_ms, j);
	jobseries_add_job(&r->js, ts_ms, j);
}

static void replay_proc(void *arg, const struct proc_info *p, int64_t ts_ms,
			const struct proc_sample *ps)
{
	struct job_report *r = arg;

	step(r, ts_ms);
	if (sane_ms(ts_ms) && sane_ms(p->start_ms) && sane_ms(p->end_ms))
		summary_add_proc(&r->sum, p, ts_ms, ps);
}

/* An `interval` event (its node's: store/tick.h) sets the spacing of the samples after it. */
static void replay_event(void *arg, const struct event_record *e)
{
	struct job_report *r = arg;

	if (!sane_ms(e->ts_ms))
		return;
	if (strcmp(e->kind, STORE_EVENT_INTERVAL) == 0)
		jobseries_set_interval(&r->js, e->ts_ms, e->value);
	summary_add_event(&r->sum, e);
}

static void replay_gpu(void *arg, const struct device_record *dev, int64_t ts_ms,
		       const struct gpu_sample *g)
{
	struct job_report *r = arg;

	step(r, ts_ms);
	if (!sane_ms(ts_ms))
		return;
	summary_add_gpu(&r->sum, dev, ts_ms, g);
	jobseries_add_gpu(&r->js, dev, ts_ms, g);
}

static void replay_gpu_proc(void *arg, const struct device_record *dev,
			    const struct proc_info *p, int64_t ts_ms, const struct gpu_proc *g)
{
	struct job_report *r = arg;

	if (sane_ms(ts_ms) && (!p || (sane_ms(p->start_ms) && sane_ms(p->end_ms))))
		summary_add_gpu_proc(&r->sum, dev, p, ts_ms, g);
}

/* The gap records of the job's node in its lifetime, summed. */
struct lost_rows {
	int64_t rows, records, from_ms, to_ms;
};

static int add_gap(const struct store_gap *g, void *arg)
{
	struct lost_rows *l = arg;

	if (!g->has_span || g->rows <= 0)
		return 0;
	if (l->records == 0 || g->from_ms < l->from_ms)
		l->from_ms = g->from_ms;
	if (l->records == 0 || g->to_ms > l->to_ms)
		l->to_ms = g->to_ms;
	l->rows += g->rows;
	l->records++;
	return 0;
}

/*
 * A job that ran while its node's agent lost rows (its size cap deleted
 * them before a head held them) says so: its figures miss what they held.
 */
static int gaps_verdict(struct job_report *r, struct store *st, const struct job_record *job)
{
	struct analysis *an = &r->an;
	struct lost_rows l = {0};
	struct verdict *v;
	char t0[40], t1[40];
	size_t at;
	int ret;

	ret = store_for_each_gap(st, job->node_id, job->start_ms,
				 job->end_ms ? job->end_ms : JOB_REPORT_MAX_MS, add_gap, &l);
	if (ret || l.rows == 0)
		return ret;
	/* the most severe first: a warning, after the warnings, before the infos */
	for (at = 0; at < an->nverdicts && an->verdicts[at].severity >= VERDICT_WARNING; at++)
		;
	if (at >= ANALYSIS_VERDICTS_MAX)
		return 0;
	if (an->nverdicts == ANALYSIS_VERDICTS_MAX)
		an->nverdicts--; /* full: the least severe goes */
	memmove(&an->verdicts[at + 1], &an->verdicts[at],
		(an->nverdicts - at) * sizeof(an->verdicts[0]));
	an->nverdicts++;
	v = &an->verdicts[at];
	memset(v, 0, sizeof(*v));
	v->kind = "lost_rows";
	v->severity = VERDICT_WARNING;
	format_rfc3339_ms(l.from_ms, t0, sizeof(t0));
	format_rfc3339_ms(l.to_ms, t1, sizeof(t1));
	snprintf(v->message, sizeof(v->message),
		 "%lld rows lost by the agent's size cap between %s and %s: the figures miss "
		 "what they held",
		 (long long)l.rows, t0, t1);
	snprintf(v->advice, sizeof(v->advice),
		 "raise --max-db-size on %.64s, or keep its head reachable: only rows the head "
		 "has not received are lost",
		 job->hostname[0] ? job->hostname : "the node");
	v->evidence[v->nevidence++] = (struct verdict_evidence){"lost_rows", (double)l.rows};
	v->evidence[v->nevidence++] = (struct verdict_evidence){"gap_records", (double)l.records};
	v->evidence[v->nevidence++] = (struct verdict_evidence){"lost_from_ms", (double)l.from_ms};
	v->evidence[v->nevidence++] = (struct verdict_evidence){"lost_to_ms", (double)l.to_ms};
	return 0;
}

static int job_times_check(struct store *st, const struct job_record *job)
{
	if (!sane_ms(job->start_ms) || !sane_ms(job->end_ms) || job->interval_ms < 0 ||
	    job->interval_ms > JOB_REPORT_MAX_MS)
		return log_err(-EPROTO, "job %lld of '%s' has times out of range: a corrupt store",
			       (long long)job->id, store_path(st));
	return 0;
}

int job_report_replay(struct job_report *r, struct store *st, const struct job_record *job,
		      struct store_replay_span *span)
{
	static const struct store_replay_ops ops = {
	    replay_host, replay_job,	  replay_proc, replay_event,
	    replay_gpu,	 replay_gpu_proc, .host_totals_only = true,
	};
	int ret = job_times_check(st, job);

	return ret ?: store_replay_job_span(st, job->id, &ops, r, span);
}

int job_report_restore(struct job_report *r, struct store *st, const struct job_record *job,
		       struct report_ckpt_mark *mark)
{
	struct store_ckpt c;
	int ret;

	ret = store_ckpt_get(st, job->id, &c);
	if (ret)
		return ret;
	summary_release(&r->sum);
	jobseries_release(&r->js);
	ret = report_ckpt_decode(c.data, c.size, job, &r->sum, &r->js, mark);
	if (ret == -EPROTO)
		log_warn(ret,
			 "the report checkpoint of job %lld in '%s' is not usable: replaying "
			 "the whole job",
			 (long long)job->id, store_path(st));
	free(c.data);
	return ret;
}

static void refresh_proc(void *arg, const struct proc_info *p)
{
	struct job_report *r = arg;

	summary_refresh_proc(&r->sum, p);
}

static void refresh_device(void *arg, const struct device_record *dev)
{
	struct job_report *r = arg;

	summary_refresh_device(&r->sum, dev);
	jobseries_refresh_device(&r->js, dev);
}

int job_report_refresh(struct job_report *r, struct store *st, const struct job_record *job)
{
	static const struct store_replay_dims dims = {refresh_proc, refresh_device};

	return store_replay_job_dims(st, job->id, &dims, r);
}

int job_report_load(struct job_report *r, struct store *st, const struct job_record *job)
{
	return job_report_load_progress(r, st, job, NULL);
}

int job_report_load_progress(struct job_report *r, struct store *st, const struct job_record *job,
			     const struct progress_hook *progress)
{
	struct store_replay_span span = {0};
	struct report_ckpt_mark mark;
	bool restored = false;
	int ret;

	job_report_init(r, job);
	ret = job_times_check(st, job);
	if (ret)
		return ret;
	if (!report_ckpt_disabled() && job_report_restore(r, st, job, &mark) == 0) {
		/* the rows after the checkpoint: the same report as a whole replay */
		span.after_seq = mark.seq;
		span.from_ms = mark.ts_ms;
		restored = true;
	}
	r->progress = progress;
	r->progress_from_ms = restored && mark.ts_ms > job->start_ms ? mark.ts_ms : job->start_ms;
	r->progress_until_ms = job->end_ms ? job->end_ms : time_now_ms();
	ret = job_report_replay(r, st, job, &span);
	progress_finish(progress);
	r->progress = NULL;
	if (ret == 0 && restored)
		ret = job_report_refresh(r, st, job);
	if (ret == 0) {
		job_report_finish(r, job);
		ret = gaps_verdict(r, st, job);
	}
	if (ret == 0 &&
	    cuda_tables_load(&r->cuda, st, job->id, job->end_ms ? job->end_ms - job->start_ms : 0))
		log_warn(0, "the CUDA tables of job %lld in '%s' could not be read: left out",
			 (long long)job->id, store_path(st));
	if (ret == 0 && app_summary_load(&r->app, st, &r->sum))
		log_warn(0, "the app metrics of job %lld in '%s' could not be read: left out",
			 (long long)job->id, store_path(st));
	if (ret == 0 && summary_load_libs(&r->sum, st))
		log_warn(0, "the libraries of job %lld could not be read: left out", (long long)job->id);
	return ret;
}

void job_report_analyse(const struct summary *s, struct jobseries *js, struct analysis *an)
{
	const char *uuids[GPU_MAX_DEVICES];
	size_t n = 0;

	if (s->gpu_procs_known)
		for (int i = 0; i < s->ngpus; i++)
			if (s->gpus[i].used)
				uuids[n++] = s->gpus[i].dev.info.uuid;
	/* process lists known and none of the job's: no device is the job's */
	if (s->gpu_procs_known && !n)
		uuids[n++] = "";
	jobseries_finish(js, s->gpu_procs_known ? uuids : NULL, n);
	analysis_run(s, js, an);
}

void job_report_finish(struct job_report *r, const struct job_record *job)
{
	summary_finish(&r->sum, job);
	job_report_analyse(&r->sum, &r->js, &r->an);
}
