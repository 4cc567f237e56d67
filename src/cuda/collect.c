/*
 * collect.c - the CUDA hook's receiver (collect.h): accept, read frames,
 * answer a hello with "on" or "off", keep each process's newest snapshot.
 *
 * Peers are read without blocking into their own buffer (at most one
 * frame and a header), and whole frames are parsed as they complete.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "cuda/collect.h"
#include "cuda/cudaproto.h"

#define READ_CHUNK 65536

void cuda_collector_init(struct cuda_collector *c)
{
	memset(c, 0, sizeof(*c));
	c->listen_fd = -1;
}

int cuda_collector_listen(struct cuda_collector *c, const char *path, int64_t interval_ms,
			  bool world)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(addr.sun_path))
		return log_err(-ENAMETOOLONG, "CUDA socket path '%s' is too long", path);
	memcpy(addr.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return log_err(-errno, "socket");
	unlink(path);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    chmod(path, world ? 0666 : 0600) < 0 || listen(fd, 128) < 0) {
		int ret = -errno;

		close(fd);
		unlink(path);
		return log_err(ret, "cannot listen on '%s'", path);
	}
	c->listen_fd = fd;
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->interval_ms = interval_ms;
	return 0;
}

size_t cuda_collector_fds(const struct cuda_collector *c, struct pollfd *fds, size_t max)
{
	size_t n = 0;

	if (c->listen_fd >= 0 && n < max)
		fds[n++] = (struct pollfd){.fd = c->listen_fd, .events = POLLIN};
	for (size_t i = 0; i < c->npeers && n < max; i++)
		if (c->peers[i].fd >= 0)
			fds[n++] = (struct pollfd){.fd = c->peers[i].fd, .events = POLLIN};
	return n;
}

/* Gives a peer's input buffer back (it is kept only while a frame is incomplete). */
static void peer_drop_input(struct cuda_collector *c, struct cuda_peer *p)
{
	c->buffered -= p->in.alloc;
	strbuf_release(&p->in);
	strbuf_init(&p->in, CUDA_PROTO_MAX_FRAME + CUDA_PROTO_HEADER + READ_CHUNK);
}

static void peer_close(struct cuda_collector *c, struct cuda_peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	peer_drop_input(c, p);
}

/* false when the peer is gone (a few bytes into an empty socket buffer: all or nothing). */
static bool peer_send(struct cuda_peer *p, const struct strbuf *frame)
{
	return send(p->fd, frame->buf, frame->len, MSG_NOSIGNAL | MSG_DONTWAIT) ==
	       (ssize_t)frame->len;
}

/* false when the peer is gone. */
static bool answer_hello(struct cuda_collector *c, struct cuda_peer *p)
{
	int64_t interval = c->interval_ms;
	bool on = c->policy ? c->policy(c->policy_arg, p->proc.pid, &interval) : true;
	struct strbuf frame;
	bool sent = false;

	if (p->proc.state != CUDA_PROC_OK)
		return true; /* it closes after its hello */
	strbuf_init(&frame, 256);
	if (!(on ? cuda_proto_on(&frame, interval) : cuda_proto_off(&frame)))
		sent = peer_send(p, &frame);
	strbuf_release(&frame);
	if (!on)
		p->proc.state = CUDA_PROC_OFF;
	return sent;
}

/* One whole frame's payload: 0, -EPROTO (the peer broke the protocol), -EPIPE (it is gone). */
static int peer_frame(struct cuda_collector *c, struct cuda_peer *p, const char *payload,
		      size_t len)
{
	enum cuda_msg_type type;
	int32_t pid = p->proc.pid;

	if (cuda_proto_type(payload, len, &type))
		return -EPROTO;
	if ((type == CUDA_MSG_HELLO) == p->hello || type == CUDA_MSG_ON || type == CUDA_MSG_OFF)
		return -EPROTO; /* one hello, first */
	if (cuda_proto_parse(payload, len, &p->proc))
		return -EPROTO;
	p->proc.pid = pid; /* the kernel's word, not the peer's */
	p->dirty = true;
	if (type == CUDA_MSG_HELLO) {
		p->hello = true;
		c->seen++;
		if (!answer_hello(c, p))
			return -EPIPE;
	}
	return 0;
}

