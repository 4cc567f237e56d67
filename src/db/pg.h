/*
 * pg.h - the PostgreSQL engine under db.h: a libpq connection (libpq.so.5
 * loaded with dlopen on first use, so that nodes without it run the rest)
 * and statements that behave as db.h describes.
 *
 * Not part of the API: db.c, open.c and pgschema.c use it.  Errors: the
 * SQLite result code db.h promises; the message is pg_errmsg's.  Not
 * thread-safe: a connection is one thread's.
 */
#ifndef JOBSCOPE_DB_PG_H
#define JOBSCOPE_DB_PG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pg_conn;
struct pg_stmt;

/* Whether a --db names a PostgreSQL database (postgresql:// or postgres://). */
bool pg_is_url(const char *s);
/*
 * Connects: 0, or -errno with the reason in err (-ENOENT: no libpq,
 * -ECONNREFUSED: the server refused or cannot be reached).  url is any
 * libpq connection string, passed as it is: several hosts
 * (postgresql://u@h1:5432,h2:5432/db?target_session_attrs=read-write) are
 * tried in order.  connect_timeout 10 s and TCP keepalives (dead within a
 * minute) unless url sets them.  A connection lost later is made anew
 * through the same string by the calls that follow (pg.c's top).
 */
int pg_connect(const char *url, struct pg_conn **out, char *err, size_t size);
void pg_close(struct pg_conn *c);
/* The connection's last error, one line; "" when none. */
const char *pg_errmsg(struct pg_conn *c);

/* persistent: prepared on the server when first run, for statements run many times. */
int pg_prepare(struct pg_conn *c, const char *sql, bool persistent, struct pg_stmt **out);
void pg_finalize(struct pg_stmt *s);
void pg_reset(struct pg_stmt *s);
void pg_clear_bindings(struct pg_stmt *s);
int pg_step(struct pg_stmt *s);
int pg_exec(struct pg_conn *c, const char *sql);
/*
 * Runs sql (a SET) now and again on every connection libpq makes anew after
 * this one failed: a session setting that must hold for the connection's
 * whole life.  Each call adds to what is run again (in the order given),
 * up to 511 bytes in all (SQLITE_TOOBIG beyond).  SQLITE_OK or the
 * failure's code.
 */
int pg_on_connect(struct pg_conn *c, const char *sql);
/*
 * How many times the connection was made anew (after a restart or a failover
 * of the server): what was read before may be gone, or be newer.
 */
int pg_generation(const struct pg_conn *c);
/*
 * An INSERT without RETURNING stepped inside a transaction is sent ahead
 * (libpq's pipeline mode) and answers SQLITE_DONE at once; its failure is
 * the answer of the next statement, exec or pg_flush.
 */
int pg_flush(struct pg_conn *c);
int64_t pg_changes(struct pg_conn *c);
/*
 * The SQLite code of the last statement the server (or the connection)
 * failed since the last call, and forgets it: SQLITE_OK when none.  What
 * a value refused by its column (SQLITE_MISMATCH, SQLITE_CONSTRAINT) is,
 * wherever the pipeline let it surface.
 */
int pg_take_failure(struct pg_conn *c);
/* The server's version as libpq gives it (150018 for 15.18); 0 when not connected. */
int pg_server_version(struct pg_conn *c);
/* True from BEGIN to COMMIT or ROLLBACK, and for one lost with its connection until ROLLBACK. */
bool pg_in_transaction(struct pg_conn *c);

/*
 * COPY ... FROM STDIN in text format, inside a transaction (refused
 * outside one, SQLITE_MISUSE): pg_copy_begin sends sql and waits for the
 * server to take rows; each row is its fields in the statement's column
 * order (pg_copy_int64, _double, _text, _null), then pg_copy_row_end.
 * Rows are buffered and sent in chunks; the put functions cannot fail, a
 * failure (memory, the connection) is kept and is pg_copy_end's answer.
 * pg_copy_end ends the COPY and waits for its result: SQLITE_OK with the
 * rows stored in *rows, or the failure's code (a value a column refuses:
 * SQLITE_MISMATCH, as a refused parameter).  fail non-NULL: the COPY is
 * given up (CopyFail, its message fail), nothing of it is stored, and the
 * transaction is failed, to be rolled back (to a savepoint) as after any
 * failed statement; the answer is then an error code too.
 */
