/*
 * shipper.h - a store's rows shipped from a cursor to a receiver that says
 * what it holds.  The agent's stream to a head (net/sender.c) and each
 * remote-write target (prom/remote_write.c) are two encoders under this
 * one loop: what they share (the thread, its store connection, the cursor,
 * retries, batch sizes, waits, the rows in doubt, the figures) is here
 * once; what they send and how is theirs.
 *
 * The loop, on a thread of its own with a store connection of its own:
 *
 *   start   the encoder says where the receiver stands: the last seq it
 *           holds (the head's answer to a hello; a remote-write target's
 *           cursor kept in the store).
 *   read    the rows after the cursor, at most `rows` of them, into the
 *           encoder.  None: wait for a kick (a tick) or twice the interval.
 *   send    the encoder sends what it read and says what the receiver now
 *           holds: the new cursor.
 *
 * A failure (said through shipper_error) backs off, 500 ms doubling up to
 * 30 s, and starts again from start: the store holds whatever the
 * receiver lacks, so nothing is buffered and nothing overflows.  An
 * encoder with several receivers (ops->failover) turns to the next one at
 * once instead, and backs off once it has tried them all.  A
 * refusal of our credentials (a 401 or 403, said through shipper_refused)
 * is no passing failure: trying again soon cannot help and fills the
 * receiver's log, so the loop waits SHIPPER_REFUSED_MS at once (the rows
 * stay in the store), and asks the encoder each second whether its
 * credentials changed (a token file rewritten): then it tries at once, so
 * a fixed token heals without a restart.  While a
 * backlog lasts the batch doubles up to max_rows, and a progress hook is
 * told of the catch-up; once current the batch goes back to first_rows
 * and, with batch_ms, the next read waits that long (a flush ends it) so
 * that a request carries several ticks.
 *
 * Rows are in doubt once read: sent_seq says up to where.  The store's
 * retention takes the reads lock (shipper_hold_reads) while it reads that
 * bound and deletes, so no batch on its way holds a row it counted lost.
 *
 * Lifecycle: shipper_new, shipper_run, shipper_kick after each tick, shipper_stop
 * (joins; a transfer in flight ends at once: the encoder's curl handle
 * is watched, shipper_watch_curl).  Everything else is safe from any thread.
 */
#ifndef JOBSCOPE_HTTP_SHIPPER_H
#define JOBSCOPE_HTTP_SHIPPER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/progress.h"
#include "http/curl_dl.h"

struct store;
struct shipper;

struct shipper_ops {
	/* The receiver's cursor.  0, or -errno after shipper_error: a pause, then again. */
	int (*start)(void *enc, struct shipper *sh, struct store *st, int64_t *cursor);
	/*
	 * The rows in (cursor, ...], at most max_rows, read into the encoder:
	 * *to_seq the last seq read (cursor when there is none), *nrows.
	 * 0 or -errno (the store: said here, the connection opened again).
	 */
	int (*read)(void *enc, struct store *st, int64_t cursor, int64_t max_rows, int64_t *to_seq,
		    int64_t *nrows);
	/*
	 * Sends what read took: 0 and *acked, what the receiver holds now;
	 * -E2BIG: too much at once (read fewer, at once); -EAGAIN: failed and
	 * said (back off, start again); another -errno: said, read fewer
	 * after a pause.
	 */
	int (*send)(void *enc, struct shipper *sh, struct store *st, int64_t cursor, int64_t to_seq,
		    int64_t *acked);
	/*
	 * start and send return -EACCES after shipper_refused: the receiver
	 * refused the credentials.  Asked each second while refused: true when
	 * they changed (read again from their file), to try at once.  NULL:
	 * nothing to read again.
	 */
	bool (*reauth)(void *enc);
	/*
	 * After a failure of start or send that backs off (-EAGAIN): the
	 * encoder may turn to another receiver (several heads).  True: one not
	 * tried since the last back-off, tried at once (start asks where it
	 * stands); false: back off first.  NULL: one receiver, always back off.
	 */
	bool (*failover)(void *enc);
};

