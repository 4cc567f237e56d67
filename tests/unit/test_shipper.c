/*
 * test_shipper.c - the loop that ships a store's rows from a receiver's
 * cursor (http/shipper.h), with a fake encoder over a real store: every
 * row reaches the receiver, in order, once it is acknowledged, through a
 * start that fails, a batch refused as too large (the next ones are
 * smaller) and a send that fails (started again from the receiver's
 * cursor); a batch is not read while retention holds the reads; the
 * figures say what happened; an encoder with several receivers turns to
 * the next at once and backs off only when it says so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixture.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "http/shipper.h"
#include "store/rowset.h"
#include "store/store.h"
#include "store/sync.h"
#include "store/write.h"

#define T0 1700000000000LL

/* The receiver and what the encoder was asked, under lock. */
struct fake {
	pthread_mutex_t lock;
	int64_t held;	   /* the last seq the receiver holds */
	int64_t got[4096]; /* every seq it took, in order */
	int ngot;
	int fail_starts;      /* starts left to fail */
	int64_t refuse_above; /* a batch of more rows: -E2BIG */
	int64_t fail_send_at; /* a send whose batch starts after this seq fails once */
	int starts, e2big, send_failures;
	int failover_left; /* failovers that turn to another receiver at once; then none */
	int failovers;	   /* times asked */
	int64_t largest_after_e2big;
	struct store_rowset rows; /* the batch read */
	int64_t read_to;
};

static int fake_start(void *enc, struct shipper *sh, struct store *st, int64_t *cursor)
{
	struct fake *f = enc;
	int ret = 0;

	(void)st;
	pthread_mutex_lock(&f->lock);
	f->starts++;
	if (f->fail_starts > 0) {
		f->fail_starts--;
		ret = -EAGAIN;
	}
	*cursor = f->held;
	pthread_mutex_unlock(&f->lock);
	if (ret)
		shipper_error(sh, "the receiver is down");
	return ret;
}

static int fake_read(void *enc, struct store *st, int64_t cursor, int64_t max_rows, int64_t *to_seq,
		     int64_t *nrows)
{
	struct fake *f = enc;
	int64_t max_seq;
	int ret = store_export_batch(st, cursor, max_rows, &f->rows, to_seq, &max_seq, nrows);

	f->read_to = *to_seq;
	return ret;
}

static int fake_send(void *enc, struct shipper *sh, struct store *st, int64_t cursor,
		     int64_t to_seq, int64_t *acked)
{
	struct fake *f = enc;
	const struct store_table *h = store_rowset_table(&f->rows, "host_samples");
	int ret = 0;

	(void)st;
	pthread_mutex_lock(&f->lock);
	assert_int_equal(cursor, f->held); /* always from what the receiver holds */
	if (to_seq - cursor > f->refuse_above) {
		f->e2big++;
		ret = -E2BIG;
	} else if (f->fail_send_at >= 0 && cursor >= f->fail_send_at) {
		f->fail_send_at = -1;
		f->send_failures++;
		ret = -EAGAIN;
	} else {
		if (f->e2big && to_seq - cursor > f->largest_after_e2big)
			f->largest_after_e2big = to_seq - cursor;
		int c = 0;

		while (h && c < h->ncols && strcmp(h->cols[c], "seq") != 0)
			c++;
		for (size_t r = 0; h && r < h->nrows; r++) {
			const struct store_value *v = &h->cells[r * (size_t)h->ncols + (size_t)c];

			assert_true(c < h->ncols);
			if (f->ngot < 4096)
				f->got[f->ngot++] = v->i;
		}
		f->held = to_seq;
		*acked = to_seq;
	}
	pthread_mutex_unlock(&f->lock);
	store_rowset_release(&f->rows);
	if (ret == -EAGAIN)
		shipper_error(sh, "HTTP 503");
	return ret;
}

static const struct shipper_ops fake_ops = {fake_start, fake_read, fake_send};

