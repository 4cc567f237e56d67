/*
 * munge.c - MUNGE credentials through libmunge.so.2 loaded with dlopen (see
 * munge.h).  The declarations below are libmunge's ABI as its munge.h
 * (0.5.x) gives it: an opaque context, munge_ctx_set's option numbers
 * and EMUNGE_SUCCESS = 0; the header itself is not needed to build.
 */
#include "http/munge.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	MUNGE_OK = 0,		     /* EMUNGE_SUCCESS */
	MUNGE_SOCKET_ERR = 6,	     /* EMUNGE_SOCKET: munged not reached */
	MUNGE_OPT_SOCKET_NUMBER = 8, /* MUNGE_OPT_SOCKET (a string) */
};

typedef struct munge_ctx *munge_ctx_t;

static struct {
	munge_ctx_t (*ctx_create)(void);
	void (*ctx_destroy)(munge_ctx_t);
	int (*ctx_set)(munge_ctx_t, int, ...);
	int (*encode)(char **, munge_ctx_t, const void *, int);
	int (*decode)(const char *, munge_ctx_t, void **, int *, uid_t *, gid_t *);
	const char *(*strerror)(int);
} fn;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_msg[256];
static const char *socket_path;

static void load(void)
{
	void *dl = dlopen("libmunge.so.2", RTLD_NOW | RTLD_LOCAL);

	if (!dl) {
		snprintf(load_msg, sizeof(load_msg),
			 "MUNGE needs libmunge2 (%s): apt-get install munge", dlerror());
		return;
	}
	fn.ctx_create = (munge_ctx_t(*)(void))dlsym(dl, "munge_ctx_create");
	fn.ctx_destroy = (void (*)(munge_ctx_t))dlsym(dl, "munge_ctx_destroy");
	fn.ctx_set = (int (*)(munge_ctx_t, int, ...))dlsym(dl, "munge_ctx_set");
	fn.encode = (int (*)(char **, munge_ctx_t, const void *, int))dlsym(dl, "munge_encode");
	fn.decode = (int (*)(const char *, munge_ctx_t, void **, int *, uid_t *, gid_t *))dlsym(
	    dl, "munge_decode");
	fn.strerror = (const char *(*)(int))dlsym(dl, "munge_strerror");
	if (!fn.ctx_create || !fn.ctx_destroy || !fn.ctx_set || !fn.encode || !fn.decode ||
	    !fn.strerror) {
		snprintf(load_msg, sizeof(load_msg), "libmunge.so.2 lacks a function (%s)",
			 dlerror());
		memset(&fn, 0, sizeof(fn));
		dlclose(dl);
	}
}

void munge_set_socket(const char *path)
{
	socket_path = path;
}

/* A context on the socket to use; NULL with msg when libmunge is missing or refuses. */
static munge_ctx_t context(char *msg, size_t msg_size, int *ret)
{
	const char *path = socket_path ? socket_path : getenv("JOBSCOPE_MUNGE_SOCKET");
	munge_ctx_t ctx;

	pthread_once(&load_once, load);
	if (!fn.ctx_create) {
		snprintf(msg, msg_size, "%s", load_msg);
		*ret = -ENOENT;
		return NULL;
	}
	ctx = fn.ctx_create();
	if (!ctx) {
		snprintf(msg, msg_size, "libmunge: out of memory");
		*ret = -ENOMEM;
		return NULL;
	}
	if (path && path[0] && fn.ctx_set(ctx, MUNGE_OPT_SOCKET_NUMBER, path) != MUNGE_OK) {
		snprintf(msg, msg_size, "libmunge refuses the socket %s", path);
		fn.ctx_destroy(ctx);
		*ret = -EINVAL;
		return NULL;
	}
	return ctx;
}

static int failed(int err, const char *what, char *msg, size_t msg_size)
{
	const char *path = socket_path ? socket_path : getenv("JOBSCOPE_MUNGE_SOCKET");

	if (err == MUNGE_SOCKET_ERR) {
		snprintf(msg, msg_size,
			 "cannot %s a MUNGE credential: munged not reached at %s (%s; is munged "
			 "running? $JOBSCOPE_MUNGE_SOCKET names another socket)",
			 what, path && path[0] ? path : "its default socket", fn.strerror(err));
		return -ECONNREFUSED;
	}
	snprintf(msg, msg_size, "cannot %s a MUNGE credential: %s", what, fn.strerror(err));
	return -EACCES;
}

int munge_cred_encode(char *cred, size_t size, char *msg, size_t msg_size)
{
	char *out = NULL;
	int ret = 0, err;
	munge_ctx_t ctx = context(msg, msg_size, &ret);

	if (!ctx)
		return ret;
	err = fn.encode(&out, ctx, NULL, 0);
	fn.ctx_destroy(ctx);
	if (err != MUNGE_OK) {
		free(out);
		return failed(err, "make", msg, msg_size);
	}
	if (!out || strlen(out) >= size) {
		snprintf(msg, msg_size, "a MUNGE credential longer than %zu bytes", size);
		free(out);
		return -E2BIG;
	}
	strcpy(cred, out);
	free(out);
	return 0;
}

int munge_cred_decode(const char *cred, uid_t *uid, gid_t *gid, char *msg, size_t msg_size)
{
	void *payload = NULL;
	int len = 0, ret = 0, err;
	munge_ctx_t ctx;

	if (strlen(cred) >= MUNGE_CRED_MAX || strncmp(cred, "MUNGE:", 6) != 0) {
		snprintf(msg, msg_size, "not a MUNGE credential");
		return -EACCES;
	}
	ctx = context(msg, msg_size, &ret);
	if (!ctx)
		return ret;
	err = fn.decode(cred, ctx, &payload, &len, uid, gid);
	fn.ctx_destroy(ctx);
	free(payload);
	return err == MUNGE_OK ? 0 : failed(err, "check", msg, msg_size);
}
