/*
 * test_store_gpu.c - schema 16's GPU columns in the store: every figure of
 * enum gpu_prof (gpu_samples), accounting mode's max_mem_bytes
 * (gpu_proc_samples) and a device's prof_supported and MIG fields
 * (devices) written and read back value for value, NULL (a cleared bit)
 * wherever the sample's bit was clear; a schema 15 store read as it is
 * (prof_valid 0) and migrated to the columns a new store has; packs of
 * such rows, and packs made before the columns existed; rows streamed
 * from an agent's store to a head's, from a schema 16 agent and from a
 * schema 15 one.
 *
 * Every expected value is the test's own input, masked by its own bits.
 * The round trip and the streaming run on SQLite; with
 * JOBSCOPE_TEST_PG_URL (a PostgreSQL database) again on it, each with
 * job ids of its own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"
#include "store_fixture.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "store/facts.h"
#include "store/queries.h"
#include "store/reader.h"
#include "store/store.h"
#include "store/upkeep.h"
#include "store/write.h"
#include "store_schema16.h"

#define T0    1700000000000
#define NTICK 4

/* One integer from SQL on the file behind the store's back. */
static int64_t file_i64(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *stmt;
	int64_t v;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
	v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return v;
}

/* The same for a text. */
static void file_text(const char *path, const char *sql, char *buf, size_t size)
{
	sqlite3 *db;
	sqlite3_stmt *stmt;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
	snprintf(buf, size, "%s", (const char *)sqlite3_column_text(stmt, 0));
	sqlite3_finalize(stmt);
	sqlite3_close(db);
}

/* The device's samples of tick k: every kind of bit pattern, with garbage where a bit is clear. */
static void sample_of(int k, struct gpu_sample *s)
{
	static const uint32_t prof[NTICK] = {
	    0xffffffu, /* every figure */
	    0,	       /* none: a schema 15 agent's, or a GPU without GPM */
	    GPU_PROF_VIOLATIONS | GPU_PROF_REMAPPED_ROWS,
	    GPU_PROF_SM_ACTIVE | GPU_PROF_TENSOR_ACTIVE | GPU_PROF_PCIE_REPLAY,
	};
	uint64_t big = (1ull << 62) + (uint64_t)k; /* beyond 2^53: no double on the way */

	memset(s, 0, sizeof(*s));
	s->valid = GPU_UTIL | GPU_MEM_USED | GPU_POWER | GPU_TEMP;
	s->util_pct = 90 + (uint32_t)k;
	s->mem_used_bytes = (9ull << 30) + (uint64_t)k;
	s->power_mw = 350000 + (uint32_t)k;
	s->temp_c = -3 + k;
	s->prof_valid = prof[k];
	s->gr_active_pct100 = 7000 + (uint32_t)k;
	s->sm_active_pct100 = 6150 + (uint32_t)k;
	s->sm_occupancy_pct100 = 4000 + (uint32_t)k;
	s->tensor_active_pct100 = 2500 + (uint32_t)k;
	s->dfma_tensor_active_pct100 = 1 + (uint32_t)k;
	s->hmma_tensor_active_pct100 = 2400 + (uint32_t)k;
	s->imma_tensor_active_pct100 = 3 + (uint32_t)k;
	s->dram_active_pct100 = 3300 + (uint32_t)k;
	s->fp64_active_pct100 = 10000 - (uint32_t)k;
	s->fp32_active_pct100 = 4500 + (uint32_t)k;
	s->fp16_active_pct100 = 1000 + (uint32_t)k;
	s->viol_power_ns = big;
	s->viol_thermal_ns = 500000000ull * (uint64_t)(k + 1);
	s->viol_sync_boost_ns = 11 + (uint64_t)k;
	s->viol_board_limit_ns = 12 + (uint64_t)k;
	s->viol_low_util_ns = 13 + (uint64_t)k;
	s->viol_reliability_ns = 14 + (uint64_t)k;
	s->viol_app_clocks_ns = 15 + (uint64_t)k;
	s->viol_base_clocks_ns = 16 + (uint64_t)k;
	s->viol_sw_thermal_ns = 17 + (uint64_t)k;
	s->viol_hw_thermal_ns = 18 + (uint64_t)k;
	s->viol_hw_power_brake_ns = UINT64_MAX - (uint64_t)k; /* all 64 bits */
	s->pcie_replays = 42 + (uint64_t)k;
	s->remapped_rows_corr = 5 + (uint64_t)k;
	s->remapped_rows_unc = 0; /* 0 and there: not NULL */
	s->remap_pending = 1;
	s->remap_failed = 0;
}

