/*
 * packvtab.c - temp.T_all: a fact table's packed rows and its own, read
 * as one table (packs.h).
 *
 *   vt_create ... vt_disconnect     the table: T's columns
 *   vt_best_index                   which constraints and orders it takes
 *   cur_filter, load_group          the packs that may hold wanted rows,
 *                                   decoded a group at a time
 *   cur_next, cur_column, cur_rowid
 *   store__packs_register
 *
 * Packs of different keys (or of one key, when rows came out of time
 * order) may overlap in seq; a group is a run of packs whose seq ranges
 * overlap, decoded together and sorted, so rows still come out in order.
 * Constraints are also left to SQLite to check (omit stays 0): the packs
 * read are a superset of what the query wants, and T's own rows get the
 * query's very constraints.
 */
#include "store/packs.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store/conn.h"
#include "store/pack.h"

#define VT_MAX_CONSTRAINTS 8
#define VT_ORDER_TS	   1 /* idxNum: rows in (ts_ms, seq) order */

struct pvtab {
	sqlite3_vtab base;
	sqlite3 *db;
	const struct pack_table *t;
	int ncols;
	int key_col, ts_col; /* seq is column 0 in every fact table */
	bool has_packs;	     /* the file has schema 6's packs table */
};

enum cur_phase { PHASE_PACKS, PHASE_LIVE, PHASE_EOF };

struct pcur {
	sqlite3_vtab_cursor base;
	enum cur_phase phase;
	bool by_ts;
	/* bounds on the packs read: a superset of the query's */
	bool has_key;
	int64_t key, seq_min, seq_max, ts_min, ts_max;
	sqlite3_stmt *packs;
	int packs_shape; /* which bounds packs's SQL has (prepare_packs) */
	bool pending;	 /* packs holds a row not decoded yet */
	bool packs_done; /* packs stepped to its end (stepping again would rerun it) */
	struct pack_rows rows;
	size_t *order, norder, order_alloc, pos;
	sqlite3_stmt *live;
	char *live_idx; /* the idxStr live was prepared for */
	int live_order;
};

static int vt_error(sqlite3_vtab *vt, int rc, const char *fmt, const char *arg)
{
	sqlite3_free(vt->zErrMsg);
	vt->zErrMsg = sqlite3_mprintf(fmt, arg);
	return rc;
}

static const struct pack_table *find_table(const char *name)
{
	for (int i = 0; i < store__npack_tables; i++)
		if (strcmp(store__pack_tables[i].name, name) == 0)
			return &store__pack_tables[i];
	return NULL;
}

/* The table's column names in order; its declaration for the virtual table. */
static int table_columns(struct pvtab *vt, sqlite3_str *decl)
{
	sqlite3_stmt *stmt;
	char *sql =
	    sqlite3_mprintf("SELECT name, type FROM pragma_table_info(%Q, 'main')", vt->t->name);
	int rc;

	if (!sql)
		return SQLITE_NOMEM;
	rc = sqlite3_prepare_v2(vt->db, sql, -1, &stmt, NULL);
	sqlite3_free(sql);
	if (rc != SQLITE_OK)
		return rc;
	vt->key_col = vt->ts_col = -1;
	sqlite3_str_appendall(decl, "CREATE TABLE x(");
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(stmt, 0);
		const char *type = (const char *)sqlite3_column_text(stmt, 1);

		if (!name)
			continue;
		if (strcmp(name, vt->t->key_col) == 0)
			vt->key_col = vt->ncols;
		if (strcmp(name, "ts_ms") == 0)
			vt->ts_col = vt->ncols;
		sqlite3_str_appendf(decl, "%s\"%w\" %s", vt->ncols ? ", " : "", name,
				    type ? type : "");
		vt->ncols++;
	}
	sqlite3_finalize(stmt);
	sqlite3_str_appendall(decl, ")");
	if (rc != SQLITE_DONE)
		return rc;
	return vt->ncols > 0 && vt->ncols <= PACK_MAX_COLS && vt->key_col > 0 && vt->ts_col > 0
		   ? SQLITE_OK
		   : SQLITE_CORRUPT;
}

