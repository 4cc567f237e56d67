/*
 * api.c - what the HTTP APIs are asked (see api.h): the head's mutating
 * calls' bodies, and the jobs list's query.
 */
#include "net/api.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/timeutil.h"
#include "common/utf8.h"
#include "store/profiling.h"

static int bad(char *err, size_t size, const char *msg)
{
	snprintf(err, size, "%s", msg);
	return -EINVAL;
}

/* 1 to max - 1 bytes of valid UTF-8 without control characters (C0, DEL, C1) */
static bool text_ok(const char *n, size_t max)
{
	size_t len = n ? strlen(n) : 0;
	uint32_t cp;

	if (len == 0 || len >= max)
		return false;
	for (size_t i = 0, k; i < len; i += k) {
		k = utf8_decode(n + i, len - i, &cp);
		if (k == 0 || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0))
			return false;
	}
	return true;
}

bool api_session_name_ok(const char *n)
{
	return text_ok(n, SESSION_NAME_MAX);
}

/* cJSON ends a string at an escaped NUL: such a body is refused, never cut short */
static bool has_escaped_nul(const char *body, size_t len)
{
	static const char nul[] = "\\u0000";

	for (size_t i = 0; i + sizeof(nul) - 1 <= len; i++)
		if (body[i] == '\\' && memcmp(body + i, nul, sizeof(nul) - 1) == 0)
			return true;
	return false;
}

static bool node_name_ok(const char *n)
{
	if (!n || !*n)
		return false;
	for (const char *p = n; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == ',' || *p == 0x7f)
			return false;
	return true;
}

/* An empty body is {}; anything else must be a JSON object. */
static cJSON *object(const char *body, size_t len, char *err, size_t size)
{
	cJSON *doc;

	if (len == 0)
		return cJSON_CreateObject();
	if (has_escaped_nul(body, len)) {
		bad(err, size, "a string of the body holds a NUL character");
		return NULL;
	}
	doc = cJSON_ParseWithLength(body, len);
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		bad(err, size, "the body must be a JSON object");
		return NULL;
	}
	return doc;
}

int api_parse_session_start(const char *body, size_t len, int64_t now_ms,
			    struct session_record *s, char *err, size_t size)
{
	const cJSON *name, *iv, *nodes, *cuda;
	cJSON *doc = object(body, len, err, size);
	int ret = 0;

	if (!doc)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->start_ms = now_ms;
	name = cJSON_GetObjectItemCaseSensitive(doc, "name");
	iv = cJSON_GetObjectItemCaseSensitive(doc, "interval_ms");
	nodes = cJSON_GetObjectItemCaseSensitive(doc, "nodes");
	cuda = cJSON_GetObjectItemCaseSensitive(doc, "cuda");
	if (cuda && !cJSON_IsNull(cuda) && !cJSON_IsBool(cuda)) {
		ret = bad(err, size, "cuda: true or false");
		goto out;
	}
	s->cuda = cJSON_IsTrue(cuda);
	/* as gswarm: an empty name is no name */
	if (name && !cJSON_IsNull(name) && !(cJSON_IsString(name) && !name->valuestring[0])) {
		if (!cJSON_IsString(name) || !api_session_name_ok(name->valuestring)) {
			ret = bad(err, size, API_SESSION_NAME_RULE);
			goto out;
		}
		snprintf(s->name, sizeof(s->name), "%s", name->valuestring);
	} else {
		char t[32];

		format_local_compact(now_ms, t, sizeof(t));
		snprintf(s->name, sizeof(s->name), "gswarm_profiler_%s", t);
	}
	if (iv && !cJSON_IsNull(iv)) {
		if (!cJSON_IsNumber(iv) || !(iv->valuedouble >= 100 && iv->valuedouble <= 3600000) ||
		    iv->valuedouble != (double)(int64_t)iv->valuedouble) {
			ret = bad(err, size, "interval_ms: an integer from 100 to 3600000");
			goto out;
		}
		s->interval_ms = (int64_t)iv->valuedouble;
	}
	if (cJSON_IsArray(nodes)) {
		const cJSON *n;
		size_t used = 0;

		cJSON_ArrayForEach(n, nodes) {
			if (!cJSON_IsString(n) || !node_name_ok(n->valuestring) ||
			    used + strlen(n->valuestring) + 2 > sizeof(s->nodes)) {
				ret = bad(err, size, "nodes: host names");
				goto out;
			}
			used += (size_t)snprintf(s->nodes + used, sizeof(s->nodes) - used, "%s%s",
						 used ? "," : "", n->valuestring);
		}
	} else if (cJSON_IsString(nodes)) {
		char copy[SESSION_NODES_MAX], *save = NULL;

		if (strlen(nodes->valuestring) >= sizeof(s->nodes)) {
			ret = bad(err, size, "nodes: too long");
			goto out;
		}
		snprintf(copy, sizeof(copy), "%s", nodes->valuestring);
		for (char *n = strtok_r(copy, ",", &save); n; n = strtok_r(NULL, ",", &save))
			if (!node_name_ok(n)) {
				ret = bad(err, size, "nodes: host names");
				goto out;
			}
		snprintf(s->nodes, sizeof(s->nodes), "%s", nodes->valuestring);
	} else if (nodes && !cJSON_IsNull(nodes)) {
		ret = bad(err, size, "nodes: an array of host names");
	}
out:
	cJSON_Delete(doc);
	return ret;
}

