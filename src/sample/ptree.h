/*
 * ptree.h - the process tree under one ancestor, sampled tick by tick.
 *
 * `jobscope run` is a child subreaper, so every descendant of the command,
 * even one that double-forked, keeps jobscope as an ancestor: the tree is
 * "every process whose parent chain reaches the ancestor pid".
 *
 * Accounting.  A process's stat gives its own CPU time and (cutime/cstime)
 * that of the children it has reaped; the kernel also folds a reaped
 * child's I/O into its parent's io file.  So the tree's cumulative CPU and
 * I/O at any instant is the sum over the processes that still exist (zombies
 * included) of own + reaped-children values, plus what the ancestor itself
 * reaped (wait4's rusage for CPU; the zombie's io file, read just before
 * reaping, for I/O).  Nothing is counted twice and nothing is lost when a
 * process exits between two ticks; the last job sample is exact.
 *
 * Each tick, a process gets a row ("emit") only when one of its values
 * moved since its last row, plus a last row when it ends: storage grows with
 * activity, not with the number of sleeping processes.
 *
 * Ownership: the ptree owns its process table.  Errors: 0 or -errno.
 * Not thread-safe.
 */
#ifndef JOBSCOPE_PTREE_H
#define JOBSCOPE_PTREE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "common/intern.h"
#include "libs.h"
#include "proc.h"
#include "procev.h"
#include "sample.h"
#include "taskiter.h"
#include "taskstats.h"

#define PTREE_ENV_JOB_MAX 104

/*
 * A process's identity as the tree keeps it: struct proc_info's fields,
 * with its command line shared.  cmdline is never NULL ("" when none) and
 * is the tree's (an intern.h copy: the same command line of a thousand
 * processes is kept once), valid while the process is in the tree;
 * ptree_info_get() copies the whole into a struct proc_info.
 */
struct ptree_info {
	int32_t pid;
	int32_t ppid;
	int64_t start_ms; /* process start, ms since the epoch */
	uint32_t uid;
	char comm[PROC_COMM_MAX];
	const char *cmdline;
	int64_t end_ms; /* 0 while alive */
};

struct ptree_proc {
	struct ptree_info info;
	uint64_t start_ticks; /* with the pid, the identity */
	struct proc_sample cur;
	struct proc_sample last_emitted;
	bool has_emitted;
	bool emit;		    /* this tick: write a row (new, changed or ended) */
	bool info_dirty;	    /* comm/cmdline changed (exec) since its info row */
	bool info_changed;	    /* comm/cmdline changed in this scan */
	bool ended_now;		    /* found gone in this scan */
	bool alive;		    /* still exists (zombies count) */
	bool seen;		    /* scratch: found in this scan */
	bool done;		    /* ended and its last row emitted: dropped next scan */
	struct proc_stat last_stat; /* stat at the last full refresh */
	int64_t refreshed_ms;	    /* when status and io were last read (0: never) */
	uint64_t refreshed_run_ns;  /* schedstat's run time then (0: unknown) */
	bool refreshed_idle;	    /* that refresh was due, and found it had not run */
	uint64_t prev_child_user_ms, prev_child_system_ms; /* at the previous scan */
	int64_t row;	  /* store row id of its procs entry, 0 when none */
	int32_t tag;	  /* the owner's: the agent keeps its job's slot + 1 here */
	int64_t row_tick; /* tick in which `row` was assigned (undone if that tick fails) */
	/*
	 * Also the owner's, kept from tick to tick (the agent's attrib/jobs.c):
	 * the job the process's environment named when it was read, in the
	 * owner's format, "" if none (setproctitle overwrites the environment
	 * later), and a hash of its /proc/PID/cgroup as last read (0: never).
	 */
	char env_job[PTREE_ENV_JOB_MAX];
	uint64_t cgroup_hash;
	int64_t cgroup_ms; /* when its cgroup file was last read (the owner's) */
	/* the owner's too: its Kubernetes container, slot + 1 in its job's list (0: none) */
	uint8_t container;
	/*
	 * A descriptor the owner keeps open with the process (the agent's
	 * /proc/PID/cgroup), -1 if none: opened by ptree_keep_fd(), closed by
	 * ptree when it drops the process.
	 */
	int owner_fd;
	/*
	 * Frameworks and libraries it mapped (libs.h; NULL until one is
	 * found), read at its first scan and again as PTREE_LIBS_* say.  The
	 * store's tick writer keeps which have rows: lib[0 .. libs_stored),
	 * and libs_stored_undo to restore if the tick at libs_stored_tick is
	 * lost.
	 */
	struct lib_set *libs;
	size_t libs_stored, libs_stored_undo;
	int64_t libs_stored_tick;
	int64_t libs_next_ms;  /* the next read of its maps is due (0: never read) */
	int64_t libs_every_ms; /* the wait before the one after */
	uint64_t libs_cpu_ms;  /* its CPU time at the last read */
	/* NSpid's last field: its pid in the innermost pid namespace (0: unknown) */
	int32_t nspid;
	/*
	 * Its own CPU, memory peak and I/O are the kernel's at its exit
	 * (ptree_watch_exits): /proc, a zombie's, has nothing to add.
	 */
	bool exit_known;
	bool had_children; /* a child of it was seen in a scan */
	bool hwm_rusage;   /* hwm_bytes is wait4's ru_maxrss, a bound: an exact exit replaces it */
};

