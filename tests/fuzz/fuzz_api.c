/*
 * fuzz_api.c - libFuzzer target for the head's mutating calls' bodies
 * (POST /profiling/start, /profiling/stop and /profiling/record): any bytes
 * give a request or -EINVAL with a message, and an accepted request keeps
 * its promises.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/api.h"
#include "store/profiling.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1), err[256], name[SESSION_NAME_MAX];
	struct session_record s;
	struct request_record r;
	bool has_name, missing;
	int ret;

	if (!buf)
		abort();
	memcpy(buf, data, size);
	err[0] = '\0';
	ret = api_parse_session_start(buf, size, 1700000000000, &s, err, sizeof(err));
	if (ret == 0) {
		if (!api_session_name_ok(s.name) || strnlen(s.nodes, sizeof(s.nodes)) >= sizeof(s.nodes) ||
		    (s.interval_ms != 0 && (s.interval_ms < 100 || s.interval_ms > 3600000)))
			abort();
	} else if (ret != -EINVAL || !err[0]) {
		abort();
	}
	err[0] = '\0';
	ret = api_parse_session_stop(buf, size, name, sizeof(name), &has_name, err, sizeof(err));
	if (ret == 0 && has_name && strnlen(name, sizeof(name)) >= sizeof(name))
		abort();
	if (ret != 0 && (ret != -EINVAL || !err[0]))
		abort();
	err[0] = '\0';
	ret = api_parse_request_record(buf, size, 1700000000000, &r, &missing, err, sizeof(err));
	if (ret == 0 && (!api_session_name_ok(r.app) && strlen(r.app) < SESSION_NAME_MAX))
		abort();
	if (ret == 0 && (!(r.queue_s >= 0) || !(r.processing_s >= 0) || r.ts_ms != 1700000000000))
		abort();
	if (ret != 0 && (ret != -EINVAL || !err[0] || r.other))
		abort();
	free((char *)r.other);
	free(buf);
	return 0;
}