int api_parse_session_stop(const char *body, size_t len, char *name_out, size_t name_size,
			   bool *has_name, char *err, size_t size)
{
	const cJSON *name;
	cJSON *doc = object(body, len, err, size);
	int ret = 0;

	*has_name = false;
	if (!doc)
		return -EINVAL;
	name = cJSON_GetObjectItemCaseSensitive(doc, "name");
	if (name && !cJSON_IsNull(name)) {
		if (!cJSON_IsString(name) || strlen(name->valuestring) >= name_size ||
		    !name->valuestring[0])
			ret = bad(err, size, "name: a session's name");
		else {
			snprintf(name_out, name_size, "%s", name->valuestring);
			*has_name = true;
		}
	}
	cJSON_Delete(doc);
	return ret;
}

/* A limit: decimal digits only, 1..STORE_JOBS_LIMIT_MAX. */
static bool limit_ok(const char *s, int64_t *out)
{
	int64_t v = 0;

	if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 9)
		return false;
	for (; *s; s++)
		v = v * 10 + (*s - '0');
	if (v < 1 || v > STORE_JOBS_LIMIT_MAX)
		return false;
	*out = v;
	return true;
}

static const char *present(api_arg_fn arg, void *ctx, const char *name)
{
	const char *v = arg(ctx, name);

	return v && *v ? v : NULL;
}

int api_parse_jobs_query(api_arg_fn arg, void *ctx, int64_t now_ms, struct store_jobs_filter *f,
			 char *err, size_t size)
{
	const char *state = present(arg, ctx, "state"), *since = present(arg, ctx, "since");
	const char *until = present(arg, ctx, "until"), *limit = present(arg, ctx, "limit");
	const char *cursor = present(arg, ctx, "cursor");

	memset(f, 0, sizeof(*f));
	f->user = present(arg, ctx, "user");
	f->node = present(arg, ctx, "node");
	f->state = STORE_JOBS_ALL;
	if (state && strcmp(state, "running") == 0)
		f->state = STORE_JOBS_RUNNING;
	else if (state && strcmp(state, "ended") == 0)
		f->state = STORE_JOBS_ENDED;
	else if (state && strcmp(state, "all") != 0)
		return bad(err, size, "state: running, ended or all");
	f->when.has_since = since != NULL;
	f->when.has_until = until != NULL;
	if ((since && parse_time_ms(since, now_ms, &f->when.since_ms)) ||
	    (until && parse_time_ms(until, now_ms, &f->when.until_ms)))
		return bad(err, size,
			   "since/until: ms since the epoch, RFC 3339, or an age (2h, 7d)");
	if (since && until && f->when.since_ms > f->when.until_ms)
		return bad(err, size, "since must not come after until");
	f->limit = STORE_JOBS_LIMIT_DEFAULT;
	if (limit && !limit_ok(limit, &f->limit)) {
		snprintf(err, size, "limit: a whole number from 1 to %d", STORE_JOBS_LIMIT_MAX);
		return -EINVAL;
	}
	if (cursor) {
		if (store_jobs_cursor_parse(cursor, &f->after))
			return bad(err, size, "cursor: the \"next\" of an earlier page, as it was");
		f->has_after = true;
	}
	return 0;
}

