/*
 * frames.c - a profiling session's data as frames: one per node per
 * tick in the session's window, with the node's host figures (rates from
 * the counters of consecutive ticks, by sample/figures.h) and every GPU's
 * sample of that tick.  Every sample is a frame: nothing is thinned to one
 * per second.
 *
 * Two cursors per node, host rows and GPU rows, both in time order, merged
 * on the tick's timestamp (one tick writes its host and GPU rows with the
 * same ts_ms).  Streaming: one frame in memory at a time.
 *
 * Also the same data on a frame clock, every node and GPU at once, as
 * gswarm-profiler's head sees its clients (store_for_each_session_tick),
 * and the requests a head recorded in the order they came.
 */
#include "store/conn.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "sample/figures.h"
#include "store/profiling.h"

static bool node_in(const struct session_record *s, const char *host)
{
	size_t n = strlen(host);
	const char *p = s->nodes;

	if (!s->nodes[0])
		return true;
	while ((p = strstr(p, host))) {
		if ((p == s->nodes || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return true;
		p += n;
	}
	return false;
}

/* a nullable integer column: *v and true, or false for NULL */
static bool col_u64(struct db_stmt *st, int col, uint64_t *v)
{
	if (db_column_type(st, col) == SQLITE_NULL)
		return false;
	*v = (uint64_t)db_column_int64(st, col);
	return true;
}

/* a host row's counters and gauges (columns 1-15 of node_frames' query) */
static void host_row(struct db_stmt *hs, struct host_reading *r)
{
	uint64_t *cpu[] = {&r->cpu.user_ms,    &r->cpu.nice_ms,	  &r->cpu.system_ms,
			   &r->cpu.idle_ms,    &r->cpu.iowait_ms, &r->cpu.irq_ms,
			   &r->cpu.softirq_ms, &r->cpu.steal_ms};
	uint64_t load1;
	bool has_a, has_b;

	memset(r, 0, sizeof(*r));
	/* the node's raw CPU counters: "CPU busy" is sample/host.h's */
	for (int i = 0; i < 8; i++)
		*cpu[i] = (uint64_t)db_column_int64(hs, 1 + i);
	r->valid |= HOST_HAS_CPU;
	r->mem_valid |= col_u64(hs, 9, &r->mem_total_bytes) ? MEMINFO_TOTAL : 0;
	r->mem_valid |= col_u64(hs, 10, &r->mem_available_bytes) ? MEMINFO_AVAILABLE : 0;
	if (r->mem_valid)
		r->valid |= HOST_HAS_MEM;
	if (col_u64(hs, 11, &load1)) {
		r->load1_milli = (uint32_t)load1;
		r->valid |= HOST_HAS_LOAD;
	}
	/* both columns read either way: each is set or left 0 */
	has_a = col_u64(hs, 12, &r->disk_read_bytes);
	has_b = col_u64(hs, 13, &r->disk_write_bytes);
	if (has_a && has_b)
		r->valid |= HOST_HAS_DISK;
	has_a = col_u64(hs, 14, &r->net_rx_bytes);
	has_b = col_u64(hs, 15, &r->net_tx_bytes);
	if (has_a && has_b)
		r->valid |= HOST_HAS_NET;
}

static int node_frames(struct store *st, const struct session_record *s, int64_t node_id,
		       const char *hostname, int64_t until, int64_t *frame_id,
		       int (*fn)(const struct session_frame *f, void *arg), void *arg)
{
	struct db_stmt *hs = NULL, *gs = NULL;
	struct session_frame f;
	struct host_reading cur, prev;
	struct gpu_sample nvprev[GPU_MAX_DEVICES];
	int64_t prev_ts = 0, nvprev_ts[GPU_MAX_DEVICES];
	bool has_prev = false, gpu_row;
	int rc, ret = 0;

	for (int i = 0; i < GPU_MAX_DEVICES; i++)
		nvprev_ts[i] = 0;
	/* one tick before the window too: the first frame's rates need it */
	rc = db_prepare(
	    &st->conn,
	    "SELECT ts_ms, cpu_user_ms, cpu_nice_ms, cpu_system_ms, cpu_idle_ms, cpu_iowait_ms,"
	    " cpu_irq_ms, cpu_softirq_ms, cpu_steal_ms, mem_total_bytes, mem_available_bytes,"
	    " load1_milli, disk_read_bytes, disk_write_bytes, net_rx_bytes, net_tx_bytes"
	    " FROM host_samples WHERE node_id = ?1 AND ts_ms >= coalesce((SELECT max(ts_ms)"
	    " FROM host_samples WHERE node_id = ?1 AND ts_ms < ?2), ?2) AND ts_ms <= ?3"
	    " ORDER BY ts_ms, seq",
	    &hs);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "read a session");
	db_bind_int64(hs, 1, node_id);
	db_bind_int64(hs, 2, s->start_ms);
	db_bind_int64(hs, 3, until);
	rc = db_prepare(&st->conn,
			"SELECT g.ts_ms, d.idx, d.uuid, d.name, g.util_pct, g.mem_used_bytes,"
			" g.pcie_rx_bps, g.pcie_tx_bps, g.nvlink_rx_bytes, g.nvlink_tx_bytes,"
			" g.power_mw, d.id FROM gpu_samples g JOIN devices d ON d.id = g.device_id"
			" WHERE d.node_id = ?1 AND g.ts_ms >= ?2 AND g.ts_ms <= ?3"
			" ORDER BY g.ts_ms, d.idx",
			&gs);
	if (rc != SQLITE_OK) {
		db_finalize(hs);
		return store__read_fail(st, rc, "read a session");
	}
	db_bind_int64(gs, 1, node_id);
	db_bind_int64(gs, 2, s->start_ms);
	db_bind_int64(gs, 3, until);
	gpu_row = db_step(gs) == SQLITE_ROW;

	while (!ret && (rc = db_step(hs)) == SQLITE_ROW) {
		int64_t ts = db_column_int64(hs, 0);
		struct host_figures hf;

		host_row(hs, &cur);
		host_figures(&cur, has_prev ? &prev : NULL, ts - prev_ts, &hf);
		memset(&f, 0, sizeof(f));
		f.hostname = hostname;
		f.ts_ms = ts;
		f.cpu_util_pct = hf.cpu_busy_pct;
		f.mem_used_bytes = hf.mem_used_bytes;
		f.load1 = hf.load1;
		f.disk_read_bps = hf.disk_read_bps;
		f.disk_write_bps = hf.disk_write_bps;
		f.net_rx_bps = hf.net_rx_bps;
		f.net_tx_bps = hf.net_tx_bps;
		prev = cur;
		prev_ts = ts;
		/* GPU rows of this tick (and any older stray ones, skipped) */
		while (gpu_row && db_column_int64(gs, 0) <= ts) {
			if (db_column_int64(gs, 0) == ts && f.ngpus < GPU_MAX_DEVICES) {
				struct session_frame_gpu *g = &f.gpu[f.ngpus++];
				int slot = (int)(db_column_int64(gs, 11) % GPU_MAX_DEVICES);
				const unsigned char *uuid = db_column_text(gs, 2);
				const unsigned char *name = db_column_text(gs, 3);
				int64_t gdt = ts - nvprev_ts[slot];

				g->index = (int)db_column_int64(gs, 1);
				snprintf(g->uuid, sizeof(g->uuid), "%s",
					 uuid ? (const char *)uuid : "");
				snprintf(g->name, sizeof(g->name), "%s",
					 name ? (const char *)name : "");
				g->util_pct = db_column_type(gs, 4) == SQLITE_NULL
						  ? NAN
						  : (double)db_column_int64(gs, 4);
				g->mem_used_bytes = db_column_type(gs, 5) == SQLITE_NULL
							? NAN
							: (double)db_column_int64(gs, 5);
				g->pcie_rx_bps = db_column_type(gs, 6) == SQLITE_NULL
						     ? NAN
						     : (double)db_column_int64(gs, 6);
				g->pcie_tx_bps = db_column_type(gs, 7) == SQLITE_NULL
						     ? NAN
						     : (double)db_column_int64(gs, 7);
				struct gpu_sample nv = {0};
				struct gpu_figures gf;

				bool rx = col_u64(gs, 8, &nv.nvlink_rx_bytes);
				bool tx = col_u64(gs, 9, &nv.nvlink_tx_bytes);

				if (rx && tx)
					nv.valid = GPU_NVLINK;
				gpu_figures(&nv, nvprev_ts[slot] > 0 ? &nvprev[slot] : NULL, gdt,
					    &gf);
				g->nvlink_rx_bps = gf.nvlink_rx_bps;
				g->nvlink_tx_bps = gf.nvlink_tx_bps;
				nvprev[slot] = nv;
				nvprev_ts[slot] = ts;
				g->power_w = db_column_type(gs, 10) == SQLITE_NULL
						 ? NAN
						 : db_column_int64(gs, 10) / 1000.0;
			}
			gpu_row = db_step(gs) == SQLITE_ROW;
		}
		has_prev = true;
		if (ts < s->start_ms)
			continue; /* the tick before the window: only for rates */
		f.frame_id = (*frame_id)++;
		ret = fn(&f, arg);
	}
	if (!ret && rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "read a session");
	db_finalize(hs);
	db_finalize(gs);
	return ret;
}

int store_for_each_frame(struct store *st, const struct session_record *s, int64_t now_ms,
			 int (*fn)(const struct session_frame *f, void *arg), void *arg)
{
	struct db_stmt *nodes;
	int64_t until = s->end_ms ? s->end_ms : now_ms, frame_id = 0;
	int rc, ret = 0;

	rc = db_prepare(&st->conn, "SELECT id, hostname FROM nodes ORDER BY hostname", &nodes);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "read a session");
	while (!ret && db_step(nodes) == SQLITE_ROW) {
		const char *host = (const char *)db_column_text(nodes, 1);
		char hostname[256];

		snprintf(hostname, sizeof(hostname), "%s", host ? host : "");
		if (!node_in(s, hostname))
			continue;
		ret = node_frames(st, s, db_column_int64(nodes, 0), hostname, until, &frame_id, fn,
				  arg);
	}
	db_finalize(nodes);
	return ret;
}

