/*
 * wire.c - the ingest protocol (see wire.h, docs/wire.md): a batch's row
 * set to JSON and back, the hello, the head's answer to JSON and back, and
 * zstd bodies.
 */
#include "net/wire.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <zstd.h>

#include "common/jsonw.h"

void wire_batch_from(struct store_batch *b, const struct store_sender *who)
{
	b->who = *who;
}

/* "name": {"columns": [...], "rows": [[...], ...]} */
static void encode_table(struct jsonw *w, const struct store_table *t)
{
	jsonw_key(w, t->name);
	jsonw_obj_begin(w);
	jsonw_key(w, "columns");
	jsonw_arr_begin(w);
	for (int c = 0; c < t->ncols; c++)
		jsonw_str(w, t->cols[c]);
	jsonw_arr_end(w);
	jsonw_key(w, "rows");
	jsonw_arr_begin(w);
	for (size_t r = 0; r < t->nrows; r++) {
		const struct store_value *row = &t->cells[r * (size_t)t->ncols];

		jsonw_arr_begin(w);
		for (int c = 0; c < t->ncols; c++) {
			const struct store_value *v = &row[c];

			switch (v->type) {
			case STORE_VALUE_INT:
				jsonw_int(w, v->i);
				break;
			case STORE_VALUE_REAL:
				jsonw_double(w, v->d, 6);
				break;
			case STORE_VALUE_TEXT:
				jsonw_strn(w, v->s, v->len);
				break;
			default:
				jsonw_null(w);
				break;
			}
		}
		jsonw_arr_end(w);
	}
	jsonw_arr_end(w);
	jsonw_obj_end(w);
}

int wire_encode_batch(const struct store_batch *b, struct strbuf *out)
{
	struct jsonw w;

	strbuf_reset(out);
	jsonw_init(&w, out, false);
	jsonw_obj_begin(&w);
	jsonw_kv_int(&w, "version", WIRE_VERSION);
	jsonw_kv_str(&w, "agent_id", b->who.agent_id);
	jsonw_key(&w, "node");
	jsonw_obj_begin(&w);
	jsonw_kv_str(&w, "hostname", b->who.hostname);
	jsonw_kv_int(&w, "cores", b->who.cores);
	jsonw_kv_int(&w, "mem_total_bytes", (int64_t)b->who.mem_total_bytes);
	jsonw_kv_int(&w, "boot_ms", b->who.boot_ms);
	jsonw_obj_end(&w);
	jsonw_kv_int(&w, "interval_ms", b->who.interval_ms);
	jsonw_kv_int(&w, "from_seq", b->from_seq);
	jsonw_key(&w, "to_seq");
	jsonw_int(&w, b->to_seq);
	jsonw_key(&w, "max_seq");
	jsonw_int(&w, b->max_seq);
	jsonw_key(&w, "tables");
	jsonw_obj_begin(&w);
	for (size_t i = 0; i < b->rows.ntables && !jsonw_error(&w); i++)
		encode_table(&w, &b->rows.tables[i]);
	jsonw_obj_end(&w);
	jsonw_obj_end(&w);
	return jsonw_error(&w);
}

int wire_encode_hello(const struct store_sender *who, struct strbuf *out)
{
	struct jsonw w;

	strbuf_reset(out);
	jsonw_init(&w, out, false);
	jsonw_obj_begin(&w);
	jsonw_kv_int(&w, "version", WIRE_VERSION);
	jsonw_kv_str(&w, "agent_id", who->agent_id);
	jsonw_key(&w, "node");
	jsonw_obj_begin(&w);
	jsonw_kv_str(&w, "hostname", who->hostname);
	jsonw_obj_end(&w);
	jsonw_kv_int(&w, "interval_ms", who->interval_ms);
	jsonw_kv_int(&w, "from_seq", 0);
	jsonw_kv_int(&w, "to_seq", 0);
	jsonw_obj_end(&w);
	return jsonw_error(&w);
}

