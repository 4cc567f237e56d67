/*
 * test_gpu_rocm.c - the ROCm SMI backend (src/sample/gpu/rocm.c) against the
 * fake librocm_smi64 (tests/fakes/fake_rocm.c) driven by scenario files.
 *
 * Every decoded value and unit, device info and supported bits, one
 * unsupported metric at a time, init failure and a missing library, the
 * library on a machine without an AMD GPU (its stderr chatter caught and
 * said at debug level only, or in the warning where amdgpu is loaded), the
 * process count protocol and per-device attribution, events polled without
 * blocking, the rsmi_frequencies_t layout of ROCm 6, a device that goes
 * away, and the library calls one tick costs.
 *
 * The test keeps its own handle on the fake, so the library stays loaded
 * while the backend opens and closes it; fake_rocm_calls() counts calls.
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"
#include "common/sysroot.h"
#include "common/timeutil.h"
#include "sample/gpu/gpu.h"

#define FAKE_ROCM FAKES_DIR "/librocm_smi64.so.1"

#define SAMPLE_METRICS                                                                             \
	(GPU_UTIL | GPU_MEM_UTIL | GPU_MEM_USED | GPU_POWER | GPU_ENERGY | GPU_TEMP |              \
	 GPU_SM_CLOCK | GPU_MEM_CLOCK | GPU_ECC)
#define ALL_METRICS	 (SAMPLE_METRICS | GPU_PROC_MEM | GPU_PROC_UTIL | GPU_EVENTS)
#define CALLS_PER_SAMPLE 9 /* one call per metric of SAMPLE_METRICS */

static const struct gpu_backend *const be = &gpu_backend_rocm;
static char dir[64];
static char scenario_path[128];
static void *fake;
static uint64_t (*fake_calls)(const char *name);

/* Two devices with every metric; device 2 has no unique id. */
static const char base_scenario[] =
    "driver 5.2.3\n"
    "device 0 uuid=0x1234abcd name=\"AMD Instinct MI210\" bus=0000:03:00.0 "
    "mem_total=68702699520\n"
    "device 1 uuid=0xfeed name=\"AMD Radeon PRO W6800\" bus=0001:83:1f.7 "
    "mem_total=34342961152\n"
    "at 0 0 util=37 mem_util=12 mem_used=1073741824 power=123456 energy=987654 temp=67 "
    "sm_clock=1700 mem_clock=1600 ecc_sbe=5 ecc_dbe=2\n"
    "at 0 1 util=99 mem_util=88 mem_used=2147483648 power=250000 energy=1000 temp=45 "
    "sm_clock=2100 mem_clock=1000 ecc_sbe=0 ecc_dbe=0\n";

static void write_scenario(const char *text)
{
	FILE *f = fopen(scenario_path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void *open_rocm(const char *scenario)
{
	struct gpu_open_note note;
	void *ctx = NULL;

	write_scenario(scenario);
	assert_int_equal(be->open(&ctx, &note), 0);
	assert_non_null(ctx);
	return ctx;
}

static uint64_t sample_calls(void *ctx, int index, struct gpu_sample *s)
{
	uint64_t before = be->calls(ctx);

	assert_int_equal(be->sample(ctx, index, s), 0);
	return be->calls(ctx) - before;
}

static int group_setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_gpu_rocm.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(scenario_path, sizeof(scenario_path), "%s/scenario", dir);
	setenv("FAKE_GPU_SCENARIO", scenario_path, 1);
	setenv("JOBSCOPE_ROCM_SMI_LIBRARY", FAKE_ROCM, 1);
	fake = dlopen(FAKE_ROCM, RTLD_NOW | RTLD_LOCAL);
	if (!fake)
		return -1;
	*(void **)&fake_calls = dlsym(fake, "fake_rocm_calls");
	return fake_calls ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	unlink(scenario_path);
	rmdir(dir);
	if (fake)
		dlclose(fake);
	return 0;
}

static int test_teardown(void **state)
{
	(void)state;
	unsetenv("FAKE_ROCM_FREQ_LAYOUT");
	unsetenv("FAKE_ROCM_NO_EDGE");
	unsetenv("FAKE_ROCM_PROC_RACE");
	setenv("JOBSCOPE_ROCM_SMI_LIBRARY", FAKE_ROCM, 1);
	log_set_file(NULL);
	log_set_level(LOG_INFO);
	sysroot_set(NULL);
	return 0;
}

/* ---- open ---- */

static void test_missing_library(void **state)
{
	struct gpu_open_note note;
	FILE *log = tmpfile();
	void *ctx = (void *)1;

	(void)state;
	assert_non_null(log);
	log_set_file(log);
	setenv("JOBSCOPE_ROCM_SMI_LIBRARY", FAKES_DIR "/no-such-librocm_smi64.so", 1);
	assert_int_equal(be->open(&ctx, &note), -ENOENT);
	assert_null(ctx);
	assert_int_equal(note.state, GPU_LIB_ABSENT);
	assert_string_equal(note.library, FAKES_DIR "/no-such-librocm_smi64.so");
	assert_int_equal(ftell(log), 0); /* says nothing */
	fclose(log);
}

/* A machine with the amdgpu driver loaded (sysroot): no_gpu is then a failure. */
static void sysroot_amdgpu(bool loaded)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/root/sys/module/amdgpu", dir);
	if (loaded) {
		snprintf(path, sizeof(path), "%s/root", dir);
		assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
		snprintf(path, sizeof(path), "%s/root/sys", dir);
		assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
		snprintf(path, sizeof(path), "%s/root/sys/module", dir);
		assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
		snprintf(path, sizeof(path), "%s/root/sys/module/amdgpu", dir);
		assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
	} else {
		rmdir(path);
		snprintf(path, sizeof(path), "%s/root/sys/module", dir);
		rmdir(path);
		snprintf(path, sizeof(path), "%s/root/sys", dir);
		rmdir(path);
		snprintf(path, sizeof(path), "%s/root", dir);
		rmdir(path);
	}
	snprintf(path, sizeof(path), "%s/root", dir);
	sysroot_set(path); /* without amdgpu: a root with no /sys at all */
}

