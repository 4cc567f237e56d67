/*
 * test_jobs_api.c - GET /api/v1/jobs below HTTP: the time parser of
 * since/until (parse_time_ms), the cursor's text, the query's parameters
 * (api_parse_jobs_query), and store_query_jobs on a real store: order,
 * filters, and paging a cursor at a time while jobs are being added.
 *
 * Each store test works in its own mkdtemp directory under /tmp.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "net/api.h"
#include "store/queries.h"
#include "store/store.h"
#include "store/profiling.h"
#include "store/reader.h"
#include "store/write.h"

#define NOW_MS 1795340895123LL /* 2026-11-22T09:48:15.123Z */

/* ---- since/until ---- */

static void test_parse_time(void **state)
{
	static const struct {
		const char *in;
		int64_t ms;
	} good[] = {
	    {"0", 0},
	    {"1795340895123", 1795340895123LL},
	    {"2026-11-22T09:48:15.123Z", 1795340895123LL},
	    {"2026-11-22T10:48:15.123+01:00", 1795340895123LL},
	    {"2026-11-22 09:48:15Z", 1795340895000LL},
	    {"2h", NOW_MS - 7200000},
	    {"7d", NOW_MS - 7 * 86400000LL},
	    {"90s", NOW_MS - 90000},
	    {"1.5h", NOW_MS - 5400000},
	    {"0s", NOW_MS},
	    {"9223372036854775807", INT64_MAX},
	    {"3600", 3600}, /* digits only: a time (ms since the epoch), never an age */
	};
	static const char *const bad[] = {
	    "",
	    "-1",
	    "+5",
	    " 5",
	    "5 ",
	    "1.5", /* a bare number is ms, never seconds */
	    "2h ",
	    "-2h",
	    "yesterday",
	    "2026-11-22",
	    "9223372036854775808",
	    "99999999999999999999",
	    "1970-01-01T00:00:00+01:00", /* before the epoch */
	    "1000000d",			 /* an age reaching before the epoch */
	    "2x",
	    "h",
	};
	int64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = -1;
		assert_int_equal(parse_time_ms(good[i].in, NOW_MS, &v), 0);
		assert_int_equal(v, good[i].ms);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 77;
		assert_int_equal(parse_time_ms(bad[i], NOW_MS, &v), -EINVAL);
		assert_int_equal(v, 77);
	}
	assert_int_equal(parse_time_ms(NULL, NOW_MS, &v), -EINVAL);
}

/* ---- the cursor ---- */

static void test_cursor_roundtrip(void **state)
{
	static const struct store_jobs_cursor c[] = {
	    {1795340895123LL, 1}, {0, 42}, {INT64_MAX, INT64_MAX}, {1, 9007199254740993LL}};
	char buf[STORE_JOBS_CURSOR_MAX];
	struct store_jobs_cursor got;

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		store_jobs_cursor_format(&c[i], buf, sizeof(buf));
		assert_true(strlen(buf) < STORE_JOBS_CURSOR_MAX);
		memset(&got, 0xff, sizeof(got));
		assert_int_equal(store_jobs_cursor_parse(buf, &got), 0);
		assert_int_equal(got.start_ms, c[i].start_ms);
		assert_int_equal(got.id, c[i].id);
	}
	store_jobs_cursor_format(&c[0], buf, sizeof(buf));
	assert_string_equal(buf, "j1.1795340895123.1");
}

static void test_cursor_refused(void **state)
{
	static const char *const bad[] = {
	    "",
	    "j1.",
	    "j1.5",
	    "j1.5.",
	    "j1..5",
	    "j1.5.0", /* row ids start at 1 */
	    "j1.5.-1",
	    "j1.-5.1",
	    "j1.+5.1",
	    "j1.05.1", /* one spelling per cursor */
	    "j1.5.01",
	    "j1.5.1.",
	    "j1.5.1x",
	    "j1.5.1 ",
	    " j1.5.1",
	    "J1.5.1",
	    "j2.5.1",
	    "5.1",
	    "j1.9223372036854775808.1", /* past int64 */
	    "j1.1.9223372036854775808",
	    "j1.1.99999999999999999999999999999999999999", /* too long as well */
	};
	struct store_jobs_cursor got = {7, 7};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(store_jobs_cursor_parse(bad[i], &got), -EINVAL);
		assert_int_equal(got.start_ms, 7);
		assert_int_equal(got.id, 7);
	}
	assert_int_equal(store_jobs_cursor_parse(NULL, &got), -EINVAL);
}

