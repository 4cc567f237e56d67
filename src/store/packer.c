/*
 * packer.c - moving closed hours of the fact tables into packs
 * (packs.h): store_pack_step.
 *
 *   pack_cut         up to which seq this step packs
 *   flush_pack       one pack: rows sorted by entity, encoded, inserted
 *   pack_table_rows  one table's rows up to the cut, key by key
 *   store_pack_step  one transaction: every table, then the cut in meta
 *   store_pack_tick  a step when due, for the writers
 *   store_unpack     packs back into plain rows (for plain SQL)
 *   store_reclaim    the free pages given back to the file system
 *
 * The cut is a seq: every fact row at or below it is packed, whatever its
 * table, so the rows left in a table are always above every packed seq
 * (the order the T_all tables rely on).  It is the first seq written at
 * or after before_ms (host rows are written every tick) minus one, and
 * never above max_seq (an agent passes its head's acknowledged seq: rows
 * in flight stay rows, cheap to send again).  A step packs at most
 * max_seqs seqs past the last cut, so a store packed for the first time
 * goes in several short transactions rather than one long one.
 *
 * A head's store is not packed (-EOPNOTSUPP): its session frames and
 * series read the plain tables of many nodes at once.
 */
#include "store/conn.h"
#include "store/pack.h"
#include "store/packs.h"
#include "store/writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "store/upkeep.h"

