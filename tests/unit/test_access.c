/*
 * test_access.c - http/access.h: trusted proxies and admins parsed, which
 * listen addresses are loopback, when a server is open, and the whole
 * table of who may use a route of each access (docs/http-api.md, Access).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "http/access.h"

static void test_proxies(void **state)
{
	struct access_policy p = {0};

	(void)state;
	assert_int_equal(access_add_proxy(&p, "10.1.2.3"), 0);
	assert_int_equal(p.proxy[0].bits, 32);
	assert_int_equal(access_add_proxy(&p, "10.0.0.0/8"), 0);
	assert_int_equal(p.proxy[1].bits, 8);
	assert_int_equal(access_add_proxy(&p, "fd00::/64"), 0);
	assert_int_equal(p.proxy[2].bits, 64);
	assert_int_equal(p.nproxies, 3);
	assert_int_not_equal(access_add_proxy(&p, "10.0.0.0/33"), 0);
	assert_int_not_equal(access_add_proxy(&p, "fd00::/129"), 0);
	assert_int_not_equal(access_add_proxy(&p, "proxy.example"), 0);
	assert_int_not_equal(access_add_proxy(&p, "10.0.0.0/"), 0);
	assert_int_not_equal(access_add_proxy(&p, "/8"), 0);
	assert_int_not_equal(access_add_proxy(&p, "10.0.0.0/8x"), 0);
	assert_int_equal(p.nproxies, 3);
}

static void test_admins(void **state)
{
	struct access_policy p = {0};

	(void)state;
	assert_int_equal(access_add_admins(&p, "alice,bob,@root"), 0);
	assert_int_equal(p.nadmin_users, 2);
	assert_string_equal(p.admin_user[1], "bob");
	assert_int_equal(p.nadmin_groups, 1);
	assert_int_equal(p.admin_gid[0], 0);
	assert_int_not_equal(access_add_admins(&p, "@no-such-group-here"), 0);
	assert_int_not_equal(access_add_admins(&p, "a,,b"), 0);
	assert_int_not_equal(access_add_admins(&p, "with space"), 0);
}

static void test_loopback(void **state)
{
	(void)state;
	assert_true(access_listen_is_loopback("127.0.0.1:8091"));
	assert_true(access_listen_is_loopback("127.3.4.5:0"));
	assert_true(access_listen_is_loopback("[::1]:8091"));
	assert_false(access_listen_is_loopback("0.0.0.0:8091"));
	assert_false(access_listen_is_loopback(":8091"));
	assert_false(access_listen_is_loopback("10.0.0.1:8091"));
	assert_false(access_listen_is_loopback("[::]:8091"));
	assert_false(access_listen_is_loopback("nowhere"));
	assert_false(access_listen_is_loopback(NULL));
}

static void test_open(void **state)
{
	struct access_policy p = {0};

	(void)state;
	access_settle(&p, "127.0.0.1:1");
	assert_true(p.open);
	p.has_token = true; /* the agents' token guards ingest, not reads */
	access_settle(&p, "127.0.0.1:1");
	assert_true(p.open);
	access_settle(&p, "0.0.0.0:1");
	assert_false(p.open);
	p.has_read_token = true;
	access_settle(&p, "127.0.0.1:1");
	assert_false(p.open);
	memset(&p, 0, sizeof(p));
	p.munge = true;
	access_settle(&p, "127.0.0.1:1");
	assert_false(p.open);
	p.insecure = true;
	access_settle(&p, "0.0.0.0:1");
	assert_true(p.open);
}

static struct caller who(enum caller_role r, const char *user)
{
	struct caller c = {r, "token", "", -1};

	strcpy(c.user, user);
	return c;
}

static int permits(const struct access_policy *p, const struct caller *c, enum http_access a)
{
	struct http_response res = {200, NULL, {0}, {{0}}};
	bool ok;

	strbuf_init(&res.body, 4096);
	ok = access_permits(p, c, a, &res);
	strbuf_release(&res.body);
	return ok ? 200 : res.status;
}

/* A closed head with every token, MUNGE and an admin: each caller against each access. */
static void test_table_closed(void **state)
{
	struct access_policy p = {0};
	static const enum http_access acc[] = {HTTP_ACCESS_PUBLIC, HTTP_ACCESS_USER,
					       HTTP_ACCESS_READER, HTTP_ACCESS_INGEST,
					       HTTP_ACCESS_ADMIN,  HTTP_ACCESS_OWNER};
	static const struct {
		enum caller_role role;
		const char *user;
		int want[6]; /* public, user, reader, ingest, admin, owner */
		bool all;
	} rows[] = {
	    {CALLER_ANONYMOUS, "", {200, 401, 401, 401, 401, 401}, false},
	    {CALLER_USER, "nobody", {200, 200, 403, 403, 403, 200}, false},
	    {CALLER_READER, "", {200, 200, 200, 403, 403, 403}, true},
	    {CALLER_AGENT, "", {200, 403, 403, 200, 403, 403}, false},
	    {CALLER_ADMIN, "root", {200, 200, 200, 403, 200, 200}, true},
	};

	(void)state;
	p.has_token = p.has_admin_token = p.has_read_token = p.munge = true;
	access_settle(&p, "0.0.0.0:8091");
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct caller c = who(rows[r].role, rows[r].user);

		for (size_t a = 0; a < 6; a++) {
			int got = permits(&p, &c, acc[a]);

			if (got != rows[r].want[a])
				fail_msg("%s on a %s route: %d, not %d",
					 caller_role_name(rows[r].role), http_access_name(acc[a]),
					 got, rows[r].want[a]);
		}
		assert_int_equal(access_sees_all(&p, &c), rows[r].all);
	}
}

/* Loopback, no token: anyone reads and starts sessions, as a single-machine try-out. */
static void test_table_open(void **state)
{
	struct access_policy p = {0};
	struct caller anon = who(CALLER_ANONYMOUS, "");

	(void)state;
	access_settle(&p, "127.0.0.1:8091");
	assert_int_equal(permits(&p, &anon, HTTP_ACCESS_USER), 200);
	assert_int_equal(permits(&p, &anon, HTTP_ACCESS_READER), 200);
	assert_int_equal(permits(&p, &anon, HTTP_ACCESS_INGEST), 200);
	assert_int_equal(permits(&p, &anon, HTTP_ACCESS_ADMIN), 200);
	assert_true(access_sees_all(&p, &anon));
	/* the agents' token without an admin one is the admin's (as before) */
	p.has_token = true;
	access_settle(&p, "127.0.0.1:8091");
	assert_int_equal(permits(&p, &anon, HTTP_ACCESS_USER), 200);
	assert_int_equal(permits(&p, &anon, HTTP_ACCESS_INGEST), 401);
	assert_int_equal(permits(&p, &anon, HTTP_ACCESS_ADMIN), 401);
	{
		struct caller agent = who(CALLER_AGENT, "");

		assert_int_equal(permits(&p, &agent, HTTP_ACCESS_ADMIN), 200);
		assert_true(access_sees_all(&p, &agent));
	}
	/* a proxy on loopback closes it: its users see their own */
	p.nproxies = 1;
	access_settle(&p, "127.0.0.1:8091");
	assert_int_equal(permits(&p, &anon, HTTP_ACCESS_USER), 401);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_proxies),	 cmocka_unit_test(test_admins),
	    cmocka_unit_test(test_loopback),	 cmocka_unit_test(test_open),
	    cmocka_unit_test(test_table_closed), cmocka_unit_test(test_table_open),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
