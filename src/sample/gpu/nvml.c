/*
 * nvml.c - NVIDIA GPUs through NVML, loaded with dlopen() at run time.
 *
 * Map: the symbol table and its version fallbacks (our declarations of
 * NVML's types and the state are in nvml_int.h, the profiling metrics in
 * nvml_prof.c); open and close; sample() per tick; process lists and
 * per-process utilization; MIG devices; events; the backend table.
 *
 * Every library call goes through NVML() so that calls() counts them.  A
 * metric whose symbol is missing, or that the driver answers NOT_SUPPORTED
 * for, is remembered per device in `off` and never asked again: a tick
 * costs one call per metric the device really has.
 *
 * What the SMs did (enum gpu_prof): GPM (Hopper and newer) with one
 * nvmlGpmMetricsGet per device per tick for every metric at once, between
 * the device's previous sample and this tick's (two sample buffers per
 * device, swapped); the violation counters and the PCIe replay counter in
 * one nvmlDeviceGetFieldValues call, falling back per reason to the
 * deprecated nvmlDeviceGetViolationStatus where the fields are not
 * supported; nvmlDeviceGetRemappedRows; accounting mode's per-process peak
 * memory.  A metric off is remembered in `prof_off` like `off`.
 *
 * MIG: a GPU in MIG mode is followed in our list by each of its MIG
 * devices (compute instances), each with its own MIG device handle, which
 * answers memory, processes and (through the parent's nvmlGpmMigSampleGet)
 * GPM; the GPU itself lists no processes.  c->gpu[] is that list: a
 * position is not the NVML index (info.index) once a GPU has instances.
 */
#include "libout.h"
#include "nvml_int.h"

#include "common/log.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- loading ---- */

/* The first of names the library has, into *fn: its position in names, or -1. */
static int resolve(void *dl, void **fn, const char *const *names)
{
	for (int i = 0; names[i]; i++) {
		*fn = dlsym(dl, names[i]);
		if (*fn)
			return i;
	}
	*fn = NULL;
	return -1;
}

#define RESOLVE(lib, field, ...)                                                                   \
	resolve((lib)->dl, (void **)&(lib)->field, (const char *const[]){__VA_ARGS__, NULL})

/*
 * $JOBSCOPE_NVML_LIBRARY alone if set (the tests' fakes), else the usual
 * sonames.  Runs while the library's output is caught: it logs nothing; a
 * failure's dlerror() text goes to why.
 */
static int lib_load(struct nvml_lib *lib, char *why, size_t why_size)
{
	static const char *const sonames[] = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
	const char *env = getenv("JOBSCOPE_NVML_LIBRARY");
	const char *const *names = sonames;
	size_t n = sizeof(sonames) / sizeof(sonames[0]);
	const char *err;

	if (env && *env) {
		names = &env;
		n = 1;
	}
	for (size_t i = 0; i < n && !lib->dl; i++) {
		lib->dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (lib->dl || i == 0)
			snprintf(lib->name, sizeof(lib->name), "%s", names[i]);
	}
	if (!lib->dl) {
		err = dlerror();
		snprintf(why, why_size, "%s", err ? err : "");
		return -ENOENT;
	}
	return 0;
}

/*
 * Every function, newest name first.  Returns -ENODEV when the few
 * functions without which nothing works are missing (the caller warns);
 * the rest only turn metrics off (c->missing).  Logs nothing (it runs
 * while the library's output is caught).
 */
