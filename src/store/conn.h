/*
 * conn.h - the store's connection (struct store) and what every store file
 * uses to report an SQLite failure: the mapping of result codes to -errno,
 * the connection's message made printable, and the one-integer queries the
 * open and the writer run.
 *
 * Not part of the API: only src/store/ includes it (and unit tests, to
 * reach st->conn.sq for fault injection, as git's test-tool does).  It includes
 * no other store header, so any store file may include it and nothing
 * includes back: the writer's statement cache lives in writer.c, the
 * schema's column lists in schema.h.
 *
 * Errors: every function here that fails has printed its message (log.h)
 * and returns -errno, never 0.  Not thread-safe: a connection is one
 * thread's.
 */
#ifndef JOBSCOPE_STORE_CONN_H
#define JOBSCOPE_STORE_CONN_H

#include <limits.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <sqlite3.h>

#include "db/db.h"

#include "store/store.h"
#include "store/jobdata.h"
#include "store/profiling.h"
#include "store/reader.h"
#include "store/sync.h"
#include "store/upkeep.h"
#include "store/write.h"

/*
 * Statements the writer prepares once and reuses (writer.c's enum
 * store_stmt, which checks at compile time that the two agree).
 */
#define STORE_WRITER_NSTMTS 22

#define STORE_INGEST_CACHE 128
#define STORE_PG_PARTS	   256

/* The head's memo of dimension rows (ingest.c); store_close frees it. */
struct ingest_memo;
void store__memo_free(struct ingest_memo *m);

struct store {
	struct db_conn conn; /* conn.sq: SQLite, conn.pg: PostgreSQL (pg.h) */
	dev_t dev;	     /* the SQLite file's, in open.c's table of files open */
	ino_t ino;
	bool registered;
	bool writable;
	bool checked; /* opened with STORE_CHECKED */
	bool in_tick;
	int tick_err;		/* first failure inside the open tick, 0 if none */
	int64_t next_seq;	/* seq of the next fact row, whatever its table */
	int64_t tick_seq;	/* next_seq when the tick began: restored on rollback */
	int64_t next_seq_saved; /* PostgreSQL: the counter in meta as this transaction read it */
	int64_t data_version;	/* PRAGMA data_version when next_seq was last right */
	int64_t schema_version; /* of the file: older ones are read without GPU tables */
	struct db_stmt *stmts[STORE_WRITER_NSTMTS]; /* writer.c's, by enum store_stmt */
	/* the head's INSERTs, by their SQL (a table and its batch's columns) */
	struct {
		char *sql;
		uint64_t hash; /* of sql: compared before it */
		struct db_stmt *stmt;
		char *aux; /* what its user keeps with it (store__cached_set_aux), or NULL */
	} ingest_cache[STORE_INGEST_CACHE];
	size_t ningest_cache;
	struct ingest_memo *memo; /* the head's: dimension rows already upserted (ingest.c) */
	uint64_t sessions_gen;	  /* sessions started or stopped through this store */
	/* PostgreSQL: day partitions known to exist (pgschema.c), by table and UTC day */
	struct {
		int table;
		int64_t day;
	} pg_parts[STORE_PG_PARTS];
	size_t npg_parts;
	int parts_pg_gen; /* pg_generation when pg_parts was last right */
	bool pg_sets;	  /* PostgreSQL: the process samples in proc_sample_sets (pgschema.c) */
	bool pg_sets_lz4; /* and LZ4 there: their partitions have no toast_tuple_target */
	char errmsg[256]; /* store__errmsg's buffer */
	char path[PATH_MAX];
};

/*
 * A PostgreSQL store (pgschema.c): opened at a postgresql:// URL, with its
 * schema created or checked; and the day partitions that rows of table at
 * these times need, made before a batch's transaction (0; a failure only
 * warns: the rows go to the default partition; -EIO, quietly, when the
 * database cannot be reached: the batch's transaction fails and says so).
 */
