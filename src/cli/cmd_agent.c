/*
 * cmd_agent.c - `jobscope agent`: every process, cgroup and GPU of the
 * node, attributed to jobs, stored with retention, served over HTTP.
 *
 * One sampling thread: a poll() loop over a signalfd (SIGTERM/SIGINT stop
 * after flushing the tick in flight, SIGHUP reopens the log file) and a
 * timerfd.  Each tick: host, every process (ptree in "all" mode), job
 * attribution and sums (attrib/jobs), GPUs, one store transaction, rollups
 * and, a little at a time, retention; then the HTTP view is re-rendered.
 * libmicrohttpd answers on its own thread from that view.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "cli.h"
#include "common/log.h"
#include "common/sysroot.h"
#include "common/token.h"
#include "analysis/jobreport.h"
#include "report/report.h"
#include "analysis/summary.h"

#define AGENT_MIN_INTERVAL_MS	100
#define AGENT_MAX_GPU_PROCS	4096
#define AGENT_MAX_GPU_EVENTS	64
#define AGENT_RETENTION_BUDGET	2000	/* rows per table per step */
#define AGENT_RETENTION_EVERY_MS 60000
#define AGENT_DEFAULT_DB	"/var/lib/jobscope/agent.db"
#define AGENT_DEFAULT_LISTEN	"127.0.0.1:9464"

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
    "      --head URL           stream everything to a head (jobscope head), e.g.\n"
    "                           http://head:8091; the store is the spool: nothing is\n"
    "                           lost while the head is away\n"
    "      --token-file F       the head's bearer token\n"
    "      --ca-file F          trust this PEM CA for an https:// head\n"
    "  -h, --help               show this help\n"
    "\n"
    "Endpoints: GET /metrics (Prometheus text 0.0.4), /api/v1/node, /api/v1/gpus,\n"
    "/api/v1/jobs[?state=all], /api/v1/jobs/{key} (key: scheduler:id:start_ms,\n"
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
	case 'k': case 'K': v *= 1024.0; end++; break;
	case 'm': case 'M': v *= 1048576.0; end++; break;
	case 'g': case 'G': v *= 1073741824.0; end++; break;
	case 't': case 'T': v *= 1099511627776.0; end++; break;
	default: break;
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
    {"head", required_argument, NULL, 'U'},
    {"token-file", required_argument, NULL, 'T'},
    {"ca-file", required_argument, NULL, 'A'},
    {"exit-after", required_argument, NULL, 'E'}, /* hidden: tests, benchmarks */
    {"sysroot", required_argument, NULL, 'S'},	  /* hidden: tests */
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int apply_opt(struct agent_opts *o, int c, const char *arg, char **argv)
{
	int64_t ms;

	switch (c) {
	case 'i':
		if (parse_duration_ms(arg, &o->interval_ms))
			return cli_usage_error("agent", "bad --interval '%s' (e.g. 1s, 500ms)", arg);
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
			return cli_usage_error("agent", "bad --listen '%s' (ADDR:PORT, e.g. %s)", arg,
					       AGENT_DEFAULT_LISTEN);
		return 0;
	}
	case 'L':
		o->log_file = arg;
		return 0;
	case 'R':
	case 'M':
	case 'H':
		if (parse_duration_ms(arg, &ms))
			return cli_usage_error("agent", "bad retention '%s' (e.g. 7d, 90d, 2y)", arg);
		if (c == 'R')
			o->retention.raw_ms = ms;
		else if (c == 'M')
			o->retention.m1_ms = ms;
		else
			o->retention.h1_ms = ms;
		return 0;
	case 'X':
		if (parse_size(arg, &o->retention.max_bytes))
			return cli_usage_error("agent", "bad --max-db-size '%s' (e.g. 500M, 20G)",
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
		return cli_option_error("agent", c, argv);
	}
}

/*
 * --config FILE: "name = value" lines ('#' comments), names as the long
 * options.  Applied before the command line's, which win.
 */
static int read_config(struct agent_opts *o, const char *path)
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
		for (e = v + strlen(v); e > v && (e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t' ||
						  e[-1] == '\r');
		     e--)
			;
		*e = '\0';
		for (opt = agent_longopts; opt->name; opt++)
			if (strcmp(opt->name, k) == 0 && opt->has_arg == required_argument &&
			    opt->val != 'c')
				break;
		if (!opt->name) {
			fclose(f);
			return cli_usage_error("agent", "%s:%d: unknown setting '%s'", path, lineno,
					       k);
		}
		if (used + strlen(v) + 1 > sizeof(o->config_buf)) {
			fclose(f);
			return cli_usage_error("agent", "%s: too long", path);
		}
		memcpy(o->config_buf + used, v, strlen(v) + 1);
		ret = apply_opt(o, opt->val, o->config_buf + used, NULL);
		used += strlen(v) + 1;
		if (ret) {
			fclose(f);
			return ret;
		}
	}
	fclose(f);
	return 0;
}

