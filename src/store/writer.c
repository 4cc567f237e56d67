/*
 * writer.c - the writer: one transaction per tick, and every row put into
 * the store.  Statements are prepared once and reused, and every fact row
 * takes the next `seq`.
 *
 *   enum store_stmt, store_sql[]   the statement cache
 *   struct binder, bind_*          binding a row's values in column order
 *   stmt_*, fact_*                 running a cached statement, a fact row
 *   store__load_next_seq, sync_seq the seq counter, shared with other writers
 *   store__write_begin/_end        a write's own transaction outside a tick
 *   store_node, store_job_begin, store_job_update
 *   store_tick_begin/_commit/_abort
 *   store_put_host (and its cpu, disk, net and fs rows), store_put_proc_info,
 *   store_update_proc_info, store_put_proc_sample, store_put_job_sample,
 *   store_put_event, store_put_device, store_put_gpu_sample,
 *   store_put_gpu_proc, store_put_job_summary, store_put_rollup
 *   store__writer_release          the cache's end (store_close)
 *
 * The tick transaction's states.  A connection is always in one of them
 * (there is no field for it: in_tick, tick_err and whether SQLite has a
 * transaction open say which); write.h gives callers the short version.
 *
 *   READ_ONLY    opened without STORE_WRITE (!writable).  Every write is
 *                refused with -EROFS and leaves it there; nothing else
 *                moves it.
 *
 *   IDLE         no transaction open, !in_tick, tick_err == 0.  No lock
 *                is held.  next_seq may be stale: another process may have
 *                committed rows since (two `jobscope run`s on one store);
 *                it is made right under the write lock before it is used
 *                (sync_seq, PRAGMA data_version).  Only here do the packer
 *                and retention run, each in a transaction of its own
 *                (they refuse to run in a tick).
 *
 *   WRITE        a put outside a tick, between store__write_begin (own
 *                true) and store__write_end.  BEGIN IMMEDIATE holds the
 *                write lock, next_seq is the file's next seq, tick_seq
 *                holds it as it was at BEGIN; each fact row takes
 *                next_seq++.
 *
 *   TICK         between store_tick_begin and its commit or abort, with
 *                no failure yet: in_tick, tick_err == 0, the transaction
 *                open with the write lock held, tick_seq = next_seq at
 *                BEGIN; every row written since is in the transaction,
 *                the fact rows with seq tick_seq .. next_seq - 1.
 *
 *   TICK_FAILED  in_tick, tick_err < 0: a put failed in the tick.  SQLite
 *                may already have rolled the transaction back (a full disk,
 *                an I/O error), so the rows so far may be gone and next_seq
 *                counts seqs that will not be committed.  Every put returns
 *                tick_err at once and writes nothing: rows must never go
 *                out one by one in autocommit.
 *
 * What moves between them:
 *
 *   IDLE -> WRITE         store__write_begin, called by every put, by
 *                         store_node and store_job_begin/_update, by the
 *                         app, CUDA, energy and library puts and by
 *                         retention's gap record.  If BEGIN or sync_seq
 *                         fails: IDLE, the error returned.
 *   WRITE -> IDLE         store__write_end: COMMIT when the put succeeded;
 *                         else (or if COMMIT fails) ROLLBACK and next_seq =
 *                         tick_seq, the error returned.
 *   IDLE -> TICK          store_tick_begin: BEGIN IMMEDIATE, sync_seq,
 *                         tick_seq = next_seq.  If either fails: IDLE.
 *   TICK -> TICK          a put that succeeds (store__write_begin gives
 *                         own false: it joins the tick's transaction).
 *   TICK -> TICK_FAILED   a put that fails: store__write_end keeps its
 *                         error as tick_err.
 *   TICK_FAILED -> TICK   only the head's ingest (ingest.c), whose batches
 *                         each run in a savepoint: a batch refused
 *                         (-EINVAL) is rolled back to its savepoint,
 *                         next_seq put back to the batch's first seq and
 *                         tick_err cleared, and the group goes on.
 *   TICK -> IDLE          store_tick_commit: COMMIT.  If COMMIT fails:
 *                         ROLLBACK, next_seq = tick_seq, the error returned.
 *   TICK_FAILED -> IDLE   store_tick_commit (ROLLBACK, next_seq = tick_seq,
 *                         tick_err returned) or store_tick_abort (the same,
 *                         returning nothing).
 *   TICK, TICK_FAILED -> IDLE   store_tick_abort; store_close aborts an
 *                         open tick.  In IDLE and WRITE, abort does nothing.
 *
 * store_tick_begin in TICK or TICK_FAILED is refused (-EINVAL) and changes
 * nothing: ticks never nest.  So a seq is never committed twice (next_seq
 * goes back exactly when the rows that took seqs are rolled back), and a
 * tick is all or nothing.  On PostgreSQL (heads) sync_seq locks and reads
 * the database's counter (pg_seq_sync), so several heads share it.
 */
#include "store/writer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "db/pg.h"
#include "store/facts.h"
#include "store/write.h"

/* Statements the writer prepares once and reuses (st->stmts). */
enum store_stmt {
	STMT_BEGIN,
	STMT_COMMIT,
	STMT_ROLLBACK,
	STMT_NODE,
	STMT_JOB_INSERT,
	STMT_JOB_SET_RUN_ID,
	STMT_JOB_UPDATE,
	STMT_HOST,
	STMT_CPU,
	STMT_DISK,
	STMT_NET,
	STMT_FS,
	STMT_PROC_INFO,
	STMT_PROC_UPDATE,
	STMT_PROC_SAMPLE,
	STMT_JOB_SAMPLE,
	STMT_EVENT,
	STMT_DEVICE,
	STMT_GPU_SAMPLE,
	STMT_GPU_PROC,
	STMT_JOB_SUMMARY,
	STMT_ROLLUP,
	STMT__COUNT
};
_Static_assert(STMT__COUNT == STORE_WRITER_NSTMTS, "conn.h's STORE_WRITER_NSTMTS is stale");

