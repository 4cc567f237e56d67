/*
 * pgarray.c - the arrays the head's ingest binds to its INSERT ... SELECT
 * FROM unnest() on PostgreSQL (pg.h): array literals in text, and arrays
 * in PostgreSQL's binary format (array_recv's), built in a strbuf.
 */
#include "db/pg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/strbuf.h"

/* element and array type OIDs (pg_type.dat) */
#define PG_INT8OID   20
#define PG_TEXTOID   25
#define PG_FLOAT8OID 701

/* The next element's comma: not after the opening brace. */
static int array_sep(struct strbuf *sb)
{
	return sb->len && sb->buf[sb->len - 1] == '{' ? 0 : strbuf_addch(sb, ',');
}

int pg_array_begin(struct strbuf *sb)
{
	return strbuf_addch(sb, '{');
}

int pg_array_end(struct strbuf *sb)
{
	return strbuf_addch(sb, '}');
}

int pg_array_int64(struct strbuf *sb, int64_t v)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%" PRId64, v);

	return array_sep(sb) || strbuf_add(sb, tmp, (size_t)n) ? -ENOMEM : 0;
}

int pg_array_double(struct strbuf *sb, double v)
{
	char tmp[32];
	int n = pg_format_double(tmp, sizeof(tmp), v);

	return array_sep(sb) || strbuf_add(sb, tmp, (size_t)n) ? -ENOMEM : 0;
}

int pg_array_null(struct strbuf *sb)
{
	return array_sep(sb) || strbuf_add(sb, "NULL", 4) ? -ENOMEM : 0;
}

int pg_array_text(struct strbuf *sb, const char *v, size_t n)
{
	size_t from = 0;

	/* always quoted: an empty string, "NULL", braces, commas and spaces stay text */
	if (array_sep(sb) || strbuf_addch(sb, '"'))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (v[i] != '"' && v[i] != '\\')
			continue;
		if (strbuf_add(sb, v + from, i - from) || strbuf_addch(sb, '\\'))
			return -ENOMEM;
		from = i;
	}
	return strbuf_add(sb, v + from, n - from) || strbuf_addch(sb, '"') ? -ENOMEM : 0;
}

/*
 * Binary arrays (array_send's layout, which array_recv reads): a header of
 * five big-endian 32-bit words (dimensions 1, has-nulls, the element type's
 * OID, the element count, lower bound 1), then each element as its length
 * (-1: NULL) and its bytes, big-endian for numbers.  The header's has-nulls
 * and count words are set as elements are added.
 */
#define BINARRAY_HEADER 20

static const struct {
	unsigned elem, array;
} binarray_oids[] = {
    [PG_ELEM_INT8] = {PG_INT8OID, 1016},
    [PG_ELEM_FLOAT8] = {PG_FLOAT8OID, 1022},
    [PG_ELEM_TEXT] = {PG_TEXTOID, 1009},
};

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

unsigned pg_elem_array_type(enum pg_elem elem)
{
	return binarray_oids[elem].array;
}

int pg_binarray_begin(struct strbuf *sb, enum pg_elem elem)
{
	unsigned char h[BINARRAY_HEADER];

	put_be32(h, 1);
	put_be32(h + 4, 0);
	put_be32(h + 8, binarray_oids[elem].elem);
	put_be32(h + 12, 0);
	put_be32(h + 16, 1);
	return strbuf_add(sb, h, sizeof(h)) ? -ENOMEM : 0;
}

/* An element of n bytes (n < 0: NULL) after the array's header at start. */
static int binarray_put(struct strbuf *sb, size_t start, const void *v, int32_t n)
{
	unsigned char len[4], *h;

	put_be32(len, (uint32_t)n);
	if (strbuf_add(sb, len, sizeof(len)) || (n > 0 && strbuf_add(sb, v, (size_t)n)))
		return -ENOMEM;
	h = (unsigned char *)sb->buf + start;
	put_be32(h + 12, get_be32(h + 12) + 1);
	if (n < 0)
		put_be32(h + 4, 1);
	return 0;
}

int pg_binarray_int64(struct strbuf *sb, size_t start, int64_t v)
{
	unsigned char b[8];

	put_be32(b, (uint32_t)((uint64_t)v >> 32));
	put_be32(b + 4, (uint32_t)v);
	return binarray_put(sb, start, b, 8);
}

int pg_binarray_double(struct strbuf *sb, size_t start, double v)
{
	int64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	return pg_binarray_int64(sb, start, bits);
}

int pg_binarray_text(struct strbuf *sb, size_t start, const char *v, size_t n)
{
	if (n > INT32_MAX)
		return -E2BIG;
	return binarray_put(sb, start, v, (int32_t)n);
}

int pg_binarray_null(struct strbuf *sb, size_t start)
{
	return binarray_put(sb, start, NULL, -1);
}

