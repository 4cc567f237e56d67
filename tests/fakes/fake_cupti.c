/*
 * fake_cupti.c - a fake libcupti.so for the CUDA hook's tests: CUPTI's real
 * symbol names, callback and buffer protocol, and activity record layouts
 * (src/cuda/cupti_abi.h, docs/cuda-abi.md), filled with what the program
 * did through the fake libcuda (fake_cuda.h): the scripted operations, with
 * their durations on the fake clock.
 *
 * What it implements, as the real library does:
 *   cuptiGetVersion          $FAKE_CUPTI_VERSION, default 130001 (CUDA 13.0
 *                            Update 1); the version picks the record sizes
 *   cuptiSubscribe           one subscriber per process; a second one gets
 *                            CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
 *   cuptiEnableCallback      RESOURCE / CONTEXT_CREATED fires when the
 *                            program creates a context; others are accepted
 *                            and never fire
 *   cuptiActivityEnable      RUNTIME, DRIVER, KERNEL, CONCURRENT_KERNEL,
 *                            MEMCPY, MEMSET; others: NOT_SUPPORTED
 *   buffers                  asked for with the client's request callback
 *                            when a record has none; given back through the
 *                            complete callback, in the thread that filled
 *                            them, as soon as the largest record no longer
 *                            fits (or max_records are in); FlushAll(FORCED)
 *                            gives back the current buffer, even empty,
 *                            before it returns; FlushAll(0) has nothing to
 *                            do (full buffers went back already)
 *   records                  8-byte aligned, each of its kind's real size
 *                            for the version; a record with no buffer to
 *                            go to is counted as dropped
 *   cuptiActivityGetNumDroppedRecords  the drops since the last call, plus
 *                            $FAKE_CUPTI_DROPPED once
 * Knobs for failure tests: $FAKE_CUPTI_SUBSCRIBE_RESULT=N makes
 * cuptiSubscribe return N (e.g. 35, INSUFFICIENT_PRIVILEGES).
 *
 * Thread-safety: one mutex over the state; the client's callbacks are
 * always called with it released, so they may call back into CUPTI.
 */
#include "cuda/cupti_abi.h"
#include "fake_cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CUPTI_API_VERSION_DEFAULT 130001u /* CUDA 13.0 Update 1 */
#define CUPTI_API_VERSION_13_0	  130000u
#define CUPTI_API_VERSION_12_0	  19u
#define CUPTI_API_VERSION_11_8	  18u
#define CUPTI_API_VERSION_11_5	  16u /* the CUDA 11.6 headers still say 16 */

/* Real sizes of the records each version writes (docs/cuda-abi.md). */
#define API_RECORD_SIZE	     40	 /* CUpti_ActivityAPI, every version */
#define KERNEL10_RECORD_SIZE 216 /* CUpti_ActivityKernel10: CUDA 13 */
#define KERNEL9_RECORD_SIZE  208 /* CUpti_ActivityKernel9: CUDA 12 */
#define KERNEL8_RECORD_SIZE  200 /* CUpti_ActivityKernel8: CUDA 11.8 */
#define KERNEL7_RECORD_SIZE  176 /* CUpti_ActivityKernel7: CUDA 11.6 */
#define KERNEL6_RECORD_SIZE  168 /* CUpti_ActivityKernel6: CUDA 11 before 11.6 */
#define MEMCPY6_RECORD_SIZE  96	 /* CUpti_ActivityMemcpy6: CUDA 13 */
#define MEMCPY5_RECORD_SIZE  88	 /* CUpti_ActivityMemcpy5: CUDA 11.6 - 12.x */
#define MEMCPY4_RECORD_SIZE  80	 /* CUpti_ActivityMemcpy4: older */
#define MEMSET4_RECORD_SIZE  88	 /* CUpti_ActivityMemset4: CUDA 11.6 on */
#define MEMSET3_RECORD_SIZE  80	 /* CUpti_ActivityMemset3: older */
#define LARGEST_RECORD_SIZE  KERNEL10_RECORD_SIZE
#define ACTIVITY_KIND_MAX    64

