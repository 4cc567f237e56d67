/*
 * test_pg.c - the store's two engines without a PostgreSQL server:
 * SQLite's parameters as PostgreSQL's (pg_translate), the greatest() and
 * least() every SQLite connection gets so that SQL is written once, a
 * head's file retention (store_drop_before), and a postgresql:// store
 * that cannot be opened failing with a clear error.  The engine itself is
 * tested against a real server by tests/integration/test_head_backends.py
 * and the head suite's _pg variants.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/jsonw.h"
#include "common/strbuf.h"
#include "db/pg.h"
#include "store/store.h"
#include "store/reader.h"
#include "store/upkeep.h"
#include "store/write.h"

static void translate_ok(const char *sql, const char *want, int want_n)
{
	char out[512];
	int n = -1;

	assert_int_equal(pg_translate(sql, out, sizeof(out), &n), 0);
	assert_string_equal(out, want);
	assert_int_equal(n, want_n);
}

static void test_translate(void **state)
{
	(void)state;
	translate_ok("SELECT 1", "SELECT 1", 0);
	/* bare ? numbers after the largest so far, as SQLite does */
	translate_ok("INSERT INTO t (a, b) VALUES (?, ?)", "INSERT INTO t (a, b) VALUES ($1, $2)",
		     2);
	translate_ok("SELECT ?2, ?1, ?", "SELECT $2, $1, $3", 3);
	translate_ok("WHERE a = ?10 AND b = ?9", "WHERE a = $10 AND b = $9", 10);
	/* nothing inside quotes is a parameter */
	translate_ok("SELECT '?', \"a?b\", ?", "SELECT '?', \"a?b\", $1", 1);
	translate_ok("SELECT 'it''s ?', ?", "SELECT 'it''s ?', $1", 1);
}

static void test_translate_limits(void **state)
{
	char small[8];
	int n;

	(void)state;
	assert_int_equal(pg_translate("SELECT ?, ?", small, sizeof(small), &n), -ENAMETOOLONG);
	assert_int_equal(pg_translate("SELECT ?0", small, sizeof(small), &n), -EINVAL);
	assert_int_equal(pg_translate("SELECT ?40000", small, sizeof(small), &n), -EINVAL);
}

/* Array literals as PostgreSQL's array_in reads them (arrayfuncs.c): quoted text, NULL bare. */
static void test_array_literal(void **state)
{
	struct strbuf sb;
	static const char text[] = "a\"b\\c,{d} NULL";

	(void)state;
	strbuf_init(&sb, 1 << 20);
	assert_int_equal(pg_array_begin(&sb), 0);
	assert_int_equal(pg_array_end(&sb), 0);
	assert_string_equal(strbuf_str(&sb), "{}");
	strbuf_reset(&sb);
	assert_int_equal(pg_array_begin(&sb), 0);
	assert_int_equal(pg_array_int64(&sb, INT64_MIN), 0);
	assert_int_equal(pg_array_null(&sb), 0);
	assert_int_equal(pg_array_double(&sb, 0.1), 0);
	assert_int_equal(pg_array_double(&sb, -INFINITY), 0);
	assert_int_equal(pg_array_text(&sb, text, strlen(text)), 0);
	assert_int_equal(pg_array_text(&sb, "", 0), 0);
	assert_int_equal(pg_array_text(&sb, "NULL", 4), 0);
	assert_int_equal(pg_array_end(&sb), 0);
	assert_string_equal(strbuf_str(&sb), "{-9223372036854775808,NULL,0.10000000000000001,"
					     "-Infinity,\"a\\\"b\\\\c,{d} NULL\",\"\",\"NULL\"}");
	strbuf_release(&sb);
}

/* array_send's bytes, as array_recv reads them: header, then each element's length and bytes */
static void test_binary_array(void **state)
{
	static const unsigned char ints[] = {
	    0,	  0,	0,    1,    0,	  0, 0, 1, 0, 0, 0, 20,
	    0,	  0,	0,    3,    0,	  0, 0, 1,		/* 1 dim, nulls, int8, 3, from 1 */
	    0,	  0,	0,    8,    0x80, 0, 0, 0, 0, 0, 0, 0,	/* INT64_MIN */
	    0xff, 0xff, 0xff, 0xff,				/* NULL */
	    0,	  0,	0,    8,    0,	  0, 0, 0, 0, 0, 1, 2}; /* 258 */
	static const unsigned char reals_text[] = {
	    0, 0, 0, 1, 0,    0,    0,	 0, 0, 0, 2, 189,
	    0, 0, 0, 1, 0,    0,    0,	 1,		/* float8, 1 element */
	    0, 0, 0, 8, 0x3f, 0xe0, 0,	 0, 0, 0, 0, 0, /* 0.5 */
	    0, 0, 0, 1, 0,    0,    0,	 0, 0, 0, 0, 25,
	    0, 0, 0, 2, 0,    0,    0,	 1,	      /* text, 2 elements */
	    0, 0, 0, 3, 'a',  '\t', 'b', 0, 0, 0, 0}; /* "a\tb", "" */
	struct strbuf sb;
	size_t at;

	(void)state;
	strbuf_init(&sb, STRBUF_DEFAULT_MAX);
	assert_int_equal(pg_binarray_begin(&sb, PG_ELEM_INT8), 0);
	assert_int_equal(pg_binarray_int64(&sb, 0, INT64_MIN), 0);
	assert_int_equal(pg_binarray_null(&sb, 0), 0);
	assert_int_equal(pg_binarray_int64(&sb, 0, 258), 0);
	assert_int_equal(sb.len, sizeof(ints));
	assert_memory_equal(sb.buf, ints, sizeof(ints));
	assert_int_equal(pg_elem_array_type(PG_ELEM_INT8), 1016);
	strbuf_reset(&sb);
	assert_int_equal(pg_binarray_begin(&sb, PG_ELEM_FLOAT8), 0);
	assert_int_equal(pg_binarray_double(&sb, 0, 0.5), 0);
	at = sb.len; /* a second array after the first, in the same buffer */
	assert_int_equal(pg_binarray_begin(&sb, PG_ELEM_TEXT), 0);
	assert_int_equal(pg_binarray_text(&sb, at, "a\tb", 3), 0);
	assert_int_equal(pg_binarray_text(&sb, at, "", 0), 0);
	assert_int_equal(sb.len, sizeof(reals_text));
	assert_memory_equal(sb.buf, reals_text, sizeof(reals_text));
	assert_int_equal(pg_elem_array_type(PG_ELEM_FLOAT8), 1022);
	assert_int_equal(pg_elem_array_type(PG_ELEM_TEXT), 1009);
	strbuf_release(&sb);
}

