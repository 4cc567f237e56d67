/*
 * promsrc.c - a job's report from Prometheus: the sources tried in order
 * for each kind of key,
 * and the assembly of host, job and GPU samples on one time grid, fed to
 * the summary and series as a store's replay feeds them.
 *
 * Why a grid: every range query of one report is asked with the same
 * start, end and step, so that the points of all series meet at the same
 * instants, as an agent's rows of one tick do.  The grid starts at the
 * first sample of the job's main series and ends at its last (asked first,
 * with timestamp()), so that Prometheus' lookback (5 minutes of the last
 * value after a series ends) does not stretch the job.
 */
#include "prom/promsrc.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "prom/families.h"
#include "prom/promgrid.h"

/* ---- queries on the grid ----------------------------------------------------------------- */

struct ctx {
	const struct promsrc_query *q;
	const struct promsrc_transport *t;
	struct strbuf answer;
	char user[64]; /* a `user` label of the job's main series (jobscope's) */
};

/* One range query over the grid; its series (maybe none) in m. */
static int fetch(struct ctx *c, const struct grid *g, const char *promql, struct prom_matrix *m)
{
	const char *base = c->q->url;
	size_t n = strlen(base);
	struct strbuf url;
	char err[512];
	long status = 0;
	int ret;

	m->series = NULL;
	m->n = 0;
	while (n > 0 && base[n - 1] == '/')
		n--;
	strbuf_init(&url, 0);
	strbuf_addf(&url, "%.*s/api/v1/query_range?query=", (int)n, base);
	promql_url_encode(&url, promql);
	strbuf_addstr(&url, "&start=");
	promql_add_seconds(&url, g->start_ms);
	strbuf_addstr(&url, "&end=");
	promql_add_seconds(&url, g->start_ms + (int64_t)(g->n - 1) * g->step_ms);
	strbuf_addstr(&url, "&step=");
	promql_add_seconds(&url, g->step_ms);
	strbuf_reset(&c->answer);
	ret = strbuf_error(&url);
	if (ret) {
		log_err(ret, "cannot build the query");
		goto out_release;
	}
	ret = c->t->get(c->t->ctx, url.buf, &c->answer, &status);
	if (ret == -ENOENT) {
		log_err(0, "cannot ask Prometheus at %s: libcurl is not there", c->q->url);
		ret = -EIO;
	}
	if (ret == -E2BIG) /* an answer past the cap, said: not a usage error */
		ret = -EIO;
	if (ret)
		goto out_release;
	ret = prom_matrix_parse(c->answer.buf, c->answer.len, m, err, sizeof(err));
	if (ret == -EREMOTEIO) {
		log_err(0, "Prometheus at %s refused `%s`: %s", c->q->url, promql, err);
		ret = -EIO;
	} else if (ret && status != 200) {
		log_err(0, "Prometheus at %s answered %ld to `%s`: is it Prometheus?", c->q->url,
			status, promql);
		ret = -EIO;
	} else if (ret) {
		log_err(0, "cannot read Prometheus' answer to `%s`: %s", promql, err);
		ret = ret == -ENOMEM ? ret : -EPROTO;
	}
	if (ret)
		prom_matrix_release(m); /* what a failed parse had built: callers hold nothing */
out_release:
	strbuf_release(&url);
	return ret;
}

enum col_kind { COL_GAUGE, COL_COUNTER };

/*
 * The sum of a query's series on the grid, times scale.  A counter sums
 * from the first point any of its series has, NAN before; a gauge is NAN
 * where none of its series has a point.  Returns the number of series,
 * or -errno.
 */
static int column(struct ctx *c, const struct grid *g, const char *promql, enum col_kind kind,
		  double scale, double *out)
{
	struct prom_matrix m;
	double *one;
	size_t first = g->n;
	int ret;

	for (size_t i = 0; i < g->n; i++)
		out[i] = NAN;
	ret = fetch(c, g, promql, &m);
	if (ret)
		return ret;
	one = malloc(g->n * sizeof(*one));
	if (!one) {
		prom_matrix_release(&m);
		return log_err(-ENOMEM, "out of memory");
	}
	for (size_t k = 0; k < m.n; k++) {
		grid_dense(g, &m.series[k], one);
		for (size_t i = 0; i < g->n; i++)
			if (!isnan(one[i])) {
				if (i < first)
					first = i;
				break;
			}
		if (kind == COL_COUNTER)
			grid_counter_fix(one, g->n);
		for (size_t i = 0; i < g->n; i++)
			if (!isnan(one[i]))
				out[i] = (isnan(out[i]) ? 0 : out[i]) + one[i] * scale;
	}
	for (size_t i = 0; kind == COL_COUNTER && i < first && i < g->n; i++)
		out[i] = NAN;
	ret = (int)m.n;
	free(one);
	prom_matrix_release(&m);
	return ret;
}

/* ---- sources ------------------------------------------------------------------------------- */

/* The GPU series of one exporter; fields NULL where it has none. */
struct gpu_names {
	const char *exporter;
	const char *util, *mem_used, *mem_total, *power, *energy, *temp;
	double mem_scale;		      /* to bytes */
	double power_scale;		      /* to mW */
	double energy_scale;		      /* to mJ */
	const char *uuid_label, *uuid_label2; /* the device's identity */
	const char *index_label, *name_label;
};

/* jobscope's own: its family table's names (built at run time, prom/families.h) */
static struct gpu_names gpu_jobscope(void)
{
	return (struct gpu_names){
	    "jobscope",
	    prom_fam_name(PF_GPU_UTIL),
	    prom_fam_name(PF_GPU_MEMORY_USED),
	    prom_fam_name(PF_GPU_MEMORY_TOTAL),
	    prom_fam_name(PF_GPU_POWER),
	    prom_fam_name(PF_GPU_ENERGY),
	    prom_fam_name(PF_GPU_TEMPERATURE),
	    1.0,
	    1000.0,
	    1000.0,
	    "uuid",
	    NULL,
	    "gpu",
	    NULL,
	};
}

/* FB_* are MiB; POWER_USAGE W; TOTAL_ENERGY_CONSUMPTION mJ (reference 2.1). */
static const struct gpu_names gpu_dcgm = {
    "dcgm-exporter",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    NULL, /* FB_USED + FB_FREE, below */
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_GPU_TEMP",
    1048576.0,
    1000.0,
    1.0,
    "UUID",
    "uuid",
    "gpu",
    "modelName",
};

static const struct gpu_names gpu_jobstats = {
    "nvidia_gpu_prometheus_exporter",
    "nvidia_gpu_duty_cycle",
    "nvidia_gpu_memory_used_bytes",
    "nvidia_gpu_memory_total_bytes",
    "nvidia_gpu_power_usage_milliwatts",
    NULL,
    "nvidia_gpu_temperature_celsius",
    1.0,
    1.0,
    1.0,
    "uuid",
    NULL,
    "minor_number",
    "name",
};

enum gpu_col { GC_UTIL, GC_MEM, GC_MEM_TOTAL, GC_POWER, GC_ENERGY, GC_TEMP, GC__COUNT };

struct prom_gpu {
	struct device_record dev;
	double *col[GC__COUNT];
};

enum host_col {
	HC_USER,
	HC_NICE,
	HC_SYSTEM,
	HC_IDLE,
	HC_IOWAIT,
	HC_IRQ,
	HC_SOFTIRQ,
	HC_STEAL,
	HC_MEM_TOTAL,
	HC_MEM_AVAIL,
	HC_LOAD1,
	HC__COUNT
};

