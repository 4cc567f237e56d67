/*
 * trial.h - `jobscope trial`'s placements and runs; cli/cmd_trial.c parses
 * its options, report/trial.h fits and renders (docs/trial.md).
 *
 * trial_run_all runs CMD once per placement of t and repeat, each under
 * `jobscope run` (this very binary, /proc/self/exe) with its own store in a
 * temporary directory (dir), for duration_ms at most (then `run --timeout`
 * stops the tree: SIGTERM, SIGKILL after grace_ms).  The placement is made in
 * the child before it executes `run`, and `run` and CMD inherit it: the
 * affinity mask (the first k CPUs this process may use),
 * CUDA_VISIBLE_DEVICES=0..g-1, and a cgroup v2 with memory.max when one can
 * be made here (else the run goes on unlimited, said in the placement's
 * mem_note: never pretended).  Then each store is read: throughput is the
 * metric's rate, else CPU or GPU work per second.  *failed: runs that could
 * not be run or read.  SIGINT, SIGTERM or SIGHUP: passed to the `jobscope
 * run` under way (which passes it to CMD), then no more runs; *stopped_by is
 * the signal (0: none).  Returns 0, or -errno when no directory could be
 * made (said).  Not thread-safe: it owns those signals while it runs.
 */
#ifndef JOBSCOPE_RUN_TRIAL_H
#define JOBSCOPE_RUN_TRIAL_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report/trial.h"

struct trial_runner {
	int64_t duration_ms, grace_ms, interval_ms;
	int repeat;
	const char *metric; /* NULL: CPU or GPU work per second */
	bool keep;	    /* the stores kept in dir (t->store_dir) */
	char **argv;
};

#define TRIAL_MAX_VALUES 16 /* values of one --vary */

/* --vary RES=LIST, each resource's values to try. */
struct trial_vary {
	int cpus[TRIAL_MAX_VALUES], ncpus;
	int gpus[TRIAL_MAX_VALUES], ngpus;
	uint64_t mem_bytes[TRIAL_MAX_VALUES];
	int nmem;
};

/* One --vary "cpus=1,2,4" (gpus=0,1; mem=512M,2G: binary units) into v: 0,
 * or -EINVAL with why ("--vary ...: ..."). */
int trial_vary_parse(struct trial_vary *v, const char *arg, char *why, size_t whysize);
/* t's placements: the cross product of v's lists; -E2BIG past TRIAL_MAX_PLACEMENTS. */
int trial_place(struct trial *t, const struct trial_vary *v);

/* The first k CPUs of this process's mask into set; -ERANGE when it has fewer (*avail). */
int trial_first_cpus(int k, cpu_set_t *set, int *avail);
int trial_run_all(const struct trial_runner *o, struct trial *t, char *dir, size_t dirsize,
		  int *failed, int *stopped_by);

#endif
