/*
 * pg.c - the PostgreSQL engine of db.h over libpq (see pg.h).
 *
 *   loading        libpq.so.5 with dlopen, once
 *   connections    pg_connect, pg_close, pg_exec, the error mapping
 *   statements     parameters kept as text (or binary for blobs), run on
 *                  the first step with PQexecParams, rows read as text
 *                  and converted as SQLite would give them
 *   COPY           a table's rows streamed in COPY's text format (pg_copy_*),
 *                  for the head's ingest: one statement for many rows
 *   pg_translate   `?` / `?N` to `$N`
 *
 * A failed call keeps libpq's message, made one printable line, for
 * store__errmsg.
 *
 * A lost connection (the server crashed or restarted, the primary failed
 * over to a standby) fails the call that found it, and is made anew through
 * the same connection string: at once, then by the next call that needs the
 * server, at most every PG_RECONNECT_MS while it cannot be reached.  With
 * several hosts and target_session_attrs=read-write (docs/postgresql.md)
 * libpq tries them in order and keeps the one that takes writes, so a
 * promoted standby is found by the next batch.  A transaction open when
 * the connection was lost is gone with it, but stays open to the caller
 * (pg_in_transaction) until its ROLLBACK: every other statement fails
 * meanwhile, so that no row goes out alone in autocommit on the new
 * connection and no COMMIT answers success for it.  A COMMIT in a failed
 * transaction (PostgreSQL rolls back and answers success) fails too: a
 * batch is never acknowledged for rows that were not committed.
 */
#include "db/pg.h"

#include <dlfcn.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>
#include <sqlite3.h>

#include "common/fmt.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"

/* Type OIDs of PostgreSQL's catalog (pg_type.dat): fixed since 7.x. */
#define PG_BOOLOID    16
#define PG_BYTEAOID   17
#define PG_INT8OID    20
#define PG_INT2OID    21
#define PG_INT4OID    23
#define PG_TEXTOID    25
#define PG_OIDOID     26
#define PG_FLOAT4OID  700
#define PG_FLOAT8OID  701
#define PG_NUMERICOID 1700

#define PG_FUNCTIONS(X)                                                                            \
	X(PQconnectdbParams)                                                                       \
	X(PQhost)                                                                                  \
	X(PQport)                                                                                  \
	X(PQstatus)                                                                                \
	X(PQerrorMessage)                                                                          \
	X(PQfinish)                                                                                \
	X(PQreset)                                                                                 \
	X(PQexec)                                                                                  \
	X(PQexecParams)                                                                            \
	X(PQresultStatus)                                                                          \
	X(PQresultErrorField)                                                                      \
	X(PQntuples)                                                                               \
	X(PQnfields)                                                                               \
	X(PQfname)                                                                                 \
	X(PQftype)                                                                                 \
	X(PQgetvalue)                                                                              \
	X(PQgetlength)                                                                             \
	X(PQgetisnull)                                                                             \
	X(PQcmdTuples)                                                                             \
	X(PQcmdStatus)                                                                             \
	X(PQserverVersion)                                                                         \
	X(PQclear)                                                                                 \
	X(PQtransactionStatus)                                                                     \
	X(PQsetNoticeProcessor)                                                                    \
	X(PQresultErrorMessage)                                                                    \
	X(PQprepare)                                                                               \
	X(PQexecPrepared)                                                                          \
	X(PQsendQueryParams)                                                                       \
	X(PQsendQueryPrepared)                                                                     \
	X(PQgetResult)                                                                             \
	X(PQenterPipelineMode)                                                                     \
	X(PQexitPipelineMode)                                                                      \
	X(PQpipelineSync)                                                                          \
	X(PQputCopyData)                                                                           \
	X(PQputCopyEnd)

static struct {
#define PG_DECLARE(name) __typeof__(name) *name;
	PG_FUNCTIONS(PG_DECLARE)
#undef PG_DECLARE
} pq;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_err[256];

