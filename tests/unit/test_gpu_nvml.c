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
/* library calls of one sample() with every metric there */
#define CALLS_PER_SAMPLE 13

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

static void check_a100_info(const char *lib, const char *library_version)
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

	assert_int_equal(nvml->info(ctx, 1, &info), -ENODEV);
	assert_int_equal(nvml->info(ctx, -1, &info), -ENODEV);
	nvml->close(ctx);
}

static void test_info(void **state)
{
	(void)state;
	check_a100_info(NEW_LIB, "12.535.104.05");
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
	check_a100_info(OLD_LIB, "12.535.104.05");
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
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
