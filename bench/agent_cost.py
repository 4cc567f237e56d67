#!/usr/bin/env python3
"""agent_cost.py - `jobscope agent` against pidstat, node_exporter and the floor.

With N extra sleeping processes (js-sleepers, default 1000) alive, four
samplers run side by side at 1 s for the same window (default 60 s):

  agent          jobscope agent --interval 1s --db TMP --listen 127.0.0.1:0
                 (its /metrics scraped every 1 s by this script)
  pidstat        LC_ALL=C pidstat -u -r -d -p ALL 1 >/dev/null
  node_exporter  prometheus-node-exporter --web.listen-address=127.0.0.1:PORT
                 (its /metrics scraped every 1 s by this script)
  floor          bench-floor-all --interval-ms 1000 (bench/floor_all.c): list
                 /proc, open/read/close stat, statm and io of every process

CPU % of one core = delta of utime+stime (/proc/PID/stat, with cutime+cstime
and the live descendants' utime+stime, should a tool fork) over the window /
the window's wall time; the scraper's CPU is this script's and is not
counted.  Peak RSS = VmHWM of /proc/PID/status at the end of the window.

Then: the store's growth (bytes per stored value, bytes per day at this
load) and the latency of /metrics at 20 requests/s over one keep-alive
connection, the agent's and node_exporter's, one after the other, while the
agent keeps sampling the same N processes.

Usage: bench/agent_cost.py [--build build] [--duration 60 | --quick]
           [--count 1000] [--settle 5] [--latency-seconds 10] [--rate 20]
           [--json F] [--markdown F]
Run from the repository root after `ninja -C BUILD` (jobscope and
tests/js-sleepers); needs pidstat (sysstat), prometheus-node-exporter and cc.
Exits 0 whether the targets are met or not (it is a benchmark); 1 if the
benchmark itself cannot run.
"""
import argparse
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

CLK_TCK = os.sysconf("SC_CLK_TCK")
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
PIDSTAT_ARGS = ["-u", "-r", "-d", "-p", "ALL", "1"]
FLOOR_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor_all.c")
TOOLS = ["agent", "pidstat", "node_exporter", "floor"]

# Fact tables whose values are counted, and the columns of theirs that are
# not values: keys, references, timestamps and labels (which CPU, disk,
# interface; an event's kind; a rollup's tier, entity, metric and n).
FACT_TABLES = ["host_samples", "cpu_samples", "disk_samples", "net_samples",
               "proc_samples", "job_samples", "gpu_samples", "events", "rollups"]
NOT_VALUES = {"seq", "id", "node_id", "job_id", "proc_id", "device_id", "ts_ms",
              "cpu", "disk", "iface", "kind", "pid", "gpu_index", "message",
              "tier_ms", "entity", "entity_id", "metric", "n"}

TARGETS = {
    "cpu_vs_pidstat": 0.25,   # agent CPU <= 1/4 of pidstat's
    "cpu_vs_floor": 1.0,      # agent CPU <= the floor's
    "cpu_pct": 0.5,           # agent CPU % of one core (issue 13)
    "vmrss_mib": 8.0,         # agent VmRSS at the end of the window (issue 13)
    "rss_mib": 16.0,          # agent peak RSS
    "metrics_p99_ms": 5.0,    # /metrics p99 at 20 scrapes/s
}


def read_text(path):
    with open(path) as f:
        return f.read()


def stat_fields(pid):
    """Fields of /proc/PID/stat after comm, so fields[0] is field 3 (state)."""
    text = read_text(f"/proc/{pid}/stat")
    return text[text.rindex(")") + 2:].split()


