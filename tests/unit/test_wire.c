/*
 * test_wire.c - the ingest protocol (net/wire.c) on exact bytes: a batch
 * with every kind of value encoded, decoded and encoded again; the hello;
 * the head's answer both ways; malformed batches refused with their
 * message; and the row set underneath (store/rowset.c).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/strbuf.h"
#include "net/wire.h"
#include "store/rowset.h"

#define TEXT_ESCAPES                                                                               \
	"q\"b\\s\n\t\x01 \xe2\x98\x83 \xc3\xa9" /* quote, backslash, controls, UTF-8               \
						 */

static const char batch_json[] =
    "{\"version\":1,\"agent_id\":\"a1\",\"node\":{\"hostname\":\"node-\xc3\xa9\",\"cores\":8,"
    "\"mem_total_bytes\":1024,\"boot_ms\":5},\"interval_ms\":1000,\"from_seq\":10,"
    "\"to_seq\":12,\"max_seq\":13,\"tables\":{\"events\":{\"columns\":[\"seq\",\"ts_ms\","
    "\"kind\",\"value\",\"note\"],\"rows\":[[11,1700000000000,\"start\",2.250000,null],"
    "[12,-3,\"q\\\"b\\\\s\\n\\t\\u0001 \xe2\x98\x83 \xc3\xa9\",-0.500000,9007199254740992]]},"
    "\"devices\":{\"columns\":[\"id\"],\"rows\":[[7]]}}}";

static void set_text(struct store_rowset *rs, struct store_value *v, const char *s)
{
	v->type = STORE_VALUE_TEXT;
	v->len = (uint32_t)strlen(s);
	v->s = store_rowset_keep(rs, s, v->len);
	assert_non_null(v->s);
}

/* The batch batch_json says, built as the agent's export would. */
static void make_batch(struct store_batch *b)
{
	static const char *const cols[] = {"seq", "ts_ms", "kind", "value", "note"};
	struct store_table *t;
	struct store_value *row;

	memset(b, 0, sizeof(*b));
	store_rowset_init(&b->rows, 0);
	snprintf(b->who.agent_id, sizeof(b->who.agent_id), "a1");
	snprintf(b->who.hostname, sizeof(b->who.hostname), "node-\xc3\xa9");
	b->who.cores = 8;
	b->who.mem_total_bytes = 1024;
	b->who.boot_ms = 5;
	b->who.interval_ms = 1000;
	b->from_seq = 10;
	b->to_seq = 12;
	b->max_seq = 13;
	assert_int_equal(store_rowset_add_table(&b->rows, "events", &t), 0);
	for (int c = 0; c < 5; c++)
		t->cols[c] = store_rowset_keep(&b->rows, cols[c], strlen(cols[c]));
	t->ncols = 5;
	assert_int_equal(store_rowset_add_row(&b->rows, t, &row), 0);
	row[0] = (struct store_value){.type = STORE_VALUE_INT, .i = 11};
	row[1] = (struct store_value){.type = STORE_VALUE_INT, .i = 1700000000000};
	set_text(&b->rows, &row[2], "start");
	row[3] = (struct store_value){.type = STORE_VALUE_REAL, .d = 2.25};
	/* row[4] stays null: a new row's cells are */
	assert_int_equal(store_rowset_add_row(&b->rows, t, &row), 0);
	row[0] = (struct store_value){.type = STORE_VALUE_INT, .i = 12};
	row[1] = (struct store_value){.type = STORE_VALUE_INT, .i = -3};
	set_text(&b->rows, &row[2], TEXT_ESCAPES);
	row[3] = (struct store_value){.type = STORE_VALUE_REAL, .d = -0.5};
	row[4] = (struct store_value){.type = STORE_VALUE_INT, .i = 9007199254740992};
	assert_int_equal(store_rowset_add_table(&b->rows, "devices", &t), 0);
	t->cols[0] = "id";
	t->ncols = 1;
	assert_int_equal(store_rowset_add_row(&b->rows, t, &row), 0);
	row[0] = (struct store_value){.type = STORE_VALUE_INT, .i = 7};
}

