/*
 * taskstats.h - every task's own figures at its exit, as the kernel sends
 * them to a taskstats listener (generic netlink family "TASKSTATS", a
 * listener registered for every CPU; needs CAP_NET_ADMIN, the first network
 * namespace and the first pid namespace, whose pids the messages carry).
 *
 * Why: a process that starts and ends between two reads of /proc leaves
 * nothing there, and what its parent's wait4() or cutime hold is its total
 * with its own descendants'.  The kernel sends one message per exiting
 * thread, from do_exit() before the thread's memory is released: its own
 * CPU (microseconds), the high-water mark of its address space's RSS, its
 * own storage I/O, its comm after any exec, its parent, its lifetime.  A
 * process's figures are the sum over its threads' messages (the high-water
 * mark: the largest); the message of its last thread also carries the
 * thread group's record (only for a process that had threads), that of a
 * single-threaded one is its leader's.
 *
 * Fields the running kernel's struct lacks (an older version) are left out
 * by length, never read past the attribute.  The parser does no I/O.
 * Errors: 0 or -errno.  Not thread-safe.
 */
#ifndef JOBSCOPE_TASKSTATS_H
#define JOBSCOPE_TASKSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TASKSTATS_COMM_MAX 32

/* One exiting thread's message. */
struct taskstats_exit {
	int32_t pid;	 /* the thread's */
	int32_t tgid;	 /* its process's (the pid when the kernel gives none) */
	int32_t ppid;	 /* its process's parent at the exit */
	bool group_dead; /* the process's last thread: it carried the group's record */
	char comm[TASKSTATS_COMM_MAX];
	uint64_t user_us, system_us; /* exact in sum, split as getrusage's */
	uint64_t hiwater_rss_bytes;  /* of the address space, when it had one */
	bool has_hiwater;
	uint64_t read_bytes, write_bytes; /* storage I/O of this thread */
	bool has_io;
	uint64_t elapsed_us; /* from the thread's start to its exit */
	uint32_t exit_code;  /* wait status form */
};

struct taskstats_listener {
	int fd; /* -1: closed */
	uint16_t family;
	char cpumask[32];
	bool lost; /* the kernel dropped messages (the buffer overran) */
};

void taskstats_listener_init(struct taskstats_listener *l);
/* Registers for every CPU's exits: 0, or -errno (not root, no TASKSTATS). */
int taskstats_listener_open(struct taskstats_listener *l);
void taskstats_listener_close(struct taskstats_listener *l);
/* Reads every pending message, calling fn for each exit; 0 or -errno. */
int taskstats_listener_drain(struct taskstats_listener *l,
			     void (*fn)(const struct taskstats_exit *e, void *arg), void *arg);

/*
 * The exact run time total_us split between user and system in the
 * proportion of the sampled *user_us and *system_us (which it replaces), as
 * getrusage() does: all to one of them when the other sampled none.
 */
void taskstats_split_cpu(uint64_t total_us, uint64_t *user_us, uint64_t *system_us);

/*
 * One netlink datagram as received from the family `family`: calls fn for
 * each exit in it.  Returns the number of messages it did not understand
 * (0 for a well-formed datagram); never reads past len.
 */
int taskstats_parse(const void *buf, size_t len, uint16_t family,
		    void (*fn)(const struct taskstats_exit *e, void *arg), void *arg);

#endif
