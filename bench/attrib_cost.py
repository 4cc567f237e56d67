#!/usr/bin/env python3
"""attrib_cost.py - the agent's CPU per tick with N extra processes, for
several builds side by side (e.g. before and after a change to attribution).

N sleeping processes (js-sleepers) and, optionally, B busy ones (each
waking every 50 ms, so that the agent reads its status every tick) stay
alive while each agent binary runs in turn, `jobscope agent --interval I
--db TMP --listen 127.0.0.1:0`, round after round (interleaved, so that the
machine's other load falls on all of them alike).  For each run: after a
settling period (first sight of every process left out), the agent's CPU
over a window from /proc/PID/schedstat (ns on a CPU) divided by the ticks
it took in the window (/api/v1/node).  Prints a Markdown table: median and
spread of ms per tick for each build.

Usage: bench/attrib_cost.py --agent NAME=PATH [--agent NAME=PATH ...]
           [--sleepers build/tests/js-sleepers] [--count 1000] [--busy 0]
           [--interval-ms 200] [--settle 5] [--window 20] [--rounds 3]
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

BUSY_SRC = r"""
import os, sys, time
n = int(sys.argv[1])
for _ in range(n):
    if os.fork() == 0:
        x = 0
        while True:
            for i in range(2000):
                x += i
            time.sleep(0.05)
time.sleep(10**6)
"""


def sched_ns(pid):
    with open("/proc/%d/schedstat" % pid) as f:
        return int(f.read().split()[0])


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise SystemExit("attrib_cost: timed out waiting for %s" % what)


def ticks(url):
    with urllib.request.urlopen(url + "/api/v1/node", timeout=5) as r:
        return json.loads(r.read())["agent"]["ticks"]


def one_run(path, interval_ms, settle, window, tmp):
    db = os.path.join(tmp, "agent-%d.db" % time.monotonic_ns())
    log = open(os.path.join(tmp, "agent.log"), "w+")
    agent = subprocess.Popen([path, "agent", "--interval", "%dms" % interval_ms, "--db", db,
                              "--listen", "127.0.0.1:0"], stdout=subprocess.DEVNULL,
                             stderr=log)
    try:
        def port():
            log.seek(0)
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read())
            return int(m.group(1)) if m else None
        url = "http://127.0.0.1:%d" % wait_for(port, 30, "the agent's port")
        time.sleep(settle)
        t0, c0 = ticks(url), sched_ns(agent.pid)
        time.sleep(window)
        t1, c1 = ticks(url), sched_ns(agent.pid)
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=30)
        log.close()
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(db + suffix)
            except FileNotFoundError:
                pass
    return (c1 - c0) / 1e6 / max(t1 - t0, 1), t1 - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", action="append", required=True, help="NAME=PATH")
    ap.add_argument("--sleepers", default="build/tests/js-sleepers")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--busy", type=int, default=0)
    ap.add_argument("--interval-ms", type=int, default=200)
    ap.add_argument("--settle", type=float, default=5)
    ap.add_argument("--window", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    agents = [a.split("=", 1) for a in args.agent]
    tmp = tempfile.mkdtemp(prefix="jobscope-attrib-cost-")
    ready = os.path.join(tmp, "ready")
    total_s = args.rounds * len(agents) * (args.settle + args.window + 5) + 60
    sleepers = subprocess.Popen([args.sleepers, "--count", str(args.count), "--seconds",
                                 str(int(total_s)), "--ready-file", ready],
                                stdout=subprocess.DEVNULL)
    busy = None
    if args.busy:
        busy = subprocess.Popen([sys.executable, "-c", BUSY_SRC, str(args.busy)],
                                start_new_session=True)
    results = {name: [] for name, _ in agents}
    load = [os.getloadavg()[0]]
    try:
        wait_for(lambda: os.path.exists(ready), 60, "the sleepers")
        for r in range(args.rounds):
            for name, path in agents:
                ms, n = one_run(path, args.interval_ms, args.settle, args.window, tmp)
                results[name].append(ms)
                print("round %d %-10s %.3f ms/tick over %d ticks" % (r + 1, name, ms, n),
                      file=sys.stderr)
        load.append(os.getloadavg()[0])
    finally:
        sleepers.kill()
        sleepers.wait()
        if busy:
            os.killpg(busy.pid, signal.SIGKILL)
            busy.wait()
    procs = len([d for d in os.listdir("/proc") if d.isdigit()])
    print("%d sleeping + %d busy extra processes (%d on the host after the runs); "
          "interval %d ms; %d rounds of %.0f s after %.0f s of settling; load average "
          "(1 min) %.2f at the start, %.2f at the end"
          % (args.count, args.busy, procs, args.interval_ms, args.rounds, args.window,
             args.settle, load[0], load[-1]))
    print()
    print("| build | CPU ms per tick, median | min | max |")
    print("|---|---|---|---|")
    for name, _ in agents:
        v = results[name]
        print("| %s | %.3f | %.3f | %.3f |" % (name, statistics.median(v), min(v), max(v)))


if __name__ == "__main__":
    main()
