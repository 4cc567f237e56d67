/*
 * store.c - opening, creating and migrating a jobscope store, and the
 * writer: nodes, jobs, process rows and one transaction per tick.
 *
 * A file is judged from its raw header before SQLite may touch it, so a
 * file that is not ours is never modified.  The writer's statements are
 * prepared once and reused, and every fact row takes the next `seq`.
 */
#include "store/store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timeutil.h"

#define STORE_CREATED_BY	     "jobscope " JOBSCOPE_VERSION
#define SQLITE_HEADER_SIZE	     100
#define SQLITE_MAGIC		     "SQLite format 3" /* 16 bytes with its NUL */
#define SQLITE_USER_VERSION_OFFSET   60		       /* big-endian i32 */
#define SQLITE_APPLICATION_ID_OFFSET 68		       /* big-endian u32 */
#define STORE_BUSY_TIMEOUT_MS	     5000
#define WAL_SWITCH_RETRY_MS	     20 /* plus up to as much again, so two openers part */

/* Schema 1.  docs/store.md describes every column; keep the two in step. */
static const char store_schema_v1[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;\n"
    "CREATE TABLE nodes (id INTEGER PRIMARY KEY, hostname TEXT NOT NULL UNIQUE,"
    " cores INTEGER, mem_total_bytes INTEGER, boot_ms INTEGER) STRICT;\n"
    "CREATE TABLE jobs (id INTEGER PRIMARY KEY,"
    " node_id INTEGER NOT NULL REFERENCES nodes(id),"
    " scheduler TEXT NOT NULL, job_id TEXT NOT NULL, start_ms INTEGER NOT NULL,"
    " end_ms INTEGER, name TEXT, command TEXT, user TEXT, uid INTEGER, pid INTEGER,"
    " exit_code INTEGER, signal INTEGER, timed_out INTEGER NOT NULL DEFAULT 0,"
    " interval_ms INTEGER, cores_allowed INTEGER, host_cores INTEGER,"
    " host_mem_bytes INTEGER, samples INTEGER NOT NULL DEFAULT 0,"
    " lost_samples INTEGER NOT NULL DEFAULT 0, sampler_cpu_ms INTEGER,"
    " UNIQUE (scheduler, job_id, node_id, start_ms)) STRICT;\n"
    "CREATE TABLE procs (id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL,"
    " job_id INTEGER REFERENCES jobs(id), pid INTEGER NOT NULL, ppid INTEGER,"
    " start_ms INTEGER NOT NULL, end_ms INTEGER, uid INTEGER, comm TEXT, cmdline TEXT,"
    " UNIQUE (node_id, pid, start_ms)) STRICT;\n"
    "CREATE INDEX procs_job ON procs (job_id);\n"
    "CREATE TABLE host_samples (seq INTEGER PRIMARY KEY, node_id INTEGER NOT NULL,"
    " ts_ms INTEGER NOT NULL,"
    " cpu_user_ms INTEGER, cpu_nice_ms INTEGER, cpu_system_ms INTEGER,"
    " cpu_idle_ms INTEGER, cpu_iowait_ms INTEGER, cpu_irq_ms INTEGER,"
    " cpu_softirq_ms INTEGER, cpu_steal_ms INTEGER, ncpus INTEGER,"
    " mem_total_bytes INTEGER, mem_free_bytes INTEGER, mem_available_bytes INTEGER,"
    " mem_buffers_bytes INTEGER, mem_cached_bytes INTEGER, mem_shmem_bytes INTEGER,"
    " swap_total_bytes INTEGER, swap_free_bytes INTEGER,"
    " load1_milli INTEGER, load5_milli INTEGER, load15_milli INTEGER,"
    " procs_running INTEGER, procs_blocked INTEGER,"
    " disk_read_bytes INTEGER, disk_write_bytes INTEGER, disk_reads INTEGER,"
    " disk_writes INTEGER, net_rx_bytes INTEGER, net_tx_bytes INTEGER,"
    " net_rx_packets INTEGER, net_tx_packets INTEGER,"
    " psi_cpu_some_us INTEGER, psi_cpu_full_us INTEGER, psi_mem_some_us INTEGER,"
    " psi_mem_full_us INTEGER, psi_io_some_us INTEGER, psi_io_full_us INTEGER) STRICT;\n"
    "CREATE INDEX host_samples_node_ts ON host_samples (node_id, ts_ms);\n"
    "CREATE TABLE cpu_samples (seq INTEGER PRIMARY KEY, node_id INTEGER NOT NULL,"
    " ts_ms INTEGER NOT NULL, cpu INTEGER NOT NULL, user_ms INTEGER, nice_ms INTEGER,"
    " system_ms INTEGER, idle_ms INTEGER, iowait_ms INTEGER, irq_ms INTEGER,"
    " softirq_ms INTEGER, steal_ms INTEGER) STRICT;\n"
    "CREATE INDEX cpu_samples_node_ts ON cpu_samples (node_id, ts_ms);\n"
    "CREATE TABLE disk_samples (seq INTEGER PRIMARY KEY, node_id INTEGER NOT NULL,"
    " ts_ms INTEGER NOT NULL, disk TEXT NOT NULL, reads INTEGER, read_bytes INTEGER,"
    " writes INTEGER, write_bytes INTEGER, io_ms INTEGER) STRICT;\n"
    "CREATE INDEX disk_samples_node_ts ON disk_samples (node_id, ts_ms);\n"
    "CREATE TABLE net_samples (seq INTEGER PRIMARY KEY, node_id INTEGER NOT NULL,"
    " ts_ms INTEGER NOT NULL, iface TEXT NOT NULL, rx_bytes INTEGER, rx_packets INTEGER,"
    " tx_bytes INTEGER, tx_packets INTEGER) STRICT;\n"
    "CREATE INDEX net_samples_node_ts ON net_samples (node_id, ts_ms);\n"
    "CREATE TABLE proc_samples (seq INTEGER PRIMARY KEY, proc_id INTEGER NOT NULL,"
    " job_id INTEGER, ts_ms INTEGER NOT NULL, state TEXT, threads INTEGER, user_ms INTEGER,"
    " system_ms INTEGER, child_user_ms INTEGER, child_system_ms INTEGER,"
    " rss_bytes INTEGER, hwm_bytes INTEGER, swap_bytes INTEGER, read_bytes INTEGER,"
    " write_bytes INTEGER) STRICT;\n"
    /*
     * Not (proc_id, ts_ms): a tick's rows would land on as many index pages
     * as there are processes (44 ms per tick at 1000 processes).  By job, a
     * tick appends to one place, and a job's rows come out in seq order.
     */
    "CREATE INDEX proc_samples_job ON proc_samples (job_id);\n"
    "CREATE TABLE job_samples (seq INTEGER PRIMARY KEY, job_id INTEGER NOT NULL,"
    " ts_ms INTEGER NOT NULL, nprocs INTEGER, user_ms INTEGER, system_ms INTEGER,"
    " rss_bytes INTEGER, swap_bytes INTEGER, read_bytes INTEGER, write_bytes INTEGER,"
    " sampler_cpu_ms INTEGER) STRICT;\n"
    "CREATE INDEX job_samples_job_ts ON job_samples (job_id, ts_ms);\n"
    "CREATE TABLE events (seq INTEGER PRIMARY KEY, node_id INTEGER, job_id INTEGER,"
    " ts_ms INTEGER NOT NULL, kind TEXT NOT NULL, pid INTEGER, value INTEGER,"
    " message TEXT) STRICT;\n"
    "CREATE INDEX events_job_ts ON events (job_id, ts_ms);\n"
    "CREATE TABLE marks (seq INTEGER PRIMARY KEY, job_id INTEGER, ts_ms INTEGER NOT NULL,"
    " name TEXT NOT NULL, value REAL, text TEXT) STRICT;\n";

/* Schema 2: GPUs.  Devices, their samples, and the processes on them. */
static const char store_schema_v2[] =
    "CREATE TABLE devices (id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL,"
    " vendor TEXT NOT NULL, idx INTEGER NOT NULL, uuid TEXT NOT NULL, name TEXT,"
    " pci_bus_id TEXT, mem_total_bytes INTEGER, power_limit_mw INTEGER,"
    " nvlink_count INTEGER, driver_version TEXT, supported INTEGER NOT NULL DEFAULT 0,"
    " UNIQUE (node_id, uuid)) STRICT;\n"
    "CREATE TABLE gpu_samples (seq INTEGER PRIMARY KEY, device_id INTEGER NOT NULL,"
    " ts_ms INTEGER NOT NULL, util_pct INTEGER, mem_util_pct INTEGER,"
    " mem_used_bytes INTEGER, pcie_rx_bps INTEGER, pcie_tx_bps INTEGER,"
    " nvlink_rx_bytes INTEGER, nvlink_tx_bytes INTEGER, power_mw INTEGER,"
    " energy_mj INTEGER, temp_c INTEGER, sm_clock_mhz INTEGER, mem_clock_mhz INTEGER,"
    " throttle_reasons INTEGER, ecc_corrected INTEGER, ecc_uncorrected INTEGER) STRICT;\n"
    "CREATE INDEX gpu_samples_device_ts ON gpu_samples (device_id, ts_ms);\n"
    "CREATE TABLE gpu_proc_samples (seq INTEGER PRIMARY KEY, device_id INTEGER NOT NULL,"
    " ts_ms INTEGER NOT NULL, pid INTEGER NOT NULL, proc_id INTEGER, job_id INTEGER,"
    " mem_bytes INTEGER, sm_util_pct INTEGER, mem_util_pct INTEGER,"
    " graphics INTEGER NOT NULL DEFAULT 0) STRICT;\n"
    "CREATE INDEX gpu_proc_samples_device_ts ON gpu_proc_samples (device_id, ts_ms);\n"
    "ALTER TABLE events ADD COLUMN gpu_index INTEGER;\n";

/*
 * Schema 3: the agent.  What a scheduler reserved for a job, its cgroup's
 * counters, job summaries kept for ever, and the rollup tiers.
 */
static const char store_schema_v3[] =
    "ALTER TABLE jobs ADD COLUMN step TEXT;\n"
    "ALTER TABLE jobs ADD COLUMN cgroup TEXT;\n"
    "ALTER TABLE jobs ADD COLUMN qos TEXT;\n"
    "ALTER TABLE jobs ADD COLUMN reservation_source TEXT;\n"
    "ALTER TABLE jobs ADD COLUMN reserved_cpus REAL;\n"
    "ALTER TABLE jobs ADD COLUMN reserved_mem_bytes INTEGER;\n"
    "ALTER TABLE jobs ADD COLUMN reserved_gpus INTEGER;\n"
    "ALTER TABLE jobs ADD COLUMN reserved_gpu_list TEXT;\n"
    "CREATE INDEX jobs_end ON jobs (end_ms);\n"
    "ALTER TABLE job_samples ADD COLUMN cg_cpu_ms INTEGER;\n"
    "ALTER TABLE job_samples ADD COLUMN cg_mem_bytes INTEGER;\n"
    "ALTER TABLE job_samples ADD COLUMN cg_mem_peak_bytes INTEGER;\n"
    "CREATE TABLE job_summaries (job_id INTEGER PRIMARY KEY REFERENCES jobs(id),"
    " wall_ms INTEGER, cpu_ms INTEGER, cpu_avg_cores REAL, cpu_peak_cores REAL,"
    " cpu_efficiency_pct REAL, rss_peak_bytes INTEGER, mem_efficiency_pct REAL,"
    " read_bytes INTEGER, write_bytes INTEGER, gpus_used INTEGER,"
    " gpu_util_avg_pct REAL, gpu_util_p95_pct REAL, gpu_mem_peak_bytes INTEGER,"
    " gpu_energy_mj INTEGER, report_json TEXT) STRICT;\n"
    "CREATE TABLE rollups (id INTEGER PRIMARY KEY, tier_ms INTEGER NOT NULL,"
    " node_id INTEGER NOT NULL, entity TEXT NOT NULL, entity_id INTEGER NOT NULL,"
    " metric TEXT NOT NULL, ts_ms INTEGER NOT NULL, n INTEGER NOT NULL,"
    " min REAL, avg REAL, max REAL,"
    " UNIQUE (tier_ms, node_id, entity, entity_id, metric, ts_ms)) STRICT;\n"
    "CREATE INDEX rollups_tier_ts ON rollups (tier_ms, ts_ms);\n";

/* Schema 4: the head.  Each agent streaming to it, and how far it holds its rows. */
static const char store_schema_v4[] =
    "CREATE TABLE agents (agent_id TEXT PRIMARY KEY, node_id INTEGER NOT NULL,"
    " acked_seq INTEGER NOT NULL DEFAULT 0, first_seen_ms INTEGER, last_seen_ms INTEGER,"
    " interval_ms INTEGER, batches INTEGER NOT NULL DEFAULT 0,"
    " rows INTEGER NOT NULL DEFAULT 0) STRICT;\n"
    "CREATE TABLE sessions (id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    " start_ms INTEGER NOT NULL, end_ms INTEGER, interval_ms INTEGER, nodes TEXT) STRICT;\n"
    "CREATE INDEX sessions_name ON sessions (name, start_ms);\n";

