/*
 * ptree_exits.c - the processes of a tree that end, each with its own
 * figures from the kernel's taskstats listener and the time of its end from
 * the process events (ptree_watch_exits): what ptree.h says of exits.
 */
#include "ptree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/array.h"
#include "common/log.h"
#include "ptree_int.h"

int ptree_watch_exits(struct ptree *pt)
{
	int ret = taskstats_listener_open(&pt->ts);

	if (!ret && (ret = procev_open_exits(&pt->exit_ev)) != 0) {
		log_debug("no process events for the exits' times (%s): each is dated when read",
			  strerror(-ret));
		ret = 0;
	}
	return ret;
}

int ptree_exits_fd(const struct ptree *pt)
{
	return pt->ts.fd;
}

bool ptree_exits_dated(const struct ptree *pt)
{
	return pt->exit_ev.fd >= 0;
}

void ptree_exits_final(struct ptree *pt)
{
	pt->exits_final = true;
}

static int64_t boottime_ms(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_BOOTTIME, &t) < 0)
		return 0;
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

struct exit_batch {
	struct ptree *pt;
	int64_t boot_ms;
};

static void keep_exit(const struct taskstats_exit *e, void *arg)
{
	struct exit_batch *b = arg;
	struct ptree *pt = b->pt;
	struct ptree_exit *x;

	if (pt->nexits >= PTREE_MAX_EXITS ||
	    ARRAY_GROW(pt->exits, pt->nexits, pt->exits_alloc, 256)) {
		pt->exits_dropped++;
		return;
	}
	x = &pt->exits[pt->nexits++];
	x->e = *e;
	x->boot_ms = b->boot_ms;
	x->seq = pt->exit_seq++;
}

void ptree_drain_exits(struct ptree *pt)
{
	struct exit_batch b = {.pt = pt, .boot_ms = boottime_ms()};

	if (pt->ts.fd < 0)
		return;
	/*
	 * the kernel sends a process's taskstats message, then (after freeing its
	 * memory) its exit event: the events are read again after the messages, so
	 * that only a process in the middle of its exit right now lacks its time
	 * (and is dated when read, which is then its exit's)
	 */
	if (pt->exit_ev.fd >= 0)
		procev_drain(&pt->exit_ev);
	taskstats_listener_drain(&pt->ts, keep_exit, &b);
	if (pt->exit_ev.fd >= 0)
		procev_drain(&pt->exit_ev);
	if (pt->ts.lost) {
		pt->exits_dropped++;
		pt->ts.lost = false;
	}
}

static int cmp_exit(const void *a, const void *b)
{
	const struct ptree_exit *x = a, *y = b;

	if (x->e.tgid != y->e.tgid)
		return (x->e.tgid > y->e.tgid) - (x->e.tgid < y->e.tgid);
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* One process's exits (its threads'), summed: exits[first .. first+n). */
struct exit_group {
	size_t first, n;
	size_t leader; /* the record of its main thread, else its last */
	bool ended;
	int8_t in_tree;	     /* -1 unknown */
	int64_t end_boot_ms; /* the kernel's time of its end (CLOCK_BOOTTIME), -1 unknown */
	uint64_t user_us, system_us, read_bytes, write_bytes, hwm_bytes;
	bool has_hwm, has_io;
};

/* The process of the tree p (not yet dropped) with that pid, preferring one that ended. */
static struct ptree_proc *find_ended(struct ptree *pt, int32_t pid, bool *running)
{
	*running = false;
	for (size_t i = pt->nprocs; i-- > 0;) {
		struct ptree_proc *p = &pt->procs[i];

		if (p->done || p->info.pid != pid)
			continue;
		if (!p->alive || p->cur.state == 'Z')
			return p;
		*running = true; /* its exit is still under way, or the pid is another's */
	}
	return NULL;
}

static bool tree_has_pid(const struct ptree *pt, int32_t pid)
{
	for (size_t i = pt->nprocs; i-- > 0;)
		if (!pt->procs[i].done && pt->procs[i].info.pid == pid)
			return true;
	return false;
}

static int64_t monotonic_ms(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_MONOTONIC, &t) < 0)
		return 0;
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * The kernel's time of the end of process pid (CLOCK_BOOTTIME ms, off: that
 * clock less CLOCK_MONOTONIC), taken off the gathered exits; -1 if none.
 */