static const char *const store_sql[STMT__COUNT] = {
    [STMT_BEGIN] = "BEGIN IMMEDIATE",
    [STMT_COMMIT] = "COMMIT",
    [STMT_ROLLBACK] = "ROLLBACK",
    [STMT_NODE] = "INSERT INTO nodes (hostname, cores, mem_total_bytes, boot_ms)"
		  " VALUES (?, ?, ?, ?) ON CONFLICT (hostname) DO UPDATE SET"
		  " cores = excluded.cores, mem_total_bytes = excluded.mem_total_bytes,"
		  " boot_ms = excluded.boot_ms RETURNING id",
    [STMT_JOB_INSERT] = "INSERT INTO jobs (node_id, scheduler, job_id, start_ms, end_ms, name,"
			" command, \"user\", uid, pid, exit_code, signal, timed_out, interval_ms,"
			" cores_allowed, host_cores, host_mem_bytes, samples, lost_samples,"
			" sampler_cpu_ms, step, cgroup, qos, reservation_source, reserved_cpus,"
			" reserved_mem_bytes, reserved_gpus, reserved_gpu_list, sluid,"
			" k8s_owner, k8s_owner_label)"
			" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
			" ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
    [STMT_JOB_SET_RUN_ID] = "UPDATE jobs SET job_id = CAST(id AS TEXT) WHERE id = ?",
    [STMT_JOB_UPDATE] = "UPDATE jobs SET end_ms = ?, name = ?, command = ?, \"user\" = ?, uid = ?,"
			" pid = ?, exit_code = ?, signal = ?, timed_out = ?, interval_ms = ?,"
			" cores_allowed = ?, host_cores = ?, host_mem_bytes = ?, samples = ?,"
			" lost_samples = ?, sampler_cpu_ms = ?, step = ?, cgroup = ?, qos = ?,"
			" reservation_source = ?, reserved_cpus = ?, reserved_mem_bytes = ?,"
			" reserved_gpus = ?, reserved_gpu_list = ?, sluid = ?, k8s_owner = ?,"
			" k8s_owner_label = ? WHERE id = ?",
    [STMT_HOST] = FACT_INSERT(host_samples, "seq, node_id, ts_ms", "?, ?, ?", HOST_SAMPLE_COLUMNS),
    [STMT_CPU] = FACT_INSERT(cpu_samples, "seq, node_id, ts_ms", "?, ?, ?", CPU_SAMPLE_COLUMNS),
    [STMT_DISK] = FACT_INSERT(disk_samples, "seq, node_id, ts_ms", "?, ?, ?", DISK_SAMPLE_COLUMNS),
    [STMT_NET] = FACT_INSERT(net_samples, "seq, node_id, ts_ms", "?, ?, ?", NET_SAMPLE_COLUMNS),
    [STMT_FS] = FACT_INSERT(fs_samples, "seq, node_id, ts_ms", "?, ?, ?", FS_SAMPLE_COLUMNS),
    [STMT_PROC_INFO] = "INSERT INTO procs (node_id, job_id, pid, ppid, start_ms, end_ms, uid,"
		       " comm, cmdline, container) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		       " ON CONFLICT (node_id, pid, start_ms) DO UPDATE SET"
		       " ppid = excluded.ppid, comm = excluded.comm,"
		       " cmdline = excluded.cmdline,"
		       " container = coalesce(excluded.container, procs.container),"
		       " job_id = coalesce(procs.job_id, excluded.job_id) RETURNING id",
    [STMT_PROC_UPDATE] = "UPDATE procs SET end_ms = coalesce(?, end_ms),"
			 " ppid = coalesce(?, ppid), comm = coalesce(?, comm),"
			 " cmdline = coalesce(?, cmdline), container = coalesce(?, container)"
			 " WHERE id = ?",
    /* the process's job, from procs; ? after ?3 is ?4, ... */
    [STMT_PROC_SAMPLE] =
	FACT_INSERT(proc_samples, "seq, proc_id, job_id, ts_ms",
		    "?1, ?2, (SELECT job_id FROM procs WHERE id = ?2), ?3", PROC_SAMPLE_COLUMNS),
    [STMT_JOB_SAMPLE] =
	FACT_INSERT(job_samples, "seq, job_id, ts_ms", "?, ?, ?", JOB_SAMPLE_COLUMNS),
    [STMT_EVENT] = FACT_INSERT(events, "seq, node_id, job_id, ts_ms", "?, ?, ?, ?", EVENT_COLUMNS),
    [STMT_DEVICE] = "INSERT INTO devices (node_id, vendor, idx, uuid, name, pci_bus_id,"
		    " mem_total_bytes, power_limit_mw, nvlink_count, driver_version, supported,"
		    " prof_supported, mig_enabled, mig, mig_parent_uuid, gpu_instance_id,"
		    " compute_instance_id, mig_profile)"
		    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		    " ON CONFLICT (node_id, uuid) DO UPDATE SET vendor = excluded.vendor,"
		    " idx = excluded.idx, name = excluded.name, pci_bus_id = excluded.pci_bus_id,"
		    " mem_total_bytes = excluded.mem_total_bytes,"
		    " power_limit_mw = excluded.power_limit_mw,"
		    " nvlink_count = excluded.nvlink_count,"
		    " driver_version = excluded.driver_version, supported = excluded.supported,"
		    " prof_supported = excluded.prof_supported,"
		    " mig_enabled = excluded.mig_enabled, mig = excluded.mig,"
		    " mig_parent_uuid = excluded.mig_parent_uuid,"
		    " gpu_instance_id = excluded.gpu_instance_id,"
		    " compute_instance_id = excluded.compute_instance_id,"
		    " mig_profile = excluded.mig_profile"
		    " RETURNING id",
    [STMT_GPU_SAMPLE] =
	FACT_INSERT(gpu_samples, "seq, device_id, ts_ms", "?, ?, ?", GPU_SAMPLE_ALL_COLUMNS),
    [STMT_GPU_PROC] =
	FACT_INSERT(gpu_proc_samples, "seq, device_id, ts_ms", "?, ?, ?", GPU_PROC_SAMPLE_COLUMNS),
    [STMT_JOB_SUMMARY] =
	"INSERT INTO job_summaries (job_id, wall_ms, cpu_ms,"
	" cpu_avg_cores, cpu_peak_cores, cpu_efficiency_pct, rss_peak_bytes,"
	" mem_efficiency_pct, read_bytes, write_bytes, gpus_used,"
	" gpu_util_avg_pct, gpu_util_p95_pct, gpu_mem_peak_bytes, gpu_energy_mj,"
	" sm_active_avg_pct, sm_occupancy_avg_pct, tensor_active_avg_pct,"
	" dram_active_avg_pct, fp64_active_avg_pct, fp32_active_avg_pct,"
	" fp16_active_avg_pct, throttle_power_s, throttle_thermal_s,"
	" report_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
	" ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	" ON CONFLICT (job_id) DO UPDATE SET wall_ms = excluded.wall_ms,"
	" cpu_ms = excluded.cpu_ms, cpu_avg_cores = excluded.cpu_avg_cores,"
	" cpu_peak_cores = excluded.cpu_peak_cores,"
	" cpu_efficiency_pct = excluded.cpu_efficiency_pct,"
	" rss_peak_bytes = excluded.rss_peak_bytes,"
	" mem_efficiency_pct = excluded.mem_efficiency_pct,"
	" read_bytes = excluded.read_bytes, write_bytes = excluded.write_bytes,"
	" gpus_used = excluded.gpus_used, gpu_util_avg_pct = excluded.gpu_util_avg_pct,"
	" gpu_util_p95_pct = excluded.gpu_util_p95_pct,"
	" gpu_mem_peak_bytes = excluded.gpu_mem_peak_bytes,"
	" gpu_energy_mj = excluded.gpu_energy_mj,"
	" sm_active_avg_pct = excluded.sm_active_avg_pct,"
	" sm_occupancy_avg_pct = excluded.sm_occupancy_avg_pct,"
	" tensor_active_avg_pct = excluded.tensor_active_avg_pct,"
	" dram_active_avg_pct = excluded.dram_active_avg_pct,"
	" fp64_active_avg_pct = excluded.fp64_active_avg_pct,"
	" fp32_active_avg_pct = excluded.fp32_active_avg_pct,"
	" fp16_active_avg_pct = excluded.fp16_active_avg_pct,"
	" throttle_power_s = excluded.throttle_power_s,"
	" throttle_thermal_s = excluded.throttle_thermal_s, report_json = excluded.report_json",
    [STMT_ROLLUP] =
	"INSERT INTO rollups (tier_ms, node_id, entity, entity_id, metric, ts_ms,"
	" n, min, avg, max) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	" ON CONFLICT (tier_ms, node_id, entity, entity_id, metric, ts_ms) DO UPDATE"
	" SET min = least(rollups.min, excluded.min), max = greatest(rollups.max, excluded.max),"
	" avg = (rollups.avg * rollups.n + excluded.avg * excluded.n)"
	" / (rollups.n + excluded.n), n = rollups.n + excluded.n",
};

