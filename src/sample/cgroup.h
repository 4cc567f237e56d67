/*
 * cgroup.h - a job's cgroup: what it used (CPU, memory, I/O) and what it
 * may use (cpuset, CPU quota, memory limit), cgroup v1 or v2.
 *
 * The path given is a cgroup's path relative to the hierarchy root, as in
 * /proc/PID/cgroup ("/slurm_vm/uid_0/job_5", "/kubepods.slice/...").  In v1
 * the same relative path is looked up under each controller's mount
 * (memory, cpuacct, cpuset, cpu, blkio); in v2 under the one unified mount.
 * Everything is read through sysroot (common/sysroot.h), so tests run on
 * fixture trees.
 *
 * The cgroup_parse_* functions are pure: text in, struct out, no I/O, never
 * past len (the text need not be NUL-terminated).  The readers return 0 when
 * the cgroup directory exists (even if some files could not be read: their
 * bits stay clear), -ENOENT when it does not, another -errno otherwise.  A
 * value whose bit is clear in `valid` is missing, never 0.  Thread-safe (no
 * state besides the layout the caller owns).
 */
#ifndef JOBSCOPE_CGROUP_H
#define JOBSCOPE_CGROUP_H

#include <stddef.h>
#include <stdint.h>

enum cgroup_version {
	CGROUP_NONE, /* no cgroup file system found */
	CGROUP_V1,   /* v1 controllers (or hybrid: v1 controllers + an empty v2) */
	CGROUP_V2,   /* unified */
};

#define CGROUP_MOUNT_MAX 256

/* Where the controllers are, relative to sysroot. */
struct cgroup_layout {
	enum cgroup_version version;
	char unified[CGROUP_MOUNT_MAX]; /* v2: "/sys/fs/cgroup" */
	/* v1: each controller's mount, "" when that controller is absent */
	char memory[CGROUP_MOUNT_MAX];
	char cpuacct[CGROUP_MOUNT_MAX];
	char cpu[CGROUP_MOUNT_MAX];
	char cpuset[CGROUP_MOUNT_MAX];
	char blkio[CGROUP_MOUNT_MAX];
};

/*
 * Finds the layout under sysroot's /sys/fs/cgroup: v2 when
 * /sys/fs/cgroup/cgroup.controllers exists, else v1 when any of
 * /sys/fs/cgroup/{memory,cpuacct,cpu,cpuset,blkio} exists (cpu,cpuacct
 * joined mounts are found through either name), else CGROUP_NONE (and
 * -ENOENT).
 */
int cgroup_detect(struct cgroup_layout *out);

enum cgroup_sample_valid {
	CG_CPU = 1u << 0,	  /* cpu_usage_us */
	CG_CPU_SPLIT = 1u << 1,	  /* cpu_user_us, cpu_system_us */
	CG_MEM = 1u << 2,	  /* mem_current_bytes */
	CG_MEM_PEAK = 1u << 3,	  /* mem_peak_bytes */
	CG_MEM_ANON = 1u << 4,	  /* mem_anon_bytes */
	CG_IO = 1u << 5,	  /* io_read_bytes, io_write_bytes */
	CG_MEM_SHMEM = 1u << 6,	  /* mem_shmem_bytes */
	CG_MEM_SWAPCACHED = 1u << 7, /* mem_swapcached_bytes */
	CG_MEM_FILE = 1u << 8,	  /* mem_file_bytes */
};

