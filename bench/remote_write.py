#!/usr/bin/env python3
"""Remote write on the wire: jobscope's against Prometheus' own.

One `jobscope agent` (interval 1 s, N idle processes in 20 Slurm jobs so
there are job series) remote-writes to counting receiver A; a Prometheus
scrapes the same agent's /metrics every second and remote-writes what it
scraped to counting receiver B.  Both receivers are Python stubs on loopback
that count the compressed body bytes, decode snappy and protobuf to count the
samples and the series, and answer 204.  Over one window (60 s by default):

  bytes per sample   compressed request bytes / samples, each sender
  CPU per sample     jobscope: the CPU of its remote-write thread (named
                     js-rw, /proc/PID/task/TID/schedstat, ns) / samples; the whole
                     agent's CPU beside it.  Prometheus: its whole process
                     (scrape, parse, TSDB append and remote write, which
                     cannot be told apart) / samples: an upper bound for
                     Prometheus' remote write alone.

  python3 bench/remote_write.py [--jobscope build/jobscope] [--seconds 60]
        [--procs 200] [--json build/bench-out/remote_write.json]
"""
import argparse
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(HERE, "..", "tests", "integration"))
from agent_cost import free_port  # noqa: E402
from rw_proto import snappy_block_decode, decode_write_request  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


class Counter:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = self.bytes = self.raw_bytes = self.samples = 0
        self.series = set()
        self.counting = False
        handler = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                raw = snappy_block_decode(body)
                series = decode_write_request(raw)
                with handler.lock:
                    if handler.counting:
                        handler.requests += 1
                        handler.bytes += len(body)
                        handler.raw_bytes += len(raw)
                        for labels, samples in series:
                            handler.samples += len(samples)
                            handler.series.add(tuple(labels))
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d/api/v1/write" % self.srv.server_address[1]

    def snapshot(self):
        with self.lock:
            return dict(requests=self.requests, bytes=self.bytes, raw_bytes=self.raw_bytes,
                        samples=self.samples, series=len(self.series))


def cpu_s(pid, tid=None):
    """A thread's CPU from schedstat (ns); a process's from stat (its dead threads too)."""
    if tid:
        with open("/proc/%d/task/%d/schedstat" % (pid, tid)) as f:
            return int(f.read().split()[0]) / 1e9
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rw_threads(pid):
    out = []
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
            if f.read().strip() == "js-rw":
                out.append(int(tid))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobscope", default=os.path.join(HERE, "..", "build", "jobscope"))
    ap.add_argument("--prometheus", default="/usr/bin/prometheus")
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--settle", type=int, default=15)
    ap.add_argument("--procs", type=int, default=200)
    ap.add_argument("--json")
    a = ap.parse_args()
    wd = tempfile.mkdtemp(prefix="rw-bench-")
    A, B = Counter(), Counter()
    agent_port, prom_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    procs = []
    try:
        procs.append(subprocess.Popen(
            [a.jobscope, "agent", "--db", wd + "/agent.db", "--interval", "1s",
             "--listen", "127.0.0.1:%d" % agent_port, "--remote-write", A.url],
            stdout=subprocess.DEVNULL, stderr=open(wd + "/agent.log", "w"), env=env))
        agent = procs[-1]
        for i in range(a.procs):
            procs.append(subprocess.Popen(["sleep", "100000"], env=dict(
                env, SLURM_JOB_ID=str(1000 + i % 20))))
        with open(wd + "/prom.yml", "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: jobscope\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n"
                    "remote_write:\n  - url: %s\n" % (agent_port, B.url))
        procs.append(subprocess.Popen(
            [a.prometheus, "--config.file=" + wd + "/prom.yml",
             "--storage.tsdb.path=" + wd + "/tsdb", "--web.listen-address=127.0.0.1:%d" % prom_port,
             "--log.level=warn"], stdout=subprocess.DEVNULL,
            stderr=open(wd + "/prom.log", "w")))
        prom = procs[-1]
        time.sleep(a.settle)
        tids = rw_threads(agent.pid)
        assert tids, "no js-rw thread in the agent"
        c0 = (sum(cpu_s(agent.pid, t) for t in tids), cpu_s(agent.pid), cpu_s(prom.pid))
        for c in (A, B):
            c.counting = True
        t0 = time.monotonic()
        time.sleep(a.seconds)
        for c in (A, B):
            c.counting = False
        wall = time.monotonic() - t0
        c1 = (sum(cpu_s(agent.pid, t) for t in tids), cpu_s(agent.pid), cpu_s(prom.pid))
        sa, sb = A.snapshot(), B.snapshot()
        res = {
            "seconds": round(wall, 1), "procs": a.procs,
            "jobscope": dict(sa, rw_thread_cpu_s=c1[0] - c0[0], agent_cpu_s=c1[1] - c0[1]),
            "prometheus": dict(sb, process_cpu_s=c1[2] - c0[2]),
        }
        for k, cpu in (("jobscope", "rw_thread_cpu_s"), ("prometheus", "process_cpu_s")):
            r = res[k]
            r["bytes_per_sample"] = r["bytes"] / r["samples"] if r["samples"] else None
            r["raw_bytes_per_sample"] = r["raw_bytes"] / r["samples"] if r["samples"] else None
            r["cpu_us_per_sample"] = 1e6 * r[cpu] / r["samples"] if r["samples"] else None
            r["samples_per_request"] = r["samples"] / r["requests"] if r["requests"] else None
        j = res["jobscope"]
        j["agent_cpu_us_per_sample"] = 1e6 * j["agent_cpu_s"] / j["samples"]
        print(json.dumps(res, indent=1))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=1)
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        A.srv.shutdown()
        B.srv.shutdown()
        shutil.rmtree(wd, ignore_errors=True)


if __name__ == "__main__":
    main()