/* Binding a row's values in column order; the first failure is kept. */
struct binder {
	struct db_stmt *stmt;
	int col;
	int rc;
};

static void bind_keep(struct binder *b, int rc)
{
	if (rc != SQLITE_OK && b->rc == SQLITE_OK)
		b->rc = rc;
}

static void bind_i64(struct binder *b, int64_t v)
{
	bind_keep(b, db_bind_int64(b->stmt, ++b->col, v));
}

static void bind_u64(struct binder *b, uint64_t v)
{
	bind_i64(b, (int64_t)v);
}

/* NULL when the value is missing. */
static void bind_opt(struct binder *b, bool valid, uint64_t v)
{
	if (valid)
		bind_i64(b, (int64_t)v);
	else
		bind_keep(b, db_bind_null(b->stmt, ++b->col));
}

/* NULL when zero: ids, end times and sizes for which 0 means "none". */
static void bind_nonzero(struct binder *b, int64_t v)
{
	bind_opt(b, v != 0, (uint64_t)v);
}

/* At most max bytes of s; NULL when empty.  Bound before s can change. */
static void bind_text(struct binder *b, const char *s, size_t max)
{
	size_t len = s ? strnlen(s, max) : 0;

	if (len == 0)
		bind_keep(b, db_bind_null(b->stmt, ++b->col));
	else
		bind_keep(b, db_bind_text(b->stmt, ++b->col, s, (int)len, SQLITE_STATIC));
}

static int stmt_get(struct store *st, enum store_stmt id, struct db_stmt **out)
{
	int rc;

	if (!st->stmts[id]) {
		rc = db_prepare_persistent(&st->conn, store_sql[id], &st->stmts[id]);
		if (rc != SQLITE_OK)
			return store__write_fail(st, rc, "prepare a statement");
	}
	*out = st->stmts[id];
	return 0;
}

/*
 * Runs a bound statement to completion; *row_id (if not NULL) receives the
 * first column of the first row (RETURNING id).  The statement is reset
 * and its bindings cleared whatever happens.
 */
static int stmt_run(struct store *st, struct binder *b, const char *what, int64_t *row_id)
{
	bool got_row = false;
	int ret = 0;
	int rc = b->rc;

	while (rc == SQLITE_OK || rc == SQLITE_ROW) {
		rc = db_step(b->stmt);
		if (rc == SQLITE_ROW && !got_row) {
			got_row = true;
			if (row_id)
				*row_id = db_column_int64(b->stmt, 0);
		}
	}
	if (rc != SQLITE_DONE)
		ret = store__write_fail(st, rc, what);
	else if (row_id && !got_row)
		ret = log_err(-EIO, "cannot %s in store '%s' (no row id returned)", what, st->path);
	db_reset(b->stmt);
	db_clear_bindings(b->stmt);
	return ret;
}

static int stmt_start(struct store *st, enum store_stmt id, struct binder *b)
{
	int ret;

	b->stmt = NULL;
	ret = stmt_get(st, id, &b->stmt);

	b->col = 0;
	b->rc = SQLITE_OK;
	return ret;
}

/* A fact row: binds the next seq first; the counter moves on success. */
static int fact_start(struct store *st, enum store_stmt id, struct binder *b)
{
	int ret = stmt_start(st, id, b);

	if (ret == 0)
		bind_i64(b, st->next_seq);
	return ret;
}

static int fact_run(struct store *st, struct binder *b, const char *what)
{
	int ret = stmt_run(st, b, what, NULL);

	if (ret == 0)
		st->next_seq++;
	return ret;
}

static int simple_stmt(struct store *st, enum store_stmt id, const char *what)
{
	struct binder b;
	int ret = stmt_start(st, id, &b);

	if (ret)
		return ret;
	return stmt_run(st, &b, what, NULL);
}

/* Rolls back whatever transaction is open; SQLite may have done it already. */
static void rollback_quietly(struct store *st)
{
	struct db_stmt *stmt = NULL;

	if (!db_in_transaction(&st->conn))
		return;
	if (stmt_get(st, STMT_ROLLBACK, &stmt) == 0 && stmt) {
		db_step(stmt);
		db_reset(stmt);
	}
	/*
	 * the cached statement could not be had (PostgreSQL prepares it on a
	 * connection that may be away): a plain ROLLBACK, which ends a
	 * transaction lost with its connection without the server
	 */
	if (db_in_transaction(&st->conn))
		db_exec(&st->conn, "ROLLBACK");
	if (db_in_transaction(&st->conn))
		log_warn(0, "cannot roll back a transaction in store '%s' (%s)", st->path,
			 store__errmsg(st));
}

/* The next seq after every fact row (and gap record) in the file, whoever wrote it. */
int store__load_next_seq(struct store *st)
{
	int ret = st->conn.pg ? 0 : store__query_i64(st, "PRAGMA data_version", &st->data_version);

	if (ret)
		return ret;
	/* a writable store is always of the current schema (migrated at open) */
	return store__query_i64(
	    st,
	    "SELECT 1 + greatest(coalesce((SELECT max(seq) FROM host_samples), 0),"
	    " coalesce((SELECT max(seq) FROM cpu_samples), 0),"
	    " coalesce((SELECT max(seq) FROM disk_samples), 0),"
	    " coalesce((SELECT max(seq) FROM net_samples), 0),"
	    " coalesce((SELECT max(seq) FROM proc_samples), 0),"
	    " coalesce((SELECT max(seq) FROM job_samples), 0),"
	    " coalesce((SELECT max(seq) FROM events), 0),"
	    " coalesce((SELECT max(seq) FROM marks), 0),"
	    " coalesce((SELECT max(seq) FROM gpu_samples), 0),"
	    " coalesce((SELECT max(seq) FROM gpu_proc_samples), 0),"
	    " coalesce((SELECT max(seq) FROM gaps), 0),"
	    " coalesce((SELECT max(seq) FROM fs_samples), 0),"
	    " coalesce((SELECT max(seq) FROM cuda_procs), 0),"
	    " coalesce((SELECT max(seq) FROM app_samples), 0),"
	    " coalesce((SELECT max(seq) FROM energy_samples), 0),"
	    " coalesce((SELECT max(seq) FROM proc_libs), 0),"
	    " coalesce((SELECT max(seq_hi) FROM packs), 0),"
	    " coalesce((SELECT CAST(value AS BIGINT) FROM meta WHERE key = 'pack_seq'), 0))",
	    &st->next_seq);
}

