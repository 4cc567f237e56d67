/*
 * gpu.h - GPUs of any vendor behind one table of function pointers.
 *
 * Each vendor is a `struct gpu_backend` (nvml.c, rocm.c, none.c) listed in
 * gpu_backends[]; vendor libraries are loaded with dlopen() at run time and
 * never linked, so jobscope builds and runs with no GPU and no library.
 * $JOBSCOPE_NVML_LIBRARY and $JOBSCOPE_ROCM_SMI_LIBRARY name another file to
 * load (the tests' fake libraries).
 *
 * Missing is not zero: every reading carries `valid` bits (enum gpu_metric).
 * A symbol the library lacks, or a call that answers NOT_SUPPORTED, clears
 * that metric for that device - never the device.  `supported` in the
 * device info says which metrics the driver gives for it.
 *
 * Units: bytes, bytes/s, mW, mJ, degrees C, MHz, percent 0-100.  Counters
 * (energy, NVLink traffic, ECC) are cumulative as the driver keeps them;
 * callers derive rates from two readings.
 *
 * Errors: 0 or -errno.  open(): -ENOENT when the library is not there (say
 * nothing), -ENXIO when it is there but the machine has no GPU of its
 * vendor (a fact, not a fault: said at debug level only; NVML's
 * DRIVER_NOT_LOADED, ROCm SMI's INIT_ERROR without the amdgpu driver),
 * -ENODEV when it loads but cannot initialise (the backend prints one
 * warning naming the library, the driver's error and what the library
 * wrote meanwhile).  What the library writes on stdout and stderr while
 * it loads and initialises is caught (libout.h) and logged at debug level.
 * The gpu_open_note says which of these it was, for `jobscope gpus`.
 * Per device:
 * -ENODEV when the device is lost (NVML GPU_IS_LOST); other failures clear
 * valid bits instead of failing.  Backends are not thread-safe: one thread
 * drives them.
 */
#ifndef JOBSCOPE_GPU_H
#define JOBSCOPE_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GPU_MAX_DEVICES 64
#define GPU_UUID_MAX	96
#define GPU_NAME_MAX	96
#define GPU_BUSID_MAX	32
#define GPU_VERSION_MAX 80

enum gpu_metric {
	GPU_UTIL = 1u << 0,	      /* util_pct: share of time a kernel ran */
	GPU_MEM_UTIL = 1u << 1,	      /* mem_util_pct: memory controller busy */
	GPU_MEM_USED = 1u << 2,	      /* mem_used_bytes */
	GPU_PCIE = 1u << 3,	      /* pcie_rx_bps, pcie_tx_bps */
	GPU_NVLINK = 1u << 4,	      /* nvlink_rx_bytes, nvlink_tx_bytes: counters, all links */
	GPU_POWER = 1u << 5,	      /* power_mw */
	GPU_ENERGY = 1u << 6,	      /* energy_mj: counter */
	GPU_TEMP = 1u << 7,	      /* temp_c */
	GPU_SM_CLOCK = 1u << 8,	      /* sm_clock_mhz */
	GPU_MEM_CLOCK = 1u << 9,      /* mem_clock_mhz */
	GPU_THROTTLE = 1u << 10,      /* throttle_reasons */
	GPU_ECC = 1u << 11,	      /* ecc_corrected, ecc_uncorrected: counters */
	GPU_PROC_MEM = 1u << 12,      /* per-process memory (gpu_proc.mem_bytes) */
	GPU_PROC_UTIL = 1u << 13,     /* per-process SM utilization (ROCm: CU occupancy) */
	GPU_EVENTS = 1u << 14,	      /* XID and other critical events */
	GPU_PROC_MEM_UTIL = 1u << 15, /* per-process memory (controller) utilization */
	GPU_PROC_MAX_MEM = 1u << 16,  /* gpu_proc.max_mem_bytes: NVML accounting mode's peak */
};

/*
 * What the SMs did and what slowed them (NVML's GPM on Hopper and newer,
 * its violation counters, PCIe replays, remapped rows): struct gpu_sample's
 * prof_valid bits, one per field, and gpu_device_info.prof_supported.
 *
 * GPM figures are the driver's over the interval between this sample and
 * the device's previous one (the first sample of a device has none), in
 * percent x 100 (6150 is 61.50 %), the time the unit was active: SM
 * active is the share of time at least one warp was resident on an SM,
 * averaged over SMs; occupancy the resident warps' share of the maximum.
 * Violation counters are cumulative ns the driver spent held back for the
 * reason (callers take differences): exact times, not sampled flags.
 */
