/*
 * ingest_pg.c - a batch's fact rows on a head's PostgreSQL store: its
 * process samples as sets, a row of arrays for each job and day
 * (store__pg_proc_sets), sent ahead in libpq's pipeline; another table of
 * many new rows in one COPY in text format (store__pg_copy_facts); the
 * others together in one INSERT sent ahead, each table's INSERT ... SELECT
 * FROM unnest() of its columns' arrays in binary format a data-modifying
 * WITH of the last (store__pg_unnest_run).  The rest of the ingest is
 * ingest.c's.
 */
#include "store/ingest.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "db/pg.h"

/*
 * PostgreSQL: a fact table's new rows in one COPY (pg_copy_begin), each
 * cell as head_value makes it, where an INSERT a row cost the server a
 * message, an executor start and a partition routing each.  A bad cell
 * midway gives the COPY up: nothing of it is stored, and the group's
 * transaction is rolled back (pg_group) as after a refused INSERT.
 */
int store__pg_copy_facts(struct ingest *in, const struct store_table *t, int seq_col,
			 const enum column_role *role, size_t nnew)
{
	struct pg_conn *pg = in->st->conn.pg;
	const char *fail = NULL;
	char sql[4096];
	size_t len = 0;
	int64_t stored;
	int rc, ret = 0;

	len += (size_t)snprintf(sql, sizeof(sql), "COPY %s (", t->name);
	if (len < sizeof(sql))
		len += store__col_list(sql + len, sizeof(sql) - len, t);
	if (len < sizeof(sql))
		len += (size_t)snprintf(sql + len, sizeof(sql) - len, ") FROM STDIN");
	if (len >= sizeof(sql))
		return store__ingest_bad(in, "%s: too many columns", t->name);
	rc = pg_copy_begin(pg, sql);
	if (rc != SQLITE_OK)
		return store__row_failed(in, t, rc);
	for (size_t r = 0; r < t->nrows && !ret; r++) {
		const struct store_value *row = &t->cells[r * (size_t)t->ncols];

		if (!store__row_is_new(in, &row[seq_col]))
			continue; /* held already, or outside the batch's range */
		for (int c = 0; c < t->ncols && !ret; c++) {
			struct store_value v;

			ret = store__head_value(in, t, c, role[c], &row[c], &v);
			if (ret)
				break;
			switch (v.type) {
			case STORE_VALUE_INT:
				pg_copy_int64(pg, v.i);
				break;
			case STORE_VALUE_REAL:
				pg_copy_double(pg, v.d);
				break;
			case STORE_VALUE_TEXT:
				pg_copy_text(pg, v.s, v.len);
				break;
			default:
				pg_copy_null(pg);
				break;
			}
		}
		if (ret)
			break;
		pg_copy_row_end(pg);
		in->st->next_seq++;
		in->rows++;
	}
	if (ret)
		fail = in->errmsg;
	rc = pg_copy_end(pg, fail, &stored);
	if (ret)
		return ret;
	if (rc != SQLITE_OK)
		return store__row_failed(in, t, rc);
	if ((size_t)stored != nnew)
		return store__ingest_bad(in, "%s: %lld rows of %zu stored", t->name,
					 (long long)stored, nnew);
	return 0;
}

/*
 * PostgreSQL: the type of each of t's columns on the head, as the server
 * names it ("bigint", "double precision"), for the casts of the unnest
 * INSERT's arrays: 0, -EINVAL (errmsg) for a column the head lacks, or
 * -EMEDIUMTYPE for one an array literal does not carry (bytea).
 */