static const char *const cpu_modes[] = {"user",	  "nice", "system",  "idle",
					"iowait", "irq",  "softirq", "steal"};

/* JC_SYS: the system part of JC_CPU, where the source splits it (--node's modes) */
enum job_col { JC_CPU, JC_SYS, JC_RSS, JC_SWAP, JC_READ, JC_WRITE, JC_CG_MEM, JC_PROCS, JC__COUNT };

/* What one report gathered. */
struct gathered {
	struct grid g;
	double *job[JC__COUNT];
	bool has_job;
	int job_nseries; /* the job's CPU series: its containers for cAdvisor */
	double *host[HC__COUNT];
	int host_ncpus;
	bool has_host;
	struct prom_gpu gpus[JS_MAX_GPUS];
	int ngpus;
	char job_src[96], gpu_src[48], host_src[32], host_sel[600];
	char step_why[160];   /* how the grid's step was chosen (summary_origin) */
	bool io_since_window; /* JC_READ, JC_WRITE count from before the job (a node's boot) */
	char io_from[320];    /* where JC_READ and JC_WRITE came from, or why they did not */
};

static void gathered_release(struct gathered *w)
{
	for (int i = 0; i < JC__COUNT; i++)
		free(w->job[i]);
	for (int i = 0; i < HC__COUNT; i++)
		free(w->host[i]);
	for (int d = 0; d < w->ngpus; d++)
		for (int i = 0; i < GC__COUNT; i++)
			free(w->gpus[d].col[i]);
}

static double *nan_column(size_t n)
{
	double *v = malloc((n ? n : 1) * sizeof(*v));

	for (size_t i = 0; v && i < n; i++)
		v[i] = NAN;
	return v;
}

/* The device a series is about: found by its UUID (else its index), or a new one. */
static struct prom_gpu *gpu_of(struct gathered *w, const struct gpu_names *nm,
			       const struct prom_series *s)
{
	const char *uuid = prom_series_label(s, nm->uuid_label);
	const char *index = nm->index_label ? prom_series_label(s, nm->index_label) : NULL;
	const char *name = nm->name_label ? prom_series_label(s, nm->name_label) : NULL;
	char key[GPU_UUID_MAX];
	struct prom_gpu *d;

	if (!uuid && nm->uuid_label2)
		uuid = prom_series_label(s, nm->uuid_label2);
	if (uuid && *uuid)
		snprintf(key, sizeof(key), "%s", uuid);
	else if (index && *index)
		snprintf(key, sizeof(key), "gpu%s", index);
	else
		return NULL;
	for (int i = 0; i < w->ngpus; i++)
		if (strcmp(w->gpus[i].dev.info.uuid, key) == 0)
			return &w->gpus[i];
	if (w->ngpus >= JS_MAX_GPUS)
		return NULL;
	d = &w->gpus[w->ngpus];
	memset(d, 0, sizeof(*d));
	for (int i = 0; i < GC__COUNT; i++) {
		d->col[i] = nan_column(w->g.n);
		if (!d->col[i]) {
			for (int k = 0; k < i; k++)
				free(d->col[k]);
			return NULL;
		}
	}
	w->ngpus++;
	snprintf(d->dev.info.uuid, sizeof(d->dev.info.uuid), "%s", key);
	snprintf(d->dev.vendor, sizeof(d->dev.vendor), "NVIDIA");
	snprintf(d->dev.info.name, sizeof(d->dev.info.name), "%s", name ? name : "");
	d->dev.info.index = index ? atoi(index) : w->ngpus - 1;
	d->dev.id = w->ngpus;
	return d;
}

/* One GPU metric of every device that sel picks (sel: "{...}" or an expression's %s). */
static int gpu_metric(struct ctx *c, struct gathered *w, const struct gpu_names *nm,
		      const char *promql, enum gpu_col col, double scale, bool counter)
{
	struct prom_matrix m;
	int ret = fetch(c, &w->g, promql, &m);

	if (ret)
		return ret;
	for (size_t k = 0; k < m.n; k++) {
		struct prom_gpu *d = gpu_of(w, nm, &m.series[k]);

		if (!d)
			continue;
		grid_dense(&w->g, &m.series[k], d->col[col]);
		if (counter) {
			size_t first = 0;

			while (first < w->g.n && isnan(d->col[col][first]))
				first++;
			grid_counter_fix(d->col[col] + first, w->g.n - first);
		}
		for (size_t i = 0; i < w->g.n; i++)
			d->col[col][i] *= scale;
	}
	ret = (int)m.n;
	prom_matrix_release(&m);
	return ret;
}

/*
 * Every GPU series of one exporter that the matcher list sel picks; alt, when
 * not NULL, is a second matcher list or'ed in (dcgm-exporter's Hostname
 * became hostname).  Returns the number of devices found.
 */
static int gpus_from(struct ctx *c, struct gathered *w, const struct gpu_names *nm, const char *sel,
		     const char *alt)
{
	static const enum gpu_col cols[] = {GC_UTIL,  GC_MEM,	 GC_MEM_TOTAL,
					    GC_POWER, GC_ENERGY, GC_TEMP};
	struct strbuf q;
	int ret = 0;

	strbuf_init(&q, 0);
	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]) && ret >= 0; i++) {
		const char *names[] = {nm->util,  nm->mem_used, nm->mem_total,
				       nm->power, nm->energy,	nm->temp};
		const double scales[] = {
		    1.0, nm->mem_scale, nm->mem_scale, nm->power_scale, nm->energy_scale, 1.0};
		const char *name = names[i];

		strbuf_reset(&q);
		if (!name && cols[i] == GC_MEM_TOTAL && nm == &gpu_dcgm) {
			strbuf_addf(&q, "DCGM_FI_DEV_FB_USED%s + DCGM_FI_DEV_FB_FREE%s", sel, sel);
			if (alt)
				strbuf_addf(&q, " or DCGM_FI_DEV_FB_USED%s + DCGM_FI_DEV_FB_FREE%s",
					    alt, alt);
		} else if (!name) {
			continue;
		} else {
			strbuf_addf(&q, "%s%s", name, sel);
			if (alt)
				strbuf_addf(&q, " or %s%s", name, alt);
		}
		ret = gpu_metric(c, w, nm, q.buf, cols[i], scales[i], cols[i] == GC_ENERGY);
		if (i == 0 && ret == 0)
			break; /* no utilization: not this exporter */
	}
	strbuf_release(&q);
	if (ret < 0)
		return ret;
	for (int d = 0; d < w->ngpus; d++) {
		double total = grid_last_of(w->gpus[d].col[GC_MEM_TOTAL], w->g.n);

		if (total > 0) {
			w->gpus[d].dev.info.valid |= GPU_INFO_MEM_TOTAL;
			w->gpus[d].dev.info.mem_total_bytes = grid_u64(total);
		}
	}
	if (w->ngpus)
		snprintf(w->gpu_src, sizeof(w->gpu_src), "%s", nm->exporter);
	return w->ngpus;
}