/* ---- the query's parameters ---- */

/* A query as "name=value" pairs, for api_parse_jobs_query's lookup. */
struct args {
	const char *kv[8];
};

static const char *args_get(void *ctx, const char *name)
{
	const struct args *a = ctx;
	size_t n = strlen(name);

	for (size_t i = 0; i < 8 && a->kv[i]; i++)
		if (strncmp(a->kv[i], name, n) == 0 && a->kv[i][n] == '=')
			return a->kv[i] + n + 1;
	return NULL;
}

static int parse(struct args a, struct store_jobs_filter *f, char *err, size_t size)
{
	err[0] = '\0';
	return api_parse_jobs_query(args_get, &a, NOW_MS, f, err, size);
}

static void test_query_defaults(void **state)
{
	struct store_jobs_filter f;
	char err[160];

	(void)state;
	assert_int_equal(parse((struct args){{NULL}}, &f, err, sizeof(err)), 0);
	assert_int_equal(f.state, STORE_JOBS_ALL);
	assert_null(f.user);
	assert_null(f.node);
	assert_false(f.when.has_since);
	assert_false(f.when.has_until);
	assert_false(f.has_after);
	assert_int_equal(f.limit, STORE_JOBS_LIMIT_DEFAULT);
	assert_int_equal(f.job_row, 0);
	assert_false(f.with_sessions);
	/* empty values are absent */
	assert_int_equal(parse((struct args){{"state=", "user=", "node=", "since=", "until=",
					      "limit=", "cursor="}},
			       &f, err, sizeof(err)),
			 0);
	assert_int_equal(f.state, STORE_JOBS_ALL);
	assert_null(f.user);
	assert_false(f.when.has_since);
	assert_false(f.has_after);
	assert_int_equal(f.limit, STORE_JOBS_LIMIT_DEFAULT);
}

static void test_query_values(void **state)
{
	struct store_jobs_filter f;
	char err[160];

	(void)state;
	assert_int_equal(parse((struct args){{"state=ended", "user=alice", "node=n1", "since=2h",
					      "until=1795340895000", "limit=10000",
					      "cursor=j1.1795340000000.17"}},
			       &f, err, sizeof(err)),
			 0);
	assert_int_equal(f.state, STORE_JOBS_ENDED);
	assert_string_equal(f.user, "alice");
	assert_string_equal(f.node, "n1");
	assert_true(f.when.has_since);
	assert_int_equal(f.when.since_ms, NOW_MS - 7200000);
	assert_true(f.when.has_until);
	assert_int_equal(f.when.until_ms, 1795340895000LL);
	assert_int_equal(f.limit, 10000);
	assert_true(f.has_after);
	assert_int_equal(f.after.start_ms, 1795340000000LL);
	assert_int_equal(f.after.id, 17);
	assert_int_equal(
	    parse((struct args){{"state=running", "limit=1", "since=2026-11-22T09:48:15.123Z",
				 "until=2026-11-22T09:48:15.123Z"}},
		  &f, err, sizeof(err)),
	    0);
	assert_int_equal(f.state, STORE_JOBS_RUNNING);
	assert_int_equal(f.limit, 1);
	assert_int_equal(f.when.since_ms, f.when.until_ms); /* an instant is a window */
	assert_int_equal(parse((struct args){{"state=all", "limit=007"}}, &f, err, sizeof(err)), 0);
	assert_int_equal(f.state, STORE_JOBS_ALL);
	assert_int_equal(f.limit, 7);
}