int wire_encode_answer(const struct wire_answer *a, struct strbuf *out)
{
	char names[WIRE_SESSIONS_MAX], *save = NULL, *tok;
	struct jsonw w;

	snprintf(names, sizeof(names), "%s", a->sessions);
	strbuf_reset(out);
	jsonw_init(&w, out, false);
	jsonw_obj_begin(&w);
	jsonw_kv_int(&w, "version", WIRE_VERSION);
	jsonw_kv_int(&w, "acked_seq", a->acked_seq);
	jsonw_kv_int_opt(&w, "interval_ms", a->interval_ms > 0, a->interval_ms);
	jsonw_kv_bool(&w, "cuda", a->cuda);
	jsonw_key(&w, "sessions");
	jsonw_arr_begin(&w);
	for (tok = strtok_r(names, "\x1f", &save); tok; tok = strtok_r(NULL, "\x1f", &save))
		jsonw_str(&w, tok);
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	strbuf_addch(out, '\n');
	return jsonw_error(&w) ? jsonw_error(&w) : strbuf_error(out);
}

int wire_decode_answer(const char *body, size_t len, struct wire_answer *a)
{
	cJSON *doc = cJSON_ParseWithLength(body, len);
	const cJSON *item = doc ? cJSON_GetObjectItemCaseSensitive(doc, "acked_seq") : NULL;
	const cJSON *name;
	size_t used = 0;

	memset(a, 0, sizeof(*a));
	/* a double past int64's range may not be cast (a hostile or broken head) */
	if (!cJSON_IsNumber(item) || !(item->valuedouble >= 0 && item->valuedouble < 0x1p62)) {
		cJSON_Delete(doc);
		return -EINVAL;
	}
	a->acked_seq = (int64_t)item->valuedouble;
	item = cJSON_GetObjectItemCaseSensitive(doc, "interval_ms");
	a->interval_ms = cJSON_IsNumber(item) && item->valuedouble > 0 && item->valuedouble < 0x1p40
			     ? (int64_t)item->valuedouble
			     : 0;
	a->cuda = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "cuda"));
	item = cJSON_GetObjectItemCaseSensitive(doc, "sessions");
	if (!cJSON_IsArray(item))
		item = NULL;
	cJSON_ArrayForEach(name, item)
	{
		size_t n;

		if (!cJSON_IsString(name) || !name->valuestring[0])
			continue;
		n = strlen(name->valuestring);
		if (used + (used > 0) + n >= sizeof(a->sessions))
			break;
		used += (size_t)snprintf(a->sessions + used, sizeof(a->sessions) - used, "%s%s",
					 used ? "\x1f" : "", name->valuestring);
	}
	cJSON_Delete(doc);
	return 0;
}

static int fail(char *msg, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *msg, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, size, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* An integer that fits int64 exactly (JSON numbers are doubles in cJSON). */
static bool get_int(const cJSON *item, int64_t *out)
{
	double d;

	if (!cJSON_IsNumber(item))
		return false;
	d = item->valuedouble;
	if (!isfinite(d) || d != floor(d) || d < -9007199254740992.0 || d > 9007199254740992.0)
		return false;
	*out = (int64_t)d;
	return true;
}

static bool get_str(const cJSON *obj, const char *key, char *buf, size_t size)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsString(item) || !item->valuestring || strlen(item->valuestring) >= size)
		return false;
	snprintf(buf, size, "%s", item->valuestring);
	return true;
}

static bool get_key_int(const cJSON *obj, const char *key, int64_t *out)
{
	return get_int(cJSON_GetObjectItemCaseSensitive(obj, key), out);
}

/* Table and column names: lower case letters, digits and '_', as ours are. */
static bool is_name(const char *s, size_t max)
{
	size_t n = 0;

	if (!s || !*s)
		return false;
	for (; s[n]; n++)
		if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_'))
			return false;
	return n < max;
}

