/*
 * model.c - the model of one screen of `jobscope top`: its lists, the
 * verdict badges of a job's live figures, the process tree's order, and
 * the filtered, sorted list of jobs a view shows.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "top/top.h"

void top_strcpy(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

void top_model_init(struct top_model *m)
{
	memset(m, 0, sizeof(*m));
	m->at_ms = NAN;
	top_job_init(&m->job);
}

void top_model_release(struct top_model *m)
{
	free(m->jobs);
	free(m->procs);
	free(m->gpus);
	free(m->metrics);
	top_model_init(m);
}

void top_model_clear(struct top_model *m)
{
	m->njobs = m->nprocs = m->ngpus = m->nmetrics = 0;
	m->has_job = false;
	m->status[0] = '\0';
	top_job_init(&m->job);
}

/* One more entry of size sz in *arr (grown by doubling), zeroed. */
static void *grow(void **arr, size_t *n, size_t *alloc, size_t sz)
{
	char *p;

	if (*n == *alloc) {
		size_t na = *alloc ? *alloc * 2 : 16;
		void *q = realloc(*arr, na * sz);

		if (!q)
			return NULL;
		*arr = q;
		*alloc = na;
	}
	p = (char *)*arr + (*n)++ * sz;
	memset(p, 0, sz);
	return p;
}

void top_job_init(struct top_job *j)
{
	memset(j, 0, sizeof(*j));
	j->start_ms = j->end_ms = NAN;
	j->reserved_cpus = j->cpu_cores = j->cpu_eff_pct = j->cpu_wait_cores = NAN;
	j->reserved_mem_bytes = j->rss_bytes = j->mem_eff_pct = NAN;
	j->reserved_gpus = j->gpus_used = j->gpu_util_pct = NAN;
	j->processes = NAN;
}

struct top_job *top_model_add_job(struct top_model *m)
{
	struct top_job *j = grow((void **)&m->jobs, &m->njobs, &m->jobs_alloc, sizeof(*j));

	if (j)
		top_job_init(j);
	return j;
}

struct top_proc *top_model_add_proc(struct top_model *m)
{
	struct top_proc *p = grow((void **)&m->procs, &m->nprocs, &m->procs_alloc, sizeof(*p));

	if (p)
		p->cpu_pct = p->rss_bytes = NAN;
	return p;
}

struct top_gpu *top_model_add_gpu(struct top_model *m)
{
	struct top_gpu *g = grow((void **)&m->gpus, &m->ngpus, &m->gpus_alloc, sizeof(*g));

	if (g)
		g->util_pct = g->mem_used_bytes = g->mem_total_bytes = g->power_w =
		    g->job_util_pct = g->job_mem_bytes = NAN;
	return g;
}

struct top_metric *top_model_add_metric(struct top_model *m)
{
	struct top_metric *t =
	    grow((void **)&m->metrics, &m->nmetrics, &m->metrics_alloc, sizeof(*t));

	if (t)
		t->value = NAN;
	return t;
}

static void badge(struct top_job *j, const char *b)
{
	size_t len = strlen(j->badges);

	snprintf(j->badges + len, sizeof(j->badges) - len, "%s%s", len ? " " : "", b);
}

/*
 * Live verdicts, the report's (analysis/verdicts.h) in short: a job whose
 * threads waited for CPUs other work held (a tenth of a core or more, and a
 * tenth of what it ran: the report's cpu_contended rule for its own wait),
 * using under half of its cores (not said when it waited: the CPUs were
 * not free), more than it reserved, memory within 10% of its reservation,
 * reserved GPUs it does not use or keeps idle.
 */