static int vt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
		      char **err)
{
	struct pvtab *vt;
	sqlite3_str *decl;
	char *sql;
	int rc;

	(void)aux;
	if (argc != 4 || !find_table(argv[3])) {
		*err = sqlite3_mprintf("jobscope_pack: a packed table's name expected");
		return SQLITE_ERROR;
	}
	vt = sqlite3_malloc(sizeof(*vt));
	if (!vt)
		return SQLITE_NOMEM;
	memset(vt, 0, sizeof(*vt));
	vt->db = db;
	vt->t = find_table(argv[3]);
	decl = sqlite3_str_new(db);
	rc = table_columns(vt, decl);
	sql = sqlite3_str_finish(decl);
	if (rc == SQLITE_OK)
		rc = sql ? sqlite3_declare_vtab(db, sql) : SQLITE_NOMEM;
	sqlite3_free(sql);
	if (rc == SQLITE_OK) {
		sqlite3_stmt *stmt;

		rc = sqlite3_prepare_v2(db,
					"SELECT 1 FROM main.sqlite_schema WHERE type = 'table'"
					" AND name = 'packs'",
					-1, &stmt, NULL);
		if (rc == SQLITE_OK) {
			vt->has_packs = sqlite3_step(stmt) == SQLITE_ROW;
			sqlite3_finalize(stmt);
		}
	}
	if (rc != SQLITE_OK) {
		/* not argv: SQLite may have let go of it when a nested statement failed */
		*err = sqlite3_mprintf("jobscope_pack: cannot read table %s", vt->t->name);
		sqlite3_free(vt);
		return rc;
	}
	*out = &vt->base;
	return SQLITE_OK;
}

static int vt_disconnect(sqlite3_vtab *base)
{
	sqlite3_free(base);
	return SQLITE_OK;
}

/*
 * idxStr: two characters per constraint used, in argv order: the column
 * ('s' seq, 'k' key, 't' ts_ms) and the operator ('=', '>', 'g' >=, '<',
 * 'l' <=).
 */
static char op_code(unsigned char op)
{
	switch (op) {
	case SQLITE_INDEX_CONSTRAINT_EQ:
		return '=';
	case SQLITE_INDEX_CONSTRAINT_GT:
		return '>';
	case SQLITE_INDEX_CONSTRAINT_GE:
		return 'g';
	case SQLITE_INDEX_CONSTRAINT_LT:
		return '<';
	case SQLITE_INDEX_CONSTRAINT_LE:
		return 'l';
	default:
		return 0;
	}
}

static int vt_best_index(sqlite3_vtab *base, sqlite3_index_info *info)
{
	struct pvtab *vt = (struct pvtab *)base;
	char idx[2 * VT_MAX_CONSTRAINTS + 1];
	double cost = 1e7;
	int n = 0;
	bool key_eq = false;

	for (int i = 0; i < info->nConstraint && n < VT_MAX_CONSTRAINTS; i++) {
		const struct sqlite3_index_constraint *c = &info->aConstraint[i];
		char col = c->iColumn == 0	       ? 's'
			   : c->iColumn == vt->key_col ? 'k'
			   : c->iColumn == vt->ts_col  ? 't'
						       : 0;
		char op = op_code(c->op);

		if (!c->usable || !col || !op)
			continue;
		idx[2 * n] = col;
		idx[2 * n + 1] = op;
		info->aConstraintUsage[i].argvIndex = ++n;
		info->aConstraintUsage[i].omit = 0;
		if (col == 'k' && op == '=') {
			key_eq = true;
			cost /= 1000;
		} else {
			cost /= col == 's' && op == '=' ? 1e6 : 10;
		}
	}
	idx[2 * n] = '\0';
	info->idxStr = sqlite3_mprintf("%s", idx);
	if (!info->idxStr)
		return SQLITE_NOMEM;
	info->needToFreeIdxStr = 1;
	info->idxNum = 0;
	if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == 0 && !info->aOrderBy[0].desc) {
		info->orderByConsumed = 1;
	} else if (key_eq && info->nOrderBy >= 1 && info->nOrderBy <= 2 &&
		   info->aOrderBy[0].iColumn == vt->ts_col && !info->aOrderBy[0].desc &&
		   (info->nOrderBy == 1 ||
		    (info->aOrderBy[1].iColumn == 0 && !info->aOrderBy[1].desc))) {
		info->orderByConsumed = 1;
		info->idxNum = VT_ORDER_TS;
	}
	info->estimatedCost = cost;
	info->estimatedRows = (sqlite3_int64)(cost > 1 ? cost : 1);
	return SQLITE_OK;
}

