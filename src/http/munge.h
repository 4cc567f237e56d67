/*
 * munge.h - MUNGE credentials (the authentication Slurm uses): encoded by
 * a client to prove who runs it, decoded by a server to learn that
 * caller's uid and gid.  libmunge.so.2 (Debian's libmunge2) is loaded with
 * dlopen on first use, as libcurl and libpq are: a process that never
 * asks maps none of it, and the binary does not need it to run.
 *
 * Both sides talk to the local munged over its socket: the default one,
 * or $JOBSCOPE_MUNGE_SOCKET, or the path a server was given
 * (munge_set_socket, `jobscope head --munge-socket`).
 *
 * A credential is a line of printable ASCII ("MUNGE:...:"), at most
 * MUNGE_CRED_MAX bytes; munged refuses one decoded twice (replayed) or
 * past its time to live (300 s by default).
 *
 * Thread-safe: each call makes its own libmunge context.  Errors: 0 or
 * -errno, with why in msg: -ENOENT (no libmunge2: the package to install
 * is named), -ECONNREFUSED (munged cannot be reached), -EACCES (the
 * credential is invalid, expired, replayed or from another realm).
 */
#ifndef JOBSCOPE_MUNGE_H
#define JOBSCOPE_MUNGE_H

#include <stddef.h>
#include <sys/types.h>

#define MUNGE_CRED_MAX 4096

/* The socket every later call talks to (NULL: $JOBSCOPE_MUNGE_SOCKET, else munged's default). */
void munge_set_socket(const char *path);
/* A fresh credential of the calling process's uid and gid into cred. */
int munge_cred_encode(char *cred, size_t size, char *msg, size_t msg_size);
/* The uid and gid a credential proves; each credential decodes once. */
int munge_cred_decode(const char *cred, uid_t *uid, gid_t *gid, char *msg, size_t msg_size);

#endif