enum gpu_prof {
	GPU_PROF_GR_ACTIVE = 1u << 0,	      /* gr_active_pct100: graphics engine active */
	GPU_PROF_SM_ACTIVE = 1u << 1,	      /* sm_active_pct100 */
	GPU_PROF_SM_OCCUPANCY = 1u << 2,      /* sm_occupancy_pct100 */
	GPU_PROF_TENSOR_ACTIVE = 1u << 3,     /* tensor_active_pct100: any tensor pipe */
	GPU_PROF_DFMA_TENSOR = 1u << 4,	      /* dfma_tensor_active_pct100 */
	GPU_PROF_HMMA_TENSOR = 1u << 5,	      /* hmma_tensor_active_pct100 */
	GPU_PROF_IMMA_TENSOR = 1u << 6,	      /* imma_tensor_active_pct100 */
	GPU_PROF_DRAM_ACTIVE = 1u << 7,	      /* dram_active_pct100: DRAM bandwidth used of peak */
	GPU_PROF_FP64_ACTIVE = 1u << 8,	      /* fp64_active_pct100 */
	GPU_PROF_FP32_ACTIVE = 1u << 9,	      /* fp32_active_pct100 */
	GPU_PROF_FP16_ACTIVE = 1u << 10,      /* fp16_active_pct100 */
	GPU_PROF_VIOL_POWER = 1u << 11,	      /* viol_power_ns */
	GPU_PROF_VIOL_THERMAL = 1u << 12,     /* viol_thermal_ns */
	GPU_PROF_VIOL_SYNC_BOOST = 1u << 13,  /* viol_sync_boost_ns */
	GPU_PROF_VIOL_BOARD_LIMIT = 1u << 14, /* viol_board_limit_ns */
	GPU_PROF_VIOL_LOW_UTIL = 1u << 15,    /* viol_low_util_ns */
	GPU_PROF_VIOL_RELIABILITY = 1u << 16, /* viol_reliability_ns */
	GPU_PROF_VIOL_APP_CLOCKS = 1u << 17,  /* viol_app_clocks_ns: below application clocks */
	GPU_PROF_VIOL_BASE_CLOCKS = 1u << 18, /* viol_base_clocks_ns: below base clocks */
	GPU_PROF_VIOL_SW_THERMAL = 1u << 19,  /* viol_sw_thermal_ns */
	GPU_PROF_VIOL_HW_THERMAL = 1u << 20,  /* viol_hw_thermal_ns */
	GPU_PROF_VIOL_HW_POWER_BRAKE = 1u << 21, /* viol_hw_power_brake_ns */
	GPU_PROF_PCIE_REPLAY = 1u << 22,	 /* pcie_replays: counter */
	GPU_PROF_REMAPPED_ROWS = 1u
				 << 23, /* remapped_rows_corr, _unc, remap_pending, remap_failed */
};

#define GPU_PROF_GPM                                                                               \
	(GPU_PROF_GR_ACTIVE | GPU_PROF_SM_ACTIVE | GPU_PROF_SM_OCCUPANCY |                         \
	 GPU_PROF_TENSOR_ACTIVE | GPU_PROF_DFMA_TENSOR | GPU_PROF_HMMA_TENSOR |                    \
	 GPU_PROF_IMMA_TENSOR | GPU_PROF_DRAM_ACTIVE | GPU_PROF_FP64_ACTIVE |                      \
	 GPU_PROF_FP32_ACTIVE | GPU_PROF_FP16_ACTIVE)
#define GPU_PROF_VIOLATIONS                                                                        \
	(GPU_PROF_VIOL_POWER | GPU_PROF_VIOL_THERMAL | GPU_PROF_VIOL_SYNC_BOOST |                  \
	 GPU_PROF_VIOL_BOARD_LIMIT | GPU_PROF_VIOL_LOW_UTIL | GPU_PROF_VIOL_RELIABILITY |          \
	 GPU_PROF_VIOL_APP_CLOCKS | GPU_PROF_VIOL_BASE_CLOCKS | GPU_PROF_VIOL_SW_THERMAL |         \
	 GPU_PROF_VIOL_HW_THERMAL | GPU_PROF_VIOL_HW_POWER_BRAKE)

