/*
 * k8s_annotate.c - the annotation writer's thread (k8s_annotate.h): the
 * objects it follows and what it sent each, the look at the store, and
 * the PATCH requests with their token, pace and waits.
 *
 * Map: objects (pods and nodes, one table), the token, the wait that a
 * stop cuts short, one request and what its status means, a pod's and a
 * node's turn, the loop, start and stop.
 */
#include "net/k8s_annotate.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/token.h"
#include "http/curl_dl.h"
#include "net/k8s_patch.h"
#include "report/report_query.h"
#include "store/queries.h"

#define K8S_TOKEN_MAX	(64 << 10)
#define K8S_ANSWER_MAX	(1 << 20)
#define K8S_REPORT_MAX	((size_t)16 << 20)
#define K8S_URL_MAX	1024
#define K8S_OBJECTS_MAX 100000
#define K8S_JOB_KEY_MAX 128

/* A pod or node followed: what it holds of ours, and when it was looked at. */
struct k8s_object {
	bool node;
	char key[K8S_JOB_KEY_MAX];  /* a pod: its job's key; a node: its store name */
	char path[K8S_URL_MAX / 2]; /* /api/v1/namespaces/NS/pods/POD or /api/v1/nodes/N */
	int64_t last_look_ms;	    /* 0: never */
	bool dropped;		    /* 404: not there, no more patches */
	bool seen;		    /* in this look at the store */
	struct k8s_annots sent;
};

struct k8s_annotate {
	struct k8s_annotate_opts o;
	char api[K8S_URL_MAX];
	char token_file[512], ca_file[512], prefix[K8S_PREFIX_MAX + 1], node_name[256];
	int64_t interval_ms;
	struct store *st;
	pthread_t thread;
	pthread_mutex_t lock; /* stop, stats */
	pthread_cond_t wake;
	bool stop;
	struct k8s_annotate_stats stats;
	/* the thread's own */
	CURL *curl;
	char token[K8S_TOKEN_MAX];
	struct stat token_st;
	int64_t next_request_ms; /* K8S_MAX_RPS's pace */
	int64_t backoff_until_ms, backoff_ms;
	bool warned_no_name, warned_401;
	struct k8s_object *objs;
	size_t nobjs, alloc;
};

/* Object table */

static struct k8s_object *object_get(struct k8s_annotate *k, bool node, const char *key)
{
	struct k8s_object *obj;

	for (size_t i = 0; i < k->nobjs; i++)
		if (k->objs[i].node == node && strcmp(k->objs[i].key, key) == 0)
			return &k->objs[i];
	if (k->nobjs == K8S_OBJECTS_MAX)
		return NULL;
	if (k->nobjs == k->alloc) {
		size_t alloc = k->alloc ? k->alloc * 2 : 64;
		struct k8s_object *na = realloc(k->objs, alloc * sizeof(*na));

		if (!na)
			return NULL;
		k->objs = na;
		k->alloc = alloc;
	}
	obj = &k->objs[k->nobjs++];
	memset(obj, 0, sizeof(*obj));
	obj->node = node;
	snprintf(obj->key, sizeof(obj->key), "%s", key);
	k8s_annots_init(&obj->sent);
	return obj;
}

/* Those the last look did not see are gone (their job left the window). */
static void objects_prune(struct k8s_annotate *k)
{
	size_t j = 0;

	for (size_t i = 0; i < k->nobjs; i++) {
		if (!k->objs[i].seen) {
			k8s_annots_release(&k->objs[i].sent);
			continue;
		}
		k->objs[i].seen = false;
		k->objs[j++] = k->objs[i];
	}
	k->nobjs = j;
}

/* Token: read again when its file changed (projected tokens are replaced), or when forced. */
static int token_refresh(struct k8s_annotate *k, bool force)
{
	struct stat sb;

	if (stat(k->token_file, &sb))
		return -errno;
	if (!force && sb.st_ino == k->token_st.st_ino && sb.st_size == k->token_st.st_size &&
	    sb.st_mtim.tv_sec == k->token_st.st_mtim.tv_sec &&
	    sb.st_mtim.tv_nsec == k->token_st.st_mtim.tv_nsec)
		return 0;
	k->token_st = sb;
	return token_load(k->token_file, k->token, sizeof(k->token));
}