static int64_t take_exit_time(struct ptree *pt, int32_t pid, int64_t off)
{
	struct procev *ev = &pt->exit_ev;

	for (size_t i = 0; i < ev->nexits; i++) {
		if (ev->exits[i].pid != pid)
			continue;
		int64_t ms = ev->exits[i].mono_ns / 1000000 + off;

		ev->exits[i] = ev->exits[--ev->nexits];
		return ms;
	}
	return -1;
}

/* Forgets the exits' times no exit of the tree took within a while (others' processes). */
#define PTREE_EXIT_TIME_KEEP_MS 10000
static void prune_exit_times(struct ptree *pt)
{
	struct procev *ev = &pt->exit_ev;
	int64_t now = monotonic_ms();
	size_t out = 0;

	for (size_t i = 0; i < ev->nexits; i++)
		if (now - ev->exits[i].mono_ns / 1000000 < PTREE_EXIT_TIME_KEEP_MS)
			ev->exits[out++] = ev->exits[i];
	ev->nexits = out;
	ev->lost = false;
}

/* The group's figures as the process's own; its lifetime kept consistent with /proc's. */
static void settle_exit(struct ptree *pt, struct ptree_proc *p, const struct exit_group *g,
			bool new)
{
	const struct ptree_exit *lead = &pt->exits[g->leader];
	int64_t elapsed_ms = (int64_t)(lead->e.elapsed_us / 1000);
	struct proc_sample *s = &p->cur;

	s->user_ms = g->user_us / 1000;
	s->system_ms = g->system_us / 1000;
	if (g->has_hwm) {
		/* exact: above what /proc showed, and in place of ru_maxrss's bound */
		if (g->hwm_bytes > s->hwm_bytes || !(s->valid & PS_HWM) || p->hwm_rusage)
			s->hwm_bytes = g->hwm_bytes;
		s->valid |= PS_HWM;
		p->hwm_rusage = false;
	}
	if (g->has_io) {
		s->read_bytes = g->read_bytes;
		s->write_bytes = g->write_bytes;
		s->valid |= PS_IO;
	}
	s->rss_bytes = 0; /* its memory is gone */
	s->valid |= PS_RSS;
	if (new) {
		p->info.end_ms =
		    pt->boot_ms + (g->end_boot_ms >= 0 ? g->end_boot_ms : lead->boot_ms);
		p->info.start_ms = p->info.end_ms - elapsed_ms;
	} else if (g->end_boot_ms >= 0) {
		p->info.end_ms = pt->boot_ms + g->end_boot_ms;
	} else if (lead->e.pid == lead->e.tgid && elapsed_ms >= 0) {
		p->info.end_ms = p->info.start_ms + elapsed_ms;
	}
	if (lead->e.pid == lead->e.tgid && lead->e.comm[0] &&
	    strncmp(p->info.comm, lead->e.comm, sizeof(p->info.comm) - 1) != 0) {
		/* an exec since it was last read: the new program's name, its arguments unknown */
		snprintf(p->info.comm, sizeof(p->info.comm), "%s", lead->e.comm);
		ptree_set_cmdline(pt, p, lead->e.comm);
		p->info_dirty = true;
		p->info_changed = true;
	}
	p->exit_known = true;
	p->emit = true;
}

static int cmp_group_tgid(const void *key, const void *elem, void *arg)
{
	const struct ptree *pt = arg;
	int32_t tgid = *(const int32_t *)key;
	int32_t other = pt->exits[((const struct exit_group *)elem)->leader].e.tgid;

	return (tgid > other) - (tgid < other);
}

