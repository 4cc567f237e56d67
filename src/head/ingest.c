/*
 * ingest.c - POST /api/v1/ingest: an agent's batch (docs/wire.md) decoded
 * (net/wire.c) on the HTTP thread that read it, then committed by the one
 * committer thread together with every batch that arrived meanwhile (group
 * commit, DESIGN.md section 6: one transaction, one fsync; at most one every
 * INGEST_COMMIT_EVERY_MS), and only then
 * acknowledged with the highest seq of that agent the store holds and what
 * the active profiling sessions ask of its node.
 *
 * The handler defers its answer (http_defer): its thread goes on serving
 * other connections while the batch waits for its group.  The queue is
 * bounded; a full queue answers 503 (the agent sends again later), and so
 * does a head that is stopping.
 */
#include "head/head.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "net/wire.h"
#include "store/profiling.h"
#include "store/sync.h"

#define INGEST_QUEUE_MAX 4096 /* batches waiting for a group */
#define INGEST_GROUP_MAX 512  /* batches in one transaction */
/*
 * A transaction (a WAL's fsync) at most this often: 2,000 agents' batches
 * a second were 1,700 transactions of one or two batches each, a fifth of
 * the head's CPU in fdatasync and the WAL's writes of the same pages again
 * (bench/RESULTS.md section 8); now about 100 of 20 batches each.  The
 * answers wait that long at most.
 */
#define INGEST_COMMIT_EVERY_MS 10
/*
 * The active sessions, as the answers' control channel needs them, are
 * read again at most this often (and at once after this head started or
 * stopped one): a session started on another head on the same database
 * reaches this head's agents within it.  One query a second, not one a
 * batch (on PostgreSQL a round trip each).
 */
#define INGEST_SESSIONS_MS 1000

struct ingest_item {
	struct ingest_item *next;
	struct wire_batch wb;
	struct http_pending *answer;
};

struct head_ingest {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct ingest_item *head, *tail; /* the queue */
	size_t queued;
	/*
	 * Answered batches, to be freed by the HTTP threads (freeing a parsed
	 * batch is a tenth of its cost: not on the committer, the bottleneck).
	 */
	struct ingest_item *garbage;
	bool stopping;
	pthread_t thread;
	bool started;
	struct head *h;
	/* the active sessions (the committer's, under wlock): valid, read at read_ms, gen */
	struct session_record *sessions;
	size_t nsessions, sessions_cap;
	bool sessions_valid;
	int64_t sessions_read_ms;
	uint64_t sessions_gen;
	/* counters, read by the views (head_ingest_counters) */
	uint64_t batches, refused, groups;
};

void head_ingest_not_post(void *arg, const struct http_request *req, struct http_response *res)
{
	(void)arg;
	(void)req;
	http_error(res, 405, "POST a batch (docs/wire.md)");
}

static void count(uint64_t *c, uint64_t n)
{
	__atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

static int session_keep(const struct session_record *s, void *arg)
{
	struct head_ingest *q = arg;

	if (ARRAY_GROW(q->sessions, q->nsessions, q->sessions_cap, 4))
		return -ENOMEM;
	q->sessions[q->nsessions++] = *s;
	return 0;
}

/* The active sessions read again when they may have changed (INGEST_SESSIONS_MS). */
static void sessions_fresh(struct head_ingest *q, int64_t now_ms)
{
	struct store *st = q->h->writer;
	uint64_t gen = store_sessions_generation(st);

	if (q->sessions_valid && gen == q->sessions_gen &&
	    now_ms - q->sessions_read_ms < INGEST_SESSIONS_MS && now_ms >= q->sessions_read_ms)
		return;
	q->nsessions = 0;
	q->sessions_valid = store_for_each_session(st, true, session_keep, q) == 0;
	q->sessions_read_ms = now_ms;
	q->sessions_gen = gen;
}

/* Whether a session's nodes ("a,b"; "": every node) hold hostname. */
static bool session_covers(const struct session_record *s, const char *hostname)
{
	size_t n = strlen(hostname);

	for (const char *p = s->nodes; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && strncmp(p, hostname, n) == 0)
			return true;
		if (!end)
			return false;
		p = end + 1;
	}
	return !s->nodes[0];
}

/*
 * What the active sessions ask of a node: the smallest interval among
 * those covering it, whether one asks for CUDA tables, and their names,
 * apart by 0x1f (a name holds no control character).
 */
static void session_control(const struct head_ingest *q, const char *hostname,
			    struct wire_answer *a)
{
	size_t len = 0;

