/*
 * test_attrib.c - the attribution parsers: every cgroup path layout of
 * reference/cgroups.md (Slurm v1/v2 and Debian's variants, Kubernetes with
 * both drivers, every QoS and runtime, nested prefixes), hybrid files,
 * systemd units, plain processes and garbage; Slurm's environment; the
 * cpuset, cpu.max and memory.max limit files.
 *
 * Every input is copied into an exact-size buffer with no NUL after it, so
 * a parser that reads past len trips ASan in the sanitized build.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attrib/attrib.h"
#include "fixture.h"
#include "sample/proc.h"
#include "sample/cgroup.h"

#define CID	  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID_DASH  "1234abcd-5678-90ab-cdef-0123456789ab"
#define UID_UNDER "1234abcd_5678_90ab_cdef_0123456789ab"

static char *exact_copy(const char *text, size_t len)
{
	char *buf = malloc(len ? len : 1);

	assert_non_null(buf);
	memcpy(buf, text, len);
	return buf;
}

static int parse_cgroup_len(const char *text, size_t len, struct job_identity *id)
{
	char *buf = exact_copy(text, len);
	int ret = attrib_parse_cgroup(buf, len, id);

	free(buf);
	return ret;
}

static int parse_cgroup(const char *text, struct job_identity *id)
{
	return parse_cgroup_len(text, strlen(text), id);
}

static int parse_environ(const char *raw, size_t len, struct slurm_env *env)
{
	char *buf = exact_copy(raw, len);
	int ret = attrib_parse_environ(buf, len, env);

	free(buf);
	return ret;
}

static int parse_cpuset(const char *text, int *n)
{
	char *buf = exact_copy(text, strlen(text));
	int ret = cgroup_parse_cpuset(buf, strlen(text), n);

	free(buf);
	return ret;
}

static int parse_cpu_max(const char *text, double *cores)
{
	char *buf = exact_copy(text, strlen(text));
	int ret = cgroup_parse_cpu_max(buf, strlen(text), cores);

	free(buf);
	return ret;
}

static int parse_memory_max(const char *text, uint64_t *bytes)
{
	char *buf = exact_copy(text, strlen(text));
	int ret = cgroup_parse_u64(buf, strlen(text), bytes);

	free(buf);
	return ret;
}

/* A one-line v2 file "0::<path>\n" must give the expected identity. */
static void expect_v2(const char *path, enum job_scheduler sched, const char *job_id,
		      const char *step, int64_t uid)
{
	char text[1024];
	struct job_identity id;

	snprintf(text, sizeof(text), "0::%s\n", path);
	assert_int_equal(parse_cgroup(text, &id), 0);
	assert_int_equal(id.scheduler, sched);
	assert_string_equal(id.job_id, job_id);
	assert_string_equal(id.step, step);
	assert_int_equal(id.uid, uid);
	assert_string_equal(id.cgroup_path, path);
}

static void expect_k8s(const char *path, const char *qos, const char *container)
{
	struct job_identity id;
	char text[1024];

	/* the same relative path in v2 and in a v1 memory hierarchy */
	snprintf(text, sizeof(text), "0::%s\n", path);
	assert_int_equal(parse_cgroup(text, &id), 0);
	assert_int_equal(id.scheduler, JOB_K8S);
	assert_string_equal(id.job_id, UID_DASH);
	assert_string_equal(id.qos, qos);
	assert_string_equal(id.container_id, container);
	assert_string_equal(id.cgroup_path, path);

	snprintf(text, sizeof(text), "5:devices:/\n4:memory:%s\n1:name=systemd:/\n", path);
	assert_int_equal(parse_cgroup(text, &id), 0);
	assert_int_equal(id.scheduler, JOB_K8S);
	assert_string_equal(id.job_id, UID_DASH);
	assert_string_equal(id.qos, qos);
	assert_string_equal(id.container_id, container);
}

/* ---- Slurm ---- */

static void test_slurm_v1(void **state)
{
	static const char text[] = "12:pids:/system.slice/slurmd.service\n"
				   "11:freezer:/slurm/uid_1000/job_4242/step_batch\n"
				   "10:cpuset:/slurm/uid_1000/job_4242/step_batch\n"
				   "9:memory:/slurm/uid_1000/job_4242/step_batch/task_0\n"
				   "8:cpu,cpuacct:/slurm/uid_1000/job_4242/step_batch/task_0\n"
				   "1:name=systemd:/system.slice/slurmd.service\n"
				   "0::/system.slice/slurmd.service\n";
	struct job_identity id;

	(void)state;
	assert_int_equal(parse_cgroup(text, &id), 0);
	assert_int_equal(id.scheduler, JOB_SLURM);
	assert_string_equal(id.job_id, "4242");
	assert_string_equal(id.step, "batch");
	assert_int_equal(id.uid, 1000);
	/* the v2 line names no job; memory is the preferred v1 line */
	assert_string_equal(id.cgroup_path, "/slurm/uid_1000/job_4242/step_batch/task_0");
	assert_string_equal(id.qos, "");
	assert_string_equal(id.container_id, "");
}

