/*
 * pack.c - the packs' codec (pack.h): decoded rows, the column encoding
 * and its zstd frame.
 *
 *   pack_rows_*, pack_set_*         rows in memory
 *   varint_put (common/varint.h), get_varint   LEB128
 *   int_mode_size, encode_column    a column: types, then values
 *   pack_encode, decode_column, pack_decode
 *
 * Layout before zstd: "JSP" 1, varint ncols, varint nrows, then per
 * column: a mode byte (how its integers are written: 0 as they are,
 * 1 delta, 2 delta of delta, each zig-zag), nrows type bytes, its values
 * in row order (integers varints, reals 8 bytes little-endian, text and
 * blobs varint length + bytes).  Differences are taken modulo 2^64, so
 * every int64 comes back exactly.
 */
#include "store/pack.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>
#include <zstd.h>

#include "common/varint.h"

#define PACK_MAGIC	"JSP\001"
#define PACK_ZSTD_LEVEL 9

enum int_mode { MODE_RAW, MODE_DELTA, MODE_DOD, MODE__COUNT };

void pack_rows_init(struct pack_rows *p, int ncols)
{
	memset(p, 0, sizeof(*p));
	p->ncols = ncols;
}

void pack_rows_release(struct pack_rows *p)
{
	free(p->type);
	free(p->val);
	free(p->text);
	pack_rows_init(p, p->ncols);
}

void pack_rows_clear(struct pack_rows *p)
{
	p->nrows = 0;
	p->text_len = 0;
}

static int grow_rows(struct pack_rows *p, size_t want)
{
	size_t alloc = p->alloc ? p->alloc : 256, ncells;
	uint8_t *type;
	int64_t *val;

	if (want <= p->alloc)
		return 0;
	while (alloc < want)
		alloc *= 2;
	ncells = alloc * (size_t)p->ncols;
	type = realloc(p->type, ncells);
	if (!type)
		return -ENOMEM;
	p->type = type;
	val = realloc(p->val, ncells * sizeof(*val));
	if (!val)
		return -ENOMEM;
	p->val = val;
	p->alloc = alloc;
	return 0;
}

int pack_rows_add(struct pack_rows *p, size_t *row)
{
	int ret;

	if (p->ncols <= 0 || p->ncols > PACK_MAX_COLS)
		return -EINVAL;
	ret = grow_rows(p, p->nrows + 1);
	if (ret)
		return ret;
	*row = p->nrows++;
	memset(p->type + *row * (size_t)p->ncols, SQLITE_NULL, (size_t)p->ncols);
	memset(p->val + *row * (size_t)p->ncols, 0, (size_t)p->ncols * sizeof(*p->val));
	return 0;
}

static size_t cell(const struct pack_rows *p, size_t row, int col)
{
	return row * (size_t)p->ncols + (size_t)col;
}

void pack_set_null(struct pack_rows *p, size_t row, int col)
{
	p->type[cell(p, row, col)] = SQLITE_NULL;
	p->val[cell(p, row, col)] = 0;
}

void pack_set_int(struct pack_rows *p, size_t row, int col, int64_t v)
{
	p->type[cell(p, row, col)] = SQLITE_INTEGER;
	p->val[cell(p, row, col)] = v;
}

void pack_set_float(struct pack_rows *p, size_t row, int col, double v)
{
	int64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	p->type[cell(p, row, col)] = SQLITE_FLOAT;
	p->val[cell(p, row, col)] = bits;
}

int pack_set_text(struct pack_rows *p, size_t row, int col, int type, const void *s, size_t len)
{
	size_t alloc = p->text_alloc ? p->text_alloc : 4096;
	char *text;

	if (len > UINT32_MAX || p->text_len + len > UINT32_MAX)
		return -E2BIG;
	if (p->text_len + len > p->text_alloc) {
		while (alloc < p->text_len + len)
			alloc *= 2;
		text = realloc(p->text, alloc);
		if (!text)
			return -ENOMEM;
		p->text = text;
		p->text_alloc = alloc;
	}
	if (len)
		memcpy(p->text + p->text_len, s, len);
	p->type[cell(p, row, col)] = (uint8_t)type;
	p->val[cell(p, row, col)] = (int64_t)((uint64_t)p->text_len << 32 | (uint64_t)len);
	p->text_len += len;
	return 0;
}

double pack_float(const struct pack_rows *p, size_t row, int col)
{
	int64_t bits = pack_int(p, row, col);
	double v;

	memcpy(&v, &bits, sizeof(v));
	return v;
}

const char *pack_text(const struct pack_rows *p, size_t row, int col, size_t *len)
{
	uint64_t v = (uint64_t)pack_int(p, row, col);

	*len = (size_t)(v & 0xffffffffu);
	return p->text ? p->text + (v >> 32) : ""; /* no text yet: every length is 0 */
}

