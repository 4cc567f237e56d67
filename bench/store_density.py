#!/usr/bin/env python3
"""store_density.py - bytes per value: jobscope's store, Prometheus, VictoriaMetrics.

The same values, in one run, into three stores:

  jobscope         the store as the agent (or js-mkstore) wrote it, VACUUMed; then, when
                   this jobscope has it, after `jobscope compact --db COPY --older-than DUR`
                   (closed hours packed into zstd column blobs) and VACUUM
  Prometheus       `promtool tsdb create-blocks-from openmetrics` (one 2 h block per file),
                   then compacted by `prometheus` itself (retention 10y, 18 h blocks at
                   most, as with the default 15-day retention) when it has blocks to compact
  VictoriaMetrics  `victoria-metrics` on 127.0.0.1, POST /api/v1/import (JSON lines), then
                   /internal/force_flush, /internal/force_merge, a graceful stop

Two sources of values, a node each:
  agent  `jobscope agent --interval 1s` for --window seconds (900; --quick: 120) with
         --count (1000) extra processes: js-sleepers, and --busy (10) js-busy spinners
         that this script lets run --busy-ms (10) ms a second (SIGCONT / SIGSTOP)
  bench  js-mkstore --scenario bench, 1 day of an 8-GPU 32-CPU node at 1 s (cached under
         /var/tmp/jobscope-bench as bench/report_bench.py caches its store), its first
         --store-hours hours (24; --quick: 2)

Values = the non-NULL cells of the value columns of the fact tables (host, cpu, disk, net,
proc, job, gpu and gpu_proc samples); ids, seq, timestamps and labels are not values
(agent_cost.py's NOT_VALUES).  One series per (table, column, entity): node; cpu; disk;
iface; pid and start of a process; a job's key; a GPU's index; GPU and pid.  (i) the rows'
samples as stored; (ii) carry-forward: the sample a 1 s scrape would give at every tick
of the node (its host_samples timestamps) from a series' first row to its end (a process's
or job's end, else its last row): bytes per logical value.

Usage: bench/store_density.py [--build build] [--sources agent,bench] [--window 900 |
           --quick] [--count 1000] [--busy 10] [--busy-ms 10] [--store-hours 24]
           [--older-than 1s] [--no-carry] [--cache-dir /var/tmp/jobscope-bench] [--remake]
           [--json F] [--markdown F]
Run from the repository root after `ninja -C BUILD jobscope tests/js-sleepers tests/js-busy
tests/js-mkstore`; needs promtool and prometheus (`prometheus`) and `victoria-metrics`.
Exits 0 whether the target is met or not; 1 if the benchmark cannot run.
"""
import argparse
import bisect
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from array import array

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_cost import NOT_VALUES, cmdline, free_port, read_text, stop, wait_for  # noqa: E402
from report_bench import ensure_store  # noqa: E402

FACT_TABLES = ["host_samples", "cpu_samples", "disk_samples", "net_samples", "proc_samples",
               "job_samples", "gpu_samples", "gpu_proc_samples"]
# gpu_proc_samples.graphics says what kind of GPU process it is: a label, not a value
LABEL_COLUMNS = NOT_VALUES | {"graphics"}
TARGET_BPV = 2.0            # first step; 1.0 in the end (issue 13)
BLOCK_MS = 2 * 3600 * 1000  # promtool's block
PROMTOOL, PROMETHEUS, VICTORIA = "promtool", "prometheus", "victoria-metrics"


def log(msg):
    print(f"store_density: {msg}", file=sys.stderr, flush=True)


# ---- the values ----

class Series:
    __slots__ = ("name", "labels", "ts", "v", "end", "node")

    def __init__(self, name, labels, end, node):
        self.name, self.labels, self.end, self.node = name, labels, end, node
        self.ts, self.v = array("q"), array("q")


def value_columns(db, table):
    info = db.execute(f"PRAGMA table_info({table})").fetchall()
    return [c[1] for c in info if c[1] not in LABEL_COLUMNS]


