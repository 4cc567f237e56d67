/*
 * nvml_prof.c - what the SMs did and what held them back, from NVML
 * (nvml_int.h): GPM activity (Hopper and newer), the violation (throttle)
 * counters, the PCIe replay counter, remapped rows, and accounting mode's
 * per-process peak memory.
 *
 * Map: the GPM metric ids and field ids read, into struct gpu_sample; the
 * readings of a tick (nvml_prof_sample); per-process peak memory; what is
 * set up at open (nvml_prof_open, nvml_prof_release).  docs/gpu.md has the
 * ABI facts and where they come from.
 */
#include "nvml_int.h"

#include <string.h>

/* ---- what the SMs did: GPM metric ids, field ids, policies ---- */

/* nvmlGpmMetricId_t: the ones we read, into struct gpu_sample's *_pct100 */
static const struct {
	uint32_t bit; /* enum gpu_prof */
	unsigned int id;
	size_t offset;
} gpm_metrics[NVML_GPM_ASKED] = {
    {GPU_PROF_GR_ACTIVE, 1, offsetof(struct gpu_sample, gr_active_pct100)},
    {GPU_PROF_SM_ACTIVE, 2, offsetof(struct gpu_sample, sm_active_pct100)},
    {GPU_PROF_SM_OCCUPANCY, 3, offsetof(struct gpu_sample, sm_occupancy_pct100)},
    {GPU_PROF_TENSOR_ACTIVE, 5, offsetof(struct gpu_sample, tensor_active_pct100)},
    {GPU_PROF_DFMA_TENSOR, 6, offsetof(struct gpu_sample, dfma_tensor_active_pct100)},
    {GPU_PROF_HMMA_TENSOR, 7, offsetof(struct gpu_sample, hmma_tensor_active_pct100)},
    {GPU_PROF_IMMA_TENSOR, 9, offsetof(struct gpu_sample, imma_tensor_active_pct100)},
    {GPU_PROF_DRAM_ACTIVE, 10, offsetof(struct gpu_sample, dram_active_pct100)},
    {GPU_PROF_FP64_ACTIVE, 11, offsetof(struct gpu_sample, fp64_active_pct100)},
    {GPU_PROF_FP32_ACTIVE, 12, offsetof(struct gpu_sample, fp32_active_pct100)},
    {GPU_PROF_FP16_ACTIVE, 13, offsetof(struct gpu_sample, fp16_active_pct100)},
};

/*
 * Cumulative counters from nvmlDeviceGetFieldValues, all in one call: the
 * violation times (ns; NVML 13's replacement for nvmlDeviceGetViolationStatus,
 * whose policy is given where it has one, -1 where it has none) and the
 * PCIe replay counter.
 */
#define NVML_PROF_FIELDS 12
static const struct {
	uint32_t bit; /* enum gpu_prof */
	unsigned int field_id;
	int policy; /* nvmlPerfPolicyType_t, or -1 */
	size_t offset;
} prof_fields[NVML_PROF_FIELDS] = {
    {GPU_PROF_VIOL_POWER, 74, 0, offsetof(struct gpu_sample, viol_power_ns)},
    {GPU_PROF_VIOL_THERMAL, 75, 1, offsetof(struct gpu_sample, viol_thermal_ns)},
    {GPU_PROF_VIOL_SYNC_BOOST, 76, 2, offsetof(struct gpu_sample, viol_sync_boost_ns)},
    {GPU_PROF_VIOL_BOARD_LIMIT, 77, 3, offsetof(struct gpu_sample, viol_board_limit_ns)},
    {GPU_PROF_VIOL_LOW_UTIL, 78, 4, offsetof(struct gpu_sample, viol_low_util_ns)},
    {GPU_PROF_VIOL_RELIABILITY, 79, 5, offsetof(struct gpu_sample, viol_reliability_ns)},
    {GPU_PROF_VIOL_APP_CLOCKS, 80, 10, offsetof(struct gpu_sample, viol_app_clocks_ns)},
    {GPU_PROF_VIOL_BASE_CLOCKS, 81, 11, offsetof(struct gpu_sample, viol_base_clocks_ns)},
    {GPU_PROF_VIOL_SW_THERMAL, 269, -1, offsetof(struct gpu_sample, viol_sw_thermal_ns)},
    {GPU_PROF_VIOL_HW_THERMAL, 270, -1, offsetof(struct gpu_sample, viol_hw_thermal_ns)},
    {GPU_PROF_VIOL_HW_POWER_BRAKE, 271, -1, offsetof(struct gpu_sample, viol_hw_power_brake_ns)},
    {GPU_PROF_PCIE_REPLAY, NVML_FI_DEV_PCIE_REPLAY_COUNTER, -1,
     offsetof(struct gpu_sample, pcie_replays)},
};

