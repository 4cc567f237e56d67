/*
 * scenario.h - the text file that drives the fake GPU libraries.
 *
 * Both fakes (fake_nvml.c, fake_rocm.c) read the file named by
 * $FAKE_GPU_SCENARIO at init.  One directive a line, '#' starts a comment,
 * values are key=value words, a value may be "quoted".  Times are seconds
 * after the library's init (CLOCK_MONOTONIC).
 *
 *   driver 535.104.05                 the driver / library version string
 *   init_error 9                      init returns this code
 *   no_gpu                            the library on a machine without its vendor's
 *                                     GPU, as the real one behaves there: NVML's init
 *                                     returns 9 (DRIVER_NOT_LOADED); ROCm's rsmi_init
 *                                     prints the real library's two lines on stderr
 *                                     and returns 8 (INIT_ERROR); see the fakes
 *   init_say [stdout|stderr] "text"   init writes text and a newline there first
 *                                     (stderr when not said), whatever it returns
 *   init_sleep_ms 3000                init takes this long, after its init_say (a real
 *                                     driver's on a large node takes a second or more)
 *   device 0 uuid=GPU-aaaa name="NVIDIA A100-SXM4-80GB" bus=00000000:07:00.0
 *          mem_total=85899345920 power_limit=400000 nvlinks=12 minor=3
 *                                     (minor: /dev/nvidiaN, nvmlDeviceGetMinorNumber;
 *                                      the index when not given, as on most machines)
 *   unsupported 0 power               this metric returns NOT_SUPPORTED on device 0
 *                                     (util mem_util mem_used pcie nvlink power energy
 *                                      temp clocks throttle ecc procs proc_util events)
 *   at 0 0 util=30 mem_used=1073741824 power=100000 ...
 *                                     from t=0 on, device 0 reports these values; keys
 *                                     not given keep their previous value; keys: util
 *                                     mem_util mem_used pcie_tx_kbps pcie_rx_kbps
 *                                     nvlink_tx_kib nvlink_rx_kib (cumulative counters)
 *                                     power (mW) energy (mJ, cumulative) temp (C)
 *                                     sm_clock mem_clock (MHz) throttle (bits)
 *                                     ecc_sbe ecc_dbe (cumulative counts)
 *   device 0 ... proc_sample_ms=100   the driver's process utilization samples are
 *                                     taken every 100 ms (the default)
 *   proc 0 pid=1234 mem=1048576 sm=50 memutil=20 from=0 until=5 graphics=0 power=0
 *                                     a process on device 0 in [from, until); pid may
 *                                     be file:PATH (read at each call: a test process
 *                                     started later writes its pid there); sm/memutil
 *                                     absent: no utilization sample for it; power: mW
 *                                     the device draws on top of its `at` power while
 *                                     the process is on it
 *   xid 0 at=1.5 code=79              an XID event on device 0 at t=1.5
 *   lost 0 at=3.0                     device 0 falls off the bus at t=3 (GPU_IS_LOST)
 *
 * What the SMs did (NVML's GPM, Hopper and newer), violation counters, PCIe
 * replays, remapped rows, accounting mode, MIG (fake_nvml.c):
 *
 *   device 0 ... gpm=1                the device supports GPM (default: it does not:
 *                                     nvmlGpmQueryDeviceSupport says isSupportedDevice 0)
 *   device 0 ... gpm_metric_max=98    the driver was built with NVML_GPM_METRIC_MAX 98
 *                                     (also 210; default 333): numMetrics above it is
 *                                     INVALID_ARGUMENT, metric ids at or above it get a
 *                                     per-entry NOT_SUPPORTED; only numMetrics entries
 *                                     are read or written
 *   device 0 ... gpm_ids=1,2,3        the GPM metric ids the device gives (default: all
 *                                     the fake knows, 1-13, 20, 21); others get a
 *                                     per-entry NOT_SUPPORTED
 *   device 0 ... accounting=1         accounting mode is on
 *   at 0 0 sm_active=61.5 sm_occupancy=40 tensor=25 dfma=0 hmma=25 imma=0 dram=33
 *          fp64=0 fp32=45 fp16=10 gr_active=70
 *                                     GPM values in percent (doubles), a step function
 *                                     like the other `at` keys: nvmlGpmMetricsGet gives
 *                                     each one's exact time average between the times of
 *                                     its two samples (nvmlGpmSampleGet)
 *   at 0 0 viol_power=0.5 viol_thermal=0 viol_sync_boost=0 viol_board_limit=0
 *          viol_low_util=0 viol_reliability=0 viol_app_clocks=0 viol_base_clocks=0
 *          viol_sw_thermal=0 viol_hw_thermal=0 viol_hw_power_brake=0
 *                                     the fraction (0..1) of time the device is held
 *                                     back for that reason from then on; the cumulative
 *                                     counters in ns (nvmlDeviceGetViolationStatus, the
 *                                     field values 74-81 and 269-271) are its integral
 *                                     from t=0
 *   at 0 0 pcie_replay=N remapped_corr=N remapped_unc=N remap_pending=0|1 remap_failed=0|1
 *                                     field 94 and nvmlDeviceGetRemappedRows, as given
 *   unsupported 0 gpm viol viol_fields pcie_replay remap accounting
 *                                     more metrics for `unsupported`: viol turns off both
 *                                     the field values and nvmlDeviceGetViolationStatus,
 *                                     viol_fields only the field values (the old call
 *                                     still answers)
 *   proc 0 pid=1234 ... maxmem=N      accounting's maxMemoryUsage for the process (with
 *                                     accounting=1; default: its mem)
 *   mig 0 gi=1 ci=0 profile=1g.10gb uuid=MIG-aaaa-1 mem_total=10200547328
 *                                     a MIG instance (a compute instance ci of the GPU
 *                                     instance gi) of device 0, which is then in MIG mode
 *   at 0 0/1 mem_used=... sm_active=...
 *                                     the instance's values by GPU instance id (memory,
 *                                     GPM); the word with a '/' is the device, so
 *                                     `at 0/1 T ...` reads the same
 *   proc 0/1 pid=... mem=...          a process in GPU instance 1 of device 0 (its first
 *                                     compute instance; 0/1/2: compute instance 2)
 *
 * Processes named by a pid file are on the device only once the file names
 * a process, and only while that process lives (not a zombie): an exited
 * process is in no list.  Their from/until may be written +X: X seconds
 * after the process's own start (its /proc start time).  For a pid-file
 * process that exited, the fake knows only when it last saw it alive: it
 * has no samples and draws no power after that; a test that needs an exact
 * end gives `until` and lets the process live past it.
 *
 * Energy: a device whose `at` lines never set `energy` has a counter that
 * is the integral of its power (the `at` power plus its processes'), exact
 * to the mJ; `energy` given keeps the counter at the values given.
 *
 * Process utilization: the driver takes a sample of each process on the
 * device at every multiple of proc_sample_ms (scenario time); a sample
 * holds the process's sm/memutil scaled by the part of the period it was on
 * the device, and is stamped with the period's end (µs, see fake_nvml.c).
 * A call returns the samples newer than lastSeenTimeStamp, of the last
 * second at most, or NVML_ERROR_NOT_FOUND when there are none.
 *
 * Contract: scenario_load() returns 0 or -errno (-EINVAL with a message on
 * stderr naming the line); scenario_values() gives the step function's value
 * at t.  Not thread-safe; the fakes are called from one thread.
 */
