/*
 * facts.h - the fact tables, described once.  Every list of them in the
 * store reads this table: the tables a store must have (schema.c), what
 * a range exports and a head ingests (export.c, ingest.c), what ages out
 * (retention.c) and is partitioned by day on PostgreSQL (pgschema.c),
 * what is packed and by which key (packvtab.c, packer.c), and what remote
 * write turns into series.  The order is the export's and the ingest's:
 * a batch's tables go in it.
 *
 * X(name, since, flags, P or N, pack key, pack sort): since is the schema
 * that added the table; P: packed (packs.h), its rows read through
 * name_all (its rows and its packs' rows), a pack never mixing two key
 * values, its rows in sort, then seq order; N: never packed (_, _).
 *
 * The columns of every fact table after its key are described once too
 * (below): their DDL, the migrations that add columns, their inserts and
 * the selects that read their rows back (the replay, gaps, markers, app
 * metrics, energy, CUDA states) are made from them, and for gpu_samples
 * and job_samples the binding and reading of a row.  Export and ingest
 * take a table's columns as the file has them (SELECT *, checked by name).
 */
#ifndef JOBSCOPE_STORE_FACTS_H
#define JOBSCOPE_STORE_FACTS_H

#include <stdint.h>

#define FACT_TIMED    0x1 /* a row per tick, ts_ms never NULL: ages out, a partition per day */
#define FACT_INGESTED 0x2 /* an agent's batch carries it to the head */
#define FACT_METRIC   0x4 /* remote write makes series of it */

/* clang-format off */
#define STORE_FACTS(X)                                                                             \
	X(host_samples,     1,  FACT_TIMED | FACT_INGESTED | FACT_METRIC, P, node_id,   node_id)   \
	X(cpu_samples,      1,  FACT_TIMED | FACT_INGESTED | FACT_METRIC, P, node_id,   cpu)       \
	X(disk_samples,     1,  FACT_TIMED | FACT_INGESTED | FACT_METRIC, P, node_id,   disk)      \
	X(net_samples,      1,  FACT_TIMED | FACT_INGESTED | FACT_METRIC, P, node_id,   iface)     \
	X(proc_samples,     1,  FACT_TIMED | FACT_INGESTED,               P, job_id,    proc_id)   \
	X(job_samples,      1,  FACT_TIMED | FACT_INGESTED | FACT_METRIC, P, job_id,    job_id)    \
	X(events,           1,  FACT_TIMED | FACT_INGESTED,               N, _,         _)         \
	X(marks,            1,  FACT_TIMED | FACT_INGESTED,               N, _,         _)         \
	X(gpu_samples,      2,  FACT_TIMED | FACT_INGESTED | FACT_METRIC, P, device_id, device_id) \
	X(gpu_proc_samples, 2,  FACT_TIMED | FACT_INGESTED | FACT_METRIC, P, device_id, pid)       \
	X(gaps,             5,  FACT_INGESTED,                            N, _,         _)         \
	X(fs_samples,       7,  FACT_TIMED | FACT_INGESTED | FACT_METRIC, P, node_id,   node_id)   \
	X(cuda_procs,       9,  0,                                        N, _,         _)         \
	X(app_samples,      10, FACT_TIMED | FACT_INGESTED,               N, _,         _)         \
	X(energy_samples,   10, FACT_TIMED | FACT_INGESTED,               N, _,         _)         \
	X(proc_libs,        10, FACT_TIMED | FACT_INGESTED,               N, _,         _)
/* clang-format on */

struct store_fact {
	const char *name;
	const char *source; /* name_all when packed, else name */
	int64_t since;
	unsigned flags;
};

extern const struct store_fact store_facts[];
extern const int store_nfacts;

/* The fact table of that name, or NULL. */
const struct store_fact *store_fact(const char *name);

/*
 * The measured columns of the fact tables, described once: each table's
 * columns after its key (seq, its entities, ts_ms), in table order.
 *
 *   X(column, SQL type, since, valid bit)
 *
 * since: the schema that added the column.  A table is created with all
 * its columns as they are now (FACT_CREATE); a store made before a column
 * existed gets it by ALTER TABLE ... ADD COLUMN when it is migrated
 * (schema.c), a PostgreSQL one likewise (pgschema.c), and the replay of a
 * store too old to have it, read as it is, does not select it (replay.c:
 * the job's samples leave it out, the events read NULL in its place).
 * The valid bit is the struct's bit that says the value is there (the
 * column NULL when not), 0 for a value always there; it is used where the
 * writer binds and the replay reads a row from the list (gpu_samples,
 * job_samples), and is 0 in the tables whose rows are bound and read by
 * hand (the others: flags shared by columns, nested structs, values the
 * caller passes).  The field of the struct has the column's name where the list
 * is bound and read (struct gpu_sample, struct job_sample).
 *
 * A new column is a row at the end of its list with the new schema
 * version as since; nothing else spells it.  Where a list is bound and
 * read by hand, a _Static_assert on its count there (the writer and the
 * reader of the table) says that the binding must follow.
 */