/* The node's CPU by mode, memory and load: jobscope's node series or node_exporter's. */
static int host_from(struct ctx *c, struct gathered *w, bool jobscope, const char *sel)
{
	const char *cpu = jobscope ? prom_fam_name(PF_NODE_CPU_SECONDS) : "node_cpu_seconds_total";
	struct strbuf q;
	int ret = 0, found = 0;

	strbuf_init(&q, 0);
	for (int m = 0; m < 8 && ret >= 0; m++) {
		strbuf_reset(&q);
		strbuf_addf(&q, "%s{mode=\"%s\",%s}", cpu, cpu_modes[m], sel);
		ret = column(c, &w->g, q.buf, COL_COUNTER, 1000.0, w->host[HC_USER + m]);
		if (ret > 0 && m == HC_IDLE)
			found = ret; /* node_exporter: one series per CPU */
		if (m == 0 && ret == 0)
			break;
	}
	if (ret >= 0 && found) {
		strbuf_reset(&q);
		strbuf_addf(&q, "%s{%s}",
			    jobscope ? prom_fam_name(PF_NODE_MEMORY_TOTAL)
				     : "node_memory_MemTotal_bytes",
			    sel);
		ret = column(c, &w->g, q.buf, COL_GAUGE, 1.0, w->host[HC_MEM_TOTAL]);
	}
	if (ret >= 0 && found) {
		strbuf_reset(&q);
		strbuf_addf(&q, "%s{%s}",
			    jobscope ? prom_fam_name(PF_NODE_MEMORY_AVAILABLE)
				     : "node_memory_MemAvailable_bytes",
			    sel);
		ret = column(c, &w->g, q.buf, COL_GAUGE, 1.0, w->host[HC_MEM_AVAIL]);
	}
	if (ret >= 0 && found) {
		strbuf_reset(&q);
		strbuf_addf(&q, "%s{%s}", jobscope ? prom_fam_name(PF_NODE_LOAD1) : "node_load1",
			    sel);
		ret = column(c, &w->g, q.buf, COL_GAUGE, 1000.0, w->host[HC_LOAD1]);
	}
	if (ret >= 0 && found && jobscope) {
		double *n = nan_column(w->g.n);

		strbuf_reset(&q);
		strbuf_addf(&q, "%s{%s}", prom_fam_name(PF_NODE_CPUS), sel);
		ret = n ? column(c, &w->g, q.buf, COL_GAUGE, 1.0, n) : -ENOMEM;
		/* a count of CPUs, or nothing (any number may come from outside) */
		if (ret >= 0 && grid_last_of(n, w->g.n) >= 1 && grid_last_of(n, w->g.n) <= 1 << 20)
			found = (int)grid_last_of(n, w->g.n);
		free(n);
	}
	strbuf_release(&q);
	if (ret < 0)
		return ret;
	if (found) {
		w->has_host = true;
		w->host_ncpus = found;
		snprintf(w->host_src, sizeof(w->host_src), "%s",
			 jobscope ? "jobscope" : "node_exporter");
	}
	return found;
}

/* ---- the question --------------------------------------------------------------------------- */

/*
 * When the main series has samples in the window: the first and the last
 * sample's own times (timestamp(), not the grid's), so that the report's
 * span is the data's.  Returns the number of series (0: none) or -errno;
 * the first series' instance label (or node) goes to instance.
 */
static int probe(struct ctx *c, const struct grid *g, const char *sel, int64_t *first_ms,
		 int64_t *last_ms, char *instance, size_t isize)
{
	struct strbuf q;
	struct prom_matrix m;
	int ret;

	strbuf_init(&q, 0);
	strbuf_addf(&q, "timestamp(%s)", sel);
	ret = strbuf_error(&q) ?: fetch(c, g, q.buf, &m);
	strbuf_release(&q);
	if (ret)
		return ret;
	*first_ms = INT64_MAX;
	*last_ms = INT64_MIN;
	if (isize)
		instance[0] = '\0';
	for (size_t k = 0; k < m.n; k++) {
		const char *inst = prom_series_label(&m.series[k], "node");

		if (!inst)
			inst = prom_series_label(&m.series[k], "instance");
		if (!inst)
			inst = prom_series_label(&m.series[k], "Hostname");
		if (!inst)
			inst = prom_series_label(&m.series[k], "hostname");
		if (inst && isize && !instance[0])
			snprintf(instance, isize, "%s", inst);
		if (!c->user[0] && prom_series_label(&m.series[k], "user"))
			snprintf(c->user, sizeof(c->user), "%s",
				 prom_series_label(&m.series[k], "user"));
		for (size_t i = 0; i < m.series[k].n; i++) {
			double ts = m.series[k].v[i] * 1000.0;

			if (!(ts >= 0 && ts <= (double)JOB_REPORT_MAX_MS))
				continue;
			if ((int64_t)llround(ts) < *first_ms)
				*first_ms = (int64_t)llround(ts);
			if ((int64_t)llround(ts) > *last_ms)
				*last_ms = (int64_t)llround(ts);
		}
	}
	ret = *first_ms <= *last_ms ? (int)m.n : 0;
	prom_matrix_release(&m);
	return ret;
}

/* One job source: the matchers of the job's series and the names of its metrics. */
struct job_names {
	const char *source;
	const char *cpu, *rss, *rss2, *swap, *read, *write, *cg_mem, *procs;
	double cpu_scale; /* to ms */
	const char *res_cpus, *res_mem, *res_gpus;
};

static struct job_names job_jobscope(void)
{
	return (struct job_names){
	    "jobscope",
	    prom_fam_name(PF_JOB_CPU_SECONDS),
	    prom_fam_name(PF_JOB_MEMORY_RSS),
	    NULL,
	    prom_fam_name(PF_JOB_SWAP),
	    prom_fam_name(PF_JOB_READ),
	    prom_fam_name(PF_JOB_WRITTEN),
	    prom_fam_name(PF_JOB_CGROUP_MEMORY),
	    prom_fam_name(PF_JOB_PROCESSES),
	    1000.0,
	    prom_fam_name(PF_JOB_RESERVED_CPUS),
	    prom_fam_name(PF_JOB_RESERVED_MEMORY),
	    prom_fam_name(PF_JOB_RESERVED_GPUS),
	};
}

/* cgroup_exporter's CPU is a gauge of cumulative seconds; total_bytes is the limit. */
static const struct job_names job_cgroup = {
    "cgroup_exporter",
    "cgroup_cpu_total_seconds",
    "cgroup_memory_rss_bytes",
    NULL,
    NULL,
    NULL,
    NULL,
    "cgroup_memory_used_bytes",
    NULL,
    1000.0,
    "cgroup_cpus",
    "cgroup_memory_total_bytes",
    NULL,
};

/* cAdvisor: per container; the limits are summed in the code (0 or -1: none). */
static const struct job_names job_cadvisor = {
    "cAdvisor",
    "container_cpu_usage_seconds_total",
    "container_memory_rss",
    "container_memory_working_set_bytes",
    "container_memory_swap",
    "container_fs_reads_bytes_total",
    "container_fs_writes_bytes_total",
    "container_memory_usage_bytes",
    NULL,
    1000.0,
    NULL,
    NULL,
    NULL,
};

static int job_col(struct ctx *c, struct gathered *w, const char *name, const char *sel,
		   enum col_kind kind, double scale, enum job_col col)
{
	struct strbuf q;
	int ret;

	if (!name)
		return 0;
	strbuf_init(&q, 0);
	strbuf_addf(&q, "%s{%s}", name, sel);
	ret = strbuf_error(&q) ?: column(c, &w->g, q.buf, kind, scale, w->job[col]);
	strbuf_release(&q);
	return ret;
}

