/*
 * history.c - reserved vs used over a window, grouped: the aggregation
 * (jobs spread over their run time, sliced by hour for hour/weekday), the
 * store query behind it, and the renderers (text, JSON, CSV, HTML).
 */
#include "history.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/jsonw.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "jobreport.h"
#include "report.h"

#define GIB	(1024.0 * 1024 * 1024)
#define HOUR_MS 3600000LL

static const char *const by_names[] = {"job", "user", "node", "hour", "weekday"};
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
	uint64_t x = 1469598103934665603ull; /* FNV-1a */

	while (*s)
		x = (x ^ (unsigned char)*s++) * 1099511628211ull;
	return x;
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
	if (h->nrows == h->alloc) {
		size_t alloc = h->alloc ? 2 * h->alloc : 32;
		struct history_row *rows = realloc(h->rows, alloc * sizeof(*rows));

		if (!rows)
			return NULL;
		h->rows = rows;
		h->alloc = alloc;
	}
	row_clear(&h->rows[h->nrows], key);
	h->index[k] = (int32_t)h->nrows;
	return &h->rows[h->nrows++];
}

/* A part of a job's run (frac of it, lasting hours) counted into r. */
static void row_add(struct history_row *r, const struct history_job *j, double frac, double hours)
{
	if (r->last_job_row != j->row) {
		r->jobs++;
		r->last_job_row = j->row;
	}
	r->wall_h += hours;
	if (!isnan(j->cores))
		r->core_h_reserved += j->cores * hours;
	if (!isnan(j->cpu_s))
		r->core_h_used += j->cpu_s * frac / 3600.0;
	if (!isnan(j->mem_reserved_bytes)) {
		r->mem_gib_h_reserved += j->mem_reserved_bytes / GIB * hours;
		r->has_mem_reserved = true;
	}
	if (!isnan(j->mem_peak_bytes))
		r->mem_gib_h_peak += j->mem_peak_bytes / GIB * hours;
	if (j->gpus > 0)
		r->gpu_h_reserved += j->gpus * hours;
	if (j->gpus_used > 0 && !isnan(j->gpu_util_pct)) {
		r->gpu_h_used += j->gpus_used * j->gpu_util_pct / 100.0 * hours;
		r->has_gpu_util = true;
	} else if (j->gpus > 0 && j->gpus_used == 0) {
		r->has_gpu_util = true; /* reserved and never touched: a known 0 */
	}
}

/* A job's row: "scheduler:id@node" (a key may repeat across nodes). */
static struct history_row *row_job(struct history *h, const struct history_job *j)
{
	char key[sizeof(j->key) + sizeof(j->node) + 1];

	snprintf(key, sizeof(key), "%s@%s", j->key, j->node);
	return row_get(h, key);
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
			r = row_get(h, h->by == HISTORY_BY_USER ? (j->user[0] ? j->user : "?")
								: j->node);
		if (!r)
			return -ENOMEM;
		row_add(r, j, (double)(to - from) / span, (double)(to - from) / HOUR_MS);
	}
	row_add(&h->total, j, (double)(to - from) / span, (double)(to - from) / HOUR_MS);
	return 0;
}

static double idle_gpu_h(const struct history_row *r)
{
	return fmax(0.0, r->gpu_h_reserved - r->gpu_h_used);
}

static double idle_core_h(const struct history_row *r)
{
	return fmax(0.0, r->core_h_reserved - r->core_h_used);
}

