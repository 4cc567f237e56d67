#!/usr/bin/env python3
"""`jobscope report` on real workloads: each report names the right class,
period and trend; history by user, node, job, hour and weekday; the same
report from a head; clear errors for questions that make no sense."""
import contextlib
import json
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import (JOBSCOPE, V2_WEIGHT, check, eq, helper, jobscope,  # noqa: E402
                     machine_cpus, near, run, run_tests, scaled)
from head_harness import Head, skip_on_pg  # noqa: E402


def report(db, *args):
    r = jobscope("report", "--db", db, *args)
    eq(r.returncode, 0, "report exit (stderr: %s)" % r.stderr)
    return r.stdout


def report_json(db, *args):
    return json.loads(report(db, "--format", "json", *args))


def no_head_here():
    """True (and says so) in the *_pg run of this test: a case without a head is the
    same on either head store, and the SQLite run has it."""
    return skip_on_pg("no head in this case: the SQLite run has it")


def kinds(rep):
    return [v["kind"] for v in rep["verdicts"]]


def profile(wd, cmd, interval="100ms", rc=0):
    db = wd.join("run.db")
    r = run(wd, cmd, opts=("--interval", interval), db=db)
    eq(r.rc, rc, "run exit (stderr: %s)" % r.stderr)
    return db, report_json(db)


def test_periodic_workload_is_training_with_its_period(wd):
    if no_head_here():
        return
    # busy 60% of every 1.5 s with 64 MiB touched, then idle with it freed.  Load
    # beside it blurs the cycle (at a load of 20, confidence 0.46, or no period at
    # all): in machine_cpus() its busy part is busy, and jobscope run's ticks on time
    with machine_cpus("a periodic workload"):
        db, rep = profile(wd, [helper("pattern"), "--period", "1.5", "--seconds", "12",
                               "--mib", "64"])
    a = rep["analysis"]
    near(a["period_s"], 1.5, 0.05, "period")
    check(a["period_confidence"] >= 0.5, "confidence %s" % a["period_confidence"])
    eq(a["cyclic"], True, "cyclic pattern flag")
    eq(a["job_type"], "training", "job type (%s)" % a["job_type_reason"])
    check("period" in kinds(rep), "a period verdict: %s" % kinds(rep))
    text = report(db)
    check(text.index("Verdicts") < text.index("  CPU "), "verdicts come first")
    check("Period    1.5" in text, "period line in text:\n" + text)


# A job must run 10 s for the report to judge it (classify.c's MIN_DURATION_S).
JUDGED_S = 10.5

# The I/O-bound job, argv PREFIX SECONDS CPU_MS PROCS: one writer per CPU it may
# use, each pinned to its CPU, each burning CPU_MS of CPU time and then writing
# 64 KiB with O_DIRECT|O_DSYNC (to the 16 blocks of a file PREFIX.CPU of its own,
# over and over), for SECONDS.  It joins the cgroup whose cgroup.procs file is
# PROCS ("-": none) before it forks, so every writer is in it.  Prints its own
# getrusage and the writes made, as one JSON line.
IO_WRITER = r"""
import mmap, os, resource, sys, time
prefix, seconds, cpu_ms, procs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
if procs != "-":
    with open(procs, "w") as f:
        f.write(str(os.getpid()))
cpus = sorted(os.sched_getaffinity(0))
end = time.monotonic() + seconds
counts_r, counts_w = os.pipe()
kids, mine = [], cpus[0]
for cpu in cpus[1:]:
    pid = os.fork()
    if pid == 0:
        kids, mine = [], cpu
        break
    kids.append(pid)
os.sched_setaffinity(0, {mine})
block = mmap.mmap(-1, 64 * 1024)  # page-aligned, as O_DIRECT wants
block.write(b"\x5a" * len(block))
fd = os.open("%s.%d" % (prefix, mine), os.O_WRONLY | os.O_CREAT | os.O_DIRECT | os.O_DSYNC,
             0o600)
writes = 0
while time.monotonic() < end:
    t = time.thread_time()
    while time.thread_time() - t < cpu_ms / 1000:
        pass
    os.pwrite(fd, block, (writes % 16) * len(block))
    writes += 1
os.close(fd)
if mine != cpus[0]:
    os.write(counts_w, b"%d\n" % writes)
    os._exit(0)
for pid in kids:
    os.waitpid(pid, 0)
os.close(counts_w)
with os.fdopen(counts_r) as f:
    writes += sum(int(line) for line in f)
ru = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
print('{"writers": %d, "writes": %d, "cpu_seconds": %.3f}'
      % (len(cpus), writes, sum(r.ru_utime + r.ru_stime for r in ru)), flush=True)
"""
WRITE_BPS_PER_WRITER = 1 << 20  # 64 KiB 16 times a second
WRITER_CPU_MS = 10              # of the 62.5 ms each write takes at that rate
WRITER_CPU_MS_UNLIMITED = 1     # writes at the disk's own speed: a shorter burn
BLKIO_V1 = "/sys/fs/cgroup/blkio"
CGROUP_V2 = "/sys/fs/cgroup"


