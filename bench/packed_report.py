#!/usr/bin/env python3
"""packed_report.py - the week-long bench store packed: its size, and `jobscope report`
on it against the same store plain.

The store: report_bench.py's cached one (js-mkstore --scenario bench --length-jobs, 7 days
of an 8-GPU, 32-CPU node at 1 s; run report_bench.py first to make it).  A copy is packed
whole with `jobscope compact --db COPY` (checkpoints, every row packed, pages given back)
and kept beside the store (STORE.packed.db, made again when older than the store).
Measured, each --runs times after a warm-up, interleaved, median wall time and peak RSS:
the reports of the 1 h, 8 h and whole-period jobs (slurm 9001-9003) from their checkpoints
and by whole replays (JOBSCOPE_NO_CKPT=1), on the plain store and on the packed copy; and
whether the packed copy's report bytes equal the plain store's.

Usage: bench/packed_report.py [--build build] [--store PATH] [--runs 3] [--markdown F]
"""
import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

JOBS = [("9001", "1 h"), ("9002", "8 h"), ("9003", "whole period (168 h)")]


def timed(argv, env):
    """wall seconds, peak RSS KiB (GNU time), stdout bytes"""
    with tempfile.NamedTemporaryFile() as tf:
        t0 = time.monotonic()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", tf.name] + argv,
                           capture_output=True, env=env)
        wall = time.monotonic() - t0
        if p.returncode != 0:
            raise RuntimeError("%s: %s" % (" ".join(argv), p.stderr.decode()[-300:]))
        return wall, int(open(tf.name).read().split()[-1]), p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--store")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--markdown")
    a = ap.parse_args()
    jobscope = os.path.join(a.build, "jobscope")
    stores = [p for p in glob.glob("/var/tmp/jobscope-bench/bench-days-7-*-length-jobs-*.db")
              if not p.endswith(".packed.db")]
    store = a.store or max(stores, key=os.path.getmtime, default=None)
    if not store:
        sys.exit("no week-long bench store: run bench/report_bench.py first")
    packed = store + ".packed.db"
    compact_s = None
    if not os.path.exists(packed) or os.path.getmtime(packed) < os.path.getmtime(store):
        shutil.copy(store, packed + ".tmp")
        t0 = time.monotonic()
        p = subprocess.run([jobscope, "compact", "--db", packed + ".tmp"], capture_output=True,
                           text=True)
        if p.returncode != 0:
            sys.exit("compact failed: " + p.stderr)
        compact_s = time.monotonic() - t0
        os.replace(packed + ".tmp", packed)
    res = {}
    plain_env = dict(os.environ)
    full_env = dict(os.environ, JOBSCOPE_NO_CKPT="1")
    cmds = []
    for jid, _ in JOBS:
        for which, db in (("plain", store), ("packed", packed)):
            for mode, env in (("ckpt", plain_env), ("full", full_env)):
                cmds.append(((jid, which, mode), [jobscope, "report", "--db", db, "--job",
                                                  "slurm:" + jid, "--format", "json"], env))
    out = {}
    for key, argv, env in cmds:  # warm-up, and the bytes
        out[key] = timed(argv, env)[2]
    for _ in range(a.runs):
        for key, argv, env in cmds:
            w, rss, _ = timed(argv, env)
            res.setdefault(key, []).append((w, rss))
    lines = ["Command: `python3 bench/packed_report.py --runs %d` (store: `%s`, %.0f MB; packed "
             "copy: %.1f MB%s)." % (a.runs, os.path.basename(store), os.path.getsize(store) / 1e6,
                                    os.path.getsize(packed) / 1e6,
                                    "; `jobscope compact` took %.0f s" % compact_s
                                    if compact_s else ""), "",
             "| job | store | from its checkpoint: median s (peak RSS) | whole replay: median s "
             "(peak RSS) | report bytes as the plain store's |", "|---|---|---|---|---|"]
    for jid, name in JOBS:
        for which in ("plain", "packed"):
            cell = []
            for mode in ("ckpt", "full"):
                r = res[(jid, which, mode)]
                cell.append("%.3f (%.1f MiB)" % (statistics.median(x[0] for x in r),
                                                 max(x[1] for x in r) / 1024))
            same = all(out[(jid, which, m)] == out[(jid, "plain", "ckpt")]
                       for m in ("ckpt", "full"))
            lines.append("| %s | %s | %s | %s | %s |" % (name, which, cell[0], cell[1],
                                                          "yes" if same else "NO"))
    text = "\n".join(lines) + "\n"
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
