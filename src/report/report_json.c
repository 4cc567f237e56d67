/*
 * report_json.c - the run report as JSON (schema in docs/report-json.md).
 * Times are RFC 3339 strings with a _ms twin; missing values are null.
 */
#include "report/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/timeutil.h"

static void kv_time(struct jsonw *w, const char *key, int64_t ms)
{
	char buf[40];

	jsonw_key(w, key);
	if (ms <= 0) {
		jsonw_null(w);
		return;
	}
	format_rfc3339_ms(ms, buf, sizeof(buf));
	jsonw_str(w, buf);
}

static void kv_time_ms(struct jsonw *w, const char *key, int64_t ms)
{
	jsonw_kv_int_opt(w, key, ms > 0, ms);
}

static void write_run(struct jsonw *w, const struct summary *s)
{
	const struct job_record *j = &s->job;

	jsonw_key(w, "run");
	jsonw_obj_begin(w);
	jsonw_kv_int(w, "id", j->id);
	jsonw_kv_str_opt(w, "name", j->name[0] ? j->name : NULL);
	jsonw_kv_str(w, "command", j->command);
	jsonw_kv_str(w, "host", j->hostname);
	jsonw_kv_str_opt(w, "user", j->user[0] ? j->user : NULL);
	jsonw_kv_int_opt(w, "pid", j->pid > 0, j->pid);
	kv_time(w, "start", j->start_ms);
	kv_time_ms(w, "start_ms", j->start_ms);
	kv_time(w, "end", j->end_ms);
	kv_time_ms(w, "end_ms", j->end_ms);
	jsonw_kv_double_opt(w, "duration_s", j->end_ms > 0, summary_duration_s(s), 3);
	jsonw_kv_int_opt(w, "exit_code", j->has_exit && j->signal == 0, j->exit_code);
	jsonw_kv_int_opt(w, "signal", j->has_exit && j->signal != 0, j->signal);
	jsonw_kv_int_opt(w, "status", j->has_exit, j->signal ? 128 + j->signal : j->exit_code);
	jsonw_kv_bool(w, "timed_out", j->timed_out);
	jsonw_kv_bool(w, "finished", j->end_ms > 0);
	jsonw_kv_str(w, "scheduler", j->scheduler);
	jsonw_kv_str(w, "job_id", j->job_id);
	jsonw_obj_end(w);
}

/*
 * What a scheduler reserved for the job and how much of it was used (agent
 * jobs); null for a `jobscope run`, which reserves nothing.
 */
static void write_reservation(struct jsonw *w, const struct summary *s)
{
	const struct job_record *j = &s->job;
	double eff = summary_mem_efficiency_pct(s);
	int used = 0;

	jsonw_key(w, "reservation");
	if (!j->reservation_source[0] && !j->cgroup[0]) {
		jsonw_null(w);
		return;
	}
	for (int i = 0; i < s->ngpus; i++)
		used += s->gpus[i].used;
	jsonw_obj_begin(w);
	jsonw_kv_str_opt(w, "source", j->reservation_source[0] ? j->reservation_source : NULL);
	jsonw_kv_str_opt(w, "cgroup", j->cgroup[0] ? j->cgroup : NULL);
	jsonw_kv_str_opt(w, "step", j->step[0] ? j->step : NULL);
	jsonw_kv_double_opt(w, "cpus", j->reserved_cpus > 0, j->reserved_cpus, 3);
	jsonw_kv_double_opt(w, "cpu_efficiency_pct", !isnan(summary_efficiency_pct(s)),
			    summary_efficiency_pct(s), 1);
	jsonw_kv_int_opt(w, "memory_bytes", j->reserved_mem_bytes > 0,
			 (int64_t)j->reserved_mem_bytes);
	jsonw_kv_int(w, "memory_peak_bytes", (int64_t)summary_rss_peak(s, NULL));
	jsonw_kv_double_opt(w, "memory_efficiency_pct", !isnan(eff), eff, 1);
	jsonw_kv_int_opt(w, "cgroup_memory_peak_bytes", s->has_cg_mem_peak,
			 (int64_t)s->cg_mem_peak_bytes);
	jsonw_kv_double_opt(w, "cgroup_cpu_seconds", s->has_cg_cpu, s->cg_cpu_ms / 1000.0, 3);
	jsonw_kv_int_opt(w, "gpus", j->has_reserved_gpus, j->reserved_gpus);
	jsonw_kv_str_opt(w, "gpu_list", j->reserved_gpu_list[0] ? j->reserved_gpu_list : NULL);
	jsonw_kv_int(w, "gpus_used", used);
	jsonw_obj_end(w);
}

