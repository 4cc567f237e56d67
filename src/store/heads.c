/*
 * heads.c - several heads on one PostgreSQL database: who they are and
 * which one runs the upkeep (retention, report checkpoints, remote write,
 * annotations) that must run once.
 *
 *   store_heads_setup     the two tables, made if missing
 *   store_head_beat       a head's heartbeat, and the upkeep lease taken,
 *                         renewed or not
 *   store_head_leave      a head that stops: its row and its lease go
 *   store_for_each_head   the heads that beat lately
 *
 * The tables are PostgreSQL's own and not part of the versioned schema
 * (a file has one head): heads (one row per head, seen_ms its last beat)
 * and head_lease (one row per lease: its holder and when it expires).
 * Every time is the database server's clock, so heads on machines whose
 * clocks differ agree on who holds the lease.  A holder renews it at every
 * beat; another head takes it only once it expired, in one INSERT ... ON
 * CONFLICT DO UPDATE ... WHERE, which PostgreSQL runs under the row's lock:
 * two heads never both get it.
 */
#include "store/conn.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "db/pg.h"
#include "store/upkeep.h"

#define NOW_MS "CAST(extract(epoch FROM clock_timestamp()) * 1000 AS bigint)"

static int heads_fail(struct store *st, int rc, const char *what)
{
	return store__write_fail(st, rc, what);
}

int store_heads_setup(struct store *st)
{
	char lock[80];
	int64_t got = 0;
	bool found;
	int rc, ret;

	if (!st->conn.pg)
		return 0;
	/*
	 * A head of an older jobscope (one head per database) holds this key
	 * exclusively and draws seqs from a counter of its own: it must not
	 * write beside us.  Held shared by every head of ours for as long as
	 * this connection lives, so such a head started later is refused too.
	 */
	snprintf(lock, sizeof(lock), "SELECT CAST(pg_try_advisory_lock_shared(%d) AS integer)",
		 STORE_APPLICATION_ID + 1);
	ret = store__query_i64_opt(st, lock, 0, &got, &found);
	if (ret)
		return ret;
	if (!got)
		return log_err(-EBUSY,
			       "store '%s' is written by a head of an older jobscope (one head per"
			       " database): stop it before starting this one",
			       st->path);
	/* taken again on every connection libpq makes anew (a DO block: no rows to answer) */
	snprintf(lock, sizeof(lock), "DO $$BEGIN PERFORM pg_try_advisory_lock_shared(%d); END$$",
		 STORE_APPLICATION_ID + 1);
	rc = pg_on_connect(st->conn.pg, lock);
	if (rc != SQLITE_OK)
		return heads_fail(st, rc, "hold the heads' lock in");
	/* the schema's lock (pgschema.c): heads starting at once create them once */
	snprintf(lock, sizeof(lock), "SELECT pg_advisory_xact_lock(%d)", STORE_APPLICATION_ID);
	rc = db_exec(&st->conn, "BEGIN");
	if (rc == SQLITE_OK)
		rc = db_exec(&st->conn, lock);
	if (rc == SQLITE_OK)
		rc = db_exec(&st->conn,
			     "CREATE TABLE IF NOT EXISTS heads (id text PRIMARY KEY,"
			     " hostname text NOT NULL, listen text NOT NULL, pid bigint NOT NULL,"
			     " started_ms bigint NOT NULL, seen_ms bigint NOT NULL);"
			     "CREATE TABLE IF NOT EXISTS head_lease (name text PRIMARY KEY,"
			     " holder text NOT NULL, expires_ms bigint NOT NULL)");
	if (rc == SQLITE_OK)
		rc = db_exec(&st->conn, "COMMIT");
	if (rc != SQLITE_OK) {
		ret = heads_fail(st, rc, "create the heads table of");
		db_exec(&st->conn, "ROLLBACK");
		return ret;
	}
	return 0;
}

