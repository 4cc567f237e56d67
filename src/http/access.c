/*
 * access.c - who is asking and what a route lets them do (see access.h).
 *
 * A caller, once found, is kept with its request as a principal text:
 * "ROLE VIA UID USER" (UID -1 when not known, USER "-" for none), which
 * an event stream's re-asks carry (http_watch).
 */
#include "http/access.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/token.h"
#include "http/munge.h"

/* A usage error said once, without errno's words: -EINVAL. */
static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_err(0, "%s", msg);
	return -EINVAL;
}

static const char *const role_names[] = {"anonymous", "user", "reader", "agent", "admin"};

const char *caller_role_name(enum caller_role r)
{
	return (size_t)r < sizeof(role_names) / sizeof(role_names[0]) ? role_names[r] : "?";
}

int access_load_token(const char *path, char *buf, size_t size)
{
	return token_read_file(path, buf, size);
}

int access_add_proxy(struct access_policy *p, const char *spec)
{
	char addr[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(spec, '/');
	size_t len = slash ? (size_t)(slash - spec) : strlen(spec);
	struct access_net *n;
	unsigned max;
	char *end;

	if (p->nproxies >= ACCESS_PROXIES_MAX)
		return bad("at most %d --trusted-proxy", ACCESS_PROXIES_MAX);
	if (len == 0 || len >= sizeof(addr))
		return bad("bad --trusted-proxy '%s' (ADDR[/BITS])", spec);
	memcpy(addr, spec, len);
	addr[len] = '\0';
	n = &p->proxy[p->nproxies];
	memset(n, 0, sizeof(*n));
	if (inet_pton(AF_INET, addr, n->addr) == 1) {
		n->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, addr, n->addr) == 1) {
		n->family = AF_INET6;
		max = 128;
	} else {
		return bad("bad --trusted-proxy '%s': not an IPv4 or IPv6 address", spec);
	}
	n->bits = max;
	if (slash) {
		unsigned long bits = strtoul(slash + 1, &end, 10);

		if (!slash[1] || *end || bits > max)
			return bad("bad --trusted-proxy '%s': /BITS from 0 to %u", spec, max);
		n->bits = (unsigned)bits;
	}
	p->nproxies++;
	return 0;
}

/* A user name as the store and the proxies spell one: 1..63 bytes, no space or control. */
static bool user_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= ACCESS_USER_MAX || strcmp(s, "-") == 0) /* "-": none, in a principal */
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f || *s == ',' || *s == '"' || *s == '\\')
			return false;
	return true;
}

int access_add_admins(struct access_policy *p, const char *list)
{
	const char *s = list;

	while (*s) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		char name[ACCESS_USER_MAX];

		if (len == 0 || len >= sizeof(name) - 1)
			return bad("bad --admins '%s' (USER,@GROUP,...)", list);
		memcpy(name, s, len);
		name[len] = '\0';
		if (name[0] == '@') {
			struct group gr, *res = NULL;
			char buf[16384];

			if (getgrnam_r(name + 1, &gr, buf, sizeof(buf), &res) || !res)
				return bad("--admins: no group '%s' on this machine", name + 1);
			if (p->nadmin_groups >= ACCESS_ADMINS_MAX)
				return bad("--admins: at most %d groups", ACCESS_ADMINS_MAX);
			p->admin_gid[p->nadmin_groups++] = res->gr_gid;
		} else {
			if (!user_name_ok(name))
				return bad("--admins: '%s' is not a user name", name);
			if (p->nadmin_users >= ACCESS_ADMINS_MAX)
				return bad("--admins: at most %d users", ACCESS_ADMINS_MAX);
			strcpy(p->admin_user[p->nadmin_users++], name);
		}
		s += len + (comma ? 1 : 0);
	}
	return 0;
}

bool access_listen_is_loopback(const char *listen)
{
	struct sockaddr_storage sa;
	unsigned salen;

	if (!listen || http_parse_listen(listen, &sa, &salen))
		return false;
	if (sa.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&sa;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&sa;

		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	}
	return false;
}

void access_settle(struct access_policy *p, const char *listen)
{
	bool protected = p->has_read_token || p->munge || p->nproxies > 0;

	p->open = p->insecure || (access_listen_is_loopback(listen) && !protected);
}

/* ---- the caller ---- */

static bool token_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

/* The 401 with a WWW-Authenticate for each way in this server takes. */
static void unauthorized(const struct access_policy *p, struct http_response *res, const char *msg)
{
	http_error(res, 401, msg);
	if (p->has_token || p->has_admin_token || p->has_read_token || !p->munge)
		http_add_header(res, "WWW-Authenticate", "Bearer realm=\"jobscope\"");
	if (p->munge)
		http_add_header(res, "WWW-Authenticate", "Munge");
}

