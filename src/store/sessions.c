/*
 * sessions.c - a head's profiling sessions: start, stop, list, and
 * the control they exert on each node's agent.  Names are free text up to
 * SESSION_NAME_MAX - 1 bytes; one active session per name at a time (a name
 * may be used again once its session stopped).
 */
#include "store/conn.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"

static void session_from_row(sqlite3_stmt *stmt, struct session_record *s)
{
	const unsigned char *name = sqlite3_column_text(stmt, 1);
	const unsigned char *nodes = sqlite3_column_text(stmt, 5);

	memset(s, 0, sizeof(*s));
	s->id = sqlite3_column_int64(stmt, 0);
	snprintf(s->name, sizeof(s->name), "%s", name ? (const char *)name : "");
	s->start_ms = sqlite3_column_int64(stmt, 2);
	s->end_ms = sqlite3_column_int64(stmt, 3);
	s->interval_ms = sqlite3_column_int64(stmt, 4);
	snprintf(s->nodes, sizeof(s->nodes), "%s", nodes ? (const char *)nodes : "");
}

#define SESSION_COLUMNS "id, name, start_ms, end_ms, interval_ms, nodes"

int store_session_start(struct store *st, struct session_record *s)
{
	sqlite3_stmt *stmt;
	int rc, ret;

	if (st->schema_version < 4)
		return -EPROTONOSUPPORT;
	if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return store__read_fail(st, sqlite3_errcode(st->db), "start a session");
	rc = sqlite3_prepare_v2(st->db, "SELECT 1 FROM sessions WHERE name = ? AND end_ms IS NULL",
				-1, &stmt, NULL);
	if (rc != SQLITE_OK) {
		ret = store__read_fail(st, rc, "start a session");
		goto out_rollback;
	}
	sqlite3_bind_text(stmt, 1, s->name, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	if (rc == SQLITE_ROW) {
		ret = -EEXIST;
		goto out_rollback;
	}
	rc = sqlite3_prepare_v2(st->db,
				"INSERT INTO sessions (name, start_ms, interval_ms, nodes)"
				" VALUES (?, ?, ?, ?) RETURNING id",
				-1, &stmt, NULL);
	if (rc != SQLITE_OK) {
		ret = store__read_fail(st, rc, "start a session");
		goto out_rollback;
	}
	sqlite3_bind_text(stmt, 1, s->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 2, s->start_ms);
	if (s->interval_ms > 0)
		sqlite3_bind_int64(stmt, 3, s->interval_ms);
	if (s->nodes[0])
		sqlite3_bind_text(stmt, 4, s->nodes, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		s->id = sqlite3_column_int64(stmt, 0);
	rc = rc == SQLITE_ROW ? sqlite3_step(stmt) : rc;
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE) {
		ret = store__read_fail(st, rc, "start a session");
		goto out_rollback;
	}
	if (sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		ret = store__read_fail(st, sqlite3_errcode(st->db), "start a session");
		goto out_rollback;
	}
	return 0;

out_rollback:
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return ret;
}

int store_session_stop(struct store *st, const char *name, int64_t end_ms, int *stopped)
{
	sqlite3_stmt *stmt;
	int rc;

	*stopped = 0;
	if (st->schema_version < 4)
		return 0;
	rc = sqlite3_prepare_v2(st->db,
				name ? "UPDATE sessions SET end_ms = ?1 WHERE end_ms IS NULL AND name = ?2"
				     : "UPDATE sessions SET end_ms = ?1 WHERE end_ms IS NULL",
				-1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "stop a session");
	sqlite3_bind_int64(stmt, 1, end_ms);
	if (name)
		sqlite3_bind_text(stmt, 2, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		return store__read_fail(st, rc, "stop a session");
	*stopped = sqlite3_changes(st->db);
	return 0;
}

int store_for_each_session(struct store *st, bool active_only,
			   int (*fn)(const struct session_record *s, void *arg), void *arg)
{
	struct session_record s;
	sqlite3_stmt *stmt;
	int rc, ret = 0;

	if (st->schema_version < 4)
		return 0;
	rc = sqlite3_prepare_v2(st->db,
				active_only ? "SELECT " SESSION_COLUMNS " FROM sessions"
					      " WHERE end_ms IS NULL ORDER BY start_ms, id"
					    : "SELECT " SESSION_COLUMNS " FROM sessions"
					      " ORDER BY start_ms, id",
				-1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "list the sessions");
	while (!ret && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		session_from_row(stmt, &s);
		ret = fn(&s, arg);
	}
	sqlite3_finalize(stmt);
	return ret;
}

int store_session_get(struct store *st, const char *name, struct session_record *out)
{
	sqlite3_stmt *stmt;
	int rc, ret = -ENOENT;

	if (st->schema_version < 4)
		return -ENOENT;
	rc = sqlite3_prepare_v2(st->db,
				"SELECT " SESSION_COLUMNS " FROM sessions WHERE name = ?"
				" ORDER BY start_ms DESC, id DESC LIMIT 1",
				-1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "read a session");
	sqlite3_bind_text(stmt, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_step(stmt) == SQLITE_ROW) {
		session_from_row(stmt, out);
		ret = 0;
	}
	sqlite3_finalize(stmt);
	return ret;
}

int store_session_control(struct store *st, const char *hostname, int64_t *interval_ms,
			  char *names, size_t size)
{
	sqlite3_stmt *stmt;
	size_t len = 0;
	int rc;

	*interval_ms = 0;
	names[0] = '\0';
	if (st->schema_version < 4)
		return 0;
	/* asked with every batch the head acknowledges: a cached statement */
	rc = store__cached_stmt(st,
				"SELECT name, interval_ms FROM sessions WHERE end_ms IS NULL AND"
				" (nodes IS NULL OR ',' || nodes || ',' LIKE '%,' || ?1 || ',%')"
				" ORDER BY start_ms, id",
				&stmt);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "read the sessions");
	sqlite3_bind_text(stmt, 1, hostname, -1, SQLITE_STATIC);
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		const unsigned char *n = sqlite3_column_text(stmt, 0);
		int64_t iv = sqlite3_column_int64(stmt, 1);

		if (iv > 0 && (*interval_ms == 0 || iv < *interval_ms))
			*interval_ms = iv;
		if (n && len + strlen((const char *)n) + 2 < size)
			len += (size_t)snprintf(names + len, size - len, "%s%s", len ? "\x1f" : "",
						(const char *)n);
	}
	sqlite3_reset(stmt);
	sqlite3_clear_bindings(stmt);
	return 0;
}

