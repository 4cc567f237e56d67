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
 *   nvmlDeviceGetFieldValues: refuses scopeId UINT_MAX, one entry per link;
 *     does not know fields 269-271 (INVALID_ARGUMENT per entry, 12.9 added them)
 *   no GPM at all (nvmlGpm*: the 11.8 header added them)
 *
 * GPM, violation counters, PCIe replays, remapped rows, accounting and MIG
 * are written from NVIDIA's nvml.h ("NVML VERSION: 13.3.29", go-nvml
 * gen/nvml/nvml.h at 2f9e261), not from our backend: docs/gpu.md lists the
 * facts.  GPM samples are the fake time of their nvmlGpmSampleGet (or
 * nvmlGpmMigSampleGet); nvmlGpmMetricsGet gives each metric's exact time
 * average between the two.  A MIG device handle (nvmlDeviceGetMigDeviceHandleByIndex)
 * answers what real MIG devices answer: UUID, name, memory, its compute
 * processes and GPM; everything else NOT_SUPPORTED, utilization included.
 * A GPU in MIG mode lists its instances' processes with their GPU and
 * compute instance ids (as the real driver does for root), and answers
 * NOT_SUPPORTED for utilization, per-process utilization and remapped rows.
 * fake_nvml_gpm_last_num_metrics() tells the tests the numMetrics of the
 * last nvmlGpmMetricsGet.
 *
 * Scenario directives for init (scenario.h): `init_error N` answers N;
 * `no_gpu` answers NVML_ERROR_DRIVER_NOT_LOADED (9) as the real library
 * does, silently, where the nvidia kernel module is not loaded;
 * `init_say` writes a line first.
 *
 * State is the scenario, read again at each nvmlInit, and a few event sets
 * in a static array: the fake allocates nothing, never blocks and counts
 * nothing.  The calls are made from one thread, like the scenario.
 *
 * Like the real library, a successful nvmlInit starts a thread of its own
 * (the real one's is named "cuda…"; ours "fake-nvml"), with the signal mask
 * of the thread that called it, and nvmlShutdown ends it.  It only waits,
 * but a process-directed signal that the caller's other threads block goes
 * to it: a program that blocks SIGCHLD for a signalfd after nvmlInit never
 * sees its child end (seen with the real driver 580.159.04 on an H200:
 * `jobscope run` waited forever after its command had exited).
 */
#include "scenario.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

typedef struct {
	unsigned long long referenceTime; /* CPU timestamp, µs */
	unsigned long long violationTime; /* ns */
} nvmlViolationTime_t;

typedef struct {
	unsigned int gpuUtilization;
	unsigned int memoryUtilization;
	unsigned long long maxMemoryUsage; /* bytes */
	unsigned long long time;	   /* ms, 0 while the process runs */
	unsigned long long startTime;	   /* µs */
	unsigned int isRunning;
	unsigned int reserved[5];
} nvmlAccountingStats_t;

typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

typedef struct {
	unsigned int version; /* NVML_GPM_SUPPORT_VERSION */
	unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

typedef struct {
	unsigned int metricId;
	nvmlReturn_t nvmlReturn;
	double value;
	struct {
		char *shortName;
		char *longName;
		char *unit;
	} metricInfo;
} nvmlGpmMetric_t;

/*
 * The header declares metrics[NVML_GPM_METRIC_MAX], a size that changed
 * (98, 210, 333): the driver reads and writes numMetrics entries only, so
 * the fake declares no size at all.
 */
typedef struct {
	unsigned int version; /* NVML_GPM_METRICS_GET_VERSION */
	unsigned int numMetrics;
	nvmlGpmSample_t sample1;
	nvmlGpmSample_t sample2;
	nvmlGpmMetric_t metrics[];
} nvmlGpmMetricsGet_t;

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
_Static_assert(sizeof(nvmlViolationTime_t) == 16, "nvmlViolationTime_t");
_Static_assert(offsetof(nvmlViolationTime_t, violationTime) == 8, "violationTime");
_Static_assert(sizeof(nvmlAccountingStats_t) == 56, "nvmlAccountingStats_t");
_Static_assert(offsetof(nvmlAccountingStats_t, maxMemoryUsage) == 8, "maxMemoryUsage");
_Static_assert(offsetof(nvmlAccountingStats_t, time) == 16, "accounting time");
_Static_assert(offsetof(nvmlAccountingStats_t, startTime) == 24, "accounting startTime");
_Static_assert(offsetof(nvmlAccountingStats_t, isRunning) == 32, "accounting isRunning");
_Static_assert(sizeof(nvmlGpmSupport_t) == 8, "nvmlGpmSupport_t");
_Static_assert(sizeof(nvmlGpmMetric_t) == 40, "nvmlGpmMetric_t");
_Static_assert(offsetof(nvmlGpmMetric_t, nvmlReturn) == 4, "gpm nvmlReturn");
_Static_assert(offsetof(nvmlGpmMetric_t, value) == 8, "gpm value");
_Static_assert(offsetof(nvmlGpmMetric_t, metricInfo) == 16, "gpm metricInfo");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, numMetrics) == 4, "gpm numMetrics");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, sample1) == 8, "gpm sample1");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, sample2) == 16, "gpm sample2");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24, "gpm metrics");

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
#define NVML_VALUE_TYPE_UINT	      1
#define NVML_ERROR_MEMORY	      20
#define NVML_GPM_SUPPORT_VERSION      1
#define NVML_GPM_METRICS_GET_VERSION  1
#define NVML_DEVICE_MIG_DISABLE	      0
#define NVML_DEVICE_MIG_ENABLE	      1
/* nvmlPerfPolicyType_t */
#define NVML_PERF_POLICY_POWER		   0
#define NVML_PERF_POLICY_THERMAL	   1
#define NVML_PERF_POLICY_SYNC_BOOST	   2
#define NVML_PERF_POLICY_BOARD_LIMIT	   3
#define NVML_PERF_POLICY_LOW_UTILIZATION   4
#define NVML_PERF_POLICY_RELIABILITY	   5
#define NVML_PERF_POLICY_TOTAL_APP_CLOCKS  10
#define NVML_PERF_POLICY_TOTAL_BASE_CLOCKS 11
/* field ids: the violation counters (ns) and the PCIe replay counter */
#define NVML_FI_DEV_PERF_POLICY_POWER				74
#define NVML_FI_DEV_PERF_POLICY_TOTAL_BASE_CLOCKS		81
#define NVML_FI_DEV_PCIE_REPLAY_COUNTER				94
#define NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN	269
#define NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN 271

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
nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, int perfPolicyType,
					  nvmlViolationTime_t *violTime);
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows,
				       unsigned int *uncRows, unsigned int *isPending,
				       unsigned int *failureOccurred);