static void test_batch_round_trip(void **state)
{
	struct store_batch b;
	struct wire_batch wb;
	struct strbuf out, again;
	const struct store_table *t;
	const struct store_value *v;
	char msg[256];

	(void)state;
	strbuf_init(&out, WIRE_MAX_BODY);
	strbuf_init(&again, WIRE_MAX_BODY);
	make_batch(&b);
	assert_int_equal(wire_encode_batch(&b, &out), 0);
	assert_string_equal(strbuf_str(&out), batch_json);

	assert_int_equal(wire_decode_batch(out.buf, out.len, &wb, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "");
	assert_string_equal(wb.b.who.agent_id, "a1");
	assert_string_equal(wb.b.who.hostname, "node-\xc3\xa9");
	assert_int_equal(wb.b.who.cores, 8);
	assert_int_equal(wb.b.who.mem_total_bytes, 1024);
	assert_int_equal(wb.b.who.boot_ms, 5);
	assert_int_equal(wb.b.who.interval_ms, 1000);
	assert_int_equal(wb.b.from_seq, 10);
	assert_int_equal(wb.b.to_seq, 12);
	assert_int_equal(wb.b.max_seq, 13);
	assert_int_equal(wb.b.rows.ntables, 2);
	t = store_rowset_table(&wb.b.rows, "events");
	assert_ptr_equal(t, &wb.b.rows.tables[0]);
	assert_int_equal(t->ncols, 5);
	assert_int_equal(t->nrows, 2);
	assert_string_equal(t->cols[0], "seq");
	assert_string_equal(t->cols[4], "note");
	v = t->cells;
	assert_int_equal(v[0].type, STORE_VALUE_INT);
	assert_int_equal(v[0].i, 11);
	assert_int_equal(v[1].type, STORE_VALUE_INT);
	assert_int_equal(v[1].i, 1700000000000);
	assert_int_equal(v[2].type, STORE_VALUE_TEXT);
	assert_string_equal(v[2].s, "start");
	assert_int_equal(v[2].len, 5);
	assert_int_equal(v[3].type, STORE_VALUE_REAL);
	assert_true(v[3].d == 2.25);
	assert_int_equal(v[4].type, STORE_VALUE_NULL);
	v = &t->cells[5];
	assert_int_equal(v[0].i, 12);
	assert_int_equal(v[1].type, STORE_VALUE_INT);
	assert_int_equal(v[1].i, -3);
	assert_int_equal(v[2].type, STORE_VALUE_TEXT);
	assert_string_equal(v[2].s, TEXT_ESCAPES);
	assert_int_equal(v[2].len, strlen(TEXT_ESCAPES));
	assert_int_equal(v[3].type, STORE_VALUE_REAL);
	assert_true(v[3].d == -0.5);
	assert_int_equal(v[4].type, STORE_VALUE_INT);
	assert_int_equal(v[4].i, 9007199254740992);
	t = store_rowset_table(&wb.b.rows, "devices");
	assert_non_null(t);
	assert_int_equal(t->nrows, 1);
	assert_int_equal(t->cells[0].i, 7);
	assert_null(store_rowset_table(&wb.b.rows, "jobs"));

	/* what the head decoded says the same bytes again */
	assert_int_equal(wire_encode_batch(&wb.b, &again), 0);
	assert_string_equal(strbuf_str(&again), batch_json);
	wire_batch_release(&wb);
	assert_null(wb.text);
	assert_int_equal(wb.b.rows.ntables, 0);

	store_rowset_release(&b.rows);
	assert_int_equal(b.rows.ntables, 0);
	assert_null(b.rows.blocks);
	strbuf_release(&out);
	strbuf_release(&again);
}

static void test_hello(void **state)
{
	struct store_sender who = {"a1", "n1", 4, 2048, 9, 500};
	struct wire_batch wb;
	struct strbuf out;
	char msg[256];

	(void)state;
	strbuf_init(&out, 0);
	assert_int_equal(wire_encode_hello(&who, &out), 0);
	assert_string_equal(strbuf_str(&out),
			    "{\"version\":1,\"agent_id\":\"a1\",\"node\":{\"hostname\":\"n1\"},"
			    "\"interval_ms\":500,\"from_seq\":0,\"to_seq\":0}");
	assert_int_equal(wire_decode_batch(out.buf, out.len, &wb, msg, sizeof(msg)), 0);
	assert_string_equal(wb.b.who.agent_id, "a1");
	assert_string_equal(wb.b.who.hostname, "n1");
	assert_int_equal(wb.b.who.cores, 0);
	assert_int_equal(wb.b.who.interval_ms, 500);
	assert_int_equal(wb.b.to_seq, 0);
	assert_int_equal(wb.b.rows.ntables, 0);
	wire_batch_release(&wb);

	/* wire_batch_from copies the identity, not the range */
	{
		struct store_batch b = {.from_seq = 3, .to_seq = 4};

		wire_batch_from(&b, &who);
		assert_string_equal(b.who.agent_id, "a1");
		assert_string_equal(b.who.hostname, "n1");
		assert_int_equal(b.who.cores, 4);
		assert_int_equal(b.who.mem_total_bytes, 2048);
		assert_int_equal(b.who.boot_ms, 9);
		assert_int_equal(b.who.interval_ms, 500);
		assert_int_equal(b.from_seq, 3);
		assert_int_equal(b.to_seq, 4);
	}
	strbuf_release(&out);
}

static int answer_of(const char *body, struct wire_answer *a)
{
	return wire_decode_answer(body, strlen(body), a);
}

static void test_answer_round_trip(void **state)
{
	struct wire_answer a = {.acked_seq = 3200}, back;
	struct strbuf out;

	(void)state;
	strbuf_init(&out, 0);
	assert_int_equal(wire_encode_answer(&a, &out), 0);
	assert_string_equal(strbuf_str(&out), "{\"version\":1,\"acked_seq\":3200,\"interval_ms\":"
					      "null,\"cuda\":false,\"sessions\":[]}\n");
	assert_int_equal(wire_decode_answer(out.buf, out.len, &back), 0);
	assert_int_equal(back.acked_seq, 3200);
	assert_int_equal(back.interval_ms, 0);
	assert_string_equal(back.sessions, "");

	assert_false(back.cuda);

	a.acked_seq = 0;
	a.interval_ms = 100;
	a.cuda = true;
	snprintf(a.sessions, sizeof(a.sessions),
		 "train-1\x1f"
		 "warm\xc3\xa9");
	assert_int_equal(wire_encode_answer(&a, &out), 0);
	assert_string_equal(strbuf_str(&out), "{\"version\":1,\"acked_seq\":0,\"interval_ms\":100,"
					      "\"cuda\":true,"
					      "\"sessions\":[\"train-1\",\"warm\xc3\xa9\"]}\n");
	assert_int_equal(wire_decode_answer(out.buf, out.len, &back), 0);
	assert_int_equal(back.acked_seq, 0);
	assert_int_equal(back.interval_ms, 100);
	assert_true(back.cuda);
	assert_string_equal(back.sessions, "train-1\x1f"
					   "warm\xc3\xa9");

	/* what the agent refuses, and what it reads leniently */
	assert_int_equal(answer_of("", &back), -EINVAL);
	assert_int_equal(answer_of("{\"error\":\"x\"}", &back), -EINVAL);
	assert_int_equal(answer_of("{\"acked_seq\":-1}", &back), -EINVAL);
	assert_int_equal(answer_of("{\"acked_seq\":\"5\"}", &back), -EINVAL);
	/* numbers past int64 (fuzz_wire): refused, or an interval not taken */
	assert_int_equal(answer_of("{\"acked_seq\":1e30}", &back), -EINVAL);
	assert_int_equal(answer_of("{\"acked_seq\":5,\"interval_ms\":6.6e103}", &back), 0);
	assert_int_equal(back.interval_ms, 0);
	assert_int_equal(
	    answer_of("{\"acked_seq\":7,\"interval_ms\":-5,\"sessions\":[1,\"s\"]}", &back), 0);
	assert_int_equal(back.acked_seq, 7);
	assert_int_equal(back.interval_ms, 0);
	assert_string_equal(back.sessions, "s");
	assert_false(back.cuda); /* a head older than CUDA tables says nothing */
	/* only true is true */
	assert_int_equal(answer_of("{\"acked_seq\":7,\"cuda\":1}", &back), 0);
	assert_false(back.cuda);
	assert_int_equal(answer_of("{\"acked_seq\":7,\"cuda\":\"true\"}", &back), 0);
	assert_false(back.cuda);
	assert_int_equal(answer_of("{\"acked_seq\":7,\"cuda\":true}", &back), 0);
	assert_true(back.cuda);
	strbuf_release(&out);
}

static void refused(const char *body, const char *want)
{
	struct wire_batch wb;
	char msg[256];

	assert_int_equal(wire_decode_batch(body, strlen(body), &wb, msg, sizeof(msg)), -EINVAL);
	assert_string_equal(msg, want);
	wire_batch_release(&wb);
}

#define HEAD_OF_BATCH "{\"version\":1,\"agent_id\":\"a\",\"node\":{\"hostname\":\"n\"},"

static void test_batch_refused(void **state)
{
	(void)state;
	refused("{\"version\":1,", "not JSON");
	refused("[1]", "not a JSON object");
	refused("{\"version\":2}", "version must be 1");
	refused("{\"version\":1,\"agent_id\":\"\"}", "agent_id: a string of 1 to 63 bytes");
	refused("{\"version\":1,\"agent_id\":\"a\",\"node\":{}}", "node.hostname: a string");
	refused(HEAD_OF_BATCH "\"from_seq\":5,\"to_seq\":4}",
		"from_seq and to_seq: integers, 0 <= from_seq <= to_seq");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"tables\":[]}", "tables: an object");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"tables\":{\"Bad\":{}}}",
		"tables: a member that is not a table");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"tables\":{\"t\":{\"columns\":[],"
			      "\"rows\":[]}}}",
		"t: no columns");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"tables\":{\"t\":{\"columns\":[\"a\","
			      "\"a\"],\"rows\":[]}}}",
		"t: column a twice");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"tables\":{\"t\":{\"columns\":[\"a\"],"
			      "\"rows\":{}}}}",
		"t: columns and rows must be arrays");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"tables\":{\"t\":{\"columns\":[\"a\","
			      "\"b\"],\"rows\":[[1,2],[3]]}}}",
		"t: row 1 does not have 2 values");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"tables\":{\"t\":{\"columns\":[\"a\"],"
			      "\"rows\":[[true]]}}}",
		"t: row 0: a value that is not a number, a string or null");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"tables\":{\"t\":{\"columns\":[\"a\"],"
			      "\"rows\":[]},\"t\":{\"columns\":[\"a\"],\"rows\":[]}}}",
		"table t twice");
}

