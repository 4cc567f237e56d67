/*
 * ptree.c - sample the process tree under one ancestor (see ptree.h for the
 * accounting rules).  One scan per tick: read every /proc/PID/stat to learn
 * parents, keep the descendants of the ancestor, then read status and io of
 * those only.
 */
#include "ptree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/log.h"
#include "common/sysroot.h"
#include "ptree_int.h"

#define PTREE_MAX_DEPTH 4096

/* Open-addressing map pid -> position+1; size is a power of two. */
static size_t pid_slot(int32_t pid, size_t size)
{
	return ((uint32_t)pid * 2654435761u) & (size - 1);
}

static int pidmap_reset(int32_t **map, size_t *size, size_t count)
{
	size_t want = 64;

	while (want < count * 2)
		want *= 2;
	if (want != *size) {
		int32_t *m = realloc(*map, want * 2 * sizeof(**map));

		if (!m)
			return -ENOMEM;
		*map = m;
		*size = want;
	}
	memset(*map, 0, *size * 2 * sizeof(**map));
	return 0;
}

/* Each slot is a (pid, position+1) pair. */
static void pidmap_put(int32_t *map, size_t size, int32_t pid, size_t pos)
{
	size_t i = pid_slot(pid, size);

	while (map[2 * i + 1] != 0 && map[2 * i] != pid)
		i = (i + 1) & (size - 1);
	map[2 * i] = pid;
	map[2 * i + 1] = (int32_t)pos + 1;
}

static long pidmap_get(const int32_t *map, size_t size, int32_t pid)
{
	size_t i;

	if (!size)
		return -1;
	i = pid_slot(pid, size);
	while (map[2 * i + 1] != 0) {
		if (map[2 * i] == pid)
			return map[2 * i + 1] - 1;
		i = (i + 1) & (size - 1);
	}
	return -1;
}

/* Descriptors are kept open within RLIMIT_NOFILE - PTREE_FD_MARGIN. */
static void fd_budget_update(struct ptree *pt)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		pt->fd_budget = rl.rlim_cur > PTREE_FD_MARGIN ? rl.rlim_cur - PTREE_FD_MARGIN : 0;
}

void ptree_init(struct ptree *pt, pid_t ancestor, long hz, int64_t boot_ms)
{
	memset(pt, 0, sizeof(*pt));
	pt->ancestor = ancestor;
	pt->hz = hz > 0 ? hz : 100;
	pt->boot_ms = boot_ms;
	pt->fd_cache = true;
	fd_budget_update(pt);
	proc_reader_init(&pt->reader, pt->hz);
	libs_reader_init(&pt->libs_reader);
	procev_init(&pt->ev);
	procev_init(&pt->exit_ev);
	taskiter_init(&pt->tasks);
	taskstats_listener_init(&pt->ts);
}

int ptree_watch_events(struct ptree *pt)
{
	return procev_open(&pt->ev);
}

int ptree_watch_tasks(struct ptree *pt)
{
	return taskiter_open(&pt->tasks);
}

void ptree_init_all(struct ptree *pt, long hz, int64_t boot_ms)
{
	ptree_init(pt, 0, hz, boot_ms);
	pt->all = true;
}

static void close_kept(struct ptree *pt, int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		pt->kept_fds--;
	}
	*fd = -1;
}

static void close_entry(struct ptree *pt, struct ptree_scan_entry *e)
{
	close_kept(pt, &e->fd);
	close_kept(pt, &e->sched_fd);
}

static void close_fds(struct ptree *pt, struct ptree_scan_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close_entry(pt, &e[i]);
}

void ptree_release(struct ptree *pt)
{
	proc_reader_release(&pt->reader);
	libs_reader_release(&pt->libs_reader);
	procev_close(&pt->ev);
	procev_close(&pt->exit_ev);
	taskiter_close(&pt->tasks);
	taskstats_listener_close(&pt->ts);
	free(pt->exits);
	close_fds(pt, pt->scan, pt->nscan);
	close_fds(pt, pt->prev, pt->nprev);
	for (size_t i = 0; i < pt->nprocs; i++) {
		close_kept(pt, &pt->procs[i].owner_fd);
		free(pt->procs[i].libs);
	}
	free(pt->procs);
	intern_release(&pt->cmdlines);
	free(pt->index);
	free(pt->scan);
	free(pt->scan_index);
	free(pt->prev);
	free(pt->prev_index);
	memset(pt, 0, sizeof(*pt));
}

/* Room for `extra` more processes to be added with pidmap_put. */
static int rebuild_index(struct ptree *pt, size_t extra)
{
	int ret = pidmap_reset(&pt->index, &pt->index_size, pt->nprocs + extra);

	if (ret)
		return ret;
	for (size_t i = 0; i < pt->nprocs; i++)
		if (pt->procs[i].alive)
			pidmap_put(pt->index, pt->index_size, pt->procs[i].info.pid, i);
	return 0;
}

struct ptree_proc *ptree_find(struct ptree *pt, pid_t pid)
{
	long i = pidmap_get(pt->index, pt->index_size, pid);

	if (i < 0 || !pt->procs[i].alive || pt->procs[i].info.pid != pid)
		return NULL;
	return &pt->procs[i];
}

struct ptree_proc *ptree_find_nspid(struct ptree *pt, pid_t nspid)
{
	struct ptree_proc *found = NULL;

