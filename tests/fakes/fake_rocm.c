/*
 * fake_rocm.c - a librocm_smi64.so.1 for tests: the real function names and
 * struct layouts (gpu-abi.md, "ROCm SMI"), values from the scenario file
 * ($FAKE_GPU_SCENARIO, scenario.h).
 *
 * rsmi_init() reads the scenario again and rsmi_shut_down() frees it, so a
 * test process can open and close the backend many times while the library
 * stays loaded.  Times are seconds since the last rsmi_init().
 *
 * How the scenario maps to ROCm SMI:
 *   driver 5.2.3          rsmi_version_get (major.minor.patch, build "fake");
 *                         major >= 6 also switches rsmi_frequencies_t to the
 *                         ROCm 6 layout (leading bool), as the real library does
 *   init_error 8          rsmi_init's answer (8 is RSMI_STATUS_INIT_ERROR)
 *   no_gpu                a machine without an AMD GPU: rsmi_init writes what the real
 *                         library writes there on stderr (upstream rocm_smi_lib: the
 *                         perror() of RocmSMI::DiscoverAmdgpuDevices, then
 *                         handleException's debug_print; nothing on stdout) and
 *                         answers RSMI_STATUS_INIT_ERROR, as Debian's 5.2.3 does
 *   init_say              rsmi_init writes this line first (scenario.h)
 *   uuid=0x1234abcd       rsmi_dev_unique_id_get (hex; anything else: NOT_SUPPORTED)
 *   bus=0000:03:00.0      rsmi_dev_pci_id_get, (domain << 32) | (bus << 8) | (dev << 3) | fn
 *   util, mem_util        rsmi_dev_busy_percent_get, rsmi_dev_memory_busy_percent_get
 *   mem_used, mem_total   rsmi_dev_memory_usage_get / _total_get, VRAM only
 *   power (mW)            rsmi_dev_power_ave_get in µW, sensor 0
 *   energy (mJ)           rsmi_dev_energy_count_get: counter of FAKE_ROCM_RESOLUTION_UJ
 *   temp (°C)             rsmi_dev_temp_metric_get in m°C, CURRENT: EDGE gives temp,
 *                         JUNCTION gives temp + 10
 *   sm_clock, mem_clock   rsmi_dev_gpu_clk_freq_get SYS / MEM: a table of three
 *                         levels in Hz with `current` = 1, the scenario's value
 *                         (ROCm 6 layout: four, the deep-sleep level first, current = 2)
 *   ecc_sbe, ecc_dbe      rsmi_dev_ecc_count_get, block UMC only
 *   pcie_*_kbps           rsmi_dev_pci_throughput_get, which sleeps 1 s as the real one
 *   proc                  rsmi_compute_process_info_get: one entry per pid, VRAM and
 *                         CU occupancy (sm=) summed over its devices, CU occupancy
 *                         0xFFFFFFFF when an entry has no sm= or proc_util is
 *                         unsupported; rsmi_compute_process_gpus_get lists its devices
 *   xid DEV at= code=     an event whose rsmi_evt_notification_type_t is the code
 *                         (VMFAULT 1, THERMAL_THROTTLE 2, GPU_PRE_RESET 3,
 *                         GPU_POST_RESET 4), delivered if the device's mask has it
 *   unsupported DEV X     that call answers RSMI_STATUS_NOT_SUPPORTED (2); "procs" on
 *                         a device hides its processes, and on every device makes
 *                         rsmi_compute_process_info_get answer NOT_SUPPORTED (KFD's
 *                         process list is system-wide); "events": notification_init
 *   lost DEV at=          from then on every call about the device answers
 *                         NOT_SUPPORTED, as the real library does when the device's
 *                         sysfs files vanish (ENOENT), and its processes disappear
 *
 * Knobs for the backend's corner cases, read at each call:
 *   FAKE_ROCM_FREQ_LAYOUT=5|6   write this clock table layout whatever the version
 *   FAKE_ROCM_NO_EDGE=1         the EDGE temperature sensor answers NOT_SUPPORTED
 *   FAKE_ROCM_PROC_RACE=N       the counting call reports N processes fewer than exist
 *                               (as if N started between the count and the read)
 * fake_rocm_calls("rsmi_x") says how often rsmi_x was called since load.
 */
#include "scenario.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the ABI, as the real header lays it out ---- */

typedef uint32_t rsmi_status_t;

