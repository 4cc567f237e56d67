/*
 * hook.c - libjobscope-cuda.so: CUDA API, kernel and memory-operation
 * statistics of one process, from CUPTI's activity records, sent to
 * jobscope.  Nothing to link and no LD_PRELOAD: the CUDA driver loads the
 * library named by $CUDA_INJECTION64_PATH during cuInit and calls
 * InitializeInjection, its one exported symbol.
 *
 * What it does there: connects to $JOBSCOPE_CUDA_SOCKET (jobscope run's or
 * the agent's), finds libcupti (find_cupti: the path given, a copy already
 * loaded, the one next to the program's CUDA runtime, the usual names),
 * says hello, and waits for "on" or "off".  Only "on" takes CUPTI: it
 * subscribes (a refusal means another profiler holds it: we back off and
 * say so) and enables the records; "off" hands CUPTI back, so a process
 * nobody profiles leaves it to its own tools.  While on, the
 * runtime, driver, kernel, memcpy and memset records are aggregated in
 * memory as they arrive in CUPTI's buffers (no I/O per record); every
 * interval a thread forces CUPTI to hand over its buffers and sends the
 * whole cumulative snapshot, as does every completed buffer and the atexit
 * handler (a final one).  So a process killed with SIGKILL loses at most
 * the records of its last interval, and a lost or repeated snapshot
 * nothing at all.
 *
 * Threads: CUPTI calls the buffer callbacks from its own thread or from
 * the one that flushes; the aggregates are under `lock`, which is never
 * held while calling into CUPTI (a flush calls back into us).  Sends are
 * serialised by `send_lock`.  After fork() the child is left unprofiled:
 * CUDA does not work in a child forked after cuInit anyway.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/strbuf.h"
#include "cuda/cudaproto.h"
#include "cuda/cudastat.h"
#include "cuda/cupti_abi.h"

#define HOOK_EXPORT __attribute__((visibility("default")))

#define BUFFER_BYTES  ((size_t)4 << 20) /* one CUPTI activity buffer */
#define MAX_CBID      16384		/* API callback ids kept per domain */
#define NKERNEL_MIN   256		/* initial slots of the kernel tables */
#define HELLO_WAIT_MS 2000		/* for the receiver's first command */
#define IDLE_POLL_MS  1000		/* command checks while off */
#define MEMCPY_KINDS  11

/* Durations (and sizes) of one name: exact sums, so m2 is computed once, at a snapshot. */
struct agg {
	uint64_t count, total, min, max;
	unsigned __int128 sumsq;
};

struct mem_agg {
	struct agg time, size;
};

struct kernel {
	char *mangled;
	char *name; /* demangled; NULL until a snapshot needs it */
	struct agg time;
};

static struct hook {
	pthread_mutex_t lock; /* the aggregates below */
	pthread_mutex_t send_lock;
	struct cupti_api cupti;
	void *lib;
	CUpti_SubscriberHandle sub; /* while recording */
	bool cupti_ok;		    /* libcupti loaded, with the activity API */
	enum cuda_proc_state state;
	char message[256];
	uint32_t cupti_version;
	int fd;	   /* to the receiver; -1: gone */
	pid_t pid; /* the process that initialised us (fork detection) */
	atomic_bool on;
	atomic_bool exiting;
	int64_t interval_ms;
	pthread_t thread;
	bool thread_started;
	int wake[2]; /* a pipe that ends the thread's waits */

	atomic_uint contexts;
	uint64_t dropped;
	uint64_t seq;
	bool changed;		/* records since the last snapshot */
	struct agg *api[2];	/* [0]: driver, [1]: runtime; MAX_CBID each */
	struct kernel *kernels; /* by first sight */
	size_t nkernels, kernels_alloc;
	uint32_t *by_ptr, *by_name; /* open addressing: index + 1, 0 empty */
	const char **ptr_keys;
	size_t slots, nptrs;
	struct mem_agg memcpy_[MEMCPY_KINDS];
	struct mem_agg memset_;
	char *(*demangle)(const char *mangled, char *buf, size_t *len, int *status);
} H = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .send_lock = PTHREAD_MUTEX_INITIALIZER,
    .fd = -1,
    .wake = {-1, -1},
};

