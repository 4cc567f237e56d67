"""The agent end to end on fixture trees: every attribution variant, v1 and v2.

This machine has a cgroup v1 hybrid layout and no Kubernetes, so the other
layouts are exercised on sysroots built here: /proc entries for processes in
a Kubernetes pod (v2, systemd driver, burstable, containerd), a Slurm job
(v2 with Debian's node-prefixed stepd scope; v1 with Debian's /slurm_<node>
root), a Slurm job known only by its environment, a `jobscope run`, a systemd
unit and a plain login session, over the cgroup fixture trees of
tests/fixtures/cgroup.  The agent (--sysroot) must file each process under
the right job, with the reservation the cgroup limits or the environment
give, and the job cgroup's own counters.
"""
import os

from harness import jobscope, run_tests, check, eq
from agent_harness import Agent, sql
from fake_node import add_proc, skeleton

GiB = 1 << 30
POD_UID = "1234abcd-5678-90ab-cdef-0123456789ab"
POD_SLICE = ("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice"
             % POD_UID.replace("-", "_"))
CID = "0123456789abcdef" * 4


def make_root(wd, name, cgroup_tree):
    root = skeleton(wd.join(name), cgroup_tree)
    add_proc(root, 1, 0, "init", "0::/init.scope\n" if cgroup_tree == "v2" else "1:cpu:/\n")
    return root


def agent_once(wd, root):
    db = wd.join(os.path.basename(root) + ".db")
    r = jobscope("agent", "--sysroot", root, "--db", db, "--listen", "none",
                 "--interval", "100ms", "--exit-after", "350ms", timeout=60)
    eq(r.returncode, 0, "agent on %s: %s" % (root, r.stderr))
    return db


def jobs(db):
    rows = sql(db, "SELECT scheduler, job_id, step, cgroup, qos, reservation_source,"
               " reserved_cpus, reserved_mem_bytes, reserved_gpus, id FROM jobs")
    return {(r[0], r[1]): r for r in rows}


def procs_of(db, job_row):
    return sorted(r[0] for r in sql(db, "SELECT pid FROM procs WHERE job_id = ?", job_row))


def last_cg(db, job_row):
    return sql(db, "SELECT cg_cpu_ms, cg_mem_bytes, cg_mem_peak_bytes FROM job_samples"
               " WHERE job_id = ? ORDER BY seq DESC LIMIT 1", job_row)[0]


def test_cgroup_v2_variants(wd):
    root = make_root(wd, "v2root", "v2")
    add_proc(root, 500, 1, "containerd-shim", "0::/system.slice/containerd.service\n")
    add_proc(root, 510, 500, "python", "0::%s/cri-containerd-%s.scope\n" % (POD_SLICE, CID),
             uid=1000)
    add_proc(root, 511, 510, "worker", "0::%s/cri-containerd-%s.scope\n" % (POD_SLICE, CID),
             uid=1000)
    add_proc(root, 600, 1, "slurmstepd",
             "0::/system.slice/vm_slurmstepd.scope/job_7/step_batch/slurm\n")
    add_proc(root, 610, 600, "train.sh",
             "0::/system.slice/vm_slurmstepd.scope/job_7/step_batch/user/task_0\n", uid=1000)
    add_proc(root, 700, 1, "mpirun", "0::/user.slice/user-1000.slice/session-3.scope\n",
             b"HOME=/home/a\0SLURM_JOB_ID=8\0SLURM_CPUS_ON_NODE=3\0SLURM_MEM_PER_CPU=1024\0"
             b"SLURM_JOB_GPUS=0,1\0", uid=1000)
    add_proc(root, 800, 1, "busy", "0::/user.slice/user-1000.slice/session-3.scope\n",
             b"JOBSCOPE_RUN_ID=42\0", uid=1000)
    add_proc(root, 900, 1, "bash", "0::/user.slice/user-1000.slice/session-3.scope\n",
             uid=1000, session=900)
    add_proc(root, 950, 1, "nginx", "0::/system.slice/nginx.service\n", uid=33)
    db = agent_once(wd, root)
    j = jobs(db)

    pod = j[("k8s", POD_UID)]
    eq(pod[3], POD_SLICE, "pod cgroup")
    eq(pod[4], "burstable", "QoS")
    eq((pod[5], pod[6], pod[7]), ("cgroup", 1.5, 512 << 20), "pod reservation (cpu.max, memory.max)")
    eq(procs_of(db, pod[9]), [510, 511], "pod processes")
    eq(last_cg(db, pod[9]), (88123456, 402653184, 498073600), "pod cgroup counters")

    slurm7 = j[("slurm", "7")]
    eq(slurm7[3], "/system.slice/vm_slurmstepd.scope/job_7", "job 7 cgroup")
    eq(slurm7[2], "batch", "job 7 step")
    eq((slurm7[5], slurm7[6], slurm7[7]), ("cgroup", 4.0, 4 * GiB),
       "job 7 reservation (cpuset 2-3,6-7, memory.max)")
    eq(procs_of(db, slurm7[9]), [600, 610], "job 7 processes, slurmstepd included")
    eq(last_cg(db, slurm7[9]), (5312345, 3221225472, 3758096384), "job 7 cgroup counters")

    slurm8 = j[("slurm", "8")]
    eq((slurm8[5], slurm8[6], slurm8[7], slurm8[8]), ("slurm_env", 3.0, 3 * GiB, 2),
       "job 8 reservation from its environment")
    eq(slurm8[3], None, "job 8 has no job cgroup")
    eq(procs_of(db, slurm8[9]), [700], "job 8 processes")

    run = j[("run", "42")]
    eq(procs_of(db, run[9]), [800], "the run's process")
    unit = j[("systemd", "nginx.service")]
    eq(procs_of(db, unit[9]), [950], "the unit's process")
    eq(unit[5], None, "a unit without limits reserved nothing")
    sess = j[("systemd", "session-3.scope")]
    eq(procs_of(db, sess[9]), [900], "the login session's plain process")
    check(("systemd", "containerd.service") in j, "containerd's own unit")