void top_job_badges(struct top_job *j)
{
	bool waits = !isnan(j->cpu_wait_cores) && j->cpu_wait_cores >= 0.1 &&
		     j->cpu_wait_cores >= 0.1 * (isnan(j->cpu_cores) ? 0 : j->cpu_cores);

	j->badges[0] = '\0';
	if (waits)
		badge(j, "CPU-WAIT");
	if (!isnan(j->cpu_eff_pct)) {
		if (j->cpu_eff_pct < 50 && !waits)
			badge(j, "CPU-LOW");
		else if (j->cpu_eff_pct > 110)
			badge(j, "CPU-OVER");
	}
	if (!isnan(j->mem_eff_pct) && j->mem_eff_pct >= 90)
		badge(j, "MEM-NEAR");
	else if (!isnan(j->mem_eff_pct) && j->mem_eff_pct < 25)
		badge(j, "MEM-LOW");
	if (!isnan(j->reserved_gpus) && j->reserved_gpus > 0) {
		if (!isnan(j->gpus_used) && j->gpus_used < j->reserved_gpus)
			badge(j, "GPU-UNUSED");
		else if (!isnan(j->gpu_util_pct) && j->gpu_util_pct < 5)
			badge(j, "GPU-IDLE");
	}
}

/* ---- the process tree ---- */

static int by_node_pid(const void *a, const void *b)
{
	const struct top_proc *x = a, *y = b;
	int c = strcmp(x->node, y->node);

	return c ? c : (x->pid > y->pid) - (x->pid < y->pid);
}

/* children by (node, ppid, pid): a parent's children are one run */
static int by_node_ppid(const void *a, const void *b)
{
	const struct top_proc *x = a, *y = b;
	int c = strcmp(x->node, y->node);

	if (c)
		return c;
	if (x->ppid != y->ppid)
		return (x->ppid > y->ppid) - (x->ppid < y->ppid);
	return (x->pid > y->pid) - (x->pid < y->pid);
}

struct tree {
	const struct top_proc *by_pid, *by_ppid; /* two sorted copies */
	size_t n;
	bool *done; /* by position in by_pid */
	struct top_proc *out;
	size_t nout;
};

static bool has_parent(const struct tree *t, const struct top_proc *c)
{
	struct top_proc key;

	key = *c;
	key.pid = c->ppid;
	return c->ppid != c->pid &&
	       bsearch(&key, t->by_pid, t->n, sizeof(key), by_node_pid) != NULL;
}

/* Appends the process at k of by_pid and its subtree, depth first, by pid. */
static void place(struct tree *t, size_t k, int depth)
{
	const struct top_proc *p = &t->by_pid[k];
	size_t lo = 0, hi = t->n;

	if (t->done[k] || depth > 64)
		return;
	t->done[k] = true;
	t->out[t->nout] = *p;
	t->out[t->nout++].depth = depth;
	/* the first child: the lowest (node, ppid == p->pid) in by_ppid */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct top_proc *q = &t->by_ppid[mid];
		int c = strcmp(q->node, p->node);

		if (c < 0 || (c == 0 && q->ppid < p->pid))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < t->n && t->by_ppid[lo].ppid == p->pid &&
	       strcmp(t->by_ppid[lo].node, p->node) == 0;
	     lo++) {
		const struct top_proc *c =
		    bsearch(&t->by_ppid[lo], t->by_pid, t->n, sizeof(*c), by_node_pid);

		if (c && c != p)
			place(t, (size_t)(c - t->by_pid), depth + 1);
	}
}

void top_model_tree(struct top_model *m)
{
	struct top_proc *a, *b;
	struct tree t = {0};

	if (m->nprocs < 2) {
		if (m->nprocs)
			m->procs[0].depth = 0;
		return;
	}
	a = malloc(m->nprocs * sizeof(*a));
	b = malloc(m->nprocs * sizeof(*b));
	t.done = calloc(m->nprocs, sizeof(*t.done));
	if (!a || !b || !t.done)
		goto out_free;
	memcpy(a, m->procs, m->nprocs * sizeof(*a));
	memcpy(b, m->procs, m->nprocs * sizeof(*b));
	qsort(a, m->nprocs, sizeof(*a), by_node_pid);
	qsort(b, m->nprocs, sizeof(*b), by_node_ppid);
	t.by_pid = a;
	t.by_ppid = b;
	t.n = m->nprocs;
	t.out = m->procs;
	for (size_t k = 0; k < t.n; k++)
		if (!has_parent(&t, &a[k]))
			place(&t, k, 0);
	for (size_t k = 0; k < t.n; k++) /* cycles: what no root reached */
		if (!t.done[k])
			place(&t, k, 0);
out_free:
	free(a);
	free(b);
	free(t.done);
}