struct CUpti_Subscriber_st {
	int unused;
};

/* CUpti_ResourceData, what a resource callback's cbdata points to. */
struct fake_resource_data {
	CUcontext context;
	void *resource_handle; /* union { CUstream stream; } */
	void *resource_descriptor;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUpti_Subscriber_st the_subscriber;
static bool subscribed;
static cupti_callback_fn subscriber_fn;
static void *subscriber_userdata;
static bool context_callback_enabled;
static bool kind_enabled[ACTIVITY_KIND_MAX];
static cupti_buffer_request_fn request_fn;
static cupti_buffer_complete_fn complete_fn;
static uint8_t *buf; /* the buffer being filled, the client's */
static size_t buf_size, buf_used, buf_max_records, buf_records;
static uint64_t dropped;
static bool env_dropped_reported;
static uint32_t correlation;
static __thread uint32_t launch_correlation; /* of this thread's last cudaLaunchKernel */
static bool tracer_attached;

/* Kernel names: CUPTI owns the strings the records point to; interned and
 * kept for the process's life. */
struct interned_name {
	struct interned_name *next;
	char name[];
};
static struct interned_name *names;

static uint32_t api_version(void)
{
	const char *env = getenv("FAKE_CUPTI_VERSION");
	if (env != NULL && env[0] != '\0')
		return (uint32_t)strtoul(env, NULL, 10);
	return CUPTI_API_VERSION_DEFAULT;
}

static size_t record_size(uint32_t kind)
{
	uint32_t v = api_version();
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		return API_RECORD_SIZE;
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		if (v >= CUPTI_API_VERSION_13_0)
			return KERNEL10_RECORD_SIZE;
		if (v >= CUPTI_API_VERSION_12_0)
			return KERNEL9_RECORD_SIZE;
		if (v >= CUPTI_API_VERSION_11_8)
			return KERNEL8_RECORD_SIZE;
		return v >= CUPTI_API_VERSION_11_5 ? KERNEL7_RECORD_SIZE : KERNEL6_RECORD_SIZE;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		if (v >= CUPTI_API_VERSION_13_0)
			return MEMCPY6_RECORD_SIZE;
		return v >= CUPTI_API_VERSION_11_5 ? MEMCPY5_RECORD_SIZE : MEMCPY4_RECORD_SIZE;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return v >= CUPTI_API_VERSION_11_5 ? MEMSET4_RECORD_SIZE : MEMSET3_RECORD_SIZE;
	default:
		return 0;
	}
}

static const char *intern(const char *name)
{
	pthread_mutex_lock(&lock);
	struct interned_name *n;
	for (n = names; n != NULL; n = n->next)
		if (strcmp(n->name, name) == 0)
			break;
	if (n == NULL) {
		size_t len = strlen(name) + 1;
		n = malloc(sizeof(*n) + len);
		if (n != NULL) {
			memcpy(n->name, name, len);
			n->next = names;
			names = n;
		}
	}
	pthread_mutex_unlock(&lock);
	return n != NULL ? n->name : "";
}

/* Gives the client its buffer back; called without the lock. */
static void complete(uint8_t *buffer, size_t size, size_t valid_size, cupti_buffer_complete_fn fn)
{
	if (buffer != NULL && fn != NULL)
		fn(NULL, 0, buffer, size, valid_size);
}

/* Appends one record of @size bytes (a multiple of 8, @record zero-padded
 * to it) if its kind is enabled. */