nvmlReturn_t nvmlDeviceGetAccountingMode(nvmlDevice_t device, int *mode);
nvmlReturn_t nvmlDeviceGetAccountingStats(nvmlDevice_t device, unsigned int pid,
					  nvmlAccountingStats_t *stats);
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
				  unsigned int *pendingMode);
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count);
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
						 nvmlDevice_t *migDevice);
nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice);
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id);
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id);
nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
							  nvmlDevice_t *device);
/* for the tests (dlsym): numMetrics of the last nvmlGpmMetricsGet that got that far */
unsigned int fake_nvml_gpm_last_num_metrics(void);

#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport);
nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *gpmSample);
nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample);
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample);
nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId,
				 nvmlGpmSample_t gpmSample);
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *metricsGet);
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

/* the most MIG devices under one GPU (an H100's seven 1g slices) */
#define FAKE_MIG_MAX_PER_GPU 7
/* GPM sample buffers: two per device and per MIG instance, and some spare */
#define FAKE_GPM_SAMPLES (2 * (SCN_MAX_DEVICES + SCN_MAX_MIGS) + 16)

struct nvmlDevice_st {
	int index; /* the GPU, or a MIG device's parent */
	int mig;   /* -1: the GPU; else the MIG device, in scn.mig[] */
};

struct nvmlGpmSample_st {
	bool in_use;
	bool taken; /* a SampleGet filled it */
	int device;
	int gi; /* SCN_NO_INSTANCE: the whole device */
	double t;
};

struct nvmlEventSet_st {
	bool in_use;
	unsigned long long types[SCN_MAX_DEVICES]; /* registered, per device */
	bool delivered[SCN_MAX_EVENTS];		   /* per scenario event */
};

