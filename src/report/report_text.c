/*
 * report_text.c - the run report for people: what ran, then CPU, memory,
 * I/O and network in human units, a timeline, the busiest processes and
 * what the sampler itself cost.
 */
#include "report/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fmt.h"
#include "common/timeutil.h"

#define B(buf) buf, sizeof(buf)

static void add_duration(struct strbuf *out, int64_t ms)
{
	char buf[40];

	format_duration_ms(ms, B(buf));
	strbuf_addstr(out, buf);
}

static void header(const struct summary *s, struct strbuf *out)
{
	const struct job_record *j = &s->job;
	char start[40], mem[16], line[sizeof(j->command)];

	if (strcmp(j->scheduler, "run") == 0 || !j->scheduler[0])
		strbuf_addf(out, "jobscope run %lld", (long long)j->id);
	else if (j->id <= 0) /* not from a store: from Prometheus (prom/promsrc.h) */
		strbuf_addf(out, "jobscope job %s:%s (%s)", j->scheduler, j->job_id,
			    j->user[0] ? j->user : "user unknown");
	else
		strbuf_addf(out, "jobscope job %s:%s (%s, stored as %lld)", j->scheduler, j->job_id,
			    j->user, (long long)j->id);
	/* one line whatever the command holds (an argument with a newline, a tab) */
	if (j->name[0])
		strbuf_addf(out, " \"%s\"", fmt_printable(line, sizeof(line), j->name));
	strbuf_addf(out, ": %s\n", fmt_printable(line, sizeof(line), j->command));
	format_rfc3339_ms(j->start_ms, B(start));
	strbuf_addf(out, "  host %s", j->hostname);
	if (j->host_cores > 0)
		strbuf_addf(out, " (%d cores, %s)", j->host_cores,
			    fmt_bytes(B(mem), j->host_mem_bytes));
	strbuf_addf(out, ", started %s", start);
	if (j->end_ms) {
		strbuf_addstr(out, ", ran ");
		add_duration(out, j->end_ms - j->start_ms);
	} else {
		strbuf_addstr(out, ", still running or interrupted");
	}
	strbuf_addch(out, '\n');
	if (j->has_exit) {
		if (j->signal)
			strbuf_addf(out, "  killed by signal %d (%s), status %d", j->signal,
				    strsignal(j->signal), 128 + j->signal);
		else
			strbuf_addf(out, "  exit code %d", j->exit_code);
		if (j->timed_out)
			strbuf_addstr(out, " - TIMED OUT: stopped by --timeout");
		strbuf_addch(out, '\n');
	}
	strbuf_addch(out, '\n');
}

static void section_cpu(const struct summary *s, struct strbuf *out)
{
	double avg = summary_cores_avg(s), eff = summary_efficiency_pct(s);
	double peak = s->cores_peak;

	if (!s->samples) {
		strbuf_addf(out, "  %-9s unknown: no sample of the job's processes\n", "CPU");
		return;
	}
	if (!isnan(avg) && peak < avg)
		peak = avg;
	strbuf_addf(out, "  %-9s %.2fs CPU (user %.2fs, system %.2fs)\n", "CPU",
		    summary_cpu_seconds(s), s->last.user_ms / 1000.0, s->last.system_ms / 1000.0);
	if (!isnan(avg))
		strbuf_addf(out, "  %-9s %.2f cores on average, peak %.2f\n", "", avg, peak);
	if (!isnan(eff) && s->job.reserved_cpus > 0)
		strbuf_addf(out, "  %-9s efficiency %.1f%% of the %.4g core%s reserved\n", "", eff,
			    s->job.reserved_cpus, s->job.reserved_cpus == 1 ? "" : "s");
	else if (!isnan(eff))
		strbuf_addf(out, "  %-9s efficiency %.1f%% of the %d core%s it could use\n", "",
			    eff, s->job.cores_allowed, s->job.cores_allowed == 1 ? "" : "s");
}

