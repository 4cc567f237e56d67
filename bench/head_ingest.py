#!/usr/bin/env python3
"""head_ingest.py - `jobscope head` ingest against Prometheus remote write.

One simulator (this script) plays N nodes (default 50), each with C CPUs,
8 GPUs, 200 processes in 4 jobs, sampled at 1 s.  Every node-tick is one
set of values, deterministic in (node, tick), sent in two phases, one after
the other, each for the same duration (default 30 s, --quick 10 s):

  head        jobscope head --listen 127.0.0.1:0 --db TMP/head.db
              one batch per node-tick (docs/wire.md), as the node's agent
              would send it: the tick's fact rows and the dimension rows
              they reference (devices, jobs, procs); with --backends
              sqlite,postgresql once per backend, each on a fresh store,
              the second with --db postgresql://postgres@127.0.0.1:PORT/DB
  prometheus  /usr/bin/prometheus --web.enable-remote-write-receiver on a
              private port and a temporary TSDB: one remote-write request
              (protobuf, snappy) per node-tick, one series per value

over K keep-alive connections (http.client, one thread each), as fast as
the server answers.  Measured per phase over a window after a warm-up (the
first sight of every node, its dimension rows and series): the server's CPU
seconds (utime+stime of /proc/PID/stat, all threads), its peak RSS (VmHWM),
rows/s and values/s acknowledged, and values per CPU-second.  From the
head's figure: how many such nodes one head on this machine takes.

PostgreSQL (--backends with postgresql): the script starts a cluster of its
own (PostgreSQL 15, /usr/lib/postgresql/15/bin: initdb in a temporary
directory as the `postgres` user when run as root, trust authentication,
127.0.0.1 on a free port, every other setting the default: fsync and
synchronous_commit on, so a batch the head acknowledges is committed to
disk, as with SQLite), createdb per phase (the database dropped once the
phase is measured: autovacuum would otherwise work on its tables in a later
round's window), and stops it with `pg_ctl stop -m fast` at the end, failure
or not.  --pg-warm-wal-mb M writes M MiB of WAL and checkpoints before the
phases, as on a server that has run a while: the phases then write into
recycled WAL segments, not into new ones zero-filled as they are made
(XLogFileInit: about 6 % of a young cluster's CPU under this load; a SQLite
WAL file is reused from its first checkpoint on).  The cluster's CPU over
the window is counted with the head's: utime+stime of the postmaster, of its
reaped children (cutime/cstime: backends and workers that ended) and of
every live child, read at the start and the end of the window.  Printed per
backend side by side: rows/s and values/s acknowledged, head and server CPU
seconds, values per CPU-second (head + server), peak RSS (the head's; the
largest postgres process's), request latency, store size, and the ratios
PostgreSQL / SQLite; pg_stat_database's transactions and rows per batch;
with --pg-stat-statements the head's statements (calls, time), with
--pg-log-min-duration-ms the slow ones from the server's log.

Then the catch-up: an agent store holding a 10-minute outage of a 1 s agent
(`jobscope agent --interval 100ms --exit-after 60s --listen none` without a
head: 600 ticks), then a head and `jobscope agent --head URL --interval 1s`
on that store; the time until the head's acked_seq for the agent (GET
/clients) reaches the store's max seq.  Per backend: one outage recorded, a
copy of its store streamed to a fresh head on each.

Usage: bench/head_ingest.py [--build build] [--duration 30 | --quick]
           [--nodes 50] [--cpus 32] [--procs 200] [--connections 4]
           [--warmup-ticks 2] [--outage-seconds 60] [--budget-cores 1.5]
           [--backends sqlite[,postgresql]] [--rounds N] [--pg-stat-statements]
           [--pg-setting NAME=VALUE] [--pg-warm-wal-mb M]
           [--pg-log-min-duration-ms MS] [--json F] [--markdown F]
Run from the repository root after `ninja -C BUILD` (jobscope and the fake
NVML, tests/fakes/libnvidia-ml.so.1); needs the `prometheus` package, and
postgresql-15 for --backends postgresql.  The Prometheus phase and the
"nodes one head takes" figures are those of the first backend listed.
Exits 0 whether the targets are met or not; 1 if the benchmark cannot run.
"""
import argparse
import http.client
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from agent_cost import (CLK_TCK, cmdline, cpu_ticks, children_map, free_port,  # noqa: E402
                        host_cpu, pct, read_text, self_ticks, status_kib, stop, wait_for)
import rw_proto  # noqa: E402
from rw_proto import pb_bytes, varint  # noqa: E402

try:  # real snappy if python3-snappy is there; otherwise literal-only blocks
    import snappy as _snappy
except ImportError:
    _snappy = None

PROMETHEUS = "/usr/bin/prometheus"
TARGET_RATIO = 2.0          # head values per CPU-second >= 2 x Prometheus's
FACT_TABLES = ["host_samples", "cpu_samples", "disk_samples", "net_samples", "proc_samples",
               "job_samples", "events", "marks", "gpu_samples", "gpu_proc_samples"]

# ---- what a node samples: value columns of each fact table, in the store's order ----
#
# kind: k = counter (grows by about MAG per tick), g = gauge (around MAG, +-10 %),
# c = constant MAG, s = a process state ('R' or 'S': a text cell for the head, its
# character code for Prometheus, so both get one value).
HOST = [("cpu_user_ms", "k", 16000), ("cpu_nice_ms", "k", 10), ("cpu_system_ms", "k", 3000),
        ("cpu_idle_ms", "k", 12000), ("cpu_iowait_ms", "k", 50), ("cpu_irq_ms", "k", 5),
        ("cpu_softirq_ms", "k", 40), ("cpu_steal_ms", "c", 0), ("ncpus", "c", 32),
        ("mem_total_bytes", "c", 540000000000), ("mem_free_bytes", "g", 200000000000),
        ("mem_available_bytes", "g", 300000000000), ("mem_buffers_bytes", "g", 1000000000),
        ("mem_cached_bytes", "g", 90000000000), ("mem_shmem_bytes", "g", 2000000000),
        ("swap_total_bytes", "c", 0), ("swap_free_bytes", "c", 0),
        ("load1_milli", "g", 24000), ("load5_milli", "g", 23000), ("load15_milli", "g", 22000),
        ("procs_running", "g", 24), ("procs_blocked", "g", 1),
        ("disk_read_bytes", "k", 50000000), ("disk_write_bytes", "k", 20000000),
        ("disk_reads", "k", 400), ("disk_writes", "k", 200),
        ("net_rx_bytes", "k", 800000000), ("net_tx_bytes", "k", 700000000),
        ("net_rx_packets", "k", 90000), ("net_tx_packets", "k", 80000),
        ("psi_cpu_some_us", "k", 20000), ("psi_cpu_full_us", "c", 0),
        ("psi_mem_some_us", "k", 100), ("psi_mem_full_us", "k", 50),
        ("psi_io_some_us", "k", 3000), ("psi_io_full_us", "k", 2000)]
CPU = [("user_ms", "k", 500), ("nice_ms", "k", 1), ("system_ms", "k", 90), ("idle_ms", "k", 380),
       ("iowait_ms", "k", 2), ("irq_ms", "k", 1), ("softirq_ms", "k", 2), ("steal_ms", "c", 0)]
DISK = [("reads", "k", 200), ("read_bytes", "k", 25000000), ("writes", "k", 100),
        ("write_bytes", "k", 10000000), ("io_ms", "k", 300)]
NET = [("rx_bytes", "k", 400000000), ("rx_packets", "k", 45000), ("tx_bytes", "k", 350000000),
       ("tx_packets", "k", 40000)]
PROC = [("state", "s", 0), ("threads", "g", 12), ("user_ms", "k", 90), ("system_ms", "k", 8),
        ("child_user_ms", "c", 0), ("child_system_ms", "c", 0), ("rss_bytes", "g", 2000000000),
        ("hwm_bytes", "c", 2500000000), ("swap_bytes", "c", 0), ("read_bytes", "k", 100000),
        ("write_bytes", "k", 50000)]
JOB = [("nprocs", "c", 50), ("user_ms", "k", 4500), ("system_ms", "k", 400),
       ("rss_bytes", "g", 100000000000), ("swap_bytes", "c", 0), ("read_bytes", "k", 5000000),
       ("write_bytes", "k", 2500000), ("sampler_cpu_ms", "k", 1), ("cg_cpu_ms", "k", 4900),
       ("cg_mem_bytes", "g", 120000000000), ("cg_mem_peak_bytes", "c", 130000000000)]
GPU = [("util_pct", "g", 80), ("mem_util_pct", "g", 50), ("mem_used_bytes", "g", 60000000000),
       ("pcie_rx_bps", "g", 2000000000), ("pcie_tx_bps", "g", 1000000000),
       ("nvlink_rx_bytes", "k", 40000000000), ("nvlink_tx_bytes", "k", 40000000000),
       ("power_mw", "g", 350000), ("energy_mj", "k", 350000), ("temp_c", "g", 70),
       ("sm_clock_mhz", "g", 1400), ("mem_clock_mhz", "c", 1593), ("throttle_reasons", "c", 0),
       ("ecc_corrected", "c", 0), ("ecc_uncorrected", "c", 0)]
DEVICE_COLS = ["id", "node_id", "vendor", "idx", "uuid", "name", "pci_bus_id", "mem_total_bytes",
               "power_limit_mw", "nvlink_count", "driver_version", "supported"]
JOB_COLS = ["id", "node_id", "scheduler", "job_id", "start_ms", "end_ms", "name", "command",
            "user", "uid", "pid", "exit_code", "signal", "timed_out", "interval_ms",
            "cores_allowed", "host_cores", "host_mem_bytes", "samples", "lost_samples",
            "sampler_cpu_ms", "step", "cgroup", "qos", "reservation_source", "reserved_cpus",
            "reserved_mem_bytes", "reserved_gpus", "reserved_gpu_list"]
