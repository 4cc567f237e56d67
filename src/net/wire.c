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
