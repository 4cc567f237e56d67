/*
 * ingest.h - the head's ingest of an agent's batch, shared by ingest.c
 * (the batch, its dimension rows, the cursor, SQLite's rows) and
 * ingest_pg.c (PostgreSQL's fact rows: COPY and the one unnest INSERT).
 * Internal to src/store.
 */
#ifndef JOBSCOPE_STORE_INGEST_H
#define JOBSCOPE_STORE_INGEST_H

#include "store/conn.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/rowset.h"
#include "store/sync.h"

/* agent row id -> head row id, for one kind of dimension row */
struct id_map {
	int64_t *from, *to;
	size_t n, alloc;
};

struct memo_pending {
	uint64_t key, hash;
	int64_t head_row;
};

struct ingest {
	struct store *st;
	struct memo_pending *pending; /* memo entries to keep once committed */
	size_t npending, pending_alloc;
	const struct store_batch *b;
	int64_t node_id;
	int64_t acked;
	struct id_map jobs, procs, devices;
	struct unnest_part *parts; /* PostgreSQL: the fact tables that go by store__pg_unnest_run */
	size_t nparts, parts_alloc;
	char *errmsg;
	size_t errmsg_size;
	int64_t rows;
};

/* What a batch's column becomes on the head (column_roles). */
enum column_role {
	COL_KEPT, /* stored as it is */
	COL_SEQ,  /* the head's next seq */
	COL_NODE, /* the head's node id (when not NULL) */
	COL_JOB,  /* an agent's row id mapped to the head's (when not NULL) */
	COL_PROC,
	COL_DEVICE,
};

/* -EINVAL with the batch's error message made of fmt. */
int store__ingest_bad(struct ingest *in, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The index of column name in t, or -1. */
int store__col_index(const struct store_table *t, const char *name);
/*
 * t's columns as a statement names them, quoted ("user" is a keyword of
 * PostgreSQL): "a", "b", ...  into buf as snprintf would (the length it
 * wanted is returned; size 0 writes nothing).
 */
size_t store__col_list(char *buf, size_t size, const struct store_table *t);
/*
 * The value a cell of a batch is stored as on the head: its seq the
 * head's next, its node and row ids the head's.  0, or -EINVAL (errmsg)
 * for an id the batch does not hold.
 */
int store__head_value(struct ingest *in, const struct store_table *t, int c, enum column_role role,
		      const struct store_value *v, struct store_value *out);
/* Whether a fact row (its seq cell) is above the agent's cursor and in the batch's range. */
bool store__row_is_new(const struct ingest *in, const struct store_value *seq);
/* A failed statement of a batch: a full disk or a lost database is the group's, else the batch's.
 */
int store__row_failed(struct ingest *in, const struct store_table *t, int rc);

/*
 * PostgreSQL (ingest_pg.c): a fact table's nnew new rows in one COPY; or
 * kept (store__pg_unnest_later, -EMEDIUMTYPE for a column no array carries:
 * COPY it) for the batch's one INSERT of every such table's arrays, sent
 * ahead by store__pg_unnest_run; store__pg_unnest_release forgets what was
 * kept.  insert_sql: the table's INSERT for the batch's columns, which names
 * them in the statements' cache; cached_types: what its entry keeps (the
 * columns' types once read), or NULL.
 */
int store__pg_copy_facts(struct ingest *in, const struct store_table *t, int seq_col,
			 const enum column_role *role, size_t nnew);
int store__pg_unnest_later(struct ingest *in, const struct store_table *t, int seq_col,
			   const enum column_role *role, const char *insert_sql,
			   const char *cached_types, size_t nnew);
int store__pg_unnest_run(struct ingest *in);
void store__pg_unnest_release(struct ingest *in);

/*
 * PostgreSQL: a batch's nnew new process samples (t: its proc_samples) as
 * the store's sets (pgschema.c), a job's few of a day as rows, sent ahead;
 * -EMEDIUMTYPE: rows the sets do not take as they are (a column no array
 * carries, no job_id or ts_ms, a time not an integer): the caller COPYs
 * them.
 */
int store__pg_proc_sets(struct ingest *in, const struct store_table *t, int seq_col,
			const enum column_role *role, const char *insert_sql,
			const char *cached_types, size_t nnew);

#endif
