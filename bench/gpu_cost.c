/*
 * gpu_cost.c - bench-gpu-cost: the CPU that jobscope's GPU sampling costs per
 * tick, the library calls it makes, and how much of that CPU is spent inside
 * the vendor library.
 *
 * It opens the GPU set as `jobscope run` does (gpu_set_init, gpu_set_open:
 * whatever $JOBSCOPE_NVML_LIBRARY / $JOBSCOPE_ROCM_SMI_LIBRARY name, driven
 * by $FAKE_GPU_SCENARIO), then alternates two loops of --ticks ticks each,
 * --rounds times:
 *
 *   jobscope  what sample_gpus() in src/cli/cmd_run.c does per tick: every
 *             device gpu_set_sample() then backend->processes() into a
 *             256-entry buffer, copied into the tick's process array; every
 *             opened backend ->events().  (Not ptree_find(), the summary,
 *             the store: the end-to-end part of bench/gpu_cost.py has those.)
 *   replay    the same library calls, in the same order, with the same
 *             arguments and the same buffer sizes, made directly on the
 *             library (dlopen of the same path gives the backend's own
 *             instance, so the same state and scenario), and nothing else.
 *             Its CPU is the time spent inside the library; the call count
 *             of one replay tick must equal the backend's (gpu_set_calls()
 *             delta / ticks), else the program fails.
 *
 * CPU is CLOCK_PROCESS_CPUTIME_ID around each loop (one thread).  jobscope's
 * own share = jobscope − replay, per tick.  Prints a table; --json F writes
 * every round's figures.  --mode jobscope|replay runs one loop only, once,
 * for `valgrind --tool=callgrind --toggle-collect=bench_jobscope_ticks` (or
 * bench_replay_ticks): the loops are those two non-inlined functions.
 *
 * Build (bench/run-all.sh does it):
 *   cc -O2 -Wall -Wextra -Werror -std=gnu11 -Isrc bench/gpu_cost.c \
 *      build/libjobscope_core.a -lsqlite3 -lm -ldl -o build/bench-gpu-cost
 */
#define _GNU_SOURCE
#include "sample/gpu/gpu_set.h"

#include <dlfcn.h>
#include <err.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* as in src/cli/cmd_run.c */
#define RUN_PROC_BUF	   256
#define RUN_MAX_GPU_PROCS  4096
#define RUN_MAX_GPU_EVENTS 64

#define MAX_ROUNDS 101

/* ---- the jobscope side: sample_gpus() of cmd_run.c ---- */

struct run_gpu_proc {
	int dev;
	struct gpu_proc g;
};

struct tick_state {
	struct gpu_set *set;
	struct gpu_sample sample[GPU_MAX_DEVICES];
	bool sample_ok[GPU_MAX_DEVICES];
	struct run_gpu_proc procs[RUN_MAX_GPU_PROCS];
	size_t nprocs;
	struct gpu_event events[RUN_MAX_GPU_EVENTS];
	size_t nevents;
	uint64_t procs_seen, events_seen, samples_failed;
};

/* One tick of sample_gpus(): every device's reading and processes, then the events. */
static inline void jobscope_tick(struct tick_state *s)
{
	struct gpu_set *set = s->set;

	s->nprocs = 0;
	s->nevents = 0;
	for (int i = 0; i < set->ndevices; i++) {
		struct gpu_dev *d = &set->dev[i];
		struct gpu_proc buf[RUN_PROC_BUF];
		size_t n = 0;

		s->sample_ok[i] = gpu_set_sample(set, i, &s->sample[i]) == 0;
		if (!s->sample_ok[i]) {
			s->samples_failed++;
			continue;
		}
		if (d->backend->processes(d->ctx, d->pos, buf, RUN_PROC_BUF, &n))
			n = 0;
		for (size_t k = 0; k < n && s->nprocs < RUN_MAX_GPU_PROCS; k++) {
			s->procs[s->nprocs].dev = i;
			s->procs[s->nprocs].g = buf[k];
			s->nprocs++;
		}
	}
	for (int b = 0; b < set->nopened; b++) {
		const struct gpu_opened *o = &set->opened[b];
		size_t n = 0;

		if (o->backend->events(o->ctx, s->events + s->nevents,
				       RUN_MAX_GPU_EVENTS - s->nevents, &n))
			continue;
		s->nevents += n;
	}
	s->procs_seen += s->nprocs;
	s->events_seen += s->nevents;
}

/* The measured loop; callgrind's --toggle-collect names it. */
__attribute__((noinline)) void bench_jobscope_ticks(struct tick_state *s, int ticks);

void bench_jobscope_ticks(struct tick_state *s, int ticks)
{
	for (int t = 0; t < ticks; t++)
		jobscope_tick(s);
}

/* ---- the replay: the library calls alone ---- */