	if (nspid <= 0)
		return NULL;
	for (size_t i = 0; i < pt->nprocs; i++) {
		struct ptree_proc *p = &pt->procs[i];

		if (!p->alive || p->nspid != nspid || p->nspid == p->info.pid)
			continue;
		if (found)
			return NULL; /* two containers' pid 1, say: not ours to choose */
		found = p;
	}
	return found;
}

struct ptree_proc *ptree_find_reported(struct ptree *pt, pid_t pid)
{
	struct ptree_proc *p = ptree_find(pt, pid);
	char rel[32], path[4096];

	if (p || pid <= 0)
		return p;
	/* the tree first: most pids are no container's, and then no /proc lookup is made */
	p = ptree_find_nspid(pt, pid);
	if (!p)
		return NULL;
	snprintf(rel, sizeof(rel), "/proc/%d", (int)pid);
	/* a pid of our namespace (another's process, or one not scanned yet) is not mapped */
	if (sysroot_path(path, sizeof(path), rel) || access(path, F_OK) == 0 || errno != ENOENT)
		return NULL;
	return p;
}

struct ptree_proc *ptree_find_recent(struct ptree *pt, pid_t pid)
{
	long i = pidmap_get(pt->index, pt->index_size, pid);

	if (i < 0 || (size_t)i >= pt->nprocs || pt->procs[i].info.pid != pid)
		return NULL;
	return &pt->procs[i];
}

struct ptree_proc *ptree_add_proc(struct ptree *pt)
{
	struct ptree_proc *p;

	if (ARRAY_GROW(pt->procs, pt->nprocs, pt->procs_alloc, 64))
		return NULL;
	p = &pt->procs[pt->nprocs++];
	memset(p, 0, sizeof(*p));
	p->owner_fd = -1;
	p->info.cmdline = "";
	return p;
}

/* p's command line now cmdline (the copy shared with every process that has it). */
void ptree_set_cmdline(struct ptree *pt, struct ptree_proc *p, const char *cmdline)
{
	const char *old = p->info.cmdline;

	p->info.cmdline = intern_get(&pt->cmdlines, cmdline);
	intern_put(&pt->cmdlines, old);
}

void ptree_info_get(const struct ptree_proc *p, struct proc_info *out)
{
	out->pid = p->info.pid;
	out->ppid = p->info.ppid;
	out->start_ms = p->info.start_ms;
	out->uid = p->info.uid;
	memcpy(out->comm, p->info.comm, sizeof(out->comm));
	snprintf(out->cmdline, sizeof(out->cmdline), "%s", p->info.cmdline);
	out->end_ms = p->info.end_ms;
}

/* Did the process do anything since its last full refresh? */
static bool stat_moved(const struct proc_stat *a, const struct proc_stat *b)
{
	return a->utime_ticks != b->utime_ticks || a->stime_ticks != b->stime_ticks ||
	       a->cutime_ticks != b->cutime_ticks || a->cstime_ticks != b->cstime_ticks ||
	       a->rss_pages != b->rss_pages || a->num_threads != b->num_threads ||
	       a->state != b->state || a->state == 'R' || a->state == 'D' ||
	       strcmp(a->comm, b->comm) != 0 || a->layout != b->layout;
}

static void update_wait(struct ptree *pt, struct ptree_proc *p, const struct proc_stat *st,
			const struct ptree_scan_entry *e, bool moved);

/*
 * Fills cur from a stat reading, then status and io (when readable), unless
 * `lazy` and the process has not moved since they were last read.
 */
static void refresh(struct ptree *pt, struct ptree_proc *p, const struct proc_stat *st,
		    uint64_t run_ns, const struct ptree_scan_entry *e, int64_t now_ms, bool lazy)
{
	struct proc_status status;
	struct proc_io io;
	struct proc_sample *s = &p->cur;
	int pid = st->pid;
	bool exec;

	p->info.ppid = st->ppid; /* orphans move to the subreaper without moving */
	if (p->exit_known)
		return; /* a zombie: the kernel's figures at its exit are final */
	if (e)
		update_wait(pt, p, st, e, stat_moved(st, &p->last_stat));
	if (lazy && p->refreshed_ms && !stat_moved(st, &p->last_stat)) {
		if (now_ms - p->refreshed_ms < PTREE_FULL_REFRESH_MS)
			return;
		if (run_ns && run_ns == p->refreshed_run_ns) {
			/*
			 * Due, but it did not run since status and io were
			 * read: they hold nothing new (its RSS, in stat, did
			 * not move either).  Due all the same for its cgroup.
			 */
			p->last_stat = *st;
			p->refreshed_ms = now_ms;
			p->refreshed_idle = true;
			return;
		}
	}
	/* a new layout under the same comm is an exec too (proc_stat.layout) */
	exec = p->last_stat.layout && st->layout && p->last_stat.layout != st->layout;
	p->last_stat = *st;
	p->refreshed_ms = now_ms;
	p->refreshed_run_ns = run_ns;
	p->refreshed_idle = false;
	s->state = st->state;
	s->user_ms = proc_ticks_to_ms(&pt->reader, st->utime_ticks);
	s->system_ms = proc_ticks_to_ms(&pt->reader, st->stime_ticks);
	s->child_user_ms = proc_ticks_to_ms(&pt->reader, st->cutime_ticks);
	s->child_system_ms = proc_ticks_to_ms(&pt->reader, st->cstime_ticks);
	s->threads = st->num_threads > 0 ? (uint32_t)st->num_threads : 0;
	s->valid = PS_THREADS | (s->valid & PS_CPU_WAIT);
	p->info.ppid = st->ppid;

	if (exec || strcmp(p->info.comm, st->comm) != 0) {
		/* exec changed the program: refresh the command line too */
		snprintf(p->info.comm, sizeof(p->info.comm), "%s", st->comm);
		char cmdline[PROC_CMDLINE_MAX];

		if (proc_read_cmdline(&pt->reader, pid, cmdline, sizeof(cmdline)))
			cmdline[0] = '\0';
		ptree_set_cmdline(pt, p, cmdline);
		p->info_dirty = true;
		p->info_changed = true;
	}

	if (proc_read_status(&pt->reader, pid, &status) == 0) {
		if (status.valid & PROC_STATUS_RSS) {
			s->rss_bytes = status.rss_bytes;
			s->valid |= PS_RSS;
		} else {
			s->rss_bytes = 0; /* a zombie holds no memory */
			s->valid |= st->state == 'Z' ? PS_RSS : 0;
		}
		if (status.valid & PROC_STATUS_HWM) {
			if (status.hwm_bytes > s->hwm_bytes)
				s->hwm_bytes = status.hwm_bytes;
			s->valid |= PS_HWM;
		} else if (p->last_emitted.valid & PS_HWM) {
			s->valid |= PS_HWM; /* keep the peak seen while it lived */
		}
		if (status.valid & PROC_STATUS_SWAP) {
			s->swap_bytes = status.swap_bytes;
			s->valid |= PS_SWAP;
		}
		if (status.valid & PROC_STATUS_UID)
			p->info.uid = status.uid;
		if (status.valid & PROC_STATUS_THREADS)
			s->threads = status.threads;
		if (status.valid & PROC_STATUS_NSPID)
			p->nspid = status.nspid;
	}
	if (proc_read_io(&pt->reader, pid, &io) == 0) {
		s->read_bytes = io.read_bytes;
		s->write_bytes = io.write_bytes;
		s->valid |= PS_IO;
	}
}

