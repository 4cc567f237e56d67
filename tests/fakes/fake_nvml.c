/*
 * fake_nvml.c - a fake libnvidia-ml for the tests: NVML's real symbol names
 * and struct layouts (docs: gpu-abi.md), with the values of the scenario
 * file (scenario.h) at the time of each call.
 *
 * Built twice (meson.build).  libnvidia-ml.so.1 is like driver 535: the
 * newest names and, as real drivers do, their deprecated predecessors.
 * libnvidia-ml-old.so (FAKE_NVML_OLD_DRIVER) is an old driver with only the
 * older names and struct sizes, so that the backend's fallbacks run:
 *   nvmlInit, nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex: no _v2
 *   nvmlDeviceGetPciInfo: no _v2/_v3; fills the legacy bus id and the
 *     numbers, never busId[32]
 *   nvmlDeviceGetMemoryInfo: no _v2
 *   nvmlDeviceGetComputeRunningProcesses: no _v2/_v3, 16-byte entries
 *   nvmlDeviceGetGraphicsRunningProcesses_v2: no _v3, 24-byte entries (the
 *     two lists fall back differently so that one library runs both paths)
 *   nvmlDeviceGetCurrentClocksThrottleReasons: no ClocksEventReasons
 *   nvmlDeviceGetPowerManagementLimit: no EnforcedPowerLimit
 *   nvmlEventSetWait: no _v2
 *   nvmlDeviceGetFieldValues: refuses scopeId UINT_MAX, one entry per link
 *
 * Scenario directives for init (scenario.h): `init_error N` answers N;
 * `no_gpu` answers NVML_ERROR_DRIVER_NOT_LOADED (9) as the real library
 * does, silently, where the nvidia kernel module is not loaded;
 * `init_say` writes a line first.
 *
 * State is the scenario, read again at each nvmlInit, and a few event sets
 * in a static array: the fake allocates nothing, never blocks and counts
 * nothing.  One thread only, like the scenario.
 */
#include "scenario.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- NVML's ABI, our own declarations (gpu-abi.md) ---- */

typedef enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
	NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

typedef struct {
	char busIdLegacy[16];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct {
	unsigned int gpu;
	unsigned int memory;
} nvmlUtilization_t;

typedef struct {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;

typedef struct {
	unsigned int version;
	unsigned long long total;
	unsigned long long reserved;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_v2_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
	unsigned int pid;
	unsigned long long timeStamp;
	unsigned int smUtil;
	unsigned int memUtil;
	unsigned int encUtil;
	unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef union {
	double dVal;
	int siVal;
	unsigned int uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	signed long long sllVal;
	unsigned short usVal;
} nvmlValue_t;

typedef struct {
	unsigned int fieldId;
	unsigned int scopeId;
	long long timestamp;
	long long latencyUsec;
	int valueType;
	nvmlReturn_t nvmlReturn;
	nvmlValue_t value;
} nvmlFieldValue_t;

typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType;
	unsigned long long eventData;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlEventData_t;

/* the table of gpu-abi.md, checked */
_Static_assert(sizeof(nvmlReturn_t) == 4, "nvmlReturn_t is an int-sized enum");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t");
_Static_assert(offsetof(nvmlPciInfo_t, domain) == 16, "nvmlPciInfo_t.domain");
_Static_assert(offsetof(nvmlPciInfo_t, pciSubSystemId) == 32, "nvmlPciInfo_t.pciSubSystemId");
_Static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "nvmlPciInfo_t.busId");
_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t");
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t");
_Static_assert(offsetof(nvmlMemory_v2_t, total) == 8, "nvmlMemory_v2_t.total");
_Static_assert(offsetof(nvmlMemory_v2_t, reserved) == 16, "nvmlMemory_v2_t.reserved");
_Static_assert(offsetof(nvmlMemory_v2_t, free) == 24, "nvmlMemory_v2_t.free");
_Static_assert(offsetof(nvmlMemory_v2_t, used) == 32, "nvmlMemory_v2_t.used");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t");
_Static_assert(offsetof(nvmlProcessInfo_v1_t, usedGpuMemory) == 8, "v1 usedGpuMemory");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t");
_Static_assert(offsetof(nvmlProcessInfo_t, usedGpuMemory) == 8, "usedGpuMemory");
_Static_assert(offsetof(nvmlProcessInfo_t, gpuInstanceId) == 16, "gpuInstanceId");
_Static_assert(offsetof(nvmlProcessInfo_t, computeInstanceId) == 20, "computeInstanceId");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "nvmlProcessUtilizationSample_t");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, timeStamp) == 8, "sample timeStamp");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16, "sample smUtil");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, memUtil) == 20, "sample memUtil");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, decUtil) == 28, "sample decUtil");
_Static_assert(sizeof(nvmlValue_t) == 8, "nvmlValue_t");
_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t");
_Static_assert(offsetof(nvmlFieldValue_t, scopeId) == 4, "field scopeId");
_Static_assert(offsetof(nvmlFieldValue_t, timestamp) == 8, "field timestamp");
_Static_assert(offsetof(nvmlFieldValue_t, latencyUsec) == 16, "field latencyUsec");
_Static_assert(offsetof(nvmlFieldValue_t, valueType) == 24, "field valueType");
_Static_assert(offsetof(nvmlFieldValue_t, nvmlReturn) == 28, "field nvmlReturn");
_Static_assert(offsetof(nvmlFieldValue_t, value) == 32, "field value");
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t");
_Static_assert(offsetof(nvmlEventData_t, eventType) == 8, "event eventType");
_Static_assert(offsetof(nvmlEventData_t, eventData) == 16, "event eventData");
_Static_assert(offsetof(nvmlEventData_t, gpuInstanceId) == 24, "event gpuInstanceId");
_Static_assert(offsetof(nvmlEventData_t, computeInstanceId) == 28, "event computeInstanceId");