/* Another receiver to try at once while failover_left lasts (several heads). */
static bool fake_failover(void *enc)
{
	struct fake *f = enc;
	bool again;

	pthread_mutex_lock(&f->lock);
	f->failovers++;
	again = f->failover_left > 0;
	if (again)
		f->failover_left--;
	pthread_mutex_unlock(&f->lock);
	return again;
}

static const struct shipper_ops fake_failover_ops = {fake_start, fake_read, fake_send, NULL,
						     fake_failover};

struct fixture {
	char dir[64], path[128];
	FILE *log;
	struct store *st;
	int64_t node;
	int ticks;
	struct fake f;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/jobscope-test-shipper-XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->path, sizeof(fx->path), "%s/agent.db", fx->dir);
	fx->log = tmpfile();
	if (!fx->log)
		return -1;
	log_set_file(fx->log);
	pthread_mutex_init(&fx->f.lock, NULL);
	store_rowset_init(&fx->f.rows, 0);
	fx->f.refuse_above = 1 << 30;
	fx->f.fail_send_at = -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	if (fx->st)
		store_close(fx->st);
	store_rowset_release(&fx->f.rows);
	pthread_mutex_destroy(&fx->f.lock);
	log_set_file(NULL);
	fclose(fx->log);
	fixture_rm_tree(fx->dir);
	free(fx);
	return 0;
}

/* n more ticks of one host row each: seqs go up by one a tick */
static void add_ticks(struct fixture *fx, int n)
{
	struct host_sample *h = calloc(1, sizeof(*h));

	assert_non_null(h);
	h->valid = HOST_HAS_MEM;
	h->mem.valid = MEMINFO_TOTAL;
	h->mem.total_bytes = 1 << 30;
	if (!fx->st) {
		assert_int_equal(store_open(fx->path, STORE_CREATE, &fx->st), 0);
		assert_int_equal(store_node(fx->st, "node-a", 2, 1 << 30, 0, &fx->node), 0);
	}
	for (int i = 0; i < n; i++, fx->ticks++) {
		assert_int_equal(store_tick_begin(fx->st), 0);
		assert_int_equal(store_put_host(fx->st, fx->node, T0 + 1000LL * fx->ticks, h), 0);
		assert_int_equal(store_tick_commit(fx->st), 0);
	}
	free(h);
}

static int64_t last_seq(struct fixture *fx)
{
	int64_t seq = -1;

	assert_int_equal(store_max_seq(fx->st, &seq), 0);
	return seq;
}

static struct shipper *start_ops(struct fixture *fx, int64_t first_rows,
				 const struct shipper_ops *ops)
{
	struct shipper_opts o = {
	    .thread_name = "js-test",
	    .what = "receiver test",
	    .retry_note = "retrying",
	    .again = "sending again",
	    .db_path = fx->path,
	    .store_flags = STORE_READONLY,
	    .interval_ms = 100,
	    .first_rows = first_rows,
	    .max_rows = 1024,
	};
	struct shipper *sh;

	assert_int_equal(shipper_new(&o, ops, &fx->f, &sh), 0);
	assert_int_equal(shipper_run(sh), 0);
	return sh;
}

static struct shipper *start(struct fixture *fx, int64_t first_rows)
{
	return start_ops(fx, first_rows, &fake_ops);
}

/* The receiver got exactly the host rows' seqs up to want, each once, in order. */
static void check_got(struct fixture *fx, int64_t want)
{
	int64_t prev = 0;

	pthread_mutex_lock(&fx->f.lock);
	assert_int_equal(fx->f.held, want);
	assert_int_equal(fx->f.ngot, fx->ticks);
	for (int i = 0; i < fx->f.ngot; i++) {
		assert_true(fx->f.got[i] > prev);
		prev = fx->f.got[i];
	}
	assert_true(prev <= want);
	pthread_mutex_unlock(&fx->f.lock);
}