static void load(void)
{
	const char *name = getenv("JOBSCOPE_PQ_LIBRARY"); /* tests: another path */
	void *dl = dlopen(name && name[0] ? name : "libpq.so.5", RTLD_NOW | RTLD_LOCAL);

	if (!dl) {
		snprintf(load_err, sizeof(load_err),
			 "a PostgreSQL store needs libpq5 (%s): apt-get install libpq5", dlerror());
		return;
	}
#define PG_RESOLVE(fn)                                                                             \
	pq.fn = (__typeof__(pq.fn))dlsym(dl, #fn);                                                 \
	if (!pq.fn)                                                                                \
		goto out_missing;
	PG_FUNCTIONS(PG_RESOLVE)
#undef PG_RESOLVE
	return;
out_missing:
	snprintf(load_err, sizeof(load_err), "libpq is older than 14 (%s): apt-get install libpq5",
		 dlerror());
	memset(&pq, 0, sizeof(pq));
	dlclose(dl);
}

/* INSERTs sent ahead before their results are read (pipeline mode): at most these. */
#define PG_PIPELINE_MAX 256
/* A lost connection is tried again at most this often while the server cannot be reached. */
#define PG_RECONNECT_MS 250
/* COPY's rows are sent (PQputCopyData) whenever this much is buffered, at a row's end. */
#define PG_COPY_CHUNK (256 * 1024)

struct pg_conn {
	PGconn *conn;
	int64_t changes;
	bool pipeline; /* in pipeline mode, with pending results not read yet */
	int pending;
	int gen;	/* connections made anew: prepared statements are gone after one */
	int nprepared;	/* names js1, js2, ... */
	bool lost;	/* the connection broke and was not made again yet */
	bool in_tx;	/* a transaction was open after the last statement */
	bool tx_broken; /* it was open when the connection broke: ROLLBACK is all that runs */
	int64_t lost_ns, next_try_ns; /* time_mono_ns: when it broke, when to try again */
	char on_connect[512];	      /* a session's settings, set again after each reset */
	int last_fail;		      /* result_code's last answer (pg_take_failure) */
	char err[512];
	/* COPY FROM STDIN in progress (pg_copy_begin to pg_copy_end) */
	bool copying;
	bool copy_field; /* the row has a field: the next one is after a tab */
	int copy_err;	 /* the first failure putting rows, said by pg_copy_end */
	char *copy_buf;	 /* rows not sent yet: at most PG_COPY_CHUNK and one row */
	size_t copy_len, copy_alloc;
};

struct pg_param {
	char *val; /* NULL: SQL NULL */
	int len;
	int fmt; /* 0 text, 1 binary */
	Oid type;
	bool owned;
	char num[32];
};

struct pg_stmt {
	struct pg_conn *c;
	char *sql;
	int nparams;
	bool persistent; /* prepared on the server once (PQprepare), run many times */
	bool unpreparable;
	int prepared_gen; /* c->gen when prepared; 0: not prepared */
	char name[16];
	bool deferrable; /* an INSERT without RETURNING, SAVEPOINT, RELEASE: sent ahead in a
			    transaction */
	bool begin;	 /* BEGIN: sent ahead too, with what follows it */
	bool commit;	 /* COMMIT or END: refused outside a sound transaction (commit_refused) */
	bool rollback;	 /* ROLLBACK: all that runs in a transaction lost (broken_tx) */
	bool *used;	 /* by parameter: the SQL names it (PostgreSQL types no other) */
	bool readonly;
	struct pg_param *p;
	const char **vals;
	int *lens, *fmts;
	Oid *types;
	PGresult *res;
	bool ran;
	int row, nrows;
	unsigned char *blob; /* the last bytea column decoded: row blob_row, column blob_col */
	size_t blob_len;
	int blob_row, blob_col;
};

bool pg_is_url(const char *s)
{
	return s && (strncmp(s, "postgresql://", 13) == 0 || strncmp(s, "postgres://", 11) == 0);
}

/* libpq's messages end in newlines and may span lines: one printable line. */
static void keep_error(struct pg_conn *c, const char *msg)
{
	size_t n;

	fmt_printable(c->err, sizeof(c->err), msg ? msg : "");
	for (n = strlen(c->err); n > 0 && c->err[n - 1] == ' '; n--)
		c->err[n - 1] = '\0';
}

static void quiet_notice(void *arg, const char *message)
{
	(void)arg;
	log_debug("postgresql: %s", message);
}

/*
 * libpq's defaults for a head, which the URL's own parameters override (they
 * come after them, in the expanded dbname): a server that cannot be reached
 * (a host down, its packets dropped) costs a bounded wait, not the kernel's
 * two minutes per host, and a connection whose server died without a word
 * is found by TCP keepalives within a minute.
 */
static const char *const pg_keys[] = {"connect_timeout",  "keepalives_idle", "keepalives_interval",
				      "keepalives_count", "dbname",	     NULL};

int pg_connect(const char *url, struct pg_conn **out, char *err, size_t size)
{
	const char *const vals[] = {"10", "30", "10", "3", url, NULL};
	struct pg_conn *c;

	pthread_once(&load_once, load);
	if (!pq.PQconnectdbParams) {
		snprintf(err, size, "%s", load_err);
		return -ENOENT;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, size, "out of memory");
		return -ENOMEM;
	}
	/* expand_dbname: url is a connection string (any libpq URI or key=value form) */
	c->conn = pq.PQconnectdbParams(pg_keys, vals, 1);
	if (!c->conn || pq.PQstatus(c->conn) != CONNECTION_OK) {
		keep_error(c, c->conn ? pq.PQerrorMessage(c->conn) : "out of memory");
		snprintf(err, size, "%s", c->err);
		pg_close(c);
		return -ECONNREFUSED;
	}
	pq.PQsetNoticeProcessor(c->conn, quiet_notice, NULL);
	*out = c;
	return 0;
}

void pg_close(struct pg_conn *c)
{
	if (!c)
		return;
	if (c->conn)
		pq.PQfinish(c->conn);
	free(c->copy_buf);
	free(c);
}

const char *pg_errmsg(struct pg_conn *c)
{
	return c->err;
}

/*
 * The session's settings on a connection just made again: a new session has
 * the server's defaults.  A failure is said: the setting is the writer's
 * durability (pg_on_connect), not a detail.
 */
static void apply_on_connect(struct pg_conn *c)
{
	PGresult *res;

	if (!c->on_connect[0] || pq.PQstatus(c->conn) != CONNECTION_OK)
		return;
	res = pq.PQexec(c->conn, c->on_connect);
	if (!res || pq.PQresultStatus(res) != PGRES_COMMAND_OK)
		log_warn(0, "postgresql: '%s' failed on the new connection: %s", c->on_connect,
			 pq.PQerrorMessage(c->conn));
	pq.PQclear(res);
}

/* Which server a connection is on, for the log: "127.0.0.1:5432". */
static void server_name(struct pg_conn *c, char *buf, size_t size)
{
	const char *host = pq.PQhost(c->conn), *port = pq.PQport(c->conn);

	snprintf(buf, size, "%s:%s", host && host[0] ? host : "?", port && port[0] ? port : "?");
}

/*
 * Makes a lost connection anew through the same connection string (PQreset:
 * libpq tries the hosts from the first again), unless it was tried less
 * than PG_RECONNECT_MS ago.  The statements prepared on the old connection
 * are gone with it (gen) and the session's settings are set again.
 */
static void reconnect(struct pg_conn *c)
{
	int64_t t = time_mono_ns();
	char where[128];

	if (t < c->next_try_ns)
		return;
	c->next_try_ns = t + (int64_t)PG_RECONNECT_MS * 1000000;
	pq.PQreset(c->conn);
	if (pq.PQstatus(c->conn) != CONNECTION_OK) {
		keep_error(c, pq.PQerrorMessage(c->conn));
		return;
	}
	c->gen++;
	c->lost = false;
	server_name(c, where, sizeof(where));
	log_info("postgresql: connected again, to %s, %lld ms after the connection was lost", where,
		 (long long)((t - c->lost_ns) / 1000000));
	apply_on_connect(c);
}