/* ---- the jobs a view shows ---- */

const char *top_sort_name(enum top_sort s)
{
	static const char *const names[TOP_SORT__COUNT] = {"cpu", "mem", "eff",
							   "gpu", "key", "user"};

	return s < TOP_SORT__COUNT ? names[s] : "?";
}

static bool contains(const char *hay, const char *needle)
{
	return strcasestr(hay, needle) != NULL;
}

static bool shown(const struct top_job *j, const struct top_view *v)
{
	if (v->user[0] && strcmp(j->user, v->user) != 0)
		return false;
	if (v->search[0] && !contains(j->key, v->search) && !contains(j->name, v->search) &&
	    !contains(j->user, v->search) && !contains(j->command, v->search))
		return false;
	return true;
}

static double sort_value(const struct top_job *j, enum top_sort s)
{
	switch (s) {
	case TOP_SORT_CPU:
		return j->cpu_cores;
	case TOP_SORT_MEM:
		return j->rss_bytes;
	case TOP_SORT_EFF:
		return j->cpu_eff_pct;
	case TOP_SORT_GPU:
		return j->gpu_util_pct;
	default:
		return NAN;
	}
}

static const struct top_model *sort_m;
static const struct top_view *sort_v;

/* Missing values last whatever the direction; ties by key, so the order is stable. */
static int cmp_jobs(const void *a, const void *b)
{
	const struct top_job *x = &sort_m->jobs[*(const size_t *)a];
	const struct top_job *y = &sort_m->jobs[*(const size_t *)b];
	enum top_sort s = sort_v->sort;
	int c = 0;

	if (s == TOP_SORT_KEY || s == TOP_SORT_USER) {
		c = strcmp(s == TOP_SORT_KEY ? x->key : x->user,
			   s == TOP_SORT_KEY ? y->key : y->user);
		if (!sort_v->ascending)
			c = -c;
	} else {
		double p = sort_value(x, s), q = sort_value(y, s);

		if (isnan(p) != isnan(q))
			return isnan(p) ? 1 : -1;
		if (!isnan(p) && p != q)
			c = (p < q) == sort_v->ascending ? -1 : 1;
	}
	return c ? c : strcmp(x->key, y->key);
}

size_t top_view_jobs(const struct top_model *m, const struct top_view *v, size_t *idx)
{
	size_t n = 0;

	for (size_t k = 0; k < m->njobs; k++)
		if (shown(&m->jobs[k], v))
			idx[n++] = k;
	sort_m = m;
	sort_v = v;
	qsort(idx, n, sizeof(*idx), cmp_jobs);
	return n;
}

void top_view_init(struct top_view *v)
{
	memset(v, 0, sizeof(*v));
	v->screen = TOP_SCREEN_JOBS;
	v->sort = TOP_SORT_CPU;
}

void top_view_follow(const struct top_model *m, struct top_view *v)
{
	size_t *idx, n;

	if (!v->follow || v->screen != TOP_SCREEN_JOBS || !v->open_key[0])
		return;
	idx = malloc((m->njobs + 1) * sizeof(*idx));
	if (!idx)
		return;
	n = top_view_jobs(m, v, idx);
	for (size_t k = 0; k < n; k++)
		if (strcmp(m->jobs[idx[k]].key, v->open_key) == 0)
			v->sel = k;
	free(idx);
}
