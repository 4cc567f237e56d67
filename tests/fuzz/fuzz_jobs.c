/*
 * fuzz_jobs.c - libFuzzer target for jobs_attribute(): the input is split
 * at its first 0xff byte into the text of /proc/PID/cgroup and of
 * /proc/PID/environ (both read from processes other users control), each
 * copied to a buffer of exactly its size.  What the environment named is
 * then kept (jobs_keep_env) and stands in for an overwritten environment.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/jobs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *s, size_t size)
{
	if (strnlen(s, size) >= size)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *cut = memchr(data, 0xff, size);
	size_t cg_len = cut ? (size_t)(cut - data) : size;
	size_t env_len = cut ? size - cg_len - 1 : 0;
	char *cg = malloc(cg_len ? cg_len : 1), *env = malloc(env_len ? env_len : 1);
	struct job_attribution a;

	if (!cg || !env)
		abort();
	memcpy(cg, data, cg_len);
	if (env_len)
		memcpy(env, cut + 1, env_len);
	jobs_attribute(cg, cg_len, env, env_len, 1000, 1, &a);
	check_str(a.scheduler, sizeof(a.scheduler));
	check_str(a.job_id, sizeof(a.job_id));
	check_str(a.step, sizeof(a.step));
	check_str(a.cgroup, sizeof(a.cgroup));
	if (!a.scheduler[0] || !a.job_id[0])
		abort(); /* every process belongs to some job */
	/* the job's cgroup is a prefix of a path in the file */
	if (a.cgroup[0] && a.cgroup[0] != '/')
		abort();

	/* kept, then read back in place of an environment that names nothing */
	{
		char kept[PTREE_ENV_JOB_MAX] = "";
		struct job_attribution b = a, c;
		bool named = a.env.valid & (SLURM_ENV_JOB_ID | SLURM_ENV_RUN_ID);

		jobs_keep_env(&b, kept, sizeof(kept));
		check_str(kept, sizeof(kept));
		if (a.basis == JOB_BASIS_ENV && !kept[0])
			abort(); /* an environment that named the job is kept */
		if (!named && kept[0])
			abort();
		jobs_attribute(cg, cg_len, NULL, 0, 1000, 1, &c);
		jobs_keep_env(&c, kept, sizeof(kept));
		if (a.basis == JOB_BASIS_ENV &&
		    (strcmp(c.scheduler, a.scheduler) || strcmp(c.job_id, a.job_id) ||
		     strcmp(c.step, a.step)))
			abort(); /* ... and comes back whole */
		if (jobs_choose(&c, NULL, false, NULL, false) > JOB_CHOICE_KEEP)
			abort();
	}
	free(cg);
	free(env);
	return 0;
}
