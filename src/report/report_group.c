/*
 * report_group.c - a training job above pods (`jobscope report --k8s-job
 * NS/NAME`, /api/v1/report?k8s_job=): every pod job whose stored owner
 * (jobs.k8s_owner, schema 15) is NS/NAME, on whatever node, each loaded and
 * summed as its own report says it, with one line per pod.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fmt.h"
#include "common/jsonw.h"
#include "common/timeutil.h"
#include "analysis/jobreport.h"
#include "report/report_query.h"
#include "store/reader.h"

/* What the SMs did, in the group's lines: activity (enum gpu_activity) shown per pod and in all. */
static const enum gpu_activity group_activities[] = {GPU_ACTIVITY_SM, GPU_ACTIVITY_TENSOR,
						     GPU_ACTIVITY_DRAM};
#define GROUP_ACTIVITIES (sizeof(group_activities) / sizeof(group_activities[0]))

/*
 * A pod's GPUs' activity: the job's part's percent x ms and the ms over
 * its GPUs (the summary's sums, so that the group's average weighs every
 * GPU by its time), and its throttle-by-power seconds (NAN: unknown).
 */
struct group_activity {
	double pct_ms[GROUP_ACTIVITIES];
	int64_t ms[GROUP_ACTIVITIES];
	double throttle_power_s;
};

/* One pod of the group, as its own report has it (summary_to_record's figures). */
struct group_pod {
	struct job_record job;
	struct job_summary_record fig;
	double cpu_s;
	struct group_activity act;
};

static void activity_of(const struct summary *s, struct group_activity *a)
{
	memset(a, 0, sizeof(*a));
	a->throttle_power_s = summary_gpus_throttle_s(s, GPU_VIOLATION_POWER);
	for (int i = 0; i < s->ngpus; i++) {
		const struct gpu_summary *g = &s->gpus[i];

		if (!g->used)
			continue;
		for (size_t k = 0; k < GROUP_ACTIVITIES; k++) {
			a->pct_ms[k] += g->act_job_pct_ms[group_activities[k]];
			a->ms[k] += g->act_job_ms[group_activities[k]];
		}
	}
}

static void activity_add(struct group_activity *sum, const struct group_activity *a)
{
	for (size_t k = 0; k < GROUP_ACTIVITIES; k++) {
		sum->pct_ms[k] += a->pct_ms[k];
		sum->ms[k] += a->ms[k];
	}
	if (!isnan(a->throttle_power_s))
		sum->throttle_power_s = isnan(sum->throttle_power_s)
					    ? a->throttle_power_s
					    : sum->throttle_power_s + a->throttle_power_s;
}

/* "sm_active_avg_pct": ... of a pod or of the group; null where unknown. */
static void activity_json(struct jsonw *w, const struct group_activity *a)
{
	char key[64];

	for (size_t k = 0; k < GROUP_ACTIVITIES; k++) {
		snprintf(key, sizeof(key), "%s_avg_pct",
			 gpu_activity_kinds[group_activities[k]].name);
		jsonw_kv_double_opt(w, key, a->ms[k] > 0,
				    a->ms[k] > 0 ? a->pct_ms[k] / (double)a->ms[k] : 0, 2);
	}
	jsonw_kv_double(w, "throttle_power_s", a->throttle_power_s, 3);
}

struct group {
	const char *key, *owner;
	struct group_pod *pod;
	size_t npods, alloc;
	int ret;
};

