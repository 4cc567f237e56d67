/*
 * job.h - what a job is: its key (scheduler, job id, node, start), who ran
 * it, what it reserved and how it ended.  The live job table (jobs.h)
 * fills it, the store keeps it (store.h: the jobs table) and reports read
 * it.  A plain struct: no functions, no ownership.
 */
#ifndef JOBSCOPE_JOB_H
#define JOBSCOPE_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "sample/proc.h"

/* A job: for `jobscope run`, scheduler "run" and job_id = the row id. */
struct job_record {
	int64_t id; /* row id: the RUN_ID users type */
	int64_t node_id;
	char hostname[256];
	char scheduler[16];
	char job_id[64];
	char name[256];
	char command[PROC_CMDLINE_MAX];
	char user[64];
	uint32_t uid;
	int32_t pid; /* root process */
	int64_t start_ms;
	int64_t end_ms; /* 0 while running */
	bool has_exit;	/* exit_code / signal are set */
	int32_t exit_code;
	int32_t signal; /* 0 unless killed by a signal */
	bool timed_out;
	int64_t interval_ms;
	int32_t cores_allowed; /* CPUs in the affinity mask */
	int32_t host_cores;
	uint64_t host_mem_bytes;
	int64_t samples;      /* ticks taken */
	int64_t lost_samples; /* ticks that could not be stored */
	int64_t sampler_cpu_ms;
	/* schema 3: what the agent learns of a scheduler's job */
	char step[32];		     /* Slurm step of the first process seen */
	char cgroup[512];	     /* the job's cgroup (job level), "" if none */
	char qos[16];		     /* Kubernetes QoS class */
	char reservation_source[16]; /* "slurm_env", "cgroup" or "" (nothing reserved) */
	double reserved_cpus;	     /* cores; 0 when unknown */
	uint64_t reserved_mem_bytes; /* 0 when unknown */
	bool has_reserved_gpus;
	int32_t reserved_gpus;
	char reserved_gpu_list[256]; /* as the scheduler wrote it, e.g. "0,1" */
	/* schema 12: Slurm 26.05's name of the job's cgroup, "sEKNKTV3WPV500"; "" if none */
	char sluid[16];
	/*
	 * schema 15: a pod's owner from its labels (the agent's --cri-socket),
	 * "NAMESPACE/NAME", and the label that named it; "" if none
	 */
	char k8s_owner[320];
	char k8s_owner_label[64];
};

#endif