/* One table "t" of one column "a" holding the values text (a JSON list's items), decoded. */
static const struct store_table *decoded_values(struct wire_batch *wb, const char *values)
{
	char body[4096], msg[256];
	int ret;

	snprintf(body, sizeof(body),
		 HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"tables\":{\"t\":{\"columns\":[\"a\"],"
			       "\"rows\":[%s]}}}",
		 values);
	ret = wire_decode_batch(body, strlen(body), wb, msg, sizeof(msg));
	if (ret)
		fail_msg("%s: %s", values, msg);
	return store_rowset_table(&wb->b.rows, "t");
}

static void test_batch_numbers(void **state)
{
	struct wire_batch wb;
	const struct store_table *t;

	(void)state;
	/* integers exactly, up to int64's range; past it a real */
	t = decoded_values(&wb,
			   "[0],[-0],[9007199254740993],[9223372036854775807],"
			   "[-9223372036854775808],[9223372036854775808],[-9223372036854775809],"
			   "[123456789012345678901234567890]");
	assert_int_equal(t->nrows, 8);
	assert_int_equal(t->cells[0].type, STORE_VALUE_INT);
	assert_int_equal(t->cells[0].i, 0);
	assert_int_equal(t->cells[1].i, 0);
	assert_true(t->cells[2].i == 9007199254740993LL);
	assert_true(t->cells[3].i == INT64_MAX);
	assert_true(t->cells[4].type == STORE_VALUE_INT && t->cells[4].i == INT64_MIN);
	assert_true(t->cells[5].type == STORE_VALUE_REAL && t->cells[5].d == 9223372036854775808.0);
	assert_true(t->cells[6].type == STORE_VALUE_REAL &&
		    t->cells[6].d == -9223372036854775808.0);
	assert_true(t->cells[7].type == STORE_VALUE_REAL && t->cells[7].d == 1.2345678901234568e29);
	wire_batch_release(&wb);

	/* reals: an integral value within +-2^53 is an integer, as it was; the rest as strtod */
	t = decoded_values(&wb, "[2.5],[1e2],[-0.0],[1.5e-7],[0.1],[-12345.678901],[1E+3],"
				"[12345678901234567890.5],[4.9e-324],[1.7976931348623157e308],"
				"[9007199254740993.0],[0.30000000000000004]");
	assert_true(t->cells[0].type == STORE_VALUE_REAL && t->cells[0].d == 2.5);
	assert_true(t->cells[1].type == STORE_VALUE_INT && t->cells[1].i == 100);
	assert_true(t->cells[2].type == STORE_VALUE_INT && t->cells[2].i == 0);
	assert_true(t->cells[3].d == 1.5e-7);
	assert_true(t->cells[4].d == 0.1);
	assert_true(t->cells[5].d == -12345.678901);
	assert_true(t->cells[6].type == STORE_VALUE_INT && t->cells[6].i == 1000);
	assert_true(t->cells[7].type == STORE_VALUE_REAL &&
		    t->cells[7].d == 12345678901234567890.5);
	assert_true(t->cells[8].d == 4.9e-324);
	assert_true(t->cells[9].d == 1.7976931348623157e308);
	/* read as the double 2^53: an integer, as it was */
	assert_true(t->cells[10].type == STORE_VALUE_INT && t->cells[10].i == 9007199254740992LL);
	assert_true(t->cells[11].d == 0.30000000000000004);
	wire_batch_release(&wb);

	/* every spelling an encoder makes, read as strtod reads it */
	for (int i = 0; i < 20000; i++) {
		double x =
		    ldexp((double)rand() / RAND_MAX, rand() % 200 - 100) * (rand() % 2 ? 1 : -1);
		char num[64];

		switch (i % 5) {
		case 0:
			snprintf(num, sizeof(num), "%.6f", x);
			break;
		case 1:
			snprintf(num, sizeof(num), "%.17g", x);
			break;
		case 2:
			snprintf(num, sizeof(num), "%.3e", x);
			break;
		case 3:
			snprintf(num, sizeof(num), "%.0f", x);
			break;
		default:
			snprintf(num, sizeof(num), "%g", x);
			break;
		}
		{
			char values[80];
			double want = strtod(num, NULL);

			snprintf(values, sizeof(values), "[%s]", num);
			t = decoded_values(&wb, values);
			if (t->cells[0].type == STORE_VALUE_INT
				? (double)t->cells[0].i != want
				: t->cells[0].type != STORE_VALUE_REAL || t->cells[0].d != want)
				fail_msg("%s: decoded %.17g, strtod %.17g", num,
					 t->cells[0].type == STORE_VALUE_INT ? (double)t->cells[0].i
									     : t->cells[0].d,
					 want);
			wire_batch_release(&wb);
		}
	}
}