static void test_slurm_v1_debian(void **state)
{
	/* seen on a real Debian machine: the v1 root is /slurm_<nodename> */
	static const char text[] = "13:misc:/\n"
				   "12:memory:/slurm_vm/uid_0/job_5/step_0/task_0\n"
				   "11:freezer:/slurm_vm/uid_0/job_5/step_0\n"
				   "4:cpu,cpuacct:/slurm_vm/uid_0/job_5/step_0/task_0\n"
				   "1:name=systemd:/system.slice/slurmd.service\n"
				   "0::/system.slice/slurmd.service\n";
	struct job_identity id;

	(void)state;
	assert_int_equal(parse_cgroup(text, &id), 0);
	assert_int_equal(id.scheduler, JOB_SLURM);
	assert_string_equal(id.job_id, "5");
	assert_string_equal(id.step, "0");
	assert_int_equal(id.uid, 0);
	assert_string_equal(id.cgroup_path, "/slurm_vm/uid_0/job_5/step_0/task_0");
}

static void test_slurm_v1_steps(void **state)
{
	struct job_identity id;

	(void)state;
	assert_int_equal(parse_cgroup("4:memory:/slurm/uid_7/job_9/step_extern/task_0\n", &id), 0);
	assert_int_equal(id.scheduler, JOB_SLURM);
	assert_string_equal(id.step, "extern");
	assert_int_equal(id.uid, 7);
	/* freezer and cpuset stop at the step */
	assert_int_equal(parse_cgroup("3:freezer:/slurm/uid_7/job_9/step_interactive\n", &id), 0);
	assert_string_equal(id.step, "interactive");
	/* the job level alone (slurmstepd between steps) */
	assert_int_equal(parse_cgroup("3:freezer:/slurm/uid_7/job_9\n", &id), 0);
	assert_int_equal(id.scheduler, JOB_SLURM);
	assert_string_equal(id.job_id, "9");
	assert_string_equal(id.step, "");
	/* the uid level alone is no job */
	assert_int_equal(parse_cgroup("3:freezer:/slurm/uid_7\n", &id), 0);
	assert_int_equal(id.scheduler, JOB_NONE);
	assert_string_equal(id.cgroup_path, "/slurm/uid_7");
	/* a bad job id is no job */
	assert_int_equal(parse_cgroup("3:memory:/slurm/uid_7/job_x1/step_0\n", &id), 0);
	assert_int_equal(id.scheduler, JOB_NONE);
	/* a step with odd characters: the job still counts */
	assert_int_equal(parse_cgroup("3:memory:/slurm/uid_7/job_8/step_B!\n", &id), 0);
	assert_int_equal(id.scheduler, JOB_SLURM);
	assert_string_equal(id.step, "");
}

static void test_slurm_v2(void **state)
{
	(void)state;
	expect_v2("/system.slice/slurmstepd.scope/job_123/step_0/user/task_0", JOB_SLURM, "123",
		  "0", -1);
	expect_v2("/system.slice/slurmstepd.scope/job_123/step_batch/user/task_0", JOB_SLURM, "123",
		  "batch", -1);
	expect_v2("/system.slice/slurmstepd.scope/job_123/step_extern/user/task_special", JOB_SLURM,
		  "123", "extern", -1);
	/* the stepd itself */
	expect_v2("/system.slice/slurmstepd.scope/job_123/step_0/slurm", JOB_SLURM, "123", "0", -1);
	/* Debian's MULTIPLE_SLURMD build: <nodename>_slurmstepd.scope */
	expect_v2("/system.slice/vm_slurmstepd.scope/job_77/step_2/user/task_1", JOB_SLURM, "77",
		  "2", -1);
	expect_v2("/system.slice/node-01_slurmstepd.scope/job_77/step_extern/user/task_special",
		  JOB_SLURM, "77", "extern", -1);
	/* the waiting area for new stepds is no job, but it is a unit */
	expect_v2("/system.slice/slurmstepd.scope/system", JOB_SYSTEMD, "slurmstepd.scope", "", -1);
	/* slurmd itself */
	expect_v2("/system.slice/slurmd.service", JOB_SYSTEMD, "slurmd.service", "", -1);
}

/* Slurm 26.05: the job's cgroup is named by its SLUID, not job_<id> */
static void test_slurm_v2_sluid(void **state)
{
	static const char *const not_sluids[] = {
	    "sEKNKTV3WPV50",   /* 12 after the 's' */
	    "sEKNKTV3WPV5000", /* 14 */
	    "SEKNKTV3WPV500",  /* 'S' */
	    "sekNKTV3WPV500",  /* lower case */
	    "sEKNKTV3-PV500",
	};
	struct job_identity id;
	char path[256];
	char *text;
	size_t len;

	(void)state;
	text = fixture_load(FIXTURES_DIR "/proc/cgroup_slurm_sluid", &len);
	assert_int_equal(attrib_parse_cgroup(text, len, &id), 0);
	free(text);
	assert_int_equal(id.scheduler, JOB_SLURM);
	/* the number is not in the path: the SLUID stands for it */
	assert_string_equal(id.job_id, "sEKNKTV3WPV500");
	assert_string_equal(id.sluid, "sEKNKTV3WPV500");
	assert_string_equal(id.step, "0");
	assert_int_equal(id.uid, -1);
	assert_string_equal(id.cgroup_path,
			    "/system.slice/slurmstepd.scope/sEKNKTV3WPV500/step_0/user/task_0");

	expect_v2("/system.slice/slurmstepd.scope/sEKNKTV3WPV500/step_batch/user/task_0", JOB_SLURM,
		  "sEKNKTV3WPV500", "batch", -1);
	expect_v2("/system.slice/slurmstepd.scope/s0123456789ABC/step_extern/user/task_special",
		  JOB_SLURM, "s0123456789ABC", "extern", -1);
	/* the stepd itself, and the job level */
	expect_v2("/system.slice/slurmstepd.scope/sEKNKTV3WPV500/step_0/slurm", JOB_SLURM,
		  "sEKNKTV3WPV500", "0", -1);
	expect_v2("/system.slice/slurmstepd.scope/sEKNKTV3WPV500", JOB_SLURM, "sEKNKTV3WPV500", "",
		  -1);
	/* Debian's MULTIPLE_SLURMD build, and a v1 layout named the same way */
	expect_v2("/system.slice/vm_slurmstepd.scope/sEKNKTV3WPV500/step_2/user/task_1", JOB_SLURM,
		  "sEKNKTV3WPV500", "2", -1);
	assert_int_equal(
	    parse_cgroup("4:memory:/slurm/uid_1000/sEKNKTV3WPV500/step_0/task_0\n", &id), 0);
	assert_int_equal(id.scheduler, JOB_SLURM);
	assert_string_equal(id.sluid, "sEKNKTV3WPV500");
	assert_int_equal(id.uid, 1000);

	/* job_<id> keeps its number and has no SLUID */
	assert_int_equal(
	    parse_cgroup("0::/system.slice/slurmstepd.scope/job_123/step_0/user/task_0\n", &id), 0);
	assert_string_equal(id.job_id, "123");
	assert_string_equal(id.sluid, "");

	/* a name that is not a SLUID is no job: the scope is a unit */
	for (size_t i = 0; i < sizeof(not_sluids) / sizeof(not_sluids[0]); i++) {
		snprintf(path, sizeof(path), "/system.slice/slurmstepd.scope/%s/step_0/user/task_0",
			 not_sluids[i]);
		expect_v2(path, JOB_SYSTEMD, "slurmstepd.scope", "", -1);
	}
}