int store_head_beat(struct store *st, const struct head_record *me, int64_t lease_ms, bool *holder)
{
	struct db_stmt *stmt;
	int rc;

	*holder = !st->conn.pg; /* a file has one head */
	if (!st->conn.pg)
		return 0;
	rc = db_prepare(&st->conn,
			"INSERT INTO heads (id, hostname, listen, pid, started_ms, seen_ms)"
			" VALUES (?1, ?2, ?3, ?4, ?5, " NOW_MS ")"
			" ON CONFLICT (id) DO UPDATE SET seen_ms = excluded.seen_ms,"
			" listen = excluded.listen RETURNING seen_ms",
			&stmt);
	if (rc != SQLITE_OK)
		return heads_fail(st, rc, "beat in");
	db_bind_text(stmt, 1, me->id, -1, SQLITE_STATIC);
	db_bind_text(stmt, 2, me->hostname, -1, SQLITE_STATIC);
	db_bind_text(stmt, 3, me->listen, -1, SQLITE_STATIC);
	db_bind_int64(stmt, 4, me->pid);
	db_bind_int64(stmt, 5, me->started_ms);
	rc = db_step(stmt);
	db_finalize(stmt);
	if (rc != SQLITE_ROW)
		return heads_fail(st, rc, "beat in");
	rc = db_prepare(&st->conn,
			"INSERT INTO head_lease (name, holder, expires_ms)"
			" VALUES ('upkeep', ?1, " NOW_MS " + ?2)"
			" ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
			" expires_ms = excluded.expires_ms"
			" WHERE head_lease.holder = excluded.holder"
			" OR head_lease.expires_ms <= " NOW_MS " RETURNING 1",
			&stmt);
	if (rc != SQLITE_OK)
		return heads_fail(st, rc, "take the lease in");
	db_bind_text(stmt, 1, me->id, -1, SQLITE_STATIC);
	db_bind_int64(stmt, 2, lease_ms);
	rc = db_step(stmt);
	db_finalize(stmt);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return heads_fail(st, rc, "take the lease in");
	*holder = rc == SQLITE_ROW;
	/* heads gone for a day are forgotten */
	rc = db_exec(&st->conn, "DELETE FROM heads WHERE seen_ms < " NOW_MS " - 86400000");
	if (rc != SQLITE_OK)
		return heads_fail(st, rc, "forget old heads in");
	return 0;
}

int store_head_leave(struct store *st, const char *id)
{
	struct db_stmt *stmt;
	int rc;

	if (!st->conn.pg)
		return 0;
	rc = db_prepare(&st->conn,
			"WITH l AS (DELETE FROM head_lease WHERE holder = ?1 RETURNING 1)"
			" DELETE FROM heads WHERE id = ?1 RETURNING 1",
			&stmt);
	if (rc != SQLITE_OK)
		return heads_fail(st, rc, "leave");
	db_bind_text(stmt, 1, id, -1, SQLITE_STATIC);
	rc = db_step(stmt);
	db_finalize(stmt);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : heads_fail(st, rc, "leave");
}

int store_for_each_head(struct store *st, int64_t *now_ms,
			int (*fn)(const struct head_record *h, void *arg), void *arg)
{
	struct db_stmt *stmt;
	int rc, ret = 0;

	*now_ms = 0;
	if (!st->conn.pg)
		return 0;
	rc = db_prepare(
	    &st->conn,
	    "SELECT h.id, h.hostname, h.listen, h.pid, h.started_ms, h.seen_ms,"
	    " " NOW_MS ", l.expires_ms"
	    " FROM heads h LEFT JOIN head_lease l ON l.name = 'upkeep' AND l.holder = h.id"
	    " ORDER BY h.started_ms, h.id",
	    &stmt);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "list the heads of");
	while (!ret && (rc = db_step(stmt)) == SQLITE_ROW) {
		struct head_record r;
		const unsigned char *t;

		memset(&r, 0, sizeof(r));
		t = db_column_text(stmt, 0);
		snprintf(r.id, sizeof(r.id), "%s", t ? (const char *)t : "");
		t = db_column_text(stmt, 1);
		snprintf(r.hostname, sizeof(r.hostname), "%s", t ? (const char *)t : "");
		t = db_column_text(stmt, 2);
		snprintf(r.listen, sizeof(r.listen), "%s", t ? (const char *)t : "");
		r.pid = db_column_int64(stmt, 3);
		r.started_ms = db_column_int64(stmt, 4);
		r.seen_ms = db_column_int64(stmt, 5);
		*now_ms = db_column_int64(stmt, 6);
		r.lease_expires_ms =
		    db_column_type(stmt, 7) == SQLITE_NULL ? 0 : db_column_int64(stmt, 7);
		r.holds_lease = r.lease_expires_ms > *now_ms;
		ret = fn(&r, arg);
	}
	db_finalize(stmt);
	if (!ret && rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "list the heads of");
	return ret;
}