/* Throttle reason bits, NVML's clocks event reasons (ROCm maps to these). */
#define GPU_THROTTLE_IDLE	    0x1ull
#define GPU_THROTTLE_APP_CLOCKS	    0x2ull
#define GPU_THROTTLE_SW_POWER	    0x4ull
#define GPU_THROTTLE_HW_SLOWDOWN    0x8ull
#define GPU_THROTTLE_SYNC_BOOST	    0x10ull
#define GPU_THROTTLE_SW_THERMAL	    0x20ull
#define GPU_THROTTLE_HW_THERMAL	    0x40ull
#define GPU_THROTTLE_HW_POWER_BRAKE 0x80ull
#define GPU_THROTTLE_DISPLAY_CLOCKS 0x100ull
/* the reasons that mean "slowed down", as opposed to idle or configured */
#define GPU_THROTTLE_SLOWDOWN                                                                      \
	(GPU_THROTTLE_SW_POWER | GPU_THROTTLE_HW_SLOWDOWN | GPU_THROTTLE_SW_THERMAL |              \
	 GPU_THROTTLE_HW_THERMAL | GPU_THROTTLE_HW_POWER_BRAKE)

enum gpu_info_valid {
	GPU_INFO_MEM_TOTAL = 1u << 0,
	GPU_INFO_POWER_LIMIT = 1u << 1,
	GPU_INFO_NVLINKS = 1u << 2,
	GPU_INFO_MINOR = 1u << 3,
};

struct gpu_device_info {
	int index; /* the vendor's index (nvidia-smi's, rocm-smi's) */
	char uuid[GPU_UUID_MAX];
	char name[GPU_NAME_MAX];
	char pci_bus_id[GPU_BUSID_MAX]; /* "00000000:07:00.0" */
	uint32_t valid;			/* enum gpu_info_valid */
	uint64_t mem_total_bytes;
	uint32_t power_limit_mw;
	uint32_t nvlink_count; /* active links */
	uint32_t supported;    /* enum gpu_metric this driver gives for this device */
	uint32_t
	    minor_number; /* GPU_INFO_MINOR: NVIDIA's /dev/nvidiaN (nvmlDeviceGetMinorNumber) */
	uint32_t prof_supported; /* enum gpu_prof this driver gives for this device */
	/*
	 * MIG.  A GPU in MIG mode (mig_enabled) is listed, then each of its
	 * instances as a device of its own right after it (mig: true), with
	 * the parent's index (index), the position of the parent in the
	 * backend's list (mig_parent), its GPU and compute instance IDs and
	 * its profile ("1g.10gb", as nvidia-smi and dcgm-exporter name it);
	 * uuid is the instance's own ("MIG-..."), mem_total its memory.  The
	 * processes of a MIG GPU are its instances', never the parent's: a
	 * job on a slice uses that slice.
	 */
	bool mig_enabled;
	bool mig;
	int mig_parent;
	uint32_t gpu_instance_id;
	uint32_t compute_instance_id;
	char mig_profile[32];
};

struct gpu_sample {
	uint32_t valid; /* enum gpu_metric */
	uint32_t util_pct;
	uint32_t mem_util_pct;
	uint64_t mem_used_bytes;
	uint64_t pcie_rx_bps;
	uint64_t pcie_tx_bps;
	uint64_t nvlink_rx_bytes;
	uint64_t nvlink_tx_bytes;
	uint32_t power_mw;
	uint64_t energy_mj;
	int32_t temp_c;
	uint32_t sm_clock_mhz;
	uint32_t mem_clock_mhz;
	uint64_t throttle_reasons;
	uint64_t ecc_corrected;
	uint64_t ecc_uncorrected;
	uint32_t prof_valid; /* enum gpu_prof */
	uint32_t gr_active_pct100;
	uint32_t sm_active_pct100;
	uint32_t sm_occupancy_pct100;
	uint32_t tensor_active_pct100;
	uint32_t dfma_tensor_active_pct100;
	uint32_t hmma_tensor_active_pct100;
	uint32_t imma_tensor_active_pct100;
	uint32_t dram_active_pct100;
	uint32_t fp64_active_pct100;
	uint32_t fp32_active_pct100;
	uint32_t fp16_active_pct100;
	uint64_t viol_power_ns;
	uint64_t viol_thermal_ns;
	uint64_t viol_sync_boost_ns;
	uint64_t viol_board_limit_ns;
	uint64_t viol_low_util_ns;
	uint64_t viol_reliability_ns;
	uint64_t viol_app_clocks_ns;
	uint64_t viol_base_clocks_ns;
	uint64_t viol_sw_thermal_ns;
	uint64_t viol_hw_thermal_ns;
	uint64_t viol_hw_power_brake_ns;
	uint64_t pcie_replays;
	uint64_t remapped_rows_corr;
	uint64_t remapped_rows_unc;
	uint32_t remap_pending; /* 0 or 1 */
	uint32_t remap_failed;	/* 0 or 1 */
};

/*
 * One process on one device.  Utilization is over the window since the
 * previous processes() call of the device: on NVML the driver's samples
 * of that window, averaged over its sample instants (a process there for
 * half of it at 80% reads 40%), so that each process's share of the sum
 * is its share of the window's work; on ROCm the CU occupancy read now.
 */