/* What the store must give back of s: the figures whose bits are set, 0 in the others. */
static void expected_of(const struct gpu_sample *s, struct gpu_sample *e)
{
	memset(e, 0, sizeof(*e));
	e->valid = s->valid;
	e->prof_valid = s->prof_valid & 0xffffffu;
#define KEEP_BASE(c, type, since, bit) e->c = (s->valid & (bit)) ? s->c : 0;
#define KEEP_PROF(c, type, since, bit) e->c = (s->prof_valid & (bit)) ? s->c : 0;
	GPU_SAMPLE_COLUMNS(KEEP_BASE)
	GPU_PROF_COLUMNS(KEEP_PROF)
#undef KEEP_BASE
#undef KEEP_PROF
}

static void assert_sample_equal(const struct gpu_sample *want, const struct gpu_sample *got)
{
	assert_int_equal(got->valid, want->valid);
	assert_int_equal(got->prof_valid, want->prof_valid);
#define SAME(c, type, since, bit)                                                                  \
	if ((uint64_t)got->c != (uint64_t)want->c)                                                 \
		fail_msg(#c ": got %llu, want %llu", (unsigned long long)got->c,                   \
			 (unsigned long long)want->c);
	GPU_SAMPLE_ALL_COLUMNS(SAME)
#undef SAME
}

/* The parent (in MIG mode) and one of its instances, as the tick writes them. */
static void devices_of(struct device_record *parent, struct device_record *inst)
{
	memset(parent, 0, sizeof(*parent));
	snprintf(parent->vendor, sizeof(parent->vendor), "NVIDIA");
	snprintf(parent->driver_version, sizeof(parent->driver_version), "580.65.06");
	parent->info.index = 0;
	snprintf(parent->info.uuid, sizeof(parent->info.uuid), "GPU-aaaa");
	snprintf(parent->info.name, sizeof(parent->info.name), "NVIDIA H200");
	parent->info.valid = GPU_INFO_MEM_TOTAL;
	parent->info.mem_total_bytes = 150ull << 30;
	parent->info.supported = GPU_UTIL | GPU_MEM_USED | GPU_POWER | GPU_TEMP;
	parent->info.prof_supported = GPU_PROF_GPM | GPU_PROF_VIOLATIONS;
	parent->info.mig_enabled = true;

	*inst = *parent;
	snprintf(inst->info.uuid, sizeof(inst->info.uuid), "MIG-aaaa-1");
	inst->info.mem_total_bytes = 10200547328ull;
	inst->info.mig_enabled = false;
	inst->info.mig = true;
	inst->info.mig_parent = 0;
	inst->info.gpu_instance_id = 1;
	inst->info.compute_instance_id = 0;
	snprintf(inst->info.mig_profile, sizeof(inst->info.mig_profile), "1g.10gb");
	snprintf(inst->mig_parent_uuid, sizeof(inst->mig_parent_uuid), "GPU-aaaa");
}

/* What a replay handed out: each device's samples by tick, the processes' peaks. */
struct got {
	int nsamples[2];
	struct gpu_sample s[2][NTICK];
	struct device_record dev[2];
	int nprocs;
	struct gpu_proc mine, others;
	bool has_mine;
};

static void on_gpu(void *arg, const struct device_record *dev, int64_t ts_ms,
		   const struct gpu_sample *s)
{
	struct got *g = arg;
	int d = strcmp(dev->info.uuid, "MIG-aaaa-1") == 0; /* the instance: 1 */
	int k = (int)((ts_ms - T0 - 1000) / 1000);

	assert_true(k >= 0 && k < NTICK);
	assert_true(g->nsamples[d] < NTICK);
	g->s[d][k] = *s;
	g->nsamples[d]++;
	g->dev[d] = *dev;
}

static void on_gpu_proc(void *arg, const struct device_record *dev, const struct proc_info *p,
			int64_t ts_ms, const struct gpu_proc *gp)
{
	struct got *g = arg;

	(void)dev;
	(void)ts_ms;
	g->nprocs++;
	if (p) {
		g->mine = *gp;
		g->has_mine = true;
	} else {
		g->others = *gp;
	}
}

