/*
 * procev.c - the process events connector (see procev.h): the socket, its
 * filter, and the parser of what it receives.
 */
#include "procev.h"

#include <endian.h>
#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/log.h"
#include "common/sysroot.h"

#define PROCEV_RCVBUF (4 << 20) /* some 5,000 events between two ticks */
/* the first pid namespace's inode number (the kernel's PROC_PID_INIT_INO, since 3.8) */
#define PROCEV_PID_INIT_INO 0xEFFFFFFCu

/* Where a fork's fields are in a datagram: netlink header, cn_msg, proc_event. */
#define OFF_EVENT      (NLMSG_HDRLEN + sizeof(struct cn_msg))
#define OFF_WHAT       (OFF_EVENT + offsetof(struct proc_event, what))
#define OFF_CHILD_PID  (OFF_EVENT + offsetof(struct proc_event, event_data.fork.child_pid))
#define OFF_CHILD_TGID (OFF_EVENT + offsetof(struct proc_event, event_data.fork.child_tgid))
#define OFF_EXIT_PID   (OFF_EVENT + offsetof(struct proc_event, event_data.exit.process_pid))
#define OFF_EXIT_TGID  (OFF_EVENT + offsetof(struct proc_event, event_data.exit.process_tgid))

void procev_init(struct procev *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->fd = -1;
}

/*
 * Keeps forks of processes (child pid == child tgid), or the exits of
 * thread group leaders, and drops the rest in the kernel.  Classic BPF loads words big-endian: the
 * event's `what`, in host order, is compared byte-swapped.
 */
static void attach_filter(int fd, bool exits)
{
	struct sock_filter code[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, OFF_WHAT),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htobe32(exits ? PROC_EVENT_EXIT : PROC_EVENT_FORK),
		     0, 4),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, exits ? OFF_EXIT_PID : OFF_CHILD_PID),
	    BPF_STMT(BPF_MISC | BPF_TAX, 0),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, exits ? OFF_EXIT_TGID : OFF_CHILD_TGID),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_X, 0, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, 0),
	    BPF_STMT(BPF_RET | BPF_K, 0xffffffff),
	};
	struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};

	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0)
		log_debug("process events: no socket filter (%s): every event is read",
			  strerror(errno));
}

bool procev_pid_ns_is_first(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) == 0 && st.st_ino == PROCEV_PID_INIT_INO;
}

