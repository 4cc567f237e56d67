/*
 * rocm.c - AMD GPUs through ROCm SMI (librocm_smi64), loaded with dlopen().
 *
 * In this file: our own declarations of the few rsmi types used (layouts
 * from gpu-abi.md, "ROCm SMI", pinned by _Static_assert), loading and
 * symbol resolution, open()/close() with the event notification set-up,
 * the per-metric readers of sample(), the system-wide process snapshot
 * behind processes(), events(), and the backend table at the end.
 *
 * Choices made here, each explained where it is made:
 *  - GPU_PCIE stays unsupported: rsmi_dev_pci_throughput_get() sleeps about
 *    a second to measure, far too long for a sampling tick.
 *  - GPU_THROTTLE stays unsupported: these calls give no reasons bitmask;
 *    thermal throttling arrives as an event (GPU_EVENT_THERMAL) instead.
 *  - No device is ever reported lost (-ENODEV): ROCm SMI has no status that
 *    means "gone", and a device under reset comes back.  See answered().
 *  - rsmi_frequencies_t changed layout in ROCm 6: chosen from
 *    rsmi_version_get() and checked on every read.  See clock_decode().
 *  - ECC counts are those of the UMC block (VRAM), as NVML's ECC counts are
 *    the memory's.
 *  - Per-process numbers are summed over all GPUs by ROCm SMI: a process on
 *    several devices is listed on each without values.  See rocm_processes().
 *
 * Units from the library: power µW, energy counter × resolution µJ,
 * temperature m°C, clocks Hz, memory bytes.  Not thread-safe (gpu.h).
 */
#include "gpu.h"
#include "libout.h"

#include "common/log.h"
#include "common/sysroot.h"
#include "common/timeutil.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the ROCm SMI ABI (rocm_smi.h 5.2.3, upstream where it differs) ---- */

typedef uint32_t rsmi_status_t; /* an int-sized enum; UNKNOWN is 0xFFFFFFFF */

#define RSMI_STATUS_SUCCESS	      0
#define RSMI_STATUS_NOT_SUPPORTED     2
#define RSMI_STATUS_INIT_ERROR	      8
#define RSMI_STATUS_NOT_FOUND	      10
#define RSMI_STATUS_INSUFFICIENT_SIZE 11

#define RSMI_MEM_TYPE_VRAM	0
#define RSMI_TEMP_TYPE_EDGE	0
#define RSMI_TEMP_TYPE_JUNCTION 1
#define RSMI_TEMP_CURRENT	0
#define RSMI_CLK_TYPE_SYS	0
#define RSMI_CLK_TYPE_MEM	4
#define RSMI_POWER_SENSOR_0	0
#define RSMI_GPU_BLOCK_UMC	0x1 /* upstream rocm_smi.h: UMC = FIRST = 0x1 */
#define RSMI_EVT_VMFAULT	1
#define RSMI_EVT_THERMAL	2
#define RSMI_EVT_GPU_PRE_RESET	3
#define RSMI_EVT_GPU_POST_RESET 4
#define RSMI_EVENT_MASK(i)	(1ull << ((i)-1))
#define RSMI_EVT_MESSAGE_SIZE	64
#define RSMI_FREQS_MAX_V5	32 /* RSMI_MAX_NUM_FREQUENCIES in 5.2.3 */
#define RSMI_FREQS_MAX_V6	33 /* upstream ROCm 6: 32 + the deep-sleep one */

struct rsmi_version {
	uint32_t major;
	uint32_t minor;
	uint32_t patch;
	const char *build;
};

struct rsmi_error_count {
	uint64_t correctable_err;
	uint64_t uncorrectable_err;
};

struct rsmi_process_info {
	uint32_t process_id;
	uint32_t pasid;
	uint64_t vram_usage;   /* bytes, summed over every GPU the process uses */
	uint64_t sdma_usage;   /* µs */
	uint32_t cu_occupancy; /* percent; upstream marks "unknown" 0xFFFFFFFF */
};

struct rsmi_evt_notification_data {
	uint32_t dv_ind;
	uint32_t event; /* rsmi_evt_notification_type_t */
	char message[RSMI_EVT_MESSAGE_SIZE];
};

/* rsmi_frequencies_t up to ROCm 5.x. */
struct rsmi_frequencies_v5 {
	uint32_t num_supported;
	uint32_t current;		       /* index into frequency[] */
	uint64_t frequency[RSMI_FREQS_MAX_V5]; /* Hz */
};

/*
 * rsmi_frequencies_t from ROCm 6.0 (upstream commit 3d40c4b): a bool first.
 * Declared as a byte so that a misread layout shows as a value other than
 * 0 or 1 instead of an invalid bool.
 */
struct rsmi_frequencies_v6 {
	uint8_t has_deep_sleep;
	uint32_t num_supported;
	uint32_t current;
	uint64_t frequency[RSMI_FREQS_MAX_V6];
};

_Static_assert(sizeof(bool) == 1, "bool is one byte, as in rsmi_frequencies_t");
_Static_assert(sizeof(struct rsmi_version) == 24 && offsetof(struct rsmi_version, build) == 16,
	       "rsmi_version_t");
_Static_assert(sizeof(struct rsmi_error_count) == 16, "rsmi_error_count_t");
_Static_assert(sizeof(struct rsmi_process_info) == 32 &&
		   offsetof(struct rsmi_process_info, pasid) == 4 &&
		   offsetof(struct rsmi_process_info, vram_usage) == 8 &&
		   offsetof(struct rsmi_process_info, sdma_usage) == 16 &&
		   offsetof(struct rsmi_process_info, cu_occupancy) == 24,
	       "rsmi_process_info_t");