#ifndef FAKE_SCENARIO_H
#define FAKE_SCENARIO_H

#include <stdbool.h>
#include <stdint.h>

#define SCN_MAX_DEVICES 16
#define SCN_MAX_STEPS	256
#define SCN_MAX_PROCS	1024
#define SCN_MAX_EVENTS	64
#define SCN_MAX_MIGS	64
#define SCN_NO_INSTANCE (-1) /* a step or process of the whole device, not a MIG instance */

enum scn_value {
	SV_UTIL,
	SV_MEM_UTIL,
	SV_MEM_USED,
	SV_PCIE_TX_KBPS,
	SV_PCIE_RX_KBPS,
	SV_NVLINK_TX_KIB,
	SV_NVLINK_RX_KIB,
	SV_POWER,
	SV_ENERGY,
	SV_TEMP,
	SV_SM_CLOCK,
	SV_MEM_CLOCK,
	SV_THROTTLE,
	SV_ECC_SBE,
	SV_ECC_DBE,
	SV_PCIE_REPLAY,
	SV_REMAPPED_CORR,
	SV_REMAPPED_UNC,
	SV_REMAP_PENDING,
	SV_REMAP_FAILED,
	SV_COUNT
};

/* Values that are doubles: GPM percentages and violation fractions (integrated). */
enum scn_fvalue {
	SF_GR_ACTIVE,
	SF_SM_ACTIVE,
	SF_SM_OCCUPANCY,
	SF_TENSOR,
	SF_DFMA,
	SF_HMMA,
	SF_IMMA,
	SF_DRAM,
	SF_FP64,
	SF_FP32,
	SF_FP16,
	SF_VIOL_POWER,
	SF_VIOL_THERMAL,
	SF_VIOL_SYNC_BOOST,
	SF_VIOL_BOARD_LIMIT,
	SF_VIOL_LOW_UTIL,
	SF_VIOL_RELIABILITY,
	SF_VIOL_APP_CLOCKS,
	SF_VIOL_BASE_CLOCKS,
	SF_VIOL_SW_THERMAL,
	SF_VIOL_HW_THERMAL,
	SF_VIOL_HW_POWER_BRAKE,
	SF_COUNT
};

