/*
 * host.c - parsers for the machine-wide /proc files and the host sampler
 * that reads them every tick.
 *
 * The parsers walk the text with a bounded cursor (struct scan) and never
 * look past len.  Counter files (stat, diskstats, net/dev) are all or
 * nothing: a line that does not parse fails the file, because silently
 * dropping one disk would make the summed counters run backwards.  Gauge
 * files (meminfo) only lose the field that did not parse.
 */
#include "host.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "common/sysroot.h"
#include "common/timeutil.h"
#include "common/scan.h"

/* /proc/stat of a 1024-CPU machine with thousands of IRQs is a few 100 kB. */
#define HOST_READ_MAX ((size_t)4 << 20)

/* A name field of at most HOST_NAME_MAX_LEN - 1 bytes, ended by stop or blank. */
static int scan_name(struct scan *s, char stop, char *name)
{
	const char *start;
	size_t n;

	scan_blanks(s);
	start = s->pos;
	while (s->pos < s->end && *s->pos != stop && !scan_is_blank(*s->pos) && *s->pos != '\n' &&
	       *s->pos != '\0')
		s->pos++;
	n = (size_t)(s->pos - start);
	if (n == 0 || n >= HOST_NAME_MAX_LEN)
		return -EINVAL;
	memcpy(name, start, n);
	name[n] = '\0';
	return 0;
}

/*
 * "user nice system idle iowait irq softirq steal guest guest_nice": 2.4
 * kernels stop after idle, 2.6 ones after softirq or steal; what is missing
 * is 0.  guest time is already counted in user, so it is not added again.
 */
static int parse_cpu_times(struct scan *line, long hz, struct cpu_times *t)
{
	uint64_t v[8] = {0};
	int i, ret;

	for (i = 0; i < 8; i++) {
		scan_blanks(line);
		if (scan_at_end(line))
			break;
		ret = scan_u64(line, &v[i]);
		if (ret)
			return ret;
	}
	if (i < 4)
		return -EINVAL;
	t->user_ms = scan_ticks_to_ms(v[0], hz);
	t->nice_ms = scan_ticks_to_ms(v[1], hz);
	t->system_ms = scan_ticks_to_ms(v[2], hz);
	t->idle_ms = scan_ticks_to_ms(v[3], hz);
	t->iowait_ms = scan_ticks_to_ms(v[4], hz);
	t->irq_ms = scan_ticks_to_ms(v[5], hz);
	t->softirq_ms = scan_ticks_to_ms(v[6], hz);
	t->steal_ms = scan_ticks_to_ms(v[7], hz);
	return 0;
}

/* cpuN lines past HOST_MAX_CPUS are checked but not kept. */
static int parse_cpu_line(struct scan *line, long hz, struct host_cpu_stat *out, bool *have_total)
{
	struct cpu_times t;
	uint64_t id;
	int ret;

	line->pos += 3;
	if (!scan_at_end(line) && scan_is_blank(*line->pos)) {
		*have_total = true;
		return parse_cpu_times(line, hz, &out->total);
	}
	ret = scan_digits(line, &id);
	if (ret)
		return ret;
	if (id > UINT16_MAX || scan_at_end(line) || !scan_is_blank(*line->pos))
		return -EINVAL;
	ret = parse_cpu_times(line, hz, &t);
	if (ret)
		return ret;
	if (out->ncpus < HOST_MAX_CPUS) {
		out->cpu_id[out->ncpus] = (uint16_t)id;
		out->cpu[out->ncpus] = t;
		out->ncpus++;
	}
	return 0;
}

/*
 * Only the scalar fields and the cpu[] entries that get filled are written:
 * this runs every tick and cpu[] is 64 kB.
 */