_Static_assert(sizeof(struct rsmi_evt_notification_data) == 72 &&
		   offsetof(struct rsmi_evt_notification_data, event) == 4 &&
		   offsetof(struct rsmi_evt_notification_data, message) == 8,
	       "rsmi_evt_notification_data_t");
_Static_assert(sizeof(struct rsmi_frequencies_v5) == 264 &&
		   offsetof(struct rsmi_frequencies_v5, current) == 4 &&
		   offsetof(struct rsmi_frequencies_v5, frequency) == 8,
	       "rsmi_frequencies_t (5.2.3)");
_Static_assert(sizeof(struct rsmi_frequencies_v6) == 280 &&
		   offsetof(struct rsmi_frequencies_v6, num_supported) == 4 &&
		   offsetof(struct rsmi_frequencies_v6, current) == 8 &&
		   offsetof(struct rsmi_frequencies_v6, frequency) == 16,
	       "rsmi_frequencies_t (6.x)");

/* What clk_freq_get writes into: room for either layout and a longer table. */
union rsmi_frequencies {
	struct rsmi_frequencies_v5 v5;
	struct rsmi_frequencies_v6 v6;
	uint64_t room[64];
};

/*
 * The functions used.  Enum arguments are passed as uint32_t, except the
 * GPU block: upstream's rsmi_gpu_block_t has 64-bit values, so it is passed
 * in a full register (harmless where the enum is 32 bits).
 */
struct rsmi_api {
	rsmi_status_t (*init)(uint64_t flags);
	rsmi_status_t (*shut_down)(void);
	rsmi_status_t (*status_string)(rsmi_status_t status, const char **text);
	rsmi_status_t (*version_get)(struct rsmi_version *v);
	rsmi_status_t (*num_monitor_devices)(uint32_t *n);
	rsmi_status_t (*dev_name_get)(uint32_t dv, char *name, size_t len);
	rsmi_status_t (*dev_unique_id_get)(uint32_t dv, uint64_t *id);
	rsmi_status_t (*dev_pci_id_get)(uint32_t dv, uint64_t *bdfid);
	rsmi_status_t (*dev_busy_percent_get)(uint32_t dv, uint32_t *pct);
	rsmi_status_t (*dev_memory_busy_percent_get)(uint32_t dv, uint32_t *pct);
	rsmi_status_t (*dev_memory_total_get)(uint32_t dv, uint32_t type, uint64_t *bytes);
	rsmi_status_t (*dev_memory_usage_get)(uint32_t dv, uint32_t type, uint64_t *bytes);
	rsmi_status_t (*dev_power_ave_get)(uint32_t dv, uint32_t sensor, uint64_t *uw);
	rsmi_status_t (*dev_energy_count_get)(uint32_t dv, uint64_t *counter, float *resolution_uj,
					      uint64_t *timestamp);
	rsmi_status_t (*dev_temp_metric_get)(uint32_t dv, uint32_t sensor, uint32_t metric,
					     int64_t *mdeg_c);
	rsmi_status_t (*dev_gpu_clk_freq_get)(uint32_t dv, uint32_t clk, union rsmi_frequencies *f);
	rsmi_status_t (*dev_ecc_count_get)(uint32_t dv, uint64_t block,
					   struct rsmi_error_count *ec);
	rsmi_status_t (*compute_process_info_get)(struct rsmi_process_info *procs, uint32_t *n);
	rsmi_status_t (*compute_process_gpus_get)(uint32_t pid, uint32_t *dv, uint32_t *n);
	rsmi_status_t (*event_notification_init)(uint32_t dv);
	rsmi_status_t (*event_notification_mask_set)(uint32_t dv, uint64_t mask);
	rsmi_status_t (*event_notification_get)(int timeout_ms, uint32_t *n,
						struct rsmi_evt_notification_data *data);
	rsmi_status_t (*event_notification_stop)(uint32_t dv);
};

#define API_SYM(field)                                                                             \
	{                                                                                          \
		"rsmi_" #field, offsetof(struct rsmi_api, field)                                   \
	}

static const struct {
	const char *name;
	size_t offset;
} rsmi_symbols[] = {
    API_SYM(init),
    API_SYM(shut_down),
    API_SYM(status_string),
    API_SYM(version_get),
    API_SYM(num_monitor_devices),
    API_SYM(dev_name_get),
    API_SYM(dev_unique_id_get),
    API_SYM(dev_pci_id_get),
    API_SYM(dev_busy_percent_get),
    API_SYM(dev_memory_busy_percent_get),
    API_SYM(dev_memory_total_get),
    API_SYM(dev_memory_usage_get),
    API_SYM(dev_power_ave_get),
    API_SYM(dev_energy_count_get),
    API_SYM(dev_temp_metric_get),
    API_SYM(dev_gpu_clk_freq_get),
    API_SYM(dev_ecc_count_get),
    API_SYM(compute_process_info_get),
    API_SYM(compute_process_gpus_get),
    API_SYM(event_notification_init),
    API_SYM(event_notification_mask_set),
    API_SYM(event_notification_get),
    API_SYM(event_notification_stop),
};

_Static_assert(sizeof(void *) == sizeof(rsmi_status_t(*)(void)),
	       "dlsym's answer fits a function pointer");

/* ---- backend state ---- */

