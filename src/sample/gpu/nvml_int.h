/*
 * nvml_int.h - the NVML backend's own declarations, shared by nvml.c
 * (loading, identity, the coarse metrics, processes, events, MIG) and
 * nvml_prof.c (what the SMs did: GPM, violation counters, PCIe replays,
 * remapped rows, accounting mode).  Not a public interface: gpu.h is.
 *
 * Our own declarations of the few NVML types used (gpu-abi.md and
 * docs/gpu.md, from NVIDIA's nvml.h), with layout checks; the backend's
 * state; the call-counting macros.  Every library call goes through NVML()
 * so that calls() counts it.  One thread drives all of it.
 */
#ifndef JOBSCOPE_NVML_INT_H
#define JOBSCOPE_NVML_INT_H

#include "gpu.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the NVML ABI: only what the backend uses ---- */

typedef int nvml_return_t; /* nvmlReturn_t, an int-sized enum */
typedef struct nvml_device_st *nvml_device_t;
typedef struct nvml_event_set_st *nvml_event_set_t;

#define NVML_SUCCESS			     0
#define NVML_ERROR_INVALID_ARGUMENT	     2
#define NVML_ERROR_NOT_SUPPORTED	     3
#define NVML_ERROR_NOT_FOUND		     6
#define NVML_ERROR_INSUFFICIENT_SIZE	     7
#define NVML_ERROR_DRIVER_NOT_LOADED	     9
#define NVML_ERROR_TIMEOUT		     10
#define NVML_ERROR_FUNCTION_NOT_FOUND	     13
#define NVML_ERROR_GPU_IS_LOST		     15
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25

#define NVML_FEATURE_ENABLED		1
#define NVML_PCIE_UTIL_TX_BYTES		0
#define NVML_PCIE_UTIL_RX_BYTES		1
#define NVML_CLOCK_SM			1
#define NVML_CLOCK_MEM			2
#define NVML_TEMPERATURE_GPU		0
#define NVML_MEMORY_ERROR_CORRECTED	0
#define NVML_MEMORY_ERROR_UNCORRECTED	1
#define NVML_VOLATILE_ECC		0
#define NVML_VALUE_TYPE_UINT		1
#define NVML_VALUE_TYPE_ULONG		2
#define NVML_VALUE_TYPE_ULL		3
#define NVML_VALUE_TYPE_SLL		4
#define NVML_FI_NVLINK_DATA_TX		138 /* KiB counters */
#define NVML_FI_NVLINK_DATA_RX		139
#define NVML_SCOPE_ALL_LINKS		UINT_MAX
#define NVML_EVENT_SBE			0x1ull
#define NVML_EVENT_DBE			0x2ull
#define NVML_EVENT_XID			0x8ull
#define NVML_VALUE_NOT_AVAILABLE	0xFFFFFFFFFFFFFFFFull
#define NVML_DEVICE_STRING_BUFFER_SIZE	96 /* name and UUID, V2 sizes */
#define NVML_SYSTEM_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_MIG_ENABLE		1
#define NVML_GPM_SUPPORT_VERSION	1 /* a plain number, not NVML_STRUCT_VERSION */
#define NVML_GPM_METRICS_GET_VERSION	1
#define NVML_FI_DEV_PCIE_REPLAY_COUNTER 94

struct nvml_pci_info {
	char bus_id_legacy[16]; /* all the unsuffixed call fills, with the numbers */
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pci_device_id;
	unsigned int pci_subsystem_id;
	char bus_id[32];
};

struct nvml_utilization {
	unsigned int gpu;
	unsigned int memory;
};

struct nvml_memory {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
};

struct nvml_memory_v2 {
	unsigned int version; /* NVML_MEMORY_V2_VERSION, not 2 */
	unsigned long long total;
	unsigned long long reserved;
	unsigned long long free;
	unsigned long long used;
};

#define NVML_MEMORY_V2_VERSION (unsigned int)(sizeof(struct nvml_memory_v2) | (2u << 24))

