/*
 * gpu_set.h - every GPU of the machine, whatever its vendor.
 *
 * gpu_set_open() tries each backend of gpu_backends[] (NVML, then ROCm
 * SMI); the devices of all that opened are numbered together in dev[], in
 * backend then vendor-index order.  No library, or one that fails to
 * initialise (after its one warning), leaves the set with fewer devices:
 * never an error.  Lifecycle: gpu_set_init (cannot fail), gpu_set_open,
 * gpu_set_close.  Not thread-safe.
 */
#ifndef JOBSCOPE_GPU_SET_H
#define JOBSCOPE_GPU_SET_H

#include "gpu.h"
#include "sample/sample.h"

#define GPU_MAX_BACKENDS 2

struct gpu_dev {
	const struct gpu_backend *backend;
	void *ctx;
	struct gpu_device_info info;
	bool lost; /* the device fell off the bus: no more readings */
};

struct gpu_opened {
	const struct gpu_backend *backend;
	void *ctx;
	char driver[GPU_VERSION_MAX];
	char library[GPU_VERSION_MAX];
};

struct gpu_set {
	int nopened;
	struct gpu_opened opened[GPU_MAX_BACKENDS];
	int ndevices;
	struct gpu_dev dev[GPU_MAX_DEVICES];
};

extern const struct gpu_backend *const gpu_backends[];

void gpu_set_init(struct gpu_set *set);
int gpu_set_open(struct gpu_set *set);
void gpu_set_close(struct gpu_set *set);
/* Reads device i; marks it lost (and returns -ENODEV) when the driver says so. */
int gpu_set_sample(struct gpu_set *set, int i, struct gpu_sample *out);
/*
 * The events every opened backend has had since the last call (XID, ECC,
 * lost GPU, ...), stamped ts_ms, as event records: at most max.  Returns
 * how many were written.
 */
size_t gpu_set_events(struct gpu_set *set, int64_t ts_ms, struct event_record *out, size_t max);
/* "xid", "ecc_corrected", ... : an event's kind as stored and reported. */
const char *gpu_event_kind_name(enum gpu_event_kind kind);
/* Library calls made so far by every opened backend. */
uint64_t gpu_set_calls(const struct gpu_set *set);

#endif