static int parse_title(const char *text, struct stepd_title *t)
{
	char *buf = exact_copy(text, strlen(text));
	int ret = attrib_parse_stepd_title(buf, strlen(text), t);

	free(buf);
	return ret;
}

static void test_stepd_title(void **state)
{
	static const char *const not_titles[] = {
	    "slurmstepd: [4711]",     "slurmstepd: [4711.]",	     "slurmstepd: [.0]",
	    "slurmstepd: [x4711.0]",  "slurmstepd: [4711.0] x",	     "slurmstepd: [4711.0",
	    "slurmstepd: [4711.TBD]", "slurmstepd:[4711.0]",	     "/usr/sbin/slurmstepd",
	    "slurmstepd: [4711.0]]",  "slurmstepd: [4711.0.1]",	     "",
	    "slurmstepd: [4711.0+1]", "python slurmstepd: [4711.0]",
	};
	struct stepd_title t;
	char line[PROC_CMDLINE_MAX];
	char *raw;
	size_t len;

	(void)state;
	/* /proc/PID/cmdline of a stepd: its title, then the rest of argv's space as NULs */
	raw = fixture_load(FIXTURES_DIR "/proc/cmdline_slurmstepd", &len);
	proc_format_cmdline(raw, len, line, sizeof(line));
	free(raw);
	assert_int_equal(parse_title(line, &t), 0);
	assert_string_equal(t.job_id, "4711");
	assert_string_equal(t.step, "0");

	assert_int_equal(parse_title("slurmstepd: [4711.batch]", &t), 0);
	assert_string_equal(t.job_id, "4711");
	assert_string_equal(t.step, "batch");
	assert_int_equal(parse_title("slurmstepd: [12.extern]   ", &t), 0);
	assert_string_equal(t.job_id, "12");
	assert_string_equal(t.step, "extern");
	assert_int_equal(parse_title("slurmstepd: [99.interactive]", &t), 0);
	assert_string_equal(t.step, "interactive");

	memset(&t, 0x5a, sizeof(t));
	for (size_t i = 0; i < sizeof(not_titles) / sizeof(not_titles[0]); i++) {
		struct stepd_title before = t;

		assert_int_equal(parse_title(not_titles[i], &t), -EINVAL);
		assert_memory_equal(&t, &before, sizeof(t)); /* untouched */
	}
	/* a job id too long for its field */
	assert_int_equal(
	    parse_title("slurmstepd: [1234567890123456789012345678901234567890123456789"
			"01234567890123.0]",
			&t),
	    -EINVAL);
}

/* ---- Kubernetes ---- */

static void test_k8s_systemd_driver(void **state)
{
	(void)state;
	expect_k8s("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_UNDER
		   ".slice/cri-containerd-" CID ".scope",
		   "burstable", CID);
	expect_k8s("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_UNDER
		   ".slice/cri-containerd-" CID ".scope",
		   "besteffort", CID);
	expect_k8s("/kubepods.slice/kubepods-pod" UID_UNDER ".slice/cri-containerd-" CID ".scope",
		   "guaranteed", CID);
	/* CRI-O and Docker leaves */
	expect_k8s("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_UNDER
		   ".slice/crio-" CID ".scope",
		   "burstable", CID);
	expect_k8s("/kubepods.slice/kubepods-pod" UID_UNDER ".slice/crio-" CID ".scope/container",
		   "guaranteed", CID);
	expect_k8s("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_UNDER
		   ".slice/docker-" CID ".scope",
		   "besteffort", CID);
	/* conmon is in the pod but in no container */
	expect_k8s("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_UNDER
		   ".slice/crio-conmon-" CID ".scope",
		   "burstable", "");
	/* a process in the pod slice itself */
	expect_k8s("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_UNDER
		   ".slice",
		   "burstable", "");
}