static bool prof_wanted(const struct nvml_gpu *g, uint32_t bits)
{
	return !g->lost && (bits & ~g->prof_off);
}

/* answered() for enum gpu_prof bits */
static bool prof_answered(struct nvml_gpu *g, nvml_return_t r, uint32_t bits)
{
	return answered_off(g, r, &g->prof_off, bits);
}

static uint64_t *sample_u64(struct gpu_sample *out, size_t offset)
{
	return (uint64_t *)(void *)((char *)out + offset);
}

/*
 * A field the driver does not give (NOT_SUPPORTED, or an id it does not
 * know: INVALID_ARGUMENT) is read with the old call from now on where
 * there is one, else turned off.
 */
static void field_refused(struct nvml_ctx *c, struct nvml_gpu *g, size_t k)
{
	if (prof_fields[k].policy >= 0 && c->lib.device_get_violation_status)
		g->viol_old |= prof_fields[k].bit;
	else
		g->prof_off |= prof_fields[k].bit;
}

/*
 * The violation counters and the PCIe replay counter: one
 * nvmlDeviceGetFieldValues call for every one still read that way.
 */
static void read_prof_fields(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	struct nvml_field_value fv[NVML_PROF_FIELDS];
	size_t idx[NVML_PROF_FIELDS];
	unsigned int n = 0;
	nvml_return_t r;

	if (!c->lib.device_get_field_values || g->lost)
		return;
	memset(fv, 0, sizeof(fv));
	for (size_t k = 0; k < NVML_PROF_FIELDS; k++) {
		if ((g->prof_off | g->viol_old) & prof_fields[k].bit)
			continue;
		fv[n].field_id = prof_fields[k].field_id;
		idx[n++] = k;
	}
	if (n == 0)
		return;
	r = NVML(c, device_get_field_values, g->handle, (int)n, fv);
	if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND) {
		for (unsigned int i = 0; i < n; i++)
			field_refused(c, g, idx[i]);
		return;
	}
	if (!prof_answered(g, r, 0))
		return;
	for (unsigned int i = 0; i < n; i++) {
		size_t k = idx[i];
		uint64_t v;

		switch (fv[i].nvml_return) {
		case NVML_SUCCESS:
			if (!field_u64(&fv[i], &v))
				break;
			*sample_u64(out, prof_fields[k].offset) = v;
			out->prof_valid |= prof_fields[k].bit;
			break;
		case NVML_ERROR_NOT_SUPPORTED:
		case NVML_ERROR_INVALID_ARGUMENT:
			field_refused(c, g, k);
			break;
		case NVML_ERROR_GPU_IS_LOST:
			g->lost = true;
			return;
		default: /* unknown this time */
			break;
		}
	}
}

/* nvmlDeviceGetViolationStatus for the reasons the fields do not give. */
static void read_viol_old(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	for (size_t k = 0; k < NVML_PROF_FIELDS; k++) {
		struct nvml_violation_time vt = {0, 0};
		nvml_return_t r;

		if (!(g->viol_old & prof_fields[k].bit) || !prof_wanted(g, prof_fields[k].bit))
			continue;
		r = NVML(c, device_get_violation_status, g->handle, prof_fields[k].policy, &vt);
		if (!prof_answered(g, r, prof_fields[k].bit))
			continue;
		*sample_u64(out, prof_fields[k].offset) = vt.violation_time;
		out->prof_valid |= prof_fields[k].bit;
	}
}