static int pg_column_types(struct ingest *in, const struct store_table *t, char (*type)[40])
{
	struct db_stmt *stmt;
	int rc, found = 0;

	rc = db_prepare(&in->st->conn,
			"SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute"
			" WHERE attrelid = to_regclass(?1) AND attnum > 0 AND NOT attisdropped",
			&stmt);
	if (rc != SQLITE_OK)
		return store__row_failed(in, t, rc);
	db_bind_text(stmt, 1, t->name, -1, SQLITE_STATIC);
	for (int c = 0; c < t->ncols; c++)
		type[c][0] = '\0';
	while ((rc = db_step(stmt)) == SQLITE_ROW) {
		const char *name = (const char *)db_column_text(stmt, 0);
		const char *ty = (const char *)db_column_text(stmt, 1);
		int c = name ? store__col_index(t, name) : -1;

		if (c >= 0 && ty && strlen(ty) < sizeof(type[c])) {
			snprintf(type[c], sizeof(type[c]), "%s", ty);
			found++;
		}
	}
	db_finalize(stmt);
	if (rc != SQLITE_DONE)
		return store__row_failed(in, t, rc);
	for (int c = 0; c < t->ncols; c++) {
		if (!type[c][0])
			return store__ingest_bad(in, "%s: no column '%s' here", t->name,
						 t->cols[c]);
		if (strcmp(type[c], "bytea") == 0)
			return -EMEDIUMTYPE;
	}
	return found == t->ncols ? 0 : store__ingest_bad(in, "%s: a column named twice", t->name);
}

/*
 * PostgreSQL: how a column's array is sent, by the column's type on the
 * head: in binary (array_recv reads it, nothing to parse), 'i' bigint,
 * 'f' double precision, 't' text; '-' any other type, whose array goes
 * as a text literal.
 */
static char elem_kind(const char *type)
{
	return strcmp(type, "bigint") == 0	       ? 'i'
	       : strcmp(type, "double precision") == 0 ? 'f'
	       : strcmp(type, "text") == 0	       ? 't'
						       : '-';
}

static enum pg_elem elem_of(char kind)
{
	return kind == 'i' ? PG_ELEM_INT8 : kind == 'f' ? PG_ELEM_FLOAT8 : PG_ELEM_TEXT;
}

/*
 * A cell of a binary array of kind's elements.  What the column's type is
 * not is converted as the server would have read it from text: an integer
 * into a real column, an integral real into an integer column, a number
 * written out into a text column, text that is wholly a number into a
 * number column; anything else refused, as the server would.
 */
static int binarray_cell(struct ingest *in, const struct store_table *t, int c, char kind,
			 struct strbuf *sb, size_t start, const struct store_value *v)
{
	char tmp[64], *end;
	int n;

	switch (v->type) {
	case STORE_VALUE_INT:
		if (kind == 'i')
			return pg_binarray_int64(sb, start, v->i);
		if (kind == 'f')
			return pg_binarray_double(sb, start, (double)v->i);
		n = snprintf(tmp, sizeof(tmp), "%" PRId64, v->i);
		return pg_binarray_text(sb, start, tmp, (size_t)n);
	case STORE_VALUE_REAL:
		if (kind == 'f')
			return pg_binarray_double(sb, start, v->d);
		if (kind == 't') {
			n = pg_format_double(tmp, sizeof(tmp), v->d);
			return pg_binarray_text(sb, start, tmp, (size_t)n);
		}
		/* 2^63 is the first double above the range */
		if (v->d >= -9223372036854775808.0 && v->d < 9223372036854775808.0 &&
		    v->d == (double)(int64_t)v->d)
			return pg_binarray_int64(sb, start, (int64_t)v->d);
		return store__ingest_bad(in, "%s: column '%s' takes integers, not %.17g", t->name,
					 t->cols[c], v->d);
	case STORE_VALUE_TEXT:
		if (kind == 't') {
			n = pg_binarray_text(sb, start, v->s, v->len);
			return n == -E2BIG ? store__ingest_bad(in, "%s: column '%s': text too long",
							       t->name, t->cols[c])
					   : n;
		}
		if (v->len > 0 && v->len < sizeof(tmp)) {
			memcpy(tmp, v->s, v->len);
			tmp[v->len] = '\0';
			errno = 0;
			if (kind == 'i') {
				long long i = strtoll(tmp, &end, 10);

				if (!errno && end == tmp + v->len)
					return pg_binarray_int64(sb, start, i);
			} else {
				double d = strtod(tmp, &end);

				if (!errno && end == tmp + v->len)
					return pg_binarray_double(sb, start, d);
			}
		}
		return store__ingest_bad(in, "%s: column '%s' takes numbers, not '%.*s'", t->name,
					 t->cols[c], (int)(v->len < 40 ? v->len : 40), v->s);
	default:
		return pg_binarray_null(sb, start);
	}
}

