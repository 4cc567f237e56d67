/*
 * cupti_abi.h - the part of NVIDIA's CUPTI and CUDA driver ABI that the CUDA
 * hook (libjobscope-cuda.so) uses, declared here so that no CUDA SDK is
 * needed to build it: libcupti is loaded with dlopen in the profiled
 * process, and every symbol is resolved with dlsym.
 *
 * Facts, with their sources, are in docs/cuda-abi.md.  Only the leading
 * fields of each activity record are declared: CUPTI writes its newest
 * version of a record of each kind (kernels: CUpti_ActivityKernel6 in CUDA
 * 11 before 11.6, 7 in 11.6, 8 presumably in 11.8, 9 in 12.x, 10 in 13.0; copies:
 * CUpti_ActivityMemcpy4, 5 from 11.6, 6 in 13.0; CUpti_ActivityMemset3, 4
 * from 11.6; CUpti_ActivityAPI), and these leading fields keep their
 * offsets in every one of them (Kernel4 ... 10, Memcpy4 ... 6, Memset3/4).
 * The offsets are checked below at compile time.
 */
#ifndef JOBSCOPE_CUPTI_ABI_H
#define JOBSCOPE_CUPTI_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef int CUptiResult;
#define CUPTI_SUCCESS				       0
#define CUPTI_ERROR_INVALID_PARAMETER		       1
#define CUPTI_ERROR_MAX_LIMIT_REACHED		       12
#define CUPTI_ERROR_NOT_INITIALIZED		       15
#define CUPTI_ERROR_NOT_SUPPORTED		       27
#define CUPTI_ERROR_INSUFFICIENT_PRIVILEGES	       35
#define CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED 39
#define CUPTI_ERROR_UNKNOWN			       999

/* CUpti_ActivityKind */
#define CUPTI_ACTIVITY_KIND_MEMCPY	      1
#define CUPTI_ACTIVITY_KIND_MEMSET	      2
#define CUPTI_ACTIVITY_KIND_KERNEL	      3
#define CUPTI_ACTIVITY_KIND_DRIVER	      4
#define CUPTI_ACTIVITY_KIND_RUNTIME	      5
#define CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL 10

/* CUpti_ActivityMemcpyKind (CUpti_ActivityMemcpy*.copyKind) */
#define CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN 0
#define CUPTI_ACTIVITY_MEMCPY_KIND_HTOD	   1
#define CUPTI_ACTIVITY_MEMCPY_KIND_DTOH	   2
#define CUPTI_ACTIVITY_MEMCPY_KIND_HTOA	   3
#define CUPTI_ACTIVITY_MEMCPY_KIND_ATOH	   4
#define CUPTI_ACTIVITY_MEMCPY_KIND_ATOA	   5
#define CUPTI_ACTIVITY_MEMCPY_KIND_ATOD	   6
#define CUPTI_ACTIVITY_MEMCPY_KIND_DTOA	   7
#define CUPTI_ACTIVITY_MEMCPY_KIND_DTOD	   8
#define CUPTI_ACTIVITY_MEMCPY_KIND_HTOH	   9
#define CUPTI_ACTIVITY_MEMCPY_KIND_PTOP	   10

/* CUpti_CallbackDomain */
#define CUPTI_CB_DOMAIN_DRIVER_API  1
#define CUPTI_CB_DOMAIN_RUNTIME_API 2
#define CUPTI_CB_DOMAIN_RESOURCE    3
/* CUpti_CallbackIdResource */
#define CUPTI_CBID_RESOURCE_CONTEXT_CREATED 1

/* cuptiActivityFlushAll's flag: deliver incomplete buffers too */
#define CUPTI_ACTIVITY_FLAG_FLUSH_FORCED 1

typedef struct CUctx_st *CUcontext;
typedef struct CUpti_Subscriber_st *CUpti_SubscriberHandle;

/* Every record starts with its kind (CUpti_Activity). */
struct cupti_activity {
	uint32_t kind;
};

/* CUpti_ActivityAPI: CUPTI_ACTIVITY_KIND_DRIVER and _RUNTIME; 40 bytes. */
struct cupti_activity_api {
	uint32_t kind;		 /* @0 */
	uint32_t cbid;		 /* @4: CUpti_CallbackId in the kind's domain */
	uint64_t start;		 /* @8: ns */
	uint64_t end;		 /* @16: ns */
	uint32_t process_id;	 /* @24 */
	uint32_t thread_id;	 /* @28 */
	uint32_t correlation_id; /* @32 */
	uint32_t return_value;	 /* @36 */
};

