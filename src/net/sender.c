/*
 * sender.c - the agent's stream to a head (see sender.h for the rules).
 */
#include "net/sender.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "common/token.h"
#include "http/curl_dl.h"
#include "http/shipper.h"
#include "store/store.h"
#include "store/sync.h"

#define SENDER_FIRST_ROWS 2000	/* rows in a batch when current */
#define SENDER_MAX_ROWS	  50000 /* ... and at most, catching up */
#define SENDER_TIMEOUT_S  30
#define SENDER_ANSWER_MAX 65536

struct sender {
	struct sender_opts opt;
	struct shipper *sh;
	char url[1024];
	char token[256];       /* what the Authorization header carries ("": none) */
	char token_file[4096]; /* --token-file, read again after a refusal ("": none) */
	char auth[300];
	char db_path[4096];
	char ca_file[4096];
	char what[1100];
	pthread_mutex_t lock;	  /* the head's asks below */
	int64_t head_interval_ms; /* what the head last asked for (0: nothing) */
	bool head_cuda;
	CURL *curl;
	struct curl_slist *headers, *zheaders;
	struct strbuf body, answer, zbody;
	struct store_batch batch; /* the rows being sent (released once encoded) */
	struct wire_answer reply;
};

/*
 * POSTs s->body; on a 200, *acked receives the head's acked_seq (and what
 * it asks is kept).  0, or -EAGAIN (retry later), -E2BIG (send less),
 * -EINVAL (the head refused it).
 */
static int post(struct sender *s, int64_t *acked)
{
	long status = 0;
	CURLcode rc;

	strbuf_reset(&s->answer);
	/* large batches (catching up) go compressed: JSON rows shrink ~10x */
	if (s->body.len > WIRE_COMPRESS_ABOVE &&
	    wire_compress(s->body.buf, s->body.len, &s->zbody) == 0) {
		curl_fn.easy_setopt(s->curl, CURLOPT_HTTPHEADER, s->zheaders);
		curl_fn.easy_setopt(s->curl, CURLOPT_POSTFIELDS, s->zbody.buf);
		curl_fn.easy_setopt(s->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)s->zbody.len);
	} else {
		curl_fn.easy_setopt(s->curl, CURLOPT_HTTPHEADER, s->headers);
		curl_fn.easy_setopt(s->curl, CURLOPT_POSTFIELDS, s->body.buf);
		curl_fn.easy_setopt(s->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)s->body.len);
	}
	rc = curl_fn.easy_perform(s->curl);
	if (rc != CURLE_OK) {
		shipper_error(s->sh, "%s", curl_fn.easy_strerror(rc));
		return -EAGAIN;
	}
	curl_fn.easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status == 413)
		return -E2BIG;
	if (status == 401 || status == 403) {
		char text[64];
		size_t n = 0;

		/* the answer's first line, printable, for one line of log */
		for (const char *p = strbuf_str(&s->answer);
		     *p && *p != '\n' && n + 1 < sizeof(text); p++)
			text[n++] = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
		text[n] = '\0';
		/* a wrong token stays wrong: not a failure to retry soon */
		if (s->token_file[0])
			shipper_refused(
			    s->sh,
			    "HTTP %ld %s: the head refuses the token of --token-file '%.200s'",
			    status, text, s->token_file);
		else
			shipper_refused(s->sh, "HTTP %ld %s: the head wants a token: --token-file",
					status, text);
		return -EACCES;
	}
	if (status != 200) {
		shipper_error(s->sh, "HTTP %ld: %.100s", status, strbuf_str(&s->answer));
		return status >= 400 && status < 500 && status != 408 && status != 429 ? -EINVAL
										       : -EAGAIN;
	}
	if (wire_decode_answer(s->answer.buf, s->answer.len, &s->reply)) {
		shipper_error(s->sh, "an answer without acked_seq");
		return -EAGAIN;
	}
	*acked = s->reply.acked_seq;
	pthread_mutex_lock(&s->lock);
	s->head_interval_ms = s->reply.interval_ms;
	s->head_cuda = s->reply.cuda;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* The shipper's start: a hello, no rows, "what do you hold of me?". */
