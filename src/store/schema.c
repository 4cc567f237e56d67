/*
 * schema.c - the store's schema and its migrations, and the checks an
 * existing file passes before it is read or written.
 *
 *   store_schema_v1..v18   each version's SQL (docs/store.md: keep in step)
 *   store_migrations[]     from version v to v + 1
 *   add_fact_columns       the columns facts.h adds to a table at a version
 *   store_tables[]         the tables a store must have, by version
 *   store__migrate         create or upgrade, in one transaction
 *   store__check_schema    ours, not newer, intact, migrated, complete
 */
#include "store/facts.h"
#include "store/schema.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/fmt.h"
#include "common/log.h"
#include "common/timeutil.h"

/* The keys of the fact tables by entity (the columns after them: facts.h). */
#define NODE_FACT_KEY "seq INTEGER PRIMARY KEY, node_id INTEGER NOT NULL, ts_ms INTEGER NOT NULL"
#define DEVICE_FACT_KEY                                                                            \
	"seq INTEGER PRIMARY KEY, device_id INTEGER NOT NULL, ts_ms INTEGER NOT NULL"
#define JOB_FACT_KEY "seq INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, ts_ms INTEGER NOT NULL"

/*
 * Schema 1.  docs/store.md describes every column; keep the two in step.
 *
 * The fact tables whose columns facts.h describes are created as they are
 * now, whatever version the step is (FACT_CREATE); a store made before one
 * of their columns existed gets it from add_fact_columns, at the step of
 * the column's version.  Schema 2's events.gpu_index, schema 3's cgroup
 * columns of job_samples and schema 11's cpu_wait_ms come that way.
 */
/* clang-format off */
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
    FACT_CREATE(host_samples, NODE_FACT_KEY, HOST_SAMPLE_COLUMNS)
    "CREATE INDEX host_samples_node_ts ON host_samples (node_id, ts_ms);\n"
    FACT_CREATE(cpu_samples, NODE_FACT_KEY, CPU_SAMPLE_COLUMNS)
    "CREATE INDEX cpu_samples_node_ts ON cpu_samples (node_id, ts_ms);\n"
    FACT_CREATE(disk_samples, NODE_FACT_KEY, DISK_SAMPLE_COLUMNS)
    "CREATE INDEX disk_samples_node_ts ON disk_samples (node_id, ts_ms);\n"
    FACT_CREATE(net_samples, NODE_FACT_KEY, NET_SAMPLE_COLUMNS)
    "CREATE INDEX net_samples_node_ts ON net_samples (node_id, ts_ms);\n"
    FACT_CREATE(proc_samples,
		"seq INTEGER PRIMARY KEY, proc_id INTEGER NOT NULL, job_id INTEGER,"
		" ts_ms INTEGER NOT NULL", PROC_SAMPLE_COLUMNS)
    /*
     * Not (proc_id, ts_ms): a tick's rows would land on as many index pages
     * as there are processes (44 ms per tick at 1000 processes).  By job, a
     * tick appends to one place, and a job's rows come out in seq order.
     */
    "CREATE INDEX proc_samples_job ON proc_samples (job_id);\n"
    FACT_CREATE(job_samples, JOB_FACT_KEY, JOB_SAMPLE_COLUMNS)
    "CREATE INDEX job_samples_job_ts ON job_samples (job_id, ts_ms);\n"
    FACT_CREATE(events,
		"seq INTEGER PRIMARY KEY, node_id INTEGER, job_id INTEGER, ts_ms INTEGER NOT NULL",
		EVENT_COLUMNS)
    "CREATE INDEX events_job_ts ON events (job_id, ts_ms);\n"
    FACT_CREATE(marks, "seq INTEGER PRIMARY KEY, job_id INTEGER, ts_ms INTEGER NOT NULL",
		MARK_COLUMNS);

