#!/usr/bin/env python3
"""live_views.py - the head's live views at many agents: gswarm's GET /metrics/latest,
GET /api/v1/nodes, GET /api/v1/gpus, the Prometheus GET /metrics and GET /api/v1/jobs
(its first page, each running job's use now), on a SQLite
file and on PostgreSQL, side by side in one run (issue 35 section 4).

A head on a fresh store (each backend in turn) is given N simulated agents (default
2,000; each 8 GPUs, 2 CPUs, 2 processes in one job: bench/head_ingest.py's Node),
each with T ticks of history (default 20, sent as batches of 5 ticks), every agent
with a 10-minute interval so that all of them count as connected while the views
are asked.  Once the head is idle again (under 2 % of a core over a second: the upkeep
after the feed, packing the rows just held, is not a view's), each view is asked R times
(default 10) in turn; measured per
request: the wall time (p50, max) and the CPU of the head and, on PostgreSQL, of
the whole cluster; checked: /metrics/latest lists every agent with its 8 GPUs.

A view whose cost grows with the history (T), not with the agents, shows as a time
that grows between two runs with different --ticks.

Usage: python3 bench/live_views.py [--build build] [--agents N] [--ticks T]
       [--requests R] [--backends sqlite,postgresql]   (as root for PostgreSQL)
"""
import argparse
import http.client
import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from head_ingest import CLK_TCK, Layout, Node, PgCluster, cpu_of, start_head  # noqa: E402
from agent_cost import stop  # noqa: E402

VIEWS = ["/metrics/latest", "/api/v1/nodes", "/api/v1/gpus", "/metrics", "/api/v1/jobs"]


def batch_of(node, ticks, interval_ms=600000):
    """One batch holding ticks consecutive ticks of node (its rows merged per table); the
    agent's interval as said (default 10 minutes: connected for 30 minutes after)."""
    merged, first_from, to_seq = None, node.seq, None
    for _ in range(ticks):
        body, to_seq, _, _ = node.head_batch(node.tick)
        b = json.loads(body)
        node.seq, node.tick = to_seq, node.tick + 1
        if merged is None:
            merged = b
            continue
        for name, t in b["tables"].items():
            if "seq" in t["columns"]:
                merged["tables"][name]["rows"] += t["rows"]
    merged["from_seq"], merged["to_seq"], merged["max_seq"] = first_from, to_seq, to_seq
    merged["interval_ms"] = interval_ms
    return json.dumps(merged, separators=(",", ":")).encode()


def feed(port, nodes, ticks, per_batch, nconn=4, interval_ms=600000):
    """ticks of each node, per_batch ticks a batch (a multiple of it), over nconn
    keep-alive connections."""
    errors = []

    def worker(k):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            for node in nodes[k::nconn]:
                for _ in range(0, ticks, per_batch):
                    conn.request("POST", "/api/v1/ingest",
                                 batch_of(node, per_batch, interval_ms),
                                 {"Content-Type": "application/json"})
                    r = conn.getresponse()
                    data = r.read()
                    if r.status != 200:
                        errors.append(f"{r.status} {data[:200]!r}")
                        return
        except (OSError, http.client.HTTPException) as e:
            errors.append(str(e))
        finally:
            conn.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(nconn)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise RuntimeError("feeding the head: " + "; ".join(errors[:3]))