static void write_cpu(struct jsonw *w, const struct summary *s)
{
	const struct job_record *j = &s->job;
	bool have = s->samples > 0;
	double avg = summary_cores_avg(s);
	double peak = s->cores_peak;

	if (!isnan(avg) && peak < avg)
		peak = avg; /* the busiest window is at least the average */
	jsonw_key(w, "cpu");
	jsonw_obj_begin(w);
	jsonw_kv_double_opt(w, "cpu_seconds", have, summary_cpu_seconds(s), 3);
	jsonw_kv_double_opt(w, "user_seconds", have, (double)s->last.user_ms / 1000.0, 3);
	jsonw_kv_double_opt(w, "system_seconds", have, (double)s->last.system_ms / 1000.0, 3);
	jsonw_kv_double_opt(w, "cores_avg", have && !isnan(avg), avg, 3);
	jsonw_kv_double_opt(w, "cores_peak", have && !isnan(avg), peak, 3);
	kv_time(w, "cores_peak_at", s->cores_peak_at_ms);
	jsonw_kv_int_opt(w, "host_cores", j->host_cores > 0, j->host_cores);
	jsonw_kv_int_opt(w, "cores_allowed", j->cores_allowed > 0, j->cores_allowed);
	jsonw_kv_double_opt(w, "efficiency_pct", !isnan(summary_efficiency_pct(s)),
			    summary_efficiency_pct(s), 1);
	jsonw_obj_end(w);
}

static void write_memory(struct jsonw *w, const struct summary *s)
{
	int64_t at = 0;
	uint64_t peak = summary_rss_peak(s, &at);
	bool have = s->samples > 0;

	jsonw_key(w, "memory");
	jsonw_obj_begin(w);
	jsonw_kv_int_opt(w, "rss_peak_bytes", have, (int64_t)peak);
	kv_time(w, "rss_peak_at", have ? at : 0);
	jsonw_kv_int_opt(w, "swap_peak_bytes", s->has_swap, (int64_t)s->swap_peak_bytes);
	jsonw_kv_int_opt(w, "host_total_bytes", s->job.host_mem_bytes > 0,
			 (int64_t)s->job.host_mem_bytes);
	jsonw_obj_end(w);
}

static void write_io(struct jsonw *w, const struct summary *s)
{
	bool have = s->has_io && (s->last.valid & JS_IO);

	jsonw_key(w, "io");
	jsonw_obj_begin(w);
	jsonw_kv_int_opt(w, "read_bytes", have, (int64_t)s->last.read_bytes);
	jsonw_kv_int_opt(w, "write_bytes", have, (int64_t)s->last.write_bytes);
	jsonw_kv_double_opt(w, "read_peak_bps", have, s->read_peak_bps, 0);
	jsonw_kv_double_opt(w, "write_peak_bps", have, s->write_peak_bps, 0);
	jsonw_obj_end(w);
}

static int64_t delta(uint64_t a, uint64_t b)
{
	return b > a ? (int64_t)(b - a) : 0;
}

static void write_network(struct jsonw *w, const struct summary *s)
{
	const struct host_point *a = &s->host_first, *b = &s->host_last;
	bool have = s->host_samples >= 1 && (a->valid & HOST_HAS_NET) && (b->valid & HOST_HAS_NET);

	jsonw_key(w, "network");
	jsonw_obj_begin(w);
	jsonw_kv_str(w, "scope", "host");
	jsonw_kv_str(w, "note",
		     "all interfaces of the host except lo, not only this command's traffic");
	jsonw_kv_int_opt(w, "rx_bytes", have, delta(a->net_rx_bytes, b->net_rx_bytes));
	jsonw_kv_int_opt(w, "tx_bytes", have, delta(a->net_tx_bytes, b->net_tx_bytes));
	jsonw_kv_int_opt(w, "rx_packets", have, delta(a->net_rx_packets, b->net_rx_packets));
	jsonw_kv_int_opt(w, "tx_packets", have, delta(a->net_tx_packets, b->net_tx_packets));
	jsonw_obj_end(w);
}