def disk_of(path):
    """'MAJ:MIN' of the disk that holds path (a partition's disk), or None."""
    st = os.stat(path)
    dev = "/sys/dev/block/%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
    if not os.path.exists(dev):
        return None  # tmpfs, overlayfs, btrfs: on no one block device
    if os.path.exists(os.path.join(dev, "partition")):
        dev = os.path.dirname(os.path.realpath(dev))
    with open(os.path.join(dev, "dev")) as f:
        return f.read().strip()


def write_file(path, text):
    with open(path, "w") as f:
        f.write(text)


@contextlib.contextmanager
def writes_limited(path, bps):
    """A new cgroup in which writes to the disk that holds path go at bps bytes/s at
    most (cgroup v1 blkio.throttle.write_bps_device, v2 io.max).  Yields the
    cgroup.procs file a process writes its pid to, to join it; or None, said why,
    where no such limit can be made.  Run it inside machine_cpus(): the lock keeps
    two of these (and the cleanup of empty ones an earlier test left) apart."""
    disk, why, cg = disk_of(path), None, None
    v1 = os.path.exists(os.path.join(BLKIO_V1, "blkio.throttle.write_bps_device"))
    try:
        with open(os.path.join(CGROUP_V2, "cgroup.controllers")) as f:
            v2 = "io" in f.read().split()
    except OSError:
        v2 = False
    if os.geteuid() != 0:
        why = "not root"
    elif disk is None:
        why = "%s is on no block device" % path
    elif not v1 and not v2:
        why = "no cgroup I/O controller"
    try:
        if not why:
            parent = os.path.join(BLKIO_V1 if v1 else CGROUP_V2, "jobscope-test")
            os.makedirs(parent, exist_ok=True)
            if not v1:
                write_file(os.path.join(CGROUP_V2, "cgroup.subtree_control"), "+io")
                write_file(os.path.join(parent, "cgroup.subtree_control"), "+io")
            for name in os.listdir(parent):  # what an earlier test left, empty
                if name.startswith("io-"):
                    with contextlib.suppress(OSError):
                        os.rmdir(os.path.join(parent, name))
            cg = os.path.join(parent, "io-" + secrets.token_hex(6))
            os.mkdir(cg)
            if v1:
                write_file(os.path.join(cg, "blkio.throttle.write_bps_device"),
                           "%s %d" % (disk, bps))
            else:
                if os.path.exists(os.path.join(cg, "cpu.weight")):
                    # the writers leave the test's cgroup, not its CPU weight
                    write_file(os.path.join(cg, "cpu.weight"), str(V2_WEIGHT))
                write_file(os.path.join(cg, "io.max"), "%s wbps=%d" % (disk, bps))
    except OSError as e:
        why = "cannot limit writes to %s: %s" % (disk, e.strerror)
    if why:
        print("the writers' disk is not made slow (%s): other load counts" % why, flush=True)
    try:
        yield None if why else os.path.join(cg, "cgroup.procs")
    finally:
        if cg:
            with contextlib.suppress(OSError):  # refused while a writer still runs
                os.rmdir(cg)


