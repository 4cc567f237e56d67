/*
 * shipper.c - the loop that ships a store's rows from a cursor (see
 * shipper.h): start, read, send, move the cursor; back off and start again
 * after a failure; bigger batches through a backlog; the waits between.
 */
#include "http/shipper.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "store/store.h"
#include "store/sync.h"

#define SHIPPER_BACKOFF_MS  500	  /* first retry */
#define SHIPPER_BACKOFF_MAX 30000 /* retries at most this far apart */
#define SHIPPER_MIN_ROWS    100	  /* a batch is not halved below this */

struct shipper {
	struct shipper_opts opt;
	const struct shipper_ops *ops;
	void *enc;
	char db_path[4096], what[1100], retry_note[200], again[64], thread_name[16];
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_mutex_t own_reads;
	bool stop, kicked, flushing; /* under lock */
	struct shipper_stats stats;  /* under lock */
};

/*
 * A failed exchange into the figures (refused: the receiver refused our
 * credentials); true when it is news: another kind than the last one.
 */
static bool note_failure(struct shipper *sh, const char *msg, bool refused)
{
	bool first;

	pthread_mutex_lock(&sh->lock);
	first = (refused ? !sh->stats.refused : sh->stats.connected) ||
		strcmp(sh->stats.last_error, msg) != 0;
	sh->stats.connected = false;
	sh->stats.refused = refused;
	sh->stats.failures++;
	snprintf(sh->stats.last_error, sizeof(sh->stats.last_error), "%s", msg);
	pthread_mutex_unlock(&sh->lock);
	return first;
}

void shipper_error(struct shipper *sh, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (note_failure(sh, msg, false)) /* once per kind of failure, not once per retry */
		log_warn(0, "%s: %s (%s)", sh->what, msg, sh->retry_note);
}

void shipper_refused(struct shipper *sh, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (note_failure(sh, msg, true))
		log_err(0,
			"%s: %s: the store keeps the rows; asking again every %d s, or as soon "
			"as the token file changes",
			sh->what, msg, SHIPPER_REFUSED_MS / 1000);
}

void shipper_answered(struct shipper *sh)
{
	bool again;

	pthread_mutex_lock(&sh->lock);
	again = !sh->stats.connected && sh->stats.failures;
	sh->stats.connected = true;
	sh->stats.refused = false;
	sh->stats.last_ok_ms = time_now_ms();
	pthread_mutex_unlock(&sh->lock);
	if (again)
		log_info("%s: %s", sh->what, sh->again);
}

bool shipper_stopping(struct shipper *sh)
{
	bool stop;

	pthread_mutex_lock(&sh->lock);
	stop = sh->stop;
	pthread_mutex_unlock(&sh->lock);
	return stop;
}

/*
 * Sleeps up to ms, or until stopped; kickable: a tick's kick or a flush
 * ends it too; batching: a flush only.  A backoff is neither: a tick every
 * 100 ms must not turn it into a retry every 100 ms.  False when stopping.
 */
static bool wait_ms(struct shipper *sh, int64_t ms, bool kickable, bool batching)
{
	struct timespec until;
	bool go_on;

	time_deadline_ms(&until, ms);
	pthread_mutex_lock(&sh->lock);
	while (!sh->stop && !(kickable && !batching && sh->kicked) && !(kickable && sh->flushing))
		if (pthread_cond_timedwait(&sh->cond, &sh->lock, &until) == ETIMEDOUT)
			break;
	if (kickable && !batching)
		sh->kicked = false;
	go_on = !sh->stop;
	pthread_mutex_unlock(&sh->lock);
	return go_on;
}

int64_t shipper_backoff_next(int64_t prev, int64_t first, int64_t max)
{
	int64_t next = prev ? prev * 2 : first;

	return next > max ? max : next;
}

bool shipper_pause(struct shipper *sh, int64_t ms)
{
	return wait_ms(sh, ms, false, false);
}

