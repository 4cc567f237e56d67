/*
 * column.h - reading a result row's columns in order, for the readers
 * (read.c, replay.c): a NULL integer is reported as missing, text is
 * copied with a bound.
 *
 * Not part of the API.  Static inline: the replay calls these millions of
 * times.  Nothing here fails.
 */
#ifndef JOBSCOPE_STORE_COLUMN_H
#define JOBSCOPE_STORE_COLUMN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sqlite3.h>

/* Reading a row's columns in order. */
struct row {
	struct db_stmt *stmt;
	int col;
};

static inline int64_t col_i64(struct row *r)
{
	return db_column_int64(r->stmt, r->col++);
}

/* false (and *out = 0) when the column is NULL. */
static inline bool col_opt(struct row *r, uint64_t *out)
{
	int col = r->col++;

	if (db_column_type(r->stmt, col) == SQLITE_NULL) {
		*out = 0;
		return false;
	}
	*out = (uint64_t)db_column_int64(r->stmt, col);
	return true;
}

/* Text into buf, cut to fit (a replay copies millions: no printf machinery). */
static inline void col_text(struct row *r, char *buf, size_t size)
{
	const char *s = (const char *)db_column_text(r->stmt, r->col);
	size_t len = s ? (size_t)db_column_bytes(r->stmt, r->col) : 0;

	r->col++;
	if (len >= size)
		len = size - 1;
	if (len)
		memcpy(buf, s, len);
	buf[len] = '\0';
	/* an embedded NUL ends the string where C code would end it */
}

#endif