int host_parse_stat(const char *text, size_t len, long hz, struct host_cpu_stat *out)
{
	struct scan s = {text, text + len};
	struct scan line;
	bool have_total = false;
	uint64_t btime = 0;
	int ret = 0;

	memset(&out->total, 0, sizeof(out->total));
	out->ncpus = 0;
	out->btime_s = 0;
	out->ctxt = 0;
	out->procs_running = 0;
	out->procs_blocked = 0;
	while (scan_line(&s, &line)) {
		if (line.end - line.pos >= 3 && memcmp(line.pos, "cpu", 3) == 0)
			ret = parse_cpu_line(&line, hz, out, &have_total);
		else if (scan_word(&line, "btime"))
			ret = scan_u64(&line, &btime);
		else if (scan_word(&line, "ctxt"))
			ret = scan_u64(&line, &out->ctxt);
		else if (scan_word(&line, "procs_running"))
			ret = scan_u64(&line, &out->procs_running);
		else if (scan_word(&line, "procs_blocked"))
			ret = scan_u64(&line, &out->procs_blocked);
		/* intr, softirq, processes and anything newer are skipped */
		if (ret)
			return ret;
	}
	if (!have_total || btime > INT64_MAX)
		return -EINVAL;
	out->btime_s = (int64_t)btime;
	return 0;
}

int host_parse_meminfo(const char *text, size_t len, struct host_meminfo *out)
{
	static const struct {
		const char *key;
		uint32_t bit;
		size_t offset;
	} mem_keys[] = {
	    {"MemTotal", MEMINFO_TOTAL, offsetof(struct host_meminfo, total_bytes)},
	    {"MemFree", MEMINFO_FREE, offsetof(struct host_meminfo, free_bytes)},
	    {"MemAvailable", MEMINFO_AVAILABLE, offsetof(struct host_meminfo, available_bytes)},
	    {"Buffers", MEMINFO_BUFFERS, offsetof(struct host_meminfo, buffers_bytes)},
	    {"Cached", MEMINFO_CACHED, offsetof(struct host_meminfo, cached_bytes)},
	    {"SwapTotal", MEMINFO_SWAP_TOTAL, offsetof(struct host_meminfo, swap_total_bytes)},
	    {"SwapFree", MEMINFO_SWAP_FREE, offsetof(struct host_meminfo, swap_free_bytes)},
	    {"Shmem", MEMINFO_SHMEM, offsetof(struct host_meminfo, shmem_bytes)},
	};
	struct host_meminfo mi;
	struct scan s = {text, text + len};
	struct scan line;
	size_t i;

	memset(&mi, 0, sizeof(mi));
	while (scan_line(&s, &line)) {
		for (i = 0; i < sizeof(mem_keys) / sizeof(mem_keys[0]); i++) {
			uint64_t bytes;

			if (!scan_key(&line, mem_keys[i].key))
				continue;
			/* a line cut short leaves its field missing */
			if (scan_kb(&line, &bytes))
				break;
			memcpy((char *)&mi + mem_keys[i].offset, &bytes, sizeof(bytes));
			mi.valid |= mem_keys[i].bit;
			break;
		}
	}
	if (!mi.valid)
		return -EINVAL;
	*out = mi;
	return 0;
}

/*
 * "major minor name" and then, per Documentation/admin-guide/iostats.rst,
 * 11 fields (all kernels since 2.6.25), 15 (with discards, 4.18) or 17
 * (with flushes, 5.5).  Fields past the first 11 are not used.
 */
static int parse_disk_line(struct scan *line, struct disk_stat *d)
{
	uint64_t id, v[11];
	int i, ret;

	for (i = 0; i < 2; i++) {
		ret = scan_u64(line, &id);
		if (ret)
			return ret;
	}
	ret = scan_name(line, ' ', d->name);
	if (ret)
		return ret;
	for (i = 0; i < 11; i++) {
		ret = scan_u64(line, &v[i]);
		if (ret)
			return ret;
	}
	/* v[]: reads merged sectors ms writes merged sectors ms in_flight io_ms weighted */
	if (v[2] > UINT64_MAX / 512 || v[6] > UINT64_MAX / 512)
		return -EINVAL;
	d->reads = v[0];
	d->read_bytes = v[2] * 512;
	d->writes = v[4];
	d->write_bytes = v[6] * 512;
	d->io_ms = v[9];
	return 0;
}

