/*
 * test_jobs.c - jobs_attribute(): which job a process belongs to, from the
 * text of its /proc/PID/cgroup and environ, for every attribution variant
 * the agent knows (DESIGN.md section 4): Slurm by cgroup (v1, Debian's
 * /slurm_<node>, v2 with and without the node prefix) and by environment,
 * Kubernetes pods (systemd and cgroupfs drivers, QoS classes, runtimes),
 * `jobscope run` ids, systemd units, and the user+session fallback; and
 * the job-level cgroup each one gives; what a process's environment said
 * once outliving the environment (jobs_keep_env); and the choice between
 * its own word, its parent's job and the job it has (jobs_choose).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "attrib/jobs.h"

#define CID	  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID_DASH  "1234abcd-5678-90ab-cdef-0123456789ab"
#define UID_UNDER "1234abcd_5678_90ab_cdef_0123456789ab"

struct variant {
	const char *cgroup;
	const char *environ; /* '|' stands for NUL */
	const char *scheduler, *job_id, *step, *job_cgroup;
};

static void check_variant(const struct variant *v)
{
	char env[1024];
	size_t n = strlen(v->environ);
	struct job_attribution a;

	assert_true(n < sizeof(env));
	for (size_t i = 0; i < n; i++)
		env[i] = v->environ[i] == '|' ? '\0' : v->environ[i];
	jobs_attribute(v->cgroup, strlen(v->cgroup), env, n, 1000, 4242, &a);
	if (strcmp(a.scheduler, v->scheduler) || strcmp(a.job_id, v->job_id) ||
	    strcmp(a.step, v->step) || strcmp(a.cgroup, v->job_cgroup))
		fail_msg("cgroup %s / env %s:\n got %s %s step '%s' cgroup '%s'\nwant %s %s step "
			 "'%s' cgroup '%s'",
			 v->cgroup, v->environ, a.scheduler, a.job_id, a.step, a.cgroup,
			 v->scheduler, v->job_id, v->step, v->job_cgroup);
}

