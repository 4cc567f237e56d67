/*
 * conn.c - the connection's error helpers, under every other store file.
 *
 *   store__errno           an SQLite result code as -errno
 *   store__errmsg          the connection's last message, printable (store_errmsg)
 *   store__read_fail       reporting a failed read
 *   store__write_fail      reporting a failed write (a full disk: silent)
 *   store__prepare         a reader's prepare, reported on failure
 *   store__refuse*         refusing a file at open: not ours, corrupt, newer
 *   store__open_fail       reporting a failure while opening
 *   store__query_i64       a one-integer query (pragmas, counts)
 *   store__exec            SQL without rows, failing like the open
 *
 * Calls nothing else of the store (conn.h).
 */
#include "store/conn.h"
#include "db/pg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fmt.h"
#include "common/hash.h"
#include "common/log.h"

int store__errno(sqlite3 *db, int rc)
{
	int sys;

	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
	case SQLITE_FORMAT:
	case SQLITE_ERROR: /* our SQL is fixed: "no such table" etc. means a foreign schema */
		return -EPROTO;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_INTERRUPT:
		return -EINTR;
	case SQLITE_TOOBIG:
		return -E2BIG;
	case SQLITE_CONSTRAINT:
		if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY)
			return -EEXIST;
		return -EINVAL;
	case SQLITE_MISMATCH:
	case SQLITE_RANGE:
	case SQLITE_MISUSE:
		return -EINVAL;
	case SQLITE_CANTOPEN:
	case SQLITE_IOERR:
		sys = db ? sqlite3_system_errno(db) : 0;
		return sys > 0 ? -sys : -EIO;
	default:
		return -EIO;
	}
}

const char *store__errmsg(struct store *st)
{
	if (st->conn.pg)
		return pg_errmsg(st->conn.pg); /* one printable line already */
	fmt_printable(st->errmsg, sizeof(st->errmsg), sqlite3_errmsg(st->conn.sq));
	return st->errmsg;
}

const char *store_errmsg(struct store *st)
{
	return store__errmsg(st);
}

/* Reports a failed read: corruption says so, the rest names the errno. */
int store__read_fail(struct store *st, int rc, const char *what)
{
	int ret = store__errno(st->conn.sq, rc);

	if (ret == 0)
		ret = -EIO;
	if (ret == -EPROTO) {
		log_err(0, "cannot %s: '%s' is a corrupt jobscope store (%s)", what, st->path,
			store__errmsg(st));
		return ret;
	}
	return log_err(ret, "cannot %s in store '%s' (%s)", what, st->path, store__errmsg(st));
}

/* Reports a failed write, except a full disk: the caller counts those. */
int store__write_fail(struct store *st, int rc, const char *what)
{
	int ret = store__errno(st->conn.sq, rc);

	if (ret == -ENOSPC)
		return ret;
	if (ret == 0)
		ret = -EIO;
	return log_err(ret, "cannot %s in store '%s' (%s)", what, st->path, store__errmsg(st));
}