int pg_copy_begin(struct pg_conn *c, const char *sql);
void pg_copy_int64(struct pg_conn *c, int64_t v);
void pg_copy_double(struct pg_conn *c, double v);
/* n bytes of v (UTF-8 as the connection's encoding; no NUL), escaped. */
void pg_copy_text(struct pg_conn *c, const char *v, size_t n);
void pg_copy_null(struct pg_conn *c);
void pg_copy_row_end(struct pg_conn *c);
int pg_copy_end(struct pg_conn *c, const char *fail, int64_t *rows);

/*
 * An array literal's elements in text form ('{1,NULL,"a\\"b"}'), appended to
 * a strbuf, for a parameter cast to an array type (INSERT ... SELECT FROM
 * unnest($1::bigint[], ...)): each adds a comma before it but the first.
 * pg_array_begin and pg_array_end put the braces; 0, or -ENOMEM.
 */
struct strbuf;
int pg_array_begin(struct strbuf *sb);
int pg_array_int64(struct strbuf *sb, int64_t v);
int pg_array_double(struct strbuf *sb, double v);
/* n bytes of v (UTF-8 as the connection's encoding; no NUL), quoted. */
int pg_array_text(struct strbuf *sb, const char *v, size_t n);
int pg_array_null(struct strbuf *sb);
int pg_array_end(struct strbuf *sb);

/* A double as float8in reads it back bit for bit ("%.17g", NaN, Infinity): its length. */
int pg_format_double(char *buf, size_t size, double v);

/*
 * The same arrays in PostgreSQL's binary format, for a parameter bound by
 * pg_bind_binary with pg_elem_array_type's OID: nothing for the server to
 * parse, no number printed at the head.  pg_binarray_begin appends the
 * header for elements of type elem at sb's end; every element after it
 * names where that header starts (sb->len before pg_binarray_begin), whose
 * count it advances.  0, -ENOMEM or -E2BIG.
 */
enum pg_elem { PG_ELEM_INT8, PG_ELEM_FLOAT8, PG_ELEM_TEXT };
unsigned pg_elem_array_type(enum pg_elem elem);
int pg_binarray_begin(struct strbuf *sb, enum pg_elem elem);
int pg_binarray_int64(struct strbuf *sb, size_t start, int64_t v);
int pg_binarray_double(struct strbuf *sb, size_t start, double v);
int pg_binarray_text(struct strbuf *sb, size_t start, const char *v, size_t n);
int pg_binarray_null(struct strbuf *sb, size_t start);

int pg_bind_int64(struct pg_stmt *s, int i, int64_t v);
int pg_bind_double(struct pg_stmt *s, int i, double v);
int pg_bind_null(struct pg_stmt *s, int i);
/* n bytes of v in the binary format of the type whose OID is type (a copy is kept). */
int pg_bind_binary(struct pg_stmt *s, int i, const void *v, size_t n, unsigned type);
int pg_bind_text(struct pg_stmt *s, int i, const char *v, int n);
int pg_bind_blob(struct pg_stmt *s, int i, const void *v, int n);
int pg_bind_parameter_count(struct pg_stmt *s);
bool pg_stmt_readonly(struct pg_stmt *s);

int pg_column_count(struct pg_stmt *s);
const char *pg_column_name(struct pg_stmt *s, int c);
int pg_column_type(struct pg_stmt *s, int c);
int64_t pg_column_int64(struct pg_stmt *s, int c);
double pg_column_double(struct pg_stmt *s, int c);
const unsigned char *pg_column_text(struct pg_stmt *s, int c);
const void *pg_column_blob(struct pg_stmt *s, int c);
int pg_column_bytes(struct pg_stmt *s, int c);

/*
 * SQLite's `?` and `?N` parameters as PostgreSQL's `$N` (outside quotes):
 * 0 and the highest parameter number in *nparams, or -ENAMETOOLONG.
 */
int pg_translate(const char *sql, char *out, size_t size, int *nparams);

#endif