static void test_k8s_cgroupfs_driver(void **state)
{
	(void)state;
	expect_k8s("/kubepods/burstable/pod" UID_DASH "/" CID, "burstable", CID);
	expect_k8s("/kubepods/besteffort/pod" UID_DASH "/" CID, "besteffort", CID);
	expect_k8s("/kubepods/pod" UID_DASH "/" CID, "guaranteed", CID);
	expect_k8s("/kubepods/burstable/pod" UID_DASH "/crio-" CID, "burstable", CID);
	expect_k8s("/kubepods/pod" UID_DASH, "guaranteed", "");
	/* not a container id: wrong length, upper case */
	expect_k8s("/kubepods/pod" UID_DASH "/0123abc", "guaranteed", "");
	expect_k8s("/kubepods/pod" UID_DASH "/" CID "A", "guaranteed", "");
}

static void test_k8s_prefixes(void **state)
{
	(void)state;
	/* kind and other nested setups */
	expect_k8s("/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
		   "kubelet-kubepods-burstable-pod" UID_UNDER ".slice/cri-containerd-" CID ".scope",
		   "burstable", CID);
	expect_k8s("/system.slice/containerd.service/kubepods-burstable-pod" UID_UNDER
		   ".slice:cri-containerd:" CID,
		   "burstable", CID);
	expect_k8s("/system.slice/containerd.service/kubepods-pod" UID_UNDER
		   ".slice:cri-containerd:"
		   "nothex",
		   "guaranteed", "");
	expect_k8s("/system.slice/containerd.service/kubepods/besteffort/pod" UID_DASH "/" CID,
		   "besteffort", CID);
	expect_k8s("/docker/" CID "/kubepods/burstable/pod" UID_DASH "/" CID, "burstable", CID);
}

static void test_k8s_not_pods(void **state)
{
	struct job_identity id;

	(void)state;
	/* the QoS slice with no pod */
	assert_int_equal(parse_cgroup("0::/kubepods.slice/kubepods-burstable.slice\n", &id), 0);
	assert_int_equal(id.scheduler, JOB_NONE);
	/* a UID one digit short */
	assert_int_equal(parse_cgroup("0::/kubepods/pod1234abcd-5678-90ab-cdef-0123456789a\n", &id),
			 0);
	assert_int_equal(id.scheduler, JOB_NONE);
	/* upper-case hex is not what the kubelet writes */
	assert_int_equal(
	    parse_cgroup("0::/kubepods/pod1234ABCD-5678-90ab-cdef-0123456789ab\n", &id), 0);
	assert_int_equal(id.scheduler, JOB_NONE);
	/* "pod" inside a word */
	assert_int_equal(parse_cgroup("0::/kubepods/ipod" UID_DASH "\n", &id), 0);
	assert_int_equal(id.scheduler, JOB_NONE);
	/* plain docker outside kubernetes */
	assert_int_equal(parse_cgroup("0::/docker/" CID "\n", &id), 0);
	assert_int_equal(id.scheduler, JOB_NONE);
}

/* ---- systemd, plain processes, hybrid ---- */

static void test_systemd_units(void **state)
{
	(void)state;
	expect_v2("/system.slice/nginx.service", JOB_SYSTEMD, "nginx.service", "", -1);
	expect_v2("/system.slice/system-getty.slice/getty@tty1.service", JOB_SYSTEMD,
		  "getty@tty1.service", "", -1);
	expect_v2("/user.slice/user-1000.slice/session-3.scope", JOB_SYSTEMD, "session-3.scope", "",
		  1000);
	expect_v2("/user.slice/user-1000.slice/user@1000.service/app.slice/"
		  "app-gnome-firefox-4242.scope",
		  JOB_SYSTEMD, "app-gnome-firefox-4242.scope", "", 1000);
	expect_v2("/user.slice/user-1000.slice/user@1000.service/init.scope", JOB_SYSTEMD,
		  "init.scope", "", 1000);
	expect_v2("/init.scope", JOB_SYSTEMD, "init.scope", "", -1);
	/* the unit is the innermost one, even with a child cgroup under it */
	expect_v2("/system.slice/postgresql.service/workers", JOB_SYSTEMD, "postgresql.service", "",
		  -1);
	/* ".service" alone is not a unit name */
	expect_v2("/system.slice/.service", JOB_NONE, "", "", -1);
}

static void test_systemd_v1(void **state)
{
	static const char text[] = "7:memory:/\n"
				   "6:cpu,cpuacct:/\n"
				   "1:name=systemd:/user.slice/user-1000.slice/session-3.scope\n";
	struct job_identity id;

	(void)state;
	assert_int_equal(parse_cgroup(text, &id), 0);
	assert_int_equal(id.scheduler, JOB_SYSTEMD);
	assert_string_equal(id.job_id, "session-3.scope");
	assert_int_equal(id.uid, 1000);
	assert_string_equal(id.cgroup_path, "/user.slice/user-1000.slice/session-3.scope");
}

static void test_unit_too_long(void **state)
{
	struct job_identity id;

	(void)state;
	/* docker-<64 hex>.scope does not fit job_id: not cut, not used */
	assert_int_equal(parse_cgroup("0::/system.slice/docker-" CID ".scope\n", &id), 0);
	assert_int_equal(id.scheduler, JOB_NONE);
	assert_string_equal(id.cgroup_path, "/system.slice/docker-" CID ".scope");
}

