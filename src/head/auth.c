/*
 * auth.c - the head's access policy from its options (http/access.h holds
 * the rules): tokens, --auth munge, --trusted-proxy and --user-header,
 * --admins, --insecure; and the refusal to serve a non-loopback address
 * to anyone.  A route's check is access.c's, called by routes.c.
 */
#include "head/head.h"

#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "http/munge.h"

/* "ADDR[/BITS],..." (a list in one option, or the option given again) */
static int add_proxies(struct access_policy *p, const char *list)
{
	char one[128];

	while (list && *list) {
		const char *comma = strchr(list, ',');
		size_t len = comma ? (size_t)(comma - list) : strlen(list);

		if (len == 0 || len >= sizeof(one))
			return log_err(0, "bad --trusted-proxy '%s' (ADDR[/BITS],...)", list),
			       -EINVAL;
		memcpy(one, list, len);
		one[len] = '\0';
		if (access_add_proxy(p, one))
			return -EINVAL;
		list += len + (comma ? 1 : 0);
	}
	return 0;
}

int head_auth_load(struct head *h, const struct head_opts *o)
{
	struct access_policy *p = &h->acc;
	int ret = 0;

	memset(p, 0, sizeof(*p));
	if (o->token_file) {
		ret = access_load_token(o->token_file, p->token, sizeof(p->token));
		p->has_token = !ret;
	}
	if (!ret && o->admin_token_file) {
		ret =
		    access_load_token(o->admin_token_file, p->admin_token, sizeof(p->admin_token));
		p->has_admin_token = !ret;
	}
	if (!ret && o->read_token_file) {
		ret = access_load_token(o->read_token_file, p->read_token, sizeof(p->read_token));
		p->has_read_token = !ret;
	}
	if (ret)
		return ret;
	if (o->auth && strcmp(o->auth, "munge") != 0)
		return log_err(0, "--auth '%s': the one scheme is munge", o->auth), -EINVAL;
	p->munge = o->auth != NULL;
	if (o->munge_socket)
		munge_set_socket(o->munge_socket);
	if (add_proxies(p, o->trusted_proxy))
		return -EINVAL;
	if (o->user_header && !p->nproxies)
		return log_err(0, "--user-header goes with --trusted-proxy ADDR"), -EINVAL;
	if (p->nproxies)
		snprintf(p->user_header, sizeof(p->user_header), "%s",
			 o->user_header ? o->user_header : HEAD_DEFAULT_USER_HEADER);
	if (o->admins && access_add_admins(p, o->admins))
		return -EINVAL;
	p->insecure = o->insecure;
	access_settle(p, o->listen);
	if (!p->has_token && !p->insecure && !access_listen_is_loopback(o->listen)) {
		log_err(0,
			"refusing to serve %s to anyone who can reach it (every user's "
			"command lines, ingest, sessions): give --token-file F (the agents' "
			"token; reads then need a token, --auth munge or --trusted-proxy), "
			"or --insecure on a private network, or --listen 127.0.0.1:PORT",
			o->listen);
		return -EPERM;
	}
	if (p->insecure)
		log_warn(0, "head: --insecure: anyone who can reach %s reads every user's jobs%s",
			 o->listen, p->has_token ? "" : ", sends rows and starts sessions");
	return 0;
}

bool head_sees_all(const struct head *h)
{
	return access_sees_all(&h->acc, &h->who);
}
