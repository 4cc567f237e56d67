/*
 * test_podres.c - the kubelet's pod-resources answer (src/attrib/podres.c):
 * protobuf built here by hand as the kubelet's api.proto lays it out, in
 * any field order, with unknown fields, truncated and overlong; the gRPC
 * frame; and the join of a pod's devices to the GPU reservation of the job
 * named "NAMESPACE/POD".
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

#include "attrib/podres.h"

/* ---- a protobuf writer, just enough for the fixtures ---- */

struct pbw {
	uint8_t b[65536];
	size_t n;
};

static void put_varint(struct pbw *w, uint64_t v)
{
	do {
		assert_true(w->n < sizeof(w->b));
		w->b[w->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void put_bytes(struct pbw *w, uint32_t field, const void *p, size_t len)
{
	put_varint(w, (uint64_t)field << 3 | 2);
	put_varint(w, len);
	assert_true(w->n + len <= sizeof(w->b));
	memcpy(w->b + w->n, p, len);
	w->n += len;
}

static void put_str(struct pbw *w, uint32_t field, const char *s)
{
	put_bytes(w, field, s, strlen(s));
}

static void put_msg(struct pbw *w, uint32_t field, const struct pbw *m)
{
	put_bytes(w, field, m->b, m->n);
}

/* ContainerDevices{resource_name=1, device_ids=2...}; ids NULL-ended */
static void devices(struct pbw *out, const char *resource, const char *const *ids, bool name_last)
{
	struct pbw d = {.n = 0};

	if (!name_last)
		put_str(&d, 1, resource);
	for (size_t i = 0; ids[i]; i++)
		put_str(&d, 2, ids[i]);
	if (name_last)
		put_str(&d, 1, resource);
	put_msg(out, 2, &d); /* ContainerResources.devices */
}

/* ContainerResources{name=1, devices=2, cpu_ids=3 (packed int64)} around devs */
static void container(struct pbw *pod, const char *name, const struct pbw *devs)
{
	struct pbw c = {.n = 0};
	static const uint8_t cpus[] = {2, 3};

	put_str(&c, 1, name);
	memcpy(c.b + c.n, devs->b, devs->n);
	c.n += devs->n;
	put_bytes(&c, 3, cpus, sizeof(cpus));
	put_msg(pod, 3, &c);
}

/* PodResources{name=1, namespace=2, containers=3} into the response */
static void pod(struct pbw *resp, const char *ns, const char *name, const struct pbw *containers,
		bool names_last)
{
	struct pbw p = {.n = 0};

	if (!names_last) {
		put_str(&p, 1, name);
		put_str(&p, 2, ns);
	}
	memcpy(p.b + p.n, containers->b, containers->n);
	p.n += containers->n;
	if (names_last) {
		put_str(&p, 2, ns);
		put_str(&p, 1, name);
	}
	put_msg(resp, 1, &p);
}

#define UUID0 "GPU-11111111-2222-3333-4444-000000000000"
#define UUID1 "GPU-11111111-2222-3333-4444-000000000001"
#define UUID2 "GPU-11111111-2222-3333-4444-000000000002"

/*
 * The node of the fixtures' answer: train/bert-0 (two containers, GPUs 0
 * and 2, a CPU-only resource besides); ml/tiny (a time-sliced GPU 1, two
 * replicas, names after the containers); ml/mig (one MIG device); web/nginx
 * (no device); kube-system/plugin (only a non-GPU device).
 */
static void node_answer(struct pbw *resp)
{
	static const char *const g0[] = {UUID0, NULL}, *const g2[] = {UUID2, NULL},
				 *const sliced[] = {UUID1 "::0", UUID1 "::3", NULL},
				 *const mig[] = {"MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", NULL},
				 *const nic[] = {"0000:3b:00.0", NULL};
	struct pbw c = {.n = 0}, d = {.n = 0};

	resp->n = 0;
	devices(&d, "nvidia.com/gpu", g0, false);
	devices(&d, "example.com/nic", nic, false);
	container(&c, "trainer", &d);
	d.n = 0;
	devices(&d, "nvidia.com/gpu", g2, true);
	container(&c, "sidecar", &d);
	pod(resp, "train", "bert-0", &c, false);

	c.n = d.n = 0;
	devices(&d, "nvidia.com/gpu", sliced, false);
	container(&c, "main", &d);
	pod(resp, "ml", "tiny", &c, true);

	c.n = d.n = 0;
	devices(&d, "nvidia.com/mig-1g.10gb", mig, false);
	container(&c, "main", &d);
	pod(resp, "ml", "mig", &c, false);

	c.n = d.n = 0;
	container(&c, "nginx", &d);
	pod(resp, "web", "nginx", &c, false);

	c.n = d.n = 0;
	devices(&d, "example.com/nic", nic, false);
	container(&c, "plugin", &d);
	pod(resp, "kube-system", "plugin", &c, false);
}

static void three_gpus(struct gpu_set *set)
{
	memset(set, 0, sizeof(*set));
	set->ndevices = 3;
	for (int i = 0; i < 3; i++)
		set->dev[i].info.index = i;
	snprintf(set->dev[0].info.uuid, sizeof(set->dev[0].info.uuid), "%s", UUID0);
	snprintf(set->dev[1].info.uuid, sizeof(set->dev[1].info.uuid), "%s", UUID1);
	snprintf(set->dev[2].info.uuid, sizeof(set->dev[2].info.uuid), "%s", UUID2);
}

static void pod_job(struct job_record *r, const char *name)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->scheduler, sizeof(r->scheduler), "k8s");
	snprintf(r->job_id, sizeof(r->job_id), "0b5f4c2e-1c1a-4c55-9a0e-5c3b1f0f9d11");
	snprintf(r->name, sizeof(r->name), "%s", name);
}

static void test_decode(void **state)
{
	struct podres_table t;
	struct pbw resp;

	(void)state;
	node_answer(&resp);
	podres_table_init(&t);
	assert_int_equal(podres_decode_list(resp.b, resp.n, &t), 0);
	assert_int_equal(t.n, 5);
	assert_int_equal(t.skipped, 0);
	assert_string_equal(t.dev[0].ns, "train");
	assert_string_equal(t.dev[0].pod, "bert-0");
	assert_string_equal(t.dev[0].container, "trainer");
	assert_string_equal(t.dev[0].resource, "nvidia.com/gpu");
	assert_string_equal(t.dev[0].device_id, UUID0);
	assert_string_equal(t.dev[1].container, "sidecar"); /* resource_name after the ids */
	assert_string_equal(t.dev[1].device_id, UUID2);
	assert_string_equal(t.dev[2].ns, "ml"); /* names after the containers */
	assert_string_equal(t.dev[2].pod, "tiny");
	assert_string_equal(t.dev[2].device_id, UUID1 "::0");
	assert_string_equal(t.dev[3].device_id, UUID1 "::3");
	assert_string_equal(t.dev[4].resource, "nvidia.com/mig-1g.10gb");
	/* decoding again empties first */
	assert_int_equal(podres_decode_list(resp.b, resp.n, &t), 0);
	assert_int_equal(t.n, 5);
	/* an empty answer: no pods */
	assert_int_equal(podres_decode_list(resp.b, 0, &t), 0);
	assert_int_equal(t.n, 0);
	podres_table_release(&t);
}

static void test_gpu_resource(void **state)
{
	(void)state;
	assert_true(podres_is_gpu_resource("nvidia.com/gpu", 14));
	assert_true(podres_is_gpu_resource("nvidia.com/mig-3g.20gb", 22));
	assert_false(podres_is_gpu_resource("nvidia.com/mig-", 15));
	assert_false(podres_is_gpu_resource("nvidia.com/gpus", 15));
	assert_false(podres_is_gpu_resource("amd.com/gpu", 11));
	assert_false(podres_is_gpu_resource("nvidia.com/gpu", 10));
}

/* Every prefix of a valid answer is refused or decodes into fewer devices; never read past. */
static void test_truncated(void **state)
{
	struct podres_table t;
	struct pbw resp;

	(void)state;
	node_answer(&resp);
	podres_table_init(&t);
	for (size_t n = 0; n < resp.n; n++) {
		uint8_t *copy = malloc(n ? n : 1);
		int ret;

		memcpy(copy, resp.b, n);
		ret = podres_decode_list(copy, n, &t);
		assert_true(ret == 0 || ret == -EBADMSG);
		if (ret)
			assert_int_equal(t.n, 0);
		else
			assert_true(t.n <= 5);
		free(copy);
	}
	podres_table_release(&t);
}

static void test_malformed(void **state)
{
	struct podres_table t;
	/* field 1 LEN with a length past the end */
	static const uint8_t past[] = {0x0a, 0x05, 0x0a, 0x01};
	/* a varint of 11 bytes */
	static const uint8_t longvar[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
					  0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	/* a group start (wire type 3), field 0 */
	static const uint8_t group[] = {0x0b}, zero[] = {0x02, 0x00};
	/* unknown fields of every wire type before a pod: skipped */
	static const uint8_t unknown[] = {0x10, 0x96, 0x01, 0x19, 1, 2, 3, 4,	 5,   6,
					  7,	8,    0x25, 1,	  2, 3, 4, 0x2a, 0x00};

	(void)state;
	podres_table_init(&t);
	assert_int_equal(podres_decode_list(past, sizeof(past), &t), -EBADMSG);
	assert_int_equal(podres_decode_list(longvar, sizeof(longvar), &t), -EBADMSG);
	assert_int_equal(podres_decode_list(group, sizeof(group), &t), -EBADMSG);
	assert_int_equal(podres_decode_list(zero, sizeof(zero), &t), -EBADMSG);
	assert_int_equal(podres_decode_list(unknown, sizeof(unknown), &t), 0);
	assert_int_equal(t.n, 0);
	podres_table_release(&t);
}

/* A name or an id over its size, or with a NUL, is skipped and counted; the rest stays. */
static void test_overlong(void **state)
{
	char longid[200], longns[100];
	static const char *const ok[] = {UUID0, NULL};
	struct pbw resp = {.n = 0}, c = {.n = 0}, d = {.n = 0}, ids = {.n = 0};
	struct podres_table t;

	(void)state;
	memset(longid, 'a', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	memset(longns, 'n', sizeof(longns) - 1);
	longns[sizeof(longns) - 1] = '\0';
	put_str(&ids, 1, "nvidia.com/gpu");
	put_str(&ids, 2, longid);
	put_str(&ids, 2, "GPU-ok");
	put_bytes(&ids, 2, "GPU-\0x", 6);
	put_bytes(&ids, 2, "", 0);
	put_msg(&d, 2, &ids);
	container(&c, "main", &d);
	pod(&resp, "ns", "p", &c, false);
	c.n = d.n = 0;
	devices(&d, "nvidia.com/gpu", ok, false);
	container(&c, "main", &d);
	pod(&resp, longns, "q", &c, false); /* a namespace over 63 bytes: its devices skipped */
	podres_table_init(&t);
	assert_int_equal(podres_decode_list(resp.b, resp.n, &t), 0);
	assert_int_equal(t.n, 1);
	assert_string_equal(t.dev[0].device_id, "GPU-ok");
	assert_int_equal(t.skipped, 4);
	podres_table_release(&t);
}

static void test_too_many(void **state)
{
	static struct pbw resp, c, d, ids;
	struct podres_table t;

	(void)state;
	/* one pod, one container, one ContainerDevices with one id too many */
	put_str(&ids, 1, "nvidia.com/gpu");
	for (size_t i = 0; i <= PODRES_MAX_DEVICES; i++)
		put_str(&ids, 2, "GPU-x");
	put_msg(&d, 2, &ids);
	container(&c, "main", &d);
	pod(&resp, "n", "p", &c, false);
	podres_table_init(&t);
	assert_int_equal(podres_decode_list(resp.b, resp.n, &t), -E2BIG);
	assert_int_equal(t.n, 0);
	podres_table_release(&t);
}

static void test_grpc_frame(void **state)
{
	static const uint8_t ok[] = {0, 0, 0, 0, 2, 0x0a, 0x00}, empty[] = {0, 0, 0, 0, 0},
			     zipped[] = {1, 0, 0, 0, 1, 0}, bad_flag[] = {2, 0, 0, 0, 1, 0},
			     short_len[] = {0, 0, 0, 0, 3, 0x0a, 0x00},
			     two[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	const uint8_t *m;
	size_t n;

	(void)state;
	assert_int_equal(podres_grpc_message(ok, sizeof(ok), &m, &n), 0);
	assert_ptr_equal(m, ok + 5);
	assert_int_equal(n, 2);
	assert_int_equal(podres_grpc_message(empty, sizeof(empty), &m, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(podres_grpc_message(zipped, sizeof(zipped), &m, &n), -ENOTSUP);
	assert_int_equal(podres_grpc_message(bad_flag, sizeof(bad_flag), &m, &n), -EBADMSG);
	assert_int_equal(podres_grpc_message(short_len, sizeof(short_len), &m, &n), -EBADMSG);
	assert_int_equal(podres_grpc_message(two, sizeof(two), &m, &n), -EBADMSG);
	assert_int_equal(podres_grpc_message(ok, 4, &m, &n), -EBADMSG);
}

static void test_gpu_position(void **state)
{
	struct gpu_set set;

	(void)state;
	three_gpus(&set);
	assert_int_equal(podres_gpu_position(&set, UUID2), 2);
	assert_int_equal(podres_gpu_position(&set, UUID1 "::7"), 1);
	assert_int_equal(podres_gpu_position(&set, "1"), 1);
	assert_int_equal(podres_gpu_position(&set, "2::1"), 2);
	assert_int_equal(podres_gpu_position(&set, "3"), -1);
	assert_int_equal(podres_gpu_position(&set, "GPU-11111111"), -1); /* no prefixes */
	assert_int_equal(podres_gpu_position(&set, "MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"), -1);
	assert_int_equal(podres_gpu_position(&set, "::1"), -1);
	assert_int_equal(podres_gpu_position(&set, ""), -1);
}

/* The join: jobs named "NAMESPACE/POD" get their pod's GPUs. */
static void test_reserve_jobs(void **state)
{
	struct podres_table t;
	struct job_record r;
	struct gpu_set set;
	struct pbw resp;

	(void)state;
	three_gpus(&set);
	node_answer(&resp);
	podres_table_init(&t);
	assert_int_equal(podres_decode_list(resp.b, resp.n, &t), 0);

	pod_job(&r, "train/bert-0"); /* two containers' GPUs, the NIC not counted */
	snprintf(r.reservation_source, sizeof(r.reservation_source), "cgroup");
	r.reserved_cpus = 4;
	assert_true(podres_reserve_job(&t, &set, &r));
	assert_true(r.has_reserved_gpus);
	assert_int_equal(r.reserved_gpus, 2);
	assert_string_equal(r.reserved_gpu_list, "0,2");
	assert_string_equal(r.reservation_source, "pod_resources");
	assert_true(r.reserved_cpus == 4);		/* the cgroup's CPUs stay */
	assert_false(podres_reserve_job(&t, &set, &r)); /* the same again: no change */

	pod_job(&r, "ml/tiny"); /* two replicas of GPU 1: one GPU */
	assert_true(podres_reserve_job(&t, &set, &r));
	assert_int_equal(r.reserved_gpus, 1);
	assert_string_equal(r.reserved_gpu_list, "1");

	pod_job(&r, "ml/mig"); /* a MIG device: counted, no index */
	assert_true(podres_reserve_job(&t, &set, &r));
	assert_int_equal(r.reserved_gpus, 1);
	assert_string_equal(r.reserved_gpu_list, "");

	pod_job(&r, "web/nginx"); /* no GPU: left as it was */
	assert_false(podres_reserve_job(&t, &set, &r));
	assert_false(r.has_reserved_gpus);
	assert_string_equal(r.reservation_source, "");

	pod_job(&r, "kube-system/plugin"); /* a device, not a GPU */
	assert_false(podres_reserve_job(&t, &set, &r));
	assert_false(r.has_reserved_gpus);

	pod_job(&r, "other/bert-0"); /* the namespace counts */
	assert_false(podres_reserve_job(&t, &set, &r));
	pod_job(&r, "train/bert"); /* whole names only */
	assert_false(podres_reserve_job(&t, &set, &r));
	pod_job(&r, "bert-0"); /* not a pod's name */
	assert_false(podres_reserve_job(&t, &set, &r));
	pod_job(&r, "train/bert-0/x");
	assert_false(podres_reserve_job(&t, &set, &r));
	pod_job(&r, "/bert-0");
	assert_false(podres_reserve_job(&t, &set, &r));

	pod_job(&r, "train/bert-0"); /* a Slurm job of that name is no pod */
	snprintf(r.scheduler, sizeof(r.scheduler), "slurm");
	assert_false(podres_reserve_job(&t, &set, &r));
	assert_false(r.has_reserved_gpus);

	/* the pod gone from a later answer: what it reserved stays */
	pod_job(&r, "train/bert-0");
	assert_true(podres_reserve_job(&t, &set, &r));
	assert_int_equal(podres_decode_list(resp.b, 0, &t), 0);
	assert_false(podres_reserve_job(&t, &set, &r));
	assert_int_equal(r.reserved_gpus, 2);
	podres_table_release(&t);
}

/* A device plugin that names GPUs by index, and an index given twice (by index and UUID). */
static void test_reserve_by_index(void **state)
{
	static const char *const ids[] = {"2", UUID2, "0::1", "0::2", NULL};
	struct pbw resp = {.n = 0}, c = {.n = 0}, d = {.n = 0};
	struct podres_table t, copy;
	struct job_record r;
	struct gpu_set set;

	(void)state;
	three_gpus(&set);
	set.dev[0].info.index = 5; /* positions are not indexes */
	devices(&d, "nvidia.com/gpu", ids, false);
	container(&c, "main", &d);
	pod(&resp, "a", "b", &c, false);
	podres_table_init(&t);
	podres_table_init(&copy);
	assert_int_equal(podres_decode_list(resp.b, resp.n, &t), 0);
	assert_int_equal(podres_table_copy(&copy, &t), 0);
	assert_int_equal(copy.n, 4);
	pod_job(&r, "a/b");
	assert_true(podres_reserve_pod(&copy, &set, "a", "b", &r));
	/* "0" names no GPU (index 5 is at position 0): counted, not listed */
	assert_int_equal(r.reserved_gpus, 2);
	assert_string_equal(r.reserved_gpu_list, "2");
	podres_table_release(&t);
	podres_table_release(&copy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode),	 cmocka_unit_test(test_gpu_resource),
	    cmocka_unit_test(test_truncated),	 cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_overlong),	 cmocka_unit_test(test_too_many),
	    cmocka_unit_test(test_grpc_frame),	 cmocka_unit_test(test_gpu_position),
	    cmocka_unit_test(test_reserve_jobs), cmocka_unit_test(test_reserve_by_index),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