static void test_plain(void **state)
{
	struct job_identity id;

	(void)state;
	expect_v2("/", JOB_NONE, "", "", -1);
	expect_v2("/user.slice", JOB_NONE, "", "", -1);
	expect_v2("/user.slice/user-1000.slice", JOB_NONE, "", "", -1);
	/* v1 all at the root: the path of the memory line */
	assert_int_equal(parse_cgroup("3:cpuset:/\n2:memory:/\n1:name=systemd:/\n", &id), 0);
	assert_int_equal(id.scheduler, JOB_NONE);
	assert_int_equal(id.uid, -1);
	assert_string_equal(id.cgroup_path, "/");
	assert_string_equal(id.qos, "");
}

static void test_hybrid(void **state)
{
	/* v2 names the job: it wins over the v1 lines */
	static const char both[] =
	    "12:memory:/slurm/uid_1/job_1/step_0/task_0\n"
	    "1:name=systemd:/system.slice/slurmstepd.scope\n"
	    "0::/system.slice/slurmstepd.scope/job_2/step_batch/user/task_0\n";
	/* v1 names the job, v2 only the session */
	static const char v1job[] = "9:cpu,cpuacct:/kubepods/burstable/pod" UID_DASH "/" CID "\n"
				    "1:name=systemd:/user.slice/user-0.slice/session-1.scope\n"
				    "0::/user.slice/user-0.slice/session-1.scope\n";
	/* no job: the v2 unit */
	static const char unit[] = "4:memory:/system.slice\n"
				   "1:name=systemd:/system.slice/cron.service\n"
				   "0::/system.slice/ssh.service\n";
	struct job_identity id;

	(void)state;
	assert_int_equal(parse_cgroup(both, &id), 0);
	assert_int_equal(id.scheduler, JOB_SLURM);
	assert_string_equal(id.job_id, "2");
	assert_string_equal(id.step, "batch");
	assert_int_equal(id.uid, -1);

	assert_int_equal(parse_cgroup(v1job, &id), 0);
	assert_int_equal(id.scheduler, JOB_K8S);
	assert_string_equal(id.job_id, UID_DASH);
	assert_string_equal(id.container_id, CID);

	assert_int_equal(parse_cgroup(unit, &id), 0);
	assert_int_equal(id.scheduler, JOB_SYSTEMD);
	assert_string_equal(id.job_id, "ssh.service");
}

static void test_deleted_and_odd_lines(void **state)
{
	struct job_identity id;

	(void)state;
	/* a removed v2 cgroup */
	assert_int_equal(
	    parse_cgroup("0::/system.slice/slurmstepd.scope/job_3/step_0/user/task_0 (deleted)\n",
			 &id),
	    0);
	assert_int_equal(id.scheduler, JOB_SLURM);
	assert_string_equal(id.cgroup_path,
			    "/system.slice/slurmstepd.scope/job_3/step_0/user/task_0");
	/* no final newline, blank lines, double slashes */
	assert_int_equal(parse_cgroup("\n4:memory://slurm//uid_2/job_6/step_1", &id), 0);
	assert_int_equal(id.scheduler, JOB_SLURM);
	assert_string_equal(id.job_id, "6");
	assert_string_equal(id.step, "1");
	assert_int_equal(id.uid, 2);
	/* a path with ':' in it */
	assert_int_equal(parse_cgroup("0::/a:b/nginx.service\n", &id), 0);
	assert_int_equal(id.scheduler, JOB_SYSTEMD);
	assert_string_equal(id.cgroup_path, "/a:b/nginx.service");
}

static void test_cgroup_garbage(void **state)
{
	static const char *const bad[] = {
	    "",
	    "\n\n",
	    "hello world\n",
	    "0:/\n",
	    "0::\n",
	    "x::/\n",
	    ":memory:/\n",
	    "4:memory:relative/path\n",
	    "4:memory:/slurm\nnot a line\n",
	    " 0::/\n",
	    "99999999999999999999999:memory:/\n",
	    "12:mem",
	    "12",
	};
	struct job_identity id, before;
	size_t i;

	(void)state;
	memset(&before, 0x5a, sizeof(before));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		id = before;
		assert_int_equal(parse_cgroup(bad[i], &id), -EINVAL);
		assert_memory_equal(&id, &before, sizeof(id));
	}
	/* a NUL inside */
	assert_int_equal(parse_cgroup_len("0::/\0x\n", 7, &id), -EINVAL);
}

static void test_cgroup_truncated(void **state)
{
	static const char full[] = "12:memory:/slurm_vm/uid_0/job_5/step_0/task_0\n"
				   "0::/kubepods/burstable/pod" UID_DASH "/" CID "\n";
	struct job_identity id;
	size_t len;

	(void)state;
	/* every prefix: an error or an answer, never a crash or an over-read */
	for (len = 0; len <= strlen(full); len++) {
		int ret = parse_cgroup_len(full, len, &id);

		assert_true(ret == 0 || ret == -EINVAL);
		if (ret == 0)
			assert_true(strlen(id.cgroup_path) < sizeof(id.cgroup_path));
	}
	/* cut inside the job id: the shorter id is what the text says */
	assert_int_equal(parse_cgroup_len(full, strlen("12:memory:/slurm_vm/uid_0/job_"), &id), 0);
	assert_int_equal(id.scheduler, JOB_NONE);
}

