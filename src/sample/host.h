/*
 * host.h - whole-machine readings: /proc/stat, /proc/meminfo,
 * /proc/diskstats, /proc/net/dev, /proc/loadavg, /proc/pressure/{cpu,memory,io}.
 *
 * Parsers (host_parse_*) take text and fill structs, no I/O, never read past
 * len, return 0 or -EINVAL.  host_sampler reads the files through sysroot
 * and fills a host_sample; a file that is missing (e.g. no /proc/pressure on
 * an old kernel) clears its bit in `valid` and the rest is still sampled.
 *
 * Units: CPU times in milliseconds (from USER_HZ ticks), sizes in bytes,
 * disk I/O in bytes (diskstats sectors are always 512 bytes), pressure
 * totals in microseconds, load averages in thousandths.
 */
#ifndef JOBSCOPE_HOST_H
#define JOBSCOPE_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "rapl.h"

#define HOST_MAX_CPUS	  1024
#define HOST_MAX_DISKS	  64
#define HOST_MAX_NETS	  64
#define HOST_NAME_MAX_LEN 32

/* One "cpu" or "cpuN" line, converted to milliseconds. */
struct cpu_times {
	uint64_t user_ms;
	uint64_t nice_ms;
	uint64_t system_ms;
	uint64_t idle_ms;
	uint64_t iowait_ms;
	uint64_t irq_ms;
	uint64_t softirq_ms;
	uint64_t steal_ms;
};

/*
 * "CPU busy", defined once: busy is user + nice + system + irq + softirq +
 * steal, idle is idle + iowait (a CPU waiting on I/O could run something
 * else).  cpu_busy_pct is the busy share of the time between two readings,
 * 0-100; NAN when it cannot be known: no time passed, or either sum went
 * back (the readings are of two boots, or a counter was reset), whose
 * difference would be a made-up figure.
 */
uint64_t cpu_busy_ms(const struct cpu_times *t);
/* The busy time's parts as node_exporter-style modes: user (user + nice)
 * and system (system + irq + softirq); steal is neither. */
uint64_t cpu_user_mode_ms(const struct cpu_times *t);
uint64_t cpu_system_mode_ms(const struct cpu_times *t);
uint64_t cpu_idle_ms(const struct cpu_times *t);
double cpu_busy_pct(const struct cpu_times *before, const struct cpu_times *after);

struct host_cpu_stat {
	struct cpu_times total;
	int ncpus;			/* cpuN lines seen (online CPUs) */
	uint16_t cpu_id[HOST_MAX_CPUS]; /* N of each cpuN line */
	struct cpu_times cpu[HOST_MAX_CPUS];
	int64_t btime_s; /* boot time, seconds since the epoch */
	uint64_t ctxt;
	uint64_t procs_running;
	uint64_t procs_blocked;
};

enum meminfo_valid {
	MEMINFO_TOTAL = 1u << 0,
	MEMINFO_FREE = 1u << 1,
	MEMINFO_AVAILABLE = 1u << 2,
	MEMINFO_BUFFERS = 1u << 3,
	MEMINFO_CACHED = 1u << 4,
	MEMINFO_SWAP_TOTAL = 1u << 5,
	MEMINFO_SWAP_FREE = 1u << 6,
	MEMINFO_SHMEM = 1u << 7,
};

struct host_meminfo {
	uint32_t valid; /* enum meminfo_valid */
	uint64_t total_bytes;
	uint64_t free_bytes;
	uint64_t available_bytes;
	uint64_t buffers_bytes;
	uint64_t cached_bytes;
	uint64_t swap_total_bytes;
	uint64_t swap_free_bytes;
	uint64_t shmem_bytes;
};

struct disk_stat {
	char name[HOST_NAME_MAX_LEN];
	uint64_t reads; /* completed */
	uint64_t read_bytes;
	uint64_t writes; /* completed */
	uint64_t write_bytes;
	uint64_t io_ms; /* time spent doing I/O */
};

struct net_stat {
	char name[HOST_NAME_MAX_LEN];
	uint64_t rx_bytes;
	uint64_t rx_packets;
	uint64_t tx_bytes;
	uint64_t tx_packets;
};

struct host_loadavg {
	uint32_t load1_milli;
	uint32_t load5_milli;
	uint32_t load15_milli;
	uint32_t running; /* runnable scheduling entities */
	uint32_t total;
};

/* One /proc/pressure/X file. "full" is absent from cpu on older kernels. */
struct host_psi {
	bool some_valid;
	bool full_valid;
	uint64_t some_total_us;
	uint64_t full_total_us;
};

