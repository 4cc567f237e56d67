/*
 * open.c - opening and closing a store: the file judged from its raw
 * header before SQLite may touch it (so a file that is not ours is never
 * modified), the schema checked, the writer set up; and the meta table.
 *
 *   mkdir_parents, store_check_file   the file before SQLite opens it
 *   store_setup_writer                WAL (retried while another opener
 *                                     switches), synchronous, seq
 *   remove_created_siblings           -wal and -shm left by a refused open
 *   store_open, store_close, store_set_durable, store_path
 *   store_meta_get, store_meta_set
 */
#include "store/conn.h"
#include "db/pg.h"
#include "store/packs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "store/schema.h"
#include "store/writer.h"
#include "store/write.h"

#define SQLITE_HEADER_SIZE	     100
#define SQLITE_MAGIC		     "SQLite format 3" /* 16 bytes with its NUL */
#define SQLITE_USER_VERSION_OFFSET   60		       /* big-endian i32 */
#define SQLITE_APPLICATION_ID_OFFSET 68		       /* big-endian u32 */
#define STORE_BUSY_TIMEOUT_MS	     5000
#define WAL_SWITCH_RETRY_MS	     20 /* plus up to as much again, so two openers part */

static int mkdir_parents(const char *path)
{
	char dir[PATH_MAX];
	char *p, *slash;
	char c;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (p = dir + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		c = *p;
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = c;
		if (c == '\0')
			return 0;
	}
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/*
 * A database with nothing in it: one page, whose sqlite_schema b-tree (the
 * page header after the 100-byte file header) holds no cell.
 */
static bool empty_database(int fd, const unsigned char *hdr, const struct stat *sb)
{
	unsigned char btree[8];
	uint32_t page_size = (uint32_t)hdr[16] << 8 | hdr[17];

	if (page_size == 1)
		page_size = 65536;
	if ((uint64_t)sb->st_size != page_size)
		return false;
	if (pread(fd, btree, sizeof(btree), SQLITE_HEADER_SIZE) != (ssize_t)sizeof(btree))
		return false;
	return btree[0] == 0x0d && btree[3] == 0 && btree[4] == 0; /* leaf table, 0 cells */
}

/*
 * The files this process holds open through SQLite.  POSIX record locks
 * belong to the process, and closing any descriptor of a file drops every
 * lock the process holds on it (fcntl(2)).  SQLite keeps its own
 * descriptors for that reason, but store_check_file opens and closes one
 * of its own: done while an agent's writer held the file, it dropped the
 * writer's shared lock, so that another process (`jobscope compact`)
 * closing last took itself for the last connection, checkpointed and
 * deleted the -wal and -shm under the agent, whose shutdown then failed
 * with "disk I/O error" and whose later commits went to a deleted WAL.  So
 * a file open here already (judged when first opened) is not opened raw
 * again; the table's lock is held from the judgment to the registration,
 * so that no raw descriptor is ever closed while SQLite holds a lock.
 */
static pthread_mutex_t open_files_lock = PTHREAD_MUTEX_INITIALIZER;
static struct open_file {
	dev_t dev;
	ino_t ino;
	int refs;
} * open_files;
static size_t nopen_files, open_files_alloc;

static struct open_file *open_file_find(dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < nopen_files; i++)
		if (open_files[i].dev == dev && open_files[i].ino == ino)
			return &open_files[i];
	return NULL;
}

/* Under open_files_lock. */
static int open_file_add(struct store *st, const struct stat *sb)
{
	struct open_file *f = open_file_find(sb->st_dev, sb->st_ino);

	if (!f) {
		if (nopen_files == open_files_alloc) {
			size_t n = open_files_alloc ? open_files_alloc * 2 : 8;
			void *p = realloc(open_files, n * sizeof(*open_files));

			if (!p)
				return -ENOMEM;
			open_files = p;
			open_files_alloc = n;
		}
		f = &open_files[nopen_files++];
		*f = (struct open_file){sb->st_dev, sb->st_ino, 0};
	}
	f->refs++;
	st->dev = sb->st_dev;
	st->ino = sb->st_ino;
	st->registered = true;
	return 0;
}

