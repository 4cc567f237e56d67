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
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time

from harness import helper, run_tests, near, check, eq, wait_for
from agent_harness import (Agent, sql, job_row, env_with, spawn, settle, proc_state,
                           cgroup2_mount, remove_cgroup_tree)

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


def near_ms(got, truth, what):
    """A job's CPU ms as the agent stored them against the workload's getrusage: each
    process's CPU in /proc is cut to clock ticks (10 ms) twice (user, system)."""
    check(got is not None and abs(got - truth) <= 0.05 * truth + 40,
          "%s: %r ms, the workload's getrusage %r ms" % (what, got, truth))


def reaped_after_ticks(a, parent, worker):
    """Keeps js-retitle (parent) from reaping its worker until the agent has read the
    worker's zombie, whose stat holds its final CPU.  Reaped between two ticks, the
    worker would be last seen up to an interval (more, for a late tick) before it
    ended, and with its parent gone at once the rest of its CPU is its parent's."""
    os.kill(parent.pid, signal.SIGSTOP)
    try:
        wait_for(lambda: proc_state(worker) in ("Z", None), timeout=30,
                 what="the worker's end")
        check(proc_state(worker) == "Z", "the worker is a zombie until its parent goes on")
        a.wait_ticks(2)
    finally:
        os.kill(parent.pid, signal.SIGCONT)


def retitled_worker(wd, job_id, rename_after):
    pid_file = wd.join("worker.pid")
    a = Agent(wd, interval="100ms")
    try:
        a.wait_ticks(2)
        p = spawn([helper("retitle"), "--seconds", "2", "--rename-after", str(rename_after),
                   "--pid-file", pid_file], env=env_with(SLURM_JOB_ID=job_id))
        wait_for(lambda: os.path.exists(pid_file), what="the worker's pid file")
        with open(pid_file) as f:
            reaped_after_ticks(a, p, int(f.read()))
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
    print("job slurm:%s: %d CPU-ms stored, the worker's getrusage %d" % (job_id, cpu, w["cpu_ms"]))
    near_ms(cpu, w["cpu_ms"], "job slurm:%s CPU ms vs the worker's rusage" % job_id)
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
# environment (the agent's scans see it in the parent's job) until GO.1 exists,
# then execs python with SLURM_JOB_ID, which waits for GO.2, burns 0.5 s of CPU and
# prints its CPU when GO.2 came and at the end.  The parent prints the child's pid,
# "reaped" once it reaped it, and stays until GO.3 (the agent makes an ended
# process's CPU exact from its parent's children's CPU, read at its next tick).
EXEC_SAME_NAME = r"""
import os, sys, time
go, job = sys.argv[1], sys.argv[2]
burn = ("import os, resource, sys, time\n"
        "while not os.path.exists(sys.argv[1] + '.2'): time.sleep(0.01)\n"
        "r = resource.getrusage(resource.RUSAGE_SELF)\n"
        "before = int((r.ru_utime + r.ru_stime) * 1000)\n"
        "t = time.process_time()\n"
        "while time.process_time() - t < 0.5: pass\n"
        "r = resource.getrusage(resource.RUSAGE_SELF)\n"
        "print(before, int((r.ru_utime + r.ru_stime) * 1000), flush=True)\n")
pid = os.fork()
if pid == 0:
    while not os.path.exists(go + ".1"):
        time.sleep(0.01)
    env = dict(os.environ, SLURM_JOB_ID=job)
    os.execve(sys.executable, [sys.executable, "-c", burn, go], env)
print(pid, flush=True)
os.waitpid(pid, 0)
print("reaped", flush=True)
while not os.path.exists(go + ".3"):
    time.sleep(0.01)
"""


def read_line(proc, what, timeout=30):
    """One line of proc's unbuffered stdout, within timeout (scaled) seconds."""
    line = b""

    def more():
        nonlocal line
        if select.select([proc.stdout], [], [], 0.05)[0]:
            c = os.read(proc.stdout.fileno(), 1)
            check(c, "%s: the output ended" % what)
            line += c
        return line.endswith(b"\n")
    wait_for(more, timeout=timeout, what=what)
    return line.decode()