/* Cumulative counters since the cgroup was created, and gauges. */
struct cgroup_sample {
	uint32_t valid;		    /* enum cgroup_sample_valid */
	uint64_t cpu_usage_us;	    /* v2 cpu.stat usage_usec; v1 cpuacct.usage (ns) / 1000 */
	uint64_t cpu_user_us;	    /* v2 cpu.stat user_usec; v1 cpuacct.stat user (USER_HZ) */
	uint64_t cpu_system_us;	    /* v2 cpu.stat system_usec; v1 cpuacct.stat system */
	uint64_t mem_current_bytes; /* v2 memory.current; v1 memory.usage_in_bytes */
	uint64_t mem_peak_bytes;    /* v2 memory.peak (Linux >= 5.19); v1 memory.max_usage_in_bytes */
	uint64_t mem_anon_bytes;    /* memory.stat: v2 "anon", v1 "total_rss" (else "rss") */
	uint64_t mem_shmem_bytes;   /* memory.stat: v2 "shmem", v1 "total_shmem" (else "shmem") */
	uint64_t mem_swapcached_bytes; /* memory.stat: v2 "swapcached" (Linux >= 6.1); v1 none */
	uint64_t mem_file_bytes;    /* memory.stat: v2 "file", v1 "total_cache" (else "cache") */
	uint64_t io_read_bytes;	    /* v2 io.stat rbytes summed over devices; v1 */
	uint64_t io_write_bytes;    /* blkio.throttle.io_service_bytes "Total Read/Write" */
};

enum cgroup_limits_valid {
	CG_LIM_CPUSET = 1u << 0,    /* cpuset_cpus */
	CG_LIM_CPU_QUOTA = 1u << 1, /* cpu_quota_cores */
	CG_LIM_MEM = 1u << 2,	    /* mem_limit_bytes */
};

/* What the cgroup may use.  "No limit" (max, -1, ~2^63) leaves the bit clear. */
struct cgroup_limits {
	uint32_t valid; /* enum cgroup_limits_valid */
	int cpuset_cpus; /* CPUs in cpuset.cpus.effective (v2) / cpuset.effective_cpus or cpuset.cpus (v1) */
	double cpu_quota_cores;	  /* v2 cpu.max; v1 cpu.cfs_quota_us / cpu.cfs_period_us */
	uint64_t mem_limit_bytes; /* v2 memory.max; v1 memory.limit_in_bytes */
};

/* cgroup_path: relative to the hierarchy root, starting with '/'. */
int cgroup_read_sample(const struct cgroup_layout *l, const char *cgroup_path,
		       struct cgroup_sample *out);
int cgroup_read_limits(const struct cgroup_layout *l, const char *cgroup_path,
		       struct cgroup_limits *out);

/*
 * Pure parsers.  0 or -EINVAL (not that file's format); a key that is
 * absent leaves its field and bit alone, so they can be combined.
 */
/* v2 cpu.stat: usage_usec, user_usec, system_usec. */
int cgroup_parse_cpu_stat(const char *text, size_t len, struct cgroup_sample *out);
/* v1 cpuacct.stat: "user N\nsystem N\n" in USER_HZ ticks. */
int cgroup_parse_cpuacct_stat(const char *text, size_t len, long hz, struct cgroup_sample *out);
/*
 * v2 memory.stat "anon", "shmem", "swapcached", "file"; v1 memory.stat
 * "total_rss", "total_shmem", "total_cache" (preferred: the subtree) or
 * "rss", "shmem", "cache".
 */
int cgroup_parse_memory_stat(const char *text, size_t len, struct cgroup_sample *out);
/* v2 io.stat: "MAJ:MIN rbytes=N wbytes=N rios=N ..." per line, summed. */
int cgroup_parse_io_stat(const char *text, size_t len, struct cgroup_sample *out);
/* v1 blkio.throttle.io_service_bytes: "MAJ:MIN Read N" ... "Total N". */
int cgroup_parse_blkio_bytes(const char *text, size_t len, struct cgroup_sample *out);
/* A single unsigned number (memory.current, memory.max, cpuacct.usage, ...); "max" -> -ENODATA. */
int cgroup_parse_u64(const char *text, size_t len, uint64_t *out);
/*
 * A cpuset list such as "0-3,8,10-11\n" -> the number of CPUs in it.
 * Ranges must ascend without overlap, as the kernel writes them; blanks
 * around numbers are allowed.  Empty list: -ENODATA (in v2, "inherit").
 */
int cgroup_parse_cpuset(const char *text, size_t len, int *ncpus);
/* v2 cpu.max: "200000 100000" -> 2.0 cores; "max ..." -> -ENODATA. */
int cgroup_parse_cpu_max(const char *text, size_t len, double *cores);

#endif
