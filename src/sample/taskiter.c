/*
 * taskiter.c - the kernel's task iterator: loading it (libbpf, with dlopen)
 * and reading it (the bpf system call and read(), no library).
 */
#include "sample/taskiter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/sysroot.h"
#include "sample/procev.h"
#include "sample/taskiter_rec.h"

#if JOBSCOPE_HAVE_BPF
#include <bpf/libbpf.h>
#include <dlfcn.h>
#include <linux/bpf.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "sample/proc.h"

/* the compiled tasks.bpf.c (made by src/sample/embed_bpf.py) */
extern const unsigned char taskiter_object[];
extern const size_t taskiter_object_size;
#endif

#define TASKITER_FIRST_BUF	 (64 * 1024)
#define TASKITER_LOAD_TIMEOUT_MS 10000 /* the loader's answer (it takes 30 ms here) */

void taskiter_init(struct taskiter *ti)
{
	memset(ti, 0, sizeof(*ti));
	ti->fd = -1;
}

void taskiter_close(struct taskiter *ti)
{
	if (ti->fd >= 0)
		close(ti->fd);
	free(ti->procs);
	free(ti->buf);
	taskiter_init(ti);
}

static int cmp_proc(const void *a, const void *b)
{
	int32_t x = ((const struct taskiter_proc *)a)->pid;
	int32_t y = ((const struct taskiter_proc *)b)->pid;

	return (x > y) - (x < y);
}

const struct taskiter_proc *taskiter_find(const struct taskiter *ti, int32_t pid)
{
	size_t lo = 0, hi = ti->nprocs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ti->procs[mid].pid == pid)
			return &ti->procs[mid];
		if (ti->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int taskiter_parse(struct taskiter *ti, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t n = len / sizeof(struct taskiter_rec);
	bool sorted = true;

	if (len % sizeof(struct taskiter_rec))
		return -EINVAL;
	ti->nprocs = 0;
	/* the leaders first: the iterator goes by task id, so by pid */
	for (size_t i = 0; i < n; i++) {
		struct taskiter_rec r;
		struct taskiter_proc *e;

		memcpy(&r, p + i * sizeof(r), sizeof(r));
		if (r.tid != r.tgid)
			continue;
		if (ti->nprocs == ti->procs_alloc) {
			size_t want = ti->procs_alloc ? ti->procs_alloc * 2 : 256;
			struct taskiter_proc *procs = realloc(ti->procs, want * sizeof(*procs));

			if (!procs)
				return -ENOMEM;
			ti->procs = procs;
			ti->procs_alloc = want;
		}
		e = &ti->procs[ti->nprocs++];
		if (ti->nprocs > 1 && e[-1].pid >= r.tgid)
			sorted = false;
		e->pid = r.tgid;
		e->threads = 1;
		e->run_ns = r.run_ns;
		e->wait_ns = r.wait_ns;
		e->start_ns = r.start_ns;
	}
	if (!sorted)
		qsort(ti->procs, ti->nprocs, sizeof(*ti->procs), cmp_proc);
	/* then the other threads, each added to its process */
	for (size_t i = 0; i < n; i++) {
		struct taskiter_rec r;
		struct taskiter_proc *e;

		memcpy(&r, p + i * sizeof(r), sizeof(r));
		if (r.tid == r.tgid)
			continue;
		/* a thread whose leader is gone from the kernel's table: not counted */
		e = (struct taskiter_proc *)taskiter_find(ti, r.tgid);
		if (!e)
			continue;
		e->threads++;
		e->run_ns += r.run_ns;
		e->wait_ns += r.wait_ns;
	}
	return 0;
}

#if JOBSCOPE_HAVE_BPF

/* The libbpf functions used, resolved with dlsym. */
#define TASKITER_LIBBPF(X)                                                                         \
	X(libbpf_set_print)                                                                        \
	X(bpf_object__open_mem)                                                                    \
	X(bpf_object__load)                                                                        \
	X(bpf_object__close)                                                                       \
	X(bpf_object__find_program_by_name)                                                        \
	X(bpf_program__attach_iter)                                                                \
	X(bpf_link__fd)                                                                            \
	X(bpf_link__disconnect)                                                                    \
	X(bpf_link__destroy)

struct libbpf_fns {
#define TASKITER_FIELD(name) __typeof__(name) *name;
	TASKITER_LIBBPF(TASKITER_FIELD)
#undef TASKITER_FIELD
};

/* libbpf's own messages: the reason a load failed, at debug level */
__attribute__((format(printf, 2, 0))) static int libbpf_log(enum libbpf_print_level level,
							    const char *fmt, va_list ap)
{
	char line[512];

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_debug("libbpf: %s", line);
	return 0;
}

/* The program loaded and its iterator attached: the link's descriptor, or -errno. */
static int load(struct libbpf_fns *f)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_link *link;
	int fd, ret;

	f->libbpf_set_print(libbpf_log);
	obj = f->bpf_object__open_mem(taskiter_object, taskiter_object_size, NULL);
	if (!obj)
		return errno ? -errno : -EINVAL;
	ret = f->bpf_object__load(obj);
	if (ret) {
		f->bpf_object__close(obj);
		return ret < 0 ? ret : -EINVAL;
	}
	prog = f->bpf_object__find_program_by_name(obj, "jobscope_tasks");
	link = prog ? f->bpf_program__attach_iter(prog, NULL) : NULL;
	if (!link) {
		ret = errno ? -errno : -EINVAL;
		f->bpf_object__close(obj);
		return ret;
	}
	/*
	 * The link holds the program in the kernel: its descriptor is all that
	 * is kept.  Disconnected, destroying it closes libbpf's copy only.
	 */
	fd = fcntl(f->bpf_link__fd(link), F_DUPFD_CLOEXEC, 0);
	ret = fd < 0 ? -errno : fd;
	f->bpf_link__disconnect(link);
	f->bpf_link__destroy(link);
	f->bpf_object__close(obj);
	return ret;
}

