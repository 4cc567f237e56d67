/*
 * cmd_agent.c - `jobscope agent`: its options (the command line and the
 * --config file) and its exit status.  The daemon itself is src/agent/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "agent/agent.h"
#include "analysis/ckptmaint.h"
#include "cli.h"
#include "common/fmt.h"
#include "common/progress.h"
#include "common/sysroot.h"

#define AGENT_DEFAULT_DB     "/var/lib/jobscope/agent.db"
#define AGENT_DEFAULT_LISTEN "127.0.0.1:9464"

static const char agent_head[] =
    "usage: jobscope agent [--interval DUR] [--db PATH] [--listen ADDR:PORT]\n"
    "                      [--config FILE] [OPTIONS]\n"
    "\n"
    "Sample the host, every user-space process, every job's cgroup and every GPU\n"
    "of this node each interval; attribute processes to jobs (Slurm, Kubernetes,\n"
    "jobscope run, systemd units, else user and session); keep it all in a SQLite\n"
    "store with retention tiers; serve Prometheus metrics and a JSON API.\n"
    "\n";

static const char agent_tail[] =
    "\n"
    "Endpoints: GET /metrics (Prometheus text 0.0.4), /api/v1/node, /api/v1/gpus,\n"
    "/api/v1/jobs[?state=running|ended|all&...], /api/v1/jobs/{key} (key: scheduler:id:start_ms,\n"
    "scheduler:id or id; the latest job that matches).\n"
    "\n"
    "Run as root to see every process's I/O and environment; unprivileged, what\n"
    "cannot be read is reported missing, never 0.  SIGTERM or SIGINT: the tick in\n"
    "flight is stored, then the agent exits 0.\n";

static int set_listen(const struct opt *opt, const char *arg)
{
	struct sockaddr_storage sa;
	unsigned salen;
	const char **listen = opt->value;

	*listen = strcmp(arg, "none") == 0 ? NULL : arg;
	if (*listen && http_parse_listen(*listen, &sa, &salen))
		return usage_error("agent", "bad --listen '%s' (ADDR:PORT, e.g. %s)", arg,
				   AGENT_DEFAULT_LISTEN);
	return 0;
}

static int set_compat(const struct opt *opt, const char *arg)
{
	if (agent_compat_parse(arg, opt->value))
		return usage_error("agent",
				   "bad --compat '%s' (jobstats, dcgm or both: "
				   "jobstats,dcgm)",
				   arg);
	return 0;
}

static int set_max_db_size(const struct opt *opt, const char *arg)
{
	if (parse_size_bytes(arg, opt->value))
		return usage_error("agent", "bad --max-db-size '%s' (e.g. 500M, 20G)", arg);
	return 0;
}

/* --head, repeatable: the heads tried in turn (net/sender.h). */
static int set_head(const struct opt *opt, const char *arg)
{
	struct agent_opts *o = opt->value;
	char host[256];
	int port;

	if ((strncmp(arg, "http://", 7) != 0 && strncmp(arg, "https://", 8) != 0) ||
	    sender_url_host(arg, host, sizeof(host), &port))
		return usage_error("agent", "bad --head '%s' (http://HOST:PORT)", arg);
	for (int i = 0; i < o->nheads; i++)
		if (strcmp(o->heads[i], arg) == 0)
			return 0; /* the same head twice (the config and the command line) */
	if (o->nheads >= SENDER_MAX_URLS)
		return usage_error("agent", "at most %d --head", SENDER_MAX_URLS);
	o->heads[o->nheads++] = arg;
	o->head = o->heads[0];
	return 0;
}

static int set_statsd_udp(const struct opt *opt, const char *arg)
{
	struct agent_opts *o = opt->value;
	const char *colon = strrchr(arg, ':');
	char *end;
	long port = colon ? strtol(colon + 1, &end, 10) : -1;

	if (!colon || colon == arg || colon - arg >= 64 || port <= 0 || port > 65535 || *end)
		return usage_error("agent",
				   "bad --statsd-udp '%s' (ADDR:PORT, e.g. 127.0.0.1:8125)", arg);
	snprintf(o->statsd_udp_addr, sizeof(o->statsd_udp_addr), "%.*s", (int)(colon - arg), arg);
	o->statsd_udp_port = (uint16_t)port;
	return 0;
}