/* Waits until ms (the real clock) or a stop: false when stopping. */
static bool wait_until(struct k8s_annotate *k, int64_t ms)
{
	bool go;

	pthread_mutex_lock(&k->lock);
	while (!k->stop && time_now_ms() < ms) {
		struct timespec until;

		time_deadline_ms(&until, ms - time_now_ms());
		pthread_cond_timedwait(&k->wake, &k->lock, &until);
	}
	go = !k->stop;
	pthread_mutex_unlock(&k->lock);
	return go;
}

static void count(struct k8s_annotate *k, uint64_t *what)
{
	pthread_mutex_lock(&k->lock);
	(*what)++;
	pthread_mutex_unlock(&k->lock);
}

/* One PATCH: the HTTP status (0: no answer, said in err) and Retry-After in ms (0: none). */
static long patch(struct k8s_annotate *k, const char *path, const struct strbuf *body,
		  int64_t *retry_after_ms, char *err, size_t errsize)
{
	char url[K8S_URL_MAX * 2], auth[K8S_TOKEN_MAX + 32];
	struct curl_slist *headers = NULL, *h;
	struct strbuf answer;
	curl_off_t retry_after = 0;
	long status = 0;
	CURLcode rc;

	*retry_after_ms = 0;
	snprintf(url, sizeof(url), "%s%s?fieldManager=jobscope", k->api, path);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", k->token);
	h = curl_fn.slist_append(NULL, auth);
	headers = h ? curl_fn.slist_append(h, "Content-Type: application/merge-patch+json") : NULL;
	headers = headers ? curl_fn.slist_append(headers, "Accept: application/json") : NULL;
	if (!headers) {
		curl_fn.slist_free_all(h);
		snprintf(err, errsize, "out of memory");
		return 0;
	}
	memset(auth, 0, sizeof(auth));
	strbuf_init(&answer, K8S_ANSWER_MAX);
	if (!k->curl)
		k->curl = curl_dl_handle(url, &answer, NULL, K8S_REQUEST_TIMEOUT_S, true);
	if (!k->curl) {
		snprintf(err, errsize, "libcurl cannot make a handle");
		goto out_free;
	}
	curl_fn.easy_setopt(k->curl, CURLOPT_URL, url);
	curl_fn.easy_setopt(k->curl, CURLOPT_WRITEDATA, &answer);
	curl_fn.easy_setopt(k->curl, CURLOPT_CUSTOMREQUEST, "PATCH");
	curl_fn.easy_setopt(k->curl, CURLOPT_POSTFIELDS, strbuf_str(body));
	curl_fn.easy_setopt(k->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
	curl_fn.easy_setopt(k->curl, CURLOPT_HTTPHEADER, headers);
	curl_fn.easy_setopt(k->curl, CURLOPT_CAINFO, k->ca_file);
	rc = curl_fn.easy_perform(k->curl);
	if (rc != CURLE_OK) {
		snprintf(err, errsize, "%s", curl_fn.easy_strerror(rc));
		goto out_free;
	}
	curl_fn.easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, &status);
	if (curl_fn.easy_getinfo(k->curl, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK &&
	    retry_after > 0)
		*retry_after_ms = retry_after * 1000 > K8S_RETRY_AFTER_MAX_MS
				      ? K8S_RETRY_AFTER_MAX_MS
				      : (int64_t)retry_after * 1000;
	/* the API server's Status says why: its first line is enough for a log */
	snprintf(err, errsize, "%.200s", strbuf_str(&answer));
	for (char *c = err; *c; c++)
		if ((unsigned char)*c < 0x20)
			*c = ' ';
out_free:
	curl_fn.easy_setopt(k->curl, CURLOPT_HTTPHEADER, NULL);
	curl_fn.slist_free_all(headers);
	strbuf_release(&answer);
	return status;
}

static void backoff(struct k8s_annotate *k, int64_t retry_after_ms)
{
	if (retry_after_ms > 0) {
		k->backoff_ms = retry_after_ms;
	} else {
		k->backoff_ms = k->backoff_ms ? k->backoff_ms * 2 : 1000;
		if (k->backoff_ms > K8S_BACKOFF_MAX_MS)
			k->backoff_ms = K8S_BACKOFF_MAX_MS;
	}
	k->backoff_until_ms = time_now_ms() + k->backoff_ms;
}

enum sent { SENT_OK, SENT_DROPPED, SENT_SKIPPED, SENT_WAIT, SENT_OFF };

/*
 * Sends obj's patch from what it holds to now, paced, with a second try
 * after a 401 whose token file holds a new token.  SENT_WAIT: stop this
 * look (a stop, or a backoff to wait out).
 */
static enum sent send_patch(struct k8s_annotate *k, struct k8s_object *obj, struct k8s_annots *now)
{
	char updated[32], err[256];
	struct strbuf body;
	int64_t retry_after_ms;
	enum sent result = SENT_WAIT;
	long status;
	int ret;

	format_rfc3339_ms(time_now_ms(), updated, sizeof(updated));
	ret = k8s_annots_set(now, K8S_ANNOT_UPDATED, updated);
	strbuf_init(&body, (size_t)K8S_ANNOTS_BYTES_MAX * 2);
	ret = ret ? ret : k8s_patch_body(k->prefix, &obj->sent, now, &body);
	if (ret) {
		log_warn(ret, "k8s: %s: no patch: %s", obj->path, strerror(-ret));
		result = SENT_SKIPPED;
		goto out_free_body;
	}
	for (int tries = 0; tries < 2; tries++) {
		char old[sizeof(k->token)];

		if (!wait_until(k, k->next_request_ms))
			goto out_free_body;
		k->next_request_ms = time_now_ms() + 1000 / K8S_MAX_RPS;
		token_refresh(k, false); /* an unreadable file: the token we have */
		status = patch(k, obj->path, &body, &retry_after_ms, err, sizeof(err));
		if (status != 401)
			break;
		/* a 401: the token expired or was replaced; retry only with another one */
		memcpy(old, k->token, sizeof(old));
		if (token_refresh(k, true) || strcmp(old, k->token) == 0)
			break;
	}
	if (status >= 200 && status < 300) {
		k->backoff_ms = 0;
		k->warned_401 = false;
		k8s_annots_move(&obj->sent, now);
		count(k, &k->stats.patched);
		result = SENT_OK;
	} else if (status == 401) {
		if (!k->warned_401)
			log_warn(0,
				 "k8s: %s: 401 Unauthorized with the token of '%s': waiting for a "
				 "new one (%s)",
				 obj->path, k->token_file, err);
		k->warned_401 = true;
		count(k, &k->stats.failed);
		backoff(k, 0);
	} else if (status == 403) {
		log_warn(0,
			 "k8s: %s: 403 Forbidden (%s): annotations are off; the ServiceAccount "
			 "needs 'patch' on pods and nodes (docs/kubernetes-annotations.md)",
			 obj->path, err);
		pthread_mutex_lock(&k->lock);
		k->stats.disabled = true;
		k->stats.failed++;
		pthread_mutex_unlock(&k->lock);
		result = SENT_OFF;
	} else if (status == 404) {
		log_info("k8s: %s: not found: no more annotations for it", obj->path);
		obj->dropped = true;
		result = SENT_DROPPED;
	} else if (status == 429 || status >= 500 || status == 0) {
		count(k, &k->stats.failed);
		backoff(k, retry_after_ms);
		log_info("k8s: %s: %s%ld (%s): next try in %" PRId64 " ms", obj->path,
			 status ? "HTTP " : "", status, err, k->backoff_ms);
	} else {
		/* refused as it is (400, 422...): again when a figure moves */
		count(k, &k->stats.failed);
		log_warn(0, "k8s: %s: HTTP %ld: %s", obj->path, status, err);
		k8s_annots_move(&obj->sent, now);
		result = SENT_SKIPPED;
	}
out_free_body:
	strbuf_release(&body);
	return result;
}

/* An object's turn: its annotations now, sent when one moved. */
static enum sent object_turn(struct k8s_annotate *k, struct k8s_object *obj, struct k8s_annots *now,
			     int64_t now_ms)
{
	enum sent r;

	if (!k8s_annots_moved(&obj->sent, now)) {
		obj->last_look_ms = now_ms;
		count(k, &k->stats.unchanged);
		return SENT_SKIPPED;
	}
	r = send_patch(k, obj, now);
	if (r != SENT_WAIT)
		obj->last_look_ms = now_ms;
	return r;
}

/* Pods: the hidden test names ("UID=NS/POD,...") for a job without one. */
static bool test_name(const char *list, const char *uid, char *out, size_t size)
{
	size_t ulen = strlen(uid);

	while (list && *list) {
		const char *end = strchr(list, ',');
		size_t len = end ? (size_t)(end - list) : strlen(list);

		if (len > ulen + 1 && strncmp(list, uid, ulen) == 0 && list[ulen] == '=') {
			snprintf(out, size, "%.*s", (int)(len - ulen - 1), list + ulen + 1);
			return true;
		}
		list = end ? end + 1 : NULL;
	}
	return false;
}

struct pod_row {
	char key[K8S_JOB_KEY_MAX];
	char name[K8S_NS_LEN_MAX + K8S_OBJECT_NAME_MAX + 2];
};

struct pod_rows {
	struct k8s_annotate *k;
	struct pod_row *rows;
	size_t n, alloc;
};

static int pod_row(const struct store_row *r, void *arg)
{
	struct pod_rows *pr = arg;
	struct pod_row *row;
	const char *name = r->text[STORE_JOBS_COL_NAME];

	if (strcmp(r->text[STORE_JOBS_COL_SCHEDULER], "k8s") != 0)
		return 0;
	if (pr->n == pr->alloc) {
		size_t alloc = pr->alloc ? pr->alloc * 2 : 64;
		struct pod_row *na = realloc(pr->rows, alloc * sizeof(*na));

		if (!na)
			return -ENOMEM;
		pr->rows = na;
		pr->alloc = alloc;
	}
	row = &pr->rows[pr->n];
	snprintf(row->key, sizeof(row->key), "%s", r->text[STORE_JOBS_COL_KEY]);
	/* the hidden test names first: without them a pod job is named by what attributed it */
	if (!test_name(pr->k->o.test_pod_names, r->text[STORE_JOBS_COL_JOB_ID], row->name,
		       sizeof(row->name)))
		snprintf(row->name, sizeof(row->name), "%s", name);
	pr->n++;
	return 0;
}

/* The pod jobs running or ended within two intervals (and a look). */
static int pods_list(struct k8s_annotate *k, int64_t now_ms, struct pod_rows *pr)
{
	struct store_jobs_filter f = {
	    .state = STORE_JOBS_ALL,
	    .when = {.has_since = true, .since_ms = now_ms - 2 * k->interval_ms - K8S_SCAN_MS},
	    .limit = STORE_JOBS_LIMIT_MAX,
	};
	bool has_next = true;
	int ret = 0;

	if (k->o.local_node)
		f.node = k->o.local_node;
	while (has_next && !ret) {
		struct store_jobs_cursor next;

		ret = store_query_jobs(k->st, &f, pod_row, pr, &has_next, &next);
		f.has_after = true;
		f.after = next;
	}
	return ret;
}

static enum sent pod_turn(struct k8s_annotate *k, const struct pod_row *row, int64_t now_ms)
{
	char ns[K8S_NS_LEN_MAX + 1], pod[K8S_OBJECT_NAME_MAX + 1], err[256];
	struct report_query q = {.job_key = row->key, .format = REPORT_FMT_JSON};
	struct k8s_object *obj;
	struct k8s_annots now;
	struct strbuf report;
	enum sent r = SENT_SKIPPED;
	int ret;

	if (!row->name[0] || k8s_split_pod(row->name, ns, sizeof(ns), pod, sizeof(pod))) {
		if (!k->warned_no_name)
			log_warn(0,
				 "k8s: pod job %s has no name 'NAMESPACE/POD'%s%s%s: pods without "
				 "one are not annotated",
				 row->key, row->name[0] ? " (its name is '" : "", row->name,
				 row->name[0] ? "')" : "");
		k->warned_no_name = true;
		return SENT_SKIPPED;
	}
	obj = object_get(k, false, row->key);
	if (!obj)
		return SENT_SKIPPED;
	obj->seen = true;
	if (obj->dropped || (obj->last_look_ms && now_ms - obj->last_look_ms < k->interval_ms))
		return SENT_SKIPPED;
	snprintf(obj->path, sizeof(obj->path), "/api/v1/namespaces/%s/pods/%s", ns, pod);
	strbuf_init(&report, K8S_REPORT_MAX);
	k8s_annots_init(&now);
	ret = report_query_run(k->st, &q, now_ms, &report, err, sizeof(err));
	if (!ret)
		ret = k8s_pod_annots(strbuf_str(&report), report.len, &now);
	if (ret)
		/* again at the next look (a job just begun may have no rows yet) */
		log_info("k8s: %s: no report for %s: %s", obj->path, row->key,
			 err[0] && ret != -EINVAL ? err : strerror(-ret));
	else
		r = object_turn(k, obj, &now, now_ms);
	k8s_annots_release(&now);
	strbuf_release(&report);
	return r;
}

static enum sent pods_turn(struct k8s_annotate *k, int64_t now_ms)
{
	struct pod_rows pr = {.k = k};
	enum sent r = SENT_OK;

	if (pods_list(k, now_ms, &pr) == 0)
		for (size_t i = 0; i < pr.n && r != SENT_WAIT && r != SENT_OFF; i++)
			r = pod_turn(k, &pr.rows[i], now_ms);
	free(pr.rows);
	return r;
}

/* Nodes: the store's node and GPU lists, as /api/v1/nodes and /api/v1/gpus give them. */
static int node_lists(struct k8s_annotate *k, int64_t now_ms, struct strbuf *nodes,
		      struct strbuf *gpus)
{
	struct jsonw w;
	int ret;

	jsonw_init(&w, nodes, false);
	jsonw_obj_begin(&w);
	jsonw_key(&w, "nodes");
	ret = store_query_nodes(k->st, now_ms, &w);
	jsonw_obj_end(&w);
	ret = ret ? ret : jsonw_error(&w);
	if (ret)
		return ret;
	jsonw_init(&w, gpus, false);
	jsonw_obj_begin(&w);
	jsonw_key(&w, "gpus");
	ret = store_query_gpus(k->st, &w);
	jsonw_obj_end(&w);
	return ret ? ret : jsonw_error(&w);
}

static enum sent node_turn(struct k8s_annotate *k, const char *node, const struct strbuf *nodes,
			   const struct strbuf *gpus, int64_t now_ms)
{
	const char *k8s_name = k->o.local_node && k->node_name[0] ? k->node_name : node;
	struct k8s_object *obj;
	struct k8s_annots now;
	enum sent r = SENT_SKIPPED;

	if (!k8s_object_name_valid(k8s_name, strlen(k8s_name)))
		return SENT_SKIPPED;
	obj = object_get(k, true, node);
	if (!obj)
		return SENT_SKIPPED;
	obj->seen = true;
	if (obj->dropped || (obj->last_look_ms && now_ms - obj->last_look_ms < k->interval_ms))
		return SENT_SKIPPED;
	snprintf(obj->path, sizeof(obj->path), "/api/v1/nodes/%s", k8s_name);
	k8s_annots_init(&now);
	if (k8s_node_annots(strbuf_str(nodes), nodes->len, strbuf_str(gpus), gpus->len, node,
			    &now) == 0)
		r = object_turn(k, obj, &now, now_ms);
	k8s_annots_release(&now);
	return r;
}

struct node_turn_arg {
	struct k8s_annotate *k;
	const struct strbuf *nodes, *gpus;
	int64_t now_ms;
	enum sent r;
};

static int node_turn_cb(const char *node, void *arg)
{
	struct node_turn_arg *t = arg;

	t->r = node_turn(t->k, node, t->nodes, t->gpus, t->now_ms);
	return t->r == SENT_WAIT || t->r == SENT_OFF;
}

static enum sent nodes_turn(struct k8s_annotate *k, int64_t now_ms)
{
	struct strbuf nodes, gpus;
	enum sent r = SENT_OK;

	strbuf_init(&nodes, K8S_REPORT_MAX);
	strbuf_init(&gpus, K8S_REPORT_MAX);
	if (node_lists(k, now_ms, &nodes, &gpus) == 0) {
		if (k->o.local_node) {
			r = node_turn(k, k->o.local_node, &nodes, &gpus, now_ms);
		} else {
			struct node_turn_arg t = {k, &nodes, &gpus, now_ms, SENT_OK};

			k8s_each_node(strbuf_str(&nodes), nodes.len, node_turn_cb, &t);
			r = t.r;
		}
	}
	strbuf_release(&nodes);
	strbuf_release(&gpus);
	return r;
}

static bool stopping(struct k8s_annotate *k)
{
	bool stop;

	pthread_mutex_lock(&k->lock);
	stop = k->stop;
	pthread_mutex_unlock(&k->lock);
	return stop;
}

static void *writer_thread(void *arg)
{
	struct k8s_annotate *k = arg;
	int64_t scan_ms = k->interval_ms < K8S_SCAN_MS ? k->interval_ms : K8S_SCAN_MS;

	while (!stopping(k)) {
		int64_t now_ms = time_now_ms();
		enum sent r;

		if (!wait_until(k, k->backoff_until_ms))
			break;
		r = pods_turn(k, now_ms);
		if (r != SENT_WAIT && r != SENT_OFF)
			r = nodes_turn(k, now_ms);
		if (r == SENT_OFF)
			break;
		if (r != SENT_WAIT)
			objects_prune(k);
		if (!wait_until(k, now_ms + scan_ms))
			break;
	}
	/* after a 403: nothing more, but the objects are kept until the stop */
	return NULL;
}

/* Start and stop */

static int resolve_api(struct k8s_annotate *k)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	size_t len;

	if (k->o.api) {
		if (strncmp(k->o.api, "https://", 8) != 0 && strncmp(k->o.api, "http://", 7) != 0)
			return log_err(-EINVAL, "bad --k8s-api '%s' (https://HOST:PORT)", k->o.api);
		snprintf(k->api, sizeof(k->api), "%s", k->o.api);
	} else if (host && host[0]) {
		/* an IPv6 address goes in brackets */
		snprintf(k->api, sizeof(k->api),
			 strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
			 port && port[0] ? port : "443");
	} else {
		return log_err(-EINVAL, "--k8s-annotate: no API server: not in a pod "
					"(KUBERNETES_SERVICE_HOST unset) and no --k8s-api");
	}
	len = strlen(k->api);
	while (len > 0 && k->api[len - 1] == '/')
		k->api[--len] = '\0';
	return 0;
}

