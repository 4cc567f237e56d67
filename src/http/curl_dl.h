/*
 * curl_dl.h - libcurl loaded with dlopen() when a client request is made.
 *
 * Only a head stream (sender.c), remote write (remote_write.c) and the
 * CLI's requests to a head or to Prometheus (client.c, prommatrix.c) need
 * an HTTP client; a node's agent without --head or --remote-write must not
 * map libcurl and the TLS, Kerberos, LDAP, SSH and RTMP libraries it pulls
 * in (about 25).  So the binary does not link it: the curl headers give the
 * types, and curl_dl_load() resolves the functions used into `curl_fn`.
 *
 * curl_dl_load() returns 0 (also on later calls, from any thread) or
 * -ENOENT after logging why, naming the package to install.
 * $JOBSCOPE_CURL_LIBRARY, when set, names the library to load instead of
 * libcurl.so.4 (tests).  The table is
 * filled once and never unloaded.
 */
#ifndef JOBSCOPE_CURL_DL_H
#define JOBSCOPE_CURL_DL_H

#include <stdbool.h>

#include <curl/curl.h>

#include "common/strbuf.h"

/* Every libcurl function used, without its curl_ prefix. */
#define CURL_DL_FUNCTIONS(X)                                                                       \
	X(easy_cleanup)                                                                            \
	X(easy_getinfo)                                                                            \
	X(easy_init)                                                                               \
	X(easy_perform)                                                                            \
	X(easy_setopt)                                                                             \
	X(easy_strerror)                                                                           \
	X(global_cleanup)                                                                          \
	X(global_init)                                                                             \
	X(slist_append)                                                                            \
	X(slist_free_all)

struct curl_dl {
#define CURL_DL_POINTER(name) __typeof__(curl_##name) *name;
	CURL_DL_FUNCTIONS(CURL_DL_POINTER)
#undef CURL_DL_POINTER
};

/* Filled by curl_dl_load(); call nothing in it before that returned 0. */
extern struct curl_dl curl_fn;

int curl_dl_load(void);

/*
 * An easy handle for url (after curl_dl_load() returned 0) with the
 * settings every jobscope request has: at most timeout_s seconds, 5 s to
 * connect, no signals, http and https only, TCP keep-alive probes when
 * keepalive (a long-lived connection).  The answer goes to *answer through
 * write, or when write is NULL is appended to it, the transfer failing once
 * it is full (its max_len).  NULL when libcurl cannot make one.
 */
CURL *curl_dl_handle(const char *url, struct strbuf *answer, curl_write_callback write,
		     long timeout_s, bool keepalive);

#endif