static void agg_add(struct agg *a, uint64_t v)
{
	if (a->count == 0 || v < a->min)
		a->min = v;
	if (v > a->max)
		a->max = v;
	a->count++;
	a->total += v;
	a->sumsq += (unsigned __int128)v * v;
}

/* The sum of squared deviations from the mean, from the exact sums. */
static double agg_m2(const struct agg *a)
{
	long double n = (long double)a->count, sum = (long double)a->total;
	long double m2;

	if (a->count < 2)
		return 0;
	m2 = (long double)a->sumsq - sum * sum / n;
	return m2 > 0 ? (double)m2 : 0;
}

static uint64_t duration(uint64_t start, uint64_t end)
{
	return end > start ? end - start : 0;
}

/* FNV-1a: kernel names are hashed once per new name pointer, not per record. */
static size_t hash_str(const char *s)
{
	return (size_t)fnv1a_str(1469598103934665603ull, s);
}

static size_t hash_ptr(const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 17);
}

/* Doubles the slot tables and rehashes (names by string; pointers are re-learnt). */
static int kernels_rehash(void)
{
	size_t slots = H.slots ? H.slots * 2 : NKERNEL_MIN;
	uint32_t *by_name = calloc(slots, sizeof(*by_name));
	uint32_t *by_ptr = calloc(slots, sizeof(*by_ptr));
	const char **keys = calloc(slots, sizeof(*keys));

	if (!by_name || !by_ptr || !keys) {
		free(by_name);
		free(by_ptr);
		free(keys);
		return -ENOMEM;
	}
	for (size_t i = 0; i < H.nkernels; i++) {
		size_t h = hash_str(H.kernels[i].mangled) & (slots - 1);

		while (by_name[h])
			h = (h + 1) & (slots - 1);
		by_name[h] = (uint32_t)i + 1;
	}
	free(H.by_name);
	free(H.by_ptr);
	free(H.ptr_keys);
	H.by_name = by_name;
	H.by_ptr = by_ptr;
	H.ptr_keys = keys;
	H.slots = slots;
	H.nptrs = 0;
	return 0;
}

/*
 * The kernel of a record's name.  CUPTI shares one name pointer among all
 * the records of a kernel (cupti_activity.h, CUpti_ActivityKernel*.name),
 * so the pointer table answers almost every record without reading the
 * string; a pointer not seen yet is looked up by its string.
 */
static struct kernel *kernel_of(const char *name)
{
	size_t h, mask;
	uint32_t idx;

	if (!name)
		name = "<unnamed>";
	if (H.slots == 0 && kernels_rehash())
		return NULL;
	mask = H.slots - 1;
	for (h = hash_ptr(name) & mask; H.by_ptr[h]; h = (h + 1) & mask)
		if (H.ptr_keys[h] == name)
			return &H.kernels[H.by_ptr[h] - 1];
	/* room for one more name and one more pointer: tables at most half full */
	if (((H.nkernels + 1) * 2 > H.slots || (H.nptrs + 1) * 2 > H.slots) && kernels_rehash())
		return NULL;
	mask = H.slots - 1;
	for (h = hash_str(name) & mask; (idx = H.by_name[h]); h = (h + 1) & mask)
		if (strcmp(H.kernels[idx - 1].mangled, name) == 0)
			goto found;
	if (H.nkernels == H.kernels_alloc) {
		size_t alloc = H.kernels_alloc ? H.kernels_alloc * 2 : NKERNEL_MIN;
		struct kernel *k = realloc(H.kernels, alloc * sizeof(*k));

		if (!k)
			return NULL;
		H.kernels = k;
		H.kernels_alloc = alloc;
	}
	memset(&H.kernels[H.nkernels], 0, sizeof(H.kernels[0]));
	H.kernels[H.nkernels].mangled = strdup(name);
	if (!H.kernels[H.nkernels].mangled)
		return NULL;
	idx = (uint32_t)++H.nkernels;
	H.by_name[h] = idx; /* h: the free slot the search ended on */
found:
	for (h = hash_ptr(name) & mask; H.by_ptr[h]; h = (h + 1) & mask)
		;
	H.by_ptr[h] = idx;
	H.ptr_keys[h] = name;
	H.nptrs++;
	return &H.kernels[idx - 1];
}