struct replay {
	const char *backend; /* "nvml" or "rocm" */
	bool nvml;
	void *dl;
	int ndevices;
	uint32_t supported[GPU_MAX_DEVICES]; /* the backend's info.supported */
	uint32_t prof[GPU_MAX_DEVICES];	     /* and info.prof_supported */
	uint64_t calls;			     /* made so far */
	uint64_t failures;		     /* answers the backend would not have had */
	void *state;			     /* struct nvml_replay or rocm_replay */
};

static void *sym(void *dl, const char *name)
{
	void *p = dlsym(dl, name);

	if (!p)
		errx(1, "the library has no %s", name);
	return p;
}

/* -- NVML: our own declarations of the ABI (docs/gpu-abi.md) -- */

#define NV_SUCCESS	      0
#define NV_ERROR_NOT_FOUND    6
#define NV_ERROR_INSUFFICIENT 7
#define NV_ERROR_TIMEOUT      10
#define NV_FI_NVLINK_DATA_TX  138
#define NV_FI_NVLINK_DATA_RX  139
#define NV_EVENTS_WANTED      (0x8ull | 0x1ull | 0x2ull) /* XID, SBE, DBE */
#define NV_MEMORY_V2_VERSION  (unsigned int)(40 | (2u << 24))
#define NV_LIST_ROOM	      4096

typedef int nvret;
typedef struct nv_device *nv_device;

struct nv_utilization {
	unsigned int gpu, memory;
};

struct nv_memory_v2 {
	unsigned int version;
	unsigned long long total, reserved, free, used;
};

struct nv_process_info {
	unsigned int pid;
	unsigned long long used_gpu_memory;
	unsigned int gpu_instance_id, compute_instance_id;
};

struct nv_util_sample {
	unsigned int pid;
	unsigned long long time_stamp;
	unsigned int sm_util, mem_util, enc_util, dec_util;
};

struct nv_field_value {
	unsigned int field_id;
	unsigned int scope_id;
	long long timestamp;
	long long latency_usec;
	int value_type;
	nvret nvml_return;
	unsigned long long value;
};

struct nv_event_data {
	nv_device device;
	unsigned long long event_type, event_data;
	unsigned int gpu_instance_id, compute_instance_id;
};

_Static_assert(sizeof(struct nv_memory_v2) == 40, "nvmlMemory_v2_t");
_Static_assert(sizeof(struct nv_process_info) == 24, "nvmlProcessInfo_t");
_Static_assert(sizeof(struct nv_util_sample) == 32, "nvmlProcessUtilizationSample_t");
_Static_assert(sizeof(struct nv_field_value) == 40, "nvmlFieldValue_t");
_Static_assert(sizeof(struct nv_event_data) == 32, "nvmlEventData_t");

/* GPM (docs/gpu.md): the metrics asked, as nvml_prof.c asks them (11) */
#define NV_GPM_ASKED 11
struct nv_gpm_metric {
	unsigned int metric_id;
	nvret nvml_return;
	double value;
	char *short_name, *long_name, *unit;
};
struct nv_gpm_metrics_get {
	unsigned int version, num_metrics;
	void *sample1, *sample2;
	struct nv_gpm_metric metrics[NV_GPM_ASKED];
};
_Static_assert(sizeof(struct nv_gpm_metric) == 40, "nvmlGpmMetric_t");
_Static_assert(__builtin_offsetof(struct nv_gpm_metrics_get, metrics) == 24, "nvmlGpmMetricsGet_t");
static const unsigned int nv_gpm_ids[NV_GPM_ASKED] = {1, 2, 3, 5, 6, 7, 9, 10, 11, 12, 13};

struct nvml_replay {
	nvret (*count)(unsigned int *);
	nvret (*handle_by_index)(unsigned int, nv_device *);
	nvret (*utilization)(nv_device, struct nv_utilization *);
	nvret (*memory_v2)(nv_device, struct nv_memory_v2 *);
	nvret (*pcie)(nv_device, int, unsigned int *);
	nvret (*field_values)(nv_device, int, struct nv_field_value *);
	nvret (*power)(nv_device, unsigned int *);
	nvret (*energy)(nv_device, unsigned long long *);
	nvret (*temperature)(nv_device, int, unsigned int *);
	nvret (*clock)(nv_device, int, unsigned int *);
	nvret (*reasons)(nv_device, unsigned long long *);
	nvret (*ecc)(nv_device, int, int, unsigned long long *);
	nvret (*list[2])(nv_device, unsigned int *, void *); /* compute, graphics */
	nvret (*proc_util)(nv_device, struct nv_util_sample *, unsigned int *, unsigned long long);
	nvret (*set_create)(void **);
	nvret (*event_types)(nv_device, unsigned long long *);
	nvret (*register_events)(nv_device, unsigned long long, void *);
	nvret (*set_wait)(void *, struct nv_event_data *, unsigned int);
	nvret (*set_free)(void *);
	nvret (*gpm_sample_alloc)(void **);
	nvret (*gpm_sample_free)(void *);
	nvret (*gpm_sample_get)(nv_device, void *);
	nvret (*gpm_metrics_get)(struct nv_gpm_metrics_get *);
	void *gpm[GPU_MAX_DEVICES][2]; /* each device's two samples: [0] the newest */
	bool gpm_have_prev[GPU_MAX_DEVICES];
	nvret (*remapped_rows)(nv_device, unsigned int *, unsigned int *, unsigned int *,
			       unsigned int *);

