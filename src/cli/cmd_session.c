/*
 * cmd_session.c - `jobscope session start|stop|list`: named profiling
 * sessions on a head (POST /profiling/start, /profiling/stop, GET
 * /profiling/sessions).  The head is --head URL or $JOBSCOPE_HEAD; its
 * admin token --token-file F or $JOBSCOPE_TOKEN_FILE.
 */
#include <errno.h>
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
#include "net/headview.h"

static const char session_head[] =
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
    "\n";

static const char session_tail[] =
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
		headview_sessions(sessions);
	} else {
		const cJSON *m = cJSON_IsString(err) ? err : msg;

		const cJSON *warn = doc ? cJSON_GetObjectItemCaseSensitive(doc, "warning") : NULL;

		if (ret)
			log_err(0, "session %s: %s (HTTP %ld)", verb,
				cJSON_IsString(m) ? m->valuestring : "refused", status);
		else
			printf("%s\n", cJSON_IsString(m) ? m->valuestring : "done");
		if (cJSON_IsString(warn))
			log_warn(0, "session %s: %s", verb, warn->valuestring);
	}
	cJSON_Delete(doc);
	return ret;
}

static int cmd_session(int argc, char **argv)
{
	static const struct opt_cmd cmd = {"session", session_head, session_tail, 25, 0, 2};
	const char *head = getenv("JOBSCOPE_HEAD"), *token_file = getenv("JOBSCOPE_TOKEN_FILE");
	const char *verb, *name = NULL, *nodes = NULL;
	int64_t interval_ms = 0;
	bool json_out = false, cuda = false;
	const struct opt opts[] = {
	    OPT_DURATION('i', "interval", &interval_ms, 100, 0, "at least 100ms",
			 "start: the agents' interval meanwhile (down to 100ms)"),
	    OPT_STRING('n', "nodes", &nodes, "a,b", "start: only these nodes (default all)"),
	    OPT_FLAG(0, "cuda", &cuda, "start: CUDA tables too (docs/cuda.md)"),
	    OPT_FLAG(0, "json", &json_out, "print the head's answer (JSON) as it is"),
	    OPT_STRING(0, "head", &head, "URL",
		       "the head (default $JOBSCOPE_HEAD), e.g. http://head:8091"),
	    OPT_STRING(0, "token-file", &token_file, "F",
		       "its admin token (default $JOBSCOPE_TOKEN_FILE)"),
	    OPT_END(),
	};
	char token[256];
	struct strbuf body, answer;
	struct jsonw w;
	long status = 0;
	int first, ret = opt_parse(&cmd, opts, argc, argv, &first);

	if (ret)
		return ret == OPT_DONE ? 0 : ret;
	if (first >= argc)
		return usage_error("session", "say start, stop or list");
	/* options may come before or after the verb and the name */
	verb = argv[first];
	name = first + 1 < argc ? argv[first + 1] : NULL;
	if (!head || !*head)
		return usage_error("session", "which head? --head URL or $JOBSCOPE_HEAD");
	if (strcmp(verb, "start") == 0 && !name)
		return usage_error("session", "start needs a NAME");
	if (cuda && strcmp(verb, "start"))
		return usage_error("session", "--cuda is for start");
	if (strcmp(verb, "list") == 0 && name)
		return usage_error("session", "list takes no NAME");
	if (strcmp(verb, "start") && strcmp(verb, "stop") && strcmp(verb, "list"))
		return usage_error("session", "unknown '%s': start, stop or list", verb);
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
};
