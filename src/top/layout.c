/*
 * layout.c - draws a top_model into a grid of cells: the jobs screen, a
 * job's screen (figures, GPUs, app metrics, the process tree) and the
 * help screen.  Columns go, least useful first, when the width cannot
 * hold them; every cell is printable ASCII (other bytes become '?'), so a
 * command line of any bytes cannot garble the terminal.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "top/top.h"

int top_grid_init(struct top_grid *g, int width, int height)
{
	if (width < 1)
		width = 1;
	if (height < 1)
		height = 1;
	g->width = width;
	g->height = height;
	g->cell = malloc((size_t)width * height);
	g->attr = malloc((size_t)width * height);
	if (!g->cell || !g->attr) {
		top_grid_release(g);
		return -ENOMEM;
	}
	return 0;
}

void top_grid_release(struct top_grid *g)
{
	free(g->cell);
	free(g->attr);
	g->cell = NULL;
	g->attr = NULL;
}

void top_grid_print(const struct top_grid *g, FILE *out)
{
	for (int y = 0; y < g->height; y++) {
		const char *row = g->cell + (size_t)y * g->width;
		int n = g->width;

		while (n > 0 && row[n - 1] == ' ')
			n--;
		fprintf(out, "%.*s\n", n, row);
	}
}

/* text at (x, y), at most max cells, clipped to the grid */
static int put(struct top_grid *g, int x, int y, int max, enum top_attr a, const char *s)
{
	int n = 0;

	if (y < 0 || y >= g->height)
		return 0;
	for (; s && s[n] && n < max && x + n < g->width; n++) {
		unsigned char c = (unsigned char)s[n];
		size_t at = (size_t)y * g->width + x + n;

		g->cell[at] = c < 0x20 ? ' ' : c < 0x7f ? (char)c : '?';
		g->attr[at] = a;
	}
	return n;
}

/* right-aligned in w cells */
static void put_right(struct top_grid *g, int x, int y, int w, enum top_attr a, const char *s)
{
	int len = (int)strlen(s);

	if (len > w)
		len = w;
	put(g, x + w - len, y, w, a, s + strlen(s) - len);
}

static void fill_line(struct top_grid *g, int y, enum top_attr a)
{
	if (y < 0 || y >= g->height)
		return;
	memset(g->cell + (size_t)y * g->width, ' ', g->width);
	memset(g->attr + (size_t)y * g->width, a, g->width);
}

void top_fmt_num(char *buf, size_t size, double v, int decimals)
{
	if (isnan(v))
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.*f", decimals, v);
}

