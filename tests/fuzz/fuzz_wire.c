/*
 * fuzz_wire.c - libFuzzer target for the head's ingest decoder: any bytes
 * a client may POST to /api/v1/ingest go through wire_decode_batch(), which must
 * give a batch or -EINVAL, never crash, and a batch that keeps its promises
 * (names, counts, types).  The same bytes go through the agent's decoder of
 * the head's answer (acked_seq, interval_ms, cuda, sessions).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1), msg[256];
	struct wire_batch wb;
	int ret;

	if (!buf)
		abort();
	memcpy(buf, data, size);
	ret = wire_decode_batch(buf, size, &wb, msg, sizeof(msg));
	if (ret == 0) {
		const struct store_batch *b = &wb.b;

		if (!b->who.agent_id[0] || !b->who.hostname[0] || b->to_seq < b->from_seq ||
		    b->rows.ntables > WIRE_MAX_TABLES)
			abort();
		for (size_t t = 0; t < b->rows.ntables; t++) {
			const struct store_table *tb = &b->rows.tables[t];

			if (tb->ncols <= 0 || tb->ncols > WIRE_MAX_COLUMNS)
				abort();
			for (size_t c = 0; c < tb->nrows * (size_t)tb->ncols; c++)
				if (tb->cells[c].type == STORE_VALUE_TEXT && !tb->cells[c].s)
					abort();
		}
	} else if (ret != -EINVAL && ret != -ENOMEM) {
		abort();
	} else if (!msg[0] && ret == -EINVAL) {
		abort(); /* a refusal says why */
	}
	wire_batch_release(&wb);
	/* the same bytes as the head's answer: a cursor >= 0, a bounded, terminated list */
	{
		struct wire_answer a;

		if (wire_decode_answer(buf, size, &a) == 0 &&
		    (a.acked_seq < 0 || a.interval_ms < 0 ||
		     memchr(a.sessions, '\0', sizeof(a.sessions)) == NULL))
			abort();
	}
	/* the same bytes as a zstd body: output capped, never a crash */
	{
		struct strbuf out;

		strbuf_init(&out, WIRE_MAX_BODY + 1);
		ret = wire_decompress(buf, size, &out);
		if (ret == 0 && out.len > WIRE_MAX_BODY)
			abort();
		strbuf_release(&out);
	}
	free(buf);
	return 0;
}