/* The next disk of diskstats: 1, or 0 at the end, or -EINVAL. */
static int diskstats_next(struct scan *s, struct disk_stat *d)
{
	struct scan line;
	int ret;

	if (!scan_nonblank_line(s, &line))
		return 0;
	ret = parse_disk_line(&line, d);
	return ret ? ret : 1;
}

int host_parse_diskstats(const char *text, size_t len, struct disk_stat *out, int max, int *n)
{
	struct scan s = {text, text + len};
	struct disk_stat d;
	int count = 0, ret;

	*n = 0;
	while ((ret = diskstats_next(&s, &d)) > 0) {
		if (count < max)
			out[count++] = d;
	}
	if (ret < 0)
		return ret;
	*n = count;
	return 0;
}

/*
 * net/dev opens with two header lines, both with '|' between the column
 * groups.  Each line after is "name: rx_bytes rx_packets errs drop fifo
 * frame compressed multicast tx_bytes tx_packets ..." where the kernel pads
 * the name to 6 columns and rx_bytes to 8, so a long counter follows the
 * colon without a space ("eth0:123456789").  Names cannot contain ':'.
 */
static int netdev_begin(struct scan *s)
{
	struct scan line;
	int i;

	for (i = 0; i < 2; i++) {
		if (!scan_line(s, &line) || !memchr(line.pos, '|', (size_t)(line.end - line.pos)))
			return -EINVAL;
	}
	return 0;
}

static int parse_net_line(struct scan *line, struct net_stat *ns)
{
	uint64_t v[10];
	int i, ret;

	ret = scan_name(line, ':', ns->name);
	if (ret)
		return ret;
	if (scan_at_end(line) || *line->pos != ':')
		return -EINVAL;
	line->pos++;
	for (i = 0; i < 10; i++) {
		ret = scan_u64(line, &v[i]);
		if (ret)
			return ret;
	}
	ns->rx_bytes = v[0];
	ns->rx_packets = v[1];
	ns->tx_bytes = v[8];
	ns->tx_packets = v[9];
	return 0;
}

/* The next interface of net/dev: 1, or 0 at the end, or -EINVAL. */
static int netdev_next(struct scan *s, struct net_stat *ns)
{
	struct scan line;
	int ret;

	if (!scan_nonblank_line(s, &line))
		return 0;
	ret = parse_net_line(&line, ns);
	return ret ? ret : 1;
}

int host_parse_netdev(const char *text, size_t len, struct net_stat *out, int max, int *n)
{
	struct scan s = {text, text + len};
	struct net_stat ns;
	int count = 0, ret;

	*n = 0;
	ret = netdev_begin(&s);
	if (ret)
		return ret;
	while ((ret = netdev_next(&s, &ns)) > 0) {
		if (count < max)
			out[count++] = ns;
	}
	if (ret < 0)
		return ret;
	*n = count;
	return 0;
}

/* "0.52" -> 520; the kernel prints two decimals, more are cut. */
static int scan_milli(struct scan *s, uint32_t *out)
{
	uint64_t whole, frac = 0;
	int digits = 0, ret;

	scan_blanks(s);
	ret = scan_digits(s, &whole);
	if (ret)
		return ret;
	if (!scan_at_end(s) && *s->pos == '.') {
		s->pos++;
		while (s->pos < s->end && *s->pos >= '0' && *s->pos <= '9') {
			if (digits < 3) {
				frac = frac * 10 + (uint64_t)(*s->pos - '0');
				digits++;
			}
			s->pos++;
		}
		if (digits == 0)
			return -EINVAL;
	}
	for (; digits < 3; digits++)
		frac *= 10;
	if (!scan_at_delim(s) || whole > (UINT32_MAX - frac) / 1000)
		return -EINVAL;
	*out = (uint32_t)(whole * 1000 + frac);
	return 0;
}

