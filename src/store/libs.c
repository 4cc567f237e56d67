/*
 * libs.c - the frameworks and libraries processes loaded, schema 10
 * (proc_libs): one row per (process, name) when first seen, and a job's
 * read back, distinct by name and version.  See store.h.
 *
 *   store_put_proc_libs   a process's libraries first seen now
 *   store_get_job_libs    a job's, with how many of its processes loaded each
 */
#include "store/conn.h"
#include "store/facts.h"
#include "store/writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/log.h"
#include "store/jobdata.h"

#define LIBS_SCHEMA 10

static void bind_text_opt(struct db_stmt *stmt, int col, const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	if (n)
		db_bind_text(stmt, col, s, (int)n, SQLITE_TRANSIENT);
	else
		db_bind_null(stmt, col);
}

_Static_assert(FACT_NCOLUMNS(PROC_LIB_COLUMNS) == 3, "put_row binds 3");

static int put_row(struct store *st, int64_t proc_id, int64_t ts_ms, const struct store_proc_lib *l)
{
	struct db_stmt *stmt;
	int rc;

	rc = store__cached_stmt(
	    st, FACT_INSERT(proc_libs, "seq, proc_id, ts_ms", "?, ?, ?", PROC_LIB_COLUMNS), &stmt);
	if (rc != SQLITE_OK)
		return store__write_fail(st, rc, "keep a process's libraries");
	db_bind_int64(stmt, 1, st->next_seq);
	db_bind_int64(stmt, 2, proc_id);
	db_bind_int64(stmt, 3, ts_ms);
	db_bind_text(stmt, 4, l->name, (int)strnlen(l->name, sizeof(l->name)), SQLITE_TRANSIENT);
	bind_text_opt(stmt, 5, l->version, sizeof(l->version));
	bind_text_opt(stmt, 6, l->path, sizeof(l->path));
	rc = db_step(stmt);
	db_reset(stmt);
	db_clear_bindings(stmt);
	if (rc != SQLITE_DONE && rc != SQLITE_OK)
		return store__write_fail(st, rc, "keep a process's libraries");
	st->next_seq++;
	return 0;
}

int store_put_proc_libs(struct store *st, int64_t proc_id, int64_t ts_ms,
			const struct store_proc_lib *libs, size_t n)
{
	bool own;
	int ret;

	if (st->schema_version < LIBS_SCHEMA)
		return log_err(-EPROTONOSUPPORT,
			       "store '%s' is older than schema %d: it has no process libraries",
			       st->path, LIBS_SCHEMA);
	if (proc_id <= 0)
		return log_err(-EINVAL, "store '%s': libraries of process row %lld", st->path,
			       (long long)proc_id);
	if (!n)
		return 0;
	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	for (size_t i = 0; i < n && !ret; i++)
		if (libs[i].name[0])
			ret = put_row(st, proc_id, ts_ms, &libs[i]);
	return store__write_end(st, own, ret);
}

int store_get_job_libs(struct store *st, int64_t job_id, struct store_proc_lib **out, size_t *n)
{
	struct db_stmt *stmt;
	size_t alloc = 0;
	int rc, ret;

	*out = NULL;
	*n = 0;
	if (st->schema_version < LIBS_SCHEMA)
		return 0;
	ret = store__prepare(st,
			     "SELECT l.name, coalesce(l.version, ''), min(l.path),"
			     " count(DISTINCT l.proc_id) FROM proc_libs l"
			     " JOIN procs p ON p.id = l.proc_id WHERE p.job_id = ?"
			     " GROUP BY l.name, coalesce(l.version, '') ORDER BY l.name, 2",
			     "read the job's libraries", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, job_id);
	while ((rc = db_step(stmt)) == SQLITE_ROW) {
		struct store_proc_lib *l;

		if (ARRAY_GROW(*out, *n, alloc, 16)) {
			ret = log_err(-ENOMEM, "cannot read the job's libraries");
			break;
		}
		l = &(*out)[(*n)++];
		memset(l, 0, sizeof(*l));
		snprintf(l->name, sizeof(l->name), "%s", db_column_str(stmt, 0));
		snprintf(l->version, sizeof(l->version), "%s", db_column_str(stmt, 1));
		snprintf(l->path, sizeof(l->path), "%s", db_column_str(stmt, 2));
		l->nprocs = db_column_int64(stmt, 3);
	}
	if (!ret && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "read the job's libraries");
	db_finalize(stmt);
	if (ret) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return ret;
}
