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
 *   device 0 uuid=GPU-aaaa name="NVIDIA A100-SXM4-80GB" bus=00000000:07:00.0
 *          mem_total=85899345920 power_limit=400000 nvlinks=12
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
 *   proc 0 pid=1234 mem=1048576 sm=50 memutil=20 from=0 until=5 graphics=0
 *                                     a process on device 0 in [from, until); pid may
 *                                     be file:PATH (read at each call: a test process
 *                                     started later writes its pid there); sm/memutil
 *                                     absent: no utilization sample for it
 *   xid 0 at=1.5 code=79              an XID event on device 0 at t=1.5
 *   lost 0 at=3.0                     device 0 falls off the bus at t=3 (GPU_IS_LOST)
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
#define SCN_MAX_PROCS 1024
#define SCN_MAX_EVENTS	64

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
	SV_COUNT
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
};

struct scn_device {
	char uuid[96];
	char name[96];
	char bus[32];
	uint64_t mem_total;
	uint32_t power_limit_mw;
	uint32_t nvlinks;
	uint32_t unsupported; /* enum scn_metric */
	double lost_at;	      /* < 0: never */
};

struct scn_step {
	int device;
	double at;
	uint32_t set; /* bit i: value i given */
	uint64_t v[SV_COUNT];
};

struct scn_proc {
	int device;
	uint32_t pid;
	char pid_file[256]; /* when set, the pid is read from here at each call */
	uint64_t mem;
	bool has_util;
	uint32_t sm, memutil;
	bool graphics;
	double from, until;
};

struct scn_event {
	int device;
	double at;
	uint64_t code;
};

struct scenario {
	char driver[80];
	int init_error;
	int ndevices;
	struct scn_device dev[SCN_MAX_DEVICES];
	int nsteps;
	struct scn_step step[SCN_MAX_STEPS];
	int nprocs;
	struct scn_proc proc[SCN_MAX_PROCS];
	int nevents;
	struct scn_event event[SCN_MAX_EVENTS];
};

/* Loads $FAKE_GPU_SCENARIO (no variable: one default device, see .c). */
int scenario_load(struct scenario *s);
/* The device's values at t seconds (the last step at or before t wins per key). */
void scenario_values(const struct scenario *s, int device, double t, uint64_t v[SV_COUNT]);
/* The pid of a process entry (0 if its pid file is missing or empty). */
uint32_t scenario_pid(const struct scn_proc *p);
bool scenario_proc_live(const struct scn_proc *p, double t);
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
