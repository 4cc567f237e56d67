/*
 * cmd_report.c - `jobscope report [RUN_ID]`: rebuild a run's report from
 * the store, through the same summary `jobscope run` fills live.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/log.h"
#include "report/report.h"
#include "store/store.h"

static const char report_usage[] =
    "usage: jobscope report [--db PATH] [RUN_ID | --job KEY | --session NAME] [--format text|json]\n"
    "                       [-o FILE]\n"
    "\n"
    "Print the report of a run or job kept in a store.  Without RUN_ID: the\n"
    "store's only run, or its latest with 'last'.  `jobscope runs` lists the ids.\n"
    "On an agent's store, --job KEY picks a job: scheduler:id:start_ms (as the\n"
    "agent's API shows it), scheduler:id or a bare id (e.g. a Slurm job id);\n"
    "the latest job that matches.  Its report shows what it reserved.\n"
    "\n"
    "Options:\n"
    "      --db PATH          the store (default ~/.local/share/jobscope/jobscope.db)\n"
    "  -f, --format FORMAT    text (default) or json\n"
    "  -o, --output FILE      write the report to FILE instead of stdout\n"
    "  -j, --job KEY          the job with that key (agent stores)\n"
    "  -s, --session NAME     a profiling session (a head's store): nodes, GPUs, gaps\n"
    "  -h, --help             show this help\n";

struct pick {
	int64_t last_id;
	int64_t count;
};

static int pick_run(const struct job_record *j, void *arg)
{
	struct pick *p = arg;

	if (strcmp(j->scheduler, "run") == 0) {
		p->count++;
		p->last_id = j->id;
	}
	return 0;
}

static int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"db", required_argument, NULL, 'd'},
	    {"format", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"job", required_argument, NULL, 'j'},
	    {"session", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *db = NULL, *output = "-", *id_arg = NULL, *job_key = NULL, *session = NULL;
	bool json = false;
	struct job_record job;
	struct summary sum;
	struct strbuf out;
	struct report_options ro = {.utf8 = cli_utf8(), .max_procs = 10};
	struct store *st;
	int64_t id = 0;
	int opt, ret, exit_code = 0;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":f:o:j:s:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			db = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "json") == 0)
				json = true;
			else if (strcmp(optarg, "text") != 0)
				return cli_usage_error("report", "bad --format '%s' (text or json)",
						       optarg);
			break;
		case 'o':
			output = optarg;
			break;
		case 'j':
			job_key = optarg;
			break;
		case 's':
			session = optarg;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return 0;
		default:
			return cli_option_error("report", opt, argv);
		}
	}
	if (optind < argc && !job_key)
		id_arg = argv[optind++];
	if (optind < argc)
		return cli_usage_error("report", "unexpected argument '%s'", argv[optind]);
	if (id_arg && strcmp(id_arg, "last") != 0 && !cli_parse_id(id_arg, &id))
		return cli_usage_error("report", "'%s' is not a run id (a number, or 'last')",
				       id_arg);
	if (cli_open_store(db, STORE_READONLY, &st))
		return EXIT_USAGE;
	db = store_path(st);
	if (session) {
		strbuf_init(&out, 0);
		ret = export_session_report(st, session, &out);
		if (!ret)
			ret = cli_write_file(output, out.buf, out.len);
		strbuf_release(&out);
		store_close(st);
		return ret ? EXIT_FAIL : 0;
	}

	if (job_key) {
		ret = store_find_job_key(st, job_key, &id);
		if (ret) {
			if (ret == -EINVAL)
				log_err(0, "bad --job '%s' (scheduler:id:start_ms, scheduler:id or id)",
					job_key);
			else if (ret == -ENOENT)
				log_err(0, "no job '%s' in '%s'", job_key, db);
			exit_code = ret == -EINVAL ? EXIT_USAGE : EXIT_FAIL;
			goto out_close_store;
		}
	}
	if (!id) {
		struct pick p = {0, 0};

		ret = store_for_each_job(st, pick_run, &p);
		if (ret) {
			exit_code = EXIT_FAIL;
			goto out_close_store;
		}
		if (p.count == 0) {
			log_err(0, "no runs in '%s'", db);
			exit_code = EXIT_FAIL;
			goto out_close_store;
		}
		if (p.count > 1 && !id_arg) {
			log_err(0,
				"%" PRId64
				" runs in '%s': say which (an id from `jobscope runs`, or 'last')",
				p.count, db);
			exit_code = EXIT_USAGE;
			goto out_close_store;
		}
		id = p.last_id;
	}
	ret = store_get_job(st, id, &job);
	if (ret) {
		if (ret == -ENOENT)
			log_err(0, "no run %" PRId64 " in '%s' (see `jobscope runs`)", id, db);
		exit_code = EXIT_FAIL;
		goto out_close_store;
	}
	ret = summary_from_store(&sum, st, &job);
	if (ret) {
		exit_code = EXIT_FAIL;
		goto out_release_summary;
	}
	strbuf_init(&out, 0);
	ret = json ? report_json(&sum, &out) : report_text(&sum, &ro, &out);
	if (!ret)
		ret = cli_write_file(output, out.buf, out.len);
	if (ret)
		exit_code = EXIT_FAIL;
	strbuf_release(&out);
out_release_summary:
	summary_release(&sum);
out_close_store:
	store_close(st);
	return exit_code;
}

const struct cli_command cmd_report_def = {
    "report",
    cmd_report,
    "print the report of a stored run",
    report_usage,
};