static int collect_pod(const struct job_record *j, void *arg)
{
	struct group *g = arg;
	struct group_pod *p;

	if (strcmp(j->scheduler, "k8s") != 0 || strcmp(j->k8s_owner, g->key) != 0)
		return 0;
	if (g->owner && strcmp(j->user, g->owner) != 0)
		return 0; /* another user's pod: not there for this caller */
	if (g->npods == g->alloc) {
		size_t n = g->alloc ? 2 * g->alloc : 8;

		p = realloc(g->pod, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		g->pod = p;
		g->alloc = n;
	}
	p = &g->pod[g->npods++];
	memset(p, 0, sizeof(*p));
	p->job = *j;
	return 0;
}

static int load_pod(struct store *st, struct group_pod *p, struct job_report *r)
{
	int ret = job_report_load(r, st, &p->job);

	if (!ret) {
		summary_to_record(&r->sum, &p->fig);
		activity_of(&r->sum, &p->act);
		p->cpu_s = r->sum.samples > 0 ? summary_cpu_seconds(&r->sum) : 0;
	}
	job_report_release(r);
	return ret;
}

struct group_total {
	int64_t start_ms, end_ms; /* end 0: a pod still runs */
	double cpu_s, reserved_cpus, gpu_util_weighted;
	uint64_t rss_peak_sum, read_bytes, write_bytes, gpu_energy_mj, reserved_mem_bytes;
	int64_t gpus_used, gpu_util_gpus;
	struct group_activity act;
	size_t nnodes;
	bool has_io, has_energy, running;
};

static void group_sum(const struct group *g, struct group_total *t)
{
	memset(t, 0, sizeof(*t));
	t->act.throttle_power_s = NAN;
	for (size_t i = 0; i < g->npods; i++) {
		const struct group_pod *p = &g->pod[i];
		bool new_node = true;

		for (size_t k = 0; k < i && new_node; k++)
			new_node = g->pod[k].job.node_id != p->job.node_id;
		t->nnodes += new_node;
		if (i == 0 || p->job.start_ms < t->start_ms)
			t->start_ms = p->job.start_ms;
		t->running |= p->job.end_ms == 0;
		if (p->job.end_ms > t->end_ms)
			t->end_ms = p->job.end_ms;
		t->cpu_s += p->cpu_s;
		t->rss_peak_sum += p->fig.rss_peak_bytes;
		t->has_io |= p->fig.has_io;
		t->read_bytes += p->fig.read_bytes;
		t->write_bytes += p->fig.write_bytes;
		t->gpus_used += p->fig.gpus_used;
		if (!isnan(p->fig.gpu_util_avg_pct)) {
			t->gpu_util_weighted += p->fig.gpu_util_avg_pct * p->fig.gpus_used;
			t->gpu_util_gpus += p->fig.gpus_used;
		}
		t->has_energy |= p->fig.has_gpu_energy;
		t->gpu_energy_mj += p->fig.gpu_energy_mj;
		t->reserved_cpus += p->job.reserved_cpus;
		t->reserved_mem_bytes += p->job.reserved_mem_bytes;
		activity_add(&t->act, &p->act);
	}
	if (t->running)
		t->end_ms = 0;
}

static void json_pod(struct jsonw *w, const struct group_pod *p)
{
	char key[160];

	snprintf(key, sizeof(key), "%s:%.64s:%" PRId64, p->job.scheduler, p->job.job_id,
		 p->job.start_ms);
	jsonw_obj_begin(w);
	jsonw_kv_int(w, "id", p->job.id);
	jsonw_kv_str(w, "key", key);
	jsonw_kv_str(w, "name", p->job.name);
	jsonw_kv_str(w, "node", p->job.hostname);
	jsonw_kv_str(w, "user", p->job.user);
	jsonw_kv_int(w, "start_ms", p->job.start_ms);
	jsonw_kv_int_opt(w, "end_ms", p->job.end_ms > 0, p->job.end_ms);
	jsonw_kv_double(w, "cpu_seconds", p->cpu_s, 3);
	jsonw_kv_int(w, "memory_peak_bytes", (int64_t)p->fig.rss_peak_bytes);
	jsonw_kv_int_opt(w, "read_bytes", p->fig.has_io, (int64_t)p->fig.read_bytes);
	jsonw_kv_int_opt(w, "write_bytes", p->fig.has_io, (int64_t)p->fig.write_bytes);
	jsonw_kv_int(w, "gpus_used", p->fig.gpus_used);
	jsonw_kv_double_opt(w, "gpu_util_avg_pct", !isnan(p->fig.gpu_util_avg_pct),
			    p->fig.gpu_util_avg_pct, 1);
	jsonw_kv_double_opt(w, "gpu_energy_j", p->fig.has_gpu_energy,
			    (double)p->fig.gpu_energy_mj / 1000.0, 3);
	activity_json(w, &p->act);
	jsonw_obj_end(w);
}

static int group_json(const struct group *g, const struct group_total *t, struct strbuf *out)
{
	struct jsonw w;
	double span_s = ((t->end_ms ? t->end_ms : time_now_ms()) - t->start_ms) / 1000.0;

	jsonw_init(&w, out, true);
	jsonw_obj_begin(&w);
	jsonw_kv_str(&w, "k8s_job", g->key);
	jsonw_kv_str(&w, "owner_label", g->pod[0].job.k8s_owner_label);
	jsonw_kv_int(&w, "pods", (int64_t)g->npods);
	jsonw_kv_int(&w, "nodes", (int64_t)t->nnodes);
	jsonw_kv_int(&w, "start_ms", t->start_ms);
	jsonw_kv_int_opt(&w, "end_ms", t->end_ms > 0, t->end_ms);
	jsonw_key(&w, "total");
	jsonw_obj_begin(&w);
	jsonw_kv_double(&w, "cpu_seconds", t->cpu_s, 3);
	jsonw_kv_double_opt(&w, "cores_avg", span_s > 0, span_s > 0 ? t->cpu_s / span_s : 0, 3);
	jsonw_kv_double_opt(&w, "reserved_cpus", t->reserved_cpus > 0, t->reserved_cpus, 3);
	jsonw_kv_int_opt(&w, "reserved_memory_bytes", t->reserved_mem_bytes > 0,
			 (int64_t)t->reserved_mem_bytes);
	jsonw_kv_int(&w, "memory_peak_bytes_sum", (int64_t)t->rss_peak_sum);
	jsonw_kv_int_opt(&w, "read_bytes", t->has_io, (int64_t)t->read_bytes);
	jsonw_kv_int_opt(&w, "write_bytes", t->has_io, (int64_t)t->write_bytes);
	jsonw_kv_int(&w, "gpus_used", t->gpus_used);
	jsonw_kv_double_opt(
	    &w, "gpu_util_avg_pct", t->gpu_util_gpus > 0,
	    t->gpu_util_gpus > 0 ? t->gpu_util_weighted / (double)t->gpu_util_gpus : 0, 1);
	jsonw_kv_double_opt(&w, "gpu_energy_j", t->has_energy, (double)t->gpu_energy_mj / 1000.0,
			    3);
	activity_json(&w, &t->act);
	jsonw_obj_end(&w);
	jsonw_key(&w, "pods_list");
	jsonw_arr_begin(&w);
	for (size_t i = 0; i < g->npods; i++)
		json_pod(&w, &g->pod[i]);
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	strbuf_addch(out, '\n');
	return strbuf_error(out);
}

static int group_text(const struct group *g, const struct group_total *t, struct strbuf *out)
{
	char start[40], ran[40] = "", mem[32];
	int64_t until = t->end_ms ? t->end_ms : time_now_ms();

	format_rfc3339_ms(t->start_ms, start, sizeof(start));
	format_duration_ms(until - t->start_ms, ran, sizeof(ran));
	strbuf_addf(out, "jobscope k8s job %s (owner label %s): %zu pods on %zu nodes\n", g->key,
		    g->pod[0].job.k8s_owner_label, g->npods, t->nnodes);
	strbuf_addf(out, "  started %s, %s %s\n\n", start, t->end_ms ? "ran" : "running for", ran);
	strbuf_addf(out, "  %-6s %-40s %-20s %12s %12s %5s\n", "RUN", "POD", "NODE", "CPU s",
		    "MEM PEAK", "GPUS");
	for (size_t i = 0; i < g->npods; i++) {
		const struct group_pod *p = &g->pod[i];

		fmt_bytes(mem, sizeof(mem), p->fig.rss_peak_bytes);
		strbuf_addf(out, "  %-6" PRId64 " %-40.40s %-20.20s %12.1f %12s %5d\n", p->job.id,
			    p->job.name[0] ? p->job.name : p->job.job_id, p->job.hostname, p->cpu_s,
			    mem, p->fig.gpus_used);
	}
	fmt_bytes(mem, sizeof(mem), t->rss_peak_sum);
	strbuf_addf(out, "  %-6s %-40s %-20s %12.1f %12s %5" PRId64 "\n\n", "", "total", "",
		    t->cpu_s, mem, t->gpus_used);
	if (until > t->start_ms)
		strbuf_addf(out, "  CPU       %.2f cores on average over the group's span",
			    t->cpu_s * 1000.0 / (double)(until - t->start_ms));
	if (t->reserved_cpus > 0)
		strbuf_addf(out, " (%.4g reserved)", t->reserved_cpus);
	strbuf_addstr(out, "\n  Memory    the pods' peaks summed (each pod's own peak)\n");
	if (t->gpu_util_gpus > 0)
		strbuf_addf(out, "  GPU       %" PRId64 " used, %.1f%% utilization on average\n",
			    t->gpus_used, t->gpu_util_weighted / (double)t->gpu_util_gpus);
	if (t->act.ms[0] > 0) {
		strbuf_addf(out, "  GPU       ");
		for (size_t k = 0; k < GROUP_ACTIVITIES; k++)
			if (t->act.ms[k] > 0)
				strbuf_addf(out, "%s%s %.1f%%", k ? ", " : "",
					    gpu_activity_kinds[group_activities[k]].label,
					    t->act.pct_ms[k] / (double)t->act.ms[k]);
		strbuf_addstr(out, " (the pods' part, over their time on their GPUs)\n");
	}
	if (!isnan(t->act.throttle_power_s) && t->act.throttle_power_s > 0)
		strbuf_addf(out, "  GPU       throttled by power %.1f GPU-seconds\n",
			    t->act.throttle_power_s);
	if (t->has_energy)
		strbuf_addf(out, "  Energy    %.1f J on the GPUs\n",
			    (double)t->gpu_energy_mj / 1000.0);
	strbuf_addstr(out, "\n  each pod's own report: jobscope report RUN\n");
	return strbuf_error(out);
}

int report_query_k8s_group(struct store *st, const struct report_query *q, struct strbuf *out,
			   char *err, size_t errsize)
{
	struct group g = {q->k8s_job, q->owner, NULL, 0, 0, 0};
	const char *slash = strchr(q->k8s_job, '/');
	struct group_total t;
	struct job_report *r = NULL;
	int ret;

	if (!slash || slash == q->k8s_job || !slash[1] || strchr(slash + 1, '/')) {
		snprintf(err, errsize, "bad --k8s-job '%s' (NAMESPACE/NAME)", q->k8s_job);
		return -EINVAL;
	}
	if (q->format == REPORT_FMT_CSV || q->format == REPORT_FMT_HTML || q->plot_path) {
		snprintf(err, errsize, "a k8s job's report is text or json (no --plot)");
		return -EINVAL;
	}
	ret = store_for_each_job(st, collect_pod, &g);
	if (ret) {
		snprintf(err, errsize, "cannot read the jobs: %s", strerror(-ret));
		goto out_free;
	}
	if (g.npods == 0) {
		snprintf(err, errsize,
			 "no pod of k8s job '%s' (pods' owners are stored with the agent's "
			 "--cri-socket)",
			 q->k8s_job);
		ret = -ENOENT;
		goto out_free;
	}
	r = malloc(sizeof(*r));
	if (!r) {
		ret = -ENOMEM;
		snprintf(err, errsize, "out of memory");
		goto out_free;
	}
	for (size_t i = 0; i < g.npods && !ret; i++) {
		ret = load_pod(st, &g.pod[i], r);
		if (ret)
			snprintf(err, errsize, "cannot read the samples of job %" PRId64,
				 g.pod[i].job.id);
	}
	if (ret)
		goto out_free;
	group_sum(&g, &t);
	ret = q->format == REPORT_FMT_JSON ? group_json(&g, &t, out) : group_text(&g, &t, out);
	if (ret)
		snprintf(err, errsize, "cannot render the report: %s", strerror(-ret));
out_free:
	free(r);
	free(g.pod);
	return ret;
}