/*
 * The connection broke: said once, what was sent ahead is dropped, and it
 * is made anew at once (a server restarted a moment ago answers already);
 * else the next call tries again (conn_ready).
 */
static void conn_lost(struct pg_conn *c)
{
	char where[128];

	if (c->pipeline)
		pq.PQexitPipelineMode(c->conn);
	c->pipeline = false;
	c->pending = 0;
	if (c->in_tx)
		c->tx_broken = true;
	c->in_tx = false;
	if (!c->lost) {
		c->lost = true;
		c->lost_ns = time_mono_ns();
		c->next_try_ns = 0;
		server_name(c, where, sizeof(where));
		log_warn(0, "postgresql: lost the connection to %s (%s): making it again", where,
			 c->err);
	}
	reconnect(c);
}

/*
 * Whether the connection is up, made anew first when it was lost (and it is
 * time to try).  Called before each statement: in_tx is what the ones
 * before left open.
 */
static bool conn_ready(struct pg_conn *c)
{
	if (pq.PQstatus(c->conn) == CONNECTION_OK) {
		PGTransactionStatusType ts = pq.PQtransactionStatus(c->conn);

		c->in_tx = ts != PQTRANS_IDLE && ts != PQTRANS_UNKNOWN;
		return true;
	}
	if (!c->lost) {
		keep_error(c, pq.PQerrorMessage(c->conn));
		conn_lost(c);
	} else {
		reconnect(c);
	}
	return pq.PQstatus(c->conn) == CONNECTION_OK;
}

/* A call that found no connection it could use: c->err says why (libpq's last attempt). */
static int no_connection(struct pg_conn *c)
{
	char why[sizeof(c->err)];

	snprintf(why, sizeof(why), "%s", c->err);
	snprintf(c->err, sizeof(c->err), "no connection to the database (%.470s)", why);
	return SQLITE_IOERR;
}

/*
 * A statement in a transaction lost with its connection (tx_broken): its
 * ROLLBACK ends it (nothing to send: the server rolled it back), anything
 * else fails.  SQLITE_OK for the ROLLBACK, else the failure.
 */
static int broken_tx(struct pg_conn *c, bool rollback)
{
	if (rollback) {
		c->tx_broken = false;
		return SQLITE_OK;
	}
	snprintf(c->err, sizeof(c->err),
		 "the transaction was lost with the connection to the database: nothing of it"
		 " was committed");
	return SQLITE_IOERR;
}

/*
 * A COMMIT that would not commit what the caller wrote: in a failed
 * transaction (PostgreSQL rolls back and answers "ROLLBACK" as a success),
 * or with none open (PostgreSQL only warns).  SQLITE_OK when it may run.
 */
static int commit_refused(struct pg_conn *c)
{
	PGTransactionStatusType ts = pq.PQtransactionStatus(c->conn);

	if (ts == PQTRANS_INTRANS)
		return SQLITE_OK;
	snprintf(c->err, sizeof(c->err), "%s",
		 ts == PQTRANS_INERROR ? "COMMIT of a failed transaction: nothing was committed"
				       : "COMMIT with no transaction open: nothing was committed");
	return ts == PQTRANS_INERROR ? SQLITE_ABORT : SQLITE_IOERR;
}

/* A failed result as an SQLite code, by its SQLSTATE (PostgreSQL's appendix A). */
static int result_code_of(struct pg_conn *c, PGresult *res);

static int result_code(struct pg_conn *c, PGresult *res)
{
	return c->last_fail = result_code_of(c, res);
}

int pg_take_failure(struct pg_conn *c)
{
	int rc = c->last_fail;

	c->last_fail = SQLITE_OK;
	return rc;
}

static int result_code_of(struct pg_conn *c, PGresult *res)
{
	const char *state = res ? pq.PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = res ? pq.PQresultErrorMessage(res) : NULL;

	keep_error(c, msg && msg[0] ? msg : pq.PQerrorMessage(c->conn));
	if (pq.PQstatus(c->conn) == CONNECTION_BAD) {
		conn_lost(c); /* for the next call; this one failed */
		return SQLITE_IOERR;
	}
	if (!state)
		return SQLITE_IOERR;
	if (strcmp(state, "23505") == 0)
		return SQLITE_CONSTRAINT_UNIQUE;
	if (strncmp(state, "23", 2) == 0)
		return SQLITE_CONSTRAINT;
	if (strcmp(state, "53100") == 0)
		return SQLITE_FULL;
	if (strcmp(state, "53200") == 0)
		return SQLITE_NOMEM;
	if (strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0 ||
	    strncmp(state, "58", 2) == 0)
		return SQLITE_IOERR;
	if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 ||
	    strcmp(state, "55P03") == 0)
		return SQLITE_BUSY;
	if (strcmp(state, "57014") == 0)
		return SQLITE_INTERRUPT;
	if (strcmp(state, "42501") == 0)
		return SQLITE_PERM;
	if (strcmp(state, "25006") == 0)
		return SQLITE_READONLY;
	if (strncmp(state, "22", 2) == 0)
		return SQLITE_MISMATCH;
	return SQLITE_ERROR;
}

/* COMMIT or END (TRANSACTION | WORK), as the store writes them. */
static bool is_commit(const char *sql)
{
	while (*sql == ' ' || *sql == '\n' || *sql == '\t')
		sql++;
	return (strncasecmp(sql, "COMMIT", 6) == 0 && !isalnum((unsigned char)sql[6]) &&
		sql[6] != '_') ||
	       (strncasecmp(sql, "END", 3) == 0 && !isalnum((unsigned char)sql[3]) &&
		sql[3] != '_');
}