static int cmd_agent(int argc, char **argv)
{
	static const struct opt_cmd cmd = {"agent", agent_head, agent_tail, 27, 0, 0};
	struct agent_opts o = {
	    .interval_ms = 1000,
	    .db = AGENT_DEFAULT_DB,
	    .listen = AGENT_DEFAULT_LISTEN,
	    .retention = {.raw_ms = 7LL * 86400000,
			  .m1_ms = 90LL * 86400000,
			  .h1_ms = 730LL * 86400000},
	    .pack_after_ms = AGENT_PACK_AFTER_MS,
	    .ckpt_lag_ms = REPORT_CKPT_LAG_MS,
	    .stop_timeout_ms = AGENT_STOP_TIMEOUT_MS,
	};
	const struct opt opts[] = {
	    OPT_DURATION_MIN('i', "interval", &o.interval_ms, AGENT_MIN_INTERVAL_MS,
			     "e.g. 1s, 500ms", "time between samples (default 1s, at least 100ms)"),
	    OPT_PATH(0, "db", &o.db, "PATH", "a path", "the store (default " AGENT_DEFAULT_DB ")"),
	    OPT_CALLBACK(0, "listen", &o.listen, "ADDR:PORT",
			 "HTTP endpoints (default " AGENT_DEFAULT_LISTEN ");\n"
			 "port 0 picks a free one; 'none' serves nothing",
			 set_listen),
	    OPT_CONFIG("config", "read options from FILE: one 'name = value' per line,\n"
				 "names as the long options ('interval = 2s');\n"
				 "options on the command line win"),
	    OPT_STRING(0, "log-file", &o.log_file, "PATH",
		       "append messages there instead of stderr;\n"
		       "SIGHUP reopens it (for logrotate)"),
	    OPT_DURATION(0, "retention-raw", &o.retention.raw_ms, 0, 0, "e.g. 7d, 90d, 2y",
			 "keep raw samples this long (default 7d)"),
	    OPT_DURATION(0, "retention-1m", &o.retention.m1_ms, 0, 0, "e.g. 7d, 90d, 2y",
			 "keep 1-minute rollups this long (default 90d)"),
	    OPT_DURATION(0, "retention-1h", &o.retention.h1_ms, 0, 0, "e.g. 7d, 90d, 2y",
			 "keep 1-hour rollups this long (default 2y; 0 = ever)"),
	    OPT_CALLBACK(0, "max-db-size", &o.retention.max_bytes, "SIZE",
			 "cap the store's size (e.g. 500M, 20G): the oldest\n"
			 "raw rows, then rollups, go first; job summaries stay",
			 set_max_db_size),
	    OPT_DURATION(0, "pack-after", &o.pack_after_ms, 0, 0, "e.g. 1h, 0",
			 "pack raw rows older than this into compressed column\n"
			 "blobs (default 10m; 0 = never); readers see no change"),
	    OPT_DURATION(0, "report-checkpoint", &o.ckpt_lag_ms, 1000, 0, "1s or more, e.g. 1h",
			 "bring a running job's report checkpoint up to\n"
			 "date when it is DUR behind (default 1h); its first\n"
			 "once the job's rows here span DUR: a report\n"
			 "replays only the rows after it"),
	    OPT_CALLBACK(0, "head", &o, "URL",
			 "stream everything to a head (jobscope head), e.g.\n"
			 "http://head:8091; the store is the spool: retention\n"
			 "keeps what the head has not acknowledged; only\n"
			 "--max-db-size may drop it, counted as a gap.\n"
			 "Repeatable (up to 8; a name with several addresses\n"
			 "is a head per address) for heads on one database:\n"
			 "the stream moves to the next head when one refuses\n"
			 "the connection, times out or answers 5xx (not 401\n"
			 "or 403), from the seq that head says it holds",
			 set_head),
	    OPT_DURATION(0, "stop-timeout", &o.stop_timeout_ms, 0, 0, "e.g. 2s, 25s",
			 "at SIGTERM, wait up to DUR for the head (and remote-\n"
			 "write targets) to hold the last tick (default 2s);\n"
			 "what they do not hold yet goes at the next start"),
	    OPT_STRING(0, "token-file", &o.token_file, "F", "the head's bearer token"),
	    OPT_STRING(0, "read-token-file", &o.read_token_file, "F",
		       "its API and dashboard need this bearer token (on\n"
		       "loopback they are open; /metrics is always open)"),
	    OPT_FLAG(0, "insecure", &o.insecure,
		     "serve its API and dashboard (every user's command\n"
		     "lines) to anyone on a non-loopback --listen"),
	    OPT_STRING(0, "ca-file", &o.ca_file, "F", "trust this PEM CA for an https:// head"),
	    OPT_CALLBACK(0, "compat", &o.compat, "LIST",
			 "also serve other exporters' series on /metrics, so\n"
			 "their readers work unchanged: jobstats (Princeton's\n"
			 "cgroup_* and nvidia_gpu_* series), dcgm\n"
			 "(dcgm-exporter's DCGM_FI_*); e.g. jobstats,dcgm",
			 set_compat),
	    OPT_PATH(0, "cuda-socket", &o.cuda_socket, "PATH", "a path",
		     "listen there (mode 0666: jobs of any user connect)\n"
		     "for the CUDA hook of processes started with\n"
		     "CUDA_INJECTION64_PATH=libjobscope-cuda.so and\n"
		     "JOBSCOPE_CUDA_SOCKET=PATH; a process is known by\n"
		     "the kernel's word (SO_PEERCRED pid), its job as\n"
		     "the agent attributes that pid.  They record CUDA\n"
		     "tables while a head's session asks (session start\n"
		     "--cuda) or always with --cuda-always (docs/cuda.md)"),
	    OPT_FLAG(0, "cuda-always", &o.cuda_always, "record CUDA tables without a session"),
	    OPT_PATH(0, "k8s-bundle-dir", &o.k8s_bundle_dir, "DIR", "a directory",
		     "also look for a pod container's OCI bundle in\n"
		     "DIR/<container id>/config.json (after the shim's\n"
		     "or conmon's working directory and the runtimes'\n"
		     "state directories; docs/kubernetes.md)"),
	    OPT_PATH(0, "cri-socket", &o.cri_socket, "PATH", "a path",
		     "the container runtime's CRI socket: pods' owner\n"
		     "hints (a Job's, a Kubeflow job's, an app's label)\n"
		     "from ListPodSandbox (docs/kubernetes.md)"),
	    OPT_PATH(0, "statsd-socket", &o.statsd_socket, "PATH", "a path",
		     "a Unix datagram socket (mode 0666) for StatsD and\n"
		     "DogStatsD lines (app metrics; events are markers):\n"
		     "each line is the job of its sender's pid, as the\n"
		     "kernel says it (SO_PASSCRED); jobs find it through\n"
		     "$JOBSCOPE_STATSD_SOCKET (docs/app-metrics.md)"),
	    OPT_CALLBACK(0, "statsd-udp", &o, "ADDR:PORT",
			 "also StatsD over UDP (e.g. 127.0.0.1:8125): a\n"
			 "line is the job its `job` tag names (#job:ID or\n"
			 "#job:SCHEDULER:ID); a line without one is counted\n"
			 "and dropped",
			 set_statsd_udp),
	    OPT_PATH(0, "pod-resources-socket", &o.pod_resources_socket, "PATH", "a path",
		     "the kubelet's pod-resources socket, asked every 5s\n"
		     "for the GPUs each pod was given: its job's GPU\n"
		     "reservation (default\n" KUBELET_PODRES_SOCKET ",\n"
		     "when that directory exists; 'none': never)"),
	    CLI_RW_OPTIONS(&o.rw),
	    CLI_K8S_OPTIONS(&o.k8s),
	    /* hidden: tests, benchmarks */
	    {.type = OPTION_STRING,
	     .long_name = "test-pod-name",
	     .value = &o.test_pod_name,
	     .argh = "UID=NS/POD",
	     .flags = OPT_HIDDEN},
	    OPT_HIDDEN_DURATION("exit-after", &o.exit_after_ms),
	    /* a day of ticks in minutes (bench/agent_day.py); --exit-after in simulated time */
	    {.type = OPTION_FLAG,
	     .long_name = "sim-clock",
	     .value = &o.sim_clock,
	     .flags = OPT_HIDDEN},
	    OPT_HIDDEN_CALLBACK("sysroot", "DIR", cli_set_sysroot),
	    OPT_END(),
	};
	const char *root = getenv("JOBSCOPE_SYSROOT");
	enum agent_failure failure;
	int first, ret;

	if (root)
		sysroot_set(root);
	ret = opt_parse(&cmd, opts, argc, argv, &first);
	if (ret)
		return ret == OPT_DONE ? 0 : ret;
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
};
