/*
 * cgroup.c - parsers for a cgroup's accounting and limit files, v1 and v2,
 * and the readers that find them under the controllers' mounts.
 *
 * The parsers walk a bounded cursor (struct scan) and never look past len.
 * The "key N" files (cpu.stat, cpuacct.stat, memory.stat) and the I/O files
 * are all or nothing: a line of another shape fails the file, which also
 * catches most files cut short.  On error nothing is written, so a parse
 * that failed leaves the caller's struct as it was.
 *
 * The readers zero their output first and then fill what they can: a file
 * that is missing or does not parse only leaves its bit clear.
 */
#include "cgroup.h"

#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "common/sysroot.h"
#include "common/scan.h"

/* memory.stat is a few kB; io.stat grows with the devices, 1 MB is plenty. */
#define CGROUP_READ_MAX ((size_t)1 << 20)
/* The same sizes sysroot.c builds its paths in. */
#define CG_REL_PATH_MAX	 4096
#define CG_FULL_PATH_MAX (4096 + 256)
/* The kernel's NR_CPUS tops out at 8192; anything far above is not a CPU. */
#define CPUSET_CPU_LIMIT (1u << 20)
/* v1 prints "no limit" as PAGE_COUNTER_MAX pages, just under 2^63 bytes. */
#define V1_MEM_UNLIMITED ((uint64_t)1 << 62)

static int add_u64(uint64_t *sum, uint64_t v)
{
	if (v > UINT64_MAX - *sum)
		return -EINVAL;
	*sum += v;
	return 0;
}

/* ---- "key N" files: cpu.stat, cpuacct.stat, memory.stat ---- */

/*
 * The next non-blank line as "key N": 1, or 0 at the end, or -EINVAL for a
 * line of any other shape.
 */
static int kv_next(struct scan *s, struct scan *key, uint64_t *value)
{
	struct scan line;

	if (!scan_nonblank_line(s, &line))
		return 0;
	span_field(&line, key);
	if (scan_u64(&line, value))
		return -EINVAL;
	scan_blanks(&line);
	return scan_at_end(&line) ? 1 : -EINVAL;
}

int cgroup_parse_cpu_stat(const char *text, size_t len, struct cgroup_sample *out)
{
	struct scan s = {text, text + len};
	struct scan key;
	uint64_t v, usage = 0, user = 0, sys = 0;
	bool have_usage = false, have_user = false, have_sys = false;
	int lines = 0, ret;

	while ((ret = kv_next(&s, &key, &v)) > 0) {
		lines++;
		if (span_eq(&key, "usage_usec")) {
			usage = v;
			have_usage = true;
		} else if (span_eq(&key, "user_usec")) {
			user = v;
			have_user = true;
		} else if (span_eq(&key, "system_usec")) {
			sys = v;
			have_sys = true;
		}
		/* nr_periods, nr_throttled, throttled_usec, nr_bursts, ... */
	}
	if (ret < 0 || lines == 0)
		return -EINVAL;
	if (have_usage) {
		out->cpu_usage_us = usage;
		out->valid |= CG_CPU;
	}
	if (have_user && have_sys) {
		out->cpu_user_us = user;
		out->cpu_system_us = sys;
		out->valid |= CG_CPU_SPLIT;
	}
	return 0;
}

/*
 * USER_HZ ticks to microseconds, split so that ticks * 10^6 cannot overflow;
 * -EINVAL when the result does not fit.
 */
static int ticks_to_us(uint64_t ticks, long hz, uint64_t *us)
{
	uint64_t h = hz > 0 ? (uint64_t)hz : 100;
	uint64_t whole = ticks / h, rem = ticks % h, v;

	if (whole > UINT64_MAX / 1000000)
		return -EINVAL;
	v = whole * 1000000;
	/* rem < h: rem * 10^6 only overflows for an absurd hz */
	if (add_u64(&v, h <= UINT64_MAX / 1000000 ? rem * 1000000 / h : rem / (h / 1000000)))
		return -EINVAL;
	*us = v;
	return 0;
}

