/*
 * gpu_set.h - every GPU of the machine, whatever its vendor.
 *
 * gpu_set_open() tries each backend of gpu_backends[] (NVML, then ROCm
 * SMI); the devices of all that opened are numbered together in dev[], in
 * backend then vendor-index order, a GPU's MIG devices right after it
 * (their info.mig_parent is the GPU's position in dev[]).  No library, a library on a machine
 * without its vendor's GPU (said at debug level only), or one that fails
 * to initialise (after its one warning), leaves the set with fewer
 * devices: never an error.  vendor[] says, for each backend, which of
 * these it was (`jobscope gpus`).  Lifecycle: gpu_set_init (cannot fail),
 * gpu_set_open, gpu_set_close.  Not thread-safe.
 *
 * gpu_set_open() must run while the process has one thread: it points
 * fds 1 and 2 at a file for the moment the vendor libraries load and
 * initialise, to keep their chatter off the terminal (libout.h).  The
 * agent and `jobscope run` call it in their setup, before any thread.
 */
#ifndef JOBSCOPE_GPU_SET_H
#define JOBSCOPE_GPU_SET_H

#include "gpu.h"
#include "sample/ptree.h"
#include "sample/sample.h"

#define GPU_MAX_BACKENDS 2

struct gpu_dev {
	const struct gpu_backend *backend;
	void *ctx;
	struct gpu_device_info info;
	bool lost; /* the device fell off the bus: no more readings */
	/*
	 * Its position in its backend's list, what the backend's calls take:
	 * not info.index once a GPU has MIG devices (listed after it, with its
	 * index).
	 */
	int pos;
};

struct gpu_opened {
	const struct gpu_backend *backend;
	void *ctx;
	char driver[GPU_VERSION_MAX];
	char library[GPU_VERSION_MAX];
};

/* What one backend found at gpu_set_open(), opened or not. */
struct gpu_vendor {
	const struct gpu_backend *backend;
	struct gpu_open_note note;
	int ndevices; /* of this vendor in dev[] */
	int nmig;     /* ... of which MIG devices (gpu_device_info.mig) */
};

struct gpu_set {
	int nvendors;
	struct gpu_vendor vendor[GPU_MAX_BACKENDS];
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
/* One process on one device at a tick. */
struct gpu_set_proc {
	int dev;		 /* position in set->dev[] */
	struct ptree_proc *proc; /* its entry in the process tree, or NULL */
	struct gpu_proc g;
};

/*
 * The processes of every device at a tick: the caller owns both arrays
 * (max entries each) and sets fold_others.
 */
struct gpu_set_procs {
	struct gpu_set_proc *proc;
	size_t n, max;
	struct gpu_proc *scratch; /* one device's list, as the driver gives it */
	/*
	 * Processes that are not in the tree folded into one entry per device
	 * (pid 0, proc NULL, their sums), a slot kept for it: for `jobscope
	 * run`, whose split needs only their sum.  Else each is kept.
	 */
	bool fold_others;
};

/*
 * Reads every device into sample[i] (ok[i]: it was read; what fails is left
 * out, never 0) and the processes of each device read into out, matched to
 * pt by pid (pt NULL: none matched); a process that used the device in the
 * window and is gone (gpu_proc.gone) is matched to the entry it left in
 * pt, if any.  A device whose list cannot be read has no processes; lists
 * that do not fit are cut at out->max.
 */
void gpu_set_processes(struct gpu_set *set, struct ptree *pt, struct gpu_sample *sample, bool *ok,
		       struct gpu_set_procs *out);
/* Room for max processes (both arrays): 0, or -ENOMEM with nothing held. */
int gpu_set_procs_alloc(struct gpu_set_procs *p, size_t max, bool fold_others);
void gpu_set_procs_release(struct gpu_set_procs *p);
/* "xid", "ecc_corrected", ... : an event's kind as stored and reported. */
const char *gpu_event_kind_name(enum gpu_event_kind kind);
/*
 * One vendor's state in words, without the vendor: "libnvidia-ml.so.1
 * found, no driver loaded: no NVIDIA GPU", "librocm_smi64.so not found",
 * "libnvidia-ml.so.1: 2 GPUs".
 */
void gpu_vendor_describe(const struct gpu_vendor *v, char *buf, size_t size);
/* "absent", "no_gpu", "failed", "open": enum gpu_lib_state as JSON says it. */
const char *gpu_lib_state_name(enum gpu_lib_state state);
/* Library calls made so far by every opened backend. */
uint64_t gpu_set_calls(const struct gpu_set *set);

#endif
