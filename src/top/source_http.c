/*
 * source_http.c - the live sources: a node's agent (/api/v1/jobs with
 * state=running: each live job with its usage, GPUs and processes;
 * /api/v1/jobs/KEY for one that ended; /api/v1/gpus) and a head for one
 * job across its nodes (/api/v1/jobs and /api/v1/gpus of the head).
 * Answers are capped at 32 MiB and every field is checked for its type:
 * a missing or mistyped one is NAN ("-"), never 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "attrib/jobs.h"
#include "common/strbuf.h"
#include "net/client.h"
#include "sample/figures.h"
#include "top/source.h"

#define ANSWER_MAX ((size_t)32 << 20)

/* getpwuid reads the passwd database each call: a few names are kept */
void top_user_name(uint32_t uid, char *buf, size_t size)
{
	static struct {
		bool used;
		uint32_t uid;
		char name[TOP_NAME_MAX];
	} cache[16];
	static unsigned next;
	struct passwd *pw;
	unsigned k;

	for (k = 0; k < 16; k++)
		if (cache[k].used && cache[k].uid == uid) {
			top_strcpy(buf, size, cache[k].name);
			return;
		}
	pw = getpwuid(uid);
	k = next++ % 16;
	cache[k].used = true;
	cache[k].uid = uid;
	if (pw)
		top_strcpy(cache[k].name, sizeof(cache[k].name), pw->pw_name);
	else
		snprintf(cache[k].name, sizeof(cache[k].name), "%u", uid);
	top_strcpy(buf, size, cache[k].name);
}

/* A count from JSON as an integer: false for NAN, negative or past 2^63. */
static bool json_count(double x, uint64_t *out)
{
	if (!(x >= 0 && x < 9223372036854775808.0))
		return false;
	*out = (uint64_t)x;
	return true;
}

double top_source_cpu_pct(struct top_source *s, const char *node, int32_t pid, double cpu_ms,
			  double sampled_ms)
{
	struct top_prev_cpu *c;
	uint64_t c0, c1, t0, t1;
	double pct = NAN;

	/* the processes come in the same order each time: look where it was first */
	for (size_t i = 0; i < s->nprev; i++) {
		size_t k = (s->ncur + i) % s->nprev;
		const struct top_prev_cpu *p = &s->prev[k];

		if (p->pid != pid || strcmp(p->node, node) != 0)
			continue;
		/* numbers from JSON (whole ms, as the agent and the head write
		 * them): the model's figure (sample/figures.h) */
		if (sampled_ms > p->sampled_ms && json_count(p->cpu_ms, &c0) &&
		    json_count(cpu_ms, &c1) && json_count(p->sampled_ms, &t0) &&
		    json_count(sampled_ms, &t1))
			pct = proc_cpu_pct(c0, c1, (int64_t)(t1 - t0));
		else if (sampled_ms == p->sampled_ms)
			pct = p->pct; /* the same tick read again */
		break;
	}
	if (s->ncur == s->cur_alloc) {
		size_t na = s->cur_alloc ? s->cur_alloc * 2 : 64;
		void *q = realloc(s->cur, na * sizeof(*s->cur));

		if (!q)
			return pct;
		s->cur = q;
		s->cur_alloc = na;
	}
	c = &s->cur[s->ncur++];
	top_strcpy(c->node, sizeof(c->node), node);
	c->pid = pid;
	c->cpu_ms = cpu_ms;
	c->sampled_ms = sampled_ms;
	c->pct = pct;
	return pct;
}

void top_source_cpu_done(struct top_source *s)
{
	struct top_prev_cpu *t = s->prev;
	size_t ta = s->prev_alloc;

	s->prev = s->cur;
	s->nprev = s->ncur;
	s->prev_alloc = s->cur_alloc;
	s->cur = t;
	s->cur_alloc = ta;
	s->ncur = 0;
}

/* ---- JSON fields ---- */