#define RSMI_STATUS_SUCCESS	      0
#define RSMI_STATUS_INVALID_ARGS      1
#define RSMI_STATUS_NOT_SUPPORTED     2
#define RSMI_STATUS_INIT_ERROR	      8
#define RSMI_STATUS_NOT_FOUND	      10
#define RSMI_STATUS_INSUFFICIENT_SIZE 11
#define RSMI_STATUS_NO_DATA	      14

#define RSMI_MEM_TYPE_VRAM	    0
#define RSMI_TEMP_TYPE_EDGE	    0
#define RSMI_TEMP_TYPE_JUNCTION	    1
#define RSMI_TEMP_CURRENT	    0
#define RSMI_CLK_TYPE_SYS	    0
#define RSMI_CLK_TYPE_MEM	    4
#define RSMI_GPU_BLOCK_UMC	    0x1
#define RSMI_MAX_NUM_FREQUENCIES_V5 32
#define RSMI_MAX_NUM_FREQUENCIES_V6 33

#define FAKE_ROCM_RESOLUTION_UJ 15.3f

typedef struct {
	uint32_t major;
	uint32_t minor;
	uint32_t patch;
	const char *build;
} rsmi_version_t;

typedef struct {
	uint64_t correctable_err;
	uint64_t uncorrectable_err;
} rsmi_error_count_t;

typedef struct {
	uint32_t process_id;
	uint32_t pasid;
	uint64_t vram_usage;
	uint64_t sdma_usage;
	uint32_t cu_occupancy;
} rsmi_process_info_t;

typedef struct {
	uint32_t dv_ind;
	uint32_t event;
	char message[64];
} rsmi_evt_notification_data_t;

/* 5.2.3 */
typedef struct {
	uint32_t num_supported;
	uint32_t current;
	uint64_t frequency[RSMI_MAX_NUM_FREQUENCIES_V5];
} rsmi_frequencies_t;

/* ROCm 6.0 on */
typedef struct {
	bool has_deep_sleep;
	uint32_t num_supported;
	uint32_t current;
	uint64_t frequency[RSMI_MAX_NUM_FREQUENCIES_V6];
} rsmi_frequencies_v6_t;

_Static_assert(sizeof(rsmi_version_t) == 24, "rsmi_version_t");
_Static_assert(sizeof(rsmi_error_count_t) == 16, "rsmi_error_count_t");
_Static_assert(sizeof(rsmi_process_info_t) == 32 &&
		   offsetof(rsmi_process_info_t, vram_usage) == 8 &&
		   offsetof(rsmi_process_info_t, sdma_usage) == 16 &&
		   offsetof(rsmi_process_info_t, cu_occupancy) == 24,
	       "rsmi_process_info_t");
_Static_assert(sizeof(rsmi_evt_notification_data_t) == 72 &&
		   offsetof(rsmi_evt_notification_data_t, message) == 8,
	       "rsmi_evt_notification_data_t");
_Static_assert(sizeof(rsmi_frequencies_t) == 264 && offsetof(rsmi_frequencies_t, frequency) == 8,
	       "rsmi_frequencies_t (5.2.3)");
_Static_assert(sizeof(rsmi_frequencies_v6_t) == 280 &&
		   offsetof(rsmi_frequencies_v6_t, num_supported) == 4 &&
		   offsetof(rsmi_frequencies_v6_t, frequency) == 16,
	       "rsmi_frequencies_t (6.x)");

/* The exported functions (prototypes for -Wmissing-prototypes). */
rsmi_status_t rsmi_init(uint64_t init_flags);
rsmi_status_t rsmi_shut_down(void);
rsmi_status_t rsmi_status_string(rsmi_status_t status, const char **status_string);
rsmi_status_t rsmi_version_get(rsmi_version_t *version);
rsmi_status_t rsmi_num_monitor_devices(uint32_t *num_devices);
rsmi_status_t rsmi_dev_name_get(uint32_t dv_ind, char *name, size_t len);
rsmi_status_t rsmi_dev_unique_id_get(uint32_t dv_ind, uint64_t *id);
rsmi_status_t rsmi_dev_pci_id_get(uint32_t dv_ind, uint64_t *bdfid);
rsmi_status_t rsmi_dev_busy_percent_get(uint32_t dv_ind, uint32_t *busy_percent);
rsmi_status_t rsmi_dev_memory_busy_percent_get(uint32_t dv_ind, uint32_t *busy_percent);
rsmi_status_t rsmi_dev_memory_total_get(uint32_t dv_ind, uint32_t mem_type, uint64_t *total);
rsmi_status_t rsmi_dev_memory_usage_get(uint32_t dv_ind, uint32_t mem_type, uint64_t *used);
rsmi_status_t rsmi_dev_power_ave_get(uint32_t dv_ind, uint32_t sensor_ind, uint64_t *power);
rsmi_status_t rsmi_dev_energy_count_get(uint32_t dv_ind, uint64_t *power, float *counter_resolution,
					uint64_t *timestamp);
