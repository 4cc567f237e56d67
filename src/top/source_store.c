/*
 * source_store.c - a store file replayed at a time (`jobscope top --db F
 * --at T`): the jobs running at T with their figures at the last tick at
 * or before T (CPU cores from the two ticks before it), and the open
 * job's processes, GPUs and app metrics then.  Each refresh replays the
 * jobs it shows from their start: a store of `jobscope run` or a node's
 * day answers in milliseconds; the UI refreshes only when the time moves.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "attrib/jobs.h"
#include "sample/figures.h"
#include "store/store.h"
#include "top/source.h"
#include "store/jobdata.h"
#include "store/reader.h"

struct jobs_at {
	struct job_record *rec;
	size_t n, alloc;
	int64_t latest_ms, step_ms;
};

static int collect_job(const struct job_record *job, void *arg)
{
	struct jobs_at *c = arg;
	int64_t end = job->end_ms ? job->end_ms : job->start_ms;

	if (end > c->latest_ms)
		c->latest_ms = end;
	if (job->interval_ms > 0 && (c->step_ms == 0 || job->interval_ms < c->step_ms))
		c->step_ms = job->interval_ms;
	if (c->n == c->alloc) {
		size_t na = c->alloc ? c->alloc * 2 : 16;
		void *q = realloc(c->rec, na * sizeof(*c->rec));

		if (!q)
			return -ENOMEM;
		c->rec = q;
		c->alloc = na;
	}
	c->rec[c->n++] = *job;
	return 0;
}

#define PROCS_MAX 4096
#define DEVS_MAX  16

struct replay_at {
	int64_t at_ms, fresh_ms; /* rows older than fresh_ms are not "now" */
	/* the job's two last samples at or before at */
	int64_t ts[2];
	struct job_sample js[2];
	int njs;
	/* the open job only */
	bool detail;
	struct {
		struct proc_info info;
		int64_t ts[2];
		uint64_t cpu_ms[2];
		struct proc_sample s;
		int n;
	} * proc;
	size_t nproc;
	struct {
		struct device_record dev;
		int64_t ts;
		struct gpu_sample s;
		int64_t job_ts;
		double job_util, job_mem;
		bool job_has_util, job_has_mem;
	} dev[DEVS_MAX];
	size_t ndev;
};

static void on_job(void *arg, int64_t ts_ms, const struct job_sample *s)
{
	struct replay_at *r = arg;

	if (ts_ms > r->at_ms)
		return;
	r->ts[0] = r->ts[1];
	r->js[0] = r->js[1];
	r->ts[1] = ts_ms;
	r->js[1] = *s;
	r->njs++;
}

static void on_proc(void *arg, const struct proc_info *p, int64_t ts_ms,
		    const struct proc_sample *s)
{
	struct replay_at *r = arg;
	size_t k;

	if (!r->detail || ts_ms > r->at_ms)
		return;
	for (k = 0; k < r->nproc; k++)
		if (r->proc[k].info.pid == p->pid && r->proc[k].info.start_ms == p->start_ms)
			break;
	if (k == r->nproc) {
		if (r->nproc == PROCS_MAX)
			return;
		r->nproc++;
		r->proc[k].n = 0;
	}
	r->proc[k].info = *p;
	r->proc[k].s = *s;
	r->proc[k].ts[0] = r->proc[k].ts[1];
	r->proc[k].cpu_ms[0] = r->proc[k].cpu_ms[1];
	r->proc[k].ts[1] = ts_ms;
	r->proc[k].cpu_ms[1] = proc_cpu_ms(s);
	r->proc[k].n++;
}

static size_t dev_slot(struct replay_at *r, const struct device_record *d)
{
	size_t k;

	for (k = 0; k < r->ndev; k++)
		if (r->dev[k].dev.id == d->id)
			return k;
	if (r->ndev == DEVS_MAX)
		return DEVS_MAX;
	memset(&r->dev[k], 0, sizeof(r->dev[k]));
	r->dev[k].dev = *d;
	r->ndev++;
	return k;
}

static void on_gpu(void *arg, const struct device_record *d, int64_t ts_ms,
		   const struct gpu_sample *s)
{
	struct replay_at *r = arg;
	size_t k;

	if (ts_ms > r->at_ms || (k = dev_slot(r, d)) == DEVS_MAX)
		return;
	r->dev[k].ts = ts_ms;
	r->dev[k].s = *s;
}

static void on_gpu_proc(void *arg, const struct device_record *d, const struct proc_info *p,
			int64_t ts_ms, const struct gpu_proc *g)
{
	struct replay_at *r = arg;
	size_t k;

	if (!p || ts_ms > r->at_ms || (k = dev_slot(r, d)) == DEVS_MAX)
		return;
	if (r->dev[k].job_ts != ts_ms) { /* a new tick: the sums start again */
		r->dev[k].job_ts = ts_ms;
		r->dev[k].job_util = r->dev[k].job_mem = 0;
		r->dev[k].job_has_util = r->dev[k].job_has_mem = false;
	}
	if (g->valid & GPU_PROC_UTIL) {
		r->dev[k].job_util += g->sm_util_pct;
		r->dev[k].job_has_util = true;
	}
	if (g->valid & GPU_PROC_MEM) {
		r->dev[k].job_mem += (double)g->mem_bytes;
		r->dev[k].job_has_mem = true;
	}
}