/* hz: clock ticks per second, to convert to ms. */
int host_parse_stat(const char *text, size_t len, long hz, struct host_cpu_stat *out);
int host_parse_meminfo(const char *text, size_t len, struct host_meminfo *out);
/* Fills up to max entries (every line, partitions included); *n = count. */
int host_parse_diskstats(const char *text, size_t len, struct disk_stat *out, int max, int *n);
int host_parse_netdev(const char *text, size_t len, struct net_stat *out, int max, int *n);
int host_parse_loadavg(const char *text, size_t len, struct host_loadavg *out);
int host_parse_pressure(const char *text, size_t len, struct host_psi *out);

enum host_valid {
	HOST_HAS_CPU = 1u << 0,
	HOST_HAS_MEM = 1u << 1,
	HOST_HAS_DISK = 1u << 2,
	HOST_HAS_NET = 1u << 3,
	HOST_HAS_LOAD = 1u << 4,
	HOST_HAS_PSI_CPU = 1u << 5,
	HOST_HAS_PSI_MEM = 1u << 6,
	HOST_HAS_PSI_IO = 1u << 7,
	HOST_HAS_ROOT_FS = 1u << 8,
	HOST_HAS_ENERGY = 1u << 9, /* at least one RAPL zone (rapl.h) */
};

/*
 * A file system's use as psutil.disk_usage() counts it (gswarm's
 * disk_util): used = (f_blocks - f_bfree) * f_frsize, and total the room an
 * unprivileged user has, used + f_bavail * f_frsize, so that
 * used / total * 100 is psutil's percent exactly (before it rounds to one
 * decimal).  The blocks reserved for root are in neither.
 */
struct host_fs {
	uint64_t used_bytes;
	uint64_t total_bytes;
};

/*
 * statvfs's counts to a host_fs: -EINVAL when they cannot be right (more
 * free blocks than blocks, a zero fragment size, nothing at all), -EOVERFLOW
 * past 2^64 bytes.  Does no I/O.
 */
int host_fs_from_statvfs(uint64_t blocks, uint64_t bfree, uint64_t bavail, uint64_t frsize,
			 struct host_fs *out);

/*
 * One reading of the machine.  disks[] holds whole disks only (those with a
 * /sys/block/NAME/device link: partitions, loop, ram and zram devices are
 * left out); nets[] every interface but "lo".  disk_* and net_* are the sums.
 */
struct host_sample {
	uint32_t valid; /* enum host_valid */
	struct host_cpu_stat cpu;
	struct host_meminfo mem;
	struct host_loadavg load;
	struct host_psi psi_cpu;
	struct host_psi psi_mem;
	struct host_psi psi_io;
	int ndisks;
	struct disk_stat disks[HOST_MAX_DISKS];
	int nnets;
	struct net_stat nets[HOST_MAX_NETS];
	uint64_t disk_read_bytes;
	uint64_t disk_write_bytes;
	uint64_t disk_reads;
	uint64_t disk_writes;
	uint64_t net_rx_bytes;
	uint64_t net_tx_bytes;
	uint64_t net_rx_packets;
	uint64_t net_tx_packets;
	struct host_fs root_fs; /* the root file system (statvfs of the sysroot's "/") */
	int nenergy;		/* RAPL zones read (rapl.h), 0: none */
	struct rapl_reading energy[RAPL_MAX_ZONES];
};

struct host_sampler {
	struct strbuf buf;
	long hz;
	/* whole-disk decisions cached by name; refreshed when a new name shows up */
	int nknown;
	char known_name[HOST_MAX_DISKS * 4][HOST_NAME_MAX_LEN];
	bool known_whole[HOST_MAX_DISKS * 4];
	struct rapl rapl;
};

void host_sampler_init(struct host_sampler *hs, long hz);
void host_sampler_release(struct host_sampler *hs);
/* 0 when at least /proc/stat was read; -errno when nothing could be. */
int host_sample_read(struct host_sampler *hs, struct host_sample *out);
/* Online CPUs from /proc/stat's cpuN lines (>= 1). */
int host_online_cpus(const struct host_sample *s);

/*
 * When the kernel booted, ms since the epoch (process start times count
 * from it): CLOCK_REALTIME minus CLOCK_BOOTTIME on the real root, the
 * same in every process of the node (but within about a microsecond of a
 * ms boundary), else the sample's btime.
 */
int64_t host_boot_ms(const struct host_sample *h);

#endif