static int ship_start(void *enc, struct shipper *sh, struct store *st, int64_t *cursor)
{
	struct sender *s = enc;
	int ret;

	(void)st;
	wire_encode_hello(&s->opt.who, &s->body);
	ret = post(s, cursor);
	if (ret)
		return ret == -EACCES ? ret : -EAGAIN;
	shipper_answered(sh);
	return 0;
}

/* The rows after cursor (at most max_rows) as the body of a batch, in s->body. */
static int ship_read(void *enc, struct store *st, int64_t cursor, int64_t max_rows, int64_t *to_seq,
		     int64_t *nrows)
{
	struct sender *s = enc;
	struct store_batch *b = &s->batch;
	int ret;

	b->from_seq = cursor;
	ret = store_export_batch(st, cursor, max_rows, &b->rows, to_seq, &b->max_seq, nrows);
	if (ret)
		return ret;
	b->to_seq = *to_seq;
	ret = wire_encode_batch(b, &s->body);
	/* the rows live on in the body only: a backlog's batch is not held twice */
	store_rowset_release(&b->rows);
	return ret;
}

static int ship_send(void *enc, struct shipper *sh, struct store *st, int64_t cursor,
		     int64_t to_seq, int64_t *acked)
{
	int ret = post(enc, acked);

	(void)sh;
	(void)st;
	(void)cursor;
	(void)to_seq;
	return ret == -EINVAL ? -EAGAIN : ret; /* refused: ask the head again, later */
}

/* The headers of each request: the token's among them when there is one. */
static int set_headers(struct sender *s)
{
	curl_fn.slist_free_all(s->headers);
	curl_fn.slist_free_all(s->zheaders);
	s->headers = curl_fn.slist_append(NULL, "Content-Type: application/json");
	if (s->token[0]) {
		snprintf(s->auth, sizeof(s->auth), "Authorization: Bearer %s", s->token);
		s->headers = curl_fn.slist_append(s->headers, s->auth);
	}
	s->headers = curl_fn.slist_append(s->headers, "Expect:"); /* no 100-continue round trip */
	s->zheaders = curl_fn.slist_append(NULL, "Content-Type: application/json");
	s->zheaders = curl_fn.slist_append(s->zheaders, "Content-Encoding: zstd");
	if (s->token[0])
		s->zheaders = curl_fn.slist_append(s->zheaders, s->auth);
	s->zheaders = curl_fn.slist_append(s->zheaders, "Expect:");
	if (!s->headers || !s->zheaders)
		return -ENOMEM;
	curl_fn.easy_setopt(s->curl, CURLOPT_HTTPHEADER, s->headers);
	return 0;
}

/* Refused: whether --token-file now holds another token (then sent from now on). */
static bool ship_reauth(void *enc)
{
	struct sender *s = enc;
	char token[sizeof(s->token)];

	if (!s->token_file[0] || token_load(s->token_file, token, sizeof(token)) ||
	    strcmp(token, s->token) == 0)
		return false;
	snprintf(s->token, sizeof(s->token), "%s", token);
	return set_headers(s) == 0;
}

static const struct shipper_ops sender_ops = {ship_start, ship_read, ship_send, ship_reauth};