static void test_query_refused(void **state)
{
	static const struct {
		const char *kv;
		const char *err;
	} bad[] = {
	    {"state=live", "state: running, ended or all"},
	    {"state=RUNNING", "state: running, ended or all"},
	    {"state=running ", "state: running, ended or all"},
	    {"since=yesterday", "since/until: ms since the epoch, RFC 3339, or an age (2h, 7d)"},
	    {"until=-5", "since/until: ms since the epoch, RFC 3339, or an age (2h, 7d)"},
	    {"limit=0", "limit: a whole number from 1 to 10000"},
	    {"limit=10001", "limit: a whole number from 1 to 10000"},
	    {"limit=-1", "limit: a whole number from 1 to 10000"},
	    {"limit=1.5", "limit: a whole number from 1 to 10000"},
	    {"limit=1e3", "limit: a whole number from 1 to 10000"},
	    {"limit=99999999999999999999", "limit: a whole number from 1 to 10000"},
	    {"cursor=abc", "cursor: the \"next\" of an earlier page, as it was"},
	    {"cursor=j1.5.0", "cursor: the \"next\" of an earlier page, as it was"},
	};
	struct store_jobs_filter f;
	char err[160];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse((struct args){{bad[i].kv}}, &f, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, bad[i].err);
	}
	assert_int_equal(parse((struct args){{"since=1h", "until=2h"}}, &f, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "since must not come after until");
}

/* ---- store_query_jobs on a real store ---- */

struct fixture {
	char dir[64];
	char path[128];
	FILE *log;
	struct store *st;
	int64_t node_a, node_b;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/jobscope-test-jobs-api-XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->path, sizeof(fx->path), "%s/store.db", fx->dir);
	fx->log = tmpfile();
	if (!fx->log)
		return -1;
	log_set_file(fx->log);
	if (store_open(fx->path, STORE_CREATE, &fx->st) ||
	    store_node(fx->st, "node-a", 8, 16ull << 30, 0, &fx->node_a) ||
	    store_node(fx->st, "node-b", 8, 16ull << 30, 0, &fx->node_b))
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	store_close(fx->st);
	log_set_file(NULL);
	fclose(fx->log);
	fixture_rm_tree(fx->dir);
	free(fx);
	return 0;
}

/* A job of node (row id returned): end_ms 0 while it runs. */
static int64_t add_job(struct fixture *fx, int64_t node, const char *scheduler, const char *id,
		       const char *user, int64_t start_ms, int64_t end_ms)
{
	struct job_record *j = calloc(1, sizeof(*j));
	int64_t row;

	assert_non_null(j);
	j->node_id = node;
	snprintf(j->scheduler, sizeof(j->scheduler), "%s", scheduler);
	snprintf(j->job_id, sizeof(j->job_id), "%s", id);
	snprintf(j->user, sizeof(j->user), "%s", user);
	snprintf(j->command, sizeof(j->command), "work %s", id);
	j->start_ms = start_ms;
	assert_int_equal(store_job_begin(fx->st, j), 0);
	if (end_ms) {
		j->end_ms = end_ms;
		assert_int_equal(store_job_update(fx->st, j), 0);
	}
	row = j->id;
	free(j);
	return row;
}

/* What a page gave: each row's (id, start_ms, end_ms or -1, user). */
struct seen {
	int64_t id[64], start_ms[64], end_ms[64];
	char user[64][16], node[64][16];
	size_t n;
};

static int seen_row(const struct store_row *r, void *arg)
{
	struct seen *s = arg;

	assert_true(s->n < 64);
	assert_int_equal(r->ncols, STORE_JOBS_COL__COUNT);
	s->id[s->n] = (int64_t)r->num[STORE_JOBS_COL_ID];
	s->start_ms[s->n] = (int64_t)r->num[STORE_JOBS_COL_START_MS];
	s->end_ms[s->n] =
	    r->null[STORE_JOBS_COL_END_MS] ? -1 : (int64_t)r->num[STORE_JOBS_COL_END_MS];
	snprintf(s->user[s->n], sizeof(s->user[0]), "%s", r->text[STORE_JOBS_COL_USER]);
	snprintf(s->node[s->n], sizeof(s->node[0]), "%s", r->text[STORE_JOBS_COL_NODE]);
	s->n++;
	return 0;
}

