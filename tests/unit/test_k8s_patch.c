/*
 * test_k8s_patch.c - what is written back to Kubernetes (net/k8s_patch.c)
 * on exact bytes: a report's annotations, missing figures left out, a
 * node's from the store's lists, the merge patch with its deletions and
 * limits, and the names Kubernetes would refuse.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/strbuf.h"
#include "net/k8s_patch.h"

/* A report's JSON as report_json.c writes it, cut to what the annotations read. */
static const char report[] =
    "{\"schema\":2,\"gpus\":[{\"index\":0,\"uuid\":\"GPU-aaaa\",\"util_avg_pct\":41.26,"
    "\"util_p95_pct\":90,\"mem_used_peak_bytes\":8589934592,\"energy_j\":1200.4},"
    "{\"index\":3,\"uuid\":\"GPU-b\\u0001b\",\"util_avg_pct\":null,\"util_p95_pct\":null,"
    "\"mem_used_peak_bytes\":null,\"energy_j\":10}],"
    "\"analysis\":{\"efficiency\":{\"cpu\":{\"cores_avg\":1.5,\"cores_p95\":3.999,"
    "\"cores_reserved\":4,\"cores_from\":\"reservation\",\"efficiency_pct\":37.5},"
    "\"memory\":{\"peak_bytes\":1073741824,\"reserved_bytes\":null,\"efficiency_pct\":null}},"
    "\"period_s\":2.5,\"period_confidence\":0.81,\"job_type\":\"training\","
    "\"bottleneck\":null,\"trend\":{\"memory\":{\"time_to_limit_s\":3600},\"gpu_memory\":null}},"
    "\"verdicts\":[{\"kind\":\"gpu_idle\"},{\"kind\":\"memory_over_reserved\"},{\"kind\":5}]}";

static void pod_annotations(void **state)
{
	struct k8s_annots s;

	(void)state;
	k8s_annots_init(&s);
	assert_int_equal(k8s_pod_annots(report, strlen(report), &s), 0);
	assert_string_equal(k8s_annots_get(&s, "cpu-cores-avg"), "1.50");
	assert_string_equal(k8s_annots_get(&s, "cpu-cores-p95"), "4.00");
	assert_string_equal(k8s_annots_get(&s, "cpu-limit-cores"), "4.00");
	assert_string_equal(k8s_annots_get(&s, "cpu-efficiency-pct"), "37.5");
	assert_string_equal(k8s_annots_get(&s, "memory-peak-bytes"), "1073741824");
	assert_null(k8s_annots_get(&s, "memory-limit-bytes")); /* null: unknown, not 0 */
	assert_null(k8s_annots_get(&s, "memory-efficiency-pct"));
	assert_string_equal(k8s_annots_get(&s, "period-s"), "2.50");
	assert_string_equal(k8s_annots_get(&s, "period-confidence"), "0.81");
	assert_string_equal(k8s_annots_get(&s, "memory-time-to-limit-s"), "3600");
	assert_null(k8s_annots_get(&s, "gpu-memory-time-to-limit-s"));
	assert_string_equal(k8s_annots_get(&s, "job-type"), "training");
	assert_null(k8s_annots_get(&s, "bottleneck"));
	assert_string_equal(k8s_annots_get(&s, "verdicts"), "gpu_idle,memory_over_reserved");
	assert_string_equal(k8s_annots_get(&s, "gpus"), "2");
	assert_string_equal(k8s_annots_get(&s, "gpu-energy-j"), "1210");
	assert_string_equal(k8s_annots_get(&s, "gpu-0-util-avg-pct"), "41.3");
	assert_string_equal(k8s_annots_get(&s, "gpu-0-util-p95-pct"), "90.0");
	assert_string_equal(k8s_annots_get(&s, "gpu-0-memory-peak-bytes"), "8589934592");
	assert_string_equal(k8s_annots_get(&s, "gpu-0-uuid"), "GPU-aaaa");
	assert_null(k8s_annots_get(&s, "gpu-3-util-avg-pct"));
	assert_string_equal(k8s_annots_get(&s, "gpu-3-uuid"), "GPU-b?b"); /* control: '?' */
	assert_string_equal(k8s_annots_get(&s, "gpu-3-energy-j"), "10");
	k8s_annots_release(&s);
}

static void pod_affinity_is_no_limit(void **state)
{
	static const char r[] = "{\"analysis\":{\"efficiency\":{\"cpu\":{\"cores_avg\":-0.001,"
				"\"cores_reserved\":8,\"cores_from\":\"affinity\"}}}}";
	struct k8s_annots s;

	(void)state;
	k8s_annots_init(&s);
	assert_int_equal(k8s_pod_annots(r, strlen(r), &s), 0);
	assert_null(k8s_annots_get(&s, "cpu-limit-cores"));
	assert_string_equal(k8s_annots_get(&s, "cpu-cores-avg"), "0.00"); /* never "-0.00" */
	assert_null(k8s_annots_get(&s, "verdicts"));			  /* no list: none */
	assert_null(k8s_annots_get(&s, "gpus"));
	assert_int_equal(k8s_pod_annots("[1]", 3, &s), -EINVAL);
	assert_int_equal(k8s_pod_annots("{", 1, &s), -EINVAL);
	assert_int_equal(s.n, 0);
	k8s_annots_release(&s);
}