/* Reads p's maps when due (PTREE_LIBS_*); what it finds goes into p->libs. */
static void scan_libs(struct ptree *pt, struct ptree_proc *p, int64_t now_ms)
{
	uint64_t cpu_ms = p->cur.user_ms + p->cur.system_ms;
	struct lib_set found;
	int ret;

	if (p->cur.state == 'Z' || p->cur.state == 'X')
		return;
	if (p->info_changed)
		p->libs_next_ms = 0; /* an exec: a new program, read at once */
	if (p->libs_next_ms) {
		if (now_ms < p->libs_next_ms || cpu_ms == p->libs_cpu_ms)
			return;
		p->libs_every_ms = p->libs_every_ms * 2 > PTREE_LIBS_MAX_WAIT_MS
				       ? PTREE_LIBS_MAX_WAIT_MS
				       : p->libs_every_ms * 2;
	} else {
		p->libs_every_ms = PTREE_LIBS_FIRST_WAIT_MS;
	}
	p->libs_next_ms = now_ms + p->libs_every_ms;
	p->libs_cpu_ms = cpu_ms;
	if (p->libs) {
		ret = libs_read(&pt->libs_reader, p->info.pid, p->libs);
	} else {
		found.n = 0;
		ret = libs_read(&pt->libs_reader, p->info.pid, &found);
		if (ret > 0) {
			p->libs = malloc(sizeof(*p->libs));
			if (p->libs)
				*p->libs = found;
		}
	}
	if (ret == -EACCES)
		p->libs_every_ms = PTREE_LIBS_MAX_WAIT_MS; /* another user's: not ours to read */
}

static struct ptree_proc *new_proc(struct ptree *pt, const struct proc_stat *st)
{
	struct ptree_proc *p = ptree_add_proc(pt);

	if (!p)
		return NULL;
	p->info.pid = st->pid;
	p->info.ppid = st->ppid;
	p->start_ticks = st->start_ticks;
	p->info.start_ms = pt->boot_ms + (int64_t)proc_ticks_to_ms(&pt->reader, st->start_ticks);
	p->alive = true;
	p->info_dirty = true;
	/* comm stays empty so refresh() reads the command line */
	return p;
}

/*
 * The previous scan's entry for pid, whose descriptors are taken over (the
 * entry keeps its readings), or NULL.
 */
static const struct ptree_scan_entry *take_prev(struct ptree *pt, int pid,
						struct ptree_scan_entry *e)
{
	long i = pidmap_get(pt->prev_index, pt->prev_index_size, pid);
	struct ptree_scan_entry *prev;

	e->fd = e->sched_fd = -1;
	if (i < 0)
		return NULL;
	prev = &pt->prev[i];
	if (pt->fd_cache) {
		e->fd = prev->fd;
		e->sched_fd = prev->sched_fd;
		prev->fd = prev->sched_fd = -1;
	}
	return prev;
}

static int open_proc_file(struct ptree *pt, int pid, const char *name)
{
	char path[64];
	int fd;

	if (!pt->fd_cache || pt->kept_fds >= pt->fd_budget)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	fd = sysroot_open(path, O_RDONLY);
	if (fd == -EMFILE || fd == -ENFILE) {
		pt->fd_cache = false; /* go on with open/read/close */
		log_debug("out of file descriptors: /proc/PID files no longer kept open");
	}
	if (fd < 0)
		return -1;
	pt->kept_fds++;
	return fd;
}