/* A cell of a text array literal. */
static int textarray_cell(struct strbuf *sb, const struct store_value *v)
{
	switch (v->type) {
	case STORE_VALUE_INT:
		return pg_array_int64(sb, v->i);
	case STORE_VALUE_REAL:
		return pg_array_double(sb, v->d);
	case STORE_VALUE_TEXT:
		return pg_array_text(sb, v->s, v->len);
	default:
		return pg_array_null(sb);
	}
}

/*
 * PostgreSQL: the types of a table's columns as the batch names them, for
 * its unnest INSERT: *types is its columns' elem_kind letters, a newline,
 * then their type names, each ended by a comma ("if\nbigint,double
 * precision,").  Read from the server the first time, then kept beside the
 * table's INSERT for the batch's columns (insert_sql) in the statement
 * cache, which hands them to the next batch with that statement (cached:
 * what it keeps, or NULL).  -EMEDIUMTYPE: a column no array carries
 * (bytea): the caller COPYs.
 */
static int unnest_types(struct ingest *in, const struct store_table *t, const char *insert_sql,
			const char *cached, const char **types)
{
	char(*type)[40];
	struct strbuf aux;
	int ret;

	*types = cached;
	if (cached)
		return 0;
	type = calloc((size_t)t->ncols, sizeof(*type));
	if (!type)
		return -ENOMEM;
	ret = pg_column_types(in, t, type);
	strbuf_init(&aux, STRBUF_DEFAULT_MAX);
	for (int c = 0; c < t->ncols && !ret; c++)
		strbuf_addch(&aux, elem_kind(type[c]));
	strbuf_addch(&aux, '\n');
	for (int c = 0; c < t->ncols && !ret; c++)
		strbuf_addf(&aux, "%s,", type[c]);
	free(type);
	if (!ret && strbuf_error(&aux))
		ret = -ENOMEM;
	if (ret) {
		strbuf_release(&aux);
		return ret;
	}
	store__cached_set_aux(in->st, insert_sql, aux.buf);
	*types = aux.buf;
	return 0;
}

/* A row of a batch's table that goes in an array: where it is, its seq's offset. */
struct set_row {
	int64_t job, day, ts; /* store__pg_proc_sets': the row's set */
	bool job_null;
	size_t r;    /* the row in the batch's table */
	int64_t nth; /* among the batch's new rows: its seq's offset */
};

/*
 * Some new rows of a fact table, to go in the batch's one unnest INSERT
 * (store__pg_unnest_run): all of a table's few (store__pg_unnest_later), or
 * the process samples too few for a set (store__pg_proc_sets).
 */
struct unnest_part {
	const struct store_table *t;
	struct set_row *rows; /* r and nth of each */
	size_t nrows;
	int64_t seq0;	  /* the rows' seqs are seq0 + nth; -1: the head's next, at the run */
	char *types;	  /* unnest_types', a copy: the cache may drop its own meanwhile */
	char *insert_sql; /* the table and its columns: a part of the statement's cache key */
	enum column_role role[STORE_ROWSET_MAX_COLUMNS];
};

/*
 * A part for n rows of t, with types (copied), its rows for the caller to
 * fill (r and nth); seq0 as struct unnest_part's.  NULL: out of memory.
 */
static struct unnest_part *unnest_add(struct ingest *in, const struct store_table *t,
				      const enum column_role *role, const char *insert_sql,
				      const char *types, size_t n, int64_t seq0)
{
	struct unnest_part *p;

	if (in->nparts == in->parts_alloc) {
		size_t k = in->parts_alloc ? 2 * in->parts_alloc : 8;

		p = realloc(in->parts, k * sizeof(*p));
		if (!p)
			return NULL;
		in->parts = p;
		in->parts_alloc = k;
	}
	p = &in->parts[in->nparts];
	p->t = t;
	p->nrows = n;
	p->seq0 = seq0;
	p->rows = calloc(n ? n : 1, sizeof(*p->rows));
	p->types = strdup(types);
	p->insert_sql = strdup(insert_sql);
	if (!p->rows || !p->types || !p->insert_sql) {
		free(p->rows);
		free(p->types);
		free(p->insert_sql);
		return NULL;
	}
	memcpy(p->role, role, (size_t)t->ncols * sizeof(*role));
	in->nparts++;
	return p;
}