/*
 * Called with the write lock held (BEGIN IMMEDIATE).  Another process may
 * write to the same store (two `jobscope run`s sharing the default one):
 * when it committed since we last looked, our seq counter is stale.  SQLite's
 * data_version changes exactly then, so a tick costs one pragma when alone.
 */
/*
 * PostgreSQL: any number of heads write one database (docs/postgresql.md),
 * each with its own writer.  The next seq lives in the meta row 'next_seq',
 * and every write transaction starts by locking it (SELECT ... FOR UPDATE,
 * which in READ COMMITTED waits for the holder and then reads what it
 * committed): writers take turns, so seqs are never given twice and commit
 * in seq order (a remote-write cursor never skips a row committed late).
 * pg_seq_save puts the counter back before COMMIT.  A database written
 * before the row existed gets it from the tables' highest seq.
 */
static int pg_seq_sync(struct store *st)
{
	static const char lock[] =
	    "SELECT CAST(value AS bigint) FROM meta WHERE key = 'next_seq' FOR UPDATE";
	int64_t made;
	bool found;
	int ret;

	/* cached: the lock goes in one round trip with the BEGIN sent ahead of it (pg.c) */
	ret = store__cached_i64_opt(st, lock, 0, &st->next_seq, &found);
	if (ret || found)
		return ret;
	ret = store__load_next_seq(st);
	if (!ret)
		ret = store__query_i64_opt(st,
					   "INSERT INTO meta (key, value) VALUES ('next_seq',"
					   " CAST(?1 AS text)) ON CONFLICT (key) DO NOTHING"
					   " RETURNING 1",
					   st->next_seq, &made, &found);
	if (!ret && !found) /* another head made it first */
		ret = store__cached_i64_opt(st, lock, 0, &st->next_seq, &found);
	st->next_seq_saved = st->next_seq;
	return ret;
}

static int pg_seq_save(struct store *st)
{
	struct db_stmt *stmt;
	int rc;

	if (!st->conn.pg || st->next_seq == st->next_seq_saved)
		return 0;
	/* an INSERT, not an UPDATE: sent ahead with the COMMIT (the row is there: locked) */
	rc =
	    store__cached_stmt(st,
			       "INSERT INTO meta (key, value) VALUES ('next_seq', CAST(?1 AS text))"
			       " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
			       &stmt);
	if (rc != SQLITE_OK)
		return store__write_fail(st, rc, "save the seq counter of");
	db_bind_int64(stmt, 1, st->next_seq);
	rc = db_step(stmt);
	db_reset(stmt);
	db_clear_bindings(stmt);
	if (rc != SQLITE_DONE)
		return store__write_fail(st, rc, "save the seq counter of");
	st->next_seq_saved = st->next_seq;
	return 0;
}

static int sync_seq(struct store *st)
{
	int64_t version;
	int ret;

	if (st->conn.pg)
		return pg_seq_sync(st);
	ret = store__query_i64(st, "PRAGMA data_version", &version);
	if (ret || version == st->data_version)
		return ret;
	return store__load_next_seq(st);
}

/*
 * Every write runs in a transaction: the tick's when one is open, its own
 * otherwise.  Inside a tick, the first failure sticks: SQLite may already
 * have rolled the transaction back, and later rows must not be committed
 * one by one in autocommit mode.
 */
int store__write_begin(struct store *st, bool *own)
{
	int ret;

	*own = false;
	if (st->in_tick)
		return st->tick_err;
	if (!st->writable)
		return log_err(-EROFS, "cannot write to store '%s': opened read-only", st->path);
	ret = simple_stmt(st, STMT_BEGIN, "begin a transaction");
	if (ret)
		return ret;
	ret = sync_seq(st);
	if (ret) {
		rollback_quietly(st);
		return ret;
	}
	st->tick_seq = st->next_seq;
	*own = true;
	return 0;
}

int store__write_end(struct store *st, bool own, int ret)
{
	if (!own) {
		if (ret && st->in_tick && !st->tick_err)
			st->tick_err = ret;
		return ret;
	}
	if (ret == 0)
		ret = pg_seq_save(st);
	if (ret == 0)
		ret = simple_stmt(st, STMT_COMMIT, "commit");
	if (ret) {
		rollback_quietly(st);
		st->next_seq = st->tick_seq;
	}
	return ret;
}

int store_node(struct store *st, const char *hostname, int32_t cores, uint64_t mem_total_bytes,
	       int64_t boot_ms, int64_t *node_id)
{
	struct binder b;
	bool own;
	int ret;

	if (!hostname || !*hostname)
		return log_err(-EINVAL, "cannot add a node to store '%s': no hostname", st->path);
	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	ret = stmt_start(st, STMT_NODE, &b);
	if (ret == 0) {
		bind_keep(&b, db_bind_text(b.stmt, ++b.col, hostname, -1, SQLITE_STATIC));
		bind_nonzero(&b, cores);
		bind_nonzero(&b, (int64_t)mem_total_bytes);
		bind_nonzero(&b, boot_ms);
		ret = stmt_run(st, &b, "add a node", node_id);
	}
	return store__write_end(st, own, ret);
}

static void bind_double_opt(struct binder *b, bool valid, double v)
{
	if (valid && !isnan(v))
		bind_keep(b, db_bind_double(b->stmt, ++b->col, v));
	else
		bind_keep(b, db_bind_null(b->stmt, ++b->col));
}

/*
 * A job's columns after its key, in the order STMT_JOB_INSERT (after
 * node_id, scheduler, job_id, start_ms) and STMT_JOB_UPDATE (before id)
 * both list them.
 */
