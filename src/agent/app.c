/*
 * app.c - the agent's StatsD receiver (--statsd-socket, --statsd-udp):
 * app metrics and markers from the node's jobs (app/statsd.h).
 *
 * A Unix datagram comes with its sender's pid from the kernel
 * (SO_PASSCRED: in the agent's pid namespace, whatever the sender's), and
 * every line in it is that pid's job's: the job the process names itself
 * (its job cgroup or environment, read when its first datagram came:
 * jobs_claim), else the process table's (a pid that is gone before the
 * process table saw it: its nearest known ancestor's, also found then:
 * known_ancestor; one the table forgot before the tick that stores its
 * lines: the job the table gave it when its first datagram was read).
 * A UDP datagram has no trustworthy sender, so each line names its job
 * with a `job` tag: the scheduler's id
 * ("#job:4242") or the scheduler and id ("#job:slurm:4242") of a job
 * running here; a line without one, or naming no running job, is counted
 * (jobscope_agent_app_lines_total{result="unattributed"}) and dropped.
 *
 * Lines are aggregated per sender (app_agg) between ticks; after a tick
 * each sender's points and markers are stored under its job at the tick's
 * time (rows with a fact seq: they stream to a head with the tick's), and
 * folded into the job's totals that /metrics shows.  A pid the process
 * table does not know yet keeps its points for the next tick; one that
 * belongs to no job loses them (counted, logged once).  A sender is
 * forgotten when its process is gone or after AGENT_APP_FORGET_TICKS
 * quiet ticks (its gauges' last values with it: a "+N" after that starts
 * from 0 again; the job's total on /metrics stays).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "common/array.h"
#include "common/hash.h"
#include "common/log.h"
#include "prom/expo.h"
#include "prom/families.h"
#include "store/jobdata.h"

#define AGENT_APP_MAX_SRC 4096 /* senders aggregated at once */
#define AGENT_APP_MAX_SERIES                                                                       \
	20000 /* job x metric totals kept for /metrics (each its own allocation) */
#define AGENT_APP_MAX_WAIT     4  /* ticks a pid's lines wait for the process table */
#define AGENT_APP_FORGET_TICKS 60 /* quiet ticks after which a sender is forgotten */

/* One sender: a pid (Unix socket) or a job tag (UDP). */
struct agent_app_src {
	int32_t pid; /* 0: a UDP job tag */
	/*
	 * UDP: the job tag's value.  A pid: the job the process named itself
	 * when it first sent ("scheduler:id", jobs_claim; "" if none).
	 */
	char tag[128];
	struct app_agg agg;
	bool asked; /* ancestor and tag read (its first datagram) */
	/*
	 * Its job in the process table when its first datagram was read
	 * ("scheduler:id"; "" if none): the last resort for a sender gone
	 * from the table by the tick that stores its lines (it exited, a scan
	 * saw it end, and the next one forgot it before that tick).
	 */
	char seen[128];
	int32_t ancestor; /* its nearest ancestor known when it first sent (0: none) */
	int waited;	  /* ticks its pid's job has not been known */
	bool used;	  /* got a line since the last tick */
	bool marked;	  /* got a marker: stored at once, cut there (agent_app_handle) */
	int quiet;	  /* ticks without a line */
};

/* One job's total of one metric, for /metrics. */
struct agent_app_series {
	int64_t job_id; /* 0: a free slot */
	char job_key[JOB_KEY_MAX];
	struct app_point p;
	double last_tick_distinct; /* sets: distinct members in the last tick */
	bool live;
};

/* The process table's entry for pid: alive at the last scan, or ended in it; NULL if neither. */
static struct ptree_proc *table_proc(struct agent *a, int32_t pid)
{
	struct ptree_proc *p = ptree_find(&a->pt, pid);

	return p ? p : ptree_find_recent(&a->pt, pid);
}

