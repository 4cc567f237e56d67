/*
 * jsonw.h - a small streaming JSON writer with pretty printing.
 *
 * The writer appends to a strbuf it does not own.  Objects and arrays nest
 * up to JSONW_MAX_DEPTH; keys and strings are escaped (invalid UTF-8 bytes
 * become U+FFFD).  Doubles are written with a fixed number of decimals and
 * non-finite values as null.  Errors (nesting too deep, buffer cap) stick:
 * jsonw_error() reports the first one, and later calls do nothing.
 */
#ifndef JOBSCOPE_JSONW_H
#define JOBSCOPE_JSONW_H

#include <stdbool.h>
#include <stdint.h>

#include "strbuf.h"

#define JSONW_MAX_DEPTH 32

struct jsonw {
	struct strbuf *out;
	int depth;
	bool pretty;
	bool need_comma[JSONW_MAX_DEPTH + 1];
	bool after_key;
	int error;
};

void jsonw_init(struct jsonw *w, struct strbuf *out, bool pretty);
int jsonw_error(const struct jsonw *w);

void jsonw_obj_begin(struct jsonw *w);
void jsonw_obj_end(struct jsonw *w);
void jsonw_arr_begin(struct jsonw *w);
void jsonw_arr_end(struct jsonw *w);
void jsonw_key(struct jsonw *w, const char *key);

void jsonw_str(struct jsonw *w, const char *s);
void jsonw_strn(struct jsonw *w, const char *s, size_t len);
void jsonw_int(struct jsonw *w, int64_t v);
void jsonw_uint(struct jsonw *w, uint64_t v);
/* NaN and infinities are written null: missing, never 0 */
void jsonw_double(struct jsonw *w, double v, int decimals);
void jsonw_bool(struct jsonw *w, bool v);
void jsonw_null(struct jsonw *w);
/* A value that is already JSON (the caller vouches for it), written as is. */
void jsonw_raw(struct jsonw *w, const char *json, size_t len);

/* key + value shorthands; the _opt forms write null when !valid */
void jsonw_kv_str(struct jsonw *w, const char *key, const char *s);
void jsonw_kv_int(struct jsonw *w, const char *key, int64_t v);
void jsonw_kv_double(struct jsonw *w, const char *key, double v, int decimals);
void jsonw_kv_bool(struct jsonw *w, const char *key, bool v);
void jsonw_kv_null(struct jsonw *w, const char *key);
void jsonw_kv_int_opt(struct jsonw *w, const char *key, bool valid, int64_t v);
void jsonw_kv_double_opt(struct jsonw *w, const char *key, bool valid, double v, int decimals);
void jsonw_kv_str_opt(struct jsonw *w, const char *key, const char *s); /* NULL -> null */

#endif
