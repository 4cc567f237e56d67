/*
 * test_compat.c - the pieces of `jobscope agent --compat` that decide
 * rather than print: the option's list (agent_compat_parse) and which
 * devices a job's scheduler reserved for it (agent_compat_reserves), by
 * index or UUID, the way SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES write
 * them; and the GPU series of what the SMs did as each exporter writes
 * them (names, labels, units), from a hand-made agent state: GPM ratios,
 * violation counters, MIG instances' labels, nothing for a device without
 * GPM.  The series are also checked through a real Prometheus in
 * tests/integration/test_compat.py and against the fake NVML library in
 * tests/integration/test_agent_compat_gpm.py.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
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

	static const char *const bad[] = {
	    "",	       ",",	    "jobstats,", ",dcgm",	  "dcgm,,jobstats",
	    "jobstat", "jobstatsx", "DCGM",	 "dcgm jobstats", "nvidia"};
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
	/* a MIG instance: by its own UUID, never by its parent's index */
	{
		struct gpu_device_info m = dev(0, "MIG-1f2e3d4c-aaaa-bbbb-cccc-000000000000");

		m.mig = true;
		assert_true(reserves("MIG-1f2e3d4c-aaaa-bbbb-cccc-000000000000", &m));
		assert_true(reserves("MIG-1f2e3d4c", &m));
		assert_false(reserves("0", &m));
		assert_false(reserves("GPU-1f2e3d4c-aaaa-bbbb-cccc-000000000000", &m));
	}
	assert_false(reserves("NoDevFiles", &d0));
	assert_false(reserves("-1", &d0));
	assert_false(reserves("0x0", &d0));
	assert_false(reserves("99999999999999999999", &d0));
}

/* ---- the series, from a hand-made agent ---- */

static void device(struct agent *a, int i, int index, const char *uuid, const char *name,
		   const char *bus, int minor)
{
	struct device_record *d = &a->devs[i];

	d->info.index = index;
	snprintf(d->info.uuid, sizeof(d->info.uuid), "%s", uuid);
	snprintf(d->info.name, sizeof(d->info.name), "%s", name);
	snprintf(d->info.pci_bus_id, sizeof(d->info.pci_bus_id), "%s", bus);
	if (minor >= 0) {
		d->info.valid |= GPU_INFO_MINOR;
		d->info.minor_number = (uint32_t)minor;
	}
	snprintf(d->driver_version, sizeof(d->driver_version), "580.65.06");
	snprintf(d->vendor, sizeof(d->vendor), "NVIDIA");
	a->gsample_ok[i] = true;
}

static void has_line(const char *body, const char *line)
{
	if (!strstr(body, line))
		fail_msg("missing line %s in:\n%s", line, body);
}