/* "0.52 0.58 0.59 2/345 12345": the last pid is not kept. */
int host_parse_loadavg(const char *text, size_t len, struct host_loadavg *out)
{
	struct host_loadavg la;
	struct scan s = {text, text + len};
	uint64_t running, total;
	int ret;

	ret = scan_milli(&s, &la.load1_milli);
	if (!ret)
		ret = scan_milli(&s, &la.load5_milli);
	if (!ret)
		ret = scan_milli(&s, &la.load15_milli);
	if (ret)
		return ret;
	scan_blanks(&s);
	if (scan_digits(&s, &running) || scan_at_end(&s) || *s.pos != '/')
		return -EINVAL;
	s.pos++;
	if (scan_digits(&s, &total) || !scan_at_delim(&s))
		return -EINVAL;
	if (running > UINT32_MAX || total > UINT32_MAX)
		return -EINVAL;
	la.running = (uint32_t)running;
	la.total = (uint32_t)total;
	*out = la;
	return 0;
}

/* The total=N field of one "some"/"full" line. */
static int parse_psi_total(struct scan *line, uint64_t *total_us)
{
	while (!scan_at_end(line)) {
		scan_blanks(line);
		if (line->end - line->pos > 6 && memcmp(line->pos, "total=", 6) == 0) {
			line->pos += 6;
			if (scan_digits(line, total_us) || !scan_at_delim(line))
				return -EINVAL;
			return 0;
		}
		while (!scan_at_delim(line))
			line->pos++;
	}
	return -EINVAL;
}

int host_parse_pressure(const char *text, size_t len, struct host_psi *out)
{
	struct host_psi psi = {0};
	struct scan s = {text, text + len};
	struct scan line;
	int ret;

	while (scan_line(&s, &line)) {
		if (scan_word(&line, "some")) {
			ret = parse_psi_total(&line, &psi.some_total_us);
			psi.some_valid = true;
		} else if (scan_word(&line, "full")) {
			ret = parse_psi_total(&line, &psi.full_total_us);
			psi.full_valid = true;
		} else {
			continue;
		}
		if (ret)
			return ret;
	}
	if (!psi.some_valid && !psi.full_valid)
		return -EINVAL;
	*out = psi;
	return 0;
}

void host_sampler_init(struct host_sampler *hs, long hz)
{
	memset(hs, 0, sizeof(*hs));
	strbuf_init(&hs->buf, HOST_READ_MAX);
	hs->hz = hz > 0 ? hz : 100;
	rapl_init(&hs->rapl);
}

void host_sampler_release(struct host_sampler *hs)
{
	strbuf_release(&hs->buf);
	rapl_release(&hs->rapl);
	hs->nknown = 0;
}