/* A plain ROLLBACK (not ROLLBACK TO a savepoint). */
static bool is_rollback(const char *sql)
{
	while (*sql == ' ' || *sql == '\n' || *sql == '\t')
		sql++;
	return strcasecmp(sql, "ROLLBACK") == 0;
}

/* SQLite's locking modes: PostgreSQL's writers lock rows, not the database. */
static const char *plain_begin(const char *sql)
{
	if (strcmp(sql, "BEGIN IMMEDIATE") == 0 || strcmp(sql, "BEGIN DEFERRED") == 0)
		return "BEGIN";
	return sql;
}

/*
 * The results of what was sent in the pipeline, up to its sync, and out of
 * pipeline mode: SQLITE_OK, or the first one's failure (the later ones
 * were skipped by the server, and the transaction is to be rolled back, as
 * after any failed statement).  last (not NULL): the last query's result
 * is kept there when every one succeeded (the caller clears it), NULL when
 * it failed.
 */
static int pipeline_read(struct pg_conn *c, PGresult **last)
{
	int rc = SQLITE_OK, empty = 0, left = c->pending + (last ? 1 : 0);

	if (last)
		*last = NULL;
	for (;;) {
		PGresult *res = pq.PQgetResult(c->conn);
		ExecStatusType status;

		if (!res) {
			/* one NULL after each query's result; more: the connection is gone */
			if (++empty > 2 || pq.PQstatus(c->conn) == CONNECTION_BAD) {
				if (last) {
					pq.PQclear(*last);
					*last = NULL;
				}
				return rc != SQLITE_OK ? rc : result_code(c, NULL);
			}
			continue;
		}
		empty = 0;
		status = pq.PQresultStatus(res);
		if (status == PGRES_PIPELINE_SYNC) {
			pq.PQclear(res);
			break;
		}
		if (status == PGRES_FATAL_ERROR && rc == SQLITE_OK)
			rc = result_code(c, res);
		if (last && --left == 0 && rc == SQLITE_OK &&
		    (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK)) {
			*last = res;
			res = NULL;
		}
		pq.PQclear(res);
		if (!c->pipeline) {
			/* result_code found the connection broken and reset it */
			if (last) {
				pq.PQclear(*last);
				*last = NULL;
			}
			return rc;
		}
	}
	pq.PQexitPipelineMode(c->conn);
	c->pipeline = false;
	c->pending = 0;
	if (rc != SQLITE_OK && last) {
		pq.PQclear(*last);
		*last = NULL;
	}
	return rc;
}

/* The INSERTs sent ahead, their results read: see pipeline_read. */
int pg_flush(struct pg_conn *c)
{
	if (!c->pipeline)
		return SQLITE_OK;
	if (!pq.PQpipelineSync(c->conn))
		return result_code(c, NULL);
	return pipeline_read(c, NULL);
}

int pg_exec(struct pg_conn *c, const char *sql)
{
	PGresult *res;
	ExecStatusType status;
	int rc = pg_flush(c);

	if (rc != SQLITE_OK)
		return rc;
	if (c->tx_broken)
		return broken_tx(c, is_rollback(sql));
	if (!conn_ready(c))
		return no_connection(c);
	if (is_commit(sql) && (rc = commit_refused(c)) != SQLITE_OK)
		return rc;
	res = pq.PQexec(c->conn, plain_begin(sql));
	status = res ? pq.PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
		rc = result_code(c, res);
	pq.PQclear(res);
	return rc;
}

int pg_on_connect(struct pg_conn *c, const char *sql)
{
	size_t len = strlen(c->on_connect);
	int n;

	/* added to those said before (each caller's settings), never in their place */
	n = snprintf(c->on_connect + len, sizeof(c->on_connect) - len, "%s%s", len ? "; " : "",
		     sql);
	if (n < 0 || (size_t)n >= sizeof(c->on_connect) - len) {
		c->on_connect[len] = '\0';
		return SQLITE_TOOBIG;
	}
	return pg_exec(c, sql);
}

int pg_server_version(struct pg_conn *c)
{
	return pq.PQserverVersion(c->conn);
}

int pg_generation(const struct pg_conn *c)
{
	return c->gen;
}

int64_t pg_changes(struct pg_conn *c)
{
	return c->changes;
}

bool pg_in_transaction(struct pg_conn *c)
{
	PGTransactionStatusType ts = pq.PQtransactionStatus(c->conn);

	/* one lost with its connection is open until its ROLLBACK (broken_tx) */
	return c->tx_broken || (ts != PQTRANS_IDLE && ts != PQTRANS_UNKNOWN);
}

int pg_translate(const char *sql, char *out, size_t size, int *nparams)
{
	size_t n = 0;
	char quote = 0;
	int max = 0;

	for (const char *p = sql; *p; p++) {
		char num[16];
		const char *add = NULL;
		size_t len;

		if (quote) {
			if (*p == quote)
				quote = 0; /* a doubled quote reopens at once */
		} else if (*p == '\'' || *p == '"') {
			quote = *p;
		} else if (*p == '?') {
			long k;

			if (p[1] >= '0' && p[1] <= '9') {
				char *end;

				k = strtol(p + 1, &end, 10);
				p = end - 1;
			} else {
				k = max + 1;
			}
			if (k < 1 || k > 32766)
				return -EINVAL;
			if (k > max)
				max = (int)k;
			snprintf(num, sizeof(num), "$%ld", k);
			add = num;
		}
		if (!add) {
			num[0] = *p;
			num[1] = '\0';
			add = num;
		}
		len = strlen(add);
		if (n + len >= size)
			return -ENAMETOOLONG;
		memcpy(out + n, add, len);
		n += len;
	}
	out[n] = '\0';
	*nparams = max;
	return 0;
}

