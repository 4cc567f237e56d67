/*
 * read.c - the reader: jobs by id, by key or in start order, a job's
 * summary, and the read-only queries the report and the head run.
 *
 *   job_from_row, job_select     a jobs row, for this store's schema
 *   store_get_job, store_find_job, store_find_job_key,
 *   store_get_job_summary_json, store_for_each_job
 *   store_query_json, store_query_rows   one SELECT, as JSON or row by row
 *
 * The file may come from anywhere: every string is copied with a bound, a
 * NULL becomes "" or a cleared valid bit, and statements are prepared per
 * call and always finalized.
 */
#include "store/conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "store/column.h"
#include "store/reader.h"

#define JOB_SELECT                                                                                 \
	"SELECT j.id, j.node_id, n.hostname, j.scheduler, j.job_id, j.name, j.command, j.user,"    \
	" j.uid, j.pid, j.start_ms, j.end_ms, j.exit_code, j.signal, j.timed_out,"                 \
	" j.interval_ms, j.cores_allowed, j.host_cores, j.host_mem_bytes, j.samples,"              \
	" j.lost_samples, j.sampler_cpu_ms, %s, %s, %s"                                            \
	" FROM jobs j LEFT JOIN nodes n ON n.id = j.node_id"
#define JOB_V3_COLUMNS                                                                             \
	"j.step, j.cgroup, j.qos, j.reservation_source, j.reserved_cpus, j.reserved_mem_bytes,"    \
	" j.reserved_gpus, j.reserved_gpu_list"
#define JOB_V3_NULLS "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"

static void job_from_row(struct db_stmt *stmt, struct job_record *job)
{
	struct row r = {stmt, 0};
	uint64_t exit_code, sig, gpus;
	bool has_code, has_sig;

	memset(job, 0, sizeof(*job));
	job->id = col_i64(&r);
	job->node_id = col_i64(&r);
	col_text(&r, job->hostname, sizeof(job->hostname));
	col_text(&r, job->scheduler, sizeof(job->scheduler));
	col_text(&r, job->job_id, sizeof(job->job_id));
	col_text(&r, job->name, sizeof(job->name));
	col_text(&r, job->command, sizeof(job->command));
	col_text(&r, job->user, sizeof(job->user));
	job->uid = (uint32_t)col_i64(&r);
	job->pid = (int32_t)col_i64(&r);
	job->start_ms = col_i64(&r);
	job->end_ms = col_i64(&r);
	has_code = col_opt(&r, &exit_code);
	has_sig = col_opt(&r, &sig);
	job->has_exit = has_code || has_sig;
	job->exit_code = (int32_t)exit_code;
	job->signal = (int32_t)sig;
	job->timed_out = col_i64(&r) != 0;
	job->interval_ms = col_i64(&r);
	job->cores_allowed = (int32_t)col_i64(&r);
	job->host_cores = (int32_t)col_i64(&r);
	job->host_mem_bytes = (uint64_t)col_i64(&r);
	job->samples = col_i64(&r);
	job->lost_samples = col_i64(&r);
	job->sampler_cpu_ms = col_i64(&r);
	col_text(&r, job->step, sizeof(job->step));
	col_text(&r, job->cgroup, sizeof(job->cgroup));
	col_text(&r, job->qos, sizeof(job->qos));
	col_text(&r, job->reservation_source, sizeof(job->reservation_source));
	job->reserved_cpus = db_column_double(stmt, r.col++);
	job->reserved_mem_bytes = (uint64_t)col_i64(&r);
	job->has_reserved_gpus = col_opt(&r, &gpus);
	job->reserved_gpus = (int32_t)gpus;
	col_text(&r, job->reserved_gpu_list, sizeof(job->reserved_gpu_list));
	col_text(&r, job->sluid, sizeof(job->sluid));
	col_text(&r, job->k8s_owner, sizeof(job->k8s_owner));
	col_text(&r, job->k8s_owner_label, sizeof(job->k8s_owner_label));
}

/* The job query for this store's schema: older ones lack the v3 columns, v12's, v15's. */
static void job_select(const struct store *st, char *buf, size_t size, const char *tail)
{
	char head[1536];

	snprintf(head, sizeof(head), JOB_SELECT,
		 st->schema_version >= 3 ? JOB_V3_COLUMNS : JOB_V3_NULLS,
		 st->schema_version >= 12 ? "j.sluid" : "NULL",
		 st->schema_version >= 15 ? "j.k8s_owner, j.k8s_owner_label" : "NULL, NULL");
	snprintf(buf, size, "%s %s", head, tail);
}

int store_get_job(struct store *st, int64_t id, struct job_record *out)
{
	struct db_stmt *stmt;
	int rc, ret;

	char sql[2048];

	job_select(st, sql, sizeof(sql), "WHERE j.id = ?");
	ret = store__prepare(st, sql, "read a job", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, id);
	rc = db_step(stmt);
	if (rc == SQLITE_ROW)
		job_from_row(stmt, out);
	else if (rc == SQLITE_DONE)
		ret = -ENOENT;
	else
		ret = store__read_fail(st, rc, "read a job");
	db_finalize(stmt);
	return ret;
}

