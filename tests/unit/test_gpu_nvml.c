/*
 * test_gpu_nvml.c - the NVML backend (src/sample/gpu/nvml.c) loading the
 * fake libnvidia-ml (tests/fakes/fake_nvml.c) through $JOBSCOPE_NVML_LIBRARY:
 * the driver-535-like library and the old one whose older names and struct
 * sizes make every fallback run.  Each test writes its scenario file
 * (tests/fakes/scenario.h) into a temporary directory.
 *
 * Process utilization is per window (since the previous call), and the
 * last test runs the reported case through the split (attrib/gpu_share).
 *
 * Time: the fake reads its clock at each call.  Tests that need a moment
 * set the fake's clock (scenario_set_clock, looked up in the loaded fake);
 * one that moves at each call puts a change between two library calls.
 */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "attrib/gpu_share.h"
#include "common/log.h"
#include "sample/gpu/gpu.h"

#define NEW_LIB FAKES_DIR "/libnvidia-ml.so.1"
#define OLD_LIB FAKES_DIR "/libnvidia-ml-old.so"

#define MIB (1024ull * 1024)
/* the fake's driver reserve, which the v1 memory call counts as used */
#define FAKE_MEM_RESERVED (64 * MIB)

#define SAMPLE_METRICS                                                                             \
	(GPU_UTIL | GPU_MEM_UTIL | GPU_MEM_USED | GPU_PCIE | GPU_NVLINK | GPU_POWER | GPU_ENERGY | \
	 GPU_TEMP | GPU_SM_CLOCK | GPU_MEM_CLOCK | GPU_THROTTLE | GPU_ECC)
#define ALL_METRICS (SAMPLE_METRICS | GPU_PROC_MEM | GPU_PROC_UTIL | GPU_PROC_MEM_UTIL | GPU_EVENTS)
/*
 * library calls of one sample() with every metric there: 13, then the
 * violation and PCIe replay fields in one call, the remapped rows (GPM
 * adds 2 on a device that has it)
 */
#define CALLS_PER_SAMPLE 15
/* a device without GPM (the fake's default): violations, replays, remapped rows */
/* the same on a device without NVLink, as most of the scenarios below */
#define CALLS_NO_NVLINK (CALLS_PER_SAMPLE - 1)
#define PROF_NO_GPM	(GPU_PROF_VIOLATIONS | GPU_PROF_PCIE_REPLAY | GPU_PROF_REMAPPED_ROWS)
/* fields 269-271 are not known to the old driver (12.9 added them) */
#define PROF_OLD_DRIVER                                                                            \
	(PROF_NO_GPM & ~(uint32_t)(GPU_PROF_VIOL_SW_THERMAL | GPU_PROF_VIOL_HW_THERMAL |           \
				   GPU_PROF_VIOL_HW_POWER_BRAKE))

static const struct gpu_backend *const nvml = &gpu_backend_nvml;
static char tmpdir[256];
static char scenario_path[300];

/* An A100 with 12 NVLinks and every metric set at t=0. */
static const char a100[] =
    "driver 535.104.05\n"
    "device 0 uuid=GPU-5f3c0e4e-0000 name=\"NVIDIA A100-SXM4-80GB\" bus=00000000:07:00.0 "
    "mem_total=85899345920 power_limit=400000 nvlinks=12\n"
    "at 0 0 util=30 mem_util=20 mem_used=1073741824 pcie_tx_kbps=1000 pcie_rx_kbps=2000 "
    "nvlink_tx_kib=1201 nvlink_rx_kib=2411 power=123456 energy=5000000 temp=55 "
    "sm_clock=1410 mem_clock=1593 throttle=0x24 ecc_sbe=3 ecc_dbe=1\n";

static int group_setup(void **state)
{
	const char *base = getenv("TMPDIR");

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "%s/test_gpu_nvml.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(scenario_path, sizeof(scenario_path), "%s/scenario", tmpdir);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	unlink(scenario_path);
	rmdir(tmpdir);
	return 0;
}

static struct gpu_open_note last_note; /* what the last open_with() was told */

