/* array.c - growable arrays (array.h). */
#include "common/array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int array_grow(void **items, size_t *alloc, size_t used, size_t first, size_t elem_size)
{
	size_t n;
	void *p;

	if (used < *alloc)
		return 0;
	n = *alloc ? *alloc * 2 : (first ? first : 1);
	if (n < *alloc || n > SIZE_MAX / elem_size)
		return -ENOMEM;
	p = realloc(*items, n * elem_size);
	if (!p)
		return -ENOMEM;
	*items = p;
	*alloc = n;
	return 0;
}
