/*
 * fuzz_rw_relabel.c - libFuzzer target for rw_relabel_parse() (the
 * --rw-relabel rules, outside input): any text parses or is refused with a
 * reason, and a parsed rule applies to a name without crashing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "prom/rw_relabel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct rw_rule rule;
	const char *why = NULL;
	const char *name;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (rw_relabel_parse(s, &rule, &why) == 0) {
		name = rw_relabel_name(&rule, 1, "jobscope_job_cpu_seconds_total");
		/* a kept name is ours or the rule's, never empty */
		if (name && !name[0])
			abort();
		if (rule.kind == RW_LABEL && (!rule.a[0] || !rule.b[0]))
			abort();
	} else if (!why || !why[0]) {
		abort();
	}
	rw_relabel_free(&rule);
	free(s);
	return 0;
}