def test_io_bound_writer(wd):
    if no_head_here():
        return
    # Writers that wait on storage most of the time, whatever else the machine does:
    # their disk held to 1 MiB/s each by a cgroup I/O limit, so each 64 KiB write
    # waits ~50 ms for 10 ms of CPU.  The report sees that wait in the node's PSI
    # ("some" task stalled on I/O), which counts per CPU: hence a writer on every
    # CPU (iowait, the other sign, is never seen on CPUs kept busy by others).  In
    # machine_cpus() the writers get their CPU at once, so the wait is the disk's.
    with machine_cpus("an I/O-bound writer"):
        ncpus = len(os.sched_getaffinity(0))
        with writes_limited(wd.path, ncpus * WRITE_BPS_PER_WRITER) as procs:
            cpu_ms = WRITER_CPU_MS if procs else WRITER_CPU_MS_UNLIMITED
            db = wd.join("io.db")
            r = run(wd, [sys.executable, "-c", IO_WRITER, wd.join("io.bin"), str(JUDGED_S),
                         str(cpu_ms), procs or "-"], opts=("--interval", "200ms"), db=db)
    eq(r.rc, 0, "run exit (stderr: %s)" % r.stderr)
    own = r.helper_json()
    rep = report_json(db)
    a = rep["analysis"]
    eq(a["bottleneck"], "io", "bottleneck (%s; the writers: %s)" % (a["bottleneck_reason"], own))
    check(a["job_type"] != "training", "not training")
    check("bottleneck" in kinds(rep), "a bottleneck verdict")
    # the CPU the verdict weighs is the writers' own
    near(rep["cpu"]["cpu_seconds"], own["cpu_seconds"], 0.05,
         "cpu_seconds vs the writers' getrusage")


def test_cpu_bound_workload(wd):
    if no_head_here():
        return
    # one thread spinning on the one core it may use (jobscope and all); in
    # machine_cpus() that core is the thread's, whatever else runs on it
    db = wd.join("cpu.db")
    cpu = str(min(os.sched_getaffinity(0)))
    with machine_cpus("a CPU-bound workload"):
        r = subprocess.run(["taskset", "-c", cpu, JOBSCOPE, "run", "--db", db, "--interval",
                            "200ms", "--report", "none", "--", helper("busy"), "--seconds",
                            str(JUDGED_S), "--threads", "1"],
                           capture_output=True, text=True, timeout=scaled(120))
    eq(r.returncode, 0, "run exit (stderr: %s)" % r.stderr)
    rep = report_json(db)
    a = rep["analysis"]
    eq(a["bottleneck"], "cpu", "bottleneck (%s)" % a["bottleneck_reason"])
    eq(a["job_type"], "batch", "job type (%s)" % a["job_type_reason"])
    eq(a["efficiency"]["cpu"]["cores_reserved"], 1, "cores it could use")
    eq(a["efficiency"]["cpu"]["cores_from"], "affinity", "cores from")
    check(a["scaling"]["cpu"].startswith("more cores may help"), a["scaling"]["cpu"])
    eq(a["period_s"], None, "no period in a flat load")
    own = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")][-1]
    near(rep["cpu"]["cpu_seconds"], own["cpu_seconds"], 0.05, "cpu_seconds vs js-busy's getrusage")


