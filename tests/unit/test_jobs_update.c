/*
 * test_jobs_update.c - the agent's job table tick by tick (jobs_update) on a
 * fake /proc built by the test: a worker that renames itself and overwrites
 * its environment stays in its job whether it is first seen before or after;
 * children with nothing of their own take their parents' jobs, whatever the
 * order in which the processes are discovered; an exec into another job's
 * environment moves a process; a move to a job's cgroup without exec is seen
 * at the next tick of a busy process and within the full refresh of a
 * sleeping one; each job keeps the CPU used while the process was its,
 * also when a parent leaves the job as it reaps a child (Slurm's stepd).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"

#include "attrib/jobs.h"
#include "common/sysroot.h"

#define BOOT_MS 1000000
#define TICK_MS 200

#define SESSION_CG "0::/user.slice/user-1000.slice/session-3.scope\n"
#define PLAIN_CG   "0::/\n"

static char root[64];

static void put_file(int pid, const char *name, const char *text, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/%d", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/proc/%d/%s", root, pid, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* CPU in ticks (hz 100: 1 tick = 10 ms); environ with '|' for NUL. */
static void put_proc(int pid, int ppid, const char *comm, char state, int utime, int cutime,
		     const char *cgroup, const char *env_text)
{
	char text[512], env[512];
	size_t n = strlen(env_text);

	snprintf(text, sizeof(text),
		 "%d (%s) %c %d %d %d 0 -1 4194304 100 0 0 0 %d 0 %d 0 20 0 1 0 %d 1000000 %d "
		 "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
		 pid, comm, state, ppid, pid, pid, utime, cutime, 1000 + pid, 250);
	put_file(pid, "stat", text, strlen(text));
	snprintf(text, sizeof(text),
		 "Name:\t%s\nState:\t%c\nUid:\t1000\t1000\t1000\t1000\nVmHWM:\t1000 kB\n"
		 "VmRSS:\t1000 kB\nVmSwap:\t0 kB\nThreads:\t1\n",
		 comm, state);
	put_file(pid, "status", text, strlen(text));
	snprintf(text, sizeof(text),
		 "rchar: 1\nwchar: 1\nsyscr: 1\nsyscw: 1\nread_bytes: 0\n"
		 "write_bytes: 0\ncancelled_write_bytes: 0\n");
	put_file(pid, "io", text, strlen(text));
	put_file(pid, "cmdline", comm, strlen(comm) + 1);
	put_file(pid, "cgroup", cgroup, strlen(cgroup));
	assert_true(n < sizeof(env));
	for (size_t i = 0; i < n; i++)
		env[i] = env_text[i] == '|' ? '\0' : env_text[i];
	put_file(pid, "environ", env, n);
}

static void remove_file(int pid, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/proc/%d/%s", root, pid, name);
	assert_int_equal(unlink(path), 0);
}

static void remove_proc(int pid)
{
	char dir[256];

	snprintf(dir, sizeof(dir), "%s/proc/%d", root, pid);
	assert_int_equal(fixture_rm_tree(dir), 0);
}

static int setup(void **state)
{
	char dir[128];

	(void)state;
	snprintf(root, sizeof(root), "/tmp/jobscope-jobs-XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/proc", root);
	mkdir(dir, 0755);
	sysroot_set(root);
	put_proc(1, 0, "init", 'S', 5, 0, PLAIN_CG, "");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(fixture_rm_tree(root), 0);
	sysroot_set(NULL);
	return 0;
}

struct agent {
	struct ptree pt;
	struct jobs jobs;
	int64_t now;
};

static void agent_start(struct agent *a)
{
	a->now = BOOT_MS + 100000;
	ptree_init_all(&a->pt, 100, BOOT_MS);
	jobs_init(&a->jobs, "node1", 1, 4, 8ull << 30, TICK_MS);
}

static void agent_stop(struct agent *a)
{
	jobs_release(&a->jobs);
	ptree_release(&a->pt);
}

static void tick(struct agent *a, int64_t ms)
{
	a->now += ms;
	assert_int_equal(ptree_scan(&a->pt, a->now), 0);
	assert_int_equal(jobs_update(&a->jobs, &a->pt, a->now), 0);
}

static struct ptree_proc *proc_of(struct agent *a, int pid)
{
	struct ptree_proc *p = ptree_find(&a->pt, pid);

	assert_non_null(p);
	return p;
}

/* "slurm:5", or "" */
static const char *job_of(struct agent *a, int pid)
{
	static char name[128];
	struct job_entry *j = jobs_of(&a->jobs, proc_of(a, pid));

	name[0] = '\0';
	if (j)
		snprintf(name, sizeof(name), "%s:%s", j->rec.scheduler, j->rec.job_id);
	return name;
}

