/*
 * head.h - the head: the collector that takes the agents' streams into one
 * store and answers the cluster's questions over HTTP (docs/wire.md,
 * docs/http-api.md).
 *
 * head_main() runs it: tokens and store opened, the HTTP server started,
 * then it waits for SIGTERM/SIGINT (the server is stopped: a batch in
 * flight is either committed and answered or not answered, and the agent
 * resends it) and SIGHUP (the log file reopened).
 *
 * Threads: the HTTP server's pool (epoll) runs the handlers; ingest
 * decodes there and queues the batch for the committer thread (ingest.c),
 * which alone writes with the store's write connection, a group of
 * batches per transaction.  The dispatcher (routes.c) gives every other
 * handler a view of struct head whose `st` is a connection of its own for
 * the request: a read connection from the pool (WAL: reads never wait for
 * a commit), or, for the admin routes (session start and stop), the write
 * connection under wlock.  The handlers below thus use h->st without a lock.
 *
 * Requests go through the route table (routes.c): each route has one
 * access (public, read, ingest, admin) that auth.c checks before its
 * handler runs.  No SQL here: reads are the store's named queries
 * (store/queries.h).
 *
 * Ownership: struct head owns its store and its buffers, released by
 * head_main before it returns.  Errors: see head_main.
 */
#ifndef JOBSCOPE_HEAD_H
#define JOBSCOPE_HEAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/jsonw.h"
#include "http/access.h"
#include "http/http.h"
#include "net/k8s_annotate.h"
#include "prom/remote_write.h"
#include "store/store.h"
#include "store/profiling.h"
#include "store/sync.h"
#include "store/upkeep.h"

#define HEAD_DEFAULT_DB		 "/var/lib/jobscope/head.db"
#define HEAD_DEFAULT_LISTEN	 "0.0.0.0:8091"
#define HEAD_DEFAULT_USER_HEADER "X-Remote-User"
#define HEAD_UNHEALTHY_INTERVALS 3

struct head_opts {
	const char *listen; /* "ADDR:PORT" */
	const char *db;
	const char *token_file;
	const char *admin_token_file;
	const char *read_token_file;
	const char *auth;	   /* "munge" or NULL */
	const char *munge_socket;  /* NULL: $JOBSCOPE_MUNGE_SOCKET, else munged's default */
	const char *trusted_proxy; /* "ADDR[/BITS],..." or NULL */
	const char *user_header;   /* NULL: HEAD_DEFAULT_USER_HEADER */
	const char *admins;	   /* "USER,@GROUP,..." or NULL */
	bool insecure;		   /* serve any address without a token */
	const char *tls_cert_file, *tls_key_file;
	const char *log_file;
	int64_t exit_after_ms;	   /* 0: until a signal (tests set it) */
	unsigned max_conns;	   /* 0: HEAD_DEFAULT_CONNS, lowered to what the fd limit allows */
	unsigned max_conns_per_ip; /* 0: HEAD_DEFAULT_CONNS_PER_IP */
	unsigned threads;	   /* HTTP threads; 0: one per CPU (at least 2, at most 16) */
	int64_t ckpt_lag_ms;	   /* a running job's report checkpoint lag; 0: 1 h */
	int64_t retention_ms;	   /* samples older than this go (store_drop_before); 0: kept */
	const char *session_dir;   /* a stopped session's files go there; NULL: none */
	struct rw_opts rw;	   /* --remote-write targets and their options */
	struct k8s_annotate_opts k8s; /* --k8s-annotate and its options */
	int64_t lease_ms; /* PostgreSQL: the upkeep lease's length; 0: HEAD_DEFAULT_LEASE_MS */
};
#define HEAD_DEFAULT_LEASE_MS	  15000
#define HEAD_DEFAULT_CONNS	  16384
#define HEAD_DEFAULT_CONNS_PER_IP 512
#define HEAD_HEADER_TIMEOUT_S	  10  /* a connection whose request headers stall */
#define HEAD_IDLE_TIMEOUT_S	  120 /* an idle keep-alive connection */

/* How head_main ended, for the caller's exit code. */
enum head_result {
	HEAD_OK,	  /* stopped by a signal or exit_after_ms */
	HEAD_FAIL_SETUP,  /* what the options name is unusable: a token or TLS file, the
			     store, the listen address (said why) */
	HEAD_FAIL_SYSTEM, /* the system refused a resource (signalfd) */
};

/* Runs the head until it is told to stop. */
enum head_result head_main(const struct head_opts *o);

/* Between the head's files. */
struct head_ingest;
struct head_readers;
struct head_worker;
struct head {
	const struct head_opts *opt;
	struct store *st;     /* in a handler's view: the request's connection (see above) */
	struct store *writer; /* the one write connection, under wlock */
	pthread_mutex_t wlock;
	struct head_readers *readers;  /* head.c: the read connections */
	struct head_ingest *ing;       /* ingest.c: the queue and the committer */
	struct head_worker *ckpt;      /* head.c: WAL checkpoints beside the committer */
	struct head_worker *reports;   /* head.c: report checkpoints, on a thread of their own */
	struct head_worker *retention; /* head.c: --retention, on a thread of its own */
	struct head_worker *lease;     /* head.c: PostgreSQL: the heartbeat and the upkeep lease */
	struct head_record me;	       /* head.c: this head as the heads table lists it */
	int64_t lease_ms;
	/*
	 * head.c: whether this head runs the upkeep (retention, report
	 * checkpoints, remote write, annotations): always with a file; with
	 * PostgreSQL while it holds the lease, until upkeep_until_ns (the
	 * monotonic clock) unless renewed.  Under upkeep_lock, with rw and k8s,
	 * which run only then.
	 */
	pthread_mutex_t upkeep_lock;
	bool upkeep;
	int64_t upkeep_until_ns;
	struct rw *rw;
	struct k8s_annotate *k8s;
	bool writer_is_pg;	  /* --db is PostgreSQL: any number of heads share it */
	int sqlite_lock_fd;	  /* a file's head: its flock (one head per file); else -1 */
	unsigned max_conns;	  /* what the server was started with */
	struct access_policy acc; /* auth.c: tokens, MUNGE, the proxy, admins */
	struct caller who;	  /* in a view: who asked (routes.c) */
	int64_t started_ms;
	uint64_t batches, refused, groups; /* in a view: the counters when the request came */
	/* in a view: the sessions its request stopped, whose files are then written */
	struct session_record *stopped;
	size_t nstopped;
};