static void bind_job_state(struct binder *b, const struct job_record *job)
{
	bind_nonzero(b, job->end_ms);
	bind_text(b, job->name, sizeof(job->name));
	bind_text(b, job->command, sizeof(job->command));
	bind_text(b, job->user, sizeof(job->user));
	bind_i64(b, job->uid);
	bind_i64(b, job->pid);
	bind_opt(b, job->has_exit, (uint64_t)(int64_t)job->exit_code);
	bind_opt(b, job->has_exit, (uint64_t)(int64_t)job->signal);
	bind_i64(b, job->timed_out);
	bind_i64(b, job->interval_ms);
	bind_i64(b, job->cores_allowed);
	bind_i64(b, job->host_cores);
	bind_u64(b, job->host_mem_bytes);
	bind_i64(b, job->samples);
	bind_i64(b, job->lost_samples);
	bind_i64(b, job->sampler_cpu_ms);
	bind_text(b, job->step, sizeof(job->step));
	bind_text(b, job->cgroup, sizeof(job->cgroup));
	bind_text(b, job->qos, sizeof(job->qos));
	bind_text(b, job->reservation_source, sizeof(job->reservation_source));
	bind_double_opt(b, job->reserved_cpus > 0, job->reserved_cpus);
	bind_nonzero(b, (int64_t)job->reserved_mem_bytes);
	bind_opt(b, job->has_reserved_gpus, (uint64_t)(int64_t)job->reserved_gpus);
	bind_text(b, job->reserved_gpu_list, sizeof(job->reserved_gpu_list));
	bind_text(b, job->sluid, sizeof(job->sluid));
	bind_text(b, job->k8s_owner, sizeof(job->k8s_owner));
	bind_text(b, job->k8s_owner_label, sizeof(job->k8s_owner_label));
}

int store_job_begin(struct store *st, struct job_record *job)
{
	/* a `jobscope run` names its job by the row id; the agent, seeing a run, by its id */
	bool is_run = strcmp(job->scheduler, "run") == 0 && !job->job_id[0];
	struct binder b;
	bool own;
	int ret;

	if (!job->scheduler[0] || job->start_ms == 0 || job->node_id <= 0)
		return log_err(-EINVAL, "cannot add a job to store '%s': no %s", st->path,
			       !job->scheduler[0]  ? "scheduler"
			       : job->node_id <= 0 ? "node"
						   : "start time");
	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	ret = stmt_start(st, STMT_JOB_INSERT, &b);
	if (ret)
		goto out_end;
	bind_i64(&b, job->node_id);
	bind_text(&b, job->scheduler, sizeof(job->scheduler));
	/* "run" jobs get their row id as job_id, set below in this transaction */
	bind_keep(&b, db_bind_text(b.stmt, ++b.col, is_run ? "" : job->job_id,
				   is_run ? 0 : (int)strnlen(job->job_id, sizeof(job->job_id)),
				   SQLITE_STATIC));
	bind_i64(&b, job->start_ms);
	bind_job_state(&b, job);
	ret = stmt_run(st, &b, "add a job", &job->id);
	if (ret || !is_run)
		goto out_end;
	ret = stmt_start(st, STMT_JOB_SET_RUN_ID, &b);
	if (ret)
		goto out_end;
	bind_i64(&b, job->id);
	ret = stmt_run(st, &b, "add a job", NULL);
	if (ret == 0)
		snprintf(job->job_id, sizeof(job->job_id), "%lld", (long long)job->id);
out_end:
	return store__write_end(st, own, ret);
}

int store_job_update(struct store *st, const struct job_record *job)
{
	struct binder b;
	bool own;
	int ret;

	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	ret = stmt_start(st, STMT_JOB_UPDATE, &b);
	if (ret == 0) {
		bind_job_state(&b, job);
		bind_i64(&b, job->id);
		ret = stmt_run(st, &b, "update a job", NULL);
	}
	if (ret == 0 && db_changes(&st->conn) != 1)
		ret = log_err(-ENOENT, "cannot update job %lld in store '%s'", (long long)job->id,
			      st->path);
	return store__write_end(st, own, ret);
}

int store_tick_begin(struct store *st)
{
	int ret;

	if (st->in_tick)
		return log_err(-EINVAL, "store '%s': a tick is already open", st->path);
	if (!st->writable)
		return log_err(-EROFS, "cannot write to store '%s': opened read-only", st->path);
	/*
	 * a transaction some failure path left (on PostgreSQL, one lost with
	 * its connection: only a ROLLBACK ends it) would refuse every BEGIN
	 * from now on: end it here, nothing of it was committed
	 */
	if (st->conn.pg && db_in_transaction(&st->conn)) {
		log_warn(0, "store '%s': a transaction left open before a tick: rolled back",
			 st->path);
		rollback_quietly(st);
	}
	ret = simple_stmt(st, STMT_BEGIN, "begin a tick");
	if (ret)
		return ret;
	ret = sync_seq(st);
	if (ret) {
		rollback_quietly(st);
		return ret;
	}
	st->in_tick = true;
	st->tick_err = 0;
	st->tick_seq = st->next_seq;
	return 0;
}

int store_tick_commit(struct store *st)
{
	int ret;

	if (!st->in_tick)
		return log_err(-EINVAL, "store '%s': no tick to commit", st->path);
	ret = st->tick_err;
	if (ret == 0)
		ret = pg_seq_save(st);
	if (ret == 0)
		ret = simple_stmt(st, STMT_COMMIT, "commit a tick");
	st->in_tick = false;
	st->tick_err = 0;
	if (ret) {
		rollback_quietly(st);
		st->next_seq = st->tick_seq;
	}
	return ret;
}

void store_tick_abort(struct store *st)
{
	if (!st->in_tick)
		return;
	rollback_quietly(st);
	st->next_seq = st->tick_seq;
	st->in_tick = false;
	st->tick_err = 0;
}

/* binds facts.h's HOST_SAMPLE_COLUMNS by hand, in their order */
_Static_assert(FACT_NCOLUMNS(HOST_SAMPLE_COLUMNS) == 36, "put_host_row binds 36 columns");

