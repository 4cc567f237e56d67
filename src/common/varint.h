/*
 * varint.h - unsigned LEB128 ("varint"): seven bits a byte, low bits
 * first, the high bit set on every byte but the last, so a 64-bit value
 * takes 1 to 10 bytes.  Protobuf's varint (prom/rw_encode.c) and the packs'
 * column encoding (store/pack.c) are this one format.
 */
#ifndef JOBSCOPE_VARINT_H
#define JOBSCOPE_VARINT_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

/* The bytes v takes, 1 to 10. */
size_t varint_size(uint64_t v);
/* Appends v to sb: 0, or strbuf_add's error (the buffer full). */
int varint_put(struct strbuf *sb, uint64_t v);

#endif
