/*
 * export.c - a store's rows by seq range, as one row set for the head
 * (net/wire.c sends it, docs/wire.md): every fact row with after < seq <=
 * to (gap records too: rows the size cap deleted unsent; CUDA snapshots:
 * cuda_procs rows take a new seq each time they are replaced), and the
 * dimension rows they reference (jobs, procs, devices) with the summaries
 * of those jobs and the snapshots' stats, each table with its columns and
 * rows.
 *
 * Columns are the file's own (SELECT *), so a batch describes itself and
 * the head checks every name against its schema.  Values keep SQLite's
 * types: integers, reals, text (copied into the row set) and NULL.
 */
#include "store/conn.h"
#include "store/schema.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "store/facts.h"
#include "store/rowset.h"
#include "store/sync.h"

/*
 * The dimension rows a range references: ?1 < seq <= ?2 in every fact
 * table (and, from schema 9, the jobs of its CUDA snapshots).
 */
#define JOBS_OF_CUDA " OR id IN (SELECT job_id FROM cuda_procs WHERE seq > ?1 AND seq <= ?2)"
/* from schema 10: the jobs of app metrics and markers, the processes of library rows */
#define JOBS_OF_APP                                                                                \
	" OR id IN (SELECT job_id FROM app_samples WHERE seq > ?1 AND seq <= ?2"                   \
	" UNION SELECT job_id FROM marks WHERE seq > ?1 AND seq <= ?2"                             \
	" UNION SELECT p.job_id FROM procs p JOIN proc_libs l ON l.proc_id = p.id"                 \
	" WHERE l.seq > ?1 AND l.seq <= ?2)"
#define PROCS_OF_LIBS " OR id IN (SELECT proc_id FROM proc_libs WHERE seq > ?1 AND seq <= ?2)"
static const struct {
	const char *table;
	const char *where;
	int since; /* schema */
} export_dims[] = {
    {"devices",
     "id IN (SELECT device_id FROM gpu_samples_all WHERE seq > ?1 AND seq <= ?2"
     " UNION SELECT device_id FROM gpu_proc_samples_all WHERE seq > ?1 AND seq <= ?2)",
     2},
    {"procs",
     "id IN (SELECT proc_id FROM proc_samples_all WHERE seq > ?1 AND seq <= ?2"
     " UNION SELECT proc_id FROM gpu_proc_samples_all WHERE seq > ?1 AND seq <= ?2)",
     2},
    {"jobs",
     "id IN (SELECT job_id FROM job_samples_all WHERE seq > ?1 AND seq <= ?2"
     " UNION SELECT job_id FROM proc_samples_all WHERE seq > ?1 AND seq <= ?2"
     " UNION SELECT job_id FROM events WHERE seq > ?1 AND seq <= ?2"
     " UNION SELECT job_id FROM gpu_proc_samples_all WHERE seq > ?1 AND seq <= ?2"
     " UNION SELECT p.job_id FROM procs p JOIN proc_samples_all s ON s.proc_id = p.id"
     " WHERE s.seq > ?1 AND s.seq <= ?2)",
     2},
    {"job_summaries", "job_id IN (SELECT job_id FROM job_samples_all WHERE seq > ?1 AND seq <= ?2)",
     3},
    /* the stats of the snapshots in the range: each replaces its process's on the head */
    {"cuda_stats",
     "(job_id, pid) IN (SELECT job_id, pid FROM cuda_procs WHERE seq > ?1 AND seq <= ?2)", 9},
};