#define SHIPPER_REFUSED_MS 60000 /* a refused receiver is asked again this often */

struct shipper_opts {
	const char *thread_name; /* "js-rw": its CPU apart in top -H */
	const char *what;	 /* "head http://h:8091": its messages start so */
	const char *retry_note;	 /* after a failure's message: what happens now */
	const char *again;	 /* said once answered after failures ("sending again") */
	const char *db_path;
	unsigned store_flags; /* for store_open: STORE_READONLY, or writable for a cursor */
	int64_t interval_ms;  /* the ticks' (a kick comes after each) */
	int64_t first_rows, max_rows;
	int64_t batch_ms; /* current: wait this long before the next read (0: none) */
	/* held while a batch is read: one for several shippers; NULL: its own */
	pthread_mutex_t *reads;
	const struct progress_hook *progress; /* a catch-up's progress; NULL: none */
};

struct shipper_stats {
	bool connected;	   /* the last exchange succeeded */
	bool cursor_known; /* start has said where the receiver stands */
	int64_t acked_seq; /* the cursor: what the receiver holds (-1: not known yet) */
	/*
	 * The highest seq read since the receiver last answered (else
	 * acked_seq): rows in (acked_seq, sent_seq] may be held by a receiver
	 * that took them and died before answering.
	 */
	int64_t sent_seq;
	int64_t max_seq;       /* the store's last seq, when last looked */
	int64_t batches, rows; /* sent and acknowledged */
	int64_t failures;
	int64_t last_ok_ms;
	bool refused; /* the receiver refused our credentials, last time it answered */
	char last_error[160];
};

/* A shipper for enc, not yet running (the encoder may watch its curl
 * handle first); shipper_run starts its thread. */
int shipper_new(const struct shipper_opts *o, const struct shipper_ops *ops, void *enc,
		struct shipper **out);
int shipper_run(struct shipper *sh);
void shipper_kick(struct shipper *sh);
/* Stops and joins the thread (if it runs) and frees sh.  NULL: nothing. */
void shipper_stop(struct shipper *sh);
/* The same for n of them, all told before any is joined. */
void shipper_stop_all(struct shipper *const *sh, int n);
/*
 * Waits until each receiver holds every row the store had when called
 * (or timeout_ms passed), with no batching delay from now on: true when
 * they all do.  For a clean shutdown.  All of sh[] ship the same store.
 */
bool shipper_flush(struct shipper *const *sh, int n, int64_t timeout_ms);
void shipper_get_stats(struct shipper *sh, struct shipper_stats *out);
void shipper_hold_reads(struct shipper *sh);
void shipper_release_reads(struct shipper *sh);

/* For the encoders, on the shipper's thread: */
/* A failure: counted, kept for the stats, logged once per kind of failure. */
void shipper_error(struct shipper *sh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * The receiver refused our credentials (401, 403): counted and kept like
 * a failure, marked refused, said once as an error (fmt should name the
 * option that holds them).  The encoder then returns -EACCES.
 */
void shipper_refused(struct shipper *sh, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The receiver's name in messages from now on ("head http://h2:8091"): after a move. */
void shipper_set_what(struct shipper *sh, const char *what);
/* The receiver answered: connected again (said once after failures). */
void shipper_answered(struct shipper *sh);
/* Whether shipper_stop was called. */
bool shipper_stopping(struct shipper *sh);
/* The next backoff after prev ms (0: none yet): first, then doubling, at most max. */
int64_t shipper_backoff_next(int64_t prev, int64_t first, int64_t max);
/* Sleeps up to ms, or until stopped (a backoff: no kick ends it).  False when stopping. */
bool shipper_pause(struct shipper *sh, int64_t ms);
/* Sets curl's progress callback so that a transfer in flight when the
 * shipper stops ends at once (libcurl asks about once a second). */
void shipper_watch_curl(struct shipper *sh, CURL *curl);

#endif
