/*
 * cmd_report.c - `jobscope report`: one run or job (figures, analysis,
 * verdicts; text, JSON, CSV, HTML, a plot) or the history of many (by
 * user, node, job, hour, weekday), or a profiling session (text, its
 * export, plots per device), from a store or from a head.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/log.h"
#include "common/progress.h"
#include "common/timeutil.h"
#include "common/token.h"
#include "net/client.h"
#include "prom/promsrc.h"
#include "report/report_query.h"
#include "report/session_export.h"
#include "store/store.h"

static const char report_head[] =
    "usage: jobscope report [--db PATH | --head URL]\n"
    "                       [RUN_ID | --job KEY | --k8s-job NS/NAME | --session NAME |\n"
    "                        --user U | --node N]\n"
    "                       [--since T] [--until T] [--by user|node|job|hour|weekday|framework]\n"
    "                       [--format text|json|csv|html] [-o FILE] [--plot FILE.png|.pdf|.svg]\n"
    "       jobscope report --prometheus URL (--job KEY | --pod NS/NAME | --node N)\n"
    "                       [--since T] [--until T] [--step S] [--format ...] [--plot ...]\n"
    "\n"
    "One job: what it used against what it had, its bottleneck, period, memory\n"
    "trend and type, and verdicts with the numbers behind them and what to ask\n"
    "for next time.  Without a selector: the store's only run ('last': the\n"
    "latest; `jobscope runs` lists them).  --job KEY on an agent's or head's\n"
    "store: scheduler:id:start_ms, scheduler:id or a bare id (the latest match).\n"
    "RUN_ID is a row of the store (--db); a head numbers its rows on its own\n"
    "machine, so with --head give --job KEY or 'last'.\n"
    "\n"
    "A Kubernetes training job (--k8s-job NS/NAME, text or json): every pod\n"
    "whose owner label (the agent's --cri-socket: Kubeflow's, a Job's, an\n"
    "app's) names NS/NAME, on every node, one line each, and their figures\n"
    "summed.\n"
    "\n"
    "Many jobs (--user, --node, --since, --until or --by): reserved against used\n"
    "core-hours, GPU-hours and memory over a window (default the last 30 days),\n"
    "grouped by user (default), node, job, hour of day or day of week (local\n"
    "time), the most wasteful first.\n"
    "\n"
    "A profiling session (--session NAME, alone): its nodes, GPUs, gaps and\n"
    "requests' timings per app in words (text), or its frames as `jobscope\n"
    "export` writes them (json, csv); --plot F.png draws F.png, every GPU of\n"
    "the session in one picture (utilization, memory, PCIe, NVLink: a line per\n"
    "GPU), and one picture per device beside it: F-NODE-host.png (CPU, memory,\n"
    "storage, network) and F-NODE-gpuI.png (each GPU), their names on stderr.\n"
    "\n"
    "From Prometheus (--prometheus URL): the same job report from series\n"
    "already there: jobscope's own, else cgroup_exporter (--job), cAdvisor\n"
    "(--pod), node_exporter (--node), with dcgm-exporter's GPUs; the window\n"
    "defaults to the last 24 hours (docs/report-prometheus.md).\n"
    "\n";

static const char report_tail[] =
    "\n"
    "On a terminal, reading a large store shows its progress on stderr\n"
    "(NO_PROGRESS=1: never).\n";

static const char *const format_names[] = {"text", "json", "csv", "html"};

/* The same query asked of a head's /api/v1/report. */
static int report_from_head(const char *head, const char *token_file, const char *run_id,
			    const char *since, const char *until, const char *by,
			    const struct report_query *q, const char *output)
{
	static const char *const names[] = {"run",   "job",   "k8s_job", "user",  "node",
					    "since", "until", "by",	 "format"};
	const char *values[] = {run_id,	 q->job_key, q->k8s_job,
				q->user, q->node,    since,
				until,	 by,	     format_names[q->format]};
	struct strbuf answer;
	char token[256];
	int ret;

	if (q->plot_path)
		return usage_error("report", "--plot needs a store (--db): a head sends text");
	if (token_file && token_read_file(token_file, token, sizeof(token)))
		return EXIT_USAGE;
	strbuf_init(&answer, 0);
	ret = http_client_get_query(head, "/api/v1/report", token_file ? token : NULL, names,
				    values, 9, &answer);
	if (!ret)
		ret = cli_write_file(output, answer.buf ? answer.buf : "", answer.len);
	strbuf_release(&answer);
	return ret ? EXIT_FAIL : 0;
}

