/*
 * test_prom_families.c - the table of jobscope_* families (prom/families.h):
 * each name once, in Prometheus's form, counters ending in _total and
 * nothing else, a type Prometheus knows, a HELP that is one sentence, and
 * the "# HELP" / "# TYPE" lines the agent and the head both print from it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "prom/families.h"

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && strcmp(s + n - t, tail) == 0;
}

static void test_names_types_help(void **state)
{
	(void)state;
	for (int f = 0; f < PF__COUNT; f++) {
		const struct prom_family_def *d = &prom_families[f];

		assert_non_null(d->name);
		assert_int_equal(strncmp(d->name, "jobscope_", 9), 0);
		for (const char *p = d->name; *p; p++)
			if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
				fail_msg("%s: not a metric name of lower case, digits and _", d->name);
		if (strcmp(d->type, "counter") == 0) {
			if (!ends_with(d->name, "_total"))
				fail_msg("%s: a counter's name ends in _total", d->name);
		} else if (strcmp(d->type, "gauge") == 0 || strcmp(d->type, "summary") == 0) {
			if (ends_with(d->name, "_total"))
				fail_msg("%s: only counters end in _total", d->name);
		} else {
			fail_msg("%s: type '%s'", d->name, d->type);
		}
		assert_true(d->scale > 0);
		assert_true(d->help && strlen(d->help) > 3 && ends_with(d->help, "."));
		for (int g = 0; g < f; g++)
			if (strcmp(prom_families[g].name, d->name) == 0)
				fail_msg("%s: twice in the table", d->name);
	}
}

static void test_family_head(void **state)
{
	struct strbuf o;

	(void)state;
	strbuf_init(&o, 0);
	prom_family_head(&o, PF_GPU_POWER);
	assert_string_equal(strbuf_str(&o), "# HELP jobscope_gpu_power_watts Power draw, watts.\n"
					    "# TYPE jobscope_gpu_power_watts gauge\n");
	assert_string_equal(prom_fam_name(PF_NODE_LOAD1), "jobscope_node_load1");
	assert_string_equal(prom_families[PF_NODE_LOAD1].column, "load1_milli");
	strbuf_release(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names_types_help),
	    cmocka_unit_test(test_family_head),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
