/*
 * remote_write.c - remote write from a store (see remote_write.h).
 *
 * A batch (store_export_metrics: host, GPU and job rows by seq, with the
 * jobs and devices they reference) becomes points: a label set, kept as "name\0value\0..."
 * sorted by name in an arena, a timestamp and a value.  Points are sorted
 * by label set and then time, so each series' samples come out in
 * timestamp order, and cut into requests of at most max_series series.
 */
#include "prom/remote_write.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/token.h"
#include "http/curl_dl.h"
#include "http/shipper.h"
#include "prom/families.h"
#include "prom/rw_encode.h"
#include "store/rowset.h"
#include "store/store.h"
#include "store/sync.h"

#define RW_FIRST_ROWS  5000  /* seqs a batch covers when current */
#define RW_MAX_ROWS    50000 /* ... and at most, catching up */
#define RW_BACKOFF_MS  500
#define RW_BACKOFF_MAX 5000 /* Prometheus' own max_backoff */
#define RW_TIMEOUT_S   30
#define RW_ANSWER_MAX  4096
#define RW_BODY_MAX    ((size_t)256 << 20)
#define RW_MAX_LABELS  (8 + RW_RELABEL_MAX)

struct rw_point {
	size_t key_off, key_len;
	int64_t ts_ms;
	double value;
};

struct rw_node_name {
	int64_t id;
	char name[256];
};

struct rw_target {
	struct rw *r;
	struct shipper *sh; /* its loop: cursor, retries, waits, figures */
	char url[1024], what[1100];
	int64_t retry_to; /* the batch whose requests up to done were answered (-1: none) */
	size_t done;
	bool persist_warned;
	/* its own copies: read again from their file after a refusal, on its thread */
	char token[256], basic[512];
	CURL *curl;
	struct curl_slist *headers;
	struct strbuf body, zbody, answer, arena;
	struct store_rowset rows;
	struct rw_point *pts;
	size_t npts, pts_alloc;
	struct rw_series *series;
	struct rw_sample *samples;
	struct rw_label *labels;
	size_t series_alloc, samples_alloc, labels_alloc;
	struct rw_node_name *nodes;
	size_t nnodes;
};

struct rw {
	struct rw_rule rules[RW_RELABEL_MAX];
	size_t nrules;
	size_t max_series;
	char token[256];
	char basic[512];
	char token_file[4096], basic_file[4096]; /* where they were read ("": none) */
	char ca_file[4096];
	char db_path[4096];
	int64_t interval_ms;
	pthread_mutex_t reads; /* every target's: retention holds them all at once */
	int64_t batch_ms;
	struct rw_target t[RW_MAX_TARGETS];
	struct shipper *sh[RW_MAX_TARGETS];
	int ntargets;
};

/* ---- rows to points ---- */

static int col_of(const struct store_table *t, const char *name)
{
	for (int i = 0; i < t->ncols; i++)
		if (strcmp(t->cols[i], name) == 0)
			return i;
	return -1;
}

static const struct store_value *cell(const struct store_table *t, size_t row, int col)
{
	return col < 0 ? NULL : &t->cells[row * (size_t)t->ncols + (size_t)col];
}

/* A number in the cell: false when it is null (missing is no sample, never 0). */
static bool num(const struct store_table *t, size_t row, int col, double *out)
{
	const struct store_value *v = cell(t, row, col);

	if (!v)
		return false;
	if (v->type == STORE_VALUE_INT)
		*out = (double)v->i;
	else if (v->type == STORE_VALUE_REAL)
		*out = v->d;
	else
		return false;
	return true;
}

static bool int_of(const struct store_table *t, size_t row, const char *name, int64_t *out)
{
	const struct store_value *v = cell(t, row, col_of(t, name));

	if (!v || v->type != STORE_VALUE_INT)
		return false;
	*out = v->i;
	return true;
}

static const char *text_of(const struct store_table *t, size_t row, const char *name)
{
	const struct store_value *v = cell(t, row, col_of(t, name));

	return v && v->type == STORE_VALUE_TEXT ? v->s : "";
}

/* The row of a dimension table whose id is id, or -1. */
static long find_id(const struct store_table *t, int64_t id)
{
	int c;

	if (!t || (c = col_of(t, "id")) < 0)
		return -1;
	for (size_t i = 0; i < t->nrows; i++) {
		const struct store_value *v = cell(t, i, c);

		if (v->type == STORE_VALUE_INT && v->i == id)
			return (long)i;
	}
	return -1;
}

/* The hostname of node_id (cached: the agent has one node, a head a few thousand). */
static const char *node_name(struct rw_target *t, struct store *st, int64_t id)
{
	struct rw_node_name *n;

	for (size_t i = 0; i < t->nnodes; i++)
		if (t->nodes[i].id == id)
			return t->nodes[i].name;
	n = realloc(t->nodes, (t->nnodes + 1) * sizeof(*n));
	if (!n)
		return "";
	t->nodes = n;
	n = &t->nodes[t->nnodes];
	n->id = id;
	if (store_node_hostname(st, id, n->name, sizeof(n->name)))
		return ""; /* not cached: asked again next time */
	t->nnodes++;
	return n->name;
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rw_label *)a)->name, ((const struct rw_label *)b)->name);
}

/*
 * One point of metric (after relabelling) with labels lab[0..n): the
 * constant labels added, empty values dropped, sorted by name.
 */
