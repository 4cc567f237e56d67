/*
 * cli_rw.c - the remote-write options, the same on `jobscope agent` and
 * `jobscope head` (cli.h: CLI_RW_OPTIONS; docs/remote-write.md).
 */
#include <string.h>

#include "cli.h"
#include "common/timeutil.h"
#include "prom/remote_write.h"

int cli_rw_url(const struct opt *opt, const char *arg)
{
	struct rw_opts *o = opt->value;

	if (strncmp(arg, "http://", 7) != 0 && strncmp(arg, "https://", 8) != 0)
		return usage_error(opt_command(), "bad --remote-write '%s' (http://HOST:PORT/PATH)",
				   arg);
	if (o->nurls >= RW_MAX_TARGETS)
		return usage_error(opt_command(), "at most %d --remote-write targets",
				   RW_MAX_TARGETS);
	o->urls[o->nurls++] = arg;
	return 0;
}

int cli_rw_relabel(const struct opt *opt, const char *arg)
{
	struct rw_opts *o = opt->value;
	struct rw_rule rule;
	const char *why;

	if (rw_relabel_parse(arg, &rule, &why)) {
		rw_relabel_free(&rule);
		return usage_error(opt_command(), "bad --rw-relabel '%s': %s", arg, why);
	}
	rw_relabel_free(&rule);
	if (o->nrelabel >= RW_RELABEL_MAX)
		return usage_error(opt_command(), "at most %d --rw-relabel rules", RW_RELABEL_MAX);
	o->relabel[o->nrelabel++] = arg;
	return 0;
}

int cli_rw_batch(const struct opt *opt, const char *arg)
{
	struct rw_opts *o = opt->value;

	if (parse_duration_ms(arg, &o->batch_ms) || o->batch_ms > 3600000)
		return usage_error(opt_command(), "bad --rw-batch '%s' (0 to 1h, e.g. 5s)", arg);
	if (o->batch_ms == 0)
		o->batch_ms = -1; /* every tick (0 in rw_opts is the default) */
	return 0;
}