/* The last value of one series (a reservation): NAN when none. */
static int last_value(struct ctx *c, struct gathered *w, const char *name, const char *sel,
		      double *out)
{
	double *v;
	int ret;

	*out = NAN;
	if (!name)
		return 0;
	v = nan_column(w->g.n);
	if (!v)
		return -ENOMEM;
	{
		struct strbuf q;

		strbuf_init(&q, 0);
		strbuf_addf(&q, "%s{%s}", name, sel);
		ret = column(c, &w->g, q.buf, COL_GAUGE, 1.0, v);
		strbuf_release(&q);
	}
	if (ret > 0)
		*out = grid_last_of(v, w->g.n);
	free(v);
	return ret;
}

/*
 * A pod's reservation from cAdvisor's container specs: the sum of its
 * containers' memory limits and CPU quotas, NAN when one container has
 * none (0 or -1: no reservation to judge against).
 */
static int cadvisor_limits(struct ctx *c, struct gathered *w, const char *sel, double *cpus,
			   double *mem)
{
	struct strbuf q;
	struct prom_matrix m;
	double *v = nan_column(w->g.n);
	int ret;

	*cpus = *mem = NAN;
	if (!v)
		return -ENOMEM;
	strbuf_init(&q, 0);
	strbuf_addf(&q, "container_spec_memory_limit_bytes{%s}", sel);
	ret = fetch(c, &w->g, q.buf, &m);
	if (!ret) {
		/* cAdvisor writes 0 for no limit */
		double sum = m.n && (int)m.n >= w->job_nseries ? 0 : NAN;

		for (size_t k = 0; k < m.n; k++) {
			grid_dense(&w->g, &m.series[k], v);
			double x = grid_last_of(v, w->g.n);

			sum = x > 0 && x < 0x1p62 ? sum + x : NAN;
		}
		*mem = sum;
		prom_matrix_release(&m);
	}
	strbuf_reset(&q);
	strbuf_addf(&q,
		    "container_spec_cpu_quota{%s} / on(namespace,pod,container,id,name) "
		    "container_spec_cpu_period{%s}",
		    sel, sel);
	if (!ret)
		ret = fetch(c, &w->g, q.buf, &m);
	if (!ret) {
		/* no quota: no series for that container (cAdvisor leaves it out) */
		double sum = m.n && (int)m.n >= w->job_nseries ? 0 : NAN;

		for (size_t k = 0; k < m.n; k++) {
			grid_dense(&w->g, &m.series[k], v);
			double x = grid_last_of(v, w->g.n);

			sum = x > 0 ? sum + x : NAN;
		}
		*cpus = sum;
		prom_matrix_release(&m);
	}
	strbuf_release(&q);
	free(v);
	return ret;
}

static int job_cols(struct ctx *c, struct gathered *w, const struct job_names *nm, const char *sel)
{
	int ret = job_col(c, w, nm->cpu, sel, COL_COUNTER, nm->cpu_scale, JC_CPU);

	w->job_nseries = ret > 0 ? ret : 0;

	if (ret >= 0)
		ret = job_col(c, w, nm->rss, sel, COL_GAUGE, 1.0, JC_RSS);
	if (ret == 0 && nm->rss2)
		ret = job_col(c, w, nm->rss2, sel, COL_GAUGE, 1.0, JC_RSS);
	if (ret >= 0)
		ret = job_col(c, w, nm->swap, sel, COL_GAUGE, 1.0, JC_SWAP);
	if (ret >= 0)
		ret = job_col(c, w, nm->read, sel, COL_COUNTER, 1.0, JC_READ);
	if (ret >= 0)
		ret = job_col(c, w, nm->write, sel, COL_COUNTER, 1.0, JC_WRITE);
	if (ret >= 0)
		ret = job_col(c, w, nm->cg_mem, sel, COL_GAUGE, 1.0, JC_CG_MEM);
	if (ret >= 0)
		ret = job_col(c, w, nm->procs, sel, COL_GAUGE, 1.0, JC_PROCS);
	if (ret >= 0) {
		w->has_job = true;
		snprintf(w->job_src, sizeof(w->job_src), "%s", nm->source);
		if (!nm->read)
			snprintf(w->io_from, sizeof(w->io_from), "%s has no storage I/O series",
				 nm->source);
		else if (isnan(grid_last_of(w->job[JC_READ], w->g.n)) ||
			 isnan(grid_last_of(w->job[JC_WRITE], w->g.n)))
			snprintf(w->io_from, sizeof(w->io_from),
				 "Prometheus has no %s or %s of the job", nm->read, nm->write);
		else
			snprintf(w->io_from, sizeof(w->io_from), "%s's %s and %s", nm->source,
				 nm->read, nm->write);
	}
	return ret < 0 ? ret : 0;
}

/*
 * One of node_exporter's disk byte counters summed over the node's real
 * disks (promsrc_real_disk): NAN before the first point of any, each made
 * monotonic.  Their names, comma-separated, in devs.  Returns the number
 * of disks summed, or -errno.
 */
static int disk_column(struct ctx *c, const struct grid *g, const char *name, const char *sel,
		       double *out, char *devs, size_t dsize)
{
	struct prom_matrix m;
	struct strbuf q;
	double *one = malloc((g->n ? g->n : 1) * sizeof(*one));
	size_t first = g->n, dlen = 0;
	int ret, ndisks = 0;

	for (size_t i = 0; i < g->n; i++)
		out[i] = NAN;
	if (dsize)
		devs[0] = '\0';
	if (!one)
		return log_err(-ENOMEM, "out of memory");
	strbuf_init(&q, 0);
	strbuf_addf(&q, "%s{%s}", name, sel);
	ret = strbuf_error(&q) ?: fetch(c, g, q.buf, &m);
	strbuf_release(&q);
	if (ret) {
		free(one);
		return ret;
	}
	for (size_t k = 0; k < m.n; k++) {
		const char *dev = prom_series_label(&m.series[k], "device");

		if (!dev || !promsrc_real_disk(dev))
			continue;
		ndisks++;
		if (dlen < dsize) {
			int w = snprintf(devs + dlen, dsize - dlen, "%s%s", dlen ? ", " : "", dev);

			dlen += w > 0 ? (size_t)w : 0;
		}
		grid_dense(g, &m.series[k], one);
		for (size_t i = 0; i < first; i++)
			if (!isnan(one[i])) {
				first = i;
				break;
			}
		grid_counter_fix(one, g->n);
		for (size_t i = 0; i < g->n; i++)
			out[i] = (isnan(out[i]) ? 0 : out[i]) + one[i];
	}
	for (size_t i = 0; i < first && i < g->n; i++)
		out[i] = NAN;
	prom_matrix_release(&m);
	free(one);
	return ndisks;
}

/* The node's storage I/O as the job's (--node): node_exporter's disks' bytes. */
static int node_disks(struct ctx *c, struct gathered *w, const char *sel, const char *node)
{
	static const char rd[] = "node_disk_read_bytes_total",
			  wr[] = "node_disk_written_bytes_total";
	char devs[200], devs2[200];
	int n = disk_column(c, &w->g, rd, sel, w->job[JC_READ], devs, sizeof(devs)), n2;

	if (n < 0)
		return n;
	n2 = disk_column(c, &w->g, wr, sel, w->job[JC_WRITE], devs2, sizeof(devs2));
	if (n2 < 0)
		return n2;
	if (n > 0 && n2 > 0) {
		w->io_since_window = true;
		snprintf(w->io_from, sizeof(w->io_from),
			 "node_exporter's %s and %s, summed over %s%s", rd, wr,
			 n == 1 ? "its disk " : "its disks ", devs);
	} else {
		snprintf(
		    w->io_from, sizeof(w->io_from),
		    "Prometheus has no %s or %s of node '%.64s' for a real disk (node_exporter's "
		    "diskstats collector)",
		    rd, wr, node);
	}
	return 0;
}