/* The group of the process tgid (groups are in tgid order), or NULL. */
static struct exit_group *find_group(struct ptree *pt, struct exit_group *gs, size_t ng,
				     int32_t tgid)
{
	size_t lo = 0, hi = ng;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp_group_tgid(&tgid, &gs[mid], pt);

		if (c == 0)
			return &gs[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/*
 * Which groups' processes are of the tree: known to it, or their parent is
 * the ancestor, a process of the tree, or another process of it that ended
 * (a subshell and its child, both gone between two scans).
 */
static void exits_in_tree(struct ptree *pt, struct exit_group *gs, size_t ng)
{
	bool changed = true;

	for (size_t k = 0; k < ng; k++) {
		const struct taskstats_exit *e = &pt->exits[gs[k].leader].e;

		gs[k].in_tree = tree_has_pid(pt, e->tgid) || e->ppid == pt->ancestor ||
					tree_has_pid(pt, e->ppid)
				    ? 1
				    : -1;
	}
	while (changed) {
		changed = false;
		for (size_t k = 0; k < ng; k++) {
			const struct exit_group *parent;

			if (gs[k].in_tree == 1)
				continue;
			parent = find_group(pt, gs, ng, pt->exits[gs[k].leader].e.ppid);
			if (parent && parent != &gs[k] && parent->in_tree == 1) {
				gs[k].in_tree = 1;
				changed = true;
			}
		}
	}
}

/*
 * The exits received since the last scan (and those kept from before):
 * each ended process of the tree gets its own figures, a new row when it
 * was never seen; a process still running keeps its threads' exits until
 * it ends; the others' are dropped.
 */
int ptree_settle_exits(struct ptree *pt)
{
	struct exit_group *gs;
	size_t ng = 0, out = 0;
	int64_t now_boot = boottime_ms();
	int64_t boot_off = now_boot - monotonic_ms();

	ptree_drain_exits(pt);
	if (pt->nexits == 0) {
		prune_exit_times(pt);
		return 0;
	}
	qsort(pt->exits, pt->nexits, sizeof(*pt->exits), cmp_exit);
	gs = calloc(pt->nexits, sizeof(*gs));
	if (!gs)
		return -ENOMEM;
	for (size_t i = 0; i < pt->nexits; i++) {
		const struct taskstats_exit *e = &pt->exits[i].e;
		struct exit_group *g = &gs[ng];

		if (i == 0 || e->tgid != pt->exits[i - 1].e.tgid) {
			g = &gs[ng++];
			g->first = i;
			g->leader = i;
			g->in_tree = -1;
		} else {
			g = &gs[ng - 1];
		}
		g->n++;
		if (e->pid == e->tgid || pt->exits[g->leader].e.pid != e->tgid)
			g->leader = i;
		g->ended |= e->group_dead;
		g->user_us += e->user_us;
		g->system_us += e->system_us;
		if (e->has_hiwater && e->hiwater_rss_bytes > g->hwm_bytes)
			g->hwm_bytes = e->hiwater_rss_bytes;
		g->has_hwm |= e->has_hiwater;
		if (e->has_io) {
			g->read_bytes += e->read_bytes;
			g->write_bytes += e->write_bytes;
			g->has_io = true;
		}
	}
	exits_in_tree(pt, gs, ng);
	for (size_t k = 0; k < ng; k++) {
		struct exit_group *g = &gs[k];
		const struct taskstats_exit *lead = &pt->exits[g->leader].e;
		struct ptree_proc *p;
		bool running, keep = false;

		g->end_boot_ms = -1;
		if (g->in_tree == 1 && g->ended)
			g->end_boot_ms = take_exit_time(pt, lead->tgid, boot_off);
		if (g->in_tree == 1 && g->ended) {
			p = find_ended(pt, lead->tgid, &running);
			if (p) {
				settle_exit(pt, p, g, false);
			} else if (running) {
				keep = true; /* its exit is under way: next scan */
			} else if (g->end_boot_ms < 0 && pt->exit_ev.fd >= 0 && !pt->exits_final &&
				   now_boot - pt->exits[g->leader].boot_ms <
				       PTREE_EXIT_EVENT_WAIT_MS) {
				keep = true; /* unseen, its exit event still on its way */
			} else if ((p = ptree_add_proc(pt)) != NULL) {
				p->info.pid = lead->tgid;
				p->info.ppid = lead->ppid;
				p->info_dirty = true;
				p->ended_now = true;
				p->cur.state = 'X';
				p->cur.threads = 1;
				p->cur.valid = PS_THREADS;
				settle_exit(pt, p, g, true);
				snprintf(p->info.comm, sizeof(p->info.comm), "%s", lead->comm);
			} else {
				free(gs);
				return -ENOMEM;
			}
		} else if (g->in_tree == 1) {
			keep = true; /* threads of a process still running */
		}
		for (size_t i = 0; keep && i < g->n; i++)
			pt->exits[out++] = pt->exits[g->first + i];
	}
	pt->nexits = out;
	free(gs);
	prune_exit_times(pt);
	return 0;
}
