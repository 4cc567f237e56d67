/*
 * cudatables.c - a job's CUDA tables (cudatables.h): the processes' rows
 * merged by kind and name into the job's, each table sorted as Nsight
 * sorts it, the shares and rates derived, and the notes a reader needs.
 */
#include "analysis/cudatables.h"
#include "store/jobdata.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum cuda_table_id cuda_table_of(enum cuda_stat_kind kind)
{
	switch (kind) {
	case CUDA_STAT_API:
		return CUDA_TABLE_API;
	case CUDA_STAT_KERNEL:
		return CUDA_TABLE_KERNEL;
	default:
		return CUDA_TABLE_MEM;
	}
}

void cuda_tables_init(struct cuda_tables *t)
{
	memset(t, 0, sizeof(*t));
	t->wall_ns = NAN;
}

static void set_release(struct cuda_table_set *set)
{
	for (int i = 0; i < CUDA_TABLES; i++) {
		free(set->t[i].rows);
		free(set->t[i].by_size);
	}
	memset(set, 0, sizeof(*set));
}

void cuda_tables_release(struct cuda_tables *t)
{
	set_release(&t->job);
	for (size_t i = 0; i < t->nprocs; i++) {
		if (t->sets)
			set_release(&t->sets[i]);
		cuda_proc_release(&t->procs[i]);
	}
	if (t->job_proc)
		cuda_proc_release((struct cuda_proc *)t->job_proc);
	free((void *)t->job_proc);
	free(t->procs);
	free(t->sets);
	free(t->by_time);
	free(t->notes);
	cuda_tables_init(t);
}

static int stat_cmp(const struct cuda_stat *a, const struct cuda_stat *b)
{
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int by_kind_name(const void *pa, const void *pb)
{
	return stat_cmp(*(const struct cuda_stat *const *)pa, *(const struct cuda_stat *const *)pb);
}

static int row_by_time(const void *pa, const void *pb)
{
	const struct cuda_table_row *a = pa, *b = pb;

	if (a->s.total_ns != b->s.total_ns)
		return a->s.total_ns > b->s.total_ns ? -1 : 1;
	return stat_cmp(&a->s, &b->s);
}

static int row_by_size(const void *pa, const void *pb, void *arg)
{
	const struct cuda_table_row *rows = arg;
	const struct cuda_table_row *a = &rows[*(const size_t *)pa];
	const struct cuda_table_row *b = &rows[*(const size_t *)pb];

	if (a->s.bytes != b->s.bytes)
		return a->s.bytes > b->s.bytes ? -1 : 1;
	return stat_cmp(&a->s, &b->s);
}

static double share_pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : NAN;
}

static void derive(struct cuda_table_row *r, uint64_t table_ns, double wall_ns)
{
	const struct cuda_stat *s = &r->s;
	bool mem = s->kind == CUDA_STAT_MEMCPY || s->kind == CUDA_STAT_MEMSET;

	r->time_pct = share_pct(s->total_ns, table_ns);
	r->wall_pct = s->kind == CUDA_STAT_KERNEL && wall_ns > 0
			  ? 100.0 * (double)s->total_ns / wall_ns
			  : NAN;
	r->avg_ns = s->count ? (double)s->total_ns / (double)s->count : NAN;
	r->stddev_ns = s->count ? cuda_stat_stddev_ns(s) : NAN;
	r->avg_bytes = mem && s->count ? (double)s->bytes / (double)s->count : NAN;
	r->stddev_bytes = mem && s->count ? cuda_stat_stddev_bytes(s) : NAN;
	/* bytes per ns is GB/s (1e9 bytes per 1e9 ns) */
	r->gb_per_s = mem && s->total_ns ? (double)s->bytes / (double)s->total_ns : NAN;
}

/*
 * One set of tables from stats (pointers, any order, any number of
 * processes): those of one kind and name merged, sorted, derived.
 */
static int set_build(struct cuda_table_set *set, const struct cuda_stat **stats, size_t n,
		     double wall_ns)
{
	if (n > 1) /* stats is NULL for none, which qsort may not be given */
		qsort(stats, n, sizeof(*stats), by_kind_name);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n;) {
			struct cuda_table *tab = &set->t[cuda_table_of(stats[i]->kind)];
			struct cuda_stat s = *stats[i];

			for (i++; i < n && stat_cmp(stats[i - 1], stats[i]) == 0; i++)
				cuda_stat_merge(&s, stats[i]);
			if (pass == 0) {
				tab->nrows++;
				continue;
			}
			tab->rows[tab->nrows++].s = s;
			tab->total_ns += s.total_ns;
			set->total_ns += s.total_ns;
		}
		if (pass == 1)
			break;
		for (int k = 0; k < CUDA_TABLES; k++) {
			struct cuda_table *tab = &set->t[k];

			if (tab->nrows && !(tab->rows = calloc(tab->nrows, sizeof(*tab->rows))))
				return -ENOMEM;
			tab->nrows = 0;
		}
	}
	for (int k = 0; k < CUDA_TABLES; k++) {
		struct cuda_table *tab = &set->t[k];

		for (size_t i = 0; i < tab->nrows; i++)
			derive(&tab->rows[i], tab->total_ns, wall_ns);
		if (tab->nrows)
			qsort(tab->rows, tab->nrows, sizeof(*tab->rows), row_by_time);
	}
	{
		struct cuda_table *mem = &set->t[CUDA_TABLE_MEM];

		if (!mem->nrows)
			return 0;
		mem->by_size = malloc(mem->nrows * sizeof(*mem->by_size));
		if (!mem->by_size)
			return -ENOMEM;
		for (size_t i = 0; i < mem->nrows; i++)
			mem->by_size[i] = i;
		qsort_r(mem->by_size, mem->nrows, sizeof(*mem->by_size), row_by_size, mem->rows);
	}
	return 0;
}

