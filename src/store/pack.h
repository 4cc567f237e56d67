/*
 * pack.h - a block of fact rows as one compressed column blob (the `packs`
 * table, schema 6): the codec, with no SQL.
 *
 * A pack holds up to PACK_MAX_ROWS rows of one table, in any order the
 * writer chose (the packer sorts them by entity, so that each column's
 * neighbours are the same process or device one tick apart).  Each column
 * is written whole: one type byte per row, then its values; integers as
 * zig-zag varints of their delta or delta-of-delta (whichever is shorter
 * for that column), reals as 8 bytes, text and blobs as length + bytes.
 * Then the whole of it through zstd.  Lossless: a row comes back with the
 * same types and values, NULLs included.
 *
 * struct pack_rows holds decoded rows, row-major: cell (r, c) is
 * type[r * ncols + c] (SQLITE_INTEGER, _FLOAT, _TEXT, _BLOB, _NULL) and
 * val[...]: the integer, the double's bits, or (offset << 32 | length)
 * into text.  pack_rows_init cannot fail; pack_rows_release frees.
 *
 * pack_decode distrusts its input (a store may be corrupt or hostile):
 * every count, length and varint is checked, and a bad blob is -EBADMSG,
 * never a read out of bounds.  Errors: 0 or -errno.  Thread-safe (no
 * shared state).
 */
#ifndef JOBSCOPE_STORE_PACK_H
#define JOBSCOPE_STORE_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

#define PACK_MAX_ROWS 4096
#define PACK_MAX_COLS 64
/* A decoded pack is at most this large (a corrupt one may claim more). */
#define PACK_MAX_RAW_BYTES (64u << 20)

struct pack_rows {
	int ncols;
	size_t nrows, alloc;
	uint8_t *type;
	int64_t *val;
	char *text;
	size_t text_len, text_alloc;
};

void pack_rows_init(struct pack_rows *p, int ncols);
void pack_rows_release(struct pack_rows *p);
void pack_rows_clear(struct pack_rows *p);
/* Room for one more row, whose cells are then set with pack_set_*; its index. */
int pack_rows_add(struct pack_rows *p, size_t *row);
void pack_set_null(struct pack_rows *p, size_t row, int col);
void pack_set_int(struct pack_rows *p, size_t row, int col, int64_t v);
void pack_set_float(struct pack_rows *p, size_t row, int col, double v);
int pack_set_text(struct pack_rows *p, size_t row, int col, int type, const void *s, size_t len);

static inline int pack_type(const struct pack_rows *p, size_t row, int col)
{
	return p->type[row * (size_t)p->ncols + (size_t)col];
}

static inline int64_t pack_int(const struct pack_rows *p, size_t row, int col)
{
	return p->val[row * (size_t)p->ncols + (size_t)col];
}

double pack_float(const struct pack_rows *p, size_t row, int col);
const char *pack_text(const struct pack_rows *p, size_t row, int col, size_t *len);

/*
 * The n rows of p listed in order (indexes; NULL: rows 0 to n - 1), in
 * that order, encoded and compressed into out (reset first); *raw_bytes:
 * the size before compression.
 */
int pack_encode(const struct pack_rows *p, const size_t *order, size_t n, struct strbuf *out,
		size_t *raw_bytes);
/*
 * Appends the rows of a blob to p.  A blob with fewer columns than p (a
 * pack written before a column was added to its table) gives NULL in the
 * others; more is an error.  expect_rows: what the packs row says (-1: do
 * not check).
 */
int pack_decode(struct pack_rows *p, const void *blob, size_t len, int64_t expect_rows);

#endif