/* --prometheus URL: the job's report built from the series Prometheus holds. */
static int report_from_prometheus(const char *url, const char *pod, const char *step,
				  const struct report_query *q, int64_t now_ms, const char *output)
{
	struct promsrc_query pq = {.url = url};
	struct job_report *r;
	struct job_record job;
	struct strbuf out;
	char sources[512], err[512];
	int ret;

	if (!!q->job_key + !!pod + !!q->node != 1 || q->user || q->run_id || q->has_by)
		return usage_error("report", "--prometheus asks about one --job, --pod or "
					     "--node (not --user, --by or a run id)");
	pq.kind = q->job_key ? PROMSRC_JOB : pod ? PROMSRC_POD : PROMSRC_NODE;
	pq.key = q->job_key ? q->job_key : pod ? pod : q->node;
	pq.until_ms = q->has_until ? q->until_ms : now_ms;
	pq.since_ms = q->has_since ? q->since_ms : pq.until_ms - 24 * 3600 * 1000LL;
	if (step && (parse_duration_ms(step, &pq.step_ms) || pq.step_ms < 1000))
		return usage_error("report", "bad --step '%s' (a duration of 1 s or more: 5s, 1m)",
				   step);
	if (pq.since_ms >= pq.until_ms)
		return usage_error("report", "--since must come before --until");
	r = malloc(sizeof(*r));
	if (!r)
		return EXIT_FAIL;
	ret = promsrc_report(&pq, &promsrc_curl, &job, r, sources, sizeof(sources));
	if (ret == -EINVAL) {
		job_report_release(r);
		free(r);
		return EXIT_USAGE;
	}
	if (!ret)
		fprintf(stderr, "jobscope: from Prometheus at %s: %s\n", url, sources);
	strbuf_init(&out, 0);
	if (!ret) {
		ret = report_query_render(r, q, &out, err, sizeof(err));
		if (ret && err[0])
			log_err(0, "%s", err);
	}
	if (!ret)
		ret = cli_write_file(output, out.buf ? out.buf : "", out.len);
	strbuf_release(&out);
	job_report_release(r);
	free(r);
	return ret ? EXIT_FAIL : 0;
}

/* --session NAME from a head: the same bytes as from its store, but no plots. */
static int session_from_head(const char *head, const char *token_file, const char *session,
			     const struct report_query *q, const char *output)
{
	struct strbuf out;
	char token[256];
	int ret;

	if (q->plot_path)
		return usage_error("report", "--plot needs a store (--db): a head sends the "
					     "report, not pictures");
	if (token_file && token_read_file(token_file, token, sizeof(token)))
		return EXIT_USAGE;
	strbuf_init(&out, (size_t)1 << 32);
	ret = http_client_session_export(head, token_file ? token : NULL, session,
					 format_names[q->format], &out);
	if (!ret)
		ret = cli_write_file(output, out.buf ? out.buf : "", out.len);
	strbuf_release(&out);
	return ret == -EINVAL ? EXIT_USAGE : ret ? EXIT_FAIL : 0;
}

/* --session NAME from a store: report or export, and plots per device. */
static int session_from_store(struct store *st, const char *session, const struct report_query *q,
			      struct strbuf *out)
{
	struct strbuf plots;
	char err[512];
	int ret;

	strbuf_init(&plots, 0);
	ret = report_query_session(st, session, q, out, &plots, err, sizeof(err));
	if (ret && err[0])
		log_err(0, "%s", err);
	for (char *line = plots.buf, *nl; !ret && line && (nl = strchr(line, '\n')); line = nl + 1)
		fprintf(stderr, "jobscope: plot %.*s\n", (int)(nl - line), line);
	strbuf_release(&plots);
	return ret;
}