/* Encoding. */

static uint64_t zigzag(uint64_t v)
{
	return (v << 1) ^ (uint64_t) - (int64_t)(v >> 63);
}

static uint64_t unzigzag(uint64_t v)
{
	return (v >> 1) ^ (uint64_t) - (int64_t)(v & 1);
}

/*
 * The value written for an integer cell under a mode, from the column's
 * previous integer and previous delta (both modulo 2^64).
 */
static uint64_t int_code(enum int_mode mode, uint64_t v, uint64_t *prev, uint64_t *prev_delta)
{
	uint64_t delta = v - *prev, code;

	code = mode == MODE_RAW ? v : mode == MODE_DELTA ? delta : delta - *prev_delta;
	*prev = v;
	*prev_delta = delta;
	return zigzag(code);
}

/* Bytes a column's integers take under a mode. */
static size_t row_at(const size_t *order, size_t i)
{
	return order ? order[i] : i;
}

static size_t int_mode_size(const struct pack_rows *p, const size_t *order, size_t n, int col,
			    enum int_mode mode)
{
	uint64_t prev = 0, prev_delta = 0;
	size_t bytes = 0;

	for (size_t i = 0; i < n; i++) {
		size_t r = row_at(order, i);

		if (pack_type(p, r, col) == SQLITE_INTEGER)
			bytes += varint_size(
			    int_code(mode, (uint64_t)pack_int(p, r, col), &prev, &prev_delta));
	}
	return bytes;
}

static int encode_column(const struct pack_rows *p, const size_t *order, size_t n, int col,
			 struct strbuf *sb)
{
	enum int_mode mode = MODE_RAW;
	size_t best = int_mode_size(p, order, n, col, MODE_RAW);
	uint64_t prev = 0, prev_delta = 0;
	int ret;

	for (int m = MODE_DELTA; m < MODE__COUNT; m++) {
		size_t size = int_mode_size(p, order, n, col, (enum int_mode)m);

		if (size < best) {
			best = size;
			mode = (enum int_mode)m;
		}
	}
	ret = strbuf_addch(sb, (char)mode);
	for (size_t i = 0; i < n && !ret; i++)
		ret = strbuf_addch(sb, (char)pack_type(p, row_at(order, i), col));
	for (size_t i = 0; i < n && !ret; i++) {
		size_t r = row_at(order, i);
		int type = pack_type(p, r, col);
		uint64_t bits = (uint64_t)pack_int(p, r, col);
		uint8_t le[8];
		const char *s;
		size_t len;

		switch (type) {
		case SQLITE_INTEGER:
			ret = varint_put(sb, int_code(mode, bits, &prev, &prev_delta));
			break;
		case SQLITE_FLOAT:
			for (int b = 0; b < 8; b++)
				le[b] = (uint8_t)(bits >> (8 * b));
			ret = strbuf_add(sb, le, sizeof(le));
			break;
		case SQLITE_TEXT:
		case SQLITE_BLOB:
			s = pack_text(p, r, col, &len);
			ret = varint_put(sb, len);
			if (!ret)
				ret = len ? strbuf_add(sb, s, len) : 0;
			break;
		default:
			break;
		}
	}
	return ret;
}

int pack_encode(const struct pack_rows *p, const size_t *order, size_t n, struct strbuf *out,
		size_t *raw_bytes)
{
	struct strbuf raw;
	size_t bound, zlen;
	int ret;

	if (n > PACK_MAX_ROWS || (!order && n > p->nrows))
		return -EINVAL;
	for (size_t i = 0; order && i < n; i++)
		if (order[i] >= p->nrows)
			return -EINVAL;
	strbuf_init(&raw, PACK_MAX_RAW_BYTES);
	ret = strbuf_add(&raw, PACK_MAGIC, 4);
	if (!ret)
		ret = varint_put(&raw, (uint64_t)p->ncols);
	if (!ret)
		ret = varint_put(&raw, n);
	for (int c = 0; c < p->ncols && !ret; c++)
		ret = encode_column(p, order, n, c, &raw);
	if (ret)
		goto out_release;
	bound = ZSTD_compressBound(raw.len);
	strbuf_reset(out);
	ret = strbuf_grow(out, bound);
	if (ret)
		goto out_release;
	zlen = ZSTD_compress(out->buf, bound, raw.buf, raw.len, PACK_ZSTD_LEVEL);
	if (ZSTD_isError(zlen)) {
		ret = -ENOMEM;
		goto out_release;
	}
	out->len = zlen;
	*raw_bytes = raw.len;
out_release:
	strbuf_release(&raw);
	return ret;
}

