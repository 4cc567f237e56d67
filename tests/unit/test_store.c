/*
 * test_store.c - the SQLite store: create and reopen, every column written
 * and read back (NULLs as cleared valid bits), replay order, files that are
 * not ours (refused and left byte for byte unchanged), a full disk through
 * PRAGMA max_page_count, the seq rule, and the cost of one tick.
 *
 * Each test works in its own mkdtemp directory under /tmp.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "analysis/jobreport.h"
#include "store/store.h"
#include "store/tick.h"
#include "store/conn.h" /* st->conn.sq, for fault injection only */
#include "store/reader.h"
#include "store/upkeep.h"
#include "store/write.h"
#include "store_schema16.h"

struct fixture {
	char dir[64];
	char path[128];
	FILE *log; /* messages of the code under test */
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/jobscope-test-store-XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->path, sizeof(fx->path), "%s/store.db", fx->dir);
	fx->log = tmpfile();
	if (!fx->log)
		return -1;
	log_set_file(fx->log);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	log_set_file(NULL);
	fclose(fx->log);
	chmod(fx->dir, 0700);
	fixture_rm_tree(fx->dir);
	free(fx);
	return 0;
}

/* What the code under test printed since the last call. */
static const char *log_text(struct fixture *fx)
{
	static char buf[4096];
	size_t n;

	fflush(fx->log);
	rewind(fx->log);
	n = fread(buf, 1, sizeof(buf) - 1, fx->log);
	buf[n] = '\0';
	rewind(fx->log);
	if (ftruncate(fileno(fx->log), 0) < 0)
		buf[0] = '\0';
	return buf;
}

static char *slurp(const char *path, size_t *len)
{
	struct stat sb;
	char *buf;
	FILE *f;

	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fstat(fileno(f), &sb), 0);
	buf = malloc((size_t)sb.st_size + 1);
	assert_non_null(buf);
	*len = fread(buf, 1, (size_t)sb.st_size, f);
	assert_int_equal(*len, (size_t)sb.st_size);
	fclose(f);
	return buf;
}

static void spit(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static bool exists_suffix(const char *path, const char *suffix)
{
	char p[256];

	snprintf(p, sizeof(p), "%s%s", path, suffix);
	return exists(p);
}

/* One integer from a query on a separate read-only connection. */
static int64_t sql_i64(const char *path, const char *sql)
{
	sqlite3_stmt *stmt;
	sqlite3 *db;
	int64_t v = -1;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return v;
}

static void sql_text(const char *path, const char *sql, char *buf, size_t size)
{
	sqlite3_stmt *stmt;
	sqlite3 *db;

	buf[0] = '\0';
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
	if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0))
		snprintf(buf, size, "%s", (const char *)sqlite3_column_text(stmt, 0));
	sqlite3_finalize(stmt);
	sqlite3_close(db);
}