static void node_annotations(void **state)
{
	static const char nodes[] =
	    "{\"nodes\":[{\"node\":\"other\",\"cores\":2},{\"node\":\"n1\",\"cores\":64,"
	    "\"mem_total_bytes\":1000,\"mem_available_bytes\":400,\"load1_milli\":2500}]}";
	static const char gpus[] =
	    "{\"gpus\":[{\"node\":\"n1\",\"index\":0,\"uuid\":\"GPU-0\",\"name\":\"NVIDIA H200\","
	    "\"util_pct\":50,\"mem_used_bytes\":100},{\"node\":\"n1\",\"index\":1,"
	    "\"name\":\"NVIDIA H200\",\"util_pct\":null,\"mem_used_bytes\":300},"
	    "{\"node\":\"other\",\"index\":0,\"name\":\"X\"}]}";
	struct k8s_annots s;

	(void)state;
	k8s_annots_init(&s);
	assert_int_equal(k8s_node_annots(nodes, strlen(nodes), gpus, strlen(gpus), "n1", &s), 0);
	assert_string_equal(k8s_annots_get(&s, "cpu-cores"), "64");
	assert_string_equal(k8s_annots_get(&s, "memory-used-bytes"), "600");
	assert_string_equal(k8s_annots_get(&s, "memory-total-bytes"), "1000");
	assert_string_equal(k8s_annots_get(&s, "load1"), "2.50");
	assert_string_equal(k8s_annots_get(&s, "gpus"), "2");
	assert_string_equal(k8s_annots_get(&s, "gpu-models"), "NVIDIA H200");
	assert_string_equal(k8s_annots_get(&s, "gpu-util-pct"), "50.0"); /* of those known */
	assert_string_equal(k8s_annots_get(&s, "gpu-memory-used-bytes"), "400");
	assert_string_equal(k8s_annots_get(&s, "gpu-0-util-pct"), "50");
	assert_null(k8s_annots_get(&s, "gpu-1-util-pct"));
	assert_string_equal(k8s_annots_get(&s, "gpu-1-memory-used-bytes"), "300");
	assert_int_equal(k8s_node_annots(nodes, strlen(nodes), gpus, strlen(gpus), "nope", &s),
			 -ENOENT);
	assert_int_equal(k8s_node_annots(nodes, strlen(nodes), "{\"gpus\":[]}", 11, "n1", &s), 0);
	assert_string_equal(k8s_annots_get(&s, "gpus"), "0");
	k8s_annots_release(&s);
}

static void patch_body(void **state)
{
	struct k8s_annots prev, now;
	struct strbuf out;

	(void)state;
	k8s_annots_init(&prev);
	k8s_annots_init(&now);
	strbuf_init(&out, 1 << 20);
	assert_int_equal(k8s_annots_set(&prev, "a", "1"), 0);
	assert_int_equal(k8s_annots_set(&prev, "gone", "x"), 0);
	assert_int_equal(k8s_annots_set(&prev, K8S_ANNOT_UPDATED, "t0"), 0);
	assert_int_equal(k8s_annots_set(&now, "a", "1"), 0);
	assert_int_equal(k8s_annots_set(&now, "q", "say \"hi\"\n"), 0);
	assert_true(k8s_annots_moved(&prev, &now));
	assert_int_equal(k8s_patch_body("jobscope.io", &prev, &now, &out), 0);
	assert_string_equal(strbuf_str(&out),
			    "{\"metadata\":{\"annotations\":{\"jobscope.io/a\":\"1\","
			    "\"jobscope.io/q\":\"say \\\"hi\\\"\\n\",\"jobscope.io/gone\":null,"
			    "\"jobscope.io/updated\":null}}}");
	/* only the time differs: nothing moved */
	assert_int_equal(k8s_annots_set(&now, "gone", "x"), 0);
	assert_int_equal(k8s_annots_set(&now, "q", "y"), 0);
	assert_int_equal(k8s_annots_set(&prev, "q", "y"), 0);
	assert_int_equal(k8s_annots_set(&now, K8S_ANNOT_UPDATED, "t1"), 0);
	assert_false(k8s_annots_moved(&prev, &now));
	assert_int_equal(k8s_annots_set(&now, "a", "2"), 0);
	assert_true(k8s_annots_moved(&prev, &now));
	/* a bad prefix: nothing written */
	strbuf_reset(&out);
	assert_int_equal(k8s_patch_body("Jobscope.io", &prev, &now, &out), -EINVAL);
	assert_int_equal(k8s_patch_body("a..b", &prev, &now, &out), -EINVAL);
	assert_int_equal(out.len, 0);
	assert_int_equal(k8s_patch_body("example.com", NULL, &now, &out), 0);
	k8s_annots_move(&prev, &now);
	assert_int_equal(now.n, 0);
	assert_string_equal(k8s_annots_get(&prev, "a"), "2");
	k8s_annots_release(&prev);
	k8s_annots_release(&now);
	strbuf_release(&out);
}