static const char *const rocm_library_names[] = {
    "librocm_smi64.so",	  "librocm_smi64.so.7", "librocm_smi64.so.6",
    "librocm_smi64.so.5", "librocm_smi64.so.1",
};

#define ROCM_PROC_MAX	      4096 /* processes read in one snapshot */
#define ROCM_PROC_SLACK	      8	   /* room for processes started between two calls */
#define ROCM_PROC_ATTEMPTS    4
#define ROCM_PROC_SNAPSHOT_NS (200 * 1000 * 1000ll)
#define ROCM_EVENT_BATCH      16

#define ROCM_PROC_METRICS (GPU_PROC_MEM | GPU_PROC_UTIL)

struct rocm_dev {
	uint32_t unsupported; /* enum gpu_metric: NOT_SUPPORTED before any answer */
	uint32_t answered;    /* enum gpu_metric: gave a value at least once */
	uint32_t temp_sensor; /* EDGE, or JUNCTION where there is no edge sensor */
	bool events_on;	      /* notification init and mask set */
};

/* One process of the snapshot, with the devices it uses. */
struct rocm_proc {
	uint32_t pid;
	uint32_t cu_occupancy;
	uint64_t vram_bytes;
	uint64_t devices; /* bit i: uses device i */
	uint32_t ndevices;
};

struct rocm {
	void *lib;
	char lib_name[256];
	struct rsmi_api api;
	uint64_t ncalls;
	bool have_version;
	struct rsmi_version version;
	int clock_layout;     /* 5 or 6: rsmi_frequencies_t's layout; 0: clocks off */
	uint32_t lib_metrics; /* enum gpu_metric the library has the symbols for */
	int ndevices;
	struct rocm_dev dev[GPU_MAX_DEVICES];

	/*
	 * Processes are system-wide in ROCm SMI: one snapshot serves every
	 * device of a tick.  It is taken again when a device asks a second
	 * time, or when it is older than ROCM_PROC_SNAPSHOT_NS.
	 */
	struct rsmi_process_info *proc_buf; /* proc_cap entries */
	struct rocm_proc *procs;	    /* proc_cap entries, nprocs used */
	uint32_t proc_cap;
	uint32_t nprocs;
	bool procs_fresh;
	bool procs_answered;
	uint64_t procs_served; /* bit i: device i was given this snapshot */
	int64_t procs_ns;
};

/* Every library call goes through here, to be counted. */
#define RSMI(r, fn, ...) ((r)->ncalls++, (r)->api.fn(__VA_ARGS__))

static const char *status_text(struct rocm *r, rsmi_status_t st, char *buf, size_t size)
{
	const char *text = NULL;

	if (r->api.status_string && RSMI(r, status_string, st, &text) == RSMI_STATUS_SUCCESS &&
	    text)
		snprintf(buf, size, "%s", text);
	else
		snprintf(buf, size, "status %" PRIu32, st);
	return buf;
}

/*
 * Books one answer of one metric of one device.  NOT_SUPPORTED from a
 * metric that never gave a value turns it off for this device for good: it
 * is not asked again.  Any failure of a metric that did answer before only
 * clears this reading: librocm_smi64 turns a sysfs file's ENOENT into
 * NOT_SUPPORTED, and files vanish while a device resets or goes away.
 *
 * This is also why a device is never reported lost: no status says "gone",
 * and a device that resets (GPU_PRE_RESET, GPU_POST_RESET events) comes
 * back, so its metrics are missing for a while instead of ended for good.
 */
static bool answered(struct rocm_dev *d, uint32_t metric, rsmi_status_t st)
{
	if (st == RSMI_STATUS_SUCCESS) {
		d->answered |= metric;
		return true;
	}
	if (st == RSMI_STATUS_NOT_SUPPORTED && !(d->answered & metric))
		d->unsupported |= metric;
	return false;
}

static bool wanted(const struct rocm *r, const struct rocm_dev *d, uint32_t metric)
{
	return (r->lib_metrics & metric) && !(d->unsupported & metric);
}

/* ---- open and close ---- */

/*
 * Runs while the library's output is caught (libout.h): it logs nothing;
 * a failure's dlerror() text goes to why.
 */
static int load_library(struct rocm *r, char *why, size_t why_size)
{
	const char *path = getenv("JOBSCOPE_ROCM_SMI_LIBRARY");
	const char *err;

	if (path && *path) {
		snprintf(r->lib_name, sizeof(r->lib_name), "%s", path);
		r->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!r->lib) {
			err = dlerror();
			snprintf(why, why_size, "%s", err ? err : "");
			return -ENOENT;
		}
		return 0;
	}
	snprintf(r->lib_name, sizeof(r->lib_name), "%s", rocm_library_names[0]);
	for (size_t i = 0; i < sizeof(rocm_library_names) / sizeof(rocm_library_names[0]); i++) {
		r->lib = dlopen(rocm_library_names[i], RTLD_NOW | RTLD_LOCAL);
		if (r->lib) {
			snprintf(r->lib_name, sizeof(r->lib_name), "%s", rocm_library_names[i]);
			return 0;
		}
	}
	err = dlerror();
	snprintf(why, why_size, "%s", err ? err : "");
	return -ENOENT;
}

/* Each symbol on its own: one that is missing turns its metrics off. */
static void resolve_symbols(struct rocm *r)
{
	for (size_t i = 0; i < sizeof(rsmi_symbols) / sizeof(rsmi_symbols[0]); i++) {
		void *sym = dlsym(r->lib, rsmi_symbols[i].name);

		memcpy((char *)&r->api + rsmi_symbols[i].offset, &sym, sizeof(sym));
	}
}

