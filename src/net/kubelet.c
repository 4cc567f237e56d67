/*
 * kubelet.c - the pod-resources List call (unary gRPC over HTTP/2 on the
 * kubelet's unix socket, through libcurl) and the thread that repeats it.
 * The contract is kubelet.h's.
 */
#include "net/kubelet.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "http/curl_dl.h"

/* What the header callback keeps of the answer's headers and trailers. */
struct grpc_status {
	bool has_status;
	long status;
	char message[160];
};

/* "name: value\r\n" into status when the name is grpc-status or grpc-message. */
static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct grpc_status *g = arg;
	size_t n = size * nmemb, vlen;
	const char *v;

	if (n > 12 && strncasecmp(data, "grpc-status:", 12) == 0) {
		char num[16];

		v = data + 12;
		vlen = n - 12;
		while (vlen && (*v == ' ' || *v == '\t'))
			v++, vlen--;
		while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
			vlen--;
		if (vlen && vlen < sizeof(num) && strspn(v, "0123456789") >= vlen) {
			memcpy(num, v, vlen);
			num[vlen] = '\0';
			g->status = strtol(num, NULL, 10);
			g->has_status = true;
		}
	} else if (n > 13 && strncasecmp(data, "grpc-message:", 13) == 0) {
		v = data + 13;
		vlen = n - 13;
		while (vlen && *v == ' ')
			v++, vlen--;
		while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n'))
			vlen--;
		if (vlen >= sizeof(g->message))
			vlen = sizeof(g->message) - 1;
		memcpy(g->message, v, vlen);
		g->message[vlen] = '\0';
	}
	return n;
}

static int answer_of(const struct strbuf *body, const struct grpc_status *g,
		     struct podres_table *out, char *why, size_t why_size)
{
	const uint8_t *msg;
	size_t len;
	int ret;

	if (!g->has_status) {
		snprintf(why, why_size, "no grpc-status in the answer");
		return -EPROTO;
	}
	if (g->status != 0) {
		snprintf(why, why_size, "grpc-status %ld%s%s", g->status, g->message[0] ? ": " : "",
			 g->message);
		return -EPROTO;
	}
	ret = podres_grpc_message((const uint8_t *)body->buf, body->len, &msg, &len);
	if (ret == 0)
		ret = podres_decode_list(msg, len, out);
	if (ret)
		snprintf(why, why_size, "an answer that is not a ListPodResourcesResponse (%s)",
			 strerror(-ret));
	return ret ? -EBADMSG : 0;
}

int kubelet_podres_list(const char *socket_path, long timeout_ms, struct podres_table *out,
			char *why, size_t why_size)
{
	static const char empty_request[5] = {0}; /* ListPodResourcesRequest{}: no field */
	struct grpc_status g = {.has_status = false};
	struct curl_slist *hdr = NULL, *h;
	struct strbuf body;
	long http = 0;
	CURLcode rc;
	CURL *c;
	int ret;

	why[0] = '\0';
	if (curl_dl_load()) {
		snprintf(why, why_size, "no libcurl");
		return -ENOENT;
	}
	strbuf_init(&body, KUBELET_ANSWER_MAX);
	/* the host is a placeholder: the socket is the address */
	c = curl_dl_handle("http://localhost/v1.PodResourcesLister/List", &body, NULL,
			   (timeout_ms + 999) / 1000, false);
	if (!c) {
		snprintf(why, why_size, "libcurl cannot make a handle");
		ret = -ENOMEM;
		goto out_free_body;
	}
	for (const char *const *s = (const char *const[]){"content-type: application/grpc",
							  "te: trailers", "expect:", NULL};
	     *s; s++) {
		h = curl_fn.slist_append(hdr, *s);
		if (!h) {
			snprintf(why, why_size, "out of memory");
			ret = -ENOMEM;
			goto out_cleanup;
		}
		hdr = h;
	}
	curl_fn.easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, socket_path);
	curl_fn.easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
	curl_fn.easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_fn.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 1000 ? timeout_ms : 1000L);
	curl_fn.easy_setopt(c, CURLOPT_POST, 1L);
	curl_fn.easy_setopt(c, CURLOPT_POSTFIELDS, empty_request);
	curl_fn.easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)sizeof(empty_request));
	curl_fn.easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_fn.easy_setopt(c, CURLOPT_USERAGENT, "jobscope-agent");
	/* headers and, over HTTP/2, the trailers after the body come here */
	curl_fn.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_fn.easy_setopt(c, CURLOPT_HEADERDATA, &g);
	rc = curl_fn.easy_perform(c);
	if (rc != CURLE_OK) {
		snprintf(why, why_size, "%s", curl_fn.easy_strerror(rc));
		ret = rc == CURLE_OPERATION_TIMEDOUT				 ? -ETIMEDOUT
		      : rc == CURLE_COULDNT_CONNECT				 ? -ECONNREFUSED
		      : rc == CURLE_WRITE_ERROR && strbuf_error(&body) == -E2BIG ? -EMSGSIZE
										 : -EIO;
		goto out_cleanup;
	}
	curl_fn.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
	if (http != 200) {
		snprintf(why, why_size, "HTTP status %ld", http);
		ret = -EPROTO;
		goto out_cleanup;
	}
	ret = answer_of(&body, &g, out, why, why_size);