static void write_host(struct jsonw *w, const struct summary *s)
{
	const struct host_point *a = &s->host_first, *b = &s->host_last;
	bool disk =
	    s->host_samples >= 1 && (a->valid & HOST_HAS_DISK) && (b->valid & HOST_HAS_DISK);
	double util = summary_host_cpu_util_pct(s);

	jsonw_key(w, "host");
	jsonw_obj_begin(w);
	jsonw_kv_str(w, "name", s->job.hostname);
	jsonw_kv_int_opt(w, "cores", s->job.host_cores > 0, s->job.host_cores);
	jsonw_kv_int_opt(w, "mem_total_bytes", s->job.host_mem_bytes > 0,
			 (int64_t)s->job.host_mem_bytes);
	jsonw_kv_double_opt(w, "cpu_util_avg_pct", !isnan(util), util, 1);
	jsonw_kv_int_opt(w, "mem_available_min_bytes", s->host_mem_available_min != UINT64_MAX,
			 (int64_t)s->host_mem_available_min);
	jsonw_kv_double_opt(w, "load1_max", s->host_samples > 0 && (b->valid & HOST_HAS_LOAD),
			    s->host_load1_max_milli / 1000.0, 2);
	jsonw_kv_int_opt(w, "disk_read_bytes", disk, delta(a->disk_read_bytes, b->disk_read_bytes));
	jsonw_kv_int_opt(w, "disk_write_bytes", disk,
			 delta(a->disk_write_bytes, b->disk_write_bytes));
	jsonw_key(w, "pressure_stall_s");
	jsonw_obj_begin(w);
	jsonw_kv_double_opt(w, "cpu_some", (b->valid & HOST_HAS_PSI_CPU) != 0,
			    delta(a->psi_cpu_some_us, b->psi_cpu_some_us) / 1e6, 3);
	jsonw_kv_double_opt(w, "memory_some", (b->valid & HOST_HAS_PSI_MEM) != 0,
			    delta(a->psi_mem_some_us, b->psi_mem_some_us) / 1e6, 3);
	jsonw_kv_double_opt(w, "memory_full", (b->valid & HOST_HAS_PSI_MEM) != 0,
			    delta(a->psi_mem_full_us, b->psi_mem_full_us) / 1e6, 3);
	jsonw_kv_double_opt(w, "io_some", (b->valid & HOST_HAS_PSI_IO) != 0,
			    delta(a->psi_io_some_us, b->psi_io_some_us) / 1e6, 3);
	jsonw_kv_double_opt(w, "io_full", (b->valid & HOST_HAS_PSI_IO) != 0,
			    delta(a->psi_io_full_us, b->psi_io_full_us) / 1e6, 3);
	jsonw_obj_end(w);
	jsonw_obj_end(w);
}

