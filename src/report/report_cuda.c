/*
 * report_cuda.c - a job's CUDA tables (analysis/cudatables.h) as text in
 * the layout of Nsight Systems' `nsys nvprof`, as the JSON report's "cuda"
 * member, and as a section of the HTML page.
 *
 *   report_cuda_text    notes, the job's tables, then each process's
 *   report_cuda_json    the "cuda" value (null when nothing is stored)
 *   report_cuda_html    <section id="cuda">
 *
 * Text columns are right-aligned and as wide as their widest cell, the
 * name is last and left-aligned; durations in ns and sizes in MB (10^6
 * bytes) with thousands separators; a value that is not known prints "-".
 */
#include "report/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/cudatables.h"
#include "common/jsonw.h"

#define CUDA_PROCS_SHOWN 8  /* processes whose tables text and HTML print */
#define NAME_DASHES_MAX	 60 /* the dashes under "Name": a kernel's name may be 4 KiB */
#define CELL_MAX	 48 /* a number with separators: 1.8e19 is 26 characters */
#define COLS_MAX	 10

/* "1,234,567.8": v with that many decimals and thousands separators; "-" for NAN. */
static const char *fmt_group(char *buf, size_t size, double v, int decimals)
{
	char raw[CELL_MAX];
	const char *dot, *digits;
	size_t n, intlen, o = 0;

	if (isnan(v) || size < 2) {
		snprintf(buf, size, "-");
		return buf;
	}
	if (!isfinite(v) || fabs(v) >= 1e21) {
		snprintf(buf, size, "%.3g", v);
		return buf;
	}
	snprintf(raw, sizeof(raw), "%.*f", decimals, v);
	digits = raw[0] == '-' ? raw + 1 : raw;
	dot = strchr(digits, '.');
	intlen = dot ? (size_t)(dot - digits) : strlen(digits);
	if (digits != raw)
		buf[o++] = '-';
	for (size_t i = 0; i < intlen && o + 2 < size; i++) {
		if (i && (intlen - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	n = dot ? strlen(dot) : 0;
	if (o + n >= size)
		n = size - o - 1;
	memcpy(buf + o, dot ? dot : "", n);
	buf[o + n] = '\0';
	return buf;
}

static const char *fmt_u64(char *buf, size_t size, uint64_t v)
{
	char raw[32];
	size_t len, o = 0;

	snprintf(raw, sizeof(raw), "%llu", (unsigned long long)v);
	len = strlen(raw);
	for (size_t i = 0; i < len && o + 2 < size; i++) {
		if (i && (len - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = raw[i];
	}
	buf[o] = '\0';
	return buf;
}

/* Characters a name takes on a terminal: its code points (UTF-8 lead bytes). */
static size_t name_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

/* One text table: headers, cells of numbers, and the names last. */
struct text_table {
	const char *head[COLS_MAX];
	const char *name_head;
	int ncols;
	size_t nrows;
	char (*cells)[COLS_MAX][CELL_MAX];
	const char **names;
};

static void table_print(const struct text_table *tt, struct strbuf *out)
{
	size_t width[COLS_MAX], name_w = strlen(tt->name_head);

	for (int c = 0; c < tt->ncols; c++) {
		width[c] = strlen(tt->head[c]);
		for (size_t r = 0; r < tt->nrows; r++)
			if (strlen(tt->cells[r][c]) > width[c])
				width[c] = strlen(tt->cells[r][c]);
	}
	for (size_t r = 0; r < tt->nrows; r++)
		if (name_width(tt->names[r]) > name_w)
			name_w = name_width(tt->names[r]);
	if (name_w > NAME_DASHES_MAX)
		name_w = NAME_DASHES_MAX;
	for (int c = 0; c < tt->ncols; c++)
		strbuf_addf(out, " %*s ", (int)width[c], tt->head[c]);
	strbuf_addf(out, " %s\n", tt->name_head);
	for (int c = 0; c < tt->ncols; c++) {
		strbuf_addch(out, ' ');
		for (size_t i = 0; i < width[c]; i++)
			strbuf_addch(out, '-');
		strbuf_addch(out, ' ');
	}
	strbuf_addch(out, ' ');
	for (size_t i = 0; i < name_w; i++)
		strbuf_addch(out, '-');
	strbuf_addch(out, '\n');
	for (size_t r = 0; r < tt->nrows; r++) {
		for (int c = 0; c < tt->ncols; c++)
			strbuf_addf(out, " %*s ", (int)width[c], tt->cells[r][c]);
		strbuf_addf(out, " %s\n", tt->names[r]);
	}
}

static int table_alloc(struct text_table *tt, size_t nrows)
{
	tt->nrows = nrows;
	tt->cells = calloc(nrows ? nrows : 1, sizeof(*tt->cells));
	tt->names = calloc(nrows ? nrows : 1, sizeof(*tt->names));
	return tt->cells && tt->names ? 0 : -ENOMEM;
}

static void table_free(struct text_table *tt)
{
	free(tt->cells);
	free(tt->names);
}

#define CELL(tt, r, c) (tt)->cells[r][c], CELL_MAX

enum time_table { TIME_API, TIME_KERNELS, TIME_MEMORY };

/*
 * A table by time in Nsight's columns: API calls, kernels (their share of
 * wall time too, and Instances for calls) or memory operations (Count,
 * Operation).
 */
static int text_time_table(const struct cuda_table *tab, enum time_table what,
			   struct strbuf *out)
{
	static const char *const heads[] = {"Time(%)", "Total Time (ns)", "Num Calls", "Average",
					    "Minimum", "Maximum",	  "StdDev",    "Wall(%)"};
	bool kernels = what == TIME_KERNELS;
	struct text_table tt = {.name_head = what == TIME_MEMORY ? "Operation" : "Name",
				.ncols = kernels ? 8 : 7};

	memcpy(tt.head, heads, sizeof(heads));
	if (kernels)
		tt.head[2] = "Instances";
	else if (what == TIME_MEMORY)
		tt.head[2] = "Count";
	if (table_alloc(&tt, tab->nrows))
		goto out_free;
	for (size_t r = 0; r < tab->nrows; r++) {
		const struct cuda_table_row *row = &tab->rows[r];

		fmt_group(CELL(&tt, r, 0), row->time_pct, 1);
		fmt_u64(CELL(&tt, r, 1), row->s.total_ns);
		fmt_u64(CELL(&tt, r, 2), row->s.count);
		fmt_group(CELL(&tt, r, 3), row->avg_ns, 1);
		fmt_u64(CELL(&tt, r, 4), row->s.min_ns);
		fmt_u64(CELL(&tt, r, 5), row->s.max_ns);
		fmt_group(CELL(&tt, r, 6), row->stddev_ns, 1);
		if (kernels)
			fmt_group(CELL(&tt, r, 7), row->wall_pct, 1);
		tt.names[r] = row->s.name;
	}
	table_print(&tt, out);
	table_free(&tt);
	return 0;
out_free:
	table_free(&tt);
	return -ENOMEM;
}

static int text_mem_by_size(const struct cuda_table *tab, struct strbuf *out)
{
	static const char *const heads[] = {"Total",   "Count",	 "Average", "Minimum",
					    "Maximum", "StdDev", "GB/s"};
	struct text_table tt = {.name_head = "Operation", .ncols = 7};

	memcpy(tt.head, heads, sizeof(heads));
	if (table_alloc(&tt, tab->nrows))
		goto out_free;
	for (size_t r = 0; r < tab->nrows; r++) {
		const struct cuda_table_row *row = &tab->rows[tab->by_size[r]];

		fmt_group(CELL(&tt, r, 0), (double)row->s.bytes / 1e6, 3);
		fmt_u64(CELL(&tt, r, 1), row->s.count);
		fmt_group(CELL(&tt, r, 2), row->avg_bytes / 1e6, 3);
		fmt_group(CELL(&tt, r, 3), (double)row->s.min_bytes / 1e6, 3);
		fmt_group(CELL(&tt, r, 4), (double)row->s.max_bytes / 1e6, 3);
		fmt_group(CELL(&tt, r, 5), row->stddev_bytes / 1e6, 3);
		fmt_group(CELL(&tt, r, 6), row->gb_per_s, 3);
		tt.names[r] = row->s.name;
	}
	table_print(&tt, out);
	table_free(&tt);
	return 0;
out_free:
	table_free(&tt);
	return -ENOMEM;
}

/* The four tables of a set; for a process, only those with rows. */
static int text_set(const struct cuda_table_set *set, bool all, struct strbuf *out)
{
	const struct cuda_table *api = &set->t[CUDA_TABLE_API];
	const struct cuda_table *k = &set->t[CUDA_TABLE_KERNEL];
	const struct cuda_table *mem = &set->t[CUDA_TABLE_MEM];
	int ret = 0;

	if (all || api->nrows) {
		strbuf_addstr(out, "CUDA API Statistics:\n\n");
		ret = api->nrows ? text_time_table(api, TIME_API, out)
				 : (strbuf_addstr(out, " (none)\n"), 0);
		strbuf_addch(out, '\n');
	}
	if (!ret && (all || k->nrows)) {
		strbuf_addstr(out, "CUDA Kernel Statistics:\n\n");
		ret =
		    k->nrows ? text_time_table(k, TIME_KERNELS, out) : (strbuf_addstr(out, " (none)\n"), 0);
		strbuf_addch(out, '\n');
	}
	if (!ret && (all || mem->nrows)) {
		strbuf_addstr(out, "CUDA Memory Operation Statistics (by time):\n\n");
		ret =
		    mem->nrows ? text_time_table(mem, TIME_MEMORY, out) : (strbuf_addstr(out, " (none)\n"), 0);
		strbuf_addch(out, '\n');
		if (!ret && mem->nrows) {
			strbuf_addstr(out, "CUDA Memory Operation Statistics (by size in MB):\n\n");
			ret = text_mem_by_size(mem, out);
			strbuf_addch(out, '\n');
		}
	}
	return ret;
}

static void text_proc_title(const struct cuda_proc *p, struct strbuf *out)
{
	strbuf_addf(out, "Process %d (CUDA %s", (int)p->pid, cuda_proc_state_name(p->state));
	if (p->cupti_version)
		strbuf_addf(out, ", CUPTI API %u", p->cupti_version);
	strbuf_addf(out, ", %u context%s", p->contexts, p->contexts == 1 ? "" : "s");
	strbuf_addf(out, ", %s", p->final ? "at its exit" : "its last snapshot");
	strbuf_addstr(out, "):\n\n");
}

int report_cuda_text(const struct cuda_tables *t, size_t max_procs, struct strbuf *out)
{
	size_t shown;
	int ret;

	if (!t || !t->present)
		return 0;
	if (!max_procs)
		max_procs = CUDA_PROCS_SHOWN;
	if (t->nprocs)
		strbuf_addf(out, "CUDA      %zu process%s with the CUDA hook", t->nprocs,
			    t->nprocs == 1 ? "" : "es");
	else
		strbuf_addstr(out, "CUDA      no process sent tables");
	if (t->nprocs > 1)
		strbuf_addstr(out, ": the job's tables first (every process's rows merged)");
	strbuf_addch(out, '\n');
	for (size_t i = 0; i < t->nnotes; i++)
		strbuf_addf(out, "  note: %s\n", t->notes[i]);
	strbuf_addch(out, '\n');
	ret = text_set(&t->job, true, out);
	if (ret || t->nprocs < 2)
		return ret ?: strbuf_error(out);
	shown = t->nprocs < max_procs ? t->nprocs : max_procs;
	if (shown < t->nprocs)
		strbuf_addf(out, "Each process: the %zu of %zu with the most CUDA time\n\n", shown,
			    t->nprocs);
	else
		strbuf_addf(out, "Each process (%zu):\n\n", t->nprocs);
	for (size_t i = 0; i < shown && !ret; i++) {
		const struct cuda_table_set *set = &t->sets[t->by_time[i]];

		text_proc_title(set->proc, out);
		if (!set->total_ns && !set->t[CUDA_TABLE_API].nrows &&
		    !set->t[CUDA_TABLE_KERNEL].nrows && !set->t[CUDA_TABLE_MEM].nrows) {
			strbuf_addstr(out, " (no rows");
			if (set->proc->state != CUDA_PROC_OK && set->proc->message[0])
				strbuf_addf(out, ": %s", set->proc->message);
			strbuf_addstr(out, ")\n\n");
			continue;
		}
		ret = text_set(set, false, out);
	}
	return ret ?: strbuf_error(out);
}

/* JSON: numbers raw (ns, bytes), NAN as null. */
static void kv_u64(struct jsonw *w, const char *key, uint64_t v)
{
	jsonw_key(w, key);
	jsonw_uint(w, v);
}

static void kv_u64_opt(struct jsonw *w, const char *key, bool valid, uint64_t v)
{
	if (valid)
		kv_u64(w, key, v);
	else
		jsonw_kv_null(w, key);
}

static void json_rows(struct jsonw *w, const char *key, const struct cuda_table *tab)
{
	jsonw_key(w, key);
	jsonw_arr_begin(w);
	for (size_t i = 0; i < tab->nrows; i++) {
		const struct cuda_table_row *r = &tab->rows[i];
		bool mem = r->s.kind == CUDA_STAT_MEMCPY || r->s.kind == CUDA_STAT_MEMSET;

		jsonw_obj_begin(w);
		jsonw_kv_str(w, "name", r->s.name);
		jsonw_kv_str(w, "kind", cuda_stat_kind_name(r->s.kind));
		kv_u64(w, "count", r->s.count);
		kv_u64(w, "total_ns", r->s.total_ns);
		jsonw_kv_double_opt(w, "avg_ns", r->s.count > 0, r->avg_ns, 3);
		kv_u64_opt(w, "min_ns", r->s.count > 0, r->s.min_ns);
		kv_u64_opt(w, "max_ns", r->s.count > 0, r->s.max_ns);
		jsonw_kv_double_opt(w, "stddev_ns", !isnan(r->stddev_ns), r->stddev_ns, 3);
		jsonw_kv_double_opt(w, "time_pct", !isnan(r->time_pct), r->time_pct, 3);
		if (r->s.kind == CUDA_STAT_KERNEL)
			jsonw_kv_double_opt(w, "wall_pct", !isnan(r->wall_pct), r->wall_pct, 4);
		if (mem) {
			kv_u64(w, "bytes", r->s.bytes);
			jsonw_kv_double_opt(w, "avg_bytes", !isnan(r->avg_bytes), r->avg_bytes, 3);
			kv_u64_opt(w, "min_bytes", r->s.count > 0, r->s.min_bytes);
			kv_u64_opt(w, "max_bytes", r->s.count > 0, r->s.max_bytes);
			jsonw_kv_double_opt(w, "stddev_bytes", !isnan(r->stddev_bytes),
					    r->stddev_bytes, 3);
			jsonw_kv_double_opt(w, "gb_per_s", !isnan(r->gb_per_s), r->gb_per_s, 3);
		}
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
}

static void json_set(struct jsonw *w, const struct cuda_table_set *set)
{
	kv_u64(w, "total_ns", set->total_ns);
	json_rows(w, "api", &set->t[CUDA_TABLE_API]);
	json_rows(w, "kernels", &set->t[CUDA_TABLE_KERNEL]);
	json_rows(w, "memory", &set->t[CUDA_TABLE_MEM]);
}

void report_cuda_json(struct jsonw *w, const struct cuda_tables *t)
{
	if (!t || !t->present) {
		jsonw_null(w);
		return;
	}
	jsonw_obj_begin(w);
	jsonw_key(w, "notes");
	jsonw_arr_begin(w);
	for (size_t i = 0; i < t->nnotes; i++)
		jsonw_str(w, t->notes[i]);
	jsonw_arr_end(w);
	jsonw_kv_str_opt(w, "state", t->job_proc ? cuda_proc_state_name(t->job_proc->state) : NULL);
	jsonw_kv_str_opt(w, "message",
			 t->job_proc && t->job_proc->message[0] ? t->job_proc->message : NULL);
	jsonw_kv_double_opt(w, "wall_ns", !isnan(t->wall_ns), t->wall_ns, 0);
	jsonw_key(w, "job");
	jsonw_obj_begin(w);
	json_set(w, &t->job);
	jsonw_obj_end(w);
	jsonw_key(w, "processes");
	jsonw_arr_begin(w);
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct cuda_proc *p = &t->procs[i];

		jsonw_obj_begin(w);
		jsonw_kv_int(w, "pid", p->pid);
		jsonw_kv_str(w, "state", cuda_proc_state_name(p->state));
		jsonw_kv_str_opt(w, "message", p->message[0] ? p->message : NULL);
		jsonw_kv_int_opt(w, "cupti_version", p->cupti_version != 0, p->cupti_version);
		jsonw_kv_int(w, "contexts", p->contexts);
		kv_u64(w, "dropped_records", p->dropped);
		kv_u64(w, "snapshots", p->seq);
		jsonw_kv_bool(w, "final", p->final);
		json_set(w, &t->sets[i]);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
	jsonw_obj_end(w);
}

/* HTML: the same tables; names through report_html_text. */
static void html_num(struct strbuf *out, double v, int decimals)
{
	char buf[CELL_MAX];

	strbuf_addf(out, "<td class=\"n\">%s</td>", fmt_group(buf, sizeof(buf), v, decimals));
}

static void html_u64(struct strbuf *out, uint64_t v)
{
	char buf[CELL_MAX];

	strbuf_addf(out, "<td class=\"n\">%s</td>", fmt_u64(buf, sizeof(buf), v));
}

static void html_head(struct strbuf *out, const char *title, const char *const *heads, int n,
		      const char *name)
{
	strbuf_addf(out, "<h3>%s</h3>\n<div class=\"scroll\"><table>\n<tr>", title);
	for (int i = 0; i < n; i++)
		strbuf_addf(out, "<th class=\"n\">%s</th>", heads[i]);
	strbuf_addf(out, "<th>%s</th></tr>\n", name);
}

static void html_name(struct strbuf *out, const char *name)
{
	strbuf_addstr(out, "<td><code>");
	report_html_text(out, name);
	strbuf_addstr(out, "</code></td></tr>\n");
}

static void html_time_table(const struct cuda_table *tab, enum cuda_table_id id, struct strbuf *out)
{
	static const char *const heads[] = {"Time(%)", "Total Time (ns)", "Num Calls", "Average",
					    "Minimum", "Maximum",	  "StdDev",    "Wall(%)"};
	const char *h[8];
	bool kernels = id == CUDA_TABLE_KERNEL, mem = id == CUDA_TABLE_MEM;

	if (!tab->nrows)
		return;
	memcpy(h, heads, sizeof(h));
	h[2] = kernels ? "Instances" : mem ? "Count" : "Num Calls";
	html_head(out,
		  kernels ? "CUDA Kernel Statistics"
		  : mem	  ? "CUDA Memory Operation Statistics (by time)"
			  : "CUDA API Statistics",
		  h, kernels ? 8 : 7, mem ? "Operation" : "Name");
	for (size_t i = 0; i < tab->nrows; i++) {
		const struct cuda_table_row *r = &tab->rows[i];

		strbuf_addstr(out, "<tr>");
		html_num(out, r->time_pct, 1);
		html_u64(out, r->s.total_ns);
		html_u64(out, r->s.count);
		html_num(out, r->avg_ns, 1);
		html_u64(out, r->s.min_ns);
		html_u64(out, r->s.max_ns);
		html_num(out, r->stddev_ns, 1);
		if (kernels)
			html_num(out, r->wall_pct, 1);
		html_name(out, r->s.name);
	}
	strbuf_addstr(out, "</table></div>\n");
}

static void html_mem_by_size(const struct cuda_table *tab, struct strbuf *out)
{
	static const char *const heads[] = {"Total (MB)",   "Count",	    "Average (MB)",
					    "Minimum (MB)", "Maximum (MB)", "StdDev (MB)",
					    "GB/s"};

	if (!tab->nrows)
		return;
	html_head(out, "CUDA Memory Operation Statistics (by size)", heads, 7, "Operation");
	for (size_t i = 0; i < tab->nrows; i++) {
		const struct cuda_table_row *r = &tab->rows[tab->by_size[i]];

		strbuf_addstr(out, "<tr>");
		html_num(out, (double)r->s.bytes / 1e6, 3);
		html_u64(out, r->s.count);
		html_num(out, r->avg_bytes / 1e6, 3);
		html_num(out, (double)r->s.min_bytes / 1e6, 3);
		html_num(out, (double)r->s.max_bytes / 1e6, 3);
		html_num(out, r->stddev_bytes / 1e6, 3);
		html_num(out, r->gb_per_s, 3);
		html_name(out, r->s.name);
	}
	strbuf_addstr(out, "</table></div>\n");
}

static void html_set(const struct cuda_table_set *set, struct strbuf *out)
{
	html_time_table(&set->t[CUDA_TABLE_API], CUDA_TABLE_API, out);
	html_time_table(&set->t[CUDA_TABLE_KERNEL], CUDA_TABLE_KERNEL, out);
	html_time_table(&set->t[CUDA_TABLE_MEM], CUDA_TABLE_MEM, out);
	html_mem_by_size(&set->t[CUDA_TABLE_MEM], out);
}

void report_cuda_html(const struct cuda_tables *t, struct strbuf *out)
{
	size_t shown;

	if (!t || !t->present)
		return;
	strbuf_addstr(out, "<section id=\"cuda\">\n<h2>CUDA</h2>\n");
	strbuf_addf(out, "<p>%zu process%s with the CUDA hook%s.</p>\n", t->nprocs,
		    t->nprocs == 1 ? "" : "es",
		    t->nprocs > 1 ? "; the job's tables merge every process's rows" : "");
	for (size_t i = 0; i < t->nnotes; i++) {
		strbuf_addstr(out, "<p class=\"bad\">");
		report_html_text(out, t->notes[i]);
		strbuf_addstr(out, "</p>\n");
	}
	html_set(&t->job, out);
	if (t->nprocs > 1) {
		shown = t->nprocs < CUDA_PROCS_SHOWN ? t->nprocs : CUDA_PROCS_SHOWN;
		if (shown < t->nprocs)
			strbuf_addf(out,
				    "<p class=\"muted\">Each process: the %zu of %zu with the most "
				    "CUDA time.</p>\n",
				    shown, t->nprocs);
		for (size_t i = 0; i < shown; i++) {
			const struct cuda_table_set *set = &t->sets[t->by_time[i]];

			strbuf_addf(out, "<details><summary>Process %d (CUDA %s)</summary>\n",
				    (int)set->proc->pid, cuda_proc_state_name(set->proc->state));
			if (set->total_ns || set->t[CUDA_TABLE_API].nrows ||
			    set->t[CUDA_TABLE_KERNEL].nrows || set->t[CUDA_TABLE_MEM].nrows)
				html_set(set, out);
			else
				strbuf_addstr(out, "<p class=\"muted\">No rows.</p>\n");
			strbuf_addstr(out, "</details>\n");
		}
	}
	strbuf_addstr(out, "</section>\n");
}