static void test_is_url(void **state)
{
	(void)state;
	assert_true(pg_is_url("postgresql://u@127.0.0.1:5432/db"));
	assert_true(pg_is_url("postgres://u@h/db"));
	/* several hosts, libpq's form: passed to libpq as they are */
	assert_true(pg_is_url("postgresql://u@10.0.0.1:5432,10.0.0.2:5433/db"
			      "?target_session_attrs=read-write"));
	assert_false(pg_is_url("/var/lib/jobscope/head.db"));
	assert_false(pg_is_url("postgresql:/x"));
	assert_false(pg_is_url(NULL));
}

static char *temp_store(char *path, size_t size)
{
	snprintf(path, size, "/tmp/test_pg_XXXXXX");
	assert_non_null(mkdtemp(path));
	strncat(path, "/s.db", size - strlen(path) - 1);
	return path;
}

static void cleanup(const char *path)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%.*s'", (int)(strrchr(path, '/') - path), path);
	assert_int_equal(system(cmd), 0);
}

static void test_greatest_least(void **state)
{
	const char *const none[] = {NULL};
	char path[256];
	struct store *st;
	struct strbuf out;
	struct jsonw w;
	int64_t rows;

	(void)state;
	assert_int_equal(store_open(temp_store(path, sizeof(path)), STORE_CREATE, &st), 0);
	strbuf_init(&out, 4096);
	jsonw_init(&w, &out, false);
	/* PostgreSQL's: NULLs ignored, NULL only when all are; integers stay integers */
	assert_int_equal(
	    store_query_json(st,
			     "SELECT greatest(1, NULL, 3) AS g, least(2, NULL, -1) AS l,"
			     " greatest(NULL, NULL) AS n, greatest(1, 2.5) AS f,"
			     " least(7) AS one",
			     none, true, &w, &rows),
	    0);
	assert_int_equal(rows, 1);
	assert_string_equal(strbuf_str(&out),
			    "{\"g\":3,\"l\":-1,\"n\":null,\"f\":2.500,\"one\":7}");
	strbuf_release(&out);
	store_close(st);
	cleanup(path);
}

static void test_drop_before_file(void **state)
{
	struct host_sample h = {0};
	char path[256];
	struct store *st;
	int64_t node, dropped = -1, deleted = -1;

	(void)state;
	assert_int_equal(store_open(temp_store(path, sizeof(path)), STORE_CREATE, &st), 0);
	assert_int_equal(store_node(st, "n1", 2, 1 << 30, 1000, &node), 0);
	assert_int_equal(store_tick_begin(st), 0);
	for (int64_t ts = 1000; ts <= 10000; ts += 1000)
		assert_int_equal(store_put_host(st, node, ts, &h), 0);
	assert_int_equal(store_tick_commit(st), 0);
	/* rows before 4000 go: 1000, 2000, 3000; a file has no partitions */
	assert_int_equal(store_drop_before(st, 4000, &dropped, &deleted), 0);
	assert_int_equal(dropped, 0);
	assert_int_equal(deleted, 3);
	assert_int_equal(store_drop_before(st, 4000, &dropped, &deleted), 0);
	assert_int_equal(deleted, 0);
	store_close(st);
	cleanup(path);
}

static void test_unreachable(void **state)
{
	struct store *st = (struct store *)1;

	(void)state;
	/* port 1 on loopback: nobody listens, the refusal is at once */
	assert_int_equal(
	    store_open("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2", STORE_CREATE, &st),
	    -ECONNREFUSED);
	assert_null(st);
}

static void test_unreachable_hosts(void **state)
{
	struct store *st = (struct store *)1;

	(void)state;
	/* every host of the list is tried, each refused at once: the open fails, not hangs */
	assert_int_equal(store_open("postgresql://nobody@127.0.0.1:1,127.0.0.1:2/none"
				    "?target_session_attrs=read-write&connect_timeout=2",
				    STORE_CREATE, &st),
			 -ECONNREFUSED);
	assert_null(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_translate),
	    cmocka_unit_test(test_translate_limits),
	    cmocka_unit_test(test_is_url),
	    cmocka_unit_test(test_array_literal),
	    cmocka_unit_test(test_binary_array),
	    cmocka_unit_test(test_greatest_least),
	    cmocka_unit_test(test_drop_before_file),
	    cmocka_unit_test(test_unreachable),
	    cmocka_unit_test(test_unreachable_hosts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