static int by_waste(const void *a, const void *b)
{
	const struct history_row *x = a, *y = b;
	double gx = idle_gpu_h(x), gy = idle_gpu_h(y), cx = idle_core_h(x), cy = idle_core_h(y);

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
	memset(j, 0, sizeof(*j));
	j->row = col_ms(r, 0);
	snprintf(j->key, sizeof(j->key), "%s:%s", r->text[1], r->text[2]);
	snprintf(j->user, sizeof(j->user), "%s", r->text[3]);
	snprintf(j->node, sizeof(j->node), "%s", r->text[4]);
	j->start_ms = col_ms(r, 5);
	j->end_ms = r->null[6] ? col_ms(r, 7) : col_ms(r, 6);
	j->cores = col(r, 8) > 0 ? col(r, 8) : col(r, 9) > 0 ? col(r, 9) : NAN;
	j->cpu_s = col(r, 10) / 1000.0;
	j->mem_reserved_bytes = col(r, 11) > 0 ? col(r, 11) : NAN;
	j->mem_peak_bytes = col(r, 12);
	j->gpus_used = isnan(col(r, 14)) ? 0 : col(r, 14);
	j->gpus = !isnan(col(r, 13)) ? col(r, 13) : j->gpus_used;
	j->gpu_util_pct = col(r, 15);
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
		if (!rec.end_ms && r->sum.last_ms > j->start_ms)
			j->end_ms = r->sum.last_ms;
	}
	job_report_release(r);
	free(r);
	return ret;
}

static int schema_of(const struct store_row *r, void *arg)
{
	*(int *)arg = (int)r->num[0];
	return 0;
}

int history_load(struct history *h, struct store *st, const struct history_filter *f)
{
	/* schema 3 and later: reservations and summaries */
	static const char sql_v3[] =
	    "SELECT j.id, j.scheduler, j.job_id, COALESCE(j.user, ''), n.hostname, j.start_ms,"
	    " j.end_ms, (SELECT MAX(ts_ms) FROM job_samples WHERE job_id = j.id),"
	    " j.reserved_cpus, j.cores_allowed, s.cpu_ms, j.reserved_mem_bytes, s.rss_peak_bytes,"
	    " j.reserved_gpus, s.gpus_used, s.gpu_util_avg_pct, s.job_id IS NOT NULL"
	    " FROM jobs j JOIN nodes n ON n.id = j.node_id"
	    " LEFT JOIN job_summaries s ON s.job_id = j.id"
	    " WHERE j.start_ms < ?2 AND (j.end_ms IS NULL OR j.end_ms > ?1)"
	    " AND (?3 IS NULL OR j.user = ?3) AND (?4 IS NULL OR n.hostname = ?4)"
	    " ORDER BY j.start_ms, j.id";
	static const char sql_v1[] =
	    "SELECT j.id, j.scheduler, j.job_id, COALESCE(j.user, ''), n.hostname, j.start_ms,"
	    " j.end_ms, (SELECT MAX(ts_ms) FROM job_samples WHERE job_id = j.id),"
	    " NULL, j.cores_allowed, NULL, NULL, NULL, NULL, NULL, NULL, 0"
	    " FROM jobs j JOIN nodes n ON n.id = j.node_id"
	    " WHERE j.start_ms < ?2 AND (j.end_ms IS NULL OR j.end_ms > ?1)"
	    " AND (?3 IS NULL OR j.user = ?3) AND (?4 IS NULL OR n.hostname = ?4)"
	    " ORDER BY j.start_ms, j.id";
	char since[24], until[24];
	const char *params[] = {since, until, f->user ? f->user : "", f->node ? f->node : "",
				NULL};
	struct load l = {0};
	int schema = 0, ret;

	snprintf(since, sizeof(since), "%" PRId64, f->since_ms);
	snprintf(until, sizeof(until), "%" PRId64, f->until_ms);
	ret = store_query_rows(st, "SELECT user_version FROM pragma_user_version", NULL, schema_of,
			       &schema);
	if (ret)
		return ret;
	ret = store_query_rows(st, schema >= 3 ? sql_v3 : sql_v1, params, load_row, &l);
	if (!ret)
		ret = l.ret;
	for (size_t i = 0; i < l.nmissing && !ret; i++) {
		ret = fill_from_samples(st, &l.jobs[l.missing[i]]);
		if (ret == -EPROTO)
			ret = 0; /* said so; counted with what its row gives */
		h->jobs_without_summary++;
	}
	for (size_t i = 0; i < l.n && !ret; i++)
		ret = history_add(h, &l.jobs[i]);
	if (ret == -ENOMEM)
		log_err(ret, "cannot build the history of '%s'", store_path(st));
	history_sort(h);
	free(l.jobs);
	free(l.missing);
	return ret;
}

