/*
 * test_sender_heads.c - the agent's choice of a head among several
 * (net/sender.h): the ring that moves to the next head after a failure
 * and says when every head failed (back off), the moves counted when
 * another head answers, a URL's host and port, and a name's addresses
 * made heads of their own.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "net/sender.h"

static void test_ring_one_head(void **state)
{
	struct sender_ring r;

	(void)state;
	sender_ring_init(&r, 1);
	/* one head: every failure backs off, and it stays the one */
	for (int i = 0; i < 3; i++) {
		assert_false(sender_ring_failed(&r));
		assert_int_equal(r.cur, 0);
	}
	assert_false(sender_ring_answered(&r));
	assert_false(sender_ring_answered(&r));
	assert_int_equal(r.moves, 0);
	/* no heads is one: never an index out of the ring */
	sender_ring_init(&r, 0);
	assert_int_equal(r.n, 1);
	assert_false(sender_ring_failed(&r));
	assert_int_equal(r.cur, 0);
}

static void test_ring_round_robin(void **state)
{
	struct sender_ring r;

	(void)state;
	sender_ring_init(&r, 3);
	assert_int_equal(r.cur, 0);
	assert_int_equal(r.answered, -1);
	/* the first answer is no move */
	assert_false(sender_ring_answered(&r));
	assert_int_equal(r.moves, 0);
	/* 0 fails: 1 at once; 1 fails: 2 at once; 2 fails: every head did, back off */
	assert_true(sender_ring_failed(&r));
	assert_int_equal(r.cur, 1);
	assert_true(sender_ring_failed(&r));
	assert_int_equal(r.cur, 2);
	assert_false(sender_ring_failed(&r));
	assert_int_equal(r.cur, 0);
	/* a new round after the back-off: each once more before the next */
	assert_true(sender_ring_failed(&r));
	assert_int_equal(r.cur, 1);
	assert_true(sender_ring_failed(&r));
	assert_int_equal(r.cur, 2);
	/* 2 answers: a move from 0; it holds a batch: the failures in a row start again */
	assert_true(sender_ring_answered(&r));
	assert_int_equal(r.moves, 1);
	assert_int_equal(r.answered, 2);
	assert_int_equal(r.failed, 2);
	sender_ring_held(&r);
	assert_int_equal(r.failed, 0);
	/* 2 fails, 0 answers: the second move; 0 answers again: none */
	assert_true(sender_ring_failed(&r));
	assert_int_equal(r.cur, 0);
	assert_true(sender_ring_answered(&r));
	assert_false(sender_ring_answered(&r));
	assert_int_equal(r.moves, 2);
	sender_ring_held(&r);
	/* 0 fails, 1 fails, 2 fails (back off), 0 answers: the one that answered last, no move */
	assert_true(sender_ring_failed(&r));
	assert_true(sender_ring_failed(&r));
	assert_false(sender_ring_failed(&r));
	assert_int_equal(r.cur, 0);
	assert_false(sender_ring_answered(&r));
	assert_int_equal(r.moves, 2);
}

static void test_ring_hello_is_not_enough(void **state)
{
	struct sender_ring r;

	(void)state;
	/* two heads that answer the hello and fail each batch (a full disk): a round,
	 * then a back-off, not a loop between them without one */
	sender_ring_init(&r, 2);
	assert_false(sender_ring_answered(&r));
	assert_true(sender_ring_failed(&r));
	assert_int_equal(r.cur, 1);
	assert_true(sender_ring_answered(&r));
	assert_false(sender_ring_failed(&r));
	assert_int_equal(r.cur, 0);
	assert_true(sender_ring_answered(&r));
	assert_true(sender_ring_failed(&r));
	assert_true(sender_ring_answered(&r));
	assert_false(sender_ring_failed(&r));
	assert_int_equal(r.moves, 3);
}

