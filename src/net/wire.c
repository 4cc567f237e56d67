/*
 * wire.c - encoding and decoding ingest batches (see wire.h, docs/wire.md).
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

int wire_encode(struct store *st, const struct wire_sender *who, int64_t after_seq,
		int64_t max_rows, struct strbuf *out, int64_t *to_seq, int64_t *max_seq,
		int64_t *nrows)
{
	struct jsonw w;
	int ret;

	strbuf_reset(out);
	jsonw_init(&w, out, false);
	jsonw_obj_begin(&w);
	jsonw_kv_int(&w, "version", WIRE_VERSION);
	jsonw_kv_str(&w, "agent_id", who->agent_id);
	jsonw_key(&w, "node");
	jsonw_obj_begin(&w);
	jsonw_kv_str(&w, "hostname", who->hostname);
	jsonw_kv_int(&w, "cores", who->cores);
	jsonw_kv_int(&w, "mem_total_bytes", (int64_t)who->mem_total_bytes);
	jsonw_kv_int(&w, "boot_ms", who->boot_ms);
	jsonw_obj_end(&w);
	jsonw_kv_int(&w, "interval_ms", who->interval_ms);
	jsonw_kv_int(&w, "from_seq", after_seq);
	ret = store_export_batch(st, after_seq, max_rows, &w, to_seq, nrows);
	if (ret)
		return ret;
	jsonw_obj_end(&w);
	if (!ret && store_max_seq(st, max_seq))
		*max_seq = *to_seq;
	return jsonw_error(&w);
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
	struct ingest_batch *b = &wb->b;
	struct wire_table *t;
	const cJSON *cols, *rows, *c, *row;
	struct wire_value *cells;
	size_t r = 0;
	int n = 0;

	if (b->ntables >= WIRE_MAX_TABLES)
		return fail(msg, size, "too many tables");
	if (!is_name(tbl->string, sizeof(t->name)) || !cJSON_IsObject(tbl))
		return fail(msg, size, "tables: a member that is not a table");
	t = &b->tables[b->ntables];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", tbl->string);
	for (size_t i = 0; i < b->ntables; i++)
		if (strcmp(b->tables[i].name, t->name) == 0)
			return fail(msg, size, "table %s twice", t->name);
	cols = cJSON_GetObjectItemCaseSensitive(tbl, "columns");
	rows = cJSON_GetObjectItemCaseSensitive(tbl, "rows");
	if (!cJSON_IsArray(cols) || !cJSON_IsArray(rows))
		return fail(msg, size, "%s: columns and rows must be arrays", t->name);
	cJSON_ArrayForEach(c, cols) {
		if (n >= WIRE_MAX_COLUMNS || !cJSON_IsString(c) || !is_name(c->valuestring, 64))
			return fail(msg, size, "%s: bad or too many columns", t->name);
		for (int k = 0; k < n; k++)
			if (strcmp(t->cols[k], c->valuestring) == 0)
				return fail(msg, size, "%s: column %s twice", t->name,
					    c->valuestring);
		t->cols[n++] = c->valuestring;
	}
	if (n == 0)
		return fail(msg, size, "%s: no columns", t->name);
	t->ncols = n;
	t->nrows = (size_t)cJSON_GetArraySize(rows);
	*total_rows += t->nrows;
	if (*total_rows > WIRE_MAX_ROWS)
		return fail(msg, size, "more than %u rows in one batch", WIRE_MAX_ROWS);
	cells = calloc(t->nrows * (size_t)n + 1, sizeof(*cells));
	if (!cells)
		return -ENOMEM;
	wb->cells[b->ntables] = cells;
	t->cells = cells;
	b->ntables++;
	cJSON_ArrayForEach(row, rows) {
		const cJSON *v;
		int k = 0;

		if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != n)
			return fail(msg, size, "%s: row %zu does not have %d values", t->name, r, n);
		cJSON_ArrayForEach(v, row) {
			struct wire_value *out = &cells[r * (size_t)n + (size_t)k++];

			if (cJSON_IsNull(v)) {
				out->type = WIRE_NULL;
			} else if (cJSON_IsString(v)) {
				out->type = WIRE_TEXT;
				out->s = v->valuestring;
			} else if (get_int(v, &out->i)) {
				out->type = WIRE_INT;
			} else if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) {
				out->type = WIRE_REAL;
				out->d = v->valuedouble;
			} else {
				return fail(msg, size, "%s: row %zu: a value that is not a number, "
						       "a string or null",
					    t->name, r);
			}
		}
		r++;
	}
	return 0;
}

int wire_decode(const char *body, size_t len, struct wire_batch *wb, char *msg, size_t size)
{
	struct ingest_batch *b = &wb->b;
	const cJSON *node, *tables, *tbl;
	cJSON *doc;
	int64_t v;
	size_t total_rows = 0;
	int ret;

	memset(wb, 0, sizeof(*wb));
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
	if (!get_str(doc, "agent_id", b->agent_id, sizeof(b->agent_id)) || !b->agent_id[0])
		return fail(msg, size, "agent_id: a string of 1 to %zu bytes",
			    sizeof(b->agent_id) - 1);
	node = cJSON_GetObjectItemCaseSensitive(doc, "node");
	if (!cJSON_IsObject(node) || !get_str(node, "hostname", b->hostname, sizeof(b->hostname)) ||
	    !b->hostname[0])
		return fail(msg, size, "node.hostname: a string");
	if (get_key_int(node, "cores", &v) && v >= 0 && v < 1 << 20)
		b->cores = (int32_t)v;
	if (get_key_int(node, "mem_total_bytes", &v) && v >= 0)
		b->mem_total_bytes = (uint64_t)v;
	if (get_key_int(node, "boot_ms", &v) && v >= 0)
		b->boot_ms = v;
	if (get_key_int(doc, "interval_ms", &v) && v > 0 && v < 86400000)
		b->interval_ms = v;
	if (!get_key_int(doc, "from_seq", &b->from_seq) || !get_key_int(doc, "to_seq", &b->to_seq) ||
	    b->from_seq < 0 || b->to_seq < b->from_seq)
		return fail(msg, size, "from_seq and to_seq: integers, 0 <= from_seq <= to_seq");
	tables = cJSON_GetObjectItemCaseSensitive(doc, "tables");
	if (tables && !cJSON_IsObject(tables))
		return fail(msg, size, "tables: an object");
	cJSON_ArrayForEach(tbl, tables) {
		ret = decode_table(wb, tbl, msg, size, &total_rows);
		if (ret)
			return ret;
	}
	return 0;
}

void wire_batch_release(struct wire_batch *wb)
{
	for (size_t i = 0; i < WIRE_MAX_TABLES; i++)
		free(wb->cells[i]);
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
