/*
 * mkstore.c - js-mkstore: a synthetic store, written through the store API
 * as `jobscope agent` writes one, for the golden tests and the report
 * benchmark.
 *
 * Two scenarios.  "golden": node01 (16 cores, 64 GiB, two A100s), 30
 * minutes at 1 s and five Slurm jobs whose numbers say plainly what they
 * are (golden_jobs[] below).  "bench": node01 with N GPUs, D days at 1 s
 * and J jobs of 4-12 h of mixed behaviour (bench_kinds[]).  Both may add
 * H older days of jobs that have only their jobs and job_summaries rows,
 * spread over many nodes and users, for history queries.
 *
 * The raw period is a loop over ticks: each tick advances every running
 * job (its CPU, memory, I/O and GPU use drawn from its profile), derives
 * the node's counters from the jobs' (host CPU busy = the jobs' CPU plus a
 * little background), and writes host, process, job, GPU and GPU-process
 * rows and the 1-minute and 1-hour rollups.  A job that ended gets its
 * summary in the same transaction, as the agent does: job_report_load,
 * summary_to_record, report_json.  One transaction holds TICKS_PER_TX
 * ticks, for speed.
 *
 * Deterministic: one xorshift64* generator with a fixed seed drives every
 * draw, in a fixed order, from a fixed start time, so the same arguments
 * write the same rows (the file's bytes may differ).
 *
 * Exit status: 0 written; 1 an error (message on stderr; the partial
 * store is left behind); 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "analysis/jobreport.h"
#include "report/report.h"
#include "analysis/summary.h"
#include "store/rollup.h"
#include "store/store.h"
#include "store/reader.h"
#include "store/write.h"

#define GIB		       (1024.0 * 1024.0 * 1024.0)
#define MIB		       (1024.0 * 1024.0)
#define MINUTE_MS	       60000LL
#define HOUR_MS		       3600000LL
#define DAY_MS		       86400000LL
#define DEFAULT_START_MS       1767571200000LL	     /* 2026-01-05T00:00:00Z */
#define DEFAULT_SEED	       0x6a6f6273636f7065ULL /* "jobscope" */
#define TICKS_PER_TX	       1000
#define SIM_MAX_PROCS	       3
#define SIM_MAX_GPUS	       16 /* a job report's series keep 16 devices */
#define GOLDEN_MINUTES	       30
#define BENCH_NODE_MEM_PER_GPU (64.0 * GIB)
#define BACKGROUND_CORES       0.15	   /* the node's own daemons */
#define BASE_MEM_BYTES	       (4.0 * GIB) /* the node's memory in use besides the jobs */
#define PAGE_CACHE_BYTES       (6.0 * GIB)
#define GPU_IDLE_POWER_W       55.0
#define GPU_POWER_PER_PCT_W    3.3
#define GPU_POWER_LIMIT_MW     400000
#define GPU_MEM_TOTAL_BYTES    (80ull << 30)

/* ---- a deterministic generator (xorshift64*) ---- */

struct rng {
	uint64_t s;
};

static void rng_seed(struct rng *r, uint64_t seed)
{
	/* splitmix64 of the seed: any seed, even 0, gives a good state */
	uint64_t z = seed + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	r->s = (z ^ (z >> 31)) | 1;
}

static uint64_t rng_next(struct rng *r)
{
	uint64_t x = r->s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* [0, 1) */
static double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

static double rng_range(struct rng *r, double lo, double hi)
{
	return lo + (hi - lo) * rng_unit(r);
}

/* lo..hi inclusive */
static int rng_int(struct rng *r, int lo, int hi)
{
	return lo + (int)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

/* About N(0, 1): Irwin-Hall, twelve uniforms (no libm, the same everywhere). */
static double rng_normal(struct rng *r)
{
	double s = 0;

	for (int i = 0; i < 12; i++)
		s += rng_unit(r);
	return s - 6.0;
}

/* ---- options ---- */

enum scenario { SCENARIO_GOLDEN, SCENARIO_BENCH };

struct options {
	const char *db;
	enum scenario scenario;
	int days;	  /* raw days (bench) */
	int history_days; /* older days of jobs with summaries only */
	int gpus;	  /* node01's GPUs (bench) */
	int cpus;	  /* node01's CPUs (bench) */
	int jobs;	  /* raw-period jobs (bench) */
	int jobs_per_day; /* history */
	int nodes;	  /* history */
	int64_t interval_ms;
	int64_t start_ms; /* the raw period's start; history lies before it */
	uint64_t seed;
	bool quiet;
	bool length_jobs; /* bench: three more jobs of 1 h, 8 h and the whole period */
};

static const char mkstore_usage[] =
    "usage: js-mkstore --db PATH [--scenario golden|bench] [--days N] [--history-days N]\n"
    "                  [--gpus N] [--cpus N] [--interval-ms N] [--jobs N]\n"
    "                  [--jobs-per-day N] [--nodes N] [--start T] [--seed N] [--quiet]\n"
    "\n"
    "Write a synthetic jobscope store through the store API, as the agent writes one.\n"
    "The same arguments always give the same rows.\n"
    "\n"
    "Options:\n"
    "      --db PATH           the store to create (must not exist)\n"
    "      --scenario NAME     golden (default): node01, 16 cores, 2 GPUs, 30 min at\n"
    "                          1 s, Slurm jobs 1001-1005; bench: node01 with --gpus\n"
    "                          GPUs and --cpus CPUs, --days days, --jobs jobs\n"
    "      --days N            raw days (bench; default 7)\n"
    "      --history-days N    older days of jobs with summaries only (default: bench\n"
    "                          30, golden 0)\n"
    "      --gpus N            node01's GPUs (bench; default 8, at most 16)\n"
    "      --cpus N            node01's CPUs (bench; default 32): cpu_samples rows\n"
    "      --interval-ms N     sampling interval (default 1000)\n"
    "      --jobs N            jobs in the raw period (bench; default 20)\n"
    "      --jobs-per-day N    history jobs per day (default 200)\n"
    "      --nodes N           history jobs spread over node01..nodeN (default 16)\n"
    "      --start T           the raw period's start, RFC 3339 or ms since the epoch\n"
    "                          (default 2026-01-05T00:00:00Z)\n"
    "      --seed N            the generator's seed (default fixed)\n"
    "      --length-jobs       bench: also jobs 9001, 9002 and 9003 (slurm) of 1 h, 8 h\n"
    "                          and the whole raw period, for report time by length\n"
    "      --quiet             no progress on stderr\n"
    "  -h, --help              show this help\n"
    "\n"
    "Exit status: 0 written, 1 an error, 2 bad usage.\n";

enum {
	OPT_DB = 256,
	OPT_SCENARIO,
	OPT_DAYS,
	OPT_HISTORY_DAYS,
	OPT_GPUS,
	OPT_CPUS,
	OPT_INTERVAL,
	OPT_JOBS,
	OPT_JOBS_PER_DAY,
	OPT_NODES,
	OPT_START,
	OPT_SEED,
	OPT_QUIET,
	OPT_LENGTH_JOBS,
};

static const struct option mkstore_longopts[] = {
    {"db", required_argument, NULL, OPT_DB},
    {"scenario", required_argument, NULL, OPT_SCENARIO},
    {"days", required_argument, NULL, OPT_DAYS},
    {"history-days", required_argument, NULL, OPT_HISTORY_DAYS},
    {"gpus", required_argument, NULL, OPT_GPUS},
    {"cpus", required_argument, NULL, OPT_CPUS},
    {"interval-ms", required_argument, NULL, OPT_INTERVAL},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"jobs-per-day", required_argument, NULL, OPT_JOBS_PER_DAY},
    {"nodes", required_argument, NULL, OPT_NODES},
    {"start", required_argument, NULL, OPT_START},
    {"seed", required_argument, NULL, OPT_SEED},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"length-jobs", no_argument, NULL, OPT_LENGTH_JOBS},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("js-mkstore: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'js-mkstore --help'.\n", stderr);
	return 2;
}

/* A whole number in [lo, hi], or a usage error naming the option. */
static int parse_int_opt(const char *name, const char *s, long long lo, long long hi,
			 long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "js-mkstore: bad --%s '%s': a whole number from %lld to %lld\n",
			name, s, lo, hi);
		fputs("Try 'js-mkstore --help'.\n", stderr);
		return 2;
	}
	*out = v;
	return 0;
}

/* 0, -1 for --help, or 2 for bad usage (message printed). */
static int parse_options(int argc, char **argv, struct options *o)
{
	bool given_bench_only = false;
	const char *bench_only = NULL;
	bool history_given = false;
	long long v = 0;
	int c, ret;

	memset(o, 0, sizeof(*o));
	o->scenario = SCENARIO_GOLDEN;
	o->days = 7;
	o->gpus = 8;
	o->cpus = 32;
	o->jobs = 20;
	o->jobs_per_day = 200;
	o->nodes = 16;
	o->interval_ms = 1000;
	o->start_ms = DEFAULT_START_MS;
	o->seed = DEFAULT_SEED;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", mkstore_longopts, NULL)) != -1) {
		ret = 0;
		switch (c) {
		case 'h':
			fputs(mkstore_usage, stdout);
			return -1;
		case OPT_DB:
			if (!*optarg)
				return usage_error("empty --db");
			o->db = optarg;
			break;
		case OPT_SCENARIO:
			if (strcmp(optarg, "golden") == 0)
				o->scenario = SCENARIO_GOLDEN;
			else if (strcmp(optarg, "bench") == 0)
				o->scenario = SCENARIO_BENCH;
			else
				return usage_error("unknown scenario '%s' (golden or bench)",
						   optarg);
			break;
		case OPT_DAYS:
			ret = parse_int_opt("days", optarg, 1, 366, &v);
			o->days = (int)v;
			given_bench_only = true;
			bench_only = "--days";
			break;
		case OPT_HISTORY_DAYS:
			ret = parse_int_opt("history-days", optarg, 0, 3660, &v);
			o->history_days = (int)v;
			history_given = true;
			break;
		case OPT_GPUS:
			ret = parse_int_opt("gpus", optarg, 0, SIM_MAX_GPUS, &v);
			o->gpus = (int)v;
			given_bench_only = true;
			bench_only = "--gpus";
			break;
		case OPT_CPUS:
			ret = parse_int_opt("cpus", optarg, 1, HOST_MAX_CPUS, &v);
			o->cpus = (int)v;
			given_bench_only = true;
			bench_only = "--cpus";
			break;
		case OPT_INTERVAL:
			ret = parse_int_opt("interval-ms", optarg, 100, 3600000, &v);
			o->interval_ms = v;
			break;
		case OPT_JOBS:
			ret = parse_int_opt("jobs", optarg, 0, 10000, &v);
			o->jobs = (int)v;
			given_bench_only = true;
			bench_only = "--jobs";
			break;
		case OPT_JOBS_PER_DAY:
			ret = parse_int_opt("jobs-per-day", optarg, 0, 1000000, &v);
			o->jobs_per_day = (int)v;
			break;
		case OPT_NODES:
			ret = parse_int_opt("nodes", optarg, 1, 999, &v);
			o->nodes = (int)v;
			break;
		case OPT_START: {
			char *end;

			if (parse_rfc3339_ms(optarg, &o->start_ms) == 0)
				break;
			errno = 0;
			o->start_ms = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || o->start_ms <= 0)
				return usage_error(
				    "bad --start '%s' (RFC 3339, or ms since the epoch)", optarg);
			break;
		}
		case OPT_SEED:
			ret = parse_int_opt("seed", optarg, 0, LLONG_MAX, &v);
			o->seed = (uint64_t)v;
			break;
		case OPT_QUIET:
			o->quiet = true;
			break;
		case OPT_LENGTH_JOBS:
			o->length_jobs = true;
			break;
		case ':':
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
		if (ret)
			return ret;
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!o->db)
		return usage_error("--db PATH is required");
	if (o->scenario == SCENARIO_GOLDEN && given_bench_only)
		return usage_error("%s is for --scenario bench (golden is fixed)", bench_only);
	if (!history_given)
		o->history_days = o->scenario == SCENARIO_BENCH ? 30 : 0;
	return 0;
}

