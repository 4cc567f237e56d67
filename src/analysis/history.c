/*
 * history.c - reserved vs used over a window, grouped: the aggregation
 * (jobs spread over their run time, sliced by hour for hour/weekday) of
 * the jobs the store's history query gives (store/queries.c).  The tables
 * are rendered by report/history_render.c.
 */
#include "analysis/history.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/array.h"
#include "common/hash.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "analysis/jobreport.h"
#include "store/queries.h"
#include "store/jobdata.h"
#include "store/reader.h"
#include "store/write.h"

#define GIB	(1024.0 * 1024 * 1024)
#define HOUR_MS 3600000LL

static const char *const by_names[] = {"job", "user", "node", "hour", "weekday", "framework"};
/*
 * A job's framework, for --by framework: the first of these its processes
 * loaded (proc_libs), so a PyTorch job that also loads the CUDA runtime,
 * NCCL and Python counts as "pytorch".
 */
static const char *const history_frameworks[] = {
    "pytorch", "tensorflow", "jax",	     "onnxruntime", "openmpi",
    "mpich",   "mpi",	     "cuda-runtime", "python",
};
const char *const history_gpu_act_names[HISTORY_GPU_ACTS] = {
    "sm_active_avg_pct",   "sm_occupancy_avg_pct", "tensor_active_avg_pct", "dram_active_avg_pct",
    "fp64_active_avg_pct", "fp32_active_avg_pct",  "fp16_active_avg_pct",
};
const char *const history_gpu_throttle_names[HISTORY_GPU_THROTTLES] = {
    "throttle_power_s",
    "throttle_thermal_s",
};
static const char *const weekdays[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};

const char *history_by_name(enum history_by by)
{
	return (size_t)by < sizeof(by_names) / sizeof(by_names[0]) ? by_names[by] : "?";
}

int history_by_parse(const char *s, enum history_by *out)
{
	for (size_t i = 0; i < sizeof(by_names) / sizeof(by_names[0]); i++)
		if (strcmp(s, by_names[i]) == 0) {
			*out = (enum history_by)i;
			return 0;
		}
	return -EINVAL;
}

static void row_clear(struct history_row *r, const char *key)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->key, sizeof(r->key), "%s", key);
	for (int k = 0; k < HISTORY_GPU_THROTTLES; k++)
		r->gpu_throttle_s[k] = NAN;
	r->last_job_row = -1;
}

void history_init(struct history *h, enum history_by by, int64_t since_ms, int64_t until_ms)
{
	memset(h, 0, sizeof(*h));
	h->by = by;
	h->since_ms = since_ms;
	h->until_ms = until_ms;
	row_clear(&h->total, "total");
}

void history_release(struct history *h)
{
	free(h->rows);
	free(h->index);
	memset(h, 0, sizeof(*h));
}

static uint64_t hash_key(const char *s)
{
	return fnv1a_str(1469598103934665603ull, s);
}

static int index_rebuild(struct history *h, size_t size)
{
	int32_t *idx = malloc(size * sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < size; i++)
		idx[i] = -1;
	for (size_t r = 0; r < h->nrows; r++) {
		size_t k = hash_key(h->rows[r].key) & (size - 1);

		while (idx[k] >= 0)
			k = (k + 1) & (size - 1);
		idx[k] = (int32_t)r;
	}
	free(h->index);
	h->index = idx;
	h->index_size = size;
	return 0;
}

/* The row of key, made when new; NULL without memory. */
static struct history_row *row_get(struct history *h, const char *key)
{
	size_t k;

	if (!h->index || 2 * (h->nrows + 1) > h->index_size)
		if (index_rebuild(h, h->index_size ? 2 * h->index_size : 64))
			return NULL;
	k = hash_key(key) & (h->index_size - 1);
	while (h->index[k] >= 0) {
		if (strcmp(h->rows[h->index[k]].key, key) == 0)
			return &h->rows[h->index[k]];
		k = (k + 1) & (h->index_size - 1);
	}
	if (ARRAY_GROW(h->rows, h->nrows, h->alloc, 32))
		return NULL;
	row_clear(&h->rows[h->nrows], key);
	h->index[k] = (int32_t)h->nrows;
	return &h->rows[h->nrows++];
}

/* Whether a job used more than it reserved: memory past its request, or 1 % more CPU. */
static bool job_over(const struct history_job *j)
{
	double wall_s = (double)(j->end_ms - j->start_ms) / 1000.0;

	return (!isnan(j->mem_reserved_bytes) && j->mem_peak_bytes > j->mem_reserved_bytes) ||
	       (!isnan(j->cores) && wall_s > 0 && j->cpu_s / wall_s > j->cores * 1.01);
}