#define NVML_MEMORY_V2_VERSION	      (unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24))
#define NVML_VALUE_TYPE_ULL	      3
#define NVML_FI_NVLINK_DATA_TX	      138
#define NVML_FI_NVLINK_DATA_RX	      139
#define NVML_FEATURE_ENABLED	      1
#define NVML_EVENT_SBE		      0x1ull
#define NVML_EVENT_DBE		      0x2ull
#define NVML_EVENT_PSTATE	      0x4ull
#define NVML_EVENT_XID		      0x8ull
#define NVML_VALUE_NOT_AVAILABLE      0xFFFFFFFFFFFFFFFFull
#define NVML_NO_INSTANCE	      0xFFFFFFFFu
#define NVML_CLOCK_GRAPHICS	      0
#define NVML_CLOCK_SM		      1
#define NVML_CLOCK_MEM		      2
#define NVML_TEMPERATURE_GPU	      0
#define NVML_PCIE_UTIL_TX_BYTES	      0
#define NVML_PCIE_UTIL_RX_BYTES	      1
#define NVML_MEMORY_ERROR_CORRECTED   0
#define NVML_MEMORY_ERROR_UNCORRECTED 1

/* ---- the exports (-Wmissing-prototypes wants them declared) ---- */

nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length);
nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minor);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, int counter, unsigned int *value);
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int *isActive);
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
				      nvmlFieldValue_t *values);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power);
nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit);
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensorType, unsigned int *temp);
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int *clock);
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
						       unsigned long long *reasons);
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType, int counterType,
					 unsigned long long *eccCounts);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
						  nvmlProcessInfo_v1_t *infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
						   nvmlProcessInfo_v1_t *infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
						      nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
					     nvmlProcessUtilizationSample_t *utilization,
					     unsigned int *processSamplesCount,
					     unsigned long long lastSeenTimeStamp);
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set);
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes);
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
				      nvmlEventSet_t set);
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms);
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);

#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory);
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit);
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
						    unsigned long long *reasons);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
						     nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
						     nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
						      nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms);
#endif

/* ---- state ---- */