def ask(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        data = r.read()
    finally:
        conn.close()
    if r.status != 200:
        raise RuntimeError(f"GET {path}: {r.status} {data[:200]!r}")
    return data


def settle(pid, pg, deadline_s=300):
    """Waits until the head (and the cluster) used under 2 % of a core over a second: the
    upkeep that follows a feed (packing the rows just held) is not a view's cost.
    Returns the seconds waited."""
    t = time.monotonic()
    while time.monotonic() - t < deadline_s:
        c0, p0 = sum(cpu_of(pid)), sum(pg.cpu()) if pg else 0
        time.sleep(1)
        c1, p1 = sum(cpu_of(pid)), sum(pg.cpu()) if pg else 0
        if (c1 - c0 + p1 - p0) / CLK_TCK < 0.02:
            return time.monotonic() - t
    raise RuntimeError("the head did not settle after its feed")


def phase(args, backend, tmp, pg):
    db = pg.createdb("jobscope_views") if pg else os.path.join(tmp, "head.db")
    head, port, errf, argv = start_head(os.path.join(args.build, "jobscope"), db, tmp,
                                        f"head-{backend}")
    out = {"argv": " ".join(argv).replace(tmp, "TMP")}
    try:
        t0_ms = (int(time.time()) - args.ticks - 5) * 1000
        layout = Layout(2, 8, 2, 1)
        nodes = [Node(layout, i, t0_ms) for i in range(args.agents)]
        t = time.monotonic()
        feed(port, nodes, args.ticks, args.per_batch)
        out["feed_s"] = time.monotonic() - t
        latest = json.loads(ask(port, "/metrics/latest"))
        cd = latest.get("client_data", {})
        gpus = sorted({len(v.get("gpus_metrics", [])) for v in cd.values()})
        if len(cd) != args.agents or gpus != [8]:
            raise RuntimeError(f"/metrics/latest: {len(cd)} agents (want {args.agents}), "
                               f"GPUs per agent {gpus} (want [8])")
        out["settle_s"] = settle(head.pid, pg)
        for path in VIEWS:
            walls, cpu = [], 0.0
            for _ in range(args.requests):
                c0 = cpu_of(head.pid)
                p0 = pg.cpu() if pg else (0, 0)
                w0 = time.monotonic()
                size = len(ask(port, path))
                walls.append(time.monotonic() - w0)
                c1 = cpu_of(head.pid)
                p1 = pg.cpu() if pg else (0, 0)
                cpu += (c1[0] + c1[1] - c0[0] - c0[1] + p1[0] + p1[1] - p0[0] - p0[1]) / CLK_TCK
            walls.sort()
            out[path] = {"p50_ms": walls[len(walls) // 2] * 1000, "max_ms": walls[-1] * 1000,
                         "cpu_ms": cpu / args.requests * 1000, "bytes": size}
    finally:
        stop(head)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--agents", type=int, default=2000)
    ap.add_argument("--ticks", type=int, default=20, help="history per agent (default 20)")
    ap.add_argument("--per-batch", type=int, default=5, help="ticks per batch (default 5)")
    ap.add_argument("--requests", type=int, default=10)
    ap.add_argument("--backends", default="sqlite,postgresql")
    args = ap.parse_args()
    if args.ticks % args.per_batch:
        ap.error("--ticks must be a multiple of --per-batch")
    res = {}
    with tempfile.TemporaryDirectory(prefix="jobscope-live-views-") as tmp:
        for backend in args.backends.split(","):
            pg = PgCluster().start() if backend == "postgresql" else None
            try:
                res[backend] = phase(args, backend, tmp, pg)
            finally:
                if pg:
                    pg.stop()
    print(f"Command: `python3 {' '.join(sys.argv)}`")
    print()
    print(f"{args.agents} agents, 8 GPUs each, {args.ticks} ticks of history each; "
          f"each view asked {args.requests} times.")
    print()
    print("| backend | view | p50 ms | max ms | CPU ms a request (head + server) | bytes |")
    print("|---|---|---|---|---|---|")
    for backend, r in res.items():
        for path in VIEWS:
            v = r[path]
            print(f"| {backend} | `{path}` | {v['p50_ms']:.1f} | {v['max_ms']:.1f} | "
                  f"{v['cpu_ms']:.1f} | {v['bytes']:,} |")
    print()
    for backend, r in res.items():
        print(f"- {backend}: fed in {r['feed_s']:.1f} s, settled {r['settle_s']:.0f} s later:"
              f" `{r['argv']}`")


if __name__ == "__main__":
    main()
