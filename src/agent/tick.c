/*
 * tick.c - one tick of the agent, as a list of module calls: sample the
 * host, the processes, the jobs (attrib/jobs) and the GPUs with each
 * job's share of them (attrib/gpu_share); store the tick (store/tick) with
 * the rollups (store/rollup) and the summaries of jobs that ended; the
 * CUDA hooks' snapshots that changed (cuda.c); a step
 * of retention; publish the view.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "analysis/jobreport.h"
#include "analysis/ckptmaint.h"
#include "analysis/summary.h"
#include "attrib/gpu_share.h"
#include "attrib/podres.h"
#include "common/array.h"
#include "common/log.h"
#include "common/sysroot.h"
#include "report/report.h"
#include "sample/figures.h"
#include "store/tick.h"
#include "store/reader.h"
#include "store/upkeep.h"
#include "store/write.h"

#define AGENT_RETENTION_BUDGET	 2000 /* rows per table per step */
#define AGENT_RETENTION_EVERY_MS 60000
/* Report checkpoints: looked for once a minute; rows replayed per tick while some are due. */
#define AGENT_CKPT_EVERY_MS 60000
#define AGENT_CKPT_ROWS	    20000

static uint64_t self_rss_bytes(void)
{
	struct strbuf sb;
	unsigned long long pages = 0, rss = 0;

	strbuf_init(&sb, 4096);
	if (sysroot_read("/proc/self/statm", &sb) == 0 &&
	    sscanf(strbuf_str(&sb), "%llu %llu", &pages, &rss) != 2)
		rss = 0;
	strbuf_release(&sb);
	return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* ---- sampling ---- */

/* The host: this reading, and the one before it for the rates. */
static void sample_host(struct agent *a, int64_t ts)
{
	if (a->host_ok) {
		struct host_sample *tmp = a->host_prev;

		a->host_prev = a->host;
		a->host = tmp;
		a->host_prev_ts = a->host_ts;
		a->has_host_prev = true;
	}
	a->host_ok = host_sample_read(&a->hs, a->host) == 0;
	a->host_ts = ts;
}

/*
 * Each live job's part of each device's activity figures (job_gpu_use's
 * share): the fraction of gpu_share.h's rule, among the processes on the
 * device at this tick.  The GPM figures and the processes' utilization
 * samples cover the same window (since the device's previous tick).
 */
static void job_activity_shares(struct agent *a)
{
	struct gpu_share_total all[GPU_MAX_DEVICES];
	int n = a->gpus.ndevices < GPU_MAX_DEVICES ? a->gpus.ndevices : GPU_MAX_DEVICES;

	for (int i = 0; i < n; i++)
		if (a->gsample_ok[i])
			all[i] = gpu_share_device_total(&a->gprocs, i);
	for (size_t k = 0; k < a->jobs.njobs; k++) {
		struct job_entry *j = &a->jobs.job[k];

		for (int i = 0; i < GPU_MAX_DEVICES; i++) {
			struct job_gpu_use *u = &j->gpu[i];
			struct gpu_share_total part;
			double f;

			u->has_share = false;
			u->share = 0;
			if (i >= n || !j->live || !u->now || !a->gsample_ok[i])
				continue;
			part = gpu_share_job_part(&a->jobs, &a->gprocs, i, j);
			f = gpu_share_fraction(&part, &all[i]);
			if (isnan(f))
				continue;
			u->share = f;
			u->has_share = true;
		}
	}
}

/*
 * Every GPU, its processes attributed to jobs, and each job's share of the
 * device (attrib/gpu_share.h): memory, SM utilization, the energy of the
 * interval and its part of the activity figures.
 */
static void sample_gpus(struct agent *a, int64_t ts)
{
	struct gpu_set *set = &a->gpus;
	double device_mj[GPU_MAX_DEVICES];

	a->ngevents = 0;
	gpu_set_processes(set, &a->pt, a->gsample, a->gsample_ok, &a->gprocs);
	for (int i = 0; i < set->ndevices; i++)
		device_mj[i] = a->gsample_ok[i]
				   ? gpu_share_energy_delta_mj(
					 &a->gsample[i], a->has_gprev[i] ? &a->gprev[i] : NULL,
					 ts - a->gprev_ts[i])
				   : NAN;
	gpu_share_jobs(&a->jobs, set->ndevices, a->gsample_ok, &a->gprocs, device_mj);
	job_activity_shares(a);
	for (int i = 0; i < set->ndevices; i++) {
		if (!a->gsample_ok[i])
			continue;
		rollup_gpu_values(&a->gsample[i], a->has_gprev[i] ? &a->gprev[i] : NULL,
				  ts - a->gprev_ts[i], &a->groll[i]);
		a->gprev[i] = a->gsample[i];
		a->has_gprev[i] = true;
		a->gprev_ts[i] = ts;
	}
	a->ngevents = gpu_set_events(set, ts, a->gevents, AGENT_MAX_GPU_EVENTS);
}

/* ---- Kubernetes pods' GPU reservations ---- */

/* Hidden --test-pod-name UID=NS/POD: that pod's job takes the name (tests). */
static void test_pod_name(const struct agent *a, struct job_record *r)
{
	const char *arg = a->opt->test_pod_name, *eq = arg ? strchr(arg, '=') : NULL;

	if (!eq || strlen(r->job_id) != (size_t)(eq - arg) ||
	    strncmp(r->job_id, arg, (size_t)(eq - arg)) != 0)
		return;
	snprintf(r->name, sizeof(r->name), "%s", eq + 1);
}

/*
 * The devices the kubelet gave each pod (the poller's latest answer: the
 * tick never waits for the kubelet) become its job's GPU reservation
 * (attrib/podres.h), joined on the job's name, NAMESPACE/POD.
 */
static void pod_reservations(struct agent *a)
{
	if (!a->podres)
		return;
	kubelet_poller_take(a->podres, &a->podres_gen, &a->podres_table);
	for (size_t k = 0; k < a->jobs.njobs; k++) {
		struct job_entry *j = &a->jobs.job[k];

		if (!j->live || strcmp(j->rec.scheduler, "k8s") != 0)
			continue;
		test_pod_name(a, &j->rec);
		if (podres_reserve_job(&a->podres_table, &a->gpus, &j->rec))
			j->rec_dirty = true;
	}
}

/* ---- rollups ---- */

/* The host's rollup figures (sample/figures.h), by enum rollup_host_metric. */
static void host_values(const struct agent *a, double v[ROLLUP_HOST__COUNT])
{
	struct host_reading cur, prev;
	struct host_figures f;

	host_reading_of(a->host, &cur);
	if (a->has_host_prev)
		host_reading_of(a->host_prev, &prev);
	host_figures(&cur, a->has_host_prev ? &prev : NULL, a->host_ts - a->host_prev_ts, &f);
	v[ROLLUP_HOST_CPU_BUSY_PCT] = f.cpu_busy_pct;
	v[ROLLUP_HOST_MEM_USED_BYTES] = f.mem_used_bytes;
	v[ROLLUP_HOST_LOAD1] = f.load1;
	v[ROLLUP_HOST_DISK_READ_BPS] = f.disk_read_bps;
	v[ROLLUP_HOST_DISK_WRITE_BPS] = f.disk_write_bps;
	v[ROLLUP_HOST_NET_RX_BPS] = f.net_rx_bps;
	v[ROLLUP_HOST_NET_TX_BPS] = f.net_tx_bps;
}

static struct agent_job_rollup *job_rollup(struct agent *a, int64_t row)
{
	for (size_t i = 0; i < a->njroll; i++)
		if (a->jroll[i].job_row == row)
			return &a->jroll[i];
	if (ARRAY_GROW(a->jroll, a->njroll, a->jroll_alloc, 16))
		return NULL;
	memset(&a->jroll[a->njroll], 0, sizeof(a->jroll[0]));
	a->jroll[a->njroll].job_row = row;
	return &a->jroll[a->njroll++];
}

/*
 * The series' rows are written inside the tick's transaction; a failed
 * write is the store's to report and the tick's commit decides.
 */
static void roll_w(struct agent *a, const char *entity, int64_t entity_id, const char *metric,
		   struct rollup_acc acc[ROLLUP_TIERS], int64_t ts, double v, double w)
{
	struct rollup_series s = {a->node_id, entity, entity_id, metric};

	rollup_add_w(a->st, &s, acc, ts, v, w);
}

static void roll(struct agent *a, const char *entity, int64_t entity_id, const char *metric,
		 struct rollup_acc acc[ROLLUP_TIERS], int64_t ts, double v)
{
	roll_w(a, entity, entity_id, metric, acc, ts, v, 1);
}

static void flush(struct agent *a, const char *entity, int64_t entity_id, const char *metric,
		  struct rollup_acc *acc, int t)
{
	struct rollup_series s = {a->node_id, entity, entity_id, metric};

	rollup_flush(a->st, &s, acc, t);
}

static void rollups_tick(struct agent *a, int64_t ts)
{
	if (a->host_ok) {
		double hv[ROLLUP_HOST__COUNT];

		host_values(a, hv);
		for (int m = 0; m < ROLLUP_HOST__COUNT; m++)
			roll(a, "host", 0, rollup_host_metric_names[m], a->host_acc[m], ts, hv[m]);
	}
	for (int i = 0; i < a->gpus.ndevices; i++) {
		const struct rollup_gpu_values *g = &a->groll[i]; /* sample_gpus' */

		if (!a->gsample_ok[i] || !a->devs[i].id)
			continue;
		for (int m = 0; m < ROLLUP_GPU__COUNT; m++)
			roll_w(a, "gpu", a->devs[i].id, rollup_gpu_metric_names[m],
			       a->gpu_acc[i][m], ts, g->v[m], g->w[m]);
	}
	for (size_t k = 0; k < a->njroll; k++)
		a->jroll[k].live = false;
	for (size_t k = 0; k < a->jobs.njobs; k++) {
		const struct job_entry *j = &a->jobs.job[k];
		struct agent_job_rollup *r;
		struct job_figures f;
		double v[ROLLUP_JOB__COUNT];

		if (!j->rec.id)
			continue;
		r = job_rollup(a, j->rec.id);
		if (!r)
			continue;
		r->live = j->live;
		v[ROLLUP_JOB_CPU_CORES] = j->has_rate ? j->cpu_cores : NAN;
		v[ROLLUP_JOB_RSS_BYTES] = (double)j->js.rss_bytes;
		job_figures(&j->js, r->prev_ts ? &r->prev : NULL, ts - r->prev_ts, &f);
		v[ROLLUP_JOB_READ_BPS] = f.read_bps;
		v[ROLLUP_JOB_WRITE_BPS] = f.write_bps;
		r->prev = j->js;
		r->prev_ts = ts;
		for (int m = 0; m < ROLLUP_JOB__COUNT; m++)
			roll(a, "job", j->rec.id, rollup_job_metric_names[m], r->acc[m], ts, v[m]);
	}
	/* jobs that ended: their open buckets are written now, and they go */
	for (size_t k = 0; k < a->njroll;) {
		struct agent_job_rollup *r = &a->jroll[k];

		if (r->live) {
			k++;
			continue;
		}
		for (int t = 0; t < ROLLUP_TIERS; t++)
			for (int m = 0; m < ROLLUP_JOB__COUNT; m++)
				flush(a, "job", r->job_row, rollup_job_metric_names[m],
				      &r->acc[m][t], t);
		a->jroll[k] = a->jroll[--a->njroll];
	}
}

void agent_rollups_flush_all(struct agent *a)
{
	for (int t = 0; t < ROLLUP_TIERS; t++) {
		for (int m = 0; m < ROLLUP_HOST__COUNT; m++)
			flush(a, "host", 0, rollup_host_metric_names[m], &a->host_acc[m][t], t);
		for (int i = 0; i < a->gpus.ndevices; i++)
			for (int m = 0; m < ROLLUP_GPU__COUNT; m++)
				flush(a, "gpu", a->devs[i].id, rollup_gpu_metric_names[m],
				      &a->gpu_acc[i][m][t], t);
		for (size_t k = 0; k < a->njroll; k++)
			for (int m = 0; m < ROLLUP_JOB__COUNT; m++)
				flush(a, "job", a->jroll[k].job_row, rollup_job_metric_names[m],
				      &a->jroll[k].acc[m][t], t);
	}
}

/* ---- the store ---- */

/*
 * A job's row: new, or the one an earlier agent wrote for the same key (a
 * restart while the job ran), reopened.
 */
static int store_job(struct agent *a, struct job_entry *j)
{
	int64_t row, start_ms;
	int ret;

	ret = store_find_job(a->st, j->rec.node_id, j->rec.scheduler, j->rec.job_id,
			     j->rec.start_ms, &row, &start_ms);
	if (ret == 0) {
		j->rec.id = row;
		j->rec.start_ms = start_ms;
		jobs_format_key(j->key, sizeof(j->key), j->rec.scheduler, j->rec.job_id, start_ms);
		j->rec.end_ms = 0;
		return store_job_update(a->st, &j->rec);
	}
	if (ret != -ENOENT)
		return ret;
	return store_job_begin(a->st, &j->rec);
}

/*
 * A job ended: its summary and analysis (the same figures and verdicts as
 * `jobscope report`, rebuilt from the store: its report checkpoint, kept
 * up to date by report_ckpts, and the rows after it) are kept for ever in
 * job_summaries.  In the tick's transaction, so that the head's sender
 * sends them with the job's last rows.
 */
static void store_summary(struct agent *a, struct job_entry *j)
{
	struct job_report *r = calloc(1, sizeof(*r));
	struct job_summary_record rec;
	struct strbuf json;
	int ret;

	j->stored_end = true;
	if (!r || !j->rec.id) {
		free(r);
		return;
	}
	strbuf_init(&json, 0);
	ret = job_report_load(r, a->st, &j->rec);
	if (ret == 0) {
		summary_to_record(&r->sum, &rec);
		if (report_json(&r->sum, &r->an, NULL, &r->app, &json) == 0)
			rec.report_json = strbuf_str(&json);
		ret = store_put_job_summary(a->st, &rec);
	}
	if (ret)
		log_warn(ret, "no summary stored for job %s", j->key);
	job_report_release(r);
	free(r);
	strbuf_release(&json);
}

/* What the tick writes the same way as `jobscope run` (store/tick.h). */
static void tick_rows(struct agent *a, int64_t ts, struct store_tick_rows *t)
{
	memset(t, 0, sizeof(*t));
	t->st = a->st;
	t->node_id = a->node_id;
	t->ts_ms = ts;
	t->tick_no = a->ticks;
	t->host = a->host_ok ? a->host : NULL;
	t->pt = &a->pt;
	t->jobs = &a->jobs;
	t->ndevices = a->gpus.ndevices;
	t->devs = a->devs;
	t->gsample = a->gsample;
	t->gsample_ok = a->gsample_ok;
	t->gprocs = &a->gprocs;
	t->events = a->gevents;
	t->nevents = a->ngevents;
}

/* New jobs' rows, before their processes' rows name them. */
static int store_new_jobs(struct agent *a)
{
	int ret = 0;

	for (size_t k = 0; k < a->jobs.njobs && !ret; k++) {
		struct job_entry *j = &a->jobs.job[k];

		if (!j->rec.id && (j->live || j->ended_now))
			ret = store_job(a, j);
	}
	return ret;
}

static int store_job_samples(struct agent *a, int64_t ts)
{
	int ret = 0;

	for (size_t k = 0; k < a->jobs.njobs && !ret; k++) {
		struct job_entry *j = &a->jobs.job[k];

		if (j->emit && j->rec.id)
			ret = store_put_job_sample(a->st, j->rec.id, ts, &j->js);
		if (!ret && (j->ended_now || j->rec_dirty) && j->rec.id) {
			ret = store_job_update(a->st, &j->rec);
			j->rec_dirty = false; /* a failed tick is retried whole: see store_tick */
		}
	}
	return ret;
}

static int store_tick_all(struct agent *a, const struct store_tick_rows *t)
{
	int ret = store_tick_put_host(t);

	if (!ret)
		ret = store_new_jobs(a);
	if (!ret)
		ret = store_tick_put_procs(t);
	if (!ret)
		ret = store_job_samples(a, t->ts_ms);
	if (!ret)
		ret = store_tick_put_gpus(t);
	if (!ret)
		ret = store_tick_put_events(t);
	if (!ret)
		rollups_tick(a, t->ts_ms);
	/*
	 * Jobs that ended: their summaries go in the same transaction as their
	 * last rows, so whoever reads the store (the head's sender) sees both
	 * or neither.
	 */
	for (size_t k = 0; k < a->jobs.njobs && !ret; k++)
		if (a->jobs.job[k].ended_now)
			store_summary(a, &a->jobs.job[k]);
	return ret;
}

/* One transaction; on failure it is rolled back and the next tick writes what it missed. */
static void store_tick(struct agent *a, int64_t ts)
{
	struct store_tick_rows t;
	int ret;

	tick_rows(a, ts, &t);
	ret = store_tick_begin(a->st);
	if (!ret)
		ret = store_tick_all(a, &t);
	if (!ret)
		ret = store_tick_commit(a->st);
	if (!ret) {
		store_tick_rows_kept(&t);
		return;
	}
	store_tick_abort(a->st);
	store_tick_rows_lost(&t);
	for (size_t k = 0; k < a->jobs.njobs; k++) {
		if (a->jobs.job[k].emit)
			a->jobs.job[k].has_row = false; /* the next tick writes one */
		a->jobs.job[k].rec_dirty = true;
	}
	if (a->lost_ticks == 0 || ret != a->lost_err)
		log_warn(ret, "cannot store the samples of a tick in '%s' (sampling goes on)",
			 store_path(a->st));
	a->lost_err = ret;
	a->lost_ticks++;
}

/* ---- retention ---- */

static int last_gap(const struct store_gap *g, void *arg)
{
	struct agent *a = arg;

	a->last_gap = *g;
	a->has_last_gap = true;
	return 0;
}

static int64_t meta_i64(struct agent *a, const char *key)
{
	char buf[32];

	return store_meta_get(a->st, key, buf, sizeof(buf)) == 0 ? strtoll(buf, NULL, 10) : 0;
}

/* What an earlier run left: the loss so far, the last gap, the head's last known cursor. */
static void retention_load(struct agent *a)
{
	a->retention_loaded = true;
	a->lost_rows = meta_i64(a, "lost_rows_total");
	a->gaps = meta_i64(a, "gaps_total");
	a->head_kept.acked_seq = meta_i64(a, "head_acked_seq");
	a->head_kept.sent_seq = meta_i64(a, "head_sent_seq");
	store_for_each_gap(a->st, 0, 0, INT64_MAX, last_gap, a);
}

/*
 * What the head holds of our rows, which retention must not pass: the
 * sender's, once the head said; before that, what the store kept of it.
 * With no head, NULL: no bound.
 */
static const struct store_head_bound *retention_bound(struct agent *a, struct store_head_bound *b)
{
	struct sender_stats ss;
	int64_t rw_acked, rw_sent;

	if (!a->opt->head && !a->rw)
		return NULL;
	if (a->opt->head) {
		*b = a->head_kept;
		if (a->sender) {
			sender_get_stats(a->sender, &ss);
			if (ss.ship.cursor_known) {
				b->acked_seq = ss.ship.acked_seq;
				b->sent_seq = ss.ship.sent_seq;
			}
		}
	} else {
		b->acked_seq = INT64_MAX;
		b->sent_seq = -1;
	}
	/* remote-write targets bound it too: the least acknowledged, the furthest sent */
	if (rw_get_bound(a->rw, &rw_acked, &rw_sent)) {
		if (rw_acked < b->acked_seq)
			b->acked_seq = rw_acked;
		if (rw_sent > b->sent_seq)
			b->sent_seq = rw_sent;
	}
	return b;
}

/* A step when one is due: on schedule, or at once over the size cap. */
static void retention(struct agent *a, int64_t ts)
{
	if (!a->retention_loaded)
		retention_load(a);
	/* over the size cap: a step now, whatever the schedule says (3 pragmas a tick) */
	if (a->opt->retention.max_bytes && store_used_bytes(a->st, &a->store_bytes) == 0 &&
	    a->store_bytes > a->opt->retention.max_bytes)
		a->retention_next_ms = ts;
	if (ts >= a->retention_next_ms) {
		struct store_retention_result res;
		struct store_head_bound head;
		/*
		 * A step that may lose rows (a size cap) reads the bound and
		 * deletes with the sender's reads held: no batch read meanwhile
		 * holds a row it counts lost.
		 */
		bool hold = a->opt->retention.max_bytes > 0;
		int ret;

		if (hold) {
			sender_hold_reads(a->sender);
			rw_hold_reads(a->rw);
		}
		ret = store_retention_step(a->st, ts, &a->opt->retention, retention_bound(a, &head),
					   AGENT_RETENTION_BUDGET, &res);
		if (hold) {
			rw_release_reads(a->rw);
			sender_release_reads(a->sender);
		}
		if (ret == 0) {
			a->retention_deleted += res.deleted;
			if (res.lost > 0) {
				if (!a->losing)
					log_warn(0, "store over --max-db-size while the head is "
						    "behind: rows it does not hold yet are being "
						    "deleted (counted, and recorded as gaps)");
				a->lost_rows += res.lost;
				a->gaps++;
				a->last_gap = res.gap;
				a->has_last_gap = true;
			}
			a->losing = res.lost > 0;
		}
		/*
		 * A backlog drains a step per tick; otherwise once a minute, or
		 * more often for a raw age limit that short (tests).
		 */
		int64_t every = AGENT_RETENTION_EVERY_MS;

		if (a->opt->retention.raw_ms > 0 && a->opt->retention.raw_ms / 4 < every)
			every = a->opt->retention.raw_ms / 4;
		if (every < a->opt->interval_ms)
			every = a->opt->interval_ms;
		a->retention_next_ms = res.deleted > 0 ? ts : ts + every;
		store_used_bytes(a->st, &a->store_bytes);
	}
}

/*
 * Packing rows older than --pack-after, never past what the head
 * acknowledged (rows it may still ask for again stay rows).
 */
static void pack(struct agent *a, int64_t ts)
{
	struct store_head_bound head;
	const struct store_head_bound *b = retention_bound(a, &head);

	a->packer.after_ms = a->opt->pack_after_ms;
	store_pack_tick(a->st, &a->packer, ts, b ? b->acked_seq : INT64_MAX);
}

/*
 * Report checkpoints (analysis/ckptmaint.h), after the tick's commit: a
 * job at most and AGENT_CKPT_ROWS rows per tick (a few ms), each running
 * job's brought up to date when --report-checkpoint behind, an ended
 * job's to its end.  The job-end summary of store_summary then replays
 * only the rows after its job's checkpoint, however long the job ran.
 */
static void report_ckpts(struct agent *a, int64_t ts)
{
	struct report_ckpt_opts o = {
	    .lag_ms = a->opt->ckpt_lag_ms, .max_jobs = 1, .max_rows = AGENT_CKPT_ROWS};
	int64_t every = AGENT_CKPT_EVERY_MS;
	int done = 0;

	if (ts < a->ckpt_next_ms)
		return;
	report_ckpt_maintain(a->st, ts, &o, &done);
	a->ckpts_made += done;
	if (o.lag_ms / 4 < every)
		every = o.lag_ms / 4;
	if (every < a->opt->interval_ms)
		every = a->opt->interval_ms;
	/* a backlog (an agent restarted beside a long job) drains a step per tick */
	a->ckpt_next_ms = done > 0 ? ts : ts + every;
}

/* ---- the tick ---- */

void agent_tick(struct agent *a)
{
	struct timespec t0, t1;
	int64_t ts;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (a->wc.sim_ms > 0 && a->ticks > 0)
		a->wc.sim_ms += a->jobs.interval_ms;
	ts = wallclock_now_ms(&a->wc);
	a->ticks++;
	sample_host(a, ts);
	ret = ptree_scan(&a->pt, ts);
	if (ret)
		log_warn(ret, "cannot read the processes");
	ret = jobs_update(&a->jobs, &a->pt, ts);
	if (ret)
		log_warn(ret, "cannot attribute processes to jobs");
	if (a->gpus.ndevices || a->gpus.nopened)
		sample_gpus(a, ts);
	agent_k8s_tick(a, ts);
	pod_reservations(a);
	store_tick(a, ts);
	/* after the tick's jobs: a snapshot goes under its pid's job's row */
	agent_cuda_tick(a, a->jobs.interval_ms);
	agent_app_tick(a, ts);
	for (size_t k = 0; k < a->jobs.njobs; k++)
		if (!a->jobs.job[k].live)
			a->jobs.job[k].stored_end = true;
	retention(a, ts);
	pack(a, ts);
	report_ckpts(a, ts);
	a->self_cpu_ms = proc_self_cpu_ms();
	a->self_rss_bytes = self_rss_bytes();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	a->last_tick_s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	sender_kick(a->sender);
	rw_kick(a->rw);
	if (a->http)
		agent_publish_view(a);
}
