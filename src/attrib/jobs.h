/*
 * jobs.h - the agent's live job table: which job each process belongs to,
 * what each job reserved, and what it used, tick by tick.
 *
 * Identity (DESIGN.md section 4), from /proc/PID/cgroup first: a Slurm job
 * or a Kubernetes pod by its cgroup path; else SLURM_JOB_ID in the
 * process's environment; else the JOBSCOPE_RUN_ID a `jobscope run` set;
 * else its systemd unit; else its user and session.  A job's key is
 * (scheduler, id, node, start time): ids are reused.
 *
 * Programs rewrite what /proc shows of them (setproctitle overwrites the
 * environment) and move between cgroups without exec, so the decision is
 * kept and revisited (jobs_choose): the job an environment named is kept
 * for the process's life (ptree_proc.env_job); a process with no evidence
 * of its own takes its parent's job; an exec or a rename moves a process
 * only to a job its new environment names; a changed cgroup file (read
 * again whenever ptree reads the process's status because it ran or its
 * memory moved, and every JOBS_CGROUP_IDLE_MS for one that did not run)
 * decides afresh, unless the job is one with no cgroup (known by an
 * environment).
 *
 * Slurm 26.05 names a job's cgroup by its SLUID, not job_<id>: the job's
 * number then comes from the process's SLURM_JOB_ID, from the title of a
 * slurmstepd in the job's cgroup ("slurmstepd: [4711.0]"), or from what
 * another process of that SLUID said before; a job is found by its SLUID.
 * With none of them, the job is keyed by its SLUID (said once in the log),
 * never by a guess.
 *
 * Accounting.  A job's cumulative CPU and I/O are the sum over its live
 * processes of own + reaped-children values, plus a credit for processes
 * that left it: one reaped by a parent outside the job (Slurm's stepd,
 * init) takes its last values (made exact by ptree when it was its
 * parent's only exit of the interval) with it.  A job with a cgroup also
 * has the cgroup's own counters, exact whatever happened in between.
 * Counters never go back.  A job starts when its first process is seen and
 * ends when its last one is gone.
 *
 * Ownership: the table owns its jobs; pointers into it are valid until the
 * next jobs_update().  Errors: 0 or -errno.  Not thread-safe.
 */
#ifndef JOBSCOPE_JOBS_H
#define JOBSCOPE_JOBS_H

#include <stdbool.h>
#include <stdint.h>

#include "attrib/attrib.h"
#include "attrib/k8s.h"
#include "sample/cgroup.h"
#include "sample/gpu/gpu.h"
#include "sample/ptree.h"
#include "attrib/job.h"

#define JOB_KEY_MAX 128
/* How often the cgroup file of a process that did not run is read again */
#define JOBS_CGROUP_IDLE_MS 60000

struct job_gpu_use {
	uint64_t mem_bytes; /* GPU memory of the job's processes on the device now */
	bool has_mem;
	uint32_t sm_util_pct; /* sum of its processes' SM utilization */
	bool has_util;
	double energy_mj; /* its share of the device's energy so far */
	bool used;	  /* a process of the job was on it at some tick */
	bool now;	  /* ... at this tick */
	/*
	 * The job's part of the device's activity figures at this tick (GPM:
	 * SM active, occupancy, tensor, DRAM, FP pipes): gpu_share_fraction()
	 * of its processes among all there, in [0, 1]; a MIG slice is a
	 * device of its own, so a job alone on its slice has 1.  has_share
	 * false: not known (not there now, or nothing to split by).  Set by
	 * the agent's tick (agent/tick.c), not by gpu_share_jobs.
	 */
	double share;
	bool has_share;
};

/* A pod's real containers (not its sandbox), by name: a restart keeps the slot, new ID. */
#define JOB_K8S_CONTAINERS_MAX 32
struct job_k8s_container {
	char name[K8S_CONTAINER_MAX];
	char id[JOB_CONTAINER_MAX];
};

/* What a pod's bundles said (k8s.h); all "" and 0 when none resolved. */
struct job_k8s {
	char namespace_[K8S_NAMESPACE_MAX];
	char pod[K8S_POD_MAX];
	struct job_k8s_container container[JOB_K8S_CONTAINERS_MAX];
	size_t ncontainers;
	int32_t command_pid; /* the container process the job's command is (0: none yet) */
	/* the agent's --cri-socket hint (agent/k8s.c): the owner label and its value */
	bool owner_asked;
	char owner_label[64];
	char owner_name[K8S_POD_MAX];
};

