/*
 * cuda_floor.c - the least a CUPTI activity consumer can do, loaded like
 * libjobscope-cuda.so (CUDA_INJECTION64_PATH -> InitializeInjection): the
 * same library, buffer size and activity kinds, every record read with
 * cuptiActivityGetNextRecord and its duration summed by kind, nothing sent.
 * bench/cuda_cost.py runs the same program with it and with the hook: the
 * difference per record is what the hook's aggregation and snapshots cost.
 *
 *   cc -O2 -shared -fPIC -Isrc -o build/bench-cuda-floor.so bench/cuda_floor.c -ldl
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda/cupti_abi.h"

#define BUFFER_BYTES ((size_t)4 << 20)

static struct cupti_api api;
static uint64_t total_ns[16], records;

static void request(uint8_t **buffer, size_t *size, size_t *max_records)
{
	void *buf = NULL;

	if (posix_memalign(&buf, 8, BUFFER_BYTES))
		buf = NULL;
	*buffer = buf;
	*size = buf ? BUFFER_BYTES : 0;
	*max_records = 0;
}

static void complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	struct cupti_activity *rec = NULL;

	(void)ctx;
	(void)stream;
	(void)size;
	while (valid && api.activity_get_next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
		const struct cupti_activity_kernel *k = (const void *)rec;

		/* start and end sit at 16/24 in kernel, memcpy and memset records alike */
		if (rec->kind < 16 && rec->kind != CUPTI_ACTIVITY_KIND_RUNTIME &&
		    rec->kind != CUPTI_ACTIVITY_KIND_DRIVER)
			total_ns[rec->kind] += k->end - k->start;
		records++;
	}
	free(buffer);
}

static void at_exit(void)
{
	api.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	fprintf(stderr, "cuda-floor: %llu records, %llu ns of kernels\n",
		(unsigned long long)records,
		(unsigned long long)total_ns[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]);
}

int InitializeInjection(void);
int InitializeInjection(void)
{
	static const uint32_t kinds[] = {5, 4, 10, 1, 2};
	const char *path = getenv("JOBSCOPE_CUPTI_LIBRARY");
	void *lib = dlopen(path ? path : "libcupti.so", RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return 1;
	*(void **)&api.activity_register_callbacks = dlsym(lib, "cuptiActivityRegisterCallbacks");
	*(void **)&api.activity_enable = dlsym(lib, "cuptiActivityEnable");
	*(void **)&api.activity_get_next_record = dlsym(lib, "cuptiActivityGetNextRecord");
	*(void **)&api.activity_flush_all = dlsym(lib, "cuptiActivityFlushAll");
	if (!api.activity_register_callbacks || !api.activity_enable ||
	    !api.activity_get_next_record || !api.activity_flush_all)
		return 1;
	api.activity_register_callbacks(request, complete);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		api.activity_enable(kinds[i]);
	atexit(at_exit);
	return 1;
}
