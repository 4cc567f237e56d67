"""`jobscope report --prometheus`: the job report built from series already in
a real Prometheus, fed by remote write from this test.

A real Prometheus (/usr/bin/prometheus, Debian package `prometheus`, with
--web.enable-remote-write-receiver) runs on a free loopback port with a
private TSDB.  The test writes series of a known shape, named as
dcgm-exporter, cAdvisor, node_exporter, cgroup_exporter and jobscope's own
agent name them, one sample a second over the last half hour (Prometheus'
head block takes samples within its last hour), and asks `jobscope report`
for their job's report: the period of a square wave, the slope of a linear
memory growth, and the exact peaks, means, energy and CPU efficiency the
series were built from.

Why the values are exact: the report asks with a step of 5 s from the first
sample's time, so every point of the grid is a sample written here (no
interpolation; Prometheus takes the sample at the instant itself), and the
values are sums of multiples of binary fractions.

The remote-write body is a hand-encoded protobuf WriteRequest in a snappy
block made of literal chunks only (python3-snappy may be absent): valid
snappy, which Prometheus 2.42 accepts.  Without the prometheus binary the
tests print "SKIP: ..." and pass, as the other integration tests do.
"""
import http.server
import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from harness import (JOBSCOPE, check, eq, free_port, http_get, http_open, plot_env, run_tests,
                     scaled, stop, wait_for)
from prom_harness import PROMETHEUS, PrometheusProcess
from rw_proto import snappy_block, timeseries
STEP_S = 5
DURATION_S = 595          # 119 steps: 14.875 periods of 40 s, 120 grid points
PERIOD_S = 40
MiB = 1048576
GiB = 1024 * MiB

