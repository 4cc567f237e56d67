/*
 * report_query.h - what `jobscope report` is asked, answered from a store:
 * one job or run (summary, analysis and verdicts), or the history of many
 * (reserved vs used by user, node, job, hour or weekday).  The CLI and the
 * head's /api/v1/report both go through report_query_run().
 *
 * Errors: 0 or -errno with a message in err (never printed here):
 * -EINVAL for a question that does not make sense, -ENOENT when nothing
 * matches, others from the store.
 */
#ifndef JOBSCOPE_REPORT_QUERY_H
#define JOBSCOPE_REPORT_QUERY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "analysis/history.h"
#include "report/report.h"
#include "store/store.h"

enum report_format { REPORT_FMT_TEXT, REPORT_FMT_JSON, REPORT_FMT_CSV, REPORT_FMT_HTML };

struct report_query {
	const char *run_id;  /* a row id or "last"; NULL */
	const char *job_key; /* scheduler:id[:start_ms] or id; NULL */
	const char *k8s_job; /* "NAMESPACE/NAME": the pods of that owner (jobs.k8s_owner); NULL */
	const char *user, *node;
	/*
	 * NULL: any job; else that user's alone (a head's user caller): the
	 * history is theirs (-EACCES when user names another), another's job
	 * or run is -ENOENT as if it were not there.
	 */
	const char *owner;
	bool has_since, has_until;
	int64_t since_ms, until_ms;
	bool has_by;
	enum history_by by;
	enum report_format format;
	bool utf8;
	const char *plot_path;		      /* a job's timeline plot to write too; NULL */
	const struct progress_hook *progress; /* told of the rows or jobs read; NULL: none */
	/* the store as errors name it: NULL, its path (the CLI); a head says "the head's store" */
	const char *store_label;
};

int report_format_parse(const char *s, enum report_format *out);
/* Whether the query asks for history rather than one job. */
bool report_query_is_history(const struct report_query *q);
int report_query_run(struct store *st, const struct report_query *q, int64_t now_ms,
		     struct strbuf *out, char *err, size_t errsize);
/*
 * A profiling session (a head's store): its report in words (text) or its
 * export (json, csv: the bytes `jobscope export` writes); with
 * q->plot_path, its plots per device too, each file's name appended to
 * plots (report/session_export.h).  q's other selectors are not read:
 * the caller refuses them.  -EINVAL (said in err) for html; -ENOENT when
 * there is no such session; other failures are logged where they happen.
 */
int report_query_session(struct store *st, const char *name, const struct report_query *q,
			 struct strbuf *out, struct strbuf *plots, char *err, size_t errsize);
/*
 * A loaded job's report in q's format (and q->plot_path's plot), as for a
 * job of a store: for reports built elsewhere (prom/promsrc.h).  Errors as
 * report_query_run's.
 */
struct job_report;
int report_query_render(const struct job_report *r, const struct report_query *q,
			struct strbuf *out, char *err, size_t errsize);
/*
 * The pods whose stored owner is q->k8s_job, on every node, summed
 * (report/report_group.c); text or json.  Called by report_query_run.
 * Errors as report_query_run's; a user caller (q->owner) sees their own
 * pods alone.
 */
int report_query_k8s_group(struct store *st, const struct report_query *q, struct strbuf *out,
			   char *err, size_t errsize);
/* A run id: decimal digits, above 0 (no sign, no blanks); 0 or -EINVAL. */
int report_parse_run_id(const char *s, int64_t *id);

#endif
