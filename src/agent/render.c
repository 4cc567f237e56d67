/*
 * render.c - the agent's HTTP bodies: Prometheus text (format 0.0.4) and
 * the JSON of /api/v1/{node,gpus,jobs/KEY} and of each live job, rendered
 * once per tick by the sampler into a view that is then swapped in
 * (routes.c serves it, and merges the live jobs into /api/v1/jobs' pages
 * of the store), and the same object for a job the store holds.
 *
 * Metric names: prefix jobscope_, base units in the name (_bytes,
 * _seconds_total, _watts, _joules_total, _percent for 0-100), HELP and
 * TYPE for each family, and no series at all for a missing value.  Per-job
 * series exist only for live jobs, so their number follows the jobs
 * running now, not every job ever seen.  docs/metrics.md lists them.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "prom/expo.h"
#include "prom/families.h"
#include "prom/remote_write.h"
#include "sample/figures.h"
#include "store/queries.h"
#include "store/reader.h"
#include "store/upkeep.h"

/* ---- Prometheus text ---- */

/* name{labels} value — labels is "" or already "k=\"v\",..." */
static void prom_sample(struct strbuf *o, const char *name, const char *labels, double v)
{
	if (isnan(v))
		return;
	strbuf_addstr(o, name);
	if (labels && *labels)
		strbuf_addf(o, "{%s}", labels);
	strbuf_addch(o, ' ');
	prom_value(o, v);
	strbuf_addch(o, '\n');
}

static void job_labels(struct strbuf *o, const struct job_entry *j)
{
	strbuf_reset(o);
	strbuf_addstr(o, "job_id=\"");
	prom_label_value(o, j->rec.job_id);
	strbuf_addstr(o, "\",scheduler=\"");
	prom_label_value(o, j->rec.scheduler);
	strbuf_addstr(o, "\",user=\"");
	prom_label_value(o, j->rec.user);
	strbuf_addch(o, '"');
	/* a pod its bundles named (attrib/k8s.h): Kubernetes' own label names */
	if (j->k8s.pod[0]) {
		strbuf_addstr(o, ",namespace=\"");
		prom_label_value(o, j->k8s.namespace_);
		strbuf_addstr(o, "\",pod=\"");
		prom_label_value(o, j->k8s.pod);
		strbuf_addch(o, '"');
	}
}

/*
 * gpu (the vendor's index; a MIG instance's parent's), uuid (a MIG
 * instance's own), and for a MIG instance its GPU and compute instance IDs
 * and profile.
 */
static void gpu_labels(struct strbuf *o, const struct device_record *d, bool append)
{
	if (!append)
		strbuf_reset(o);
	else
		strbuf_addch(o, ',');
	strbuf_addf(o, "gpu=\"%d\",uuid=\"", d->info.index);
	prom_label_value(o, d->info.uuid);
	strbuf_addch(o, '"');
	if (d->info.mig) {
		strbuf_addf(o,
			    ",gpu_instance_id=\"%" PRIu32 "\",compute_instance_id=\"%" PRIu32
			    "\",mig_profile=\"",
			    d->info.gpu_instance_id, d->info.compute_instance_id);
		prom_label_value(o, d->info.mig_profile);
		strbuf_addch(o, '"');
	}
}

/* A GPM figure of a sample (percent x 100) / div, NAN when the driver gave none. */
double agent_prof_value(const struct gpu_sample *g, uint32_t bit, double div)
{
	/* figures.c reads the field; its percent x 100 is an integer again, exactly */
	for (int a = 0; a < GPU_ACTIVITY__COUNT; a++)
		if (gpu_activity_kinds[a].prof == bit)
			return round(gpu_activity_pct(g, (enum gpu_activity)a) * 100.0) / div;
	return NAN;
}

const struct agent_viol_reason agent_viol_reasons[AGENT_VIOL_REASONS] = {
    {GPU_PROF_VIOL_POWER, "power", "DCGM_FI_DEV_POWER_VIOLATION",
     "Throttling duration due to power constraints (in ns)."},
    {GPU_PROF_VIOL_THERMAL, "thermal", "DCGM_FI_DEV_THERMAL_VIOLATION",
     "Throttling duration due to thermal constraints (in ns)."},
    {GPU_PROF_VIOL_SYNC_BOOST, "sync_boost", "DCGM_FI_DEV_SYNC_BOOST_VIOLATION",
     "Throttling duration due to sync-boost constraints (in ns)."},
    {GPU_PROF_VIOL_BOARD_LIMIT, "board_limit", "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION",
     "Throttling duration due to board limit constraints (in ns)."},
    {GPU_PROF_VIOL_LOW_UTIL, "low_util", "DCGM_FI_DEV_LOW_UTIL_VIOLATION",
     "Throttling duration due to low utilization (in ns)."},
    {GPU_PROF_VIOL_RELIABILITY, "reliability", "DCGM_FI_DEV_RELIABILITY_VIOLATION",
     "Throttling duration due to reliability constraints (in ns)."},
    {GPU_PROF_VIOL_APP_CLOCKS, "app_clocks", "DCGM_FI_DEV_TOTAL_APP_CLOCKS_VIOLATION",
     "Throttling duration below the application clocks (in ns)."},
    {GPU_PROF_VIOL_BASE_CLOCKS, "base_clocks", "DCGM_FI_DEV_TOTAL_BASE_CLOCKS_VIOLATION",
     "Throttling duration below the base clocks (in ns)."},
    {GPU_PROF_VIOL_SW_THERMAL, "sw_thermal", "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN_NS",
     "Throttling duration due to software thermal slowdown (in ns)."},
    {GPU_PROF_VIOL_HW_THERMAL, "hw_thermal", "DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN_NS",
     "Throttling duration due to hardware thermal slowdown (in ns)."},
    {GPU_PROF_VIOL_HW_POWER_BRAKE, "hw_power_brake",
     "DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN_NS",
     "Throttling duration due to the external power brake (in ns)."},
};

/* A violation counter of a sample, ns, or -1 when the driver gave none. */
int64_t agent_viol_ns(const struct gpu_sample *g, uint32_t bit)
{
	if (!(g->prof_valid & bit))
		return -1;
	for (int v = 0; v < GPU_VIOLATION__COUNT; v++)
		if (gpu_violation_kinds[v].prof == bit) {
			uint64_t ns = gpu_violation_ns(g, (enum gpu_violation)v);

			return ns > INT64_MAX ? INT64_MAX : (int64_t)ns;
		}
	return -1;
}

static double cpu_s(uint64_t ms)
{
	return (double)ms / 1000.0;
}