int store__pg_unnest_later(struct ingest *in, const struct store_table *t, int seq_col,
			   const enum column_role *role, const char *insert_sql,
			   const char *cached_types, size_t nnew)
{
	struct unnest_part *p;
	const char *types;
	size_t n = 0;
	int ret = unnest_types(in, t, insert_sql, cached_types, &types);

	if (ret)
		return ret;
	p = unnest_add(in, t, role, insert_sql, types, nnew, -1);
	if (!p)
		return -ENOMEM;
	for (size_t r = 0; r < t->nrows && n < nnew; r++) {
		if (!store__row_is_new(in, &t->cells[r * (size_t)t->ncols + (size_t)seq_col]))
			continue; /* held already, or outside the batch's range */
		p->rows[n] = (struct set_row){.r = r, .nth = (int64_t)n};
		n++;
	}
	return 0;
}

void store__pg_unnest_release(struct ingest *in)
{
	for (size_t i = 0; i < in->nparts; i++) {
		free(in->parts[i].rows);
		free(in->parts[i].types);
		free(in->parts[i].insert_sql);
	}
	in->nparts = 0;
}

/*
 * The statement for the batch's parts: one table's INSERT ... SELECT FROM
 * unnest(), the others' before it as data-modifying WITHs ("WITH u0 AS
 * (INSERT ...), u1 AS (INSERT ...) INSERT ..."), their parameters (an array
 * a column) numbered on from one part to the next.  Made once for each set
 * of tables and columns (key).
 */
static int unnest_parts_stmt(struct ingest *in, const char *key, struct db_stmt **stmt)
{
	struct strbuf sql;
	int param = 0, rc;

	*stmt = store__cached_find(in->st, key);
	if (*stmt)
		return 0;
	strbuf_init(&sql, STRBUF_DEFAULT_MAX);
	for (size_t i = 0; i < in->nparts; i++) {
		const struct unnest_part *p = &in->parts[i];
		const char *type = strchr(p->types, '\n') + 1;
		bool with = i + 1 < in->nparts;

		if (with)
			strbuf_addf(&sql, "%su%zu AS (", i ? ", " : "WITH ", i);
		else if (i)
			strbuf_addch(&sql, ' ');
		strbuf_addf(&sql, "INSERT INTO %s (", p->t->name);
		for (int c = 0; c < p->t->ncols; c++)
			strbuf_addf(&sql, "%s\"%s\"", c ? ", " : "", p->t->cols[c]);
		strbuf_addstr(&sql, ") SELECT * FROM unnest(");
		for (int c = 0; c < p->t->ncols; c++) {
			const char *comma = strchr(type, ',');

			strbuf_addf(&sql, "%sCAST(?%d AS %.*s[])", c ? ", " : "", ++param,
				    (int)(comma - type), type);
			type = comma + 1;
		}
		strbuf_addstr(&sql, with ? "))" : ")");
	}
	rc = strbuf_error(&sql) ? SQLITE_NOMEM
				: store__cached_stmt_as(in->st, key, strbuf_str(&sql), stmt);
	strbuf_release(&sql);
	if (rc != SQLITE_OK)
		return rc == SQLITE_NOMEM ? -ENOMEM : store__row_failed(in, in->parts[0].t, rc);
	return 0;
}

/*
 * The arrays of rows[0..n) of t, a column's after another, column c's at
 * start[c] in arrays; skip_c's (or none: -1) an array of nothing.  Each
 * row's seq is seq0 + its nth.
 */