int cgroup_parse_cpuacct_stat(const char *text, size_t len, long hz, struct cgroup_sample *out)
{
	struct scan s = {text, text + len};
	struct scan key;
	uint64_t v, user = 0, sys = 0;
	bool have_user = false, have_sys = false;
	int lines = 0, ret;

	while ((ret = kv_next(&s, &key, &v)) > 0) {
		lines++;
		if (span_eq(&key, "user")) {
			if (ticks_to_us(v, hz, &user))
				return -EINVAL;
			have_user = true;
		} else if (span_eq(&key, "system")) {
			if (ticks_to_us(v, hz, &sys))
				return -EINVAL;
			have_sys = true;
		}
	}
	if (ret < 0 || lines == 0)
		return -EINVAL;
	if (have_user && have_sys) {
		out->cpu_user_us = user;
		out->cpu_system_us = sys;
		out->valid |= CG_CPU_SPLIT;
	}
	return 0;
}

/*
 * One memory.stat value and the keys that give it, best first: v2's key,
 * v1's hierarchical "total_" key (the whole subtree, with use_hierarchy),
 * v1's own-pages-only key.  v1 and v2 share "shmem", so v1's total wins
 * there; a file has one version's keys, so the order matters only for v1.
 */
struct memstat_key {
	const char *names[3];
	uint32_t bit;
	size_t offset;
};

static const struct memstat_key memstat_keys[] = {
    {{"anon", "total_rss", "rss"}, CG_MEM_ANON, offsetof(struct cgroup_sample, mem_anon_bytes)},
    {{"total_shmem", "shmem", NULL}, CG_MEM_SHMEM,
     offsetof(struct cgroup_sample, mem_shmem_bytes)},
    {{"swapcached", NULL, NULL}, CG_MEM_SWAPCACHED,
     offsetof(struct cgroup_sample, mem_swapcached_bytes)},
    {{"file", "total_cache", "cache"}, CG_MEM_FILE,
     offsetof(struct cgroup_sample, mem_file_bytes)},
};

#define MEMSTAT_KEYS (sizeof(memstat_keys) / sizeof(memstat_keys[0]))

/* 3 for the best name of m, 2, 1; 0: not one of its names */
static int memstat_rank(const struct memstat_key *m, const struct scan *key)
{
	for (int i = 0; i < 3 && m->names[i]; i++)
		if (span_eq(key, m->names[i]))
			return 3 - i;
	return 0;
}

int cgroup_parse_memory_stat(const char *text, size_t len, struct cgroup_sample *out)
{
	struct scan s = {text, text + len};
	struct scan key;
	uint64_t v, got[MEMSTAT_KEYS] = {0};
	int rank[MEMSTAT_KEYS] = {0}; /* memstat_rank of the name that gave got[k] */
	int lines = 0, ret;

	while ((ret = kv_next(&s, &key, &v)) > 0) {
		lines++;
		for (size_t k = 0; k < MEMSTAT_KEYS; k++) {
			int r = memstat_rank(&memstat_keys[k], &key);

			if (r > rank[k]) {
				rank[k] = r;
				got[k] = v;
			}
		}
	}
	if (ret < 0 || lines == 0)
		return -EINVAL;
	for (size_t k = 0; k < MEMSTAT_KEYS; k++) {
		if (!rank[k])
			continue;
		memcpy((char *)out + memstat_keys[k].offset, &got[k], sizeof(got[k]));
		out->valid |= memstat_keys[k].bit;
	}
	return 0;
}

/* ---- I/O ---- */

/* "MAJ:MIN" of a block device. */
static bool span_devnum(const struct scan *field)
{
	struct scan s = *field;
	uint64_t v;

	if (scan_digits(&s, &v) || scan_at_end(&s) || *s.pos != ':')
		return false;
	s.pos++;
	return scan_digits(&s, &v) == 0 && scan_at_end(&s);
}

/*
 * A "key=N" field of io.stat: fills *v when the field is that key; -EINVAL
 * when N is not a number or the key came before on the line.
 */
static int io_stat_field(const struct scan *field, const char *key, uint64_t *v, bool *seen)
{
	struct scan value = *field;

	if (!span_starts(&value, key))
		return 0;
	value.pos += strlen(key);
	if (*seen || !span_u64(&value, v))
		return -EINVAL;
	*seen = true;
	return 0;
}

/*
 * Linux 6.x prints every device with its "rbytes= wbytes= rios= wios=
 * dbytes= dios=", then whatever the I/O controllers add (iocost's
 * "cost.vrate=100.00", iolatency's "depth=max", ...), which is skipped.
 * A file with no devices is no I/O yet.
 */
