/*
 * replay.c - a job's rows replayed in the order they were written (seq),
 * streamed: one cursor per kind of row merged one row at a time, never a
 * whole table in memory.
 *
 *   replay_sql[], replay_job_sql, replay_event_sql, replay_gpu_sql (by
 *   seq range and by device)                       the cursors' queries
 *   cursor_step, cursor_open                       one cursor
 *   host_details, host_from_row, replay_host       a host row and its
 *                                                  per-CPU, disk, net rows
 *   replay_job_sample, replay_proc_sample, replay_event,
 *   replay_gpu, replay_gpu_proc                    a row to its callback
 *                                                  (events: the job's, and
 *                                                  its node's intervals)
 *   open_gpu_cursors                               by seq range or device
 *   replay_window, replay_prepare, replay_merge
 *   store_replay_job
 *
 * The file may come from anywhere: every string is copied with a bound and
 * a NULL becomes "" or a cleared valid bit.
 */
#include "store/conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "store/column.h"
#include "store/facts.h"
#include "store/tick.h"
#include "store/reader.h"

/*
 * Replay.  One cursor per kind of row (per device for the GPU tables),
 * each in seq order; the merge always hands out the smallest seq next.  A
 * host row brings its per-CPU, disk and interface rows, written right
 * after it with the same node and timestamp.
 *
 * Cursors over a time window read their index in (ts_ms, seq) order (the
 * index ends with the rowid, seq), which is seq order for one node's host
 * rows and one device's rows, as they are written tick by tick; ordering
 * them "BY seq" instead made SQLite sort the whole window in a temporary
 * b-tree (most of the time of a long job's report).
 */
enum replay_kind {
	REPLAY_HOST,
	REPLAY_JOB,
	REPLAY_PROC,
	REPLAY_EVENT,
	REPLAY_GPU,
	REPLAY_GPU_PROC,
	REPLAY__COUNT
};

struct replay_cursor {
	enum replay_kind kind;
	struct db_stmt *stmt;
	bool live; /* stmt holds a row */
	int64_t seq;
};

/*
 * a cursor per kind (two of events: the job's, its node's intervals), and
 * one per device of the node for each GPU table
 */
#define REPLAY_MAX_CURSORS (REPLAY__COUNT + 1 + 2 * GPU_MAX_DEVICES)

#define REPLAY_GPU_SQL_MAX 4096

struct replay {
	struct store *st;
	const struct store_replay_ops *ops;
	void *arg;
	int64_t node_id;
	int64_t job_id;
	struct store_replay_span *span; /* never NULL: an unbounded one for a whole replay */
	struct replay_cursor cur[REPLAY_MAX_CURSORS];
	int ncur;
	struct db_stmt *cpu_stmt;
	struct db_stmt *disk_stmt;
	struct db_stmt *net_stmt;
	struct host_sample *host; /* ~80 KiB: on the heap */
	struct proc_info pinfo;
	struct proc_sample psample;
	struct job_sample jsample;
	struct event_record event;
	struct device_record dev;
	struct device_record *devcache; /* GPU_MAX_DEVICES, by first sight */
	int ndevcache;
	struct gpu_sample gsample;
	struct gpu_proc gproc;
	/* the GPU cursors' queries, by seq range and by device: the store's version's columns */
	char gpu_sql[2][REPLAY_GPU_SQL_MAX], gpu_proc_sql[2][REPLAY_GPU_SQL_MAX];
};

/*
 * The devices columns, after the fact table's own: schema 2's, then schema
 * 16's (NULL in a store older, read as it is).
 */
#define DEVICE_COLUMNS                                                                             \
	" d.id, d.vendor, d.idx, d.uuid, d.name, d.pci_bus_id, d.mem_total_bytes,"                 \
	" d.power_limit_mw, d.nvlink_count, d.driver_version, d.supported"
#define DEVICE_COLUMNS_V16                                                                         \
	", d.prof_supported, d.mig_enabled, d.mig, d.mig_parent_uuid, d.gpu_instance_id,"          \
	" d.compute_instance_id, d.mig_profile"
#define DEVICE_COLUMNS_NULL ", NULL, NULL, NULL, NULL, NULL, NULL, NULL"
#define DEVICE_NCOLUMNS	    18 /* DEVICE_COLUMNS and DEVICE_COLUMNS_V16 */

/* facts.h's columns of the tables replayed */
#define HOST_NAMES   FACT_NAMES(HOST_SAMPLE_COLUMNS)
#define CPU_NAMES    FACT_NAMES(CPU_SAMPLE_COLUMNS)
#define DISK_NAMES   FACT_NAMES(DISK_SAMPLE_COLUMNS)
#define NET_NAMES    FACT_NAMES(NET_SAMPLE_COLUMNS)
#define PROC_S_NAMES FACT_S_NAMES(PROC_SAMPLE_COLUMNS)
#define EVENT_NAMES  FACT_NAMES(EVENT_COLUMNS)

static const char *const replay_sql[REPLAY__COUNT] = {
    [REPLAY_HOST] = ("SELECT seq, ts_ms" HOST_NAMES " FROM host_samples_all"
		     " WHERE node_id = ?1 AND ts_ms >= ?2 AND ts_ms <= ?3 ORDER BY ts_ms, seq"),
    /* REPLAY_JOB: replay_job_sql, the columns the store's version has */
    [REPLAY_PROC] = ("SELECT s.seq, s.ts_ms" PROC_S_NAMES
		     ", p.pid, p.ppid, p.start_ms, p.end_ms, p.uid, p.comm, p.cmdline"
		     " FROM proc_samples_all s JOIN procs p ON p.id = s.proc_id"
		     /*
		      * the job's node's processes only: PostgreSQL's generic plan
		      * otherwise hashes the whole procs table for each replay
		      */
		     " AND p.node_id = (SELECT node_id FROM jobs WHERE id = ?1)"
		     " WHERE s.job_id = ?1 ORDER BY s.seq"),
    /* REPLAY_EVENT: replay_event_sql, NULL for a column the store's version lacks */
    /* REPLAY_GPU, REPLAY_GPU_PROC: replay_gpu_sql */
};