/*
 * The frame clock (gswarm-profiler's head): a cursor per node's host rows,
 * per node's fs rows and per GPU's rows, each in time order, each advanced
 * to the tick's time; what they last read is the tick.  Memory: one row
 * per node and per GPU, whatever the session's length.
 */
struct tick_cursor {
	struct db_stmt *stmt;
	bool started; /* stepped at least once */
	bool has_row; /* stmt holds a row not yet applied */
};

struct tick_state {
	struct session_tick_node *nodes;
	struct session_tick_gpu *gpus;
	size_t nnodes, ngpus, node_cap, gpu_cap, host_cap, fs_cap, gpucur_cap;
	struct tick_cursor *host, *fs, *gpu;
};

static double col_num(struct db_stmt *st, int col)
{
	return db_column_type(st, col) == SQLITE_NULL ? NAN : db_column_double(st, col);
}

static int cursor_open(struct store *st, const char *sql, int64_t key, int64_t from_ms,
		       int64_t to_ms, struct tick_cursor *c)
{
	int ret = store__prepare(st, sql, "read a session", &c->stmt);

	if (ret)
		return ret;
	db_bind_int64(c->stmt, 1, key);
	db_bind_int64(c->stmt, 2, from_ms);
	db_bind_int64(c->stmt, 3, to_ms);
	return 0;
}