def children_map():
    """ppid -> [pid] of every process now."""
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            ppid = int(stat_fields(name)[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(name))
    return kids


def cpu_ticks(pid, kids):
    """(user, system) clock ticks of pid: its own (all threads), its reaped
    children's, and its live descendants' own."""
    f = stat_fields(pid)
    user, system = int(f[11]) + int(f[13]), int(f[12]) + int(f[14])
    todo = list(kids.get(pid, []))
    while todo:
        c = todo.pop()
        try:
            g = stat_fields(c)
        except (OSError, ValueError):
            continue
        user += int(g[11])
        system += int(g[12])
        todo.extend(kids.get(c, []))
    return user, system


def status_kib(pid, key):
    for line in read_text(f"/proc/{pid}/status").splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return None


def pss_kib(pid):
    """Pss of /proc/PID/smaps_rollup (its pages, each shared one divided among
    the processes that map it), KiB; None if unreadable."""
    try:
        for line in read_text(f"/proc/{pid}/smaps_rollup").splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def memory_figures(pid):
    """Shared libraries mapped (distinct .so files in /proc/PID/maps) and
    VmRSS, RssAnon, RssFile, Pss in KiB, now."""
    libs = set()
    for line in read_text(f"/proc/{pid}/maps").splitlines():
        f = line.split(None, 5)
        if len(f) == 6 and re.search(r"\.so(\.|$)", os.path.basename(f[5])):
            libs.add(f[5])
    return {"libs": len(libs), "lib_names": sorted(os.path.basename(x) for x in libs),
            "vmrss_kib": status_kib(pid, "VmRSS"), "rss_anon_kib": status_kib(pid, "RssAnon"),
            "rss_file_kib": status_kib(pid, "RssFile"), "pss_kib": pss_kib(pid)}


def host_cpu():
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    v = [int(x) for x in read_text("/proc/stat").splitlines()[0].split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v[:8]) - idle, sum(v[:8])


def self_ticks():
    t = os.times()
    return (t.user + t.system + t.children_user + t.children_system) * CLK_TCK


def snapshot(pids):
    kids = children_map()
    snap = {"t": time.monotonic(), "host": host_cpu(), "self": self_ticks(),
            "nprocs": sum(len(v) for v in kids.values())}
    for name, pid in pids.items():
        snap[name] = cpu_ticks(pid, kids)
    return snap


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, proc, deadline_s, what):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what}: exited with {proc.returncode} before it was ready")
        time.sleep(0.05)
    raise RuntimeError(f"{what}: not ready after {deadline_s} s")


def http_ok(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
            r.read()
            return r.status == 200
    except OSError:
        return False


def cmdline(argv):
    return shlex.join(str(a) for a in argv)


def pct(vals, p):
    """p-th percentile of vals, nearest-rank."""
    s = sorted(vals)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


# ---- the store ----

def value_columns(db):
    cols = {}
    for t in FACT_TABLES:
        info = db.execute(f"PRAGMA table_info({t})").fetchall()
        if info:
            cols[t] = [c[1] for c in info if c[1] not in NOT_VALUES]
    return cols


def store_figures(path, uri_ro=True):
    """Logical size (pages in use, WAL content included) and values per table,
    in one read transaction."""
    if uri_ro:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None,
                             timeout=10)
    else:
        db = sqlite3.connect(path, isolation_level=None, timeout=10)
    try:
        db.execute("BEGIN")
        page = db.execute("PRAGMA page_size").fetchone()[0]
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        free = db.execute("PRAGMA freelist_count").fetchone()[0]
        tables = {}
        for t, cols in value_columns(db).items():
            row = db.execute(f"SELECT count(*)" + "".join(f", count({c})" for c in cols)
                             + f" FROM {t}").fetchone()
            tables[t] = {"rows": row[0], "values": sum(row[1:]), "columns": cols}
        ticks = db.execute("SELECT count(*), min(ts_ms), max(ts_ms) FROM host_samples"
                           ).fetchone()
        db.execute("COMMIT")
    finally:
        db.close()
    return {"t": time.monotonic(), "bytes": (pages - free) * page, "page_size": page,
            "pages": pages, "free_pages": free, "tables": tables,
            "values": sum(v["values"] for v in tables.values()),
            "host_ticks": ticks[0], "ts_first_ms": ticks[1], "ts_last_ms": ticks[2]}


def file_bytes(path):
    return {s or "db": os.path.getsize(path + s) for s in ("", "-wal", "-shm")
            if os.path.exists(path + s)}


# ---- HTTP ----

class Scraper(threading.Thread):
    """GET each URL every interval (a new connection each time, as Prometheus
    would without keep-alive), until stopped."""

    def __init__(self, urls, interval_s):
        super().__init__(daemon=True)
        self.urls, self.interval_s = urls, interval_s
        self.stop = threading.Event()
        self.stats = {name: {"ok": 0, "failed": 0, "bytes": 0, "errors": []} for name in urls}

    def run(self):
        next_t = time.monotonic()
        while not self.stop.is_set():
            for name, url in self.urls.items():
                st = self.stats[name]
                try:
                    with urllib.request.urlopen(url, timeout=5) as r:
                        body = r.read()
                    st["ok"] += 1
                    st["bytes"] = len(body)
                except OSError as e:
                    st["failed"] += 1
                    if len(st["errors"]) < 5:
                        st["errors"].append(str(e))
            next_t += self.interval_s
            self.stop.wait(max(0.0, next_t - time.monotonic()))


