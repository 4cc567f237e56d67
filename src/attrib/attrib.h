/*
 * attrib.h - which job does a process belong to: the parsing layer.
 *
 * Pure functions over text already read by someone else: the text of
 * /proc/PID/cgroup, the raw bytes of /proc/PID/environ, and the cgroup
 * files cpuset.cpus(.effective), cpu.max and memory.max.  They do no I/O,
 * allocate nothing, keep no state (so they are thread-safe), and never read
 * past len: the text need not be NUL-terminated and may be any bytes.
 *
 * Errors: 0 or -errno.  -EINVAL means the text is not what the function
 * parses; -ENODATA means a well-formed file that sets no limit ("max", an
 * empty cpuset).  On error *out is left untouched.  A field the text did not
 * give is flagged missing (a validity bit, -1, or an empty string), never 0.
 * The cgroup path formats recognised are those of reference/cgroups.md.
 */
#ifndef JOBSCOPE_ATTRIB_H
#define JOBSCOPE_ATTRIB_H

#include <stddef.h>
#include <stdint.h>

enum job_scheduler {
	JOB_NONE,    /* a plain process: attribute by user and session */
	JOB_SLURM,   /* job_id = Slurm job id, step = Slurm step */
	JOB_K8S,     /* job_id = pod UID, qos, container_id */
	JOB_SYSTEMD, /* job_id = the unit, e.g. "nginx.service", "session-3.scope" */
};

#define JOB_ID_MAX	  64
#define JOB_STEP_MAX	  32
#define JOB_QOS_MAX	  16
#define JOB_CONTAINER_MAX 65 /* 64 hex digits */
#define JOB_CGROUP_MAX	  512
/* Slurm 26.05's job cgroup name: 's' and 13 characters of [0-9A-Z] */
#define JOB_SLUID_LEN 14
#define JOB_SLUID_MAX 16

struct job_identity {
	enum job_scheduler scheduler;
	char job_id[JOB_ID_MAX];
	char step[JOB_STEP_MAX]; /* "batch", "extern", "0", ...; Slurm only */
	int64_t uid;		 /* -1 when the path does not say */
	/* "burstable", "besteffort" or "guaranteed" (no QoS level in the path) */
	char qos[JOB_QOS_MAX];
	char container_id[JOB_CONTAINER_MAX]; /* K8s only, "" for pod-level */
	char cgroup_path[JOB_CGROUP_MAX];     /* the path the answer came from */
	/*
	 * Slurm 26.05 names a job's cgroup by its SLUID ("sEKNKTV3WPV500")
	 * instead of job_<id>: the path does not give the job's number, so
	 * job_id holds the SLUID too, until someone (jobs.c: the stepd's title,
	 * SLURM_JOB_ID) tells the number.  "" for a job_<id> path.
	 */
	char sluid[JOB_SLUID_MAX];
};

/*
 * /proc/PID/cgroup: v1 ("N:controllers:/path" per hierarchy), v2 ("0::/path")
 * or both.  A job (Slurm, K8s) is looked for in the v2 line first, then the
 * memory, cpuacct and other v1 lines; failing that a systemd unit (v2,
 * name=systemd, memory, others).  Returns 0 also for JOB_NONE, -EINVAL if a
 * line is not a cgroup line or there is none.  Paths longer than
 * JOB_CGROUP_MAX - 1 are not used.
 */
int attrib_parse_cgroup(const char *text, size_t len, struct job_identity *out);

/* What a slurmstepd's process title says: "slurmstepd: [4711.0]". */
struct stepd_title {
	char job_id[JOB_ID_MAX]; /* digits */
	char step[JOB_STEP_MAX]; /* "0", "batch", "extern", "interactive", ... */
};

/*
 * A process's command line as proc_format_cmdline() gives it (argv joined by
 * spaces): slurmstepd sets it to "slurmstepd: [<job>.<step>]" (trailing
 * blanks allowed).  0, or -EINVAL when it is no stepd's title (a step that is
 * not [0-9a-z_]+, a job id that is not digits, anything after the ']').
 */
int attrib_parse_stepd_title(const char *text, size_t len, struct stepd_title *out);

enum slurm_env_valid {
	SLURM_ENV_JOB_ID = 1u << 0,
	SLURM_ENV_STEP_ID = 1u << 1,
	SLURM_ENV_CPUS_ON_NODE = 1u << 2,
	SLURM_ENV_MEM_PER_NODE = 1u << 3,
	SLURM_ENV_MEM_PER_CPU = 1u << 4,
	SLURM_ENV_JOB_GPUS = 1u << 5,
	SLURM_ENV_CUDA_VISIBLE = 1u << 6,
	SLURM_ENV_RUN_ID = 1u << 7,
	/* the GPU list was longer than its buffer: the string holds whole
	 * entries only, the count is of the full list */
	SLURM_ENV_JOB_GPUS_CUT = 1u << 8,
	SLURM_ENV_CUDA_VISIBLE_CUT = 1u << 9,
	/* SLURM_SCRIPT_CONTEXT: a prolog or epilog Slurm runs, not the job's work */
	SLURM_ENV_SCRIPT_CONTEXT = 1u << 10,
	SLURM_ENV_JOB_NAME = 1u << 11, /* SLURM_JOB_NAME: sbatch --job-name, else the script's */
};

#define SLURM_ENV_GPUS_MAX 256

/* What a job's environment says about it (see DESIGN.md section 4). */
struct slurm_env {
	uint32_t valid;			       /* enum slurm_env_valid */
	char job_id[JOB_ID_MAX];	       /* SLURM_JOB_ID, digits */
	char step_id[JOB_STEP_MAX];	       /* SLURM_STEP_ID */
	uint32_t cpus_on_node;		       /* SLURM_CPUS_ON_NODE */
	uint64_t mem_per_node_bytes;	       /* SLURM_MEM_PER_NODE, given in MB (MiB) */
	uint64_t mem_per_cpu_bytes;	       /* SLURM_MEM_PER_CPU, given in MB (MiB) */
	char job_gpus[SLURM_ENV_GPUS_MAX];     /* SLURM_JOB_GPUS, e.g. "0,1" */
	uint32_t job_gpus_count;	       /* entries in the list; 0 for "" */
	char cuda_visible[SLURM_ENV_GPUS_MAX]; /* CUDA_VISIBLE_DEVICES */
	uint32_t cuda_visible_count;
	char run_id[JOB_ID_MAX];	   /* JOBSCOPE_RUN_ID */
	char script_context[JOB_STEP_MAX]; /* SLURM_SCRIPT_CONTEXT: "epilog_slurmd", ... */
	char job_name[64];		   /* SLURM_JOB_NAME, printable */
};

/*
 * /proc/PID/environ: NUL-separated KEY=VALUE, the last one maybe without
 * its NUL.  The first occurrence of a key counts (as for getenv); a value
 * that does not parse or fit leaves its field invalid.  Any bytes are an
 * environment (possibly an empty one), so this always returns 0.
 */
int attrib_parse_environ(const char *raw, size_t len, struct slurm_env *out);

#endif