static int decode_table(struct wire_batch *wb, const cJSON *tbl, char *msg, size_t size,
			size_t *total_rows)
{
	struct store_rowset *rs = &wb->b.rows;
	const char *cols[STORE_ROWSET_MAX_COLUMNS];
	const cJSON *jcols, *rows, *c, *row;
	struct store_table *t;
	size_t r = 0, nrows;
	int n = 0, ret;

	if (rs->ntables >= STORE_ROWSET_MAX_TABLES)
		return fail(msg, size, "too many tables");
	if (!is_name(tbl->string, sizeof(t->name)) || !cJSON_IsObject(tbl))
		return fail(msg, size, "tables: a member that is not a table");
	if (store_rowset_table(rs, tbl->string))
		return fail(msg, size, "table %s twice", tbl->string);
	jcols = cJSON_GetObjectItemCaseSensitive(tbl, "columns");
	rows = cJSON_GetObjectItemCaseSensitive(tbl, "rows");
	if (!cJSON_IsArray(jcols) || !cJSON_IsArray(rows))
		return fail(msg, size, "%s: columns and rows must be arrays", tbl->string);
	cJSON_ArrayForEach(c, jcols)
	{
		if (n >= STORE_ROWSET_MAX_COLUMNS || !cJSON_IsString(c) ||
		    !is_name(c->valuestring, 64))
			return fail(msg, size, "%s: bad or too many columns", tbl->string);
		for (int k = 0; k < n; k++)
			if (strcmp(cols[k], c->valuestring) == 0)
				return fail(msg, size, "%s: column %s twice", tbl->string,
					    c->valuestring);
		cols[n++] = c->valuestring;
	}
	if (n == 0)
		return fail(msg, size, "%s: no columns", tbl->string);
	nrows = (size_t)cJSON_GetArraySize(rows);
	*total_rows += nrows;
	if (*total_rows > WIRE_MAX_ROWS)
		return fail(msg, size, "more than %u rows in one batch", WIRE_MAX_ROWS);
	ret = store_rowset_add_table(rs, tbl->string, &t);
	if (ret)
		return ret;
	memcpy(t->cols, cols, (size_t)n * sizeof(cols[0]));
	t->ncols = n;
	ret = store_rowset_reserve(rs, t, nrows);
	if (ret)
		return ret;
	cJSON_ArrayForEach(row, rows)
	{
		struct store_value *cells;
		const cJSON *v;
		int k = 0;

		if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != n)
			return fail(msg, size, "%s: row %zu does not have %d values", t->name, r,
				    n);
		ret = store_rowset_add_row(rs, t, &cells);
		if (ret)
			return ret;
		cJSON_ArrayForEach(v, row)
		{
			struct store_value *out = &cells[k++];

			if (cJSON_IsNull(v)) {
				out->type = STORE_VALUE_NULL;
			} else if (cJSON_IsString(v)) {
				out->type = STORE_VALUE_TEXT;
				out->s = v->valuestring;
				out->len = (uint32_t)strlen(v->valuestring);
			} else if (get_int(v, &out->i)) {
				out->type = STORE_VALUE_INT;
			} else if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) {
				out->type = STORE_VALUE_REAL;
				out->d = v->valuedouble;
			} else {
				return fail(msg, size,
					    "%s: row %zu: a value that is not a number, "
					    "a string or null",
					    t->name, r);
			}
		}
		r++;
	}
	return 0;
}

