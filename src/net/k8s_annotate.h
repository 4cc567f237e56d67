/*
 * k8s_annotate.h - results written back to Kubernetes as annotations
 * (`--k8s-annotate`, docs/kubernetes-annotations.md): each pod job's
 * figures on its pod, each node's GPUs and use on its node, by JSON merge
 * patch to the API server with the ServiceAccount's token and CA.
 *
 * One thread with a read connection of its own to the store looks every
 * K8S_SCAN_MS (at most the interval): a pod job (scheduler "k8s") whose
 * name is "NAMESPACE/POD", running or ended within two intervals, is due
 * when its last look is an interval old; its report (report_query_run, as
 * JSON) gives its annotations (k8s_patch.h), sent only when one of them
 * moved.  Nodes likewise from the store's node and GPU lists.  Requests:
 * at most K8S_MAX_RPS a second, one at a time; the token file is read
 * again when it changes and after a 401; 403 turns the writer off (one
 * warning); 404 drops that pod or node; 429, 5xx and network errors wait
 * (Retry-After when the server gives one, else 1 s doubling to 60 s) and
 * try again.  Ingest and ticks never wait for it.
 *
 * Lifecycle: k8s_annotate_start (after the store exists) checks the
 * options, the token and the CA file (0, or -errno said why), then starts
 * the thread; k8s_annotate_stop stops and joins it (NULL: nothing).
 * k8s_annotate_get_stats is safe from any thread.
 */
#ifndef JOBSCOPE_K8S_ANNOTATE_H
#define JOBSCOPE_K8S_ANNOTATE_H

#include <stdbool.h>
#include <stdint.h>

#define K8S_DEFAULT_INTERVAL_MS (5 * 60 * 1000)
#define K8S_SA_DIR		"/var/run/secrets/kubernetes.io/serviceaccount"
#define K8S_SCAN_MS		10000
#define K8S_MAX_RPS		5
#define K8S_BACKOFF_MAX_MS	60000
#define K8S_RETRY_AFTER_MAX_MS	600000
#define K8S_REQUEST_TIMEOUT_S	10

/* The options (cmd_agent.c, cmd_head.c). */
struct k8s_annotate_opts {
	bool enabled;
	const char *api;	/* "https://HOST:PORT"; NULL: $KUBERNETES_SERVICE_HOST/_PORT */
	const char *token_file; /* NULL: K8S_SA_DIR/token */
	const char *ca_file;	/* NULL: K8S_SA_DIR/ca.crt */
	const char *prefix;	/* NULL: K8S_DEFAULT_PREFIX */
	int64_t interval_ms;	/* per object at most this often; 0: K8S_DEFAULT_INTERVAL_MS */
	/*
	 * The agent: its own node only (the store's hostname), named in
	 * Kubernetes by $NODE_NAME when set.  NULL (the head): every node.
	 */
	const char *local_node;
	/* hidden (tests): "UID=NS/POD,..." names for pod jobs whose store row has none */
	const char *test_pod_names;
};

struct k8s_annotate_stats {
	uint64_t patched, unchanged, failed; /* patches answered 2xx; looks with nothing moved */
	bool disabled;			     /* a 403 turned it off */
};

struct k8s_annotate;
int k8s_annotate_start(const struct k8s_annotate_opts *o, const char *db_path,
		       struct k8s_annotate **out);
void k8s_annotate_stop(struct k8s_annotate *k);
void k8s_annotate_get_stats(struct k8s_annotate *k, struct k8s_annotate_stats *out);

#endif