/* Where a reservation came from, in words (job.h's reservation_source). */
static const char *reservation_words(const char *source)
{
	if (strcmp(source, "slurm_env") == 0)
		return "the Slurm environment";
	if (strcmp(source, "pod_resources") == 0)
		return "the kubelet's pod resources, cgroup limits";
	return "cgroup limits";
}

/* Agent jobs: what the scheduler reserved, against what was used. */
static void section_reservation(const struct summary *s, struct strbuf *out)
{
	const struct job_record *j = &s->job;
	char a[32], b[32];
	double eff = summary_mem_efficiency_pct(s);
	int used = 0;

	if (!j->reservation_source[0])
		return;
	for (int i = 0; i < s->ngpus; i++)
		used += s->gpus[i].used;
	if (strcmp(j->scheduler, "run") == 0) /* the job `jobscope run` ran inside */
		strbuf_addf(out, "  %-9s the job it ran in", "Reserved");
	else
		strbuf_addf(out, "  %-9s %s job %s", "Reserved", j->scheduler, j->job_id);
	strbuf_addf(out, " (from %s)", reservation_words(j->reservation_source));
	if (j->reserved_cpus > 0)
		strbuf_addf(out, ": %.4g CPU%s", j->reserved_cpus,
			    j->reserved_cpus == 1 ? "" : "s");
	if (j->reserved_mem_bytes) {
		fmt_bytes(a, sizeof(a), j->reserved_mem_bytes);
		strbuf_addf(out, ", %s memory", a);
	}
	if (j->has_reserved_gpus)
		strbuf_addf(out, ", %d GPU%s", j->reserved_gpus, j->reserved_gpus == 1 ? "" : "s");
	strbuf_addch(out, '\n');
	if (!isnan(eff)) {
		fmt_bytes(a, sizeof(a), j->reserved_mem_bytes);
		fmt_bytes(b, sizeof(b), summary_rss_peak(s, NULL));
		strbuf_addf(out, "  %-9s asked for %s of memory, peaked at %s (%.1f%%)\n", "", a, b,
			    eff);
	}
	if (j->has_reserved_gpus && j->reserved_gpus > 0)
		strbuf_addf(out, "  %-9s used %d of %d GPU%s\n", "", used, j->reserved_gpus,
			    j->reserved_gpus == 1 ? "" : "s");
}

static void section_memory(const struct summary *s, struct strbuf *out)
{
	int64_t at = 0;
	uint64_t peak = summary_rss_peak(s, &at);
	char a[16], b[16];

	if (!s->samples && !s->hwm_peak_bytes) {
		strbuf_addf(out, "  %-9s unknown: no sample of the job's processes\n", "Memory");
		return;
	}
	strbuf_addf(out, "  %-9s RSS peak %s", "Memory", fmt_bytes(B(a), peak));
	if (at > 0 && at >= s->job.start_ms) {
		strbuf_addstr(out, " at +");
		add_duration(out, at - s->job.start_ms);
	}
	if (s->job.host_mem_bytes)
		strbuf_addf(out, " (%.1f%% of the host's %s)",
			    (double)peak * 100.0 / (double)s->job.host_mem_bytes,
			    fmt_bytes(B(b), s->job.host_mem_bytes));
	strbuf_addch(out, '\n');
	if (s->has_swap)
		strbuf_addf(out, "  %-9s swap peak %s\n", "", fmt_bytes(B(a), s->swap_peak_bytes));
}

static void section_io(const struct summary *s, struct strbuf *out)
{
	char a[16], b[16], c[24], d[24];

	bool prom = s->origin.kind == SAMPLE_SOURCE_PROMETHEUS;

	if (!(s->has_io && (s->last.valid & JS_IO))) {
		strbuf_addf(out, "  %-9s unknown (%s)\n", "I/O",
			    prom ? s->origin.io_from : "/proc/PID/io not readable");
		return;
	}
	strbuf_addf(out, "  %-9s read %s, wrote %s (storage); peak read %s, write %s\n", "I/O",
		    fmt_bytes(B(a), s->last.read_bytes), fmt_bytes(B(b), s->last.write_bytes),
		    fmt_rate(B(c), s->read_peak_bps), fmt_rate(B(d), s->write_peak_bps));
	if (prom && s->origin.io_from[0])
		strbuf_addf(out, "  %-9s from %s\n", "", s->origin.io_from);
}

