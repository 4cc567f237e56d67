/*
 * fuzz_jobs_query.c - libFuzzer target for what GET /api/v1/jobs is asked
 * (the agent's and the head's): the input is a query string,
 * "name=value&name=value" (no %-decoding: the server did that), given to
 * api_parse_jobs_query; the whole input is also tried as a cursor and as
 * a time.  Any bytes give a filter that keeps its promises, or -EINVAL
 * with a message and nothing else.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "net/api.h"
#include "store/queries.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 16

struct query {
	char *name[MAX_ARGS], *value[MAX_ARGS];
	int n;
};

/* the first value of name, as a server's lookup answers */
static const char *query_get(void *ctx, const char *name)
{
	const struct query *q = ctx;

	for (int i = 0; i < q->n; i++)
		if (strcmp(q->name[i], name) == 0)
			return q->value[i];
	return NULL;
}

static void check_filter(const struct store_jobs_filter *f, const struct query *q)
{
	char buf[STORE_JOBS_CURSOR_MAX];
	struct store_jobs_cursor again;

	if (f->limit < 1 || f->limit > STORE_JOBS_LIMIT_MAX)
		abort();
	if (f->state != STORE_JOBS_ALL && f->state != STORE_JOBS_RUNNING &&
	    f->state != STORE_JOBS_ENDED)
		abort();
	if (f->when.has_since && f->when.has_until && f->when.since_ms > f->when.until_ms)
		abort();
	if ((f->user && !*f->user) || (f->node && !*f->node) || f->job_row || f->with_sessions)
		abort();
	if (f->user && f->user != query_get((void *)q, "user"))
		abort();
	if (f->has_after) {
		/* a cursor that parsed is written back as the same text */
		store_jobs_cursor_format(&f->after, buf, sizeof(buf));
		if (strcmp(buf, query_get((void *)q, "cursor")) != 0 ||
		    store_jobs_cursor_parse(buf, &again) || again.start_ms != f->after.start_ms ||
		    again.id != f->after.id || again.id <= 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), *p, err[256];
	struct store_jobs_filter f;
	struct store_jobs_cursor c = {-1, -1};
	struct query q = {0};
	int64_t ms = -12345;
	int ret;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	/* the whole input: a cursor, a time */
	ret = store_jobs_cursor_parse(s, &c);
	if (ret == 0) {
		char buf[STORE_JOBS_CURSOR_MAX];

		store_jobs_cursor_format(&c, buf, sizeof(buf));
		if (strcmp(buf, s) != 0 || c.start_ms < 0 || c.id <= 0)
			abort();
	} else if (ret != -EINVAL || c.start_ms != -1 || c.id != -1) {
		abort();
	}
	ret = parse_time_ms(s, 1795340895123LL, &ms);
	if ((ret == 0 && ms < 0) || (ret != 0 && (ret != -EINVAL || ms != -12345)))
		abort();

	/* as a query string */
	for (p = s; p && q.n < MAX_ARGS;) {
		char *amp = strchr(p, '&'), *eq;

		if (amp)
			*amp = '\0';
		eq = strchr(p, '=');
		q.name[q.n] = p;
		q.value[q.n] = eq ? eq + 1 : p + strlen(p);
		if (eq)
			*eq = '\0';
		q.n++;
		p = amp ? amp + 1 : NULL;
	}
	err[0] = '\0';
	ret = api_parse_jobs_query(query_get, &q, 1795340895123LL, &f, err, sizeof(err));
	if (ret == 0)
		check_filter(&f, &q);
	else if (ret != -EINVAL || !err[0])
		abort();
	free(s);
	return 0;
}