static void sql_exec(const char *path, const char *sql)
{
	sqlite3 *db;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static struct store *open_new(struct fixture *fx)
{
	struct store *st = NULL;

	assert_int_equal(store_open(fx->path, STORE_CREATE, &st), 0);
	assert_non_null(st);
	return st;
}

/* A host reading with every kind of value; psi_cpu "full" and shmem missing. */
static struct host_sample *host_new(uint64_t base)
{
	struct host_sample *h = calloc(1, sizeof(*h));
	int i;

	assert_non_null(h);
	h->valid = HOST_HAS_CPU | HOST_HAS_MEM | HOST_HAS_DISK | HOST_HAS_NET | HOST_HAS_LOAD |
		   HOST_HAS_PSI_CPU | HOST_HAS_PSI_MEM | HOST_HAS_PSI_IO;
	h->cpu.total = (struct cpu_times){base + 1, base + 2, base + 3, base + 4,
					  base + 5, base + 6, base + 7, base + 8};
	h->cpu.ncpus = 2;
	h->cpu.cpu_id[0] = 0;
	h->cpu.cpu_id[1] = 3;
	for (i = 0; i < 2; i++)
		h->cpu.cpu[i] = (struct cpu_times){
		    base + 10 * i + 11, base + 10 * i + 12, base + 10 * i + 13, base + 10 * i + 14,
		    base + 10 * i + 15, base + 10 * i + 16, base + 10 * i + 17, base + 10 * i + 18};
	h->cpu.procs_running = 3;
	h->cpu.procs_blocked = 1;
	h->mem.valid = MEMINFO_TOTAL | MEMINFO_FREE | MEMINFO_AVAILABLE | MEMINFO_BUFFERS |
		       MEMINFO_CACHED | MEMINFO_SWAP_TOTAL | MEMINFO_SWAP_FREE;
	h->mem.total_bytes = 16ull << 30;
	h->mem.free_bytes = base + 100;
	h->mem.available_bytes = base + 101;
	h->mem.buffers_bytes = base + 102;
	h->mem.cached_bytes = base + 103;
	h->mem.swap_total_bytes = 2ull << 30;
	h->mem.swap_free_bytes = base + 104;
	h->load = (struct host_loadavg){1500, 1200, 900, 0, 0};
	h->psi_cpu = (struct host_psi){true, false, base + 200, 0};
	h->psi_mem = (struct host_psi){true, true, base + 201, base + 202};
	h->psi_io = (struct host_psi){true, true, base + 203, base + 204};
	h->ndisks = 1;
	h->disks[0] =
	    (struct disk_stat){"sda", base + 300, base + 301, base + 302, base + 303, base + 304};
	h->nnets = 2;
	h->nets[0] = (struct net_stat){"eth0", base + 400, base + 401, base + 402, base + 403};
	h->nets[1] = (struct net_stat){"wlan0", base + 410, base + 411, base + 412, base + 413};
	h->disk_read_bytes = base + 301;
	h->disk_write_bytes = base + 303;
	h->disk_reads = base + 300;
	h->disk_writes = base + 302;
	h->net_rx_bytes = base + 500;
	h->net_tx_bytes = base + 501;
	h->net_rx_packets = base + 502;
	h->net_tx_packets = base + 503;
	return h;
}

static void assert_cpu_times_equal(const struct cpu_times *a, const struct cpu_times *b)
{
	assert_memory_equal(a, b, sizeof(*a));
}

static void assert_host_equal(const struct host_sample *want, const struct host_sample *got)
{
	int i;

	assert_int_equal(got->valid, want->valid);
	if (want->valid & HOST_HAS_CPU) {
		assert_cpu_times_equal(&got->cpu.total, &want->cpu.total);
		assert_int_equal(got->cpu.ncpus, want->cpu.ncpus);
		for (i = 0; i < want->cpu.ncpus; i++) {
			assert_int_equal(got->cpu.cpu_id[i], want->cpu.cpu_id[i]);
			assert_cpu_times_equal(&got->cpu.cpu[i], &want->cpu.cpu[i]);
		}
		assert_int_equal(got->cpu.procs_running, want->cpu.procs_running);
		assert_int_equal(got->cpu.procs_blocked, want->cpu.procs_blocked);
	} else {
		assert_int_equal(got->cpu.ncpus, 0);
	}
	assert_int_equal(got->mem.valid, (want->valid & HOST_HAS_MEM) ? want->mem.valid : 0);
	if (want->valid & HOST_HAS_MEM) {
		assert_int_equal(got->mem.total_bytes, want->mem.total_bytes);
		assert_int_equal(got->mem.free_bytes, want->mem.free_bytes);
		assert_int_equal(got->mem.available_bytes, want->mem.available_bytes);
		assert_int_equal(got->mem.buffers_bytes, want->mem.buffers_bytes);
		assert_int_equal(got->mem.cached_bytes, want->mem.cached_bytes);
		assert_int_equal(got->mem.swap_total_bytes, want->mem.swap_total_bytes);
		assert_int_equal(got->mem.swap_free_bytes, want->mem.swap_free_bytes);
		assert_int_equal(got->mem.shmem_bytes, 0); /* missing, never stored */
	}
	if (want->valid & HOST_HAS_LOAD) {
		assert_int_equal(got->load.load1_milli, want->load.load1_milli);
		assert_int_equal(got->load.load5_milli, want->load.load5_milli);
		assert_int_equal(got->load.load15_milli, want->load.load15_milli);
	}
	if (want->valid & HOST_HAS_PSI_CPU) {
		assert_int_equal(got->psi_cpu.some_valid, want->psi_cpu.some_valid);
		assert_int_equal(got->psi_cpu.full_valid, want->psi_cpu.full_valid);
		assert_int_equal(got->psi_cpu.some_total_us, want->psi_cpu.some_total_us);
		assert_int_equal(got->psi_mem.full_total_us, want->psi_mem.full_total_us);
		assert_int_equal(got->psi_io.some_total_us, want->psi_io.some_total_us);
		assert_int_equal(got->psi_io.full_total_us, want->psi_io.full_total_us);
	}
	if (want->valid & HOST_HAS_DISK) {
		assert_int_equal(got->ndisks, want->ndisks);
		for (i = 0; i < want->ndisks; i++) {
			assert_string_equal(got->disks[i].name, want->disks[i].name);
			assert_int_equal(got->disks[i].reads, want->disks[i].reads);
			assert_int_equal(got->disks[i].read_bytes, want->disks[i].read_bytes);
			assert_int_equal(got->disks[i].writes, want->disks[i].writes);
			assert_int_equal(got->disks[i].write_bytes, want->disks[i].write_bytes);
			assert_int_equal(got->disks[i].io_ms, want->disks[i].io_ms);
		}
		assert_int_equal(got->disk_read_bytes, want->disk_read_bytes);
		assert_int_equal(got->disk_write_bytes, want->disk_write_bytes);
		assert_int_equal(got->disk_reads, want->disk_reads);
		assert_int_equal(got->disk_writes, want->disk_writes);
	} else {
		assert_int_equal(got->ndisks, 0);
	}
	if (want->valid & HOST_HAS_NET) {
		assert_int_equal(got->nnets, want->nnets);
		for (i = 0; i < want->nnets; i++) {
			assert_string_equal(got->nets[i].name, want->nets[i].name);
			assert_int_equal(got->nets[i].rx_bytes, want->nets[i].rx_bytes);
			assert_int_equal(got->nets[i].rx_packets, want->nets[i].rx_packets);
			assert_int_equal(got->nets[i].tx_bytes, want->nets[i].tx_bytes);
			assert_int_equal(got->nets[i].tx_packets, want->nets[i].tx_packets);
		}
		assert_int_equal(got->net_rx_bytes, want->net_rx_bytes);
		assert_int_equal(got->net_tx_bytes, want->net_tx_bytes);
		assert_int_equal(got->net_rx_packets, want->net_rx_packets);
		assert_int_equal(got->net_tx_packets, want->net_tx_packets);
	} else {
		assert_int_equal(got->nnets, 0);
	}
}

/* Field by field: the structs have padding. */
static void assert_proc_sample_equal(const struct proc_sample *want, const struct proc_sample *got)
{
	assert_int_equal(got->valid, want->valid);
	assert_int_equal(got->state, want->state);
	assert_int_equal(got->threads, want->threads);
	assert_int_equal(got->user_ms, want->user_ms);
	assert_int_equal(got->system_ms, want->system_ms);
	assert_int_equal(got->child_user_ms, want->child_user_ms);
	assert_int_equal(got->child_system_ms, want->child_system_ms);
	assert_int_equal(got->rss_bytes, want->rss_bytes);
	assert_int_equal(got->hwm_bytes, want->hwm_bytes);
	assert_int_equal(got->swap_bytes, want->swap_bytes);
	assert_int_equal(got->read_bytes, want->read_bytes);
	assert_int_equal(got->write_bytes, want->write_bytes);
}

static void assert_job_sample_equal(const struct job_sample *want, const struct job_sample *got)
{
	assert_int_equal(got->valid, want->valid);
	assert_int_equal(got->nprocs, want->nprocs);
	assert_int_equal(got->user_ms, want->user_ms);
	assert_int_equal(got->system_ms, want->system_ms);
	assert_int_equal(got->rss_bytes, want->rss_bytes);
	assert_int_equal(got->swap_bytes, want->swap_bytes);
	assert_int_equal(got->read_bytes, want->read_bytes);
	assert_int_equal(got->write_bytes, want->write_bytes);
	assert_int_equal(got->sampler_cpu_ms, want->sampler_cpu_ms);
}

static void job_fill(struct job_record *job, int64_t node_id, const char *scheduler,
		     const char *job_id, int64_t start_ms)
{
	memset(job, 0, sizeof(*job));
	job->node_id = node_id;
	snprintf(job->scheduler, sizeof(job->scheduler), "%s", scheduler);
	snprintf(job->job_id, sizeof(job->job_id), "%s", job_id);
	job->start_ms = start_ms;
}

static void proc_fill(struct proc_info *p, int32_t pid, int64_t start_ms, const char *comm)
{
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->ppid = 1;
	p->start_ms = start_ms;
	p->uid = 1000;
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	snprintf(p->cmdline, sizeof(p->cmdline), "%s --flag arg", comm);
}

static void test_create_and_reopen(void **state)
{
	struct fixture *fx = *state;
	struct store *st = NULL;
	char path[256], dir[256];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/a/b/c/store.db", fx->dir);
	snprintf(dir, sizeof(dir), "%s/a/b/c", fx->dir);
	assert_int_equal(store_open(path, STORE_READONLY, &st), -ENOENT);
	assert_null(st);
	assert_non_null(strstr(log_text(fx), path));
	assert_false(exists(dir));

	assert_int_equal(store_open(path, STORE_CREATE, &st), 0);
	assert_string_equal(store_path(st), path);
	store_close(st);
	assert_int_equal(stat(dir, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_mode & 0700, 0700);

	assert_int_equal(store_open(path, STORE_READONLY, &st), 0);
	store_close(st);
	assert_int_equal(store_open(path, STORE_CREATE, &st), 0);
	store_close(st);
	assert_string_equal(log_text(fx), "");

	/* an empty file (touch) becomes a store */
	spit(fx->path, "", 0);
	assert_int_equal(store_open(fx->path, STORE_READONLY, &st), -EPROTO);
	assert_int_equal(store_open(fx->path, STORE_CREATE, &st), 0);
	store_close(st);
}

static void test_schema_version_and_application_id(void **state)
{
	struct fixture *fx = *state;
	char buf[64];

	store_close(open_new(fx));
	assert_int_equal(sql_i64(fx->path, "PRAGMA application_id"), STORE_APPLICATION_ID);
	assert_int_equal(sql_i64(fx->path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
	sql_text(fx->path, "PRAGMA journal_mode", buf, sizeof(buf));
	assert_string_equal(buf, "wal");
	sql_text(fx->path, "SELECT value FROM meta WHERE key = 'schema_version'", buf, sizeof(buf));
	assert_int_equal(strtoll(buf, NULL, 10), STORE_SCHEMA_VERSION);
	sql_text(fx->path, "SELECT value FROM meta WHERE key = 'created_by'", buf, sizeof(buf));
	assert_string_equal(buf, "jobscope " JOBSCOPE_VERSION);
	assert_true(sql_i64(fx->path, "SELECT value FROM meta WHERE key = 'created_ms'") >
		    1600000000000);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM pragma_table_list"
					   " WHERE schema = 'main' AND strict = 1"),
			 30); /* schema 10: app_samples, energy_samples, proc_libs */
}

static void test_job_roundtrip(void **state)
{
	struct fixture *fx = *state;
	struct store *st = open_new(fx);
	struct job_record job, got, slurm;
	int64_t node, node2;

	assert_int_equal(store_node(st, "node-a", 8, 16ull << 30, 1700000000000, &node), 0);
	assert_int_equal(store_node(st, "node-a", 16, 32ull << 30, 1700000000001, &node2), 0);
	assert_int_equal(node, node2);
	assert_int_equal(sql_i64(fx->path, "SELECT cores FROM nodes"), 16);

	job_fill(&job, node, "run", "", 1700000001000);
	snprintf(job.name, sizeof(job.name), "train");
	snprintf(job.command, sizeof(job.command), "python train.py --epochs 3");
	snprintf(job.user, sizeof(job.user), "alice");
	job.uid = 1000;
	job.pid = 4242;
	job.interval_ms = 250;
	job.cores_allowed = 4;
	job.host_cores = 8;
	job.host_mem_bytes = 16ull << 30;
	assert_int_equal(store_job_begin(st, &job), 0);
	assert_true(job.id > 0);
	assert_int_equal(strtoll(job.job_id, NULL, 10), job.id);

	assert_int_equal(store_get_job(st, job.id, &got), 0);
	assert_int_equal(got.id, job.id);
	assert_int_equal(got.node_id, node);
	assert_string_equal(got.hostname, "node-a");
	assert_string_equal(got.scheduler, "run");
	assert_string_equal(got.job_id, job.job_id);
	assert_string_equal(got.name, "train");
	assert_string_equal(got.command, "python train.py --epochs 3");
	assert_string_equal(got.user, "alice");
	assert_int_equal(got.uid, 1000);
	assert_int_equal(got.pid, 4242);
	assert_int_equal(got.start_ms, 1700000001000);
	assert_int_equal(got.end_ms, 0);
	assert_false(got.has_exit);
	assert_false(got.timed_out);
	assert_int_equal(got.interval_ms, 250);
	assert_int_equal(got.cores_allowed, 4);
	assert_int_equal(got.host_cores, 8);
	assert_int_equal(got.host_mem_bytes, 16ull << 30);
	assert_int_equal(got.samples, 0);
	assert_int_equal(got.lost_samples, 0);
	assert_int_equal(got.sampler_cpu_ms, 0);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM jobs WHERE exit_code IS NULL"
					   " AND signal IS NULL AND end_ms IS NULL"),
			 1);

	job.end_ms = 1700000061000;
	job.pid = 4343; /* known only once the child is forked */
	snprintf(job.job_id, sizeof(job.job_id), "not the key");
	job.has_exit = true;
	job.exit_code = 137;
	job.signal = 9;
	job.timed_out = true;
	job.samples = 240;
	job.lost_samples = 2;
	job.sampler_cpu_ms = 31;
	assert_int_equal(store_job_update(st, &job), 0);
	assert_int_equal(store_get_job(st, job.id, &got), 0);
	assert_int_equal(got.end_ms, 1700000061000);
	assert_true(got.has_exit);
	assert_int_equal(got.exit_code, 137);
	assert_int_equal(got.signal, 9);
	assert_true(got.timed_out);
	assert_int_equal(got.samples, 240);
	assert_int_equal(got.lost_samples, 2);
	assert_int_equal(got.sampler_cpu_ms, 31);
	assert_int_equal(got.pid, 4343);
	assert_string_equal(got.name, "train");
	assert_int_equal(strtoll(got.job_id, NULL, 10), job.id);

	/* another scheduler keeps its own job id; empty strings come back empty */
	job_fill(&slurm, node, "slurm", "123456.0", 1700000002000);
	assert_int_equal(store_job_begin(st, &slurm), 0);
	assert_int_equal(store_get_job(st, slurm.id, &got), 0);
	assert_string_equal(got.job_id, "123456.0");
	assert_string_equal(got.name, "");
	assert_string_equal(got.command, "");
	assert_string_equal(got.user, "");
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM jobs WHERE name IS NULL"), 1);

	/* the same job twice is refused */
	assert_int_equal(store_job_begin(st, &slurm), -EEXIST);
	log_text(fx);

	assert_int_equal(store_get_job(st, 999, &got), -ENOENT);
	assert_string_equal(log_text(fx), "");
	store_close(st);
}