static int add_point(struct rw_target *t, const char *metric, const struct rw_label *lab, size_t n,
		     int64_t ts_ms, double value)
{
	struct rw *r = t->r;
	struct rw_label all[RW_MAX_LABELS];
	size_t na = 0;
	struct rw_point *p;

	metric = rw_relabel_name(r->rules, r->nrules, metric);
	if (!metric || isnan(value))
		return 0;
	all[na++] = (struct rw_label){"__name__", metric};
	for (size_t i = 0; i < n && na < RW_MAX_LABELS; i++)
		all[na++] = lab[i];
	for (size_t k = 0; k < r->nrules; k++) {
		size_t i;

		if (r->rules[k].kind != RW_LABEL)
			continue;
		for (i = 1; i < na; i++)
			if (strcmp(all[i].name, r->rules[k].a) == 0)
				break;
		if (i == na && na == RW_MAX_LABELS)
			continue;
		all[i] = (struct rw_label){r->rules[k].a, r->rules[k].b};
		if (i == na)
			na++;
	}
	qsort(all, na, sizeof(all[0]), label_cmp);
	if (t->npts == t->pts_alloc) {
		size_t want = t->pts_alloc ? t->pts_alloc * 2 : 4096;

		p = realloc(t->pts, want * sizeof(*p));
		if (!p)
			return -ENOMEM;
		t->pts = p;
		t->pts_alloc = want;
	}
	p = &t->pts[t->npts];
	p->key_off = t->arena.len;
	for (size_t i = 0; i < na; i++) {
		if (!all[i].value[0])
			continue;
		strbuf_add(&t->arena, all[i].name, strlen(all[i].name) + 1);
		strbuf_add(&t->arena, all[i].value, strlen(all[i].value) + 1);
	}
	if (strbuf_error(&t->arena))
		return strbuf_error(&t->arena);
	p->key_len = t->arena.len - p->key_off;
	p->ts_ms = ts_ms;
	p->value = value;
	t->npts++;
	return 0;
}

/* host_samples: the node's series (docs/metrics.md "Node"). */
static int host_points(struct rw_target *t, struct store *st, const struct store_table *h)
{
	static const char *const modes[] = {"user",   "nice", "system",	 "idle",
					    "iowait", "irq",  "softirq", "steal"};
	static const enum prom_fam plain[] = {
	    PF_NODE_CPUS,   PF_NODE_MEMORY_TOTAL, PF_NODE_MEMORY_AVAILABLE,
	    PF_NODE_LOAD1,  PF_NODE_DISK_READ,	  PF_NODE_DISK_WRITTEN,
	    PF_NODE_NET_RX, PF_NODE_NET_TX,	  PF_NODE_PSI_MEMORY,
	};
	int cmode[8], cplain[sizeof(plain) / sizeof(plain[0])];
	int cts = col_of(h, "ts_ms"), cst = col_of(h, "swap_total_bytes"),
	    csf = col_of(h, "swap_free_bytes");
	char name[32];
	int ret = 0;

	for (int m = 0; m < 8; m++) {
		snprintf(name, sizeof(name), "cpu_%s_ms", modes[m]);
		cmode[m] = col_of(h, name);
	}
	for (size_t k = 0; k < sizeof(plain) / sizeof(plain[0]); k++)
		cplain[k] = col_of(h, prom_families[plain[k]].column);
	for (size_t i = 0; i < h->nrows && !ret; i++) {
		int64_t node = 0, ts;
		double v, v2;
		struct rw_label lab[2] = {{"node", ""}, {"mode", ""}};

		if (!int_of(h, i, "node_id", &node) || cts < 0)
			continue;
		ts = cell(h, i, cts)->i;
		lab[0].value = node_name(t, st, node);
		for (int m = 0; m < 8 && !ret; m++)
			if (num(h, i, cmode[m], &v)) {
				lab[1].value = modes[m];
				ret = add_point(t, prom_fam_name(PF_NODE_CPU_SECONDS), lab, 2, ts,
						v / 1000.0);
			}
		for (size_t k = 0; k < sizeof(plain) / sizeof(plain[0]) && !ret; k++)
			if (num(h, i, cplain[k], &v))
				ret = add_point(t, prom_fam_name(plain[k]), lab, 1, ts,
						v * prom_families[plain[k]].scale);
		if (!ret && num(h, i, cst, &v) && num(h, i, csf, &v2))
			ret = add_point(t, prom_fam_name(PF_NODE_SWAP_USED), lab, 1, ts, v - v2);
	}
	return ret;
}

/* gpu_samples: the devices' series (docs/metrics.md "GPUs"). */
static int gpu_points(struct rw_target *t, struct store *st, const struct store_table *g,
		      const struct store_table *dev)
{
	static const enum prom_fam fam[] = {
	    PF_GPU_UTIL,	PF_GPU_MEMORY_USED, PF_GPU_POWER,   PF_GPU_ENERGY,
	    PF_GPU_TEMPERATURE, PF_GPU_PCIE_RX,	    PF_GPU_PCIE_TX,
	};
	int cts = col_of(g, "ts_ms");
	int ret = 0;

	for (size_t i = 0; i < g->nrows && !ret; i++) {
		int64_t did = 0, node = 0, idx = 0;
		long d;
		char idxs[24];
		double v;
		struct rw_label lab[3];

		if (!int_of(g, i, "device_id", &did) || (d = find_id(dev, did)) < 0 || cts < 0)
			continue;
		int_of(dev, (size_t)d, "node_id", &node);
		int_of(dev, (size_t)d, "idx", &idx);
		snprintf(idxs, sizeof(idxs), "%lld", (long long)idx);
		lab[0] = (struct rw_label){"node", node_name(t, st, node)};
		lab[1] = (struct rw_label){"gpu", idxs};
		lab[2] = (struct rw_label){"uuid", text_of(dev, (size_t)d, "uuid")};
		for (size_t k = 0; k < sizeof(fam) / sizeof(fam[0]) && !ret; k++)
			if (num(g, i, col_of(g, prom_families[fam[k]].column), &v))
				ret =
				    add_point(t, prom_fam_name(fam[k]), lab, 3, cell(g, i, cts)->i,
					      v * prom_families[fam[k]].scale);
	}
	return ret;
}

