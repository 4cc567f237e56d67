"""`jobscope agent`: attribution that survives what real programs do to themselves.

A job known only by SLURM_JOB_ID in its environment runs js-retitle, whose
worker renames itself and overwrites its argv and environment as
setproctitle does (Ray, gunicorn, PostgreSQL): the worker's CPU must be
the job's, whether the agent first sees the worker before or after the
rename, and its process rows must be the job's.  A process moved to a
Slurm job's cgroup without exec (as an adopting PAM module or a stepd
does) changes job at the next tick, and each job keeps the CPU used while
the process was its own.
"""
import os
import shutil
import sys
import time

from harness import helper, run_tests, near, check, eq, wait_for
from agent_harness import Agent, sql, job_row, env_with, spawn, settle

CLK_TCK = os.sysconf("SC_CLK_TCK")
PY = sys.executable


def helper_json(out):
    import json
    for line in reversed(out.strip().splitlines()):
        if line.strip().startswith("{"):
            return json.loads(line)
    raise AssertionError("no JSON line in %r" % out)


def wait_job_end(db, scheduler, job_id, timeout=15):
    def ended():
        row = job_row(db, scheduler, job_id)
        return row if row and row[2] else None
    return wait_for(ended, timeout=timeout, what="the end of job %s:%s" % (scheduler, job_id))


def job_cpu_ms(db, job_row_id):
    """The job's CPU in its last stored sample (what reports and summaries read)."""
    rows = sql(db, "SELECT user_ms + system_ms FROM job_samples WHERE job_id = ?"
               " ORDER BY ts_ms DESC, seq DESC LIMIT 1", job_row_id)
    check(rows, "job row %d has samples" % job_row_id)
    return rows[0][0]


def procs_own_cpu_ms(db, job_row_id):
    """Sum over the job's process rows of each one's last own CPU (user + system)."""
    rows = sql(db, "SELECT sum(cpu) FROM (SELECT (SELECT s.user_ms + s.system_ms FROM"
               " proc_samples s WHERE s.proc_id = p.id ORDER BY s.ts_ms DESC, s.seq DESC"
               " LIMIT 1) AS cpu FROM procs p WHERE p.job_id = ?)", job_row_id)
    return rows[0][0] or 0