void top_fmt_bytes(char *buf, size_t size, double bytes)
{
	static const char units[] = "BKMGTP";
	int u = 0;

	if (isnan(bytes) || bytes < 0) {
		snprintf(buf, size, "-");
		return;
	}
	while (bytes >= 1024 && u < 5) {
		bytes /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%.0fB", bytes);
	else if (bytes < 10)
		snprintf(buf, size, "%.1f%c", bytes, units[u]);
	else
		snprintf(buf, size, "%.0f%c", bytes, units[u]);
}

/* "used/reserved", either "-" */
static void fmt_pair(char *buf, size_t size, const char *used, const char *res)
{
	snprintf(buf, size, "%s/%s", used, res);
}

static void fmt_time(char *buf, size_t size, double ms)
{
	time_t t;
	struct tm tm;

	if (isnan(ms)) {
		snprintf(buf, size, "-");
		return;
	}
	t = (time_t)(ms / 1000);
	localtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
}

/* ---- the jobs screen ---- */

/*
 * A job is shown by its name, else its command (as htop shows a process's
 * command), in the first column; its key comes last, where the width has
 * room for it (the job's screen shows it always).  NODE is there when the
 * jobs are on more than one node (a head's rows of one job).
 */
enum job_col {
	COL_USER,
	COL_NODE,
	COL_CPU,
	COL_MEM,
	COL_GPU,
	COL_EFF,
	COL_BADGES,
	COL_KEY,
	COL__COUNT
};

static const struct {
	const char *title;
	int width, prio; /* higher prio goes first when the width is short */
	bool right;
} job_cols[COL__COUNT] = {
    [COL_USER] = {"USER", 8, 2, false},	       [COL_NODE] = {"NODE", 12, 2, false},
    [COL_CPU] = {"CPU used/res", 12, 1, true}, [COL_MEM] = {"MEM used/res", 13, 1, true},
    [COL_GPU] = {"GPU", 5, 4, true},	       [COL_EFF] = {"EFF%", 5, 3, true},
    [COL_BADGES] = {"VERDICT", 16, 5, false},  [COL_KEY] = {"KEY", 24, 6, false},
};

#define NAME_MIN 12
#define NAME_MAX 34

/*
 * Which columns fit in width and the width of each (w[], the first
 * column's returned).  The key only comes once the name has its widest
 * (a screen wide enough for both); what is left widens the last column.
 */
static int job_columns(int width, bool nodes, bool on[COL__COUNT], int w[COL__COUNT])
{
	int used, name;

	for (int c = 0; c < COL__COUNT; c++) {
		on[c] = c != COL_NODE || nodes;
		w[c] = job_cols[c].width;
	}
	for (;;) {
		int worst = -1;

		used = NAME_MIN;
		for (int c = 0; c < COL__COUNT; c++)
			if (on[c])
				used += job_cols[c].width + 1;
		if (used + (on[COL_KEY] ? NAME_MAX - NAME_MIN : 0) <= width)
			break;
		for (int c = 0; c < COL__COUNT; c++)
			if (on[c] && (worst < 0 || job_cols[c].prio > job_cols[worst].prio))
				worst = c;
		if (worst < 0)
			break;
		on[worst] = false;
	}
	name = NAME_MIN + (width - used);
	if (name > NAME_MAX) {
		if (on[COL_KEY])
			w[COL_KEY] += name - NAME_MAX;
		else if (on[COL_BADGES])
			w[COL_BADGES] += name - NAME_MAX;
		name = NAME_MAX;
	}
	return name;
}

static void job_cells(const struct top_job *j, enum job_col c, char *buf, size_t size)
{
	char a[24], b[24];

	switch (c) {
	case COL_USER:
		snprintf(buf, size, "%s", j->user[0] ? j->user : "-");
		break;
	case COL_NODE:
		snprintf(buf, size, "%s", j->node[0] ? j->node : "-");
		break;
	case COL_KEY:
		snprintf(buf, size, "%s", j->key);
		break;
	case COL_CPU:
		top_fmt_num(a, sizeof(a), j->cpu_cores, 2);
		top_fmt_num(
		    b, sizeof(b), j->reserved_cpus,
		    isnan(j->reserved_cpus) || j->reserved_cpus == floor(j->reserved_cpus) ? 0 : 1);
		fmt_pair(buf, size, a, b);
		break;
	case COL_MEM:
		top_fmt_bytes(a, sizeof(a), j->rss_bytes);
		top_fmt_bytes(b, sizeof(b), j->reserved_mem_bytes);
		fmt_pair(buf, size, a, b);
		break;
	case COL_GPU:
		top_fmt_num(a, sizeof(a), j->gpus_used, 0);
		top_fmt_num(b, sizeof(b), j->reserved_gpus, 0);
		fmt_pair(buf, size, a, b);
		break;
	case COL_EFF:
		top_fmt_num(buf, size, j->cpu_eff_pct, 0);
		break;
	case COL_BADGES:
	default:
		snprintf(buf, size, "%s", j->badges[0] ? j->badges : (j->live ? "" : "ended"));
		break;
	}
}

static enum top_attr badge_attr(const struct top_job *j, const struct top_view *v)
{
	if (!v->color || !j->badges[0])
		return TOP_A_NORMAL;
	if (strstr(j->badges, "NEAR") || strstr(j->badges, "UNUSED") || strstr(j->badges, "IDLE"))
		return TOP_A_BAD;
	return TOP_A_WARN;
}

/* the name, else the command, else the key (a job with neither) */
static const char *job_title(const struct top_job *j)
{
	return j->name[0] ? j->name : j->command[0] ? j->command : j->key;
}

static void draw_jobs(const struct top_model *m, const struct top_view *v, struct top_grid *g)
{
	bool on[COL__COUNT], nodes = false;
	int w[COL__COUNT], nw;
	int rows = g->height - 4, x, y = 2;
	size_t *idx = malloc((m->njobs + 1) * sizeof(*idx));
	size_t n = idx ? top_view_jobs(m, v, idx) : 0, first, sel = v->sel;
	char buf[160];

	for (size_t k = 1; k < m->njobs; k++)
		nodes |= strcmp(m->jobs[k].node, m->jobs[0].node) != 0;
	nw = job_columns(g->width, nodes, on, w);
	snprintf(buf, sizeof(buf), "%zu job%s", n, n == 1 ? "" : "s");
	if (n != m->njobs)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), " of %zu", m->njobs);
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "  sort %s%s",
		 top_sort_name(v->sort), v->ascending ? " (asc)" : "");
	if (v->user[0])
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "  user=%s", v->user);
	if (v->search[0])
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "  /%s", v->search);
	if (v->follow && v->open_key[0])
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "  follow %.60s",
			 v->open_key);
	if (!m->status[0])
		put(g, 0, 1, g->width, TOP_A_NORMAL, buf);

	fill_line(g, y, TOP_A_HEADER);
	put(g, 0, y, nw, TOP_A_HEADER, "NAME/COMMAND");
	x = nw + 1;
	for (int c = 0; c < COL__COUNT; c++) {
		if (!on[c])
			continue;
		if (job_cols[c].right)
			put_right(g, x, y, w[c], TOP_A_HEADER, job_cols[c].title);
		else
			put(g, x, y, w[c], TOP_A_HEADER, job_cols[c].title);
		x += w[c] + 1;
	}
	if (n == 0) {
		put(g, 0, y + 1, g->width, TOP_A_DIM,
		    m->njobs ? "no job matches the filter" : "no jobs");
		goto out_free;
	}
	if (sel >= n)
		sel = n - 1;
	first = rows > 0 && sel >= (size_t)rows ? sel - rows + 1 : 0;
	for (size_t r = first; r < n && (int)(r - first) < rows; r++) {
		const struct top_job *j = &m->jobs[idx[r]];
		enum top_attr base = r == sel ? TOP_A_SELECTED : TOP_A_NORMAL;

		y = 3 + (int)(r - first);
		fill_line(g, y, base);
		put(g, 0, y, nw, base, job_title(j));
		x = nw + 1;
		for (int c = 0; c < COL__COUNT; c++) {
			enum top_attr a = base;

			if (!on[c])
				continue;
			job_cells(j, c, buf, sizeof(buf));
			if (c == COL_BADGES && base == TOP_A_NORMAL)
				a = badge_attr(j, v);
			if (job_cols[c].right)
				put_right(g, x, y, w[c], a, buf);
			else
				put(g, x, y, w[c], a, buf);
			x += w[c] + 1;
		}
	}