static void test_cgroup_long_path(void **state)
{
	char text[2048];
	struct job_identity id;
	size_t n;

	(void)state;
	/* a path that does not fit cgroup_path is not used */
	n = (size_t)snprintf(text, sizeof(text), "4:memory:/slurm/uid_1/job_1/step_0/");
	memset(text + n, 'a', 600);
	strcpy(text + n + 600, "\n0::/system.slice/x.service\n");
	assert_int_equal(parse_cgroup(text, &id), 0);
	assert_int_equal(id.scheduler, JOB_SYSTEMD);
	assert_string_equal(id.job_id, "x.service");
	/* all too long: none, no path */
	memset(text, 'a', sizeof(text));
	memcpy(text, "0::/", 4);
	text[1000] = '\n';
	assert_int_equal(parse_cgroup_len(text, 1001, &id), 0);
	assert_int_equal(id.scheduler, JOB_NONE);
	assert_string_equal(id.cgroup_path, "");
	/* many short components */
	for (n = 0; n < 500; n += 2)
		memcpy(text + 4 + n, "a/", 2);
	assert_int_equal(parse_cgroup_len(text, 504, &id), 0);
	assert_int_equal(id.scheduler, JOB_NONE);
	assert_int_equal(strlen(id.cgroup_path), 501);
}

/* ---- environ ---- */

#define ENV(s) s, sizeof(s) - 1

static void test_environ_full(void **state)
{
	static const char raw[] = "PATH=/usr/bin\0"
				  "SLURM_JOB_ID=4242\0"
				  "SLURM_STEP_ID=0\0"
				  "SLURM_CPUS_ON_NODE=8\0"
				  "SLURM_MEM_PER_NODE=4096\0"
				  "SLURM_MEM_PER_CPU=512\0"
				  "SLURM_JOB_GPUS=0,1\0"
				  "CUDA_VISIBLE_DEVICES=0,1\0"
				  "JOBSCOPE_RUN_ID=r-20261122-abc\0"
				  "SLURM_JOB_NAME=train resnet\0";
	struct slurm_env env;

	(void)state;
	assert_int_equal(parse_environ(ENV(raw), &env), 0);
	assert_int_equal(env.valid, SLURM_ENV_JOB_ID | SLURM_ENV_STEP_ID | SLURM_ENV_CPUS_ON_NODE |
					SLURM_ENV_MEM_PER_NODE | SLURM_ENV_MEM_PER_CPU |
					SLURM_ENV_JOB_GPUS | SLURM_ENV_CUDA_VISIBLE |
					SLURM_ENV_RUN_ID | SLURM_ENV_JOB_NAME);
	assert_string_equal(env.job_name, "train resnet");
	assert_string_equal(env.job_id, "4242");
	assert_string_equal(env.step_id, "0");
	assert_int_equal(env.cpus_on_node, 8);
	assert_int_equal(env.mem_per_node_bytes, 4096ull << 20);
	assert_int_equal(env.mem_per_cpu_bytes, 512ull << 20);
	assert_string_equal(env.job_gpus, "0,1");
	assert_int_equal(env.job_gpus_count, 2);
	assert_string_equal(env.cuda_visible, "0,1");
	assert_int_equal(env.cuda_visible_count, 2);
	assert_string_equal(env.run_id, "r-20261122-abc");
}

static void test_environ_each_missing(void **state)
{
	static const char *const entries[] = {
	    "SLURM_JOB_ID=1",	      "SLURM_STEP_ID=batch", "SLURM_CPUS_ON_NODE=2",
	    "SLURM_MEM_PER_NODE=3",   "SLURM_MEM_PER_CPU=4", "SLURM_JOB_GPUS=3",
	    "CUDA_VISIBLE_DEVICES=0", "JOBSCOPE_RUN_ID=x",
	};
	static const uint32_t bits[] = {
	    SLURM_ENV_JOB_ID,	    SLURM_ENV_STEP_ID,	   SLURM_ENV_CPUS_ON_NODE,
	    SLURM_ENV_MEM_PER_NODE, SLURM_ENV_MEM_PER_CPU, SLURM_ENV_JOB_GPUS,
	    SLURM_ENV_CUDA_VISIBLE, SLURM_ENV_RUN_ID,
	};
	uint32_t all = 0;
	size_t skip, i;

	(void)state;
	for (i = 0; i < 8; i++)
		all |= bits[i];
	for (skip = 0; skip <= 8; skip++) {
		char raw[512];
		size_t len = 0;
		struct slurm_env env;

		for (i = 0; i < 8; i++) {
			if (i == skip)
				continue;
			memcpy(raw + len, entries[i], strlen(entries[i]) + 1);
			len += strlen(entries[i]) + 1;
		}
		assert_int_equal(parse_environ(raw, len, &env), 0);
		assert_int_equal(env.valid, skip < 8 ? all & ~bits[skip] : all);
		/* missing is not zero, but its field is not garbage either */
		if (skip == 2)
			assert_int_equal(env.cpus_on_node, 0);
	}
}

static void test_environ_empty_and_unterminated(void **state)
{
	struct slurm_env env;

	(void)state;
	/* a kernel thread */
	assert_int_equal(parse_environ("", 0, &env), 0);
	assert_int_equal(env.valid, 0);
	/* no final NUL, entries without '=' and empty ones */
	assert_int_equal(parse_environ(ENV("junk\0\0=5\0SLURM_JOB_ID=77"), &env), 0);
	assert_int_equal(env.valid, SLURM_ENV_JOB_ID);
	assert_string_equal(env.job_id, "77");
	/* the key must match exactly */
	assert_int_equal(
	    parse_environ(ENV("XSLURM_JOB_ID=1\0SLURM_JOB_ID_X=2\0slurm_job_id=3"), &env), 0);
	assert_int_equal(env.valid, 0);
}