def load_series(path):
    """Every series of the fact tables' values, the nodes' tick grids, and counts."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    nodes = dict(db.execute("SELECT id, hostname FROM nodes"))
    procs = {r[0]: r[1:] for r in db.execute(
        "SELECT id, node_id, pid, start_ms, end_ms FROM procs")}
    jobs = {r[0]: r[1:] for r in db.execute(
        "SELECT id, node_id, scheduler, job_id, start_ms, end_ms FROM jobs")}
    devices = {r[0]: r[1:] for r in db.execute("SELECT id, node_id, idx FROM devices")}
    grids = {}
    for node_id, ts in db.execute(
            "SELECT node_id, ts_ms FROM host_samples ORDER BY node_id, ts_ms"):
        g = grids.setdefault(nodes[node_id], array("q"))
        if not g or g[-1] != ts:
            g.append(ts)

    # per table: the entity columns selected, and (labels, end, node) of an entity
    def proc_entity(proc_id):
        node_id, pid, start_ms, end_ms = procs[proc_id]
        return ((("node", nodes[node_id]), ("pid", str(pid)), ("start", str(start_ms // 1000))),
                end_ms, nodes[node_id])

    def job_entity(job_id):
        node_id, sched, jid, start_ms, end_ms = jobs[job_id]
        return ((("job", f"{sched}:{jid}:{start_ms}"), ("node", nodes[node_id])), end_ms,
                nodes[node_id])

    def gpu_entity(device_id):
        node_id, idx = devices[device_id]
        return (("gpu", str(idx)), ("node", nodes[node_id])), None, nodes[node_id]

    def gpu_proc_entity(device_id, pid, proc_id):
        node_id, idx = devices[device_id]
        end = procs[proc_id][3] if proc_id in procs else None
        return ((("gpu", str(idx)), ("node", nodes[node_id]), ("pid", str(pid))), end,
                nodes[node_id])

    ent_sql = {
        "host_samples": ("node_id", lambda n: ((("node", nodes[n]),), None, nodes[n])),
        "cpu_samples": ("node_id, cpu", lambda n, c: (
            (("cpu", str(c)), ("node", nodes[n])), None, nodes[n])),
        "disk_samples": ("node_id, disk", lambda n, d: (
            (("disk", d), ("node", nodes[n])), None, nodes[n])),
        "net_samples": ("node_id, iface", lambda n, i: (
            (("iface", i), ("node", nodes[n])), None, nodes[n])),
        "proc_samples": ("proc_id", proc_entity),
        "job_samples": ("job_id", job_entity),
        "gpu_samples": ("device_id", gpu_entity),
        "gpu_proc_samples": ("device_id, pid, proc_id", gpu_proc_entity),
    }
    series, counts = {}, {}
    for table in FACT_TABLES:
        cols = value_columns(db, table)
        ecols, make = ent_sql[table]
        ne = ecols.count(",") + 1
        per_entity = {}
        rows = values = 0
        sel = ", ".join(f"unicode({c})" if c == "state" else c for c in cols)
        for row in db.execute(f"SELECT ts_ms, {ecols}, {sel} FROM {table} ORDER BY seq"):
            rows += 1
            ekey = row[1:1 + ne]
            slots = per_entity.get(ekey)
            if slots is None:
                labels, end, node = make(*ekey)
                slots = []
                for c in cols:
                    s = series.get((table + "_" + c, labels))
                    if s is None:
                        s = Series(table + "_" + c, labels, end, node)
                        series[(s.name, labels)] = s
                    slots.append(s)
                per_entity[ekey] = slots
            ts = row[0]
            for s, v in zip(slots, row[1 + ne:]):
                if v is not None:
                    s.ts.append(ts)
                    s.v.append(v)
                    values += 1
        counts[table] = {"rows": rows, "values": values, "columns": cols}
    db.close()
    kept = [s for s in series.values() if len(s.ts)]  # a column NULL in every row: no series
    counts["procs"] = len(procs)
    return kept, grids, counts, tidy(kept)


def tidy(all_series):
    """Series in time order, one sample per timestamp (the last row's), as both TSDBs
    need; how many samples that moved or dropped (0 when the store is as expected)."""
    moved = dropped = 0
    for s in all_series:
        ts = s.ts
        if all(ts[i] < ts[i + 1] for i in range(len(ts) - 1)):
            continue
        pairs = sorted(zip(ts, range(len(ts)), s.v))
        moved += 1
        keep = {}
        for t, _, v in pairs:
            keep[t] = v
        dropped += len(ts) - len(keep)
        s.ts, s.v = array("q", keep.keys()), array("q", keep.values())
    return {"series_reordered": moved, "samples_dropped": dropped}


def carried(s, grids):
    """The series as a 1 s scrape would give it: a sample at every tick of its node from
    its first row to its end, the last value carried forward; its own rows off the grid
    kept too."""
    grid = grids.get(s.node) or array("q")
    ts, v = s.ts, s.v
    end = ts[-1]
    if s.end is not None:
        end = max(end, s.end)
    elif s.labels and any(k in ("pid", "job") for k, _ in s.labels):
        end = max(end, grid[-1] if grid else end)  # still alive at the store's end
    if grid:
        end = min(end, max(grid[-1], ts[-1]))
    lo, hi = bisect.bisect_left(grid, ts[0]), bisect.bisect_right(grid, end)
    out_t, out_v = array("q"), array("q")
    i, n, cur = 0, len(ts), None
    for g in grid[lo:hi]:
        while i < n and ts[i] <= g:
            if ts[i] < g:
                out_t.append(ts[i])
                out_v.append(v[i])
            cur = v[i]
            i += 1
        out_t.append(g)
        out_v.append(cur)
    while i < n:
        out_t.append(ts[i])
        out_v.append(v[i])
        i += 1
    c = Series(s.name, s.labels, s.end, s.node)
    c.ts, c.v = out_t, out_v
    return c


# ---- jobscope ----

def store_bytes(path):
    """Pages in use × page size, and bytes per table (its indexes with it) from dbstat."""
    db = sqlite3.connect(path)
    page = db.execute("PRAGMA page_size").fetchone()[0]
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    free = db.execute("PRAGMA freelist_count").fetchone()[0]
    owner = dict(db.execute("SELECT name, tbl_name FROM sqlite_master"))
    per = {}
    for name, size in db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
        t = owner.get(name, name)
        per[t] = per.get(t, 0) + size
    db.close()
    return {"bytes": (pages - free) * page, "page_size": page, "pages": pages,
            "free_pages": free, "file_bytes": os.path.getsize(path), "tables": per}


def row_counts(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    out = {}
    for t in FACT_TABLES:
        cols = value_columns(db, t)
        r = db.execute("SELECT count(*)" + "".join(f", count({c})" for c in cols)
                       + f" FROM {t}").fetchone()
        out[t] = {"rows": r[0], "values": sum(r[1:])}
    db.close()
    return out


def vacuum(path):
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("PRAGMA journal_mode = DELETE")
    db.execute("VACUUM")
    db.close()


def has_compact(jobscope):
    p = subprocess.run([jobscope, "compact", "--help"], capture_output=True, text=True)
    return p.returncode == 0


def measure_jobscope(args, src, tmp):
    res = {}
    work = os.path.join(tmp, "js-unpacked.db")
    shutil.copyfile(src, work)
    vacuum(work)
    res["unpacked"] = store_bytes(work)
    before = row_counts(work)
    res["unpacked"]["values"] = sum(t["values"] for t in before.values())
    jobscope = os.path.join(args.build, "jobscope")
    if not has_compact(jobscope):
        res["compact"] = "not available"
        os.unlink(work)
        return res
    argv = [jobscope, "compact", "--db", work, "--older-than", args.older_than]
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True)
    res["compact_argv"] = cmdline(argv).replace(tmp, "TMP")
    res["compact_s"] = time.monotonic() - t0
    res["compact_rc"] = p.returncode
    res["compact_stderr"] = (p.stdout + p.stderr)[-1500:]
    if p.returncode != 0:
        res["compact"] = f"failed (exit {p.returncode})"
        return res
    res["compact"] = "done"
    vacuum(work)
    packed = store_bytes(work)
    after = row_counts(work)
    db = sqlite3.connect(f"file:{work}?mode=ro", uri=True)
    nrows = dict(db.execute("SELECT tbl, sum(nrows) FROM packs GROUP BY tbl"))
    npacks = db.execute("SELECT count(*), coalesce(sum(length(data)), 0),"
                        " coalesce(sum(raw_bytes), 0) FROM packs").fetchone()
    db.close()
    packed["values_in_rows"] = sum(t["values"] for t in after.values())
    packed["values_packed"] = res["unpacked"]["values"] - packed["values_in_rows"]
    packed["packs"] = {"count": npacks[0], "blob_bytes": npacks[1], "raw_bytes": npacks[2]}
    packed["packs_bytes"] = packed["tables"].get("packs", 0)
    packed["rows_check"] = {t: {"rows_before": before[t]["rows"], "rows_after": after[t]["rows"],
                                "packs_nrows": nrows.get(t, 0),
                                "ok": before[t]["rows"] - after[t]["rows"] == nrows.get(t, 0)}
                            for t in FACT_TABLES}
    res["packed"] = packed
    os.unlink(work)
    return res


# ---- Prometheus ----

def om_escape(s):
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def write_openmetrics(series, path, t0, t1):
    """Samples in [t0, t1) of every series, series after series, in OpenMetrics; the
    timestamp in seconds with half a millisecond added, which Prometheus' parser
    (int64(ts * 1000)) truncates to the exact millisecond."""
    n = 0
    with open(path, "w") as f:
        for s in series:
            lo, hi = bisect.bisect_left(s.ts, t0), bisect.bisect_left(s.ts, t1)
            if lo == hi:
                continue
            head = s.name + "{" + ",".join(f'{k}="{om_escape(v)}"' for k, v in s.labels) + "} "
            ts, v = s.ts, s.v
            f.write("".join(f"{head}{v[i]} {ts[i] // 1000}.{ts[i] % 1000:03d}5\n"
                            for i in range(lo, hi)))
            n += hi - lo
        f.write("# EOF\n")
    return n


def dir_files(path, skip=()):
    """{relative path: bytes} of the regular files under path."""
    out = {}
    for root, dirs, files in os.walk(path):
        for name in files:
            p = os.path.join(root, name)
            rel = os.path.relpath(p, path)
            if rel.split(os.sep)[0] in skip or os.path.islink(p):
                continue
            out[rel] = os.path.getsize(p)
    return out


def prom_blocks(path):
    blocks = []
    for d in sorted(os.listdir(path)):
        meta = os.path.join(path, d, "meta.json")
        if os.path.exists(meta):
            m = json.load(open(meta))
            files = dir_files(os.path.join(path, d))
            blocks.append({"ulid": d, "min_ms": m["minTime"], "max_ms": m["maxTime"],
                           "level": m["compaction"]["level"], **m["stats"],
                           "bytes": sum(files.values()),
                           "chunks_bytes": sum(n for f, n in files.items()
                                               if f.startswith("chunks" + os.sep))})
    return blocks


def measure_prometheus(series, tmp, tag):
    out = os.path.join(tmp, f"prom-{tag}")
    os.makedirs(out)
    tmin = min(s.ts[0] for s in series)
    tmax = max(s.ts[-1] for s in series)
    res = {"files": 0, "samples_written": 0, "promtool_s": 0.0, "write_s": 0.0}
    series = sorted(series, key=lambda s: (s.name, s.labels))
    b = tmin - tmin % BLOCK_MS
    while b <= tmax:
        f = os.path.join(tmp, "block.om")
        t0 = time.monotonic()
        n = write_openmetrics(series, f, b, b + BLOCK_MS)
        res["write_s"] += time.monotonic() - t0
        if n:
            res["om_bytes"] = res.get("om_bytes", 0) + os.path.getsize(f)
            t0 = time.monotonic()
            p = subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", "-q", f,
                                out], capture_output=True, text=True)
            res["promtool_s"] += time.monotonic() - t0
            if p.returncode != 0:
                raise RuntimeError(f"promtool failed: {(p.stdout + p.stderr)[-500:]}")
            res["files"] += 1
            res["samples_written"] += n
        os.unlink(f)
        b += BLOCK_MS
    res["blocks_promtool"] = prom_blocks(out)
    res["bytes_promtool"] = sum(x["bytes"] for x in res["blocks_promtool"])
    # Prometheus compacts three 2 h blocks into 6 h and so on, leaving out the newest
    # block: with fewer than four blocks there is nothing to do
    if len(res["blocks_promtool"]) >= 4:
        res["compaction"] = prom_compact(out, tmp)
    else:
        res["compaction"] = "not needed (fewer than 4 blocks)"
    res["blocks"] = prom_blocks(out)
    res["bytes"] = sum(x["bytes"] for x in res["blocks"])
    res["chunks_bytes"] = sum(x["chunks_bytes"] for x in res["blocks"])
    res["samples_stored"] = sum(x["numSamples"] for x in res["blocks"])
    res["series_stored"] = max((x["numSeries"] for x in res["blocks"]), default=0)
    shutil.rmtree(out)
    return res


def prom_compact(path, tmp):
    """Prometheus itself on the blocks, until its compaction (every minute) is done."""
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global: {}\n")
    port = free_port()
    argv = [PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={path}",
            "--storage.tsdb.retention.time=10y", "--storage.tsdb.max-block-duration=18h",
            f"--web.listen-address=127.0.0.1:{port}"]
    errf = os.path.join(tmp, "prometheus.err")
    t0 = time.monotonic()
    with open(errf, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
    try:
        wait_for(lambda: "Server is ready to receive web requests" in read_text(errf), proc, 120,
                 "prometheus")
        last, since = None, time.monotonic()
        while time.monotonic() - t0 < 300:
            time.sleep(2)
            names = sorted(os.listdir(path))
            if names != last:
                last, since = names, time.monotonic()
            text = read_text(errf)
            started = "compact blocks" in text
            if time.monotonic() - t0 > 75 and time.monotonic() - since > 12 and (
                    started or time.monotonic() - t0 > 100) and not any(
                    ".tmp" in n for n in names):
                break
    finally:
        stop(proc)
    text = read_text(errf)
    return {"argv": cmdline(argv).replace(tmp, "TMP"), "seconds": time.monotonic() - t0,
            "compactions": text.count("compact blocks"), "exit": proc.returncode}


# ---- VictoriaMetrics ----

def http(method, url, body=None, timeout=600):
    req = urllib.request.Request(url, data=body, method=method)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read()


def measure_victoria(series, tmp, tag):
    data = os.path.join(tmp, f"vm-{tag}")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [VICTORIA, f"-storageDataPath={data}", f"-httpListenAddr=127.0.0.1:{port}",
            "-retentionPeriod=100y"]
    errf = os.path.join(tmp, f"vm-{tag}.err")
    res = {"argv": cmdline(argv).replace(tmp, "TMP")}
    with open(errf, "w") as err:
        proc = subprocess.Popen(argv, stdout=err, stderr=subprocess.STDOUT)
    try:
        def ready():
            try:
                return http("GET", base + "/health", timeout=2)[0] == 200
            except OSError:
                return False
        wait_for(ready, proc, 60, "victoria-metrics")
        t0 = time.monotonic()
        sent, buf, size = 0, [], 0
        for s in series:
            line = json.dumps({"metric": {"__name__": s.name, **dict(s.labels)},
                               "values": s.v.tolist(), "timestamps": s.ts.tolist()},
                              separators=(",", ":"))
            buf.append(line)
            size += len(line)
            sent += len(s.ts)
            if size > 16 << 20:
                http("POST", base + "/api/v1/import", ("\n".join(buf) + "\n").encode())
                buf, size = [], 0
        if buf:
            http("POST", base + "/api/v1/import", ("\n".join(buf) + "\n").encode())
        res["samples_sent"] = sent
        res["import_s"] = time.monotonic() - t0
        http("GET", base + "/internal/force_flush")
        time.sleep(2)
        # read back: every sample of every series
        t0 = time.monotonic()
        q = urllib.parse.urlencode({"match[]": '{__name__=~".+"}', "start": "0"})
        got = nseries = 0
        req = urllib.request.Request(f"{base}/api/v1/export?{q}")
        with urllib.request.urlopen(req, timeout=1200) as r:
            for line in r:
                if line.strip():
                    got += len(json.loads(line)["values"])
                    nseries += 1
        res["export_s"] = time.monotonic() - t0
        res["samples_exported"], res["series_exported"] = got, nseries
        res["series_count"] = json.loads(http("GET", base + "/api/v1/series/count")[1]).get(
            "data", [None])[0]
        http("GET", base + "/internal/force_merge")
        wait_for(lambda: re.search(r"forced merge .* has been successfully finished",
                                   read_text(errf)), proc, 1200, "victoria-metrics force_merge")
        time.sleep(3)
    finally:
        stop(proc, signal.SIGINT, timeout=120)
    res["exit"] = proc.returncode
    # cache/ holds query-result and index caches, rebuilt at will: not the data
    files = dir_files(data, skip=("flock.lock",))
    res["bytes_by_dir"] = {}
    for rel, n in files.items():
        top = rel.split(os.sep)[0]
        res["bytes_by_dir"][top] = res["bytes_by_dir"].get(top, 0) + n
    res["bytes"] = sum(n for top, n in res["bytes_by_dir"].items() if top != "cache")
    shutil.rmtree(data)
    return res


# ---- the sources ----

def run_agent(args, tmp):
    """The agent's store after --window seconds at 1 s with the extra processes."""
    jobscope = os.path.join(args.build, "jobscope")
    life = int(args.window + 120)
    db_path = os.path.join(tmp, "agent.db")
    ready = os.path.join(tmp, "sleepers-ready")
    procs, busy = {}, []
    stop_duty = threading.Event()
    info = {"count": args.count, "busy": args.busy, "busy_ms": args.busy_ms,
            "window_s": args.window}
    try:
        sl = [os.path.join(args.build, "tests", "js-sleepers"), "--count", str(args.count),
              "--seconds", str(life), "--ready-file", ready]
        procs["sleepers"] = subprocess.Popen(sl, stdout=subprocess.DEVNULL)
        wait_for(lambda: os.path.exists(ready), procs["sleepers"], 120, "js-sleepers")
        bz = [os.path.join(args.build, "tests", "js-busy"), "--seconds", str(life)]
        for _ in range(args.busy):
            p = subprocess.Popen(bz, stdout=subprocess.DEVNULL)
            p.send_signal(signal.SIGSTOP)
            busy.append(p)

        def duty():  # each spinner runs busy_ms a second: its counters move every tick
            while not stop_duty.wait(max(0.0, 1.0 - args.busy_ms / 1000)):
                for p in busy:
                    p.send_signal(signal.SIGCONT)
                time.sleep(args.busy_ms / 1000)
                for p in busy:
                    p.send_signal(signal.SIGSTOP)

        threading.Thread(target=duty, daemon=True).start()
        ag = [jobscope, "agent", "--interval", "1s", "--db", db_path, "--listen", "none",
              "--exit-after", f"{life}s"]
        errf = os.path.join(tmp, "agent.err")
        with open(errf, "w") as err:
            procs["agent"] = subprocess.Popen(ag, stdout=subprocess.DEVNULL, stderr=err)
        info["argv"] = {"sleepers": cmdline(sl).replace(tmp, "TMP"),
                        "busy": cmdline(bz), "agent": cmdline(ag).replace(tmp, "TMP")}
        log(f"agent: sampling for {args.window:g} s")
        end = time.monotonic() + args.window
        while time.monotonic() < end:
            if procs["agent"].poll() is not None:
                raise RuntimeError(f"jobscope agent exited with {procs['agent'].returncode}: "
                                   + read_text(errf)[-500:])
            time.sleep(min(5.0, max(0.0, end - time.monotonic())))
        stop(procs["agent"])
        info["agent_exit"] = procs["agent"].returncode
        info["agent_stderr"] = read_text(errf)[-1000:]
    finally:
        stop_duty.set()
        for p in busy:
            p.send_signal(signal.SIGCONT)
            stop(p, signal.SIGKILL)
        for p in procs.values():
            stop(p)
    vacuum(db_path)
    return db_path, info


def bench_store(args, tmp):
    """js-mkstore's bench store (cached), its first --store-hours hours in a copy."""
    ns = argparse.Namespace(days=1, history_days=0, gpus=8, cpus=32, jobs=4, jobs_per_day=200,
                            nodes=16, cache_dir=args.cache_dir, remake=args.remake)
    path, meta = ensure_store(ns, os.path.join(args.build, "tests", "js-mkstore"))
    copy = os.path.join(tmp, "bench.db")
    shutil.copyfile(path, copy)
    db = sqlite3.connect(copy, isolation_level=None)
    t0 = db.execute("SELECT min(ts_ms) FROM host_samples").fetchone()[0]
    cut = t0 + int(args.store_hours * 3600000)
    for t in FACT_TABLES + ["events", "rollups", "gaps"]:
        db.execute(f"DELETE FROM {t} WHERE ts_ms >= ?", (cut,))
    db.close()
    vacuum(copy)
    return copy, {"store": path, "mkstore": meta.get("argv"), "made_now": meta.get("made_now"),
                  "hours": args.store_hours, "from_ms": t0, "to_ms": cut}


def measure_source(args, name, src, tmp, info):
    log(f"{name}: reading the values")
    t0 = time.monotonic()
    series, grids, counts, fixed = load_series(src)
    values = sum(len(s.ts) for s in series)
    nprocs = counts.pop("procs")
    res = {"info": info, "tables": counts, "values": values, "series": len(series),
           "procs": nprocs,
           "tidy": fixed, "ticks": {k: len(g) for k, g in grids.items()},
           "load_s": time.monotonic() - t0}
    res["span_s"] = (max(s.ts[-1] for s in series) - min(s.ts[0] for s in series)) / 1000
    log(f"{name}: {values:,} values in {len(series):,} series; jobscope")
    res["jobscope"] = measure_jobscope(args, src, tmp)
    modes = {"rows": series}
    if args.carry:
        cf = [carried(s, grids) for s in series]
        modes["carry"] = cf
        res["logical_values"] = sum(len(s.ts) for s in cf)
    for mode, ss in modes.items():
        log(f"{name}: Prometheus ({mode})")
        res.setdefault("prometheus", {})[mode] = measure_prometheus(ss, tmp, f"{name}-{mode}")
        log(f"{name}: VictoriaMetrics ({mode})")
        res.setdefault("victoria", {})[mode] = measure_victoria(ss, tmp, f"{name}-{mode}")
    return res


# ---- the figures ----

def figures(r):
    """bytes per value of each store, (i) per stored value and (ii) per logical value."""
    v, lv = r["values"], r.get("logical_values")
    j = r["jobscope"]
    js_bytes = j["packed"]["bytes"] if "packed" in j else j["unpacked"]["bytes"]
    f = {"jobscope_unpacked": j["unpacked"]["bytes"] / v, "jobscope": js_bytes / v,
         "jobscope_bytes": js_bytes, "jobscope_is_packed": "packed" in j}
    if "packed" in j and j["packed"]["values_packed"]:
        f["jobscope_packs_only"] = j["packed"]["packs_bytes"] / j["packed"]["values_packed"]
    f["prometheus"] = r["prometheus"]["rows"]["bytes"] / v
    f["victoria"] = r["victoria"]["rows"]["bytes"] / v
    # the samples alone, labels and indexes left out: jobscope's fact tables (with their
    # indexes) and packs, Prometheus' chunks/, VictoriaMetrics' data/
    tables = (j["packed"] if "packed" in j else j["unpacked"])["tables"]
    f["samples_only"] = {
        "jobscope": sum(tables.get(t, 0) for t in FACT_TABLES + ["packs"]) / v,
        "prometheus": r["prometheus"]["rows"]["chunks_bytes"] / v,
        "victoria": r["victoria"]["rows"]["bytes_by_dir"].get("data", 0) / v}
    if lv:
        f["logical"] = {"jobscope": js_bytes / lv,
                        "prometheus": r["prometheus"]["carry"]["bytes"] / lv,
                        "victoria": r["victoria"]["carry"]["bytes"] / lv}
    # the same values: what each TSDB holds against what jobscope's rows hold
    agree = {"prometheus": r["prometheus"]["rows"]["samples_stored"] == v,
             "victoria": r["victoria"]["rows"]["samples_exported"] == v}
    if lv:
        agree["prometheus_carry"] = r["prometheus"]["carry"]["samples_stored"] == lv
        agree["victoria_carry"] = r["victoria"]["carry"]["samples_exported"] == lv
    if "packed" in j:
        agree["jobscope_packs_rows"] = all(x["ok"] for x in j["packed"]["rows_check"].values())
    f["agree"] = agree
    return f


def ratio(a, b):
    return f"{a / b:.2f}" if b else "-"


def mib(n):
    return f"{n / 2**20:,.1f} MiB"


def report(args, res):
    L = [f"Command: `{cmdline(['python3'] + sys.argv)}`", ""]
    L.append("Values = the non-NULL cells of the value columns of " + ", ".join(FACT_TABLES)
             + " (ids, seq, timestamps and labels are not values).  Bytes: jobscope = pages "
             "in use × page size after VACUUM; Prometheus = its blocks' files (chunks, index, "
             "meta.json, tombstones); VictoriaMetrics = every file under -storageDataPath "
             "after a graceful stop (data/, indexdb/, metadata/; its cache/ and flock.lock "
             "left out).  "
             "(i) = the samples of jobscope's rows; (ii) = the samples a 1 s scrape would "
             "give (every tick of a series' life, the last value carried forward).")
    L.append("")
    L.append("| source | values (i) | jobscope | Prometheus | VictoriaMetrics | "
             "jobscope / Prometheus | jobscope / VictoriaMetrics |")
    L.append("|---|---|---|---|---|---|---|")
    for name, r in res["sources"].items():
        if "error" in r:
            L.append(f"| {name} | failed: {r['error']} | | | | | |")
            continue
        f = r["figures"]
        js = "packed" if f["jobscope_is_packed"] else "unpacked"
        L.append(f"| {name}, per stored value (i) | {r['values']:,} | "
                 f"**{f['jobscope']:.2f}** ({js}) | {f['prometheus']:.2f} | {f['victoria']:.2f} "
                 f"| {f['jobscope'] / f['prometheus']:.2f} | {f['jobscope'] / f['victoria']:.2f} |")
        if "logical" in f:
            lg = f["logical"]
            L.append(f"| {name}, per scraped value (ii) | {r['logical_values']:,} | "
                     f"{lg['jobscope']:.2f} | {lg['prometheus']:.2f} | {lg['victoria']:.2f} | "
                     f"{lg['jobscope'] / lg['prometheus']:.2f} | "
                     f"{lg['jobscope'] / lg['victoria']:.2f} |")
    L.append("")
    L.append("Bytes per value, whole stores; ratios above 1 mean jobscope's store is larger.  "
             "The samples alone (labels, series and their indexes left out: jobscope's fact "
             "tables with their indexes and `packs`; Prometheus' `chunks/`; VictoriaMetrics' "
             "`data/`), per stored value (i):")
    L.append("")
    L.append("| source | jobscope | Prometheus | VictoriaMetrics | jobscope / Prometheus | "
             "jobscope / VictoriaMetrics |")
    L.append("|---|---|---|---|---|---|")
    for name, r in res["sources"].items():
        if "error" in r:
            continue
        so = r["figures"]["samples_only"]
        L.append(f"| {name} | {so['jobscope']:.2f} | {so['prometheus']:.2f} | "
                 f"{so['victoria']:.2f} | {ratio(so['jobscope'], so['prometheus'])} | "
                 f"{ratio(so['jobscope'], so['victoria'])} |")
    L.append("")
    for name, r in res["sources"].items():
        if "error" in r:
            continue
        L.append(f"**{name}.**  " + source_text(name, r))
        L.append("")
    return "\n".join(L) + "\n"


def source_text(name, r):
    i, f, j = r["info"], r["figures"], r["jobscope"]
    t = []
    if name == "agent":
        t.append(f"`{i['argv']['agent']}` for {i['window_s']:g} s with {i['count']} sleepers "
                 f"(`{i['argv']['sleepers']}`) and {i['busy']} spinners (`{i['argv']['busy']}`, "
                 f"let run {i['busy_ms']} ms a second by SIGCONT/SIGSTOP), beside whatever "
                 "else runs on the host (the agent samples every process).")
    else:
        t.append(f"`{i['mkstore']}` (cached: {i['store']}), its first {i['hours']:g} h.")
    t.append(f"{r['values']:,} values in {r['series']:,} series ({r['procs']:,} processes "
             f"seen) over {r['span_s'] / 3600:.2f} h "
             f"({', '.join(f'{k} {v:,} ticks' for k, v in r['ticks'].items())}); "
             + ", ".join(f"{k} {v['values']:,}" for k, v in r["tables"].items() if v["rows"])
             + ".")
    if r["tidy"]["series_reordered"]:
        t.append(f"{r['tidy']['series_reordered']} series had samples out of time order or at "
                 f"one timestamp: {r['tidy']['samples_dropped']} samples dropped for the TSDBs.")
    u = j["unpacked"]
    t.append(f"jobscope unpacked: {mib(u['bytes'])} = {f['jobscope_unpacked']:.2f} B/value; "
             "by table (with its indexes): " + ", ".join(
                 f"{k} {mib(v)}" for k, v in sorted(u["tables"].items(), key=lambda x: -x[1])[:6])
             + ".")
    if "packed" in j:
        p = j["packed"]
        t.append(f"`{j['compact_argv']}` took {j['compact_s']:.1f} s: {mib(p['bytes'])} = "
                 f"**{f['jobscope']:.2f} B/value** for the whole file; packs "
                 f"{mib(p['packs_bytes'])}"
                 f" ({p['packs']['count']:,} packs, {mib(p['packs']['blob_bytes'])} of blobs from "
                 f"{mib(p['packs']['raw_bytes'])} raw) hold {p['values_packed']:,} values = "
                 + (f"{f['jobscope_packs_only']:.2f} B/value" if "jobscope_packs_only" in f
                    else "-")
                 + f"; {p['values_in_rows']:,} values left as rows.  Rows moved into packs = "
                 "packs' nrows for every table: "
                 + ("yes" if f["agree"]["jobscope_packs_rows"] else "**no**: " + json.dumps(
                     p["rows_check"])) + ".")
    else:
        t.append(f"compact: {j['compact']}"
                 + (f" ({j.get('compact_stderr', '').strip()[-300:]})" if j.get("compact_rc")
                    else "") + ".")
    for mode, label in (("rows", "(i)"), ("carry", "(ii)")):
        pr = r["prometheus"].get(mode)
        vm = r["victoria"].get(mode)
        if not pr:
            continue
        comp = pr["compaction"]
        comp_t = comp if isinstance(comp, str) else (
            f"then `{comp['argv']}` compacted them ({comp['compactions']} compactions)")
        t.append(f"Prometheus {label}: {pr['samples_written']:,} samples in {pr['files']} "
                 f"OpenMetrics files ({mib(pr.get('om_bytes', 0))}), promtool "
                 f"{pr['promtool_s']:.0f} s, {len(pr['blocks_promtool'])} blocks "
                 f"{mib(pr['bytes_promtool'])}; {comp_t}: {len(pr['blocks'])} blocks "
                 f"(levels {', '.join(str(b['level']) for b in pr['blocks'])}), "
                 f"{mib(pr['bytes'])}, numSamples {pr['samples_stored']:,}.  "
                 f"VictoriaMetrics {label}: {vm['samples_sent']:,} sent in {vm['import_s']:.0f} s, "
                 f"{vm['samples_exported']:,} exported back in {vm['series_exported']:,} series "
                 f"(series/count {vm['series_count']}); after force_merge and a stop "
                 f"{mib(vm['bytes'])} (" + ", ".join(
                     f"{k} {mib(v)}" for k, v in vm["bytes_by_dir"].items()) + ").")
    ag = f["agree"]
    t.append("Same values in each store (sample counts equal jobscope's): " + ", ".join(
        f"{k} {'yes' if v else '**no**'}" for k, v in ag.items()) + ".")
    return "  ".join(t)


def checks(res):
    out = []
    for name, r in res["sources"].items():
        if "error" in r:
            continue
        f = r["figures"]
        if f["jobscope_is_packed"]:
            p = r["jobscope"]["packed"]
            what = (f"after compact: {100 * p['values_packed'] / r['values']:.0f} % of the values "
                    "packed")
        else:
            what = f"unpacked, compact {r['jobscope']['compact']}"
        out.append({"check": f"{name}: jobscope bytes per value ({what})",
                    "measured": f"{f['jobscope']:.2f} (Prometheus {f['prometheus']:.2f}, "
                                f"VictoriaMetrics {f['victoria']:.2f})",
                    "target": f"≤ {TARGET_BPV:g}", "pass": f["jobscope"] <= TARGET_BPV})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--sources", default="agent,bench", help="agent,bench (default both)")
    ap.add_argument("--window", type=float, default=900, help="agent: seconds sampled (900)")
    ap.add_argument("--quick", action="store_true",
                    help="a 120 s agent window and 2 hours of the bench store")
    ap.add_argument("--count", type=int, default=1000, help="agent: extra sleeping processes")
    ap.add_argument("--busy", type=int, default=10, help="agent: extra spinning processes")
    ap.add_argument("--busy-ms", type=int, default=10, help="agent: a spinner's ms a second")
    ap.add_argument("--store-hours", type=float, default=24,
                    help="bench: hours of the 1-day js-mkstore store (default 24)")
    ap.add_argument("--older-than", default="1s", help="jobscope compact --older-than (1s)")
    ap.add_argument("--no-carry", dest="carry", action="store_false",
                    help="leave out (ii), the carried-forward samples")
    ap.add_argument("--cache-dir", default="/var/tmp/jobscope-bench")
    ap.add_argument("--remake", action="store_true", help="make the bench store again")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    if args.quick:
        args.window, args.store_hours = 120, 2
    sources = [s for s in args.sources.split(",") if s]
    if not sources or any(s not in ("agent", "bench") for s in sources):
        ap.error("--sources: agent, bench or both")
    need = [os.path.join(args.build, x) for x in
            ("jobscope", "tests/js-sleepers", "tests/js-busy", "tests/js-mkstore")]
    missing = [x for x in need if not os.access(x, os.X_OK)]
    if missing:
        sys.exit(f"store_density: {', '.join(missing)} missing: ninja -C {args.build} "
                 "jobscope tests/js-sleepers tests/js-busy tests/js-mkstore")
    for exe, pkg in ((PROMTOOL, "prometheus"), (PROMETHEUS, "prometheus"),
                     (VICTORIA, "victoria-metrics")):
        if not shutil.which(exe):
            sys.exit(f"store_density: {exe} missing: apt-get install {pkg}")

    res = {"sources": {}, "versions": {}}
    for pkg in ("prometheus", "victoria-metrics"):  # victoria-metrics -version prints nothing
        p = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True,
                           text=True)
        res["versions"][pkg] = p.stdout.strip() or "?"
    t_all = time.monotonic()
    for name in sources:
        with tempfile.TemporaryDirectory(prefix=f"jobscope-density-{name}-") as tmp:
            t0 = time.monotonic()
            try:
                if name == "agent":
                    src, info = run_agent(args, tmp)
                else:
                    src, info = bench_store(args, tmp)
                r = measure_source(args, name, src, tmp, info)
                r["figures"] = figures(r)
            except (RuntimeError, subprocess.SubprocessError, OSError, sqlite3.Error,
                    ValueError, KeyError) as e:
                log(f"{name}: {e}")
                r = {"error": str(e)}
            r["seconds"] = time.monotonic() - t0
            res["sources"][name] = r
    res["seconds"] = time.monotonic() - t_all
    if all("error" in r for r in res["sources"].values()):
        sys.exit("store_density: no source could be measured")
    md = report(args, res)
    res["checks"] = checks(res)
    print(md)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "result": res}, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md)


if __name__ == "__main__":
    main()