static void add_api(int domain, const struct cupti_activity_api *r)
{
	struct agg **table = &H.api[domain == CUPTI_ACTIVITY_KIND_RUNTIME];

	if (r->cbid >= MAX_CBID)
		return;
	if (!*table) {
		*table = calloc(MAX_CBID, sizeof(**table));
		if (!*table)
			return;
	}
	agg_add(&(*table)[r->cbid], duration(r->start, r->end));
}

static void add_record(const struct cupti_activity *rec)
{
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_DRIVER:
	case CUPTI_ACTIVITY_KIND_RUNTIME:
		add_api((int)rec->kind, (const struct cupti_activity_api *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		const struct cupti_activity_kernel *k = (const void *)rec;
		struct kernel *kern = kernel_of(k->name);

		if (kern)
			agg_add(&kern->time, duration(k->start, k->end));
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const struct cupti_activity_memcpy *m = (const void *)rec;
		struct mem_agg *a = &H.memcpy_[m->copy_kind < MEMCPY_KINDS ? m->copy_kind : 0];

		agg_add(&a->time, duration(m->start, m->end));
		agg_add(&a->size, m->bytes);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const struct cupti_activity_memset *m = (const void *)rec;

		agg_add(&H.memset_.time, duration(m->start, m->end));
		agg_add(&H.memset_.size, m->bytes);
		break;
	}
	default:
		break;
	}
}

/* ---- snapshots ---- */

/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": CUPTI's version tag, not the function's name. */
static void api_name(int domain, uint32_t cbid, char *out, size_t size)
{
	const char *name = NULL;
	size_t len;

	if (!H.cupti.get_callback_name ||
	    H.cupti.get_callback_name(domain, cbid, &name) != CUPTI_SUCCESS || !name) {
		snprintf(out, size, "%s#%u", domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "cuda" : "cu",
			 cbid);
		return;
	}
	snprintf(out, size, "%s", name);
	len = strlen(out);
	for (size_t i = len; i > 2; i--) {
		if (out[i - 1] >= '0' && out[i - 1] <= '9')
			continue;
		if (out[i - 1] == 'v' && out[i - 2] == '_' && len - i >= 4)
			out[i - 2] = '\0';
		break;
	}
}

static const char *kernel_name(struct kernel *k)
{
	int status = -1;

	if (k->name)
		return k->name;
	if (H.demangle && strncmp(k->mangled, "_Z", 2) == 0)
		k->name = H.demangle(k->mangled, NULL, NULL, &status);
	if (!k->name || status != 0) {
		free(k->name);
		k->name = strdup(k->mangled);
	}
	return k->name ? k->name : k->mangled;
}

/*
 * One stat at the end of p.  Two callback ids may share a name once their
 * version tags are gone: both go out, and the store merges a kind and name
 * given twice (store_put_cuda_proc), as it must for any sender.
 */
static int put_stat(struct cuda_proc *p, enum cuda_stat_kind kind, const char *name,
		    const struct agg *time, const struct agg *size)
{
	struct cuda_stat *s;

	s = cuda_proc_add(p, kind, name);
	if (!s)
		return -ENOMEM;
	s->count = time->count;
	s->total_ns = time->total;
	s->min_ns = time->min;
	s->max_ns = time->max;
	s->m2_ns2 = agg_m2(time);
	if (size) {
		s->bytes = size->total;
		s->min_bytes = size->min;
		s->max_bytes = size->max;
		s->m2_bytes2 = agg_m2(size);
	}
	return 0;
}

/* The whole cumulative snapshot as one frame; with H.lock held. */
static int snapshot_locked(struct strbuf *out, bool final)
{
	static const int domains[2] = {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RUNTIME_API};
	struct cuda_proc p;
	char name[256];
	int ret = 0;

	cuda_proc_init(&p);
	p.pid = H.pid;
	p.seq = ++H.seq;
	p.final = final;
	p.contexts = atomic_load(&H.contexts);
	p.dropped = H.dropped;
	for (int d = 0; d < 2 && !ret; d++)
		for (uint32_t cbid = 0; H.api[d] && cbid < MAX_CBID && !ret; cbid++) {
			if (H.api[d][cbid].count == 0)
				continue;
			api_name(domains[d], cbid, name, sizeof(name));
			ret = put_stat(&p, CUDA_STAT_API, name, &H.api[d][cbid], NULL);
		}
	for (size_t i = 0; i < H.nkernels && !ret; i++)
		ret = put_stat(&p, CUDA_STAT_KERNEL, kernel_name(&H.kernels[i]), &H.kernels[i].time,
			       NULL);
	for (unsigned k = 0; k < MEMCPY_KINDS && !ret; k++)
		if (H.memcpy_[k].time.count)
			ret = put_stat(&p, CUDA_STAT_MEMCPY, cuda_memcpy_name(k),
				       &H.memcpy_[k].time, &H.memcpy_[k].size);
	if (!ret && H.memset_.time.count)
		ret = put_stat(&p, CUDA_STAT_MEMSET, "[CUDA memset]", &H.memset_.time,
			       &H.memset_.size);
	if (!ret)
		ret = cuda_proto_snap(out, &p);
	H.changed = false;
	cuda_proc_release(&p);
	return ret;
}