/*
 * After a refusal: SHIPPER_REFUSED_MS, or less when the encoder's
 * credentials change meanwhile.  False when stopping.
 */
static bool pause_refused(struct shipper *sh)
{
	int64_t until = time_now_ms() + SHIPPER_REFUSED_MS;

	while (time_now_ms() < until) {
		if (!shipper_pause(sh, 1000))
			return false;
		if (sh->ops->reauth && sh->ops->reauth(sh->enc)) {
			log_info("%s: the token changed: trying again", sh->what);
			break;
		}
	}
	return true;
}

static int abort_when_stopping(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			       curl_off_t ulnow)
{
	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return shipper_stopping(arg) ? 1 : 0;
}

void shipper_watch_curl(struct shipper *sh, CURL *curl)
{
	curl_fn.easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, abort_when_stopping);
	curl_fn.easy_setopt(curl, CURLOPT_XFERINFODATA, sh);
	curl_fn.easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
}

void shipper_set_what(struct shipper *sh, const char *what)
{
	snprintf(sh->what, sizeof(sh->what), "%s", what);
}

/* After a failure: whether the encoder turned to a receiver to try at once. */
static bool failed_over(struct shipper *sh)
{
	return sh->ops->failover && !shipper_stopping(sh) && sh->ops->failover(sh->enc);
}

/* Reads a batch with the reads held, and marks its rows in doubt. */
static int read_batch(struct shipper *sh, struct store *st, int64_t cursor, int64_t rows,
		      int64_t *to_seq, int64_t *nrows)
{
	int ret;

	pthread_mutex_lock(sh->opt.reads);
	ret = sh->ops->read(sh->enc, st, cursor, rows, to_seq, nrows);
	if (ret == 0) {
		pthread_mutex_lock(&sh->lock);
		if (*to_seq > sh->stats.sent_seq)
			sh->stats.sent_seq = *to_seq;
		pthread_mutex_unlock(&sh->lock);
	}
	pthread_mutex_unlock(sh->opt.reads);
	return ret;
}

/* A catch-up (a backlog after an outage): its rows so far, and the part the receiver holds. */
struct catchup {
	int64_t from_seq, rows; /* from_seq -1: none under way */
};

static void catchup_step(struct shipper *sh, struct catchup *c, int64_t cursor, int64_t max_seq,
			 int64_t nrows)
{
	if (max_seq > cursor) {
		if (c->from_seq < 0) {
			c->from_seq = cursor;
			c->rows = 0;
		}
		c->rows += nrows;
		if (max_seq > c->from_seq)
			progress_step(sh->opt.progress, c->rows,
				      (double)(cursor - c->from_seq) /
					  (double)(max_seq - c->from_seq));
	} else if (c->from_seq >= 0) {
		progress_finish(sh->opt.progress);
		c->from_seq = -1;
	}
}

