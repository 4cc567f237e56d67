/*
 * sender.c - the agent's stream to a head (see sender.h for the rules).
 */
#include "net/sender.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "http/curl_dl.h"
#include "store/store.h"
#include "store/sync.h"

#define SENDER_FIRST_ROWS   2000    /* rows in a batch when current */
#define SENDER_MAX_ROWS	    50000   /* ... and at most, catching up */
#define SENDER_BACKOFF_MS   500	    /* first retry */
#define SENDER_BACKOFF_MAX  30000   /* retries at most this far apart */
#define SENDER_TIMEOUT_S    30
#define SENDER_ANSWER_MAX   65536

struct sender {
	struct sender_opts opt;
	char url[1024];
	char auth[300];
	char db_path[4096];
	char token[256];
	char ca_file[4096];
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_mutex_t reads; /* held while a batch is read (sender_hold_reads) */
	bool stop, kicked, started;
	struct sender_stats stats; /* under lock */
	CURL *curl;
	struct curl_slist *headers, *zheaders;
	struct strbuf body, answer, zbody;
	struct store_batch batch; /* the rows being sent (released once encoded) */
	struct wire_answer reply;
};

static void set_error(struct sender *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_error(struct sender *s, const char *fmt, ...)
{
	char msg[160];
	va_list ap;
	bool first;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&s->lock);
	first = s->stats.connected || strcmp(s->stats.last_error, msg) != 0;
	s->stats.connected = false;
	s->stats.failures++;
	snprintf(s->stats.last_error, sizeof(s->stats.last_error), "%s", msg);
	pthread_mutex_unlock(&s->lock);
	if (first) /* once per kind of failure, not once per retry */
		log_warn(0, "head %s: %s (retrying; the store keeps what the head lacks)",
			 s->opt.url, msg);
}

/*
 * POSTs s->body; on a 200, *acked receives the head's acked_seq.  0, or
 * -EAGAIN (retry later), -E2BIG (send less), -EINVAL (the head refused it).
 */
static int post(struct sender *s, int64_t *acked, int64_t *interval_ms)
{
	long status = 0;
	CURLcode rc;

	strbuf_reset(&s->answer);
	/* large batches (catching up) go compressed: JSON rows shrink ~10x */
	if (s->body.len > WIRE_COMPRESS_ABOVE && wire_compress(s->body.buf, s->body.len, &s->zbody) == 0) {
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
		set_error(s, "%s", curl_fn.easy_strerror(rc));
		return -EAGAIN;
	}
	curl_fn.easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status == 413)
		return -E2BIG;
	if (status != 200) {
		set_error(s, "HTTP %ld: %.100s", status, strbuf_str(&s->answer));
		return status >= 400 && status < 500 && status != 408 && status != 429 ? -EINVAL
											 : -EAGAIN;
	}
	if (wire_decode_answer(s->answer.buf, s->answer.len, &s->reply)) {
		set_error(s, "an answer without acked_seq");
		return -EAGAIN;
	}
	*acked = s->reply.acked_seq;
	*interval_ms = s->reply.interval_ms;
	return 0;
}

/*
 * The rows after cursor (at most max_rows) as the body of a batch, in
 * s->body: 0 or -errno.  *max_seq: the store's last seq, read after.
 */
static int encode_batch(struct sender *s, struct store *st, int64_t cursor, int64_t max_rows,
			int64_t *to_seq, int64_t *max_seq, int64_t *nrows)
{
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
	if (store_max_seq(st, max_seq))
		*max_seq = *to_seq;
	return ret;
}

/*
 * Sleeps up to ms, or until stopped, or (kickable) until a tick kicks us.
 * A backoff is not kickable: a tick every 100 ms must not turn it into a
 * retry every 100 ms.  Returns false when stopping.
 */
static bool wait_ms(struct sender *s, int64_t ms, bool kickable)
{
	struct timespec until;
	bool go_on;

	time_deadline_ms(&until, ms);
	pthread_mutex_lock(&s->lock);
	while (!s->stop && !(kickable && s->kicked))
		if (pthread_cond_timedwait(&s->cond, &s->lock, &until) == ETIMEDOUT)
			break;
	if (kickable)
		s->kicked = false;
	go_on = !s->stop;
	pthread_mutex_unlock(&s->lock);
	return go_on;
}

static bool stopping(struct sender *s)
{
	bool stop;

	pthread_mutex_lock(&s->lock);
	stop = s->stop;
	pthread_mutex_unlock(&s->lock);
	return stop;
}