int pg_prepare(struct pg_conn *c, const char *sql, bool persistent, struct pg_stmt **out)
{
	struct pg_stmt *s = calloc(1, sizeof(*s));
	size_t size = strlen(sql) * 2 + 16; /* "?" -> "$32766" at worst doubles and more */
	const char *p;
	bool inserts;
	int ret;

	*out = NULL;
	if (!s || !(s->sql = malloc(size + 64)))
		goto out_nomem;
	ret = pg_translate(plain_begin(sql), s->sql, size + 64, &s->nparams);
	if (ret) {
		snprintf(c->err, sizeof(c->err), "cannot translate SQL for PostgreSQL: %s",
			 strerror(-ret));
		pg_finalize(s);
		return SQLITE_ERROR;
	}
	s->c = c;
	s->blob_row = -1;
	if (s->nparams > 0) {
		size_t np = (size_t)s->nparams;

		s->p = calloc(np, sizeof(*s->p));
		s->vals = calloc(np, sizeof(*s->vals));
		s->lens = calloc(np, sizeof(*s->lens));
		s->fmts = calloc(np, sizeof(*s->fmts));
		s->types = calloc(np, sizeof(*s->types));
		s->used = calloc(np, sizeof(*s->used));
		if (!s->p || !s->vals || !s->lens || !s->fmts || !s->types || !s->used)
			goto out_nomem;
		for (p = strchr(s->sql, '$'); p; p = strchr(p + 1, '$')) {
			long k = strtol(p + 1, NULL, 10);

			if (k >= 1 && k <= s->nparams)
				s->used[k - 1] = true;
		}
	}
	for (p = sql; *p == ' ' || *p == '\n' || *p == '\t' || *p == '('; p++)
		;
	/* WITH x AS (INSERT ...) INSERT ...: several tables' INSERTs in one statement */
	inserts = strncasecmp(p, "INSERT", 6) == 0 ||
		  (strncasecmp(p, "WITH", 4) == 0 && strcasestr(p, " AS (INSERT INTO "));
	s->readonly =
	    !inserts && (strncasecmp(p, "SELECT", 6) == 0 || strncasecmp(p, "WITH", 4) == 0);
	/* and a savepoint set or released: its failure is the transaction's, read at the flush */
	s->deferrable = (inserts && !strcasestr(p, "RETURNING")) ||
			strncasecmp(p, "SAVEPOINT", 9) == 0 || strncasecmp(p, "RELEASE", 7) == 0;
	s->begin = strncasecmp(p, "BEGIN", 5) == 0 && !isalnum((unsigned char)p[5]);
	s->commit = is_commit(p);
	s->rollback = is_rollback(p);
	s->persistent = persistent;
	*out = s;
	return SQLITE_OK;
out_nomem:
	pg_finalize(s);
	snprintf(c->err, sizeof(c->err), "out of memory");
	return SQLITE_NOMEM;
}

void pg_reset(struct pg_stmt *s)
{
	if (s->res)
		pq.PQclear(s->res);
	s->res = NULL;
	s->ran = false;
	s->row = s->nrows = 0;
	s->blob_row = -1;
}

static void param_clear(struct pg_param *p)
{
	if (p->owned)
		free(p->val);
	memset(p, 0, sizeof(*p));
}

void pg_clear_bindings(struct pg_stmt *s)
{
	for (int i = 0; i < s->nparams; i++)
		param_clear(&s->p[i]);
}

void pg_finalize(struct pg_stmt *s)
{
	if (!s)
		return;
	pg_reset(s);
	if (s->p)
		pg_clear_bindings(s);
	free(s->p);
	free(s->vals);
	free(s->lens);
	free(s->fmts);
	free(s->types);
	free(s->used);
	free(s->blob);
	free(s->sql);
	free(s);
}

static struct pg_param *param(struct pg_stmt *s, int i)
{
	if (i < 1 || i > s->nparams)
		return NULL;
	param_clear(&s->p[i - 1]);
	return &s->p[i - 1];
}

int pg_bind_int64(struct pg_stmt *s, int i, int64_t v)
{
	struct pg_param *p = param(s, i);

	if (!p)
		return SQLITE_RANGE;
	snprintf(p->num, sizeof(p->num), "%" PRId64, v);
	p->val = p->num;
	p->type = PG_INT8OID;
	return SQLITE_OK;
}

/* A double as float8in reads it back bit for bit (17 digits), NaN and infinities spelled out. */
int pg_format_double(char *buf, size_t size, double v)
{
	if (isnan(v))
		return snprintf(buf, size, "NaN");
	if (isinf(v))
		return snprintf(buf, size, "%sInfinity", v < 0 ? "-" : "");
	return snprintf(buf, size, "%.17g", v);
}

static int bind_copy(struct pg_stmt *s, int i, const void *v, size_t n, int fmt, Oid type);

int pg_bind_binary(struct pg_stmt *s, int i, const void *v, size_t n, unsigned type)
{
	return bind_copy(s, i, v, n, 1, (Oid)type);
}

int pg_bind_double(struct pg_stmt *s, int i, double v)
{
	struct pg_param *p = param(s, i);

	if (!p)
		return SQLITE_RANGE;
	pg_format_double(p->num, sizeof(p->num), v);
	p->val = p->num;
	p->type = PG_FLOAT8OID;
	return SQLITE_OK;
}

int pg_bind_null(struct pg_stmt *s, int i)
{
	return param(s, i) ? SQLITE_OK : SQLITE_RANGE;
}

static int bind_copy(struct pg_stmt *s, int i, const void *v, size_t n, int fmt, Oid type)
{
	struct pg_param *p = param(s, i);

	if (!p)
		return SQLITE_RANGE;
	if (!v)
		return SQLITE_OK; /* NULL */
	p->val = malloc(n + 1);
	if (!p->val)
		return SQLITE_NOMEM;
	memcpy(p->val, v, n);
	p->val[n] = '\0';
	p->owned = true;
	p->len = (int)n;
	p->fmt = fmt;
	p->type = type;
	return SQLITE_OK;
}