/* Schema 12: a Slurm 26.05 job's SLUID, kept; a schema-11 store reads as none, then upgrades */
static void test_job_sluid(void **state)
{
	struct fixture *fx = *state;
	struct job_record job, got;
	struct store *st = open_new(fx);
	int64_t node;

	assert_int_equal(store_node(st, "vm", 4, 1 << 30, 0, &node), 0);
	job_fill(&job, node, "slurm", "sEKNKTV3WPV500", 1700000000000);
	snprintf(job.sluid, sizeof(job.sluid), "sEKNKTV3WPV500");
	assert_int_equal(store_job_begin(st, &job), 0);
	assert_int_equal(store_get_job(st, job.id, &got), 0);
	assert_string_equal(got.sluid, "sEKNKTV3WPV500");
	job_fill(&got, node, "slurm", "4712", 1700000001000);
	assert_int_equal(store_job_begin(st, &got), 0);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM jobs WHERE sluid IS NULL"), 1);
	store_close(st);

	/* a store of schema 11 */
	sql_exec(fx->path,
		 "ALTER TABLE jobs DROP COLUMN sluid; ALTER TABLE sessions DROP COLUMN owner;"
		 " ALTER TABLE procs DROP COLUMN container;"
		 " ALTER TABLE jobs DROP COLUMN k8s_owner; ALTER TABLE jobs DROP COLUMN "
		 "k8s_owner_label;" STORE_UNDO_SCHEMA16 " PRAGMA user_version = 11");
	assert_int_equal(store_open(fx->path, STORE_READONLY, &st), 0);
	assert_int_equal(store_get_job(st, job.id, &got), 0);
	assert_string_equal(got.job_id, "sEKNKTV3WPV500");
	assert_string_equal(got.sluid, "");
	store_close(st);
	assert_int_equal(sql_i64(fx->path, "PRAGMA user_version"), 11);
	st = open_new(fx);
	assert_int_equal(sql_i64(fx->path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
	snprintf(job.sluid, sizeof(job.sluid), "sEKNKTV3WPV500");
	assert_int_equal(store_job_update(st, &job), 0);
	assert_int_equal(store_get_job(st, job.id, &got), 0);
	assert_string_equal(got.sluid, "sEKNKTV3WPV500");
	store_close(st);
	log_text(fx);
}

/*
 * A fact table's columns (facts.h) are the same in a store created now and
 * in one that got them by migration: a schema-10 store's job_samples, made
 * before cpu_wait_ms, gets it in the same place, type and constraints.
 */
static void test_fact_columns_migrated(void **state)
{
	static const char cols[] =
	    "SELECT group_concat(name || ' ' || type || ' ' || \"notnull\" || ' ' ||"
	    " coalesce(dflt_value, '-'), ', ') FROM pragma_table_info('job_samples')";
	struct fixture *fx = *state;
	char fresh[1024], migrated[1024];
	struct store *st = open_new(fx);

	store_close(st);
	sql_text(fx->path, cols, fresh, sizeof(fresh));
	assert_non_null(strstr(fresh, "cg_mem_peak_bytes INTEGER 0 -, cpu_wait_ms INTEGER 0 -"));
	sql_exec(fx->path,
		 "ALTER TABLE job_samples DROP COLUMN cpu_wait_ms;"
		 " ALTER TABLE jobs DROP COLUMN sluid; ALTER TABLE sessions DROP COLUMN owner;"
		 " ALTER TABLE procs DROP COLUMN container;"
		 " ALTER TABLE jobs DROP COLUMN k8s_owner; ALTER TABLE jobs DROP COLUMN "
		 "k8s_owner_label;" STORE_UNDO_SCHEMA16 " PRAGMA user_version = 10");
	sql_text(fx->path, cols, migrated, sizeof(migrated));
	assert_null(strstr(migrated, "cpu_wait_ms"));
	st = open_new(fx);
	store_close(st);
	assert_int_equal(sql_i64(fx->path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
	sql_text(fx->path, cols, migrated, sizeof(migrated));
	assert_string_equal(migrated, fresh);
	log_text(fx);
}

/* Everything replay hands out, in order. */
struct replay_log {
	int n;
	char kind[64]; /* 'h' host, 'j' job, 'p' proc, 'e' event */
	int64_t ts[64];
	struct host_sample *hosts[8];
	int nhosts;
	struct job_sample jobs[8];
	int njobs;
	struct proc_sample procs[16];
	struct proc_info pinfo[16];
	int nprocs;
	struct event_record events[8];
	int nevents;
};

static void log_kind(struct replay_log *rl, char kind, int64_t ts)
{
	assert_true(rl->n < 64);
	rl->kind[rl->n] = kind;
	rl->ts[rl->n++] = ts;
	rl->kind[rl->n] = '\0';
}

static void on_host(void *arg, int64_t ts_ms, const struct host_sample *h)
{
	struct replay_log *rl = arg;

	log_kind(rl, 'h', ts_ms);
	assert_true(rl->nhosts < 8);
	rl->hosts[rl->nhosts] = malloc(sizeof(*h));
	assert_non_null(rl->hosts[rl->nhosts]);
	memcpy(rl->hosts[rl->nhosts++], h, sizeof(*h));
}

static void on_job(void *arg, int64_t ts_ms, const struct job_sample *s)
{
	struct replay_log *rl = arg;

	log_kind(rl, 'j', ts_ms);
	assert_true(rl->njobs < 8);
	rl->jobs[rl->njobs++] = *s;
}

static void on_proc(void *arg, const struct proc_info *p, int64_t ts_ms,
		    const struct proc_sample *s)
{
	struct replay_log *rl = arg;

	log_kind(rl, 'p', ts_ms);
	assert_true(rl->nprocs < 16);
	rl->pinfo[rl->nprocs] = *p;
	rl->procs[rl->nprocs++] = *s;
}

static void on_event(void *arg, const struct event_record *e)
{
	struct replay_log *rl = arg;

	log_kind(rl, 'e', e->ts_ms);
	assert_true(rl->nevents < 8);
	rl->events[rl->nevents++] = *e;
}

static const struct store_replay_ops replay_all = {on_host, on_job, on_proc, on_event};

static void replay_log_release(struct replay_log *rl)
{
	int i;

	for (i = 0; i < rl->nhosts; i++)
		free(rl->hosts[i]);
	memset(rl, 0, sizeof(*rl));
}

static void test_ticks_and_replay(void **state)
{
	struct fixture *fx = *state;
	struct store *st = open_new(fx);
	struct host_sample *h1 = host_new(1000), *h2 = host_new(2000), *h_out = host_new(0);
	struct proc_sample ps1 = {0}, ps2 = {0};
	struct job_sample js1 = {0}, js2 = {0};
	struct event_record ev = {0}, ev_other = {0};
	struct replay_log rl = {0};
	struct proc_info p1, p2, p_other;
	struct job_record job, other;
	int64_t node, node_b, prow1, prow2, prow_other;
	const int64_t t0 = 1700000000000;

	assert_int_equal(store_node(st, "node-a", 8, 16ull << 30, 0, &node), 0);
	assert_int_equal(store_node(st, "node-b", 8, 16ull << 30, 0, &node_b), 0);
	job_fill(&job, node, "run", "", t0 + 1000);
	assert_int_equal(store_job_begin(st, &job), 0);
	job_fill(&other, node, "run", "", t0 + 1000);
	assert_int_equal(store_job_begin(st, &other), 0);

	/* a host sample before the job starts is not part of its replay */
	assert_int_equal(store_tick_begin(st), 0);
	assert_int_equal(store_put_host(st, node, t0 + 500, h_out), 0);
	assert_int_equal(store_tick_commit(st), 0);

	/* tick 1: everything, p2 without io, swap or threads */
	assert_int_equal(store_tick_begin(st), 0);
	assert_int_equal(store_put_host(st, node, t0 + 1000, h1), 0);
	assert_int_equal(store_put_host(st, node_b, t0 + 1000, h_out), 0);
	proc_fill(&p1, 100, t0 + 990, "python");
	proc_fill(&p2, 101, t0 + 995, "sh");
	proc_fill(&p_other, 200, t0 + 995, "other");
	assert_int_equal(store_put_proc_info(st, node, job.id, &p1, NULL, &prow1), 0);
	assert_int_equal(store_put_proc_info(st, node, job.id, &p2, NULL, &prow2), 0);
	assert_int_equal(store_put_proc_info(st, node, other.id, &p_other, NULL, &prow_other), 0);
	assert_int_not_equal(prow1, prow2);
	ps1 = (struct proc_sample){PS_RSS | PS_HWM | PS_SWAP | PS_IO | PS_THREADS,
				   'R',
				   4,
				   100,
				   20,
				   3,
				   1,
				   1 << 20,
				   2 << 20,
				   4096,
				   8192,
				   16384};
	ps2 = (struct proc_sample){PS_RSS | PS_HWM, 'S', 0, 5, 6, 0, 0, 3 << 20, 4 << 20, 0, 0, 0};
	assert_int_equal(store_put_proc_sample(st, prow1, t0 + 1000, &ps1), 0);
	assert_int_equal(store_put_proc_sample(st, prow2, t0 + 1000, &ps2), 0);
	assert_int_equal(store_put_proc_sample(st, prow_other, t0 + 1000, &ps2), 0);
	js1 = (struct job_sample){JS_IO | JS_SWAP, 2, 105, 26, 4 << 20, 4096, 8192, 16384, 7};
	assert_int_equal(store_put_job_sample(st, job.id, t0 + 1000, &js1), 0);
	assert_int_equal(store_put_job_sample(st, other.id, t0 + 1000, &js1), 0);
	assert_int_equal(store_tick_commit(st), 0);

	/* tick 2: host with CPU only; the event comes first this time */
	h2->valid = HOST_HAS_CPU;
	assert_int_equal(store_tick_begin(st), 0);
	ev = (struct event_record){t0 + 2000, "exit", 101, 3, "sh exited with status 3"};
	ev_other = (struct event_record){t0 + 2000, "exit", 200, 0, ""};
	assert_int_equal(store_put_event(st, node, job.id, &ev), 0);
	assert_int_equal(store_put_event(st, node, other.id, &ev_other), 0);
	assert_int_equal(store_put_host(st, node, t0 + 2000, h2), 0);
	assert_int_equal(store_put_proc_sample(st, prow1, t0 + 2000, &ps1), 0);
	js2 = (struct job_sample){0, 1, 205, 46, 1 << 20, 0, 0, 0, 9};
	assert_int_equal(store_put_job_sample(st, job.id, t0 + 2000, &js2), 0);
	assert_int_equal(store_tick_commit(st), 0);
	p2.end_ms = t0 + 2000;
	assert_int_equal(store_update_proc_info(st, prow2, &p2, NULL), 0);

	/* after the job ends: not part of it once end_ms is set */
	assert_int_equal(store_put_host(st, node, t0 + 9000, h_out), 0);
	job.end_ms = t0 + 2500;
	assert_int_equal(store_job_update(st, &job), 0);

	assert_int_equal(store_replay_job(st, job.id, &replay_all, &rl), 0);
	assert_string_equal(rl.kind, "hppjehpj");
	assert_int_equal(rl.ts[0], t0 + 1000);
	assert_int_equal(rl.ts[4], t0 + 2000);
	assert_int_equal(rl.nhosts, 2);
	assert_host_equal(h1, rl.hosts[0]);
	assert_host_equal(h2, rl.hosts[1]);
	assert_int_equal(rl.nprocs, 3);
	assert_int_equal(rl.pinfo[0].pid, 100);
	assert_int_equal(rl.pinfo[0].ppid, 1);
	assert_int_equal(rl.pinfo[0].start_ms, t0 + 990);
	assert_int_equal(rl.pinfo[0].uid, 1000);
	assert_string_equal(rl.pinfo[0].comm, "python");
	assert_string_equal(rl.pinfo[0].cmdline, "python --flag arg");
	assert_int_equal(rl.pinfo[0].end_ms, 0);
	assert_proc_sample_equal(&ps1, &rl.procs[0]);
	assert_int_equal(rl.pinfo[1].pid, 101);
	assert_int_equal(rl.pinfo[1].end_ms, t0 + 2000);
	assert_int_equal(rl.procs[1].valid, PS_RSS | PS_HWM);
	assert_proc_sample_equal(&ps2, &rl.procs[1]);
	assert_proc_sample_equal(&ps1, &rl.procs[2]);
	assert_int_equal(rl.njobs, 2);
	assert_job_sample_equal(&js1, &rl.jobs[0]);
	assert_job_sample_equal(&js2, &rl.jobs[1]);
	assert_int_equal(rl.nevents, 1);
	assert_int_equal(rl.events[0].ts_ms, t0 + 2000);
	assert_string_equal(rl.events[0].kind, "exit");
	assert_int_equal(rl.events[0].pid, 101);
	assert_int_equal(rl.events[0].value, 3);
	assert_string_equal(rl.events[0].message, "sh exited with status 3");
	replay_log_release(&rl);

	/* missing values are NULL in the file */
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM proc_samples WHERE read_bytes"
					   " IS NULL AND write_bytes IS NULL AND swap_bytes IS NULL"
					   " AND threads IS NULL"),
			 2);
	assert_int_equal(sql_i64(fx->path,
				 "SELECT count(*) FROM host_samples WHERE"
				 " mem_shmem_bytes IS NOT NULL OR psi_cpu_full_us IS NOT NULL"),
			 0);
	assert_int_equal(
	    sql_i64(fx->path, "SELECT count(*) FROM job_samples WHERE read_bytes IS NULL"), 1);

	/* only some callbacks; the other job; no such job */
	assert_int_equal(
	    store_replay_job(st, other.id, &(struct store_replay_ops){.event = on_event}, &rl), 0);
	assert_string_equal(rl.kind, "e");
	assert_int_equal(rl.events[0].pid, 200);
	assert_string_equal(rl.events[0].message, "");
	replay_log_release(&rl);
	assert_int_equal(store_replay_job(st, other.id, NULL, NULL), 0);
	assert_int_equal(store_replay_job(st, 12345, &replay_all, &rl), -ENOENT);
	assert_string_equal(log_text(fx), "");
	store_close(st);

	/* a running job (no end) has no upper bound; read back read-only */
	assert_int_equal(store_open(fx->path, STORE_READONLY, &st), 0);
	assert_int_equal(
	    store_replay_job(st, other.id, &(struct store_replay_ops){.host = on_host}, &rl), 0);
	assert_string_equal(rl.kind, "hhh");
	assert_int_equal(rl.ts[2], t0 + 9000);
	replay_log_release(&rl);
	store_close(st);
	free(h1);
	free(h2);
	free(h_out);
}

/*
 * A node's `interval` events (no job) are part of its jobs' replays: the
 * latest at or before the job's start and those up to its end; not another
 * node's, not another kind of job-less event, not those after the end.
 */
static void test_node_intervals_replayed(void **state)
{
	struct fixture *fx = *state;
	struct store *st = open_new(fx);
	struct replay_log rl = {0};
	struct job_record job, early;
	struct job_sample js = {0};
	struct event_record xid = {0};
	int64_t a, b;
	const int64_t t0 = 1700000000000;

	assert_int_equal(store_node(st, "node-a", 8, 16ull << 30, 0, &a), 0);
	assert_int_equal(store_node(st, "node-b", 8, 16ull << 30, 0, &b), 0);
	job_fill(&job, a, "slurm", "1", t0 + 1000);
	job.end_ms = t0 + 5000;
	assert_int_equal(store_job_begin(st, &job), 0);
	job_fill(&early, a, "slurm", "2", t0 - 1000);
	early.end_ms = t0 + 200;
	assert_int_equal(store_job_begin(st, &early), 0);

	assert_int_equal(store_tick_put_interval(st, a, t0, 1000, "agent started"), 0);
	assert_int_equal(store_tick_put_interval(st, a, t0 + 500, 200, "session"), 0);
	assert_int_equal(store_tick_put_interval(st, b, t0 + 2000, 100, ""), 0);
	xid = (struct event_record){t0 + 2000, "xid", 0, 79, "GPU fell off the bus"};
	assert_int_equal(store_put_event(st, a, 0, &xid), 0);
	assert_int_equal(store_put_job_sample(st, job.id, t0 + 2000, &js), 0);
	assert_int_equal(store_tick_put_interval(st, a, t0 + 3000, 1000, "back"), 0);
	assert_int_equal(store_put_job_sample(st, job.id, t0 + 4000, &js), 0);
	assert_int_equal(store_tick_put_interval(st, a, t0 + 6000, 500, ""), 0);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM events WHERE kind = 'interval'"
					   " AND job_id IS NULL AND node_id IS NOT NULL"),
			 5);

	assert_int_equal(store_replay_job(st, job.id, &replay_all, &rl), 0);
	assert_string_equal(rl.kind, "ejej");
	assert_int_equal(rl.events[0].ts_ms, t0 + 500);
	assert_string_equal(rl.events[0].kind, "interval");
	assert_int_equal(rl.events[0].value, 200);
	assert_string_equal(rl.events[0].message, "session");
	assert_int_equal(rl.events[1].ts_ms, t0 + 3000);
	assert_int_equal(rl.events[1].value, 1000);
	replay_log_release(&rl);
	/* nothing in effect before its start: the ones in its window */
	assert_int_equal(store_replay_job(st, early.id, &replay_all, &rl), 0);
	assert_string_equal(rl.kind, "e");
	assert_int_equal(rl.events[0].value, 1000);
	replay_log_release(&rl);
	assert_string_equal(log_text(fx), "");
	store_close(st);
}