static void test_environ_odd_values(void **state)
{
	struct slurm_env env;

	(void)state;
	assert_int_equal(
	    parse_environ(ENV("SLURM_MEM_PER_NODE=abc\0SLURM_MEM_PER_CPU=100\0"), &env), 0);
	assert_int_equal(env.valid, SLURM_ENV_MEM_PER_CPU);
	assert_int_equal(env.mem_per_cpu_bytes, 100ull << 20);

	assert_int_equal(parse_environ(ENV("SLURM_MEM_PER_NODE=\0SLURM_CPUS_ON_NODE= 4\0"
					   "SLURM_JOB_ID=-1\0SLURM_STEP_ID=\0JOBSCOPE_RUN_ID=\0"),
				       &env),
			 0);
	assert_int_equal(env.valid, 0);

	/* overflow: 2^44 MB is more bytes than 64 bits hold */
	assert_int_equal(parse_environ(ENV("SLURM_MEM_PER_NODE=17592186044416\0"
					   "SLURM_CPUS_ON_NODE=4294967296\0"
					   "SLURM_JOB_ID=99999999999999999999999\0"),
				       &env),
			 0);
	assert_int_equal(env.valid, 0);
	assert_int_equal(parse_environ(ENV("SLURM_MEM_PER_NODE=17592186044415\0"), &env), 0);
	assert_int_equal(env.valid, SLURM_ENV_MEM_PER_NODE);
	assert_int_equal(env.mem_per_node_bytes, 17592186044415ull << 20);

	/* zero memory is a value, not "missing" */
	assert_int_equal(parse_environ(ENV("SLURM_MEM_PER_NODE=0\0"), &env), 0);
	assert_int_equal(env.valid, SLURM_ENV_MEM_PER_NODE);
	assert_int_equal(env.mem_per_node_bytes, 0);

	/* the first occurrence wins, even when it is bad */
	assert_int_equal(parse_environ(ENV("SLURM_JOB_ID=1\0SLURM_JOB_ID=2\0"
					   "SLURM_CPUS_ON_NODE=x\0SLURM_CPUS_ON_NODE=4\0"),
				       &env),
			 0);
	assert_int_equal(env.valid, SLURM_ENV_JOB_ID);
	assert_string_equal(env.job_id, "1");

	/* a run id with a blank or a control character */
	assert_int_equal(parse_environ(ENV("JOBSCOPE_RUN_ID=a b\0"), &env), 0);
	assert_int_equal(env.valid, 0);
	assert_int_equal(parse_environ(ENV("JOBSCOPE_RUN_ID=a\nb\0"), &env), 0);
	assert_int_equal(env.valid, 0);
}

static void test_environ_gpus(void **state)
{
	char raw[1200];
	struct slurm_env env;
	size_t len, i;

	(void)state;
	/* empty: no GPU visible, which is not "no variable" */
	assert_int_equal(parse_environ(ENV("CUDA_VISIBLE_DEVICES=\0"), &env), 0);
	assert_int_equal(env.valid, SLURM_ENV_CUDA_VISIBLE);
	assert_int_equal(env.cuda_visible_count, 0);
	assert_string_equal(env.cuda_visible, "");

	assert_int_equal(
	    parse_environ(ENV("CUDA_VISIBLE_DEVICES=GPU-8d3b1f2a-0000-1111-2222-333344445555,"
			      "GPU-aaaaaaaa-0000-1111-2222-333344445555\0SLURM_JOB_GPUS=0,,2,\0"),
			  &env),
	    0);
	assert_int_equal(env.cuda_visible_count, 2);
	assert_int_equal(env.job_gpus_count, 2);
	assert_string_equal(env.job_gpus, "0,,2,");

	/* longer than the buffer: whole entries kept, all counted */
	len = (size_t)sprintf(raw, "SLURM_JOB_GPUS=");
	for (i = 0; i < 200; i++)
		len += (size_t)sprintf(raw + len, "%zu,", i);
	raw[len - 1] = '\0';
	assert_int_equal(parse_environ(raw, len, &env), 0);
	assert_int_equal(env.valid, SLURM_ENV_JOB_GPUS | SLURM_ENV_JOB_GPUS_CUT);
	assert_int_equal(env.job_gpus_count, 200);
	assert_true(strlen(env.job_gpus) < sizeof(env.job_gpus));
	assert_true(strlen(env.job_gpus) > 200);
	assert_int_not_equal(env.job_gpus[strlen(env.job_gpus) - 1], ',');
	assert_int_equal(strncmp(env.job_gpus, "0,1,2,3,", 8), 0);

	/* one huge entry: nothing fits, still counted */
	len = (size_t)sprintf(raw, "CUDA_VISIBLE_DEVICES=");
	memset(raw + len, 'G', 400);
	len += 400;
	assert_int_equal(parse_environ(raw, len, &env), 0);
	assert_int_equal(env.valid, SLURM_ENV_CUDA_VISIBLE | SLURM_ENV_CUDA_VISIBLE_CUT);
	assert_int_equal(env.cuda_visible_count, 1);
	assert_string_equal(env.cuda_visible, "");
}

/* ---- limit files ---- */