static const struct store_replay_ops gpu_ops = {.gpu = on_gpu, .gpu_proc = on_gpu_proc};

/* A job on node host with NTICK ticks of both devices' rows; its row in *job. */
static void write_job(struct store *st, const char *host, struct job_record *job)
{
	struct device_record parent, inst;
	struct proc_info p;
	int64_t node, prow;

	assert_int_equal(store_node(st, host, 8, 1ull << 36, 1, &node), 0);
	memset(job, 0, sizeof(*job));
	job->node_id = node;
	snprintf(job->scheduler, sizeof(job->scheduler), "slurm");
	snprintf(job->job_id, sizeof(job->job_id), "%lld", (long long)T0 % 100000);
	job->start_ms = T0;
	assert_int_equal(store_job_begin(st, job), 0);
	devices_of(&parent, &inst);
	assert_int_equal(store_put_device(st, node, &parent), 0);
	assert_int_equal(store_put_device(st, node, &inst), 0);
	memset(&p, 0, sizeof(p));
	p.pid = 4242;
	p.start_ms = T0 - 100;
	snprintf(p.comm, sizeof(p.comm), "train");
	for (int k = 0; k < NTICK; k++) {
		struct gpu_sample s;
		struct gpu_proc mine = {.pid = 4242, .valid = GPU_PROC_MEM | GPU_PROC_MAX_MEM};
		struct gpu_proc others = {.pid = 77, .valid = GPU_PROC_MEM};
		int64_t ts = T0 + 1000 + 1000 * k;

		mine.mem_bytes = (3ull << 30) + (uint64_t)k;
		mine.max_mem_bytes = (5ull << 30) + (uint64_t)k;
		others.mem_bytes = 1ull << 20;
		others.max_mem_bytes = 12345; /* its bit clear: NULL */
		sample_of(k, &s);
		assert_int_equal(store_tick_begin(st), 0);
		assert_int_equal(store_put_proc_info(st, node, job->id, &p, NULL, &prow), 0);
		assert_int_equal(store_put_gpu_sample(st, parent.id, ts, &s), 0);
		s.util_pct = 11 + (uint32_t)k; /* the instance's own */
		assert_int_equal(store_put_gpu_sample(st, inst.id, ts, &s), 0);
		assert_int_equal(store_put_gpu_proc(st, inst.id, prow, job->id, ts, &mine), 0);
		assert_int_equal(store_put_gpu_proc(st, inst.id, 0, job->id, ts, &others), 0);
		assert_int_equal(store_tick_commit(st), 0);
	}
	job->end_ms = T0 + 1000 + 1000 * NTICK;
	assert_int_equal(store_job_update(st, job), 0);
}

/*
 * The replay of job against what write_job wrote; schema16: whether the
 * store has schema 16's columns (else every figure of enum gpu_prof, the
 * peaks and the MIG fields read as missing).
 */
static void check_job(struct store *st, int64_t job, bool schema16)
{
	struct got *g = calloc(1, sizeof(*g));

	assert_non_null(g);
	assert_int_equal(store_replay_job(st, job, &gpu_ops, g), 0);
	assert_int_equal(g->nsamples[0], NTICK);
	assert_int_equal(g->nsamples[1], NTICK);
	for (int d = 0; d < 2; d++)
		for (int k = 0; k < NTICK; k++) {
			struct gpu_sample s, want;

			sample_of(k, &s);
			if (d == 1)
				s.util_pct = 11 + (uint32_t)k;
			if (!schema16)
				s.prof_valid = 0;
			expected_of(&s, &want);
			assert_sample_equal(&want, &g->s[d][k]);
		}
	/* the devices: parent in MIG mode, its instance */
	assert_string_equal(g->dev[0].info.uuid, "GPU-aaaa");
	assert_int_equal(g->dev[0].info.prof_supported,
			 schema16 ? GPU_PROF_GPM | GPU_PROF_VIOLATIONS : 0);
	assert_int_equal(g->dev[0].info.mig_enabled, schema16);
	assert_false(g->dev[0].info.mig);
	assert_string_equal(g->dev[0].mig_parent_uuid, "");
	assert_string_equal(g->dev[0].info.mig_profile, "");
	if (schema16) {
		assert_string_equal(g->dev[1].info.uuid, "MIG-aaaa-1");
		assert_true(g->dev[1].info.mig);
		assert_false(g->dev[1].info.mig_enabled);
		assert_string_equal(g->dev[1].mig_parent_uuid, "GPU-aaaa");
		assert_int_equal(g->dev[1].info.mig_parent, -1);
		assert_int_equal(g->dev[1].info.gpu_instance_id, 1);
		assert_int_equal(g->dev[1].info.compute_instance_id, 0);
		assert_string_equal(g->dev[1].info.mig_profile, "1g.10gb");
		assert_int_equal(g->dev[1].info.mem_total_bytes, 10200547328ull);
	}
	/* the processes: the job's peak, the other's NULL */
	assert_int_equal(g->nprocs, 2 * NTICK);
	assert_true(g->has_mine);
	assert_int_equal(g->mine.valid, GPU_PROC_MEM | (schema16 ? GPU_PROC_MAX_MEM : 0));
	assert_int_equal(g->mine.mem_bytes, (3ull << 30) + NTICK - 1);
	assert_int_equal(g->mine.max_mem_bytes, schema16 ? (5ull << 30) + NTICK - 1 : 0);
	assert_int_equal(g->others.valid, GPU_PROC_MEM);
	assert_int_equal(g->others.max_mem_bytes, 0);
	free(g);
}