static void sender_free(struct sender *s)
{
	if (s->curl)
		curl_fn.easy_cleanup(s->curl);
	curl_fn.slist_free_all(s->headers);
	curl_fn.slist_free_all(s->zheaders);
	strbuf_release(&s->zbody);
	strbuf_release(&s->body);
	strbuf_release(&s->answer);
	store_rowset_release(&s->batch.rows);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int sender_start(const struct sender_opts *o, struct sender **out)
{
	struct shipper_opts so = {
	    .thread_name = "js-head",
	    .retry_note = "retrying; the store keeps what the head lacks",
	    .again = "connected again",
	    .store_flags = STORE_READONLY,
	    .interval_ms = o->who.interval_ms,
	    .first_rows = SENDER_FIRST_ROWS,
	    .max_rows = SENDER_MAX_ROWS,
	    .progress = o->progress,
	};
	struct sender *s;
	int n;

	*out = NULL;
	if (curl_dl_load())
		return log_err(-ENOENT, "cannot stream to '%s'", o->url);
	s = calloc(1, sizeof(*s));
	if (!s)
		return log_err(-ENOMEM, "out of memory");
	s->opt = *o;
	snprintf(s->db_path, sizeof(s->db_path), "%s", o->db_path);
	s->opt.db_path = s->db_path;
	pthread_mutex_init(&s->lock, NULL);
	store_rowset_init(&s->batch.rows, 0);
	wire_batch_from(&s->batch, &o->who);
	strbuf_init(&s->body, WIRE_MAX_BODY);
	strbuf_init(&s->answer, SENDER_ANSWER_MAX);
	strbuf_init(&s->zbody, WIRE_MAX_BODY);
	/* "http://head:8091" or "http://head:8091/": the ingest path is ours */
	n = (int)strlen(o->url);
	while (n > 0 && o->url[n - 1] == '/')
		n--;
	if (n == 0 || snprintf(s->url, sizeof(s->url), "%.*s/api/v1/ingest", n, o->url) >=
			  (int)sizeof(s->url)) {
		sender_free(s);
		return log_err(-EINVAL, "bad --head URL '%s'", o->url);
	}
	snprintf(s->what, sizeof(s->what), "head %s", o->url);
	so.what = s->what;
	so.db_path = s->db_path;
	curl_fn.global_init(CURL_GLOBAL_DEFAULT);
	s->curl = curl_dl_handle(s->url, &s->answer, NULL, SENDER_TIMEOUT_S, true);
	if (!s->curl) {
		sender_free(s);
		curl_fn.global_cleanup();
		return log_err(-ENOMEM, "cannot set up libcurl");
	}
	if (o->token)
		snprintf(s->token, sizeof(s->token), "%s", o->token);
	if (o->token_file)
		snprintf(s->token_file, sizeof(s->token_file), "%s", o->token_file);
	if (set_headers(s)) {
		sender_free(s);
		curl_fn.global_cleanup();
		return log_err(-ENOMEM, "cannot set up libcurl");
	}
	if (o->ca_file) {
		snprintf(s->ca_file, sizeof(s->ca_file), "%s", o->ca_file);
		curl_fn.easy_setopt(s->curl, CURLOPT_CAINFO, s->ca_file);
	}
	if (shipper_new(&so, &sender_ops, s, &s->sh) == 0)
		shipper_watch_curl(s->sh, s->curl);
	if (!s->sh || shipper_run(s->sh)) {
		shipper_stop(s->sh);
		sender_free(s);
		curl_fn.global_cleanup();
		return log_err(-EAGAIN, "cannot start the sender thread");
	}
	*out = s;
	return 0;
}

void sender_kick(struct sender *s)
{
	if (s)
		shipper_kick(s->sh);
}

void sender_stop(struct sender *s)
{
	if (!s)
		return;
	shipper_stop(s->sh);
	sender_free(s);
	curl_fn.global_cleanup();
}

void sender_get_stats(struct sender *s, struct sender_stats *out)
{
	memset(out, 0, sizeof(*out));
	shipper_get_stats(s->sh, &out->ship);
	pthread_mutex_lock(&s->lock);
	out->head_interval_ms = s->head_interval_ms;
	out->head_cuda = s->head_cuda;
	pthread_mutex_unlock(&s->lock);
}

bool sender_flush(struct sender *s, int64_t timeout_ms)
{
	return !s || shipper_flush(&s->sh, 1, timeout_ms);
}

void sender_hold_reads(struct sender *s)
{
	if (s)
		shipper_hold_reads(s->sh);
}

void sender_release_reads(struct sender *s)
{
	if (s)
		shipper_release_reads(s->sh);
}
