#!/usr/bin/env python3
"""session_export.py - a long profiling session's files: the gswarm-profiler file a head
writes when the session stops (--session-dir) and `jobscope export --format gswarm|json`
of it, at 1 h and 8 h of 10 nodes with 8 GPUs each, beside what gswarm-profiler itself
does at a stop (issue 35 section 4).

A head on a fresh SQLite store is sent H hours of 1 s ticks of N simulated agents
(bench/head_ingest.py's nodes: 8 GPUs, 2 CPUs, 2 processes each; default 8 h, 10 nodes:
288,000 node-ticks).  Two sessions are started through gswarm's own call (POST
/profiling/start) and, with the head stopped, their starts moved back to 1 h and H h
before the stop (the head has no way to start a session in the past; the store's
sessions row is all a session is).  The head is started again and each session is
stopped through POST /profiling/stop, which answers once its file is written.

Measured for each session: the stop's wall time, the head's CPU over it (utime + stime,
all threads), the head's peak RSS (VmHWM) after it, the file's bytes and frames; then
`jobscope export --db --session NAME --format gswarm` and `--format json` (wall, CPU,
max RSS by wait4's rusage).  The peer: gswarm-profiler's head keeps its frames in a
Python list and writes them at stop with json.dump(data, f, indent=2); the same
object (the file read back with json.load) dumped by this machine's Python the same way,
CPU by os.times.  A cost per frame that is flat from 1 h to 8 h grows with the data;
a peak RSS that grows with the session holds the file in memory.

Usage: python3 bench/session_export.py [--build build] [--nodes 10] [--hours 8]
       [--json F]
"""
import argparse
import http.client
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_cost import CLK_TCK, children_map, cpu_ticks, status_kib, stop  # noqa: E402
from head_ingest import Layout, Node  # noqa: E402
from live_views import feed  # noqa: E402

TICKS_PER_BATCH = 60


def post(port, path, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1800)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, json.loads(r.read())
    finally:
        conn.close()


def cpu(pid):
    u, s = cpu_ticks(pid, children_map())
    return (u + s) / CLK_TCK


def timed(argv):
    """(wall s, CPU s, max RSS KiB) of a command, as GNU time measures them (its child's
    rusage: a child forked from this Python would start from Python's own peak)."""
    r = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M"] + argv, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (argv[:3], r.returncode, r.stderr[-400:]))
    wall, user, sys_, rss = r.stderr.split()[-4:]
    return float(wall), float(user) + float(sys_), int(rss)