/* Schema 2: GPUs.  Devices, their samples, the processes on them, and an event's GPU. */
static const char store_schema_v2[] =
    "CREATE TABLE devices (id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL,"
    " vendor TEXT NOT NULL, idx INTEGER NOT NULL, uuid TEXT NOT NULL, name TEXT,"
    " pci_bus_id TEXT, mem_total_bytes INTEGER, power_limit_mw INTEGER,"
    " nvlink_count INTEGER, driver_version TEXT, supported INTEGER NOT NULL DEFAULT 0,"
    " UNIQUE (node_id, uuid)) STRICT;\n"
    FACT_CREATE(gpu_samples, DEVICE_FACT_KEY, GPU_SAMPLE_ALL_COLUMNS)
    "CREATE INDEX gpu_samples_device_ts ON gpu_samples (device_id, ts_ms);\n"
    FACT_CREATE(gpu_proc_samples, DEVICE_FACT_KEY, GPU_PROC_SAMPLE_COLUMNS)
    "CREATE INDEX gpu_proc_samples_device_ts ON gpu_proc_samples (device_id, ts_ms);\n";
/* clang-format on */

/*
 * Schema 3: the agent.  What a scheduler reserved for a job, its cgroup's
 * counters (job_samples' cg_* columns, facts.h), job summaries kept for
 * ever, and the rollup tiers.
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
 * Schema 5: rows lost.  A gap record for rows an agent deleted before its
 * head held them (only its size cap may); it takes a seq like a fact row,
 * so it streams to the head with the rest.
 */
/* clang-format off */
static const char store_schema_v5[] =
    FACT_CREATE(gaps, NODE_FACT_KEY, GAP_COLUMNS)
    "CREATE INDEX gaps_node_to ON gaps (node_id, to_ms);\n"
    /* GET /api/v1/jobs pages newest first: 580 ms a page at 100,000 jobs without it, 3 ms */
    "CREATE INDEX jobs_start ON jobs (start_ms, id);\n";
/* clang-format on */

/*
 * Schema 6: the store at the cost the physics allows.  Closed hours of the
 * fact tables packed into compressed column blobs (store/pack.h), and each
 * job's report state checkpointed, so that a report replays only the rows
 * after it (analysis/reportckpt.h).
 */
static const char store_schema_v6[] =
    "CREATE TABLE packs (id INTEGER PRIMARY KEY, tbl TEXT NOT NULL, key INTEGER NOT NULL,"
    " seq_lo INTEGER NOT NULL, seq_hi INTEGER NOT NULL, ts_lo INTEGER NOT NULL,"
    " ts_hi INTEGER NOT NULL, nrows INTEGER NOT NULL, raw_bytes INTEGER NOT NULL,"
    " data BLOB NOT NULL) STRICT;\n"
    "CREATE INDEX packs_tbl_key ON packs (tbl, key, seq_lo);\n"
    "CREATE INDEX packs_tbl_seq ON packs (tbl, seq_hi);\n"
    "CREATE INDEX packs_tbl_ts ON packs (tbl, ts_hi);\n"
    "CREATE INDEX packs_seq_hi ON packs (seq_hi);\n"
    "CREATE TABLE report_ckpts (job_id INTEGER PRIMARY KEY, seq INTEGER NOT NULL,"
    " ts_ms INTEGER NOT NULL, format INTEGER NOT NULL, made_ms INTEGER NOT NULL,"
    " data BLOB NOT NULL) STRICT;\n";

/*
 * Schema 7: gswarm-profiler's figures.  Per-request timings an application
 * posts to a head (POST /profiling/record), which a session's export and
 * report hold for the requests in its window; and each node's root
 * filesystem use per tick (gswarm's disk_util), which streams to the head
 * with the rest (a fact table with a seq, never packed).
 */
/* clang-format off */
static const char store_schema_v7[] =
    "CREATE TABLE requests (id INTEGER PRIMARY KEY, ts_ms INTEGER NOT NULL,"
    " app TEXT NOT NULL, queue_s REAL NOT NULL, processing_s REAL NOT NULL,"
    " other TEXT) STRICT;\n"
    "CREATE INDEX requests_ts ON requests (ts_ms);\n"
    FACT_CREATE(fs_samples, NODE_FACT_KEY, FS_SAMPLE_COLUMNS)
    "CREATE INDEX fs_samples_node_ts ON fs_samples (node_id, ts_ms);\n";