static void render_host_metrics(const struct agent *a, struct strbuf *o)
{
	const struct host_sample *h = a->host;
	const struct cpu_times *c = &h->cpu.total;
	static const char *const modes[] = {"user",   "nice", "system",	 "idle",
					    "iowait", "irq",  "softirq", "steal"};
	const uint64_t vals[] = {c->user_ms,   c->nice_ms, c->system_ms,  c->idle_ms,
				 c->iowait_ms, c->irq_ms,  c->softirq_ms, c->steal_ms};
	char lab[64];

	if (!a->host_ok)
		return;
	if (h->valid & HOST_HAS_CPU) {
		prom_family_head(o, PF_NODE_CPU_SECONDS);
		for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
			snprintf(lab, sizeof(lab), "mode=\"%s\"", modes[i]);
			prom_sample(o, prom_fam_name(PF_NODE_CPU_SECONDS), lab, cpu_s(vals[i]));
		}
		prom_family_head(o, PF_NODE_CPUS);
		prom_sample(o, prom_fam_name(PF_NODE_CPUS), "", host_online_cpus(h));
	}
	if (h->mem.valid & MEMINFO_TOTAL) {
		prom_family_head(o, PF_NODE_MEMORY_TOTAL);
		prom_sample(o, prom_fam_name(PF_NODE_MEMORY_TOTAL), "", (double)h->mem.total_bytes);
	}
	if (h->mem.valid & MEMINFO_AVAILABLE) {
		prom_family_head(o, PF_NODE_MEMORY_AVAILABLE);
		prom_sample(o, prom_fam_name(PF_NODE_MEMORY_AVAILABLE), "",
			    (double)h->mem.available_bytes);
	}
	if ((h->mem.valid & MEMINFO_SWAP_TOTAL) && (h->mem.valid & MEMINFO_SWAP_FREE)) {
		prom_family_head(o, PF_NODE_SWAP_USED);
		prom_sample(o, prom_fam_name(PF_NODE_SWAP_USED), "",
			    (double)(h->mem.swap_total_bytes - h->mem.swap_free_bytes));
	}
	if (h->valid & HOST_HAS_LOAD) {
		prom_family_head(o, PF_NODE_LOAD1);
		prom_sample(o, prom_fam_name(PF_NODE_LOAD1), "", h->load.load1_milli / 1000.0);
	}
	if (h->valid & HOST_HAS_DISK) {
		prom_family_head(o, PF_NODE_DISK_READ);
		prom_sample(o, prom_fam_name(PF_NODE_DISK_READ), "", (double)h->disk_read_bytes);
		prom_family_head(o, PF_NODE_DISK_WRITTEN);
		prom_sample(o, prom_fam_name(PF_NODE_DISK_WRITTEN), "",
			    (double)h->disk_write_bytes);
	}
	if (h->valid & HOST_HAS_NET) {
		prom_family_head(o, PF_NODE_NET_RX);
		prom_sample(o, prom_fam_name(PF_NODE_NET_RX), "", (double)h->net_rx_bytes);
		prom_family_head(o, PF_NODE_NET_TX);
		prom_sample(o, prom_fam_name(PF_NODE_NET_TX), "", (double)h->net_tx_bytes);
	}
	if (h->valid & HOST_HAS_PSI_MEM && h->psi_mem.some_valid) {
		prom_family_head(o, PF_NODE_PSI_MEMORY);
		prom_sample(o, prom_fam_name(PF_NODE_PSI_MEMORY), "",
			    (double)h->psi_mem.some_total_us / 1e6);
	}
	prom_family_head(o, PF_NODE_PROCESSES);
	prom_sample(o, prom_fam_name(PF_NODE_PROCESSES), "", (double)a->pt.system_processes);
}

static void render_gpu_metrics(const struct agent *a, struct strbuf *o, struct strbuf *lab)
{
	static const struct {
		enum prom_fam id;
		uint32_t bit;
	} fam[] = {
	    {PF_GPU_UTIL, GPU_UTIL},	 {PF_GPU_MEMORY_USED, GPU_MEM_USED},
	    {PF_GPU_MEMORY_TOTAL, 0},	 {PF_GPU_POWER, GPU_POWER},
	    {PF_GPU_ENERGY, GPU_ENERGY}, {PF_GPU_TEMPERATURE, GPU_TEMP},
	    {PF_GPU_PCIE_RX, GPU_PCIE},	 {PF_GPU_PCIE_TX, GPU_PCIE},
	};

	if (a->gpus.ndevices == 0)
		return;
	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		bool any = false;

		for (int i = 0; i < a->gpus.ndevices; i++) {
			const struct gpu_sample *g = &a->gsample[i];
			const struct device_record *d = &a->devs[i];
			double v = NAN;

			if (!a->gsample_ok[i] || (fam[f].bit && !(g->valid & fam[f].bit)))
				continue;
			switch (f) {
			case 0:
				v = g->util_pct;
				break;
			case 1:
				v = (double)g->mem_used_bytes;
				break;
			case 2:
				v = d->info.mem_total_bytes ? (double)d->info.mem_total_bytes : NAN;
				break;
			case 3:
				v = g->power_mw / 1000.0;
				break;
			case 4:
				v = (double)g->energy_mj / 1000.0;
				break;
			case 5:
				v = g->temp_c;
				break;
			case 6:
				v = (double)g->pcie_rx_bps;
				break;
			case 7:
				v = (double)g->pcie_tx_bps;
				break;
			default:
				break;
			}
			if (isnan(v))
				continue;
			if (!any)
				prom_family_head(o, fam[f].id);
			any = true;
			gpu_labels(lab, d, false);
			prom_sample(o, prom_fam_name(fam[f].id), lab->buf, v);
		}
	}
}

/* The GPM figures: each device's, and each job's part (render_job_metrics). */
static const struct {
	enum prom_fam id, job_id; /* job_id PF__COUNT: no per-job family */
	uint32_t bit;
} gpm_fam[] = {
    {PF_GPU_GR_ACTIVE, PF_JOB_GPU_GR_ACTIVE, GPU_PROF_GR_ACTIVE},
    {PF_GPU_SM_ACTIVE, PF_JOB_GPU_SM_ACTIVE, GPU_PROF_SM_ACTIVE},
    {PF_GPU_SM_OCCUPANCY, PF_JOB_GPU_SM_OCCUPANCY, GPU_PROF_SM_OCCUPANCY},
    {PF_GPU_TENSOR_ACTIVE, PF_JOB_GPU_TENSOR_ACTIVE, GPU_PROF_TENSOR_ACTIVE},
    {PF_GPU_DFMA_TENSOR_ACTIVE, PF__COUNT, GPU_PROF_DFMA_TENSOR},
    {PF_GPU_HMMA_TENSOR_ACTIVE, PF__COUNT, GPU_PROF_HMMA_TENSOR},
    {PF_GPU_IMMA_TENSOR_ACTIVE, PF__COUNT, GPU_PROF_IMMA_TENSOR},
    {PF_GPU_DRAM_ACTIVE, PF_JOB_GPU_DRAM_ACTIVE, GPU_PROF_DRAM_ACTIVE},
    {PF_GPU_FP64_ACTIVE, PF_JOB_GPU_FP64_ACTIVE, GPU_PROF_FP64_ACTIVE},
    {PF_GPU_FP32_ACTIVE, PF_JOB_GPU_FP32_ACTIVE, GPU_PROF_FP32_ACTIVE},
    {PF_GPU_FP16_ACTIVE, PF_JOB_GPU_FP16_ACTIVE, GPU_PROF_FP16_ACTIVE},
};
#define NGPM (sizeof(gpm_fam) / sizeof(gpm_fam[0]))

