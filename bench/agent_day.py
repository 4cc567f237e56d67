#!/usr/bin/env python3
"""agent_day.py - the agent's store, whole file, after an hour and after a day.

The real agent (`jobscope agent`, its own tick code, its defaults) runs with
the hidden `--sim-clock`: ticks come back to back and its clock moves one
interval a tick, so a day of 1 s ticks takes minutes.  What it samples is
this machine's /proc as it is: N extra sleeping processes (js-sleepers,
default 1000) and a churn of short processes (default 20 a second of real
time, 40 ms each, three command lines between them: at the simulated
clock's pace that is one short process every 15 to 25 simulated seconds,
each seen in about ten ticks) beside whatever else runs.

Two runs, each from an empty store: --short-hours (default 1) and --hours
(default 24).  For each:

  bytes     the store's one file once the agent has exited and its WAL is
            checkpointed (whole file: free pages, schema, indexes, packs,
            rollups, job summaries, process table, everything); also the
            pages in use
  values    the non-NULL cells of the value columns of every fact table
            (not keys, references, timestamps or labels), counted on a copy
            whose packs `jobscope compact --unpack` turned back into rows;
            the rollups' min/avg/max (derived values) are counted apart
  tables    bytes per table with its indexes (the sqlite3 shell's dbstat)
  reports   `jobscope report --db STORE ID --format json` for every job,
            the packed store against its unpacked copy: the same bytes

Usage: bench/agent_day.py [--build build] [--count 1000] [--hours 24]
           [--short-hours 1] [--churn-per-s 20] [--churn-life-ms 40]
           [--json F] [--markdown F]
Run from the repository root after `ninja -C BUILD`; needs the sqlite3 shell
for the per-table bytes (left out without it).  Exits 0 whether the targets
are met or not (it is a benchmark); 1 if the benchmark itself cannot run.
"""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

# columns of the fact tables that are not values: keys, references,
# timestamps and labels (which CPU, disk, interface, mount; an event's kind)
NOT_VALUES = {"seq", "id", "node_id", "job_id", "proc_id", "device_id", "ts_ms",
              "cpu", "disk", "iface", "mount", "kind", "pid", "gpu_index", "message",
              "tier_ms", "entity", "entity_id", "metric", "n"}
FACT_TABLES = ["host_samples", "cpu_samples", "disk_samples", "net_samples", "proc_samples",
               "job_samples", "events", "marks", "gpu_samples", "gpu_proc_samples",
               "fs_samples", "app_samples", "energy_samples", "proc_libs"]
TARGETS = {"short": 2.0, "long": 1.0}  # bytes per value, whole file (issue 35 section 2)
CHURN_COMMANDS = [["sleep", "{s}"], ["sh", "-c", "sleep {s}"], ["env", "sleep", "{s}"]]


class Churn(threading.Thread):
    """Starts a short process every 1/rate s (real time), each living life_ms."""

    def __init__(self, rate, life_ms):
        super().__init__(daemon=True)
        self.rate, self.life = rate, life_ms / 1000.0
        self.stop = threading.Event()
        self.started = 0

    def run(self):
        live = []
        nxt = time.monotonic()
        while not self.stop.is_set():
            cmd = [a.format(s=self.life) for a in CHURN_COMMANDS[self.started % 3]]
            live.append(subprocess.Popen(cmd, stdin=subprocess.DEVNULL))
            self.started += 1
            live = [p for p in live if p.poll() is None]
            nxt += 1.0 / self.rate
            self.stop.wait(max(0.0, nxt - time.monotonic()))
        for p in live:
            p.wait()