/* The metrics whose calls the library has (clocks also need a known layout). */
static uint32_t library_metrics(const struct rocm *r)
{
	const struct rsmi_api *a = &r->api;
	uint32_t m = 0;

	if (a->dev_busy_percent_get)
		m |= GPU_UTIL;
	if (a->dev_memory_busy_percent_get)
		m |= GPU_MEM_UTIL;
	if (a->dev_memory_usage_get)
		m |= GPU_MEM_USED;
	if (a->dev_power_ave_get)
		m |= GPU_POWER;
	if (a->dev_energy_count_get)
		m |= GPU_ENERGY;
	if (a->dev_temp_metric_get)
		m |= GPU_TEMP;
	if (a->dev_gpu_clk_freq_get && r->clock_layout)
		m |= GPU_SM_CLOCK | GPU_MEM_CLOCK;
	if (a->dev_ecc_count_get)
		m |= GPU_ECC;
	if (a->compute_process_info_get && a->compute_process_gpus_get)
		m |= ROCM_PROC_METRICS;
	if (a->event_notification_init && a->event_notification_mask_set &&
	    a->event_notification_get && a->event_notification_stop)
		m |= GPU_EVENTS;
	return m;
}

/*
 * rsmi_frequencies_t gained a leading bool in ROCm 6.0, so the layout comes
 * from the library's version.  Without a version clocks stay off rather
 * than being read with a guessed layout.
 */
static void read_version(struct rocm *r)
{
	r->clock_layout = 0;
	if (!r->api.version_get || RSMI(r, version_get, &r->version) != RSMI_STATUS_SUCCESS)
		return;
	r->have_version = true;
	r->clock_layout = r->version.major >= 6 ? 6 : 5;
}

static void events_start(struct rocm *r)
{
	const uint64_t mask =
	    RSMI_EVENT_MASK(RSMI_EVT_VMFAULT) | RSMI_EVENT_MASK(RSMI_EVT_THERMAL) |
	    RSMI_EVENT_MASK(RSMI_EVT_GPU_PRE_RESET) | RSMI_EVENT_MASK(RSMI_EVT_GPU_POST_RESET);

	for (int i = 0; i < r->ndevices; i++) {
		struct rocm_dev *d = &r->dev[i];
		uint32_t dv = (uint32_t)i;

		if (!wanted(r, d, GPU_EVENTS))
			continue;
		if (!answered(d, GPU_EVENTS, RSMI(r, event_notification_init, dv)))
			continue;
		if (RSMI(r, event_notification_mask_set, dv, mask) != RSMI_STATUS_SUCCESS) {
			RSMI(r, event_notification_stop, dv);
			continue;
		}
		d->events_on = true;
	}
}

static int rocm_sample(void *ctx, int index, struct gpu_sample *out);
static int procs_refresh(struct rocm *r);

/*
 * Reads everything once, so that the metrics a device does not have are
 * known (and never asked again) before info() says what is supported.
 */
static void probe_devices(struct rocm *r)
{
	struct gpu_sample s;

	for (int i = 0; i < r->ndevices; i++)
		rocm_sample(r, i, &s);
	if (r->lib_metrics & ROCM_PROC_METRICS)
		procs_refresh(r);
	r->procs_fresh = false;
}

static void rocm_close(void *ctx)
{
	struct rocm *r = ctx;

	if (!r)
		return;
	for (int i = 0; i < r->ndevices; i++)
		if (r->dev[i].events_on)
			RSMI(r, event_notification_stop, (uint32_t)i);
	RSMI(r, shut_down);
	dlclose(r->lib);
	free(r->proc_buf);
	free(r->procs);
	free(r);
}

bool gpu_rocm_means_no_gpu(uint32_t rsmi_status, bool amdgpu_loaded)
{
	return rsmi_status == RSMI_STATUS_INIT_ERROR && !amdgpu_loaded;
}

bool gpu_amdgpu_loaded(void)
{
	return sysroot_exists("/sys/module/amdgpu") || sysroot_exists("/sys/class/kfd");
}

/* What happened while the library's output was caught: logged once it is not. */
struct rocm_start {
	int loaded;   /* load_library's answer */
	bool symbols; /* rsmi_init, rsmi_shut_down, rsmi_num_monitor_devices */
	bool init_called;
	rsmi_status_t init;    /* rsmi_init's answer */
	rsmi_status_t counted; /* rsmi_num_monitor_devices's answer */
	uint32_t n;
	char why[256]; /* dlerror() */
};

/*
 * Loading, rsmi_init and the device count: the calls during which the
 * real library prints to stderr (on a machine without an AMD GPU: "Failed
 * to open drm root directory /sys/class/drm.: No such file or directory"
 * and "Exception caught: rsmi_init.").  No logging here: see rocm_open.
 */
static void rocm_start(struct rocm *r, struct rocm_start *s)
{
	s->loaded = load_library(r, s->why, sizeof(s->why));
	if (s->loaded)
		return;
	resolve_symbols(r);
	s->symbols = r->api.init && r->api.shut_down && r->api.num_monitor_devices;
	if (!s->symbols)
		return;
	s->init_called = true;
	s->init = RSMI(r, init, 0);
	if (s->init == RSMI_STATUS_SUCCESS)
		s->counted = RSMI(r, num_monitor_devices, &s->n);
}