/* clang-format on */

/*
 * Schema 8: remote write (prom/remote_write.c).  Per target URL, the seq
 * up to which every row was answered 2xx: the sender resumes after it.
 */
static const char store_schema_v8[] =
    "CREATE TABLE rw_cursors (url TEXT PRIMARY KEY, acked_seq INTEGER NOT NULL,"
    " updated_ms INTEGER NOT NULL) STRICT;\n";

/*
 * Schema 9: CUDA tables (`jobscope run --cuda`, the agent's --cuda-socket).
 * Each process's newest snapshot of what the in-process hook counted
 * (cuda/cudastat.h): its state, and per API call, kernel and memory
 * operation the count and the spread of durations and sizes.  pid 0 is
 * the job's own row (a note, no stats).  Kept with the job, replaced whole;
 * a process's row takes the next fact seq each time it is replaced (seq;
 * snap_seq is the hook's own snapshot number), so an agent streams the
 * snapshots that changed with the rows of the same range (docs/wire.md).
 * Sessions gain `cuda`: whether they ask the agents for CUDA tables.
 */
/* clang-format off */
static const char store_schema_v9[] =
    FACT_CREATE_WITH(cuda_procs,
		     "seq INTEGER NOT NULL, job_id INTEGER NOT NULL, pid INTEGER NOT NULL",
		     CUDA_PROC_COLUMNS, ", PRIMARY KEY (job_id, pid)")
    "CREATE UNIQUE INDEX cuda_procs_seq ON cuda_procs (seq);\n"
    "CREATE TABLE cuda_stats (job_id INTEGER NOT NULL, pid INTEGER NOT NULL,"
    " kind TEXT NOT NULL, name TEXT NOT NULL, count INTEGER NOT NULL,"
    " total_ns INTEGER NOT NULL, min_ns INTEGER, max_ns INTEGER, m2_ns2 REAL,"
    " bytes INTEGER, min_bytes INTEGER, max_bytes INTEGER, m2_bytes2 REAL,"
    " PRIMARY KEY (job_id, pid, kind, name)) STRICT;\n"
    "ALTER TABLE sessions ADD COLUMN cuda INTEGER NOT NULL DEFAULT 0;\n";
/* clang-format on */

/*
 * Schema 10: what the application says and where it runs.
 *
 * app_samples: app metrics (StatsD / DogStatsD lines, app/appstat.h), one
 * row per metric per tick in which it got lines: count (weighted by the
 * sample rates), sum, min, max, last, and for timers, histograms and
 * distributions the values' sketch as text (app_sketch_format).  Markers
 * go to marks (schema 1): name, text.
 *
 * energy_samples: the host's RAPL zones (/sys/class/powercap), each
 * zone's cumulative counter (uJ) and the value it wraps at.
 *
 * proc_libs: the frameworks and libraries a process was seen to load
 * (/proc/PID/maps, the interpreter): name, version when the file names
 * carry it, and the file.
 *
 * marks (schema 1, first written now) gets an index by job: every report
 * reads a job's markers.
 */
/* clang-format off */
static const char store_schema_v10[] =
    FACT_CREATE(app_samples, JOB_FACT_KEY, APP_SAMPLE_COLUMNS)
    "CREATE INDEX app_samples_job_ts ON app_samples (job_id, ts_ms);\n"
    FACT_CREATE(energy_samples, NODE_FACT_KEY, ENERGY_SAMPLE_COLUMNS)
    "CREATE INDEX energy_samples_node_ts ON energy_samples (node_id, ts_ms);\n"
    FACT_CREATE(proc_libs, "seq INTEGER PRIMARY KEY, proc_id INTEGER NOT NULL, ts_ms INTEGER NOT NULL",
		PROC_LIB_COLUMNS)
    "CREATE INDEX proc_libs_proc ON proc_libs (proc_id);\n"
    "CREATE INDEX marks_job_ts ON marks (job_id, ts_ms);\n";
/* clang-format on */

/*
 * Schema 11: each job's run-queue wait, what its threads waited for a CPU
 * (contention): job_samples.cpu_wait_ms, added by add_fact_columns.
 */