	for (size_t i = 0; q->sessions_valid && i < q->nsessions; i++) {
		const struct session_record *s = &q->sessions[i];

		if (!session_covers(s, hostname))
			continue;
		if (s->interval_ms > 0 && (a->interval_ms == 0 || s->interval_ms < a->interval_ms))
			a->interval_ms = s->interval_ms;
		if (s->cuda)
			a->cuda = true;
		if (len + strlen(s->name) + 2 < sizeof(a->sessions))
			len += (size_t)snprintf(a->sessions + len, sizeof(a->sessions) - len,
						"%s%s", len ? "\x1f" : "", s->name);
	}
}

/* The answer to one batch of a group that was committed (or not). */
static void answer(struct head_ingest *q, struct store_ingest_item *it, struct ingest_item *item,
		   struct http_response *res)
{
	if (it->ret == -EINVAL) {
		count(&q->refused, 1);
		http_error(res, 400, it->errmsg[0] ? it->errmsg : "bad batch");
	} else if (it->ret == -ENOSPC) {
		http_error(res, 507,
			   "the head's disk is full: nothing was stored, send again later");
	} else if (it->ret) {
		const char *why = store_errmsg(q->h->writer);
		char msg[640];

		/* why, for the agent's log: the database away is said as libpq says it */
		snprintf(msg, sizeof(msg),
			 "the head cannot store the batch now%s%s%s: send again later",
			 why[0] ? " (" : "", why, why[0] ? ")" : "");
		http_error(res, 503, msg);
	} else {
		struct wire_answer a = {.acked_seq = it->acked_seq};

		count(&q->batches, 1);
		/* the control channel: what the active sessions ask of this node */
		session_control(q, item->wb.b.who.hostname, &a);
		wire_encode_answer(&a, &res->body);
	}
}

/* One group: committed in one transaction, then every batch of it answered. */
static void commit_group(struct head_ingest *q, struct ingest_item *first, size_t n)
{
	struct store_ingest_item *its = calloc(n, sizeof(*its));
	struct ingest_item *item = first, *last;
	size_t i;

	if (its) {
		for (i = 0, item = first; i < n; i++, item = item->next)
			its[i].b = &item->wb.b;
		pthread_mutex_lock(&q->h->wlock);
		store_ingest_group(q->h->writer, its, n, time_now_ms());
		sessions_fresh(q, time_now_ms());
		for (i = 0, item = first; i < n; i++, item = item->next)
			answer(q, &its[i], item, http_pending_response(item->answer));
		pthread_mutex_unlock(&q->h->wlock);
		count(&q->groups, 1);
	}
	for (i = 0, item = first; i < n; i++, item = item->next) {
		if (!its)
			http_error(http_pending_response(item->answer), 503,
				   "the head is out of memory: send again later");
		http_pending_done(item->answer);
	}
	free(its);
	for (last = first; last->next; last = last->next)
		;
	pthread_mutex_lock(&q->lock);
	last->next = q->garbage;
	q->garbage = first;
	pthread_mutex_unlock(&q->lock);
}

static void free_items(struct ingest_item *item)
{
	struct ingest_item *next;

	for (; item; item = next) {
		next = item->next;
		wire_batch_release(&item->wb);
		free(item);
	}
}

/* The committer: takes whatever is queued (up to a group), commits it, again. */
static void *committer(void *arg)
{
	struct head_ingest *q = arg;
	struct timespec next = {0, 0}; /* the next group's earliest start (CLOCK_MONOTONIC) */

	for (;;) {
		struct ingest_item *first, *last;
		size_t n = 0;

		pthread_mutex_lock(&q->lock);
		while (!q->head && !q->stopping)
			pthread_cond_wait(&q->wake, &q->lock);
		/*
		 * At most one transaction every INGEST_COMMIT_EVERY_MS: under a
		 * stream of batches the next group gathers until then (or until it
		 * is full); a batch that comes after a quiet spell goes at once
		 */
		while (q->head && q->queued < INGEST_GROUP_MAX && !q->stopping &&
		       pthread_cond_timedwait(&q->wake, &q->lock, &next) == 0)
			;
		if (!q->head) { /* stopping, nothing left */
			pthread_mutex_unlock(&q->lock);
			break;
		}
		time_deadline_mono_ms(&next, INGEST_COMMIT_EVERY_MS);
		first = last = q->head;
		for (n = 1; last->next && n < INGEST_GROUP_MAX; n++)
			last = last->next;
		q->head = last->next;
		if (!q->head)
			q->tail = NULL;
		last->next = NULL;
		q->queued -= n;
		pthread_mutex_unlock(&q->lock);
		commit_group(q, first, n);
	}
	return NULL;
}

