"""The agent reading every process through the kernel's task iterator (a BPF
program: as root, in the first pid namespace), beside an agent told not to
(JOBSCOPE_NO_BPF=1, each process's /proc/PID/schedstat): a job's process of three
threads, asleep, then one thread of it running, has in both agents' stores the CPU
time and threads that /proc says of it, read by this test, and in the iterator's the
run-queue wait of its threads too, since the job had it (reading schedstat, at most
that).

This test runs in the machine's pid namespace (tests/meson.build, host_pidns): the
iterator names processes as that namespace numbers them.  Both agents see every
process of the machine; the test looks at its own job's only."""
import ctypes
import os
import subprocess
import sys

from harness import run_tests, check, eq, wait_for
from agent_harness import Agent, sql, env_with, proc_state

PY = sys.executable
HZ = os.sysconf("SC_CLK_TCK")
PID_NS_INIT_INO = 0xEFFFFFFC  # the first pid namespace's inode (PROC_PID_INIT_INO)

# three threads: each burns its CPU, then blocks on stdin; a line wakes one of them,
# which burns 0.1 s of CPU and blocks again
SLEEPER = """
import sys, threading, time
def burn(s):
    t = time.thread_time() + s
    while time.thread_time() < t:
        pass
def worker(s):
    burn(s)
    for line in sys.stdin:
        burn(0.1)
ts = [threading.Thread(target=worker, args=(0.05 * (i + 1),)) for i in range(2)]
for t in ts:
    t.start()
burn(0.05)
print("ready", flush=True)
for t in ts:
    t.join()
"""


def iterator_expected():
    """Whether this machine lets root load the iterator, as far as the test can tell
    without loading it: root, the first pid namespace, the kernel's BTF, libbpf1."""
    try:
        ctypes.CDLL("libbpf.so.1")
    except OSError:
        return False
    return (os.geteuid() == 0 and os.stat("/proc/self/ns/pid").st_ino == PID_NS_INIT_INO
            and os.path.exists("/sys/kernel/btf/vmlinux"))


def proc_threads(pid):
    """(run ns, wait ns, threads, every thread asleep) from /proc/PID/task/*/schedstat."""
    run = wait = n = 0
    asleep = True
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
            r, w = f.read().split()[:2]
        run += int(r)
        wait += int(w)
        n += 1
        with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
            if f.read().rsplit(")", 1)[1].split()[0] != "S":
                asleep = False
    return run, wait, n, asleep


def proc_cpu_ms(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) * 1000 // HZ, int(fields[12]) * 1000 // HZ)


def last_row(db, pid, job_id):
    """The agent's last proc_samples row of pid, and its job's last cpu_wait_ms."""
    rows = sql(db, "SELECT s.user_ms, s.system_ms, s.threads FROM proc_samples s"
               " JOIN procs p ON p.id = s.proc_id WHERE p.pid = ? ORDER BY s.ts_ms DESC"
               " LIMIT 1", pid)
    wait = sql(db, "SELECT s.cpu_wait_ms FROM job_samples s JOIN jobs j ON j.id = s.job_id"
               " WHERE j.scheduler = 'slurm' AND j.job_id = ? ORDER BY s.ts_ms DESC LIMIT 1",
               str(job_id))
    return (rows[0] if rows else None), (wait[0][0] if wait else None)


