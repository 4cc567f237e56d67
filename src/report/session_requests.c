/*
 * session_requests.c - a session's per-request timings per application
 * (session_requests.h): gathered from the store, sorted, and rendered as
 * text tables and as JSON with nearest-rank percentiles.
 */
#include "report/session_requests.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/array.h"
#include "common/timeutil.h"
#include "store/profiling.h"

/* A request's `other` longer than this is not parsed (the head caps bodies anyway). */
#define OTHER_MAX_BYTES ((size_t)64 << 10)

static const unsigned request_pcts[] = {50, 95, 99};

void session_requests_init(struct session_requests *r)
{
	memset(r, 0, sizeof(*r));
}

static void values_release(struct request_values *v)
{
	free(v->ms);
	memset(v, 0, sizeof(*v));
}

void session_requests_release(struct session_requests *r)
{
	for (size_t i = 0; i < r->napps; i++) {
		struct request_app *a = &r->apps[i];

		values_release(&a->queue);
		values_release(&a->processing);
		for (size_t k = 0; k < a->nkeys; k++)
			values_release(&a->other[k]);
	}
	free(r->apps);
	session_requests_init(r);
}

static int values_add(struct request_values *v, double ms)
{
	if (ARRAY_GROW(v->ms, v->n, v->alloc, 64))
		return -ENOMEM;
	v->ms[v->n++] = ms;
	return 0;
}

static struct request_app *app_of(struct session_requests *r, const char *name)
{
	struct request_app *a;

	for (size_t i = 0; i < r->napps; i++)
		if (strcmp(r->apps[i].app, name) == 0)
			return &r->apps[i];
	if (r->napps >= SESSION_REQUESTS_MAX_APPS || ARRAY_GROW(r->apps, r->napps, r->alloc, 4))
		return NULL;
	a = &r->apps[r->napps++];
	memset(a, 0, sizeof(*a));
	snprintf(a->app, sizeof(a->app), "%s", name);
	return a;
}

/* A name fit for a table's column: printable ASCII, short, not empty. */
static bool key_ok(const char *key)
{
	size_t len = 0;

	if (!key || !key[0])
		return false;
	for (; key[len]; len++)
		if ((unsigned char)key[len] < 0x20 || (unsigned char)key[len] > 0x7e ||
		    len + 1 >= SESSION_REQUESTS_KEY_MAX)
			return false;
	return true;
}

/* The named times of `other` (seconds), each into its key's values; the rest is ignored. */
static int add_other(struct request_app *a, const char *text)
{
	size_t len = strnlen(text, OTHER_MAX_BYTES + 1);
	cJSON *doc, *item;
	int ret = 0;

	if (len > OTHER_MAX_BYTES)
		return 0;
	doc = cJSON_ParseWithLength(text, len);
	if (!doc)
		return 0; /* not JSON: nothing to count (cJSON also fails so on ENOMEM) */
	if (!cJSON_IsObject(doc))
		goto out_free;
	cJSON_ArrayForEach(item, doc)
	{
		size_t k;

		if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble) || !key_ok(item->string))
			continue;
		for (k = 0; k < a->nkeys; k++)
			if (strcmp(a->key[k], item->string) == 0)
				break;
		if (k == a->nkeys) {
			if (a->nkeys >= SESSION_REQUESTS_MAX_KEYS)
				continue;
			snprintf(a->key[a->nkeys++], SESSION_REQUESTS_KEY_MAX, "%s", item->string);
		}
		ret = values_add(&a->other[k], item->valuedouble * 1000.0);
		if (ret)
			break;
	}
out_free:
	cJSON_Delete(doc);
	return ret;
}

