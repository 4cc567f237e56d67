/*
 * procev.h - new processes as the kernel announces them (the process events
 * connector: netlink, NETLINK_CONNECTOR, CN_IDX_PROC), so that a scan of
 * every process need not list /proc each tick.
 *
 * Only the pid of each new process (a fork whose child is a thread group
 * leader) is kept: exits show as reads of the process's kept-open /proc
 * files failing, execs as its stat changing.  A second socket may gather
 * the ends of processes with the kernel's time of each (procev_open_exits:
 * `jobscope run` dates the exits taskstats reports with them).  A socket filter drops every
 * other event in the kernel.  When the kernel drops events (the socket's
 * buffer overran) `lost` is set: the caller lists /proc again.
 *
 * procev_open() needs CAP_NET_ADMIN (root), the real /proc (no sysroot) and
 * the first pid namespace (the events' pids are that namespace's): 0 or
 * -errno, and the caller goes on listing /proc.  The parser does no
 * I/O.  Not thread-safe.
 */
#ifndef JOBSCOPE_PROCEV_H
#define JOBSCOPE_PROCEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROCEV_MAX_PIDS 65536 /* more between two drains counts as lost */

/* A process's end as the kernel stamped it (procev_open_exits). */
struct procev_exit {
	int32_t pid;	 /* the thread group leader's: the process's */
	int64_t mono_ns; /* CLOCK_MONOTONIC at its exit */
};

struct procev {
	int fd;	       /* -1: closed */
	int32_t *pids; /* new processes since the last procev_take() */
	size_t npids, alloc;
	bool lost;
	bool exits_only; /* procev_open_exits: ends gathered, not forks */
	struct procev_exit *exits;
	size_t nexits, exits_alloc;
};

void procev_init(struct procev *ev);
/* Whether this process, and /proc, are in the first pid namespace. */
bool procev_pid_ns_is_first(void);
int procev_open(struct procev *ev);
/*
 * The same socket for the ends of processes instead (an exit whose thread
 * is its group's leader), each with the kernel's time of it: drained into
 * ev->exits, which the caller empties as it uses them.
 */
int procev_open_exits(struct procev *ev);
void procev_close(struct procev *ev);
/* Reads every pending event; 0 or -errno (the socket failed: closed). */
int procev_drain(struct procev *ev);
/* Forgets the pids gathered and `lost` (after a listing of /proc). */
void procev_clear(struct procev *ev);

/*
 * One netlink datagram as received: calls fn(pid, arg) for each new
 * process in it.  Returns the number of messages that were not process
 * events it understood (0 for a well-formed datagram); never reads past len.
 */
int procev_parse(const void *buf, size_t len, void (*fn)(int32_t pid, void *arg), void *arg);
/* The same, with exit_fn(pid, CLOCK_MONOTONIC ns, arg) for each end of a process too. */
int procev_parse_events(const void *buf, size_t len, void (*fork_fn)(int32_t pid, void *arg),
			void (*exit_fn)(int32_t pid, int64_t mono_ns, void *arg), void *arg);

#endif
