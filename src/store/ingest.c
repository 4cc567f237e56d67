/*
 * ingest.c - the head's side of streaming (docs/wire.md): one agent's
 * batch committed in one transaction, exactly once.
 *
 * The agent's store is its spool; its rows carry its own seq.  The head
 * keeps, per agent, the highest seq it holds (agents.acked_seq), updated in
 * the same transaction as the rows: a batch resent after a lost answer, or
 * overlapping one already taken, adds only the rows above that cursor.  The
 * rows get the head's own seq and ids: the batch's dimension rows (jobs,
 * procs, devices) are upserted by their natural keys (node + scheduler +
 * job id + start; node + pid + start; node + uuid) and every reference in
 * the fact rows is mapped to the head's ids.  Columns are checked against
 * the head's own tables; STRICT tables refuse a value of the wrong type.
 * CUDA snapshots (cuda_procs and their cuda_stats) replace their
 * process's tables (store_put_cuda_proc), as the agent's store did.
 * PostgreSQL takes each fact table's rows of a batch as one COPY, or the
 * tables of few rows together as one INSERT sent ahead in libpq's
 * pipeline (ingest_pg.c), a group of batches in one transaction without
 * savepoints (pg_group).
 */
#include "store/ingest.h"
#include "store/facts.h"
#include "store/schema.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/log.h"
#include "db/pg.h"
#include "store/rowset.h"
#include "store/jobdata.h"
#include "store/reader.h"
#include "store/sync.h"
#include "store/write.h"

/*
 * What the head already upserted of an agent's dimension rows (procs, jobs,
 * devices): (agent, kind, agent row) -> (head row, hash of the row's
 * content).  A batch references every process it has samples of, so the
 * same unchanged rows come again and again; with this they cost a hash
 * instead of an upsert.  Entries made in a batch are kept only once it
 * committed.  Open addressing; emptied when full (it is only a cache).
 */
#define MEMO_SLOTS (1u << 18)

struct memo_entry {
	uint64_t key;  /* hash of (agent id, kind, agent row); 0: empty */
	uint64_t hash; /* of the row's content */
	int64_t head_row;
};

struct ingest_memo {
	struct memo_entry slot[MEMO_SLOTS];
	size_t used;
	int pg_generation; /* PostgreSQL: the connection the rows were read on */
};

void store__memo_free(struct ingest_memo *m)
{
	free(m);
}

/*
 * The memo's hashes, a word at a time: every dimension row of every batch
 * is hashed (FNV-1a's byte steps were most of memo_hit's time at 2,000
 * agents).  Kept in memory only: nothing depends on their values.
 */
static uint64_t mix64(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 32);
}

static uint64_t hash_bytes(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;
	uint64_t w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = mix64(h, w);
	}
	w = 0;
	memcpy(&w, p, n);
	return mix64(h, w ^ ((uint64_t)n << 56));
}

static uint64_t memo_key(const char *agent_id, char kind, int64_t agent_row)
{
	uint64_t h = hash_bytes(FNV1A_SEED, agent_id, strlen(agent_id));

	h = mix64(h, (uint64_t)(unsigned char)kind);
	h = mix64(h, (uint64_t)agent_row);
	return h ? h : 1;
}

static uint64_t row_hash(const struct store_table *t, size_t r)
{
	uint64_t h = FNV1A_SEED;

	for (int c = 0; c < t->ncols; c++) {
		const struct store_value *v = &t->cells[r * (size_t)t->ncols + (size_t)c];
		uint64_t w = 0;

		h = mix64(h, (uint64_t)v->type);
		if (v->type == STORE_VALUE_INT) {
			h = mix64(h, (uint64_t)v->i);
		} else if (v->type == STORE_VALUE_REAL) {
			memcpy(&w, &v->d, sizeof(v->d));
			h = mix64(h, w);
		} else if (v->type == STORE_VALUE_TEXT) {
			h = hash_bytes(h, v->s, strlen(v->s));
		}
	}
	return h;
}

static struct memo_entry *memo_find(struct ingest_memo *m, uint64_t key)
{
	size_t i = key & (MEMO_SLOTS - 1);

	while (m->slot[i].key && m->slot[i].key != key)
		i = (i + 1) & (MEMO_SLOTS - 1);
	return &m->slot[i];
}