static void test_batch_strings_and_layout(void **state)
{
	struct wire_batch wb;
	const struct store_table *t;
	char msg[256];
	static const char rows_first[] = HEAD_OF_BATCH
	    "\"from_seq\":0,\"to_seq\":1,\"tables\":{\"t\":{\"rows\":[[\"a\\\"b\\\\c\","
	    "\"\\u00e9\\ud83d\\ude00\\n\\/\"],[null,\"x\\u0000y\"]],\"columns\":[\"p\",\"q\"]}},"
	    "\"extra\":{\"deep\":[1,{\"k\":[true,false,null,\"\\\\u0041\"]}]}}\n ";

	(void)state;
	/* rows before columns, escapes of each kind, a \u0000 ending a string, members unknown */
	assert_int_equal(wire_decode_batch(rows_first, strlen(rows_first), &wb, msg, sizeof(msg)),
			 0);
	t = store_rowset_table(&wb.b.rows, "t");
	assert_non_null(t);
	assert_int_equal(t->nrows, 2);
	assert_string_equal(t->cols[1], "q");
	assert_string_equal(t->cells[0].s, "a\"b\\c");
	assert_int_equal(t->cells[0].len, 5);
	assert_string_equal(t->cells[1].s, "\xc3\xa9\xf0\x9f\x98\x80\n/");
	assert_int_equal(t->cells[2].type, STORE_VALUE_NULL);
	assert_string_equal(t->cells[3].s, "x");
	assert_int_equal(t->cells[3].len, 1);
	wire_batch_release(&wb);

	/* a field given twice: its first (as cJSON's lookup found it) */
	{
		static const char twice[] =
		    "{\"version\":1,\"version\":2,\"agent_id\":\"a\",\"agent_id\":7,\"node\":{"
		    "\"hostname\":\"n\",\"hostname\":\"m\"},\"from_seq\":0,\"to_seq\":1,\"tables\":"
		    "{},"
		    "\"tables\":[]}";

		assert_int_equal(wire_decode_batch(twice, strlen(twice), &wb, msg, sizeof(msg)), 0);
		assert_string_equal(wb.b.who.agent_id, "a");
		assert_string_equal(wb.b.who.hostname, "n");
		wire_batch_release(&wb);
	}

	/* not JSON: bad escapes, lone surrogates, numbers JSON does not have, trailing bytes */
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"x\":\"\\q\"}", "not JSON");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"x\":\"\\ud83d\"}", "not JSON");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"x\":\"\\ude00\"}", "not JSON");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"x\":\"\\u12\"}", "not JSON");
	refused(HEAD_OF_BATCH "\"from_seq\":01,\"to_seq\":1}", "not JSON");
	refused(HEAD_OF_BATCH "\"from_seq\":+1,\"to_seq\":1}", "not JSON");
	refused(HEAD_OF_BATCH "\"from_seq\":1.,\"to_seq\":1}", "not JSON");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1e}", "not JSON");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1} x", "not JSON");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,}", "not JSON");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1", "not JSON");
	refused("\"just a string\"", "not a JSON object");
	refused("", "not JSON");
	/* a number too large to be finite: no integer, and no cell */
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1e999}",
		"from_seq and to_seq: integers, 0 <= from_seq <= to_seq");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"tables\":{\"t\":{\"columns\":[\"a\"],"
			      "\"rows\":[[1e999]]}}}",
		"t: row 0: a value that is not a number, a string or null");
	/* nesting past 512 levels in what is skipped */
	{
		char deep[2048];
		size_t n = (size_t)snprintf(deep, sizeof(deep), HEAD_OF_BATCH "\"x\":");

		for (int i = 0; i < 600; i++)
			deep[n++] = '[';
		for (int i = 0; i < 600; i++)
			deep[n++] = ']';
		deep[n++] = '}';
		deep[n] = '\0';
		refused(deep, "not JSON");
	}
	/* the first of two refusals, in the old order: the arrays before the columns */
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"tables\":{\"t\":{\"columns\":[\"a\","
			      "\"a\"],\"rows\":{}}}}",
		"t: columns and rows must be arrays");
	refused(HEAD_OF_BATCH "\"from_seq\":0,\"to_seq\":1,\"tables\":{\"t\":{\"columns\":[\"a\"],"
			      "\"rows\":[[1,2]]},\"u\":{\"columns\":[\"B\"],\"rows\":[]}}}",
		"t: row 0 does not have 1 values");
	refused("{\"version\":2,\"tables\":{\"t\":{}}}", "version must be 1");
}