int agent_job_of_pid(struct agent *a, int32_t pid, int64_t *job_id, struct job_entry **je)
{
	struct ptree_proc *p = table_proc(a, pid);
	struct job_entry *j;

	if (!p) {
		/* started since the scan: the next tick knows it */
		if (kill(pid, 0) == 0 || errno == EPERM)
			return -EAGAIN;
		return -ENOENT;
	}
	j = jobs_of(&a->jobs, p);
	if (!j)
		return -ENOENT;
	if (!j->rec.id)
		return -EAGAIN; /* its job's row comes with a tick */
	*job_id = j->rec.id;
	if (je)
		*je = j;
	return 0;
}

int agent_app_setup(struct agent *a)
{
	const struct agent_opts *o = a->opt;
	int ret;

	if (o->statsd_socket) {
		ret = app_collector_open_unix(&a->app, o->statsd_socket, true);
		if (ret)
			return log_err(ret, "cannot listen for StatsD on %s", o->statsd_socket);
	}
	if (o->statsd_udp_port) {
		ret = app_collector_open_udp(&a->app, o->statsd_udp_addr, o->statsd_udp_port);
		if (ret)
			return log_err(ret, "cannot listen for StatsD on UDP %s:%u",
				       o->statsd_udp_addr, (unsigned)o->statsd_udp_port);
	}
	if (o->statsd_socket || o->statsd_udp_port)
		log_info("agent: StatsD lines received on %s%s%s%s",
			 o->statsd_socket ? o->statsd_socket : "",
			 o->statsd_socket && o->statsd_udp_port ? " and " : "",
			 o->statsd_udp_port ? "UDP " : "",
			 o->statsd_udp_port ? o->statsd_udp_addr : "");
	return 0;
}

size_t agent_app_fds(const struct agent *a, struct pollfd *fds, size_t max)
{
	return app_collector_fds(&a->app, fds, max);
}

/*
 * The senders are found through an open-addressed index of their array
 * (a->app_src_slot: i + 1, 0 for a free slot), twice as many slots as
 * senders can be, so a probe is short; it is rebuilt when senders are
 * forgotten (once a tick at most).
 */
#define AGENT_APP_SRC_SLOTS (2 * AGENT_APP_MAX_SRC)

static uint32_t src_hash(int32_t pid, const char *tag)
{
	uint32_t h = 2166136261u;

	if (pid)
		return (uint32_t)pid * 2654435761u;
	for (const unsigned char *c = (const unsigned char *)tag; *c; c++)
		h = (h ^ *c) * 16777619u;
	return h;
}

static bool src_is(const struct agent_app_src *s, int32_t pid, const char *tag)
{
	return s->pid == pid && (pid || strcmp(s->tag, tag) == 0);
}

static void src_index(struct agent *a, size_t i)
{
	const struct agent_app_src *s = &a->app_src[i];
	uint32_t k = src_hash(s->pid, s->tag) & (AGENT_APP_SRC_SLOTS - 1);

	while (a->app_src_slot[k])
		k = (k + 1) & (AGENT_APP_SRC_SLOTS - 1);
	a->app_src_slot[k] = (uint32_t)i + 1;
}

static void src_reindex(struct agent *a)
{
	if (!a->app_src_slot)
		return;
	memset(a->app_src_slot, 0, AGENT_APP_SRC_SLOTS * sizeof(*a->app_src_slot));
	for (size_t i = 0; i < a->app_nsrc; i++)
		src_index(a, i);
}

/* The sender's aggregator, made when new; NULL over the cap. */
static struct agent_app_src *source(struct agent *a, int32_t pid, const char *tag)
{
	struct agent_app_src *s;
	uint32_t k;