static struct scenario scn;
static bool initialised;
static struct nvmlDevice_st devices[SCN_MAX_DEVICES];
static struct nvmlDevice_st mig_devices[SCN_MAX_MIGS];
static struct nvmlEventSet_st event_sets[FAKE_EVENT_SETS];
static struct nvmlGpmSample_st gpm_samples[FAKE_GPM_SAMPLES];
static unsigned int gpm_last_num_metrics;

static bool device_lost(int d, double t)
{
	return scn.dev[d].lost_at >= 0 && t >= scn.dev[d].lost_at;
}

static unsigned long long timestamp_us(double t)
{
	return FAKE_EPOCH_US + (unsigned long long)(t * 1e6);
}

/* A handle of ours: one of the GPUs, or one of the MIG devices. */
static bool handle_ok(nvmlDevice_t device)
{
	if (!device)
		return false;
	for (int i = 0; i < scn.ndevices; i++)
		if (device == &devices[i])
			return true;
	for (int i = 0; i < scn.nmigs; i++)
		if (device == &mig_devices[i])
			return true;
	return false;
}

/*
 * What every device call checks first: initialised, a handle of ours, the
 * device still on the bus (at the time of this call, read once) and the
 * metric supported.  On success *d is the device's index (a MIG device's
 * parent) and *m its MIG device in scn.mig[] or -1.
 */
static nvmlReturn_t mig_enter(nvmlDevice_t device, uint32_t metric, int *d, int *m, double *t)
{
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (!handle_ok(device))
		return NVML_ERROR_INVALID_ARGUMENT;
	*d = device->index;
	*m = device->mig;
	*t = scenario_now();
	if (device_lost(*d, *t))
		return NVML_ERROR_GPU_IS_LOST;
	if (scn.dev[*d].unsupported & metric)
		return NVML_ERROR_NOT_SUPPORTED;
	return NVML_SUCCESS;
}

