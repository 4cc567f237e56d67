/*
 * db.h - one statement interface over the store's two engines: SQLite (a
 * file: `jobscope run`, the agent, a head by default) and PostgreSQL (a
 * head's store at a postgresql:// URL, through libpq loaded with dlopen).
 *
 * The calls mirror SQLite's own (prepare, bind, step, column, reset,
 * finalize), with SQLite's result codes (SQLITE_ROW, SQLITE_DONE, and an
 * error code that store__errno maps to -errno) whichever the engine, so
 * that a store file reads the same for both.  SQL is written once in the
 * subset both speak: parameters `?` or `?N` (turned into `$N` for
 * PostgreSQL), upserts with ON CONFLICT, RETURNING, greatest() / least()
 * for the two-argument max and min (defined on every SQLite connection),
 * and "user" quoted.  What only one engine has (PRAGMA, packs, partitions)
 * stays in files of its own.
 *
 * PostgreSQL results are read as text and converted as SQLite would give
 * them: a boolean is the integer 1 or 0, a numeric without a fraction an
 * integer, bytea a blob.  A statement is run when first stepped, with the
 * parameters bound then; its rows are held until reset or finalize.
 *
 * Ownership: a statement belongs to its connection and must be finalized
 * before the connection is closed (store_close).  Bound text and blobs are copied for
 * PostgreSQL and follow SQLite's destructor argument for SQLite.  Not
 * thread-safe: a statement is its connection's thread's.
 */
#ifndef JOBSCOPE_DB_H
#define JOBSCOPE_DB_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include <sqlite3.h>

struct pg_conn;
struct pg_stmt;

/* A connection to one of the two engines (the store's st->conn): one of the two is set. */
struct db_conn {
	sqlite3 *sq;	    /* SQLite; NULL for PostgreSQL */
	struct pg_conn *pg; /* PostgreSQL (pg.h); NULL for SQLite */
};

struct db_stmt {
	sqlite3_stmt *sq;   /* SQLite; NULL for PostgreSQL */
	struct pg_stmt *pg; /* PostgreSQL; NULL for SQLite */
};

/* Prepares sql on c's engine: SQLITE_OK, or an error code (its message: store__errmsg). */
int db_prepare(struct db_conn *c, const char *sql, struct db_stmt **out);
/* A statement prepared to be kept (the writer's and the head's cache). */
int db_prepare_persistent(struct db_conn *c, const char *sql, struct db_stmt **out);
void db_finalize(struct db_stmt *s);
int db_reset(struct db_stmt *s);
int db_clear_bindings(struct db_stmt *s);
/* SQLITE_ROW, SQLITE_DONE or an error code. */
int db_step(struct db_stmt *s);
/* SQL without parameters or rows (BEGIN, COMMIT, ...): SQLITE_OK or an error code. */
int db_exec(struct db_conn *c, const char *sql);
/*
 * PostgreSQL sends an INSERT without RETURNING stepped in a transaction
 * ahead, without waiting: its failure is the answer of the next statement
 * on c, or of db_flush, which waits for them all.  SQLite: SQLITE_OK.
 */
int db_flush(struct db_conn *c);
/* Rows changed by the last INSERT/UPDATE/DELETE stepped on c (an INSERT sent ahead: 1). */
int64_t db_changes(struct db_conn *c);
/* True while c has a transaction open. */
bool db_in_transaction(struct db_conn *c);
/* True when c is a PostgreSQL connection. */
bool db_is_pg(const struct db_conn *c);

int db_bind_int64(struct db_stmt *s, int i, int64_t v);
int db_bind_double(struct db_stmt *s, int i, double v);
int db_bind_null(struct db_stmt *s, int i);
/* n < 0: up to the NUL.  dtor: SQLITE_STATIC or SQLITE_TRANSIENT (PostgreSQL always copies). */
int db_bind_text(struct db_stmt *s, int i, const char *v, int n, sqlite3_destructor_type dtor);
int db_bind_blob(struct db_stmt *s, int i, const void *v, int n, sqlite3_destructor_type dtor);
/* PostgreSQL only (pg_bind_binary): a value in its type's binary format; SQLITE_MISUSE on SQLite.
 */
int db_bind_pg_binary(struct db_stmt *s, int i, const void *v, size_t n, unsigned type);
int db_bind_parameter_count(struct db_stmt *s);
/* Whether the statement only reads (SELECT / WITH). */
bool db_stmt_readonly(struct db_stmt *s);

/* Columns of the current row: valid after a step gave SQLITE_ROW. */
int db_column_count(struct db_stmt *s);
const char *db_column_name(struct db_stmt *s, int c);
/* SQLITE_NULL, SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT or SQLITE_BLOB. */
int db_column_type(struct db_stmt *s, int c);
int64_t db_column_int64(struct db_stmt *s, int c);
double db_column_double(struct db_stmt *s, int c);
/* NULL for NULL; valid until the next step, reset or finalize. */
const unsigned char *db_column_text(struct db_stmt *s, int c);
/* The same as a string, "" for NULL. */
const char *db_column_str(struct db_stmt *s, int c);
const void *db_column_blob(struct db_stmt *s, int c);
int db_column_bytes(struct db_stmt *s, int c);

#endif