static int by_pid(const void *pa, const void *pb)
{
	const struct cuda_proc *a = pa, *b = pb;

	return (a->pid > b->pid) - (a->pid < b->pid);
}

static int set_by_time(const void *pa, const void *pb, void *arg)
{
	const struct cuda_table_set *sets = arg;
	const struct cuda_table_set *a = &sets[*(const size_t *)pa];
	const struct cuda_table_set *b = &sets[*(const size_t *)pb];

	if (a->total_ns != b->total_ns)
		return a->total_ns > b->total_ns ? -1 : 1;
	return (a->proc->pid > b->proc->pid) - (a->proc->pid < b->proc->pid);
}

static int add_note(struct cuda_tables *t, size_t max, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int add_note(struct cuda_tables *t, size_t max, const char *fmt, ...)
{
	va_list ap;

	if (t->nnotes >= max)
		return 0;
	va_start(ap, fmt);
	vsnprintf(t->notes[t->nnotes++], CUDA_NOTE_MAX, fmt, ap);
	va_end(ap);
	return 0;
}

static void notes_build(struct cuda_tables *t, size_t max)
{
	const struct cuda_proc *j = t->job_proc;

	if (j && (j->message[0] || j->state != CUDA_PROC_OK))
		add_note(t, max, "%s", j->message[0] ? j->message : cuda_proc_state_name(j->state));
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct cuda_proc *p = &t->procs[i];

		if (p->state != CUDA_PROC_OK)
			add_note(t, max, "pid %d: %s", (int)p->pid,
				 p->message[0] ? p->message : cuda_proc_state_name(p->state));
		else if (p->final && p->nstats == 0 && p->contexts == 0)
			add_note(t, max, "pid %d: made no CUDA context: nothing to count",
				 (int)p->pid);
		if (p->dropped)
			add_note(t, max,
				 "pid %d: CUPTI dropped %llu records: the tables undercount",
				 (int)p->pid, (unsigned long long)p->dropped);
	}
}

int cuda_tables_build(struct cuda_tables *t, struct cuda_proc *procs, size_t nprocs,
		      int64_t wall_ms)
{
	const struct cuda_stat **all = NULL;
	size_t nall = 0, nnotes_max;
	int ret = -ENOMEM;

	cuda_tables_release(t);
	t->present = nprocs > 0;
	t->wall_ns = wall_ms > 0 ? (double)wall_ms * 1e6 : NAN;
	if (nprocs)
		qsort(procs, nprocs, sizeof(*procs), by_pid);
	t->procs = procs;
	t->nprocs = nprocs;
	/* pid 0 is the job's note, not a process: kept apart */
	if (nprocs && procs[0].pid == 0) {
		struct cuda_proc *j = malloc(sizeof(*j));

		if (!j)
			goto out_fail;
		cuda_proc_init(j);
		cuda_proc_move(j, &procs[0]);
		t->job_proc = j;
		memmove(&procs[0], &procs[1], (nprocs - 1) * sizeof(*procs));
		t->nprocs--;
	}
	for (size_t i = 0; i < t->nprocs; i++)
		nall += t->procs[i].nstats;
	if (t->nprocs) {
		t->sets = calloc(t->nprocs, sizeof(*t->sets));
		t->by_time = malloc(t->nprocs * sizeof(*t->by_time));
		if (!t->sets || !t->by_time)
			goto out_fail;
	}
	if (nall && !(all = malloc(nall * sizeof(*all))))
		goto out_fail;
	nall = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct cuda_proc *p = &t->procs[i];
		const struct cuda_stat **mine = all + nall;

		for (size_t k = 0; k < p->nstats; k++)
			all[nall++] = &p->stats[k];
		t->sets[i].proc = p;
		if (set_build(&t->sets[i], mine, p->nstats, t->wall_ns))
			goto out_fail;
		t->by_time[i] = i;
	}
	if (set_build(&t->job, all, nall, t->wall_ns))
		goto out_fail;
	if (t->nprocs)
		qsort_r(t->by_time, t->nprocs, sizeof(*t->by_time), set_by_time, t->sets);
	nnotes_max = 1 + 2 * t->nprocs;
	t->notes = calloc(nnotes_max, sizeof(*t->notes));
	if (!t->notes)
		goto out_fail;
	notes_build(t, nnotes_max);
	free(all);
	return 0;

out_fail:
	free(all);
	cuda_tables_release(t);
	return ret;
}

int cuda_tables_load(struct cuda_tables *t, struct store *st, int64_t job_id, int64_t wall_ms)
{
	struct cuda_proc *procs;
	size_t n;
	int ret;

	cuda_tables_release(t);
	ret = store_get_cuda_procs(st, job_id, &procs, &n);
	if (ret)
		return ret;
	return cuda_tables_build(t, procs, n, wall_ms);
}
