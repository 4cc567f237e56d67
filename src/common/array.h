/*
 * array.h - growable arrays: a pointer, a count in use and a count
 * allocated, kept by the owner's struct (no wrapper type, so each array
 * keeps its element type).
 *
 *	if (ARRAY_GROW(t->job, t->njobs, t->alloc, 16))
 *		return -ENOMEM;
 *	j = &t->job[t->njobs++];
 *
 * ARRAY_GROW makes room for one more element when the array is full,
 * doubling its allocation (the first one of `first` elements).  Returns 0,
 * or -ENOMEM with the array as it was (never a half-grown one).  New
 * slots are not initialized.
 */
#ifndef JOBSCOPE_ARRAY_H
#define JOBSCOPE_ARRAY_H

#include <stddef.h>

int array_grow(void **items, size_t *alloc, size_t used, size_t first, size_t elem_size);

#define ARRAY_GROW(items, used, alloc, first)                                                      \
	array_grow((void **)&(items), &(alloc), (used), (first), sizeof(*(items)))

#endif
