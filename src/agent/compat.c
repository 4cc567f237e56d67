/*
 * compat.c - /metrics under the names other exporters give, beside ours
 * (`jobscope agent --compat jobstats,dcgm`), so that the tools that read
 * those exporters work unchanged on our agent (docs/compat.md).
 *
 * jobstats (Princeton): the series of plazonic's cgroup_exporter
 * (cgroup_*{jobid}) for each live Slurm job, and of plazonic's
 * nvidia_gpu_prometheus_exporter (nvidia_gpu_*{ordinal, minor_number,
 * uuid, name, jobid, userid}) for each NVIDIA GPU: a GPU in a job's
 * reservation carries the job's jobid and userid whether the job touched
 * it or not (an idle reserved GPU reads 0, which is what lets jobstats say
 * "GPU was not used"); a GPU in nobody's reservation carries jobid="".
 *
 * dcgm: dcgm-exporter's default counters under its names, units and labels
 * (gpu, UUID, pci_bus_id, device, modelName, Hostname,
 * DCGM_FI_DRIVER_VERSION), a job's label (hpc_job for Slurm, pod_uid for
 * a Kubernetes pod) on the device's series when the job has the device to
 * itself.
 *
 * What the SMs did (NVML GPM): dcgm-exporter's DCGM_FI_PROF_* ratios (0-1)
 * and the jobstats exporter's nvidia_gpu_*_util_percent series (0-1 too,
 * as it divides NVML's percent by 100); violation counters (ns), PCIe
 * replays and remapped rows under DCGM's field names.  MIG instances as
 * each exporter labels them: dcgm-exporter's gpu, UUID, pci_bus_id,
 * device and modelName are the parent GPU's, with GPU_I_PROFILE and
 * GPU_I_ID; the jobstats exporter's ordinal and minor_number are the
 * parent's, uuid and name the instance's, GPU_I_ID its GPU instance.
 *
 * A device that several jobs share: the device's own series carry no job,
 * and each job gets series of its own whose values are its split (its
 * processes' SM utilization and memory, its part of the power and of the
 * activity figures by the rule of attrib/gpu_share.h, its share of the
 * energy), never copies of the device's value.  Missing stays missing: no
 * series.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "attrib/gpu_share.h"
#include "prom/expo.h"

#define MIB 1048576.0

int agent_compat_parse(const char *list, unsigned *out)
{
	const char *p = list;

	if (!*p)
		return -1;
	while (*p) {
		size_t n = strcspn(p, ",");

		if (n == 8 && strncmp(p, "jobstats", n) == 0)
			*out |= AGENT_COMPAT_JOBSTATS;
		else if (n == 4 && strncmp(p, "dcgm", n) == 0)
			*out |= AGENT_COMPAT_DCGM;
		else
			return -1;
		p += n;
		if (*p == ',' && *++p == '\0')
			return -1;
	}
	return 0;
}

static void sample_line(struct strbuf *o, const char *name, const struct strbuf *lab, double v)
{
	if (isnan(v))
		return;
	strbuf_addstr(o, name);
	if (lab->len)
		strbuf_addf(o, "{%s}", lab->buf);
	strbuf_addch(o, ' ');
	prom_value(o, v);
	strbuf_addch(o, '\n');
}

static void label(struct strbuf *lab, const char *name, const char *value)
{
	if (lab->len)
		strbuf_addch(lab, ',');
	strbuf_addf(lab, "%s=\"", name);
	prom_label_value(lab, value);
	strbuf_addch(lab, '"');
}

static void label_int(struct strbuf *lab, const char *name, int64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRId64, v);
	label(lab, name, num);
}

/*
 * Whether the scheduler gave device d to job r: an entry of its GPU list
 * is the device's UUID (or a prefix of it, as CUDA_VISIBLE_DEVICES allows)
 * or its index.  Slurm's SLURM_JOB_GPUS holds the global GPU ids, which are
 * the NVML indices when gres.conf lists the devices in PCI order (as its
 * AutoDetect=nvml does).  A MIG instance is matched by its own UUID
 * ("MIG-..."), never by a number (its index is its parent's); a MIG UUID
 * matches no whole device.
 */
