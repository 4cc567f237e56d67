/*
 * child.c - CMD as `jobscope run`'s child (see state.h): its environment
 * built before fork(), its start (an exec failure comes back through a
 * pipe), every child reaped with its last values, signals passed on, and
 * --timeout's SIGTERM then SIGKILL to the whole tree.
 *
 *   record_status, run__reap      exit statuses, exact final values
 *   signal_tree                   CMD, or every process of the tree
 *   run__on_timeout, run__on_signal
 *   child_environ                 ours plus JOBSCOPE_RUN_ID, the hook's, StatsD's
 *   run__spawn                    fork, exec, and its errno back
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/exitcode.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "run/run.h"
#include "run/state.h"

static void record_status(struct run_state *r, int status)
{
	r->child_done = true;
	r->job.has_exit = true;
	if (WIFSIGNALED(status)) {
		r->job.signal = WTERMSIG(status);
		r->job.exit_code = 128 + r->job.signal;
	} else {
		r->job.signal = 0;
		r->job.exit_code = WEXITSTATUS(status);
	}
}

void run__reap(struct run_state *r)
{
	for (;;) {
		siginfo_t si;
		struct rusage ru;
		int status;
		pid_t pid;

		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				r->no_children = true;
			return;
		}
		if (si.si_pid == 0)
			return;
		ptree_child_exiting(&r->pt, si.si_pid);
		pid = wait4(si.si_pid, &status, 0, &ru);
		if (pid < 0)
			return;
		ptree_child_reaped(&r->pt, pid, &ru, wallclock_now_ms(&r->wc));
		if (pid == r->child)
			record_status(r, status);
	}
}

/* Sends sig to CMD, or to the whole tree. */
static void signal_tree(struct run_state *r, int sig, bool whole_tree)
{
	if (!r->child_done)
		kill(r->child, sig);
	if (!whole_tree && !r->child_done)
		return;
	for (size_t i = 0; i < r->pt.nprocs; i++) {
		const struct ptree_proc *p = &r->pt.procs[i];

		if (p->alive && p->info.pid != r->child)
			kill(p->info.pid, sig);
	}
}

void run__on_timeout(struct run_state *r)
{
	uint64_t n;

	if (read(r->timeoutfd, &n, sizeof(n)) < 0)
		return;
	if (!r->timed_out) {
		/* refresh the tree so processes started since the last tick get it too */
		ptree_scan(&r->pt, wallclock_now_ms(&r->wc));
		r->timed_out = true;
		r->timeout_at_ms = wallclock_now_ms(&r->wc);
		log_info("%s reached: sending SIGTERM to the command's processes",
			 r->opt->for_trial ? "--duration" : "--timeout");
		signal_tree(r, SIGTERM, true);
		if (r->opt->kill_after_ms > 0) {
			time_arm_timer(r->timeoutfd, r->opt->kill_after_ms, 0);
			return;
		}
	}
	if (!r->killed) {
		r->killed = true;
		ptree_scan(&r->pt, wallclock_now_ms(&r->wc));
		if (r->opt->kill_after_ms)
			log_info(
			    "still running %.3gs (--kill-after) after SIGTERM: sending SIGKILL",
			    r->opt->kill_after_ms / 1000.0);
		else
			log_info("sending SIGKILL");
		signal_tree(r, SIGKILL, true);
	}
}

void run__on_signal(struct run_state *r)
{
	struct signalfd_siginfo si;

	while (read(r->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			run__reap(r);
			continue;
		}
		/*
		 * A signal the terminal sent (Ctrl-C) reached CMD already: it is
		 * in our process group.  Pass on only those a process sent us.
		 */
		if (si.ssi_code == SI_KERNEL)
			continue;
		signal_tree(r, (int)si.ssi_signo, false);
	}
}

/*
 * CMD's environment: ours plus JOBSCOPE_RUN_ID (and with --cuda the hook's
 * variables), built before fork() because a GPU library may have started
 * threads, and after fork() only async-signal-safe calls are allowed (no
 * setenv, no malloc).  *nadded: the entries at the end that we allocated.
 */
static int env_add(char **envp, size_t at, size_t *added, const char *key, const char *value)
{
	char *entry;

	if (asprintf(&entry, "%s%s", key, value) < 0)
		return -ENOMEM;
	envp[at + (*added)++] = entry;
	return 0;
}