static int rows_arrays(struct ingest *in, const struct store_table *t, const enum column_role *role,
		       const char *types, int skip_c, const struct set_row *rows, size_t n,
		       int64_t seq0, struct strbuf *arrays, size_t *start)
{
	int ret = 0;

	for (int c = 0; c < t->ncols && !ret; c++) {
		char kind = types[c];

		start[c] = arrays->len;
		if (c == skip_c)
			continue;
		ret =
		    kind != '-' ? pg_binarray_begin(arrays, elem_of(kind)) : pg_array_begin(arrays);
		for (size_t i = 0; i < n && !ret; i++) {
			const struct store_value *cell =
			    &t->cells[rows[i].r * (size_t)t->ncols + c];
			struct store_value v;

			ret = store__head_value(in, t, c, role[c], cell, &v);
			if (ret)
				break;
			if (role[c] == COL_SEQ)
				v.i = seq0 + rows[i].nth;
			ret = kind != '-' ? binarray_cell(in, t, c, kind, arrays, start[c], &v)
					  : textarray_cell(arrays, &v);
		}
		if (!ret && kind == '-')
			ret = pg_array_end(arrays);
	}
	return ret;
}

/* A column's array as parameter i: in binary for kind 'i', 'f' or 't', else text. */
static int bind_array(struct db_stmt *stmt, int i, char kind, const char *a, size_t n)
{
	if (kind != '-')
		return db_bind_pg_binary(stmt, i, a, n, pg_elem_array_type(elem_of(kind)));
	return db_bind_text(stmt, i, a, (int)n, SQLITE_STATIC);
}

/*
 * PostgreSQL: the batch's fact tables of few new rows (store__pg_unnest_later) in one
 * statement sent ahead in the pipeline with the batch's other statements:
 * no round trip of its own, where a COPY costs two (libpq cannot pipeline
 * one), and one executor start and plan for them all, where a statement a
 * table cost each its own.  The arrays go in binary where the columns'
 * types allow (unnest_types), else as text literals.
 */
int store__pg_unnest_run(struct ingest *in)
{
	struct strbuf key, arrays;
	struct db_stmt *stmt = NULL;
	size_t *start = NULL, ncols = 0;
	int rc, ret = 0;

	if (in->nparts == 0)
		return 0;
	strbuf_init(&key, STRBUF_DEFAULT_MAX);
	strbuf_init(&arrays, STRBUF_DEFAULT_MAX);
	strbuf_addstr(&key, "unnest");
	for (size_t i = 0; i < in->nparts; i++) {
		strbuf_addf(&key, "\n%s", in->parts[i].insert_sql);
		ncols += (size_t)in->parts[i].t->ncols;
	}
	ret = strbuf_error(&key) ? -ENOMEM : unnest_parts_stmt(in, strbuf_str(&key), &stmt);
	start = ret ? NULL : calloc(ncols + 1, sizeof(*start));
	if (!ret && !start)
		ret = -ENOMEM;
	/* one array a column, in one buffer: bound once it is whole (it may move while it grows) */
	for (size_t i = 0, c0 = 0; i < in->nparts && !ret; i++) {
		const struct unnest_part *p = &in->parts[i];

		ret = rows_arrays(in, p->t, p->role, p->types, -1, p->rows, p->nrows,
				  p->seq0 >= 0 ? p->seq0 : in->st->next_seq, &arrays, start + c0);
		c0 += (size_t)p->t->ncols;
		if (p->seq0 < 0) { /* else the rows' seqs were the head's already */
			in->st->next_seq += (int64_t)p->nrows;
			in->rows += (int64_t)p->nrows;
		}
	}
	if (!ret) {
		start[ncols] = arrays.len;
		for (size_t i = 0, c0 = 0; i < in->nparts && !ret; i++) {
			const struct unnest_part *p = &in->parts[i];

			for (int c = 0; c < p->t->ncols && !ret; c++, c0++) {
				const char *a = arrays.buf + start[c0];
				size_t n = start[c0 + 1] - start[c0];

				/* one not bound would be a NULL: no rows, the batch acknowledged */
				rc = bind_array(stmt, (int)c0 + 1, p->types[c], a, n);
				if (rc != SQLITE_OK)
					ret = -ENOMEM;
			}
		}
	}
	if (!ret) {
		/* sent ahead: a value a column refuses fails the group where it surfaces */
		rc = db_step(stmt);
		if (rc != SQLITE_DONE)
			ret = store__row_failed(in, in->parts[0].t, rc);
	}
	if (stmt) {
		db_reset(stmt);
		db_clear_bindings(stmt);
	}
	free(start);
	strbuf_release(&arrays);
	strbuf_release(&key);
	store__pg_unnest_release(in);
	return ret;
}

