/*
 * collect.c - the StatsD sockets (statsd.h): a UDP socket and a Unix
 * datagram socket whose kernel-given credentials name each sender's pid,
 * read without blocking; and statsd_send, the client side that `jobscope
 * mark` and `jobscope metric` use.
 */
#include "app/statsd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* At most this many datagrams per socket per call: a flood cannot starve the caller. */
#define COLLECT_BATCH  10000
#define COLLECT_RCVBUF (4 << 20)

void app_collector_init(struct app_collector *c)
{
	memset(c, 0, sizeof(*c));
	c->udp_fd = c->unix_fd = -1;
}

static int collector_buf(struct app_collector *c)
{
	if (!c->buf && !(c->buf = malloc(APP_DGRAM_MAX)))
		return -ENOMEM;
	return 0;
}

/* A bigger receive queue rides out bursts; refused (a limit) is fine. */
static void raise_rcvbuf(int fd)
{
	int size = COLLECT_RCVBUF;

	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

int app_collector_open_udp(struct app_collector *c, const char *addr, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	int fd, ret;

	if (c->udp_fd >= 0)
		return -EBUSY;
	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		sslen = sizeof(*in4);
	} else if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		sslen = sizeof(*in6);
	} else {
		return -EINVAL;
	}
	if (collector_buf(c))
		return -ENOMEM;
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	raise_rcvbuf(fd);
	if (bind(fd, (struct sockaddr *)&ss, sslen) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sslen) < 0) {
		ret = -errno;
		goto out_close;
	}
	c->udp_fd = fd;
	c->udp_port = ntohs(ss.ss_family == AF_INET ? in4->sin_port : in6->sin6_port);
	return 0;
out_close:
	close(fd);
	return ret;
}

/*
 * A socket file left by a receiver that died is replaced; one a live
 * receiver is bound to is not taken over (connect tells them apart), and
 * a path that is not a socket is never removed.
 */
static int clear_stale_socket(const struct sockaddr_un *sun)
{
	struct stat st;
	int fd, ret = 0;

	if (lstat(sun->sun_path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0)
		ret = -EADDRINUSE;
	else if (errno != ECONNREFUSED)
		ret = -errno;
	close(fd);
	if (!ret && unlink(sun->sun_path) < 0 && errno != ENOENT)
		ret = -errno;
	return ret;
}

int app_collector_open_unix(struct app_collector *c, const char *path, bool world)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd, on = 1, ret;

	if (c->unix_fd >= 0)
		return -EBUSY;
	if (!*path || strlen(path) >= sizeof(sun.sun_path) || strlen(path) >= sizeof(c->path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (collector_buf(c))
		return -ENOMEM;
	ret = clear_stale_socket(&sun);
	if (ret)
		return ret;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	raise_rcvbuf(fd);
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) < 0 ||
	    bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		ret = -errno;
		goto out_close;
	}
	/* bind made the file with the umask's mode: set the one asked for */
	if (chmod(path, world ? 0666 : 0600) < 0) {
		ret = -errno;
		goto out_unlink;
	}
	c->unix_fd = fd;
	memcpy(c->path, path, strlen(path) + 1);
	return 0;
out_unlink:
	unlink(path);
out_close:
	close(fd);
	return ret;
}

size_t app_collector_fds(const struct app_collector *c, struct pollfd *fds, size_t max)
{
	size_t n = 0;

	if (c->udp_fd >= 0 && n < max)
		fds[n++] = (struct pollfd){.fd = c->udp_fd, .events = POLLIN};
	if (c->unix_fd >= 0 && n < max)
		fds[n++] = (struct pollfd){.fd = c->unix_fd, .events = POLLIN};
	return n;
}

/*
 * Up to `batch` datagrams from fd, each handed to fn with its sender's
 * pid (from SCM_CREDENTIALS on the Unix socket).  A datagram longer than
 * the buffer comes cut (MSG_TRUNC): its last line is then bad, the
 * others count.
 */