	if (!tag)
		tag = "";
	if (!a->app_src_slot) {
		a->app_src_slot = calloc(AGENT_APP_SRC_SLOTS, sizeof(*a->app_src_slot));
		if (!a->app_src_slot)
			return NULL;
	}
	for (k = src_hash(pid, tag) & (AGENT_APP_SRC_SLOTS - 1); a->app_src_slot[k];
	     k = (k + 1) & (AGENT_APP_SRC_SLOTS - 1)) {
		s = &a->app_src[a->app_src_slot[k] - 1];
		if (src_is(s, pid, tag))
			return s;
	}
	if (a->app_nsrc == AGENT_APP_MAX_SRC)
		return NULL;
	if (ARRAY_GROW(a->app_src, a->app_nsrc, a->app_alloc, 16))
		return NULL;
	s = &a->app_src[a->app_nsrc];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	snprintf(s->tag, sizeof(s->tag), "%s", pid ? "" : tag);
	app_agg_init(&s->agg);
	a->app_src_slot[k] = (uint32_t)++a->app_nsrc;
	return s;
}

/* A UDP datagram: each line to the aggregator of the job its tag names. */
static void udp_lines(struct agent *a, const char *data, size_t len)
{
	struct statsd_line l;
	const char *pos = data, *end = data + len, *line;
	size_t n;

	while (statsd_next_line(&pos, end, &line, &n)) {
		char tag[128];
		struct agent_app_src *s;

		a->app_lines++;
		if (statsd_parse_line(line, n, &l))
			a->app_bad++;
		else if (!statsd_tag_get(l.tags, "job", tag, sizeof(tag)) || !tag[0])
			a->app_untagged++;
		else if ((s = source(a, 0, tag)) == NULL ||
			 app_agg_add(&s->agg, &l, 0, a->app_now_ms))
			a->app_dropped++;
		else {
			s->used = true;
			s->marked |= l.kind == STATSD_EVENT;
		}
	}
}

/*
 * The sender's nearest ancestor that the process table knows, read now:
 * a `jobscope mark` in a job's script exits (its shell reaps it) before
 * any scan sees it, but /proc/PID/stat still names its parent while the
 * datagram is fresh.  0 when none is found.
 */
static int32_t known_ancestor(struct agent *a, int32_t pid)
{
	int32_t p = pid;

	for (int hop = 0; hop < 32 && p > 1; hop++) {
		struct proc_stat st;

		if (p != pid && table_proc(a, p))
			return p;
		if (proc_read_stat(&a->pt.reader, p, &st))
			break;
		p = st.ppid;
	}
	return 0;
}

static void on_datagram(void *arg, const char *data, size_t len, int32_t pid)
{
	struct agent *a = arg;
	struct agent_app_src *s;
	size_t marks;

	if (pid <= 0) {
		udp_lines(a, data, len);
		return;
	}
	s = source(a, pid, NULL);
	if (!s) {
		a->app_dropped++;
		return;
	}
	if (!s->asked) {
		struct ptree_proc *p = table_proc(a, pid);
		struct job_entry *j;

		s->ancestor = known_ancestor(a, pid);
		jobs_claim(&a->jobs, pid, s->tag, sizeof(s->tag));
		/*
		 * a datagram is read before the scan after its sender's exit, or
		 * the one after: the sender is in the table, or among those that
		 * ended in the last scan
		 */
		j = p ? jobs_of(&a->jobs, p) : NULL;
		if (j)
			snprintf(s->seen, sizeof(s->seen), "%s:%s", j->rec.scheduler,
				 j->rec.job_id);
		s->asked = true;
	}
	marks = s->agg.nmarks;
	app_agg_feed(&s->agg, data, len, pid, a->app_now_ms);
	s->used = true;
	s->marked |= s->agg.nmarks > marks;
}

static int job_of_src(struct agent *a, const struct agent_app_src *s, bool eager,
		      struct job_entry **j);
static void store_src(struct agent *a, struct agent_app_src *s, int64_t ts_ms, bool eager);