static double num(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* an integer field within [lo, hi], else def (NAN, fractions and huge values included) */
static int64_t num_int(const cJSON *o, const char *name, int64_t lo, int64_t hi, int64_t def)
{
	double v = num(o, name);

	return !isnan(v) && v >= (double)lo && v <= (double)hi && v == floor(v) ? (int64_t)v : def;
}

static void str(const cJSON *o, const char *name, char *buf, size_t size)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	snprintf(buf, size, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static const cJSON *obj(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsObject(v) ? v : NULL;
}

static const cJSON *arr(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsArray(v) ? v : NULL;
}

static double ratio_pct(double used, double of)
{
	return isnan(used) || isnan(of) || of <= 0 ? NAN : 100.0 * used / of;
}

/*
 * A job as the agent writes it (render.c: reservation, usage, gpus, and
 * totals once it ended) or as a head's list does (flat reserved_* and
 * summary figures).
 */
static void job_from_json(const cJSON *o, struct top_job *j)
{
	const cJSON *res = obj(o, "reservation"), *use = obj(o, "usage"), *tot = obj(o, "totals");
	const cJSON *gpus = arr(o, "gpus"), *g, *state;

	top_job_init(j);
	str(o, "key", j->key, sizeof(j->key));
	str(o, "name", j->name, sizeof(j->name));
	str(o, "user", j->user, sizeof(j->user));
	str(o, "node", j->node, sizeof(j->node));
	str(o, "command", j->command, sizeof(j->command));
	state = cJSON_GetObjectItemCaseSensitive(o, "state");
	j->live = cJSON_IsString(state) && strcmp(state->valuestring, "running") == 0;
	j->start_ms = num(o, "start_ms");
	j->end_ms = num(o, "end_ms");
	if (res) {
		j->reserved_cpus = num(res, "cpus");
		j->reserved_mem_bytes = num(res, "memory_bytes");
		j->reserved_gpus = num(res, "gpus");
	} else {
		j->reserved_cpus = num(o, "reserved_cpus");
		j->reserved_mem_bytes = num(o, "reserved_mem_bytes");
		j->reserved_gpus = num(o, "reserved_gpus");
	}
	if (use) {
		j->cpu_cores = num(use, "cpu_cores");
		j->cpu_eff_pct = num(use, "cpu_efficiency_pct");
		j->cpu_wait_cores = num(use, "cpu_wait_cores");
		j->rss_bytes = num(use, "rss_bytes");
		j->processes = num(use, "processes");
		j->mem_eff_pct = ratio_pct(j->rss_bytes, j->reserved_mem_bytes);
	} else {
		const cJSON *t = tot ? tot : o; /* the head's list is flat */

		j->cpu_eff_pct = num(t, "cpu_efficiency_pct");
		j->rss_bytes = num(t, "rss_peak_bytes");
		j->mem_eff_pct = num(t, "mem_efficiency_pct");
		j->gpus_used = num(t, "gpus_used");
		j->gpu_util_pct = num(t, "gpu_util_avg_pct");
	}
	if (gpus) {
		double used = 0, util = 0;
		int nutil = 0;

		cJSON_ArrayForEach(g, gpus)
		{
			const cJSON *now = cJSON_GetObjectItemCaseSensitive(g, "in_use_now");
			double u = num(g, "sm_util_pct");

			used += cJSON_IsTrue(now);
			if (!isnan(u)) {
				util += u;
				nutil++;
			}
		}
		j->gpus_used = used;
		j->gpu_util_pct = nutil ? util / nutil : NAN;
	}
	top_job_badges(j);
}

static bool key_matches(const struct top_job *j, const cJSON *o, const char *key)
{
	char sched[32], id[64];

	str(o, "scheduler", sched, sizeof(sched));
	str(o, "job_id", id, sizeof(id));
	return jobs_key_matches(key, j->key, sched, id);
}

/* GET base+path as JSON: 0 with *doc, or -errno after m->status says why. */
static int get_json(struct top_source *s, struct top_model *m, const char *path, cJSON **doc)
{
	struct strbuf ans;
	long status = 0;
	int ret;

	*doc = NULL;
	strbuf_init(&ans, ANSWER_MAX);
	ret = http_client_request(s->url, path, s->token, NULL, &ans, &status);
	if (ret) {
		snprintf(m->status, sizeof(m->status), "cannot reach %s: retrying every second",
			 s->url);
		goto out_release;
	}
	if (status == 404) {
		ret = -ENOENT;
		goto out_release;
	}
	if (status != 200) {
		snprintf(m->status, sizeof(m->status), "%s%s answered %ld: retrying", s->url, path,
			 status);
		ret = -EIO;
		goto out_release;
	}
	*doc = cJSON_ParseWithLength(ans.buf ? ans.buf : "", ans.len);
	if (!*doc) {
		snprintf(m->status, sizeof(m->status), "%s%s: not JSON: retrying", s->url, path);
		ret = -EPROTO;
	}
out_release:
	strbuf_release(&ans);
	return ret;
}

/*
 * Processes from an answer's array: each with its own "node" and
 * "sampled_ms" when it has them (a head's), else those given (an agent's
 * job).  false when the model is full.
 */
static bool add_procs(struct top_source *s, struct top_model *m, const cJSON *procs,
		      const char *node, double ts)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, procs)
	{
		struct top_proc *tp = top_model_add_proc(m);
		int64_t uid = num_int(p, "uid", 0, UINT32_MAX, -1);
		double cpu = num(p, "cpu_ms"), at = num(p, "sampled_ms");

		if (!tp)
			return false;
		str(p, "node", tp->node, sizeof(tp->node));
		if (!tp->node[0])
			top_strcpy(tp->node, sizeof(tp->node), node);
		tp->pid = (int32_t)num_int(p, "pid", 0, INT32_MAX, 0);
		tp->ppid = (int32_t)num_int(p, "ppid", 0, INT32_MAX, 0);
		if (uid >= 0)
			top_user_name((uint32_t)uid, tp->user, sizeof(tp->user));
		str(p, "comm", tp->command, sizeof(tp->command));
		tp->rss_bytes = num(p, "rss_bytes");
		if (isnan(at))
			at = ts;
		if (!isnan(cpu) && !isnan(at))
			tp->cpu_pct = top_source_cpu_pct(s, tp->node, tp->pid, cpu, at);
	}
	return true;
}