static void read_socket(struct app_collector *c, int fd, bool creds, size_t batch,
			void (*fn)(void *arg, const char *data, size_t len, int32_t pid), void *arg)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} control;

	for (size_t i = 0; i < batch; i++) {
		struct iovec iov = {.iov_base = c->buf, .iov_len = APP_DGRAM_MAX};
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
		int32_t pid = 0;
		ssize_t n;

		if (creds) {
			msg.msg_control = control.buf;
			msg.msg_controllen = sizeof(control.buf);
		}
		n = recvmsg(fd, &msg, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return; /* EAGAIN: nothing more queued; anything else: try next time */
		}
		if (creds) {
			for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm;
			     cm = CMSG_NXTHDR(&msg, cm)) {
				struct ucred uc;

				if (cm->cmsg_level != SOL_SOCKET ||
				    cm->cmsg_type != SCM_CREDENTIALS ||
				    cm->cmsg_len < CMSG_LEN(sizeof(uc)))
					continue;
				memcpy(&uc, CMSG_DATA(cm), sizeof(uc));
				pid = uc.pid;
			}
		}
		c->datagrams++;
		c->bytes += (uint64_t)n;
		fn(arg, c->buf, (size_t)n, pid);
	}
}

void app_collector_handle(struct app_collector *c, const struct pollfd *fds, size_t n,
			  void (*fn)(void *arg, const char *data, size_t len, int32_t pid),
			  void *arg)
{
	for (size_t i = 0; i < n; i++) {
		if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLERR)))
			continue;
		if (fds[i].fd == c->udp_fd)
			read_socket(c, c->udp_fd, false, COLLECT_BATCH, fn, arg);
		else if (fds[i].fd == c->unix_fd)
			read_socket(c, c->unix_fd, true, COLLECT_BATCH, fn, arg);
	}
}

void app_collector_drain(struct app_collector *c,
			 void (*fn)(void *arg, const char *data, size_t len, int32_t pid),
			 void *arg)
{
	/* a queue holds at most a few MiB: this bound is only against a sender that never stops */
	if (c->udp_fd >= 0)
		read_socket(c, c->udp_fd, false, 100 * COLLECT_BATCH, fn, arg);
	if (c->unix_fd >= 0)
		read_socket(c, c->unix_fd, true, 100 * COLLECT_BATCH, fn, arg);
}

void app_collector_release(struct app_collector *c)
{
	if (c->udp_fd >= 0)
		close(c->udp_fd);
	if (c->unix_fd >= 0) {
		close(c->unix_fd);
		if (c->path[0])
			unlink(c->path);
	}
	free(c->buf);
	app_collector_init(c);
}

/*
 * Waits (STATSD_SEND_WAIT_MS at most) until the receiver has read what fd
 * sent: a Unix datagram stays charged to its sender until then (SIOCOUTQ).
 * A receiver learns the sender's pid from the datagram and its parent from
 * /proc/PID/stat, so a `jobscope mark` that lived a millisecond must still
 * be there when it is read: its job is its parent's (agent/app.c).
 */
static void wait_read(int fd)
{
	for (int ms = 0; ms < STATSD_SEND_WAIT_MS; ms++) {
		int queued = 0;

		if (ioctl(fd, SIOCOUTQ, &queued) < 0 || queued <= 0)
			return;
		usleep(1000);
	}
}

static int send_unix(const char *path, const char *data, size_t len)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	ssize_t n;
	int fd, ret = 0;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	n = sendto(fd, data, len, 0, (struct sockaddr *)&sun, sizeof(sun));
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != len)
		ret = -EMSGSIZE;
	else
		wait_read(fd);
	close(fd);
	return ret;
}

static int send_udp(const char *host, const char *port, const char *data, size_t len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *res, *ai;
	int ret = -EHOSTUNREACH;

	if (getaddrinfo(host, port, &hints, &res) != 0)
		return -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		ssize_t n;

		if (fd < 0) {
			ret = -errno;
			continue;
		}
		n = sendto(fd, data, len, 0, ai->ai_addr, ai->ai_addrlen);
		ret = n < 0 ? -errno : (size_t)n != len ? -EMSGSIZE : 0;
		close(fd);
		if (!ret)
			break;
	}
	freeaddrinfo(res);
	return ret;
}

int statsd_send(const char *data, size_t len, char *where, size_t where_size)
{
	const char *path = getenv("JOBSCOPE_STATSD_SOCKET");
	const char *host = getenv("STATSD_HOST");
	const char *port = getenv("STATSD_PORT");
	char *end;
	long p;

	if (path && *path) {
		snprintf(where, where_size, "unix:%s", path);
		return send_unix(path, data, len);
	}
	if (!host || !*host)
		host = "127.0.0.1";
	if (!port || !*port)
		port = "8125";
	snprintf(where, where_size, "udp:%s:%s", host, port);
	p = strtol(port, &end, 10);
	if (*end || end == port || p < 1 || p > 65535 || port[0] < '0' || port[0] > '9')
		return -EINVAL;
	return send_udp(host, port, data, len);
}