void agent_app_handle(struct agent *a, const struct pollfd *fds, size_t n)
{
	a->app_now_ms = wallclock_now_ms(&a->wc);
	app_collector_handle(&a->app, fds, n, on_datagram, a);
	/*
	 * A marker cuts its job's tick: what every sender of the job sent
	 * before it is stored now, at its time, so it counts in the phase the
	 * marker ends (a script's `jobscope metric` and `jobscope mark` are
	 * two senders).
	 */
	for (size_t i = 0; i < a->app_nsrc; i++) {
		struct job_entry *j = NULL, *o;

		if (!a->app_src[i].marked)
			continue;
		a->app_src[i].marked = false;
		if (job_of_src(a, &a->app_src[i], true, &j))
			continue; /* not known yet: at a tick */
		for (size_t k = 0; k < a->app_nsrc; k++)
			if (a->app_src[k].used && job_of_src(a, &a->app_src[k], true, &o) == 0 &&
			    o == j)
				store_src(a, &a->app_src[k], a->app_now_ms, true);
	}
}

/* ---- each job's totals, for /metrics ---- */

static uint64_t series_hash(int64_t job_id, const struct app_point *p)
{
	uint64_t h = fnv1a_str(1469598103934665603ull ^ (uint64_t)job_id, p->name);

	h = (h ^ (unsigned)p->type) * FNV1A_PRIME;
	return fnv1a_str(h, p->tags);
}

/* The slot of (job, metric) in tab: its series, or the empty slot it would take. */
static size_t series_slot(struct agent_app_series *const *tab, size_t cap, int64_t job_id,
			  const struct app_point *p)
{
	size_t k = series_hash(job_id, p) & (cap - 1);

	for (; tab[k]; k = (k + 1) & (cap - 1)) {
		const struct agent_app_series *s = tab[k];

		if (s->job_id == job_id && s->p.type == p->type &&
		    strcmp(s->p.name, p->name) == 0 && strcmp(s->p.tags, p->tags) == 0)
			break;
	}
	return k;
}

/* The table rebuilt with cap slots (a power of two, above twice the series). */
static int series_rehash(struct agent *a, size_t cap)
{
	struct agent_app_series **m = calloc(cap, sizeof(*m));

	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < a->app_series_cap; i++) {
		struct agent_app_series *s = a->app_series[i];

		if (s)
			m[series_slot(m, cap, s->job_id, &s->p)] = s;
	}
	free(a->app_series);
	a->app_series = m;
	a->app_series_cap = cap;
	return 0;
}

