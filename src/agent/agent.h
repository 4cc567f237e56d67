/*
 * agent.h - the node daemon (`jobscope agent`): every process, cgroup and
 * GPU of the node, attributed to jobs, stored with retention, served over
 * HTTP and streamed to a head.
 *
 * Contract.  agent_main() runs the agent until SIGTERM or SIGINT (or
 * opts->exit_after_ms): setup (agent.c), a tick per interval (tick.c: a
 * list of module calls), the views (render.c) and the endpoints
 * (routes.c).  It returns 0, or -errno with a message printed; *failure
 * then says what failed, for the exit status.  The options are the
 * caller's and must outlive the call.
 *
 * Threads.  The sampler thread owns struct agent.  After each tick it
 * renders the endpoints' bodies into a fresh struct agent_view and swaps
 * it in under view_lock; the HTTP thread only reads views (and the store,
 * through its own read-only connection), so a scrape never waits for a
 * tick and never sees half of one.  The jobs' objects (each with its
 * processes: most of a view's cost at a thousand processes) are rendered
 * at a tick only when a request asked for them since the one before;
 * otherwise the first request that needs them wakes the sampler thread
 * (view_efd), which renders them into the current view between ticks, and
 * waits for them on view_cond.  The rest of this header is for the
 * module's own files.
 */
#ifndef JOBSCOPE_AGENT_H
#define JOBSCOPE_AGENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "attrib/jobs.h"
#include "common/jsonw.h"
#include "common/progress.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "app/statsd.h"
#include "cuda/collect.h"
#include "http/access.h"
#include "http/http.h"
#include "prom/remote_write.h"
#include "net/kubelet.h"
#include "net/k8s_annotate.h"
#include "net/sender.h"
#include "sample/gpu/gpu_set.h"
#include "sample/host.h"
#include "sample/ptree.h"
#include "store/rollup.h"
#include "store/store.h"
#include "store/reader.h"
#include "store/upkeep.h"

#define AGENT_MIN_INTERVAL_MS 100
#define AGENT_STOP_TIMEOUT_MS 2000 /* --stop-timeout default */
#define AGENT_MAX_GPU_PROCS   4096
#define AGENT_MAX_GPU_EVENTS  64
/*
 * --pack-after's default: raw rows older than 10 minutes are packed
 * (store.h), every 10 minutes; plain rows cost 6 to 9 bytes a value with
 * their indexes, so an hour's worth would be most of a day's file
 * (bench/agent_day.py)
 */
#define AGENT_PACK_AFTER_MS 600000
/* How long a request waits for the jobs' view the sampler thread renders for it */
#define AGENT_VIEW_WAIT_MS 2000

struct agent_opts {
	int64_t interval_ms;
	const char *db;
	const char *listen; /* NULL or "none": no HTTP */
	const char *log_file;
	struct store_retention retention;
	int64_t exit_after_ms;	     /* hidden, for tests and benchmarks: 0 = run until signalled */
	const char *head;	     /* --head URL: stream to a head (the first of heads) */
	const char *token_file;	     /* its bearer token */
	const char *read_token_file; /* --read-token-file: its API's readers' token */
	bool insecure;		     /* --insecure: its API open on any address */
	const char *ca_file;	     /* CA to trust for an https head */
	int64_t pack_after_ms;	     /* --pack-after: 0 = never */
	int64_t ckpt_lag_ms;	     /* --report-checkpoint: a running job's checkpoint lag */
	int64_t stop_timeout_ms;     /* --stop-timeout: the wait for the head at a stop */
	unsigned compat;	     /* --compat: enum agent_compat bits */
	struct rw_opts rw;	     /* --remote-write targets and their options */
	struct k8s_annotate_opts k8s; /* --k8s-annotate and its options */
	bool sim_clock;		      /* hidden, benchmarks: ticks back to back, an interval each */
	const char *cuda_socket;      /* --cuda-socket: the CUDA hook's receiver, or NULL */
	bool cuda_always;	      /* --cuda-always: record without a session */
	const char *k8s_bundle_dir;   /* --k8s-bundle-dir: pods' bundles, or NULL */
	const char *cri_socket;	      /* --cri-socket: owner hints, or NULL */
	const char *statsd_socket; /* --statsd-socket: app metrics over Unix datagrams, or NULL */
	char statsd_udp_addr[64];  /* --statsd-udp ADDR:PORT ("" and 0: none) */
	uint16_t statsd_udp_port;
	bool progress; /* a catch-up's progress on stderr (run on a terminal, no --log-file) */
	/* --pod-resources-socket: the kubelet's; NULL = its default path, "none" = not asked */
	const char *pod_resources_socket;
	const char *test_pod_name; /* hidden, tests: "UID=NS/POD" names that pod's job */
	/* --head, each of them (repeatable): the heads tried in turn (net/sender.h) */
	const char *heads[SENDER_MAX_URLS];
	int nheads;
};

