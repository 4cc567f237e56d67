/*
 * fake_cuda.h - what the fake libcuda (fake_cuda.c), the fake libcupti
 * (fake_cupti.c) and the test program js-cuda-app share, none of which the
 * real libraries have: the entry points through which the program "uses
 * CUDA", the tracer through which the fake libcuda tells the fake libcupti
 * what happened, and the API functions the fakes know by name and cbid.
 *
 * The hook under test sees none of this: it sees libcupti's real ABI
 * (src/cuda/cupti_abi.h).  The fake libcupti finds the tracer registration
 * with dlsym(RTLD_DEFAULT, "fakecuda_set_tracer") when an activity kind is
 * first enabled, the way the real one talks to the driver behind the scenes.
 *
 * Time is a fake clock in the fake libcuda: it starts at
 * FAKECUDA_CLOCK_START_NS and each operation advances it by its scripted
 * duration (start = clock, end = clock + dur).  One process's clock is
 * shared by its threads (atomic); a forked child goes on from the parent's.
 */
#ifndef JOBSCOPE_FAKE_CUDA_H
#define JOBSCOPE_FAKE_CUDA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FAKECUDA_CLOCK_START_NS 1000000000ULL

/* What the fake libcupti receives for each operation; called in the
 * program's thread, outside any lock of the fake libcuda. */
struct fakecuda_tracer {
	void (*context_created)(void *ctx);
	/* domain: CUPTI_CB_DOMAIN_RUNTIME_API or _DRIVER_API */
	void (*api)(int domain, uint32_t cbid, uint64_t start_ns, uint64_t end_ns);
	void (*kernel)(const char *name, uint64_t start_ns, uint64_t end_ns);
	void (*memcpy)(int copy_kind, uint64_t bytes, uint64_t start_ns, uint64_t end_ns);
	void (*memset)(uint64_t bytes, uint64_t start_ns, uint64_t end_ns);
};

typedef void (*fakecuda_set_tracer_fn)(const struct fakecuda_tracer *tracer);

/*
 * The real cbids and names (cupti_runtime_cbid.h, cupti_driver_cbid.h; the
 * names are those the real cuptiGetCallbackName returns: docs/cuda-abi.md).
 */
struct fakecuda_api_name {
	int domain; /* 1 driver, 2 runtime (CUpti_CallbackDomain) */
	uint32_t cbid;
	const char *name;
};

static const struct fakecuda_api_name fakecuda_api_names[] = {
	{2, 20, "cudaMalloc_v3020"},
	{2, 22, "cudaFree_v3020"},
	{2, 30, "cudaMemGetInfo_v3020"},
	{2, 31, "cudaMemcpy_v3020"},
	{2, 41, "cudaMemcpyAsync_v3020"},
	{2, 49, "cudaMemset_v3020"},
	{2, 131, "cudaStreamSynchronize_v3020"},
	{2, 165, "cudaDeviceSynchronize_v3020"},
	{2, 211, "cudaLaunchKernel_v7000"},
	{1, 1, "cuInit"},
	{1, 17, "cuCtxSynchronize"},
	{1, 243, "cuMemAlloc_v2"},
	{1, 245, "cuMemFree_v2"},
	{1, 276, "cuMemcpyHtoD_v2"},
	{1, 278, "cuMemcpyDtoH_v2"},
	{1, 307, "cuLaunchKernel"},
};

#define FAKECUDA_CBID_LAUNCH_KERNEL 211 /* cudaLaunchKernel_v7000 */

static inline const char *fakecuda_api_name(int domain, uint32_t cbid)
{
	for (size_t i = 0; i < sizeof(fakecuda_api_names) / sizeof(fakecuda_api_names[0]); i++)
		if (fakecuda_api_names[i].domain == domain && fakecuda_api_names[i].cbid == cbid)
			return fakecuda_api_names[i].name;
	return NULL;
}

/* The cbid of @name in @domain, or -1. */
static inline int64_t fakecuda_api_cbid(int domain, const char *name)
{
	for (size_t i = 0; i < sizeof(fakecuda_api_names) / sizeof(fakecuda_api_names[0]); i++)
		if (fakecuda_api_names[i].domain == domain &&
		    strcmp(fakecuda_api_names[i].name, name) == 0)
			return fakecuda_api_names[i].cbid;
	return -1;
}

/* ---- the fake libcuda's entry points for the test program ---- */

int cuInit(unsigned int flags);
void fakecuda_set_tracer(const struct fakecuda_tracer *tracer);
void fakecuda_ctx_create(void);
void fakecuda_api(int domain, uint32_t cbid, uint64_t dur_ns);
void fakecuda_kernel(const char *name, uint64_t dur_ns);
void fakecuda_memcpy(int copy_kind, uint64_t bytes, uint64_t dur_ns);
void fakecuda_memset(uint64_t bytes, uint64_t dur_ns);

#endif
