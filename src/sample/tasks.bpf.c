/*
 * tasks.bpf.c - the kernel's task iterator, for ptree (taskiter.c).
 *
 * One read of the iterator's file walks every task of the machine in the
 * kernel and writes one record a user-space task (kernel threads are left
 * out): what /proc/TID/schedstat says of it (the time it ran, the time it
 * waited for a CPU) and, for a thread-group leader, when it started (what
 * /proc/PID/stat's starttime counts, in ns).  It takes the place of a
 * schedstat read per process per tick.
 *
 * Compiled by clang -target bpf; the kernel's structures are declared here
 * with only the fields read, and libbpf's CO-RE relocations find them in the
 * running kernel's BTF (/sys/kernel/btf/vmlinux) when the program is loaded.
 */
typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed int __s32;
typedef signed long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

#include <bpf/bpf_helpers.h>

#include "sample/taskiter_rec.h"

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h */

struct sched_entity {
	__u64 sum_exec_runtime;
} __attribute__((preserve_access_index));

struct sched_info {
	unsigned long long run_delay;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	unsigned int flags;
	struct sched_entity se;
	struct sched_info sched_info;
	__u64 start_boottime;
} __attribute__((preserve_access_index));

struct seq_file;

struct bpf_iter_meta {
	struct seq_file *seq;
} __attribute__((preserve_access_index));

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

SEC("iter/task")
int jobscope_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct taskiter_rec r;

	if (!t || (t->flags & PF_KTHREAD))
		return 0;
	r.tgid = t->tgid;
	r.tid = t->pid;
	r.run_ns = t->se.sum_exec_runtime;
	r.wait_ns = t->sched_info.run_delay;
	r.start_ns = t->pid == t->tgid ? t->start_boottime : 0;
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}

/* bpf_seq_write is for GPL-compatible programs; this one is MIT and GPL */
char LICENSE[] SEC("license") = "Dual MIT/GPL";