/* The lines of log, from the start; "" past the end. */
static void log_lines(FILE *log, char lines[][1024], int max)
{
	rewind(log);
	for (int i = 0; i < max; i++)
		if (!fgets(lines[i], sizeof(lines[i]), log))
			lines[i][0] = '\0';
}

/*
 * open() with fd 2 pointed at a file of its own, and what reached it: the
 * library's chatter must not (libout.h), whatever the backend logs.
 */
static int open_stderr(void **ctx, struct gpu_open_note *note, char *leaked, size_t size)
{
	FILE *err = tmpfile();
	int saved = dup(STDERR_FILENO), ret;
	size_t n;

	assert_non_null(err);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_true(dup2(fileno(err), STDERR_FILENO) >= 0);
	ret = be->open(ctx, note);
	fflush(stderr);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	rewind(err);
	n = fread(leaked, 1, size - 1, err);
	leaked[n] = '\0';
	fclose(err);
	return ret;
}

/* INIT_ERROR with the amdgpu driver loaded: a failure, warned with what the library said. */
static void test_init_error(void **state)
{
	uint64_t shut_downs = fake_calls("rsmi_shut_down");
	struct gpu_open_note note;
	char lines[2][1024], leaked[256];
	FILE *log = tmpfile();
	void *ctx = (void *)1;

	(void)state;
	assert_non_null(log);
	log_set_file(log);
	sysroot_amdgpu(true);
	write_scenario(
	    "driver 5.2.3\ninit_say \"amdgpu: something broke\"\ninit_error 8\ndevice 0\n");
	assert_int_equal(open_stderr(&ctx, &note, leaked, sizeof(leaked)), -ENODEV);
	assert_null(ctx);
	assert_string_equal(leaked, "");
	log_lines(log, lines, 2);
	assert_string_equal(lines[1], ""); /* one warning */
	assert_non_null(strstr(lines[0], "jobscope: warning: "));
	assert_non_null(strstr(lines[0], FAKE_ROCM));
	assert_non_null(strstr(lines[0], "RSMI_STATUS_INIT_ERROR"));
	assert_non_null(strstr(lines[0], "; it said: amdgpu: something broke\n"));
	assert_int_equal(note.state, GPU_LIB_FAILED);
	assert_string_equal(note.said, "amdgpu: something broke");
	/* nothing to shut down after a failed init */
	assert_int_equal(fake_calls("rsmi_shut_down"), shut_downs);
	sysroot_amdgpu(false);
	fclose(log);
}

#define ROCM_CHATTER                                                                               \
	"Failed to open drm root directory /sys/class/drm.: No such file or directory | "          \
	"Exception caught: rsmi_init."