/* A thread's exit as received (ptree_watch_exits), kept until its process is settled. */
struct ptree_exit {
	struct taskstats_exit e;
	int64_t boot_ms; /* read at this CLOCK_BOOTTIME */
	uint32_t seq;	 /* order of arrival */
};

struct ptree_scan_entry {
	int32_t pid;
	int32_t ppid;
	int8_t in_tree;	  /* -1 unknown, 0 no, 1 yes */
	int fd;		  /* /proc/PID/stat, kept open across ticks; -1 if none */
	int sched_fd;	  /* /proc/PID/schedstat, the same; -1 if none */
	uint64_t run_ns;  /* schedstat's run time, read before stat (0: unknown) */
	uint64_t wait_ns; /* ... and its main thread's run-queue wait (has_wait) */
	bool has_wait;
	/*
	 * From the task iterator (ptree_watch_tasks): run_ns and wait_ns are
	 * every thread's, and `threads` says how many it has
	 */
	bool all_threads;
	uint32_t threads;
	int64_t stat_ms;  /* when `stat` was read from /proc (it may be a copy) */
	bool stat_copied; /* this scan: `stat` is the previous scan's */
	struct proc_stat stat;
};

/*
 * What a tick reads of a process that did not run.  /proc/PID/schedstat
 * (one small read, a quarter of stat's cost) gives the time its main thread
 * ran; a single-threaded process (a thread must run to make another) that
 * did not run since its stat was read, and was neither running nor in disk
 * wait then, cannot have new CPU time, I/O, children's times, threads or
 * state: its stat is not read again, the last one stands.  What can change
 * without it running is refreshed every PTREE_FULL_REFRESH_MS: RSS (memory
 * reclaimed), its name (written to /proc/PID/comm), its cgroup (moved by
 * another process: the agent reads that less often, attrib/jobs.h).  A
 * parent that is gone from the scan (reparenting) has its children's stat
 * read at once.  Without schedstat (an old kernel, a fixture tree) every
 * stat is read every tick.
 *
 * status and io are read again only when stat shows the process moved (CPU
 * time, RSS, threads or state changed, or it is running or in disk wait),
 * or PTREE_FULL_REFRESH_MS passed and schedstat does not show that it did
 * not run since they were read (a short run moves no clock tick of stat but
 * may have done I/O).
 */
#define PTREE_FULL_REFRESH_MS 10000

/*
 * With process events (ptree_watch_events), a scan reads the processes of
 * the last scan and the new ones the kernel announced, without listing
 * /proc; it lists /proc at the first scan, after the kernel dropped events,
 * and every PTREE_RELIST_MS all the same.
 */
#define PTREE_RELIST_MS 60000

/*
 * A scan whose read of the task iterator fails lists /proc instead; after
 * this many in a row, every scan does.
 */
#define PTREE_TASKS_MAX_FAILED 10

/*
 * Descriptors are kept open (stat, schedstat, the owner's) while fewer than
 * the soft RLIMIT_NOFILE minus this margin are (what jobscope opens for a
 * moment: the store, other /proc files); beyond, files are read by path.
 */
#define PTREE_FD_MARGIN 256

/*
 * Libraries load lazily (Python imports torch seconds after it starts), so
 * a process's maps are read at its first scan and after an exec, then again
 * when it has used CPU since the last read and the wait is over: 1 s after
 * the first read, then doubling up to 64 s.  Only the libraries not seen
 * before are new.
 */
