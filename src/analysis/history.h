/*
 * history.h - what jobs reserved against what they used, over a window of
 * time, grouped by user, node, job, hour of day or day of week: the
 * sysadmin's view (`jobscope report --by ...`).
 *
 * Each job's figures (from job_summaries, kept for ever) are spread
 * evenly over its run time and counted for the part of it inside the
 * window; by hour and weekday, hour slice by hour slice in local time.
 * Units: hours, core-hours, GPU-hours, GiB-hours.  "Idle" is reserved
 * minus used, never below 0.  A GPU-hour used is a GPU-hour at 100%
 * utilization (utilization-weighted).
 *
 * history_init cannot fail; history_add returns 0 or -ENOMEM;
 * history_load reads a store (0 or -errno, printed); history_release
 * frees.  Not thread-safe.
 */
#ifndef JOBSCOPE_HISTORY_H
#define JOBSCOPE_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/progress.h"
#include "common/strbuf.h"
#include "store/store.h"

enum history_by {
	HISTORY_BY_JOB,
	HISTORY_BY_USER,
	HISTORY_BY_NODE,
	HISTORY_BY_HOUR,
	HISTORY_BY_WEEKDAY,
	HISTORY_BY_FRAMEWORK
};

/*
 * What the SMs did (job_summaries, schema 17): the activities kept per job,
 * in the order of store_history_rows' columns, and the throttle reasons.
 */
enum { HISTORY_GPU_ACTS = 7, HISTORY_GPU_THROTTLES = 2 };
/* "sm_active_avg_pct", ...: the JSON names, as the job's report has them */
extern const char *const history_gpu_act_names[HISTORY_GPU_ACTS];
extern const char *const history_gpu_throttle_names[HISTORY_GPU_THROTTLES];

/* One job, as history needs it.  NAN: unknown. */
struct history_job {
	int64_t row;
	char key[128]; /* scheduler:job_id */
	char user[64];
	char node[256];
	/* by framework: the first of history_frameworks its processes loaded, else "none" */
	char framework[64];
	int64_t start_ms, end_ms; /* end: its last sample for a job still running */
	double cores;		  /* reserved by its scheduler; NAN: none (a login, a daemon) */
	double cpu_s;		  /* CPU seconds over the whole job */
	double mem_reserved_bytes;
	double mem_peak_bytes;
	double gpus; /* reserved, else those it used; 0: none */
	double gpus_used;
	double gpu_util_pct; /* mean over the GPUs it used */
	/* its part of its GPUs' activity, percent (history_gpu_act_names), and throttle GPU-s */
	double gpu_act_pct[HISTORY_GPU_ACTS];
	double gpu_throttle_s[HISTORY_GPU_THROTTLES];
	bool over; /* it used more CPU or memory than it reserved */
};

struct history_row {
	char key[400]; /* user, node, "scheduler:id@node", "07" or "0 Mon" */
	int64_t jobs;
	int64_t last_job_row; /* counts each job once per row */
	double wall_h;
	/*
	 * Reserved, and used by every job; efficiencies are over the jobs that
	 * reserved (the _of_reserved sums): work without a reservation
	 * reserves nothing and leaves them alone.
	 */
	double core_h_reserved, core_h_used, core_h_used_of_reserved;
	double gpu_h_reserved, gpu_h_used;
	double mem_gib_h_reserved, mem_gib_h_peak, mem_gib_h_peak_of_reserved;
	bool has_mem_reserved, has_gpu_util;
	/*
	 * Activity weighted as utilization is, by GPU-hours used: percent x
	 * GPU-hours and the GPU-hours of the jobs that had it; throttle
	 * GPU-seconds, the part of each job's inside the row (NAN: none known).
	 */
	double gpu_act_pct_h[HISTORY_GPU_ACTS], gpu_act_h[HISTORY_GPU_ACTS];
	double gpu_throttle_s[HISTORY_GPU_THROTTLES];
	int64_t jobs_over; /* jobs that used more than they reserved (efficiency may pass 100) */
};

/* Efficiency 0-100 (above 100 only when jobs_over says why); NAN: nothing reserved. */
double history_cpu_eff_pct(const struct history_row *r);
double history_mem_eff_pct(const struct history_row *r);
double history_gpu_eff_pct(const struct history_row *r);
/* A row's average of activity k (0-100) over the GPU-hours that had it; NAN: none. */
double history_gpu_act_pct(const struct history_row *r, int k);

struct history {
	enum history_by by;
	int64_t since_ms, until_ms; /* the window: [since, until) */
	struct history_row *rows;
	size_t nrows, alloc;
	int32_t *index; /* open addressing over key, for user/node/job */
	size_t index_size;
	struct history_row total;
	int64_t jobs_without_summary; /* counted from their samples */
};

struct history_filter {
	const char *user; /* NULL: any */
	const char *node;
	int64_t since_ms, until_ms;
	/* told the jobs read, then how many of those without a summary are replayed; NULL: none */
	const struct progress_hook *progress;
};

void history_init(struct history *h, enum history_by by, int64_t since_ms, int64_t until_ms);
void history_release(struct history *h);
int history_add(struct history *h, const struct history_job *j);
/* Rows in the order to show: by waste (idle GPU-hours, then idle core-hours) for
 * user/node/job; by hour or weekday in calendar order. */
void history_sort(struct history *h);
int history_load(struct history *h, struct store *st, const struct history_filter *f);

const char *history_by_name(enum history_by by);
int history_by_parse(const char *s, enum history_by *out); /* 0 or -EINVAL */

/* Reserved minus used, never below 0: core-hours, GPU-hours. */
double history_idle_core_h(const struct history_row *r);
double history_idle_gpu_h(const struct history_row *r);

#endif