int ptree_keep_fd(struct ptree *pt, struct ptree_proc *p, const char *name)
{
	if (p->owner_fd < 0)
		p->owner_fd = open_proc_file(pt, p->info.pid, name);
	return p->owner_fd;
}

/*
 * schedstat's run time, or 0 when unknown (a process has always run a
 * little), and its main thread's run-queue wait into e.
 */
static uint64_t read_run_ns(struct ptree *pt, int fd, struct ptree_scan_entry *e)
{
	uint64_t run_ns;

	e->has_wait = false;
	if (fd < 0 ||
	    proc_read_schedstat_wait_fd(&pt->reader, fd, &run_ns, &e->wait_ns, &e->has_wait) != 0)
		return 0;
	return run_ns;
}

/*
 * The run-queue wait of every thread of a many-threaded process, summed
 * (/proc/PID/task/TID/schedstat: the process's own file is its main
 * thread's); false when the task directory cannot be read.
 */
static bool threads_wait_ns(struct ptree *pt, int pid, uint64_t *sum)
{
	char rel[64], path[4200];
	struct dirent *d;
	DIR *dir;
	bool any = false;

	snprintf(rel, sizeof(rel), "/proc/%d/task", pid);
	if (sysroot_path(path, sizeof(path), rel) < 0 || !(dir = opendir(path)))
		return false;
	*sum = 0;
	while ((d = readdir(dir)) != NULL) {
		char file[160];
		uint64_t run_ns, wait_ns;
		bool has;

		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(file, sizeof(file), "/proc/%d/task/%.20s/schedstat", pid, d->d_name);
		if (sysroot_read(file, &pt->reader.buf) == 0 &&
		    proc_parse_schedstat_wait(strbuf_str(&pt->reader.buf), pt->reader.buf.len,
					      &run_ns, &wait_ns, &has) == 0 &&
		    has) {
			*sum += wait_ns;
			any = true;
		}
	}
	closedir(dir);
	return any;
}

/*
 * Its threads' run-queue wait now: every thread's from the task iterator;
 * else the main thread's from the scan, every thread's when it has more
 * than one and moved (ran, or is runnable: a sleeping process waits for no
 * CPU, and its tasks are not read).
 */
static void update_wait(struct ptree *pt, struct ptree_proc *p, const struct proc_stat *st,
			const struct ptree_scan_entry *e, bool moved)
{
	uint64_t ns = e->wait_ns;

	if (e->all_threads) {
		/* already every thread's */
	} else if (st->num_threads > 1) {
		if (!moved && st->state != 'R')
			return; /* keeps the last figure */
		if (!threads_wait_ns(pt, st->pid, &ns))
			return;
	} else if (!e->has_wait) {
		return;
	}
	p->cur.cpu_wait_ms = ns / 1000000;
	p->cur.valid |= PS_CPU_WAIT;
}

/*
 * Whether prev's stat still stands for the process e read now: none of its
 * threads ran since (the main one's run time, when it is its only thread;
 * every thread's, from the task iterator, and no thread came or went).
 */
static bool stat_stands(const struct ptree *pt, const struct ptree_scan_entry *prev,
			const struct ptree_scan_entry *e)
{
	const struct proc_stat *st = &prev->stat;
	bool same_threads = e->all_threads ? prev->all_threads && st->num_threads > 0 &&
						 (uint32_t)st->num_threads == e->threads
					   : st->num_threads == 1;

	return e->run_ns && e->run_ns == prev->run_ns && same_threads && st->state != 'R' &&
	       st->state != 'D' && pt->scan_ms - prev->stat_ms < PTREE_FULL_REFRESH_MS &&
	       pt->scan_ms >= prev->stat_ms;
}

/* The task iterator's figures of the pid in hand into e, or schedstat's. */
static void read_runs(struct ptree *pt, struct ptree_scan_entry *e, int pid)
{
	const struct taskiter_proc *t = pt->task;

	if (!t) {
		/* new; or first read by the iterator, which since failed */
		if (e->sched_fd < 0 && e->fd >= 0)
			e->sched_fd = open_proc_file(pt, pid, "schedstat");
		e->all_threads = false;
		e->run_ns = read_run_ns(pt, e->sched_fd, e);
		return;
	}
	e->all_threads = true;
	e->threads = t->threads;
	e->run_ns = t->run_ns;
	e->wait_ns = t->wait_ns;
	e->has_wait = true;
}

static int read_stat(struct ptree *pt, struct ptree_scan_entry *e, int pid)
{
	pt->stat_reads++;
	e->stat_ms = pt->scan_ms;
	e->stat_copied = false;
	if (e->fd >= 0)
		return proc_read_stat_fd(&pt->reader, e->fd, &e->stat);
	return proc_read_stat(&pt->reader, pid, &e->stat);
}