static bool in_net(const struct access_net *n, const struct sockaddr_storage *sa)
{
	const unsigned char *a;
	unsigned char mapped[16];
	unsigned full, rest;

	if (sa->ss_family == AF_INET6) {
		a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
		if (n->family == AF_INET) { /* ::ffff:a.b.c.d */
			static const unsigned char prefix[12] = {0, 0, 0, 0, 0,	   0,
								 0, 0, 0, 0, 0xff, 0xff};

			if (memcmp(a, prefix, 12) != 0)
				return false;
			memcpy(mapped, a + 12, 4);
			a = mapped;
		}
	} else if (sa->ss_family == AF_INET) {
		if (n->family != AF_INET)
			return false;
		a = (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr.s_addr;
	} else {
		return false;
	}
	full = n->bits / 8;
	rest = n->bits % 8;
	if (memcmp(a, n->addr, full) != 0)
		return false;
	return rest == 0 || ((a[full] ^ n->addr[full]) & (0xff00 >> rest) & 0xff) == 0;
}

static bool is_admin_user(const struct access_policy *p, const char *user)
{
	struct passwd pw, *res = NULL;
	gid_t groups[256];
	int ngroups = (int)(sizeof(groups) / sizeof(groups[0]));
	char buf[16384];

	for (unsigned i = 0; i < p->nadmin_users; i++)
		if (strcmp(p->admin_user[i], user) == 0)
			return true;
	if (!p->nadmin_groups || getpwnam_r(user, &pw, buf, sizeof(buf), &res) || !res)
		return false;
	if (getgrouplist(user, res->pw_gid, groups, &ngroups) < 0)
		ngroups = (int)(sizeof(groups) / sizeof(groups[0]));
	for (int g = 0; g < ngroups; g++)
		for (unsigned i = 0; i < p->nadmin_groups; i++)
			if (groups[g] == p->admin_gid[i])
				return true;
	return false;
}

/* A person: user, or admin when listed. */
static void person(const struct access_policy *p, struct caller *c, const char *via,
		   const char *user, int64_t uid)
{
	c->via = via;
	snprintf(c->user, sizeof(c->user), "%s", user);
	c->uid = uid;
	/* root by the kernel's word (munged's): an admin; a proxy's "root" is a name like others */
	c->role = (uid == 0 && strcmp(via, "munge") == 0) || is_admin_user(p, user) ? CALLER_ADMIN
										    : CALLER_USER;
}

static bool by_munge(const struct access_policy *p, const char *cred, struct caller *c,
		     struct http_response *res)
{
	struct passwd pw, *found = NULL;
	char msg[256], buf[16384];
	uid_t uid;
	gid_t gid;
	int ret = munge_cred_decode(cred, &uid, &gid, msg, sizeof(msg));

	if (ret == -EACCES) {
		unauthorized(p, res, msg);
		return false;
	}
	if (ret) {
		log_warn(0, "%s", msg);
		http_error(res, 503, "the head cannot check MUNGE credentials now (munged)");
		return false;
	}
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) || !found ||
	    !user_name_ok(found->pw_name)) {
		http_error(res, 403, "the credential's uid has no user name on this machine");
		return false;
	}
	person(p, c, "munge", found->pw_name, uid);
	return true;
}

static bool by_proxy(const struct access_policy *p, const struct http_request *req,
		     struct caller *c, struct http_response *res, bool *found)
{
	struct sockaddr_storage sa;
	struct passwd pw, *pwr = NULL;
	char buf[16384];
	const char *user;
	bool trusted = false;

	*found = false;
	if (!p->nproxies || !p->user_header[0] || http_peer(req, &sa))
		return true;
	for (unsigned i = 0; i < p->nproxies && !trusted; i++)
		trusted = in_net(&p->proxy[i], &sa);
	user = trusted ? http_header(req, p->user_header) : NULL;
	if (!user)
		return true;
	if (!user_name_ok(user)) {
		http_error(res, 403, "the proxy's user header holds no user name");
		return false;
	}
	*found = true;
	person(p, c, "proxy", user,
	       getpwnam_r(user, &pw, buf, sizeof(buf), &pwr) == 0 && pwr ? (int64_t)pwr->pw_uid
									 : -1);
	return true;
}