static void section_host(const struct summary *s, struct strbuf *out)
{
	const struct host_point *a = &s->host_first, *b = &s->host_last;
	double util = summary_host_cpu_util_pct(s);
	char x[16], y[16];

	if ((b->valid & HOST_HAS_NET) && (a->valid & HOST_HAS_NET))
		strbuf_addf(out, "  %-9s host-wide, all interfaces but lo: received %s, sent %s\n",
			    "Network", fmt_bytes(B(x), b->net_rx_bytes - a->net_rx_bytes),
			    fmt_bytes(B(y), b->net_tx_bytes - a->net_tx_bytes));
	if (isnan(util) && s->host_mem_available_min == UINT64_MAX)
		return;
	/* a run too short for a CPU figure (one host sample) may still have its memory */
	strbuf_addf(out, "  %-9s ", "Host");
	if (!isnan(util))
		strbuf_addf(out, "host CPU %.1f%% busy, load peak %.2f", util,
			    s->host_load1_max_milli / 1000.0);
	if (s->host_mem_available_min != UINT64_MAX)
		strbuf_addf(out, "%smemory available at least %s", isnan(util) ? "" : ", ",
			    fmt_bytes(B(x), s->host_mem_available_min));
	strbuf_addch(out, '\n');
}

/* A MIG instance's slice and parent, after the GPU's name; nothing for a whole GPU. */
static void gpu_mig_words(const struct gpu_summary *g, struct strbuf *out)
{
	const struct gpu_device_info *d = &g->dev.info;

	if (!d->mig)
		return;
	strbuf_addf(out, " (MIG %s, GPU instance %u, compute instance %u, of GPU %d)",
		    d->mig_profile[0] ? d->mig_profile : "slice", d->gpu_instance_id,
		    d->compute_instance_id, d->index);
}

/* Items of a list, ", " between them, lines broken before TEXT_WRAP columns. */
#define TEXT_WRAP 100
struct wrap {
	struct strbuf *out;
	size_t line_start; /* offset of the current line in out */
	int items;
};

static void wrap_item(struct wrap *w, const char *item)
{
	size_t col = w->out->len - w->line_start;

	if (w->items && col + 2 + strlen(item) > TEXT_WRAP) {
		strbuf_addstr(w->out, ",\n");
		w->line_start = w->out->len;
		strbuf_addf(w->out, "  %-9s ", "");
	} else if (w->items) {
		strbuf_addstr(w->out, ", ");
	} else {
		w->line_start = w->out->len;
		strbuf_addf(w->out, "  %-9s ", "");
	}
	strbuf_addstr(w->out, item);
	w->items++;
}

static void wrap_end(struct wrap *w)
{
	if (w->items)
		strbuf_addch(w->out, '\n');
	w->items = 0;
}

/*
 * What the SMs did, in percent over the command's time on the GPU: its
 * part, and the whole device's when they differ (a shared GPU); then the
 * seconds it was throttled for each reason that held it back.
 */