struct job_entry {
	struct job_record rec; /* rec.id: the store row, 0 until stored */
	char key[JOB_KEY_MAX]; /* "slurm:5:1732270000123" */
	bool live;
	bool ended_now; /* its last process went in this update */
	bool stored_end;
	bool rec_dirty;	    /* rec learned something (a reservation) since it was stored */
	bool name_from_env; /* rec.name is SLURM_JOB_NAME's */

	struct job_sample js;	    /* this tick */
	struct job_sample last_row; /* the last one stored */
	bool has_row;
	bool emit; /* the sample moved: store a row */
	int64_t credit_user_ms, credit_system_ms, credit_read, credit_write, credit_wait_ms;
	bool credit_io;

	/* rates over the last interval (sample/figures.h), for /metrics and the API */
	double cpu_cores;
	bool has_rate;
	int64_t prev_ts_ms;	   /* the update before this one (0: none) */
	struct job_sample prev_js; /* its sample then */
	/* its threads' wait for a CPU (schedstat), in cores' worth: how many of them
	 * were runnable and not running, on average over the last interval */
	double wait_cores;
	bool has_wait_rate;

	struct cgroup_sample cg;
	bool has_cg;
	uint64_t cg_mem_peak_bytes; /* the most seen (v1 has no peak before...) */

	struct job_gpu_use gpu[GPU_MAX_DEVICES]; /* by device position in the agent's gpu_set */
	struct job_k8s k8s;			 /* a pod's names (k8s.h) */
};

struct jobs_note;

/* What the agent learned of a SLUID: the job's number ("" none yet). */
struct jobs_sluid {
	char sluid[JOB_SLUID_MAX];
	char job_id[JOB_ID_MAX];
	bool logged; /* "keyed by its SLUID" was said */
};

struct jobs {
	struct job_entry *job;
	size_t njobs, alloc;
	struct cgroup_layout cg;
	char hostname[256];
	int64_t node_id;
	int32_t host_cores;
	uint64_t host_mem_bytes;
	int64_t interval_ms;
	struct strbuf buf;	/* scratch for /proc/PID/environ */
	struct strbuf cgbuf;	/* ... and /proc/PID/cgroup */
	uint64_t attributions;	/* processes attributed so far (cost accounting) */
	struct jobs_note *note; /* scratch, per position in ptree.procs (jobs.c) */
	size_t note_alloc;
	struct jobs_sluid *sluid; /* one per SLUID of a job in the table */
	size_t nsluids, sluid_alloc;
	struct k8s_names k8s; /* pods' names by container ID; k8s.bundle_dir the caller's */
};

void jobs_init(struct jobs *t, const char *hostname, int64_t node_id, int32_t host_cores,
	       uint64_t host_mem_bytes, int64_t interval_ms);
void jobs_release(struct jobs *t);

/*
 * After ptree_scan(pt, ts_ms), with the same ts_ms: attributes new
 * processes, those that exec'd or renamed themselves and those whose
 * cgroup changed, computes each job's sample, starts and ends jobs.  Job
 * entries whose end was stored in the previous update are dropped first.
 */
int jobs_update(struct jobs *t, struct ptree *pt, int64_t ts_ms);

/*
 * A pod's owner hint (the agent's --cri-socket: j->k8s.owner_name) as its
 * stored owner, rec.k8s_owner "NAMESPACE/NAME" (`report --k8s-job`), once
 * both it and the pod's namespace are known, whichever came first.
 */
void jobs_k8s_owner_settle(struct job_entry *j);

/*
 * A job's CPU so far, ms: its processes' sum, or its cgroup's count when
 * that is larger (it also has what exited between two readings);
 * sample/figures.h's job_cpu_ms.
 */
uint64_t jobs_cpu_ms(const struct job_sample *s);

/* The live job of a process (ptree_proc.tag), or NULL. */
struct job_entry *jobs_of(struct jobs *t, const struct ptree_proc *p);

/*
 * What one process says about its job, from the text of its cgroup and
 * environ files (either may be empty): identity, reservation, the job's
 * cgroup.  Pure; exposed for tests.
 */
/* What a process's job rests on, weakest first. */
enum job_basis {
	JOB_BASIS_NONE,	  /* nothing: its user and session */
	JOB_BASIS_UNIT,	  /* a systemd unit in its cgroup path */
	JOB_BASIS_ENV,	  /* SLURM_JOB_ID or JOBSCOPE_RUN_ID in its environment */
	JOB_BASIS_CGROUP, /* a Slurm job's or a pod's cgroup */
};

