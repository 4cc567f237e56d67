/*
 * cmd_head.c - `jobscope head`: its options and exit codes.  The head
 * itself (ingest, sessions, status, the read API) is src/head/.
 *
 * Exit codes: 0 after SIGTERM/SIGINT; 2 when what the options name cannot
 * be used (listen address, token or TLS files, the store, a
 * --max-connections the file-descriptor limit cannot hold); 1 when the
 * system refuses what the head needs (signals, threads, descriptors).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cli.h"
#include "common/timeutil.h"
#include "head/head.h"
#include "http/http.h"

static const char head_usage[] =
    "usage: jobscope head [--listen ADDR:PORT] [--db PATH] [--token-file F]\n"
    "\n"
    "Collect what the agents of a cluster stream (jobscope agent --head URL)\n"
    "into one store, with nothing lost or duplicated across outages: a batch is\n"
    "acknowledged only once it is committed, and an agent resends from what was\n"
    "acknowledged.\n"
    "\n"
    "Options:\n"
    "      --listen ADDR:PORT   where agents and clients connect (default " HEAD_DEFAULT_LISTEN
    ");\n"
    "                           port 0 picks a free one\n"
    "      --db PATH|URL        the store (default " HEAD_DEFAULT_DB "), or a PostgreSQL\n"
    "                           database: postgresql://USER@HOST:PORT/DB (docs/postgresql.md)\n"
    "      --token-file F       agents must send 'Authorization: Bearer <the token in F>';\n"
    "                           also the admin token unless --admin-token-file\n"
    "      --admin-token-file F\n"
    "                           starting and stopping sessions needs this token\n"
    "      --read-token-file F  reads need this token (or the admin one) too\n"
    "      --tls-cert F --tls-key F   serve HTTPS with this PEM certificate and key\n"
    "      --log-file PATH      messages there instead of stderr; SIGHUP reopens it\n"
    "      --max-connections N  connections held at once (default 16384; the\n"
    "                           file-descriptor limit is raised to fit, or it is an error)\n"
    "      --max-connections-per-ip N   from one address (default 512)\n"
    "      --threads N          HTTP threads (default: one per CPU, 2 to 16)\n"
    "      --session-dir DIR    when a session stops, write DIR/<name>.json (gswarm-\n"
    "                           profiler's file) and DIR/<name>.png (its plot)\n"
    "      --retention DUR      samples older than DUR go (default: kept); with a\n"
    "                           PostgreSQL --db whole day partitions are dropped\n"
    "      --report-checkpoint DUR  bring a running job's report checkpoint up to\n"
    "                           date when it is DUR behind (default 1h)\n" CLI_RW_USAGE
    "  -h, --help               show this help\n"
    "\n"
    "Endpoints: POST /api/v1/ingest (agents; docs/wire.md), GET /, GET /status,\n"
    "GET /clients, GET /metrics/latest, POST /profiling/start {\"name\",\n"
    "\"interval_ms\", \"nodes\"}, POST /profiling/stop {\"name\"}, GET\n"
    "/profiling/sessions, POST /profiling/record (gswarm-profiler's calls,\n"
    "docs/gswarm.md).  While a session is\n"
    "active its nodes' agents sample at its interval (the smallest of those that\n"
    "cover a node), then return to their own.  GET /api/v1/... queries the store,\n"
    "/api/v1/report answers `jobscope report --head` (docs/http-api.md).\n";

/* "N", 1 to max: 0 or -EINVAL. */
static int parse_count(const char *s, unsigned max, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno || *s == '-' || v < 1 || v > max)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

static int parse_opts(int argc, char **argv, struct head_opts *o)
{
	static const struct option longopts[] = {
	    {"listen", required_argument, NULL, 'l'},
	    {"db", required_argument, NULL, 'd'},
	    {"token-file", required_argument, NULL, 't'},
	    {"admin-token-file", required_argument, NULL, 'a'},
	    {"read-token-file", required_argument, NULL, 'r'},
	    {"tls-cert", required_argument, NULL, 'C'},
	    {"tls-key", required_argument, NULL, 'K'},
	    {"log-file", required_argument, NULL, 'L'},
	    {"max-connections", required_argument, NULL, 'M'},
	    {"max-connections-per-ip", required_argument, NULL, 'P'},
	    {"threads", required_argument, NULL, 'T'},
	    {"report-checkpoint", required_argument, NULL, 'R'},
	    {"retention", required_argument, NULL, 'D'},
	    {"session-dir", required_argument, NULL, 'S'},
	    CLI_RW_LONGOPTS{"exit-after", required_argument, NULL, 'E'}, /* hidden: tests */
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct sockaddr_storage sa;
	unsigned salen;
	int c;

	memset(o, 0, sizeof(*o));
	o->listen = HEAD_DEFAULT_LISTEN;
	o->db = HEAD_DEFAULT_DB;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			if (http_parse_listen(optarg, &sa, &salen))
				return cli_usage_error("head", "bad --listen '%s' (ADDR:PORT)",
						       optarg);
			o->listen = optarg;
			break;
		case 'd':
			if (!optarg[0])
				return cli_usage_error("head", "--db needs a path");
			o->db = optarg;
			break;
		case 't':
			o->token_file = optarg;
			break;
		case 'a':
			o->admin_token_file = optarg;
			break;
		case 'r':
			o->read_token_file = optarg;
			break;
		case 'C':
			o->tls_cert_file = optarg;
			break;
		case 'K':
			o->tls_key_file = optarg;
			break;
		case 'L':
			o->log_file = optarg;
			break;
		case 'M':
		case 'P':
		case 'T':
			if (parse_count(optarg, c == 'T' ? 256 : 1000000,
					c == 'M' ? &o->max_conns
					: c == 'P' ? &o->max_conns_per_ip
						   : &o->threads))
				return cli_usage_error("head", "bad --%s '%s' (a number, 1 to %u)",
						       c == 'M'   ? "max-connections"
						       : c == 'P' ? "max-connections-per-ip"
								  : "threads",
						       optarg, c == 'T' ? 256 : 1000000);
			break;
		case 'R':
			if (parse_duration_ms(optarg, &o->ckpt_lag_ms) || o->ckpt_lag_ms < 1000)
				return cli_usage_error("head",
						       "bad --report-checkpoint '%s' (1s or "
						       "more, e.g. 1h)",
						       optarg);
			break;
		case 'D':
			if (parse_duration_ms(optarg, &o->retention_ms) || o->retention_ms < 60000)
				return cli_usage_error(
				    "head", "bad --retention '%s' (1m or more, e.g. 30d)", optarg);
			break;
		case 'S':
			if (!optarg[0])
				return cli_usage_error("head", "--session-dir needs a directory");
			o->session_dir = optarg;
			break;
		case 'E':
			if (parse_duration_ms(optarg, &o->exit_after_ms))
				return cli_usage_error("head", "bad --exit-after '%s'", optarg);
			break;
		case 'h':
			fputs(head_usage, stdout);
			return -1;
		default:
			if (c >= CLI_RW_URL && c <= CLI_RW_BATCH) {
				int ret = cli_rw_option("head", &o->rw, c, optarg);

				if (ret)
					return ret;
				break;
			}
			return cli_option_error("head", c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("head", "unexpected argument '%s'", argv[optind]);
	return 0;
}

static int cmd_head(int argc, char **argv)
{
	struct head_opts o;
	int ret = parse_opts(argc, argv, &o);

	if (ret < 0)
		return 0;
	if (ret)
		return ret;
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
    head_usage,
};
