/*
 * energy.c - the host's RAPL counters of schema 10 (energy_samples): one
 * row per zone and tick, and a node's read back.  See store.h.
 *
 *   store_put_energy_samples   a tick's zones
 *   store_get_energy_samples   a node's, by zone then time
 */
#include "store/conn.h"
#include "store/facts.h"
#include "store/writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/log.h"
#include "store/jobdata.h"

#define ENERGY_SCHEMA 10
#define ENERGY_NAMES  FACT_NAMES(ENERGY_SAMPLE_COLUMNS) /* after the key, in order */

_Static_assert(FACT_NCOLUMNS(ENERGY_SAMPLE_COLUMNS) == 3, "put_row binds 3, read back in order");

static int put_row(struct store *st, int64_t node_id, const struct store_energy_sample *s)
{
	struct db_stmt *stmt;
	int rc;

	rc = store__cached_stmt(
	    st,
	    FACT_INSERT(energy_samples, "seq, node_id, ts_ms", "?, ?, ?", ENERGY_SAMPLE_COLUMNS),
	    &stmt);
	if (rc != SQLITE_OK)
		return store__write_fail(st, rc, "keep the host's energy");
	db_bind_int64(stmt, 1, st->next_seq);
	db_bind_int64(stmt, 2, node_id);
	db_bind_int64(stmt, 3, s->ts_ms);
	db_bind_text(stmt, 4, s->zone, (int)strnlen(s->zone, sizeof(s->zone)), SQLITE_TRANSIENT);
	/* a counter above 2^63 is kept bit for bit (read back the same) */
	db_bind_int64(stmt, 5, (int64_t)s->energy_uj);
	if (s->max_uj)
		db_bind_int64(stmt, 6, (int64_t)s->max_uj);
	else
		db_bind_null(stmt, 6);
	rc = db_step(stmt);
	db_reset(stmt);
	db_clear_bindings(stmt);
	if (rc != SQLITE_DONE && rc != SQLITE_OK)
		return store__write_fail(st, rc, "keep the host's energy");
	st->next_seq++;
	return 0;
}

int store_put_energy_samples(struct store *st, int64_t node_id, const struct store_energy_sample *s,
			     size_t n)
{
	bool own;
	int ret;

	if (st->schema_version < ENERGY_SCHEMA)
		return log_err(-EPROTONOSUPPORT,
			       "store '%s' is older than schema %d: it has no energy samples",
			       st->path, ENERGY_SCHEMA);
	if (!n)
		return 0;
	ret = store__write_begin(st, &own);
	if (ret)
		return ret;
	for (size_t i = 0; i < n && !ret; i++)
		ret = put_row(st, node_id, &s[i]);
	return store__write_end(st, own, ret);
}

int store_get_energy_samples(struct store *st, int64_t node_id, int64_t from_ms, int64_t to_ms,
			     struct store_energy_sample **out, size_t *n)
{
	struct db_stmt *stmt;
	size_t alloc = 0;
	int rc, ret;

	*out = NULL;
	*n = 0;
	if (st->schema_version < ENERGY_SCHEMA)
		return 0;
	ret = store__prepare(st,
			     "SELECT ts_ms" ENERGY_NAMES " FROM energy_samples"
			     " WHERE node_id = ? AND ts_ms >= ? AND ts_ms < ? ORDER BY zone, ts_ms",
			     "read the host's energy", &stmt);
	if (ret)
		return ret;
	db_bind_int64(stmt, 1, node_id);
	db_bind_int64(stmt, 2, from_ms);
	db_bind_int64(stmt, 3, to_ms);
	while ((rc = db_step(stmt)) == SQLITE_ROW) {
		struct store_energy_sample *e;

		if (ARRAY_GROW(*out, *n, alloc, 64)) {
			ret = log_err(-ENOMEM, "cannot read the host's energy");
			break;
		}
		e = &(*out)[(*n)++];
		memset(e, 0, sizeof(*e));
		e->ts_ms = db_column_int64(stmt, 0);
		snprintf(e->zone, sizeof(e->zone), "%s", db_column_str(stmt, 1));
		e->energy_uj = (uint64_t)db_column_int64(stmt, 2);
		e->max_uj = (uint64_t)db_column_int64(stmt, 3); /* NULL reads 0: unknown */
	}
	if (!ret && rc != SQLITE_DONE)
		ret = store__read_fail(st, rc, "read the host's energy");
	db_finalize(stmt);
	if (ret) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return ret;
}