/*
 * libcurl asks this during a transfer (about once a second while it waits):
 * a transfer in flight when the agent stops (a head that takes its request
 * and never answers) ends at once rather than after SENDER_TIMEOUT_S; its
 * rows stay in the store, as after any failed send.
 */
static int abort_when_stopping(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			       curl_off_t ulnow)
{
	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return stopping(arg) ? 1 : 0;
}

/* Rows up to seq are in doubt until the head answers (stats.sent_seq). */
static void mark_sent(struct sender *s, int64_t seq)
{
	pthread_mutex_lock(&s->lock);
	if (seq > s->stats.sent_seq)
		s->stats.sent_seq = seq;
	pthread_mutex_unlock(&s->lock);
}

static void *sender_main(void *arg)
{
	struct sender *s = arg;
	struct store *st = NULL;
	int64_t cursor = -1, rows = SENDER_FIRST_ROWS, backoff = 0;
	/* a catch-up in progress: the head held from_seq when it began; rows sent since */
	int64_t catchup_from_seq = -1, catchup_rows = 0;

	while (!stopping(s)) {
		int64_t to_seq = 0, max_seq = 0, nrows = 0, acked = 0, iv = 0;
		int ret;

		if (!st && store_open(s->db_path, STORE_READONLY, &st)) {
			st = NULL;
			wait_ms(s, 1000, false);
			continue;
		}
		if (cursor < 0) {
			/* hello: no rows, just "what do you hold of me?" */
			ret = store_max_seq(st, &max_seq);
			wire_encode_hello(&s->opt.who, &s->body);
		} else {
			/*
			 * Rows are in doubt once read for a batch: retention must
			 * not count a row lost that a body on its way to the head
			 * holds.  It reads the mark and deletes with our reads
			 * held (sender_hold_reads), so the two never cross.
			 */
			pthread_mutex_lock(&s->reads);
			ret = encode_batch(s, st, cursor, rows, &to_seq, &max_seq, &nrows);
			if (ret == 0)
				mark_sent(s, to_seq);
			pthread_mutex_unlock(&s->reads);
			if (ret == 0 && to_seq <= cursor) {
				pthread_mutex_lock(&s->lock);
				s->stats.max_seq = max_seq;
				pthread_mutex_unlock(&s->lock);
				/* nothing new: wait for the next tick */
				wait_ms(s, s->opt.who.interval_ms * 2, true);
				continue;
			}
		}
		if (ret) {
			set_error(s, "cannot read the store: %s", strerror(-ret));
			store_close(st);
			st = NULL;
			wait_ms(s, 1000, false);
			continue;
		}
		ret = post(s, &acked, &iv);
		if (ret == -E2BIG && rows > 100) {
			rows /= 2;
			continue;
		}
		if (ret) {
			backoff = backoff ? backoff * 2 : SENDER_BACKOFF_MS;
			if (backoff > SENDER_BACKOFF_MAX)
				backoff = SENDER_BACKOFF_MAX;
			cursor = -1; /* the head may have lost or got more: ask again */
			wait_ms(s, backoff, false);
			continue;
		}
		backoff = 0;
		pthread_mutex_lock(&s->lock);
		if (!s->stats.connected && s->stats.failures)
			log_info("head %s: connected again", s->opt.url);
		s->stats.connected = true;
		s->stats.cursor_known = true;
		s->stats.acked_seq = acked;
		s->stats.sent_seq = acked; /* answered: nothing in doubt */
		s->stats.max_seq = max_seq > acked ? max_seq : acked;
		s->stats.last_ok_ms = time_now_ms();
		s->stats.head_interval_ms = iv;
		s->stats.head_cuda = s->reply.cuda;
		if (cursor >= 0) {
			s->stats.batches++;
			s->stats.rows += nrows;
		}
		pthread_mutex_unlock(&s->lock);
		/* a head that holds less than we sent must be sent the rest */
		cursor = acked;
		if (max_seq > cursor) {
			/* a backlog: bigger batches until current */
			if (catchup_from_seq < 0) {
				catchup_from_seq = cursor;
				catchup_rows = 0;
			}
			catchup_rows += nrows;
			progress_step(s->opt.progress, catchup_rows,
				      (double)(cursor - catchup_from_seq) /
					  (double)(max_seq - catchup_from_seq));
			if (rows < SENDER_MAX_ROWS)
				rows *= 2;
			continue;
		}
		if (catchup_from_seq >= 0)
			progress_finish(s->opt.progress);
		catchup_from_seq = -1;
		rows = SENDER_FIRST_ROWS;
	}
	if (catchup_from_seq >= 0)
		progress_finish(s->opt.progress);
	if (st)
		store_close(st);
	return NULL;
}