/* A part of a job's run (frac of it, lasting hours) counted into r. */
static void row_add(struct history_row *r, const struct history_job *j, double frac, double hours)
{
	if (r->last_job_row != j->row) {
		r->jobs++;
		r->jobs_over += job_over(j);
		r->last_job_row = j->row;
	}
	r->wall_h += hours;
	if (!isnan(j->cpu_s))
		r->core_h_used += j->cpu_s * frac / 3600.0;
	if (!isnan(j->cores)) {
		r->core_h_reserved += j->cores * hours;
		if (!isnan(j->cpu_s))
			r->core_h_used_of_reserved += j->cpu_s * frac / 3600.0;
	}
	if (!isnan(j->mem_peak_bytes))
		r->mem_gib_h_peak += j->mem_peak_bytes / GIB * hours;
	if (!isnan(j->mem_reserved_bytes)) {
		r->mem_gib_h_reserved += j->mem_reserved_bytes / GIB * hours;
		r->has_mem_reserved = true;
		if (!isnan(j->mem_peak_bytes))
			r->mem_gib_h_peak_of_reserved += j->mem_peak_bytes / GIB * hours;
	}
	if (j->gpus > 0)
		r->gpu_h_reserved += j->gpus * hours;
	if (j->gpus_used > 0 && !isnan(j->gpu_util_pct)) {
		r->gpu_h_used += j->gpus_used * j->gpu_util_pct / 100.0 * hours;
		r->has_gpu_util = true;
	} else if (j->gpus > 0 && j->gpus_used == 0) {
		r->has_gpu_util = true; /* reserved and never touched: a known 0 */
	}
	for (int k = 0; k < HISTORY_GPU_ACTS && j->gpus_used > 0; k++) {
		if (isnan(j->gpu_act_pct[k]))
			continue;
		r->gpu_act_pct_h[k] += j->gpus_used * hours * j->gpu_act_pct[k];
		r->gpu_act_h[k] += j->gpus_used * hours;
	}
	for (int k = 0; k < HISTORY_GPU_THROTTLES; k++) {
		if (isnan(j->gpu_throttle_s[k]))
			continue;
		r->gpu_throttle_s[k] = (isnan(r->gpu_throttle_s[k]) ? 0 : r->gpu_throttle_s[k]) +
				       j->gpu_throttle_s[k] * frac;
	}
}

/* A job's row: "scheduler:id@node" (a key may repeat across nodes). */
static struct history_row *row_job(struct history *h, const struct history_job *j)
{
	char key[sizeof(j->key) + sizeof(j->node) + 1];

	snprintf(key, sizeof(key), "%s@%s", j->key, j->node);
	return row_get(h, key);
}

/* The row of a job grouped by user, node or framework. */
static const char *group_key(const struct history *h, const struct history_job *j)
{
	if (h->by == HISTORY_BY_USER)
		return j->user[0] ? j->user : "?";
	if (h->by == HISTORY_BY_FRAMEWORK)
		return j->framework[0] ? j->framework : "none";
	return j->node;
}

static int calendar_key(enum history_by by, int64_t ms, char *key, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (!localtime_r(&t, &tm))
		return -EINVAL;
	if (by == HISTORY_BY_HOUR)
		snprintf(key, size, "%02d", tm.tm_hour);
	else
		snprintf(key, size, "%d %s", (tm.tm_wday + 6) % 7, weekdays[(tm.tm_wday + 6) % 7]);
	return 0;
}

int history_add(struct history *h, const struct history_job *j)
{
	int64_t from = j->start_ms > h->since_ms ? j->start_ms : h->since_ms;
	int64_t to = j->end_ms < h->until_ms ? j->end_ms : h->until_ms;
	double span = (double)(j->end_ms - j->start_ms);
	struct history_row *r;
	char key[256];

	if (to <= from || span <= 0)
		return 0;
	if (h->by == HISTORY_BY_HOUR || h->by == HISTORY_BY_WEEKDAY) {
		/* hour slice by hour slice (local hours may be shifted by the zone) */
		for (int64_t t = from; t < to;) {
			int64_t next = (t / HOUR_MS + 1) * HOUR_MS;

			if (next > to)
				next = to;
			if (calendar_key(h->by, t, key, sizeof(key)))
				return -EINVAL;
			r = row_get(h, key);
			if (!r)
				return -ENOMEM;
			row_add(r, j, (double)(next - t) / span, (double)(next - t) / HOUR_MS);
			t = next;
		}
	} else {
		if (h->by == HISTORY_BY_JOB)
			r = row_job(h, j);
		else
			r = row_get(h, group_key(h, j));
		if (!r)
			return -ENOMEM;
		row_add(r, j, (double)(to - from) / span, (double)(to - from) / HOUR_MS);
	}
	row_add(&h->total, j, (double)(to - from) / span, (double)(to - from) / HOUR_MS);
	return 0;
}