int cgroup_parse_io_stat(const char *text, size_t len, struct cgroup_sample *out)
{
	struct scan s = {text, text + len};
	struct scan line, field;
	uint64_t rsum = 0, wsum = 0;

	while (scan_nonblank_line(&s, &line)) {
		uint64_t r = 0, w = 0;
		bool have_r = false, have_w = false;

		if (!span_field(&line, &field) || !span_devnum(&field))
			return -EINVAL;
		while (span_field(&line, &field)) {
			if (io_stat_field(&field, "rbytes=", &r, &have_r) ||
			    io_stat_field(&field, "wbytes=", &w, &have_w))
				return -EINVAL;
		}
		if (!have_r || !have_w || add_u64(&rsum, r) || add_u64(&wsum, w))
			return -EINVAL;
	}
	out->io_read_bytes = rsum;
	out->io_write_bytes = wsum;
	out->valid |= CG_IO;
	return 0;
}

/*
 * Per device "8:0 Read N", "Write", "Sync", "Async", "Discard" (4.19) and
 * "Total", then one "Total N" over all devices, always printed: without it
 * the file was cut short.  Device names are the bdi's "MAJ:MIN".
 */
int cgroup_parse_blkio_bytes(const char *text, size_t len, struct cgroup_sample *out)
{
	static const char *const ops[] = {"Sync", "Async", "Discard", "Total"};
	struct scan s = {text, text + len};
	struct scan line, field, op;
	uint64_t v, rsum = 0, wsum = 0;
	bool have_total = false;
	size_t i;

	while (scan_nonblank_line(&s, &line)) {
		span_field(&line, &field);
		if (span_eq(&field, "Total")) {
			if (scan_u64(&line, &v))
				return -EINVAL;
			have_total = true;
		} else {
			if (!span_devnum(&field) || !span_field(&line, &op) || scan_u64(&line, &v))
				return -EINVAL;
			if (span_eq(&op, "Read")) {
				if (add_u64(&rsum, v))
					return -EINVAL;
			} else if (span_eq(&op, "Write")) {
				if (add_u64(&wsum, v))
					return -EINVAL;
			} else {
				for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
					if (span_eq(&op, ops[i]))
						break;
				}
				if (i == sizeof(ops) / sizeof(ops[0]))
					return -EINVAL;
			}
		}
		scan_blanks(&line);
		if (!scan_at_end(&line))
			return -EINVAL;
	}
	if (!have_total)
		return -EINVAL;
	out->io_read_bytes = rsum;
	out->io_write_bytes = wsum;
	out->valid |= CG_IO;
	return 0;
}

/* ---- one-value files ---- */

int cgroup_parse_u64(const char *text, size_t len, uint64_t *out)
{
	struct scan s = {text, text + len};

	span_trim(&s);
	if (span_eq(&s, "max"))
		return -ENODATA;
	return span_u64(&s, out) ? 0 : -EINVAL;
}

/* v1 cpu.cfs_quota_us: a number or -1 (no quota: -ENODATA). */
static int parse_cfs_quota(const char *text, size_t len, uint64_t *out)
{
	struct scan s = {text, text + len};
	uint64_t v;

	span_trim(&s);
	if (span_starts(&s, "-")) {
		s.pos++;
		return span_u64(&s, &v) && v == 1 ? -ENODATA : -EINVAL;
	}
	if (!span_u64(&s, &v) || v == 0)
		return -EINVAL;
	*out = v;
	return 0;
}

int cgroup_parse_cpuset(const char *text, size_t len, int *ncpus)
{
	struct scan s = {text, text + len};
	uint64_t first, last;
	uint64_t next_free = 0; /* lowest CPU the next range may start at */
	uint64_t count = 0;

	span_trim(&s);
	if (scan_at_end(&s))
		return -ENODATA;
	for (;;) {
		scan_blanks(&s);
		if (scan_digits(&s, &first))
			return -EINVAL;
		last = first;
		scan_blanks(&s);
		if (!scan_at_end(&s) && *s.pos == '-') {
			s.pos++;
			scan_blanks(&s);
			if (scan_digits(&s, &last))
				return -EINVAL;
			scan_blanks(&s);
		}
		if (last < first || first < next_free || last >= CPUSET_CPU_LIMIT)
			return -EINVAL;
		count += last - first + 1;
		next_free = last + 1;
		if (scan_at_end(&s))
			break;
		if (*s.pos != ',')
			return -EINVAL;
		s.pos++;
	}
	*ncpus = (int)count;
	return 0;
}

