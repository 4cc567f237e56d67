/*
 * test_k8s.c - a pod's names from its containers' OCI bundles: the
 * config.json annotations parser on fixtures (containerd's CRI plugin,
 * CRI-O, a plain OCI bundle, garbage), the resolver on a sysroot tree made
 * here (the shim's working directory, the state roots, --k8s-bundle-dir,
 * a bundle of another pod, nothing at all, the cache), and a cgroup
 * namespace's "/../kubepods" path.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "attrib/cri.h"
#include "attrib/jobs.h"
#include "attrib/k8s.h"
#include "common/sysroot.h"
#include "fixture.h"

#define CID	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define SANDBOX "5a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"
#define OTHER	"fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define UID	"1234abcd-5678-90ab-cdef-0123456789ab"
#define UID2	"99999999-5678-90ab-cdef-0123456789ab"

static int parse_fixture(const char *name, struct k8s_bundle *b)
{
	char path[512];
	size_t len;
	char *text;
	int ret;

	snprintf(path, sizeof(path), "%s/k8s/%s", FIXTURES_DIR, name);
	text = fixture_load(path, &len);
	ret = k8s_parse_bundle(text, len, b);
	free(text);
	return ret;
}

static void test_containerd_container(void **state)
{
	struct k8s_bundle b;

	(void)state;
	assert_int_equal(parse_fixture("containerd_container.json", &b), 0);
	assert_string_equal(b.namespace_, "bar-ns");
	assert_string_equal(b.pod, "bar-pod-7");
	assert_string_equal(b.uid, UID);
	assert_string_equal(b.container, "trainer");
	assert_false(b.sandbox);
}

static void test_containerd_sandbox(void **state)
{
	struct k8s_bundle b;

	(void)state;
	assert_int_equal(parse_fixture("containerd_sandbox.json", &b), 0);
	assert_string_equal(b.namespace_, "bar-ns");
	assert_string_equal(b.pod, "bar-pod-7");
	assert_string_equal(b.container, "");
	assert_true(b.sandbox);
}

static void test_crio_container(void **state)
{
	struct k8s_bundle b;

	(void)state;
	assert_int_equal(parse_fixture("crio_container.json", &b), 0);
	assert_string_equal(b.namespace_, "ml");
	assert_string_equal(b.pod, "train-0");
	assert_string_equal(b.uid, "0f0e0d0c-0b0a-0908-0706-050403020100");
	assert_string_equal(b.container, "worker");
	assert_false(b.sandbox);
}

static void test_not_a_pod(void **state)
{
	struct k8s_bundle b;

	(void)state;
	assert_int_equal(parse_fixture("plain_oci.json", &b), -ENODATA);
	assert_string_equal(b.pod, "");
	assert_int_equal(parse_fixture("no_uid.json", &b), -ENODATA);
	assert_string_equal(b.namespace_, "");
	assert_int_equal(parse_fixture("not_strings.json", &b), -ENODATA);
	assert_int_equal(parse_fixture("truncated.json", &b), -EINVAL);
	assert_int_equal(k8s_parse_bundle("[1,2]", 5, &b), -EINVAL);
	assert_int_equal(k8s_parse_bundle("", 0, &b), -EINVAL);
	/* a container with no name in a container's bundle: nothing is guessed */
	static const char noname[] =
	    "{\"annotations\":{\"io.kubernetes.pod.namespace\":\"a\","
	    "\"io.kubernetes.pod.name\":\"b\",\"io.kubernetes.pod.uid\":\"c\"}}";
	assert_int_equal(k8s_parse_bundle(noname, sizeof(noname) - 1, &b), -ENODATA);
}

static void test_too_long(void **state)
{
	char text[512];
	struct k8s_bundle b;
	int n;

	(void)state;
	n = snprintf(text, sizeof(text),
		     "{\"annotations\":{\"io.kubernetes.cri.sandbox-namespace\":\"%0100d\","
		     "\"io.kubernetes.cri.sandbox-name\":\"p\",\"io.kubernetes.cri.sandbox-uid\":"
		     "\"u\",\"io.kubernetes.cri.container-type\":\"sandbox\"}}",
		     0);
	assert_int_equal(k8s_parse_bundle(text, (size_t)n, &b), -EINVAL);
}

/* A sysroot with a shim (pid 100) whose working directory is the sandbox's bundle. */
struct tree {
	char root[128];
	char bundles[256];
};