/* clang-format off */
/* host_samples (node_id): struct host_sample's totals, bound and read by hand in this order */
#define HOST_SAMPLE_COLUMNS(X)                                                                     \
	X(cpu_user_ms,         "INTEGER", 1, 0)                                                    \
	X(cpu_nice_ms,         "INTEGER", 1, 0)                                                    \
	X(cpu_system_ms,       "INTEGER", 1, 0)                                                    \
	X(cpu_idle_ms,         "INTEGER", 1, 0)                                                    \
	X(cpu_iowait_ms,       "INTEGER", 1, 0)                                                    \
	X(cpu_irq_ms,          "INTEGER", 1, 0)                                                    \
	X(cpu_softirq_ms,      "INTEGER", 1, 0)                                                    \
	X(cpu_steal_ms,        "INTEGER", 1, 0)                                                    \
	X(ncpus,               "INTEGER", 1, 0)                                                    \
	X(mem_total_bytes,     "INTEGER", 1, 0)                                                    \
	X(mem_free_bytes,      "INTEGER", 1, 0)                                                    \
	X(mem_available_bytes, "INTEGER", 1, 0)                                                    \
	X(mem_buffers_bytes,   "INTEGER", 1, 0)                                                    \
	X(mem_cached_bytes,    "INTEGER", 1, 0)                                                    \
	X(mem_shmem_bytes,     "INTEGER", 1, 0)                                                    \
	X(swap_total_bytes,    "INTEGER", 1, 0)                                                    \
	X(swap_free_bytes,     "INTEGER", 1, 0)                                                    \
	X(load1_milli,         "INTEGER", 1, 0)                                                    \
	X(load5_milli,         "INTEGER", 1, 0)                                                    \
	X(load15_milli,        "INTEGER", 1, 0)                                                    \
	X(procs_running,       "INTEGER", 1, 0)                                                    \
	X(procs_blocked,       "INTEGER", 1, 0)                                                    \
	X(disk_read_bytes,     "INTEGER", 1, 0)                                                    \
	X(disk_write_bytes,    "INTEGER", 1, 0)                                                    \
	X(disk_reads,          "INTEGER", 1, 0)                                                    \
	X(disk_writes,         "INTEGER", 1, 0)                                                    \
	X(net_rx_bytes,        "INTEGER", 1, 0)                                                    \
	X(net_tx_bytes,        "INTEGER", 1, 0)                                                    \
	X(net_rx_packets,      "INTEGER", 1, 0)                                                    \
	X(net_tx_packets,      "INTEGER", 1, 0)                                                    \
	X(psi_cpu_some_us,     "INTEGER", 1, 0)                                                    \
	X(psi_cpu_full_us,     "INTEGER", 1, 0)                                                    \
	X(psi_mem_some_us,     "INTEGER", 1, 0)                                                    \
	X(psi_mem_full_us,     "INTEGER", 1, 0)                                                    \
	X(psi_io_some_us,      "INTEGER", 1, 0)                                                    \
	X(psi_io_full_us,      "INTEGER", 1, 0)

/* proc_samples (proc_id, job_id): struct proc_sample, bound and read by hand in this order */
#define PROC_SAMPLE_COLUMNS(X)                                                                     \
	X(state,           "TEXT",    1, 0)                                                        \
	X(threads,         "INTEGER", 1, 0)                                                        \
	X(user_ms,         "INTEGER", 1, 0)                                                        \
	X(system_ms,       "INTEGER", 1, 0)                                                        \
	X(child_user_ms,   "INTEGER", 1, 0)                                                        \
	X(child_system_ms, "INTEGER", 1, 0)                                                        \
	X(rss_bytes,       "INTEGER", 1, 0)                                                        \
	X(hwm_bytes,       "INTEGER", 1, 0)                                                        \
	X(swap_bytes,      "INTEGER", 1, 0)                                                        \
	X(read_bytes,      "INTEGER", 1, 0)                                                        \
	X(write_bytes,     "INTEGER", 1, 0)

