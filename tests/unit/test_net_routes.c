/* test_net_routes.c - route tables (http/http.h): path and prefix matching, 404 against 405, HEAD
 * as GET. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "http/http.h"

static void handler_a(void *arg, const struct http_request *req, struct http_response *res)
{
	(void)arg, (void)req, (void)res;
}

static void handler_b(void *arg, const struct http_request *req, struct http_response *res)
{
	(void)arg, (void)req, (void)res;
}

static const struct http_route table[] = {
    {"GET", "/api/v1/jobs", false, HTTP_ACCESS_USER, handler_a},
    {"GET", "/api/v1/jobs/", true, HTTP_ACCESS_USER, handler_b},
    {"POST", "/api/v1/ingest", false, HTTP_ACCESS_INGEST, handler_a},
    {"POST", "/profiling/start", false, HTTP_ACCESS_ADMIN, handler_b},
    {NULL, NULL, false, HTTP_ACCESS_PUBLIC, NULL},
};

static const struct http_route *find(const char *method, const char *path, int *status)
{
	struct http_request req = {.method = method, .path = path};

	*status = 0;
	return http_route_find(table, &req, status);
}

static void test_exact_and_prefix(void **state)
{
	const struct http_route *r;
	int status;

	(void)state;
	r = find("GET", "/api/v1/jobs", &status);
	assert_non_null(r);
	assert_ptr_equal(r->fn, handler_a);
	r = find("GET", "/api/v1/jobs/slurm:5", &status);
	assert_non_null(r);
	assert_ptr_equal(r->fn, handler_b);
	assert_int_equal(r->access, HTTP_ACCESS_USER);
	/* a prefix route needs at least one byte past its prefix */
	r = find("GET", "/api/v1/jobs/", &status);
	assert_null(r);
	assert_int_equal(status, 404);
	r = find("GET", "/api/v1/jobsx", &status);
	assert_null(r);
	assert_int_equal(status, 404);
}

static void test_methods(void **state)
{
	const struct http_route *r;
	int status;

	(void)state;
	r = find("HEAD", "/api/v1/jobs", &status);
	assert_non_null(r);
	assert_ptr_equal(r->fn, handler_a);
	r = find("POST", "/api/v1/jobs", &status);
	assert_null(r);
	assert_int_equal(status, 405);
	r = find("GET", "/api/v1/ingest", &status);
	assert_null(r);
	assert_int_equal(status, 405);
	r = find("HEAD", "/profiling/start", &status);
	assert_null(r);
	assert_int_equal(status, 405);
	r = find("POST", "/api/v1/ingest", &status);
	assert_non_null(r);
	assert_int_equal(r->access, HTTP_ACCESS_INGEST);
	r = find("DELETE", "/nowhere", &status);
	assert_null(r);
	assert_int_equal(status, 404);
}

static void test_access_names(void **state)
{
	(void)state;
	assert_string_equal(http_access_name(HTTP_ACCESS_PUBLIC), "anonymous");
	assert_string_equal(http_access_name(HTTP_ACCESS_USER), "user");
	assert_string_equal(http_access_name(HTTP_ACCESS_READER), "reader");
	assert_string_equal(http_access_name(HTTP_ACCESS_INGEST), "agent");
	assert_string_equal(http_access_name(HTTP_ACCESS_ADMIN), "admin");
	assert_string_equal(http_access_name(HTTP_ACCESS_OWNER), "owner");
	assert_string_equal(http_access_name((enum http_access)42), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exact_and_prefix),
	    cmocka_unit_test(test_methods),
	    cmocka_unit_test(test_access_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
