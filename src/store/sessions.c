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
#include "store/profiling.h"

static void session_from_row(struct db_stmt *stmt, struct session_record *s)
{
	const unsigned char *name = db_column_text(stmt, 1);
	const unsigned char *nodes = db_column_text(stmt, 5), *owner;

	memset(s, 0, sizeof(*s));
	s->id = db_column_int64(stmt, 0);
	snprintf(s->name, sizeof(s->name), "%s", name ? (const char *)name : "");
	s->start_ms = db_column_int64(stmt, 2);
	s->end_ms = db_column_int64(stmt, 3);
	s->interval_ms = db_column_int64(stmt, 4);
	snprintf(s->nodes, sizeof(s->nodes), "%s", nodes ? (const char *)nodes : "");
	s->cuda = db_column_int64(stmt, 6) != 0;
	owner = db_column_text(stmt, 7);
	snprintf(s->owner, sizeof(s->owner), "%s", owner ? (const char *)owner : "");
}

/* A store older than schema 9 has no cuda column: false; older than 13 no owner: none. */
static const char *session_columns(const struct store *st)
{
	return st->schema_version >= 13
		   ? "id, name, start_ms, end_ms, interval_ms, nodes, cuda, owner"
	       : st->schema_version >= 9
		   ? "id, name, start_ms, end_ms, interval_ms, nodes, cuda, NULL"
		   : "id, name, start_ms, end_ms, interval_ms, nodes, 0, NULL";
}

int store_session_start(struct store *st, struct session_record *s)
{
	struct db_stmt *stmt;
	int rc, ret;

	if (st->schema_version < 4)
		return -EPROTONOSUPPORT;
	rc = db_exec(&st->conn, "BEGIN IMMEDIATE");
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "start a session");
	/*
	 * PostgreSQL: several heads may start the same name at once; this
	 * lock (SQLite's BEGIN IMMEDIATE's) makes the check and the INSERT one step.
	 */
	if (st->conn.pg) {
		char lock[64];

		snprintf(lock, sizeof(lock), "SELECT pg_advisory_xact_lock(%d)",
			 STORE_APPLICATION_ID + 2);
		rc = db_exec(&st->conn, lock);
		if (rc != SQLITE_OK) {
			ret = store__read_fail(st, rc, "start a session");
			goto out_rollback;
		}
	}
	rc = db_prepare(&st->conn, "SELECT 1 FROM sessions WHERE name = ? AND end_ms IS NULL",
			&stmt);
	if (rc != SQLITE_OK) {
		ret = store__read_fail(st, rc, "start a session");
		goto out_rollback;
	}
	db_bind_text(stmt, 1, s->name, -1, SQLITE_STATIC);
	rc = db_step(stmt);
	db_finalize(stmt);
	if (rc == SQLITE_ROW) {
		ret = -EEXIST;
		goto out_rollback;
	}
	if (s->cuda && st->schema_version < 9) {
		ret = -EPROTONOSUPPORT;
		goto out_rollback;
	}
	if (s->owner[0] && st->schema_version < 13) {
		ret = -EPROTONOSUPPORT;
		goto out_rollback;
	}
	rc = db_prepare(
	    &st->conn,
	    st->schema_version >= 13
		? "INSERT INTO sessions (name, start_ms, interval_ms, nodes, cuda, owner)"
		  " VALUES (?, ?, ?, ?, ?, ?) RETURNING id"
	    : st->schema_version >= 9
		? "INSERT INTO sessions (name, start_ms, interval_ms, nodes, cuda)"
		  " VALUES (?, ?, ?, ?, ?) RETURNING id"
		: "INSERT INTO sessions (name, start_ms, interval_ms, nodes)"
		  " VALUES (?, ?, ?, ?) RETURNING id",
	    &stmt);
	if (rc != SQLITE_OK) {
		ret = store__read_fail(st, rc, "start a session");
		goto out_rollback;
	}
	db_bind_text(stmt, 1, s->name, -1, SQLITE_STATIC);
	db_bind_int64(stmt, 2, s->start_ms);
	if (s->interval_ms > 0)
		db_bind_int64(stmt, 3, s->interval_ms);
	if (s->nodes[0])
		db_bind_text(stmt, 4, s->nodes, -1, SQLITE_STATIC);
	if (st->schema_version >= 9)
		db_bind_int64(stmt, 5, s->cuda);
	if (s->owner[0])
		db_bind_text(stmt, 6, s->owner, -1, SQLITE_STATIC);
	rc = db_step(stmt);
	if (rc == SQLITE_ROW)
		s->id = db_column_int64(stmt, 0);
	rc = rc == SQLITE_ROW ? db_step(stmt) : rc;
	db_finalize(stmt);
	if (rc != SQLITE_DONE) {
		ret = store__read_fail(st, rc, "start a session");
		goto out_rollback;
	}
	rc = db_exec(&st->conn, "COMMIT");
	if (rc != SQLITE_OK) {
		ret = store__read_fail(st, rc, "start a session");
		goto out_rollback;
	}
	st->sessions_gen++;
	return 0;

out_rollback:
	db_exec(&st->conn, "ROLLBACK");
	return ret;
}

