/*
 * sender.c - the agent's stream to a head (see sender.h for the rules):
 * the heads tried in turn (the ring, and a name's addresses), the POST and
 * what its answer means, the shipper's encoder (hello, batch, send), and
 * its lifecycle.
 */
#include "net/sender.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

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
#define SENDER_RESOLVE_MS 30000 /* the heads' names asked again at most this often */

struct sender {
	struct sender_opts opt;
	struct shipper *sh;
	char urls[SENDER_MAX_URLS][1024]; /* --head as given */
	int nurls;
	/* the heads tried in turn, and the ring that chooses; under lock (stats read them) */
	struct sender_head heads[SENDER_MAX_HEADS];
	struct sender_ring ring;
	bool movable;		       /* the last failure is one that moves to the next head */
	bool outage_said;	       /* "no head answers" said since a head last took a batch */
	char url[1100];		       /* the ingest URL of the head tried */
	struct curl_slist *connect_to; /* its address, when its name has several */
	int64_t resolved_ms;	       /* when the names were last asked */
	char token[256];	       /* what the Authorization header carries ("": none) */
	char token_file[4096];	       /* --token-file, read again after a refusal ("": none) */
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

/* ---- the heads, in turn ---- */

void sender_ring_init(struct sender_ring *r, int n)
{
	memset(r, 0, sizeof(*r));
	r->n = n > 0 ? n : 1;
	r->answered = -1;
}

bool sender_ring_failed(struct sender_ring *r)
{
	r->cur = (r->cur + 1) % r->n;
	if (++r->failed < r->n)
		return true;
	r->failed = 0; /* every head failed: after the back-off, a new round */
	return false;
}

bool sender_ring_answered(struct sender_ring *r)
{
	bool moved = r->answered >= 0 && r->answered != r->cur;

	r->answered = r->cur;
	if (moved)
		r->moves++;
	return moved;
}

void sender_ring_held(struct sender_ring *r)
{
	r->failed = 0;
}

int sender_url_host(const char *url, char *host, size_t size, int *port)
{
	const char *p = strstr(url, "://"), *end, *at, *colon;
	size_t len;
	long n = 0;

	if (!p)
		return -EINVAL;
	*port = strncmp(url, "https://", 8) == 0 ? 443 : 80;
	p += 3;
	end = p + strcspn(p, "/?#");
	/* user:password@ is not the host */
	for (at = p; at < end; at++)
		if (*at == '@')
			p = at + 1;
	if (*p == '[') {
		const char *close = memchr(p, ']', (size_t)(end - p));

		if (!close)
			return -EINVAL;
		len = (size_t)(close - p - 1);
		p++;
		colon = close + 1 < end && close[1] == ':' ? close + 1 : NULL;
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		len = (size_t)((colon ? colon : end) - p);
	}
	if (len == 0 || len >= size)
		return -EINVAL;
	if (colon) {
		if (colon + 1 == end)
			return -EINVAL;
		for (const char *d = colon + 1; d < end; d++) {
			if (*d < '0' || *d > '9' || n > 65535)
				return -EINVAL;
			n = n * 10 + (*d - '0');
		}
		if (n < 1 || n > 65535)
			return -EINVAL;
		*port = (int)n;
	}
	memcpy(host, p, len);
	host[len] = '\0';
	return 0;
}

int sender_heads_of(const char *url, const char *const *addrs, int naddrs,
		    struct sender_head *heads, int *n, int max)
{
	char host[256];
	int port, distinct = 0;