def stat_cpu_ms(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 // CLK_TCK


def retitled_worker(wd, job_id, rename_after):
    a = Agent(wd, interval="200ms")
    try:
        a.wait_ticks(2)
        p = spawn([helper("retitle"), "--seconds", "3", "--rename-after", str(rename_after)],
                  env=env_with(SLURM_JOB_ID=job_id))
        rc, out, err = settle(p)
        eq(rc, 0, "js-retitle: %s" % err)
        w = helper_json(out)
        eq(w["environ_names_job"], False, "the worker's environ no longer names the job")
        row = wait_job_end(a.db, "slurm", str(job_id))
    finally:
        eq(a.stop(), 0, "agent exit status")
    job = row[0]
    cpu = job_cpu_ms(a.db, job)
    # the job is the parent (a few ms) and the worker
    near(cpu, w["cpu_ms"], 0.10, "job slurm:%s CPU ms vs the worker's rusage" % job_id)
    rows = sql(a.db, "SELECT job_id, comm FROM procs WHERE pid = ?", w["worker_pid"])
    eq(len(rows), 1, "one process row for the worker")
    eq(rows[0][0], job, "the worker's process row is job slurm:%s's" % job_id)
    eq(rows[0][1], "js-retitle: wor", "the worker's row has its new name")
    worker_rows = sql(a.db, "SELECT DISTINCT s.job_id FROM proc_samples s JOIN procs p"
                      " ON p.id = s.proc_id WHERE p.pid = ?", w["worker_pid"])
    eq(worker_rows, [(job,)], "the worker's samples are the job's")
    near(procs_own_cpu_ms(a.db, job), cpu, 0.10,
         "the job's process rows (own CPU) vs its total")
    others = sql(a.db, "SELECT scheduler, job_id FROM jobs WHERE id != ? AND id IN"
                 " (SELECT job_id FROM procs WHERE pid = ?)", job, w["worker_pid"])
    eq(others, [], "no other job holds the worker")


def test_worker_retitled_before_first_sight(wd):
    """The agent first sees the worker with its environ already gone: it inherits the job."""
    retitled_worker(wd, 931, 0)


def test_worker_retitled_after_first_sight(wd):
    """The agent sees the worker's environ, then the rename: the first sight is kept."""
    retitled_worker(wd, 932, 1.0)


# A python that forks a python: the child waits under its parent's name and
# environment (the agent's scans see it in the parent's job), then execs
# python with SLURM_JOB_ID, burns ~1.5 s of CPU and prints its own CPU ms.
EXEC_SAME_NAME = r"""
import os, resource, sys, time
burn = ("import resource, time\n"
        "t = time.process_time()\n"
        "while time.process_time() - t < 1.5: pass\n"
        "r = resource.getrusage(resource.RUSAGE_SELF)\n"
        "print(int((r.ru_utime + r.ru_stime) * 1000))\n")
pid = os.fork()
if pid == 0:
    time.sleep(1.0)
    env = dict(os.environ, SLURM_JOB_ID=sys.argv[1])
    os.execve(sys.executable, [sys.executable, "-c", burn], env)
print(pid, flush=True)
os.waitpid(pid, 0)
"""


def test_exec_under_the_same_name(wd):
    """A child seen before its exec, in its parent's job, that execs a program of the same
    name (python starting python): the exec is seen all the same (the memory's layout
    changed), and the process and its CPU go to the job its new environment names.  (Its
    process row stays with the job it was first seen in, as after a cgroup move.)"""
    job_id = 935
    a = Agent(wd, interval="200ms")
    try:
        a.wait_ticks(2)
        p = spawn([PY, "-c", EXEC_SAME_NAME, str(job_id)], env=env_with())
        rc, out, err = settle(p)
        eq(rc, 0, "the forking python: %s" % err)
        child, cpu_ms = (int(x) for x in out.split())
        row = wait_job_end(a.db, "slurm", str(job_id))
    finally:
        eq(a.stop(), 0, "agent exit status")
    job = row[0]
    check(sql(a.db, "SELECT 1 FROM procs WHERE pid = ?", child), "the child has a process row")
    eq(sql(a.db, "SELECT max(nprocs) FROM job_samples WHERE job_id = ?", job), [(1,)],
       "job slurm:%d has one process, the child" % job_id)
    # what it used between its exec and the scan that saw it is its parent's job's, as
    # after a cgroup move: up to an interval of one busy core (two, for a late tick)
    cpu = job_cpu_ms(a.db, job)
    check(cpu_ms - (2 * 200 + 50) - 0.05 * cpu_ms <= cpu <= cpu_ms * 1.05,
          "job slurm:%d has %d ms, the child used %d ms" % (job_id, cpu, cpu_ms))


def cgroup2_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            if right.split()[0] == "cgroup2":
                return left.split()[4]
    return None


def make_job_cgroup(wd, job_id):
    """A Slurm-shaped v2 cgroup .../slurmstepd.scope/job_<id>/step_0, or None."""
    mnt = cgroup2_mount()
    if not mnt:
        return None, None
    top = os.path.join(mnt, "jobscope-it-%d-%d" % (os.getpid(), time.monotonic_ns()))
    leaf = os.path.join(top, "slurmstepd.scope", "job_%d" % job_id, "step_0")
    try:
        os.makedirs(leaf)
    except OSError as e:
        print("SKIP: cannot make a cgroup under %s: %s" % (mnt, e))
        shutil.rmtree(top, ignore_errors=True)
        return None, None
    return top, leaf


def remove_cgroup_tree(top):
    for dirpath, _, _ in sorted(os.walk(top), key=lambda w: -len(w[0])):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass


def test_cgroup_move_without_exec(wd):
    """A busy process moved into job B's cgroup: job A keeps what it used before, B the rest."""
    job_a, job_b = 933, 934
    top, leaf = make_job_cgroup(wd, job_b)
    if not top:
        return
    pid_file = wd.join("worker.pid")
    a = Agent(wd, interval="200ms")
    try:
        a.wait_ticks(2)
        p = spawn([helper("retitle"), "--seconds", "4", "--pid-file", pid_file],
                  env=env_with(SLURM_JOB_ID=job_a))
        wait_for(lambda: os.path.exists(pid_file), what="the worker's pid file")
        with open(pid_file) as f:
            pid = int(f.read())
        a.wait_ticks(5)
        before = stat_cpu_ms(pid)
        with open(os.path.join(leaf, "cgroup.procs"), "w") as f:
            f.write("%d\n" % pid)
        after = stat_cpu_ms(pid)
        with open("/proc/%d/cgroup" % pid) as f:
            check("job_%d/step_0" % job_b in f.read(), "the worker is in job B's cgroup")
        rc, out, err = settle(p)
        eq(rc, 0, "js-retitle: %s" % err)
        w = helper_json(out)
        row_a = wait_job_end(a.db, "slurm", str(job_a))
        row_b = wait_job_end(a.db, "slurm", str(job_b))
    finally:
        eq(a.stop(), 0, "agent exit status")
        remove_cgroup_tree(top)
    cpu_a, cpu_b = job_cpu_ms(a.db, row_a[0]), job_cpu_ms(a.db, row_b[0])
    moved_at = (before + after) / 2
    # the move is seen at the next tick: up to one interval of one busy core (two, for a
    # late tick on a loaded machine)
    tick_ms = 2 * 200 + 50
    check(abs(cpu_a - moved_at) <= tick_ms + 0.05 * moved_at,
          "job A has %d ms, the worker had used %d ms when it moved" % (cpu_a, moved_at))
    check(abs(cpu_b - (w["cpu_ms"] - moved_at)) <= tick_ms + 0.05 * w["cpu_ms"],
          "job B has %d ms, the worker used %d ms after it moved"
          % (cpu_b, w["cpu_ms"] - moved_at))
    near(cpu_a + cpu_b, w["cpu_ms"], 0.10, "jobs A + B vs the worker's rusage")
    cg = sql(a.db, "SELECT cgroup FROM jobs WHERE id = ?", row_b[0])[0][0]
    check(cg.endswith("/slurmstepd.scope/job_%d" % job_b), "job B's cgroup %r" % cg)


run_tests(globals())