struct gpu_proc {
	uint32_t pid;
	uint32_t valid; /* GPU_PROC_MEM, GPU_PROC_UTIL, GPU_PROC_MEM_UTIL */
	uint64_t mem_bytes;
	uint32_t sm_util_pct;
	uint32_t mem_util_pct;
	uint64_t max_mem_bytes; /* GPU_PROC_MAX_MEM: accounting mode's peak for the process */
	bool graphics;		/* from the graphics list (else compute) */
	bool gone; /* in no process list now: it used the device in the window and left */
};

enum gpu_event_kind {
	GPU_EVENT_XID = 1,     /* data: the XID number */
	GPU_EVENT_ECC_SBE = 2, /* single-bit ECC error */
	GPU_EVENT_ECC_DBE = 3, /* double-bit ECC error */
	GPU_EVENT_THERMAL = 4, /* ROCm thermal throttle */
	GPU_EVENT_RESET = 5,   /* ROCm GPU reset */
	GPU_EVENT_VMFAULT = 6, /* ROCm VM fault */
	GPU_EVENT_LOST = 7,    /* the device fell off the bus */
	GPU_EVENT_OTHER = 8,
};

struct gpu_event {
	int index; /* device */
	enum gpu_event_kind kind;
	uint64_t data;
	char message[96];
};

/* What open() found: the library, and the GPUs of its vendor or why there are none. */
enum gpu_lib_state {
	GPU_LIB_ABSENT = 0, /* no library (-ENOENT) */
	GPU_LIB_NO_GPU = 1, /* the library, no GPU of its vendor (-ENXIO, or 0 devices) */
	GPU_LIB_FAILED = 2, /* the library cannot start (-ENODEV, warned) */
	GPU_LIB_OPEN = 3,   /* started, with devices */
};

#define GPU_LIB_NAME_MAX 256
#define GPU_SAID_MAX	 1024

struct gpu_open_note {
	enum gpu_lib_state state;
	char library[GPU_LIB_NAME_MAX]; /* the file loaded, or the first one tried */
	char detail[160];	 /* NO_GPU: why ("no driver loaded"), FAILED: the error; else "" */
	char said[GPU_SAID_MAX]; /* the library's own output while starting, one line; "" none */
};

/* "no driver loaded: no NVIDIA GPU" and the like: an init answer that means no GPU here. */
bool gpu_nvml_means_no_gpu(int nvml_return);
/* ROCm SMI: INIT_ERROR while the kernel has no amdgpu driver (gpu_amdgpu_loaded). */
bool gpu_rocm_means_no_gpu(uint32_t rsmi_status, bool amdgpu_loaded);
/* The amdgpu kernel driver is loaded: /sys/module/amdgpu or /sys/class/kfd (sysroot). */
bool gpu_amdgpu_loaded(void);

struct gpu_backend {
	const char *name;   /* "nvml", "rocm", "none" */
	const char *vendor; /* "NVIDIA", "AMD" */
	/*
	 * Loads the library and initialises it; *ctx is the backend's state.
	 * note (never NULL) is filled whatever the result: 0 (GPU_LIB_OPEN,
	 * or GPU_LIB_NO_GPU with 0 devices), -ENOENT, -ENXIO or -ENODEV.
	 */
	int (*open)(void **ctx, struct gpu_open_note *note);
	void (*close)(void *ctx);
	/* Driver version and the library's own version ("" when unknown). */
	void (*versions)(void *ctx, char *driver, size_t driver_size, char *library,
			 size_t library_size);
	int (*count)(void *ctx, int *n);
	int (*info)(void *ctx, int index, struct gpu_device_info *out);
	int (*sample)(void *ctx, int index, struct gpu_sample *out);
	/*
	 * The processes using a device: memory from the process lists, and
	 * utilization over the window since the previous call where the
	 * driver gives it (struct gpu_proc), with the processes that used the
	 * device in the window but are in no list now (gone).  At most max;
	 * *n receives how many were written.
	 */
	int (*processes)(void *ctx, int index, struct gpu_proc *out, size_t max, size_t *n);
	/* Events that arrived since the last call, all devices, never blocking. */
	int (*events)(void *ctx, struct gpu_event *out, size_t max, size_t *n);
	/* Library calls made so far (for benchmarks). */
	uint64_t (*calls)(void *ctx);
};

extern const struct gpu_backend gpu_backend_nvml;
extern const struct gpu_backend gpu_backend_rocm;
extern const struct gpu_backend gpu_backend_none;

#endif