static void gpu_activity_lines(const struct gpu_summary *g, struct strbuf *out)
{
	struct wrap w = {.out = out};
	bool shared = false, known = false;
	char item[96];

	for (int a = 0; a < GPU_ACTIVITY__COUNT; a++) {
		double job = summary_gpu_activity_pct(g, a, true);
		double dev = summary_gpu_activity_pct(g, a, false);

		if (isnan(dev))
			continue;
		if (isnan(job))
			snprintf(item, sizeof(item), "%s unknown", gpu_activity_kinds[a].label);
		else
			snprintf(item, sizeof(item), "%s %.1f%%", gpu_activity_kinds[a].label, job);
		wrap_item(&w, item);
		if (isnan(job) || fabs(dev - job) >= 0.05)
			shared = true;
	}
	wrap_end(&w);
	if (shared) {
		for (int a = 0; a < GPU_ACTIVITY__COUNT; a++) {
			double dev = summary_gpu_activity_pct(g, a, false);

			if (isnan(dev))
				continue;
			snprintf(item, sizeof(item), "%s%s %.1f%%",
				 w.items ? "" : "the whole device (every process on it): ",
				 gpu_activity_kinds[a].label, dev);
			wrap_item(&w, item);
		}
		wrap_end(&w);
	}
	for (int v = 0; v < GPU_VIOLATION__COUNT; v++) {
		double t = summary_gpu_throttle_s(g, v);

		if (isnan(t))
			continue;
		known = true;
		if (t < 0.0005)
			continue;
		snprintf(item, sizeof(item), "%s%s %.3f s", w.items ? "" : "throttled by ",
			 gpu_violation_kinds[v].label, t);
		wrap_item(&w, item);
	}
	if (w.items)
		wrap_end(&w);
	else if (known)
		strbuf_addf(out, "  %-9s throttled 0 s for every reason the driver counts\n", "");
}

static void section_gpus(const struct summary *s, struct strbuf *out)
{
	const char *label = "GPUs";
	char a[16], b[16], c2[16], d[16];

	for (int i = 0; i < s->ngpus; i++) {
		const struct gpu_summary *g = &s->gpus[i];
		double span_s = g->energy_span_ms / 1000.0;

		if (!g->used)
			continue;
		strbuf_addf(out, "  %-9s GPU %d %s", label, g->dev.info.index, g->dev.info.name);
		gpu_mig_words(g, out);
		strbuf_addch(out, ':');
		label = "";
		if (g->util_n)
			strbuf_addf(out, " util %.1f%% on average, p95 %d%%",
				    (double)g->util_sum / (double)g->util_n,
				    summary_gpu_util_pct(g, 95));
		if (g->has_mem) {
			strbuf_addf(out, ", memory peak %s",
				    fmt_bytes(B(a), g->mem_used_peak_bytes));
			if (g->dev.info.valid & GPU_INFO_MEM_TOTAL)
				strbuf_addf(out, " of %s",
					    fmt_bytes(B(b), g->dev.info.mem_total_bytes));
		}
		strbuf_addch(out, '\n');
		if (g->has_energy && span_s > 0)
			strbuf_addf(out,
				    "  %-9s energy %.1f J, %.1f W on average (its share of the "
				    "device's %.1f W)\n",
				    "", g->job_energy_mj / 1000.0,
				    g->job_energy_mj / 1000.0 / span_s,
				    g->energy_mj / 1000.0 / span_s);
		if (g->has_pcie || g->has_nvlink) {
			strbuf_addf(out, "  %-9s", "");
			if (g->has_pcie)
				strbuf_addf(out, " PCIe received %s, sent %s;",
					    fmt_bytes(B(a), (uint64_t)g->pcie_rx_bytes),
					    fmt_bytes(B(b), (uint64_t)g->pcie_tx_bytes));
			if (g->has_nvlink)
				strbuf_addf(out, " NVLink received %s, sent %s",
					    fmt_bytes(B(c2), g->nvlink_rx_bytes),
					    fmt_bytes(B(d), g->nvlink_tx_bytes));
			strbuf_addch(out, '\n');
		}
		gpu_activity_lines(g, out);
		if (g->throttle_n && g->throttled)
			strbuf_addf(out,
				    "  %-9s slowed down (power or thermal) in %.0f%% of samples\n",
				    "", 100.0 * (double)g->throttled / (double)g->throttle_n);
	}
	for (int i = 0; i < s->ngpus; i++) {
		const struct gpu_summary *g = &s->gpus[i];

		if (g->used)
			continue;
		strbuf_addf(out, "  %-9s GPU %d %s", label, g->dev.info.index, g->dev.info.name);
		gpu_mig_words(g, out);
		strbuf_addf(out, ": not used by the command%s\n",
			    g->dev.info.mig_enabled ? " (in MIG mode: its slices are listed apart)"
			    : s->gpu_procs_known    ? ""
						    : " (as far as the driver tells)");
		label = "";
	}
}