/*
 * PostgreSQL: a batch's process samples as sets (pgschema.c, proc_sets_ddl):
 * a set is the rows of one job and one UTC day, in the batch's order, each
 * column but job_id an array, cut where it would pass PROC_SET_BYTES so
 * that a set stays in its heap page (compressed or not: pgschema.c); a job's
 * few rows of a day (under PROC_SET_MIN) go as rows of proc_samples;
 * several sets a statement (PROC_SETS_STMT), each an INSERT ... VALUES
 * sent ahead in the pipeline.  Each row keeps the seq it would have had as
 * a row (the head's next, in the batch's order), so proc_samples_all reads
 * as if the rows had been stored one by one.
 */
#define PROC_SET_BYTES 7168
#define PROC_SETS_STMT 8
/*
 * A job's samples of a day in a batch fewer than this go as rows of
 * proc_samples (in the batch's unnest INSERT): a set takes 24 bytes a column for its arrays'
 * headers, so a set of a few samples took twice the room of their rows
 * (a node of many small jobs: 1.6 samples a set, 518 bytes a set against
 * 144 a row), and saved the server little.
 */
#define PROC_SET_MIN 8

static int by_set(const void *pa, const void *pb)
{
	const struct set_row *a = pa, *b = pb;

	if (a->job_null != b->job_null)
		return a->job_null ? -1 : 1;
	if (!a->job_null && a->job != b->job)
		return a->job < b->job ? -1 : 1;
	if (a->day != b->day)
		return a->day < b->day ? -1 : 1;
	return (a->r > b->r) - (a->r < b->r);
}

static bool same_set(const struct set_row *a, const struct set_row *b)
{
	return a->job_null == b->job_null && (a->job_null || a->job == b->job) && a->day == b->day;
}

/* The name of column c's type in unnest_types' string (after the newline), and its length. */
static const char *type_name(const char *types, int c, int *len)
{
	const char *p = strchr(types, '\n') + 1;

	for (int i = 0; i < c; i++)
		p = strchr(p, ',') + 1;
	*len = (int)(strchr(p, ',') - p);
	return p;
}

/* The INSERT of k sets with the batch's columns (t's but job_id), cached by k and insert_sql. */
static int sets_stmt(struct ingest *in, const struct store_table *t, int job_c, const char *types,
		     const char *insert_sql, int k, struct db_stmt **stmt)
{
	struct strbuf key, sql;
	int param = 0, rc;

	strbuf_init(&key, STRBUF_DEFAULT_MAX);
	strbuf_addf(&key, "sets %d\n%s", k, insert_sql);
	if (strbuf_error(&key)) {
		strbuf_release(&key);
		return -ENOMEM;
	}
	*stmt = store__cached_find(in->st, strbuf_str(&key));
	if (*stmt) {
		strbuf_release(&key);
		return 0;
	}
	strbuf_init(&sql, STRBUF_DEFAULT_MAX);
	strbuf_addstr(&sql, "INSERT INTO proc_sample_sets (\"job_id\", \"ts_lo\", \"ts_hi\"");
	for (int c = 0; c < t->ncols; c++)
		if (c != job_c)
			strbuf_addf(&sql, ", \"%s\"", t->cols[c]);
	strbuf_addstr(&sql, ") VALUES ");
	for (int s = 0; s < k; s++) {
		strbuf_addf(&sql, "%s(?%d, ?%d, ?%d", s ? ", " : "", param + 1, param + 2,
			    param + 3);
		param += 3;
		for (int c = 0; c < t->ncols; c++) {
			int len;
			const char *ty;

			if (c == job_c)
				continue;
			ty = type_name(types, c, &len);
			strbuf_addf(&sql, ", CAST(?%d AS %.*s[])", ++param, len, ty);
		}
		strbuf_addch(&sql, ')');
	}
	rc = strbuf_error(&sql) || strbuf_error(&key)
		 ? SQLITE_NOMEM
		 : store__cached_stmt_as(in->st, strbuf_str(&key), strbuf_str(&sql), stmt);
	strbuf_release(&sql);
	strbuf_release(&key);
	if (rc != SQLITE_OK)
		return rc == SQLITE_NOMEM ? -ENOMEM : store__row_failed(in, t, rc);
	return 0;
}