static void series_add(struct agent *a, const struct job_entry *j, const struct app_point *p)
{
	struct agent_app_series *s;
	size_t k;

	if ((a->app_nseries + 1) * 2 > a->app_series_cap &&
	    (a->app_nseries >= AGENT_APP_MAX_SERIES ||
	     series_rehash(a, a->app_series_cap ? a->app_series_cap * 2 : 64)))
		return; /* /metrics leaves it out; the store has it */
	k = series_slot(a->app_series, a->app_series_cap, j->rec.id, p);
	s = a->app_series[k];
	if (s) {
		if (p->type == APP_GAUGE)
			s->p.last = p->last;
		else
			app_point_merge(&s->p, p);
		s->last_tick_distinct = p->last;
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return;
	s->job_id = j->rec.id;
	snprintf(s->job_key, sizeof(s->job_key), "%s", j->key);
	app_point_init(&s->p);
	memcpy(s->p.name, p->name, sizeof(s->p.name));
	memcpy(s->p.tags, p->tags, sizeof(s->p.tags));
	s->p.type = p->type;
	if (app_point_merge(&s->p, p)) {
		app_point_release(&s->p);
		free(s);
		return;
	}
	s->last_tick_distinct = p->last;
	s->live = true;
	a->app_series[k] = s;
	a->app_nseries++;
}

/* Forgets the totals of jobs that are no longer running. */
static void series_prune(struct agent *a)
{
	bool any = false;

	for (size_t i = 0; i < a->app_series_cap; i++) {
		struct agent_app_series *s = a->app_series[i];

		if (!s || s->live)
			continue;
		app_point_release(&s->p);
		free(s);
		a->app_series[i] = NULL;
		a->app_nseries--;
		any = true;
	}
	/* open addressing: the survivors placed again (same size: it cannot fail to fit) */
	if (any && series_rehash(a, a->app_series_cap)) {
		/* no memory for a new table: the old one is still whole but for its holes */
		for (size_t i = 0; i < a->app_series_cap; i++)
			if (a->app_series[i]) {
				app_point_release(&a->app_series[i]->p);
				free(a->app_series[i]);
				a->app_series[i] = NULL;
			}
		a->app_nseries = 0;
	}
}

/* ---- after each tick ---- */

/* The job a UDP tag names: a running job's id, or scheduler:id. */
static struct job_entry *job_of_tag(struct agent *a, const char *tag)
{
	const char *colon = strchr(tag, ':');

	for (size_t k = 0; k < a->jobs.njobs; k++) {
		struct job_entry *j = &a->jobs.job[k];
		size_t sl = strlen(j->rec.scheduler);

		if (!j->live || !j->rec.id)
			continue;
		if (!colon && strcmp(j->rec.job_id, tag) == 0)
			return j;
		if (colon && (size_t)(colon - tag) == sl &&
		    strncmp(tag, j->rec.scheduler, sl) == 0 &&
		    strcmp(colon + 1, j->rec.job_id) == 0)
			return j;
	}
	return NULL;
}

/*
 * The sender's job: 0, -EAGAIN (not known yet) or -ENOENT (none).  A pid
 * sender's is the job it named itself when it first sent, once that job
 * is live: a scan may have seen it only between its fork and its exec,
 * in its parent's job, and it may be gone before the next.  While that
 * job is not live yet and the process is, it waits (but for the last of
 * its AGENT_APP_MAX_WAIT ticks).  Else, the process
 * table's word; a pid no scan saw is its nearest known ancestor's when it
 * is gone, and (eager: a marker cuts the job's tick now) when it is alive
 * or a zombie too.
 */
static int job_of_src(struct agent *a, const struct agent_app_src *s, bool eager,
		      struct job_entry **j)
{
	int64_t job_id;

	if (s->pid) {
		int ret;
		bool unseen;

		if (s->tag[0]) {
			*j = job_of_tag(a, s->tag);
			if (*j)
				return 0;
			if (!eager && s->waited + 1 < AGENT_APP_MAX_WAIT && kill(s->pid, 0) == 0)
				return -EAGAIN;
		}
		ret = agent_job_of_pid(a, s->pid, &job_id, j);
		unseen = !table_proc(a, s->pid);

		if ((ret == -ENOENT || (eager && ret == -EAGAIN)) && s->ancestor && unseen)
			ret = agent_job_of_pid(a, s->ancestor, &job_id, j);
		/* gone from the table before this tick: the job it had when it sent */
		if (ret == -ENOENT && unseen && s->seen[0] && (*j = job_of_tag(a, s->seen)))
			ret = 0;
		return ret;
	}
	*j = job_of_tag(a, s->tag);
	return *j ? 0 : -ENOENT;
}

/*
 * Each sender's tick stored under its job.  A sender whose pid's job is
 * not known yet keeps aggregating (its points then go at a later tick's
 * time) for up to AGENT_APP_MAX_WAIT ticks.
 */
static void store_src(struct agent *a, struct agent_app_src *s, int64_t ts_ms, bool eager)
{
	struct job_entry *j = NULL;
	struct app_point *pts;
	struct app_mark *marks;
	size_t npts, nmarks;
	int ret = job_of_src(a, s, eager, &j);

	if (ret == -EAGAIN && ++s->waited < AGENT_APP_MAX_WAIT)
		return;
	s->waited = 0;
	app_agg_take(&s->agg, &pts, &npts, &marks, &nmarks);
	if (!ret) {
		if (npts)
			ret = store_put_app_points(a->st, j->rec.id, ts_ms, pts, npts);
		if (!ret && nmarks)
			ret = store_put_app_marks(a->st, j->rec.id, marks, nmarks);
		if (ret && ret != a->app_err)
			log_warn(ret, "cannot store the app metrics of job %s (dropped)", j->key);
		a->app_err = ret;
		if (ret)
			a->app_lost += npts + nmarks;
		for (size_t i = 0; i < npts && !ret; i++)
			series_add(a, j, &pts[i]);
	} else if (npts || nmarks) {
		a->app_unattributed += npts + nmarks;
		if (!a->app_warned_nojob) {
			if (s->pid)
				log_info(
				    "agent: the app metrics of pid %d are not stored: no job the "
				    "agent saw (said once)",
				    (int)s->pid);
			else
				log_info(
				    "agent: the app metrics tagged job:%s are not stored: no such "
				    "job is running here (said once)",
				    s->tag);
		}
		a->app_warned_nojob = true;
	}
	for (size_t i = 0; i < npts; i++)
		app_point_release(&pts[i]);
	free(pts);
	free(marks);
}

void agent_app_tick(struct agent *a, int64_t ts_ms)
{
	size_t nsrc = a->app_nsrc;

	if (a->app.udp_fd < 0 && a->app.unix_fd < 0)
		return;
	for (size_t i = 0; i < a->app_nsrc;) {
		struct agent_app_src *s = &a->app_src[i];

		a->app_lines += s->agg.lines;
		a->app_bad += s->agg.bad_lines;
		a->app_dropped += s->agg.dropped;
		s->agg.lines = s->agg.bad_lines = s->agg.dropped = 0;
		if (s->used || s->waited)
			store_src(a, s, ts_ms, false);
		s->quiet = s->used ? 0 : s->quiet + 1;
		/* nothing waiting, and gone (pids are reused) or quiet for long */
		if (!s->waited && !s->used &&
		    (s->quiet >= AGENT_APP_FORGET_TICKS ||
		     (s->pid && kill(s->pid, 0) < 0 && errno == ESRCH))) {
			app_agg_release(&s->agg);
			a->app_src[i] = a->app_src[--a->app_nsrc];
			continue;
		}
		s->used = false;
		i++;
	}
	if (a->app_nsrc != nsrc)
		src_reindex(a);
	for (size_t i = 0; i < a->app_series_cap; i++) {
		struct agent_app_series *s = a->app_series[i];

		if (s) {
			s->live = false;
			for (size_t k = 0; k < a->jobs.njobs && !s->live; k++)
				s->live = a->jobs.job[k].rec.id == s->job_id && a->jobs.job[k].live;
		}
	}
	series_prune(a);
}

/* ---- /metrics ---- */

static void app_labels(struct strbuf *lab, const struct agent *a, const struct agent_app_series *s)
{
	const struct job_entry *j = NULL;

	for (size_t k = 0; k < a->jobs.njobs && !j; k++)
		if (a->jobs.job[k].rec.id == s->job_id)
			j = &a->jobs.job[k];
	strbuf_reset(lab);
	strbuf_addstr(lab, "job_id=\"");
	prom_label_value(lab, j ? j->rec.job_id : "");
	strbuf_addstr(lab, "\",scheduler=\"");
	prom_label_value(lab, j ? j->rec.scheduler : "");
	strbuf_addstr(lab, "\",user=\"");
	prom_label_value(lab, j ? j->rec.user : "");
	strbuf_addstr(lab, "\",metric=\"");
	prom_label_value(lab, s->p.name);
	strbuf_addstr(lab, "\",tags=\"");
	prom_label_value(lab, s->p.tags);
	strbuf_addch(lab, '"');
}

static void sample(struct strbuf *o, const char *name, const char *lab, const char *extra, double v)
{
	strbuf_addf(o, "%s{%s%s} ", name, lab, extra);
	prom_value(o, v);
	strbuf_addch(o, '\n');
}

void agent_render_app(const struct agent *a, struct strbuf *o, struct strbuf *lab)
{
	static const enum prom_fam fam[] = {PF_APP_COUNTER, PF_APP_GAUGE, PF_APP_SET_DISTINCT,
					    PF_APP_SUMMARY};
	static const double qs[] = {0.5, 0.9, 0.95, 0.99};

	if (a->app.udp_fd < 0 && a->app.unix_fd < 0)
		return;
	prom_family_head(o, PF_AGENT_APP_LINES);
	strbuf_addf(o, "%s{result=\"received\"} %llu\n", prom_fam_name(PF_AGENT_APP_LINES),
		    (unsigned long long)a->app_lines);
	strbuf_addf(o, "%s{result=\"invalid\"} %llu\n", prom_fam_name(PF_AGENT_APP_LINES),
		    (unsigned long long)a->app_bad);
	strbuf_addf(o, "%s{result=\"over_cap\"} %llu\n", prom_fam_name(PF_AGENT_APP_LINES),
		    (unsigned long long)a->app_dropped);
	strbuf_addf(o, "%s{result=\"untagged\"} %llu\n", prom_fam_name(PF_AGENT_APP_LINES),
		    (unsigned long long)a->app_untagged);
	prom_family_head(o, PF_AGENT_APP_POINTS_DROPPED);
	strbuf_addf(o, "%s{reason=\"no_job\"} %llu\n", prom_fam_name(PF_AGENT_APP_POINTS_DROPPED),
		    (unsigned long long)a->app_unattributed);
	strbuf_addf(o, "%s{reason=\"store\"} %llu\n", prom_fam_name(PF_AGENT_APP_POINTS_DROPPED),
		    (unsigned long long)a->app_lost);
	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		bool head = false;

		for (size_t i = 0; i < a->app_series_cap; i++) {
			const struct agent_app_series *s = a->app_series[i];
			enum app_type t;
			char q[32], part[64];
			double v;

			if (!s || !s->live)
				continue;
			t = s->p.type;
			if ((f == 0) != (t == APP_COUNTER) || (f == 1) != (t == APP_GAUGE) ||
			    (f == 2) != (t == APP_SET))
				continue;
			if (!head)
				prom_family_head(o, fam[f]);
			head = true;
			app_labels(lab, a, s);
			if (f == 0)
				sample(o, prom_fam_name(fam[f]), lab->buf, "", s->p.sum);
			else if (f == 1)
				sample(o, prom_fam_name(fam[f]), lab->buf, "", s->p.last);
			else if (f == 2)
				sample(o, prom_fam_name(fam[f]), lab->buf, "",
				       s->last_tick_distinct);
			else {
				strbuf_addf(lab, ",type=\"%s\"", app_type_name(t));
				for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
					if (!app_quantile(&s->p.sk, s->p.min, s->p.max, qs[k], &v))
						continue;
					snprintf(q, sizeof(q), ",quantile=\"%g\"", qs[k]);
					sample(o, prom_fam_name(fam[f]), lab->buf, q, v);
				}
				snprintf(part, sizeof(part), "%s_sum", prom_fam_name(fam[f]));
				sample(o, part, lab->buf, "", s->p.sum);
				snprintf(part, sizeof(part), "%s_count", prom_fam_name(fam[f]));
				sample(o, part, lab->buf, "", s->p.count);
			}
		}
	}
}

