/*
 * figures.c - host, job and GPU figures from a reading, the one before it
 * and the interval (figures.h): each counter's rule for going back is the
 * one common/counter.h names for it.
 */
#include "figures.h"

#include <math.h>

#include "common/counter.h"

void host_reading_of(const struct host_sample *h, struct host_reading *out)
{
	*out = (struct host_reading){
	    .valid = h->valid,
	    .mem_valid = h->mem.valid,
	    .cpu = h->cpu.total,
	    .mem_total_bytes = h->mem.total_bytes,
	    .mem_available_bytes = h->mem.available_bytes,
	    .load1_milli = h->load.load1_milli,
	    .disk_read_bytes = h->disk_read_bytes,
	    .disk_write_bytes = h->disk_write_bytes,
	    .net_rx_bytes = h->net_rx_bytes,
	    .net_tx_bytes = h->net_tx_bytes,
	    .psi_mem_some_valid = h->psi_mem.some_valid,
	    .psi_io_some_valid = h->psi_io.some_valid,
	    .psi_mem_some_us = h->psi_mem.some_total_us,
	    .psi_io_some_us = h->psi_io.some_total_us,
	};
}

/* A share (0-100) of a counter's growth over span in its unit; NAN when unknowable. */
static double share_pct(uint64_t a, uint64_t b, double span, enum counter_rule rule)
{
	double r = counter_rate(a, b, span, rule);

	return isnan(r) ? NAN : fmin(100.0, r * 100.0);
}

/* iowait's share of all of the CPU time ("busy" and "idle" as host.h defines them) */
static double iowait_pct(const struct cpu_times *c0, const struct cpu_times *c1)
{
	uint64_t t0 = cpu_busy_ms(c0) + cpu_idle_ms(c0), t1 = cpu_busy_ms(c1) + cpu_idle_ms(c1);

	if (t1 <= t0 || c1->idle_ms < c0->idle_ms || c1->iowait_ms < c0->iowait_ms)
		return NAN;
	return 100.0 * (double)(c1->iowait_ms - c0->iowait_ms) / (double)(t1 - t0);
}

void host_figures(const struct host_reading *cur, const struct host_reading *prev,
		  int64_t interval_ms, struct host_figures *out)
{
	uint32_t both = prev ? prev->valid & cur->valid : 0;
	double span_s = (double)interval_ms / 1000.0;
	bool rates = prev && interval_ms > 0;

	out->cpu_busy_pct = both & HOST_HAS_CPU ? cpu_busy_pct(&prev->cpu, &cur->cpu) : NAN;
	out->cpu_iowait_pct =
	    rates && (both & HOST_HAS_CPU) ? iowait_pct(&prev->cpu, &cur->cpu) : NAN;
	out->mem_used_bytes = (cur->valid & HOST_HAS_MEM) && (cur->mem_valid & MEMINFO_TOTAL) &&
				      (cur->mem_valid & MEMINFO_AVAILABLE) &&
				      cur->mem_total_bytes >= cur->mem_available_bytes
				  ? (double)(cur->mem_total_bytes - cur->mem_available_bytes)
				  : NAN;
	out->mem_used_pct = isnan(out->mem_used_bytes) || cur->mem_total_bytes == 0
				? NAN
				: 100.0 * out->mem_used_bytes / (double)cur->mem_total_bytes;
	out->load1 = cur->valid & HOST_HAS_LOAD ? cur->load1_milli / 1000.0 : NAN;
	out->disk_read_bps = out->disk_write_bps = NAN;
	out->net_rx_bps = out->net_tx_bps = out->net_bps = NAN;
	out->psi_mem_pct = out->psi_io_pct = NAN;
	if (!rates)
		return;
	if (both & HOST_HAS_DISK) {
		out->disk_read_bps = counter_rate(prev->disk_read_bytes, cur->disk_read_bytes,
						  span_s, COUNTER_RULE_HOST_IO);
		out->disk_write_bps = counter_rate(prev->disk_write_bytes, cur->disk_write_bytes,
						   span_s, COUNTER_RULE_HOST_IO);
	}
	if (both & HOST_HAS_NET) {
		out->net_rx_bps = counter_rate(prev->net_rx_bytes, cur->net_rx_bytes, span_s,
					       COUNTER_RULE_HOST_IO);
		out->net_tx_bps = counter_rate(prev->net_tx_bytes, cur->net_tx_bytes, span_s,
					       COUNTER_RULE_HOST_IO);
		out->net_bps = counter_rate(prev->net_rx_bytes + prev->net_tx_bytes,
					    cur->net_rx_bytes + cur->net_tx_bytes, span_s,
					    COUNTER_RULE_HOST_IO);
	}
	/* pressure totals are in µs: the share of the interval's µs */
	if ((both & HOST_HAS_PSI_MEM) && cur->psi_mem_some_valid)
		out->psi_mem_pct = share_pct(prev->psi_mem_some_us, cur->psi_mem_some_us,
					     span_s * 1e6, COUNTER_RULE_PSI);
	if ((both & HOST_HAS_PSI_IO) && cur->psi_io_some_valid)
		out->psi_io_pct = share_pct(prev->psi_io_some_us, cur->psi_io_some_us, span_s * 1e6,
					    COUNTER_RULE_PSI);
}