/* Opens the backend on lib with this scenario; the result of open(). */
static int open_with(const char *lib, const char *scenario, void **ctx)
{
	FILE *f = fopen(scenario_path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(scenario, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	setenv("FAKE_GPU_SCENARIO", scenario_path, 1);
	setenv("JOBSCOPE_NVML_LIBRARY", lib, 1);
	return nvml->open(ctx, &last_note);
}

static void *must_open(const char *lib, const char *scenario)
{
	void *ctx = NULL;

	assert_int_equal(open_with(lib, scenario, &ctx), 0);
	assert_non_null(ctx);
	return ctx;
}

/* The fake's clock reads t from now on, and moves step seconds at each library call. */
static void fake_clock(const char *lib, double t, double step)
{
	void *dl = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
	void (*set_clock)(double, double);

	assert_non_null(dl);
	*(void **)&set_clock = dlsym(dl, "scenario_set_clock");
	assert_non_null(set_clock);
	set_clock(t, step);
	dlclose(dl);
}

static uint64_t sample_calls(void *ctx, int index, struct gpu_sample *s, int expect_ret)
{
	uint64_t before = nvml->calls(ctx);

	assert_int_equal(nvml->sample(ctx, index, s), expect_ret);
	return nvml->calls(ctx) - before;
}

static const struct gpu_proc *find_proc(const struct gpu_proc *p, size_t n, uint32_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (p[i].pid == pid)
			return &p[i];
	fail_msg("pid %u not in the list", pid);
	return NULL;
}

/* ---- device info and values ---- */

static void check_a100_info(const char *lib, const char *library_version, uint32_t prof)
{
	void *ctx = must_open(lib, a100);
	struct gpu_device_info info;
	char driver[GPU_VERSION_MAX], library[GPU_VERSION_MAX];
	int n = -1;

	assert_int_equal(nvml->count(ctx, &n), 0);
	assert_int_equal(n, 1);
	nvml->versions(ctx, driver, sizeof(driver), library, sizeof(library));
	assert_string_equal(driver, "535.104.05");
	assert_string_equal(library, library_version);

	memset(&info, 0xAA, sizeof(info));
	assert_int_equal(nvml->info(ctx, 0, &info), 0);
	assert_int_equal(info.index, 0);
	assert_string_equal(info.uuid, "GPU-5f3c0e4e-0000");
	assert_string_equal(info.name, "NVIDIA A100-SXM4-80GB");
	assert_string_equal(info.pci_bus_id, "00000000:07:00.0");
	assert_int_equal(info.valid, GPU_INFO_MEM_TOTAL | GPU_INFO_POWER_LIMIT | GPU_INFO_NVLINKS |
					 GPU_INFO_MINOR);
	assert_int_equal(info.minor_number, 0); /* the scenario's default: the index */
	assert_int_equal(info.mem_total_bytes, 85899345920ull);
	assert_int_equal(info.power_limit_mw, 400000);
	assert_int_equal(info.nvlink_count, 12);
	assert_int_equal(info.supported, ALL_METRICS);
	assert_int_equal(info.prof_supported, prof);
	assert_false(info.mig_enabled);
	assert_false(info.mig);

	assert_int_equal(nvml->info(ctx, 1, &info), -ENODEV);
	assert_int_equal(nvml->info(ctx, -1, &info), -ENODEV);
	nvml->close(ctx);
}

static void test_info(void **state)
{
	(void)state;
	check_a100_info(NEW_LIB, "12.535.104.05", PROF_NO_GPM);
}

/* nvmlDeviceGetMinorNumber: /dev/nvidiaN, which need not be the index; NOT_SUPPORTED: unknown */
static void test_minor_number(void **state)
{
	static const char two[] = "driver 580.65.06\n"
				  "device 0 uuid=GPU-m0 mem_total=1024 minor=7\n"
				  "device 1 uuid=GPU-m1 mem_total=1024 minor=-1\n";
	struct gpu_device_info info;
	void *ctx;

	(void)state;
	ctx = must_open(NEW_LIB, two);
	assert_int_equal(nvml->info(ctx, 0, &info), 0);
	assert_true(info.valid & GPU_INFO_MINOR);
	assert_int_equal(info.minor_number, 7);
	assert_int_equal(nvml->info(ctx, 1, &info), 0);
	assert_false(info.valid & GPU_INFO_MINOR);
	assert_string_equal(info.uuid, "GPU-m1"); /* the device stays */
	nvml->close(ctx);
}

/* nvmlInit, GetCount, GetHandleByIndex, GetPciInfo (legacy id), PowerManagementLimit */
static void test_info_old_driver(void **state)
{
	(void)state;
	check_a100_info(OLD_LIB, "12.535.104.05", PROF_OLD_DRIVER);
}

static void check_a100_sample(const char *lib, uint64_t mem_used)
{
	void *ctx = must_open(lib, a100);
	struct gpu_sample s;

	memset(&s, 0xAA, sizeof(s));
	assert_int_equal(sample_calls(ctx, 0, &s, 0), CALLS_PER_SAMPLE);
	assert_int_equal(s.valid, SAMPLE_METRICS);
	assert_int_equal(s.util_pct, 30);
	assert_int_equal(s.mem_util_pct, 20);
	assert_int_equal(s.mem_used_bytes, mem_used);
	assert_int_equal(s.pcie_tx_bps, 1000 * 1024);
	assert_int_equal(s.pcie_rx_bps, 2000 * 1024);
	assert_int_equal(s.nvlink_tx_bytes, 1201 * 1024);
	assert_int_equal(s.nvlink_rx_bytes, 2411 * 1024);
	assert_int_equal(s.power_mw, 123456);
	assert_int_equal(s.energy_mj, 5000000);
	assert_int_equal(s.temp_c, 55);
	assert_int_equal(s.sm_clock_mhz, 1410);
	assert_int_equal(s.mem_clock_mhz, 1593);
	assert_int_equal(s.throttle_reasons, GPU_THROTTLE_SW_POWER | GPU_THROTTLE_SW_THERMAL);
	assert_int_equal(s.ecc_corrected, 3);
	assert_int_equal(s.ecc_uncorrected, 1);
	assert_int_equal(s.prof_valid & GPU_PROF_GPM, 0);
	nvml->close(ctx);
}

/* Units: KB/s and KiB become bytes, the rest as NVML gives them. */
static void test_sample(void **state)
{
	(void)state;
	check_a100_sample(NEW_LIB, 1024 * MIB);
}

/*
 * GetMemoryInfo v1 (whose "used" includes the driver's reserve),
 * ThrottleReasons, and NVLink one entry per link (scopeId UINT_MAX
 * refused), summed: 1201 KiB over 12 links is 101 + 11 x 100.
 */
static void test_sample_old_driver(void **state)
{
	(void)state;
	check_a100_sample(OLD_LIB, 1024 * MIB + FAKE_MEM_RESERVED);
}

/* Values follow the scenario's steps; a counter going backwards is reported as it is. */
static void test_values_over_time(void **state)
{
	void *ctx = must_open(NEW_LIB, "device 0\n"
				       "at 0 0 util=10 energy=5000000 temp=40\n"
				       "at 10 0 util=90 energy=1000\n");
	struct gpu_sample s;

	(void)state;
	fake_clock(NEW_LIB, 5, 0);
	assert_int_equal(nvml->sample(ctx, 0, &s), 0);
	assert_int_equal(s.util_pct, 10);
	assert_int_equal(s.energy_mj, 5000000);
	fake_clock(NEW_LIB, 11, 0);
	assert_int_equal(nvml->sample(ctx, 0, &s), 0);
	assert_int_equal(s.util_pct, 90);
	assert_true(s.valid & GPU_ENERGY);
	assert_int_equal(s.energy_mj, 1000);
	assert_int_equal(s.temp_c, 40);
	nvml->close(ctx);
}

/* No NVLink: not asked per tick, not "0 bytes". */
static void test_no_nvlink(void **state)
{
	void *ctx = must_open(NEW_LIB, "device 0 mem_total=1000\nat 0 0 util=1\n");
	struct gpu_device_info info;
	struct gpu_sample s;

	(void)state;
	assert_int_equal(nvml->info(ctx, 0, &info), 0);
	assert_true(info.valid & GPU_INFO_NVLINKS);
	assert_int_equal(info.nvlink_count, 0);
	assert_int_equal(info.supported, ALL_METRICS & ~GPU_NVLINK);
	assert_int_equal(sample_calls(ctx, 0, &s, 0), CALLS_PER_SAMPLE - 1);
	assert_int_equal(s.valid, SAMPLE_METRICS & ~GPU_NVLINK);
	nvml->close(ctx);
}

/* ---- NOT_SUPPORTED, one metric at a time ---- */

static const struct {
	const char *name; /* the scenario's metric */
	uint32_t metrics; /* what it turns off */
	uint32_t info_valid_lost;
	uint64_t calls_saved; /* per sample() */
} unsupported_cases[] = {
    {"util", GPU_UTIL | GPU_MEM_UTIL, 0, 1},
    {"mem_used", GPU_MEM_USED, GPU_INFO_MEM_TOTAL, 1},
    {"pcie", GPU_PCIE, 0, 2},
    {"nvlink", GPU_NVLINK, 0, 1},
    {"power", GPU_POWER, GPU_INFO_POWER_LIMIT, 1},
    {"energy", GPU_ENERGY, 0, 1},
    {"temp", GPU_TEMP, 0, 1},
    {"clocks", GPU_SM_CLOCK | GPU_MEM_CLOCK, 0, 2},
    {"throttle", GPU_THROTTLE, 0, 1},
    {"ecc", GPU_ECC, 0, 2},
    {"procs", GPU_PROC_MEM, 0, 0},
    {"proc_util", GPU_PROC_UTIL | GPU_PROC_MEM_UTIL, 0, 0},
    {"events", GPU_EVENTS, 0, 0},
};

/*
 * Each metric the driver answers NOT_SUPPORTED for is off in `supported`
 * and in every sample, the others stay, and it is not asked again.
 */
static void check_unsupported(const char *lib)
{
	for (size_t i = 0; i < sizeof(unsupported_cases) / sizeof(unsupported_cases[0]); i++) {
		char scenario[1024];
		struct gpu_device_info info;
		struct gpu_sample s;
		void *ctx;

		snprintf(scenario, sizeof(scenario), "%sunsupported 0 %s\n", a100,
			 unsupported_cases[i].name);
		ctx = must_open(lib, scenario);
		assert_int_equal(nvml->info(ctx, 0, &info), 0);
		assert_int_equal(info.supported, ALL_METRICS & ~unsupported_cases[i].metrics);
		assert_int_equal(info.valid, (GPU_INFO_MEM_TOTAL | GPU_INFO_POWER_LIMIT |
					      GPU_INFO_NVLINKS | GPU_INFO_MINOR) &
						 ~unsupported_cases[i].info_valid_lost);
		for (int tick = 0; tick < 2; tick++) {
			assert_int_equal(sample_calls(ctx, 0, &s, 0),
					 CALLS_PER_SAMPLE - unsupported_cases[i].calls_saved);
			assert_int_equal(s.valid, SAMPLE_METRICS & ~unsupported_cases[i].metrics);
		}
		nvml->close(ctx);
	}
}

static void test_unsupported_metrics(void **state)
{
	(void)state;
	check_unsupported(NEW_LIB);
}

static void test_unsupported_metrics_old_driver(void **state)
{
	(void)state;
	check_unsupported(OLD_LIB);
}

/* ---- opening ---- */

/* A real failure (library and kernel module of different versions): one warning. */
static void test_init_error(void **state)
{
	const char *libs[] = {NEW_LIB, OLD_LIB};

	(void)state;
	for (int i = 0; i < 2; i++) {
		char expect[512], line[512];
		FILE *log = tmpfile();
		void *ctx = (void *)1;

		assert_non_null(log);
		log_set_file(log);
		assert_int_equal(
		    open_with(libs[i], "init_say \"NVRM: API mismatch\"\ninit_error 18\n", &ctx),
		    -ENODEV);
		log_set_file(NULL);
		assert_null(ctx);
		rewind(log);
		snprintf(expect, sizeof(expect),
			 "jobscope: warning: NVIDIA library %s loaded but cannot start: RM has "
			 "detected an NVML/RM version mismatch. (18); going on without NVIDIA "
			 "GPUs; it said: NVRM: API mismatch\n",
			 libs[i]);
		assert_non_null(fgets(line, sizeof(line), log));
		assert_string_equal(line, expect);
		assert_null(fgets(line, sizeof(line), log)); /* one line only */
		assert_int_equal(last_note.state, GPU_LIB_FAILED);
		assert_string_equal(last_note.detail,
				    "RM has detected an NVML/RM version mismatch. (18)");
		fclose(log);
	}
}

/*
 * Driver not loaded (the library on a machine without an NVIDIA GPU):
 * -ENXIO and nothing said at the default level; at debug level, the fact.
 */
static void test_driver_not_loaded(void **state)
{
	const char *libs[] = {NEW_LIB, OLD_LIB};

	(void)state;
	assert_true(gpu_nvml_means_no_gpu(9));
	assert_false(gpu_nvml_means_no_gpu(0));
	assert_false(gpu_nvml_means_no_gpu(4));	 /* NO_PERMISSION: a fault */
	assert_false(gpu_nvml_means_no_gpu(18)); /* LIB_RM_VERSION_MISMATCH */
	assert_false(gpu_nvml_means_no_gpu(999));
	for (int i = 0; i < 2; i++) {
		char expect[512], line[512];
		FILE *log = tmpfile();
		void *ctx = (void *)1;

		assert_non_null(log);
		log_set_file(log);
		assert_int_equal(open_with(libs[i], "no_gpu\ndevice 0\n", &ctx), -ENXIO);
		assert_null(ctx);
		assert_int_equal(ftell(log), 0);
		assert_int_equal(last_note.state, GPU_LIB_NO_GPU);
		assert_string_equal(last_note.library, libs[i]);
		assert_string_equal(last_note.detail, "no driver loaded: no NVIDIA GPU");
		assert_string_equal(last_note.said, "");
		/* the same as init_error 9 */
		assert_int_equal(open_with(libs[i], "init_error 9\n", &ctx), -ENXIO);
		assert_int_equal(ftell(log), 0);

		log_set_level(LOG_DEBUG);
		assert_int_equal(open_with(libs[i], "no_gpu\n", &ctx), -ENXIO);
		log_set_level(LOG_INFO);
		log_set_file(NULL);
		rewind(log);
		snprintf(expect, sizeof(expect),
			 "jobscope: debug: NVIDIA: %s found, no driver loaded: no NVIDIA GPU "
			 "(nvmlInit: Driver Not Loaded, 9)\n",
			 libs[i]);
		assert_non_null(fgets(line, sizeof(line), log));
		assert_string_equal(line, expect);
		assert_null(fgets(line, sizeof(line), log));
		fclose(log);
	}
}

static void test_missing_library(void **state)
{
	char path[512], line[256];
	FILE *log = tmpfile();
	void *ctx = (void *)1;

	(void)state;
	assert_non_null(log);
	snprintf(path, sizeof(path), "%s/libnvidia-ml.so.1", tmpdir);
	log_set_file(log);
	assert_int_equal(open_with(path, "device 0\n", &ctx), -ENOENT);
	log_set_file(NULL);
	assert_null(ctx);
	assert_int_equal(last_note.state, GPU_LIB_ABSENT);
	assert_string_equal(last_note.library, path);
	rewind(log);
	assert_null(fgets(line, sizeof(line), log));
	fclose(log);
}

static void test_no_devices(void **state)
{
	void *ctx = must_open(NEW_LIB, "driver 550.54.15\n");
	struct gpu_event ev[4];
	struct gpu_sample s;
	struct gpu_proc p[4];
	size_t n = 99;
	int count = -1;
	uint64_t calls;

	(void)state;
	assert_int_equal(last_note.state, GPU_LIB_NO_GPU);
	assert_string_equal(last_note.detail, "no NVIDIA GPU");
	assert_int_equal(nvml->count(ctx, &count), 0);
	assert_int_equal(count, 0);
	assert_int_equal(nvml->sample(ctx, 0, &s), -ENODEV);
	assert_int_equal(nvml->processes(ctx, 0, p, 4, &n), -ENODEV);
	assert_int_equal(n, 0);
	calls = nvml->calls(ctx);
	assert_int_equal(nvml->events(ctx, ev, 4, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(nvml->calls(ctx), calls); /* no event set to poll */
	nvml->close(ctx);
}

/* ---- processes ---- */

/*
 * pid 100 is in both lists (memory summed, graphics); pid 101's memory is
 * NVML_VALUE_NOT_AVAILABLE; pid 102 has no utilization sample: in a window
 * with samples it used none of the SM's sampled time (0%, known).  The
 * fake samples every 100 ms and lists some processes' samples newest
 * first.
 */
static const char procs_scenario[] = "device 0\n"
				     "at 0 0 util=50\n"
				     "proc 0 pid=100 mem=1048576 sm=50 memutil=20\n"
				     "proc 0 pid=101 mem=0xFFFFFFFFFFFFFFFF sm=10 memutil=5\n"
				     "proc 0 pid=100 mem=2097152 graphics=1\n"
				     "proc 0 pid=102 mem=4194304 graphics=1\n";

static void check_processes(const char *lib)
{
	void *ctx = must_open(lib, procs_scenario);
	struct gpu_proc p[8];
	const struct gpu_proc *q;
	size_t n = 0;

	fake_clock(lib, 1, 0);
	assert_int_equal(nvml->processes(ctx, 0, p, 8, &n), 0);
	assert_int_equal(n, 3);

	q = find_proc(p, n, 100);
	assert_int_equal(q->valid, GPU_PROC_MEM | GPU_PROC_UTIL | GPU_PROC_MEM_UTIL);
	assert_int_equal(q->mem_bytes, 3 * MIB);
	assert_int_equal(q->sm_util_pct, 50);
	assert_int_equal(q->mem_util_pct, 20);
	assert_true(q->graphics);

	q = find_proc(p, n, 101);
	assert_int_equal(q->valid, GPU_PROC_UTIL | GPU_PROC_MEM_UTIL);
	assert_int_equal(q->mem_bytes, 0);
	assert_int_equal(q->sm_util_pct, 10);
	assert_int_equal(q->mem_util_pct, 5);
	assert_false(q->graphics);

	q = find_proc(p, n, 102);
	assert_int_equal(q->valid, GPU_PROC_MEM | GPU_PROC_UTIL | GPU_PROC_MEM_UTIL);
	assert_int_equal(q->mem_bytes, 4 * MIB);
	assert_int_equal(q->sm_util_pct, 0);
	assert_true(q->graphics);
	assert_false(q->gone);

	/* at most max */
	assert_int_equal(nvml->processes(ctx, 0, p, 2, &n), 0);
	assert_int_equal(n, 2);
	nvml->close(ctx);
}

static void test_processes(void **state)
{
	(void)state;
	check_processes(NEW_LIB);
}

/* compute: unsuffixed call, 16-byte entries; graphics: _v2, 24-byte entries */
static void test_processes_old_driver(void **state)
{
	(void)state;
	check_processes(OLD_LIB);
}

/* No sample newer than the last seen (NOT_FOUND): no utilization, which is not 0%. */
static void test_process_utilization_not_found(void **state)
{
	void *ctx = must_open(NEW_LIB, procs_scenario);
	struct gpu_proc p[8];
	size_t n = 0;

	(void)state;
	fake_clock(NEW_LIB, 5, 0);
	assert_int_equal(nvml->processes(ctx, 0, p, 8, &n), 0);
	assert_int_equal(find_proc(p, n, 100)->valid,
			 GPU_PROC_MEM | GPU_PROC_UTIL | GPU_PROC_MEM_UTIL);

	assert_int_equal(nvml->processes(ctx, 0, p, 8, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(find_proc(p, n, 100)->valid, GPU_PROC_MEM);
	assert_int_equal(find_proc(p, n, 100)->sm_util_pct, 0);
	assert_int_equal(find_proc(p, n, 101)->valid, 0);

	fake_clock(NEW_LIB, 6, 0);
	assert_int_equal(nvml->processes(ctx, 0, p, 8, &n), 0);
	assert_int_equal(find_proc(p, n, 100)->valid,
			 GPU_PROC_MEM | GPU_PROC_UTIL | GPU_PROC_MEM_UTIL);
	assert_int_equal(find_proc(p, n, 100)->sm_util_pct, 50);
	nvml->close(ctx);
}

/*
 * The clock moves 1 s at each call, and the first processes() asks the
 * count first (t=1, three processes) then reads (t=2): two have exited.
 */
static void test_process_list_shrinks(void **state)
{
	void *ctx = must_open(NEW_LIB, "device 0\n"
				       "proc 0 pid=300 mem=1048576\n"
				       "proc 0 pid=301 mem=1048576 until=1.5\n"
				       "proc 0 pid=302 mem=1048576 until=1.5\n");
	struct gpu_proc p[8];
	size_t n = 0;

	(void)state;
	fake_clock(NEW_LIB, 1, 1);
	assert_int_equal(nvml->processes(ctx, 0, p, 8, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].pid, 300);
	assert_int_equal(p[0].mem_bytes, MIB);
	nvml->close(ctx);
}

/* Count 1 at t=1, 3 at t=2 (INSUFFICIENT_SIZE again): the third call reads all three. */
static void test_process_list_grows(void **state)
{
	void *ctx = must_open(OLD_LIB, "device 0\n"
				       "proc 0 pid=400 mem=1048576\n"
				       "proc 0 pid=401 mem=2097152 from=1.5\n"
				       "proc 0 pid=402 mem=3145728 from=1.5\n");
	struct gpu_proc p[8];
	size_t n = 0;

	(void)state;
	fake_clock(OLD_LIB, 1, 1);
	assert_int_equal(nvml->processes(ctx, 0, p, 8, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(find_proc(p, n, 401)->mem_bytes, 2 * MIB);
	assert_int_equal(find_proc(p, n, 402)->mem_bytes, 3 * MIB);
	nvml->close(ctx);
}

/* A list that grows at every call: a few tries, then nothing this time; no loop, no crash. */
static void test_process_list_keeps_changing(void **state)
{
	void *ctx = must_open(NEW_LIB, "device 0\n"
				       "proc 0 pid=500 mem=1\n"
				       "proc 0 pid=501 mem=1 from=1.5\n"
				       "proc 0 pid=502 mem=1 from=2.5\n"
				       "proc 0 pid=503 mem=1 from=3.5\n"
				       "proc 0 pid=504 mem=1 from=4.5\n"
				       "proc 0 pid=505 mem=1 from=5.5\n"
				       "proc 0 pid=506 mem=1 from=6.5\n"
				       "proc 0 pid=507 mem=1 from=7.5\n");
	struct gpu_proc p[16];
	uint64_t calls;
	size_t n = 99;

	(void)state;
	fake_clock(NEW_LIB, 1, 1);
	calls = nvml->calls(ctx);
	assert_int_equal(nvml->processes(ctx, 0, p, 16, &n), 0);
	assert_int_equal(n, 0);
	/*
	 * 4 tries of the compute list, 1 of the (empty) graphics list, and
	 * utilization all the same: the window must not be left behind
	 */
	assert_int_equal(nvml->calls(ctx) - calls, 6);

	fake_clock(NEW_LIB, 20, 0);
	assert_int_equal(nvml->processes(ctx, 0, p, 16, &n), 0);
	assert_int_equal(n, 8);
	nvml->close(ctx);
}

/*
 * The window of each call: pid 600 on the device all along at 80%, pid
 * 601 from t=1.05 to 1.55 at 80%; the driver samples every 100 ms.
 */
static void test_process_utilization_window(void **state)
{
	void *ctx = must_open(NEW_LIB, "device 0 proc_sample_ms=100\n"
				       "proc 0 pid=600 mem=1048576 sm=80 memutil=40\n"
				       "proc 0 pid=601 mem=2097152 sm=80 memutil=20 from=1.05 "
				       "until=1.55\n");
	struct gpu_proc p[8];
	const struct gpu_proc *q;
	size_t n = 0;

	(void)state;
	fake_clock(NEW_LIB, 1.0, 0);
	assert_int_equal(nvml->processes(ctx, 0, p, 8, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(find_proc(p, n, 600)->sm_util_pct, 80);

	/* (1.0, 1.2]: samples at 1.1 and 1.2; 601 was there for half of the first */
	fake_clock(NEW_LIB, 1.2, 0);
	assert_int_equal(nvml->processes(ctx, 0, p, 8, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(find_proc(p, n, 600)->sm_util_pct, 80);
	q = find_proc(p, n, 601);
	assert_int_equal(q->valid, GPU_PROC_MEM | GPU_PROC_UTIL | GPU_PROC_MEM_UTIL);
	assert_int_equal(q->sm_util_pct, 60);  /* (40 + 80) / 2 */
	assert_int_equal(q->mem_util_pct, 15); /* (10 + 20) / 2 */
	assert_int_equal(q->mem_bytes, 2 * MIB);

	/*
	 * (1.2, 1.6]: 601 left at 1.55, in no list now, but its samples at
	 * 1.3, 1.4, 1.5 and half of 1.6 are the window's: it is there, gone,
	 * without memory
	 */
	fake_clock(NEW_LIB, 1.6, 0);
	assert_int_equal(nvml->processes(ctx, 0, p, 8, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(find_proc(p, n, 600)->sm_util_pct, 80);
	assert_false(find_proc(p, n, 600)->gone);
	q = find_proc(p, n, 601);
	assert_true(q->gone);
	assert_int_equal(q->valid, GPU_PROC_UTIL | GPU_PROC_MEM_UTIL);
	assert_int_equal(q->sm_util_pct, 70); /* (80 + 80 + 80 + 40) / 4 */

	/* nothing newer: no utilization (not 0%), and 601 is no more */
	assert_int_equal(nvml->processes(ctx, 0, p, 8, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].valid, GPU_PROC_MEM);

	/* a gone process does not fit: dropped, the listed ones kept */
	fake_clock(NEW_LIB, 1.0, 0);
	nvml->close(ctx);
	ctx = must_open(NEW_LIB, "device 0\n"
				 "proc 0 pid=610 mem=1 sm=10\n"
				 "proc 0 pid=611 mem=1 sm=10 until=0.5\n");
	fake_clock(NEW_LIB, 0.9, 0);
	assert_int_equal(nvml->processes(ctx, 0, p, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].pid, 610);
	assert_int_equal(p[0].sm_util_pct, 10);
	nvml->close(ctx);
}

/*
 * The reported case, end to end on the library: a job alone on a 350 W
 * GPU (0 W without it) for 2 s, from t=1.05 (between two 200 ms ticks) to
 * 3.05.  Through the energy counter, the process lists, the window's
 * samples and the split, the job gets all 700 J: the first interval (it
 * appeared in it) and the last (it left in it: its samples only) too.
 */
static void test_job_alone_energy(void **state)
{
	void *ctx = must_open(NEW_LIB, "device 0 proc_sample_ms=100\n"
				       "at 0 0 power=0\n"
				       "proc 0 pid=700 mem=1073741824 sm=90 from=1.05 until=3.05 "
				       "power=350000\n");
	struct ptree_proc tree_entry;
	struct gpu_set_proc gp[4];
	struct gpu_set_procs procs = {.proc = gp, .max = 4};
	struct gpu_proc scratch[4];
	struct gpu_share_device acct;
	struct gpu_sample s, prev;
	struct jobs t;
	bool ok[1] = {true};
	int64_t prev_ms = 0;
	double mj[1];

	(void)state;
	memset(&t, 0, sizeof(t));
	memset(&tree_entry, 0, sizeof(tree_entry));
	memset(&acct, 0, sizeof(acct));
	t.job = calloc(1, sizeof(*t.job));
	assert_non_null(t.job);
	t.njobs = 1;
	tree_entry.tag = 1; /* the job's process */
	for (int tick = 0; tick <= 14; tick++) {
		int64_t ms = 800 + 200 * tick;
		size_t n = 0;

		fake_clock(NEW_LIB, (double)ms / 1000.0, 0);
		assert_int_equal(nvml->sample(ctx, 0, &s), 0);
		assert_int_equal(nvml->processes(ctx, 0, scratch, 4, &n), 0);
		procs.n = 0;
		for (size_t k = 0; k < n; k++)
			gp[procs.n++] = (struct gpu_set_proc){
			    0, scratch[k].pid == 700 ? &tree_entry : NULL, scratch[k]};
		mj[0] = gpu_share_energy_delta_mj(&s, tick ? &prev : NULL, ms - prev_ms);
		gpu_share_jobs_account(&t, 1, ok, &procs, mj, &acct);
		prev = s;
		prev_ms = ms;
	}
	assert_int_equal(s.energy_mj, 700000); /* the device: 350 W x 2 s */
	assert_float_equal(t.job[0].gpu[0].energy_mj, 700000.0, 1.0);
	assert_float_equal(acct.jobs_mj, 700000.0, 1.0);
	assert_true(acct.others_mj == 0 && acct.unattributed_mj == 0);
	free(t.job);
	nvml->close(ctx);
}

/* ---- events and lost devices ---- */

static void check_xid_events(const char *lib)
{
	void *ctx = must_open(lib, "device 0\ndevice 1\n"
				   "xid 0 at=5 code=79\n"
				   "xid 0 at=6 code=48\n"
				   "xid 1 at=5.5 code=31\n");
	struct gpu_event ev[8];
	uint64_t calls;
	size_t n = 99;

	fake_clock(lib, 1, 0);
	calls = nvml->calls(ctx);
	assert_int_equal(nvml->events(ctx, ev, 8, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(nvml->calls(ctx) - calls, 1); /* one poll: TIMEOUT */

	fake_clock(lib, 5.7, 0);
	assert_int_equal(nvml->events(ctx, ev, 8, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(ev[0].index, 0);
	assert_int_equal(ev[0].kind, GPU_EVENT_XID);
	assert_int_equal(ev[0].data, 79);
	assert_string_equal(ev[0].message, "XID 79 on GPU 0");
	assert_int_equal(ev[1].index, 1);
	assert_int_equal(ev[1].kind, GPU_EVENT_XID);
	assert_int_equal(ev[1].data, 31);
	assert_string_equal(ev[1].message, "XID 31 on GPU 1");

	/* once only */
	assert_int_equal(nvml->events(ctx, ev, 8, &n), 0);
	assert_int_equal(n, 0);

	/* at most max; the rest waits for the next call */
	fake_clock(lib, 7, 0);
	assert_int_equal(nvml->events(ctx, ev, 0, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(nvml->events(ctx, ev, 8, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].data, 48);
	nvml->close(ctx);
}

static void test_xid_events(void **state)
{
	(void)state;
	check_xid_events(NEW_LIB);
}

/* nvmlEventSetWait without _v2 */
static void test_xid_events_old_driver(void **state)
{
	(void)state;
	check_xid_events(OLD_LIB);
}

/*
 * GPU 0 falls off the bus at t=10: its sample and processes say -ENODEV
 * and make no more calls, events() tells it once, GPU 1 goes on.
 */
static void test_gpu_lost(void **state)
{
	void *ctx = must_open(NEW_LIB, "device 0 nvlinks=4\ndevice 1\n"
				       "at 0 0 util=10\nat 0 1 util=20\n"
				       "proc 0 pid=600 mem=1 sm=1\n"
				       "xid 0 at=10 code=79\n"
				       "lost 0 at=10\n");
	struct gpu_event ev[8];
	struct gpu_sample s;
	struct gpu_proc p[8];
	size_t n = 99;

	(void)state;
	fake_clock(NEW_LIB, 1, 0);
	assert_int_equal(nvml->sample(ctx, 0, &s), 0);
	assert_int_equal(s.util_pct, 10);

	fake_clock(NEW_LIB, 11, 0);
	assert_int_equal(sample_calls(ctx, 0, &s, -ENODEV), 1);
	assert_int_equal(s.valid, 0);
	assert_int_equal(sample_calls(ctx, 0, &s, -ENODEV), 0);
	assert_int_equal(nvml->processes(ctx, 0, p, 8, &n), -ENODEV);
	assert_int_equal(n, 0);

	assert_int_equal(nvml->events(ctx, ev, 8, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(ev[0].index, 0);
	assert_int_equal(ev[0].kind, GPU_EVENT_LOST);
	assert_int_equal(ev[1].kind, GPU_EVENT_XID);
	assert_int_equal(ev[1].data, 79);
	/* the driver now answers GPU_IS_LOST to the wait: nothing, no loop */
	assert_int_equal(nvml->events(ctx, ev, 8, &n), 0);
	assert_int_equal(n, 0);

	assert_int_equal(nvml->sample(ctx, 1, &s), 0);
	assert_int_equal(s.util_pct, 20);
	nvml->close(ctx);
}

/* Lost before open: the device is left out, the others are there. */
static void test_gpu_lost_at_open(void **state)
{
	void *ctx = must_open(NEW_LIB, "device 0\ndevice 1\nlost 0 at=0\n");
	struct gpu_device_info info;
	struct gpu_sample s;
	int n = 0;

	(void)state;
	assert_int_equal(nvml->count(ctx, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(nvml->info(ctx, 0, &info), -ENODEV);
	assert_int_equal(nvml->sample(ctx, 0, &s), -ENODEV);
	assert_int_equal(nvml->info(ctx, 1, &info), 0);
	assert_string_equal(info.uuid, "GPU-fake-0001");
	nvml->close(ctx);
}

/* ---- what the SMs did: GPM ---- */

/* The H100: every GPM value, a power violation half of the time. */
static const char h100[] =
    "driver 580.65.06\n"
    "device 0 uuid=GPU-aaaa name=\"NVIDIA H100 80GB HBM3\" mem_total=85899345920 gpm=1\n"
    "at 0 0 sm_active=61.5 sm_occupancy=40 tensor=25 dfma=0 hmma=25 imma=0 dram=33 fp64=0 "
    "fp32=45 fp16=10 gr_active=70 viol_power=0.5\n";

/* numMetrics of the fake's last nvmlGpmMetricsGet */
static unsigned int fake_gpm_num_metrics(const char *lib)
{
	void *dl = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
	unsigned int (*last)(void);
	unsigned int n;

	assert_non_null(dl);
	*(void **)&last = dlsym(dl, "fake_nvml_gpm_last_num_metrics");
	assert_non_null(last);
	n = last();
	dlclose(dl);
	return n;
}

static void check_h100_gpm(const char *scenario)
{
	void *ctx = must_open(NEW_LIB, scenario);
	struct gpu_device_info info;
	struct gpu_sample s;

	assert_int_equal(nvml->info(ctx, 0, &info), 0);
	assert_int_equal(info.prof_supported, PROF_NO_GPM | GPU_PROF_GPM);
	/* the first tick takes the first GPM sample: no values yet */
	fake_clock(NEW_LIB, 1, 0);
	assert_int_equal(sample_calls(ctx, 0, &s, 0), CALLS_NO_NVLINK + 1);
	assert_int_equal(s.prof_valid & GPU_PROF_GPM, 0);
	fake_clock(NEW_LIB, 3, 0);
	assert_int_equal(sample_calls(ctx, 0, &s, 0), CALLS_NO_NVLINK + 2);
	assert_int_equal(s.prof_valid, PROF_NO_GPM | GPU_PROF_GPM);
	assert_int_equal(s.sm_active_pct100, 6150);
	assert_int_equal(s.sm_occupancy_pct100, 4000);
	assert_int_equal(s.tensor_active_pct100, 2500);
	assert_int_equal(s.dfma_tensor_active_pct100, 0);
	assert_int_equal(s.hmma_tensor_active_pct100, 2500);
	assert_int_equal(s.imma_tensor_active_pct100, 0);
	assert_int_equal(s.dram_active_pct100, 3300);
	assert_int_equal(s.fp64_active_pct100, 0);
	assert_int_equal(s.fp32_active_pct100, 4500);
	assert_int_equal(s.fp16_active_pct100, 1000);
	assert_int_equal(s.gr_active_pct100, 7000);
	/* one MetricsGet for the eleven, numMetrics eleven */
	assert_int_equal(fake_gpm_num_metrics(NEW_LIB), 11);
	nvml->close(ctx);
}

/* The driver built with NVML_GPM_METRIC_MAX 98, 210 or 333: the same values. */
static void test_gpm_values(void **state)
{
	static const char *const max[] = {"", " gpm_metric_max=98", " gpm_metric_max=210",
					  " gpm_metric_max=333"};

	(void)state;
	for (size_t i = 0; i < sizeof(max) / sizeof(max[0]); i++) {
		char scenario[1024];
		const char *gpm = strstr(h100, "gpm=1");

		/* the device line with its gpm_metric_max */
		snprintf(scenario, sizeof(scenario), "%.*s%s%s", (int)(gpm - h100 + 5), h100,
			 max[i], gpm + 5);
		check_h100_gpm(scenario);
	}
}

/*
 * A step mid-interval: the value over [a, b] is the step function's time
 * average, for each pair of consecutive ticks.
 */
static void test_gpm_step_average(void **state)
{
	void *ctx = must_open(NEW_LIB, "device 0 gpm=1\n"
				       "at 0 0 sm_active=60 dram=10\n"
				       "at 5 0 sm_active=80\n"
				       "at 5.5 0 dram=30\n");
	struct gpu_sample s;

	(void)state;
	fake_clock(NEW_LIB, 3, 0);
	assert_int_equal(nvml->sample(ctx, 0, &s), 0);
	fake_clock(NEW_LIB, 5.5, 0);
	assert_int_equal(nvml->sample(ctx, 0, &s), 0);
	/* (60 x 2 + 80 x 0.5) / 2.5 = 64; dram 10 throughout */
	assert_int_equal(s.sm_active_pct100, 6400);
	assert_int_equal(s.dram_active_pct100, 1000);
	fake_clock(NEW_LIB, 7.5, 0);
	assert_int_equal(nvml->sample(ctx, 0, &s), 0);
	assert_int_equal(s.sm_active_pct100, 8000);
	assert_int_equal(s.dram_active_pct100, 3000);
	nvml->close(ctx);
	ctx = must_open(NEW_LIB, "device 0 gpm=1\n"
				 "at 0 0 sm_active=10\n"
				 "at 2 0 sm_active=11\n");
	fake_clock(NEW_LIB, 1, 0);
	assert_int_equal(nvml->sample(ctx, 0, &s), 0);
	fake_clock(NEW_LIB, 4, 0);
	assert_int_equal(nvml->sample(ctx, 0, &s), 0);
	/* (10 + 11 x 2) / 3 = 10.666...: 1067 */
	assert_int_equal(s.sm_active_pct100, 1067);
	nvml->close(ctx);
}

/* What nvml.h declares for nvmlGpmMetricsGet, for calling the fake directly. */
struct test_gpm_metric {
	unsigned int id;
	int ret;
	double value;
	char *names[3];
};

struct test_gpm_get {
	unsigned int version, num_metrics;
	void *sample1, *sample2;
	struct test_gpm_metric metrics[4];
};

/*
 * The fake driver itself: numMetrics above its NVML_GPM_METRIC_MAX is
 * INVALID_ARGUMENT, and the entry after numMetrics is never touched.
 */
static void test_gpm_metric_max_fake(void **state)
{
	void *ctx = must_open(NEW_LIB, "device 0 gpm=1 gpm_metric_max=98\n"
				       "at 0 0 sm_active=61.5 sm_occupancy=40\n");
	void *dl = dlopen(NEW_LIB, RTLD_NOW | RTLD_NOLOAD);
	int (*alloc)(void **), (*take)(void *, void *), (*get)(struct test_gpm_get *);
	int (*handle)(unsigned int, void **), (*release)(void *);
	struct test_gpm_get g;
	void *dev = NULL;

	(void)state;
	assert_non_null(dl);
	*(void **)&alloc = dlsym(dl, "nvmlGpmSampleAlloc");
	*(void **)&release = dlsym(dl, "nvmlGpmSampleFree");
	*(void **)&take = dlsym(dl, "nvmlGpmSampleGet");
	*(void **)&get = dlsym(dl, "nvmlGpmMetricsGet");
	*(void **)&handle = dlsym(dl, "nvmlDeviceGetHandleByIndex_v2");
	assert_true(alloc && release && take && get && handle);
	memset(&g, 0, sizeof(g));
	g.version = 1;
	assert_int_equal(handle(0, &dev), 0);
	assert_int_equal(alloc(&g.sample1), 0);
	assert_int_equal(alloc(&g.sample2), 0);
	fake_clock(NEW_LIB, 1, 0);
	assert_int_equal(take(dev, g.sample1), 0);
	fake_clock(NEW_LIB, 2, 0);
	assert_int_equal(take(dev, g.sample2), 0);
	g.metrics[0].id = 2;
	g.metrics[1].id = 3;
	g.metrics[2].id = 99; /* above 98: this driver does not know it */
	g.metrics[3].id = 2;  /* the canary */
	g.metrics[3].ret = -7;
	g.metrics[3].value = -1;
	g.num_metrics = 99;
	assert_int_equal(get(&g), 2); /* INVALID_ARGUMENT */
	g.num_metrics = 3;
	assert_int_equal(get(&g), 0);
	assert_int_equal(g.metrics[0].ret, 0);
	assert_true(g.metrics[0].value == 61.5);
	assert_true(g.metrics[1].value == 40);
	assert_int_equal(g.metrics[2].ret, 3); /* NOT_SUPPORTED */
	assert_int_equal(g.metrics[3].ret, -7);
	assert_true(g.metrics[3].value == -1);
	/* the samples the wrong way round */
	g.version = 1;
	{
		void *tmp = g.sample1;

		g.sample1 = g.sample2;
		g.sample2 = tmp;
	}
	assert_int_equal(get(&g), 2);
	g.version = 2;
	assert_int_equal(get(&g), 25); /* ARGUMENT_VERSION_MISMATCH */
	assert_int_equal(release(g.sample1), 0);
	assert_int_equal(release(g.sample2), 0);
	dlclose(dl);
	nvml->close(ctx);
}

/*
 * Metric ids the driver does not give answer NOT_SUPPORTED each: their
 * bits stay clear, the rest is read, and they are not asked again.
 */
static void test_gpm_metric_unsupported(void **state)
{
	void *ctx = must_open(NEW_LIB, "device 0 gpm=1 gpm_ids=1,2,3,5,10,11,12,13\n"
				       "at 0 0 sm_active=50 hmma=20\n");
	struct gpu_sample s;

	(void)state;
	fake_clock(NEW_LIB, 1, 0);
	assert_int_equal(nvml->sample(ctx, 0, &s), 0);
	fake_clock(NEW_LIB, 2, 0);
	assert_int_equal(nvml->sample(ctx, 0, &s), 0);
	assert_int_equal(fake_gpm_num_metrics(NEW_LIB), 11);
	assert_int_equal(s.prof_valid & GPU_PROF_GPM,
			 GPU_PROF_GPM & ~(uint32_t)(GPU_PROF_DFMA_TENSOR | GPU_PROF_HMMA_TENSOR |
						    GPU_PROF_IMMA_TENSOR));
	assert_int_equal(s.sm_active_pct100, 5000);
	fake_clock(NEW_LIB, 3, 0);
	assert_int_equal(nvml->sample(ctx, 0, &s), 0);
	assert_int_equal(fake_gpm_num_metrics(NEW_LIB), 8);
	assert_int_equal(s.sm_active_pct100, 5000);
	assert_false(s.prof_valid & GPU_PROF_HMMA_TENSOR);
	nvml->close(ctx);
}

/*
 * No GPM: a device without it (the default), one whose driver answers
 * NOT_SUPPORTED, and an old driver without the nvmlGpm symbols: the GPM
 * bits clear, no GPM call per tick, the rest there.
 */
static void test_gpm_unsupported(void **state)
{
	static const struct {
		const char *lib, *scenario;
		uint32_t prof;
	} cases[] = {
	    {NEW_LIB, "device 0\nat 0 0 sm_active=50\n", PROF_NO_GPM},
	    {NEW_LIB, "device 0 gpm=1\nunsupported 0 gpm\nat 0 0 sm_active=50\n", PROF_NO_GPM},
	    {OLD_LIB, "device 0 gpm=1\nat 0 0 sm_active=50\n", PROF_OLD_DRIVER},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		void *ctx = must_open(cases[i].lib, cases[i].scenario);
		struct gpu_device_info info;
		struct gpu_sample s;

		assert_int_equal(nvml->info(ctx, 0, &info), 0);
		assert_int_equal(info.prof_supported, cases[i].prof);
		for (int tick = 1; tick <= 2; tick++) {
			fake_clock(cases[i].lib, tick, 0);
			assert_int_equal(sample_calls(ctx, 0, &s, 0), CALLS_NO_NVLINK);
			assert_int_equal(s.prof_valid, cases[i].prof);
		}
		nvml->close(ctx);
	}
}

/* ---- violation counters, PCIe replays, remapped rows ---- */

static const char throttled[] =
    "device 0\n"
    "at 0 0 viol_power=0.5 viol_sw_thermal=1 viol_base_clocks=0.125 pcie_replay=7 "
    "remapped_corr=2 remapped_unc=1 remap_pending=1 remap_failed=0\n"
    "at 2 0 viol_thermal=0.25 viol_power=0\n"
    "at 4 0 remap_pending=0 remap_failed=1 pcie_replay=9\n";

/*
 * The counters are the integral of the scenario's fractions from t=0: over
 * [2, 6] power adds 0 (it stopped at 2), thermal 1 s, base clocks 0.5 s.
 */
static void check_violations(const char *lib, const char *extra, uint32_t expect_prof,
			     uint64_t calls)
{
	char scenario[1024];
	struct gpu_sample a, b;
	void *ctx;

	snprintf(scenario, sizeof(scenario), "%s%s", throttled, extra);
	ctx = must_open(lib, scenario);
	fake_clock(lib, 2, 0);
	assert_int_equal(sample_calls(ctx, 0, &a, 0), calls);
	assert_int_equal(a.prof_valid, expect_prof);
	fake_clock(lib, 6, 0);
	assert_int_equal(sample_calls(ctx, 0, &b, 0), calls);
	assert_int_equal(b.prof_valid, expect_prof);
	if (expect_prof & GPU_PROF_VIOL_POWER) {
		assert_int_equal(a.viol_power_ns, 1000000000ull);
		assert_int_equal(b.viol_power_ns - a.viol_power_ns, 0);
		assert_int_equal(a.viol_thermal_ns, 0);
		assert_int_equal(b.viol_thermal_ns - a.viol_thermal_ns, 1000000000ull);
		assert_int_equal(b.viol_base_clocks_ns - a.viol_base_clocks_ns, 500000000ull);
		assert_int_equal(b.viol_base_clocks_ns, 750000000ull);
		assert_int_equal(b.viol_sync_boost_ns, 0);
	}
	if (expect_prof & GPU_PROF_VIOL_SW_THERMAL)
		assert_int_equal(b.viol_sw_thermal_ns - a.viol_sw_thermal_ns, 4000000000ull);
	if (expect_prof & GPU_PROF_PCIE_REPLAY) {
		assert_int_equal(a.pcie_replays, 7);
		assert_int_equal(b.pcie_replays, 9);
	}
	if (expect_prof & GPU_PROF_REMAPPED_ROWS) {
		assert_int_equal(a.remapped_rows_corr, 2);
		assert_int_equal(a.remapped_rows_unc, 1);
		assert_int_equal(a.remap_pending, 1);
		assert_int_equal(a.remap_failed, 0);
		assert_int_equal(b.remap_pending, 0);
		assert_int_equal(b.remap_failed, 1);
	}
	nvml->close(ctx);
}

static void test_violations(void **state)
{
	(void)state;
	check_violations(NEW_LIB, "", PROF_NO_GPM, CALLS_NO_NVLINK);
	/* an old driver: the same through the fields it knows */
	check_violations(OLD_LIB, "", PROF_OLD_DRIVER, CALLS_NO_NVLINK);
}

/*
 * The fields answer NOT_SUPPORTED: the eight reasons nvmlDeviceGetViolationStatus
 * knows come from it (one call each), with the same values; the three it
 * does not know are off.  `viol`: neither answers.
 */
static void test_violations_old_call(void **state)
{
	uint32_t old8 =
	    PROF_NO_GPM & ~(uint32_t)(GPU_PROF_VIOL_SW_THERMAL | GPU_PROF_VIOL_HW_THERMAL |
				      GPU_PROF_VIOL_HW_POWER_BRAKE);

	(void)state;
	check_violations(NEW_LIB, "unsupported 0 viol_fields\n", old8, CALLS_NO_NVLINK + 8);
	check_violations(NEW_LIB, "unsupported 0 viol\n", PROF_NO_GPM & ~GPU_PROF_VIOLATIONS,
			 CALLS_NO_NVLINK);
	check_violations(NEW_LIB, "unsupported 0 pcie_replay remap\n", GPU_PROF_VIOLATIONS,
			 CALLS_NO_NVLINK - 1);
	/* with no field to ask at all, no fields call */
	check_violations(NEW_LIB, "unsupported 0 viol pcie_replay remap\n", 0, CALLS_NO_NVLINK - 2);
}

/* ---- MIG ---- */

static const char mig_scenario[] =
    "device 0 uuid=GPU-aaaa name=\"NVIDIA H100 80GB HBM3\" bus=00000000:07:00.0 "
    "mem_total=85899345920 gpm=1 minor=4\n"
    "device 1 uuid=GPU-bbbb name=\"NVIDIA H100 80GB HBM3\" mem_total=85899345920\n"
    "mig 0 gi=1 ci=0 profile=1g.10gb uuid=MIG-aaaa-1 mem_total=10200547328\n"
    "mig 0 gi=2 ci=0 profile=2g.20gb uuid=MIG-aaaa-2 mem_total=20401094656\n"
    "at 0 0 util=90 sm_active=30 viol_power=0.5\n"
    "at 0 0/1 mem_used=1048576 sm_active=61.5 tensor=25\n"
    "at 0/2 0 mem_used=2097152 sm_active=20\n"
    "proc 0/1 pid=111 mem=1048576\n"
    "proc 0/2 pid=222 mem=2097152\n"
    "proc 1 pid=333 mem=4096 sm=10\n";

/*
 * A GPU in MIG mode, then its two MIG devices as devices of their own,
 * then the other GPU: identities, instance ids, profiles, memory, their
 * processes (the parent's are none), GPM per GPU instance.
 */
static void test_mig(void **state)
{
	void *ctx = must_open(NEW_LIB, mig_scenario);
	struct gpu_device_info info;
	struct gpu_sample s;
	struct gpu_proc p[8];
	size_t n = 99;
	int count = 0;

	(void)state;
	assert_int_equal(nvml->count(ctx, &count), 0);
	assert_int_equal(count, 4);

	assert_int_equal(nvml->info(ctx, 0, &info), 0);
	assert_int_equal(info.index, 0);
	assert_true(info.mig_enabled);
	assert_false(info.mig);
	assert_string_equal(info.uuid, "GPU-aaaa");
	assert_false(info.supported & (GPU_UTIL | GPU_PROC_MEM | GPU_PROC_UTIL));
	assert_true(info.supported & GPU_POWER);
	/* remapped rows: NOT_SUPPORTED in MIG mode */
	assert_int_equal(info.prof_supported,
			 (PROF_NO_GPM | GPU_PROF_GPM) & ~(uint32_t)GPU_PROF_REMAPPED_ROWS);

	assert_int_equal(nvml->info(ctx, 1, &info), 0);
	assert_int_equal(info.index, 0);
	assert_true(info.mig);
	assert_false(info.mig_enabled);
	assert_int_equal(info.mig_parent, 0);
	assert_int_equal(info.gpu_instance_id, 1);
	assert_int_equal(info.compute_instance_id, 0);
	assert_string_equal(info.mig_profile, "1g.10gb");
	assert_string_equal(info.uuid, "MIG-aaaa-1");
	assert_string_equal(info.name, "NVIDIA H100 80GB HBM3 MIG 1g.10gb");
	assert_string_equal(info.pci_bus_id, "00000000:07:00.0");
	assert_true(info.valid & GPU_INFO_MEM_TOTAL);
	assert_int_equal(info.mem_total_bytes, 10200547328ull);
	assert_true(info.valid & GPU_INFO_MINOR);
	assert_int_equal(info.minor_number, 4);
	assert_int_equal(info.supported, GPU_MEM_USED | GPU_PROC_MEM);
	assert_int_equal(info.prof_supported, GPU_PROF_GPM);

	assert_int_equal(nvml->info(ctx, 2, &info), 0);
	assert_int_equal(info.gpu_instance_id, 2);
	assert_string_equal(info.mig_profile, "2g.20gb");
	assert_int_equal(info.mem_total_bytes, 20401094656ull);

	assert_int_equal(nvml->info(ctx, 3, &info), 0);
	assert_int_equal(info.index, 1);
	assert_false(info.mig || info.mig_enabled);
	assert_string_equal(info.uuid, "GPU-bbbb");

	/* processes: the instances', not the parent's */
	fake_clock(NEW_LIB, 1, 0);
	assert_int_equal(nvml->processes(ctx, 0, p, 8, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(nvml->processes(ctx, 1, p, 8, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].pid, 111);
	assert_int_equal(p[0].valid, GPU_PROC_MEM);
	assert_int_equal(p[0].mem_bytes, MIB);
	assert_int_equal(nvml->processes(ctx, 2, p, 8, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].pid, 222);
	assert_int_equal(p[0].mem_bytes, 2 * MIB);
	assert_int_equal(nvml->processes(ctx, 3, p, 8, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].pid, 333);

	/* samples: each instance's memory and GPM, the parent's own */
	for (int pos = 0; pos < 3; pos++)
		assert_int_equal(nvml->sample(ctx, pos, &s), 0);
	fake_clock(NEW_LIB, 2, 0);
	assert_int_equal(nvml->sample(ctx, 1, &s), 0);
	assert_int_equal(s.valid, GPU_MEM_USED);
	assert_int_equal(s.mem_used_bytes, MIB);
	assert_int_equal(s.prof_valid, GPU_PROF_GPM);
	assert_int_equal(s.sm_active_pct100, 6150);
	assert_int_equal(s.tensor_active_pct100, 2500);
	assert_int_equal(nvml->sample(ctx, 2, &s), 0);
	assert_int_equal(s.mem_used_bytes, 2 * MIB);
	assert_int_equal(s.sm_active_pct100, 2000);
	assert_int_equal(nvml->sample(ctx, 0, &s), 0);
	assert_false(s.valid & GPU_UTIL);
	assert_int_equal(s.sm_active_pct100, 3000);
	assert_int_equal(s.viol_power_ns, 1000000000ull);
	nvml->close(ctx);
}

/* MIG lines the fake refuses: the library cannot start (one warning), never a guess. */
static void test_mig_scenario_errors(void **state)
{
	static const char *const bad[] = {
	    "device 0\nproc 0/1 pid=5 mem=1\n",		   /* no such GPU instance */
	    "device 0\nmig 0 gi=1\nmig 0 gi=1\n",	   /* the same instance twice */
	    "device 0\nmig 0 ci=0\n",			   /* no GPU instance id */
	    "device 0\nmig 1 gi=1\n",			   /* no such device */
	    "device 0\nmig 0 gi=1\nat 0 0/2 mem_used=1\n", /* no such GPU instance */
	    "device 0\nmig 0 gi=1\nproc 0/1/3 pid=5\n",	   /* no such compute instance */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		void *ctx = NULL;

		assert_int_equal(open_with(NEW_LIB, bad[i], &ctx), -ENODEV);
		assert_null(ctx);
	}
}

/* ---- accounting mode ---- */

/* Each process's peak memory where accounting mode is on; none where it is off. */
static void test_accounting(void **state)
{
	static const char on[] = "device 0 accounting=1\n"
				 "proc 0 pid=100 mem=1048576 maxmem=8388608\n"
				 "proc 0 pid=101 mem=2097152\n";
	struct gpu_device_info info;
	struct gpu_proc p[4];
	const struct gpu_proc *q;
	uint64_t calls;
	size_t n = 0;
	void *ctx;

	(void)state;
	ctx = must_open(NEW_LIB, on);
	assert_int_equal(nvml->info(ctx, 0, &info), 0);
	assert_true(info.supported & GPU_PROC_MAX_MEM);
	fake_clock(NEW_LIB, 1, 0);
	assert_int_equal(nvml->processes(ctx, 0, p, 4, &n), 0); /* grows the list's buffer */
	fake_clock(NEW_LIB, 2, 0);
	calls = nvml->calls(ctx);
	assert_int_equal(nvml->processes(ctx, 0, p, 4, &n), 0);
	assert_int_equal(n, 2);
	q = find_proc(p, n, 100);
	assert_true(q->valid & GPU_PROC_MAX_MEM);
	assert_int_equal(q->max_mem_bytes, 8 * MIB);
	assert_int_equal(q->mem_bytes, MIB);
	q = find_proc(p, n, 101);
	assert_int_equal(q->max_mem_bytes, 2 * MIB); /* the driver's: at least what it uses */
	/* two lists, one utilization (NOT_FOUND: no samples), one stats call per process */
	assert_int_equal(nvml->calls(ctx) - calls, 3 + 2);
	nvml->close(ctx);

	ctx = must_open(NEW_LIB, "device 0\nproc 0 pid=100 mem=1048576 maxmem=8388608\n");
	assert_int_equal(nvml->info(ctx, 0, &info), 0);
	assert_false(info.supported & GPU_PROC_MAX_MEM);
	assert_int_equal(nvml->processes(ctx, 0, p, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_false(p[0].valid & GPU_PROC_MAX_MEM);
	nvml->close(ctx);

	ctx = must_open(NEW_LIB, "device 0 accounting=1\nunsupported 0 accounting\n"
				 "proc 0 pid=100 mem=1048576\n");
	assert_int_equal(nvml->info(ctx, 0, &info), 0);
	assert_false(info.supported & GPU_PROC_MAX_MEM);
	nvml->close(ctx);
}

/* ---- cost ---- */

/*
 * A steady tick on one device with everything: 13 calls for sample(), 3
 * for processes() (two lists, one utilization), 1 for events().
 */
static void test_calls_per_tick(void **state)
{
	char scenario[2048];
	struct gpu_event ev[4];
	struct gpu_sample s;
	struct gpu_proc p[8];
	uint64_t calls;
	size_t n;
	void *ctx;

	(void)state;
	snprintf(scenario, sizeof(scenario), "%s%s", a100, strchr(procs_scenario, '\n') + 1);
	ctx = must_open(NEW_LIB, scenario);
	for (int tick = 0; tick < 3; tick++) {
		fake_clock(NEW_LIB, 1 + tick, 0);
		calls = nvml->calls(ctx);
		assert_int_equal(nvml->sample(ctx, 0, &s), 0);
		assert_int_equal(nvml->processes(ctx, 0, p, 8, &n), 0);
		assert_int_equal(n, 3);
		assert_int_equal(nvml->events(ctx, ev, 4, &n), 0);
		if (tick > 0) /* the first grows the buffers */
			assert_int_equal(nvml->calls(ctx) - calls, CALLS_PER_SAMPLE + 3 + 1);
	}
	nvml->close(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_info),
	    cmocka_unit_test(test_minor_number),
	    cmocka_unit_test(test_info_old_driver),
	    cmocka_unit_test(test_sample),
	    cmocka_unit_test(test_sample_old_driver),
	    cmocka_unit_test(test_values_over_time),
	    cmocka_unit_test(test_no_nvlink),
	    cmocka_unit_test(test_unsupported_metrics),
	    cmocka_unit_test(test_unsupported_metrics_old_driver),
	    cmocka_unit_test(test_init_error),
	    cmocka_unit_test(test_driver_not_loaded),
	    cmocka_unit_test(test_missing_library),
	    cmocka_unit_test(test_no_devices),
	    cmocka_unit_test(test_processes),
	    cmocka_unit_test(test_processes_old_driver),
	    cmocka_unit_test(test_process_utilization_not_found),
	    cmocka_unit_test(test_process_list_shrinks),
	    cmocka_unit_test(test_process_list_grows),
	    cmocka_unit_test(test_process_list_keeps_changing),
	    cmocka_unit_test(test_process_utilization_window),
	    cmocka_unit_test(test_job_alone_energy),
	    cmocka_unit_test(test_xid_events),
	    cmocka_unit_test(test_xid_events_old_driver),
	    cmocka_unit_test(test_gpu_lost),
	    cmocka_unit_test(test_gpu_lost_at_open),
	    cmocka_unit_test(test_calls_per_tick),
	    cmocka_unit_test(test_gpm_values),
	    cmocka_unit_test(test_gpm_step_average),
	    cmocka_unit_test(test_gpm_metric_max_fake),
	    cmocka_unit_test(test_gpm_metric_unsupported),
	    cmocka_unit_test(test_gpm_unsupported),
	    cmocka_unit_test(test_violations),
	    cmocka_unit_test(test_violations_old_call),
	    cmocka_unit_test(test_mig),
	    cmocka_unit_test(test_mig_scenario_errors),
	    cmocka_unit_test(test_accounting),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
