/*
 * wire.h - the agent -> head ingest protocol (docs/wire.md, version 1), in
 * one place: the batch and the head's answer, each encoded and decoded.
 *
 * The agent reads a batch from its store (store_export_batch, a row set),
 * wire_encode_batch() makes its JSON body; the head's wire_decode_batch()
 * turns a body back into a struct store_batch for store_ingest(), checking
 * every length, type and name, and answers with wire_encode_answer(), which
 * the agent reads with wire_decode_answer().  Decoding distrusts its input:
 * any bytes give either a batch or -EINVAL with a message, never a crash
 * (it is fuzzed).  Bodies above WIRE_COMPRESS_ABOVE travel zstd-compressed.
 *
 * Ownership: a decoded batch owns its strings and cells until
 * wire_batch_release().  Encoders replace what out held.  Errors: 0 or
 * -errno.  Thread-safe (no globals).
 */
#ifndef JOBSCOPE_WIRE_H
#define JOBSCOPE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "store/rowset.h"
#include "store/sync.h"

#define WIRE_VERSION	 1
#define WIRE_MAX_BODY	 (64u << 20) /* bytes of JSON a head takes in one request */
#define WIRE_MAX_ROWS	 200000	     /* rows (cells / columns) of one batch */
#define WIRE_MAX_TABLES	 STORE_ROWSET_MAX_TABLES
#define WIRE_MAX_COLUMNS STORE_ROWSET_MAX_COLUMNS

/* The identity fields of b from who (its seq range and rows untouched). */
void wire_batch_from(struct store_batch *b, const struct store_sender *who);

/*
 * The body of batch b: {"version", "agent_id", "node": {...}, "interval_ms",
 * "from_seq", "to_seq", "max_seq", "tables": {name: {"columns", "rows"}}}.
 * -E2BIG past out's cap.
 */
int wire_encode_batch(const struct store_batch *b, struct strbuf *out);
/*
 * The hello an agent sends when it does not know what the head holds of
 * it: no rows, from_seq = to_seq = 0, the node by its hostname only.
 */
int wire_encode_hello(const struct store_sender *who, struct strbuf *out);

/* A decoded batch: b's strings point into text, the body's copy (net/wire_decode.c). */
struct wire_batch {
	struct store_batch b;
	char *text;
};
/* -EINVAL with errmsg saying why, or -ENOMEM; release wb in every case. */
int wire_decode_batch(const char *body, size_t len, struct wire_batch *wb, char *errmsg,
		      size_t errmsg_size);
void wire_batch_release(struct wire_batch *wb);

/* The head's answer to a committed batch (the control channel included). */
#define WIRE_SESSIONS_MAX 4096
struct wire_answer {
	int64_t acked_seq;		  /* the highest seq of this agent the head holds */
	int64_t interval_ms;		  /* what the active sessions ask of the node; 0: nothing */
	bool cuda;			  /* ... whether CUDA tables (an active session's --cuda) */
	char sessions[WIRE_SESSIONS_MAX]; /* their names, apart by 0x1f (names hold no control
					     character) */
};
/*
 * {"version", "acked_seq", "interval_ms" (null for 0), "cuda": bool, "sessions": [...]}
 * and a newline.
 */
int wire_encode_answer(const struct wire_answer *a, struct strbuf *out);
/*
 * -EINVAL when the body has no acked_seq (a number >= 0); interval_ms is 0
 * unless a number > 0; cuda is false unless true (a head older than it says
 * nothing); sessions lists the names that fit.
 */
int wire_decode_answer(const char *body, size_t len, struct wire_answer *a);

/* Bodies above this many bytes go zstd-compressed (Content-Encoding: zstd). */
#define WIRE_COMPRESS_ABOVE (64 * 1024)
/* zstd: compress in into out (replaced); 0 or -errno. */
int wire_compress(const char *in, size_t len, struct strbuf *out);
/*
 * zstd: decompress in into out (replaced), refusing more than
 * WIRE_MAX_BODY bytes of output: -E2BIG; not zstd: -EINVAL.
 */
int wire_decompress(const char *in, size_t len, struct strbuf *out);

#endif