/* job_samples (job_id): struct job_sample's fields, bound and read from this list */
#define JOB_SAMPLE_COLUMNS(X)                                                                      \
	X(nprocs,            "INTEGER", 1,  0)                                                     \
	X(user_ms,           "INTEGER", 1,  0)                                                     \
	X(system_ms,         "INTEGER", 1,  0)                                                     \
	X(rss_bytes,         "INTEGER", 1,  0)                                                     \
	X(swap_bytes,        "INTEGER", 1,  JS_SWAP)                                               \
	X(read_bytes,        "INTEGER", 1,  JS_IO)                                                 \
	X(write_bytes,       "INTEGER", 1,  JS_IO)                                                 \
	X(sampler_cpu_ms,    "INTEGER", 1,  0)                                                     \
	X(cg_cpu_ms,         "INTEGER", 3,  JS_CG_CPU)                                             \
	X(cg_mem_bytes,      "INTEGER", 3,  JS_CG_MEM)                                             \
	X(cg_mem_peak_bytes, "INTEGER", 3,  JS_CG_MEM_PEAK)                                        \
	X(cpu_wait_ms,       "INTEGER", 11, JS_CPU_WAIT)

/*
 * gpu_samples (device_id): struct gpu_sample's fields, each NULL when its
 * bit of enum gpu_metric is not valid, bound and read from this list
 */
#define GPU_SAMPLE_COLUMNS(X)                                                                      \
	X(util_pct,         "INTEGER", 2, GPU_UTIL)                                                \
	X(mem_util_pct,     "INTEGER", 2, GPU_MEM_UTIL)                                            \
	X(mem_used_bytes,   "INTEGER", 2, GPU_MEM_USED)                                            \
	X(pcie_rx_bps,      "INTEGER", 2, GPU_PCIE)                                                \
	X(pcie_tx_bps,      "INTEGER", 2, GPU_PCIE)                                                \
	X(nvlink_rx_bytes,  "INTEGER", 2, GPU_NVLINK)                                              \
	X(nvlink_tx_bytes,  "INTEGER", 2, GPU_NVLINK)                                              \
	X(power_mw,         "INTEGER", 2, GPU_POWER)                                               \
	X(energy_mj,        "INTEGER", 2, GPU_ENERGY)                                              \
	X(temp_c,           "INTEGER", 2, GPU_TEMP)                                                \
	X(sm_clock_mhz,     "INTEGER", 2, GPU_SM_CLOCK)                                            \
	X(mem_clock_mhz,    "INTEGER", 2, GPU_MEM_CLOCK)                                           \
	X(throttle_reasons, "INTEGER", 2, GPU_THROTTLE)                                            \
	X(ecc_corrected,    "INTEGER", 2, GPU_ECC)                                                 \
	X(ecc_uncorrected,  "INTEGER", 2, GPU_ECC)

/*
 * gpu_samples' columns after GPU_SAMPLE_COLUMNS: struct gpu_sample's
 * figures of enum gpu_prof, each NULL when its bit of prof_valid is not
 * set, bound and read from this list.  Activity in percent x 100 (6150 is
 * 61.50 %) over the interval since the device's previous sample; the
 * violation counters in ns, cumulative; the PCIe replays and remapped rows
 * counters as the driver keeps them; remap_pending and remap_failed 0 or 1.
 */
