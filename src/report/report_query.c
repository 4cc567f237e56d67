/*
 * report_query.c - answer a report query from a store: pick the job (or
 * the jobs, for history), load, analyse and render it; or a profiling
 * session's report, export and plots (report/session_export.h).
 */
#include "report/report_query.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/timeutil.h"
#include "analysis/jobreport.h"
#include "report/session_export.h"
#include "store/profiling.h"
#include "store/reader.h"

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

/* The store as the query's errors name it. */
static const char *store_name(struct store *st, const struct report_query *q)
{
	return q->store_label ? q->store_label : store_path(st);
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

bool report_query_is_history(const struct report_query *q)
{
	if (q->run_id || q->job_key || q->k8s_job)
		return false;
	return q->has_by || q->user || q->node || q->has_since || q->has_until;
}

static int run_history(struct store *st, const struct report_query *q, int64_t now_ms,
		       struct strbuf *out, char *err, size_t errsize)
{
	struct history_filter f = {q->owner ? q->owner : q->user, q->node, 0, 0, q->progress};
	enum history_by by = q->has_by		    ? q->by
			     : (q->user || q->node) ? HISTORY_BY_JOB
						    : HISTORY_BY_USER;
	struct history h;
	int ret;

	if (q->plot_path)
		return fail(-EINVAL, err, errsize, "--plot draws one job's timeline: pick a job");
	if (q->owner && q->user && q->user[0] && strcmp(q->user, q->owner) != 0)
		return fail(-EACCES, err, errsize, "a user sees their own jobs alone (%s)",
			    q->owner);
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
		return fail(ret, err, errsize, "cannot read the jobs of '%s'", store_name(st, q));
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

int report_parse_run_id(const char *s, int64_t *id)
{
	char *end;
	long long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v <= 0)
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
				    store_name(st, q));
		return ret ? fail(ret, err, errsize, "cannot look up job '%s'", q->job_key) : 0;
	}
	if (q->run_id && strcmp(q->run_id, "last") != 0) {
		if (report_parse_run_id(q->run_id, id))
			return fail(-EINVAL, err, errsize,
				    "'%s' is not a run id (a number, or 'last')", q->run_id);
		return 0;
	}
	ret = store_for_each_job(st, pick_run, &p);
	if (ret)
		return fail(ret, err, errsize, "cannot list the runs of '%s'", store_name(st, q));
	if (p.count == 0)
		return fail(-ENOENT, err, errsize, "no runs in '%s'", store_name(st, q));
	if (p.count > 1 && !q->run_id)
		return fail(-EINVAL, err, errsize,
			    q->store_label
				? "%" PRId64 " runs in %s: say which (--job KEY, or 'last')"
				: "%" PRId64 " runs in '%s': say which (an id from `jobscope "
				  "runs`, or 'last')",
			    p.count, store_name(st, q));
	*id = p.last_id;
	return 0;
}

static const char *json_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double json_num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/*
 * The text of a job whose samples retention has removed, from the report
 * kept at its end: the job, its verdicts, its class, its key figures.
 */
static int text_from_summary(const struct job_record *job, const char *json, struct strbuf *out)
{
	cJSON *doc = cJSON_Parse(json);
	const cJSON *an, *v, *eff;
	char start[40];

	if (!doc)
		return -EPROTO;
	format_rfc3339_ms(job->start_ms, start, sizeof(start));
	strbuf_addf(out, "jobscope job %s:%s (%s, stored as %lld): %s\n", job->scheduler,
		    job->job_id, job->user, (long long)job->id, job->command);
	strbuf_addf(out, "  host %s, started %s", job->hostname, start);
	if (job->end_ms > job->start_ms) {
		char ran[40];

		format_duration_ms(job->end_ms - job->start_ms, ran, sizeof(ran));
		strbuf_addf(out, ", ran %s", ran);
	}
	strbuf_addstr(out, "\n  its samples have expired (retention): this is the summary kept at "
			   "its end\n\n");
	an = cJSON_GetObjectItemCaseSensitive(doc, "analysis");
	v = cJSON_GetObjectItemCaseSensitive(doc, "verdicts");
	if (cJSON_IsArray(v)) {
		const cJSON *e;
		int i = 0;

		cJSON_ArrayForEach(e, v)
		{
			const char *msg = json_str(e, "message");

			if (msg)
				report_text_verdict(out, i++ == 0,
						    verdict_severity_parse(json_str(e, "severity")),
						    msg, json_str(e, "advice"));
		}
		strbuf_addch(out, '\n');
	}
	if (cJSON_IsObject(an)) {
		const char *type = json_str(an, "job_type"), *limit = json_str(an, "bottleneck");

		strbuf_addf(out, "  %-9s %s\n", "Job type", type ? type : "cannot be judged");
		strbuf_addf(out, "  %-9s %s\n", "Limit", limit ? limit : "none clear");
		eff = cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(an, "efficiency"), "cpu");
		if (!isnan(json_num(eff, "cores_avg")))
			strbuf_addf(
			    out, "  %-9s %.2f cores on average of %.4g (efficiency %.1f%%)\n",
			    "CPU", json_num(eff, "cores_avg"), json_num(eff, "cores_reserved"),
			    json_num(eff, "efficiency_pct"));
	}
	if (!cJSON_IsObject(an))
		strbuf_addstr(out, "  (kept by a version without analysis: see --format json)\n");
	cJSON_Delete(doc);
	return strbuf_error(out);
}

/*
 * A job whose samples are gone: its stored summary, as it was written at
 * its end (JSON), or its gist (text).  -ENOENT when there is none either.
 */
