/*
 * ingest_pg.c - a batch's fact rows on a head's PostgreSQL store: a table
 * of many new rows (a batch's process samples) in one COPY in text format
 * (store__pg_copy_facts), the others together in one INSERT sent ahead in
 * libpq's pipeline, each table's INSERT ... SELECT FROM unnest() of its
 * columns' arrays in binary format a data-modifying WITH of the last
 * (store__pg_unnest_run).  The rest of the ingest is ingest.c's.
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

/* A fact table's few new rows, to go in the batch's one unnest INSERT (store__pg_unnest_run). */
struct unnest_part {
	const struct store_table *t;
	int seq_col;
	size_t nnew;
	char *types;	  /* unnest_types', a copy: the cache may drop its own meanwhile */
	char *insert_sql; /* the table and its columns: a part of the statement's cache key */
	enum column_role role[STORE_ROWSET_MAX_COLUMNS];
};

int store__pg_unnest_later(struct ingest *in, const struct store_table *t, int seq_col,
			   const enum column_role *role, const char *insert_sql,
			   const char *cached_types, size_t nnew)
{
	struct unnest_part *p;
	const char *types;
	int ret = unnest_types(in, t, insert_sql, cached_types, &types);

	if (ret)
		return ret;
	if (in->nparts == in->parts_alloc) {
		size_t n = in->parts_alloc ? 2 * in->parts_alloc : 8;

		p = realloc(in->parts, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		in->parts = p;
		in->parts_alloc = n;
	}
	p = &in->parts[in->nparts];
	p->t = t;
	p->seq_col = seq_col;
	p->nnew = nnew;
	p->types = strdup(types);
	p->insert_sql = strdup(insert_sql);
	if (!p->types || !p->insert_sql) {
		free(p->types);
		free(p->insert_sql);
		return -ENOMEM;
	}
	memcpy(p->role, role, (size_t)t->ncols * sizeof(*role));
	in->nparts++;
	return 0;
}

void store__pg_unnest_release(struct ingest *in)
{
	for (size_t i = 0; i < in->nparts; i++) {
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

/* One part's arrays, each column's start in arrays at start[c]. */
static int unnest_arrays(struct ingest *in, const struct unnest_part *p, struct strbuf *arrays,
			 size_t *start)
{
	const struct store_table *t = p->t;
	int ret = 0;

	for (int c = 0; c < t->ncols && !ret; c++) {
		char kind = p->types[c];
		int64_t nth = 0;

		start[c] = arrays->len;
		ret =
		    kind != '-' ? pg_binarray_begin(arrays, elem_of(kind)) : pg_array_begin(arrays);
		for (size_t r = 0; r < t->nrows && !ret; r++) {
			const struct store_value *row = &t->cells[r * (size_t)t->ncols];
			struct store_value v;

			if (!store__row_is_new(in, &row[p->seq_col]))
				continue; /* held already, or outside the batch's range */
			ret = store__head_value(in, t, c, p->role[c], &row[c], &v);
			if (ret)
				break;
			/* the head's seqs, in the rows' order */
			if (p->role[c] == COL_SEQ)
				v.i = in->st->next_seq + nth++;
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
		ret = unnest_arrays(in, &in->parts[i], &arrays, start + c0);
		c0 += (size_t)in->parts[i].t->ncols;
		in->st->next_seq += (int64_t)in->parts[i].nnew;
		in->rows += (int64_t)in->parts[i].nnew;
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