/* After its SQLite connection closed. */
static void open_file_drop(struct store *st)
{
	struct open_file *f;

	if (!st->registered)
		return;
	pthread_mutex_lock(&open_files_lock);
	f = open_file_find(st->dev, st->ino);
	if (f && --f->refs == 0)
		*f = open_files[--nopen_files];
	pthread_mutex_unlock(&open_files_lock);
	st->registered = false;
}

/*
 * Judges the file before SQLite opens it: a non-empty file must carry the
 * SQLite magic and our application_id, read here from the raw header so
 * that a foreign file is never handed to SQLite for writing.  Creates the
 * file (and its directories) with STORE_CREATE; *is_new when it is empty.
 */
static int store_check_file(const char *path, unsigned flags, bool *is_new)
{
	unsigned char hdr[SQLITE_HEADER_SIZE];
	uint32_t app_id;
	int32_t version;
	struct stat sb;
	char why[128];
	ssize_t n;
	size_t len = 0;
	int fd, ret;

	*is_new = false;
	/* O_NONBLOCK: a FIFO must not hang us before fstat says what it is */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT && (flags & STORE_CREATE)) {
		ret = mkdir_parents(path);
		if (ret)
			return log_err(ret, "cannot create the directory of store '%s'", path);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
		if (fd < 0)
			return log_err(-errno, "cannot create store '%s'", path);
	}
	if (fd < 0)
		return log_err(-errno, "cannot open store '%s'", path);
	if (fstat(fd, &sb) < 0) {
		ret = log_err(-errno, "cannot open store '%s'", path);
		goto out_close_fd;
	}
	if (S_ISDIR(sb.st_mode)) {
		ret = log_err(-EISDIR, "cannot open store '%s'", path);
		goto out_close_fd;
	}
	if (!S_ISREG(sb.st_mode)) {
		ret = store__refuse(path, -EPROTO, "not a regular file");
		goto out_close_fd;
	}
	if (sb.st_size == 0) {
		*is_new = flags & STORE_CREATE;
		ret = *is_new ? 0 : store__refuse(path, -EPROTO, "empty file");
		goto out_close_fd;
	}
	while (len < sizeof(hdr)) {
		n = pread(fd, hdr + len, sizeof(hdr) - len, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = log_err(-errno, "cannot read store '%s'", path);
			goto out_close_fd;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len < sizeof(SQLITE_MAGIC) || memcmp(hdr, SQLITE_MAGIC, sizeof(SQLITE_MAGIC)) != 0) {
		ret = store__refuse(path, -EPROTO, "not an SQLite database");
		goto out_close_fd;
	}
	if (len < sizeof(hdr)) {
		ret = store__refuse_corrupt(path, "truncated header");
		goto out_close_fd;
	}
	app_id = be32(hdr + SQLITE_APPLICATION_ID_OFFSET);
	/* may lag behind a WAL, so only a first check: store_check_schema decides */
	version = (int32_t)be32(hdr + SQLITE_USER_VERSION_OFFSET);
	ret = 0;
	if (app_id == 0 && version == 0 && (flags & STORE_CREATE) && empty_database(fd, hdr, &sb)) {
		/* another jobscope is creating it (PRAGMA auto_vacuum wrote page 1) */
		*is_new = true;
	} else if (app_id != STORE_APPLICATION_ID) {
		if (app_id == 0)
			snprintf(why, sizeof(why), "an SQLite database of another application");
		else
			snprintf(why, sizeof(why),
				 "an SQLite database of another application, application_id 0x%08x",
				 app_id);
		ret = store__refuse(path, -EPROTO, why);
	} else if (version > STORE_SCHEMA_VERSION) {
		ret = store__refuse_newer(path, version);
	}
out_close_fd:
	close(fd);
	return ret;
}

