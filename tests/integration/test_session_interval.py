"""A head's profiling session changes an agent's interval: the real spacing is recorded.

A real agent (configured at 1 s) streams to a real head.  Job A (a 2 s cycle:
32 MiB held, and some CPU used, for 60 % of it) starts at 1 s; a session then
makes the agent sample every 200 ms; A ends; job B (busy) starts under the
session; the session stops and B ends, at 1 s.  The agent writes an
`interval` event at its start and at each change; the head holds the same
events; jobs get the interval in effect when they start; and the reports of
both jobs, from the head's store and the agent's own summaries, judge each
sample by the interval in effect: A's cycle reads 2 s (the 200 ms ticks taken
1 s apart read 10 s), each job's CPU is its workload's own rusage.
"""
import json
import os
import signal
import subprocess
import sys
import time

from harness import helper, jobscope, machine_cpus, run_tests, check, eq, near, wait_for
from agent_harness import env_with
from head_harness import Head, node_id, start_agent, stop_agent, held, sql, store_exists


# Job A: every PERIOD s, MIB MiB mapped and touched, CPU used (0.2 of the period at
# most), the memory held until 60 % of the period, then unmapped; for SECONDS.  Its
# cycle is in its memory, whatever CPU the machine gives it (a busy machine gave
# js-pattern's CPU cycle 0.1 to 0.5 cores within one busy phase: in 50 ticks of
# 200 ms, too noisy to be found); and js-pattern --mib touches nothing (its memset
# before free is a dead store the compiler drops).  mmap, not malloc: glibc would
# keep a freed 32 MiB block in its heap after the first.
CYCLE = r"""
import mmap, sys, time
period, seconds, mib = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
start = time.monotonic()
t = start
while t < start + seconds:
    m = mmap.mmap(-1, mib << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for i in range(0, mib << 20, 4096):
        m[i] = 1
    cpu = time.process_time()
    while time.process_time() - cpu < 0.2 * period and time.monotonic() < t + 0.6 * period:
        pass
    time.sleep(max(0.0, t + 0.6 * period - time.monotonic()))
    m.close()
    time.sleep(max(0.0, t + period - time.monotonic()))
    t += period
"""


def session(head, *args):
    r = jobscope("session", *args, "--head", head.url)
    eq(r.returncode, 0, "jobscope session %s: %s" % (" ".join(args), r.stdout + r.stderr))


def start_job(job_id, cmd):
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env_with(SLURM_JOB_ID=job_id))


def cpu_of(proc):
    """Waits for a workload: its exit status and its CPU seconds (its own rusage)."""
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, ru.ru_utime + ru.ru_stime


def intervals(db, host):
    """The node's interval events: [(ts_ms, value, message)] in seq order."""
    return sql(db, "SELECT ts_ms, value, message FROM events WHERE kind = 'interval'"
                   " AND job_id IS NULL AND node_id = ? ORDER BY seq", node_id(db, host))


def report(db, key):
    r = jobscope("report", "--db", db, "--job", key, "--format", "json")
    eq(r.returncode, 0, "report %s from %s: %s" % (key, os.path.basename(db), r.stderr))
    return json.loads(r.stdout)


def job_of(db, job_id):
    return sql(db, "SELECT id, interval_ms, samples, start_ms, end_ms FROM jobs"
                   " WHERE scheduler = 'slurm' AND job_id = ?", job_id)[0]


def ticks_after(db, ts_ms):
    """The agent's ticks (host rows) after time ts_ms."""
    return sql(db, "SELECT count(*) FROM host_samples WHERE ts_ms > ?", ts_ms)[0][0]