/* The ids of every page of f, a page of limit at a time, in order. */
static size_t page_all(struct fixture *fx, struct store_jobs_filter f, int64_t limit, int64_t *ids,
		       size_t max)
{
	struct store_jobs_cursor next;
	size_t n = 0;
	bool more;

	f.limit = limit;
	f.has_after = false;
	do {
		struct seen s = {0};

		assert_int_equal(store_query_jobs(fx->st, &f, seen_row, &s, &more, &next), 0);
		assert_true(s.n <= (size_t)limit);
		assert_true(!more || s.n == (size_t)limit);
		for (size_t i = 0; i < s.n; i++) {
			assert_true(n < max);
			ids[n++] = s.id[i];
		}
		if (more) {
			assert_int_equal(next.id, s.id[s.n - 1]);
			assert_int_equal(next.start_ms, s.start_ms[s.n - 1]);
			f.after = next;
			f.has_after = true;
		}
	} while (more);
	return n;
}

/* gswarm's calls: any UTF-8 name without control characters; record bodies */
static void test_session_names_and_records(void **state)
{
	struct session_record s;
	struct request_record r;
	char err[256];
	bool missing;
	static const char *const good[] = {"{\"name\": \"run 1/\u03b1\"}",
					   "{\"name\": \"a,b %2F \\\"q\\\"\"}",
					   "{\"name\": \"\xe6\x97\xa5\xe6\x9c\xac\"}"};
	static const char *const bad[] = {"{\"name\": \"a\\u0000b\"}", "{\"name\": \"a\\nb\"}",
					  "{\"name\": \"\xff\"}", "{\"name\": \"\xc2\x85\"}",
					  "{\"name\": \"\xed\xa0\x80\"}"};

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(api_parse_session_start(good[i], strlen(good[i]), 1, &s, err,
							 sizeof(err)),
				 0);
	assert_string_equal(s.name, "\xe6\x97\xa5\xe6\x9c\xac");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(api_parse_session_start(bad[i], strlen(bad[i]), 1, &s, err,
							 sizeof(err)),
				 -EINVAL);
	/* no name, or an empty one: gswarm's default, in local time */
	assert_int_equal(api_parse_session_start("{\"name\": \"\"}", 12, 1700000000000, &s, err,
						 sizeof(err)),
			 0);
	assert_int_equal(strncmp(s.name, "gswarm_profiler_2023111", 23), 0);
	assert_int_equal(strlen(s.name), strlen("gswarm_profiler_20231114_221320"));
	assert_false(s.cuda);
	/* "cuda": true asks the agents for CUDA tables; only a boolean (or null) */
	assert_int_equal(api_parse_session_start("{\"cuda\": true}", 14, 1, &s, err, sizeof(err)), 0);
	assert_true(s.cuda);
	assert_int_equal(api_parse_session_start("{\"cuda\": false}", 15, 1, &s, err, sizeof(err)),
			 0);
	assert_false(s.cuda);
	assert_int_equal(api_parse_session_start("{\"cuda\": null}", 14, 1, &s, err, sizeof(err)), 0);
	assert_false(s.cuda);
	assert_int_equal(api_parse_session_start("{\"cuda\": 1}", 11, 1, &s, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "cuda: true or false");
	assert_int_equal(api_parse_session_start("{\"cuda\": \"yes\"}", 15, 1, &s, err,
						 sizeof(err)),
			 -EINVAL);

	const char *ok = "{\"app_name\": \"llm\", \"queue_time\": 0.5, \"processing_time\": 2,"
			 " \"other_time\": {\"prefill\": 0.125, \"decode\": 1e-3}}";
	assert_int_equal(api_parse_request_record(ok, strlen(ok), 42, &r, &missing, err,
						  sizeof(err)),
			 0);
	assert_string_equal(r.app, "llm");
	assert_int_equal(r.ts_ms, 42);
	assert_true(r.queue_s == 0.5 && r.processing_s == 2.0);
	assert_string_equal(r.other, "{\"prefill\":0.125,\"decode\":0.001}");
	free((char *)r.other);
	ok = "{\"app_name\": \"a\", \"queue_time\": 0, \"processing_time\": 0, \"other_time\": null}";
	assert_int_equal(api_parse_request_record(ok, strlen(ok), 1, &r, &missing, err, sizeof(err)),
			 0);
	assert_null(r.other);
	static const struct {
		const char *body;
		bool missing;
	} refused[] = {
	    {"", true},
	    {"[1]", false},
	    {"{\"queue_time\": 1, \"processing_time\": 1}", true},
	    {"{\"app_name\": 5, \"queue_time\": 1, \"processing_time\": 1}", true},
	    {"{\"app_name\": \"a\", \"processing_time\": 1}", true},
	    {"{\"app_name\": \"a\", \"queue_time\": \"1\", \"processing_time\": 1}", true},
	    {"{\"app_name\": \"a\", \"queue_time\": -0.5, \"processing_time\": 1}", false},
	    {"{\"app_name\": \"\", \"queue_time\": 1, \"processing_time\": 1}", false},
	    {"{\"app_name\": \"a\", \"queue_time\": 1, \"processing_time\": 1e13}", false},
	    {"{\"app_name\": \"a\", \"queue_time\": 1, \"processing_time\": 1, \"other_time\": 3}",
	     true},
	    {"{\"app_name\": \"a\", \"queue_time\": 1, \"processing_time\": 1, \"other_time\": "
	     "{\"x\": -1}}",
	     false},
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		err[0] = '\0';
		assert_int_equal(api_parse_request_record(refused[i].body, strlen(refused[i].body), 1,
							  &r, &missing, err, sizeof(err)),
				 -EINVAL);
		assert_true(err[0] != '\0');
		assert_null(r.other);
		if (missing != refused[i].missing)
			fail_msg("%s: missing %d", refused[i].body, missing);
	}
}

static void test_order_and_ties(void **state)
{
	struct fixture *fx = *state;
	int64_t r[6], ids[64];
	struct store_jobs_filter f = {.limit = 100};
	struct seen s = {0};
	bool more;
	struct store_jobs_cursor next;

	/* three jobs start in the same ms: the row id orders them, newest row first */
	r[0] = add_job(fx, fx->node_a, "slurm", "1", "alice", 1000, 2000);
	r[1] = add_job(fx, fx->node_a, "slurm", "2", "bob", 5000, 0);
	r[2] = add_job(fx, fx->node_b, "slurm", "3", "alice", 3000, 0);
	r[3] = add_job(fx, fx->node_b, "slurm", "4", "alice", 3000, 4000);
	r[4] = add_job(fx, fx->node_a, "slurm", "5", "carol", 3000, 3500);
	r[5] = add_job(fx, fx->node_a, "session", "0/7", "alice", 6000, 0);
	assert_int_equal(store_query_jobs(fx->st, &f, seen_row, &s, &more, &next), 0);
	assert_false(more);
	assert_int_equal(s.n, 5); /* sessions are left out unless asked for */
	assert_int_equal(s.id[0], r[1]);
	assert_int_equal(s.id[1], r[4]);
	assert_int_equal(s.id[2], r[3]);
	assert_int_equal(s.id[3], r[2]);
	assert_int_equal(s.id[4], r[0]);
	assert_int_equal(s.end_ms[0], -1);
	assert_int_equal(s.end_ms[1], 3500);
	assert_string_equal(s.node[2], "node-b");
	assert_string_equal(s.user[4], "alice");

	/* a page of one at a time: each once, in the same order */
	f.with_sessions = true;
	assert_int_equal(page_all(fx, f, 1, ids, 64), 6);
	assert_int_equal(ids[0], r[5]);
	assert_int_equal(ids[1], r[1]);
	assert_int_equal(ids[2], r[4]);
	assert_int_equal(ids[3], r[3]);
	assert_int_equal(ids[4], r[2]);
	assert_int_equal(ids[5], r[0]);
	/* pages of 2 end at the last row exactly: no empty page after a full one */
	assert_int_equal(page_all(fx, f, 2, ids, 64), 6);
	assert_int_equal(page_all(fx, f, 6, ids, 64), 6);
	assert_int_equal(page_all(fx, f, 7, ids, 64), 6);
}

/* The ids of one page of f (no cursor), in order. */
static size_t ids_of(struct fixture *fx, struct store_jobs_filter f, int64_t *ids)
{
	struct seen s = {0};
	struct store_jobs_cursor next;
	bool more;

	f.limit = 64;
	assert_int_equal(store_query_jobs(fx->st, &f, seen_row, &s, &more, &next), 0);
	assert_false(more);
	memcpy(ids, s.id, s.n * sizeof(ids[0]));
	return s.n;
}

static void test_filters(void **state)
{
	struct fixture *fx = *state;
	int64_t ended_early, running_b, ended_late, running_a, ids[64];
	struct store_jobs_filter f = {0};

	ended_early = add_job(fx, fx->node_a, "slurm", "10", "alice", 1000, 2000);
	running_b = add_job(fx, fx->node_b, "k8s", "pod-1", "bob", 3000, 0);
	ended_late = add_job(fx, fx->node_b, "slurm", "11", "alice", 4000, 9000);
	running_a = add_job(fx, fx->node_a, "slurm", "12", "bob", 8000, 0);

	f.state = STORE_JOBS_RUNNING;
	assert_int_equal(ids_of(fx, f, ids), 2);
	assert_int_equal(ids[0], running_a);
	assert_int_equal(ids[1], running_b);
	f.state = STORE_JOBS_ENDED;
	assert_int_equal(ids_of(fx, f, ids), 2);
	assert_int_equal(ids[0], ended_late);
	assert_int_equal(ids[1], ended_early);
	f.state = STORE_JOBS_ALL;
	f.user = "alice";
	assert_int_equal(ids_of(fx, f, ids), 2);
	assert_int_equal(ids[0], ended_late);
	assert_int_equal(ids[1], ended_early);
	f.user = "nobody";
	assert_int_equal(ids_of(fx, f, ids), 0);
	f.user = "";
	f.node = "node-b";
	assert_int_equal(ids_of(fx, f, ids), 2);
	assert_int_equal(ids[0], ended_late);
	assert_int_equal(ids[1], running_b);
	f.node = "node-b";
	f.user = "bob";
	f.state = STORE_JOBS_RUNNING;
	assert_int_equal(ids_of(fx, f, ids), 1);
	assert_int_equal(ids[0], running_b);
	f = (struct store_jobs_filter){0};
	/* the jobs that overlap [2500, 3500]: not the one that ended at 2000, not the one from 8000
	 */
	f.when = (struct store_window){true, true, 2500, 3500};
	assert_int_equal(ids_of(fx, f, ids), 1);
	assert_int_equal(ids[0], running_b);
	f.when = (struct store_window){true, true, 2000, 4000}; /* the ends are in the window */
	assert_int_equal(ids_of(fx, f, ids), 3);
	assert_int_equal(ids[0], ended_late);
	assert_int_equal(ids[1], running_b);
	assert_int_equal(ids[2], ended_early);
	f.when = (struct store_window){true, false, 9500, 0}; /* since only: the running ones */
	assert_int_equal(ids_of(fx, f, ids), 2);
	assert_int_equal(ids[0], running_a);
	assert_int_equal(ids[1], running_b);
	f.when = (struct store_window){false, true, 0, 999}; /* until only: none started yet */
	assert_int_equal(ids_of(fx, f, ids), 0);
	f.when = (struct store_window){0};
	f.job_row = ended_late;
	assert_int_equal(ids_of(fx, f, ids), 1);
	assert_int_equal(ids[0], ended_late);
}

/*
 * Paging while jobs are added (new rows, some starting before the page
 * reached, some after) and jobs end: every job there at the first page
 * comes exactly once; those added behind the cursor come too.
 */
static void test_paging_while_adding(void **state)
{
	struct fixture *fx = *state;
	struct store_jobs_filter f = {.limit = 2};
	struct store_jobs_cursor next;
	int64_t first[10], got[64], late_old, late_new;
	size_t n = 0;
	bool more;

	for (int i = 0; i < 10; i++) {
		char id[16];

		snprintf(id, sizeof(id), "%d", 100 + i);
		/* pairs share a start: ties inside and across pages */
		first[i] = add_job(fx, fx->node_a, "slurm", id, "alice", 10000 + 1000 * (i / 2), 0);
	}
	late_old = late_new = 0;
	do {
		struct seen s = {0};

		assert_int_equal(store_query_jobs(fx->st, &f, seen_row, &s, &more, &next), 0);
		for (size_t i = 0; i < s.n; i++)
			got[n++] = s.id[i];
		if (n == 4) {
			/* behind the cursor: a job that started early, stored late (same start as a
			 * tie) */
			late_old = add_job(fx, fx->node_a, "slurm", "200", "alice", 11000, 0);
			/* ahead of it: newer than the first page, not in this pass */
			late_new = add_job(fx, fx->node_a, "slurm", "201", "alice", 99000, 0);
		}
		if (n == 6) {
			/* a job on a later page ends: it keeps its place */
			struct job_record j = {0};

			assert_int_equal(store_get_job(fx->st, first[1], &j), 0);
			j.end_ms = 50000;
			assert_int_equal(store_job_update(fx->st, &j), 0);
		}
		f.after = next;
		f.has_after = more;
	} while (more);
	assert_int_equal(n, 11);
	/* newest first, row id breaking ties: 9,8 7,6 5,4 3,2 (late_old: 11000 like 3,2) 1,0 */
	{
		int64_t want[] = {first[9], first[8], first[7], first[6], first[5], first[4],
				  late_old, first[3], first[2], first[1], first[0]};

		for (size_t i = 0; i < n; i++)
			assert_int_equal(got[i], want[i]);
	}
	assert_true(late_new > 0);
}

static void test_bad_filter(void **state)
{
	struct fixture *fx = *state;
	struct store_jobs_filter f = {.limit = STORE_JOBS_LIMIT_MAX + 1};
	struct store_jobs_cursor next;
	struct seen s = {0};
	bool more = true;

	assert_int_equal(store_query_jobs(fx->st, &f, seen_row, &s, &more, &next), -EINVAL);
	assert_false(more);
	f.limit = 1;
	f.state = (enum store_jobs_state)7;
	assert_int_equal(store_query_jobs(fx->st, &f, seen_row, &s, &more, &next), -EINVAL);
	assert_int_equal(s.n, 0);
}

/* A callback's error stops the page and is what the query returns. */
static int fail_row(const struct store_row *r, void *arg)
{
	(void)r;
	(*(int *)arg)++;
	return -ENOMEM;
}

static void test_callback_error(void **state)
{
	struct fixture *fx = *state;
	struct store_jobs_filter f = {.limit = 5};
	struct store_jobs_cursor next;
	bool more;
	int calls = 0;

	add_job(fx, fx->node_a, "slurm", "1", "alice", 1000, 0);
	add_job(fx, fx->node_a, "slurm", "2", "alice", 2000, 0);
	assert_int_equal(store_query_jobs(fx->st, &f, fail_row, &calls, &more, &next), -ENOMEM);
	assert_int_equal(calls, 1);
	assert_false(more);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_time),
	    cmocka_unit_test(test_cursor_roundtrip),
	    cmocka_unit_test(test_cursor_refused),
	    cmocka_unit_test(test_query_defaults),
	    cmocka_unit_test(test_query_values),
	    cmocka_unit_test(test_query_refused),
	    cmocka_unit_test(test_session_names_and_records),
	    cmocka_unit_test_setup_teardown(test_order_and_ties, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_filters, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_paging_while_adding, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_filter, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_callback_error, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