static void read_remapped_rows(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	unsigned int corr = 0, unc = 0, pending = 0, failed = 0;
	nvml_return_t r;

	if (!prof_wanted(g, GPU_PROF_REMAPPED_ROWS))
		return;
	r = NVML(c, device_get_remapped_rows, g->handle, &corr, &unc, &pending, &failed);
	if (!prof_answered(g, r, GPU_PROF_REMAPPED_ROWS))
		return;
	out->remapped_rows_corr = corr;
	out->remapped_rows_unc = unc;
	out->remap_pending = pending != 0;
	out->remap_failed = failed != 0;
	out->prof_valid |= GPU_PROF_REMAPPED_ROWS;
}

/* percent (a double) as percent x 100, rounded, within 0..100 %; false for NaN */
static bool pct100(double pct, uint32_t *out)
{
	if (!(pct == pct))
		return false;
	if (pct <= 0)
		*out = 0;
	else if (pct >= 100)
		*out = 10000;
	else
		*out = (uint32_t)(pct * 100 + 0.5);
	return true;
}

/* This tick's GPM sample of the device, or of its GPU instance for a MIG device. */
static nvml_return_t gpm_take(struct nvml_ctx *c, struct nvml_gpu *g, nvml_gpm_sample_t s)
{
	if (g->info.mig)
		return NVML(c, gpm_mig_sample_get, g->parent, g->info.gpu_instance_id, s);
	return NVML(c, gpm_sample_get, g->handle, s);
}

/*
 * GPM: this tick's sample, then, when there is a previous one, every
 * metric still read over the interval between the two in one
 * nvmlGpmMetricsGet (numMetrics: those asked, never more); the samples
 * swap.  The first tick has no values.  A metric the driver refuses is
 * not asked again; a failed sample starts over at the next tick.
 */
static void read_gpm(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	struct nvml_gpm_metrics_get mg;
	size_t idx[NVML_GPM_ASKED];
	nvml_gpm_sample_t swap;
	unsigned int n = 0;
	nvml_return_t r;

	if (!g->gpm || !prof_wanted(g, GPU_PROF_GPM))
		return;
	r = gpm_take(c, g, g->gpm_cur);
	if (r != NVML_SUCCESS) {
		g->gpm_have_prev = false;
		prof_answered(g, r, GPU_PROF_GPM);
		return;
	}
	swap = g->gpm_prev;
	g->gpm_prev = g->gpm_cur;
	g->gpm_cur = swap;
	if (!g->gpm_have_prev) {
		g->gpm_have_prev = true;
		return;
	}
	memset(&mg, 0, sizeof(mg));
	mg.version = NVML_GPM_METRICS_GET_VERSION;
	mg.sample1 = g->gpm_cur; /* the previous tick's */
	mg.sample2 = g->gpm_prev;
	for (size_t k = 0; k < NVML_GPM_ASKED; k++) {
		if (g->prof_off & gpm_metrics[k].bit)
			continue;
		mg.metrics[n].metric_id = gpm_metrics[k].id;
		idx[n++] = k;
	}
	mg.num_metrics = n;
	r = NVML(c, gpm_metrics_get, &mg);
	if (!prof_answered(g, r, GPU_PROF_GPM))
		return;
	for (unsigned int i = 0; i < n; i++) {
		size_t k = idx[i];
		uint32_t *dst = (uint32_t *)(void *)((char *)out + gpm_metrics[k].offset);

		if (mg.metrics[i].nvml_return == NVML_SUCCESS) {
			if (pct100(mg.metrics[i].value, dst))
				out->prof_valid |= gpm_metrics[k].bit;
		} else if (mg.metrics[i].nvml_return == NVML_ERROR_NOT_SUPPORTED ||
			   mg.metrics[i].nvml_return == NVML_ERROR_INVALID_ARGUMENT) {
			g->prof_off |= gpm_metrics[k].bit;
		}
	}
}

