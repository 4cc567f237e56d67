/*
 * test_intern.c - counted strings (common/intern.h): one copy per text,
 * kept while held, freed with its last holder; "" never counted; the
 * table grown and its deleted slots reused under churn, its size following
 * what is held.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/intern.h"

static void test_one_copy(void **state)
{
	struct intern t;
	char buf[32];
	const char *a, *b, *c;

	(void)state;
	intern_init(&t);
	snprintf(buf, sizeof(buf), "python3 train.py");
	a = intern_get(&t, buf);
	buf[0] = 'P'; /* the copy is the table's, not the caller's buffer */
	b = intern_get(&t, "python3 train.py");
	assert_ptr_equal(a, b);
	assert_string_equal(a, "python3 train.py");
	c = intern_get(&t, "sleep 60");
	assert_ptr_not_equal(a, c);
	assert_int_equal(intern_count(&t), 2);
	assert_string_equal(intern_get(&t, ""), "");
	intern_put(&t, "");
	assert_int_equal(intern_count(&t), 2);
	intern_put(&t, a);
	assert_int_equal(intern_count(&t), 2); /* b still holds it */
	intern_put(&t, b);
	assert_int_equal(intern_count(&t), 1);
	a = intern_get(&t, "python3 train.py"); /* a fresh copy, in a reused slot */
	assert_string_equal(a, "python3 train.py");
	assert_int_equal(intern_count(&t), 2);
	intern_put(&t, a);
	intern_put(&t, c);
	assert_int_equal(intern_count(&t), 0);
	intern_release(&t);
}

static void test_churn(void **state)
{
	static const char *held[3000];
	struct intern t;
	char buf[64];

	(void)state;
	intern_init(&t);
	/* a thousand processes of three command lines, then a thousand distinct ones, twice */
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 1000; i++) {
			snprintf(buf, sizeof(buf), "worker --rank %d", i % 3);
			held[i] = intern_get(&t, buf);
		}
		assert_int_equal(intern_count(&t), 3);
		for (int i = 1000; i < 3000; i++) {
			snprintf(buf, sizeof(buf), "job %d of round %d", i, round);
			held[i] = intern_get(&t, buf);
		}
		assert_int_equal(intern_count(&t), 2003);
		for (int i = 0; i < 3000; i++) {
			snprintf(buf, sizeof(buf),
				 i < 1000 ? "worker --rank %d" : "job %d of round %d",
				 i < 1000 ? i % 3 : i, round);
			assert_string_equal(held[i], buf);
		}
		for (int i = 0; i < 3000; i++)
			intern_put(&t, held[i]);
		assert_int_equal(intern_count(&t), 0);
	}
	held[0] = intern_get(&t, "left held at release");
	intern_release(&t); /* frees what is still held */
}

/* Distinct command lines that each come and go: the table stays the size of what is held. */
static void test_table_follows_what_is_held(void **state)
{
	const char *held[10] = {0};
	struct intern t;
	char buf[64];

	(void)state;
	intern_init(&t);
	for (int i = 0; i < 100000; i++) {
		snprintf(buf, sizeof(buf), "sleep 0.%d", i);
		intern_put(&t, held[i % 10]);
		held[i % 10] = intern_get(&t, buf);
		assert_string_equal(held[i % 10], buf);
	}
	assert_int_equal(intern_count(&t), 10);
	assert_int_equal(t.nslots, 64);
	intern_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_one_copy),
	    cmocka_unit_test(test_churn),
	    cmocka_unit_test(test_table_follows_what_is_held),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