/*
 * The GPU cursors' queries (replay_gpu_sql): facts.h's columns, each in
 * its place, NULL for one the store's version lacks, then the device's.
 *
 * By seq range, when every device of the store is the job's node's: one
 * cursor each, over a range of seq (the table's rowid) found through the
 * device index, read in rowid order: no index step and no table seek per
 * row.  ?1, ?2: the seq range; ?3, ?4: the window.  By device: ?1 the
 * device, ?2, ?3 the window.
 */
#define GPU_PROC_P_COLUMNS ", p.pid, p.ppid, p.start_ms, p.end_ms, p.uid, p.comm, p.cmdline"
#define GPU_FROM	   " FROM gpu_samples_all s JOIN devices d ON d.id = s.device_id"
#define GPU_PROC_FROM                                                                              \
	" FROM gpu_proc_samples_all s JOIN devices d ON d.id = s.device_id"                        \
	" LEFT JOIN procs p ON p.id = s.proc_id"
#define GPU_BY_RANGE                                                                               \
	" WHERE s.seq >= ?1 AND s.seq <= ?2 AND s.ts_ms >= ?3 AND s.ts_ms <= ?4 ORDER BY s.seq"
#define GPU_BY_DEVICE                                                                              \
	" WHERE s.device_id = ?1 AND s.ts_ms >= ?2 AND s.ts_ms <= ?3 ORDER BY s.ts_ms, s.seq"

static void sql_add(char *sql, size_t size, size_t *n, const char *s)
{
	if (*n < size)
		*n += (size_t)snprintf(sql + *n, size - *n, "%s", s);
}

