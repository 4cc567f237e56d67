/* none.c - the backend of a machine without GPUs: no devices, nothing to free. */
#include "gpu.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int none_open(void **ctx, struct gpu_open_note *note)
{
	*ctx = NULL;
	memset(note, 0, sizeof(*note));
	note->state = GPU_LIB_NO_GPU;
	return 0;
}

static void none_close(void *ctx)
{
	(void)ctx;
}

static void none_versions(void *ctx, char *driver, size_t driver_size, char *library,
			  size_t library_size)
{
	(void)ctx;
	snprintf(driver, driver_size, "%s", "");
	snprintf(library, library_size, "%s", "");
}

static int none_count(void *ctx, int *n)
{
	(void)ctx;
	*n = 0;
	return 0;
}

static int none_info(void *ctx, int index, struct gpu_device_info *out)
{
	(void)ctx;
	(void)index;
	(void)out;
	return -ENODEV;
}

static int none_sample(void *ctx, int index, struct gpu_sample *out)
{
	(void)ctx;
	(void)index;
	(void)out;
	return -ENODEV;
}

static int none_processes(void *ctx, int index, struct gpu_proc *out, size_t max, size_t *n)
{
	(void)ctx;
	(void)index;
	(void)out;
	(void)max;
	*n = 0;
	return -ENODEV;
}

static int none_events(void *ctx, struct gpu_event *out, size_t max, size_t *n)
{
	(void)ctx;
	(void)out;
	(void)max;
	*n = 0;
	return 0;
}

static uint64_t none_calls(void *ctx)
{
	(void)ctx;
	return 0;
}

const struct gpu_backend gpu_backend_none = {
    .name = "none",
    .vendor = "",
    .open = none_open,
    .close = none_close,
    .versions = none_versions,
    .count = none_count,
    .info = none_info,
    .sample = none_sample,
    .processes = none_processes,
    .events = none_events,
    .calls = none_calls,
};
