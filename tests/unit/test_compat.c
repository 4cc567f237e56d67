/*
 * test_compat.c - the pieces of `jobscope agent --compat` that decide
 * rather than print: the option's list (agent_compat_parse) and which
 * devices a job's scheduler reserved for it (agent_compat_reserves), by
 * index or UUID, the way SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES write
 * them.  The series themselves are checked through a real Prometheus in
 * tests/integration/test_compat.py.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "agent/agent.h"

static void test_parse(void **state)
{
	unsigned bits;

	(void)state;
	bits = 0;
	assert_int_equal(agent_compat_parse("jobstats", &bits), 0);
	assert_int_equal(bits, AGENT_COMPAT_JOBSTATS);
	bits = 0;
	assert_int_equal(agent_compat_parse("dcgm", &bits), 0);
	assert_int_equal(bits, AGENT_COMPAT_DCGM);
	bits = 0;
	assert_int_equal(agent_compat_parse("dcgm,jobstats", &bits), 0);
	assert_int_equal(bits, AGENT_COMPAT_DCGM | AGENT_COMPAT_JOBSTATS);
	/* repeated --compat options add up */
	bits = AGENT_COMPAT_DCGM;
	assert_int_equal(agent_compat_parse("jobstats", &bits), 0);
	assert_int_equal(bits, AGENT_COMPAT_DCGM | AGENT_COMPAT_JOBSTATS);

	static const char *const bad[] = {"", ",", "jobstats,", ",dcgm", "dcgm,,jobstats",
					  "jobstat", "jobstatsx", "DCGM", "dcgm jobstats", "nvidia"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bits = 0;
		assert_int_equal(agent_compat_parse(bad[i], &bits), -1);
	}
}

static struct gpu_device_info dev(int index, const char *uuid)
{
	struct gpu_device_info d;

	memset(&d, 0, sizeof(d));
	d.index = index;
	snprintf(d.uuid, sizeof(d.uuid), "%s", uuid);
	return d;
}

static bool reserves(const char *list, const struct gpu_device_info *d)
{
	struct job_record r;

	memset(&r, 0, sizeof(r));
	snprintf(r.reserved_gpu_list, sizeof(r.reserved_gpu_list), "%s", list);
	return agent_compat_reserves(&r, d);
}

static void test_reserves(void **state)
{
	struct gpu_device_info d0 = dev(0, "GPU-1f2e3d4c-aaaa-bbbb-cccc-000000000000");
	struct gpu_device_info d1 = dev(1, "GPU-99887766-aaaa-bbbb-cccc-111111111111");
	struct gpu_device_info d12 = dev(12, "GPU-55555555-aaaa-bbbb-cccc-121212121212");

	(void)state;
	/* indices */
	assert_true(reserves("0,1", &d0));
	assert_true(reserves("0,1", &d1));
	assert_false(reserves("0,1", &d12));
	assert_true(reserves("3,12", &d12));
	assert_false(reserves("1,2", &d12)); /* 12 is not 1 then 2 */
	assert_false(reserves("120", &d12));
	assert_true(reserves(" 1", &d1));
	/* nothing reserved */
	assert_false(reserves("", &d0));
	assert_false(reserves(",", &d0));
	/* UUIDs, whole or a prefix of 8 characters or more (CUDA_VISIBLE_DEVICES) */
	assert_true(reserves("GPU-99887766-aaaa-bbbb-cccc-111111111111", &d1));
	assert_false(reserves("GPU-99887766-aaaa-bbbb-cccc-111111111111", &d0));
	assert_true(reserves("GPU-1f2e3d4c-aaaa-bbbb-cccc-000000000000,"
			     "GPU-99887766-aaaa-bbbb-cccc-111111111111",
			     &d0));
	assert_true(reserves("GPU-1f2e", &d0));
	assert_false(reserves("GPU-", &d0));
	assert_false(reserves("GPU-1f2e3d4c-aaaa-bbbb-cccc-0000000000001", &d0)); /* longer */
	/* a MIG instance is not the whole device, nor is a word */
	assert_false(reserves("MIG-1f2e3d4c-aaaa-bbbb-cccc-000000000000", &d0));
	assert_false(reserves("NoDevFiles", &d0));
	assert_false(reserves("-1", &d0));
	assert_false(reserves("0x0", &d0));
	assert_false(reserves("99999999999999999999", &d0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_reserves),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