/* Sends a frame whole, or gives the connection up (the receiver is gone). */
static void send_frame(const struct strbuf *frame)
{
	size_t off = 0;

	pthread_mutex_lock(&H.send_lock);
	while (H.fd >= 0 && off < frame->len) {
		ssize_t n = send(H.fd, frame->buf + off, frame->len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(H.fd);
			H.fd = -1;
			atomic_store(&H.on, false);
			break;
		}
		off += (size_t)n;
	}
	pthread_mutex_unlock(&H.send_lock);
}

static void send_snapshot(bool final)
{
	struct strbuf frame;
	int ret;

	if (getpid() != H.pid)
		return;
	strbuf_init(&frame, CUDA_PROTO_MAX_FRAME + CUDA_PROTO_HEADER);
	pthread_mutex_lock(&H.lock);
	ret = snapshot_locked(&frame, final);
	pthread_mutex_unlock(&H.lock);
	if (!ret)
		send_frame(&frame);
	strbuf_release(&frame);
}

/* ---- CUPTI's callbacks ---- */

static void on_buffer_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
	void *buf = NULL;

	if (posix_memalign(&buf, 8, BUFFER_BYTES))
		buf = NULL;
	*buffer = buf;
	*size = buf ? BUFFER_BYTES : 0;
	*max_records = 0;
}

static void on_buffer_complete(CUcontext ctx, uint32_t stream_id, uint8_t *buffer, size_t size,
			       size_t valid_size)
{
	struct cupti_activity *rec = NULL;
	size_t dropped = 0;
	bool any = false;

	(void)size;
	pthread_mutex_lock(&H.lock);
	while (valid_size > 0 &&
	       H.cupti.activity_get_next_record(buffer, valid_size, &rec) == CUPTI_SUCCESS) {
		add_record(rec);
		any = true;
	}
	if (H.cupti.activity_get_num_dropped_records &&
	    H.cupti.activity_get_num_dropped_records(ctx, stream_id, &dropped) == CUPTI_SUCCESS)
		H.dropped += dropped;
	H.changed |= any || dropped;
	pthread_mutex_unlock(&H.lock);
	free(buffer);
	/* what has been counted is sent at once: a SIGKILL later loses none of it */
	if ((any || dropped) && !atomic_load(&H.exiting))
		send_snapshot(false);
}

static void on_callback(void *userdata, int domain, uint32_t cbid, const void *cbdata)
{
	(void)userdata;
	(void)cbdata;
	if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
		atomic_fetch_add(&H.contexts, 1);
}

/* ---- finding and starting CUPTI ---- */

struct loaded_search {
	const char *prefix;
	char path[PATH_MAX];
};

static int find_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct loaded_search *s = arg;

	(void)size;
	if (!info->dlpi_name || !*info->dlpi_name)
		return 0;
	if (strncmp(basename(info->dlpi_name), s->prefix, strlen(s->prefix)) != 0)
		return 0;
	snprintf(s->path, sizeof(s->path), "%s", info->dlpi_name);
	return 1;
}

static bool loaded_path(const char *prefix, char *out, size_t size)
{
	struct loaded_search s = {.prefix = prefix};

	if (!dl_iterate_phdr(find_loaded, &s))
		return false;
	snprintf(out, size, "%s", s.path);
	return true;
}

static void *try_open(const char *path, struct strbuf *tried)
{
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		strbuf_addf(tried, "%s%s", tried->len ? ", " : "", path);
	return lib;
}