static int find_one(struct store *st, struct db_stmt *stmt, int64_t *id)
{
	int rc = db_step(stmt);
	int ret = 0;

	if (rc == SQLITE_ROW)
		*id = db_column_int64(stmt, 0);
	else if (rc == SQLITE_DONE)
		ret = -ENOENT;
	else
		ret = store__read_fail(st, rc, "find a job");
	db_finalize(stmt);
	return ret;
}

int store_find_job(struct store *st, int64_t node_id, const char *scheduler, const char *job_id,
		   int64_t start_ms, int64_t *id, int64_t *stored_start_ms)
{
	struct db_stmt *stmt;
	int rc, ret;

	ret = store__prepare(st,
			     "SELECT id, start_ms FROM jobs WHERE node_id = ?1 AND scheduler = ?2"
			     " AND job_id = ?3 AND start_ms BETWEEN ?4 - ?5 AND ?4 + ?5"
			     " ORDER BY abs(start_ms - ?4) LIMIT 1",
			     "find a job", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, node_id);
	db_bind_text(stmt, 2, scheduler, -1, SQLITE_STATIC);
	db_bind_text(stmt, 3, job_id, -1, SQLITE_STATIC);
	db_bind_int64(stmt, 4, start_ms);
	db_bind_int64(stmt, 5, STORE_JOB_START_SLACK_MS);
	rc = db_step(stmt);
	if (rc == SQLITE_ROW) {
		*id = db_column_int64(stmt, 0);
		*stored_start_ms = db_column_int64(stmt, 1);
	} else {
		ret = rc == SQLITE_DONE ? -ENOENT : store__read_fail(st, rc, "find a job");
	}
	db_finalize(stmt);
	return ret;
}

int store_find_job_key(struct store *st, const char *key, int64_t *id)
{
	char sched[64], jid[128];
	const char *c1, *c2;
	long long start = 0;
	struct db_stmt *stmt;
	int ret;

	if (!key || !*key || strlen(key) >= sizeof(jid))
		return -EINVAL;
	c1 = strchr(key, ':');
	c2 = c1 ? strrchr(c1 + 1, ':') : NULL;
	if (!c1) {
		ret = store__prepare(
		    st,
		    "SELECT id FROM jobs WHERE job_id = ?1 ORDER BY start_ms DESC, id DESC"
		    " LIMIT 1",
		    "find a job", &stmt);
		if (ret)
			return ret;
		db_bind_text(stmt, 1, key, -1, SQLITE_TRANSIENT);
		return find_one(st, stmt, id);
	}
	if ((size_t)(c1 - key) >= sizeof(sched))
		return -EINVAL;
	snprintf(sched, sizeof(sched), "%.*s", (int)(c1 - key), key);
	if (c2) {
		char *end;

		start = strtoll(c2 + 1, &end, 10);
		if (*end || c2[1] == '\0')
			c2 = NULL; /* the id itself holds a ':' */
	}
	snprintf(jid, sizeof(jid), "%.*s", (int)(c2 ? c2 - c1 - 1 : (long)strlen(c1 + 1)), c1 + 1);
	ret = store__prepare(
	    st,
	    c2 ? "SELECT id FROM jobs WHERE scheduler = ?1 AND job_id = ?2 AND start_ms = ?3"
		 " ORDER BY id DESC LIMIT 1"
	       : "SELECT id FROM jobs WHERE scheduler = ?1 AND job_id = ?2"
		 " ORDER BY start_ms DESC, id DESC LIMIT 1",
	    "find a job", &stmt);
	if (ret)
		return ret;
	db_bind_text(stmt, 1, sched, -1, SQLITE_TRANSIENT);
	db_bind_text(stmt, 2, jid, -1, SQLITE_TRANSIENT);
	if (c2)
		db_bind_int64(stmt, 3, start);
	return find_one(st, stmt, id);
}

int store_get_job_summary_json(struct store *st, int64_t id, struct strbuf *out)
{
	struct db_stmt *stmt;
	int rc, ret;

	if (st->schema_version < 3)
		return -ENOENT;
	ret = store__prepare(st, "SELECT report_json FROM job_summaries WHERE job_id = ?",
			     "read a job summary", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, id);
	rc = db_step(stmt);
	if (rc == SQLITE_ROW && db_column_type(stmt, 0) == SQLITE_TEXT)
		ret = strbuf_add(out, db_column_text(stmt, 0), (size_t)db_column_bytes(stmt, 0));
	else if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		ret = -ENOENT;
	else
		ret = store__read_fail(st, rc, "read a job summary");
	db_finalize(stmt);
	return ret;
}