static int load_with_libbpf(void)
{
	const char *name = getenv("JOBSCOPE_LIBBPF_LIBRARY"); /* tests: another path */
	struct libbpf_fns f;
	void *dl;
	int ret;

	dl = dlopen(name && name[0] ? name : "libbpf.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		log_debug("no task iterator: %s", dlerror());
		return -ENOENT;
	}
#define TASKITER_RESOLVE(name)                                                                     \
	f.name = (__typeof__(f.name))dlsym(dl, #name);                                             \
	if (!f.name) {                                                                             \
		log_debug("no task iterator: libbpf has no %s", #name);                            \
		dlclose(dl);                                                                       \
		return -ENOENT;                                                                    \
	}
	TASKITER_LIBBPF(TASKITER_RESOLVE)
#undef TASKITER_RESOLVE
	ret = load(&f);
	dlclose(dl);
	return ret;
}

/* The loader's message: an int32 (0 or -errno) and, with 0, the link's descriptor. */
struct loader_msg {
	int32_t err;
	struct iovec iov;
	struct msghdr msg;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control; /* last: clang sees CMSG_SPACE as a variable size */
};

static void loader_msg_init(struct loader_msg *m, int32_t err)
{
	memset(m, 0, sizeof(*m));
	m->err = err;
	m->iov.iov_base = &m->err;
	m->iov.iov_len = sizeof(m->err);
	m->msg.msg_iov = &m->iov;
	m->msg.msg_iovlen = 1;
	m->msg.msg_control = m->control.buf;
	m->msg.msg_controllen = sizeof(m->control.buf);
}

static void send_result(int sock, int fd)
{
	struct loader_msg m;

	loader_msg_init(&m, fd < 0 ? fd : 0);
	if (fd >= 0) {
		struct cmsghdr *c = CMSG_FIRSTHDR(&m.msg);

		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	} else {
		m.msg.msg_control = NULL;
		m.msg.msg_controllen = 0;
	}
	while (sendmsg(sock, &m.msg, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

/* The descriptor the loader sent, or -errno (-ETIMEDOUT: it did not answer in time). */
static int recv_result(int sock)
{
	struct pollfd pfd = {.fd = sock, .events = POLLIN};
	struct loader_msg m;
	struct cmsghdr *c;
	int fd = -1, n;

	do
		n = poll(&pfd, 1, TASKITER_LOAD_TIMEOUT_MS);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n == 0 ? -ETIMEDOUT : -errno;
	loader_msg_init(&m, -EPROTO);
	if (recvmsg(sock, &m.msg, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof(m.err))
		return -EPROTO; /* the loader died before it answered */
	for (c = CMSG_FIRSTHDR(&m.msg); c; c = CMSG_NXTHDR(&m.msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
	if (m.err == 0 && fd >= 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return m.err < 0 ? m.err : -EPROTO;
}

/*
 * The program loaded by a child process, which sends the iterator's
 * descriptor back and exits: libbpf, and the kernel's BTF it reads to load
 * it (megabytes), never enter this process, nor its peak RSS.  A child that
 * does not answer in TASKITER_LOAD_TIMEOUT_MS (a lock a thread of this
 * process held at the fork) is killed, and /proc is read instead.
 */
static int load_in_child(void)
{
	int sv[2], ret;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		close(sv[0]);
		close(sv[1]);
		return ret;
	}
	if (pid == 0) {
		close(sv[0]);
		send_result(sv[1], load_with_libbpf());
		_exit(0);
	}
	close(sv[1]);
	ret = recv_result(sv[0]);
	close(sv[0]);
	if (ret == -ETIMEDOUT)
		kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return ret;
}

/* A file from which one read() after another gives every task now. */
static int iter_create(int link_fd)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.iter_create.link_fd = (__u32)link_fd;
	return (int)syscall(__NR_bpf, BPF_ITER_CREATE, &attr, sizeof(attr));
}

int taskiter_read(struct taskiter *ti)
{
	size_t len = 0;
	int fd, ret = 0;

	if (ti->fd < 0)
		return -EBADF;
	fd = iter_create(ti->fd);
	if (fd < 0)
		return -errno;
	fcntl(fd, F_SETFD, FD_CLOEXEC); /* BPF_ITER_CREATE takes no flags */
	for (;;) {
		ssize_t n;

		if (ti->buf_alloc - len < 4096) {
			size_t want = ti->buf_alloc ? ti->buf_alloc * 2 : TASKITER_FIRST_BUF;
			char *buf = realloc(ti->buf, want);

			if (!buf) {
				ret = -ENOMEM;
				break;
			}
			ti->buf = buf;
			ti->buf_alloc = want;
		}
		n = read(fd, ti->buf + len, ti->buf_alloc - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			/* EAGAIN: the walk was restarted too often (tasks coming and going) */
			ret = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	return ret ? ret : taskiter_parse(ti, ti->buf, len);
}

/* What the iterator says of this process agrees with /proc/self/stat. */
static int check_self(struct taskiter *ti)
{
	struct proc_reader reader;
	struct proc_stat st;
	const struct taskiter_proc *me;
	long hz = sysconf(_SC_CLK_TCK);
	int ret;

	ret = taskiter_read(ti);
	if (ret)
		return ret;
	proc_reader_init(&reader, hz);
	ret = proc_read_stat(&reader, getpid(), &st);
	proc_reader_release(&reader);
	if (ret)
		return ret;
	me = taskiter_find(ti, getpid());
	if (!me || hz <= 0 || me->run_ns == 0 || taskiter_start_ticks(me, hz) != st.start_ticks) {
		log_debug("no task iterator: it does not see this process as /proc does");
		return -ENOTSUP;
	}
	return 0;
}

/*
 * Whether the /proc read is this process's own: no sysroot, or one whose
 * /proc names this process as its "self" (a container of the host's pid
 * namespace reading the host's /proc, `--sysroot /host`), not a fixture.
 */
static bool proc_is_ours(void)
{
	char path[4200], link[32];
	ssize_t n;

	if (!sysroot_get()[0])
		return true;
	if (sysroot_path(path, sizeof(path), "/proc/self") < 0)
		return false;
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = '\0';
	return strtol(link, NULL, 10) == (long)getpid();
}

int taskiter_open(struct taskiter *ti)
{
	const char *off = getenv("JOBSCOPE_NO_BPF");
	int ret;

	taskiter_close(ti);
	if (off && off[0] && strcmp(off, "0") != 0)
		return -ENOTSUP;
	/* a fixture tree's pids are not the kernel's, nor another namespace's */
	if (!procev_pid_ns_is_first() || !proc_is_ours())
		return -ENOTSUP;
	if (geteuid() != 0)
		return -EPERM; /* CAP_BPF alone is rare: not worth loading libbpf for */
	ret = load_in_child();
	if (ret < 0) {
		log_debug("no task iterator: %s", strerror(-ret));
		return ret;
	}
	ti->fd = ret;
	ret = check_self(ti);
	if (ret) {
		taskiter_close(ti);
		return ret;
	}
	return 0;
}

#else /* built without clang's BPF target or libbpf's headers */

int taskiter_open(struct taskiter *ti)
{
	taskiter_close(ti);
	return -ENOTSUP;
}

int taskiter_read(struct taskiter *ti)
{
	(void)ti;
	return -EBADF;
}

#endif
