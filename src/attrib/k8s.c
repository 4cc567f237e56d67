/*
 * k8s.c - a pod's and a container's names from the container's OCI bundle
 * (k8s.h): the annotations parser, and the resolver that finds the bundle
 * (the starter's working directory, the runtimes' state roots,
 * --k8s-bundle-dir) and keeps what it found per container ID.
 */
#include "attrib/k8s.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "common/sysroot.h"

/* The annotation keys, containerd's CRI plugin first, then CRI-O's. */
static const char *const ns_keys[] = {"io.kubernetes.cri.sandbox-namespace",
				      "io.kubernetes.pod.namespace", NULL};
static const char *const pod_keys[] = {"io.kubernetes.cri.sandbox-name", "io.kubernetes.pod.name",
				       NULL};
static const char *const uid_keys[] = {"io.kubernetes.cri.sandbox-uid", "io.kubernetes.pod.uid",
				       NULL};
static const char *const container_keys[] = {"io.kubernetes.cri.container-name",
					     "io.kubernetes.container.name", NULL};
static const char *const type_keys[] = {"io.kubernetes.cri.container-type",
					"io.kubernetes.cri-o.ContainerType", NULL};

/* The first of keys that is a string: 0 copied, -ENODATA none, -EINVAL too long. */
static int annotation(const cJSON *ann, const char *const *keys, char *out, size_t size)
{
	out[0] = '\0';
	for (; *keys; keys++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(ann, *keys);
		size_t n;

		if (!cJSON_IsString(v) || !v->valuestring)
			continue;
		n = strlen(v->valuestring);
		if (n >= size)
			return -EINVAL;
		memcpy(out, v->valuestring, n + 1);
		return 0;
	}
	return -ENODATA;
}

int k8s_parse_bundle(const char *text, size_t len, struct k8s_bundle *out)
{
	cJSON *root;
	const cJSON *ann;
	char type[16];
	int ret;

	memset(out, 0, sizeof(*out));
	if (len > K8S_BUNDLE_MAX)
		return -EINVAL;
	root = cJSON_ParseWithLength(text, len);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return -EINVAL;
	}
	ann = cJSON_GetObjectItemCaseSensitive(root, "annotations");
	if (!cJSON_IsObject(ann)) {
		ret = -ENODATA;
		goto out_delete;
	}
	ret = annotation(ann, ns_keys, out->namespace_, sizeof(out->namespace_));
	if (!ret)
		ret = annotation(ann, pod_keys, out->pod, sizeof(out->pod));
	if (!ret)
		ret = annotation(ann, uid_keys, out->uid, sizeof(out->uid));
	if (ret)
		goto out_delete;
	if (annotation(ann, type_keys, type, sizeof(type)) == 0)
		out->sandbox = strcmp(type, "sandbox") == 0;
	ret = annotation(ann, container_keys, out->container, sizeof(out->container));
	if (ret == -ENODATA && out->sandbox)
		ret = 0; /* containerd names no container in a sandbox's bundle */
	if (ret == 0 && out->sandbox)
		out->container[0] = '\0';
	if (ret == 0 && (!out->namespace_[0] || !out->pod[0] || !out->uid[0] ||
			 (!out->sandbox && !out->container[0])))
		ret = -ENODATA;
out_delete:
	cJSON_Delete(root);
	if (ret)
		memset(out, 0, sizeof(*out));
	return ret;
}

void k8s_names_init(struct k8s_names *k, const char *bundle_dir)
{
	memset(k, 0, sizeof(*k));
	k->bundle_dir = bundle_dir && bundle_dir[0] ? bundle_dir : NULL;
}

void k8s_names_release(struct k8s_names *k)
{
	free(k->c);
	memset(k, 0, sizeof(*k));
}

/*
 * One candidate file: 0 and *b when it is a bundle of that pod; else
 * -errno (-ENOENT none there, -EACCES not ours to read, -ESTALE another
 * pod's, -ENODATA no pod's names).
 */
static int try_bundle(const char *path, bool under_sysroot, const char *pod_uid,
		      struct k8s_bundle *b)
{
	struct strbuf sb;
	int ret;

