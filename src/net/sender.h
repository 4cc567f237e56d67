/*
 * sender.h - the agent's stream to a head (docs/wire.md).
 *
 * A thread of its own reads the agent's store (its spool, through its own
 * read-only connection) from the cursor the head last acknowledged, sends
 * batches to POST <head>/api/v1/ingest over one keep-alive connection
 * (libcurl), and moves the cursor to what the head answers it holds.  Any
 * failure (head down, network cut, a 5xx, a restart of either side) is
 * retried from the cursor with capped exponential backoff: the store holds
 * everything not yet acknowledged, so there is no buffer to overflow.  A
 * 401 or 403 (a wrong or missing token) is said once as an error and asked
 * again every minute, or as soon as --token-file holds another token.  The
 * batch grows while there is a backlog, so it catches up after an outage.
 *
 * Several heads (--head repeated, or one name with several addresses: each
 * address is a head of its own) are tried in turn: the stream is on one;
 * a refused connection, a timeout, a 5xx, 408 or 429 moves it to the next
 * at once (round robin), and only once every head failed since one last
 * answered does it back off.  A new head is asked what it holds (the
 * hello), so the rows go on from its cursor: heads that serve as one (one
 * database) hold what the others took.  A 401 or 403 is that head's
 * answer on our token, which every head shares: it does not move the
 * stream.  Another 4xx (the batch itself refused) does not either.
 *
 * Lifecycle: sender_start (after the store exists), sender_kick after each
 * tick, sender_stop (joins; a send in flight is given its timeout).
 * sender_get_stats and sender_hold_reads are safe from any thread.
 */
#ifndef JOBSCOPE_SENDER_H
#define JOBSCOPE_SENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/progress.h"
#include "http/shipper.h"
#include "net/wire.h"

#define SENDER_MAX_URLS	 8  /* --head given */
#define SENDER_MAX_HEADS 16 /* heads tried in turn: each address of a name counts */

struct sender_opts {
	const char *const *urls; /* the heads: "http://10.0.0.1:8091", ... */
	int nurls;		 /* 1 to SENDER_MAX_URLS */
	const char *token;	 /* bearer token, or NULL */
	const char *token_file;	 /* where token was read: read again after a refusal; or NULL */
	const char *ca_file; /* PEM CA bundle to trust for an https head, or NULL: the system's */
	const char *db_path; /* the agent's store */
	struct store_sender who;
	/*
	 * Told of a catch-up (a backlog after an outage: rows sent, the part of
	 * it the head holds) from the sender's thread, finished once current;
	 * NULL: nobody.  It must stay valid until sender_stop.
	 */
	const struct progress_hook *progress;
};

struct sender_stats {
	/* the stream's own state (http/shipper.h): connected, cursor_known, acked_seq (what
	 * the head holds of us, when cursor_known), sent_seq, max_seq, batches, rows,
	 * failures, last_ok_ms, refused (the head refused our token), last_error */
	struct shipper_stats ship;
	int64_t head_interval_ms; /* what the head last asked for (0: nothing) */
	bool head_cuda;		  /* ... whether it asked for CUDA tables */
	int head;		  /* the head it streams to now, or tries: an index of the heads */
	int nheads;
	int64_t moves; /* times a head answered after another one had */
};

/* One head to try: a --head URL, and one address of its name. */
struct sender_head {
	char url[1024];	  /* as given: "http://head:8091" */
	char address[64]; /* the address tried ("10.0.0.1", "::1"); "": what curl resolves */
};

/*
 * The choice of the head to try, apart so that it can be tested: n heads
 * in a ring, the one tried now (cur), how many failed in a row since one
 * last took a batch, and which one last answered.
 */
struct sender_ring {
	int n, cur;
	int failed;    /* heads failed in a row this round (since a batch held, or a back-off) */
	int answered;  /* the last head that answered: -1 none yet */
	int64_t moves; /* answers from another head than the last that answered */
};

void sender_ring_init(struct sender_ring *r, int n);
/*
 * The head tried (cur) failed: cur moves to the next.  True: it is one not
 * tried this round, to try at once; false: every head failed this round,
 * back off before trying cur (a new round starts).
 */
bool sender_ring_failed(struct sender_ring *r);
/*
 * The head tried (cur) answered the hello: true when that is a move
 * (another head answered last).  The round goes on: a head that answers
 * the hello and fails each batch (a full disk) must not keep the heads
 * from backing off.
 */
bool sender_ring_answered(struct sender_ring *r);
/* The head tried (cur) holds a batch: the failures in a row start again. */
void sender_ring_held(struct sender_ring *r);
/*
 * The heads of url: "http://HOST:PORT..." split into one a head per
 * address (addrs, as getaddrinfo gave them, duplicates dropped) when
 * there are several; else url alone, curl resolving HOST itself.  Adds
 * them to heads[*n] (at most max): 0, or -EINVAL for a URL without a host.
 */
int sender_heads_of(const char *url, const char *const *addrs, int naddrs,
		    struct sender_head *heads, int *n, int max);
/* "http://[::1]:8091/x" -> "::1", 8091: 0, or -EINVAL. */
int sender_url_host(const char *url, char *host, size_t size, int *port);

struct sender;

int sender_start(const struct sender_opts *o, struct sender **out);
void sender_kick(struct sender *s);
void sender_stop(struct sender *s);
/*
 * Waits until the head holds every row the store had when called (or
 * timeout_ms passed): true when it does.  For a clean shutdown.
 */
bool sender_flush(struct sender *s, int64_t timeout_ms);
void sender_get_stats(struct sender *s, struct sender_stats *out);
/* The heads it tries in turn, at most max of them into out: how many there are. */
int sender_get_heads(struct sender *s, struct sender_head *out, int max);
/*
 * While held, the sender reads no batch from the store: the agent's
 * retention holds it from reading the bound (acked_seq, sent_seq) until
 * its step committed, so no batch on its way to the head holds a row the
 * step counted lost.  NULL: nothing to hold.
 */
void sender_hold_reads(struct sender *s);
void sender_release_reads(struct sender *s);

#endif
