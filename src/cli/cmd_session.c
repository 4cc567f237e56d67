/*
 * cmd_session.c - `jobscope session start|stop|list`: named profiling
 * sessions on a head (POST /profiling/start, /profiling/stop, GET
 * /profiling/sessions).  The head is --head URL or $JOBSCOPE_HEAD; its
 * admin token --token-file F or $JOBSCOPE_TOKEN_FILE.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/token.h"
#include "net/client.h"

static const char session_usage[] =
    "usage: jobscope session start NAME [--interval DUR] [--nodes a,b] [--cuda]\n"
    "                              [HEAD OPTIONS]\n"
    "       jobscope session stop [NAME] [HEAD OPTIONS]\n"
    "       jobscope session list [--json] [HEAD OPTIONS]\n"
    "\n"
    "Named profiling sessions on a head: while one is active, the agents of its\n"
    "nodes (all, or --nodes) sample at its interval (down to 100ms) and go back to\n"
    "their own after.  Sessions may overlap; a node samples at the smallest\n"
    "interval asked.  --cuda: the agents also record CUDA API, kernel and\n"
    "memory-operation tables of the processes started with their hook (see\n"
    "`jobscope agent --cuda-socket`, docs/cuda.md).  `stop` without a name stops\n"
    "every active session.\n"
    "\n"
    "Head options:\n"
    "      --head URL         the head (default $JOBSCOPE_HEAD), e.g. http://head:8091\n"
    "      --token-file F     its admin token (default $JOBSCOPE_TOKEN_FILE)\n"
    "  -h, --help             show this help\n"
    "\n"
    "Exit status: 0 done; 1 the head refused (e.g. a session of that name is\n"
    "already active, or none is) or cannot be reached; 2 usage error.\n";

/* Prints the head's answer: its message, or the sessions table. */
static int show(const char *verb, struct strbuf *answer, long status, bool json_out)
{
	cJSON *doc = cJSON_ParseWithLength(answer->buf ? answer->buf : "", answer->len);
	const cJSON *msg = doc ? cJSON_GetObjectItemCaseSensitive(doc, "message") : NULL;
	const cJSON *err = doc ? cJSON_GetObjectItemCaseSensitive(doc, "error") : NULL;
	const cJSON *sessions = doc ? cJSON_GetObjectItemCaseSensitive(doc, "sessions") : NULL;
	const cJSON *ok = doc ? cJSON_GetObjectItemCaseSensitive(doc, "success") : NULL;
	/* as gswarm, the head says "success": false with a 200 (already active, nothing to stop) */
	int ret = status >= 200 && status < 300 && !cJSON_IsFalse(ok) ? 0 : EXIT_FAIL;

	if (json_out || (!msg && !err && !cJSON_IsArray(sessions))) {
		fwrite(answer->buf ? answer->buf : "", 1, answer->len, stdout);
	} else if (cJSON_IsArray(sessions)) {
		const cJSON *s;

		printf("%-24s %-7s %-24s %-24s %-9s %-4s %s\n", "NAME", "STATE", "START", "END",
		       "INTERVAL", "CUDA", "NODES");
		cJSON_ArrayForEach(s, sessions) {
			const cJSON *name = cJSON_GetObjectItemCaseSensitive(s, "name");
			const cJSON *start = cJSON_GetObjectItemCaseSensitive(s, "start_ms");
			const cJSON *end = cJSON_GetObjectItemCaseSensitive(s, "end_ms");
			const cJSON *iv = cJSON_GetObjectItemCaseSensitive(s, "interval_ms");
			const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(s, "nodes");
			const cJSON *cuda = cJSON_GetObjectItemCaseSensitive(s, "cuda");
			char t0[40] = "-", t1[40] = "-", ivs[24] = "agents'", ns[256] = "all";

			if (cJSON_IsNumber(start))
				format_rfc3339_ms((int64_t)start->valuedouble, t0, sizeof(t0));
			if (cJSON_IsNumber(end))
				format_rfc3339_ms((int64_t)end->valuedouble, t1, sizeof(t1));
			if (cJSON_IsNumber(iv))
				snprintf(ivs, sizeof(ivs), "%.0fms", iv->valuedouble);
			if (cJSON_IsArray(nodes)) {
				char *p = cJSON_PrintUnformatted(nodes);

				snprintf(ns, sizeof(ns), "%s", p ? p : "?");
				free(p);
			}
			printf("%-24s %-7s %-24s %-24s %-9s %-4s %s\n",
			       cJSON_IsString(name) ? name->valuestring : "?",
			       cJSON_IsNumber(end) ? "stopped" : "active", t0, t1, ivs,
			       cJSON_IsTrue(cuda) ? "yes" : "no", ns);
		}
	} else {
		const cJSON *m = cJSON_IsString(err) ? err : msg;

		if (ret)
			log_err(0, "session %s: %s (HTTP %ld)", verb,
				cJSON_IsString(m) ? m->valuestring : "refused", status);
		else
			printf("%s\n", cJSON_IsString(m) ? m->valuestring : "done");
	}
	cJSON_Delete(doc);
	return ret;
}

