/*
 * k8s_patch.h - what jobscope writes back to Kubernetes as annotations
 * (docs/kubernetes-annotations.md), and the JSON merge patch (RFC 7386)
 * that writes it.  Pure: no I/O, no clock, no global state; the writer
 * (k8s_annotate.h) does the HTTP.
 *
 * A set of annotations is a list of (name, value) strings, names without
 * the prefix.  k8s_pod_annots reads a job's report JSON (report_json.c's
 * object, docs/report-json.md) into a pod's set; k8s_node_annots reads the
 * store's node and GPU lists (store_query_nodes, store_query_gpus) into a
 * node's set.  A figure the report does not know (null, absent) has no
 * annotation: missing is not zero.  k8s_patch_body turns the set sent last
 * and the set now into {"metadata":{"annotations":{...}}}: every name of
 * now with its value, every name sent before and gone now as null (which
 * deletes it).
 *
 * Ownership: a set owns copies of its strings (k8s_annots_release frees
 * them); the functions only read their inputs.  Errors: 0 or -errno:
 * -EINVAL for input that is not what it should be (not JSON, a name or
 * prefix Kubernetes refuses), -E2BIG past a limit below, -ENOMEM.
 * Thread-safe (no shared state).
 */
#ifndef JOBSCOPE_K8S_PATCH_H
#define JOBSCOPE_K8S_PATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"

#define K8S_DEFAULT_PREFIX     "jobscope.io"
#define K8S_NAME_MAX	       63	   /* an annotation's name after the prefix */
#define K8S_PREFIX_MAX	       253	   /* a DNS subdomain */
#define K8S_VALUE_MAX	       1024	   /* ours: the verdicts' list is cut to fit */
#define K8S_ANNOTS_MAX	       128	   /* ours: annotations of one object */
#define K8S_ANNOTS_BYTES_MAX   (256 << 10) /* the API server's limit on all of an object's */
#define K8S_NS_LEN_MAX	       63	   /* a DNS label */
#define K8S_OBJECT_NAME_MAX    253	   /* a DNS subdomain (pods, nodes) */
#define K8S_GPUS_ANNOTATED_MAX 16	   /* per-GPU annotations for the first 16 GPUs */
/* Set when a patch is sent, never compared: it alone does not make a figure move. */
#define K8S_ANNOT_UPDATED "updated"

struct k8s_annot {
	char *name; /* without the prefix */
	char *value;
};

struct k8s_annots {
	struct k8s_annot *a;
	size_t n, alloc;
};

void k8s_annots_init(struct k8s_annots *s);
void k8s_annots_release(struct k8s_annots *s);
/* Adds name = value, or replaces the value of name: 0, -EINVAL (a bad name), -E2BIG, -ENOMEM. */
int k8s_annots_set(struct k8s_annots *s, const char *name, const char *value);
const char *k8s_annots_get(const struct k8s_annots *s, const char *name);
/* Moves src into dst (dst's old strings freed); src is left empty. */
void k8s_annots_move(struct k8s_annots *dst, struct k8s_annots *src);
/* Whether some name other than K8S_ANNOT_UPDATED was added, changed or removed. */
bool k8s_annots_moved(const struct k8s_annots *prev, const struct k8s_annots *now);

/* An annotation name (after the prefix): 1-63 of [A-Za-z0-9-_.], alphanumeric at both ends. */
bool k8s_name_valid(const char *name);
/* A prefix: a DNS subdomain (lowercase labels of [a-z0-9-], 1-253 characters). */
bool k8s_prefix_valid(const char *prefix);
/* A namespace (DNS label) and a pod or node name (DNS subdomain). */
bool k8s_namespace_valid(const char *ns, size_t len);
bool k8s_object_name_valid(const char *name, size_t len);
/*
 * A pod job's name "NAMESPACE/POD" into its two parts (sizes at least
 * K8S_NS_LEN_MAX + 1 and K8S_OBJECT_NAME_MAX + 1): 0, or -EINVAL when
 * it is not one '/' between a valid namespace and a valid pod name.
 */
int k8s_split_pod(const char *job_name, char *ns, size_t ns_size, char *pod, size_t pod_size);

/* A job's report JSON into a pod's annotations (s is emptied first). */
int k8s_pod_annots(const char *report_json, size_t len, struct k8s_annots *s);
/*
 * A node's annotations from store_query_nodes' {"nodes": [...]} and
 * store_query_gpus' {"gpus": [...]} (s emptied first): -ENOENT when the
 * node is in neither.
 */
int k8s_node_annots(const char *nodes_json, size_t nodes_len, const char *gpus_json,
		    size_t gpus_len, const char *node, struct k8s_annots *s);

/* Each node named in store_query_nodes' {"nodes": [...]}: fn's non-zero stops, returned. */
int k8s_each_node(const char *nodes_json, size_t len, int (*fn)(const char *node, void *arg),
		  void *arg);

/*
 * The merge patch from prev (what the object holds of ours) to now,
 * every name under prefix ("jobscope.io/cpu-cores"), appended to out:
 * -EINVAL for a bad prefix, -E2BIG when the annotations would be over
 * K8S_ANNOTS_BYTES_MAX (out unchanged then).
 */
int k8s_patch_body(const char *prefix, const struct k8s_annots *prev, const struct k8s_annots *now,
		   struct strbuf *out);

#endif