def run_agent(args, tmp, hours, label):
    db = os.path.join(tmp, f"agent-{label}.db")
    cmd = [os.path.join(args.build, "jobscope"), "agent", "--sim-clock", "--interval", "1s",
           "--exit-after", f"{hours}h", "--db", db, "--listen", "none"]
    churn = Churn(args.churn_per_s, args.churn_life_ms) if args.churn_per_s > 0 else None
    if churn:
        churn.start()
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    # the agent's own rusage (the churn's processes are this script's children too)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    if churn:
        churn.stop.set()
        churn.join()
    if p.returncode != 0:
        sys.exit(f"agent_day: the agent failed ({p.returncode}): {err[-2000:]}")
    left = {s or "db": os.path.getsize(db + s) for s in ("", "-wal", "-shm")
            if os.path.exists(db + s)}
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = con.execute("PRAGMA page_size").fetchone()[0]
    pages = con.execute("PRAGMA page_count").fetchone()[0]
    free = con.execute("PRAGMA freelist_count").fetchone()[0]
    procs = con.execute("SELECT count(*), count(DISTINCT cmdline),"
                        " coalesce(sum(length(cmdline)), 0) FROM procs").fetchone()
    packs = con.execute("SELECT count(*), coalesce(sum(nrows), 0), coalesce(sum(length(data)), 0)"
                        " FROM packs").fetchone()
    jobs = [r[0] for r in con.execute("SELECT id FROM jobs ORDER BY id")]
    con.close()
    res = {"hours": hours, "command": cmd, "wall_s": wall,
           "agent_cpu_s": usage.ru_utime + usage.ru_stime,
           "churn_started": churn.started if churn else 0,
           "files_as_left": left, "file_bytes": os.path.getsize(db),
           "pages_in_use_bytes": (pages - free) * page, "free_pages": free,
           "procs": {"rows": procs[0], "distinct_cmdlines": procs[1], "cmdline_bytes": procs[2]},
           "packs": {"count": packs[0], "rows": packs[1], "bytes": packs[2]}}
    res["tables"] = table_bytes(db)
    copy = db + ".unpacked"
    shutil.copy(db, copy)
    subprocess.run([os.path.join(args.build, "jobscope"), "compact", "--db", copy, "--unpack"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    res.update(count_values(copy))
    res["reports"] = compare_reports(args, db, copy, jobs)
    res["bytes_per_value"] = res["file_bytes"] / res["values"] if res["values"] else None
    os.unlink(copy)
    return res


def table_bytes(db):
    if not shutil.which("sqlite3"):
        return None
    out = subprocess.run(
        ["sqlite3", "-readonly", db,
         "SELECT coalesce(m.tbl_name, d.name), sum(d.pgsize) FROM dbstat d"
         " LEFT JOIN sqlite_schema m ON m.name = d.name GROUP BY 1 ORDER BY 2 DESC"],
        capture_output=True, text=True, check=True).stdout
    return {line.split("|")[0]: int(line.split("|")[1]) for line in out.splitlines() if line}


def count_values(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    per = {}
    for t in FACT_TABLES + ["rollups"]:
        cols = [c[1] for c in con.execute(f"PRAGMA table_info({t})")
                if c[1] not in NOT_VALUES]
        if not cols:
            continue
        row = con.execute("SELECT count(*)" + "".join(f", count({c})" for c in cols)
                          + f" FROM {t}").fetchone()
        per[t] = {"rows": row[0], "values": sum(row[1:])}
    first, last, n = con.execute("SELECT min(ts_ms), max(ts_ms), count(*) FROM host_samples"
                                 ).fetchone()
    con.close()
    return {"per_table": per, "values": sum(v["values"] for t, v in per.items() if t != "rollups"),
            "rollup_values": per.get("rollups", {}).get("values", 0),
            "host_ticks": n, "span_h": (last - first) / 3.6e6 if n else 0}


def compare_reports(args, db, copy, jobs):
    out = {"jobs": len(jobs), "same": 0, "differ": []}
    for j in jobs:
        a, b = ([os.path.join(args.build, "jobscope"), "report", "--db", d, str(j),
                 "--format", "json"] for d in (db, copy))
        ra = subprocess.run(a, capture_output=True)
        rb = subprocess.run(b, capture_output=True)
        if ra.returncode == rb.returncode and ra.stdout == rb.stdout:
            out["same"] += 1
        else:
            out["differ"].append(j)
    return out


def mib(b):
    return b / 1048576.0


def markdown(args, res):
    lines = []
    hdr = ("| run | ticks (simulated span) | values | whole file | bytes per value | pages in use"
           " | free pages | packs | rollup values | procs (distinct command lines) | reports"
           " packed = unpacked | wall, agent CPU | target | |")
    lines += [hdr, "|" + "---|" * 14]
    for key in ("short", "long"):
        r = res[key]
        bpv = r["bytes_per_value"]
        ok = bpv is not None and bpv <= TARGETS[key]
        lines.append(
            f"| {r['hours']} h | {r['host_ticks']:,} ({r['span_h']:.2f} h) | {r['values']:,}"
            f" | {mib(r['file_bytes']):.2f} MiB | **{bpv:.2f}** | {mib(r['pages_in_use_bytes']):.2f}"
            f" MiB | {r['free_pages']} | {r['packs']['count']} ({r['packs']['rows']:,} rows,"
            f" {mib(r['packs']['bytes']):.2f} MiB) | {r['rollup_values']:,}"
            f" | {r['procs']['rows']:,} ({r['procs']['distinct_cmdlines']:,})"
            f" | {r['reports']['same']} of {r['reports']['jobs']}"
            f" | {r['wall_s']:.0f} s, {r['agent_cpu_s']:.0f} s | ≤ {TARGETS[key]:g}"
            f" | {'met' if ok else 'NOT met'} |")
    for key in ("short", "long"):
        r = res[key]
        if r["tables"]:
            top = sorted(r["tables"].items(), key=lambda kv: -kv[1])[:10]
            lines.append("")
            lines.append(f"{r['hours']} h, bytes by table (with its indexes): "
                         + ", ".join(f"{t} {mib(b):.2f} MiB" for t, b in top) + ".")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--short-hours", type=float, default=1)
    ap.add_argument("--churn-per-s", type=float, default=20)
    ap.add_argument("--churn-life-ms", type=float, default=40)
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    for f in ("jobscope", "tests/js-sleepers"):
        if not os.access(os.path.join(args.build, f), os.X_OK):
            sys.exit(f"agent_day: {args.build}/{f} missing: ninja -C {args.build} first")
    tmp = tempfile.mkdtemp(prefix="jobscope-agent-day-")
    ready = os.path.join(tmp, "sleepers-ready")
    sleepers = subprocess.Popen(
        [os.path.join(args.build, "tests/js-sleepers"), "--count", str(args.count),
         "--seconds", "7200", "--ready-file", ready], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(ready):
            if time.monotonic() > deadline or sleepers.poll() is not None:
                sys.exit("agent_day: js-sleepers did not start")
            time.sleep(0.05)
        res = {"count": args.count, "churn_per_s": args.churn_per_s,
               "churn_life_ms": args.churn_life_ms,
               "short": run_agent(args, tmp, args.short_hours, "short"),
               "long": run_agent(args, tmp, args.hours, "long")}
    finally:
        sleepers.terminate()
        sleepers.wait()
    md = markdown(args, res)
    print(md)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