static int rocm_open(void **ctx, struct gpu_open_note *note)
{
	struct rocm_start s;
	struct libout cap;
	struct rocm *r;
	char text[128], said[GPU_SAID_MAX + 16];
	int ret;

	*ctx = NULL;
	memset(note, 0, sizeof(*note));
	memset(&s, 0, sizeof(s));
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	libout_begin(&cap);
	rocm_start(r, &s);
	libout_end(&cap, note->said, sizeof(note->said));
	snprintf(note->library, sizeof(note->library), "%s", r->lib_name);
	if (note->said[0])
		log_debug("rocm: the library said: %s", note->said);
	if (s.loaded) {
		log_debug("rocm: cannot load '%s': %s", r->lib_name, s.why);
		ret = s.loaded;
		goto out_free;
	}
	note->state = GPU_LIB_FAILED;
	if (!s.symbols) {
		snprintf(note->detail, sizeof(note->detail), "rsmi_init is missing");
		ret = log_warn(-ENODEV, "'%s' is not ROCm SMI: rsmi_init is missing%s", r->lib_name,
			       libout_said(said, sizeof(said), note->said));
		goto out_dlclose;
	}
	if (s.init != RSMI_STATUS_SUCCESS && gpu_rocm_means_no_gpu(s.init, gpu_amdgpu_loaded())) {
		note->state = GPU_LIB_NO_GPU;
		snprintf(note->detail, sizeof(note->detail), "no amdgpu driver loaded: no AMD GPU");
		log_debug("AMD: %s found, %s (rsmi_init: %s)", r->lib_name, note->detail,
			  status_text(r, s.init, text, sizeof(text)));
		ret = -ENXIO;
		goto out_dlclose;
	}
	if (s.init != RSMI_STATUS_SUCCESS) {
		snprintf(note->detail, sizeof(note->detail), "%s",
			 status_text(r, s.init, text, sizeof(text)));
		log_warn(0, "cannot initialise ROCm SMI ('%s'): %s%s", r->lib_name, note->detail,
			 libout_said(said, sizeof(said), note->said));
		ret = -ENODEV;
		goto out_dlclose;
	}
	if (s.counted != RSMI_STATUS_SUCCESS) {
		snprintf(note->detail, sizeof(note->detail), "cannot count devices: %s",
			 status_text(r, s.counted, text, sizeof(text)));
		log_warn(0, "ROCm SMI ('%s') %s%s", r->lib_name, note->detail,
			 libout_said(said, sizeof(said), note->said));
		ret = -ENODEV;
		goto out_shut_down;
	}
	r->ndevices = s.n > GPU_MAX_DEVICES ? GPU_MAX_DEVICES : (int)s.n;
	note->state = r->ndevices > 0 ? GPU_LIB_OPEN : GPU_LIB_NO_GPU;
	if (r->ndevices == 0) {
		snprintf(note->detail, sizeof(note->detail), "no AMD GPU");
		log_debug("AMD: %s found, no AMD GPU (it counts 0 devices)", r->lib_name);
	}
	for (int i = 0; i < r->ndevices; i++)
		r->dev[i].temp_sensor = RSMI_TEMP_TYPE_EDGE;
	read_version(r);
	r->lib_metrics = library_metrics(r);
	events_start(r);
	probe_devices(r);
	*ctx = r;
	return 0;

out_shut_down:
	RSMI(r, shut_down);
out_dlclose:
	dlclose(r->lib);
out_free:
	free(r);
	return ret;
}

static void rocm_versions(void *ctx, char *driver, size_t driver_size, char *library,
			  size_t library_size)
{
	const struct rocm *r = ctx;

	/* the amdgpu driver's version is not among the calls used here */
	snprintf(driver, driver_size, "%s", "");
	if (r && r->have_version)
		snprintf(library, library_size, "%" PRIu32 ".%" PRIu32 ".%" PRIu32,
			 r->version.major, r->version.minor, r->version.patch);
	else
		snprintf(library, library_size, "%s", "");
}

static int rocm_count(void *ctx, int *n)
{
	const struct rocm *r = ctx;

	*n = r ? r->ndevices : 0;
	return 0;
}

static uint32_t supported_metrics(const struct rocm *r, const struct rocm_dev *d)
{
	uint32_t m = r->lib_metrics & ~d->unsupported;

	if (!d->events_on)
		m &= ~(uint32_t)GPU_EVENTS;
	return m;
}

static int rocm_info(void *ctx, int index, struct gpu_device_info *out)
{
	struct rocm *r = ctx;
	uint32_t dv = (uint32_t)index;
	uint64_t id, bdf, total;

	memset(out, 0, sizeof(*out));
	if (!r || index < 0 || index >= r->ndevices)
		return -EINVAL;
	out->index = index;
	if (r->api.dev_name_get) {
		/* INSUFFICIENT_SIZE: a name longer than ours, truncated */
		rsmi_status_t st = RSMI(r, dev_name_get, dv, out->name, sizeof(out->name));

		if (st != RSMI_STATUS_SUCCESS && st != RSMI_STATUS_INSUFFICIENT_SIZE)
			out->name[0] = '\0';
		out->name[sizeof(out->name) - 1] = '\0';
	}
	/* rocm-smi's "Unique ID"; many consumer cards have none: uuid stays "" */
	if (r->api.dev_unique_id_get && RSMI(r, dev_unique_id_get, dv, &id) == RSMI_STATUS_SUCCESS)
		snprintf(out->uuid, sizeof(out->uuid), "0x%" PRIx64, id);
	/*
	 * (domain << 32) | (bus << 8) | (device << 3) | function, written the
	 * way NVML writes bus ids; upstream keeps a partition id in bits 28-31,
	 * which the masks leave out.
	 */
	if (r->api.dev_pci_id_get && RSMI(r, dev_pci_id_get, dv, &bdf) == RSMI_STATUS_SUCCESS)
		snprintf(out->pci_bus_id, sizeof(out->pci_bus_id), "%08" PRIX64 ":%02X:%02X.%X",
			 bdf >> 32, (unsigned int)(bdf >> 8) & 0xff,
			 (unsigned int)(bdf >> 3) & 0x1f, (unsigned int)bdf & 0x7);
	if (r->api.dev_memory_total_get &&
	    RSMI(r, dev_memory_total_get, dv, RSMI_MEM_TYPE_VRAM, &total) == RSMI_STATUS_SUCCESS) {
		out->mem_total_bytes = total;
		out->valid |= GPU_INFO_MEM_TOTAL;
	}
	/* no power limit (rsmi_dev_power_cap_get is not used) and no NVLink */
	out->supported = supported_metrics(r, &r->dev[index]);
	return 0;
}