static double eff_pct(double used, double reserved)
{
	return reserved > 0 ? 100.0 * used / reserved : NAN;
}

double history_cpu_eff_pct(const struct history_row *r)
{
	return eff_pct(r->core_h_used_of_reserved, r->core_h_reserved);
}

double history_mem_eff_pct(const struct history_row *r)
{
	return r->has_mem_reserved ? eff_pct(r->mem_gib_h_peak_of_reserved, r->mem_gib_h_reserved)
				   : NAN;
}

double history_gpu_eff_pct(const struct history_row *r)
{
	return r->has_gpu_util ? eff_pct(r->gpu_h_used, r->gpu_h_reserved) : NAN;
}

double history_gpu_act_pct(const struct history_row *r, int k)
{
	if (k < 0 || k >= HISTORY_GPU_ACTS || r->gpu_act_h[k] <= 0)
		return NAN;
	return r->gpu_act_pct_h[k] / r->gpu_act_h[k];
}

double history_idle_gpu_h(const struct history_row *r)
{
	return fmax(0.0, r->gpu_h_reserved - r->gpu_h_used);
}

double history_idle_core_h(const struct history_row *r)
{
	return fmax(0.0, r->core_h_reserved - r->core_h_used_of_reserved);
}

static int by_waste(const void *a, const void *b)
{
	const struct history_row *x = a, *y = b;
	double gx = history_idle_gpu_h(x), gy = history_idle_gpu_h(y), cx = history_idle_core_h(x),
	       cy = history_idle_core_h(y);

	if (gx != gy)
		return gx < gy ? 1 : -1;
	if (cx != cy)
		return cx < cy ? 1 : -1;
	return strcmp(x->key, y->key);
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct history_row *)a)->key, ((const struct history_row *)b)->key);
}

void history_sort(struct history *h)
{
	if (!h->nrows)
		return;
	qsort(h->rows, h->nrows, sizeof(*h->rows),
	      h->by == HISTORY_BY_HOUR || h->by == HISTORY_BY_WEEKDAY ? by_key : by_waste);
	/* the index points at the old order */
	free(h->index);
	h->index = NULL;
	h->index_size = 0;
}

/* --- loading from a store --- */

struct load {
	const struct progress_hook *progress;
	struct history_job *jobs;
	size_t n, alloc;
	int64_t *missing; /* rows without a summary */
	size_t nmissing, missing_alloc;
	int ret;
};

static double col(const struct store_row *r, int i)
{
	return r->null[i] ? NAN : r->num[i];
}

/* A time column as ms: clamped (a hostile store may hold anything), NAN as 0. */
static int64_t col_ms(const struct store_row *r, int i)
{
	double v = col(r, i);

	if (isnan(v))
		return 0;
	return v > 4e18 ? (int64_t)4e18 : v < -4e18 ? (int64_t)-4e18 : (int64_t)v;
}

static int load_row(const struct store_row *r, void *arg)
{
	struct load *l = arg;
	struct history_job *j;

	if (l->n == l->alloc) {
		size_t alloc = l->alloc ? 2 * l->alloc : 256;
		struct history_job *p = realloc(l->jobs, alloc * sizeof(*p));

		if (!p)
			return l->ret = -ENOMEM;
		l->jobs = p;
		l->alloc = alloc;
	}
	j = &l->jobs[l->n++];
	progress_step(l->progress, (int64_t)l->n, -1);
	memset(j, 0, sizeof(*j));
	j->row = col_ms(r, 0);
	snprintf(j->key, sizeof(j->key), "%s:%s", r->text[1], r->text[2]);
	snprintf(j->user, sizeof(j->user), "%s", r->text[3]);
	snprintf(j->node, sizeof(j->node), "%s", r->text[4]);
	j->start_ms = col_ms(r, 5);
	j->end_ms = r->null[6] ? col_ms(r, 7) : col_ms(r, 6);
	/* what its scheduler reserved: the cores a login session or a daemon could
	 * use (col 9, cores_allowed: the whole node) are not a reservation */
	j->cores = col(r, 8) > 0 ? col(r, 8) : NAN;
	j->cpu_s = col(r, 10) / 1000.0;
	j->mem_reserved_bytes = col(r, 11) > 0 ? col(r, 11) : NAN;
	j->mem_peak_bytes = col(r, 12);
	j->gpus_used = isnan(col(r, 14)) ? 0 : col(r, 14);
	j->gpus = !isnan(col(r, 13)) ? col(r, 13) : j->gpus_used;
	j->gpu_util_pct = col(r, 15);
	for (int k = 0; k < HISTORY_GPU_ACTS; k++)
		j->gpu_act_pct[k] = col(r, STORE_HISTORY_COL_GPM + k);
	for (int k = 0; k < HISTORY_GPU_THROTTLES; k++)
		j->gpu_throttle_s[k] = col(r, STORE_HISTORY_COL_GPM + HISTORY_GPU_ACTS + k);
	if (r->null[16] || r->num[16] == 0) {
		/* no summary: counted from its samples below */
		if (l->nmissing == l->missing_alloc) {
			size_t alloc = l->missing_alloc ? 2 * l->missing_alloc : 16;
			int64_t *p = realloc(l->missing, alloc * sizeof(*p));

			if (!p)
				return l->ret = -ENOMEM;
			l->missing = p;
			l->missing_alloc = alloc;
		}
		l->missing[l->nmissing++] = (int64_t)(l->n - 1);
	}
	return 0;
}

