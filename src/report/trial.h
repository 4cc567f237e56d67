/*
 * trial.h - what `jobscope trial` found (docs/trial.md): each placement's
 * measured throughput, the groups of placements a scaling law is fitted to,
 * and their renderings: a text table, JSON and a PNG/PDF/SVG plot of
 * throughput and efficiency against resources.
 *
 * The CLI fills the model (cmd_trial.c runs the placements) and calls
 * trial_analyse, which derives speedups, efficiencies, fits and
 * recommendations.  Missing values are NAN (null in JSON).  Renderers
 * append to a strbuf the caller owns and return 0 or -errno; trial_plot
 * writes a file (cairo, loaded on first use).  Not thread-safe.
 */
#ifndef JOBSCOPE_TRIAL_H
#define JOBSCOPE_TRIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/scaling.h"
#include "common/strbuf.h"

#define TRIAL_MAX_PLACEMENTS 64
#define TRIAL_MAX_REPEAT     16
#define TRIAL_NOTE_MAX	     256

enum trial_source {
	TRIAL_SOURCE_NONE,   /* nothing measured */
	TRIAL_SOURCE_METRIC, /* the app metric (--metric) */
	TRIAL_SOURCE_CPU,    /* CPU-seconds per wall-second */
	TRIAL_SOURCE_GPU,    /* mean SM utilization x GPUs used */
};

struct trial_placement {
	int cpus;		       /* 0: not placed (every CPU the trial has) */
	int gpus;		       /* -1: not placed (CUDA_VISIBLE_DEVICES untouched) */
	uint64_t mem_bytes;	       /* 0: not placed */
	bool mem_applied;	       /* the cgroup's memory.max was set */
	char mem_note[TRIAL_NOTE_MAX]; /* why not, when mem_bytes and !mem_applied */
	int runs;		       /* repeats done */
	double throughput_run[TRIAL_MAX_REPEAT];
	int exit_status[TRIAL_MAX_REPEAT]; /* `jobscope run`'s: the command's */
	double wall_s[TRIAL_MAX_REPEAT];
	/* the trial's --duration ended the run (its exit status is then the SIGTERM's, 143) */
	bool stopped[TRIAL_MAX_REPEAT];
	/* the run's report said cpu_contended: other work held the CPUs (its figure is the
	 * machine's) */
	bool contended[TRIAL_MAX_REPEAT];
	enum trial_source source; /* of the last run */
	/* trial_analyse: */
	double throughput;	    /* mean of the runs' (NAN when any is missing) */
	double n;		    /* the fitted resource's count */
	double speedup, efficiency; /* against the group's smallest n; NAN: none */
	int group;
};

struct trial_group {
	char label[64]; /* the other dimensions: "gpus=1 mem=2.0 GiB", "" */
	struct scaling_fit fit;
	int contended_runs; /* runs measured under CPU contention: no law is fitted on them */
	double recommend;   /* NAN: none */
	bool recommend_capped;
	double nmax;					/* the largest n tried */
	double pred_n[2], pred_speedup[2], pred_eff[2]; /* at 2x and 4x nmax */
};

struct trial {
	char *const *argv; /* the command */
	int64_t duration_ms;
	int repeat;
	const char *metric; /* NULL: CPU or GPU work */
	double min_eff;
	const char *resource; /* "cpus" or "gpus" (the fitted one), NULL: neither varied */
	size_t nplace;
	struct trial_placement place[TRIAL_MAX_PLACEMENTS];
	size_t ngroups;
	struct trial_group group[TRIAL_MAX_PLACEMENTS];
	const char *store_dir; /* kept stores' directory, NULL when removed */
};

void trial_analyse(struct trial *t);
const char *trial_source_name(enum trial_source s); /* "metric", "cpu", "gpu", null */
int trial_text(const struct trial *t, struct strbuf *out);
int trial_json(const struct trial *t, struct strbuf *out);
/* .png, .pdf or .svg by the name; 0, -EINVAL (other names), -ENOENT (no cairo), -errno */
int trial_plot(const struct trial *t, const char *path);

#endif
