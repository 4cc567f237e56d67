/*
 * k8s.h - who a Kubernetes pod is, read on the node: the annotations the
 * container runtime writes into each container's OCI bundle (config.json).
 *
 * containerd's CRI plugin writes io.kubernetes.cri.sandbox-namespace,
 * -name, -uid, container-name and container-type ("sandbox" for the pause
 * container); CRI-O copies the kubelet's labels (io.kubernetes.pod.*,
 * io.kubernetes.container.name) and io.kubernetes.cri-o.ContainerType.
 * Nothing here guesses: a name is what a bundle says, or nothing.
 *
 * k8s_parse_bundle is pure (text in, struct out).  The resolver
 * (k8s_names) finds a container's bundle, once per container ID, through
 * sysroot: the working directory of the process that started the
 * container (containerd's shim: the pod's first bundle, its siblings beside
 * it; CRI-O's conmon: the container's own bundle), then the runtimes'
 * state roots, then the --k8s-bundle-dir the user gave.  A bundle is taken
 * only when its pod UID is the cgroup's.  Errors: 0 or -errno.  Not
 * thread-safe.
 */
#ifndef JOBSCOPE_K8S_H
#define JOBSCOPE_K8S_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attrib/attrib.h"

#define K8S_NAMESPACE_MAX 64  /* a DNS label: 63 characters */
#define K8S_POD_MAX	  254 /* a DNS subdomain: 253 */
#define K8S_UID_MAX	  40  /* 36 */
#define K8S_CONTAINER_MAX 64  /* a DNS label: 63 */
/* config.json is a few KiB; a bundle bigger than this is not read. */
#define K8S_BUNDLE_MAX (1u << 20)

struct k8s_bundle {
	char namespace_[K8S_NAMESPACE_MAX];
	char pod[K8S_POD_MAX];
	char uid[K8S_UID_MAX];
	char container[K8S_CONTAINER_MAX]; /* "" for a sandbox */
	bool sandbox;			   /* the pod's pause container */
};

/*
 * config.json's "annotations" into out.  0 when they name the pod (its
 * namespace, name and UID; a container also its name); -ENODATA when they
 * do not (no annotations, not a Kubernetes container); -EINVAL when the
 * text is no JSON object or a value is too long for its field.
 */
int k8s_parse_bundle(const char *text, size_t len, struct k8s_bundle *out);

/* What the resolver knows of one container. */
struct k8s_container_names {
	char id[JOB_CONTAINER_MAX];
	int err; /* 0: b holds its names; else why not (-errno) */
	struct k8s_bundle b;
};

struct k8s_names {
	const char *bundle_dir; /* --k8s-bundle-dir, or NULL */
	struct k8s_container_names *c;
	size_t n, alloc;
	bool warned; /* the one warning said */
};

void k8s_names_init(struct k8s_names *k, const char *bundle_dir);
void k8s_names_release(struct k8s_names *k);

/*
 * The names of container `id` of the pod `pod_uid`, looked up the first
 * time the ID is asked (starter_pid: the process that started it, its
 * shim or conmon; 0 if unknown) and kept: NULL when nothing resolves
 * (said once in the log, with the cause).  "No bundle there" is not
 * kept: the container's next process may have another starter (runc's
 * init is runc's child before it is the shim's); a refusal, another
 * pod's bundle or one without names is.
 */
const struct k8s_bundle *k8s_names_lookup(struct k8s_names *k, const char *id, const char *pod_uid,
					  int32_t starter_pid);

/* Forgets the containers of pods for which keep(uid, arg) says false. */
void k8s_names_prune(struct k8s_names *k, bool (*keep)(const char *uid, void *arg), void *arg);

#endif
