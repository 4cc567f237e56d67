/*
 * test_store_cuda.c - the CUDA tables of the store (schema 9): a process's
 * snapshot written and read back value for value (a 4,000-byte name, quotes
 * and UTF-8, counts near 2^62 and above 2^63), replaced whole, kept or
 * dropped with the tick it was written in, merged when a name comes twice,
 * an older store read as empty and upgraded, and snapshots streamed from an
 * agent's store to a head's (export, ingest: newest wins, nothing twice;
 * many processes of two jobs in one batch, each its own).
 *
 * Every test runs on SQLite; with JOBSCOPE_TEST_PG_URL (a PostgreSQL
 * database: tests/integration/test_store_cuda_pg.py makes one) the same
 * tests run again on it, each with job ids of its own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"
#include "store_fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "store/rowset.h"
#include "store/store.h"
#include "store/jobdata.h"
#include "store/reader.h"
#include "store/write.h"
#include "store_schema16.h"

static struct cuda_stat *add(struct cuda_proc *p, enum cuda_stat_kind kind, const char *name,
			     uint64_t count, uint64_t total, uint64_t min, uint64_t max, double m2)
{
	struct cuda_stat *s = cuda_proc_add(p, kind, name);

	assert_non_null(s);
	s->count = count;
	s->total_ns = total;
	s->min_ns = min;
	s->max_ns = max;
	s->m2_ns2 = m2;
	return s;
}

static char long_name[4001];
static const char quoted_name[] =
    "void at::native::f<'a', \"b\">(float*) \xc3\xbc \xe6\x97\xa5\xe6\x9c\xac \\ ; --";

static void fill_proc(struct cuda_proc *p)
{
	struct cuda_stat *s;

	memset(long_name, 'k', 4000);
	memcpy(long_name, "void k", 6);
	long_name[3999] = 'Z';
	long_name[4000] = '\0';
	cuda_proc_init(p);
	p->pid = 4242;
	p->state = CUDA_PROC_OK;
	p->cupti_version = 18;
	p->contexts = 2;
	p->dropped = 7;
	p->seq = 5;
	p->final = true;
	add(p, CUDA_STAT_API, "cudaMalloc", 3, 220183283, 19070, 220135021, 3.2297e16);
	add(p, CUDA_STAT_KERNEL, long_name, 10, 1000, 90, 110, 400.5);
	add(p, CUDA_STAT_KERNEL, quoted_name, 1, 5, 5, 5, 0);
	s = add(p, CUDA_STAT_MEMCPY, "[CUDA memcpy HtoD]", ((uint64_t)1 << 62) + 3,
		((uint64_t)1 << 62) + 11, 1, ((uint64_t)1 << 62) - 1, 1e30);
	s->bytes = ((uint64_t)1 << 62) + 12345;
	s->min_bytes = 4;
	s->max_bytes = ((uint64_t)1 << 62) - 7;
	s->m2_bytes2 = 2.5e36;
	s = add(p, CUDA_STAT_MEMSET, "[CUDA memset]", 2, UINT64_MAX, 3, UINT64_MAX - 3, 8);
	s->bytes = UINT64_MAX - 1; /* above 2^63: kept bit for bit */
	s->min_bytes = 1;
	s->max_bytes = UINT64_MAX - 2;
	s->m2_bytes2 = 0.25;
}

static const struct cuda_stat *find(const struct cuda_proc *p, enum cuda_stat_kind kind,
				    const char *name)
{
	for (size_t i = 0; i < p->nstats; i++)
		if (p->stats[i].kind == kind && strcmp(p->stats[i].name, name) == 0)
			return &p->stats[i];
	return NULL;
}

static void assert_same_stat(const struct cuda_stat *a, const struct cuda_stat *b)
{
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->kind, b->kind);
	assert_string_equal(a->name, b->name);
	assert_true(a->count == b->count);
	assert_true(a->total_ns == b->total_ns);
	assert_true(a->min_ns == b->min_ns);
	assert_true(a->max_ns == b->max_ns);
	assert_true(a->m2_ns2 == b->m2_ns2);
	assert_true(a->bytes == b->bytes);
	assert_true(a->min_bytes == b->min_bytes);
	assert_true(a->max_bytes == b->max_bytes);
	assert_true(a->m2_bytes2 == b->m2_bytes2);
}