def test_exec_under_the_same_name(wd):
    """A child seen before its exec, in its parent's job, that execs a program of the same
    name (python starting python): the exec is seen all the same (the memory's layout
    changed), and the process and its CPU go to the job its new environment names.  (Its
    process row stays with the job it was first seen in, as after a cgroup move.)"""
    job_id = 935
    go = wd.join("go")
    a = Agent(wd, interval="100ms")
    p = None
    try:
        a.wait_ticks(2)
        p = subprocess.Popen([PY, "-c", EXEC_SAME_NAME, go, str(job_id)], env=env_with(),
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, bufsize=0)
        child = int(read_line(p, "the child's pid"))
        wait_for(lambda: sql(a.db, "SELECT 1 FROM procs WHERE pid = ?", child), timeout=20,
                 what="a scan that saw the child before its exec")
        open(go + ".1", "w").close()
        # the exec seen: the job its new environment names
        wait_for(lambda: job_row(a.db, "slurm", str(job_id)), timeout=20,
                 what="job slurm:%d, seen at the exec" % job_id)
        open(go + ".2", "w").close()
        # 0.5 s of CPU: on a busy machine, a share of a core for many seconds
        before_ms, cpu_ms = (int(x) for x in read_line(p, "the child's CPU",
                                                      timeout=60).split())
        eq(read_line(p, "the parent's reap"), "reaped\n", "the parent reaped the child")
        a.wait_ticks(2)  # a tick that saw the parent after it reaped the child
        open(go + ".3", "w").close()
        eq(p.wait(timeout=30), 0, "the forking python")
        row = wait_job_end(a.db, "slurm", str(job_id))
    finally:
        if p and p.poll() is None:
            p.kill()
            p.wait()
        eq(a.stop(), 0, "agent exit status")
    job = row[0]
    check(sql(a.db, "SELECT 1 FROM procs WHERE pid = ?", child), "the child has a process row")
    eq(sql(a.db, "SELECT max(nprocs) FROM job_samples WHERE job_id = ?", job), [(1,)],
       "job slurm:%d has one process, the child" % job_id)
    # what it used between its exec and the scan that saw it is its parent's job's, as
    # after a cgroup move: at most what it used before GO.2 (that scan came first)
    cpu = job_cpu_ms(a.db, job)
    print("job slurm:%d: %d CPU-ms stored; the child used %d ms, %d of them before GO.2"
          % (job_id, cpu, cpu_ms, before_ms))
    check(cpu_ms - before_ms - (0.05 * cpu_ms + 40) <= cpu <= cpu_ms + 0.05 * cpu_ms + 40,
          "job slurm:%d has %d ms, the child used %d ms (%d before the scan that saw its"
          " exec)" % (job_id, cpu, cpu_ms, before_ms))


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


