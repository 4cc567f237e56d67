/*
 * fuzz_k8s.c - libFuzzer target for the OCI bundle annotations parser
 * (attrib/k8s.h): any input, copied into a buffer of exactly its size with
 * no NUL after it; a result is a pod's names, each terminated in its field.
 * The same bytes go to the CRI ListPodSandboxResponse decoder (cri.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/cri.h"
#include "attrib/k8s.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *s, size_t size, bool nonempty)
{
	size_t n = strnlen(s, size);

	if (n >= size || (nonempty && n == 0))
		abort();
}

static void check_owner(const struct cri_owner *o, void *arg)
{
	(void)arg;
	check_str(o->uid, sizeof(o->uid), true);
	check_str(o->label, sizeof(o->label), false);
	check_str(o->name, sizeof(o->name), false);
	if (!o->label[0] != !o->name[0])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	struct k8s_bundle b;
	int ret;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	ret = k8s_parse_bundle(buf, size, &b);
	if (ret != 0 && ret != -ENODATA && ret != -EINVAL)
		abort();
	if (ret == 0) {
		check_str(b.namespace_, sizeof(b.namespace_), true);
		check_str(b.pod, sizeof(b.pod), true);
		check_str(b.uid, sizeof(b.uid), true);
		check_str(b.container, sizeof(b.container), !b.sandbox);
		if (b.sandbox && b.container[0])
			abort();
	} else if (b.pod[0] || b.namespace_[0] || b.uid[0] || b.container[0] || b.sandbox) {
		abort();
	}
	ret = cri_decode_sandboxes((const uint8_t *)buf, size, check_owner, NULL);
	if (ret != 0 && ret != -EINVAL)
		abort();
	free(buf);
	return 0;
}