bool agent_compat_reserves(const struct job_record *r, const struct gpu_device_info *d)
{
	const char *p = r->reserved_gpu_list;

	while (*p) {
		size_t n = strcspn(p, ","), uuid_len = strlen(d->uuid);

		while (n && *p == ' ') {
			p++;
			n--;
		}
		if (n >= 8 && (strncmp(p, "GPU-", 4) == 0 || strncmp(p, "MIG-", 4) == 0)) {
			if (n <= uuid_len && strncmp(p, d->uuid, n) == 0)
				return true;
		} else if (!d->mig && n > 0 && n < 6 && strspn(p, "0123456789") >= n) {
			char num[8];

			memcpy(num, p, n);
			num[n] = '\0';
			if (atoi(num) == d->index)
				return true;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return false;
}

/* ---- what the jobs on one device get ---- */

struct dev_jobs {
	const struct job_entry *job[16];
	size_t n;
	bool exclusive; /* one job, and the device is its: device values are the job's */
	struct gpu_share_total all; /* every process on the device now */
};

/*
 * cgroup_exporter's jobid: the job's number, but for a Slurm 26.05 job whose
 * cgroup is named by its SLUID, the SLUID, as 0.3.1 (commit 4275afd, "start
 * collecting that as the jobid") reads it off the directory's name.
 */
static const char *cg_jobid(const struct job_entry *j)
{
	return j->rec.sluid[0] ? j->rec.sluid : j->rec.job_id;
}

static bool is_slurm(const struct job_entry *j)
{
	return strcmp(j->rec.scheduler, "slurm") == 0;
}

static bool is_k8s(const struct job_entry *j)
{
	return strcmp(j->rec.scheduler, "k8s") == 0;
}

/*
 * The live jobs on device i: those whose reservation holds it and, with
 * users_too, those with a process on it now; jobs that pass want().
 */
static void jobs_on(const struct agent *a, int i, bool users_too,
		    bool (*want)(const struct job_entry *), struct dev_jobs *dj)
{
	const struct gpu_device_info *d = &a->devs[i].info;
	bool reserved = false;

	memset(dj, 0, sizeof(*dj));
	dj->all = gpu_share_device_total(&a->gprocs, i);
	for (size_t k = 0; k < a->jobs.njobs && dj->n < sizeof(dj->job) / sizeof(dj->job[0]); k++) {
		const struct job_entry *j = &a->jobs.job[k];
		bool res;

		if (!j->live || !want(j))
			continue;
		res = agent_compat_reserves(&j->rec, d);
		if (!res && !(users_too && j->gpu[i].now))
			continue;
		reserved |= res;
		dj->job[dj->n++] = j;
	}
	if (dj->n == 1) {
		struct gpu_share_total part =
		    gpu_share_job_part(&a->jobs, &a->gprocs, i, dj->job[0]);

		dj->exclusive = reserved || part.nprocs == dj->all.nprocs;
	}
}

/* A MIG instance's parent GPU (gpu.h: listed before it), else the device itself. */
static int parent_of(const struct agent *a, int i)
{
	const struct gpu_device_info *d = &a->devs[i].info;

	if (d->mig && d->mig_parent >= 0 && d->mig_parent < i &&
	    a->devs[d->mig_parent].info.mig_enabled)
		return d->mig_parent;
	return i;
}

/* A NVIDIA device (its minor number known: of the device, or of a MIG instance's parent). */
static bool is_nvidia(const struct agent *a, int i)
{
	return (a->devs[parent_of(a, i)].info.valid & GPU_INFO_MINOR) != 0;
}

/*
 * A job's figures on a device it shares, NAN where they are not known;
 * share: its part of the device's activity figures (job_gpu_use.share).
 */
struct job_split {
	double util_pct, mem_bytes, power_mw, energy_mj, share;
};

static struct job_split split_of(const struct agent *a, int i, const struct job_entry *j,
				 const struct gpu_share_total *all)
{
	const struct job_gpu_use *u = &j->gpu[i];
	const struct gpu_sample *g = &a->gsample[i];
	struct job_split s = {NAN, NAN, NAN, NAN, NAN};
	struct gpu_share_total part;
	double f;

	if (!u->now) { /* reserved, nothing there: it uses none of the device */
		s.util_pct = s.mem_bytes = s.power_mw = s.share = 0;
		s.energy_mj = u->energy_mj;
		return s;
	}
	if (u->has_share)
		s.share = u->share;
	if (u->has_util)
		s.util_pct = u->sm_util_pct > 100 ? 100 : u->sm_util_pct;
	if (u->has_mem)
		s.mem_bytes = (double)u->mem_bytes;
	part = gpu_share_job_part(&a->jobs, &a->gprocs, i, j);
	f = gpu_share_fraction(&part, all);
	if (!isnan(f) && (g->valid & GPU_POWER))
		s.power_mw = f * g->power_mw;
	s.energy_mj = u->energy_mj;
	return s;
}

/* ---- jobstats: cgroup_exporter and nvidia_gpu_prometheus_exporter ---- */

enum { CG_TOTAL, CG_USER, CG_SYSTEM, CG_CPUS, CG_MEM_TOTAL, CG_RSS, CG_SHMEM, CG_CACHE, CG_USED,
       CG_UID, CG__COUNT };

static const struct {
	const char *name, *help;
} cg_fam[CG__COUNT] = {
    {"cgroup_cpu_total_seconds", "Cumulative CPU usage in seconds (the job's cgroup, else its processes)."},
    {"cgroup_cpu_user_seconds", "Cumulative CPU user mode seconds."},
    {"cgroup_cpu_system_seconds", "Cumulative CPU system mode seconds."},
    {"cgroup_cpus", "Number of CPUs the scheduler allocated to the job."},
    {"cgroup_memory_total_bytes", "Memory the scheduler allocated to the job, bytes."},
    {"cgroup_memory_rss_bytes", "Memory RSS as the cgroup counts it (anon + swapcached), bytes."},
    {"cgroup_memory_shmem_bytes", "Shared memory (tmpfs, shm) charged to the cgroup, bytes."},
    {"cgroup_memory_cache_bytes", "Page cache charged to the cgroup, bytes."},
    {"cgroup_memory_used_bytes", "Memory charged to the cgroup, bytes."},
    {"cgroup_uid", "Uid of the job's user."},
};

static double cg_value(const struct job_entry *j, int f)
{
	const struct job_sample *s = &j->js;
	const struct cgroup_sample *cg = j->has_cg ? &j->cg : NULL;
	bool split = cg && (cg->valid & CG_CPU_SPLIT) && (s->valid & JS_CG_CPU) &&
		     s->cg_cpu_ms >= s->user_ms + s->system_ms;

	switch (f) {
	case CG_TOTAL: return (double)jobs_cpu_ms(s) / 1000.0;
	case CG_USER: return split ? cg->cpu_user_us / 1e6 : s->user_ms / 1000.0;
	case CG_SYSTEM: return split ? cg->cpu_system_us / 1e6 : s->system_ms / 1000.0;
	case CG_CPUS: return j->rec.reserved_cpus > 0 ? j->rec.reserved_cpus : NAN;
	case CG_MEM_TOTAL:
		return j->rec.reserved_mem_bytes ? (double)j->rec.reserved_mem_bytes : NAN;
	case CG_RSS:
		if (cg && (cg->valid & CG_MEM_ANON))
			return (double)cg->mem_anon_bytes +
			       (cg->valid & CG_MEM_SWAPCACHED ? (double)cg->mem_swapcached_bytes : 0);
		return (double)s->rss_bytes; /* no cgroup: its processes' RSS (docs/compat.md) */
	case CG_SHMEM:
		return cg && (cg->valid & CG_MEM_SHMEM) ? (double)cg->mem_shmem_bytes : NAN;
	case CG_CACHE:
		return cg && (cg->valid & CG_MEM_FILE) ? (double)cg->mem_file_bytes : NAN;
	case CG_USED: return s->valid & JS_CG_MEM ? (double)s->cg_mem_bytes : NAN;
	case CG_UID: return j->rec.uid;
	default: return NAN;
	}
}

static void render_cgroup_exporter(const struct agent *a, struct strbuf *o, struct strbuf *lab)
{
	bool any_job = false;

	for (int f = 0; f < CG__COUNT; f++) {
		bool any = false;

		for (size_t k = 0; k < a->jobs.njobs; k++) {
			const struct job_entry *j = &a->jobs.job[k];
			double v;

			if (!j->live || !is_slurm(j))
				continue;
			any_job = true;
			v = cg_value(j, f);
			if (isnan(v))
				continue;
			if (!any)
				prom_family(o, cg_fam[f].name, "gauge", cg_fam[f].help);
			any = true;
			strbuf_reset(lab);
			label(lab, "jobid", cg_jobid(j));
			sample_line(o, cg_fam[f].name, lab, v);
		}
	}
	if (!any_job)
		return;
	prom_family(o, "cgroup_info", "gauge", "The job's user, as labels; value 1.");
	for (size_t k = 0; k < a->jobs.njobs; k++) {
		const struct job_entry *j = &a->jobs.job[k];

		if (!j->live || !is_slurm(j))
			continue;
		strbuf_reset(lab);
		label(lab, "jobid", cg_jobid(j));
		label_int(lab, "uid", j->rec.uid);
		label(lab, "username", j->rec.user);
		sample_line(o, "cgroup_info", lab, 1);
	}
}

enum {
	NV_USED,
	NV_TOTAL,
	NV_DUTY,
	NV_POWER,
	NV_TEMP,
	NV_JOBID,
	NV_JOBUID,
	NV_GR,
	NV_SM,
	NV_OCC,
	NV_TENSOR,
	NV_DRAM,
	NV_FP64,
	NV_FP32,
	NV_FP16,
	NV__COUNT
};

/*
 * The series of nvidia_gpu_prometheus_exporter (main.go at 73b8cc4), its
 * HELP (a shared device's split said after it), in its order; the GPM
 * ones (bit) are NVML's percent / 100, a ratio 0-1 under a _percent name,
 * as the exporter writes them (jobstats multiplies graphics_util_percent
 * by 100).
 */
static const struct {
	const char *name, *help;
	uint32_t bit; /* GPM: the enum gpu_prof bit */
} nv_fam[NV__COUNT] = {
    {"nvidia_gpu_memory_used_bytes",
     "Memory used by the GPU device in bytes (a shared device: the job's processes').", 0},
    {"nvidia_gpu_memory_total_bytes", "Total memory of the GPU device in bytes.", 0},
    {"nvidia_gpu_duty_cycle",
     "Percent of time over the past sample period during which one or more kernels were executing "
     "on the GPU device (a shared device: the job's processes' SM utilization).",
     0},
    {"nvidia_gpu_power_usage_milliwatts",
     "Power usage of the GPU device in milliwatts (a shared device: the job's part).", 0},
    {"nvidia_gpu_temperature_celsius", "Temperature of the GPU device in celsius.", 0},
    {"nvidia_gpu_jobId", "JobId number of a job currently using this GPU as reported by Slurm.", 0},
    {"nvidia_gpu_jobUid", "Uid number of user running jobs on this GPU.", 0},
    {"nvidia_gpu_graphics_util_percent",
     "Percentage of time any compute/graphics app was active on the GPU (a shared device: the "
     "job's part).",
     GPU_PROF_GR_ACTIVE},
    {"nvidia_gpu_sm_util_percent",
     "Percentage of SMs that were busy (a shared device: the job's part).", GPU_PROF_SM_ACTIVE},
    {"nvidia_gpu_sm_occupancy_percent",
     "Percentage of warps that were active vs theoretical maximum (a shared device: the job's "
     "part).",
     GPU_PROF_SM_OCCUPANCY},
    {"nvidia_gpu_any_tensor_util_percent",
     "Percentage of time the GPU's SMs were doing ANY tensor operations (a shared device: the "
     "job's part).",
     GPU_PROF_TENSOR_ACTIVE},
    {"nvidia_gpu_dram_bw_util_percent",
     "Percentage of DRAM bw used vs theoretical maximum (a shared device: the job's part).",
     GPU_PROF_DRAM_ACTIVE},
    {"nvidia_gpu_fp64_util_percent",
     "Percentage of time the GPU's SMs were doing non-tensor FP64 math (a shared device: the job's "
     "part).",
     GPU_PROF_FP64_ACTIVE},
    {"nvidia_gpu_fp32_util_percent",
     "Percentage of time the GPU's SMs were doing non-tensor FP32 math (a shared device: the job's "
     "part).",
     GPU_PROF_FP32_ACTIVE},
    {"nvidia_gpu_fp16_util_percent",
     "Percentage of time the GPU's SMs were doing non-tensor FP16 math (a shared device: the job's "
     "part).",
     GPU_PROF_FP16_ACTIVE},
};

/*
 * The exporter's labels: ordinal and minor_number (a MIG instance's
 * parent's), uuid and name (the instance's own), GPU_I_ID (its GPU
 * instance, "" for a whole GPU), jobid, userid.
 */
static void nv_labels(const struct agent *a, struct strbuf *lab, int i, const struct job_entry *j)
{
	const struct gpu_device_info *d = &a->devs[i].info, *p = &a->devs[parent_of(a, i)].info;

	strbuf_reset(lab);
	label_int(lab, "ordinal", p->index);
	label_int(lab, "minor_number", p->minor_number);
	label(lab, "uuid", d->uuid);
	label(lab, "name", d->name);
	if (d->mig)
		label_int(lab, "GPU_I_ID", d->gpu_instance_id);
	else
		label(lab, "GPU_I_ID", "");
	label(lab, "jobid", j ? j->rec.job_id : "");
	if (j)
		label_int(lab, "userid", j->rec.uid);
	else
		label(lab, "userid", "");
}

/* Device i's value of family f for job j (NULL: the device's own series). */
static double nv_value(const struct agent *a, int i, int f, const struct job_entry *j,
		       const struct dev_jobs *dj)
{
	const struct gpu_sample *g = &a->gsample[i];
	const struct gpu_device_info *d = &a->devs[i].info;
	int pi = parent_of(a, i);
	/* power and temperature: the GPU's, copied to each of its MIG instances as the exporter
	 * does */
	const struct gpu_sample *pg = a->gsample_ok[pi] ? &a->gsample[pi] : NULL;
	bool device = !j || dj->exclusive;
	struct job_split s;

	if (f == NV_TOTAL)
		return d->mem_total_bytes ? (double)d->mem_total_bytes : NAN;
	if (f == NV_TEMP)
		return pg && (pg->valid & GPU_TEMP) ? pg->temp_c
						    : NAN; /* the device's, shared or not */
	if (f == NV_JOBID || f == NV_JOBUID) {
		char *end;
		double id;

		if (!j)
			return NAN;
		if (f == NV_JOBUID)
			return j->rec.uid;
		id = strtod(j->rec.job_id, &end);
		return *end ? NAN : id;
	}
	/* a GPU in MIG mode and its instances have no duty cycle in the exporter */
	if (f == NV_DUTY && (d->mig || d->mig_enabled))
		return NAN;
	if (d->mig && f == NV_POWER)
		return pg && (pg->valid & GPU_POWER) ? pg->power_mw : NAN;
	if (device) {
		switch (f) {
		case NV_USED: return g->valid & GPU_MEM_USED ? (double)g->mem_used_bytes : NAN;
		case NV_DUTY: return g->valid & GPU_UTIL ? g->util_pct : NAN;
		case NV_POWER: return g->valid & GPU_POWER ? g->power_mw : NAN;
		default:
			return agent_prof_value(g, nv_fam[f].bit, 10000);
		}
	}
	s = split_of(a, i, j, &dj->all);
	switch (f) {
	case NV_USED: return s.mem_bytes;
	case NV_DUTY: return s.util_pct;
	case NV_POWER: return s.power_mw;
	default:
		return s.share * agent_prof_value(g, nv_fam[f].bit, 10000);
	}
}

static void render_nvidia_exporter(const struct agent *a, struct strbuf *o, struct strbuf *lab)
{
	struct dev_jobs dj[GPU_MAX_DEVICES];
	int n = 0;

	for (int i = 0; i < a->gpus.ndevices && i < GPU_MAX_DEVICES; i++) {
		if (!a->gsample_ok[i] || !is_nvidia(a, i))
			continue; /* not an NVIDIA device, or lost */
		jobs_on(a, i, false, is_slurm, &dj[i]);
		n += !a->devs[i].info.mig; /* the exporter counts GPUs, not their instances */
	}
	if (n == 0)
		return;
	prom_family(o, "nvidia_gpu_num_devices", "gauge", "Number of GPU devices");
	strbuf_addf(o, "nvidia_gpu_num_devices %d\n", n);
	for (int f = 0; f < NV__COUNT; f++) {
		bool any = false;

		for (int i = 0; i < a->gpus.ndevices && i < GPU_MAX_DEVICES; i++) {
			/* the device's own series: unreserved, or shared by several */
			bool own;

			if (!a->gsample_ok[i] || !is_nvidia(a, i))
				continue;
			own = dj[i].n != 1;
			for (size_t k = 0; k < dj[i].n + own; k++) {
				const struct job_entry *j = k < dj[i].n ? dj[i].job[k] : NULL;
				double v = nv_value(a, i, f, j, &dj[i]);

				if (isnan(v))
					continue;
				if (!any)
					prom_family(o, nv_fam[f].name, "gauge", nv_fam[f].help);
				any = true;
				nv_labels(a, lab, i, j);
				sample_line(o, nv_fam[f].name, lab, v);
			}
		}
	}
}

/* ---- dcgm-exporter ---- */

enum {
	DC_SM_CLOCK,
	DC_MEM_CLOCK,
	DC_TEMP,
	DC_POWER,
	DC_ENERGY,
	DC_PCIE_REPLAY,
	DC_UTIL,
	DC_COPY,
	DC_VIOL, /* DC_VIOL + r: agent_viol_reasons[r] */
	DC_FB_USED = DC_VIOL + AGENT_VIOL_REASONS,
	DC_UNC_REMAPPED,
	DC_CORR_REMAPPED,
	DC_REMAP_FAILURE,
	DC_REMAP_PENDING,
	DC_GR_ACTIVE,
	DC_SM_ACTIVE,
	DC_SM_OCCUPANCY,
	DC_TENSOR,
	DC_DFMA,
	DC_HMMA,
	DC_IMMA,
	DC_DRAM,
	DC_FP64,
	DC_FP32,
	DC_FP16,
	DC_PCIE_TX,
	DC_PCIE_RX,
	DC__COUNT
};

/*
 * dcgm-exporter's counters in the order of its etc/default-counters.csv
 * (at d5e5f51), with its HELP; those it leaves commented out or does not
 * list (SM_ACTIVE, SM_OCCUPANCY, the FP pipes, the tensor pipes one by
 * one, the violations, ROW_REMAP_PENDING) with DCGM's own description.
 * bit: enum gpu_metric, or prof: enum gpu_prof.  The DCGM_FI_PROF_*
 * activity fields are ratios 0-1 (NVML GPM's percent / 100).
 */
static const struct {
	const char *name, *type, *help;
	uint32_t bit, prof;
	bool split; /* a job on a shared device gets its own value */
} dc_fam[DC__COUNT] = {
    [DC_SM_CLOCK] = {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", GPU_SM_CLOCK,
		     0, false},
    [DC_MEM_CLOCK] = {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).",
		      GPU_MEM_CLOCK, 0, false},
    [DC_TEMP] = {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", GPU_TEMP, 0, false},
    [DC_POWER] = {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", GPU_POWER, 0, true},
    [DC_ENERGY] = {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
		   "Total energy consumption since boot (in mJ).", GPU_ENERGY, 0, true},
    [DC_PCIE_REPLAY] = {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter",
			"Total number of PCIe retries.", 0, GPU_PROF_PCIE_REPLAY, false},
    [DC_UTIL] = {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", GPU_UTIL, 0, true},
    [DC_COPY] = {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", GPU_MEM_UTIL,
		 0, false},
    [DC_FB_USED] = {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).",
		    GPU_MEM_USED, 0, true},
    [DC_UNC_REMAPPED] = {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
			 "Number of remapped rows for uncorrectable errors", 0,
			 GPU_PROF_REMAPPED_ROWS, false},
    [DC_CORR_REMAPPED] = {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
			  "Number of remapped rows for correctable errors", 0,
			  GPU_PROF_REMAPPED_ROWS, false},
    [DC_REMAP_FAILURE] = {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge",
			  "Whether remapping of rows has failed", 0, GPU_PROF_REMAPPED_ROWS, false},
    [DC_REMAP_PENDING] = {"DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge",
			  "Whether remapping of rows is pending", 0, GPU_PROF_REMAPPED_ROWS, false},
    [DC_GR_ACTIVE] =
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
	 "Ratio of time the graphics engine is active (a shared device: the job's part).", 0,
	 GPU_PROF_GR_ACTIVE, true},
    [DC_SM_ACTIVE] = {"DCGM_FI_PROF_SM_ACTIVE", "gauge",
		      "The ratio of cycles an SM has at least 1 warp assigned (a shared device: "
		      "the job's part).",
		      0, GPU_PROF_SM_ACTIVE, true},
    [DC_SM_OCCUPANCY] =
	{"DCGM_FI_PROF_SM_OCCUPANCY", "gauge",
	 "The ratio of number of warps resident on an SM (a shared device: the job's part).", 0,
	 GPU_PROF_SM_OCCUPANCY, true},
    [DC_TENSOR] =
	{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
	 "Ratio of cycles the tensor (HMMA) pipe is active (a shared device: the job's part).", 0,
	 GPU_PROF_TENSOR_ACTIVE, true},
    [DC_DFMA] =
	{"DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE", "gauge",
	 "The ratio of cycles the tensor (DFMA) pipe is active (a shared device: the job's part).",
	 0, GPU_PROF_DFMA_TENSOR, true},
    [DC_HMMA] =
	{"DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE", "gauge",
	 "The ratio of cycles the tensor (HMMA) pipe is active (a shared device: the job's part).",
	 0, GPU_PROF_HMMA_TENSOR, true},
    [DC_IMMA] =
	{"DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE", "gauge",
	 "The ratio of cycles the tensor (IMMA) pipe is active (a shared device: the job's part).",
	 0, GPU_PROF_IMMA_TENSOR, true},
    [DC_DRAM] = {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
		 "Ratio of cycles the device memory interface is active sending or receiving data "
		 "(a shared "
		 "device: the job's part).",
		 0, GPU_PROF_DRAM_ACTIVE, true},
    [DC_FP64] = {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", "gauge",
		 "Ratio of cycles the fp64 pipes are active (a shared device: the job's part).", 0,
		 GPU_PROF_FP64_ACTIVE, true},
    [DC_FP32] = {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", "gauge",
		 "Ratio of cycles the fp32 pipes are active (a shared device: the job's part).", 0,
		 GPU_PROF_FP32_ACTIVE, true},
    [DC_FP16] = {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", "gauge",
		 "Ratio of cycles the fp16 pipes are active (a shared device: the job's part).", 0,
		 GPU_PROF_FP16_ACTIVE, true},
    [DC_PCIE_TX] = {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
		    "The rate of data transmitted over the PCIe bus - including both protocol "
		    "headers and data "
		    "payloads - in bytes per second.",
		    GPU_PCIE, 0, false},
    [DC_PCIE_RX] =
	{"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
	 "The rate of data received over the PCIe bus - including both protocol headers and data "
	 "payloads - in bytes per second.",
	 GPU_PCIE, 0, false},
};

/* Family f's name, type and HELP (a violation's from agent_viol_reasons). */
static void dc_head(struct strbuf *o, int f)
{
	if (f >= DC_VIOL && f < DC_VIOL + AGENT_VIOL_REASONS) {
		const struct agent_viol_reason *r = &agent_viol_reasons[f - DC_VIOL];

		prom_family(o, r->dcgm, "counter", r->dcgm_help);
		return;
	}
	prom_family(o, dc_fam[f].name, dc_fam[f].type, dc_fam[f].help);
}

static const char *dc_name(int f)
{
	if (f >= DC_VIOL && f < DC_VIOL + AGENT_VIOL_REASONS)
		return agent_viol_reasons[f - DC_VIOL].dcgm;
	return dc_fam[f].name;
}

static double dc_device_value(const struct gpu_sample *g, int f)
{
	if (f >= DC_VIOL && f < DC_VIOL + AGENT_VIOL_REASONS) {
		int64_t ns = agent_viol_ns(g, agent_viol_reasons[f - DC_VIOL].bit);

		return ns < 0 ? NAN : (double)ns;
	}
	if (dc_fam[f].prof && !(g->prof_valid & dc_fam[f].prof))
		return NAN;
	if (dc_fam[f].bit && !(g->valid & dc_fam[f].bit))
		return NAN;
	switch (f) {
	case DC_SM_CLOCK: return g->sm_clock_mhz;
	case DC_MEM_CLOCK: return g->mem_clock_mhz;
	case DC_TEMP: return g->temp_c;
	case DC_POWER: return g->power_mw / 1000.0;
	case DC_ENERGY: return (double)g->energy_mj;
	case DC_PCIE_REPLAY:
		return (double)g->pcie_replays;
	case DC_UTIL: return g->util_pct;
	case DC_COPY: return g->mem_util_pct;
	case DC_FB_USED: return floor((double)g->mem_used_bytes / MIB);
	case DC_UNC_REMAPPED:
		return (double)g->remapped_rows_unc;
	case DC_CORR_REMAPPED:
		return (double)g->remapped_rows_corr;
	case DC_REMAP_FAILURE:
		return g->remap_failed != 0;
	case DC_REMAP_PENDING:
		return g->remap_pending != 0;
	case DC_PCIE_TX: return (double)g->pcie_tx_bps;
	case DC_PCIE_RX: return (double)g->pcie_rx_bps;
	default:
		return agent_prof_value(g, dc_fam[f].prof, 10000);
	}
}

static double dc_split_value(const struct gpu_sample *g, const struct job_split *s, int f)
{
	switch (f) {
	case DC_POWER: return s->power_mw / 1000.0;
	case DC_ENERGY: return isnan(s->energy_mj) ? NAN : floor(s->energy_mj);
	case DC_UTIL: return s->util_pct;
	case DC_FB_USED: return floor(s->mem_bytes / MIB);
	default:
		if (f < DC__COUNT && dc_fam[f].split && dc_fam[f].prof)
			return s->share * dc_device_value(g, f);
		return NAN;
	}
}

static bool dcgm_job(const struct job_entry *j)
{
	return is_slurm(j) || is_k8s(j);
}

/*
 * dcgm-exporter's `container` of a pod's device: the container of the
 * pod's first process on it, else the pod's one container; NULL when
 * neither says.
 */
static const char *dc_container(const struct agent *a, int i, const struct job_entry *j)
{
	for (size_t k = 0; a->gprocs.proc && k < a->gprocs.n; k++) {
		const struct gpu_set_proc *gp = &a->gprocs.proc[k];
		const struct ptree_proc *p = gp->proc;

		if (gp->dev != i || !p || !p->container || p->container > j->k8s.ncontainers ||
		    p->tag != (int32_t)(j - a->jobs.job) + 1)
			continue;
		return j->k8s.container[p->container - 1].name;
	}
	return j->k8s.ncontainers == 1 ? j->k8s.container[0].name : NULL;
}

/*
 * dcgm-exporter's labels (rendermetrics/render_metrics.go, collector's
 * toMetric): gpu, UUID, pci_bus_id, device ("nvidia" and the GPU's DCGM
 * id, which is its NVML index, not its minor number), modelName of the
 * GPU, a MIG instance's parent's; for a MIG instance GPU_I_PROFILE and
 * GPU_I_ID (its GPU instance); Hostname; DCGM_FI_DRIVER_VERSION; the job.
 */
static void dc_labels(const struct agent *a, struct strbuf *lab, int i, const struct job_entry *j)
{
	const struct device_record *d = &a->devs[i], *p = &a->devs[parent_of(a, i)];
	char dev[24];

	strbuf_reset(lab);
	label_int(lab, "gpu", p->info.index);
	label(lab, "UUID", p->info.uuid);
	label(lab, "pci_bus_id", p->info.pci_bus_id);
	if (p->info.valid & GPU_INFO_MINOR) { /* an NVIDIA device */
		snprintf(dev, sizeof(dev), "nvidia%d", p->info.index);
		label(lab, "device", dev);
	}
	label(lab, "modelName", p->info.name);
	if (d->info.mig) {
		label(lab, "GPU_I_PROFILE", d->info.mig_profile);
		label_int(lab, "GPU_I_ID", d->info.gpu_instance_id);
	}
	label(lab, "Hostname", a->hostname);
	if (p->driver_version[0])
		label(lab, "DCGM_FI_DRIVER_VERSION", p->driver_version);
	if (j)
		label(lab, is_k8s(j) ? "pod_uid" : "hpc_job", j->rec.job_id);
	if (j && is_k8s(j) && j->k8s.pod[0]) {
		const char *container = dc_container(a, i, j);

		label(lab, "pod", j->k8s.pod);
		label(lab, "namespace", j->k8s.namespace_);
		if (container)
			label(lab, "container", container);
	}
}

static void render_dcgm(const struct agent *a, struct strbuf *o, struct strbuf *lab)
{
	struct dev_jobs dj[GPU_MAX_DEVICES];

	for (int i = 0; i < a->gpus.ndevices && i < GPU_MAX_DEVICES; i++)
		if (a->gsample_ok[i])
			jobs_on(a, i, true, dcgm_job, &dj[i]);
	for (int f = 0; f < DC__COUNT; f++) {
		bool any = false, split = f < DC_VIOL || f >= DC_VIOL + AGENT_VIOL_REASONS
					      ? dc_fam[f].split
					      : false;

		for (int i = 0; i < a->gpus.ndevices && i < GPU_MAX_DEVICES; i++) {
			const struct job_entry *owner;
			double v;

			if (!a->gsample_ok[i])
				continue;
			owner = dj[i].n == 1 && dj[i].exclusive ? dj[i].job[0] : NULL;
			v = dc_device_value(&a->gsample[i], f);
			if (!isnan(v)) {
				if (!any)
					dc_head(o, f);
				any = true;
				dc_labels(a, lab, i, owner);
				sample_line(o, dc_name(f), lab, v);
			}
			if (owner || !split)
				continue;
			for (size_t k = 0; k < dj[i].n; k++) {
				struct job_split s = split_of(a, i, dj[i].job[k], &dj[i].all);

				v = dc_split_value(&a->gsample[i], &s, f);
				if (isnan(v))
					continue;
				if (!any)
					dc_head(o, f);
				any = true;
				dc_labels(a, lab, i, dj[i].job[k]);
				sample_line(o, dc_name(f), lab, v);
			}
		}
	}
}

void agent_render_compat(const struct agent *a, struct strbuf *o, struct strbuf *lab)
{
	if (a->opt->compat & AGENT_COMPAT_JOBSTATS) {
		render_cgroup_exporter(a, o, lab);
		render_nvidia_exporter(a, o, lab);
	}
	if (a->opt->compat & AGENT_COMPAT_DCGM)
		render_dcgm(a, o, lab);
}