static int collect_pid(int pid, void *arg)
{
	struct ptree *pt = arg;
	const struct ptree_scan_entry *prev;
	struct ptree_scan_entry *e;
	int ret;

	if (!pt->all && pid == pt->ancestor)
		return 0;
	if (pt->nscan == pt->scan_alloc) {
		size_t n = pt->scan_alloc ? pt->scan_alloc * 2 : 256;
		struct ptree_scan_entry *scan = realloc(pt->scan, n * sizeof(*scan));

		if (!scan)
			return -ENOMEM;
		pt->scan = scan;
		pt->scan_alloc = n;
	}
	e = &pt->scan[pt->nscan];
	prev = take_prev(pt, pid, e);
	if (prev && pt->task && taskiter_start_ticks(pt->task, pt->hz) != prev->stat.start_ticks) {
		/* the pid now names another process: what was kept is the old one's */
		close_entry(pt, e);
		prev = NULL;
	}
	ret = -ENOENT;
	if (e->fd >= 0 || (pt->task && prev)) {
		/* descriptors stay with the process: a reused pid reads ESRCH */
		read_runs(pt, e, pid);
		if (prev && stat_stands(pt, prev, e)) {
			e->stat = prev->stat;
			e->stat_ms = prev->stat_ms;
			e->stat_copied = true;
			pt->stat_skips++;
			ret = 0;
		} else {
			ret = read_stat(pt, e, pid);
		}
	}
	if (ret != 0) {
		/* new, or the pid now names another process: the old fds are dead */
		close_entry(pt, e);
		e->fd = open_proc_file(pt, pid, "stat");
		/* schedstat before stat: a run in between shows at the next scan */
		read_runs(pt, e, pid);
		ret = read_stat(pt, e, pid);
	}
	if (ret == 0 && e->stat.pid != pid)
		ret = -ENOENT;
	if (ret != 0) {
		/* vanished since readdir (or the pid was reused), or unreadable */
		close_entry(pt, e);
		return 0;
	}
	e->pid = pid;
	e->ppid = e->stat.ppid;
	e->in_tree = -1;
	pt->nscan++;
	return 0;
}

/*
 * This scan's entries become the previous scan's; a new one starts empty.
 * The previous scan's leftovers were closed at the end of its scan.
 */
static void rotate_scan(struct ptree *pt)
{
	struct ptree_scan_entry *tmp = pt->prev;
	size_t tmp_alloc = pt->prev_alloc;
	int32_t *tmp_index = pt->prev_index;
	size_t tmp_index_size = pt->prev_index_size;

	pt->prev = pt->scan;
	pt->nprev = pt->nscan;
	pt->prev_alloc = pt->scan_alloc;
	pt->prev_index = pt->scan_index;
	pt->prev_index_size = pt->scan_index_size;
	pt->scan = tmp;
	pt->nscan = 0;
	pt->scan_alloc = tmp_alloc;
	pt->scan_index = tmp_index;
	pt->scan_index_size = tmp_index_size;
}

/* Resolves whether scan[i] descends from the ancestor, memoizing the chain. */
static int8_t resolve_in_tree(struct ptree *pt, size_t i)
{
	size_t chain[64];
	size_t nchain = 0;
	int8_t verdict = 0;
	long cur = (long)i;

	if (pt->all) {
		/*
		 * every process but kernel threads, told by their flag: pid 2
		 * is kthreadd only outside a pid namespace (in a container it
		 * is whatever user process came second)
		 */
		pt->scan[i].in_tree = !(pt->scan[i].stat.flags & PROC_PF_KTHREAD);
		return pt->scan[i].in_tree;
	}

	for (int depth = 0; depth < PTREE_MAX_DEPTH; depth++) {
		struct ptree_scan_entry *e = &pt->scan[cur];
		long parent;

		if (e->in_tree >= 0) {
			verdict = e->in_tree;
			break;
		}
		if (nchain < sizeof(chain) / sizeof(chain[0]))
			chain[nchain++] = (size_t)cur;
		if (e->ppid == pt->ancestor) {
			verdict = 1;
			break;
		}
		if (e->ppid <= 1) {
			verdict = 0;
			break;
		}
		parent = pidmap_get(pt->scan_index, pt->scan_index_size, e->ppid);
		if (parent < 0) {
			verdict = 0;
			break;
		}
		cur = parent;
	}
	for (size_t k = 0; k < nchain; k++)
		pt->scan[chain[k]].in_tree = verdict;
	pt->scan[i].in_tree = verdict;
	return verdict;
}

static bool sample_moved(const struct proc_sample *a, const struct proc_sample *b)
{
	return a->valid != b->valid || a->user_ms != b->user_ms || a->system_ms != b->system_ms ||
	       a->child_user_ms != b->child_user_ms || a->child_system_ms != b->child_system_ms ||
	       a->rss_bytes != b->rss_bytes || a->hwm_bytes != b->hwm_bytes ||
	       a->swap_bytes != b->swap_bytes || a->read_bytes != b->read_bytes ||
	       a->write_bytes != b->write_bytes || a->threads != b->threads;
}

/*
 * Drops processes whose last row went out in the previous tick.  One reaped
 * since then (ended, emit set, not done) stays until this tick emits it.
 */
static void compact(struct ptree *pt)
{
	size_t out = 0;

	for (size_t i = 0; i < pt->nprocs; i++) {
		struct ptree_proc *p = &pt->procs[i];

		if (p->done) {
			close_kept(pt, &p->owner_fd);
			free(p->libs);
			intern_put(&pt->cmdlines, p->info.cmdline);
			continue;
		}
		if (p->alive)
			p->emit = false;
		p->info_changed = false;
		p->ended_now = false;
		p->prev_child_user_ms = p->cur.child_user_ms;
		p->prev_child_system_ms = p->cur.child_system_ms;
		if (out != i)
			pt->procs[out] = *p;
		out++;
	}
	pt->nprocs = out;
}