/* --- renderers --- */

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : NAN;
}

static const char *key_label(const struct history *h, const struct history_row *r)
{
	/* weekday keys sort by a leading digit ("0 Mon"): show the name */
	return h->by == HISTORY_BY_WEEKDAY && r->key[0] && r->key[1] == ' ' ? r->key + 2 : r->key;
}

static void text_num(struct strbuf *out, int width, double v, int decimals)
{
	if (isnan(v))
		strbuf_addf(out, " %*s", width, "-");
	else
		strbuf_addf(out, " %*.*f", width, decimals, v);
}

static void text_row(struct strbuf *out, const char *label, int kw, const struct history_row *r)
{
	strbuf_addf(out, "  %-*.*s %6" PRId64, kw, kw, label, r->jobs);
	text_num(out, 8, r->wall_h, 1);
	text_num(out, 9, r->core_h_reserved, 1);
	text_num(out, 9, r->core_h_used, 1);
	text_num(out, 5, pct(r->core_h_used, r->core_h_reserved), 0);
	text_num(out, 9, idle_core_h(r), 1);
	text_num(out, 8, r->gpu_h_reserved, 1);
	text_num(out, 8, r->has_gpu_util ? r->gpu_h_used : NAN, 1);
	text_num(out, 5, r->has_gpu_util ? pct(r->gpu_h_used, r->gpu_h_reserved) : NAN, 0);
	text_num(out, 8, r->gpu_h_reserved > 0 ? idle_gpu_h(r) : NAN, 1);
	text_num(out, 9, r->has_mem_reserved ? r->mem_gib_h_reserved : NAN, 1);
	text_num(out, 9, r->mem_gib_h_peak, 1);
	strbuf_addch(out, '\n');
}

int history_text(const struct history *h, struct strbuf *out)
{
	char since[40], until[40];
	int kw = 8;

	for (size_t i = 0; i < h->nrows; i++) {
		int len = (int)strlen(key_label(h, &h->rows[i]));

		if (len > kw)
			kw = len > 40 ? 40 : len;
	}
	format_rfc3339_ms(h->since_ms, since, sizeof(since));
	format_rfc3339_ms(h->until_ms, until, sizeof(until));
	strbuf_addf(out, "jobscope history by %s, %s .. %s: %" PRId64 " jobs, %zu rows\n",
		    history_by_name(h->by), since, until, h->total.jobs, h->nrows);
	strbuf_addstr(out, "  reserved vs used; idle = reserved - used; GPU-h used weighted by "
			   "utilization");
	if (h->by == HISTORY_BY_HOUR || h->by == HISTORY_BY_WEEKDAY)
		strbuf_addstr(out, "; local time");
	else
		strbuf_addstr(out, "; most idle GPU-hours, then core-hours, first");
	strbuf_addstr(out, "\n\n");
	strbuf_addf(out, "  %-*s %6s %8s %9s %9s %5s %9s %8s %8s %5s %8s %9s %9s\n", kw,
		    history_by_name(h->by), "jobs", "wall h", "core-h", "core-h", "CPU", "idle",
		    "GPU-h", "GPU-h", "GPU", "idle", "mem", "mem peak");
	strbuf_addf(out, "  %-*s %6s %8s %9s %9s %5s %9s %8s %8s %5s %8s %9s %9s\n", kw, "", "",
		    "", "reserved", "used", "eff%", "core-h", "reserved", "used", "eff%", "GPU-h",
		    "GiB-h", "GiB-h");
	for (size_t i = 0; i < h->nrows; i++)
		text_row(out, key_label(h, &h->rows[i]), kw, &h->rows[i]);
	text_row(out, "total", kw, &h->total);
	if (h->jobs_without_summary)
		strbuf_addf(out,
			    "\n  %" PRId64 " job%s without a stored summary (still running) counted "
			    "from their samples\n",
			    h->jobs_without_summary, h->jobs_without_summary == 1 ? "" : "s");
	return strbuf_error(out);
}

