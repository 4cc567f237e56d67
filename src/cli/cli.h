/*
 * cli.h - what the subcommands share: the command table entry, option
 * helpers and the default store path.  Exit codes: common/exitcode.h.
 */
#ifndef JOBSCOPE_CLI_H
#define JOBSCOPE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/exitcode.h"

struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	const char *usage; /* the full --help text */
};

extern const struct cli_command cmd_run_def;
extern const struct cli_command cmd_runs_def;
extern const struct cli_command cmd_report_def;
extern const struct cli_command cmd_gpus_def;
extern const struct cli_command cmd_agent_def;
extern const struct cli_command cmd_head_def;
extern const struct cli_command cmd_session_def;
extern const struct cli_command cmd_export_def;
extern const struct cli_command cmd_compact_def;
extern const struct cli_command cmd_status_def;
extern const struct cli_command cmd_clients_def;
extern const struct cli_command cmd_mark_def;
extern const struct cli_command cmd_metric_def;
extern const struct cli_command cmd_trial_def;
extern const struct cli_command cmd_top_def;

struct store;

/* Prints "jobscope: <msg>\nTry 'jobscope CMD --help'." and returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* getopt_long's ':' (value missing) or '?' (unknown option) as a usage error. */
int cli_option_error(const char *cmd, int opt, char **argv);
/* Opens --db PATH, or the default store when db is NULL: 0, or EXIT_USAGE
 * after a message saying why. */
int cli_open_store(const char *db, unsigned flags, struct store **st);
/* $XDG_DATA_HOME/jobscope/jobscope.db, else ~/.local/share/jobscope/jobscope.db */
int cli_default_db(char *buf, size_t size);
/* Writes text to path ("-" = stdout); 0 or -errno, with a message. */
int cli_write_file(const char *path, const char *data, size_t len);
/* Whether the terminal/locale takes UTF-8 (for sparklines). */
bool cli_utf8(void);

/*
 * The remote-write options of agent and head (cli_rw.c): their getopt
 * values, long options and help lines.  cli_rw_option: 0, a usage error,
 * or -ENOENT when c is not one of them.
 */
enum {
	CLI_RW_URL = 0x200,
	CLI_RW_BEARER,
	CLI_RW_BASIC,
	CLI_RW_CA,
	CLI_RW_RELABEL,
	CLI_RW_MAX_SERIES,
	CLI_RW_BATCH,
};
#define CLI_RW_LONGOPTS                                                                            \
	{"remote-write", required_argument, NULL, CLI_RW_URL},                                    \
	    {"rw-bearer-token-file", required_argument, NULL, CLI_RW_BEARER},                     \
	    {"rw-basic-auth-file", required_argument, NULL, CLI_RW_BASIC},                        \
	    {"rw-ca-file", required_argument, NULL, CLI_RW_CA},                                   \
	    {"rw-relabel", required_argument, NULL, CLI_RW_RELABEL},                              \
	    {"rw-max-series", required_argument, NULL, CLI_RW_MAX_SERIES},                       \
	    {"rw-batch", required_argument, NULL, CLI_RW_BATCH},
#define CLI_RW_USAGE                                                                               \
	"      --remote-write URL   also send every stored sample to a Prometheus remote-\n"      \
	"                           write receiver (repeatable, up to 8), e.g.\n"                 \
	"                           http://prom:9090/api/v1/write; resent from the last\n"       \
	"                           acknowledged row after any failure (docs/remote-write.md)\n" \
	"      --rw-bearer-token-file F   send 'Authorization: Bearer <F>'\n"                    \
	"      --rw-basic-auth-file F     basic auth, F holds user:password\n"                   \
	"      --rw-ca-file F       trust this PEM CA for https:// targets\n"                    \
	"      --rw-relabel RULE    rename:OLD=NEW, drop:NAME, drop~:REGEX, label:NAME=VALUE\n" \
	"                           (repeatable, applied in order)\n"                            \
	"      --rw-max-series N    series per request at most (default 2000)\n"                \
	"      --rw-batch DUR       when current, send at most this often (default 5s;\n"      \
	"                           0: every tick); a backlog goes at once\n"
struct rw_opts;
int cli_rw_option(const char *cmd, struct rw_opts *o, int c, const char *arg);

#endif