/* ---- sample ---- */

static bool percent_read(struct rocm *r, struct rocm_dev *d, uint32_t dv, uint32_t metric,
			 uint32_t *pct)
{
	uint32_t value = 0;
	rsmi_status_t st;

	if (metric == GPU_UTIL)
		st = RSMI(r, dev_busy_percent_get, dv, &value);
	else
		st = RSMI(r, dev_memory_busy_percent_get, dv, &value);
	if (!answered(d, metric, st) || value > 100)
		return false;
	*pct = value;
	return true;
}

static bool energy_read(struct rocm *r, struct rocm_dev *d, uint32_t dv, uint64_t *mj)
{
	uint64_t counter = 0, timestamp = 0;
	float resolution_uj = 0;
	rsmi_status_t st;

	st = RSMI(r, dev_energy_count_get, dv, &counter, &resolution_uj, &timestamp);
	if (!answered(d, GPU_ENERGY, st) || !isfinite(resolution_uj) || resolution_uj <= 0)
		return false;
	*mj = (uint64_t)((double)counter * (double)resolution_uj / 1000.0);
	return true;
}

static bool temp_read(struct rocm *r, struct rocm_dev *d, uint32_t dv, int32_t *deg_c)
{
	int64_t mdeg = 0;
	rsmi_status_t st;

	st = RSMI(r, dev_temp_metric_get, dv, d->temp_sensor, RSMI_TEMP_CURRENT, &mdeg);
	if (st == RSMI_STATUS_NOT_SUPPORTED && !(d->answered & GPU_TEMP) &&
	    d->temp_sensor == RSMI_TEMP_TYPE_EDGE) {
		/* some data-centre parts have no edge sensor: use the junction one */
		d->temp_sensor = RSMI_TEMP_TYPE_JUNCTION;
		st = RSMI(r, dev_temp_metric_get, dv, d->temp_sensor, RSMI_TEMP_CURRENT, &mdeg);
	}
	if (!answered(d, GPU_TEMP, st) || mdeg < -1000000 || mdeg > 1000000)
		return false;
	*deg_c = (int32_t)(mdeg >= 0 ? (mdeg + 500) / 1000 : -((-mdeg + 500) / 1000));
	return true;
}

/*
 * The current clock is frequency[current] of the table, in Hz.  The table
 * is checked before use (a bool of 0 or 1, a count within the table, an
 * index within the count): a library whose version does not tell its
 * layout fails the check, and the clock is then treated as not supported
 * rather than misread.  Read with the other layout, a real table breaks
 * one of these: a 5.x count above 1 lands in the 6.x bool, and with a
 * count of 1 the 5.x index 0 lands in the 6.x count; the 6.x bool and
 * padding land in the 5.x count (0 or 1) and the 6.x count in the 5.x
 * index, which is then not below it.
 */
static bool clock_decode(int layout, const union rsmi_frequencies *f, uint32_t *mhz)
{
	const uint64_t *freq;
	uint32_t num, cur, max;
	uint64_t hz;

	if (layout == 6) {
		if (f->v6.has_deep_sleep > 1)
			return false;
		num = f->v6.num_supported;
		cur = f->v6.current;
		freq = f->v6.frequency;
		max = RSMI_FREQS_MAX_V6;
	} else {
		num = f->v5.num_supported;
		cur = f->v5.current;
		freq = f->v5.frequency;
		max = RSMI_FREQS_MAX_V5;
	}
	if (num == 0 || num > max || cur >= num)
		return false;
	hz = freq[cur];
	if (hz > 100000000000ull) /* 100 GHz; 0 is a clock asleep */
		return false;
	*mhz = (uint32_t)((hz + 500000) / 1000000);
	return true;
}

static bool clock_read(struct rocm *r, struct rocm_dev *d, uint32_t dv, uint32_t metric,
		       uint32_t *mhz)
{
	uint32_t clk = metric == GPU_SM_CLOCK ? RSMI_CLK_TYPE_SYS : RSMI_CLK_TYPE_MEM;
	union rsmi_frequencies f;
	rsmi_status_t st;

	memset(&f, 0, sizeof(f));
	st = RSMI(r, dev_gpu_clk_freq_get, dv, clk, &f);
	if (st == RSMI_STATUS_SUCCESS && !clock_decode(r->clock_layout, &f, mhz)) {
		/* a table that never decoded is a layout we do not know: stop asking */
		if (!(d->answered & metric))
			log_debug("rocm: device %" PRIu32 ": the clock table of ROCm SMI %" PRIu32
				  ".%" PRIu32 " does not decode",
				  dv, r->version.major, r->version.minor);
		st = RSMI_STATUS_NOT_SUPPORTED;
	}
	return answered(d, metric, st);
}

