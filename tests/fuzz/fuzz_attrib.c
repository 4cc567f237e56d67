/*
 * fuzz_attrib.c - libFuzzer target for the attribution parsers (cgroup
 * paths, SLUID ones included; a slurmstepd's title; environ; cgroup limit
 * files): the same input goes to every one of them.  It is copied into a buffer of exactly
 * its size, not NUL-terminated, so ASan catches any read past len.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/attrib.h"
#include "sample/cgroup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A string field must be terminated inside its array. */
static void check_str(const char *s, size_t size)
{
	if (strnlen(s, size) >= size)
		abort();
}

static void check_cgroup(const char *text, size_t size)
{
	struct job_identity id;
	int ret = attrib_parse_cgroup(text, size, &id);

	if (ret == -EINVAL)
		return;
	if (ret != 0 || id.scheduler > JOB_SYSTEMD || id.uid < -1)
		abort();
	check_str(id.job_id, sizeof(id.job_id));
	check_str(id.step, sizeof(id.step));
	check_str(id.qos, sizeof(id.qos));
	check_str(id.container_id, sizeof(id.container_id));
	check_str(id.cgroup_path, sizeof(id.cgroup_path));
	check_str(id.sluid, sizeof(id.sluid));
	if ((id.scheduler == JOB_NONE) != (id.job_id[0] == '\0'))
		abort();
	/* a SLUID: a Slurm job's, 's' and 13 of [0-9A-Z], standing for its number */
	if (id.sluid[0] &&
	    (id.scheduler != JOB_SLURM || strlen(id.sluid) != JOB_SLUID_LEN || id.sluid[0] != 's' ||
	     strcmp(id.job_id, id.sluid) != 0 ||
	     strspn(id.sluid + 1, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") != JOB_SLUID_LEN - 1))
		abort();
	if (id.scheduler == JOB_K8S && strlen(id.job_id) != 36)
		abort();
}

static void check_stepd_title(const char *text, size_t size)
{
	struct stepd_title t, before;
	int ret;

	memset(&t, 0x5a, sizeof(t));
	before = t;
	ret = attrib_parse_stepd_title(text, size, &t);
	if (ret == -EINVAL) {
		if (memcmp(&t, &before, sizeof(t)) != 0)
			abort(); /* untouched on error */
		return;
	}
	if (ret != 0)
		abort();
	check_str(t.job_id, sizeof(t.job_id));
	check_str(t.step, sizeof(t.step));
	if (!t.job_id[0] || strspn(t.job_id, "0123456789") != strlen(t.job_id) || !t.step[0])
		abort();
}

static void check_environ(const char *raw, size_t size)
{
	struct slurm_env env;

	if (attrib_parse_environ(raw, size, &env) != 0)
		abort();
	check_str(env.job_id, sizeof(env.job_id));
	check_str(env.step_id, sizeof(env.step_id));
	check_str(env.job_gpus, sizeof(env.job_gpus));
	check_str(env.cuda_visible, sizeof(env.cuda_visible));
	check_str(env.run_id, sizeof(env.run_id));
	if (!(env.valid & SLURM_ENV_JOB_ID) && env.job_id[0])
		abort();
}

static void check_limits(const char *text, size_t size)
{
	int ncpus = -1;
	double cores = -1;
	uint64_t bytes;
	int ret;

	ret = cgroup_parse_cpuset(text, size, &ncpus);
	if (ret == 0 && ncpus <= 0)
		abort();
	if (ret != 0 && (ncpus != -1 || (ret != -EINVAL && ret != -ENODATA)))
		abort();
	ret = cgroup_parse_cpu_max(text, size, &cores);
	if (ret == 0 && !(cores > 0))
		abort();
	if (ret != 0 && (cores != -1 || (ret != -EINVAL && ret != -ENODATA)))
		abort();
	ret = cgroup_parse_u64(text, size, &bytes);
	if (ret != 0 && ret != -EINVAL && ret != -ENODATA)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size ? size : 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	check_cgroup(text, size);
	check_stepd_title(text, size);
	check_environ(text, size);
	check_limits(text, size);
	free(text);
	return 0;
}
