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
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/statsd.h"
#include "cli.h"
#include "common/log.h"
#include "common/strbuf.h"

static const char mark_usage[] =
    "usage: jobscope mark [--text TEXT] [--tag K:V]... [-v] NAME\n"
    "\n"
    "Sets a marker in the running job: its report splits the job into phases\n"
    "at its markers (CPU, memory, GPU and app figures per phase).  Sent as a\n"
    "DogStatsD event to $JOBSCOPE_STATSD_SOCKET (set by `jobscope run`), else\n"
    "$STATSD_HOST:$STATSD_PORT, else 127.0.0.1:8125.  -v says where it went.\n";

static const char metric_usage[] =
    "usage: jobscope metric [--type counter|gauge|timer|histogram|distribution|set]\n"
    "                       [--rate R] [--tag K:V]... [-v] NAME VALUE\n"
    "\n"
    "Sends one application metric to the running job, as a StatsD line\n"
    "(NAME:VALUE|c by default; a gauge VALUE of +N or -N moves it; a timer's\n"
    "VALUE is in ms).  Where it goes: as `jobscope mark`.\n";

static const char *const type_codes[APP_TYPES] = {
    [APP_COUNTER] = "c",   [APP_GAUGE] = "g",	     [APP_TIMER] = "ms",
    [APP_HISTOGRAM] = "h", [APP_DISTRIBUTION] = "d", [APP_SET] = "s",
};

/* --tag K:V... as DogStatsD's "|#k:v,k2:v2"; a ',' or '|' or newline in one is refused. */
static int add_tags(const char *cmd, struct strbuf *line, char **tags, size_t ntags)
{
	for (size_t i = 0; i < ntags; i++) {
		if (!tags[i][0] || strpbrk(tags[i], ",|#\n\r"))
			return cli_usage_error(cmd, "bad --tag '%s': K:V without , | # or newlines",
					       tags[i]);
		strbuf_addf(line, "%s%s", i ? "," : "|#", tags[i]);
	}
	return 0;
}

/* Checks line with the receivers' parser and sends it. */
static int send_line(const char *cmd, const struct strbuf *line, bool verbose)
{
	struct statsd_line *parsed = malloc(sizeof(*parsed));
	char where[256];
	int ret;

	if (!parsed)
		return log_err(-ENOMEM, "out of memory"), EXIT_FAIL;
	ret = statsd_parse_line(line->buf, line->len, parsed);
	free(parsed);
	if (ret)
		return cli_usage_error(cmd,
				       "'%s' is not a line a StatsD receiver takes (a name "
				       "without control characters, | or :, under %d bytes; a "
				       "finite number)",
				       line->buf, APP_NAME_MAX - 1);
	ret = statsd_send(line->buf, line->len, where, sizeof(where));
	if (ret) {
		log_err(ret, "cannot send to %s", where);
		return EXIT_FAIL;
	}
	if (verbose)
		fprintf(stderr, "jobscope: sent '%s' to %s\n", line->buf, where);
	return 0;
}

#define MAX_TAGS 32

static int parse_common(const char *cmd, const char *usage, int argc, char **argv,
			const char *shortopts, const struct option *longopts,
			int (*own)(int c, const char *arg, void *ctx), void *ctx, char **tags,
			size_t *ntags, bool *verbose)
{
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (c) {
		case 'g':
			if (*ntags == MAX_TAGS)
				return cli_usage_error(cmd, "more than %d --tag", MAX_TAGS);
			tags[(*ntags)++] = optarg;
			break;
		case 'v':
			*verbose = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		default: {
			int ret = own ? own(c, optarg, ctx) : -ENOENT;

			if (ret == -ENOENT)
				return cli_option_error(cmd, c, argv);
			if (ret)
				return ret;
		}
		}
	}
	return 0;
}

static int mark_option(int c, const char *arg, void *ctx)
{
	if (c != 'x')
		return -ENOENT;
	*(const char **)ctx = arg;
	return 0;
}

static int cmd_mark(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"text", required_argument, NULL, 'x'},
	    {"tag", required_argument, NULL, 'g'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *text = "";
	char *tags[MAX_TAGS];
	size_t ntags = 0;
	bool verbose = false;
	struct strbuf line;
	int ret = parse_common("mark", mark_usage, argc, argv, ":vh", longopts, mark_option, &text,
			       tags, &ntags, &verbose);

	if (ret)
		return ret < 0 ? 0 : ret;
	if (optind + 1 != argc)
		return cli_usage_error("mark", optind == argc
						   ? "which marker? a NAME"
						   : "one NAME (quote it if it has spaces)");
	strbuf_init(&line, 0);
	/* DogStatsD's event: _e{title length,text length}:title|text; newlines in text as \n */
	{
		struct strbuf esc;

		strbuf_init(&esc, 0);
		for (const char *p = text; *p; p++)
			if (*p == '\n')
				strbuf_add(&esc, "\\n", 2);
			else
				strbuf_add(&esc, p, 1);
		strbuf_addf(&line, "_e{%zu,%zu}:%s|%s", strlen(argv[optind]), esc.len, argv[optind],
			    esc.len ? esc.buf : "");
		strbuf_release(&esc);
	}
	ret = add_tags("mark", &line, tags, ntags);
	if (!ret)
		ret = send_line("mark", &line, verbose);
	strbuf_release(&line);
	return ret;
}

struct metric_opts {
	enum app_type type;
	const char *rate;
};

static int metric_option(int c, const char *arg, void *ctx)
{
	struct metric_opts *m = ctx;

	switch (c) {
	case 't':
		if (app_type_parse(arg, &m->type))
			return cli_usage_error("metric",
					       "bad --type '%s': counter, gauge, timer, "
					       "histogram, distribution or set",
					       arg);
		return 0;
	case 'r':
		m->rate = arg;
		return 0;
	default:
		return -ENOENT;
	}
}

static int cmd_metric(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"type", required_argument, NULL, 't'}, {"rate", required_argument, NULL, 'r'},
	    {"tag", required_argument, NULL, 'g'},  {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},	    {NULL, 0, NULL, 0},
	};
	struct metric_opts m = {APP_COUNTER, NULL};
	char *tags[MAX_TAGS];
	size_t ntags = 0;
	bool verbose = false;
	struct strbuf line;
	int ret = parse_common("metric", metric_usage, argc, argv, ":vh", longopts, metric_option,
			       &m, tags, &ntags, &verbose);

	if (ret)
		return ret < 0 ? 0 : ret;
	if (optind + 2 != argc)
		return cli_usage_error("metric", "a NAME and a VALUE");
	strbuf_init(&line, 0);
	strbuf_addf(&line, "%s:%s|%s", argv[optind], argv[optind + 1], type_codes[m.type]);
	if (m.rate)
		strbuf_addf(&line, "|@%s", m.rate);
	ret = add_tags("metric", &line, tags, ntags);
	if (!ret)
		ret = send_line("metric", &line, verbose);
	strbuf_release(&line);
	return ret;
}

const struct cli_command cmd_mark_def = {
    "mark",
    cmd_mark,
    "set a marker (a phase boundary) in the running job",
    mark_usage,
};

const struct cli_command cmd_metric_def = {
    "metric",
    cmd_metric,
    "send one application metric (a StatsD line) to the running job",
    metric_usage,
};