class Prometheus(PrometheusProcess):
    def __init__(self, wd):
        super().__init__(wd, "global:\n  scrape_interval: 1m\n  evaluation_interval: 1m\n",
                         extra=["--web.enable-remote-write-receiver"], ready_timeout=30)

    def write(self, series):
        """series: [(labels, [(ts_ms, value)])], one request."""
        body = b"".join(timeseries(l, s) for l, s in series)
        req = urllib.request.Request(
            self.url + "/api/v1/write", data=snappy_block(body), method="POST",
            headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
                     "X-Prometheus-Remote-Write-Version": "0.1.0"})
        try:
            with http_open(req, timeout=scaled(30)) as r:
                eq(r.status // 100, 2, "remote write status")
        except urllib.error.HTTPError as e:
            raise AssertionError("remote write answered %d: %s" % (e.code, e.read()[:300]))


def prometheus_or_skip(wd):
    if not os.path.exists(PROMETHEUS):
        print("SKIP: %s is not installed (Debian package 'prometheus')" % PROMETHEUS)
        return None
    return Prometheus(wd)


def start_ms():
    """The job's first sample: 30 minutes ago, on a whole second."""
    return (int(time.time()) - 1800) * 1000


def ticks(t0):
    return [(t0 + 1000 * s, s) for s in range(DURATION_S + 1)]


def series(labels, t0, fn):
    return (labels, [(ts, fn(s)) for ts, s in ticks(t0)])


def square(s):
    return 90 if s % PERIOD_S < PERIOD_S // 2 else 10


def node_exporter(t0, instance, ncpus=4):
    """4 CPUs each 0.5 s/s user, 0.25 system, 0.25 idle; 64 GiB, 40 GiB available."""
    out = []
    rates = {"user": 0.5, "system": 0.25, "idle": 0.25, "iowait": 0.0}
    for cpu in range(ncpus):
        for mode, r in rates.items():
            out.append(series({"__name__": "node_cpu_seconds_total", "cpu": str(cpu),
                               "mode": mode, "instance": instance, "job": "node"},
                              t0, lambda s, r=r: 1000 + r * s))
    out.append(series({"__name__": "node_memory_MemTotal_bytes", "instance": instance},
                      t0, lambda s: 64 * GiB))
    out.append(series({"__name__": "node_memory_MemAvailable_bytes", "instance": instance},
                      t0, lambda s: 40 * GiB))
    out.append(series({"__name__": "node_load1", "instance": instance}, t0, lambda s: 3.5))
    return out


def dcgm(t0, extra, uuid="GPU-0a1b2c3d", gpu="0"):
    base = {"gpu": gpu, "UUID": uuid, "device": "nvidia" + gpu, "modelName": "NVIDIA A100",
            "Hostname": "node7", "instance": "10.0.0.7:9400"}
    base.update(extra)

    def one(name, fn):
        return series(dict(base, __name__=name), t0, fn)
    return [one("DCGM_FI_DEV_GPU_UTIL", square),
            one("DCGM_FI_DEV_FB_USED", lambda s: 20000),
            one("DCGM_FI_DEV_FB_FREE", lambda s: 20960),
            one("DCGM_FI_DEV_POWER_USAGE", lambda s: 250.5),
            one("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", lambda s: 5000000 + 250500 * s),
            one("DCGM_FI_DEV_GPU_TEMP", lambda s: 61)]


def report(prom, *args, fmt="json", since="1h", step="%ds" % STEP_S):
    p = subprocess.run([JOBSCOPE, "report", "--prometheus", prom.url, "--since", since]
                       + (["--step", step] if step else []) + ["--format", fmt] + list(args),
                       capture_output=True, text=True, timeout=scaled(120),
                       env=plot_env() if "--plot" in args else None)
    eq(p.returncode, 0, "report exit (stderr: %s)" % p.stderr)
    return (json.loads(p.stdout) if fmt == "json" else p.stdout), p.stderr


def close(actual, expected, rel, what):
    check(actual is not None, "%s is null, expected %r" % (what, expected))
    check(abs(actual - expected) <= rel * abs(expected),
          "%s = %r, expected %r (within %g)" % (what, actual, expected, rel))


def check_shape(r, what):
    """The square wave's period and the memory's linear growth."""
    a = r["analysis"]
    # 120 points at 5 s: the autocorrelation peak is at a whole number of
    # steps, so the period found is 40 s exactly, within one step either way
    close(a["period_s"], PERIOD_S, STEP_S / PERIOD_S, what + ": period")
    eq(a["cyclic"], True, what + ": cyclic")


def test_pod_dcgm_cadvisor_node_exporter(wd):
    prom = prometheus_or_skip(wd)
    if not prom:
        return
    try:
        t0 = start_ms()
        pod = {"namespace": "ml", "pod": "trainer-0", "instance": "10.0.0.7:10250"}
        s = []
        # two containers: 1.5 and 0.5 cores; the pause container and the
        # pod's own cgroup (container "") are not counted again
        for name, rate, quota, rss in (("main", 1.5, 200000, lambda t: GiB + MiB * t),
                                       ("sidecar", 0.5, 100000, lambda t: 100 * MiB)):
            c = dict(pod, container=name)
            s.append(series(dict(c, __name__="container_cpu_usage_seconds_total"),
                            t0, lambda t, r=rate: 100 + r * t))
            s.append(series(dict(c, __name__="container_memory_rss"), t0, rss))
            s.append(series(dict(c, __name__="container_spec_cpu_quota"), t0,
                            lambda t, q=quota: q))
            s.append(series(dict(c, __name__="container_spec_cpu_period"), t0,
                            lambda t: 100000))
            s.append(series(dict(c, __name__="container_spec_memory_limit_bytes"), t0,
                            lambda t, n=name: 8 * GiB if n == "main" else 512 * MiB))
        for name in ("POD", ""):
            s.append(series(dict(pod, container=name,
                                 __name__="container_cpu_usage_seconds_total"),
                            t0, lambda t: 7 * t))
        # another pod on the node, another GPU
        s.append(series({"__name__": "container_cpu_usage_seconds_total", "namespace": "ml",
                         "pod": "other", "container": "main", "instance": "10.0.0.7:10250"},
                        t0, lambda t: 3 * t))
        # a pod whose container has no CPU quota (cAdvisor writes no series) and
        # no memory limit (0): nothing reserved to judge against
        free = {"namespace": "ml", "pod": "free", "container": "c", "instance": "10.0.0.7:10250"}
        s.append(series(dict(free, __name__="container_cpu_usage_seconds_total"), t0,
                        lambda t: 0.25 * t))
        s.append(series(dict(free, __name__="container_memory_rss"), t0, lambda t: 64 * MiB))
        s.append(series(dict(free, __name__="container_spec_memory_limit_bytes"), t0,
                        lambda t: 0))
        s += dcgm(t0, {"pod": "trainer-0", "namespace": "ml", "container": "main"})
        s += dcgm(t0, {"pod": "other", "namespace": "ml"}, uuid="GPU-ffff", gpu="1")
        s += node_exporter(t0, "10.0.0.7:9100")
        prom.write(s)

        r, err = report(prom, "--pod", "ml/trainer-0")
        check("job cAdvisor; GPUs dcgm-exporter (1); node node_exporter" in err,
              "sources named: %s" % err)
        eq(r["run"]["start_ms"], t0, "start: the first sample itself")
        eq(r["sampler"]["cpu_seconds"], None, "jobscope sampled nothing: null, not 0")
        eq(r["sampler"]["samples"], 120, "points read")
        eq(r["run"]["duration_s"], DURATION_S - DURATION_S % STEP_S, "duration")
        c = r["cpu"]
        close(c["cores_avg"], 2.0, 1e-9, "cores_avg (1.5 + 0.5)")
        # the JSON writes percentages with one decimal
        eq(c["efficiency_pct"], round(100 * 2.0 / 3.0, 1), "CPU efficiency (quota 2 + 1)")
        eq(c["host_cores"], 4, "host cores (node_exporter CPUs)")
        last = DURATION_S - DURATION_S % STEP_S
        eq(r["memory"]["rss_peak_bytes"], GiB + MiB * last + 100 * MiB, "RSS peak")
        eq(r["memory"]["host_total_bytes"], 64 * GiB, "node memory")
        eq(len(r["gpus"]), 1, "the pod's GPU only")
        g = r["gpus"][0]
        eq(g["uuid"], "GPU-0a1b2c3d", "GPU uuid")
        eq(g["util_avg_pct"], 50, "GPU utilization mean (90/10 square wave)")
        eq(g["mem_used_peak_bytes"], 20000 * MiB, "FB_USED MiB to bytes")
        eq(g["mem_total_bytes"], 40960 * MiB, "FB_USED + FB_FREE")
        close(g["device_energy_j"], 250.5 * last, 1e-9, "energy (mJ counter)")
        eq(g["temp_max_c"], 61, "temperature")
        res = r["reservation"]
        eq(res["cpus"], 3.0, "quota/period: 2 + 1")
        eq(res["memory_bytes"] if "memory_bytes" in res else res.get("mem_bytes"),
           8 * GiB + 512 * MiB, "memory limits summed")
        print("period %s s (confidence %s)" % (r["analysis"]["period_s"],
                                               r["analysis"].get("period_confidence")))
        check_shape(r, "pod")
        trend = r["analysis"]["trend"]["memory"]
        close(trend["slope_bytes_per_s"], MiB, 1e-6, "memory slope (1 MiB/s)")
        eq(trend["growing"], True, "memory growing")
        eq(trend["limit_bytes"], 8 * GiB + 512 * MiB, "the pod's memory limits")

        # without --step: the samples' own interval (1 s here); a month's window
        # is searched coarsely, then the first sample found to the second
        r, err = report(prom, "--pod", "ml/trainer-0", since="30d", step=None)
        check("596 points, 1 s apart (the scrape interval, measured" in err,
              "default step: %s" % err)
        eq(r["run"]["start_ms"], t0, "start found in a 30-day window")
        eq(r["run"]["duration_s"], DURATION_S, "595 steps of 1 s")
        close(r["cpu"]["cores_avg"], 2.0, 1e-9, "cores_avg at 1 s")

        r, _ = report(prom, "--pod", "ml/free")
        close(r["cpu"]["cores_avg"], 0.25, 1e-9, "cores of the pod without limits")
        eq(r["cpu"]["efficiency_pct"], None, "no quota: no efficiency (null, not 0)")
        eq(r["reservation"], None, "nothing reserved")
        eq(r["gpus"], [], "no GPU")
        eq(r["host"]["cpu_util_avg_pct"], 75.0, "its node's CPUs (node_exporter)")

        # the same report in the other formats, and a plot
        text, _ = report(prom, "--pod", "ml/trainer-0", fmt="text")
        print(text)
        check("ml/trainer-0" in text, "text names the pod:\n" + text)
        check("120 points every 5.00s, read from Prometheus" in text, "sampler line:\n" + text)
        csv, _ = report(prom, "--pod", "ml/trainer-0", fmt="csv")
        eq(len(csv.strip().splitlines()), 121, "CSV: a header and one row per 5 s")
        html, _ = report(prom, "--pod", "ml/trainer-0", fmt="html")
        check(html.lstrip().startswith("<!DOCTYPE html>"), "HTML page")
        png = wd.join("pod.png")
        report(prom, "--pod", "ml/trainer-0", "--plot", png, fmt="text")
        with open(png, "rb") as f:
            eq(f.read(8), b"\x89PNG\r\n\x1a\n", "PNG plot")

        # the whole node: node_exporter's busy CPUs, its GPUs by Hostname
        r, err = report(prom, "--node", "10.0.0.7")
        check("node_exporter" in err, "node source: %s" % err)
        close(r["cpu"]["cores_avg"], 3.0, 1e-9, "node busy cores (4 x 0.75)")
        eq(r["cpu"]["efficiency_pct"], 75.0, "node CPU efficiency")
        eq(r["memory"]["rss_peak_bytes"], 24 * GiB, "node memory in use")
    finally:
        prom.stop()


def test_slurm_job_cgroup_exporter(wd):
    prom = prometheus_or_skip(wd)
    if not prom:
        return
    try:
        t0 = start_ms()
        job = {"jobid": "777", "step": "", "task": "", "instance": "node3:9306"}
        s = [series(dict(job, __name__="cgroup_cpu_total_seconds"), t0,
                    lambda t: 40 + 1.25 * t),
             series(dict(job, __name__="cgroup_cpus"), t0, lambda t: 2),
             series(dict(job, __name__="cgroup_memory_rss_bytes"), t0,
                    lambda t: 512 * MiB + 2 * MiB * t),
             series(dict(job, __name__="cgroup_memory_total_bytes"), t0, lambda t: 4 * GiB),
             # a step's own series: not the job's total
             series(dict(job, step="batch", __name__="cgroup_cpu_total_seconds"), t0,
                    lambda t: 9 * t),
             series({"__name__": "nvidia_gpu_duty_cycle", "jobid": "777", "uuid": "GPU-77",
                     "minor_number": "2", "name": "Tesla V100"}, t0, square)]
        s += node_exporter(t0, "node3:9100")
        # a job that only dcgm-exporter's HPC mapping knows (--hpc-job-mapping-dir)
        s += dcgm(t0, {"hpc_job": "888", "Hostname": "node4"}, uuid="GPU-88", gpu="3")
        prom.write(s)

        r, err = report(prom, "--job", "888")
        check("job none; GPUs dcgm-exporter (1); node none" in err, "sources: %s" % err)
        eq(r["cpu"]["cores_avg"], None, "no CPU series: null")
        eq(r["memory"]["rss_peak_bytes"], None, "no memory series: null")
        eq([g["uuid"] for g in r["gpus"]], ["GPU-88"], "the job's GPU")
        eq(r["gpus"][0]["util_avg_pct"], 50, "its utilization")
        eq(r["gpus"][0]["index"], 3, "its index (the gpu label)")
        check_shape(r, "GPU only")
        text, _ = report(prom, "--job", "888", fmt="text")
        print(text)
        check("GPU 3 NVIDIA A100: util 50.0% on average" in text, "GPU-only text:\n" + text)
        check("CPU       unknown" in text and "0.00 cores" not in text and "RSS peak 0 B" not in text
              and "0.0 cores of 0" not in text, "missing CPU and memory are not 0:\n" + text)

        r, err = report(prom, "--job", "777")
        check("job cgroup_exporter; GPUs nvidia_gpu_prometheus_exporter (1); node "
              "node_exporter" in err, "sources: %s" % err)
        close(r["cpu"]["cores_avg"], 1.25, 1e-9, "cores_avg")
        eq(r["cpu"]["efficiency_pct"], 62.5, "CPU efficiency: 1.25 of cgroup_cpus 2")
        last = DURATION_S - DURATION_S % STEP_S
        eq(r["memory"]["rss_peak_bytes"], 512 * MiB + 2 * MiB * last, "RSS peak")
        eq(r["gpus"][0]["util_avg_pct"], 50, "duty cycle mean")
        close(r["analysis"]["trend"]["memory"]["slope_bytes_per_s"], 2 * MiB, 1e-6, "memory slope")
        check_shape(r, "slurm")
    finally:
        prom.stop()


def test_jobscope_series(wd):
    prom = prometheus_or_skip(wd)
    if not prom:
        return
    try:
        t0 = start_ms()
        inst = "127.0.0.1:9101"
        job = {"job_id": "4242", "scheduler": "slurm", "user": "alice", "instance": inst}
        gpu = {"gpu": "0", "uuid": "GPU-js0", "instance": inst}
        s = [series(dict(job, __name__="jobscope_job_cpu_seconds_total"), t0,
                    lambda t: 3 * t),
             series(dict(job, __name__="jobscope_job_memory_rss_bytes"), t0,
                    lambda t: GiB + 4 * MiB * t),
             series(dict(job, __name__="jobscope_job_reserved_cpus"), t0, lambda t: 4),
             series(dict(job, __name__="jobscope_job_reserved_memory_bytes"), t0,
                    lambda t: 16 * GiB),
             series(dict(job, __name__="jobscope_job_processes"), t0, lambda t: 3),
             series(dict(job, gpu="0", uuid="GPU-js0",
                         __name__="jobscope_job_gpu_memory_bytes"), t0, lambda t: GiB),
             series(dict(gpu, __name__="jobscope_gpu_utilization_percent"), t0, square),
             series(dict(gpu, __name__="jobscope_gpu_memory_used_bytes"), t0,
                    lambda t: 3 * GiB),
             series(dict(gpu, __name__="jobscope_gpu_power_watts"), t0, lambda t: 100.25),
             series(dict(gpu, __name__="jobscope_gpu_energy_joules_total"), t0,
                    lambda t: 100.25 * t),
             series({"__name__": "jobscope_gpu_utilization_percent", "gpu": "1",
                     "uuid": "GPU-js1", "instance": inst}, t0, lambda t: 0)]
        for mode, r in (("user", 6.0), ("system", 1.0), ("idle", 1.0), ("iowait", 0.0)):
            s.append(series({"__name__": "jobscope_node_cpu_seconds_total", "mode": mode,
                             "instance": inst}, t0, lambda t, r=r: r * t))
        s.append(series({"__name__": "jobscope_node_cpus", "instance": inst}, t0, lambda t: 8))
        s.append(series({"__name__": "jobscope_node_memory_total_bytes", "instance": inst},
                        t0, lambda t: 32 * GiB))
        s.append(series({"__name__": "jobscope_node_memory_available_bytes",
                         "instance": inst}, t0, lambda t: 20 * GiB))
        prom.write(s)
        r, err = report(prom, "--job", "slurm:4242")
        check("job jobscope; GPUs jobscope (1); node jobscope" in err, "sources: %s" % err)
        eq(r["cpu"]["efficiency_pct"], 75.0, "CPU efficiency: 3 of 4 reserved")
        eq(r["cpu"]["host_cores"], 8, "host cores")
        eq(len(r["gpus"]), 1, "the job's GPU only")
        g = r["gpus"][0]
        eq(g["uuid"], "GPU-js0", "the job's GPU")
        last = DURATION_S - DURATION_S % STEP_S
        close(g["device_energy_j"], 100.25 * last, 1e-9, "energy (joules counter)")
        close(r["host"]["cpu_util_avg_pct"], 87.5, 1e-9, "node busy: 7 of 8 s/s")
        check_shape(r, "jobscope")
        close(r["analysis"]["trend"]["memory"]["slope_bytes_per_s"], 4 * MiB, 1e-6, "memory slope")

        # the agent's node as a whole: all its CPUs, all its GPUs
        r, err = report(prom, "--node", "127.0.0.1")
        check("job jobscope (the whole node); GPUs jobscope (2); node jobscope" in err,
              "node sources: %s" % err)
        close(r["cpu"]["cores_avg"], 7.0, 1e-9, "busy: user 6 + system 1 s/s")
        eq(r["cpu"]["efficiency_pct"], 87.5, "of its 8 CPUs")
        eq(r["memory"]["rss_peak_bytes"], 12 * GiB, "MemTotal - MemAvailable")
        eq(sorted(g["uuid"] for g in r["gpus"]), ["GPU-js0", "GPU-js1"], "every GPU")
    finally:
        prom.stop()


class FakeProm(http.server.BaseHTTPRequestHandler):
    answer = (200, b"{}")

    def do_GET(self):
        code, body = self.answer
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_errors(wd):
    def ask(url, *args):
        return subprocess.run([JOBSCOPE, "report", "--prometheus", url, "--job", "1"]
                              + list(args), capture_output=True, text=True, timeout=scaled(60))

    # nobody listening: a port bound here and not listened on, so no other test's
    # server can take it meanwhile (a connection to it is refused)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as closed:
        closed.bind(("127.0.0.1", 0))
        p = ask("http://127.0.0.1:%d" % closed.getsockname()[1])
    eq(p.returncode, 1, "exit when Prometheus is down")
    check("cannot reach Prometheus" in p.stderr, "down: %s" % p.stderr)

    srv = http.server.HTTPServer(("127.0.0.1", 0), FakeProm)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    url = "http://127.0.0.1:%d" % srv.server_address[1]
    try:
        cases = [
            ((400, b'{"status":"error","errorType":"bad_data","error":"parse error\\n x"}'),
             "refused", "bad_data: parse error? x"),
            ((503, b"<html>Service Unavailable</html>"), "answered 503", "is it Prometheus?"),
            ((200, b'{"status":"success","data":{"resultType":"matrix","result":'
                   b'[{"metric":{},"values":[[1,"1"],[0.5,"2"]]}]}}'),
             "cannot read", "out of time order"),
            ((200, b'{"status":"success","data":{"resultType":"matrix","result":[]}}'),
             "has no series of job '1'", "cgroup_exporter"),
        ]
        for answer, want, want2 in cases:
            FakeProm.answer = answer
            p = ask(url)
            eq(p.returncode, 1, "exit for %r (stderr %s)" % (answer, p.stderr))
            check(want in p.stderr and want2 in p.stderr,
                  "message for %r: %s" % (answer[1][:40], p.stderr))
            check("Traceback" not in p.stderr and "Sanitizer" not in p.stderr, p.stderr)
    finally:
        srv.shutdown()
        srv.server_close()
    # usage errors: exit 2
    for args in (["--pod", "nonamespace"], ["--step", "0s"], ["--pod", "a/b", "--node", "n"]):
        p = subprocess.run([JOBSCOPE, "report", "--prometheus", url] + args,
                           capture_output=True, text=True, timeout=scaled(60))
        eq(p.returncode, 2, "usage exit for %s (%s)" % (args, p.stderr))


NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
# node_exporter's devices that are no disk of their own: partitions, loop, RAM,
# optical, network and device-mapper/RAID devices (over disks counted already)
NOT_A_DISK = re.compile(r"^((loop|ram|zram|fd|sr|nbd|dm-|md|drbd|zd)\d+|.*\dp\d+|"
                        r"(sd|vd|hd|xvd)[a-z]+\d+)$")


def prom_api(prom, path, **params):
    status, _, body = http_get(prom.url + path + "?" + urllib.parse.urlencode(params),
                               timeout=scaled(10))
    eq(status, 200, "Prometheus %s %s" % (path, params))
    return json.loads(body)["data"]


def instant(prom, query, t_ms):
    """The value of each series of query at t_ms (the last sample at or before)."""
    return {json.dumps(r["metric"], sort_keys=True): float(r["value"][1])
            for r in prom_api(prom, "/api/v1/query", query=query,
                              time="%.3f" % (t_ms / 1000))["result"]}


def test_node_exporter_scraped(wd):
    """A real node_exporter scraped every second by a real Prometheus: with
    no --step the report's step is the scrape interval, its I/O is the real
    disks' bytes and its system CPU the kernel's modes, equal to what this
    test reads from Prometheus' API over the same span; a window too short
    for the analysis says so in --step's and --since's words."""
    for exe in (PROMETHEUS, NODE_EXPORTER):
        if not os.path.exists(exe):
            print("SKIP: %s is not installed" % exe)
            return
    port = free_port()
    nelog = open(wd.join("node_exporter.log"), "w")
    ne = subprocess.Popen([NODE_EXPORTER, "--web.listen-address=127.0.0.1:%d" % port,
                           "--collector.disable-defaults", "--collector.cpu",
                           "--collector.meminfo", "--collector.diskstats",
                           "--collector.loadavg"],
                          stdin=subprocess.DEVNULL, stdout=nelog, stderr=nelog)
    prom = None
    try:
        def ne_up():
            try:
                return http_get("http://127.0.0.1:%d/metrics" % port, timeout=1)[0] == 200
            except OSError:
                return False
        wait_for(ne_up, timeout=20, what="node_exporter /metrics")
        prom = PrometheusProcess(
            wd, "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n  - job_name: node\n    static_configs:\n"
            "      - targets: ['127.0.0.1:%d']\n" % port, ready_timeout=30)
        inst = "127.0.0.1:%d" % port
        # 30 s of scrapes, with 1 MiB written a second meanwhile (fsynced: it reaches a disk)
        data, wrote = os.urandom(1 << 20), [0.0]

        def scraped():
            if time.monotonic() - wrote[0] >= 1:
                wrote[0] = time.monotonic()
                with open(wd.join("io.bin"), "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
            r = prom_api(prom, "/api/v1/query", query='count_over_time(node_cpu_seconds_total'
                         '{instance="%s",cpu="0",mode="idle"}[5m])' % inst)["result"]
            return r and float(r[0]["value"][1]) >= 30
        wait_for(scraped, timeout=120, what="30 s of 1 s scrapes")

        r, err = report(prom, "--node", "127.0.0.1", since="2m", step=None)
        s = r["sampler"]
        eq(s["interval_ms"], 1000, "step: the scrape interval (stderr %s)" % err)
        eq(s["source"], "prometheus", "sampler.source")
        # the median gap between scrapes, rounded to the step: 1 s, or (loaded) 1,0xx ms
        check(re.search(r"scrape interval( \(1\d\d\d ms\))?, measured from the samples' "
                        r"timestamps", s["step_reason"]), "step reason: %r" % s["step_reason"])
        check("1 s apart (the scrape interval" in err, "stderr says the step: %s" % err)
        start, end = r["run"]["start_ms"], r["run"]["end_ms"]
        check(end - start >= 29000, "span %d ms" % (end - start))
        eq(s["samples"], (end - start) // 1000 + 1, "a point a second")

        # the I/O: this test's own sum over the real disks, from the API
        def disks(name):
            a = instant(prom, '%s{instance="%s"}' % (name, inst), start)
            b = instant(prom, '%s{instance="%s"}' % (name, inst), end)
            real = sorted(k for k in b if not NOT_A_DISK.match(json.loads(k)["device"]))
            check(real, "no real disk in %s: %s" % (name, sorted(b)))
            return int(round(sum(b[k] - a[k] for k in real))), \
                [json.loads(k)["device"] for k in real]
        rd, devs = disks("node_disk_read_bytes_total")
        wr, _ = disks("node_disk_written_bytes_total")
        eq(r["io"]["read_bytes"], rd, "bytes read by the node's disks %s" % devs)
        eq(r["io"]["write_bytes"], wr, "bytes written by the node's disks %s" % devs)
        for d in devs:
            check(d in s["io_source"], "device %s named: %r" % (d, s["io_source"]))

        # CPU: user (user, nice) and system (system, irq, softirq, steal), all CPUs
        def cpu(modes):
            q = 'sum(node_cpu_seconds_total{instance="%s",mode=~"%s"})' % (inst, modes)
            return sum(instant(prom, q, end).values()) - sum(instant(prom, q, start).values())
        sys_s, user_s = cpu("system|irq|softirq|steal"), cpu("user|nice")
        check(abs(r["cpu"]["system_seconds"] - sys_s) <= 0.002,
              "system CPU %r, Prometheus says %r" % (r["cpu"]["system_seconds"], sys_s))
        check(abs(r["cpu"]["user_seconds"] - user_s) <= 0.002,
              "user CPU %r, Prometheus says %r" % (r["cpu"]["user_seconds"], user_s))
        check(sys_s > 0, "the node's kernel used no CPU?")

        # the text and the HTML speak Prometheus' terms, not run's nor /proc's
        for fmt in ("text", "html"):
            out, _ = report(prom, "--node", "127.0.0.1", since="2m", step=None, fmt=fmt)
            for bad in ("--interval", "/proc/PID/io"):
                check(bad not in out, "%s report says %r:\n%s" % (fmt, bad, out[:3000]))
            check("node_disk_written_bytes_total" in out, "%s names the series" % fmt)
        out, _ = report(prom, "--node", "127.0.0.1", since="2m", step=None, fmt="text")
        check(re.search(r"step 1\.00s: the scrape interval( \(1\d\d\d ms\))?, measured", out),
              "text says the step:\n" + out)

        # too short for the analysis at 15 s: advice in --step's and --since's words
        out, _ = report(prom, "--node", "127.0.0.1", since="2m", step="15s", fmt="text")
        check("too short" in out and "--step" in out and "--since" in out
              and "--interval" not in out, "too-short advice:\n" + out)
    finally:
        if prom:
            prom.stop()
        stop(ne)
        nelog.close()


if __name__ == "__main__":
    run_tests(globals())
