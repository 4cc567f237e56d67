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

static const char status_usage[] =
    "usage: jobscope status [--json] [--head URL] [--token-file F]\n"
    "\n"
    "What a head is doing: whether a profiling session is active (and which),\n"
    "its agents and how current each is.  --json prints the head's answer.\n"
    "The head: --head URL or $JOBSCOPE_HEAD; a token: --token-file or\n"
    "$JOBSCOPE_TOKEN_FILE.\n";

static const char clients_usage[] =
    "usage: jobscope clients [--json] [--head URL] [--token-file F]\n"
    "\n"
    "The agents streaming to a head: node, agent id, GPUs, when last heard of,\n"
    "how far the head holds its rows, and whether it is healthy (heard of within\n"
    "3 of its intervals).\n";

static int fetch(const char *cmd, int argc, char **argv, const char *path, const char *usage,
		 struct strbuf *answer, bool *json_out)
{
	static const struct option longopts[] = {
	    {"head", required_argument, NULL, 'H'},
	    {"token-file", required_argument, NULL, 't'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *head = getenv("JOBSCOPE_HEAD"), *token_file = getenv("JOBSCOPE_TOKEN_FILE");
	char token[256];
	long status = 0;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'H':
			head = optarg;
			break;
		case 't':
			token_file = optarg;
			break;
		case 'j':
			*json_out = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		default:
			return cli_option_error(cmd, c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (!head || !*head)
		return cli_usage_error(cmd, "which head? --head URL or $JOBSCOPE_HEAD");
	if (token_file && token_read_file(token_file, token, sizeof(token)))
		return EXIT_USAGE;
	if (http_client_request(head, path, token_file ? token : NULL, NULL, answer, &status))
		return EXIT_FAIL;
	if (status != 200) {
		log_err(0, "%s: the head answered HTTP %ld: %.200s", cmd, status, strbuf_str(answer));
		return EXIT_FAIL;
	}
	return 0;
}

static void print_clients(const cJSON *clients)
{
	const cJSON *c;
	int64_t now = time_now_ms();

	printf("%-20s %-26s %5s %10s %12s %8s\n", "NODE", "AGENT", "GPUS", "LAST SEEN", "ACKED SEQ",
	       "HEALTHY");
	cJSON_ArrayForEach(c, clients) {
		const cJSON *host = cJSON_GetObjectItemCaseSensitive(c, "hostname");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "client_id");
		const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(c, "gpu_count");
		const cJSON *seen = cJSON_GetObjectItemCaseSensitive(c, "last_seen_ms");
		const cJSON *acked = cJSON_GetObjectItemCaseSensitive(c, "acked_seq");
		const cJSON *ok = cJSON_GetObjectItemCaseSensitive(c, "healthy");
		char ago[32] = "-";

		if (cJSON_IsNumber(seen))
			format_duration_ms(now - (int64_t)seen->valuedouble, ago, sizeof(ago));
		printf("%-20s %-26s %5.0f %10s %12.0f %8s\n",
		       cJSON_IsString(host) ? host->valuestring : "?",
		       cJSON_IsString(id) ? id->valuestring : "?",
		       cJSON_IsNumber(gpus) ? gpus->valuedouble : 0, ago,
		       cJSON_IsNumber(acked) ? acked->valuedouble : 0,
		       cJSON_IsTrue(ok) ? "yes" : "NO");
	}
}

static int cmd_clients(int argc, char **argv)
{
	struct strbuf answer;
	bool json_out = false;
	cJSON *doc;
	int ret;

	strbuf_init(&answer, 16 << 20);
	ret = fetch("clients", argc, argv, "/clients", clients_usage, &answer, &json_out);
	if (ret) {
		strbuf_release(&answer);
		return ret < 0 ? 0 : ret;
	}
	doc = cJSON_ParseWithLength(answer.buf ? answer.buf : "", answer.len);
	if (json_out || !doc)
		fwrite(answer.buf ? answer.buf : "", 1, answer.len, stdout);
	else
		print_clients(cJSON_GetObjectItemCaseSensitive(doc, "clients"));
	cJSON_Delete(doc);
	strbuf_release(&answer);
	return 0;
}

static int cmd_status(int argc, char **argv)
{
	struct strbuf answer;
	bool json_out = false;
	const cJSON *active, *s;
	cJSON *doc;
	int ret;

	strbuf_init(&answer, 16 << 20);
	ret = fetch("status", argc, argv, "/status", status_usage, &answer, &json_out);
	if (ret) {
		strbuf_release(&answer);
		return ret < 0 ? 0 : ret;
	}
	doc = cJSON_ParseWithLength(answer.buf ? answer.buf : "", answer.len);
	if (json_out || !doc) {
		fwrite(answer.buf ? answer.buf : "", 1, answer.len, stdout);
	} else {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, "version");
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(doc, "batches");

		printf("head %s, %s; %.0f batches since it started\n",
		       cJSON_IsString(v) ? v->valuestring : "?",
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "is_profiling"))
			   ? "profiling"
			   : "not profiling",
		       cJSON_IsNumber(b) ? b->valuedouble : 0);
		active = cJSON_GetObjectItemCaseSensitive(doc, "active_sessions");
		cJSON_ArrayForEach(s, active) {
			const cJSON *n = cJSON_GetObjectItemCaseSensitive(s, "name");
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "start_time");
			const cJSON *iv = cJSON_GetObjectItemCaseSensitive(s, "interval_ms");

			printf("  session %s since %s", cJSON_IsString(n) ? n->valuestring : "?",
			       cJSON_IsString(t) ? t->valuestring : "?");
			if (cJSON_IsNumber(iv))
				printf(", every %.0fms", iv->valuedouble);
			printf("\n");
		}
		print_clients(cJSON_GetObjectItemCaseSensitive(doc, "clients"));
	}
	cJSON_Delete(doc);
	strbuf_release(&answer);
	return 0;
}

const struct cli_command cmd_status_def = {
    "status",
    cmd_status,
    "what a head is doing: sessions and agents",
    status_usage,
};

const struct cli_command cmd_clients_def = {
    "clients",
    cmd_clients,
    "the agents streaming to a head, and their health",
    clients_usage,
};