/* Reads what is there; false when the peer is done (closed, or cut off). */
static bool peer_read(struct cuda_collector *c, struct cuda_peer *p)
{
	for (;;) {
		size_t had = p->in.alloc;
		ssize_t n;
		int64_t len;

		if (strbuf_grow(&p->in, READ_CHUNK))
			return false;
		c->buffered += p->in.alloc - had;
		/* the socket may be every user's (an agent's): no peer may hold all memory */
		if (c->buffered > CUDA_COLLECT_MAX_BUFFERED) {
			log_warn(
			    0,
			    "CUDA hooks hold more than %u MiB of unread frames: pid %d is cut off",
			    CUDA_COLLECT_MAX_BUFFERED >> 20, (int)p->proc.pid);
			return false;
		}
		n = recv(p->fd, p->in.buf + p->in.len, READ_CHUNK, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN;
		if (n == 0)
			return false;
		p->in.len += (size_t)n;
		while ((len = cuda_proto_frame_len(p->in.buf, p->in.len)) != 0) {
			size_t whole = (size_t)len + CUDA_PROTO_HEADER;
			int ret;

			if (len < 0)
				goto bad;
			if (p->in.len < whole)
				break;
			ret = peer_frame(c, p, p->in.buf + CUDA_PROTO_HEADER, (size_t)len);
			if (ret == -EPIPE)
				return false;
			if (ret)
				goto bad;
			memmove(p->in.buf, p->in.buf + whole, p->in.len - whole);
			p->in.len -= whole;
		}
		if (p->in.len == 0)
			peer_drop_input(c, p);
	}
bad:
	log_warn(0, "CUDA hook of pid %d broke the protocol: its connection is closed",
		 (int)p->proc.pid);
	return false;
}

static void accept_peers(struct cuda_collector *c)
{
	for (;;) {
		struct ucred cred;
		socklen_t clen = sizeof(cred);
		struct cuda_peer *p;
		int fd = accept4(c->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.pid <= 0) {
			close(fd);
			continue;
		}
		if (c->npeers >= CUDA_COLLECT_MAX_PEERS) {
			if (!c->warned_full)
				log_warn(
				    0,
				    "more than %d CUDA processes at once: pid %d is not profiled",
				    CUDA_COLLECT_MAX_PEERS, (int)cred.pid);
			c->warned_full = true;
			close(fd);
			continue;
		}
		if (c->npeers == c->alloc) {
			size_t alloc = c->alloc ? c->alloc * 2 : 8;
			struct cuda_peer *grown = realloc(c->peers, alloc * sizeof(*grown));

			if (!grown) {
				close(fd);
				return;
			}
			c->peers = grown;
			c->alloc = alloc;
		}
		p = &c->peers[c->npeers++];
		memset(p, 0, sizeof(*p));
		p->fd = fd;
		strbuf_init(&p->in, CUDA_PROTO_MAX_FRAME + CUDA_PROTO_HEADER + READ_CHUNK);
		cuda_proc_init(&p->proc);
		p->proc.pid = (int32_t)cred.pid;
	}
}

static struct cuda_peer *peer_by_fd(struct cuda_collector *c, int fd)
{
	for (size_t i = 0; i < c->npeers; i++)
		if (c->peers[i].fd == fd)
			return &c->peers[i];
	return NULL;
}

void cuda_collector_handle(struct cuda_collector *c, const struct pollfd *fds, size_t n)
{
	bool accept_now = false;

	for (size_t i = 0; i < n; i++) {
		struct cuda_peer *p;

		if (!fds[i].revents)
			continue;
		if (fds[i].fd == c->listen_fd) {
			accept_now = true;
			continue;
		}
		p = peer_by_fd(c, fds[i].fd);
		if (p && !peer_read(c, p))
			peer_close(c, p);
	}
	if (accept_now)
		accept_peers(c);
}

void cuda_collector_set(struct cuda_collector *c, bool on, int64_t interval_ms)
{
	struct strbuf frame;

	strbuf_init(&frame, 256);
	if (on ? cuda_proto_on(&frame, interval_ms) : cuda_proto_off(&frame)) {
		strbuf_release(&frame);
		return;
	}
	if (on)
		c->interval_ms = interval_ms;
	for (size_t i = 0; i < c->npeers; i++) {
		struct cuda_peer *p = &c->peers[i];
		enum cuda_proc_state was = p->proc.state;

		if (p->fd < 0 || !p->hello || (was != CUDA_PROC_OK && was != CUDA_PROC_OFF))
			continue;
		if (!peer_send(p, &frame)) {
			peer_close(c, p);
			continue;
		}
		if (on)
			p->proc.state = CUDA_PROC_OK;
		else if (p->proc.seq == 0)
			p->proc.state = CUDA_PROC_OFF;
		if (p->proc.state != was)
			p->dirty = true;
	}
	strbuf_release(&frame);
}

void cuda_collector_finish(struct cuda_collector *c, int wait_ms)
{
	int64_t deadline = time_mono_ns() / 1000000 + wait_ms;

	accept_peers(c);
	for (;;) {
		struct pollfd fds[CUDA_COLLECT_MAX_PEERS + 1];
		size_t n = cuda_collector_fds(c, fds, CUDA_COLLECT_MAX_PEERS + 1);
		int64_t left = deadline - time_mono_ns() / 1000000;

		if (n <= 1 || left <= 0)
			return;
		if (poll(fds + 1, n - 1, (int)left) <= 0)
			return;
		cuda_collector_handle(c, fds + 1, n - 1);
	}
}

int cuda_collector_drain(struct cuda_collector *c, int (*fn)(void *arg, const struct cuda_proc *p),
			 void *arg)
{
	int first = 0;
	size_t kept = 0;

	for (size_t i = 0; i < c->npeers; i++) {
		struct cuda_peer *p = &c->peers[i];

		if (p->dirty && p->hello) {
			int ret = fn(arg, &p->proc);

			if (ret && !first)
				first = ret;
			p->dirty = ret != 0;
		}
		if (p->fd < 0 && !p->dirty) {
			cuda_proc_release(&p->proc);
			continue;
		}
		c->peers[kept++] = *p;
	}
	c->npeers = kept;
	return first;
}

void cuda_collector_release(struct cuda_collector *c)
{
	for (size_t i = 0; i < c->npeers; i++) {
		peer_close(c, &c->peers[i]);
		cuda_proc_release(&c->peers[i].proc);
	}
	free(c->peers);
	if (c->listen_fd >= 0) {
		close(c->listen_fd);
		unlink(c->path);
	}
	cuda_collector_init(c);
}