int sender_start(const struct sender_opts *o, struct sender **out)
{
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
	store_rowset_init(&s->batch.rows, 0);
	wire_batch_from(&s->batch, &o->who);
	/* "http://head:8091" or "http://head:8091/": the ingest path is ours */
	n = (int)strlen(o->url);
	while (n > 0 && o->url[n - 1] == '/')
		n--;
	if (n == 0 || snprintf(s->url, sizeof(s->url), "%.*s/api/v1/ingest", n, o->url) >=
			  (int)sizeof(s->url)) {
		free(s);
		return log_err(-EINVAL, "bad --head URL '%s'", o->url);
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	pthread_mutex_init(&s->reads, NULL);
	strbuf_init(&s->body, WIRE_MAX_BODY);
	strbuf_init(&s->answer, SENDER_ANSWER_MAX);
	strbuf_init(&s->zbody, WIRE_MAX_BODY);
	curl_fn.global_init(CURL_GLOBAL_DEFAULT);
	s->curl = curl_dl_handle(s->url, &s->answer, NULL, SENDER_TIMEOUT_S, true);
	if (!s->curl) {
		free(s);
		return log_err(-ENOMEM, "cannot set up libcurl");
	}
	s->headers = curl_fn.slist_append(NULL, "Content-Type: application/json");
	if (o->token) {
		snprintf(s->auth, sizeof(s->auth), "Authorization: Bearer %s", o->token);
		s->headers = curl_fn.slist_append(s->headers, s->auth);
	}
	s->headers = curl_fn.slist_append(s->headers, "Expect:"); /* no 100-continue round trip */
	s->zheaders = curl_fn.slist_append(NULL, "Content-Type: application/json");
	s->zheaders = curl_fn.slist_append(s->zheaders, "Content-Encoding: zstd");
	if (o->token)
		s->zheaders = curl_fn.slist_append(s->zheaders, s->auth);
	s->zheaders = curl_fn.slist_append(s->zheaders, "Expect:");
	curl_fn.easy_setopt(s->curl, CURLOPT_HTTPHEADER, s->headers);
	curl_fn.easy_setopt(s->curl, CURLOPT_XFERINFOFUNCTION, abort_when_stopping);
	curl_fn.easy_setopt(s->curl, CURLOPT_XFERINFODATA, s);
	curl_fn.easy_setopt(s->curl, CURLOPT_NOPROGRESS, 0L);
	if (o->ca_file) {
		snprintf(s->ca_file, sizeof(s->ca_file), "%s", o->ca_file);
		curl_fn.easy_setopt(s->curl, CURLOPT_CAINFO, s->ca_file);
	}
	if (pthread_create(&s->thread, NULL, sender_main, s) != 0) {
		curl_fn.slist_free_all(s->headers);
		curl_fn.easy_cleanup(s->curl);
		free(s);
		return log_err(-EAGAIN, "cannot start the sender thread");
	}
	s->started = true;
	*out = s;
	return 0;
}

void sender_kick(struct sender *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->kicked = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

void sender_stop(struct sender *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (s->started)
		pthread_join(s->thread, NULL);
	curl_fn.slist_free_all(s->headers);
	curl_fn.slist_free_all(s->zheaders);
	curl_fn.easy_cleanup(s->curl);
	curl_fn.global_cleanup();
	strbuf_release(&s->zbody);
	strbuf_release(&s->body);
	strbuf_release(&s->answer);
	store_rowset_release(&s->batch.rows);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->reads);
	free(s);
}

void sender_get_stats(struct sender *s, struct sender_stats *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->stats;
	pthread_mutex_unlock(&s->lock);
}

bool sender_flush(struct sender *s, int64_t timeout_ms)
{
	int64_t deadline = time_now_ms() + timeout_ms, want = -1;
	struct store *st = NULL;
	bool done = false;

	if (!s)
		return true;
	if (store_open(s->db_path, STORE_READONLY, &st) == 0) {
		store_max_seq(st, &want);
		store_close(st);
	}
	if (want < 0)
		return false;
	while (!done && time_now_ms() < deadline) {
		struct timespec pause = {0, 20 * 1000000};

		sender_kick(s);
		pthread_mutex_lock(&s->lock);
		done = s->stats.cursor_known && s->stats.acked_seq >= want;
		pthread_mutex_unlock(&s->lock);
		if (!done)
			nanosleep(&pause, NULL);
	}
	return done;
}

void sender_hold_reads(struct sender *s)
{
	if (s)
		pthread_mutex_lock(&s->reads);
}

void sender_release_reads(struct sender *s)
{
	if (s)
		pthread_mutex_unlock(&s->reads);
}