/* ---- feeding the report --------------------------------------------------------------------- */

static bool host_at(const struct gathered *w, size_t i, struct host_sample *h)
{
	uint64_t *f[] = {&h->cpu.total.user_ms,	   &h->cpu.total.nice_ms,   &h->cpu.total.system_ms,
			 &h->cpu.total.idle_ms,	   &h->cpu.total.iowait_ms, &h->cpu.total.irq_ms,
			 &h->cpu.total.softirq_ms, &h->cpu.total.steal_ms};

	h->valid = 0;
	if (!w->has_host)
		return false;
	if (!isnan(w->host[HC_IDLE][i])) {
		h->valid |= HOST_HAS_CPU;
		h->cpu.ncpus = w->host_ncpus;
		for (int m = 0; m < 8; m++)
			*f[m] =
			    grid_u64(isnan(w->host[HC_USER + m][i]) ? 0 : w->host[HC_USER + m][i]);
	}
	h->mem.valid = 0;
	if (!isnan(w->host[HC_MEM_TOTAL][i])) {
		h->mem.valid |= MEMINFO_TOTAL;
		h->mem.total_bytes = grid_u64(w->host[HC_MEM_TOTAL][i]);
	}
	if (!isnan(w->host[HC_MEM_AVAIL][i])) {
		h->mem.valid |= MEMINFO_AVAILABLE;
		h->mem.available_bytes = grid_u64(w->host[HC_MEM_AVAIL][i]);
	}
	if (h->mem.valid)
		h->valid |= HOST_HAS_MEM;
	if (!isnan(w->host[HC_LOAD1][i])) {
		h->valid |= HOST_HAS_LOAD;
		h->load.load1_milli = (uint32_t)fmin(grid_u64(w->host[HC_LOAD1][i]), 4e9);
	}
	return h->valid != 0;
}

/* The first values of the job's counters that count from the job's start (NAN: none). */
struct job_origin {
	double cpu, sys, read, write;
};

static bool job_at(const struct gathered *w, size_t i, const struct job_origin *o,
		   struct job_sample *j)
{
	memset(j, 0, sizeof(*j));
	if (!w->has_job || isnan(w->job[JC_CPU][i]))
		return false;
	j->user_ms = grid_u64(w->job[JC_CPU][i] - o->cpu);
	if (!isnan(w->job[JC_SYS][i]) && !isnan(o->sys)) {
		uint64_t sys_ms = grid_u64(w->job[JC_SYS][i] - o->sys);

		j->system_ms = sys_ms < j->user_ms ? sys_ms : j->user_ms;
		j->user_ms -= j->system_ms;
	}
	if (!isnan(w->job[JC_RSS][i])) {
		j->rss_bytes = grid_u64(w->job[JC_RSS][i]);
		j->nprocs = 1;
	}
	if (!isnan(w->job[JC_PROCS][i]))
		j->nprocs = (uint32_t)fmin(grid_u64(w->job[JC_PROCS][i]), 1e9);
	if (!isnan(w->job[JC_SWAP][i])) {
		j->valid |= JS_SWAP;
		j->swap_bytes = grid_u64(w->job[JC_SWAP][i]);
	}
	if (!isnan(w->job[JC_READ][i]) && !isnan(w->job[JC_WRITE][i])) {
		j->valid |= JS_IO;
		j->read_bytes = grid_u64(w->job[JC_READ][i] - (isnan(o->read) ? 0 : o->read));
		j->write_bytes = grid_u64(w->job[JC_WRITE][i] - (isnan(o->write) ? 0 : o->write));
	}
	if (!isnan(w->job[JC_CG_MEM][i])) {
		j->valid |= JS_CG_MEM;
		j->cg_mem_bytes = grid_u64(w->job[JC_CG_MEM][i]);
	}
	return true;
}

static bool gpu_at(const struct prom_gpu *d, size_t i, struct gpu_sample *g)
{
	memset(g, 0, sizeof(*g));
	if (!isnan(d->col[GC_UTIL][i])) {
		g->valid |= GPU_UTIL;
		g->util_pct = (uint32_t)fmin(grid_u64(d->col[GC_UTIL][i]), 100);
	}
	if (!isnan(d->col[GC_MEM][i])) {
		g->valid |= GPU_MEM_USED;
		g->mem_used_bytes = grid_u64(d->col[GC_MEM][i]);
	}
	if (!isnan(d->col[GC_POWER][i])) {
		g->valid |= GPU_POWER;
		g->power_mw = (uint32_t)fmin(grid_u64(d->col[GC_POWER][i]), 4e9);
	}
	if (!isnan(d->col[GC_ENERGY][i])) {
		g->valid |= GPU_ENERGY;
		g->energy_mj = grid_u64(d->col[GC_ENERGY][i]);
	}
	if (!isnan(d->col[GC_TEMP][i])) {
		g->valid |= GPU_TEMP;
		g->temp_c = (int32_t)fmax(-300, fmin(d->col[GC_TEMP][i], 1000));
	}
	return g->valid != 0;
}

/*
 * The node as the job (--node): its CPUs' busy time (every mode but idle
 * and iowait), of which system is the kernel's modes (system, irq,
 * softirq) and steal, user the rest (user, nice); its memory in use.
 */
static int node_as_job(struct gathered *w)
{
	double *cpu = nan_column(w->g.n), *sys = nan_column(w->g.n), *rss = nan_column(w->g.n);

	if (!cpu || !sys || !rss) {
		free(cpu);
		free(sys);
		free(rss);
		return -ENOMEM;
	}
	for (size_t i = 0; i < w->g.n; i++) {
		if (!isnan(w->host[HC_IDLE][i])) {
			double busy = 0, kernel = 0;

			for (int m = HC_USER; m <= HC_STEAL; m++) {
				if (m == HC_IDLE || m == HC_IOWAIT || isnan(w->host[m][i]))
					continue;
				busy += w->host[m][i];
				if (m != HC_USER && m != HC_NICE)
					kernel += w->host[m][i];
			}
			cpu[i] = busy;
			sys[i] = kernel;
		}
		if (!isnan(w->host[HC_MEM_TOTAL][i]) && !isnan(w->host[HC_MEM_AVAIL][i]))
			rss[i] = w->host[HC_MEM_TOTAL][i] - w->host[HC_MEM_AVAIL][i];
	}
	free(w->job[JC_CPU]);
	free(w->job[JC_SYS]);
	free(w->job[JC_RSS]);
	w->job[JC_CPU] = cpu;
	w->job[JC_SYS] = sys;
	w->job[JC_RSS] = rss;
	w->has_job = true;
	snprintf(w->job_src, sizeof(w->job_src), "%s (the whole node)", w->host_src);
	return 0;
}