/* The library on a machine without an AMD GPU: a fact, said only at debug level. */
static void test_no_gpu(void **state)
{
	struct gpu_open_note note;
	char lines[3][1024], leaked[256], expect[1024];
	FILE *log = tmpfile();
	void *ctx = (void *)1;

	(void)state;
	assert_non_null(log);
	log_set_file(log);
	sysroot_amdgpu(false);
	write_scenario("driver 5.2.3\nno_gpu\ndevice 0\n");
	assert_int_equal(open_stderr(&ctx, &note, leaked, sizeof(leaked)), -ENXIO);
	assert_null(ctx);
	assert_string_equal(leaked, "");
	assert_int_equal(ftell(log), 0); /* not a word at the default level */
	assert_int_equal(note.state, GPU_LIB_NO_GPU);
	assert_string_equal(note.library, FAKE_ROCM);
	assert_string_equal(note.detail, "no amdgpu driver loaded: no AMD GPU");
	assert_string_equal(note.said, ROCM_CHATTER);

	/* --verbose: the chatter and the fact, at debug level */
	log_set_level(LOG_DEBUG);
	write_scenario("driver 5.2.3\ninit_say stdout \"on stdout\"\nno_gpu\n");
	assert_int_equal(open_stderr(&ctx, &note, leaked, sizeof(leaked)), -ENXIO);
	assert_string_equal(leaked, "");
	log_lines(log, lines, 3);
	assert_string_equal(
	    lines[0], "jobscope: debug: rocm: the library said: on stdout | " ROCM_CHATTER "\n");
	snprintf(expect, sizeof(expect),
		 "jobscope: debug: AMD: %s found, no amdgpu driver loaded: no AMD GPU (rsmi_init: "
		 "RSMI_STATUS_INIT_ERROR",
		 FAKE_ROCM);
	assert_memory_equal(lines[1], expect, strlen(expect));
	assert_string_equal(lines[2], "");
	fclose(log);
}

/* The same chatter where the amdgpu driver is loaded: a failure, and the warning says it. */
static void test_no_gpu_with_driver_warns(void **state)
{
	struct gpu_open_note note;
	char lines[2][1024], leaked[256];
	FILE *log = tmpfile();
	void *ctx = (void *)1;

	(void)state;
	assert_non_null(log);
	log_set_file(log);
	sysroot_amdgpu(true);
	write_scenario("driver 5.2.3\nno_gpu\n");
	assert_int_equal(open_stderr(&ctx, &note, leaked, sizeof(leaked)), -ENODEV);
	assert_string_equal(leaked, "");
	log_lines(log, lines, 2);
	assert_non_null(strstr(lines[0], "jobscope: warning: cannot initialise ROCm SMI"));
	assert_non_null(strstr(lines[0], "RSMI_STATUS_INIT_ERROR"));
	assert_non_null(strstr(lines[0], "; it said: " ROCM_CHATTER "\n"));
	assert_string_equal(lines[1], "");
	assert_int_equal(note.state, GPU_LIB_FAILED);
	sysroot_amdgpu(false);
	fclose(log);
}

