/*
 * test_ingest_group.c - the head's group commit (store_ingest_group): the
 * batches of a group commit together; a batch that does not fit is refused
 * alone and leaves nothing behind (not a row, not a seq); a batch sent
 * twice in one group adds its rows once; each agent's cursor is exact.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"

#include "net/wire.h"
#include "store/store.h"
#include "store/reader.h"
#include "store/sync.h"

/* A batch of agent `agent`: host rows seq from..to, one per ms at ts 1000 + seq. */
static void batch(struct wire_batch *wb, const char *agent, int from, int to, bool bad)
{
	char json[8192], msg[256];
	size_t n;

	n = (size_t)snprintf(json, sizeof(json),
			     "{\"version\":1,\"agent_id\":\"%s\",\"node\":{\"hostname\":\"host-%s\","
			     "\"cores\":4,\"mem_total_bytes\":1024,\"boot_ms\":5},"
			     "\"interval_ms\":1000,\"from_seq\":%d,\"to_seq\":%d,\"max_seq\":%d,"
			     "\"tables\":{\"host_samples\":{\"columns\":[\"seq\",\"node_id\","
			     "\"ts_ms\",\"%s\"],\"rows\":[",
			     agent, agent, from, to, to, bad ? "no_such_column" : "cpu_user_ms");
	for (int s = from; s <= to; s++)
		n += (size_t)snprintf(json + n, sizeof(json) - n, "%s[%d,1,%d,%d]",
				      s > from ? "," : "", s, 1000 + s, s * 10);
	n += (size_t)snprintf(json + n, sizeof(json) - n, "]}}}");
	assert_int_equal(wire_decode_batch(json, n, wb, msg, sizeof(msg)), 0);
}

static int first_num(const struct store_row *r, void *arg)
{
	*(int64_t *)arg = r->null[0] ? -1 : (int64_t)r->num[0];
	return 1;
}

static int64_t count(struct store *st, const char *sql)
{
	int64_t v = -2;

	assert_int_equal(store_query_rows(st, sql, NULL, first_num, &v), 1);
	return v;
}

static void test_group(void **state)
{
	char path[] = "/tmp/js-group-XXXXXX";
	char db[64];
	struct store *st;
	struct wire_batch wb[5];
	struct store_ingest_item it[5];
	int fd = mkdtemp(path) ? 0 : -1;

	(void)state;
	assert_int_equal(fd, 0);
	snprintf(db, sizeof(db), "%s/head.db", path);
	assert_int_equal(store_open(db, STORE_CREATE, &st), 0);
	batch(&wb[0], "a", 1, 3, false);
	batch(&wb[1], "b", 1, 2, false);
	batch(&wb[2], "c", 1, 4, true); /* a column the head does not have */
	batch(&wb[3], "a", 1, 3, false); /* a resend of wb[0], in the same group */
	batch(&wb[4], "a", 4, 5, false);
	for (int i = 0; i < 5; i++)
		it[i] = (struct store_ingest_item){.b = &wb[i].b};
	assert_int_equal(store_ingest_group(st, it, 5, 123456), 0);
	assert_int_equal(it[0].ret, 0);
	assert_int_equal(it[0].acked_seq, 3);
	assert_int_equal(it[1].ret, 0);
	assert_int_equal(it[1].acked_seq, 2);
	assert_int_equal(it[2].ret, -EINVAL);
	assert_non_null(strstr(it[2].errmsg, "no_such_column"));
	assert_int_equal(it[3].ret, 0);
	assert_int_equal(it[3].acked_seq, 3);
	assert_int_equal(it[4].ret, 0);
	assert_int_equal(it[4].acked_seq, 5);
	/* a's 5 rows once, b's 2; c left nothing, not even its node or agent row */
	assert_int_equal(count(st, "SELECT count(*) FROM host_samples"), 7);
	assert_int_equal(count(st, "SELECT count(*) FROM agents"), 2);
	assert_int_equal(count(st, "SELECT count(*) FROM nodes WHERE hostname = 'host-c'"), 0);
	assert_int_equal(count(st, "SELECT sum(cpu_user_ms) FROM host_samples"),
			 10 + 20 + 30 + 40 + 50 + 10 + 20);
	/* the head's seq has no hole where c was rolled back */
	assert_int_equal(count(st, "SELECT max(seq) - min(seq) + 1 FROM host_samples"), 7);
	assert_int_equal(count(st, "SELECT batches FROM agents WHERE agent_id = 'a'"), 3);

	/* and c alone again, fixed: it goes in after the group */
	wire_batch_release(&wb[2]);
	batch(&wb[2], "c", 1, 4, false);
	it[0] = (struct store_ingest_item){.b = &wb[2].b};
	assert_int_equal(store_ingest_group(st, it, 1, 123457), 0);
	assert_int_equal(it[0].ret, 0);
	assert_int_equal(it[0].acked_seq, 4);
	assert_int_equal(count(st, "SELECT count(*) FROM host_samples"), 11);
	assert_int_equal(count(st, "SELECT max(seq) - min(seq) + 1 FROM host_samples"), 11);
	for (int i = 0; i < 5; i++)
		wire_batch_release(&wb[i]);
	store_close(st);
	assert_int_equal(fixture_rm_tree(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_group),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