static void json_row(struct jsonw *w, const struct history *h, const struct history_row *r)
{
	jsonw_obj_begin(w);
	jsonw_kv_str(w, "key", key_label(h, r));
	jsonw_kv_int(w, "jobs", r->jobs);
	jsonw_kv_double(w, "wall_hours", r->wall_h, 6);
	jsonw_kv_double(w, "core_hours_reserved", r->core_h_reserved, 6);
	jsonw_kv_double(w, "core_hours_used", r->core_h_used, 6);
	jsonw_kv_double(w, "core_hours_idle", idle_core_h(r), 6);
	jsonw_kv_double(w, "cpu_efficiency_pct", pct(r->core_h_used, r->core_h_reserved), 1);
	jsonw_kv_double(w, "gpu_hours_reserved", r->gpu_h_reserved, 6);
	jsonw_kv_double(w, "gpu_hours_used", r->has_gpu_util ? r->gpu_h_used : NAN, 6);
	jsonw_kv_double(w, "gpu_hours_idle", r->gpu_h_reserved > 0 ? idle_gpu_h(r) : NAN, 6);
	jsonw_kv_double(w, "gpu_efficiency_pct", r->has_gpu_util ? pct(r->gpu_h_used, r->gpu_h_reserved) : NAN,
	       1);
	jsonw_kv_double(w, "mem_gib_hours_reserved", r->has_mem_reserved ? r->mem_gib_h_reserved : NAN, 6);
	jsonw_kv_double(w, "mem_gib_hours_peak", r->mem_gib_h_peak, 6);
	jsonw_kv_double(w, "mem_efficiency_pct",
	       r->has_mem_reserved ? pct(r->mem_gib_h_peak, r->mem_gib_h_reserved) : NAN, 1);
	jsonw_obj_end(w);
}

int history_json(const struct history *h, struct strbuf *out)
{
	struct jsonw w;
	char since[40], until[40];

	format_rfc3339_ms(h->since_ms, since, sizeof(since));
	format_rfc3339_ms(h->until_ms, until, sizeof(until));
	jsonw_init(&w, out, true);
	jsonw_obj_begin(&w);
	jsonw_kv_int(&w, "schema", 1);
	jsonw_kv_str(&w, "kind", "history");
	jsonw_kv_str(&w, "by", history_by_name(h->by));
	jsonw_kv_str(&w, "since", since);
	jsonw_kv_str(&w, "until", until);
	jsonw_kv_int(&w, "since_ms", h->since_ms);
	jsonw_kv_int(&w, "until_ms", h->until_ms);
	jsonw_kv_int(&w, "jobs_without_summary", h->jobs_without_summary);
	jsonw_key(&w, "rows");
	jsonw_arr_begin(&w);
	for (size_t i = 0; i < h->nrows; i++)
		json_row(&w, h, &h->rows[i]);
	jsonw_arr_end(&w);
	jsonw_key(&w, "total");
	json_row(&w, h, &h->total);
	jsonw_obj_end(&w);
	if (!jsonw_error(&w))
		strbuf_addch(out, '\n');
	return jsonw_error(&w) ?: strbuf_error(out);
}

static void csv_num(struct strbuf *out, double v)
{
	strbuf_addch(out, ',');
	if (!isnan(v))
		strbuf_addf(out, "%.3f", v);
}

/* A CSV field, quoted when it needs to be (RFC 4180). */
static void csv_field(struct strbuf *out, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		strbuf_addstr(out, s);
		return;
	}
	strbuf_addch(out, '"');
	for (; *s; s++) {
		if (*s == '"')
			strbuf_addch(out, '"');
		strbuf_addch(out, *s);
	}
	strbuf_addch(out, '"');
}

static void csv_row(struct strbuf *out, const struct history *h, const struct history_row *r)
{
	csv_field(out, key_label(h, r));
	strbuf_addf(out, ",%" PRId64, r->jobs);
	csv_num(out, r->wall_h);
	csv_num(out, r->core_h_reserved);
	csv_num(out, r->core_h_used);
	csv_num(out, idle_core_h(r));
	csv_num(out, r->gpu_h_reserved);
	csv_num(out, r->has_gpu_util ? r->gpu_h_used : NAN);
	csv_num(out, r->gpu_h_reserved > 0 ? idle_gpu_h(r) : NAN);
	csv_num(out, r->has_mem_reserved ? r->mem_gib_h_reserved : NAN);
	csv_num(out, r->mem_gib_h_peak);
	strbuf_addch(out, '\n');
}

