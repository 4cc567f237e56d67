#!/usr/bin/env python3
"""exit_cost.py - what the taskstats exit listener costs `jobscope run`.

As root in the host's pid namespace, `jobscope run` listens to the kernel's
taskstats exit messages (src/sample/taskstats.h) so that a process that ends
between two ticks still has its own row.  The kernel sends a message for
every thread that exits on the machine, the job's or not: on a node where
other work forks fast, the listener reads them all.  This measures
jobscope's own CPU (the report's sampler.cpu_seconds, from its rusage) for a
job that only sleeps, side by side:

  listener   `jobscope run` as the user would start it (root: the listener on)
  none       the same inside a pid namespace of its own (`unshare -p -f
             --mount-proc`), where the listener is refused (its pids would
             name other processes): /proc is read as before, at ticks only

each while the machine is quiet and while js-spawnstorm (outside the job)
forks short processes one after another as fast as it can.  The exit rate is
the growth of /proc/stat's "processes" counter over the run.

Usage: bench/exit_cost.py [--seconds 20] [--reps 3] [--interval 1s]
Run from the repository root after `ninja -C build`; needs root and unshare.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

JOBSCOPE = "build/jobscope"
STORM = "build/tests/js-spawnstorm"


def forks_so_far():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("processes "):
                return int(line.split()[1])
    return 0


def one_run(tmp, mode, storm, seconds, interval):
    report = os.path.join(tmp, "r-%s-%d.json" % (mode, time.monotonic_ns()))
    cmd = [JOBSCOPE, "run", "--interval", interval, "--db", os.path.join(tmp, "s.db"),
           "--report", "json", "--report-file", report, "--", "sleep", str(seconds)]
    if mode == "none":
        cmd = ["unshare", "-p", "-f", "--mount-proc"] + cmd
    spawner = None
    if storm:
        spawner = subprocess.Popen([STORM, "--count", "10000000"], stdout=subprocess.DEVNULL)
        time.sleep(1)
    f0, t0 = forks_so_far(), time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    f1, t1 = forks_so_far(), time.monotonic()
    if spawner:
        spawner.kill()
        spawner.wait()
    with open(report) as f:
        r = json.load(f)
    wall = r["run"]["duration_s"]
    return {"cpu_ms_per_s": 1000.0 * r["sampler"]["cpu_seconds"] / wall,
            "exits_per_s": (f1 - f0) / (t1 - t0)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--interval", default="1s")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("exit_cost.py: needs root (the listener needs CAP_NET_ADMIN)")
    tmp = tempfile.mkdtemp(prefix="jobscope-bench-exit-")
    rows = []
    for storm in (False, True):
        res = {"listener": [], "none": []}
        for _ in range(a.reps):
            for mode in ("listener", "none"):  # side by side, alternating
                res[mode].append(one_run(tmp, mode, storm, a.seconds, a.interval))
        med = {m: (statistics.median(x["cpu_ms_per_s"] for x in v),
                   statistics.median(x["exits_per_s"] for x in v)) for m, v in res.items()}
        rows.append((storm, med, res))
    print("| machine | exits/s (listener run) | jobscope CPU ms/s, listener | "
          "without (own pid ns) | listener/without |")
    print("|---|---|---|---|---|")
    for storm, med, _ in rows:
        ratio = med["listener"][0] / med["none"][0] if med["none"][0] else float("nan")
        print("| %s | %.0f | %.2f | %.2f | %.2f |" % (
            "js-spawnstorm beside" if storm else "quiet", med["listener"][1], med["listener"][0],
            med["none"][0], ratio))
    print()
    for storm, _, res in rows:
        print("per run (%s): listener %s; without %s" % (
            "storm" if storm else "quiet",
            ", ".join("%.2f" % x["cpu_ms_per_s"] for x in res["listener"]),
            ", ".join("%.2f" % x["cpu_ms_per_s"] for x in res["none"])))


if __name__ == "__main__":
    main()
