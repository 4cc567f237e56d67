/*
 * packs.h - the fact tables whose closed hours are packed (pack.h), the
 * virtual tables that read them whole, and the packer.  Internal.
 *
 * Every connection gets, for each fact table T of the file, a virtual
 * table temp.T_all with T's columns: the packed rows, then T's own, in
 * seq order (or in (ts_ms, seq) order for one key), whatever constraints
 * on seq, ts_ms and the table's key column the query gives.  Readers of
 * history use T_all; the writer and "the latest row" queries use T.
 * Packed rows always have smaller seqs than T's rows: the packer moves
 * every row up to a cut, and rows are only ever added above it.
 */
#ifndef JOBSCOPE_STORE_PACKS_H
#define JOBSCOPE_STORE_PACKS_H

#include <stdint.h>

struct store;

struct pack_table {
	const char *name;
	const char *key_col;  /* packs.key: one pack never mixes two keys */
	const char *sort_col; /* within a pack, rows by this then seq */
	int64_t since;	      /* the schema that has the table */
};

extern const struct pack_table store__pack_tables[];
extern const int store__npack_tables;

/* The module and the T_all tables, on one connection (open.c). */
int store__packs_register(struct store *st);

#endif