static int cursor_step(struct store *st, struct tick_cursor *c)
{
	int rc = db_step(c->stmt);

	c->has_row = rc == SQLITE_ROW;
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store__read_fail(st, rc, "read a session");
	return 0;
}

/* Whether sql (?1 a key, ?2 ?3 a window) has a row. */
static int any_row(struct store *st, const char *sql, int64_t key, int64_t from_ms, int64_t to_ms,
		   bool *found)
{
	struct db_stmt *stmt;
	int rc, ret = store__prepare(st, sql, "read a session", &stmt);

	if (ret)
		return ret;
	db_bind_int64(stmt, 1, key);
	db_bind_int64(stmt, 2, from_ms);
	db_bind_int64(stmt, 3, to_ms);
	rc = db_step(stmt);
	*found = rc == SQLITE_ROW;
	db_finalize(stmt);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store__read_fail(st, rc, "read a session");
	return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap * 2 : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (!q)
		return log_err(-ENOMEM, "out of memory");
	memset((char *)q + *cap * size, 0, (n - *cap) * size);
	*p = q;
	*cap = n;
	return 0;
}

#define TICK_HOST_SQL                                                                              \
	"SELECT ts_ms, mem_total_bytes, mem_available_bytes FROM host_samples_all"                 \
	" WHERE node_id = ?1 AND ts_ms >= ?2 AND ts_ms <= ?3 ORDER BY ts_ms, seq"
/*
 * fs_samples, packed in an agent's or a run's SQLite store, is read through
 * fs_samples_all there; a PostgreSQL store is never packed, and one made
 * before the table was packable has no fs_samples_all view.
 */
#define FS_SOURCE(st) ((st)->conn.pg ? "fs_samples" : "fs_samples_all")
#define TICK_FS_SQL                                                                                \
	"SELECT ts_ms, used_bytes, total_bytes FROM %s"                                            \
	" WHERE node_id = ?1 AND ts_ms >= ?2 AND ts_ms <= ?3 ORDER BY ts_ms, seq"
