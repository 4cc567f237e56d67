/*
 * wire.h - the agent -> head ingest batch (docs/wire.md, version 1).
 *
 * wire_encode() builds a batch from the agent's own store (its spool) from
 * a cursor; wire_decode() turns a request body into a struct ingest_batch
 * for store_ingest(), checking every length, type and name.  Decoding
 * distrusts its input: any bytes give either a batch or -EINVAL with a
 * message, never a crash (it is fuzzed).
 *
 * Ownership: a decoded batch owns its strings and cells until
 * wire_batch_release().  Errors: 0 or -errno.  Thread-safe (no globals).
 */
#ifndef JOBSCOPE_WIRE_H
#define JOBSCOPE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "store/store.h"

#define WIRE_VERSION	 1
#define WIRE_MAX_BODY	 (64u << 20) /* bytes of JSON a head takes in one request */
#define WIRE_MAX_ROWS	 200000	    /* rows (cells / columns) of one batch */

/* Who sends: the agent's identity and its node. */
struct wire_sender {
	char agent_id[64];
	char hostname[256];
	int32_t cores;
	uint64_t mem_total_bytes;
	int64_t boot_ms;
	int64_t interval_ms;
};

/* A batch of the rows after `after_seq` (at most max_rows) into out (JSON). */
int wire_encode(struct store *st, const struct wire_sender *who, int64_t after_seq,
		int64_t max_rows, struct strbuf *out, int64_t *to_seq, int64_t *max_seq,
		int64_t *nrows);

/* Bodies above this many bytes go zstd-compressed (Content-Encoding: zstd). */
#define WIRE_COMPRESS_ABOVE (64 * 1024)
/* zstd: compress in into out (replaced); 0 or -errno. */
int wire_compress(const char *in, size_t len, struct strbuf *out);
/*
 * zstd: decompress in into out (replaced), refusing more than
 * WIRE_MAX_BODY bytes of output: -E2BIG; not zstd: -EINVAL.
 */
int wire_decompress(const char *in, size_t len, struct strbuf *out);

struct wire_batch {
	struct ingest_batch b;
	void *json;		    /* the parsed document the strings point into */
	struct wire_value *cells[WIRE_MAX_TABLES];
};

int wire_decode(const char *body, size_t len, struct wire_batch *out, char *errmsg,
		size_t errmsg_size);
void wire_batch_release(struct wire_batch *wb);

#endif