/*
 * A job's report from the store when its node went from 1 s to 200 ms at
 * t=3 s: each 200 ms interval is its own, none joins the bucket before
 * (as it did when the job's 1 s was taken for the spacing).
 */
static void test_report_across_interval_change(void **state)
{
	struct fixture *fx = *state;
	struct store *st = open_new(fx);
	struct job_report *r = calloc(1, sizeof(*r));
	struct job_record job;
	struct job_sample js = {.nprocs = 1, .rss_bytes = 1 << 20};
	int64_t node, t;
	const int64_t t0 = 1700000000000;

	assert_int_equal(store_node(st, "node-a", 8, 16ull << 30, 0, &node), 0);
	job_fill(&job, node, "slurm", "3", t0);
	job.interval_ms = 1000;
	job.cores_allowed = 8;
	assert_int_equal(store_job_begin(st, &job), 0);
	assert_int_equal(store_tick_put_interval(st, node, t0 - 60000, 1000, ""), 0);
	for (t = 0; t <= 3000; t += 1000) {
		js.user_ms = (uint64_t)t;
		assert_int_equal(store_put_job_sample(st, job.id, t0 + t, &js), 0);
	}
	assert_int_equal(store_tick_put_interval(st, node, t0 + 3000, 200, ""), 0);
	for (t = 3200; t <= 5000; t += 200) {
		js.user_ms += 400;
		assert_int_equal(store_put_job_sample(st, job.id, t0 + t, &js), 0);
	}
	job.end_ms = t0 + 5000;
	assert_int_equal(store_job_update(st, &job), 0);

	assert_int_equal(job_report_load(r, st, &job), 0);
	assert_int_equal(r->sum.samples, 4 + 10);
	assert_int_equal(r->sum.interval_ms, 200);
	assert_int_equal(r->sum.bucket_ms, 1000);
	assert_float_equal(summary_cores_avg(&r->sum), 7000.0 / 5000.0, 1e-9);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(r->sum.buckets[i].span_ms, 1000);
		assert_int_equal(r->sum.buckets[i].cpu_ms, i < 3 ? 1000 : 2000);
	}
	assert_int_equal(r->sum.buckets[5].span_ms, 0);
	assert_int_equal(r->sum.nevents, 1);
	assert_int_equal(r->js.interval_ms, 200);
	assert_int_equal(r->js.interval_since_ms, t0 + 3000);
	job_report_release(r);
	free(r);
	store_close(st);
}

