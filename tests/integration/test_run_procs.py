"""Processes as they were: every process that ran has its own row with its own
CPU and memory peak, a wrapper's included (its children's are not its own), and
short processes that start and end between two samples are counted too.

The kernel gives each process's own figures at its exit to a taskstats listener
(root only); the checks compare them with what each process measured of itself
(getrusage RUSAGE_SELF) or what /usr/bin/time -v measured of its child."""
import datetime
import os
import re

from harness import run, helper, run_tests, check, eq


def ms(iso):
    return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000


# The kernel keeps a process's RSS in per-CPU counters (file, anon and shmem pages;
# percpu_counter, folded every max(32, 2 x CPUs) pages a CPU): a reading that does not
# sum them (the high-water mark, at a fault or at the exit: wait4's and getrusage's) is
# short of or over a summed one (/proc/PID/status on recent kernels) by up to that batch
# a counter on each CPU the process ran on.  The processes measured here are pinned to
# one CPU: a batch a counter.
PAGE = os.sysconf("SC_PAGE_SIZE")
RSS_SLACK = 3 * max(32, 2 * os.cpu_count()) * PAGE
ONE_CPU = ["taskset", "-c", str(min(os.sched_getaffinity(0)))]


def by_pid(report):
    return {p["pid"]: p for p in report["processes"]}


def check_own(row, own_peak, own_cpu, what):
    # the same high-water mark of the same address space, read by the kernel at the
    # exit and by getrusage a moment before: a few pages apart (printf's buffer), and
    # the per-CPU counters' slack
    check(row["rss_peak_bytes"] is not None and
          abs(row["rss_peak_bytes"] - own_peak) <= RSS_SLACK + (64 << 10),
          "%s: RSS peak %r, its own getrusage %r (%d KiB)" % (
              what, row["rss_peak_bytes"], own_peak, (RSS_SLACK >> 10) + 64))
    # its CPU at the exit against its own getrusage after its work: the exit's
    # (printf, exit) at most some milliseconds more; never less but for the row's
    # user and system milliseconds, each cut to the millisecond
    check(own_cpu - 0.002 <= row["cpu_seconds"] <= own_cpu + 0.010,
          "%s: CPU %r s, its own getrusage %r s" % (what, row["cpu_seconds"], own_cpu))


def test_twelve_short_children(wd):
    if os.geteuid() != 0:
        print("# skipped: the kernel gives exits' figures to root only")
        return
    # 12 children one after the other, each 8+i MiB, each living some 20 ms: most
    # start and end between two samples of 1 s
    script = ("for i in {1..12}; do %s --mib $((8 + i)) --hold 0.02 >> %s; done"
              % (helper("memtouch"), wd.join("own.jsonl")))
    r = run(wd, ONE_CPU + ["bash", "-c", script], opts=["--interval", "1s"])
    eq(r.rc, 0, "exit code")
    with open(wd.join("own.jsonl")) as f:
        own = [__import__("json").loads(line) for line in f]
    eq(len(own), 12, "children that ran")
    procs = by_pid(r.report)
    children = [procs.get(o["pid"]) for o in own]
    check(all(children), "every child has a row: %r not in %r"
          % ([o["pid"] for o, c in zip(own, children) if not c], sorted(procs)))
    eq(len(r.report["processes"]), 13, "processes: bash and its 12 children")
    for o, c in zip(own, children):
        check_own(c, o["maxrss_bytes"], o["cpu_seconds"], "child %d (%d MiB)" % (o["pid"], o["mib"]))
        eq(c["ppid"], r.report["run"]["pid"], "child %d's parent" % o["pid"])
    # one after the other: each ends before the next starts.  A start read from /proc
    # is cut to its clock tick (10 ms): one tick of slack
    for a, b in zip(children, children[1:]):
        check(ms(a["end"]) <= ms(b["start"]) + 10,
              "%d ended at %s, %d started at %s" % (a["pid"], a["end"], b["pid"], b["start"]))
    # bash's own peak is a shell's, not its largest child's
    bash = procs[r.report["run"]["pid"]]
    check(bash["rss_peak_bytes"] < 8 << 20,
          "bash's RSS peak %r is its own, not its children's (%r)"
          % (bash["rss_peak_bytes"], max(o["maxrss_bytes"] for o in own)))


def time_v(stderr, label):
    m = re.search(r"^\s*%s: (.*)$" % re.escape(label), stderr, re.M)
    check(m, "%r in /usr/bin/time -v's output %r" % (label, stderr))
    return m.group(1)


def test_time_wrapper_own_peak(wd):
    if not os.path.exists("/usr/bin/time"):
        print("# skipped: no /usr/bin/time")
        return
    tv = wd.join("time.txt")
    r = run(wd, ONE_CPU + ["/usr/bin/time", "-v", "-o", tv, helper("memtouch"), "--mib", "64",
                 "--hold", "0.3"])
    eq(r.rc, 0, "exit code")
    with open(tv) as f:
        measured = f.read()
    child_peak = int(time_v(measured, "Maximum resident set size (kbytes)")) * 1024
    child_cpu = (float(time_v(measured, "User time (seconds)")) +
                 float(time_v(measured, "System time (seconds)")))
    own = r.helper_json()
    procs = by_pid(r.report)
    wrapper = procs[r.report["run"]["pid"]]
    child = procs.get(own["pid"])
    check(child, "the child %d has a row" % own["pid"])
    eq(child["ppid"], wrapper["pid"], "the child's parent is time")
    # time's row: its own peak (a small C program), not its child's 64 MiB that
    # wait4's rusage and time -v report
    check(wrapper["rss_peak_bytes"] is not None and wrapper["rss_peak_bytes"] < 8 << 20,
          "time's RSS peak %r is its own, not its child's %r"
          % (wrapper["rss_peak_bytes"], child_peak))
    check(wrapper["cpu_seconds"] < 0.05,
          "time's CPU %r s is its own, not its child's %r s" % (wrapper["cpu_seconds"], child_cpu))
    # the child's row: what time -v measured of it (wait4: its peak to the KiB, less the
    # per-CPU counters' slack; its user and system times each cut to a hundredth, so up
    # to 0.02 s under; with its exit's teardown of 64 MiB that ours, read earlier, lacks)
    check(abs(child["rss_peak_bytes"] - child_peak) <= RSS_SLACK,
          "child's RSS peak %r, time -v's %r" % (child["rss_peak_bytes"], child_peak))
    check(child_cpu - 0.03 <= child["cpu_seconds"] <= child_cpu + 0.021,
          "child's CPU %r s, time -v's %r s" % (child["cpu_seconds"], child_cpu))
    check_own(child, own["maxrss_bytes"], own["cpu_seconds"], "child")


if __name__ == "__main__":
    run_tests(globals())