out_free:
	free(idx);
}

/* ---- a job's screen ---- */

static void draw_job(const struct top_model *m, const struct top_view *v, struct top_grid *g)
{
	const struct top_job *j = &m->job;
	char a[32], b[32], c[32], buf[512];
	int y = 1, rows, first, sel;
	bool nodes = false;

	if (!m->has_job) {
		snprintf(buf, sizeof(buf), "job %s: not seen%s", v->open_key,
			 m->status[0] ? "" : " (it may have ended)");
		put(g, 0, m->status[0] ? 2 : 1, g->width, TOP_A_WARN, buf);
		return;
	}
	if (!m->status[0]) {
		snprintf(buf, sizeof(buf), "%.*s%s%s  user %s  node %s  %s%s", 100, j->name,
			 j->name[0] ? "  " : "", j->key, j->user[0] ? j->user : "-",
			 j->node[0] ? j->node : "-", j->live ? "running" : "ended",
			 v->follow ? "  [follow]" : "");
		put(g, 0, y, g->width, TOP_A_NORMAL, buf);
	}
	y++;
	top_fmt_num(a, sizeof(a), j->cpu_cores, 2);
	top_fmt_num(b, sizeof(b), j->reserved_cpus, 1);
	top_fmt_num(c, sizeof(c), j->cpu_eff_pct, 0);
	snprintf(buf, sizeof(buf), "CPU %s of %s cores (%s%%)", a, b, c);
	if (!isnan(j->cpu_wait_cores)) {
		top_fmt_num(a, sizeof(a), j->cpu_wait_cores, 2);
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ", waited %s", a);
	}
	top_fmt_bytes(a, sizeof(a), j->rss_bytes);
	top_fmt_bytes(b, sizeof(b), j->reserved_mem_bytes);
	top_fmt_num(c, sizeof(c), j->mem_eff_pct, 0);
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "  MEM %s of %s (%s%%)", a, b, c);
	top_fmt_num(a, sizeof(a), j->gpus_used, 0);
	top_fmt_num(b, sizeof(b), j->reserved_gpus, 0);
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "  GPUs %s of %s", a, b);
	put(g, 0, y++, g->width, TOP_A_NORMAL, buf);
	snprintf(buf, sizeof(buf), "%s%s%s", j->badges, j->badges[0] ? "  " : "", j->command);
	put(g, 0, y++, g->width, v->color && j->badges[0] ? TOP_A_WARN : TOP_A_NORMAL, buf);

	for (size_t k = 0; k < m->nprocs; k++)
		nodes |= m->procs[k].node[0] && strcmp(m->procs[k].node, m->procs[0].node) != 0;
	for (size_t k = 0; k < m->ngpus; k++)
		nodes |= m->gpus[k].node[0] && strcmp(m->gpus[k].node, m->gpus[0].node) != 0;

	if (m->ngpus && y < g->height - 3) {
		fill_line(g, y, TOP_A_HEADER);
		snprintf(buf, sizeof(buf),
			 "%-*sGPU  UTIL%%      MEM used/total  POWER  JOB%%  JOB MEM",
			 nodes ? 13 : 0, nodes ? "NODE" : "");
		put(g, 0, y++, g->width, TOP_A_HEADER, buf);
		for (size_t k = 0; k < m->ngpus && y < g->height - 3; k++) {
			const struct top_gpu *u = &m->gpus[k];
			char d[40], e[40], f[40], h[72];

			top_fmt_num(a, sizeof(a), u->util_pct, 0);
			top_fmt_bytes(b, sizeof(b), u->mem_used_bytes);
			top_fmt_bytes(c, sizeof(c), u->mem_total_bytes);
			top_fmt_num(d, sizeof(d), u->power_w, 0);
			if (!isnan(u->power_w))
				strcat(d, "W");
			top_fmt_num(e, sizeof(e), u->job_util_pct, 0);
			top_fmt_bytes(f, sizeof(f), u->job_mem_bytes);
			snprintf(h, sizeof(h), "%s/%s", b, c);
			snprintf(buf, sizeof(buf), "%-*.*s%3d  %5s  %15s  %5s  %4s  %7s",
				 nodes ? 13 : 0, nodes ? 12 : 0, u->node, u->index, a, h, d, e, f);
			put(g, 0, y++, g->width, TOP_A_NORMAL, buf);
		}
	}
	if (m->nmetrics && y < g->height - 3) {
		int x = put(g, 0, y, g->width, TOP_A_TITLE, "app:");

		for (size_t k = 0; k < m->nmetrics; k++) {
			char val[32];

			top_fmt_num(val, sizeof(val), m->metrics[k].value,
				    fabs(m->metrics[k].value) < 100 ? 2 : 0);
			snprintf(buf, sizeof(buf), " %s=%s", m->metrics[k].name, val);
			if (x + (int)strlen(buf) > g->width) {
				if (++y >= g->height - 3)
					break;
				x = 4;
			}
			x += put(g, x, y, g->width - x, TOP_A_NORMAL, buf);
		}
		y++;
	}
	if (y >= g->height - 1)
		return;
	fill_line(g, y, TOP_A_HEADER);
	snprintf(buf, sizeof(buf), "%-*s%7s %-8s %6s %7s  COMMAND", nodes ? 13 : 0,
		 nodes ? "NODE" : "", "PID", "USER", "CPU%", "RSS");
	put(g, 0, y++, g->width, TOP_A_HEADER, buf);
	rows = g->height - 1 - y;
	if (m->nprocs == 0) {
		put(g, 0, y, g->width, TOP_A_DIM, "no processes");
		return;
	}
	sel = v->sel < m->nprocs ? (int)v->sel : (int)m->nprocs - 1;
	first = rows > 0 && sel >= rows ? sel - rows + 1 : 0;
	for (int r = first; r < (int)m->nprocs && r - first < rows; r++) {
		const struct top_proc *p = &m->procs[r];
		enum top_attr at = r == sel ? TOP_A_SELECTED : TOP_A_NORMAL;
		int depth = p->depth > 12 ? 12 : p->depth;

		top_fmt_num(a, sizeof(a), p->cpu_pct, 1);
		top_fmt_bytes(b, sizeof(b), p->rss_bytes);
		snprintf(buf, sizeof(buf), "%-*.*s%7d %-8.8s %6s %7s  %*s%s%s", nodes ? 13 : 0,
			 nodes ? 12 : 0, p->node, p->pid, p->user[0] ? p->user : "-", a, b,
			 depth * 2, "", depth ? "`- " : "", p->command);
		fill_line(g, y + r - first, at);
		put(g, 0, y + r - first, g->width, at, buf);
	}
}