static char **child_environ(const struct run_state *r, size_t *nadded)
{
	extern char **environ;
	static const char *const ours[] = {
	    "JOBSCOPE_RUN_ID=",	       "CUDA_INJECTION64_PATH=", "JOBSCOPE_CUDA_SOCKET=",
	    "JOBSCOPE_CUPTI_LIBRARY=", "STATSD_HOST=",		 "STATSD_PORT=",
	    "JOBSCOPE_STATSD_SOCKET="};
	size_t n = 0, out = 0, added = 0;
	char id[32];
	char **envp;
	int ret;

	while (environ[n])
		n++;
	envp = calloc(n + 8, sizeof(*envp));
	if (!envp)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		bool replaced = false;

		/*
		 * JOBSCOPE_RUN_ID always, the hook's with --cuda, the CUPTI path
		 * with --cupti, StatsD's when the receiver is on (the socket's
		 * even when it has none: a parent run's would be wrong here)
		 */
		for (size_t k = 0; k < sizeof(ours) / sizeof(ours[0]); k++)
			replaced |=
			    strncmp(environ[i], ours[k], strlen(ours[k])) == 0 &&
			    (k == 0 ||
			     (k < 4 && r->cuda.listen_fd >= 0 && (k < 3 || r->opt->cupti)) ||
			     (k >= 4 && r->app.on));
		if (!replaced)
			envp[out++] = environ[i];
	}
	snprintf(id, sizeof(id), "%" PRId64, r->job.id);
	ret = env_add(envp, out, &added, ours[0], id);
	if (!ret && r->cuda.listen_fd >= 0) {
		ret = env_add(envp, out, &added, ours[1], r->cuda_hook);
		if (!ret)
			ret = env_add(envp, out, &added, ours[2], r->cuda.path);
		if (!ret && r->opt->cupti)
			ret = env_add(envp, out, &added, ours[3], r->opt->cupti);
	}
	if (!ret && r->app.on) {
		ret = env_add(envp, out, &added, ours[4], "127.0.0.1");
		if (!ret)
			ret = env_add(envp, out, &added, ours[5], r->app.port);
		if (!ret && r->app.col.unix_fd >= 0)
			ret = env_add(envp, out, &added, ours[6], r->app.col.path);
	}
	*nadded = added;
	if (ret) {
		for (size_t i = 0; i < added; i++)
			free(envp[out + i]);
		free(envp);
		return NULL;
	}
	return envp;
}

static void free_environ(char **envp, size_t nadded)
{
	size_t n = 0;

	while (envp[n])
		n++;
	for (size_t i = 0; i < nadded; i++)
		free(envp[n - 1 - i]);
	free(envp);
}

int run__spawn(struct run_state *r)
{
	struct proc_status self;
	int pipefd[2];
	int child_errno = 0;
	ssize_t n;
	size_t nadded = 0;
	char **envp = child_environ(r, &nadded);

	if (!envp)
		return log_err(-ENOMEM, "out of memory");
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		int ret = -errno;

		free_environ(envp, nadded);
		return log_err(ret, "pipe");
	}
	/* the command's image until its exec is a copy of ours: its ru_maxrss holds our peak */
	if (proc_read_status(&r->pt.reader, getpid(), &self) == 0 && (self.valid & PROC_STATUS_HWM))
		r->pt.spawn_image_bytes = self.hwm_bytes;
	r->child = fork();
	if (r->child < 0) {
		int ret = -errno;

		close(pipefd[0]);
		close(pipefd[1]);
		free_environ(envp, nadded);
		return log_err(ret, "cannot start '%s'", r->opt->argv[0]);
	}
	if (r->child == 0) {
		int e;

		close(pipefd[0]);
		signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_SETMASK, &r->orig_mask, NULL);
		if (r->nofile_raised)
			setrlimit(RLIMIT_NOFILE, &r->orig_nofile);
		execvpe(r->opt->argv[0], r->opt->argv, envp);
		e = errno;
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			_exit(EXIT_RUN_FAILED);
		_exit(e == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
	}
	close(pipefd[1]);
	free_environ(envp, nadded); /* ours; the rest are environ's */
	do
		n = read(pipefd[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n == (ssize_t)sizeof(child_errno))
		return -child_errno;
	return 0;
}
