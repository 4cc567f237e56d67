/*
 * gpu_list.c - `jobscope gpus`: the GPUs of a gpu_set, their driver and
 * library, and which metrics each supports, as text or one JSON object
 * (gpu_list.h).
 */
#include "report/gpu_list.h"

#include "common/fmt.h"
#include "common/jsonw.h"
#include "sample/gpu/gpu_set.h"

static const struct {
	unsigned bit;
	const char *name;
} metric_names[] = {
    {GPU_UTIL, "util"},
    {GPU_MEM_UTIL, "mem_util"},
    {GPU_MEM_USED, "mem_used"},
    {GPU_PCIE, "pcie"},
    {GPU_NVLINK, "nvlink"},
    {GPU_POWER, "power"},
    {GPU_ENERGY, "energy"},
    {GPU_TEMP, "temperature"},
    {GPU_SM_CLOCK, "sm_clock"},
    {GPU_MEM_CLOCK, "mem_clock"},
    {GPU_THROTTLE, "throttle_reasons"},
    {GPU_ECC, "ecc"},
    {GPU_PROC_MEM, "process_memory"},
    {GPU_PROC_UTIL, "process_util"},
    {GPU_EVENTS, "events"},
    {GPU_PROC_MAX_MEM, "process_max_memory"},
};

/* enum gpu_prof: what the SMs did (GPM) and what held them back */
static const struct {
	unsigned bit;
	const char *name;
} prof_names[] = {
    {GPU_PROF_GR_ACTIVE, "gr_active"},
    {GPU_PROF_SM_ACTIVE, "sm_active"},
    {GPU_PROF_SM_OCCUPANCY, "sm_occupancy"},
    {GPU_PROF_TENSOR_ACTIVE, "tensor_active"},
    {GPU_PROF_DFMA_TENSOR, "dfma_tensor_active"},
    {GPU_PROF_HMMA_TENSOR, "hmma_tensor_active"},
    {GPU_PROF_IMMA_TENSOR, "imma_tensor_active"},
    {GPU_PROF_DRAM_ACTIVE, "dram_active"},
    {GPU_PROF_FP64_ACTIVE, "fp64_active"},
    {GPU_PROF_FP32_ACTIVE, "fp32_active"},
    {GPU_PROF_FP16_ACTIVE, "fp16_active"},
    {GPU_PROF_VIOL_POWER, "throttle_power"},
    {GPU_PROF_VIOL_THERMAL, "throttle_thermal"},
    {GPU_PROF_VIOL_SYNC_BOOST, "throttle_sync_boost"},
    {GPU_PROF_VIOL_BOARD_LIMIT, "throttle_board_limit"},
    {GPU_PROF_VIOL_LOW_UTIL, "throttle_low_util"},
    {GPU_PROF_VIOL_RELIABILITY, "throttle_reliability"},
    {GPU_PROF_VIOL_APP_CLOCKS, "throttle_app_clocks"},
    {GPU_PROF_VIOL_BASE_CLOCKS, "throttle_base_clocks"},
    {GPU_PROF_VIOL_SW_THERMAL, "throttle_sw_thermal"},
    {GPU_PROF_VIOL_HW_THERMAL, "throttle_hw_thermal"},
    {GPU_PROF_VIOL_HW_POWER_BRAKE, "throttle_hw_power_brake"},
    {GPU_PROF_PCIE_REPLAY, "pcie_replays"},
    {GPU_PROF_REMAPPED_ROWS, "remapped_rows"},
};

#define NAMES(a) (sizeof(a) / sizeof((a)[0]))

/* How many MIG devices of the GPU at position i follow it. */
static int mig_count(const struct gpu_set *set, int i)
{
	int n = 0;

	for (int k = i + 1; k < set->ndevices && set->dev[k].info.mig; k++)
		n += set->dev[k].info.mig_parent == i;
	return n;
}

static const char *driver_of(const struct gpu_set *set, const struct gpu_dev *d)
{
	for (int i = 0; i < set->nopened; i++)
		if (set->opened[i].backend == d->backend)
			return set->opened[i].driver;
	return "";
}

