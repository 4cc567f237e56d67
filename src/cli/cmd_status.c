/*
 * cmd_status.c - `jobscope status` and `jobscope clients`: what a head
 * says of itself and of its agents (GET /status, GET /clients).  The head
 * is --head URL or $JOBSCOPE_HEAD; a read token --token-file F or
 * $JOBSCOPE_TOKEN_FILE.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/token.h"
#include "net/client.h"
#include "net/headview.h"

static const char status_head[] =
    "usage: jobscope status [--json] [--head URL] [--token-file F]\n"
    "\n"
    "What a head is doing: whether a profiling session is active (and which),\n"
    "its agents and how current each is.  --json prints the head's answer.\n"
    "\n";

static const char clients_head[] =
    "usage: jobscope clients [--json] [--head URL] [--token-file F]\n"
    "\n"
    "The agents streaming to a head: node, agent id, GPUs, when last heard of,\n"
    "how far the head holds its rows, and whether it is healthy (heard of within\n"
    "3 of its intervals).\n"
    "\n";

static int fetch(const char *name, const char *usage_head, int argc, char **argv, const char *path,
		 struct strbuf *answer, bool *json_out)
{
	const struct opt_cmd cmd = {name, usage_head, NULL, 22, 0, 0};
	const char *head = getenv("JOBSCOPE_HEAD"), *token_file = getenv("JOBSCOPE_TOKEN_FILE");
	const struct opt opts[] = {
	    OPT_FLAG(0, "json", json_out, "print the head's answer (JSON) as it is"),
	    OPT_STRING(0, "head", &head, "URL",
		       "the head (http://head:8091; default $JOBSCOPE_HEAD)"),
	    OPT_STRING(0, "token-file", &token_file, "F",
		       "its read token (default $JOBSCOPE_TOKEN_FILE)"),
	    OPT_END(),
	};
	char token[256];
	long status = 0;
	int first, ret = opt_parse(&cmd, opts, argc, argv, &first);

	if (ret)
		return ret;
	if (!head || !*head)
		return usage_error(name, "which head? --head URL or $JOBSCOPE_HEAD");
	if (token_file && token_read_file(token_file, token, sizeof(token)))
		return EXIT_USAGE;
	if (http_client_request(head, path, token_file ? token : NULL, NULL, answer, &status))
		return EXIT_FAIL;
	if (status != 200) {
		log_err(0, "%s: the head answered HTTP %ld: %.200s", name, status,
			strbuf_str(answer));
		return EXIT_FAIL;
	}
	return 0;
}

static int cmd_clients(int argc, char **argv)
{
	struct strbuf answer;
	bool json_out = false;
	cJSON *doc;
	int ret;

	strbuf_init(&answer, 16 << 20);
	ret = fetch("clients", clients_head, argc, argv, "/clients", &answer, &json_out);
	if (ret) {
		strbuf_release(&answer);
		return ret == OPT_DONE ? 0 : ret;
	}
	doc = cJSON_ParseWithLength(answer.buf ? answer.buf : "", answer.len);
	if (json_out || !doc)
		fwrite(answer.buf ? answer.buf : "", 1, answer.len, stdout);
	else
		headview_clients(cJSON_GetObjectItemCaseSensitive(doc, "clients"), time_now_ms());
	cJSON_Delete(doc);
	strbuf_release(&answer);
	return 0;
}

static int cmd_status(int argc, char **argv)
{
	struct strbuf answer;
	bool json_out = false;
	cJSON *doc;
	int ret;

	strbuf_init(&answer, 16 << 20);
	ret = fetch("status", status_head, argc, argv, "/status", &answer, &json_out);
	if (ret) {
		strbuf_release(&answer);
		return ret == OPT_DONE ? 0 : ret;
	}
	doc = cJSON_ParseWithLength(answer.buf ? answer.buf : "", answer.len);
	if (json_out || !doc) {
		fwrite(answer.buf ? answer.buf : "", 1, answer.len, stdout);
	} else {
		headview_status(doc, time_now_ms());
	}
	cJSON_Delete(doc);
	strbuf_release(&answer);
	return 0;
}

const struct cli_command cmd_status_def = {
    "status",
    cmd_status,
    "what a head is doing: sessions and agents",
};

const struct cli_command cmd_clients_def = {
    "clients",
    cmd_clients,
    "the agents streaming to a head, and their health",
};