struct app_at {
	struct top_model *m;
	int64_t ts;
};

/* the latest tick's points: a gauge's last value, a counter's sum, else the mean */
static int on_app(void *arg, int64_t ts_ms, const struct app_point *p)
{
	struct app_at *a = arg;
	struct top_metric *t = NULL;

	if (ts_ms != a->ts) {
		a->m->nmetrics = 0;
		a->ts = ts_ms;
	}
	for (size_t k = 0; k < a->m->nmetrics; k++)
		if (strcmp(a->m->metrics[k].name, p->name) == 0)
			t = &a->m->metrics[k];
	if (!t && !(t = top_model_add_metric(a->m)))
		return -ENOMEM;
	top_strcpy(t->name, sizeof(t->name), p->name);
	if (p->type == APP_GAUGE)
		t->value = p->last;
	else if (p->type == APP_COUNTER)
		t->value = p->sum;
	else
		t->value = p->count > 0 ? p->sum / p->count : NAN;
	return 0;
}

static void fill_job(const struct job_record *rec, const struct replay_at *r, struct top_job *j)
{
	top_job_init(j);
	jobs_format_key(j->key, sizeof(j->key), rec->scheduler, rec->job_id, rec->start_ms);
	top_strcpy(j->name, sizeof(j->name), rec->name);
	top_strcpy(j->user, sizeof(j->user), rec->user);
	top_strcpy(j->node, sizeof(j->node), rec->hostname);
	top_strcpy(j->command, sizeof(j->command), rec->command);
	j->start_ms = (double)rec->start_ms;
	j->end_ms = rec->end_ms ? (double)rec->end_ms : NAN;
	j->live = !rec->end_ms || rec->end_ms > r->at_ms;
	if (rec->reserved_cpus > 0)
		j->reserved_cpus = rec->reserved_cpus;
	else if (rec->cores_allowed > 0) /* `jobscope run`: its affinity mask */
		j->reserved_cpus = rec->cores_allowed;
	if (rec->reserved_mem_bytes > 0)
		j->reserved_mem_bytes = (double)rec->reserved_mem_bytes;
	if (rec->has_reserved_gpus)
		j->reserved_gpus = rec->reserved_gpus;
	/* a row is written when the sample moved: none for a while is no CPU used */
	if (r->njs >= 1 && j->live) {
		j->rss_bytes = (double)r->js[1].rss_bytes;
		j->processes = r->js[1].nprocs;
		if (r->ts[1] < r->fresh_ms)
			j->cpu_cores = 0;
	}
	if (r->njs >= 2 && j->live && r->ts[1] > r->ts[0] && r->ts[1] >= r->fresh_ms) {
		struct job_figures f;

		job_figures(&r->js[1], &r->js[0], r->ts[1] - r->ts[0], &f);
		j->cpu_cores = f.cores;
		j->cpu_wait_cores = f.wait_cores;
	}
	if (!isnan(j->cpu_cores) && !isnan(j->reserved_cpus) && j->reserved_cpus > 0)
		j->cpu_eff_pct = 100 * j->cpu_cores / j->reserved_cpus;
	if (!isnan(j->rss_bytes) && !isnan(j->reserved_mem_bytes))
		j->mem_eff_pct = 100 * j->rss_bytes / j->reserved_mem_bytes;
}

static void fill_detail(struct top_model *m, const struct replay_at *r)
{
	double used = 0, util = 0;
	int nutil = 0;

	for (size_t k = 0; k < r->nproc; k++) {
		const __typeof__(r->proc[0]) *p = &r->proc[k];
		struct top_proc *tp;

		if (p->info.end_ms && p->info.end_ms <= r->at_ms)
			continue;
		if (!(tp = top_model_add_proc(m)))
			break;
		top_strcpy(tp->node, sizeof(tp->node), m->job.node);
		tp->pid = p->info.pid;
		tp->ppid = p->info.ppid;
		top_user_name(p->info.uid, tp->user, sizeof(tp->user));
		top_strcpy(tp->command, sizeof(tp->command),
			   p->info.cmdline[0] ? p->info.cmdline : p->info.comm);
		if (p->s.valid & PS_RSS)
			tp->rss_bytes = (double)p->s.rss_bytes;
		if (p->ts[1] < r->fresh_ms) /* no row: it did not move */
			tp->cpu_pct = 0;
		else if (p->n >= 2)
			tp->cpu_pct = proc_cpu_pct(p->cpu_ms[0], p->cpu_ms[1], p->ts[1] - p->ts[0]);
	}
	top_model_tree(m);
	for (size_t k = 0; k < r->ndev; k++) {
		struct top_gpu *g = top_model_add_gpu(m);
		bool now = r->dev[k].ts >= r->fresh_ms;
		const struct gpu_sample *s = &r->dev[k].s;

		if (!g)
			break;
		top_strcpy(g->node, sizeof(g->node), m->job.node);
		g->index = r->dev[k].dev.info.index;
		top_strcpy(g->name, sizeof(g->name), r->dev[k].dev.info.name);
		if (r->dev[k].dev.info.mem_total_bytes)
			g->mem_total_bytes = (double)r->dev[k].dev.info.mem_total_bytes;
		if (now && (s->valid & GPU_UTIL))
			g->util_pct = s->util_pct;
		if (now && (s->valid & GPU_MEM_USED))
			g->mem_used_bytes = (double)s->mem_used_bytes;
		if (now && (s->valid & GPU_POWER))
			g->power_w = s->power_mw / 1000.0;
		if (r->dev[k].job_ts >= r->fresh_ms) {
			used++;
			if (r->dev[k].job_has_util) {
				g->job_util_pct = r->dev[k].job_util;
				util += r->dev[k].job_util;
				nutil++;
			}
			if (r->dev[k].job_has_mem)
				g->job_mem_bytes = r->dev[k].job_mem;
		}
	}
	if (r->ndev) {
		m->job.gpus_used = used;
		m->job.gpu_util_pct = nutil ? util / nutil : NAN;
	}
}