def test_slow_memory_leak_forecast(wd):
    if no_head_here():
        return
    # 20 MiB/s, never freed: the forecast gives the time to the host's memory.  The
    # helper allocates 2 MiB on a 100 ms schedule of its clock, catching up after a
    # late wake, so the rate is its clock's whatever the load
    db, rep = profile(wd, [helper("pattern"), "--leak", "20", "--seconds", str(JUDGED_S)])
    t = rep["analysis"]["trend"]["memory"]
    eq(t["growing"], True, "memory growing")
    near(t["slope_bytes_per_s"], 20 * 1024 * 1024, 0.10, "leak rate")
    limit = rep["memory"]["host_total_bytes"]
    eq(t["limit_bytes"], limit, "the limit is the host's memory (nothing reserved)")
    # the forecast from the measured slope, not from the rate the helper aimed at: both
    # within 10 % of each other, the two tolerances would add up (a busy run: slope 9.7 %
    # under 20 MiB/s, the time 10.7 % over)
    near(t["time_to_limit_s"], (limit - t["level_bytes"]) / t["slope_bytes_per_s"], 0.02,
     "time to exhaustion")
    check("mem_growing" in kinds(rep), "a leak verdict: %s" % kinds(rep))
    v = [v for v in rep["verdicts"] if v["kind"] == "mem_growing"][0]
    check("out of memory" in v["message"], v["message"])
    check(v["evidence"]["time_to_limit_s"] > 0, "evidence carries the forecast")


def test_too_short_to_judge(wd):
    if no_head_here():
        return
    db, rep = profile(wd, ["true"])
    a = rep["analysis"]
    eq(a["too_short"], True, "too short")
    eq(a["bottleneck"], None, "no bottleneck guessed")
    eq(a["job_type"], None, "no job type guessed")
    eq(a["period_s"], None, "no period")
    eq(kinds(rep), ["too_short"], "the one verdict says so")


def two_runs(wd):
    db = wd.join("two.db")
    for secs in ("1", "1.5"):
        r = run(wd, [helper("busy"), "--seconds", secs], opts=("--interval", "100ms"), db=db)
        eq(r.rc, 0, "run exit")
    return db


def test_history_by_user_hour_weekday_and_job(wd):
    if no_head_here():
        return
    db = two_runs(wd)
    cpu = [json.loads(report(db, str(i), "--format", "json"))["cpu"]["cpu_seconds"]
       for i in (1, 2)]
    h = report_json(db, "--by", "user", "--since", "1d")
    eq(h["kind"], "history", "kind")
    eq(len(h["rows"]), 1, "one user")
    row = h["rows"][0]
    eq(row["jobs"], 2, "jobs")
    near(row["core_hours_used"], sum(cpu) / 3600, 0.02, "core-hours used")
    check(row["core_hours_idle"] >= 0, "idle never negative")
    eq(row["gpu_hours_used"], None, "no GPU: null, not 0")
    eq(h["total"]["jobs"], 2, "total jobs")
    by_hour = report_json(db, "--by", "hour", "--since", "1d")
    near(sum(r["core_hours_used"] for r in by_hour["rows"]), sum(cpu) / 3600, 0.02,
     "hours add up to the total")
    wk = report_json(db, "--by", "weekday", "--since", "2d")
    check(all(r["key"] in ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
          for r in wk["rows"]), "weekday names: %s" % wk["rows"])
    user = os.environ.get("USER") or subprocess.run(
    ["id", "-un"], capture_output=True, text=True).stdout.strip()
    jobs = report_json(db, "--user", user)
    eq(jobs["by"], "job", "--user alone lists jobs")
    eq(len(jobs["rows"]), 2, "two jobs")
    csv = report(db, "--by", "node", "--format", "csv").splitlines()
    check(csv[0].startswith("node,jobs,wall_hours,core_hours_reserved"), csv[0])
    eq(len(csv), 3, "header, one node, total")
    text = report(db, "--by", "user")
    check("core-h" in text and "total" in text, text)
    html = report(db, "--by", "user", "--format", "html")
    check(html.startswith("<!DOCTYPE html>") and "<script" not in html, "history HTML")
    nobody = report_json(db, "--user", "nobody-at-all")
    eq(nobody["rows"], [], "no jobs: no rows")
    eq(nobody["total"]["jobs"], 0, "no jobs")