int pg_bind_text(struct pg_stmt *s, int i, const char *v, int n)
{
	return bind_copy(s, i, v, v ? (n < 0 ? strlen(v) : (size_t)n) : 0, 0, PG_TEXTOID);
}

int pg_bind_blob(struct pg_stmt *s, int i, const void *v, int n)
{
	return bind_copy(s, i, v ? v : "", n > 0 ? (size_t)n : 0, 1, PG_BYTEAOID);
}

int pg_bind_parameter_count(struct pg_stmt *s)
{
	return s->nparams;
}

bool pg_stmt_readonly(struct pg_stmt *s)
{
	return s->readonly;
}

/*
 * A persistent statement is prepared on the server the first time it runs
 * (and again after a reset of the connection): parsed and planned once.
 * One whose parameters the server cannot type from the SQL alone is run
 * with PQexecParams, typed by what is bound, as the others are.
 */
static void prepare_on_server(struct pg_stmt *s)
{
	PGresult *res;

	if (!s->persistent || s->unpreparable || s->prepared_gen == s->c->gen + 1)
		return;
	snprintf(s->name, sizeof(s->name), "js%d", ++s->c->nprepared);
	res = pq.PQprepare(s->c->conn, s->name, s->sql, s->nparams, NULL);
	if (res && pq.PQresultStatus(res) == PGRES_COMMAND_OK) {
		s->prepared_gen = s->c->gen + 1;
	} else {
		const char *state = res ? pq.PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

		/* its SQL, not the moment (an aborted transaction): never again */
		s->unpreparable = state && strncmp(state, "42", 2) == 0;
	}
	pq.PQclear(res);
}

/* An INSERT sent ahead in pipeline mode: its failure is read by pg_flush. */
static int send_ahead(struct pg_stmt *s)
{
	struct pg_conn *c = s->c;
	int sent;

	if (!c->pipeline) {
		if (!pq.PQenterPipelineMode(c->conn))
			return result_code(c, NULL);
		c->pipeline = true;
	}
	if (s->prepared_gen == c->gen + 1)
		sent = pq.PQsendQueryPrepared(c->conn, s->name, s->nparams, s->vals, s->lens,
					      s->fmts, 0);
	else
		sent = pq.PQsendQueryParams(c->conn, s->sql, s->nparams, s->types, s->vals, s->lens,
					    s->fmts, 0);
	if (!sent)
		return result_code(c, NULL);
	c->changes = 1;
	s->nrows = 0;
	s->row = -1;
	/* the server's answers must not pile up unread: both sides would block */
	if (++c->pending >= PG_PIPELINE_MAX)
		return pg_flush(c);
	return SQLITE_OK;
}

/*
 * A statement whose result is read, while statements sent ahead wait in
 * the pipeline: it goes in the pipeline too, and one sync reads them all
 * (one round trip, not a sync and then the statement).  The first failure
 * is the result: the server skipped what came after it.  A COMMIT that
 * found its transaction failed answers "ROLLBACK": refused as
 * commit_refused would have.
 */
static int pipeline_last(struct pg_stmt *s)
{
	struct pg_conn *c = s->c;
	PGresult *mine;
	int rc;

	if (!pq.PQsendQueryPrepared(c->conn, s->name, s->nparams, s->vals, s->lens, s->fmts, 0) ||
	    !pq.PQpipelineSync(c->conn))
		return result_code(c, NULL);
	rc = pipeline_read(c, &mine);
	if (rc == SQLITE_OK && !mine)
		rc = result_code(c, NULL);
	if (rc == SQLITE_OK && s->commit && strncmp(pq.PQcmdStatus(mine), "COMMIT", 6) != 0) {
		snprintf(c->err, sizeof(c->err),
			 "COMMIT of a failed transaction: nothing was committed");
		rc = SQLITE_ABORT;
	}
	if (rc != SQLITE_OK) {
		pq.PQclear(mine);
		return rc;
	}
	s->res = mine;
	return SQLITE_OK;
}

int pg_step(struct pg_stmt *s)
{
	if (!s->ran) {
		ExecStatusType status;
		bool ahead;
		int rc;

		for (int i = 0; i < s->nparams; i++) {
			s->vals[i] = s->p[i].val;
			s->lens[i] = s->p[i].len;
			s->fmts[i] = s->p[i].fmt;
			/* NULL: typed by where it is used; a number no SQL names must be typed */
			s->types[i] = s->p[i].val ? s->p[i].type : s->used[i] ? 0 : PG_TEXTOID;
		}
		s->ran = true;
		if (s->c->tx_broken) {
			rc = broken_tx(s->c, s->rollback);
			return rc != SQLITE_OK ? rc : SQLITE_DONE;
		}
		if (!conn_ready(s->c))
			return no_connection(s->c);
		/* a BEGIN goes with what follows it: the transaction's first statements */
		ahead = s->begin
			    ? pq.PQtransactionStatus(s->c->conn) == PQTRANS_IDLE
			    : s->deferrable && pq.PQtransactionStatus(s->c->conn) != PQTRANS_IDLE;
		if (!ahead && s->c->pipeline && s->prepared_gen == s->c->gen + 1) {
			rc = pipeline_last(s);
			if (rc != SQLITE_OK)
				return rc;
		} else {
			if (!ahead || s->prepared_gen != s->c->gen + 1) {
				rc = pg_flush(s->c);
				if (rc != SQLITE_OK)
					return rc;
				if (s->commit && (rc = commit_refused(s->c)) != SQLITE_OK)
					return rc;
				prepare_on_server(s);
			}
			if (ahead) {
				rc = send_ahead(s);
				return rc != SQLITE_OK ? rc : SQLITE_DONE;
			}
			if (s->prepared_gen == s->c->gen + 1)
				s->res = pq.PQexecPrepared(s->c->conn, s->name, s->nparams, s->vals,
							   s->lens, s->fmts, 0);
			else
				s->res = pq.PQexecParams(s->c->conn, s->sql, s->nparams, s->types,
							 s->vals, s->lens, s->fmts, 0);
		}
		status = s->res ? pq.PQresultStatus(s->res) : PGRES_FATAL_ERROR;
		if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
			rc = result_code(s->c, s->res);
			pq.PQclear(s->res);
			s->res = NULL;
			return rc;
		}
		s->c->changes = strtoll(pq.PQcmdTuples(s->res), NULL, 10);
		s->nrows = status == PGRES_TUPLES_OK ? pq.PQntuples(s->res) : 0;
		s->row = -1;
	}
	if (s->row < s->nrows)
		s->row++;
	return s->row < s->nrows ? SQLITE_ROW : SQLITE_DONE;
}