/* libcupti as the program's CUDA runtime would have it: see the file's comment. */
static void *find_cupti(struct strbuf *tried)
{
	static const char *const rel[] = {
	    "libcupti.so",			   /* a wheel's, CUDA 13's: next to cudart */
	    "../../cuda_cupti/lib/libcupti.so.12", /* nvidia-cuda-runtime-cu12's sibling wheel */
	    "../../cuda_cupti/lib/libcupti.so.11.8",
	    "../extras/CUPTI/lib64/libcupti.so",    /* the toolkit: lib64/libcudart.so */
	    "../../extras/CUPTI/lib64/libcupti.so", /* targets/x86_64-linux/lib/ */
	    "libcupti.so.13",
	    "libcupti.so.12",
	};
	static const char *const names[] = {
	    "libcupti.so",
	    "libcupti.so.13",
	    "libcupti.so.12",
	    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
	    "/usr/lib/x86_64-linux-gnu/libcupti.so",
	};
	const char *given = getenv("JOBSCOPE_CUPTI_LIBRARY");
	char path[PATH_MAX], dir[PATH_MAX];
	void *lib;

	if (given && *given)
		return try_open(given, tried);
	if (loaded_path("libcupti.so", path, sizeof(path)) && (lib = try_open(path, tried)))
		return lib;
	if (loaded_path("libcudart.so", dir, sizeof(dir))) {
		char *slash = strrchr(dir, '/');

		if (slash) {
			*slash = '\0';
			for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
				int n = snprintf(path, sizeof(path), "%s/%s", dir, rel[i]);

				if (n > 0 && (size_t)n < sizeof(path) && access(path, F_OK) == 0 &&
				    (lib = try_open(path, tried)))
					return lib;
			}
		}
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((lib = try_open(names[i], tried)))
			return lib;
	return NULL;
}

#define RESOLVE(field, sym) (*(void **)&H.cupti.field = dlsym(H.lib, sym))

static const char *result_string(CUptiResult r)
{
	const char *s = NULL;

	if (H.cupti.get_result_string && H.cupti.get_result_string(r, &s) == CUPTI_SUCCESS && s)
		return s;
	return "unknown CUPTI error";
}

