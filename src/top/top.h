/*
 * top.h - `jobscope top`: what one screen shows (struct top_model, filled
 * by a source: an agent, a store at a time, or a head for one job), the
 * view's state (screen, selection, sort, filters) and the layout that
 * draws a model into a grid of width x height cells, which the ncurses
 * loop (ui.c) copies to the terminal and --batch prints as text.
 *
 * Missing is NAN: every figure of the model is a double, NAN when the
 * source does not know it, and the layout writes "-" for it, never 0.
 * Ownership: a model owns its arrays (top_model_release frees them); a
 * grid owns its cells.  Not thread-safe; no I/O except in the sources.
 */
#ifndef JOBSCOPE_TOP_H
#define JOBSCOPE_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TOP_KEY_MAX    128
#define TOP_NAME_MAX   64
#define TOP_CMD_MAX    256
#define TOP_BADGES_MAX 64

struct top_job {
	char key[TOP_KEY_MAX];
	char name[TOP_CMD_MAX]; /* `jobscope run --name`, SLURM_JOB_NAME; "" when none */
	char user[TOP_NAME_MAX];
	char node[TOP_NAME_MAX];
	char command[TOP_CMD_MAX];
	bool live;
	double start_ms, end_ms;
	double reserved_cpus, cpu_cores, cpu_eff_pct;
	double cpu_wait_cores; /* its threads runnable, not running: cores' worth (schedstat) */
	double reserved_mem_bytes, rss_bytes, mem_eff_pct;
	double reserved_gpus, gpus_used, gpu_util_pct;
	double processes;
	char badges[TOP_BADGES_MAX]; /* top_model_badges() fills it */
};

struct top_proc {
	char node[TOP_NAME_MAX];
	int32_t pid, ppid;
	char user[TOP_NAME_MAX];
	char command[TOP_CMD_MAX];
	double cpu_pct, rss_bytes;
	int depth; /* in the tree: top_model_tree() sets it */
};

struct top_gpu {
	char node[TOP_NAME_MAX];
	int index;
	char name[TOP_NAME_MAX];
	double util_pct, mem_used_bytes, mem_total_bytes, power_w;
	double job_util_pct, job_mem_bytes; /* the job's share of it */
};

struct top_metric {
	char name[TOP_NAME_MAX];
	double value;
};

struct top_model {
	char source[400]; /* "agent http://127.0.0.1:9101", "store x.db", ... */
	char node[TOP_NAME_MAX];
	double at_ms;	  /* the time shown */
	char status[400]; /* "" or a problem: "cannot reach ...: retrying" */
	struct top_job *jobs;
	size_t njobs, jobs_alloc;
	/* the open job's detail */
	bool has_job;
	struct top_job job;
	struct top_proc *procs;
	size_t nprocs, procs_alloc;
	struct top_gpu *gpus;
	size_t ngpus, gpus_alloc;
	struct top_metric *metrics;
	size_t nmetrics, metrics_alloc;
};

/* src into dst of size bytes, cut at size - 1 (no warning for the cut) */
void top_strcpy(char *dst, size_t size, const char *src);

void top_model_init(struct top_model *m);
void top_model_release(struct top_model *m);
/* Empties the lists (keeps their memory) and the detail. */
void top_model_clear(struct top_model *m);
/* A zeroed entry with every figure NAN, or NULL out of memory. */
struct top_job *top_model_add_job(struct top_model *m);
struct top_proc *top_model_add_proc(struct top_model *m);
struct top_gpu *top_model_add_gpu(struct top_model *m);
struct top_metric *top_model_add_metric(struct top_model *m);
void top_job_init(struct top_job *j);
/* The verdict badges of a job's figures, into j->badges ("" when none). */
void top_job_badges(struct top_job *j);
/* Orders procs as a tree (children under their parent, by pid) with depth. */
void top_model_tree(struct top_model *m);

enum top_screen { TOP_SCREEN_JOBS, TOP_SCREEN_JOB, TOP_SCREEN_HELP };
enum top_sort {
	TOP_SORT_CPU,
	TOP_SORT_MEM,
	TOP_SORT_EFF,
	TOP_SORT_GPU,
	TOP_SORT_KEY,
	TOP_SORT_USER,
	TOP_SORT__COUNT
};

struct top_view {
	enum top_screen screen, back; /* back: where help returns */
	enum top_sort sort;
	bool ascending;
	size_t sel;		    /* selected row of the list shown */
	size_t scroll;		    /* first row shown */
	char search[64];	    /* jobs whose key, name, user or command holds it */
	char user[64];		    /* only this user's jobs */
	char open_key[TOP_KEY_MAX]; /* the job screen's job */
	bool follow;		    /* stay on open_key: opened by --job or f */
	char prompt[80];	    /* the line being typed ("/" or "u"), shown at the bottom */
	int prompt_kind;	    /* 0 none, '/' search, 'u' user */
	bool color;
};

void top_view_init(struct top_view *v);
const char *top_sort_name(enum top_sort s);

/*
 * The jobs the view shows, in its order: indices into m->jobs, filtered by
 * v->search and v->user, sorted by v->sort.  Returns how many (<= m->njobs)
 * written to idx (m->njobs entries).
 */
size_t top_view_jobs(const struct top_model *m, const struct top_view *v, size_t *idx);

/* Following a job (v->follow, v->open_key) on the jobs screen: its row selected, wherever it is. */
void top_view_follow(const struct top_model *m, struct top_view *v);

/* ---- the grid the layout draws ---- */
enum top_attr {
	TOP_A_NORMAL,
	TOP_A_HEADER,
	TOP_A_SELECTED,
	TOP_A_TITLE,
	TOP_A_BAD,
	TOP_A_WARN,
	TOP_A_GOOD,
	TOP_A_DIM,
};

struct top_grid {
	int width, height;
	char *cell;	     /* width*height printable ASCII bytes */
	unsigned char *attr; /* enum top_attr per cell */
};

int top_grid_init(struct top_grid *g, int width, int height);
void top_grid_release(struct top_grid *g);

/*
 * Draws the view of m into g (every cell written).  Widths below 40 or
 * heights below 5 show one line saying the terminal is too small.
 */
void top_render(const struct top_model *m, const struct top_view *v, struct top_grid *g);
/* The grid as text lines, trailing blanks dropped (--batch). */
void top_grid_print(const struct top_grid *g, FILE *out);

/* Number formats the layout uses, "-" for NAN (exposed for the tests). */
void top_fmt_bytes(char *buf, size_t size, double bytes);
void top_fmt_num(char *buf, size_t size, double v, int decimals);

#endif
