/*
 * head.h - what `jobscope head`'s files share (cmd_head.c: options, ingest,
 * sessions; head_api.c: the read endpoints).  Everything runs on the HTTP
 * server's one thread, which alone uses the store.
 */
#ifndef JOBSCOPE_HEAD_H
#define JOBSCOPE_HEAD_H

#include <stdbool.h>
#include <stdint.h>

#include "net/http.h"
#include "store/store.h"

#define HEAD_TOKEN_MAX		 256
#define HEAD_UNHEALTHY_INTERVALS 3

struct head_opts {
	const char *listen;
	const char *db;
	const char *token_file;
	const char *admin_token_file;
	const char *read_token_file;
	const char *tls_cert_file, *tls_key_file;
	const char *log_file;
	int64_t exit_after_ms;
};

struct head {
	const struct head_opts *opt;
	struct store *st;
	char token[HEAD_TOKEN_MAX];
	bool has_token;
	char admin_token[HEAD_TOKEN_MAX];
	bool has_admin_token;
	char read_token[HEAD_TOKEN_MAX];
	bool has_read_token;
	int64_t started_ms;
	uint64_t batches, rows_in, refused;
	struct strbuf inflated; /* a zstd body, decompressed */
};

/* Read endpoints; false when the path is not one of them. */
bool head_api(struct head *h, const struct http_request *req, struct http_response *res);

#endif