/* CUpti_ActivityKernel4 ... 10: the leading fields up to the name. */
struct cupti_activity_kernel {
	uint32_t kind;		   /* @0 */
	uint8_t cache_config;	   /* @4 */
	uint8_t shared_config;	   /* @5 */
	uint16_t registers;	   /* @6 */
	uint32_t pgc_requested;	   /* @8 */
	uint32_t pgc_executed;	   /* @12 */
	uint64_t start;		   /* @16: ns */
	uint64_t end;		   /* @24: ns */
	uint64_t completed;	   /* @32 */
	uint32_t device_id;	   /* @40 */
	uint32_t context_id;	   /* @44 */
	uint32_t stream_id;	   /* @48 */
	int32_t grid[3];	   /* @52 */
	int32_t block[3];	   /* @64 */
	int32_t static_shared;	   /* @76 */
	int32_t dynamic_shared;	   /* @80 */
	uint32_t local_per_thread; /* @84 */
	uint32_t local_total;	   /* @88 */
	uint32_t correlation_id;   /* @92 */
	int64_t grid_id;	   /* @96 */
	const char *name;	   /* @104: mangled, owned by CUPTI */
};

/* CUpti_ActivityMemcpy4 ... 6: the leading fields. */
struct cupti_activity_memcpy {
	uint32_t kind;	   /* @0 */
	uint8_t copy_kind; /* @4: CUPTI_ACTIVITY_MEMCPY_KIND_* */
	uint8_t src_kind;  /* @5 */
	uint8_t dst_kind;  /* @6 */
	uint8_t flags;	   /* @7 */
	uint64_t bytes;	   /* @8 */
	uint64_t start;	   /* @16: ns */
	uint64_t end;	   /* @24: ns */
};

/* CUpti_ActivityMemset3/4: the leading fields. */
struct cupti_activity_memset {
	uint32_t kind;	/* @0 */
	uint32_t value; /* @4 */
	uint64_t bytes; /* @8 */
	uint64_t start; /* @16: ns */
	uint64_t end;	/* @24: ns */
};

_Static_assert(offsetof(struct cupti_activity_api, start) == 8, "CUpti_ActivityAPI.start");
_Static_assert(offsetof(struct cupti_activity_api, return_value) == 36, "CUpti_ActivityAPI");
_Static_assert(sizeof(struct cupti_activity_api) == 40, "CUpti_ActivityAPI size");
_Static_assert(offsetof(struct cupti_activity_kernel, start) == 16, "CUpti_ActivityKernel.start");
_Static_assert(offsetof(struct cupti_activity_kernel, end) == 24, "CUpti_ActivityKernel.end");
_Static_assert(offsetof(struct cupti_activity_kernel, correlation_id) == 92,
	       "Kernel.correlationId");
_Static_assert(offsetof(struct cupti_activity_kernel, name) == 104, "CUpti_ActivityKernel.name");
_Static_assert(offsetof(struct cupti_activity_memcpy, bytes) == 8, "CUpti_ActivityMemcpy.bytes");
_Static_assert(offsetof(struct cupti_activity_memcpy, end) == 24, "CUpti_ActivityMemcpy.end");
_Static_assert(offsetof(struct cupti_activity_memset, bytes) == 8, "CUpti_ActivityMemset.bytes");
_Static_assert(offsetof(struct cupti_activity_memset, end) == 24, "CUpti_ActivityMemset.end");

typedef void (*cupti_buffer_request_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*cupti_buffer_complete_fn)(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
					 size_t size, size_t valid_size);
typedef void (*cupti_callback_fn)(void *userdata, int domain, uint32_t cbid, const void *cbdata);

/* The functions, as the hook resolves them from libcupti. */
struct cupti_api {
	CUptiResult (*get_version)(uint32_t *version);
	CUptiResult (*get_result_string)(CUptiResult result, const char **str);
	CUptiResult (*subscribe)(CUpti_SubscriberHandle *sub, cupti_callback_fn fn, void *userdata);
	CUptiResult (*unsubscribe)(CUpti_SubscriberHandle sub);
	CUptiResult (*enable_callback)(uint32_t enable, CUpti_SubscriberHandle sub, int domain,
				       uint32_t cbid);
	CUptiResult (*get_callback_name)(int domain, uint32_t cbid, const char **name);
	CUptiResult (*activity_enable)(uint32_t kind);
	CUptiResult (*activity_disable)(uint32_t kind);
	CUptiResult (*activity_register_callbacks)(cupti_buffer_request_fn request,
						   cupti_buffer_complete_fn complete);
	CUptiResult (*activity_get_next_record)(uint8_t *buffer, size_t valid_size,
						struct cupti_activity **record);
	CUptiResult (*activity_flush_all)(uint32_t flag);
	CUptiResult (*activity_get_num_dropped_records)(CUcontext ctx, uint32_t stream_id,
							size_t *dropped);
};

#endif