	nv_device dev[GPU_MAX_DEVICES];
	void *events;
	bool any_events;
	/* buffers sized as the backend's end up: grown to what the driver asked */
	struct nv_process_info *list_buf[2];
	unsigned int list_cap[2];
	struct nv_util_sample *util_buf;
	unsigned int util_cap;
	unsigned long long last_util_ts[GPU_MAX_DEVICES];
	struct nv_field_value fields[2];
	struct nv_field_value prof_fields[12];
};

/*
 * The violation counters (fields 74-81, 269-271) and the PCIe replay
 * counter (94), in enum gpu_prof's order, which the backend reads in one
 * GetFieldValues call (src/sample/gpu/nvml_prof.c).
 */
static const unsigned int nv_prof_field_ids[12] = {74, 75, 76,	77,  78,  79,
						   80, 81, 269, 270, 271, 94};
static const uint32_t nv_prof_field_bits[12] = {
    GPU_PROF_VIOL_POWER,       GPU_PROF_VIOL_THERMAL,	     GPU_PROF_VIOL_SYNC_BOOST,
    GPU_PROF_VIOL_BOARD_LIMIT, GPU_PROF_VIOL_LOW_UTIL,	     GPU_PROF_VIOL_RELIABILITY,
    GPU_PROF_VIOL_APP_CLOCKS,  GPU_PROF_VIOL_BASE_CLOCKS,    GPU_PROF_VIOL_SW_THERMAL,
    GPU_PROF_VIOL_HW_THERMAL,  GPU_PROF_VIOL_HW_POWER_BRAKE, GPU_PROF_PCIE_REPLAY,
};

#define NV(r, call) ((r)->calls++, (call))

static void nvml_replay_open(struct replay *r)
{
	struct nvml_replay *n = calloc(1, sizeof(*n));
	unsigned int count = 0;

	if (!n)
		err(1, "calloc");
	r->state = n;
	n->count = sym(r->dl, "nvmlDeviceGetCount_v2");
	n->handle_by_index = sym(r->dl, "nvmlDeviceGetHandleByIndex_v2");
	n->utilization = sym(r->dl, "nvmlDeviceGetUtilizationRates");
	n->memory_v2 = sym(r->dl, "nvmlDeviceGetMemoryInfo_v2");
	n->pcie = sym(r->dl, "nvmlDeviceGetPcieThroughput");
	n->field_values = sym(r->dl, "nvmlDeviceGetFieldValues");
	n->power = sym(r->dl, "nvmlDeviceGetPowerUsage");
	n->energy = sym(r->dl, "nvmlDeviceGetTotalEnergyConsumption");
	n->temperature = sym(r->dl, "nvmlDeviceGetTemperature");
	n->clock = sym(r->dl, "nvmlDeviceGetClockInfo");
	n->reasons = sym(r->dl, "nvmlDeviceGetCurrentClocksEventReasons");
	n->ecc = sym(r->dl, "nvmlDeviceGetTotalEccErrors");
	n->list[0] = sym(r->dl, "nvmlDeviceGetComputeRunningProcesses_v3");
	n->list[1] = sym(r->dl, "nvmlDeviceGetGraphicsRunningProcesses_v3");
	n->proc_util = sym(r->dl, "nvmlDeviceGetProcessUtilization");
	n->set_create = sym(r->dl, "nvmlEventSetCreate");
	n->event_types = sym(r->dl, "nvmlDeviceGetSupportedEventTypes");
	n->register_events = sym(r->dl, "nvmlDeviceRegisterEvents");
	n->set_wait = sym(r->dl, "nvmlEventSetWait_v2");
	n->set_free = sym(r->dl, "nvmlEventSetFree");
	n->remapped_rows = sym(r->dl, "nvmlDeviceGetRemappedRows");
	n->gpm_sample_alloc = sym(r->dl, "nvmlGpmSampleAlloc");
	n->gpm_sample_free = sym(r->dl, "nvmlGpmSampleFree");
	n->gpm_sample_get = sym(r->dl, "nvmlGpmSampleGet");
	n->gpm_metrics_get = sym(r->dl, "nvmlGpmMetricsGet");

	/* no nvmlInit here: it would reload the scenario under the backend */
	if (n->count(&count) != NV_SUCCESS || (int)count != r->ndevices)
		errx(1,
		     "replay: the library answers GetCount with %u devices, not %d "
		     "(not the backend's instance?)",
		     count, r->ndevices);
	for (int i = 0; i < r->ndevices; i++)
		if (n->handle_by_index((unsigned int)i, &n->dev[i]) != NV_SUCCESS)
			errx(1, "replay: no handle for device %d", i);
	for (int i = 0; i < r->ndevices; i++)
		if ((r->prof[i] & GPU_PROF_GPM) &&
		    (n->gpm_sample_alloc(&n->gpm[i][0]) != NV_SUCCESS ||
		     n->gpm_sample_alloc(&n->gpm[i][1]) != NV_SUCCESS))
			errx(1, "replay: no GPM samples for device %d", i);
	/* an event set like the backend's: the same devices, the same types */
	if (n->set_create(&n->events) != NV_SUCCESS)
		errx(1, "replay: nvmlEventSetCreate failed");
	for (int i = 0; i < r->ndevices; i++) {
		unsigned long long types = 0;

		if (!(r->supported[i] & GPU_EVENTS))
			continue;
		if (n->event_types(n->dev[i], &types) != NV_SUCCESS ||
		    n->register_events(n->dev[i], types & NV_EVENTS_WANTED, n->events) !=
			NV_SUCCESS)
			errx(1, "replay: cannot register device %d for events", i);
		n->any_events = true;
	}
	for (int l = 0; l < 2; l++) {
		n->list_buf[l] = calloc(NV_LIST_ROOM, sizeof(*n->list_buf[l]));
		if (!n->list_buf[l])
			err(1, "calloc");
	}
	n->util_buf = calloc(NV_LIST_ROOM, sizeof(*n->util_buf));
	if (!n->util_buf)
		err(1, "calloc");
}