def test_job_csv_rows_per_bucket(wd):
    if no_head_here():
        return
    db = two_runs(wd)
    lines = report(db, "1", "--format", "csv").splitlines()
    head = lines[0].split(",")
    eq(head[:3], ["time", "ts_ms", "span_ms"], "CSV header")
    check("cores" in head and "rss_bytes" in head, "metric columns: %s" % head)
    check(all(len(l.split(",")) == len(head) for l in lines), "same width")
    # a row per 100 ms bucket (the sample interval) from the run's first sample to
    # its last, as the store holds them: missed ticks leave rows, not fewer of them
    ts = [int(l.split(",")[1]) for l in lines[1:]]
    eq({int(l.split(",")[2]) for l in lines[1:]}, {100}, "span of every row")
    first, last = sqlite3.connect(db).execute(
        "SELECT min(ts_ms), max(ts_ms) FROM job_samples WHERE job_id = 1").fetchone()
    eq(ts, list(range(first, last + 1, 100)), "a row per bucket from the first sample (%d)"
       " to the last (%d)" % (first, last))
    check(len(ts) >= 5, "a 1 s run in rows of 100 ms: %d" % len(ts))


def proc_cpu_ticks(pid):
    """utime + stime of a process, in clock ticks, from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def test_contended_cpus_are_not_the_jobs_fault(wd):
    """A parallel job beside as many busy loops as the machine has CPUs: other work
    held the CPUs, so the report says cpu_contended, with the others' cores measured
    here from the loops' own CPU time, and gives no "make it parallel" or "request
    fewer cores" advice from figures that are the machine's."""
    if no_head_here():
        return
    # no machine_cpus(): the loops take their share beside the rest of the suite, and
    # the others' cores measured include them whatever else runs
    ncpu = len(os.sched_getaffinity(0))
    loops = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(ncpu)]
    try:
        t0, c0 = time.monotonic(), sum(proc_cpu_ticks(p.pid) for p in loops)
        db, rep = profile(wd, [helper("busy"), "--seconds", str(JUDGED_S), "--threads",
                               str(ncpu)])
        t1, c1 = time.monotonic(), sum(proc_cpu_ticks(p.pid) for p in loops)
    finally:
        for p in loops:
            p.kill()
            p.wait()
    loops_cores = (c1 - c0) / os.sysconf("SC_CLK_TCK") / (t1 - t0)
    c = rep["analysis"]["contention"]
    print("contention: %r; the loops' own %.2f cores" % (c, loops_cores))
    eq(c["cpu_contended"], True, "cpu_contended (%r)" % c)
    check("cpu_contended" in kinds(rep), "a cpu_contended verdict: %s" % kinds(rep))
    check(c["host_cpu_busy_pct"] >= 90, "the node's CPUs busy: %r" % c)
    check(c["other_cores_avg"] >= 0.8 * loops_cores,
          "other work's cores %.2f, the loops' own %.2f" % (c["other_cores_avg"], loops_cores))
    # its own threads' run-queue wait (schedstat): busy threads are always runnable, so
    # what they did not run they waited: run + wait = its threads, within 20 %
    ran = rep["cpu"]["cores_avg"]
    check(c["wait_cores_avg"] is not None and c["wait_cores_avg"] > 0.2,
          "its threads waited: %r" % c)
    near(ran + c["wait_cores_avg"], ncpu, 0.2,
         "cores it ran (%.2f) + cores' worth it waited (%.2f) = its %d threads" %
         (ran, c["wait_cores_avg"], ncpu))
    for v in rep["verdicts"]:
        advice = v["advice"] or ""
        check("parallel" not in advice and not advice.startswith("request"),
              "%s: advice drawn from contended figures: %r" % (v["kind"], advice))
    check(rep["analysis"]["scaling"]["cpu"].startswith("cannot be judged"),
          rep["analysis"]["scaling"]["cpu"])


