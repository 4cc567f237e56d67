/*
 * proc.h - per-process readings from /proc/PID/{stat,status,io,cmdline}.
 *
 * Two layers: parsers (proc_parse_*) take the text of one file and fill a
 * struct, doing no I/O, so they are tested on fixtures and fuzzed; readers
 * (proc_read_*) fetch a file through sysroot and call the parser.
 *
 * Errors: 0 or -errno.  Readers return -ENOENT when the process is gone
 * (including when it exits between two files), -EACCES when the file is not
 * readable by us (e.g. /proc/PID/io of another user's process, or a kernel
 * without I/O accounting: an absent io file of a live process); parsers
 * return -EINVAL on text they cannot make sense of and never read past len.
 * Units: times in milliseconds (converted from clock ticks), sizes in bytes.
 * A field the file did not have is flagged missing in `valid`, never 0.
 */
#ifndef JOBSCOPE_PROC_H
#define JOBSCOPE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

#define PROC_COMM_MAX	 64   /* TASK_COMM_LEN is 16; leave room for odd kernels */
#define PROC_CMDLINE_MAX 1024 /* longer command lines are cut (marked with "...") */

/* /proc/PID/stat (see proc(5)); comm may hold spaces and parentheses. */
struct proc_stat {
	int32_t pid;
	char comm[PROC_COMM_MAX];
	char state; /* R S D Z T t X I ... */
	int32_t ppid;
	int32_t pgrp;
	int32_t session;
	uint32_t flags; /* the kernel's PF_* flags (field 9): PROC_PF_KTHREAD */
	uint64_t utime_ticks;
	uint64_t stime_ticks;
	uint64_t cutime_ticks; /* waited-for children */
	uint64_t cstime_ticks;
	int64_t num_threads;
	uint64_t start_ticks; /* since boot */
	uint64_t vsize_bytes;
	uint64_t rss_pages;
	/*
	 * A digest of where the memory's parts start and end (code, stack,
	 * data, arguments, environment: fields 26-28 and 45-51), which every
	 * exec lays out anew while a fork keeps its parent's: an exec is seen
	 * even when the new program has the old one's comm (python starting
	 * python).  0: the kernel hides them (not ours to trace) or has none
	 * (a zombie, a kernel thread, a text without them).
	 */
	uint64_t layout;
};

/*
 * A kernel thread, whatever its pid: kthreadd is pid 2 only in the first pid
 * namespace (in a container pid 2 is a user process, and no kernel thread is
 * seen at all).
 */
#define PROC_PF_KTHREAD 0x00200000u

enum proc_status_valid {
	PROC_STATUS_RSS = 1u << 0,
	PROC_STATUS_HWM = 1u << 1,
	PROC_STATUS_SWAP = 1u << 2,
	PROC_STATUS_UID = 1u << 3,
	PROC_STATUS_THREADS = 1u << 4,
	PROC_STATUS_NSPID = 1u << 5,
};

/* /proc/PID/status; kernel threads and zombies have no Vm* lines. */
struct proc_status {
	uint32_t valid;	     /* enum proc_status_valid */
	uint64_t rss_bytes;  /* VmRSS */
	uint64_t hwm_bytes;  /* VmHWM: peak RSS */
	uint64_t swap_bytes; /* VmSwap */
	uint32_t uid;	     /* real uid, first field of Uid: */
	uint32_t threads;
	/*
	 * NSpid's last field: the pid in the innermost pid namespace (a
	 * container's), the same as the pid outside any.
	 */
	int32_t nspid;
};

/* /proc/PID/io; includes the I/O of reaped children (kernel accounting). */
struct proc_io {
	uint64_t rchar;
	uint64_t wchar;
	uint64_t syscr;
	uint64_t syscw;
	uint64_t read_bytes;
	uint64_t write_bytes;
	uint64_t cancelled_write_bytes;
};

int proc_parse_stat(const char *text, size_t len, struct proc_stat *out);
int proc_parse_status(const char *text, size_t len, struct proc_status *out);
/* -EINVAL unless read_bytes and write_bytes were both found */
int proc_parse_io(const char *text, size_t len, struct proc_io *out);
/*
 * /proc/PID/schedstat: "run_ns wait_ns timeslices"; run_ns is the time the
 * process's main thread has spent on a CPU (its other threads are not in it).
 */
int proc_parse_schedstat(const char *text, size_t len, uint64_t *run_ns);
/*
 * The same, and wait_ns: the time the thread spent runnable on a run queue,
 * waiting for a CPU (field 2): what other work, or its own other threads,
 * held.  *has_wait false when the field is not there (run_ns still read).
 */
int proc_parse_schedstat_wait(const char *text, size_t len, uint64_t *run_ns, uint64_t *wait_ns,
			      bool *has_wait);
/*
 * NUL-separated argv -> one printable line: NULs become spaces, control
 * characters '?', trailing NULs dropped, cut to size-1 bytes with "..." at
 * the end when cut.  Returns the length written.  out is always terminated.
 */
size_t proc_format_cmdline(const char *raw, size_t len, char *out, size_t size);

/* A reader owns one scratch buffer; init cannot fail. */
struct proc_reader {
	struct strbuf buf;
	long hz; /* clock ticks per second (sysconf(_SC_CLK_TCK)) */
};

void proc_reader_init(struct proc_reader *r, long hz);
void proc_reader_release(struct proc_reader *r);
int proc_read_stat(struct proc_reader *r, int pid, struct proc_stat *out);
/* From /proc/PID/stat kept open (see sysroot_read_fd): no open/close per tick. */
int proc_read_stat_fd(struct proc_reader *r, int fd, struct proc_stat *out);
/* From /proc/PID/schedstat kept open: one small read. */
int proc_read_schedstat_fd(struct proc_reader *r, int fd, uint64_t *run_ns);
/* The same with its run-queue wait (proc_parse_schedstat_wait). */
int proc_read_schedstat_wait_fd(struct proc_reader *r, int fd, uint64_t *run_ns, uint64_t *wait_ns,
				bool *has_wait);
int proc_read_status(struct proc_reader *r, int pid, struct proc_status *out);
int proc_read_io(struct proc_reader *r, int pid, struct proc_io *out);
/* Empty string (return 0) for kernel threads and zombies. */
int proc_read_cmdline(struct proc_reader *r, int pid, char *out, size_t size);

/* ticks -> milliseconds with the reader's hz */
uint64_t proc_ticks_to_ms(const struct proc_reader *r, uint64_t ticks);

/*
 * Calls fn(pid, arg) for every numeric entry of /proc (under sysroot), in
 * directory order.  fn returning non-zero stops the walk and is returned.
 */
int proc_for_each_pid(int (*fn)(int pid, void *arg), void *arg);

/* CPU time (user + system) this process has used, ms; 0 if unknown. */
uint64_t proc_self_cpu_ms(void);

#endif