enum scn_metric {
	SM_UTIL = 1u << 0,
	SM_MEM_UTIL = 1u << 1,
	SM_MEM_USED = 1u << 2,
	SM_PCIE = 1u << 3,
	SM_NVLINK = 1u << 4,
	SM_POWER = 1u << 5,
	SM_ENERGY = 1u << 6,
	SM_TEMP = 1u << 7,
	SM_CLOCKS = 1u << 8,
	SM_THROTTLE = 1u << 9,
	SM_ECC = 1u << 10,
	SM_PROCS = 1u << 11,
	SM_PROC_UTIL = 1u << 12,
	SM_EVENTS = 1u << 13,
	SM_GPM = 1u << 14,
	SM_VIOL = 1u << 15,	   /* the field values and nvmlDeviceGetViolationStatus */
	SM_VIOL_FIELDS = 1u << 16, /* the field values only */
	SM_PCIE_REPLAY = 1u << 17,
	SM_REMAP = 1u << 18,
	SM_ACCOUNTING = 1u << 19,
};

struct scn_device {
	char uuid[96];
	char name[96];
	char bus[32];
	uint64_t mem_total;
	uint32_t power_limit_mw;
	uint32_t nvlinks;
	int minor;		 /* nvmlDeviceGetMinorNumber (/dev/nvidiaN); default: the index */
	uint32_t unsupported;	 /* enum scn_metric */
	double lost_at;		 /* < 0: never */
	uint64_t proc_sample_us; /* the driver's process utilization sample period */
	bool gpm;		 /* nvmlGpmQueryDeviceSupport says yes */
	uint32_t gpm_metric_max; /* NVML_GPM_METRIC_MAX of the fake driver: 98, 210, 333 */
	bool has_gpm_ids;	 /* gpm_ids= given: */
	uint64_t gpm_ids;	 /* bit i: metric id i (< 64) is given */
	bool accounting;	 /* accounting mode on */
};

/* One MIG device: compute instance ci of GPU instance gi of a device. */
struct scn_mig {
	int device;
	uint32_t gi, ci;
	char profile[32]; /* "1g.10gb" */
	char uuid[96];
	uint64_t mem_total;
};

struct scn_step {
	int device;
	int gi; /* SCN_NO_INSTANCE, or the MIG GPU instance it sets */
	double at;
	uint32_t set; /* bit i: value i given */
	uint64_t v[SV_COUNT];
	uint32_t fset; /* bit i: fvalue i given */
	double f[SF_COUNT];
};

