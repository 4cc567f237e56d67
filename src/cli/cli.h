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
#include "common/options.h"

struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary; /* its line in `jobscope --help`; its own --help is fn's */
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

/* Opens --db PATH, or the default store when db is NULL: 0, or EXIT_USAGE
 * after a message saying why. */
int cli_open_store(const char *db, unsigned flags, struct store **st);
/* $XDG_DATA_HOME/jobscope/jobscope.db, else ~/.local/share/jobscope/jobscope.db */
int cli_default_db(char *buf, size_t size);
/* Writes text to path ("-" = stdout); 0 or -errno, with a message. */
int cli_write_file(const char *path, const char *data, size_t len);
/* Whether the terminal/locale takes UTF-8 (for sparklines). */
bool cli_utf8(void);
/* --sysroot DIR (hidden; agent and run): /proc and /sys read under DIR (common/sysroot.h). */
struct opt;
int cli_set_sysroot(const struct opt *opt, const char *arg);

/*
 * The remote-write options of agent and head (cli_rw.c): rows of their
 * option tables, rw a struct rw_opts *.
 */
#define CLI_RW_OPTIONS(rw)                                                                         \
	OPT_CALLBACK(0, "remote-write", (rw), "URL",                                               \
		     "also send every stored sample to a Prometheus remote-\n"                     \
		     "write receiver (repeatable, up to 8), e.g.\n"                                \
		     "http://prom:9090/api/v1/write; resent from the last\n"                       \
		     "acknowledged row after any failure (docs/remote-write.md)",                  \
		     cli_rw_url),                                                                  \
	    OPT_STRING(0, "rw-bearer-token-file", &(rw)->bearer_token_file, "F",                   \
		       "send 'Authorization: Bearer <F>'"),                                        \
	    OPT_STRING(0, "rw-basic-auth-file", &(rw)->basic_auth_file, "F",                       \
		       "basic auth, F holds user:password"),                                       \
	    OPT_STRING(0, "rw-ca-file", &(rw)->ca_file, "F",                                       \
		       "trust this PEM CA for https:// targets"),                                  \
	    OPT_CALLBACK(0, "rw-relabel", (rw), "RULE",                                            \
			 "rename:OLD=NEW, drop:NAME, drop~:REGEX, label:NAME=VALUE\n"              \
			 "(repeatable, applied in order)",                                         \
			 cli_rw_relabel),                                                          \
	    OPT_INT(0, "rw-max-series", &(rw)->max_series, "N", 1, 1000000,                        \
		    "series per request at most (default 2000)"),                                  \
	    OPT_CALLBACK(0, "rw-batch", (rw), "DUR",                                               \
			 "when current, send at most this often (default 5s;\n"                    \
			 "0: every tick); a backlog goes at once",                                 \
			 cli_rw_batch)
/*
 * The annotation options of agent and head (net/k8s_annotate.h,
 * docs/kubernetes-annotations.md): rows of their option tables, k a
 * struct k8s_annotate_opts *.
 */
#define CLI_K8S_OPTIONS(k)                                                                         \
	OPT_FLAG(0, "k8s-annotate", &(k)->enabled,                                                 \
		 "write each pod's figures and verdicts, and each node's\n"                        \
		 "GPUs and use, back to Kubernetes as annotations"),                               \
	    OPT_STRING(0, "k8s-api", &(k)->api, "URL",                                             \
		       "the API server (default https://$KUBERNETES_SERVICE_HOST:\n"               \
		       "$KUBERNETES_SERVICE_PORT)"),                                               \
	    OPT_STRING(0, "k8s-token-file", &(k)->token_file, "F",                                 \
		       "bearer token, read again when it changes (default\n"                       \
		       "the ServiceAccount's token)"),                                             \
	    OPT_STRING(0, "k8s-ca-file", &(k)->ca_file, "F",                                       \
		       "the API server's PEM CA (default the ServiceAccount's)"),                  \
	    OPT_DURATION(0, "k8s-annotate-interval", &(k)->interval_ms, 1000, 0, "1s or more",     \
			 "patch a pod or node at most this often, and only\n"                      \
			 "when a figure moved (default 5m)"),                                      \
	    OPT_STRING(0, "k8s-annotation-prefix", &(k)->prefix, "P",                              \
		       "annotation names' prefix (default jobscope.io)"),                          \
	{                                                                                          \
		.type = OPTION_STRING, .long_name = "k8s-test-pod-names",                          \
		.value = &(k)->test_pod_names, .argh = "LIST", .flags = OPT_HIDDEN                 \
	}
int cli_rw_url(const struct opt *opt, const char *arg);
int cli_rw_relabel(const struct opt *opt, const char *arg);
int cli_rw_batch(const struct opt *opt, const char *arg);

#endif
