#!/usr/bin/env python3
"""statsd_cost.py - what receiving StatsD costs: jobscope against collectd's statsd plugin.

One sender (this script, re-run as a child) sends the same DogStatsD traffic
to each receiver at a paced rate: datagrams of 20 lines (4 counters, 4
timers, 4 gauges, 4 histograms, 4 tagged counters), as a client that
buffers its lines would.  The receivers:

  jobscope  `jobscope run --interval 1s -- sender`: the sender is the run's
            command and sends to the STATSD_HOST:STATSD_PORT the run gave it;
            every line is parsed, aggregated per tick (sketches for the timers
            and histograms) and stored in the run's SQLite store.
  baseline  the same run with --no-statsd (the sender's datagrams go to a
            closed port): what sampling the sender alone costs.
  collectd  collectd 5.12 (Debian's collectd-core) with its statsd plugin on
            127.0.0.1 and the csv writer, Interval 1, timer percentiles 50/95/99.

Cost: the receiver's CPU time (jobscope: the run's own CPU, minus the
baseline's; collectd: its /proc/PID/stat delta while the sender ran and 1.5 s
after) divided by the lines sent, in ns per line.  Exactness: the sum of
every counter in jobscope's store against what was sent, and collectd's last
cumulative csv value of each counter (its derive-*.csv), when it wrote one.

Usage: bench/statsd_cost.py [--datagrams 100000] [--rate 20000] [--rounds 3] [--json F]
Run from the repository root with an optimized build in build/.
"""
import argparse
import glob
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

JOBSCOPE = "build/jobscope"
LINES_PER_DGRAM = 20
CLK_TCK = os.sysconf("SC_CLK_TCK")


def payload(i):
    """Datagram i: 20 lines; counters add 1, 2, 3, 4 and the tagged ones 5."""
    lines = []
    for k in range(4):
        lines.append("bench.c%d:%d|c" % (k, k + 1))
        lines.append("bench.t%d:%d|ms" % (k, (i * 7 + k) % 250))
        lines.append("bench.g%d:%d|g" % (k, i % 100))
        lines.append("bench.h%d:%d.5|h" % (k, (i * 13 + k) % 1000))
        lines.append("bench.tagged:5|c|#shard:%d,model:big" % k)
    return "\n".join(lines).encode()


def expected_counters(n):
    exp = {"bench.c%d" % k: float(n * (k + 1)) for k in range(4)}
    exp["bench.tagged"] = float(n * 5 * 4)  # four shards, one series each
    return exp


def send(host, port, n, rate):
    """The sender: n datagrams at rate per second, in bursts of 100."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    msgs = [payload(i) for i in range(256)]
    dst = (host, int(port))
    start = time.monotonic()
    for i in range(n):
        s.sendto(msgs[i % 256], dst)
        if i % 100 == 99:
            ahead = start + (i + 1) / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    time.sleep(0.3)  # the receiver's queue drains before the run ends


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def jobscope_round(tmp, n, rate, statsd):
    db = os.path.join(tmp, "js-%d.db" % time.monotonic_ns())
    args = [JOBSCOPE, "run", "--interval", "1s", "--db", db, "--report", "none"]
    if not statsd:
        args.append("--no-statsd")
    env = dict(os.environ)
    if not statsd:
        env["STATSD_HOST"], env["STATSD_PORT"] = "127.0.0.1", "9"  # discard: nobody listens
    t0 = time.monotonic()
    subprocess.run(args + ["--", sys.executable, __file__, "--send", str(n), str(rate)],
                   check=True, env=env)
    wall = time.monotonic() - t0
    con = sqlite3.connect(db)
    cpu = con.execute("SELECT sampler_cpu_ms FROM jobs WHERE scheduler = 'run'").fetchone()[0]
    sums = {}
    if statsd:
        for name, total in con.execute("SELECT name, sum(sum) FROM app_samples"
                                       " WHERE type = 'counter' GROUP BY name"):
            sums[name] = total
    con.close()
    return cpu / 1000.0, wall, sums


COLLECTD_CONF = """
Hostname "bench"
BaseDir "{dir}"
PIDFile "{dir}/collectd.pid"
TypesDB "/usr/share/collectd/types.db"
Interval 1
LoadPlugin statsd
LoadPlugin csv
<Plugin statsd>
  Host "127.0.0.1"
  Port "{port}"
  TimerPercentile 50
  TimerPercentile 95
  TimerPercentile 99
  TimerCount true
  TimerSum true