out_cleanup:
	curl_fn.easy_cleanup(c);
	curl_fn.slist_free_all(hdr);
out_free_body:
	strbuf_release(&body);
	return ret;
}

/* ---- the poller ---- */

struct kubelet_poller {
	char path[512];
	bool given;
	int64_t refresh_ms;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool curl_inited;	  /* libcurl loaded and initialised (the thread's) */
	bool stop;		  /* under lock */
	struct podres_table last; /* under lock: the latest answer */
	uint64_t generation;	  /* under lock: answers so far */
};

/* Waits ms or until stopped: true when stopped. */
static bool nap(struct kubelet_poller *p, int64_t ms)
{
	struct timespec until;
	bool stop;

	time_deadline_mono_ms(&until, ms);
	pthread_mutex_lock(&p->lock);
	while (!p->stop && pthread_cond_timedwait(&p->wake, &p->lock, &until) == 0)
		;
	stop = p->stop;
	pthread_mutex_unlock(&p->lock);
	return stop;
}

static void *poller_main(void *arg)
{
	struct kubelet_poller *p = arg;
	struct podres_table t;
	int64_t wait_ms = p->refresh_ms;
	bool failing = false, absent_said = false;
	char why[256];
	struct stat st;
	int ret;

	podres_table_init(&t);
	do {
		if (stat(p->path, &st) != 0) {
			if (p->given && !absent_said)
				log_warn(0,
					 "no kubelet pod-resources socket at '%s' yet: pods' GPU "
					 "reservations are unknown until it comes",
					 p->path);
			absent_said = true;
			wait_ms = p->refresh_ms;
			continue;
		}
		absent_said = false;
		/* libcurl is mapped only once a socket is there to ask (curl_dl.h) */
		if (!p->curl_inited && curl_dl_load() == 0) {
			curl_fn.global_init(CURL_GLOBAL_DEFAULT);
			p->curl_inited = true;
		}
		ret = kubelet_podres_list(p->path, KUBELET_TIMEOUT_MS, &t, why, sizeof(why));
		if (ret) {
			if (!failing)
				log_warn(ret,
					 "cannot list the kubelet's pod resources at '%s' (%s): "
					 "retrying with backoff",
					 p->path, why);
			failing = true;
			wait_ms = wait_ms * 2 > KUBELET_BACKOFF_MAX_MS ? KUBELET_BACKOFF_MAX_MS
								       : wait_ms * 2;
			continue;
		}
		if (failing)
			log_info("the kubelet's pod resources at '%s' answer again", p->path);
		failing = false;
		wait_ms = p->refresh_ms;
		pthread_mutex_lock(&p->lock);
		if (podres_table_copy(&p->last, &t) == 0)
			p->generation++;
		pthread_mutex_unlock(&p->lock);
	} while (!nap(p, wait_ms));
	podres_table_release(&t);
	return NULL;
}

int kubelet_poller_start(const char *socket_path, bool given, int64_t refresh_ms,
			 struct kubelet_poller **out)
{
	struct kubelet_poller *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return log_err(-ENOMEM, "out of memory");
	if (snprintf(p->path, sizeof(p->path), "%s", socket_path) >= (int)sizeof(p->path)) {
		free(p);
		return log_err(-ENAMETOOLONG, "pod-resources socket path too long: '%s'",
			       socket_path);
	}
	p->given = given;
	p->refresh_ms = refresh_ms > 0 ? refresh_ms : KUBELET_REFRESH_MS;
	podres_table_init(&p->last);
	pthread_mutex_init(&p->lock, NULL);
	time_cond_init_mono(&p->wake);
	if (pthread_create(&p->thread, NULL, poller_main, p) != 0) {
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return log_err(-EAGAIN, "cannot start the pod-resources thread");
	}
	*out = p;
	return 0;
}

bool kubelet_poller_take(struct kubelet_poller *p, uint64_t *generation, struct podres_table *t)
{
	bool newer;

	if (!p)
		return false;
	pthread_mutex_lock(&p->lock);
	newer = p->generation != *generation && podres_table_copy(t, &p->last) == 0;
	if (newer)
		*generation = p->generation;
	pthread_mutex_unlock(&p->lock);
	return newer;
}

void kubelet_poller_stop(struct kubelet_poller *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	podres_table_release(&p->last);
	if (p->curl_inited)
		curl_fn.global_cleanup();
	free(p);
}