/* job_samples: the jobs' series (docs/metrics.md "Jobs"). */
static int job_points(struct rw_target *t, struct store *st, const struct store_table *js,
		      const struct store_table *jobs)
{
	static const enum prom_fam fam[] = {
	    PF_JOB_MEMORY_RSS, PF_JOB_SWAP,	 PF_JOB_READ,
	    PF_JOB_WRITTEN,    PF_JOB_PROCESSES, PF_JOB_CGROUP_MEMORY,
	};
	int cts = col_of(js, "ts_ms"), cu = col_of(js, "user_ms"), cs = col_of(js, "system_ms"),
	    ccg = col_of(js, "cg_cpu_ms");
	int ret = 0;

	for (size_t i = 0; i < js->nrows && !ret; i++) {
		int64_t jid = 0, node = 0;
		long j;
		double u, s, cg, v;
		struct rw_label lab[4];
		int64_t ts;

		if (!int_of(js, i, "job_id", &jid) || (j = find_id(jobs, jid)) < 0 || cts < 0)
			continue;
		ts = cell(js, i, cts)->i;
		int_of(jobs, (size_t)j, "node_id", &node);
		lab[0] = (struct rw_label){"node", node_name(t, st, node)};
		lab[1] = (struct rw_label){"job_id", text_of(jobs, (size_t)j, "job_id")};
		lab[2] = (struct rw_label){"scheduler", text_of(jobs, (size_t)j, "scheduler")};
		lab[3] = (struct rw_label){"user", text_of(jobs, (size_t)j, "user")};
		/* as the agent's /metrics: its processes' CPU, or the cgroup's when larger */
		if (num(js, i, cu, &u) && num(js, i, cs, &s)) {
			v = u + s;
			if (num(js, i, ccg, &cg) && cg > v)
				v = cg;
			ret =
			    add_point(t, prom_fam_name(PF_JOB_CPU_SECONDS), lab, 4, ts, v / 1000.0);
		}
		for (size_t k = 0; k < sizeof(fam) / sizeof(fam[0]) && !ret; k++)
			if (num(js, i, col_of(js, prom_families[fam[k]].column), &v))
				ret = add_point(t, prom_fam_name(fam[k]), lab, 4, ts, v);
	}
	return ret;
}

/*
 * cpu_samples, disk_samples, net_samples, fs_samples: one series per CPU,
 * disk, interface or mount of the node.  Their own names (not the node's
 * totals' with one more label), so that sum() over a family never adds a
 * node's total to its parts.
 */
struct dev_family {
	enum prom_fam id;
	const char *col;	 /* NULL: the family's own column */
	const char *label_value; /* a constant second label (mode), or NULL */
};

static int device_points(struct rw_target *t, struct store *st, const struct store_table *tb,
			 const char *key_col, const char *key_label, const struct dev_family *fam,
			 size_t nfam)
{
	int cts = col_of(tb, "ts_ms"), ckey = col_of(tb, key_col);
	int ret = 0;

	if (cts < 0 || ckey < 0)
		return 0;
	for (size_t i = 0; i < tb->nrows && !ret; i++) {
		const struct store_value *k = cell(tb, i, ckey);
		int64_t node = 0;
		char num_key[24];
		struct rw_label lab[3];
		double v;

		if (!int_of(tb, i, "node_id", &node) || k->type == STORE_VALUE_NULL)
			continue;
		if (k->type == STORE_VALUE_INT)
			snprintf(num_key, sizeof(num_key), "%lld", (long long)k->i);
		lab[0] = (struct rw_label){"node", node_name(t, st, node)};
		lab[1] = (struct rw_label){key_label, k->type == STORE_VALUE_TEXT ? k->s : num_key};
		for (size_t f = 0; f < nfam && !ret; f++) {
			const struct prom_family_def *d = &prom_families[fam[f].id];

			if (!num(tb, i, col_of(tb, fam[f].col ? fam[f].col : d->column), &v))
				continue;
			lab[2] = (struct rw_label){"mode", fam[f].label_value};
			ret = add_point(t, d->name, lab, fam[f].label_value ? 3 : 2,
					cell(tb, i, cts)->i, v * d->scale);
		}
	}
	return ret;
}