#define PTREE_LIBS_FIRST_WAIT_MS 1000
#define PTREE_LIBS_MAX_WAIT_MS	 64000

struct ptree {
	pid_t ancestor; /* 0 with `all` */
	/*
	 * The ancestor's VmHWM when it forked (ptree_child_reaped): a child's
	 * ru_maxrss holds its image from fork to exec, a copy of the ancestor's.
	 */
	uint64_t spawn_image_bytes;
	bool all; /* every user-space process (the agent), not a tree */
	long hz;
	int64_t boot_ms;
	struct proc_reader reader;
	struct libs_reader libs_reader;

	struct ptree_proc *procs; /* every process ever seen, in order of discovery */
	struct intern cmdlines;	  /* their command lines, each kept once */
	size_t nprocs, procs_alloc;
	int32_t *index; /* open addressing: pid -> position+1 in procs (latest) */
	size_t index_size;

	struct ptree_scan_entry *scan; /* one per process on the system */
	size_t nscan, scan_alloc;
	int32_t *scan_index; /* pid -> position+1 in scan */
	size_t scan_index_size;
	/* the previous scan, whose stat descriptors the next one takes over */
	struct ptree_scan_entry *prev;
	size_t nprev, prev_alloc;
	int32_t *prev_index;
	size_t prev_index_size;
	bool fd_cache;		      /* false once open() failed with EMFILE */
	size_t kept_fds, fd_budget;   /* descriptors kept open, and how many may be */
	int64_t scan_ms;	      /* the scan in progress */
	struct procev ev;	      /* closed unless ptree_watch_events() */
	struct taskiter tasks;	      /* closed unless ptree_watch_tasks() */
	int tasks_failed;	      /* its reads that failed in a row */
	/* the iterator's entry of the pid being read (collect_pid), or NULL */
	const struct taskiter_proc *task;
	struct taskstats_listener ts; /* closed unless ptree_watch_exits() */
	struct procev exit_ev;	      /* the exits' times: opened with ts when it can be */
	struct ptree_exit *exits;     /* received, not yet settled */
	size_t nexits, exits_alloc;
	uint32_t exit_seq;
	uint64_t exits_dropped; /* over PTREE_MAX_EXITS, or dropped by the kernel */
	bool exits_final;	/* ptree_exits_final(): settle every exit now */
	int64_t listed_ms;	/* the last listing of /proc */
	uint64_t listings;	/* listings of /proc, since init */
	/* stat reads made and saved (schedstat showed no run), since init */
	uint64_t stat_reads, stat_skips;

	/* totals of processes the ancestor reaped */
	uint64_t reaped_user_ms, reaped_system_ms;
	uint64_t reaped_read_bytes, reaped_write_bytes;
	bool reaped_io_valid;
	uint64_t ended_wait_ms; /* run-queue wait of the tree's processes that ended */

	struct job_sample job;	    /* this tick */
	struct job_sample job_prev; /* previous tick, for monotonic counters */
	bool has_job;
	/* at the last scan: with `all`, the user-space processes; else all of them */
	uint64_t system_processes;
};

void ptree_init(struct ptree *pt, pid_t ancestor, long hz, int64_t boot_ms);
/*
 * Every user-space process of the machine (kernel threads, kthreadd's
 * children, are left out), for the agent.  The job sample is then the sum
 * over all of them.
 */
void ptree_init_all(struct ptree *pt, long hz, int64_t boot_ms);
void ptree_release(struct ptree *pt);
/*
 * Learn of new processes from the kernel's process events instead of
 * listing /proc every scan (procev.h): 0, or -errno (not root, a sysroot)
 * and the scans go on listing /proc.
 */
int ptree_watch_events(struct ptree *pt);
/*
 * Every process, and whether it ran, from the kernel's task iterator
 * (taskiter.h) in one read a scan, instead of a schedstat read a process
 * and process events or listings of /proc: 0, or -errno (not root, no BPF)
 * and the scans go on as before.  With it, a process of many threads that
 * none of them ran has its stat left unread too, and its threads' run-queue
 * wait comes without reading /proc/PID/task.
 */
int ptree_watch_tasks(struct ptree *pt);