int k8s_annotate_start(const struct k8s_annotate_opts *o, const char *db_path,
		       struct k8s_annotate **out)
{
	struct k8s_annotate *k;
	const char *node_name = getenv("NODE_NAME");
	int ret;

	*out = NULL;
	if (!o->enabled)
		return 0;
	k = calloc(1, sizeof(*k));
	if (!k)
		return log_err(-ENOMEM, "out of memory");
	k->o = *o;
	k->interval_ms = o->interval_ms > 0 ? o->interval_ms : K8S_DEFAULT_INTERVAL_MS;
	snprintf(k->prefix, sizeof(k->prefix), "%s", o->prefix ? o->prefix : K8S_DEFAULT_PREFIX);
	snprintf(k->token_file, sizeof(k->token_file), "%s",
		 o->token_file ? o->token_file : K8S_SA_DIR "/token");
	snprintf(k->ca_file, sizeof(k->ca_file), "%s",
		 o->ca_file ? o->ca_file : K8S_SA_DIR "/ca.crt");
	snprintf(k->node_name, sizeof(k->node_name), "%s", node_name ? node_name : "");
	ret = -EINVAL;
	if (!k8s_prefix_valid(k->prefix)) {
		log_err(0, "bad --k8s-annotation-prefix '%s' (a DNS subdomain, e.g. %s)", k->prefix,
			K8S_DEFAULT_PREFIX);
		goto out_free;
	}
	ret = resolve_api(k);
	if (ret)
		goto out_free;
	if (access(k->ca_file, R_OK) && strncmp(k->api, "https://", 8) == 0) {
		ret = log_err(-errno, "--k8s-annotate: cannot read the CA '%s'", k->ca_file);
		goto out_free;
	}
	ret = token_read_file(k->token_file, k->token, sizeof(k->token));
	if (ret)
		goto out_free;
	stat(k->token_file, &k->token_st);
	ret = curl_dl_load();
	if (ret)
		goto out_free;
	ret = store_open(db_path, STORE_READONLY | STORE_CHECKED, &k->st);
	if (ret)
		goto out_free;
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->wake, NULL);
	if (pthread_create(&k->thread, NULL, writer_thread, k) != 0) {
		ret = log_err(-EAGAIN, "cannot start the annotation writer's thread");
		goto out_close;
	}
	log_info("k8s: annotations under %s/ to %s, each object at most every %" PRId64 " s",
		 k->prefix, k->api, k->interval_ms / 1000);
	*out = k;
	return 0;
out_close:
	pthread_cond_destroy(&k->wake);
	pthread_mutex_destroy(&k->lock);
	store_close(k->st);
out_free:
	memset(k->token, 0, sizeof(k->token));
	free(k);
	return ret;
}

void k8s_annotate_stop(struct k8s_annotate *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	k->stop = true;
	pthread_cond_signal(&k->wake);
	pthread_mutex_unlock(&k->lock);
	pthread_join(k->thread, NULL);
	if (k->curl)
		curl_fn.easy_cleanup(k->curl);
	store_close(k->st);
	for (size_t i = 0; i < k->nobjs; i++)
		k8s_annots_release(&k->objs[i].sent);
	free(k->objs);
	pthread_cond_destroy(&k->wake);
	pthread_mutex_destroy(&k->lock);
	memset(k->token, 0, sizeof(k->token));
	free(k);
}

void k8s_annotate_get_stats(struct k8s_annotate *k, struct k8s_annotate_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	*out = k->stats;
	pthread_mutex_unlock(&k->lock);
}
