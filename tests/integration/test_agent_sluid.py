"""`jobscope agent`: Slurm 26.05's job cgroups, named by SLUID.

Slurm 26.05 names a job's cgroup by its SLUID, not job_<id>:
.../system.slice/slurmstepd.scope/sEKNKTV3WPV500/step_0/user/task_0.  On a
real cgroup2 hierarchy laid out that way, a task with no job variable is job
4711 because a process titled as a stepd ("slurmstepd: [4711.0]", js-retitle
overwriting its argv and environment as slurmstepd does) sits in the job's
cgroup; a task with SLURM_JOB_ID=4711 is job 4711 with no stepd at all; a
task with neither stays keyed by its SLUID, and the agent says so once.
Each job keeps its SLUID: in the store, the API's job and `--compat
jobstats`'s cgroup_exporter label (0.3.1 labels such jobs by their SLUID).
"""
import atexit
import os
import re
import shutil
import signal
import subprocess
import time

from harness import helper, run_tests, check, eq, wait_for
from agent_harness import (Agent, sql, job_row, env_with, spawn, settle, cgroup2_mount,
                           remove_cgroup_tree)
from head_harness import Head, sql as head_sql

SLUID = "sEKNKTV3WPV500"


def make_sluid_cgroups(wd, sluid=SLUID):
    """A 26.05-shaped tree on the cgroup2 hierarchy: (top, the stepd's cgroup, the
    task's), or Nones when there is no cgroup2 to write to.  A machine with only
    v1 controllers mounted gets a cgroup2 mounted at a temporary directory."""
    mnt = cgroup2_mount()
    mounted = None
    if not mnt:
        mounted = wd.join("cgroup2")
        os.makedirs(mounted, exist_ok=True)
        r = subprocess.run(["mount", "-t", "cgroup2", "none", mounted], capture_output=True,
                           text=True)
        if r.returncode != 0:
            print("SKIP: no cgroup2 hierarchy, and cannot mount one: %s" % r.stderr.strip())
            return None, None, None
        # after the test's own cleanup has emptied and removed its cgroups
        atexit.register(subprocess.run, ["umount", mounted], capture_output=True)
        mnt = mounted
    top = os.path.join(mnt, "jobscope-it-%d-%d" % (os.getpid(), time.monotonic_ns()))
    job = os.path.join(top, "system.slice", "slurmstepd.scope", sluid)
    stepd, task = os.path.join(job, "step_0", "slurm"), os.path.join(job, "step_0", "user",
                                                                        "task_0")
    try:
        os.makedirs(stepd)
        os.makedirs(task)
    except OSError as e:
        print("SKIP: cannot make a cgroup under %s: %s" % (mnt, e))
        shutil.rmtree(top, ignore_errors=True)
        return None, None, None
    return top, stepd, task


def move_to(cgroup, pid):
    with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
        f.write("%d\n" % pid)


