/*
 * head.h - the head: the collector that takes the agents' streams into one
 * store and answers the cluster's questions over HTTP (docs/wire.md,
 * docs/http-api.md).
 *
 * head_main() runs it: tokens and store opened, the HTTP server started,
 * then it waits for SIGTERM/SIGINT (the server is stopped: a batch in
 * flight is either committed and answered or not answered, and the agent
 * resends it) and SIGHUP (the log file reopened).  Every request runs on
 * the HTTP server's one thread, which alone uses the store: the handlers
 * below need no lock.
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

#include <stdbool.h>
#include <stdint.h>

#include "common/jsonw.h"
#include "net/http.h"
#include "store/store.h"

#define HEAD_DEFAULT_DB		 "/var/lib/jobscope/head.db"
#define HEAD_DEFAULT_LISTEN	 "0.0.0.0:8091"
#define HEAD_TOKEN_MAX		 256
#define HEAD_UNHEALTHY_INTERVALS 3

struct head_opts {
	const char *listen; /* "ADDR:PORT" */
	const char *db;
	const char *token_file;
	const char *admin_token_file;
	const char *read_token_file;
	const char *tls_cert_file, *tls_key_file;
	const char *log_file;
	int64_t exit_after_ms; /* 0: until a signal (tests set it) */
};

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
struct head {
	const struct head_opts *opt;
	struct store *st;
	char token[HEAD_TOKEN_MAX];
	bool has_token;
	char admin_token[HEAD_TOKEN_MAX];
	bool has_admin_token;
	char read_token[HEAD_TOKEN_MAX];
	bool has_read_token;
	int64_t started_ms;
	uint64_t batches, refused;
	struct strbuf inflated; /* a zstd body, decompressed */
};

/* auth.c: the token files into h: 0 or -errno (said why). */
int head_auth_load(struct head *h, const struct head_opts *o);
/* auth.c: whether req may use a route of that access; if not, res holds the 401 or 403. */
bool head_auth_check(const struct head *h, enum http_access access, const struct http_request *req,
		     struct http_response *res);

/* routes.c: the HTTP server's handler (arg: the struct head). */
void head_http(void *arg, const struct http_request *req, struct http_response *res);

/* The routes' handlers (arg: the struct head), by file. */
/* ingest.c */
void head_ingest(void *arg, const struct http_request *req, struct http_response *res);
void head_ingest_not_post(void *arg, const struct http_request *req, struct http_response *res);
/* sessions.c */
void head_session_start(void *arg, const struct http_request *req, struct http_response *res);
void head_session_stop(void *arg, const struct http_request *req, struct http_response *res);
void head_session_not_post(void *arg, const struct http_request *req, struct http_response *res);
void head_sessions(void *arg, const struct http_request *req, struct http_response *res);
void head_session_export(void *arg, const struct http_request *req, struct http_response *res);
/* A session as /profiling/sessions and /status list it. */
void head_session_json(struct jsonw *w, const struct session_record *s);
/* status.c */
void head_root(void *arg, const struct http_request *req, struct http_response *res);
void head_status(void *arg, const struct http_request *req, struct http_response *res);
void head_clients(void *arg, const struct http_request *req, struct http_response *res);
/* api.c: the read API */
void head_api_nodes(void *arg, const struct http_request *req, struct http_response *res);
void head_api_gpus(void *arg, const struct http_request *req, struct http_response *res);
void head_api_jobs(void *arg, const struct http_request *req, struct http_response *res);
void head_api_job(void *arg, const struct http_request *req, struct http_response *res);
void head_api_session(void *arg, const struct http_request *req, struct http_response *res);
void head_api_series(void *arg, const struct http_request *req, struct http_response *res);
void head_api_report(void *arg, const struct http_request *req, struct http_response *res);
void head_metrics_latest(void *arg, const struct http_request *req, struct http_response *res);
void head_metrics(void *arg, const struct http_request *req, struct http_response *res);

#endif