static const char *query_arg(void *ctx, const char *name)
{
	return http_query_arg(ctx, name);
}

int api_jobs_query(const struct http_request *req, int64_t now_ms, struct store_jobs_filter *f,
		   char *err, size_t size)
{
	return api_parse_jobs_query(query_arg, (void *)req, now_ms, f, err, size);
}

/* A number of seconds: JSON number, finite, >= 0 (an integer is a number too). */
static int seconds_of(const cJSON *v, const char *field, double *out, bool *missing, char *err,
		      size_t size)
{
	if (!cJSON_IsNumber(v)) {
		*missing = true;
		snprintf(err, size, "%s: a number of seconds is required", field);
		return -EINVAL;
	}
	if (!(v->valuedouble >= 0) || v->valuedouble > 1e12) {
		snprintf(err, size, "%s: seconds from 0 to 1e12", field);
		return -EINVAL;
	}
	*out = v->valuedouble;
	return 0;
}

static int other_times(const cJSON *o, struct request_record *r, bool *missing, char *err,
		       size_t size)
{
	const cJSON *v;
	cJSON *copy;
	int n = 0;

	if (!o || cJSON_IsNull(o))
		return 0;
	if (!cJSON_IsObject(o)) {
		*missing = true;
		return bad(err, size, "other_time: an object of named seconds");
	}
	copy = cJSON_CreateObject();
	if (!copy)
		return bad(err, size, "out of memory");
	cJSON_ArrayForEach(v, o)
	{
		double s;

		if (++n > API_OTHER_TIMES_MAX || !text_ok(v->string, 128)) {
			cJSON_Delete(copy);
			return bad(err, size,
				   "other_time: at most 64 names of 1 to 127 bytes of text");
		}
		if (seconds_of(v, "other_time", &s, missing, err, size) ||
		    !cJSON_AddNumberToObject(copy, v->string, s)) {
			cJSON_Delete(copy);
			return -EINVAL;
		}
	}
	r->other = n ? cJSON_PrintUnformatted(copy) : NULL;
	cJSON_Delete(copy);
	if (n && !r->other)
		return bad(err, size, "out of memory");
	return 0;
}

int api_parse_request_record(const char *body, size_t len, int64_t now_ms,
			     struct request_record *r, bool *missing, char *err, size_t size)
{
	const cJSON *app;
	cJSON *doc;
	int ret;

	memset(r, 0, sizeof(*r));
	r->ts_ms = now_ms;
	*missing = false;
	if (len == 0) {
		*missing = true;
		return bad(err, size, "the body must be a JSON object");
	}
	doc = object(body, len, err, size);
	if (!doc)
		return -EINVAL;
	app = cJSON_GetObjectItemCaseSensitive(doc, "app_name");
	if (!cJSON_IsString(app)) {
		*missing = true;
		ret = bad(err, size, "app_name: a string is required");
	} else if (!text_ok(app->valuestring, sizeof(r->app))) {
		ret = bad(err, size, "app_name: 1 to 255 bytes of UTF-8 text without control "
				     "characters");
	} else {
		snprintf(r->app, sizeof(r->app), "%s", app->valuestring);
		ret = seconds_of(cJSON_GetObjectItemCaseSensitive(doc, "queue_time"), "queue_time",
				 &r->queue_s, missing, err, size);
		if (!ret)
			ret = seconds_of(cJSON_GetObjectItemCaseSensitive(doc, "processing_time"),
					 "processing_time", &r->processing_s, missing, err, size);
		if (!ret)
			ret = other_times(cJSON_GetObjectItemCaseSensitive(doc, "other_time"), r,
					  missing, err, size);
	}
	cJSON_Delete(doc);
	return ret;
}