static int collect_ids(const struct job_record *job, void *arg)
{
	int64_t *ids = arg;

	ids[++ids[0]] = job->id;
	return ids[0] == 3 ? 7 : 0;
}

static int collect_all(const struct job_record *job, void *arg)
{
	int64_t *ids = arg;

	ids[++ids[0]] = job->id;
	return 0;
}

static void test_for_each_order(void **state)
{
	struct fixture *fx = *state;
	struct store *st = open_new(fx);
	struct job_record a, b, c, d;
	int64_t node, ids[8] = {0};

	assert_int_equal(store_node(st, "n", 1, 1, 1, &node), 0);
	job_fill(&a, node, "slurm", "1", 3000);
	job_fill(&b, node, "slurm", "2", 1000);
	job_fill(&c, node, "slurm", "3", 2000);
	job_fill(&d, node, "slurm", "4", 1000);
	assert_int_equal(store_job_begin(st, &a), 0);
	assert_int_equal(store_job_begin(st, &b), 0);
	assert_int_equal(store_job_begin(st, &c), 0);
	assert_int_equal(store_job_begin(st, &d), 0);
	assert_int_equal(store_for_each_job(st, collect_all, ids), 0);
	assert_int_equal(ids[0], 4);
	assert_int_equal(ids[1], b.id);
	assert_int_equal(ids[2], d.id);
	assert_int_equal(ids[3], c.id);
	assert_int_equal(ids[4], a.id);
	memset(ids, 0, sizeof(ids));
	assert_int_equal(store_for_each_job(st, collect_ids, ids), 7);
	assert_int_equal(ids[0], 3);
	store_close(st);
}

/* A failed open leaves the file byte for byte as it was, and adds no -wal or -shm. */
static void assert_refused_unchanged(struct fixture *fx, const char *path, int want,
				     const char *msg)
{
	struct store *st = NULL;
	unsigned flags[] = {STORE_CREATE, STORE_READONLY};
	size_t before_len, after_len;
	char *before, *after;
	const char *text;
	size_t i;

	before = slurp(path, &before_len);
	for (i = 0; i < 2; i++) {
		assert_int_equal(store_open(path, flags[i], &st), want);
		assert_null(st);
		text = log_text(fx);
		assert_non_null(strstr(text, path));
		if (!strstr(text, msg))
			fail_msg("message \"%s\" lacks \"%s\"", text, msg);
		after = slurp(path, &after_len);
		assert_int_equal(after_len, before_len);
		assert_memory_equal(after, before, before_len);
		free(after);
	}
	assert_false(exists_suffix(path, "-wal"));
	assert_false(exists_suffix(path, "-shm"));
	assert_false(exists_suffix(path, "-journal"));
	free(before);
}

static void test_foreign_sqlite_refused(void **state)
{
	struct fixture *fx = *state;

	sql_exec(fx->path, "CREATE TABLE songs (title TEXT); INSERT INTO songs VALUES ('a');");
	assert_refused_unchanged(fx, fx->path, -EPROTO, "is not a jobscope store");
	sql_exec(fx->path, "PRAGMA application_id = 305419896");
	assert_refused_unchanged(fx, fx->path, -EPROTO, "application_id 0x12345678");
	/* in WAL mode too */
	sql_exec(fx->path, "PRAGMA journal_mode = WAL");
	assert_refused_unchanged(fx, fx->path, -EPROTO, "is not a jobscope store");
}

static void test_text_file_refused(void **state)
{
	struct fixture *fx = *state;
	static const char header_only[] = "SQLite format 3\0garbage";

	spit(fx->path, "hello, world\nthis is not a store\n", 33);
	assert_refused_unchanged(fx, fx->path, -EPROTO, "not an SQLite database");
	spit(fx->path, "x", 1);
	assert_refused_unchanged(fx, fx->path, -EPROTO, "not an SQLite database");
	spit(fx->path, header_only, sizeof(header_only));
	assert_refused_unchanged(fx, fx->path, -EPROTO, "truncated header");
}

