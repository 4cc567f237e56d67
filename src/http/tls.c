/*
 * tls.c - GnuTLS's server functions resolved with dlopen() (tls.h), and
 * a non-blocking session's handshake, reads and writes.
 */
#include "http/tls.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/gnutls.h>

#include "common/log.h"

/* Every GnuTLS function used, without its gnutls_ prefix. */
#define TLS_DL_FUNCTIONS(X)                                                                        \
	X(certificate_allocate_credentials)                                                        \
	X(certificate_free_credentials)                                                            \
	X(certificate_set_x509_key_mem)                                                            \
	X(credentials_set)                                                                         \
	X(deinit)                                                                                  \
	X(error_is_fatal)                                                                          \
	X(handshake)                                                                               \
	X(init)                                                                                    \
	X(record_recv)                                                                             \
	X(record_send)                                                                             \
	X(set_default_priority)                                                                    \
	X(strerror)                                                                                \
	X(transport_set_int2)

static struct {
#define TLS_DL_FIELD(name) __typeof__(gnutls_##name) *name;
	TLS_DL_FUNCTIONS(TLS_DL_FIELD)
#undef TLS_DL_FIELD
} tls_fn;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_ret;

static void load(void)
{
	const char *name = getenv("JOBSCOPE_GNUTLS_LIBRARY"); /* tests: another path */
	void *dl = dlopen(name && name[0] ? name : "libgnutls.so.30", RTLD_NOW | RTLD_LOCAL);

	if (!dl) {
		log_err(0, "HTTPS needs libgnutls30 (%s): apt-get install libgnutls30", dlerror());
		load_ret = -ENOENT;
		return;
	}
#define TLS_DL_RESOLVE(name)                                                                       \
	tls_fn.name = (__typeof__(tls_fn.name))dlsym(dl, "gnutls_" #name);                         \
	if (!tls_fn.name)                                                                          \
		goto out_missing;
	TLS_DL_FUNCTIONS(TLS_DL_RESOLVE)
#undef TLS_DL_RESOLVE
	return;
out_missing:
	log_err(0, "libgnutls is older than 3.5 (%s): apt-get install libgnutls30", dlerror());
	dlclose(dl);
	load_ret = -ENOENT;
}

struct tls_creds {
	gnutls_certificate_credentials_t x509;
};

struct tls_session {
	gnutls_session_t s;
};

int tls_creds_new(const char *cert_pem, const char *key_pem, struct tls_creds **out)
{
	gnutls_datum_t cert = {(unsigned char *)cert_pem, (unsigned)strlen(cert_pem)};
	gnutls_datum_t key = {(unsigned char *)key_pem, (unsigned)strlen(key_pem)};
	struct tls_creds *c;
	int r;

	*out = NULL;
	pthread_once(&load_once, load);
	if (load_ret)
		return load_ret;
	c = calloc(1, sizeof(*c));
	if (!c)
		return log_err(-ENOMEM, "out of memory");
	r = tls_fn.certificate_allocate_credentials(&c->x509);
	if (r < 0) {
		free(c);
		return log_err(-ENOMEM, "HTTPS: %s", tls_fn.strerror(r));
	}
	r = tls_fn.certificate_set_x509_key_mem(c->x509, &cert, &key, GNUTLS_X509_FMT_PEM);
	if (r < 0) {
		log_err(0, "HTTPS: the certificate or the key is refused (GnuTLS: %s)",
			tls_fn.strerror(r));
		tls_creds_free(c);
		return -EINVAL;
	}
	*out = c;
	return 0;
}

void tls_creds_free(struct tls_creds *c)
{
	if (!c)
		return;
	tls_fn.certificate_free_credentials(c->x509);
	free(c);
}

struct tls_session *tls_session_new(struct tls_creds *c, int fd)
{
	struct tls_session *t = calloc(1, sizeof(*t));

	if (!t || tls_fn.init(&t->s, GNUTLS_SERVER | GNUTLS_NONBLOCK) < 0) {
		free(t);
		log_warn(0, "TLS: no session for a connection (out of memory)");
		return NULL;
	}
	if (tls_fn.set_default_priority(t->s) < 0 ||
	    tls_fn.credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, c->x509) < 0) {
		tls_session_free(t);
		log_warn(0, "TLS: cannot set a session up");
		return NULL;
	}
	tls_fn.transport_set_int2(t->s, fd, fd);
	return t;
}

void tls_session_free(struct tls_session *t)
{
	if (!t)
		return;
	tls_fn.deinit(t->s);
	free(t);
}

/*
 * A GnuTLS result as ours: -EAGAIN to wait for the socket, -EINTR to call
 * again at once (a warning alert: data may already be buffered, and no
 * epoll event would come for it), -EPROTO to close.
 */
static int tls_result(int r)
{
	if (r == GNUTLS_E_AGAIN)
		return -EAGAIN;
	if (r == GNUTLS_E_INTERRUPTED || (!tls_fn.error_is_fatal(r) && r != GNUTLS_E_REHANDSHAKE))
		return -EINTR;
	log_debug("TLS: %s", tls_fn.strerror(r));
	return -EPROTO;
}

int tls_handshake(struct tls_session *t)
{
	int r = tls_fn.handshake(t->s);

	return r == GNUTLS_E_SUCCESS ? 0 : tls_result(r);
}

ssize_t tls_recv(struct tls_session *t, void *buf, size_t len)
{
	ssize_t r = tls_fn.record_recv(t->s, buf, len);

	return r >= 0 ? r : tls_result((int)r);
}

ssize_t tls_send(struct tls_session *t, const void *buf, size_t len)
{
	ssize_t r = tls_fn.record_send(t->s, buf, len);

	return r >= 0 ? r : tls_result((int)r);
}