static void test_url_host(void **state)
{
	char host[64];
	int port;

	(void)state;
	assert_int_equal(sender_url_host("http://head:8091", host, sizeof(host), &port), 0);
	assert_string_equal(host, "head");
	assert_int_equal(port, 8091);
	assert_int_equal(sender_url_host("https://head.example/", host, sizeof(host), &port), 0);
	assert_string_equal(host, "head.example");
	assert_int_equal(port, 443);
	assert_int_equal(sender_url_host("http://10.0.0.1", host, sizeof(host), &port), 0);
	assert_string_equal(host, "10.0.0.1");
	assert_int_equal(port, 80);
	assert_int_equal(sender_url_host("http://[::1]:9000/x?y", host, sizeof(host), &port), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 9000);
	assert_int_equal(sender_url_host("http://[fe80::1]", host, sizeof(host), &port), 0);
	assert_string_equal(host, "fe80::1");
	assert_int_equal(port, 80);
	assert_int_equal(sender_url_host("http://u:p@h:1/", host, sizeof(host), &port), 0);
	assert_string_equal(host, "h");
	assert_int_equal(port, 1);
	/* refused: no host, no port after the colon, a port out of range or not a number,
	 * an open bracket, a host longer than the buffer, no scheme */
	assert_int_equal(sender_url_host("http://", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(sender_url_host("http://:80", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(sender_url_host("http://h:", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(sender_url_host("http://h:0", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(sender_url_host("http://h:65536", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(
	    sender_url_host("http://h:99999999999999999999", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(sender_url_host("http://h:8x", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(sender_url_host("http://[::1:80", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(sender_url_host("http://[]:80", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(sender_url_host("head:8091", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(sender_url_host("http://abcdefgh", host, 8, &port), -EINVAL);
	assert_int_equal(sender_url_host("http://abcdefg", host, 8, &port), 0);
}

static void test_heads_of_a_name(void **state)
{
	const char *two[] = {"::1", "127.0.0.1", "::1"};
	const char *one[] = {"10.0.0.1", "10.0.0.1"};
	struct sender_head heads[4];
	int n = 0;

	(void)state;
	/* several addresses: a head each, in the resolver's order, the same one once */
	assert_int_equal(sender_heads_of("http://localhost:8091", two, 3, heads, &n, 4), 0);
	assert_int_equal(n, 2);
	assert_string_equal(heads[0].url, "http://localhost:8091");
	assert_string_equal(heads[0].address, "::1");
	assert_string_equal(heads[1].url, "http://localhost:8091");
	assert_string_equal(heads[1].address, "127.0.0.1");
	/* one address (twice), or none known: the URL alone, curl resolves it */
	assert_int_equal(sender_heads_of("http://h2:8091", one, 2, heads, &n, 4), 0);
	assert_int_equal(n, 3);
	assert_string_equal(heads[2].url, "http://h2:8091");
	assert_string_equal(heads[2].address, "");
	assert_int_equal(sender_heads_of("http://h3:8091", NULL, 0, heads, &n, 4), 0);
	assert_int_equal(n, 4);
	assert_string_equal(heads[3].address, "");
	/* full: nothing more, nothing overwritten */
	assert_int_equal(sender_heads_of("http://localhost:1", two, 3, heads, &n, 4), 0);
	assert_int_equal(n, 4);
	assert_string_equal(heads[3].url, "http://h3:8091");
	/* a URL without a host */
	assert_int_equal(sender_heads_of("http://:1", two, 2, heads, &n, 4), -EINVAL);
	assert_int_equal(n, 4);
	/* room for one of two addresses: the first */
	n = 0;
	assert_int_equal(sender_heads_of("http://localhost:8091", two, 2, heads, &n, 1), 0);
	assert_int_equal(n, 1);
	assert_string_equal(heads[0].address, "::1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ring_one_head),
	    cmocka_unit_test(test_ring_round_robin),
	    cmocka_unit_test(test_ring_hello_is_not_enough),
	    cmocka_unit_test(test_url_host),
	    cmocka_unit_test(test_heads_of_a_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