static void test_not_a_regular_file(void **state)
{
	struct fixture *fx = *state;
	struct store *st = NULL;
	char fifo[256];

	/* a directory, and a FIFO that must not block the open */
	assert_int_equal(store_open(fx->dir, STORE_CREATE, &st), -EISDIR);
	assert_int_equal(store_open(fx->dir, STORE_READONLY, &st), -EISDIR);
	snprintf(fifo, sizeof(fifo), "%s/fifo", fx->dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(store_open(fifo, STORE_CREATE, &st), -EPROTO);
	assert_non_null(strstr(log_text(fx), "not a regular file"));
	assert_null(st);
	assert_int_equal(store_open("", STORE_CREATE, &st), -EINVAL);
	log_text(fx);
}

/* A small store with some rows, closed. */
static size_t make_store(struct fixture *fx, int ticks)
{
	struct store *st = open_new(fx);
	struct host_sample *h = host_new(7);
	struct proc_sample ps = {PS_RSS, 'R', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	struct job_record job;
	struct proc_info p;
	int64_t node, prow;
	struct stat sb;
	int i;

	assert_int_equal(store_node(st, "node", 2, 1 << 30, 0, &node), 0);
	job_fill(&job, node, "run", "", 1000);
	assert_int_equal(store_job_begin(st, &job), 0);
	proc_fill(&p, 10, 900, "proc");
	assert_int_equal(store_put_proc_info(st, node, job.id, &p, NULL, &prow), 0);
	for (i = 0; i < ticks; i++) {
		assert_int_equal(store_tick_begin(st), 0);
		assert_int_equal(store_put_host(st, node, 1000 + i, h), 0);
		assert_int_equal(store_put_proc_sample(st, prow, 1000 + i, &ps), 0);
		assert_int_equal(store_tick_commit(st), 0);
	}
	store_close(st);
	free(h);
	assert_int_equal(stat(fx->path, &sb), 0);
	return (size_t)sb.st_size;
}

static void test_corrupt_store_refused(void **state)
{
	struct fixture *fx = *state;
	size_t size = make_store(fx, 50), len, i;
	char *orig = slurp(fx->path, &len), *bad;

	assert_true(size >= 8 * 4096);
	bad = malloc(len);
	assert_non_null(bad);

	/* truncated inside the header */
	spit(fx->path, orig, 60);
	assert_refused_unchanged(fx, fx->path, -EPROTO, "corrupt");
	/* truncated at a page boundary and in the middle of a page */
	spit(fx->path, orig, 3 * 4096);
	assert_refused_unchanged(fx, fx->path, -EPROTO, "corrupt");
	spit(fx->path, orig, len - 1000);
	assert_refused_unchanged(fx, fx->path, -EPROTO, "corrupt");
	/* an invalid page size in the header */
	memcpy(bad, orig, len);
	bad[16] = 0x03;
	bad[17] = 0x01;
	spit(fx->path, bad, len);
	assert_refused_unchanged(fx, fx->path, -EPROTO, "corrupt");
	/* the schema page and then a table's pages overwritten */
	memcpy(bad, orig, len);
	memset(bad + 100, 0xA5, 4096 - 100);
	spit(fx->path, bad, len);
	assert_refused_unchanged(fx, fx->path, -EPROTO, "corrupt");
	for (i = 1; i < len / 4096; i++) {
		memcpy(bad, orig, len);
		memset(bad + i * 4096, 0x5A, 200);
		spit(fx->path, bad, len);
		assert_refused_unchanged(fx, fx->path, -EPROTO, "corrupt");
	}
	/* the intact file still opens */
	spit(fx->path, orig, len);
	store_close(open_new(fx));
	free(bad);
	free(orig);
}

static void test_newer_schema_refused(void **state)
{
	struct fixture *fx = *state;
	struct store *st = NULL;
	char msg[128];
	sqlite3 *db;

	make_store(fx, 1);
	sql_exec(fx->path, "PRAGMA user_version = 99; PRAGMA journal_mode = DELETE");
	snprintf(msg, sizeof(msg),
		 "written by a newer jobscope (schema 99, this one reads up to %d)",
		 STORE_SCHEMA_VERSION);
	assert_refused_unchanged(fx, fx->path, -EPROTONOSUPPORT, msg);

	/* the new version still in the WAL of a running writer, not yet in the file */
	sql_exec(fx->path, "PRAGMA user_version = 2; PRAGMA journal_mode = WAL");
	assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA wal_autocheckpoint = 0; PRAGMA user_version = 98",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(store_open(fx->path, STORE_READONLY, &st), -EPROTONOSUPPORT);
	assert_int_equal(store_open(fx->path, STORE_CREATE, &st), -EPROTONOSUPPORT);
	snprintf(msg, sizeof(msg), "(schema 98, this one reads up to %d)", STORE_SCHEMA_VERSION);
	assert_non_null(strstr(log_text(fx), msg));
	assert_null(st);
	sqlite3_close(db);
}

static void test_unwritable_location(void **state)
{
	struct fixture *fx = *state;
	struct store *st = NULL;
	char file[256], path[320], dir[256];

	snprintf(file, sizeof(file), "%s/file.txt", fx->dir);
	spit(file, "x", 1);
	snprintf(path, sizeof(path), "%s/file.txt/sub/store.db", fx->dir);
	assert_int_equal(store_open(path, STORE_CREATE, &st), -ENOTDIR);
	assert_null(st);
	assert_non_null(strstr(log_text(fx), path));

	/* root ignores permission bits: EACCES can only be seen as a user */
	snprintf(dir, sizeof(dir), "%s/ro", fx->dir);
	assert_int_equal(mkdir(dir, 0555), 0);
	snprintf(path, sizeof(path), "%s/store.db", dir);
	if (geteuid() == 0) {
		print_message("running as root: -EACCES not testable, skipped\n");
		return;
	}
	assert_int_equal(store_open(path, STORE_CREATE, &st), -EACCES);
	assert_non_null(strstr(log_text(fx), path));
}

static const char all_seqs[] =
    "SELECT seq FROM host_samples UNION ALL SELECT seq FROM cpu_samples UNION ALL"
    " SELECT seq FROM disk_samples UNION ALL SELECT seq FROM net_samples UNION ALL"
    " SELECT seq FROM proc_samples UNION ALL SELECT seq FROM job_samples UNION ALL"
    " SELECT seq FROM events";

static int64_t count_rows(const char *path)
{
	return sql_i64(path, "SELECT (SELECT count(*) FROM host_samples) +"
			     " (SELECT count(*) FROM cpu_samples) + (SELECT count(*) FROM"
			     " proc_samples) + (SELECT count(*) FROM job_samples)");
}

static void test_full_disk(void **state)
{
	struct fixture *fx = *state;
	struct store *st = open_new(fx);
	struct host_sample *h = host_new(1);
	struct proc_sample ps = {PS_RSS | PS_IO, 'R', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	struct job_sample js = {0};
	struct job_record job;
	struct proc_info p;
	int64_t node, prow[64], rows, max_seq, pages;
	sqlite3_stmt *stmt;
	char sql[512];
	int i, j, ret;

	assert_int_equal(store_node(st, "node", 2, 1 << 30, 0, &node), 0);
	job_fill(&job, node, "run", "", 1000);
	assert_int_equal(store_job_begin(st, &job), 0);
	for (i = 0; i < 64; i++) {
		proc_fill(&p, 100 + i, 900, "proc");
		assert_int_equal(store_put_proc_info(st, node, job.id, &p, NULL, &prow[i]), 0);
	}
	for (i = 0; i < 3; i++) {
		assert_int_equal(store_tick_begin(st), 0);
		assert_int_equal(store_put_host(st, node, 1000 + i, h), 0);
		assert_int_equal(store_tick_commit(st), 0);
	}
	rows = count_rows(fx->path);
	snprintf(sql, sizeof(sql), "SELECT max(seq) FROM (%s)", all_seqs);
	max_seq = sql_i64(fx->path, sql);

	assert_int_equal(sqlite3_prepare_v2(st->conn.sq, "PRAGMA page_count", -1, &stmt, NULL), 0);
	assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
	pages = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	snprintf(sql, sizeof(sql), "PRAGMA max_page_count = %lld", (long long)pages);
	assert_int_equal(sqlite3_exec(st->conn.sq, sql, NULL, NULL, NULL), SQLITE_OK);

	/* a tick too large for the room left fails whole, quietly */
	for (j = 0; j < 3; j++) {
		assert_int_equal(store_tick_begin(st), 0);
		ret = store_put_host(st, node, 2000 + j, h);
		for (i = 0; i < 64 * 40 && ret == 0; i++)
			ret = store_put_proc_sample(st, prow[i % 64], 2000 + j + i, &ps);
		if (ret == 0)
			ret = store_tick_commit(st);
		else
			store_tick_abort(st);
		assert_int_equal(ret, -ENOSPC);
	}
	/* a put after the failure inside the same tick fails too, and commit says so */
	assert_int_equal(store_tick_begin(st), 0);
	for (i = 0, ret = 0; i < 64 * 40 && ret == 0; i++)
		ret = store_put_proc_sample(st, prow[i % 64], 3000 + i, &ps);
	assert_int_equal(ret, -ENOSPC);
	assert_int_equal(store_put_job_sample(st, job.id, 3000, &js), -ENOSPC);
	assert_int_equal(store_tick_commit(st), -ENOSPC);
	assert_string_equal(log_text(fx), "");
	assert_int_equal(count_rows(fx->path), rows);

	/* room again: the next tick goes in and seq carries on without a gap */
	assert_int_equal(
	    sqlite3_exec(st->conn.sq, "PRAGMA max_page_count = 1000000", NULL, NULL, NULL),
	    SQLITE_OK);
	assert_int_equal(store_tick_begin(st), 0);
	assert_int_equal(store_put_host(st, node, 4000, h), 0);
	for (i = 0; i < 64; i++)
		assert_int_equal(store_put_proc_sample(st, prow[i], 4000, &ps), 0);
	assert_int_equal(store_tick_commit(st), 0);
	assert_int_equal(count_rows(fx->path), rows + 1 + 2 + 64);
	assert_int_equal(sql_i64(fx->path, "SELECT min(seq) FROM host_samples WHERE ts_ms = 4000"),
			 max_seq + 1);
	store_close(st);
	free(h);
}

static void one_tick(struct store *st, int64_t node, int64_t job, int64_t prow, int64_t ts,
		     const struct host_sample *h)
{
	struct proc_sample ps = {PS_RSS, 'R', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	struct job_sample js = {JS_IO, 1, 2, 3, 4, 5, 6, 7, 8};
	struct event_record ev = {ts, "mark", 0, 1, ""};

	assert_int_equal(store_tick_begin(st), 0);
	assert_int_equal(store_put_proc_sample(st, prow, ts, &ps), 0);
	assert_int_equal(store_put_host(st, node, ts, h), 0);
	assert_int_equal(store_put_event(st, node, job, &ev), 0);
	assert_int_equal(store_put_job_sample(st, job, ts, &js), 0);
	assert_int_equal(store_tick_commit(st), 0);
}

static void test_seq_rule(void **state)
{
	struct fixture *fx = *state;
	struct store *st = open_new(fx);
	struct host_sample *h = host_new(1);
	struct job_record job;
	struct proc_info p;
	int64_t node, prow, n1, max1;
	char sql[512];
	int i;

	assert_int_equal(store_node(st, "node", 2, 1 << 30, 0, &node), 0);
	job_fill(&job, node, "run", "", 1000);
	assert_int_equal(store_job_begin(st, &job), 0);
	proc_fill(&p, 10, 900, "proc");
	assert_int_equal(store_put_proc_info(st, node, job.id, &p, NULL, &prow), 0);
	for (i = 0; i < 5; i++)
		one_tick(st, node, job.id, prow, 1000 + i, h);
	/* an aborted tick gives its numbers back */
	assert_int_equal(store_tick_begin(st), 0);
	assert_int_equal(store_put_host(st, node, 1999, h), 0);
	store_tick_abort(st);
	store_close(st);

	/* 1 proc + (1 host + 2 cpu + 1 disk + 2 nets) + 1 event + 1 job per tick */
	snprintf(sql, sizeof(sql),
		 "SELECT count(*), count(DISTINCT seq), min(seq), max(seq) FROM (%s)", all_seqs);
	n1 = sql_i64(fx->path, sql);
	assert_int_equal(n1, 5 * 9);
	snprintf(sql, sizeof(sql), "SELECT count(DISTINCT seq) FROM (%s)", all_seqs);
	assert_int_equal(sql_i64(fx->path, sql), n1);
	snprintf(sql, sizeof(sql), "SELECT max(seq) FROM (%s)", all_seqs);
	max1 = sql_i64(fx->path, sql);
	assert_int_equal(max1, n1); /* dense: 1..n, the aborted tick left no gap */
	/* within a tick, rows are numbered in the order they were put */
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM proc_samples p JOIN host_samples h"
					   " ON h.ts_ms = p.ts_ms WHERE p.seq + 1 != h.seq"),
			 0);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM cpu_samples c JOIN host_samples h"
					   " ON h.ts_ms = c.ts_ms WHERE c.seq <= h.seq OR"
					   " c.seq > h.seq + 2"),
			 0);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM job_samples j JOIN events e"
					   " ON e.ts_ms = j.ts_ms WHERE j.seq != e.seq + 1"),
			 0);

	/* reopen: the counter carries on after the largest seq of any table */
	assert_int_equal(store_open(fx->path, STORE_CREATE, &st), 0);
	for (i = 0; i < 3; i++)
		one_tick(st, node, job.id, prow, 2000 + i, h);
	store_close(st);
	snprintf(sql, sizeof(sql), "SELECT count(DISTINCT seq) FROM (%s)", all_seqs);
	assert_int_equal(sql_i64(fx->path, sql), 8 * 9);
	assert_int_equal(sql_i64(fx->path, "SELECT min(seq) FROM proc_samples WHERE ts_ms >= 2000"),
			 max1 + 1);
	free(h);
}

