/*
 * fuzz_maps.c - libFuzzer target for the /proc/PID/maps parser, the library
 * rules, the version.py and dist-info readers, and the RAPL value parser.
 * The input is copied into a buffer of exactly its size, not
 * NUL-terminated, so ASan catches any read past len.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sample/libs.h"
#include "sample/rapl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_set(const struct lib_set *set)
{
	if (set->n > LIBS_MAX)
		abort();
	for (size_t i = 0; i < set->n; i++) {
		const struct lib_found *l = &set->lib[i];

		if (!l->name[0] || strnlen(l->name, sizeof(l->name)) >= sizeof(l->name) ||
		    strnlen(l->version, sizeof(l->version)) >= sizeof(l->version) ||
		    strnlen(l->path, sizeof(l->path)) >= sizeof(l->path) || l->path[0] != '/' ||
		    l->site_len >= sizeof(l->path))
			abort();
		for (size_t k = 0; k < i; k++)
			if (strcmp(set->lib[k].name, l->name) == 0)
				abort(); /* one entry per name */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size ? size : 1), version[LIBS_VERSION_MAX], name[80];
	struct lib_set set = {0};
	struct lib_found l;
	uint64_t v;
	size_t n;

	if (!text)
		return 0;
	memcpy(text, data, size);

	n = libs_parse_maps(text, size, &set);
	if (n != set.n)
		abort();
	check_set(&set);
	if (libs_classify_path(text, size, &l) && (l.path[0] != '/' || !l.name[0]))
		abort();
	if (libs_parse_version_py(text, size, version, sizeof(version)) == 0 &&
	    strnlen(version, sizeof(version)) >= sizeof(version))
		abort();
	/* a directory name: the input up to its first NUL, cut to fit */
	n = strnlen(text, size < sizeof(name) - 1 ? size : sizeof(name) - 1);
	memcpy(name, text, n);
	name[n] = '\0';
	if (libs_version_from_distinfo(name, "torch", version, sizeof(version)) &&
	    (!version[0] || strlen(version) >= n))
		abort();
	rapl_parse_u64(text, size, &v);

	free(text);
	return 0;
}