/* A principal text back into c; false when it is not one this file wrote. */
static bool from_principal(const char *s, struct caller *c)
{
	char role[16], via[16], user[ACCESS_USER_MAX];
	long long uid;

	if (sscanf(s, "%15s %15s %lld %63s", role, via, &uid, user) != 4)
		return false;
	for (size_t r = 0; r < sizeof(role_names) / sizeof(role_names[0]); r++)
		if (strcmp(role, role_names[r]) == 0)
			c->role = (enum caller_role)r;
	c->via = strcmp(via, "munge") == 0   ? "munge"
		 : strcmp(via, "proxy") == 0 ? "proxy"
		 : strcmp(via, "token") == 0 ? "token"
					     : "none";
	c->uid = uid;
	snprintf(c->user, sizeof(c->user), "%s", strcmp(user, "-") == 0 ? "" : user);
	return true;
}

bool access_identify(const struct access_policy *p, const struct http_request *req,
		     struct caller *c, struct http_response *res)
{
	const char *auth = http_header(req, "Authorization");
	const char *kept = http_principal(req);
	char principal[HTTP_PRINCIPAL_MAX];
	bool found = false;

	memset(c, 0, sizeof(*c));
	c->role = CALLER_ANONYMOUS;
	c->via = "none";
	c->uid = -1;
	if (kept && from_principal(kept, c))
		return true;
	if (auth && strncmp(auth, "Bearer ", 7) == 0) {
		const char *t = auth + 7;

		c->via = "token";
		if (p->has_admin_token && token_equal(t, p->admin_token))
			c->role = CALLER_ADMIN;
		else if (p->has_token && token_equal(t, p->token))
			c->role = CALLER_AGENT;
		else if (p->has_read_token && token_equal(t, p->read_token))
			c->role = CALLER_READER;
		else if (p->has_token || p->has_admin_token || p->has_read_token) {
			http_error(res, 403, "wrong token");
			return false;
		} else {
			c->via = "none"; /* no token is set: a token proves nothing */
		}
	} else if (auth && strncmp(auth, "Munge ", 6) == 0 && p->munge) {
		if (!by_munge(p, auth + 6, c, res))
			return false;
	} else if (!by_proxy(p, req, c, res, &found)) {
		return false;
	}
	snprintf(principal, sizeof(principal), "%s %s %" PRId64 " %s", caller_role_name(c->role),
		 c->via, c->uid, c->user[0] ? c->user : "-");
	http_set_principal(req, principal);
	return true;
}

bool access_sees_all(const struct access_policy *p, const struct caller *c)
{
	switch (c->role) {
	case CALLER_ADMIN:
	case CALLER_READER:
		return true;
	case CALLER_AGENT: /* the agents' token is the admin one without --admin-token-file */
		return !p->has_admin_token;
	case CALLER_ANONYMOUS:
		return p->open;
	case CALLER_USER:
		return false;
	}
	return false;
}

bool access_permits(const struct access_policy *p, const struct caller *c, enum http_access a,
		    struct http_response *res)
{
	bool tokens = p->has_token || p->has_admin_token;

	switch (a) {
	case HTTP_ACCESS_PUBLIC:
		return true;
	case HTTP_ACCESS_USER:
		if (c->role == CALLER_USER || access_sees_all(p, c))
			return true;
		if (c->role != CALLER_ANONYMOUS) {
			http_error(res, 403, "wrong token: it reads nothing");
			return false;
		}
		break;
	case HTTP_ACCESS_READER:
		if (access_sees_all(p, c))
			return true;
		if (c->role != CALLER_ANONYMOUS) {
			http_error(res, 403, "every user's data: an admin's (or the read token's)");
			return false;
		}
		break;
	case HTTP_ACCESS_INGEST:
		if (!p->has_token || c->role == CALLER_AGENT)
			return true;
		if (c->role == CALLER_ANONYMOUS) {
			unauthorized(p, res,
				     "a bearer token is required (Authorization: Bearer ...)");
			return false;
		}
		http_error(res, 403, "wrong token: ingest takes the agents' token");
		return false;
	case HTTP_ACCESS_OWNER:
		if (c->role == CALLER_USER)
			return true;
		/* the rest as for an admin's */
		__attribute__((fallthrough));
	case HTTP_ACCESS_ADMIN:
		if (c->role == CALLER_ADMIN || (c->role == CALLER_AGENT && !p->has_admin_token) ||
		    (!tokens && p->open && !p->munge && !p->nproxies))
			return true;
		if (c->role == CALLER_ANONYMOUS)
			break;
		http_error(res, 403,
			   c->role == CALLER_USER ? "an admin's: you are not in --admins"
						  : "wrong token: an admin's");
		return false;
	}
	if (p->munge || p->nproxies || tokens || p->has_read_token)
		unauthorized(p, res,
			     p->munge ? "who are you? (a MUNGE credential, or a bearer token)"
				      : "a bearer token is required (Authorization: Bearer ...)");
	else
		unauthorized(p, res,
			     "this server serves its own machine's callers only: "
			     "it was started without a way to authenticate");
	return false;
}