static void test_round_trip(void **state)
{
	struct fixture *fx = *state;
	struct store *st = open_store(fx);
	char host[32];
	struct job_record job;

	snprintf(host, sizeof(host), "gpu-%lld", (long long)fx->job_base);
	write_job(st, host, &job);
	check_job(st, job.id, true);
	store_close(st);
	if (fx->url)
		return;
	/* NULL in the file where a bit was clear (the replay's cleared bits come from these) */
	assert_int_equal(
	    file_i64(fx->path, "SELECT count(*) FROM gpu_samples WHERE sm_active_pct100 IS NULL"),
	    2 * 2);
	assert_int_equal(
	    file_i64(fx->path, "SELECT count(*) FROM gpu_samples WHERE viol_power_ns IS NULL"),
	    2 * 2);
	assert_int_equal(file_i64(fx->path, "SELECT count(*) FROM gpu_samples"
					    " WHERE remapped_rows_unc = 0 AND remap_failed = 0"),
			 2 * 2);
	assert_int_equal(file_i64(fx->path, "SELECT count(*) FROM gpu_proc_samples"
					    " WHERE max_mem_bytes IS NULL"),
			 NTICK);
	assert_int_equal(file_i64(fx->path, "SELECT count(*) FROM devices WHERE mig = 0"
					    " AND mig_parent_uuid IS NULL AND mig_profile IS NULL"
					    " AND gpu_instance_id IS NULL AND mig_enabled = 1"),
			 1);
}

/* The columns of a table as the file has them: name, type, notnull, default. */
static void table_shape(const char *path, const char *table, char *buf, size_t size)
{
	char sql[256];

	snprintf(sql, sizeof(sql),
		 "SELECT group_concat(name || ' ' || type || ' ' || \"notnull\" || ' ' ||"
		 " coalesce(dflt_value, '-'), ', ') FROM pragma_table_info('%s')",
		 table);
	file_text(path, sql, buf, size);
}

/*
 * A schema 15 store (what schema 16 added dropped from one): read as it
 * is, every figure of enum gpu_prof missing; opened for writing, migrated
 * to exactly the columns a new store has, its old rows still without them
 * and new rows with them.
 */