static struct job_entry *live_job(struct agent *a, const char *scheduler, const char *id)
{
	for (size_t i = 0; i < a->jobs.njobs; i++) {
		struct job_entry *j = &a->jobs.job[i];

		if (j->live && !strcmp(j->rec.scheduler, scheduler) && !strcmp(j->rec.job_id, id))
			return j;
	}
	fail_msg("no live job %s:%s", scheduler, id);
	return NULL;
}

static uint64_t job_cpu(struct agent *a, const char *scheduler, const char *id)
{
	struct job_entry *j = live_job(a, scheduler, id);

	return j->js.user_ms + j->js.system_ms;
}

/* The worker is first seen after it overwrote its environment: it takes its parent's job. */
static void test_retitled_before_first_sight(void **state)
{
	struct agent a;

	(void)state;
	put_proc(100, 1, "bash", 'S', 3, 0, SESSION_CG, "HOME=/home/u|");
	put_proc(200, 100, "loadgen", 'S', 2, 0, SESSION_CG, "HOME=/home/u|SLURM_JOB_ID=5|");
	put_proc(201, 200, "worker: busy", 'R', 40, 0, SESSION_CG, "worker: busy||||||||");
	agent_start(&a);
	tick(&a, 0);
	assert_string_equal(job_of(&a, 100), "systemd:session-3.scope");
	assert_string_equal(job_of(&a, 200), "slurm:5");
	assert_string_equal(job_of(&a, 201), "slurm:5");
	assert_string_equal(proc_of(&a, 201)->env_job, "");
	assert_int_equal(job_cpu(&a, "slurm", "5"), 420);
	assert_int_equal(live_job(&a, "slurm", "5")->js.nprocs, 2);

	/* it burns on, renames itself again: still the job's */
	put_proc(201, 200, "worker: idle", 'R', 90, 0, SESSION_CG, "worker: idle||||||||");
	tick(&a, TICK_MS);
	assert_true(proc_of(&a, 201)->info_changed);
	assert_string_equal(job_of(&a, 201), "slurm:5");
	assert_int_equal(job_cpu(&a, "slurm", "5"), 920);

	/* it exits and its parent reaps it: the parent's cutime holds it, counted once */
	remove_proc(201);
	put_proc(200, 100, "loadgen", 'S', 2, 95, SESSION_CG, "HOME=/home/u|SLURM_JOB_ID=5|");
	tick(&a, TICK_MS);
	assert_int_equal(job_cpu(&a, "slurm", "5"), 20 + 950);
	assert_int_equal(job_cpu(&a, "systemd", "session-3.scope"), 30);
	agent_stop(&a);
}

/* The worker is seen with its environment, then renames itself: the first sight holds. */
static void test_retitled_after_first_sight(void **state)
{
	struct agent a;
	struct job_entry *session;

	(void)state;
	/* its parent is in no job: only its own environment can tell */
	put_proc(300, 1, "sh", 'S', 1, 0, SESSION_CG, "");
	put_proc(301, 300, "python3", 'R', 10, 0, SESSION_CG, "SLURM_JOB_ID=6|SLURM_STEP_ID=0|");
	agent_start(&a);
	tick(&a, 0);
	assert_string_equal(job_of(&a, 301), "slurm:6");
	assert_string_equal(proc_of(&a, 301)->env_job, "slurm\t6\t0");

	put_proc(301, 300, "ray::worker", 'R', 60, 0, SESSION_CG, "ray::worker|||||||||||");
	tick(&a, TICK_MS);
	assert_true(proc_of(&a, 301)->info_changed);
	assert_string_equal(job_of(&a, 301), "slurm:6");
	assert_int_equal(job_cpu(&a, "slurm", "6"), 600);
	session = live_job(&a, "systemd", "session-3.scope");
	assert_int_equal(session->js.user_ms, 10);
	assert_int_equal(session->credit_user_ms, 0);

	/* environ unreadable (the process is going): no change either */
	put_proc(301, 300, "ray::idle", 'R', 70, 0, SESSION_CG, "");
	remove_file(301, "environ");
	tick(&a, TICK_MS);
	assert_string_equal(job_of(&a, 301), "slurm:6");
	agent_stop(&a);
}

