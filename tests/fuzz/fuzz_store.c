/*
 * fuzz_store.c - libFuzzer target for the store reader on hostile files.
 *
 * The input is written to a file in a private temporary directory and
 * opened read-only; if it opens, every job is listed and replayed, the
 * first few are reported (summary, series, analysis, and every format)
 * and the history of all of them is made.  The store must refuse or read
 * it without crashing or leaking, and whatever it hands out must keep the
 * struct promises (terminated strings, counts within their arrays); the
 * analysis must cope with any values (NaN, huge, times going back).
 * Messages go to /dev/null.
 *
 * Seeds (corpus/fuzz_store): small valid stores written through store.h
 * and shrunk with `PRAGMA page_size = 512; VACUUM` (one in rollback, one
 * in WAL mode); the same truncated, with header fields or page bytes or
 * bits flipped; a text file; an SQLite file of another application; files
 * with our application_id but missing tables, wrong columns, or values the
 * writer never makes (wrong types, 1030 CPUs, 80 disks, long strings); a
 * run's store with node `interval` events of every value (0, negative,
 * NULL, 2^63-1, a day and a ms over) and a seq below all others; a store
 * with schema 16's GPU figures of every extreme (NULL, negative, 2^63-1)
 * and a MIG instance whose parent is nowhere, and the same dropped back to
 * schema 15 (gpu-prof-mig, gpu-schema15).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "report/report_query.h"
#include "store/store.h"
#include "store/reader.h"

#define FUZZ_MAX_JOBS	 32 /* replays per input: keeps one input fast */
#define FUZZ_MAX_REPORTS 3  /* full reports per input */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_dir[64];
static char fuzz_path[96];

static void remove_store_files(void)
{
	static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
	char p[128];
	size_t i;

	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", fuzz_path, suffixes[i]);
		unlink(p);
	}
}

static void fuzz_cleanup(void)
{
	remove_store_files();
	rmdir(fuzz_dir);
}

static int fuzz_init(void)
{
	static FILE *devnull;

	if (fuzz_path[0])
		return 0;
	snprintf(fuzz_dir, sizeof(fuzz_dir), "/tmp/jobscope-fuzz-store-XXXXXX");
	if (!mkdtemp(fuzz_dir))
		return -1;
	snprintf(fuzz_path, sizeof(fuzz_path), "%s/store.db", fuzz_dir);
	devnull = fopen("/dev/null", "w");
	if (devnull)
		log_set_file(devnull);
	atexit(fuzz_cleanup);
	return 0;
}

static void check_str(const char *s, size_t size)
{
	if (strnlen(s, size) >= size)
		abort();
}

static void on_host(void *arg, int64_t ts_ms, const struct host_sample *h)
{
	int i;

	(void)arg;
	(void)ts_ms;
	if (h->cpu.ncpus < 0 || h->cpu.ncpus > HOST_MAX_CPUS || h->ndisks < 0 ||
	    h->ndisks > HOST_MAX_DISKS || h->nnets < 0 || h->nnets > HOST_MAX_NETS)
		abort();
	for (i = 0; i < h->ndisks; i++)
		check_str(h->disks[i].name, sizeof(h->disks[i].name));
	for (i = 0; i < h->nnets; i++)
		check_str(h->nets[i].name, sizeof(h->nets[i].name));
}

static void on_job(void *arg, int64_t ts_ms, const struct job_sample *s)
{
	(void)arg;
	(void)ts_ms;
	if (s->valid &
	    ~(uint32_t)(JS_IO | JS_SWAP | JS_CG_CPU | JS_CG_MEM | JS_CG_MEM_PEAK | JS_CPU_WAIT))
		abort();
}

static void on_proc(void *arg, const struct proc_info *p, int64_t ts_ms,
		    const struct proc_sample *s)
{
	(void)arg;
	(void)ts_ms;
	(void)s;
	check_str(p->comm, sizeof(p->comm));
	check_str(p->cmdline, sizeof(p->cmdline));
}

static void on_event(void *arg, const struct event_record *e)
{
	(void)arg;
	check_str(e->kind, sizeof(e->kind));
	check_str(e->message, sizeof(e->message));
}

static const struct store_replay_ops fuzz_ops = {on_host, on_job, on_proc, on_event};

struct fuzz_state {
	struct store *st;
	int jobs;
};

/* One job's report in every format; what it says does not matter, only that it is said. */
static void report_all_formats(struct store *st, int64_t id)
{
	struct report_query q = {0};
	char run[24], err[256];
	struct strbuf out;

	snprintf(run, sizeof(run), "%lld", (long long)id);
	q.run_id = run;
	strbuf_init(&out, 1 << 20);
	for (int f = REPORT_FMT_TEXT; f <= REPORT_FMT_HTML; f++) {
		q.format = (enum report_format)f;
		strbuf_reset(&out);
		report_query_run(st, &q, 1767571200000LL, &out, err, sizeof(err));
		check_str(err, sizeof(err));
	}
	strbuf_release(&out);
}

/* The history of 2025-2026, by each grouping. */
static void history_all(struct store *st)
{
	struct report_query q = {.has_since = true,
				 .has_until = true,
				 .has_by = true,
				 .since_ms = 1735689600000LL,
				 .until_ms = 1798761600000LL};
	char err[256];
	struct strbuf out;

	strbuf_init(&out, 1 << 20);
	for (int by = HISTORY_BY_JOB; by <= HISTORY_BY_WEEKDAY; by++) {
		q.by = (enum history_by)by;
		q.format = (enum report_format)(by % 4);
		strbuf_reset(&out);
		report_query_run(st, &q, 1767571200000LL, &out, err, sizeof(err));
	}
	strbuf_release(&out);
}

static int replay_each(const struct job_record *job, void *arg)
{
	struct fuzz_state *fs = arg;
	struct job_record again;

	check_str(job->hostname, sizeof(job->hostname));
	check_str(job->scheduler, sizeof(job->scheduler));
	check_str(job->job_id, sizeof(job->job_id));
	check_str(job->name, sizeof(job->name));
	check_str(job->command, sizeof(job->command));
	check_str(job->user, sizeof(job->user));
	if (store_get_job(fs->st, job->id, &again) == 0 && again.id != job->id)
		abort();
	store_replay_job(fs->st, job->id, &fuzz_ops, NULL);
	if (fs->jobs < FUZZ_MAX_REPORTS)
		report_all_formats(fs->st, job->id);
	return ++fs->jobs >= FUZZ_MAX_JOBS;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_state fs = {0};
	FILE *f;

	if (fuzz_init() < 0)
		return 0;
	remove_store_files();
	f = fopen(fuzz_path, "wb");
	if (!f)
		return 0;
	if (size && fwrite(data, 1, size, f) != size) {
		fclose(f);
		return 0;
	}
	if (fclose(f) != 0)
		return 0;

	if (store_open(fuzz_path, STORE_READONLY, &fs.st) == 0) {
		store_for_each_job(fs.st, replay_each, &fs);
		store_replay_job(fs.st, 1, NULL, NULL);
		history_all(fs.st);
		store_close(fs.st);
	}
	remove_store_files();
	return 0;
}
