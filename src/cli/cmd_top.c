/*
 * cmd_top.c - `jobscope top`: the options, the source they name, and the
 * interactive or --batch loop (src/top/).
 */
#include <errno.h>
#include <getopt.h>
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

static const char top_usage[] =
    "usage: jobscope top [--agent URL | --db PATH [--at TIME] | --head URL --job KEY]\n"
    "                    [--job KEY] [--user NAME] [--sort KEY] [--interval DUR]\n"
    "                    [--batch [-n N] [--width W] [--height H]] [--token-file F]\n"
    "\n"
    "A live terminal view of the jobs on a node: each job's reserved against used\n"
    "CPU and memory, its GPUs, CPU efficiency and verdicts; Enter opens a job: its\n"
    "processes as a tree, its GPUs (utilization, memory, power, the job's share),\n"
    "its app metrics.  h shows the keys; q quits.\n"
    "\n"
    "Sources (one):\n"
    "      --agent URL      a node's agent (default " TOP_DEFAULT_AGENT ",\n"
    "                       the agent's default --listen)\n"
    "      --db PATH        a store, replayed: [ and ] step one tick back and forward\n"
    "      --at TIME        the time to show from the store (ms since the epoch,\n"
    "                       RFC 3339 or an age like 2h; default: its last sample)\n"
    "      --head URL       a head: with --job, one job on every node it ran on\n"
    "\n"
    "Options:\n"
    "      --job KEY        open that job (scheduler:id:start_ms, scheduler:id or id)\n"
    "                       and follow it\n"
    "      --user NAME      only that user's jobs\n"
    "      --sort KEY       cpu (default), mem, eff, gpu, key or user\n"
    "      --interval DUR   refresh period of a live source (default 1s)\n"
    "      --token-file F   a head's read token (or $JOBSCOPE_TOKEN_FILE)\n"
    "  -b, --batch          print the screen as text instead (for scripts)\n"
    "  -n, --iterations N   --batch: screens to print (default 1)\n"
    "      --width W, --height H  --batch: the screen's size (default 100x30)\n"
    "  -h, --help           show this help\n"
    "\n"
    "Colour only on a terminal that has it, and never with $NO_COLOR set.\n"
    "Exit: 0, 1 (the source cannot be used), 2 (usage).\n";

static int parse_sort(const char *s, enum top_sort *out)
{
	for (int k = 0; k < TOP_SORT__COUNT; k++)
		if (strcmp(s, top_sort_name(k)) == 0) {
			*out = k;
			return 0;
		}
	return -EINVAL;
}

static int cmd_top(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"agent", required_argument, NULL, 'A'},
	    {"db", required_argument, NULL, 'd'},
	    {"at", required_argument, NULL, 'a'},
	    {"head", required_argument, NULL, 'H'},
	    {"job", required_argument, NULL, 'J'},
	    {"user", required_argument, NULL, 'u'},
	    {"sort", required_argument, NULL, 's'},
	    {"interval", required_argument, NULL, 'i'},
	    {"token-file", required_argument, NULL, 't'},
	    {"batch", no_argument, NULL, 'b'},
	    {"iterations", required_argument, NULL, 'n'},
	    {"width", required_argument, NULL, 'W'},
	    {"height", required_argument, NULL, 'E'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *agent = NULL, *db = NULL, *at = NULL, *head = NULL, *job = NULL;
	const char *token_file = getenv("JOBSCOPE_TOKEN_FILE");
	struct top_source src = {0};
	struct top_view v;
	int64_t at_ms = 0, interval_ms = 1000;
	int c, iterations = 1, width = 100, height = 30, ret;
	bool batch = false;
	char token[256];

	top_view_init(&v);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hbn:", longopts, NULL)) != -1) {
		switch (c) {
		case 'A':
			agent = optarg;
			break;
		case 'd':
			db = optarg;
			break;
		case 'a':
			at = optarg;
			break;
		case 'H':
			head = optarg;
			break;
		case 'J':
			job = optarg;
			break;
		case 'u':
			snprintf(v.user, sizeof(v.user), "%s", optarg);
			break;
		case 's':
			if (parse_sort(optarg, &v.sort))
				return cli_usage_error("top",
						       "bad --sort '%s' (cpu, mem, eff, gpu, "
						       "key or user)",
						       optarg);
			break;
		case 'i':
			if (parse_duration_ms(optarg, &interval_ms) || interval_ms < 100)
				return cli_usage_error(
				    "top", "bad --interval '%s' (100ms at least)", optarg);
			break;
		case 't':
			token_file = optarg;
			break;
		case 'b':
			batch = true;
			break;
		case 'n':
			iterations = atoi(optarg);
			if (iterations < 1)
				return cli_usage_error("top", "bad --iterations '%s'", optarg);
			break;
		case 'W':
			width = atoi(optarg);
			if (width < 1 || width > 1000)
				return cli_usage_error("top", "bad --width '%s'", optarg);
			break;
		case 'E':
			height = atoi(optarg);
			if (height < 1 || height > 1000)
				return cli_usage_error("top", "bad --height '%s'", optarg);
			break;
		case 'h':
			fputs(top_usage, stdout);
			return 0;
		default:
			return cli_option_error("top", c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("top", "unexpected argument '%s'", argv[optind]);
	if (!!agent + !!db + !!head > 1)
		return cli_usage_error("top", "one source: --agent, --db or --head");
	if (head && !job)
		return cli_usage_error("top", "--head shows one job: add --job KEY");
	if (at && !db)
		return cli_usage_error("top", "--at replays a store: add --db PATH");
	if (at && parse_time_ms(at, time_now_ms(), &at_ms))
		return cli_usage_error("top", "bad --at '%s' (ms, RFC 3339 or an age like 2h)", at);
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
    top_usage,
};