static void *shipper_main(void *arg)
{
	struct shipper *sh = arg;
	struct store *st = NULL;
	struct catchup cu = {-1, 0};
	int64_t cursor = -1, rows = sh->opt.first_rows, backoff = 0;

	pthread_setname_np(pthread_self(), sh->thread_name);
	while (!shipper_stopping(sh)) {
		int64_t to_seq = 0, max_seq = 0, nrows = 0, acked = 0;
		int ret;

		if (!st && store_open(sh->db_path, sh->opt.store_flags, &st)) {
			st = NULL;
			shipper_pause(sh, 1000);
			continue;
		}
		if (cursor < 0) {
			ret = sh->ops->start(sh->enc, sh, st, &cursor);
			if (ret == -EACCES) {
				cursor = -1;
				backoff = SHIPPER_BACKOFF_MAX;
				pause_refused(sh);
				continue;
			}
			if (ret) {
				cursor = -1;
				if (failed_over(sh))
					continue;
				backoff = shipper_backoff_next(backoff, SHIPPER_BACKOFF_MS,
							       SHIPPER_BACKOFF_MAX);
				shipper_pause(sh, backoff);
				continue;
			}
			pthread_mutex_lock(&sh->lock);
			sh->stats.cursor_known = true;
			sh->stats.acked_seq = sh->stats.sent_seq = cursor;
			pthread_mutex_unlock(&sh->lock);
			/* a backlog the receiver lacks: its catch-up starts now, at 0 rows */
			if (store_max_seq(st, &max_seq) == 0)
				catchup_step(sh, &cu, cursor, max_seq, 0);
		}
		ret = read_batch(sh, st, cursor, rows, &to_seq, &nrows);
		if (ret == 0 && store_max_seq(st, &max_seq))
			max_seq = to_seq;
		if (ret) {
			shipper_error(sh, "cannot read the store: %s", strerror(-ret));
			store_close(st);
			st = NULL;
			shipper_pause(sh, 1000);
			continue;
		}
		pthread_mutex_lock(&sh->lock);
		sh->stats.max_seq = max_seq > sh->stats.acked_seq ? max_seq : sh->stats.acked_seq;
		pthread_mutex_unlock(&sh->lock);
		if (to_seq <= cursor) {
			/* nothing new: wait for the next tick */
			wait_ms(sh, sh->opt.interval_ms * 2, true, false);
			continue;
		}
		ret = sh->ops->send(sh->enc, sh, st, cursor, to_seq, &acked);
		if (ret == -E2BIG && rows > SHIPPER_MIN_ROWS) {
			rows /= 2;
			continue;
		}
		if (ret == -EACCES) {
			backoff = SHIPPER_BACKOFF_MAX;
			cursor = -1;
			pause_refused(sh);
			continue;
		}
		if (ret == -EAGAIN || ret == -E2BIG) {
			cursor = -1; /* the receiver may have lost or got more: ask again */
			if (failed_over(sh))
				continue;
			backoff =
			    shipper_backoff_next(backoff, SHIPPER_BACKOFF_MS, SHIPPER_BACKOFF_MAX);
			shipper_pause(sh, backoff);
			continue;
		}
		if (ret) {
			/* out of memory encoding it: a smaller batch */
			rows = rows > SHIPPER_MIN_ROWS ? rows / 2 : rows;
			shipper_pause(sh, 1000);
			continue;
		}
		backoff = 0;
		shipper_answered(sh);
		pthread_mutex_lock(&sh->lock);
		sh->stats.acked_seq = acked;
		sh->stats.sent_seq = acked; /* answered: nothing in doubt */
		sh->stats.max_seq = max_seq > acked ? max_seq : acked;
		sh->stats.batches++;
		sh->stats.rows += nrows;
		pthread_mutex_unlock(&sh->lock);
		/* a receiver that holds less than was sent is sent the rest */
		cursor = acked;
		catchup_step(sh, &cu, cursor, max_seq, nrows);
		if (max_seq > cursor) {
			/* a backlog: bigger batches until current */
			if (rows < sh->opt.max_rows)
				rows *= 2;
			continue;
		}
		rows = sh->opt.first_rows;
		if (sh->opt.batch_ms > 0)
			wait_ms(sh, sh->opt.batch_ms, true, true);
	}
	if (cu.from_seq >= 0)
		progress_finish(sh->opt.progress);
	if (st)
		store_close(st);
	return NULL;
}

int shipper_new(const struct shipper_opts *o, const struct shipper_ops *ops, void *enc,
		struct shipper **out)
{
	struct shipper *sh = calloc(1, sizeof(*sh));

