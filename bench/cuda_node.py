#!/usr/bin/env python3
"""cuda_node.py - CUDA tables at many CUDA processes a node: what the agent and the head
pay per snapshot, and whether it grows faster than the snapshots (issue 35 section 4).

A real agent (--cuda-socket, --cuda-always, 1 s interval, a SQLite store) streams to a
real head (a fresh SQLite store) on loopback.  P js-cuda-app processes (the fake
libcuda and libcupti, the real hook, libjobscope-cuda.so) run as Slurm jobs (4 jobs,
SLURM_JOB_ID in their environment, attribution by environment); each launches its N
kernels (N distinct names, one cudaLaunchKernel each) once a second for D seconds, so
each of its snapshots (one a second, the agent's interval) has changed every row: N
kernel rows and one API row.  Each snapshot is stored by the agent (its process's rows
replaced whole), sent to the head and stored there the same way.

Measured over a window after a warm-up, for each P: the agent's and the head's CPU
(utime + stime, /proc/PID/stat, all threads) and the snapshots the head received in the
window (the sum of its cuda_procs rows' snap_seq, the hook's own snapshot counter, at
the window's ends), so the CPU per snapshot and per table row.  The same P processes
without the hook (no CUDA_INJECTION64_PATH) give the agent's and head's cost of the
processes alone; the CUDA tables' cost is the difference.  A cost per row that stays
flat from P = 10 to P = 100 grows with the data; one that grows with P does not.

Checked at the end: every process's final table at the head is exact (each kernel
counted D times, its total D times its duration: the scenario's figures).

Usage: python3 bench/cuda_node.py [--build build] [--procs 10,100] [--names 40]
       [--seconds 45] [--warmup 12] [--window 25] [--json F]
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_cost import CLK_TCK, children_map, cpu_ticks, status_kib, stop, wait_for  # noqa: E402
from head_ingest import start_head  # noqa: E402

JOBS = 4
DUR_NS = 4000      # each kernel's duration on the fake clock
LAUNCH_NS = 1500   # its cudaLaunchKernel's


def scenario(names, seconds):
    lines = ["init", "ctx"]
    for _ in range(seconds):
        lines += ["kernel name=k_%03d dur=%d launch=%d" % (k, DUR_NS, LAUNCH_NS)
                  for k in range(names)]
        lines.append("sleep ms=1000")
    lines.append("exit code=0")
    return "\n".join(lines) + "\n"


def q(db, sql, *args):
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def snaps(db):
    try:
        return q(db, "SELECT count(*), coalesce(sum(snap_seq), 0) FROM cuda_procs")[0]
    except sqlite3.Error:
        return (0, 0)


def cpu(pid):
    u, s = cpu_ticks(pid, children_map())
    return u + s


def file_bytes(path):
    return sum(os.path.getsize(path + sfx) for sfx in ("", "-wal")
               if os.path.exists(path + sfx))


def phase(args, tmp, nprocs, hook):
    name = "p%d-%s" % (nprocs, "hook" if hook else "bare")
    d = os.path.join(tmp, name)
    os.makedirs(d)
    jobscope = os.path.abspath(os.path.join(args.build, "jobscope"))
    fakes = os.path.abspath(os.path.join(args.build, "tests", "fakes"))
    head, port, herr, _ = start_head(jobscope, os.path.join(d, "head.db"), d, "head")
    hdb = os.path.join(d, "head.db")
    adb, sock = os.path.join(d, "agent.db"), os.path.join(d, "cuda.sock")
    aerr = open(os.path.join(d, "agent.err"), "w")
    agent = subprocess.Popen([jobscope, "agent", "--db", adb, "--interval", "1s", "--listen",
                              "none", "--head", "http://127.0.0.1:%d" % port, "--cuda-socket",
                              sock, "--cuda-always"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=aerr)
    procs = []
    try:
        wait_for(lambda: os.path.exists(sock) and os.path.exists(hdb) and
                 q(hdb, "SELECT count(*) FROM agents")[0][0] == 1, agent, 60,
                 "the agent streaming to the head")
        scn = os.path.join(d, "scenario")
        with open(scn, "w") as f:
            f.write(scenario(args.names, args.seconds))
        for i in range(nprocs):
            env = dict(os.environ, SLURM_JOB_ID=str(9100 + i % JOBS),
                       LD_LIBRARY_PATH=fakes)
            if hook:
                env.update(CUDA_INJECTION64_PATH=os.path.join(os.path.dirname(jobscope),
                                                              "libjobscope-cuda.so"),
                           JOBSCOPE_CUDA_SOCKET=sock,
                           JOBSCOPE_CUPTI_LIBRARY=os.path.join(fakes, "libcupti.so"))
            procs.append(subprocess.Popen([os.path.join(args.build, "tests", "js-cuda-app"),
                                           scn], stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, env=env))
        time.sleep(args.warmup)
        t0, a0, h0, s0 = time.monotonic(), cpu(agent.pid), cpu(head.pid), snaps(hdb)
        time.sleep(args.window)
        t1, a1, h1, s1 = time.monotonic(), cpu(agent.pid), cpu(head.pid), snaps(hdb)
        rss = status_kib(agent.pid, "VmRSS")
        hwm = status_kib(agent.pid, "VmHWM")
        for p in procs:
            _, err = p.communicate(timeout=args.seconds + 120)
            if p.returncode != 0:
                raise RuntimeError("js-cuda-app exited %d: %s" % (p.returncode, err[-400:]))
        res = {"procs": nprocs, "hook": hook, "names": args.names, "window_s": t1 - t0,
               "agent_cpu_s": (a1 - a0) / CLK_TCK, "head_cpu_s": (h1 - h0) / CLK_TCK,
               "agent_vmrss_kib": rss, "agent_vmhwm_kib": hwm,
               "snapshots": s1[1] - s0[1], "procs_held": s1[0]}
        if hook:
            # every process's final table, exact, at the head
            def final():
                return q(hdb, "SELECT count(*) FROM cuda_procs WHERE final = 1")[0][0] == nprocs
            wait_for(final, agent, 120, "every process's final snapshot at the head")
            rows = q(hdb, "SELECT kind, name, count(*), min(count), max(count), min(total_ns),"
                          " max(total_ns) FROM cuda_stats GROUP BY kind, name")
            want = {("kernel", "k_%03d" % k): (nprocs, args.seconds, args.seconds,
                                               args.seconds * DUR_NS, args.seconds * DUR_NS)
                    for k in range(args.names)}
            want[("api", "cudaLaunchKernel")] = (
                nprocs, args.seconds * args.names, args.seconds * args.names,
                args.seconds * args.names * LAUNCH_NS, args.seconds * args.names * LAUNCH_NS)
            got = {(r[0], r[1]): tuple(r[2:]) for r in rows}
            if got != want:
                bad = sorted(set(got.items()) ^ set(want.items()))[:6]
                raise RuntimeError("the head's CUDA tables are not the scenario's: %r" % bad)
            res["exact"] = True
            res["agent_store_bytes"] = file_bytes(adb)
            res["stat_rows_held"] = q(hdb, "SELECT count(*) FROM cuda_stats")[0][0]
        return res
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        stop(agent)
        stop(head)
        aerr.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--procs", default="10,100")
    ap.add_argument("--names", type=int, default=40)
    ap.add_argument("--seconds", type=int, default=45)
    ap.add_argument("--warmup", type=float, default=12)
    ap.add_argument("--window", type=float, default=25)
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.warmup + args.window + 3 > args.seconds:
        ap.error("--seconds must outlast the warm-up and the window")
    out = []
    with tempfile.TemporaryDirectory(prefix="jobscope-cuda-node-") as tmp:
        for n in [int(x) for x in args.procs.split(",")]:
            for hook in (False, True):
                r = phase(args, tmp, n, hook)
                out.append(r)
                print(json.dumps(r), flush=True)
    base = {r["procs"]: r for r in out if not r["hook"]}
    print()
    print("| CUDA processes | snapshots/s | rows/s | agent CPU % (bare) | head CPU % (bare) |"
          " agent us/row | head us/row | agent VmRSS MiB | agent store MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in out:
        if not r["hook"]:
            continue
        b = base[r["procs"]]
        w = r["window_s"]
        rows = r["snapshots"] * (r["names"] + 1)
        da = r["agent_cpu_s"] - b["agent_cpu_s"] * w / b["window_s"]
        dh = r["head_cpu_s"] - b["head_cpu_s"] * w / b["window_s"]
        print("| %d | %.1f | %.0f | %.2f (%.2f) | %.2f (%.2f) | %.1f | %.1f | %.1f | %.1f |" % (
            r["procs"], r["snapshots"] / w, rows / w, 100 * r["agent_cpu_s"] / w,
            100 * b["agent_cpu_s"] / b["window_s"], 100 * r["head_cpu_s"] / w,
            100 * b["head_cpu_s"] / b["window_s"], 1e6 * da / rows if rows else 0,
            1e6 * dh / rows if rows else 0, r["agent_vmrss_kib"] / 1024,
            r["agent_store_bytes"] / 1048576))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