struct scn_proc {
	int device;
	uint32_t pid;
	char pid_file[256]; /* when set, the pid is read from here at each call */
	uint64_t mem;
	bool has_util;
	uint32_t sm, memutil;
	bool graphics;
	double from, until;	      /* scenario seconds, or after the process's start: */
	bool from_start, until_start; /* ... when written +X */
	uint32_t power_mw;	      /* the device draws this much more while it is on it */
	int gi, ci;		      /* its MIG instance; SCN_NO_INSTANCE: the device's own */
	bool has_maxmem;
	uint64_t maxmem; /* accounting's maxMemoryUsage */
	/* what scenario_refresh() found out about a pid-file process */
	uint32_t seen_pid;
	double start_t;	 /* its start, scenario seconds; NAN: unknown */
	bool alive;	 /* at the last refresh */
	double alive_at; /* the last refresh that found it alive; NAN: never */
};

struct scn_event {
	int device;
	double at;
	uint64_t code;
};

struct scenario {
	char driver[80];
	int init_error;
	int init_sleep_ms;
	bool no_gpu;
	char init_say[256];
	bool init_say_stdout;
	int ndevices;
	struct scn_device dev[SCN_MAX_DEVICES];
	int nsteps;
	struct scn_step step[SCN_MAX_STEPS];
	int nprocs;
	struct scn_proc proc[SCN_MAX_PROCS];
	int nevents;
	struct scn_event event[SCN_MAX_EVENTS];
	int nmigs;
	struct scn_mig mig[SCN_MAX_MIGS];
};

/* Loads $FAKE_GPU_SCENARIO (no variable: one default device, see .c). */
int scenario_load(struct scenario *s);
/* The device's values at t seconds (the last step at or before t wins per key). */
void scenario_values(const struct scenario *s, int device, double t, uint64_t v[SV_COUNT]);
/* The MIG instance's values at t (its `at D/GI` steps; memory and GPM). */
void scenario_mig_values(const struct scenario *s, int device, int gi, double t,
			 uint64_t v[SV_COUNT]);
/* Key k of the device (gi SCN_NO_INSTANCE) or MIG GPU instance at t. */
double scenario_fvalue(const struct scenario *s, int device, int gi, enum scn_fvalue k, double t);
/* The integral of key k over [a, b], in value x seconds (0 before its first step). */
double scenario_fintegral(const struct scenario *s, int device, int gi, enum scn_fvalue k, double a,
			  double b);
/* Whether the device is in MIG mode: it has `mig` lines. */
bool scenario_mig_mode(const struct scenario *s, int device);
/* The pid of a process entry (0 if its pid file is missing or empty). */
uint32_t scenario_pid(const struct scn_proc *p);
/*
 * Reads the pid files and what /proc says of their processes (alive, start
 * time) at now: the fakes call it before they answer about processes,
 * power or energy.
 */
void scenario_refresh(struct scenario *s, double now);
/* Whether the process is on its device at t, as a process list shows it. */
bool scenario_proc_live(const struct scn_proc *p, double t);
/* How long, in seconds, the process was on its device within (a, b]. */
double scenario_proc_overlap(const struct scn_proc *p, double a, double b);
/* The device's power at t, mW: its `at` power plus its processes'. */
uint64_t scenario_power_mw(const struct scenario *s, int device, double t);
/* The device's energy counter at t, mJ (see the energy paragraph above). */
uint64_t scenario_energy_mj(const struct scenario *s, int device, double t);
/* Seconds since the last scenario_load() (CLOCK_MONOTONIC), or the tests' clock. */
double scenario_now(void);
/*
 * For tests (dlsym it from the loaded fake): from now on scenario_now()
 * reads t, and each read moves the clock on by step seconds (0: frozen), so
 * a test can put a change between two library calls.  t < 0 gives the real
 * clock back; scenario_load() does too.
 */
void scenario_set_clock(double t, double step);

#endif