static bool listed_before(struct agent *a, int first, int second)
{
	long i = -1, k = -1;

	for (size_t n = 0; n < a->pt.nprocs; n++) {
		if (a->pt.procs[n].info.pid == first)
			i = (long)n;
		if (a->pt.procs[n].info.pid == second)
			k = (long)n;
	}
	assert_true(i >= 0 && k >= 0);
	return i < k;
}

/*
 * Chains of new processes with nothing of their own under a job's process:
 * every one takes the job, whether a child is discovered before its parent
 * or after.  One chain is made child first, the other parent first, so one
 * of them is discovered child first whatever order readdir gives.
 */
static void test_inherit_in_any_order(void **state)
{
	static const int chain_a[] = {410, 411, 412, 413}, chain_b[] = {420, 421, 422, 423};
	struct agent a;
	int inverted = 0;

	(void)state;
	for (int i = 3; i >= 1; i--)
		put_proc(chain_a[i], chain_a[i - 1], "w", 'S', 1, 0, PLAIN_CG, "");
	put_proc(chain_a[0], 1, "gunicorn", 'S', 1, 0, PLAIN_CG, "SLURM_JOB_ID=8|");
	put_proc(chain_b[0], 1, "postgres", 'S', 1, 0, PLAIN_CG, "JOBSCOPE_RUN_ID=9|");
	for (int i = 1; i <= 3; i++)
		put_proc(chain_b[i], chain_b[i - 1], "w", 'S', 1, 0, PLAIN_CG, "");
	agent_start(&a);
	tick(&a, 0);
	for (int i = 0; i < 4; i++) {
		assert_string_equal(job_of(&a, chain_a[i]), "slurm:8");
		assert_string_equal(job_of(&a, chain_b[i]), "run:9");
	}
	for (int i = 1; i < 4; i++)
		inverted += listed_before(&a, chain_a[i], chain_a[i - 1]) +
			    listed_before(&a, chain_b[i], chain_b[i - 1]);
	assert_true(inverted > 0);
	assert_int_equal(live_job(&a, "slurm", "8")->js.nprocs, 4);
	assert_int_equal(live_job(&a, "run", "9")->js.nprocs, 4);
	/* init and nothing else in a login session of its own */
	assert_string_equal(job_of(&a, 1), "session:1000/1");

	/* the top exits: its orphans go to init, and keep their job */
	remove_proc(chain_a[0]);
	put_proc(chain_a[1], 1, "w2", 'S', 1, 0, PLAIN_CG, "");
	tick(&a, TICK_MS);
	assert_true(proc_of(&a, chain_a[1])->info_changed);
	assert_string_equal(job_of(&a, chain_a[1]), "slurm:8");
	/* a new child of an orphan: the job too */
	put_proc(430, chain_a[3], "w", 'S', 1, 0, PLAIN_CG, "");
	tick(&a, TICK_MS);
	assert_string_equal(job_of(&a, 430), "slurm:8");
	/* an orphan moved to a unit: a job with no cgroup cannot be left by a move */
	put_proc(chain_a[2], chain_a[1], "w", 'R', 2, 0, SESSION_CG, "");
	tick(&a, TICK_MS);
	assert_string_equal(job_of(&a, chain_a[2]), "slurm:8");
	agent_stop(&a);
}

/* A child in a systemd unit of its own is that unit's; in its parent's cgroup, its parent's. */
static void test_unit_of_its_own(void **state)
{
	struct agent a;

	(void)state;
	put_proc(500, 1, "loadgen", 'S', 1, 0, SESSION_CG, "SLURM_JOB_ID=10|");
	put_proc(501, 500, "w", 'S', 1, 0, SESSION_CG, "");
	put_proc(502, 500, "scoped", 'S', 1, 0, "0::/user.slice/user-1000.slice/run-r1.scope\n",
		 "");
	agent_start(&a);
	tick(&a, 0);
	assert_string_equal(job_of(&a, 501), "slurm:10");
	assert_string_equal(job_of(&a, 502), "systemd:run-r1.scope");
	agent_stop(&a);
}