/* Runs one statement of k sets: set[s] the rows of set s, from..to in rows. */
static int sets_run(struct ingest *in, const struct store_table *t, const enum column_role *role,
		    const char *types, const char *insert_sql, int job_c,
		    const struct set_row *rows, const size_t (*set)[2], int k)
{
	size_t ncols = (size_t)t->ncols, *start;
	struct db_stmt *stmt = NULL;
	struct strbuf arrays;
	int rc, ret, param = 0;

	ret = sets_stmt(in, t, job_c, types, insert_sql, k, &stmt);
	if (ret)
		return ret;
	start = calloc((size_t)k * ncols + 1, sizeof(*start));
	if (!start)
		return -ENOMEM;
	strbuf_init(&arrays, STRBUF_DEFAULT_MAX);
	for (int s = 0; s < k && !ret; s++)
		ret =
		    rows_arrays(in, t, role, types, job_c, rows + set[s][0], set[s][1] - set[s][0],
				in->st->next_seq, &arrays, start + (size_t)s * ncols);
	start[(size_t)k * ncols] = arrays.len;
	for (int s = 0; s < k && !ret; s++) {
		const struct set_row *first = &rows[set[s][0]];
		int64_t lo = first->ts, hi = first->ts;

		for (size_t i = set[s][0]; i < set[s][1]; i++) {
			lo = rows[i].ts < lo ? rows[i].ts : lo;
			hi = rows[i].ts > hi ? rows[i].ts : hi;
		}
		rc = first->job_null ? db_bind_null(stmt, ++param)
				     : db_bind_int64(stmt, ++param, first->job);
		if (rc == SQLITE_OK)
			rc = db_bind_int64(stmt, ++param, lo);
		if (rc == SQLITE_OK)
			rc = db_bind_int64(stmt, ++param, hi);
		for (size_t c = 0; c < ncols && rc == SQLITE_OK; c++) {
			size_t i = (size_t)s * ncols + c;

			if ((int)c == job_c)
				continue; /* its start is the next's: an array of nothing */
			rc = bind_array(stmt, ++param, types[c], arrays.buf + start[i],
					start[i + 1] - start[i]);
		}
		if (rc != SQLITE_OK)
			ret = -ENOMEM;
	}
	if (!ret) {
		/* sent ahead: a value a column refuses fails the group where it surfaces */
		rc = db_step(stmt);
		if (rc != SQLITE_DONE)
			ret = store__row_failed(in, t, rc);
	}
	db_reset(stmt);
	db_clear_bindings(stmt);
	free(start);
	strbuf_release(&arrays);
	return ret;
}