/* head.c: whether this head runs the upkeep now (see struct head). */
bool head_runs_upkeep(struct head *h);

/* head.c: a read connection for one request (waits for a free one), and its return. */
struct store *head_reader_get(struct head *h);
void head_reader_put(struct head *h, struct store *st);

/* ingest.c: the committer thread, started before the HTTP server and stopped after it. */
int head_ingest_start(struct head *h);
/*
 * Answers every queued batch (committed first), then stops the thread;
 * batches that come later are answered 503.  head_ingest_free, once the
 * HTTP server is stopped, frees the queue.
 */
void head_ingest_stop(struct head *h);
void head_ingest_free(struct head *h);
void head_ingest_counters(const struct head *h, uint64_t *batches, uint64_t *refused,
			  uint64_t *groups);

/*
 * auth.c: the options' access policy into h->acc: 0 or -errno (said why);
 * -EPERM for a non-loopback --listen with neither --token-file nor --insecure.
 */
int head_auth_load(struct head *h, const struct head_opts *o);
/* A view's caller: whether it sees every user's jobs, else those of h->who.user. */
bool head_sees_all(const struct head *h);

/* routes.c: the HTTP server's handler (arg: the struct head). */
void head_http(void *arg, const struct http_request *req, struct http_response *res);

/* The routes' handlers (arg: the struct head), by file. */
/* ingest.c */
void head_ingest(void *arg, const struct http_request *req, struct http_response *res);
void head_ingest_not_post(void *arg, const struct http_request *req, struct http_response *res);
/* sessions.c */
bool head_session_visible(const struct head *h, const struct session_record *s);
void head_session_start(void *arg, const struct http_request *req, struct http_response *res);
void head_session_stop(void *arg, const struct http_request *req, struct http_response *res);
void head_session_not_post(void *arg, const struct http_request *req, struct http_response *res);
void head_sessions(void *arg, const struct http_request *req, struct http_response *res);
/* /api/v1/sessions/NAME/export and /api/v1/sessions/NAME: name is the decoded NAME */
void head_session_export(void *arg, const char *name, const struct http_request *req,
			 struct http_response *res);
/* With --session-dir: each stopped session's <file>.json (gswarm's) and <file>.png. */
void head_session_files(struct head *h, const struct session_record *s, size_t n,
			struct http_response *res);
/* A session as /profiling/sessions and /status list it. */
void head_session_json(struct jsonw *w, const struct session_record *s, int64_t now_ms);
/* status.c */
/* gswarm.c: gswarm-profiler's shapes */
bool head_agent_connected(const struct agent_record *a, int64_t now_ms);
/* The file (in --session-dir) of a session's name, with ext (".json"): any name is one file. */
#define HEAD_SESSION_FILE_MAX 256
void head_session_file(const char *name, const char *ext, char *buf, size_t size);
struct head_gpu {
	char agent_id[64], hostname[256], uuid[GPU_UUID_MAX], name[GPU_NAME_MAX];
	int idx;
	bool has_mem;
	int64_t mem_total_bytes;
};
struct head_gpu_list {
	struct head_gpu *v;
	size_t n, cap;
};
/* Every GPU of every agent's node (and of nodes without one: agent ""), by agent and index. */
int head_gpu_list_load(struct store *st, struct head_gpu_list *l);
void head_gpu_list_release(struct head_gpu_list *l);
/* The GPUs of one agent as gswarm lists them (an array); returns how many. */
int head_gpus_of_json(struct jsonw *w, const struct head_gpu_list *l, const char *agent_id);
/* "client_data": {agent_id: gswarm's latest payload} of the connected agents */
int head_client_data_json(struct store *st, struct jsonw *w, int64_t now_ms);
void head_request_record(void *arg, const struct http_request *req, struct http_response *res);

void head_root(void *arg, const struct http_request *req, struct http_response *res);
void head_status(void *arg, const struct http_request *req, struct http_response *res);
void head_clients(void *arg, const struct http_request *req, struct http_response *res);
/* api.c: the read API */
void head_api_whoami(void *arg, const struct http_request *req, struct http_response *res);
void head_api_nodes(void *arg, const struct http_request *req, struct http_response *res);
void head_api_gpus(void *arg, const struct http_request *req, struct http_response *res);
void head_api_jobs(void *arg, const struct http_request *req, struct http_response *res);
void head_api_job(void *arg, const struct http_request *req, struct http_response *res);
void head_api_session(void *arg, const char *name, const struct http_request *req,
		      struct http_response *res);
void head_api_series(void *arg, const struct http_request *req, struct http_response *res);
void head_api_report(void *arg, const struct http_request *req, struct http_response *res);
void head_metrics_latest(void *arg, const struct http_request *req, struct http_response *res);
void head_metrics(void *arg, const struct http_request *req, struct http_response *res);

#endif