def latency_phase(port, seconds, rate):
    """GET /metrics at `rate` per second for `seconds` over one keep-alive
    connection (reopened only if the server closes it); latency from sending
    the request to the last byte of the body, in ms."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    lat, errors, reconnects, size = [], 0, 0, 0

    def get():
        conn.request("GET", "/metrics")
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise http.client.HTTPException(f"status {r.status}")
        if r.getheader("Connection", "").lower() == "close":
            conn.close()
        return body

    get()  # warm-up: the TCP connect is not timed
    n = int(seconds * rate)
    start = time.monotonic()
    for i in range(n):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        if conn.sock is None:
            reconnects += 1
        t0 = time.perf_counter()
        try:
            body = get()
        except (OSError, http.client.HTTPException):
            errors += 1
            conn.close()
            continue
        lat.append((time.perf_counter() - t0) * 1000.0)
        size = len(body)
    wall = time.monotonic() - start
    conn.close()
    res = {"requests": n, "ok": len(lat), "errors": errors, "reconnects": reconnects,
           "bytes": size, "achieved_rate": n / wall if wall > 0 else 0.0}
    if lat:
        res.update(p50_ms=pct(lat, 50), p99_ms=pct(lat, 99), max_ms=max(lat),
                   mean_ms=statistics.mean(lat))
    return res


# ---- the run ----

def build_floor(tmp):
    exe = os.path.join(tmp, "bench-floor-all")
    argv = ["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", exe, FLOOR_SRC]
    subprocess.run(argv, check=True)
    return exe, cmdline(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o",
                         "bench-floor-all", "bench/floor_all.c"])


def stop(proc, sig=signal.SIGTERM, timeout=15):
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run(args, tmp):
    jobscope = os.path.join(args.build, "jobscope")
    sleepers_exe = os.path.join(args.build, "tests", "js-sleepers")
    floor_exe, floor_build = build_floor(tmp)
    env = dict(os.environ, LC_ALL="C")
    res = {"n": args.count, "duration_s": args.duration, "settle_s": args.settle,
           "latency_s": args.latency_seconds, "rate": args.rate, "floor_build": floor_build}

    # everything must outlive the window and both latency phases
    life_s = int(args.settle + args.duration + 2 * args.latency_seconds + 60)
    db_path = os.path.join(tmp, "agent.db")
    ready = os.path.join(tmp, "sleepers-ready")
    procs = {}
    scraper = None
    try:
        sl_argv = [sleepers_exe, "--count", args.count, "--seconds", life_s,
                   "--ready-file", ready]
        t = time.monotonic()
        procs["sleepers"] = subprocess.Popen([str(a) for a in sl_argv],
                                             stdout=subprocess.DEVNULL)
        wait_for(lambda: os.path.exists(ready), procs["sleepers"], 120, "js-sleepers")
        res["fork_s"] = time.monotonic() - t

        agent_err = os.path.join(tmp, "agent.err")
        ag_argv = [jobscope, "agent", "--interval", "1s", "--db", db_path,
                   "--listen", "127.0.0.1:0", "--exit-after", f"{life_s}s"]
        with open(agent_err, "w") as err:
            procs["agent"] = subprocess.Popen([str(a) for a in ag_argv], env=env,
                                              stdout=subprocess.DEVNULL, stderr=err)

        def agent_port():
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", read_text(agent_err))
            return int(m.group(1)) if m else None

        ag_port = wait_for(agent_port, procs["agent"], 30, "jobscope agent")

        ne_port = free_port()
        ne_argv = [NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{ne_port}"]
        ne_err = open(os.path.join(tmp, "node_exporter.err"), "w")
        procs["node_exporter"] = subprocess.Popen(ne_argv, stdout=subprocess.DEVNULL,
                                                  stderr=ne_err)
        ne_err.close()
        wait_for(lambda: http_ok(ne_port), procs["node_exporter"], 30, "node_exporter")
        wait_for(lambda: http_ok(ag_port), procs["agent"], 30, "jobscope agent /metrics")

        floor_s = int(args.settle + args.duration) + 2
        fl_argv = [floor_exe, "--interval-ms", 1000, "--seconds", floor_s]
        procs["floor"] = subprocess.Popen([str(a) for a in fl_argv], stdout=subprocess.PIPE,
                                          text=True)
        ps_argv = ["pidstat"] + PIDSTAT_ARGS
        procs["pidstat"] = subprocess.Popen(ps_argv, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, env=env)
        res["argv"] = {
            "sleepers": cmdline(sl_argv),
            "agent": cmdline(ag_argv).replace(tmp, "TMP"),
            "pidstat": "LC_ALL=C " + cmdline(ps_argv) + " >/dev/null",
            "node_exporter": cmdline(ne_argv),
            "floor": cmdline(["bench-floor-all"] + fl_argv[1:]),
        }
        scraper = Scraper({"agent": f"http://127.0.0.1:{ag_port}/metrics",
                           "node_exporter": f"http://127.0.0.1:{ne_port}/metrics"}, 1.0)
        scraper.start()
        pids = {name: procs[name].pid for name in TOOLS}

        time.sleep(args.settle)
        st0 = store_figures(db_path)
        load0 = float(read_text("/proc/loadavg").split()[0])
        s0 = snapshot(pids)
        time.sleep(args.duration)
        s1 = snapshot(pids)
        hwm = {name: status_kib(pid, "VmHWM") for name, pid in pids.items()}
        mem = {name: memory_figures(pid) for name, pid in pids.items()}
        rss = {name: status_kib(pid, "VmRSS") for name, pid in pids.items()}
        st1 = store_figures(db_path)
        res["store_files_window_end"] = file_bytes(db_path)
        res["loadavg1"] = [load0, float(read_text("/proc/loadavg").split()[0])]

        elapsed = s1["t"] - s0["t"]
        res["elapsed_s"] = elapsed
        ours = 0
        for name in TOOLS:
            du = s1[name][0] - s0[name][0]
            ds = s1[name][1] - s0[name][1]
            ours += du + ds
            res[name] = {"cpu_pct": (du + ds) / CLK_TCK / elapsed * 100,
                         "user_pct": du / CLK_TCK / elapsed * 100,
                         "sys_pct": ds / CLK_TCK / elapsed * 100,
                         "clock_ticks": du + ds,
                         "hwm_kib": hwm[name], "rss_kib": rss[name], **mem[name]}
        scraper_ticks = s1["self"] - s0["self"]
        busy = s1["host"][0] - s0["host"][0]
        res["script_cpu_pct"] = scraper_ticks / CLK_TCK / elapsed * 100
        res["other_load_cores"] = max(0.0, (busy - ours - scraper_ticks) / CLK_TCK / elapsed)
        res["host_busy_cores"] = busy / CLK_TCK / elapsed
        res["host_procs"] = [s0["nprocs"], s1["nprocs"]]

        # pidstat runs until told; the floor ends by itself in about 2 s
        stop(procs["pidstat"], signal.SIGINT)
        res["floor_summary"] = json.loads(
            (procs["floor"].communicate(timeout=30)[0] or "{}").strip().splitlines()[-1])
        scraper.stop.set()
        scraper.join(timeout=15)
        res["scrapes"] = scraper.stats

        # /metrics latency, one server after the other; the agent keeps sampling
        a0 = snapshot({"agent": pids["agent"]})
        res["latency"] = {"agent": latency_phase(ag_port, args.latency_seconds, args.rate)}
        a1 = snapshot({"agent": pids["agent"]})
        res["latency"]["node_exporter"] = latency_phase(ne_port, args.latency_seconds,
                                                        args.rate)
        d = (a1["agent"][0] + a1["agent"][1] - a0["agent"][0] - a0["agent"][1])
        res["agent_cpu_pct_under_scrapes"] = d / CLK_TCK / (a1["t"] - a0["t"]) * 100
        res["agent_hwm_kib_end"] = status_kib(pids["agent"], "VmHWM")
        res["agent_alive"] = procs["agent"].poll() is None
    finally:
        if scraper is not None:
            scraper.stop.set()
        for name in ("pidstat", "floor", "node_exporter", "agent", "sleepers"):
            stop(procs.get(name))
    res["agent_exit"] = procs["agent"].returncode
    res["agent_stderr"] = read_text(agent_err)[-2000:]

    # the store as the agent left it, then checkpointed into the main file
    res["store_files"] = file_bytes(db_path)
    db = sqlite3.connect(db_path, isolation_level=None)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    res["store_checkpointed_bytes"] = os.path.getsize(db_path)
    st2 = store_figures(db_path, uri_ro=False)
    res["store"] = {"window_start": st0, "window_end": st1, "final": st2}
    return res


def store_summary(res):
    st0, st1, fin = (res["store"][k] for k in ("window_start", "window_end", "final"))
    dt = st1["t"] - st0["t"]
    dv = st1["values"] - st0["values"]
    db = st1["bytes"] - st0["bytes"]
    minute_marks = (st1["ts_last_ms"] // 60000) - (st0["ts_last_ms"] // 60000)
    return {
        "window_s": dt,
        "window_ticks": st1["host_ticks"] - st0["host_ticks"],
        "window_values": dv,
        "window_bytes": db,
        "values_per_s": dv / dt,
        "bytes_per_value": db / dv if dv else float("nan"),
        "bytes_per_day": db / dt * 86400,
        "minute_boundaries": minute_marks,
        "final_values": fin["values"],
        "final_bytes": res["store_checkpointed_bytes"],
        "final_bytes_per_value": res["store_checkpointed_bytes"] / fin["values"]
        if fin["values"] else float("nan"),
        "final_ticks": fin["host_ticks"],
    }


def verdict(ok):
    return "PASS" if ok else "FAIL"


def report(args, res):
    """The results as Markdown (also printed)."""
    L = []
    tools = TOOLS
    a = res["agent"]
    L.append(f"Command: `{cmdline(['python3'] + sys.argv)}`")
    L.append("")
    L.append(f"{res['n']} extra sleeping processes (`{res['argv']['sleepers']}`, "
             f"forked in {res['fork_s']:.1f} s); {res['host_procs'][1]} processes on the host "
             f"at the end of the window.  Side by side, all at 1 s:")
    L.append("")
    L.append("```")
    for t in tools:
        L.append(res["argv"][t])
    L.append("```")
    L.append("")
    L.append(f"The floor built with `{res['floor_build']}`.  The agent's and node_exporter's "
             "/metrics scraped every 1 s by this script (urllib, a new connection each time; "
             "its CPU is not counted).  Window: "
             f"{res['elapsed_s']:.1f} s after {res['settle_s']:g} s of settling.  CPU % of one "
             "core from utime+stime of /proc/PID/stat (children included); peak RSS = VmHWM "
             "at the end of the window; VmRSS, RssAnon (its own memory) and RssFile (pages "
             "of its executable and libraries) of /proc/PID/status, PSS (Pss of "
             "/proc/PID/smaps_rollup: each shared page divided among the processes that map "
             "it) and the shared libraries mapped (distinct .so files in /proc/PID/maps) at "
             "the end of the window.")
    L.append("")
    L.append("| tool | CPU % of one core | user / sys % | peak RSS (VmHWM) | VmRSS | RssAnon | "
             "RssFile | PSS | shared libraries |")
    L.append("|---|---|---|---|---|---|---|---|---|")

    def mib(kib):
        return "-" if kib is None else f"{kib / 1024:.1f} MiB"

    for t in tools:
        r = res[t]
        L.append(f"| {t} | {r['cpu_pct']:.2f} | {r['user_pct']:.2f} / {r['sys_pct']:.2f} | "
                 f"{mib(r['hwm_kib'])} | {mib(r['vmrss_kib'])} | {mib(r['rss_anon_kib'])} | "
                 f"{mib(r['rss_file_kib'])} | {mib(r.get('pss_kib'))} | {r['libs']} |")
    L.append("")
    L.append("The agent as a ratio of each other tool (agent / tool):")
    L.append("")
    L.append("| agent / | CPU | VmRSS | RssAnon | PSS | shared libraries |")
    L.append("|---|---|---|---|---|---|")

    def over(k, o):
        x, y = a.get(k), res[o].get(k)
        return "-" if x is None or not y else f"{x / y:.2f}"

    for o in tools[1:]:
        L.append(f"| {o} | {over('cpu_pct', o)} | {over('vmrss_kib', o)} | "
                 f"{over('rss_anon_kib', o)} | {over('pss_kib', o)} | {over('libs', o)} |")
    L.append("")
    L.append("The agent's libraries: " + ", ".join(a["lib_names"]) + ".")
    L.append("")
    fs = res.get("floor_summary", {})
    sc = res["scrapes"]
    L.append(f"Floor: {fs.get('ticks', '?')} ticks ({fs.get('late_ticks', '?')} late), "
             f"{fs.get('last_scanned', '?')} processes in its last tick, "
             f"{fs.get('files_read', 0) / max(1, fs.get('ticks', 1)):.0f} files read per tick.  "
             "Scrapes during the window: " + "; ".join(
                 f"{k} {v['ok']} ok, {v['failed']} failed, {v['bytes']} bytes"
                 for k, v in sc.items())
             + f".  This script: {res['script_cpu_pct']:.2f} % of a core.  Other load "
             f"(host busy minus the four tools and this script): "
             f"{res['other_load_cores']:.2f} cores of {os.cpu_count()}; load average (1 min) "
             f"{res['loadavg1'][0]:.2f} at the start of the window, {res['loadavg1'][1]:.2f} "
             "at the end.")
    L.append("")

    def ratio(o):
        return a["cpu_pct"] / res[o]["cpu_pct"] if res[o]["cpu_pct"] > 0 else float("inf")

    r_ps, r_fl, r_ne = ratio("pidstat"), ratio("floor"), ratio("node_exporter")
    rss = a["hwm_kib"] / 1024
    vmrss = a["vmrss_kib"] / 1024
    lat = res["latency"]
    p99 = lat["agent"].get("p99_ms", float("inf"))
    checks = [
        ("agent CPU / pidstat CPU", f"{r_ps:.2f}", f"≤ {TARGETS['cpu_vs_pidstat']}",
         r_ps <= TARGETS["cpu_vs_pidstat"]),
        ("agent CPU / floor CPU", f"{r_fl:.2f}", f"≤ {TARGETS['cpu_vs_floor']:g}",
         r_fl <= TARGETS["cpu_vs_floor"]),
        ("agent CPU / node_exporter CPU", f"{r_ne:.2f}", "(no target)", None),
        ("agent CPU % of one core", f"{a['cpu_pct']:.2f}", f"≤ {TARGETS['cpu_pct']:g}",
         a["cpu_pct"] <= TARGETS["cpu_pct"]),
        ("agent VmRSS", f"{vmrss:.1f} MiB (RssAnon {a['rss_anon_kib'] / 1024:.1f} MiB)",
         f"≤ {TARGETS['vmrss_mib']:g} MiB", vmrss <= TARGETS["vmrss_mib"]),
        ("agent shared libraries mapped", f"{a['libs']}", "(no target)", None),
        ("agent peak RSS", f"{rss:.1f} MiB", f"≤ {TARGETS['rss_mib']:g} MiB",
         rss <= TARGETS["rss_mib"]),
        (f"agent /metrics p99 at {args.rate:g}/s", f"{p99:.2f} ms",
         f"≤ {TARGETS['metrics_p99_ms']:g} ms",
         p99 <= TARGETS["metrics_p99_ms"] and lat["agent"]["errors"] == 0),
    ]
    L.append("| check | measured | target | |")
    L.append("|---|---|---|---|")
    for name, v, t, ok in checks:
        L.append(f"| {name} | {v} | {t} | {'-' if ok is None else verdict(ok)} |")
    L.append("")

    L.append(f"/metrics latency, {args.rate:g} requests/s for {args.latency_seconds:g} s each "
             "over one keep-alive connection (http.client; from sending the request to the "
             "body's last byte, so Python's client time is included), the agent's first, "
             "then node_exporter's, with the sleepers alive and the agent sampling:")
    L.append("")
    L.append("| server | requests | errors | reconnects | body | p50 ms | p99 ms | max ms |")
    L.append("|---|---|---|---|---|---|---|---|")
    for k in ("agent", "node_exporter"):
        x = lat[k]
        L.append(f"| {k} | {x['ok']}/{x['requests']} | {x['errors']} | {x['reconnects']} | "
                 f"{x['bytes']} B | {x.get('p50_ms', float('nan')):.2f} | "
                 f"{x.get('p99_ms', float('nan')):.2f} | {x.get('max_ms', float('nan')):.2f} |")
    L.append("")
    L.append(f"The agent used {res['agent_cpu_pct_under_scrapes']:.2f} % of a core during its "
             f"latency phase (sampling plus {args.rate:g} scrapes/s).")
    L.append("")

    s = res["store_summary"]
    fin = res["store"]["final"]
    files = res["store_files"]
    L.append("Store growth.  Values = non-NULL cells of the value columns of "
             + ", ".join(FACT_TABLES) + " (every column but keys, references, timestamps "
             "and labels: " + ", ".join(sorted(NOT_VALUES)) + "); bytes = pages in use "
             "(page_count - freelist_count) × page_size, read in one transaction with the "
             "counts, the WAL's content included.")
    L.append("")
    L.append(f"- over the window: {s['window_values']} values in {s['window_ticks']} ticks "
             f"({s['values_per_s']:.0f} values/s), {s['window_bytes'] / 1024:.0f} KiB → "
             f"**{s['bytes_per_value']:.2f} bytes per value**, "
             f"**{s['bytes_per_day'] / 2**30:.2f} GiB per day** at this load "
             f"({s['bytes_per_day'] / 2**20:.0f} MiB; the window crossed "
             f"{s['minute_boundaries']} minute boundaries, where 1-minute rollups are "
             "written; raw samples are kept 7 days by default, so a store at this load "
             f"levels off near {7 * s['bytes_per_day'] / 2**30:.1f} GiB of raw samples)")
    L.append(f"- whole run: {s['final_ticks']} ticks, {s['final_values']} values; files at "
             "the end of the window: " + ", ".join(
                 f"{k} {v / 1024:.0f} KiB" for k, v in res["store_files_window_end"].items())
             + "; as the agent left them: " + ", ".join(f"{k} {v / 1024:.0f} KiB"
                                                        for k, v in files.items())
             + f"; checkpointed into one file {s['final_bytes'] / 1024:.0f} KiB = "
             f"{s['final_bytes_per_value']:.2f} bytes per value (first sight of every "
             "process, schema and indexes included)")
    L.append("- values per table over the whole run: " + ", ".join(
        f"{t} {v['values']} ({v['rows']} rows)" for t, v in fin["tables"].items()))
    L.append("")
    alive = res["agent_alive"] and res["agent_exit"] == 0
    L.append(f"Agent: {'ran through' if res['agent_alive'] else '**died during the run**'}, "
             f"exit status {res['agent_exit']} after SIGTERM; VmHWM at the very end "
             f"{res['agent_hwm_kib_end'] / 1024:.1f} MiB.")
    if not alive or res["agent_stderr"].count("\n") > 1:
        L.append("")
        L.append("Agent stderr (last lines):")
        L.append("")
        L.append("```")
        L.extend(res["agent_stderr"].strip().splitlines()[-15:])
        L.append("```")
    res["checks"] = [{"check": c[0], "measured": c[1], "target": c[2], "pass": c[3]}
                     for c in checks]
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="meson build directory (default build)")
    ap.add_argument("--count", type=int, default=1000, help="extra sleeping processes")
    ap.add_argument("--duration", type=float, default=60, help="window, seconds (default 60)")
    ap.add_argument("--quick", action="store_true",
                    help="a 15 s window and 5 s latency phases")
    ap.add_argument("--settle", type=float, default=5,
                    help="seconds between the start and the window (default 5)")
    ap.add_argument("--latency-seconds", type=float, default=None,
                    help="each /metrics latency phase (default 10, 5 with --quick)")
    ap.add_argument("--rate", type=float, default=20, help="requests/s in the latency phases")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    if args.quick:
        args.duration = 15
    if args.latency_seconds is None:
        args.latency_seconds = 5 if args.quick else 10

    missing = [x for x in (os.path.join(args.build, "jobscope"),
                           os.path.join(args.build, "tests", "js-sleepers"))
               if not os.access(x, os.X_OK)]
    if missing:
        sys.exit(f"agent_cost: {', '.join(missing)} missing: ninja -C {args.build}")
    for exe, pkg in ((NODE_EXPORTER, "prometheus-node-exporter"), ("pidstat", "sysstat"),
                     ("cc", "gcc")):
        if not shutil.which(exe):
            sys.exit(f"agent_cost: {exe} missing: apt-get install {pkg}")

    with tempfile.TemporaryDirectory(prefix="jobscope-agent-bench-") as tmp:
        try:
            res = run(args, tmp)
        except (RuntimeError, subprocess.SubprocessError, OSError, sqlite3.Error) as e:
            sys.exit(f"agent_cost: {e}")
    res["store_summary"] = store_summary(res)
    md = report(args, res)
    print(md)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "result": res}, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md)


if __name__ == "__main__":
    main()
