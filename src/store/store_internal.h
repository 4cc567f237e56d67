/*
 * store_internal.h - what store.c (open, writer) and store_read.c (reader)
 * share: the connection, the writer's statement cache and the mapping of
 * SQLite result codes to -errno.
 *
 * Not part of the API.  Unit tests include it only to reach the connection
 * for fault injection (PRAGMA max_page_count), as git's test-tool does.
 */
#ifndef JOBSCOPE_STORE_INTERNAL_H
#define JOBSCOPE_STORE_INTERNAL_H

#include <limits.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store/store.h"

/* Statements the writer prepares once and reuses (store.c). */
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

#define STORE_INGEST_CACHE 32

struct ingest_memo;
void store__memo_free(struct ingest_memo *m);

struct store {
	sqlite3 *db;
	bool writable;
	bool in_tick;
	int tick_err;		/* first failure inside the open tick, 0 if none */
	int64_t next_seq;	/* seq of the next fact row, whatever its table */
	int64_t tick_seq;	/* next_seq when the tick began: restored on rollback */
	int64_t data_version;	/* PRAGMA data_version when next_seq was last right */
	int64_t schema_version; /* of the file: older ones are read without GPU tables */
	sqlite3_stmt *stmts[STMT__COUNT];
	/* the head's INSERTs, by their SQL (a table and its batch's columns) */
	struct {
		char *sql;
		sqlite3_stmt *stmt;
	} ingest_cache[STORE_INGEST_CACHE];
	size_t ningest_cache;
	struct ingest_memo *memo; /* the head's: dimension rows already upserted (store_ingest.c) */
	char errmsg[256]; /* store__errmsg's buffer */
	char path[PATH_MAX];
};

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

/* SQLite result code (extended or primary) -> -errno; 0 for OK/ROW/DONE. */
int store__errno(sqlite3 *db, int rc);
/*
 * Copies src into dst (size > 0) with every byte outside printable ASCII
 * made '?': SQLite's messages quote names and tokens from the file.
 */
void store__printable(char *dst, size_t size, const char *src);
/* Reports a failed read of what ("cannot WHAT in store ..."): -errno, never 0. */
int store__read_fail(struct store *st, int rc, const char *what);
/* The connection's last error message, printable; valid until the next call. */
const char *store__errmsg(struct store *st);

#endif
