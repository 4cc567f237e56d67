/*
 * ingest.c - POST /api/v1/ingest: an agent's batch (docs/wire.md) decoded
 * (net/wire.c), committed in one transaction (store_ingest) and only then
 * acknowledged with the highest seq of that agent the store holds, with
 * what the active profiling sessions ask of its node.
 */
#include "head/head.h"

#include <errno.h>
#include <string.h>

#include "common/timeutil.h"
#include "net/wire.h"

void head_ingest_not_post(void *arg, const struct http_request *req, struct http_response *res)
{
	(void)arg;
	(void)req;
	http_error(res, 405, "POST a batch (docs/wire.md)");
}

void head_ingest(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	const char *enc, *body = req->body;
	size_t body_len = req->body_len;
	struct wire_batch wb;
	char msg[256];
	int64_t acked = 0;
	int ret;

	enc = http_header(req, "Content-Encoding");
	if (enc && strcmp(enc, "zstd") == 0) {
		ret = wire_decompress(req->body, req->body_len, &h->inflated);
		if (ret) {
			http_error(res, ret == -E2BIG ? 413 : 400,
				   ret == -E2BIG ? "batch larger than the cap once decompressed"
						 : "not a zstd body");
			return;
		}
		body = h->inflated.buf ? h->inflated.buf : "";
		body_len = h->inflated.len;
	} else if (enc && strcmp(enc, "identity") != 0) {
		http_error(res, 415, "Content-Encoding: zstd or none");
		return;
	}
	ret = wire_decode_batch(body, body_len, &wb, msg, sizeof(msg));
	if (ret == 0)
		ret = store_ingest(h->st, &wb.b, time_now_ms(), &acked, msg, sizeof(msg));
	if (ret == -EINVAL) {
		h->refused++;
		http_error(res, 400, msg[0] ? msg : "bad batch");
	} else if (ret == -ENOSPC) {
		http_error(res, 507,
			   "the head's disk is full: nothing was stored, send again later");
	} else if (ret) {
		http_error(res, 503, "the head cannot store the batch now: send again later");
	} else {
		struct wire_answer a = {.acked_seq = acked};

		h->batches++;
		/* the control channel: what the active sessions ask of this node */
		if (store_session_control(h->st, wb.b.who.hostname, &a.interval_ms, a.sessions,
					  sizeof(a.sessions))) {
			a.interval_ms = 0;
			a.sessions[0] = '\0';
		}
		wire_encode_answer(&a, &res->body);
	}
	wire_batch_release(&wb);
}