static int parse_opts(int argc, char **argv, struct agent_opts *o)
{
	int c, ret;

	memset(o, 0, sizeof(*o));
	o->interval_ms = 1000;
	o->db = AGENT_DEFAULT_DB;
	o->listen = AGENT_DEFAULT_LISTEN;
	o->retention.raw_ms = 7LL * 86400000;
	o->retention.m1_ms = 90LL * 86400000;
	o->retention.h1_ms = 730LL * 86400000;
	opterr = 0;
	/* first pass: --config and --help only */
	optind = 1;
	while ((c = getopt_long(argc, argv, ":i:h", agent_longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(agent_usage, stdout);
			return -1;
		}
		if (c == 'c') {
			ret = read_config(o, optarg);
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

static uint64_t self_rss_bytes(void)
{
	struct strbuf sb;
	unsigned long long pages = 0, rss = 0;

	strbuf_init(&sb, 4096);
	if (sysroot_read("/proc/self/statm", &sb) == 0 &&
	    sscanf(strbuf_str(&sb), "%llu %llu", &pages, &rss) != 2)
		rss = 0;
	strbuf_release(&sb);
	return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* ---- rollups ---- */

static const int64_t rollup_tiers[2] = {60000, 3600000};

static void rollup_flush(struct agent *a, struct rollup_acc *acc, int64_t tier_ms,
			 const char *entity, int64_t entity_id, const char *metric)
{
	struct rollup_record r = {
	    .tier_ms = tier_ms,
	    .node_id = a->node_id,
	    .entity = entity,
	    .entity_id = entity_id,
	    .metric = metric,
	    .ts_ms = acc->bucket_ms,
	    .n = acc->n,
	    .min = acc->min,
	    .avg = acc->sum / (double)acc->n,
	    .max = acc->max,
	};

	if (acc->n > 0)
		store_put_rollup(a->st, &r); /* inside the tick: a failure fails the tick */
	acc->n = 0;
	acc->bucket_ms = 0;
}

/* Adds v at ts to both tiers, writing out buckets that closed. */
static void rollup_add(struct agent *a, struct rollup_acc acc[2], const char *entity,
		       int64_t entity_id, const char *metric, int64_t ts, double v)
{
	if (isnan(v))
		return;
	for (int t = 0; t < 2; t++) {
		struct rollup_acc *r = &acc[t];
		int64_t bucket = ts - ts % rollup_tiers[t];

		if (r->n > 0 && r->bucket_ms != bucket)
			rollup_flush(a, r, rollup_tiers[t], entity, entity_id, metric);
		if (r->n == 0) {
			r->bucket_ms = bucket;
			r->min = r->max = v;
			r->sum = 0;
		}
		r->n++;
		r->sum += v;
		if (v < r->min)
			r->min = v;
		if (v > r->max)
			r->max = v;
	}
}

static const char *const host_metric_names[AHM__COUNT] = {
    "cpu_busy_pct", "mem_used_bytes", "load1", "disk_read_bps", "disk_write_bps",
    "net_rx_bps",   "net_tx_bps",
};
static const char *const job_metric_names[AJM__COUNT] = {"cpu_cores", "rss_bytes", "read_bps",
							 "write_bps"};
static const char *const gpu_metric_names[AGM__COUNT] = {"util_pct", "mem_used_bytes", "power_w"};

static double rate(uint64_t cur, uint64_t prev, int64_t dt_ms)
{
	if (dt_ms <= 0 || cur < prev)
		return NAN;
	return (double)(cur - prev) * 1000.0 / (double)dt_ms;
}

static double host_value(const struct agent *a, enum agent_host_metric m)
{
	const struct host_sample *h = a->host, *p = a->host_prev;
	int64_t dt = a->host_ts - a->host_prev_ts;

	switch (m) {
	case AHM_CPU_BUSY_PCT: {
		const struct cpu_times *c = &h->cpu.total, *q = &p->cpu.total;
		double busy, all;

		if (!a->has_host_prev || !(h->valid & HOST_HAS_CPU))
			return NAN;
		busy = (double)(c->user_ms + c->nice_ms + c->system_ms + c->irq_ms + c->softirq_ms +
				c->steal_ms) -
		       (double)(q->user_ms + q->nice_ms + q->system_ms + q->irq_ms + q->softirq_ms +
				q->steal_ms);
		all = busy + (double)(c->idle_ms + c->iowait_ms) - (double)(q->idle_ms + q->iowait_ms);
		return all > 0 ? 100.0 * busy / all : NAN;
	}
	case AHM_MEM_USED_BYTES:
		if (!(h->mem.valid & MEMINFO_AVAILABLE) || !(h->mem.valid & MEMINFO_TOTAL))
			return NAN;
		return (double)(h->mem.total_bytes - h->mem.available_bytes);
	case AHM_LOAD1:
		return h->valid & HOST_HAS_LOAD ? h->load.load1_milli / 1000.0 : NAN;
	case AHM_DISK_READ_BPS:
		return a->has_host_prev && (h->valid & HOST_HAS_DISK)
			   ? rate(h->disk_read_bytes, p->disk_read_bytes, dt)
			   : NAN;
	case AHM_DISK_WRITE_BPS:
		return a->has_host_prev && (h->valid & HOST_HAS_DISK)
			   ? rate(h->disk_write_bytes, p->disk_write_bytes, dt)
			   : NAN;
	case AHM_NET_RX_BPS:
		return a->has_host_prev && (h->valid & HOST_HAS_NET)
			   ? rate(h->net_rx_bytes, p->net_rx_bytes, dt)
			   : NAN;
	case AHM_NET_TX_BPS:
		return a->has_host_prev && (h->valid & HOST_HAS_NET)
			   ? rate(h->net_tx_bytes, p->net_tx_bytes, dt)
			   : NAN;
	default:
		return NAN;
	}
}

static struct agent_job_rollup *job_rollup(struct agent *a, int64_t row)
{
	for (size_t i = 0; i < a->njroll; i++)
		if (a->jroll[i].job_row == row)
			return &a->jroll[i];
	if (a->njroll == a->jroll_alloc) {
		size_t n = a->jroll_alloc ? a->jroll_alloc * 2 : 16;
		struct agent_job_rollup *r = realloc(a->jroll, n * sizeof(*r));

		if (!r)
			return NULL;
		a->jroll = r;
		a->jroll_alloc = n;
	}
	memset(&a->jroll[a->njroll], 0, sizeof(a->jroll[0]));
	a->jroll[a->njroll].job_row = row;
	return &a->jroll[a->njroll++];
}

static void rollups_tick(struct agent *a, int64_t ts)
{
	if (a->host_ok)
		for (int m = 0; m < AHM__COUNT; m++)
			rollup_add(a, a->host_acc[m], "host", 0, host_metric_names[m], ts,
				   host_value(a, m));
	for (int i = 0; i < a->gpus.ndevices; i++) {
		const struct gpu_sample *g = &a->gsample[i];
		double v[AGM__COUNT] = {
		    g->valid & GPU_UTIL ? (double)g->util_pct : NAN,
		    g->valid & GPU_MEM_USED ? (double)g->mem_used_bytes : NAN,
		    g->valid & GPU_POWER ? g->power_mw / 1000.0 : NAN,
		};

		if (!a->gsample_ok[i] || !a->devs[i].id)
			continue;
		for (int m = 0; m < AGM__COUNT; m++)
			rollup_add(a, a->gpu_acc[i][m], "gpu", a->devs[i].id, gpu_metric_names[m], ts,
				   v[m]);
	}
	for (size_t k = 0; k < a->njroll; k++)
		a->jroll[k].live = false;
	for (size_t k = 0; k < a->jobs.njobs; k++) {
		const struct job_entry *j = &a->jobs.job[k];
		struct agent_job_rollup *r;
		double v[AJM__COUNT];

		if (!j->rec.id)
			continue;
		r = job_rollup(a, j->rec.id);
		if (!r)
			continue;
		r->live = j->live;
		v[AJM_CPU_CORES] = j->has_rate ? j->cpu_cores : NAN;
		v[AJM_RSS_BYTES] = (double)j->js.rss_bytes;
		v[AJM_READ_BPS] = r->prev_ts && (j->js.valid & JS_IO)
				      ? rate(j->js.read_bytes, r->prev_read, ts - r->prev_ts)
				      : NAN;
		v[AJM_WRITE_BPS] = r->prev_ts && (j->js.valid & JS_IO)
				       ? rate(j->js.write_bytes, r->prev_write, ts - r->prev_ts)
				       : NAN;
		r->prev_read = j->js.read_bytes;
		r->prev_write = j->js.write_bytes;
		r->prev_ts = ts;
		for (int m = 0; m < AJM__COUNT; m++)
			rollup_add(a, r->acc[m], "job", j->rec.id, job_metric_names[m], ts, v[m]);
	}
	/* jobs that ended: their open buckets are written now, and they go */
	for (size_t k = 0; k < a->njroll;) {
		struct agent_job_rollup *r = &a->jroll[k];

		if (r->live) {
			k++;
			continue;
		}
		for (int t = 0; t < 2; t++)
			for (int m = 0; m < AJM__COUNT; m++)
				rollup_flush(a, &r->acc[m][t], rollup_tiers[t], "job", r->job_row,
					     job_metric_names[m]);
		a->jroll[k] = a->jroll[--a->njroll];
	}
}

/* On exit: every open bucket is written (partial buckets merge on restart). */
static void rollups_flush_all(struct agent *a)
{
	for (int t = 0; t < 2; t++) {
		for (int m = 0; m < AHM__COUNT; m++)
			rollup_flush(a, &a->host_acc[m][t], rollup_tiers[t], "host", 0,
				     host_metric_names[m]);
		for (int i = 0; i < a->gpus.ndevices; i++)
			for (int m = 0; m < AGM__COUNT; m++)
				rollup_flush(a, &a->gpu_acc[i][m][t], rollup_tiers[t], "gpu",
					     a->devs[i].id, gpu_metric_names[m]);
		for (size_t k = 0; k < a->njroll; k++)
			for (int m = 0; m < AJM__COUNT; m++)
				rollup_flush(a, &a->jroll[k].acc[m][t], rollup_tiers[t], "job",
					     a->jroll[k].job_row, job_metric_names[m]);
	}
}

/* ---- GPUs ---- */

/*
 * The device's energy over the last interval: its energy counter when it
 * has one, else power x time.  NAN when neither is known.
 */
static double gpu_energy_delta_mj(struct agent *a, int i, int64_t ts)
{
	const struct gpu_sample *g = &a->gsample[i], *p = &a->gprev[i];

	if (!a->has_gprev[i])
		return NAN;
	if ((g->valid & GPU_ENERGY) && (p->valid & GPU_ENERGY) && g->energy_mj >= p->energy_mj)
		return (double)(g->energy_mj - p->energy_mj);
	if (g->valid & GPU_POWER)
		return g->power_mw * (double)(ts - a->gprev_ts[i]) / 1000.0;
	return NAN;
}

/*
 * Every GPU, its processes attributed to jobs, and each job's share of the
 * device: memory, SM utilization, and the energy of the interval split by
 * SM share (by memory share when the driver gives no utilization).
 */
static void sample_gpus(struct agent *a, int64_t ts)
{
	struct gpu_set *set = &a->gpus;

	a->ngprocs = 0;
	a->ngevents = 0;
	for (size_t k = 0; k < a->jobs.njobs; k++)
		for (int i = 0; i < set->ndevices && i < 64; i++) {
			struct job_gpu_use *u = &a->jobs.job[k].gpu[i];

			u->now = false;
			u->mem_bytes = 0;
			u->sm_util_pct = 0;
			u->has_mem = u->has_util = false;
		}
	for (int i = 0; i < set->ndevices && i < 64; i++) {
		struct gpu_dev *d = &set->dev[i];
		size_t room = AGENT_MAX_GPU_PROCS - a->ngprocs, n = 0;
		double all_sm = 0, all_mem = 0, e;

		a->gsample_ok[i] = gpu_set_sample(set, i, &a->gsample[i]) == 0;
		if (!a->gsample_ok[i])
			continue;
		if (d->backend->processes(d->ctx, d->info.index, a->gscratch, room, &n))
			n = 0;
		for (size_t k = 0; k < n; k++) {
			const struct gpu_proc *g = &a->gscratch[k];
			struct agent_gpu_proc *gp = &a->gprocs[a->ngprocs++];
			struct job_entry *j;

			gp->dev = i;
			gp->g = *g;
			gp->proc = ptree_find(&a->pt, (pid_t)g->pid);
			all_sm += g->valid & GPU_PROC_UTIL ? g->sm_util_pct : 0;
			all_mem += g->valid & GPU_PROC_MEM ? (double)g->mem_bytes : 0;
			j = gp->proc ? jobs_of(&a->jobs, gp->proc) : NULL;
			if (!j)
				continue;
			j->gpu[i].used = j->gpu[i].now = true;
			if (g->valid & GPU_PROC_MEM) {
				j->gpu[i].mem_bytes += g->mem_bytes;
				j->gpu[i].has_mem = true;
			}
			if (g->valid & GPU_PROC_UTIL) {
				j->gpu[i].sm_util_pct += g->sm_util_pct;
				j->gpu[i].has_util = true;
			}
		}
		e = gpu_energy_delta_mj(a, i, ts);
		if (!isnan(e))
			for (size_t k = 0; k < a->jobs.njobs; k++) {
				struct job_gpu_use *u = &a->jobs.job[k].gpu[i];

				if (!u->now)
					continue;
				if (all_sm > 0)
					u->energy_mj += e * u->sm_util_pct / all_sm;
				else if (all_mem > 0)
					u->energy_mj += e * (double)u->mem_bytes / all_mem;
			}
		a->gprev[i] = a->gsample[i];
		a->has_gprev[i] = true;
		a->gprev_ts[i] = ts;
	}
	a->ngevents = gpu_set_events(set, ts, a->gevents, AGENT_MAX_GPU_EVENTS);
}

/* ---- the store ---- */

/*
 * A job's row: new, or the one an earlier agent wrote for the same key (a
 * restart while the job ran), reopened.
 */
static int store_job(struct agent *a, struct job_entry *j)
{
	int64_t row, start_ms;
	int ret;

	ret = store_find_job(a->st, j->rec.node_id, j->rec.scheduler, j->rec.job_id,
			     j->rec.start_ms, &row, &start_ms);
	if (ret == 0) {
		j->rec.id = row;
		j->rec.start_ms = start_ms;
		jobs_format_key(j->key, sizeof(j->key), j->rec.scheduler, j->rec.job_id, start_ms);
		j->rec.end_ms = 0;
		return store_job_update(a->st, &j->rec);
	}
	if (ret != -ENOENT)
		return ret;
	return store_job_begin(a->st, &j->rec);
}

/*
 * A job ended: its summary and analysis (the same figures and verdicts as
 * `jobscope report`, rebuilt from the store) are kept for ever in
 * job_summaries.
 */
static void store_summary(struct agent *a, struct job_entry *j)
{
	struct job_report *r = calloc(1, sizeof(*r));
	struct job_summary_record rec;
	struct strbuf json;
	int ret;

	j->stored_end = true;
	if (!r || !j->rec.id) {
		free(r);
		return;
	}
	strbuf_init(&json, 0);
	ret = job_report_load(r, a->st, &j->rec);
	if (ret == 0) {
		summary_to_record(&r->sum, &rec);
		if (report_json(&r->sum, &r->an, &json) == 0)
			rec.report_json = strbuf_str(&json);
		ret = store_put_job_summary(a->st, &rec);
	}
	if (ret)
		log_warn(ret, "no summary stored for job %s", j->key);
	job_report_release(r);
	free(r);
	strbuf_release(&json);
}

static int store_tick_rows(struct agent *a, int64_t ts)
{
	struct store *st = a->st;
	int ret = 0;

	if (a->host_ok)
		ret = store_put_host(st, a->node_id, ts, a->host);
	for (size_t k = 0; k < a->jobs.njobs && !ret; k++) {
		struct job_entry *j = &a->jobs.job[k];

		if (!j->rec.id && (j->live || j->ended_now))
			ret = store_job(a, j);
	}
	for (size_t i = 0; i < a->pt.nprocs && !ret; i++) {
		struct ptree_proc *p = &a->pt.procs[i];
		struct job_entry *j;

		if (!p->emit)
			continue;
		if (p->row == 0) {
			j = jobs_of(&a->jobs, p);
			ret = store_put_proc_info(st, a->node_id, j ? j->rec.id : 0, &p->info,
						  &p->row);
			p->row_tick = a->ticks;
		} else if (p->info_dirty || !p->alive) {
			ret = store_update_proc_info(st, p->row, &p->info);
		}
		if (!ret)
			ret = store_put_proc_sample(st, p->row, ts, &p->cur);
	}
	for (size_t k = 0; k < a->jobs.njobs && !ret; k++) {
		struct job_entry *j = &a->jobs.job[k];

		if (j->emit && j->rec.id)
			ret = store_put_job_sample(st, j->rec.id, ts, &j->js);
		if (!ret && (j->ended_now || j->rec_dirty) && j->rec.id) {
			ret = store_job_update(st, &j->rec);
			j->rec_dirty = false; /* a failed tick is retried whole: see below */
		}
	}
	for (int i = 0; i < a->gpus.ndevices && !ret; i++) {
		if (!a->gsample_ok[i] || !a->devs[i].id)
			continue;
		ret = store_put_gpu_sample(st, a->devs[i].id, ts, &a->gsample[i]);
		for (size_t k = 0; k < a->ngprocs && !ret; k++) {
			const struct agent_gpu_proc *gp = &a->gprocs[k];
			const struct job_entry *j;

			if (gp->dev != i)
				continue;
			j = gp->proc ? jobs_of(&a->jobs, gp->proc) : NULL;
			ret = store_put_gpu_proc(st, a->devs[i].id, gp->proc ? gp->proc->row : 0,
						 j ? j->rec.id : 0, ts, &gp->g);
		}
	}
	for (size_t k = 0; k < a->ngevents && !ret; k++)
		ret = store_put_event(st, a->node_id, 0, &a->gevents[k]);
	if (!ret)
		rollups_tick(a, ts);
	/*
	 * Jobs that ended: their summaries go in the same transaction as their
	 * last rows, so whoever reads the store (the head's sender) sees both
	 * or neither.
	 */
	for (size_t k = 0; k < a->jobs.njobs && !ret; k++)
		if (a->jobs.job[k].ended_now)
			store_summary(a, &a->jobs.job[k]);
	return ret;
}

static void store_tick(struct agent *a, int64_t ts)
{
	int ret = store_tick_begin(a->st);

	if (!ret)
		ret = store_tick_rows(a, ts);
	if (!ret)
		ret = store_tick_commit(a->st);
	if (!ret) {
		for (size_t i = 0; i < a->pt.nprocs; i++)
			if (a->pt.procs[i].emit)
				a->pt.procs[i].info_dirty = false;
		return;
	}
	store_tick_abort(a->st);
	for (size_t i = 0; i < a->pt.nprocs; i++)
		if (a->pt.procs[i].row_tick == a->ticks)
			a->pt.procs[i].row = 0;
	for (size_t k = 0; k < a->jobs.njobs; k++) {
		if (a->jobs.job[k].emit)
			a->jobs.job[k].has_row = false; /* the next tick writes one */
		a->jobs.job[k].rec_dirty = true;
	}
	if (a->lost_ticks == 0 || ret != a->lost_err)
		log_warn(ret, "cannot store the samples of a tick in '%s' (sampling goes on)",
			 store_path(a->st));
	a->lost_err = ret;
	a->lost_ticks++;
}


/* ---- the tick ---- */

static void publish_view(struct agent *a)
{
	struct agent_view *v = calloc(1, sizeof(*v)), *old;

	if (!v)
		return;
	if (agent_render(a, v)) {
		agent_view_free(v);
		return;
	}
	pthread_mutex_lock(&a->view_lock);
	old = a->view;
	a->view = v;
	pthread_mutex_unlock(&a->view_lock);
	agent_view_free(old);
}

static void tick(struct agent *a)
{
	struct timespec t0, t1;
	int64_t ts;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ts = wallclock_now_ms(&a->wc);
	a->ticks++;
	if (a->host_ok) {
		struct host_sample *tmp = a->host_prev;

		a->host_prev = a->host;
		a->host = tmp;
		a->host_prev_ts = a->host_ts;
		a->has_host_prev = true;
	}
	a->host_ok = host_sample_read(&a->hs, a->host) == 0;
	a->host_ts = ts;
	ret = ptree_scan(&a->pt, ts);
	if (ret)
		log_warn(ret, "cannot read the processes");
	ret = jobs_update(&a->jobs, &a->pt, ts);
	if (ret)
		log_warn(ret, "cannot attribute processes to jobs");
	if (a->gpus.ndevices || a->gpus.nopened)
		sample_gpus(a, ts);
	store_tick(a, ts);
	for (size_t k = 0; k < a->jobs.njobs; k++)
		if (!a->jobs.job[k].live)
			a->jobs.job[k].stored_end = true;

	/* over the size cap: a step now, whatever the schedule says (3 pragmas a tick) */
	if (a->opt->retention.max_bytes && store_used_bytes(a->st, &a->store_bytes) == 0 &&
	    a->store_bytes > a->opt->retention.max_bytes)
		a->retention_next_ms = ts;
	if (ts >= a->retention_next_ms) {
		int64_t deleted = 0;

		if (store_retention_step(a->st, ts, &a->opt->retention, AGENT_RETENTION_BUDGET,
					 &deleted) == 0)
			a->retention_deleted += deleted;
		/*
		 * A backlog drains a step per tick; otherwise once a minute, or
		 * more often for a raw age limit that short (tests).
		 */
		int64_t every = AGENT_RETENTION_EVERY_MS;

		if (a->opt->retention.raw_ms > 0 && a->opt->retention.raw_ms / 4 < every)
			every = a->opt->retention.raw_ms / 4;
		if (every < a->opt->interval_ms)
			every = a->opt->interval_ms;
		a->retention_next_ms = deleted > 0 ? ts : ts + every;
		store_used_bytes(a->st, &a->store_bytes);
	}
	a->self_cpu_ms = proc_self_cpu_ms();
	a->self_rss_bytes = self_rss_bytes();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	a->last_tick_s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	sender_kick(a->sender);
	if (a->http)
		publish_view(a);
}

/* ---- setup and the loop ---- */

static void setup_gpus(struct agent *a)
{
	struct gpu_set *set = &a->gpus;

	gpu_set_init(set);
	gpu_set_open(set);
	for (int i = 0; i < set->ndevices; i++) {
		struct device_record *d = &a->devs[i];

		memset(d, 0, sizeof(*d));
		d->info = set->dev[i].info;
		snprintf(d->vendor, sizeof(d->vendor), "%s", set->dev[i].backend->vendor);
		for (int b = 0; b < set->nopened; b++)
			if (set->opened[b].backend == set->dev[i].backend)
				snprintf(d->driver_version, sizeof(d->driver_version), "%s",
					 set->opened[b].driver);
		if (store_put_device(a->st, a->node_id, d))
			d->id = 0;
	}
}

static int setup(struct agent *a)
{
	const struct agent_opts *o = a->opt;
	struct rlimit rl;
	int32_t cores;
	int ret;

	ret = log_open_file(o->log_file);
	if (ret)
		return ret;
	ret = store_open(o->db, STORE_CREATE, &a->st);
	if (ret)
		return ret;
	a->host = calloc(1, sizeof(*a->host));
	a->host_prev = calloc(1, sizeof(*a->host_prev));
	a->gprocs = calloc(AGENT_MAX_GPU_PROCS, sizeof(*a->gprocs));
	a->gscratch = calloc(AGENT_MAX_GPU_PROCS, sizeof(*a->gscratch));
	a->gevents = calloc(AGENT_MAX_GPU_EVENTS, sizeof(*a->gevents));
	if (!a->host || !a->host_prev || !a->gprocs || !a->gscratch || !a->gevents)
		return log_err(-ENOMEM, "out of memory");
	host_sampler_init(&a->hs, sysconf(_SC_CLK_TCK));
	ret = host_sample_read(&a->hs, a->host);
	if (ret)
		log_warn(ret, "cannot read %s/proc/stat: host figures will be missing",
			 sysroot_get());
	if (gethostname(a->hostname, sizeof(a->hostname)) < 0)
		snprintf(a->hostname, sizeof(a->hostname), "localhost");
	a->hostname[sizeof(a->hostname) - 1] = '\0';
	wallclock_init(&a->wc);
	a->started_ms = wallclock_now_ms(&a->wc);
	cores = ret ? 0 : host_online_cpus(a->host);
	ret = store_node(a->st, a->hostname, cores, ret ? 0 : a->host->mem.total_bytes,
			 host_boot_ms(a->host), &a->node_id);
	if (ret)
		return ret;
	setup_gpus(a);
	/* one descriptor per process is kept open: raise the soft limit */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	ptree_init_all(&a->pt, sysconf(_SC_CLK_TCK), host_boot_ms(a->host));
	jobs_init(&a->jobs, a->hostname, a->node_id, cores, a->host->mem.total_bytes,
		  o->interval_ms);
	pthread_mutex_init(&a->view_lock, NULL);
	return 0;
}

/* The agent's id for a head: kept in its store, so a restart is the same agent. */
static int agent_id(struct agent *a)
{
	unsigned char raw[12];
	FILE *f;

	if (store_meta_get(a->st, "agent_id", a->agent_id, sizeof(a->agent_id)) == 0 &&
	    a->agent_id[0])
		return 0;
	f = fopen("/dev/urandom", "rb");
	if (!f || fread(raw, 1, sizeof(raw), f) != sizeof(raw)) {
		if (f)
			fclose(f);
		return log_err(-EIO, "cannot make an agent id");
	}
	fclose(f);
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(a->agent_id + 2 * i, 3, "%02x", raw[i]);
	return store_meta_set(a->st, "agent_id", a->agent_id);
}

static int start_sender(struct agent *a)
{
	struct sender_opts so;
	char token[256];
	int ret;

	if (!a->opt->head)
		return 0;
	ret = agent_id(a);
	if (ret)
		return ret;
	memset(&so, 0, sizeof(so));
	so.url = a->opt->head;
	so.ca_file = a->opt->ca_file;
	so.db_path = store_path(a->st);
	if (a->opt->token_file) {
		ret = token_read_file(a->opt->token_file, token, sizeof(token));
		if (ret)
			return ret;
		so.token = token;
	}
	snprintf(so.who.agent_id, sizeof(so.who.agent_id), "%s", a->agent_id);
	snprintf(so.who.hostname, sizeof(so.who.hostname), "%s", a->hostname);
	so.who.cores = a->jobs.host_cores;
	so.who.mem_total_bytes = a->jobs.host_mem_bytes;
	so.who.boot_ms = host_boot_ms(a->host);
	so.who.interval_ms = a->opt->interval_ms;
	ret = sender_start(&so, &a->sender);
	if (!ret)
		log_info("agent: streaming to %s as agent %s", a->opt->head, a->agent_id);
	return ret;
}

/* After the first tick, so that the endpoints never answer "no data yet". */
static int start_http(struct agent *a)
{
	const char *listen = a->opt->listen, *colon;
	int ret;

	if (!listen)
		return 0;
	ret = http_start(listen, agent_http, a, &a->http);
	if (ret)
		return ret;
	publish_view(a);
	/* tests and scripts read the port chosen for port 0 from this line */
	colon = strrchr(listen, ':');
	log_info("agent: listening on %.*s:%u", (int)(colon - listen), listen,
		 (unsigned)http_port(a->http));
	return 0;
}

/*
 * The interval a head's profiling session asks for (through the ingest
 * answer), else our own; the timer follows when it changes.
 */
static void follow_sessions(struct agent *a, int tickfd, int64_t *cur_ms)
{
	struct sender_stats ss;
	int64_t want = a->opt->interval_ms;

	if (!a->sender)
		return;
	sender_get_stats(a->sender, &ss);
	if (ss.head_interval_ms > 0)
		want = ss.head_interval_ms < AGENT_MIN_INTERVAL_MS ? AGENT_MIN_INTERVAL_MS
								   : ss.head_interval_ms;
	if (want == *cur_ms)
		return;
	if (want != a->opt->interval_ms)
		log_info("agent: sampling every %lldms for a profiling session",
			 (long long)want);
	else
		log_info("agent: back to sampling every %lldms", (long long)want);
	*cur_ms = want;
	time_arm_timer(tickfd, want, want);
}

static int loop(struct agent *a, int sigfd, int tickfd)
{
	int64_t deadline = a->opt->exit_after_ms ? time_now_ms() + a->opt->exit_after_ms : 0;
	int64_t cur_ms = a->opt->interval_ms;

	for (;;) {
		struct pollfd fds[2] = {
		    {.fd = sigfd, .events = POLLIN},
		    {.fd = tickfd, .events = POLLIN},
		};
		struct signalfd_siginfo si;
		uint64_t n;

		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return log_err(-errno, "poll");
		}
		while (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGHUP) {
				if (log_open_file(a->opt->log_file) == 0)
					log_info("agent: log file reopened");
				continue;
			}
			log_info("agent: %s received: storing the last tick and exiting",
				 strsignal((int)si.ssi_signo));
			return 0;
		}
		if ((fds[1].revents & POLLIN) && read(tickfd, &n, sizeof(n)) == sizeof(n)) {
			tick(a);
			follow_sessions(a, tickfd, &cur_ms);
		}
		if (deadline && time_now_ms() >= deadline)
			return 0;
	}
}

static void release(struct agent *a)
{
	sender_stop(a->sender);
	if (a->http)
		http_stop(a->http);
	agent_view_free(a->view);
	if (a->read_st)
		store_close(a->read_st);
	jobs_release(&a->jobs);
	ptree_release(&a->pt);
	gpu_set_close(&a->gpus);
	free(a->gprocs);
	free(a->gscratch);
	free(a->gevents);
	free(a->jroll);
	host_sampler_release(&a->hs);
	free(a->host);
	free(a->host_prev);
	if (a->st)
		store_close(a->st);
}

static int agent_main(const struct agent_opts *o)
{
	struct agent *a = calloc(1, sizeof(*a));
	sigset_t mask, orig;
	int sigfd = -1, tickfd = -1, ret, exit_code = 0;

	if (!a)
		return log_err(EXIT_FAIL, "out of memory");
	a->opt = o;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	/* blocked before the HTTP thread starts, so it inherits the mask */
	sigprocmask(SIG_BLOCK, &mask, &orig);
	signal(SIGPIPE, SIG_IGN);
	ret = setup(a);
	if (ret) {
		exit_code = EXIT_USAGE;
		goto out_release;
	}
	sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	tickfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (sigfd < 0 || tickfd < 0) {
		log_err(-errno, "cannot set up signal and timer descriptors");
		exit_code = EXIT_FAIL;
		goto out_release;
	}
	tick(a);
	if (start_http(a) || start_sender(a)) {
		exit_code = EXIT_USAGE;
		goto out_release;
	}
	time_arm_timer(tickfd, o->interval_ms, o->interval_ms);
	if (loop(a, sigfd, tickfd))
		exit_code = EXIT_FAIL;
	tick(a); /* the last tick: what happened since the previous one */
	if (store_tick_begin(a->st) == 0) {
		rollups_flush_all(a);
		if (store_tick_commit(a->st))
			store_tick_abort(a->st);
	}
	/* a head that is there gets the last tick too (else it gets it next time) */
	if (a->sender && !sender_flush(a->sender, 2000))
		log_info("agent: the head does not hold the last rows yet: they go with the next "
			 "start");
out_release:
	if (sigfd >= 0)
		close(sigfd);
	if (tickfd >= 0)
		close(tickfd);
	release(a);
	free(a);
	/*
	 * The signals stay blocked: a second SIGTERM that came during the
	 * shutdown must not turn this clean exit into a death by signal.
	 */
	(void)orig;
	return exit_code;
}

static int cmd_agent(int argc, char **argv)
{
	struct agent_opts o;
	const char *root = getenv("JOBSCOPE_SYSROOT");
	int ret;

	if (root)
		sysroot_set(root);
	ret = parse_opts(argc, argv, &o);
	if (ret < 0)
		return 0;
	if (ret)
		return ret;
	return agent_main(&o);
}

const struct cli_command cmd_agent_def = {
    "agent",
    cmd_agent,
    "sample every process and GPU of the node, attributed to jobs",
    agent_usage,
};
