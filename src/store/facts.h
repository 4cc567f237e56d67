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
 * The columns of gpu_samples are described once too (GPU_SAMPLE_COLUMNS):
 * its DDL, its insert, the replay's select and the reading of a row into
 * a struct gpu_sample are made from them.
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
	X(fs_samples,       7,  FACT_TIMED | FACT_INGESTED | FACT_METRIC, N, _,         _)         \
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
 * gpu_samples' measured columns after (seq, device_id, ts_ms), each an
 * INTEGER that is NULL when its bit of enum gpu_metric is not valid, and
 * a field of struct gpu_sample of the same name.
 */
#define GPU_SAMPLE_COLUMNS(X)                                                                      \
	X(util_pct, GPU_UTIL)                                                                      \
	X(mem_util_pct, GPU_MEM_UTIL)                                                              \
	X(mem_used_bytes, GPU_MEM_USED)                                                            \
	X(pcie_rx_bps, GPU_PCIE)                                                                   \
	X(pcie_tx_bps, GPU_PCIE)                                                                   \
	X(nvlink_rx_bytes, GPU_NVLINK)                                                             \
	X(nvlink_tx_bytes, GPU_NVLINK)                                                             \
	X(power_mw, GPU_POWER)                                                                     \
	X(energy_mj, GPU_ENERGY)                                                                   \
	X(temp_c, GPU_TEMP)                                                                        \
	X(sm_clock_mhz, GPU_SM_CLOCK)                                                              \
	X(mem_clock_mhz, GPU_MEM_CLOCK)                                                            \
	X(throttle_reasons, GPU_THROTTLE)                                                          \
	X(ecc_corrected, GPU_ECC)                                                                  \
	X(ecc_uncorrected, GPU_ECC)

/* SQL pieces made from the columns: ", util_pct INTEGER, ...", ", util_pct, ...",
 * ", s.util_pct, ..." and ", ?, ..." */
#define GPU_COL_DDL_(c, bit)   ", " #c " INTEGER"
#define GPU_COL_NAME_(c, bit)  ", " #c
#define GPU_COL_S_NAME_(c, bit) ", s." #c
#define GPU_COL_PARAM_(c, bit) ", ?"
#define GPU_SAMPLE_DDL	       GPU_SAMPLE_COLUMNS(GPU_COL_DDL_)
#define GPU_SAMPLE_NAMES       GPU_SAMPLE_COLUMNS(GPU_COL_NAME_)
#define GPU_SAMPLE_S_NAMES     GPU_SAMPLE_COLUMNS(GPU_COL_S_NAME_)
#define GPU_SAMPLE_PARAMS      GPU_SAMPLE_COLUMNS(GPU_COL_PARAM_)

#endif
