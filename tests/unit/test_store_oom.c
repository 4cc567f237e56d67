/*
 * test_store_oom.c - the store when SQLite runs out of memory: every
 * operation run with its 1st, 2nd, 3rd... allocation failed until it
 * succeeds (as SQLite's own malloc tests and curl's torture mode do).
 *
 * SQLite allocates through a counting allocator (SQLITE_CONFIG_MALLOC,
 * wrapping the default methods) that fails the Nth allocation.  Each failed
 * run must return an error, never 0 with rows missing; release everything
 * (ASan/LSan in the sanitized build, sqlite3_memory_used() back to where it
 * was after store_close); and leave the file intact: reopened without
 * faults it passes PRAGMA integrity_check and holds exactly the rows
 * committed before.  A run that succeeds must have written (or read)
 * exactly what it was asked to.
 *
 * The operations: creating a store; on an existing one, a tick (host, proc
 * and job samples), store_job_begin and store_job_update,
 * store_put_job_summary, store_replay_job and store_query_rows.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "store/store.h"
#include "store/reader.h"
#include "store/write.h"

/*
 * Which allocations fail: every one of the first OOM_EVERY, then about
 * OOM_SPREAD more spread evenly up to the last (creating a store makes
 * some 17,000: failing each takes minutes).  JOBSCOPE_OOM_EVERY=1 in the
 * environment fails every one.  OOM_MAX_RUNS bounds a loop that never
 * gets past its faults.
 */
#define OOM_EVERY    200
#define OOM_SPREAD   100
#define OOM_MAX_RUNS 100000

/* -------------------------------------------------------------- allocator */

static sqlite3_mem_methods real_mem;
static bool armed;	 /* counting (and failing) allocations */
static long alloc_count; /* allocations since oom_arm */
static long fail_at;	 /* the allocation to fail, 1-based; 0: none */
static bool fired;	 /* whether it was failed */

static bool oom_now(void)
{
	if (!armed)
		return false;
	alloc_count++;
	if (alloc_count != fail_at)
		return false;
	fired = true;
	return true;
}

static void *oom_malloc(int n)
{
	return oom_now() ? NULL : real_mem.xMalloc(n);
}

static void oom_free(void *p)
{
	real_mem.xFree(p);
}

static void *oom_realloc(void *p, int n)
{
	return oom_now() ? NULL : real_mem.xRealloc(p, n);
}

static int oom_size(void *p)
{
	return real_mem.xSize(p);
}

static int oom_roundup(int n)
{
	return real_mem.xRoundup(n);
}

static int oom_init(void *app)
{
	(void)app;
	return real_mem.xInit(real_mem.pAppData);
}

static void oom_shutdown(void *app)
{
	(void)app;
	real_mem.xShutdown(real_mem.pAppData);
}

static void oom_arm(long n)
{
	alloc_count = 0;
	fired = false;
	fail_at = n;
	armed = true;
}

static void oom_disarm(void)
{
	armed = false;
}

/* The allocation to fail after n, of an operation that makes total of them. */
static long oom_next(long n, long total)
{
	const char *every = getenv("JOBSCOPE_OOM_EVERY");
	long step = total / OOM_SPREAD;

	if (n < OOM_EVERY || step <= 1 || (every && strcmp(every, "1") == 0))
		return n + 1;
	return n + (step | 1); /* odd: the runs land on varied offsets */
}

/* Before SQLite's first use: it takes its allocator at sqlite3_initialize. */
static int group_setup(void **state)
{
	static const sqlite3_mem_methods oom_mem = {
	    oom_malloc, oom_free, oom_realloc, oom_size, oom_roundup, oom_init, oom_shutdown, NULL,
	};

	(void)state;
	if (sqlite3_shutdown() != SQLITE_OK ||
	    sqlite3_config(SQLITE_CONFIG_GETMALLOC, &real_mem) != SQLITE_OK ||
	    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 1) != SQLITE_OK ||
	    /* no lookaside: every small allocation goes through the allocator */
	    sqlite3_config(SQLITE_CONFIG_LOOKASIDE, 0, 0) != SQLITE_OK ||
	    sqlite3_config(SQLITE_CONFIG_MALLOC, &oom_mem) != SQLITE_OK ||
	    sqlite3_initialize() != SQLITE_OK)
		return -1;
	return 0;
}

/* ---------------------------------------------------------------- fixture */

