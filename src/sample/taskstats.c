/*
 * taskstats.c - the taskstats exit listener (see taskstats.h): the family's
 * id asked of the generic netlink controller, the listener registered for
 * every CPU, and the parser of the exit messages.
 */
#include "taskstats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>

#include "common/log.h"
#include "common/sysroot.h"
#include "procev.h"

#define TASKSTATS_RCVBUF (8 << 20) /* some 20,000 exits between two drains */

/* A field of struct taskstats is there when the attribute reaches its end. */
#define HAS_FIELD(len, f)                                                                          \
	((len) >= offsetof(struct taskstats, f) + sizeof(((struct taskstats *)0)->f))

void taskstats_listener_init(struct taskstats_listener *l)
{
	memset(l, 0, sizeof(*l));
	l->fd = -1;
}

/* A request: header, genl header, one attribute (a string or nothing). */
static int send_request(int fd, uint16_t type, uint16_t flags, uint8_t cmd, uint8_t version,
			uint16_t attr, const char *value)
{
	union {
		char bytes[256];
		struct nlmsghdr align;
	} req;
	struct nlmsghdr *h = (struct nlmsghdr *)req.bytes;
	struct genlmsghdr *g = (struct genlmsghdr *)(req.bytes + NLMSG_HDRLEN);
	struct nlattr *a = (struct nlattr *)(req.bytes + NLMSG_HDRLEN + GENL_HDRLEN);
	size_t vlen = strlen(value) + 1;
	struct sockaddr_nl to = {.nl_family = AF_NETLINK};

	if (NLMSG_HDRLEN + GENL_HDRLEN + NLA_HDRLEN + vlen > sizeof(req.bytes))
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	a->nla_type = attr;
	a->nla_len = (uint16_t)(NLA_HDRLEN + vlen);
	memcpy((char *)a + NLA_HDRLEN, value, vlen);
	g->cmd = cmd;
	g->version = version;
	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	h->nlmsg_len = NLMSG_HDRLEN + GENL_HDRLEN + NLA_ALIGN(a->nla_len);
	if (sendto(fd, req.bytes, h->nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -errno;
	return 0;
}

/*
 * The answer to a request: the family's id (want_family), or the ack (0 or
 * the kernel's -errno).
 */
static int read_answer(int fd, bool want_family, uint16_t *family)
{
	union {
		char bytes[4096];
		struct nlmsghdr align;
	} u;
	ssize_t n = recv(fd, u.bytes, sizeof(u.bytes), 0);
	const struct nlmsghdr *h = (const struct nlmsghdr *)u.bytes;

	if (n < 0)
		return -errno;
	if ((size_t)n < NLMSG_HDRLEN || h->nlmsg_len > (size_t)n || h->nlmsg_len < NLMSG_HDRLEN)
		return -EPROTO;
	if (h->nlmsg_type == NLMSG_ERROR) {
		struct nlmsgerr err;

		if (h->nlmsg_len < NLMSG_HDRLEN + sizeof(err))
			return -EPROTO;
		memcpy(&err, u.bytes + NLMSG_HDRLEN, sizeof(err));
		return err.error;
	}
	if (!want_family || h->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN)
		return -EPROTO;
	for (size_t off = NLMSG_HDRLEN + GENL_HDRLEN; off + NLA_HDRLEN <= h->nlmsg_len;) {
		struct nlattr a;

		memcpy(&a, u.bytes + off, sizeof(a));
		if (a.nla_len < NLA_HDRLEN || off + a.nla_len > h->nlmsg_len)
			break;
		if ((a.nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID &&
		    a.nla_len >= NLA_HDRLEN + sizeof(*family)) {
			memcpy(family, u.bytes + off + NLA_HDRLEN, sizeof(*family));
			return 0;
		}
		off += NLA_ALIGN(a.nla_len);
	}
	return -ENOENT;
}

int taskstats_listener_open(struct taskstats_listener *l)
{
	struct sockaddr_nl addr = {.nl_family = AF_NETLINK};
	struct timeval tv = {.tv_sec = 2};
	int size = TASKSTATS_RCVBUF;
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	int fd, ret;

	if (sysroot_get()[0])
		return -ENOTSUP; /* a fixture tree's pids are not the kernel's */
	/* the exits' pids are the first pid namespace's: in another they name other processes */
	if (!procev_pid_ns_is_first())
		return -ENOTSUP;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		ret = -errno;
		goto out_close;
	}
	ret = send_request(fd, GENL_ID_CTRL, 0, CTRL_CMD_GETFAMILY, 1, CTRL_ATTR_FAMILY_NAME,
			   TASKSTATS_GENL_NAME);
	if (!ret)
		ret = read_answer(fd, true, &l->family);
	if (ret)
		goto out_close;
	snprintf(l->cpumask, sizeof(l->cpumask), "0-%ld", ncpus > 1 ? ncpus - 1 : 0);
	ret = send_request(fd, l->family, NLM_F_ACK, TASKSTATS_CMD_GET, TASKSTATS_GENL_VERSION,
			   TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, l->cpumask);
	if (!ret)
		ret = read_answer(fd, false, NULL);
	if (ret)
		goto out_close;
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		ret = -errno;
		goto out_close;
	}
	l->fd = fd;
	return 0;
out_close:
	close(fd);
	return ret;
}

void taskstats_listener_close(struct taskstats_listener *l)
{
	if (l->fd >= 0) {
		/* the kernel forgets a closed listener by itself; saying so is polite */
		send_request(l->fd, l->family, 0, TASKSTATS_CMD_GET, TASKSTATS_GENL_VERSION,
			     TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK, l->cpumask);
		close(l->fd);
	}
	taskstats_listener_init(l);
}

void taskstats_split_cpu(uint64_t total_us, uint64_t *user_us, uint64_t *system_us)
{
	uint64_t u = *user_us, s = *system_us;

	if (s == 0) {
		*user_us = total_us;
	} else if (u == 0) {
		*system_us = total_us;
	} else {
		/* in long double: u * total can pass 2^64 after some 50 CPU-days */
		*user_us = (uint64_t)((long double)total_us * u / (long double)(u + s));
		*system_us = total_us - *user_us;
	}
}

/* struct taskstats, as long as the kernel's is, into e. */
static void fill_exit(struct taskstats_exit *e, const unsigned char *p, size_t len)
{
	struct taskstats ts;

	memset(&ts, 0, sizeof(ts));
	memcpy(&ts, p, len < sizeof(ts) ? len : sizeof(ts));
	e->tgid = e->pid;
	if (HAS_FIELD(len, ac_tgid) && ts.ac_tgid)
		e->tgid = (int32_t)ts.ac_tgid;
	if (HAS_FIELD(len, ac_ppid))
		e->ppid = (int32_t)ts.ac_ppid;
	if (HAS_FIELD(len, ac_comm)) {
		memcpy(e->comm, ts.ac_comm, sizeof(e->comm) - 1);
		e->comm[sizeof(e->comm) - 1] = '\0';
	}
	if (HAS_FIELD(len, ac_stime)) {
		e->elapsed_us = ts.ac_etime;
		e->user_us = ts.ac_utime;
		e->system_us = ts.ac_stime;
	}
	/*
	 * ac_utime and ac_stime are the tick-sampled split (a tick each, 4 ms
	 * at HZ=250); the scheduler's exact run time is cpu_run_virtual_total:
	 * split it as the kernel's cputime_adjust() does for getrusage.
	 */
	if (HAS_FIELD(len, cpu_run_virtual_total) && ts.cpu_run_virtual_total)
		taskstats_split_cpu(ts.cpu_run_virtual_total / 1000, &e->user_us, &e->system_us);
	if (HAS_FIELD(len, hiwater_rss) && ts.hiwater_rss) {
		e->hiwater_rss_bytes = ts.hiwater_rss * 1024;
		e->has_hiwater = true;
	}
	if (HAS_FIELD(len, write_bytes)) {
		e->read_bytes = ts.read_bytes;
		e->write_bytes = ts.write_bytes;
		e->has_io = true;
	}
	e->exit_code = ts.ac_exitcode;
}

/*
 * A nested AGGR_PID or AGGR_TGID attribute: its id and its stats (where
 * and how long), or false.
 */
static bool parse_aggr(const unsigned char *p, size_t len, int32_t *id, const unsigned char **stats,
		       size_t *stats_len)
{
	bool have_id = false;

	*stats = NULL;
	while (len >= NLA_HDRLEN) {
		struct nlattr a;

		memcpy(&a, p, sizeof(a));
		if (a.nla_len < NLA_HDRLEN || a.nla_len > len)
			return false;
		switch (a.nla_type & NLA_TYPE_MASK) {
		case TASKSTATS_TYPE_PID:
		case TASKSTATS_TYPE_TGID:
			if (a.nla_len < NLA_HDRLEN + sizeof(*id))
				return false;
			memcpy(id, p + NLA_HDRLEN, sizeof(*id));
			have_id = true;
			break;
		case TASKSTATS_TYPE_STATS:
			*stats = p + NLA_HDRLEN;
			*stats_len = a.nla_len - NLA_HDRLEN;
			break;
		}
		if ((size_t)NLA_ALIGN(a.nla_len) >= len)
			break;
		p += (size_t)NLA_ALIGN(a.nla_len);
		len -= (size_t)NLA_ALIGN(a.nla_len);
	}
	return have_id && *stats;
}

/* One TASKSTATS_CMD_NEW message's attributes: false when not understood. */
static bool parse_message(const unsigned char *p, size_t len,
			  void (*fn)(const struct taskstats_exit *e, void *arg), void *arg)
{
	struct taskstats_exit e;
	const unsigned char *stats = NULL;
	size_t stats_len = 0;
	bool have_pid = false, group_dead = false;

	memset(&e, 0, sizeof(e));
	while (len >= NLA_HDRLEN) {
		struct nlattr a;
		const unsigned char *s;
		size_t slen;
		int32_t id;

		memcpy(&a, p, sizeof(a));
		if (a.nla_len < NLA_HDRLEN || a.nla_len > len)
			return false;
		switch (a.nla_type & NLA_TYPE_MASK) {
		case TASKSTATS_TYPE_AGGR_PID:
			if (!parse_aggr(p + NLA_HDRLEN, a.nla_len - NLA_HDRLEN, &id, &s, &slen))
				return false;
			e.pid = id;
			stats = s;
			stats_len = slen;
			have_pid = true;
			break;
		case TASKSTATS_TYPE_AGGR_TGID:
			group_dead = true; /* its figures: delay accounting only */
			break;
		}
		if ((size_t)NLA_ALIGN(a.nla_len) >= len)
			break;
		p += (size_t)NLA_ALIGN(a.nla_len);
		len -= (size_t)NLA_ALIGN(a.nla_len);
	}
	if (!have_pid || e.pid <= 0)
		return false;
	fill_exit(&e, stats, stats_len);
	e.group_dead = group_dead || e.pid == e.tgid;
	fn(&e, arg);
	return true;
}

int taskstats_parse(const void *buf, size_t len, uint16_t family,
		    void (*fn)(const struct taskstats_exit *e, void *arg), void *arg)
{
	const unsigned char *p = buf;
	int odd = 0;

	while (len >= NLMSG_HDRLEN) {
		struct nlmsghdr h;
		struct genlmsghdr g;
		size_t step;

		memcpy(&h, p, sizeof(h));
		if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > len)
			return odd + 1;
		step = NLMSG_ALIGN(h.nlmsg_len) < len ? NLMSG_ALIGN(h.nlmsg_len) : len;
		if (h.nlmsg_type == family && h.nlmsg_len >= NLMSG_HDRLEN + GENL_HDRLEN) {
			memcpy(&g, p + NLMSG_HDRLEN, sizeof(g));
			if (g.cmd != TASKSTATS_CMD_NEW ||
			    !parse_message(p + NLMSG_HDRLEN + GENL_HDRLEN,
					   h.nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN, fn, arg))
				odd++;
		} else {
			odd++;
		}
		p += step;
		len -= step;
	}
	return odd;
}

int taskstats_listener_drain(struct taskstats_listener *l,
			     void (*fn)(const struct taskstats_exit *e, void *arg), void *arg)
{
	union {
		struct nlmsghdr hdr;
		char buf[16384];
	} u;

	if (l->fd < 0)
		return -EBADF;
	for (;;) {
		ssize_t n = recv(l->fd, u.buf, sizeof(u.buf), 0);

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				l->lost = true;
				continue;
			}
			log_warn(-errno, "taskstats");
			taskstats_listener_close(l);
			return -EIO;
		}
		taskstats_parse(u.buf, (size_t)n, l->family, fn, arg);
	}
}