def python_dump(path):
    """gswarm's stop: json.dump(data, f, indent=2) of the frames it holds (read back here)."""
    code = ("import json,os,resource,sys\n"
            "d=json.load(open(sys.argv[1]))\n"
            "t=os.times()\n"
            "with open(sys.argv[2],'w') as f: json.dump(d,f,indent=2)\n"
            "u=os.times()\n"
            "print(u.user+u.system-t.user-t.system, u.elapsed-t.elapsed,"
            " resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", code, path, path + ".py"],
                         capture_output=True, text=True, check=True).stdout.split()
    same = open(path, "rb").read() == open(path + ".py", "rb").read()
    os.unlink(path + ".py")
    return float(out[0]), float(out[1]), int(out[2]), same


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--nodes", type=int, default=10)
    ap.add_argument("--hours", type=float, default=8)
    ap.add_argument("--json")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR (made) and keep it: the store"
                    " and the files, to profile")
    args = ap.parse_args()
    jobscope = os.path.abspath(os.path.join(args.build, "jobscope"))
    ticks = int(args.hours * 3600)
    res = {"nodes": args.nodes, "hours": args.hours, "sessions": []}
    with (nullcontext(args.keep) if args.keep else
          tempfile.TemporaryDirectory(prefix="jobscope-session-bench-")) as tmp:
        if args.keep:
            os.makedirs(tmp)
        db, sdir = os.path.join(tmp, "head.db"), os.path.join(tmp, "sessions")
        os.makedirs(sdir)
        now_ms = int(time.time() * 1000)
        t0 = now_ms - ticks * 1000
        layout = Layout(2, 8, 2, 1)
        nodes = [Node(layout, i, t0) for i in range(args.nodes)]
        argv = [jobscope, "head", "--listen", "127.0.0.1:0", "--db", db, "--session-dir", sdir]
        head, port = start(argv, os.path.join(tmp, "head.err"))
        t = time.monotonic()
        if ticks % TICKS_PER_BATCH:
            sys.exit("--hours: a whole number of minutes")
        feed(port, nodes, ticks, TICKS_PER_BATCH, nconn=len(nodes), interval_ms=1000)
        res["feed_s"] = time.monotonic() - t
        print("fed %d node-ticks in %.0f s" % (args.nodes * ticks, res["feed_s"]), flush=True)
        lengths = [(f"s{h:g}h", h) for h in sorted({1.0, args.hours})]
        for name, _ in lengths:
            st, body = post(port, "/profiling/start", {"name": name})
            if st != 200 or not body.get("success"):
                raise RuntimeError("start %s: %d %r" % (name, st, body))
        stop(head)
        stop_ms = int(time.time() * 1000) + 3000  # the stops come about now
        conn = sqlite3.connect(db)
        for name, hours in lengths:
            conn.execute("UPDATE sessions SET start_ms = ? WHERE name = ?",
                         (stop_ms - int(hours * 3600000), name))
        conn.commit()
        conn.close()
        head, port = start(argv, os.path.join(tmp, "head2.err"))
        for name, hours in lengths:
            c0, t = cpu(head.pid), time.monotonic()
            st, body = post(port, "/profiling/stop", {"name": name})
            wall = time.monotonic() - t
            c1 = cpu(head.pid)
            path = os.path.join(sdir, name + ".json")
            r = {"name": name, "hours": hours, "stop_status": st, "stop_answer": body,
                 "stop_wall_s": wall, "stop_head_cpu_s": c1 - c0,
                 "head_vmhwm_kib": status_kib(head.pid, "VmHWM"),
                 "file_bytes": os.path.getsize(path) if os.path.exists(path) else None}
            gsw = os.path.join(tmp, name + ".gswarm.json")
            r["export_gswarm"] = timed([jobscope, "export", "--db", db, "--session", name,
                                        "--format", "gswarm", "-o", gsw])
            r["export_gswarm_bytes"] = os.path.getsize(gsw)
            with open(gsw) as f:
                doc = json.load(f)
            r["frames"] = len(doc["frames"])
            del doc
            r["same_as_stop_file"] = (r["file_bytes"] is not None and
                                      open(gsw, "rb").read() == open(path, "rb").read())
            own = os.path.join(tmp, name + ".json")
            r["export_json"] = timed([jobscope, "export", "--db", db, "--session", name,
                                      "-o", own])
            r["export_json_bytes"] = os.path.getsize(own)
            os.unlink(own)
            r["python_dump"] = python_dump(gsw)
            if not args.keep:
                os.unlink(gsw)
            res["sessions"].append(r)
            print(json.dumps(r), flush=True)
        stop(head)
    print()
    print("| session | frames | file MB | stop: wall s | head CPU s | head VmHWM MiB |"
          " export gswarm: CPU s, max RSS MiB | export json: CPU s, max RSS MiB |"
          " Python json.dump: CPU s, max RSS MiB | jobscope/Python CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in res["sessions"]:
        fb = r["file_bytes"]
        print("| %s | %d | %s | %.1f | %.1f | %.0f | %.1f, %.0f | %.1f, %.0f | %.1f, %.0f | %.2f |"
              % (r["name"], r["frames"], "%.1f" % (fb / 1e6) if fb else "none (%s)" %
                 r["stop_answer"].get("message", "")[:60], r["stop_wall_s"],
                 r["stop_head_cpu_s"], r["head_vmhwm_kib"] / 1024, r["export_gswarm"][1],
                 r["export_gswarm"][2] / 1024, r["export_json"][1], r["export_json"][2] / 1024,
                 r["python_dump"][0], r["python_dump"][2] / 1024,
                 r["export_gswarm"][1] / r["python_dump"][0]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


def start(argv, errf):
    """A head and its port, from its listening line."""
    with open(errf, "w") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        with open(errf) as f:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", f.read())
        if m:
            return proc, int(m.group(1))
        if proc.poll() is not None:
            raise RuntimeError("the head exited: " + open(errf).read()[-400:])
        time.sleep(0.05)
    raise RuntimeError("the head did not listen")


if __name__ == "__main__":
    main()