/* ---- the simulated jobs ---- */

/* How a job behaves: everything a tick draws from. */
struct profile {
	double cores;			       /* CPU cores used, mean */
	double cores_sd;		       /* their noise, in cores */
	double sys_frac;		       /* share of CPU time in the kernel */
	double rss_start_bytes, rss_end_bytes; /* linear over the job */
	double read_bps, write_bps;	       /* storage */
	double net_bps;			       /* the node's traffic it causes, rx + tx */
	double iowait_pct;		       /* the node's iowait while it runs, % */
	int gpus_used;			       /* its first N reserved GPUs get a process */
	double gpu_hi_pct, gpu_lo_pct;	       /* utilization in busy and quiet phases */
	int64_t gpu_period_ms;		       /* 0: always gpu_hi_pct */
	int64_t gpu_hi_ms;		       /* the busy part of each period */
	double gpu_burst_per_s;		       /* > 0: bursts of gpu_hi_pct at random (a service) */
	double gpu_sd;			       /* utilization noise, points */
	double gpu_mem_bytes;		       /* per GPU it uses */
	double gpu_throttle_frac;	       /* share of busy ticks slowed (thermal) */
	double pcie_bps;		       /* host to device at 100% */
};

struct sim_proc {
	struct proc_info info;
	int64_t row;
	double cpu_share, rss_share, io_share;
	uint32_t threads;
	double user_ms, system_ms, read_bytes, write_bytes;
	uint64_t hwm_bytes;
};

enum job_state { JOB_PENDING, JOB_RUNNING, JOB_DONE };

struct sim_job {
	struct job_record rec; /* reservation, times, names; id once begun */
	struct profile p;
	int ngpus;	       /* reserved */
	int gpu[SIM_MAX_GPUS]; /* the node's device indices reserved */
	int nprocs;
	struct sim_proc proc[SIM_MAX_PROCS];
	enum job_state state;
	int64_t last_ms; /* CPU and I/O are accounted up to here */
	double user_ms, system_ms, read_bytes, write_bytes;
	double cores_now, rss_now_bytes, gpu_util_now, d_user_ms, d_system_ms, d_read, d_write;
	double burst_left_ms;
	bool throttled_now;
	bool has_rate; /* a second sample: rates known */
	struct rollup_acc acc[ROLLUP_JOB__COUNT][ROLLUP_TIERS];
};

struct sim_gpu {
	struct device_record dev;
	struct gpu_sample s; /* cumulative counters kept between ticks */
	double energy_mj, temp_c;
	struct rollup_acc acc[ROLLUP_GPU__COUNT][ROLLUP_TIERS];
};

struct sim {
	const struct options *o;
	struct store *st;
	struct rng rng;
	int64_t node_id;
	int cores;
	uint64_t mem_bytes;
	int64_t boot_ms;
	int ngpus;
	struct sim_gpu gpu[SIM_MAX_GPUS];
	struct sim_job *jobs;
	size_t njobs;
	/* the node's counters, as doubles to keep fractions of a ms */
	struct host_sample *host;
	double cpu_user, cpu_system, cpu_idle, cpu_iowait, cpu_softirq;
	double disk_read, disk_write, net_rx, net_tx, psi_cpu_us, psi_io_some_us, psi_io_full_us;
	double load1, load5, load15;
	bool has_prev;
	double prev_busy, prev_all, prev_disk_read, prev_disk_write, prev_net_rx, prev_net_tx;
	struct rollup_acc host_acc[ROLLUP_HOST__COUNT][ROLLUP_TIERS];
	/* what was written */
	int64_t ticks, summaries, history_jobs;
};

/* The agent's rollups (store/rollup.h) of the simulated node's series. */
static int roll(struct sim *s, struct rollup_acc acc[ROLLUP_TIERS], const char *entity,
		int64_t entity_id, const char *metric, int64_t ts, double v)
{
	struct rollup_series rs = {s->node_id, entity, entity_id, metric};

	return rollup_add(s->st, &rs, acc, ts, v);
}

static int flush(struct sim *s, struct rollup_acc *acc, int t, const char *entity,
		 int64_t entity_id, const char *metric)
{
	struct rollup_series rs = {s->node_id, entity, entity_id, metric};

	return rollup_flush(s->st, &rs, acc, t);
}

/* ---- jobs: the golden five, and the bench's generated ones ---- */

struct golden_proc {
	const char *comm;
	const char *cmdline;
	double cpu_share, rss_share;
	uint32_t threads;
};

struct golden_job {
	const char *job_id, *user, *name, *command;
	uint32_t uid;
	int start_min, minutes;
	double reserved_cpus;
	double reserved_mem_gib;
	int reserved_gpus;
	int gpu[2];
	const char *gpu_list;
	struct profile p;
	struct golden_proc proc[2];
};

/*
 * What each golden job is, and what the report should say of it:
 *   1001 train.py  - training (GPU 0 in a 7.5 s cycle, ~75% busy, GPU-bound);
 *                    used 1 of its 2 GPUs; 2.5 of 8 cores; 6 of 64 GiB
 *   1002 solver    - CPU-bound batch: 3.95 of 4 cores; 2 of 16 GiB
 *   1003 notebook  - idle: 0.01 of 16 cores, its GPU unused, 1 of 64 GiB
 *   1004 leaky     - memory grows 1 -> 3 GiB in 20 min (6 GiB/h), out of its
 *                    8 GiB ~50 min after its end at this rate
 *   1005 ingest    - I/O-bound: 0.3 of 2 cores, reading 200 MB/s, node iowait 40%
 * Minutes from the start: 1001 1-21, 1002 13-28, 1003 4-29, 1004 5-25,
 * 1005 18-28.  1001 and 1003 overlap: 1003 reserved GPU 1 while 1001
 * (which reserved both) left it idle; 20 and 25 minutes do not fit apart
 * in 30.  Reservations add up to more than the node (32 of 16 cores at
 * the peak): a plausible schedule would not fit in 30 minutes either.
 * 1002 starts late so that the rest of the node stays near a third busy
 * during 1001 (hogging is judged at 50%: no golden figure sits on a
 * threshold).
 */
static const struct golden_job golden_jobs[] = {
    {"1001",
     "alice",
     "train.py",
     "python train.py --epochs 40 --data /scratch/alice/imagenet",
     2001,
     1,
     20,
     8,
     64,
     2,
     {0, 1},
     "0,1",
     {.cores = 2.5,
      .cores_sd = 0.08,
      .sys_frac = 0.06,
      .rss_start_bytes = 6 * GIB,
      .rss_end_bytes = 6 * GIB,
      .read_bps = 20e6,
      .write_bps = 0.2e6,
      .net_bps = 0.5e6,
      .gpus_used = 1,
      .gpu_hi_pct = 97,
      .gpu_lo_pct = 15,
      .gpu_period_ms = 7500,
      .gpu_hi_ms = 5500,
      .gpu_sd = 1.5,
      .gpu_mem_bytes = 30 * GIB,
      .pcie_bps = 3e9},
     {{"python", "python train.py --epochs 40 --data /scratch/alice/imagenet", 0.8, 0.85, 12},
      {"python", "python train.py --epochs 40 --data /scratch/alice/imagenet", 0.2, 0.15, 4}}},
    {"1002",
     "bob",
     "solver",
     "./solver --threads 4 input.dat",
     2002,
     13,
     15,
     4,
     16,
     0,
     {0, 0},
     "",
     {.cores = 3.95,
      .cores_sd = 0.015,
      .sys_frac = 0.02,
      .rss_start_bytes = 2 * GIB,
      .rss_end_bytes = 2 * GIB,
      .read_bps = 0.1e6,
      .write_bps = 0.1e6},
     {{"solver", "./solver --threads 4 input.dat", 1.0, 1.0, 4}, {NULL, NULL, 0, 0, 0}}},
    {"1003",
     "carol",
     "notebook",
     "jupyter-lab --no-browser --port 8888",
     2003,
     4,
     25,
     16,
     64,
     1,
     {1, 0},
     "1",
     {.cores = 0.01,
      .cores_sd = 0.002,
      .sys_frac = 0.3,
      .rss_start_bytes = 1 * GIB,
      .rss_end_bytes = 1 * GIB},
     {{"jupyter-lab", "jupyter-lab --no-browser --port 8888", 0.4, 0.3, 3},
      {"python", "python -m ipykernel_launcher -f kernel-1003.json", 0.6, 0.7, 5}}},
    {"1004",
     "dave",
     "leaky",
     "./leaky --iterations 100000",
     2004,
     5,
     20,
     2,
     8,
     0,
     {0, 0},
     "",
     {.cores = 1.05,
      .cores_sd = 0.03,
      .sys_frac = 0.03,
      .rss_start_bytes = 1 * GIB,
      .rss_end_bytes = 3 * GIB,
      .read_bps = 0.05e6,
      .write_bps = 0.5e6},
     {{"leaky", "./leaky --iterations 100000", 1.0, 1.0, 1}, {NULL, NULL, 0, 0, 0}}},
    {"1005",
     "erin",
     "ingest",
     "python ingest.py /data/erin/raw",
     2005,
     18,
     10,
     2,
     4,
     0,
     {0, 0},
     "",
     {.cores = 0.3,
      .cores_sd = 0.02,
      .sys_frac = 0.4,
      .rss_start_bytes = 2.5 * GIB,
      .rss_end_bytes = 2.5 * GIB,
      .read_bps = 200e6,
      .write_bps = 2e6,
      .iowait_pct = 40},
     {{"python", "python ingest.py /data/erin/raw", 0.7, 0.9, 6},
      {"zstd", "zstd -d -c /data/erin/raw/part-0001.zst", 0.3, 0.1, 1}}},
};