static const char *const spark_utf8[] = {" ",	   "\u2581", "\u2582", "\u2583", "\u2584",
					 "\u2585", "\u2586", "\u2587", "\u2588"};
static const char spark_ascii[] = " .:-=+*#@";

static void spark(struct strbuf *out, double v, double max, bool utf8)
{
	int level = 0;

	if (max > 0 && v > 0) {
		level = (int)ceil(v / max * 8.0);
		if (level < 1)
			level = 1;
		if (level > 8)
			level = 8;
	}
	if (utf8)
		strbuf_addstr(out, spark_utf8[level]);
	else
		strbuf_addch(out, spark_ascii[level]);
}

static void section_timeline(const struct summary *s, const struct report_options *opt,
			     struct strbuf *out)
{
	double max_cores = s->job.cores_allowed > 0 ? s->job.cores_allowed : 1;
	uint64_t max_rss = 0;
	int last = -1;
	char a[16], dur[32];

	for (int i = 0; i < SUMMARY_BUCKETS; i++) {
		if (!s->buckets[i].used)
			continue;
		last = i;
		if (s->buckets[i].rss_max > max_rss)
			max_rss = s->buckets[i].rss_max;
		if (s->buckets[i].span_ms > 0) {
			double c = (double)s->buckets[i].cpu_ms / (double)s->buckets[i].span_ms;

			if (c > max_cores)
				max_cores = c;
		}
	}
	if (last < 1)
		return;
	format_duration_ms(s->bucket_ms, B(dur));
	strbuf_addf(out, "\n  Timeline, one column per %s\n", dur);
	strbuf_addstr(out, "    cores |");
	for (int i = 0; i <= last; i++) {
		const struct summary_bucket *b = &s->buckets[i];

		spark(out, b->span_ms > 0 ? (double)b->cpu_ms / (double)b->span_ms : 0, max_cores,
		      opt->utf8);
	}
	strbuf_addf(out, "| 0-%.1f\n", max_cores);
	strbuf_addstr(out, "    rss   |");
	for (int i = 0; i <= last; i++)
		spark(out, (double)s->buckets[i].rss_max, (double)max_rss, opt->utf8);
	strbuf_addf(out, "| 0-%s\n", fmt_bytes(B(a), max_rss));
	for (int g = 0; g < s->ngpus; g++) {
		const struct gpu_summary *gs = &s->gpus[g];

		if (!gs->used || !gs->util_n)
			continue;
		strbuf_addf(out, "    gpu%-2d |", gs->dev.info.index);
		for (int i = 0; i <= last; i++)
			spark(out,
			      gs->bucket_util_ms[i]
				  ? gs->bucket_util_pct_ms[i] / (double)gs->bucket_util_ms[i]
				  : 0,
			      100, opt->utf8);
		strbuf_addstr(out, "| 0-100% util\n");
	}
}

static void section_procs(const struct summary *s, const struct report_options *opt,
			  struct strbuf *out)
{
	size_t max = opt->max_procs ? opt->max_procs : 10;
	const struct proc_summary **top;
	size_t n;