static void test_slurm_by_cgroup(void **state)
{
	static const struct variant v[] = {
	    {"4:memory:/slurm/uid_1000/job_17/step_0/task_0\n3:cpuset:/slurm/uid_1000/job_17/"
	     "step_0\n"
	     "0::/\n",
	     "", "slurm", "17", "0", "/slurm/uid_1000/job_17"},
	    {"4:memory:/slurm_vm/uid_0/job_5/step_batch/task_0\n2:cpuacct:/slurm_vm/uid_0/job_5/"
	     "step_batch/task_0\n1:cpu:/\n",
	     "SLURM_JOB_ID=5|SLURM_CPUS_ON_NODE=2|", "slurm", "5", "batch",
	     "/slurm_vm/uid_0/job_5"},
	    {"0::/system.slice/slurmstepd.scope/job_42/step_3/user/task_0\n", "", "slurm", "42",
	     "3", "/system.slice/slurmstepd.scope/job_42"},
	    {"0::/system.slice/node7_slurmstepd.scope/job_43/step_extern/slurm\n", "", "slurm",
	     "43", "extern", "/system.slice/node7_slurmstepd.scope/job_43"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		check_variant(&v[i]);
}

/* Slurm 26.05: the cgroup names the job by SLUID, the environment gives its number */
static void test_slurm_by_sluid(void **state)
{
	static const struct variant v[] = {
	    {"0::/system.slice/slurmstepd.scope/sEKNKTV3WPV500/step_0/user/task_0\n",
	     "SLURM_JOB_ID=4711|SLURM_STEP_ID=0|", "slurm", "4711", "0",
	     "/system.slice/slurmstepd.scope/sEKNKTV3WPV500"},
	    /* a prolog's SLURM_JOB_ID is still the job's number */
	    {"0::/system.slice/slurmstepd.scope/sEKNKTV3WPV500/step_extern/slurm\n",
	     "SLURM_JOB_ID=4711|SLURM_SCRIPT_CONTEXT=prolog_slurmd|", "slurm", "4711", "extern",
	     "/system.slice/slurmstepd.scope/sEKNKTV3WPV500"},
	    /* no number here: the SLUID stands for it (the table asks the stepd, jobs.c) */
	    {"0::/system.slice/vm_slurmstepd.scope/sEKNKTV3WPV500/step_batch/user/task_0\n", "",
	     "slurm", "sEKNKTV3WPV500", "batch",
	     "/system.slice/vm_slurmstepd.scope/sEKNKTV3WPV500"},
	    {"0::/system.slice/slurmstepd.scope/sEKNKTV3WPV500/step_0/user/task_0\n",
	     "SLURM_JOB_ID=x47|", "slurm", "sEKNKTV3WPV500", "0",
	     "/system.slice/slurmstepd.scope/sEKNKTV3WPV500"},
	};
	struct job_attribution a;
	static const char job_path[] =
	    "0::/system.slice/slurmstepd.scope/job_42/step_3/user/task_0\n";

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		check_variant(&v[i]);
		jobs_attribute(v[i].cgroup, strlen(v[i].cgroup), NULL, 0, 1000, 4242, &a);
		assert_string_equal(a.sluid, "sEKNKTV3WPV500");
		assert_int_equal(a.basis, JOB_BASIS_CGROUP);
	}
	jobs_attribute(job_path, strlen(job_path), NULL, 0, 1000, 4242, &a);
	assert_string_equal(a.sluid, "");
}

static void test_slurm_by_environment(void **state)
{
	/* any proctrack plugin: no Slurm cgroup, but SLURM_JOB_ID */
	static const struct variant v[] = {
	    {"0::/user.slice/user-1000.slice/session-3.scope\n",
	     "HOME=/root|SLURM_JOB_ID=901|SLURM_STEP_ID=2|", "slurm", "901", "2", ""},
	    {"", "SLURM_JOB_ID=902", "slurm", "902", "", ""},
	    /* Slurm's epilog for job 903 is not job 903's work */
	    {"0::/\n", "SLURM_JOB_ID=903|SLURM_SCRIPT_CONTEXT=epilog_slurmd|", "session",
	     "1000/4242", "", ""},
	};
	struct job_attribution a;
	static const char env[] = "SLURM_JOB_ID=7\0SLURM_CPUS_ON_NODE=4\0SLURM_MEM_PER_NODE=512\0"
				  "SLURM_JOB_GPUS=0,1\0";

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		check_variant(&v[i]);
	jobs_attribute("", 0, env, sizeof(env) - 1, 0, 1, &a);
	assert_int_equal(a.env.cpus_on_node, 4);
	assert_int_equal(a.env.mem_per_node_bytes, 512ull << 20);
	assert_int_equal(a.env.job_gpus_count, 2);
}

static void test_kubernetes(void **state)
{
	static const struct variant v[] = {
	    {"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_UNDER
	     ".slice/cri-containerd-" CID ".scope\n",
	     "", "k8s", UID_DASH, "",
	     "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_UNDER ".slice"},
	    {"0::/kubepods.slice/kubepods-pod" UID_UNDER ".slice/crio-" CID ".scope\n", "", "k8s",
	     UID_DASH, "", "/kubepods.slice/kubepods-pod" UID_UNDER ".slice"},
	    {"11:memory:/kubepods/besteffort/pod" UID_DASH "/" CID "\n0::/\n", "", "k8s", UID_DASH,
	     "", "/kubepods/besteffort/pod" UID_DASH},
	    {"0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
	     "kubelet-kubepods-besteffort-pod" UID_UNDER ".slice/docker-" CID ".scope\n",
	     "", "k8s", UID_DASH, "",
	     "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
	     "kubelet-kubepods-besteffort-pod" UID_UNDER ".slice"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		check_variant(&v[i]);
}

static void test_run_systemd_and_session(void **state)
{
	static const struct variant v[] = {
	    /* a `jobscope run` inside a login session: the run wins */
	    {"0::/user.slice/user-1000.slice/session-3.scope\n", "PATH=/bin|JOBSCOPE_RUN_ID=12|",
	     "run", "12", "", ""},
	    {"0::/system.slice/nginx.service\n", "PATH=/bin|", "systemd", "nginx.service", "",
	     "/system.slice/nginx.service"},
	    {"1:name=systemd:/user.slice/user-1000.slice/session-3.scope\n0::/\n", "", "systemd",
	     "session-3.scope", "", "/user.slice/user-1000.slice/session-3.scope"},
	    /* nothing to go on: the user and the session */
	    {"0::/\n", "", "session", "1000/4242", "", ""},
	    {"", "", "session", "1000/4242", "", ""},
	    {"garbage without colons\n", "", "session", "1000/4242", "", ""},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		check_variant(&v[i]);
}

static void attribute_env(const char *cgroup, const char *environ, struct job_attribution *a)
{
	char env[512];
	size_t n = strlen(environ);

	assert_true(n < sizeof(env));
	for (size_t i = 0; i < n; i++)
		env[i] = environ[i] == '|' ? '\0' : environ[i];
	jobs_attribute(cgroup, strlen(cgroup), env, n, 1000, 4242, a);
}

static void test_keep_env(void **state)
{
	char kept[PTREE_ENV_JOB_MAX] = "";
	struct job_attribution a;

	(void)state;
	/* first sight: the environment names the job, which is kept */
	attribute_env("0::/user.slice/user-1000.slice/session-3.scope\n",
		      "SLURM_JOB_ID=901|SLURM_STEP_ID=2|", &a);
	assert_int_equal(a.basis, JOB_BASIS_ENV);
	jobs_keep_env(&a, kept, sizeof(kept));
	assert_string_equal(kept, "slurm\t901\t2");

	/* setproctitle overwrote it: the kept job, above the session's unit */
	attribute_env("0::/user.slice/user-1000.slice/session-3.scope\n", "worker: idle|||||||||",
		      &a);
	assert_int_equal(a.basis, JOB_BASIS_UNIT);
	jobs_keep_env(&a, kept, sizeof(kept));
	assert_int_equal(a.basis, JOB_BASIS_ENV);
	assert_string_equal(a.scheduler, "slurm");
	assert_string_equal(a.job_id, "901");
	assert_string_equal(a.step, "2");
	assert_string_equal(a.cgroup, "");
	assert_string_equal(kept, "slurm\t901\t2");

	/* unreadable: the same */
	jobs_attribute("", 0, NULL, 0, 1000, 4242, &a);
	jobs_keep_env(&a, kept, sizeof(kept));
	assert_int_equal(a.basis, JOB_BASIS_ENV);
	assert_string_equal(a.job_id, "901");

	/* a job cgroup still wins over the kept environment */
	attribute_env("0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n", "", &a);
	jobs_keep_env(&a, kept, sizeof(kept));
	assert_int_equal(a.basis, JOB_BASIS_CGROUP);
	assert_string_equal(a.job_id, "42");
	assert_string_equal(kept, "slurm\t901\t2");

	/* an exec whose new environment names another job: that one is kept */
	attribute_env("0::/\n", "JOBSCOPE_RUN_ID=77|", &a);
	jobs_keep_env(&a, kept, sizeof(kept));
	assert_string_equal(a.scheduler, "run");
	assert_string_equal(kept, "run\t77\t");
	attribute_env("0::/\n", "", &a);
	jobs_keep_env(&a, kept, sizeof(kept));
	assert_string_equal(a.scheduler, "run");
	assert_string_equal(a.job_id, "77");
	assert_string_equal(a.step, "");

	/* an epilog's SLURM_JOB_ID names no job: nothing kept, nothing replaced */
	kept[0] = '\0';
	attribute_env("0::/\n", "SLURM_JOB_ID=903|SLURM_SCRIPT_CONTEXT=epilog_slurmd|", &a);
	jobs_keep_env(&a, kept, sizeof(kept));
	assert_string_equal(kept, "");
	assert_string_equal(a.scheduler, "session");

	/* what is kept and is not whole is ignored */
	snprintf(kept, sizeof(kept), "slurm\t5");
	attribute_env("0::/\n", "", &a);
	jobs_keep_env(&a, kept, sizeof(kept));
	assert_string_equal(a.scheduler, "session");
	snprintf(kept, sizeof(kept), "slurm\t\t");
	jobs_keep_env(&a, kept, sizeof(kept));
	assert_string_equal(a.scheduler, "session");
}

static void test_choose(void **state)
{
	struct job_attribution cg, env, unit, none;
	struct job_record by_cgroup = {0}, by_env = {0}, by_unit = {0}, session = {0};

	(void)state;
	attribute_env("0::/system.slice/slurmstepd.scope/job_42/step_0\n", "", &cg);
	attribute_env("0::/\n", "SLURM_JOB_ID=7|", &env);
	attribute_env("0::/system.slice/sshd.service\n", "", &unit);
	attribute_env("0::/\n", "", &none);
	assert_int_equal(cg.basis, JOB_BASIS_CGROUP);
	assert_int_equal(env.basis, JOB_BASIS_ENV);
	assert_int_equal(unit.basis, JOB_BASIS_UNIT);
	assert_int_equal(none.basis, JOB_BASIS_NONE);
	snprintf(by_cgroup.scheduler, sizeof(by_cgroup.scheduler), "slurm");
	snprintf(by_cgroup.cgroup, sizeof(by_cgroup.cgroup),
		 "/system.slice/slurmstepd.scope/job_42");
	snprintf(by_env.scheduler, sizeof(by_env.scheduler), "slurm");
	snprintf(by_unit.scheduler, sizeof(by_unit.scheduler), "systemd");
	snprintf(by_unit.cgroup, sizeof(by_unit.cgroup), "/system.slice/sshd.service");
	snprintf(session.scheduler, sizeof(session.scheduler), "session");

	/* a job cgroup or an environment decides, whatever the parent */
	assert_int_equal(jobs_choose(&cg, NULL, false, "slurm", true), JOB_CHOICE_OWN);
	assert_int_equal(jobs_choose(&cg, &by_env, false, "k8s", false), JOB_CHOICE_OWN);
	assert_int_equal(jobs_choose(&env, NULL, false, "k8s", true), JOB_CHOICE_OWN);
	assert_int_equal(jobs_choose(&env, &by_cgroup, false, NULL, false), JOB_CHOICE_OWN);

	/* a new process with nothing of its own: its parent's job */
	assert_int_equal(jobs_choose(&none, NULL, false, "slurm", false), JOB_CHOICE_PARENT);
	assert_int_equal(jobs_choose(&none, NULL, false, "run", false), JOB_CHOICE_PARENT);
	assert_int_equal(jobs_choose(&none, NULL, false, "systemd", false), JOB_CHOICE_PARENT);
	/* ... in its parent's cgroup: the unit is the parent's, so is the job */
	assert_int_equal(jobs_choose(&unit, NULL, false, "slurm", true), JOB_CHOICE_PARENT);
	/* ... a unit of its own (another cgroup): that unit */
	assert_int_equal(jobs_choose(&unit, NULL, false, "slurm", false), JOB_CHOICE_OWN);
	/* a login session is no job to inherit: a new session (setsid) is its own */
	assert_int_equal(jobs_choose(&none, NULL, false, "session", true), JOB_CHOICE_OWN);
	assert_int_equal(jobs_choose(&none, NULL, false, NULL, false), JOB_CHOICE_OWN);

	/* an exec or a rename with nothing in the environment: it keeps its job */
	assert_int_equal(jobs_choose(&none, &by_env, false, "session", false), JOB_CHOICE_KEEP);
	assert_int_equal(jobs_choose(&unit, &session, false, NULL, false), JOB_CHOICE_KEEP);
	assert_int_equal(jobs_choose(&none, &by_cgroup, false, NULL, false), JOB_CHOICE_KEEP);
	/* a changed cgroup decides afresh when the job is a cgroup's or a session */
	assert_int_equal(jobs_choose(&unit, &by_cgroup, true, "slurm", false), JOB_CHOICE_OWN);
	assert_int_equal(jobs_choose(&none, &by_cgroup, true, "slurm", false), JOB_CHOICE_PARENT);
	assert_int_equal(jobs_choose(&none, &by_unit, true, "session", false), JOB_CHOICE_OWN);
	assert_int_equal(jobs_choose(&unit, &session, true, "session", false), JOB_CHOICE_OWN);
	/* ... but cannot take a process out of a job that has no cgroup */
	assert_int_equal(jobs_choose(&unit, &by_env, true, "session", false), JOB_CHOICE_KEEP);
	assert_int_equal(jobs_choose(&none, &by_env, true, NULL, false), JOB_CHOICE_KEEP);
}

static void test_key(void **state)
{
	char key[JOB_KEY_MAX];

	(void)state;
	jobs_format_key(key, sizeof(key), "slurm", "5", 1732270000123);
	assert_string_equal(key, "slurm:5:1732270000123");
}

/*
 * A pod's owner is stored as NAMESPACE/NAME once both are known, in either
 * order: ListPodSandbox's hint may come before the pod's bundle names its
 * namespace (a loaded node), and the owner must not be lost then.
 */
static void test_k8s_owner_either_order(void **state)
{
	static struct job_entry j;

	(void)state;
	/* the hint first: nothing to store until the namespace comes */
	memset(&j, 0, sizeof(j));
	snprintf(j.k8s.owner_label, sizeof(j.k8s.owner_label), "batch.kubernetes.io/job-name");
	snprintf(j.k8s.owner_name, sizeof(j.k8s.owner_name), "bar-job");
	jobs_k8s_owner_settle(&j);
	assert_string_equal(j.rec.k8s_owner, "");
	assert_false(j.rec_dirty);
	snprintf(j.k8s.namespace_, sizeof(j.k8s.namespace_), "bar-ns");
	jobs_k8s_owner_settle(&j);
	assert_string_equal(j.rec.k8s_owner, "bar-ns/bar-job");
	assert_string_equal(j.rec.k8s_owner_label, "batch.kubernetes.io/job-name");
	assert_true(j.rec_dirty);
	/* the namespace first */
	memset(&j, 0, sizeof(j));
	snprintf(j.k8s.namespace_, sizeof(j.k8s.namespace_), "ns2");
	jobs_k8s_owner_settle(&j);
	assert_string_equal(j.rec.k8s_owner, "");
	snprintf(j.k8s.owner_label, sizeof(j.k8s.owner_label), "app");
	snprintf(j.k8s.owner_name, sizeof(j.k8s.owner_name), "web");
	jobs_k8s_owner_settle(&j);
	assert_string_equal(j.rec.k8s_owner, "ns2/web");
	/* listed without an owner: none */
	memset(&j, 0, sizeof(j));
	snprintf(j.k8s.namespace_, sizeof(j.k8s.namespace_), "ns3");
	j.k8s.owner_asked = true;
	jobs_k8s_owner_settle(&j);
	assert_string_equal(j.rec.k8s_owner, "");
	assert_false(j.rec_dirty);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slurm_by_cgroup),
	    cmocka_unit_test(test_slurm_by_sluid),
	    cmocka_unit_test(test_slurm_by_environment),
	    cmocka_unit_test(test_kubernetes),
	    cmocka_unit_test(test_run_systemd_and_session),
	    cmocka_unit_test(test_keep_env),
	    cmocka_unit_test(test_choose),
	    cmocka_unit_test(test_key),
	    cmocka_unit_test(test_k8s_owner_either_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