static int lib_resolve(struct nvml_ctx *c)
{
	struct nvml_lib *lib = &c->lib;
	int v;

	RESOLVE(lib, init, "nvmlInit_v2", "nvmlInit");
	RESOLVE(lib, shutdown, "nvmlShutdown");
	RESOLVE(lib, device_get_count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
	RESOLVE(lib, device_get_handle_by_index, "nvmlDeviceGetHandleByIndex_v2",
		"nvmlDeviceGetHandleByIndex");
	if (!lib->init || !lib->shutdown || !lib->device_get_count ||
	    !lib->device_get_handle_by_index)
		return -ENODEV;
	RESOLVE(lib, error_string, "nvmlErrorString");
	RESOLVE(lib, system_get_driver_version, "nvmlSystemGetDriverVersion");
	RESOLVE(lib, system_get_nvml_version, "nvmlSystemGetNVMLVersion");
	RESOLVE(lib, device_get_name, "nvmlDeviceGetName");
	RESOLVE(lib, device_get_uuid, "nvmlDeviceGetUUID");
	/* same 68 bytes for _v3 and _v2; the unsuffixed call fills a prefix of it */
	v = RESOLVE(lib, device_get_pci_info, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2",
		    "nvmlDeviceGetPciInfo");
	lib->pci_legacy = v == 2;
	RESOLVE(lib, device_get_minor_number, "nvmlDeviceGetMinorNumber");
	RESOLVE(lib, device_get_utilization_rates, "nvmlDeviceGetUtilizationRates");
	if (RESOLVE(lib, device_get_memory_info_v2, "nvmlDeviceGetMemoryInfo_v2") < 0)
		RESOLVE(lib, device_get_memory_info, "nvmlDeviceGetMemoryInfo");
	RESOLVE(lib, device_get_pcie_throughput, "nvmlDeviceGetPcieThroughput");
	RESOLVE(lib, device_get_nvlink_state, "nvmlDeviceGetNvLinkState");
	RESOLVE(lib, device_get_field_values, "nvmlDeviceGetFieldValues");
	RESOLVE(lib, device_get_power_usage, "nvmlDeviceGetPowerUsage");
	RESOLVE(lib, device_get_power_limit, "nvmlDeviceGetEnforcedPowerLimit",
		"nvmlDeviceGetPowerManagementLimit");
	RESOLVE(lib, device_get_total_energy_consumption, "nvmlDeviceGetTotalEnergyConsumption");
	RESOLVE(lib, device_get_temperature, "nvmlDeviceGetTemperature");
	RESOLVE(lib, device_get_clock_info, "nvmlDeviceGetClockInfo");
	RESOLVE(lib, device_get_clocks_event_reasons, "nvmlDeviceGetCurrentClocksEventReasons",
		"nvmlDeviceGetCurrentClocksThrottleReasons");
	RESOLVE(lib, device_get_total_ecc_errors, "nvmlDeviceGetTotalEccErrors");
	RESOLVE(lib, device_get_process_utilization, "nvmlDeviceGetProcessUtilization");
	RESOLVE(lib, event_set_create, "nvmlEventSetCreate");
	RESOLVE(lib, device_get_supported_event_types, "nvmlDeviceGetSupportedEventTypes");
	RESOLVE(lib, device_register_events, "nvmlDeviceRegisterEvents");
	RESOLVE(lib, event_set_wait, "nvmlEventSetWait_v2", "nvmlEventSetWait");
	RESOLVE(lib, event_set_free, "nvmlEventSetFree");
	RESOLVE(lib, device_get_violation_status, "nvmlDeviceGetViolationStatus");
	RESOLVE(lib, device_get_remapped_rows, "nvmlDeviceGetRemappedRows");
	RESOLVE(lib, device_get_accounting_mode, "nvmlDeviceGetAccountingMode");
	RESOLVE(lib, device_get_accounting_stats, "nvmlDeviceGetAccountingStats");
	RESOLVE(lib, gpm_query_device_support, "nvmlGpmQueryDeviceSupport");
	RESOLVE(lib, gpm_sample_alloc, "nvmlGpmSampleAlloc");
	RESOLVE(lib, gpm_sample_free, "nvmlGpmSampleFree");
	RESOLVE(lib, gpm_sample_get, "nvmlGpmSampleGet");
	RESOLVE(lib, gpm_mig_sample_get, "nvmlGpmMigSampleGet");
	RESOLVE(lib, gpm_metrics_get, "nvmlGpmMetricsGet");
	RESOLVE(lib, device_get_mig_mode, "nvmlDeviceGetMigMode");
	RESOLVE(lib, device_get_max_mig_device_count, "nvmlDeviceGetMaxMigDeviceCount");
	RESOLVE(lib, device_get_mig_device_handle_by_index, "nvmlDeviceGetMigDeviceHandleByIndex");
	RESOLVE(lib, device_get_gpu_instance_id, "nvmlDeviceGetGpuInstanceId");
	RESOLVE(lib, device_get_compute_instance_id, "nvmlDeviceGetComputeInstanceId");

	/* _v3 and _v2 take 24-byte entries, the unsuffixed call 16-byte ones */
	for (int l = 0; l < 2; l++) {
		static const char *const names[2][4] = {
		    {"nvmlDeviceGetComputeRunningProcesses_v3",
		     "nvmlDeviceGetComputeRunningProcesses_v2",
		     "nvmlDeviceGetComputeRunningProcesses", NULL},
		    {"nvmlDeviceGetGraphicsRunningProcesses_v3",
		     "nvmlDeviceGetGraphicsRunningProcesses_v2",
		     "nvmlDeviceGetGraphicsRunningProcesses", NULL},
		};
		struct nvml_proc_list *list = &c->lists[l];

		v = resolve(lib->dl, (void **)&list->get, names[l]);
		list->stride =
		    v == 2 ? sizeof(struct nvml_process_info_v1) : sizeof(struct nvml_process_info);
		list->graphics = l == 1;
	}

	if (!lib->device_get_utilization_rates)
		c->missing |= GPU_UTIL | GPU_MEM_UTIL;
	if (!lib->device_get_memory_info_v2 && !lib->device_get_memory_info)
		c->missing |= GPU_MEM_USED;
	if (!lib->device_get_pcie_throughput)
		c->missing |= GPU_PCIE;
	if (!lib->device_get_field_values || !lib->device_get_nvlink_state)
		c->missing |= GPU_NVLINK;
	if (!lib->device_get_power_usage)
		c->missing |= GPU_POWER;
	if (!lib->device_get_total_energy_consumption)
		c->missing |= GPU_ENERGY;
	if (!lib->device_get_temperature)
		c->missing |= GPU_TEMP;
	if (!lib->device_get_clock_info)
		c->missing |= GPU_SM_CLOCK | GPU_MEM_CLOCK;
	if (!lib->device_get_clocks_event_reasons)
		c->missing |= GPU_THROTTLE;
	if (!lib->device_get_total_ecc_errors)
		c->missing |= GPU_ECC;
	if (!c->lists[0].get && !c->lists[1].get)
		c->missing |= GPU_PROC_MEM;
	if (!lib->device_get_process_utilization)
		c->missing |= GPU_PROC_UTIL;
	if (!lib->event_set_create || !lib->device_register_events || !lib->event_set_wait ||
	    !lib->event_set_free)
		c->missing |= GPU_EVENTS;
	if (!lib->gpm_query_device_support || !lib->gpm_sample_alloc || !lib->gpm_sample_free ||
	    !lib->gpm_metrics_get || (!lib->gpm_sample_get && !lib->gpm_mig_sample_get))
		c->missing_prof |= GPU_PROF_GPM;
	if (!lib->device_get_field_values)
		c->missing_prof |= NVML_PROF_FIELD_BITS & ~(uint32_t)NVML_PROF_OLD_CALL;
	if (!lib->device_get_field_values && !lib->device_get_violation_status)
		c->missing_prof |= NVML_PROF_OLD_CALL;
	if (!lib->device_get_remapped_rows)
		c->missing_prof |= GPU_PROF_REMAPPED_ROWS;
	if (!lib->device_get_accounting_mode || !lib->device_get_accounting_stats)
		c->missing |= GPU_PROC_MAX_MEM;
	return 0;
}

static const char *nvml_strerror(struct nvml_ctx *c, nvml_return_t r)
{
	const char *s = c->lib.error_string ? NVML(c, error_string, r) : NULL;

	return s ? s : "unknown error";
}

/* ---- answers ---- */

static struct nvml_gpu *gpu_at(struct nvml_ctx *c, int index)
{
	if (!c || index < 0 || index >= c->ngpus || !c->gpu[index].handle)
		return NULL;
	return &c->gpu[index];
}

/* ---- per-tick readings ---- */

static void read_utilization(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	struct nvml_utilization u = {0};
	nvml_return_t r;

	if (!wanted(g, GPU_UTIL | GPU_MEM_UTIL))
		return;
	r = NVML(c, device_get_utilization_rates, g->handle, &u);
	if (!answered(g, r, GPU_UTIL | GPU_MEM_UTIL))
		return;
	out->util_pct = u.gpu;
	out->mem_util_pct = u.memory;
	out->valid |= GPU_UTIL | GPU_MEM_UTIL;
}

/* Memory used; also keeps the device's total up to date for info(). */
static void read_memory(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	unsigned long long total, used;
	nvml_return_t r;

	if (!wanted(g, GPU_MEM_USED))
		return;
	if (c->lib.device_get_memory_info_v2) {
		struct nvml_memory_v2 m = {.version = NVML_MEMORY_V2_VERSION};

		r = NVML(c, device_get_memory_info_v2, g->handle, &m);
		total = m.total;
		used = m.used;
	} else {
		/* v1 counts the driver's reserved memory as used */
		struct nvml_memory m = {0};

		r = NVML(c, device_get_memory_info, g->handle, &m);
		total = m.total;
		used = m.used;
	}
	if (!answered(g, r, GPU_MEM_USED))
		return;
	out->mem_used_bytes = used;
	out->valid |= GPU_MEM_USED;
	g->info.mem_total_bytes = total;
	g->info.valid |= GPU_INFO_MEM_TOTAL;
}

/* NVML gives KB/s over a 20 ms window; we give bytes/s. */
static void read_pcie(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	unsigned int tx_kbps = 0, rx_kbps = 0;
	nvml_return_t r;

	if (!wanted(g, GPU_PCIE))
		return;
	r = NVML(c, device_get_pcie_throughput, g->handle, NVML_PCIE_UTIL_TX_BYTES, &tx_kbps);
	if (!answered(g, r, GPU_PCIE))
		return;
	r = NVML(c, device_get_pcie_throughput, g->handle, NVML_PCIE_UTIL_RX_BYTES, &rx_kbps);
	if (!answered(g, r, GPU_PCIE))
		return;
	out->pcie_tx_bps = (uint64_t)tx_kbps * 1024;
	out->pcie_rx_bps = (uint64_t)rx_kbps * 1024;
	out->valid |= GPU_PCIE;
}

/*
 * NVLink traffic: the data TX and RX counters (KiB) in one GetFieldValues
 * call, for all links at once (scopeId UINT_MAX) where the driver accepts
 * it, else one entry per active link, summed.  Measured traffic, never the
 * links' capacity.
 */
static void read_nvlink(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	struct nvml_field_value *fv = c->fields;
	uint64_t sum[2] = {0, 0};
	unsigned int n;
	nvml_return_t r;

	if (!wanted(g, GPU_NVLINK))
		return;
	n = g->nvlink_per_link ? g->nlinks : 1;
	memset(fv, 0, 2 * n * sizeof(*fv));
	for (unsigned int i = 0; i < n; i++) {
		unsigned int scope = g->nvlink_per_link ? g->links[i] : NVML_SCOPE_ALL_LINKS;

		fv[2 * i].field_id = NVML_FI_NVLINK_DATA_TX;
		fv[2 * i].scope_id = scope;
		fv[2 * i + 1].field_id = NVML_FI_NVLINK_DATA_RX;
		fv[2 * i + 1].scope_id = scope;
	}
	r = NVML(c, device_get_field_values, g->handle, (int)(2 * n), fv);
	if (!answered(g, r, GPU_NVLINK))
		return;
	for (unsigned int i = 0; i < 2 * n; i++) {
		uint64_t v;

		if (fv[i].nvml_return == NVML_SUCCESS && field_u64(&fv[i], &v)) {
			sum[i % 2] += v;
			continue;
		}
		if (fv[i].nvml_return == NVML_ERROR_GPU_IS_LOST) {
			g->lost = true;
		} else if (!g->nvlink_per_link) {
			/* "all links" refused: ask per link from the next tick on */
			g->nvlink_per_link = true;
		} else if (fv[i].nvml_return == NVML_ERROR_NOT_SUPPORTED ||
			   fv[i].nvml_return == NVML_ERROR_INVALID_ARGUMENT) {
			g->off |= GPU_NVLINK;
		}
		return;
	}
	out->nvlink_tx_bytes = sum[0] * 1024;
	out->nvlink_rx_bytes = sum[1] * 1024;
	out->valid |= GPU_NVLINK;
}

static void read_power(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	unsigned int mw = 0;
	nvml_return_t r;

	if (!wanted(g, GPU_POWER))
		return;
	r = NVML(c, device_get_power_usage, g->handle, &mw);
	if (!answered(g, r, GPU_POWER))
		return;
	out->power_mw = mw;
	out->valid |= GPU_POWER;
}

/* The driver's counter as it is: a wrap or a reset is for the caller to see. */
static void read_energy(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	unsigned long long mj = 0;
	nvml_return_t r;

	if (!wanted(g, GPU_ENERGY))
		return;
	r = NVML(c, device_get_total_energy_consumption, g->handle, &mj);
	if (!answered(g, r, GPU_ENERGY))
		return;
	out->energy_mj = mj;
	out->valid |= GPU_ENERGY;
}

static void read_temperature(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	unsigned int temp = 0;
	nvml_return_t r;

	if (!wanted(g, GPU_TEMP))
		return;
	r = NVML(c, device_get_temperature, g->handle, NVML_TEMPERATURE_GPU, &temp);
	if (!answered(g, r, GPU_TEMP) || temp > INT32_MAX)
		return;
	out->temp_c = (int32_t)temp;
	out->valid |= GPU_TEMP;
}

static void read_clocks(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	unsigned int mhz = 0;
	nvml_return_t r;

	if (wanted(g, GPU_SM_CLOCK)) {
		r = NVML(c, device_get_clock_info, g->handle, NVML_CLOCK_SM, &mhz);
		if (answered(g, r, GPU_SM_CLOCK)) {
			out->sm_clock_mhz = mhz;
			out->valid |= GPU_SM_CLOCK;
		}
	}
	if (wanted(g, GPU_MEM_CLOCK)) {
		r = NVML(c, device_get_clock_info, g->handle, NVML_CLOCK_MEM, &mhz);
		if (answered(g, r, GPU_MEM_CLOCK)) {
			out->mem_clock_mhz = mhz;
			out->valid |= GPU_MEM_CLOCK;
		}
	}
}

/* NVML's reason bits are ours (gpu.h): no mapping. */
static void read_throttle(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	unsigned long long reasons = 0;
	nvml_return_t r;

	if (!wanted(g, GPU_THROTTLE))
		return;
	r = NVML(c, device_get_clocks_event_reasons, g->handle, &reasons);
	if (!answered(g, r, GPU_THROTTLE))
		return;
	out->throttle_reasons = reasons;
	out->valid |= GPU_THROTTLE;
}

/* Volatile counts: since the driver was loaded. */
static void read_ecc(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	unsigned long long corrected = 0, uncorrected = 0;
	nvml_return_t r;

	if (!wanted(g, GPU_ECC))
		return;
	r = NVML(c, device_get_total_ecc_errors, g->handle, NVML_MEMORY_ERROR_CORRECTED,
		 NVML_VOLATILE_ECC, &corrected);
	if (!answered(g, r, GPU_ECC))
		return;
	r = NVML(c, device_get_total_ecc_errors, g->handle, NVML_MEMORY_ERROR_UNCORRECTED,
		 NVML_VOLATILE_ECC, &uncorrected);
	if (!answered(g, r, GPU_ECC))
		return;
	out->ecc_corrected = corrected;
	out->ecc_uncorrected = uncorrected;
	out->valid |= GPU_ECC;
}

static int gpu_sample(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	memset(out, 0, sizeof(*out));
	if (g->lost)
		return -ENODEV;
	read_utilization(c, g, out);
	read_memory(c, g, out);
	read_pcie(c, g, out);
	read_nvlink(c, g, out);
	read_power(c, g, out);
	read_energy(c, g, out);
	read_temperature(c, g, out);
	read_clocks(c, g, out);
	read_throttle(c, g, out);
	read_ecc(c, g, out);
	nvml_prof_sample(c, g, out);
	if (g->lost) {
		memset(out, 0, sizeof(*out));
		return -ENODEV;
	}
	return 0;
}

/* ---- processes ---- */

/* Room for at least `need` entries (of `size` bytes) in *buf, up to NVML_LIST_MAX. */
static int grow(void **buf, unsigned int *cap, unsigned int need, size_t size)
{
	void *p;

	if (need <= *cap)
		need = *cap + 16; /* the driver asked for no more: do not loop on it */
	if (need > NVML_LIST_MAX)
		return -E2BIG;
	p = realloc(*buf, need * size);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = need;
	return 0;
}

/*
 * Adds one list's processes to out, merged by pid.  The list is read into
 * the buffer we have, grown to the count the driver asks for, a few times
 * at most: the count can change between two calls (a process starts or
 * exits).  The buffer stays for the next tick: a steady list costs one call.
 */
static void read_proc_list(struct nvml_ctx *c, struct nvml_gpu *g, struct nvml_proc_list *l,
			   struct gpu_proc *out, size_t max, size_t *n)
{
	nvml_return_t r = NVML_ERROR_INSUFFICIENT_SIZE;
	unsigned int count = 0;

	if (!l->get || g->list_off[l->graphics] || !wanted(g, GPU_PROC_MEM))
		return;
	for (int attempt = 0; attempt < NVML_LIST_ATTEMPTS; attempt++) {
		count = l->cap;
		r = NVML_CALL(c, l->get, g->handle, &count, l->cap ? l->buf : NULL);
		if (r != NVML_ERROR_INSUFFICIENT_SIZE || grow(&l->buf, &l->cap, count, l->stride))
			break;
	}
	if (r == NVML_ERROR_NOT_SUPPORTED) {
		g->list_off[l->graphics] = true;
		if (g->list_off[0] && g->list_off[1])
			g->off |= GPU_PROC_MEM;
		return;
	}
	if (!answered(g, r, 0) || count > l->cap) {
		if (r == NVML_ERROR_INSUFFICIENT_SIZE)
			log_debug("NVIDIA GPU %d: the process list kept changing", g->info.index);
		return;
	}
	for (unsigned int i = 0; i < count; i++) {
		/* the v1 fields lead both layouts */
		const struct nvml_process_info_v1 *e =
		    (const void *)((const char *)l->buf + i * l->stride);
		bool has_mem = e->used_gpu_memory != NVML_VALUE_NOT_AVAILABLE;
		struct gpu_proc *p = NULL;

		for (size_t k = 0; k < *n && !p; k++)
			if (out[k].pid == e->pid)
				p = &out[k];
		if (!p) {
			if (*n == max)
				continue;
			p = &out[(*n)++];
			memset(p, 0, sizeof(*p));
			p->pid = e->pid;
			p->valid = GPU_PROC_MEM;
		}
		/* in both lists: both memories, or unknown if either is */
		if (has_mem)
			p->mem_bytes += e->used_gpu_memory;
		else
			p->valid &= ~(uint32_t)GPU_PROC_MEM;
		if (!(p->valid & GPU_PROC_MEM))
			p->mem_bytes = 0;
		p->graphics = p->graphics || l->graphics;
	}
}

static int sample_by_time(const void *a, const void *b)
{
	const struct nvml_process_utilization_sample *x = a, *y = b;

	return (x->time_stamp > y->time_stamp) - (x->time_stamp < y->time_stamp);
}

static int sample_by_pid(const void *a, const void *b)
{
	const struct nvml_process_utilization_sample *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The entry of pid in out, added (nothing known yet) when there is room; NULL if none. */
static struct gpu_proc *proc_entry(struct gpu_proc *out, size_t max, size_t *n, uint32_t pid)
{
	for (size_t k = 0; k < *n; k++)
		if (out[k].pid == pid)
			return &out[k];
	if (*n == max)
		return NULL;
	memset(&out[*n], 0, sizeof(out[*n]));
	out[*n].pid = pid;
	out[*n].gone = true; /* until a list names it */
	return &out[(*n)++];
}

/*
 * Per-process utilization over the window since the last call: the
 * driver's samples newer than the newest one seen on this device, which it
 * takes at its own pace and hands out at the next call.  A process's
 * sm_util_pct (and mem_util_pct) is its samples' sum over the number of
 * sample instants in the window (an instant without a sample of it counts
 * 0%): its SM use averaged over the window, so that shares of it are
 * shares of the window's samples, a process that was there for part of
 * the window counting for that part.  Every listed process gets a value
 * (0% without a sample); a process with samples that no list names (it
 * ended, or came and went, within the window) is added, `gone`, without
 * memory.  NOT_FOUND means no sample in the window: no utilization, which
 * is not 0%.  Called even with empty lists, so that the window always
 * starts where the last one ended.
 */
static void read_proc_util(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_proc *out, size_t max,
			   size_t *n)
{
	struct nvml_process_utilization_sample *s;
	unsigned long long newest = g->last_util_ts;
	nvml_return_t r = NVML_ERROR_INSUFFICIENT_SIZE;
	unsigned int count = 0, instants = 0;

	if (!wanted(g, GPU_PROC_UTIL))
		return;
	for (int attempt = 0; attempt < NVML_LIST_ATTEMPTS; attempt++) {
		void *buf = c->util_buf;
		int ret;

		count = c->util_cap;
		r = NVML(c, device_get_process_utilization, g->handle,
			 c->util_cap ? c->util_buf : NULL, &count, g->last_util_ts);
		if (r != NVML_ERROR_INSUFFICIENT_SIZE)
			break;
		ret = grow(&buf, &c->util_cap, count, sizeof(*c->util_buf));
		c->util_buf = buf;
		if (ret)
			break;
	}
	if (r == NVML_ERROR_NOT_FOUND || !answered(g, r, GPU_PROC_UTIL) || count > c->util_cap ||
	    count == 0)
		return;
	s = c->util_buf;
	qsort(s, count, sizeof(*s), sample_by_time);
	for (unsigned int i = 0; i < count; i++)
		if (i == 0 || s[i].time_stamp != s[i - 1].time_stamp)
			instants++;
	if (s[count - 1].time_stamp > newest)
		newest = s[count - 1].time_stamp;
	for (size_t k = 0; k < *n; k++) {
		out[k].sm_util_pct = out[k].mem_util_pct = 0;
		out[k].valid |= GPU_PROC_UTIL | GPU_PROC_MEM_UTIL;
	}
	qsort(s, count, sizeof(*s), sample_by_pid);
	for (unsigned int i = 0, end; i < count; i = end) {
		unsigned long long sm = 0, mem = 0;
		struct gpu_proc *p;

		for (end = i; end < count && s[end].pid == s[i].pid; end++) {
			sm += s[end].sm_util;
			mem += s[end].mem_util;
		}
		p = proc_entry(out, max, n, s[i].pid);
		if (!p)
			continue;
		p->sm_util_pct = (uint32_t)((sm + instants / 2) / instants);
		p->mem_util_pct = (uint32_t)((mem + instants / 2) / instants);
		p->valid |= GPU_PROC_UTIL | GPU_PROC_MEM_UTIL;
	}
	g->last_util_ts = newest;
}

/* ---- opening a device ---- */

/* Copies a driver string that may lack its NUL. */
static void copy_driver_string(char *dst, size_t size, char *src, size_t src_size)
{
	src[src_size - 1] = '\0';
	snprintf(dst, size, "%s", src);
}

static void gpu_identity(struct nvml_ctx *c, struct nvml_gpu *g)
{
	char buf[NVML_DEVICE_STRING_BUFFER_SIZE];
	struct nvml_pci_info pci;
	nvml_return_t r;

	memset(buf, 0, sizeof(buf));
	if (c->lib.device_get_uuid) {
		r = NVML(c, device_get_uuid, g->handle, buf, sizeof(buf));
		if (answered(g, r, 0))
			copy_driver_string(g->info.uuid, sizeof(g->info.uuid), buf, sizeof(buf));
	}
	memset(buf, 0, sizeof(buf));
	if (c->lib.device_get_name && !g->lost) {
		r = NVML(c, device_get_name, g->handle, buf, sizeof(buf));
		if (answered(g, r, 0))
			copy_driver_string(g->info.name, sizeof(g->info.name), buf, sizeof(buf));
	}
	if (c->lib.device_get_minor_number && !g->lost) {
		unsigned int minor = 0;

		r = NVML(c, device_get_minor_number, g->handle, &minor);
		if (answered(g, r, 0)) {
			g->info.minor_number = minor;
			g->info.valid |= GPU_INFO_MINOR;
		}
	}
	memset(&pci, 0, sizeof(pci));
	if (c->lib.device_get_pci_info && !g->lost) {
		r = NVML(c, device_get_pci_info, g->handle, &pci);
		if (!answered(g, r, 0))
			return;
		if (c->lib.pci_legacy) /* only the numbers and a 4-digit domain */
			snprintf(g->info.pci_bus_id, sizeof(g->info.pci_bus_id), "%08X:%02X:%02X.0",
				 pci.domain, pci.bus & 0xff, pci.device & 0xff);
		else
			copy_driver_string(g->info.pci_bus_id, sizeof(g->info.pci_bus_id),
					   pci.bus_id, sizeof(pci.bus_id));
	}
}

static void gpu_power_limit(struct nvml_ctx *c, struct nvml_gpu *g)
{
	unsigned int mw = 0;
	nvml_return_t r;

	if (!c->lib.device_get_power_limit || g->lost)
		return;
	r = NVML(c, device_get_power_limit, g->handle, &mw);
	if (!answered(g, r, 0))
		return;
	g->info.power_limit_mw = mw;
	g->info.valid |= GPU_INFO_POWER_LIMIT;
}

/* The active NVLinks: links are asked in turn until the driver says there is no such link. */
static void gpu_nvlinks(struct nvml_ctx *c, struct nvml_gpu *g)
{
	if (!wanted(g, GPU_NVLINK))
		return;
	for (unsigned int link = 0; link < NVML_LINKS_MAX; link++) {
		int active = 0;
		nvml_return_t r;

		r = NVML(c, device_get_nvlink_state, g->handle, link, &active);
		if (r == NVML_ERROR_INVALID_ARGUMENT || r == NVML_ERROR_NOT_SUPPORTED)
			break;
		if (r != NVML_SUCCESS) { /* lost, or no answer: the links are unknown */
			answered(g, r, GPU_NVLINK);
			g->off |= GPU_NVLINK;
			return;
		}
		if (active == NVML_FEATURE_ENABLED)
			g->links[g->nlinks++] = link;
	}
	g->info.nvlink_count = g->nlinks;
	g->info.valid |= GPU_INFO_NVLINKS;
	if (g->nlinks == 0)
		g->off |= GPU_NVLINK;
}

/* XID and ECC events where the device has them. */
static void gpu_register_events(struct nvml_ctx *c, struct nvml_gpu *g)
{
	unsigned long long types = NVML_EVENTS_WANTED;
	nvml_return_t r;

	if (!c->events || !wanted(g, GPU_EVENTS)) {
		g->off |= GPU_EVENTS;
		return;
	}
	if (c->lib.device_get_supported_event_types) {
		r = NVML(c, device_get_supported_event_types, g->handle, &types);
		if (!answered(g, r, GPU_EVENTS))
			return;
		types &= NVML_EVENTS_WANTED;
	}
	if (!types) {
		g->off |= GPU_EVENTS;
		return;
	}
	r = NVML(c, device_register_events, g->handle, types, c->events);
	if (!answered(g, r, GPU_EVENTS)) {
		g->off |= GPU_EVENTS; /* whatever the error: we will not poll for it */
		return;
	}
	c->nregistered++;
}

/*
 * Whether the device has process lists and per-process utilization: a
 * count query of each (a NULL buffer), which keeps no sample.
 */
static void gpu_probe_processes(struct nvml_ctx *c, struct nvml_gpu *g)
{
	unsigned int count;
	nvml_return_t r;

	for (int l = 0; l < 2; l++) {
		if (!c->lists[l].get)
			g->list_off[l] = true;
		if (g->list_off[l] || !wanted(g, GPU_PROC_MEM))
			continue;
		count = 0;
		r = NVML_CALL(c, c->lists[l].get, g->handle, &count, NULL);
		if (r == NVML_ERROR_NOT_SUPPORTED)
			g->list_off[l] = true;
		else
			answered(g, r, 0);
	}
	if (g->list_off[0] && g->list_off[1])
		g->off |= GPU_PROC_MEM;
	if (wanted(g, GPU_PROC_UTIL)) {
		count = 0;
		r = NVML(c, device_get_process_utilization, g->handle, NULL, &count, 0);
		if (r != NVML_ERROR_NOT_FOUND)
			answered(g, r, GPU_PROC_UTIL);
	}
}

/*
 * What a device has, once the rest is known: one sample (the probe) turns
 * off what it answers NOT_SUPPORTED to; GPM is set up after it, so that
 * the first tick takes the first GPM sample.
 */
static void gpu_probe(struct nvml_ctx *c, struct nvml_gpu *g)
{
	struct gpu_sample probe;

	gpu_sample(c, g, &probe);
	if (g->info.mig_enabled)
		g->off |= GPU_PROC_MEM | GPU_PROC_UTIL | GPU_PROC_MAX_MEM;
	else
		gpu_probe_processes(c, g);
	gpu_register_events(c, g);
	nvml_prof_open(c, g);
	g->info.supported = GPU_METRICS_ALL & ~g->off;
	/* one call gives both per-process SM and memory utilization */
	if (g->info.supported & GPU_PROC_UTIL)
		g->info.supported |= GPU_PROC_MEM_UTIL;
	if (g->accounting && !(g->off & GPU_PROC_MAX_MEM))
		g->info.supported |= GPU_PROC_MAX_MEM;
	g->info.prof_supported = GPU_PROF_ALL & ~g->prof_off;
}

/* Whether the GPU is in MIG mode (current mode; a pending one is not there yet). */
static bool gpu_mig_mode(struct nvml_ctx *c, struct nvml_gpu *g)
{
	unsigned int current = 0, pending = 0;

	if (!c->lib.device_get_mig_mode || !c->lib.device_get_max_mig_device_count ||
	    !c->lib.device_get_mig_device_handle_by_index || g->lost)
		return false;
	return NVML(c, device_get_mig_mode, g->handle, &current, &pending) == NVML_SUCCESS &&
	       current == NVML_DEVICE_MIG_ENABLE;
}

/* "NVIDIA H100 80GB HBM3 MIG 1g.10gb": the profile is what follows "MIG ". */
static void mig_profile(const char *name, char *out, size_t size)
{
	const char *p = NULL;

	for (const char *q = strstr(name, "MIG "); q; q = strstr(q + 1, "MIG "))
		p = q + 4;
	snprintf(out, size, "%s", p ? p : "");
}

/*
 * A MIG device of the GPU at position parent: its own handle, identity
 * and instance ids, the GPU's index, bus id and minor number.
 */
static void mig_open(struct nvml_ctx *c, int pos, int parent, nvml_device_t handle)
{
	struct nvml_gpu *g = &c->gpu[pos];
	const struct nvml_gpu *p = &c->gpu[parent];
	unsigned int id = 0;

	memset(g, 0, sizeof(*g));
	g->handle = handle;
	g->parent = p->handle;
	g->off = c->missing;
	g->prof_off = c->missing_prof;
	g->info.index = p->info.index;
	g->info.mig = true;
	g->info.mig_parent = parent;
	gpu_identity(c, g);
	memcpy(g->info.pci_bus_id, p->info.pci_bus_id, sizeof(g->info.pci_bus_id));
	g->info.minor_number = p->info.minor_number;
	g->info.valid = p->info.valid & GPU_INFO_MINOR;
	if (c->lib.device_get_gpu_instance_id &&
	    NVML(c, device_get_gpu_instance_id, handle, &id) == NVML_SUCCESS)
		g->info.gpu_instance_id = id;
	if (c->lib.device_get_compute_instance_id &&
	    NVML(c, device_get_compute_instance_id, handle, &id) == NVML_SUCCESS)
		g->info.compute_instance_id = id;
	mig_profile(g->info.name, g->info.mig_profile, sizeof(g->info.mig_profile));
	g->off |= GPU_NVLINK; /* the GPU's links, not the instance's */
	gpu_probe(c, g);
}

/*
 * Device i (NVML's index) at position pos, and its MIG devices after it:
 * everything that does not change and which metrics it has.  Returns the
 * positions used.
 */
static int gpu_open(struct nvml_ctx *c, int pos, int i)
{
	struct nvml_gpu *g = &c->gpu[pos];
	unsigned int max = 0;
	nvml_return_t r;
	int used = 1;

	memset(g, 0, sizeof(*g));
	g->info.index = i;
	g->off = c->missing;
	g->prof_off = c->missing_prof;
	r = NVML(c, device_get_handle_by_index, (unsigned int)i, &g->handle);
	if (r != NVML_SUCCESS) {
		log_warn(0, "NVIDIA GPU %d: %s (%d); leaving it out", i, nvml_strerror(c, r), r);
		g->handle = NULL;
		return used;
	}
	gpu_identity(c, g);
	gpu_power_limit(c, g);
	gpu_nvlinks(c, g);
	g->info.mig_enabled = gpu_mig_mode(c, g);
	gpu_probe(c, g);
	if (!g->info.mig_enabled ||
	    NVML(c, device_get_max_mig_device_count, g->handle, &max) != NVML_SUCCESS)
		return used;
	/* indexes without a MIG device answer NOT_FOUND: look at each */
	for (unsigned int k = 0; k < max && pos + used < GPU_MAX_DEVICES; k++) {
		nvml_device_t mig = NULL;

		r = NVML(c, device_get_mig_device_handle_by_index, g->handle, k, &mig);
		if (r != NVML_SUCCESS || !mig)
			continue;
		mig_open(c, pos + used, pos, mig);
		used++;
	}
	return used;
}

/* ---- the backend ---- */

static void read_versions(struct nvml_ctx *c)
{
	char buf[NVML_SYSTEM_VERSION_BUFFER_SIZE];

	memset(buf, 0, sizeof(buf));
	if (c->lib.system_get_driver_version &&
	    NVML(c, system_get_driver_version, buf, sizeof(buf)) == NVML_SUCCESS)
		copy_driver_string(c->driver, sizeof(c->driver), buf, sizeof(buf));
	memset(buf, 0, sizeof(buf));
	if (c->lib.system_get_nvml_version &&
	    NVML(c, system_get_nvml_version, buf, sizeof(buf)) == NVML_SUCCESS)
		copy_driver_string(c->library, sizeof(c->library), buf, sizeof(buf));
}

static void nvml_close(void *ctx)
{
	struct nvml_ctx *c = ctx;

	if (!c)
		return;
	if (c->events)
		NVML(c, event_set_free, c->events);
	for (int i = 0; i < c->ngpus; i++)
		nvml_prof_release(c, &c->gpu[i]);
	NVML(c, shutdown);
	dlclose(c->lib.dl);
	free(c->lists[0].buf);
	free(c->lists[1].buf);
	free(c->util_buf);
	free(c->fields);
	free(c);
}

bool gpu_nvml_means_no_gpu(int nvml_return)
{
	return nvml_return == NVML_ERROR_DRIVER_NOT_LOADED;
}

/* What happened while the library's output was caught: logged once it is not. */
struct nvml_start {
	int loaded;   /* lib_load's answer */
	int resolved; /* lib_resolve's */
	bool init_called;
	nvml_return_t init;    /* nvmlInit_v2's answer */
	nvml_return_t counted; /* nvmlDeviceGetCount_v2's */
	unsigned int n;
	char why[256]; /* dlerror() */
};

/* Loading, nvmlInit and the device count, with no logging (see nvml_open). */
static void nvml_start(struct nvml_ctx *c, struct nvml_start *s)
{
	s->loaded = lib_load(&c->lib, s->why, sizeof(s->why));
	if (s->loaded)
		return;
	s->resolved = lib_resolve(c);
	if (s->resolved)
		return;
	s->init_called = true;
	s->init = NVML(c, init);
	if (s->init == NVML_SUCCESS)
		s->counted = NVML(c, device_get_count, &s->n);
}

static int nvml_open(void **ctx, struct gpu_open_note *note)
{
	char said[GPU_SAID_MAX + 16];
	struct nvml_start s;
	struct nvml_ctx *c;
	struct libout cap;
	unsigned int n;
	int ret;

	*ctx = NULL;
	memset(note, 0, sizeof(*note));
	memset(&s, 0, sizeof(s));
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fields = calloc(2 * NVML_LINKS_MAX, sizeof(*c->fields));
	if (!c->fields) {
		ret = -ENOMEM;
		goto out_free_ctx;
	}
	libout_begin(&cap);
	nvml_start(c, &s);
	libout_end(&cap, note->said, sizeof(note->said));
	snprintf(note->library, sizeof(note->library), "%s", c->lib.name);
	if (note->said[0])
		log_debug("nvml: the library said: %s", note->said);
	if (s.loaded) {
		log_debug("no NVIDIA library: %s", s.why);
		ret = s.loaded;
		goto out_free_ctx;
	}
	note->state = GPU_LIB_FAILED;
	if (s.resolved) {
		snprintf(note->detail, sizeof(note->detail), "no nvmlInit or nvmlDeviceGetCount");
		log_warn(0,
			 "NVIDIA library %s lacks nvmlInit or nvmlDeviceGetCount; going on "
			 "without NVIDIA GPUs%s",
			 c->lib.name, libout_said(said, sizeof(said), note->said));
		ret = -ENODEV;
		goto out_dlclose;
	}
	if (s.init != NVML_SUCCESS && gpu_nvml_means_no_gpu(s.init)) {
		note->state = GPU_LIB_NO_GPU;
		snprintf(note->detail, sizeof(note->detail), "no driver loaded: no NVIDIA GPU");
		log_debug("NVIDIA: %s found, %s (nvmlInit: %s, %d)", c->lib.name, note->detail,
			  nvml_strerror(c, s.init), s.init);
		ret = -ENXIO;
		goto out_dlclose;
	}
	if (s.init != NVML_SUCCESS) {
		snprintf(note->detail, sizeof(note->detail), "%s (%d)", nvml_strerror(c, s.init),
			 s.init);
		log_warn(0,
			 "NVIDIA library %s loaded but cannot start: %s; going on without "
			 "NVIDIA GPUs%s",
			 c->lib.name, note->detail, libout_said(said, sizeof(said), note->said));
		ret = -ENODEV;
		goto out_dlclose;
	}
	if (s.counted != NVML_SUCCESS) {
		snprintf(note->detail, sizeof(note->detail), "cannot count GPUs: %s (%d)",
			 nvml_strerror(c, s.counted), s.counted);
		log_warn(0, "NVIDIA library %s %s; going on without NVIDIA GPUs%s", c->lib.name,
			 note->detail, libout_said(said, sizeof(said), note->said));
		ret = -ENODEV;
		goto out_shutdown;
	}
	n = s.n;
	read_versions(c);
	if (n > GPU_MAX_DEVICES)
		n = GPU_MAX_DEVICES;
	note->state = n > 0 ? GPU_LIB_OPEN : GPU_LIB_NO_GPU;
	if (n == 0) {
		snprintf(note->detail, sizeof(note->detail), "no NVIDIA GPU");
		log_debug("NVIDIA: %s found, no NVIDIA GPU (it counts 0 devices)", c->lib.name);
	}
	if (n > 0 && !(c->missing & GPU_EVENTS) &&
	    NVML(c, event_set_create, &c->events) != NVML_SUCCESS)
		c->events = NULL;
	for (int i = 0; i < (int)n && c->ngpus < GPU_MAX_DEVICES; i++)
		c->ngpus += gpu_open(c, c->ngpus, i);
	*ctx = c;
	return 0;

out_shutdown:
	NVML(c, shutdown);
out_dlclose:
	dlclose(c->lib.dl);
out_free_ctx:
	free(c->fields);
	free(c);
	return ret;
}

static void nvml_versions(void *ctx, char *driver, size_t driver_size, char *library,
			  size_t library_size)
{
	const struct nvml_ctx *c = ctx;

	snprintf(driver, driver_size, "%s", c ? c->driver : "");
	snprintf(library, library_size, "%s", c ? c->library : "");
}

static int nvml_count(void *ctx, int *n)
{
	const struct nvml_ctx *c = ctx;

	*n = c ? c->ngpus : 0;
	return 0;
}

static int nvml_info(void *ctx, int index, struct gpu_device_info *out)
{
	struct nvml_gpu *g = gpu_at(ctx, index);

	if (!g || g->lost)
		return -ENODEV;
	*out = g->info;
	return 0;
}

static int nvml_sample(void *ctx, int index, struct gpu_sample *out)
{
	struct nvml_gpu *g = gpu_at(ctx, index);

	if (!g) {
		memset(out, 0, sizeof(*out));
		return -ENODEV;
	}
	return gpu_sample(ctx, g, out);
}

static int nvml_processes(void *ctx, int index, struct gpu_proc *out, size_t max, size_t *n)
{
	struct nvml_ctx *c = ctx;
	struct nvml_gpu *g = gpu_at(c, index);

	*n = 0;
	if (!g || g->lost)
		return -ENODEV;
	if (g->info.mig_enabled) /* its processes are its MIG devices' */
		return 0;
	read_proc_list(c, g, &c->lists[0], out, max, n);
	read_proc_list(c, g, &c->lists[1], out, max, n);
	read_proc_util(c, g, out, max, n);
	nvml_proc_max_mem(c, g, out, *n);
	if (g->lost) {
		*n = 0;
		return -ENODEV;
	}
	return 0;
}

static int gpu_index_of(const struct nvml_ctx *c, nvml_device_t handle)
{
	for (int i = 0; i < c->ngpus; i++)
		if (c->gpu[i].handle && c->gpu[i].handle == handle)
			return i;
	return -1;
}

static void event_from_nvml(struct gpu_event *e, int index, const struct nvml_event_data *d)
{
	memset(e, 0, sizeof(*e));
	e->index = index;
	e->data = d->event_data;
	switch (d->event_type) {
	case NVML_EVENT_XID:
		e->kind = GPU_EVENT_XID;
		snprintf(e->message, sizeof(e->message), "XID %llu on GPU %d", d->event_data,
			 index);
		break;
	case NVML_EVENT_SBE:
		e->kind = GPU_EVENT_ECC_SBE;
		snprintf(e->message, sizeof(e->message), "single-bit ECC error on GPU %d", index);
		break;
	case NVML_EVENT_DBE:
		e->kind = GPU_EVENT_ECC_DBE;
		snprintf(e->message, sizeof(e->message), "double-bit ECC error on GPU %d", index);
		break;
	default:
		e->kind = GPU_EVENT_OTHER;
		snprintf(e->message, sizeof(e->message), "NVML event 0x%llx on GPU %d",
			 d->event_type, index);
		break;
	}
}

/*
 * First the devices found lost since the last call, then what the event
 * set holds, polled without waiting until the driver says TIMEOUT (none
 * left).  Any other answer (GPU_IS_LOST of some device) ends this round;
 * the next call polls again.
 */
static int nvml_events(void *ctx, struct gpu_event *out, size_t max, size_t *n)
{
	struct nvml_ctx *c = ctx;

	*n = 0;
	if (!c)
		return 0;
	for (int i = 0; i < c->ngpus && *n < max; i++) {
		struct nvml_gpu *g = &c->gpu[i];
		struct gpu_event *e = &out[*n];

		if (!g->lost || g->lost_reported)
			continue;
		g->lost_reported = true;
		if (g->info.mig) /* its GPU says it */
			continue;
		memset(e, 0, sizeof(*e));
		e->index = g->info.index;
		e->kind = GPU_EVENT_LOST;
		snprintf(e->message, sizeof(e->message), "GPU %d fell off the bus", g->info.index);
		(*n)++;
	}
	if (!c->events || c->nregistered == 0)
		return 0;
	for (int polls = 0; *n < max && polls < NVML_EVENTS_PER_CALL_MAX; polls++) {
		struct nvml_event_data d;
		nvml_return_t r;
		int index;

		memset(&d, 0, sizeof(d));
		r = NVML(c, event_set_wait, c->events, &d, 0);
		if (r != NVML_SUCCESS)
			break;
		index = gpu_index_of(c, d.device);
		if (index < 0)
			continue;
		event_from_nvml(&out[(*n)++], c->gpu[index].info.index, &d);
	}
	return 0;
}

static uint64_t nvml_calls(void *ctx)
{
	const struct nvml_ctx *c = ctx;

	return c ? c->calls : 0;
}

const struct gpu_backend gpu_backend_nvml = {
    .name = "nvml",
    .vendor = "NVIDIA",
    .open = nvml_open,
    .close = nvml_close,
    .versions = nvml_versions,
    .count = nvml_count,
    .info = nvml_info,
    .sample = nvml_sample,
    .processes = nvml_processes,
    .events = nvml_events,
    .calls = nvml_calls,
};