PROC_COLS = ["id", "node_id", "job_id", "pid", "ppid", "start_ms", "end_ms", "uid", "comm",
             "cmdline"]
JITTER_POOL = 61   # delta vectors shared by the nodes (prime: nodes drift apart)
STATE = {82: "R", 83: "S"}


def snappy_block(data):
    """Snappy block format: the real compressor if importable, else literal
    chunks (rw_proto.snappy_block: valid snappy, not compressed)."""
    if _snappy is not None:
        return _snappy.compress(data)
    return rw_proto.snappy_block(data)


class Layout:
    """The value cells of one node-tick, in the order of the rows the agent
    writes (host, cpus, disks, nets, procs, jobs, gpus), with each one's
    series labels for Prometheus."""

    def __init__(self, ncpus, ngpus, nprocs, njobs):
        self.ncpus, self.ngpus, self.nprocs, self.njobs = ncpus, ngpus, nprocs, njobs
        self.cells = []   # (table, column, kind, magnitude, labels)
        self.rows = []    # (table, key: cpu/disk/iface/proc/job/gpu index, first, last)

        def add(table, cols, key, labels):
            first = len(self.cells)
            for c, kind, mag in cols:
                if table == "host_samples" and c == "ncpus":
                    mag = ncpus
                self.cells.append((table, c, kind, mag, labels))
            self.rows.append((table, key, first, len(self.cells)))

        add("host_samples", HOST, None, ())
        for c in range(ncpus):
            add("cpu_samples", CPU, c, (("cpu", str(c)),))
        for d in ("nvme0n1", "nvme1n1"):
            add("disk_samples", DISK, d, (("disk", d),))
        for i in ("eth0", "ib0"):
            add("net_samples", NET, i, (("iface", i),))
        for p in range(nprocs):
            # pid and job labels are filled per node (pids differ)
            add("proc_samples", PROC, p, (("proc", p),))
        for j in range(njobs):
            add("job_samples", JOB, j, (("jobidx", j),))
        for g in range(ngpus):
            add("gpu_samples", GPU, g, (("gpu", str(g)),))
        self.nvalues = len(self.cells)
        self.nrows = len(self.rows)
        self.rows_by_table = {}
        for r in self.rows:
            self.rows_by_table[r[0]] = self.rows_by_table.get(r[0], 0) + 1
        # how each value moves: value(node, t, i) = base[node][i] + rate[i]*t + J[(t+node) % P][i]
        rng = random.Random(12345)
        self.rate, jit_amp = [], []
        for _, _, kind, mag, _ in self.cells:
            if kind == "k":
                r = max(1, int(mag * rng.uniform(0.5, 1.5)))
                self.rate.append(r)
                jit_amp.append((0, r - 1))
            elif kind == "g":
                self.rate.append(0)
                a = int(mag // 10)
                jit_amp.append((-a, a))
            elif kind == "s":
                self.rate.append(0)
                jit_amp.append((0, 1))
            else:
                self.rate.append(0)
                jit_amp.append((0, 0))
        self.jitter = [[rng.randint(lo, hi) if hi > lo else lo for lo, hi in jit_amp]
                       for _ in range(JITTER_POOL)]

    def base(self, node):
        rng = random.Random(1000 + node)
        out = []
        for _, _, kind, mag, _ in self.cells:
            if kind == "k":
                out.append(int(mag * rng.uniform(1e3, 1e5)))
            elif kind == "g":
                out.append(int(mag * rng.uniform(0.8, 1.2)))
            elif kind == "s":
                out.append(82)
            else:
                out.append(int(mag))
        return out


class Node:
    """One simulated node: its agent id, its dimension rows, its cursor and
    its values at tick t (the same in both phases)."""

    def __init__(self, layout, idx, t0_ms):
        self.L, self.idx, self.t0_ms = layout, idx, t0_ms
        self.hostname = f"sim-{idx:03d}"
        self.agent_id = f"{0xbe7c4000 + idx:024x}"
        self.base = layout.base(idx)
        self.seq = 0
        self.tick = 0
        boot = t0_ms - 86400000
        self.node = {"hostname": self.hostname, "cores": layout.ncpus,
                     "mem_total_bytes": 540000000000, "boot_ms": boot}
        per_job = max(1, layout.nprocs // layout.njobs)
        self.pids = [200000 + idx * 10 + p * 7 for p in range(layout.nprocs)]
        self.proc_job = [min(p // per_job, layout.njobs - 1) for p in range(layout.nprocs)]
        self.job_ids = [str(7000000 + idx * 100 + j) for j in range(layout.njobs)]
        # dimension rows, ids the agent's own (1-based)
        devices = [[g + 1, 1, "NVIDIA", g, f"GPU-{idx:08x}-{g:04x}-0000-0000-000000000000",
                    "NVIDIA H100 80GB HBM3", f"00000000:{0x18 + g:02X}:00.0", 85520809984,
                    700000, 18, "535.104.05", 65535] for g in range(layout.ngpus)]
        jobs = [[j + 1, 1, "slurm", self.job_ids[j], boot + 3600000 + j, None, f"train-{j}",
                 f"srun python train.py --config cfg{j}.yaml", "alice", 1000,
                 150000 + j, None, None, 0, 1000, layout.ncpus // layout.njobs,
                 layout.ncpus, 540000000000, 0, 0, 0, "0",
                 f"/sys/fs/cgroup/system.slice/slurmstepd.scope/job_{self.job_ids[j]}",
                 "normal", "slurm", float(layout.ncpus // layout.njobs), 128000000000,
                 max(1, layout.ngpus // layout.njobs),
                 ",".join(str(g) for g in range(layout.ngpus)
                          if g % layout.njobs == j)] for j in range(layout.njobs)]
        procs = [[p + 1, 1, self.proc_job[p] + 1, self.pids[p], 150000 + self.proc_job[p],
                  boot + 3600000 + p, None, 1000, "python3",
                  f"python3 -u train.py --config cfg{self.proc_job[p]}.yaml --rank {p}"]
                 for p in range(layout.nprocs)]
        self.dims_json = json.dumps({
            "devices": {"columns": DEVICE_COLS, "rows": devices},
            "jobs": {"columns": JOB_COLS, "rows": jobs},
            "procs": {"columns": PROC_COLS, "rows": procs},
        }, separators=(",", ":"))[1:-1]
        self.head_prefix = json.dumps(
            {"version": 1, "agent_id": self.agent_id, "node": self.node, "interval_ms": 1000},
            separators=(",", ":"))[:-1]
        self.prom = None

    def values(self, t):
        J = self.L.jitter[(t + self.idx) % JITTER_POOL]
        return [b + r * t + j for b, r, j in zip(self.base, self.L.rate, J)]

    # ---- the head: a JSON batch (docs/wire.md) ----

    def head_batch(self, t):
        """(body, to_seq, fact rows, values) of tick t."""
        L = self.L
        v = self.values(t)
        ts = self.t0_ms + t * 1000
        seq = self.seq
        tables = {}
        for table, key, a, b in L.rows:
            seq += 1
            if table == "proc_samples":
                row = [seq, key + 1, self.proc_job[key] + 1, ts, STATE[v[a]]] + v[a + 1:b]
            elif table == "host_samples":
                row = [seq, 1, ts] + v[a:b]
            elif table in ("cpu_samples", "disk_samples", "net_samples"):
                row = [seq, 1, ts, key] + v[a:b]
            else:  # job_samples, gpu_samples: the reference, then ts
                row = [seq, key + 1, ts] + v[a:b]
            tables.setdefault(table, []).append(row)
        facts = ",".join(f'"{t_}":{{"columns":{COLUMNS_JSON[t_]},"rows":'
                         f'{json.dumps(rows, separators=(",", ":"))}}}'
                         for t_, rows in tables.items())
        body = (f'{self.head_prefix},"from_seq":{self.seq},"to_seq":{seq},"max_seq":{seq},'
                f'"tables":{{{facts},{self.dims_json}}}}}').encode()
        return body, seq, L.nrows, L.nvalues

    # ---- Prometheus: remote-write requests ----

    def prom_setup(self, max_samples):
        """Per series: the bytes before its value (TimeSeries header, labels,
        Sample header); the timestamp's varint after it has the same length for
        the whole run, so one struct format per request packs a whole tick."""
        L = self.L
        ts_len = len(varint(self.t0_ms))
        sample_len = 1 + 8 + 1 + ts_len
        prefixes = []
        for table, col, kind, mag, labels in L.cells:
            lab = {"__name__": f"{table}_{col}", "node": self.hostname}
            for k, val in labels:
                if k == "proc":
                    lab["pid"] = str(self.pids[val])
                    lab["jobid"] = self.job_ids[self.proc_job[val]]
                elif k == "jobidx":
                    lab["jobid"] = self.job_ids[val]
                else:
                    lab[k] = val
            enc = b"".join(pb_bytes(1, pb_bytes(1, k.encode()) + pb_bytes(2, lab[k].encode()))
                           for k in sorted(lab))
            ts_body = len(enc) + 2 + sample_len
            prefixes.append(b"\x0a" + varint(ts_body) + enc + b"\x12" + bytes([sample_len])
                            + b"\x09")
        step = max_samples if max_samples > 0 else L.nvalues
        self.prom = []
        for a in range(0, L.nvalues, step):
            b = min(L.nvalues, a + step)
            fmt = "<" + "".join(f"{len(prefixes[i])}sd{1 + ts_len}s" for i in range(a, b))
            args = []
            for i in range(a, b):
                args.extend((prefixes[i], 0.0, b""))
            self.prom.append((struct.Struct(fmt), a, b, args))
        self.ts_len = ts_len

    def prom_requests(self, t):
        """[(body, samples)] of tick t."""
        v = self.values(t)
        ts = self.t0_ms + t * 1000
        tsb = b"\x10" + varint(ts)
        if len(tsb) != 1 + self.ts_len:
            raise RuntimeError("timestamp varint changed length")
        out = []
        for st, a, b, args in self.prom:
            n = b - a
            args[1::3] = v[a:b]
            args[2::3] = [tsb] * n
            out.append((snappy_block(st.pack(*args)), n))
        return out


COLUMNS_JSON = {
    "host_samples": json.dumps(["seq", "node_id", "ts_ms"] + [c for c, _, _ in HOST]),
    "cpu_samples": json.dumps(["seq", "node_id", "ts_ms", "cpu"] + [c for c, _, _ in CPU]),
    "disk_samples": json.dumps(["seq", "node_id", "ts_ms", "disk"] + [c for c, _, _ in DISK]),
    "net_samples": json.dumps(["seq", "node_id", "ts_ms", "iface"] + [c for c, _, _ in NET]),
    "proc_samples": json.dumps(["seq", "proc_id", "job_id", "ts_ms"] + [c for c, _, _ in PROC]),
    "job_samples": json.dumps(["seq", "job_id", "ts_ms"] + [c for c, _, _ in JOB]),
    "gpu_samples": json.dumps(["seq", "device_id", "ts_ms"] + [c for c, _, _ in GPU]),
}
for _k in COLUMNS_JSON:
    COLUMNS_JSON[_k] = COLUMNS_JSON[_k].replace(" ", "")


# ---- the load ----

class Phase:
    """K threads, each with one keep-alive connection and its share of the
    nodes, sending tick after tick as fast as the server answers."""

    def __init__(self, kind, port, nodes, nconn, warmup_ticks):
        self.kind, self.port, self.nodes = kind, port, nodes
        self.nconn, self.warmup_ticks = nconn, warmup_ticks
        self.stop = threading.Event()
        self.measuring = threading.Event()
        self.ready = threading.Barrier(nconn + 1)
        self.stats = [{"requests": 0, "rows": 0, "values": 0, "bytes": 0, "errors": 0,
                       "reconnects": 0, "lat": [], "messages": [],
                       "warm": {"requests": 0, "values": 0}} for _ in range(nconn)]
        self.fatal = []

    def send(self, conn, st, path, body, headers, ok_status):
        t0 = time.perf_counter()
        try:
            conn.request("POST", path, body, headers)
            r = conn.getresponse()
            data = r.read()
        except (OSError, http.client.HTTPException) as e:
            st["errors"] += 1
            st["reconnects"] += 1
            if len(st["messages"]) < 5:
                st["messages"].append(f"{type(e).__name__}: {e}")
            conn.close()
            return None
        lat = time.perf_counter() - t0
        if r.status != ok_status:
            st["errors"] += 1
            if len(st["messages"]) < 5:
                st["messages"].append(f"HTTP {r.status}: {data[:300]!r}")
            return None
        if self.measuring.is_set():
            st["lat"].append(lat * 1000.0)
        return data

    def one_tick(self, conn, st, node):
        t = node.tick
        if self.kind == "head":
            body, to_seq, rows, nvals = node.head_batch(t)
            data = self.send(conn, st, "/api/v1/ingest", body,
                             {"Content-Type": "application/json"}, 200)
            if data is None:
                return False
            acked = json.loads(data).get("acked_seq")
            if acked != to_seq:
                st["errors"] += 1
                if len(st["messages"]) < 5:
                    st["messages"].append(f"{node.hostname}: acked_seq {acked}, sent {to_seq}")
                return False
            node.seq = to_seq
            nbytes = len(body)
        else:
            rows, nvals, nbytes = 0, 0, 0
            for body, n in node.prom_requests(t):
                data = self.send(conn, st, "/api/v1/write", body, PROM_HEADERS, 204)
                if data is None:
                    return False
                nvals += n
                nbytes += len(body)
                if self.measuring.is_set():
                    st["requests"] += 1
            rows = node.L.nrows
        node.tick += 1
        if self.measuring.is_set():
            if self.kind == "head":
                st["requests"] += 1
            st["rows"] += rows
            st["values"] += nvals
            st["bytes"] += nbytes
        else:
            st["warm"]["requests"] += 1
            st["warm"]["values"] += nvals
        return True

    def worker(self, k):
        st = self.stats[k]
        mine = self.nodes[k::self.nconn]
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            for _ in range(self.warmup_ticks):
                for node in mine:
                    if not self.one_tick(conn, st, node):
                        raise RuntimeError(f"{self.kind}: warm-up failed: {st['messages']}")
            self.ready.wait()
            self.measuring.wait()
            while not self.stop.is_set():
                for node in mine:
                    if self.stop.is_set():
                        break
                    if not self.one_tick(conn, st, node) and st["errors"] > 50:
                        raise RuntimeError(f"{self.kind}: too many errors: {st['messages']}")
        except (RuntimeError, threading.BrokenBarrierError) as e:
            self.fatal.append(str(e))
            try:
                self.ready.abort()
            except threading.BrokenBarrierError:
                pass
        finally:
            conn.close()


PROM_HEADERS = {"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
                "X-Prometheus-Remote-Write-Version": "0.1.0",
                "User-Agent": "jobscope-bench/head_ingest"}


def cpu_of(pid):
    u, s = cpu_ticks(pid, children_map())
    return u, s


def minflt(pid):
    """Minor page faults of pid so far (field 10 of /proc/PID/stat)."""
    text = read_text(f"/proc/{pid}/stat")
    return int(text[text.rindex(")") + 2:].split()[7])


class ThreadStates(threading.Thread):
    """Samples the state letter of every thread of pid (/proc/PID/task/TID/stat)
    every 5 ms: for the head's ingest thread, the share of the window it ran (R),
    waited on the disk (D: the fsync before each answer) or waited for a request
    (S: idle, the load did not keep it busy)."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.stop = threading.Event()
        self.counts = {}

    def run(self):
        while not self.stop.wait(0.005):
            try:
                tids = os.listdir(f"/proc/{self.pid}/task")
            except OSError:
                return
            for tid in tids:
                try:
                    text = read_text(f"/proc/{self.pid}/task/{tid}/stat")
                except OSError:
                    continue
                st = text[text.rindex(")") + 2]
                c = self.counts.setdefault(tid, {})
                c[st] = c.get(st, 0) + 1

    def busiest(self):
        """States (fractions) of the thread that used the most CPU."""
        best, best_cpu = None, -1
        for tid in self.counts:
            try:
                f = read_text(f"/proc/{self.pid}/task/{tid}/stat")
                f = f[f.rindex(")") + 2:].split()
                cpu = int(f[11]) + int(f[12])
            except (OSError, ValueError, IndexError):
                continue
            if cpu > best_cpu:
                best, best_cpu = tid, cpu
        if best is None:
            return {}
        c = self.counts[best]
        n = sum(c.values())
        return {k: v / n for k, v in sorted(c.items())}


def run_phase(kind, pid, port, layout, args, t0_ms, pg=None):
    """Warm-up, then one window of args.duration seconds; the server's CPU,
    RSS and what it acknowledged (and with pg, a PgCluster holding the head's
    store, the cluster's CPU over the same window)."""
    nodes = [Node(layout, i, t0_ms) for i in range(args.nodes)]
    if kind == "prometheus":
        for n in nodes:
            n.prom_setup(args.prom_samples_per_request)
    ph = Phase(kind, port, nodes, args.connections, args.warmup_ticks)
    threads = [threading.Thread(target=ph.worker, args=(k,), daemon=True)
               for k in range(args.connections)]
    tw = time.monotonic()
    c_w = cpu_of(pid)
    for th in threads:
        th.start()
    try:
        ph.ready.wait(timeout=600)
    except threading.BrokenBarrierError:
        ph.stop.set()
        ph.measuring.set()
        for th in threads:
            th.join(timeout=30)
        raise RuntimeError("; ".join(ph.fatal) or f"{kind}: warm-up failed")
    warm_s = time.monotonic() - tw
    c0, f0 = cpu_of(pid), minflt(pid)
    p0 = pg.cpu() if pg else (0, 0)
    h0, me0, t0 = host_cpu(), self_ticks(), time.monotonic()
    states = ThreadStates(pid) if kind == "head" else None
    if states:
        states.start()
    ph.measuring.set()
    time.sleep(args.duration)
    ph.stop.set()
    for th in threads:
        th.join(timeout=120)
    if states:
        states.stop.set()
        states.join(timeout=10)
    t1 = time.monotonic()
    c1, h1, me1, f1 = cpu_of(pid), host_cpu(), self_ticks(), minflt(pid)
    p1 = pg.cpu() if pg else (0, 0)
    hwm = status_kib(pid, "VmHWM")
    rss = status_kib(pid, "VmRSS")
    nthreads = status_kib(pid, "Threads")
    if ph.fatal:
        raise RuntimeError("; ".join(ph.fatal))
    el = t1 - t0
    du, ds = c1[0] - c0[0], c1[1] - c0[1]
    cpu_s = (du + ds) / CLK_TCK
    tot = {k: sum(s[k] for s in ph.stats) for k in
           ("requests", "rows", "values", "bytes", "errors", "reconnects")}
    lat = [x for s in ph.stats for x in s["lat"]]
    busy = (h1[0] - h0[0]) / CLK_TCK
    me = (me1 - me0) / CLK_TCK
    pu, ps = (p1[0] - p0[0]) / CLK_TCK, (p1[1] - p0[1]) / CLK_TCK
    both = cpu_s + pu + ps
    res = {
        "elapsed_s": el, "warmup_s": warm_s,
        "warmup_cpu_s": (c0[0] + c0[1] - c_w[0] - c_w[1]) / CLK_TCK,
        "warmup_values": sum(s["warm"]["values"] for s in ph.stats),
        "cpu_s": cpu_s, "user_s": du / CLK_TCK, "sys_s": ds / CLK_TCK,
        "cores": cpu_s / el, "hwm_kib": hwm, "rss_kib": rss, "threads": nthreads,
        "node_ticks": tot["rows"] // layout.nrows,
        **tot,
        "rows_per_s": tot["rows"] / el, "values_per_s": tot["values"] / el,
        "requests_per_s": tot["requests"] / el, "mib_per_s": tot["bytes"] / el / 2**20,
        "values_per_cpu_s": tot["values"] / cpu_s if cpu_s > 0 else float("inf"),
        "minflt_per_request": (f1 - f0) / tot["requests"] if tot["requests"] else 0.0,
        "simulator_cores": me / el,
        "other_load_cores": max(0.0, (busy - cpu_s - pu - ps - me) / el),
        "server_cpu_s": pu + ps, "server_user_s": pu, "server_sys_s": ps,
        "total_cpu_s": both, "total_cores": both / el,
        "values_per_total_cpu_s": tot["values"] / both if both > 0 else float("inf"),
        "ticks_per_node": [min(n.tick for n in nodes), max(n.tick for n in nodes)],
        "ticks_sent": [n.tick for n in nodes],
        "messages": [m for s in ph.stats for m in s["messages"]][:10],
    }
    if lat:
        res.update(lat_p50_ms=pct(lat, 50), lat_p99_ms=pct(lat, 99), lat_max_ms=max(lat))
    if states:
        res["ingest_thread_states"] = states.busiest()
    if pg:
        res["server_hwm_kib"], res["server_rss_kib"] = pg.memory()
    return res


# ---- the servers ----

def start_head(jobscope, db, tmp, name, env=None):
    errf = os.path.join(tmp, f"{name}.err")
    argv = [jobscope, "head", "--listen", "127.0.0.1:0", "--db", db]
    with open(errf, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env)

    def port():
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", read_text(errf))
        return int(m.group(1)) if m else None

    return proc, wait_for(port, proc, 30, "jobscope head"), errf, argv


def ready(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            r.read()
            return r.status == 200
    except OSError:
        return False


def start_prometheus(tmp):
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 15s\n  evaluation_interval: 15s\n"
                "scrape_configs: []\n")
    port = free_port()
    argv = [PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/prom-data",
            f"--web.listen-address=127.0.0.1:{port}", "--web.enable-remote-write-receiver"]
    errf = os.path.join(tmp, "prometheus.err")
    with open(errf, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
    wait_for(lambda: ready(f"http://127.0.0.1:{port}/-/ready"), proc, 60, "prometheus")
    return proc, port, errf, argv


def prometheus_version():
    try:
        out = subprocess.run([PROMETHEUS, "--version"], capture_output=True, text=True,
                             timeout=10)
        return (out.stdout + out.stderr).splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "?"


def head_log_problems(errf):
    """Lines of the head's stderr other than its start-up line."""
    lines = read_text(errf).splitlines()
    return [ln for ln in lines if "listening on" not in ln
            and "Terminated received: exiting" not in ln][:20]


# ---- a PostgreSQL cluster of its own ----

PG_BIN = "/usr/lib/postgresql/15/bin"


class PgCluster:
    """A throwaway PostgreSQL 15 cluster on 127.0.0.1 (a free port), trust
    authentication for the superuser `postgres`, its sockets and data in a
    private directory; default durability (fsync on, synchronous_commit on),
    so a commit the head waits for is on the disk.  Run as the `postgres` user
    when this script is root (initdb refuses root)."""

    def __init__(self, log_min_duration_ms=None, stat_statements=False, settings=(),
                 warm_wal_mb=0):
        self.dir = self.port = None
        self.warm_wal_mb = warm_wal_mb
        self.settings = list(settings)
        self.log_min_duration_ms = log_min_duration_ms
        self.stat_statements = stat_statements
        self.as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _run(self, argv, timeout=120):
        r = subprocess.run(self.as_pg + argv, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"{os.path.basename(argv[0])} exited {r.returncode}: "
                               + (r.stderr or r.stdout)[-800:])
        return r.stdout

    def start(self):
        if not os.access(os.path.join(PG_BIN, "initdb"), os.X_OK):
            raise RuntimeError(f"{PG_BIN}/initdb missing: apt-get install postgresql-15")
        # its own directory: the benchmark's temporary one is root's, mode 0700
        self.dir = tempfile.mkdtemp(prefix="jobscope-head-bench-pg-")
        if self.as_pg:
            shutil.chown(self.dir, "postgres", "postgres")
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        self._run([f"{PG_BIN}/initdb", "-D", self.data, "-U", "postgres", "-A", "trust",
                   "-E", "UTF8", "--no-locale"])
        self.port = free_port()
        conf = [f"listen_addresses = '127.0.0.1'", f"port = {self.port}",
                f"unix_socket_directories = '{self.dir}'"]
        if self.log_min_duration_ms is not None:
            conf.append(f"log_min_duration_statement = {self.log_min_duration_ms}")
        if self.stat_statements:
            conf += ["shared_preload_libraries = 'pg_stat_statements'",
                     "pg_stat_statements.track = all"]
        conf += [f"{k} = '{v}'" for k, v in (kv.split("=", 1) for kv in self.settings)]
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write("\n# head_ingest.py\n" + "\n".join(conf) + "\n")
        self._run([f"{PG_BIN}/pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "60",
                   "start"])
        self.pm = int(read_text(os.path.join(self.data, "postmaster.pid")).split()[0])
        if self.stat_statements:
            self.query("postgres", "CREATE EXTENSION pg_stat_statements")
        if self.warm_wal_mb:
            self.warm_wal()
        return self

    def warm_wal(self):
        """WAL as a server that has run a while has it: warm_wal_mb MiB written
        and checkpointed, so that the phases write into recycled segments
        (renamed, as every checkpoint does) rather than into new ones, each
        16 MiB zero-filled when made (XLogFileInit, about 6 % of a young
        cluster's CPU under the head's load; a SQLite WAL file is reused from
        its first checkpoint on)."""
        rows = self.warm_wal_mb * 1024 // 1
        self.query("postgres", f"CREATE TABLE warm_wal AS SELECT g, repeat('w', 1000) AS pad"
                   f" FROM generate_series(1, {rows}) g")
        self.query("postgres", "DROP TABLE warm_wal")
        self.query("postgres", "CHECKPOINT")
        self.query("postgres", "CHECKPOINT")

    def createdb(self, name):
        self._run([f"{PG_BIN}/createdb", "-h", "127.0.0.1", "-p", str(self.port),
                   "-U", "postgres", name])
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def query(self, db, sql):
        return self._run([f"{PG_BIN}/psql", "-h", "127.0.0.1", "-p", str(self.port), "-U",
                          "postgres", "-d", db, "-XAtc", sql]).strip()

    def cpu(self):
        """(user, system) ticks of the whole cluster so far: the postmaster's
        own, its reaped children's (cutime, cstime: backends and workers that
        ended) and every live child's own."""
        return cpu_ticks(self.pm, children_map())

    def memory(self):
        """(largest VmHWM of one process, sum of VmRSS of all) in KiB: RSS
        counts the shared buffers each process touched, so the sum overstates."""
        kids = children_map()
        pids, todo = [], [self.pm]
        while todo:
            p = todo.pop()
            pids.append(p)
            todo.extend(kids.get(p, []))
        hwm, rss = 0, 0
        for p in pids:
            try:
                hwm = max(hwm, status_kib(p, "VmHWM") or 0)
                rss += status_kib(p, "VmRSS") or 0
            except OSError:
                pass
        return hwm, rss

    def version(self):
        try:
            return self._run([f"{PG_BIN}/postgres", "--version"]).strip()
        except (RuntimeError, OSError, subprocess.SubprocessError):
            return "?"

    def log_lines(self, pattern=r"ERROR|FATAL|PANIC|WARNING"):
        try:
            return [ln for ln in read_text(self.log).splitlines() if re.search(pattern, ln)]
        except OSError:
            return []

    def stop(self):
        if self.dir is None:
            return
        try:
            if os.path.exists(os.path.join(self.data, "postmaster.pid")):
                self._run([f"{PG_BIN}/pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop"])
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            print(f"head_ingest: stopping PostgreSQL: {e}", file=sys.stderr)
        finally:
            try:
                self.log_text = read_text(self.log)
            except OSError:
                self.log_text = ""
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


# ---- the catch-up ----

def store_max_seq(db_path):
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        have = {r[0] for r in db.execute("SELECT name FROM sqlite_schema WHERE type='table'")}
        tabs = [t for t in FACT_TABLES if t in have]
        mx = db.execute("SELECT max(0" + "".join(
            f", coalesce((SELECT max(seq) FROM {t}), 0)" for t in tabs) + ")").fetchone()[0]
        rows = {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tabs}
        ticks = db.execute("SELECT count(*), min(ts_ms), max(ts_ms) FROM host_samples"
                           ).fetchone()
        agent = db.execute("SELECT value FROM meta WHERE key = 'agent_id'").fetchone()
    finally:
        db.close()
    return mx, {t: n for t, n in rows.items() if n}, ticks, agent[0] if agent else None


def gpu_scenario(path, ngpus):
    lines = ["# 8 GPUs, every metric", "driver 535.104.05"]
    for d in range(ngpus):
        lines.append(f"device {d} uuid=GPU-{d:08x}-0000-0000-0000-000000000000 "
                     f"name=\"NVIDIA H100\" bus=00000000:{0x18 + d:02X}:00.0 "
                     "mem_total=85899345920 power_limit=700000 nvlinks=18")
    for d in range(ngpus):
        lines.append(f"at 0 {d} util=80 mem_util=50 mem_used=60000000000 pcie_tx_kbps=1000 "
                     "pcie_rx_kbps=2000 nvlink_tx_kib=100 nvlink_rx_kib=200 power=350000 "
                     "energy=1000 temp=70 sm_clock=1400 mem_clock=1593 throttle=0 "
                     "ecc_sbe=0 ecc_dbe=0")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def get_json(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def record_outage(args, tmp, jobscope):
    """The agent store of an outage, recorded without a head; (its figures,
    the environment with the fake NVML, the store's path)."""
    scn = os.path.join(tmp, "gpu.scn")
    gpu_scenario(scn, 8)
    env = dict(os.environ, JOBSCOPE_NVML_LIBRARY=os.path.abspath(args.nvml),
               FAKE_GPU_SCENARIO=scn, LC_ALL="C")
    db = os.path.join(tmp, "outage.db")
    rec_argv = [jobscope, "agent", "--interval", "100ms", "--exit-after",
                f"{args.outage_seconds:g}s", "--listen", "none", "--db", db]
    t = time.monotonic()
    rec = subprocess.run(rec_argv, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, timeout=args.outage_seconds + 120)
    res = {"record_s": time.monotonic() - t, "record_exit": rec.returncode,
           "argv_record": ("JOBSCOPE_NVML_LIBRARY=" + args.nvml + " FAKE_GPU_SCENARIO=TMP/gpu.scn "
                           + cmdline(rec_argv).replace(tmp, "TMP"))}
    if rec.returncode != 0:
        raise RuntimeError(f"outage agent exited {rec.returncode}: {rec.stderr[-500:]}")
    max_seq, rows, ticks, agent_id = store_max_seq(db)
    res.update(max_seq=max_seq, rows=rows, fact_rows=sum(rows.values()), host_ticks=ticks[0],
               span_s=(ticks[2] - ticks[1]) / 1000.0 if ticks[0] else 0.0, agent_id=agent_id,
               store_bytes=sum(os.path.getsize(db + s) for s in ("", "-wal")
                               if os.path.exists(db + s)))
    return res, env, db


def catch_up(args, tmp, jobscope, outage, env, db, head_db, name, pg=None):
    """A fresh head on head_db, then an agent streaming the outage store db
    (a copy of its own: streaming marks it); the time until acked_seq reaches
    the store's max seq."""
    res = dict(outage)
    max_seq, agent_id = outage["max_seq"], outage["agent_id"]
    head = agent = None
    aerrf = os.path.join(tmp, f"agent-{name}.err")
    herr = os.path.join(tmp, f"{name}.err")
    try:
        head, port, herr, hargv = start_head(jobscope, head_db, tmp, name)
        url = f"http://127.0.0.1:{port}"
        ag_argv = [jobscope, "agent", "--db", db, "--head", url, "--interval", "1s",
                   "--listen", "none"]
        res["argv_head"] = cmdline(hargv).replace(tmp, "TMP")
        res["argv_agent"] = cmdline(ag_argv).replace(tmp, "TMP")
        aerr = open(aerrf, "w")
        hc0 = cpu_of(head.pid)
        pc0 = pg.cpu() if pg else (0, 0)
        t0 = time.monotonic()
        agent = subprocess.Popen(ag_argv, env=env, stdout=subprocess.DEVNULL, stderr=aerr)
        aerr.close()
        acked, done, first_contact = 0, None, None
        deadline = t0 + args.catchup_timeout
        polls = []
        while time.monotonic() < deadline:
            if agent.poll() is not None:
                raise RuntimeError(f"the catching-up agent exited {agent.returncode}: "
                                   + read_text(aerrf)[-500:])
            try:
                cl = get_json(url + "/clients")
            except (OSError, ValueError):
                cl = {"clients": []}
            now = time.monotonic() - t0
            for c in cl.get("clients", []):
                # the outage store gets its agent_id when it first streams; the head
                # is fresh, so its one client is this agent
                if agent_id is None and len(cl["clients"]) == 1:
                    agent_id = res["agent_id"] = c.get("client_id")
                if c.get("client_id") == agent_id:
                    acked = c.get("acked_seq", 0)
                    if first_contact is None:
                        first_contact = now
                    if not polls or polls[-1][1] != acked:
                        polls.append((round(now, 3), acked, c.get("batches"), c.get("rows")))
                    res["head_batches"], res["head_rows"] = c.get("batches"), c.get("rows")
            if acked >= max_seq:
                done = now
                break
            time.sleep(0.05)
        hc1 = cpu_of(head.pid)
        pc1 = pg.cpu() if pg else (0, 0)
        res["agent_cpu_s"] = sum(cpu_of(agent.pid)) / CLK_TCK
        res.update(seconds=done, acked_seq=acked, first_contact_s=first_contact,
                   progress=polls[:40],
                   head_cpu_s=(hc1[0] + hc1[1] - hc0[0] - hc0[1]) / CLK_TCK,
                   server_cpu_s=(pc1[0] + pc1[1] - pc0[0] - pc0[1]) / CLK_TCK,
                   head_hwm_kib=status_kib(head.pid, "VmHWM"))
        if done is None:
            res["error"] = (f"not done after {args.catchup_timeout:g} s: the head acked "
                            f"{acked} of {max_seq}")
    finally:
        stop(agent)
        res["agent_exit"] = agent.returncode if agent else None
        stop(head)
        res["head_exit"] = head.returncode if head else None
    res["agent_stderr"] = read_text(aerrf)[-1500:] if os.path.exists(aerrf) else ""
    res["head_log"] = head_log_problems(herr) if os.path.exists(herr) else []
    return res


# ---- the run ----

def run(args, tmp):
    jobscope = os.path.join(args.build, "jobscope")
    layout = Layout(args.cpus, 8, args.procs, 4)
    # simulated time: from an hour ago, 1 s a tick (Prometheus takes samples
    # up to an hour older than its newest; the phases cover far less)
    t0_ms = (int(time.time()) - 3600) * 1000
    res = {"layout": {"nodes": args.nodes, "cpus": args.cpus, "gpus": 8, "procs": args.procs,
                      "jobs": 4, "values_per_node_tick": layout.nvalues,
                      "fact_rows_per_node_tick": layout.nrows,
                      "dim_rows_per_batch": 8 + 4 + args.procs,
                      "rows_by_table": layout.rows_by_table,
                      "values_by_table": {}},
           "snappy": "python3-snappy" if _snappy else "literal-only blocks (no python3-snappy)",
           "prometheus_version": prometheus_version()}
    for table, *_ in layout.cells:
        vb = res["layout"]["values_by_table"]
        vb[table] = vb.get(table, 0) + 1
    sample = Node(layout, 0, t0_ms)
    res["layout"]["head_batch_bytes"] = len(sample.head_batch(0)[0])
    sample.prom_setup(args.prom_samples_per_request)
    reqs = sample.prom_requests(0)
    res["layout"]["prom_request_bytes"] = sum(len(b) for b, _ in reqs)
    res["layout"]["prom_requests_per_node_tick"] = len(reqs)

    # 1. the head, on each store backend in turn (the same load)
    res["backends"] = args.backends
    res["heads"] = {}
    pg = None
    try:
        if "postgresql" in args.backends:
            pg = PgCluster(args.pg_log_min_duration_ms, args.pg_stat_statements,
                           args.pg_setting, args.pg_warm_wal_mb).start()
            res["pg_version"] = pg.version()
        rounds = []
        for k in range(args.rounds):
            # each round on fresh stores; the order turned each round, so that the
            # machine's speed drifting over minutes favours neither backend
            this = {}
            for backend in (args.backends if k % 2 == 0 else args.backends[::-1]):
                this[backend] = head_phase(args, tmp, jobscope, layout, t0_ms, backend,
                                           pg if backend == "postgresql" else None,
                                           f"-{k + 1}" if args.rounds > 1 else "")
            rounds.append({b: this[b] for b in args.backends})
        res["heads"] = rounds[-1]
        if len(args.backends) == 2 and args.rounds > 1:
            res["rounds"] = [{b: r[b]["values_per_total_cpu_s"] for b in args.backends}
                             for r in rounds]
            for r in res["rounds"]:
                r["ratio"] = r["postgresql"] / r["sqlite"] if r["sqlite"] else float("nan")
            # the tables below are the median round's
            order = sorted(range(len(rounds)), key=lambda i: res["rounds"][i]["ratio"])
            res["median_round"] = order[len(order) // 2]
            res["heads"] = rounds[res["median_round"]]
    finally:
        if pg:
            res["pg_log"] = pg.log_lines()[:20]
            if args.pg_log_min_duration_ms is not None:
                res["pg_slow"] = pg.log_lines(r"duration: ")[:40]
            pg.stop()
    res["head"] = res["heads"][args.backends[0]]

    # 2. Prometheus, the same values
    prom = None
    try:
        prom, pport, perr, pargv = start_prometheus(tmp)
        res["argv_prometheus"] = cmdline(pargv).replace(tmp, "TMP")
        res["prometheus"] = run_phase("prometheus", prom.pid, pport, layout, args, t0_ms)
        res["prometheus"]["alive"] = prom.poll() is None
    finally:
        stop(prom)
    res["prometheus"]["exit"] = prom.returncode
    res["prometheus"]["log"] = [ln for ln in read_text(perr).splitlines()
                                if ("level=error" in ln or "level=warn" in ln)
                                and "Received SIGTERM" not in ln][:10]
    res["prometheus"]["tsdb_bytes"] = sum(
        os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(f"{tmp}/prom-data")
        for f in fs)

    # 3. the catch-up, on each backend (a failure there is a result, not the end
    # of the benchmark): one outage recorded, a copy of it streamed to each
    res["catchups"] = {}
    try:
        outage, env, odb = record_outage(args, tmp, jobscope)
    except (RuntimeError, subprocess.SubprocessError, OSError, sqlite3.Error) as e:
        outage = {"error": str(e), "seconds": None}
    pg = None
    try:
        for backend in args.backends:
            if "error" in outage:
                res["catchups"][backend] = outage
                continue
            try:
                db = os.path.join(tmp, f"outage-{backend}.db")
                for sfx in ("", "-wal", "-shm"):
                    if os.path.exists(odb + sfx):
                        shutil.copyfile(odb + sfx, db + sfx)
                if backend == "postgresql":
                    pg = PgCluster(args.pg_log_min_duration_ms).start()
                    head_db = pg.createdb("jobscope_catchup")
                else:
                    head_db = os.path.join(tmp, "head-catchup.db")
                res["catchups"][backend] = catch_up(args, tmp, jobscope, outage, env, db,
                                                    head_db, f"head-catchup-{backend}", pg)
            except (RuntimeError, subprocess.SubprocessError, OSError, sqlite3.Error) as e:
                res["catchups"][backend] = dict(outage, error=str(e), seconds=None)
    finally:
        if pg:
            pg.stop()
    res["catchup"] = res["catchups"].get(args.backends[0], outage)
    return res


def settle(limit_s=30.0, quiet_cores=0.15):
    """Before a phase: the dirty pages of the one before written out, and the machine
    quiet (under quiet_cores busy over a second: a server's checkpoint or vacuum, the
    kernel's writeback done), up to limit_s.  The seconds it took."""
    t0 = time.monotonic()
    os.sync()
    while time.monotonic() - t0 < limit_s:
        h0 = host_cpu()[0]
        time.sleep(1.0)
        if (host_cpu()[0] - h0) / CLK_TCK < quiet_cores:
            break
    return time.monotonic() - t0


def head_phase(args, tmp, jobscope, layout, t0_ms, backend, pg, suffix=""):
    """The head phase on one backend: a SQLite file, or a fresh database of
    the PostgreSQL cluster pg (suffix: the round's, in the names)."""
    if backend == "postgresql":
        dbname = "jobscope_ingest" + suffix.replace("-", "_")
        db = pg.createdb(dbname)
    else:
        db = os.path.join(tmp, f"head{suffix}.db")
    name = f"head-{backend}{suffix}"
    head = None
    r = {}
    settled = settle()
    try:
        extra = dict(kv.split("=", 1) for kv in args.head_env)
        head, port, herr, hargv = start_head(jobscope, db, tmp, name,
                                             dict(os.environ, **extra) if extra else None)
        r = run_phase("head", head.pid, port, layout, args, t0_ms, pg)
        r["argv"] = " ".join(args.head_env + [cmdline(hargv).replace(tmp, "TMP")])
        r["settle_s"] = settled
        cl = get_json(f"http://127.0.0.1:{port}/clients")
        r["clients"] = cl.get("total_clients")
        r["head_rows_total"] = sum(c.get("rows", 0) for c in cl.get("clients", []))
        r["alive"] = head.poll() is None
    finally:
        stop(head)
    r["exit"] = head.returncode
    r["log"] = head_log_problems(os.path.join(tmp, f"{name}.err"))
    if backend == "postgresql":
        r["store_bytes"] = int(pg.query(dbname, f"SELECT pg_database_size('{dbname}')"))
        # the head's backend has ended (its statistics flushed): warm-up included
        x = pg.query(dbname, "SELECT xact_commit, xact_rollback, tup_inserted, tup_updated "
                     f"FROM pg_stat_database WHERE datname = '{dbname}'").split("|")
        r["pg_stat_database"] = dict(zip(("xact_commit", "xact_rollback", "tup_inserted",
                                          "tup_updated"), map(int, x)))
        r["node_ticks_sent"] = sum(n for n in r.pop("ticks_sent", []))
        if args.pg_stat_statements:
            q = pg.query("postgres", "SELECT calls, rows, round(total_exec_time), "
                         "round(total_plan_time), regexp_replace(left(query, 110), "
                         "'\\s+', ' ', 'g') FROM pg_stat_statements s JOIN pg_database d "
                         f"ON d.oid = s.dbid WHERE d.datname = '{dbname}' "
                         "ORDER BY total_exec_time DESC LIMIT 10")
            r["pg_statements"] = [ln.split("|", 4) for ln in q.splitlines()]
            r["pg_statement_calls"] = int(pg.query(
                "postgres", "SELECT sum(calls) FROM pg_stat_statements s JOIN pg_database d "
                f"ON d.oid = s.dbid WHERE d.datname = '{dbname}'") or 0)
        # gone once measured: autovacuum would otherwise work on it in a later round's
        # window (its tables never vacuumed yet), CPU no head of that round made
        pg.query("postgres", f"DROP DATABASE {dbname}")
    else:
        r["store_bytes"] = sum(os.path.getsize(db + s) for s in ("", "-wal")
                               if os.path.exists(db + s))
    return r


def summarize(args, res):
    h, p = res["head"], res["prometheus"]
    vpn = res["layout"]["values_per_node_tick"]
    s = {"ratio": h["values_per_cpu_s"] / p["values_per_cpu_s"]}
    s["pass"] = s["ratio"] >= TARGET_RATIO
    # nodes one head takes: by CPU (the budget), and by its one ingest thread, whose
    # time per batch is CPU plus the fsync: the rate it kept up flat out, scaled to
    # the share of the window it was busy (R or D; S = waiting for a request)
    st = h.get("ingest_thread_states", {})
    busy = sum(v for k, v in st.items() if k != "S") if st else 1.0
    s["ingest_thread_busy"] = busy
    s["nodes_by_cpu"] = args.budget_cores * h["values_per_cpu_s"] / vpn
    s["nodes_measured"] = h["values_per_s"] / vpn
    s["nodes_by_thread"] = s["nodes_measured"] / max(busy, 0.05)
    s["nodes"] = min(s["nodes_by_thread"], s["nodes_by_cpu"])
    res["summary"] = s
    return s


def report(args, res):
    L = []
    lay = res["layout"]
    h, p, c = res["head"], res["prometheus"], res["catchup"]
    s = res["summary"]
    L.append(f"Command: `{cmdline(['python3'] + sys.argv)}`")
    L.append("")
    L.append(f"{lay['nodes']} simulated nodes, each at 1 s: {lay['cpus']} CPUs, 8 GPUs, "
             f"{lay['procs']} processes (all of them changed every tick: the pessimistic "
             f"case) in {lay['jobs']} jobs, 2 disks, 2 interfaces.  A node-tick is "
             f"{lay['fact_rows_per_node_tick']} fact rows holding **{vpn(lay)} values** "
             "(non-null value cells: seq, ids, references, timestamps and labels not counted; "
             "by table: " + ", ".join(f"{t} {n}" for t, n in lay["values_by_table"].items())
             + f").  To the head: one batch per node-tick, {lay['head_batch_bytes'] / 1024:.0f} "
             f"KiB of JSON with the {lay['dim_rows_per_batch']} dimension rows it references "
             "(devices, jobs, procs), as an agent sends it.  To Prometheus: the same values, "
             f"one series each (`__name__` = table_column, `node`, and `cpu`, `disk`, `iface`, "
             f"`gpu`, `pid` + `jobid`, `jobid` as fitting), "
             f"{lay['prom_requests_per_node_tick']} remote-write request(s) per node-tick, "
             f"{lay['prom_request_bytes'] / 1024:.0f} KiB (protobuf, snappy: {res['snappy']}).")
    L.append("")
    L.append("```")
    L.append(h["argv"])
    L.append(res["argv_prometheus"])
    L.append("```")
    L.append("")
    L.append(f"One simulator process (this script), {args.connections} keep-alive connections "
             "(http.client, a thread each, nodes dealt round-robin), as fast as the server "
             f"answers; the phases one after the other.  {args.warmup_ticks} warm-up ticks per "
             "node first (first sight of every node, its dimension rows and series), then a "
             f"window of {args.duration:g} s.  CPU = utime+stime of /proc/PID/stat over the "
             "window (all threads); peak RSS = VmHWM at the end.")
    L.append("")
    L.append("| server | window | node-ticks | rows/s | values/s | CPU s (user/sys) | cores "
             "| values per CPU-second | peak RSS | request p50 / p99 ms | errors |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in (("jobscope head", h), ("Prometheus", p)):
        L.append(f"| {name} | {r['elapsed_s']:.1f} s | {r['node_ticks']} | "
                 f"{r['rows_per_s']:,.0f} | {r['values_per_s']:,.0f} | {r['cpu_s']:.2f} "
                 f"({r['user_s']:.2f}/{r['sys_s']:.2f}) | {r['cores']:.2f} | "
                 f"**{r['values_per_cpu_s']:,.0f}** | {r['hwm_kib'] / 1024:.1f} MiB | "
                 f"{r.get('lat_p50_ms', float('nan')):.1f} / "
                 f"{r.get('lat_p99_ms', float('nan')):.1f} | {r['errors']} |")
    L.append("")
    L.append("| check | measured | target | |")
    L.append("|---|---|---|---|")
    L.append(f"| head / Prometheus, values per CPU-second | {s['ratio']:.2f} | "
             f"≥ {TARGET_RATIO:g} | {'PASS' if s['pass'] else 'FAIL'} |")
    L.append(f"| nodes one head takes (1 s, 8 GPUs, {lay['procs']} processes) | "
             f"{s['nodes']:.0f} | (none) | - |")
    if c.get("seconds") is not None:
        L.append(f"| catch-up of a {c['host_ticks']}-tick outage ({c['fact_rows']} rows) | "
                 f"{c['seconds']:.2f} s | (none) | - |")
    else:
        L.append(f"| catch-up | **failed**: {c.get('error')} | (none) | - |")
    L.append("")
    L.append(f"Simulator: {h['simulator_cores']:.2f} cores during the head's window, "
             f"{p['simulator_cores']:.2f} during Prometheus's; other load "
             f"{h['other_load_cores']:.2f} and {p['other_load_cores']:.2f} cores of "
             f"{os.cpu_count()}.  Warm-up: head {h['warmup_values']} values in "
             f"{h['warmup_s']:.1f} s ({h['warmup_cpu_s']:.2f} CPU s), Prometheus "
             f"{p['warmup_values']} values in {p['warmup_s']:.1f} s ({p['warmup_cpu_s']:.2f} "
             f"CPU s; series creation).  Head: {h['threads']} threads, "
             f"{h['requests_per_s']:.0f} batches/s, {h['mib_per_s']:.1f} MiB/s of JSON, "
             f"{h['minflt_per_request']:.0f} minor page faults per batch, "
             f"store {h['store_bytes'] / 2**20:.0f} MiB at the end, {h['clients']} agents in "
             f"/clients, exit {h['exit']}.  Prometheus ({res['prometheus_version']}): "
             f"{p['threads']} threads, {p['requests_per_s']:.0f} requests/s, "
             f"{p['minflt_per_request']:.0f} minor page faults per request, "
             f"{p['mib_per_s']:.1f} MiB/s, TSDB {p['tsdb_bytes'] / 2**20:.0f} MiB, "
             f"exit {p['exit']}.")
    L.append("")
    st = h.get("ingest_thread_states", {})
    L.append(f"**How many nodes one head takes.**  Budget: {args.budget_cores:g} of the "
             f"{os.cpu_count()} cores.  A node sends {vpn(lay)} values/s, so at "
             f"{h['values_per_cpu_s']:,.0f} values per CPU-second the budget would take "
             f"{s['nodes_by_cpu']:.0f} nodes.  But the head ingests on one thread "
             "(its committer: the batches decoded meanwhile committed together, fsynced, then "
             "answered), so its ceiling is what that thread keeps up with: flat out in the "
             f"window it took {h['values_per_s']:,.0f} values/s = "
             f"{s['nodes_measured']:.0f} node-ticks per second at {h['cores']:.2f} cores, "
             "the thread being "
             + ", ".join(f"{k} {v * 100:.0f} %" for k, v in st.items())
             + " of the window (R running, D waiting on the disk: the fsync, S waiting for "
             f"a request), so busy {s['ingest_thread_busy'] * 100:.0f} % → "
             f"{s['nodes_by_thread']:.0f} node-ticks per second at 100 %.  One head: "
             f"**{s['nodes']:.0f} nodes** at 1 s, 8 GPUs and {lay['procs']} changing "
             "processes each, with no headroom (the smaller of the two; leave some).")
    L.append("")
    if "max_seq" not in c:
        L.append(f"**Catch-up.**  Could not run: {c.get('error')}")
    else:
        L.append(catchup_text(c))
        if c.get("host_ticks"):
            n = c["host_ticks"] * lay["fact_rows_per_node_tick"]
            L.append("")
            L.append(f"This VM's agent stores few rows a tick ({c['fact_rows'] / c['host_ticks']:.0f}: "
                     "its processes seldom change).  A node as simulated above would hold "
                     f"{c['host_ticks']} × {lay['fact_rows_per_node_tick']} = {n} fact rows for "
                     f"the same outage; at the head's steady rate above ({h['rows_per_s']:,.0f} "
                     f"rows/s in one-tick batches) that is about {n / h['rows_per_s']:.1f} s of "
                     "the head's time (an estimate, not measured: catch-up batches are larger, "
                     "so fewer transactions and dimension rows per row).")
    problems = []
    heads = [(f"head ({b})", r) for b, r in res["heads"].items()]
    for name, r in heads + [("prometheus", p)]:
        if r["errors"] or r["messages"]:
            problems.append(f"{name}: {r['errors']} errors: " + "; ".join(r["messages"]))
        if r.get("log"):
            problems.append(f"{name} log: " + " | ".join(r["log"][:5]))
        if r["exit"] not in (0, None):
            problems.append(f"{name}: exit status {r['exit']} after SIGTERM")
    for b, cb in res["catchups"].items():
        if cb.get("head_log"):
            problems.append(f"catch-up ({b}) head log: " + " | ".join(cb["head_log"][:5]))
        if cb.get("error"):
            problems.append(f"catch-up ({b}): " + cb["error"] + "; agent stderr: "
                            + cb.get("agent_stderr", "").strip().replace("\n", " | ")[-600:])
    if res.get("pg_log"):
        problems.append("PostgreSQL log: " + " | ".join(res["pg_log"][:5]))
    if problems:
        L.append("")
        L.append("Problems seen:")
        L.append("")
        L.extend(f"- {x}" for x in problems)
    if len(res["heads"]) > 1 or "postgresql" in res["heads"]:
        L.append("")
        L.extend(backends_text(args, res))
    return "\n".join(L) + "\n"


def backends_text(args, res):
    """The head phase and the catch-up per store backend, side by side."""
    L = []
    lay = res["layout"]
    heads = res["heads"]
    L.append("**The head's store: " + " against ".join(
        {"sqlite": "a SQLite file", "postgresql": "PostgreSQL"}[b] for b in heads) + ".**  "
             "The same load, one phase after the other, each on a fresh store:")
    L.append("")
    L.append("```")
    L.extend(r["argv"] for r in heads.values())
    L.append("```")
    L.append("")
    if "postgresql" in heads:
        changed = "".join(f"`{kv}`, " for kv in args.pg_setting)
        L.append(f"PostgreSQL: {res.get('pg_version', '?')}, a cluster of the benchmark's own "
                 "(initdb in a temporary directory as the `postgres` user, trust authentication, "
                 f"127.0.0.1 on a free port, {changed}every other setting the default: fsync on, "
                 "synchronous_commit on, shared_buffers 128 MB), on the same 2-core machine "
                 "as the head and the simulator.  The head acknowledges a batch only once "
                 "its transaction is committed, so both backends pay one durable commit per "
                 "batch.  Server CPU = the cluster's utime+stime over the window: the "
                 "postmaster's own, its reaped children's (cutime/cstime: backends and "
                 "workers that ended) and every live child's own, read at the start and the "
                 "end of the window; server peak RSS = the largest VmHWM of one postgres "
                 "process (RSS counts the shared buffers it touched).")
        L.append("")
    L.append("| backend | node-ticks | rows/s | values/s | head CPU s (user/sys) | server CPU s "
             "(user/sys) | cores (head + server) | values per CPU-second (head + server) | "
             "head peak RSS | server peak RSS | request p50 / p99 ms | store | errors |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for b, r in heads.items():
        srv = (f"{r['server_cpu_s']:.2f} ({r['server_user_s']:.2f}/{r['server_sys_s']:.2f})"
               if b == "postgresql" else "(in the head)")
        shwm = (f"{r['server_hwm_kib'] / 1024:.1f} MiB" if r.get("server_hwm_kib") else "-")
        L.append(f"| {b} | {r['node_ticks']} | {r['rows_per_s']:,.0f} | "
                 f"{r['values_per_s']:,.0f} | {r['cpu_s']:.2f} ({r['user_s']:.2f}/"
                 f"{r['sys_s']:.2f}) | {srv} | {r['total_cores']:.2f} | "
                 f"**{r['values_per_total_cpu_s']:,.0f}** | {r['hwm_kib'] / 1024:.1f} MiB | "
                 f"{shwm} | {r.get('lat_p50_ms', float('nan')):.1f} / "
                 f"{r.get('lat_p99_ms', float('nan')):.1f} | "
                 f"{r['store_bytes'] / 2**20:.0f} MiB | {r['errors']} |")
    if res.get("rounds"):
        L.append("")
        L.append(f"{len(res['rounds'])} rounds, each on fresh stores, the backends' order "
                 "turned each round (this machine's speed drifts by ±15 % over minutes); "
                 f"the table above is round {res['median_round'] + 1}'s, the median ratio:")
        L.append("")
        L.append("| round | SQLite values per CPU-s | PostgreSQL values per CPU-s | ratio |")
        L.append("|---|---|---|---|")
        for k, r in enumerate(res["rounds"]):
            L.append(f"| {k + 1} | {r['sqlite']:,.0f} | {r['postgresql']:,.0f} | "
                     f"{r['ratio']:.2f} |")
        ratios = sorted(r["ratio"] for r in res["rounds"])
        L.append(f"| median | | | **{ratios[len(ratios) // 2]:.2f}** |")
    if "sqlite" in heads and "postgresql" in heads:
        q, g = heads["sqlite"], heads["postgresql"]

        def ratio(k):
            return g[k] / q[k] if q[k] else float("nan")
        L.append("")
        L.append("| PostgreSQL / SQLite | ratio |")
        L.append("|---|---|")
        L.append(f"| rows/s (= values/s) acknowledged | {ratio('values_per_s'):.2f} |")
        L.append(f"| values per CPU-second, head + server | "
                 f"{ratio('values_per_total_cpu_s'):.2f} |")
        if q["values"] and g["values"] and q["cpu_s"]:
            per = (g["cpu_s"] / g["values"]) / (q["cpu_s"] / q["values"])
            L.append(f"| head CPU per value | {per:.2f} |")
        else:
            L.append("| head CPU per value | - |")
        L.append(f"| request p50 latency | {ratio('lat_p50_ms'):.2f} |"
                 if q.get("lat_p50_ms") and g.get("lat_p50_ms") else "| request p50 | - |")
    L.append("")
    for b, r in heads.items():
        st = r.get("ingest_thread_states", {})
        L.append(f"- {b}: {r['requests_per_s']:.0f} batches/s, simulator "
                 f"{r['simulator_cores']:.2f} cores, other load {r['other_load_cores']:.2f} "
                 f"cores of {os.cpu_count()} (quiet {r.get('settle_s', 0):.0f} s before); "
                 "the head's busiest thread "
                 + ", ".join(f"{k} {v * 100:.0f} %" for k, v in st.items())
                 + f"; {r['clients']} agents in /clients, head exit {r['exit']}.")
    g = heads.get("postgresql")
    if g and g.get("pg_stat_database"):
        d, n = g["pg_stat_database"], max(1, g.get("node_ticks_sent", 0))
        L.append("")
        L.append(f"PostgreSQL's own count for the head's database (pg_stat_database, "
                 f"warm-up included: {n} batches sent): {d['xact_commit']} transactions "
                 f"committed ({d['xact_commit'] / n:.2f} per batch), {d['xact_rollback']} "
                 f"rolled back, {d['tup_inserted']} rows inserted ({d['tup_inserted'] / n:.0f} "
                 f"per batch; a batch holds {lay['fact_rows_per_node_tick']} fact rows and "
                 f"{lay['dim_rows_per_batch']} dimension rows), {d['tup_updated']} updated.")
        if g.get("pg_statements"):
            L.append("")
            L.append(f"pg_stat_statements (warm-up included): {g['pg_statement_calls']} "
                     f"statements, {g['pg_statement_calls'] / n:.0f} per batch (many sent "
                     "ahead in one round trip: libpq's pipeline).  The ten that took longest:")
            L.append("")
            L.append("| calls | rows | exec ms | plan ms | statement |")
            L.append("|---|---|---|---|---|")
            for c, rws, ex, pl, q in g["pg_statements"]:
                L.append(f"| {c} | {rws} | {ex} | {pl} | `{q.replace('|', '/')}` |")
    cs = res.get("catchups", {})
    if cs:
        L.append("")
        c0 = next(iter(cs.values()))
        n = c0.get("host_ticks")
        L.append(f"Catch-up on each backend (one outage store recorded, a copy streamed to "
                 f"each: {n} ticks, {c0.get('fact_rows')} fact rows, max seq "
                 f"{c0.get('max_seq')}):")
        L.append("")
        L.append("| backend | time to acked_seq = max seq | batches | head CPU s | server CPU s "
                 "| error |")
        L.append("|---|---|---|---|---|---|")
        for b, c in cs.items():
            t = f"{c['seconds']:.2f} s" if c.get("seconds") is not None else "-"
            L.append(f"| {b} | {t} | {c.get('head_batches', '-')} | "
                     f"{c.get('head_cpu_s', float('nan')):.2f} | "
                     + (f"{c.get('server_cpu_s', float('nan')):.2f}" if b == "postgresql"
                        else "(in the head)")
                     + f" | {c.get('error', '')} |")
    if res.get("pg_slow"):
        L.append("")
        L.append(f"Statements slower than {args.pg_log_min_duration_ms} ms "
                 "(log_min_duration_statement), first of them:")
        L.append("")
        L.append("```")
        L.extend(x[:300] for x in res["pg_slow"][:20])
        L.append("```")
    return L


def catchup_text(c):
    done = (f"acked_seq reached {c['max_seq']} **{c['seconds']:.2f} s** after the agent "
            f"started" if c.get("seconds") is not None else
            f"acked_seq did **not** reach {c['max_seq']} ({c.get('error')})")
    first = (f"{c['first_contact_s']:.2f} s" if c.get("first_contact_s") is not None
             else "never")
    return (f"**Catch-up.**  The outage: `{c['argv_record']}` ({c['host_ticks']} ticks over "
            f"{c['span_s']:.0f} s of recording, the same number of ticks as "
            f"{c['host_ticks'] / 60:.0f} min at 1 s; {c['fact_rows']} fact rows, max seq "
            f"{c['max_seq']}, store {c['store_bytes'] / 1024:.0f} KiB; rows: "
            + ", ".join(f"{t} {n}" for t, n in c["rows"].items()) + ").  Then "
            f"`{c.get('argv_head')}` and `{c.get('argv_agent')}` (same fake NVML); "
            f"/clients polled every 50 ms.  {done} (the agent first listed in /clients at {first}; "
            f"{c.get('head_batches')} batches, {c.get('head_rows')} rows; head CPU "
            f"{c.get('head_cpu_s', float('nan')):.2f} s, the agent's "
            f"{c.get('agent_cpu_s', float('nan')):.2f} s).  Progress (s, acked_seq): "
            + ", ".join(f"{t:.2f} {a}" for t, a, _, _ in c.get("progress", [])[:8]) + ".")


def vpn(lay):
    return lay["values_per_node_tick"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="meson build directory (default build)")
    ap.add_argument("--duration", type=float, default=30,
                    help="window of each phase, seconds (default 30)")
    ap.add_argument("--quick", action="store_true",
                    help="10 s windows and a 20 s outage (200 ticks)")
    ap.add_argument("--nodes", type=int, default=50, help="simulated nodes (agents)")
    ap.add_argument("--cpus", type=int, default=32, help="CPUs per node (cpu_samples rows)")
    ap.add_argument("--procs", type=int, default=200, help="processes per node")
    ap.add_argument("--connections", type=int, default=4, help="keep-alive connections")
    ap.add_argument("--warmup-ticks", type=int, default=2)
    ap.add_argument("--prom-samples-per-request", type=int, default=0,
                    help="split a node-tick into remote-write requests of at most N samples "
                         "(default 0: one request per node-tick, as the head gets one batch)")
    ap.add_argument("--outage-seconds", type=float, default=None,
                    help="the outage agent's --exit-after at 100 ms (default 60: 600 ticks; "
                         "20 with --quick)")
    ap.add_argument("--catchup-timeout", type=float, default=300)
    ap.add_argument("--budget-cores", type=float, default=1.5,
                    help="cores of this machine given to the head (default 1.5)")
    ap.add_argument("--head-env", action="append", default=[], metavar="VAR=VALUE",
                    help="set this in the environment of the measured head (phase 1 only), "
                         "e.g. GLIBC_TUNABLES=glibc.malloc.trim_threshold=268435456")
    ap.add_argument("--backends", default="sqlite",
                    help="the head's store in the head phase and the catch-up, one run each "
                         "with the same load, comma-separated: sqlite (a file), postgresql "
                         "(a cluster of its own on 127.0.0.1; default sqlite)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="with both backends: the head phase this many times, each on fresh "
                         "stores, the order turned each round; the tables are the median "
                         "round's (default 1)")
    ap.add_argument("--pg-setting", action="append", default=[], metavar="NAME=VALUE",
                    help="a setting of the head phase's PostgreSQL cluster (postgresql.conf), "
                         "e.g. autovacuum=off; repeatable (a diagnosis; the report names "
                         "each)")
    ap.add_argument("--pg-warm-wal-mb", type=int, default=0, metavar="MIB",
                    help="before the phases, write MIB MiB of WAL and checkpoint, as a "
                         "server that has run a while (its segments recycled, not made "
                         "and zero-filled during the window); default 0: a young cluster")
    ap.add_argument("--pg-log-min-duration-ms", type=int, default=None, metavar="MS",
                    help="PostgreSQL's log_min_duration_statement (statements slower than MS "
                         "listed in the output; default off)")
    ap.add_argument("--pg-stat-statements", action="store_true",
                    help="load pg_stat_statements in the cluster and list the head's "
                         "statements: calls and time (a diagnosis; it costs the server some CPU)")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    if args.quick:
        args.duration = 10
    if any("=" not in kv for kv in args.head_env):
        ap.error("--head-env takes VAR=VALUE")
    if any(not re.fullmatch(r"[a-z_.]+=[^'\n]*", kv) for kv in args.pg_setting):
        ap.error("--pg-setting takes NAME=VALUE")
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if not args.backends or any(b not in ("sqlite", "postgresql") for b in args.backends) \
            or len(set(args.backends)) != len(args.backends):
        ap.error("--backends takes sqlite, postgresql or both, comma-separated")
    if args.outage_seconds is None:
        args.outage_seconds = 20 if args.quick else 60
    args.nvml = os.path.join(args.build, "tests", "fakes", "libnvidia-ml.so.1")

    missing = [x for x in (os.path.join(args.build, "jobscope"), args.nvml)
               if not os.path.exists(x)]
    if missing:
        sys.exit(f"head_ingest: {', '.join(missing)} missing: ninja -C {args.build}")
    if not os.access(PROMETHEUS, os.X_OK):
        sys.exit(f"head_ingest: {PROMETHEUS} missing: apt-get install prometheus")

    # SIGTERM unwinds like an error: the finally blocks stop the servers
    # (PostgreSQL's cluster included) and remove the temporary directories
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("head_ingest: terminated"))
    with tempfile.TemporaryDirectory(prefix="jobscope-head-bench-") as tmp:
        try:
            res = run(args, tmp)
        except (RuntimeError, subprocess.SubprocessError, OSError, sqlite3.Error) as e:
            sys.exit(f"head_ingest: {e}")
    summarize(args, res)
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
