/*
 * cmd_agent.c - `jobscope agent`: its options (the command line and the
 * --config file) and its exit status.  The daemon itself is src/agent/.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "agent/agent.h"
#include "analysis/ckptmaint.h"
#include "cli.h"
#include "common/progress.h"
#include "common/sysroot.h"

#define AGENT_DEFAULT_DB     "/var/lib/jobscope/agent.db"
#define AGENT_DEFAULT_LISTEN "127.0.0.1:9464"

static const char agent_usage[] =
    "usage: jobscope agent [--interval DUR] [--db PATH] [--listen ADDR:PORT]\n"
    "                      [--config FILE] [OPTIONS]\n"
    "\n"
    "Sample the host, every user-space process, every job's cgroup and every GPU\n"
    "of this node each interval; attribute processes to jobs (Slurm, Kubernetes,\n"
    "jobscope run, systemd units, else user and session); keep it all in a SQLite\n"
    "store with retention tiers; serve Prometheus metrics and a JSON API.\n"
    "\n"
    "Options:\n"
    "  -i, --interval DUR       time between samples (default 1s, at least 100ms)\n"
    "      --db PATH            the store (default " AGENT_DEFAULT_DB ")\n"
    "      --listen ADDR:PORT   HTTP endpoints (default " AGENT_DEFAULT_LISTEN ");\n"
    "                           port 0 picks a free one; 'none' serves nothing\n"
    "      --config FILE        read options from FILE: one 'name = value' per line,\n"
    "                           names as the long options ('interval = 2s');\n"
    "                           options on the command line win\n"
    "      --log-file PATH      append messages there instead of stderr;\n"
    "                           SIGHUP reopens it (for logrotate)\n"
    "      --retention-raw DUR  keep raw samples this long (default 7d)\n"
    "      --retention-1m DUR   keep 1-minute rollups this long (default 90d)\n"
    "      --retention-1h DUR   keep 1-hour rollups this long (default 2y; 0 = ever)\n"
    "      --max-db-size SIZE   cap the store's size (e.g. 500M, 20G): the oldest\n"
    "                           raw rows, then rollups, go first; job summaries stay\n"
    "      --pack-after DUR     pack raw rows older than this into compressed column\n"
    "                           blobs (default 1h; 0 = never); readers see no change\n"
    "      --report-checkpoint DUR  bring a running job's report checkpoint up to\n"
    "                           date when it is DUR behind (default 1h): a report\n"
    "                           replays only the rows after it\n"
    "      --head URL           stream everything to a head (jobscope head), e.g.\n"
    "                           http://head:8091; the store is the spool: retention\n"
    "                           keeps what the head has not acknowledged; only\n"
    "                           --max-db-size may drop it, counted as a gap\n"
    "      --token-file F       the head's bearer token\n"
    "      --ca-file F          trust this PEM CA for an https:// head\n"
    "      --compat LIST        also serve other exporters' series on /metrics, so\n"
    "                           their readers work unchanged: jobstats (Princeton's\n"
    "                           cgroup_* and nvidia_gpu_* series), dcgm\n"
    "                           (dcgm-exporter's DCGM_FI_*); e.g. jobstats,dcgm\n"
    "      --cuda-socket PATH   listen there (mode 0666: jobs of any user connect)\n"
    "                           for the CUDA hook of processes started with\n"
    "                           CUDA_INJECTION64_PATH=libjobscope-cuda.so and\n"
    "                           JOBSCOPE_CUDA_SOCKET=PATH; a process is known by\n"
    "                           the kernel's word (SO_PEERCRED pid), its job as\n"
    "                           the agent attributes that pid.  They record CUDA\n"
    "                           tables while a head's session asks (session start\n"
    "                           --cuda) or always with --cuda-always (docs/cuda.md)\n"
    "      --cuda-always        record CUDA tables without a session\n"
    "      --statsd-socket PATH\n"
    "                           a Unix datagram socket (mode 0666) for StatsD and\n"
    "                           DogStatsD lines (app metrics; events are markers):\n"
    "                           each line is the job of its sender's pid, as the\n"
    "                           kernel says it (SO_PASSCRED); jobs find it through\n"
    "                           $JOBSCOPE_STATSD_SOCKET (docs/app-metrics.md)\n"
    "      --statsd-udp ADDR:PORT  also StatsD over UDP (e.g. 127.0.0.1:8125): a\n"
    "                           line is the job its `job` tag names (#job:ID or\n"
    "                           #job:SCHEDULER:ID); a line without one is counted\n"
    "                           and dropped\n" CLI_RW_USAGE
    "  -h, --help               show this help\n"
    "\n"
    "Endpoints: GET /metrics (Prometheus text 0.0.4), /api/v1/node, /api/v1/gpus,\n"
    "/api/v1/jobs[?state=running|ended|all&...], /api/v1/jobs/{key} (key: scheduler:id:start_ms,\n"
    "scheduler:id or id; the latest job that matches).\n"
    "\n"
    "Run as root to see every process's I/O and environment; unprivileged, what\n"
    "cannot be read is reported missing, never 0.  SIGTERM or SIGINT: the tick in\n"
    "flight is stored, then the agent exits 0.\n";

/* --max-db-size: "500M", "20G", "1048576" (bytes) */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || v < 0)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		v *= 1024.0;
		end++;
		break;
	case 'm':
	case 'M':
		v *= 1048576.0;
		end++;
		break;
	case 'g':
	case 'G':
		v *= 1073741824.0;
		end++;
		break;
	case 't':
	case 'T':
		v *= 1099511627776.0;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end || v > 9.0e18)
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

