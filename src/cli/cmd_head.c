/*
 * cmd_head.c - `jobscope head`: its options and exit codes.  The head
 * itself (ingest, sessions, status, the read API) is src/head/.
 *
 * Exit codes: 0 after SIGTERM/SIGINT; 2 when what the options name cannot
 * be used (listen address, token or TLS files, the store, a
 * --max-connections the file-descriptor limit cannot hold); 1 when the
 * system refuses what the head needs (signals, threads, descriptors).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cli.h"
#include "common/timeutil.h"
#include "head/head.h"
#include "http/http.h"

static const char head_head[] =
    "usage: jobscope head [--listen ADDR:PORT] [--db PATH] [--token-file F]\n"
    "                     [--auth munge --admins USER,@GROUP] [--insecure]\n"
    "\n"
    "Collect what the agents of a cluster stream (jobscope agent --head URL)\n"
    "into one store, with nothing lost or duplicated across outages: a batch is\n"
    "acknowledged only once it is committed, and an agent resends from what was\n"
    "acknowledged.\n"
    "\n"
    "Closed by default: on an address other than loopback the head needs\n"
    "--token-file (agents; reads then need a token, a MUNGE credential or a\n"
    "trusted proxy's user) or --insecure (docs/http-api.md, Access).\n"
    "\n";

static const char head_tail[] =
    "\n"
    "Endpoints: POST /api/v1/ingest (agents; docs/wire.md), GET /, GET /status,\n"
    "GET /clients, GET /metrics/latest, POST /profiling/start {\"name\",\n"
    "\"interval_ms\", \"nodes\"}, POST /profiling/stop {\"name\"}, GET\n"
    "/profiling/sessions, POST /profiling/record (gswarm-profiler's calls,\n"
    "docs/gswarm.md).  While a session is\n"
    "active its nodes' agents sample at its interval (the smallest of those that\n"
    "cover a node), then return to their own.  GET /api/v1/... queries the store,\n"
    "/api/v1/report answers `jobscope report --head` (docs/http-api.md).\n";

static int set_listen(const struct opt *opt, const char *arg)
{
	struct sockaddr_storage sa;
	unsigned salen;

	if (http_parse_listen(arg, &sa, &salen))
		return usage_error("head", "bad --listen '%s' (ADDR:PORT)", arg);
	*(const char **)opt->value = arg;
	return 0;
}

static int cmd_head(int argc, char **argv)
{
	static const struct opt_cmd cmd = {"head", head_head, head_tail, 27, 0, 0};
	struct head_opts o = {.listen = HEAD_DEFAULT_LISTEN, .db = HEAD_DEFAULT_DB};
	const struct opt opts[] = {
	    OPT_CALLBACK(0, "listen", &o.listen, "ADDR:PORT",
			 "where agents and clients connect (default " HEAD_DEFAULT_LISTEN ");\n"
			 "port 0 picks a free one",
			 set_listen),
	    OPT_PATH(0, "db", &o.db, "PATH|URL", "a path",
		     "the store (default " HEAD_DEFAULT_DB "), or a PostgreSQL\n"
		     "database: postgresql://USER@HOST:PORT/DB (docs/postgresql.md)"),
	    OPT_STRING(0, "token-file", &o.token_file, "F",
		       "agents must send 'Authorization: Bearer <the token in F>';\n"
		       "also the admin token unless --admin-token-file"),
	    OPT_STRING(0, "admin-token-file", &o.admin_token_file, "F",
		       "starting and stopping sessions needs this token"),
	    OPT_STRING(0, "read-token-file", &o.read_token_file, "F",
		       "a token that reads every user's data (Prometheus,\n"
		       "scripts); the admin token reads too"),
	    OPT_STRING(0, "auth", &o.auth, "munge",
		       "people prove who they are with a MUNGE credential\n"
		       "(the CLI sends one when asked): a user reads their\n"
		       "own jobs, an admin (--admins) every job"),
	    OPT_PATH(0, "munge-socket", &o.munge_socket, "PATH", "a path",
		     "munged's socket (default $JOBSCOPE_MUNGE_SOCKET, else\n"
		     "munged's own)"),
	    OPT_STRING(0, "trusted-proxy", &o.trusted_proxy, "ADDR[/BITS],...",
		       "requests from there name their user in --user-header\n"
		       "(a login proxy: Open OnDemand, oauth2-proxy, Apache)"),
	    OPT_STRING(0, "user-header", &o.user_header, "NAME",
		       "the proxy's header that names the user (default\n" HEAD_DEFAULT_USER_HEADER
		       "); from elsewhere it is ignored"),
	    OPT_STRING(0, "admins", &o.admins, "USER,@GROUP,...",
		       "people who see every job and start sessions (root\n"
		       "by MUNGE always does)"),
	    OPT_FLAG(0, "insecure", &o.insecure,
		     "serve a non-loopback --listen without --token-file:\n"
		     "anyone who reaches it reads every user's jobs"),
	    OPT_STRING(0, "tls-cert", &o.tls_cert_file, "F",
		       "serve HTTPS with this PEM certificate (and --tls-key)"),
	    OPT_STRING(0, "tls-key", &o.tls_key_file, "F", "the certificate's PEM private key"),
	    OPT_STRING(0, "log-file", &o.log_file, "PATH",
		       "messages there instead of stderr; SIGHUP reopens it"),
	    OPT_INT(0, "max-connections", &o.max_conns, "N", 1, 1000000,
		    "connections held at once (default 16384; the\n"
		    "file-descriptor limit is raised to fit, or it is an error)"),
	    OPT_INT(0, "max-connections-per-ip", &o.max_conns_per_ip, "N", 1, 1000000,
		    "from one address (default 512)"),
	    OPT_INT(0, "threads", &o.threads, "N", 1, 256,
		    "HTTP threads (default: one per CPU, 2 to 16)"),
	    OPT_PATH(0, "session-dir", &o.session_dir, "DIR", "a directory",
		     "when a session stops, write DIR/<name>.json (gswarm-\n"
		     "profiler's file) and DIR/<name>.png (its plot)"),
	    OPT_DURATION(0, "retention", &o.retention_ms, 60000, 0, "1m or more, e.g. 30d",
			 "samples older than DUR go (default: kept); with a\n"
			 "PostgreSQL --db whole day partitions are dropped"),
	    OPT_DURATION(0, "report-checkpoint", &o.ckpt_lag_ms, 1000, 0, "1s or more, e.g. 1h",
			 "bring a running job's report checkpoint up to\n"
			 "date when it is DUR behind (default 1h); its first\n"
			 "once the job's rows here span DUR"),
	    OPT_DURATION(0, "lease", &o.lease_ms, 3000, 0, "3s or more, e.g. 15s",
			 "PostgreSQL --db, several heads: the upkeep lease's\n"
			 "length (default 15s); the head holding it runs\n"
			 "retention, report checkpoints and remote write, and\n"
			 "another takes over this long after it died"),
	    CLI_RW_OPTIONS(&o.rw),
	    CLI_K8S_OPTIONS(&o.k8s),
	    /* hidden: tests */
	    OPT_HIDDEN_DURATION("exit-after", &o.exit_after_ms),
	    OPT_END(),
	};
	int first, ret = opt_parse(&cmd, opts, argc, argv, &first);

	if (ret)
		return ret == OPT_DONE ? 0 : ret;
	switch (head_main(&o)) {
	case HEAD_OK:
		return 0;
	case HEAD_FAIL_SYSTEM:
		return EXIT_FAIL;
	default:
		return EXIT_USAGE;
	}
}

const struct cli_command cmd_head_def = {
    "head",
    cmd_head,
    "collect the agents' streams into one store (cluster view)",
};