static void emit(uint32_t kind, const void *record, size_t size)
{
	uint8_t *full = NULL, *unused = NULL;
	size_t full_size = 0, full_used = 0, unused_size = 0;
	cupti_buffer_complete_fn fn;

	pthread_mutex_lock(&lock);
	fn = complete_fn;
	if (kind >= ACTIVITY_KIND_MAX || !kind_enabled[kind])
		goto out_unlock;
	if (buf == NULL && request_fn != NULL) {
		/* the client's callback runs without the lock, as any other */
		cupti_buffer_request_fn request = request_fn;
		uint8_t *b = NULL;
		size_t sz = 0, max = 0;
		pthread_mutex_unlock(&lock);
		request(&b, &sz, &max);
		pthread_mutex_lock(&lock);
		if (buf == NULL && b != NULL && sz >= LARGEST_RECORD_SIZE &&
		    ((uintptr_t)b & 7) == 0) {
			buf = b;
			buf_size = sz;
			buf_used = 0;
			buf_max_records = max;
			buf_records = 0;
		} else if (b != NULL) {
			/* unusable, or another thread got one meanwhile: handed
			 * straight back, empty */
			unused = b;
			unused_size = sz;
		}
	}
	if (buf == NULL) {
		dropped++;
		goto out_unlock;
	}
	memcpy(buf + buf_used, record, size);
	buf_used += size;
	buf_records++;
	if (buf_used + LARGEST_RECORD_SIZE > buf_size ||
	    (buf_max_records > 0 && buf_records >= buf_max_records)) {
		full = buf;
		full_size = buf_size;
		full_used = buf_used;
		buf = NULL;
	}
out_unlock:
	pthread_mutex_unlock(&lock);
	complete(unused, unused_size, 0, fn);
	complete(full, full_size, full_used, fn);
}

static uint32_t next_correlation(void)
{
	pthread_mutex_lock(&lock);
	uint32_t id = ++correlation;
	pthread_mutex_unlock(&lock);
	return id;
}

/* ---- the tracer the fake libcuda calls ---- */

static void trace_context_created(void *ctx)
{
	pthread_mutex_lock(&lock);
	bool fire = subscribed && context_callback_enabled && subscriber_fn != NULL;
	cupti_callback_fn fn = subscriber_fn;
	void *userdata = subscriber_userdata;
	pthread_mutex_unlock(&lock);
	if (!fire)
		return;
	struct fake_resource_data data = {.context = (CUcontext)ctx};
	fn(userdata, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &data);
}

static void trace_api(int domain, uint32_t cbid, uint64_t start_ns, uint64_t end_ns)
{
	uint64_t record[API_RECORD_SIZE / 8] = {0};
	struct cupti_activity_api api = {
	    .kind = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_ACTIVITY_KIND_RUNTIME
							  : CUPTI_ACTIVITY_KIND_DRIVER,
	    .cbid = cbid,
	    .start = start_ns,
	    .end = end_ns,
	    .process_id = (uint32_t)getpid(),
	    .thread_id = (uint32_t)syscall(SYS_gettid),
	    .correlation_id = next_correlation(),
	};
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == FAKECUDA_CBID_LAUNCH_KERNEL)
		launch_correlation = api.correlation_id;
	memcpy(record, &api, sizeof(api));
	emit(api.kind, record, sizeof(record));
}

static void trace_kernel(const char *name, uint64_t start_ns, uint64_t end_ns)
{
	uint64_t record[LARGEST_RECORD_SIZE / 8] = {0};
	pthread_mutex_lock(&lock);
	uint32_t kind = kind_enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]
			    ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
			    : CUPTI_ACTIVITY_KIND_KERNEL;
	pthread_mutex_unlock(&lock);
	struct cupti_activity_kernel k = {
	    .kind = kind,
	    .start = start_ns,
	    .end = end_ns,
	    .completed = end_ns,
	    .stream_id = 7,
	    .grid = {1, 1, 1},
	    .block = {128, 1, 1},
	    .correlation_id = launch_correlation != 0 ? launch_correlation : next_correlation(),
	    .name = intern(name),
	};
	launch_correlation = 0;
	memcpy(record, &k, sizeof(k));
	emit(kind, record, record_size(kind));
}

static void trace_memcpy(int copy_kind, uint64_t bytes, uint64_t start_ns, uint64_t end_ns)
{
	uint64_t record[MEMCPY6_RECORD_SIZE / 8] = {0};
	struct cupti_activity_memcpy m = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMCPY,
	    .copy_kind = (uint8_t)copy_kind,
	    .bytes = bytes,
	    .start = start_ns,
	    .end = end_ns,
	};
	memcpy(record, &m, sizeof(m));
	emit(m.kind, record, record_size(m.kind));
}