/* An exec into another job's environment moves a process; each job keeps its part. */
static void test_exec_into_another_job(void **state)
{
	struct agent a;

	(void)state;
	put_proc(600, 1, "sh", 'R', 30, 0, PLAIN_CG, "SLURM_JOB_ID=11|");
	agent_start(&a);
	tick(&a, 0);
	assert_string_equal(job_of(&a, 600), "slurm:11");
	put_proc(600, 1, "srun", 'R', 50, 0, PLAIN_CG, "SLURM_JOB_ID=12|");
	tick(&a, TICK_MS);
	assert_string_equal(job_of(&a, 600), "slurm:12");
	assert_string_equal(proc_of(&a, 600)->env_job, "slurm\t12\t");
	assert_int_equal(job_cpu(&a, "slurm", "12"), 0);
	put_proc(600, 1, "srun", 'R', 80, 0, PLAIN_CG, "SLURM_JOB_ID=12|");
	tick(&a, TICK_MS);
	assert_int_equal(job_cpu(&a, "slurm", "12"), 300);
	/* job 11 ended with the 500 ms the process used while it was 11's */
	for (size_t i = 0; i < a.jobs.njobs; i++)
		if (!strcmp(a.jobs.job[i].rec.job_id, "11"))
			assert_int_equal(a.jobs.job[i].last_row.user_ms, 500);
	agent_stop(&a);
}

#define JOB13_CG "0::/system.slice/slurmstepd.scope/job_13/step_0/user/task_0\n"

/*
 * Moved to a job's cgroup without exec: a busy process at the next tick, a
 * sleeping one when its status is read again (PTREE_FULL_REFRESH_MS).
 */
static void test_cgroup_move_without_exec(void **state)
{
	struct agent a;

	(void)state;
	put_proc(700, 1, "busy", 'R', 100, 0, PLAIN_CG, "SLURM_JOB_ID=12|");
	put_proc(701, 1, "sleepy", 'S', 7, 0, PLAIN_CG, "SLURM_JOB_ID=12|");
	agent_start(&a);
	tick(&a, 0);
	assert_string_equal(job_of(&a, 700), "slurm:12");
	assert_string_equal(job_of(&a, 701), "slurm:12");
	assert_int_equal(job_cpu(&a, "slurm", "12"), 1070);

	/* both move; the busy one used 200 ms more, the move among it */
	put_proc(700, 1, "busy", 'R', 120, 0, JOB13_CG, "SLURM_JOB_ID=12|");
	put_proc(701, 1, "sleepy", 'S', 7, 0, JOB13_CG, "SLURM_JOB_ID=12|");
	tick(&a, TICK_MS);
	assert_string_equal(job_of(&a, 700), "slurm:13");
	assert_string_equal(live_job(&a, "slurm", "13")->rec.cgroup,
			    "/system.slice/slurmstepd.scope/job_13");
	assert_string_equal(job_of(&a, 701), "slurm:12");
	assert_int_equal(job_cpu(&a, "slurm", "12"), 1270);
	assert_int_equal(job_cpu(&a, "slurm", "13"), 0);

	put_proc(700, 1, "busy", 'R', 150, 0, JOB13_CG, "SLURM_JOB_ID=12|");
	tick(&a, TICK_MS);
	assert_int_equal(job_cpu(&a, "slurm", "13"), 300);
	assert_int_equal(job_cpu(&a, "slurm", "12"), 1270);
	assert_int_equal(live_job(&a, "slurm", "12")->js.nprocs, 1);

	/* the sleeper, once its status is due again */
	tick(&a, PTREE_FULL_REFRESH_MS);
	assert_string_equal(job_of(&a, 701), "slurm:13");
	/* ... with its 70 ms, used while it was job 12's */
	assert_int_equal(job_cpu(&a, "slurm", "13"), 300);
	assert_int_equal(live_job(&a, "slurm", "13")->js.nprocs, 2);

	/* moved back out to a plain cgroup: its kept environment decides */
	put_proc(700, 1, "busy", 'R', 160, 0, PLAIN_CG, "worker|||||");
	tick(&a, TICK_MS);
	assert_string_equal(job_of(&a, 700), "slurm:12");
	agent_stop(&a);
}

/*
 * Slurm's stepd leaves the job's cgroup at the job's end, in the interval in
 * which it reaped the batch script: the job keeps the stepd's total, script
 * included, once.
 */
static void test_parent_leaves_as_child_ends(void **state)
{
	struct agent a;
	struct job_entry *j = NULL;

	(void)state;
	put_proc(800, 1, "slurmstepd", 'S', 1, 0, JOB13_CG, "");
	put_proc(801, 800, "slurm_script", 'R', 45, 0, JOB13_CG, "SLURM_JOB_ID=13|");
	agent_start(&a);
	tick(&a, 0);
	assert_string_equal(job_of(&a, 800), "slurm:13");
	assert_string_equal(job_of(&a, 801), "slurm:13");
	assert_int_equal(job_cpu(&a, "slurm", "13"), 460);

	remove_proc(801);
	put_proc(800, 1, "slurmstepd", 'S', 1, 50, PLAIN_CG, "");
	tick(&a, TICK_MS);
	assert_string_equal(job_of(&a, 800), "session:1000/800");
	for (size_t i = 0; i < a.jobs.njobs; i++)
		if (!strcmp(a.jobs.job[i].rec.job_id, "13"))
			j = &a.jobs.job[i];
	assert_non_null(j);
	assert_false(j->live);
	assert_int_equal(j->last_row.user_ms, 10 + 500);
	assert_int_equal(job_cpu(&a, "session", "1000/800"), 0);
	agent_stop(&a);
}