	if (s->nprocs == 0)
		return;
	top = calloc(max, sizeof(*top));
	if (!top)
		return;
	n = summary_procs_by_cpu(s, top, max);
	strbuf_addf(out, "\n  Processes: %zu in all%s\n", s->nprocs,
		    s->nprocs > n ? ", the busiest:" : "");
	strbuf_addf(out, "    %7s %7s %9s %10s %10s %10s %9s  %s\n", "PID", "PPID", "CPU",
		    "RSS peak", "read", "written", "lived", "command");
	for (size_t i = 0; i < n; i++) {
		const struct proc_summary *p = top[i];
		char rss[16], rd[16], wr[16], lived[32];
		const char *cmd = p->cmdline && p->cmdline[0] ? p->cmdline : p->comm;

		if (p->has_rss)
			fmt_bytes(B(rss), p->rss_peak_bytes);
		else
			snprintf(rss, sizeof(rss), "-");
		if (p->has_io) {
			fmt_bytes(B(rd), p->read_bytes);
			fmt_bytes(B(wr), p->write_bytes);
		} else {
			snprintf(rd, sizeof(rd), "-");
			snprintf(wr, sizeof(wr), "-");
		}
		if (p->end_ms)
			format_duration_ms(p->end_ms - p->start_ms, B(lived));
		else
			snprintf(lived, sizeof(lived), "running");
		strbuf_addf(out, "    %7d %7d %8.2fs %10s %10s %10s %9s  %.60s%s\n", p->pid,
			    p->ppid, (p->user_ms + p->system_ms) / 1000.0, rss, rd, wr, lived, cmd,
			    strlen(cmd) > 60 ? "..." : "");
	}
	free(top);
}

static void section_events(const struct summary *s, struct strbuf *out)
{
	if (s->nevents == 0)
		return;
	strbuf_addstr(out, "\n  Events\n");
	for (size_t i = 0; i < s->nevents; i++) {
		const struct event_record *e = &s->events[i];

		strbuf_addstr(out, "    +");
		add_duration(out, e->ts_ms - s->job.start_ms);
		strbuf_addf(out, "  %-13s %s\n", e->kind, e->message);
	}
	if (s->events_dropped)
		strbuf_addf(out, "    (%llu more not shown)\n",
			    (unsigned long long)s->events_dropped);
}

static void section_sampler(const struct summary *s, struct strbuf *out)
{
	const struct job_record *j = &s->job;
	double dur = summary_duration_s(s);
	char iv[32];

	format_duration_ms(j->interval_ms, B(iv));
	if (s->origin.kind == SAMPLE_SOURCE_PROMETHEUS) { /* prom/promsrc.h: no sampler */
		strbuf_addf(out, "\n  Sampler   %lld points every %s, read from Prometheus",
			    (long long)j->samples, iv);
		if (s->origin.step_why[0])
			strbuf_addf(out, "\n  %-9s step %s: %s", "", iv, s->origin.step_why);
		strbuf_addch(out, '\n');
		return;
	}
	strbuf_addf(out, "\n  Sampler   %lld samples every %s; jobscope used %.3fs CPU",
		    (long long)j->samples, iv, j->sampler_cpu_ms / 1000.0);
	if (dur > 0)
		strbuf_addf(out, " (%.2f%% of one core)", j->sampler_cpu_ms / 10.0 / dur);
	strbuf_addch(out, '\n');
	if (j->lost_samples)
		strbuf_addf(out,
			    "  WARNING   %lld of %lld samples could not be stored (see events); "
			    "this report is complete, the stored copy is not\n",
			    (long long)j->lost_samples, (long long)j->samples);
}

/* Verdicts first: what to do about the job, with the numbers behind it. */
void report_text_verdict(struct strbuf *out, bool first, enum verdict_severity severity,
			 const char *message, const char *advice)
{
	static const char *const mark[] = {"info", "WARN", "CRIT"};

	strbuf_addf(out, "  %-9s %s  %s\n", first ? "Verdicts" : "",
		    mark[(size_t)severity < 3 ? severity : 0], message);
	if (advice && advice[0])
		strbuf_addf(out, "  %-9s       -> %s\n", "", advice);
}

static void section_verdicts(const struct analysis *a, struct strbuf *out)
{
	if (!a->nverdicts)
		strbuf_addf(out, "  %-9s nothing to fix: it used what it had\n", "Verdicts");
	for (size_t i = 0; i < a->nverdicts; i++)
		report_text_verdict(out, i == 0, a->verdicts[i].severity, a->verdicts[i].message,
				    a->verdicts[i].advice);
	strbuf_addch(out, '\n');
}

