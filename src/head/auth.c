/*
 * auth.c - the head's bearer tokens: read from their files, and checked
 * against a route's access before its handler runs.
 *
 *   public  anyone
 *   read    anyone, unless --read-token-file: then it, or the admin token
 *   ingest  the agents' token (--token-file), when one is set
 *   admin   the admin token (--admin-token-file), else the agents' token
 *
 * A request without "Authorization: Bearer ..." where one is needed gets
 * 401, one with another token 403.
 */
#include "head/head.h"

#include <string.h>

#include "common/token.h"

int head_auth_load(struct head *h, const struct head_opts *o)
{
	int ret;

	if (o->token_file) {
		ret = token_read_file(o->token_file, h->token, sizeof(h->token));
		if (ret)
			return ret;
		h->has_token = true;
	}
	if (o->admin_token_file) {
		ret = token_read_file(o->admin_token_file, h->admin_token, sizeof(h->admin_token));
		if (ret)
			return ret;
		h->has_admin_token = true;
	}
	if (o->read_token_file) {
		ret = token_read_file(o->read_token_file, h->read_token, sizeof(h->read_token));
		if (ret)
			return ret;
		h->has_read_token = true;
	}
	return 0;
}

/* Compares in time that does not depend on where they differ. */
static bool token_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

static bool authorized_by(bool has, const char *token, const struct http_request *req,
			  struct http_response *res)
{
	const char *auth = http_header(req, "Authorization");

	if (!has)
		return true;
	if (!auth || strncmp(auth, "Bearer ", 7) != 0) {
		http_error(res, 401, "a bearer token is required (Authorization: Bearer ...)");
		return false;
	}
	if (!token_equal(auth + 7, token)) {
		http_error(res, 403, "wrong token");
		return false;
	}
	return true;
}

static bool bearer_is(const struct http_request *req, const char *token)
{
	const char *auth = http_header(req, "Authorization");

	return auth && strncmp(auth, "Bearer ", 7) == 0 && token_equal(auth + 7, token);
}

/* Reads: free, unless --read-token-file (then it, or the admin token). */
static bool reader(const struct head *h, const struct http_request *req, struct http_response *res)
{
	const char *admin_token = h->has_admin_token ? h->admin_token : h->token;
	bool has_admin = h->has_admin_token || h->has_token;

	if (!h->has_read_token || bearer_is(req, h->read_token) ||
	    (has_admin && bearer_is(req, admin_token)))
		return true;
	if (!http_header(req, "Authorization"))
		http_error(res, 401, "a bearer token is required (Authorization: Bearer ...)");
	else
		http_error(res, 403, "wrong token");
	return false;
}

bool head_auth_check(const struct head *h, enum http_access access, const struct http_request *req,
		     struct http_response *res)
{
	switch (access) {
	case HTTP_ACCESS_PUBLIC:
		return true;
	case HTTP_ACCESS_READ:
		return reader(h, req, res);
	case HTTP_ACCESS_INGEST:
		return authorized_by(h->has_token, h->token, req, res);
	case HTTP_ACCESS_ADMIN:
		/* the agents' token unless --admin-token-file */
		return h->has_admin_token ? authorized_by(true, h->admin_token, req, res)
					  : authorized_by(h->has_token, h->token, req, res);
	}
	http_error(res, 403, "wrong token");
	return false;
}