static void test_proc_upsert(void **state)
{
	struct fixture *fx = *state;
	struct store *st = open_new(fx);
	struct job_record job;
	struct proc_info p;
	int64_t node, row1, row2;
	char buf[128];

	assert_int_equal(store_node(st, "node", 2, 1 << 30, 0, &node), 0);
	job_fill(&job, node, "run", "", 1000);
	assert_int_equal(store_job_begin(st, &job), 0);
	proc_fill(&p, 10, 900, "bash");
	assert_int_equal(store_put_proc_info(st, node, job.id, &p, NULL, &row1), 0);
	proc_fill(&p, 10, 900, "python3");
	p.ppid = 7;
	assert_int_equal(store_put_proc_info(st, node, job.id, &p, NULL, &row2), 0);
	assert_int_equal(row1, row2);
	sql_text(fx->path, "SELECT comm || ' ' || ppid FROM procs", buf, sizeof(buf));
	assert_string_equal(buf, "python3 7");
	/* same pid, another start: another process */
	proc_fill(&p, 10, 901, "bash");
	assert_int_equal(store_put_proc_info(st, node, job.id, &p, NULL, &row2), 0);
	assert_int_not_equal(row1, row2);

	memset(&p, 0, sizeof(p));
	p.end_ms = 5000;
	assert_int_equal(store_update_proc_info(st, row1, &p, NULL), 0);
	sql_text(fx->path, "SELECT comm || ' ' || end_ms || ' ' || cmdline FROM procs WHERE id = 1",
		 buf, sizeof(buf));
	assert_string_equal(buf, "python3 5000 python3 --flag arg");
	store_close(st);
}

static void test_reader_while_writing(void **state)
{
	struct fixture *fx = *state;
	struct store *w = open_new(fx), *r = NULL;
	struct host_sample *h = host_new(3);
	struct replay_log rl = {0};
	struct job_record job, got;
	int64_t node;

	assert_int_equal(store_node(w, "node", 2, 1 << 30, 0, &node), 0);
	job_fill(&job, node, "run", "", 1000);
	assert_int_equal(store_job_begin(w, &job), 0);
	assert_int_equal(store_put_host(w, node, 1000, h), 0);

	assert_int_equal(store_open(fx->path, STORE_READONLY, &r), 0);
	assert_int_equal(store_get_job(r, job.id, &got), 0);
	assert_int_equal(store_replay_job(r, job.id, &replay_all, &rl), 0);
	assert_string_equal(rl.kind, "h");
	replay_log_release(&rl);

	/* a tick in progress is invisible; committed, it shows */
	assert_int_equal(store_tick_begin(w), 0);
	assert_int_equal(store_put_host(w, node, 2000, h), 0);
	assert_int_equal(store_replay_job(r, job.id, &replay_all, &rl), 0);
	assert_string_equal(rl.kind, "h");
	replay_log_release(&rl);
	assert_int_equal(store_tick_commit(w), 0);
	assert_int_equal(store_replay_job(r, job.id, &replay_all, &rl), 0);
	assert_string_equal(rl.kind, "hh");
	replay_log_release(&rl);

	/* a read-only store cannot be written */
	assert_true(store_tick_begin(r) < 0);
	log_text(fx);
	store_close(r);
	store_close(w);
	free(h);
}

static int collect_due_ids(const struct store_ckpt_due *d, void *arg)
{
	int64_t *ids = arg;

	ids[++ids[0]] = d->job_id;
	return ids[0] == 7; /* full */
}

/* The jobs due a report checkpoint at a 1 h lag: ids[0] of them in ids[1..]. */
static void due_ids(struct store *st, int64_t *ids)
{
	memset(ids, 0, 8 * sizeof(*ids));
	assert_true(store_ckpt_for_each_due(st, 3600 * 1000, 1, collect_due_ids, ids) >= 0);
}

/*
 * A job without a checkpoint is due once its rows in the store span the lag,
 * not once the job is that old: a store that holds 30 minutes of a job
 * started 3 hours before replays them fast.  Packed rows count from the
 * oldest pack.
 */
static void test_ckpt_due_by_rows_span(void **state)
{
	struct fixture *fx = *state;
	struct store *st = open_new(fx);
	struct job_sample js = {0};
	struct store_pack_result res;
	struct job_record old, young;
	int64_t node, ids[8];
	const int64_t t0 = 1700000000000, min = 60 * 1000;

	assert_int_equal(store_node(st, "node", 2, 1 << 30, 0, &node), 0);
	job_fill(&old, node, "slurm", "1", t0 - 180 * min);
	assert_int_equal(store_job_begin(st, &old), 0);
	job_fill(&young, node, "slurm", "2", t0);
	assert_int_equal(store_job_begin(st, &young), 0);
	for (int64_t t = 0; t <= 30; t++) {
		assert_int_equal(store_put_job_sample(st, old.id, t0 + t * min, &js), 0);
		assert_int_equal(store_put_job_sample(st, young.id, t0 + t * min, &js), 0);
	}
	due_ids(st, ids);
	assert_int_equal(ids[0], 0);

	/* the old job's rows pass an hour's span: due; the young one's do not */
	for (int64_t t = 31; t <= 61; t++)
		assert_int_equal(store_put_job_sample(st, old.id, t0 + t * min, &js), 0);
	due_ids(st, ids);
	assert_int_equal(ids[0], 1);
	assert_int_equal(ids[1], old.id);

	/* every row packed (no ticks: nothing holds them back): the young job's
	 * span counts from its pack, the old job's last row is its pack's */
	assert_int_equal(store_pack_step(st, t0 + 20 * min, INT64_MAX, 0, &res), 0);
	assert_int_equal(res.rows, 31 + 62);
	assert_int_equal(sql_i64(fx->path, "SELECT count(*) FROM job_samples"), 0);
	due_ids(st, ids);
	assert_int_equal(ids[0], 1);
	assert_int_equal(ids[1], old.id);
	for (int64_t t = 31; t <= 61; t++)
		assert_int_equal(store_put_job_sample(st, young.id, t0 + t * min, &js), 0);
	due_ids(st, ids);
	assert_int_equal(ids[0], 2);
	assert_int_equal(ids[1], old.id);
	assert_int_equal(ids[2], young.id);
	store_close(st);
}