static int rocm_sample(void *ctx, int index, struct gpu_sample *out)
{
	struct rocm *r = ctx;
	struct rocm_dev *d;
	uint32_t dv = (uint32_t)index;
	struct rsmi_error_count ec;
	uint64_t bytes, uw;

	memset(out, 0, sizeof(*out));
	if (!r || index < 0 || index >= r->ndevices)
		return -EINVAL;
	d = &r->dev[index];

	if (wanted(r, d, GPU_UTIL) && percent_read(r, d, dv, GPU_UTIL, &out->util_pct))
		out->valid |= GPU_UTIL;
	if (wanted(r, d, GPU_MEM_UTIL) && percent_read(r, d, dv, GPU_MEM_UTIL, &out->mem_util_pct))
		out->valid |= GPU_MEM_UTIL;
	if (wanted(r, d, GPU_MEM_USED) &&
	    answered(d, GPU_MEM_USED,
		     RSMI(r, dev_memory_usage_get, dv, RSMI_MEM_TYPE_VRAM, &bytes))) {
		out->mem_used_bytes = bytes;
		out->valid |= GPU_MEM_USED;
	}
	if (wanted(r, d, GPU_POWER) &&
	    answered(d, GPU_POWER, RSMI(r, dev_power_ave_get, dv, RSMI_POWER_SENSOR_0, &uw)) &&
	    uw / 1000 <= UINT32_MAX) {
		out->power_mw = (uint32_t)(uw / 1000);
		out->valid |= GPU_POWER;
	}
	if (wanted(r, d, GPU_ENERGY) && energy_read(r, d, dv, &out->energy_mj))
		out->valid |= GPU_ENERGY;
	if (wanted(r, d, GPU_TEMP) && temp_read(r, d, dv, &out->temp_c))
		out->valid |= GPU_TEMP;
	if (wanted(r, d, GPU_SM_CLOCK) && clock_read(r, d, dv, GPU_SM_CLOCK, &out->sm_clock_mhz))
		out->valid |= GPU_SM_CLOCK;
	if (wanted(r, d, GPU_MEM_CLOCK) && clock_read(r, d, dv, GPU_MEM_CLOCK, &out->mem_clock_mhz))
		out->valid |= GPU_MEM_CLOCK;
	if (wanted(r, d, GPU_ECC) &&
	    answered(d, GPU_ECC, RSMI(r, dev_ecc_count_get, dv, RSMI_GPU_BLOCK_UMC, &ec))) {
		out->ecc_corrected = ec.correctable_err;
		out->ecc_uncorrected = ec.uncorrectable_err;
		out->valid |= GPU_ECC;
	}
	/* GPU_PCIE, GPU_NVLINK, GPU_THROTTLE: never (see the top of the file) */
	return 0;
}

/* ---- processes ---- */