static int by_job_cmp(const void *x, const void *y)
{
	const struct agent_app_series *a = *(const struct agent_app_series *const *)x;
	const struct agent_app_series *b = *(const struct agent_app_series *const *)y;

	if (a->job_id != b->job_id)
		return a->job_id < b->job_id ? -1 : 1;
	if (a->p.type != b->p.type)
		return a->p.type < b->p.type ? -1 : 1;
	return strcmp(a->p.name, b->p.name) ? strcmp(a->p.name, b->p.name)
					    : strcmp(a->p.tags, b->p.tags);
}

void agent_app_json_begin(struct agent *a)
{
	a->app_by_job_n = 0;
	if (!a->app_nseries)
		return;
	if (a->app_by_job_alloc < a->app_nseries) {
		struct agent_app_series **m = realloc(a->app_by_job, a->app_nseries * sizeof(*m));

		if (!m)
			return; /* the jobs' JSON without their app metrics this tick */
		a->app_by_job = m;
		a->app_by_job_alloc = a->app_nseries;
	}
	for (size_t i = 0; i < a->app_series_cap; i++)
		if (a->app_series[i] && a->app_series[i]->live)
			a->app_by_job[a->app_by_job_n++] = a->app_series[i];
	qsort(a->app_by_job, a->app_by_job_n, sizeof(*a->app_by_job), by_job_cmp);
}