/* store__query_i64_opt's and store__cached_i64_opt's step: rc the statement's, else its result. */
static int i64_opt(struct store *st, struct db_stmt *stmt, int rc, int64_t a, int64_t *out,
		   bool *found)
{
	*found = false;
	if (rc != SQLITE_OK)
		return store__write_fail(st, rc, "read");
	if (db_bind_parameter_count(stmt) >= 1)
		db_bind_int64(stmt, 1, a);
	rc = db_step(stmt);
	if (rc == SQLITE_ROW && db_column_type(stmt, 0) != SQLITE_NULL) {
		*out = db_column_int64(stmt, 0);
		*found = true;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store__write_fail(st, rc, "read");
	return 0;
}

/*
 * An int64 from a query with at most one parameter, a; *found false when
 * it is NULL or there is no row.  Failures as store__write_fail's.
 */
int store__query_i64_opt(struct store *st, const char *sql, int64_t a, int64_t *out, bool *found)
{
	struct db_stmt *stmt = NULL;
	int rc = db_prepare(&st->conn, sql, &stmt);
	int ret = i64_opt(st, stmt, rc, a, out, found);

	db_finalize(stmt);
	return ret;
}

int store__cached_i64_opt(struct store *st, const char *sql, int64_t a, int64_t *out, bool *found)
{
	struct db_stmt *stmt = NULL;
	int rc = store__cached_stmt(st, sql, &stmt);
	int ret = i64_opt(st, stmt, rc, a, out, found);

	if (rc == SQLITE_OK) {
		db_reset(stmt);
		db_clear_bindings(stmt);
	}
	return ret;
}

int store__one_text(struct store *st, struct db_stmt *stmt, char *buf, size_t size)
{
	int rc = db_step(stmt), ret = -ENOENT;

	if (rc == SQLITE_ROW) {
		const unsigned char *v = db_column_text(stmt, 0);

		snprintf(buf, size, "%s", v ? (const char *)v : "");
		ret = 0;
	} else if (rc != SQLITE_DONE) {
		ret = store__errno(st->conn.sq, rc);
	}
	db_finalize(stmt);
	return ret;
}

int store__prepare(struct store *st, const char *sql, const char *what, struct db_stmt **out)
{
	int rc = db_prepare(&st->conn, sql, out);

	if (rc != SQLITE_OK) {
		*out = NULL;
		return store__read_fail(st, rc, what);
	}
	return 0;
}

int store__refuse_newer(const char *path, int64_t version)
{
	log_err(0, "'%s' was written by a newer jobscope (schema %lld, this one reads up to %d)",
		path, (long long)version, STORE_SCHEMA_VERSION);
	return -EPROTONOSUPPORT;
}

int store__refuse(const char *path, int ret, const char *why)
{
	log_err(0, "'%s' is not a jobscope store (%s)", path, why);
	return ret;
}

int store__refuse_corrupt(const char *path, const char *why)
{
	log_err(0, "'%s' is a corrupt jobscope store (%s)", path, why);
	return -EPROTO;
}

/* Fails the open: corruption is -EPROTO and says so, the rest names the errno. */
int store__open_fail(struct store *st, int rc, const char *what)
{
	int ret = store__errno(st->conn.sq, rc);

	if ((rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB)
		return store__refuse_corrupt(st->path, store__errmsg(st));
	if (ret == 0)
		ret = -EIO;
	return log_err(ret, "cannot %s store '%s' (%s)", what, st->path, store__errmsg(st));
}

/* A one-integer query (PRAGMA user_version, counts). */
int store__query_i64(struct store *st, const char *sql, int64_t *out)
{
	struct db_stmt *stmt;
	int rc;

	rc = db_prepare(&st->conn, sql, &stmt);
	if (rc != SQLITE_OK)
		return store__open_fail(st, rc, "read");
	rc = db_step(stmt);
	if (rc == SQLITE_ROW) {
		*out = db_column_int64(stmt, 0);
		rc = SQLITE_OK;
	}
	db_finalize(stmt);
	if (rc != SQLITE_OK && rc != SQLITE_DONE)
		return store__open_fail(st, rc, "read");
	if (rc == SQLITE_DONE)
		*out = 0;
	return 0;
}

int store__exec(struct store *st, const char *sql, const char *what)
{
	int rc = db_exec(&st->conn, sql);

	if (rc != SQLITE_OK)
		return store__open_fail(st, rc, what);
	return 0;
}

/* The cache's keys share long prefixes ("INSERT INTO "): a hash tells them apart. */
static uint64_t key_hash(const char *key)
{
	return fnv1a_str(FNV1A_SEED, key);
}

struct db_stmt *store__cached_find_aux(struct store *st, const char *key, const char **aux)
{
	uint64_t h = key_hash(key);

	for (size_t k = 0; k < st->ningest_cache; k++)
		if (st->ingest_cache[k].hash == h && strcmp(st->ingest_cache[k].sql, key) == 0) {
			if (aux)
				*aux = st->ingest_cache[k].aux;
			return st->ingest_cache[k].stmt;
		}
	return NULL;
}

void store__cached_set_aux(struct store *st, const char *key, char *aux)
{
	uint64_t h = key_hash(key);

	for (size_t k = 0; k < st->ningest_cache; k++)
		if (st->ingest_cache[k].hash == h && strcmp(st->ingest_cache[k].sql, key) == 0) {
			free(st->ingest_cache[k].aux);
			st->ingest_cache[k].aux = aux;
			return;
		}
	free(aux);
}

struct db_stmt *store__cached_find(struct store *st, const char *sql)
{
	return store__cached_find_aux(st, sql, NULL);
}

int store__cached_stmt(struct store *st, const char *sql, struct db_stmt **out)
{
	return store__cached_stmt_as(st, sql, sql, out);
}

int store__cached_stmt_as(struct store *st, const char *key, const char *sql, struct db_stmt **out)
{
	size_t slot;
	int rc;

	*out = store__cached_find(st, key);
	if (*out)
		return SQLITE_OK;
	rc = db_prepare_persistent(&st->conn, sql, out);
	if (rc != SQLITE_OK)
		return rc;
	if (st->ningest_cache < STORE_INGEST_CACHE) {
		slot = st->ningest_cache++;
	} else {
		slot = strlen(key) % STORE_INGEST_CACHE; /* any: the cache is a convenience */
		db_finalize(st->ingest_cache[slot].stmt);
		free(st->ingest_cache[slot].sql);
		free(st->ingest_cache[slot].aux);
	}
	st->ingest_cache[slot].sql = strdup(key);
	st->ingest_cache[slot].hash = key_hash(key);
	st->ingest_cache[slot].aux = NULL;
	if (!st->ingest_cache[slot].sql) {
		db_finalize(*out);
		*out = NULL;
		st->ingest_cache[slot] = st->ingest_cache[--st->ningest_cache];
		return SQLITE_NOMEM;
	}
	st->ingest_cache[slot].stmt = *out;
	return SQLITE_OK;
}

int store__cached_exec(struct store *st, const char *sql)
{
	struct db_stmt *stmt;
	int rc = store__cached_stmt(st, sql, &stmt);

	if (rc == SQLITE_OK) {
		rc = db_step(stmt);
		db_reset(stmt);
	}
	if (rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW)
		return 0;
	return store__errno(st->conn.sq, rc) ? store__errno(st->conn.sq, rc) : -EIO;
}