int store__ingest_bad(struct ingest *in, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(in->errmsg, in->errmsg_size, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int map_put(struct id_map *m, int64_t from, int64_t to)
{
	if (m->n == m->alloc) {
		size_t n = m->alloc ? m->alloc * 2 : 64;
		int64_t *f = realloc(m->from, n * sizeof(*f));

		if (!f)
			return -ENOMEM;
		m->from = f;
		f = realloc(m->to, n * sizeof(*f));
		if (!f)
			return -ENOMEM;
		m->to = f;
		m->alloc = n;
	}
	m->from[m->n] = from;
	m->to[m->n] = to;
	m->n++;
	return 0;
}

static bool map_get(const struct id_map *m, int64_t from, int64_t *to)
{
	for (size_t i = m->n; i-- > 0;)
		if (m->from[i] == from) {
			*to = m->to[i];
			return true;
		}
	return false;
}

static void map_release(struct id_map *m)
{
	free(m->from);
	free(m->to);
}

static const struct store_table *table(const struct store_batch *b, const char *name)
{
	return store_rowset_table(&b->rows, name);
}

int store__col_index(const struct store_table *t, const char *name)
{
	for (int c = 0; c < t->ncols; c++)
		if (strcmp(t->cols[c], name) == 0)
			return c;
	return -1;
}

/*
 * s appended to buf (size bytes, len of them used) when it fits with its
 * NUL; the length it would have either way (snprintf's rule, without its
 * format parsing: a batch's statements are spelled out for every table of
 * every batch, then looked up).
 */
static size_t sql_put(char *buf, size_t size, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (len < size && n < size - len)
		memcpy(buf + len, s, n + 1);
	return len + n;
}

size_t store__col_list(char *buf, size_t size, const struct store_table *t)
{
	size_t len = 0;

	for (int c = 0; c < t->ncols; c++) {
		len = sql_put(buf, size, len, c ? ", \"" : "\"");
		len = sql_put(buf, size, len, t->cols[c]);
		len = sql_put(buf, size, len, "\"");
	}
	return len;
}

/* A cell by its column's index (-1: a column the batch does not have, NULL). */
static const struct store_value *cell_at(const struct store_table *t, size_t row, int c)
{
	static const struct store_value null_value = {STORE_VALUE_NULL, 0, {0}};

	return c < 0 ? &null_value : &t->cells[row * (size_t)t->ncols + (size_t)c];
}

static const struct store_value *cell(const struct store_table *t, size_t row, const char *name)
{
	return cell_at(t, row, store__col_index(t, name));
}

/* A value as an integer (a real's truncated), bit for bit a uint64_t's; NULL 0. */
static int64_t value_i64(const struct store_value *v)
{
	return v->type == STORE_VALUE_INT ? v->i : v->type == STORE_VALUE_REAL ? (int64_t)v->d : 0;
}

static int64_t cell_i64(const struct store_table *t, size_t row, const char *name)
{
	return value_i64(cell(t, row, name));
}

static bool cell_has(const struct store_table *t, size_t row, const char *name)
{
	return cell(t, row, name)->type != STORE_VALUE_NULL;
}

static void cell_text(const struct store_table *t, size_t row, const char *name, char *buf,
		      size_t size)
{
	const struct store_value *v = cell(t, row, name);

	snprintf(buf, size, "%s", v->type == STORE_VALUE_TEXT ? v->s : "");
}

/*
 * The memo holds for one connection to PostgreSQL: after it was made anew
 * (the server restarted, or failed over to a standby that lagged), what it
 * names may not be in the database; rows are looked up afresh.
 */
static void memo_check_connection(struct store *st)
{
	if (st->memo && st->conn.pg && st->memo->pg_generation != pg_generation(st->conn.pg))
		memset(st->memo, 0, sizeof(*st->memo));
	if (st->memo && st->conn.pg)
		st->memo->pg_generation = pg_generation(st->conn.pg);
}

/* true (and *head_row) when this exact row was upserted before */
static bool memo_hit(struct ingest *in, char kind, const struct store_table *t, size_t r,
		     uint64_t *key, uint64_t *hash, int64_t *head_row)
{
	struct memo_entry *e;

	*key = memo_key(in->b->who.agent_id, kind, cell_i64(t, r, "id"));
	*hash = row_hash(t, r);
	memo_check_connection(in->st);
	if (!in->st->memo)
		return false;
	e = memo_find(in->st->memo, *key);
	if (e->key != *key || e->hash != *hash)
		return false;
	*head_row = e->head_row;
	return true;
}

static int memo_later(struct ingest *in, uint64_t key, uint64_t hash, int64_t head_row)
{
	if (in->npending == in->pending_alloc) {
		size_t n = in->pending_alloc ? in->pending_alloc * 2 : 256;
		struct memo_pending *p = realloc(in->pending, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		in->pending = p;
		in->pending_alloc = n;
	}
	in->pending[in->npending++] = (struct memo_pending){key, hash, head_row};
	return 0;
}

static void memo_commit(struct ingest *in)
{
	struct store *st = in->st;

	if (!st->memo)
		st->memo = calloc(1, sizeof(*st->memo));
	if (!st->memo)
		return;
	memo_check_connection(st);
	for (size_t i = 0; i < in->npending; i++) {
		struct memo_entry *e;

		if (st->memo->used > MEMO_SLOTS / 2) {
			memset(st->memo, 0, sizeof(*st->memo)); /* full: start over */
		}
		e = memo_find(st->memo, in->pending[i].key);
		if (!e->key)
			st->memo->used++;
		e->key = in->pending[i].key;
		e->hash = in->pending[i].hash;
		e->head_row = in->pending[i].head_row;
	}
}

static int ingest_devices(struct ingest *in)
{
	const struct store_table *t = table(in->b, "devices");
	struct device_record d;
	int ret;

	for (size_t r = 0; t && r < t->nrows; r++) {
		uint64_t key, hash;
		int64_t row;

		/* a node's GPUs come in every batch with samples of them, most often unchanged */
		if (memo_hit(in, 'd', t, r, &key, &hash, &row)) {
			ret = map_put(&in->devices, cell_i64(t, r, "id"), row);
			if (ret)
				return ret;
			continue;
		}
		memset(&d, 0, sizeof(d));
		cell_text(t, r, "vendor", d.vendor, sizeof(d.vendor));
		cell_text(t, r, "uuid", d.info.uuid, sizeof(d.info.uuid));
		cell_text(t, r, "name", d.info.name, sizeof(d.info.name));
		cell_text(t, r, "pci_bus_id", d.info.pci_bus_id, sizeof(d.info.pci_bus_id));
		cell_text(t, r, "driver_version", d.driver_version, sizeof(d.driver_version));
		d.info.index = (int)cell_i64(t, r, "idx");
		d.info.mem_total_bytes = (uint64_t)cell_i64(t, r, "mem_total_bytes");
		d.info.power_limit_mw = (uint32_t)cell_i64(t, r, "power_limit_mw");
		d.info.nvlink_count = (uint32_t)cell_i64(t, r, "nvlink_count");
		d.info.supported = (uint32_t)cell_i64(t, r, "supported");
		/* schema 16: NULL (0, "") from an older agent */
		d.info.prof_supported = (uint32_t)cell_i64(t, r, "prof_supported");
		d.info.mig_enabled = cell_i64(t, r, "mig_enabled") != 0;
		d.info.mig = cell_i64(t, r, "mig") != 0;
		d.info.mig_parent = -1;
		cell_text(t, r, "mig_parent_uuid", d.mig_parent_uuid, sizeof(d.mig_parent_uuid));
		d.info.gpu_instance_id = (uint32_t)cell_i64(t, r, "gpu_instance_id");
		d.info.compute_instance_id = (uint32_t)cell_i64(t, r, "compute_instance_id");
		cell_text(t, r, "mig_profile", d.info.mig_profile, sizeof(d.info.mig_profile));
		d.info.valid = (cell_has(t, r, "mem_total_bytes") ? GPU_INFO_MEM_TOTAL : 0) |
			       (cell_has(t, r, "power_limit_mw") ? GPU_INFO_POWER_LIMIT : 0) |
			       (cell_has(t, r, "nvlink_count") ? GPU_INFO_NVLINKS : 0);
		if (!d.info.uuid[0] || !d.vendor[0])
			return store__ingest_bad(in, "devices: a row without uuid or vendor");
		ret = store_put_device(in->st, in->node_id, &d);
		if (!ret)
			ret = map_put(&in->devices, cell_i64(t, r, "id"), d.id);
		if (!ret)
			ret = memo_later(in, key, hash, d.id);
		if (ret)
			return ret;
	}
	return 0;
}

static int ingest_jobs(struct ingest *in)
{
	const struct store_table *t = table(in->b, "jobs");
	struct job_record *j = malloc(sizeof(*j));
	int64_t row, start;
	int ret = 0;

	if (!j)
		return -ENOMEM;
	for (size_t r = 0; t && r < t->nrows && !ret; r++) {
		uint64_t key, hash;

		if (memo_hit(in, 'j', t, r, &key, &hash, &row)) {
			ret = map_put(&in->jobs, cell_i64(t, r, "id"), row);
			continue;
		}
		memset(j, 0, sizeof(*j));
		j->node_id = in->node_id;
		cell_text(t, r, "scheduler", j->scheduler, sizeof(j->scheduler));
		cell_text(t, r, "job_id", j->job_id, sizeof(j->job_id));
		cell_text(t, r, "name", j->name, sizeof(j->name));
		cell_text(t, r, "command", j->command, sizeof(j->command));
		cell_text(t, r, "user", j->user, sizeof(j->user));
		cell_text(t, r, "step", j->step, sizeof(j->step));
		cell_text(t, r, "cgroup", j->cgroup, sizeof(j->cgroup));
		cell_text(t, r, "qos", j->qos, sizeof(j->qos));
		cell_text(t, r, "reservation_source", j->reservation_source,
			  sizeof(j->reservation_source));
		cell_text(t, r, "reserved_gpu_list", j->reserved_gpu_list,
			  sizeof(j->reserved_gpu_list));
		cell_text(t, r, "sluid", j->sluid, sizeof(j->sluid));		  /* schema 12 */
		cell_text(t, r, "k8s_owner", j->k8s_owner, sizeof(j->k8s_owner)); /* schema 15 */
		cell_text(t, r, "k8s_owner_label", j->k8s_owner_label, sizeof(j->k8s_owner_label));
		j->start_ms = cell_i64(t, r, "start_ms");
		j->end_ms = cell_i64(t, r, "end_ms");
		j->uid = (uint32_t)cell_i64(t, r, "uid");
		j->pid = (int32_t)cell_i64(t, r, "pid");
		j->has_exit = cell_has(t, r, "exit_code");
		j->exit_code = (int32_t)cell_i64(t, r, "exit_code");
		j->signal = (int32_t)cell_i64(t, r, "signal");
		j->timed_out = cell_i64(t, r, "timed_out") != 0;
		j->interval_ms = cell_i64(t, r, "interval_ms");
		j->cores_allowed = (int32_t)cell_i64(t, r, "cores_allowed");
		j->host_cores = (int32_t)cell_i64(t, r, "host_cores");
		j->host_mem_bytes = (uint64_t)cell_i64(t, r, "host_mem_bytes");
		j->samples = cell_i64(t, r, "samples");
		j->lost_samples = cell_i64(t, r, "lost_samples");
		j->sampler_cpu_ms = cell_i64(t, r, "sampler_cpu_ms");
		j->reserved_cpus = cell(t, r, "reserved_cpus")->type == STORE_VALUE_REAL
				       ? cell(t, r, "reserved_cpus")->d
				       : (double)cell_i64(t, r, "reserved_cpus");
		j->reserved_mem_bytes = (uint64_t)cell_i64(t, r, "reserved_mem_bytes");
		j->has_reserved_gpus = cell_has(t, r, "reserved_gpus");
		j->reserved_gpus = (int32_t)cell_i64(t, r, "reserved_gpus");
		if (!j->scheduler[0] || !j->job_id[0] || j->start_ms <= 0) {
			ret = store__ingest_bad(
			    in, "jobs: a row without scheduler, job_id or start_ms");
			break;
		}
		ret = store_find_job(in->st, in->node_id, j->scheduler, j->job_id, j->start_ms,
				     &row, &start);
		if (ret == 0) {
			j->id = row;
			j->start_ms = start;
			ret = store_job_update(in->st, j);
		} else if (ret == -ENOENT) {
			ret = store_job_begin(in->st, j);
		}
		if (!ret)
			ret = map_put(&in->jobs, cell_i64(t, r, "id"), j->id);
		if (!ret)
			ret = memo_later(in, key, hash, j->id);
	}
	free(j);
	return ret;
}

static int ingest_procs(struct ingest *in)
{
	const struct store_table *t = table(in->b, "procs");
	struct proc_info p;
	char container[256];
	int64_t job = 0, row;
	int ret;

	for (size_t r = 0; t && r < t->nrows; r++) {
		uint64_t key, hash;

		if (memo_hit(in, 'p', t, r, &key, &hash, &row)) {
			ret = map_put(&in->procs, cell_i64(t, r, "id"), row);
			if (ret)
				return ret;
			continue;
		}
		memset(&p, 0, sizeof(p));
		p.pid = (int32_t)cell_i64(t, r, "pid");
		p.ppid = (int32_t)cell_i64(t, r, "ppid");
		p.start_ms = cell_i64(t, r, "start_ms");
		p.end_ms = cell_i64(t, r, "end_ms");
		p.uid = (uint32_t)cell_i64(t, r, "uid");
		cell_text(t, r, "comm", p.comm, sizeof(p.comm));
		cell_text(t, r, "cmdline", p.cmdline, sizeof(p.cmdline));
		if (p.pid <= 0)
			return store__ingest_bad(in, "procs: a row without pid");
		if (cell_has(t, r, "job_id") && !map_get(&in->jobs, cell_i64(t, r, "job_id"), &job))
			return store__ingest_bad(in, "procs: job %lld is not in the batch",
						 (long long)cell_i64(t, r, "job_id"));
		cell_text(t, r, "container", container, sizeof(container));
		ret = store_put_proc_info(in->st, in->node_id, cell_has(t, r, "job_id") ? job : 0,
					  &p, container[0] ? container : NULL, &row);
		if (!ret && p.end_ms)
			ret = store_update_proc_info(in->st, row, &p, NULL);
		if (!ret)
			ret = map_put(&in->procs, cell_i64(t, r, "id"), row);
		if (!ret)
			ret = memo_later(in, key, hash, row);
		if (ret)
			return ret;
	}
	return 0;
}

/* Each column's role, read once a table (not a string compare a cell). */
static void column_roles(const struct store_table *t, bool summaries,
			 enum column_role role[STORE_ROWSET_MAX_COLUMNS])
{
	for (int c = 0; c < t->ncols; c++) {
		const char *col = t->cols[c];

		role[c] = !summaries && strcmp(col, "seq") == 0 ? COL_SEQ
			  : strcmp(col, "node_id") == 0		? COL_NODE
			  : strcmp(col, "job_id") == 0		? COL_JOB
			  : strcmp(col, "proc_id") == 0		? COL_PROC
			  : strcmp(col, "device_id") == 0	? COL_DEVICE
								: COL_KEPT;
	}
}

/*
 * The value a cell of a batch is stored as on the head: its seq the
 * head's next, its node and row ids the head's.  0, or -EINVAL (errmsg)
 * for an id the batch does not hold.
 */
int store__head_value(struct ingest *in, const struct store_table *t, int c, enum column_role role,
		      const struct store_value *v, struct store_value *out)
{
	const struct id_map *m = role == COL_JOB      ? &in->jobs
				 : role == COL_PROC   ? &in->procs
				 : role == COL_DEVICE ? &in->devices
						      : NULL;
	int64_t to;

	*out = *v;
	if (role == COL_SEQ) {
		*out = (struct store_value){.type = STORE_VALUE_INT, .i = in->st->next_seq};
	} else if (role == COL_NODE && v->type != STORE_VALUE_NULL) {
		*out = (struct store_value){.type = STORE_VALUE_INT, .i = in->node_id};
	} else if (m && v->type != STORE_VALUE_NULL) {
		if (v->type != STORE_VALUE_INT || !map_get(m, v->i, &to))
			return store__ingest_bad(in, "%s: %s %lld is not in the batch", t->name,
						 t->cols[c], (long long)v->i);
		*out = (struct store_value){.type = STORE_VALUE_INT, .i = to};
	}
	return 0;
}

static bool head_has_column(struct store *st, const char *tbl, const char *col)
{
	struct db_stmt *stmt;
	bool found = false;

	if (db_prepare(&st->conn,
		       st->conn.pg
			   ? "SELECT 1 FROM information_schema.columns WHERE table_name = ?1"
			     " AND column_name = ?2 AND table_schema = current_schema()"
			   : "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2",
		       &stmt) != SQLITE_OK)
		return false;
	db_bind_text(stmt, 1, tbl, -1, SQLITE_STATIC);
	db_bind_text(stmt, 2, col, -1, SQLITE_STATIC);
	found = db_step(stmt) == SQLITE_ROW;
	db_finalize(stmt);
	return found;
}

/*
 * The INSERT for a table and a batch's columns: from the cache (a batch's
 * tables come with the same columns from every agent of a version), else
 * checked column by column against the head's schema and prepared.  *aux:
 * what its cache entry keeps beside it (on PostgreSQL the columns' types,
 * once read: ingest_pg.c), or NULL.
 */
static int cached_insert(struct ingest *in, const struct store_table *t, const char *sql,
			 struct db_stmt **out, const char **aux)
{
	struct store *st = in->st;
	int rc;

	*aux = NULL;
	*out = store__cached_find_aux(st, sql, aux);
	if (*out)
		return 0;
	for (int c = 0; c < t->ncols; c++)
		if (!head_has_column(st, t->name, t->cols[c]))
			return store__ingest_bad(in, "%s: no column '%s' here", t->name,
						 t->cols[c]);
	rc = store__cached_stmt(st, sql, out);
	if (rc == SQLITE_NOMEM)
		return -ENOMEM;
	if (rc != SQLITE_OK)
		return store__ingest_bad(in, "%s: %s", t->name, store__errmsg(st));
	return 0;
}

/* Whether a fact row is above the agent's cursor and in the batch's range. */
bool store__row_is_new(const struct ingest *in, const struct store_value *seq)
{
	return seq->type == STORE_VALUE_INT && seq->i > in->acked && seq->i <= in->b->to_seq;
}

/* How many of t's rows are new (row_is_new); 0 without a seq column. */
static size_t rows_new(const struct ingest *in, const struct store_table *t, int seq_col)
{
	size_t n = 0;

	for (size_t r = 0; seq_col >= 0 && r < t->nrows; r++)
		n += store__row_is_new(in, &t->cells[r * (size_t)t->ncols + (size_t)seq_col]);
	return n;
}

/* A failed statement of a batch: a full disk or a lost database is the group's, else the batch's.
 */
int store__row_failed(struct ingest *in, const struct store_table *t, int rc)
{
	int e = store__errno(in->st->conn.sq, rc);

	return e == -ENOSPC || e == -EIO
		   ? e
		   : store__ingest_bad(in, "%s: %s", t->name, store__errmsg(in->st));
}

/* PostgreSQL: whether the process samples go in sets (store__pg_proc_sets). */
static bool in_sets(const struct ingest *in, const struct store_table *t)
{
	return in->st->pg_sets && strcmp(t->name, "proc_samples") == 0;
}

/*
 * PostgreSQL: a fact table's new rows up to this many go in one INSERT sent
 * ahead with the batch's other such tables (store__pg_unnest_later), more in
 * a COPY (store__pg_copy_facts).  Measured
 * (bench/RESULTS.md section 13): a batch's 200 process rows cost the server
 * less by COPY, its 1 to 32 rows of the other tables less by INSERT.
 */
#ifndef PG_UNNEST_ROWS_MAX
#define PG_UNNEST_ROWS_MAX 64
#endif

/*
 * Every row of one fact table above the cursor, with the head's seq and
 * ids.  The tables a batch carries are facts.h's FACT_INGESTED, among them
 * gaps: the agent's records of rows its size cap deleted unsent (node_id
 * mapped, seqs its own).  A table a batch lacks (fs_samples from an agent
 * older than schema 7) is simply not there.  PostgreSQL takes the process
 * samples in sets (store__pg_proc_sets), the rows of another table in one
 * COPY (store__pg_copy_facts) or in the batch's unnest INSERT, but the job
 * summaries, which replace a job's earlier one (ON CONFLICT, which COPY has
 * not), a row at a time.
 */
static int ingest_facts_of(struct ingest *in, const struct store_table *t, bool summaries)
{
	enum column_role role[STORE_ROWSET_MAX_COLUMNS];
	char sql[4096];
	size_t len = 0;
	int seq_col = store__col_index(t, "seq");
	struct db_stmt *stmt;
	const char *types;
	int rc, ret = 0;

	if (!summaries && seq_col < 0)
		return store__ingest_bad(in, "%s: no seq column", t->name);
	column_roles(t, summaries, role);
	len = sql_put(sql, sizeof(sql), len, "INSERT INTO ");
	len = sql_put(sql, sizeof(sql), len, t->name);
	len = sql_put(sql, sizeof(sql), len, " (");
	if (len < sizeof(sql))
		len += store__col_list(sql + len, sizeof(sql) - len, t);
	len = sql_put(sql, sizeof(sql), len, ") VALUES (");
	for (int c = 0; c < t->ncols && len < sizeof(sql); c++)
		len = sql_put(sql, sizeof(sql), len, c ? ", ?" : "?");
	len = sql_put(sql, sizeof(sql), len, ")");
	/* a summary replaces the job's earlier one (its key: job_id) */
	for (int c = 0, n = 0; summaries && c < t->ncols && len < sizeof(sql); c++) {
		if (strcmp(t->cols[c], "job_id") == 0)
			continue;
		len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s\"%s\" = excluded.\"%s\"",
					n++ ? ", " : " ON CONFLICT (job_id) DO UPDATE SET ",
					t->cols[c], t->cols[c]);
	}
	if (len >= sizeof(sql))
		return store__ingest_bad(in, "%s: too many columns", t->name);
	/*
	 * The INSERT is prepared on PostgreSQL too, COPY or not: its cache
	 * entry says the batch's columns were checked against the head's
	 * (preparing costs no round trip there: it is sent when first run).
	 */
	ret = cached_insert(in, t, sql, &stmt, &types);
	if (ret)
		return ret;
	if (!summaries && in->st->conn.pg) {
		size_t nnew = rows_new(in, t, seq_col);

		if (nnew == 0)
			return 0; /* no statement for nothing */
		if (in_sets(in, t)) {
			ret = store__pg_proc_sets(in, t, seq_col, role, sql, types, nnew);
			if (ret != -EMEDIUMTYPE)
				return ret;
		} else if (nnew <= PG_UNNEST_ROWS_MAX) {
			ret = store__pg_unnest_later(in, t, seq_col, role, sql, types, nnew);
			if (ret != -EMEDIUMTYPE)
				return ret;
		}
		return store__pg_copy_facts(in, t, seq_col, role, nnew);
	}

	for (size_t r = 0; r < t->nrows && !ret; r++) {
		const struct store_value *row = &t->cells[r * (size_t)t->ncols];

		if (!summaries && !store__row_is_new(in, &row[seq_col]))
			continue; /* held already, or outside the batch's range */
		db_reset(stmt);
		db_clear_bindings(stmt);
		for (int c = 0; c < t->ncols && !ret; c++) {
			struct store_value v;

			ret = store__head_value(in, t, c, role[c], &row[c], &v);
			if (ret)
				break;
			switch (v.type) {
			case STORE_VALUE_INT:
				db_bind_int64(stmt, c + 1, v.i);
				break;
			case STORE_VALUE_REAL:
				db_bind_double(stmt, c + 1, v.d);
				break;
			case STORE_VALUE_TEXT:
				db_bind_text(stmt, c + 1, v.s, (int)v.len, SQLITE_STATIC);
				break;
			default:
				db_bind_null(stmt, c + 1);
				break;
			}
		}
		if (ret)
			break;
		rc = db_step(stmt);
		if (rc != SQLITE_DONE) {
			ret = store__row_failed(in, t, rc);
			break;
		}
		if (!summaries)
			in->st->next_seq++;
		in->rows++;
	}
	db_reset(stmt);
	db_clear_bindings(stmt);
	return ret;
}

/* A cell as the uint64_t it was stored from (bit for bit), or a real's value. */
static uint64_t cell_u64(const struct store_table *t, size_t row, const char *name)
{
	return (uint64_t)cell_i64(t, row, name);
}

static double value_real(const struct store_value *v)
{
	return v->type == STORE_VALUE_REAL ? v->d : v->type == STORE_VALUE_INT ? (double)v->i : 0;
}

/* The batch's cuda_stats columns a snapshot reads, by index (-1: absent). */
enum stat_col {
	SC_JOB,
	SC_PID,
	SC_KIND,
	SC_NAME,
	SC_COUNT,
	SC_TOTAL,
	SC_MIN,
	SC_MAX,
	SC_M2,
	SC_BYTES,
	SC_MIN_BYTES,
	SC_MAX_BYTES,
	SC_M2_BYTES,
	SC__N,
};

static const char *const stat_col_names[SC__N] = {
    "job_id", "pid",	"kind",	 "name",      "count",	   "total_ns",	"min_ns",
    "max_ns", "m2_ns2", "bytes", "min_bytes", "max_bytes", "m2_bytes2",
};

/* One cuda_stats row of the batch, by its process. */
struct stat_key {
	int64_t job, pid;
	size_t row;
};

/*
 * The batch's cuda_stats rows sorted by process, each snapshot's found by
 * bisection: a batch of P processes' snapshots is read in P log P, not
 * scanned whole for each (P squared).
 */
struct stats_index {
	const struct store_table *t;
	int col[SC__N];
	struct stat_key *keys;
	size_t n;
};

static int by_process(const void *pa, const void *pb)
{
	const struct stat_key *a = pa, *b = pb;

	if (a->job != b->job)
		return a->job < b->job ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->row < b->row ? -1 : a->row > b->row; /* the batch's order within one */
}

static int stats_index_build(struct stats_index *x, const struct store_table *t)
{
	memset(x, 0, sizeof(*x));
	x->t = t;
	if (!t || !t->nrows)
		return 0;
	for (int c = 0; c < SC__N; c++)
		x->col[c] = store__col_index(t, stat_col_names[c]);
	x->keys = malloc(t->nrows * sizeof(*x->keys));
	if (!x->keys)
		return -ENOMEM;
	for (size_t r = 0; r < t->nrows; r++)
		x->keys[x->n++] = (struct stat_key){value_i64(cell_at(t, r, x->col[SC_JOB])),
						    value_i64(cell_at(t, r, x->col[SC_PID])), r};
	qsort(x->keys, x->n, sizeof(*x->keys), by_process);
	return 0;
}

/* The stats of (job, pid) in the batch's cuda_stats (agent ids) added to p. */
static int cuda_stats_of(const struct stats_index *x, int64_t job, int32_t pid, struct cuda_proc *p)
{
	size_t lo = 0, hi = x->n;

	while (lo < hi) { /* the first key at or after (job, pid) */
		size_t mid = lo + (hi - lo) / 2;
		const struct stat_key *k = &x->keys[mid];

		if (k->job < job || (k->job == job && k->pid < pid))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < x->n && x->keys[i].job == job && x->keys[i].pid == pid; i++) {
		size_t r = x->keys[i].row;
		const struct store_value *name = cell_at(x->t, r, x->col[SC_NAME]);
		const struct store_value *kname = cell_at(x->t, r, x->col[SC_KIND]);
		enum cuda_stat_kind kind;
		struct cuda_stat *s;

		if (name->type != STORE_VALUE_TEXT || kname->type != STORE_VALUE_TEXT ||
		    cuda_stat_kind_parse(kname->s, &kind))
			continue; /* a kind of a newer version */
		s = cuda_proc_add(p, kind, name->s);
		if (!s)
			return -ENOMEM;
#define STAT_U64(c) ((uint64_t)value_i64(cell_at(x->t, r, x->col[c])))
		s->count = STAT_U64(SC_COUNT);
		s->total_ns = STAT_U64(SC_TOTAL);
		s->min_ns = STAT_U64(SC_MIN);
		s->max_ns = STAT_U64(SC_MAX);
		s->m2_ns2 = value_real(cell_at(x->t, r, x->col[SC_M2]));
		s->bytes = STAT_U64(SC_BYTES);
		s->min_bytes = STAT_U64(SC_MIN_BYTES);
		s->max_bytes = STAT_U64(SC_MAX_BYTES);
		s->m2_bytes2 = value_real(cell_at(x->t, r, x->col[SC_M2_BYTES]));
#undef STAT_U64
	}
	return 0;
}

/*
 * CUDA snapshots (cuda_procs above the cursor, with their cuda_stats):
 * each replaces its (job, pid)'s tables, under the head's job id and seq.
 * Rows come in seq order and only the newest of a process is in its
 * agent's store, so the last put is the newest.
 */
static int ingest_cuda(struct ingest *in)
{
	const struct store_table *t = table(in->b, "cuda_procs");
	struct stats_index stats;
	int ret = t && t->nrows ? stats_index_build(&stats, table(in->b, "cuda_stats")) : 0;

	if (ret || !t || !t->nrows)
		return ret;
	for (size_t r = 0; r < t->nrows && !ret; r++) {
		int64_t seq = cell_i64(t, r, "seq"), job = cell_i64(t, r, "job_id"), head_job;
		int64_t pid = cell_i64(t, r, "pid");
		char state[32];
		struct cuda_proc p;

		if (!cell_has(t, r, "seq") || seq <= in->acked || seq > in->b->to_seq)
			continue; /* held already, or outside the batch's range */
		if (pid < 0 || pid > INT32_MAX) {
			ret = store__ingest_bad(in, "cuda_procs: pid %lld", (long long)pid);
			break;
		}
		if (!map_get(&in->jobs, job, &head_job)) {
			ret = store__ingest_bad(in, "cuda_procs: job_id %lld is not in the batch",
						(long long)job);
			break;
		}
		cuda_proc_init(&p);
		p.pid = (int32_t)pid;
		cell_text(t, r, "message", p.message, sizeof(p.message));
		cell_text(t, r, "state", state, sizeof(state));
		if (cuda_proc_state_parse(state, &p.state)) {
			p.state =
			    CUDA_PROC_ERROR; /* a state of a newer version: its name says what */
			if (!p.message[0])
				snprintf(p.message, sizeof(p.message), "state %.64s", state);
		}
		p.cupti_version = (uint32_t)cell_i64(t, r, "cupti_version");
		p.contexts = (uint32_t)cell_i64(t, r, "contexts");
		p.dropped = cell_u64(t, r, "dropped");
		p.seq = cell_u64(t, r, "snap_seq");
		p.final = cell_i64(t, r, "final") != 0;
		ret = cuda_stats_of(&stats, job, p.pid, &p);
		if (!ret)
			ret =
			    store_put_cuda_proc(in->st, head_job, &p, cell_i64(t, r, "updated_ms"));
		if (!ret)
			in->rows += 1 + (int64_t)p.nstats;
		cuda_proc_release(&p);
	}
	free(stats.keys);
	return ret;
}

int store_agent_cursor(struct store *st, const char *agent_id, int64_t *acked_seq)
{
	struct db_stmt *stmt;
	int rc;

	*acked_seq = 0;
	if (st->schema_version < 4)
		return 0;
	rc = store__cached_stmt(st, "SELECT acked_seq FROM agents WHERE agent_id = ?", &stmt);
	if (rc != SQLITE_OK)
		return store__errno(st->conn.sq, rc) ? store__errno(st->conn.sq, rc) : -EIO;
	db_bind_text(stmt, 1, agent_id, -1, SQLITE_STATIC);
	rc = db_step(stmt);
	if (rc == SQLITE_ROW)
		*acked_seq = db_column_int64(stmt, 0);
	db_reset(stmt);
	db_clear_bindings(stmt);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : store__errno(st->conn.sq, rc);
}

/*
 * The agent's cursor, read inside the batch's transaction.  PostgreSQL,
 * where several heads may take the same agent's batch at once (one sent
 * again to another head after a lost answer): its agents row is made if
 * need be and locked (FOR UPDATE) before the cursor is read, so a second
 * head waits for the first to commit, then reads the cursor it advanced
 * and applies only the rows above it (none for the same batch).  Once a
 * commit made or found the row, the memo holds that and the INSERT is not
 * sent again: if the row has gone since (deleted by hand), the lock finds
 * nothing and the row is made then.
 */
static int agent_row_made(struct ingest *in, int64_t now_ms)
{
	const struct store_batch *b = in->b;
	struct db_stmt *stmt;
	int rc;

	rc = store__cached_stmt(
	    in->st,
	    "INSERT INTO agents (agent_id, node_id, acked_seq, first_seen_ms,"
	    " last_seen_ms, interval_ms, batches, rows)"
	    " VALUES (?1, ?2, 0, ?3, ?3, ?4, 0, 0) ON CONFLICT (agent_id) DO NOTHING",
	    &stmt);
	if (rc != SQLITE_OK)
		return store__errno(NULL, rc) ? store__errno(NULL, rc) : -EIO;
	db_bind_text(stmt, 1, b->who.agent_id, -1, SQLITE_STATIC);
	db_bind_int64(stmt, 2, in->node_id);
	db_bind_int64(stmt, 3, now_ms);
	db_bind_int64(stmt, 4, b->who.interval_ms);
	rc = db_step(stmt);
	db_reset(stmt);
	db_clear_bindings(stmt);
	if (rc != SQLITE_DONE)
		return store__errno(NULL, rc) ? store__errno(NULL, rc) : -EIO;
	return 0;
}

static int agent_cursor_locked(struct ingest *in, int64_t now_ms)
{
	const struct store_batch *b = in->b;
	uint64_t key = memo_key(b->who.agent_id, 'a', 0);
	bool known;
	struct db_stmt *stmt;
	int rc, ret;

	if (!in->st->conn.pg)
		return store_agent_cursor(in->st, b->who.agent_id, &in->acked);
	memo_check_connection(in->st);
	known = in->st->memo && memo_find(in->st->memo, key)->key == key;
	for (int again = 0;; again++) {
		if (!known || again) {
			ret = agent_row_made(in, now_ms);
			if (ret)
				return ret;
		}
		in->acked = 0;
		rc = store__cached_stmt(
		    in->st, "SELECT acked_seq FROM agents WHERE agent_id = ?1 FOR UPDATE", &stmt);
		if (rc != SQLITE_OK)
			return store__errno(NULL, rc) ? store__errno(NULL, rc) : -EIO;
		db_bind_text(stmt, 1, b->who.agent_id, -1, SQLITE_STATIC);
		rc = db_step(stmt);
		if (rc == SQLITE_ROW)
			in->acked = db_column_int64(stmt, 0);
		db_reset(stmt);
		db_clear_bindings(stmt);
		if (rc == SQLITE_DONE && known && !again)
			continue; /* the row the memo knew is gone: made again, locked again */
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			return store__errno(NULL, rc) ? store__errno(NULL, rc) : -EIO;
		return known ? 0 : memo_later(in, key, FNV1A_SEED, 0);
	}
}

/*
 * PostgreSQL: whether a fact table's new rows go by COPY (more than
 * PG_UNNEST_ROWS_MAX, not in sets).
 */
static bool copied(const struct ingest *in, const struct store_table *t)
{
	return !in_sets(in, t) && rows_new(in, t, store__col_index(t, "seq")) > PG_UNNEST_ROWS_MAX;
}

/*
 * The batch's node: its row upserted (an upsert, and on PostgreSQL a round
 * trip, a batch), unless the memo holds it with the same figures.
 */
static int ingest_node(struct ingest *in)
{
	const struct store_batch *b = in->b;
	uint64_t key = memo_key(b->who.agent_id, 'n', 0), hash = FNV1A_SEED;
	struct memo_entry *e;
	int ret;

	hash = fnv1a(hash, b->who.hostname, strlen(b->who.hostname) + 1);
	hash = fnv1a(hash, &b->who.cores, sizeof(b->who.cores));
	hash = fnv1a(hash, &b->who.mem_total_bytes, sizeof(b->who.mem_total_bytes));
	hash = fnv1a(hash, &b->who.boot_ms, sizeof(b->who.boot_ms));
	memo_check_connection(in->st);
	e = in->st->memo ? memo_find(in->st->memo, key) : NULL;
	if (e && e->key == key && e->hash == hash) {
		in->node_id = e->head_row;
		return 0;
	}
	ret = store_node(in->st, b->who.hostname, b->who.cores, b->who.mem_total_bytes,
			 b->who.boot_ms, &in->node_id);
	return ret ? ret : memo_later(in, key, hash, in->node_id);
}

static int ingest_body(struct ingest *in, int64_t now_ms)
{
	const struct store_batch *b = in->b;
	struct db_stmt *stmt;
	int rc, ret;

	ret = ingest_node(in);
	if (ret)
		return ret;
	ret = agent_cursor_locked(in, now_ms);
	if (ret)
		return ret;
	if (b->to_seq > in->acked) {
		ret = ingest_devices(in);
		if (!ret)
			ret = ingest_jobs(in);
		if (!ret)
			ret = ingest_procs(in);
		/*
		 * PostgreSQL: the tables COPYed first, right after the cursor's
		 * round trip, when nothing waits in the pipeline; the INSERTs sent
		 * ahead after them go with the next statement read (pg.c)
		 */
		for (int pass = in->st->conn.pg ? 0 : 1; pass < 2 && !ret; pass++) {
			for (int i = 0; i < store_nfacts && !ret; i++) {
				const struct store_table *t = table(b, store_facts[i].name);

				if (t && (store_facts[i].flags & FACT_INGESTED) &&
				    (pass == 1) == (!in->st->conn.pg || !copied(in, t)))
					ret = ingest_facts_of(in, t, false);
			}
		}
		if (!ret)
			ret = store__pg_unnest_run(in);
		if (!ret && table(b, "job_summaries"))
			ret = ingest_facts_of(in, table(b, "job_summaries"), true);
		if (!ret && in->st->schema_version >= 9)
			ret = ingest_cuda(in);
		if (ret)
			return ret;
	}
	rc = store__cached_stmt(
	    in->st,
	    "INSERT INTO agents (agent_id, node_id, acked_seq, first_seen_ms, last_seen_ms,"
	    " interval_ms, batches, rows) VALUES (?1, ?2, ?3, ?4, ?4, ?5, 1, ?6)"
	    " ON CONFLICT (agent_id) DO UPDATE SET node_id = ?2,"
	    " acked_seq = greatest(agents.acked_seq, ?3), last_seen_ms = ?4, interval_ms = ?5,"
	    " batches = agents.batches + 1, rows = agents.rows + ?6",
	    &stmt);
	if (rc != SQLITE_OK)
		return store__errno(in->st->conn.sq, rc) ? store__errno(in->st->conn.sq, rc) : -EIO;
	db_bind_text(stmt, 1, b->who.agent_id, -1, SQLITE_STATIC);
	db_bind_int64(stmt, 2, in->node_id);
	db_bind_int64(stmt, 3, b->to_seq > in->acked ? b->to_seq : in->acked);
	db_bind_int64(stmt, 4, now_ms);
	db_bind_int64(stmt, 5, b->who.interval_ms);
	db_bind_int64(stmt, 6, in->rows);
	rc = db_step(stmt);
	db_reset(stmt);
	db_clear_bindings(stmt);
	if (rc != SQLITE_DONE)
		return store__errno(in->st->conn.sq, rc);
	if (b->to_seq > in->acked)
		in->acked = b->to_seq;
	return 0;
}

/* PostgreSQL: the day partitions a batch's fact rows need, made before its transaction. */
static void pg_partitions_of(struct store *st, const struct store_batch *b)
{
	int64_t ts[64];

	for (int i = 0; i < store_nfacts; i++) {
		const struct store_table *t =
		    store_facts[i].flags & FACT_INGESTED ? table(b, store_facts[i].name) : NULL;
		int c = t ? store__col_index(t, "ts_ms") : -1;
		size_t n = 0;

		for (size_t r = 0; c >= 0 && r < t->nrows; r++) {
			const struct store_value *v = &t->cells[r * (size_t)t->ncols + (size_t)c];

			if (v->type != STORE_VALUE_INT ||
			    (n > 0 && v->i / 86400000 == ts[n - 1] / 86400000))
				continue;
			ts[n++] = v->i;
			if (n == sizeof(ts) / sizeof(ts[0])) {
				store__pg_partitions(st, t->name, ts, n);
				n = 0;
			}
		}
		if (n)
			store__pg_partitions(st, t->name, ts, n);
	}
}

static void ingest_release(struct ingest *in)
{
	store__pg_unnest_release(in);
	free(in->parts);
	free(in->pending);
	map_release(&in->jobs);
	map_release(&in->procs);
	map_release(&in->devices);
	memset(in, 0, sizeof(*in));
}

/* A batch whose header says it cannot be right: -EINVAL with errmsg. */
static int ingest_check(const struct store_batch *b, char *errmsg, size_t size)
{
	if (!b->who.agent_id[0] || !b->who.hostname[0])
		return snprintf(errmsg, size, "no agent_id or node"), -EINVAL;
	if (b->to_seq < b->from_seq || b->from_seq < 0)
		return snprintf(errmsg, size, "bad seq range"), -EINVAL;
	return 0;
}

/*
 * SQLite: one batch of a group, inside its own savepoint: a batch that
 * does not fit the schema (-EINVAL) is rolled back alone and the group
 * goes on; any other error is the group's.  A batch alone in its group
 * needs no savepoint: refused, the group's transaction is rolled back
 * whole (store_ingest_group).  PostgreSQL's groups are pg_group's.
 */
static int ingest_one(struct store *st, struct store_ingest_item *it, struct ingest *in,
		      int64_t now_ms, bool alone)
{
	int64_t seq = st->next_seq;
	int ret;

	*in = (struct ingest){
	    .st = st, .b = it->b, .errmsg = it->errmsg, .errmsg_size = sizeof(it->errmsg)};
	ret = ingest_check(it->b, it->errmsg, sizeof(it->errmsg));
	if (ret)
		return ret;
	ret = alone ? 0 : store__cached_exec(st, "SAVEPOINT batch");
	if (ret)
		return ret;
	ret = ingest_body(in, now_ms);
	if (ret == -EINVAL) {
		st->next_seq = seq;
		st->tick_err = 0;
		if (alone)
			return -EINVAL;
		if (store__cached_exec(st, "ROLLBACK TO batch") == 0 &&
		    store__cached_exec(st, "RELEASE batch") == 0)
			return -EINVAL;
		return -EIO;
	}
	if (ret)
		return ret;
	return alone ? 0 : store__cached_exec(st, "RELEASE batch");
}

/*
 * PostgreSQL: a group in one transaction with no savepoint and no round
 * trip of its own per batch: every batch's statements go ahead in the
 * pipeline and a failure surfaces wherever the server is next waited for
 * (the next batch's cursor, a COPY, the COMMIT).  Optimistic: a batch the
 * head or the server refuses (-EINVAL, a value a column refuses) fails the
 * whole group, which is then run again a batch at a time, each in a
 * transaction of its own, where a refusal is that batch's.  Any other
 * failure (the database away, a full disk) is the group's.
 */
static int pg_group(struct store *st, struct store_ingest_item *items, size_t n, int64_t now_ms)
{
	struct ingest *in = calloc(n, sizeof(*in));
	bool refused = false, any = false;
	size_t i;
	int ret, fail;

	if (!in)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		items[i].ret = 0;
		items[i].acked_seq = 0;
		items[i].errmsg[0] = '\0';
		pg_partitions_of(st, items[i].b);
	}
	pg_take_failure(st->conn.pg);
	ret = store_tick_begin(st);
	for (i = 0; i < n && !ret; i++) {
		struct store_ingest_item *it = &items[i];

		in[i] = (struct ingest){
		    .st = st, .b = it->b, .errmsg = it->errmsg, .errmsg_size = sizeof(it->errmsg)};
		if (ingest_check(it->b, it->errmsg, sizeof(it->errmsg))) {
			it->ret = -EINVAL; /* refused before it touched the database */
			continue;
		}
		any = true;
		ret = ingest_body(&in[i], now_ms);
	}
	if (ret == 0 && any)
		ret = store_tick_commit(st);
	else
		store_tick_abort(st);
	fail = pg_take_failure(st->conn.pg) & 0xff;
	refused = ret == -EINVAL || (ret && (fail == SQLITE_MISMATCH || fail == SQLITE_CONSTRAINT));
	if (refused && n == 1) {
		if (!items[0].errmsg[0])
			snprintf(items[0].errmsg, sizeof(items[0].errmsg), "%s", store__errmsg(st));
		items[0].ret = -EINVAL;
		ret = 0;
	}
	for (i = 0; i < n && !(refused && n > 1); i++) {
		if (ret)
			items[i].ret = ret;
		if (items[i].ret == 0) {
			memo_commit(&in[i]);
			items[i].acked_seq = in[i].acked;
		}
	}
	for (i = 0; i < n; i++)
		ingest_release(&in[i]);
	free(in);
	if (refused && n > 1) {
		/* one batch or more refused, which is not known: each alone */
		ret = 0;
		for (i = 0; i < n && !ret; i++)
			ret = pg_group(st, &items[i], 1, now_ms);
		for (; i < n; i++)
			items[i].ret = ret;
	}
	return ret;
}

int store_ingest_group(struct store *st, struct store_ingest_item *items, size_t n, int64_t now_ms)
{
	struct ingest *in;
	bool refused_all = false; /* the one batch of the group refused: nothing to commit */
	int ret;

	if (st->conn.pg && n > 0)
		return pg_group(st, items, n, now_ms);
	in = calloc(n ? n : 1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		items[i].ret = 0;
		items[i].acked_seq = 0;
		items[i].errmsg[0] = '\0';
	}
	for (size_t i = 0; i < n && st->conn.pg; i++)
		pg_partitions_of(st, items[i].b);
	ret = store_tick_begin(st);
	for (size_t i = 0; i < n && !ret; i++) {
		int r = ingest_one(st, &items[i], &in[i], now_ms, n == 1);

		if (r == -EINVAL)
			items[i].ret = r;
		else
			ret = r;
		refused_all = n == 1 && r == -EINVAL;
	}
	if (ret == 0 && !refused_all)
		ret = store_tick_commit(st);
	else
		store_tick_abort(st);
	for (size_t i = 0; i < n; i++) {
		if (ret)
			items[i].ret = ret;
		if (items[i].ret == 0) {
			memo_commit(&in[i]);
			items[i].acked_seq = in[i].acked;
		}
		ingest_release(&in[i]);
	}
	free(in);
	return ret;
}

int store_ingest(struct store *st, const struct store_batch *b, int64_t now_ms, int64_t *acked_seq,
		 char *errmsg, size_t errmsg_size)
{
	struct store_ingest_item it = {.b = b};
	int ret = store_ingest_group(st, &it, 1, now_ms);

	snprintf(errmsg, errmsg_size, "%s", it.errmsg);
	if (ret == 0)
		ret = it.ret;
	if (ret == 0)
		*acked_seq = it.acked_seq;
	return ret;
}

int store_for_each_agent(struct store *st, int (*fn)(const struct agent_record *a, void *arg),
			 void *arg)
{
	struct agent_record a;
	struct db_stmt *stmt;
	char sql[640];
	int rc, ret = 0;

	if (st->schema_version < 4)
		return 0;
	/* a schema 4 store (read as it is) has no gap records: unknown, not 0 */
	snprintf(
	    sql, sizeof(sql),
	    "SELECT a.agent_id, n.hostname, a.acked_seq, a.first_seen_ms,"
	    " a.last_seen_ms, a.interval_ms, a.batches, a.rows,"
	    " (SELECT count(*) FROM devices d WHERE d.node_id = a.node_id), %s"
	    " FROM agents a JOIN nodes n ON n.id = a.node_id"
	    " ORDER BY n.hostname, a.agent_id",
	    st->schema_version < 5
		? "NULL, NULL"
		: "(SELECT count(*) FROM gaps g WHERE g.node_id = a.node_id),"
		  " (SELECT coalesce(sum(g.rows), 0) FROM gaps g WHERE g.node_id = a.node_id)");
	rc = db_prepare(&st->conn, sql, &stmt);
	if (rc != SQLITE_OK)
		return log_err(store__errno(st->conn.sq, rc),
			       "cannot list the agents of store '%s' (%s)", st->path,
			       store__errmsg(st));
	while (!ret && (rc = db_step(stmt)) == SQLITE_ROW) {
		const unsigned char *id = db_column_text(stmt, 0);
		const unsigned char *host = db_column_text(stmt, 1);

		memset(&a, 0, sizeof(a));
		snprintf(a.agent_id, sizeof(a.agent_id), "%s", id ? (const char *)id : "");
		snprintf(a.hostname, sizeof(a.hostname), "%s", host ? (const char *)host : "");
		a.acked_seq = db_column_int64(stmt, 2);
		a.first_seen_ms = db_column_int64(stmt, 3);
		a.last_seen_ms = db_column_int64(stmt, 4);
		a.interval_ms = db_column_int64(stmt, 5);
		a.batches = db_column_int64(stmt, 6);
		a.rows = db_column_int64(stmt, 7);
		a.gpus = db_column_int64(stmt, 8);
		a.has_gaps = db_column_type(stmt, 9) != SQLITE_NULL;
		a.gaps = db_column_int64(stmt, 9);
		a.lost_rows = db_column_int64(stmt, 10);
		ret = fn(&a, arg);
	}
	db_finalize(stmt);
	return ret;
}