static int node_part_points(struct rw_target *t, struct store *st)
{
	static const struct dev_family cpu[] = {
	    {PF_NODE_CPU_CORE_SECONDS, "user_ms", "user"},
	    {PF_NODE_CPU_CORE_SECONDS, "nice_ms", "nice"},
	    {PF_NODE_CPU_CORE_SECONDS, "system_ms", "system"},
	    {PF_NODE_CPU_CORE_SECONDS, "idle_ms", "idle"},
	    {PF_NODE_CPU_CORE_SECONDS, "iowait_ms", "iowait"},
	    {PF_NODE_CPU_CORE_SECONDS, "irq_ms", "irq"},
	    {PF_NODE_CPU_CORE_SECONDS, "softirq_ms", "softirq"},
	    {PF_NODE_CPU_CORE_SECONDS, "steal_ms", "steal"},
	};
	static const struct dev_family disk[] = {
	    {PF_DISK_READS, NULL, NULL},      {PF_DISK_READ_BYTES, NULL, NULL},
	    {PF_DISK_WRITES, NULL, NULL},     {PF_DISK_WRITTEN_BYTES, NULL, NULL},
	    {PF_DISK_IO_SECONDS, NULL, NULL},
	};
	static const struct dev_family net[] = {
	    {PF_NET_RX_BYTES, NULL, NULL},
	    {PF_NET_RX_PACKETS, NULL, NULL},
	    {PF_NET_TX_BYTES, NULL, NULL},
	    {PF_NET_TX_PACKETS, NULL, NULL},
	};
	static const struct dev_family fs[] = {
	    {PF_FS_USED, NULL, NULL},
	    {PF_FS_SIZE, NULL, NULL},
	};
	const struct store_table *tb;
	int ret = 0;

	if ((tb = store_rowset_table(&t->rows, "cpu_samples")))
		ret = device_points(t, st, tb, "cpu", "cpu", cpu, sizeof(cpu) / sizeof(cpu[0]));
	if (!ret && (tb = store_rowset_table(&t->rows, "disk_samples")))
		ret =
		    device_points(t, st, tb, "disk", "disk", disk, sizeof(disk) / sizeof(disk[0]));
	if (!ret && (tb = store_rowset_table(&t->rows, "net_samples")))
		ret = device_points(t, st, tb, "iface", "interface", net,
				    sizeof(net) / sizeof(net[0]));
	if (!ret && (tb = store_rowset_table(&t->rows, "fs_samples")))
		ret =
		    device_points(t, st, tb, "mount", "mountpoint", fs, sizeof(fs) / sizeof(fs[0]));
	return ret;
}

/* One (job, device, tick) of gpu_proc_samples: its processes summed. */
struct job_gpu_row {
	int64_t job, device, ts;
	double mem, sm;
	bool has_mem, has_sm;
};

static int job_gpu_cmp(const void *a, const void *b)
{
	const struct job_gpu_row *p = a, *q = b;

	if (p->job != q->job)
		return p->job < q->job ? -1 : 1;
	if (p->device != q->device)
		return p->device < q->device ? -1 : 1;
	return (p->ts > q->ts) - (p->ts < q->ts);
}

/*
 * gpu_proc_samples: each job's use of each GPU at each tick, its
 * processes' memory and SM utilization summed, as the agent's /metrics
 * jobscope_job_gpu_* series.  Processes of no job have no series.
 */
static int job_gpu_points(struct rw_target *t, struct store *st, const struct store_table *gp,
			  const struct store_table *dev, const struct store_table *jobs)
{
	int cts = col_of(gp, "ts_ms"), cmem = col_of(gp, "mem_bytes"),
	    csm = col_of(gp, "sm_util_pct");
	struct job_gpu_row *rows;
	size_t n = 0;
	int ret = 0;

	if (cts < 0 || !gp->nrows)
		return 0;
	rows = calloc(gp->nrows, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < gp->nrows; i++) {
		struct job_gpu_row *r = &rows[n];

		if (!int_of(gp, i, "job_id", &r->job) || !int_of(gp, i, "device_id", &r->device))
			continue;
		r->ts = cell(gp, i, cts)->i;
		r->has_mem = num(gp, i, cmem, &r->mem);
		r->has_sm = num(gp, i, csm, &r->sm);
		n++;
	}
	if (n > 1)
		qsort(rows, n, sizeof(*rows), job_gpu_cmp);
	for (size_t i = 0; i < n && !ret;) {
		struct job_gpu_row sum = rows[i];
		long d = find_id(dev, sum.device), j = find_id(jobs, sum.job);
		size_t k = i + 1;

		for (; k < n && job_gpu_cmp(&rows[k], &sum) == 0; k++) {
			sum.mem += rows[k].has_mem ? rows[k].mem : 0;
			sum.sm += rows[k].has_sm ? rows[k].sm : 0;
			sum.has_mem |= rows[k].has_mem;
			sum.has_sm |= rows[k].has_sm;
		}
		if (!sum.has_mem)
			sum.mem = 0;
		if (!sum.has_sm)
			sum.sm = 0;
		i = k;
		if (d >= 0 && j >= 0) {
			int64_t node = 0, idx = 0;
			char idxs[24];
			struct rw_label lab[6];

			int_of(jobs, (size_t)j, "node_id", &node);
			int_of(dev, (size_t)d, "idx", &idx);
			snprintf(idxs, sizeof(idxs), "%lld", (long long)idx);
			lab[0] = (struct rw_label){"node", node_name(t, st, node)};
			lab[1] = (struct rw_label){"job_id", text_of(jobs, (size_t)j, "job_id")};
			lab[2] =
			    (struct rw_label){"scheduler", text_of(jobs, (size_t)j, "scheduler")};
			lab[3] = (struct rw_label){"user", text_of(jobs, (size_t)j, "user")};
			lab[4] = (struct rw_label){"gpu", idxs};
			lab[5] = (struct rw_label){"uuid", text_of(dev, (size_t)d, "uuid")};
			if (sum.has_mem)
				ret = add_point(t, prom_fam_name(PF_JOB_GPU_MEMORY), lab, 6, sum.ts,
						sum.mem);
			if (!ret && sum.has_sm)
				ret = add_point(t, prom_fam_name(PF_JOB_GPU_SM_UTIL), lab, 6,
						sum.ts, sum.sm > 100 ? 100 : sum.sm);
		}
	}
	free(rows);
	return ret;
}