static void trace_memset(uint64_t bytes, uint64_t start_ns, uint64_t end_ns)
{
	uint64_t record[MEMSET4_RECORD_SIZE / 8] = {0};
	struct cupti_activity_memset m = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMSET,
	    .bytes = bytes,
	    .start = start_ns,
	    .end = end_ns,
	};
	memcpy(record, &m, sizeof(m));
	emit(m.kind, record, record_size(m.kind));
}

static const struct fakecuda_tracer tracer = {
    .context_created = trace_context_created,
    .api = trace_api,
    .kernel = trace_kernel,
    .memcpy = trace_memcpy,
    .memset = trace_memset,
};

/* A fork while another thread (the hook's flusher) holds the lock must not
 * leave the child's copy held. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&lock);
}

static void fork_release(void)
{
	pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void register_fork_handlers(void)
{
	pthread_atfork(fork_prepare, fork_release, fork_release);
}

/* The real CUPTI hooks into the driver behind the scenes; the fake finds
 * the fake libcuda in the process.  Called with the lock held. */
static void attach_tracer(void)
{
	if (tracer_attached)
		return;
	fakecuda_set_tracer_fn set =
	    (fakecuda_set_tracer_fn)dlsym(RTLD_DEFAULT, "fakecuda_set_tracer");
	if (set == NULL)
		return; /* no libcuda yet: try again at the next call */
	set(&tracer);
	tracer_attached = true;
}

/* ---- CUPTI's API ---- */

/* The exported functions, as cupti_abi.h's struct cupti_api types them. */
CUptiResult cuptiGetVersion(uint32_t *version);
CUptiResult cuptiGetResultString(CUptiResult result, const char **str);
CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, cupti_callback_fn callback,
			   void *userdata);
CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber);
CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber, int domain,
				uint32_t cbid);
CUptiResult cuptiGetCallbackName(int domain, uint32_t cbid, const char **name);
CUptiResult cuptiActivityEnable(uint32_t kind);
CUptiResult cuptiActivityDisable(uint32_t kind);
CUptiResult cuptiActivityRegisterCallbacks(cupti_buffer_request_fn request,
					   cupti_buffer_complete_fn complete_cb);
CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid_size,
				       struct cupti_activity **record);
CUptiResult cuptiActivityFlushAll(uint32_t flag);
CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream_id, size_t *count);

CUptiResult cuptiGetVersion(uint32_t *version)
{
	if (version == NULL)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*version = api_version();
	return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
	static const struct {
		CUptiResult code;
		const char *name;
	} strings[] = {
	    {CUPTI_SUCCESS, "CUPTI_SUCCESS"},
	    {CUPTI_ERROR_INVALID_PARAMETER, "CUPTI_ERROR_INVALID_PARAMETER"},
	    {CUPTI_ERROR_MAX_LIMIT_REACHED, "CUPTI_ERROR_MAX_LIMIT_REACHED"},
	    {CUPTI_ERROR_NOT_INITIALIZED, "CUPTI_ERROR_NOT_INITIALIZED"},
	    {CUPTI_ERROR_NOT_SUPPORTED, "CUPTI_ERROR_NOT_SUPPORTED"},
	    {CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"},
	    {CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
	     "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"},
	    {CUPTI_ERROR_UNKNOWN, "CUPTI_ERROR_UNKNOWN"},
	};
	if (str == NULL)
		return CUPTI_ERROR_INVALID_PARAMETER;
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		if (strings[i].code == result) {
			*str = strings[i].name;
			return CUPTI_SUCCESS;
		}
	}
	return CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, cupti_callback_fn callback,
			   void *userdata)
{
	const char *forced = getenv("FAKE_CUPTI_SUBSCRIBE_RESULT");
	if (forced != NULL && forced[0] != '\0')
		return (CUptiResult)strtol(forced, NULL, 10);
	if (subscriber == NULL)
		return CUPTI_ERROR_INVALID_PARAMETER;
	CUptiResult ret = CUPTI_SUCCESS;
	pthread_mutex_lock(&lock);
	if (subscribed) {
		ret = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
		goto out_unlock;
	}
	subscribed = true;
	subscriber_fn = callback;
	subscriber_userdata = userdata;
	context_callback_enabled = false;
	*subscriber = &the_subscriber;
	attach_tracer();
out_unlock:
	pthread_mutex_unlock(&lock);
	return ret;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	CUptiResult ret = CUPTI_SUCCESS;
	pthread_mutex_lock(&lock);
	if (!subscribed || subscriber != &the_subscriber) {
		ret = CUPTI_ERROR_INVALID_PARAMETER;
		goto out_unlock;
	}
	subscribed = false;
	subscriber_fn = NULL;
	subscriber_userdata = NULL;
	context_callback_enabled = false;
out_unlock:
	pthread_mutex_unlock(&lock);
	return ret;
}

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber, int domain,
				uint32_t cbid)
{
	CUptiResult ret = CUPTI_SUCCESS;
	pthread_mutex_lock(&lock);
	if (!subscribed || subscriber != &the_subscriber) {
		ret = CUPTI_ERROR_INVALID_PARAMETER;
		goto out_unlock;
	}
	if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
		context_callback_enabled = enable != 0;
out_unlock:
	pthread_mutex_unlock(&lock);
	return ret;
}