/* for the unsuffixed process-list calls */
struct nvml_process_info_v1 {
	unsigned int pid;
	unsigned long long used_gpu_memory;
};

/* for the _v2 and _v3 calls; starts like v1 */
struct nvml_process_info {
	unsigned int pid;
	unsigned long long used_gpu_memory; /* or NVML_VALUE_NOT_AVAILABLE */
	unsigned int gpu_instance_id;
	unsigned int compute_instance_id;
};

struct nvml_process_utilization_sample {
	unsigned int pid;
	unsigned long long time_stamp; /* µs */
	unsigned int sm_util;
	unsigned int mem_util;
	unsigned int enc_util;
	unsigned int dec_util;
};

union nvml_value {
	double d_val;
	int si_val;
	unsigned int ui_val;
	unsigned long ul_val;
	unsigned long long ull_val;
	long long sll_val;
	unsigned short us_val;
};

struct nvml_field_value {
	unsigned int field_id;
	unsigned int scope_id; /* the link, or NVML_SCOPE_ALL_LINKS */
	long long timestamp;
	long long latency_usec;
	int value_type;
	nvml_return_t nvml_return; /* per entry */
	union nvml_value value;
};

struct nvml_event_data {
	nvml_device_t device;
	unsigned long long event_type;
	unsigned long long event_data; /* the XID number for XID events */
	unsigned int gpu_instance_id;
	unsigned int compute_instance_id;
};

struct nvml_violation_time {
	unsigned long long reference_time; /* CPU timestamp, µs */
	unsigned long long violation_time; /* ns, cumulative */
};

/* nvmlAccountingStats_t */
struct nvml_accounting_stats {
	unsigned int gpu_utilization;
	unsigned int memory_utilization;
	unsigned long long max_memory_usage; /* bytes, or NVML_VALUE_NOT_AVAILABLE */
	unsigned long long time;
	unsigned long long start_time;
	unsigned int is_running;
	unsigned int reserved[5];
};

typedef struct nvml_gpm_sample_st *nvml_gpm_sample_t;

struct nvml_gpm_support {
	unsigned int version; /* NVML_GPM_SUPPORT_VERSION */
	unsigned int is_supported_device;
};

struct nvml_gpm_metric {
	unsigned int metric_id;
	nvml_return_t nvml_return; /* per metric */
	double value;
	struct {
		char *short_name;
		char *long_name;
		char *unit;
	} metric_info;
};

/*
 * The header's metrics[NVML_GPM_METRIC_MAX] changed size (98, 210, 333);
 * the driver reads and writes numMetrics entries only, so ours holds the
 * metrics we ask and numMetrics says so.
 */
#define NVML_GPM_ASKED 11
struct nvml_gpm_metrics_get {
	unsigned int version; /* NVML_GPM_METRICS_GET_VERSION */
	unsigned int num_metrics;
	nvml_gpm_sample_t sample1; /* the older */
	nvml_gpm_sample_t sample2;
	struct nvml_gpm_metric metrics[NVML_GPM_ASKED];
};