/* ---- help ---- */

static const char *const help_lines[] = {
    "jobscope top: keys",
    "",
    "  Up/Down, j/k   move              PgUp/PgDn  a page",
    "  Enter          open the job      Esc, Backspace  back",
    "  s / S          next sort (cpu mem eff gpu key user) / reverse it",
    "  /              search name, key, user, command (empty: clear)",
    "  u              only one user's jobs (empty: all)",
    "  f              follow the selected job (its row stays selected)",
    "  [ / ]          replay (--db): one tick back / forward",
    "  h, ?           this help         q  quit",
    "",
    "Jobs: by name, else command; the key last when there is room.",
    "Figures: CPU in cores used/reserved, memory RSS used/reserved, GPUs",
    "used/reserved, EFF% CPU efficiency; \"-\" is a value the source lacks.",
    "Verdicts: CPU-WAIT (its threads waited for CPUs others held),",
    "CPU-LOW (<50% of reserved cores), CPU-OVER (>110%),",
    "MEM-NEAR (>=90% of reserved memory), MEM-LOW (<25%), GPU-UNUSED,",
    "GPU-IDLE (reserved GPUs under 5% busy).",
    "",
    "Press any key to return.",
};

static void draw_help(struct top_grid *g)
{
	for (size_t k = 0; k < sizeof(help_lines) / sizeof(help_lines[0]); k++)
		put(g, 0, 1 + (int)k, g->width, k == 0 ? TOP_A_TITLE : TOP_A_NORMAL, help_lines[k]);
}