static void put(const char *dir, const char *id, const char *fixture)
{
	char path[512], src[512];
	size_t len;
	char *text;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, id);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/config.json", dir, id);
	snprintf(src, sizeof(src), "%s/k8s/%s", FIXTURES_DIR, fixture);
	text = fixture_load(src, &len);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
	free(text);
}

static void tree_make(struct tree *t)
{
	char path[512];

	snprintf(t->root, sizeof(t->root), "/tmp/test_k8s.XXXXXX");
	assert_non_null(mkdtemp(t->root));
	snprintf(t->bundles, sizeof(t->bundles), "%s/bundles", t->root);
	mkdir(t->bundles, 0755);
	put(t->bundles, SANDBOX, "containerd_sandbox.json");
	put(t->bundles, CID, "containerd_container.json");
	snprintf(path, sizeof(path), "%s/proc", t->root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/proc/100", t->root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/proc/100/cwd", t->root);
	assert_int_equal(symlink(t->bundles, path) == 0 ? 0 : -1, 0);
	strcat(t->bundles, "/" SANDBOX);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink(t->bundles, path), 0);
	sysroot_set(t->root);
}

static void tree_remove(struct tree *t)
{
	sysroot_set("");
	fixture_rm_tree(t->root);
}

static void test_resolve_through_shim(void **state)
{
	struct k8s_names k;
	struct tree t;
	const struct k8s_bundle *b;

	(void)state;
	tree_make(&t);
	k8s_names_init(&k, NULL);
	b = k8s_names_lookup(&k, CID, UID, 100);
	assert_non_null(b);
	assert_string_equal(b->container, "trainer");
	assert_string_equal(b->pod, "bar-pod-7");
	b = k8s_names_lookup(&k, SANDBOX, UID, 100);
	assert_non_null(b);
	assert_true(b->sandbox);
	assert_int_equal(k.n, 2);
	/* kept: asked again, nothing is read (the bundle is gone) */
	tree_remove(&t);
	b = k8s_names_lookup(&k, CID, UID, 100);
	assert_non_null(b);
	assert_int_equal(k.n, 2);
	assert_false(k.warned);
	k8s_names_release(&k);
}

static void test_resolve_wrong_pod_and_nothing(void **state)
{
	struct k8s_names k;
	struct tree t;

	(void)state;
	tree_make(&t);
	k8s_names_init(&k, NULL);
	/* the bundle is another pod's: never taken */
	assert_null(k8s_names_lookup(&k, CID, UID2, 100));
	assert_true(k.warned);
	/* no starter, no state root: nothing, asked again next time */
	assert_null(k8s_names_lookup(&k, OTHER, UID, 0));
	assert_int_equal(k.n, 1);
	assert_int_equal(k.c[0].err, -ESTALE);
	/* a starter with no bundle beside it: nothing, asked again too */
	assert_null(k8s_names_lookup(&k, OTHER, UID, 100));
	assert_int_equal(k.n, 1);
	tree_remove(&t);
	k8s_names_release(&k);
}

static bool keep_uid(const char *uid, void *arg)
{
	return strcmp(uid, arg) == 0;
}

static void test_resolve_state_root_and_bundle_dir(void **state)
{
	struct k8s_names k;
	struct tree t;
	char path[512], dir[512];

	(void)state;
	tree_make(&t);
	snprintf(path, sizeof(path), "%s/run", t.root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/run/containerd", t.root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/run/containerd/io.containerd.runtime.v2.task", t.root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/run/containerd/io.containerd.runtime.v2.task/k8s.io",
		 t.root);
	mkdir(path, 0755);
	put(path, CID, "containerd_container.json");
	snprintf(dir, sizeof(dir), "%s/mine", t.root);
	mkdir(dir, 0755);
	put(dir, OTHER, "containerd_sandbox.json");

	k8s_names_init(&k, dir);
	/* pid 7 has no working directory here: the state root has it */
	assert_non_null(k8s_names_lookup(&k, CID, UID, 7));
	/* the user's directory */
	assert_non_null(k8s_names_lookup(&k, OTHER, UID, 0));
	assert_false(k.warned);
	/* the pod went: its containers are forgotten */
	k8s_names_prune(&k, keep_uid, (void *)UID2);
	assert_int_equal(k.n, 0);
	tree_remove(&t);
	k8s_names_release(&k);
}