static void test_schema15_migrated(void **state)
{
	static const char *const tables[] = {"gpu_samples", "gpu_proc_samples", "devices"};
	struct fixture *fx = *state;
	struct store *st = open_store(fx);
	char fresh[3][4096], now[4096];
	struct job_record job, job2;

	write_job(st, "old-node", &job);
	store_close(st);
	for (int i = 0; i < 3; i++)
		table_shape(fx->path, tables[i], fresh[i], sizeof(fresh[i]));
	assert_non_null(strstr(fresh[0], "sm_active_pct100 INTEGER 0 -"));
	write_sql(fx, STORE_UNDO_SCHEMA16 " PRAGMA user_version = 15");
	table_shape(fx->path, "gpu_samples", now, sizeof(now));
	assert_null(strstr(now, "pct100"));

	/* read as it is */
	assert_int_equal(store_open(fx->path, STORE_READONLY, &st), 0);
	check_job(st, job.id, false);
	store_close(st);
	assert_int_equal(file_i64(fx->path, "PRAGMA user_version"), 15);

	/* migrated: the same columns as a new store, in the same order */
	st = open_store(fx);
	assert_int_equal(file_i64(fx->path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
	for (int i = 0; i < 3; i++) {
		table_shape(fx->path, tables[i], now, sizeof(now));
		assert_string_equal(now, fresh[i]);
	}
	check_job(st, job.id, false);
	/* rows written now have them (the devices are refreshed by their put) */
	write_job(st, "new-node", &job2);
	check_job(st, job2.id, true);
	store_close(st);
}

/* Schema 17: a job's GPM figures in its summary, as store_history_rows gives them. */
static const double summary_gpm[STORE_HISTORY_GPM_COLS] = {61.5, 40, 25, 33, NAN, 45, 0.25, 0.5, 0};

struct history_got {
	int64_t job_row;
	int rows;
	bool null[STORE_HISTORY_GPM_COLS];
	double v[STORE_HISTORY_GPM_COLS];
};

static int on_history(const struct store_row *r, void *arg)
{
	struct history_got *g = arg;

	if ((int64_t)r->num[0] != g->job_row)
		return 0;
	g->rows++;
	assert_int_equal(r->ncols, STORE_HISTORY_COL_GPM + STORE_HISTORY_GPM_COLS);
	for (int k = 0; k < STORE_HISTORY_GPM_COLS; k++) {
		g->null[k] = r->null[STORE_HISTORY_COL_GPM + k];
		g->v[k] = r->num[STORE_HISTORY_COL_GPM + k];
	}
	return 0;
}

static void put_summary(struct store *st, int64_t job_row, bool prof)
{
	struct job_summary_record rec = {.job_row = job_row,
					 .wall_ms = 4000,
					 .gpus_used = 1,
					 .gpu_util_avg_pct = 50,
					 .gpu_util_p95_pct = 60};

	rec.has_gpu_prof = prof;
	rec.sm_active_avg_pct = summary_gpm[0];
	rec.sm_occupancy_avg_pct = summary_gpm[1];
	rec.tensor_active_avg_pct = summary_gpm[2];
	rec.dram_active_avg_pct = summary_gpm[3];
	rec.fp64_active_avg_pct = summary_gpm[4];
	rec.fp32_active_avg_pct = summary_gpm[5];
	rec.fp16_active_avg_pct = summary_gpm[6];
	rec.throttle_power_s = summary_gpm[7];
	rec.throttle_thermal_s = summary_gpm[8];
	assert_int_equal(store_put_job_summary(st, &rec), 0);
}

/* known: the figures summary_gpm has (NAN ones NULL), else every one NULL */
static void check_summary(struct store *st, int64_t job_row, bool known)
{
	struct history_got g = {.job_row = job_row};

	assert_int_equal(store_history_rows(st, 0, INT64_MAX, NULL, NULL, on_history, &g), 0);
	assert_int_equal(g.rows, 1);
	for (int k = 0; k < STORE_HISTORY_GPM_COLS; k++) {
		bool want_null = !known || isnan(summary_gpm[k]);

		assert_int_equal(g.null[k], want_null);
		if (!want_null)
			assert_true(g.v[k] == summary_gpm[k]);
	}
}

/*
 * Schema 17: the summary's GPM figures written and read back, NULL when
 * unknown (NAN) or not given (has_gpu_prof false); a schema 16 store read
 * as it is (every one NULL), then migrated to the columns a new store has,
 * its old summary NULL in them and a new one with them.
 */
static void test_summary_gpm(void **state)
{
	struct fixture *fx = *state;
	struct store *st = open_store(fx);
	struct job_record job, job2;
	char fresh[4096], now[4096], host[32];

	snprintf(host, sizeof(host), "sum-%lld", (long long)fx->job_base);
	write_job(st, host, &job);
	put_summary(st, job.id, true);
	check_summary(st, job.id, true);
	put_summary(st, job.id, false); /* replaced: nothing known any more */
	check_summary(st, job.id, false);
	put_summary(st, job.id, true);
	check_summary(st, job.id, true);
	store_close(st);
	if (fx->url)
		return; /* the migration below is SQLite's file */

	table_shape(fx->path, "job_summaries", fresh, sizeof(fresh));
	assert_non_null(strstr(fresh, "sm_active_avg_pct REAL 0 -"));
	write_sql(fx, STORE_UNDO_SCHEMA17 " PRAGMA user_version = 16");
	table_shape(fx->path, "job_summaries", now, sizeof(now));
	assert_null(strstr(now, "sm_active"));

	/* read as it is */
	assert_int_equal(store_open(fx->path, STORE_READONLY, &st), 0);
	check_summary(st, job.id, false);
	store_close(st);
	assert_int_equal(file_i64(fx->path, "PRAGMA user_version"), 16);

	/* migrated */
	st = open_store(fx);
	assert_int_equal(file_i64(fx->path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
	table_shape(fx->path, "job_summaries", now, sizeof(now));
	assert_string_equal(now, fresh);
	check_summary(st, job.id, false);
	write_job(st, "sum-node2", &job2);
	put_summary(st, job2.id, true);
	check_summary(st, job2.id, true);
	store_close(st);
}

/*
 * Packs: a job's rows read back the same packed as live, NULLs included;
 * and a pack made before the columns existed (fewer columns in its blob)
 * reads NULL in them.
 */
static void test_packed(void **state)
{
	struct fixture *fx = *state;
	struct store *st = open_store(fx);
	struct store_pack_result res;
	struct job_record job;

	write_job(st, "pack-node", &job);
	assert_int_equal(store_pack_step(st, T0 + 3600000, INT64_MAX, 0, &res), 0);
	assert_true(res.rows > 0);
	store_close(st);
	assert_int_equal(file_i64(fx->path, "SELECT count(*) FROM gpu_samples"), 0);
	assert_int_equal(file_i64(fx->path, "SELECT count(*) FROM gpu_proc_samples"), 0);
	assert_true(file_i64(fx->path, "SELECT count(*) FROM packs WHERE tbl = 'gpu_samples'") >=
		    2);
	st = open_store(fx);
	check_job(st, job.id, true);
	store_close(st);
}

static void test_packed_before_the_columns(void **state)
{
	struct fixture *fx = *state;
	struct store *st = open_store(fx);
	struct store_pack_result res;
	struct job_record job;
	char readd[4096];
	size_t n = 0;

	write_job(st, "pack-node", &job);
	store_close(st);
	/*
	 * The packer packs the columns the file has: without schema 16's (an
	 * older jobscope's packs), then they come back as a migration adds
	 * them, at the end.  The devices keep theirs: only the samples' packs
	 * are old.
	 */
#define DROP_PROF(c, ...) " ALTER TABLE gpu_samples DROP COLUMN " #c ";"
#define ADD_PROF(c, type, ...)                                                                     \
	n += (size_t)snprintf(readd + n, sizeof(readd) - n,                                        \
			      "ALTER TABLE gpu_samples ADD COLUMN " #c " " type ";");
	write_sql(fx, GPU_PROF_COLUMNS(DROP_PROF) " ALTER TABLE gpu_proc_samples DROP COLUMN"
						  " max_mem_bytes;");
	st = open_store(fx);
	assert_int_equal(store_pack_step(st, T0 + 3600000, INT64_MAX, 0, &res), 0);
	assert_true(res.rows > 0);
	store_close(st);
	GPU_PROF_COLUMNS(ADD_PROF)
	n += (size_t)snprintf(readd + n, sizeof(readd) - n,
			      "ALTER TABLE gpu_proc_samples ADD COLUMN max_mem_bytes INTEGER;");
#undef DROP_PROF
#undef ADD_PROF
	write_sql(fx, readd);
	st = open_store(fx);
	{
		struct got *g = calloc(1, sizeof(*g));

		assert_non_null(g);
		assert_int_equal(store_replay_job(st, job.id, &gpu_ops, g), 0);
		assert_int_equal(g->nsamples[0], NTICK);
		assert_int_equal(g->nsamples[1], NTICK);
		for (int d = 0; d < 2; d++)
			for (int k = 0; k < NTICK; k++) {
				struct gpu_sample s, want;

				sample_of(k, &s);
				if (d == 1)
					s.util_pct = 11 + (uint32_t)k;
				s.prof_valid = 0;
				expected_of(&s, &want);
				assert_sample_equal(&want, &g->s[d][k]);
			}
		assert_int_equal(g->mine.valid, GPU_PROC_MEM);
		free(g);
	}
	store_close(st);
}

/*
 * An agent's rows streamed to a head (export, ingest: SQLite or
 * PostgreSQL): the same values at the head, the instance's parent named.
 * Then a schema 15 agent's batch: its rows ingest, every new figure NULL.
 */
static void test_streamed_to_a_head(void **state)
{
	struct fixture *fx = *state;
	char agent_path[160], host[32];
	struct store *agent, *head = open_store(fx);
	struct job_record job;
	int64_t head_node, head_job, start;

	snprintf(agent_path, sizeof(agent_path), "%s/agent.db", fx->dir);
	snprintf(host, sizeof(host), "node-%lld", (long long)fx->job_base);
	assert_int_equal(store_open(agent_path, STORE_CREATE, &agent), 0);
	write_job(agent, host, &job);
	assert_true(stream(agent, head, host, 0, NULL) > 0);
	store_close(agent);
	assert_int_equal(store_node(head, host, 8, 1ull << 36, 1, &head_node), 0);
	assert_int_equal(
	    store_find_job(head, head_node, "slurm", job.job_id, job.start_ms, &head_job, &start),
	    0);
	check_job(head, head_job, true);

	/* an agent of schema 15 */
	snprintf(agent_path, sizeof(agent_path), "%s/agent15.db", fx->dir);
	snprintf(host, sizeof(host), "old-%lld", (long long)fx->job_base);
	assert_int_equal(store_open(agent_path, STORE_CREATE, &agent), 0);
	write_job(agent, host, &job);
	store_close(agent);
	{
		sqlite3 *db;

		assert_int_equal(sqlite3_open(agent_path, &db), SQLITE_OK);
		assert_int_equal(sqlite3_exec(db, STORE_UNDO_SCHEMA16 " PRAGMA user_version = 15",
					      NULL, NULL, NULL),
				 SQLITE_OK);
		sqlite3_close(db);
	}
	assert_int_equal(store_open(agent_path, STORE_READONLY, &agent), 0);
	assert_true(stream(agent, head, host, 0, NULL) > 0);
	store_close(agent);
	assert_int_equal(store_node(head, host, 8, 1ull << 36, 1, &head_node), 0);
	assert_int_equal(
	    store_find_job(head, head_node, "slurm", job.job_id, job.start_ms, &head_job, &start),
	    0);
	{
		struct got *g = calloc(1, sizeof(*g));

		assert_non_null(g);
		assert_int_equal(store_replay_job(head, head_job, &gpu_ops, g), 0);
		assert_int_equal(g->nsamples[0], NTICK);
		assert_int_equal(g->nsamples[1], NTICK);
		for (int d = 0; d < 2; d++)
			for (int k = 0; k < NTICK; k++) {
				struct gpu_sample s, want;

				sample_of(k, &s);
				if (d == 1)
					s.util_pct = 11 + (uint32_t)k;
				s.prof_valid = 0;
				expected_of(&s, &want);
				assert_sample_equal(&want, &g->s[d][k]);
			}
		assert_int_equal(g->mine.valid, GPU_PROC_MEM);
		/* an old agent's devices: nothing of schema 16 */
		assert_int_equal(g->dev[0].info.prof_supported, 0);
		assert_false(g->dev[0].info.mig_enabled);
		assert_false(g->dev[1].info.mig);
		assert_string_equal(g->dev[1].mig_parent_uuid, "");
		free(g);
	}
	store_close(head);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_schema15_migrated, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_packed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_packed_before_the_columns, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_streamed_to_a_head, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_summary_gpm, setup, teardown),
	};
	const struct CMUnitTest pg_tests[] = {
	    cmocka_unit_test_setup_teardown(test_round_trip, setup_pg, teardown),
	    cmocka_unit_test_setup_teardown(test_streamed_to_a_head, setup_pg, teardown),
	    cmocka_unit_test_setup_teardown(test_summary_gpm, setup_pg, teardown),
	};
	int failed;

	next_job_base = ((int64_t)time(NULL) * 100000 + getpid() % 100000) * 1000;
	failed = cmocka_run_group_tests_name("sqlite", tests, NULL, NULL);
	if (getenv("JOBSCOPE_TEST_PG_URL"))
		failed += cmocka_run_group_tests_name("postgresql", pg_tests, NULL, NULL);
	return failed;
}