static void set_text(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

/* The parts of a Slurm job's record every job shares. */
static void slurm_record(struct sim *s, struct sim_job *j, const char *hostname, int host_cores,
			 uint64_t host_mem_bytes)
{
	struct job_record *r = &j->rec;

	if (!r->node_id)
		r->node_id = s->node_id; /* node01, the raw period's */
	set_text(r->hostname, sizeof(r->hostname), hostname);
	set_text(r->scheduler, sizeof(r->scheduler), "slurm");
	set_text(r->step, sizeof(r->step), "batch");
	snprintf(r->cgroup, sizeof(r->cgroup), "/system.slice/slurmstepd.scope/job_%s", r->job_id);
	set_text(r->reservation_source, sizeof(r->reservation_source), "slurm_env");
	r->interval_ms = s->o->interval_ms;
	r->cores_allowed = (int32_t)ceil(r->reserved_cpus);
	r->host_cores = host_cores;
	r->host_mem_bytes = host_mem_bytes;
	r->has_reserved_gpus = true; /* Slurm names its GPUs, or there are none */
}

static void add_proc(struct sim_job *j, int32_t pid, int32_t ppid, const char *comm,
		     const char *cmdline, double cpu_share, double rss_share, uint32_t threads)
{
	struct sim_proc *p = &j->proc[j->nprocs++];

	memset(p, 0, sizeof(*p));
	p->info.pid = pid;
	p->info.ppid = ppid;
	p->info.start_ms = j->rec.start_ms + 10 * (j->nprocs - 1);
	p->info.uid = j->rec.uid;
	set_text(p->info.comm, sizeof(p->info.comm), comm);
	set_text(p->info.cmdline, sizeof(p->info.cmdline), cmdline);
	p->cpu_share = cpu_share;
	p->rss_share = rss_share;
	p->io_share = rss_share;
	p->threads = threads;
}

static void golden_make_jobs(struct sim *s)
{
	size_t n = sizeof(golden_jobs) / sizeof(golden_jobs[0]);

	for (size_t k = 0; k < n; k++) {
		const struct golden_job *g = &golden_jobs[k];
		struct sim_job *j = &s->jobs[s->njobs++];
		struct job_record *r = &j->rec;
		int32_t pid = 30000 + 100 * (int32_t)k;

		memset(j, 0, sizeof(*j));
		set_text(r->job_id, sizeof(r->job_id), g->job_id);
		set_text(r->name, sizeof(r->name), g->name);
		set_text(r->command, sizeof(r->command), g->command);
		set_text(r->user, sizeof(r->user), g->user);
		r->uid = g->uid;
		r->pid = pid;
		/* started between two ticks, ended just after one (as processes do) */
		r->start_ms = s->o->start_ms + g->start_min * MINUTE_MS - 400;
		r->end_ms = s->o->start_ms + (g->start_min + g->minutes) * MINUTE_MS + 20;
		r->reserved_cpus = g->reserved_cpus;
		r->reserved_mem_bytes = (uint64_t)(g->reserved_mem_gib * GIB);
		r->reserved_gpus = g->reserved_gpus;
		set_text(r->reserved_gpu_list, sizeof(r->reserved_gpu_list), g->gpu_list);
		slurm_record(s, j, "node01", s->cores, s->mem_bytes);
		j->p = g->p;
		j->ngpus = g->reserved_gpus;
		for (int i = 0; i < j->ngpus; i++)
			j->gpu[i] = g->gpu[i];
		for (int i = 0; i < 2 && g->proc[i].comm; i++)
			add_proc(j, pid + i, i ? pid : pid - 1, g->proc[i].comm, g->proc[i].cmdline,
				 g->proc[i].cpu_share, g->proc[i].rss_share, g->proc[i].threads);
	}
}

static const char *const user_names[40] = {
    "alice",   "bob",  "carol",	  "dave",   "erin",   "frank", "grace",	 "heidi",
    "ivan",    "judy", "mallory", "niaj",   "olivia", "peggy", "rupert", "sybil",
    "trent",   "uma",  "victor",  "walter", "xena",   "yusuf", "zoe",	 "arthur",
    "beatriz", "chen", "dmitri",  "elena",  "farid",  "gita",  "hiro",	 "ines",
    "jonas",   "kofi", "lena",	  "marco",  "nadia",  "oscar", "priya",	 "quentin",
};
#define NUSERS ((int)(sizeof(user_names) / sizeof(user_names[0])))

/* Some users run far more jobs than others. */
static int pick_user(struct rng *r)
{
	double u = rng_unit(r);

	return (int)(u * u * NUSERS) % NUSERS;
}

/* The bench's kinds of job, in the spirit of the golden ones. */
enum bench_kind {
	BK_TRAINING,	/* periodic GPU work, GPU-bound */
	BK_CPU_FEEDING, /* GPU starved while its cores are saturated */
	BK_GPU_UNUSED,	/* GPUs reserved, none touched, idle */
	BK_LEAKY,	/* training whose memory grows steadily */
	BK_IO,		/* reading hard, node iowait high */
	BK_INFERENCE,	/* a service: GPU bursts and network traffic */
	BK_PARTIAL,	/* used half the GPUs it reserved */
	BK_THROTTLED,	/* training on GPUs slowed by heat */
	BK_CPU_BATCH,	/* no GPU, CPU-bound */
	BK__COUNT
};

static const struct {
	const char *name, *command, *main_comm;
	bool wants_gpus;
} bench_kinds[BK__COUNT] = {
    [BK_TRAINING] = {"train-resnet", "python train.py --model resnet50", "python", true},
    [BK_CPU_FEEDING] = {"train-vit", "python train.py --model vit_b16 --workers 2", "python", true},
    [BK_GPU_UNUSED] = {"interactive", "jupyter-lab --no-browser --port 8888", "jupyter-lab", true},
    [BK_LEAKY] = {"finetune-llm", "python finetune.py --model llama-7b", "python", true},
    [BK_IO] = {"preprocess", "python preprocess.py --input /scratch/raw", "python", true},
    [BK_INFERENCE] = {"serve", "python -m vllm.entrypoints.api_server --port 8000", "python", true},
    [BK_PARTIAL] = {"train-ddp", "torchrun --nproc_per_node 1 train.py", "torchrun", true},
    [BK_THROTTLED] = {"train-gpt", "python train_gpt.py --batch 64", "python", true},
    [BK_CPU_BATCH] = {"solver", "./solver --threads 8 input.dat", "solver", false},
};

static void bench_profile(struct sim *s, struct sim_job *j, enum bench_kind kind)
{
	struct rng *r = &s->rng;
	struct profile *p = &j->p;
	double cores = j->rec.reserved_cpus, mem = (double)j->rec.reserved_mem_bytes;
	int g = j->ngpus;

	memset(p, 0, sizeof(*p));
	p->sys_frac = 0.05;
	p->gpus_used = g;
	p->gpu_sd = 1.5;
	p->pcie_bps = 2e9;
	p->net_bps = 0.2e6;
	switch (kind) {
	case BK_TRAINING:
	case BK_LEAKY:
	case BK_PARTIAL:
	case BK_THROTTLED:
		p->cores = fmax(1.0, 0.4 * cores);
		p->cores_sd = 0.04 * p->cores;
		p->rss_start_bytes = p->rss_end_bytes = fmin(0.3 * mem, 6 * GIB * (g ? g : 1));
		p->read_bps = 30e6 * (g ? g : 1);
		p->write_bps = 1e6;
		p->gpu_hi_pct = rng_range(r, 93, 99);
		p->gpu_lo_pct = rng_range(r, 10, 30);
		p->gpu_period_ms = (int64_t)rng_range(r, 4000, 12000);
		p->gpu_hi_ms = (int64_t)(0.75 * (double)p->gpu_period_ms);
		p->gpu_mem_bytes = rng_range(r, 40, 70) * GIB;
		p->pcie_bps = 3e9;
		if (kind == BK_LEAKY) {
			p->rss_start_bytes = fmin(4 * GIB, 0.1 * mem);
			p->rss_end_bytes = 0.8 * mem;
		}
		if (kind == BK_PARTIAL)
			p->gpus_used = g > 1 ? g / 2 : 1;
		if (kind == BK_THROTTLED)
			p->gpu_throttle_frac = 0.4;
		break;
	case BK_CPU_FEEDING:
		p->cores = 0.95 * cores;
		p->cores_sd = 0.01 * cores;
		p->rss_start_bytes = p->rss_end_bytes = fmin(0.4 * mem, 4 * GIB * (g ? g : 1));
		p->read_bps = 60e6;
		p->gpu_hi_pct = rng_range(r, 15, 30);
		p->gpu_sd = 6;
		p->gpu_mem_bytes = rng_range(r, 15, 25) * GIB;
		break;
	case BK_GPU_UNUSED:
		p->cores = 0.02;
		p->cores_sd = 0.004;
		p->sys_frac = 0.3;
		p->rss_start_bytes = p->rss_end_bytes = 1.5 * GIB;
		p->gpus_used = 0;
		break;
	case BK_IO:
		p->cores = fmin(cores, 0.5);
		p->cores_sd = 0.03;
		p->sys_frac = 0.4;
		p->rss_start_bytes = p->rss_end_bytes = fmin(0.2 * mem, 3 * GIB);
		p->read_bps = 400e6;
		p->write_bps = 40e6;
		p->iowait_pct = 30;
		p->gpu_hi_pct = 8;
		p->gpu_sd = 3;
		p->gpu_mem_bytes = 10 * GIB;
		break;
	case BK_INFERENCE:
		p->cores = fmin(cores, 1.2);
		p->cores_sd = 0.1;
		p->rss_start_bytes = p->rss_end_bytes = fmin(0.3 * mem, 12 * GIB);
		p->net_bps = 30e6;
		p->gpu_hi_pct = 85;
		p->gpu_lo_pct = 3;
		p->gpu_burst_per_s = 0.02;
		p->gpu_mem_bytes = 24 * GIB;
		p->pcie_bps = 0.5e9;
		break;
	case BK_CPU_BATCH:
	case BK__COUNT:
		p->cores = 0.97 * cores;
		p->cores_sd = 0.01 * cores;
		p->sys_frac = 0.02;
		p->rss_start_bytes = p->rss_end_bytes = fmin(0.3 * mem, 8 * GIB);
		p->gpus_used = 0;
		break;
	}
	if (p->gpus_used > g)
		p->gpus_used = g;
}

/* GPUs, cores and memory in use at t by the jobs placed so far (all start at or before t). */
static bool bench_fits(const struct sim *s, int64_t t, int gpus, double cores, double mem,
		       bool busy[SIM_MAX_GPUS], int64_t *next_end)
{
	double used_cores = 0, used_mem = 0;
	int used_gpus = 0;

	memset(busy, 0, SIM_MAX_GPUS * sizeof(busy[0]));
	*next_end = INT64_MAX;
	for (size_t k = 0; k < s->njobs; k++) {
		const struct sim_job *j = &s->jobs[k];

		if (j->rec.start_ms > t || j->rec.end_ms <= t)
			continue;
		used_cores += j->rec.reserved_cpus;
		used_mem += (double)j->rec.reserved_mem_bytes;
		used_gpus += j->ngpus;
		for (int i = 0; i < j->ngpus; i++)
			busy[j->gpu[i]] = true;
		if (j->rec.end_ms < *next_end)
			*next_end = j->rec.end_ms;
	}
	return used_gpus + gpus <= s->ngpus && used_cores + cores <= s->cores + 1e-9 &&
	       used_mem + mem <= (double)s->mem_bytes;
}

/*
 * The raw period's jobs: each starts after the previous one, at the first
 * time its GPUs, cores and memory are free (as a scheduler would place
 * them), lasts 4-12 h (less when the period is short) and ends before the
 * period does.  A job that cannot fit is left out, with a warning.
 */
static int bench_make_jobs(struct sim *s, int64_t first_job_id)
{
	static const int gpu_counts[] = {1, 1, 2, 2, 4, 4, 8};
	const struct options *o = s->o;
	struct rng *r = &s->rng;
	int64_t span = (int64_t)o->days * DAY_MS, end_limit = o->start_ms + span - 10 * MINUTE_MS;
	double mean_dur = fmin(8.0 * HOUR_MS, (double)span / 4);
	double cores_per_gpu = s->ngpus ? fmax(1, floor(0.75 * s->cores / s->ngpus)) : 0;
	double mem_per_gpu = s->ngpus ? 0.9 * (double)s->mem_bytes / s->ngpus : 0;
	int64_t prev_start = o->start_ms + MINUTE_MS;
	enum bench_kind *kinds = calloc((size_t)o->jobs + 1, sizeof(*kinds));
	int skipped = 0;

	if (!kinds)
		return log_err(-ENOMEM, "cannot make the bench's jobs");
	/* every kind in turn, shuffled (Fisher-Yates) */
	for (int k = 0; k < o->jobs; k++)
		kinds[k] = (enum bench_kind)(k % BK__COUNT);
	for (int k = o->jobs - 1; k > 0; k--) {
		int m = rng_int(r, 0, k);
		enum bench_kind t = kinds[k];

		kinds[k] = kinds[m];
		kinds[m] = t;
	}
	for (int k = 0; k < o->jobs; k++) {
		enum bench_kind kind = kinds[k];
		struct sim_job *j = &s->jobs[s->njobs];
		struct job_record *rec = &j->rec;
		bool busy[SIM_MAX_GPUS];
		int64_t t, next_end, dur;
		double cores, mem;
		int gpus = 0, user;
		int32_t pid;
		char cmd[PROC_CMDLINE_MAX];

		if (bench_kinds[kind].wants_gpus && s->ngpus > 0) {
			gpus =
			    gpu_counts[rng_int(r, 0, (int)(sizeof(gpu_counts) / sizeof(int)) - 1)];
			if (kind == BK_PARTIAL && gpus < 2)
				gpus = 2;
			if (gpus > s->ngpus)
				gpus = s->ngpus;
			cores = gpus * cores_per_gpu;
			mem = floor(gpus * mem_per_gpu / GIB) * GIB;
		} else {
			cores = fmin(s->cores, fmax(2, 2 * cores_per_gpu));
			mem = fmin(0.25 * (double)s->mem_bytes, cores * 4 * GIB);
		}
		user = pick_user(r);
		dur = (int64_t)(mean_dur * rng_range(r, 0.5, 1.5));
		t = prev_start +
		    (int64_t)(rng_range(r, 0, 1.8) * (double)(span - mean_dur) / o->jobs);
		t -= t % 1000;
		t += rng_int(r, 1, 999); /* between two ticks */
		while (!bench_fits(s, t, gpus, cores, mem, busy, &next_end) && next_end < end_limit)
			t = next_end + rng_int(r, 5, 120) * 1000;
		if (t + 30 * MINUTE_MS > end_limit ||
		    !bench_fits(s, t, gpus, cores, mem, busy, &next_end)) {
			skipped++;
			continue;
		}
		if (t + dur > end_limit)
			dur = end_limit - t;
		prev_start = t;

		memset(j, 0, sizeof(*j));
		snprintf(rec->job_id, sizeof(rec->job_id), "%" PRId64, first_job_id + k);
		set_text(rec->name, sizeof(rec->name), bench_kinds[kind].name);
		if (kind == BK_PARTIAL)
			snprintf(cmd, sizeof(cmd), "torchrun --nproc_per_node %d train.py",
				 gpus > 1 ? gpus / 2 : 1);
		else
			set_text(cmd, sizeof(cmd), bench_kinds[kind].command);
		set_text(rec->command, sizeof(rec->command), cmd);
		set_text(rec->user, sizeof(rec->user), user_names[user]);
		rec->uid = 2001 + (uint32_t)user;
		rec->start_ms = t;
		rec->end_ms = t + dur;
		rec->reserved_cpus = cores;
		rec->reserved_mem_bytes = (uint64_t)mem;
		rec->reserved_gpus = gpus;
		j->ngpus = 0;
		for (int i = 0; i < s->ngpus && j->ngpus < gpus; i++)
			if (!busy[i])
				j->gpu[j->ngpus++] = i;
		for (int i = 0; i < j->ngpus; i++) {
			size_t len = strlen(rec->reserved_gpu_list);

			snprintf(rec->reserved_gpu_list + len, sizeof(rec->reserved_gpu_list) - len,
				 "%s%d", i ? "," : "", j->gpu[i]);
		}
		slurm_record(s, j, "node01", s->cores, s->mem_bytes);
		bench_profile(s, j, kind);
		pid = 40000 + 10 * k;
		rec->pid = pid;
		add_proc(j, pid, pid - 1, bench_kinds[kind].main_comm, cmd, 0.6, 0.7, 16);
		add_proc(j, pid + 1, pid, "python", cmd, 0.25, 0.2, 2);
		if (rng_int(r, 0, 1)) {
			add_proc(j, pid + 2, pid, "python", cmd, 0.15, 0.1, 2);
		} else {
			j->proc[0].cpu_share += 0.15;
			j->proc[0].rss_share += 0.1;
			j->proc[0].io_share += 0.1;
		}
		s->njobs++;
	}
	if (skipped)
		log_warn(0, "%d of %d jobs did not fit in %d days of node01 and were left out",
			 skipped, o->jobs, o->days);
	free(kinds);
	return 0;
}

/*
 * --length-jobs: a CPU job of 1 h, one of 8 h and one of the whole raw
 * period on node01 (reserving no GPU, beside the others: a report replays
 * its node's host and GPU rows all the same), whose reports' times say
 * how a report's cost grows with its job's length.
 */
static void bench_length_jobs(struct sim *s)
{
	const struct options *o = s->o;
	int64_t span = (int64_t)o->days * DAY_MS;
	const int64_t durs[3] = {HOUR_MS, 8 * HOUR_MS, span - 20 * MINUTE_MS};

	for (int k = 0; k < 3; k++) {
		struct sim_job *j = &s->jobs[s->njobs];
		struct job_record *rec = &j->rec;
		int32_t pid = 39000 + 10 * k;
		int64_t dur = durs[k] < span - 20 * MINUTE_MS ? durs[k] : span - 20 * MINUTE_MS;

		memset(j, 0, sizeof(*j));
		snprintf(rec->job_id, sizeof(rec->job_id), "%d", 9001 + k);
		set_text(rec->name, sizeof(rec->name), k == 0 ? "len-1h" : k == 1 ? "len-8h" : "len-all");
		set_text(rec->command, sizeof(rec->command), "./solver --threads 1 input.dat");
		set_text(rec->user, sizeof(rec->user), user_names[0]);
		rec->uid = 2001;
		rec->start_ms = o->start_ms + 5 * MINUTE_MS + 437;
		rec->end_ms = rec->start_ms + dur;
		rec->reserved_cpus = 1;
		rec->reserved_mem_bytes = (uint64_t)(2 * GIB);
		slurm_record(s, j, "node01", s->cores, s->mem_bytes);
		bench_profile(s, j, BK_CPU_BATCH);
		rec->pid = pid;
		add_proc(j, pid, pid - 1, "solver", rec->command, 0.7, 0.7, 16);
		add_proc(j, pid + 1, pid, "solver", rec->command, 0.3, 0.3, 2);
		s->njobs++;
	}
}

/* ---- one tick ---- */

/* The busy ms of [a, b) of a square wave: hi_ms busy of every period_ms, from 0. */
static int64_t square_busy_ms(int64_t x, int64_t period_ms, int64_t hi_ms)
{
	int64_t whole = x / period_ms, rest = x % period_ms;

	return whole * hi_ms + (rest < hi_ms ? rest : hi_ms);
}

static double clamp(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* A running job's use over (last_ms, ts]: CPU, memory, I/O, GPU. */
static void job_advance(struct sim *s, struct sim_job *j, int64_t ts)
{
	const struct profile *p = &j->p;
	struct rng *r = &s->rng;
	double dt = (double)(ts - j->last_ms), frac, cap, cpu;

	cap = j->rec.reserved_cpus > 0 ? j->rec.reserved_cpus : s->cores;
	j->cores_now = clamp(p->cores + p->cores_sd * rng_normal(r), 0, cap);
	cpu = j->cores_now * dt;
	j->d_user_ms = cpu * (1 - p->sys_frac);
	j->d_system_ms = cpu * p->sys_frac;
	j->user_ms += j->d_user_ms;
	j->system_ms += j->d_system_ms;
	frac = (double)(ts - j->rec.start_ms) / (double)(j->rec.end_ms - j->rec.start_ms);
	j->rss_now_bytes = p->rss_start_bytes + (p->rss_end_bytes - p->rss_start_bytes) * frac;
	j->rss_now_bytes *= 1 + 0.002 * rng_normal(r);
	j->d_read = fmax(0, p->read_bps * (1 + 0.1 * rng_normal(r))) * dt / 1000;
	j->d_write = fmax(0, p->write_bps * (1 + 0.1 * rng_normal(r))) * dt / 1000;
	j->read_bytes += j->d_read;
	j->write_bytes += j->d_write;

	j->gpu_util_now = 0;
	j->throttled_now = false;
	if (p->gpus_used > 0) {
		double u;

		if (p->gpu_burst_per_s > 0) {
			if (j->burst_left_ms <= 0 && rng_unit(r) < p->gpu_burst_per_s * dt / 1000)
				j->burst_left_ms = rng_range(r, 2000, 20000);
			u = j->burst_left_ms > 0 ? p->gpu_hi_pct : p->gpu_lo_pct;
			j->burst_left_ms -= dt;
		} else if (p->gpu_period_ms > 0) {
			/* a device's utilization is the busy share of the interval it covers */
			int64_t b = ts - j->rec.start_ms, a = b - s->o->interval_ms;
			double busy;

			if (a < 0)
				a = 0;
			busy = (double)(square_busy_ms(b, p->gpu_period_ms, p->gpu_hi_ms) -
					square_busy_ms(a, p->gpu_period_ms, p->gpu_hi_ms)) /
			       (double)(b - a > 0 ? b - a : 1);
			u = p->gpu_lo_pct + (p->gpu_hi_pct - p->gpu_lo_pct) * busy;
		} else {
			u = p->gpu_hi_pct;
		}
		j->gpu_util_now = clamp(round(u + p->gpu_sd * rng_normal(r)), 0, 100);
		if (p->gpu_throttle_frac > 0 && j->gpu_util_now > 50 &&
		    rng_unit(r) < p->gpu_throttle_frac)
			j->throttled_now = true;
	}
	j->last_ms = ts;
}

static int job_begin(struct sim *s, struct sim_job *j)
{
	int ret = store_job_begin(s->st, &j->rec);

	for (int i = 0; i < j->nprocs && !ret; i++)
		ret = store_put_proc_info(s->st, s->node_id, j->rec.id, &j->proc[i].info, NULL,
					  &j->proc[i].row);
	j->state = JOB_RUNNING;
	j->last_ms = j->rec.start_ms;
	return ret;
}

static int put_job_rows(struct sim *s, struct sim_job *j, int64_t ts)
{
	struct job_sample js;
	int ret = 0;

	memset(&js, 0, sizeof(js));
	js.valid = JS_IO | JS_SWAP | JS_CG_CPU;
	for (int i = 0; i < j->nprocs && !ret; i++) {
		struct sim_proc *p = &j->proc[i];
		struct proc_sample ps;

		p->user_ms += j->d_user_ms * p->cpu_share;
		p->system_ms += j->d_system_ms * p->cpu_share;
		p->read_bytes += j->d_read * p->io_share;
		p->write_bytes += j->d_write * p->io_share;
		memset(&ps, 0, sizeof(ps));
		ps.valid = PS_RSS | PS_HWM | PS_SWAP | PS_IO | PS_THREADS;
		ps.state = j->cores_now * p->cpu_share > 0.5 ? 'R' : 'S';
		ps.threads = p->threads;
		ps.user_ms = (uint64_t)p->user_ms;
		ps.system_ms = (uint64_t)p->system_ms;
		ps.rss_bytes = (uint64_t)(j->rss_now_bytes * p->rss_share) & ~4095ull;
		if (ps.rss_bytes > p->hwm_bytes)
			p->hwm_bytes = ps.rss_bytes;
		ps.hwm_bytes = p->hwm_bytes;
		ps.read_bytes = (uint64_t)p->read_bytes;
		ps.write_bytes = (uint64_t)p->write_bytes;
		ret = store_put_proc_sample(s->st, p->row, ts, &ps);
		js.nprocs++;
		js.user_ms += ps.user_ms;
		js.system_ms += ps.system_ms;
		js.rss_bytes += ps.rss_bytes;
		js.read_bytes += ps.read_bytes;
		js.write_bytes += ps.write_bytes;
	}
	js.cg_cpu_ms = js.user_ms + js.system_ms;
	j->rec.samples++;
	if (!ret)
		ret = store_put_job_sample(s->st, j->rec.id, ts, &js);
	if (ret)
		return ret;
	ret = roll(s, j->acc[ROLLUP_JOB_CPU_CORES], "job", j->rec.id,
		   rollup_job_metric_names[ROLLUP_JOB_CPU_CORES], ts,
		   j->has_rate ? j->cores_now : NAN);
	if (!ret)
		ret = roll(s, j->acc[ROLLUP_JOB_RSS_BYTES], "job", j->rec.id,
			   rollup_job_metric_names[ROLLUP_JOB_RSS_BYTES], ts, (double)js.rss_bytes);
	if (!ret)
		ret = roll(s, j->acc[ROLLUP_JOB_READ_BPS], "job", j->rec.id,
			   rollup_job_metric_names[ROLLUP_JOB_READ_BPS], ts,
			   j->has_rate ? j->d_read * 1000 / (double)s->o->interval_ms : NAN);
	if (!ret)
		ret = roll(s, j->acc[ROLLUP_JOB_WRITE_BPS], "job", j->rec.id,
			   rollup_job_metric_names[ROLLUP_JOB_WRITE_BPS], ts,
			   j->has_rate ? j->d_write * 1000 / (double)s->o->interval_ms : NAN);
	j->has_rate = true;
	return ret;
}

/* Per-CPU values that add up to the total: CPU i gets (total + i) / n. */
static void spread_cpu(struct host_cpu_stat *c, int n)
{
	const struct cpu_times *t = &c->total;

	c->ncpus = n;
	for (int i = 0; i < n; i++) {
		struct cpu_times *x = &c->cpu[i];
		uint64_t k = (uint64_t)i, m = (uint64_t)n;

		c->cpu_id[i] = (uint16_t)i;
		x->user_ms = (t->user_ms + k) / m;
		x->nice_ms = (t->nice_ms + k) / m;
		x->system_ms = (t->system_ms + k) / m;
		x->idle_ms = (t->idle_ms + k) / m;
		x->iowait_ms = (t->iowait_ms + k) / m;
		x->irq_ms = (t->irq_ms + k) / m;
		x->softirq_ms = (t->softirq_ms + k) / m;
		x->steal_ms = (t->steal_ms + k) / m;
	}
}

static double ema(double prev, double now, double dt_s, double window_s)
{
	double a = exp(-dt_s / window_s);

	return prev * a + now * (1 - a);
}

/* The node over the last interval: the jobs' use plus a little of its own. */
static int put_host(struct sim *s, int64_t ts)
{
	struct host_sample *h = s->host;
	struct rng *r = &s->rng;
	double dt = (double)s->o->interval_ms, all = dt * s->cores;
	double user = 0, system = 0, iowait_pct = 0, rss = 0, read = 0, write = 0, net = 0;
	double bg = fmax(0, BACKGROUND_CORES + 0.02 * rng_normal(r)) * dt, busy, iowait, runnable;
	double v[ROLLUP_HOST__COUNT];
	int ret;

	for (size_t k = 0; k < s->njobs; k++) {
		const struct sim_job *j = &s->jobs[k];

		if (j->state != JOB_RUNNING || j->last_ms != ts)
			continue;
		user += j->d_user_ms;
		system += j->d_system_ms;
		iowait_pct += j->p.iowait_pct;
		rss += j->rss_now_bytes;
		read += j->d_read;
		write += j->d_write;
		net += j->p.net_bps * dt / 1000;
	}
	user += 0.6 * bg;
	system += 0.3 * bg;
	busy = user + system + 0.1 * bg;
	iowait = clamp((fmin(iowait_pct, 95) + 0.2) / 100 * all * (1 + 0.03 * rng_normal(r)), 0,
		       fmax(0, all - busy));
	s->cpu_user += user;
	s->cpu_system += system;
	s->cpu_softirq += 0.1 * bg;
	s->cpu_iowait += iowait;
	s->cpu_idle += fmax(0, all - busy - iowait);
	s->disk_read += read + 50e3 * dt / 1000;
	s->disk_write += write + 200e3 * dt / 1000;
	s->net_rx += 0.6 * net + 20e3 * dt / 1000;
	s->net_tx += 0.4 * net + 10e3 * dt / 1000;
	s->psi_cpu_us += busy > 0.9 * all ? 200 * dt : 2 * dt;
	s->psi_io_some_us += iowait > 0 ? 1000 * dt * fmin(1, 1.1 * iowait / all) : 0;
	s->psi_io_full_us += iowait > 0 ? 600 * dt * fmin(1, 1.1 * iowait / all) : 0;
	runnable = busy / dt + iowait / dt * 0.2;
	s->load1 = ema(s->load1, runnable, dt / 1000, 60);
	s->load5 = ema(s->load5, runnable, dt / 1000, 300);
	s->load15 = ema(s->load15, runnable, dt / 1000, 900);

	h->valid = HOST_HAS_CPU | HOST_HAS_MEM | HOST_HAS_LOAD | HOST_HAS_DISK | HOST_HAS_NET |
		   HOST_HAS_PSI_CPU | HOST_HAS_PSI_MEM | HOST_HAS_PSI_IO;
	h->cpu.total = (struct cpu_times){
	    .user_ms = (uint64_t)s->cpu_user,
	    .system_ms = (uint64_t)s->cpu_system,
	    .idle_ms = (uint64_t)s->cpu_idle,
	    .iowait_ms = (uint64_t)s->cpu_iowait,
	    .softirq_ms = (uint64_t)s->cpu_softirq,
	};
	spread_cpu(&h->cpu, s->cores);
	h->cpu.btime_s = s->boot_ms / 1000;
	h->cpu.procs_running = (uint64_t)(busy / dt + 1.5);
	h->cpu.procs_blocked = (uint64_t)(iowait / dt * 0.2 + 0.5);
	h->mem.valid = MEMINFO_TOTAL | MEMINFO_FREE | MEMINFO_AVAILABLE | MEMINFO_BUFFERS |
		       MEMINFO_CACHED | MEMINFO_SWAP_TOTAL | MEMINFO_SWAP_FREE | MEMINFO_SHMEM;
	h->mem.total_bytes = s->mem_bytes;
	{
		double used = BASE_MEM_BYTES + rss + 16 * MIB * rng_normal(r);
		double avail = clamp((double)s->mem_bytes - used, 0, (double)s->mem_bytes);

		h->mem.available_bytes = (uint64_t)avail & ~4095ull;
		h->mem.cached_bytes = (uint64_t)fmin(PAGE_CACHE_BYTES, 0.5 * avail) & ~4095ull;
		h->mem.buffers_bytes = (uint64_t)fmin(256 * MIB, 0.05 * avail) & ~4095ull;
		h->mem.free_bytes =
		    h->mem.available_bytes - h->mem.cached_bytes - h->mem.buffers_bytes;
		h->mem.shmem_bytes = 64ull << 20;
		h->mem.swap_total_bytes = 8ull << 30;
		h->mem.swap_free_bytes = 8ull << 30;
	}
	h->load.load1_milli = (uint32_t)(s->load1 * 1000);
	h->load.load5_milli = (uint32_t)(s->load5 * 1000);
	h->load.load15_milli = (uint32_t)(s->load15 * 1000);
	h->load.running = (uint32_t)h->cpu.procs_running;
	h->load.total = 600;
	h->psi_cpu = (struct host_psi){true, true, (uint64_t)s->psi_cpu_us, 0};
	h->psi_mem = (struct host_psi){true, true, 0, 0};
	h->psi_io =
	    (struct host_psi){true, true, (uint64_t)s->psi_io_some_us, (uint64_t)s->psi_io_full_us};
	h->ndisks = 1;
	set_text(h->disks[0].name, sizeof(h->disks[0].name), "nvme0n1");
	h->disks[0].read_bytes = h->disk_read_bytes = (uint64_t)s->disk_read & ~511ull;
	h->disks[0].write_bytes = h->disk_write_bytes = (uint64_t)s->disk_write & ~511ull;
	h->disks[0].reads = h->disk_reads = (uint64_t)(s->disk_read / (128 * 1024));
	h->disks[0].writes = h->disk_writes = (uint64_t)(s->disk_write / (64 * 1024));
	h->disks[0].io_ms = (uint64_t)(s->cpu_iowait / s->cores + s->disk_read / 2e9 * 1000);
	h->nnets = 1;
	set_text(h->nets[0].name, sizeof(h->nets[0].name), "eth0");
	h->nets[0].rx_bytes = h->net_rx_bytes = (uint64_t)s->net_rx;
	h->nets[0].tx_bytes = h->net_tx_bytes = (uint64_t)s->net_tx;
	h->nets[0].rx_packets = h->net_rx_packets = (uint64_t)(s->net_rx / 1400);
	h->nets[0].tx_packets = h->net_tx_packets = (uint64_t)(s->net_tx / 1400);
	ret = store_put_host(s->st, s->node_id, ts, h);
	if (ret)
		return ret;

	/* the agent's host rollups, from the same counters */
	{
		double b = s->cpu_user + s->cpu_system + s->cpu_softirq;
		double a = b + s->cpu_idle + s->cpu_iowait;

		for (int m = 0; m < ROLLUP_HOST__COUNT; m++)
			v[m] = NAN;
		if (s->has_prev) {
			double per_s = 1000.0 / dt;

			v[ROLLUP_HOST_CPU_BUSY_PCT] =
			    a > s->prev_all ? 100 * (b - s->prev_busy) / (a - s->prev_all) : NAN;
			v[ROLLUP_HOST_DISK_READ_BPS] = (s->disk_read - s->prev_disk_read) * per_s;
			v[ROLLUP_HOST_DISK_WRITE_BPS] =
			    (s->disk_write - s->prev_disk_write) * per_s;
			v[ROLLUP_HOST_NET_RX_BPS] = (s->net_rx - s->prev_net_rx) * per_s;
			v[ROLLUP_HOST_NET_TX_BPS] = (s->net_tx - s->prev_net_tx) * per_s;
		}
		v[ROLLUP_HOST_MEM_USED_BYTES] =
		    (double)(h->mem.total_bytes - h->mem.available_bytes);
		v[ROLLUP_HOST_LOAD1] = h->load.load1_milli / 1000.0;
		s->has_prev = true;
		s->prev_busy = b;
		s->prev_all = a;
		s->prev_disk_read = s->disk_read;
		s->prev_disk_write = s->disk_write;
		s->prev_net_rx = s->net_rx;
		s->prev_net_tx = s->net_tx;
	}
	for (int m = 0; m < ROLLUP_HOST__COUNT && !ret; m++)
		ret = roll(s, s->host_acc[m], "host", 0, rollup_host_metric_names[m], ts, v[m]);
	return ret;
}

/* Every device, the processes of the jobs on it, and one row for everybody else. */
static int put_gpus(struct sim *s, int64_t ts)
{
	double dt = (double)s->o->interval_ms;
	int ret = 0;

	for (int i = 0; i < s->ngpus && !ret; i++) {
		struct sim_gpu *g = &s->gpu[i];
		struct gpu_sample *x = &g->s;
		double util = 0, mem = 0, pcie = 0, power;
		bool throttled = false, busy_dev = false;
		struct gpu_proc others;

		for (size_t k = 0; k < s->njobs; k++) {
			const struct sim_job *j = &s->jobs[k];

			if (j->state != JOB_RUNNING || j->last_ms != ts)
				continue;
			for (int d = 0; d < j->p.gpus_used; d++) {
				if (j->gpu[d] != i)
					continue;
				busy_dev = true;
				util = fmax(util, j->gpu_util_now);
				mem += j->p.gpu_mem_bytes;
				pcie += j->p.pcie_bps * j->gpu_util_now / 100;
				throttled |= j->throttled_now;
			}
		}
		power = GPU_IDLE_POWER_W + GPU_POWER_PER_PCT_W * util * (throttled ? 0.8 : 1);
		g->energy_mj += power * dt; /* W x ms = mJ */
		g->temp_c += ((throttled ? 86 : 32 + 0.45 * util) - g->temp_c) * 0.05;
		x->valid = GPU_UTIL | GPU_MEM_UTIL | GPU_MEM_USED | GPU_PCIE | GPU_POWER |
			   GPU_ENERGY | GPU_TEMP | GPU_SM_CLOCK | GPU_MEM_CLOCK | GPU_THROTTLE |
			   GPU_ECC;
		x->util_pct = (uint32_t)util;
		x->mem_util_pct = (uint32_t)(util * 0.55);
		x->mem_used_bytes = (uint64_t)mem;
		x->pcie_rx_bps = (uint64_t)pcie;
		x->pcie_tx_bps = (uint64_t)(pcie / 4);
		x->power_mw = (uint32_t)(power * 1000);
		x->energy_mj = (uint64_t)g->energy_mj;
		x->temp_c = (int32_t)round(g->temp_c);
		x->sm_clock_mhz = !busy_dev ? 210 : throttled ? 1095 : 1410;
		x->mem_clock_mhz = 1593;
		x->throttle_reasons = util == 0	  ? GPU_THROTTLE_IDLE
				      : throttled ? GPU_THROTTLE_SW_THERMAL
						  : 0;
		ret = store_put_gpu_sample(s->st, g->dev.id, ts, x);
		for (size_t k = 0; k < s->njobs && !ret; k++) {
			const struct sim_job *j = &s->jobs[k];

			if (j->state != JOB_RUNNING || j->last_ms != ts)
				continue;
			for (int d = 0; d < j->p.gpus_used && !ret; d++) {
				struct gpu_proc gp = {
				    .pid = (uint32_t)j->proc[0].info.pid,
				    .valid = GPU_PROC_MEM | GPU_PROC_UTIL | GPU_PROC_MEM_UTIL,
				    .mem_bytes = (uint64_t)j->p.gpu_mem_bytes,
				    .sm_util_pct = (uint32_t)j->gpu_util_now,
				    .mem_util_pct = (uint32_t)(j->gpu_util_now * 0.55),
				};

				if (j->gpu[d] == i)
					ret = store_put_gpu_proc(s->st, g->dev.id, j->proc[0].row,
								 j->rec.id, ts, &gp);
			}
		}
		/* nobody else on the node uses the GPUs: said, not left unknown */
		memset(&others, 0, sizeof(others));
		others.valid = GPU_PROC_MEM | GPU_PROC_UTIL;
		if (!ret)
			ret = store_put_gpu_proc(s->st, g->dev.id, 0, 0, ts, &others);
		if (!ret)
			ret = roll(s, g->acc[ROLLUP_GPU_UTIL_PCT], "gpu", g->dev.id,
				   rollup_gpu_metric_names[ROLLUP_GPU_UTIL_PCT], ts,
				   (double)x->util_pct);
		if (!ret)
			ret = roll(s, g->acc[ROLLUP_GPU_MEM_USED_BYTES], "gpu", g->dev.id,
				   rollup_gpu_metric_names[ROLLUP_GPU_MEM_USED_BYTES], ts,
				   (double)x->mem_used_bytes);
		if (!ret)
			ret = roll(s, g->acc[ROLLUP_GPU_POWER_W], "gpu", g->dev.id,
				   rollup_gpu_metric_names[ROLLUP_GPU_POWER_W], ts,
				   x->power_mw / 1000.0);
	}
	return ret;
}

/*
 * A job's summary, as the agent stores it at the job's end: its report
 * rebuilt from the store (the same figures and verdicts as `jobscope
 * report`), the columns history queries read, and the whole as JSON.
 */
static int job_summary(struct sim *s, const struct job_record *rec)
{
	struct job_report *r = calloc(1, sizeof(*r));
	struct job_summary_record sum;
	struct strbuf json;
	int ret;

	if (!r)
		return log_err(-ENOMEM, "cannot summarize job %s", rec->job_id);
	strbuf_init(&json, 0);
	ret = job_report_load(r, s->st, rec);
	if (ret == 0) {
		summary_to_record(&r->sum, &sum);
		ret = report_json(&r->sum, &r->an, NULL, &r->app, &json);
		if (ret)
			log_err(ret, "cannot write the report of job %s as JSON", rec->job_id);
	}
	if (ret == 0) {
		sum.report_json = strbuf_str(&json);
		ret = store_put_job_summary(s->st, &sum);
	}
	job_report_release(r);
	free(r);
	strbuf_release(&json);
	if (ret == 0)
		s->summaries++;
	return ret;
}

/* A job whose processes are gone: end, exit, its last rollups and its summary. */
static int job_end(struct sim *s, struct sim_job *j)
{
	struct event_record e;
	int ret = 0;

	for (int i = 0; i < j->nprocs && !ret; i++) {
		j->proc[i].info.end_ms = j->rec.end_ms - 5 * (j->nprocs - 1 - i);
		ret = store_update_proc_info(s->st, j->proc[i].row, &j->proc[i].info, NULL);
	}
	j->rec.has_exit = true;
	j->rec.exit_code = 0;
	if (!ret)
		ret = store_job_update(s->st, &j->rec);
	memset(&e, 0, sizeof(e));
	e.ts_ms = j->rec.end_ms;
	set_text(e.kind, sizeof(e.kind), "exit");
	e.pid = j->rec.pid;
	snprintf(e.message, sizeof(e.message), "%s exited with code 0", j->proc[0].info.comm);
	if (!ret)
		ret = store_put_event(s->st, s->node_id, j->rec.id, &e);
	for (int t = 0; t < ROLLUP_TIERS && !ret; t++)
		for (int m = 0; m < ROLLUP_JOB__COUNT && !ret; m++)
			ret = flush(s, &j->acc[m][t], t, "job", j->rec.id,
				    rollup_job_metric_names[m]);
	if (!ret)
		ret = job_summary(s, &j->rec);
	j->state = JOB_DONE;
	return ret;
}

static int tick(struct sim *s, int64_t ts)
{
	int ret = 0;

	for (size_t k = 0; k < s->njobs && !ret; k++) {
		struct sim_job *j = &s->jobs[k];

		if (j->state == JOB_PENDING && j->rec.start_ms <= ts && j->rec.end_ms > ts)
			ret = job_begin(s, j);
		if (!ret && j->state == JOB_RUNNING && j->rec.end_ms > ts)
			job_advance(s, j, ts);
	}
	if (!ret)
		ret = put_host(s, ts);
	for (size_t k = 0; k < s->njobs && !ret; k++)
		if (s->jobs[k].state == JOB_RUNNING && s->jobs[k].last_ms == ts)
			ret = put_job_rows(s, &s->jobs[k], ts);
	if (!ret)
		ret = put_gpus(s, ts);
	/* jobs that ended since the last tick: in the same transaction as its rows */
	for (size_t k = 0; k < s->njobs && !ret; k++)
		if (s->jobs[k].state == JOB_RUNNING && s->jobs[k].rec.end_ms <= ts)
			ret = job_end(s, &s->jobs[k]);
	s->ticks++;
	return ret;
}

static int flush_rollups(struct sim *s)
{
	int ret = 0;

	for (int t = 0; t < ROLLUP_TIERS && !ret; t++) {
		for (int m = 0; m < ROLLUP_HOST__COUNT && !ret; m++)
			ret =
			    flush(s, &s->host_acc[m][t], t, "host", 0, rollup_host_metric_names[m]);
		for (int i = 0; i < s->ngpus && !ret; i++)
			for (int m = 0; m < ROLLUP_GPU__COUNT && !ret; m++)
				ret = flush(s, &s->gpu[i].acc[m][t], t, "gpu", s->gpu[i].dev.id,
					    rollup_gpu_metric_names[m]);
		for (size_t k = 0; k < s->njobs && !ret; k++)
			for (int m = 0; m < ROLLUP_JOB__COUNT && !ret; m++)
				ret = flush(s, &s->jobs[k].acc[m][t], t, "job", s->jobs[k].rec.id,
					    rollup_job_metric_names[m]);
	}
	return ret;
}

static double elapsed_s(int64_t t0_ns)
{
	return (double)(time_mono_ns() - t0_ns) / 1e9;
}

/* The raw period: every tick from start for `span_ms`, TICKS_PER_TX ticks a transaction. */
static int write_raw(struct sim *s, int64_t span_ms, int64_t t0_ns)
{
	const struct options *o = s->o;
	int64_t nticks = span_ms / o->interval_ms, per_day = DAY_MS / o->interval_ms;
	int ret = 0;

	for (int64_t k = 0; k < nticks && !ret; k++) {
		int64_t ts = o->start_ms + k * o->interval_ms;

		if (k % TICKS_PER_TX == 0) {
			ret = store_tick_begin(s->st);
			if (ret)
				break;
		}
		ret = tick(s, ts);
		if (!ret && k == nticks - 1)
			ret = flush_rollups(s);
		if (ret) {
			store_tick_abort(s->st);
			break;
		}
		if ((k + 1) % TICKS_PER_TX == 0 || k == nticks - 1)
			ret = store_tick_commit(s->st);
		if (!ret && !o->quiet && per_day > 0 && (k + 1) % per_day == 0)
			fprintf(stderr,
				"js-mkstore: day %" PRId64 " of %" PRId64 " written (%.1f s)\n",
				(k + 1) / per_day, nticks / per_day, elapsed_s(t0_ns));
	}
	for (size_t k = 0; k < s->njobs && !ret; k++)
		if (s->jobs[k].state == JOB_PENDING)
			log_warn(0, "job %s starts after the raw period: not written",
				 s->jobs[k].rec.job_id);
	return ret;
}

/* ---- nodes and devices ---- */

struct node_hw {
	char hostname[32];
	int cores;
	uint64_t mem_bytes;
	int gpus;
};

/* node01 is the raw period's node; of the others, the first half have GPUs like it. */
static void node_hw(const struct sim *s, int i, struct node_hw *hw)
{
	snprintf(hw->hostname, sizeof(hw->hostname), "node%02d", i + 1);
	if (i == 0 || (s->ngpus > 0 && i < (s->o->nodes + 1) / 2)) {
		hw->cores = s->cores;
		hw->mem_bytes = s->mem_bytes;
		hw->gpus = s->ngpus;
	} else {
		hw->cores = 64;
		hw->mem_bytes = 256ull << 30;
		hw->gpus = 0;
	}
}

static int add_devices(struct sim *s)
{
	int ret = 0;

	for (int i = 0; i < s->ngpus && !ret; i++) {
		struct sim_gpu *g = &s->gpu[i];
		struct gpu_device_info *d = &g->dev.info;

		memset(g, 0, sizeof(*g));
		set_text(g->dev.vendor, sizeof(g->dev.vendor), "NVIDIA");
		set_text(g->dev.driver_version, sizeof(g->dev.driver_version), "550.54.15");
		d->index = i;
		snprintf(d->uuid, sizeof(d->uuid), "GPU-00000000-0000-0000-0000-%012d", i);
		set_text(d->name, sizeof(d->name), "NVIDIA A100-SXM4-80GB");
		snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "00000000:%02X:00.0", 0x07 + 8 * i);
		d->valid = GPU_INFO_MEM_TOTAL | GPU_INFO_POWER_LIMIT;
		d->mem_total_bytes = GPU_MEM_TOTAL_BYTES;
		d->power_limit_mw = GPU_POWER_LIMIT_MW;
		d->supported = GPU_UTIL | GPU_MEM_UTIL | GPU_MEM_USED | GPU_PCIE | GPU_POWER |
			       GPU_ENERGY | GPU_TEMP | GPU_SM_CLOCK | GPU_MEM_CLOCK | GPU_THROTTLE |
			       GPU_ECC | GPU_PROC_MEM | GPU_PROC_UTIL | GPU_PROC_MEM_UTIL |
			       GPU_EVENTS;
		g->temp_c = 32;
		g->energy_mj = 1e9 + 7e7 * i; /* the driver's counter since it loaded */
		ret = store_put_device(s->st, s->node_id, &g->dev);
	}
	return ret;
}

/* ---- history: jobs and their summaries only ---- */

static const struct {
	const char *name, *command;
	bool gpu;
} history_kinds[] = {
    {"train", "python train.py --config configs/base.yaml", true},
    {"eval", "python eval.py --checkpoint last.pt", true},
    {"sweep", "python sweep.py --trial 17", true},
    {"notebook", "jupyter-lab --no-browser", true},
    {"serve", "python serve.py --port 8000", true},
    {"preprocess", "python preprocess.py --shards 64", false},
    {"solver", "./solver --threads 16 input.dat", false},
    {"align", "bwa mem -t 16 ref.fa reads.fq", false},
    {"render", "blender -b scene.blend -a", false},
    {"simulate", "mpirun -np 32 ./lammps -in in.melt", false},
};
#define NHISTORY_KINDS ((int)(sizeof(history_kinds) / sizeof(history_kinds[0])))

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* A start time in the day, more of them in working hours. */
static int64_t history_start(struct rng *r, int64_t day_ms)
{
	for (;;) {
		int64_t t = (int64_t)(rng_unit(r) * DAY_MS);
		int hour = (int)(t / HOUR_MS);
		double w = hour >= 8 && hour < 19 ? 1.0 : 0.35;

		if (rng_unit(r) < w)
			return day_ms + t - t % 1000;
	}
}

/* One history job with plausible figures in its summary columns (no report JSON). */
static int history_job(struct sim *s, const int64_t *node_ids, int64_t start_ms, int64_t job_id,
		       int64_t before_ms)
{
	struct rng *r = &s->rng;
	struct node_hw hw;
	struct sim_job j; /* its record and reservation; never sampled */
	struct job_record *rec = &j.rec;
	struct job_summary_record sum;
	int node = rng_int(r, 0, s->o->nodes - 1), user = pick_user(r), kind, gpus = 0;
	double wall_s, cores, mem, eff, mem_eff, roll;
	int ret;

	node_hw(s, node, &hw);
	kind = rng_int(r, 0, NHISTORY_KINDS - 1);
	if (history_kinds[kind].gpu && hw.gpus == 0)
		kind += NHISTORY_KINDS / 2; /* the CPU kind in the same slot */
	if (history_kinds[kind].gpu) {
		static const int counts[] = {1, 1, 1, 2, 2, 4, 8};

		gpus = counts[rng_int(r, 0, (int)(sizeof(counts) / sizeof(counts[0])) - 1)];
		if (gpus > hw.gpus)
			gpus = hw.gpus;
		cores = fmax(1, floor(0.75 * hw.cores / hw.gpus)) * gpus;
		mem = floor(0.9 * (double)hw.mem_bytes / hw.gpus / GIB) * gpus * GIB;
	} else {
		static const int counts[] = {1, 2, 4, 4, 8, 8, 16, 32};

		cores = counts[rng_int(r, 0, (int)(sizeof(counts) / sizeof(counts[0])) - 1)];
		cores = fmin(cores, hw.cores);
		mem = fmin(cores * 4 * GIB, 0.9 * (double)hw.mem_bytes);
	}
	/* 2 min to 24 h, log-uniform */
	wall_s = exp(log(120.0) + rng_unit(r) * (log(86400.0) - log(120.0)));
	if (start_ms + (int64_t)(wall_s * 1000) > before_ms)
		wall_s = (double)(before_ms - start_ms) / 1000;
	eff = 100 * pow(rng_unit(r), 0.7);
	mem_eff = clamp(100 * pow(rng_unit(r), 1.5), 1, 100);
	roll = rng_unit(r);

	memset(&j, 0, sizeof(j));
	snprintf(rec->job_id, sizeof(rec->job_id), "%" PRId64, job_id);
	set_text(rec->name, sizeof(rec->name), history_kinds[kind].name);
	set_text(rec->command, sizeof(rec->command), history_kinds[kind].command);
	set_text(rec->user, sizeof(rec->user), user_names[user]);
	rec->uid = 2001 + (uint32_t)user;
	rec->pid = 10000 + (int32_t)(job_id % 50000);
	rec->node_id = node_ids[node];
	rec->start_ms = start_ms;
	rec->end_ms = start_ms + (int64_t)(wall_s * 1000);
	rec->has_exit = true;
	if (roll < 0.06) {
		rec->exit_code = 1;
	} else if (roll < 0.09) {
		rec->exit_code = 137;
		rec->signal = 9;
	} else if (roll < 0.10) {
		rec->timed_out = true;
		rec->exit_code = 143;
		rec->signal = 15;
	}
	rec->reserved_cpus = cores;
	rec->reserved_mem_bytes = (uint64_t)mem;
	rec->reserved_gpus = gpus;
	for (int i = 0; i < gpus; i++) {
		size_t len = strlen(rec->reserved_gpu_list);

		snprintf(rec->reserved_gpu_list + len, sizeof(rec->reserved_gpu_list) - len, "%s%d",
			 i ? "," : "", i);
	}
	slurm_record(s, &j, hw.hostname, hw.cores, hw.mem_bytes);
	rec->samples = (int64_t)(wall_s * 1000) / s->o->interval_ms;
	ret = store_job_begin(s->st, rec);
	if (ret)
		return ret;

	memset(&sum, 0, sizeof(sum));
	sum.job_row = rec->id;
	sum.wall_ms = rec->end_ms - rec->start_ms;
	sum.cpu_avg_cores = cores * eff / 100;
	sum.cpu_ms = (uint64_t)(sum.cpu_avg_cores * (double)sum.wall_ms);
	sum.cpu_peak_cores = fmin(cores, sum.cpu_avg_cores * rng_range(r, 1.0, 1.6) + 0.05);
	sum.cpu_efficiency_pct = eff;
	sum.rss_peak_bytes = (uint64_t)(mem * mem_eff / 100) & ~4095ull;
	sum.mem_efficiency_pct = 100 * (double)sum.rss_peak_bytes / mem;
	sum.has_io = true;
	sum.read_bytes = (uint64_t)(exp(rng_range(r, log(1e6), log(5e8))) * wall_s / 60);
	sum.write_bytes = (uint64_t)(exp(rng_range(r, log(1e5), log(1e8))) * wall_s / 60);
	sum.gpu_util_avg_pct = sum.gpu_util_p95_pct = NAN;
	if (gpus > 0) {
		double util = 98 * pow(rng_unit(r), 0.8), power_w;

		sum.gpus_used = rng_unit(r) < 0.08 ? 0 : rng_unit(r) < 0.2 ? (gpus + 1) / 2 : gpus;
		if (sum.gpus_used > 0) {
			sum.gpu_util_avg_pct = util;
			sum.gpu_util_p95_pct = fmin(100, util + rng_range(r, 0, 25));
			sum.has_gpu_mem = true;
			sum.gpu_mem_peak_bytes = (uint64_t)(rng_range(r, 1, 78) * GIB);
			power_w = GPU_IDLE_POWER_W + GPU_POWER_PER_PCT_W * util;
			sum.has_gpu_energy = true;
			sum.gpu_energy_mj = (uint64_t)(power_w * wall_s * 1000 * sum.gpus_used);
		}
	}
	sum.report_json = NULL;
	ret = store_put_job_summary(s->st, &sum);
	if (ret == 0)
		s->history_jobs++;
	return ret;
}

/* `days` days of `per_day` jobs each, ending at start_ms, over `nodes` nodes. */
static int write_history(struct sim *s, int64_t first_job_id, int64_t t0_ns)
{
	const struct options *o = s->o;
	int64_t *node_ids = calloc((size_t)o->nodes, sizeof(*node_ids));
	int64_t *starts = calloc((size_t)o->jobs_per_day + 1, sizeof(*starts));
	int64_t job_id = first_job_id;
	int ret = 0;

	if (!node_ids || !starts) {
		ret = log_err(-ENOMEM, "cannot write the history");
		goto out_free;
	}
	for (int i = 0; i < o->nodes && !ret; i++) {
		struct node_hw hw;

		node_hw(s, i, &hw);
		ret = store_node(s->st, hw.hostname, hw.cores, hw.mem_bytes,
				 s->boot_ms - i * HOUR_MS, &node_ids[i]);
	}
	for (int d = 0; d < o->history_days && !ret; d++) {
		int64_t day_ms = o->start_ms - (int64_t)(o->history_days - d) * DAY_MS;

		for (int k = 0; k < o->jobs_per_day; k++)
			starts[k] = history_start(&s->rng, day_ms);
		qsort(starts, (size_t)o->jobs_per_day, sizeof(*starts), cmp_i64);
		ret = store_tick_begin(s->st);
		for (int k = 0; k < o->jobs_per_day && !ret; k++)
			ret = history_job(s, node_ids, starts[k], job_id++, o->start_ms - 1000);
		if (ret) {
			store_tick_abort(s->st);
			break;
		}
		ret = store_tick_commit(s->st);
		if (!ret && !o->quiet && o->scenario == SCENARIO_BENCH && (d + 1) % 10 == 0)
			fprintf(stderr, "js-mkstore: history day %d of %d written (%.1f s)\n",
				d + 1, o->history_days, elapsed_s(t0_ns));
	}
out_free:
	free(node_ids);
	free(starts);
	return ret;
}

/* ---- the end: what was written ---- */

struct count_arg {
	int64_t n;
};

static int count_row(const struct store_row *r, void *arg)
{
	((struct count_arg *)arg)->n = (int64_t)r->num[0];
	return 0;
}

static const char *const count_tables[] = {
    "nodes",	   "jobs",	   "job_summaries",    "procs",	       "host_samples",
    "cpu_samples", "disk_samples", "net_samples",      "proc_samples", "job_samples",
    "devices",	   "gpu_samples",  "gpu_proc_samples", "events",       "rollups",
};

static int print_counts(struct store *st, FILE *f)
{
	char sql[96];
	int64_t total = 0;
	int ret = 0;

	fputs("js-mkstore: rows:", f);
	for (size_t i = 0; i < sizeof(count_tables) / sizeof(count_tables[0]) && !ret; i++) {
		struct count_arg c = {0};

		snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", count_tables[i]);
		ret = store_query_rows(st, sql, NULL, count_row, &c);
		fprintf(f, " %s %" PRId64 "%s", count_tables[i], c.n,
			i + 1 < sizeof(count_tables) / sizeof(count_tables[0]) ? "," : "");
		total += c.n;
	}
	fprintf(f, " (%" PRId64 " in all)\n", total);
	return ret;
}

static uint64_t file_bytes(const char *path, const char *suffix)
{
	char p[PATH_MAX + 8];
	struct stat sb;

	snprintf(p, sizeof(p), "%s%s", path, suffix);
	return stat(p, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* ---- main ---- */

static int make_store(const struct options *o)
{
	struct sim *s = calloc(1, sizeof(*s));
	int64_t t0_ns = time_mono_ns(), span_ms, history_first_id, raw_first_id;
	char buf[64];
	struct stat sb;
	int ret;

	if (!s)
		return log_err(-ENOMEM, "cannot make store '%s'", o->db);
	s->o = o;
	rng_seed(&s->rng, o->seed);
	if (stat(o->db, &sb) == 0) {
		ret = log_err(-EEXIST,
			      "cannot make store '%s': it exists (js-mkstore writes a new one)",
			      o->db);
		goto out_free_sim;
	}
	s->host = calloc(1, sizeof(*s->host));
	if (!s->host) {
		ret = log_err(-ENOMEM, "cannot make store '%s'", o->db);
		goto out_free_sim;
	}
	if (o->scenario == SCENARIO_GOLDEN) {
		s->cores = 16;
		s->mem_bytes = 64ull << 30;
		s->ngpus = 2;
		span_ms = GOLDEN_MINUTES * MINUTE_MS;
	} else {
		s->cores = o->cpus;
		s->ngpus = o->gpus;
		s->mem_bytes = (uint64_t)fmax(128 * GIB, BENCH_NODE_MEM_PER_GPU * o->gpus);
		span_ms = (int64_t)o->days * DAY_MS;
	}
	s->boot_ms = o->start_ms - (int64_t)(o->history_days + 3) * DAY_MS;
	s->jobs =
	    calloc(o->scenario == SCENARIO_GOLDEN ? 5 : (size_t)o->jobs + 4, sizeof(*s->jobs));
	if (!s->jobs) {
		ret = log_err(-ENOMEM, "cannot make store '%s'", o->db);
		goto out_free_sim;
	}

	ret = store_open(o->db, STORE_CREATE, &s->st);
	if (ret)
		goto out_free_sim;
	/* what made it, and a creation time that does not depend on the clock */
	snprintf(buf, sizeof(buf), "%" PRId64, o->start_ms);
	ret = store_meta_set(s->st, "created_ms", buf);
	if (!ret)
		ret = store_meta_set(s->st, "synthetic",
				     o->scenario == SCENARIO_GOLDEN ? "js-mkstore golden"
								    : "js-mkstore bench");
	if (!ret)
		ret = store_node(s->st, "node01", s->cores, s->mem_bytes, s->boot_ms, &s->node_id);
	if (ret)
		goto out_close_store;

	/* history first: its jobs are the older ones, and their ids the lower */
	history_first_id = 100000;
	raw_first_id = history_first_id + (int64_t)o->history_days * o->jobs_per_day;
	if (o->history_days > 0 && o->jobs_per_day > 0) {
		ret = write_history(s, history_first_id, t0_ns);
		if (ret)
			goto out_close_store;
	}
	ret = add_devices(s);
	if (ret)
		goto out_close_store;
	if (o->scenario == SCENARIO_GOLDEN)
		golden_make_jobs(s);
	else
		ret = bench_make_jobs(s, raw_first_id);
	if (!ret && o->scenario == SCENARIO_BENCH && o->length_jobs)
		bench_length_jobs(s);
	if (!ret)
		ret = write_raw(s, span_ms, t0_ns);
	if (ret)
		goto out_close_store;
	if (!o->quiet)
		ret = print_counts(s->st, stderr);

out_close_store:
	store_close(s->st);
	if (ret == 0 && !o->quiet)
		fprintf(
		    stderr,
		    "js-mkstore: wrote '%s' in %.1f s: %" PRId64 " ticks, %zu raw jobs (%" PRId64
		    " summaries), %" PRId64 " history jobs; %.1f MiB (+ %.1f MiB of WAL)\n",
		    o->db, elapsed_s(t0_ns), s->ticks, s->njobs, s->summaries, s->history_jobs,
		    (double)file_bytes(o->db, "") / MIB, (double)file_bytes(o->db, "-wal") / MIB);
out_free_sim:
	free(s->jobs);
	free(s->host);
	free(s);
	return ret;
}

int main(int argc, char **argv)
{
	struct options o;
	int ret = parse_options(argc, argv, &o);

	if (ret < 0)
		return 0;
	if (ret)
		return ret;
	return make_store(&o) ? 1 : 0;
}