/* the table of gpu-abi.md, checked */
_Static_assert(sizeof(struct nvml_pci_info) == 68, "nvmlPciInfo_t");
_Static_assert(offsetof(struct nvml_pci_info, domain) == 16, "nvmlPciInfo_t.domain");
_Static_assert(offsetof(struct nvml_pci_info, pci_subsystem_id) == 32, "nvmlPciInfo_t.sub");
_Static_assert(offsetof(struct nvml_pci_info, bus_id) == 36, "nvmlPciInfo_t.busId");
_Static_assert(sizeof(struct nvml_utilization) == 8, "nvmlUtilization_t");
_Static_assert(sizeof(struct nvml_memory) == 24, "nvmlMemory_t");
_Static_assert(sizeof(struct nvml_memory_v2) == 40, "nvmlMemory_v2_t");
_Static_assert(offsetof(struct nvml_memory_v2, total) == 8, "nvmlMemory_v2_t.total");
_Static_assert(offsetof(struct nvml_memory_v2, reserved) == 16, "nvmlMemory_v2_t.reserved");
_Static_assert(offsetof(struct nvml_memory_v2, free) == 24, "nvmlMemory_v2_t.free");
_Static_assert(offsetof(struct nvml_memory_v2, used) == 32, "nvmlMemory_v2_t.used");
_Static_assert(NVML_MEMORY_V2_VERSION == 0x02000028, "nvmlMemory_v2");
_Static_assert(sizeof(struct nvml_process_info_v1) == 16, "nvmlProcessInfo_v1_t");
_Static_assert(offsetof(struct nvml_process_info_v1, used_gpu_memory) == 8, "v1 memory");
_Static_assert(sizeof(struct nvml_process_info) == 24, "nvmlProcessInfo_t");
_Static_assert(offsetof(struct nvml_process_info, used_gpu_memory) == 8, "memory");
_Static_assert(offsetof(struct nvml_process_info, gpu_instance_id) == 16, "gpuInstanceId");
_Static_assert(offsetof(struct nvml_process_info, compute_instance_id) == 20, "ciId");
_Static_assert(sizeof(struct nvml_process_utilization_sample) == 32, "utilization sample");
_Static_assert(offsetof(struct nvml_process_utilization_sample, time_stamp) == 8, "timeStamp");
_Static_assert(offsetof(struct nvml_process_utilization_sample, sm_util) == 16, "smUtil");
_Static_assert(offsetof(struct nvml_process_utilization_sample, mem_util) == 20, "memUtil");
_Static_assert(offsetof(struct nvml_process_utilization_sample, dec_util) == 28, "decUtil");
_Static_assert(sizeof(union nvml_value) == 8, "nvmlValue_t");
_Static_assert(sizeof(struct nvml_field_value) == 40, "nvmlFieldValue_t");
_Static_assert(offsetof(struct nvml_field_value, scope_id) == 4, "scopeId");
_Static_assert(offsetof(struct nvml_field_value, timestamp) == 8, "timestamp");
_Static_assert(offsetof(struct nvml_field_value, latency_usec) == 16, "latencyUsec");
_Static_assert(offsetof(struct nvml_field_value, value_type) == 24, "valueType");
_Static_assert(offsetof(struct nvml_field_value, nvml_return) == 28, "nvmlReturn");
_Static_assert(offsetof(struct nvml_field_value, value) == 32, "value");
_Static_assert(sizeof(struct nvml_event_data) == 32, "nvmlEventData_t");
_Static_assert(offsetof(struct nvml_event_data, event_type) == 8, "eventType");
_Static_assert(offsetof(struct nvml_event_data, event_data) == 16, "eventData");
_Static_assert(offsetof(struct nvml_event_data, gpu_instance_id) == 24, "gpuInstanceId");
_Static_assert(offsetof(struct nvml_event_data, compute_instance_id) == 28, "ciId");
_Static_assert(sizeof(struct nvml_violation_time) == 16, "nvmlViolationTime_t");
_Static_assert(sizeof(struct nvml_accounting_stats) == 56, "nvmlAccountingStats_t");
_Static_assert(offsetof(struct nvml_accounting_stats, max_memory_usage) == 8, "maxMemoryUsage");
_Static_assert(offsetof(struct nvml_accounting_stats, is_running) == 32, "isRunning");
_Static_assert(sizeof(struct nvml_gpm_support) == 8, "nvmlGpmSupport_t");
_Static_assert(sizeof(struct nvml_gpm_metric) == 40, "nvmlGpmMetric_t");
_Static_assert(offsetof(struct nvml_gpm_metric, value) == 8, "nvmlGpmMetric_t.value");
_Static_assert(offsetof(struct nvml_gpm_metric, metric_info) == 16, "metricInfo");
_Static_assert(offsetof(struct nvml_gpm_metrics_get, sample1) == 8, "sample1");
_Static_assert(offsetof(struct nvml_gpm_metrics_get, sample2) == 16, "sample2");
_Static_assert(offsetof(struct nvml_gpm_metrics_get, metrics) == 24, "metrics");

