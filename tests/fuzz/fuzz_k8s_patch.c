/*
 * fuzz_k8s_patch.c - libFuzzer target for net/k8s_patch.c: a report's JSON
 * (or, after a first NUL, a node list, a second NUL, a GPU list) into
 * annotations and the merge patch that writes them.  Whatever the input,
 * the patch is one JSON object {"metadata":{"annotations":{...}}} whose
 * every key is "jobscope.io/" and a valid name, every value a string of
 * printable ASCII or null, all under the API server's 256 KiB.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/strbuf.h"
#include "net/k8s_patch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_body(const struct strbuf *out)
{
	cJSON *body = cJSON_ParseWithLength(strbuf_str(out), out->len);
	const cJSON *annots = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(body, "metadata"), "annotations");
	const cJSON *a;
	size_t bytes = 0;

	if (!cJSON_IsObject(annots))
		abort();
	cJSON_ArrayForEach(a, annots)
	{
		if (strncmp(a->string, "jobscope.io/", 12) != 0 || !k8s_name_valid(a->string + 12))
			abort();
		if (cJSON_IsNull(a))
			continue;
		if (!cJSON_IsString(a))
			abort();
		for (const char *c = a->valuestring; *c; c++)
			if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
				abort();
		bytes += strlen(a->string) + strlen(a->valuestring);
	}
	if (bytes > K8S_ANNOTS_BYTES_MAX)
		abort();
	cJSON_Delete(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *nul = memchr(data, '\0', size);
	struct k8s_annots prev, now;
	struct strbuf out;
	int ret;

	k8s_annots_init(&prev);
	k8s_annots_init(&now);
	strbuf_init(&out, (size_t)1 << 20);
	k8s_annots_set(&prev, "gone", "x");
	if (!nul) {
		ret = k8s_pod_annots(text, size, &now);
	} else {
		const char *gpus = nul + 1;
		size_t rest = size - (size_t)(gpus - text);
		const char *nul2 = memchr(gpus, '\0', rest);
		const char *node = nul2 ? nul2 + 1 : "n1";
		char name[64];
		size_t nlen = nul2 ? strnlen(node, size - (size_t)(node - text)) : 2;

		if (nlen >= sizeof(name))
			nlen = sizeof(name) - 1;
		memcpy(name, node, nlen);
		name[nlen] = '\0';
		ret = k8s_node_annots(text, (size_t)(nul - text), gpus,
				      nul2 ? (size_t)(nul2 - gpus) : rest, name, &now);
	}
	if (ret == 0) {
		if (k8s_patch_body("jobscope.io", &prev, &now, &out) == 0)
			check_body(&out);
		if (k8s_annots_moved(&now, &now))
			abort();
	} else if (now.n != 0) {
		abort(); /* a failure leaves nothing */
	}
	k8s_annots_release(&prev);
	k8s_annots_release(&now);
	strbuf_release(&out);
	return 0;
}