CUptiResult cuptiGetCallbackName(int domain, uint32_t cbid, const char **name)
{
	if (name == NULL)
		return CUPTI_ERROR_INVALID_PARAMETER;
	const char *found = fakecuda_api_name(domain, cbid);
	if (found == NULL)
		return CUPTI_ERROR_INVALID_PARAMETER; /* as the real one for an unknown cbid */
	*name = found;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(uint32_t kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_MEMCPY:
	case CUPTI_ACTIVITY_KIND_MEMSET:
		break;
	default:
		return CUPTI_ERROR_NOT_SUPPORTED;
	}
	pthread_mutex_lock(&lock);
	kind_enabled[kind] = true;
	attach_tracer();
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(uint32_t kind)
{
	if (kind >= ACTIVITY_KIND_MAX)
		return CUPTI_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&lock);
	kind_enabled[kind] = false;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(cupti_buffer_request_fn request,
					   cupti_buffer_complete_fn complete_cb)
{
	if (request == NULL || complete_cb == NULL)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&lock);
	request_fn = request;
	complete_fn = complete_cb;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid_size,
				       struct cupti_activity **record)
{
	if (buffer == NULL || record == NULL)
		return CUPTI_ERROR_INVALID_PARAMETER;
	size_t offset = 0;
	if (*record != NULL) {
		size_t size = record_size((*record)->kind);
		if ((uint8_t *)*record < buffer || size == 0)
			return CUPTI_ERROR_INVALID_PARAMETER;
		offset = (size_t)((uint8_t *)*record - buffer) + size;
	}
	if (offset >= valid_size || valid_size - offset < sizeof(struct cupti_activity))
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = (struct cupti_activity *)(buffer + offset);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	uint8_t *full = NULL;
	size_t full_size = 0, full_used = 0;
	cupti_buffer_complete_fn fn;

	pthread_mutex_lock(&lock);
	fn = complete_fn;
	if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) && buf != NULL) {
		full = buf;
		full_size = buf_size;
		full_used = buf_used;
		buf = NULL;
	}
	pthread_mutex_unlock(&lock);
	complete(full, full_size, full_used, fn);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream_id, size_t *count)
{
	(void)ctx;
	(void)stream_id;
	if (count == NULL)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&lock);
	uint64_t n = dropped;
	dropped = 0;
	if (!env_dropped_reported) {
		env_dropped_reported = true;
		const char *env = getenv("FAKE_CUPTI_DROPPED");
		if (env != NULL && env[0] != '\0')
			n += strtoull(env, NULL, 10);
	}
	pthread_mutex_unlock(&lock);
	*count = (size_t)n;
	return CUPTI_SUCCESS;
}