static void test_rowset_cap_and_copies(void **state)
{
	struct store_rowset rs;
	struct store_table *t;
	struct store_value *row;
	const char *a, *b;
	int ret = 0;

	(void)state;
	/* a cap: rows until the cells would pass it, then -E2BIG and nothing lost */
	store_rowset_init(&rs, 64 * 2 * sizeof(struct store_value) + 10);
	assert_int_equal(store_rowset_add_table(&rs, "t", &t), 0);
	t->cols[0] = "a";
	t->cols[1] = "b";
	t->ncols = 2;
	for (int i = 0; i < 64; i++) {
		assert_int_equal(store_rowset_add_row(&rs, t, &row), 0);
		row[0] = (struct store_value){.type = STORE_VALUE_INT, .i = i};
	}
	ret = store_rowset_add_row(&rs, t, &row);
	assert_int_equal(ret, -E2BIG);
	assert_int_equal(t->nrows, 64);
	assert_int_equal(t->cells[63 * 2].i, 63);
	assert_int_equal(t->cells[63 * 2 + 1].type, STORE_VALUE_NULL);
	assert_null(store_rowset_keep(&rs, "x", 1)); /* no room for a block either */
	store_rowset_release(&rs);
	assert_int_equal(rs.bytes, 0);

	/* copies are NUL-terminated and do not move while more come */
	store_rowset_init(&rs, 0);
	a = store_rowset_keep(&rs, "abcdef", 3);
	for (int i = 0; i < 2000; i++)
		assert_non_null(store_rowset_keep(&rs, "0123456789abcdef0123456789abcdef", 32));
	b = store_rowset_keep(&rs, "xyz", 3);
	assert_string_equal(a, "abc");
	assert_string_equal(b, "xyz");
	for (int i = 0; i < STORE_ROWSET_MAX_TABLES; i++)
		assert_int_equal(store_rowset_add_table(&rs, "t", &t), 0);
	assert_int_equal(store_rowset_add_table(&rs, "t", &t), -E2BIG);
	store_rowset_release(&rs);
	assert_int_equal(store_rowset_add_table(&rs, "a_name_of_thirty_two_bytes_long_", &t),
			 -EINVAL);
	store_rowset_release(&rs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_batch_round_trip),	     cmocka_unit_test(test_hello),
	    cmocka_unit_test(test_answer_round_trip),	     cmocka_unit_test(test_batch_refused),
	    cmocka_unit_test(test_rowset_cap_and_copies),    cmocka_unit_test(test_batch_numbers),
	    cmocka_unit_test(test_batch_strings_and_layout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