static int point_cmp(const void *a, const void *b, void *arg)
{
	const struct rw_point *p = a, *q = b;
	const char *base = arg;
	size_t n = p->key_len < q->key_len ? p->key_len : q->key_len;
	int c = memcmp(base + p->key_off, base + q->key_off, n);

	if (c)
		return c;
	if (p->key_len != q->key_len)
		return p->key_len < q->key_len ? -1 : 1;
	return (p->ts_ms > q->ts_ms) - (p->ts_ms < q->ts_ms);
}

/* The batch's points, sorted: 0 or -ENOMEM. */
static int batch_points(struct rw_target *t, struct store *st)
{
	const struct store_table *h = store_rowset_table(&t->rows, "host_samples");
	const struct store_table *g = store_rowset_table(&t->rows, "gpu_samples");
	const struct store_table *js = store_rowset_table(&t->rows, "job_samples");
	const struct store_table *gp;
	int ret = 0;

	t->npts = 0;
	strbuf_reset(&t->arena);
	if (h)
		ret = host_points(t, st, h);
	if (!ret && g)
		ret = gpu_points(t, st, g, store_rowset_table(&t->rows, "devices"));
	if (!ret && js)
		ret = job_points(t, st, js, store_rowset_table(&t->rows, "jobs"));
	if (!ret)
		ret = node_part_points(t, st);
	if (!ret && (gp = store_rowset_table(&t->rows, "gpu_proc_samples")))
		ret = job_gpu_points(t, st, gp, store_rowset_table(&t->rows, "devices"),
				     store_rowset_table(&t->rows, "jobs"));
	if (!ret && t->npts > 1)
		qsort_r(t->pts, t->npts, sizeof(*t->pts), point_cmp, t->arena.buf);
	return ret;
}

static bool same_key(const struct rw_target *t, const struct rw_point *a, const struct rw_point *b)
{
	return a->key_len == b->key_len &&
	       memcmp(t->arena.buf + a->key_off, t->arena.buf + b->key_off, a->key_len) == 0;
}

/*
 * The request of the series starting at point *from, at most max_series
 * of them, into t->zbody; *from moves past them, *nsamples counts them.
 */
static int encode_request(struct rw_target *t, size_t *from, size_t *nsamples)
{
	size_t i = *from, ns = 0, nl = 0;
	int ret;

	/* first the room: this request's series and their labels */
	for (size_t j = i; j < t->npts && ns < t->r->max_series; ns++) {
		const char *k = t->arena.buf + t->pts[j].key_off;

		for (size_t b = 0; b < t->pts[j].key_len; b++)
			nl += k[b] == '\0';
		do
			j++;
		while (j < t->npts && same_key(t, &t->pts[j - 1], &t->pts[j]));
	}
	nl /= 2; /* a label is two strings */
	if (ns > t->series_alloc) {
		void *p = realloc(t->series, ns * sizeof(*t->series));

		if (!p)
			return -ENOMEM;
		t->series = p;
		t->series_alloc = ns;
	}
	if (nl > t->labels_alloc) {
		void *p = realloc(t->labels, nl * sizeof(*t->labels));

		if (!p)
			return -ENOMEM;
		t->labels = p;
		t->labels_alloc = nl;
	}
	ns = nl = 0;
	while (i < t->npts && ns < t->r->max_series) {
		struct rw_series *s = &t->series[ns++];
		const char *k = t->arena.buf + t->pts[i].key_off, *end = k + t->pts[i].key_len;
		size_t first = i;

		s->labels = &t->labels[nl];
		s->nlabels = 0;
		while (k < end && nl < t->labels_alloc) {
			t->labels[nl].name = k;
			k += strlen(k) + 1;
			t->labels[nl].value = k;
			k += strlen(k) + 1;
			nl++;
			s->nlabels++;
		}
		do {
			t->samples[i] = (struct rw_sample){t->pts[i].value, t->pts[i].ts_ms};
			i++;
		} while (i < t->npts && same_key(t, &t->pts[i - 1], &t->pts[i]));
		s->samples = &t->samples[first];
		s->nsamples = i - first;
	}
	strbuf_reset(&t->body);
	ret = rw_encode_write_request(t->series, ns, &t->body);
	if (!ret)
		ret = rw_snappy_compress(t->body.buf ? t->body.buf : "", t->body.len, &t->zbody);
	*nsamples = i - *from;
	*from = i;
	return ret;
}

/* ---- HTTP ---- */

static size_t on_answer(char *data, size_t size, size_t nmemb, void *arg)
{
	struct strbuf *sb = arg;
	size_t n = size * nmemb;

	/* keep the first RW_ANSWER_MAX bytes for the log; read the rest */
	if (sb->len < RW_ANSWER_MAX)
		strbuf_add(sb, data, n < RW_ANSWER_MAX - sb->len ? n : RW_ANSWER_MAX - sb->len);
	return n;
}