/* --compat: other exporters' series on /metrics too (compat.c, docs/compat.md). */
enum agent_compat {
	AGENT_COMPAT_JOBSTATS = 1u << 0, /* cgroup_exporter + nvidia_gpu_prometheus_exporter */
	AGENT_COMPAT_DCGM = 1u << 1,	 /* dcgm-exporter */
};

/* "jobstats", "dcgm" or both comma-separated into *out's bits: 0, or -1 for a bad list. */
int agent_compat_parse(const char *list, unsigned *out);

/* What made agent_main fail. */
enum agent_failure {
	AGENT_FAIL_SETUP,  /* what the options name cannot be used: store, log, address, token */
	AGENT_FAIL_SYSTEM, /* out of memory, descriptors, poll */
};

int agent_main(const struct agent_opts *o, enum agent_failure *failure);

/* One job's live figures, as rendered into a view. */
struct agent_view_job {
	char key[JOB_KEY_MAX];
	char scheduler[16];
	char job_id[64];
	int64_t store_id;	   /* its row in the store, 0 until stored */
	size_t json_off, json_len; /* its object in view->job_json */
	size_t fields_len;	   /* its start up to its processes: the job's own fields */
};

/* The bodies of a tick; /api/v1/jobs is a page of the store, its live jobs from here. */
struct agent_view {
	struct strbuf metrics;
	struct strbuf node;
	struct strbuf gpus;
	struct strbuf job_json;
	struct agent_view_job *job;
	size_t njobs;
	bool has_jobs; /* job, njobs and job_json rendered (render.c) */
};

/* A job's rollup accumulators, and what its rates need, while it runs. */
struct agent_job_rollup {
	int64_t job_row;
	bool live;
	struct rollup_acc acc[ROLLUP_JOB__COUNT][ROLLUP_TIERS];
	struct job_sample prev; /* the job's sample at prev_ts: its rates' reading before */
	int64_t prev_ts;
};

struct agent {
	const struct agent_opts *opt;
	struct access_policy acc; /* who reads its API (routes.c): open on loopback */
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
	/* each device's rollup values of this tick, made while gprev is the previous reading */
	struct rollup_gpu_values groll[GPU_MAX_DEVICES];
	struct gpu_set_procs gprocs; /* every device's processes at this tick */
	struct event_record *gevents;
	size_t ngevents;

	struct rollup_acc host_acc[ROLLUP_HOST__COUNT][ROLLUP_TIERS]; /* [metric][tier] */
	struct rollup_acc gpu_acc[GPU_MAX_DEVICES][ROLLUP_GPU__COUNT][ROLLUP_TIERS];
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
	struct store_packer packer; /* --pack-after */
	int64_t ckpt_next_ms;	    /* report checkpoints: when to look next */
	int64_t ckpts_made;
	/*
	 * Rows the size cap deleted before the head held them (with a head
	 * only): totals kept in the store's meta, the last gap record, and
	 * the head's cursor as the store kept it (the retention bound until
	 * the sender hears from the head).
	 */
	bool retention_loaded, losing;
	int64_t lost_rows, gaps;
	struct store_head_bound head_kept;
	bool has_last_gap;
	struct store_gap last_gap;

	/*
	 * --cuda-socket: the hooks of the node's CUDA processes; on while
	 * --cuda-always or a head's session asks (cuda.c).
	 */
	struct cuda_collector cuda;
	bool cuda_on;
	int cuda_err; /* the last store failure said */
	bool cuda_warned_nojob;

	/*
	 * --statsd-socket, --statsd-udp: app metrics and markers, one
	 * aggregator per sender (a pid, or a UDP line's job tag), stored per
	 * job after each tick; each job's totals for /metrics (app.c).
	 */
	struct app_collector app;
	struct agent_app_src *app_src;
	size_t app_nsrc, app_alloc;
	uint32_t *app_src_slot;		      /* the senders' index (app.c) */
	struct agent_app_series **app_by_job; /* the live series by job, for the JSON (app.c) */
	size_t app_by_job_n, app_by_job_alloc;
	struct agent_app_series **app_series; /* open-addressed by job and metric */
	size_t app_nseries, app_series_cap;
	uint64_t app_lines, app_bad, app_dropped, app_untagged; /* lines: all, not valid, over a
								   cap, UDP without a job tag */
	uint64_t app_unattributed, app_lost; /* points and markers: no job, not stored */
	bool app_warned_nojob;
	int app_err;
	int64_t app_now_ms;

	/*
	 * The kubelet's pod-resources (--pod-resources-socket): asked on the
	 * poller's thread, the latest answer taken at each tick and the
	 * devices of each pod made its job's GPU reservation (tick.c).
	 */
	struct kubelet_poller *podres;
	struct podres_table podres_table;
	uint64_t podres_gen;

	struct sender *sender;	       /* the stream to a head, or NULL */
	struct progress_meter catchup; /* its catch-ups, on a terminal (opt->progress) */
	struct rw *rw;		       /* remote write (--remote-write), or NULL */
	struct k8s_annotate *k8s;      /* the annotation writer (--k8s-annotate), or NULL */
	char agent_id[64];