int cgroup_parse_cpu_max(const char *text, size_t len, double *cores)
{
	struct scan s = {text, text + len};
	uint64_t quota = 0, period;
	bool unlimited = false;

	span_trim(&s);
	if (span_starts(&s, "max")) {
		s.pos += 3;
		unlimited = true;
		if (scan_at_end(&s))
			return -ENODATA; /* "max" alone, as written to the file */
	} else if (scan_digits(&s, &quota) || quota == 0) {
		return -EINVAL;
	}
	if (scan_at_end(&s) || !scan_is_blank(*s.pos))
		return -EINVAL;
	if (scan_u64(&s, &period) || period == 0 || !scan_at_end(&s))
		return -EINVAL;
	if (unlimited)
		return -ENODATA;
	*cores = (double)quota / (double)period;
	return 0;
}

/* ---- readers ---- */

struct cg_ctx {
	const char *path; /* the cgroup, without trailing '/' ("" for the root) */
	int path_len;
	struct strbuf sb;
};

static int cg_ctx_init(struct cg_ctx *c, const char *cgroup_path)
{
	size_t n;

	if (!cgroup_path || cgroup_path[0] != '/' || strstr(cgroup_path, "/../"))
		return -EINVAL;
	n = strlen(cgroup_path);
	if (n >= 3 && strcmp(cgroup_path + n - 3, "/..") == 0)
		return -EINVAL;
	if (n >= CG_REL_PATH_MAX)
		return -ENAMETOOLONG;
	while (n > 0 && cgroup_path[n - 1] == '/')
		n--;
	c->path = cgroup_path;
	c->path_len = (int)n;
	strbuf_init(&c->sb, CGROUP_READ_MAX);
	return 0;
}