/* Printable for the log: the answer's first line, control characters as '?'. */
static void answer_text(const struct strbuf *a, char *out, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < a->len && n + 1 < size; i++) {
		unsigned char c = (unsigned char)a->buf[i];

		if (c == '\n')
			break;
		out[n++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	out[n] = '\0';
}

/* POSTs t->zbody: 0 (2xx), -EINVAL (refused: skip it) or -EAGAIN (retry). */
static int post(struct rw_target *t, int64_t from_seq, int64_t to_seq, size_t nsamples)
{
	long status = 0;
	CURLcode rc;
	char text[200];

	strbuf_reset(&t->answer);
	curl_fn.easy_setopt(t->curl, CURLOPT_POSTFIELDS, t->zbody.buf);
	curl_fn.easy_setopt(t->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)t->zbody.len);
	rc = curl_fn.easy_perform(t->curl);
	if (rc != CURLE_OK) {
		shipper_error(t->sh, "%s", curl_fn.easy_strerror(rc));
		return -EAGAIN;
	}
	curl_fn.easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 200 && status < 300)
		return 0;
	answer_text(&t->answer, text, sizeof(text));
	if (status == 401 || status == 403) {
		/* wrong credentials: no sample's fault, so none is skipped; asked again rarely */
		if (t->r->token_file[0] || t->r->basic_file[0])
			shipper_refused(
			    t->sh,
			    "HTTP %ld (%.60s): the target refuses the credentials of %s '%.200s'",
			    status, text,
			    t->r->token_file[0] ? "--rw-bearer-token-file" : "--rw-basic-auth-file",
			    t->r->token_file[0] ? t->r->token_file : t->r->basic_file);
		else
			shipper_refused(t->sh,
					"HTTP %ld (%.60s): the target wants credentials: "
					"--rw-bearer-token-file or --rw-basic-auth-file",
					status, text);
		return -EACCES;
	}
	if (status >= 400 && status < 500 && status != 429) {
		/* the receiver refused these samples: sending them again cannot help */
		log_err(0,
			"remote write %s: HTTP %ld for rows %lld..%lld (%zu samples): '%s': those "
			"samples are skipped",
			t->url, status, (long long)from_seq + 1, (long long)to_seq, nsamples, text);
		return -EINVAL;
	}
	shipper_error(t->sh, "HTTP %ld: %.100s", status, text);
	return -EAGAIN;
}

/* ---- the encoder under the shipper (http/shipper.h) ---- */

/* Room for every point's sample (the series and labels grow per request). */
static int reserve(struct rw_target *t)
{
	size_t n = t->pts_alloc ? t->pts_alloc : 1;
	void *p;

	if (n <= t->samples_alloc)
		return 0;
	if (!(p = realloc(t->samples, n * sizeof(*t->samples))))
		return -ENOMEM;
	t->samples = p;
	t->samples_alloc = n;
	return 0;
}

/*
 * Sends the batch's points: 0 when every request was answered (2xx, or
 * refused and skipped), -EAGAIN to retry the batch (stopping).  *done:
 * requests of this batch already answered, skipped when it is read again.
 */
static int send_points(struct rw_target *t, int64_t from_seq, int64_t to_seq, size_t *done)
{
	size_t at = 0, req = 0, nsamples;
	int64_t backoff = 0;
	int ret;

	ret = reserve(t);
	while (!ret && at < t->npts) {
		ret = encode_request(t, &at, &nsamples);
		if (ret)
			break;
		if (req++ < *done)
			continue;
		for (;;) {
			ret = post(t, from_seq, to_seq, nsamples);
			if (ret != -EAGAIN || shipper_stopping(t->sh))
				break;
			backoff = shipper_backoff_next(backoff, RW_BACKOFF_MS, RW_BACKOFF_MAX);
			shipper_pause(t->sh, backoff);
		}
		if (ret == -EAGAIN || ret == -EACCES)
			return ret;
		(*done)++;
		ret = 0;
		if (backoff) {
			shipper_answered(t->sh); /* "sending again" */
			backoff = 0;
		}
	}
	return ret;
}

/* The target's cursor, kept in the store (rw_cursors): a new target gets the whole store. */
static int ship_start(void *enc, struct shipper *sh, struct store *st, int64_t *cursor)
{
	struct rw_target *t = enc;
	int ret = store_rw_cursor_get(st, t->url, cursor);

	if (ret == -ENOENT) {
		*cursor = 0;
		ret = 0;
	}
	if (ret)
		shipper_error(sh, "cannot read its cursor from the store: %s", strerror(-ret));
	return ret;
}

static int ship_read(void *enc, struct store *st, int64_t cursor, int64_t max_rows, int64_t *to_seq,
		     int64_t *nrows)
{
	struct rw_target *t = enc;
	int64_t max_seq;
	int ret = store_export_metrics(st, cursor, max_rows, &t->rows, to_seq, &max_seq, nrows);

	if (ret || *to_seq <= cursor)
		store_rowset_release(&t->rows);
	return ret;
}