static void compute_job(struct ptree *pt)
{
	struct job_sample j;
	const struct job_sample *prev = &pt->job_prev;
	bool io_valid = pt->reaped_io_valid;
	bool swap_valid = false, wait_valid = false;

	memset(&j, 0, sizeof(j));
	j.user_ms = pt->reaped_user_ms;
	j.system_ms = pt->reaped_system_ms;
	j.read_bytes = pt->reaped_read_bytes;
	j.write_bytes = pt->reaped_write_bytes;
	for (size_t i = 0; i < pt->nprocs; i++) {
		const struct ptree_proc *p = &pt->procs[i];
		const struct proc_sample *s = &p->cur;

		if (!p->alive) {
			/* its threads' wait as last read, counted once, the tick it ended */
			if (p->ended_now && (s->valid & PS_CPU_WAIT))
				pt->ended_wait_ms += s->cpu_wait_ms;
			continue;
		}
		j.nprocs++;
		if (s->valid & PS_CPU_WAIT) {
			j.cpu_wait_ms += s->cpu_wait_ms;
			wait_valid = true;
		}
		j.user_ms += s->user_ms + s->child_user_ms;
		j.system_ms += s->system_ms + s->child_system_ms;
		if (s->valid & PS_RSS)
			j.rss_bytes += s->rss_bytes;
		if (s->valid & PS_SWAP) {
			j.swap_bytes += s->swap_bytes;
			swap_valid = true;
		}
		if (s->valid & PS_IO) {
			j.read_bytes += s->read_bytes;
			j.write_bytes += s->write_bytes;
			io_valid = true;
		}
	}
	j.cpu_wait_ms += pt->ended_wait_ms;
	j.valid = (io_valid ? JS_IO : 0) | (swap_valid ? JS_SWAP : 0) |
		  (wait_valid || pt->ended_wait_ms ? JS_CPU_WAIT : 0);
	if (pt->has_job) {
		/*
		 * A child reaped by its parent between our reads of the two
		 * can vanish from one tick's sum; counters never go back.
		 */
		if (j.user_ms < prev->user_ms)
			j.user_ms = prev->user_ms;
		if (j.system_ms < prev->system_ms)
			j.system_ms = prev->system_ms;
		if (j.read_bytes < prev->read_bytes)
			j.read_bytes = prev->read_bytes;
		if (j.write_bytes < prev->write_bytes)
			j.write_bytes = prev->write_bytes;
		if (j.cpu_wait_ms < prev->cpu_wait_ms)
			j.cpu_wait_ms = prev->cpu_wait_ms;
		if (prev->valid & JS_IO)
			j.valid |= JS_IO;
		if (prev->valid & JS_CPU_WAIT)
			j.valid |= JS_CPU_WAIT;
	}
	j.sampler_cpu_ms = pt->job.sampler_cpu_ms;
	pt->job = j;
	pt->job_prev = j;
	pt->has_job = true;
}

/*
 * The total (own + children) of the children of `p` that ended in this
 * scan, as last seen: a process that ends after its children have ended
 * in the same interval has reaped them meanwhile.
 */
static void ended_children(const struct ptree *pt, const struct ptree_proc *p, uint64_t *user_ms,
			   uint64_t *system_ms)
{
	*user_ms = *system_ms = 0;
	for (size_t k = 0; k < pt->nprocs; k++) {
		const struct ptree_proc *c = &pt->procs[k];

		if (c != p && c->ended_now && c->info.ppid == p->info.pid &&
		    c->info.start_ms >= p->info.start_ms) {
			*user_ms += c->cur.user_ms + c->cur.child_user_ms;
			*system_ms += c->cur.system_ms + c->cur.child_system_ms;
		}
	}
}

/*
 * A process reaped by its parent between two scans was last seen up to one
 * interval before it ended.  Its final CPU time is in the parent's cutime
 * and cstime, which grew by exactly its total when it was the only child
 * the parent reaped meanwhile: then its own last values are made exact.
 * (With several, they stay the last values seen: a lower bound.)  That
 * total also holds what it reaped itself in the interval: children of its
 * own that ended in the same interval (a worker and the parent that waited
 * for it) go to its reaped-children values, as last seen, so that its own
 * is its own and every row sums to the job's total once.
 */
static void settle_ended(struct ptree *pt)
{
	for (size_t i = 0; i < pt->nprocs; i++) {
		struct ptree_proc *p = &pt->procs[i], *parent;
		uint64_t du, ds, ku, ks;
		int siblings = 0;

		if (!p->ended_now || p->cur.state == 'Z')
			continue; /* a zombie's last reading is already final */
		parent = ptree_find(pt, p->info.ppid);
		if (!parent || !parent->seen)
			continue;
		for (size_t k = 0; k < pt->nprocs; k++)
			if (pt->procs[k].ended_now && pt->procs[k].info.ppid == p->info.ppid)
				siblings++;
		if (siblings != 1 || parent->cur.child_user_ms < parent->prev_child_user_ms ||
		    parent->cur.child_system_ms < parent->prev_child_system_ms)
			continue;
		du = parent->cur.child_user_ms - parent->prev_child_user_ms;
		ds = parent->cur.child_system_ms - parent->prev_child_system_ms;
		ended_children(pt, p, &ku, &ks);
		if (du >= p->cur.child_user_ms + ku + p->cur.user_ms &&
		    ds >= p->cur.child_system_ms + ks + p->cur.system_ms) {
			p->cur.child_user_ms += ku;
			p->cur.child_system_ms += ks;
		}
		if (du >= p->cur.child_user_ms + p->cur.user_ms)
			p->cur.user_ms = du - p->cur.child_user_ms;
		if (ds >= p->cur.child_system_ms + p->cur.system_ms)
			p->cur.system_ms = ds - p->cur.child_system_ms;
	}
}

