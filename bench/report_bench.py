#!/usr/bin/env python3
"""report_bench.py - `jobscope report` on a week-long store against the sqlite3 CLI.

The store: `js-mkstore --scenario bench` (tests/tools/mkstore.c): node01 with
8 GPUs and 32 CPUs, 7 days at 1 s of host, per-CPU, disk, network, process,
job, GPU and GPU-process rows, 1-minute and 1-hour rollups, 20 jobs of 4-12 h
with their summaries; and 30 older days of 200 jobs a day over 16 nodes and
40 users with summaries only (for history queries).  Made once and kept in
/var/tmp/jobscope-bench/ under a name that holds its arguments and a hash of
mkstore.c (made again when either changes, or with --remake); how long the
making took is kept beside it.

Measured: each command --runs times (default 5) after one unmeasured warm-up
run that also reads the store into the page cache; the commands interleaved
round by round, so all see the same machine; wall time from fork to exit and
peak RSS (GNU time's %M, its child's ru_maxrss); median and max.

  (a) one long job (the longest of the 20), its report:
      jobscope report --db STORE --job slurm:ID                (text)
      jobscope report --db STORE --job slurm:ID --format json
      peer, the floor of reading the data: sqlite3 -readonly STORE, one
      SELECT count(*), sum() over the job's job_samples rows and the
      gpu_samples rows of its node's devices in its window
      peer, for the breakdown: the same over every row a report needs (the
      job's job, process and GPU-process samples and events, its node's host
      samples and GPU samples in its window; the per-CPU, disk and interface
      rows left out, as job_report_load leaves them out)
  (b) history by user over the whole store (37 days):
      jobscope report --db STORE --by user --since S --until U
      (absolute RFC 3339 times: the store lies in 2026-01)
      peer: sqlite3 -readonly STORE, one GROUP BY user over jobs JOIN
      job_summaries in the window (the same sums)
  and, for the breakdown, sqlite3 STORE 'PRAGMA quick_check' (jobscope's
  store_open runs it on every open).

  (c) report time against job length: the store also holds three CPU jobs
      on node01 of 1 h, 8 h and the whole raw period (js-mkstore
      --length-jobs: slurm 9001, 9002, 9003); `jobscope compact --db STORE --no-pack`
      runs once first (timed; a cached store keeps its checkpoints), then
      each job's text report is measured from its report checkpoint and,
      with JOBSCOPE_NO_CKPT=1, by a whole replay; the two outputs must be
      the same bytes.

Targets: (a) median ≤ 1 s and peak RSS ≤ 64 MiB, text and JSON; (b) median
≤ 2 s; (c) the whole-period job's report within 2x of the 8 h job's, and
≤ 200 ms.  Ratios jobscope/sqlite3 of the medians.  If this jobscope has no
`report --by`, (b) is reported as not available; without `jobscope compact`,
(c) is measured by whole replays only.

Usage: bench/report_bench.py [--build build] [--runs 5 | --quick] [--days 7]
           [--history-days 30] [--gpus 8] [--cpus 32] [--jobs 20]
           [--jobs-per-day 200] [--nodes 16] [--cache-dir /var/tmp/jobscope-bench]
           [--remake] [--json F] [--markdown F]
Run from the repository root after `ninja -C BUILD jobscope tests/js-mkstore`;
needs the sqlite3 CLI.  Exits 0 whether the targets are met or not; 1 if the
benchmark itself cannot run.
"""
import argparse
import datetime
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_cost import cmdline  # noqa: E402

MKSTORE_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests",
                           "tools", "mkstore.c")
DEFAULT_START_MS = 1767571200000  # js-mkstore's: 2026-01-05T00:00:00Z
DAY_MS = 86400000
TIME = "/usr/bin/time"  # GNU time, for the peak RSS of each run
TARGETS = {"job_s": 1.0, "job_rss_mib": 64.0, "history_s": 2.0, "length_ratio": 2.0,
           "length_s": 0.2}
LENGTH_JOBS = [("9001", "1 h"), ("9002", "8 h"), ("9003", "the whole period")]
COUNT_TABLES = ["nodes", "jobs", "job_summaries", "procs", "host_samples", "cpu_samples",
                "disk_samples", "net_samples", "proc_samples", "job_samples", "devices",
                "gpu_samples", "gpu_proc_samples", "events", "rollups"]


def rfc3339(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def file_sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:12]


# ---- the store ----

def mkstore_args(args):
    return ["--scenario", "bench", "--days", str(args.days), "--history-days",
            str(args.history_days), "--gpus", str(args.gpus), "--cpus", str(args.cpus),
            "--jobs", str(args.jobs), "--jobs-per-day", str(args.jobs_per_day),
            "--nodes", str(args.nodes), "--length-jobs"]