#define TICK_GPU_SQL                                                                               \
	"SELECT ts_ms, util_pct, mem_used_bytes, pcie_rx_bps, pcie_tx_bps FROM gpu_samples_all"    \
	" WHERE device_id = ?1 AND ts_ms >= ?2 AND ts_ms <= ?3 ORDER BY ts_ms, seq"

/* A node's GPUs with rows in [from_ms, to_ms], their cursors open. */
static int tick_gpus_of(struct store *st, struct tick_state *t, int64_t node_id, int64_t from_ms,
			int64_t to_ms, bool *any)
{
	struct db_stmt *dev;
	int rc = SQLITE_DONE, ret;

	ret = store__prepare(st,
			     "SELECT id, idx, name, mem_total_bytes FROM devices WHERE node_id = ?"
			     " ORDER BY idx, id",
			     "read a session", &dev);
	if (ret)
		return ret;
	db_bind_int64(dev, 1, node_id);
	while (!ret && (rc = db_step(dev)) == SQLITE_ROW) {
		int64_t device_id = db_column_int64(dev, 0);
		const unsigned char *name = db_column_text(dev, 2);
		struct session_tick_gpu *g;
		bool found;

		ret = any_row(st,
			      "SELECT 1 FROM gpu_samples_all WHERE device_id = ?1 AND ts_ms >= ?2"
			      " AND ts_ms <= ?3 LIMIT 1",
			      device_id, from_ms, to_ms, &found);
		if (ret || !found)
			continue;
		ret = grow((void **)&t->gpus, &t->gpu_cap, t->ngpus + 1, sizeof(*t->gpus));
		if (!ret)
			ret = grow((void **)&t->gpu, &t->gpucur_cap, t->ngpus + 1, sizeof(*t->gpu));
		if (ret)
			break;
		g = &t->gpus[t->ngpus];
		g->node = t->nnodes;
		g->index = (int)db_column_int64(dev, 1);
		snprintf(g->name, sizeof(g->name), "%s", name ? (const char *)name : "");
		g->mem_total_bytes = col_num(dev, 3);
		g->util_pct = g->mem_used_bytes = g->pcie_rx_bps = g->pcie_tx_bps = NAN;
		ret = cursor_open(st, TICK_GPU_SQL, device_id, from_ms, to_ms, &t->gpu[t->ngpus]);
		if (!ret)
			t->ngpus++;
		*any = true;
	}
	if (!ret && rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "read a session");
	db_finalize(dev);
	return ret;
}

/* One node of the session, if it has rows in its window: its row and cursors. */
static int tick_node(struct store *st, const struct session_record *s, struct tick_state *t,
		     int64_t node_id, const char *hostname, int64_t until)
{
	struct session_tick_node *n;
	int64_t agent_ms = 0, from;
	bool found = false, host = false, fs = false;
	int ret;

	ret = store__query_i64_opt(st, "SELECT max(interval_ms) FROM agents WHERE node_id = ?",
				   node_id, &agent_ms, &found);
	if (ret)
		return ret;
	if (agent_ms < s->interval_ms)
		agent_ms = s->interval_ms;
	if (agent_ms <= 0)
		agent_ms = 1000;
	from = s->start_ms - 3 * agent_ms;
	ret = any_row(st,
		      "SELECT 1 FROM host_samples_all WHERE node_id = ?1 AND ts_ms >= ?2"
		      " AND ts_ms <= ?3 LIMIT 1",
		      node_id, from, until, &host);
	if (!ret && st->schema_version >= 7) {
		char sql[160];

		snprintf(
		    sql, sizeof(sql),
		    "SELECT 1 FROM %s WHERE node_id = ?1 AND ts_ms >= ?2 AND ts_ms <= ?3 LIMIT 1",
		    FS_SOURCE(st));
		ret = any_row(st, sql, node_id, from, until, &fs);
	}
	if (!ret)
		ret = grow((void **)&t->nodes, &t->node_cap, t->nnodes + 1, sizeof(*t->nodes));
	if (!ret)
		ret = grow((void **)&t->host, &t->host_cap, t->nnodes + 1, sizeof(*t->host));
	if (!ret)
		ret = grow((void **)&t->fs, &t->fs_cap, t->nnodes + 1, sizeof(*t->fs));
	found = host || fs;
	if (!ret)
		ret = tick_gpus_of(st, t, node_id, from, until, &found);
	if (ret || !found)
		return ret;
	n = &t->nodes[t->nnodes];
	snprintf(n->hostname, sizeof(n->hostname), "%s", hostname);
	n->interval_ms = agent_ms;
	n->mem_total_bytes = n->mem_available_bytes = n->fs_used_bytes = n->fs_total_bytes = NAN;
	ret = cursor_open(st, TICK_HOST_SQL, node_id, from, until, &t->host[t->nnodes]);
	if (!ret && st->schema_version >= 7) {
		char sql[200];

		snprintf(sql, sizeof(sql), TICK_FS_SQL, FS_SOURCE(st));
		ret = cursor_open(st, sql, node_id, from, until, &t->fs[t->nnodes]);
	}
	if (!ret)
		t->nnodes++;
	return ret;
}