/* the node's devices, with the open job's share of each it used */
static void add_gpus(struct top_model *m, const cJSON *gdoc, const cJSON *job, const char *only)
{
	const cJSON *devs = arr(gdoc, "gpus"), *d, *u;
	const cJSON *jgpus = job ? arr(job, "gpus") : NULL;
	char node[TOP_NAME_MAX];

	str(gdoc, "node", node, sizeof(node));
	cJSON_ArrayForEach(d, devs)
	{
		struct top_gpu *g;
		int64_t idx = num_int(d, "index", 0, 4096, -1);

		if (d->type != cJSON_Object || idx < 0)
			continue;
		if (only) {
			str(d, "node", node, sizeof(node));
			if (strcmp(node, only) != 0)
				continue;
		}
		g = top_model_add_gpu(m);
		if (!g)
			return;
		top_strcpy(g->node, sizeof(g->node), node);
		g->index = (int)idx;
		str(d, "name", g->name, sizeof(g->name));
		g->util_pct = num(d, "util_pct");
		g->mem_used_bytes = num(d, "memory_used_bytes");
		if (isnan(g->mem_used_bytes))
			g->mem_used_bytes = num(d, "mem_used_bytes");
		g->mem_total_bytes = num(d, "memory_total_bytes");
		if (isnan(g->mem_total_bytes))
			g->mem_total_bytes = num(d, "mem_total_bytes");
		g->power_w = num(d, "power_w");
		if (isnan(g->power_w) && !isnan(num(d, "power_mw")))
			g->power_w = num(d, "power_mw") / 1000.0;
		cJSON_ArrayForEach(u, jgpus)
		{
			if (num_int(u, "index", 0, 4096, -1) != idx)
				continue;
			g->job_util_pct = num(u, "sm_util_pct");
			g->job_mem_bytes = num(u, "memory_bytes");
		}
	}
}

/* The jobs of an agent's /api/v1/jobs answer into m; the object of open_key, or NULL. */
static const cJSON *list_jobs(struct top_model *m, const cJSON *doc, const char *open_key)
{
	const cJSON *o, *open = NULL;

	str(doc, "node", m->node, sizeof(m->node));
	cJSON_ArrayForEach(o, arr(doc, "jobs"))
	{
		struct top_job *j = top_model_add_job(m);

		if (!j)
			break;
		job_from_json(o, j);
		if (open_key && key_matches(j, o, open_key))
			open = o;
	}
	return open;
}

/* the open job's figures, process tree and GPUs (gdoc: /api/v1/gpus, or NULL) */
/*
 * The job's app metrics from the agent's "app" (totals since first seen):
 * a counter's sum, a gauge's last value, a set's distinct members, else
 * the mean, as the store's replay shows them.
 */