#define GPU_PROF_COLUMNS(X)                                                                        \
	X(gr_active_pct100,          "INTEGER", 16, GPU_PROF_GR_ACTIVE)                            \
	X(sm_active_pct100,          "INTEGER", 16, GPU_PROF_SM_ACTIVE)                            \
	X(sm_occupancy_pct100,       "INTEGER", 16, GPU_PROF_SM_OCCUPANCY)                         \
	X(tensor_active_pct100,      "INTEGER", 16, GPU_PROF_TENSOR_ACTIVE)                        \
	X(dfma_tensor_active_pct100, "INTEGER", 16, GPU_PROF_DFMA_TENSOR)                          \
	X(hmma_tensor_active_pct100, "INTEGER", 16, GPU_PROF_HMMA_TENSOR)                          \
	X(imma_tensor_active_pct100, "INTEGER", 16, GPU_PROF_IMMA_TENSOR)                          \
	X(dram_active_pct100,        "INTEGER", 16, GPU_PROF_DRAM_ACTIVE)                          \
	X(fp64_active_pct100,        "INTEGER", 16, GPU_PROF_FP64_ACTIVE)                          \
	X(fp32_active_pct100,        "INTEGER", 16, GPU_PROF_FP32_ACTIVE)                          \
	X(fp16_active_pct100,        "INTEGER", 16, GPU_PROF_FP16_ACTIVE)                          \
	X(viol_power_ns,             "INTEGER", 16, GPU_PROF_VIOL_POWER)                           \
	X(viol_thermal_ns,           "INTEGER", 16, GPU_PROF_VIOL_THERMAL)                         \
	X(viol_sync_boost_ns,        "INTEGER", 16, GPU_PROF_VIOL_SYNC_BOOST)                      \
	X(viol_board_limit_ns,       "INTEGER", 16, GPU_PROF_VIOL_BOARD_LIMIT)                     \
	X(viol_low_util_ns,          "INTEGER", 16, GPU_PROF_VIOL_LOW_UTIL)                        \
	X(viol_reliability_ns,       "INTEGER", 16, GPU_PROF_VIOL_RELIABILITY)                     \
	X(viol_app_clocks_ns,        "INTEGER", 16, GPU_PROF_VIOL_APP_CLOCKS)                      \
	X(viol_base_clocks_ns,       "INTEGER", 16, GPU_PROF_VIOL_BASE_CLOCKS)                     \
	X(viol_sw_thermal_ns,        "INTEGER", 16, GPU_PROF_VIOL_SW_THERMAL)                      \
	X(viol_hw_thermal_ns,        "INTEGER", 16, GPU_PROF_VIOL_HW_THERMAL)                      \
	X(viol_hw_power_brake_ns,    "INTEGER", 16, GPU_PROF_VIOL_HW_POWER_BRAKE)                  \
	X(pcie_replays,              "INTEGER", 16, GPU_PROF_PCIE_REPLAY)                          \
	X(remapped_rows_corr,        "INTEGER", 16, GPU_PROF_REMAPPED_ROWS)                        \
	X(remapped_rows_unc,         "INTEGER", 16, GPU_PROF_REMAPPED_ROWS)                        \
	X(remap_pending,             "INTEGER", 16, GPU_PROF_REMAPPED_ROWS)                        \
	X(remap_failed,              "INTEGER", 16, GPU_PROF_REMAPPED_ROWS)

/* gpu_samples' columns, all of them in table order: the DDL's, the migrations', the inserts' */
#define GPU_SAMPLE_ALL_COLUMNS(X) GPU_SAMPLE_COLUMNS(X) GPU_PROF_COLUMNS(X)

/*
 * gpu_proc_samples (device_id): a process on a GPU; pid, proc_id and
 * job_id come from the caller, the rest from struct gpu_proc, bound and
 * read by hand in this order (max_mem_bytes NULL unless GPU_PROC_MAX_MEM)
 */
#define GPU_PROC_SAMPLE_COLUMNS(X)                                                                 \
	X(pid,           "INTEGER NOT NULL",           2,  0)                                      \
	X(proc_id,       "INTEGER",                    2,  0)                                      \
	X(job_id,        "INTEGER",                    2,  0)                                      \
	X(mem_bytes,     "INTEGER",                    2,  0)                                      \
	X(sm_util_pct,   "INTEGER",                    2,  0)                                      \
	X(mem_util_pct,  "INTEGER",                    2,  0)                                      \
	X(graphics,      "INTEGER NOT NULL DEFAULT 0", 2,  0)                                      \
	X(max_mem_bytes, "INTEGER",                    16, 0)

/* cpu_samples (node_id): one CPU's struct cpu_times, bound and read by hand in this order */
#define CPU_SAMPLE_COLUMNS(X)                                                                      \
	X(cpu,        "INTEGER NOT NULL", 1, 0)                                                    \
	X(user_ms,    "INTEGER",          1, 0)                                                    \
	X(nice_ms,    "INTEGER",          1, 0)                                                    \
	X(system_ms,  "INTEGER",          1, 0)                                                    \
	X(idle_ms,    "INTEGER",          1, 0)                                                    \
	X(iowait_ms,  "INTEGER",          1, 0)                                                    \
	X(irq_ms,     "INTEGER",          1, 0)                                                    \
	X(softirq_ms, "INTEGER",          1, 0)                                                    \
	X(steal_ms,   "INTEGER",          1, 0)

