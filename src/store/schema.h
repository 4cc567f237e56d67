/*
 * schema.h - the store's schema: creating and migrating it, checking an
 * existing file against it, and the column lists that the writer and the
 * replay both spell out.
 *
 * Not part of the API.  Used by open.c (create, check, migrate) and by
 * writer.c and replay.c (STORE_HOST_COLUMNS).  Errors: 0 or -errno, the
 * message printed (a refused file says why: not ours, corrupt, newer).
 * Not thread-safe: runs on one connection.
 */
#ifndef JOBSCOPE_STORE_SCHEMA_H
#define JOBSCOPE_STORE_SCHEMA_H

#include "store/conn.h"

/*
 * The host_samples columns after (seq, node_id, ts_ms), in the order the
 * writer binds and the reader reads them.
 */
#define STORE_HOST_COLUMNS                                                                         \
	"cpu_user_ms, cpu_nice_ms, cpu_system_ms, cpu_idle_ms, cpu_iowait_ms, cpu_irq_ms, "        \
	"cpu_softirq_ms, cpu_steal_ms, ncpus, "                                                    \
	"mem_total_bytes, mem_free_bytes, mem_available_bytes, mem_buffers_bytes, "                \
	"mem_cached_bytes, mem_shmem_bytes, swap_total_bytes, swap_free_bytes, "                   \
	"load1_milli, load5_milli, load15_milli, procs_running, procs_blocked, "                   \
	"disk_read_bytes, disk_write_bytes, disk_reads, disk_writes, "                             \
	"net_rx_bytes, net_tx_bytes, net_rx_packets, net_tx_packets, "                             \
	"psi_cpu_some_us, psi_cpu_full_us, psi_mem_some_us, psi_mem_full_us, "                     \
	"psi_io_some_us, psi_io_full_us"
#define STORE_HOST_NCOLUMNS 36

/* meta's created_by */
#define STORE_CREATED_BY "jobscope " JOBSCOPE_VERSION

/*
 * Brings the schema from its user_version to STORE_SCHEMA_VERSION in one
 * transaction; from 0 (an empty file) creates it.
 */
int store__migrate(struct store *st);
/*
 * The checks on an existing store: ours, not newer, intact (quick_check up
 * to STORE_QUICK_CHECK_MAX_BYTES), migrated when older and writable, and
 * holding the tables we query.  Sets st->schema_version.
 */
int store__check_schema(struct store *st);

#endif