int store__pg_open(const char *url, unsigned flags, struct store **out);
int store__pg_partitions(struct store *st, const char *table, const int64_t *ts_ms, size_t n);
/*
 * The next seq a PostgreSQL store gives (its meta row; in a store no writer
 * has written since that row was made, from the tables, which also sets
 * st->next_seq).
 */
int store__pg_next_seq(struct store *st, int64_t *next_seq);

/* SQLite result code (extended or primary) -> -errno; 0 for OK/ROW/DONE. */
int store__errno(sqlite3 *db, int rc);
/* The connection's last error message, printable; valid until the next call. */
const char *store__errmsg(struct store *st);

/*
 * A statement for sql from the connection's cache (the head's ingest runs
 * the same few statements thousands of times a second), else prepared and
 * kept: 0, or the SQLite result code.  The caller resets it after use.
 */
int store__cached_stmt(struct store *st, const char *sql, struct db_stmt **out);
/* The same, kept under key (sql is made from more than the key says: a lookup's result). */
int store__cached_stmt_as(struct store *st, const char *key, const char *sql, struct db_stmt **out);
/* The cached statement for sql, or NULL (nothing prepared). */
struct db_stmt *store__cached_find(struct store *st, const char *sql);
/* The cached statement for key and what is kept beside it (store__cached_set_aux), or NULL. */
struct db_stmt *store__cached_find_aux(struct store *st, const char *key, const char **aux);
/* aux (owned from now on) kept beside the cached statement key, in place of any before. */
void store__cached_set_aux(struct store *st, const char *key, char *aux);
/* Runs a cached statement without parameters or rows (SAVEPOINT, RELEASE): 0 or -errno. */
int store__cached_exec(struct store *st, const char *sql);

/* Reports a failed read of what ("cannot WHAT in store ..."): -errno, never 0. */
int store__read_fail(struct store *st, int rc, const char *what);
/* Reports a failed write, except a full disk (-ENOSPC, silent): -errno, never 0. */
int store__write_fail(struct store *st, int rc, const char *what);
int store__query_i64_opt(struct store *st, const char *sql, int64_t a, int64_t *out, bool *found);
/* The same through the statement cache (store__cached_stmt): prepared once on the server. */
int store__cached_i64_opt(struct store *st, const char *sql, int64_t a, int64_t *out, bool *found);
/*
 * Steps a prepared, bound statement once and finalizes it: its first row's
 * first column into buf as text (NULL as ""), 0; -ENOENT when there is no
 * row; else -errno.
 */
int store__one_text(struct store *st, struct db_stmt *stmt, char *buf, size_t size);
/* Prepares sql for a read; on failure *out is NULL and store__read_fail has reported. */
int store__prepare(struct store *st, const char *sql, const char *what, struct db_stmt **out);
/* Binds NULL-terminated params to ?1, ?2... as store_query_json does (read.c). */
void store__bind_params(struct db_stmt *stmt, const char *const *params);
/* Writes a row's column c as store_query_json writes it (read.c). */
void store__json_column(struct jsonw *w, struct db_stmt *stmt, int c);

/*
 * Refusing a file at open: not ours (ret as given), corrupt (-EPROTO), or
 * written by a newer jobscope (-EPROTONOSUPPORT).  Each prints why.
 */
int store__refuse(const char *path, int ret, const char *why);
int store__refuse_corrupt(const char *path, const char *why);
int store__refuse_newer(const char *path, int64_t version);
/* Fails the open: corruption is -EPROTO and says so, the rest names the errno. */
int store__open_fail(struct store *st, int rc, const char *what);
/* A one-integer query (PRAGMA user_version, counts); 0 when it returns no row. */
int store__query_i64(struct store *st, const char *sql, int64_t *out);
/* Runs SQL without rows (pragmas, the schema); a failure fails like the open. */
int store__exec(struct store *st, const char *sql, const char *what);

#endif
