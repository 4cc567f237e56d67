/*
 * report_query.c - answer a report query from a store: pick the job (or
 * the jobs, for history), load, analyse and render it.
 */
#include "report_query.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "jobreport.h"

#define DAY_MS (24 * 3600000LL)
/* History slices jobs by hour: a bound on the work one question can ask for. */
#define HISTORY_MAX_DAYS 3660

static int fail(int ret, char *err, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(int ret, char *err, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
	return ret;
}

int report_format_parse(const char *s, enum report_format *out)
{
	static const char *const names[] = {"text", "json", "csv", "html"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i]) == 0) {
			*out = (enum report_format)i;
			return 0;
		}
	return -EINVAL;
}

int report_parse_time(const char *s, int64_t now_ms, int64_t *ms)
{
	int64_t d;

	if (parse_rfc3339_ms(s, ms) == 0)
		return 0;
	if (parse_duration_ms(s, &d) == 0 && d <= now_ms) {
		*ms = now_ms - d;
		return 0;
	}
	return -EINVAL;
}

bool report_query_is_history(const struct report_query *q)
{
	if (q->run_id || q->job_key)
		return false;
	return q->has_by || q->user || q->node || q->has_since || q->has_until;
}

static int run_history(struct store *st, const struct report_query *q, int64_t now_ms,
		       struct strbuf *out, char *err, size_t errsize)
{
	struct history_filter f = {q->user, q->node, 0, 0};
	enum history_by by = q->has_by ? q->by : (q->user || q->node) ? HISTORY_BY_JOB
								  : HISTORY_BY_USER;
	struct history h;
	int ret;

	if (q->plot_path)
		return fail(-EINVAL, err, errsize, "--plot draws one job's timeline: pick a job");
	f.until_ms = q->has_until ? q->until_ms : now_ms;
	f.since_ms = q->has_since ? q->since_ms : f.until_ms - 30 * DAY_MS;
	if (f.since_ms >= f.until_ms)
		return fail(-EINVAL, err, errsize, "--since must come before --until");
	if (f.until_ms - f.since_ms > HISTORY_MAX_DAYS * DAY_MS)
		return fail(-EINVAL, err, errsize, "a window of at most %d days, please",
			    HISTORY_MAX_DAYS);
	history_init(&h, by, f.since_ms, f.until_ms);
	ret = history_load(&h, st, &f);
	if (ret) {
		history_release(&h);
		return fail(ret, err, errsize, "cannot read the jobs of '%s'", store_path(st));
	}
	switch (q->format) {
	case REPORT_FMT_JSON:
		ret = history_json(&h, out);
		break;
	case REPORT_FMT_CSV:
		ret = history_csv(&h, out);
		break;
	case REPORT_FMT_HTML:
		ret = history_html(&h, out);
		break;
	default:
		ret = history_text(&h, out);
		break;
	}
	history_release(&h);
	return ret;
}

struct pick {
	int64_t last_id;
	int64_t count;
};

static int pick_run(const struct job_record *j, void *arg)
{
	struct pick *p = arg;

	if (strcmp(j->scheduler, "run") == 0) {
		p->count++;
		p->last_id = j->id;
	}
	return 0;
}

static int parse_id(const char *s, int64_t *id)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v <= 0)
		return -EINVAL;
	*id = v;
	return 0;
}

/* The row of the job the query names. */
static int pick_job(struct store *st, const struct report_query *q, int64_t *id, char *err,
		    size_t errsize)
{
	struct pick p = {0, 0};
	int ret;

	if (q->job_key) {
		ret = store_find_job_key(st, q->job_key, id);
		if (ret == -EINVAL)
			return fail(ret, err, errsize,
				    "bad job '%s' (scheduler:id:start_ms, scheduler:id or id)",
				    q->job_key);
		if (ret == -ENOENT)
			return fail(ret, err, errsize, "no job '%s' in '%s'", q->job_key,
				    store_path(st));
		return ret ? fail(ret, err, errsize, "cannot look up job '%s'", q->job_key) : 0;
	}
	if (q->run_id && strcmp(q->run_id, "last") != 0) {
		if (parse_id(q->run_id, id))
			return fail(-EINVAL, err, errsize, "'%s' is not a run id (a number, or 'last')",
				    q->run_id);
		return 0;
	}
	ret = store_for_each_job(st, pick_run, &p);
	if (ret)
		return fail(ret, err, errsize, "cannot list the runs of '%s'", store_path(st));
	if (p.count == 0)
		return fail(-ENOENT, err, errsize, "no runs in '%s'", store_path(st));
	if (p.count > 1 && !q->run_id)
		return fail(-EINVAL, err, errsize,
			    "%" PRId64 " runs in '%s': say which (an id from `jobscope runs`, or "
			    "'last')",
			    p.count, store_path(st));
	*id = p.last_id;
	return 0;
}

static int run_job(struct store *st, const struct report_query *q, struct strbuf *out, char *err,
		   size_t errsize)
{
	struct report_options ro = {.utf8 = q->utf8, .max_procs = 10};
	struct job_report *r;
	struct job_record job;
	int64_t id = 0;
	int ret;

	if (q->user || q->node || q->has_since || q->has_until || q->has_by)
		return fail(-EINVAL, err, errsize,
			    "--user, --node, --since, --until and --by select many jobs: not with "
			    "a run id or --job");
	ret = pick_job(st, q, &id, err, errsize);
	if (ret)
		return ret;
	ret = store_get_job(st, id, &job);
	if (ret == -ENOENT)
		return fail(ret, err, errsize, "no run %" PRId64 " in '%s' (see `jobscope runs`)", id,
			    store_path(st));
	if (ret)
		return fail(ret, err, errsize, "cannot read job %" PRId64, id);
	r = malloc(sizeof(*r));
	if (!r)
		return fail(-ENOMEM, err, errsize, "out of memory");
	ret = job_report_load(r, st, &job);
	if (ret) {
		fail(ret, err, errsize, "cannot read the samples of job %" PRId64, id);
		goto out_release;
	}
	switch (q->format) {
	case REPORT_FMT_JSON:
		ret = report_json(&r->sum, &r->an, out);
		break;
	case REPORT_FMT_CSV:
		ret = report_csv(&r->sum, &r->js, out);
		break;
	case REPORT_FMT_HTML:
		ret = report_html(&r->sum, &r->js, &r->an, out);
		break;
	default:
		ret = report_text(&r->sum, &r->an, &ro, out);
		break;
	}
	if (ret)
		fail(ret, err, errsize, "cannot render the report: %s", strerror(-ret));
	if (!ret && q->plot_path) {
		/* plot_write has said why it failed */
		ret = plot_write(q->plot_path, &r->sum, &r->js, &r->an);
	}
out_release:
	job_report_release(r);
	free(r);
	return ret;
}

int report_query_run(struct store *st, const struct report_query *q, int64_t now_ms,
		     struct strbuf *out, char *err, size_t errsize)
{
	err[0] = '\0';
	if (report_query_is_history(q))
		return run_history(st, q, now_ms, out, err, errsize);
	return run_job(st, q, out, err, errsize);
}