/* Applies every row of c at or before ts_ms (apply: what it is of). */
static int tick_advance(struct store *st, struct tick_cursor *c, int64_t ts_ms,
			void (*apply)(struct db_stmt *row, void *to), void *to)
{
	int ret = 0;

	if (!c->stmt)
		return 0;
	if (!c->started) {
		c->started = true;
		ret = cursor_step(st, c);
	}
	while (!ret && c->has_row && db_column_int64(c->stmt, 0) <= ts_ms) {
		apply(c->stmt, to);
		ret = cursor_step(st, c);
	}
	return ret;
}

static void apply_host(struct db_stmt *row, void *to)
{
	struct session_tick_node *n = to;

	n->host_ts_ms = db_column_int64(row, 0);
	n->mem_total_bytes = col_num(row, 1);
	n->mem_available_bytes = col_num(row, 2);
}

static void apply_fs(struct db_stmt *row, void *to)
{
	struct session_tick_node *n = to;

	n->fs_ts_ms = db_column_int64(row, 0);
	n->fs_used_bytes = col_num(row, 1);
	n->fs_total_bytes = col_num(row, 2);
}

static void apply_gpu(struct db_stmt *row, void *to)
{
	struct session_tick_gpu *g = to;

	g->ts_ms = db_column_int64(row, 0);
	g->util_pct = col_num(row, 1);
	g->mem_used_bytes = col_num(row, 2);
	g->pcie_rx_bps = col_num(row, 3);
	g->pcie_tx_bps = col_num(row, 4);
}

int store_for_each_session_tick(struct store *st, const struct session_record *s, int64_t now_ms,
				int64_t period_ms,
				int (*fn)(const struct session_tick *t, void *arg), void *arg)
{
	struct tick_state t;
	struct session_tick tick;
	struct db_stmt *nodes;
	int64_t until = s->end_ms ? s->end_ms : now_ms;
	int rc = SQLITE_DONE, ret;

	memset(&t, 0, sizeof(t));
	if (period_ms <= 0)
		period_ms = 1000;
	ret = store__prepare(st, "SELECT id, hostname FROM nodes ORDER BY hostname",
			     "read a session", &nodes);
	if (ret)
		return ret;
	while (!ret && (rc = db_step(nodes)) == SQLITE_ROW) {
		const char *host = (const char *)db_column_text(nodes, 1);
		char hostname[256];

		snprintf(hostname, sizeof(hostname), "%s", host ? host : "");
		if (node_in(s, hostname))
			ret = tick_node(st, s, &t, db_column_int64(nodes, 0), hostname, until);
	}
	if (!ret && rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "read a session");
	db_finalize(nodes);

	memset(&tick, 0, sizeof(tick));
	tick.nnodes = t.nnodes;
	tick.ngpus = t.ngpus;
	tick.nodes = t.nodes;
	tick.gpus = t.gpus;
	for (int64_t k = 1; !ret && s->start_ms + k * period_ms <= until; k++) {
		tick.frame_id = k;
		tick.ts_ms = s->start_ms + k * period_ms;
		for (size_t i = 0; !ret && i < t.nnodes; i++) {
			ret = tick_advance(st, &t.host[i], tick.ts_ms, apply_host, &t.nodes[i]);
			if (!ret)
				ret = tick_advance(st, &t.fs[i], tick.ts_ms, apply_fs, &t.nodes[i]);
		}
		for (size_t i = 0; !ret && i < t.ngpus; i++)
			ret = tick_advance(st, &t.gpu[i], tick.ts_ms, apply_gpu, &t.gpus[i]);
		if (!ret)
			ret = fn(&tick, arg);
	}

	for (size_t i = 0; i < t.nnodes; i++) {
		db_finalize(t.host[i].stmt);
		db_finalize(t.fs[i].stmt);
	}
	for (size_t i = 0; i < t.ngpus; i++)
		db_finalize(t.gpu[i].stmt);
	free(t.nodes);
	free(t.gpus);
	free(t.host);
	free(t.fs);
	free(t.gpu);
	return ret;
}