rsmi_status_t rsmi_dev_temp_metric_get(uint32_t dv_ind, uint32_t sensor_type, uint32_t metric,
				       int64_t *temperature);
rsmi_status_t rsmi_dev_gpu_clk_freq_get(uint32_t dv_ind, uint32_t clk_type, void *f);
rsmi_status_t rsmi_dev_pci_throughput_get(uint32_t dv_ind, uint64_t *sent, uint64_t *received,
					  uint64_t *max_pkt_sz);
rsmi_status_t rsmi_dev_ecc_count_get(uint32_t dv_ind, uint64_t block, rsmi_error_count_t *ec);
rsmi_status_t rsmi_compute_process_info_get(rsmi_process_info_t *procs, uint32_t *num_items);
rsmi_status_t rsmi_compute_process_info_by_pid_get(uint32_t pid, rsmi_process_info_t *proc);
rsmi_status_t rsmi_compute_process_gpus_get(uint32_t pid, uint32_t *dv_indices,
					    uint32_t *num_devices);
rsmi_status_t rsmi_event_notification_init(uint32_t dv_ind);
rsmi_status_t rsmi_event_notification_mask_set(uint32_t dv_ind, uint64_t mask);
rsmi_status_t rsmi_event_notification_get(int timeout_ms, uint32_t *num_elem,
					  rsmi_evt_notification_data_t *data);
rsmi_status_t rsmi_event_notification_stop(uint32_t dv_ind);
uint64_t fake_rocm_calls(const char *name);

/* ---- state ---- */

static struct scenario *scn; /* NULL outside rsmi_init .. rsmi_shut_down */
static double t0;
static uint32_t version[3];
static bool events_on[SCN_MAX_DEVICES];
static uint64_t event_mask[SCN_MAX_DEVICES];
static bool delivered[SCN_MAX_EVENTS];

static struct {
	const char *name;
	uint64_t n;
} call_counts[] = {
    {"rsmi_init", 0},
    {"rsmi_shut_down", 0},
    {"rsmi_status_string", 0},
    {"rsmi_version_get", 0},
    {"rsmi_num_monitor_devices", 0},
    {"rsmi_dev_name_get", 0},
    {"rsmi_dev_unique_id_get", 0},
    {"rsmi_dev_pci_id_get", 0},
    {"rsmi_dev_busy_percent_get", 0},
    {"rsmi_dev_memory_busy_percent_get", 0},
    {"rsmi_dev_memory_total_get", 0},
    {"rsmi_dev_memory_usage_get", 0},
    {"rsmi_dev_power_ave_get", 0},
    {"rsmi_dev_energy_count_get", 0},
    {"rsmi_dev_temp_metric_get", 0},
    {"rsmi_dev_gpu_clk_freq_get", 0},
    {"rsmi_dev_pci_throughput_get", 0},
    {"rsmi_dev_ecc_count_get", 0},
    {"rsmi_compute_process_info_get", 0},
    {"rsmi_compute_process_info_by_pid_get", 0},
    {"rsmi_compute_process_gpus_get", 0},
    {"rsmi_event_notification_init", 0},
    {"rsmi_event_notification_mask_set", 0},
    {"rsmi_event_notification_get", 0},
    {"rsmi_event_notification_stop", 0},
    /* not a call: rsmi_event_notification_get calls that waited (timeout_ms != 0) */
    {"event_wait", 0},
};

#define NCALLS (sizeof(call_counts) / sizeof(call_counts[0]))

static void counted(const char *name)
{
	for (size_t i = 0; i < NCALLS; i++)
		if (strcmp(call_counts[i].name, name) == 0)
			call_counts[i].n++;
}

uint64_t fake_rocm_calls(const char *name)
{
	for (size_t i = 0; i < NCALLS; i++)
		if (strcmp(call_counts[i].name, name) == 0)
			return call_counts[i].n;
	return 0;
}