static const char store_schema_v11[] = "";

/* Schema 12: Slurm 26.05 names a job's cgroup by its SLUID; the job keeps it. */
static const char store_schema_v12[] = "ALTER TABLE jobs ADD COLUMN sluid TEXT;\n";

/* Schema 13: who started a session (a head's user; NULL: a token, gswarm, the CLI). */
static const char store_schema_v13[] = "ALTER TABLE sessions ADD COLUMN owner TEXT;\n";

/*
 * Schema 14: a pod's process keeps its container's name (Kubernetes, from
 * the container's bundle; attrib/k8s.h), as a Slurm job's process its step.
 */
static const char store_schema_v14[] = "ALTER TABLE procs ADD COLUMN container TEXT;\n";

/*
 * Schema 15: a pod's owner as its labels name it (the agent's --cri-socket
 * hint): "NAMESPACE/NAME" and the label, so that the pods of one training
 * job are one group across nodes (`jobscope report --k8s-job`).
 */
static const char store_schema_v15[] = "ALTER TABLE jobs ADD COLUMN k8s_owner TEXT;\n"
				       "ALTER TABLE jobs ADD COLUMN k8s_owner_label TEXT;\n";

/*
 * Schema 16: what the SMs did (issue 33).  gpu_samples gains the figures of
 * enum gpu_prof (facts.h's GPU_PROF_COLUMNS: GPM activity in percent x 100,
 * violation counters in ns, PCIe replays, remapped rows) and
 * gpu_proc_samples accounting mode's max_mem_bytes, both by
 * add_fact_columns; a device row says which of them its driver gives
 * (prof_supported) and, for MIG, whether the GPU is in MIG mode
 * (mig_enabled) or is an instance (mig 1: its parent's uuid, its GPU and
 * compute instance IDs, its profile).
 */
static const char store_schema_v16[] =
    "ALTER TABLE devices ADD COLUMN prof_supported INTEGER NOT NULL DEFAULT 0;\n"
    "ALTER TABLE devices ADD COLUMN mig_enabled INTEGER NOT NULL DEFAULT 0;\n"
    "ALTER TABLE devices ADD COLUMN mig INTEGER NOT NULL DEFAULT 0;\n"
    "ALTER TABLE devices ADD COLUMN mig_parent_uuid TEXT;\n"
    "ALTER TABLE devices ADD COLUMN gpu_instance_id INTEGER;\n"
    "ALTER TABLE devices ADD COLUMN compute_instance_id INTEGER;\n"
    "ALTER TABLE devices ADD COLUMN mig_profile TEXT;\n";

/*
 * Schema 17: a job's summary keeps what the SMs did (issue 33), the job's
 * part over its GPUs as its report has it, so that history and the jobs
 * lists show them without replaying the job.  NULL: unknown (no GPM, an
 * older jobscope wrote it).
 */
static const char store_schema_v17[] =
    "ALTER TABLE job_summaries ADD COLUMN sm_active_avg_pct REAL;\n"
    "ALTER TABLE job_summaries ADD COLUMN sm_occupancy_avg_pct REAL;\n"
    "ALTER TABLE job_summaries ADD COLUMN tensor_active_avg_pct REAL;\n"
    "ALTER TABLE job_summaries ADD COLUMN dram_active_avg_pct REAL;\n"
    "ALTER TABLE job_summaries ADD COLUMN fp64_active_avg_pct REAL;\n"
    "ALTER TABLE job_summaries ADD COLUMN fp32_active_avg_pct REAL;\n"
    "ALTER TABLE job_summaries ADD COLUMN fp16_active_avg_pct REAL;\n"
    "ALTER TABLE job_summaries ADD COLUMN throttle_power_s REAL;\n"
    "ALTER TABLE job_summaries ADD COLUMN throttle_thermal_s REAL;\n";

/*
 * Schema 18: the rollups clustered by tier and time, without a rowid.  The
 * table was a rowid table with a UNIQUE index on its whole key and another
 * on (tier_ms, ts_ms): each row three times, 115 bytes; the key is now the
 * table's own order (tier, time, then the series), one copy, about 50 bytes
 * a row (bench/agent_day.py).  Retention deletes a tier's oldest buckets
 * and the upsert finds its bucket on that key.
 */
