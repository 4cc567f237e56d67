/*
 * frames.c - a profiling session's data as frames: one per node per
 * tick in the session's window, with the node's host figures (rates from
 * the counters of consecutive ticks) and every GPU's sample of that tick.
 * Every sample is a frame: nothing is thinned to one per second.
 *
 * Two cursors per node, host rows and GPU rows, both in time order, merged
 * on the tick's timestamp (one tick writes its host and GPU rows with the
 * same ts_ms).  Streaming: one frame in memory at a time.
 */
#include "store/conn.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"

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

static double rate_of(sqlite3_stmt *st, int col, const int64_t *prev, bool has_prev,
		      int64_t dt_ms, int64_t *cur)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL) {
		*cur = -1;
		return NAN;
	}
	*cur = sqlite3_column_int64(st, col);
	if (!has_prev || *prev < 0 || dt_ms <= 0 || *cur < *prev)
		return NAN;
	return (double)(*cur - *prev) * 1000.0 / (double)dt_ms;
}

static int node_frames(struct store *st, const struct session_record *s, int64_t node_id,
		       const char *hostname, int64_t until, int64_t *frame_id,
		       int (*fn)(const struct session_frame *f, void *arg), void *arg)
{
	sqlite3_stmt *hs = NULL, *gs = NULL;
	struct session_frame f;
	int64_t prev[6] = {-1, -1, -1, -1, -1, -1}, prev_ts = 0;
	int64_t nvprev_rx[GPU_MAX_DEVICES], nvprev_tx[GPU_MAX_DEVICES], nvprev_ts[GPU_MAX_DEVICES];
	int64_t prev_busy = 0, prev_idle = 0;
	bool has_prev = false, gpu_row;
	int rc, ret = 0;

	for (int i = 0; i < GPU_MAX_DEVICES; i++)
		nvprev_rx[i] = nvprev_tx[i] = -1, nvprev_ts[i] = 0;
	/* one tick before the window too: the first frame's rates need it */
	rc = sqlite3_prepare_v2(
	    st->db,
	    "SELECT ts_ms, cpu_user_ms + cpu_nice_ms + cpu_system_ms + cpu_irq_ms + cpu_softirq_ms"
	    " + cpu_steal_ms, cpu_idle_ms + cpu_iowait_ms, mem_total_bytes - mem_available_bytes,"
	    " load1_milli, disk_read_bytes, disk_write_bytes, net_rx_bytes, net_tx_bytes"
	    " FROM host_samples WHERE node_id = ?1 AND ts_ms >= coalesce((SELECT max(ts_ms)"
	    " FROM host_samples WHERE node_id = ?1 AND ts_ms < ?2), ?2) AND ts_ms <= ?3"
	    " ORDER BY ts_ms, seq",
	    -1, &hs, NULL);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "read a session");
	sqlite3_bind_int64(hs, 1, node_id);
	sqlite3_bind_int64(hs, 2, s->start_ms);
	sqlite3_bind_int64(hs, 3, until);
	rc = sqlite3_prepare_v2(st->db,
				"SELECT g.ts_ms, d.idx, d.uuid, d.name, g.util_pct, g.mem_used_bytes,"
				" g.pcie_rx_bps, g.pcie_tx_bps, g.nvlink_rx_bytes, g.nvlink_tx_bytes,"
				" g.power_mw, d.id FROM gpu_samples g JOIN devices d ON d.id = g.device_id"
				" WHERE d.node_id = ?1 AND g.ts_ms >= ?2 AND g.ts_ms <= ?3"
				" ORDER BY g.ts_ms, d.idx",
				-1, &gs, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_finalize(hs);
		return store__read_fail(st, rc, "read a session");
	}
	sqlite3_bind_int64(gs, 1, node_id);
	sqlite3_bind_int64(gs, 2, s->start_ms);
	sqlite3_bind_int64(gs, 3, until);
	gpu_row = sqlite3_step(gs) == SQLITE_ROW;

	while (!ret && (rc = sqlite3_step(hs)) == SQLITE_ROW) {
		int64_t ts = sqlite3_column_int64(hs, 0), dt = ts - prev_ts, cur[6];
		int64_t busy = sqlite3_column_int64(hs, 1), idle = sqlite3_column_int64(hs, 2);

		memset(&f, 0, sizeof(f));
		f.hostname = hostname;
		f.ts_ms = ts;
		f.cpu_util_pct = NAN;
		if (has_prev && busy >= prev_busy && idle >= prev_idle &&
		    (busy - prev_busy) + (idle - prev_idle) > 0)
			f.cpu_util_pct = 100.0 * (double)(busy - prev_busy) /
					 (double)((busy - prev_busy) + (idle - prev_idle));
		f.mem_used_bytes = sqlite3_column_type(hs, 3) == SQLITE_NULL
				       ? NAN
				       : (double)sqlite3_column_int64(hs, 3);
		f.load1 = sqlite3_column_type(hs, 4) == SQLITE_NULL
			      ? NAN
			      : sqlite3_column_int64(hs, 4) / 1000.0;
		f.disk_read_bps = rate_of(hs, 5, &prev[0], has_prev, dt, &cur[0]);
		f.disk_write_bps = rate_of(hs, 6, &prev[1], has_prev, dt, &cur[1]);
		f.net_rx_bps = rate_of(hs, 7, &prev[2], has_prev, dt, &cur[2]);
		f.net_tx_bps = rate_of(hs, 8, &prev[3], has_prev, dt, &cur[3]);
		memcpy(prev, cur, sizeof(cur));
		prev_busy = busy;
		prev_idle = idle;
		prev_ts = ts;
		/* GPU rows of this tick (and any older stray ones, skipped) */
		while (gpu_row && sqlite3_column_int64(gs, 0) <= ts) {
			if (sqlite3_column_int64(gs, 0) == ts && f.ngpus < GPU_MAX_DEVICES) {
				struct session_frame_gpu *g = &f.gpu[f.ngpus++];
				int slot = (int)(sqlite3_column_int64(gs, 11) % GPU_MAX_DEVICES);
				const unsigned char *uuid = sqlite3_column_text(gs, 2);
				const unsigned char *name = sqlite3_column_text(gs, 3);
				int64_t rx, tx, gdt = ts - nvprev_ts[slot];

				g->index = (int)sqlite3_column_int64(gs, 1);
				snprintf(g->uuid, sizeof(g->uuid), "%s", uuid ? (const char *)uuid : "");
				snprintf(g->name, sizeof(g->name), "%s", name ? (const char *)name : "");
				g->util_pct = sqlite3_column_type(gs, 4) == SQLITE_NULL
						  ? NAN
						  : (double)sqlite3_column_int64(gs, 4);
				g->mem_used_bytes = sqlite3_column_type(gs, 5) == SQLITE_NULL
							? NAN
							: (double)sqlite3_column_int64(gs, 5);
				g->pcie_rx_bps = sqlite3_column_type(gs, 6) == SQLITE_NULL
						     ? NAN
						     : (double)sqlite3_column_int64(gs, 6);
				g->pcie_tx_bps = sqlite3_column_type(gs, 7) == SQLITE_NULL
						     ? NAN
						     : (double)sqlite3_column_int64(gs, 7);
				g->nvlink_rx_bps = rate_of(gs, 8, &nvprev_rx[slot], nvprev_ts[slot] > 0,
							   gdt, &rx);
				g->nvlink_tx_bps = rate_of(gs, 9, &nvprev_tx[slot], nvprev_ts[slot] > 0,
							   gdt, &tx);
				nvprev_rx[slot] = rx;
				nvprev_tx[slot] = tx;
				nvprev_ts[slot] = ts;
				g->power_w = sqlite3_column_type(gs, 10) == SQLITE_NULL
						 ? NAN
						 : sqlite3_column_int64(gs, 10) / 1000.0;
			}
			gpu_row = sqlite3_step(gs) == SQLITE_ROW;
		}
		has_prev = true;
		if (ts < s->start_ms)
			continue; /* the tick before the window: only for rates */
		f.frame_id = (*frame_id)++;
		ret = fn(&f, arg);
	}
	if (!ret && rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "read a session");
	sqlite3_finalize(hs);
	sqlite3_finalize(gs);
	return ret;
}

int store_for_each_frame(struct store *st, const struct session_record *s, int64_t now_ms,
			 int (*fn)(const struct session_frame *f, void *arg), void *arg)
{
	sqlite3_stmt *nodes;
	int64_t until = s->end_ms ? s->end_ms : now_ms, frame_id = 0;
	int rc, ret = 0;

	rc = sqlite3_prepare_v2(st->db, "SELECT id, hostname FROM nodes ORDER BY hostname", -1,
				&nodes, NULL);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "read a session");
	while (!ret && sqlite3_step(nodes) == SQLITE_ROW) {
		const char *host = (const char *)sqlite3_column_text(nodes, 1);
		char hostname[256];

		snprintf(hostname, sizeof(hostname), "%s", host ? host : "");
		if (!node_in(s, hostname))
			continue;
		ret = node_frames(st, s, sqlite3_column_int64(nodes, 0), hostname, until, &frame_id,
				  fn, arg);
	}
	sqlite3_finalize(nodes);
	return ret;
}