/* disk_samples (node_id): struct disk_stat, bound and read by hand in this order */
#define DISK_SAMPLE_COLUMNS(X)                                                                     \
	X(disk,        "TEXT NOT NULL", 1, 0)                                                      \
	X(reads,       "INTEGER",       1, 0)                                                      \
	X(read_bytes,  "INTEGER",       1, 0)                                                      \
	X(writes,      "INTEGER",       1, 0)                                                      \
	X(write_bytes, "INTEGER",       1, 0)                                                      \
	X(io_ms,       "INTEGER",       1, 0)

/* net_samples (node_id): struct net_stat, bound and read by hand in this order */
#define NET_SAMPLE_COLUMNS(X)                                                                      \
	X(iface,      "TEXT NOT NULL", 1, 0)                                                       \
	X(rx_bytes,   "INTEGER",       1, 0)                                                       \
	X(rx_packets, "INTEGER",       1, 0)                                                       \
	X(tx_bytes,   "INTEGER",       1, 0)                                                       \
	X(tx_packets, "INTEGER",       1, 0)

/* fs_samples (node_id): the root file system's struct host_fs, bound by hand */
#define FS_SAMPLE_COLUMNS(X)                                                                       \
	X(mount,       "TEXT NOT NULL", 7, 0)                                                      \
	X(used_bytes,  "INTEGER",       7, 0)                                                      \
	X(total_bytes, "INTEGER",       7, 0)

/* events (node_id, job_id): struct event_record, bound and read by hand in this order */
#define EVENT_COLUMNS(X)                                                                           \
	X(kind,      "TEXT NOT NULL", 1, 0)                                                        \
	X(pid,       "INTEGER",       1, 0)                                                        \
	X(value,     "INTEGER",       1, 0)                                                        \
	X(message,   "TEXT",          1, 0)                                                        \
	X(gpu_index, "INTEGER",       2, 0)

/* marks (job_id): a marker (struct app_mark: name, text; value is never written) */
#define MARK_COLUMNS(X)                                                                            \
	X(name,  "TEXT NOT NULL", 1, 0)                                                            \
	X(value, "REAL",          1, 0)                                                            \
	X(text,  "TEXT",          1, 0)

/* gaps (node_id): struct store_gap, bound and read by hand in this order */
#define GAP_COLUMNS(X)                                                                             \
	X(from_ms,  "INTEGER",          5, 0)                                                      \
	X(to_ms,    "INTEGER",          5, 0)                                                      \
	X(from_seq, "INTEGER NOT NULL", 5, 0)                                                      \
	X(to_seq,   "INTEGER NOT NULL", 5, 0)                                                      \
	X(rows,     "INTEGER NOT NULL", 5, 0)                                                      \
	X(reason,   "TEXT NOT NULL",    5, 0)

/*
 * cuda_procs (seq, job_id, pid; its key (job_id, pid) after the columns):
 * struct cuda_proc's state, bound and read by hand in this order
 */
#define CUDA_PROC_COLUMNS(X)                                                                       \
	X(state,         "TEXT NOT NULL",              9, 0)                                       \
	X(message,       "TEXT",                       9, 0)                                       \
	X(cupti_version, "INTEGER",                    9, 0)                                       \
	X(contexts,      "INTEGER",                    9, 0)                                       \
	X(dropped,       "INTEGER",                    9, 0)                                       \
	X(snap_seq,      "INTEGER",                    9, 0)                                       \
	X(final,         "INTEGER NOT NULL DEFAULT 0", 9, 0)                                       \
	X(updated_ms,    "INTEGER NOT NULL",           9, 0)

/* app_samples (job_id): struct app_point, bound and read by hand in this order */
#define APP_SAMPLE_COLUMNS(X)                                                                      \
	X(name,   "TEXT NOT NULL", 10, 0)                                                          \
	X(type,   "TEXT NOT NULL", 10, 0)                                                          \
	X(tags,   "TEXT NOT NULL", 10, 0)                                                          \
	X(count,  "REAL NOT NULL", 10, 0)                                                          \
	X(sum,    "REAL",          10, 0)                                                          \
	X(min,    "REAL",          10, 0)                                                          \
	X(max,    "REAL",          10, 0)                                                          \
	X(last,   "REAL",          10, 0)                                                          \
	X(sketch, "TEXT",          10, 0)

/* energy_samples (node_id): struct store_energy_sample, bound and read by hand in this order */
#define ENERGY_SAMPLE_COLUMNS(X)                                                                   \
	X(zone,      "TEXT NOT NULL",    10, 0)                                                    \
	X(energy_uj, "INTEGER NOT NULL", 10, 0)                                                    \
	X(max_uj,    "INTEGER",          10, 0)