static int report_from_summary(struct store *st, const struct report_query *q,
			       const struct job_record *job, struct strbuf *out, char *err,
			       size_t errsize)
{
	struct strbuf json;
	int ret;

	strbuf_init(&json, 0);
	ret = store_get_job_summary_json(st, job->id, &json);
	if (ret || !json.len) {
		strbuf_release(&json);
		return -ENOENT;
	}
	if (q->format == REPORT_FMT_JSON)
		ret = strbuf_add(out, json.buf, json.len);
	else if (q->format == REPORT_FMT_TEXT && !q->plot_path)
		ret = text_from_summary(job, json.buf, out);
	else
		ret = fail(-EINVAL, err, errsize,
			   "the samples of job %lld have expired: only its summary is kept "
			   "(--format json or text)",
			   (long long)job->id);
	strbuf_release(&json);
	return ret;
}

int report_query_render(const struct job_report *r, const struct report_query *q,
			struct strbuf *out, char *err, size_t errsize)
{
	struct report_options ro = {
	    .utf8 = q->utf8, .max_procs = 10, .cuda = &r->cuda, .app = &r->app};
	int ret;

	switch (q->format) {
	case REPORT_FMT_JSON:
		ret = report_json(&r->sum, &r->an, &r->cuda, &r->app, out);
		break;
	case REPORT_FMT_CSV:
		ret = report_csv(&r->sum, &r->js, out);
		break;
	case REPORT_FMT_HTML:
		ret = report_html(&r->sum, &r->js, &r->an, &r->cuda, &r->app, out);
		break;
	default:
		ret = report_text(&r->sum, &r->an, &ro, out);
		break;
	}
	if (ret)
		fail(ret, err, errsize, "cannot render the report: %s", strerror(-ret));
	if (!ret && q->plot_path) {
		/* plot_write has said why it failed */
		ret = plot_write(q->plot_path, &r->sum, &r->js, &r->an, &r->app);
	}
	return ret;
}

static int run_job(struct store *st, const struct report_query *q, struct strbuf *out, char *err,
		   size_t errsize)
{
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
	if (!ret && q->owner && strcmp(job.user, q->owner) != 0)
		ret = -ENOENT; /* another user's: not there for this caller */
	if (ret == -ENOENT)
		return fail(ret, err, errsize, "no run %" PRId64 " in '%s' (see `jobscope runs`)",
			    id, store_name(st, q));
	if (ret)
		return fail(ret, err, errsize, "cannot read job %" PRId64, id);
	r = malloc(sizeof(*r));
	if (!r)
		return fail(-ENOMEM, err, errsize, "out of memory");
	ret = job_report_load_progress(r, st, &job, q->progress);
	if (ret) {
		fail(ret, err, errsize, "cannot read the samples of job %" PRId64, id);
		goto out_release;
	}
	/* an ended job without samples left: what was kept at its end, if anything */
	if (r->sum.samples == 0 && job.end_ms) {
		ret = report_from_summary(st, q, &job, out, err, errsize);
		if (ret != -ENOENT)
			goto out_release;
		ret = 0;
	}
	ret = report_query_render(r, q, out, err, errsize);
out_release:
	job_report_release(r);
	free(r);
	return ret;
}

int report_query_run(struct store *st, const struct report_query *q, int64_t now_ms,
		     struct strbuf *out, char *err, size_t errsize)
{
	err[0] = '\0';
	if (q->k8s_job) {
		if (q->run_id || q->job_key || q->user || q->node || q->has_since || q->has_until ||
		    q->has_by)
			return fail(-EINVAL, err, errsize,
				    "--k8s-job picks one group of pods: not with a run id, --job, "
				    "--user, --node, --since, --until or --by");
		return report_query_k8s_group(st, q, out, err, errsize);
	}
	if (report_query_is_history(q))
		return run_history(st, q, now_ms, out, err, errsize);
	return run_job(st, q, out, err, errsize);
}

int report_query_session(struct store *st, const char *name, const struct report_query *q,
			 struct strbuf *out, struct strbuf *plots, char *err, size_t errsize)
{
	struct session_record s;
	int ret;

	err[0] = '\0';
	if (q->format == REPORT_FMT_HTML)
		return fail(-EINVAL, err, errsize,
			    "--format html is a job's or history's page: a session's report is "
			    "text, json or csv");
	ret = store_session_get(st, name, &s);
	if (ret == -ENOENT)
		return fail(ret, err, errsize, "no session '%s' in '%s'", name, store_name(st, q));
	if (ret)
		return fail(ret, err, errsize, "cannot read the sessions of '%s'",
			    store_name(st, q));
	if (q->format == REPORT_FMT_TEXT)
		ret = session_export_report(st, s.name, out);
	else
		ret = session_export_frames(st, &s, q->format == REPORT_FMT_CSV, out);
	if (ret)
		return fail(ret, err, errsize, "cannot render session '%s': %s", s.name,
			    strerror(-ret));
	/*
	 * One picture per device beside the path, then the overview at the
	 * path itself (without a frame the former writes the path too: the
	 * overview takes its place, listed once).  Both say why they failed.
	 */
	if (q->plot_path) {
		struct strbuf devices;

		strbuf_init(&devices, 0);
		ret = session_export_plots(st, &s, q->plot_path, &devices);
		if (!ret)
			ret = session_export_plot(st, &s, q->plot_path);
		if (!ret) {
			strbuf_addstr(plots, q->plot_path);
			strbuf_addch(plots, '\n');
		}
		for (char *line = devices.buf, *nl; !ret && line && (nl = strchr(line, '\n'));
		     line = nl + 1)
			if (strncmp(line, q->plot_path, (size_t)(nl - line)) != 0 ||
			    q->plot_path[nl - line] != '\0')
				strbuf_add(plots, line, (size_t)(nl - line + 1));
		strbuf_release(&devices);
	}
	return ret;
}