static const char store_schema_v18[] =
    "CREATE TABLE rollups_v18 (tier_ms INTEGER NOT NULL, ts_ms INTEGER NOT NULL,"
    " node_id INTEGER NOT NULL, entity TEXT NOT NULL, entity_id INTEGER NOT NULL,"
    " metric TEXT NOT NULL, n INTEGER NOT NULL, min REAL, avg REAL, max REAL,"
    " PRIMARY KEY (tier_ms, ts_ms, node_id, entity, entity_id, metric)) STRICT, WITHOUT ROWID;\n"
    "INSERT INTO rollups_v18 SELECT tier_ms, ts_ms, node_id, entity, entity_id, metric, n,"
    " min, avg, max FROM rollups;\n"
    "DROP TABLE rollups;\n"
    "ALTER TABLE rollups_v18 RENAME TO rollups;\n";

/*
 * store_migrations[v] brings a store from schema v to v + 1; [0] creates
 * schema 1 in an empty file.  A new version appends one entry here and
 * bumps STORE_SCHEMA_VERSION.
 */
static const char *const store_migrations[STORE_SCHEMA_VERSION] = {
    store_schema_v1,  store_schema_v2,	store_schema_v3,  store_schema_v4,  store_schema_v5,
    store_schema_v6,  store_schema_v7,	store_schema_v8,  store_schema_v9,  store_schema_v10,
    store_schema_v11, store_schema_v12, store_schema_v13, store_schema_v14, store_schema_v15,
    store_schema_v16, store_schema_v17, store_schema_v18,
};

/*
 * Tables a store must have (checked at open), with the schema that added
 * them: these and the fact tables (facts.h).
 */
static const struct {
	const char *name;
	int64_t since;
} store_tables[] = {
    {"meta", 1},	  {"nodes", 1},	   {"jobs", 1},	      {"procs", 1},	 {"devices", 2},
    {"job_summaries", 3}, {"rollups", 3},  {"agents", 4},     {"sessions", 4},	 {"packs", 6},
    {"report_ckpts", 6},  {"requests", 7}, {"rw_cursors", 8}, {"cuda_stats", 9},
};
#define NDIM_TABLES (int)(sizeof(store_tables) / sizeof(store_tables[0]))

/*
 * The columns of version `to` (facts.h) that a store of version `from`
 * lacks: those of the tables it already had.  A table created by this
 * migration was created with all its columns (FACT_CREATE).
 */
static int add_fact_columns(struct store *st, int64_t from, int64_t to)
{
	char sql[256];
	int ret = 0;

	for (int i = 0; i < store_nfact_columns && !ret; i++) {
		const struct fact_columns *t = &store_fact_columns[i];
		const struct store_fact *fact = store_fact(t->table);

		if (!fact || fact->since > from)
			continue;
		for (int c = 0; c < t->ncol && !ret; c++) {
			if (t->col[c].since != to)
				continue;
			snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s %s", t->table,
				 t->col[c].name, t->col[c].type);
			ret = store__exec(st, sql, "create the schema of");
		}
	}
	return ret;
}

/*
 * Brings the schema from its user_version to STORE_SCHEMA_VERSION in one
 * transaction; from 0 (an empty file) creates it.  The version is read
 * under the write lock: another jobscope may have created the file since
 * we looked.
 */