uint64_t proc_cpu_ms(const struct proc_sample *s)
{
	return s->user_ms + s->system_ms;
}

double proc_cpu_pct(uint64_t prev_cpu_ms, uint64_t cpu_ms, int64_t interval_ms)
{
	uint64_t d;

	if (interval_ms <= 0 || !counter_growth(prev_cpu_ms, cpu_ms, COUNTER_RULE_PROC_CPU, 0, &d))
		return NAN;
	return 100.0 * (double)d / (double)interval_ms;
}

uint64_t job_cpu_ms(const struct job_sample *s)
{
	uint64_t cpu = s->user_ms + s->system_ms;

	return (s->valid & JS_CG_CPU) && s->cg_cpu_ms > cpu ? s->cg_cpu_ms : cpu;
}

/* A counter's growth by its rule, as a double; NAN when the rule cannot say. */
static double growth(uint64_t before, uint64_t now, enum counter_rule rule)
{
	uint64_t d;

	return counter_growth(before, now, rule, 0, &d) ? (double)d : NAN;
}

/* A ms counter's growth per ms (cores), by COUNTER_RULE_JOB. */
static double per_ms(uint64_t before, uint64_t now, double span_s)
{
	return counter_rate(before, now, span_s, COUNTER_RULE_JOB) / 1000.0;
}

void job_figures(const struct job_sample *cur, const struct job_sample *prev, int64_t interval_ms,
		 struct job_figures *out)
{
	double span_s = (double)interval_ms / 1000.0;

	*out = (struct job_figures){NAN, NAN, NAN, NAN, NAN, NAN};
	if (!prev)
		return;
	out->proc_cpu_ms = growth(prev->user_ms + prev->system_ms, cur->user_ms + cur->system_ms,
				  COUNTER_RULE_JOB);
	if (interval_ms <= 0)
		return;
	out->cores = per_ms(job_cpu_ms(prev), job_cpu_ms(cur), span_s);
	out->proc_cores =
	    per_ms(prev->user_ms + prev->system_ms, cur->user_ms + cur->system_ms, span_s);
	if (prev->valid & cur->valid & JS_CPU_WAIT)
		out->wait_cores = per_ms(prev->cpu_wait_ms, cur->cpu_wait_ms, span_s);
	if (prev->valid & cur->valid & JS_IO) {
		out->read_bps =
		    counter_rate(prev->read_bytes, cur->read_bytes, span_s, COUNTER_RULE_JOB);
		out->write_bps =
		    counter_rate(prev->write_bytes, cur->write_bytes, span_s, COUNTER_RULE_JOB);
	}
}

const struct gpu_activity_kind gpu_activity_kinds[GPU_ACTIVITY__COUNT] = {
    [GPU_ACTIVITY_SM] = {GPU_PROF_SM_ACTIVE, "sm_active", "SM active"},
    [GPU_ACTIVITY_SM_OCCUPANCY] = {GPU_PROF_SM_OCCUPANCY, "sm_occupancy", "SM occupancy"},
    [GPU_ACTIVITY_TENSOR] = {GPU_PROF_TENSOR_ACTIVE, "tensor_active", "tensor active"},
    [GPU_ACTIVITY_DFMA_TENSOR] = {GPU_PROF_DFMA_TENSOR, "dfma_tensor_active", "DFMA tensor active"},
    [GPU_ACTIVITY_HMMA_TENSOR] = {GPU_PROF_HMMA_TENSOR, "hmma_tensor_active", "HMMA tensor active"},
    [GPU_ACTIVITY_IMMA_TENSOR] = {GPU_PROF_IMMA_TENSOR, "imma_tensor_active", "IMMA tensor active"},
    [GPU_ACTIVITY_DRAM] = {GPU_PROF_DRAM_ACTIVE, "dram_active", "DRAM active"},
    [GPU_ACTIVITY_FP64] = {GPU_PROF_FP64_ACTIVE, "fp64_active", "FP64 active"},
    [GPU_ACTIVITY_FP32] = {GPU_PROF_FP32_ACTIVE, "fp32_active", "FP32 active"},
    [GPU_ACTIVITY_FP16] = {GPU_PROF_FP16_ACTIVE, "fp16_active", "FP16 active"},
    [GPU_ACTIVITY_GR] = {GPU_PROF_GR_ACTIVE, "gr_active", "graphics engine active"},
};

