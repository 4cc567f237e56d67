/*
 * cli_rw.c - the remote-write options, the same on `jobscope agent` and
 * `jobscope head` (docs/remote-write.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/timeutil.h"
#include "prom/remote_write.h"

int cli_rw_option(const char *cmd, struct rw_opts *o, int c, const char *arg)
{
	struct rw_rule rule;
	const char *why;
	char *end;
	long long n;

	switch (c) {
	case CLI_RW_URL:
		if (strncmp(arg, "http://", 7) != 0 && strncmp(arg, "https://", 8) != 0)
			return cli_usage_error(cmd, "bad --remote-write '%s' (http://HOST:PORT/PATH)",
					       arg);
		if (o->nurls >= RW_MAX_TARGETS)
			return cli_usage_error(cmd, "at most %d --remote-write targets",
					       RW_MAX_TARGETS);
		o->urls[o->nurls++] = arg;
		return 0;
	case CLI_RW_BEARER:
		o->bearer_token_file = arg;
		return 0;
	case CLI_RW_BASIC:
		o->basic_auth_file = arg;
		return 0;
	case CLI_RW_CA:
		o->ca_file = arg;
		return 0;
	case CLI_RW_RELABEL:
		if (rw_relabel_parse(arg, &rule, &why)) {
			rw_relabel_free(&rule);
			return cli_usage_error(cmd, "bad --rw-relabel '%s': %s", arg, why);
		}
		rw_relabel_free(&rule);
		if (o->nrelabel >= RW_RELABEL_MAX)
			return cli_usage_error(cmd, "at most %d --rw-relabel rules", RW_RELABEL_MAX);
		o->relabel[o->nrelabel++] = arg;
		return 0;
	case CLI_RW_MAX_SERIES:
		errno = 0;
		n = strtoll(arg, &end, 10);
		if (!*arg || *end || errno || n < 1 || n > 1000000)
			return cli_usage_error(cmd, "bad --rw-max-series '%s' (1 to 1000000)", arg);
		o->max_series = n;
		return 0;
	case CLI_RW_BATCH:
		if (parse_duration_ms(arg, &o->batch_ms) || o->batch_ms > 3600000)
			return cli_usage_error(cmd, "bad --rw-batch '%s' (0 to 1h, e.g. 5s)", arg);
		if (o->batch_ms == 0)
			o->batch_ms = -1; /* every tick (0 in rw_opts is the default) */
		return 0;
	default:
		return -ENOENT;
	}
}