int head_ingest_start(struct head *h)
{
	struct head_ingest *q = calloc(1, sizeof(*q));

	if (!q)
		return log_err(-ENOMEM, "out of memory");
	pthread_mutex_init(&q->lock, NULL);
	time_cond_init_mono(&q->wake); /* the next group's start: time_deadline_mono_ms */
	q->h = h;
	if (pthread_create(&q->thread, NULL, committer, q) != 0) {
		free(q);
		return log_err(-EAGAIN, "cannot start the head's committer thread");
	}
	q->started = true;
	h->ing = q;
	return 0;
}

void head_ingest_stop(struct head *h)
{
	struct head_ingest *q = h->ing;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stopping = true;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
	if (q->started)
		pthread_join(q->thread, NULL); /* it drains the queue first */
	q->started = false;
}

void head_ingest_free(struct head *h)
{
	struct head_ingest *q = h->ing;

	if (!q)
		return;
	free_items(q->garbage);
	free(q->sessions);
	pthread_cond_destroy(&q->wake);
	pthread_mutex_destroy(&q->lock);
	free(q);
	h->ing = NULL;
}

void head_ingest_counters(const struct head *h, uint64_t *batches, uint64_t *refused,
			  uint64_t *groups)
{
	*batches = __atomic_load_n(&h->ing->batches, __ATOMIC_RELAXED);
	*refused = __atomic_load_n(&h->ing->refused, __ATOMIC_RELAXED);
	*groups = __atomic_load_n(&h->ing->groups, __ATOMIC_RELAXED);
}

/* The body, decompressed if it is zstd: 0, or the status to answer with (msg says why). */
static int body_of(const struct http_request *req, struct strbuf *inflated, const char **body,
		   size_t *len, const char **msg)
{
	const char *enc = http_header(req, "Content-Encoding");
	int ret;

	*body = req->body;
	*len = req->body_len;
	if (!enc || strcmp(enc, "identity") == 0)
		return 0;
	if (strcmp(enc, "zstd") != 0) {
		*msg = "Content-Encoding: zstd or none";
		return 415;
	}
	ret = wire_decompress(req->body, req->body_len, inflated);
	if (ret) {
		*msg = ret == -E2BIG ? "batch larger than the cap once decompressed"
				     : "not a zstd body";
		return ret == -E2BIG ? 413 : 400;
	}
	*body = inflated->buf ? inflated->buf : "";
	*len = inflated->len;
	return 0;
}

void head_ingest(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct head_ingest *q = h->ing;
	struct ingest_item *item;
	struct strbuf inflated;
	const char *body, *msg = NULL;
	size_t len;
	char err[256];
	int status, ret;
	bool full, stopping;

	pthread_mutex_lock(&q->lock);
	item = q->garbage;
	q->garbage = NULL;
	pthread_mutex_unlock(&q->lock);
	free_items(item);
	item = calloc(1, sizeof(*item));
	if (!item) {
		http_error(res, 503, "the head is out of memory: send again later");
		return;
	}
	/* decoded here, on the HTTP thread: decoding is most of a batch's CPU */
	strbuf_init(&inflated, WIRE_MAX_BODY + 1);
	status = body_of(req, &inflated, &body, &len, &msg);
	ret = status ? 0 : wire_decode_batch(body, len, &item->wb, err, sizeof(err));
	strbuf_release(&inflated);
	if (status || ret) {
		if (ret == -EINVAL)
			count(&q->refused, 1);
		http_error(res,
			   status	    ? status
			   : ret == -EINVAL ? 400
					    : 503,
			   status	    ? msg
			   : ret == -EINVAL ? (err[0] ? err : "bad batch")
					    : "the head is out of memory");
		if (!status)
			wire_batch_release(&item->wb);
		free(item);
		return;
	}
	pthread_mutex_lock(&q->lock);
	stopping = q->stopping;
	full = q->queued >= INGEST_QUEUE_MAX;
	if (!stopping && !full) {
		item->answer = http_defer(req);
		if (q->tail)
			q->tail->next = item;
		else
			q->head = item;
		q->tail = item;
		q->queued++;
		/* the committer waits for a first batch, or for a full group */
		if (q->queued == 1 || q->queued >= INGEST_GROUP_MAX)
			pthread_cond_signal(&q->wake);
	}
	pthread_mutex_unlock(&q->lock);
	if (stopping || full) {
		http_error(res, 503,
			   stopping ? "the head is stopping: send again later"
				    : "the head is behind: send again later");
		wire_batch_release(&item->wb);
		free(item);
	}
}