def test_sleeping_process_moved_is_seen_when_it_runs(wd):
    """A process that sleeps through its move keeps its job until it runs (or
    until JOBS_CGROUP_IDLE_MS, 60 s): asleep it uses nothing, and its cgroup
    file is not read again at each due refresh (10 s) of a thousand sleepers.
    It runs: the next tick puts it in the job of its cgroup."""
    job_a, job_b = 937, 938
    top, leaf = make_job_cgroup(wd, job_b)
    if not top:
        return
    a = Agent(wd, interval="100ms")
    p = None

    def pids(job):
        d = json.loads(a.get("/api/v1/jobs/slurm:%d" % job, expect=None))
        return [q["pid"] for q in d.get("processes", [])]
    try:
        # says it is ready, then reads a line, runs a little, and sleeps again
        p = subprocess.Popen(
            [PY, "-c", "import sys, time\n"
             "print('ready', flush=True)\n"
             "for line in sys.stdin:\n"
             "    t = time.process_time() + 0.2\n"
             "    while time.process_time() < t: pass\n"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env_with(SLURM_JOB_ID=job_a),
            text=True)
        eq(p.stdout.readline().strip(), "ready", "the sleeper started")
        wait_for(lambda: pids(job_a) == [p.pid], what="the sleeper in job A")

        def ran_ns():
            with open("/proc/%d/schedstat" % p.pid) as f:
                return int(f.read().split()[0])

        def asleep_since_a_tick():
            # blocked on its read, not a nanosecond run across two ticks (startup is over)
            before = ran_ns()
            a.wait_ticks(2)
            return proc_state(p.pid) == "S" and ran_ns() == before
        wait_for(asleep_since_a_tick, what="the sleeper asleep")
        with open(os.path.join(leaf, "cgroup.procs"), "w") as f:
            f.write("%d\n" % p.pid)
        # past a due refresh (PTREE_FULL_REFRESH_MS) asleep: still job A's
        a.wait_ticks(int(12 / 0.1), timeout=60)
        eq(proc_state(p.pid), "S", "asleep")
        eq(pids(job_a), [p.pid], "asleep after the move: still in job A")
        p.stdin.write("go\n")
        p.stdin.flush()
        wait_for(lambda: pids(job_b) == [p.pid], timeout=20, what="in job B once it ran")
    finally:
        if p:
            p.kill()
            p.wait()
        eq(a.stop(), 0, "agent exit status")
        remove_cgroup_tree(top)


def test_cgroup_move_without_exec(wd):
    """A busy process moved into job B's cgroup: job A keeps what it used before, B the
    rest, and the move is seen at the first tick after it."""
    job_a, job_b = 933, 934
    top, leaf = make_job_cgroup(wd, job_b)
    if not top:
        return
    pid_file = wd.join("worker.pid")
    a = Agent(wd, interval="100ms")
    p = pid = None
    try:
        a.wait_ticks(2)
        p = spawn([helper("retitle"), "--seconds", "3", "--pid-file", pid_file],
                  env=env_with(SLURM_JOB_ID=job_a))
        wait_for(lambda: os.path.exists(pid_file), what="the worker's pid file")
        with open(pid_file) as f:
            pid = int(f.read())
        a.wait_ticks(5)
        # moved while it runs, then stopped until the agent saw the move: what it used
        # until the agent saw it (job A's, as the agent credits a move) is what it had
        # used when it stopped, read here; the stop (a new state) or its running since
        # the last tick has the next tick read its cgroup again
        before = stat_cpu_ms(pid)
        with open(os.path.join(leaf, "cgroup.procs"), "w") as f:
            f.write("%d\n" % pid)
        os.kill(pid, signal.SIGSTOP)
        after = stat_cpu_ms(pid)
        stopped_ms = int(time.time() * 1000)
        with open("/proc/%d/cgroup" % pid) as f:
            check("job_%d/step_0" % job_b in f.read(), "the worker is in job B's cgroup")
        row_b = wait_for(lambda: job_row(a.db, "slurm", str(job_b)), timeout=20,
                         what="job B, seen at the move")
        os.kill(pid, signal.SIGCONT)
        reaped_after_ticks(a, p, pid)
        rc, out, err = settle(p)
        eq(rc, 0, "js-retitle: %s" % err)
        w = helper_json(out)
        row_a = wait_job_end(a.db, "slurm", str(job_a))
        row_b = wait_job_end(a.db, "slurm", str(job_b))
    finally:
        if pid:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        if p and p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
        eq(a.stop(), 0, "agent exit status")
        remove_cgroup_tree(top)
    # seen at the first tick that started after the move and the stop, or earlier
    first_b = sql(a.db, "SELECT min(ts_ms) FROM job_samples WHERE job_id = ?", row_b[0])[0][0]
    next_tick = sql(a.db, "SELECT min(ts_ms) FROM host_samples WHERE ts_ms > ?",
                    stopped_ms + 1)[0][0]
    check(first_b <= next_tick, "job B's first sample at %d, the first tick after the move"
          " at %d" % (first_b, next_tick))
    cpu_a, cpu_b = job_cpu_ms(a.db, row_a[0]), job_cpu_ms(a.db, row_b[0])
    moved_at = (before + after) / 2
    print("job A %d CPU-ms (the worker had used %d..%d at the move), job B %d (of %d in all)"
          % (cpu_a, before, after, cpu_b, w["cpu_ms"]))
    near_ms(cpu_a, moved_at, "job A against what the worker had used when it moved")
    near_ms(cpu_b, w["cpu_ms"] - moved_at, "job B against what the worker used after it moved")
    near_ms(cpu_a + cpu_b, w["cpu_ms"], "jobs A + B vs the worker's rusage")
    cg = sql(a.db, "SELECT cgroup FROM jobs WHERE id = ?", row_b[0])[0][0]
    check(cg.endswith("/slurmstepd.scope/job_%d" % job_b), "job B's cgroup %r" % cg)


run_tests(globals())