int store_session_stop(struct store *st, const char *name, const char *owner, int64_t end_ms,
		       int *stopped)
{
	struct db_stmt *stmt;
	char sql[160];
	int rc;

	*stopped = 0;
	if (st->schema_version < 4 || (owner && st->schema_version < 13))
		return 0; /* an owner's sessions: none before schema 13 */
	snprintf(sql, sizeof(sql), "UPDATE sessions SET end_ms = ?1 WHERE end_ms IS NULL%s%s",
		 name ? " AND name = ?2" : "", owner ? " AND owner = ?3" : "");
	rc = db_prepare(&st->conn, sql, &stmt);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "stop a session");
	db_bind_int64(stmt, 1, end_ms);
	if (name)
		db_bind_text(stmt, 2, name, -1, SQLITE_STATIC);
	if (owner)
		db_bind_text(stmt, 3, owner, -1, SQLITE_STATIC);
	rc = db_step(stmt);
	db_finalize(stmt);
	if (rc != SQLITE_DONE)
		return store__read_fail(st, rc, "stop a session");
	*stopped = db_changes(&st->conn);
	st->sessions_gen++;
	return 0;
}

uint64_t store_sessions_generation(const struct store *st)
{
	return st->sessions_gen;
}

int store_for_each_session(struct store *st, bool active_only,
			   int (*fn)(const struct session_record *s, void *arg), void *arg)
{
	struct session_record s;
	struct db_stmt *stmt;
	char sql[256];
	int rc, ret = 0;

	if (st->schema_version < 4)
		return 0;
	snprintf(sql, sizeof(sql), "SELECT %s FROM sessions%s ORDER BY start_ms, id",
		 session_columns(st), active_only ? " WHERE end_ms IS NULL" : "");
	rc = db_prepare(&st->conn, sql, &stmt);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "list the sessions");
	while (!ret && (rc = db_step(stmt)) == SQLITE_ROW) {
		session_from_row(stmt, &s);
		ret = fn(&s, arg);
	}
	db_finalize(stmt);
	return ret;
}

int store_session_get(struct store *st, const char *name, struct session_record *out)
{
	struct db_stmt *stmt;
	char sql[256];
	int rc, ret = -ENOENT;

	if (st->schema_version < 4)
		return -ENOENT;
	snprintf(sql, sizeof(sql),
		 "SELECT %s FROM sessions WHERE name = ? ORDER BY start_ms DESC, id DESC LIMIT 1",
		 session_columns(st));
	rc = db_prepare(&st->conn, sql, &stmt);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "read a session");
	db_bind_text(stmt, 1, name, -1, SQLITE_STATIC);
	if (db_step(stmt) == SQLITE_ROW) {
		session_from_row(stmt, out);
		ret = 0;
	}
	db_finalize(stmt);
	return ret;
}

int store_request_add(struct store *st, struct request_record *r)
{
	struct db_stmt *stmt;
	int rc;

	if (st->schema_version < 7)
		return -EPROTONOSUPPORT;
	rc = db_prepare(&st->conn,
			"INSERT INTO requests (ts_ms, app, queue_s, processing_s, other)"
			" VALUES (?, ?, ?, ?, ?) RETURNING id",
			&stmt);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "record a request");
	db_bind_int64(stmt, 1, r->ts_ms);
	db_bind_text(stmt, 2, r->app, -1, SQLITE_STATIC);
	db_bind_double(stmt, 3, r->queue_s);
	db_bind_double(stmt, 4, r->processing_s);
	if (r->other)
		db_bind_text(stmt, 5, r->other, -1, SQLITE_STATIC);
	rc = db_step(stmt);
	if (rc == SQLITE_ROW)
		r->id = db_column_int64(stmt, 0);
	rc = rc == SQLITE_ROW ? db_step(stmt) : rc;
	db_finalize(stmt);
	if (rc != SQLITE_DONE)
		return store__read_fail(st, rc, "record a request");
	return 0;
}

/* The requests in [from_ms, to_ms] (to_ms 0: up to now), in the order sql gives. */
static int requests_each(struct store *st, int64_t from_ms, int64_t to_ms, const char *sql,
			 int (*fn)(const struct request_record *r, void *arg), void *arg)
{
	struct request_record r;
	struct db_stmt *stmt;
	int rc, ret = 0;

	if (st->schema_version < 7)
		return 0;
	rc = db_prepare(&st->conn, sql, &stmt);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "read the requests");
	db_bind_int64(stmt, 1, from_ms);
	db_bind_int64(stmt, 2, to_ms);
	while (!ret && (rc = db_step(stmt)) == SQLITE_ROW) {
		const unsigned char *app = db_column_text(stmt, 2);

		memset(&r, 0, sizeof(r));
		r.id = db_column_int64(stmt, 0);
		r.ts_ms = db_column_int64(stmt, 1);
		snprintf(r.app, sizeof(r.app), "%s", app ? (const char *)app : "");
		r.queue_s = db_column_double(stmt, 3);
		r.processing_s = db_column_double(stmt, 4);
		r.other = (const char *)db_column_text(stmt, 5);
		ret = fn(&r, arg);
	}
	db_finalize(stmt);
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
			     REQUEST_SELECT " ORDER BY min(id) OVER (PARTITION BY app), id", fn,
			     arg);
}
