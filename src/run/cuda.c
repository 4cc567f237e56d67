/*
 * cuda.c - `jobscope run --cuda` (see state.h): libjobscope-cuda.so found,
 * its socket listened on, the hooks' tables stored as they come and at the
 * end, and the run's own note (pid 0) saying what happened.
 *
 *   find_cuda_hook          $JOBSCOPE_CUDA_HOOK, next to the binary, installed
 *   run__cuda_setup         the socket, or the note saying why not
 *   run__cuda_store_proc    a process's tables into the store
 *   run__cuda_finish        the last frames, the note, the tables read back
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "run/run.h"
#include "run/state.h"
#include "store/jobdata.h"

/* libjobscope-cuda.so: $JOBSCOPE_CUDA_HOOK, next to this binary, or where it is installed. */
static int find_cuda_hook(char *out, size_t size, char *tried, size_t tsize)
{
	const char *given = getenv("JOBSCOPE_CUDA_HOOK");
	char exe[4096], cand[3][4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;
	size_t ncand = 0, used = 0;

	if (given && *given) {
		snprintf(out, size, "%s", given);
		snprintf(tried, tsize, "%s", given);
		return access(given, R_OK) == 0 ? 0 : -ENOENT;
	}
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(cand[ncand++], sizeof(cand[0]), "%.4000s/libjobscope-cuda.so",
				 exe);
			snprintf(cand[ncand++], sizeof(cand[0]),
				 "%.4000s/../lib/jobscope/libjobscope-cuda.so", exe);
		}
	}
	snprintf(cand[ncand++], sizeof(cand[0]), "%s/libjobscope-cuda.so", JOBSCOPE_HOOK_DIR);
	tried[0] = '\0';
	for (size_t i = 0; i < ncand; i++) {
		if (realpath(cand[i], out) && strlen(out) < size && access(out, R_OK) == 0)
			return 0;
		if (used < tsize) {
			int w =
			    snprintf(tried + used, tsize - used, "%s%s", i ? ", " : "", cand[i]);

			if (w > 0)
				used += (size_t)w;
		}
	}
	return -ENOENT;
}

static void cuda_note(struct run_state *r, enum cuda_proc_state state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void cuda_note(struct run_state *r, enum cuda_proc_state state, const char *fmt, ...)
{
	va_list ap;

	r->cuda_note.state = state;
	va_start(ap, fmt);
	vsnprintf(r->cuda_note.message, sizeof(r->cuda_note.message), fmt, ap);
	va_end(ap);
	if (state != CUDA_PROC_OK)
		log_warn(0, "--cuda: %s", r->cuda_note.message);
}

/*
 * The hook's socket in a directory of our own, and the variables CMD gets
 * (child.c's child_environ).  Failing here only costs the tables: the run
 * goes on, and the note says why.
 */
void run__cuda_setup(struct run_state *r)
{
	const char *other = getenv("CUDA_INJECTION64_PATH");
	const char *tmp = getenv("TMPDIR");
	char tried[1024], path[300];
	int ret;

	if (!r->opt->cuda)
		return;
	/* our own hook, set for every task by a site (docs/cuda.md): the run takes it over */
	if (other && *other && strcmp(basename(other), "libjobscope-cuda.so") != 0) {
		cuda_note(r, CUDA_PROC_BUSY,
			  "CUDA_INJECTION64_PATH is already set (%.150s): another profiler (nsys?) "
			  "injects into CUDA, so --cuda backs off",
			  other);
		return;
	}
	if (find_cuda_hook(r->cuda_hook, sizeof(r->cuda_hook), tried, sizeof(tried))) {
		cuda_note(r, CUDA_PROC_ERROR,
			  "libjobscope-cuda.so not found (tried %.180s): set JOBSCOPE_CUDA_HOOK",
			  tried);
		return;
	}
	snprintf(r->cuda_dir, sizeof(r->cuda_dir), "%.200s/jobscope-cuda-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(r->cuda_dir)) {
		cuda_note(r, CUDA_PROC_ERROR,
			  "cannot make a directory for the CUDA socket in %.150s: %s",
			  tmp && *tmp ? tmp : "/tmp", strerror(errno));
		r->cuda_dir[0] = '\0';
		return;
	}
	snprintf(path, sizeof(path), "%s/sock", r->cuda_dir);
	ret = cuda_collector_listen(
	    &r->cuda, path,
	    r->opt->interval_ms > RUN_CUDA_MIN_MS ? r->opt->interval_ms : RUN_CUDA_MIN_MS, false);
	if (ret)
		cuda_note(r, CUDA_PROC_ERROR, "cannot listen for the CUDA hook: %s",
			  strerror(-ret));
}

int run__cuda_store_proc(void *arg, const struct cuda_proc *p)
{
	struct run_state *r = arg;
	int ret = store_put_cuda_proc(r->st, r->job.id, p, wallclock_now_ms(&r->wc));

	if (ret && !r->cuda_err) {
		r->cuda_err = ret;
		log_warn(ret, "cannot store the CUDA tables of pid %d in '%s'", (int)p->pid,
			 store_path(r->st));
	}
	return ret;
}

void run__cuda_finish(struct run_state *r)
{
	int ret;

	if (!r->opt->cuda)
		return;
	if (r->cuda.listen_fd >= 0) {
		cuda_collector_finish(&r->cuda, RUN_CUDA_FINISH_MS);
		cuda_collector_drain(&r->cuda, run__cuda_store_proc, r);
		if (r->cuda.seen == 0)
			cuda_note(
			    r, CUDA_PROC_OFF,
			    "no process of the run initialised CUDA (a CUDA program loads the "
			    "hook in cuInit): no CUDA tables");
	}
	run__cuda_store_proc(r, &r->cuda_note);
	ret = cuda_tables_load(&r->cuda_tables, r->st, r->job.id,
			       wallclock_now_ms(&r->wc) - r->job.start_ms);
	if (ret)
		log_warn(ret, "cannot read the CUDA tables of run %" PRId64 " back", r->job.id);
}

const struct cuda_tables *run__cuda_tables(struct run_state *r)
{
	return r->cuda_tables.present ? &r->cuda_tables : NULL;
}

void run__cuda_release(struct run_state *r)
{
	cuda_tables_release(&r->cuda_tables);
	cuda_collector_release(&r->cuda);
	cuda_proc_release(&r->cuda_note);
	if (r->cuda_dir[0])
		rmdir(r->cuda_dir);
}