/* The samples, tick by tick in time order, as a store's replay gives them. */
static int feed(const struct gathered *w, struct job_report *r)
{
	struct host_sample *h = calloc(1, sizeof(*h));
	struct job_origin o = {NAN, NAN, NAN, NAN};
	int ret = 0;

	if (!h)
		return log_err(-ENOMEM, "out of memory");
	if (w->has_job) {
		o.cpu = grid_first_of(w->job[JC_CPU], w->g.n);
		o.sys = grid_first_of(w->job[JC_SYS], w->g.n);
		/* a node's disks count from its boot: the report's, from the window's start */
		if (w->io_since_window) {
			o.read = grid_first_of(w->job[JC_READ], w->g.n);
			o.write = grid_first_of(w->job[JC_WRITE], w->g.n);
		}
	}
	for (size_t i = 0; i < w->g.n && !ret; i++) {
		int64_t ts = w->g.start_ms + (int64_t)i * w->g.step_ms;
		struct job_sample j;

		if (host_at(w, i, h)) {
			summary_add_host(&r->sum, ts, h);
			jobseries_add_host(&r->js, ts, h);
		}
		if (job_at(w, i, &o, &j)) {
			ret = summary_add_job(&r->sum, ts, &j);
			ret = ret ?: jobseries_add_job(&r->js, ts, &j);
		}
		for (int d = 0; d < w->ngpus && !ret; d++) {
			struct gpu_sample g;

			if (!gpu_at(&w->gpus[d], i, &g))
				continue;
			ret = summary_add_gpu(&r->sum, &w->gpus[d].dev, ts, &g);
			ret = ret ?: jobseries_add_gpu(&r->js, &w->gpus[d].dev, ts, &g);
			ret = ret ?: summary_add_gpu_alone(&r->sum, &w->gpus[d].dev);
		}
	}
	free(h);
	return ret ? log_err(ret, "cannot build the report") : 0;
}

/* ---- the whole question --------------------------------------------------------------------- */

/* The job's main series, by key kind, in the order tried. */
struct attempt {
	const char *what;  /* "jobscope", "cgroup_exporter", ... */
	struct strbuf sel; /* its matchers */
	const char *main;  /* its main series' name */
};

/*
 * The main series' scrape interval: its samples' own times (timestamp(),
 * the latest per scrape target) every SCRAPE_PROBE_MS over the last 5
 * minutes of the job's span at most.  0 when it cannot be told.
 *
 * The probe is finer than the finest step a report takes (1 s): at 1 s,
 * samples 1 s apart whose times jitter around the grid's (9.998, 11.001,
 * 11.998, …) are seen every other point, and the gaps read 2 s.  At 250 ms
 * every sample that is the latest for 250 ms or more is seen.
 */
#define SCRAPE_PROBE_MS 250
static int64_t scrape_interval(struct ctx *c, const char *sel, int64_t first, int64_t last)
{
	int64_t from = last - 300 * 1000 > first ? last - 300 * 1000 : first;
	struct prom_matrix m;
	struct strbuf q;
	struct grid g;
	int64_t ms = 0;

	if (grid_of(from, last, SCRAPE_PROBE_MS, &g) || g.n < 3)
		return 0;
	strbuf_init(&q, 0);
	strbuf_addf(&q, "max by (job, instance) (timestamp(%s))", sel);
	if (!strbuf_error(&q) && fetch(c, &g, q.buf, &m) == 0) {
		ms = promsrc_sample_interval_ms(&m);
		prom_matrix_release(&m);
	}
	strbuf_release(&q);
	return ms;
}

