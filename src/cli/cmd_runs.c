/* cmd_runs.c - `jobscope runs`: list the runs kept in a store. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "common/fmt.h"
#include "common/jsonw.h"
#include "common/timeutil.h"
#include "store/store.h"
#include "store/reader.h"

static const char runs_head[] =
    "usage: jobscope runs [--db PATH] [--json]\n"
    "\n"
    "List the runs in a store, oldest first: id, start (UTC), duration, exit\n"
    "status, name and command.  `jobscope report ID` prints one.\n"
    "\n";

struct runs_ctx {
	bool json;
	struct jsonw w;
	struct strbuf out;
	size_t count;
};

static void status_text(const struct job_record *j, char *buf, size_t size)
{
	if (!j->end_ms)
		snprintf(buf, size, "running?");
	else if (!j->has_exit)
		snprintf(buf, size, "-");
	else if (j->signal)
		snprintf(buf, size, "signal %d%s", j->signal, j->timed_out ? " (timeout)" : "");
	else
		snprintf(buf, size, "exit %d%s", j->exit_code, j->timed_out ? " (timeout)" : "");
}

static int print_run(const struct job_record *j, void *arg)
{
	struct runs_ctx *c = arg;
	char start[40], dur[32], status[48], name[sizeof(j->name)], cmd[sizeof(j->command)];

	if (strcmp(j->scheduler, "run") != 0)
		return 0;
	c->count++;
	format_rfc3339_ms(j->start_ms, start, sizeof(start));
	if (c->json) {
		struct jsonw *w = &c->w;

		jsonw_obj_begin(w);
		jsonw_kv_int(w, "id", j->id);
		jsonw_kv_str_opt(w, "name", j->name[0] ? j->name : NULL);
		jsonw_kv_str(w, "command", j->command);
		jsonw_kv_str(w, "host", j->hostname);
		jsonw_kv_str(w, "start", start);
		jsonw_kv_double_opt(w, "duration_s", j->end_ms > 0,
				    (j->end_ms - j->start_ms) / 1000.0, 3);
		jsonw_kv_int_opt(w, "exit_code", j->has_exit && !j->signal, j->exit_code);
		jsonw_kv_int_opt(w, "signal", j->has_exit && j->signal, j->signal);
		jsonw_kv_bool(w, "timed_out", j->timed_out);
		jsonw_kv_int(w, "samples", j->samples);
		jsonw_kv_int(w, "lost_samples", j->lost_samples);
		jsonw_obj_end(w);
		return 0;
	}
	if (c->count == 1)
		strbuf_addf(&c->out, "%6s  %-20s  %10s  %-16s  %-16s  %s\n", "ID", "START (UTC)",
			    "DURATION", "STATUS", "NAME", "COMMAND");
	start[19] = '\0'; /* seconds are enough here */
	start[10] = ' ';
	if (j->end_ms)
		format_duration_ms(j->end_ms - j->start_ms, dur, sizeof(dur));
	else
		snprintf(dur, sizeof(dur), "-");
	status_text(j, status, sizeof(status));
	/* a row is one line whatever the name and command hold (newlines, tabs) */
	strbuf_addf(&c->out, "%6" PRId64 "  %-20s  %10s  %-16s  %-16.16s  %.80s\n", j->id, start,
		    dur, status, j->name[0] ? fmt_printable(name, sizeof(name), j->name) : "-",
		    fmt_printable(cmd, sizeof(cmd), j->command));
	return 0;
}

static int cmd_runs(int argc, char **argv)
{
	static const struct opt_cmd cmd = {"runs", runs_head, NULL, 18, 0, 0};
	struct runs_ctx c = {0};
	const char *db = NULL;
	const struct opt opts[] = {
	    OPT_STRING(0, "db", &db, "PATH",
		       "the store (default ~/.local/share/jobscope/jobscope.db)"),
	    OPT_FLAG(0, "json", &c.json, "one JSON array instead of a table"),
	    OPT_END(),
	};
	struct store *st;
	int first, ret = opt_parse(&cmd, opts, argc, argv, &first);

	if (ret)
		return ret == OPT_DONE ? 0 : ret;
	if (cli_open_store(db, STORE_READONLY, &st))
		return EXIT_USAGE;
	db = store_path(st);
	strbuf_init(&c.out, 0);
	jsonw_init(&c.w, &c.out, true);
	if (c.json)
		jsonw_arr_begin(&c.w);
	ret = store_for_each_job(st, print_run, &c);
	if (c.json) {
		jsonw_arr_end(&c.w);
		strbuf_addch(&c.out, '\n');
	} else if (c.count == 0) {
		strbuf_addf(&c.out, "no runs in %s\n", db);
	}
	store_close(st);
	if (!ret)
		fwrite(c.out.buf, 1, c.out.len, stdout);
	strbuf_release(&c.out);
	return ret ? EXIT_FAIL : 0;
}

const struct cli_command cmd_runs_def = {
    "runs",
    cmd_runs,
    "list the runs in a store",
};