static int cmd_session(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"head", required_argument, NULL, 'H'},
	    {"token-file", required_argument, NULL, 't'},
	    {"interval", required_argument, NULL, 'i'},
	    {"nodes", required_argument, NULL, 'n'},
	    {"json", no_argument, NULL, 'j'},
	    {"cuda", no_argument, NULL, 'C'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *head = getenv("JOBSCOPE_HEAD"), *token_file = getenv("JOBSCOPE_TOKEN_FILE");
	const char *verb, *name = NULL, *nodes = NULL;
	int64_t interval_ms = 0;
	char token[256];
	bool json_out = false, cuda = false;
	struct strbuf body, answer;
	struct jsonw w;
	long status = 0;
	int c, ret;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:i:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'H':
			head = optarg;
			break;
		case 't':
			token_file = optarg;
			break;
		case 'i':
			if (parse_duration_ms(optarg, &interval_ms) || interval_ms < 100)
				return cli_usage_error("session",
						       "bad --interval '%s' (at least 100ms)", optarg);
			break;
		case 'n':
			nodes = optarg;
			break;
		case 'j':
			json_out = true;
			break;
		case 'h':
			fputs(session_usage, stdout);
			return 0;
		default:
			return cli_option_error("session", c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error("session", "say start, stop or list");
	verb = argv[optind++];
	/* options may also follow the verb and name */
	if (optind < argc && argv[optind][0] != '-')
		name = argv[optind++];
	while ((c = getopt_long(argc, argv, ":i:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'H': head = optarg; break;
		case 't': token_file = optarg; break;
		case 'i':
			if (parse_duration_ms(optarg, &interval_ms) || interval_ms < 100)
				return cli_usage_error("session",
						       "bad --interval '%s' (at least 100ms)", optarg);
			break;
		case 'n': nodes = optarg; break;
		case 'j': json_out = true; break;
		case 'C': cuda = true; break;
		case 'h': fputs(session_usage, stdout); return 0;
		default: return cli_option_error("session", c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("session", "unexpected argument '%s'", argv[optind]);
	if (!head || !*head)
		return cli_usage_error("session", "which head? --head URL or $JOBSCOPE_HEAD");
	if (strcmp(verb, "start") == 0 && !name)
		return cli_usage_error("session", "start needs a NAME");
	if (cuda && strcmp(verb, "start"))
		return cli_usage_error("session", "--cuda is for start");
	if (strcmp(verb, "list") == 0 && name)
		return cli_usage_error("session", "list takes no NAME");
	if (strcmp(verb, "start") && strcmp(verb, "stop") && strcmp(verb, "list"))
		return cli_usage_error("session", "unknown '%s': start, stop or list", verb);
	if (token_file && token_read_file(token_file, token, sizeof(token)))
		return EXIT_USAGE;

	strbuf_init(&body, 0);
	strbuf_init(&answer, 16 << 20);
	jsonw_init(&w, &body, false);
	jsonw_obj_begin(&w);
	if (name)
		jsonw_kv_str(&w, "name", name);
	if (interval_ms)
		jsonw_kv_int(&w, "interval_ms", interval_ms);
	if (cuda)
		jsonw_kv_bool(&w, "cuda", true);
	if (nodes) {
		char copy[1024], *save = NULL;

		snprintf(copy, sizeof(copy), "%s", nodes);
		jsonw_key(&w, "nodes");
		jsonw_arr_begin(&w);
		for (char *n = strtok_r(copy, ",", &save); n; n = strtok_r(NULL, ",", &save))
			jsonw_str(&w, n);
		jsonw_arr_end(&w);
	}
	jsonw_obj_end(&w);
	ret = http_client_request(head,
				  strcmp(verb, "start") == 0  ? "/profiling/start"
				  : strcmp(verb, "stop") == 0 ? "/profiling/stop"
							      : "/profiling/sessions",
				  token_file ? token : NULL,
				  strcmp(verb, "list") == 0 ? NULL : strbuf_str(&body), &answer,
				  &status);
	if (ret == 0)
		ret = show(verb, &answer, status, json_out);
	else
		ret = EXIT_FAIL;
	strbuf_release(&body);
	strbuf_release(&answer);
	return ret;
}

const struct cli_command cmd_session_def = {
    "session",
    cmd_session,
    "start, stop and list profiling sessions on a head",
    session_usage,
};