/* ---- limits ---- */

/* NVML_NVLINK_MAX_LINKS grew 12, 18, 36: probe links until the driver says no */
#define NVML_LINKS_MAX 64
/* a process list can change between two calls: retry this many times */
#define NVML_LIST_ATTEMPTS 4
/* entries of a process list or of utilization samples we accept at most */
#define NVML_LIST_MAX 4096
/* events taken from the driver in one events() call at most */
#define NVML_EVENTS_PER_CALL_MAX 1024
/* the events we register for, where the device supports them */
#define NVML_EVENTS_WANTED (NVML_EVENT_XID | NVML_EVENT_SBE | NVML_EVENT_DBE)

#define GPU_METRICS_ALL ((uint32_t)GPU_EVENTS * 2 - 1)
#define GPU_PROF_ALL	((uint32_t)GPU_PROF_REMAPPED_ROWS * 2 - 1)

/* the violation counters the old call gives too */
#define NVML_PROF_OLD_CALL                                                                         \
	(GPU_PROF_VIOL_POWER | GPU_PROF_VIOL_THERMAL | GPU_PROF_VIOL_SYNC_BOOST |                  \
	 GPU_PROF_VIOL_BOARD_LIMIT | GPU_PROF_VIOL_LOW_UTIL | GPU_PROF_VIOL_RELIABILITY |          \
	 GPU_PROF_VIOL_APP_CLOCKS | GPU_PROF_VIOL_BASE_CLOCKS)
#define NVML_PROF_FIELD_BITS (GPU_PROF_VIOLATIONS | GPU_PROF_PCIE_REPLAY)

/* ---- state ---- */

typedef nvml_return_t (*nvml_proc_list_fn)(nvml_device_t, unsigned int *, void *);

/*
 * The functions resolved from the library; NULL when it lacks every name
 * tried.  Where versions differ only by name the newest is taken; where the
 * struct differs, the chosen version is noted beside it.
 */