#define FAKE_EVENT_SETS 4
/* the events this fake can deliver; PState is there so that callers must mask */
#define FAKE_EVENT_TYPES (NVML_EVENT_SBE | NVML_EVENT_DBE | NVML_EVENT_PSTATE | NVML_EVENT_XID)
/* process utilization timestamps: µs, like a CPU clock well after the epoch */
#define FAKE_EPOCH_US 1700000000000000ull
/* how far back the driver keeps process utilization samples */
#define FAKE_SAMPLE_HISTORY_US 1000000ull
/* what the driver keeps for itself: v2 reports it apart, v1 counts it as used */
#define FAKE_MEM_RESERVED (64ull << 20)

struct nvmlDevice_st {
	int index;
};

struct nvmlEventSet_st {
	bool in_use;
	unsigned long long types[SCN_MAX_DEVICES]; /* registered, per device */
	bool delivered[SCN_MAX_EVENTS];		   /* per scenario event */
};

static struct scenario scn;
static bool initialised;
static struct nvmlDevice_st devices[SCN_MAX_DEVICES];
static struct nvmlEventSet_st event_sets[FAKE_EVENT_SETS];

static bool device_lost(int d, double t)
{
	return scn.dev[d].lost_at >= 0 && t >= scn.dev[d].lost_at;
}

static unsigned long long timestamp_us(double t)
{
	return FAKE_EPOCH_US + (unsigned long long)(t * 1e6);
}

/*
 * What every device call checks first: initialised, a handle of ours, the
 * device still on the bus (at the time of this call, read once) and the
 * metric supported.  On success *d is the device's index.
 */
static nvmlReturn_t device_enter(nvmlDevice_t device, uint32_t metric, int *d, double *t)
{
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (!device || device < devices || device >= devices + scn.ndevices)
		return NVML_ERROR_INVALID_ARGUMENT;
	*d = device->index;
	*t = scenario_now();
	if (device_lost(*d, *t))
		return NVML_ERROR_GPU_IS_LOST;
	if (scn.dev[*d].unsupported & metric)
		return NVML_ERROR_NOT_SUPPORTED;
	return NVML_SUCCESS;
}

/* One scenario value of the device at time t. */
static uint64_t value(int d, double t, enum scn_value k)
{
	uint64_t v[SV_COUNT];

	scenario_values(&scn, d, t, v);
	return v[k];
}

static nvmlReturn_t copy_string(char *buf, unsigned int length, const char *s)
{
	if (!buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(s) + 1 > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, s, strlen(s) + 1);
	return NVML_SUCCESS;
}

/* ---- library ---- */

static nvmlReturn_t init(void)
{
	if (scenario_load(&scn))
		return NVML_ERROR_UNKNOWN;
	if (scn.init_say[0]) {
		fprintf(scn.init_say_stdout ? stdout : stderr, "%s\n", scn.init_say);
		fflush(stdout);
	}
	/* the real libnvidia-ml on a machine without the nvidia module: silent, 9 */
	if (scn.no_gpu)
		return NVML_ERROR_DRIVER_NOT_LOADED;
	if (scn.init_error)
		return (nvmlReturn_t)scn.init_error;
	for (int i = 0; i < SCN_MAX_DEVICES; i++)
		devices[i].index = i;
	memset(event_sets, 0, sizeof(event_sets));
	initialised = true;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit(void)
{
	return init();
}

nvmlReturn_t nvmlShutdown(void)
{
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	initialised = false;
	memset(event_sets, 0, sizeof(event_sets));
	return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case NVML_SUCCESS:
		return "Success";
	case NVML_ERROR_UNINITIALIZED:
		return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT:
		return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case NVML_ERROR_NOT_FOUND:
		return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE:
		return "Insufficient Size";
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	case NVML_ERROR_TIMEOUT:
		return "Timeout";
	case NVML_ERROR_GPU_IS_LOST:
		return "GPU is lost";
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
		return "RM has detected an NVML/RM version mismatch.";
	default:
		return "Unknown Error";
	}
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	return copy_string(version, length, scn.driver);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
	char buf[96];

	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	snprintf(buf, sizeof(buf), "12.%s", scn.driver); /* CUDA major, then the driver */
	return copy_string(version, length, buf);
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (!deviceCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	*deviceCount = (unsigned int)scn.ndevices;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (!device || index >= (unsigned int)scn.ndevices)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &devices[index];
	return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlInit_v2(void)
{
	return init();
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	return nvmlDeviceGetCount(deviceCount);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	return nvmlDeviceGetHandleByIndex(index, device);
}
#endif

/* ---- device identity ---- */

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, 0, &d, &t);
	if (r)
		return r;
	return copy_string(name, length, scn.dev[d].name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, 0, &d, &t);
	if (r)
		return r;
	return copy_string(uuid, length, scn.dev[d].uuid);
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minor)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, 0, &d, &t);
	if (r)
		return r;
	if (!minor)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (scn.dev[d].minor < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	*minor = (unsigned int)scn.dev[d].minor;
	return NVML_SUCCESS;
}