/* What the SMs did, as summary_to_record has it (NAN: unknown). */
static void history_job_gpm(struct history_job *j, const struct job_summary_record *sr)
{
	const double act[HISTORY_GPU_ACTS] = {
	    sr->sm_active_avg_pct,   sr->sm_occupancy_avg_pct, sr->tensor_active_avg_pct,
	    sr->dram_active_avg_pct, sr->fp64_active_avg_pct,  sr->fp32_active_avg_pct,
	    sr->fp16_active_avg_pct,
	};
	const double thr[HISTORY_GPU_THROTTLES] = {sr->throttle_power_s, sr->throttle_thermal_s};

	for (int k = 0; k < HISTORY_GPU_ACTS; k++)
		j->gpu_act_pct[k] = sr->has_gpu_prof ? act[k] : NAN;
	for (int k = 0; k < HISTORY_GPU_THROTTLES; k++)
		j->gpu_throttle_s[k] = sr->has_gpu_prof ? thr[k] : NAN;
}

/* A job without a summary (still running, or an older store): its figures from its samples. */
static int fill_from_samples(struct store *st, struct history_job *j)
{
	struct job_record rec;
	struct job_report *r;
	struct job_summary_record sr;
	int ret;

	ret = store_get_job(st, j->row, &rec);
	if (ret)
		return ret;
	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	/* through the report's loader: it leaves out what a corrupt store makes up */
	ret = job_report_load(r, st, &rec);
	if (!ret) {
		summary_to_record(&r->sum, &sr);
		j->cpu_s = (double)sr.cpu_ms / 1000.0;
		j->mem_peak_bytes = (double)sr.rss_peak_bytes;
		j->gpus_used = sr.gpus_used;
		if (j->gpus <= 0)
			j->gpus = sr.gpus_used;
		j->gpu_util_pct = sr.gpu_util_avg_pct;
		history_job_gpm(j, &sr);
		if (!rec.end_ms && r->sum.last_ms > j->start_ms)
			j->end_ms = r->sum.last_ms;
	}
	job_report_release(r);
	free(r);
	return ret;
}

static int fill_framework(struct store *st, struct history_job *j)
{
	struct store_proc_lib *libs;
	size_t n;
	int ret = store_get_job_libs(st, j->row, &libs, &n);

	if (ret)
		return ret;
	snprintf(j->framework, sizeof(j->framework), "none");
	for (size_t k = 0; k < sizeof(history_frameworks) / sizeof(history_frameworks[0]); k++) {
		bool found = false;

		for (size_t i = 0; i < n && !found; i++)
			found = strcmp(libs[i].name, history_frameworks[k]) == 0;
		if (found) {
			snprintf(j->framework, sizeof(j->framework), "%s", history_frameworks[k]);
			break;
		}
	}
	free(libs);
	return 0;
}

int history_load(struct history *h, struct store *st, const struct history_filter *f)
{
	struct load l = {0};
	int ret;

	l.progress = f->progress;
	ret = store_history_rows(st, f->since_ms, f->until_ms, f->user, f->node, load_row, &l);
	if (!ret)
		ret = l.ret;
	/* the long part on a big store: jobs whose summary must come from their samples */
	for (size_t i = 0; i < l.nmissing && !ret; i++) {
		progress_step(f->progress, (int64_t)i, (double)i / (double)l.nmissing);
		ret = fill_from_samples(st, &l.jobs[l.missing[i]]);
		if (ret == -EPROTO)
			ret = 0; /* said so; counted with what its row gives */
		h->jobs_without_summary++;
	}
	for (size_t i = 0; i < l.n && !ret && h->by == HISTORY_BY_FRAMEWORK; i++)
		ret = fill_framework(st, &l.jobs[i]);
	for (size_t i = 0; i < l.n && !ret; i++)
		ret = history_add(h, &l.jobs[i]);
	if (ret == -ENOMEM)
		log_err(ret, "cannot build the history of '%s'", store_path(st));
	progress_finish(f->progress);
	history_sort(h);
	free(l.jobs);
	free(l.missing);
	return ret;
}