double gpu_activity_pct(const struct gpu_sample *s, enum gpu_activity a)
{
	uint32_t v;

	if ((unsigned)a >= GPU_ACTIVITY__COUNT || !(s->prof_valid & gpu_activity_kinds[a].prof))
		return NAN;
	switch (a) {
	case GPU_ACTIVITY_SM:
		v = s->sm_active_pct100;
		break;
	case GPU_ACTIVITY_SM_OCCUPANCY:
		v = s->sm_occupancy_pct100;
		break;
	case GPU_ACTIVITY_TENSOR:
		v = s->tensor_active_pct100;
		break;
	case GPU_ACTIVITY_DFMA_TENSOR:
		v = s->dfma_tensor_active_pct100;
		break;
	case GPU_ACTIVITY_HMMA_TENSOR:
		v = s->hmma_tensor_active_pct100;
		break;
	case GPU_ACTIVITY_IMMA_TENSOR:
		v = s->imma_tensor_active_pct100;
		break;
	case GPU_ACTIVITY_DRAM:
		v = s->dram_active_pct100;
		break;
	case GPU_ACTIVITY_FP64:
		v = s->fp64_active_pct100;
		break;
	case GPU_ACTIVITY_FP32:
		v = s->fp32_active_pct100;
		break;
	case GPU_ACTIVITY_FP16:
		v = s->fp16_active_pct100;
		break;
	case GPU_ACTIVITY_GR:
		v = s->gr_active_pct100;
		break;
	default:
		return NAN;
	}
	/* a driver's rounding past 100 % is 100 % */
	return v > 10000 ? 100.0 : (double)v / 100.0;
}

const struct gpu_violation_kind gpu_violation_kinds[GPU_VIOLATION__COUNT] = {
    [GPU_VIOLATION_POWER] = {GPU_PROF_VIOL_POWER, "power", "power"},
    [GPU_VIOLATION_THERMAL] = {GPU_PROF_VIOL_THERMAL, "thermal", "thermal"},
    [GPU_VIOLATION_SYNC_BOOST] = {GPU_PROF_VIOL_SYNC_BOOST, "sync_boost", "sync boost"},
    [GPU_VIOLATION_BOARD_LIMIT] = {GPU_PROF_VIOL_BOARD_LIMIT, "board_limit", "board limit"},
    [GPU_VIOLATION_LOW_UTIL] = {GPU_PROF_VIOL_LOW_UTIL, "low_util", "low utilization"},
    [GPU_VIOLATION_RELIABILITY] = {GPU_PROF_VIOL_RELIABILITY, "reliability", "reliability"},
    [GPU_VIOLATION_APP_CLOCKS] = {GPU_PROF_VIOL_APP_CLOCKS, "app_clocks",
				  "below application clocks"},
    [GPU_VIOLATION_BASE_CLOCKS] = {GPU_PROF_VIOL_BASE_CLOCKS, "base_clocks", "below base clocks"},
    [GPU_VIOLATION_SW_THERMAL] = {GPU_PROF_VIOL_SW_THERMAL, "sw_thermal", "software thermal"},
    [GPU_VIOLATION_HW_THERMAL] = {GPU_PROF_VIOL_HW_THERMAL, "hw_thermal", "hardware thermal"},
    [GPU_VIOLATION_HW_POWER_BRAKE] = {GPU_PROF_VIOL_HW_POWER_BRAKE, "hw_power_brake",
				      "hardware power brake"},
};

