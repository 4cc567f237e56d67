#!/usr/bin/env python3
"""overhead.py - how much slower a CPU-bound workload runs under `jobscope run`.

The workload is fixed work, not fixed time: `js-busy --work 2000` does 2000
million dependent xorshift steps on one thread (about 3.5 s).  It runs bare
and under `jobscope run --interval 100ms --report none --db TMP --`,
alternating in ABBA order (bare, jobscope, jobscope, bare, ...) so that a
slow drift in the machine's load falls on both sides alike, after one
unmeasured warm-up run of each.  Wall time is taken around each whole run
with time.monotonic(), so jobscope's own start-up (opening the store, the
first tick) and end (the last tick, the report) count against it.

Also reported, from the same runs: js-busy's own wall time (printed by the
workload: start-up excluded) and jobscope's own CPU time (the rusage of the
whole run minus js-busy's getrusage).

Usage: bench/overhead.py [--runs 8] [--work 2000] [--interval 100ms]
           [--json F] [--markdown F]
hyperfine is not used: it runs all the runs of one command before the other.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

JOBSCOPE = "build/jobscope"
BUSY = "build/tests/js-busy"
TARGET = 1.02


def host_busy_s():
    v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def run_once(argv):
    """(wall s, js-busy's printed JSON); the caller reads the CPU from os.times()."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"overhead: {shlex.join(argv)} exited {p.returncode}: "
                 f"{err.decode(errors='replace')[-800:]}")
    busy = json.loads(out.decode().strip().splitlines()[-1])
    return wall, busy


def children_cpu_s():
    t = os.times()
    return t.children_user + t.children_system


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=8, help="measured runs of each (>= 7)")
    ap.add_argument("--work", type=int, default=2000)
    ap.add_argument("--interval", default="100ms")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    for exe in (JOBSCOPE, BUSY):
        if not os.access(exe, os.X_OK):
            sys.exit(f"overhead: {exe} is missing: run ./dev bench (or bench/run-all.sh)")

    with tempfile.TemporaryDirectory(prefix="jobscope-bench-") as tmp:
        db = os.path.join(tmp, "store.db")
        bare = [BUSY, "--work", str(args.work)]
        wrapped = [JOBSCOPE, "run", "--interval", args.interval, "--report", "none",
                   "--db", db, "--"] + bare
        sides = {"bare": bare, "jobscope": wrapped}
        res = {k: {"wall_s": [], "inner_wall_s": [], "tree_cpu_s": [], "busy_cpu_s": []}
               for k in sides}
        order = []
        for i in range(args.runs):
            order += ["bare", "jobscope"] if i % 2 == 0 else ["jobscope", "bare"]
        for side in ("bare", "jobscope"):  # warm-up: page cache, the store's schema
            run_once(sides[side])
        h0, t0 = host_busy_s(), time.monotonic()
        ours = 0.0
        for k, side in enumerate(order):
            c0 = children_cpu_s()
            wall, busy = run_once(sides[side])
            tree_cpu = children_cpu_s() - c0
            ours += tree_cpu
            r = res[side]
            r["wall_s"].append(wall)
            r["inner_wall_s"].append(busy["wall_seconds"])
            r["tree_cpu_s"].append(tree_cpu)
            r["busy_cpu_s"].append(busy["cpu_seconds"])
            print(f"{k + 1:2d}/{len(order)} {side:8s} wall {wall:.3f} s  "
                  f"(js-busy {busy['wall_seconds']:.3f} s, tree CPU {tree_cpu:.3f} s)",
                  flush=True)
        elapsed = time.monotonic() - t0
        other_load = max(0.0, (host_busy_s() - h0 - ours) / elapsed)
        store_kib = os.path.getsize(db) / 1024 if os.path.exists(db) else 0

    m = {side: {k: statistics.median(v) for k, v in r.items()} for side, r in res.items()}
    ratio = m["jobscope"]["wall_s"] / m["bare"]["wall_s"]
    inner_ratio = m["jobscope"]["inner_wall_s"] / m["bare"]["inner_wall_s"]
    sampler_cpu_ms = [(t - b) * 1000 for t, b in zip(res["jobscope"]["tree_cpu_s"],
                                                     res["jobscope"]["busy_cpu_s"])]
    min_ratio = min(res["jobscope"]["wall_s"]) / min(res["bare"]["wall_s"])
    summary = {"wall_ratio": ratio, "inner_wall_ratio": inner_ratio, "min_wall_ratio": min_ratio,
               "jobscope_cpu_ms_median": statistics.median(sampler_cpu_ms),
               "other_load_cores": other_load, "store_kib": store_kib}

    lines = [f"Command: `{shlex.join(['python3'] + sys.argv)}`", "",
             "Alternating (ABBA), after one warm-up run of each:", "", "```",
             shlex.join(bare), shlex.join(wrapped).replace(db, "$TMP/store.db"), "```", "",
             f"{args.runs} measured runs of each; medians.", "",
             "| | wall (s) | min / max (s) | js-busy's own wall (s) | CPU of the tree (s) |",
             "|---|---|---|---|---|"]
    for side in ("bare", "jobscope"):
        r = res[side]
        lines.append(f"| {side} | {m[side]['wall_s']:.3f} | {min(r['wall_s']):.3f} / "
                     f"{max(r['wall_s']):.3f} | {m[side]['inner_wall_s']:.3f} | "
                     f"{m[side]['tree_cpu_s']:.3f} |")
    lines += ["",
              f"- wall ratio jobscope/bare = **{ratio:.4f}** (target ≤ {TARGET}): "
              + ("met" if ratio <= TARGET else "**missed**"),
              f"- fastest run vs fastest run (less sensitive to other load) = {min_ratio:.4f}",
              f"- js-busy's own wall ratio (jobscope's start-up and end left out) = "
              f"{inner_ratio:.4f}",
              f"- jobscope's own CPU per run (tree CPU − js-busy's CPU): median "
              f"{summary['jobscope_cpu_ms_median']:.0f} ms",
              f"- load from other processes during the benchmark: {other_load:.2f} cores "
              f"on average"]
    md = "\n".join(lines) + "\n"
    print()
    print(md)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "runs": res, "order": order, "medians": m,
                       "summary": summary}, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md)


if __name__ == "__main__":
    main()