static int store_refresh(struct top_source *s, struct top_model *m, const char *open_key)
{
	struct jobs_at c = {0};
	struct replay_at *r;
	int ret;

	top_model_clear(m);
	r = calloc(1, sizeof(*r));
	if (r)
		r->proc = calloc(PROCS_MAX, sizeof(*r->proc));
	if (!r || !r->proc) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = store_for_each_job(s->st, collect_job, &c);
	if (ret) {
		snprintf(m->status, sizeof(m->status), "cannot read the store %.300s", s->db);
		goto out_free;
	}
	if (!s->step_ms)
		s->step_ms = c.step_ms ? c.step_ms : 1000;
	if (!s->at_ms) /* the last tick before the latest end: its jobs still running */
		s->at_ms = c.latest_ms > s->step_ms ? c.latest_ms - s->step_ms : c.latest_ms;
	m->at_ms = (double)s->at_ms;
	snprintf(m->source, sizeof(m->source), "store %.300s  replay", s->db);
	for (size_t k = 0; k < c.n; k++) {
		const struct job_record *rec = &c.rec[k];
		struct store_replay_ops ops = {.job = on_job, .host_totals_only = true};
		struct top_job *j;
		char key[TOP_KEY_MAX];
		bool open;

		if (rec->start_ms > s->at_ms || (rec->end_ms && rec->end_ms < s->at_ms))
			continue;
		jobs_format_key(key, sizeof(key), rec->scheduler, rec->job_id, rec->start_ms);
		open = open_key && jobs_key_matches(open_key, key, rec->scheduler, rec->job_id);
		memset(r->dev, 0, sizeof(r->dev));
		r->at_ms = s->at_ms;
		r->fresh_ms = s->at_ms - 2 * (rec->interval_ms > 0 ? rec->interval_ms : s->step_ms);
		r->njs = 0;
		r->nproc = r->ndev = 0;
		r->detail = open;
		if (open) {
			ops.proc = on_proc;
			ops.gpu = on_gpu;
			ops.gpu_proc = on_gpu_proc;
		}
		ret = store_replay_job(s->st, rec->id, &ops, r);
		if (ret) {
			snprintf(m->status, sizeof(m->status), "cannot replay job %s", key);
			goto out_free;
		}
		if (!m->node[0])
			top_strcpy(m->node, sizeof(m->node), rec->hostname);
		if (!(j = top_model_add_job(m))) {
			ret = -ENOMEM;
			goto out_free;
		}
		fill_job(rec, r, j);
		if (open) {
			struct app_at a = {.m = m, .ts = -1};

			m->has_job = true;
			m->job = *j;
			fill_detail(m, r);
			top_job_badges(&m->job);
			*j = m->job;
			store_for_each_app_point(s->st, rec->id, r->fresh_ms, s->at_ms + 1, on_app,
						 &a);
		}
		top_job_badges(j);
	}
	ret = 0;
out_free:
	if (r)
		free(r->proc);
	free(r);
	free(c.rec);
	return ret;
}

static void store_step(struct top_source *s, int dir)
{
	s->at_ms += dir * (s->step_ms ? s->step_ms : 1000);
}

static void store_release(struct top_source *s)
{
	if (s->st)
		store_close(s->st);
	s->st = NULL;
}

int top_source_open_store(struct top_source *s, const char *db, int64_t at_ms)
{
	int ret = store_open(db, STORE_READONLY, &s->st);

	if (ret)
		return ret;
	top_strcpy(s->db, sizeof(s->db), db);
	s->at_ms = at_ms;
	s->be = &top_backend_store;
	return 0;
}

void top_source_release(struct top_source *s)
{
	if (s->be && s->be->release)
		s->be->release(s);
	free(s->prev);
	free(s->cur);
	s->prev = s->cur = NULL;
}

const struct top_backend top_backend_store = {"store", store_refresh, store_step, store_release};