static void write_timeline(struct jsonw *w, const struct summary *s)
{
	jsonw_key(w, "timeline");
	jsonw_obj_begin(w);
	jsonw_kv_double(w, "bucket_s", s->bucket_ms / 1000.0, 3);
	jsonw_key(w, "buckets");
	jsonw_arr_begin(w);
	for (int i = 0; i < SUMMARY_BUCKETS; i++) {
		const struct summary_bucket *b = &s->buckets[i];

		if (!b->used)
			continue;
		jsonw_obj_begin(w);
		jsonw_kv_double(w, "t_s", (b->start_ms - s->job.start_ms) / 1000.0, 3);
		jsonw_kv_double_opt(w, "cores", b->span_ms > 0,
				    b->span_ms > 0 ? (double)b->cpu_ms / (double)b->span_ms : 0, 3);
		jsonw_kv_int(w, "rss_bytes", (int64_t)b->rss_max);
		if (s->ngpus) {
			jsonw_key(w, "gpu_util_pct");
			jsonw_arr_begin(w);
			for (int g = 0; g < s->ngpus; g++) {
				const struct gpu_summary *gs = &s->gpus[g];

				if (!gs->used)
					continue;
				if (gs->bucket_util_ms[i])
					jsonw_double(w,
						     gs->bucket_util_pct_ms[i] /
							 (double)gs->bucket_util_ms[i],
						     1);
				else
					jsonw_null(w);
			}
			jsonw_arr_end(w);
		}
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
	jsonw_obj_end(w);
}

static int by_start(const void *pa, const void *pb)
{
	const struct proc_summary *a = pa, *b = pb;

	if (a->start_ms != b->start_ms)
		return a->start_ms < b->start_ms ? -1 : 1;
	return a->pid < b->pid ? -1 : a->pid > b->pid;
}

static void write_processes(struct jsonw *w, const struct summary *s)
{
	struct proc_summary *sorted = NULL;
	const struct proc_summary *procs = s->procs;

	if (s->nprocs) {
		sorted = malloc(s->nprocs * sizeof(*sorted));
		if (sorted) {
			memcpy(sorted, s->procs, s->nprocs * sizeof(*sorted));
			qsort(sorted, s->nprocs, sizeof(*sorted), by_start);
			procs = sorted;
		}
	}
	jsonw_key(w, "processes");
	jsonw_arr_begin(w);
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct proc_summary *p = &procs[i];

		jsonw_obj_begin(w);
		jsonw_kv_int(w, "pid", p->pid);
		jsonw_kv_int(w, "ppid", p->ppid);
		jsonw_kv_str(w, "comm", p->comm);
		jsonw_kv_str(w, "cmdline", p->cmdline ? p->cmdline : "");
		jsonw_kv_double(w, "cpu_seconds", (p->user_ms + p->system_ms) / 1000.0, 3);
		jsonw_kv_double(w, "user_seconds", p->user_ms / 1000.0, 3);
		jsonw_kv_double(w, "system_seconds", p->system_ms / 1000.0, 3);
		jsonw_kv_int_opt(w, "rss_peak_bytes", p->has_rss, (int64_t)p->rss_peak_bytes);
		jsonw_kv_int_opt(w, "swap_peak_bytes", p->has_swap, (int64_t)p->swap_peak_bytes);
		jsonw_kv_int_opt(w, "read_bytes", p->has_io, (int64_t)p->read_bytes);
		jsonw_kv_int_opt(w, "write_bytes", p->has_io, (int64_t)p->write_bytes);
		jsonw_kv_int_opt(w, "threads_peak", p->threads_peak > 0, p->threads_peak);
		/* known 0 when process lists were read and it was on no GPU */
		jsonw_kv_int_opt(w, "gpu_mem_peak_bytes", p->has_gpu_mem || s->gpu_procs_known,
				 (int64_t)p->gpu_mem_peak_bytes);
		jsonw_kv_double_opt(
		    w, "gpu_util_avg_pct", p->gpu_util_n > 0,
		    p->gpu_util_n ? (double)p->gpu_util_sum / (double)p->gpu_util_n : 0, 1);
		kv_time(w, "start", p->start_ms);
		kv_time(w, "end", p->end_ms);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
	free(sorted);
}

static void write_events(struct jsonw *w, const struct summary *s)
{
	jsonw_key(w, "events");
	jsonw_arr_begin(w);
	for (size_t i = 0; i < s->nevents; i++) {
		const struct event_record *e = &s->events[i];

		jsonw_obj_begin(w);
		kv_time(w, "time", e->ts_ms);
		jsonw_kv_str(w, "kind", e->kind);
		jsonw_kv_int_opt(w, "pid", e->pid > 0, e->pid);
		jsonw_kv_int(w, "value", e->value);
		jsonw_kv_str(w, "message", e->message);
		jsonw_kv_int_opt(w, "gpu", e->has_gpu, e->gpu);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
}

static void write_gpu_events(struct jsonw *w, const struct summary *s, int index)
{
	jsonw_key(w, "events");
	jsonw_arr_begin(w);
	for (size_t i = 0; i < s->nevents; i++) {
		const struct event_record *e = &s->events[i];

		if (!e->has_gpu || e->gpu != index)
			continue;
		jsonw_obj_begin(w);
		kv_time(w, "time", e->ts_ms);
		jsonw_kv_double(w, "t_s", (e->ts_ms - s->job.start_ms) / 1000.0, 3);
		jsonw_kv_str(w, "kind", e->kind);
		jsonw_kv_int(w, "value", e->value);
		jsonw_kv_str(w, "message", e->message);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
}

/* The GPU a MIG instance is a slice of: the summary's device of that index in MIG mode. */
static const struct gpu_summary *mig_parent(const struct summary *s, const struct gpu_summary *g)
{
	for (int i = 0; i < s->ngpus; i++)
		if (!s->gpus[i].dev.info.mig && s->gpus[i].dev.info.index == g->dev.info.index &&
		    strcmp(s->gpus[i].dev.vendor, g->dev.vendor) == 0)
			return &s->gpus[i];
	return NULL;
}

/* A MIG instance's slice and parent (null for a whole GPU). */
static void write_gpu_mig(struct jsonw *w, const struct summary *s, const struct gpu_summary *g)
{
	const struct gpu_device_info *d = &g->dev.info;
	const struct gpu_summary *parent;

	jsonw_key(w, "mig");
	if (!d->mig) {
		jsonw_null(w);
		return;
	}
	parent = mig_parent(s, g);
	jsonw_obj_begin(w);
	jsonw_kv_str_opt(w, "profile", d->mig_profile[0] ? d->mig_profile : NULL);
	jsonw_kv_int(w, "gpu_instance_id", d->gpu_instance_id);
	jsonw_kv_int(w, "compute_instance_id", d->compute_instance_id);
	jsonw_kv_int(w, "parent_index", d->index);
	jsonw_kv_str_opt(w, "parent_uuid", parent ? parent->dev.info.uuid : NULL);
	jsonw_kv_str_opt(w, "parent_name", parent ? parent->dev.info.name : NULL);
	jsonw_obj_end(w);
}

/*
 * What the SMs did: each activity's average over the job's time on the
 * GPU, the job's part ("<name>_avg_pct") and the device's
 * ("device_<name>_avg_pct"), and throttle seconds per reason.
 */
static void write_gpu_activity(struct jsonw *w, const struct gpu_summary *g)
{
	char key[64];

	for (int a = 0; a < GPU_ACTIVITY__COUNT; a++) {
		double job = summary_gpu_activity_pct(g, a, true);

		snprintf(key, sizeof(key), "%s_avg_pct", gpu_activity_kinds[a].name);
		jsonw_kv_double_opt(w, key, !isnan(job), job, 2);
	}
	for (int a = 0; a < GPU_ACTIVITY__COUNT; a++) {
		double dev = summary_gpu_activity_pct(g, a, false);

		snprintf(key, sizeof(key), "device_%s_avg_pct", gpu_activity_kinds[a].name);
		jsonw_kv_double_opt(w, key, !isnan(dev), dev, 2);
	}
	for (int v = 0; v < GPU_VIOLATION__COUNT; v++) {
		double t = summary_gpu_throttle_s(g, v);

		snprintf(key, sizeof(key), "throttle_%s_s", gpu_violation_kinds[v].name);
		jsonw_kv_double_opt(w, key, !isnan(t), t, 3);
	}
}

static void write_gpus(struct jsonw *w, const struct summary *s)
{
	jsonw_key(w, "gpus");
	jsonw_arr_begin(w);
	for (int i = 0; i < s->ngpus; i++) {
		const struct gpu_summary *g = &s->gpus[i];
		const struct gpu_device_info *d = &g->dev.info;
		double span_s = g->energy_span_ms / 1000.0;
		int p95 = summary_gpu_util_pct(g, 95);

		if (!g->used)
			continue;
		jsonw_obj_begin(w);
		jsonw_kv_int(w, "index", d->index);
		jsonw_kv_str(w, "uuid", d->uuid);
		jsonw_kv_str(w, "name", d->name);
		jsonw_kv_str(w, "vendor", g->dev.vendor);
		write_gpu_mig(w, s, g);
		jsonw_kv_double_opt(w, "util_avg_pct", g->util_n > 0,
				    g->util_n ? (double)g->util_sum / (double)g->util_n : 0, 1);
		jsonw_kv_int_opt(w, "util_p95_pct", p95 >= 0, p95);
		jsonw_kv_int_opt(w, "mem_used_peak_bytes", g->has_mem,
				 (int64_t)g->mem_used_peak_bytes);
		jsonw_kv_int_opt(w, "mem_total_bytes", d->valid & GPU_INFO_MEM_TOTAL,
				 (int64_t)d->mem_total_bytes);
		jsonw_kv_int_opt(w, "pcie_rx_bytes", g->has_pcie,
				 (int64_t)llround(g->pcie_rx_bytes));
		jsonw_kv_int_opt(w, "pcie_tx_bytes", g->has_pcie,
				 (int64_t)llround(g->pcie_tx_bytes));
		jsonw_kv_int_opt(w, "nvlink_rx_bytes", g->has_nvlink, (int64_t)g->nvlink_rx_bytes);
		jsonw_kv_int_opt(w, "nvlink_tx_bytes", g->has_nvlink, (int64_t)g->nvlink_tx_bytes);
		jsonw_kv_double_opt(w, "energy_j", g->has_energy, g->job_energy_mj / 1000.0, 3);
		jsonw_kv_double_opt(w, "power_avg_w", g->has_energy && span_s > 0,
				    span_s > 0 ? g->job_energy_mj / 1000.0 / span_s : 0, 2);
		jsonw_kv_double_opt(w, "device_energy_j", g->has_energy, g->energy_mj / 1000.0, 3);
		jsonw_kv_double_opt(w, "energy_unattributed_j", g->has_energy,
				    g->unattributed_mj / 1000.0, 3);
		jsonw_kv_double_opt(w, "device_power_avg_w", g->has_energy && span_s > 0,
				    span_s > 0 ? g->energy_mj / 1000.0 / span_s : 0, 2);
		jsonw_kv_double_opt(
		    w, "throttled_pct", g->throttle_n > 0,
		    g->throttle_n ? 100.0 * (double)g->throttled / (double)g->throttle_n : 0, 1);
		write_gpu_activity(w, g);
		jsonw_kv_int_opt(w, "temp_max_c", g->has_temp, g->temp_max_c);
		jsonw_kv_int_opt(w, "ecc_corrected", g->has_ecc,
				 (int64_t)(g->ecc_corrected_last - g->ecc_corrected_first));
		jsonw_kv_int_opt(w, "ecc_uncorrected", g->has_ecc,
				 (int64_t)(g->ecc_uncorrected_last - g->ecc_uncorrected_first));
		write_gpu_events(w, s, d->index);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
	jsonw_key(w, "gpus_not_used");
	jsonw_arr_begin(w);
	for (int i = 0; i < s->ngpus; i++) {
		const struct gpu_summary *g = &s->gpus[i];

		if (g->used)
			continue;
		jsonw_obj_begin(w);
		jsonw_kv_int(w, "index", g->dev.info.index);
		jsonw_kv_str(w, "uuid", g->dev.info.uuid);
		jsonw_kv_str(w, "name", g->dev.info.name);
		write_gpu_mig(w, s, g);
		jsonw_kv_str(w, "note",
			     g->dev.info.mig_enabled
				 ? "in MIG mode: its slices are GPUs of their own, listed apart"
			     : s->gpu_procs_known
				 ? "visible to the command; none of its processes used it"
				 : "the driver gives no process lists: use unknown");
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
}

static void write_sampler(struct jsonw *w, const struct summary *s)
{
	const struct job_record *j = &s->job;
	double cpu_s = (double)j->sampler_cpu_ms / 1000.0;
	double dur = summary_duration_s(s);

	jsonw_key(w, "sampler");
	jsonw_obj_begin(w);
	jsonw_kv_int(w, "interval_ms", j->interval_ms);
	jsonw_kv_int(w, "samples", j->samples);
	jsonw_kv_int(w, "lost_samples", j->lost_samples);
	/* a job not sampled by jobscope (read from Prometheus: prom/promsrc.h): unknown */
	bool ours = j->id > 0 || strcmp(j->scheduler, "run") == 0;

	jsonw_kv_double_opt(w, "cpu_seconds", ours, cpu_s, 3);
	jsonw_kv_double_opt(w, "overhead_pct", ours && dur > 0, dur > 0 ? cpu_s / dur * 100.0 : 0,
			    2);
	/* only a report of another source says which and how (a store's JSON is as it was) */
	if (s->origin.kind == SAMPLE_SOURCE_PROMETHEUS) {
		jsonw_kv_str(w, "source", "prometheus");
		jsonw_kv_str(w, "step_reason", s->origin.step_why);
		jsonw_kv_str(w, "io_source", s->origin.io_from);
	}
	jsonw_obj_end(w);
}

static void kv_count(struct jsonw *w, const char *key, int v)
{
	jsonw_kv_int_opt(w, key, v >= 0, v);
}

static void write_trend(struct jsonw *w, const char *key, const struct memory_trend *t)
{
	jsonw_key(w, key);
	if (!t->valid) {
		jsonw_null(w);
		return;
	}
	jsonw_obj_begin(w);
	jsonw_kv_double(w, "slope_bytes_per_s", t->slope_bps, 1);
	jsonw_kv_double(w, "r2", t->r2, 3);
	jsonw_kv_double(w, "level_bytes", t->level_bytes, 0);
	jsonw_kv_double(w, "limit_bytes", t->limit_bytes, 0);
	jsonw_kv_bool(w, "growing", t->growing);
	jsonw_kv_double(w, "time_to_limit_s", t->time_to_limit_s, 0);
	jsonw_obj_end(w);
}

static void write_analysis(struct jsonw *w, const struct analysis *a)
{
	char key[64];

	jsonw_key(w, "analysis");
	if (!a) {
		jsonw_null(w);
		return;
	}
	jsonw_obj_begin(w);
	jsonw_kv_bool(w, "too_short", a->too_short);
	jsonw_key(w, "efficiency");
	jsonw_obj_begin(w);
	jsonw_key(w, "cpu");
	jsonw_obj_begin(w);
	jsonw_kv_double(w, "cores_avg", a->cores_avg, 3);
	jsonw_kv_double(w, "cores_p95", a->cores_p95, 3);
	jsonw_kv_double(w, "cores_reserved", a->cores_reserved, 2);
	jsonw_kv_str_opt(w, "cores_from",
			 isnan(a->cores_reserved)    ? NULL
			 : a->cores_from_reservation ? "reservation"
						     : "affinity");
	jsonw_kv_double(w, "efficiency_pct", a->cpu_eff_pct, 1);
	jsonw_obj_end(w);
	jsonw_key(w, "memory");
	jsonw_obj_begin(w);
	jsonw_kv_double(w, "peak_bytes", a->mem_peak_bytes, 0);
	jsonw_kv_double(w, "reserved_bytes", a->mem_reserved_bytes, 0);
	jsonw_kv_double(w, "efficiency_pct", a->mem_eff_pct, 1);
	jsonw_obj_end(w);
	jsonw_key(w, "gpu");
	jsonw_obj_begin(w);
	jsonw_kv_int(w, "on_node", a->gpus_on_node);
	kv_count(w, "reserved", a->gpus_reserved);
	kv_count(w, "touched", a->gpus_touched);
	jsonw_kv_int(w, "busy", a->gpus_busy);
	jsonw_kv_double(w, "util_mean_pct", a->gpu_util_mean, 1);
	jsonw_kv_double(w, "util_p95_pct", a->gpu_util_p95, 0);
	jsonw_kv_double(w, "mem_peak_bytes", a->gpu_mem_peak_bytes, 0);
	jsonw_kv_double(w, "mem_total_bytes", a->gpu_mem_total_bytes, 0);
	jsonw_kv_double(w, "throttled_frac", a->gpu_throttled_frac, 3);
	for (int i = 0; i < GPU_ACTIVITY__COUNT; i++) {
		snprintf(key, sizeof(key), "%s_avg_pct", gpu_activity_kinds[i].name);
		jsonw_kv_double(w, key, a->gpu_activity_job_pct[i], 2);
	}
	for (int i = 0; i < GPU_ACTIVITY__COUNT; i++) {
		snprintf(key, sizeof(key), "device_%s_avg_pct", gpu_activity_kinds[i].name);
		jsonw_kv_double(w, key, a->gpu_activity_pct[i], 2);
	}
	for (int i = 0; i < GPU_VIOLATION__COUNT; i++) {
		snprintf(key, sizeof(key), "throttle_%s_s", gpu_violation_kinds[i].name);
		jsonw_kv_double(w, key, a->gpu_throttle_s[i], 3);
	}
	jsonw_obj_end(w);
	jsonw_obj_end(w);

	jsonw_key(w, "scaling");
	jsonw_obj_begin(w);
	jsonw_kv_str(w, "cpu", a->scaling_cpu);
	jsonw_kv_str_opt(w, "gpu", a->scaling_gpu[0] ? a->scaling_gpu : NULL);
	jsonw_kv_double(w, "cores_busy_frac", a->cores_busy_frac, 3);
	jsonw_kv_double(w, "gpus_busy_avg", a->gpus_busy_avg, 2);
	jsonw_obj_end(w);

	jsonw_key(w, "hogging");
	jsonw_obj_begin(w);
	jsonw_kv_double(w, "idle_cores_avg", a->idle_cores_avg, 2);
	jsonw_kv_double(w, "idle_gpus_avg", a->idle_gpus_avg, 2);
	jsonw_kv_double(w, "node_busy_pct", a->node_busy_pct, 1);
	jsonw_kv_double(w, "score", a->hog_score, 2);
	jsonw_obj_end(w);

	jsonw_key(w, "contention");
	jsonw_obj_begin(w);
	jsonw_kv_bool(w, "cpu_contended", a->cpu_contended);
	jsonw_kv_double(w, "host_cpu_busy_pct", a->host_cpu_busy_pct, 1);
	jsonw_kv_double(w, "other_cores_avg", a->other_cores_avg, 2);
	jsonw_kv_double(w, "psi_cpu_some_pct", a->psi_cpu_some_pct, 1);
	jsonw_kv_double(w, "wait_cores_avg", a->wait_cores_avg, 2);
	jsonw_obj_end(w);

	jsonw_kv_double(w, "period_s", a->has_period ? a->period_s : NAN, 3);
	jsonw_kv_double(w, "period_confidence", a->has_period ? a->period_confidence : NAN, 3);
	jsonw_kv_str_opt(w, "period_metric", a->has_period ? a->period_metric : NULL);
	jsonw_kv_bool(w, "cyclic", a->cyclic);
	jsonw_kv_str_opt(w, "job_type",
			 a->job_type == JOB_TYPE_UNKNOWN ? NULL : job_type_name(a->job_type));
	jsonw_kv_str(w, "job_type_reason", a->job_type_reason);
	jsonw_kv_str_opt(w, "bottleneck",
			 a->bottleneck == BOTTLENECK_UNKNOWN ? NULL
							     : bottleneck_name(a->bottleneck));
	jsonw_kv_str(w, "bottleneck_reason", a->bottleneck_reason);
	jsonw_key(w, "trend");
	jsonw_obj_begin(w);
	write_trend(w, "memory", &a->host_mem);
	write_trend(w, "gpu_memory", &a->gpu_mem);
	jsonw_obj_end(w);
	jsonw_obj_end(w);

	jsonw_key(w, "verdicts");
	jsonw_arr_begin(w);
	for (size_t i = 0; i < a->nverdicts; i++) {
		const struct verdict *v = &a->verdicts[i];

		jsonw_obj_begin(w);
		jsonw_kv_str(w, "kind", v->kind);
		jsonw_kv_str(w, "severity", verdict_severity_name(v->severity));
		jsonw_kv_str(w, "message", v->message);
		jsonw_kv_str_opt(w, "advice", v->advice[0] ? v->advice : NULL);
		jsonw_key(w, "evidence");
		jsonw_obj_begin(w);
		for (size_t k = 0; k < v->nevidence; k++)
			jsonw_kv_double(w, v->evidence[k].name, v->evidence[k].value, 3);
		jsonw_obj_end(w);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
}

int report_json(const struct summary *s, const struct analysis *an, const struct cuda_tables *cuda,
		const struct app_summary *app, struct strbuf *out)
{
	struct jsonw w;

	jsonw_init(&w, out, true);
	jsonw_obj_begin(&w);
	jsonw_kv_int(&w, "schema", REPORT_JSON_SCHEMA);
	jsonw_kv_str(&w, "tool", "jobscope " JOBSCOPE_VERSION);
	write_run(&w, s);
	write_reservation(&w, s);
	write_cpu(&w, s);
	write_memory(&w, s);
	write_io(&w, s);
	write_network(&w, s);
	write_host(&w, s);
	write_gpus(&w, s);
	write_timeline(&w, s);
	write_processes(&w, s);
	report_libs_json(&w, s);
	write_events(&w, s);
	write_sampler(&w, s);
	write_analysis(&w, an);
	if (!an) {
		jsonw_key(&w, "verdicts");
		jsonw_null(&w);
	}
	jsonw_key(&w, "cuda");
	report_cuda_json(&w, cuda);
	jsonw_key(&w, "app");
	report_app_json(&w, app);
	jsonw_obj_end(&w);
	if (!jsonw_error(&w))
		strbuf_addch(out, '\n');
	return jsonw_error(&w);
}