def test_cgroup_v1_variants(wd):
    root = make_root(wd, "v1root", "v1")
    v1 = ("9:freezer:/slurm_vm/uid_0/job_5/step_0\n4:memory:/slurm_vm/uid_0/job_5/step_0/task_0\n"
          "3:cpuset:/slurm_vm/uid_0/job_5/step_0\n2:cpuacct:/slurm_vm/uid_0/job_5/step_0/task_0\n"
          "1:cpu:/\n")
    add_proc(root, 600, 1, "slurmstepd", "4:memory:/slurm_vm/uid_0/job_5/step_0\n1:cpu:/\n")
    add_proc(root, 610, 600, "a.out", v1)
    add_proc(root, 620, 600, "a.out", v1)
    add_proc(root, 650, 1, "munged", "4:memory:/system.slice/munge.service\n"
             "1:name=systemd:/system.slice/munge.service\n")
    add_proc(root, 660, 1, "sshd", "1:cpu:/\n", session=660)
    db = agent_once(wd, root)
    j = jobs(db)
    job5 = j[("slurm", "5")]
    eq(job5[3], "/slurm_vm/uid_0/job_5", "job 5 cgroup (Debian's v1 root)")
    eq(job5[2], "0", "step")
    # cpu.cfs_quota_us 400000 / period 100000 comes before the cpuset
    eq((job5[5], job5[6], job5[7]), ("cgroup", 4.0, 4 * GiB), "job 5 reservation")
    eq(procs_of(db, job5[9]), [600, 610, 620], "job 5 processes")
    eq(last_cg(db, job5[9]), (7384512, 1288491008, 2147479552), "v1 cgroup counters")
    munge = j[("systemd", "munge.service")]
    eq(munge[5], None, "munge: an unlimited v1 cgroup reserves nothing")
    eq(procs_of(db, munge[9]), [650], "munged")
    check(("session", "0/660") in j, "a plain process: user and session: %r" % list(j))


def compat_series(wd, root, name):
    """{(family, jobid): value} of the cgroup_* series of --compat jobstats on root."""
    agent = Agent(wd, interval="100ms", db=wd.join(name + ".db"), name=name,
                  extra=("--sysroot", root, "--compat", "jobstats"))
    try:
        agent.wait_ticks(3)
        out = {}
        for (fam, labels), v in agent.metrics().items():
            if fam.startswith("cgroup_"):
                lab = dict(labels)
                out[(fam, lab["jobid"])] = v
                if fam == "cgroup_info":
                    eq(lab["uid"], "1000" if lab["jobid"] in ("7", "8") else "0",
                       "cgroup_info's uid label of job %s" % lab["jobid"])
        return out
    finally:
        eq(agent.stop(), 0, "the agent's exit code")