struct job_attribution {
	enum job_basis basis;
	char scheduler[16]; /* "slurm", "k8s", "run", "systemd", "session" */
	char job_id[JOB_ID_MAX];
	char step[JOB_STEP_MAX];
	char qos[JOB_QOS_MAX];
	char cgroup[JOB_CGROUP_MAX]; /* job-level cgroup, "" if none */
	/*
	 * A Slurm 26.05 job cgroup named by SLUID (attrib.h): job_id is the
	 * environment's SLURM_JOB_ID, else the SLUID itself (the agent then
	 * asks the stepd's title and the job's other processes, jobs.c).
	 */
	char sluid[JOB_SLUID_MAX];
	char container_id[JOB_CONTAINER_MAX]; /* a pod's container, "" for none or pod-level */
	struct slurm_env env;
};
void jobs_attribute(const char *cgroup_text, size_t cgroup_len, const char *environ,
		    size_t environ_len, uint32_t uid, int32_t session, struct job_attribution *out);

/*
 * A job's reservation into r (reservation_source, reserved_cpus,
 * reserved_mem_bytes, the GPUs): a Slurm job's environment first
 * (SLURM_CPUS_ON_NODE, SLURM_MEM_PER_NODE or _PER_CPU, SLURM_JOB_GPUS or
 * CUDA_VISIBLE_DEVICES), then the limits of a's job cgroup for what it left
 * unset (a CPU quota; a cpuset smaller than the host's, or any for Slurm; a
 * memory limit below the host's memory).
 */
void jobs_reservation(const struct job_attribution *a, const struct cgroup_layout *cg,
		      int32_t host_cores, uint64_t host_mem_bytes, struct job_record *r);

/*
 * The environment's word outlives the environment.  When `a` (from
 * jobs_attribute) found a job in the environment, it is written to `kept`
 * (the process's ptree_proc.env_job); when the environment names none now
 * (overwritten by setproctitle, unreadable) and `kept` holds one, that job
 * takes the place of a weaker basis in `a` (JOB_BASIS_ENV).  Pure.
 */
void jobs_keep_env(struct job_attribution *a, char *kept, size_t kept_size);

enum job_choice {
	JOB_CHOICE_OWN,	   /* the job `a` names */
	JOB_CHOICE_PARENT, /* its parent's */
	JOB_CHOICE_KEEP,   /* the one it has */
};

/*
 * Which job a process goes to, given what it says of itself (`a`, after
 * jobs_keep_env); the job it has (NULL: none yet) and whether its cgroup
 * file changed since; its parent's job's scheduler (NULL: no parent in a
 * job) and whether the parent is in the same cgroup.  A job cgroup or an
 * environment decide.  Without them, a process that has a job keeps it
 * unless its cgroup changed and that job is a cgroup's or a login session
 * (an exec or a rename is no evidence, and a cgroup move cannot take a
 * process out of a job that has no cgroup); else it takes its parent's
 * job, unless that is a login session or the process sits in a systemd
 * unit of its own (another cgroup than its parent's).  Pure.
 */
enum job_choice jobs_choose(const struct job_attribution *a, const struct job_record *has,
			    bool cgroup_moved, const char *parent_scheduler,
			    bool same_cgroup_as_parent);

/*
 * What process pid says of its job at this moment, read from its
 * /proc/PID/cgroup and environ: a job cgroup or an environment, the words
 * attribution decides by (jobs_choose).  True, with "<scheduler>:<job_id>"
 * in out, when it names one; false (out "") when it names none, is gone
 * or is not ours to read.  For a process that may be gone before any scan
 * sees it after its exec (a sender of one StatsD line).  Uses t's scratch
 * buffers: not while jobs_update() runs.
 */
bool jobs_claim(struct jobs *t, int32_t pid, char *out, size_t size);

/* Writes "<scheduler>:<job_id>:<start_ms>". */
void jobs_format_key(char *buf, size_t size, const char *scheduler, const char *job_id,
		     int64_t start_ms);
/*
 * Whether `wanted` names the job of that key, scheduler and id, in any of
 * the forms a user gives: scheduler:job_id:start_ms, scheduler:job_id, job_id.
 */
bool jobs_key_matches(const char *wanted, const char *key, const char *scheduler,
		      const char *job_id);

#endif