static int gather(struct ctx *c, const struct promsrc_key_parts *k, struct gathered *w,
		  double *res_cpus, double *res_mem, double *res_gpus, char *host, size_t hsize)
{
	const struct promsrc_query *q = c->q;
	struct strbuf sel, hsel, gsel, galt;
	struct grid probe_g;
	int64_t first = 0, last = 0;
	const char *found = NULL;
	int64_t step = q->step_ms > 0 ? q->step_ms : PROMSRC_DEFAULT_STEP_MS, pstep;
	int ret = 0, n = 0;

	*res_cpus = *res_mem = *res_gpus = NAN;
	host[0] = '\0';
	strbuf_init(&sel, 0);
	strbuf_init(&hsel, 0);
	strbuf_init(&gsel, 0);
	strbuf_init(&galt, 0);
	/*
	 * The search for the job's span: as coarse as the window needs, but
	 * no coarser than Prometheus' 5-minute lookback, so that no sample
	 * falls between two points unseen.
	 */
	pstep = step < PROMSRC_LOOKBACK_MS ? step : PROMSRC_LOOKBACK_MS;
	if ((q->until_ms - q->since_ms) / pstep >= PROMSRC_MAX_POINTS)
		pstep = ((q->until_ms - q->since_ms) / (PROMSRC_MAX_POINTS - 1) / 1000 + 1) * 1000;
	if (pstep > PROMSRC_LOOKBACK_MS || grid_of(q->since_ms, q->until_ms, pstep, &probe_g)) {
		log_err(0, "a window of %" PRId64 " days is too long to search: at most %d",
			(q->until_ms - q->since_ms) / 86400000,
			(int)(PROMSRC_LOOKBACK_MS / 1000 * (PROMSRC_MAX_POINTS - 1) / 86400));
		ret = -E2BIG;
		goto out_release;
	}
	/* 1. the job's main series: which source, and the span of its samples */
	switch (q->kind) {
	case PROMSRC_JOB: {
		static const char *const tries[] = {"jobscope", "cgroup_exporter", "dcgm-exporter",
						    "nvidia_gpu_prometheus_exporter"};

		for (size_t t = 0; t < 4 && !found; t++) {
			strbuf_reset(&sel);
			if (t == 0) {
				strbuf_addstr(&sel, "job_id=\"");
				promql_str(&sel, k->id);
				strbuf_addch(&sel, '"');
				if (k->scheduler[0]) {
					strbuf_addstr(&sel, ",scheduler=\"");
					promql_str(&sel, k->scheduler);
					strbuf_addch(&sel, '"');
				}
			} else {
				strbuf_addstr(&sel, t == 2 ? "hpc_job=\"" : "jobid=\"");
				promql_str(&sel, k->id);
				strbuf_addstr(&sel, t == 1 ? "\",step=\"\",task=\"\"" : "\"");
			}
			strbuf_reset(&gsel);
			strbuf_addf(&gsel, "%s{%s}",
				    t == 0   ? prom_fam_name(PF_JOB_CPU_SECONDS)
				    : t == 1 ? "cgroup_cpu_total_seconds"
				    : t == 2 ? "DCGM_FI_DEV_GPU_UTIL"
					     : "nvidia_gpu_duty_cycle",
				    sel.buf);
			n = probe(c, &probe_g, gsel.buf, &first, &last, host, hsize);
			if (n < 0) {
				ret = n;
				goto out_release;
			}
			if (n)
				found = tries[t];
		}
		break;
	}
	case PROMSRC_POD:
		for (int t = 0; t < 3 && !found; t++) {
			strbuf_reset(&sel);
			strbuf_addstr(&sel, t == 1
						? "container_label_io_kubernetes_pod_namespace=\""
						: "namespace=\"");
			promql_str(&sel, k->ns);
			strbuf_addstr(&sel, t == 1 ? "\",container_label_io_kubernetes_pod_name=\""
						   : "\",pod=\"");
			promql_str(&sel, k->name);
			strbuf_addstr(
			    &sel, t == 0 ? "\",container!=\"\",container!=\"POD\""
				  : t == 1
				      ? "\",container_label_io_kubernetes_container_name!=\"POD\""
				      : "\"");
			strbuf_reset(&gsel);
			strbuf_addf(&gsel, "%s{%s}",
				    t < 2 ? "container_cpu_usage_seconds_total"
					  : "DCGM_FI_DEV_GPU_UTIL",
				    sel.buf);
			n = probe(c, &probe_g, gsel.buf, &first, &last, host, hsize);
			if (n < 0) {
				ret = n;
				goto out_release;
			}
			if (n)
				found = t < 2 ? "cAdvisor" : "dcgm-exporter";
		}
		break;
	case PROMSRC_NODE:
		for (int t = 0; t < 3 && !found; t++) {
			strbuf_reset(&sel);
			if (t < 2) {
				promql_host_matcher(&sel, k->node);
			} else {
				strbuf_addstr(&sel, "Hostname=\"");
				promql_str(&sel, k->node);
				strbuf_addch(&sel, '"');
			}
			strbuf_reset(&gsel);
			strbuf_addf(&gsel, "%s{%s}",
				    t == 0   ? prom_fam_name(PF_NODE_CPU_SECONDS)
				    : t == 1 ? "node_cpu_seconds_total"
					     : "DCGM_FI_DEV_GPU_UTIL",
				    sel.buf);
			if (t == 2) {
				strbuf_addstr(&gsel, " or DCGM_FI_DEV_GPU_UTIL{hostname=\"");
				promql_str(&gsel, k->node);
				strbuf_addstr(&gsel, "\"}");
			}
			n = probe(c, &probe_g, gsel.buf, &first, &last, host, hsize);
			if (n < 0) {
				ret = n;
				goto out_release;
			}
			if (n)
				found = t == 0	 ? "jobscope"
					: t == 1 ? "node_exporter"
						 : "dcgm-exporter";
		}
		if (found)
			snprintf(host, hsize, "%s", k->node);
		break;
	}
	if (!found) {
		ret = -ENOENT;
		goto out_release;
	}
	/*
	 * The probe's first point is the last sample at or before the grid's
	 * first instant after the job began: up to a step late.  The step
	 * before it, a second apart, finds the first sample itself.
	 */
	if (pstep > 1000 && first > q->since_ms) {
		int64_t from = first - pstep > q->since_ms ? first - pstep : q->since_ms;
		struct grid fine;
		int64_t f2, l2;

		if (grid_of(from, first, 1000, &fine) == 0 &&
		    probe(c, &fine, gsel.buf, &f2, &l2, NULL, 0) > 0 && f2 < first)
			first = f2;
	}
	if (first < q->since_ms)
		first = q->since_ms;
	if (last > q->until_ms)
		last = q->until_ms;
	if (first > last) { /* samples only before the window (its lookback) */
		ret = -ENOENT;
		goto out_release;
	}
	/*
	 * The report's own step: --step, else the data's own scrape interval
	 * (a coarser step drops samples, a finer one repeats them), widened to
	 * fit the job; 15 s when the samples do not tell it.
	 */
	if (q->step_ms <= 0)
		step = promsrc_auto_step_ms(last - first, scrape_interval(c, gsel.buf, first, last),
					    w->step_why, sizeof(w->step_why));
	else
		snprintf(w->step_why, sizeof(w->step_why), "as --step gave it");
	ret = grid_of(first, last, step, &w->g);
	if (ret) {
		log_err(0,
			"the job's %" PRId64 " s at a step of %" PRId64
			" s are more than Prometheus' %d points: a longer --step",
			(last - first) / 1000, step / 1000, PROMSRC_MAX_POINTS);
		goto out_release;
	}
	for (int i = 0; i < JC__COUNT && !ret; i++)
		ret = (w->job[i] = nan_column(w->g.n)) ? 0 : -ENOMEM;
	for (int i = 0; i < HC__COUNT && !ret; i++)
		ret = (w->host[i] = nan_column(w->g.n)) ? 0 : -ENOMEM;
	if (ret) {
		log_err(ret, "out of memory");
		goto out_release;
	}

	/* 2. the job's CPU and memory, its reservation, the node it ran on */
	if (strcmp(found, "cAdvisor") == 0) {
		ret = job_cols(c, w, &job_cadvisor, sel.buf);
		if (!ret)
			ret = cadvisor_limits(c, w, sel.buf, res_cpus, res_mem);
	} else if (q->kind == PROMSRC_JOB && strcmp(found, "jobscope") == 0) {
		struct job_names jn = job_jobscope();

		ret = job_cols(c, w, &jn, sel.buf);
		ret = ret ?: last_value(c, w, jn.res_cpus, sel.buf, res_cpus);
		ret = ret < 0 ? ret : last_value(c, w, jn.res_mem, sel.buf, res_mem);
		ret = ret < 0 ? ret : last_value(c, w, jn.res_gpus, sel.buf, res_gpus);
	} else if (strcmp(found, "cgroup_exporter") == 0) {
		ret = job_cols(c, w, &job_cgroup, sel.buf);
		ret = ret ?: last_value(c, w, job_cgroup.res_cpus, sel.buf, res_cpus);
		ret = ret < 0 ? ret : last_value(c, w, job_cgroup.res_mem, sel.buf, res_mem);
		if (*res_mem >= 0x1p62)
			*res_mem = NAN; /* memory.max "max": no limit */
	}
	if (ret < 0)
		goto out_release;
	ret = 0;

	/* 3. the node: jobscope's node series, else node_exporter's */
	if (q->kind == PROMSRC_NODE) {
		strbuf_addstr(&hsel, sel.buf);
	} else if (host[0]) {
		char h[256];

		promql_instance_host(host, h, sizeof(h));
		snprintf(host, hsize, "%s", h);
		promql_host_matcher(&hsel, h);
	}
	if (hsel.len) {
		ret = host_from(c, w, strcmp(found, "jobscope") == 0, hsel.buf);
		if (ret == 0 && strcmp(found, "jobscope") == 0)
			ret = host_from(c, w, false, hsel.buf);
		if (ret < 0)
			goto out_release;
		ret = 0;
		if (w->has_host)
			snprintf(w->host_sel, sizeof(w->host_sel), "%s", hsel.buf);
	}
	if (q->kind == PROMSRC_NODE && w->has_host) {
		ret = node_as_job(w);
		ret = ret ?: node_disks(c, w, hsel.buf, k->node);
		if (ret)
			goto out_release;
	}

	/* 4. the GPUs: the job's own, by UUID, as its exporter names them */
	strbuf_reset(&gsel);
	strbuf_reset(&galt);
	if (strcmp(found, "jobscope") == 0 && q->kind == PROMSRC_JOB) {
		struct prom_matrix m;
		struct strbuf jq;

		strbuf_init(&jq, 0);
		strbuf_addf(&jq, "%s{%s}", prom_fam_name(PF_JOB_GPU_MEMORY), sel.buf);
		ret = fetch(c, &w->g, jq.buf, &m);
		strbuf_release(&jq);
		if (ret)
			goto out_release;
		if (m.n) {
			strbuf_addstr(&gsel, "{uuid=~\"");
			for (size_t i = 0; i < m.n; i++) {
				const char *u = prom_series_label(&m.series[i], "uuid");

				if (u) {
					promql_regex_literal(&gsel, u);
					strbuf_addch(&gsel, '|');
				}
			}
			gsel.buf[gsel.len - 1] = '"';
			if (w->host_sel[0])
				strbuf_addf(&gsel, ",%s", w->host_sel);
			strbuf_addch(&gsel, '}');
		}
		prom_matrix_release(&m);
		struct gpu_names gn = gpu_jobscope();

		ret = gsel.len ? gpus_from(c, w, &gn, gsel.buf, NULL) : 0;
	} else if (q->kind == PROMSRC_NODE && strcmp(found, "jobscope") == 0) {
		struct gpu_names gn = gpu_jobscope();

		strbuf_addf(&gsel, "{%s}", sel.buf);
		ret = gpus_from(c, w, &gn, gsel.buf, NULL);
	} else if (q->kind == PROMSRC_NODE) {
		strbuf_addstr(&gsel, "{Hostname=\"");
		promql_str(&gsel, k->node);
		strbuf_addstr(&gsel, "\"}");
		strbuf_addstr(&galt, "{hostname=\"");
		promql_str(&galt, k->node);
		strbuf_addstr(&galt, "\"}");
		ret = gpus_from(c, w, &gpu_dcgm, gsel.buf, galt.buf);
	} else if (q->kind == PROMSRC_POD) {
		strbuf_addstr(&gsel, "{namespace=\"");
		promql_str(&gsel, k->ns);
		strbuf_addstr(&gsel, "\",pod=\"");
		promql_str(&gsel, k->name);
		strbuf_addstr(&gsel, "\"}");
		ret = gpus_from(c, w, &gpu_dcgm, gsel.buf, NULL);
	} else {
		strbuf_addstr(&gsel, "{hpc_job=\"");
		promql_str(&gsel, k->id);
		strbuf_addstr(&gsel, "\"}");
		ret = gpus_from(c, w, &gpu_dcgm, gsel.buf, NULL);
		if (ret == 0) {
			strbuf_reset(&gsel);
			strbuf_addstr(&gsel, "{jobid=\"");
			promql_str(&gsel, k->id);
			strbuf_addstr(&gsel, "\"}");
			ret = gpus_from(c, w, &gpu_jobstats, gsel.buf, NULL);
		}
	}
	if (ret < 0)
		goto out_release;
	if (!w->io_from[0])
		snprintf(w->io_from, sizeof(w->io_from), "%s has no storage I/O series", found);
	/* an exporter that maps GPUs to jobs or pods maps the reserved ones */
	if (w->ngpus && isnan(*res_gpus) && q->kind != PROMSRC_NODE)
		*res_gpus = w->ngpus;
	ret = 0;
out_release:
	strbuf_release(&sel);
	strbuf_release(&hsel);
	strbuf_release(&gsel);
	strbuf_release(&galt);
	return ret;
}