/* Writer settings; WAL lets readers in while `jobscope run` writes. */
static int store_setup_writer(struct store *st)
{
	sqlite3_stmt *stmt;
	const char *mode;
	int rc, ret;

	rc = sqlite3_prepare_v2(st->conn.sq, "PRAGMA journal_mode = WAL", -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return store__open_fail(st, rc, "set up");
	/*
	 * Two writers opening a new store at once (two `jobscope run`s on the
	 * default one): the switch needs the file to itself, and SQLite answers
	 * SQLITE_BUSY at once rather than wait when waiting could deadlock.
	 * Let go and try again for as long as the busy timeout.
	 */
	for (int tries = 0;; tries++) {
		rc = sqlite3_step(stmt);
		if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) ||
		    tries * WAL_SWITCH_RETRY_MS >= STORE_BUSY_TIMEOUT_MS)
			break;
		sqlite3_reset(stmt);
		sqlite3_sleep(WAL_SWITCH_RETRY_MS + (int)(time_mono_ns() % WAL_SWITCH_RETRY_MS));
	}
	mode = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(stmt, 0) : NULL;
	ret = 0;
	if (rc != SQLITE_ROW)
		ret = store__open_fail(st, rc, "switch to WAL mode");
	else if (!mode || strcmp(mode, "wal") != 0)
		ret = log_err(-EIO, "cannot switch store '%s' to WAL mode (still '%s')", st->path,
			      mode ? mode : "?");
	sqlite3_finalize(stmt);
	if (ret)
		return ret;
	ret = store__exec(st, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;", "set up");
	if (ret)
		return ret;
	return store__load_next_seq(st);
}

static bool sibling_path(char *buf, size_t size, const char *path, const char *suffix)
{
	int n = snprintf(buf, size, "%s%s", path, suffix);

	return n > 0 && (size_t)n < size;
}

static bool sibling_exists(const char *path, const char *suffix)
{
	char p[PATH_MAX + 8];

	return sibling_path(p, sizeof(p), path, suffix) && access(p, F_OK) == 0;
}

/*
 * A read-only connection to a WAL-mode file creates -wal and -shm and
 * cannot remove them.  After a refused open, remove those we created, so a
 * file we would not open is left as it was, with nothing beside it.
 */
static void remove_created_siblings(const char *path, bool had_wal, bool had_shm)
{
	char p[PATH_MAX + 8];
	struct stat sb;

	if (!had_wal && sibling_path(p, sizeof(p), path, "-wal") && stat(p, &sb) == 0 &&
	    sb.st_size == 0)
		unlink(p);
	if (!had_shm && sibling_path(p, sizeof(p), path, "-shm"))
		unlink(p);
}

/*
 * greatest() and least() of PostgreSQL (NULLs ignored; NULL when all are),
 * so that SQL written once runs on both engines; SQLite's own two-argument
 * max() and min() answer NULL when one is.
 */
static void extreme(sqlite3_context *ctx, int argc, sqlite3_value **argv, int sign)
{
	sqlite3_value *best = NULL;

	for (int i = 0; i < argc; i++) {
		if (sqlite3_value_type(argv[i]) == SQLITE_NULL)
			continue;
		if (!best ||
		    (sqlite3_value_type(argv[i]) == SQLITE_FLOAT ||
			     sqlite3_value_type(best) == SQLITE_FLOAT
			 ? sign * (sqlite3_value_double(argv[i]) - sqlite3_value_double(best)) > 0
			 : (sign > 0 ? sqlite3_value_int64(argv[i]) > sqlite3_value_int64(best)
				     : sqlite3_value_int64(argv[i]) < sqlite3_value_int64(best))))
			best = argv[i];
	}
	if (best)
		sqlite3_result_value(ctx, best);
	else
		sqlite3_result_null(ctx);
}

static void fn_greatest(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	extreme(ctx, argc, argv, 1);
}

static void fn_least(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	extreme(ctx, argc, argv, -1);
}