/* 1000 ticks of 1 host (2 CPUs), 50 process samples and 1 job sample. */
static void test_tick_cost(void **state)
{
	struct fixture *fx = *state;
	struct store *st = open_new(fx);
	struct host_sample *h = host_new(5);
	struct proc_sample ps = {PS_RSS | PS_HWM | PS_IO | PS_THREADS,
				 'S',
				 2,
				 10,
				 5,
				 0,
				 0,
				 1 << 20,
				 2 << 20,
				 0,
				 4096,
				 8192};
	struct job_sample js = {JS_IO, 50, 500, 250, 50 << 20, 0, 4096, 8192, 3};
	struct job_record job;
	struct proc_info p;
	int64_t node, prow[50], t0, ns;
	int i, k;

	h->ndisks = 0;
	h->nnets = 0;
	h->valid &= ~(uint32_t)(HOST_HAS_DISK | HOST_HAS_NET);
	assert_int_equal(store_node(st, "node", 2, 1 << 30, 0, &node), 0);
	job_fill(&job, node, "run", "", 1000);
	assert_int_equal(store_job_begin(st, &job), 0);
	for (i = 0; i < 50; i++) {
		proc_fill(&p, 1000 + i, 900, "worker");
		assert_int_equal(store_put_proc_info(st, node, job.id, &p, NULL, &prow[i]), 0);
	}
	t0 = time_mono_ns();
	for (k = 0; k < 1000; k++) {
		int64_t ts = 1000 + 250 * k;

		assert_int_equal(store_tick_begin(st), 0);
		assert_int_equal(store_put_host(st, node, ts, h), 0);
		for (i = 0; i < 50; i++) {
			ps.user_ms = (uint64_t)k;
			assert_int_equal(store_put_proc_sample(st, prow[i], ts, &ps), 0);
		}
		assert_int_equal(store_put_job_sample(st, job.id, ts, &js), 0);
		assert_int_equal(store_tick_commit(st), 0);
	}
	ns = time_mono_ns() - t0;
	print_message("tick cost: %.1f us per tick (1 host + 2 CPUs + 50 procs + 1 job), "
		      "%.2f us per row\n",
		      (double)ns / 1000 / 1000, (double)ns / 1000 / 1000 / 54);
	store_close(st);
	assert_int_equal(count_rows(fx->path), 1000 * 54);
	free(h);
}

/* GPU rows: a device, samples with missing metrics, the job's process and the rest, an event. */
struct gpu_log {
	int samples, procs, ours;
	struct device_record dev;
	struct gpu_sample last;
	struct gpu_proc mine, others;
	struct event_record event;
};

static void on_gpu(void *arg, const struct device_record *dev, int64_t ts_ms,
		   const struct gpu_sample *s)
{
	struct gpu_log *gl = arg;

	(void)ts_ms;
	gl->samples++;
	gl->dev = *dev;
	gl->last = *s;
}

static void on_gpu_proc(void *arg, const struct device_record *dev, const struct proc_info *p,
			int64_t ts_ms, const struct gpu_proc *g)
{
	struct gpu_log *gl = arg;

	(void)dev;
	(void)ts_ms;
	gl->procs++;
	if (p) {
		assert_int_equal(p->pid, 4242);
		assert_string_equal(p->comm, "train");
		gl->ours++;
		gl->mine = *g;
	} else {
		gl->others = *g;
	}
}

static void on_gpu_event(void *arg, const struct event_record *e)
{
	struct gpu_log *gl = arg;

	gl->event = *e;
}

static void test_gpu_rows(void **state)
{
	static const struct store_replay_ops ops = {
	    .event = on_gpu_event, .gpu = on_gpu, .gpu_proc = on_gpu_proc};
	struct fixture *fx = *state;
	struct store *st = open_new(fx);
	struct device_record dev;
	struct job_record job;
	struct proc_info p;
	struct gpu_sample s;
	struct gpu_proc mine, others;
	struct event_record e;
	struct gpu_log gl;
	int64_t node, prow;

	assert_int_equal(store_node(st, "gpu-node", 8, 1ull << 36, 1, &node), 0);
	job_fill(&job, node, "run", "", 1000);
	assert_int_equal(store_job_begin(st, &job), 0);
	proc_fill(&p, 4242, 900, "train");
	memset(&dev, 0, sizeof(dev));
	snprintf(dev.vendor, sizeof(dev.vendor), "NVIDIA");
	snprintf(dev.driver_version, sizeof(dev.driver_version), "535.104.05");
	dev.info.index = 3;
	snprintf(dev.info.uuid, sizeof(dev.info.uuid), "GPU-abc");
	snprintf(dev.info.name, sizeof(dev.info.name), "NVIDIA H100");
	snprintf(dev.info.pci_bus_id, sizeof(dev.info.pci_bus_id), "00000000:07:00.0");
	dev.info.valid = GPU_INFO_MEM_TOTAL | GPU_INFO_POWER_LIMIT;
	dev.info.mem_total_bytes = 80ull << 30;
	dev.info.power_limit_mw = 700000;
	dev.info.supported = GPU_UTIL | GPU_MEM_USED | GPU_ENERGY | GPU_THROTTLE;
	assert_int_equal(store_put_device(st, node, &dev), 0);
	assert_true(dev.id > 0);

	memset(&s, 0, sizeof(s));
	s.valid = GPU_UTIL | GPU_MEM_USED | GPU_ENERGY | GPU_THROTTLE;
	s.util_pct = 97;
	s.mem_used_bytes = 70ull << 30;
	s.energy_mj = 123456789012ull;
	s.throttle_reasons = GPU_THROTTLE_HW_THERMAL;
	s.power_mw = 555; /* not valid: must come back missing */
	memset(&mine, 0, sizeof(mine));
	mine.pid = 4242;
	mine.valid = GPU_PROC_MEM | GPU_PROC_UTIL;
	mine.mem_bytes = 60ull << 30;
	mine.sm_util_pct = 90;
	memset(&others, 0, sizeof(others));
	others.valid = GPU_PROC_MEM;
	others.mem_bytes = 10ull << 30;
	memset(&e, 0, sizeof(e));
	e.ts_ms = 1500;
	snprintf(e.kind, sizeof(e.kind), "xid");
	e.value = 79;
	e.has_gpu = true;
	e.gpu = 3;
	snprintf(e.message, sizeof(e.message), "XID 79 on GPU 3");

	assert_int_equal(store_tick_begin(st), 0);
	assert_int_equal(store_put_proc_info(st, node, job.id, &p, NULL, &prow), 0);
	assert_int_equal(store_put_gpu_sample(st, dev.id, 1500, &s), 0);
	assert_int_equal(store_put_gpu_proc(st, dev.id, prow, job.id, 1500, &mine), 0);
	assert_int_equal(store_put_gpu_proc(st, dev.id, 0, job.id, 1500, &others), 0);
	assert_int_equal(store_put_event(st, node, job.id, &e), 0);
	assert_int_equal(store_tick_commit(st), 0);
	/* the same device again: upserted, same row */
	{
		int64_t first = dev.id;

		assert_int_equal(store_put_device(st, node, &dev), 0);
		assert_int_equal(dev.id, first);
	}
	job.end_ms = 2000;
	assert_int_equal(store_job_update(st, &job), 0);

	memset(&gl, 0, sizeof(gl));
	assert_int_equal(store_replay_job(st, job.id, &ops, &gl), 0);
	assert_int_equal(gl.samples, 1);
	assert_string_equal(gl.dev.vendor, "NVIDIA");
	assert_string_equal(gl.dev.driver_version, "535.104.05");
	assert_int_equal(gl.dev.info.index, 3);
	assert_string_equal(gl.dev.info.uuid, "GPU-abc");
	assert_string_equal(gl.dev.info.pci_bus_id, "00000000:07:00.0");
	assert_int_equal(gl.dev.info.valid, GPU_INFO_MEM_TOTAL | GPU_INFO_POWER_LIMIT);
	assert_int_equal(gl.dev.info.mem_total_bytes, 80ull << 30);
	assert_int_equal(gl.dev.info.supported, dev.info.supported);
	assert_int_equal(gl.last.valid, s.valid);
	assert_int_equal(gl.last.util_pct, 97);
	assert_int_equal(gl.last.mem_used_bytes, 70ull << 30);
	assert_int_equal(gl.last.energy_mj, 123456789012ull);
	assert_int_equal(gl.last.throttle_reasons, GPU_THROTTLE_HW_THERMAL);
	assert_int_equal(gl.last.power_mw, 0);
	assert_int_equal(gl.procs, 2);
	assert_int_equal(gl.ours, 1);
	assert_int_equal(gl.mine.valid, GPU_PROC_MEM | GPU_PROC_UTIL);
	assert_int_equal(gl.mine.mem_bytes, 60ull << 30);
	assert_int_equal(gl.mine.sm_util_pct, 90);
	assert_int_equal(gl.others.valid, GPU_PROC_MEM);
	assert_int_equal(gl.others.mem_bytes, 10ull << 30);
	assert_true(gl.event.has_gpu);
	assert_int_equal(gl.event.gpu, 3);
	assert_int_equal(gl.event.value, 79);
	store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_create_and_reopen, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_job_sluid, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fact_columns_migrated, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_schema_version_and_application_id, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_job_roundtrip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ticks_and_replay, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_node_intervals_replayed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report_across_interval_change, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_for_each_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_foreign_sqlite_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_text_file_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_a_regular_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_corrupt_store_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unwritable_location, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_full_disk, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_seq_rule, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_proc_upsert, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reader_while_writing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ckpt_due_by_rows_span, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tick_cost, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_gpu_rows, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