static void set_state(enum cuda_proc_state state, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_state(enum cuda_proc_state state, const char *fmt, ...)
{
	va_list ap;

	H.state = state;
	va_start(ap, fmt);
	vsnprintf(H.message, sizeof(H.message), fmt, ap);
	va_end(ap);
}

/* Opens libcupti; the state says how it went (ok: the activity API is there). */
static void start_cupti(void)
{
	struct strbuf tried;

	strbuf_init(&tried, 2048);
	H.lib = find_cupti(&tried);
	if (!H.lib) {
		set_state(CUDA_PROC_NO_CUPTI,
			  "libcupti not found (tried %s; set JOBSCOPE_CUPTI_LIBRARY)",
			  strbuf_str(&tried));
		strbuf_release(&tried);
		return;
	}
	strbuf_release(&tried);
	RESOLVE(get_version, "cuptiGetVersion");
	RESOLVE(get_result_string, "cuptiGetResultString");
	RESOLVE(subscribe, "cuptiSubscribe");
	RESOLVE(unsubscribe, "cuptiUnsubscribe");
	RESOLVE(enable_callback, "cuptiEnableCallback");
	RESOLVE(get_callback_name, "cuptiGetCallbackName");
	RESOLVE(activity_enable, "cuptiActivityEnable");
	RESOLVE(activity_disable, "cuptiActivityDisable");
	RESOLVE(activity_register_callbacks, "cuptiActivityRegisterCallbacks");
	RESOLVE(activity_get_next_record, "cuptiActivityGetNextRecord");
	RESOLVE(activity_flush_all, "cuptiActivityFlushAll");
	RESOLVE(activity_get_num_dropped_records, "cuptiActivityGetNumDroppedRecords");
	if (!H.cupti.subscribe || !H.cupti.unsubscribe || !H.cupti.activity_enable ||
	    !H.cupti.activity_disable || !H.cupti.activity_register_callbacks ||
	    !H.cupti.activity_get_next_record || !H.cupti.activity_flush_all) {
		set_state(CUDA_PROC_NO_CUPTI, "libcupti lacks the activity API (too old)");
		return;
	}
	if (H.cupti.get_version)
		H.cupti.get_version(&H.cupti_version);
	H.cupti_ok = true;
	set_state(CUDA_PROC_OK, "%s", "");
}

static void send_status(void)
{
	struct strbuf frame;

	strbuf_init(&frame, 4096);
	if (!cuda_proto_status(&frame, H.state, H.message))
		send_frame(&frame);
	strbuf_release(&frame);
}

/*
 * Takes CUPTI (its one subscriber and its activity callbacks) for as long
 * as we record, and only then: a process nobody profiles leaves CUPTI free
 * for its own tools (torch.profiler, nsys attached later).  false: refused,
 * the state says why.
 */
static bool take_cupti(void)
{
	CUptiResult r = H.cupti.subscribe(&H.sub, on_callback, NULL);

	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		set_state(CUDA_PROC_BUSY, "another profiler holds CUPTI (nsys, ncu or the "
					  "framework's own): no CUDA tables for this process");
		return false;
	}
	if (r != CUPTI_SUCCESS) {
		set_state(CUDA_PROC_ERROR, "cuptiSubscribe: %s", result_string(r));
		return false;
	}
	if (H.cupti.enable_callback)
		H.cupti.enable_callback(1, H.sub, CUPTI_CB_DOMAIN_RESOURCE,
					CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
	r = H.cupti.activity_register_callbacks(on_buffer_request, on_buffer_complete);
	if (r != CUPTI_SUCCESS) {
		set_state(CUDA_PROC_ERROR, "cuptiActivityRegisterCallbacks: %s", result_string(r));
		H.cupti.unsubscribe(H.sub);
		return false;
	}
	return true;
}

static const uint32_t activity_kinds[] = {
    CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,	 CUPTI_ACTIVITY_KIND_MEMSET,
};

static CUptiResult set_kinds(bool on)
{
	CUptiResult r = CUPTI_SUCCESS;

	for (size_t i = 0; i < sizeof(activity_kinds) / sizeof(activity_kinds[0]); i++) {
		CUptiResult ri = on ? H.cupti.activity_enable(activity_kinds[i])
				    : H.cupti.activity_disable(activity_kinds[i]);

		if (ri != CUPTI_SUCCESS && r == CUPTI_SUCCESS)
			r = ri;
	}
	return r;
}

/* The receiver's on/off: CUPTI taken and records enabled, or all handed back. */
static void set_recording(bool on)
{
	enum cuda_proc_state before = H.state;
	CUptiResult r;

	if (!H.cupti_ok || atomic_load(&H.on) == on)
		return;
	if (!on) {
		set_kinds(false);
		atomic_store(&H.on, false);
		H.cupti.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		H.cupti.unsubscribe(H.sub);
		H.sub = NULL;
		return;
	}
	if (!take_cupti()) {
		if (H.state != before)
			send_status();
		return;
	}
	r = set_kinds(true);
	if (r != CUPTI_SUCCESS) {
		set_kinds(false);
		H.cupti.unsubscribe(H.sub);
		H.sub = NULL;
		set_state(CUDA_PROC_ERROR, "cuptiActivityEnable: %s", result_string(r));
		send_status();
		return;
	}
	atomic_store(&H.on, true);
	if (before != CUDA_PROC_OK) {
		/* refused before, free now (the profiler that held CUPTI is gone) */
		set_state(CUDA_PROC_OK, "%s", "");
		send_status();
	}
}

/* ---- the receiver ---- */

static int connect_receiver(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = 5};
	int fd;

	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	memcpy(addr.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	/* a receiver that stops reading must not stall the program for long */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

/*
 * Reads commands (on/off) that have arrived, waiting up to wait_ms for the
 * first.  false when the receiver is gone.
 */
static bool read_commands(int wait_ms)
{
	static char buf[256];
	static size_t have;
	struct pollfd pfd[2] = {{.fd = H.fd, .events = POLLIN},
				{.fd = H.wake[0], .events = POLLIN}};
	ssize_t n;

	if (H.fd < 0)
		return false;
	if (poll(pfd, H.wake[0] >= 0 ? 2 : 1, wait_ms) <= 0 ||
	    !(pfd[0].revents & (POLLIN | POLLHUP)))
		return true;
	n = recv(H.fd, buf + have, sizeof(buf) - have, MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return false;
	if (n < 0)
		return true;
	have += (size_t)n;
	for (;;) {
		int64_t len = cuda_proto_frame_len(buf, have);
		int64_t interval;
		bool on;

		if (len < 0 || len > (int64_t)(sizeof(buf) - CUDA_PROTO_HEADER))
			return false;
		if (len == 0 || have < (size_t)len + CUDA_PROTO_HEADER)
			return true;
		if (cuda_proto_parse_command(buf + CUDA_PROTO_HEADER, (size_t)len, &on, &interval))
			return false;
		if (on)
			H.interval_ms = interval;
		set_recording(on);
		have -= (size_t)len + CUDA_PROTO_HEADER;
		memmove(buf, buf + len + CUDA_PROTO_HEADER, have);
	}
}

/* Every interval: CUPTI's buffers handed over (the snapshot goes with them), commands read. */
static void *hook_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&H.exiting)) {
		bool on = atomic_load(&H.on);

		if (!read_commands(on ? (int)H.interval_ms : IDLE_POLL_MS))
			break;
		if (atomic_load(&H.exiting))
			break;
		if (atomic_load(&H.on)) {
			H.cupti.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
			pthread_mutex_lock(&H.lock);
			bool changed = H.changed;
			pthread_mutex_unlock(&H.lock);
			if (changed)
				send_snapshot(false);
		}
	}
	/* the receiver is gone: stop paying for records nobody reads */
	if (!atomic_load(&H.exiting))
		set_recording(false);
	return NULL;
}