static void nvml_replay_close(struct replay *r)
{
	struct nvml_replay *n = r->state;

	n->set_free(n->events);
	for (int i = 0; i < r->ndevices; i++)
		for (int k = 0; k < 2; k++)
			if (n->gpm[i][k])
				n->gpm_sample_free(n->gpm[i][k]);
	free(n->list_buf[0]);
	free(n->list_buf[1]);
	free(n->util_buf);
	free(n);
}

static void nv_check(struct replay *r, nvret got)
{
	if (got != NV_SUCCESS)
		r->failures++;
}

/* One process list as read_proc_list() reads it: the buffer it has, grown when asked. */
static unsigned int nv_list(struct replay *r, struct nvml_replay *n, int l, nv_device dev)
{
	unsigned int count = 0;
	nvret got = NV_ERROR_INSUFFICIENT;

	for (int attempt = 0; attempt < 4 && got == NV_ERROR_INSUFFICIENT; attempt++) {
		count = n->list_cap[l];
		got = NV(r, n->list[l](dev, &count, n->list_cap[l] ? n->list_buf[l] : NULL));
		if (got == NV_ERROR_INSUFFICIENT)
			n->list_cap[l] = count <= n->list_cap[l] ? n->list_cap[l] + 16 : count;
	}
	nv_check(r, got);
	return got == NV_SUCCESS ? count : 0;
}