/* <mount><cgroup>[/<file>], relative to sysroot. */
static int cg_path(const struct cg_ctx *c, const char *mount, const char *file, char *buf,
		   size_t size)
{
	int mlen = (int)strnlen(mount, CGROUP_MOUNT_MAX);
	int n;

	if (file)
		n = snprintf(buf, size, "%.*s%.*s/%s", mlen, mount, c->path_len, c->path, file);
	else
		n = snprintf(buf, size, "%.*s%.*s", mlen, mount, c->path_len, c->path);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

/* 1 when the cgroup is a directory under mount, 0 when not there, or -errno. */
static int cg_dir(const struct cg_ctx *c, const char *mount)
{
	char rel[CG_REL_PATH_MAX], full[CG_FULL_PATH_MAX];
	struct stat st;
	int ret;

	if (!mount[0])
		return 0;
	ret = cg_path(c, mount, NULL, rel, sizeof(rel));
	if (!ret)
		ret = sysroot_path(full, sizeof(full), rel);
	if (ret)
		return ret;
	if (stat(full, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	return S_ISDIR(st.st_mode) ? 1 : 0;
}

/*
 * 0 when the cgroup is a directory under at least one of the mounts, else
 * the first error other than "not there", else -ENOENT.
 */
static int cg_any_dir(const struct cg_ctx *c, const char *const *mounts, bool *here, int n)
{
	int i, err = 0, found = 0;

	for (i = 0; i < n; i++) {
		int ret = cg_dir(c, mounts[i]);

		here[i] = ret > 0;
		if (ret > 0)
			found = 1;
		else if (ret < 0 && !err)
			err = ret;
	}
	return found ? 0 : err ? err : -ENOENT;
}

/* Reads <mount><cgroup>/<file> into c->sb. */
static int cg_read(struct cg_ctx *c, const char *mount, const char *file)
{
	char rel[CG_REL_PATH_MAX];
	int ret = cg_path(c, mount, file, rel, sizeof(rel));

	return ret ? ret : sysroot_read(rel, &c->sb);
}

static const char *cg_text(const struct cg_ctx *c)
{
	return strbuf_str(&c->sb);
}

/* A one-number file: 0, -ENODATA for "max", or another -errno. */
static int cg_read_u64(struct cg_ctx *c, const char *mount, const char *file, uint64_t *v)
{
	int ret = cg_read(c, mount, file);

	return ret ? ret : cgroup_parse_u64(cg_text(c), c->sb.len, v);
}

/* The first of the files that reads and holds a CPU list. */
static void cg_read_cpuset(struct cg_ctx *c, const char *mount, const char *effective,
			   const char *configured, struct cgroup_limits *out)
{
	const char *files[] = {effective, configured};
	int i, n;

	for (i = 0; i < 2; i++) {
		if (cg_read(c, mount, files[i]) == 0 &&
		    cgroup_parse_cpuset(cg_text(c), c->sb.len, &n) == 0) {
			out->cpuset_cpus = n;
			out->valid |= CG_LIM_CPUSET;
			return;
		}
	}
}

static void sample_memory(struct cg_ctx *c, const char *mount, const char *current,
			  const char *peak, struct cgroup_sample *out)
{
	uint64_t v;

	if (cg_read_u64(c, mount, current, &v) == 0) {
		out->mem_current_bytes = v;
		out->valid |= CG_MEM;
	}
	if (cg_read_u64(c, mount, peak, &v) == 0) {
		out->mem_peak_bytes = v;
		out->valid |= CG_MEM_PEAK;
	}
	if (cg_read(c, mount, "memory.stat") == 0)
		cgroup_parse_memory_stat(cg_text(c), c->sb.len, out);
}

static int sample_v2(struct cg_ctx *c, const struct cgroup_layout *l, struct cgroup_sample *out)
{
	const char *mount = l->unified;
	bool here;
	int ret = cg_any_dir(c, &mount, &here, 1);

	if (ret)
		return ret;
	if (cg_read(c, mount, "cpu.stat") == 0)
		cgroup_parse_cpu_stat(cg_text(c), c->sb.len, out);
	sample_memory(c, mount, "memory.current", "memory.peak", out);
	if (cg_read(c, mount, "io.stat") == 0)
		cgroup_parse_io_stat(cg_text(c), c->sb.len, out);
	return 0;
}

/*
 * The _recursive blkio files (4.11) count the whole subtree, as v2 and the
 * other v1 files read here do; the plain one only the cgroup's own tasks.
 */
static int sample_v1(struct cg_ctx *c, const struct cgroup_layout *l, struct cgroup_sample *out)
{
	const char *mounts[] = {l->memory, l->cpuacct, l->blkio};
	bool here[3];
	uint64_t v;
	int ret = cg_any_dir(c, mounts, here, 3);

	if (ret)
		return ret;
	if (here[0])
		sample_memory(c, l->memory, "memory.usage_in_bytes", "memory.max_usage_in_bytes",
			      out);
	if (here[1]) {
		if (cg_read_u64(c, l->cpuacct, "cpuacct.usage", &v) == 0) {
			out->cpu_usage_us = v / 1000;
			out->valid |= CG_CPU;
		}
		if (cg_read(c, l->cpuacct, "cpuacct.stat") == 0)
			cgroup_parse_cpuacct_stat(cg_text(c), c->sb.len, sysconf(_SC_CLK_TCK), out);
	}
	if (here[2]) {
		if (cg_read(c, l->blkio, "blkio.throttle.io_service_bytes_recursive") == 0 ||
		    cg_read(c, l->blkio, "blkio.throttle.io_service_bytes") == 0)
			cgroup_parse_blkio_bytes(cg_text(c), c->sb.len, out);
	}
	return 0;
}

int cgroup_read_sample(const struct cgroup_layout *l, const char *cgroup_path,
		       struct cgroup_sample *out)
{
	struct cg_ctx c;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = cg_ctx_init(&c, cgroup_path);
	if (ret)
		return ret;
	if (l->version == CGROUP_V2)
		ret = sample_v2(&c, l, out);
	else if (l->version == CGROUP_V1)
		ret = sample_v1(&c, l, out);
	else
		ret = -ENOENT;
	strbuf_release(&c.sb);
	if (ret)
		memset(out, 0, sizeof(*out));
	return ret;
}

static void set_mem_limit(struct cgroup_limits *out, uint64_t bytes)
{
	out->mem_limit_bytes = bytes;
	out->valid |= CG_LIM_MEM;
}

static int limits_v2(struct cg_ctx *c, const struct cgroup_layout *l, struct cgroup_limits *out)
{
	const char *mount = l->unified;
	bool here;
	double cores;
	uint64_t v;
	int ret = cg_any_dir(c, &mount, &here, 1);

	if (ret)
		return ret;
	cg_read_cpuset(c, mount, "cpuset.cpus.effective", "cpuset.cpus", out);
	if (cg_read(c, mount, "cpu.max") == 0 &&
	    cgroup_parse_cpu_max(cg_text(c), c->sb.len, &cores) == 0) {
		out->cpu_quota_cores = cores;
		out->valid |= CG_LIM_CPU_QUOTA;
	}
	if (cg_read_u64(c, mount, "memory.max", &v) == 0)
		set_mem_limit(out, v);
	return 0;
}

static int limits_v1(struct cg_ctx *c, const struct cgroup_layout *l, struct cgroup_limits *out)
{
	const char *mounts[] = {l->cpuset, l->cpu, l->memory};
	bool here[3];
	uint64_t quota, period, v;
	int ret = cg_any_dir(c, mounts, here, 3);

	if (ret)
		return ret;
	if (here[0])
		cg_read_cpuset(c, l->cpuset, "cpuset.effective_cpus", "cpuset.cpus", out);
	if (here[1] && cg_read(c, l->cpu, "cpu.cfs_quota_us") == 0 &&
	    parse_cfs_quota(cg_text(c), c->sb.len, &quota) == 0 &&
	    cg_read_u64(c, l->cpu, "cpu.cfs_period_us", &period) == 0 && period > 0) {
		out->cpu_quota_cores = (double)quota / (double)period;
		out->valid |= CG_LIM_CPU_QUOTA;
	}
	if (here[2] && cg_read_u64(c, l->memory, "memory.limit_in_bytes", &v) == 0 &&
	    v < V1_MEM_UNLIMITED)
		set_mem_limit(out, v);
	return 0;
}

int cgroup_read_limits(const struct cgroup_layout *l, const char *cgroup_path,
		       struct cgroup_limits *out)
{
	struct cg_ctx c;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = cg_ctx_init(&c, cgroup_path);
	if (ret)
		return ret;
	if (l->version == CGROUP_V2)
		ret = limits_v2(&c, l, out);
	else if (l->version == CGROUP_V1)
		ret = limits_v1(&c, l, out);
	else
		ret = -ENOENT;
	strbuf_release(&c.sb);
	if (ret)
		memset(out, 0, sizeof(*out));
	return ret;
}

/* ---- layout ---- */

#define CG_ROOT "/sys/fs/cgroup"

/* The first of names mounted under /sys/fs/cgroup, into mount; false if none. */
static bool find_mount(char *mount, const char *const *names, int n)
{
	char path[CGROUP_MOUNT_MAX];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), CG_ROOT "/%s", names[i]);
		if (sysroot_exists(path)) {
			memcpy(mount, path, sizeof(path));
			return true;
		}
	}
	return false;
}

int cgroup_detect(struct cgroup_layout *out)
{
	static const char *const memory[] = {"memory"};
	static const char *const cpuacct[] = {"cpuacct", "cpu,cpuacct", "cpuacct,cpu"};
	static const char *const cpu[] = {"cpu", "cpu,cpuacct", "cpuacct,cpu"};
	static const char *const cpuset[] = {"cpuset"};
	static const char *const blkio[] = {"blkio"};
	bool found = false;

	memset(out, 0, sizeof(*out));
	if (sysroot_exists(CG_ROOT "/cgroup.controllers")) {
		out->version = CGROUP_V2;
		snprintf(out->unified, sizeof(out->unified), "%s", CG_ROOT);
		return 0;
	}
	found |= find_mount(out->memory, memory, 1);
	found |= find_mount(out->cpuacct, cpuacct, 3);
	found |= find_mount(out->cpu, cpu, 3);
	found |= find_mount(out->cpuset, cpuset, 1);
	found |= find_mount(out->blkio, blkio, 1);
	out->version = found ? CGROUP_V1 : CGROUP_NONE;
	return found ? 0 : -ENOENT;
}