/* Only whole disks have a device link in /sys/block; partitions have no entry. */
static bool disk_probe_whole(const char *name)
{
	char path[HOST_NAME_MAX_LEN + 32];

	if (strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	snprintf(path, sizeof(path), "/sys/block/%s/device", name);
	return sysroot_exists(path);
}

/*
 * diskstats lists the disks in the same order every tick, so the search
 * starts where the last one was found (*hint) and usually hits at once.
 * Once the cache is full, new names are probed every time.
 */
static bool disk_is_whole(struct host_sampler *hs, const char *name, int *hint)
{
	int max = (int)(sizeof(hs->known_whole) / sizeof(hs->known_whole[0]));
	bool whole;
	int k, i;

	for (k = 0; k < hs->nknown; k++) {
		i = (*hint + k) % hs->nknown;
		if (strcmp(hs->known_name[i], name) == 0) {
			*hint = i + 1;
			return hs->known_whole[i];
		}
	}
	whole = disk_probe_whole(name);
	if (hs->nknown < max) {
		i = hs->nknown++;
		memcpy(hs->known_name[i], name, HOST_NAME_MAX_LEN);
		hs->known_whole[i] = whole;
		*hint = i + 1;
	}
	return whole;
}

/* The sums cover every whole disk, also those past HOST_MAX_DISKS. */
static int sample_disks(struct host_sampler *hs, struct host_sample *out)
{
	struct scan s;
	struct disk_stat d;
	int hint = 0, ret;

	ret = sysroot_read("/proc/diskstats", &hs->buf);
	if (ret)
		return ret;
	s.pos = strbuf_str(&hs->buf);
	s.end = s.pos + hs->buf.len;
	while ((ret = diskstats_next(&s, &d)) > 0) {
		if (!disk_is_whole(hs, d.name, &hint))
			continue;
		if (out->ndisks < HOST_MAX_DISKS)
			out->disks[out->ndisks++] = d;
		out->disk_reads += d.reads;
		out->disk_writes += d.writes;
		out->disk_read_bytes += d.read_bytes;
		out->disk_write_bytes += d.write_bytes;
	}
	return ret;
}

static int sample_nets(struct host_sampler *hs, struct host_sample *out)
{
	struct scan s;
	struct net_stat ns;
	int ret;

	ret = sysroot_read("/proc/net/dev", &hs->buf);
	if (ret)
		return ret;
	s.pos = strbuf_str(&hs->buf);
	s.end = s.pos + hs->buf.len;
	ret = netdev_begin(&s);
	if (ret)
		return ret;
	while ((ret = netdev_next(&s, &ns)) > 0) {
		if (strcmp(ns.name, "lo") == 0)
			continue;
		if (out->nnets < HOST_MAX_NETS)
			out->nets[out->nnets++] = ns;
		out->net_rx_bytes += ns.rx_bytes;
		out->net_tx_bytes += ns.tx_bytes;
		out->net_rx_packets += ns.rx_packets;
		out->net_tx_packets += ns.tx_packets;
	}
	return ret;
}

static void clear_disks(struct host_sample *out)
{
	out->ndisks = 0;
	out->disk_reads = 0;
	out->disk_writes = 0;
	out->disk_read_bytes = 0;
	out->disk_write_bytes = 0;
}

static void clear_nets(struct host_sample *out)
{
	out->nnets = 0;
	out->net_rx_bytes = 0;
	out->net_tx_bytes = 0;
	out->net_rx_packets = 0;
	out->net_tx_packets = 0;
}

static bool sample_psi(struct host_sampler *hs, const char *path, struct host_psi *psi)
{
	if (sysroot_read(path, &hs->buf) == 0 &&
	    host_parse_pressure(strbuf_str(&hs->buf), hs->buf.len, psi) == 0)
		return true;
	memset(psi, 0, sizeof(*psi));
	return false;
}

int host_fs_from_statvfs(uint64_t blocks, uint64_t bfree, uint64_t bavail, uint64_t frsize,
			 struct host_fs *out)
{
	uint64_t used, avail;

	memset(out, 0, sizeof(*out));
	if (frsize == 0 || bfree > blocks || blocks == 0)
		return -EINVAL;
	if (__builtin_mul_overflow(blocks - bfree, frsize, &used) ||
	    __builtin_mul_overflow(bavail, frsize, &avail) ||
	    __builtin_add_overflow(used, avail, &out->total_bytes))
		return -EOVERFLOW;
	if (out->total_bytes == 0)
		return -EINVAL;
	out->used_bytes = used;
	return 0;
}

/* The root file system under the sysroot: a container's --sysroot /host is the host's root. */
static int sample_root_fs(struct host_fs *out)
{
	char path[4096];
	struct statvfs sv;
	int ret = sysroot_path(path, sizeof(path), "/");

	memset(out, 0, sizeof(*out));
	if (ret)
		return ret;
	if (statvfs(path, &sv) != 0)
		return -errno;
	return host_fs_from_statvfs(sv.f_blocks, sv.f_bfree, sv.f_bavail, sv.f_frsize, out);
}

int host_sample_read(struct host_sampler *hs, struct host_sample *out)
{
	int ret;

	out->valid = 0;
	out->nenergy = 0;
	ret = sysroot_read("/proc/stat", &hs->buf);
	if (ret)
		return ret;
	ret = host_parse_stat(strbuf_str(&hs->buf), hs->buf.len, hs->hz, &out->cpu);
	if (ret)
		return ret;
	out->valid |= HOST_HAS_CPU;

	if (sysroot_read("/proc/meminfo", &hs->buf) == 0 &&
	    host_parse_meminfo(strbuf_str(&hs->buf), hs->buf.len, &out->mem) == 0)
		out->valid |= HOST_HAS_MEM;
	else
		memset(&out->mem, 0, sizeof(out->mem));

	if (sysroot_read("/proc/loadavg", &hs->buf) == 0 &&
	    host_parse_loadavg(strbuf_str(&hs->buf), hs->buf.len, &out->load) == 0)
		out->valid |= HOST_HAS_LOAD;
	else
		memset(&out->load, 0, sizeof(out->load));

	if (sample_psi(hs, "/proc/pressure/cpu", &out->psi_cpu))
		out->valid |= HOST_HAS_PSI_CPU;
	if (sample_psi(hs, "/proc/pressure/memory", &out->psi_mem))
		out->valid |= HOST_HAS_PSI_MEM;
	if (sample_psi(hs, "/proc/pressure/io", &out->psi_io))
		out->valid |= HOST_HAS_PSI_IO;

	clear_disks(out);
	if (sample_disks(hs, out) == 0)
		out->valid |= HOST_HAS_DISK;
	else
		clear_disks(out);

	clear_nets(out);
	if (sample_nets(hs, out) == 0)
		out->valid |= HOST_HAS_NET;
	else
		clear_nets(out);

	if (sample_root_fs(&out->root_fs) == 0)
		out->valid |= HOST_HAS_ROOT_FS;
	out->nenergy = rapl_read(&hs->rapl, out->energy, RAPL_MAX_ZONES);
	if (out->nenergy > 0)
		out->valid |= HOST_HAS_ENERGY;
	return 0;
}

int host_online_cpus(const struct host_sample *s)
{
	if (!(s->valid & HOST_HAS_CPU) || s->cpu.ncpus < 1)
		return 1;
	return s->cpu.ncpus;
}

/*
 * The wall clock minus the boot clock, taken in ns and only then cut to
 * ms: two clocks each cut to ms first differ by one ms or the other
 * depending on the instant they were read, and two processes (two agents,
 * an agent before and after a restart) would date one process's start,
 * and key its job, 1 ms apart.  The wall clock is read between two reads
 * of the boot clock, and of a few such triples the tightest is kept (a
 * preemption inside one moves it): processes agree unless the offset lies
 * within about a microsecond of a ms boundary.
 */
int64_t host_boot_ms(const struct host_sample *h)
{
	int64_t best_span = -1, offset_ns = 0;

	if (sysroot_get()[0])
		return h->cpu.btime_s * 1000; /* a fixture tree: its own boot */
	for (int i = 0; i < 5; i++) {
		struct timespec b1, wall, b2;
		int64_t span;

		if (clock_gettime(CLOCK_BOOTTIME, &b1) || clock_gettime(CLOCK_REALTIME, &wall) ||
		    clock_gettime(CLOCK_BOOTTIME, &b2))
			break;
		span = timespec_ns(&b2) - timespec_ns(&b1);
		if (best_span < 0 || span < best_span) {
			best_span = span;
			offset_ns = timespec_ns(&wall) - timespec_ns(&b1) - span / 2;
		}
	}
	if (best_span >= 0)
		return offset_ns / 1000000; /* booted after 1970: positive */
	return h->cpu.btime_s * 1000;
}

uint64_t cpu_busy_ms(const struct cpu_times *t)
{
	return t->user_ms + t->nice_ms + t->system_ms + t->irq_ms + t->softirq_ms + t->steal_ms;
}

uint64_t cpu_user_mode_ms(const struct cpu_times *t)
{
	return t->user_ms + t->nice_ms;
}

uint64_t cpu_system_mode_ms(const struct cpu_times *t)
{
	return t->system_ms + t->irq_ms + t->softirq_ms;
}

uint64_t cpu_idle_ms(const struct cpu_times *t)
{
	return t->idle_ms + t->iowait_ms;
}

double cpu_busy_pct(const struct cpu_times *before, const struct cpu_times *after)
{
	uint64_t b0 = cpu_busy_ms(before), b1 = cpu_busy_ms(after);
	uint64_t i0 = cpu_idle_ms(before), i1 = cpu_idle_ms(after);

	if (b1 < b0 || i1 < i0 || (b1 - b0) + (i1 - i0) == 0)
		return NAN;
	return (double)(b1 - b0) * 100.0 / (double)((b1 - b0) + (i1 - i0));
}