static void add_app(struct top_model *m, const cJSON *job)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, arr(job, "app"))
	{
		struct top_metric *t;
		char type[16];
		double count = num(p, "count"), sum = num(p, "sum");

		if (!(t = top_model_add_metric(m)))
			break;
		str(p, "name", t->name, sizeof(t->name));
		str(p, "type", type, sizeof(type));
		if (strcmp(type, "gauge") == 0)
			t->value = num(p, "last");
		else if (strcmp(type, "counter") == 0)
			t->value = sum;
		else if (strcmp(type, "set") == 0)
			t->value = num(p, "distinct");
		else
			t->value = count > 0 ? sum / count : NAN;
	}
}

static void open_job(struct top_source *s, struct top_model *m, const cJSON *open,
		     const cJSON *gdoc)
{
	char node[TOP_NAME_MAX];

	m->has_job = true;
	job_from_json(open, &m->job);
	str(open, "node", node, sizeof(node));
	add_procs(s, m, arr(open, "processes"), node, num(open, "sampled_ms"));
	add_app(m, open);
	top_model_tree(m);
	if (gdoc)
		add_gpus(m, gdoc, open, NULL);
}

void top_agent_model(struct top_source *s, struct top_model *m, const cJSON *jobs,
		     const cJSON *gpus, const char *open_key)
{
	const cJSON *open = list_jobs(m, jobs, open_key);

	if (open)
		open_job(s, m, open, gpus);
	top_source_cpu_done(s);
}

static int agent_refresh(struct top_source *s, struct top_model *m, const char *open_key)
{
	cJSON *doc, *gdoc = NULL, *one = NULL;
	const cJSON *open;
	int ret;

	top_model_clear(m);
	snprintf(m->source, sizeof(m->source), "agent %s", s->url);
	m->at_ms = (double)time(NULL) * 1000;
	ret = get_json(s, m, "/api/v1/jobs?state=running&limit=10000", &doc);
	if (ret) {
		if (ret == -ENOENT)
			snprintf(m->status, sizeof(m->status),
				 "%s is not a jobscope agent: retrying", s->url);
		return ret;
	}
	open = list_jobs(m, doc, open_key);
	snprintf(m->source + strlen(m->source), sizeof(m->source) - strlen(m->source), "  node %s",
		 m->node);
	if (open_key && !open) { /* not running: the agent's store has it */
		char path[TOP_KEY_MAX + 32];

		snprintf(path, sizeof(path), "/api/v1/jobs/%s", open_key);
		if (get_json(s, m, path, &one) == 0)
			open = obj(one, "job") ? obj(one, "job") : one;
	}
	if (open) {
		if (get_json(s, m, "/api/v1/gpus", &gdoc))
			gdoc = NULL;
		open_job(s, m, open, gdoc);
	}
	top_source_cpu_done(s);
	cJSON_Delete(gdoc);
	cJSON_Delete(one);
	cJSON_Delete(doc);
	return 0;
}

/*
 * The processes of each of the job's rows (its key before "@node"), from
 * the head's /api/v1/jobs/KEY: those its agents last sent alive.  The
 * rows of several nodes with the same key (the same start ms) are one
 * answer, each process with its node.
 */
static void head_procs(struct top_source *s, struct top_model *m)
{
	for (size_t k = 0; k < m->njobs; k++) {
		char key[TOP_KEY_MAX], path[TOP_KEY_MAX + 32], node[TOP_NAME_MAX];
		cJSON *ans;
		bool seen = false;

		top_strcpy(key, sizeof(key), m->jobs[k].key);
		if (strrchr(key, '@'))
			*strrchr(key, '@') = '\0';
		for (size_t i = 0; i < k; i++)
			seen |= strncmp(m->jobs[i].key, key, strlen(key)) == 0 &&
				m->jobs[i].key[strlen(key)] == '@';
		snprintf(path, sizeof(path), "/api/v1/jobs/%s", key);
		if (seen || get_json(s, m, path, &ans))
			continue;
		str(obj(ans, "job"), "node", node, sizeof(node));
		add_procs(s, m, arr(ans, "processes"), node, NAN);
		cJSON_Delete(ans);
	}
	top_model_tree(m);
}

/*
 * A running job's CPU and memory in use, where the head's jobs list has
 * none yet (it has them once the job has ended): the sums of its
 * processes on that node, their CPU from two refreshes (so "-" on the
 * first).
 */