int store_for_each_job(struct store *st, int (*fn)(const struct job_record *job, void *arg),
		       void *arg)
{
	struct job_record *job;
	struct db_stmt *stmt;
	char sql[2048];
	int rc, ret;

	/* a job_record holds a command line: keep it off small stacks */
	job = malloc(sizeof(*job));
	if (!job)
		return log_err(-ENOMEM, "cannot list the jobs of store '%s'", st->path);
	job_select(st, sql, sizeof(sql), "ORDER BY j.start_ms, j.id");
	ret = store__prepare(st, sql, "list the jobs", &stmt);
	if (ret)
		goto out_free_job;
	while ((rc = db_step(stmt)) == SQLITE_ROW) {
		job_from_row(stmt, job);
		ret = fn(job, arg);
		if (ret)
			break;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "list the jobs");
	db_finalize(stmt);
out_free_job:
	free(job);
	return ret;
}

static void bind_param(struct db_stmt *stmt, int i, const char *p)
{
	char *end;
	long long v;

	if (!p || !*p) {
		db_bind_null(stmt, i);
		return;
	}
	errno = 0;
	v = strtoll(p, &end, 10);
	if (*end == '\0' && errno == 0)
		db_bind_int64(stmt, i, v);
	else
		db_bind_text(stmt, i, p, -1, SQLITE_TRANSIENT);
}

void store__json_column(struct jsonw *w, struct db_stmt *stmt, int c)
{
	const char *name = db_column_name(stmt, c);

	switch (db_column_type(stmt, c)) {
	case SQLITE_INTEGER:
		/* by convention, "is_*" and "healthy" columns are booleans */
		if (strncmp(name, "is_", 3) == 0 || strcmp(name, "healthy") == 0)
			jsonw_bool(w, db_column_int64(stmt, c) != 0);
		else
			jsonw_int(w, db_column_int64(stmt, c));
		break;
	case SQLITE_FLOAT:
		jsonw_double(w, db_column_double(stmt, c), 3);
		break;
	case SQLITE_TEXT:
		jsonw_strn(w, (const char *)db_column_text(stmt, c),
			   (size_t)db_column_bytes(stmt, c));
		break;
	default:
		jsonw_null(w);
	}
}

void store__bind_params(struct db_stmt *stmt, const char *const *params)
{
	for (int i = 0; params && params[i]; i++)
		bind_param(stmt, i + 1, params[i]);
}

int store_query_json(struct store *st, const char *sql, const char *const *params, bool first_only,
		     struct jsonw *w, int64_t *nrows)
{
	struct db_stmt *stmt;
	int rc, ret, ncols;

	*nrows = 0;
	ret = store__prepare(st, sql, "query", &stmt);
	if (ret)
		return ret;
	if (!db_stmt_readonly(stmt)) {
		db_finalize(stmt);
		return log_err(-EPERM, "store_query_json: not a read-only statement");
	}
	store__bind_params(stmt, params);
	if (!first_only)
		jsonw_arr_begin(w);
	while ((rc = db_step(stmt)) == SQLITE_ROW) {
		ncols = db_column_count(stmt); /* known once run, for PostgreSQL */
		jsonw_obj_begin(w);
		for (int c = 0; c < ncols; c++) {
			const char *name = db_column_name(stmt, c);

			jsonw_key(w, name);
			store__json_column(w, stmt, c);
		}
		jsonw_obj_end(w);
		(*nrows)++;
		if (first_only)
			break;
	}
	if (first_only && *nrows == 0)
		jsonw_null(w);
	if (!first_only)
		jsonw_arr_end(w);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "query");
	db_finalize(stmt);
	return ret ? ret : jsonw_error(w);
}

int store_query_rows(struct store *st, const char *sql, const char *const *params,
		     int (*fn)(const struct store_row *r, void *arg), void *arg)
{
	struct store_row row;
	struct db_stmt *stmt;
	int rc, ret;

	ret = store__prepare(st, sql, "query", &stmt);
	if (ret)
		return ret;
	if (!db_stmt_readonly(stmt)) {
		db_finalize(stmt);
		return log_err(-EPERM,
			       "store_query_rows: not a read-only statement of few columns");
	}
	store__bind_params(stmt, params);
	while (!ret && (rc = db_step(stmt)) == SQLITE_ROW) {
		row.ncols = db_column_count(stmt);
		if (row.ncols > STORE_ROW_MAX) {
			ret = log_err(-EPERM, "store_query_rows: more than %d columns",
				      STORE_ROW_MAX);
			break;
		}
		for (int c = 0; c < row.ncols; c++) {
			const unsigned char *t = db_column_text(stmt, c);

			row.null[c] = db_column_type(stmt, c) == SQLITE_NULL;
			row.num[c] = db_column_double(stmt, c);
			row.text[c] = t ? (const char *)t : "";
		}
		ret = fn(&row, arg);
	}
	if (!ret && rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "query");
	db_finalize(stmt);
	return ret;
}