static void test_cpuset(void **state)
{
	static const struct {
		const char *text;
		int ret;
		int ncpus;
	} cases[] = {
	    {"0-3,8,10-11\n", 0, 7},
	    {"0\n", 0, 1},
	    {"0-63", 0, 64},
	    {"0-8191\n", 0, 8192},
	    {"  0 - 3 , 8 \n", 0, 5},
	    {"\t1,3,5\n\n", 0, 3},
	    {"5-5", 0, 1},
	    {"", -ENODATA, 0},
	    {"\n", -ENODATA, 0},
	    {"   \n", -ENODATA, 0},
	    {"3-1\n", -EINVAL, 0},
	    {"0-3,2-5\n", -EINVAL, 0},
	    {"4,2\n", -EINVAL, 0},
	    {"1,1\n", -EINVAL, 0},
	    {"a\n", -EINVAL, 0},
	    {"1,,2\n", -EINVAL, 0},
	    {"1,\n", -EINVAL, 0},
	    {",1\n", -EINVAL, 0},
	    {"1-\n", -EINVAL, 0},
	    {"-1\n", -EINVAL, 0},
	    {"0-7:2\n", -EINVAL, 0},
	    {"1 2\n", -EINVAL, 0},
	    {"0-99999999999999999999\n", -EINVAL, 0},
	    {"0-2000000\n", -EINVAL, 0},
	    {"0\n1\n", -EINVAL, 0},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int n = -42;

		assert_int_equal(parse_cpuset(cases[i].text, &n), cases[i].ret);
		assert_int_equal(n, cases[i].ret ? -42 : cases[i].ncpus);
	}
}

static void test_cpu_max(void **state)
{
	double cores = -1;

	(void)state;
	assert_int_equal(parse_cpu_max("200000 100000\n", &cores), 0);
	assert_true(cores == 2.0);
	assert_int_equal(parse_cpu_max("50000 100000", &cores), 0);
	assert_true(cores == 0.5);
	assert_int_equal(parse_cpu_max("150000  100000 \n", &cores), 0);
	assert_true(cores == 1.5);

	cores = -1;
	assert_int_equal(parse_cpu_max("max 100000\n", &cores), -ENODATA);
	assert_int_equal(parse_cpu_max("max\n", &cores), -ENODATA);
	assert_int_equal(parse_cpu_max("", &cores), -EINVAL);
	assert_int_equal(parse_cpu_max("\n", &cores), -EINVAL);
	assert_int_equal(parse_cpu_max("200000\n", &cores), -EINVAL);
	assert_int_equal(parse_cpu_max("200000 0\n", &cores), -EINVAL);
	assert_int_equal(parse_cpu_max("0 100000\n", &cores), -EINVAL);
	assert_int_equal(parse_cpu_max("maxi 100000\n", &cores), -EINVAL);
	assert_int_equal(parse_cpu_max("max 100000 1\n", &cores), -EINVAL);
	assert_int_equal(parse_cpu_max("max x\n", &cores), -EINVAL);
	assert_int_equal(parse_cpu_max("-1 100000\n", &cores), -EINVAL);
	assert_int_equal(parse_cpu_max("200000 100000x\n", &cores), -EINVAL);
	assert_int_equal(parse_cpu_max("2e5 100000\n", &cores), -EINVAL);
	assert_true(cores == -1);
}

static void test_memory_max(void **state)
{
	uint64_t bytes = 7;

	(void)state;
	assert_int_equal(parse_memory_max("1073741824\n", &bytes), 0);
	assert_int_equal(bytes, 1073741824ull);
	assert_int_equal(parse_memory_max("0\n", &bytes), 0);
	assert_int_equal(bytes, 0);
	assert_int_equal(parse_memory_max("18446744073709551615", &bytes), 0);
	assert_int_equal(bytes, UINT64_MAX);

	bytes = 7;
	assert_int_equal(parse_memory_max("max\n", &bytes), -ENODATA);
	assert_int_equal(parse_memory_max("max", &bytes), -ENODATA);
	assert_int_equal(parse_memory_max("", &bytes), -EINVAL);
	assert_int_equal(parse_memory_max("maximum\n", &bytes), -EINVAL);
	assert_int_equal(parse_memory_max("12k\n", &bytes), -EINVAL);
	assert_int_equal(parse_memory_max("1 2\n", &bytes), -EINVAL);
	assert_int_equal(parse_memory_max("-1\n", &bytes), -EINVAL);
	assert_int_equal(parse_memory_max("18446744073709551616\n", &bytes), -EINVAL);
	assert_int_equal(bytes, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slurm_v1),
	    cmocka_unit_test(test_slurm_v1_debian),
	    cmocka_unit_test(test_slurm_v1_steps),
	    cmocka_unit_test(test_slurm_v2),
	    cmocka_unit_test(test_slurm_v2_sluid),
	    cmocka_unit_test(test_stepd_title),
	    cmocka_unit_test(test_k8s_systemd_driver),
	    cmocka_unit_test(test_k8s_cgroupfs_driver),
	    cmocka_unit_test(test_k8s_prefixes),
	    cmocka_unit_test(test_k8s_not_pods),
	    cmocka_unit_test(test_systemd_units),
	    cmocka_unit_test(test_systemd_v1),
	    cmocka_unit_test(test_unit_too_long),
	    cmocka_unit_test(test_plain),
	    cmocka_unit_test(test_hybrid),
	    cmocka_unit_test(test_deleted_and_odd_lines),
	    cmocka_unit_test(test_cgroup_garbage),
	    cmocka_unit_test(test_cgroup_truncated),
	    cmocka_unit_test(test_cgroup_long_path),
	    cmocka_unit_test(test_environ_full),
	    cmocka_unit_test(test_environ_each_missing),
	    cmocka_unit_test(test_environ_empty_and_unterminated),
	    cmocka_unit_test(test_environ_odd_values),
	    cmocka_unit_test(test_environ_gpus),
	    cmocka_unit_test(test_cpuset),
	    cmocka_unit_test(test_cpu_max),
	    cmocka_unit_test(test_memory_max),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
