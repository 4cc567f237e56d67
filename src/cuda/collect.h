/*
 * collect.h - the receiving end of the CUDA hook (hook.c): a Unix socket
 * that profiled processes connect to, each one's newest snapshot kept.
 *
 * The owner polls the descriptors cuda_collector_fds gives and hands the
 * results to cuda_collector_handle; cuda_collector_drain then gives each
 * process whose snapshot or state changed since the last drain.  A peer's
 * identity is its socket's credentials (SO_PEERCRED), not what it says.
 * Whether a process records is the policy's word at its hello, and
 * cuda_collector_set's afterwards (an agent following its sessions).
 * A peer that breaks the protocol is cut off (what it sent before stays);
 * nothing a peer sends can make the collector fail.
 *
 * Errors: 0 or -errno, logged here.  Not thread-safe: one thread (the
 * owner's poll loop) calls everything.
 */
#ifndef JOBSCOPE_CUDA_COLLECT_H
#define JOBSCOPE_CUDA_COLLECT_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "cuda/cudastat.h"

#define CUDA_COLLECT_MAX_PEERS	  1024	      /* processes connected at once */
#define CUDA_COLLECT_MAX_BUFFERED (64u << 20) /* bytes of incomplete frames, all peers */

struct cuda_peer {
	int fd; /* -1: closed (kept until drained) */
	struct strbuf in;
	struct cuda_proc proc;
	bool hello; /* said who it is */
	bool dirty; /* changed since the last drain */
};

/*
 * Whether a process that said hello should record, and at which interval
 * (ms); NULL policy: every process, at the collector's interval.
 */
typedef bool (*cuda_collect_policy)(void *arg, int32_t pid, int64_t *interval_ms);

struct cuda_collector {
	int listen_fd;
	char path[108];
	int64_t interval_ms;
	cuda_collect_policy policy;
	void *policy_arg;
	struct cuda_peer *peers;
	size_t npeers, alloc;
	size_t seen;	 /* processes that said hello, ever */
	size_t buffered; /* bytes of the peers' input buffers */
	bool warned_full;
};

void cuda_collector_init(struct cuda_collector *c);
/* Listens on path (a stale socket file there is replaced), mode 0600 unless world. */
int cuda_collector_listen(struct cuda_collector *c, const char *path, int64_t interval_ms,
			  bool world);
/* The descriptors to poll for input: the listening one and each open peer's. */
size_t cuda_collector_fds(const struct cuda_collector *c, struct pollfd *fds, size_t max);
/* Accepts and reads what fds (as cuda_collector_fds filled them, polled) say is ready. */
void cuda_collector_handle(struct cuda_collector *c, const struct pollfd *fds, size_t n);
/*
 * Tells every connected process that said hello (and records or waits:
 * state ok or off) to record at interval_ms, or to stop; new ones are
 * answered by the policy as before.  A process turned on is ok again; one
 * turned off before it sent a snapshot is off (one that sent some keeps
 * them, and its state).  Each whose state changed is dirty.  A peer gone
 * is closed.
 */
void cuda_collector_set(struct cuda_collector *c, bool on, int64_t interval_ms);
/*
 * Reads what the peers still have to say, until each has closed or
 * wait_ms have passed (the end of a run: the processes are gone and their
 * last frames are in the socket buffers).
 */
void cuda_collector_finish(struct cuda_collector *c, int wait_ms);
/*
 * Calls fn for every process whose snapshot or state changed since the
 * last drain, and forgets the closed ones.  A process whose fn failed
 * stays dirty for the next drain; the first failure is returned.
 */
int cuda_collector_drain(struct cuda_collector *c, int (*fn)(void *arg, const struct cuda_proc *p),
			 void *arg);
/* Closes every connection and the socket, and removes its file. */
void cuda_collector_release(struct cuda_collector *c);

#endif