def test_chart_gaps_are_gaps_in_the_data(wd):
    """A CSV (and so every chart) row is empty only where the store's ticks have a
    gap: ticks ~1 interval apart but jittered put two in one bucket and none in the
    next, and that bucket is filled; under load the jitter is large."""
    if no_head_here():
        return
    db = wd.join("jitter.db")
    # 2 s at 50 ms: many ticks, each late or early by what the machine makes them
    r = run(wd, [helper("busy"), "--seconds", "2"], opts=("--interval", "50ms"), db=db)
    eq(r.rc, 0, "run exit")
    lines = report(db, "1", "--format", "csv").splitlines()
    head = lines[0].split(",")
    col = head.index("host_mem_used_bytes")
    ticks = [t for (t,) in sqlite3.connect(db).execute(
        "SELECT ts_ms FROM host_samples ORDER BY ts_ms")]
    rows = [l.split(",") for l in lines[1:]]
    empty = 0
    for row in rows:
        if row[col] != "":
            continue
        empty += 1
        start, span = int(row[1]), int(row[2])
        before = [t for t in ticks if t < start]
        after = [t for t in ticks if t >= start + span]
        check(before and after, "an empty first or last row at %d" % start)
        check(after[0] - before[-1] >= 1.5 * 50,
              "an empty bucket at %d with ticks %d ms apart around it (%d, %d): no gap in "
              "the data" % (start, after[0] - before[-1], before[-1], after[0]))
    check(len(rows) >= 20, "rows of 50 ms over 2 s: %d" % len(rows))


def test_bad_questions_are_usage_errors(wd):
    if no_head_here():
        return
    db = two_runs(wd)
    for args, what in ((["--by", "month"], "bad --by"),
                       (["--since", "yesterday"], "bad --since"),
                       (["--since", "1h", "--until", "2h"], "since after until"),
                       (["1", "--by", "user"], "a run id and --by"),
                       (["--by", "user", "--plot", wd.join("x.png")], "--plot history"),
                       (["--plot", wd.join("x.bmp")], "plot extension"),
                       (["--format", "xml"], "bad format"),
                       ([], "two runs, none named")):
        r = jobscope("report", "--db", db, *args)
        eq(r.returncode, 2, "%s: exit (stderr %s)" % (what, r.stderr))
        check(r.stderr.strip(), "%s: a message" % what)
    r = jobscope("report", "--db", db, "--job", "slurm:999")
    eq(r.returncode, 1, "unknown job")
    check("no job" in r.stderr, r.stderr)


def test_report_from_a_head(wd):
    if skip_on_pg("the head serves a SQLite store made by jobscope run, copied"):
        return
    db = two_runs(wd)
    head_db = wd.join("head.db")
    shutil.copy(db, head_db)
    head = Head(wd, db=head_db)
    try:
        # a run id is a row of the store asked: a head is asked by job key
        for args, remote_args in ((["last"], ["last"]),
                                  (["2", "--format", "json"], ["--job", "run:2", "--format", "json"]),
                                  (["--by", "user", "--since", "1d", "--format", "csv"], None)):
            local = report(head_db, *args)
            remote = jobscope("report", "--head", head.url, *(remote_args or args))
            eq(remote.returncode, 0, "head report exit: %s" % remote.stderr)
            if "--by" in args:
                # the window ends at "now", a few ms apart: compare the shape
                eq(remote.stdout.splitlines()[0], local.splitlines()[0], "CSV header")
                eq(len(remote.stdout.splitlines()), len(local.splitlines()), "rows")
            else:
                eq(remote.stdout, local, "the head's report is the store's")
        r = jobscope("report", "--head", head.url, "2")
        eq(r.returncode, 2, "a run id given to a head (stderr %s)" % r.stderr)
        check("--job KEY" in r.stderr, r.stderr)
        r = jobscope("report", "--head", head.url, "--job", "slurm:424242")
        eq(r.returncode, 1, "unknown job from a head")
        check("no job" in r.stderr, r.stderr)
        # said in words, and without the path of the head's store on its machine
        check("no job 'slurm:424242' in 'the head's store'" in r.stderr, r.stderr)
        check(head_db not in r.stderr and '{"error"' not in r.stderr, r.stderr)
    finally:
        head.kill()


if __name__ == "__main__":
    run_tests(globals())