struct fixture {
	char dir[64];
	char path[128];	       /* the store each run works on */
	char pristine[128];    /* the existing store, copied to path before each run */
	FILE *log;	       /* messages of the code under test */
	struct host_sample *h; /* a tick's host sample */
};

/* What the existing store holds (make_pristine). */
#define NTICKS	     3
#define NCPUS	     2
#define NDISKS	     1
#define NNETS	     2
#define JOB_ID	     "4242"
#define JOB_START_MS 1000000
#define SUMMARY_JSON "{\"verdict\":\"ok\"}"
#define NODE_ROW     1
#define JOB_ROW	     1
#define PROC_ROW     1

/* Row counts of every table an operation here writes or reads. */
struct counts {
	int64_t jobs, ended_jobs, procs, host, cpu, disk, net, proc_samples, job_samples, events,
	    summaries;
};

static const struct counts pristine_counts = {
    .jobs = 1,
    .ended_jobs = 0,
    .procs = 1,
    .host = NTICKS,
    .cpu = NTICKS * NCPUS,
    .disk = NTICKS * NDISKS,
    .net = NTICKS * NNETS,
    .proc_samples = NTICKS,
    .job_samples = NTICKS,
    .events = NTICKS,
    .summaries = 0,
};

static const char count_sql[] =
    "SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM jobs WHERE end_ms IS NOT NULL),"
    " (SELECT count(*) FROM procs), (SELECT count(*) FROM host_samples),"
    " (SELECT count(*) FROM cpu_samples), (SELECT count(*) FROM disk_samples),"
    " (SELECT count(*) FROM net_samples), (SELECT count(*) FROM proc_samples),"
    " (SELECT count(*) FROM job_samples), (SELECT count(*) FROM events),"
    " (SELECT count(*) FROM job_summaries)";

