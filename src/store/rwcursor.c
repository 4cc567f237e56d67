/*
 * rwcursor.c - remote-write cursors (schema 8's rw_cursors) and a node's
 * hostname, for prom/remote_write.c.
 */
#include "store/conn.h"
#include "store/store.h"
#include "store/writer.h"
#include "store/sync.h"

#include <errno.h>
#include <stdio.h>

int store_rw_cursor_get(struct store *st, const char *url, int64_t *acked_seq)
{
	struct db_stmt *stmt;
	int rc, ret = -ENOENT;

	if (st->schema_version < 8)
		return -ENOENT;
	rc = db_prepare(&st->conn, "SELECT acked_seq FROM rw_cursors WHERE url = ?", &stmt);
	if (rc != SQLITE_OK)
		return store__errno(st->conn.sq, rc);
	db_bind_text(stmt, 1, url, -1, SQLITE_STATIC);
	rc = db_step(stmt);
	if (rc == SQLITE_ROW) {
		*acked_seq = db_column_int64(stmt, 0);
		ret = 0;
	} else if (rc != SQLITE_DONE) {
		ret = store__errno(st->conn.sq, rc);
	}
	db_finalize(stmt);
	return ret;
}

int store_rw_cursor_set(struct store *st, const char *url, int64_t acked_seq, int64_t now_ms)
{
	struct db_stmt *stmt;
	bool own;
	int rc, ret;

	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	rc = db_prepare(&st->conn,
			"INSERT INTO rw_cursors (url, acked_seq, updated_ms) VALUES (?, ?, ?)"
			" ON CONFLICT (url) DO UPDATE SET acked_seq = excluded.acked_seq,"
			" updated_ms = excluded.updated_ms",
			&stmt);
	if (rc == SQLITE_OK) {
		db_bind_text(stmt, 1, url, -1, SQLITE_STATIC);
		db_bind_int64(stmt, 2, acked_seq);
		db_bind_int64(stmt, 3, now_ms);
		rc = db_step(stmt);
		db_finalize(stmt);
	}
	ret = rc == SQLITE_DONE || rc == SQLITE_OK
		  ? 0
		  : store__write_fail(st, rc, "keep a remote-write cursor");
	return store__write_end(st, own, ret);
}

int store_node_hostname(struct store *st, int64_t node_id, char *buf, size_t size)
{
	struct db_stmt *stmt;
	int rc;

	rc = db_prepare(&st->conn, "SELECT hostname FROM nodes WHERE id = ?", &stmt);
	if (rc != SQLITE_OK)
		return store__errno(st->conn.sq, rc);
	db_bind_int64(stmt, 1, node_id);
	return store__one_text(st, stmt, buf, size);
}