/*
 * Every process of the tree that ends gets its own figures from the kernel
 * as it exits (taskstats.h), even one that lived between two scans and was
 * never seen in /proc: its own CPU, memory high-water mark and I/O (never
 * what it reaped of its children), its comm after any exec, and its
 * lifetime: its end the kernel's time of it (the process events
 * connector's exit, procev_open_exits), else the time its message was
 * read; its start from /proc when it was seen, else its end less its
 * elapsed time.  Without it (not root, another network namespace) a
 * process that ended between two scans is not seen at all: its CPU lives
 * on in its parent's children's time, and a process's last memory peak is
 * the last one read.  0 or -errno.
 */
int ptree_watch_exits(struct ptree *pt);
/* The listener's descriptor to poll (-1: none); ptree_drain_exits() reads it. */
int ptree_exits_fd(const struct ptree *pt);
/*
 * Whether the kernel dates the exits itself (procev_open_exits): then they
 * may be read in large batches; else an exit is dated when it is read.
 */
bool ptree_exits_dated(const struct ptree *pt);
void ptree_drain_exits(struct ptree *pt);
/*
 * A process that ended unseen (never read in /proc) is dated by the
 * kernel's exit event, which the kernel sends a moment after the figures
 * (and later still on a loaded machine): its exit is kept, unsettled, for
 * up to PTREE_EXIT_EVENT_WAIT_MS after its figures were read, waiting for
 * it, then dated when its figures were read.  ptree_exits_final() says
 * the next scans are the last (every process reaped): nothing waits.
 */
#define PTREE_EXIT_EVENT_WAIT_MS 3000
void ptree_exits_final(struct ptree *pt);
#define PTREE_MAX_EXITS 200000 /* thread exits kept between two scans (machine-wide) */

/*
 * Reads /proc, refreshes every process of the tree, marks which ones emit a
 * row, and computes the job sample.  Processes of the tree that are gone
 * (reaped by their parent) end at ts_ms.
 */
int ptree_scan(struct ptree *pt, int64_t ts_ms);

/*
 * For a direct child of the ancestor that has exited but is not reaped yet
 * (found with waitid(WNOWAIT)): read its final CPU and I/O from /proc while
 * it is a zombie.  Then, after wait4(), ptree_child_reaped() moves it into
 * the reaped totals with wait4's exact rusage.
 */
void ptree_child_exiting(struct ptree *pt, pid_t pid);
/*
 * ru_maxrss becomes its memory peak only where it must be its own: above
 * its image before exec (its parent's: pt->spawn_image_bytes for the
 * ancestor's children, else its parent's last VmHWM), for a process that
 * reaped no child, and until the kernel's exact figure at its exit.
 */
void ptree_child_reaped(struct ptree *pt, pid_t pid, const struct rusage *ru, int64_t ts_ms);

/* p's identity as a struct proc_info, its command line copied. */
void ptree_info_get(const struct ptree_proc *p, struct proc_info *out);

/*
 * /proc/PID/name of p kept open as p->owner_fd (once), within the budget of
 * descriptors: the descriptor, or -1 and the caller reads by path.
 */
int ptree_keep_fd(struct ptree *pt, struct ptree_proc *p, const char *name);

/* The process entry for pid that is alive, or NULL. */
struct ptree_proc *ptree_find(struct ptree *pt, pid_t pid);
/*
 * The live process whose pid in its innermost pid namespace (a container's)
 * is nspid, for a pid a process inside a container reported about itself:
 * NULL if none, or if processes of several namespaces have it.  A process
 * in no pid namespace of its own is not matched (ptree_find is for those).
 */
struct ptree_proc *ptree_find_nspid(struct ptree *pt, pid_t nspid);
/*
 * The live process a pid reported by someone else (a GPU driver's process
 * list) stands for: the one with that pid; else, when no process of our
 * namespace has it at all, the one whose innermost pid it is
 * (ptree_find_nspid: a container's process, reported from inside its
 * namespace).  NULL when neither.
 */
struct ptree_proc *ptree_find_reported(struct ptree *pt, pid_t pid);
/* ... or that ended in the last scan (its final row not yet emitted), or NULL. */
struct ptree_proc *ptree_find_recent(struct ptree *pt, pid_t pid);
const struct job_sample *ptree_job(const struct ptree *pt);
/* Adds the ancestor's own CPU (jobscope's) to the job sample. */
void ptree_set_sampler_cpu(struct ptree *pt, uint64_t cpu_ms);

#endif