def ensure_store(args, mkstore):
    """The cached store for these arguments (made if missing) and what is known of it."""
    margs = mkstore_args(args)
    key = "-".join(a.lstrip("-") for a in margs[2:]) + "-" + file_sha(MKSTORE_SRC)
    os.makedirs(args.cache_dir, exist_ok=True)
    path = os.path.join(args.cache_dir, f"bench-{key}.db")
    meta_path = path + ".json"
    if args.remake:
        for suffix in ("", "-wal", "-shm", ".json"):
            if os.path.exists(path + suffix):
                os.unlink(path + suffix)
    if os.path.exists(path) and os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        meta["made_now"] = False
        return path, meta
    for suffix in ("", "-wal", "-shm"):  # a half-made store from an interrupted run
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    argv = [mkstore, "--db", path] + margs
    print(f"report_bench: making the store (once): {cmdline(argv)}", file=sys.stderr)
    usage_file = path + ".time"
    t0 = time.monotonic()
    proc = subprocess.Popen([TIME, "-f", "%U %S %M", "-o", usage_file, "--"] + argv,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err_lines = []
    for line in proc.stderr:
        sys.stderr.write(line)
        err_lines.append(line.rstrip("\n"))
    proc.wait()
    took = time.monotonic() - t0
    with open(usage_file) as f:
        user_s, sys_s, rss_kib = f.read().split()[-3:]
    os.unlink(usage_file)
    if proc.returncode != 0:
        raise RuntimeError(f"js-mkstore failed (exit {proc.returncode}): "
                           + " | ".join(err_lines[-5:]))
    meta = {"argv": cmdline(["js-mkstore", "--db", "STORE"] + margs), "seconds": took,
            "cpu_s": float(user_s) + float(sys_s), "maxrss_kib": int(rss_kib),
            "made_at": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%d %H:%M UTC"),
            "bytes": os.path.getsize(path), "mkstore_sha": file_sha(MKSTORE_SRC),
            "cpus": os.cpu_count()}
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    meta["rows"] = {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                    for t in COUNT_TABLES}
    db.close()
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    meta["made_now"] = True
    return path, meta


def pick_job(path):
    """The longest job that has samples: its row, key, node and window."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    row = db.execute(
        "SELECT j.id, j.job_id, j.node_id, j.start_ms, j.end_ms, j.name, j.reserved_gpus,"
        " (SELECT count(*) FROM job_samples WHERE job_id = j.id)"
        " FROM jobs j WHERE EXISTS (SELECT 1 FROM job_samples WHERE job_id = j.id)"
        " AND j.job_id NOT IN ('9001', '9002', '9003')"
        " ORDER BY j.end_ms - j.start_ms DESC, j.id LIMIT 1").fetchone()
    if not row:
        raise RuntimeError(f"{path}: no job with samples")
    job = dict(zip(["row", "job_id", "node_id", "start_ms", "end_ms", "name", "gpus",
                    "samples"], row))
    job["ndevices"] = db.execute("SELECT count(*) FROM devices WHERE node_id = ?",
                                 (job["node_id"],)).fetchone()[0]
    db.close()
    return job


# ---- the peers' SQL ----

def floor_sql(j):
    devs = f"(SELECT id FROM devices WHERE node_id = {j['node_id']})"
    win = f"ts_ms BETWEEN {j['start_ms']} AND {j['end_ms']}"
    return ("SELECT count(*), sum(v) FROM ("
            f"SELECT user_ms + system_ms AS v FROM job_samples WHERE job_id = {j['row']}"
            f" UNION ALL SELECT util_pct FROM gpu_samples WHERE device_id IN {devs} AND {win});")


def replay_sql(j):
    node, win = j["node_id"], f"ts_ms BETWEEN {j['start_ms']} AND {j['end_ms']}"
    devs = f"(SELECT id FROM devices WHERE node_id = {node})"
    parts = [
        f"SELECT user_ms + system_ms AS v FROM job_samples WHERE job_id = {j['row']}",
        f"SELECT user_ms + system_ms FROM proc_samples WHERE job_id = {j['row']}",
        f"SELECT cpu_user_ms FROM host_samples WHERE node_id = {node} AND {win}",
        f"SELECT util_pct FROM gpu_samples WHERE device_id IN {devs} AND {win}",
        f"SELECT mem_bytes FROM gpu_proc_samples WHERE device_id IN {devs} AND {win}",
        f"SELECT value FROM events WHERE job_id = {j['row']}",
    ]
    return "SELECT count(*), sum(v) FROM (" + " UNION ALL ".join(parts) + ");"


def history_sql(since_ms, until_ms):
    h = "(j.end_ms - j.start_ms) / 3600000.0"
    return ("SELECT j.user, count(*) AS jobs, sum(" + h + ") AS wall_h,"
            " sum(j.reserved_cpus * " + h + ") AS core_h_reserved,"
            " sum(s.cpu_ms) / 3600000.0 AS core_h_used,"
            " sum(j.reserved_gpus * " + h + ") AS gpu_h_reserved,"
            " sum(s.gpus_used * coalesce(s.gpu_util_avg_pct, 0) / 100.0 * " + h
            + ") AS gpu_h_used,"
            " sum(j.reserved_mem_bytes / 1073741824.0 * " + h + ") AS mem_gib_h,"
            " sum(s.rss_peak_bytes / 1073741824.0 * " + h + ") AS mem_peak_gib_h"
            " FROM jobs j JOIN job_summaries s ON s.job_id = j.id"
            f" WHERE j.start_ms < {until_ms} AND j.end_ms > {since_ms}"
            " GROUP BY j.user ORDER BY gpu_h_reserved - gpu_h_used DESC;")


# ---- running ----

def run_once(argv, tmp, out_path=None):
    """Wall seconds, peak RSS (KiB), exit status and the end of stderr of one run.

    Through GNU time: the child of a (v)fork keeps its parent's high-water
    RSS in ru_maxrss across exec, so a child of this script could not show
    less than the script's own; /usr/bin/time is small."""
    out = open(out_path, "w") if out_path else subprocess.DEVNULL
    rss_file = os.path.join(tmp, "rss")
    try:
        t0 = time.monotonic()
        proc = subprocess.Popen([TIME, "-f", "%M", "-o", rss_file, "--"] + argv, stdout=out,
                                stderr=subprocess.PIPE)
        err = proc.stderr.read()
        proc.wait()
        wall = time.monotonic() - t0
        proc.stderr.close()
    finally:
        if out_path:
            out.close()
    with open(rss_file) as f:
        # "Command exited with non-zero status N" comes first when it failed
        rss = int(f.read().split()[-1])
    return wall, rss, proc.returncode, err.decode(errors="replace").strip()[-300:]


def measure(cmds, runs, tmp):
    """Every command once to warm up (output kept), then `runs` rounds."""
    res = {}
    for c in cmds:
        out = os.path.join(tmp, c["id"] + ".out")
        wall, rss, rc, err = run_once(c["argv"], tmp, out)
        with open(out, errors="replace") as f:
            text = f.read()
        res[c["id"]] = {"warmup_s": wall, "warmup_rc": rc, "stderr": err,
                        "output_bytes": len(text), "output_head": text[:400],
                        "output_sha": hashlib.sha256(text.encode()).hexdigest()[:16],
                        "walls": [], "rss_kib": [], "rcs": []}
        print(f"report_bench: warm-up {c['id']}: {wall:.2f} s, exit {rc}", file=sys.stderr)
    for r in range(runs):
        for c in cmds:
            wall, rss, rc, err = run_once(c["argv"], tmp)
            x = res[c["id"]]
            x["walls"].append(wall)
            x["rss_kib"].append(rss)
            x["rcs"].append(rc)
            if rc and not x["stderr"]:
                x["stderr"] = err
        print(f"report_bench: round {r + 1} of {runs} done", file=sys.stderr)
    for c in cmds:
        x = res[c["id"]]
        x["ok"] = x["warmup_rc"] == 0 and all(rc == 0 for rc in x["rcs"])
        x["median_s"] = statistics.median(x["walls"])
        x["max_s"] = max(x["walls"])
        x["min_s"] = min(x["walls"])
        x["rss_mib_max"] = max(x["rss_kib"]) / 1024
        x["argv"] = cmdline(c["argv"])
    return res


def has_by(jobscope):
    p = subprocess.run([jobscope, "report", "--help"], capture_output=True, text=True)
    return "--by" in p.stdout + p.stderr


def length_jobs(store):
    """{job_id: hours} of the --length-jobs jobs the store holds."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    rows = db.execute("SELECT job_id, (end_ms - start_ms) / 3600000.0 FROM jobs"
                      " WHERE scheduler = 'slurm' AND job_id IN ('9001', '9002', '9003')"
                      " AND EXISTS (SELECT 1 FROM job_samples WHERE job_id = jobs.id)").fetchall()
    db.close()
    return dict(rows)


def compact(jobscope, store):
    """`jobscope compact --db STORE --no-pack` once: its wall time and what it said (None: no such
    command in this build)."""
    p = subprocess.run([jobscope, "compact", "--help"], capture_output=True, text=True)
    if p.returncode != 0:
        return None
    t0 = time.monotonic()
    # --no-pack: the rows stay plain for the sqlite3 peers (and an agent's last hour, which a
    # report behind its checkpoint replays, is plain too)
    p = subprocess.run([jobscope, "compact", "--db", store, "--no-pack"], capture_output=True,
                       text=True)
    took = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError(f"jobscope compact failed: {p.stderr.strip()[-300:]}")
    return {"seconds": took, "said": p.stderr.strip()[-200:],
            "argv": cmdline([jobscope, "compact", "--db", store, "--no-pack"])}


def rows_before(store, job_id, until_ms):
    """Rows a replay of the job merges (job_report_load's: no per-CPU, disk or interface rows)
    with a time before until_ms."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    row, node, start, end = db.execute(
        "SELECT id, node_id, start_ms, end_ms FROM jobs WHERE scheduler = 'slurm'"
        " AND job_id = ?", (job_id,)).fetchone()
    win = f"ts_ms >= {start} AND ts_ms <= {end} AND ts_ms < {until_ms}"
    devs = f"(SELECT id FROM devices WHERE node_id = {node})"
    n = sum(db.execute(q).fetchone()[0] for q in (
        f"SELECT count(*) FROM host_samples WHERE node_id = {node} AND {win}",
        f"SELECT count(*) FROM job_samples WHERE job_id = {row} AND ts_ms < {until_ms}",
        f"SELECT count(*) FROM proc_samples WHERE job_id = {row} AND ts_ms < {until_ms}",
        f"SELECT count(*) FROM events WHERE job_id = {row} AND ts_ms < {until_ms}",
        f"SELECT count(*) FROM gpu_samples WHERE device_id IN {devs} AND {win}",
        f"SELECT count(*) FROM gpu_proc_samples WHERE device_id IN {devs} AND {win}"))
    db.close()
    return row, end, n


def ckpt_behind(jobscope, store, job_id, behind_ms):
    """The job's checkpoint made again, about behind_ms before its end (a running job's on
    an agent that keeps them an hour behind): its time before the end, in ms."""
    row, end, n = rows_before(store, job_id, end_ms_of(store, job_id) - behind_ms)
    db = sqlite3.connect(store)
    db.execute("DELETE FROM report_ckpts WHERE job_id = ?", (row,))
    db.commit()
    db.close()
    env = dict(os.environ, JOBSCOPE_CKPT_ROWS=str(n))
    p = subprocess.run([jobscope, "compact", "--db", store, "--no-pack"], capture_output=True,
                       text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"jobscope compact failed: {p.stderr.strip()[-300:]}")
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    ts = db.execute("SELECT ts_ms FROM report_ckpts WHERE job_id = ?", (row,)).fetchone()[0]
    db.close()
    return end - ts


def end_ms_of(store, job_id):
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    end = db.execute("SELECT end_ms FROM jobs WHERE scheduler = 'slurm' AND job_id = ?",
                     (job_id,)).fetchone()[0]
    db.close()
    return end


def run(args, tmp):
    jobscope = os.path.join(args.build, "jobscope")
    mkstore = os.path.join(args.build, "tests", "js-mkstore")
    store, meta = ensure_store(args, mkstore)
    lengths = length_jobs(store)
    compacted = compact(jobscope, store)
    job = pick_job(store)
    key = f"slurm:{job['job_id']}"
    since_ms = DEFAULT_START_MS - args.history_days * DAY_MS
    until_ms = DEFAULT_START_MS + args.days * DAY_MS
    since, until = rfc3339(since_ms), rfc3339(until_ms)
    by = has_by(jobscope)
    sq = [args.sqlite3, "-readonly", store]
    cmds = [
        {"id": "job_text", "argv": [jobscope, "report", "--db", store, "--job", key]},
        {"id": "job_json", "argv": [jobscope, "report", "--db", store, "--job", key,
                                    "--format", "json"]},
        {"id": "job_floor", "argv": sq + [floor_sql(job)]},
        {"id": "job_replay_rows", "argv": sq + [replay_sql(job)]},
    ]
    if by:
        cmds += [
            {"id": "history", "argv": [jobscope, "report", "--db", store, "--by", "user",
                                       "--since", since, "--until", until]},
        ]
    for jid, _ in LENGTH_JOBS:
        if jid not in lengths:
            continue
        rep = [jobscope, "report", "--db", store, "--job", "slurm:" + jid]
        if compacted:
            cmds.append({"id": f"len_{jid}_ckpt", "argv": rep})
        cmds.append({"id": f"len_{jid}_full", "argv": ["env", "JOBSCOPE_NO_CKPT=1"] + rep})
    cmds += [
        {"id": "history_peer", "argv": sq + [history_sql(since_ms, until_ms)]},
        {"id": "quick_check", "argv": sq + ["PRAGMA quick_check;"]},
    ]
    load0 = open("/proc/loadavg").read().split()[:3]
    t0 = time.monotonic()
    res = measure(cmds, args.runs, tmp)
    # (c) again with checkpoints an hour behind the end (what the agent keeps for a running
    # job): the 8 h and the whole-period job, one after the other (compact moves every job
    # that is due: making the second's moves the first's to its end); then back to the end
    behind = {}
    if compacted and "9002" in lengths and "9003" in lengths:
        for jid in ("9002", "9003"):
            behind[jid] = ckpt_behind(jobscope, store, jid, 3600000)
            res.update(measure([{"id": f"len_{jid}_behind",
                                 "argv": [jobscope, "report", "--db", store, "--job",
                                          "slurm:" + jid]}], args.runs, tmp))
        compact(jobscope, store)
    load1 = open("/proc/loadavg").read().split()[:3]
    # the peers' answers, to check the two sides count the same jobs and rows
    peer = {}
    fl = res["job_floor"]["output_head"].strip().split("|")
    peer["floor_rows"] = int(fl[0]) if fl and fl[0].isdigit() else None
    rr = res["job_replay_rows"]["output_head"].strip().split("|")
    peer["replay_rows"] = int(rr[0]) if rr and rr[0].isdigit() else None
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    peer["history_jobs"] = db.execute(
        "SELECT count(*) FROM jobs j JOIN job_summaries s ON s.job_id = j.id"
        " WHERE j.start_ms < ? AND j.end_ms > ?", (until_ms, since_ms)).fetchone()[0]
    peer["history_users"] = db.execute(
        "SELECT count(DISTINCT user) FROM jobs WHERE start_ms < ? AND end_ms > ?",
        (until_ms, since_ms)).fetchone()[0]
    db.close()
    agree = None
    if by:
        head = res["history"]["output_head"].splitlines()[0] if res["history"][
            "output_head"] else ""
        agree = f": {peer['history_jobs']} jobs," in head
    return {"store": store, "store_meta": meta, "job": job, "key": key, "since": since,
            "until": until, "has_by": by, "results": res, "peer": peer,
            "history_agrees": agree, "loadavg": [load0, load1], "lengths": lengths,
            "compact": compacted, "behind": behind,
            "elapsed_s": time.monotonic() - t0, "sqlite_version": sqlite_version(args.sqlite3)}


def sqlite_version(exe):
    p = subprocess.run([exe, "--version"], capture_output=True, text=True)
    return p.stdout.split()[0] if p.stdout else "?"


# ---- the report ----

def verdict(ok):
    return "PASS" if ok else "FAIL"


def report(args, res):
    L = []
    r = res["results"]
    m = res["store_meta"]
    j = res["job"]
    L.append(f"Command: `{cmdline(['python3'] + sys.argv)}`")
    L.append("")
    rows = m.get("rows", {})
    made = (f"made by this run in **{m['seconds']:.0f} s** ({m['cpu_s']:.0f} CPU s, peak RSS "
            f"{m['maxrss_kib'] / 1024:.0f} MiB)" if m.get("made_now") else
            f"cached; it was made on {m.get('made_at', '?')} in **{m['seconds']:.0f} s** "
            f"({m['cpu_s']:.0f} CPU s on {m.get('cpus', '?')} CPUs, peak RSS "
            f"{m['maxrss_kib'] / 1024:.0f} MiB)")
    L.append(f"The store: `{m['argv']}` (mkstore.c {m['mkstore_sha']}), {made}; "
             f"{m['bytes'] / 2**20:,.0f} MiB, {sum(rows.values()):,} rows: "
             + ", ".join(f"{t} {n:,}" for t, n in rows.items()) + ".")
    L.append("")
    dur_h = (j["end_ms"] - j["start_ms"]) / 3.6e6
    L.append(f"(a) the longest job, `{res['key']}` (\"{j['name']}\", {dur_h:.1f} h, "
             f"{j['samples']:,} samples, {j['gpus']} of the node's {j['ndevices']} GPUs "
             f"reserved): a whole replay needs {res['peer']['replay_rows'] or 0:,} rows (per-CPU, disk "
             f"and interface rows not counted); the floor reads "
             f"{res['peer']['floor_rows'] or 0:,}.  (b) history by user from "
             f"{res['since']} to {res['until']}: {res['peer']['history_jobs']:,} jobs of "
             f"{res['peer']['history_users']} users.")
    L.append("")
    L.append(f"Each command {args.runs} times after one warm-up run (the page cache warm), "
             "interleaved round by round; wall time fork to exit, peak RSS from GNU "
             f"time's %M (ru_maxrss).  sqlite3 CLI {res['sqlite_version']}.")
    L.append("")
    L.append("| | command | median s | max s | peak RSS |")
    L.append("|---|---|---|---|---|")
    labels = [("job_text", "(a) jobscope, text"), ("job_json", "(a) jobscope, JSON"),
              ("job_floor", "(a) sqlite3, the floor"),
              ("job_replay_rows", "(a) sqlite3, every row a report needs"),
              ("history", "(b) jobscope --by user"), ("history_peer", "(b) sqlite3 GROUP BY"),
              ("quick_check", "sqlite3 PRAGMA quick_check")]
    for k, label in labels:
        if k not in r:
            L.append(f"| {label} | `jobscope report --by`: not available in this build | - | "
                     "- | - |")
            continue
        x = r[k]
        argv = x["argv"].replace(res["store"], "STORE")
        if len(argv) > 160:
            argv = argv[:157] + "...'"
        bad = "" if x["ok"] else " **(failed)**"
        L.append(f"| {label}{bad} | `{argv}` | {x['median_s']:.3f} | {x['max_s']:.3f} | "
                 f"{x['rss_mib_max']:.1f} MiB |")
    L.append("")

    def ratio(a, b):
        return r[a]["median_s"] / r[b]["median_s"] if r[b]["median_s"] > 0 else float("inf")

    checks = []
    for k, name in (("job_text", "text"), ("job_json", "JSON")):
        x = r[k]
        checks.append((f"(a) report of the {dur_h:.0f} h job, {name}: median time",
                       f"{x['median_s']:.2f} s (max {x['max_s']:.2f})",
                       f"≤ {TARGETS['job_s']:g} s",
                       x["ok"] and x["median_s"] <= TARGETS["job_s"]))
        checks.append((f"(a) report of the {dur_h:.0f} h job, {name}: peak RSS",
                       f"{x['rss_mib_max']:.1f} MiB", f"≤ {TARGETS['job_rss_mib']:g} MiB",
                       x["ok"] and x["rss_mib_max"] <= TARGETS["job_rss_mib"]))
        checks.append((f"(a) {name}: jobscope / sqlite3 floor", f"{ratio(k, 'job_floor'):.2f}",
                       "(no target)", None))
    checks.append(("(a) text: jobscope / sqlite3 reading every row a report needs",
                   f"{ratio('job_text', 'job_replay_rows'):.2f}", "(no target)", None))
    if "history" in r:
        x = r["history"]
        checks.append((f"(b) history by user, {res['peer']['history_jobs']:,} jobs: median time",
                       f"{x['median_s']:.2f} s (max {x['max_s']:.2f})",
                       f"≤ {TARGETS['history_s']:g} s",
                       x["ok"] and x["median_s"] <= TARGETS["history_s"]))
        checks.append(("(b) jobscope / sqlite3 GROUP BY", f"{ratio('history', 'history_peer'):.0f}",
                       "(no target)", None))
    else:
        checks.append(("(b) history by user", "not available (`report --by` missing)",
                       f"≤ {TARGETS['history_s']:g} s", None))
    if res["lengths"]:
        L.append(f"(c) report time against job length: the three --length-jobs jobs (1 CPU, "
                 f"no GPU reserved; a report replays their node's host rows and its "
                 f"{j['ndevices']} GPUs' rows in their window all the same)"
                 + (f", after `jobscope compact --db STORE --no-pack` (once, "
                    f"{res['compact']['seconds']:.1f} s: \"{res['compact']['said']}\"; a cached "
                    f"store keeps its checkpoints)" if res["compact"] else
                    ": this build has no `jobscope compact`, whole replays only") + ".")
        L.append("")
        L.append("| job | length | from its checkpoint: median s | max s | peak RSS "
                 "| whole replay (JOBSCOPE_NO_CKPT=1): median s | max s | same output |")
        L.append("|---|---|---|---|---|---|---|---|")
        for jid, label in LENGTH_JOBS:
            if jid not in res["lengths"]:
                continue
            full = r[f"len_{jid}_full"]
            ck = r.get(f"len_{jid}_ckpt")
            same = ("-" if not ck else "yes" if ck["output_sha"] == full["output_sha"]
                    and ck["ok"] and full["ok"] else "**no**")
            ckcols = (f"{ck['median_s']:.3f} | {ck['max_s']:.3f} | {ck['rss_mib_max']:.1f} MiB"
                      if ck else "- | - | -")
            L.append(f"| slurm:{jid} ({label}) | {res['lengths'][jid]:.1f} h | {ckcols} | "
                     f"{full['median_s']:.3f} | {full['max_s']:.3f} | {same} |")
        L.append("")
        if res["behind"]:
            L.append("The same with the 8 h and the whole-period job's checkpoints made again "
                     "about an hour before their end (`JOBSCOPE_CKPT_ROWS=N jobscope compact`: "
                     "what an agent keeps for a running job), the rest replayed; one job after "
                     "the other, each measured alone:")
            L.append("")
            L.append("| job | checkpoint before the end | median s | max s | peak RSS | "
                     "same output as the whole replay |")
            L.append("|---|---|---|---|---|---|")
            for jid, label in LENGTH_JOBS:
                if jid not in res["behind"]:
                    continue
                x = r[f"len_{jid}_behind"]
                same = "yes" if x["output_sha"] == r[f"len_{jid}_full"]["output_sha"] else "**no**"
                L.append(f"| slurm:{jid} ({label}) | {res['behind'][jid] / 60000:.0f} min | "
                         f"{x['median_s']:.3f} | {x['max_s']:.3f} | {x['rss_mib_max']:.1f} MiB | "
                         f"{same} |")
            L.append("")
        mode = "ckpt" if res["compact"] else "full"
        a, b = f"len_9003_{mode}", f"len_9002_{mode}"
        if a in r and b in r:
            x = r[a]
            checks.append(("(c) whole-period job's report / 8 h job's"
                           + (" (from checkpoints)" if mode == "ckpt" else " (whole replays)"),
                           f"{ratio(a, b):.2f} ({x['median_s']:.3f} s / {r[b]['median_s']:.3f} s)",
                           f"≤ {TARGETS['length_ratio']:g}",
                           x["ok"] and ratio(a, b) <= TARGETS["length_ratio"]))
            checks.append((f"(c) whole-period job ({res['lengths']['9003']:.0f} h): report time",
                           f"{x['median_s']:.3f} s (max {x['max_s']:.3f})",
                           f"≤ {TARGETS['length_s']:g} s",
                           x["ok"] and x["median_s"] <= TARGETS["length_s"]))
            if "len_9003_behind" in r:
                y, z = r["len_9003_behind"], r["len_9002_behind"]
                checks.append(("(c) checkpoints an hour behind: whole-period job's report / "
                               "8 h job's",
                               f"{ratio('len_9003_behind', 'len_9002_behind'):.2f} "
                               f"({y['median_s']:.3f} s / {z['median_s']:.3f} s)",
                               f"≤ {TARGETS['length_ratio']:g}",
                               y["ok"] and ratio('len_9003_behind', 'len_9002_behind')
                               <= TARGETS["length_ratio"]))
                checks.append(("(c) checkpoint an hour behind: whole-period job's report time",
                               f"{y['median_s']:.3f} s (max {y['max_s']:.3f})",
                               f"≤ {TARGETS['length_s']:g} s",
                               y["ok"] and y["median_s"] <= TARGETS["length_s"]))
            if mode == "ckpt":
                f9003 = r["len_9003_full"]
                checks.append(("(c) whole-period job: whole replay / from its checkpoint",
                               f"{ratio('len_9003_full', a):.0f}x "
                               f"({f9003['median_s']:.2f} s / {x['median_s']:.3f} s)",
                               "(no target)", None))
                checks.append(("(c) the same report bytes from the checkpoints as from whole "
                               "replays",
                               "yes" if all(r[f"len_{jid}_ckpt"]["output_sha"]
                                            == r[f"len_{jid}_full"]["output_sha"]
                                            for jid, _ in LENGTH_JOBS if jid in res["lengths"])
                               else "no", "yes",
                               all(r[f"len_{jid}_ckpt"]["output_sha"]
                                   == r[f"len_{jid}_full"]["output_sha"]
                                   for jid, _ in LENGTH_JOBS if jid in res["lengths"])))
    L.append("| check | measured | target | |")
    L.append("|---|---|---|---|")
    for name, v, t, ok in checks:
        L.append(f"| {name} | {v} | {t} | {'-' if ok is None else verdict(ok)} |")
    L.append("")
    qc = r["quick_check"]["median_s"]
    # does this jobscope check the whole file on open?  Its quickest command tells.
    quickest = min(x["median_s"] for k, x in r.items() if k in ("job_text", "history"))
    rows_s = r["job_replay_rows"]["median_s"]
    if res["compact"]:
        L.append(f"Where the time goes: (a) restores the job's report checkpoint (made by "
                 f"`jobscope compact` at its end) and replays no row after it; a whole "
                 f"replay reads the {res['peer']['replay_rows'] or 0:,} rows a report needs "
                 f"(sqlite3 reads them in {rows_s:.2f} s).  `PRAGMA quick_check` reads the "
                 f"whole file ({qc:.2f} s here for {m['bytes'] / 2**30:.1f} GiB); jobscope "
                 "does not run it on a store this large.")
    elif quickest >= 0.8 * qc:
        L.append(f"Where the time goes: `store_open` runs `PRAGMA quick_check`, which reads "
                 f"the whole file: {qc:.2f} s here for {m['bytes'] / 2**30:.1f} GiB, in every "
                 "jobscope command above.  Without it (jobscope's median minus quick_check's): "
                 f"(a) text {r['job_text']['median_s'] - qc:.2f} s, JSON "
                 f"{r['job_json']['median_s'] - qc:.2f} s"
                 + (f"; (b) {r['history']['median_s'] - qc:.2f} s" if "history" in r else "")
                 + f".  The rest of (a) is the replay; sqlite3 reads the "
                 f"{res['peer']['replay_rows'] or 0:,} rows a report needs in {rows_s:.2f} s.")
    else:
        L.append(f"Where the time goes: `PRAGMA quick_check` reads the whole file "
                 f"({qc:.2f} s here for {m['bytes'] / 2**30:.1f} GiB); this jobscope does not "
                 f"run it when it opens a store this large (its quickest command above takes "
                 f"{quickest:.2f} s).  (a) is the replay: sqlite3 reads the "
                 f"{res['peer']['replay_rows'] or 0:,} rows a report needs in {rows_s:.2f} s, "
                 f"jobscope reads and analyses them in {r['job_text']['median_s']:.2f} s.")
    L.append("")
    if res["history_agrees"] is not None:
        L.append(f"Agreement: jobscope's history counts {res['peer']['history_jobs']:,} jobs "
                 f"as sqlite3 does: {'yes' if res['history_agrees'] else '**no**'}.  "
                 f"Load average (1, 5, 15 min): {' '.join(res['loadavg'][0])} at the start, "
                 f"{' '.join(res['loadavg'][1])} at the end; {os.cpu_count()} CPUs.")
    else:
        L.append(f"Load average (1, 5, 15 min): {' '.join(res['loadavg'][0])} at the start, "
                 f"{' '.join(res['loadavg'][1])} at the end; {os.cpu_count()} CPUs.")
    failed = [k for k, x in r.items() if not x["ok"]]
    if failed:
        L.append("")
        L.append("Failed runs: " + "; ".join(f"{k}: {r[k]['stderr'] or 'exit status'}"
                                              for k in failed))
    res["checks"] = [{"check": c[0], "measured": c[1], "target": c[2], "pass": c[3]}
                     for c in checks]
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="meson build directory (default build)")
    ap.add_argument("--runs", type=int, default=5, help="measured runs per command (default 5)")
    ap.add_argument("--quick", action="store_true",
                    help="a 1-day store with 4 jobs and 7 history days, 3 runs")
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--history-days", type=int, default=30)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--cpus", type=int, default=32)
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--jobs-per-day", type=int, default=200)
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--cache-dir", default="/var/tmp/jobscope-bench")
    ap.add_argument("--remake", action="store_true", help="make the store again")
    ap.add_argument("--sqlite3", default="sqlite3", help="the sqlite3 CLI")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    if args.quick:
        args.days, args.jobs, args.history_days, args.runs = 1, 4, 7, 3
    if args.runs < 1:
        ap.error("--runs must be at least 1")

    missing = [x for x in (os.path.join(args.build, "jobscope"),
                           os.path.join(args.build, "tests", "js-mkstore"))
               if not os.access(x, os.X_OK)]
    if missing:
        sys.exit(f"report_bench: {', '.join(missing)} missing: "
                 f"ninja -C {args.build} jobscope tests/js-mkstore")
    if not os.access(TIME, os.X_OK):
        sys.exit(f"report_bench: {TIME} missing: apt-get install time")
    if not shutil.which(args.sqlite3):
        sys.exit(f"report_bench: {args.sqlite3} missing: apt-get install sqlite3")

    with tempfile.TemporaryDirectory(prefix="jobscope-report-bench-") as tmp:
        try:
            res = run(args, tmp)
        except (RuntimeError, subprocess.SubprocessError, OSError, sqlite3.Error) as e:
            sys.exit(f"report_bench: {e}")
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
