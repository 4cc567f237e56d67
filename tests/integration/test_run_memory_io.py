"""Memory and I/O accounting on real workloads."""
import math
import os
import re

from harness import run, helper, run_tests, near, check, eq

MiB = 1 << 20


def test_rss_peak_300mib(wd):
    r = run(wd, [helper("memtouch"), "--mib", "300", "--hold", "0.5"])
    eq(r.rc, 0, "exit code")
    truth = r.helper_json()["maxrss_bytes"]
    mem = r.report["memory"]
    near(mem["rss_peak_bytes"], truth, 0.05, "rss_peak_bytes vs getrusage")
    check(mem["rss_peak_at"] is not None, "rss_peak_at")
    check(mem["host_total_bytes"] > 0, "host_total_bytes")
    p = r.report["processes"][0]
    near(p["rss_peak_bytes"], truth, 0.05, "process rss_peak_bytes")


def test_rss_peak_of_a_short_spike(wd):
    # the peak lasts far less than one interval: the high-water mark catches it
    r = run(wd, [helper("memtouch"), "--mib", "200", "--hold", "0"], opts=["--interval", "2s"])
    truth = r.helper_json()["maxrss_bytes"]
    near(r.report["memory"]["rss_peak_bytes"], truth, 0.05, "rss_peak_bytes")


def test_rss_peak_of_a_small_command(wd):
    # Its getrusage maxrss also holds its image from fork to exec, a copy of
    # jobscope's: the peak reported is its own (its VmHWM at the end, read by
    # itself), not jobscope's.  Both paths: the kernel's figure at its exit
    # (root) and its last VmHWM with a bound on ru_maxrss (not root), which
    # misses what its last lines (fopen, printf) touch after the last sample:
    # 64 KiB seen; jobscope's image, the error this is about, is MiBs.
    r = run(wd, [helper("memtouch"), "--mib", "0", "--hold", "0.6"],
            opts=["--interval", "200ms"])
    eq(r.rc, 0, "exit code")
    own = r.helper_json()
    check(own["hwm_bytes"] > 0, "the helper read its VmHWM")
    p = r.report["processes"][0]
    check(abs(p["rss_peak_bytes"] - own["hwm_bytes"]) <= 256 * 1024,
          "rss_peak_bytes %d, its own VmHWM %d (getrusage %d)"
          % (p["rss_peak_bytes"], own["hwm_bytes"], own["maxrss_bytes"]))
    check(abs(r.report["memory"]["rss_peak_bytes"] - own["hwm_bytes"]) <= 256 * 1024,
          "the job's peak %d, its own VmHWM %d" % (r.report["memory"]["rss_peak_bytes"],
                                                   own["hwm_bytes"]))


def test_reservation_of_the_slurm_job_it_runs_in(wd):
    # `jobscope run` inside a Slurm job: the reservation is the job's (its SLURM_*
    # variables, as the agent reads them), and the memory advice is in the job's
    # own scale (MiB), drawn from the peak measured, never rounded up to the request
    env = dict(os.environ, SLURM_JOB_ID="4711", SLURM_JOB_NAME="train", SLURM_CPUS_ON_NODE="1",
               SLURM_MEM_PER_NODE="1024")
    r = run(wd, [helper("memtouch"), "--mib", "200", "--hold", "11"], env=env)
    eq(r.rc, 0, "exit code")
    truth = r.helper_json()["maxrss_bytes"]
    res = r.report["reservation"]
    eq((res["source"], res["cpus"], res["memory_bytes"], res["gpus"]),
       ("slurm_env", 1.0, 1 << 30, 0), "the reservation")
    eq(r.report["run"]["name"], "train", "the name (SLURM_JOB_NAME)")
    peak = r.report["memory"]["rss_peak_bytes"]
    near(peak, truth, 0.05, "rss_peak_bytes vs getrusage")
    v = [v for v in r.report["verdicts"] if v["kind"] == "mem_over_requested"]
    eq(len(v), 1, "mem_over_requested verdicts")
    want = int(re.search(r"--mem=(\d+)M ", v[0]["advice"]).group(1))
    eq(want, math.ceil(peak * 1.25 / MiB), "--mem advised for a %d MiB peak" % (peak // MiB))
    # one core reserved and hardly used: not "make it parallel"
    for v in r.report["verdicts"]:
        check("parallel" not in (v["advice"] or ""), "advice %r" % v["advice"])


def test_write_200mib_fsync(wd):
    r = run(wd, [helper("writer"), "--mib", "200", "--fsync", "--path", wd.join("out.bin")])
    eq(r.rc, 0, "exit code")
    io = r.report["io"]
    check(io["write_bytes"] >= 200 * MiB, "write_bytes %r >= 200 MiB" % io["write_bytes"])
    check(io["write_peak_bps"] > 0, "write_peak_bps")
    check(io["read_bytes"] is not None, "read_bytes known")


def test_network_is_host_wide(wd):
    r = run(wd, ["true"])
    net = r.report["network"]
    eq(net["scope"], "host", "network scope")
    check(net["rx_bytes"] is not None and net["rx_bytes"] >= 0, "rx_bytes")


if __name__ == "__main__":
    run_tests(globals())
