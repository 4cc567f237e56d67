/*
 * cudastat.c - the CUDA tables' model (cudastat.h): names of kinds and
 * states, merging two stats of one name, and a process's list of stats.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cudastat.h"

static const char *const kind_names[CUDA_STAT_KINDS] = {"api", "kernel", "memcpy", "memset"};
static const char *const state_names[CUDA_PROC_STATES] = {"ok", "no_cupti", "busy", "error", "off"};

const char *cuda_stat_kind_name(enum cuda_stat_kind kind)
{
	return (unsigned)kind < CUDA_STAT_KINDS ? kind_names[kind] : "?";
}

int cuda_stat_kind_parse(const char *s, enum cuda_stat_kind *out)
{
	for (int i = 0; i < CUDA_STAT_KINDS; i++)
		if (strcmp(s, kind_names[i]) == 0) {
			*out = (enum cuda_stat_kind)i;
			return 0;
		}
	return -EINVAL;
}

const char *cuda_proc_state_name(enum cuda_proc_state state)
{
	return (unsigned)state < CUDA_PROC_STATES ? state_names[state] : "?";
}

int cuda_proc_state_parse(const char *s, enum cuda_proc_state *out)
{
	for (int i = 0; i < CUDA_PROC_STATES; i++)
		if (strcmp(s, state_names[i]) == 0) {
			*out = (enum cuda_proc_state)i;
			return 0;
		}
	return -EINVAL;
}

const char *cuda_memcpy_name(unsigned copy_kind)
{
	/* Nsight Systems' operation names, by CUpti_ActivityMemcpyKind */
	static const char *const names[] = {
	    "[CUDA memcpy Unknown]", "[CUDA memcpy HtoD]", "[CUDA memcpy DtoH]",
	    "[CUDA memcpy HtoA]",    "[CUDA memcpy AtoH]", "[CUDA memcpy AtoA]",
	    "[CUDA memcpy AtoD]",    "[CUDA memcpy DtoA]", "[CUDA memcpy DtoD]",
	    "[CUDA memcpy HtoH]",    "[CUDA memcpy PtoP]",
	};

	return copy_kind < sizeof(names) / sizeof(names[0]) ? names[copy_kind] : names[0];
}

static double stddev(double m2, uint64_t count)
{
	if (count < 2 || !(m2 > 0))
		return 0;
	return sqrt(m2 / (double)(count - 1));
}

double cuda_stat_stddev_ns(const struct cuda_stat *s)
{
	return stddev(s->m2_ns2, s->count);
}

double cuda_stat_stddev_bytes(const struct cuda_stat *s)
{
	return stddev(s->m2_bytes2, s->count);
}

/* Chan et al.'s pairwise update of the sum of squared deviations. */
static double merge_m2(double m2a, double suma, double m2b, double sumb, double na, double nb)
{
	double delta = sumb / nb - suma / na;

	return m2a + m2b + delta * delta * na * nb / (na + nb);
}

void cuda_stat_merge(struct cuda_stat *into, const struct cuda_stat *from)
{
	if (from->count == 0)
		return;
	if (into->count == 0) {
		into->count = from->count;
		into->total_ns = from->total_ns;
		into->min_ns = from->min_ns;
		into->max_ns = from->max_ns;
		into->m2_ns2 = from->m2_ns2;
		into->bytes = from->bytes;
		into->min_bytes = from->min_bytes;
		into->max_bytes = from->max_bytes;
		into->m2_bytes2 = from->m2_bytes2;
		return;
	}
	into->m2_ns2 = merge_m2(into->m2_ns2, (double)into->total_ns, from->m2_ns2,
				(double)from->total_ns, (double)into->count, (double)from->count);
	into->m2_bytes2 = merge_m2(into->m2_bytes2, (double)into->bytes, from->m2_bytes2,
				   (double)from->bytes, (double)into->count, (double)from->count);
	into->count += from->count;
	into->total_ns += from->total_ns;
	into->bytes += from->bytes;
	if (from->min_ns < into->min_ns)
		into->min_ns = from->min_ns;
	if (from->max_ns > into->max_ns)
		into->max_ns = from->max_ns;
	if (from->min_bytes < into->min_bytes)
		into->min_bytes = from->min_bytes;
	if (from->max_bytes > into->max_bytes)
		into->max_bytes = from->max_bytes;
}

void cuda_proc_init(struct cuda_proc *p)
{
	memset(p, 0, sizeof(*p));
}

void cuda_proc_release(struct cuda_proc *p)
{
	for (size_t i = 0; i < p->nstats; i++)
		free(p->stats[i].name);
	free(p->stats);
	cuda_proc_init(p);
}

struct cuda_stat *cuda_proc_add(struct cuda_proc *p, enum cuda_stat_kind kind, const char *name)
{
	struct cuda_stat *s;
	size_t len = strnlen(name, CUDA_NAME_MAX - 1);

	if (p->nstats == p->alloc) {
		size_t alloc = p->alloc ? p->alloc * 2 : 16;
		struct cuda_stat *grown = realloc(p->stats, alloc * sizeof(*grown));

		if (!grown)
			return NULL;
		p->stats = grown;
		p->alloc = alloc;
	}
	s = &p->stats[p->nstats];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->name = malloc(len + 1);
	if (!s->name)
		return NULL;
	memcpy(s->name, name, len);
	s->name[len] = '\0';
	p->nstats++;
	return s;
}

void cuda_proc_move(struct cuda_proc *dst, struct cuda_proc *src)
{
	cuda_proc_release(dst);
	*dst = *src;
	cuda_proc_init(src);
}