static int vt_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out)
{
	struct pvtab *vt = (struct pvtab *)base;
	struct pcur *cur = sqlite3_malloc(sizeof(*cur));

	if (!cur)
		return SQLITE_NOMEM;
	memset(cur, 0, sizeof(*cur));
	pack_rows_init(&cur->rows, vt->ncols);
	cur->phase = PHASE_EOF;
	*out = &cur->base;
	return SQLITE_OK;
}

static int cur_close(sqlite3_vtab_cursor *base)
{
	struct pcur *cur = (struct pcur *)base;

	sqlite3_finalize(cur->packs);
	sqlite3_finalize(cur->live);
	sqlite3_free(cur->live_idx);
	pack_rows_release(&cur->rows);
	free(cur->order);
	sqlite3_free(cur);
	return SQLITE_OK;
}

/* A bound for the packs from a constraint's value: none when it is not a number. */
static bool bound_of(sqlite3_value *v, bool lower, int64_t *out)
{
	double d;

	switch (sqlite3_value_type(v)) {
	case SQLITE_INTEGER:
		*out = sqlite3_value_int64(v);
		return true;
	case SQLITE_FLOAT:
		d = sqlite3_value_double(v);
		if (isnan(d) || d < -9e18 || d > 9e18)
			return false;
		*out = (int64_t)(lower ? floor(d) : ceil(d));
		return true;
	default:
		return false;
	}
}

static void apply_bound(struct pcur *cur, char col, char op, sqlite3_value *v)
{
	int64_t b;
	int64_t *lo = col == 's' ? &cur->seq_min : &cur->ts_min;
	int64_t *hi = col == 's' ? &cur->seq_max : &cur->ts_max;

	if (col == 'k') {
		if (op == '=' && sqlite3_value_type(v) == SQLITE_INTEGER) {
			cur->has_key = true;
			cur->key = sqlite3_value_int64(v);
		}
		return;
	}
	if ((op == '=' || op == '>' || op == 'g') && bound_of(v, true, &b) && b > *lo)
		*lo = b;
	if ((op == '=' || op == '<' || op == 'l') && bound_of(v, false, &b) && b < *hi)
		*hi = b;
}

static int prepare_live(struct pcur *cur, struct pvtab *vt, const char *idx, int order)
{
	sqlite3_str *sql;
	char *text;
	int rc;

	if (cur->live && cur->live_idx && cur->live_order == order &&
	    strcmp(cur->live_idx, idx) == 0) {
		sqlite3_reset(cur->live);
		sqlite3_clear_bindings(cur->live);
		return SQLITE_OK;
	}
	sqlite3_finalize(cur->live);
	cur->live = NULL;
	sqlite3_free(cur->live_idx);
	cur->live_idx = sqlite3_mprintf("%s", idx);
	if (!cur->live_idx)
		return SQLITE_NOMEM;
	cur->live_order = order;
	sql = sqlite3_str_new(vt->db);
	sqlite3_str_appendf(sql, "SELECT * FROM main.\"%w\" WHERE 1", vt->t->name);
	for (size_t i = 0; idx[2 * i]; i++) {
		const char *col = idx[2 * i] == 's'   ? "seq"
				  : idx[2 * i] == 'k' ? vt->t->key_col
						      : "ts_ms";
		const char *op;

		switch (idx[2 * i + 1]) {
		case '=':
			op = "=";
			break;
		case '>':
			op = ">";
			break;
		case 'g':
			op = ">=";
			break;
		case '<':
			op = "<";
			break;
		default:
			op = "<=";
			break;
		}
		sqlite3_str_appendf(sql, " AND \"%w\" %s ?%d", col, op, (int)i + 1);
	}
	sqlite3_str_appendall(sql, order == VT_ORDER_TS ? " ORDER BY ts_ms, seq" : " ORDER BY seq");
	text = sqlite3_str_finish(sql);
	if (!text)
		return SQLITE_NOMEM;
	rc = sqlite3_prepare_v2(vt->db, text, -1, &cur->live, NULL);
	sqlite3_free(text);
	return rc;
}

