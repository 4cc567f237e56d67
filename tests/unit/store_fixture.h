/*
 * store_fixture.h - a store for each cmocka case of the store tests that
 * run on SQLite and, with JOBSCOPE_TEST_PG_URL, on PostgreSQL
 * (test_store_cuda.c, test_store_app.c): a temporary directory and its
 * store file, or the database URL, the log captured in a temporary file,
 * and job ids of the case's own (PostgreSQL: one database for all the
 * cases; main sets next_job_base from the time and pid there).  Include
 * after fixture.h.  write_sql() runs SQL on the SQLite file behind the
 * store's back (an older schema, rows a later version wrote); stream()
 * carries an agent store's batch to a head store.
 */
#ifndef JOBSCOPE_TEST_STORE_FIXTURE_H
#define JOBSCOPE_TEST_STORE_FIXTURE_H

#include <string.h>

#include <sqlite3.h>

#include "common/log.h"
#include "store/rowset.h"
#include "store/store.h"
#include "store/sync.h"

struct fixture {
	char dir[64];
	char path[128];
	const char *url;  /* PostgreSQL, or NULL: the file at path */
	int64_t job_base; /* job ids of this test (PostgreSQL: one database for all) */
	FILE *log;
};

static int64_t next_job_base = 1000;

static inline int setup_common(void **state, const char *url)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/jobscope-test-store-XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->path, sizeof(fx->path), "%s/store.db", fx->dir);
	fx->url = url;
	fx->job_base = next_job_base;
	next_job_base += 1000;
	fx->log = tmpfile();
	if (!fx->log)
		return -1;
	log_set_file(fx->log);
	*state = fx;
	return 0;
}

static inline int setup(void **state)
{
	return setup_common(state, NULL);
}

static inline int setup_pg(void **state)
{
	return setup_common(state, getenv("JOBSCOPE_TEST_PG_URL"));
}

static inline int teardown(void **state)
{
	struct fixture *fx = *state;

	log_set_file(NULL);
	fclose(fx->log);
	fixture_rm_tree(fx->dir);
	free(fx);
	return 0;
}

static inline struct store *open_store(struct fixture *fx)
{
	struct store *st = NULL;

	assert_int_equal(store_open(fx->url ? fx->url : fx->path, STORE_CREATE, &st), 0);
	return st;
}

/* Runs text on the store file at fx->path, with no store open on it. */
static inline void write_sql(const struct fixture *fx, const char *text)
{
	sqlite3 *db;

	assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, text, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/*
 * One batch of the agent's store after `after`, ingested by the head as
 * agent-HOST: the head's cursor (acked seq); the batch's to_seq in *to_seq
 * when it is not NULL.
 */
static inline int64_t stream(struct store *agent, struct store *head, const char *host,
			     int64_t after, int64_t *to_seq)
{
	struct store_batch b;
	int64_t max_seq, nrows, acked = -1;
	char err[256] = "";

	memset(&b, 0, sizeof(b));
	store_rowset_init(&b.rows, 0);
	snprintf(b.who.agent_id, sizeof(b.who.agent_id), "agent-%s", host);
	snprintf(b.who.hostname, sizeof(b.who.hostname), "%s", host);
	b.who.interval_ms = 1000;
	b.from_seq = after;
	assert_int_equal(store_export_batch(agent, after, 0, &b.rows, &b.to_seq, &max_seq, &nrows),
			 0);
	if (to_seq)
		*to_seq = b.to_seq;
	if (store_ingest(head, &b, 1700000009000, &acked, err, sizeof(err)))
		fail_msg("ingest: %s", err);
	store_rowset_release(&b.rows);
	return acked;
}

#endif