int store_request_add(struct store *st, struct request_record *r)
{
	sqlite3_stmt *stmt;
	int rc;

	if (st->schema_version < 7)
		return -EPROTONOSUPPORT;
	rc = sqlite3_prepare_v2(st->db,
				"INSERT INTO requests (ts_ms, app, queue_s, processing_s, other)"
				" VALUES (?, ?, ?, ?, ?) RETURNING id",
				-1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "record a request");
	sqlite3_bind_int64(stmt, 1, r->ts_ms);
	sqlite3_bind_text(stmt, 2, r->app, -1, SQLITE_STATIC);
	sqlite3_bind_double(stmt, 3, r->queue_s);
	sqlite3_bind_double(stmt, 4, r->processing_s);
	if (r->other)
		sqlite3_bind_text(stmt, 5, r->other, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		r->id = sqlite3_column_int64(stmt, 0);
	rc = rc == SQLITE_ROW ? sqlite3_step(stmt) : rc;
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		return store__read_fail(st, rc, "record a request");
	return 0;
}

/* The requests in [from_ms, to_ms] (to_ms 0: up to now), in the order sql gives. */
static int requests_each(struct store *st, int64_t from_ms, int64_t to_ms, const char *sql,
			 int (*fn)(const struct request_record *r, void *arg), void *arg)
{
	struct request_record r;
	sqlite3_stmt *stmt;
	int rc, ret = 0;

	if (st->schema_version < 7)
		return 0;
	rc = sqlite3_prepare_v2(st->db, sql, -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "read the requests");
	sqlite3_bind_int64(stmt, 1, from_ms);
	sqlite3_bind_int64(stmt, 2, to_ms);
	while (!ret && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const unsigned char *app = sqlite3_column_text(stmt, 2);

		memset(&r, 0, sizeof(r));
		r.id = sqlite3_column_int64(stmt, 0);
		r.ts_ms = sqlite3_column_int64(stmt, 1);
		snprintf(r.app, sizeof(r.app), "%s", app ? (const char *)app : "");
		r.queue_s = sqlite3_column_double(stmt, 3);
		r.processing_s = sqlite3_column_double(stmt, 4);
		r.other = (const char *)sqlite3_column_text(stmt, 5);
		ret = fn(&r, arg);
	}
	sqlite3_finalize(stmt);
	if (!ret && rc != SQLITE_DONE)
		return store__read_fail(st, rc, "read the requests");
	return ret;
}

#define REQUEST_SELECT                                                                             \
	"SELECT id, ts_ms, app, queue_s, processing_s, other FROM requests"                        \
	" WHERE ts_ms >= ?1 AND (?2 = 0 OR ts_ms <= ?2)"

int store_for_each_request(struct store *st, int64_t from_ms, int64_t to_ms,
			   int (*fn)(const struct request_record *r, void *arg), void *arg)
{
	return requests_each(st, from_ms, to_ms, REQUEST_SELECT " ORDER BY app, ts_ms, id", fn,
			     arg);
}

int store_for_each_request_arrived(struct store *st, int64_t from_ms, int64_t to_ms,
				   int (*fn)(const struct request_record *r, void *arg), void *arg)
{
	/* row order is arrival order: gswarm's dict of apps, each a list appended to */
	return requests_each(st, from_ms, to_ms,
			     REQUEST_SELECT " ORDER BY min(id) OVER (PARTITION BY app), id", fn, arg);
}