/* Appends a table of the query's rows to out when the query has rows. */
static int export_table(struct store *st, struct store_rowset *out, const char *name,
			const char *sql, int64_t after, int64_t to, int64_t *nrows)
{
	struct store_table *t = NULL;
	struct store_value *row;
	struct db_stmt *stmt;
	int rc, ncols = 0, ret = 0;

	rc = db_prepare(&st->conn, sql, &stmt);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "export rows");
	db_bind_int64(stmt, 1, after);
	db_bind_int64(stmt, 2, to);
	while (!ret && (rc = db_step(stmt)) == SQLITE_ROW) {
		if (!t) {
			ncols = db_column_count(stmt); /* known once run, for PostgreSQL */
			if (ncols > STORE_ROWSET_MAX_COLUMNS) {
				db_finalize(stmt);
				return log_err(-E2BIG, "cannot export %s: %d columns", name, ncols);
			}
			ret = store_rowset_add_table(out, name, &t);
			for (int c = 0; c < ncols && !ret; c++) {
				const char *col = db_column_name(stmt, c);

				t->cols[c] = store_rowset_keep(out, col, strlen(col));
				if (!t->cols[c])
					ret = -ENOMEM;
				t->ncols = c + 1;
			}
			if (ret)
				break;
		}
		ret = store_rowset_add_row(out, t, &row);
		for (int c = 0; c < ncols && !ret; c++) {
			struct store_value *v = &row[c];

			switch (db_column_type(stmt, c)) {
			case SQLITE_INTEGER:
				v->type = STORE_VALUE_INT;
				v->i = db_column_int64(stmt, c);
				break;
			case SQLITE_FLOAT:
				v->type = STORE_VALUE_REAL;
				v->d = db_column_double(stmt, c);
				break;
			case SQLITE_TEXT:
				v->type = STORE_VALUE_TEXT;
				v->len = (uint32_t)db_column_bytes(stmt, c);
				v->s = store_rowset_keep(out, (const char *)db_column_text(stmt, c),
							 v->len);
				if (!v->s)
					ret = -ENOMEM;
				break;
			default:
				break; /* null */
			}
		}
		if (!ret)
			(*nrows)++;
	}
	db_finalize(stmt);
	if (ret)
		return log_err(ret, "cannot export the rows of %s", name);
	if (rc != SQLITE_DONE)
		return store__read_fail(st, rc, "export rows");
	return 0;
}

int store_max_seq(struct store *st, int64_t *max_seq)
{
	struct db_stmt *stmt;
	char sql[1024];
	size_t len = 0;
	int rc;

	if (st->conn.pg) {
		/* every seq below the counter is committed with it (pgschema.c) */
		int ret = store__pg_next_seq(st, max_seq);

		if (ret)
			return ret;
		*max_seq -= 1;
		return 0;
	}
	len += (size_t)snprintf(sql + len, sizeof(sql) - len, "SELECT greatest(0");
	for (int i = 0; i < store_nfacts; i++) {
		if (st->schema_version < store_facts[i].since)
			continue;
		len += (size_t)snprintf(sql + len, sizeof(sql) - len,
					", coalesce((SELECT max(seq) FROM %s), 0)",
					store_facts[i].name);
	}
	if (st->schema_version >= 6)
		len += (size_t)snprintf(sql + len, sizeof(sql) - len,
					", coalesce((SELECT max(seq_hi) FROM packs), 0)");
	snprintf(sql + len, sizeof(sql) - len, ")");
	rc = db_prepare(&st->conn, sql, &stmt);
	if (rc != SQLITE_OK)
		return store__read_fail(st, rc, "read the last seq");
	rc = db_step(stmt);
	*max_seq = rc == SQLITE_ROW ? db_column_int64(stmt, 0) : 0;
	db_finalize(stmt);
	return rc == SQLITE_ROW ? 0 : store__read_fail(st, rc, "read the last seq");
}

/*
 * What remote write turns into series (prom/remote_write.c): the host, its
 * CPUs, disks, interfaces and file systems, the GPUs, the jobs and their
 * use of each GPU, and the devices and jobs they reference.  Not the
 * processes (a series per process is too many for a time-series engine),
 * events, marks or gaps.
 */
static bool metric_table(const char *table)
{
	const struct store_fact *f = store_fact(table);

	return f && (f->flags & FACT_METRIC);
}