void top_render(const struct top_model *m, const struct top_view *v, struct top_grid *g)
{
	char buf[512], at[32];

	memset(g->cell, ' ', (size_t)g->width * g->height);
	memset(g->attr, TOP_A_NORMAL, (size_t)g->width * g->height);
	if (g->width < 40 || g->height < 5) {
		snprintf(buf, sizeof(buf), "too small: %dx%d, need 40x5", g->width, g->height);
		put(g, 0, 0, g->width, TOP_A_NORMAL, buf);
		return;
	}
	fmt_time(at, sizeof(at), m->at_ms);
	fill_line(g, 0, TOP_A_TITLE);
	snprintf(buf, sizeof(buf), "jobscope top  %.400s  %s", m->source, at);
	put(g, 0, 0, g->width, TOP_A_TITLE, buf);
	if (m->status[0]) {
		fill_line(g, 1, v->color ? TOP_A_BAD : TOP_A_SELECTED);
		put(g, 0, 1, g->width, v->color ? TOP_A_BAD : TOP_A_SELECTED, m->status);
	}
	if (v->screen == TOP_SCREEN_HELP)
		draw_help(g);
	else if (v->screen == TOP_SCREEN_JOB)
		draw_job(m, v, g);
	else
		draw_jobs(m, v, g);

	fill_line(g, g->height - 1, TOP_A_HEADER);
	if (v->prompt_kind)
		snprintf(buf, sizeof(buf), "%s: %s_", v->prompt_kind == '/' ? "search" : "user",
			 v->prompt);
	else if (v->screen == TOP_SCREEN_JOB)
		snprintf(buf, sizeof(buf), "Esc back  f follow  [ ] step  h help  q quit");
	else
		snprintf(buf, sizeof(buf),
			 "Enter open  s/S sort  / search  u user  f follow  h help  q quit");
	put(g, 0, g->height - 1, g->width, TOP_A_HEADER, buf);
}