/* The same for the calls a MIG device does not answer: NOT_SUPPORTED for it. */
static nvmlReturn_t device_enter(nvmlDevice_t device, uint32_t metric, int *d, double *t)
{
	nvmlReturn_t r;
	int m;

	r = mig_enter(device, metric, d, &m, t);
	if (r == NVML_SUCCESS && m >= 0)
		return NVML_ERROR_NOT_SUPPORTED;
	return r;
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

/* The library's own thread (see the file's comment): it waits on a pipe. */
static struct {
	bool running;
	pthread_t thread;
	int pipe[2];
} helper;

static void *helper_main(void *arg)
{
	char c;

	(void)arg;
	while (read(helper.pipe[0], &c, 1) < 0)
		; /* a signal it was given, and ignored, interrupts nothing else */
	return NULL;
}

static void helper_start(void)
{
	if (helper.running || pipe(helper.pipe))
		return;
	if (pthread_create(&helper.thread, NULL, helper_main, NULL)) {
		close(helper.pipe[0]);
		close(helper.pipe[1]);
		return;
	}
	pthread_setname_np(helper.thread, "fake-nvml");
	helper.running = true;
}

static void helper_stop(void)
{
	if (!helper.running)
		return;
	if (write(helper.pipe[1], "", 1) == 1)
		pthread_join(helper.thread, NULL);
	close(helper.pipe[0]);
	close(helper.pipe[1]);
	helper.running = false;
}

static nvmlReturn_t init(void)
{
	if (scenario_load(&scn))
		return NVML_ERROR_UNKNOWN;
	if (scn.init_say[0]) {
		fprintf(scn.init_say_stdout ? stdout : stderr, "%s\n", scn.init_say);
		fflush(stdout);
	}
	if (scn.init_sleep_ms > 0) {
		struct timespec d = {scn.init_sleep_ms / 1000,
				     (long)(scn.init_sleep_ms % 1000) * 1000000};

		while (nanosleep(&d, &d) != 0)
			;
	}
	/* the real libnvidia-ml on a machine without the nvidia module: silent, 9 */
	if (scn.no_gpu)
		return NVML_ERROR_DRIVER_NOT_LOADED;
	if (scn.init_error)
		return (nvmlReturn_t)scn.init_error;
	for (int i = 0; i < SCN_MAX_DEVICES; i++) {
		devices[i].index = i;
		devices[i].mig = -1;
	}
	for (int i = 0; i < scn.nmigs; i++) {
		mig_devices[i].index = scn.mig[i].device;
		mig_devices[i].mig = i;
	}
	memset(event_sets, 0, sizeof(event_sets));
	memset(gpm_samples, 0, sizeof(gpm_samples));
	gpm_last_num_metrics = 0;
	initialised = true;
	helper_start();
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
	helper_stop();
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

/* A MIG device: "NVIDIA H100 80GB HBM3 MIG 1g.10gb", its parent's name and its profile. */
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	char buf[160];
	nvmlReturn_t r;
	double t;
	int d, m;

	r = mig_enter(device, 0, &d, &m, &t);
	if (r)
		return r;
	if (m < 0)
		return copy_string(name, length, scn.dev[d].name);
	snprintf(buf, sizeof(buf), "%s MIG %s", scn.dev[d].name, scn.mig[m].profile);
	return copy_string(name, length, buf);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	nvmlReturn_t r;
	double t;
	int d, m;

	r = mig_enter(device, 0, &d, &m, &t);
	if (r)
		return r;
	return copy_string(uuid, length, m < 0 ? scn.dev[d].uuid : scn.mig[m].uuid);
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
	if (scenario_mig_mode(&scn, d)) /* as real GPUs in MIG mode */
		return NVML_ERROR_NOT_SUPPORTED;
	if (!utilization)
		return NVML_ERROR_INVALID_ARGUMENT;
	utilization->gpu = (unsigned int)value(d, t, SV_UTIL);
	utilization->memory = (unsigned int)value(d, t, SV_MEM_UTIL);
	return NVML_SUCCESS;
}

/*
 * Total and used memory of a GPU or a MIG device (m >= 0): a MIG device's
 * from its `at D/GI` steps; a GPU in MIG mode uses its own and each GPU
 * instance's.
 */
static void memory_of(int d, int m, double t, unsigned long long *total, unsigned long long *used)
{
	uint64_t v[SV_COUNT];

	if (m >= 0) {
		*total = scn.mig[m].mem_total;
		scenario_mig_values(&scn, d, (int)scn.mig[m].gi, t, v);
		*used = v[SV_MEM_USED];
		return;
	}
	*total = scn.dev[d].mem_total;
	*used = value(d, t, SV_MEM_USED);
	for (int i = 0; i < scn.nmigs; i++) {
		bool first = true; /* of its GPU instance: they share its memory */

		if (scn.mig[i].device != d)
			continue;
		for (int k = 0; k < i; k++)
			if (scn.mig[k].device == d && scn.mig[k].gi == scn.mig[i].gi)
				first = false;
		if (!first)
			continue;
		scenario_mig_values(&scn, d, (int)scn.mig[i].gi, t, v);
		*used += v[SV_MEM_USED];
	}
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	unsigned long long total, used;
	nvmlReturn_t r;
	double t;
	int d, m;

	r = mig_enter(device, SM_MEM_USED, &d, &m, &t);
	if (r)
		return r;
	if (!memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	memory_of(d, m, t, &total, &used);
	memory->total = total;
	memory->used = used + FAKE_MEM_RESERVED;
	memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
	return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
	unsigned long long total, used;
	nvmlReturn_t r;
	double t;
	int d, m;

	r = mig_enter(device, SM_MEM_USED, &d, &m, &t);
	if (r)
		return r;
	if (!memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (memory->version != NVML_MEMORY_V2_VERSION)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	memory_of(d, m, t, &total, &used);
	memory->total = total;
	memory->reserved = FAKE_MEM_RESERVED;
	memory->used = used;
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

/* The violation counter of a field id or a policy: the integral of its fraction, ns. */
static int viol_key(unsigned int field_id)
{
	switch (field_id) {
	case NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN:
		return SF_VIOL_SW_THERMAL;
	case NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN + 1:
		return SF_VIOL_HW_THERMAL;
	case NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN:
		return SF_VIOL_HW_POWER_BRAKE;
	default:
		if (field_id >= NVML_FI_DEV_PERF_POLICY_POWER &&
		    field_id <= NVML_FI_DEV_PERF_POLICY_TOTAL_BASE_CLOCKS)
			return SF_VIOL_POWER + (int)(field_id - NVML_FI_DEV_PERF_POLICY_POWER);
		return -1;
	}
}

static unsigned long long viol_ns(int d, int key, double t)
{
	return (unsigned long long)(scenario_fintegral(&scn, d, SCN_NO_INSTANCE,
						       (enum scn_fvalue)key, 0, t) *
					1e9 +
				    0.5);
}

static void viol_field(int d, double t, nvmlFieldValue_t *fv)
{
	int key = viol_key(fv->fieldId);

#ifdef FAKE_NVML_OLD_DRIVER
	if (fv->fieldId >= NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN) {
		fv->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT; /* not known before 12.9 */
		return;
	}
#endif
	if (scn.dev[d].unsupported & (SM_VIOL | SM_VIOL_FIELDS)) {
		fv->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
		return;
	}
	fv->nvmlReturn = NVML_SUCCESS;
	fv->value.ullVal = viol_ns(d, key, t);
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
		if (fv->fieldId == NVML_FI_NVLINK_DATA_TX ||
		    fv->fieldId == NVML_FI_NVLINK_DATA_RX) {
			nvlink_field(d, t, fv);
		} else if (viol_key(fv->fieldId) >= 0) {
			viol_field(d, t, fv);
		} else if (fv->fieldId == NVML_FI_DEV_PCIE_REPLAY_COUNTER) {
			fv->valueType = NVML_VALUE_TYPE_UINT;
			fv->nvmlReturn = scn.dev[d].unsupported & SM_PCIE_REPLAY
					     ? NVML_ERROR_NOT_SUPPORTED
					     : NVML_SUCCESS;
			fv->value.uiVal = (unsigned int)value(d, t, SV_PCIE_REPLAY);
		} else {
			fv->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
		}
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
/*
 * Whether the list of a GPU (m < 0: every process on it, MIG instances'
 * too) or of a MIG device (its compute instance's) has the process.
 */
static bool proc_listed(const struct scn_proc *p, int d, int m, bool graphics, double t)
{
	if (p->device != d || p->graphics != graphics || !scenario_proc_live(p, t))
		return false;
	return m < 0 || (p->gi == (int)scn.mig[m].gi && p->ci == (int)scn.mig[m].ci);
}

static nvmlReturn_t running_processes(nvmlDevice_t device, bool graphics, unsigned int *infoCount,
				      void *infos, size_t stride)
{
	unsigned int n = 0, k = 0;
	nvmlReturn_t r;
	double t;
	int d, m;

	r = mig_enter(device, SM_PROCS, &d, &m, &t);
	if (r)
		return r;
	if (m >= 0 && graphics) /* no graphics on a MIG device */
		return NVML_ERROR_NOT_SUPPORTED;
	if (!infoCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	scenario_refresh(&scn, t);
	for (int i = 0; i < scn.nprocs; i++)
		if (proc_listed(&scn.proc[i], d, m, graphics, t))
			n++;
	if (n > *infoCount || (n > 0 && !infos)) {
		*infoCount = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (int i = 0; i < scn.nprocs && k < n; i++) {
		const struct scn_proc *p = &scn.proc[i];
		/* the v1 fields lead both layouts */
		nvmlProcessInfo_v1_t *e = (void *)((char *)infos + k * stride);

		if (!proc_listed(p, d, m, graphics, t))
			continue;
		e->pid = scenario_pid(p);
		e->usedGpuMemory = p->mem;
		if (stride == sizeof(nvmlProcessInfo_t)) {
			nvmlProcessInfo_t *e2 = (nvmlProcessInfo_t *)(void *)e;
			bool in_mig = p->gi != SCN_NO_INSTANCE;

			e2->gpuInstanceId = in_mig ? (unsigned int)p->gi : NVML_NO_INSTANCE;
			e2->computeInstanceId = in_mig ? (unsigned int)p->ci : NVML_NO_INSTANCE;
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
	if (scenario_mig_mode(&scn, d))
		return NVML_ERROR_NOT_SUPPORTED;
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

/* ---- violation counters, remapped rows, accounting ---- */

/* NVML 13 deprecates it for the field values; the same counters. */
nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, int perfPolicyType,
					  nvmlViolationTime_t *violTime)
{
	nvmlReturn_t r;
	double t;
	int d, key;

	r = device_enter(device, SM_VIOL, &d, &t);
	if (r)
		return r;
	if (!violTime)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (perfPolicyType >= NVML_PERF_POLICY_POWER &&
	    perfPolicyType <= NVML_PERF_POLICY_RELIABILITY)
		key = SF_VIOL_POWER + perfPolicyType;
	else if (perfPolicyType == NVML_PERF_POLICY_TOTAL_APP_CLOCKS)
		key = SF_VIOL_APP_CLOCKS;
	else if (perfPolicyType == NVML_PERF_POLICY_TOTAL_BASE_CLOCKS)
		key = SF_VIOL_BASE_CLOCKS;
	else
		return NVML_ERROR_INVALID_ARGUMENT;
	violTime->referenceTime = timestamp_us(t);
	violTime->violationTime = viol_ns(d, key, t);
	return NVML_SUCCESS;
}

/* "NOT_SUPPORTED if MIG is enabled" (nvml.h), as for a device without a row remapper. */
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows,
				       unsigned int *uncRows, unsigned int *isPending,
				       unsigned int *failureOccurred)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_REMAP, &d, &t);
	if (r)
		return r;
	if (scenario_mig_mode(&scn, d))
		return NVML_ERROR_NOT_SUPPORTED;
	if (!corrRows || !uncRows || !isPending || !failureOccurred)
		return NVML_ERROR_INVALID_ARGUMENT;
	*corrRows = (unsigned int)value(d, t, SV_REMAPPED_CORR);
	*uncRows = (unsigned int)value(d, t, SV_REMAPPED_UNC);
	*isPending = value(d, t, SV_REMAP_PENDING) != 0;
	*failureOccurred = value(d, t, SV_REMAP_FAILED) != 0;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetAccountingMode(nvmlDevice_t device, int *mode)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_ACCOUNTING, &d, &t);
	if (r)
		return r;
	if (!mode)
		return NVML_ERROR_INVALID_ARGUMENT;
	*mode = scn.dev[d].accounting ? NVML_FEATURE_ENABLED : 0;
	return NVML_SUCCESS;
}

/*
 * A process the device has had (running or not, as the driver's circular
 * buffer keeps them): maxMemoryUsage is its maxmem, else its mem.
 * NOT_SUPPORTED while accounting mode is off, NOT_FOUND for a pid it never had.
 */
nvmlReturn_t nvmlDeviceGetAccountingStats(nvmlDevice_t device, unsigned int pid,
					  nvmlAccountingStats_t *stats)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, SM_ACCOUNTING, &d, &t);
	if (r)
		return r;
	if (!stats)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!scn.dev[d].accounting)
		return NVML_ERROR_NOT_SUPPORTED;
	scenario_refresh(&scn, t);
	for (int i = 0; i < scn.nprocs; i++) {
		const struct scn_proc *p = &scn.proc[i];

		if (p->device != d || !pid || scenario_pid(p) != pid)
			continue;
		memset(stats, 0, sizeof(*stats));
		stats->gpuUtilization = p->sm;
		stats->memoryUtilization = p->memutil;
		stats->maxMemoryUsage = p->has_maxmem ? p->maxmem : p->mem;
		stats->startTime = timestamp_us(p->from);
		stats->isRunning = scenario_proc_live(p, t);
		return NVML_SUCCESS;
	}
	return NVML_ERROR_NOT_FOUND;
}

/* ---- MIG ---- */

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
				  unsigned int *pendingMode)
{
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, 0, &d, &t);
	if (r)
		return r;
	if (!currentMode || !pendingMode)
		return NVML_ERROR_INVALID_ARGUMENT;
	*currentMode = *pendingMode =
	    scenario_mig_mode(&scn, d) ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
	return NVML_SUCCESS;
}