static void usage_from_procs(struct top_model *m)
{
	for (size_t k = 0; k < m->njobs; k++) {
		struct top_job *j = &m->jobs[k];
		double cpu = 0, rss = 0;
		bool any_cpu = false, any_rss = false;

		for (size_t i = 0; i < m->nprocs; i++) {
			const struct top_proc *p = &m->procs[i];

			if (strcmp(p->node, j->node) != 0)
				continue;
			if (!isnan(p->cpu_pct))
				cpu += p->cpu_pct / 100, any_cpu = true;
			if (!isnan(p->rss_bytes))
				rss += p->rss_bytes, any_rss = true;
		}
		if (isnan(j->cpu_cores) && any_cpu) {
			j->cpu_cores = cpu;
			j->cpu_eff_pct = ratio_pct(cpu, j->reserved_cpus);
		}
		if (isnan(j->rss_bytes) && any_rss) {
			j->rss_bytes = rss;
			j->mem_eff_pct = ratio_pct(rss, j->reserved_mem_bytes);
		}
		top_job_badges(j);
	}
}

/*
 * A head, for one job (s->job): its rows on every node from the head's
 * jobs list, the list screen showing one line per node and the job
 * screen their sum with every node's GPUs and processes.
 */
static int head_refresh(struct top_source *s, struct top_model *m, const char *open_key)
{
	cJSON *doc, *gdoc = NULL;
	const cJSON *o;
	struct top_job *sum = &m->job;
	double cpu = 0, res = 0, rss = 0, rmem = 0;
	bool any_cpu = false, any_res = false, any_rss = false, any_rmem = false;
	int ret;

	(void)open_key;
	top_model_clear(m);
	snprintf(m->source, sizeof(m->source), "head %s  job %s", s->url, s->job);
	m->at_ms = (double)time(NULL) * 1000;
	ret = get_json(s, m, "/api/v1/jobs?limit=10000", &doc);
	if (ret)
		return ret;
	cJSON_ArrayForEach(o, arr(doc, "jobs"))
	{
		struct top_job tmp, *j;

		job_from_json(o, &tmp);
		if (!key_matches(&tmp, o, s->job))
			continue;
		j = top_model_add_job(m);
		if (!j)
			break;
		*j = tmp;
		/* one line per node: the key says which */
		snprintf(j->key, sizeof(j->key), "%.60s@%.60s", tmp.key, tmp.node);
		if (!m->has_job) {
			*sum = tmp;
			snprintf(sum->node, sizeof(sum->node), "%.50s", tmp.node);
		} else {
			size_t len = strlen(sum->node);

			snprintf(sum->node + len, sizeof(sum->node) - len, ",%s", tmp.node);
		}
		sum->live |= tmp.live;
		m->has_job = true;
	}
	if (!m->has_job)
		goto out;
	if (get_json(s, m, "/api/v1/gpus", &gdoc) == 0)
		for (size_t k = 0; k < m->njobs; k++)
			add_gpus(m, gdoc, NULL, m->jobs[k].node);
	head_procs(s, m);
	usage_from_procs(m);
	for (size_t k = 0; k < m->njobs; k++) {
		const struct top_job *j = &m->jobs[k];

		if (!isnan(j->cpu_cores))
			cpu += j->cpu_cores, any_cpu = true;
		if (!isnan(j->reserved_cpus))
			res += j->reserved_cpus, any_res = true;
		if (!isnan(j->rss_bytes))
			rss += j->rss_bytes, any_rss = true;
		if (!isnan(j->reserved_mem_bytes))
			rmem += j->reserved_mem_bytes, any_rmem = true;
	}
	sum->cpu_cores = any_cpu ? cpu : NAN;
	sum->reserved_cpus = any_res ? res : NAN;
	sum->cpu_eff_pct = ratio_pct(sum->cpu_cores, sum->reserved_cpus);
	sum->rss_bytes = any_rss ? rss : NAN;
	sum->reserved_mem_bytes = any_rmem ? rmem : NAN;
	sum->mem_eff_pct = ratio_pct(sum->rss_bytes, sum->reserved_mem_bytes);
	top_job_badges(sum);
out:
	top_source_cpu_done(s);
	cJSON_Delete(gdoc);
	cJSON_Delete(doc);
	return 0;
}

static void http_release(struct top_source *s)
{
	(void)s;
}

const struct top_backend top_backend_agent = {"agent", agent_refresh, NULL, http_release};
const struct top_backend top_backend_head = {"head", head_refresh, NULL, http_release};
