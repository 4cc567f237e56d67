/*
 * store.h - the embedded SQLite store: schema, writer and reader.
 *
 * One file, WAL mode, one transaction per tick.  Integer columns with units
 * in their names (ms since the epoch, bytes, ms of CPU).  Missing values are
 * NULL.  The schema is versioned with PRAGMA user_version and marked with
 * PRAGMA application_id = 0x4A53434F ('JSCO'); a file that is not ours is
 * never written to, and a newer schema is refused.
 *
 * Every fact row (host_samples, cpu_samples, disk_samples, net_samples,
 * proc_samples, job_samples, events; gap records too) has a `seq` drawn
 * from one counter that only grows, the resend cursor for agents
 * (DESIGN.md section 5).
 *
 * Errors: 0 or -errno; a function that fails has printed a message naming
 * the file (log.h).  -EPROTO: not a jobscope store (foreign or corrupt),
 * -EPROTONOSUPPORT: written by a newer jobscope, -ENOSPC: disk full,
 * -ENOENT: no such job.  A failed tick is rolled back whole and the store
 * stays usable.  Not thread-safe: one store per thread.
 *
 * This header: opening, closing, durability, meta, and the records every
 * area shares.  The API by area, each a header of its own: write.h (nodes,
 * jobs, ticks, every put), reader.h (queries, jobs, replay, checkpoints),
 * sync.h (export to a head and remote write, the head's ingest), upkeep.h
 * (retention, packs), profiling.h (a head's sessions, requests, frames),
 * jobdata.h (CUDA tables, app metrics, energy, libraries); and tick.h (one
 * tick's rows, for run and the agent), rollup.h, queries.h (the named read
 * queries), rowset.h.  Internal headers: conn.h (the connection, error
 * helpers), schema.h, writer.h, column.h, pack.h, packs.h.
 */
#ifndef JOBSCOPE_STORE_H
#define JOBSCOPE_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "attrib/job.h"
#include "sample/gpu/gpu.h"
#include "sample/host.h"
#include "sample/sample.h"

#define STORE_SCHEMA_VERSION 18
#define STORE_APPLICATION_ID 0x4A53434F
/*
 * Stores up to this size get a full PRAGMA quick_check when opened: about
 * 40 ms, which a report can pay (a packed week of an 8-GPU node is 115 MB,
 * 0.16 s of checking: more than its report).
 */
#define STORE_QUICK_CHECK_MAX_BYTES ((int64_t)32 << 20)

struct store;

enum store_open_flags {
	STORE_READONLY = 0,
	STORE_CREATE = 1u << 0, /* create the file and its parent directories */
	/* no quick_check at open: another connection of this process just did it */
	STORE_CHECKED = 1u << 1,
};

int store_open(const char *path, unsigned flags, struct store **out);
void store_close(struct store *st);
/*
 * Every commit fsynced (PRAGMA synchronous = FULL): for a head, which
 * acknowledges commits.  In PostgreSQL (whose commits are durable) it
 * makes st the database's one writer instead: a session advisory lock,
 * -EBUSY when another head holds it (two would draw the same seqs).
 */
int store_set_durable(struct store *st);
/*
 * WAL checkpoints: by default the commit that fills 1000 pages of WAL runs
 * one (and waits for it).  A writer that must not wait (the head's
 * committer) turns that off, and another connection runs store_checkpoint
 * (PASSIVE: it copies what no reader still needs, beside the writer).
 */
#define STORE_WAL_RESTART_FRAMES 16384 /* pages: 64 MiB of WAL at 4 KiB */
int store_set_autocheckpoint(struct store *st, bool on);
int store_checkpoint(struct store *st);
const char *store_path(const struct store *st);
/*
 * The store's last error, one printable line (for a PostgreSQL store,
 * libpq's, e.g. why the database cannot be reached); valid until the next
 * call on st.
 */
const char *store_errmsg(struct store *st);

/* The meta table: a value by key (0, or -ENOENT), and setting one. */
int store_meta_get(struct store *st, const char *key, char *buf, size_t size);
int store_meta_set(struct store *st, const char *key, const char *value);

/* A GPU of a node (devices table). */
struct device_record {
	int64_t id; /* row id */
	char vendor[16];
	char driver_version[GPU_VERSION_MAX];
	struct gpu_device_info info;
	/*
	 * A MIG instance's parent GPU (info.mig): its uuid, which the devices
	 * row keeps (the caller names it: store_tick_put_devices resolves
	 * info.mig_parent, a position in the gpu_set's dev[]).  A row read
	 * back has it and info.mig_parent -1 (no list to point into).
	 */
	char mig_parent_uuid[GPU_UUID_MAX];
};

#endif