static int rm_files(struct fixture *fx)
{
	char p[160];

	unlink(fx->path);
	snprintf(p, sizeof(p), "%s-wal", fx->path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", fx->path);
	unlink(p);
	return 0;
}

static struct host_sample *host_new(int64_t base)
{
	struct host_sample *h = calloc(1, sizeof(*h));

	assert_non_null(h);
	h->valid = HOST_HAS_CPU | HOST_HAS_MEM | HOST_HAS_DISK | HOST_HAS_NET | HOST_HAS_LOAD;
	h->cpu.total = (struct cpu_times){(uint64_t)base + 1, 2, 3, 4, 5, 6, 7, 8};
	h->cpu.ncpus = NCPUS;
	for (int i = 0; i < NCPUS; i++) {
		h->cpu.cpu_id[i] = (uint16_t)i;
		h->cpu.cpu[i] = (struct cpu_times){(uint64_t)base + 10 + (uint64_t)i, 1, 2, 3};
	}
	h->mem.valid = MEMINFO_TOTAL | MEMINFO_AVAILABLE;
	h->mem.total_bytes = 16ull << 30;
	h->mem.available_bytes = 8ull << 30;
	h->load = (struct host_loadavg){1500, 1200, 900, 0, 0};
	h->ndisks = NDISKS;
	h->disks[0] = (struct disk_stat){"sda", 1, 2, 3, 4, 5};
	h->nnets = NNETS;
	h->nets[0] = (struct net_stat){"eth0", 1, 2, 3, 4};
	h->nets[1] = (struct net_stat){"eth1", 5, 6, 7, 8};
	h->disk_read_bytes = 2;
	h->net_rx_bytes = 1;
	return h;
}

static void proc_fill(struct proc_info *p)
{
	memset(p, 0, sizeof(*p));
	p->pid = 10;
	p->ppid = 1;
	p->start_ms = JOB_START_MS;
	p->uid = 1000;
	snprintf(p->comm, sizeof(p->comm), "solver");
	snprintf(p->cmdline, sizeof(p->cmdline), "solver --steps 10");
}

/*
 * One tick of the job's rows: host (with its per-CPU, disk and net rows),
 * a process sample, a job sample and an event.  Returns the first failure,
 * the tick aborted.
 */
static int tick(struct store *st, int64_t node, int64_t job, int64_t prow, int64_t ts_ms,
		const struct host_sample *h)
{
	struct proc_sample ps = {PS_RSS, 'R', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	struct job_sample js = {JS_IO, 1, 2, 3, 4, 5, 6, 7, 8};
	struct event_record ev = {ts_ms, "mark", 10, 1, "tick", 0, false};
	int ret;

	ret = store_tick_begin(st);
	if (ret)
		return ret;
	ret = store_put_host(st, node, ts_ms, h);
	if (!ret)
		ret = store_put_proc_sample(st, prow, ts_ms, &ps);
	if (!ret)
		ret = store_put_job_sample(st, job, ts_ms, &js);
	if (!ret)
		ret = store_put_event(st, node, job, &ev);
	if (ret) {
		store_tick_abort(st);
		return ret;
	}
	return store_tick_commit(st);
}

/* The store the operations start from: a node, a running job, NTICKS ticks. */
static void make_pristine(struct fixture *fx)
{
	struct host_sample *h = host_new(0);
	struct job_record job;
	struct proc_info p;
	struct store *st;
	int64_t node, prow;

	assert_int_equal(store_open(fx->pristine, STORE_CREATE, &st), 0);
	assert_int_equal(store_node(st, "node01", 16, 64ull << 30, 1, &node), 0);
	memset(&job, 0, sizeof(job));
	job.node_id = node;
	snprintf(job.scheduler, sizeof(job.scheduler), "slurm");
	snprintf(job.job_id, sizeof(job.job_id), JOB_ID);
	job.start_ms = JOB_START_MS;
	assert_int_equal(store_job_begin(st, &job), 0);
	proc_fill(&p);
	assert_int_equal(store_put_proc_info(st, node, job.id, &p, NULL, &prow), 0);
	/* the operations name them by these ids */
	assert_int_equal(node, NODE_ROW);
	assert_int_equal(job.id, JOB_ROW);
	assert_int_equal(prow, PROC_ROW);
	for (int i = 0; i < NTICKS; i++)
		assert_int_equal(tick(st, node, job.id, prow, JOB_START_MS + 1000 * (i + 1), h), 0);
	store_close(st);
	free(h);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	oom_disarm(); /* a failed test may have left it armed */
	if (!fx)
		return -1;
	/* a run copies a store and syncs it: on tmpfs where there is one */
	snprintf(fx->dir, sizeof(fx->dir), "%s/jobscope-test-store-oom-XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->path, sizeof(fx->path), "%s/store.db", fx->dir);
	snprintf(fx->pristine, sizeof(fx->pristine), "%s/pristine.db", fx->dir);
	fx->log = tmpfile();
	if (!fx->log)
		return -1;
	log_set_file(fx->log);
	fx->h = host_new(100);
	make_pristine(fx);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	log_set_file(NULL);
	fclose(fx->log);
	rm_files(fx);
	unlink(fx->pristine);
	rmdir(fx->dir);
	free(fx->h);
	free(fx);
	return 0;
}

/* path := pristine, byte for byte (a closed store is one file: no WAL left). */
static void copy_pristine(struct fixture *fx)
{
	char buf[65536];
	FILE *in, *out;
	size_t n;

	rm_files(fx);
	in = fopen(fx->pristine, "rb");
	assert_non_null(in);
	out = fopen(fx->path, "wb");
	assert_non_null(out);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
}

/*
 * The file checked on a connection of its own, without faults: it passes
 * integrity_check and *c receives its row counts.
 */
static void check_file(struct fixture *fx, struct counts *c)
{
	sqlite3_stmt *stmt;
	sqlite3 *db;

	assert_int_equal(sqlite3_open_v2(fx->path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(stmt, 0), "ok");
	sqlite3_finalize(stmt);
	assert_int_equal(sqlite3_prepare_v2(db, count_sql, -1, &stmt, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
	c->jobs = sqlite3_column_int64(stmt, 0);
	c->ended_jobs = sqlite3_column_int64(stmt, 1);
	c->procs = sqlite3_column_int64(stmt, 2);
	c->host = sqlite3_column_int64(stmt, 3);
	c->cpu = sqlite3_column_int64(stmt, 4);
	c->disk = sqlite3_column_int64(stmt, 5);
	c->net = sqlite3_column_int64(stmt, 6);
	c->proc_samples = sqlite3_column_int64(stmt, 7);
	c->job_samples = sqlite3_column_int64(stmt, 8);
	c->events = sqlite3_column_int64(stmt, 9);
	c->summaries = sqlite3_column_int64(stmt, 10);
	sqlite3_finalize(stmt);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

static void assert_counts_equal(const struct counts *want, const struct counts *got)
{
	assert_int_equal(got->jobs, want->jobs);
	assert_int_equal(got->ended_jobs, want->ended_jobs);
	assert_int_equal(got->procs, want->procs);
	assert_int_equal(got->host, want->host);
	assert_int_equal(got->cpu, want->cpu);
	assert_int_equal(got->disk, want->disk);
	assert_int_equal(got->net, want->net);
	assert_int_equal(got->proc_samples, want->proc_samples);
	assert_int_equal(got->job_samples, want->job_samples);
	assert_int_equal(got->events, want->events);
	assert_int_equal(got->summaries, want->summaries);
}

/* ------------------------------------------------------------ the driver */

/*
 * One operation on the open store, run with faults armed.  It returns its
 * result and updates *want, the rows the file must hold after it given
 * that result (from pristine_counts).
 */
typedef int (*store_op)(struct fixture *fx, struct store *st, struct counts *want);

/*
 * Runs op on a fresh copy of the pristine store with the Nth allocation
 * failed, for N = 1, 2, ... until it succeeds; after each run checks the
 * result, SQLite's memory and the file.  Returns the runs it took.
 */
static long oom_loop(struct fixture *fx, unsigned open_flags, store_op op)
{
	struct counts want, got;
	struct store *st;
	long n, total = 0, runs = 0;
	int64_t base;
	int ret;

	for (n = 0; n <= OOM_MAX_RUNS; n = oom_next(n, total)) {
		copy_pristine(fx);
		base = sqlite3_memory_used();
		assert_int_equal(store_open(fx->path, open_flags, &st), 0);
		assert_true(sqlite3_memory_used() > base); /* SQLite keeps the count */
		want = pristine_counts;
		oom_arm(n); /* n = 0: a run without faults, counting */
		ret = op(fx, st, &want);
		if (n == 0)
			total = alloc_count;
		oom_disarm();
		/* an error is -errno, and only when an allocation failed */
		assert_true(ret <= 0);
		assert_true(ret == 0 || fired);
		store_close(st);
		assert_int_equal(sqlite3_memory_used(), base);
		check_file(fx, &got);
		assert_counts_equal(&want, &got);
		runs++;
		if (n > 0 && !fired)
			break; /* it had every allocation it asked for */
	}
	assert_true(n <= OOM_MAX_RUNS);
	assert_true(n > total); /* the fault walked past the last allocation */
	assert_int_equal(ret, 0);
	return runs;
}

/* ------------------------------------------------------------ operations */

/*
 * A tick on the existing store.  A failed one leaves nothing, and the
 * store stays usable: the same connection, without faults, commits it.
 */
static int op_tick(struct fixture *fx, struct store *st, struct counts *want)
{
	int64_t ts_ms = JOB_START_MS + 1000 * (NTICKS + 1);
	int ret = tick(st, NODE_ROW, JOB_ROW, PROC_ROW, ts_ms, fx->h);

	oom_disarm();
	if (ret)
		assert_int_equal(tick(st, NODE_ROW, JOB_ROW, PROC_ROW, ts_ms, fx->h), 0);
	want->host++;
	want->cpu += NCPUS;
	want->disk += NDISKS;
	want->net += NNETS;
	want->proc_samples++;
	want->job_samples++;
	want->events++;
	return ret;
}

static void test_tick(void **state)
{
	long runs = oom_loop(*state, STORE_CREATE, op_tick);

	assert_true(runs > 1);
}

/* A second job begun and then ended; a failure in the update leaves it running. */
static int op_job(struct fixture *fx, struct store *st, struct counts *want)
{
	struct job_record job;
	int ret;

	(void)fx;
	memset(&job, 0, sizeof(job));
	job.node_id = NODE_ROW;
	snprintf(job.scheduler, sizeof(job.scheduler), "slurm");
	snprintf(job.job_id, sizeof(job.job_id), "4243");
	snprintf(job.command, sizeof(job.command), "sleep 1");
	job.start_ms = JOB_START_MS + 500;
	ret = store_job_begin(st, &job);
	if (ret)
		return ret;
	want->jobs++;
	assert_int_equal(job.id, JOB_ROW + 1);
	job.end_ms = job.start_ms + 1000;
	job.has_exit = true;
	ret = store_job_update(st, &job);
	if (ret == 0)
		want->ended_jobs++;
	return ret;
}

static void test_job_begin_update(void **state)
{
	assert_true(oom_loop(*state, STORE_CREATE, op_job) > 1);
}

static int op_summary(struct fixture *fx, struct store *st, struct counts *want)
{
	struct job_summary_record s = {
	    .job_row = JOB_ROW,
	    .wall_ms = 3000,
	    .cpu_ms = 2500,
	    .cpu_avg_cores = 0.8,
	    .cpu_peak_cores = 1.0,
	    .cpu_efficiency_pct = 80.0,
	    .rss_peak_bytes = 1 << 20,
	    .mem_efficiency_pct = NAN,
	    .gpu_util_avg_pct = NAN,
	    .gpu_util_p95_pct = NAN,
	    .report_json = SUMMARY_JSON,
	};
	struct strbuf json;
	int ret;

	(void)fx;
	ret = store_put_job_summary(st, &s);
	if (ret)
		return ret;
	want->summaries++;
	/* what was committed reads back whole */
	oom_disarm();
	strbuf_init(&json, 1 << 20);
	assert_int_equal(store_get_job_summary_json(st, JOB_ROW, &json), 0);
	assert_string_equal(strbuf_str(&json), SUMMARY_JSON);
	strbuf_release(&json);
	return 0;
}

static void test_put_job_summary(void **state)
{
	assert_true(oom_loop(*state, STORE_CREATE, op_summary) > 1);
}

/* What a replay handed out. */
struct replay_seen {
	int host, cpus, disks, nets, job, proc, event;
	int64_t last_ts;
	bool ordered;
};

static void seen_ts(struct replay_seen *r, int64_t ts_ms)
{
	if (ts_ms < r->last_ts)
		r->ordered = false;
	r->last_ts = ts_ms;
}

static void on_host(void *arg, int64_t ts_ms, const struct host_sample *h)
{
	struct replay_seen *r = arg;

	seen_ts(r, ts_ms);
	r->host++;
	r->cpus += h->cpu.ncpus;
	r->disks += h->ndisks;
	r->nets += h->nnets;
}

static void on_job(void *arg, int64_t ts_ms, const struct job_sample *s)
{
	struct replay_seen *r = arg;

	seen_ts(r, ts_ms);
	r->job += s->nprocs == 1;
}

static void on_proc(void *arg, const struct proc_info *p, int64_t ts_ms,
		    const struct proc_sample *s)
{
	struct replay_seen *r = arg;

	seen_ts(r, ts_ms);
	r->proc += p->pid == 10 && strcmp(p->comm, "solver") == 0 && s->rss_bytes == 6;
}

static void on_event(void *arg, const struct event_record *e)
{
	struct replay_seen *r = arg;

	seen_ts(r, e->ts_ms);
	r->event += strcmp(e->kind, "mark") == 0 && strcmp(e->message, "tick") == 0;
}

static const struct store_replay_ops replay_ops = {on_host, on_job, on_proc, on_event};

static int op_replay(struct fixture *fx, struct store *st, struct counts *want)
{
	struct replay_seen r = {.ordered = true};
	int ret;

	(void)fx;
	(void)want;
	ret = store_replay_job(st, JOB_ROW, &replay_ops, &r);
	if (ret)
		return ret;
	assert_true(r.ordered);
	assert_int_equal(r.host, NTICKS);
	assert_int_equal(r.cpus, NTICKS * NCPUS);
	assert_int_equal(r.disks, NTICKS * NDISKS);
	assert_int_equal(r.nets, NTICKS * NNETS);
	assert_int_equal(r.job, NTICKS);
	assert_int_equal(r.proc, NTICKS);
	assert_int_equal(r.event, NTICKS);
	return 0;
}

static void test_replay_job(void **state)
{
	assert_true(oom_loop(*state, STORE_READONLY, op_replay) > 1);
}

/* Integers and reals as text (a conversion that allocates), and a NULL. */
static const char query_sql[] = "SELECT seq, ts_ms, rss_bytes * 1.5, cg_cpu_ms FROM job_samples"
				" WHERE job_id = ?1 ORDER BY seq";

static int on_row(const struct store_row *r, void *arg)
{
	struct strbuf *out = arg;

	assert_int_equal(r->ncols, 4);
	for (int c = 0; c < r->ncols; c++)
		strbuf_addf(out, "%s%s=%g%s", c ? "," : "", r->text[c], r->num[c],
			    r->null[c] ? "(null)" : "");
	strbuf_addf(out, ";");
	return 0;
}

static int op_query(struct fixture *fx, struct store *st, struct counts *want)
{
	static const char *const params[] = {"1", NULL};
	struct strbuf got;
	int ret;

	(void)fx;
	(void)want;
	strbuf_init(&got, 1 << 20);
	ret = store_query_rows(st, query_sql, params, on_row, &got);
	if (ret == 0)
		assert_string_equal(strbuf_str(&got), "8=8,1001000=1.001e+06,6.0=6,=0(null);"
						      "17=17,1002000=1.002e+06,6.0=6,=0(null);"
						      "26=26,1003000=1.003e+06,6.0=6,=0(null);");
	strbuf_release(&got);
	return ret;
}

static void test_query_rows(void **state)
{
	assert_true(oom_loop(*state, STORE_READONLY, op_query) > 1);
}

/*
 * SQLite 3.40.1 (Debian 12's) itself leaks one virtual table's record (its
 * VTable, 56 bytes, and so its module's, 136) when an allocation fails inside
 * CREATE VIRTUAL TABLE after the table's constructor succeeded: the pack
 * tables' registration at open (store__packs_register: "cannot read store").
 * Not ours to free (LeakSanitizer's report of it is suppressed for this test
 * alone, tests/unit/lsan-sqlite-vtab.supp); any other leak still fails.
 */
static bool sqlite_vtab_leak(struct fixture *fx, int ret, int64_t leaked)
{
	char line[512], last[512] = "";

	if (ret != -ENOMEM || leaked <= 0 || leaked > 256)
		return false;
	fflush(fx->log);
	rewind(fx->log);
	while (fgets(line, sizeof(line), fx->log))
		snprintf(last, sizeof(last), "%s", line);
	fseek(fx->log, 0, SEEK_END);
	return strstr(last, "cannot read store") != NULL;
}

/*
 * Creating a store.  A failed create may leave a file: opening it again
 * without faults creates or completes it, and it holds the whole schema.
 */
static void test_open_create(void **state)
{
	struct fixture *fx = *state;
	struct counts empty = {0}, got;
	struct store *st;
	sqlite3_stmt *stmt;
	sqlite3 *db;
	int64_t base;
	long n, total;
	int ret = -1;

	/* the allocations of a create without faults */
	rm_files(fx);
	oom_arm(0);
	assert_int_equal(store_open(fx->path, STORE_CREATE, &st), 0);
	total = alloc_count;
	oom_disarm();
	store_close(st);
	for (n = 1; n <= OOM_MAX_RUNS; n = oom_next(n, total)) {
		rm_files(fx);
		base = sqlite3_memory_used();
		oom_arm(n);
		ret = store_open(fx->path, STORE_CREATE, &st);
		oom_disarm();
		assert_true(ret <= 0);
		assert_true(ret == 0 || fired);
		if (ret)
			assert_null(st);
		else
			store_close(st);
		if (sqlite_vtab_leak(fx, ret, sqlite3_memory_used() - base))
			base = sqlite3_memory_used(); /* SQLite's own (above) */
		assert_int_equal(sqlite3_memory_used(), base);
		if (ret) {
			assert_int_equal(store_open(fx->path, STORE_CREATE, &st), 0);
			store_close(st);
		}
		check_file(fx, &got);
		assert_counts_equal(&empty, &got);
		/* the settings a new store is created with */
		assert_int_equal(sqlite3_open_v2(fx->path, &db, SQLITE_OPEN_READONLY, NULL),
				 SQLITE_OK);
		assert_int_equal(
		    sqlite3_prepare_v2(db,
				       "SELECT (SELECT auto_vacuum FROM pragma_auto_vacuum),"
				       " (SELECT journal_mode FROM pragma_journal_mode),"
				       " (SELECT user_version FROM pragma_user_version),"
				       " (SELECT count(*) FROM meta)",
				       -1, &stmt, NULL),
		    SQLITE_OK);
		assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
		assert_int_equal(sqlite3_column_int64(stmt, 0), 2); /* incremental */
		assert_string_equal((const char *)sqlite3_column_text(stmt, 1), "wal");
		assert_int_equal(sqlite3_column_int64(stmt, 2), STORE_SCHEMA_VERSION);
		assert_int_equal(sqlite3_column_int64(stmt, 3), 3);
		sqlite3_finalize(stmt);
		assert_int_equal(sqlite3_close(db), SQLITE_OK);
		if (!fired)
			break; /* it had every allocation it asked for */
	}
	assert_true(n <= OOM_MAX_RUNS);
	assert_true(n > total);
	assert_int_equal(ret, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_open_create, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tick, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_job_begin_update, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_put_job_summary, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_replay_job, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_query_rows, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