static void limits(void **state)
{
	struct k8s_annots s;
	struct strbuf out;
	char name[80], value[K8S_VALUE_MAX + 2];

	(void)state;
	k8s_annots_init(&s);
	strbuf_init(&out, (size_t)4 << 20);
	memset(name, 'n', sizeof(name));
	name[63] = '\0';
	assert_int_equal(k8s_annots_set(&s, name, "v"), 0);
	name[63] = 'n';
	name[64] = '\0';
	assert_int_equal(k8s_annots_set(&s, name, "v"), -EINVAL); /* 64 characters */
	assert_int_equal(k8s_annots_set(&s, "-a", "v"), -EINVAL);
	assert_int_equal(k8s_annots_set(&s, "a/b", "v"), -EINVAL);
	assert_int_equal(k8s_annots_set(&s, "", "v"), -EINVAL);
	memset(value, 'v', sizeof(value));
	value[K8S_VALUE_MAX + 1] = '\0';
	assert_int_equal(k8s_annots_set(&s, "big", value), -E2BIG);
	value[K8S_VALUE_MAX] = '\0';
	for (int i = 1; i < K8S_ANNOTS_MAX; i++) {
		snprintf(name, sizeof(name), "k%d", i);
		assert_int_equal(k8s_annots_set(&s, name, value), 0);
	}
	assert_int_equal(k8s_annots_set(&s, "one-more", "v"), -E2BIG);
	/* the most a set may hold still fits the API server's 256 KiB */
	assert_int_equal(k8s_patch_body("jobscope.io", NULL, &s, &out), 0);
	assert_true(out.len > (size_t)K8S_ANNOTS_MAX * K8S_VALUE_MAX - K8S_VALUE_MAX);
	k8s_annots_release(&s);
	strbuf_release(&out);
}

static void names(void **state)
{
	char ns[K8S_NS_LEN_MAX + 1], pod[K8S_OBJECT_NAME_MAX + 1];

	(void)state;
	assert_int_equal(k8s_split_pod("bar-ns/bar-pod-7", ns, sizeof(ns), pod, sizeof(pod)), 0);
	assert_string_equal(ns, "bar-ns");
	assert_string_equal(pod, "bar-pod-7");
	assert_int_equal(k8s_split_pod("ns/web.v1-0", ns, sizeof(ns), pod, sizeof(pod)), 0);
	assert_int_equal(k8s_split_pod("ns.x/p", ns, sizeof(ns), pod, sizeof(pod)), -EINVAL);
	assert_int_equal(k8s_split_pod("ns/p/q", ns, sizeof(ns), pod, sizeof(pod)), -EINVAL);
	assert_int_equal(k8s_split_pod("ns/../x", ns, sizeof(ns), pod, sizeof(pod)), -EINVAL);
	assert_int_equal(k8s_split_pod("ns/P", ns, sizeof(ns), pod, sizeof(pod)), -EINVAL);
	assert_int_equal(k8s_split_pod("/p", ns, sizeof(ns), pod, sizeof(pod)), -EINVAL);
	assert_int_equal(k8s_split_pod("ns/", ns, sizeof(ns), pod, sizeof(pod)), -EINVAL);
	assert_int_equal(k8s_split_pod("ns/p?x=1", ns, sizeof(ns), pod, sizeof(pod)), -EINVAL);
	assert_int_equal(k8s_split_pod("nopod", ns, sizeof(ns), pod, sizeof(pod)), -EINVAL);
	assert_true(k8s_prefix_valid("jobscope.io"));
	assert_true(k8s_prefix_valid("a-b.example.com"));
	assert_false(k8s_prefix_valid("-a.io"));
	assert_false(k8s_prefix_valid("a-.io"));
	assert_false(k8s_prefix_valid("a.io."));
	assert_false(k8s_prefix_valid(""));
	assert_true(k8s_object_name_valid("node-1.cluster", 14));
	assert_false(k8s_object_name_valid("node_1", 6));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(pod_annotations),	cmocka_unit_test(pod_affinity_is_no_limit),
	    cmocka_unit_test(node_annotations), cmocka_unit_test(patch_body),
	    cmocka_unit_test(limits),		cmocka_unit_test(names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