static void free_procs(struct cuda_proc *procs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cuda_proc_release(&procs[i]);
	free(procs);
}

static void test_round_trip(void **state)
{
	struct fixture *fx = *state;
	int64_t job = fx->job_base + 1;
	struct cuda_proc p, busy, note, *got;
	struct store *st = open_store(fx);
	size_t n;

	fill_proc(&p);
	cuda_proc_init(&busy);
	busy.pid = 17;
	busy.state = CUDA_PROC_BUSY;
	snprintf(busy.message, sizeof(busy.message), "CUPTI is held by another subscriber (nsys?)");
	busy.seq = 1;
	cuda_proc_init(&note);
	note.pid = 0;
	note.state = CUDA_PROC_OFF;
	snprintf(note.message, sizeof(note.message),
		 "--cuda was asked but CUDA_INJECTION64_PATH was already set by another profiler");
	/* written out of pid order */
	assert_int_equal(store_put_cuda_proc(st, job, &p, 1700000000123), 0);
	assert_int_equal(store_put_cuda_proc(st, job, &busy, 1700000000124), 0);
	assert_int_equal(store_put_cuda_proc(st, job, &note, 1700000000125), 0);
	assert_int_equal(store_put_cuda_proc(st, job + 1, &busy, 1700000000126), 0);
	store_close(st);

	st = open_store(fx);
	assert_int_equal(store_get_cuda_procs(st, job, &got, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(got[0].pid, 0);
	assert_int_equal(got[0].state, CUDA_PROC_OFF);
	assert_string_equal(got[0].message, note.message);
	assert_int_equal(got[0].nstats, 0);
	assert_int_equal(got[1].pid, 17);
	assert_int_equal(got[1].state, CUDA_PROC_BUSY);
	assert_string_equal(got[1].message, busy.message);
	assert_int_equal(got[1].cupti_version, 0);
	assert_false(got[1].final);
	assert_int_equal(got[2].pid, 4242);
	assert_int_equal(got[2].state, CUDA_PROC_OK);
	assert_string_equal(got[2].message, "");
	assert_int_equal(got[2].cupti_version, 18);
	assert_int_equal(got[2].contexts, 2);
	assert_int_equal(got[2].dropped, 7);
	assert_int_equal(got[2].seq, 5);
	assert_true(got[2].final);
	assert_int_equal(got[2].nstats, p.nstats);
	for (size_t i = 0; i < p.nstats; i++)
		assert_same_stat(find(&got[2], p.stats[i].kind, p.stats[i].name), &p.stats[i]);
	assert_int_equal(strlen(find(&got[2], CUDA_STAT_KERNEL, long_name)->name), 4000);
	free_procs(got, n);

	assert_int_equal(store_get_cuda_procs(st, job + 1, &got, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(got[0].pid, 17);
	free_procs(got, n);
	assert_int_equal(store_get_cuda_procs(st, job + 2, &got, &n), 0);
	assert_int_equal(n, 0);
	assert_null(got);
	store_close(st);
	cuda_proc_release(&p);
}

/* A newer snapshot replaces the whole of the older one: row and stats. */
static void test_replace(void **state)
{
	struct fixture *fx = *state;
	int64_t job = fx->job_base + 1;
	struct cuda_proc p, *got;
	struct store *st = open_store(fx);
	size_t n;

	fill_proc(&p);
	assert_int_equal(store_put_cuda_proc(st, job, &p, 1000), 0);
	cuda_proc_release(&p);
	cuda_proc_init(&p);
	p.pid = 4242;
	p.state = CUDA_PROC_ERROR;
	snprintf(p.message, sizeof(p.message), "cuptiActivityEnable: CUPTI_ERROR_NOT_INITIALIZED");
	p.seq = 6;
	add(&p, CUDA_STAT_API, "cudaFree", 1, 9, 9, 9, 0);
	assert_int_equal(store_put_cuda_proc(st, job, &p, 2000), 0);

	assert_int_equal(store_get_cuda_procs(st, job, &got, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(got[0].state, CUDA_PROC_ERROR);
	assert_string_equal(got[0].message, p.message);
	assert_int_equal(got[0].seq, 6);
	assert_int_equal(got[0].dropped, 0);
	assert_false(got[0].final);
	assert_int_equal(got[0].nstats, 1);
	assert_same_stat(&got[0].stats[0], &p.stats[0]);
	free_procs(got, n);

	/* and with none: the stats go, the row stays */
	cuda_proc_release(&p);
	cuda_proc_init(&p);
	p.pid = 4242;
	p.seq = 7;
	assert_int_equal(store_put_cuda_proc(st, job, &p, 3000), 0);
	assert_int_equal(store_get_cuda_procs(st, job, &got, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(got[0].seq, 7);
	assert_int_equal(got[0].nstats, 0);
	free_procs(got, n);
	store_close(st);
}

/* In a tick it is the tick's: rolled back with it, committed with it. */
static void test_in_tick(void **state)
{
	struct fixture *fx = *state;
	int64_t job = fx->job_base + 1;
	struct cuda_proc p, *got;
	struct store *st = open_store(fx);
	size_t n;

	fill_proc(&p);
	assert_int_equal(store_tick_begin(st), 0);
	assert_int_equal(store_put_cuda_proc(st, job, &p, 1000), 0);
	store_tick_abort(st);
	assert_int_equal(store_get_cuda_procs(st, job, &got, &n), 0);
	assert_int_equal(n, 0);

	assert_int_equal(store_tick_begin(st), 0);
	assert_int_equal(store_put_cuda_proc(st, job, &p, 1000), 0);
	assert_int_equal(store_tick_commit(st), 0);
	assert_int_equal(store_get_cuda_procs(st, job, &got, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(got[0].nstats, 5);
	free_procs(got, n);
	store_close(st);
	cuda_proc_release(&p);
}

/* A kind and name given twice is one row: the two merged. */
static void test_duplicate_merged(void **state)
{
	struct fixture *fx = *state;
	int64_t job = fx->job_base + 1;
	struct cuda_proc p, *got;
	struct store *st = open_store(fx);
	size_t n;

	cuda_proc_init(&p);
	p.pid = 9;
	add(&p, CUDA_STAT_KERNEL, "k", 2, 30, 10, 20, 50);
	add(&p, CUDA_STAT_API, "k", 1, 1, 1, 1, 0);
	add(&p, CUDA_STAT_KERNEL, "k", 1, 40, 40, 40, 0);
	assert_int_equal(store_put_cuda_proc(st, job, &p, 1), 0);
	assert_int_equal(store_get_cuda_procs(st, job, &got, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(got[0].nstats, 2);
	{
		const struct cuda_stat *k = find(&got[0], CUDA_STAT_KERNEL, "k");

		assert_non_null(k);
		assert_int_equal(k->count, 3);
		assert_int_equal(k->total_ns, 70);
		assert_int_equal(k->min_ns, 10);
		assert_int_equal(k->max_ns, 40);
		/* 10, 20, 40: mean 70/3, sum of squared deviations 1400/3 */
		assert_float_equal(k->m2_ns2, 1400.0 / 3, 1e-9);
	}
	free_procs(got, n);
	p.pid = -1;
	assert_int_equal(store_put_cuda_proc(st, job, &p, 1), -EINVAL);
	store_close(st);
	cuda_proc_release(&p);
}

/* Every process of a job in two stores is the same, value for value. */
static void assert_same_procs(struct store *a, int64_t job_a, struct store *b, int64_t job_b,
			      size_t want)
{
	struct cuda_proc *pa, *pb;
	size_t na, nb;

	assert_int_equal(store_get_cuda_procs(a, job_a, &pa, &na), 0);
	assert_int_equal(store_get_cuda_procs(b, job_b, &pb, &nb), 0);
	assert_int_equal(na, want);
	assert_int_equal(nb, want);
	for (size_t i = 0; i < na; i++) {
		assert_int_equal(pa[i].pid, pb[i].pid);
		assert_int_equal(pa[i].state, pb[i].state);
		assert_string_equal(pa[i].message, pb[i].message);
		assert_int_equal(pa[i].cupti_version, pb[i].cupti_version);
		assert_int_equal(pa[i].contexts, pb[i].contexts);
		assert_true(pa[i].dropped == pb[i].dropped);
		assert_true(pa[i].seq == pb[i].seq);
		assert_int_equal(pa[i].final, pb[i].final);
		assert_int_equal(pa[i].nstats, pb[i].nstats);
		for (size_t k = 0; k < pa[i].nstats; k++)
			assert_same_stat(&pa[i].stats[k], &pb[i].stats[k]);
	}
	free_procs(pa, na);
	free_procs(pb, nb);
}

/*
 * An agent's snapshots streamed to a head (export.c, ingest.c): each row
 * of the batch's range replaces the process's tables under the head's job;
 * a replaced snapshot takes a new seq, so the next batch carries it alone;
 * a batch sent again changes nothing.
 */
static void test_streamed_to_a_head(void **state)
{
	struct fixture *fx = *state;
	char agent_path[160], host[32];
	struct store *agent, *head = open_store(fx);
	struct job_record job;
	struct cuda_proc p, busy;
	int64_t node, head_node, head_job, start, first_to, to, acked;

	snprintf(agent_path, sizeof(agent_path), "%s/agent.db", fx->dir);
	snprintf(host, sizeof(host), "node-%lld", (long long)fx->job_base);
	assert_int_equal(store_open(agent_path, STORE_CREATE, &agent), 0);
	assert_int_equal(store_node(agent, host, 4, 1 << 30, 1, &node), 0);
	memset(&job, 0, sizeof(job));
	job.node_id = node;
	snprintf(job.scheduler, sizeof(job.scheduler), "slurm");
	snprintf(job.job_id, sizeof(job.job_id), "7101");
	job.start_ms = 1700000000000;
	assert_int_equal(store_job_begin(agent, &job), 0);
	fill_proc(&p);
	cuda_proc_init(&busy);
	busy.pid = 17;
	busy.state = CUDA_PROC_OFF;
	assert_int_equal(store_put_cuda_proc(agent, job.id, &p, 1700000001000), 0);
	assert_int_equal(store_put_cuda_proc(agent, job.id, &busy, 1700000001001), 0);

	acked = stream(agent, head, host, 0, &first_to);
	assert_int_equal(acked, first_to);
	assert_int_equal(store_node(head, host, 4, 1 << 30, 1, &head_node), 0);
	assert_int_equal(
	    store_find_job(head, head_node, "slurm", "7101", job.start_ms, &head_job, &start), 0);
	assert_same_procs(agent, job.id, head, head_job, 2);

	/* a newer snapshot of one process: the next batch holds it and nothing else */
	p.stats[0].count++;
	p.stats[0].total_ns += 1000;
	p.seq = 6;
	p.nstats--; /* a name gone (a snapshot replaces the whole set) */
	assert_int_equal(store_put_cuda_proc(agent, job.id, &p, 1700000002000), 0);
	p.nstats++;
	acked = stream(agent, head, host, acked, &to);
	assert_int_equal(to, first_to + 1);
	assert_int_equal(acked, to);
	assert_same_procs(agent, job.id, head, head_job, 2);

	/* the first batch again (its answer lost): the head keeps the newer snapshot */
	assert_int_equal(stream(agent, head, host, 0, &to), acked);
	assert_same_procs(agent, job.id, head, head_job, 2);
	store_close(agent);
	store_close(head);
	cuda_proc_release(&p);
}

/*
 * Many processes' snapshots in one batch, of two jobs with the same pids,
 * put in no order: each lands on its own process, whole (the head finds a
 * snapshot's rows in the batch by its job and pid).
 */
static void test_many_processes_streamed(void **state)
{
	struct fixture *fx = *state;
	char agent_path[160], host[32];
	struct store *agent, *head = open_store(fx);
	struct job_record job[2];
	int64_t node, head_node, head_job, start, to;
	enum { NPROCS = 40 };

	snprintf(agent_path, sizeof(agent_path), "%s/agent.db", fx->dir);
	snprintf(host, sizeof(host), "node-%lld", (long long)fx->job_base);
	assert_int_equal(store_open(agent_path, STORE_CREATE, &agent), 0);
	assert_int_equal(store_node(agent, host, 4, 1 << 30, 1, &node), 0);
	for (int j = 0; j < 2; j++) {
		memset(&job[j], 0, sizeof(job[j]));
		job[j].node_id = node;
		snprintf(job[j].scheduler, sizeof(job[j].scheduler), "slurm");
		snprintf(job[j].job_id, sizeof(job[j].job_id), "72%02d", j);
		job[j].start_ms = 1700000000000;
		assert_int_equal(store_job_begin(agent, &job[j]), 0);
	}
	for (int i = 0; i < 2 * NPROCS; i++) {
		/* pids 100..139 in each job, alternating jobs, pids from the top down */
		int j = i % 2, pid = 139 - i / 2;
		struct cuda_proc p;
		char name[32];

		cuda_proc_init(&p);
		p.pid = pid;
		p.state = CUDA_PROC_OK;
		p.seq = (uint64_t)(1000 * j + pid);
		for (int k = 0; k <= pid % 7; k++) {
			snprintf(name, sizeof(name), "kernel_%d", (pid * 3 + k) % 11);
			add(&p, CUDA_STAT_KERNEL, name, (uint64_t)(j * 100000 + pid * 10 + k),
			    (uint64_t)(pid * 1000 + k), (uint64_t)k, (uint64_t)(pid + k), j + 0.5);
		}
		assert_int_equal(store_put_cuda_proc(agent, job[j].id, &p, 1700000001000 + i), 0);
		cuda_proc_release(&p);
	}
	stream(agent, head, host, 0, &to);
	assert_int_equal(store_node(head, host, 4, 1 << 30, 1, &head_node), 0);
	for (int j = 0; j < 2; j++) {
		assert_int_equal(store_find_job(head, head_node, "slurm", job[j].job_id,
						job[j].start_ms, &head_job, &start),
				 0);
		assert_same_procs(agent, job[j].id, head, head_job, NPROCS);
	}
	store_close(agent);
	store_close(head);
}

/* A schema 8 store: read as having no CUDA tables, upgraded when opened to write. */
static void test_older_schema(void **state)
{
	struct fixture *fx = *state;
	struct cuda_proc p, *got = (struct cuda_proc *)1;
	struct store *st = open_store(fx);
	size_t n = 99;

	store_close(st);
	write_sql(
	    fx, "DROP TABLE cuda_stats; DROP TABLE cuda_procs; DROP TABLE app_samples;"
		" DROP INDEX marks_job_ts; DROP TABLE energy_samples; DROP TABLE proc_libs;"
		" ALTER TABLE sessions DROP COLUMN cuda;"
		" ALTER TABLE job_samples DROP COLUMN cpu_wait_ms;"
		" ALTER TABLE jobs DROP COLUMN sluid; ALTER TABLE sessions DROP COLUMN owner;"
		" ALTER TABLE procs DROP COLUMN container; ALTER TABLE jobs DROP COLUMN k8s_owner;"
		" ALTER TABLE jobs DROP COLUMN k8s_owner_label;" STORE_UNDO_SCHEMA16
		" PRAGMA user_version = 8");
	assert_int_equal(store_open(fx->path, STORE_READONLY, &st), 0);
	assert_int_equal(store_get_cuda_procs(st, 1, &got, &n), 0);
	assert_int_equal(n, 0);
	assert_null(got);
	cuda_proc_init(&p);
	p.pid = 1;
	assert_int_equal(store_put_cuda_proc(st, 1, &p, 1), -EPROTONOSUPPORT);
	store_close(st);

	st = open_store(fx);
	assert_int_equal(store_put_cuda_proc(st, 1, &p, 1), 0);
	assert_int_equal(store_get_cuda_procs(st, 1, &got, &n), 0);
	assert_int_equal(n, 1);
	free_procs(got, n);
	store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_replace, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_in_tick, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_duplicate_merged, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_older_schema, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_streamed_to_a_head, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_many_processes_streamed, setup, teardown),
	};
	const struct CMUnitTest pg_tests[] = {
	    cmocka_unit_test_setup_teardown(test_round_trip, setup_pg, teardown),
	    cmocka_unit_test_setup_teardown(test_replace, setup_pg, teardown),
	    cmocka_unit_test_setup_teardown(test_in_tick, setup_pg, teardown),
	    cmocka_unit_test_setup_teardown(test_duplicate_merged, setup_pg, teardown),
	    cmocka_unit_test_setup_teardown(test_streamed_to_a_head, setup_pg, teardown),
	    cmocka_unit_test_setup_teardown(test_many_processes_streamed, setup_pg, teardown),
	};
	int failed;

	/*
	 * job ids (and the streaming case's node name) of their own in a
	 * database that a run before may have written to, in the same second too
	 */
	next_job_base = ((int64_t)time(NULL) * 100000 + getpid() % 100000) * 1000;
	failed = cmocka_run_group_tests_name("sqlite", tests, NULL, NULL);

	if (getenv("JOBSCOPE_TEST_PG_URL"))
		failed += cmocka_run_group_tests_name("postgresql", pg_tests, NULL, NULL);
	return failed;
}