/* Decoding: every read is checked against the end. */

struct reader {
	const uint8_t *p, *end;
};

static int get_varint(struct reader *rd, uint64_t *out)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (rd->p >= rd->end)
			return -EBADMSG;
		b = *rd->p++;
		if (shift == 63 && b > 1)
			return -EBADMSG;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EBADMSG;
}

static int decode_column(struct pack_rows *p, size_t first, size_t nrows, int col,
			 struct reader *rd)
{
	uint64_t prev = 0, prev_delta = 0, code, v, len;
	uint8_t mode;
	int ret;

	if (rd->end - rd->p < 1 || (size_t)(rd->end - rd->p - 1) < nrows)
		return -EBADMSG;
	mode = *rd->p++;
	if (mode >= MODE__COUNT)
		return -EBADMSG;
	for (size_t r = 0; r < nrows; r++) {
		uint8_t t = rd->p[r];

		if (t < SQLITE_INTEGER || t > SQLITE_NULL)
			return -EBADMSG;
		p->type[cell(p, first + r, col)] = t;
		p->val[cell(p, first + r, col)] = 0;
	}
	rd->p += nrows;
	for (size_t r = first; r < first + nrows; r++) {
		switch (pack_type(p, r, col)) {
		case SQLITE_INTEGER:
			ret = get_varint(rd, &code);
			if (ret)
				return ret;
			code = unzigzag(code);
			v = mode == MODE_RAW	 ? code
			    : mode == MODE_DELTA ? prev + code
						 : prev + prev_delta + code;
			prev_delta = v - prev;
			prev = v;
			p->val[cell(p, r, col)] = (int64_t)v;
			break;
		case SQLITE_FLOAT:
			if (rd->end - rd->p < 8)
				return -EBADMSG;
			v = 0;
			for (int i = 0; i < 8; i++)
				v |= (uint64_t)rd->p[i] << (8 * i);
			rd->p += 8;
			p->val[cell(p, r, col)] = (int64_t)v;
			break;
		case SQLITE_TEXT:
		case SQLITE_BLOB:
			ret = get_varint(rd, &len);
			if (ret)
				return ret;
			if (len > (uint64_t)(rd->end - rd->p))
				return -EBADMSG;
			ret = pack_set_text(p, r, col, pack_type(p, r, col), rd->p, (size_t)len);
			if (ret)
				return ret;
			rd->p += len;
			break;
		default:
			break;
		}
	}
	return 0;
}

int pack_decode(struct pack_rows *p, const void *blob, size_t len, int64_t expect_rows)
{
	unsigned long long raw_len = ZSTD_getFrameContentSize(blob, len);
	struct reader rd;
	uint64_t ncols, nrows;
	size_t first = p->nrows, n;
	uint8_t *raw;
	int ret;

	if (raw_len == ZSTD_CONTENTSIZE_UNKNOWN || raw_len == ZSTD_CONTENTSIZE_ERROR ||
	    raw_len > PACK_MAX_RAW_BYTES || raw_len < 4)
		return -EBADMSG;
	raw = malloc((size_t)raw_len);
	if (!raw)
		return -ENOMEM;
	n = ZSTD_decompress(raw, (size_t)raw_len, blob, len);
	if (ZSTD_isError(n) || n != raw_len) {
		ret = -EBADMSG;
		goto out_free;
	}
	rd.p = raw;
	rd.end = raw + n;
	ret = -EBADMSG;
	if (memcmp(rd.p, PACK_MAGIC, 4) != 0)
		goto out_free;
	rd.p += 4;
	if (get_varint(&rd, &ncols) || get_varint(&rd, &nrows))
		goto out_free;
	if (ncols == 0 || ncols > (uint64_t)p->ncols || nrows > PACK_MAX_ROWS ||
	    (expect_rows >= 0 && nrows != (uint64_t)expect_rows))
		goto out_free;
	/* every row takes at least one type byte per column */
	if (nrows * ncols > (uint64_t)(rd.end - rd.p))
		goto out_free;
	ret = grow_rows(p, first + (size_t)nrows);
	if (ret)
		goto out_free;
	for (int c = 0; c < p->ncols; c++) {
		if ((uint64_t)c >= ncols) {
			for (size_t r = first; r < first + (size_t)nrows; r++)
				pack_set_null(p, r, c);
			continue;
		}
		ret = decode_column(p, first, (size_t)nrows, c, &rd);
		if (ret)
			goto out_free;
	}
	ret = rd.p == rd.end ? 0 : -EBADMSG;
	if (!ret)
		p->nrows = first + (size_t)nrows;
out_free:
	free(raw);
	return ret;
}