int wire_decode_batch(const char *body, size_t len, struct wire_batch *wb, char *msg, size_t size)
{
	struct store_batch *b = &wb->b;
	const cJSON *node, *tables, *tbl;
	cJSON *doc;
	int64_t v;
	size_t total_rows = 0;
	int ret;

	memset(wb, 0, sizeof(*wb));
	store_rowset_init(&b->rows, 0);
	msg[0] = '\0';
	if (len > WIRE_MAX_BODY)
		return fail(msg, size, "batch larger than %u bytes", WIRE_MAX_BODY);
	doc = cJSON_ParseWithLength(body, len);
	if (!doc)
		return fail(msg, size, "not JSON");
	wb->json = doc;
	if (!cJSON_IsObject(doc))
		return fail(msg, size, "not a JSON object");
	if (!get_key_int(doc, "version", &v) || v != WIRE_VERSION)
		return fail(msg, size, "version must be %d", WIRE_VERSION);
	if (!get_str(doc, "agent_id", b->who.agent_id, sizeof(b->who.agent_id)) || !b->who.agent_id[0])
		return fail(msg, size, "agent_id: a string of 1 to %zu bytes",
			    sizeof(b->who.agent_id) - 1);
	node = cJSON_GetObjectItemCaseSensitive(doc, "node");
	if (!cJSON_IsObject(node) || !get_str(node, "hostname", b->who.hostname, sizeof(b->who.hostname)) ||
	    !b->who.hostname[0])
		return fail(msg, size, "node.hostname: a string");
	if (get_key_int(node, "cores", &v) && v >= 0 && v < 1 << 20)
		b->who.cores = (int32_t)v;
	if (get_key_int(node, "mem_total_bytes", &v) && v >= 0)
		b->who.mem_total_bytes = (uint64_t)v;
	if (get_key_int(node, "boot_ms", &v) && v >= 0)
		b->who.boot_ms = v;
	if (get_key_int(doc, "interval_ms", &v) && v > 0 && v < 86400000)
		b->who.interval_ms = v;
	if (!get_key_int(doc, "from_seq", &b->from_seq) ||
	    !get_key_int(doc, "to_seq", &b->to_seq) || b->from_seq < 0 || b->to_seq < b->from_seq)
		return fail(msg, size, "from_seq and to_seq: integers, 0 <= from_seq <= to_seq");
	if (get_key_int(doc, "max_seq", &v) && v >= 0)
		b->max_seq = v; /* informative: the head does not use it */
	tables = cJSON_GetObjectItemCaseSensitive(doc, "tables");
	if (tables && !cJSON_IsObject(tables))
		return fail(msg, size, "tables: an object");
	cJSON_ArrayForEach(tbl, tables)
	{
		ret = decode_table(wb, tbl, msg, size, &total_rows);
		if (ret)
			return ret;
	}
	return 0;
}

void wire_batch_release(struct wire_batch *wb)
{
	store_rowset_release(&wb->b.rows);
	cJSON_Delete(wb->json);
	memset(wb, 0, sizeof(*wb));
}

int wire_compress(const char *in, size_t len, struct strbuf *out)
{
	size_t bound = ZSTD_compressBound(len), n;
	int ret;

	strbuf_reset(out);
	ret = strbuf_grow(out, bound + 1);
	if (ret)
		return ret;
	n = ZSTD_compress(out->buf, bound, in, len, 1);
	if (ZSTD_isError(n))
		return -EIO;
	out->len = n;
	out->buf[n] = '\0';
	return 0;
}

int wire_decompress(const char *in, size_t len, struct strbuf *out)
{
	ZSTD_DStream *z = ZSTD_createDStream();
	ZSTD_inBuffer src = {in, len, 0};
	char chunk[64 * 1024];
	size_t rc = 1;
	int ret = 0;

	strbuf_reset(out);
	if (!z)
		return -ENOMEM;
	ZSTD_initDStream(z);
	/* streaming, so a frame that lies about its size cannot make us allocate it */
	while (src.pos < src.size || rc != 0) {
		ZSTD_outBuffer dst = {chunk, sizeof(chunk), 0};

		rc = ZSTD_decompressStream(z, &dst, &src);
		if (ZSTD_isError(rc)) {
			ret = -EINVAL;
			break;
		}
		if (out->len + dst.pos > WIRE_MAX_BODY) {
			ret = -E2BIG;
			break;
		}
		if (dst.pos && strbuf_add(out, chunk, dst.pos)) {
			ret = -ENOMEM;
			break;
		}
		if (src.pos == src.size && dst.pos == 0 && rc != 0) {
			ret = -EINVAL; /* a truncated frame */
			break;
		}
	}
	ZSTD_freeDStream(z);
	return ret;
}
