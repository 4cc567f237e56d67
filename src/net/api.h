/*
 * api.h - parsing the JSON bodies of the head's mutating calls (gswarm's
 * POST /profiling/start and /profiling/stop).  Pure: bytes in, a struct or
 * -EINVAL with a message out; any bytes are safe (fuzzed).
 */
#ifndef JOBSCOPE_API_H
#define JOBSCOPE_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/*
 * {"name"?: str, "interval_ms"?: 100..3600000, "nodes"?: [str] | "a,b",
 *  "report_metrics"?: ignored}; an empty body is {}.  A missing name becomes
 * "session_<now_ms>".  Names: 1-127 of [A-Za-z0-9._-]; node names have no
 * ',' and no control characters.
 */
int api_parse_session_start(const char *body, size_t len, int64_t now_ms,
			    struct session_record *out, char *err, size_t err_size);
/* {"name"?: str}: *has_name false stops every active session. */
int api_parse_session_stop(const char *body, size_t len, char *name, size_t name_size,
			   bool *has_name, char *err, size_t err_size);
bool api_session_name_ok(const char *name);

#endif
