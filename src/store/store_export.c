/*
 * store_export.c - a store's rows by seq range, as one JSON batch for the
 * head (docs/wire.md): every fact row with after < seq <= to, and the
 * dimension rows they reference (jobs, procs, devices) with the summaries
 * of those jobs, each table as {"columns": [...], "rows": [[...], ...]}.
 *
 * Columns are the file's own (SELECT *), so a batch describes itself and
 * the head checks every name against its schema.  Text is written as JSON
 * strings (jsonw escapes), integers as integers, reals as numbers, NULL as
 * null.
 */
#include "store/store_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/log.h"

static const char *const export_facts[] = {
    "host_samples", "cpu_samples", "disk_samples", "net_samples",    "proc_samples",
    "job_samples",  "events",	   "marks",	   "gpu_samples", "gpu_proc_samples",
};

/* The dimension rows a range references: ?1 < seq <= ?2 in every fact table. */
static const struct {
	const char *table;
	const char *where;
	int since; /* schema */
} export_dims[] = {
    {"devices",
     "id IN (SELECT device_id FROM gpu_samples WHERE seq > ?1 AND seq <= ?2"
     " UNION SELECT device_id FROM gpu_proc_samples WHERE seq > ?1 AND seq <= ?2)",
     2},
    {"procs",
     "id IN (SELECT proc_id FROM proc_samples WHERE seq > ?1 AND seq <= ?2"
     " UNION SELECT proc_id FROM gpu_proc_samples WHERE seq > ?1 AND seq <= ?2)",
     2},
    {"jobs",
     "id IN (SELECT job_id FROM job_samples WHERE seq > ?1 AND seq <= ?2"
     " UNION SELECT job_id FROM proc_samples WHERE seq > ?1 AND seq <= ?2"
     " UNION SELECT job_id FROM events WHERE seq > ?1 AND seq <= ?2"
     " UNION SELECT job_id FROM gpu_proc_samples WHERE seq > ?1 AND seq <= ?2"
     " UNION SELECT p.job_id FROM procs p JOIN proc_samples s ON s.proc_id = p.id"
     " WHERE s.seq > ?1 AND s.seq <= ?2)",
     2},
    {"job_summaries",
     "job_id IN (SELECT job_id FROM job_samples WHERE seq > ?1 AND seq <= ?2)", 3},
};

/* Writes "name": {"columns": [...], "rows": [...]} when the query has rows. */
static int export_table(struct store *st, struct jsonw *w, const char *name, const char *sql,
			int64_t after, int64_t to, int64_t *nrows)
{
	sqlite3_stmt *stmt;
	bool started = false;
	int rc, ncols;

	rc = sqlite3_prepare_v2(st->db, sql, -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "export rows");
	sqlite3_bind_int64(stmt, 1, after);
	sqlite3_bind_int64(stmt, 2, to);
	ncols = sqlite3_column_count(stmt);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if (!started) {
			jsonw_key(w, name);
			jsonw_obj_begin(w);
			jsonw_key(w, "columns");
			jsonw_arr_begin(w);
			for (int c = 0; c < ncols; c++)
				jsonw_str(w, sqlite3_column_name(stmt, c));
			jsonw_arr_end(w);
			jsonw_key(w, "rows");
			jsonw_arr_begin(w);
			started = true;
		}
		jsonw_arr_begin(w);
		for (int c = 0; c < ncols; c++) {
			switch (sqlite3_column_type(stmt, c)) {
			case SQLITE_INTEGER:
				jsonw_int(w, sqlite3_column_int64(stmt, c));
				break;
			case SQLITE_FLOAT:
				jsonw_double(w, sqlite3_column_double(stmt, c), 6);
				break;
			case SQLITE_TEXT:
				jsonw_strn(w, (const char *)sqlite3_column_text(stmt, c),
					   (size_t)sqlite3_column_bytes(stmt, c));
				break;
			default:
				jsonw_null(w);
				break;
			}
		}
		jsonw_arr_end(w);
		(*nrows)++;
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		return store__read_fail(st, rc, "export rows");
	if (started) {
		jsonw_arr_end(w);
		jsonw_obj_end(w);
	}
	return jsonw_error(w);
}

int store_max_seq(struct store *st, int64_t *max_seq)
{
	sqlite3_stmt *stmt;
	char sql[1024];
	size_t len = 0;
	int rc;

	len += (size_t)snprintf(sql + len, sizeof(sql) - len, "SELECT max(0");
	for (size_t i = 0; i < sizeof(export_facts) / sizeof(export_facts[0]); i++) {
		if (st->schema_version < 2 && i >= 8)
			continue;
		len += (size_t)snprintf(sql + len, sizeof(sql) - len,
					", coalesce((SELECT max(seq) FROM %s), 0)", export_facts[i]);
	}
	snprintf(sql + len, sizeof(sql) - len, ")");
	rc = sqlite3_prepare_v2(st->db, sql, -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "read the last seq");
	rc = sqlite3_step(stmt);
	*max_seq = rc == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : 0;
	sqlite3_finalize(stmt);
	return rc == SQLITE_ROW ? 0 : store__read_fail(st, rc, "read the last seq");
}

int store_export_batch(struct store *st, int64_t after_seq, int64_t max_rows, struct jsonw *w,
		       int64_t *to_seq, int64_t *nrows)
{
	char sql[1024];
	int64_t max_seq;
	int ret;

	*nrows = 0;
	/* one read transaction: the range and its dimension rows agree */
	if (sqlite3_exec(st->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return store__read_fail(st, sqlite3_errcode(st->db), "export rows");
	ret = store_max_seq(st, &max_seq);
	if (ret)
		goto out_end;
	/* seq is one counter across the fact tables: a range of N holds at most N rows */
	*to_seq = max_seq;
	if (max_rows > 0 && max_seq - after_seq > max_rows)
		*to_seq = after_seq + max_rows;
	if (*to_seq < after_seq)
		*to_seq = after_seq;
	jsonw_key(w, "to_seq");
	jsonw_int(w, *to_seq);
	jsonw_key(w, "max_seq");
	jsonw_int(w, max_seq);
	jsonw_key(w, "tables");
	jsonw_obj_begin(w);
	for (size_t i = 0; i < sizeof(export_facts) / sizeof(export_facts[0]) && !ret; i++) {
		if (st->schema_version < 2 && i >= 8)
			continue;
		snprintf(sql, sizeof(sql),
			 "SELECT * FROM %s WHERE seq > ?1 AND seq <= ?2 ORDER BY seq",
			 export_facts[i]);
		ret = export_table(st, w, export_facts[i], sql, after_seq, *to_seq, nrows);
	}
	for (size_t i = 0; i < sizeof(export_dims) / sizeof(export_dims[0]) && !ret; i++) {
		if (st->schema_version < export_dims[i].since)
			continue;
		snprintf(sql, sizeof(sql), "SELECT * FROM %s WHERE %s", export_dims[i].table,
			 export_dims[i].where);
		ret = export_table(st, w, export_dims[i].table, sql, after_seq, *to_seq, nrows);
	}
	jsonw_obj_end(w);
out_end:
	sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
	return ret;
}