/*
 * A stat kept from an earlier scan names a parent that may be gone since
 * (the process was reparented without running): read it again.
 */
static void reread_orphans(struct ptree *pt)
{
	for (size_t i = 0; i < pt->nscan; i++) {
		struct ptree_scan_entry *e = &pt->scan[i], kept;
		long parent;

		if (!e->stat_copied || e->ppid <= 1 || (!pt->all && e->ppid == pt->ancestor))
			continue; /* the ancestor is never in the scan */
		parent = pidmap_get(pt->scan_index, pt->scan_index_size, e->ppid);
		if (parent >= 0 && pt->scan[parent].stat.start_ticks <= e->stat.start_ticks)
			continue;
		kept = *e;
		pt->stat_skips--;
		if (read_stat(pt, e, e->pid) != 0 || e->stat.pid != e->pid) {
			/* gone meanwhile: keep the last reading, it ends next scan */
			*e = kept;
			continue;
		}
		e->ppid = e->stat.ppid;
	}
}

static int cmp_pid(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

/* The last scan's processes, then the new ones the kernel announced. */
static int collect_known(struct ptree *pt)
{
	struct procev *ev = &pt->ev;
	size_t nprev = pt->nprev;
	int ret;

	for (size_t i = 0; i < nprev; i++) {
		ret = collect_pid(pt->prev[i].pid, pt);
		if (ret)
			return ret;
	}
	/* no event yet: pids is NULL, which qsort must not be given even for 0 */
	if (ev->npids > 1)
		qsort(ev->pids, ev->npids, sizeof(*ev->pids), cmp_pid);
	for (size_t i = 0; i < ev->npids; i++) {
		int32_t pid = ev->pids[i];

		if ((i > 0 && pid == ev->pids[i - 1]) ||
		    pidmap_get(pt->prev_index, pt->prev_index_size, pid) >= 0)
			continue; /* done above (a reused pid is found there too) */
		ret = collect_pid(pid, pt);
		if (ret)
			return ret;
	}
	ev->npids = 0;
	return 0;
}

/* Every process the task iterator read, with its figures. */
static int collect_tasks(struct ptree *pt)
{
	int ret = 0;

	for (size_t i = 0; i < pt->tasks.nprocs && !ret; i++) {
		pt->task = &pt->tasks.procs[i];
		ret = collect_pid(pt->task->pid, pt);
	}
	pt->task = NULL;
	return ret;
}

/*
 * Every process now: from the task iterator; else from the last scan and
 * the kernel's events; else from /proc.
 */
static int collect(struct ptree *pt, int64_t ts_ms)
{
	if (pt->tasks.fd >= 0) {
		int ret = taskiter_read(&pt->tasks);

		if (ret == 0) {
			pt->tasks_failed = 0;
			return collect_tasks(pt);
		}
		/* this scan lists /proc; the iterator again at the next, for a while */
		if (++pt->tasks_failed >= PTREE_TASKS_MAX_FAILED) {
			log_warn(0,
				 "the kernel's task iterator failed %d times in a row (%s): /proc"
				 " is read from now on",
				 pt->tasks_failed, strerror(-ret));
			taskiter_close(&pt->tasks);
		} else if (pt->tasks_failed == 1) {
			log_warn(0,
				 "the kernel's task iterator failed (%s): /proc is read instead"
				 " this time",
				 strerror(-ret));
		}
		pt->listed_ms = ts_ms - PTREE_RELIST_MS; /* list it now */
	}
	if (pt->ev.fd >= 0 && procev_drain(&pt->ev) == 0 && !pt->ev.lost &&
	    ts_ms >= pt->listed_ms && ts_ms - pt->listed_ms < PTREE_RELIST_MS)
		return collect_known(pt);
	/* the listing holds every process the events named so far */
	procev_clear(&pt->ev);
	pt->listings++;
	pt->listed_ms = ts_ms;
	return proc_for_each_pid(collect_pid, pt);
}

int ptree_scan(struct ptree *pt, int64_t ts_ms)
{
	int ret;

	compact(pt);
	rotate_scan(pt);
	fd_budget_update(pt); /* the owner may have raised the limit */
	pt->scan_ms = ts_ms;
	ret = collect(pt, ts_ms);
	close_fds(pt, pt->prev, pt->nprev); /* gone since the last scan */
	pt->nprev = 0;
	if (ret)
		return ret;
	/* positions, not pointers, so growing procs keeps the index valid */
	ret = rebuild_index(pt, pt->nscan);
	if (ret)
		return ret;
	/* every one but kernel threads (counted below), which only a listing of /proc has */
	pt->system_processes = pt->all ? 0 : pt->nscan + 1;
	ret = pidmap_reset(&pt->scan_index, &pt->scan_index_size, pt->nscan);
	if (ret)
		return ret;
	for (size_t i = 0; i < pt->nscan; i++)
		pidmap_put(pt->scan_index, pt->scan_index_size, pt->scan[i].pid, i);
	reread_orphans(pt);

	for (size_t i = 0; i < pt->nprocs; i++)
		pt->procs[i].seen = false;

	for (size_t i = 0; i < pt->nscan; i++) {
		const struct proc_stat *st = &pt->scan[i].stat;
		struct ptree_proc *p, *parent;

		if (!resolve_in_tree(pt, i))
			continue;
		if (pt->all)
			pt->system_processes++;
		p = ptree_find(pt, st->pid);
		if (p && p->start_ticks != st->start_ticks) {
			/* the pid was reused: the old process ended */
			p->alive = false;
			p->info.end_ms = ts_ms;
			p->emit = true;
			p = NULL;
		}
		if (!p) {
			p = new_proc(pt, st);
			if (!p)
				return -ENOMEM;
			pidmap_put(pt->index, pt->index_size, st->pid, (size_t)(p - pt->procs));
		}
		p->seen = true;
		refresh(pt, p, st, pt->scan[i].run_ns, &pt->scan[i], ts_ms, true);
		if ((parent = ptree_find(pt, p->info.ppid)) != NULL)
			parent->had_children = true;
		scan_libs(pt, p, ts_ms);
		if (!p->has_emitted || p->info_changed || sample_moved(&p->cur, &p->last_emitted))
			p->emit = true;
	}

	for (size_t i = 0; i < pt->nprocs; i++) {
		struct ptree_proc *p = &pt->procs[i];

		if (p->alive && !p->seen) {
			/* reaped by its parent: its totals live on in the parent's */
			p->alive = false;
			p->ended_now = true;
			p->info.end_ms = ts_ms;
			p->emit = true;
		}
	}
	settle_ended(pt);
	ret = ptree_settle_exits(pt);
	if (ret)
		return ret;
	for (size_t i = 0; i < pt->nprocs; i++) {
		struct ptree_proc *p = &pt->procs[i];

		if (p->ended_now)
			p->cur.state = 'X';
		if (p->emit) {
			p->last_emitted = p->cur;
			p->has_emitted = true;
		}
		if (!p->alive)
			p->done = true; /* its last row goes out with this tick */
	}
	compute_job(pt);
	return 0;
}

void ptree_child_exiting(struct ptree *pt, pid_t pid)
{
	struct proc_stat st;
	struct ptree_proc *p;

	if (proc_read_stat(&pt->reader, pid, &st) != 0)
		return;
	p = ptree_find(pt, pid);
	if (p && p->start_ticks != st.start_ticks)
		p = NULL;
	if (!p) {
		p = new_proc(pt, &st);
		if (!p || rebuild_index(pt, 0))
			return;
		p = ptree_find(pt, pid);
		if (!p)
			return;
	}
	refresh(pt, p, &st, 0, NULL, 0, false);
}

/* A bound of p's image between fork and exec: its parent's peak (0: unknown). */
static uint64_t pre_exec_image(struct ptree *pt, const struct ptree_proc *p)
{
	const struct ptree_proc *parent;

	if (p->info.ppid == pt->ancestor)
		return pt->spawn_image_bytes;
	parent = ptree_find(pt, p->info.ppid);
	return parent && (parent->cur.valid & PS_HWM) ? parent->cur.hwm_bytes : 0;
}

void ptree_child_reaped(struct ptree *pt, pid_t pid, const struct rusage *ru, int64_t ts_ms)
{
	struct ptree_proc *p = ptree_find(pt, pid);
	uint64_t maxrss;
	uint64_t user_ms =
	    (uint64_t)ru->ru_utime.tv_sec * 1000 + (uint64_t)ru->ru_utime.tv_usec / 1000;
	uint64_t system_ms =
	    (uint64_t)ru->ru_stime.tv_sec * 1000 + (uint64_t)ru->ru_stime.tv_usec / 1000;

	pt->reaped_user_ms += user_ms;
	pt->reaped_system_ms += system_ms;
	if (!p)
		return; /* never seen: its CPU still counts */
	if (p->cur.valid & PS_IO) {
		pt->reaped_read_bytes += p->cur.read_bytes;
		pt->reaped_write_bytes += p->cur.write_bytes;
		pt->reaped_io_valid = true;
	}
	/*
	 * wait4's rusage is RUSAGE_BOTH: ru_maxrss is the largest of its own
	 * peak and of every descendant it waited for (a wrapper's, `time` or a
	 * job script, would be its child's).  It is its own only for a process
	 * that reaped no child: none seen, and no children's time in its last
	 * stat (a child too short for both, and larger than it, is the case
	 * left).  It also holds the process's image between fork and exec, a
	 * copy of its parent's (exec keeps the old image's peak): a `sleep`
	 * forked by 300 MiB of Python reads 300 MiB.  So it counts only above
	 * that image's bound.  Else its own is the last VmHWM read, or the
	 * kernel's at its exit (ptree_watch_exits), which replaces this one.
	 */
	maxrss = (uint64_t)ru->ru_maxrss * 1024;
	if (!p->exit_known && !p->had_children && !p->cur.child_user_ms &&
	    !p->cur.child_system_ms && maxrss > pre_exec_image(pt, p) &&
	    maxrss > p->cur.hwm_bytes) {
		p->cur.hwm_bytes = maxrss;
		p->cur.valid |= PS_HWM;
		p->hwm_rusage = true;
	}
	p->cur.rss_bytes = 0;
	p->cur.state = 'X';
	p->alive = false;
	p->info.end_ms = ts_ms;
	p->emit = true;
	p->last_emitted = p->cur;
	p->has_emitted = true;
}

const struct job_sample *ptree_job(const struct ptree *pt)
{
	return &pt->job;
}

void ptree_set_sampler_cpu(struct ptree *pt, uint64_t cpu_ms)
{
	pt->job.sampler_cpu_ms = cpu_ms;
	pt->job_prev.sampler_cpu_ms = cpu_ms;
}