def near(a, b):
    return a is not None and abs(a - b) <= 1e-9 * max(1.0, abs(b))


def test_compat_jobstats_memory(wd):
    """--compat jobstats: cgroup_exporter's series from the job cgroup's own
    files (v2 memory.stat anon + swapcached as rss, shmem apart, file as
    cache, memory.current as used; v1 total_rss, total_shmem, total_cache),
    the reservation as cgroup_cpus and cgroup_memory_total_bytes, and a job
    without a cgroup falling back to its processes' RSS, with no shmem."""
    root = make_root(wd, "v2compat", "v2")
    add_proc(root, 600, 1, "slurmstepd",
             "0::/system.slice/vm_slurmstepd.scope/job_7/step_batch/slurm\n", uid=1000)
    add_proc(root, 610, 600, "train.sh",
             "0::/system.slice/vm_slurmstepd.scope/job_7/step_batch/user/task_0\n", uid=1000)
    add_proc(root, 700, 1, "mpirun", "0::/user.slice/user-1000.slice/session-3.scope\n",
             b"SLURM_JOB_ID=8\0SLURM_CPUS_ON_NODE=3\0SLURM_MEM_PER_CPU=1024\0", uid=1000,
             rss_kb=10240)
    add_proc(root, 950, 1, "nginx", "0::/system.slice/nginx.service\n", uid=33)
    got = compat_series(wd, root, "v2compat")
    want = {
        ("cgroup_memory_rss_bytes", "7"): 2952790016 + 4096,   # anon + swapcached
        ("cgroup_memory_shmem_bytes", "7"): 16777216,
        ("cgroup_memory_cache_bytes", "7"): 251658240,
        ("cgroup_memory_used_bytes", "7"): 3221225472,          # memory.current
        ("cgroup_memory_total_bytes", "7"): 4 * GiB,            # memory.max
        ("cgroup_cpus", "7"): 4,                                # cpuset 2-3,6-7
        ("cgroup_cpu_total_seconds", "7"): 5312.345,            # cpu.stat usage_usec, ms
        ("cgroup_cpu_user_seconds", "7"): 4987.654321,          # user_usec
        ("cgroup_uid", "7"): 1000,
        ("cgroup_info", "7"): 1,
        ("cgroup_memory_rss_bytes", "8"): 10240 * 1024,         # no cgroup: its processes' RSS
        ("cgroup_memory_total_bytes", "8"): 3 * GiB,
        ("cgroup_cpus", "8"): 3,
        ("cgroup_cpu_total_seconds", "8"): 1.5,                 # utime 100 + stime 50 ticks
        ("cgroup_uid", "8"): 1000,
        ("cgroup_info", "8"): 1,
    }
    for key, v in want.items():
        check(near(got.get(key), v), "%s{jobid=%s}: %r, want %r" % (key[0], key[1],
                                                                   got.get(key), v))
    for fam in ("cgroup_memory_shmem_bytes", "cgroup_memory_cache_bytes",
                "cgroup_memory_used_bytes"):
        check((fam, "8") not in got, "%s of a job without a cgroup is missing, not 0" % fam)
    eq(sorted(set(j for _f, j in got)), ["7", "8"], "only Slurm jobs have cgroup_* series")

    root = make_root(wd, "v1compat", "v1")
    v1 = ("4:memory:/slurm_vm/uid_0/job_5/step_0/task_0\n3:cpuset:/slurm_vm/uid_0/job_5/step_0\n"
          "2:cpuacct:/slurm_vm/uid_0/job_5/step_0/task_0\n1:cpu:/\n")
    add_proc(root, 610, 1, "a.out", v1)
    got = compat_series(wd, root, "v1compat")
    for key, v in {("cgroup_memory_rss_bytes", "5"): 1073741824,     # total_rss, no swapcached
                   ("cgroup_memory_shmem_bytes", "5"): 0,            # total_shmem
                   ("cgroup_memory_cache_bytes", "5"): 214749184,    # total_cache
                   ("cgroup_memory_used_bytes", "5"): 1288491008}.items():
        check(near(got.get(key), v), "v1 %s: %r, want %r" % (key[0], got.get(key), v))


run_tests(globals())