static int ship_send(void *enc, struct shipper *sh, struct store *st, int64_t cursor,
		     int64_t to_seq, int64_t *acked)
{
	struct rw_target *t = enc;
	int ret = batch_points(t, st);

	store_rowset_release(&t->rows);
	if (t->retry_to != to_seq)
		t->done = 0; /* another batch than the one that failed */
	if (!ret)
		ret = send_points(t, cursor, to_seq, &t->done);
	if (ret == -EAGAIN || ret == -EACCES) {
		t->retry_to = to_seq;
		return ret; /* stopping or refused: read again from the cursor */
	}
	if (ret) {
		shipper_error(sh, "cannot encode rows %lld..%lld: %s", (long long)cursor + 1,
			      (long long)to_seq, strerror(-ret));
		return ret;
	}
	t->retry_to = -1;
	t->done = 0;
	if (store_rw_cursor_set(st, t->url, to_seq, time_now_ms())) {
		if (!t->persist_warned)
			log_warn(0,
				 "remote write %s: cannot keep the cursor in the store: a "
				 "restart sends again from the last one kept",
				 t->url);
		t->persist_warned = true;
	} else {
		t->persist_warned = false;
	}
	*acked = to_seq;
	return 0;
}

/* The request's headers, with the bearer token when there is one, and basic auth. */
static int set_headers(struct rw_target *t)
{
	char auth[300];

	curl_fn.slist_free_all(t->headers);
	t->headers = curl_fn.slist_append(NULL, "Content-Type: application/x-protobuf");
	t->headers = curl_fn.slist_append(t->headers, "Content-Encoding: snappy");
	t->headers = curl_fn.slist_append(t->headers, "X-Prometheus-Remote-Write-Version: 0.1.0");
	t->headers = curl_fn.slist_append(t->headers, "User-Agent: jobscope/" JOBSCOPE_VERSION);
	if (t->token[0]) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", t->token);
		t->headers = curl_fn.slist_append(t->headers, auth);
	}
	t->headers = curl_fn.slist_append(t->headers, "Expect:");
	if (!t->headers)
		return -ENOMEM;
	curl_fn.easy_setopt(t->curl, CURLOPT_HTTPHEADER, t->headers);
	if (t->basic[0]) {
		curl_fn.easy_setopt(t->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_fn.easy_setopt(t->curl, CURLOPT_USERPWD, t->basic);
	}
	return 0;
}

static bool has_control(const char *s);

/* Refused: whether the token (or user:password) file now holds others (then sent). */
static bool ship_reauth(void *enc)
{
	struct rw_target *t = enc;
	bool bearer = t->r->token_file[0] != '\0';
	const char *path = bearer ? t->r->token_file : t->r->basic_file;
	char *have = bearer ? t->token : t->basic;
	size_t size = bearer ? sizeof(t->token) : sizeof(t->basic);
	char now[sizeof(t->basic)];

	if (!path[0] || token_load(path, now, size) || strcmp(now, have) == 0 || has_control(now) ||
	    (!bearer && !strchr(now, ':')))
		return false;
	snprintf(have, size, "%s", now);
	return set_headers(t) == 0;
}

static const struct shipper_ops rw_ship_ops = {ship_start, ship_read, ship_send, ship_reauth};

/* ---- lifecycle ---- */

static int target_init(struct rw *r, struct rw_target *t, const char *url)
{
	struct shipper_opts so = {
	    .thread_name = "js-rw", /* its CPU apart in top -H, the benchmark */
	    .retry_note = "retrying from the cursor; the store keeps what it lacks",
	    .again = "sending again",
	    .db_path = r->db_path,
	    .store_flags = STORE_CREATE | STORE_CHECKED, /* writable: the cursor is kept there */
	    .interval_ms = r->interval_ms,
	    .first_rows = RW_FIRST_ROWS,
	    .max_rows = RW_MAX_ROWS,
	    .batch_ms = r->batch_ms,
	    .reads = &r->reads,
	};
	int ret;

	t->r = r;
	t->retry_to = -1;
	if (snprintf(t->url, sizeof(t->url), "%s", url) >= (int)sizeof(t->url))
		return log_err(-EINVAL, "--remote-write URL too long");
	snprintf(t->what, sizeof(t->what), "remote write %s", t->url);
	so.what = t->what;
	ret = shipper_new(&so, &rw_ship_ops, t, &t->sh);
	if (ret)
		return ret;
	strbuf_init(&t->body, RW_BODY_MAX);
	strbuf_init(&t->zbody, RW_BODY_MAX);
	strbuf_init(&t->answer, RW_ANSWER_MAX + 1);
	strbuf_init(&t->arena, RW_BODY_MAX);
	store_rowset_init(&t->rows, 0);
	t->curl = curl_dl_handle(t->url, &t->answer, on_answer, RW_TIMEOUT_S, true);
	if (!t->curl)
		return log_err(-ENOMEM, "cannot set up libcurl");
	snprintf(t->token, sizeof(t->token), "%s", r->token);
	snprintf(t->basic, sizeof(t->basic), "%s", r->basic);
	if (set_headers(t))
		return log_err(-ENOMEM, "cannot set up libcurl");
	shipper_watch_curl(t->sh, t->curl);
	if (r->ca_file[0])
		curl_fn.easy_setopt(t->curl, CURLOPT_CAINFO, r->ca_file);
	return 0;
}

static void target_release(struct rw_target *t)
{
	if (t->curl)
		curl_fn.easy_cleanup(t->curl);
	if (t->headers)
		curl_fn.slist_free_all(t->headers);
	strbuf_release(&t->body);
	strbuf_release(&t->zbody);
	strbuf_release(&t->answer);
	strbuf_release(&t->arena);
	store_rowset_release(&t->rows);
	free(t->pts);
	free(t->series);
	free(t->samples);
	free(t->labels);
	free(t->nodes);
}