static void hook_exit(void)
{
	if (getpid() != H.pid || H.fd < 0)
		return;
	atomic_store(&H.exiting, true);
	if (H.wake[1] >= 0 && write(H.wake[1], "x", 1) < 0) {
		/* the thread wakes at its next interval anyway */
	}
	if (H.thread_started)
		pthread_join(H.thread, NULL);
	if (H.state == CUDA_PROC_OK && atomic_load(&H.on))
		H.cupti.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	if (H.state == CUDA_PROC_OK)
		send_snapshot(true);
	pthread_mutex_lock(&H.send_lock);
	if (H.fd >= 0)
		close(H.fd);
	H.fd = -1;
	pthread_mutex_unlock(&H.send_lock);
}

/* fork(): no lock may be held by a thread the child will not have. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&H.lock);
	pthread_mutex_lock(&H.send_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&H.send_lock);
	pthread_mutex_unlock(&H.lock);
}

static void fork_child(void)
{
	/* sends check the pid: the child's records are counted and never sent */
	pthread_mutex_unlock(&H.send_lock);
	pthread_mutex_unlock(&H.lock);
}

static void find_demangler(void)
{
	void *lib;

	*(void **)&H.demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
	if (H.demangle)
		return;
	lib = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
	if (lib)
		*(void **)&H.demangle = dlsym(lib, "__cxa_demangle");
}

/*
 * Called by the CUDA driver, once, during cuInit.  Returns 1 (success: the
 * driver goes on whatever we return; nothing here may fail the program).
 */
HOOK_EXPORT int InitializeInjection(void);
int InitializeInjection(void)
{
	static bool done;
	const char *sock = getenv("JOBSCOPE_CUDA_SOCKET");
	struct strbuf frame;
	int fd;

	if (done || !sock || !*sock)
		return 1;
	done = true;
	H.pid = getpid();
	fd = connect_receiver(sock);
	if (fd < 0) {
		fprintf(stderr, "jobscope-cuda: cannot reach jobscope at %s: %s: no CUDA tables\n",
			sock, strerror(-fd));
		return 1;
	}
	H.fd = fd;
	find_demangler();
	start_cupti();
	strbuf_init(&frame, 4096);
	if (!cuda_proto_hello(&frame, H.pid, H.state, H.cupti_version, H.message))
		send_frame(&frame);
	strbuf_release(&frame);
	if (H.state != CUDA_PROC_OK) {
		close(H.fd);
		H.fd = -1;
		return 1;
	}
	/* the receiver answers at once; recording starts before the program's first call */
	read_commands(HELLO_WAIT_MS);
	if (pipe2(H.wake, O_CLOEXEC) < 0)
		H.wake[0] = H.wake[1] = -1;
	if (pthread_create(&H.thread, NULL, hook_thread, NULL) == 0)
		H.thread_started = true;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	atexit(hook_exit);
	return 1;
}