def ticks_of(db, job_id):
    """The node's ticks (host rows) from the job's first row to its last."""
    rows = sql(db, "SELECT min(s.ts_ms), max(s.ts_ms), j.node_id FROM job_samples s"
                   " JOIN jobs j ON j.id = s.job_id WHERE j.scheduler = 'slurm'"
                   " AND j.job_id = ? GROUP BY j.node_id", job_id)
    lo, hi, node = rows[0]
    return sql(db, "SELECT count(*) FROM host_samples WHERE node_id = ? AND ts_ms BETWEEN ? AND ?",
               node, lo, hi)[0][0]


def test_session_interval_in_job_reports(wd):
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    # the point is the agent's real spacing of its ticks at 200 ms and at 1 s: the
    # head, the agent and the jobs get the machine's CPUs (tens of tests side by
    # side made the agent's wake-ups late by more than 10 % of 200 ms)
    with machine_cpus("the agent's ticks at 200 ms and 1 s"):
        _session_interval(wd)


def _session_interval(wd):
    head = Head(wd)
    agent, adb, _, errf = start_agent(wd, head, "node-a", extra=["--interval", "1s"])
    try:
        wait_for(lambda: store_exists(head.db) and
                 len(sql(head.db, "SELECT * FROM agents")) == 1, timeout=60,
                 what="the agent streaming")
        # A and B run until the test ends them, each once it has lived long enough at
        # both intervals (however long the agent took to change)
        a = start_job(961, [sys.executable, "-S", "-c", CYCLE, "2", "120", "32"])
        wait_for(lambda: sql(adb, "SELECT count(*) FROM jobs WHERE job_id = '961'")[0][0],
                 timeout=10, what="job 961 seen")
        a_start = job_of(adb, "961")[3]
        wait_for(lambda: ticks_after(adb, a_start) >= 3, timeout=10,
                 what="three ticks at 1 s in job 961's life")
        session(head, "start", "s1", "--interval", "200ms")
        wait_for(lambda: [v for _, v, _ in intervals(adb, "node-a")][-1:] == [200],
                 timeout=10, what="the agent at 200 ms")
        # 50 ticks (five cycles) of A at 200 ms: its cycle is found in those alone
        wait_for(lambda: ticks_after(adb, intervals(adb, "node-a")[-1][0]) >= 50, timeout=20,
                 what="50 ticks at 200 ms in job 961's life")
        a.send_signal(signal.SIGTERM)
        rc, cpu_a = cpu_of(a)
        eq(rc, -signal.SIGTERM, "job 961's workload, ended by the test")
        # B must be seen under the session (a job takes the interval of the tick that
        # finds it)
        b = start_job(962, [helper("busy"), "--seconds", "120"])
        wait_for(lambda: sql(adb, "SELECT count(*) FROM jobs WHERE job_id = '962'")[0][0],
                 timeout=10, what="job 962 seen")
        session(head, "stop", "s1")
        wait_for(lambda: [v for _, v, _ in intervals(adb, "node-a")][-1:] == [1000],
                 timeout=10, what="the agent back at 1 s")
        back = intervals(adb, "node-a")[-1][0]
        wait_for(lambda: ticks_after(adb, back) >= 5, timeout=15,
                 what="five ticks at 1 s after the session")
        b.send_signal(signal.SIGTERM)
        rc, cpu_b = cpu_of(b)
        eq(rc, -signal.SIGTERM, "job 962's workload, ended by the test")
        for j in ("961", "962"):
            wait_for(lambda: sql(adb, "SELECT count(*) FROM jobs j JOIN job_summaries s"
                                      " ON s.job_id = j.id WHERE j.job_id = ?", j)[0][0],
                     timeout=15, what="the end of job %s" % j)
        stopped_ms = time.time() * 1000  # the agent takes one last tick as it stops
    finally:
        eq(stop_agent(agent, errf), 0, "agent exit")
    wait_for(lambda: held(head.db, adb), timeout=30, what="the head current")
    eq(head.kill(15), 0, "head exit")

    # the events: at start, the session, back; the head holds the same
    ev = intervals(adb, "node-a")
    eq([v for _, v, _ in ev], [1000, 200, 1000], "interval events %r" % ev)
    eq(ev[1][2], "sampling every 200ms for a profiling session", "its message")
    eq(ev[2][2], "sampling every 1000ms", "back")
    eq(intervals(head.db, "node-a"), ev, "the head's interval events")
    # the ticks really came at those intervals: host rows between the events.  The
    # timer keeps a fixed grid, so a tick that wakes late makes its gap longer and the
    # next one shorter by as much: the median gap, within 10 % either way (the agent's
    # wake-ups on a busy machine are late by tens of ms; the two intervals are 5x apart)
    ts = [r[0] for r in sql(adb, "SELECT ts_ms FROM host_samples ORDER BY seq")]
    inside = [t2 - t1 for t1, t2 in zip(ts, ts[1:]) if ev[1][0] < t1 and t2 <= ev[2][0]]
    after = [t2 - t1 for t1, t2 in zip(ts, ts[1:]) if ev[2][0] < t1 and t2 < stopped_ms]
    check(len(inside) >= 30 and 180 <= sorted(inside)[len(inside) // 2] <= 220,
          "200 ms ticks during the session: %r" % inside)
    check(len(after) >= 4 and 900 <= sorted(after)[len(after) // 2] <= 1100,
          "1 s ticks after it: %r" % after)

    # jobs take the interval in effect when they start
    ja, jb = job_of(adb, "961"), job_of(adb, "962")
    eq((ja[1], jb[1]), (1000, 200), "jobs.interval_ms of A (before) and B (under the session)")
    eq((job_of(head.db, "961")[1:], job_of(head.db, "962")[1:]), (ja[1:], jb[1:]),
       "the same job rows at the head")
    check(ja[3] < ev[1][0] < ja[4], "A lived across the change to 200 ms")
    check(jb[3] < ev[2][0] < jb[4], "B lived across the change back to 1 s")

    for db in (head.db, adb):
        ra, rb = report(db, "slurm:961"), report(db, "slurm:962")
        where = os.path.basename(db)
        # a sample per tick of the job's life, at either interval; the workload's CPU
        eq(ra["sampler"]["samples"], ticks_of(db, "961"), "A's samples (%s)" % where)
        eq(rb["sampler"]["samples"], ticks_of(db, "962"), "B's samples (%s)" % where)
        near(ra["cpu"]["cpu_seconds"], cpu_a, 0.10, "A's CPU vs its rusage (%s)" % where)
        near(rb["cpu"]["cpu_seconds"], cpu_b, 0.10, "B's CPU vs its rusage (%s)" % where)
        # A's 2 s cycle, seen in its 200 ms ticks (in its memory, or its CPU)
        an = ra["analysis"]
        check(an["period_s"] is not None and abs(an["period_s"] - 2.0) <= 0.2,
              "A's period (%s): %r from %r" % (where, an["period_s"], an["period_metric"]))
        # the change is one of A's events; B's buckets are never narrower than 1 s
        eq([(e["kind"], e["value"]) for e in ra["events"] if e["kind"] == "interval"],
           [("interval", 200)], "A's events (%s)" % where)
        check(rb["timeline"]["bucket_s"] >= 1.0,
              "B's timeline after 200 ms -> 1 s (%s): %r" % (where, rb["timeline"]["bucket_s"]))
        cores = [bk["cores"] for bk in rb["timeline"]["buckets"]]
        check(all(c is not None for c in cores[:-1]), "no empty bucket in B's timeline: %r"
              % cores)
    # the agent's own summary (written when A ended) says the same
    stored = json.loads(sql(adb, "SELECT report_json FROM job_summaries WHERE job_id = ?",
                            ja[0])[0][0])
    period = stored["analysis"]["period_s"]
    check(period is not None and abs(period - 2.0) <= 0.2,
          "A's stored summary period: %r from %r" % (period, stored["analysis"]["period_metric"]))


if __name__ == "__main__":
    run_tests(globals())