/* The old call knew only the 16-byte bus id and the numbers before busId[32]. */
static nvmlReturn_t pci_info(nvmlDevice_t device, nvmlPciInfo_t *pci, bool legacy_only)
{
	unsigned int domain = 0, bus = 0, dev = 0, fn = 0;
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, 0, &d, &t);
	if (r)
		return r;
	if (!pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	sscanf(scn.dev[d].bus, "%x:%x:%x.%x", &domain, &bus, &dev, &fn);
	memset(pci, 0, offsetof(nvmlPciInfo_t, busId));
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.0", domain & 0xffff,
		 bus, dev);
	pci->domain = domain;
	pci->bus = bus;
	pci->device = dev;
	if (!legacy_only)
		snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.0", domain, bus, dev);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	return pci_info(device, pci, true);
}

#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	return pci_info(device, pci, false);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	return pci_info(device, pci, false);
}
#endif

/* ---- per-tick readings ---- */

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_UTIL | SM_MEM_UTIL, &d, &t);
	if (r)
		return r;
	if (!utilization)
		return NVML_ERROR_INVALID_ARGUMENT;
	utilization->gpu = (unsigned int)value(d, t, SV_UTIL);
	utilization->memory = (unsigned int)value(d, t, SV_MEM_UTIL);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_MEM_USED, &d, &t);
	if (r)
		return r;
	if (!memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	memory->total = scn.dev[d].mem_total;
	memory->used = value(d, t, SV_MEM_USED) + FAKE_MEM_RESERVED;
	memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
	return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_MEM_USED, &d, &t);
	if (r)
		return r;
	if (!memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (memory->version != NVML_MEMORY_V2_VERSION)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	memory->total = scn.dev[d].mem_total;
	memory->reserved = FAKE_MEM_RESERVED;
	memory->used = value(d, t, SV_MEM_USED);
	memory->free = memory->total > memory->used + memory->reserved
			   ? memory->total - memory->used - memory->reserved
			   : 0;
	return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, int counter, unsigned int *value_kbps)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_PCIE, &d, &t);
	if (r)
		return r;
	if (!value_kbps)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (counter == NVML_PCIE_UTIL_TX_BYTES)
		*value_kbps = (unsigned int)value(d, t, SV_PCIE_TX_KBPS);
	else if (counter == NVML_PCIE_UTIL_RX_BYTES)
		*value_kbps = (unsigned int)value(d, t, SV_PCIE_RX_KBPS);
	else
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int *isActive)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_NVLINK, &d, &t);
	if (r)
		return r;
	if (!isActive)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (scn.dev[d].nvlinks == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	if (link >= scn.dev[d].nvlinks)
		return NVML_ERROR_INVALID_ARGUMENT;
	*isActive = NVML_FEATURE_ENABLED;
	return NVML_SUCCESS;
}

/*
 * One NVLink throughput field.  The scenario gives the total over links;
 * link l carries total / n, link 0 also the remainder, so the links add up.
 */