int session_requests_add(struct session_requests *r, const struct request_record *req)
{
	struct request_app *a = app_of(r, req->app);
	int ret;

	if (!a) {
		if (r->napps < SESSION_REQUESTS_MAX_APPS)
			return -ENOMEM;
		r->dropped++;
		return 0;
	}
	a->count++;
	/* the store holds what the head took: finite seconds; a NaN would sort nowhere */
	ret = values_add(&a->queue, isfinite(req->queue_s) ? req->queue_s * 1000.0 : NAN);
	if (!ret)
		ret = values_add(&a->processing,
				 isfinite(req->processing_s) ? req->processing_s * 1000.0 : NAN);
	if (!ret && req->other)
		ret = add_other(a, req->other);
	return ret;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/* Sorted, without the values that are not numbers. */
static void values_finish(struct request_values *v)
{
	size_t n = 0;

	for (size_t i = 0; i < v->n; i++)
		if (!isnan(v->ms[i]))
			v->ms[n++] = v->ms[i];
	v->n = n;
	if (n)
		qsort(v->ms, n, sizeof(*v->ms), cmp_double);
}

void session_requests_finish(struct session_requests *r)
{
	for (size_t i = 0; i < r->napps; i++) {
		struct request_app *a = &r->apps[i];

		values_finish(&a->queue);
		values_finish(&a->processing);
		for (size_t k = 0; k < a->nkeys; k++)
			values_finish(&a->other[k]);
	}
}

static int on_request(const struct request_record *req, void *arg)
{
	return session_requests_add(arg, req);
}

int session_requests_load(struct store *st, const struct session_record *s,
			  struct session_requests *r)
{
	int ret = store_for_each_request(st, s->start_ms, s->end_ms ? s->end_ms : time_now_ms(),
					 on_request, r);

	if (!ret)
		session_requests_finish(r);
	return ret;
}

double request_percentile(const double *sorted, size_t n, unsigned pct)
{
	size_t rank;

	if (n == 0 || pct < 1 || pct > 100 || n > SIZE_MAX / 100)
		return NAN;
	rank = (pct * n + 99) / 100; /* ceil(pct * n / 100), >= 1 */
	return sorted[rank - 1];
}

static void text_row(struct strbuf *out, const char *what, const struct request_values *v)
{
	strbuf_addf(out, "    %-22s %8zu", what, v->n);
	if (!v->n) {
		strbuf_addstr(out, "          -          -          -          -\n");
		return;
	}
	for (size_t i = 0; i < sizeof(request_pcts) / sizeof(request_pcts[0]); i++)
		strbuf_addf(out, " %10.3f", request_percentile(v->ms, v->n, request_pcts[i]));
	strbuf_addf(out, " %10.3f\n", v->ms[v->n - 1]);
}

void session_requests_text(const struct session_requests *r, struct strbuf *out)
{
	char name[SESSION_REQUESTS_KEY_MAX + 16];

	if (!r->napps)
		return;
	strbuf_addstr(out, "\n  Requests (ms; percentiles nearest-rank)\n");
	for (size_t i = 0; i < r->napps; i++) {
		const struct request_app *a = &r->apps[i];

		strbuf_addf(out, "  %s: %zu requests\n", a->app, a->count);
		strbuf_addstr(out, "    time                      count        p50        p95"
				   "        p99        max\n");
		text_row(out, "queue", &a->queue);
		text_row(out, "processing", &a->processing);
		for (size_t k = 0; k < a->nkeys; k++) {
			snprintf(name, sizeof(name), "%s", a->key[k]);
			text_row(out, name, &a->other[k]);
		}
	}
	if (r->dropped)
		strbuf_addf(out, "  (%" PRId64 " requests of more than %d apps left out)\n",
			    r->dropped, SESSION_REQUESTS_MAX_APPS);
}

static void json_values(struct jsonw *w, const char *key, const struct request_values *v,
			bool count)
{
	static const char *const names[] = {"p50", "p95", "p99"};

	jsonw_key(w, key);
	jsonw_obj_begin(w);
	if (count)
		jsonw_kv_int(w, "count", (int64_t)v->n);
	for (size_t i = 0; i < sizeof(request_pcts) / sizeof(request_pcts[0]); i++)
		jsonw_kv_double_opt(w, names[i], v->n > 0,
				    request_percentile(v->ms, v->n, request_pcts[i]), 3);
	jsonw_kv_double_opt(w, "max", v->n > 0, v->n ? v->ms[v->n - 1] : 0, 3);
	jsonw_obj_end(w);
}

void session_requests_json(const struct session_requests *r, struct jsonw *w)
{
	jsonw_key(w, "requests");
	jsonw_obj_begin(w);
	for (size_t i = 0; i < r->napps; i++) {
		const struct request_app *a = &r->apps[i];

		jsonw_key(w, a->app);
		jsonw_obj_begin(w);
		jsonw_kv_int(w, "count", (int64_t)a->count);
		json_values(w, "queue_ms", &a->queue, false);
		json_values(w, "processing_ms", &a->processing, false);
		jsonw_key(w, "other_ms");
		jsonw_obj_begin(w);
		for (size_t k = 0; k < a->nkeys; k++)
			json_values(w, a->key[k], &a->other[k], true);
		jsonw_obj_end(w);
		jsonw_obj_end(w);
	}
	jsonw_obj_end(w);
	jsonw_kv_int(w, "requests_left_out", r->dropped);
}