static void test_cgroup_namespace_path(void **state)
{
	static const char text[] = "0::/../kubepods/besteffort/pod" UID "/" CID "\n";
	struct job_attribution a;

	(void)state;
	jobs_attribute(text, sizeof(text) - 1, NULL, 0, 0, 0, &a);
	assert_string_equal(a.scheduler, "k8s");
	assert_string_equal(a.job_id, UID);
	assert_string_equal(a.container_id, CID);
	assert_string_equal(a.qos, "besteffort");
	assert_string_equal(a.cgroup, "/kubepods/besteffort/pod" UID);
}

/* protobuf by hand: a length-delimited field (lengths under 16384) */
static size_t pb(uint8_t *out, int field, const void *data, size_t len)
{
	size_t n = 0;

	out[n++] = (uint8_t)(field << 3 | 2);
	if (len >= 128)
		out[n++] = (uint8_t)(len | 0x80);
	out[n++] = (uint8_t)(len >= 128 ? len >> 7 : len);
	memcpy(out + n, data, len);
	return n + len;
}

static size_t pb_str(uint8_t *out, int field, const char *s)
{
	return pb(out, field, s, strlen(s));
}

/* A PodSandbox: metadata{name, uid}, labels as key, value pairs. */
static size_t sandbox_msg(uint8_t *out, const char *uid, const char *const *labels)
{
	uint8_t meta[256], entry[256], sb[1024];
	size_t n = 0, m = 0;

	m += pb_str(meta + m, 1, "p");
	m += pb_str(meta + m, 2, uid);
	n += pb_str(sb + n, 1, "sandbox-id");
	n += pb(sb + n, 2, meta, m);
	sb[n++] = 3 << 3; /* state: varint 0 */
	sb[n++] = 0;
	for (; labels && labels[0]; labels += 2) {
		size_t e = pb_str(entry, 1, labels[0]);

		e += pb_str(entry + e, 2, labels[1]);
		n += pb(sb + n, 5, entry, e);
	}
	return pb(out, 1, sb, n);
}

struct owners {
	struct cri_owner o[4];
	int n;
};

static void got_owner(const struct cri_owner *o, void *arg)
{
	struct owners *w = arg;

	assert_true(w->n < 4);
	w->o[w->n++] = *o;
}

static void test_cri_owner_hints(void **state)
{
	static const char *const job[] = {"app.kubernetes.io/name", "trainer",
					  "batch.kubernetes.io/job-name", "bar-job", NULL};
	static const char *const none[] = {"team", "ml", NULL};
	static const char *const app[] = {"app.kubernetes.io/name", "web", NULL};
	uint8_t msg[4096];
	struct owners w = {0};
	size_t n = 0;

	(void)state;
	n += sandbox_msg(msg + n, UID, job);
	n += sandbox_msg(msg + n, UID2, none);
	n += sandbox_msg(msg + n, "0f0e0d0c-0b0a-0908-0706-050403020100", app);
	assert_int_equal(cri_decode_sandboxes(msg, n, got_owner, &w), 0);
	assert_int_equal(w.n, 3);
	assert_string_equal(w.o[0].uid, UID);
	assert_string_equal(w.o[0].label, "batch.kubernetes.io/job-name"); /* the stronger */
	assert_string_equal(w.o[0].name, "bar-job");
	assert_string_equal(w.o[1].uid, UID2);
	assert_string_equal(w.o[1].label, ""); /* listed, no owner */
	assert_string_equal(w.o[2].label, "app.kubernetes.io/name");
	assert_string_equal(w.o[2].name, "web");
	/* cut short: what came before is given, then -EINVAL */
	w.n = 0;
	assert_int_equal(cri_decode_sandboxes(msg, n - 3, got_owner, &w), -EINVAL);
	assert_int_equal(w.n, 2);
	assert_int_equal(cri_decode_sandboxes(msg, 0, got_owner, &w), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_containerd_container),
	    cmocka_unit_test(test_containerd_sandbox),
	    cmocka_unit_test(test_crio_container),
	    cmocka_unit_test(test_not_a_pod),
	    cmocka_unit_test(test_too_long),
	    cmocka_unit_test(test_resolve_through_shim),
	    cmocka_unit_test(test_resolve_wrong_pod_and_nothing),
	    cmocka_unit_test(test_resolve_state_root_and_bundle_dir),
	    cmocka_unit_test(test_cgroup_namespace_path),
	    cmocka_unit_test(test_cri_owner_hints),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
