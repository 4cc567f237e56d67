/*
 * taskiter.h - every process's run and wait times in one read, from the
 * kernel's task iterator (a BPF program, tasks.bpf.c).
 *
 * The agent reads, each tick, whether each of the machine's processes ran
 * since the last tick: one /proc/PID/schedstat read a process, most of the
 * agent's time beside a thousand sleeping processes.  The iterator gives the
 * same figures for every task of the machine in one read of one file, in
 * the kernel, without a file a process: the sum over a process's threads of
 * the time they ran and waited for a CPU (what /proc/PID/task/TID/schedstat
 * says of each), its number of threads, and when it started.
 *
 * taskiter_open() has a child process load the program (libbpf, with
 * dlopen) and send back the iterator's descriptor, all this process keeps of
 * it: libbpf and the kernel's BTF it reads never enter this process.  It needs
 * root (CAP_BPF and CAP_PERFMON), the kernel's BTF, libbpf1, the first pid
 * namespace (the iterator names tasks as it numbers them) and a /proc of it
 * (no sysroot, or one whose /proc/self is this process: a pod of the host's
 * pid namespace), and checks what it reads of this very process against
 * /proc/self/stat.  Without any of those it returns -errno and the caller
 * reads /proc.  JOBSCOPE_NO_BPF=1 in the environment turns it off.
 * Not thread-safe.
 */
#ifndef JOBSCOPE_SAMPLE_TASKITER_H
#define JOBSCOPE_SAMPLE_TASKITER_H

#include <stddef.h>
#include <stdint.h>

/* A process: its threads' figures added up. */
struct taskiter_proc {
	int32_t pid;
	uint32_t threads;  /* its tasks the iterator saw */
	uint64_t run_ns;   /* the time its threads ran (live threads only) */
	uint64_t wait_ns;  /* the time they waited on a run queue */
	uint64_t start_ns; /* when it started, ns since boot (stat's starttime) */
};

struct taskiter {
	int fd; /* the iterator's link; -1: closed */
	/* the last read, one entry a process, by pid */
	struct taskiter_proc *procs;
	size_t nprocs, procs_alloc;
	char *buf; /* the records as read */
	size_t buf_alloc;
};

void taskiter_init(struct taskiter *ti);
int taskiter_open(struct taskiter *ti);
void taskiter_close(struct taskiter *ti);
/* Reads every task now into procs: 0, or -errno (the caller closes it). */
int taskiter_read(struct taskiter *ti);
/*
 * The records of buf (struct taskiter_rec, back to back, as the iterator
 * writes them) into procs: 0, -EINVAL for a length that is not a whole
 * number of records, -ENOMEM.  No I/O.
 */
int taskiter_parse(struct taskiter *ti, const void *buf, size_t len);
/* When it started in /proc/PID/stat's clock ticks (starttime), hz of them a second. */
static inline uint64_t taskiter_start_ticks(const struct taskiter_proc *p, long hz)
{
	return p->start_ns / (1000000000ull / (uint64_t)hz);
}
/* pid's entry of the last read, or NULL. */
const struct taskiter_proc *taskiter_find(const struct taskiter *ti, int32_t pid);

#endif