static int procs_reserve(struct rocm *r, uint32_t cap)
{
	struct rsmi_process_info *buf;
	struct rocm_proc *procs;

	if (cap <= r->proc_cap)
		return 0;
	buf = realloc(r->proc_buf, cap * sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	r->proc_buf = buf;
	procs = realloc(r->procs, cap * sizeof(*procs));
	if (!procs)
		return -ENOMEM;
	r->procs = procs;
	r->proc_cap = cap;
	return 0;
}

/* The process list failed: NOT_SUPPORTED before any answer ends it everywhere. */
static int procs_failed(struct rocm *r, rsmi_status_t st)
{
	if (st == RSMI_STATUS_NOT_SUPPORTED && !r->procs_answered)
		for (int i = 0; i < r->ndevices; i++)
			r->dev[i].unsupported |= ROCM_PROC_METRICS;
	return -EAGAIN;
}

/* The devices process p uses, from rsmi_compute_process_gpus_get. */
static bool proc_devices(struct rocm *r, struct rocm_proc *p)
{
	uint32_t dv[GPU_MAX_DEVICES];
	uint32_t n = GPU_MAX_DEVICES;
	rsmi_status_t st;

	st = RSMI(r, compute_process_gpus_get, p->pid, dv, &n);
	if (st != RSMI_STATUS_SUCCESS && st != RSMI_STATUS_INSUFFICIENT_SIZE)
		return false; /* NOT_FOUND: it has exited since the list was read */
	p->devices = 0;
	p->ndevices = n;
	if (n > GPU_MAX_DEVICES)
		n = GPU_MAX_DEVICES;
	for (uint32_t i = 0; i < n; i++)
		if (dv[i] < (uint32_t)r->ndevices)
			p->devices |= 1ull << dv[i];
	return p->devices != 0;
}

/*
 * A new snapshot of the compute processes: count (NULL buffer), then read
 * into a buffer with some slack; processes that start in between make the
 * read answer INSUFFICIENT_SIZE, and it is tried again with twice the room,
 * a bounded number of times.
 */
static int procs_refresh(struct rocm *r)
{
	uint32_t count = 0, cap, got = 0;
	rsmi_status_t st;
	int ret;

	r->procs_fresh = false;
	r->nprocs = 0;
	st = RSMI(r, compute_process_info_get, NULL, &count);
	if (st != RSMI_STATUS_SUCCESS)
		return procs_failed(r, st);
	r->procs_answered = true;
	cap = count + ROCM_PROC_SLACK;
	for (int attempt = 0; count > 0; attempt++) {
		if (cap > ROCM_PROC_MAX)
			cap = ROCM_PROC_MAX;
		ret = procs_reserve(r, cap);
		if (ret)
			return ret;
		got = cap;
		st = RSMI(r, compute_process_info_get, r->proc_buf, &got);
		if (st == RSMI_STATUS_SUCCESS)
			break;
		if (st != RSMI_STATUS_INSUFFICIENT_SIZE || cap == ROCM_PROC_MAX ||
		    attempt + 1 == ROCM_PROC_ATTEMPTS)
			return -EAGAIN;
		cap *= 2;
	}
	if (count == 0)
		got = 0;
	if (got > cap)
		got = cap;
	for (uint32_t i = 0; i < got; i++) {
		const struct rsmi_process_info *info = &r->proc_buf[i];
		struct rocm_proc *p = &r->procs[r->nprocs];

		if (info->process_id == 0)
			continue;
		p->pid = info->process_id;
		p->vram_bytes = info->vram_usage;
		p->cu_occupancy = info->cu_occupancy;
		if (proc_devices(r, p))
			r->nprocs++;
	}
	r->procs_fresh = true;
	r->procs_served = 0;
	r->procs_ns = time_mono_ns();
	return 0;
}

/*
 * ROCm SMI gives one entry per process with its VRAM and CU occupancy summed
 * over every GPU it uses.  A process on one device gets them; a process on
 * several is listed on each with no valid values, rather than counting its
 * memory once per device.  CU occupancy stands for SM utilization; there is
 * no per-process memory-controller figure, so mem_util_pct stays 0.
 */
static int rocm_processes(void *ctx, int index, struct gpu_proc *out, size_t max, size_t *n)
{
	struct rocm *r = ctx;
	uint64_t bit;
	int ret;

	*n = 0;
	if (!r || index < 0 || index >= r->ndevices)
		return -EINVAL;
	if (!wanted(r, &r->dev[index], GPU_PROC_MEM))
		return 0;
	bit = 1ull << index;
	if (!r->procs_fresh || (r->procs_served & bit) ||
	    time_mono_ns() - r->procs_ns > ROCM_PROC_SNAPSHOT_NS) {
		ret = procs_refresh(r);
		if (ret)
			return ret; /* not known this time, which is not "none" */
	}
	r->procs_served |= bit;
	for (uint32_t i = 0; i < r->nprocs && *n < max; i++) {
		const struct rocm_proc *p = &r->procs[i];
		struct gpu_proc *o;

		if (!(p->devices & bit))
			continue;
		o = &out[(*n)++];
		memset(o, 0, sizeof(*o));
		o->pid = p->pid;
		if (p->ndevices != 1)
			continue;
		o->mem_bytes = p->vram_bytes;
		o->valid |= GPU_PROC_MEM;
		if (p->cu_occupancy <= 100) {
			o->sm_util_pct = p->cu_occupancy;
			o->valid |= GPU_PROC_UTIL;
		}
	}
	return 0;
}

/* ---- events ---- */

static void event_convert(const struct rsmi_evt_notification_data *e, struct gpu_event *o)
{
	memset(o, 0, sizeof(*o));
	o->index = (int)e->dv_ind;
	o->data = e->event;
	switch (e->event) {
	case RSMI_EVT_VMFAULT:
		o->kind = GPU_EVENT_VMFAULT;
		break;
	case RSMI_EVT_THERMAL:
		o->kind = GPU_EVENT_THERMAL;
		break;
	case RSMI_EVT_GPU_PRE_RESET:
	case RSMI_EVT_GPU_POST_RESET: /* data tells which */
		o->kind = GPU_EVENT_RESET;
		break;
	default:
		o->kind = GPU_EVENT_OTHER;
		break;
	}
	snprintf(o->message, sizeof(o->message), "%.*s",
		 (int)strnlen(e->message, sizeof(e->message)), e->message);
}

/* Polls with a timeout of 0: whatever the kernel has queued, never waiting. */
static int rocm_events(void *ctx, struct gpu_event *out, size_t max, size_t *n)
{
	struct rsmi_evt_notification_data buf[ROCM_EVENT_BATCH];
	struct rocm *r = ctx;
	bool any = false;

	*n = 0;
	if (!r)
		return 0;
	for (int i = 0; i < r->ndevices; i++)
		any |= r->dev[i].events_on;
	while (any && *n < max) {
		uint32_t want =
		    max - *n < ROCM_EVENT_BATCH ? (uint32_t)(max - *n) : ROCM_EVENT_BATCH;
		uint32_t got = want;

		if (RSMI(r, event_notification_get, 0, &got, buf) != RSMI_STATUS_SUCCESS)
			break; /* NO_DATA: nothing queued */
		if (got > want)
			got = want;
		for (uint32_t i = 0; i < got; i++) {
			if (buf[i].dv_ind >= (uint32_t)r->ndevices)
				continue;
			event_convert(&buf[i], &out[(*n)++]);
		}
		if (got < want)
			break;
	}
	return 0;
}

static uint64_t rocm_calls(void *ctx)
{
	const struct rocm *r = ctx;

	return r ? r->ncalls : 0;
}

const struct gpu_backend gpu_backend_rocm = {
    .name = "rocm",
    .vendor = "AMD",
    .open = rocm_open,
    .close = rocm_close,
    .versions = rocm_versions,
    .count = rocm_count,
    .info = rocm_info,
    .sample = rocm_sample,
    .processes = rocm_processes,
    .events = rocm_events,
    .calls = rocm_calls,
};
