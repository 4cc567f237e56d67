/*
 * kubelet.h - the kubelet's pod-resources API, asked over its unix socket.
 *
 * `/v1.PodResourcesLister/List` is a unary gRPC call: an HTTP/2 POST
 * (prior knowledge: no upgrade over a unix socket) of an empty message,
 * answered by one ListPodResourcesResponse and a grpc-status trailer.
 * libcurl (http/curl_dl.h, loaded on the first call) speaks it; the
 * answer is decoded by attrib/podres.h.  No gRPC library.
 *
 * kubelet_podres_list() makes one call, bounded by timeout_ms.  The poller
 * makes one every refresh_ms on a thread of its own, so that a slow or
 * silent kubelet never holds up the agent's tick: the tick takes the
 * latest table with kubelet_poller_take(), which never waits on a call.  A
 * failure is said once (one warning, with why), then retried with a
 * backoff doubling up to a minute; an answer after failures is said once.
 * A socket that is not there is waited for quietly unless the path was
 * given (then it is one warning too): a node without a kubelet is normal.
 *
 * Errors: 0 or -errno with *why (a sentence) filled: -ENOENT (no libcurl),
 * -ECONNREFUSED, -ETIMEDOUT and -EIO (the call, with curl's words),
 * -EPROTO (a grpc-status other than 0, or none), -EBADMSG (an answer that
 * does not decode), -EMSGSIZE (an answer over KUBELET_ANSWER_MAX), -ENOMEM.
 * Threads: kubelet_podres_list() from any thread; a poller's functions
 * from the thread that started it.
 */
#ifndef JOBSCOPE_KUBELET_H
#define JOBSCOPE_KUBELET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attrib/podres.h"

#define KUBELET_PODRES_SOCKET  "/var/lib/kubelet/pod-resources/kubelet.sock"
#define KUBELET_ANSWER_MAX     (16u << 20) /* a node of 110 pods answers in tens of KiB */
#define KUBELET_TIMEOUT_MS     3000
#define KUBELET_REFRESH_MS     5000
#define KUBELET_BACKOFF_MAX_MS 60000

int kubelet_podres_list(const char *socket_path, long timeout_ms, struct podres_table *out,
			char *why, size_t why_size);

struct kubelet_poller;

/*
 * A poller of socket_path every refresh_ms (given: the user named the path,
 * so its absence is said).  0 with *out, or -errno (no thread, no memory).
 */
int kubelet_poller_start(const char *socket_path, bool given, int64_t refresh_ms,
			 struct kubelet_poller **out);
/*
 * The latest table into *t when it is newer than *generation (which is
 * updated): true; false when nothing new came (t untouched).
 */
bool kubelet_poller_take(struct kubelet_poller *p, uint64_t *generation, struct podres_table *t);
/* Stops the thread (a call in flight ends within its timeout) and frees p; NULL is fine. */
void kubelet_poller_stop(struct kubelet_poller *p);

#endif
