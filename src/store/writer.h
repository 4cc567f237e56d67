/*
 * writer.h - what the rest of the store needs from the writer (writer.c):
 * a write's own transaction when no tick is open, the seq counter's
 * loading, and the release of its statement cache.  The cache itself
 * (enum store_stmt and its SQL) is private to writer.c.
 *
 * Not part of the API; used by open.c.  Errors: 0 or -errno with the
 * message printed, except -ENOSPC from store__write_fail, which the caller
 * counts.  Not thread-safe: one connection.
 */
#ifndef JOBSCOPE_STORE_WRITER_H
#define JOBSCOPE_STORE_WRITER_H

#include <stdbool.h>

#include "store/conn.h"

/*
 * Every write runs in a transaction: the tick's when one is open (*own
 * false), its own otherwise (*own true).  store__write_end commits or
 * rolls back what store__write_begin opened and returns ret, or the
 * commit's failure; inside a tick it records the first failure.
 */
int store__write_begin(struct store *st, bool *own);
int store__write_end(struct store *st, bool own, int ret);
/* Sets st->next_seq after every fact row in the file, whoever wrote it. */
int store__load_next_seq(struct store *st);
/* Finalizes the writer's prepared statements (store_close). */
void store__writer_release(struct store *st);

#endif