static unsigned int migs_of(int d)
{
	unsigned int n = 0;

	for (int i = 0; i < scn.nmigs; i++)
		n += scn.mig[i].device == d;
	return n;
}

/* "Returns zero if MIG is not supported or enabled." */
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
	unsigned int n;
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, 0, &d, &t);
	if (r)
		return r;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	n = migs_of(d);
	*count = n == 0 ? 0 : n > FAKE_MIG_MAX_PER_GPU ? n : FAKE_MIG_MAX_PER_GPU;
	return NVML_SUCCESS;
}

/* The instances in scenario order; NOT_FOUND for the indexes below the maximum with none. */
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
						 nvmlDevice_t *migDevice)
{
	unsigned int max = 0, k = 0;
	nvmlReturn_t r;
	double t;
	int d;

	r = device_enter(device, 0, &d, &t);
	if (r)
		return r;
	if (!migDevice)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!scenario_mig_mode(&scn, d))
		return NVML_ERROR_NOT_SUPPORTED;
	nvmlDeviceGetMaxMigDeviceCount(device, &max);
	if (index >= max)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < scn.nmigs; i++) {
		if (scn.mig[i].device != d)
			continue;
		if (k++ == index) {
			*migDevice = &mig_devices[i];
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
	nvmlReturn_t r;
	double t;
	int d, m;

	r = mig_enter(device, 0, &d, &m, &t);
	if (r)
		return r;
	if (!isMigDevice)
		return NVML_ERROR_INVALID_ARGUMENT;
	*isMigDevice = m >= 0;
	return NVML_SUCCESS;
}

static nvmlReturn_t instance_id(nvmlDevice_t device, unsigned int *id, bool compute)
{
	nvmlReturn_t r;
	double t;
	int d, m;

	r = mig_enter(device, 0, &d, &m, &t);
	if (r)
		return r;
	if (!id || m < 0) /* "Target MIG device handle" */
		return NVML_ERROR_INVALID_ARGUMENT;
	*id = compute ? scn.mig[m].ci : scn.mig[m].gi;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
	return instance_id(device, id, false);
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
	return instance_id(device, id, true);
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
							  nvmlDevice_t *device)
{
	nvmlReturn_t r;
	double t;
	int d, m;

	r = mig_enter(migDevice, 0, &d, &m, &t);
	if (r)
		return r;
	if (!device || m < 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &devices[d];
	return NVML_SUCCESS;
}

/* ---- GPM ---- */

unsigned int fake_nvml_gpm_last_num_metrics(void)
{
	return gpm_last_num_metrics;
}

#ifndef FAKE_NVML_OLD_DRIVER
/* The metric ids this fake knows, and the scenario key each one reads (-1: always 0). */
static const struct {
	unsigned int id;
	int key;
	const char *name, *unit;
} gpm_metrics[] = {
    {1, SF_GR_ACTIVE, "GRAPHICS_UTIL", "%"},   {2, SF_SM_ACTIVE, "SM_UTIL", "%"},
    {3, SF_SM_OCCUPANCY, "SM_OCCUPANCY", "%"}, {4, -1, "INTEGER_UTIL", "%"},
    {5, SF_TENSOR, "ANY_TENSOR_UTIL", "%"},    {6, SF_DFMA, "DFMA_TENSOR_UTIL", "%"},
    {7, SF_HMMA, "HMMA_TENSOR_UTIL", "%"},     {8, -1, "DMMA_TENSOR_UTIL", "%"},
    {9, SF_IMMA, "IMMA_TENSOR_UTIL", "%"},     {10, SF_DRAM, "DRAM_BW_UTIL", "%"},
    {11, SF_FP64, "FP64_UTIL", "%"},	       {12, SF_FP32, "FP32_UTIL", "%"},
    {13, SF_FP16, "FP16_UTIL", "%"},	       {20, -1, "PCIE_TX_PER_SEC", "MiB/s"},
    {21, -1, "PCIE_RX_PER_SEC", "MiB/s"},
};

static struct nvmlGpmSample_st *gpm_sample(nvmlGpmSample_t s)
{
	if (!s || s < gpm_samples || s >= gpm_samples + FAKE_GPM_SAMPLES || !s->in_use)
		return NULL;
	return s;
}

/* A MIG device handle answers for its GPU: GPM is the GPU's feature. */
nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport)
{
	nvmlReturn_t r;
	double t;
	int d, m;

	r = mig_enter(device, SM_GPM, &d, &m, &t);
	if (r)
		return r;
	if (!gpmSupport)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	gpmSupport->isSupportedDevice = scn.dev[d].gpm;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *gpmSample)
{
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (!gpmSample)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < FAKE_GPM_SAMPLES; i++) {
		if (!gpm_samples[i].in_use) {
			memset(&gpm_samples[i], 0, sizeof(gpm_samples[i]));
			gpm_samples[i].in_use = true;
			*gpmSample = &gpm_samples[i];
			return NVML_SUCCESS;
		}
	}
	return (nvmlReturn_t)NVML_ERROR_MEMORY;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample)
{
	struct nvmlGpmSample_st *s = gpm_sample(gpmSample);

	if (!s)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(s, 0, sizeof(*s));
	return NVML_SUCCESS;
}