/*
 * The packs that may hold wanted rows, by seq_lo.  Only the bounds the
 * query has are written into the SQL, so that SQLite picks the index of
 * the one it has (a seq range: (tbl, seq_hi); a time window: (tbl, ts_hi);
 * a key: (tbl, key, seq_lo)) rather than scanning from a bound that is
 * not there.  Bit 0 key, bit 1 seq, bit 2 time: the statement's shape.
 */
static int prepare_packs(struct pcur *cur, struct pvtab *vt)
{
	int shape = (cur->has_key ? 1 : 0) |
		    (cur->seq_min > INT64_MIN || cur->seq_max < INT64_MAX ? 2 : 0) |
		    (cur->ts_min > INT64_MIN || cur->ts_max < INT64_MAX ? 4 : 0);
	int rc;

	if (cur->packs && cur->packs_shape == shape) {
		sqlite3_reset(cur->packs);
		sqlite3_clear_bindings(cur->packs);
	} else {
		char sql[320];

		sqlite3_finalize(cur->packs);
		cur->packs = NULL;
		cur->packs_shape = shape;
		snprintf(sql, sizeof(sql),
			 "SELECT seq_hi, nrows, data, seq_lo FROM main.packs WHERE tbl = ?1%s%s%s"
			 " ORDER BY seq_lo",
			 shape & 1 ? " AND key = ?2" : "",
			 shape & 2 ? " AND seq_hi >= ?3 AND seq_lo <= ?4" : "",
			 shape & 4 ? " AND ts_hi >= ?5 AND ts_lo <= ?6" : "");
		rc = sqlite3_prepare_v2(vt->db, sql, -1, &cur->packs, NULL);
		if (rc != SQLITE_OK)
			return rc;
	}
	sqlite3_bind_text(cur->packs, 1, vt->t->name, -1, SQLITE_STATIC);
	if (shape & 1)
		sqlite3_bind_int64(cur->packs, 2, cur->key);
	if (shape & 2) {
		sqlite3_bind_int64(cur->packs, 3, cur->seq_min);
		sqlite3_bind_int64(cur->packs, 4, cur->seq_max);
	}
	if (shape & 4) {
		sqlite3_bind_int64(cur->packs, 5, cur->ts_min);
		sqlite3_bind_int64(cur->packs, 6, cur->ts_max);
	}
	return SQLITE_OK;
}

/* Sorting a group's rows: by seq, or by (ts_ms, seq). */
struct sort_ctx {
	const struct pack_rows *rows;
	int ts_col;
};

static int cmp_i64(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *ctx = arg;
	size_t ra = *(const size_t *)a, rb = *(const size_t *)b;
	int c = 0;

	if (ctx->ts_col >= 0)
		c = cmp_i64(pack_int(ctx->rows, ra, ctx->ts_col),
			    pack_int(ctx->rows, rb, ctx->ts_col));
	return c ? c : cmp_i64(pack_int(ctx->rows, ra, 0), pack_int(ctx->rows, rb, 0));
}

/* A packed row the query may want (SQLite checks the rest). */
static bool row_wanted(const struct pcur *cur, const struct pvtab *vt, size_t r)
{
	int64_t seq, ts;

	if (pack_type(&cur->rows, r, 0) != SQLITE_INTEGER)
		return false;
	seq = pack_int(&cur->rows, r, 0);
	if (seq < cur->seq_min || seq > cur->seq_max)
		return false;
	if (pack_type(&cur->rows, r, vt->ts_col) == SQLITE_INTEGER) {
		ts = pack_int(&cur->rows, r, vt->ts_col);
		if (ts < cur->ts_min || ts > cur->ts_max)
			return false;
	}
	return true;
}

/*
 * The next group of overlapping packs, decoded, filtered and sorted into
 * cur->order; an empty order when the packs are done.
 */
