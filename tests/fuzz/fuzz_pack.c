/*
 * fuzz_pack.c - libFuzzer target for pack_decode() (store/pack.h): a pack
 * blob read from a store that may be corrupt or hostile.  The first byte
 * picks the column count the reader expects; the rest is the blob, as is
 * and after a round trip through pack_encode of whatever decoded.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/strbuf.h"
#include "store/pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pack_rows p, q;
	struct strbuf blob;
	size_t raw;
	int ncols;

	if (size < 1)
		return 0;
	ncols = 1 + data[0] % PACK_MAX_COLS;
	pack_rows_init(&p, ncols);
	pack_rows_init(&q, ncols);
	strbuf_init(&blob, 0);
	if (pack_decode(&p, data + 1, size - 1, -1) == 0) {
		/* what decoded encodes, and decodes to the same cells */
		if (pack_encode(&p, NULL, p.nrows, &blob, &raw) != 0)
			abort();
		if (pack_decode(&q, blob.buf, blob.len, (int64_t)p.nrows) != 0 ||
		    q.nrows != p.nrows)
			abort();
		for (size_t r = 0; r < p.nrows; r++)
			for (int c = 0; c < ncols; c++) {
				size_t la, lb;

				if (pack_type(&p, r, c) != pack_type(&q, r, c))
					abort();
				if (pack_type(&p, r, c) == SQLITE_TEXT ||
				    pack_type(&p, r, c) == SQLITE_BLOB) {
					const char *a = pack_text(&p, r, c, &la),
						   *b = pack_text(&q, r, c, &lb);

					if (la != lb || (la && memcmp(a, b, la) != 0))
						abort();
				} else if (pack_type(&p, r, c) != SQLITE_NULL &&
					   pack_int(&p, r, c) != pack_int(&q, r, c)) {
					abort();
				}
			}
	}
	pack_rows_release(&p);
	pack_rows_release(&q);
	strbuf_release(&blob);
	return 0;
}