</Plugin>
<Plugin csv>
  DataDir "{dir}/csv"
  StoreRates false
</Plugin>
"""


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def collectd_round(tmp, n, rate):
    d = tempfile.mkdtemp(dir=tmp, prefix="collectd-")
    port = free_udp_port()
    conf = os.path.join(d, "collectd.conf")
    with open(conf, "w") as f:
        f.write(COLLECTD_CONF.format(dir=d, port=port))
    proc = subprocess.Popen(["/usr/sbin/collectd", "-f", "-C", conf],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.5)  # listening
        c0 = cpu_s(proc.pid)
        t0 = time.monotonic()
        subprocess.run([sys.executable, __file__, "--send", str(n), str(rate),
                        "127.0.0.1", str(port)], check=True)
        time.sleep(1.5)  # its next flush
        cpu = cpu_s(proc.pid) - c0
        wall = time.monotonic() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    sums = {}
    for path in glob.glob(os.path.join(d, "csv", "bench", "statsd", "derive-*")):
        name = os.path.basename(path)[len("derive-"):].rsplit("-", 3)[0]
        with open(path) as f:
            rows = [line.strip().split(",") for line in f if line[:1].isdigit()]
        if rows:
            sums[name] = float(rows[-1][1])
    return cpu, wall, sums


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--send":
        n, rate = int(sys.argv[2]), float(sys.argv[3])
        host = sys.argv[4] if len(sys.argv) > 4 else os.environ["STATSD_HOST"]
        port = sys.argv[5] if len(sys.argv) > 5 else os.environ["STATSD_PORT"]
        send(host, port, n, rate)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--datagrams", type=int, default=100000)
    ap.add_argument("--rate", type=float, default=20000, help="datagrams per second")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    lines = a.datagrams * LINES_PER_DGRAM
    exp = expected_counters(a.datagrams)
    res = {"datagrams": a.datagrams, "lines": lines, "rate_dgrams_per_s": a.rate,
           "jobscope_ns_per_line": [], "collectd_ns_per_line": [],
           "jobscope_exact": [], "collectd_counters": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            base, _, _ = jobscope_round(tmp, a.datagrams, a.rate, False)
            js, wall, sums = jobscope_round(tmp, a.datagrams, a.rate, True)
            cd, cwall, csums = collectd_round(tmp, a.datagrams, a.rate)
            res["jobscope_ns_per_line"].append((js - base) / lines * 1e9)
            res["collectd_ns_per_line"].append(cd / lines * 1e9)
            res["jobscope_exact"].append(all(sums.get(k) == v for k, v in exp.items()))
            res["collectd_counters"].append(csums)
            print("round %d: jobscope %.0f ns/line (run %.2fs CPU, baseline %.2fs, %.1fs wall),"
                  " counters exact: %s; collectd %.0f ns/line (%.2fs CPU)"
                  % (r + 1, res["jobscope_ns_per_line"][-1], js, base, wall,
                     res["jobscope_exact"][-1], res["collectd_ns_per_line"][-1], cd))
            if not res["jobscope_exact"][-1]:
                print("  jobscope counters: %s, expected %s" % (sums, exp))
            print("  collectd's last csv counters: %s (sent: %s)" % (csums, exp))
    j = statistics.median(res["jobscope_ns_per_line"])
    c = statistics.median(res["collectd_ns_per_line"])
    res["median_jobscope_ns_per_line"] = j
    res["median_collectd_ns_per_line"] = c
    print("median CPU per line: jobscope %.0f ns, collectd %.0f ns: collectd/jobscope = %.2f"
          % (j, c, c / j if j > 0 else float("nan")))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