/* gpu_sample(), then processes(), of src/sample/gpu/nvml.c, for device i. */
static void nvml_replay_device(struct replay *r, struct nvml_replay *n, int i)
{
	nv_device dev = n->dev[i];
	uint32_t sup = r->supported[i];
	struct nv_utilization u;
	struct nv_memory_v2 m;
	unsigned int ui;
	unsigned long long ull;

	if (sup & (GPU_UTIL | GPU_MEM_UTIL))
		nv_check(r, NV(r, n->utilization(dev, &u)));
	if (sup & GPU_MEM_USED) {
		memset(&m, 0, sizeof(m));
		m.version = NV_MEMORY_V2_VERSION;
		nv_check(r, NV(r, n->memory_v2(dev, &m)));
	}
	if (sup & GPU_PCIE) {
		nv_check(r, NV(r, n->pcie(dev, 0, &ui)));
		nv_check(r, NV(r, n->pcie(dev, 1, &ui)));
	}
	if (sup & GPU_NVLINK) {
		/* one entry each for all links (scopeId UINT_MAX), as a current driver takes */
		memset(n->fields, 0, sizeof(n->fields));
		n->fields[0].field_id = NV_FI_NVLINK_DATA_TX;
		n->fields[0].scope_id = UINT_MAX;
		n->fields[1].field_id = NV_FI_NVLINK_DATA_RX;
		n->fields[1].scope_id = UINT_MAX;
		nv_check(r, NV(r, n->field_values(dev, 2, n->fields)));
	}
	if (sup & GPU_POWER)
		nv_check(r, NV(r, n->power(dev, &ui)));
	if (sup & GPU_ENERGY)
		nv_check(r, NV(r, n->energy(dev, &ull)));
	if (sup & GPU_TEMP)
		nv_check(r, NV(r, n->temperature(dev, 0, &ui)));
	if (sup & GPU_SM_CLOCK)
		nv_check(r, NV(r, n->clock(dev, 1, &ui)));
	if (sup & GPU_MEM_CLOCK)
		nv_check(r, NV(r, n->clock(dev, 2, &ui)));
	if (sup & GPU_THROTTLE)
		nv_check(r, NV(r, n->reasons(dev, &ull)));
	if (sup & GPU_ECC) {
		nv_check(r, NV(r, n->ecc(dev, 0, 0, &ull)));
		nv_check(r, NV(r, n->ecc(dev, 1, 0, &ull)));
	}
	if (r->prof[i] & GPU_PROF_GPM) {
		/* read_gpm: a sample into the older buffer, then every metric at once */
		void *older = n->gpm[i][1];

		nv_check(r, NV(r, n->gpm_sample_get(dev, older)));
		n->gpm[i][1] = n->gpm[i][0];
		n->gpm[i][0] = older;
		if (n->gpm_have_prev[i]) {
			struct nv_gpm_metrics_get mg;

			memset(&mg, 0, sizeof(mg));
			mg.version = 1;
			mg.num_metrics = NV_GPM_ASKED;
			mg.sample1 = n->gpm[i][1];
			mg.sample2 = n->gpm[i][0];
			for (int k = 0; k < NV_GPM_ASKED; k++)
				mg.metrics[k].metric_id = nv_gpm_ids[k];
			nv_check(r, NV(r, n->gpm_metrics_get(&mg)));
		}
		n->gpm_have_prev[i] = true;
	}
	{
		unsigned int nf = 0, corr, unc, pending, failed;

		memset(n->prof_fields, 0, sizeof(n->prof_fields));
		for (int k = 0; k < 12; k++)
			if (r->prof[i] & nv_prof_field_bits[k])
				n->prof_fields[nf++].field_id = nv_prof_field_ids[k];
		if (nf)
			nv_check(r, NV(r, n->field_values(dev, (int)nf, n->prof_fields)));
		if (r->prof[i] & GPU_PROF_REMAPPED_ROWS)
			nv_check(r, NV(r, n->remapped_rows(dev, &corr, &unc, &pending, &failed)));
	}
	if (!(sup & GPU_PROC_MEM))
		return;
	nv_list(r, n, 0, dev);
	nv_list(r, n, 1, dev);
	if (sup & GPU_PROC_UTIL) { /* read_proc_util: asked even with empty lists */
		unsigned int count = 0;
		nvret got = NV_ERROR_INSUFFICIENT;

		for (int attempt = 0; attempt < 4 && got == NV_ERROR_INSUFFICIENT; attempt++) {
			count = n->util_cap;
			got = NV(r, n->proc_util(dev, n->util_cap ? n->util_buf : NULL, &count,
						 n->last_util_ts[i]));
			if (got == NV_ERROR_INSUFFICIENT)
				n->util_cap = count <= n->util_cap ? n->util_cap + 16 : count;
		}
		if (got == NV_SUCCESS) {
			for (unsigned int k = 0; k < count; k++)
				if (n->util_buf[k].time_stamp > n->last_util_ts[i])
					n->last_util_ts[i] = n->util_buf[k].time_stamp;
		} else if (got != NV_ERROR_NOT_FOUND) {
			r->failures++;
		}
	}
}

static void nvml_replay_tick(struct replay *r)
{
	struct nvml_replay *n = r->state;
	struct nv_event_data ev;

	for (int i = 0; i < r->ndevices; i++)
		nvml_replay_device(r, n, i);
	if (n->any_events) {
		memset(&ev, 0, sizeof(ev));
		if (NV(r, n->set_wait(n->events, &ev, 0)) != NV_ERROR_TIMEOUT)
			r->failures++;
	}
}

/* -- ROCm SMI: our own declarations (docs/gpu-abi.md, "ROCm SMI") -- */

#define RS_SUCCESS     0
#define RS_PROC_SLACK  8 /* as rocm.c */
#define RS_EVENT_BATCH 16
#define RS_FREQ_ROOM   64

struct rs_process_info {
	uint32_t process_id, pasid;
	uint64_t vram_usage, sdma_usage;
	uint32_t cu_occupancy;
};

struct rs_error_count {
	uint64_t correctable, uncorrectable;
};

struct rs_event {
	uint32_t dv_ind, event;
	char message[64];
};

_Static_assert(sizeof(struct rs_process_info) == 32, "rsmi_process_info_t");
_Static_assert(sizeof(struct rs_event) == 72, "rsmi_evt_notification_data_t");

