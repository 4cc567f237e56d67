/*
 * varint.c - unsigned LEB128 (see varint.h).
 */
#include "common/varint.h"

size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

int varint_put(struct strbuf *sb, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	while (v >= 0x80) {
		b[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (uint8_t)v;
	return strbuf_add(sb, b, n);
}
