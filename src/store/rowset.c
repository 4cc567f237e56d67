/*
 * rowset.c - tables of plain values (see rowset.h): growing a table's
 * cells, and copies of names and text in blocks that never move, so the
 * pointers handed out stay valid until the rowset is released.
 */
#include "store/rowset.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWSET_BLOCK_SIZE ((size_t)64 << 10)

struct store_rowset_block {
	struct store_rowset_block *next;
	size_t used, size;
	char data[];
};

void store_rowset_init(struct store_rowset *rs, size_t max_bytes)
{
	memset(rs, 0, sizeof(*rs));
	rs->max_bytes = max_bytes;
}

void store_rowset_release(struct store_rowset *rs)
{
	size_t max_bytes = rs->max_bytes;

	for (size_t i = 0; i < rs->ntables; i++)
		free(rs->tables[i].cells);
	while (rs->blocks) {
		struct store_rowset_block *b = rs->blocks;

		rs->blocks = b->next;
		free(b);
	}
	store_rowset_init(rs, max_bytes);
}

static bool room_for(const struct store_rowset *rs, size_t bytes)
{
	return !rs->max_bytes || (bytes <= rs->max_bytes && rs->bytes <= rs->max_bytes - bytes);
}

int store_rowset_add_table(struct store_rowset *rs, const char *name, struct store_table **out)
{
	struct store_table *t;

	if (rs->ntables >= STORE_ROWSET_MAX_TABLES)
		return -E2BIG;
	if (strlen(name) >= sizeof(t->name))
		return -EINVAL;
	t = &rs->tables[rs->ntables];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	rs->cells_alloc[rs->ntables++] = 0;
	*out = t;
	return 0;
}

int store_rowset_reserve(struct store_rowset *rs, struct store_table *t, size_t nrows)
{
	size_t i = (size_t)(t - rs->tables), ncols = (size_t)t->ncols, bytes;
	struct store_value *cells;

	if (i >= rs->ntables || ncols == 0)
		return -EINVAL;
	if (nrows <= rs->cells_alloc[i])
		return 0;
	if (nrows > SIZE_MAX / sizeof(*cells) / ncols - 1)
		return -E2BIG;
	bytes = (nrows - rs->cells_alloc[i]) * ncols * sizeof(*cells);
	if (!room_for(rs, bytes))
		return -E2BIG;
	/* one cell more, so that a table of no rows still has an allocation */
	cells = realloc(t->cells, (nrows * ncols + 1) * sizeof(*cells));
	if (!cells)
		return -ENOMEM;
	t->cells = cells;
	rs->cells_alloc[i] = nrows;
	rs->bytes += bytes;
	return 0;
}

int store_rowset_add_row(struct store_rowset *rs, struct store_table *t, struct store_value **row)
{
	size_t i = (size_t)(t - rs->tables), ncols = (size_t)t->ncols;
	int ret;

	if (i >= rs->ntables || ncols == 0)
		return -EINVAL;
	if (t->nrows == rs->cells_alloc[i]) {
		ret = store_rowset_reserve(rs, t, t->nrows ? 2 * t->nrows : 64);
		if (ret == -E2BIG)
			ret = store_rowset_reserve(rs, t, t->nrows + 1); /* near the cap: one */
		if (ret)
			return ret;
	}
	*row = &t->cells[t->nrows * ncols];
	memset(*row, 0, ncols * sizeof(**row));
	t->nrows++;
	return 0;
}

const char *store_rowset_keep(struct store_rowset *rs, const char *s, size_t len)
{
	struct store_rowset_block *b = rs->blocks;
	char *out;

	if (!b || b->size - b->used < len + 1) {
		size_t size = len + 1 > ROWSET_BLOCK_SIZE ? len + 1 : ROWSET_BLOCK_SIZE;

		if (!room_for(rs, size + sizeof(*b)))
			return NULL;
		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->used = 0;
		b->size = size;
		b->next = rs->blocks;
		rs->blocks = b;
		rs->bytes += size + sizeof(*b);
	}
	out = b->data + b->used;
	memcpy(out, s, len);
	out[len] = '\0';
	b->used += len + 1;
	return out;
}

const struct store_table *store_rowset_table(const struct store_rowset *rs, const char *name)
{
	for (size_t i = 0; i < rs->ntables; i++)
		if (strcmp(rs->tables[i].name, name) == 0)
			return &rs->tables[i];
	return NULL;
}