int store__pg_proc_sets(struct ingest *in, const struct store_table *t, int seq_col,
			const enum column_role *role, const char *insert_sql,
			const char *cached_types, size_t nnew)
{
	int job_c = store__col_index(t, "job_id"), ts_c = store__col_index(t, "ts_ms");
	size_t n = 0, nkept, nsmall = 0, nsets = 0, (*set)[2] = NULL;
	struct set_row *rows, *order;
	const char *cached;
	char *types;
	int ret;

	if (job_c < 0 || ts_c < 0)
		return -EMEDIUMTYPE; /* rows the sets cannot take: COPYed, or refused there */
	ret = unnest_types(in, t, insert_sql, cached_types, &cached);
	if (ret)
		return ret;
	/* a copy: the cache may drop its own while the sets' statements join it */
	types = strdup(cached);
	rows = calloc(nnew, sizeof(*rows));
	order = calloc(nnew, sizeof(*order));
	set = calloc(nnew, sizeof(*set));
	if (!types || !rows || !order || !set) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t r = 0; r < t->nrows && !ret; r++) {
		const struct store_value *row = &t->cells[r * (size_t)t->ncols];
		const struct store_value *ts = &row[ts_c];
		struct store_value job;

		if (!store__row_is_new(in, &row[seq_col]))
			continue; /* held already, or outside the batch's range */
		if (ts->type != STORE_VALUE_INT || n == nnew) {
			ret = -EMEDIUMTYPE; /* a time of another type: as COPY takes it */
			break;
		}
		ret = store__head_value(in, t, job_c, role[job_c], &row[job_c], &job);
		rows[n] = (struct set_row){
		    .job = job.i,
		    .job_null = job.type == STORE_VALUE_NULL,
		    .ts = ts->i,
		    .day = ts->i >= 0 ? ts->i / 86400000 : (ts->i - 86399999) / 86400000,
		    .r = r,
		    .nth = (int64_t)n,
		};
		if (!ret && !rows[n].job_null && job.type != STORE_VALUE_INT)
			ret = -EMEDIUMTYPE;
		n++;
	}
	if (ret)
		goto out;
	qsort(rows, n, sizeof(*rows), by_set);
	/*
	 * In order, the groups (a job and a day) that make sets, then those too
	 * small for one (PROC_SET_MIN), which go as rows (unnest_add).
	 */
	for (size_t g = 0, end; g < n; g = end) {
		for (end = g + 1; end < n && same_set(&rows[end], &rows[g]); end++)
			;
		nsmall += end - g < PROC_SET_MIN ? end - g : 0;
	}
	for (size_t g = 0, end, kept = 0, small = n - nsmall; g < n; g = end) {
		for (end = g + 1; end < n && same_set(&rows[end], &rows[g]); end++)
			;
		if (end - g < PROC_SET_MIN) {
			memcpy(&order[small], &rows[g], (end - g) * sizeof(*rows));
			small += end - g;
		} else {
			memcpy(&order[kept], &rows[g], (end - g) * sizeof(*rows));
			kept += end - g;
		}
	}
	nkept = n - nsmall;
	/* the sets: a group each, cut before PROC_SET_BYTES */
	for (size_t i = 0, bytes = 0; i < nkept; i++) {
		size_t row_bytes = 0;

		for (int c = 0; c < t->ncols; c++) {
			const struct store_value *v = &t->cells[order[i].r * (size_t)t->ncols + c];

			row_bytes += v->type == STORE_VALUE_TEXT ? 8 + v->len : 8;
		}
		if (i == 0 || !same_set(&order[i], &order[i - 1]) ||
		    bytes + row_bytes > PROC_SET_BYTES) {
			set[nsets][0] = i;
			nsets++;
			bytes = 0;
		}
		set[nsets - 1][1] = i + 1;
		bytes += row_bytes;
	}
	for (size_t s = 0; s < nsets && !ret; s += PROC_SETS_STMT) {
		int k = nsets - s < PROC_SETS_STMT ? (int)(nsets - s) : PROC_SETS_STMT;

		ret = sets_run(in, t, role, types, insert_sql, job_c, order, set + s, k);
	}
	/* the groups too small for a set: rows, their seqs the batch's order's as the sets' */
	if (!ret && nsmall > 0) {
		struct unnest_part *p =
		    unnest_add(in, t, role, insert_sql, types, nsmall, in->st->next_seq);

		if (p)
			memcpy(p->rows, order + nkept, nsmall * sizeof(*order));
		else
			ret = -ENOMEM;
	}
	if (!ret) {
		in->st->next_seq += (int64_t)n;
		in->rows += (int64_t)n;
	}
out:
	free(types);
	free(order);
	free(rows);
	free(set);
	return ret;
}