static int cmd_report(int argc, char **argv)
{
	static const struct opt_cmd cmd = {"report", report_head, report_tail, 25, 0, 1};
	const char *db = NULL, *head = NULL, *output = "-", *session = NULL, *token_opt = NULL;
	const char *since = NULL, *until = NULL, *by = NULL, *format = NULL;
	const char *prom = NULL, *pod = NULL, *step = NULL;
	struct report_query q = {.utf8 = cli_utf8()};
	const struct opt opts[] = {
	    OPT_STRING(0, "db", &db, "PATH",
		       "the store (default ~/.local/share/jobscope/jobscope.db)"),
	    OPT_STRING(0, "head", &head, "URL", "ask a head (http://head:8091) instead of a store"),
	    OPT_STRING(0, "token-file", &token_opt, "F",
		       "the head's token (default $JOBSCOPE_TOKEN_FILE)"),
	    OPT_STRING('j', "job", &q.job_key, "KEY", "the job with that key"),
	    OPT_STRING(0, "k8s-job", &q.k8s_job, "NS/NAME",
		       "the pods of that owner (a training job), every node"),
	    OPT_STRING('s', "session", &session, "NAME",
		       "a profiling session (a head's store or a head)"),
	    OPT_STRING('u', "user", &q.user, "U", "jobs of user U"),
	    OPT_STRING('n', "node", &q.node, "N", "jobs on node N"),
	    OPT_STRING(0, "since", &since, "T",
		       "from T: RFC 3339 (2026-11-01T00:00:00Z), ms since the\n"
		       "epoch, or an age (7d, 2h)"),
	    OPT_STRING(0, "until", &until, "T", "until T (default now)"),
	    OPT_STRING(0, "prometheus", &prom, "URL",
		       "read the job's series from Prometheus (http://prom:9090)"),
	    OPT_STRING(0, "pod", &pod, "NS/NAME", "with --prometheus: a Kubernetes pod"),
	    OPT_STRING(0, "step", &step, "S",
		       "with --prometheus: the time between points (5s, 1m;\n"
		       "default the data's scrape interval, measured from\n"
		       "its timestamps, else 15s; wider for long windows)"),
	    OPT_STRING('b', "by", &by, "KEY",
		       "group by user, node, job, hour, weekday or framework"),
	    OPT_STRING('f', "format", &format, "FORMAT",
		       "text (default), json, csv (a job: one row per time\n"
		       "bucket; history: one row per group) or html (one\n"
		       "self-contained page)"),
	    OPT_STRING('o', "output", &output, "FILE",
		       "write the report to FILE instead of stdout"),
	    OPT_STRING(0, "plot", &q.plot_path, "FILE",
		       "also draw the job's timelines to FILE (.png, .pdf, .svg);\n"
		       "a session's: FILE, all its GPUs, and one file per\n"
		       "device, named from FILE"),
	    OPT_END(),
	};
	const char *token_file;
	int64_t now_ms = time_now_ms();
	struct strbuf out;
	struct store *st;
	char err[512];
	int first, ret = opt_parse(&cmd, opts, argc, argv, &first);

	if (ret)
		return ret == OPT_DONE ? 0 : ret;
	token_file = token_opt ? token_opt : getenv("JOBSCOPE_TOKEN_FILE");
	if (format && report_format_parse(format, &q.format))
		return usage_error("report", "bad --format '%s' (text, json, csv or html)", format);
	if (since && parse_time_ms(since, now_ms, &q.since_ms))
		return usage_error(
		    "report", "bad --since '%s' (RFC 3339, ms since the epoch, or an age: 7d, 2h)",
		    since);
	if (until && parse_time_ms(until, now_ms, &q.until_ms))
		return usage_error(
		    "report", "bad --until '%s' (RFC 3339, ms since the epoch, or an age: 7d, 2h)",
		    until);
	if (by && history_by_parse(by, &q.by))
		return usage_error(
		    "report", "bad --by '%s' (user, node, job, hour, weekday or framework)", by);
	if (q.plot_path && !plot_format_known(q.plot_path))
		return usage_error("report", "--plot '%s': the file must end in .png, .pdf or .svg",
				   q.plot_path);
	q.has_since = since != NULL;
	q.has_until = until != NULL;
	q.has_by = by != NULL;
	if (first < argc && !q.job_key)
		q.run_id = argv[first++];
	if (first < argc)
		return usage_error("report", "unexpected argument '%s'", argv[first]);
	if (q.run_id && strcmp(q.run_id, "last") != 0) {
		int64_t id;

		if (report_parse_run_id(q.run_id, &id))
			return usage_error("report", "'%s' is not a run id (a number, or 'last')",
					   q.run_id);
	}
	if (prom && (db || head || session))
		return usage_error("report", "--prometheus is the source: not with --db, --head "
					     "or --session");
	if (prom)
		return report_from_prometheus(prom, pod, step, &q, now_ms, output);
	if (pod || step)
		return usage_error("report", "--pod and --step are for --prometheus");
	if (q.k8s_job &&
	    (q.run_id || q.job_key || session || q.user || q.node || since || until || by))
		return usage_error("report", "--k8s-job NS/NAME is the whole question: not with "
					     "a run id, --job, --session, --user, --node, --since, "
					     "--until or --by");
	if (q.k8s_job && (q.format == REPORT_FMT_CSV || q.format == REPORT_FMT_HTML || q.plot_path))
		return usage_error("report", "a k8s job's report is text or json (no --plot)");
	if ((q.run_id || q.job_key) && (q.user || q.node || since || until || by))
		return usage_error("report", "--user, --node, --since, --until and --by select "
					     "many jobs: not with a run id or --job");
	if (db && head)
		return usage_error("report", "--db or --head, not both");
	if (token_opt && !head)
		return usage_error("report", "--token-file is a head's token: with --head");
	if (session && (q.run_id || q.job_key || q.user || q.node || since || until || by))
		return usage_error("report", "--session NAME is the whole question: not with a "
					     "run id, --job, --user, --node, --since, --until "
					     "or --by");
	if (session && q.format == REPORT_FMT_HTML)
		return usage_error("report", "--format html is for a job or history; a "
					     "session's report: text, json or csv");
	/*
	 * RUN_ID is a row of the store asked; a head's rows are numbered on its
	 * machine, so the id `jobscope runs` shows on this one names another
	 * job there: a head is asked by job key (or 'last', its latest run)
	 */
	if (head && q.run_id && strcmp(q.run_id, "last") != 0)
		return usage_error(
		    "report",
		    "'%s' is a run id of a store (`jobscope runs --db PATH`), not of a "
		    "head: ask the head by --job KEY (scheduler:id[:start_ms], "
		    "scheduler:id or a job id, as its /api/v1/jobs lists them) or "
		    "'last'",
		    q.run_id);
	if (head && session)
		return session_from_head(head, token_file, session, &q, output);
	if (head)
		return report_from_head(head, token_file, q.run_id, since, until, by, &q, output);

	if (cli_open_store(db, STORE_READONLY, &st))
		return EXIT_USAGE;
	/* a session's export is as large as `jobscope export` lets it be */
	strbuf_init(&out, session ? (size_t)1 << 32 : 0);
	if (session) {
		ret = session_from_store(st, session, &q, &out);
	} else {
		struct progress_meter meter;

		/* on a terminal: the rows (a job) or jobs (history) read so far (progress.h) */
		progress_meter_init(&meter, 2, progress_wanted(2, false), "jobscope report",
				    report_query_is_history(&q) ? "jobs" : "rows");
		q.progress = progress_meter_hook(&meter);
		ret = report_query_run(st, &q, now_ms, &out, err, sizeof(err));
		progress_meter_finish(&meter);
		q.progress = NULL;
		if (ret && err[0])
			log_err(0, "%s", err);
	}
	if (!ret)
		ret = cli_write_file(output, out.buf ? out.buf : "", out.len);
	strbuf_release(&out);
	store_close(st);
	if (ret == -EINVAL)
		return EXIT_USAGE;
	return ret ? EXIT_FAIL : 0;
}

const struct cli_command cmd_report_def = {
    "report",
    cmd_report,
    "a job's report, or reserved vs used history",
};
