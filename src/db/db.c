/*
 * db.c - db.h's calls, each sent to the statement's engine: SQLite's own
 * function, or pg.c's.  A statement is a small wrapper holding one of the
 * two; the connection is a struct db_conn (the store's st->conn).
 */
#include "db/db.h"

#include <stdlib.h>

#include "db/pg.h"

static int prepare(struct db_conn *c, const char *sql, unsigned flags, struct db_stmt **out)
{
	struct db_stmt *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s)
		return SQLITE_NOMEM;
	if (c->pg)
		rc = pg_prepare(c->pg, sql, flags & SQLITE_PREPARE_PERSISTENT, &s->pg);
	else
		rc = sqlite3_prepare_v3(c->sq, sql, -1, flags, &s->sq, NULL);
	if (rc != SQLITE_OK || (!s->sq && !s->pg)) {
		free(s);
		return rc != SQLITE_OK ? rc : SQLITE_MISUSE; /* empty SQL */
	}
	*out = s;
	return SQLITE_OK;
}

int db_prepare(struct db_conn *c, const char *sql, struct db_stmt **out)
{
	return prepare(c, sql, 0, out);
}

int db_prepare_persistent(struct db_conn *c, const char *sql, struct db_stmt **out)
{
	return prepare(c, sql, SQLITE_PREPARE_PERSISTENT, out);
}

void db_finalize(struct db_stmt *s)
{
	if (!s)
		return;
	if (s->pg)
		pg_finalize(s->pg);
	else
		sqlite3_finalize(s->sq);
	free(s);
}

int db_reset(struct db_stmt *s)
{
	if (s->pg) {
		pg_reset(s->pg);
		return SQLITE_OK;
	}
	return sqlite3_reset(s->sq);
}

int db_clear_bindings(struct db_stmt *s)
{
	if (s->pg) {
		pg_clear_bindings(s->pg);
		return SQLITE_OK;
	}
	return sqlite3_clear_bindings(s->sq);
}

int db_step(struct db_stmt *s)
{
	return s->pg ? pg_step(s->pg) : sqlite3_step(s->sq);
}

int db_exec(struct db_conn *c, const char *sql)
{
	return c->pg ? pg_exec(c->pg, sql) : sqlite3_exec(c->sq, sql, NULL, NULL, NULL);
}

int db_flush(struct db_conn *c)
{
	return c->pg ? pg_flush(c->pg) : SQLITE_OK;
}

int64_t db_changes(struct db_conn *c)
{
	return c->pg ? pg_changes(c->pg) : sqlite3_changes64(c->sq);
}

bool db_in_transaction(struct db_conn *c)
{
	return c->pg ? pg_in_transaction(c->pg) : !sqlite3_get_autocommit(c->sq);
}

bool db_is_pg(const struct db_conn *c)
{
	return c->pg != NULL;
}

int db_bind_int64(struct db_stmt *s, int i, int64_t v)
{
	return s->pg ? pg_bind_int64(s->pg, i, v) : sqlite3_bind_int64(s->sq, i, v);
}

int db_bind_double(struct db_stmt *s, int i, double v)
{
	return s->pg ? pg_bind_double(s->pg, i, v) : sqlite3_bind_double(s->sq, i, v);
}

int db_bind_null(struct db_stmt *s, int i)
{
	return s->pg ? pg_bind_null(s->pg, i) : sqlite3_bind_null(s->sq, i);
}

int db_bind_text(struct db_stmt *s, int i, const char *v, int n, sqlite3_destructor_type dtor)
{
	return s->pg ? pg_bind_text(s->pg, i, v, n) : sqlite3_bind_text(s->sq, i, v, n, dtor);
}

int db_bind_blob(struct db_stmt *s, int i, const void *v, int n, sqlite3_destructor_type dtor)
{
	return s->pg ? pg_bind_blob(s->pg, i, v, n) : sqlite3_bind_blob(s->sq, i, v, n, dtor);
}

int db_bind_pg_binary(struct db_stmt *s, int i, const void *v, size_t n, unsigned type)
{
	return s->pg ? pg_bind_binary(s->pg, i, v, n, type) : SQLITE_MISUSE;
}

int db_bind_parameter_count(struct db_stmt *s)
{
	return s->pg ? pg_bind_parameter_count(s->pg) : sqlite3_bind_parameter_count(s->sq);
}

bool db_stmt_readonly(struct db_stmt *s)
{
	return s->pg ? pg_stmt_readonly(s->pg) : sqlite3_stmt_readonly(s->sq) != 0;
}

int db_column_count(struct db_stmt *s)
{
	return s->pg ? pg_column_count(s->pg) : sqlite3_column_count(s->sq);
}

const char *db_column_name(struct db_stmt *s, int c)
{
	return s->pg ? pg_column_name(s->pg, c) : sqlite3_column_name(s->sq, c);
}

int db_column_type(struct db_stmt *s, int c)
{
	return s->pg ? pg_column_type(s->pg, c) : sqlite3_column_type(s->sq, c);
}

int64_t db_column_int64(struct db_stmt *s, int c)
{
	return s->pg ? pg_column_int64(s->pg, c) : sqlite3_column_int64(s->sq, c);
}

double db_column_double(struct db_stmt *s, int c)
{
	return s->pg ? pg_column_double(s->pg, c) : sqlite3_column_double(s->sq, c);
}

const unsigned char *db_column_text(struct db_stmt *s, int c)
{
	return s->pg ? pg_column_text(s->pg, c) : sqlite3_column_text(s->sq, c);
}

const char *db_column_str(struct db_stmt *s, int c)
{
	const unsigned char *t = db_column_text(s, c);

	return t ? (const char *)t : "";
}

const void *db_column_blob(struct db_stmt *s, int c)
{
	return s->pg ? pg_column_blob(s->pg, c) : sqlite3_column_blob(s->sq, c);
}

int db_column_bytes(struct db_stmt *s, int c)
{
	return s->pg ? pg_column_bytes(s->pg, c) : sqlite3_column_bytes(s->sq, c);
}