static const struct {
	const char *table;
	const char *where;
	int since;
} metric_dims[] = {
    {"devices",
     "id IN (SELECT device_id FROM gpu_samples_all WHERE seq > ?1 AND seq <= ?2"
     " UNION SELECT device_id FROM gpu_proc_samples_all WHERE seq > ?1 AND seq <= ?2)",
     2},
    {"jobs",
     "id IN (SELECT job_id FROM job_samples_all WHERE seq > ?1 AND seq <= ?2"
     " UNION SELECT job_id FROM gpu_proc_samples_all WHERE seq > ?1 AND seq <= ?2)",
     2},
};

static int export_range(struct store *st, int64_t after_seq, int64_t max_rows,
			struct store_rowset *out, int64_t *to_seq, int64_t *max_seq, int64_t *nrows,
			bool metrics)
{
	char sql[2048];
	int ret;

	*nrows = 0;
	store_rowset_release(out);
	/* one read transaction: the range and its dimension rows agree */
	ret = db_exec(&st->conn, "BEGIN");
	if (ret != SQLITE_OK)
		return store__read_fail(st, ret, "export rows");
	ret = store_max_seq(st, max_seq);
	if (ret)
		goto out_end;
	/* seq is one counter across the fact tables: a range of N holds at most N rows */
	*to_seq = *max_seq;
	if (max_rows > 0 && *max_seq - after_seq > max_rows)
		*to_seq = after_seq + max_rows;
	if (*to_seq < after_seq)
		*to_seq = after_seq;
	for (int i = 0; i < store_nfacts && !ret; i++) {
		if (st->schema_version < store_facts[i].since ||
		    (metrics && !metric_table(store_facts[i].name)))
			continue;
		snprintf(sql, sizeof(sql),
			 "SELECT * FROM %s WHERE seq > ?1 AND seq <= ?2 ORDER BY seq",
			 store_facts[i].source);
		ret = export_table(st, out, store_facts[i].name, sql, after_seq, *to_seq, nrows);
	}
	for (size_t i = 0; i < sizeof(metric_dims) / sizeof(metric_dims[0]) && metrics && !ret;
	     i++) {
		if (st->schema_version < metric_dims[i].since)
			continue;
		snprintf(sql, sizeof(sql), "SELECT * FROM %s WHERE %s", metric_dims[i].table,
			 metric_dims[i].where);
		ret = export_table(st, out, metric_dims[i].table, sql, after_seq, *to_seq, nrows);
	}
	for (size_t i = 0; i < sizeof(export_dims) / sizeof(export_dims[0]) && !metrics && !ret;
	     i++) {
		if (st->schema_version < export_dims[i].since)
			continue;
		bool jobs = strcmp(export_dims[i].table, "jobs") == 0;
		bool procs = strcmp(export_dims[i].table, "procs") == 0;

		snprintf(sql, sizeof(sql), "SELECT * FROM %s WHERE %s%s%s", export_dims[i].table,
			 export_dims[i].where, jobs && st->schema_version >= 9 ? JOBS_OF_CUDA : "",
			 st->schema_version < 10 ? ""
			 : jobs			 ? JOBS_OF_APP
			 : procs		 ? PROCS_OF_LIBS
						 : "");
		ret = export_table(st, out, export_dims[i].table, sql, after_seq, *to_seq, nrows);
	}
out_end:
	db_exec(&st->conn, "COMMIT");
	return ret;
}

int store_export_batch(struct store *st, int64_t after_seq, int64_t max_rows,
		       struct store_rowset *out, int64_t *to_seq, int64_t *max_seq, int64_t *nrows)
{
	return export_range(st, after_seq, max_rows, out, to_seq, max_seq, nrows, false);
}

int store_export_metrics(struct store *st, int64_t after_seq, int64_t max_seqs,
			 struct store_rowset *out, int64_t *to_seq, int64_t *max_seq,
			 int64_t *nrows)
{
	return export_range(st, after_seq, max_seqs, out, to_seq, max_seq, nrows, true);
}