static int put_host_row(struct store *st, int64_t node_id, int64_t ts_ms,
			const struct host_sample *h)
{
	const struct host_meminfo *m = &h->mem;
	const struct cpu_times *t = &h->cpu.total;
	bool cpu = h->valid & HOST_HAS_CPU, mem = h->valid & HOST_HAS_MEM;
	bool load = h->valid & HOST_HAS_LOAD, disk = h->valid & HOST_HAS_DISK;
	bool net = h->valid & HOST_HAS_NET;
	bool psi_cpu = h->valid & HOST_HAS_PSI_CPU, psi_mem = h->valid & HOST_HAS_PSI_MEM;
	bool psi_io = h->valid & HOST_HAS_PSI_IO;
	struct binder b;
	int ret;

	ret = fact_start(st, STMT_HOST, &b);
	if (ret)
		return ret;
	bind_i64(&b, node_id);
	bind_i64(&b, ts_ms);
	bind_opt(&b, cpu, t->user_ms);
	bind_opt(&b, cpu, t->nice_ms);
	bind_opt(&b, cpu, t->system_ms);
	bind_opt(&b, cpu, t->idle_ms);
	bind_opt(&b, cpu, t->iowait_ms);
	bind_opt(&b, cpu, t->irq_ms);
	bind_opt(&b, cpu, t->softirq_ms);
	bind_opt(&b, cpu, t->steal_ms);
	bind_opt(&b, cpu, (uint64_t)(h->cpu.ncpus > 0 ? h->cpu.ncpus : 0));
	bind_opt(&b, mem && (m->valid & MEMINFO_TOTAL), m->total_bytes);
	bind_opt(&b, mem && (m->valid & MEMINFO_FREE), m->free_bytes);
	bind_opt(&b, mem && (m->valid & MEMINFO_AVAILABLE), m->available_bytes);
	bind_opt(&b, mem && (m->valid & MEMINFO_BUFFERS), m->buffers_bytes);
	bind_opt(&b, mem && (m->valid & MEMINFO_CACHED), m->cached_bytes);
	bind_opt(&b, mem && (m->valid & MEMINFO_SHMEM), m->shmem_bytes);
	bind_opt(&b, mem && (m->valid & MEMINFO_SWAP_TOTAL), m->swap_total_bytes);
	bind_opt(&b, mem && (m->valid & MEMINFO_SWAP_FREE), m->swap_free_bytes);
	bind_opt(&b, load, h->load.load1_milli);
	bind_opt(&b, load, h->load.load5_milli);
	bind_opt(&b, load, h->load.load15_milli);
	bind_opt(&b, cpu, h->cpu.procs_running);
	bind_opt(&b, cpu, h->cpu.procs_blocked);
	bind_opt(&b, disk, h->disk_read_bytes);
	bind_opt(&b, disk, h->disk_write_bytes);
	bind_opt(&b, disk, h->disk_reads);
	bind_opt(&b, disk, h->disk_writes);
	bind_opt(&b, net, h->net_rx_bytes);
	bind_opt(&b, net, h->net_tx_bytes);
	bind_opt(&b, net, h->net_rx_packets);
	bind_opt(&b, net, h->net_tx_packets);
	bind_opt(&b, psi_cpu && h->psi_cpu.some_valid, h->psi_cpu.some_total_us);
	bind_opt(&b, psi_cpu && h->psi_cpu.full_valid, h->psi_cpu.full_total_us);
	bind_opt(&b, psi_mem && h->psi_mem.some_valid, h->psi_mem.some_total_us);
	bind_opt(&b, psi_mem && h->psi_mem.full_valid, h->psi_mem.full_total_us);
	bind_opt(&b, psi_io && h->psi_io.some_valid, h->psi_io.some_total_us);
	bind_opt(&b, psi_io && h->psi_io.full_valid, h->psi_io.full_total_us);
	return fact_run(st, &b, "store a host sample");
}

_Static_assert(FACT_NCOLUMNS(CPU_SAMPLE_COLUMNS) == 9, "bound by hand below");

static int put_cpu_rows(struct store *st, int64_t node_id, int64_t ts_ms,
			const struct host_cpu_stat *c)
{
	int n = c->ncpus < 0 ? 0 : c->ncpus > HOST_MAX_CPUS ? HOST_MAX_CPUS : c->ncpus;
	const struct cpu_times *t;
	struct binder b;
	int i, ret = 0;

	for (i = 0; i < n && ret == 0; i++) {
		t = &c->cpu[i];
		ret = fact_start(st, STMT_CPU, &b);
		if (ret)
			break;
		bind_i64(&b, node_id);
		bind_i64(&b, ts_ms);
		bind_i64(&b, c->cpu_id[i]);
		bind_u64(&b, t->user_ms);
		bind_u64(&b, t->nice_ms);
		bind_u64(&b, t->system_ms);
		bind_u64(&b, t->idle_ms);
		bind_u64(&b, t->iowait_ms);
		bind_u64(&b, t->irq_ms);
		bind_u64(&b, t->softirq_ms);
		bind_u64(&b, t->steal_ms);
		ret = fact_run(st, &b, "store a CPU sample");
	}
	return ret;
}

_Static_assert(FACT_NCOLUMNS(DISK_SAMPLE_COLUMNS) == 6, "bound by hand below");

static int put_disk_rows(struct store *st, int64_t node_id, int64_t ts_ms,
			 const struct host_sample *h)
{
	int n = h->ndisks < 0 ? 0 : h->ndisks > HOST_MAX_DISKS ? HOST_MAX_DISKS : h->ndisks;
	const struct disk_stat *d;
	struct binder b;
	int i, ret = 0;

	for (i = 0; i < n && ret == 0; i++) {
		d = &h->disks[i];
		ret = fact_start(st, STMT_DISK, &b);
		if (ret)
			break;
		bind_i64(&b, node_id);
		bind_i64(&b, ts_ms);
		bind_keep(&b, db_bind_text(b.stmt, ++b.col, d->name,
					   (int)strnlen(d->name, sizeof(d->name)), SQLITE_STATIC));
		bind_u64(&b, d->reads);
		bind_u64(&b, d->read_bytes);
		bind_u64(&b, d->writes);
		bind_u64(&b, d->write_bytes);
		bind_u64(&b, d->io_ms);
		ret = fact_run(st, &b, "store a disk sample");
	}
	return ret;
}

_Static_assert(FACT_NCOLUMNS(NET_SAMPLE_COLUMNS) == 5, "bound by hand below");

static int put_net_rows(struct store *st, int64_t node_id, int64_t ts_ms,
			const struct host_sample *h)
{
	int n = h->nnets < 0 ? 0 : h->nnets > HOST_MAX_NETS ? HOST_MAX_NETS : h->nnets;
	const struct net_stat *ns;
	struct binder b;
	int i, ret = 0;

	for (i = 0; i < n && ret == 0; i++) {
		ns = &h->nets[i];
		ret = fact_start(st, STMT_NET, &b);
		if (ret)
			break;
		bind_i64(&b, node_id);
		bind_i64(&b, ts_ms);
		bind_keep(&b,
			  db_bind_text(b.stmt, ++b.col, ns->name,
				       (int)strnlen(ns->name, sizeof(ns->name)), SQLITE_STATIC));
		bind_u64(&b, ns->rx_bytes);
		bind_u64(&b, ns->rx_packets);
		bind_u64(&b, ns->tx_bytes);
		bind_u64(&b, ns->tx_packets);
		ret = fact_run(st, &b, "store a network sample");
	}
	return ret;
}

_Static_assert(FACT_NCOLUMNS(FS_SAMPLE_COLUMNS) == 3, "bound by hand below");

/* The root file system's row (psutil's disk_usage("/"): see struct host_fs). */
static int put_fs_row(struct store *st, int64_t node_id, int64_t ts_ms, const struct host_fs *fs)
{
	struct binder b;
	int ret = fact_start(st, STMT_FS, &b);

	if (ret)
		return ret;
	bind_i64(&b, node_id);
	bind_i64(&b, ts_ms);
	bind_keep(&b, db_bind_text(b.stmt, ++b.col, "/", 1, SQLITE_STATIC));
	bind_u64(&b, fs->used_bytes);
	bind_u64(&b, fs->total_bytes);
	return fact_run(st, &b, "store a file system sample");
}

