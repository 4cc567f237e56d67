/*
 * fuzz_cgroup.c - libFuzzer target for the cgroup parsers: the same input
 * goes to every one of them.  It is copied into a buffer of exactly its
 * size, not NUL-terminated, so ASan catches any read past len.
 *
 * Besides not crashing, each parser must keep its contract: 0 or -EINVAL
 * (and -ENODATA for cgroup_parse_u64), nothing written on error, and on
 * success only its own fields and bits touched.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sample/cgroup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Fields a parser may write, as the bits that cover them. */
static void check_untouched(const struct cgroup_sample *before, const struct cgroup_sample *after,
			    uint32_t mine)
{
	if ((after->valid & ~mine) != (before->valid & ~mine))
		abort();
	if (!(mine & CG_CPU) && after->cpu_usage_us != before->cpu_usage_us)
		abort();
	if (!(mine & CG_CPU_SPLIT) && (after->cpu_user_us != before->cpu_user_us ||
				       after->cpu_system_us != before->cpu_system_us))
		abort();
	if (after->mem_current_bytes != before->mem_current_bytes ||
	    after->mem_peak_bytes != before->mem_peak_bytes)
		abort();
	if (!(mine & CG_MEM_ANON) && after->mem_anon_bytes != before->mem_anon_bytes)
		abort();
	if (!(mine & CG_MEM_SHMEM) && after->mem_shmem_bytes != before->mem_shmem_bytes)
		abort();
	if (!(mine & CG_MEM_SWAPCACHED) &&
	    after->mem_swapcached_bytes != before->mem_swapcached_bytes)
		abort();
	if (!(mine & CG_MEM_FILE) && after->mem_file_bytes != before->mem_file_bytes)
		abort();
	if (!(mine & CG_IO) && (after->io_read_bytes != before->io_read_bytes ||
				after->io_write_bytes != before->io_write_bytes))
		abort();
}

/* A field whose bit did not get set must not have changed either. */
static void check_bits(const struct cgroup_sample *before, const struct cgroup_sample *after,
		       uint32_t mine)
{
	uint32_t set = after->valid & ~before->valid & mine;

	check_untouched(before, after, set | (before->valid & mine));
}

static void check_result(int ret, const struct cgroup_sample *before,
			 const struct cgroup_sample *after, uint32_t mine)
{
	if (ret != 0 && ret != -EINVAL)
		abort();
	if (ret != 0 && memcmp(before, after, sizeof(*after)) != 0)
		abort();
	if (ret == 0 && (after->valid & before->valid) != before->valid)
		abort();
	if (ret == 0)
		check_bits(before, after, mine);
}

static void run_sample_parsers(const char *text, size_t size, uint32_t start_valid)
{
	static const long hzs[] = {100, 250, 0, -1, 1, 0x7fffffffffffffffL};
	struct cgroup_sample before, s;
	size_t i;
	int ret;

	memset(&before, 0x5a, sizeof(before));
	before.valid = start_valid;

	s = before;
	ret = cgroup_parse_cpu_stat(text, size, &s);
	check_result(ret, &before, &s, CG_CPU | CG_CPU_SPLIT);

	for (i = 0; i < sizeof(hzs) / sizeof(hzs[0]); i++) {
		s = before;
		ret = cgroup_parse_cpuacct_stat(text, size, hzs[i], &s);
		check_result(ret, &before, &s, CG_CPU_SPLIT);
	}

	s = before;
	ret = cgroup_parse_memory_stat(text, size, &s);
	check_result(ret, &before, &s, CG_MEM_ANON | CG_MEM_SHMEM | CG_MEM_SWAPCACHED | CG_MEM_FILE);

	s = before;
	ret = cgroup_parse_io_stat(text, size, &s);
	check_result(ret, &before, &s, CG_IO);
	if (ret == 0 && !(s.valid & CG_IO))
		abort();

	s = before;
	ret = cgroup_parse_blkio_bytes(text, size, &s);
	check_result(ret, &before, &s, CG_IO);
	if (ret == 0 && !(s.valid & CG_IO))
		abort();
}

static void check_u64(const char *text, size_t size)
{
	uint64_t v = 0x5a5a5a5a5a5a5a5aull;
	int ret = cgroup_parse_u64(text, size, &v);

	if (ret != 0 && ret != -EINVAL && ret != -ENODATA)
		abort();
	if (ret != 0 && v != 0x5a5a5a5a5a5a5a5aull)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size ? size : 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	run_sample_parsers(text, size, 0);
	run_sample_parsers(text, size, CG_CPU | CG_MEM | CG_MEM_PEAK | CG_IO);
	check_u64(text, size);
	free(text);
	return 0;
}