void agent_app_json(struct jsonw *w, const struct agent *a, int64_t job_id)
{
	static const struct {
		const char *key;
		double q;
	} qs[] = {{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}};
	size_t lo = 0, hi = a->app_by_job_n;

	jsonw_key(w, "app");
	if (a->app.udp_fd < 0 && a->app.unix_fd < 0) {
		jsonw_null(w); /* no StatsD receiver: unknown, not none */
		return;
	}
	while (lo < hi) { /* the first of the job's series */
		size_t mid = lo + (hi - lo) / 2;

		if (a->app_by_job[mid]->job_id < job_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	jsonw_arr_begin(w);
	for (size_t i = lo; i < a->app_by_job_n && a->app_by_job[i]->job_id == job_id; i++) {
		const struct agent_app_series *s = a->app_by_job[i];
		bool sk = app_type_has_sketch(s->p.type);

		jsonw_obj_begin(w);
		jsonw_kv_str(w, "name", s->p.name);
		jsonw_kv_str(w, "type", app_type_name(s->p.type));
		jsonw_kv_str(w, "tags", s->p.tags);
		jsonw_kv_double(w, "count", s->p.count, 3);
		jsonw_kv_double_opt(w, "sum", s->p.type != APP_GAUGE && s->p.type != APP_SET,
				    s->p.sum, 3);
		jsonw_kv_double_opt(w, "last", s->p.type == APP_GAUGE, s->p.last, 3);
		jsonw_kv_double_opt(w, "distinct", s->p.type == APP_SET, s->last_tick_distinct, 0);
		jsonw_kv_double_opt(w, "min", sk && s->p.count > 0, s->p.min, 3);
		jsonw_kv_double_opt(w, "max", sk && s->p.count > 0, s->p.max, 3);
		for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
			double v = 0;
			bool has = sk && app_quantile(&s->p.sk, s->p.min, s->p.max, qs[k].q, &v);

			jsonw_kv_double_opt(w, qs[k].key, has, v, 3);
		}
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
}

void agent_app_release(struct agent *a)
{
	for (size_t i = 0; i < a->app_nsrc; i++)
		app_agg_release(&a->app_src[i].agg);
	free(a->app_src);
	free(a->app_src_slot);
	a->app_src_slot = NULL;
	free(a->app_by_job);
	a->app_by_job = NULL;
	a->app_by_job_n = a->app_by_job_alloc = 0;
	for (size_t i = 0; i < a->app_series_cap; i++)
		if (a->app_series[i]) {
			app_point_release(&a->app_series[i]->p);
			free(a->app_series[i]);
		}
	free(a->app_series);
	app_collector_release(&a->app);
	a->app_src = NULL;
	a->app_series = NULL;
	a->app_nsrc = a->app_alloc = a->app_nseries = a->app_series_cap = 0;
}