static nvmlReturn_t gpm_take(int d, int gi, double t, nvmlGpmSample_t gpmSample)
{
	struct nvmlGpmSample_st *s = gpm_sample(gpmSample);

	if (!scn.dev[d].gpm)
		return NVML_ERROR_NOT_SUPPORTED;
	if (!s)
		return NVML_ERROR_INVALID_ARGUMENT;
	s->taken = true;
	s->device = d;
	s->gi = gi;
	s->t = t;
	return NVML_SUCCESS;
}

/* On a MIG device handle, its GPU instance's. */
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample)
{
	nvmlReturn_t r;
	double t;
	int d, m;

	r = mig_enter(device, SM_GPM, &d, &m, &t);
	if (r)
		return r;
	return gpm_take(d, m < 0 ? SCN_NO_INSTANCE : (int)scn.mig[m].gi, t, gpmSample);
}

nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId,
				 nvmlGpmSample_t gpmSample)
{
	nvmlReturn_t r;
	double t;
	int d, m;

	r = mig_enter(device, SM_GPM, &d, &m, &t);
	if (r)
		return r;
	if (m >= 0) /* "Device to get samples for": the GPU */
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < scn.nmigs; i++)
		if (scn.mig[i].device == d && scn.mig[i].gi == gpuInstanceId)
			return gpm_take(d, (int)gpuInstanceId, t, gpmSample);
	return NVML_ERROR_INVALID_ARGUMENT; /* no such GPU instance */
}

