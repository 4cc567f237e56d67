/*
 * main.c - jobscope's entry point: the command table (like git's), global
 * --help and --version, and `jobscope help CMD`.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "common/log.h"

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const struct cli_command cmd_help_def = {
    "help",
    cmd_help,
    "show help for jobscope or one of its commands",
};

static const struct cli_command cmd_version_def = {
    "version",
    cmd_version,
    "print jobscope's version",
};

/* clang-format off */
static const struct cli_command *const commands[] = {
	&cmd_run_def,
	&cmd_runs_def,
	&cmd_report_def,
	&cmd_gpus_def,
	&cmd_agent_def,
	&cmd_head_def,
	&cmd_session_def,
	&cmd_export_def,
	&cmd_compact_def,
	&cmd_status_def,
	&cmd_clients_def,
	&cmd_mark_def,
	&cmd_metric_def,
	&cmd_trial_def,
	&cmd_top_def,
	&cmd_help_def,
	&cmd_version_def,
	NULL,
};
/* clang-format on */

static const char main_usage[] =
    "usage: jobscope [--help] [--version] [--verbose] COMMAND [ARGS...]\n"
    "\n"
    "-v, --verbose before COMMAND shows debug messages too.\n"
    "\n"
    "jobscope profiles what jobs use: CPU, memory, I/O of every process of a\n"
    "command, and the host around it, kept in a SQLite store for later reports.\n"
    "\n"
    "Commands:\n";

static const char exit_codes[] =
    "\n"
    "Exit codes: 0 success; 1 failure while working (e.g. no such run);\n"
    "2 usage error or unusable store; for `run`: the command's own status\n"
    "(128+N if killed by signal N), 125 if jobscope failed after starting it,\n"
    "126 if the command could not be executed, 127 if it was not found.\n"
    "\n"
    "'jobscope help COMMAND' or 'jobscope COMMAND --help' shows a command's options.\n";

static const struct cli_command *find_command(const char *name)
{
	for (size_t i = 0; commands[i]; i++)
		if (strcmp(commands[i]->name, name) == 0)
			return commands[i];
	return NULL;
}

static void print_main_usage(FILE *out)
{
	fputs(main_usage, out);
	for (size_t i = 0; commands[i]; i++)
		fprintf(out, "  %-9s %s\n", commands[i]->name, commands[i]->summary);
	fputs(exit_codes, out);
}

static int cmd_help(int argc, char **argv)
{
	static const struct opt_cmd cmd = {
	    "help",
	    "usage: jobscope help [COMMAND]\n"
	    "\n"
	    "Without COMMAND: jobscope's commands and exit codes.  With it: COMMAND's\n"
	    "usage and options, as `jobscope COMMAND --help` prints them.\n"
	    "\n",
	    NULL,
	    15,
	    OPT_STOP_AT_OPERAND,
	    1};
	static const struct opt opts[] = {OPT_END()};
	const struct cli_command *c;
	char *help_argv[] = {NULL, "--help", NULL};
	int first, ret = opt_parse(&cmd, opts, argc, argv, &first);

	if (ret)
		return ret == OPT_DONE ? 0 : ret;
	if (first == argc) {
		print_main_usage(stdout);
		return 0;
	}
	c = find_command(argv[first]);
	if (!c)
		return usage_error(NULL, "no such command '%s'", argv[first]);
	help_argv[0] = argv[first];
	return c->fn(2, help_argv);
}

static int cmd_version(int argc, char **argv)
{
	static const struct opt_cmd cmd = {"version",
					   "usage: jobscope version\n"
					   "       jobscope --version\n"
					   "\n"
					   "Print \"jobscope VERSION\" on stdout.\n"
					   "\n",
					   NULL,
					   15,
					   0,
					   0};
	static const struct opt opts[] = {OPT_END()};
	int first, ret = opt_parse(&cmd, opts, argc, argv, &first);

	if (ret)
		return ret == OPT_DONE ? 0 : ret;
	printf("jobscope %s\n", JOBSCOPE_VERSION);
	return 0;
}

int main(int argc, char **argv)
{
	const struct cli_command *cmd;

	if (argc < 2) {
		print_main_usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		print_main_usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)
		return cmd_version(argc - 1, argv + 1);
	if (strcmp(argv[1], "--list-commands") == 0) {
		/* for the shell completions (deploy/completion/) */
		for (size_t i = 0; commands[i]; i++)
			printf("%s%s", i ? " " : "", commands[i]->name);
		printf("\n");
		return 0;
	}
	while (argc > 2 && (strcmp(argv[1], "--verbose") == 0 || strcmp(argv[1], "-v") == 0)) {
		log_set_level(LOG_DEBUG);
		argc--;
		argv++;
	}
	cmd = find_command(argv[1]);
	if (!cmd) {
		if (argv[1][0] == '-')
			return usage_error(NULL, "unknown option '%s'", argv[1]);
		return usage_error(NULL, "'%s' is not a jobscope command", argv[1]);
	}
	return cmd->fn(argc - 1, argv + 1);
}