/* The job as its record: what Prometheus told of it. */
static void job_of(const struct ctx *c, const struct promsrc_key_parts *k, const struct gathered *w,
		   const char *host, double res_cpus, double res_mem, double res_gpus,
		   struct job_record *job)
{
	const struct promsrc_query *q = c->q;

	memset(job, 0, sizeof(*job));
	snprintf(job->user, sizeof(job->user), "%s", c->user);
	job->id = 0; /* in no store */
	snprintf(job->scheduler, sizeof(job->scheduler), "%s",
		 q->kind == PROMSRC_POD		  ? "k8s"
		 : q->kind == PROMSRC_NODE	  ? "node"
		 : k->scheduler[0]		  ? k->scheduler
		 : strcmp(w->job_src, "jobscope") ? "slurm"
						  : "prometheus");
	snprintf(job->job_id, sizeof(job->job_id), "%s", q->kind == PROMSRC_JOB ? k->id : q->key);
	snprintf(job->hostname, sizeof(job->hostname), "%s", host);
	snprintf(job->name, sizeof(job->name), "%s", q->key);
	snprintf(job->command, sizeof(job->command), "(from Prometheus at %s)", q->url);
	/* cgroup_exporter's and cAdvisor's limits are the cgroup's; jobscope's, the agent's */
	snprintf(job->reservation_source, sizeof(job->reservation_source), "cgroup");
	job->start_ms = w->g.start_ms;
	job->end_ms = w->g.start_ms + (int64_t)(w->g.n - 1) * w->g.step_ms;
	job->interval_ms = w->g.step_ms;
	job->samples = (int64_t)w->g.n;
	if (res_cpus > 0)
		job->reserved_cpus = res_cpus;
	if (res_mem > 0)
		job->reserved_mem_bytes = grid_u64(res_mem);
	if (res_gpus >= 0 && res_gpus < 1e6) {
		job->has_reserved_gpus = true;
		job->reserved_gpus = (int32_t)res_gpus;
	}
	if (!job->reserved_cpus && !job->reserved_mem_bytes && !job->has_reserved_gpus)
		job->reservation_source[0] = '\0';
	if (w->has_host) {
		job->host_cores = w->host_ncpus;
		job->host_mem_bytes = grid_u64(grid_last_of(w->host[HC_MEM_TOTAL], w->g.n));
	}
	if (q->kind == PROMSRC_NODE)
		job->cores_allowed = w->host_ncpus;
}

int promsrc_report(const struct promsrc_query *q, const struct promsrc_transport *t,
		   struct job_record *job, struct job_report *r, char *sources, size_t size)
{
	struct ctx c = {q, t, {0}, ""};
	struct gathered *w = calloc(1, sizeof(*w));
	double res_cpus, res_mem, res_gpus;
	char host[256];
	struct promsrc_key_parts k;
	int ret;

	memset(job, 0, sizeof(*job));
	job_report_init(r, job);
	if (size)
		sources[0] = '\0';
	if (!w)
		return log_err(-ENOMEM, "out of memory");
	ret = promsrc_parse_key(q, &k);
	if (ret)
		goto out_free;
	if (q->until_ms <= q->since_ms || q->since_ms < 0 || q->until_ms > JOB_REPORT_MAX_MS) {
		log_err(0, "--since must come before --until");
		ret = -EINVAL;
		goto out_free;
	}
	strbuf_init(&c.answer, PROMSRC_ANSWER_MAX);
	ret = gather(&c, &k, w, &res_cpus, &res_mem, &res_gpus, host, sizeof(host));
	if (ret == -ENOENT)
		log_err(0,
			"Prometheus at %s has no series of %s '%s' between --since and --until "
			"(tried %s)",
			q->url,
			q->kind == PROMSRC_JOB	 ? "job"
			: q->kind == PROMSRC_POD ? "pod"
						 : "node",
			q->key,
			q->kind == PROMSRC_JOB
			    ? "jobscope's, cgroup_exporter's, dcgm-exporter's (hpc_job) and "
			      "nvidia_gpu_prometheus_exporter's"
			: q->kind == PROMSRC_POD
			    ? "cAdvisor's, kubelet and standalone labels, and dcgm-exporter's"
			    : "jobscope's, node_exporter's and dcgm-exporter's");
	if (ret == -E2BIG) /* said by gather */
		ret = -EINVAL;
	if (ret)
		goto out_release;
	job_of(&c, &k, w, host, res_cpus, res_mem, res_gpus, job);
	job_report_release(r);
	job_report_init(r, job);
	/* the report speaks Prometheus' terms: its options, its series' names */
	r->sum.origin.kind = SAMPLE_SOURCE_PROMETHEUS;
	snprintf(r->sum.origin.step_why, sizeof(r->sum.origin.step_why), "%s", w->step_why);
	snprintf(r->sum.origin.io_from, sizeof(r->sum.origin.io_from), "%s", w->io_from);
	ret = feed(w, r);
	if (!ret)
		job_report_finish(r, job);
	if (size)
		snprintf(sources, size,
			 "job %s; GPUs %s (%d); node %s; %zu points, %" PRId64 " s apart (%s)",
			 w->job_src[0] ? w->job_src : "none", w->gpu_src[0] ? w->gpu_src : "none",
			 w->ngpus, w->host_src[0] ? w->host_src : "none", w->g.n,
			 w->g.step_ms / 1000, w->step_why);
out_release:
	strbuf_release(&c.answer);
out_free:
	gathered_release(w);
	free(w);
	return ret;
}