static void nvlink_field(int d, double t, nvmlFieldValue_t *fv)
{
	uint32_t links = scn.dev[d].nvlinks;
	uint64_t total;

	fv->nvmlReturn = NVML_SUCCESS;
	if ((scn.dev[d].unsupported & SM_NVLINK) || links == 0) {
		fv->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
		return;
	}
	total = value(d, t,
		      fv->fieldId == NVML_FI_NVLINK_DATA_TX ? SV_NVLINK_TX_KIB : SV_NVLINK_RX_KIB);
	if (fv->scopeId == UINT_MAX) {
#ifdef FAKE_NVML_OLD_DRIVER
		fv->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
#else
		fv->value.ullVal = total;
#endif
	} else if (fv->scopeId < links) {
		fv->value.ullVal = total / links + (fv->scopeId == 0 ? total % links : 0);
	} else {
		fv->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
	}
}

/* Unknown fields get a per-entry error; the call itself succeeds. */
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
				      nvmlFieldValue_t *values)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, 0, &d, &t);
	if (r)
		return r;
	if (!values || valuesCount < 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < valuesCount; i++) {
		nvmlFieldValue_t *fv = &values[i];

		fv->timestamp = (long long)timestamp_us(t);
		fv->latencyUsec = 0;
		fv->valueType = NVML_VALUE_TYPE_ULL;
		fv->value.ullVal = 0;
		if (fv->fieldId == NVML_FI_NVLINK_DATA_TX || fv->fieldId == NVML_FI_NVLINK_DATA_RX)
			nvlink_field(d, t, fv);
		else
			fv->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
	}
	return NVML_SUCCESS;
}

/* FAKE_NVML_MISSING_SYMBOLS: a driver that lacks a few entry points altogether */
#ifndef FAKE_NVML_MISSING_SYMBOLS
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_POWER, &d, &t);
	if (r)
		return r;
	if (!power)
		return NVML_ERROR_INVALID_ARGUMENT;
	scenario_refresh(&scn, t);
	*power = (unsigned int)scenario_power_mw(&scn, d, t);
	return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_POWER, &d, &t);
	if (r)
		return r;
	if (!limit)
		return NVML_ERROR_INVALID_ARGUMENT;
	*limit = scn.dev[d].power_limit_mw;
	return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit)
{
	return nvmlDeviceGetPowerManagementLimit(device, limit);
}
#endif

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_ENERGY, &d, &t);
	if (r)
		return r;
	if (!energy)
		return NVML_ERROR_INVALID_ARGUMENT;
	scenario_refresh(&scn, t);
	*energy = scenario_energy_mj(&scn, d, t);
	return NVML_SUCCESS;
}

#ifndef FAKE_NVML_MISSING_SYMBOLS
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensorType, unsigned int *temp)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_TEMP, &d, &t);
	if (r)
		return r;
	if (!temp || sensorType != NVML_TEMPERATURE_GPU)
		return NVML_ERROR_INVALID_ARGUMENT;
	*temp = (unsigned int)value(d, t, SV_TEMP);
	return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int *clock)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_CLOCKS, &d, &t);
	if (r)
		return r;
	if (!clock)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (type == NVML_CLOCK_GRAPHICS || type == NVML_CLOCK_SM)
		*clock = (unsigned int)value(d, t, SV_SM_CLOCK);
	else if (type == NVML_CLOCK_MEM)
		*clock = (unsigned int)value(d, t, SV_MEM_CLOCK);
	else
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
						       unsigned long long *reasons)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_THROTTLE, &d, &t);
	if (r)
		return r;
	if (!reasons)
		return NVML_ERROR_INVALID_ARGUMENT;
	*reasons = value(d, t, SV_THROTTLE);
	return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
						    unsigned long long *reasons)
{
	return nvmlDeviceGetCurrentClocksThrottleReasons(device, reasons);
}
#endif

/* Volatile and aggregate counts are the same here: the driver was never reloaded. */
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType, int counterType,
					 unsigned long long *eccCounts)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_ECC, &d, &t);
	if (r)
		return r;
	if (!eccCounts || counterType < 0 || counterType > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (errorType == NVML_MEMORY_ERROR_CORRECTED)
		*eccCounts = value(d, t, SV_ECC_SBE);
	else if (errorType == NVML_MEMORY_ERROR_UNCORRECTED)
		*eccCounts = value(d, t, SV_ECC_DBE);
	else
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_SUCCESS;
}

