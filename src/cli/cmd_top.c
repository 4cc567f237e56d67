/*
 * cmd_top.c - `jobscope top`: the options, the source they name, and the
 * interactive or --batch loop (src/top/).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/token.h"
#include "top/source.h"
#include "top/ui.h"

#define TOP_DEFAULT_AGENT "http://127.0.0.1:9464"

static const char top_head[] =
    "usage: jobscope top [--agent URL | --db PATH [--at TIME] | --head URL --job KEY]\n"
    "                    [--job KEY] [--user NAME] [--sort KEY] [--interval DUR]\n"
    "                    [--batch [-n N] [--width W] [--height H]] [--token-file F]\n"
    "\n"
    "A live terminal view of the jobs on a node: each job by its name (else its\n"
    "command), its reserved against used CPU and memory, its GPUs, CPU efficiency\n"
    "and verdicts, and its key where the width allows; Enter opens a job: its key,\n"
    "its processes as a tree, its GPUs (utilization, memory, power, the job's\n"
    "share), its app metrics.  h shows the keys; q quits.\n"
    "\n";

static const char top_tail[] =
    "\n"
    "Colour only on a terminal that has it, and never with $NO_COLOR set.\n"
    "Exit: 0, 1 (the source cannot be used), 2 (usage).\n";

static int set_user(const struct opt *opt, const char *arg)
{
	struct top_view *v = opt->value;

	snprintf(v->user, sizeof(v->user), "%s", arg);
	return 0;
}

static int set_sort(const struct opt *opt, const char *arg)
{
	struct top_view *v = opt->value;

	for (int k = 0; k < TOP_SORT__COUNT; k++)
		if (strcmp(arg, top_sort_name(k)) == 0) {
			v->sort = k;
			return 0;
		}
	return usage_error("top", "bad --sort '%s' (cpu, mem, eff, gpu, key or user)", arg);
}

static int cmd_top(int argc, char **argv)
{
	static const struct opt_cmd cmd = {"top", top_head, top_tail, 23, 0, 0};
	const char *agent = NULL, *db = NULL, *at = NULL, *head = NULL, *job = NULL;
	const char *token_file = getenv("JOBSCOPE_TOKEN_FILE");
	struct top_source src = {0};
	struct top_view v;
	int64_t at_ms = 0, interval_ms = 1000;
	int first, iterations = 1, width = 100, height = 30, ret;
	bool batch = false;
	const struct opt opts[] = {
	    OPT_GROUP("Sources (one):"),
	    OPT_STRING(0, "agent", &agent, "URL",
		       "a node's agent (default " TOP_DEFAULT_AGENT ",\n"
		       "the agent's default --listen)"),
	    OPT_STRING(0, "db", &db, "PATH",
		       "a store, replayed: [ and ] step one tick back and forward"),
	    OPT_STRING(0, "at", &at, "TIME",
		       "the time to show from the store (ms since the epoch,\n"
		       "RFC 3339 or an age like 2h; default: its last sample)"),
	    OPT_STRING(0, "head", &head, "URL",
		       "a head: with --job, one job on every node it ran on"),
	    OPT_GROUP("Options:"),
	    OPT_STRING(0, "job", &job, "KEY",
		       "open that job (scheduler:id:start_ms, scheduler:id or id)\n"
		       "and follow it"),
	    OPT_CALLBACK(0, "user", &v, "NAME", "only that user's jobs", set_user),
	    OPT_CALLBACK(0, "sort", &v, "KEY", "cpu (default), mem, eff, gpu, key or user",
			 set_sort),
	    OPT_DURATION(0, "interval", &interval_ms, 100, 0, "100ms at least",
			 "refresh period of a live source (default 1s)"),
	    OPT_STRING(0, "token-file", &token_file, "F",
		       "a head's read token (or $JOBSCOPE_TOKEN_FILE)"),
	    OPT_FLAG('b', "batch", &batch, "print the screen as text instead (for scripts)"),
	    OPT_INT('n', "iterations", &iterations, "N", 1, 1000000,
		    "--batch: screens to print (default 1)"),
	    OPT_INT(0, "width", &width, "W", 1, 1000, "--batch: the screen's width (default 100)"),
	    OPT_INT(0, "height", &height, "H", 1, 1000, "--batch: its height (default 30)"),
	    OPT_END(),
	};
	char token[256];

	top_view_init(&v);
	ret = opt_parse(&cmd, opts, argc, argv, &first);
	if (ret)
		return ret == OPT_DONE ? 0 : ret;
	if (!!agent + !!db + !!head > 1)
		return usage_error("top", "one source: --agent, --db or --head");
	if (head && !job)
		return usage_error("top", "--head shows one job: add --job KEY");
	if (at && !db)
		return usage_error("top", "--at replays a store: add --db PATH");
	if (at && parse_time_ms(at, time_now_ms(), &at_ms))
		return usage_error("top", "bad --at '%s' (ms, RFC 3339 or an age like 2h)", at);
	if (token_file && token_read_file(token_file, token, sizeof(token)))
		return EXIT_USAGE;
	src.token = token_file ? token : NULL;
	if (db) {
		if (top_source_open_store(&src, db, at_ms))
			return EXIT_USAGE;
	} else {
		src.be = head ? &top_backend_head : &top_backend_agent;
		snprintf(src.url, sizeof(src.url), "%s",
			 head	 ? head
			 : agent ? agent
				 : TOP_DEFAULT_AGENT);
		if (head)
			snprintf(src.job, sizeof(src.job), "%s", job);
	}
	if (job) {
		snprintf(v.open_key, sizeof(v.open_key), "%s", job);
		v.screen = TOP_SCREEN_JOB;
		v.follow = true;
	}
	if (batch)
		ret = top_batch(&src, &v, width, height, iterations, (int)interval_ms, stdout);
	else if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
		ret = log_err(-ENOTTY, "top: not a terminal (use --batch for text)");
	else
		ret = top_interactive(&src, &v, (int)interval_ms);
	top_source_release(&src);
	return ret ? EXIT_FAIL : 0;
}

const struct cli_command cmd_top_def = {
    "top",
    cmd_top,
    "a live terminal view of a node's jobs, a store replayed or a job on a head",
};