/*
 * The host row, then its per-CPU, disk and interface rows and its root file
 * system's: the reader finds them by (node, ts).
 */
int store_put_host(struct store *st, int64_t node_id, int64_t ts_ms, const struct host_sample *h)
{
	bool own;
	int ret;

	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	ret = put_host_row(st, node_id, ts_ms, h);
	if (ret == 0 && (h->valid & HOST_HAS_CPU))
		ret = put_cpu_rows(st, node_id, ts_ms, &h->cpu);
	if (ret == 0 && (h->valid & HOST_HAS_DISK))
		ret = put_disk_rows(st, node_id, ts_ms, h);
	if (ret == 0 && (h->valid & HOST_HAS_NET))
		ret = put_net_rows(st, node_id, ts_ms, h);
	if (ret == 0 && (h->valid & HOST_HAS_ROOT_FS))
		ret = put_fs_row(st, node_id, ts_ms, &h->root_fs);
	return store__write_end(st, own, ret);
}

int store_put_proc_info(struct store *st, int64_t node_id, int64_t job_row,
			const struct proc_info *p, const char *container, int64_t *proc_row)
{
	struct binder b;
	bool own;
	int ret;

	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	ret = stmt_start(st, STMT_PROC_INFO, &b);
	if (ret == 0) {
		bind_i64(&b, node_id);
		bind_nonzero(&b, job_row > 0 ? job_row : 0);
		bind_i64(&b, p->pid);
		bind_i64(&b, p->ppid);
		bind_i64(&b, p->start_ms);
		bind_nonzero(&b, p->end_ms);
		bind_i64(&b, p->uid);
		bind_text(&b, p->comm, sizeof(p->comm));
		bind_text(&b, p->cmdline, sizeof(p->cmdline));
		bind_text(&b, container, 256);
		ret = stmt_run(st, &b, "store a process", proc_row);
	}
	return store__write_end(st, own, ret);
}

int store_update_proc_info(struct store *st, int64_t proc_row, const struct proc_info *p,
			   const char *container)
{
	struct binder b;
	bool own;
	int ret;

	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	ret = stmt_start(st, STMT_PROC_UPDATE, &b);
	if (ret == 0) {
		bind_nonzero(&b, p->end_ms);
		bind_nonzero(&b, p->ppid);
		bind_text(&b, p->comm, sizeof(p->comm));
		bind_text(&b, p->cmdline, sizeof(p->cmdline));
		bind_text(&b, container, 256);
		bind_i64(&b, proc_row);
		ret = stmt_run(st, &b, "update a process", NULL);
	}
	return store__write_end(st, own, ret);
}

/* binds facts.h's PROC_SAMPLE_COLUMNS by hand, in their order */
_Static_assert(FACT_NCOLUMNS(PROC_SAMPLE_COLUMNS) == 11, "store_put_proc_sample binds 11");

int store_put_proc_sample(struct store *st, int64_t proc_row, int64_t ts_ms,
			  const struct proc_sample *s)
{
	struct binder b;
	char state[2] = {s->state, '\0'};
	bool own;
	int ret;

	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	ret = fact_start(st, STMT_PROC_SAMPLE, &b);
	if (ret == 0) {
		bind_i64(&b, proc_row);
		bind_i64(&b, ts_ms);
		bind_text(&b, state, sizeof(state));
		bind_opt(&b, s->valid & PS_THREADS, s->threads);
		bind_u64(&b, s->user_ms);
		bind_u64(&b, s->system_ms);
		bind_u64(&b, s->child_user_ms);
		bind_u64(&b, s->child_system_ms);
		bind_opt(&b, s->valid & PS_RSS, s->rss_bytes);
		bind_opt(&b, s->valid & PS_HWM, s->hwm_bytes);
		bind_opt(&b, s->valid & PS_SWAP, s->swap_bytes);
		bind_opt(&b, s->valid & PS_IO, s->read_bytes);
		bind_opt(&b, s->valid & PS_IO, s->write_bytes);
		ret = fact_run(st, &b, "store a process sample");
	}
	return store__write_end(st, own, ret);
}

int store_put_job_sample(struct store *st, int64_t job_row, int64_t ts_ms,
			 const struct job_sample *s)
{
	struct binder b;
	bool own;
	int ret;

	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	ret = fact_start(st, STMT_JOB_SAMPLE, &b);
	if (ret == 0) {
		bind_i64(&b, job_row);
		bind_i64(&b, ts_ms);
		/* a column without a valid bit is always there */
#define BIND_JOB_COLUMN(c, type, since, bit) bind_opt(&b, !(bit) || (s->valid & (bit)), s->c);
		JOB_SAMPLE_COLUMNS(BIND_JOB_COLUMN)
#undef BIND_JOB_COLUMN
		ret = fact_run(st, &b, "store a job sample");
	}
	return store__write_end(st, own, ret);
}

_Static_assert(FACT_NCOLUMNS(EVENT_COLUMNS) == 5, "store_put_event binds 5");

int store_put_event(struct store *st, int64_t node_id, int64_t job_row,
		    const struct event_record *e)
{
	struct binder b;
	bool own;
	int ret;

	if (!e->kind[0])
		return log_err(-EINVAL, "cannot store an event in store '%s': no kind", st->path);
	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	ret = fact_start(st, STMT_EVENT, &b);
	if (ret == 0) {
		bind_nonzero(&b, node_id > 0 ? node_id : 0);
		bind_nonzero(&b, job_row > 0 ? job_row : 0);
		bind_i64(&b, e->ts_ms);
		bind_text(&b, e->kind, sizeof(e->kind));
		bind_nonzero(&b, e->pid);
		bind_i64(&b, e->value);
		bind_text(&b, e->message, sizeof(e->message));
		bind_opt(&b, e->has_gpu, (uint64_t)e->gpu);
		ret = fact_run(st, &b, "store an event");
	}
	return store__write_end(st, own, ret);
}