/* proc_libs (proc_id): struct store_proc_lib, bound by hand in this order */
#define PROC_LIB_COLUMNS(X)                                                                        \
	X(name,    "TEXT NOT NULL", 10, 0)                                                         \
	X(version, "TEXT",          10, 0)                                                         \
	X(path,    "TEXT",          10, 0)

/* The tables described above, for the code that walks them all (migrations). */
#define STORE_FACT_COLUMNS(X)                                                                      \
	X(host_samples,     HOST_SAMPLE_COLUMNS)                                                   \
	X(cpu_samples,      CPU_SAMPLE_COLUMNS)                                                    \
	X(disk_samples,     DISK_SAMPLE_COLUMNS)                                                   \
	X(net_samples,      NET_SAMPLE_COLUMNS)                                                    \
	X(proc_samples,     PROC_SAMPLE_COLUMNS)                                                   \
	X(job_samples,      JOB_SAMPLE_COLUMNS)                                                    \
	X(gpu_samples,      GPU_SAMPLE_ALL_COLUMNS)                                                \
	X(gpu_proc_samples, GPU_PROC_SAMPLE_COLUMNS)                                               \
	X(fs_samples,       FS_SAMPLE_COLUMNS)                                                     \
	X(events,           EVENT_COLUMNS)                                                         \
	X(marks,            MARK_COLUMNS)                                                          \
	X(gaps,             GAP_COLUMNS)                                                           \
	X(cuda_procs,       CUDA_PROC_COLUMNS)                                                     \
	X(app_samples,      APP_SAMPLE_COLUMNS)                                                    \
	X(energy_samples,   ENERGY_SAMPLE_COLUMNS)                                                 \
	X(proc_libs,        PROC_LIB_COLUMNS)
/* clang-format on */

/*
 * SQL made from a list: FACT_DDL ", util_pct INTEGER, ...", FACT_NAMES
 * ", util_pct, ...", FACT_S_NAMES ", s.util_pct, ...", FACT_PARAMS ", ?, ...",
 * FACT_EXCLUDED ", util_pct = excluded.util_pct, ..." (an upsert's SET),
 * FACT_NCOLUMNS the count; FACT_CREATE the table as it is now (_WITH: a
 * table constraint after the columns, ", PRIMARY KEY (...)"); FACT_INSERT
 * a row's insert: the key's columns and their values, then a ? a column.
 */
#define FACT_COL_DDL_(c, type, ...)	 ", " #c " " type
#define FACT_COL_NAME_(c, ...)		 ", " #c
#define FACT_COL_S_NAME_(c, ...)	 ", s." #c
#define FACT_COL_PARAM_(c, ...)		 ", ?"
#define FACT_COL_EXCLUDED_(c, ...)	 ", " #c " = excluded." #c
#define FACT_COL_COUNT_(c, ...)		 +1
#define FACT_DDL(COLUMNS)		 COLUMNS(FACT_COL_DDL_)
#define FACT_NAMES(COLUMNS)		 COLUMNS(FACT_COL_NAME_)
#define FACT_S_NAMES(COLUMNS)		 COLUMNS(FACT_COL_S_NAME_)
#define FACT_PARAMS(COLUMNS)		 COLUMNS(FACT_COL_PARAM_)
#define FACT_EXCLUDED(COLUMNS)		 COLUMNS(FACT_COL_EXCLUDED_)
#define FACT_NCOLUMNS(COLUMNS)		 (0 COLUMNS(FACT_COL_COUNT_))
#define FACT_CREATE(table, key, COLUMNS) FACT_CREATE_WITH(table, key, COLUMNS, "")
#define FACT_CREATE_WITH(table, key, COLUMNS, constraint)                                          \
	"CREATE TABLE " #table " (" key FACT_DDL(COLUMNS) constraint ") STRICT;\n"
#define FACT_INSERT(table, key, key_values, COLUMNS)                                               \
	"INSERT INTO " #table " (" key FACT_NAMES(COLUMNS) ") VALUES (" key_values FACT_PARAMS(    \
	    COLUMNS) ")"

/* A described column, and a described table's columns (store_fact_columns). */
struct fact_column {
	const char *name;
	const char *type; /* its SQL, as in CREATE TABLE */
	int64_t since;
};

struct fact_columns {
	const char *table;
	const struct fact_column *col;
	int ncol;
};

extern const struct fact_columns store_fact_columns[];
extern const int store_nfact_columns;

#endif