void nvml_prof_sample(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_sample *out)
{
	read_gpm(c, g, out);
	read_prof_fields(c, g, out);
	read_viol_old(c, g, out);
	read_remapped_rows(c, g, out);
}

/*
 * Accounting mode's peak memory of each listed process (one call each):
 * NOT_FOUND for a process it has no record of; NOT_SUPPORTED means the
 * mode was turned off: not asked again.
 */
void nvml_proc_max_mem(struct nvml_ctx *c, struct nvml_gpu *g, struct gpu_proc *out, size_t n)
{
	if (!g->accounting || !wanted(g, GPU_PROC_MAX_MEM))
		return;
	for (size_t k = 0; k < n; k++) {
		struct nvml_accounting_stats st;
		nvml_return_t r;

		memset(&st, 0, sizeof(st));
		r = NVML(c, device_get_accounting_stats, g->handle, out[k].pid, &st);
		if (r == NVML_ERROR_NOT_FOUND)
			continue;
		if (!answered(g, r, GPU_PROC_MAX_MEM)) {
			if (!wanted(g, GPU_PROC_MAX_MEM))
				return;
			continue;
		}
		if (st.max_memory_usage == NVML_VALUE_NOT_AVAILABLE)
			continue;
		out[k].max_mem_bytes = st.max_memory_usage;
		out[k].valid |= GPU_PROC_MAX_MEM;
	}
}

/* Accounting mode on: each process's peak memory. */
static void gpu_accounting(struct nvml_ctx *c, struct nvml_gpu *g)
{
	int mode = 0;
	nvml_return_t r;

	if (!wanted(g, GPU_PROC_MAX_MEM) || g->info.mig_enabled)
		return;
	r = NVML(c, device_get_accounting_mode, g->handle, &mode);
	if (answered(g, r, GPU_PROC_MAX_MEM) && mode == NVML_FEATURE_ENABLED)
		g->accounting = true;
}

/*
 * GPM where the device has it: two sample buffers, the first sample at
 * the first tick.  A MIG device asks its GPU (GPM is the GPU's).
 */
static void gpu_gpm(struct nvml_ctx *c, struct nvml_gpu *g)
{
	struct nvml_gpm_support support = {.version = NVML_GPM_SUPPORT_VERSION};
	nvml_return_t r;

	if (g->info.mig ? !c->lib.gpm_mig_sample_get : !c->lib.gpm_sample_get)
		g->prof_off |= GPU_PROF_GPM;
	if (!prof_wanted(g, GPU_PROF_GPM))
		return;
	r = NVML(c, gpm_query_device_support, g->info.mig ? g->parent : g->handle, &support);
	if (!prof_answered(g, r, GPU_PROF_GPM) || !support.is_supported_device) {
		g->prof_off |= GPU_PROF_GPM;
		return;
	}
	r = NVML(c, gpm_sample_alloc, &g->gpm_prev);
	if (r != NVML_SUCCESS) {
		g->gpm_prev = NULL;
		g->prof_off |= GPU_PROF_GPM;
		return;
	}
	r = NVML(c, gpm_sample_alloc, &g->gpm_cur);
	if (r != NVML_SUCCESS) {
		NVML(c, gpm_sample_free, g->gpm_prev);
		g->gpm_prev = g->gpm_cur = NULL;
		g->prof_off |= GPU_PROF_GPM;
		return;
	}
	g->gpm = true;
}

void nvml_prof_release(struct nvml_ctx *c, struct nvml_gpu *g)
{
	if (!g->gpm)
		return;
	NVML(c, gpm_sample_free, g->gpm_prev);
	NVML(c, gpm_sample_free, g->gpm_cur);
	g->gpm = false;
}

void nvml_prof_open(struct nvml_ctx *c, struct nvml_gpu *g)
{
	gpu_accounting(c, g);
	gpu_gpm(c, g);
}