int history_csv(const struct history *h, struct strbuf *out)
{
	strbuf_addf(out, "%s,jobs,wall_hours,core_hours_reserved,core_hours_used,core_hours_idle,"
			 "gpu_hours_reserved,gpu_hours_used,gpu_hours_idle,mem_gib_hours_reserved,"
			 "mem_gib_hours_peak\n",
		    history_by_name(h->by));
	for (size_t i = 0; i < h->nrows; i++)
		csv_row(out, h, &h->rows[i]);
	csv_row(out, h, &h->total);
	return strbuf_error(out);
}

static void html_num(struct strbuf *out, double v, int decimals)
{
	if (isnan(v))
		strbuf_addstr(out, "<td>&mdash;</td>");
	else
		strbuf_addf(out, "<td>%.*f</td>", decimals, v);
}

static void html_row(struct strbuf *out, const struct history *h, const struct history_row *r)
{
	strbuf_addstr(out, "<tr><th>");
	report_html_text(out, key_label(h, r));
	strbuf_addf(out, "</th><td>%" PRId64 "</td>", r->jobs);
	html_num(out, r->wall_h, 1);
	html_num(out, r->core_h_reserved, 1);
	html_num(out, r->core_h_used, 1);
	html_num(out, pct(r->core_h_used, r->core_h_reserved), 0);
	html_num(out, idle_core_h(r), 1);
	html_num(out, r->gpu_h_reserved, 1);
	html_num(out, r->has_gpu_util ? r->gpu_h_used : NAN, 1);
	html_num(out, r->gpu_h_reserved > 0 ? idle_gpu_h(r) : NAN, 1);
	html_num(out, r->has_mem_reserved ? r->mem_gib_h_reserved : NAN, 1);
	html_num(out, r->mem_gib_h_peak, 1);
	strbuf_addstr(out, "</tr>\n");
}

int history_html(const struct history *h, struct strbuf *out)
{
	char since[40], until[40];

	format_rfc3339_ms(h->since_ms, since, sizeof(since));
	format_rfc3339_ms(h->until_ms, until, sizeof(until));
	strbuf_addstr(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
			   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
			   "<title>jobscope history</title><style>"
			   "body{font-family:system-ui,sans-serif;margin:1rem;color:#222}"
			   ".wrap{overflow-x:auto}table{border-collapse:collapse;font-size:.9rem}"
			   "th,td{padding:.25rem .5rem;border-bottom:1px solid #ddd;text-align:right}"
			   "th:first-child{text-align:left}tr.total{font-weight:bold}"
			   "</style></head><body>\n");
	strbuf_addf(out, "<h1>History by %s</h1>\n<p>%s .. %s: %" PRId64 " jobs. Idle = reserved "
			 "&minus; used; GPU-hours used are weighted by utilization.</p>\n",
		    history_by_name(h->by), since, until, h->total.jobs);
	strbuf_addf(out, "<div class=\"wrap\"><table><thead><tr><th>%s</th><th>jobs</th>"
			 "<th>wall h</th><th>core-h reserved</th><th>core-h used</th>"
			 "<th>CPU eff %%</th><th>idle core-h</th><th>GPU-h reserved</th>"
			 "<th>GPU-h used</th><th>idle GPU-h</th><th>mem GiB-h reserved</th>"
			 "<th>mem peak GiB-h</th></tr></thead><tbody>\n",
		    history_by_name(h->by));
	for (size_t i = 0; i < h->nrows; i++)
		html_row(out, h, &h->rows[i]);
	strbuf_addstr(out, "</tbody><tfoot class=\"total\">");
	html_row(out, h, &h->total);
	strbuf_addstr(out, "</tfoot></table></div></body></html>\n");
	return strbuf_error(out);
}