static int load_group(struct pcur *cur, struct pvtab *vt)
{
	int64_t group_hi = INT64_MIN;
	struct sort_ctx ctx = {&cur->rows, cur->by_ts ? vt->ts_col : -1};
	int rc;

	pack_rows_clear(&cur->rows);
	cur->norder = cur->pos = 0;
	while (cur->norder == 0) {
		if (!cur->pending) {
			if (cur->packs_done)
				return SQLITE_OK;
			rc = sqlite3_step(cur->packs);
			if (rc == SQLITE_DONE) {
				cur->packs_done = true;
				return SQLITE_OK;
			}
			if (rc != SQLITE_ROW)
				return rc;
			cur->pending = true;
		}
		group_hi = INT64_MIN;
		for (;;) {
			int64_t seq_hi = sqlite3_column_int64(cur->packs, 0);
			const void *blob = sqlite3_column_blob(cur->packs, 2);
			int len = sqlite3_column_bytes(cur->packs, 2);

			if (!blob || pack_decode(&cur->rows, blob, (size_t)len,
						 sqlite3_column_int64(cur->packs, 1)) != 0)
				return vt_error(&vt->base, SQLITE_CORRUPT,
						"a pack of table %s is corrupt", vt->t->name);
			if (seq_hi > group_hi)
				group_hi = seq_hi;
			cur->pending = false;
			rc = sqlite3_step(cur->packs);
			if (rc == SQLITE_DONE) {
				cur->packs_done = true;
				break;
			}
			if (rc != SQLITE_ROW)
				return rc;
			cur->pending = true;
			/* packs come by seq_lo: one starting past the group's end starts the next
			 */
			/*
			 * Never cut a group short: its rows would come out of
			 * order.  A group is as wide as the keys packed in one
			 * step (a store's devices, its jobs at the time).
			 */
			if (sqlite3_column_int64(cur->packs, 3) > group_hi)
				break;
		}
		if (cur->rows.nrows > cur->order_alloc) {
			size_t *order = realloc(cur->order, cur->rows.nrows * sizeof(*order));

			if (!order)
				return SQLITE_NOMEM;
			cur->order = order;
			cur->order_alloc = cur->rows.nrows;
		}
		for (size_t r = 0; r < cur->rows.nrows; r++)
			if (row_wanted(cur, vt, r))
				cur->order[cur->norder++] = r;
		qsort_r(cur->order, cur->norder, sizeof(*cur->order), cmp_rows, &ctx);
		if (cur->norder == 0) {
			pack_rows_clear(&cur->rows);
			if (!cur->pending)
				return SQLITE_OK;
		}
	}
	return SQLITE_OK;
}

