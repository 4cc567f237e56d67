/*
 * agent.h - what `jobscope agent`'s files share (cmd_agent.c: the sampling
 * loop and the store; agent_render.c: /metrics and the JSON of the API).
 *
 * The sampler thread owns struct agent.  After each tick it renders the
 * endpoints' bodies into a fresh struct agent_view and swaps it in under
 * view_lock; the HTTP thread only reads views (and the store, through its
 * own read-only connection), so a scrape never waits for a tick and never
 * sees half of one.
 */
#ifndef JOBSCOPE_AGENT_H
#define JOBSCOPE_AGENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "attrib/jobs.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "net/http.h"
#include "net/sender.h"
#include "sample/gpu/gpu_set.h"
#include "sample/host.h"
#include "sample/ptree.h"
#include "store/store.h"

struct agent_opts {
	int64_t interval_ms;
	const char *db;
	const char *listen; /* NULL or "none": no HTTP */
	const char *log_file;
	struct store_retention retention;
	int64_t exit_after_ms; /* hidden, for tests and benchmarks: 0 = run until signalled */
	const char *head;       /* --head URL: stream to a head */
	const char *token_file; /* its bearer token */
	const char *ca_file;    /* CA to trust for an https head */
	char *config_argv[64];
	char config_buf[8192];
};

/* One job's live figures, as rendered into a view. */
struct agent_view_job {
	char key[JOB_KEY_MAX];
	char scheduler[16];
	char job_id[64];
	size_t json_off, json_len; /* its object in view->job_json */
};

struct agent_view {
	struct strbuf metrics;
	struct strbuf node;
	struct strbuf gpus;
	struct strbuf jobs;
	struct strbuf job_json;
	struct agent_view_job *job;
	size_t njobs;
};

struct agent_gpu_proc {
	int dev;
	struct ptree_proc *proc; /* NULL when the pid is not a process we know */
	struct gpu_proc g;
};

/* min/avg/max over one bucket of a rollup tier */
struct rollup_acc {
	int64_t bucket_ms; /* start of the open bucket, 0 if none */
	int64_t n;
	double min, max, sum;
};

enum agent_host_metric {
	AHM_CPU_BUSY_PCT,
	AHM_MEM_USED_BYTES,
	AHM_LOAD1,
	AHM_DISK_READ_BPS,
	AHM_DISK_WRITE_BPS,
	AHM_NET_RX_BPS,
	AHM_NET_TX_BPS,
	AHM__COUNT
};

enum agent_job_metric { AJM_CPU_CORES, AJM_RSS_BYTES, AJM_READ_BPS, AJM_WRITE_BPS, AJM__COUNT };
enum agent_gpu_metric { AGM_UTIL_PCT, AGM_MEM_USED_BYTES, AGM_POWER_W, AGM__COUNT };

struct agent_job_rollup {
	int64_t job_row;
	bool live;
	struct rollup_acc acc[AJM__COUNT][2]; /* [metric][tier] */
	uint64_t prev_read, prev_write;
	int64_t prev_ts;
};

struct agent {
	const struct agent_opts *opt;
	struct store *st;
	int64_t node_id;
	char hostname[256];
	int64_t started_ms;
	struct wallclock wc;
	struct host_sampler hs;
	struct host_sample *host, *host_prev;
	bool host_ok, has_host_prev;
	int64_t host_ts, host_prev_ts;
	struct ptree pt;
	struct jobs jobs;

	struct gpu_set gpus;
	struct device_record devs[GPU_MAX_DEVICES];
	struct gpu_sample gsample[GPU_MAX_DEVICES];
	bool gsample_ok[GPU_MAX_DEVICES];
	struct gpu_sample gprev[GPU_MAX_DEVICES];
	bool has_gprev[GPU_MAX_DEVICES];
	int64_t gprev_ts[GPU_MAX_DEVICES];
	struct agent_gpu_proc *gprocs;
	size_t ngprocs;
	struct gpu_proc *gscratch;
	struct event_record *gevents;
	size_t ngevents;

	struct rollup_acc host_acc[AHM__COUNT][2]; /* [metric][tier] */
	struct rollup_acc gpu_acc[GPU_MAX_DEVICES][AGM__COUNT][2];
	struct agent_job_rollup *jroll;
	size_t njroll, jroll_alloc;

	int64_t ticks, lost_ticks;
	int lost_err;
	double last_tick_s;
	uint64_t self_cpu_ms;
	uint64_t self_rss_bytes;
	uint64_t store_bytes;
	int64_t retention_next_ms;
	int64_t retention_deleted;

	struct sender *sender; /* the stream to a head, or NULL */
	char agent_id[64];

	/* the HTTP side */
	struct http_server *http;
	pthread_mutex_t view_lock;
	struct agent_view *view; /* the current one, swapped each tick */
	struct store *read_st;	 /* the HTTP thread's own connection */
	uint64_t scrapes;
};

/* Renders the endpoints' bodies for the state after a tick. */
int agent_render(struct agent *a, struct agent_view *v);
void agent_view_free(struct agent_view *v);
/* The HTTP handler (runs on the server's thread). */
void agent_http(void *arg, const struct http_request *req, struct http_response *res);

#endif