/*
 * What the SMs did and what held the GPU back: the GPM figures (percent),
 * the violation counters (seconds, by reason), PCIe replays and remapped
 * rows; only what the driver gave, per device (a MIG instance's own).
 */
static void render_gpu_prof_metrics(const struct agent *a, struct strbuf *o, struct strbuf *lab)
{
	int n = a->gpus.ndevices < GPU_MAX_DEVICES ? a->gpus.ndevices : GPU_MAX_DEVICES;

	for (size_t f = 0; f < NGPM; f++) {
		bool any = false;

		for (int i = 0; i < n; i++) {
			double v = a->gsample_ok[i]
				       ? agent_prof_value(&a->gsample[i], gpm_fam[f].bit, 100)
				       : NAN;

			if (isnan(v))
				continue;
			if (!any)
				prom_family_head(o, gpm_fam[f].id);
			any = true;
			gpu_labels(lab, &a->devs[i], false);
			prom_sample(o, prom_fam_name(gpm_fam[f].id), lab->buf, v);
		}
	}
	{
		bool any = false;

		for (int i = 0; i < n; i++) {
			for (int r = 0; r < AGENT_VIOL_REASONS; r++) {
				int64_t ns =
				    a->gsample_ok[i]
					? agent_viol_ns(&a->gsample[i], agent_viol_reasons[r].bit)
					: -1;

				if (ns < 0)
					continue;
				if (!any)
					prom_family_head(o, PF_GPU_THROTTLE);
				any = true;
				gpu_labels(lab, &a->devs[i], false);
				strbuf_addf(lab, ",reason=\"%s\"", agent_viol_reasons[r].reason);
				prom_sample(o, prom_fam_name(PF_GPU_THROTTLE), lab->buf, ns / 1e9);
			}
		}
	}
	for (int f = 0; f < 4; f++) {
		static const enum prom_fam fams[] = {PF_GPU_PCIE_REPLAYS, PF_GPU_REMAPPED_ROWS,
						     PF_GPU_ROW_REMAP_PENDING,
						     PF_GPU_ROW_REMAP_FAILED};
		bool any = false;

		for (int i = 0; i < n; i++) {
			const struct gpu_sample *g = &a->gsample[i];
			uint32_t bit = f == 0 ? GPU_PROF_PCIE_REPLAY : GPU_PROF_REMAPPED_ROWS;

			if (!a->gsample_ok[i] || !(g->prof_valid & bit))
				continue;
			if (!any)
				prom_family_head(o, fams[f]);
			any = true;
			gpu_labels(lab, &a->devs[i], false);
			if (f == 0) {
				prom_sample(o, prom_fam_name(fams[f]), lab->buf,
					    (double)g->pcie_replays);
			} else if (f == 1) {
				strbuf_addstr(lab, ",error=\"correctable\"");
				prom_sample(o, prom_fam_name(fams[f]), lab->buf,
					    (double)g->remapped_rows_corr);
				gpu_labels(lab, &a->devs[i], false);
				strbuf_addstr(lab, ",error=\"uncorrectable\"");
				prom_sample(o, prom_fam_name(fams[f]), lab->buf,
					    (double)g->remapped_rows_unc);
			} else {
				prom_sample(o, prom_fam_name(fams[f]), lab->buf,
					    f == 2 ? g->remap_pending != 0 : g->remap_failed != 0);
			}
		}
	}
}

static void render_job_metrics(const struct agent *a, struct strbuf *o, struct strbuf *lab)
{
	static const enum prom_fam fams[] = {
	    PF_JOB_CPU_SECONDS,	  PF_JOB_CPU_CORES,	PF_JOB_MEMORY_RSS,
	    PF_JOB_SWAP,	  PF_JOB_READ,		PF_JOB_WRITTEN,
	    PF_JOB_PROCESSES,	  PF_JOB_RESERVED_CPUS, PF_JOB_RESERVED_MEMORY,
	    PF_JOB_RESERVED_GPUS, PF_JOB_CGROUP_MEMORY, PF_JOB_START_TIME,
	};
	size_t nf = sizeof(fams) / sizeof(fams[0]);

	for (size_t f = 0; f < nf; f++) {
		bool any = false;

		for (size_t k = 0; k < a->jobs.njobs; k++) {
			const struct job_entry *j = &a->jobs.job[k];
			const struct job_sample *s = &j->js;
			double v = NAN;

			if (!j->live)
				continue;
			switch (f) {
			case 0:
				v = cpu_s(jobs_cpu_ms(s));
				break;
			case 1:
				v = j->has_rate ? j->cpu_cores : NAN;
				break;
			case 2:
				v = (double)s->rss_bytes;
				break;
			case 3:
				v = s->valid & JS_SWAP ? (double)s->swap_bytes : NAN;
				break;
			case 4:
				v = s->valid & JS_IO ? (double)s->read_bytes : NAN;
				break;
			case 5:
				v = s->valid & JS_IO ? (double)s->write_bytes : NAN;
				break;
			case 6:
				v = s->nprocs;
				break;
			case 7:
				v = j->rec.reserved_cpus > 0 ? j->rec.reserved_cpus : NAN;
				break;
			case 8:
				v = j->rec.reserved_mem_bytes ? (double)j->rec.reserved_mem_bytes
							      : NAN;
				break;
			case 9:
				v = j->rec.has_reserved_gpus ? j->rec.reserved_gpus : NAN;
				break;
			case 10:
				v = s->valid & JS_CG_MEM ? (double)s->cg_mem_bytes : NAN;
				break;
			case 11:
				v = (double)j->rec.start_ms / 1000.0;
				break;
			default:
				break;
			}
			if (isnan(v))
				continue;
			if (!any)
				prom_family_head(o, fams[f]);
			any = true;
			job_labels(lab, j);
			prom_sample(o, prom_fam_name(fams[f]), lab->buf, v);
		}
	}
	/* each live job's part of the GPM figures of each GPU it is on now */
	for (size_t f = 0; f < NGPM; f++) {
		bool any = false;

		if (gpm_fam[f].job_id == PF__COUNT)
			continue;
		for (size_t k = 0; k < a->jobs.njobs; k++) {
			const struct job_entry *j = &a->jobs.job[k];

			if (!j->live)
				continue;
			for (int i = 0; i < a->gpus.ndevices && i < GPU_MAX_DEVICES; i++) {
				const struct job_gpu_use *u = &j->gpu[i];
				double v;

				if (!u->now || !u->has_share || !a->gsample_ok[i])
					continue;
				v = agent_prof_value(&a->gsample[i], gpm_fam[f].bit, 100);
				if (isnan(v))
					continue;
				if (!any)
					prom_family_head(o, gpm_fam[f].job_id);
				any = true;
				job_labels(lab, j);
				gpu_labels(lab, &a->devs[i], true);
				prom_sample(o, prom_fam_name(gpm_fam[f].job_id), lab->buf,
					    u->share * v);
			}
		}
	}
	/* each live job on each GPU it is on now (its energy: on every GPU it used) */
	for (int f = 0; f < 3; f++) {
		static const enum prom_fam gfams[] = {PF_JOB_GPU_MEMORY, PF_JOB_GPU_SM_UTIL,
						      PF_JOB_GPU_ENERGY};
		bool any = false;

		for (size_t k = 0; k < a->jobs.njobs; k++) {
			const struct job_entry *j = &a->jobs.job[k];

			if (!j->live)
				continue;
			for (int i = 0; i < a->gpus.ndevices && i < GPU_MAX_DEVICES; i++) {
				const struct job_gpu_use *u = &j->gpu[i];
				double v = NAN;

				if (f == 0 && u->now && u->has_mem)
					v = (double)u->mem_bytes;
				else if (f == 1 && u->now && u->has_util)
					v = u->sm_util_pct > 100 ? 100 : u->sm_util_pct;
				else if (f == 2 && u->used)
					v = u->energy_mj / 1000.0;
				if (isnan(v))
					continue;
				if (!any)
					prom_family_head(o, gfams[f]);
				any = true;
				job_labels(lab, j);
				gpu_labels(lab, &a->devs[i], true);
				prom_sample(o, prom_fam_name(gfams[f]), lab->buf, v);
			}
		}
	}
}