static void trend_line(const char *what, const struct memory_trend *t, struct strbuf *out)
{
	char rate[16];

	if (!t->valid)
		return;
	if (!memory_trend_steady(t)) {
		/* a line that explains little of it: no rate worth printing */
		strbuf_addf(out, "  %-9s %s: no steady trend\n", "", what);
		return;
	}
	fmt_bytes(B(rate), (uint64_t)fabs(t->slope_bps * 3600));
	strbuf_addf(out, "  %-9s %s %s%s/h (r2 %.2f)", "", what, t->slope_bps < 0 ? "-" : "+", rate,
		    t->r2);
	if (t->growing && !isnan(t->time_to_limit_s))
		strbuf_addf(out, ", reaches its limit in ~%.1f h", t->time_to_limit_s / 3600);
	strbuf_addch(out, '\n');
}

static void section_analysis(const struct analysis *a, struct strbuf *out)
{
	strbuf_addf(out, "  %-9s %s", "Job type",
		    a->job_type == JOB_TYPE_UNKNOWN ? "cannot be judged"
						    : job_type_name(a->job_type));
	strbuf_addf(out, " (%s)\n", a->job_type_reason);
	strbuf_addf(out, "  %-9s %s (%s)\n", "Limit",
		    a->bottleneck == BOTTLENECK_UNKNOWN ? "none clear"
							: bottleneck_name(a->bottleneck),
		    a->bottleneck_reason);
	strbuf_addf(out, "  %-9s %s\n", "Scaling", a->scaling_cpu);
	if (a->scaling_gpu[0])
		strbuf_addf(out, "  %-9s %s\n", "", a->scaling_gpu);
	if (a->has_period)
		strbuf_addf(out, "  %-9s %.2f s in %s (confidence %.2f%s)\n", "Period", a->period_s,
			    a->period_metric, a->period_confidence, a->cyclic ? ", cyclic" : "");
	else if (!a->too_short)
		strbuf_addf(out, "  %-9s none found\n", "Period");
	if (a->host_mem.valid || a->gpu_mem.valid) {
		strbuf_addf(out, "  %-9s memory over the second half of the job\n", "Trend");
		trend_line("memory", &a->host_mem, out);
		trend_line("GPU memory", &a->gpu_mem, out);
	}
	if (a->cpu_contended)
		strbuf_addf(out,
			    "  %-9s the node's CPUs %.0f%% busy, %.1f cores of it other work's\n",
			    "Contended", a->host_cpu_busy_pct, a->other_cores_avg);
	if (!isnan(a->hog_score))
		strbuf_addf(out,
			    "  %-9s %.1f idle cores, %.1f idle GPUs reserved; the rest of the node "
			    "%.0f%% busy (score %.2f)\n",
			    "Hogging", isnan(a->idle_cores_avg) ? 0 : a->idle_cores_avg,
			    isnan(a->idle_gpus_avg) ? 0 : a->idle_gpus_avg, a->node_busy_pct,
			    a->hog_score);
	strbuf_addch(out, '\n');
}

int report_text(const struct summary *s, const struct analysis *an,
		const struct report_options *opt, struct strbuf *out)
{
	static const struct report_options defaults = {.utf8 = false, .max_procs = 10};

	if (!opt)
		opt = &defaults;
	header(s, out);
	if (an) {
		section_verdicts(an, out);
		section_analysis(an, out);
	}
	section_reservation(s, out);
	section_cpu(s, out);
	section_memory(s, out);
	section_io(s, out);
	section_host(s, out);
	section_gpus(s, out);
	section_timeline(s, opt, out);
	section_procs(s, opt, out);
	report_libs_text(s, out);
	section_events(s, out);
	if (opt->cuda) {
		int ret = report_cuda_text(opt->cuda, 0, out);

		if (ret)
			return ret;
	}
	if (opt->app) {
		int ret = report_app_text(opt->app, s, out);

		if (ret)
			return ret;
	}
	section_sampler(s, out);
	return strbuf_error(out);
}
