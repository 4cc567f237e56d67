/* test_analysis.c - being written (issue 6). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "report/analysis.h"

static void test_severity_names(void **state)
{
	(void)state;
	assert_string_equal(verdict_severity_name(VERDICT_CRITICAL), "critical");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_severity_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