static void test_ships_everything_through_failures(void **state)
{
	struct fixture *fx = *state;
	struct shipper_stats ss;
	struct shipper *sh;
	int64_t want;

	add_ticks(fx, 600);
	want = last_seq(fx);
	fx->f.fail_starts = 1;
	fx->f.refuse_above = 250; /* the first batch (400 rows) is too large: halved */
	fx->f.fail_send_at = 300;
	sh = start(fx, 400);
	assert_true(shipper_flush(&sh, 1, 20000));
	check_got(fx, want);
	shipper_get_stats(sh, &ss);
	assert_true(ss.cursor_known);
	assert_int_equal(ss.acked_seq, want);
	assert_int_equal(ss.sent_seq, want); /* answered: nothing in doubt */
	assert_int_equal(ss.max_seq, want);
	assert_true(ss.connected);
	assert_int_equal(ss.failures, 2); /* the start and the send */
	assert_true(ss.rows >= fx->ticks);
	pthread_mutex_lock(&fx->f.lock);
	assert_true(fx->f.e2big >= 1);
	assert_true(fx->f.largest_after_e2big > 0 && fx->f.largest_after_e2big <= 200);
	assert_int_equal(fx->f.send_failures, 1);
	assert_true(fx->f.starts >= 3); /* the first, after it failed, after the send failed */
	pthread_mutex_unlock(&fx->f.lock);

	/* new rows after a kick; none read while the reads are held */
	shipper_hold_reads(sh);
	add_ticks(fx, 5);
	shipper_kick(sh);
	usleep(300 * 1000);
	pthread_mutex_lock(&fx->f.lock);
	assert_int_equal(fx->f.held, want);
	pthread_mutex_unlock(&fx->f.lock);
	shipper_release_reads(sh);
	want = last_seq(fx);
	assert_true(shipper_flush(&sh, 1, 20000));
	check_got(fx, want);
	shipper_stop(sh);
}

static void test_stop_while_receiver_down(void **state)
{
	struct fixture *fx = *state;
	struct shipper_stats ss;
	struct shipper *sh;
	int64_t t0;

	add_ticks(fx, 10);
	fx->f.fail_starts = 1000000;
	sh = start(fx, 64);
	assert_false(shipper_flush(&sh, 1, 700)); /* never answered */
	shipper_get_stats(sh, &ss);
	assert_false(ss.cursor_known);
	assert_false(ss.connected);
	assert_true(ss.failures >= 1);
	assert_string_equal(ss.last_error, "the receiver is down");
	t0 = time_now_ms();
	shipper_stop(sh); /* a backoff in progress ends at once */
	assert_true(time_now_ms() - t0 < 5000);
	pthread_mutex_lock(&fx->f.lock);
	assert_int_equal(fx->f.ngot, 0);
	pthread_mutex_unlock(&fx->f.lock);
}

static void test_failover_before_backoff(void **state)
{
	struct fixture *fx = *state;
	struct shipper *sh;
	int64_t want, t0, took;

	/* four failures (three starts, one send): the encoder turns to another receiver
	 * at once after the first three, and backs off (500 ms) after the fourth; without
	 * the turns the back-offs would add up to 0.5 + 1 + 2 + 4 s */
	add_ticks(fx, 50);
	want = last_seq(fx);
	fx->f.fail_starts = 3;
	fx->f.fail_send_at = 0;
	fx->f.failover_left = 3;
	t0 = time_now_ms();
	sh = start_ops(fx, 64, &fake_failover_ops);
	assert_true(shipper_flush(&sh, 1, 20000));
	took = time_now_ms() - t0;
	check_got(fx, want);
	pthread_mutex_lock(&fx->f.lock);
	assert_int_equal(fx->f.failovers, 4); /* asked after each failure */
	assert_int_equal(fx->f.failover_left, 0);
	assert_int_equal(fx->f.starts, 5); /* four failed or followed by a failed send, one good */
	pthread_mutex_unlock(&fx->f.lock);
	assert_true(took >= 450); /* the one back-off */
	assert_true(took < 5000); /* and no other */
	shipper_stop(sh);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_ships_everything_through_failures, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_stop_while_receiver_down, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failover_before_backoff, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