def test_iterator_figures_match_proc(wd):
    job = 90000 + os.getpid() % 9000
    on = Agent(wd, interval="100ms", name="bpf")
    off = Agent(wd, interval="100ms", db=wd.join("off.db"), name="nobpf",
                env=dict(os.environ, JOBSCOPE_NO_BPF="1"))
    p = None
    try:
        on.wait_ticks(1)  # /metrics is rendered at a tick
        off.wait_ticks(1)
        eq(off.metrics()[("jobscope_agent_task_iterator", frozenset())], 0.0,
           "JOBSCOPE_NO_BPF=1: schedstat")
        used = on.metrics()[("jobscope_agent_task_iterator", frozenset())]
        if iterator_expected():
            eq(used, 1.0, "root, first pid namespace, BTF and libbpf1: the task iterator")
        elif used == 0.0:
            print("no task iterator here: both agents read schedstat")
        p = subprocess.Popen([PY, "-c", SLEEPER], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=env_with(SLURM_JOB_ID=job), text=True)
        eq(p.stdout.readline().strip(), "ready", "the sleeper started")

        def settled():
            """Asleep, every thread, across two ticks of both agents: what /proc says
            now is what each agent read at its last tick."""
            before = proc_threads(p.pid)
            on.wait_ticks(2)
            off.wait_ticks(2)
            after = proc_threads(p.pid)
            return after if before[3] and after[3] and before[:3] == after[:3] else None

        # the wait the sleeper had when it became the job's: the fork ran in the test's
        # own job (its session) until exec gave it SLURM_JOB_ID, and each job keeps what
        # it used while it was its; on a loaded machine, tens of ms of run-queue wait
        offset = {}
        for step in ("asleep", "one thread ran"):
            run_ns, wait_ns, threads, _ = wait_for(settled, what="the sleeper asleep")
            eq(threads, 3, "three threads")
            user_ms, system_ms = proc_cpu_ms(p.pid)
            check(run_ns >= 150 * 1000000, "it ran 0.15 s at least: %d ns" % run_ns)
            for a in (on, off):
                # within ticks, not a time: each agent read it asleep at two ticks
                # already; a stat left unread would be read again only after 10 s
                # (PTREE_FULL_REFRESH_MS: 100 ticks)
                last_tick = a.ticks() + 5
                exact = (a is on or used == 0.0) and a in offset
                proc_wait_ms = wait_ns // 1000000

                def caught_up():
                    row, wait = last_row(a.db, p.pid, job)
                    # reading schedstat, a process's threads' wait is read again when its
                    # stat moved: a wait at the end of its run that moved no clock tick of
                    # stat (preempted on a loaded machine, then a few ms more) shows at its
                    # next run.  The iterator has every thread's, every tick: what they
                    # waited since the job had it, exactly.
                    wait_ok = wait == proc_wait_ms - offset[a] if exact else \
                        wait is not None and wait <= proc_wait_ms
                    if row == (user_ms, system_ms, 3) and wait_ok:
                        return True
                    check(a.ticks() <= last_tick,
                          "%s (%s): its figures as /proc says them (user %d ms, system %d ms,"
                          " 3 threads, wait %d ms less %r ms the job's was short at the first step) within"
                          " 5 ticks; the store's: %r; its task iterator metric %r; its log: %s"
                          % (a.log, step, user_ms, system_ms, proc_wait_ms, offset.get(a),
                             last_row(a.db, p.pid, job),
                             a.metrics().get(("jobscope_agent_task_iterator", frozenset())),
                             a.stderr()[-1500:]))
                    return False
                wait_for(caught_up, timeout=30, what="%s: its figures" % a.log)
                if step == "asleep":
                    a.wait_ticks(2)  # its job's row of the tick that read it asleep too
                    offset[a] = proc_wait_ms - last_row(a.db, p.pid, job)[1]
            if step == "asleep":
                p.stdin.write("go\n")
                p.stdin.flush()
                # the line read: one thread ran; wait for its 0.1 s to show in /proc
                wait_for(lambda: proc_threads(p.pid)[0] >= run_ns + 100 * 1000000,
                         what="a thread ran")
        eq(proc_state(p.pid), "S", "asleep at the end")
    finally:
        if p:
            p.kill()
            p.wait()
        eq(on.stop(), 0, "agent exit status")
        eq(off.stop(), 0, "agent (JOBSCOPE_NO_BPF=1) exit status")


if __name__ == "__main__":
    run_tests(globals())