struct rocm_replay {
	uint32_t (*num_devices)(uint32_t *);
	uint32_t (*busy)(uint32_t, uint32_t *);
	uint32_t (*mem_busy)(uint32_t, uint32_t *);
	uint32_t (*mem_usage)(uint32_t, uint32_t, uint64_t *);
	uint32_t (*power)(uint32_t, uint32_t, uint64_t *);
	uint32_t (*energy)(uint32_t, uint64_t *, float *, uint64_t *);
	uint32_t (*temp)(uint32_t, uint32_t, uint32_t, int64_t *);
	uint32_t (*clock)(uint32_t, uint32_t, void *);
	uint32_t (*ecc)(uint32_t, uint64_t, struct rs_error_count *);
	uint32_t (*proc_info)(struct rs_process_info *, uint32_t *);
	uint32_t (*proc_gpus)(uint32_t, uint32_t *, uint32_t *);
	uint32_t (*event_get)(int, uint32_t *, struct rs_event *);

	struct rs_process_info *procs;
	uint32_t procs_cap;
};

static void rocm_replay_open(struct replay *r)
{
	struct rocm_replay *m = calloc(1, sizeof(*m));
	uint32_t count = 0;

	if (!m)
		err(1, "calloc");
	r->state = m;
	m->num_devices = sym(r->dl, "rsmi_num_monitor_devices");
	m->busy = sym(r->dl, "rsmi_dev_busy_percent_get");
	m->mem_busy = sym(r->dl, "rsmi_dev_memory_busy_percent_get");
	m->mem_usage = sym(r->dl, "rsmi_dev_memory_usage_get");
	m->power = sym(r->dl, "rsmi_dev_power_ave_get");
	m->energy = sym(r->dl, "rsmi_dev_energy_count_get");
	m->temp = sym(r->dl, "rsmi_dev_temp_metric_get");
	m->clock = sym(r->dl, "rsmi_dev_gpu_clk_freq_get");
	m->ecc = sym(r->dl, "rsmi_dev_ecc_count_get");
	m->proc_info = sym(r->dl, "rsmi_compute_process_info_get");
	m->proc_gpus = sym(r->dl, "rsmi_compute_process_gpus_get");
	m->event_get = sym(r->dl, "rsmi_event_notification_get");
	/* no rsmi_init here: it would reload the scenario under the backend */
	if (m->num_devices(&count) != RS_SUCCESS || (int)count != r->ndevices)
		errx(1,
		     "replay: the library counts %u devices, not %d (not the backend's "
		     "instance?)",
		     count, r->ndevices);
}

static void rocm_replay_close(struct replay *r)
{
	struct rocm_replay *m = r->state;

	free(m->procs);
	free(m);
}

#define RS(r, call) ((r)->calls++, (call))

static void rs_check(struct replay *r, uint32_t got)
{
	if (got != RS_SUCCESS)
		r->failures++;
}

/* procs_refresh() of rocm.c: count, read with some slack, the devices of each. */
static void rocm_replay_procs(struct replay *r, struct rocm_replay *m)
{
	uint32_t count = 0, got;

	if (RS(r, m->proc_info(NULL, &count)) != RS_SUCCESS) {
		r->failures++;
		return;
	}
	if (count == 0)
		return;
	if (count + RS_PROC_SLACK > m->procs_cap) {
		free(m->procs);
		m->procs_cap = count + RS_PROC_SLACK;
		m->procs = calloc(m->procs_cap, sizeof(*m->procs));
		if (!m->procs)
			err(1, "calloc");
	}
	got = count + RS_PROC_SLACK;
	if (RS(r, m->proc_info(m->procs, &got)) != RS_SUCCESS) {
		r->failures++;
		return;
	}
	for (uint32_t i = 0; i < got; i++) {
		uint32_t dv[GPU_MAX_DEVICES], n = GPU_MAX_DEVICES;

		if (m->procs[i].process_id == 0)
			continue;
		rs_check(r, RS(r, m->proc_gpus(m->procs[i].process_id, dv, &n)));
	}
}

static void rocm_replay_tick(struct replay *r)
{
	struct rocm_replay *m = r->state;
	bool refreshed = false, any_events = false;
	struct rs_event ev[RS_EVENT_BATCH];

	for (int i = 0; i < r->ndevices; i++) {
		uint32_t dv = (uint32_t)i, sup = r->supported[i], pct;
		uint64_t u64, counter, ts;
		uint64_t freq[RS_FREQ_ROOM];
		struct rs_error_count ec;
		float res;
		int64_t mdeg;

		if (sup & GPU_UTIL)
			rs_check(r, RS(r, m->busy(dv, &pct)));
		if (sup & GPU_MEM_UTIL)
			rs_check(r, RS(r, m->mem_busy(dv, &pct)));
		if (sup & GPU_MEM_USED)
			rs_check(r, RS(r, m->mem_usage(dv, 0, &u64)));
		if (sup & GPU_POWER)
			rs_check(r, RS(r, m->power(dv, 0, &u64)));
		if (sup & GPU_ENERGY)
			rs_check(r, RS(r, m->energy(dv, &counter, &res, &ts)));
		if (sup & GPU_TEMP)
			rs_check(r, RS(r, m->temp(dv, 0, 0, &mdeg))); /* EDGE, CURRENT */
		if (sup & GPU_SM_CLOCK) {
			memset(freq, 0, sizeof(freq));
			rs_check(r, RS(r, m->clock(dv, 0, freq))); /* SYS */
		}
		if (sup & GPU_MEM_CLOCK) {
			memset(freq, 0, sizeof(freq));
			rs_check(r, RS(r, m->clock(dv, 4, freq))); /* MEM */
		}
		if (sup & GPU_ECC)
			rs_check(r, RS(r, m->ecc(dv, 0x1, &ec))); /* UMC */
		/* the first device that asks for processes takes the snapshot */
		if ((sup & GPU_PROC_MEM) && !refreshed) {
			rocm_replay_procs(r, m);
			refreshed = true;
		}
		any_events |= (sup & GPU_EVENTS) != 0;
	}
	if (any_events) {
		uint32_t got = RS_EVENT_BATCH;

		RS(r, m->event_get(0, &got, ev)); /* NO_DATA: nothing queued */
	}
}