static int open_socket(struct procev *ev, bool exits)
{
	struct sockaddr_nl addr = {.nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC};
	/*
	 * header, connector message, operation, back to back (a struct would
	 * put cn_msg's flexible array mid-struct, which clang refuses)
	 */
	union {
		char bytes[sizeof(struct nlmsghdr) + sizeof(struct cn_msg) +
			   sizeof(enum proc_cn_mcast_op)];
		struct nlmsghdr align;
	} req;
	struct nlmsghdr *hdr = (struct nlmsghdr *)req.bytes;
	struct cn_msg *msg = (struct cn_msg *)(req.bytes + sizeof(*hdr));
	enum proc_cn_mcast_op op = PROC_CN_MCAST_LISTEN;
	int size = PROCEV_RCVBUF;
	int fd, ret;

	if (sysroot_get()[0])
		return -ENOTSUP; /* a fixture tree's pids are not the kernel's */
	/*
	 * The events carry pids as the first pid namespace numbers them: in a
	 * namespace of its own (a container, a pod without hostPID) they name
	 * other processes than /proc does, or none, and new processes would go
	 * unseen until the next listing.  /proc/self resolves only when /proc
	 * is a mount of our own namespace.
	 */
	if (!procev_pid_ns_is_first())
		return -ENOTSUP;
	fd = socket(PF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	attach_filter(fd, exits);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		goto out_close;
	memset(&req, 0, sizeof(req));
	hdr->nlmsg_len = sizeof(req.bytes);
	hdr->nlmsg_type = NLMSG_DONE;
	msg->id.idx = CN_IDX_PROC;
	msg->id.val = CN_VAL_PROC;
	msg->len = sizeof(op);
	memcpy(req.bytes + sizeof(*hdr) + sizeof(*msg), &op, sizeof(op));
	if (send(fd, req.bytes, sizeof(req.bytes), 0) < 0)
		goto out_close;
	ev->fd = fd;
	ev->exits_only = exits;
	ev->lost = true; /* nothing gathered yet: the first scan lists /proc */
	return 0;
out_close:
	ret = -errno;
	close(fd);
	return ret;
}

int procev_open(struct procev *ev)
{
	return open_socket(ev, false);
}

int procev_open_exits(struct procev *ev)
{
	return open_socket(ev, true);
}

void procev_close(struct procev *ev)
{
	if (ev->fd >= 0)
		close(ev->fd);
	free(ev->pids);
	free(ev->exits);
	procev_init(ev);
}

void procev_clear(struct procev *ev)
{
	ev->npids = 0;
	ev->lost = false;
}

static void add_pid(int32_t pid, void *arg)
{
	struct procev *ev = arg;

	if (ev->npids >= PROCEV_MAX_PIDS || ARRAY_GROW(ev->pids, ev->npids, ev->alloc, 64)) {
		ev->lost = true;
		return;
	}
	ev->pids[ev->npids++] = pid;
}

static void add_exit(int32_t pid, int64_t mono_ns, void *arg)
{
	struct procev *ev = arg;

	if (ev->nexits >= PROCEV_MAX_PIDS ||
	    ARRAY_GROW(ev->exits, ev->nexits, ev->exits_alloc, 64)) {
		ev->lost = true;
		return;
	}
	ev->exits[ev->nexits++] = (struct procev_exit){pid, mono_ns};
}

int procev_parse(const void *buf, size_t len, void (*fn)(int32_t pid, void *arg), void *arg)
{
	return procev_parse_events(buf, len, fn, NULL, arg);
}

int procev_parse_events(const void *buf, size_t len, void (*fork_fn)(int32_t pid, void *arg),
			void (*exit_fn)(int32_t pid, int64_t mono_ns, void *arg), void *arg)
{
	const unsigned char *p = buf;
	int odd = 0;

	while (len >= NLMSG_HDRLEN) {
		struct nlmsghdr hdr;
		struct cn_msg msg;
		struct proc_event pe;
		size_t step;

		memcpy(&hdr, p, sizeof(hdr));
		if (hdr.nlmsg_len < NLMSG_HDRLEN || hdr.nlmsg_len > len)
			return odd + 1;
		step = NLMSG_ALIGN(hdr.nlmsg_len) < len ? NLMSG_ALIGN(hdr.nlmsg_len) : len;
		if (hdr.nlmsg_type == NLMSG_DONE &&
		    hdr.nlmsg_len >=
			NLMSG_HDRLEN + sizeof(msg) + offsetof(struct proc_event, event_data)) {
			memcpy(&msg, p + NLMSG_HDRLEN, sizeof(msg));
			memset(&pe, 0, sizeof(pe));
			memcpy(&pe, p + OFF_EVENT,
			       hdr.nlmsg_len - OFF_EVENT < sizeof(pe) ? hdr.nlmsg_len - OFF_EVENT
								      : sizeof(pe));
			if (msg.id.idx != CN_IDX_PROC || msg.id.val != CN_VAL_PROC)
				odd++;
			else if (fork_fn && pe.what == PROC_EVENT_FORK &&
				 hdr.nlmsg_len >=
				     OFF_CHILD_TGID + sizeof(pe.event_data.fork.child_tgid) &&
				 pe.event_data.fork.child_pid == pe.event_data.fork.child_tgid &&
				 pe.event_data.fork.child_pid > 0)
				fork_fn(pe.event_data.fork.child_pid, arg);
			else if (exit_fn && pe.what == PROC_EVENT_EXIT &&
				 hdr.nlmsg_len >=
				     OFF_EXIT_TGID + sizeof(pe.event_data.exit.process_tgid) &&
				 pe.event_data.exit.process_pid ==
				     pe.event_data.exit.process_tgid &&
				 pe.event_data.exit.process_pid > 0 &&
				 pe.timestamp_ns <= (uint64_t)INT64_MAX)
				exit_fn(pe.event_data.exit.process_pid, (int64_t)pe.timestamp_ns,
					arg);
		} else {
			odd++;
		}
		p += step;
		len -= step;
	}
	return odd;
}

int procev_drain(struct procev *ev)
{
	/* aligned for the netlink headers the parser copies out */
	union {
		struct nlmsghdr hdr;
		char buf[8192];
	} u;

	if (ev->fd < 0)
		return -EBADF;
	for (;;) {
		ssize_t n = recv(ev->fd, u.buf, sizeof(u.buf), 0);

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				ev->lost = true; /* the kernel dropped some: list /proc */
				continue;
			}
			log_warn(-errno, "process events");
			procev_close(ev);
			return -EIO;
		}
		if (ev->exits_only)
			procev_parse_events(u.buf, (size_t)n, NULL, add_exit, ev);
		else
			procev_parse(u.buf, (size_t)n, add_pid, ev);
	}
}