void gpu_list_json(const struct gpu_set *set, struct strbuf *out)
{
	struct jsonw w;

	jsonw_init(&w, out, true);
	jsonw_obj_begin(&w);
	jsonw_key(&w, "libraries");
	jsonw_arr_begin(&w);
	for (int i = 0; i < set->nopened; i++) {
		const struct gpu_opened *o = &set->opened[i];

		jsonw_obj_begin(&w);
		jsonw_kv_str(&w, "backend", o->backend->name);
		jsonw_kv_str(&w, "vendor", o->backend->vendor);
		jsonw_kv_str_opt(&w, "driver_version", o->driver[0] ? o->driver : NULL);
		jsonw_kv_str_opt(&w, "library_version", o->library[0] ? o->library : NULL);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_key(&w, "vendors");
	jsonw_arr_begin(&w);
	for (int i = 0; i < set->nvendors; i++) {
		const struct gpu_vendor *v = &set->vendor[i];
		char line[512];

		gpu_vendor_describe(v, line, sizeof(line));
		jsonw_obj_begin(&w);
		jsonw_kv_str(&w, "vendor", v->backend->vendor);
		jsonw_kv_str(&w, "backend", v->backend->name);
		jsonw_kv_str_opt(&w, "library", v->note.library[0] ? v->note.library : NULL);
		jsonw_kv_str(&w, "state", gpu_lib_state_name(v->note.state));
		jsonw_kv_int(&w, "gpu_count", v->ndevices - v->nmig);
		jsonw_kv_int(&w, "mig_device_count", v->nmig);
		jsonw_kv_str_opt(&w, "detail", v->note.detail[0] ? v->note.detail : NULL);
		jsonw_kv_str(&w, "summary", line);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_key(&w, "gpus");
	jsonw_arr_begin(&w);
	for (int i = 0; i < set->ndevices; i++) {
		const struct gpu_dev *d = &set->dev[i];
		const struct gpu_device_info *g = &d->info;

		jsonw_obj_begin(&w);
		jsonw_kv_int(&w, "index", g->index);
		jsonw_kv_str(&w, "vendor", d->backend->vendor);
		jsonw_kv_str(&w, "uuid", g->uuid);
		jsonw_kv_str(&w, "name", g->name);
		jsonw_kv_str(&w, "pci_bus_id", g->pci_bus_id);
		jsonw_kv_int_opt(&w, "mem_total_bytes", g->valid & GPU_INFO_MEM_TOTAL,
				 (int64_t)g->mem_total_bytes);
		jsonw_kv_int_opt(&w, "power_limit_mw", g->valid & GPU_INFO_POWER_LIMIT,
				 g->power_limit_mw);
		jsonw_kv_int_opt(&w, "nvlink_count", g->valid & GPU_INFO_NVLINKS, g->nvlink_count);
		jsonw_kv_str(&w, "driver_version", driver_of(set, d));
		jsonw_key(&w, "supported");
		jsonw_arr_begin(&w);
		for (size_t k = 0; k < NAMES(metric_names); k++)
			if (g->supported & metric_names[k].bit)
				jsonw_str(&w, metric_names[k].name);
		jsonw_arr_end(&w);
		jsonw_key(&w, "profiling");
		jsonw_arr_begin(&w);
		for (size_t k = 0; k < NAMES(prof_names); k++)
			if (g->prof_supported & prof_names[k].bit)
				jsonw_str(&w, prof_names[k].name);
		jsonw_arr_end(&w);
		jsonw_kv_bool(&w, "mig", g->mig);
		if (g->mig) {
			const struct gpu_dev *p =
			    g->mig_parent >= 0 ? &set->dev[g->mig_parent] : NULL;

			jsonw_kv_int_opt(&w, "mig_parent", p != NULL, g->mig_parent);
			jsonw_kv_str_opt(&w, "mig_parent_uuid", p ? p->info.uuid : NULL);
			jsonw_kv_int(&w, "gpu_instance_id", g->gpu_instance_id);
			jsonw_kv_int(&w, "compute_instance_id", g->compute_instance_id);
			jsonw_kv_str_opt(&w, "mig_profile",
					 g->mig_profile[0] ? g->mig_profile : NULL);
		} else {
			jsonw_kv_bool(&w, "mig_mode", g->mig_enabled);
			jsonw_kv_int(&w, "mig_devices", mig_count(set, i));
		}
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	strbuf_addch(out, '\n');
}

void gpu_list_text(const struct gpu_set *set, struct strbuf *out)
{
	char mem[16];

	if (set->ndevices == 0)
		strbuf_addstr(out, "no GPUs found\n");
	/* each vendor: its library, and its GPUs or why there are none */
	for (int i = 0; i < set->nvendors; i++) {
		char line[512];

		gpu_vendor_describe(&set->vendor[i], line, sizeof(line));
		strbuf_addf(out, "%s: %s\n", set->vendor[i].backend->vendor, line);
	}
	if (set->ndevices == 0)
		return;
	for (int i = 0; i < set->nopened; i++)
		strbuf_addf(out, "%s %s: driver %s, library %s\n", set->opened[i].backend->vendor,
			    set->opened[i].backend->name,
			    set->opened[i].driver[0] ? set->opened[i].driver : "unknown",
			    set->opened[i].library[0] ? set->opened[i].library : "unknown");
	for (int i = 0; i < set->ndevices; i++) {
		const struct gpu_device_info *g = &set->dev[i].info;
		bool any = false;

		if (g->mig)
			strbuf_addf(
			    out, "\nGPU %d MIG %s (GPU instance %u, compute instance %u)  %s  %s\n",
			    g->index, g->mig_profile[0] ? g->mig_profile : "?", g->gpu_instance_id,
			    g->compute_instance_id, g->name, g->uuid);
		else
			strbuf_addf(out, "\nGPU %d  %s  %s\n", g->index, g->name, g->uuid);
		if (g->mig_enabled)
			strbuf_addf(out, "  MIG mode: %d MIG devices follow\n", mig_count(set, i));
		strbuf_addf(out, "  bus %s", g->pci_bus_id);
		if (g->valid & GPU_INFO_MEM_TOTAL)
			strbuf_addf(out, ", memory %s",
				    fmt_bytes(mem, sizeof(mem), g->mem_total_bytes));
		if (g->valid & GPU_INFO_POWER_LIMIT)
			strbuf_addf(out, ", power limit %.0f W", g->power_limit_mw / 1000.0);
		if (g->valid & GPU_INFO_NVLINKS)
			strbuf_addf(out, ", %u NVLink links", g->nvlink_count);
		strbuf_addstr(out, "\n  metrics:");
		for (size_t k = 0; k < NAMES(metric_names); k++)
			if (g->supported & metric_names[k].bit)
				strbuf_addf(out, " %s", metric_names[k].name);
		strbuf_addstr(out, "\n  missing:");
		for (size_t k = 0; k < NAMES(metric_names); k++)
			if (!(g->supported & metric_names[k].bit))
				strbuf_addf(out, " %s", metric_names[k].name);
		strbuf_addstr(out, "\n  profiling:");
		for (size_t k = 0; k < NAMES(prof_names); k++) {
			if (!(g->prof_supported & prof_names[k].bit))
				continue;
			strbuf_addf(out, " %s", prof_names[k].name);
			any = true;
		}
		if (!any)
			strbuf_addstr(out, " none");
		strbuf_addch(out, '\n');
	}
}