static int gpm_metric_index(const struct scn_device *dev, unsigned int id)
{
	if (id >= dev->gpm_metric_max)
		return -1;
	if (dev->has_gpm_ids && (id >= 64 || !(dev->gpm_ids & (1ull << id))))
		return -1;
	for (size_t i = 0; i < sizeof(gpm_metrics) / sizeof(gpm_metrics[0]); i++)
		if (gpm_metrics[i].id == id)
			return (int)i;
	return -1;
}

/*
 * Each metric asked, over the interval between sample1 and sample2 (which
 * must be the later one, of the same device or GPU instance): the exact
 * time average of the scenario's step function.  Reads and writes
 * metrics[0..numMetrics) and nothing else.
 */
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *metricsGet)
{
	const struct nvmlGpmSample_st *a, *b;
	const struct scn_device *dev;
	double t;

	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (!metricsGet)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	a = gpm_sample(metricsGet->sample1);
	b = gpm_sample(metricsGet->sample2);
	if (!a || !b || !a->taken || !b->taken || a->device != b->device || a->gi != b->gi ||
	    b->t < a->t)
		return NVML_ERROR_INVALID_ARGUMENT;
	dev = &scn.dev[a->device];
	t = scenario_now();
	if (device_lost(a->device, t))
		return NVML_ERROR_GPU_IS_LOST;
	if (metricsGet->numMetrics > dev->gpm_metric_max)
		return NVML_ERROR_INVALID_ARGUMENT;
	gpm_last_num_metrics = metricsGet->numMetrics;
	for (unsigned int i = 0; i < metricsGet->numMetrics; i++) {
		nvmlGpmMetric_t *mt = &metricsGet->metrics[i];
		int k = gpm_metric_index(dev, mt->metricId);
		int key;

		memset(&mt->metricInfo, 0, sizeof(mt->metricInfo));
		mt->value = 0;
		if (k < 0) {
			mt->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
			continue;
		}
		mt->nvmlReturn = NVML_SUCCESS;
		mt->metricInfo.shortName = (char *)gpm_metrics[k].name;
		mt->metricInfo.longName = (char *)gpm_metrics[k].name;
		mt->metricInfo.unit = (char *)gpm_metrics[k].unit;
		key = gpm_metrics[k].key;
		if (key < 0)
			continue;
		if (b->t > a->t)
			mt->value = scenario_fintegral(&scn, a->device, a->gi, (enum scn_fvalue)key,
						       a->t, b->t) /
				    (b->t - a->t);
		else
			mt->value =
			    scenario_fvalue(&scn, a->device, a->gi, (enum scn_fvalue)key, a->t);
	}
	return NVML_SUCCESS;
}
#endif