	strbuf_init(&sb, K8S_BUNDLE_MAX);
	if (under_sysroot) {
		ret = sysroot_read(path, &sb);
	} else {
		/* the user's own directory, not a kernel path */
		FILE *f = fopen(path, "re");
		char chunk[4096];
		size_t n;

		ret = f ? 0 : -errno;
		while (f && !ret && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			ret = strbuf_add(&sb, chunk, n);
		if (f)
			fclose(f);
	}
	if (!ret)
		ret = k8s_parse_bundle(sb.buf ? sb.buf : "", sb.len, b);
	if (!ret && strcmp(b->uid, pod_uid) != 0)
		ret = -ESTALE;
	strbuf_release(&sb);
	return ret;
}

/* Keeps the most telling of two failures: a refusal or a wrong pod over "none there". */
static int worse(int a, int b)
{
	if (a == -ENOENT || a == 0)
		return b;
	return a;
}

/*
 * Whether pid's working directory is container id's own bundle (CRI-O's
 * conmon: .../overlay-containers/<id>/userdata), not a sibling's.
 */
static bool cwd_names(int32_t pid, const char *id)
{
	char link[64], path[1024], target[1024];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%" PRId32 "/cwd", pid);
	if (sysroot_path(path, sizeof(path), link) != 0)
		return false;
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	return strstr(target, id) != NULL;
}

/* The bundle of container id, wherever it is first found. */
static int find_bundle(const struct k8s_names *k, const char *id, const char *pod_uid,
		       int32_t starter_pid, struct k8s_bundle *b, char *why, size_t why_size)
{
	/* each root, then what follows the container ID */
	static const char *const roots[][2] = {
	    {"/run/containerd/io.containerd.runtime.v2.task/k8s.io/", "/config.json"},
	    {"/run/k3s/containerd/io.containerd.runtime.v2.task/k8s.io/", "/config.json"},
	    {"/run/containers/storage/overlay-containers/", "/userdata/config.json"},
	};
	char path[1024];
	int ret, err = -ENOENT;

	why[0] = '\0';
	if (starter_pid > 0) {
		/* containerd's shim: the pod's bundles side by side; conmon: its own */
		snprintf(path, sizeof(path), "/proc/%" PRId32 "/cwd/../%s/config.json", starter_pid,
			 id);
		ret = try_bundle(path, true, pod_uid, b);
		if (ret == 0)
			return 0;
		if (ret != -ENOENT)
			snprintf(why, why_size, "%s", path);
		err = worse(err, ret);
		if (cwd_names(starter_pid, id)) {
			snprintf(path, sizeof(path), "/proc/%" PRId32 "/cwd/config.json",
				 starter_pid);
			ret = try_bundle(path, true, pod_uid, b);
			if (ret == 0)
				return 0;
			if (ret != -ENOENT && !why[0])
				snprintf(why, why_size, "%s", path);
			err = worse(err, ret);
		}
	}
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(path, sizeof(path), "%s%s%s", roots[i][0], id, roots[i][1]);
		ret = try_bundle(path, true, pod_uid, b);
		if (ret == 0)
			return 0;
		if (ret != -ENOENT && !why[0])
			snprintf(why, why_size, "%s", path);
		err = worse(err, ret);
	}
	if (k->bundle_dir) {
		static const char *const under[] = {"/config.json", "/userdata/config.json"};

		for (size_t i = 0; i < 2; i++) {
			snprintf(path, sizeof(path), "%s/%s%s", k->bundle_dir, id, under[i]);
			ret = try_bundle(path, false, pod_uid, b);
			if (ret == 0)
				return 0;
			if (ret != -ENOENT && !why[0])
				snprintf(why, why_size, "%s", path);
			err = worse(err, ret);
		}
	}
	return err;
}

static void warn_once(struct k8s_names *k, const char *id, const char *pod_uid, int err,
		      const char *why)
{
	const char *cause;

	if (k->warned)
		return;
	k->warned = true;
	switch (err) {
	case -EACCES:
	case -EPERM:
		cause = "the agent may not read other processes' working directories"
			" (it needs CAP_SYS_PTRACE)";
		break;
	case -ESTALE:
		cause = "the bundle found is another pod's";
		break;
	case -ENODATA:
		cause = "the bundle names no pod (no Kubernetes annotations)";
		break;
	case -ENOENT:
		cause = "no bundle found (neither the shim's nor conmon's working directory, nor"
			" the runtimes' state directories, nor --k8s-bundle-dir)";
		break;
	default:
		cause = strerror(-err);
		break;
	}
	log_warn(0,
		 "pod %s: cannot read the names of container %.12s%s%s: %s; its pods keep"
		 " no names and are keyed by UID (said once)",
		 pod_uid, id, why[0] ? " at " : "", why, cause);
}

const struct k8s_bundle *k8s_names_lookup(struct k8s_names *k, const char *id, const char *pod_uid,
					  int32_t starter_pid)
{
	struct k8s_container_names *c;
	char why[1100];

	if (!id || !id[0] || !pod_uid || !pod_uid[0])
		return NULL;
	for (size_t i = 0; i < k->n; i++)
		if (strcmp(k->c[i].id, id) == 0)
			return k->c[i].err ? NULL : &k->c[i].b;
	if (k->n == k->alloc) {
		size_t n = k->alloc ? k->alloc * 2 : 16;
		struct k8s_container_names *grown = realloc(k->c, n * sizeof(*grown));

		if (!grown)
			return NULL; /* asked again next time */
		k->c = grown;
		k->alloc = n;
	}
	c = &k->c[k->n++];
	memset(c, 0, sizeof(*c));
	snprintf(c->id, sizeof(c->id), "%s", id);
	c->err = find_bundle(k, id, pod_uid, starter_pid, &c->b, why, sizeof(why));
	if (c->err == -ENOENT && starter_pid <= 0) {
		/* seen without its starter (runc's init, runc gone since): ask again later */
		k->n--;
		return NULL;
	}
	if (c->err) {
		warn_once(k, id, pod_uid, c->err, why);
		/* nothing there (yet?) is asked again by the container's next process */
		if (c->err == -ENOENT) {
			k->n--;
			return NULL;
		}
		memset(&c->b, 0, sizeof(c->b));
		snprintf(c->b.uid, sizeof(c->b.uid), "%s", pod_uid);
		return NULL;
	}
	return &c->b;
}

void k8s_names_prune(struct k8s_names *k, bool (*keep)(const char *uid, void *arg), void *arg)
{
	size_t out = 0;

	for (size_t i = 0; i < k->n; i++)
		if (keep(k->c[i].b.uid, arg))
			k->c[out++] = k->c[i];
	k->n = out;
}