struct nvml_lib {
	void *dl;
	char name[256]; /* what we dlopen()ed, for messages */
	nvml_return_t (*init)(void);
	nvml_return_t (*shutdown)(void);
	const char *(*error_string)(nvml_return_t);
	nvml_return_t (*system_get_driver_version)(char *, unsigned int);
	nvml_return_t (*system_get_nvml_version)(char *, unsigned int);
	nvml_return_t (*device_get_count)(unsigned int *);
	nvml_return_t (*device_get_handle_by_index)(unsigned int, nvml_device_t *);
	nvml_return_t (*device_get_name)(nvml_device_t, char *, unsigned int);
	nvml_return_t (*device_get_uuid)(nvml_device_t, char *, unsigned int);
	nvml_return_t (*device_get_pci_info)(nvml_device_t, struct nvml_pci_info *);
	nvml_return_t (*device_get_minor_number)(nvml_device_t, unsigned int *);
	bool pci_legacy; /* the unsuffixed call: no bus_id[32] */
	nvml_return_t (*device_get_utilization_rates)(nvml_device_t, struct nvml_utilization *);
	nvml_return_t (*device_get_memory_info_v2)(nvml_device_t, struct nvml_memory_v2 *);
	nvml_return_t (*device_get_memory_info)(nvml_device_t, struct nvml_memory *);
	nvml_return_t (*device_get_pcie_throughput)(nvml_device_t, int, unsigned int *);
	nvml_return_t (*device_get_nvlink_state)(nvml_device_t, unsigned int, int *);
	nvml_return_t (*device_get_field_values)(nvml_device_t, int, struct nvml_field_value *);
	nvml_return_t (*device_get_power_usage)(nvml_device_t, unsigned int *);
	nvml_return_t (*device_get_power_limit)(nvml_device_t, unsigned int *);
	nvml_return_t (*device_get_total_energy_consumption)(nvml_device_t, unsigned long long *);
	nvml_return_t (*device_get_temperature)(nvml_device_t, int, unsigned int *);
	nvml_return_t (*device_get_clock_info)(nvml_device_t, int, unsigned int *);
	nvml_return_t (*device_get_clocks_event_reasons)(nvml_device_t, unsigned long long *);
	nvml_return_t (*device_get_total_ecc_errors)(nvml_device_t, int, int, unsigned long long *);
	nvml_return_t (*device_get_process_utilization)(nvml_device_t,
							struct nvml_process_utilization_sample *,
							unsigned int *, unsigned long long);
	nvml_return_t (*event_set_create)(nvml_event_set_t *);
	nvml_return_t (*device_get_supported_event_types)(nvml_device_t, unsigned long long *);
	nvml_return_t (*device_register_events)(nvml_device_t, unsigned long long,
						nvml_event_set_t);
	nvml_return_t (*event_set_wait)(nvml_event_set_t, struct nvml_event_data *, unsigned int);
	nvml_return_t (*event_set_free)(nvml_event_set_t);
	nvml_return_t (*device_get_violation_status)(nvml_device_t, int,
						     struct nvml_violation_time *);
	nvml_return_t (*device_get_remapped_rows)(nvml_device_t, unsigned int *, unsigned int *,
						  unsigned int *, unsigned int *);
	nvml_return_t (*device_get_accounting_mode)(nvml_device_t, int *);
	nvml_return_t (*device_get_accounting_stats)(nvml_device_t, unsigned int,
						     struct nvml_accounting_stats *);
	nvml_return_t (*gpm_query_device_support)(nvml_device_t, struct nvml_gpm_support *);
	nvml_return_t (*gpm_sample_alloc)(nvml_gpm_sample_t *);
	nvml_return_t (*gpm_sample_free)(nvml_gpm_sample_t);
	nvml_return_t (*gpm_sample_get)(nvml_device_t, nvml_gpm_sample_t);
	nvml_return_t (*gpm_mig_sample_get)(nvml_device_t, unsigned int, nvml_gpm_sample_t);
	nvml_return_t (*gpm_metrics_get)(struct nvml_gpm_metrics_get *);
	nvml_return_t (*device_get_mig_mode)(nvml_device_t, unsigned int *, unsigned int *);
	nvml_return_t (*device_get_max_mig_device_count)(nvml_device_t, unsigned int *);
	nvml_return_t (*device_get_mig_device_handle_by_index)(nvml_device_t, unsigned int,
							       nvml_device_t *);
	nvml_return_t (*device_get_gpu_instance_id)(nvml_device_t, unsigned int *);
	nvml_return_t (*device_get_compute_instance_id)(nvml_device_t, unsigned int *);
};

/* One running-process list (compute or graphics) and its buffer, kept between ticks. */
struct nvml_proc_list {
	nvml_proc_list_fn get;
	size_t stride; /* sizeof(struct nvml_process_info) or _v1 */
	bool graphics;
	void *buf;
	unsigned int cap; /* entries in buf */
};

struct nvml_gpu {
	nvml_device_t handle; /* NULL: the driver would not give one */
	struct gpu_device_info info;
	uint32_t off; /* enum gpu_metric: no symbol, or NOT_SUPPORTED */
	bool lost;
	bool lost_reported;   /* as a GPU_EVENT_LOST */
	bool list_off[2];     /* this process list NOT_SUPPORTED */
	bool nvlink_per_link; /* scopeId "all links" refused: one entry per link */
	unsigned int nlinks;
	unsigned int links[NVML_LINKS_MAX]; /* the active ones */
	unsigned long long last_util_ts;    /* newest process sample seen, µs */
	uint32_t prof_off;		    /* enum gpu_prof: no symbol, or NOT_SUPPORTED */
	uint32_t viol_old;  /* enum gpu_prof: read with nvmlDeviceGetViolationStatus */
	bool accounting;    /* accounting mode on: per-process peak memory */
	bool gpm;	    /* GPM samples allocated: read each tick */
	bool gpm_have_prev; /* gpm_prev holds the previous tick's sample */
	nvml_gpm_sample_t gpm_prev, gpm_cur;
	nvml_device_t parent; /* a MIG device's GPU (nvmlGpmMigSampleGet) */
};