static bool has_value(struct pg_stmt *s, int c)
{
	return s->res && s->row >= 0 && s->row < s->nrows && c >= 0 && c < pq.PQnfields(s->res) &&
	       !pq.PQgetisnull(s->res, s->row, c);
}

int pg_column_count(struct pg_stmt *s)
{
	return s->res ? pq.PQnfields(s->res) : 0;
}

const char *pg_column_name(struct pg_stmt *s, int c)
{
	return s->res && c >= 0 && c < pq.PQnfields(s->res) ? pq.PQfname(s->res, c) : NULL;
}

/* A number's text with a fraction or exponent (or NaN, Infinity): a float. */
static bool text_is_float(const char *v)
{
	return strpbrk(v, ".eEIN") != NULL;
}

int pg_column_type(struct pg_stmt *s, int c)
{
	if (!has_value(s, c))
		return SQLITE_NULL;
	switch (pq.PQftype(s->res, c)) {
	case PG_BOOLOID:
	case PG_INT2OID:
	case PG_INT4OID:
	case PG_INT8OID:
	case PG_OIDOID:
		return SQLITE_INTEGER;
	case PG_FLOAT4OID:
	case PG_FLOAT8OID:
		return SQLITE_FLOAT;
	case PG_NUMERICOID:
		return text_is_float(pq.PQgetvalue(s->res, s->row, c)) ? SQLITE_FLOAT
								       : SQLITE_INTEGER;
	case PG_BYTEAOID:
		return SQLITE_BLOB;
	default:
		return SQLITE_TEXT;
	}
}

int64_t pg_column_int64(struct pg_stmt *s, int c)
{
	const char *v;

	if (!has_value(s, c))
		return 0;
	v = pq.PQgetvalue(s->res, s->row, c);
	if (pq.PQftype(s->res, c) == PG_BOOLOID)
		return v[0] == 't';
	if (text_is_float(v)) {
		double d = strtod(v, NULL);

		return isfinite(d) && fabs(d) < 9.2e18 ? (int64_t)d : 0;
	}
	return strtoll(v, NULL, 10);
}

double pg_column_double(struct pg_stmt *s, int c)
{
	const char *v;

	if (!has_value(s, c))
		return 0.0;
	v = pq.PQgetvalue(s->res, s->row, c);
	if (pq.PQftype(s->res, c) == PG_BOOLOID)
		return v[0] == 't';
	return strtod(v, NULL);
}

const unsigned char *pg_column_text(struct pg_stmt *s, int c)
{
	const char *v;

	if (!has_value(s, c))
		return NULL;
	v = pq.PQgetvalue(s->res, s->row, c);
	if (pq.PQftype(s->res, c) == PG_BOOLOID)
		return (const unsigned char *)(v[0] == 't' ? "1" : "0");
	return (const unsigned char *)v;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* bytea's text form is "\x" and two hex digits a byte (bytea_output = hex, the default). */
const void *pg_column_blob(struct pg_stmt *s, int c)
{
	const char *v;
	size_t len, n;

	if (!has_value(s, c))
		return NULL;
	v = pq.PQgetvalue(s->res, s->row, c);
	len = (size_t)pq.PQgetlength(s->res, s->row, c);
	if (pq.PQftype(s->res, c) != PG_BYTEAOID || len < 2 || v[0] != '\\' || v[1] != 'x') {
		s->blob_len = len;
		return v;
	}
	if (s->blob && s->blob_row == s->row && s->blob_col == c)
		return s->blob;
	n = (len - 2) / 2;
	free(s->blob);
	s->blob = malloc(n ? n : 1);
	s->blob_len = 0;
	if (!s->blob)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(v[2 + 2 * i]), lo = hexval(v[3 + 2 * i]);

		if (hi < 0 || lo < 0)
			return NULL;
		s->blob[i] = (unsigned char)(hi << 4 | lo);
	}
	s->blob_len = n;
	s->blob_row = s->row;
	s->blob_col = c;
	return s->blob;
}

int pg_column_bytes(struct pg_stmt *s, int c)
{
	if (!has_value(s, c))
		return 0;
	if (pq.PQftype(s->res, c) == PG_BYTEAOID) {
		pg_column_blob(s, c);
		return (int)s->blob_len;
	}
	if (pq.PQftype(s->res, c) == PG_BOOLOID)
		return 1;
	return pq.PQgetlength(s->res, s->row, c);
}

/*
 * COPY ... FROM STDIN, text format: the head's ingest sends a table's rows
 * of a batch as one statement, where an INSERT a row costs the server a
 * protocol message, an executor start and a partition lookup each.  The
 * fields are written as the INSERTs' text parameters were (the column's
 * input function reads both alike), escaped for COPY: backslash, newline,
 * carriage return and tab as \\, \n, \r, \t; NULL as \N.  Only in a
 * transaction: a COPY in autocommit would commit its rows alone.
 */