class Task:
    """A task as slurmstepd starts one: a new process born inside the step's cgroup,
    with the job's environment.  A launcher (sh, started with that environment) moves
    itself into the cgroup and forks the task, js-busy, whose pid is `pid`.  (A
    Popen child moved before its exec was seen there by a busy agent still holding
    its parent's environment: a job keyed by the SLUID, stored before the number.)"""

    def __init__(self, wd, cgroup, seconds, env):
        self.pid_file = wd.join("task-%d.pid" % time.monotonic_ns())
        self.launcher = spawn(["sh", "-c", 'echo $$ > "$3/cgroup.procs" || exit 1; '
                               '"$0" --seconds "$1" & echo $! > "$2"; wait $!',
                               helper("busy"), "%g" % seconds, self.pid_file, cgroup], env)
        self.pid = int(wait_for(lambda: os.path.exists(self.pid_file) and
                                open(self.pid_file).read().strip(), what="the task's pid"))

    # as a Popen of the task: the launcher waits for it and exits with its status
    def communicate(self, timeout=None):
        return self.launcher.communicate(timeout=timeout)

    @property
    def returncode(self):
        return self.launcher.returncode

    def poll(self):
        return self.launcher.poll()

    def kill(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.launcher.kill()

    def wait(self):
        return self.launcher.wait()


def task_job(db, pid):
    """(scheduler, job_id, sluid, cgroup) of the job the task's latest process row is in."""
    rows = sql(db, "SELECT j.scheduler, j.job_id, j.sluid, j.cgroup FROM procs p"
               " JOIN jobs j ON j.id = p.job_id WHERE p.pid = ? ORDER BY p.rowid", pid)
    return rows[-1] if rows else None


def check_stored(a, task_pid, job_id, sluid=SLUID):
    # the task is born in the job's cgroup (Task): its row is the job's from the first
    try:
        wait_for(lambda: (task_job(a.db, task_pid) or ("",))[0] == "slurm", timeout=20,
                 what="the task's latest process row in a Slurm job")
    except AssertionError:
        # what the agent did with the task: its rows, and the agent's log
        print("the task's rows (scheduler, job id, sluid, cgroup, comm, ts):\n  %s" % "\n  ".join(
            repr(r) for r in sql(a.db, "SELECT j.scheduler, j.job_id, j.sluid, j.cgroup, p.comm,"
                                 " p.ts_ms FROM procs p JOIN jobs j ON j.id = p.job_id"
                                 " WHERE p.pid = ? ORDER BY p.rowid", task_pid)))
        print("the agent's log:\n%s" % a.stderr()[-3000:])
        raise
    row = task_job(a.db, task_pid)
    eq(row[:3], ("slurm", job_id, sluid), "the task's job: scheduler, job id, sluid")
    check(row[3].endswith("/system.slice/slurmstepd.scope/" + sluid),
          "the job's cgroup %r is the SLUID's directory" % row[3])
    eq(sql(a.db, "SELECT count(*) FROM jobs WHERE sluid = ?", sluid), [(1,)],
       "one job for the SLUID")


def check_api(a, job_id, sluid=SLUID):
    jobs = [j for j in a.json("/api/v1/jobs")["jobs"] if j.get("sluid") == sluid]
    eq(len(jobs), 1, "the API lists one job of the SLUID")
    eq(jobs[0]["job_id"], job_id, "its job_id")
    eq(jobs[0]["scheduler"], "slurm", "its scheduler")


def check_compat(a):
    """cgroup_exporter 0.3.1 (commit 4275afd) labels a SLUID job by its SLUID."""
    text = a.get("/metrics")
    lines = [l for l in text.splitlines() if l.startswith("cgroup_cpu_total_seconds{")]
    eq([re.search(r'jobid="([^"]*)"', l).group(1) for l in lines
        if SLUID in l or "4711" in l], [SLUID], "cgroup_exporter's jobid label")


def test_stepd_title_gives_the_number(wd):
    """A stepd titled "slurmstepd: [4711.0]" in .../<sluid>/step_0/slurm: the task in
    .../<sluid>/step_0/user/task_0, with no job variable, is job 4711."""
    top, stepd_cg, task_cg = make_sluid_cgroups(wd)
    if not top:
        return
    pid_file = wd.join("stepd.pid")
    a = Agent(wd, interval="100ms", extra=["--compat", "jobstats"])
    stepd = task = None
    stepd_pid = None
    try:
        a.wait_ticks(2)
        stepd = spawn([helper("retitle"), "--seconds", "60", "--title", "slurmstepd: [4711.0]",
                       "--pid-file", pid_file], env=env_with())
        wait_for(lambda: os.path.exists(pid_file) and os.path.getsize(pid_file) > 0,
                 what="the stepd's pid file")
        with open(pid_file) as f:
            stepd_pid = int(f.read())
        with open("/proc/%d/cmdline" % stepd_pid, "rb") as f:
            eq(f.read().rstrip(b"\0"), b"slurmstepd: [4711.0]", "the stepd's title")
        move_to(stepd_cg, stepd_pid)
        wait_for(lambda: job_row(a.db, "slurm", "4711"), timeout=20,
                 what="job 4711, from the stepd's title")
        task = Task(wd, task_cg, 1.5, env_with())
        check_stored(a, task.pid, "4711")
        check_api(a, "4711")
        check_compat(a)
        rc, _, err = settle(task)
        eq(rc, 0, "the task: %s" % err)
    finally:
        if stepd_pid:  # js-retitle's worker, the "stepd": its parent waits for it
            try:
                os.kill(stepd_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in (stepd, task):
            if p and p.poll() is None:
                p.kill()
            if p:
                p.wait()
        eq(a.stop(), 0, "agent exit status")
        remove_cgroup_tree(top)
    check("keyed by its SLUID" not in a.stderr(), "no word of an unknown job id")


def test_slurm_job_id_gives_the_number(wd):
    """No stepd: the task's own SLURM_JOB_ID=4711 gives the number.  The agent's head
    gets the job with its SLUID."""
    top, _, task_cg = make_sluid_cgroups(wd)
    if not top:
        return
    head = Head(wd)
    a = Agent(wd, interval="100ms", extra=["--compat", "jobstats", "--head", head.url])
    task = None
    try:
        a.wait_ticks(2)
        task = Task(wd, task_cg, 3, env_with(SLURM_JOB_ID=4711, SLURM_STEP_ID=0))
        check_stored(a, task.pid, "4711")
        check_api(a, "4711")
        check_compat(a)
        wait_for(lambda: head_sql(head.db, "SELECT job_id, sluid FROM jobs WHERE sluid = ?",
                                  SLUID), timeout=30, what="the job in the head's store")
        listed = [j for j in head.get("/api/v1/jobs")["jobs"] if j.get("sluid") == SLUID]
        eq([j["job_id"] for j in listed], ["4711"], "the head's jobs list: the job, its sluid")
        rc, _, err = settle(task)
        eq(rc, 0, "the task: %s" % err)
    finally:
        if task and task.poll() is None:
            task.kill()
            task.wait()
        eq(a.stop(), 0, "agent exit status")
        head.kill(signal.SIGTERM)
        remove_cgroup_tree(top)
    eq(sql(a.db, "SELECT step FROM jobs WHERE sluid = ?", SLUID), [("0",)], "the step")


def test_no_number_keeps_the_sluid(wd):
    """Neither a stepd nor SLURM_JOB_ID: the job is keyed by its SLUID, said once."""
    sluid = "s0123456789ABC"
    top, _, task_cg = make_sluid_cgroups(wd, sluid)
    if not top:
        return
    a = Agent(wd, interval="100ms", extra=["--compat", "jobstats"])
    tasks = []
    try:
        a.wait_ticks(2)
        tasks = [Task(wd, task_cg, 2, env_with()) for _ in range(2)]
        for t in tasks:
            check_stored(a, t.pid, sluid, sluid)
        check_api(a, sluid, sluid)
        for t in tasks:
            rc, _, err = settle(t)
            eq(rc, 0, "a task: %s" % err)
    finally:
        for t in tasks:
            if t.poll() is None:
                t.kill()
                t.wait()
        eq(a.stop(), 0, "agent exit status")
        remove_cgroup_tree(top)
    said = [l for l in a.stderr().splitlines() if "keyed by its SLUID" in l]
    eq(len(said), 1, "said once: %r" % said)
    check(sluid in said[0], "the message names the SLUID: %r" % said[0])


if __name__ == "__main__":
    run_tests(globals())
