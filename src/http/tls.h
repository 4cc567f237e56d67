/*
 * tls.h - the HTTP server's TLS: GnuTLS loaded with dlopen() when a server
 * is started with a certificate and key.
 *
 * A node's agent and a head without TLS must not map GnuTLS and the eight
 * libraries it pulls in (about 3 MiB of pages), so the binary does not link
 * it: the GnuTLS header gives the types, and tls_creds_new() resolves the
 * functions used, once.  A session is one connection's: non-blocking, on
 * its socket; every call that would block returns -EAGAIN and is called
 * again when the socket is ready (the server's epoll wakes it either way).
 *
 * tls_creds_new() returns 0 or -errno after logging why (no libgnutls30, a
 * bad key or certificate).  $JOBSCOPE_GNUTLS_LIBRARY names the library to
 * load instead of libgnutls.so.30 (tests).  Credentials are shared by the
 * server's threads (read-only once made); a session belongs to one thread.
 */
#ifndef JOBSCOPE_HTTP_TLS_H
#define JOBSCOPE_HTTP_TLS_H

#include <stddef.h>
#include <sys/types.h>

struct tls_creds;
struct tls_session;

int tls_creds_new(const char *cert_pem, const char *key_pem, struct tls_creds **out);
void tls_creds_free(struct tls_creds *c);

/* A server session on fd, or NULL (out of memory, logged). */
struct tls_session *tls_session_new(struct tls_creds *c, int fd);
void tls_session_free(struct tls_session *t);

/*
 * Each call: -EAGAIN to call again when the socket is ready, -EINTR to call
 * again at once, -EPROTO when the peer is to be closed.
 */
/* 0 once the handshake is done. */
int tls_handshake(struct tls_session *t);
/* Bytes read (0: the peer closed). */
ssize_t tls_recv(struct tls_session *t, void *buf, size_t len);
/*
 * Bytes written.  After -EAGAIN the next call must
 * pass the same bytes again (GnuTLS's rule): the caller's pending output
 * does not move until some of it is written.
 */
ssize_t tls_send(struct tls_session *t, const void *buf, size_t len);

#endif