/* ---- processes ---- */

/*
 * A running-process list, entries `stride` bytes apart: 16 (v1) or 24.  The
 * processes live at this call's time, so a test clock that moves at each
 * call makes the list change between the count query and the read.
 */
static nvmlReturn_t running_processes(nvmlDevice_t device, bool graphics, unsigned int *infoCount,
				      void *infos, size_t stride)
{
	unsigned int n = 0, k = 0;
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_PROCS, &d, &t);
	if (r)
		return r;
	if (!infoCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	scenario_refresh(&scn, t);
	for (int i = 0; i < scn.nprocs; i++) {
		const struct scn_proc *p = &scn.proc[i];

		if (p->device == d && p->graphics == graphics && scenario_proc_live(p, t))
			n++;
	}
	if (n > *infoCount || (n > 0 && !infos)) {
		*infoCount = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (int i = 0; i < scn.nprocs && k < n; i++) {
		const struct scn_proc *p = &scn.proc[i];
		/* the v1 fields lead both layouts */
		nvmlProcessInfo_v1_t *e = (void *)((char *)infos + k * stride);

		if (p->device != d || p->graphics != graphics || !scenario_proc_live(p, t))
			continue;
		e->pid = scenario_pid(p);
		e->usedGpuMemory = p->mem;
		if (stride == sizeof(nvmlProcessInfo_t)) {
			nvmlProcessInfo_t *e2 = (nvmlProcessInfo_t *)(void *)e;

			e2->gpuInstanceId = NVML_NO_INSTANCE;
			e2->computeInstanceId = NVML_NO_INSTANCE;
		}
		k++;
	}
	*infoCount = k;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
						  nvmlProcessInfo_v1_t *infos)
{
	return running_processes(device, false, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
						   nvmlProcessInfo_v1_t *infos)
{
	return running_processes(device, true, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
						      nvmlProcessInfo_t *infos)
{
	return running_processes(device, true, infoCount, infos, sizeof(*infos));
}

#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
						     nvmlProcessInfo_t *infos)
{
	return running_processes(device, false, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
						     nvmlProcessInfo_t *infos)
{
	return running_processes(device, false, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
						      nvmlProcessInfo_t *infos)
{
	return running_processes(device, true, infoCount, infos, sizeof(*infos));
}
#endif

/*
 * The driver's process utilization samples (scenario.h): one per process
 * on the device at each multiple of the device's sample period, stamped
 * with the period's end, holding its sm/memutil scaled by the part of the
 * period it was there.  Only those newer than lastSeenTimeStamp, of the
 * last FAKE_SAMPLE_HISTORY_US, taken by now; none is NOT_FOUND.  Odd
 * entries list their samples newest first, so a caller must compare
 * timestamps to find the newest.
 */
static unsigned int utilization_samples(int d, double t, unsigned long long last_seen,
					nvmlProcessUtilizationSample_t *out, unsigned int max)
{
	unsigned long long period = scn.dev[d].proc_sample_us,
			   now_us = (unsigned long long)(t * 1e6);
	unsigned long long k_last = now_us / period, k_first = 1;
	unsigned int n = 0;

	if (now_us > FAKE_SAMPLE_HISTORY_US)
		k_first = (now_us - FAKE_SAMPLE_HISTORY_US) / period + 1;
	if (last_seen >= FAKE_EPOCH_US && (last_seen - FAKE_EPOCH_US) / period + 1 > k_first)
		k_first = (last_seen - FAKE_EPOCH_US) / period + 1;
	for (int i = 0; i < scn.nprocs; i++) {
		const struct scn_proc *p = &scn.proc[i];

		if (p->device != d || !p->has_util)
			continue;
		for (unsigned long long j = k_first; j <= k_last; j++) {
			unsigned long long k = i % 2 ? k_last - (j - k_first) : j;
			double end = (double)(k * period) / 1e6, len = (double)period / 1e6;
			double part = scenario_proc_overlap(p, end - len, end) / len;
			nvmlProcessUtilizationSample_t *s;

			if (part <= 0)
				continue;
			if (out && n < max) {
				s = &out[n];
				memset(s, 0, sizeof(*s));
				s->pid = scenario_pid(p);
				s->timeStamp = FAKE_EPOCH_US + k * period;
				s->smUtil = (unsigned int)(p->sm * part + 0.5);
				s->memUtil = (unsigned int)(p->memutil * part + 0.5);
			}
			n++;
		}
	}
	return n;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
					     nvmlProcessUtilizationSample_t *utilization,
					     unsigned int *processSamplesCount,
					     unsigned long long lastSeenTimeStamp)
{
	unsigned int n;
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_PROC_UTIL, &d, &t);
	if (r)
		return r;
	if (!processSamplesCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	scenario_refresh(&scn, t);
	n = utilization_samples(d, t, lastSeenTimeStamp, NULL, 0);
	if (n == 0) {
		*processSamplesCount = 0;
		return NVML_ERROR_NOT_FOUND;
	}
	if (!utilization || *processSamplesCount < n) {
		*processSamplesCount = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	*processSamplesCount = utilization_samples(d, t, lastSeenTimeStamp, utilization, n);
	return NVML_SUCCESS;
}

/* ---- events ---- */

static struct nvmlEventSet_st *event_set(nvmlEventSet_t set)
{
	if (!set || set < event_sets || set >= event_sets + FAKE_EVENT_SETS || !set->in_use)
		return NULL;
	return set;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (!set)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < FAKE_EVENT_SETS; i++) {
		if (!event_sets[i].in_use) {
			memset(&event_sets[i], 0, sizeof(event_sets[i]));
			event_sets[i].in_use = true;
			*set = &event_sets[i];
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_INSUFFICIENT_RESOURCES;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_EVENTS, &d, &t);
	if (r)
		return r;
	if (!eventTypes)
		return NVML_ERROR_INVALID_ARGUMENT;
	*eventTypes = FAKE_EVENT_TYPES;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
				      nvmlEventSet_t set)
{
	struct nvmlEventSet_st *es = event_set(set);
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_EVENTS, &d, &t);
	if (r)
		return r;
	if (!es)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (eventTypes & ~FAKE_EVENT_TYPES)
		return NVML_ERROR_NOT_SUPPORTED;
	es->types[d] |= eventTypes;
	return NVML_SUCCESS;
}

/*
 * The earliest XID due by now that this set has not delivered, for a device
 * registered for XIDs.  Then GPU_IS_LOST if a registered device is lost,
 * else TIMEOUT: the fake never waits, whatever timeoutms says.
 */
static nvmlReturn_t event_wait(nvmlEventSet_t set, nvmlEventData_t *data, bool v2)
{
	struct nvmlEventSet_st *es = event_set(set);
	int next = -1;
	double t;

	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (!es || !data)
		return NVML_ERROR_INVALID_ARGUMENT;
	t = scenario_now();
	for (int i = 0; i < scn.nevents; i++) {
		const struct scn_event *e = &scn.event[i];

		if (es->delivered[i] || e->at > t || !(es->types[e->device] & NVML_EVENT_XID))
			continue;
		if (next < 0 || e->at < scn.event[next].at)
			next = i;
	}
	if (next >= 0) {
		es->delivered[next] = true;
		data->device = &devices[scn.event[next].device];
		data->eventType = NVML_EVENT_XID;
		data->eventData = scn.event[next].code;
		if (v2) { /* the old call's struct ends before the MIG ids */
			data->gpuInstanceId = NVML_NO_INSTANCE;
			data->computeInstanceId = NVML_NO_INSTANCE;
		}
		return NVML_SUCCESS;
	}
	for (int d = 0; d < scn.ndevices; d++)
		if (es->types[d] && device_lost(d, t))
			return NVML_ERROR_GPU_IS_LOST;
	return NVML_ERROR_TIMEOUT;
}

nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
	(void)timeoutms;
	return event_wait(set, data, false);
}

#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
	(void)timeoutms;
	return event_wait(set, data, true);
}
#endif

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	struct nvmlEventSet_st *es = event_set(set);

	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (!es)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(es, 0, sizeof(*es));
	return NVML_SUCCESS;
}
