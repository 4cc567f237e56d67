/*
 * cuda.c - the agent's receiver of the CUDA hook (--cuda-socket): the
 * node's CUDA processes started with CUDA_INJECTION64_PATH and
 * JOBSCOPE_CUDA_SOCKET connect to it (cuda/collect.h), record while
 * --cuda-always or a head's session asks for CUDA tables (the ingest
 * answer's "cuda", as sender_get_stats says), and each snapshot that
 * changed is stored after the tick under the job the agent attributes its
 * pid to (the kernel's SO_PEERCRED pid, not what the process says).  A row
 * stored takes the next fact seq, so the head's sender sends it with the
 * tick's rows (store/export.c).
 *
 * A pid the process table does not know yet (it started after the scan)
 * stays dirty for the next tick; one that ended before any scan saw it,
 * or that belongs to no job, is not stored (a log line, once).
 */
#include <errno.h>
#include <string.h>

#include "agent/agent.h"
#include "common/log.h"
#include "store/jobdata.h"

#define AGENT_CUDA_MIN_MS 200 /* the hook's interval: the agent's, at least this */

/* At a hello: whether the process records, and how often. */
static bool cuda_policy(void *arg, int32_t pid, int64_t *interval_ms)
{
	struct agent *a = arg;

	(void)pid;
	*interval_ms = a->cuda.interval_ms;
	return a->cuda_on;
}

int agent_cuda_setup(struct agent *a)
{
	int64_t iv = a->opt->interval_ms;
	int ret;

	cuda_collector_init(&a->cuda);
	if (!a->opt->cuda_socket)
		return 0;
	ret = cuda_collector_listen(&a->cuda, a->opt->cuda_socket,
				    iv > AGENT_CUDA_MIN_MS ? iv : AGENT_CUDA_MIN_MS, true);
	if (ret)
		return ret;
	a->cuda.policy = cuda_policy;
	a->cuda.policy_arg = a;
	a->cuda_on = a->opt->cuda_always;
	log_info("agent: CUDA hooks connect to %s (%s)", a->opt->cuda_socket,
		 a->cuda_on ? "recording always" : "recording while a session asks");
	return 0;
}

static int store_snapshot(void *arg, const struct cuda_proc *cp)
{
	struct agent *a = arg;
	int64_t job_id = 0;
	int ret = agent_job_of_pid(a, cp->pid, &job_id, NULL);

	if (ret == -EAGAIN)
		return ret;
	if (ret == -ENOENT) {
		if (!a->cuda_warned_nojob)
			log_info(
			    "agent: the CUDA tables of pid %d are not stored: it belongs to no "
			    "job the agent saw (said once)",
			    (int)cp->pid);
		a->cuda_warned_nojob = true;
		return 0;
	}
	ret = store_put_cuda_proc(a->st, job_id, cp, wallclock_now_ms(&a->wc));
	if (ret && ret != a->cuda_err)
		log_warn(ret, "cannot store the CUDA tables of pid %d (kept for the next tick)",
			 (int)cp->pid);
	a->cuda_err = ret;
	return ret;
}

void agent_cuda_tick(struct agent *a, int64_t interval_ms)
{
	bool want = a->opt->cuda_always;
	int64_t iv = interval_ms > AGENT_CUDA_MIN_MS ? interval_ms : AGENT_CUDA_MIN_MS;

	if (a->cuda.listen_fd < 0)
		return;
	if (!want && a->sender) {
		struct sender_stats ss;

		sender_get_stats(a->sender, &ss);
		want = ss.head_cuda;
	}
	if (want != a->cuda_on || (want && iv != a->cuda.interval_ms)) {
		if (want != a->cuda_on)
			log_info("agent: CUDA tables %s",
				 want ? "on for a profiling session" : "off: no session asks");
		a->cuda_on = want;
		cuda_collector_set(&a->cuda, want, iv);
	}
	cuda_collector_drain(&a->cuda, store_snapshot, a);
}

void agent_cuda_release(struct agent *a)
{
	cuda_collector_release(&a->cuda);
}