static void rw_free(struct rw *r)
{
	for (int i = 0; i < r->ntargets; i++)
		target_release(&r->t[i]);
	for (size_t i = 0; i < r->nrules; i++)
		rw_relabel_free(&r->rules[i]);
	pthread_mutex_destroy(&r->reads);
	free(r);
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

int rw_start(const struct rw_opts *o, const char *db_path, int64_t interval_ms, struct rw **out)
{
	struct rw *r;
	const char *why;
	int ret = 0;

	*out = NULL;
	if (o->nurls <= 0)
		return 0;
	if (curl_dl_load() || rw_snappy_load())
		return log_err(-ENOENT, "cannot remote-write to '%s'", o->urls[0]);
	r = calloc(1, sizeof(*r));
	if (!r)
		return log_err(-ENOMEM, "out of memory");
	pthread_mutex_init(&r->reads, NULL);
	r->interval_ms = interval_ms > 0 ? interval_ms : 1000;
	r->max_series = o->max_series > 0 ? (size_t)o->max_series : RW_DEFAULT_MAX_SERIES;
	r->batch_ms = o->batch_ms > 0 ? o->batch_ms : o->batch_ms < 0 ? 0 : RW_DEFAULT_BATCH_MS;
	snprintf(r->db_path, sizeof(r->db_path), "%s", db_path);
	if (o->ca_file)
		snprintf(r->ca_file, sizeof(r->ca_file), "%s", o->ca_file);
	if (o->bearer_token_file) {
		ret = token_read_file(o->bearer_token_file, r->token, sizeof(r->token));
		snprintf(r->token_file, sizeof(r->token_file), "%s", o->bearer_token_file);
	}
	if (o->basic_auth_file)
		snprintf(r->basic_file, sizeof(r->basic_file), "%s", o->basic_auth_file);
	if (!ret && o->basic_auth_file) {
		ret = token_read_file(o->basic_auth_file, r->basic, sizeof(r->basic));
		if (!ret && !strchr(r->basic, ':'))
			ret = log_err(-EINVAL, "--rw-basic-auth-file '%s': expected user:password",
				      o->basic_auth_file);
	}
	if (!ret && o->bearer_token_file && o->basic_auth_file)
		ret = log_err(-EINVAL, "--rw-bearer-token-file and --rw-basic-auth-file: one or "
				       "the other");
	if (!ret && (has_control(r->token) || has_control(r->basic)))
		ret = log_err(-EINVAL, "a remote-write token or password holds a control "
				       "character (a header cannot carry it)");
	for (int i = 0; !ret && i < o->nrelabel && i < RW_RELABEL_MAX; i++) {
		if (rw_relabel_parse(o->relabel[i], &r->rules[r->nrules], &why))
			ret = log_err(-EINVAL, "bad --rw-relabel '%s': %s", o->relabel[i], why);
		else
			r->nrules++;
	}
	curl_fn.global_init(CURL_GLOBAL_DEFAULT);
	for (int i = 0; !ret && i < o->nurls && i < RW_MAX_TARGETS; i++) {
		ret = target_init(r, &r->t[i], o->urls[i]);
		r->sh[i] = r->t[i].sh;
		r->ntargets++;
	}
	for (int i = 0; !ret && i < r->ntargets; i++)
		ret = shipper_run(r->sh[i]);
	if (ret) {
		rw_stop(r);
		return ret;
	}
	for (int i = 0; i < r->ntargets; i++)
		log_info("remote write to %s (%zu series a request at most, %zu relabel rules)",
			 r->t[i].url, r->max_series, r->nrules);
	*out = r;
	return 0;
}

void rw_kick(struct rw *r)
{
	for (int i = 0; r && i < r->ntargets; i++)
		shipper_kick(r->sh[i]);
}

void rw_stop(struct rw *r)
{
	if (!r)
		return;
	shipper_stop_all(r->sh, r->ntargets);
	rw_free(r);
	curl_fn.global_cleanup();
}

bool rw_flush(struct rw *r, int64_t timeout_ms)
{
	return !r || shipper_flush(r->sh, r->ntargets, timeout_ms);
}

int rw_targets(struct rw *r)
{
	return r ? r->ntargets : 0;
}

void rw_get_stats(struct rw *r, int i, struct rw_stats *out)
{
	out->url = r->t[i].url;
	shipper_get_stats(r->sh[i], &out->ship);
}

bool rw_get_bound(struct rw *r, int64_t *acked_seq, int64_t *sent_seq)
{
	if (!r)
		return false;
	*acked_seq = INT64_MAX;
	*sent_seq = -1;
	for (int i = 0; i < r->ntargets; i++) {
		struct shipper_stats ss;

		shipper_get_stats(r->sh[i], &ss);
		if (ss.acked_seq < *acked_seq)
			*acked_seq = ss.acked_seq;
		if (ss.sent_seq > *sent_seq)
			*sent_seq = ss.sent_seq;
	}
	return true;
}

void rw_hold_reads(struct rw *r)
{
	if (r)
		pthread_mutex_lock(&r->reads);
}

void rw_release_reads(struct rw *r)
{
	if (r)
		pthread_mutex_unlock(&r->reads);
}