/*
 * store_migrations[v] brings a store from schema v to v + 1; [0] creates
 * schema 1 in an empty file.  A new version appends one entry here and
 * bumps STORE_SCHEMA_VERSION.
 */
static const char *const store_migrations[STORE_SCHEMA_VERSION] = {
    store_schema_v1,
    store_schema_v2,
    store_schema_v3,
    store_schema_v4,
};

/* Tables a store must have (checked at open), with the schema that added them. */
static const struct {
	const char *name;
	int64_t since;
} store_tables[] = {
    {"meta", 1},	 {"nodes", 1},	      {"jobs", 1},
    {"procs", 1},	 {"host_samples", 1}, {"cpu_samples", 1},
    {"disk_samples", 1}, {"net_samples", 1},  {"proc_samples", 1},
    {"job_samples", 1},	 {"events", 1},	      {"marks", 1},
    {"devices", 2},	 {"gpu_samples", 2},  {"gpu_proc_samples", 2},
    {"job_summaries", 3}, {"rollups", 3}, {"agents", 4}, {"sessions", 4},
};

static const char *const store_sql[STMT__COUNT] = {
    [STMT_BEGIN] = "BEGIN IMMEDIATE",
    [STMT_COMMIT] = "COMMIT",
    [STMT_ROLLBACK] = "ROLLBACK",
    [STMT_NODE] = "INSERT INTO nodes (hostname, cores, mem_total_bytes, boot_ms)"
		  " VALUES (?, ?, ?, ?) ON CONFLICT (hostname) DO UPDATE SET"
		  " cores = excluded.cores, mem_total_bytes = excluded.mem_total_bytes,"
		  " boot_ms = excluded.boot_ms RETURNING id",
    [STMT_JOB_INSERT] = "INSERT INTO jobs (node_id, scheduler, job_id, start_ms, end_ms, name,"
			" command, user, uid, pid, exit_code, signal, timed_out, interval_ms,"
			" cores_allowed, host_cores, host_mem_bytes, samples, lost_samples,"
			" sampler_cpu_ms, step, cgroup, qos, reservation_source, reserved_cpus,"
			" reserved_mem_bytes, reserved_gpus, reserved_gpu_list)"
			" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
			" ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
    [STMT_JOB_SET_RUN_ID] = "UPDATE jobs SET job_id = CAST(id AS TEXT) WHERE id = ?",
    [STMT_JOB_UPDATE] = "UPDATE jobs SET end_ms = ?, name = ?, command = ?, user = ?, uid = ?,"
			" pid = ?, exit_code = ?, signal = ?, timed_out = ?, interval_ms = ?,"
			" cores_allowed = ?, host_cores = ?, host_mem_bytes = ?, samples = ?,"
			" lost_samples = ?, sampler_cpu_ms = ?, step = ?, cgroup = ?, qos = ?,"
			" reservation_source = ?, reserved_cpus = ?, reserved_mem_bytes = ?,"
			" reserved_gpus = ?, reserved_gpu_list = ? WHERE id = ?",
    [STMT_HOST] = "INSERT INTO host_samples (seq, node_id, ts_ms, " STORE_HOST_COLUMNS ")"
		  " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
		  " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [STMT_CPU] = "INSERT INTO cpu_samples (seq, node_id, ts_ms, cpu, user_ms, nice_ms,"
		 " system_ms, idle_ms, iowait_ms, irq_ms, softirq_ms, steal_ms)"
		 " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [STMT_DISK] = "INSERT INTO disk_samples (seq, node_id, ts_ms, disk, reads, read_bytes,"
		  " writes, write_bytes, io_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [STMT_NET] = "INSERT INTO net_samples (seq, node_id, ts_ms, iface, rx_bytes, rx_packets,"
		 " tx_bytes, tx_packets) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    [STMT_PROC_INFO] = "INSERT INTO procs (node_id, job_id, pid, ppid, start_ms, end_ms, uid,"
		       " comm, cmdline) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
		       " ON CONFLICT (node_id, pid, start_ms) DO UPDATE SET"
		       " ppid = excluded.ppid, comm = excluded.comm,"
		       " cmdline = excluded.cmdline,"
		       " job_id = coalesce(procs.job_id, excluded.job_id) RETURNING id",
    [STMT_PROC_UPDATE] = "UPDATE procs SET end_ms = coalesce(?, end_ms),"
			 " ppid = coalesce(?, ppid), comm = coalesce(?, comm),"
			 " cmdline = coalesce(?, cmdline) WHERE id = ?",
    [STMT_PROC_SAMPLE] = "INSERT INTO proc_samples (seq, proc_id, job_id, ts_ms, state,"
			 " threads, user_ms, system_ms, child_user_ms, child_system_ms,"
			 " rss_bytes, hwm_bytes, swap_bytes, read_bytes, write_bytes)"
			 " VALUES (?1, ?2, (SELECT job_id FROM procs WHERE id = ?2), ?3, ?4,"
			 " ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    [STMT_JOB_SAMPLE] = "INSERT INTO job_samples (seq, job_id, ts_ms, nprocs, user_ms,"
			" system_ms, rss_bytes, swap_bytes, read_bytes, write_bytes,"
			" sampler_cpu_ms, cg_cpu_ms, cg_mem_bytes, cg_mem_peak_bytes)"
			" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [STMT_EVENT] = "INSERT INTO events (seq, node_id, job_id, ts_ms, kind, pid, value, message,"
		   " gpu_index) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [STMT_DEVICE] = "INSERT INTO devices (node_id, vendor, idx, uuid, name, pci_bus_id,"
		    " mem_total_bytes, power_limit_mw, nvlink_count, driver_version, supported)"
		    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		    " ON CONFLICT (node_id, uuid) DO UPDATE SET vendor = excluded.vendor,"
		    " idx = excluded.idx, name = excluded.name, pci_bus_id = excluded.pci_bus_id,"
		    " mem_total_bytes = excluded.mem_total_bytes,"
		    " power_limit_mw = excluded.power_limit_mw,"
		    " nvlink_count = excluded.nvlink_count,"
		    " driver_version = excluded.driver_version, supported = excluded.supported"
		    " RETURNING id",
    [STMT_GPU_SAMPLE] = "INSERT INTO gpu_samples (seq, device_id, ts_ms, util_pct, mem_util_pct,"
			" mem_used_bytes, pcie_rx_bps, pcie_tx_bps, nvlink_rx_bytes,"
			" nvlink_tx_bytes, power_mw, energy_mj, temp_c, sm_clock_mhz,"
			" mem_clock_mhz, throttle_reasons, ecc_corrected, ecc_uncorrected)"
			" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [STMT_GPU_PROC] = "INSERT INTO gpu_proc_samples (seq, device_id, ts_ms, pid, proc_id, job_id,"
		      " mem_bytes, sm_util_pct, mem_util_pct, graphics)"
		      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [STMT_JOB_SUMMARY] = "INSERT OR REPLACE INTO job_summaries (job_id, wall_ms, cpu_ms,"
			 " cpu_avg_cores, cpu_peak_cores, cpu_efficiency_pct, rss_peak_bytes,"
			 " mem_efficiency_pct, read_bytes, write_bytes, gpus_used,"
			 " gpu_util_avg_pct, gpu_util_p95_pct, gpu_mem_peak_bytes, gpu_energy_mj,"
			 " report_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [STMT_ROLLUP] = "INSERT INTO rollups (tier_ms, node_id, entity, entity_id, metric, ts_ms,"
		    " n, min, avg, max) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		    " ON CONFLICT (tier_ms, node_id, entity, entity_id, metric, ts_ms) DO UPDATE"
		    " SET min = min(min, excluded.min), max = max(max, excluded.max),"
		    " avg = (avg * n + excluded.avg * excluded.n) / (n + excluded.n),"
		    " n = n + excluded.n",
};

int store__errno(sqlite3 *db, int rc)
{
	int sys;

	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
	case SQLITE_FORMAT:
	case SQLITE_ERROR: /* our SQL is fixed: "no such table" etc. means a foreign schema */
		return -EPROTO;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_INTERRUPT:
		return -EINTR;
	case SQLITE_TOOBIG:
		return -E2BIG;
	case SQLITE_CONSTRAINT:
		if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY)
			return -EEXIST;
		return -EINVAL;
	case SQLITE_MISMATCH:
	case SQLITE_RANGE:
	case SQLITE_MISUSE:
		return -EINVAL;
	case SQLITE_CANTOPEN:
	case SQLITE_IOERR:
		sys = db ? sqlite3_system_errno(db) : 0;
		return sys > 0 ? -sys : -EIO;
	default:
		return -EIO;
	}
}

void store__printable(char *dst, size_t size, const char *src)
{
	size_t i;

	for (i = 0; src && src[i] && i + 1 < size; i++) {
		if (src[i] == '\n' || src[i] == '\t')
			dst[i] = ' ';
		else
			dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	}
	dst[i] = '\0';
}

const char *store__errmsg(struct store *st)
{
	store__printable(st->errmsg, sizeof(st->errmsg), sqlite3_errmsg(st->db));
	return st->errmsg;
}

/* Binding a row's values in column order; the first failure is kept. */
struct binder {
	sqlite3_stmt *stmt;
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
	bind_keep(b, sqlite3_bind_int64(b->stmt, ++b->col, v));
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
		bind_keep(b, sqlite3_bind_null(b->stmt, ++b->col));
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
		bind_keep(b, sqlite3_bind_null(b->stmt, ++b->col));
	else
		bind_keep(b, sqlite3_bind_text(b->stmt, ++b->col, s, (int)len, SQLITE_STATIC));
}

/* Reports a failed write, except a full disk: the caller counts those. */
static int store_write_fail(struct store *st, int rc, const char *what)
{
	int ret = store__errno(st->db, rc);

	if (ret == -ENOSPC)
		return ret;
	if (ret == 0)
		ret = -EIO;
	return log_err(ret, "cannot %s in store '%s' (%s)", what, st->path, store__errmsg(st));
}

static int stmt_get(struct store *st, enum store_stmt id, sqlite3_stmt **out)
{
	int rc;

	if (!st->stmts[id]) {
		rc = sqlite3_prepare_v3(st->db, store_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
					&st->stmts[id], NULL);
		if (rc != SQLITE_OK)
			return store_write_fail(st, rc, "prepare a statement");
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
		rc = sqlite3_step(b->stmt);
		if (rc == SQLITE_ROW && !got_row) {
			got_row = true;
			if (row_id)
				*row_id = sqlite3_column_int64(b->stmt, 0);
		}
	}
	if (rc != SQLITE_DONE)
		ret = store_write_fail(st, rc, what);
	else if (row_id && !got_row)
		ret = log_err(-EIO, "cannot %s in store '%s' (no row id returned)", what, st->path);
	sqlite3_reset(b->stmt);
	sqlite3_clear_bindings(b->stmt);
	return ret;
}

static int stmt_start(struct store *st, enum store_stmt id, struct binder *b)
{
	int ret = stmt_get(st, id, &b->stmt);

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
	sqlite3_stmt *stmt = NULL;

	if (sqlite3_get_autocommit(st->db))
		return;
	if (stmt_get(st, STMT_ROLLBACK, &stmt) == 0 && stmt) {
		sqlite3_step(stmt);
		sqlite3_reset(stmt);
	}
	if (!sqlite3_get_autocommit(st->db))
		log_warn(0, "cannot roll back a transaction in store '%s' (%s)", st->path,
			 store__errmsg(st));
}

static int sync_seq(struct store *st);

/*
 * Every write runs in a transaction: the tick's when one is open, its own
 * otherwise.  Inside a tick, the first failure sticks: SQLite may already
 * have rolled the transaction back, and later rows must not be committed
 * one by one in autocommit mode.
 */
static int write_begin(struct store *st, bool *own)
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

static int write_end(struct store *st, bool own, int ret)
{
	if (!own) {
		if (ret && st->in_tick && !st->tick_err)
			st->tick_err = ret;
		return ret;
	}
	if (ret == 0)
		ret = simple_stmt(st, STMT_COMMIT, "commit");
	if (ret) {
		rollback_quietly(st);
		st->next_seq = st->tick_seq;
	}
	return ret;
}

static int mkdir_parents(const char *path)
{
	char dir[PATH_MAX];
	char *p, *slash;
	char c;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (p = dir + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		c = *p;
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = c;
		if (c == '\0')
			return 0;
	}
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int refuse_newer(const char *path, int64_t version)
{
	log_err(0, "'%s' was written by a newer jobscope (schema %lld, this one reads up to %d)",
		path, (long long)version, STORE_SCHEMA_VERSION);
	return -EPROTONOSUPPORT;
}

static int refuse(const char *path, int ret, const char *why)
{
	log_err(0, "'%s' is not a jobscope store (%s)", path, why);
	return ret;
}

static int refuse_corrupt(const char *path, const char *why)
{
	log_err(0, "'%s' is a corrupt jobscope store (%s)", path, why);
	return -EPROTO;
}

/*
 * Judges the file before SQLite opens it: a non-empty file must carry the
 * SQLite magic and our application_id, read here from the raw header so
 * that a foreign file is never handed to SQLite for writing.  Creates the
 * file (and its directories) with STORE_CREATE; *is_new when it is empty.
 */
/*
 * A database with nothing in it: one page, whose sqlite_schema b-tree (the
 * page header after the 100-byte file header) holds no cell.
 */
static bool empty_database(int fd, const unsigned char *hdr, const struct stat *sb)
{
	unsigned char btree[8];
	uint32_t page_size = (uint32_t)hdr[16] << 8 | hdr[17];

	if (page_size == 1)
		page_size = 65536;
	if ((uint64_t)sb->st_size != page_size)
		return false;
	if (pread(fd, btree, sizeof(btree), SQLITE_HEADER_SIZE) != (ssize_t)sizeof(btree))
		return false;
	return btree[0] == 0x0d && btree[3] == 0 && btree[4] == 0; /* leaf table, 0 cells */
}

static int store_check_file(const char *path, unsigned flags, bool *is_new)
{
	unsigned char hdr[SQLITE_HEADER_SIZE];
	uint32_t app_id;
	int32_t version;
	struct stat sb;
	char why[128];
	ssize_t n;
	size_t len = 0;
	int fd, ret;

	*is_new = false;
	/* O_NONBLOCK: a FIFO must not hang us before fstat says what it is */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT && (flags & STORE_CREATE)) {
		ret = mkdir_parents(path);
		if (ret)
			return log_err(ret, "cannot create the directory of store '%s'", path);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
		if (fd < 0)
			return log_err(-errno, "cannot create store '%s'", path);
	}
	if (fd < 0)
		return log_err(-errno, "cannot open store '%s'", path);
	if (fstat(fd, &sb) < 0) {
		ret = log_err(-errno, "cannot open store '%s'", path);
		goto out_close_fd;
	}
	if (S_ISDIR(sb.st_mode)) {
		ret = log_err(-EISDIR, "cannot open store '%s'", path);
		goto out_close_fd;
	}
	if (!S_ISREG(sb.st_mode)) {
		ret = refuse(path, -EPROTO, "not a regular file");
		goto out_close_fd;
	}
	if (sb.st_size == 0) {
		*is_new = flags & STORE_CREATE;
		ret = *is_new ? 0 : refuse(path, -EPROTO, "empty file");
		goto out_close_fd;
	}
	while (len < sizeof(hdr)) {
		n = pread(fd, hdr + len, sizeof(hdr) - len, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = log_err(-errno, "cannot read store '%s'", path);
			goto out_close_fd;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len < sizeof(SQLITE_MAGIC) || memcmp(hdr, SQLITE_MAGIC, sizeof(SQLITE_MAGIC)) != 0) {
		ret = refuse(path, -EPROTO, "not an SQLite database");
		goto out_close_fd;
	}
	if (len < sizeof(hdr)) {
		ret = refuse_corrupt(path, "truncated header");
		goto out_close_fd;
	}
	app_id = be32(hdr + SQLITE_APPLICATION_ID_OFFSET);
	/* may lag behind a WAL, so only a first check: store_check_schema decides */
	version = (int32_t)be32(hdr + SQLITE_USER_VERSION_OFFSET);
	ret = 0;
	if (app_id == 0 && version == 0 && (flags & STORE_CREATE) && empty_database(fd, hdr, &sb)) {
		/* another jobscope is creating it (PRAGMA auto_vacuum wrote page 1) */
		*is_new = true;
	} else if (app_id != STORE_APPLICATION_ID) {
		if (app_id == 0)
			snprintf(why, sizeof(why), "an SQLite database of another application");
		else
			snprintf(why, sizeof(why),
				 "an SQLite database of another application, application_id 0x%08x",
				 app_id);
		ret = refuse(path, -EPROTO, why);
	} else if (version > STORE_SCHEMA_VERSION) {
		ret = refuse_newer(path, version);
	}
out_close_fd:
	close(fd);
	return ret;
}

/* Fails the open: corruption is -EPROTO and says so, the rest names the errno. */
static int open_fail(struct store *st, int rc, const char *what)
{
	int ret = store__errno(st->db, rc);

	if ((rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB)
		return refuse_corrupt(st->path, store__errmsg(st));
	if (ret == 0)
		ret = -EIO;
	return log_err(ret, "cannot %s store '%s' (%s)", what, st->path, store__errmsg(st));
}

/* A one-integer query (PRAGMA user_version, counts). */
static int query_i64(struct store *st, const char *sql, int64_t *out)
{
	sqlite3_stmt *stmt;
	int rc;

	rc = sqlite3_prepare_v2(st->db, sql, -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return open_fail(st, rc, "read");
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(stmt, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_OK && rc != SQLITE_DONE)
		return open_fail(st, rc, "read");
	if (rc == SQLITE_DONE)
		*out = 0;
	return 0;
}

static int exec_sql(struct store *st, const char *sql, const char *what)
{
	int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);

	if (rc != SQLITE_OK)
		return open_fail(st, rc, what);
	return 0;
}

/*
 * Brings the schema from its user_version to STORE_SCHEMA_VERSION in one
 * transaction; from 0 (an empty file) creates it.  The version is read
 * under the write lock: another jobscope may have created the file since
 * we looked.
 */
static int store_migrate(struct store *st)
{
	char sql[512];
	int64_t version, app_id, nobjects;
	int ret;

	ret = exec_sql(st, "BEGIN IMMEDIATE", "lock");
	if (ret)
		return ret;
	ret = query_i64(st, "PRAGMA user_version", &version);
	if (ret)
		goto out_rollback;
	ret = query_i64(st, "PRAGMA application_id", &app_id);
	if (ret)
		goto out_rollback;
	if (version == 0) {
		ret = query_i64(st, "SELECT count(*) FROM sqlite_schema", &nobjects);
		if (ret)
			goto out_rollback;
		if (app_id != 0 || nobjects != 0) {
			ret = refuse_corrupt(st->path, "no schema version");
			goto out_rollback;
		}
	} else if (app_id != STORE_APPLICATION_ID) {
		ret = refuse(st->path, -EPROTO, "an SQLite database of another application");
		goto out_rollback;
	}
	if (version >= STORE_SCHEMA_VERSION)
		return exec_sql(st, "COMMIT", "unlock");

	for (; version < STORE_SCHEMA_VERSION; version++) {
		ret = exec_sql(st, store_migrations[version], "create the schema of");
		if (ret)
			goto out_rollback;
	}
	snprintf(sql, sizeof(sql),
		 "PRAGMA application_id = %d;"
		 "INSERT INTO meta (key, value) VALUES ('created_ms', '%lld'),"
		 " ('created_by', '" STORE_CREATED_BY "') ON CONFLICT DO NOTHING;"
		 "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', '%d');"
		 "PRAGMA user_version = %d;",
		 STORE_APPLICATION_ID, (long long)time_now_ms(), STORE_SCHEMA_VERSION,
		 STORE_SCHEMA_VERSION);
	ret = exec_sql(st, sql, "create the schema of");
	if (ret)
		goto out_rollback;
	return exec_sql(st, "COMMIT", "create the schema of");

out_rollback:
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return ret;
}

/*
 * The checks on an existing store, in the order that gives the clearest
 * message: ours, not newer, not older (migrated when writable), intact,
 * and holding the tables we query.
 */
static int store_check_schema(struct store *st)
{
	char msg[160];
	sqlite3_stmt *stmt;
	int64_t app_id, version, ntables, pages, page_size;
	size_t i;
	int rc, ret;

	ret = query_i64(st, "PRAGMA application_id", &app_id);
	if (ret)
		return ret;
	if (app_id != STORE_APPLICATION_ID)
		return refuse(st->path, -EPROTO, "an SQLite database of another application");
	ret = query_i64(st, "PRAGMA user_version", &version);
	if (ret)
		return ret;
	if (version > STORE_SCHEMA_VERSION)
		return refuse_newer(st->path, version);
	if (version <= 0)
		return refuse_corrupt(st->path, "no schema version");

	/*
	 * quick_check reads every page: 6 s for a 2 GB store, which a report
	 * must not pay on each open.  Larger stores are checked page by page
	 * as they are read (SQLite reports SQLITE_CORRUPT, which every reader
	 * turns into a clear error).
	 */
	ret = query_i64(st, "PRAGMA page_count", &pages);
	if (ret)
		return ret;
	ret = query_i64(st, "PRAGMA page_size", &page_size);
	if (ret)
		return ret;
	if (pages * page_size > STORE_QUICK_CHECK_MAX_BYTES)
		goto checked;
	rc = sqlite3_prepare_v2(st->db, "PRAGMA quick_check", -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return open_fail(st, rc, "check");
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		const char *res = (const char *)sqlite3_column_text(stmt, 0);

		if (!res || strcmp(res, "ok") != 0) {
			char printable[sizeof(msg) - 16];

			store__printable(printable, sizeof(printable), res ? res : "?");
			snprintf(msg, sizeof(msg), "quick_check: %s", printable);
			sqlite3_finalize(stmt);
			return refuse_corrupt(st->path, msg);
		}
		rc = SQLITE_OK;
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_OK && rc != SQLITE_DONE)
		return open_fail(st, rc, "check");
checked:
	/* an older store is read as it is, and upgraded when opened for writing */
	if (version < STORE_SCHEMA_VERSION && st->writable) {
		ret = store_migrate(st);
		if (ret)
			return ret;
		version = STORE_SCHEMA_VERSION;
	}
	st->schema_version = version;

	for (i = 0; i < sizeof(store_tables) / sizeof(store_tables[0]); i++) {
		if (store_tables[i].since > version)
			continue;
		snprintf(msg, sizeof(msg),
			 "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = '%s'",
			 store_tables[i].name);
		ret = query_i64(st, msg, &ntables);
		if (ret)
			return ret;
		if (ntables != 1) {
			snprintf(msg, sizeof(msg), "no table %s", store_tables[i].name);
			return refuse_corrupt(st->path, msg);
		}
	}
	return 0;
}

/* Writer settings; WAL lets readers in while `jobscope run` writes. */
/* The next seq after every fact row in the file, whoever wrote it. */
static int load_next_seq(struct store *st)
{
	int ret = query_i64(st, "PRAGMA data_version", &st->data_version);

	if (ret)
		return ret;
	return query_i64(st,
			 "SELECT 1 + max(coalesce((SELECT max(seq) FROM host_samples), 0),"
			 " coalesce((SELECT max(seq) FROM cpu_samples), 0),"
			 " coalesce((SELECT max(seq) FROM disk_samples), 0),"
			 " coalesce((SELECT max(seq) FROM net_samples), 0),"
			 " coalesce((SELECT max(seq) FROM proc_samples), 0),"
			 " coalesce((SELECT max(seq) FROM job_samples), 0),"
			 " coalesce((SELECT max(seq) FROM events), 0),"
			 " coalesce((SELECT max(seq) FROM marks), 0),"
			 " coalesce((SELECT max(seq) FROM gpu_samples), 0),"
			 " coalesce((SELECT max(seq) FROM gpu_proc_samples), 0))",
			 &st->next_seq);
}

/*
 * Called with the write lock held (BEGIN IMMEDIATE).  Another process may
 * write to the same store (two `jobscope run`s sharing the default one):
 * when it committed since we last looked, our seq counter is stale.  SQLite's
 * data_version changes exactly then, so a tick costs one pragma when alone.
 */
static int sync_seq(struct store *st)
{
	int64_t version;
	int ret = query_i64(st, "PRAGMA data_version", &version);

	if (ret || version == st->data_version)
		return ret;
	return load_next_seq(st);
}

static int store_setup_writer(struct store *st)
{
	sqlite3_stmt *stmt;
	const char *mode;
	int rc, ret;

	rc = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode = WAL", -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return open_fail(st, rc, "set up");
	/*
	 * Two writers opening a new store at once (two `jobscope run`s on the
	 * default one): the switch needs the file to itself, and SQLite answers
	 * SQLITE_BUSY at once rather than wait when waiting could deadlock.
	 * Let go and try again for as long as the busy timeout.
	 */
	for (int tries = 0;; tries++) {
		rc = sqlite3_step(stmt);
		if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) ||
		    tries * WAL_SWITCH_RETRY_MS >= STORE_BUSY_TIMEOUT_MS)
			break;
		sqlite3_reset(stmt);
		sqlite3_sleep(WAL_SWITCH_RETRY_MS + (int)(time_mono_ns() % WAL_SWITCH_RETRY_MS));
	}
	mode = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(stmt, 0) : NULL;
	ret = 0;
	if (rc != SQLITE_ROW)
		ret = open_fail(st, rc, "switch to WAL mode");
	else if (!mode || strcmp(mode, "wal") != 0)
		ret = log_err(-EIO, "cannot switch store '%s' to WAL mode (still '%s')", st->path,
			      mode ? mode : "?");
	sqlite3_finalize(stmt);
	if (ret)
		return ret;
	ret = exec_sql(st, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;", "set up");
	if (ret)
		return ret;
	return load_next_seq(st);
}

static bool sibling_path(char *buf, size_t size, const char *path, const char *suffix)
{
	int n = snprintf(buf, size, "%s%s", path, suffix);

	return n > 0 && (size_t)n < size;
}

static bool sibling_exists(const char *path, const char *suffix)
{
	char p[PATH_MAX + 8];

	return sibling_path(p, sizeof(p), path, suffix) && access(p, F_OK) == 0;
}

/*
 * A read-only connection to a WAL-mode file creates -wal and -shm and
 * cannot remove them.  After a refused open, remove those we created, so a
 * file we would not open is left as it was, with nothing beside it.
 */
static void remove_created_siblings(const char *path, bool had_wal, bool had_shm)
{
	char p[PATH_MAX + 8];
	struct stat sb;

	if (!had_wal && sibling_path(p, sizeof(p), path, "-wal") && stat(p, &sb) == 0 &&
	    sb.st_size == 0)
		unlink(p);
	if (!had_shm && sibling_path(p, sizeof(p), path, "-shm"))
		unlink(p);
}

int store_open(const char *path, unsigned flags, struct store **out)
{
	struct store *st;
	bool is_new, had_wal, had_shm;
	int rc, ret;

	*out = NULL;
	if (!path || !*path)
		return log_err(-EINVAL, "cannot open store: empty path");
	if (strlen(path) >= PATH_MAX)
		return log_err(-ENAMETOOLONG, "cannot open store '%s'", path);
	ret = store_check_file(path, flags, &is_new);
	if (ret)
		return ret;

	st = calloc(1, sizeof(*st));
	if (!st)
		return log_err(-ENOMEM, "cannot open store '%s'", path);
	snprintf(st->path, sizeof(st->path), "%s", path);
	st->writable = flags & STORE_CREATE;
	st->next_seq = 1;

	had_wal = sibling_exists(path, "-wal");
	had_shm = sibling_exists(path, "-shm");
	rc = sqlite3_open_v2(path, &st->db,
			     (st->writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) |
				 SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
			     NULL);
	if (rc != SQLITE_OK) {
		ret = open_fail(st, rc, "open");
		goto out_close_db;
	}
	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, STORE_BUSY_TIMEOUT_MS);
	/* the file is data, not code: no functions with side effects in its schema */
	sqlite3_db_config(st->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
	sqlite3_db_config(st->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	if (st->writable && sqlite3_db_readonly(st->db, "main") == 1) {
		ret = log_err(-EACCES, "cannot write to store '%s'", path);
		goto out_close_db;
	}

	if (is_new) {
		/* only possible before the first table: lets retention shrink the file */
		sqlite3_exec(st->db, "PRAGMA auto_vacuum = INCREMENTAL", NULL, NULL, NULL);
		ret = store_migrate(st);
		if (ret)
			goto out_close_db;
	}
	ret = store_check_schema(st);
	if (ret)
		goto out_close_db;
	if (st->writable) {
		ret = store_setup_writer(st);
		if (ret)
			goto out_close_db;
	}
	*out = st;
	return 0;

out_close_db:
	sqlite3_close(st->db);
	remove_created_siblings(path, had_wal, had_shm);
	free(st);
	return ret;
}

void store_close(struct store *st)
{
	int i;

	if (!st)
		return;
	if (st->in_tick)
		store_tick_abort(st);
	for (i = 0; i < STMT__COUNT; i++)
		sqlite3_finalize(st->stmts[i]);
	for (size_t k = 0; k < st->ningest_cache; k++) {
		sqlite3_finalize(st->ingest_cache[k].stmt);
		free(st->ingest_cache[k].sql);
	}
	store__memo_free(st->memo);
	if (sqlite3_close(st->db) != SQLITE_OK)
		log_warn(0, "store '%s' not closed cleanly (%s)", st->path, store__errmsg(st));
	free(st);
}

int store_set_durable(struct store *st)
{
	return exec_sql(st, "PRAGMA synchronous = FULL", "set up");
}

const char *store_path(const struct store *st)
{
	return st->path;
}

int store_meta_get(struct store *st, const char *key, char *buf, size_t size)
{
	sqlite3_stmt *stmt;
	int rc, ret = -ENOENT;

	rc = sqlite3_prepare_v2(st->db, "SELECT value FROM meta WHERE key = ?", -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return store__errno(st->db, rc);
	sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(stmt, 0);

		snprintf(buf, size, "%s", v ? (const char *)v : "");
		ret = 0;
	} else if (rc != SQLITE_DONE) {
		ret = store__errno(st->db, rc);
	}
	sqlite3_finalize(stmt);
	return ret;
}

int store_meta_set(struct store *st, const char *key, const char *value)
{
	sqlite3_stmt *stmt;
	bool own;
	int rc, ret;

	ret = write_begin(st, &own);
	if (ret)
		return ret;
	rc = sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", -1,
				&stmt, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
		sqlite3_bind_text(stmt, 2, value, -1, SQLITE_STATIC);
		rc = sqlite3_step(stmt);
		sqlite3_finalize(stmt);
	}
	ret = rc == SQLITE_DONE || rc == SQLITE_OK ? 0 : store_write_fail(st, rc, "set a meta value");
	return write_end(st, own, ret);
}

int store_node(struct store *st, const char *hostname, int32_t cores, uint64_t mem_total_bytes,
	       int64_t boot_ms, int64_t *node_id)
{
	struct binder b;
	bool own;
	int ret;

	if (!hostname || !*hostname)
		return log_err(-EINVAL, "cannot add a node to store '%s': no hostname", st->path);
	ret = write_begin(st, &own);
	if (ret)
		return ret;
	ret = stmt_start(st, STMT_NODE, &b);
	if (ret == 0) {
		bind_keep(&b, sqlite3_bind_text(b.stmt, ++b.col, hostname, -1, SQLITE_STATIC));
		bind_nonzero(&b, cores);
		bind_nonzero(&b, (int64_t)mem_total_bytes);
		bind_nonzero(&b, boot_ms);
		ret = stmt_run(st, &b, "add a node", node_id);
	}
	return write_end(st, own, ret);
}

static void bind_double_opt(struct binder *b, bool valid, double v)
{
	if (valid && !isnan(v))
		bind_keep(b, sqlite3_bind_double(b->stmt, ++b->col, v));
	else
		bind_keep(b, sqlite3_bind_null(b->stmt, ++b->col));
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
	ret = write_begin(st, &own);
	if (ret)
		return ret;
	ret = stmt_start(st, STMT_JOB_INSERT, &b);
	if (ret)
		goto out_end;
	bind_i64(&b, job->node_id);
	bind_text(&b, job->scheduler, sizeof(job->scheduler));
	/* "run" jobs get their row id as job_id, set below in this transaction */
	bind_keep(&b, sqlite3_bind_text(b.stmt, ++b.col, is_run ? "" : job->job_id,
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
	return write_end(st, own, ret);
}

int store_job_update(struct store *st, const struct job_record *job)
{
	struct binder b;
	bool own;
	int ret;

	ret = write_begin(st, &own);
	if (ret)
		return ret;
	ret = stmt_start(st, STMT_JOB_UPDATE, &b);
	if (ret == 0) {
		bind_job_state(&b, job);
		bind_i64(&b, job->id);
		ret = stmt_run(st, &b, "update a job", NULL);
	}
	if (ret == 0 && sqlite3_changes(st->db) != 1)
		ret = log_err(-ENOENT, "cannot update job %lld in store '%s'", (long long)job->id,
			      st->path);
	return write_end(st, own, ret);
}

int store_tick_begin(struct store *st)
{
	int ret;

	if (st->in_tick)
		return log_err(-EINVAL, "store '%s': a tick is already open", st->path);
	if (!st->writable)
		return log_err(-EROFS, "cannot write to store '%s': opened read-only", st->path);
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
		bind_keep(&b,
			  sqlite3_bind_text(b.stmt, ++b.col, d->name,
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
		bind_keep(&b, sqlite3_bind_text(b.stmt, ++b.col, ns->name,
						(int)strnlen(ns->name, sizeof(ns->name)),
						SQLITE_STATIC));
		bind_u64(&b, ns->rx_bytes);
		bind_u64(&b, ns->rx_packets);
		bind_u64(&b, ns->tx_bytes);
		bind_u64(&b, ns->tx_packets);
		ret = fact_run(st, &b, "store a network sample");
	}
	return ret;
}

/* The host row, then its per-CPU, disk and interface rows: the reader finds them by (node, ts). */
int store_put_host(struct store *st, int64_t node_id, int64_t ts_ms, const struct host_sample *h)
{
	bool own;
	int ret;

	ret = write_begin(st, &own);
	if (ret)
		return ret;
	ret = put_host_row(st, node_id, ts_ms, h);
	if (ret == 0 && (h->valid & HOST_HAS_CPU))
		ret = put_cpu_rows(st, node_id, ts_ms, &h->cpu);
	if (ret == 0 && (h->valid & HOST_HAS_DISK))
		ret = put_disk_rows(st, node_id, ts_ms, h);
	if (ret == 0 && (h->valid & HOST_HAS_NET))
		ret = put_net_rows(st, node_id, ts_ms, h);
	return write_end(st, own, ret);
}

int store_put_proc_info(struct store *st, int64_t node_id, int64_t job_row,
			const struct proc_info *p, int64_t *proc_row)
{
	struct binder b;
	bool own;
	int ret;

	ret = write_begin(st, &own);
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
		ret = stmt_run(st, &b, "store a process", proc_row);
	}
	return write_end(st, own, ret);
}

int store_update_proc_info(struct store *st, int64_t proc_row, const struct proc_info *p)
{
	struct binder b;
	bool own;
	int ret;

	ret = write_begin(st, &own);
	if (ret)
		return ret;
	ret = stmt_start(st, STMT_PROC_UPDATE, &b);
	if (ret == 0) {
		bind_nonzero(&b, p->end_ms);
		bind_nonzero(&b, p->ppid);
		bind_text(&b, p->comm, sizeof(p->comm));
		bind_text(&b, p->cmdline, sizeof(p->cmdline));
		bind_i64(&b, proc_row);
		ret = stmt_run(st, &b, "update a process", NULL);
	}
	return write_end(st, own, ret);
}

int store_put_proc_sample(struct store *st, int64_t proc_row, int64_t ts_ms,
			  const struct proc_sample *s)
{
	struct binder b;
	char state[2] = {s->state, '\0'};
	bool own;
	int ret;

	ret = write_begin(st, &own);
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
	return write_end(st, own, ret);
}

int store_put_job_sample(struct store *st, int64_t job_row, int64_t ts_ms,
			 const struct job_sample *s)
{
	struct binder b;
	bool own;
	int ret;

	ret = write_begin(st, &own);
	if (ret)
		return ret;
	ret = fact_start(st, STMT_JOB_SAMPLE, &b);
	if (ret == 0) {
		bind_i64(&b, job_row);
		bind_i64(&b, ts_ms);
		bind_u64(&b, s->nprocs);
		bind_u64(&b, s->user_ms);
		bind_u64(&b, s->system_ms);
		bind_u64(&b, s->rss_bytes);
		bind_opt(&b, s->valid & JS_SWAP, s->swap_bytes);
		bind_opt(&b, s->valid & JS_IO, s->read_bytes);
		bind_opt(&b, s->valid & JS_IO, s->write_bytes);
		bind_u64(&b, s->sampler_cpu_ms);
		bind_opt(&b, s->valid & JS_CG_CPU, s->cg_cpu_ms);
		bind_opt(&b, s->valid & JS_CG_MEM, s->cg_mem_bytes);
		bind_opt(&b, s->valid & JS_CG_MEM_PEAK, s->cg_mem_peak_bytes);
		ret = fact_run(st, &b, "store a job sample");
	}
	return write_end(st, own, ret);
}

int store_put_event(struct store *st, int64_t node_id, int64_t job_row,
		    const struct event_record *e)
{
	struct binder b;
	bool own;
	int ret;

	if (!e->kind[0])
		return log_err(-EINVAL, "cannot store an event in store '%s': no kind", st->path);
	ret = write_begin(st, &own);
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
	return write_end(st, own, ret);
}

int store_put_device(struct store *st, int64_t node_id, struct device_record *dev)
{
	const struct gpu_device_info *g = &dev->info;
	struct binder b;
	bool own;
	int ret;

	ret = write_begin(st, &own);
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
		ret = stmt_run(st, &b, "store a GPU", &dev->id);
	}
	return write_end(st, own, ret);
}

int store_put_gpu_sample(struct store *st, int64_t device_row, int64_t ts_ms,
			 const struct gpu_sample *s)
{
	struct binder b;
	bool own;
	int ret;

	ret = write_begin(st, &own);
	if (ret)
		return ret;
	ret = fact_start(st, STMT_GPU_SAMPLE, &b);
	if (ret == 0) {
		bind_i64(&b, device_row);
		bind_i64(&b, ts_ms);
		bind_opt(&b, s->valid & GPU_UTIL, s->util_pct);
		bind_opt(&b, s->valid & GPU_MEM_UTIL, s->mem_util_pct);
		bind_opt(&b, s->valid & GPU_MEM_USED, s->mem_used_bytes);
		bind_opt(&b, s->valid & GPU_PCIE, s->pcie_rx_bps);
		bind_opt(&b, s->valid & GPU_PCIE, s->pcie_tx_bps);
		bind_opt(&b, s->valid & GPU_NVLINK, s->nvlink_rx_bytes);
		bind_opt(&b, s->valid & GPU_NVLINK, s->nvlink_tx_bytes);
		bind_opt(&b, s->valid & GPU_POWER, s->power_mw);
		bind_opt(&b, s->valid & GPU_ENERGY, s->energy_mj);
		bind_opt(&b, s->valid & GPU_TEMP, (uint64_t)(int64_t)s->temp_c);
		bind_opt(&b, s->valid & GPU_SM_CLOCK, s->sm_clock_mhz);
		bind_opt(&b, s->valid & GPU_MEM_CLOCK, s->mem_clock_mhz);
		bind_opt(&b, s->valid & GPU_THROTTLE, s->throttle_reasons);
		bind_opt(&b, s->valid & GPU_ECC, s->ecc_corrected);
		bind_opt(&b, s->valid & GPU_ECC, s->ecc_uncorrected);
		ret = fact_run(st, &b, "store a GPU sample");
	}
	return write_end(st, own, ret);
}

int store_put_gpu_proc(struct store *st, int64_t device_row, int64_t proc_row, int64_t job_row,
		       int64_t ts_ms, const struct gpu_proc *p)
{
	struct binder b;
	bool own;
	int ret;

	ret = write_begin(st, &own);
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
		ret = fact_run(st, &b, "store a GPU process");
	}
	return write_end(st, own, ret);
}

int store_put_job_summary(struct store *st, const struct job_summary_record *s)
{
	struct binder b;
	bool own;
	int ret;

	ret = write_begin(st, &own);
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
		if (s->report_json)
			bind_keep(&b, sqlite3_bind_text(b.stmt, ++b.col, s->report_json, -1,
							SQLITE_STATIC));
		else
			bind_keep(&b, sqlite3_bind_null(b.stmt, ++b.col));
		ret = stmt_run(st, &b, "store a job summary", NULL);
	}
	return write_end(st, own, ret);
}

int store_put_rollup(struct store *st, const struct rollup_record *r)
{
	struct binder b;
	bool own;
	int ret;

	ret = write_begin(st, &own);
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
	return write_end(st, own, ret);
}