#define POD_UID	    "1234abcd-5678-90ab-cdef-0123456789ab"
#define POD_SANDBOX "5a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"
#define POD_CID	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define POD_CG(id)  "0::/kubepods/besteffort/pod" POD_UID "/" id "\n"
#define POD_ANN                                                                                    \
	"\"io.kubernetes.cri.sandbox-name\":\"bar-pod-7\","                                        \
	"\"io.kubernetes.cri.sandbox-namespace\":\"bar-ns\","                                      \
	"\"io.kubernetes.cri.sandbox-uid\":\"" POD_UID "\""

/* A bundle under root/bundles, as containerd's state directory holds them. */
static void put_bundle(const char *id, const char *annotations)
{
	char path[256], text[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/bundles", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/bundles/%s", root, id);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/bundles/%s/config.json", root, id);
	snprintf(text, sizeof(text), "{\"annotations\":{%s}}", annotations);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/*
 * A pod through its shim (pid 600, working directory the sandbox's
 * bundle): named by the bundles, the sandbox's pause is no container and
 * never the command, the trainer is.
 */
static void test_pod_named_by_bundles(void **state)
{
	struct agent a;
	struct job_entry *j;
	char target[256], link[256];

	(void)state;
	put_bundle(POD_SANDBOX, POD_ANN ",\"io.kubernetes.cri.container-type\":\"sandbox\"");
	put_bundle(POD_CID, POD_ANN ",\"io.kubernetes.cri.container-type\":\"container\","
				    "\"io.kubernetes.cri.container-name\":\"trainer\"");
	put_proc(600, 1, "containerd-shim", 'S', 1, 0, "0::/system.slice/containerd.service\n", "");
	snprintf(target, sizeof(target), "%s/bundles/" POD_SANDBOX, root);
	snprintf(link, sizeof(link), "%s/proc/600/cwd", root);
	assert_int_equal(symlink(target, link), 0);
	put_proc(601, 600, "pause", 'S', 1, 0, POD_CG(POD_SANDBOX), "");
	agent_start(&a);
	tick(&a, 0);
	j = live_job(&a, "k8s", POD_UID);
	assert_string_equal(j->rec.name, "bar-ns/bar-pod-7");
	assert_string_equal(j->k8s.namespace_, "bar-ns");
	assert_int_equal(j->k8s.ncontainers, 0);
	assert_int_equal(proc_of(&a, 601)->container, 0);

	put_proc(602, 600, "python", 'R', 3, 0, POD_CG(POD_CID), "");
	tick(&a, TICK_MS);
	j = live_job(&a, "k8s", POD_UID);
	assert_string_equal(j->rec.command, "python");
	assert_int_equal(j->rec.pid, 602);
	assert_int_equal(j->k8s.ncontainers, 1);
	assert_string_equal(j->k8s.container[0].name, "trainer");
	assert_string_equal(j->k8s.container[0].id, POD_CID);
	assert_int_equal(proc_of(&a, 602)->container, 1);
	assert_int_equal(j->js.nprocs, 2); /* the pause counts toward the pod */
	agent_stop(&a);
}

/* No bundle anywhere: the pod keeps its UID and no name; nothing is guessed. */
static void test_pod_without_bundles(void **state)
{
	struct agent a;
	struct job_entry *j;

	(void)state;
	put_proc(600, 1, "containerd-shim", 'S', 1, 0, "0::/system.slice/containerd.service\n", "");
	put_proc(602, 600, "python", 'R', 3, 0, POD_CG(POD_CID), "");
	agent_start(&a);
	tick(&a, 0);
	j = live_job(&a, "k8s", POD_UID);
	assert_string_equal(j->rec.name, "");
	assert_string_equal(j->k8s.pod, "");
	assert_int_equal(j->k8s.ncontainers, 0);
	assert_true(a.jobs.k8s.warned);
	agent_stop(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_retitled_before_first_sight, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_retitled_after_first_sight, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_inherit_in_any_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unit_of_its_own, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exec_into_another_job, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cgroup_move_without_exec, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_parent_leaves_as_child_ends, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pod_named_by_bundles, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pod_without_bundles, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
