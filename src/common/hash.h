/*
 * hash.h - FNV-1a, 64 bits: for hash tables keyed by short names and for
 * fingerprints of a few fields.  Not for anything an adversary chooses the
 * keys of where a collision costs more than a longer probe.
 *
 * fnv1a() folds len bytes of data into h; fnv1a_str() the bytes of s up to
 * its NUL (not included).  Start from FNV1A_SEED, FNV-1a's offset basis,
 * or from the value a caller has always used: a hash that is stored must
 * keep its seed.
 */
#ifndef JOBSCOPE_HASH_H
#define JOBSCOPE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A_SEED  14695981039346656037ull
#define FNV1A_PRIME 1099511628211ull

static inline uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * FNV1A_PRIME;
	return h;
}

static inline uint64_t fnv1a_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * FNV1A_PRIME;
	return h;
}

#endif