static int step_live(struct pcur *cur)
{
	int rc = sqlite3_step(cur->live);

	if (rc == SQLITE_ROW)
		return SQLITE_OK;
	cur->phase = PHASE_EOF;
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int cur_next(sqlite3_vtab_cursor *base)
{
	struct pcur *cur = (struct pcur *)base;
	struct pvtab *vt = (struct pvtab *)base->pVtab;
	int rc;

	if (cur->phase == PHASE_PACKS) {
		if (++cur->pos < cur->norder)
			return SQLITE_OK;
		rc = load_group(cur, vt);
		if (rc != SQLITE_OK)
			return rc;
		if (cur->norder)
			return SQLITE_OK;
		cur->phase = PHASE_LIVE;
		return step_live(cur);
	}
	if (cur->phase == PHASE_LIVE)
		return step_live(cur);
	return SQLITE_OK;
}

static int cur_filter(sqlite3_vtab_cursor *base, int idx_num, const char *idx_str, int argc,
		      sqlite3_value **argv)
{
	struct pcur *cur = (struct pcur *)base;
	struct pvtab *vt = (struct pvtab *)base->pVtab;
	const char *idx = idx_str ? idx_str : "";
	int rc;

	cur->by_ts = idx_num == VT_ORDER_TS;
	cur->has_key = false;
	cur->seq_min = cur->ts_min = INT64_MIN;
	cur->seq_max = cur->ts_max = INT64_MAX;
	cur->pending = cur->packs_done = false;
	cur->norder = cur->pos = 0;
	pack_rows_clear(&cur->rows);
	for (int i = 0; i < argc && idx[2 * i] && idx[2 * i + 1]; i++)
		apply_bound(cur, idx[2 * i], idx[2 * i + 1], argv[i]);

	rc = prepare_live(cur, vt, idx, idx_num);
	for (int i = 0; rc == SQLITE_OK && i < argc; i++)
		rc = sqlite3_bind_value(cur->live, i + 1, argv[i]);
	if (rc != SQLITE_OK)
		return vt_error(&vt->base, rc, "cannot read table %s", vt->t->name);
	if (vt->has_packs) {
		rc = prepare_packs(cur, vt);
		if (rc == SQLITE_OK)
			rc = load_group(cur, vt);
		if (rc != SQLITE_OK)
			return rc;
		if (cur->norder) {
			cur->phase = PHASE_PACKS;
			return SQLITE_OK;
		}
	}
	cur->phase = PHASE_LIVE;
	return step_live(cur);
}

static int cur_eof(sqlite3_vtab_cursor *base)
{
	return ((struct pcur *)base)->phase == PHASE_EOF;
}

static int cur_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int col)
{
	struct pcur *cur = (struct pcur *)base;
	size_t r, len;
	const char *s;

	if (cur->phase == PHASE_LIVE) {
		sqlite3_result_value(ctx, sqlite3_column_value(cur->live, col));
		return SQLITE_OK;
	}
	if (cur->phase != PHASE_PACKS || col < 0 || col >= cur->rows.ncols)
		return SQLITE_OK;
	r = cur->order[cur->pos];
	switch (pack_type(&cur->rows, r, col)) {
	case SQLITE_INTEGER:
		sqlite3_result_int64(ctx, pack_int(&cur->rows, r, col));
		break;
	case SQLITE_FLOAT:
		sqlite3_result_double(ctx, pack_float(&cur->rows, r, col));
		break;
	case SQLITE_TEXT:
		s = pack_text(&cur->rows, r, col, &len);
		sqlite3_result_text(ctx, s, (int)len, SQLITE_TRANSIENT);
		break;
	case SQLITE_BLOB:
		s = pack_text(&cur->rows, r, col, &len);
		sqlite3_result_blob(ctx, s, (int)len, SQLITE_TRANSIENT);
		break;
	default:
		sqlite3_result_null(ctx);
		break;
	}
	return SQLITE_OK;
}

static int cur_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *rowid)
{
	struct pcur *cur = (struct pcur *)base;

	if (cur->phase == PHASE_LIVE)
		*rowid = sqlite3_column_int64(cur->live, 0);
	else if (cur->phase == PHASE_PACKS)
		*rowid = pack_int(&cur->rows, cur->order[cur->pos], 0);
	else
		*rowid = 0;
	return SQLITE_OK;
}

static const sqlite3_module pack_module = {
    .iVersion = 0,
    .xCreate = vt_connect,
    .xConnect = vt_connect,
    .xBestIndex = vt_best_index,
    .xDisconnect = vt_disconnect,
    .xDestroy = vt_disconnect,
    .xOpen = vt_open,
    .xClose = cur_close,
    .xFilter = cur_filter,
    .xNext = cur_next,
    .xEof = cur_eof,
    .xColumn = cur_column,
    .xRowid = cur_rowid,
};

int store__packs_register(struct store *st)
{
	char sql[160];
	int rc = sqlite3_create_module_v2(st->conn.sq, "jobscope_pack", &pack_module, NULL, NULL);

	if (rc != SQLITE_OK)
		return store__open_fail(st, rc, "read");
	for (int i = 0; i < store__npack_tables; i++) {
		if (store__pack_tables[i].since > st->schema_version)
			continue;
		snprintf(sql, sizeof(sql),
			 "CREATE VIRTUAL TABLE temp.%s_all USING jobscope_pack(%s)",
			 store__pack_tables[i].name, store__pack_tables[i].name);
		rc = sqlite3_exec(st->conn.sq, sql, NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			return store__open_fail(st, rc, "read");
	}
	return 0;
}
