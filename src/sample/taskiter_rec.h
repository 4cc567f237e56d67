/*
 * taskiter_rec.h - the record the task iterator (tasks.bpf.c) writes for
 * each task, read by taskiter.c: shared by the BPF program and jobscope, so
 * plain fixed-size fields only.
 */
#ifndef JOBSCOPE_SAMPLE_TASKITER_REC_H
#define JOBSCOPE_SAMPLE_TASKITER_REC_H

struct taskiter_rec {
	__s32 tgid;	/* the process */
	__s32 tid;	/* the task: tgid for the thread-group leader */
	__u64 run_ns;	/* se.sum_exec_runtime: /proc/TID/schedstat's first field */
	__u64 wait_ns;	/* sched_info.run_delay: its second */
	__u64 start_ns; /* the leader's start_boottime (stat's starttime, in ns); 0 */
};

#endif