static double now(void)
{
	return scenario_now() - t0;
}

static long env_long(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 10) : 0;
}

static bool dev_lost(uint32_t dv)
{
	double at = scn->dev[dv].lost_at;

	return at >= 0 && now() >= at;
}

/* The answer of a call about device dv for scenario metric bit (0: none). */
static rsmi_status_t dev_status(uint32_t dv, uint32_t metric)
{
	if (!scn)
		return RSMI_STATUS_INIT_ERROR;
	if (dv >= (uint32_t)scn->ndevices)
		return RSMI_STATUS_INVALID_ARGS;
	if (dev_lost(dv))
		return RSMI_STATUS_NOT_SUPPORTED;
	if (scn->dev[dv].unsupported & metric)
		return RSMI_STATUS_NOT_SUPPORTED;
	return RSMI_STATUS_SUCCESS;
}

static uint64_t value(uint32_t dv, enum scn_value k)
{
	uint64_t v[SV_COUNT];

	scenario_values(scn, (int)dv, now(), v);
	return v[k];
}

/* ---- init, version, devices ---- */

rsmi_status_t rsmi_init(uint64_t init_flags)
{
	int ret;

	(void)init_flags;
	counted(__func__);
	free(scn);
	scn = calloc(1, sizeof(*scn));
	if (!scn)
		return RSMI_STATUS_INIT_ERROR;
	ret = scenario_load(scn);
	if (!ret && scn->init_say[0]) {
		fprintf(scn->init_say_stdout ? stdout : stderr, "%s\n", scn->init_say);
		fflush(stdout); /* a C++ library's std::cout, synced with stdio */
	}
	if (!ret && scn->no_gpu) {
		/* the real messages, byte for byte (rocm_smi_main.cc, rocm_smi_utils.cc) */
		errno = ENOENT;
		perror("Failed to open drm root directory /sys/class/drm.");
		fprintf(stderr, "Exception caught: %s.\n", "rsmi_init");
		free(scn);
		scn = NULL;
		return RSMI_STATUS_INIT_ERROR;
	}
	if (ret || scn->init_error) {
		rsmi_status_t st = ret ? RSMI_STATUS_INIT_ERROR : (rsmi_status_t)scn->init_error;

		free(scn);
		scn = NULL;
		return st;
	}
	t0 = scenario_now();
	memset(version, 0, sizeof(version));
	sscanf(scn->driver, "%u.%u.%u", &version[0], &version[1], &version[2]);
	memset(events_on, 0, sizeof(events_on));
	memset(event_mask, 0, sizeof(event_mask));
	memset(delivered, 0, sizeof(delivered));
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_shut_down(void)
{
	counted(__func__);
	free(scn);
	scn = NULL;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_status_string(rsmi_status_t status, const char **status_string)
{
	static const char *const text[] = {
	    "RSMI_STATUS_SUCCESS: The function has been executed successfully.",
	    "RSMI_STATUS_INVALID_ARGS: Invalid arguments",
	    "RSMI_STATUS_NOT_SUPPORTED: Feature not supported",
	    "RSMI_STATUS_FILE_ERROR: Problem accessing a file",
	    "RSMI_STATUS_PERMISSION: Permission denied",
	    "RSMI_STATUS_OUT_OF_RESOURCES: Out of resources",
	    "RSMI_STATUS_INTERNAL_EXCEPTION: An internal exception was caught",
	    "RSMI_STATUS_INPUT_OUT_OF_BOUNDS: Input out of bounds",
	    "RSMI_STATUS_INIT_ERROR: An error occurred during initialization (fake)",
	    "RSMI_STATUS_NOT_YET_IMPLEMENTED: Not implemented yet",
	    "RSMI_STATUS_NOT_FOUND: Item not found",
	    "RSMI_STATUS_INSUFFICIENT_SIZE: Insufficient size",
	    "RSMI_STATUS_INTERRUPT: Interrupt",
	    "RSMI_STATUS_UNEXPECTED_SIZE: Unexpected size",
	    "RSMI_STATUS_NO_DATA: No data",
	    "RSMI_STATUS_UNEXPECTED_DATA: Unexpected data",
	    "RSMI_STATUS_BUSY: Busy",
	    "RSMI_STATUS_REFCOUNT_OVERFLOW: Refcount overflow",
	};

	counted(__func__);
	if (!status_string)
		return RSMI_STATUS_INVALID_ARGS;
	if (status < sizeof(text) / sizeof(text[0]))
		*status_string = text[status];
	else
		*status_string = "RSMI_STATUS_UNKNOWN_ERROR: An unknown error occurred";
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_version_get(rsmi_version_t *v)
{
	counted(__func__);
	if (!scn)
		return RSMI_STATUS_INIT_ERROR;
	if (!v)
		return RSMI_STATUS_INVALID_ARGS;
	v->major = version[0];
	v->minor = version[1];
	v->patch = version[2];
	v->build = "fake";
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_num_monitor_devices(uint32_t *num_devices)
{
	counted(__func__);
	if (!scn)
		return RSMI_STATUS_INIT_ERROR;
	if (!num_devices)
		return RSMI_STATUS_INVALID_ARGS;
	*num_devices = (uint32_t)scn->ndevices;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_name_get(uint32_t dv_ind, char *name, size_t len)
{
	rsmi_status_t st = dev_status(dv_ind, 0);

	counted(__func__);
	if (st)
		return st;
	if (!name || len == 0)
		return RSMI_STATUS_INVALID_ARGS;
	if ((size_t)snprintf(name, len, "%s", scn->dev[dv_ind].name) >= len)
		return RSMI_STATUS_INSUFFICIENT_SIZE;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_unique_id_get(uint32_t dv_ind, uint64_t *id)
{
	rsmi_status_t st = dev_status(dv_ind, 0);
	const char *uuid;
	char *end;

	counted(__func__);
	if (st)
		return st;
	if (!id)
		return RSMI_STATUS_INVALID_ARGS;
	uuid = scn->dev[dv_ind].uuid;
	errno = 0;
	*id = strtoull(uuid, &end, 16);
	if (!*uuid || *end || errno)
		return RSMI_STATUS_NOT_SUPPORTED;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_pci_id_get(uint32_t dv_ind, uint64_t *bdfid)
{
	rsmi_status_t st = dev_status(dv_ind, 0);
	unsigned int domain, bus, dev, fn;

	counted(__func__);
	if (st)
		return st;
	if (!bdfid)
		return RSMI_STATUS_INVALID_ARGS;
	if (sscanf(scn->dev[dv_ind].bus, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4)
		return RSMI_STATUS_NOT_SUPPORTED;
	*bdfid = ((uint64_t)domain << 32) | ((uint64_t)(bus & 0xff) << 8) |
		 ((uint64_t)(dev & 0x1f) << 3) | (fn & 0x7);
	return RSMI_STATUS_SUCCESS;
}

/* ---- metrics ---- */

rsmi_status_t rsmi_dev_busy_percent_get(uint32_t dv_ind, uint32_t *busy_percent)
{
	rsmi_status_t st = dev_status(dv_ind, SM_UTIL);

	counted(__func__);
	if (st)
		return st;
	if (!busy_percent)
		return RSMI_STATUS_INVALID_ARGS;
	*busy_percent = (uint32_t)value(dv_ind, SV_UTIL);
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_memory_busy_percent_get(uint32_t dv_ind, uint32_t *busy_percent)
{
	rsmi_status_t st = dev_status(dv_ind, SM_MEM_UTIL);

	counted(__func__);
	if (st)
		return st;
	if (!busy_percent)
		return RSMI_STATUS_INVALID_ARGS;
	*busy_percent = (uint32_t)value(dv_ind, SV_MEM_UTIL);
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_memory_total_get(uint32_t dv_ind, uint32_t mem_type, uint64_t *total)
{
	rsmi_status_t st = dev_status(dv_ind, 0);

	counted(__func__);
	if (st)
		return st;
	if (!total)
		return RSMI_STATUS_INVALID_ARGS;
	if (mem_type != RSMI_MEM_TYPE_VRAM)
		return RSMI_STATUS_NOT_SUPPORTED;
	*total = scn->dev[dv_ind].mem_total;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_memory_usage_get(uint32_t dv_ind, uint32_t mem_type, uint64_t *used)
{
	rsmi_status_t st = dev_status(dv_ind, SM_MEM_USED);

	counted(__func__);
	if (st)
		return st;
	if (!used)
		return RSMI_STATUS_INVALID_ARGS;
	if (mem_type != RSMI_MEM_TYPE_VRAM)
		return RSMI_STATUS_NOT_SUPPORTED;
	*used = value(dv_ind, SV_MEM_USED);
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_power_ave_get(uint32_t dv_ind, uint32_t sensor_ind, uint64_t *power)
{
	rsmi_status_t st = dev_status(dv_ind, SM_POWER);
	double t;

	counted(__func__);
	if (st)
		return st;
	if (!power)
		return RSMI_STATUS_INVALID_ARGS;
	if (sensor_ind != 0)
		return RSMI_STATUS_NOT_SUPPORTED;
	t = now();
	scenario_refresh(scn, t);
	*power = scenario_power_mw(scn, (int)dv_ind, t) * 1000; /* mW -> µW */
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_energy_count_get(uint32_t dv_ind, uint64_t *power, float *counter_resolution,
					uint64_t *timestamp)
{
	rsmi_status_t st = dev_status(dv_ind, SM_ENERGY);
	struct timespec ts;
	double t;

	counted(__func__);
	if (st)
		return st;
	if (!power || !counter_resolution || !timestamp)
		return RSMI_STATUS_INVALID_ARGS;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	/* mJ -> counts of FAKE_ROCM_RESOLUTION_UJ µJ */
	t = now();
	scenario_refresh(scn, t);
	*power = (uint64_t)((double)scenario_energy_mj(scn, (int)dv_ind, t) * 1000.0 /
			    (double)FAKE_ROCM_RESOLUTION_UJ);
	*counter_resolution = FAKE_ROCM_RESOLUTION_UJ;
	*timestamp = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_temp_metric_get(uint32_t dv_ind, uint32_t sensor_type, uint32_t metric,
				       int64_t *temperature)
{
	rsmi_status_t st = dev_status(dv_ind, SM_TEMP);
	int64_t c;

	counted(__func__);
	if (st)
		return st;
	if (!temperature)
		return RSMI_STATUS_INVALID_ARGS;
	if (metric != RSMI_TEMP_CURRENT)
		return RSMI_STATUS_NOT_SUPPORTED;
	c = (int64_t)value(dv_ind, SV_TEMP);
	if (sensor_type == RSMI_TEMP_TYPE_EDGE && !env_long("FAKE_ROCM_NO_EDGE"))
		*temperature = c * 1000;
	else if (sensor_type == RSMI_TEMP_TYPE_JUNCTION)
		*temperature = (c + 10) * 1000;
	else
		return RSMI_STATUS_NOT_SUPPORTED;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_gpu_clk_freq_get(uint32_t dv_ind, uint32_t clk_type, void *f)
{
	rsmi_status_t st = dev_status(dv_ind, SM_CLOCKS);
	long layout = env_long("FAKE_ROCM_FREQ_LAYOUT");
	uint64_t hz;

	counted(__func__);
	if (st)
		return st;
	if (!f)
		return RSMI_STATUS_INVALID_ARGS;
	if (clk_type == RSMI_CLK_TYPE_SYS)
		hz = value(dv_ind, SV_SM_CLOCK) * 1000000;
	else if (clk_type == RSMI_CLK_TYPE_MEM)
		hz = value(dv_ind, SV_MEM_CLOCK) * 1000000;
	else
		return RSMI_STATUS_NOT_SUPPORTED;
	if (!layout)
		layout = version[0] >= 6 ? 6 : 5;
	if (layout == 6) {
		rsmi_frequencies_v6_t *v6 = f;

		memset(v6, 0, sizeof(*v6));
		v6->has_deep_sleep = true;
		v6->num_supported = 4;
		v6->current = 2;
		v6->frequency[0] = 100000000; /* the deep-sleep level */
		v6->frequency[1] = hz / 2;
		v6->frequency[2] = hz;
		v6->frequency[3] = hz + 100000000;
	} else {
		rsmi_frequencies_t *v5 = f;

		memset(v5, 0, sizeof(*v5));
		v5->num_supported = 3;
		v5->current = 1;
		v5->frequency[0] = hz / 2;
		v5->frequency[1] = hz;
		v5->frequency[2] = hz + 100000000;
	}
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_pci_throughput_get(uint32_t dv_ind, uint64_t *sent, uint64_t *received,
					  uint64_t *max_pkt_sz)
{
	rsmi_status_t st = dev_status(dv_ind, SM_PCIE);
	struct timespec one_second = {1, 0};

	counted(__func__);
	if (st)
		return st;
	if (!sent || !received || !max_pkt_sz)
		return RSMI_STATUS_INVALID_ARGS;
	nanosleep(&one_second, NULL); /* the real one counts packets for a second */
	*sent = value(dv_ind, SV_PCIE_TX_KBPS) * 1000 / 256;
	*received = value(dv_ind, SV_PCIE_RX_KBPS) * 1000 / 256;
	*max_pkt_sz = 256;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_ecc_count_get(uint32_t dv_ind, uint64_t block, rsmi_error_count_t *ec)
{
	rsmi_status_t st = dev_status(dv_ind, SM_ECC);

	counted(__func__);
	if (st)
		return st;
	if (!ec)
		return RSMI_STATUS_INVALID_ARGS;
	if ((uint32_t)block != RSMI_GPU_BLOCK_UMC)
		return RSMI_STATUS_NOT_SUPPORTED;
	ec->correctable_err = value(dv_ind, SV_ECC_SBE);
	ec->uncorrectable_err = value(dv_ind, SV_ECC_DBE);
	return RSMI_STATUS_SUCCESS;
}

/* ---- processes ---- */

/* A process entry that shows now: live, on a device that lists processes. */
static bool proc_visible(const struct scn_proc *p)
{
	uint32_t dv = (uint32_t)p->device;

	return scenario_proc_live(p, now()) && !dev_lost(dv) &&
	       !(scn->dev[dv].unsupported & SM_PROCS);
}

/* The system-wide entry of pid: sums over its visible scenario entries. */
static bool proc_info(uint32_t pid, rsmi_process_info_t *info)
{
	bool found = false, util_known = true;
	uint32_t cu = 0;

	memset(info, 0, sizeof(*info));
	info->process_id = pid;
	info->pasid = pid & 0xffff;
	for (int i = 0; i < scn->nprocs; i++) {
		const struct scn_proc *p = &scn->proc[i];

		if (!proc_visible(p) || scenario_pid(p) != pid)
			continue;
		found = true;
		info->vram_usage += p->mem;
		if (p->has_util && !(scn->dev[p->device].unsupported & SM_PROC_UTIL))
			cu += p->sm;
		else
			util_known = false;
	}
	info->cu_occupancy = util_known ? cu : 0xFFFFFFFFu;
	return found;
}

/* The distinct pids visible now, in scenario order. */
static uint32_t visible_pids(uint32_t *pids)
{
	uint32_t n = 0;

	for (int i = 0; i < scn->nprocs; i++) {
		uint32_t pid, k;

		if (!proc_visible(&scn->proc[i]))
			continue;
		pid = scenario_pid(&scn->proc[i]);
		for (k = 0; k < n && pids[k] != pid; k++)
			;
		if (k == n)
			pids[n++] = pid;
	}
	return n;
}

rsmi_status_t rsmi_compute_process_info_get(rsmi_process_info_t *procs, uint32_t *num_items)
{
	uint32_t pids[SCN_MAX_PROCS];
	uint32_t n, cap, race;
	bool any_lists = false;

	counted(__func__);
	if (!scn)
		return RSMI_STATUS_INIT_ERROR;
	if (!num_items)
		return RSMI_STATUS_INVALID_ARGS;
	for (int d = 0; d < scn->ndevices; d++)
		any_lists |= !(scn->dev[d].unsupported & SM_PROCS);
	if (scn->ndevices > 0 && !any_lists)
		return RSMI_STATUS_NOT_SUPPORTED;
	scenario_refresh(scn, now());
	n = visible_pids(pids);
	if (!procs) {
		race = (uint32_t)env_long("FAKE_ROCM_PROC_RACE");
		*num_items = n > race ? n - race : 0;
		return RSMI_STATUS_SUCCESS;
	}
	cap = *num_items;
	for (uint32_t i = 0; i < n && i < cap; i++)
		proc_info(pids[i], &procs[i]);
	if (cap < n) {
		*num_items = cap;
		return RSMI_STATUS_INSUFFICIENT_SIZE;
	}
	*num_items = n;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_compute_process_info_by_pid_get(uint32_t pid, rsmi_process_info_t *proc)
{
	counted(__func__);
	if (!scn)
		return RSMI_STATUS_INIT_ERROR;
	if (!proc)
		return RSMI_STATUS_INVALID_ARGS;
	scenario_refresh(scn, now());
	return proc_info(pid, proc) ? RSMI_STATUS_SUCCESS : RSMI_STATUS_NOT_FOUND;
}

rsmi_status_t rsmi_compute_process_gpus_get(uint32_t pid, uint32_t *dv_indices,
					    uint32_t *num_devices)
{
	bool uses[SCN_MAX_DEVICES] = {false};
	uint32_t n = 0, cap;

	counted(__func__);
	if (!scn)
		return RSMI_STATUS_INIT_ERROR;
	if (!num_devices)
		return RSMI_STATUS_INVALID_ARGS;
	scenario_refresh(scn, now());
	for (int i = 0; i < scn->nprocs; i++) {
		const struct scn_proc *p = &scn->proc[i];

		if (proc_visible(p) && scenario_pid(p) == pid && !uses[p->device]) {
			uses[p->device] = true;
			n++;
		}
	}
	if (n == 0)
		return RSMI_STATUS_NOT_FOUND;
	cap = dv_indices ? *num_devices : 0;
	*num_devices = n;
	if (!dv_indices)
		return RSMI_STATUS_SUCCESS;
	for (uint32_t d = 0, k = 0; d < SCN_MAX_DEVICES && k < cap; d++)
		if (uses[d])
			dv_indices[k++] = d;
	return cap < n ? RSMI_STATUS_INSUFFICIENT_SIZE : RSMI_STATUS_SUCCESS;
}

/* ---- events ---- */

rsmi_status_t rsmi_event_notification_init(uint32_t dv_ind)
{
	rsmi_status_t st = dev_status(dv_ind, SM_EVENTS);

	counted(__func__);
	if (st)
		return st;
	events_on[dv_ind] = true;
	event_mask[dv_ind] = 0;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_event_notification_mask_set(uint32_t dv_ind, uint64_t mask)
{
	counted(__func__);
	if (!scn)
		return RSMI_STATUS_INIT_ERROR;
	if (dv_ind >= (uint32_t)scn->ndevices || !events_on[dv_ind])
		return RSMI_STATUS_INVALID_ARGS;
	event_mask[dv_ind] = mask;
	return RSMI_STATUS_SUCCESS;
}

/* Events due, not yet given, of a device listening with the event's bit set. */
static uint32_t events_take(uint32_t cap, rsmi_evt_notification_data_t *data)
{
	uint32_t n = 0;
	double t = now();

	for (int i = 0; i < scn->nevents && n < cap; i++) {
		const struct scn_event *e = &scn->event[i];
		int d = e->device;

		if (delivered[i] || e->at > t || !events_on[d] || e->code < 1 || e->code > 64 ||
		    !(event_mask[d] & (1ull << (e->code - 1))))
			continue;
		delivered[i] = true;
		memset(&data[n], 0, sizeof(data[n]));
		data[n].dv_ind = (uint32_t)d;
		data[n].event = (uint32_t)e->code;
		snprintf(data[n].message, sizeof(data[n].message), "fake event %u on device %d",
			 (unsigned int)e->code, d);
		n++;
	}
	return n;
}

/* With nothing queued it waits up to timeout_ms, like the real poll(). */
rsmi_status_t rsmi_event_notification_get(int timeout_ms, uint32_t *num_elem,
					  rsmi_evt_notification_data_t *data)
{
	uint32_t n;

	counted(__func__);
	if (!scn)
		return RSMI_STATUS_INIT_ERROR;
	if (!num_elem || !data || *num_elem == 0)
		return RSMI_STATUS_INVALID_ARGS;
	n = events_take(*num_elem, data);
	if (n == 0 && timeout_ms != 0) {
		struct timespec ts = {0, 0};

		if (timeout_ms < 0 || timeout_ms > 2000)
			timeout_ms = 2000;
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000;
		counted("event_wait");
		nanosleep(&ts, NULL);
		n = events_take(*num_elem, data);
	}
	*num_elem = n;
	return n ? RSMI_STATUS_SUCCESS : RSMI_STATUS_NO_DATA;
}

rsmi_status_t rsmi_event_notification_stop(uint32_t dv_ind)
{
	counted(__func__);
	if (!scn)
		return RSMI_STATUS_INIT_ERROR;
	if (dv_ind >= (uint32_t)scn->ndevices || !events_on[dv_ind])
		return RSMI_STATUS_INVALID_ARGS;
	events_on[dv_ind] = false;
	event_mask[dv_ind] = 0;
	return RSMI_STATUS_SUCCESS;
}