static inline void replay_tick(struct replay *r)
{
	if (r->nvml)
		nvml_replay_tick(r);
	else
		rocm_replay_tick(r);
}

__attribute__((noinline)) void bench_replay_ticks(struct replay *r, int ticks);

void bench_replay_ticks(struct replay *r, int ticks)
{
	for (int t = 0; t < ticks; t++)
		replay_tick(r);
}

/* Not measured, not collected: buffers grow to their size, caches fill. */
static __attribute__((noinline)) void warm_up(struct tick_state *s, struct replay *r, int ticks)
{
	for (int t = 0; t < ticks; t++) {
		jobscope_tick(s);
		replay_tick(r);
	}
}

/* ---- measuring ---- */

static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
	double s[MAX_ROUNDS];

	memcpy(s, v, (size_t)n * sizeof(*v));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static double min_of(const double *v, int n)
{
	double m = v[0];

	for (int i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

static void usage(FILE *out, int status)
{
	fprintf(out,
		"usage: bench-gpu-cost --backend nvml|rocm [--ticks N] [--rounds R] [--warmup W]\n"
		"                      [--mode both|jobscope|replay] [--json FILE]\n"
		"\n"
		"Opens the GPU set (set $JOBSCOPE_NVML_LIBRARY / $JOBSCOPE_ROCM_SMI_LIBRARY and\n"
		"$FAKE_GPU_SCENARIO), checks that exactly that backend opened, then alternates R\n"
		"rounds of N jobscope ticks and N replay ticks (defaults 2000 and 7, after W = 50\n"
		"warm-up ticks of each).  --mode jobscope|replay: one loop of N ticks only.\n");
	exit(status);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"backend", required_argument, NULL, 'b'}, {"ticks", required_argument, NULL, 't'},
	    {"rounds", required_argument, NULL, 'r'},  {"warmup", required_argument, NULL, 'w'},
	    {"mode", required_argument, NULL, 'm'},    {"json", required_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},	       {NULL, 0, NULL, 0},
	};
	const char *backend = NULL, *mode = "both", *json = NULL, *path;
	int ticks = 2000, rounds = 7, warmup = 50, c;
	double js_cpu[MAX_ROUNDS], js_wall[MAX_ROUNDS], lib_cpu[MAX_ROUNDS], own[MAX_ROUNDS];
	double js_calls = 0, lib_calls = 0;
	static struct tick_state s;
	struct gpu_set set;
	struct replay r;
	bool do_js, do_lib;
	FILE *f;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			backend = optarg;
			break;
		case 't':
			ticks = atoi(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'w':
			warmup = atoi(optarg);
			break;
		case 'm':
			mode = optarg;
			break;
		case 'j':
			json = optarg;
			break;
		case 'h':
			usage(stdout, 0);
			break;
		default:
			usage(stderr, 2);
		}
	}
	if (!backend || (strcmp(backend, "nvml") && strcmp(backend, "rocm")) || ticks < 1 ||
	    rounds < 1 || rounds > MAX_ROUNDS || warmup < 0 ||
	    (strcmp(mode, "both") && strcmp(mode, "jobscope") && strcmp(mode, "replay")))
		usage(stderr, 2);
	do_js = strcmp(mode, "replay") != 0;
	do_lib = strcmp(mode, "jobscope") != 0;
	if (strcmp(mode, "both"))
		rounds = 1;

	gpu_set_init(&set);
	gpu_set_open(&set);
	if (set.nopened != 1 || strcmp(set.opened[0].backend->name, backend) != 0 ||
	    set.ndevices == 0)
		errx(1,
		     "expected the %s backend alone, with devices; got %d backend(s), %d "
		     "device(s): check the *_LIBRARY variables and the scenario",
		     backend, set.nopened, set.ndevices);
	s.set = &set;

	memset(&r, 0, sizeof(r));
	r.backend = backend;
	r.nvml = strcmp(backend, "nvml") == 0;
	r.ndevices = set.ndevices;
	for (int i = 0; i < set.ndevices; i++) {
		r.supported[i] = set.dev[i].info.supported;
		r.prof[i] = set.dev[i].info.prof_supported;
	}
	path = getenv(strcmp(backend, "nvml") == 0 ? "JOBSCOPE_NVML_LIBRARY"
						   : "JOBSCOPE_ROCM_SMI_LIBRARY");
	r.dl = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (!r.dl)
		errx(1, "replay: %s is not loaded by the backend: %s", path, dlerror());
	if (strcmp(backend, "nvml") == 0)
		nvml_replay_open(&r);
	else
		rocm_replay_open(&r);

	warm_up(&s, &r, warmup);
	s.procs_seen = s.events_seen = s.samples_failed = 0;
	r.failures = 0;

	for (int k = 0; k < rounds; k++) {
		uint64_t c0 = gpu_set_calls(&set), l0 = r.calls;
		double t0, w0;

		if (do_js) {
			t0 = cpu_ns();
			w0 = wall_ns();
			bench_jobscope_ticks(&s, ticks);
			js_cpu[k] = (cpu_ns() - t0) / ticks;
			js_wall[k] = (wall_ns() - w0) / ticks;
			js_calls = (double)(gpu_set_calls(&set) - c0) / ticks;
		}
		if (do_lib) {
			t0 = cpu_ns();
			bench_replay_ticks(&r, ticks);
			lib_cpu[k] = (cpu_ns() - t0) / ticks;
			lib_calls = (double)(r.calls - l0) / ticks;
		}
		if (do_js && do_lib)
			own[k] = js_cpu[k] - lib_cpu[k];
	}
	if (s.samples_failed || r.failures)
		errx(1,
		     "%llu failed samples, %llu unexpected library answers in the replay: the "
		     "scenario is not 'everything supported'",
		     (unsigned long long)s.samples_failed, (unsigned long long)r.failures);
	if (do_js && do_lib && js_calls != lib_calls)
		errx(1, "the replay makes %.2f calls per tick, the backend %.2f: they differ",
		     lib_calls, js_calls);

	printf("%s: %d devices, %.1f GPU processes and %.2f events per tick, %.2f library "
	       "calls per tick; %d rounds of %d ticks\n",
	       backend, set.ndevices, do_js ? (double)s.procs_seen / rounds / ticks : 0.0,
	       do_js ? (double)s.events_seen / rounds / ticks : 0.0, do_js ? js_calls : lib_calls,
	       rounds, ticks);
	printf("round  jobscope µs/tick (CPU, wall)  replay (library) µs/tick  jobscope−library\n");
	for (int k = 0; k < rounds; k++)
		printf("%5d  %10.1f %10.1f  %24.1f  %16.1f\n", k + 1, do_js ? js_cpu[k] / 1e3 : 0,
		       do_js ? js_wall[k] / 1e3 : 0, do_lib ? lib_cpu[k] / 1e3 : 0,
		       do_js && do_lib ? own[k] / 1e3 : 0);
	if (do_js && do_lib)
		printf("median %10.1f %10.1f  %24.1f  %16.1f   (min of own: %.1f)\n",
		       median(js_cpu, rounds) / 1e3, median(js_wall, rounds) / 1e3,
		       median(lib_cpu, rounds) / 1e3, median(own, rounds) / 1e3,
		       min_of(own, rounds) / 1e3);

	if (json) {
		f = fopen(json, "w");
		if (!f)
			err(1, "%s", json);
		fprintf(f,
			"{\"backend\": \"%s\", \"devices\": %d, \"ticks\": %d, \"rounds\": %d, "
			"\"mode\": \"%s\", \"calls_per_tick\": %.4f, \"replay_calls_per_tick\": "
			"%.4f, \"procs_per_tick\": %.4f, \"events_per_tick\": %.4f",
			backend, set.ndevices, ticks, rounds, mode, js_calls, lib_calls,
			do_js ? (double)s.procs_seen / rounds / ticks : 0.0,
			do_js ? (double)s.events_seen / rounds / ticks : 0.0);
		const char *names[] = {"total_cpu_ns", "total_wall_ns", "library_cpu_ns",
				       "own_cpu_ns"};
		const double *vals[] = {js_cpu, js_wall, lib_cpu, own};
		const bool have[] = {do_js, do_js, do_lib, do_js && do_lib};
		for (int v = 0; v < 4; v++) {
			if (!have[v])
				continue;
			fprintf(f, ", \"%s\": [", names[v]);
			for (int k = 0; k < rounds; k++)
				fprintf(f, "%s%.1f", k ? ", " : "", vals[v][k]);
			fprintf(f, "]");
		}
		fprintf(f, "}\n");
		fclose(f);
	}

	if (strcmp(backend, "nvml") == 0)
		nvml_replay_close(&r);
	else
		rocm_replay_close(&r);
	dlclose(r.dl);
	gpu_set_close(&set);
	return 0;
}