static void test_render_gpm(void **state)
{
	struct agent *a = calloc(1, sizeof(*a));
	struct agent_opts opt;
	struct strbuf o, lab;
	struct gpu_sample *g;

	(void)state;
	assert_non_null(a);
	memset(&opt, 0, sizeof(opt));
	opt.compat = AGENT_COMPAT_DCGM | AGENT_COMPAT_JOBSTATS;
	a->opt = &opt;
	snprintf(a->hostname, sizeof(a->hostname), "node1");
	a->gpus.ndevices = 4;
	/* 0: GPM, violations, replays, remapped rows */
	device(a, 0, 0, "GPU-0", "NVIDIA H100 80GB HBM3", "00000000:19:00.0", 4);
	g = &a->gsample[0];
	g->valid = GPU_UTIL;
	g->util_pct = 80;
	g->prof_valid = GPU_PROF_GPM | GPU_PROF_VIOL_POWER | GPU_PROF_VIOL_THERMAL |
			GPU_PROF_PCIE_REPLAY | GPU_PROF_REMAPPED_ROWS;
	g->sm_active_pct100 = 6150;
	g->tensor_active_pct100 = 2500;
	g->sm_occupancy_pct100 = 4000;
	g->dram_active_pct100 = 3300;
	g->fp32_active_pct100 = 4500;
	g->viol_power_ns = 1500000000;
	g->pcie_replays = 7;
	g->remapped_rows_corr = 2;
	g->remapped_rows_unc = 1;
	/* 1: a GPU in MIG mode, 2: its instance (GPU instance 3) */
	device(a, 1, 1, "GPU-1", "NVIDIA H100 80GB HBM3", "00000000:3B:00.0", 5);
	a->devs[1].info.mig_enabled = true;
	device(a, 2, 1, "MIG-2", "NVIDIA H100 80GB HBM3 MIG 2g.20gb", "00000000:3B:00.0", -1);
	a->devs[2].info.mig = true;
	a->devs[2].info.mig_parent = 1;
	a->devs[2].info.gpu_instance_id = 3;
	snprintf(a->devs[2].info.mig_profile, sizeof(a->devs[2].info.mig_profile), "2g.20gb");
	a->gsample[2].prof_valid = GPU_PROF_SM_ACTIVE;
	a->gsample[2].sm_active_pct100 = 2000;
	a->gsample[2].valid = GPU_MEM_USED;
	a->gsample[2].mem_used_bytes = 1073741824;
	/* 3: no GPM */
	device(a, 3, 2, "GPU-3", "NVIDIA A100-SXM4-80GB", "00000000:5D:00.0", 7);
	a->gsample[3].valid = GPU_UTIL;
	a->gsample[3].util_pct = 50;

	strbuf_init(&o, 0);
	strbuf_init(&lab, 0);
	agent_render_compat(a, &o, &lab);
	assert_int_equal(strbuf_error(&o), 0);
#define DC0                                                                                        \
	"gpu=\"0\",UUID=\"GPU-0\",pci_bus_id=\"00000000:19:00.0\",device=\"nvidia0\","             \
	"modelName=\"NVIDIA H100 80GB "                                                            \
	"HBM3\",Hostname=\"node1\",DCGM_FI_DRIVER_VERSION=\"580.65.06\""
	has_line(o.buf, "# TYPE DCGM_FI_PROF_SM_ACTIVE gauge\n");
	has_line(o.buf, "\nDCGM_FI_PROF_SM_ACTIVE{" DC0 "} 0.615\n");
	has_line(o.buf, "\nDCGM_FI_PROF_PIPE_TENSOR_ACTIVE{" DC0 "} 0.25\n");
	has_line(o.buf, "\nDCGM_FI_PROF_SM_OCCUPANCY{" DC0 "} 0.4\n");
	has_line(o.buf, "\nDCGM_FI_PROF_DRAM_ACTIVE{" DC0 "} 0.33\n");
	has_line(o.buf, "\nDCGM_FI_PROF_PIPE_FP32_ACTIVE{" DC0 "} 0.45\n");
	has_line(o.buf, "\nDCGM_FI_PROF_PIPE_FP64_ACTIVE{" DC0 "} 0\n");
	has_line(o.buf, "# TYPE DCGM_FI_DEV_POWER_VIOLATION counter\n");
	has_line(o.buf, "\nDCGM_FI_DEV_POWER_VIOLATION{" DC0 "} 1500000000\n");
	has_line(o.buf, "\nDCGM_FI_DEV_THERMAL_VIOLATION{" DC0 "} 0\n");
	has_line(o.buf, "\nDCGM_FI_DEV_PCIE_REPLAY_COUNTER{" DC0 "} 7\n");
	has_line(o.buf, "\nDCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS{" DC0 "} 2\n");
	has_line(o.buf, "\nDCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{" DC0 "} 1\n");
	has_line(o.buf, "\nDCGM_FI_DEV_ROW_REMAP_FAILURE{" DC0 "} 0\n");
	/* the MIG instance: its parent's gpu, UUID, device, modelName; its profile and id */
	has_line(o.buf,
		 "\nDCGM_FI_PROF_SM_ACTIVE{gpu=\"1\",UUID=\"GPU-1\","
		 "pci_bus_id=\"00000000:3B:00.0\",device=\"nvidia1\","
		 "modelName=\"NVIDIA H100 80GB HBM3\",GPU_I_PROFILE=\"2g.20gb\",GPU_I_ID=\"3\","
		 "Hostname=\"node1\",DCGM_FI_DRIVER_VERSION=\"580.65.06\"} 0.2\n");
	has_line(o.buf, "\nDCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-1\",");
	/* no GPM: no series at all, not 0 */
	assert_null(strstr(o.buf, "DCGM_FI_PROF_SM_ACTIVE{gpu=\"2\""));
	assert_null(strstr(o.buf, "DCGM_FI_DEV_SYNC_BOOST_VIOLATION"));
	has_line(o.buf, "\nDCGM_FI_DEV_GPU_UTIL{gpu=\"2\",UUID=\"GPU-3\",");
	/* jobstats: the exporter's GPM series (ratios), GPU_I_ID, the MIG instance's uuid */
#define NV0                                                                                        \
	"ordinal=\"0\",minor_number=\"4\",uuid=\"GPU-0\",name=\"NVIDIA H100 80GB HBM3\","          \
	"GPU_I_ID=\"\",jobid=\"\",userid=\"\""
	has_line(o.buf, "nvidia_gpu_num_devices 3\n");
	has_line(o.buf, "# TYPE nvidia_gpu_sm_util_percent gauge\n");
	has_line(o.buf, "\nnvidia_gpu_sm_util_percent{" NV0 "} 0.615\n");
	has_line(o.buf, "\nnvidia_gpu_any_tensor_util_percent{" NV0 "} 0.25\n");
	has_line(o.buf, "\nnvidia_gpu_dram_bw_util_percent{" NV0 "} 0.33\n");
	has_line(o.buf, "\nnvidia_gpu_duty_cycle{" NV0 "} 80\n");
	has_line(o.buf, "\nnvidia_gpu_sm_util_percent{ordinal=\"1\",minor_number=\"5\","
			"uuid=\"MIG-2\",name=\"NVIDIA H100 80GB HBM3 MIG 2g.20gb\",GPU_I_ID=\"3\","
			"jobid=\"\",userid=\"\"} 0.2\n");
	has_line(o.buf, "\nnvidia_gpu_memory_used_bytes{ordinal=\"1\",minor_number=\"5\","
			"uuid=\"MIG-2\",");
	assert_null(strstr(o.buf, "nvidia_gpu_duty_cycle{ordinal=\"1\""));
	assert_null(strstr(o.buf, "nvidia_gpu_sm_util_percent{ordinal=\"2\""));
#undef DC0
#undef NV0
	strbuf_release(&o);
	strbuf_release(&lab);
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_reserves),
	    cmocka_unit_test(test_render_gpm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