int pg_copy_begin(struct pg_conn *c, const char *sql)
{
	PGresult *res;
	int rc = pg_flush(c);

	if (rc != SQLITE_OK)
		return rc;
	if (c->copying) {
		snprintf(c->err, sizeof(c->err), "a COPY is in progress already");
		return SQLITE_MISUSE;
	}
	if (c->tx_broken)
		return broken_tx(c, false);
	if (!conn_ready(c))
		return no_connection(c);
	if (pq.PQtransactionStatus(c->conn) != PQTRANS_INTRANS) {
		snprintf(c->err, sizeof(c->err), "COPY outside a sound transaction: not sent");
		return SQLITE_MISUSE;
	}
	res = pq.PQexec(c->conn, sql);
	if (!res || pq.PQresultStatus(res) != PGRES_COPY_IN) {
		rc = result_code(c, res);
		pq.PQclear(res);
		/* a COPY that did not start is done: nothing more to read of it */
		while (pq.PQstatus(c->conn) == CONNECTION_OK && (res = pq.PQgetResult(c->conn)))
			pq.PQclear(res);
		return rc != SQLITE_OK ? rc : SQLITE_ERROR;
	}
	pq.PQclear(res);
	c->copying = true;
	c->copy_field = false;
	c->copy_err = SQLITE_OK;
	c->copy_len = 0;
	return SQLITE_OK;
}

/* Room for a field of up to n bytes (and its tab) at the end of the buffer. */
static char *copy_room(struct pg_conn *c, size_t n)
{
	char *p;

	if (c->copy_err != SQLITE_OK)
		return NULL;
	if (c->copy_len + n + 2 > c->copy_alloc) {
		size_t alloc = c->copy_alloc ? c->copy_alloc : PG_COPY_CHUNK + 4096;
		char *buf;

		while (c->copy_len + n + 2 > alloc)
			alloc *= 2;
		buf = realloc(c->copy_buf, alloc);
		if (!buf) {
			c->copy_err = SQLITE_NOMEM;
			return NULL;
		}
		c->copy_buf = buf;
		c->copy_alloc = alloc;
	}
	p = c->copy_buf + c->copy_len;
	if (c->copy_field)
		*p++ = '\t';
	c->copy_field = true;
	return p;
}

static void copy_put(struct pg_conn *c, const char *v, size_t n)
{
	char *p = copy_room(c, n);

	if (!p)
		return;
	memcpy(p, v, n);
	c->copy_len = (size_t)(p + n - c->copy_buf);
}

void pg_copy_int64(struct pg_conn *c, int64_t v)
{
	char tmp[24], *p = tmp + sizeof(tmp);
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	copy_put(c, p, (size_t)(tmp + sizeof(tmp) - p));
}

void pg_copy_double(struct pg_conn *c, double v)
{
	char tmp[32];
	int n = pg_format_double(tmp, sizeof(tmp), v);

	copy_put(c, tmp, (size_t)n);
}

void pg_copy_null(struct pg_conn *c)
{
	copy_put(c, "\\N", 2);
}

void pg_copy_text(struct pg_conn *c, const char *v, size_t n)
{
	char *p = copy_room(c, 2 * n); /* every byte escaped at worst */

	if (!p)
		return;
	for (size_t i = 0; i < n; i++) {
		char ch = v[i];

		switch (ch) {
		case '\\':
			*p++ = '\\';
			*p++ = '\\';
			break;
		case '\n':
			*p++ = '\\';
			*p++ = 'n';
			break;
		case '\r':
			*p++ = '\\';
			*p++ = 'r';
			break;
		case '\t':
			*p++ = '\\';
			*p++ = 't';
			break;
		default:
			*p++ = ch;
		}
	}
	c->copy_len = (size_t)(p - c->copy_buf);
}

/* The buffered rows to the server; false (copy_err set) when they could not go. */
static bool copy_send(struct pg_conn *c)
{
	if (c->copy_len == 0)
		return true;
	if (pq.PQputCopyData(c->conn, c->copy_buf, (int)c->copy_len) != 1) {
		c->copy_err = result_code(c, NULL);
		return false;
	}
	c->copy_len = 0;
	return true;
}

void pg_copy_row_end(struct pg_conn *c)
{
	char *p;

	if (c->copy_err != SQLITE_OK)
		return;
	c->copy_field = false;
	p = copy_room(c, 0); /* no tab: copy_field is false */
	if (!p)
		return;
	*p = '\n';
	c->copy_len++;
	c->copy_field = false;
	if (c->copy_len >= PG_COPY_CHUNK)
		copy_send(c);
}

int pg_copy_end(struct pg_conn *c, const char *fail, int64_t *rows)
{
	PGresult *res;
	int rc = SQLITE_OK;

	*rows = 0;
	if (!c->copying) {
		snprintf(c->err, sizeof(c->err), "no COPY in progress");
		return SQLITE_MISUSE;
	}
	c->copying = false;
	if (!fail && c->copy_err == SQLITE_NOMEM)
		fail = "out of memory";
	if (!fail && c->copy_err == SQLITE_OK)
		copy_send(c);
	c->copy_len = 0;
	/* a send that failed found the connection lost (conn_lost): the COPY is gone with it */
	if (c->copy_err != SQLITE_OK && c->copy_err != SQLITE_NOMEM)
		return c->copy_err;
	if (pq.PQstatus(c->conn) != CONNECTION_OK)
		return result_code(c, NULL);
	if (pq.PQputCopyEnd(c->conn, fail) != 1)
		return result_code(c, NULL);
	while ((res = pq.PQgetResult(c->conn))) {
		ExecStatusType status = pq.PQresultStatus(res);

		if (status == PGRES_COMMAND_OK)
			*rows = strtoll(pq.PQcmdTuples(res), NULL, 10);
		else if (rc == SQLITE_OK)
			rc = result_code(c, res);
		pq.PQclear(res);
		if (pq.PQstatus(c->conn) != CONNECTION_OK)
			break;
	}
	if (rc == SQLITE_OK && c->copy_err != SQLITE_OK)
		rc = c->copy_err;
	if (rc == SQLITE_OK && fail) {
		snprintf(c->err, sizeof(c->err), "COPY given up: %s", fail);
		rc = SQLITE_ABORT;
	}
	c->changes = *rows;
	return rc;
}
