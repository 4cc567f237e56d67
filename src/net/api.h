/*
 * api.h - parsing what the HTTP APIs are asked: the JSON bodies of the
 * head's mutating calls (gswarm's POST /profiling/start and
 * /profiling/stop), and the query of GET /api/v1/jobs, the same on the
 * agent and the head.  Pure: text in, a struct or -EINVAL with a message
 * out; any bytes are safe (fuzzed).
 */
#ifndef JOBSCOPE_API_H
#define JOBSCOPE_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/http.h"
#include "store/queries.h"
#include "store/store.h"
#include "store/profiling.h"

/*
 * {"name"?: str, "interval_ms"?: 100..3600000, "nodes"?: [str] | "a,b",
 *  "report_metrics"?: ignored}; an empty body is {}.  A missing or empty name
 * becomes gswarm's "gswarm_profiler_YYYYmmdd_HHMMSS" (local time).  Names:
 * API_SESSION_NAME_RULE; node names have no ',' and no control characters.
 * A body with an escaped NUL (\u0000) in it is refused.
 */
#define API_SESSION_NAME_RULE                                                                      \
	"name: 1 to 127 bytes of UTF-8 text without control characters"
int api_parse_session_start(const char *body, size_t len, int64_t now_ms,
			    struct session_record *out, char *err, size_t err_size);
/* {"name"?: str}: *has_name false stops every active session. */
int api_parse_session_stop(const char *body, size_t len, char *name, size_t name_size,
			   bool *has_name, char *err, size_t err_size);
bool api_session_name_ok(const char *name);

/*
 * gswarm's POST /profiling/record (and /record_time): {"app_name": str,
 * "queue_time": s, "processing_time": s, "other_time"?: {str: s} | null}.
 * Seconds, finite and >= 0; app_name 1..REQUEST_APP_MAX-1 bytes of text as
 * a session's name; other_time at most API_OTHER_TIMES_MAX keys, each
 * 1..127 bytes, re-serialized into other (NULL when absent or empty).
 * *missing: a field absent or of the wrong type (FastAPI's 422), rather
 * than a value out of range (400).  The caller frees r->other.
 */
#define API_OTHER_TIMES_MAX 64
int api_parse_request_record(const char *body, size_t len, int64_t now_ms,
			     struct request_record *r, bool *missing, char *err, size_t err_size);

/*
 * GET /api/v1/jobs?state=&user=&node=&since=&until=&limit=&cursor=: each
 * parameter as arg(ctx, name) gives it (NULL or "": absent) into f, which
 * the caller then completes (with_sessions).  state: running, ended or all
 * (default); since, until: parse_time_ms's (now_ms for ages), since not
 * after until; limit: 1..STORE_JOBS_LIMIT_MAX (default
 * STORE_JOBS_LIMIT_DEFAULT); cursor: a page's "next".  The strings in f
 * are arg's.
 */
typedef const char *(*api_arg_fn)(void *ctx, const char *name);
int api_parse_jobs_query(api_arg_fn arg, void *ctx, int64_t now_ms, struct store_jobs_filter *f,
			 char *err, size_t err_size);
/* The same, of a request's query string. */
int api_jobs_query(const struct http_request *req, int64_t now_ms, struct store_jobs_filter *f,
		   char *err, size_t err_size);

#endif
