/*
 * fake_cuda.c - a fake libcuda.so.1 for the CUDA hook's tests: cuInit with
 * the real driver's injection protocol, and the fakecuda_* entry points
 * (fake_cuda.h) through which js-cuda-app "uses CUDA".
 *
 * cuInit, on its first call, dlopens $CUDA_INJECTION64_PATH (RTLD_NOW) and
 * calls its `int InitializeInjection(void)`, as the real driver does
 * (docs/cuda-abi.md).  Each operation advances the fake clock by its
 * duration and is told to the tracer, which the fake libcupti registers
 * when it enables activity records; with no tracer, nothing is recorded, as
 * with a real driver and no profiler.
 *
 * Thread-safety: the clock is atomic and the tracer pointer is read
 * atomically; the tracer is called outside any lock.
 */
#include "fake_cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static _Atomic uint64_t clock_ns = FAKECUDA_CLOCK_START_NS;
static const struct fakecuda_tracer *_Atomic tracer;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int context_serial;

/* The real driver runs the injection once per process, inside the first
 * cuInit, before cuInit returns. */
static void run_injection(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	if (path == NULL || path[0] == '\0')
		return;
	void *lib = dlopen(path, RTLD_NOW);
	if (lib == NULL) {
		fprintf(stderr, "fake libcuda: cannot load injection library '%s': %s\n", path,
			dlerror());
		return;
	}
	int (*initialize)(void) = (int (*)(void))dlsym(lib, "InitializeInjection");
	if (initialize == NULL) {
		fprintf(stderr, "fake libcuda: '%s' has no InitializeInjection\n", path);
		return;
	}
	initialize();
}

int cuInit(unsigned int flags)
{
	(void)flags;
	pthread_once(&init_once, run_injection);
	return 0; /* CUDA_SUCCESS */
}

void fakecuda_set_tracer(const struct fakecuda_tracer *new_tracer)
{
	atomic_store(&tracer, new_tracer);
}

/* [start, end) of an operation of @dur_ns on the fake clock. */
static uint64_t advance(uint64_t dur_ns, uint64_t *end_ns)
{
	uint64_t start = atomic_fetch_add(&clock_ns, dur_ns);
	*end_ns = start + dur_ns;
	return start;
}

void fakecuda_ctx_create(void)
{
	/* a distinct, never dereferenced CUcontext per context */
	void *ctx = (void *)(uintptr_t)(0x1000 * (uintptr_t)++context_serial);
	const struct fakecuda_tracer *t = atomic_load(&tracer);
	if (t != NULL && t->context_created != NULL)
		t->context_created(ctx);
}

void fakecuda_api(int domain, uint32_t cbid, uint64_t dur_ns)
{
	uint64_t end, start = advance(dur_ns, &end);
	const struct fakecuda_tracer *t = atomic_load(&tracer);
	if (t != NULL && t->api != NULL)
		t->api(domain, cbid, start, end);
}

void fakecuda_kernel(const char *name, uint64_t dur_ns)
{
	uint64_t end, start = advance(dur_ns, &end);
	const struct fakecuda_tracer *t = atomic_load(&tracer);
	if (t != NULL && t->kernel != NULL)
		t->kernel(name, start, end);
}

void fakecuda_memcpy(int copy_kind, uint64_t bytes, uint64_t dur_ns)
{
	uint64_t end, start = advance(dur_ns, &end);
	const struct fakecuda_tracer *t = atomic_load(&tracer);
	if (t != NULL && t->memcpy != NULL)
		t->memcpy(copy_kind, bytes, start, end);
}

void fakecuda_memset(uint64_t bytes, uint64_t dur_ns)
{
	uint64_t end, start = advance(dur_ns, &end);
	const struct fakecuda_tracer *t = atomic_load(&tracer);
	if (t != NULL && t->memset != NULL)
		t->memset(bytes, start, end);
}