/* Each --remote-write target's state, read once (docs/remote-write.md "Status"). */
static void render_rw_metrics(const struct agent *a, struct strbuf *o)
{
	static const enum prom_fam fams[] = {PF_AGENT_RW_PENDING, PF_AGENT_RW_FAILURES,
					     PF_AGENT_RW_UP, PF_AGENT_RW_REFUSED};
	struct rw_stats rs[RW_MAX_TARGETS];
	int n = rw_targets(a->rw);
	struct strbuf lab;

	if (n == 0)
		return;
	for (int i = 0; i < n; i++)
		rw_get_stats(a->rw, i, &rs[i]);
	strbuf_init(&lab, 0);
	for (int f = 0; f < 4; f++) {
		prom_family_head(o, fams[f]);
		for (int i = 0; i < n; i++) {
			double v;

			if (f == 0 && rs[i].ship.acked_seq < 0)
				continue; /* its cursor not read yet */
			if (f == 0)
				v = (double)(rs[i].ship.max_seq > rs[i].ship.acked_seq
						 ? rs[i].ship.max_seq - rs[i].ship.acked_seq
						 : 0);
			else if (f == 3)
				v = rs[i].ship.refused;
			else
				v = f == 1 ? (double)rs[i].ship.failures
					   : (double)rs[i].ship.connected;
			strbuf_reset(&lab);
			strbuf_addstr(&lab, "url=\"");
			prom_label_value(&lab, rs[i].url);
			strbuf_addch(&lab, '"');
			prom_sample(o, prom_fam_name(fams[f]), lab.buf, v);
		}
	}
	strbuf_release(&lab);
}

static void render_self_metrics(const struct agent *a, struct strbuf *o)
{
	prom_family_head(o, PF_AGENT_CPU_SECONDS);
	prom_sample(o, prom_fam_name(PF_AGENT_CPU_SECONDS), "", cpu_s(a->self_cpu_ms));
	prom_family_head(o, PF_AGENT_RSS);
	prom_sample(o, prom_fam_name(PF_AGENT_RSS), "", (double)a->self_rss_bytes);
	prom_family_head(o, PF_AGENT_TICKS);
	prom_sample(o, prom_fam_name(PF_AGENT_TICKS), "", (double)a->ticks);
	prom_family_head(o, PF_AGENT_LOST_TICKS);
	prom_sample(o, prom_fam_name(PF_AGENT_LOST_TICKS), "", (double)a->lost_ticks);
	prom_family_head(o, PF_AGENT_TICK_DURATION);
	prom_sample(o, prom_fam_name(PF_AGENT_TICK_DURATION), "", a->last_tick_s);
	if (a->store_bytes) {
		prom_family_head(o, PF_AGENT_STORE_BYTES);
		prom_sample(o, prom_fam_name(PF_AGENT_STORE_BYTES), "", (double)a->store_bytes);
	}
	prom_family_head(o, PF_AGENT_PACKED_ROWS);
	prom_sample(o, prom_fam_name(PF_AGENT_PACKED_ROWS), "", (double)a->packer.total.rows);
	prom_family_head(o, PF_AGENT_PACKED_BYTES);
	prom_sample(o, prom_fam_name(PF_AGENT_PACKED_BYTES), "", (double)a->packer.total.bytes);
	if (a->sender) {
		struct sender_stats ss;

		sender_get_stats(a->sender, &ss);
		prom_family_head(o, PF_AGENT_HEAD_UP);
		prom_sample(o, prom_fam_name(PF_AGENT_HEAD_UP), "", ss.ship.connected);
		prom_family_head(o, PF_AGENT_HEAD_REFUSED);
		prom_sample(o, prom_fam_name(PF_AGENT_HEAD_REFUSED), "", ss.ship.refused);
		prom_family_head(o, PF_AGENT_HEAD_FAILURES);
		prom_sample(o, prom_fam_name(PF_AGENT_HEAD_FAILURES), "", (double)ss.ship.failures);
		prom_family_head(o, PF_AGENT_HEAD_MOVES);
		prom_sample(o, prom_fam_name(PF_AGENT_HEAD_MOVES), "", (double)ss.moves);
	}
	if (a->opt->head) {
		prom_family_head(o, PF_AGENT_LOST_ROWS);
		prom_sample(o, prom_fam_name(PF_AGENT_LOST_ROWS), "", (double)a->lost_rows);
		prom_family_head(o, PF_AGENT_GAPS);
		prom_sample(o, prom_fam_name(PF_AGENT_GAPS), "", (double)a->gaps);
	}
	render_rw_metrics(a, o);
	prom_family_head(o, PF_AGENT_LIVE_JOBS);
	{
		size_t n = 0;

		for (size_t k = 0; k < a->jobs.njobs; k++)
			n += a->jobs.job[k].live;
		prom_sample(o, prom_fam_name(PF_AGENT_LIVE_JOBS), "", (double)n);
	}
	prom_family_head(o, PF_AGENT_TASK_ITERATOR);
	prom_sample(o, prom_fam_name(PF_AGENT_TASK_ITERATOR), "", a->pt.tasks.fd >= 0);
	prom_family_head(o, PF_AGENT_JOBS_VIEWS);
	prom_sample(o, prom_fam_name(PF_AGENT_JOBS_VIEWS), "when=\"tick\"",
		    (double)a->jobs_views_tick);
	prom_sample(o, prom_fam_name(PF_AGENT_JOBS_VIEWS), "when=\"asked\"",
		    (double)a->jobs_views_asked);
}

/* ---- JSON ---- */