	if (sender_url_host(url, host, sizeof(host), &port))
		return -EINVAL;
	for (int i = 0; i < naddrs; i++) {
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = strcmp(addrs[i], addrs[j]) == 0;
		distinct += !seen;
	}
	if (distinct < 2) {
		/* one address (or none known yet): curl resolves the name itself, each time */
		if (*n < max) {
			snprintf(heads[*n].url, sizeof(heads[*n].url), "%s", url);
			heads[*n].address[0] = '\0';
			(*n)++;
		}
		return 0;
	}
	for (int i = 0; i < naddrs && *n < max; i++) {
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = strcmp(addrs[i], addrs[j]) == 0;
		if (seen || strlen(addrs[i]) >= sizeof(heads[*n].address))
			continue;
		snprintf(heads[*n].url, sizeof(heads[*n].url), "%s", url);
		snprintf(heads[*n].address, sizeof(heads[*n].address), "%s", addrs[i]);
		(*n)++;
	}
	return 0;
}

/*
 * The heads of url: each address its name has (getaddrinfo, in the order
 * it gives them: the system's preference) when several, else url alone.
 * Without AI_ADDRCONFIG, which drops ::1 on a host whose only IPv6 address
 * is its loopback: an address the host cannot reach fails at once and the
 * next is tried.
 */
static void resolve_heads(const char *url, struct sender_head *heads, int *n, int max)
{
	struct addrinfo hints, *res = NULL;
	char host[256], text[SENDER_MAX_HEADS][INET6_ADDRSTRLEN];
	const char *addrs[SENDER_MAX_HEADS];
	int port, naddrs = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (sender_url_host(url, host, sizeof(host), &port) == 0 &&
	    getaddrinfo(host, NULL, &hints, &res) == 0) {
		for (struct addrinfo *ai = res; ai && naddrs < SENDER_MAX_HEADS; ai = ai->ai_next) {
			const void *a =
			    ai->ai_family == AF_INET6
				? (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr
				: (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr;

			if ((ai->ai_family == AF_INET || ai->ai_family == AF_INET6) &&
			    inet_ntop(ai->ai_family, a, text[naddrs], sizeof(text[naddrs]))) {
				addrs[naddrs] = text[naddrs];
				naddrs++;
			}
		}
		freeaddrinfo(res);
	}
	sender_heads_of(url, addrs, naddrs, heads, n, max);
}

/* Every --head, each address of its name a head of its own (at most SENDER_MAX_HEADS). */
static int resolve_all(const struct sender *s, struct sender_head *heads)
{
	int n = 0;

	for (int i = 0; i < s->nurls; i++)
		resolve_heads(s->urls[i], heads, &n, SENDER_MAX_HEADS);
	return n;
}

static int set_headers(struct sender *s);

/*
 * Turns to head i: its URL and address on a new curl handle (a kept-alive
 * connection to the last head must not carry the next request).  On the
 * shipper's thread, or before it runs.  0 or -ENOMEM.
 */
static int use_head(struct sender *s, int i)
{
	const struct sender_head *h = &s->heads[i];
	char connect_to[200];
	int n = (int)strlen(h->url);
	CURL *curl;

	while (n > 0 && h->url[n - 1] == '/')
		n--;
	/* "http://head:8091" or "http://head:8091/": the ingest path is ours */
	snprintf(s->url, sizeof(s->url), "%.*s/api/v1/ingest", n, h->url);
	curl = curl_dl_handle(s->url, &s->answer, NULL, SENDER_TIMEOUT_S, true);
	if (!curl)
		return -ENOMEM;
	if (s->curl)
		curl_fn.easy_cleanup(s->curl);
	s->curl = curl;
	curl_fn.slist_free_all(s->connect_to);
	s->connect_to = NULL;
	if (h->address[0]) {
		char host[256];
		int port;

		/* the URL's name stays (Host header, TLS name): only the address is chosen */
		if (sender_url_host(h->url, host, sizeof(host), &port) == 0) {
			snprintf(connect_to, sizeof(connect_to),
				 strchr(h->address, ':') ? "::[%s]:%d" : "::%s:%d", h->address,
				 port);
			s->connect_to = curl_fn.slist_append(NULL, connect_to);
			if (!s->connect_to)
				return -ENOMEM;
			curl_fn.easy_setopt(s->curl, CURLOPT_CONNECT_TO, s->connect_to);
		}
		snprintf(s->what, sizeof(s->what), "head %s (%s)", h->url, h->address);
	} else {
		snprintf(s->what, sizeof(s->what), "head %s", h->url);
	}
	if (s->sh)
		shipper_set_what(s->sh, s->what);
	if (s->ca_file[0])
		curl_fn.easy_setopt(s->curl, CURLOPT_CAINFO, s->ca_file);
	if (s->sh)
		shipper_watch_curl(s->sh, s->curl);
	return set_headers(s);
}

/*
 * POSTs s->body; on a 200, *acked receives the head's acked_seq (and what
 * it asks is kept).  0, or -EAGAIN (retry later), -E2BIG (send less),
 * -EINVAL (the head refused it).  s->movable says whether the failure is
 * one that moves to the next head: no answer, a 5xx, 408, 429, an answer
 * that is no head's.
 */
static int post(struct sender *s, int64_t *acked)
{
	long status = 0;
	CURLcode rc;

	s->movable = false;
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
		s->movable = true; /* refused, timed out, reset, not resolved: no head there now */
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
		bool refused = status >= 400 && status < 500 && status != 408 && status != 429;

		/* a 4xx refuses the batch itself: any head would */
		s->movable = !refused;
		shipper_error(s->sh, "HTTP %ld: %.100s", status, strbuf_str(&s->answer));
		return refused ? -EINVAL : -EAGAIN;
	}
	if (wire_decode_answer(s->answer.buf, s->answer.len, &s->reply)) {
		s->movable = true;
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
	int64_t moves;
	bool moved;
	int ret;

	(void)st;
	wire_encode_hello(&s->opt.who, &s->body);
	ret = post(s, cursor);
	if (ret)
		return ret == -EACCES ? ret : -EAGAIN;
	shipper_answered(sh);
	pthread_mutex_lock(&s->lock);
	moved = sender_ring_answered(&s->ring);
	moves = s->ring.moves;
	pthread_mutex_unlock(&s->lock);
	if (moved)
		log_info("%s: streaming there now (move %lld); it holds our rows up to seq %lld: "
			 "the rest follows from there",
			 s->what, (long long)moves, (long long)*cursor);
	return 0;
}

/* Whether two lists of heads are the same heads in the same order. */
static bool same_heads(const struct sender_head *a, int na, const struct sender_head *b, int nb)
{
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++)
		if (strcmp(a[i].url, b[i].url) != 0 || strcmp(a[i].address, b[i].address) != 0)
			return false;
	return true;
}

/*
 * After a failure: the next head when the failure moves the stream (see
 * post); true to try it at once, false to back off first (every head
 * failed this round, or the failure is no reason to move).
 */
static bool ship_failover(void *enc)
{
	struct sender *s = enc;
	struct sender_head fresh[SENDER_MAX_HEADS];
	bool again, say;
	int cur, before, n = 0;

	if (!s->movable)
		return false;
	pthread_mutex_lock(&s->lock);
	before = s->ring.cur;
	again = sender_ring_failed(&s->ring);
	cur = s->ring.cur;
	say = !again && !s->outage_said && s->ring.n > 1;
	if (say)
		s->outage_said = true;
	pthread_mutex_unlock(&s->lock);
	if (say)
		log_warn(0,
			 "agent: no head answers (%d tried in turn); trying them again with "
			 "back-off, the store keeps what they lack",
			 s->ring.n);
	if (!again && time_now_ms() - s->resolved_ms >= SENDER_RESOLVE_MS) {
		/* a round failed: the names may point elsewhere now (asked on this thread,
		 * so not after each round: a resolver that does not answer holds it) */
		s->resolved_ms = time_now_ms();
		n = resolve_all(s, fresh);
		pthread_mutex_lock(&s->lock);
		if (n > 0 && !same_heads(fresh, n, s->heads, s->ring.n)) {
			struct sender_head last = {{0}, {0}};
			int answered = s->ring.answered;
			int64_t moves = s->ring.moves;

			if (answered >= 0 && answered < s->ring.n)
				last = s->heads[answered];
			memcpy(s->heads, fresh, sizeof(fresh[0]) * (size_t)n);
			sender_ring_init(&s->ring, n);
			s->ring.moves = moves;
			if (answered >= 0) {
				/* the one that answered last, where it is now; gone: n, so
				 * that whichever answers next is a move */
				s->ring.answered = n;
				for (int i = 0; i < n; i++)
					if (same_heads(&s->heads[i], 1, &last, 1))
						s->ring.answered = i;
			}
			before = -1;
			cur = 0;
		}
		pthread_mutex_unlock(&s->lock);
	}
	if (cur != before && use_head(s, cur))
		return false;
	return again;
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
	struct sender *s = enc;
	int ret = post(s, acked);

	if (ret == 0) {
		pthread_mutex_lock(&s->lock);
		sender_ring_held(&s->ring);
		s->outage_said = false;
		pthread_mutex_unlock(&s->lock);
	}
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

static const struct shipper_ops sender_ops = {ship_start, ship_read, ship_send, ship_reauth,
					      ship_failover};

static void sender_free(struct sender *s)
{
	if (s->curl)
		curl_fn.easy_cleanup(s->curl);
	curl_fn.slist_free_all(s->connect_to);
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
	    .again = "connected again",
	    .store_flags = STORE_READONLY,
	    .interval_ms = o->who.interval_ms,
	    .first_rows = SENDER_FIRST_ROWS,
	    .max_rows = SENDER_MAX_ROWS,
	    .progress = o->progress,
	};
	struct sender *s;
	int ret;

	*out = NULL;
	if (o->nurls < 1 || o->nurls > SENDER_MAX_URLS)
		return log_err(-EINVAL, "%d heads: 1 to %d", o->nurls, SENDER_MAX_URLS);
	for (int i = 0; i < o->nurls; i++) {
		char host[256];
		int port;

		if (sender_url_host(o->urls[i], host, sizeof(host), &port) ||
		    strlen(o->urls[i]) >= sizeof(s->urls[0]))
			return log_err(-EINVAL, "bad --head URL '%s'", o->urls[i]);
	}
	if (curl_dl_load())
		return log_err(-ENOENT, "cannot stream to '%s'", o->urls[0]);
	s = calloc(1, sizeof(*s));
	if (!s)
		return log_err(-ENOMEM, "out of memory");
	s->opt = *o;
	snprintf(s->db_path, sizeof(s->db_path), "%s", o->db_path);
	s->opt.db_path = s->db_path;
	s->opt.urls = NULL; /* ours are in s->urls */
	for (int i = 0; i < o->nurls; i++)
		snprintf(s->urls[s->nurls++], sizeof(s->urls[0]), "%s", o->urls[i]);
	pthread_mutex_init(&s->lock, NULL);
	store_rowset_init(&s->batch.rows, 0);
	wire_batch_from(&s->batch, &o->who);
	strbuf_init(&s->body, WIRE_MAX_BODY);
	strbuf_init(&s->answer, SENDER_ANSWER_MAX);
	strbuf_init(&s->zbody, WIRE_MAX_BODY);
	sender_ring_init(&s->ring, resolve_all(s, s->heads));
	s->resolved_ms = time_now_ms();
	so.retry_note = s->ring.n > 1 ? "trying the next head; the store keeps what the heads lack"
				      : "retrying; the store keeps what the head lacks";
	if (o->token)
		snprintf(s->token, sizeof(s->token), "%s", o->token);
	if (o->token_file)
		snprintf(s->token_file, sizeof(s->token_file), "%s", o->token_file);
	if (o->ca_file)
		snprintf(s->ca_file, sizeof(s->ca_file), "%s", o->ca_file);
	curl_fn.global_init(CURL_GLOBAL_DEFAULT);
	ret = use_head(s, 0);
	if (ret) {
		sender_free(s);
		curl_fn.global_cleanup();
		return log_err(ret, "cannot set up libcurl");
	}
	so.what = s->what;
	so.db_path = s->db_path;
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
	out->head = s->ring.cur;
	out->nheads = s->ring.n;
	out->moves = s->ring.moves;
	pthread_mutex_unlock(&s->lock);
}

int sender_get_heads(struct sender *s, struct sender_head *out, int max)
{
	int n;

	pthread_mutex_lock(&s->lock);
	n = s->ring.n;
	for (int i = 0; i < n && i < max; i++)
		out[i] = s->heads[i];
	pthread_mutex_unlock(&s->lock);
	return n;
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
