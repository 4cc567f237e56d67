/*
 * intern.c - counted strings in an open-addressing table: a string's
 * entry found from its text by hash, and from its copy by its address.
 */
#include "common/intern.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

struct intern_entry {
	uint64_t hash;
	size_t refs;
	char s[];
};

/* deleted slots: marked, so that a probe goes on past them */
static struct intern_entry tombstone;

void intern_init(struct intern *t)
{
	memset(t, 0, sizeof(*t));
}

void intern_release(struct intern *t)
{
	for (size_t i = 0; i < t->nslots; i++)
		if (t->slot[i] && t->slot[i] != &tombstone)
			free(t->slot[i]);
	free(t->slot);
	intern_init(t);
}

size_t intern_count(const struct intern *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nslots; i++)
		n += t->slot[i] && t->slot[i] != &tombstone;
	return n;
}

/* The slot of s (its entry's or, absent, the first free one); -1 when the table is full. */
static long find(const struct intern *t, const char *s, uint64_t h)
{
	long free_at = -1;

	for (size_t k = 0; k < t->nslots; k++) {
		size_t i = (h + k) & (t->nslots - 1);
		struct intern_entry *e = t->slot[i];

		if (!e)
			return free_at >= 0 ? free_at : (long)i;
		if (e == &tombstone) {
			if (free_at < 0)
				free_at = (long)i;
		} else if (e->hash == h && strcmp(e->s, s) == 0) {
			return (long)i;
		}
	}
	return free_at;
}

/*
 * The table made anew for what it holds, tombstones dropped: at most half
 * full, so its size follows the strings held, not every string ever held
 * (command lines that each come once would otherwise double it for ever);
 * false when out of memory.
 */
static bool rehash(struct intern *t)
{
	size_t live = intern_count(t), n = 64;
	struct intern_entry **slot;

	while ((live + 1) * 2 > n)
		n *= 2;
	slot = calloc(n, sizeof(*slot));

	if (!slot)
		return false;
	for (size_t i = 0; i < t->nslots; i++) {
		struct intern_entry *e = t->slot[i];
		size_t k = 0;

		if (!e || e == &tombstone)
			continue;
		while (slot[(e->hash + k) & (n - 1)])
			k++;
		slot[(e->hash + k) & (n - 1)] = e;
	}
	free(t->slot);
	t->slot = slot;
	t->nslots = n;
	t->used = live;
	return true;
}

const char *intern_get(struct intern *t, const char *s)
{
	uint64_t h = fnv1a_str(FNV1A_SEED, s);
	struct intern_entry *e;
	size_t len;
	long i;

	if (!s[0])
		return "";
	if ((t->used + 1) * 4 > t->nslots * 3 && !rehash(t))
		return "";
	i = find(t, s, h);
	if (i < 0)
		return "";
	e = t->slot[i];
	if (e && e != &tombstone) {
		e->refs++;
		return e->s;
	}
	len = strlen(s);
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return "";
	e->hash = h;
	e->refs = 1;
	memcpy(e->s, s, len + 1);
	if (!t->slot[i])
		t->used++; /* a tombstone's slot was counted already */
	t->slot[i] = e;
	return e->s;
}

void intern_put(struct intern *t, const char *s)
{
	struct intern_entry *e;
	long i;

	if (!s || !s[0])
		return; /* "" (and what was never counted) */
	e = (struct intern_entry *)(void *)(s - offsetof(struct intern_entry, s));
	if (--e->refs)
		return;
	i = find(t, s, e->hash);
	if (i >= 0 && t->slot[i] == e)
		t->slot[i] = &tombstone;
	free(e);
}