/* The column list of a GPU cursor (proc: gpu_proc_samples'), up to FROM. */
static void gpu_columns_sql(char *sql, size_t size, size_t *n, int64_t version, bool proc)
{
	*n = 0;
	sql_add(sql, size, n, "SELECT s.seq, s.ts_ms");
#define SELECT_GPU_COLUMN(c, type, since, bit)                                                     \
	sql_add(sql, size, n, (since) <= version ? ", s." #c : ", NULL");
	if (proc) {
		GPU_PROC_SAMPLE_COLUMNS(SELECT_GPU_COLUMN)
	} else {
		GPU_SAMPLE_ALL_COLUMNS(SELECT_GPU_COLUMN)
	}
#undef SELECT_GPU_COLUMN
	sql_add(sql, size, n, "," DEVICE_COLUMNS);
	sql_add(sql, size, n, version >= 16 ? DEVICE_COLUMNS_V16 : DEVICE_COLUMNS_NULL);
	if (proc)
		sql_add(sql, size, n, GPU_PROC_P_COLUMNS);
}

/* rp's four GPU queries, for its store's version. */
static void replay_gpu_sql(struct replay *rp)
{
	int64_t version = rp->st->schema_version;
	size_t n;

	for (int k = 0; k < 2; k++) {
		const char *by = k == 0 ? GPU_BY_RANGE : GPU_BY_DEVICE;

		gpu_columns_sql(rp->gpu_sql[k], REPLAY_GPU_SQL_MAX, &n, version, false);
		sql_add(rp->gpu_sql[k], REPLAY_GPU_SQL_MAX, &n, GPU_FROM);
		sql_add(rp->gpu_sql[k], REPLAY_GPU_SQL_MAX, &n, by);
		gpu_columns_sql(rp->gpu_proc_sql[k], REPLAY_GPU_SQL_MAX, &n, version, true);
		sql_add(rp->gpu_proc_sql[k], REPLAY_GPU_SQL_MAX, &n, GPU_PROC_FROM);
		sql_add(rp->gpu_proc_sql[k], REPLAY_GPU_SQL_MAX, &n, by);
	}
}

/*
 * The node's `interval` events (tick.h: they have no job): the one in
 * effect at the job's start, the latest at or before it, and those up to
 * its end, so the analysis judges each sample by the real spacing.  Only
 * agents write them (schema 3 and later).  ?1 node, ?2 start, ?3 end.
 */
static const char replay_node_intervals[] =
    "SELECT seq, ts_ms" EVENT_NAMES " FROM events"
    " WHERE job_id IS NULL AND node_id = ?1 AND kind = '" STORE_EVENT_INTERVAL "'"
    " AND ts_ms <= ?3 AND ts_ms >= coalesce((SELECT max(ts_ms) FROM events"
    " WHERE job_id IS NULL AND node_id = ?1 AND kind = '" STORE_EVENT_INTERVAL "'"
    " AND ts_ms <= ?2), ?2) ORDER BY seq";

static int cursor_step(struct replay *rp, struct replay_cursor *c)
{
	int rc = db_step(c->stmt);

	c->live = rc == SQLITE_ROW;
	if (rc == SQLITE_ROW) {
		c->seq = db_column_int64(c->stmt, 0);
		return 0;
	}
	if (rc == SQLITE_DONE)
		return 0;
	return store__read_fail(rp->st, rc, "replay a job");
}

/* Per-CPU, disk or interface rows of one host row: same node and ts, after its seq. */
static void host_detail_start(struct replay *rp, struct db_stmt *stmt, int64_t ts_ms, int64_t seq)
{
	db_reset(stmt);
	db_bind_int64(stmt, 1, rp->node_id);
	db_bind_int64(stmt, 2, ts_ms);
	db_bind_int64(stmt, 3, seq);
}

/* reads facts.h's CPU, DISK and NET_SAMPLE_COLUMNS by hand, in their order */
_Static_assert(FACT_NCOLUMNS(CPU_SAMPLE_COLUMNS) == 9, "host_details reads 9 CPU columns");
_Static_assert(FACT_NCOLUMNS(DISK_SAMPLE_COLUMNS) == 6, "host_details reads 6 disk columns");
_Static_assert(FACT_NCOLUMNS(NET_SAMPLE_COLUMNS) == 5, "host_details reads 5 net columns");

static int host_details(struct replay *rp, int64_t ts_ms, int64_t seq)
{
	struct host_sample *h = rp->host;
	struct row r;
	int rc = SQLITE_DONE;

	h->cpu.ncpus = 0;
	if (h->valid & HOST_HAS_CPU) {
		host_detail_start(rp, rp->cpu_stmt, ts_ms, seq);
		while (h->cpu.ncpus < HOST_MAX_CPUS && (rc = db_step(rp->cpu_stmt)) == SQLITE_ROW) {
			struct cpu_times *t = &h->cpu.cpu[h->cpu.ncpus];

			r = (struct row){rp->cpu_stmt, 1};
			h->cpu.cpu_id[h->cpu.ncpus] = (uint16_t)col_i64(&r);
			t->user_ms = (uint64_t)col_i64(&r);
			t->nice_ms = (uint64_t)col_i64(&r);
			t->system_ms = (uint64_t)col_i64(&r);
			t->idle_ms = (uint64_t)col_i64(&r);
			t->iowait_ms = (uint64_t)col_i64(&r);
			t->irq_ms = (uint64_t)col_i64(&r);
			t->softirq_ms = (uint64_t)col_i64(&r);
			t->steal_ms = (uint64_t)col_i64(&r);
			h->cpu.ncpus++;
		}
		if (h->cpu.ncpus < HOST_MAX_CPUS && rc != SQLITE_DONE)
			return store__read_fail(rp->st, rc, "replay a job");
		db_reset(rp->cpu_stmt);
	}

	h->ndisks = 0;
	if (h->valid & HOST_HAS_DISK) {
		host_detail_start(rp, rp->disk_stmt, ts_ms, seq);
		while (h->ndisks < HOST_MAX_DISKS && (rc = db_step(rp->disk_stmt)) == SQLITE_ROW) {
			struct disk_stat *d = &h->disks[h->ndisks++];

			r = (struct row){rp->disk_stmt, 1};
			col_text(&r, d->name, sizeof(d->name));
			d->reads = (uint64_t)col_i64(&r);
			d->read_bytes = (uint64_t)col_i64(&r);
			d->writes = (uint64_t)col_i64(&r);
			d->write_bytes = (uint64_t)col_i64(&r);
			d->io_ms = (uint64_t)col_i64(&r);
		}
		if (h->ndisks < HOST_MAX_DISKS && rc != SQLITE_DONE)
			return store__read_fail(rp->st, rc, "replay a job");
		db_reset(rp->disk_stmt);
	}

	h->nnets = 0;
	if (h->valid & HOST_HAS_NET) {
		host_detail_start(rp, rp->net_stmt, ts_ms, seq);
		while (h->nnets < HOST_MAX_NETS && (rc = db_step(rp->net_stmt)) == SQLITE_ROW) {
			struct net_stat *ns = &h->nets[h->nnets++];

			r = (struct row){rp->net_stmt, 1};
			col_text(&r, ns->name, sizeof(ns->name));
			ns->rx_bytes = (uint64_t)col_i64(&r);
			ns->rx_packets = (uint64_t)col_i64(&r);
			ns->tx_bytes = (uint64_t)col_i64(&r);
			ns->tx_packets = (uint64_t)col_i64(&r);
		}
		if (h->nnets < HOST_MAX_NETS && rc != SQLITE_DONE)
			return store__read_fail(rp->st, rc, "replay a job");
		db_reset(rp->net_stmt);
	}
	return 0;
}

static void psi_from_row(struct row *r, struct host_psi *p, bool *any)
{
	p->some_valid = col_opt(r, &p->some_total_us);
	p->full_valid = col_opt(r, &p->full_total_us);
	*any = p->some_valid || p->full_valid;
}

/* reads facts.h's HOST_SAMPLE_COLUMNS by hand, in their order */
_Static_assert(FACT_NCOLUMNS(HOST_SAMPLE_COLUMNS) == 36, "host_from_row reads 36 columns");

/* Scalars only: the arrays are filled by host_details up to their counts. */
static void host_from_row(struct row *r, struct host_sample *h)
{
	struct cpu_times *t = &h->cpu.total;
	struct host_meminfo *m = &h->mem;
	uint64_t v, ncpus;
	bool any;

	h->valid = 0;
	h->cpu.btime_s = 0;
	h->cpu.ctxt = 0;
	if (col_opt(r, &t->user_ms))
		h->valid |= HOST_HAS_CPU;
	col_opt(r, &t->nice_ms);
	col_opt(r, &t->system_ms);
	col_opt(r, &t->idle_ms);
	col_opt(r, &t->iowait_ms);
	col_opt(r, &t->irq_ms);
	col_opt(r, &t->softirq_ms);
	col_opt(r, &t->steal_ms);
	/* ncpus: the per-CPU rows found are what counts, unless they are not read */
	h->cpu.ncpus = col_opt(r, &ncpus) && ncpus <= HOST_MAX_CPUS ? (int)ncpus : 0;

	m->valid = 0;
	m->valid |= col_opt(r, &m->total_bytes) ? MEMINFO_TOTAL : 0;
	m->valid |= col_opt(r, &m->free_bytes) ? MEMINFO_FREE : 0;
	m->valid |= col_opt(r, &m->available_bytes) ? MEMINFO_AVAILABLE : 0;
	m->valid |= col_opt(r, &m->buffers_bytes) ? MEMINFO_BUFFERS : 0;
	m->valid |= col_opt(r, &m->cached_bytes) ? MEMINFO_CACHED : 0;
	m->valid |= col_opt(r, &m->shmem_bytes) ? MEMINFO_SHMEM : 0;
	m->valid |= col_opt(r, &m->swap_total_bytes) ? MEMINFO_SWAP_TOTAL : 0;
	m->valid |= col_opt(r, &m->swap_free_bytes) ? MEMINFO_SWAP_FREE : 0;
	if (m->valid)
		h->valid |= HOST_HAS_MEM;

	memset(&h->load, 0, sizeof(h->load));
	if (col_opt(r, &v))
		h->valid |= HOST_HAS_LOAD;
	h->load.load1_milli = (uint32_t)v;
	col_opt(r, &v);
	h->load.load5_milli = (uint32_t)v;
	col_opt(r, &v);
	h->load.load15_milli = (uint32_t)v;
	col_opt(r, &h->cpu.procs_running);
	col_opt(r, &h->cpu.procs_blocked);

	if (col_opt(r, &h->disk_read_bytes))
		h->valid |= HOST_HAS_DISK;
	col_opt(r, &h->disk_write_bytes);
	col_opt(r, &h->disk_reads);
	col_opt(r, &h->disk_writes);
	if (col_opt(r, &h->net_rx_bytes))
		h->valid |= HOST_HAS_NET;
	col_opt(r, &h->net_tx_bytes);
	col_opt(r, &h->net_rx_packets);
	col_opt(r, &h->net_tx_packets);

	psi_from_row(r, &h->psi_cpu, &any);
	h->valid |= any ? HOST_HAS_PSI_CPU : 0;
	psi_from_row(r, &h->psi_mem, &any);
	h->valid |= any ? HOST_HAS_PSI_MEM : 0;
	psi_from_row(r, &h->psi_io, &any);
	h->valid |= any ? HOST_HAS_PSI_IO : 0;
}

static int replay_host(struct replay *rp, struct db_stmt *stmt)
{
	struct row r = {stmt, 0};
	int64_t seq = col_i64(&r);
	int64_t ts_ms = col_i64(&r);
	int ret;

	host_from_row(&r, rp->host);
	ret = rp->ops->host_totals_only ? 0 : host_details(rp, ts_ms, seq);
	if (ret)
		return ret;
	rp->ops->host(rp->arg, ts_ms, rp->host);
	return 0;
}

/* The job cursor's query: the columns of facts.h that a store of this version has. */
static void replay_job_sql(char *sql, size_t size, int64_t version)
{
	size_t n = (size_t)snprintf(sql, size, "SELECT seq, ts_ms");

#define SELECT_JOB_COLUMN(c, type, since, bit)                                                     \
	if ((since) <= version && n < size)                                                        \
		n += (size_t)snprintf(sql + n, size - n, ", " #c);
	JOB_SAMPLE_COLUMNS(SELECT_JOB_COLUMN)
#undef SELECT_JOB_COLUMN
	if (n < size)
		snprintf(sql + n, size - n, " FROM job_samples_all WHERE job_id = ?1 ORDER BY seq");
}

/*
 * The job's events: facts.h's columns, each in its place, NULL for one a
 * store of this version lacks (a schema 1 store has no events.gpu_index).
 */
static void replay_event_sql(char *sql, size_t size, int64_t version)
{
	size_t n = (size_t)snprintf(sql, size, "SELECT seq, ts_ms");

#define SELECT_EVENT_COLUMN(c, type, since, bit)                                                   \
	if (n < size)                                                                              \
		n += (size_t)snprintf(sql + n, size - n, ", %s", (since) <= version ? #c : "NULL");
	EVENT_COLUMNS(SELECT_EVENT_COLUMN)
#undef SELECT_EVENT_COLUMN
	if (n < size)
		snprintf(sql + n, size - n, " FROM events WHERE job_id = ?1 ORDER BY seq");
}

static void replay_job_sample(struct replay *rp, struct db_stmt *stmt)
{
	struct job_sample *s = &rp->jsample;
	struct row r = {stmt, 1};
	int64_t ts_ms = col_i64(&r);
	int64_t version = rp->st->schema_version;
	uint64_t v;

	memset(s, 0, sizeof(*s));
	/* a NULL is 0; it clears the valid bit the column has (read_bytes' JS_IO: either) */
#define READ_JOB_COLUMN(c, type, since, bit)                                                       \
	if ((since) <= version) {                                                                  \
		s->valid |= col_opt(&r, &v) ? (bit) : 0;                                           \
		s->c = v;                                                                          \
	}
	JOB_SAMPLE_COLUMNS(READ_JOB_COLUMN)
#undef READ_JOB_COLUMN
	rp->ops->job(rp->arg, ts_ms, s);
}

/* The procs columns pid, ppid, start_ms, end_ms, uid, comm, cmdline, in that order. */
static void proc_from_row(struct row *r, struct proc_info *p)
{
	p->pid = (int32_t)col_i64(r);
	p->ppid = (int32_t)col_i64(r);
	p->start_ms = col_i64(r);
	p->end_ms = col_i64(r);
	p->uid = (uint32_t)col_i64(r);
	col_text(r, p->comm, sizeof(p->comm));
	col_text(r, p->cmdline, sizeof(p->cmdline));
}

/* reads facts.h's PROC_SAMPLE_COLUMNS by hand, in their order */
_Static_assert(FACT_NCOLUMNS(PROC_SAMPLE_COLUMNS) == 11, "replay_proc_sample reads 11 columns");

static void replay_proc_sample(struct replay *rp, struct db_stmt *stmt)
{
	struct proc_sample *s = &rp->psample;
	struct proc_info *p = &rp->pinfo;
	struct row r = {stmt, 1};
	int64_t ts_ms = col_i64(&r);
	char state[2];
	uint64_t v;

	memset(s, 0, sizeof(*s));
	col_text(&r, state, sizeof(state));
	s->state = state[0];
	s->valid |= col_opt(&r, &v) ? PS_THREADS : 0;
	s->threads = (uint32_t)v;
	s->user_ms = (uint64_t)col_i64(&r);
	s->system_ms = (uint64_t)col_i64(&r);
	s->child_user_ms = (uint64_t)col_i64(&r);
	s->child_system_ms = (uint64_t)col_i64(&r);
	s->valid |= col_opt(&r, &s->rss_bytes) ? PS_RSS : 0;
	s->valid |= col_opt(&r, &s->hwm_bytes) ? PS_HWM : 0;
	s->valid |= col_opt(&r, &s->swap_bytes) ? PS_SWAP : 0;
	s->valid |= col_opt(&r, &s->read_bytes) ? PS_IO : 0;
	col_opt(&r, &s->write_bytes);

	proc_from_row(&r, p);
	rp->ops->proc(rp->arg, p, ts_ms, s);
}

_Static_assert(FACT_NCOLUMNS(EVENT_COLUMNS) == 5, "replay_event reads 5 columns");

static void replay_event(struct replay *rp, struct db_stmt *stmt)
{
	struct event_record *e = &rp->event;
	struct row r = {stmt, 1};
	uint64_t v;

	memset(e, 0, sizeof(*e));
	e->ts_ms = col_i64(&r);
	col_text(&r, e->kind, sizeof(e->kind));
	e->pid = (int32_t)col_i64(&r);
	e->value = col_i64(&r);
	col_text(&r, e->message, sizeof(e->message));
	e->has_gpu = col_opt(&r, &v);
	e->gpu = (int32_t)v;
	rp->ops->event(rp->arg, e);
}

static void device_from_row(struct row *r, struct device_record *d)
{
	struct gpu_device_info *g = &d->info;
	uint64_t v;

	memset(d, 0, sizeof(*d));
	d->id = col_i64(r);
	col_text(r, d->vendor, sizeof(d->vendor));
	g->index = (int)col_i64(r);
	col_text(r, g->uuid, sizeof(g->uuid));
	col_text(r, g->name, sizeof(g->name));
	col_text(r, g->pci_bus_id, sizeof(g->pci_bus_id));
	g->valid |= col_opt(r, &g->mem_total_bytes) ? GPU_INFO_MEM_TOTAL : 0;
	g->valid |= col_opt(r, &v) ? GPU_INFO_POWER_LIMIT : 0;
	g->power_limit_mw = (uint32_t)v;
	g->valid |= col_opt(r, &v) ? GPU_INFO_NVLINKS : 0;
	g->nvlink_count = (uint32_t)v;
	col_text(r, d->driver_version, sizeof(d->driver_version));
	g->supported = (uint32_t)col_i64(r);
	/* schema 16 (NULL before: no figures of enum gpu_prof, no MIG) */
	g->prof_supported = (uint32_t)col_i64(r);
	g->mig_enabled = col_i64(r) != 0;
	g->mig = col_i64(r) != 0;
	col_text(r, d->mig_parent_uuid, sizeof(d->mig_parent_uuid));
	g->mig_parent = -1;
	g->gpu_instance_id = (uint32_t)col_i64(r);
	g->compute_instance_id = (uint32_t)col_i64(r);
	col_text(r, g->mig_profile, sizeof(g->mig_profile));
}

/*
 * The device of a GPU row: read once per replay and kept (a device's row
 * does not change within one), so a long job's rows are not copied string
 * by string each time.  Leaves r past the device columns.
 */
static const struct device_record *device_of_row(struct replay *rp, struct row *r)
{
	int64_t id = db_column_int64(r->stmt, r->col);

	for (int i = 0; i < rp->ndevcache; i++)
		if (rp->devcache[i].id == id) {
			r->col += DEVICE_NCOLUMNS;
			return &rp->devcache[i];
		}
	if (rp->ndevcache == GPU_MAX_DEVICES) {
		device_from_row(r, &rp->dev);
		return &rp->dev;
	}
	device_from_row(r, &rp->devcache[rp->ndevcache]);
	return &rp->devcache[rp->ndevcache++];
}

/* One optional column into a field of `width` bytes, setting `bit` when present. */
static void col_gpu(struct row *r, uint32_t *valid, uint32_t bit, void *field, size_t width)
{
	uint64_t v;

	if (!col_opt(r, &v))
		return;
	*valid |= bit;
	if (width == 4) {
		uint32_t v32 = (uint32_t)v;

		memcpy(field, &v32, 4);
	} else {
		memcpy(field, &v, 8);
	}
}

static void replay_gpu(struct replay *rp, struct db_stmt *stmt)
{
	struct gpu_sample *s = &rp->gsample;
	struct row r = {stmt, 1};
	int64_t ts_ms = col_i64(&r);
	uint32_t valid = 0;

	memset(s, 0, sizeof(*s));
#define READ_GPU_COLUMN(c, type, since, bit) col_gpu(&r, &valid, bit, &s->c, sizeof(s->c));
	GPU_SAMPLE_COLUMNS(READ_GPU_COLUMN)
	s->valid = valid;
	valid = 0;
	GPU_PROF_COLUMNS(READ_GPU_COLUMN)
	s->prof_valid = valid;
#undef READ_GPU_COLUMN
	rp->ops->gpu(rp->arg, device_of_row(rp, &r), ts_ms, s);
}

/* reads facts.h's GPU_PROC_SAMPLE_COLUMNS by hand, in their order */
_Static_assert(FACT_NCOLUMNS(GPU_PROC_SAMPLE_COLUMNS) == 8, "replay_gpu_proc reads 8 columns");

static void replay_gpu_proc(struct replay *rp, struct db_stmt *stmt)
{
	struct gpu_proc *g = &rp->gproc;
	struct proc_info *p = &rp->pinfo;
	struct row r = {stmt, 1};
	int64_t ts_ms = col_i64(&r);
	uint32_t valid = 0;
	const struct device_record *dev;
	uint64_t proc_id, job_id;
	bool ours;

	memset(g, 0, sizeof(*g));
	g->pid = (uint32_t)col_i64(&r);
	ours = col_opt(&r, &proc_id);
	ours = col_opt(&r, &job_id) && ours && (int64_t)job_id == rp->job_id;
	col_gpu(&r, &valid, GPU_PROC_MEM, &g->mem_bytes, 8);
	col_gpu(&r, &valid, GPU_PROC_UTIL, &g->sm_util_pct, 4);
	col_gpu(&r, &valid, GPU_PROC_MEM_UTIL, &g->mem_util_pct, 4);
	g->graphics = col_i64(&r) != 0;
	col_gpu(&r, &valid, GPU_PROC_MAX_MEM, &g->max_mem_bytes, 8);
	g->valid = valid;
	dev = device_of_row(rp, &r);
	memset(p, 0, sizeof(*p));
	if (ours)
		proc_from_row(&r, p);
	rp->ops->gpu_proc(rp->arg, dev, ours ? p : NULL, ts_ms, g);
}

/* Finds the job's node and time window; -ENOENT without a message. */
static int replay_window(struct store *st, int64_t id, int64_t *node_id, int64_t *start_ms,
			 int64_t *end_ms)
{
	struct db_stmt *stmt;
	int rc, ret;

	ret = store__prepare(st, "SELECT node_id, start_ms, end_ms FROM jobs WHERE id = ?",
			     "replay a job", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, id);
	rc = db_step(stmt);
	if (rc == SQLITE_ROW) {
		*node_id = db_column_int64(stmt, 0);
		*start_ms = db_column_int64(stmt, 1);
		*end_ms =
		    db_column_type(stmt, 2) == SQLITE_NULL ? INT64_MAX : db_column_int64(stmt, 2);
	} else if (rc == SQLITE_DONE) {
		ret = -ENOENT;
	} else {
		ret = store__read_fail(st, rc, "replay a job");
	}
	db_finalize(stmt);
	return ret;
}

/*
 * A cursor of kind: sql with ?1.. bound to the n values of binds (a job's
 * row; or a node or device and the window; or a seq range and the window).
 */
static int cursor_open(struct replay *rp, enum replay_kind kind, const char *sql,
		       const int64_t *binds, int n)
{
	struct replay_cursor *c;
	int ret;

	if (rp->ncur == REPLAY_MAX_CURSORS)
		return 0; /* more devices than a node can have: the rest are left out */
	c = &rp->cur[rp->ncur++];
	c->kind = kind;
	if (rp->span->after_seq > 0) {
		/*
		 * A tail: the same query with its rows after the checkpoint.
		 * SQLite flattens the subquery, so seq > ?9 (each table's
		 * rowid) and, for rows written tick by tick, ts_ms >= ?8 bound
		 * the index range instead of filtering every row of the job.
		 */
		char *tail = sqlite3_mprintf("SELECT * FROM (%s) AS r WHERE seq > ?9%s", sql,
					     kind == REPLAY_EVENT ? "" : " AND ts_ms >= ?8");

		if (!tail)
			return log_err(-ENOMEM, "cannot replay a job of store '%s'", rp->st->path);
		ret = store__prepare(rp->st, tail, "replay a job", &c->stmt);
		sqlite3_free(tail);
		if (!ret) {
			db_bind_int64(c->stmt, 9, rp->span->after_seq);
			if (kind != REPLAY_EVENT)
				db_bind_int64(c->stmt, 8, rp->span->from_ms);
		}
	} else {
		ret = store__prepare(rp->st, sql, "replay a job", &c->stmt);
	}
	if (ret)
		return ret;
	for (int i = 0; i < n; i++)
		db_bind_int64(c->stmt, i + 1, binds[i]);
	return cursor_step(rp, c);
}

/* cursor_open's binds from a list of values */
#define BINDS(...)                                                                                 \
	(const int64_t[]){__VA_ARGS__}, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

/* The devices of the job's node, by row id, into ids (room for GPU_MAX_DEVICES). */
static int node_devices(struct replay *rp, int64_t *ids, int *n)
{
	struct db_stmt *stmt;
	int rc, ret;

	*n = 0;
	ret = store__prepare(rp->st, "SELECT id FROM devices WHERE node_id = ? ORDER BY id",
			     "replay a job", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, rp->node_id);
	while (*n < GPU_MAX_DEVICES && (rc = db_step(stmt)) == SQLITE_ROW)
		ids[(*n)++] = db_column_int64(stmt, 0);
	if (*n < GPU_MAX_DEVICES && rc != SQLITE_DONE)
		ret = store__read_fail(rp->st, rc, "replay a job");
	db_finalize(stmt);
	return ret;
}

/*
 * gpu_seq_range's range widened to the packs of devs that overlap the
 * window (packs.h): a superset, the cursor checks each row's time.
 */
static int packed_seq_range(struct replay *rp, const char *table, const int64_t *devs, int ndevs,
			    int64_t start_ms, int64_t end_ms, int64_t *lo, int64_t *hi)
{
	struct db_stmt *stmt;
	int ret, rc = SQLITE_DONE;

	ret =
	    store__prepare(rp->st,
			   "SELECT min(seq_lo), max(seq_hi) FROM packs WHERE tbl = ?1 AND key = ?2"
			   " AND ts_hi >= ?3 AND ts_lo <= ?4",
			   "replay a job", &stmt);
	if (ret)
		return ret;
	for (int i = 0; i < ndevs; i++) {
		db_reset(stmt);
		db_bind_text(stmt, 1, table, -1, SQLITE_STATIC);
		db_bind_int64(stmt, 2, devs[i]);
		db_bind_int64(stmt, 3, start_ms);
		db_bind_int64(stmt, 4, end_ms);
		rc = db_step(stmt);
		if (rc != SQLITE_ROW)
			break;
		if (db_column_type(stmt, 0) == SQLITE_NULL)
			continue;
		if (db_column_int64(stmt, 0) < *lo)
			*lo = db_column_int64(stmt, 0);
		if (db_column_int64(stmt, 1) > *hi)
			*hi = db_column_int64(stmt, 1);
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = store__read_fail(rp->st, rc, "replay a job");
	db_finalize(stmt);
	return ret;
}

/*
 * The seq range of a GPU table's rows of devs in the window: the first and
 * the last row of each device there, through its (device_id, ts_ms)
 * index.  Rows are written tick by tick, so a device's seq grows with its
 * time.  *lo > *hi when there are none.
 */
static int gpu_seq_range(struct replay *rp, const char *table, const int64_t *devs, int ndevs,
			 int64_t start_ms, int64_t end_ms, int64_t *lo, int64_t *hi)
{
	char sql[2][192];
	struct db_stmt *stmt[2] = {NULL, NULL};
	int ret = 0, rc;

	snprintf(sql[0], sizeof(sql[0]),
		 "SELECT seq FROM %s WHERE device_id = ?1 AND ts_ms >= ?2 AND ts_ms <= ?3"
		 " ORDER BY ts_ms, seq LIMIT 1",
		 table);
	snprintf(sql[1], sizeof(sql[1]),
		 "SELECT seq FROM %s WHERE device_id = ?1 AND ts_ms >= ?2 AND ts_ms <= ?3"
		 " ORDER BY ts_ms DESC, seq DESC LIMIT 1",
		 table);
	*lo = INT64_MAX;
	*hi = INT64_MIN;
	for (int k = 0; k < 2 && !ret; k++)
		ret = store__prepare(rp->st, sql[k], "replay a job", &stmt[k]);
	for (int i = 0; i < ndevs && !ret; i++)
		for (int k = 0; k < 2 && !ret; k++) {
			db_reset(stmt[k]);
			db_bind_int64(stmt[k], 1, devs[i]);
			db_bind_int64(stmt[k], 2, start_ms);
			db_bind_int64(stmt[k], 3, end_ms);
			rc = db_step(stmt[k]);
			if (rc == SQLITE_ROW) {
				int64_t seq = db_column_int64(stmt[k], 0);

				if (seq < *lo)
					*lo = seq;
				if (seq > *hi)
					*hi = seq;
			} else if (rc != SQLITE_DONE) {
				ret = store__read_fail(rp->st, rc, "replay a job");
			}
		}
	db_finalize(stmt[0]);
	db_finalize(stmt[1]);
	if (!ret && rp->st->schema_version >= 6)
		ret = packed_seq_range(rp, table, devs, ndevs, start_ms, end_ms, lo, hi);
	return ret;
}

/* Whether every device of the store is on the job's node (an agent's or a run's store). */
static int devices_all_ours(struct replay *rp, bool *all)
{
	struct db_stmt *stmt;
	int rc, ret;

	ret = store__prepare(rp->st, "SELECT EXISTS (SELECT 1 FROM devices WHERE node_id != ?)",
			     "replay a job", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, rp->node_id);
	rc = db_step(stmt);
	if (rc == SQLITE_ROW)
		*all = db_column_int64(stmt, 0) == 0;
	else
		ret = store__read_fail(rp->st, rc, "replay a job");
	db_finalize(stmt);
	return ret;
}

/*
 * The GPU cursors: over a seq range when the store holds no other node's
 * devices, else one per device of the node.
 */
static int open_gpu_cursors(struct replay *rp, int64_t start_ms, int64_t end_ms)
{
	const struct store_replay_ops *ops = rp->ops;
	int64_t devs[GPU_MAX_DEVICES], lo, hi;
	bool all = false;
	int ndevs = 0, ret;

	ret = node_devices(rp, devs, &ndevs);
	if (!ret && ndevs)
		ret = devices_all_ours(rp, &all);
	if (ret || !ndevs)
		return ret;
	replay_gpu_sql(rp);
	if (all) {
		if (ops->gpu) {
			ret = gpu_seq_range(rp, "gpu_samples", devs, ndevs, start_ms, end_ms, &lo,
					    &hi);
			if (!ret && lo <= hi)
				ret = cursor_open(rp, REPLAY_GPU, rp->gpu_sql[0],
						  BINDS(lo, hi, start_ms, end_ms));
		}
		if (!ret && ops->gpu_proc) {
			ret = gpu_seq_range(rp, "gpu_proc_samples", devs, ndevs, start_ms, end_ms,
					    &lo, &hi);
			if (!ret && lo <= hi)
				ret = cursor_open(rp, REPLAY_GPU_PROC, rp->gpu_proc_sql[0],
						  BINDS(lo, hi, start_ms, end_ms));
		}
		return ret;
	}
	for (int i = 0; i < ndevs && !ret; i++) {
		if (ops->gpu)
			ret = cursor_open(rp, REPLAY_GPU, rp->gpu_sql[1],
					  BINDS(devs[i], start_ms, end_ms));
		if (!ret && ops->gpu_proc)
			ret = cursor_open(rp, REPLAY_GPU_PROC, rp->gpu_proc_sql[1],
					  BINDS(devs[i], start_ms, end_ms));
	}
	return ret;
}

static int replay_prepare(struct replay *rp, int64_t id, int64_t start_ms, int64_t end_ms)
{
	const struct store_replay_ops *ops = rp->ops;
	bool gpus = rp->st->schema_version >= 2 && (ops->gpu || ops->gpu_proc);
	/* a tail's host and GPU rows: from the checkpoint's last tick on */
	int64_t from_ms = rp->span->from_ms > start_ms ? rp->span->from_ms : start_ms;
	int ret = 0;

	if (ops->host)
		ret = cursor_open(rp, REPLAY_HOST, replay_sql[REPLAY_HOST],
				  BINDS(rp->node_id, from_ms, end_ms));
	if (!ret && ops->job) {
		char sql[512];

		replay_job_sql(sql, sizeof(sql), rp->st->schema_version);
		ret = cursor_open(rp, REPLAY_JOB, sql, BINDS(id));
	}
	if (!ret && ops->proc)
		ret = cursor_open(rp, REPLAY_PROC, replay_sql[REPLAY_PROC], BINDS(id));
	if (!ret && ops->event) {
		char sql[256];

		replay_event_sql(sql, sizeof(sql), rp->st->schema_version);
		ret = cursor_open(rp, REPLAY_EVENT, sql, BINDS(id));
	}
	if (!ret && ops->event && rp->st->schema_version >= 3)
		ret = cursor_open(rp, REPLAY_EVENT, replay_node_intervals,
				  BINDS(rp->node_id, start_ms, end_ms));
	if (!ret && gpus)
		ret = open_gpu_cursors(rp, from_ms, end_ms);
	if (ret)
		return ret;
	if (!ops->host)
		return 0;

	rp->host = malloc(sizeof(*rp->host));
	if (!rp->host)
		return log_err(-ENOMEM, "cannot replay a job of store '%s'", rp->st->path);
	/* host_details reads them from column 1 on */
	ret = store__prepare(
	    rp->st,
	    "SELECT seq" FACT_NAMES(
		CPU_SAMPLE_COLUMNS) " FROM cpu_samples_all"
				    " WHERE node_id = ?1 AND ts_ms = ?2 AND seq > ?3 ORDER BY seq",
	    "replay a job", &rp->cpu_stmt);
	if (ret)
		return ret;
	ret = store__prepare(
	    rp->st,
	    "SELECT seq" FACT_NAMES(
		DISK_SAMPLE_COLUMNS) " FROM disk_samples_all"
				     " WHERE node_id = ?1 AND ts_ms = ?2 AND seq > ?3 ORDER BY seq",
	    "replay a job", &rp->disk_stmt);
	if (ret)
		return ret;
	return store__prepare(
	    rp->st,
	    "SELECT seq" FACT_NAMES(
		NET_SAMPLE_COLUMNS) " FROM net_samples_all"
				    " WHERE node_id = ?1 AND ts_ms = ?2 AND seq > ?3 ORDER BY seq",
	    "replay a job", &rp->net_stmt);
}

static int replay_merge(struct replay *rp)
{
	struct store_replay_span *span = rp->span;
	struct replay_cursor *next, *c;
	int64_t rows = 0;
	int ret;

	for (;;) {
		next = NULL;
		for (c = rp->cur; c < rp->cur + rp->ncur; c++)
			if (c->live && (!next || c->seq < next->seq))
				next = c;
		if (!next || (span->upto_seq > 0 && next->seq > span->upto_seq)) {
			span->complete = true;
			return 0;
		}
		if (span->max_rows > 0 && rows == span->max_rows)
			return 0;
		rows++;
		span->last_seq = next->seq;
		/* rows written tick by tick (events may carry other times) */
		if (next->kind != REPLAY_EVENT) {
			int64_t ts_ms = db_column_int64(next->stmt, 1);

			if (ts_ms > span->last_ms)
				span->last_ms = ts_ms;
			if (next->kind != REPLAY_JOB && next->kind != REPLAY_PROC &&
			    ts_ms > span->last_window_ms)
				span->last_window_ms = ts_ms;
		}
		switch (next->kind) {
		case REPLAY_HOST:
			ret = replay_host(rp, next->stmt);
			if (ret)
				return ret;
			break;
		case REPLAY_JOB:
			replay_job_sample(rp, next->stmt);
			break;
		case REPLAY_PROC:
			replay_proc_sample(rp, next->stmt);
			break;
		case REPLAY_GPU:
			replay_gpu(rp, next->stmt);
			break;
		case REPLAY_GPU_PROC:
			replay_gpu_proc(rp, next->stmt);
			break;
		case REPLAY_EVENT:
		default:
			replay_event(rp, next->stmt);
			break;
		}
		ret = cursor_step(rp, next);
		if (ret)
			return ret;
	}
}

int store_replay_job(struct store *st, int64_t id, const struct store_replay_ops *ops, void *arg)
{
	struct store_replay_span whole = {0};

	return store_replay_job_span(st, id, ops, arg, &whole);
}

int store_replay_job_span(struct store *st, int64_t id, const struct store_replay_ops *ops,
			  void *arg, struct store_replay_span *span)
{
	static const struct store_replay_ops no_ops;
	struct replay *rp;
	int64_t start_ms = 0, end_ms = 0;
	int i, ret;

	if (!ops)
		ops = &no_ops;
	span->last_seq = span->after_seq;
	span->last_ms = span->from_ms;
	span->complete = false;
	rp = calloc(1, sizeof(*rp));
	if (!rp)
		return log_err(-ENOMEM, "cannot replay a job of store '%s'", st->path);
	rp->st = st;
	rp->ops = ops;
	rp->arg = arg;
	rp->span = span;
	rp->job_id = id;
	rp->devcache = calloc(GPU_MAX_DEVICES, sizeof(*rp->devcache));
	if (!rp->devcache) {
		ret = log_err(-ENOMEM, "cannot replay a job of store '%s'", st->path);
		goto out_free_replay;
	}
	ret = replay_window(st, id, &rp->node_id, &start_ms, &end_ms);
	if (ret)
		goto out_free_replay;
	ret = replay_prepare(rp, id, start_ms, end_ms);
	if (ret)
		goto out_finalize;
	ret = replay_merge(rp);
out_finalize:
	for (i = 0; i < rp->ncur; i++)
		db_finalize(rp->cur[i].stmt);
	db_finalize(rp->cpu_stmt);
	db_finalize(rp->disk_stmt);
	db_finalize(rp->net_stmt);
	free(rp->host);
out_free_replay:
	free(rp->devcache);
	free(rp);
	return ret;
}

/*
 * The dimension rows a replay joins, as they are now: a report restored
 * from a checkpoint takes them again, as a whole replay would have seen
 * them on every row.
 */
int store_replay_job_dims(struct store *st, int64_t id, const struct store_replay_dims *dims,
			  void *arg)
{
	struct replay_cursor *c;
	struct replay *rp;
	int64_t start_ms, end_ms;
	int rc = SQLITE_DONE, ret;

	rp = calloc(1, sizeof(*rp));
	if (!rp)
		return log_err(-ENOMEM, "cannot replay a job of store '%s'", st->path);
	rp->st = st;
	rp->job_id = id;
	ret = replay_window(st, id, &rp->node_id, &start_ms, &end_ms);
	if (!ret && dims->proc) {
		c = &rp->cur[0];
		ret = store__prepare(
		    st,
		    "SELECT pid, ppid, start_ms, end_ms, uid, comm, cmdline FROM procs"
		    " WHERE job_id = ? ORDER BY id",
		    "replay a job", &c->stmt);
		if (!ret)
			db_bind_int64(c->stmt, 1, id);
		while (!ret && (rc = db_step(c->stmt)) == SQLITE_ROW) {
			struct row r = {c->stmt, 0};
			struct proc_info *p = &rp->pinfo;

			memset(p, 0, sizeof(*p));
			proc_from_row(&r, p);
			dims->proc(arg, p);
		}
		if (!ret && rc != SQLITE_DONE)
			ret = store__read_fail(st, rc, "replay a job");
		db_finalize(c->stmt);
	}
	if (!ret && dims->device && st->schema_version >= 2) {
		c = &rp->cur[1];
		ret = store__prepare(st,
				     st->schema_version >= 16
					 ? "SELECT" DEVICE_COLUMNS DEVICE_COLUMNS_V16
					   " FROM devices d WHERE d.node_id = ?"
					 : "SELECT" DEVICE_COLUMNS DEVICE_COLUMNS_NULL
					   " FROM devices d WHERE d.node_id = ?",
				     "replay a job", &c->stmt);
		if (!ret)
			db_bind_int64(c->stmt, 1, rp->node_id);
		while (!ret && (rc = db_step(c->stmt)) == SQLITE_ROW) {
			struct row r = {c->stmt, 0};

			device_from_row(&r, &rp->dev);
			dims->device(arg, &rp->dev);
		}
		if (!ret && rc != SQLITE_DONE)
			ret = store__read_fail(st, rc, "replay a job");
		db_finalize(c->stmt);
	}
	free(rp);
	return ret;
}
