/*
 * cmd_mark.c - `jobscope mark NAME` and `jobscope metric NAME VALUE`: a
 * marker (a DogStatsD event, which starts a phase of the report) or one
 * StatsD line, sent from a shell script to the StatsD socket the job's
 * environment names: JOBSCOPE_STATSD_SOCKET (`jobscope run`, an agent's
 * --statsd-socket through the Slurm task prolog), else STATSD_HOST and
 * STATSD_PORT, else 127.0.0.1:8125 (app/statsd.h: statsd_send).
 *
 * The line is checked with the parser the receivers use, so what would be
 * dropped there is refused here, with the reason.  Sending is one
 * datagram; nothing comes back (StatsD has no answer), so exit 0 means
 * sent, not received.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/statsd.h"
#include "cli.h"
#include "common/log.h"
#include "common/strbuf.h"

static const char mark_head[] =
    "usage: jobscope mark [--text TEXT] [--tag K:V]... [-v] NAME\n"
    "\n"
    "Sets a marker in the running job: its report splits the job into phases\n"
    "at its markers (CPU, memory, GPU and app figures per phase).  Sent as a\n"
    "DogStatsD event to $JOBSCOPE_STATSD_SOCKET (set by `jobscope run`), else\n"
    "$STATSD_HOST:$STATSD_PORT, else 127.0.0.1:8125.\n"
    "\n";

static const char metric_head[] =
    "usage: jobscope metric [--type counter|gauge|timer|histogram|distribution|set]\n"
    "                       [--rate R] [--tag K:V]... [-v] NAME VALUE\n"
    "\n"
    "Sends one application metric to the running job, as a StatsD line\n"
    "(NAME:VALUE|c by default; a gauge VALUE of +N or -N moves it; a timer's\n"
    "VALUE is in ms).  Where it goes: as `jobscope mark`.\n"
    "\n";

static const char *const type_codes[APP_TYPES] = {
    [APP_COUNTER] = "c",   [APP_GAUGE] = "g",	     [APP_TIMER] = "ms",
    [APP_HISTOGRAM] = "h", [APP_DISTRIBUTION] = "d", [APP_SET] = "s",
};

#define MAX_TAGS 32

/* What mark and metric share: DogStatsD tags and -v. */
struct send_opts {
	const char *tag[MAX_TAGS];
	size_t ntags;
	bool verbose;
};

/* --tag K:V, as DogStatsD's "|#k:v,k2:v2": no ',' '|' '#' or newline in one. */
static int add_tag(const struct opt *opt, const char *arg)
{
	struct send_opts *o = opt->value;

	if (o->ntags == MAX_TAGS)
		return usage_error(opt_command(), "more than %d --tag", MAX_TAGS);
	if (!arg[0] || strpbrk(arg, ",|#\n\r"))
		return usage_error(opt_command(), "bad --tag '%s': K:V without , | # or newlines",
				   arg);
	o->tag[o->ntags++] = arg;
	return 0;
}

#define SEND_OPTIONS(o)                                                                            \
	OPT_CALLBACK(0, "tag", (o), "K:V", "a DogStatsD tag (repeatable)", add_tag),               \
	    OPT_FLAG('v', "verbose", &(o)->verbose, "say where the line went")

/* Adds the tags, checks line with the receivers' parser and sends it. */
static int send_line(const char *cmd, struct strbuf *line, const struct send_opts *o)
{
	struct statsd_line *parsed = malloc(sizeof(*parsed));
	char where[256];
	int ret;

	for (size_t i = 0; i < o->ntags; i++)
		strbuf_addf(line, "%s%s", i ? "," : "|#", o->tag[i]);
	if (!parsed)
		return log_err(-ENOMEM, "out of memory"), EXIT_FAIL;
	ret = statsd_parse_line(line->buf, line->len, parsed);
	free(parsed);
	if (ret)
		return usage_error(cmd,
				   "'%s' is not a line a StatsD receiver takes (a name "
				   "without control characters, | or :, under %d bytes; a "
				   "finite number)",
				   line->buf, APP_NAME_MAX - 1);
	ret = statsd_send(line->buf, line->len, where, sizeof(where));
	if (ret) {
		log_err(ret, "cannot send to %s", where);
		return EXIT_FAIL;
	}
	if (o->verbose)
		fprintf(stderr, "jobscope: sent '%s' to %s\n", line->buf, where);
	return 0;
}

static int cmd_mark(int argc, char **argv)
{
	static const struct opt_cmd cmd = {"mark", mark_head, NULL, 20, 0, -1};
	struct send_opts so = {0};
	const char *text = "";
	const struct opt opts[] = {
	    OPT_STRING(0, "text", &text, "TEXT", "the marker's text (the event's body)"),
	    SEND_OPTIONS(&so),
	    OPT_END(),
	};
	struct strbuf line, esc;
	int first, ret = opt_parse(&cmd, opts, argc, argv, &first);

	if (ret)
		return ret == OPT_DONE ? 0 : ret;
	if (first + 1 != argc)
		return usage_error("mark", first == argc ? "which marker? a NAME"
							 : "one NAME (quote it if it has spaces)");
	/* DogStatsD's event: _e{title length,text length}:title|text; newlines in text as \n */
	strbuf_init(&esc, 0);
	for (const char *p = text; *p; p++)
		if (*p == '\n')
			strbuf_add(&esc, "\\n", 2);
		else
			strbuf_add(&esc, p, 1);
	strbuf_init(&line, 0);
	strbuf_addf(&line, "_e{%zu,%zu}:%s|%s", strlen(argv[first]), esc.len, argv[first],
		    esc.len ? esc.buf : "");
	strbuf_release(&esc);
	ret = send_line("mark", &line, &so);
	strbuf_release(&line);
	return ret;
}

static int set_type(const struct opt *opt, const char *arg)
{
	if (app_type_parse(arg, opt->value))
		return usage_error("metric",
				   "bad --type '%s': counter, gauge, timer, histogram, "
				   "distribution or set",
				   arg);
	return 0;
}

static int cmd_metric(int argc, char **argv)
{
	static const struct opt_cmd cmd = {"metric", metric_head, NULL, 20, 0, -1};
	struct send_opts so = {0};
	enum app_type type = APP_COUNTER;
	const char *rate = NULL;
	const struct opt opts[] = {
	    OPT_CALLBACK(0, "type", &type, "TYPE",
			 "counter (default), gauge, timer, histogram,\n"
			 "distribution or set",
			 set_type),
	    OPT_STRING(0, "rate", &rate, "R", "the sample rate the value was taken at (|@R)"),
	    SEND_OPTIONS(&so),
	    OPT_END(),
	};
	struct strbuf line;
	int first, ret = opt_parse(&cmd, opts, argc, argv, &first);

	if (ret)
		return ret == OPT_DONE ? 0 : ret;
	if (first + 2 != argc)
		return usage_error("metric", "a NAME and a VALUE");
	strbuf_init(&line, 0);
	strbuf_addf(&line, "%s:%s|%s", argv[first], argv[first + 1], type_codes[type]);
	if (rate)
		strbuf_addf(&line, "|@%s", rate);
	ret = send_line("metric", &line, &so);
	strbuf_release(&line);
	return ret;
}

const struct cli_command cmd_mark_def = {
    "mark",
    cmd_mark,
    "set a marker (a phase boundary) in the running job",
};

const struct cli_command cmd_metric_def = {
    "metric",
    cmd_metric,
    "send one application metric (a StatsD line) to the running job",
};