static int register_functions(struct store *st)
{
	int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
	int rc = sqlite3_create_function_v2(st->conn.sq, "greatest", -1, flags, NULL, fn_greatest,
					    NULL, NULL, NULL);

	if (rc == SQLITE_OK)
		rc = sqlite3_create_function_v2(st->conn.sq, "least", -1, flags, NULL, fn_least,
						NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : store__open_fail(st, rc, "set up");
}

int store_open(const char *path, unsigned flags, struct store **out)
{
	struct store *st;
	struct stat sb;
	bool is_new, had_wal, had_shm, open_here;
	int rc, ret;

	*out = NULL;
	if (!path || !*path)
		return log_err(-EINVAL, "cannot open store: empty path");
	if (pg_is_url(path))
		return store__pg_open(path, flags, out);
	if (strlen(path) >= PATH_MAX)
		return log_err(-ENAMETOOLONG, "cannot open store '%s'", path);
	st = calloc(1, sizeof(*st));
	if (!st)
		return log_err(-ENOMEM, "cannot open store '%s'", path);
	/* judged once per file open here: see open_files */
	pthread_mutex_lock(&open_files_lock);
	is_new = false;
	open_here = stat(path, &sb) == 0 && open_file_find(sb.st_dev, sb.st_ino);
	if (open_here)
		ret = 0;
	else
		ret = store_check_file(path, flags, &is_new);
	if (!ret && stat(path, &sb) < 0)
		ret = log_err(-errno, "cannot open store '%s'", path);
	if (!ret && open_file_add(st, &sb))
		ret = log_err(-ENOMEM, "cannot open store '%s'", path);
	pthread_mutex_unlock(&open_files_lock);
	if (ret) {
		free(st);
		return ret;
	}
	snprintf(st->path, sizeof(st->path), "%s", path);
	st->writable = flags & STORE_CREATE;
	st->checked = flags & STORE_CHECKED;
	st->next_seq = 1;

	had_wal = sibling_exists(path, "-wal");
	had_shm = sibling_exists(path, "-shm");
	rc = sqlite3_open_v2(path, &st->conn.sq,
			     (st->writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) |
				 SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
			     NULL);
	if (rc != SQLITE_OK) {
		ret = store__open_fail(st, rc, "open");
		goto out_close_db;
	}
	sqlite3_extended_result_codes(st->conn.sq, 1);
	ret = register_functions(st);
	if (ret)
		goto out_close_db;
	sqlite3_busy_timeout(st->conn.sq, STORE_BUSY_TIMEOUT_MS);
	/* the file is data, not code: no functions with side effects in its schema */
	sqlite3_db_config(st->conn.sq, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
	sqlite3_db_config(st->conn.sq, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	if (st->writable && sqlite3_db_readonly(st->conn.sq, "main") == 1) {
		ret = log_err(-EACCES, "cannot write to store '%s'", path);
		goto out_close_db;
	}

	if (is_new) {
		/*
		 * Only possible before the first table: lets retention shrink the
		 * file.  A failure (out of memory) must fail the open, or the store
		 * would be created without it, for ever.
		 */
		ret = store__exec(st, "PRAGMA auto_vacuum = INCREMENTAL", "create");
		if (ret)
			goto out_close_db;
		ret = store__migrate(st);
		if (ret)
			goto out_close_db;
	}
	ret = store__check_schema(st);
	if (!ret)
		ret = store__packs_register(st);
	if (ret)
		goto out_close_db;
	if (st->writable) {
		ret = store_setup_writer(st);
		if (ret)
			goto out_close_db;
	}
	*out = st;
	return 0;

out_close_db:
	sqlite3_close(st->conn.sq);
	if (!open_here) /* else they are another connection's */
		remove_created_siblings(path, had_wal, had_shm);
	open_file_drop(st);
	free(st);
	return ret;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	if (st->in_tick)
		store_tick_abort(st);
	store__writer_release(st);
	for (size_t k = 0; k < st->ningest_cache; k++) {
		db_finalize(st->ingest_cache[k].stmt);
		free(st->ingest_cache[k].sql);
		free(st->ingest_cache[k].aux);
	}
	store__memo_free(st->memo);
	if (st->conn.pg)
		pg_close(st->conn.pg);
	else if (sqlite3_close(st->conn.sq) != SQLITE_OK)
		log_warn(0, "store '%s' not closed cleanly (%s)", st->path, store__errmsg(st));
	open_file_drop(st);
	free(st);
}

/*
 * A head acknowledges what it committed: a commit must outlive a crash.
 * PostgreSQL: synchronous_commit on for the writer's session whatever the
 * server's default (with it off, a server that crashed lost the commits of
 * its last moments after the head had acknowledged them: agents never sent
 * them again), set again whenever the connection is made anew;
 * checkpoints are the server's.  And a transaction left open by a head
 * whose machine vanished (no FIN: the server would wait for TCP keepalive,
 * hours) ends after 30 s idle: it holds the seq counter's lock, which
 * every head's commits wait for (writer.c).  A head's transactions never
 * wait on anything but the database.
 */
int store_set_durable(struct store *st)
{
	if (st->conn.pg) {
		if (pg_on_connect(st->conn.pg,
				  "SET synchronous_commit = on;"
				  " SET idle_in_transaction_session_timeout = 30000") != SQLITE_OK)
			return log_err(-EIO, "store '%s': cannot set synchronous_commit: %s",
				       st->path, pg_errmsg(st->conn.pg));
		/*
		 * The ingest's statements are the same few with other values,
		 * thousands a second: planned once, not at every run (custom
		 * plans and planning were about 15 % of the server's samples,
		 * bench/RESULTS.md section 13).  PostgreSQL 12 and later.
		 */
		if (pg_server_version(st->conn.pg) >= 120000 &&
		    pg_on_connect(st->conn.pg, "SET plan_cache_mode = force_generic_plan") !=
			SQLITE_OK)
			return log_err(-EIO, "store '%s': cannot set plan_cache_mode: %s", st->path,
				       pg_errmsg(st->conn.pg));
		return 0;
	}
	return store__exec(st, "PRAGMA synchronous = FULL", "set up");
}

int store_set_autocheckpoint(struct store *st, bool on)
{
	if (st->conn.pg)
		return 0;
	return store__exec(
	    st, on ? "PRAGMA wal_autocheckpoint = 1000" : "PRAGMA wal_autocheckpoint = 0",
	    "set up");
}

int store_checkpoint(struct store *st)
{
	int log = 0, done = 0, rc;

	if (st->conn.pg)
		return 0;
	rc = sqlite3_wal_checkpoint_v2(st->conn.sq, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);

	/*
	 * Under a writer that never pauses, a passive checkpoint never finds
	 * the WAL wholly copied, so the WAL is never started over and grows
	 * without end.  Past STORE_WAL_RESTART_FRAMES, and once nearly all of
	 * it is copied, RESTART waits for the writer's current transaction,
	 * copies the rest (little) and makes the next write start the WAL at
	 * its beginning.
	 */
	if (rc == SQLITE_OK && log > STORE_WAL_RESTART_FRAMES && log - done < log / 8)
		rc = sqlite3_wal_checkpoint_v2(st->conn.sq, NULL, SQLITE_CHECKPOINT_RESTART, NULL,
					       NULL);
	return rc == SQLITE_OK || rc == SQLITE_BUSY ? 0 : store__errno(st->conn.sq, rc);
}

const char *store_path(const struct store *st)
{
	return st->path;
}

int store_meta_get(struct store *st, const char *key, char *buf, size_t size)
{
	struct db_stmt *stmt;
	int rc;

	rc = db_prepare(&st->conn, "SELECT value FROM meta WHERE key = ?", &stmt);
	if (rc != SQLITE_OK)
		return store__errno(st->conn.sq, rc);
	db_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
	return store__one_text(st, stmt, buf, size);
}

int store_meta_set(struct store *st, const char *key, const char *value)
{
	struct db_stmt *stmt;
	bool own;
	int rc, ret;

	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	rc = db_prepare(&st->conn,
			"INSERT INTO meta (key, value) VALUES (?, ?)"
			" ON CONFLICT (key) DO UPDATE SET value = excluded.value",
			&stmt);
	if (rc == SQLITE_OK) {
		db_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
		db_bind_text(stmt, 2, value, -1, SQLITE_STATIC);
		rc = db_step(stmt);
		db_finalize(stmt);
	}
	ret = rc == SQLITE_DONE || rc == SQLITE_OK ? 0
						   : store__write_fail(st, rc, "set a meta value");
	return store__write_end(st, own, ret);
}
