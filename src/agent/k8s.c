/*
 * k8s.c - pods' owner hints from the runtime's CRI (--cri-socket): one
 * unary gRPC call, runtime.v1.RuntimeService/ListPodSandbox, when a pod
 * the agent has not asked about yet appears.  gRPC by hand: an HTTP/2 POST
 * with prior knowledge over the unix socket (libcurl), a 5-byte frame
 * (uncompressed, big-endian length) around the protobuf, the status in the
 * grpc-status trailer; the answer decoded by attrib/cri.c.  A pod is asked
 * about until an answer lists its sandbox (the agent may see its pause
 * process before the runtime lists it), at most every CRI_ASK_MS.
 * Identity never depends on it: a failure is said once and the pods keep
 * no hint.
 */
#include "agent/agent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "attrib/cri.h"
#include "common/log.h"
#include "http/curl_dl.h"

/* How often the runtime is asked while a pod is not in its answers. */
#define CRI_ASK_MS 2000
/* A node's sandboxes: a few hundred bytes each; a bigger answer is refused. */
#define CRI_ANSWER_MAX (8u << 20)

static size_t grpc_trailer(char *line, size_t size, size_t n, void *arg)
{
	int *status = arg;
	size_t len = size * n;

	if (len > 12 && strncasecmp(line, "grpc-status:", 12) == 0)
		*status = atoi(line + 12);
	return len;
}

/* ListPodSandbox's answer, the protobuf without its frame, into *msg: 0 or -errno. */
static int list_pod_sandbox(const char *socket, struct strbuf *answer, size_t *off, size_t *len)
{
	static const char empty_request[5] = {0, 0, 0, 0, 0};
	struct curl_slist *headers = NULL;
	const unsigned char *b;
	int status = -1, ret;
	CURLcode rc;
	CURL *c;

	ret = curl_dl_load();
	if (ret)
		return ret;
	c = curl_dl_handle("http://localhost/runtime.v1.RuntimeService/ListPodSandbox", answer,
			   NULL, 5, false);
	if (!c)
		return -ENOMEM;
	headers = curl_fn.slist_append(headers, "Content-Type: application/grpc");
	headers = curl_fn.slist_append(headers, "TE: trailers");
	curl_fn.easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, socket);
	curl_fn.easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
	curl_fn.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_fn.easy_setopt(c, CURLOPT_POSTFIELDS, empty_request);
	curl_fn.easy_setopt(c, CURLOPT_POSTFIELDSIZE, 5L);
	curl_fn.easy_setopt(c, CURLOPT_HEADERFUNCTION, grpc_trailer);
	curl_fn.easy_setopt(c, CURLOPT_HEADERDATA, &status);
	rc = curl_fn.easy_perform(c);
	curl_fn.easy_cleanup(c);
	curl_fn.slist_free_all(headers);
	if (rc != CURLE_OK)
		return -ECONNREFUSED;
	if (status != 0 || answer->len < 5)
		return -EPROTO;
	b = (const unsigned char *)answer->buf;
	*len = (size_t)b[1] << 24 | (size_t)b[2] << 16 | (size_t)b[3] << 8 | b[4];
	if (b[0] != 0 || *len > answer->len - 5)
		return -EPROTO; /* compressed, or cut */
	*off = 5;
	return 0;
}

static void take_owner(const struct cri_owner *o, void *arg)
{
	struct agent *a = arg;

	for (size_t i = 0; i < a->jobs.njobs; i++) {
		struct job_entry *j = &a->jobs.job[i];

		if (!j->live || strcmp(j->rec.scheduler, "k8s") != 0 ||
		    strcmp(j->rec.job_id, o->uid) != 0)
			continue;
		j->k8s.owner_asked = true; /* listed: its labels will not change */
		snprintf(j->k8s.owner_label, sizeof(j->k8s.owner_label), "%s", o->label);
		snprintf(j->k8s.owner_name, sizeof(j->k8s.owner_name), "%s", o->name);
		jobs_k8s_owner_settle(j);
	}
}

void agent_k8s_tick(struct agent *a, int64_t ts_ms)
{
	struct strbuf answer;
	size_t off = 0, len = 0;
	bool ask = false;
	int ret;

	if (!a->opt->cri_socket || ts_ms < a->cri_next_ms)
		return;
	for (size_t i = 0; i < a->jobs.njobs && !ask; i++) {
		const struct job_entry *j = &a->jobs.job[i];

		ask = j->live && strcmp(j->rec.scheduler, "k8s") == 0 && !j->k8s.owner_asked;
	}
	if (!ask)
		return;
	a->cri_next_ms = ts_ms + CRI_ASK_MS;
	strbuf_init(&answer, CRI_ANSWER_MAX);
	ret = list_pod_sandbox(a->opt->cri_socket, &answer, &off, &len);
	if (!ret)
		ret = cri_decode_sandboxes((const uint8_t *)answer.buf + off, len, take_owner, a);
	if (ret && !a->cri_warned)
		log_warn(ret,
			 "--cri-socket '%s': ListPodSandbox failed; pods get no owner hints"
			 " (said once)",
			 a->opt->cri_socket);
	a->cri_warned |= ret != 0;
	strbuf_release(&answer);
}
