/*
 * source.h - where `jobscope top` gets its figures: a node's agent
 * (HTTP), a store file replayed at a time, or a head for one job across
 * its nodes.  One backend table per kind; refresh fills a model (cleared
 * first) for the jobs list and, when open_key is set, that job's detail.
 * Errors: refresh returns 0, or -errno after writing what went wrong into
 * m->status (the model then keeps nothing stale: lists are empty).
 */
#ifndef JOBSCOPE_TOP_SOURCE_H
#define JOBSCOPE_TOP_SOURCE_H

#include <stdint.h>

#include "top/top.h"

struct store;

/* a process's CPU count at the previous refresh, for its rate */
struct top_prev_cpu {
	char node[TOP_NAME_MAX];
	int32_t pid;
	double cpu_ms, sampled_ms, pct;
};

struct top_source {
	const struct top_backend *be;
	char url[256];
	char job[TOP_KEY_MAX]; /* --head: the job followed */
	const char *token;
	char db[512];
	struct store *st;
	int64_t at_ms, step_ms; /* --db: the time shown, and a tick */
	struct top_prev_cpu *prev, *cur;
	size_t nprev, ncur, prev_alloc, cur_alloc;
};

struct top_backend {
	const char *name;
	int (*load)(struct top_source *s, struct top_model *m, const char *open_key);
	/* one tick back (dir < 0) or forward; NULL for live sources */
	void (*step)(struct top_source *s, int dir);
	void (*release)(struct top_source *s);
};

extern const struct top_backend top_backend_agent, top_backend_head, top_backend_store;

/* 0, or -errno with a message (a store that cannot be opened). */
int top_source_open_store(struct top_source *s, const char *db, int64_t at_ms);
void top_source_release(struct top_source *s);

/* A process's CPU % from its count and the previous refresh's: NAN the first time. */
double top_source_cpu_pct(struct top_source *s, const char *node, int32_t pid, double cpu_ms,
			  double sampled_ms);
/* after a refresh: this one's counts become the previous */
void top_source_cpu_done(struct top_source *s);
void top_user_name(uint32_t uid, char *buf, size_t size);

/*
 * An agent's answers, parsed, into m (after top_model_clear): jobs is
 * /api/v1/jobs's, gpus /api/v1/gpus's (either may be any JSON, or NULL);
 * the job of open_key, when jobs lists it, with its processes and GPUs.
 * Any document is safe (fuzzed: tests/fuzz/fuzz_top.c).
 */
struct cJSON;
void top_agent_model(struct top_source *s, struct top_model *m, const struct cJSON *jobs,
		     const struct cJSON *gpus, const char *open_key);

#endif