int store__migrate(struct store *st)
{
	char sql[512];
	int64_t version, from, app_id, nobjects;
	int ret;

	ret = store__exec(st, "BEGIN IMMEDIATE", "lock");
	if (ret)
		return ret;
	ret = store__query_i64(st, "PRAGMA user_version", &version);
	if (ret)
		goto out_rollback;
	ret = store__query_i64(st, "PRAGMA application_id", &app_id);
	if (ret)
		goto out_rollback;
	if (version == 0) {
		ret = store__query_i64(st, "SELECT count(*) FROM sqlite_schema", &nobjects);
		if (ret)
			goto out_rollback;
		if (app_id != 0 || nobjects != 0) {
			ret = store__refuse_corrupt(st->path, "no schema version");
			goto out_rollback;
		}
	} else if (app_id != STORE_APPLICATION_ID) {
		ret = store__refuse(st->path, -EPROTO, "an SQLite database of another application");
		goto out_rollback;
	}
	if (version >= STORE_SCHEMA_VERSION)
		return store__exec(st, "COMMIT", "unlock");

	for (from = version; version < STORE_SCHEMA_VERSION; version++) {
		ret = store__exec(st, store_migrations[version], "create the schema of");
		if (ret == 0)
			ret = add_fact_columns(st, from, version + 1);
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
	ret = store__exec(st, sql, "create the schema of");
	if (ret)
		goto out_rollback;
	return store__exec(st, "COMMIT", "create the schema of");

out_rollback:
	sqlite3_exec(st->conn.sq, "ROLLBACK", NULL, NULL, NULL);
	return ret;
}

/*
 * The checks on an existing store, in the order that gives the clearest
 * message: ours, not newer, not older (migrated when writable), intact,
 * and holding the tables we query.
 */
int store__check_schema(struct store *st)
{
	char msg[160];
	sqlite3_stmt *stmt;
	int64_t app_id, version, ntables, pages, page_size;
	int i;
	int rc, ret;

	ret = store__query_i64(st, "PRAGMA application_id", &app_id);
	if (ret)
		return ret;
	if (app_id != STORE_APPLICATION_ID)
		return store__refuse(st->path, -EPROTO,
				     "an SQLite database of another application");
	ret = store__query_i64(st, "PRAGMA user_version", &version);
	if (ret)
		return ret;
	if (version > STORE_SCHEMA_VERSION)
		return store__refuse_newer(st->path, version);
	if (version <= 0)
		return store__refuse_corrupt(st->path, "no schema version");

	/*
	 * quick_check reads every page: 6 s for a 2 GB store, which a report
	 * must not pay on each open.  Larger stores are checked page by page
	 * as they are read (SQLite reports SQLITE_CORRUPT, which every reader
	 * turns into a clear error).
	 */
	ret = store__query_i64(st, "PRAGMA page_count", &pages);
	if (ret)
		return ret;
	ret = store__query_i64(st, "PRAGMA page_size", &page_size);
	if (ret)
		return ret;
	if (st->checked || pages * page_size > STORE_QUICK_CHECK_MAX_BYTES)
		goto checked;
	rc = sqlite3_prepare_v2(st->conn.sq, "PRAGMA quick_check", -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return store__open_fail(st, rc, "check");
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		const char *res = (const char *)sqlite3_column_text(stmt, 0);

		if (!res || strcmp(res, "ok") != 0) {
			char printable[sizeof(msg) - 16];

			fmt_printable(printable, sizeof(printable), res ? res : "?");
			snprintf(msg, sizeof(msg), "quick_check: %s", printable);
			sqlite3_finalize(stmt);
			return store__refuse_corrupt(st->path, msg);
		}
		rc = SQLITE_OK;
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_OK && rc != SQLITE_DONE)
		return store__open_fail(st, rc, "check");
checked:
	/* an older store is read as it is, and upgraded when opened for writing */
	if (version < STORE_SCHEMA_VERSION && st->writable) {
		ret = store__migrate(st);
		if (ret)
			return ret;
		version = STORE_SCHEMA_VERSION;
	}
	st->schema_version = version;

	for (i = 0; i < NDIM_TABLES + store_nfacts; i++) {
		const char *name =
		    i < NDIM_TABLES ? store_tables[i].name : store_facts[i - NDIM_TABLES].name;

		if ((i < NDIM_TABLES ? store_tables[i].since : store_facts[i - NDIM_TABLES].since) >
		    version)
			continue;
		snprintf(msg, sizeof(msg),
			 "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = '%s'",
			 name);
		ret = store__query_i64(st, msg, &ntables);
		if (ret)
			return ret;
		if (ntables != 1) {
			snprintf(msg, sizeof(msg), "no table %s", name);
			return store__refuse_corrupt(st->path, msg);
		}
	}
	return 0;
}