uint64_t gpu_violation_ns(const struct gpu_sample *s, enum gpu_violation v)
{
	switch (v) {
	case GPU_VIOLATION_POWER:
		return s->viol_power_ns;
	case GPU_VIOLATION_THERMAL:
		return s->viol_thermal_ns;
	case GPU_VIOLATION_SYNC_BOOST:
		return s->viol_sync_boost_ns;
	case GPU_VIOLATION_BOARD_LIMIT:
		return s->viol_board_limit_ns;
	case GPU_VIOLATION_LOW_UTIL:
		return s->viol_low_util_ns;
	case GPU_VIOLATION_RELIABILITY:
		return s->viol_reliability_ns;
	case GPU_VIOLATION_APP_CLOCKS:
		return s->viol_app_clocks_ns;
	case GPU_VIOLATION_BASE_CLOCKS:
		return s->viol_base_clocks_ns;
	case GPU_VIOLATION_SW_THERMAL:
		return s->viol_sw_thermal_ns;
	case GPU_VIOLATION_HW_THERMAL:
		return s->viol_hw_thermal_ns;
	case GPU_VIOLATION_HW_POWER_BRAKE:
		return s->viol_hw_power_brake_ns;
	default:
		return 0;
	}
}

void gpu_figures(const struct gpu_sample *cur, const struct gpu_sample *prev, int64_t interval_ms,
		 struct gpu_figures *out)
{
	uint32_t both = prev ? prev->valid & cur->valid : 0;
	uint32_t prof_both = prev ? prev->prof_valid & cur->prof_valid : 0;
	double span_s = (double)interval_ms / 1000.0;

	*out = (struct gpu_figures){NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
	for (int a = 0; a < GPU_ACTIVITY__COUNT; a++)
		out->activity_pct[a] = prev ? gpu_activity_pct(cur, a) : NAN;
	for (int v = 0; v < GPU_VIOLATION__COUNT; v++) {
		uint64_t ns;

		out->throttle_s[v] = NAN;
		if ((prof_both & gpu_violation_kinds[v].prof) &&
		    counter_growth(gpu_violation_ns(prev, v), gpu_violation_ns(cur, v),
				   COUNTER_RULE_GPU_VIOL, 0, &ns))
			out->throttle_s[v] = (double)ns / 1e9;
	}
	if (both & GPU_NVLINK) {
		out->nvlink_rx_bytes =
		    growth(prev->nvlink_rx_bytes, cur->nvlink_rx_bytes, COUNTER_RULE_GPU_NVLINK);
		out->nvlink_tx_bytes =
		    growth(prev->nvlink_tx_bytes, cur->nvlink_tx_bytes, COUNTER_RULE_GPU_NVLINK);
		out->nvlink_rx_bps = counter_rate(prev->nvlink_rx_bytes, cur->nvlink_rx_bytes,
						  span_s, COUNTER_RULE_GPU_NVLINK);
		out->nvlink_tx_bps = counter_rate(prev->nvlink_tx_bytes, cur->nvlink_tx_bytes,
						  span_s, COUNTER_RULE_GPU_NVLINK);
		out->nvlink_bps = counter_rate(prev->nvlink_rx_bytes + prev->nvlink_tx_bytes,
					       cur->nvlink_rx_bytes + cur->nvlink_tx_bytes, span_s,
					       COUNTER_RULE_GPU_NVLINK);
	}
	if (both & GPU_ENERGY)
		out->energy_mj = growth(prev->energy_mj, cur->energy_mj, COUNTER_RULE_GPU_ENERGY);
	if (!prev)
		return;
	if (interval_ms > 0 && (both & GPU_PCIE)) {
		/* the same expressions the summary had: the same doubles */
		out->pcie_rx_bytes = (double)(prev->pcie_rx_bps + cur->pcie_rx_bps) / 2 * span_s;
		out->pcie_tx_bytes = (double)(prev->pcie_tx_bps + cur->pcie_tx_bps) / 2 * span_s;
	}
	if (interval_ms > 0 && (both & GPU_POWER))
		out->power_energy_mj = (double)(prev->power_mw + cur->power_mw) / 2 * span_s;
	if ((both & GPU_ENERGY) && cur->energy_mj >= prev->energy_mj)
		out->interval_energy_mj = (double)(cur->energy_mj - prev->energy_mj);
	else if (cur->valid & GPU_POWER)
		out->interval_energy_mj = cur->power_mw * (double)interval_ms / 1000.0;
}