static const struct option agent_longopts[] = {
    {"interval", required_argument, NULL, 'i'},
    {"db", required_argument, NULL, 'd'},
    {"listen", required_argument, NULL, 'l'},
    {"config", required_argument, NULL, 'c'},
    {"log-file", required_argument, NULL, 'L'},
    {"retention-raw", required_argument, NULL, 'R'},
    {"retention-1m", required_argument, NULL, 'M'},
    {"retention-1h", required_argument, NULL, 'H'},
    {"max-db-size", required_argument, NULL, 'X'},
    {"pack-after", required_argument, NULL, 'P'},
    {"report-checkpoint", required_argument, NULL, 'K'},
    {"head", required_argument, NULL, 'U'},
    {"token-file", required_argument, NULL, 'T'},
    {"ca-file", required_argument, NULL, 'A'},
    {"compat", required_argument, NULL, 'C'},
    {"cuda-socket", required_argument, NULL, 'Q'},
    {"cuda-always", no_argument, NULL, 'W'},
    {"statsd-socket", required_argument, NULL, 'D'},
    {"statsd-udp", required_argument, NULL, 'B'},
    CLI_RW_LONGOPTS{"exit-after", required_argument, NULL, 'E'}, /* hidden: tests, benchmarks */
    {"sysroot", required_argument, NULL, 'S'},			 /* hidden: tests */
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int apply_opt(struct agent_opts *o, int c, const char *arg, char **argv)
{
	int64_t ms;

	switch (c) {
	case 'i':
		if (parse_duration_ms(arg, &o->interval_ms))
			return cli_usage_error("agent", "bad --interval '%s' (e.g. 1s, 500ms)",
					       arg);
		if (o->interval_ms < AGENT_MIN_INTERVAL_MS)
			return cli_usage_error("agent", "--interval %s is below the minimum, %dms",
					       arg, AGENT_MIN_INTERVAL_MS);
		return 0;
	case 'd':
		if (!arg[0])
			return cli_usage_error("agent", "--db needs a path");
		o->db = arg;
		return 0;
	case 'l': {
		struct sockaddr_storage sa;
		unsigned salen;

		o->listen = strcmp(arg, "none") == 0 ? NULL : arg;
		if (o->listen && http_parse_listen(o->listen, &sa, &salen))
			return cli_usage_error("agent", "bad --listen '%s' (ADDR:PORT, e.g. %s)",
					       arg, AGENT_DEFAULT_LISTEN);
		return 0;
	}
	case 'L':
		o->log_file = arg;
		return 0;
	case 'C':
		if (agent_compat_parse(arg, &o->compat))
			return cli_usage_error("agent",
					       "bad --compat '%s' (jobstats, dcgm or both: "
					       "jobstats,dcgm)",
					       arg);
		return 0;
	case 'R':
	case 'M':
	case 'H':
		if (parse_duration_ms(arg, &ms))
			return cli_usage_error("agent", "bad retention '%s' (e.g. 7d, 90d, 2y)",
					       arg);
		if (c == 'R')
			o->retention.raw_ms = ms;
		else if (c == 'M')
			o->retention.m1_ms = ms;
		else
			o->retention.h1_ms = ms;
		return 0;
	case 'P':
		if (parse_duration_ms(arg, &o->pack_after_ms))
			return cli_usage_error("agent", "bad --pack-after '%s' (e.g. 1h, 0)", arg);
		return 0;
	case 'X':
		if (parse_size(arg, &o->retention.max_bytes))
			return cli_usage_error("agent", "bad --max-db-size '%s' (e.g. 500M, 20G)",
					       arg);
		return 0;
	case 'K':
		if (parse_duration_ms(arg, &o->ckpt_lag_ms) || o->ckpt_lag_ms < 1000)
			return cli_usage_error("agent",
					       "bad --report-checkpoint '%s' (1s or more, "
					       "e.g. 1h)",
					       arg);
		return 0;
	case 'U':
		if (strncmp(arg, "http://", 7) != 0 && strncmp(arg, "https://", 8) != 0)
			return cli_usage_error("agent", "bad --head '%s' (http://HOST:PORT)", arg);
		o->head = arg;
		return 0;
	case 'T':
		o->token_file = arg;
		return 0;
	case 'Q':
		if (!arg[0])
			return cli_usage_error("agent", "--cuda-socket needs a path");
		o->cuda_socket = arg;
		return 0;
	case 'W':
		o->cuda_always = true;
		return 0;
	case 'D':
		if (!arg[0])
			return cli_usage_error("agent", "--statsd-socket needs a path");
		o->statsd_socket = arg;
		return 0;
	case 'B': {
		const char *colon = strrchr(arg, ':');
		char *end;
		long port = colon ? strtol(colon + 1, &end, 10) : -1;

		if (!colon || colon == arg || colon - arg >= 64 || port <= 0 || port > 65535 ||
		    *end)
			return cli_usage_error("agent",
					       "bad --statsd-udp '%s' (ADDR:PORT, e.g. "
					       "127.0.0.1:8125)",
					       arg);
		snprintf(o->statsd_udp_addr, sizeof(o->statsd_udp_addr), "%.*s", (int)(colon - arg),
			 arg);
		o->statsd_udp_port = (uint16_t)port;
		return 0;
	}
	case 'A':
		o->ca_file = arg;
		return 0;
	case 'E':
		if (parse_duration_ms(arg, &o->exit_after_ms))
			return cli_usage_error("agent", "bad --exit-after '%s'", arg);
		return 0;
	case 'S':
		sysroot_set(arg);
		return 0;
	default:
		if (c >= CLI_RW_URL && c <= CLI_RW_BATCH)
			return cli_rw_option("agent", &o->rw, c, arg);
		return cli_option_error("agent", c, argv);
	}
}

/*
 * --config FILE: "name = value" lines ('#' comments), names as the long
 * options.  Applied before the command line's, which win.
 */
static int read_config(struct agent_opts *o, char *config_buf, size_t config_size, const char *path)
{
	FILE *f = fopen(path, "r");
	size_t used = 0;
	char line[1024];
	int lineno = 0;

	if (!f)
		return cli_usage_error("agent", "cannot read --config '%s': %s", path,
				       strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *k = line, *eq, *v, *e;
		const struct option *opt;
		int ret;

		lineno++;
		while (*k == ' ' || *k == '\t')
			k++;
		if (*k == '#' || *k == '\n' || *k == '\0')
			continue;
		eq = strchr(k, '=');
		if (!eq) {
			fclose(f);
			return cli_usage_error("agent", "%s:%d: expected 'name = value'", path,
					       lineno);
		}
		for (e = eq; e > k && (e[-1] == ' ' || e[-1] == '\t'); e--)
			;
		*e = '\0';
		v = eq + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		for (e = v + strlen(v);
		     e > v && (e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r');
		     e--)
			;
		*e = '\0';
		for (opt = agent_longopts; opt->name; opt++)
			if (strcmp(opt->name, k) == 0 && opt->val != 'c' && opt->val != 'h' &&
			    (opt->has_arg == required_argument || opt->val == 'W'))
				break;
		if (!opt->name) {
			fclose(f);
			return cli_usage_error("agent", "%s:%d: unknown setting '%s'", path, lineno,
					       k);
		}
		if (opt->has_arg == no_argument) {
			/* a flag: "cuda-always = true" */
			if (strcmp(v, "true") == 0 &&
			    (ret = apply_opt(o, opt->val, v, NULL)) != 0) {
				fclose(f);
				return ret;
			}
			if (strcmp(v, "true") && strcmp(v, "false")) {
				fclose(f);
				return cli_usage_error("agent", "%s:%d: %s = true or false", path,
						       lineno, k);
			}
			continue;
		}
		if (used + strlen(v) + 1 > config_size) {
			fclose(f);
			return cli_usage_error("agent", "%s: too long", path);
		}
		memcpy(config_buf + used, v, strlen(v) + 1);
		ret = apply_opt(o, opt->val, config_buf + used, NULL);
		used += strlen(v) + 1;
		if (ret) {
			fclose(f);
			return ret;
		}
	}
	fclose(f);
	return 0;
}

/* config_buf keeps the --config file's values, which o points at. */
static int parse_opts(int argc, char **argv, struct agent_opts *o, char *config_buf,
		      size_t config_size)
{
	int c, ret;

	memset(o, 0, sizeof(*o));
	o->interval_ms = 1000;
	o->db = AGENT_DEFAULT_DB;
	o->listen = AGENT_DEFAULT_LISTEN;
	o->retention.raw_ms = 7LL * 86400000;
	o->retention.m1_ms = 90LL * 86400000;
	o->retention.h1_ms = 730LL * 86400000;
	o->pack_after_ms = AGENT_PACK_AFTER_MS;
	o->ckpt_lag_ms = REPORT_CKPT_LAG_MS;
	opterr = 0;
	/* first pass: --config and --help only */
	optind = 1;
	while ((c = getopt_long(argc, argv, ":i:h", agent_longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(agent_usage, stdout);
			return -1;
		}
		if (c == 'c') {
			ret = read_config(o, config_buf, config_size, optarg);
			if (ret)
				return ret;
		}
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, ":i:h", agent_longopts, NULL)) != -1) {
		if (c == 'c')
			continue;
		ret = apply_opt(o, c, optarg, argv);
		if (ret)
			return ret;
	}
	if (optind < argc)
		return cli_usage_error("agent", "unexpected argument '%s'", argv[optind]);
	return 0;
}

static int cmd_agent(int argc, char **argv)
{
	char config_buf[8192]; /* the --config values the options point at */
	struct agent_opts o;
	const char *root = getenv("JOBSCOPE_SYSROOT");
	enum agent_failure failure;
	int ret;

	if (root)
		sysroot_set(root);
	ret = parse_opts(argc, argv, &o, config_buf, sizeof(config_buf));
	if (ret < 0)
		return 0;
	if (ret)
		return ret;
	/* in the foreground on a terminal: a catch-up after an outage shows its progress */
	o.progress = !o.log_file && progress_wanted(2, false);
	if (agent_main(&o, &failure) == 0)
		return 0;
	/* what the options name cannot be used: a usage error, as for the others */
	return failure == AGENT_FAIL_SETUP ? EXIT_USAGE : EXIT_FAIL;
}

const struct cli_command cmd_agent_def = {
    "agent",
    cmd_agent,
    "sample every process and GPU of the node, attributed to jobs",
    agent_usage,
};