int store_put_device(struct store *st, int64_t node_id, struct device_record *dev)
{
	const struct gpu_device_info *g = &dev->info;
	struct binder b;
	bool own;
	int ret;

	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	ret = stmt_start(st, STMT_DEVICE, &b);
	if (ret == 0) {
		bind_i64(&b, node_id);
		bind_text(&b, dev->vendor, sizeof(dev->vendor));
		bind_i64(&b, g->index);
		bind_text(&b, g->uuid, sizeof(g->uuid));
		bind_text(&b, g->name, sizeof(g->name));
		bind_text(&b, g->pci_bus_id, sizeof(g->pci_bus_id));
		bind_opt(&b, g->valid & GPU_INFO_MEM_TOTAL, g->mem_total_bytes);
		bind_opt(&b, g->valid & GPU_INFO_POWER_LIMIT, g->power_limit_mw);
		bind_opt(&b, g->valid & GPU_INFO_NVLINKS, g->nvlink_count);
		bind_text(&b, dev->driver_version, sizeof(dev->driver_version));
		bind_i64(&b, g->supported);
		bind_i64(&b, g->prof_supported);
		bind_i64(&b, g->mig_enabled ? 1 : 0);
		bind_i64(&b, g->mig ? 1 : 0);
		/* an instance's own: NULL for a whole GPU ("" is NULL too) */
		bind_text(&b, g->mig ? dev->mig_parent_uuid : NULL, sizeof(dev->mig_parent_uuid));
		bind_opt(&b, g->mig, g->gpu_instance_id);
		bind_opt(&b, g->mig, g->compute_instance_id);
		bind_text(&b, g->mig ? g->mig_profile : NULL, sizeof(g->mig_profile));
		ret = stmt_run(st, &b, "store a GPU", &dev->id);
	}
	return store__write_end(st, own, ret);
}

int store_put_gpu_sample(struct store *st, int64_t device_row, int64_t ts_ms,
			 const struct gpu_sample *s)
{
	struct binder b;
	bool own;
	int ret;

	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	ret = fact_start(st, STMT_GPU_SAMPLE, &b);
	if (ret == 0) {
		bind_i64(&b, device_row);
		bind_i64(&b, ts_ms);
		/* temp_c is signed: through int64_t, every field keeps its value */
#define BIND_GPU_COLUMN(c, type, since, bit) bind_opt(&b, s->valid &(bit), (uint64_t)(int64_t)s->c);
		GPU_SAMPLE_COLUMNS(BIND_GPU_COLUMN)
#undef BIND_GPU_COLUMN
		/* then enum gpu_prof's figures, by prof_valid (all unsigned) */
#define BIND_PROF_COLUMN(c, type, since, bit) bind_opt(&b, s->prof_valid &(bit), (uint64_t)s->c);
		GPU_PROF_COLUMNS(BIND_PROF_COLUMN)
#undef BIND_PROF_COLUMN
		ret = fact_run(st, &b, "store a GPU sample");
	}
	return store__write_end(st, own, ret);
}

/* binds facts.h's GPU_PROC_SAMPLE_COLUMNS by hand, in their order */
_Static_assert(FACT_NCOLUMNS(GPU_PROC_SAMPLE_COLUMNS) == 8, "store_put_gpu_proc binds 8");

int store_put_gpu_proc(struct store *st, int64_t device_row, int64_t proc_row, int64_t job_row,
		       int64_t ts_ms, const struct gpu_proc *p)
{
	struct binder b;
	bool own;
	int ret;

	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	ret = fact_start(st, STMT_GPU_PROC, &b);
	if (ret == 0) {
		bind_i64(&b, device_row);
		bind_i64(&b, ts_ms);
		bind_i64(&b, p->pid);
		bind_nonzero(&b, proc_row > 0 ? proc_row : 0);
		bind_nonzero(&b, job_row > 0 && proc_row > 0 ? job_row : 0);
		bind_opt(&b, p->valid & GPU_PROC_MEM, p->mem_bytes);
		bind_opt(&b, p->valid & GPU_PROC_UTIL, p->sm_util_pct);
		bind_opt(&b, p->valid & GPU_PROC_MEM_UTIL, p->mem_util_pct);
		bind_i64(&b, p->graphics ? 1 : 0);
		bind_opt(&b, p->valid & GPU_PROC_MAX_MEM, p->max_mem_bytes);
		ret = fact_run(st, &b, "store a GPU process");
	}
	return store__write_end(st, own, ret);
}

int store_put_job_summary(struct store *st, const struct job_summary_record *s)
{
	struct binder b;
	bool own;
	int ret;

	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	ret = stmt_start(st, STMT_JOB_SUMMARY, &b);
	if (ret == 0) {
		bind_i64(&b, s->job_row);
		bind_i64(&b, s->wall_ms);
		bind_u64(&b, s->cpu_ms);
		bind_double_opt(&b, true, s->cpu_avg_cores);
		bind_double_opt(&b, true, s->cpu_peak_cores);
		bind_double_opt(&b, true, s->cpu_efficiency_pct);
		bind_nonzero(&b, (int64_t)s->rss_peak_bytes);
		bind_double_opt(&b, true, s->mem_efficiency_pct);
		bind_opt(&b, s->has_io, s->read_bytes);
		bind_opt(&b, s->has_io, s->write_bytes);
		bind_i64(&b, s->gpus_used);
		bind_double_opt(&b, s->gpus_used > 0, s->gpu_util_avg_pct);
		bind_double_opt(&b, s->gpus_used > 0, s->gpu_util_p95_pct);
		bind_opt(&b, s->has_gpu_mem, s->gpu_mem_peak_bytes);
		bind_opt(&b, s->has_gpu_energy, s->gpu_energy_mj);
		{
			const double prof[] = {
			    s->sm_active_avg_pct,     s->sm_occupancy_avg_pct,
			    s->tensor_active_avg_pct, s->dram_active_avg_pct,
			    s->fp64_active_avg_pct,   s->fp32_active_avg_pct,
			    s->fp16_active_avg_pct,   s->throttle_power_s,
			    s->throttle_thermal_s,
			};

			for (size_t i = 0; i < sizeof(prof) / sizeof(prof[0]); i++)
				bind_double_opt(&b, s->has_gpu_prof, prof[i]);
		}
		if (s->report_json)
			bind_keep(&b,
				  db_bind_text(b.stmt, ++b.col, s->report_json, -1, SQLITE_STATIC));
		else
			bind_keep(&b, db_bind_null(b.stmt, ++b.col));
		ret = stmt_run(st, &b, "store a job summary", NULL);
	}
	return store__write_end(st, own, ret);
}

int store_put_rollup(struct store *st, const struct rollup_record *r)
{
	struct binder b;
	bool own;
	int ret;

	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	ret = stmt_start(st, STMT_ROLLUP, &b);
	if (ret == 0) {
		bind_i64(&b, r->tier_ms);
		bind_i64(&b, r->node_id);
		bind_text(&b, r->entity, 32);
		bind_i64(&b, r->entity_id);
		bind_text(&b, r->metric, 64);
		bind_i64(&b, r->ts_ms);
		bind_i64(&b, r->n);
		bind_double_opt(&b, true, r->min);
		bind_double_opt(&b, true, r->avg);
		bind_double_opt(&b, true, r->max);
		ret = stmt_run(st, &b, "store a rollup", NULL);
	}
	return store__write_end(st, own, ret);
}

void store__writer_release(struct store *st)
{
	for (int i = 0; i < STMT__COUNT; i++) {
		db_finalize(st->stmts[i]);
		st->stmts[i] = NULL;
	}
}