static int pack_cut(struct store *st, int64_t before_ms, int64_t max_seq, int64_t max_seqs,
		    int64_t *prev, int64_t *cut, bool *limited)
{
	int64_t first_young;
	bool found;
	int ret;

	ret = store__query_i64_opt(
	    st, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'pack_seq'", 0, prev, &found);
	if (ret)
		return ret;
	if (!found)
		*prev = 0;
	ret = store__query_i64_opt(
	    st,
	    "SELECT min(seq) FROM host_samples WHERE node_id IN (SELECT id FROM nodes)"
	    " AND ts_ms >= ?1",
	    before_ms, &first_young, &found);
	if (ret)
		return ret;
	*cut = (found ? first_young : st->next_seq) - 1;
	if (*cut > max_seq)
		*cut = max_seq;
	*limited = max_seqs > 0 && *cut - *prev > max_seqs;
	if (*limited)
		*cut = *prev + max_seqs;
	return 0;
}

struct packer {
	struct store *st;
	const struct pack_table *t;
	int ncols, sort_col, ts_col;
	struct pack_rows rows;
	size_t *order;
	struct strbuf blob;
	struct db_stmt *insert;
	struct store_pack_result *res;
};

static int cmp_cells(const struct pack_rows *p, size_t a, size_t b, int col)
{
	int ta = pack_type(p, a, col), tb = pack_type(p, b, col);
	size_t la, lb;
	const char *sa, *sb;
	int c;

	if (ta != tb)
		return ta - tb;
	if (ta == SQLITE_TEXT || ta == SQLITE_BLOB) {
		sa = pack_text(p, a, col, &la);
		sb = pack_text(p, b, col, &lb);
		c = memcmp(sa, sb, la < lb ? la : lb);
		return c ? c : (la > lb) - (la < lb);
	}
	return (pack_int(p, a, col) > pack_int(p, b, col)) -
	       (pack_int(p, a, col) < pack_int(p, b, col));
}

static int cmp_entity(const void *a, const void *b, void *arg)
{
	const struct packer *pk = arg;
	size_t ra = *(const size_t *)a, rb = *(const size_t *)b;
	int c = cmp_cells(&pk->rows, ra, rb, pk->sort_col);

	return c ? c : cmp_cells(&pk->rows, ra, rb, 0);
}

/* The buffered rows of one key as one pack; the buffer emptied. */
static int flush_pack(struct packer *pk, int64_t key)
{
	const struct pack_rows *p = &pk->rows;
	int64_t seq_lo = INT64_MAX, seq_hi = INT64_MIN, ts_lo = INT64_MAX, ts_hi = INT64_MIN;
	size_t raw_bytes;
	int ret, rc;

	if (p->nrows == 0)
		return 0;
	for (size_t r = 0; r < p->nrows; r++) {
		int64_t seq = pack_int(p, r, 0), ts = pack_int(p, r, pk->ts_col);

		pk->order[r] = r;
		seq_lo = seq < seq_lo ? seq : seq_lo;
		seq_hi = seq > seq_hi ? seq : seq_hi;
		ts_lo = ts < ts_lo ? ts : ts_lo;
		ts_hi = ts > ts_hi ? ts : ts_hi;
	}
	qsort_r(pk->order, p->nrows, sizeof(*pk->order), cmp_entity, pk);
	ret = pack_encode(p, pk->order, p->nrows, &pk->blob, &raw_bytes);
	if (ret)
		return log_err(ret, "cannot pack rows of %s", pk->t->name);
	db_reset(pk->insert);
	db_bind_text(pk->insert, 1, pk->t->name, -1, SQLITE_STATIC);
	db_bind_int64(pk->insert, 2, key);
	db_bind_int64(pk->insert, 3, seq_lo);
	db_bind_int64(pk->insert, 4, seq_hi);
	db_bind_int64(pk->insert, 5, ts_lo);
	db_bind_int64(pk->insert, 6, ts_hi);
	db_bind_int64(pk->insert, 7, (int64_t)p->nrows);
	db_bind_int64(pk->insert, 8, (int64_t)raw_bytes);
	db_bind_blob(pk->insert, 9, pk->blob.buf, (int)pk->blob.len, SQLITE_STATIC);
	rc = db_step(pk->insert);
	if (rc != SQLITE_DONE)
		return store__write_fail(pk->st, rc, "store a pack");
	pk->res->packs++;
	pk->res->rows += (int64_t)p->nrows;
	pk->res->bytes += (int64_t)pk->blob.len;
	pk->res->raw_bytes += (int64_t)raw_bytes;
	pack_rows_clear(&pk->rows);
	return 0;
}

static int column_index(struct store *st, const char *table, const char *col, int *out)
{
	struct db_stmt *stmt;
	int rc = db_prepare(&st->conn,
			    "SELECT cid FROM pragma_table_info(?1, 'main') WHERE name = ?2", &stmt);

	if (rc != SQLITE_OK)
		return store__write_fail(st, rc, "pack rows");
	db_bind_text(stmt, 1, table, -1, SQLITE_STATIC);
	db_bind_text(stmt, 2, col, -1, SQLITE_STATIC);
	rc = db_step(stmt);
	*out = rc == SQLITE_ROW ? (int)db_column_int64(stmt, 0) : -1;
	db_finalize(stmt);
	return *out >= 0 ? 0 : store__write_fail(st, SQLITE_CORRUPT, "find a column to pack by");
}

/* One row of the SELECT (key first, then the table's columns) into the buffer. */
static int buffer_row(struct packer *pk, struct db_stmt *stmt)
{
	size_t row;
	int ret = pack_rows_add(&pk->rows, &row);

	for (int c = 0; c < pk->ncols && !ret; c++) {
		int type = db_column_type(stmt, c + 1);

		switch (type) {
		case SQLITE_INTEGER:
			pack_set_int(&pk->rows, row, c, db_column_int64(stmt, c + 1));
			break;
		case SQLITE_FLOAT:
			pack_set_float(&pk->rows, row, c, db_column_double(stmt, c + 1));
			break;
		case SQLITE_TEXT:
		case SQLITE_BLOB: {
			const void *s = type == SQLITE_TEXT
					    ? (const void *)db_column_text(stmt, c + 1)
					    : db_column_blob(stmt, c + 1);

			ret = pack_set_text(&pk->rows, row, c, type, s,
					    (size_t)db_column_bytes(stmt, c + 1));
			break;
		}
		default:
			pack_set_null(&pk->rows, row, c);
			break;
		}
	}
	return ret;
}

static int pack_table_rows(struct packer *pk, int64_t cut)
{
	char sql[256];
	struct db_stmt *stmt;
	int64_t key = 0;
	bool have_key = false;
	int rc, ret;

	ret = column_index(pk->st, pk->t->name, pk->t->sort_col, &pk->sort_col);
	if (!ret)
		ret = column_index(pk->st, pk->t->name, "ts_ms", &pk->ts_col);
	if (ret)
		return ret;
	snprintf(sql, sizeof(sql),
		 "SELECT coalesce(%s, 0), * FROM %s WHERE seq <= ?1 ORDER BY 1, seq",
		 pk->t->key_col, pk->t->name);
	rc = db_prepare(&pk->st->conn, sql, &stmt);
	if (rc != SQLITE_OK)
		return store__write_fail(pk->st, rc, "pack rows");
	pk->ncols = db_column_count(stmt) - 1;
	pack_rows_release(&pk->rows);
	pack_rows_init(&pk->rows, pk->ncols);
	db_bind_int64(stmt, 1, cut);
	while ((rc = db_step(stmt)) == SQLITE_ROW) {
		int64_t k = db_column_int64(stmt, 0);

		if (have_key && (k != key || pk->rows.nrows == PACK_MAX_ROWS)) {
			ret = flush_pack(pk, key);
			if (ret)
				goto out_finalize;
		}
		key = k;
		have_key = true;
		ret = buffer_row(pk, stmt);
		if (ret)
			goto out_finalize;
	}
	if (rc != SQLITE_DONE) {
		ret = store__write_fail(pk->st, rc, "pack rows");
		goto out_finalize;
	}
	ret = flush_pack(pk, key);
	if (ret)
		goto out_finalize;
	snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE seq <= ?1", pk->t->name);
	db_finalize(stmt);
	rc = db_prepare(&pk->st->conn, sql, &stmt);
	if (rc != SQLITE_OK)
		return store__write_fail(pk->st, rc, "pack rows");
	db_bind_int64(stmt, 1, cut);
	rc = db_step(stmt);
	ret = rc == SQLITE_DONE ? 0 : store__write_fail(pk->st, rc, "pack rows");
out_finalize:
	db_finalize(stmt);
	return ret;
}

/*
 * Whether a packable table has plain rows at or below the last cut: one
 * packed only since a later version (fs_samples), in a store an older
 * jobscope packed.  A step with nothing new packs them at the same cut.
 */
static int left_behind(struct store *st, int64_t prev, bool *any)
{
	char sql[160];
	int64_t n;
	int ret = 0;

	*any = false;
	for (int i = 0; i < store__npack_tables && !ret && !*any; i++) {
		if (store__pack_tables[i].since > st->schema_version)
			continue;
		snprintf(sql, sizeof(sql), "SELECT EXISTS (SELECT 1 FROM %s WHERE seq <= %lld)",
			 store__pack_tables[i].name, (long long)prev);
		ret = store__query_i64(st, sql, &n);
		*any = n != 0;
	}
	return ret;
}

int store_pack_step(struct store *st, int64_t before_ms, int64_t max_seq, int64_t max_seqs,
		    struct store_pack_result *res)
{
	bool behind = false;
	struct packer pk = {.st = st, .res = res};
	char sql[128];
	int64_t prev, cut, is_head;
	bool limited = false;
	int ret, rc;

	memset(res, 0, sizeof(*res));
	if (!st->writable || st->in_tick)
		return -EINVAL;
	if (st->schema_version < 6)
		return 0;
	ret = store__query_i64(st, "SELECT EXISTS (SELECT 1 FROM agents)", &is_head);
	if (ret)
		return ret;
	if (is_head)
		return -EOPNOTSUPP;
	ret = store__exec(st, "BEGIN IMMEDIATE", "lock");
	if (ret)
		return ret;
	ret = store__load_next_seq(st);
	if (!ret)
		ret = pack_cut(st, before_ms, max_seq, max_seqs, &prev, &cut, &limited);
	if (!ret && cut <= prev && prev > 0)
		ret = left_behind(st, prev, &behind);
	if (behind)
		cut = prev;
	else if (ret || cut <= prev)
		goto out_end;
	pk.order = malloc(PACK_MAX_ROWS * sizeof(*pk.order));
	if (!pk.order) {
		ret = -ENOMEM;
		goto out_end;
	}
	strbuf_init(&pk.blob, PACK_MAX_RAW_BYTES);
	pack_rows_init(&pk.rows, 1);
	rc = db_prepare(&st->conn,
			"INSERT INTO packs (tbl, key, seq_lo, seq_hi, ts_lo, ts_hi, nrows,"
			" raw_bytes, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
			&pk.insert);
	ret = rc == SQLITE_OK ? 0 : store__write_fail(st, rc, "pack rows");
	for (int i = 0; i < store__npack_tables && !ret; i++) {
		if (store__pack_tables[i].since > st->schema_version)
			continue;
		pk.t = &store__pack_tables[i];
		ret = pack_table_rows(&pk, cut);
	}
	db_finalize(pk.insert);
	pack_rows_release(&pk.rows);
	strbuf_release(&pk.blob);
	free(pk.order);
	if (ret)
		goto out_end;
	snprintf(sql, sizeof(sql),
		 "INSERT OR REPLACE INTO meta (key, value) VALUES ('pack_seq', '%lld')",
		 (long long)cut);
	ret = store__exec(st, sql, "pack rows in");
	res->cut_seq = cut;
	res->more = limited;
out_end:
	if (ret) {
		db_exec(&st->conn, "ROLLBACK");
		memset(res, 0, sizeof(*res));
		return ret;
	}
	return store__exec(st, "COMMIT", "pack rows in");
}

void store_pack_tick(struct store *st, struct store_packer *p, int64_t now_ms, int64_t max_seq)
{
	struct store_pack_result res;
	int ret;

	if (p->after_ms <= 0 || now_ms < p->next_ms)
		return;
	ret = store_pack_step(st, now_ms - p->after_ms, max_seq, STORE_PACK_STEP_SEQS, &res);
	if (ret) {
		/* logged by the step; try again in a while, not every tick */
		p->next_ms = now_ms + (p->after_ms < 60000 ? p->after_ms : 60000);
		return;
	}
	p->total.rows += res.rows;
	p->total.packs += res.packs;
	p->total.bytes += res.bytes;
	p->total.raw_bytes += res.raw_bytes;
	if (res.cut_seq)
		p->total.cut_seq = res.cut_seq;
	p->next_ms = res.more ? now_ms : now_ms + p->after_ms;
}

/* One pack's rows back into its table. */
static int unpack_one(struct store *st, const struct pack_table *t, const void *blob, int len,
		      int64_t nrows, int64_t *rows)
{
	struct pack_rows p;
	struct strbuf sql;
	struct db_stmt *insert = NULL;
	int ncols, rc, ret;
	char q[160];
	int64_t n;

	snprintf(q, sizeof(q), "SELECT count(*) FROM pragma_table_info('%s', 'main')", t->name);
	ret = store__query_i64(st, q, &n);
	if (ret)
		return ret;
	ncols = (int)n;
	if (ncols <= 0 || ncols > PACK_MAX_COLS)
		return store__write_fail(st, SQLITE_CORRUPT, "unpack rows");
	pack_rows_init(&p, ncols);
	ret = pack_decode(&p, blob, (size_t)len, nrows);
	if (ret) {
		pack_rows_release(&p);
		return log_err(-EIO, "cannot unpack a pack of %s in store '%s': it is corrupt",
			       t->name, st->path);
	}
	strbuf_init(&sql, 0);
	strbuf_addf(&sql, "INSERT INTO %s VALUES (?", t->name);
	for (int c = 1; c < ncols; c++)
		strbuf_addstr(&sql, ", ?");
	strbuf_addch(&sql, ')');
	rc = strbuf_error(&sql) ? SQLITE_NOMEM : db_prepare(&st->conn, strbuf_str(&sql), &insert);
	for (size_t r = 0; r < p.nrows && rc == SQLITE_OK; r++) {
		db_reset(insert);
		for (int c = 0; c < ncols; c++) {
			size_t tlen;
			const char *s;

			switch (pack_type(&p, r, c)) {
			case SQLITE_INTEGER:
				db_bind_int64(insert, c + 1, pack_int(&p, r, c));
				break;
			case SQLITE_FLOAT:
				db_bind_double(insert, c + 1, pack_float(&p, r, c));
				break;
			case SQLITE_TEXT:
				s = pack_text(&p, r, c, &tlen);
				db_bind_text(insert, c + 1, s, (int)tlen, SQLITE_TRANSIENT);
				break;
			case SQLITE_BLOB:
				s = pack_text(&p, r, c, &tlen);
				db_bind_blob(insert, c + 1, s, (int)tlen, SQLITE_TRANSIENT);
				break;
			default:
				db_bind_null(insert, c + 1);
				break;
			}
		}
		rc = db_step(insert);
		rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
		*rows += rc == SQLITE_OK;
	}
	db_finalize(insert);
	strbuf_release(&sql);
	pack_rows_release(&p);
	return rc == SQLITE_OK ? 0 : store__write_fail(st, rc, "unpack rows");
}

int store_unpack(struct store *st, int64_t *rows)
{
	struct db_stmt *stmt;
	int rc, ret;

	*rows = 0;
	if (!st->writable || st->in_tick)
		return -EINVAL;
	if (st->schema_version < 6)
		return 0;
	ret = store__exec(st, "BEGIN IMMEDIATE", "lock");
	if (ret)
		return ret;
	rc = db_prepare(&st->conn, "SELECT tbl, data, nrows FROM packs ORDER BY seq_lo", &stmt);
	ret = rc == SQLITE_OK ? 0 : store__write_fail(st, rc, "unpack rows");
	while (!ret && (rc = db_step(stmt)) == SQLITE_ROW) {
		const char *tbl = (const char *)db_column_text(stmt, 0);
		const struct pack_table *t = NULL;

		for (int i = 0; tbl && i < store__npack_tables; i++)
			if (strcmp(store__pack_tables[i].name, tbl) == 0)
				t = &store__pack_tables[i];
		if (!t) {
			ret = log_err(-EIO, "cannot unpack store '%s': a pack of an unknown table",
				      st->path);
			break;
		}
		ret = unpack_one(st, t, db_column_blob(stmt, 1), db_column_bytes(stmt, 1),
				 db_column_int64(stmt, 2), rows);
	}
	if (!ret && rc != SQLITE_DONE)
		ret = store__write_fail(st, rc, "unpack rows");
	db_finalize(stmt);
	if (!ret)
		ret = store__exec(st, "DELETE FROM packs; DELETE FROM meta WHERE key = 'pack_seq'",
				  "unpack rows in");
	if (ret) {
		db_exec(&st->conn, "ROLLBACK");
		*rows = 0;
		return ret;
	}
	return store__exec(st, "COMMIT", "unpack rows in");
}

int store_reclaim(struct store *st, uint64_t *bytes_before, uint64_t *bytes_after)
{
	int64_t pages, page_size, auto_vacuum;
	int ret;

	ret = store__query_i64(st, "PRAGMA page_size", &page_size);
	if (!ret)
		ret = store__query_i64(st, "PRAGMA page_count", &pages);
	if (ret)
		return ret;
	*bytes_before = (uint64_t)(pages * page_size);
	ret = store__query_i64(st, "PRAGMA auto_vacuum", &auto_vacuum);
	if (ret)
		return ret;
	/* stores made by jobscope are INCREMENTAL (2); another is vacuumed whole */
	ret = store__exec(st, auto_vacuum == 2 ? "PRAGMA incremental_vacuum" : "VACUUM",
			  "reclaim free pages in");
	if (!ret)
		ret = store__exec(st, "PRAGMA wal_checkpoint(TRUNCATE)", "reclaim free pages in");
	if (!ret)
		ret = store__query_i64(st, "PRAGMA page_count", &pages);
	*bytes_after = ret ? *bytes_before : (uint64_t)(pages * page_size);
	return ret;
}