static void test_classify(void **state)
{
	char path[256];

	(void)state;
	assert_true(gpu_rocm_means_no_gpu(8, false));
	assert_false(gpu_rocm_means_no_gpu(8, true));
	assert_false(gpu_rocm_means_no_gpu(0, false));
	assert_false(gpu_rocm_means_no_gpu(4, false)); /* PERMISSION: a fault */
	assert_false(gpu_rocm_means_no_gpu(0xFFFFFFFFu, false));
	sysroot_amdgpu(false);
	assert_false(gpu_amdgpu_loaded());
	sysroot_amdgpu(true);
	assert_true(gpu_amdgpu_loaded());
	sysroot_amdgpu(false);
	/* KFD alone (amdgpu built in, no parameters under /sys/module) */
	snprintf(path, sizeof(path), "%s/root", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/root/sys", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/root/sys/class", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/root/sys/class/kfd", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_true(gpu_amdgpu_loaded());
	rmdir(path);
	snprintf(path, sizeof(path), "%s/root/sys/class", dir);
	rmdir(path);
	sysroot_amdgpu(false);
}

static void test_zero_devices(void **state)
{
	struct gpu_open_note note;
	void *ctx = NULL;
	struct gpu_event ev[4];
	struct gpu_sample s;
	size_t n = 99;
	int count = -1;

	(void)state;
	write_scenario("driver 5.2.3\n");
	assert_int_equal(be->open(&ctx, &note), 0); /* it answers, with nothing to read */
	assert_non_null(ctx);
	assert_int_equal(note.state, GPU_LIB_NO_GPU);
	assert_string_equal(note.detail, "no AMD GPU");
	assert_int_equal(be->count(ctx, &count), 0);
	assert_int_equal(count, 0);
	assert_int_equal(be->events(ctx, ev, 4, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(be->sample(ctx, 0, &s), -EINVAL);
	assert_int_equal(s.valid, 0);
	be->close(ctx);
}

static void test_versions(void **state)
{
	void *ctx = open_rocm(base_scenario);
	char driver[GPU_VERSION_MAX], library[GPU_VERSION_MAX];

	(void)state;
	be->versions(ctx, driver, sizeof(driver), library, sizeof(library));
	assert_string_equal(driver, "");
	assert_string_equal(library, "5.2.3");
	be->close(ctx);
}

/* The library stays loaded; each open reads the scenario again. */
static void test_reopen_rereads_scenario(void **state)
{
	struct gpu_device_info info;
	void *ctx;

	(void)state;
	for (int round = 0; round < 3; round++) {
		char text[256];

		snprintf(text, sizeof(text), "driver 5.2.%d\ndevice 0 name=\"card %d\"\n", round,
			 round);
		ctx = open_rocm(text);
		assert_int_equal(be->info(ctx, 0, &info), 0);
		snprintf(text, sizeof(text), "card %d", round);
		assert_string_equal(info.name, text);
		be->close(ctx);
	}
}

/* ---- info and sample ---- */

static void test_info(void **state)
{
	void *ctx = open_rocm("driver 5.2.3\n"
			      "device 0 uuid=0x1234abcd name=\"AMD Instinct MI210\" "
			      "bus=0000:03:00.0 mem_total=68702699520\n"
			      "device 1 uuid=0xfeed name=\"AMD Radeon PRO W6800\" bus=0001:83:1f.7 "
			      "mem_total=34342961152\n"
			      "device 2\n");
	struct gpu_device_info info;
	int count = 0;

	(void)state;
	assert_int_equal(be->count(ctx, &count), 0);
	assert_int_equal(count, 3);

	assert_int_equal(be->info(ctx, 0, &info), 0);
	assert_int_equal(info.index, 0);
	assert_string_equal(info.uuid, "0x1234abcd");
	assert_string_equal(info.name, "AMD Instinct MI210");
	assert_string_equal(info.pci_bus_id, "00000000:03:00.0");
	assert_int_equal(info.valid, GPU_INFO_MEM_TOTAL); /* no power limit, no NVLink */
	assert_int_equal(info.mem_total_bytes, 68702699520ull);
	assert_int_equal(info.supported, ALL_METRICS);
	/* never: PCIe (the call blocks ~1 s), NVLink, throttle reasons */
	assert_int_equal(info.supported & (GPU_PCIE | GPU_NVLINK | GPU_THROTTLE), 0);

	assert_int_equal(be->info(ctx, 1, &info), 0);
	assert_string_equal(info.uuid, "0xfeed");
	assert_string_equal(info.name, "AMD Radeon PRO W6800");
	assert_string_equal(info.pci_bus_id, "00000001:83:1F.7");
	assert_int_equal(info.mem_total_bytes, 34342961152ull);

	/* the fake's default uuid is not hex: unique id NOT_SUPPORTED */
	assert_int_equal(be->info(ctx, 2, &info), 0);
	assert_string_equal(info.uuid, "");
	assert_string_equal(info.name, "Fake GPU");
	assert_string_equal(info.pci_bus_id, "00000000:03:00.0");

	assert_int_equal(be->info(ctx, 3, &info), -EINVAL);
	assert_int_equal(be->info(ctx, -1, &info), -EINVAL);
	be->close(ctx);
}

static void test_sample_values(void **state)
{
	void *ctx = open_rocm(base_scenario);
	struct gpu_sample s;

	(void)state;
	assert_int_equal(be->sample(ctx, 0, &s), 0);
	assert_int_equal(s.valid, SAMPLE_METRICS);
	assert_int_equal(s.util_pct, 37);
	assert_int_equal(s.mem_util_pct, 12);
	assert_int_equal(s.mem_used_bytes, 1073741824ull);
	assert_int_equal(s.power_mw, 123456);	      /* 123456000 µW */
	assert_in_range(s.energy_mj, 987653, 987654); /* counter × 15.3 µJ */
	assert_int_equal(s.temp_c, 67);		      /* 67000 m°C */
	assert_int_equal(s.sm_clock_mhz, 1700);	      /* frequency[current = 1], not [0] */
	assert_int_equal(s.mem_clock_mhz, 1600);
	assert_int_equal(s.ecc_corrected, 5);
	assert_int_equal(s.ecc_uncorrected, 2);
	assert_int_equal(s.pcie_rx_bps, 0);
	assert_int_equal(s.throttle_reasons, 0);

	assert_int_equal(be->sample(ctx, 1, &s), 0);
	assert_int_equal(s.valid, SAMPLE_METRICS);
	assert_int_equal(s.util_pct, 99);
	assert_int_equal(s.mem_util_pct, 88);
	assert_int_equal(s.mem_used_bytes, 2147483648ull);
	assert_int_equal(s.power_mw, 250000);
	assert_in_range(s.energy_mj, 999, 1000);
	assert_int_equal(s.temp_c, 45);
	assert_int_equal(s.sm_clock_mhz, 2100);
	assert_int_equal(s.mem_clock_mhz, 1000);
	assert_int_equal(s.ecc_corrected, 0);
	assert_int_equal(s.ecc_uncorrected, 0);

	assert_int_equal(be->sample(ctx, 2, &s), -EINVAL);
	assert_int_equal(be->sample(ctx, -1, &s), -EINVAL);
	assert_int_equal(fake_calls("rsmi_dev_pci_throughput_get"), 0);
	be->close(ctx);
}

/*
 * Each metric NOT_SUPPORTED on device 0 in turn: only that metric goes,
 * on device 0 only, and it is not asked again.
 */
static void test_unsupported_one_metric(void **state)
{
	static const struct {
		const char *name;
		uint32_t bits;
		unsigned int calls;
	} cases[] = {
	    {"util", GPU_UTIL, 1},
	    {"mem_util", GPU_MEM_UTIL, 1},
	    {"mem_used", GPU_MEM_USED, 1},
	    {"power", GPU_POWER, 1},
	    {"energy", GPU_ENERGY, 1},
	    {"temp", GPU_TEMP, 1},
	    {"clocks", GPU_SM_CLOCK | GPU_MEM_CLOCK, 2},
	    {"ecc", GPU_ECC, 1},
	    {"events", GPU_EVENTS, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[2048];
		struct gpu_device_info info;
		struct gpu_sample s;
		void *ctx;

		snprintf(text, sizeof(text), "%sunsupported 0 %s\n", base_scenario, cases[i].name);
		ctx = open_rocm(text);
		assert_int_equal(be->info(ctx, 0, &info), 0);
		assert_int_equal(info.supported, ALL_METRICS & ~cases[i].bits);
		assert_int_equal(be->info(ctx, 1, &info), 0);
		assert_int_equal(info.supported, ALL_METRICS);
		for (int tick = 0; tick < 2; tick++) {
			assert_int_equal(sample_calls(ctx, 0, &s),
					 CALLS_PER_SAMPLE - cases[i].calls);
			assert_int_equal(s.valid, SAMPLE_METRICS & ~cases[i].bits);
			assert_int_equal(sample_calls(ctx, 1, &s), CALLS_PER_SAMPLE);
			assert_int_equal(s.valid, SAMPLE_METRICS);
		}
		be->close(ctx);
	}
}

/* No edge sensor (MI200/MI300-like): the junction sensor, chosen once. */
static void test_temp_junction_fallback(void **state)
{
	struct gpu_sample s;
	void *ctx;

	(void)state;
	setenv("FAKE_ROCM_NO_EDGE", "1", 1);
	ctx = open_rocm(base_scenario);
	assert_int_equal(sample_calls(ctx, 0, &s), CALLS_PER_SAMPLE);
	assert_true(s.valid & GPU_TEMP);
	assert_int_equal(s.temp_c, 77); /* the fake's junction is edge + 10 */
	be->close(ctx);
}

/* ---- the rsmi_frequencies_t layout ---- */

static void test_clocks_rocm6_layout(void **state)
{
	char text[2048];
	char driver[GPU_VERSION_MAX], library[GPU_VERSION_MAX];
	struct gpu_sample s;
	void *ctx;

	(void)state;
	snprintf(text, sizeof(text), "%s", base_scenario);
	memcpy(text, "driver 6.1.2", 12);
	ctx = open_rocm(text);
	be->versions(ctx, driver, sizeof(driver), library, sizeof(library));
	assert_string_equal(library, "6.1.2");
	assert_int_equal(be->sample(ctx, 0, &s), 0);
	assert_int_equal(s.valid, SAMPLE_METRICS);
	assert_int_equal(s.sm_clock_mhz, 1700); /* frequency[current = 2] after the bool */
	assert_int_equal(s.mem_clock_mhz, 1600);
	be->close(ctx);
}

/*
 * A library whose version does not match its layout, both ways: the clocks
 * fail the table check and are dropped (not misread, not asked again); the
 * rest of the device is untouched.
 */
static void test_clocks_layout_mismatch(void **state)
{
	static const struct {
		const char *driver;
		const char *layout;
	} cases[] = {{"driver 6.1.2", "5"}, {"driver 5.7.0", "6"}};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gpu_device_info info;
		char text[2048];
		struct gpu_sample s;
		void *ctx;

		setenv("FAKE_ROCM_FREQ_LAYOUT", cases[i].layout, 1);
		snprintf(text, sizeof(text), "%s", base_scenario);
		memcpy(text, cases[i].driver, 12);
		ctx = open_rocm(text);
		assert_int_equal(be->info(ctx, 0, &info), 0);
		assert_int_equal(info.supported & (GPU_SM_CLOCK | GPU_MEM_CLOCK), 0);
		assert_int_equal(sample_calls(ctx, 0, &s), CALLS_PER_SAMPLE - 2);
		assert_int_equal(s.valid, SAMPLE_METRICS & ~(GPU_SM_CLOCK | GPU_MEM_CLOCK));
		assert_int_equal(s.sm_clock_mhz, 0);
		assert_int_equal(s.mem_clock_mhz, 0);
		assert_int_equal(s.util_pct, 37);
		be->close(ctx);
	}
}

/* ---- a device that goes away ---- */

/*
 * After "lost" the fake answers NOT_SUPPORTED, as librocm_smi64 does when
 * sysfs files vanish.  The metrics go missing but stay supported and keep
 * being asked (a reset device comes back); no -ENODEV; the other device and
 * the processes of the lost one follow.
 */
static void test_lost_device(void **state)
{
	char text[2048];
	struct gpu_device_info info;
	struct gpu_proc procs[4];
	struct gpu_sample s;
	int64_t deadline;
	size_t n;
	void *ctx;

	(void)state;
	snprintf(text, sizeof(text),
		 "%sproc 0 pid=4242 mem=4096 sm=5\nproc 1 pid=4343 mem=8192 sm=6\nlost 0 at=0.4\n",
		 base_scenario);
	ctx = open_rocm(text);
	assert_int_equal(be->sample(ctx, 0, &s), 0);
	assert_int_equal(s.valid, SAMPLE_METRICS);
	deadline = time_mono_ns() + 30000000000ll; /* the loss is due at 0.4 s: a deadline */
	do {
		struct timespec ts = {0, 20000000};

		assert_true(time_mono_ns() < deadline);
		nanosleep(&ts, NULL);
		assert_int_equal(be->sample(ctx, 0, &s), 0);
	} while (s.valid);
	for (int tick = 0; tick < 3; tick++) {
		assert_int_equal(sample_calls(ctx, 0, &s), CALLS_PER_SAMPLE);
		assert_int_equal(s.valid, 0);
		assert_int_equal(sample_calls(ctx, 1, &s), CALLS_PER_SAMPLE);
		assert_int_equal(s.valid, SAMPLE_METRICS);
	}
	assert_int_equal(be->info(ctx, 0, &info), 0);
	assert_int_equal(info.supported & SAMPLE_METRICS, SAMPLE_METRICS);
	assert_int_equal(be->processes(ctx, 0, procs, 4, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(be->processes(ctx, 1, procs, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(procs[0].pid, 4343);
	be->close(ctx);
}

/* ---- processes ---- */

static const char procs_scenario[] = "driver 5.2.3\n"
				     "device 0 uuid=0x1\n"
				     "device 1 uuid=0x2\n"
				     "proc 0 pid=100 mem=1048576 sm=40\n"
				     "proc 1 pid=200 mem=2097152 sm=70\n"
				     "proc 0 pid=300 mem=4096 sm=10\n"
				     "proc 1 pid=300 mem=8192 sm=20\n"
				     "proc 0 pid=400 mem=65536\n"
				     "proc 0 pid=500 mem=1 sm=1 from=1000\n"
				     "proc 0 pid=600 mem=1 sm=1 until=0\n";

static void test_processes(void **state)
{
	void *ctx = open_rocm(procs_scenario);
	struct gpu_proc p[8];
	uint64_t before;
	size_t n;

	(void)state;
	assert_int_equal(be->processes(ctx, 0, p, 8, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(p[0].pid, 100);
	assert_int_equal(p[0].valid, GPU_PROC_MEM | GPU_PROC_UTIL);
	assert_int_equal(p[0].mem_bytes, 1048576);
	assert_int_equal(p[0].sm_util_pct, 40); /* cu_occupancy */
	assert_int_equal(p[0].mem_util_pct, 0);
	assert_false(p[0].graphics);
	/* on two devices: ROCm SMI sums over both, so no values rather than twice */
	assert_int_equal(p[1].pid, 300);
	assert_int_equal(p[1].valid, 0);
	assert_int_equal(p[1].mem_bytes, 0);
	/* no CU occupancy (0xFFFFFFFF): memory only */
	assert_int_equal(p[2].pid, 400);
	assert_int_equal(p[2].valid, GPU_PROC_MEM);
	assert_int_equal(p[2].mem_bytes, 65536);

	/* device 1 of the same tick: the same snapshot, no library call */
	before = be->calls(ctx);
	assert_int_equal(be->processes(ctx, 1, p, 8, &n), 0);
	assert_int_equal(be->calls(ctx), before);
	assert_int_equal(n, 2);
	assert_int_equal(p[0].pid, 200);
	assert_int_equal(p[0].valid, GPU_PROC_MEM | GPU_PROC_UTIL);
	assert_int_equal(p[0].mem_bytes, 2097152);
	assert_int_equal(p[0].sm_util_pct, 70);
	assert_int_equal(p[1].pid, 300);
	assert_int_equal(p[1].valid, 0);

	/* device 0 again: a new tick, a new snapshot (count, read, 4 pids) */
	before = be->calls(ctx);
	assert_int_equal(be->processes(ctx, 0, p, 2, &n), 0);
	assert_int_equal(be->calls(ctx) - before, 2 + 4);
	assert_int_equal(n, 2); /* at most max */
	assert_int_equal(p[0].pid, 100);
	assert_int_equal(p[1].pid, 300);

	assert_int_equal(be->processes(ctx, 2, p, 8, &n), -EINVAL);
	assert_int_equal(n, 0);
	be->close(ctx);
}

/* Processes that start between the count and the read: a bigger buffer. */
static void test_processes_count_changes(void **state)
{
	char text[4096];
	struct gpu_proc p[32];
	uint64_t before;
	size_t len, n;
	void *ctx;

	(void)state;
	len = (size_t)snprintf(text, sizeof(text), "driver 5.2.3\ndevice 0\n");
	for (int i = 0; i < 25; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"proc 0 pid=%d mem=%d sm=1\n", 1000 + i, 4096 * (i + 1));
	ctx = open_rocm(text);
	setenv("FAKE_ROCM_PROC_RACE", "20", 1); /* counted 5: room for 13, 25 there */
	before = be->calls(ctx);
	assert_int_equal(be->processes(ctx, 0, p, 32, &n), 0);
	assert_int_equal(n, 25);
	for (int i = 0; i < 25; i++) {
		assert_int_equal(p[i].pid, 1000 + i);
		assert_int_equal(p[i].mem_bytes, 4096 * (i + 1));
	}
	/* count, read (too small), read (room for 26), one device query per pid */
	assert_int_equal(be->calls(ctx) - before, 1 + 2 + 25);
	be->close(ctx);
}

static void test_processes_unsupported(void **state)
{
	char text[2048];
	struct gpu_device_info info;
	struct gpu_proc p[4];
	uint64_t before;
	size_t n = 99;
	void *ctx;

	(void)state;
	snprintf(text, sizeof(text),
		 "%sproc 0 pid=7 mem=1\nunsupported 0 procs\n"
		 "unsupported 1 procs\n",
		 procs_scenario);
	ctx = open_rocm(text);
	assert_int_equal(be->info(ctx, 0, &info), 0);
	assert_int_equal(info.supported, ALL_METRICS & ~(GPU_PROC_MEM | GPU_PROC_UTIL));
	before = be->calls(ctx);
	assert_int_equal(be->processes(ctx, 0, p, 4, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(be->calls(ctx), before); /* not asked again */
	be->close(ctx);
}

/* ---- events ---- */

static const char events_scenario[] = "driver 5.2.3\n"
				      "device 0\n"
				      "device 1\n"
				      "xid 0 at=0 code=1\n"
				      "xid 1 at=0 code=2\n"
				      "xid 0 at=0 code=3\n"
				      "xid 0 at=0 code=4\n"
				      "xid 0 at=0 code=79\n"
				      "xid 1 at=1000 code=2\n";

static void test_events(void **state)
{
	void *ctx = open_rocm(events_scenario);
	struct gpu_event ev[16];
	uint64_t waits;
	int64_t start;
	size_t n;

	(void)state;
	start = time_mono_ns();
	waits = fake_calls("event_wait");
	assert_int_equal(be->events(ctx, ev, 16, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(ev[0].index, 0);
	assert_int_equal(ev[0].kind, GPU_EVENT_VMFAULT);
	assert_int_equal(ev[0].data, 1);
	assert_string_equal(ev[0].message, "fake event 1 on device 0");
	assert_int_equal(ev[1].index, 1);
	assert_int_equal(ev[1].kind, GPU_EVENT_THERMAL);
	assert_int_equal(ev[1].data, 2);
	assert_int_equal(ev[2].index, 0);
	assert_int_equal(ev[2].kind, GPU_EVENT_RESET);
	assert_int_equal(ev[2].data, 3); /* GPU_PRE_RESET */
	assert_int_equal(ev[3].kind, GPU_EVENT_RESET);
	assert_int_equal(ev[3].data, 4); /* GPU_POST_RESET */

	/* nothing more now (code 79 is outside the mask, the other is later) */
	assert_int_equal(be->events(ctx, ev, 16, &n), 0);
	assert_int_equal(n, 0);
	/* the fake waits out any timeout but 0 (up to 2 s): these asked for no wait (the
	 * fake's own count), and took less than the shortest wait would (not a speed check) */
	assert_int_equal(fake_calls("event_wait"), waits);
	assert_true(time_mono_ns() - start < 2000000000ll);
	be->close(ctx);
}

static void test_events_max(void **state)
{
	void *ctx = open_rocm(events_scenario);
	struct gpu_event ev[4];
	size_t n;

	(void)state;
	assert_int_equal(be->events(ctx, ev, 3, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(ev[2].data, 3);
	assert_int_equal(be->events(ctx, ev, 3, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].data, 4);
	assert_int_equal(be->events(ctx, ev, 0, &n), 0);
	assert_int_equal(n, 0);
	be->close(ctx);
}

static void test_events_unsupported(void **state)
{
	char text[1024];
	struct gpu_device_info info;
	struct gpu_event ev[8];
	uint64_t stops = fake_calls("rsmi_event_notification_stop");
	size_t n;
	void *ctx;

	(void)state;
	snprintf(text, sizeof(text), "%sunsupported 0 events\n", events_scenario);
	ctx = open_rocm(text);
	assert_int_equal(be->info(ctx, 0, &info), 0);
	assert_int_equal(info.supported & GPU_EVENTS, 0);
	assert_int_equal(be->info(ctx, 1, &info), 0);
	assert_int_equal(info.supported & GPU_EVENTS, GPU_EVENTS);
	assert_int_equal(be->events(ctx, ev, 8, &n), 0);
	assert_int_equal(n, 1); /* only device 1 listens */
	assert_int_equal(ev[0].index, 1);
	be->close(ctx);
	assert_int_equal(fake_calls("rsmi_event_notification_stop") - stops, 1);
}

/* ---- cost ---- */

/* One device, one process: what sample() + processes() cost per tick. */
static void test_calls_per_tick(void **state)
{
	char text[2048];
	struct gpu_proc p[4];
	struct gpu_sample s;
	size_t n;
	void *ctx;

	(void)state;
	snprintf(text, sizeof(text),
		 "driver 5.2.3\ndevice 0 uuid=0x1\nat 0 0 util=1\nproc 0 pid=77 mem=4096 sm=3\n");
	ctx = open_rocm(text);
	for (int tick = 0; tick < 3; tick++) {
		uint64_t before = be->calls(ctx);

		assert_int_equal(be->sample(ctx, 0, &s), 0);
		assert_int_equal(be->processes(ctx, 0, p, 4, &n), 0);
		assert_int_equal(n, 1);
		/* 9 metrics + count + read + the pid's devices */
		assert_int_equal(be->calls(ctx) - before, CALLS_PER_SAMPLE + 3);
	}
	be->close(ctx);
	assert_int_equal(fake_calls("rsmi_dev_pci_throughput_get"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_missing_library, test_teardown),
	    cmocka_unit_test_teardown(test_init_error, test_teardown),
	    cmocka_unit_test_teardown(test_no_gpu, test_teardown),
	    cmocka_unit_test_teardown(test_no_gpu_with_driver_warns, test_teardown),
	    cmocka_unit_test_teardown(test_classify, test_teardown),
	    cmocka_unit_test_teardown(test_zero_devices, test_teardown),
	    cmocka_unit_test_teardown(test_versions, test_teardown),
	    cmocka_unit_test_teardown(test_reopen_rereads_scenario, test_teardown),
	    cmocka_unit_test_teardown(test_info, test_teardown),
	    cmocka_unit_test_teardown(test_sample_values, test_teardown),
	    cmocka_unit_test_teardown(test_unsupported_one_metric, test_teardown),
	    cmocka_unit_test_teardown(test_temp_junction_fallback, test_teardown),
	    cmocka_unit_test_teardown(test_clocks_rocm6_layout, test_teardown),
	    cmocka_unit_test_teardown(test_clocks_layout_mismatch, test_teardown),
	    cmocka_unit_test_teardown(test_lost_device, test_teardown),
	    cmocka_unit_test_teardown(test_processes, test_teardown),
	    cmocka_unit_test_teardown(test_processes_count_changes, test_teardown),
	    cmocka_unit_test_teardown(test_processes_unsupported, test_teardown),
	    cmocka_unit_test_teardown(test_events, test_teardown),
	    cmocka_unit_test_teardown(test_events_max, test_teardown),
	    cmocka_unit_test_teardown(test_events_unsupported, test_teardown),
	    cmocka_unit_test_teardown(test_calls_per_tick, test_teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