	/* the HTTP side */
	struct http_server *http;
	pthread_mutex_t view_lock;
	pthread_cond_t view_cond; /* the jobs rendered into the view */
	int view_efd;		  /* the HTTP thread asks the sampler thread for them */
	bool jobs_asked;	  /* a request needed them since the last tick */
	bool jobs_wanted;	  /* one waits for them now */
	bool view_stopping;	  /* the sampler thread asks no more: nobody waits */
	uint64_t jobs_views_tick, jobs_views_asked; /* jobs' objects rendered: at a tick, asked */
	struct agent_view *view;  /* the current one, swapped each tick */
	struct store *read_st;	  /* the HTTP thread's own connection */
	uint64_t scrapes;
	bool cri_warned;     /* --cri-socket's failure said */
	int64_t cri_next_ms; /* when to ask it again (agent/k8s.c) */
};

/* tick.c: one tick, from sampling to the published view. */
void agent_tick(struct agent *a);
/* ... and on exit, every open rollup bucket written (in the caller's transaction). */
void agent_rollups_flush_all(struct agent *a);

/*
 * The store row of the job a pid is attributed to: 0 and *job_id;
 * -EAGAIN (not known yet: next tick), -ENOENT (none).  With *je when not NULL.
 */
int agent_job_of_pid(struct agent *a, int32_t pid, int64_t *job_id, struct job_entry **je);

/* app.c: the StatsD receiver (--statsd-socket, --statsd-udp). */
int agent_app_setup(struct agent *a);
size_t agent_app_fds(const struct agent *a, struct pollfd *fds, size_t max);
void agent_app_handle(struct agent *a, const struct pollfd *fds, size_t n);
/* After a tick: each sender's points and markers stored under its job. */
void agent_app_tick(struct agent *a, int64_t ts_ms);
/* The app series on /metrics: each live job's totals. */
void agent_render_app(const struct agent *a, struct strbuf *o, struct strbuf *lab);
/*
 * A running job's app metrics in its JSON: "app", an array of its live
 * series' totals since first seen (null without a StatsD receiver), from
 * the list agent_app_json_begin sorts once a render.
 */
void agent_app_json_begin(struct agent *a);
void agent_app_json(struct jsonw *w, const struct agent *a, int64_t job_id);
void agent_app_release(struct agent *a);

/* cuda.c: the CUDA hooks' receiver (--cuda-socket). */
int agent_cuda_setup(struct agent *a);
/* After a tick: on or off as the sessions say, and the snapshots that changed stored. */
void agent_cuda_tick(struct agent *a, int64_t interval_ms);
void agent_cuda_release(struct agent *a);

/* k8s.c: after a tick's jobs, new pods' owner hints from --cri-socket. */
void agent_k8s_tick(struct agent *a, int64_t ts_ms);

/* compat.c: the --compat series, after ours. */
void agent_render_compat(const struct agent *a, struct strbuf *o, struct strbuf *lab);
/* Whether the job's scheduler reserved the device for it (its GPU list names it). */
bool agent_compat_reserves(const struct job_record *r, const struct gpu_device_info *d);

/*
 * render.c, for compat.c too: a sample's GPM figure (bit: one enum
 * gpu_prof GPM bit), its percent x 100 divided by div (100: percent,
 * 10000: a ratio 0-1), NAN when the driver gave none; a violation
 * counter (bit: one GPU_PROF_VIOL_* bit) in ns, -1 when none; and the
 * violation reasons with their names (our `reason` label, dcgm-exporter's
 * field where it has one, else NULL).
 */
double agent_prof_value(const struct gpu_sample *g, uint32_t bit, double div);
int64_t agent_viol_ns(const struct gpu_sample *g, uint32_t bit);
#define AGENT_VIOL_REASONS 11
struct agent_viol_reason {
	uint32_t bit;
	const char *reason;	      /* "power", "thermal", ... */
	const char *dcgm, *dcgm_help; /* DCGM_FI_DEV_POWER_VIOLATION (ns) and its HELP */
};
extern const struct agent_viol_reason agent_viol_reasons[AGENT_VIOL_REASONS];

/* render.c: the endpoints' bodies for the state after a tick; the jobs' only with_jobs. */
int agent_render(struct agent *a, struct agent_view *v, bool with_jobs);
/*
 * The fields of a job the store holds (a row of store_query_jobs) in the
 * shape of a live job's object, for the caller to open and close: no
 * usage and no GPUs now, its summary's totals when it has one.
 */
struct store_row;
void agent_json_stored_job(struct jsonw *w, const struct store_row *r);
void agent_view_free(struct agent_view *v);
/* Renders a view and swaps it in for the HTTP thread. */
void agent_publish_view(struct agent *a);
/* The sampler thread, woken by view_efd: the jobs into the current view, for those waiting. */
void agent_view_jobs(struct agent *a);

/* routes.c: the HTTP handler (runs on the server's thread). */
void agent_http(void *arg, const struct http_request *req, struct http_response *res);

#endif
