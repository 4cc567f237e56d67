/*
 * access.h - who is asking, and what a route lets them do: the policy a
 * server (the head, the agent) was started with, the caller a request
 * proves it is, and the check of a route's access (http.h's enum
 * http_access) for that caller.  docs/http-api.md's "Access" says it for
 * users; this file is its one implementation.
 *
 * Callers, from what a request carries (the first that applies):
 *   Authorization: Bearer T   the admin token: admin; the agents' token:
 *                             agent; the read token: reader; another: 403
 *   Authorization: Munge C    (--auth munge) the credential's uid: a user,
 *                             an admin when listed in --admins (root always)
 *   the user header           from a --trusted-proxy address only: that
 *                             user (an admin when listed); elsewhere ignored
 *   nothing                   anonymous
 *
 * Who may use a route:
 *   public   anyone
 *   user     a user (their own jobs: the handlers filter by
 *            access_sees_all), and whoever may use a reader's route
 *   reader   a reader, an admin, the agents (without --admin-token-file),
 *            anyone when open: every user's data, unfiltered
 *   ingest   the agents (anyone when there is no agents' token)
 *   admin    an admin; the agents' token without --admin-token-file;
 *            anyone when open and no token is set
 *   owner    a user, on what they own (their sessions: the handlers
 *            check), and whoever may use an admin's route
 * "Open": --insecure, or a loopback address with no read protection (no
 * read token, no --auth munge, no --trusted-proxy).  A server that is not
 * open answers an anonymous read 401, with a WWW-Authenticate header for
 * each way in (Bearer, Munge).
 *
 * The caller found for a request is kept with it (http_set_principal), so
 * an event stream's re-asks (http_watch) are that caller without proving
 * it again (a MUNGE credential decodes once).
 *
 * Ownership: a policy is filled at start and read-only after, shared by
 * the server's threads.  Errors: 0 or -errno with a message (log.h).
 */
#ifndef JOBSCOPE_ACCESS_H
#define JOBSCOPE_ACCESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "http/http.h"

#define ACCESS_TOKEN_MAX   256
#define ACCESS_PROXIES_MAX 16
#define ACCESS_ADMINS_MAX  64
#define ACCESS_USER_MAX	   64 /* a user name's bytes, with its NUL */

struct access_net {
	int family;		/* AF_INET or AF_INET6 */
	unsigned char addr[16]; /* network byte order */
	unsigned bits;
};

struct access_policy {
	bool open;     /* anonymous callers read everything (see above) */
	bool insecure; /* --insecure: open on any address */
	char token[ACCESS_TOKEN_MAX], admin_token[ACCESS_TOKEN_MAX], read_token[ACCESS_TOKEN_MAX];
	bool has_token, has_admin_token, has_read_token;
	bool munge; /* --auth munge */
	struct access_net proxy[ACCESS_PROXIES_MAX];
	unsigned nproxies;
	char user_header[64]; /* the proxy's header that names the user */
	/* --admins: user names, and groups (@NAME) by gid */
	char admin_user[ACCESS_ADMINS_MAX][ACCESS_USER_MAX];
	unsigned nadmin_users;
	gid_t admin_gid[ACCESS_ADMINS_MAX];
	unsigned nadmin_groups;
};

enum caller_role {
	CALLER_ANONYMOUS,
	CALLER_USER,   /* a person, by MUNGE or the proxy: their own jobs */
	CALLER_READER, /* the read token */
	CALLER_AGENT,  /* the agents' token */
	CALLER_ADMIN,  /* the admin token, or a user in --admins */
};

struct caller {
	enum caller_role role;
	const char *via;	    /* "none", "token", "munge", "proxy" (static) */
	char user[ACCESS_USER_MAX]; /* a user or an admin who is a person; else "" */
	int64_t uid;		    /* -1: not known */
};

/* A token file into buf (token.h's rules); 0 or -errno (said why). */
int access_load_token(const char *path, char *buf, size_t size);
/* "ADDR[/BITS]" (IPv4 or IPv6) into the policy's trusted proxies; -EINVAL (said why). */
int access_add_proxy(struct access_policy *p, const char *spec);
/* "USER,@GROUP,..." into the policy's admins; -EINVAL (said why: an unknown group). */
int access_add_admins(struct access_policy *p, const char *list);
/* Whether "ADDR:PORT" binds loopback only (127.0.0.0/8, ::1). */
bool access_listen_is_loopback(const char *listen);
/*
 * Sets p->open from the policy and the listen address.  A server on a
 * non-loopback address with no agents' token and no --insecure is refused
 * there (the caller's choice: the head exits, the agent keeps its reads
 * closed); this says whether reads of such a server are open.
 */
void access_settle(struct access_policy *p, const char *listen);

/*
 * The caller req proves it is into c.  false when what it carries is
 * refused (a wrong token, a bad credential): res holds the 401 or 403.
 */
bool access_identify(const struct access_policy *p, const struct http_request *req,
		     struct caller *c, struct http_response *res);
/* Whether c may use a route of that access; if not, res holds the 401 or 403. */
bool access_permits(const struct access_policy *p, const struct caller *c, enum http_access a,
		    struct http_response *res);
/* Whether c sees every user's jobs (else only those of c->user). */
bool access_sees_all(const struct access_policy *p, const struct caller *c);
/* "anonymous", "user", "reader", "agent", "admin" */
const char *caller_role_name(enum caller_role r);

#endif
