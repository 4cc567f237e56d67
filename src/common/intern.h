/*
 * intern.h - strings kept once: the same text asked for twice is one
 * copy, counted, freed when its last holder puts it back.
 *
 * The process tree keeps each process's command line here: a thousand
 * workers of one job (or sleepers of one script) hold one copy instead of
 * a kilobyte each.  intern_get() returns the copy (never NULL: "" for an
 * empty text and when memory runs out, which is then not counted);
 * intern_put() gives one back.  Not thread-safe: one owner's.
 */
#ifndef JOBSCOPE_INTERN_H
#define JOBSCOPE_INTERN_H

#include <stddef.h>

struct intern {
	struct intern_entry **slot; /* open addressing by hash */
	size_t nslots, used;
};

void intern_init(struct intern *t);
/* Frees every string, counted or not: the caller holds none of them after. */
void intern_release(struct intern *t);
const char *intern_get(struct intern *t, const char *s);
void intern_put(struct intern *t, const char *s);
/* How many distinct strings are held. */
size_t intern_count(const struct intern *t);

#endif
