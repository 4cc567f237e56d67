/*
 * rowset.h - rows of several tables as plain values: what a store exports
 * for a head (store_export_batch) and what a head ingests (store_ingest),
 * without saying how they travel (net/wire.c turns them into JSON and back).
 *
 * A table names its columns and holds its cells row by row; a value is
 * null, an integer, a real or text.  A batch is a rowset with who sent it
 * and the seq range it covers.
 *
 * Ownership: a rowset owns the cells it allocated (store_rowset_reserve,
 * store_rowset_add_row) and the copies it made (store_rowset_keep); column
 * names and text set by the caller without a copy must outlive it.
 * store_rowset_init cannot fail; store_rowset_release frees.  Errors: 0 or
 * -errno (-ENOMEM; -E2BIG over the table count or the byte cap).  Not
 * thread-safe.
 */
#ifndef JOBSCOPE_STORE_ROWSET_H
#define JOBSCOPE_STORE_ROWSET_H

#include <stddef.h>
#include <stdint.h>
#include "store/sync.h"

/* an export fills 16: 12 fact tables and 4 of dimensions; room for more */
#define STORE_ROWSET_MAX_TABLES	 24
#define STORE_ROWSET_MAX_COLUMNS 64
#define STORE_TABLE_NAME_MAX	 32

enum store_value_type { STORE_VALUE_NULL, STORE_VALUE_INT, STORE_VALUE_REAL, STORE_VALUE_TEXT };

/* One cell: 16 bytes, so a batch of 50,000 rows stays a few tens of MiB. */
struct store_value {
	enum store_value_type type;
	uint32_t len; /* STORE_VALUE_TEXT: bytes of s, without its NUL */
	union {
		int64_t i;
		double d;
		const char *s; /* STORE_VALUE_TEXT: NUL-terminated */
	};
};

struct store_table {
	char name[STORE_TABLE_NAME_MAX];
	int ncols;
	const char *cols[STORE_ROWSET_MAX_COLUMNS];
	size_t nrows;
	struct store_value *cells; /* nrows * ncols, row by row */
};

struct store_rowset_block;

struct store_rowset {
	size_t ntables;
	struct store_table tables[STORE_ROWSET_MAX_TABLES];
	/* what the rowset owns */
	size_t cells_alloc[STORE_ROWSET_MAX_TABLES]; /* rows' room in tables[i].cells */
	struct store_rowset_block *blocks;	     /* store_rowset_keep's copies */
	size_t bytes, max_bytes;		     /* held, and the cap (0: none) */
};

/* Who sends a batch: the agent's identity and its node. */
struct store_sender {
	char agent_id[64];
	char hostname[256];
	int32_t cores;
	uint64_t mem_total_bytes;
	int64_t boot_ms;
	int64_t interval_ms;
};

/* A batch: one agent's rows with from_seq < seq <= to_seq, and who it is. */
struct store_batch {
	struct store_sender who;
	int64_t from_seq;
	int64_t to_seq;
	int64_t max_seq; /* the sender's last seq when it read the batch */
	struct store_rowset rows;
};

/* max_bytes: the most cells and copies it may hold (0: no cap). */
void store_rowset_init(struct store_rowset *rs, size_t max_bytes);
/* Frees what it owns; rs is then empty, with the same cap. */
void store_rowset_release(struct store_rowset *rs);
/* A new table without columns or rows (name shorter than STORE_TABLE_NAME_MAX). */
int store_rowset_add_table(struct store_rowset *rs, const char *name, struct store_table **out);
/* Room for nrows rows in t (its columns set): the next add_row calls do not allocate. */
int store_rowset_reserve(struct store_rowset *rs, struct store_table *t, size_t nrows);
/* Appends a row of t's ncols null cells; *row receives it. */
int store_rowset_add_row(struct store_rowset *rs, struct store_table *t, struct store_value **row);
/* A copy of s[0..len) with a NUL after it, owned by rs; NULL when out of memory or room. */
const char *store_rowset_keep(struct store_rowset *rs, const char *s, size_t len);
/* The table of that name, or NULL. */
const struct store_table *store_rowset_table(const struct store_rowset *rs, const char *name);

#endif