	*out = NULL;
	if (!sh)
		return log_err(-ENOMEM, "out of memory");
	sh->opt = *o;
	sh->ops = ops;
	sh->enc = enc;
	snprintf(sh->db_path, sizeof(sh->db_path), "%s", o->db_path);
	snprintf(sh->what, sizeof(sh->what), "%s", o->what);
	snprintf(sh->retry_note, sizeof(sh->retry_note), "%s", o->retry_note);
	snprintf(sh->again, sizeof(sh->again), "%s", o->again ? o->again : "connected again");
	snprintf(sh->thread_name, sizeof(sh->thread_name), "%s", o->thread_name);
	sh->opt.db_path = sh->db_path;
	sh->stats.acked_seq = sh->stats.sent_seq = -1;
	pthread_mutex_init(&sh->lock, NULL);
	pthread_cond_init(&sh->cond, NULL);
	pthread_mutex_init(&sh->own_reads, NULL);
	if (!sh->opt.reads)
		sh->opt.reads = &sh->own_reads;
	*out = sh;
	return 0;
}

int shipper_run(struct shipper *sh)
{
	if (pthread_create(&sh->thread, NULL, shipper_main, sh) != 0)
		return log_err(-EAGAIN, "cannot start a thread for %s", sh->what);
	sh->started = true;
	return 0;
}

void shipper_kick(struct shipper *sh)
{
	if (!sh)
		return;
	pthread_mutex_lock(&sh->lock);
	sh->kicked = true;
	pthread_cond_signal(&sh->cond);
	pthread_mutex_unlock(&sh->lock);
}

void shipper_stop_all(struct shipper *const *sh, int n)
{
	/* all told first: each ends its transfer in flight at once, side by side */
	for (int i = 0; i < n; i++) {
		if (!sh[i])
			continue;
		pthread_mutex_lock(&sh[i]->lock);
		sh[i]->stop = true;
		pthread_cond_signal(&sh[i]->cond);
		pthread_mutex_unlock(&sh[i]->lock);
	}
	for (int i = 0; i < n; i++) {
		if (!sh[i])
			continue;
		if (sh[i]->started)
			pthread_join(sh[i]->thread, NULL);
		pthread_mutex_destroy(&sh[i]->lock);
		pthread_cond_destroy(&sh[i]->cond);
		pthread_mutex_destroy(&sh[i]->own_reads);
		free(sh[i]);
	}
}

void shipper_stop(struct shipper *sh)
{
	shipper_stop_all(&sh, 1);
}

bool shipper_flush(struct shipper *const *sh, int n, int64_t timeout_ms)
{
	int64_t deadline = time_now_ms() + timeout_ms, want = -1;
	struct store *st = NULL;
	bool done = false;

	if (n <= 0)
		return true;
	if (store_open(sh[0]->db_path, STORE_READONLY | (sh[0]->opt.store_flags & STORE_CHECKED),
		       &st) == 0) {
		store_max_seq(st, &want);
		store_close(st);
	}
	if (want < 0)
		return false;
	for (int i = 0; i < n; i++) {
		pthread_mutex_lock(&sh[i]->lock);
		sh[i]->flushing = true; /* no batching delay from now on */
		pthread_mutex_unlock(&sh[i]->lock);
	}
	while (!done && time_now_ms() < deadline) {
		struct timespec pause = {0, 20 * 1000000};

		done = true;
		for (int i = 0; i < n; i++) {
			shipper_kick(sh[i]);
			pthread_mutex_lock(&sh[i]->lock);
			done = done && sh[i]->stats.cursor_known && sh[i]->stats.acked_seq >= want;
			pthread_mutex_unlock(&sh[i]->lock);
		}
		if (!done)
			nanosleep(&pause, NULL);
	}
	return done;
}

void shipper_get_stats(struct shipper *sh, struct shipper_stats *out)
{
	pthread_mutex_lock(&sh->lock);
	*out = sh->stats;
	pthread_mutex_unlock(&sh->lock);
}

void shipper_hold_reads(struct shipper *sh)
{
	if (sh)
		pthread_mutex_lock(sh->opt.reads);
}

void shipper_release_reads(struct shipper *sh)
{
	if (sh)
		pthread_mutex_unlock(sh->opt.reads);
}