struct nvml_ctx {
	struct nvml_lib lib;
	uint64_t calls;
	uint32_t missing;      /* enum gpu_metric without a symbol */
	uint32_t missing_prof; /* enum gpu_prof without a symbol */
	char driver[NVML_SYSTEM_VERSION_BUFFER_SIZE];
	char library[NVML_SYSTEM_VERSION_BUFFER_SIZE];
	nvml_event_set_t events; /* NULL: no event set */
	int nregistered;	 /* devices registered with it */
	struct nvml_proc_list lists[2];
	struct nvml_process_utilization_sample *util_buf;
	unsigned int util_cap;
	struct nvml_field_value *fields; /* 2 per link */
	int ngpus;
	struct nvml_gpu gpu[GPU_MAX_DEVICES];
};

/* Calls the library through a pointer, or a member of c->lib, and counts the call. */
#define NVML_CALL(c, fn, ...) ((c)->calls++, (fn)(__VA_ARGS__))
#define NVML(c, fn, ...)      NVML_CALL(c, (c)->lib.fn, __VA_ARGS__)

/* ---- answers ---- */

static inline bool wanted(const struct nvml_gpu *g, uint32_t metrics)
{
	return !g->lost && !(g->off & metrics);
}

/*
 * What an answer means for the metrics asked: true when there is a value.
 * NOT_SUPPORTED turns them off on this device for good; GPU_IS_LOST marks
 * the device lost; any other error leaves them unknown for this time only.
 */
static inline bool answered_off(struct nvml_gpu *g, nvml_return_t r, uint32_t *off, uint32_t bits)
{
	switch (r) {
	case NVML_SUCCESS:
		return true;
	case NVML_ERROR_NOT_SUPPORTED:
	case NVML_ERROR_FUNCTION_NOT_FOUND:
		*off |= bits;
		return false;
	case NVML_ERROR_GPU_IS_LOST:
		g->lost = true;
		return false;
	default:
		return false;
	}
}

/* ... of enum gpu_metric bits (g->off); prof_answered: of enum gpu_prof bits (g->prof_off) */
static inline bool answered(struct nvml_gpu *g, nvml_return_t r, uint32_t metrics)
{
	return answered_off(g, r, &g->off, metrics);
}

/* A field's value as a counter; false for a type a counter cannot have. */
static inline bool field_u64(const struct nvml_field_value *fv, uint64_t *v)
{
	switch (fv->value_type) {
	case NVML_VALUE_TYPE_UINT:
		*v = fv->value.ui_val;
		return true;
	case NVML_VALUE_TYPE_ULONG:
		*v = fv->value.ul_val;
		return true;
	case NVML_VALUE_TYPE_ULL:
		*v = fv->value.ull_val;
		return true;
	case NVML_VALUE_TYPE_SLL:
		*v = (uint64_t)fv->value.sll_val;
		return fv->value.sll_val >= 0;
	default:
		return false;
	}
}

/* ---- nvml_prof.c ---- */

/* GPM, the violation and PCIe replay counters, remapped rows: this tick's. */
void nvml_prof_sample(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out);
/* After the probe sample at open: accounting mode, GPM's sample buffers. */
void nvml_prof_open(struct nvml_ctx *c, struct nvml_gpu *g);
void nvml_prof_release(struct nvml_ctx *c, struct nvml_gpu *g);
/* Accounting mode's peak memory of each of the n processes listed. */
void nvml_proc_max_mem(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_proc *out, size_t n);

#endif