/*
 * The job's processes alive at this tick, for `jobscope top`'s tree: CPU
 * as a cumulative count (a reader takes its rate between two ticks,
 * "sampled_ms" says when this one was).
 */
static void json_job_procs(struct jsonw *w, const struct agent *a, const struct job_entry *j)
{
	int32_t tag = (int32_t)(j - a->jobs.job) + 1;

	jsonw_kv_int(w, "sampled_ms", a->host_ts);
	jsonw_key(w, "processes");
	jsonw_arr_begin(w);
	for (size_t k = 0; k < a->pt.nprocs; k++) {
		const struct ptree_proc *p = &a->pt.procs[k];

		if (p->tag != tag || !p->alive)
			continue;
		jsonw_obj_begin(w);
		jsonw_kv_int(w, "pid", p->info.pid);
		jsonw_kv_int(w, "ppid", p->info.ppid);
		jsonw_kv_int(w, "uid", p->info.uid);
		jsonw_kv_str(w, "comm", p->info.comm);
		if (p->container && p->container <= j->k8s.ncontainers)
			jsonw_kv_str(w, "container", j->k8s.container[p->container - 1].name);
		jsonw_kv_int(w, "cpu_ms", (int64_t)proc_cpu_ms(&p->cur));
		jsonw_kv_int_opt(w, "rss_bytes", p->cur.valid & PS_RSS, (int64_t)p->cur.rss_bytes);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
}

/*
 * A pod's "k8s": its namespace and name (null when no bundle named them),
 * UID, QoS class and real containers (the sandbox is none of them).
 */
static void json_job_k8s(struct jsonw *w, const struct job_entry *j)
{
	const struct job_k8s *k = &j->k8s;

	jsonw_key(w, "k8s");
	jsonw_obj_begin(w);
	jsonw_kv_str_opt(w, "namespace", k->pod[0] ? k->namespace_ : NULL);
	jsonw_kv_str_opt(w, "pod", k->pod[0] ? k->pod : NULL);
	jsonw_kv_str(w, "uid", j->rec.job_id);
	jsonw_kv_str_opt(w, "qos", j->rec.qos[0] ? j->rec.qos : NULL);
	jsonw_key(w, "containers");
	jsonw_arr_begin(w);
	for (size_t i = 0; i < k->ncontainers; i++) {
		jsonw_obj_begin(w);
		jsonw_kv_str(w, "name", k->container[i].name);
		jsonw_kv_str(w, "id", k->container[i].id);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
	jsonw_key(w, "owner");
	if (k->owner_label[0]) {
		jsonw_obj_begin(w);
		jsonw_kv_str(w, "label", k->owner_label);
		jsonw_kv_str(w, "name", k->owner_name);
		jsonw_obj_end(w);
	} else {
		jsonw_null(w);
	}
	jsonw_obj_end(w);
}

/*
 * A live job's object; *fields_len: the length of its start that holds
 * the job's own fields (up to its processes and app metrics), from the
 * object's first byte.
 */
static void json_job(struct jsonw *w, const struct agent *a, const struct job_entry *j,
		     size_t *fields_len)
{
	const struct job_record *r = &j->rec;
	const struct job_sample *s = &j->js;
	uint64_t cpu = jobs_cpu_ms(s);
	size_t off = w->out->len;

	jsonw_obj_begin(w);
	jsonw_kv_str(w, "key", j->key);
	jsonw_kv_str(w, "scheduler", r->scheduler);
	jsonw_kv_str(w, "job_id", r->job_id);
	jsonw_kv_str_opt(w, "sluid", r->sluid[0] ? r->sluid : NULL);
	jsonw_kv_str_opt(w, "step", r->step[0] ? r->step : NULL);
	jsonw_kv_str_opt(w, "name", r->name[0] ? r->name : NULL);
	jsonw_kv_str(w, "node", r->hostname);
	jsonw_kv_str(w, "user", r->user);
	jsonw_kv_int(w, "uid", r->uid);
	jsonw_kv_str(w, "command", r->command);
	jsonw_kv_int(w, "start_ms", r->start_ms);
	jsonw_kv_int_opt(w, "end_ms", r->end_ms > 0, r->end_ms);
	jsonw_kv_str(w, "state", j->live ? "running" : "ended");
	jsonw_kv_bool(w, "live", j->live);
	jsonw_kv_int_opt(w, "store_id", r->id > 0, r->id);
	jsonw_kv_str_opt(w, "cgroup", r->cgroup[0] ? r->cgroup : NULL);
	jsonw_kv_str_opt(w, "qos", r->qos[0] ? r->qos : NULL);
	if (strcmp(r->scheduler, "k8s") == 0)
		json_job_k8s(w, j);
	jsonw_key(w, "reservation");
	jsonw_obj_begin(w);
	jsonw_kv_str_opt(w, "source", r->reservation_source[0] ? r->reservation_source : NULL);
	jsonw_kv_double_opt(w, "cpus", r->reserved_cpus > 0, r->reserved_cpus, 3);
	jsonw_kv_int_opt(w, "memory_bytes", r->reserved_mem_bytes > 0,
			 (int64_t)r->reserved_mem_bytes);
	jsonw_kv_int_opt(w, "gpus", r->has_reserved_gpus, r->reserved_gpus);
	jsonw_kv_str_opt(w, "gpu_list", r->reserved_gpu_list[0] ? r->reserved_gpu_list : NULL);
	jsonw_obj_end(w);
	jsonw_key(w, "usage");
	jsonw_obj_begin(w);
	jsonw_kv_int(w, "processes", s->nprocs);
	jsonw_kv_double(w, "cpu_seconds", cpu / 1000.0, 3);
	jsonw_kv_double_opt(w, "cpu_cores", j->has_rate, j->cpu_cores, 3);
	jsonw_kv_double_opt(w, "cpu_efficiency_pct", j->has_rate && r->reserved_cpus > 0,
			    100.0 * j->cpu_cores / r->reserved_cpus, 1);
	/* its threads runnable but not running: CPUs other work held */
	jsonw_kv_double_opt(w, "cpu_wait_cores", j->has_wait_rate, j->wait_cores, 3);
	jsonw_kv_int(w, "rss_bytes", (int64_t)s->rss_bytes);
	jsonw_kv_int_opt(w, "swap_bytes", s->valid & JS_SWAP, (int64_t)s->swap_bytes);
	jsonw_kv_int_opt(w, "read_bytes", s->valid & JS_IO, (int64_t)s->read_bytes);
	jsonw_kv_int_opt(w, "write_bytes", s->valid & JS_IO, (int64_t)s->write_bytes);
	jsonw_kv_int_opt(w, "cgroup_memory_bytes", s->valid & JS_CG_MEM, (int64_t)s->cg_mem_bytes);
	jsonw_kv_int_opt(w, "cgroup_memory_peak_bytes", s->valid & JS_CG_MEM_PEAK,
			 (int64_t)s->cg_mem_peak_bytes);
	jsonw_kv_double_opt(w, "cgroup_cpu_seconds", s->valid & JS_CG_CPU, s->cg_cpu_ms / 1000.0,
			    3);
	jsonw_obj_end(w);
	jsonw_key(w, "gpus");
	jsonw_arr_begin(w);
	for (int i = 0; i < a->gpus.ndevices && i < GPU_MAX_DEVICES; i++) {
		const struct job_gpu_use *u = &j->gpu[i];

		if (!u->used)
			continue;
		jsonw_obj_begin(w);
		jsonw_kv_int(w, "index", a->devs[i].info.index);
		jsonw_kv_str(w, "uuid", a->devs[i].info.uuid);
		jsonw_kv_bool(w, "in_use_now", u->now);
		jsonw_kv_int_opt(w, "memory_bytes", u->now && u->has_mem, (int64_t)u->mem_bytes);
		jsonw_kv_int_opt(w, "sm_util_pct", u->now && u->has_util, u->sm_util_pct);
		jsonw_kv_double(w, "energy_j", u->energy_mj / 1000.0, 3);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
	jsonw_kv_null(w, "totals"); /* a summary's, once it ended */
	/* the job's own fields end here: /api/v1/jobs/KEY's "job" (routes.c) */
	*fields_len = w->out->len - off;
	json_job_procs(w, a, j);
	agent_app_json(w, a, r->id);
	jsonw_obj_end(w);
}

/* A column of a stored job: NULL as null. */
static void kv_col_str(struct jsonw *w, const char *key, const struct store_row *r, int col)
{
	jsonw_kv_str_opt(w, key, r->null[col] ? NULL : r->text[col]);
}

static void kv_col_int(struct jsonw *w, const char *key, const struct store_row *r, int col)
{
	jsonw_kv_int_opt(w, key, !r->null[col], (int64_t)r->num[col]);
}

static void kv_col_double(struct jsonw *w, const char *key, const struct store_row *r, int col)
{
	jsonw_kv_double_opt(w, key, !r->null[col], r->num[col], 3);
}

void agent_json_stored_job(struct jsonw *w, const struct store_row *r)
{
	bool ended = !r->null[STORE_JOBS_COL_END_MS];

	kv_col_str(w, "key", r, STORE_JOBS_COL_KEY);
	kv_col_str(w, "scheduler", r, STORE_JOBS_COL_SCHEDULER);
	kv_col_str(w, "job_id", r, STORE_JOBS_COL_JOB_ID);
	kv_col_str(w, "sluid", r, STORE_JOBS_COL_SLUID);
	kv_col_str(w, "step", r, STORE_JOBS_COL_STEP);
	kv_col_str(w, "name", r, STORE_JOBS_COL_NAME);
	kv_col_str(w, "node", r, STORE_JOBS_COL_NODE);
	kv_col_str(w, "user", r, STORE_JOBS_COL_USER);
	kv_col_int(w, "uid", r, STORE_JOBS_COL_UID);
	kv_col_str(w, "command", r, STORE_JOBS_COL_COMMAND);
	kv_col_int(w, "start_ms", r, STORE_JOBS_COL_START_MS);
	kv_col_int(w, "end_ms", r, STORE_JOBS_COL_END_MS);
	jsonw_kv_str(w, "state", ended ? "ended" : "running");
	jsonw_kv_bool(w, "live", false);
	kv_col_int(w, "store_id", r, STORE_JOBS_COL_ID);
	kv_col_str(w, "cgroup", r, STORE_JOBS_COL_CGROUP);
	kv_col_str(w, "qos", r, STORE_JOBS_COL_QOS);
	jsonw_key(w, "reservation");
	jsonw_obj_begin(w);
	kv_col_str(w, "source", r, STORE_JOBS_COL_RESERVATION_SOURCE);
	kv_col_double(w, "cpus", r, STORE_JOBS_COL_RESERVED_CPUS);
	kv_col_int(w, "memory_bytes", r, STORE_JOBS_COL_RESERVED_MEM_BYTES);
	kv_col_int(w, "gpus", r, STORE_JOBS_COL_RESERVED_GPUS);
	kv_col_str(w, "gpu_list", r, STORE_JOBS_COL_RESERVED_GPU_LIST);
	jsonw_obj_end(w);
	/* what it uses now: nothing the agent sees (ended, or its processes not seen yet) */
	jsonw_kv_null(w, "usage");
	jsonw_kv_null(w, "gpus");
	jsonw_key(w, "totals");
	if (r->num[STORE_JOBS_COL_HAS_SUMMARY] == 0) {
		jsonw_null(w);
		return;
	}
	jsonw_obj_begin(w);
	kv_col_int(w, "cpu_ms", r, STORE_JOBS_COL_CPU_MS);
	kv_col_double(w, "cpu_efficiency_pct", r, STORE_JOBS_COL_CPU_EFFICIENCY_PCT);
	kv_col_int(w, "rss_peak_bytes", r, STORE_JOBS_COL_RSS_PEAK_BYTES);
	kv_col_double(w, "mem_efficiency_pct", r, STORE_JOBS_COL_MEM_EFFICIENCY_PCT);
	kv_col_int(w, "gpus_used", r, STORE_JOBS_COL_GPUS_USED);
	kv_col_double(w, "gpu_util_avg_pct", r, STORE_JOBS_COL_GPU_UTIL_AVG_PCT);
	kv_col_int(w, "gpu_energy_mj", r, STORE_JOBS_COL_GPU_ENERGY_MJ);
	kv_col_double(w, "sm_active_avg_pct", r, STORE_JOBS_COL_SM_ACTIVE_AVG_PCT);
	kv_col_double(w, "sm_occupancy_avg_pct", r, STORE_JOBS_COL_SM_OCCUPANCY_AVG_PCT);
	kv_col_double(w, "tensor_active_avg_pct", r, STORE_JOBS_COL_TENSOR_ACTIVE_AVG_PCT);
	kv_col_double(w, "dram_active_avg_pct", r, STORE_JOBS_COL_DRAM_ACTIVE_AVG_PCT);
	kv_col_double(w, "fp64_active_avg_pct", r, STORE_JOBS_COL_FP64_ACTIVE_AVG_PCT);
	kv_col_double(w, "fp32_active_avg_pct", r, STORE_JOBS_COL_FP32_ACTIVE_AVG_PCT);
	kv_col_double(w, "fp16_active_avg_pct", r, STORE_JOBS_COL_FP16_ACTIVE_AVG_PCT);
	kv_col_double(w, "throttle_power_s", r, STORE_JOBS_COL_THROTTLE_POWER_S);
	kv_col_double(w, "throttle_thermal_s", r, STORE_JOBS_COL_THROTTLE_THERMAL_S);
	jsonw_obj_end(w);
}

static void json_node(const struct agent *a, struct strbuf *o)
{
	const struct host_sample *h = a->host;
	struct jsonw w;
	size_t live = 0;

	for (size_t k = 0; k < a->jobs.njobs; k++)
		live += a->jobs.job[k].live;
	jsonw_init(&w, o, true);
	jsonw_obj_begin(&w);
	jsonw_kv_str(&w, "node", a->hostname);
	jsonw_kv_int(&w, "ts_ms", a->host_ts);
	jsonw_key(&w, "agent");
	jsonw_obj_begin(&w);
	jsonw_kv_str(&w, "version", JOBSCOPE_VERSION);
	jsonw_kv_int(&w, "started_ms", a->started_ms);
	jsonw_kv_int(&w, "interval_ms", a->opt->interval_ms);
	jsonw_kv_int(&w, "ticks", a->ticks);
	jsonw_kv_int(&w, "lost_ticks", a->lost_ticks);
	jsonw_kv_double(&w, "last_tick_s", a->last_tick_s, 6);
	jsonw_kv_double(&w, "cpu_seconds", a->self_cpu_ms / 1000.0, 3);
	jsonw_kv_int(&w, "rss_bytes", (int64_t)a->self_rss_bytes);
	jsonw_kv_str(&w, "store", store_path(a->st));
	jsonw_kv_int_opt(&w, "store_bytes", a->store_bytes > 0, (int64_t)a->store_bytes);
	jsonw_kv_int(&w, "packed_rows", a->packer.total.rows);
	jsonw_kv_int(&w, "packed_bytes", a->packer.total.bytes);
	jsonw_obj_end(&w);
	jsonw_key(&w, "head");
	if (a->sender) {
		struct sender_head heads[SENDER_MAX_HEADS];
		struct sender_stats ss;
		int nheads;

		sender_get_stats(a->sender, &ss);
		nheads = sender_get_heads(a->sender, heads, SENDER_MAX_HEADS);
		if (nheads > SENDER_MAX_HEADS)
			nheads = SENDER_MAX_HEADS;
		jsonw_obj_begin(&w);
		/* the head it is on now (or tries), the heads it tries in turn, its moves */
		if (ss.head >= 0 && ss.head < nheads) {
			jsonw_kv_str(&w, "url", heads[ss.head].url);
			jsonw_kv_str_opt(&w, "address",
					 heads[ss.head].address[0] ? heads[ss.head].address : NULL);
		} else {
			jsonw_kv_str(&w, "url", a->opt->head);
			jsonw_kv_str_opt(&w, "address", NULL);
		}
		jsonw_kv_int(&w, "moves", ss.moves);
		jsonw_key(&w, "heads");
		jsonw_arr_begin(&w);
		for (int i = 0; i < nheads; i++) {
			jsonw_obj_begin(&w);
			jsonw_kv_str(&w, "url", heads[i].url);
			jsonw_kv_str_opt(&w, "address",
					 heads[i].address[0] ? heads[i].address : NULL);
			jsonw_obj_end(&w);
		}
		jsonw_arr_end(&w);
		jsonw_kv_str(&w, "agent_id", a->agent_id);
		jsonw_kv_bool(&w, "connected", ss.ship.connected);
		jsonw_kv_int_opt(&w, "acked_seq", ss.ship.cursor_known, ss.ship.acked_seq);
		jsonw_kv_int(&w, "max_seq", ss.ship.max_seq);
		jsonw_kv_int(&w, "batches", ss.ship.batches);
		jsonw_kv_int(&w, "rows", ss.ship.rows);
		jsonw_kv_int(&w, "failures", ss.ship.failures);
		jsonw_kv_bool(&w, "refused", ss.ship.refused);
		jsonw_kv_str_opt(&w, "last_error",
				 ss.ship.last_error[0] ? ss.ship.last_error : NULL);
		/* what the size cap deleted before the head held it */
		jsonw_kv_int(&w, "lost_rows", a->lost_rows);
		jsonw_kv_int(&w, "gaps", a->gaps);
		jsonw_key(&w, "last_gap");
		if (a->has_last_gap) {
			const struct store_gap *g = &a->last_gap;

			jsonw_obj_begin(&w);
			jsonw_kv_int(&w, "recorded_ms", g->ts_ms);
			jsonw_kv_int_opt(&w, "from_ms", g->has_span, g->from_ms);
			jsonw_kv_int_opt(&w, "to_ms", g->has_span, g->to_ms);
			jsonw_kv_int(&w, "from_seq", g->from_seq);
			jsonw_kv_int(&w, "to_seq", g->to_seq);
			jsonw_kv_int(&w, "rows", g->rows);
			jsonw_kv_str(&w, "reason", g->reason);
			jsonw_obj_end(&w);
		} else {
			jsonw_null(&w);
		}
		jsonw_obj_end(&w);
	} else {
		jsonw_null(&w);
	}
	/* --cuda-socket: whether the hooks record, and how many are connected */
	jsonw_key(&w, "cuda");
	if (a->cuda.listen_fd >= 0) {
		int64_t connected = 0;

		for (size_t i = 0; i < a->cuda.npeers; i++)
			connected += a->cuda.peers[i].fd >= 0 && a->cuda.peers[i].hello;
		jsonw_obj_begin(&w);
		jsonw_kv_str(&w, "socket", a->cuda.path);
		jsonw_kv_bool(&w, "recording", a->cuda_on);
		jsonw_kv_int(&w, "connected", connected);
		jsonw_kv_int(&w, "seen", (int64_t)a->cuda.seen);
		jsonw_obj_end(&w);
	} else {
		jsonw_null(&w);
	}
	jsonw_key(&w, "remote_write");
	jsonw_arr_begin(&w);
	for (int i = 0; i < rw_targets(a->rw); i++) {
		struct rw_stats rs;

		rw_get_stats(a->rw, i, &rs);
		jsonw_obj_begin(&w);
		jsonw_kv_str(&w, "url", rs.url);
		jsonw_kv_bool(&w, "connected", rs.ship.connected);
		jsonw_kv_int_opt(&w, "acked_seq", rs.ship.acked_seq >= 0, rs.ship.acked_seq);
		jsonw_kv_int(&w, "max_seq", rs.ship.max_seq);
		jsonw_kv_int(&w, "failures", rs.ship.failures);
		jsonw_kv_bool(&w, "refused", rs.ship.refused);
		jsonw_kv_int_opt(&w, "last_ok_ms", rs.ship.last_ok_ms > 0, rs.ship.last_ok_ms);
		jsonw_kv_str_opt(&w, "last_error",
				 rs.ship.last_error[0] ? rs.ship.last_error : NULL);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_key(&w, "host");
	jsonw_obj_begin(&w);
	jsonw_kv_int_opt(&w, "cpus", a->host_ok && (h->valid & HOST_HAS_CPU), host_online_cpus(h));
	jsonw_kv_int_opt(&w, "memory_total_bytes", a->host_ok && (h->mem.valid & MEMINFO_TOTAL),
			 (int64_t)h->mem.total_bytes);
	jsonw_kv_int_opt(&w, "memory_available_bytes",
			 a->host_ok && (h->mem.valid & MEMINFO_AVAILABLE),
			 (int64_t)h->mem.available_bytes);
	jsonw_kv_double_opt(&w, "load1", a->host_ok && (h->valid & HOST_HAS_LOAD),
			    h->load.load1_milli / 1000.0, 2);
	jsonw_kv_int(&w, "processes", (int64_t)a->pt.system_processes);
	jsonw_kv_int(&w, "live_jobs", (int64_t)live);
	jsonw_kv_int(&w, "gpus", a->gpus.ndevices);
	jsonw_obj_end(&w);
	jsonw_obj_end(&w);
	strbuf_addch(o, '\n');
}

static void json_gpus(const struct agent *a, struct strbuf *o)
{
	struct jsonw w;

	jsonw_init(&w, o, true);
	jsonw_obj_begin(&w);
	jsonw_kv_str(&w, "node", a->hostname);
	jsonw_key(&w, "gpus");
	jsonw_arr_begin(&w);
	for (int i = 0; i < a->gpus.ndevices; i++) {
		const struct device_record *d = &a->devs[i];
		const struct gpu_sample *g = &a->gsample[i];
		bool ok = a->gsample_ok[i];

		jsonw_obj_begin(&w);
		jsonw_kv_int(&w, "index", d->info.index);
		jsonw_kv_str(&w, "uuid", d->info.uuid);
		jsonw_kv_str(&w, "name", d->info.name);
		jsonw_kv_str(&w, "vendor", d->vendor);
		jsonw_kv_int_opt(&w, "memory_total_bytes", d->info.mem_total_bytes > 0,
				 (int64_t)d->info.mem_total_bytes);
		jsonw_kv_int_opt(&w, "util_pct", ok && (g->valid & GPU_UTIL), g->util_pct);
		jsonw_kv_int_opt(&w, "memory_used_bytes", ok && (g->valid & GPU_MEM_USED),
				 (int64_t)g->mem_used_bytes);
		jsonw_kv_double_opt(&w, "power_w", ok && (g->valid & GPU_POWER),
				    g->power_mw / 1000.0, 3);
		jsonw_kv_int_opt(&w, "temperature_c", ok && (g->valid & GPU_TEMP), g->temp_c);
		jsonw_key(&w, "jobs");
		jsonw_arr_begin(&w);
		for (size_t k = 0; k < a->jobs.njobs && i < GPU_MAX_DEVICES; k++) {
			const struct job_entry *j = &a->jobs.job[k];

			if (j->live && j->gpu[i].now)
				jsonw_str(&w, j->key);
		}
		jsonw_arr_end(&w);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	strbuf_addch(o, '\n');
}

void agent_view_free(struct agent_view *v)
{
	if (!v)
		return;
	strbuf_release(&v->metrics);
	strbuf_release(&v->node);
	strbuf_release(&v->gpus);
	strbuf_release(&v->job_json);
	free(v->job);
	free(v);
}

/* The jobs' objects, each with its processes, into v. */
static int render_jobs(struct agent *a, struct agent_view *v)
{
	size_t n = 0;

	strbuf_init(&v->job_json, 0);
	v->job = calloc(a->jobs.njobs + 1, sizeof(*v->job));
	if (!v->job)
		return -ENOMEM;
	agent_app_json_begin(a);
	for (size_t k = 0; k < a->jobs.njobs; k++) {
		const struct job_entry *j = &a->jobs.job[k];
		struct agent_view_job *vj;
		struct jsonw jw;

		if (!j->live)
			continue;
		vj = &v->job[n++];
		snprintf(vj->key, sizeof(vj->key), "%s", j->key);
		snprintf(vj->scheduler, sizeof(vj->scheduler), "%s", j->rec.scheduler);
		snprintf(vj->job_id, sizeof(vj->job_id), "%s", j->rec.job_id);
		vj->store_id = j->rec.id;
		vj->json_off = v->job_json.len;
		jsonw_init(&jw, &v->job_json, false);
		json_job(&jw, a, j, &vj->fields_len);
		vj->json_len = v->job_json.len - vj->json_off;
	}
	v->njobs = n;
	if (strbuf_error(&v->job_json))
		return -ENOMEM;
	v->has_jobs = true;
	return 0;
}

int agent_render(struct agent *a, struct agent_view *v, bool with_jobs)
{
	struct strbuf lab;

	strbuf_init(&v->metrics, 0);
	strbuf_init(&v->node, 0);
	strbuf_init(&v->gpus, 0);
	strbuf_init(&v->job_json, 0);
	strbuf_init(&lab, 4096);
	render_host_metrics(a, &v->metrics);
	render_gpu_metrics(a, &v->metrics, &lab);
	render_gpu_prof_metrics(a, &v->metrics, &lab);
	render_job_metrics(a, &v->metrics, &lab);
	agent_render_compat(a, &v->metrics, &lab);
	agent_render_app(a, &v->metrics, &lab);
	render_self_metrics(a, &v->metrics);
	strbuf_release(&lab);
	json_node(a, &v->node);
	json_gpus(a, &v->gpus);
	return with_jobs ? render_jobs(a, v) : 0;
}

void agent_publish_view(struct agent *a)
{
	struct agent_view *v = calloc(1, sizeof(*v)), *old;
	bool with_jobs;

	if (!v)
		return;
	/* the jobs when a request needed them since the last tick */
	pthread_mutex_lock(&a->view_lock);
	with_jobs = a->jobs_asked;
	a->jobs_asked = false;
	pthread_mutex_unlock(&a->view_lock);
	a->jobs_views_tick += with_jobs;
	if (agent_render(a, v, with_jobs)) {
		agent_view_free(v);
		return;
	}
	pthread_mutex_lock(&a->view_lock);
	old = a->view;
	a->view = v;
	pthread_cond_broadcast(&a->view_cond);
	pthread_mutex_unlock(&a->view_lock);
	agent_view_free(old);
}

void agent_view_jobs(struct agent *a)
{
	struct agent_view jobs = {0}, *v;
	uint64_t n;
	bool want;

	while (read(a->view_efd, &n, sizeof(n)) == sizeof(n))
		;
	pthread_mutex_lock(&a->view_lock);
	want = a->jobs_wanted && a->view && !a->view->has_jobs;
	a->jobs_wanted = false;
	v = a->view;
	pthread_mutex_unlock(&a->view_lock);
	/* the view is this thread's last tick's: no tick can replace it meanwhile */
	if (!want || render_jobs(a, &jobs)) {
		strbuf_release(&jobs.job_json);
		free(jobs.job);
		/* a waiter that finds no jobs answers so rather than wait on */
		pthread_mutex_lock(&a->view_lock);
		pthread_cond_broadcast(&a->view_cond);
		pthread_mutex_unlock(&a->view_lock);
		return;
	}
	a->jobs_views_asked++;
	pthread_mutex_lock(&a->view_lock);
	strbuf_release(&v->job_json);
	v->job_json = jobs.job_json;
	v->job = jobs.job;
	v->njobs = jobs.njobs;
	v->has_jobs = true;
	pthread_cond_broadcast(&a->view_cond);
	pthread_mutex_unlock(&a->view_lock);
}
