"""`jobscope run` on (fake) GPUs: scenario -> sampler -> store -> report, exact values."""
import json
import os
import signal
import subprocess

from harness import (run, helper, jobscope, run_tests, near, check, eq, scaled, wait_for, JOBSCOPE,
                     stop)
from agent_harness import sql

FAKES = os.environ.get("FAKES", "")
NVML = os.path.join(FAKES, "libnvidia-ml.so.1")
NVML_OLD = os.path.join(FAKES, "libnvidia-ml-old.so")
GiB = 1 << 30

# GPU 0 is shared: the command's process (pid from a file) with 80% SM and
# another process (pid 1) with 20%; GPU 1 is idle and not the command's.
SCENARIO = """
driver 535.104.05
device 0 uuid=GPU-00000000-0000-0000-0000-000000000000 name="NVIDIA A100-SXM4-80GB" bus=00000000:07:00.0 mem_total=85899345920 power_limit=400000 nvlinks=12
device 1 uuid=GPU-11111111-1111-1111-1111-111111111111 name="NVIDIA A100-SXM4-80GB" bus=00000000:0F:00.0 mem_total=85899345920 power_limit=400000 nvlinks=12
unsupported 0 energy
unsupported 1 energy
at 0 0 util=60 mem_util=25 mem_used=12884901888 pcie_tx_kbps=500 pcie_rx_kbps=1000 power=200000 temp=61 sm_clock=1410 mem_clock=1593 throttle=0
at 0 1 util=0 mem_used=0 power=60000
at 0 0 nvlink_rx_kib=1000 nvlink_tx_kib=2000 ecc_sbe=5 ecc_dbe=0
at 0.5 0 nvlink_rx_kib=4000 nvlink_tx_kib=2500 ecc_sbe=8 ecc_dbe=1
proc 0 pid=file:{pidfile} mem=8589934592 sm=80 memutil=30
proc 0 pid=1 mem=2147483648 sm=20 memutil=5
xid 0 at=0.5 code=79
"""


def gpu_env(wd, lib=NVML, scenario=SCENARIO):
    path = wd.join("scenario.scn")
    with open(path, "w") as f:
        f.write(scenario.replace("{pidfile}", wd.join("pid")))
    env = dict(os.environ)
    env.update({"JOBSCOPE_NVML_LIBRARY": lib, "JOBSCOPE_ROCM_SMI_LIBRARY": "/nonexistent",
                "FAKE_GPU_SCENARIO": path})
    return env


def gpu_cmd(wd, seconds="1.5"):
    # the command writes its pid where the fake reads the process list from; it
    # sleeps (the GPU is the fake's: the process needs no CPU to be on it), and
    # nanosleep makes its life at least that long however loaded the machine
    return ["sh", "-c", "echo $$ > %s; exec %s --sleep %s" % (wd.join("pid"), helper("busy"),
                                                             seconds)]


def test_gpu_values_end_to_end(wd):
    db = wd.join("store.db")
    r = run(wd, gpu_cmd(wd), db=db, opts=["--interval", "100ms"], env=gpu_env(wd))
    eq(r.rc, 0, "exit code: %s" % r.stderr)
    gpus = r.report["gpus"]
    eq(len(gpus), 1, "one GPU used: %r" % gpus)
    g = gpus[0]
    eq(g["index"], 0, "index")
    eq(g["uuid"], "GPU-00000000-0000-0000-0000-000000000000", "uuid")
    eq(g["name"], "NVIDIA A100-SXM4-80GB", "name")
    eq(g["util_avg_pct"], 60.0, "util_avg_pct")
    eq(g["util_p95_pct"], 60, "util_p95_pct")
    eq(g["mem_used_peak_bytes"], 12 * GiB, "mem_used_peak_bytes")
    eq(g["mem_total_bytes"], 80 * GiB, "mem_total_bytes")
    eq(g["device_power_avg_w"], 200.0, "device power (constant 200 W)")
    # 80% of the SM use while the command's process was on the GPU (the exact
    # arithmetic is unit-tested in test_summary): 160 W for its life, at least the
    # 1.5 s it slept, but for the driver's sample periods (100 ms) at either end;
    # not measured against the run's span, which a loaded machine stretches
    check(g["energy_j"] >= 160.0 * (1.5 - 0.2),
          "the command's share of the energy: %r J" % g["energy_j"])
    check(g["energy_j"] <= 0.8 * g["device_energy_j"] + 1e-6, "never more than its share")
    span = g["device_energy_j"] / 200.0  # seconds the GPU readings cover
    near(g["power_avg_w"], g["energy_j"] / span, 0.001, "power_avg_w: energy_j over the span")
    near(g["pcie_rx_bytes"], 1000 * 1024 * span, 0.01, "PCIe rx from 1000 KB/s")
    near(g["pcie_tx_bytes"], 500 * 1024 * span, 0.01, "PCIe tx from 500 KB/s")
    eq(g["nvlink_rx_bytes"], 3000 * 1024, "NVLink rx: counter growth, KiB -> bytes")
    eq(g["nvlink_tx_bytes"], 500 * 1024, "NVLink tx")
    eq(g["ecc_corrected"], 3, "corrected ECC errors during the run")
    eq(g["ecc_uncorrected"], 1, "uncorrected ECC errors during the run")
    eq(g["throttled_pct"], 0.0, "throttled_pct")
    eq(g["temp_max_c"], 61, "temp_max_c")
    xids = [e for e in g["events"] if e["kind"] == "xid"]
    eq(len(xids), 1, "one XID event: %r" % g["events"])
    eq(xids[0]["value"], 79, "XID code")
    # due 0.5 s after the library's start, which comes after the run's; read at the
    # next tick, later when a loaded machine slows the run's start or its ticks
    check(0.5 - 0.01 <= xids[0]["t_s"] <= 0.5 + scaled(0.5), "XID time %r" % xids[0]["t_s"])
    top = [e for e in r.report["events"] if e["kind"] == "xid"]
    eq(top[0]["gpu"], 0, "the XID on the run's timeline names its GPU")
    eq([x["index"] for x in r.report["gpus_not_used"]], [1], "GPU 1 noted as not used")
    utils = [b["gpu_util_pct"] for b in r.report["timeline"]["buckets"]]
    check(all(u == [60.0] for u in utils), "GPU 0 at 60%% in every timeline bucket: %r" % utils)
    proc = [p for p in r.report["processes"] if p["comm"] == "js-busy"][0]
    eq(proc["gpu_mem_peak_bytes"], 8 * GiB, "process GPU memory")
    # each tick holds its window's utilization: 80% while the process ran,
    # less in the window in which it exited (its samples cover part of it)
    utils = [u for (u,) in sql(db, "SELECT sm_util_pct FROM gpu_proc_samples WHERE pid = ?"
                                   " AND sm_util_pct IS NOT NULL ORDER BY ts_ms", proc["pid"])]
    eq(utils[:-1], [80] * (len(utils) - 1), "process GPU util, window by window")
    check(utils[-1] <= 80, "the window of its exit: %r" % utils)
    near(proc["gpu_util_avg_pct"], sum(utils) / len(utils), 0.001, "process GPU util")
    # the store holds the same: the replayed report equals the live one
    p = jobscope("report", "--db", db, "--format", "json", str(r.report["run"]["id"]))
    replay = json.loads(p.stdout)
    for key in ("gpus", "gpus_not_used", "processes", "events"):
        eq(replay[key], r.report[key], "replayed %s" % key)


def test_gpu_in_text_report(wd):
    r = run(wd, gpu_cmd(wd, "0.5"), opts=["--interval", "100ms"], env=gpu_env(wd), report="text")
    check("GPU 0 NVIDIA A100-SXM4-80GB: util 60.0% on average, p95 60%" in r.stderr, r.stderr)
    check("GPU 1 NVIDIA A100-SXM4-80GB: not used by the command" in r.stderr, r.stderr)
    check("XID 79 on GPU 0" in r.stderr, r.stderr)
    check("    gpu0  |" in r.stderr, "a GPU row in the timeline: %r" % r.stderr)


def test_library_thread_leaves_signals_alone(wd):
    # The real libnvidia-ml starts a thread in nvmlInit; so does the fake.  The
    # command's end (SIGCHLD) and ^C (SIGINT, passed to the command) must still
    # reach jobscope's signalfd: on a real H200, a run whose mask was set after
    # nvmlInit waited forever after its command had exited.
    tasks = wd.join("tasks")
    r = run(wd, ["sh", "-c", "cat /proc/$PPID/task/*/comm > %s" % tasks], env=gpu_env(wd),
            timeout=60)
    eq(r.rc, 0, "the command's end was seen: %s" % r.stderr)
    with open(tasks) as f:
        check("fake-nvml" in f.read().split(), "the library's thread ran in jobscope")
    pidfile = wd.join("pid")
    proc = subprocess.Popen([JOBSCOPE, "run", "--db", wd.join("sig.db"), "--report", "none", "--",
                             "sh", "-c", "echo $$ > %s; exec sleep 600" % pidfile],
                            env=gpu_env(wd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        wait_for(lambda: os.path.exists(pidfile) and os.path.getsize(pidfile) > 0,
                 what="the command's pid")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=scaled(60))
    finally:
        stop(proc, signal.SIGKILL)
        try:
            with open(pidfile) as f:
                os.kill(int(f.read()), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    eq(proc.returncode, 128 + signal.SIGINT,
       "SIGINT passed to the command, which it ended; jobscope reported it: %s" % err)


def test_interrupted_while_opening_gpus(wd):
    # ^C while the GPUs are opened (init takes 5 s here; a real driver's takes a
    # second or more on a large node): the command is not started, the run says
    # so and ends with 128 + SIGINT, and its row in the store has that end
    started = wd.join("started")
    env = gpu_env(wd, scenario=SCENARIO + "init_sleep_ms %d\n" % int(scaled(5) * 1000))
    db = wd.join("int.db")
    proc = subprocess.Popen([JOBSCOPE, "run", "--db", db, "--report", "none", "--",
                             "sh", "-c", "touch %s" % started],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def in_init():  # the library is loaded: nvmlInit is under way
            try:
                with open("/proc/%d/maps" % proc.pid) as f:
                    return "libnvidia-ml" in f.read()
            except OSError:
                return False
        wait_for(in_init, timeout=30, what="jobscope in nvmlInit")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=scaled(60))
    finally:
        stop(proc, signal.SIGKILL)
    eq(proc.returncode, 128 + signal.SIGINT, "exit status: %s" % err)
    check("before 'sh' started: not starting it" in err, "said: %r" % err)
    check(not os.path.exists(started), "the command did not run")
    eq(sql(db, "SELECT exit_code, end_ms IS NOT NULL FROM jobs"), [(130, 1)], "the run's row")


def test_old_driver_run(wd):
    r = run(wd, gpu_cmd(wd, "0.5"), opts=["--interval", "100ms"], env=gpu_env(wd, NVML_OLD))
    eq(r.rc, 0, "exit code")
    g = r.report["gpus"][0]
    eq(g["util_avg_pct"], 60.0, "util through the old entry points")
    proc = [p for p in r.report["processes"] if p["comm"] == "js-busy"][0]
    eq(proc["gpu_mem_peak_bytes"], 8 * GiB, "process memory through the old 16-byte records")


def test_broken_driver_run_goes_on(wd):
    # a library that does not match the kernel module (no GPU at all is no warning: test_gpu_quiet)
    r = run(wd, ["true"], env=gpu_env(wd, scenario="init_error 18\n"))
    eq(r.rc, 0, "the run goes on")
    eq(r.report["gpus"], [], "no GPUs")
    eq(len([l for l in r.stderr.splitlines() if "warning" in l]), 1, "one warning: %r" % r.stderr)
    eq(r.report["processes"][0]["gpu_mem_peak_bytes"], None, "unknown, not 0")


def test_gpu_lost_mid_run(wd):
    scenario = SCENARIO + "lost 0 at=0.4\n"
    r = run(wd, gpu_cmd(wd, "1"), opts=["--interval", "100ms"], env=gpu_env(wd, scenario=scenario))
    eq(r.rc, 0, "exit code")
    kinds = [e["kind"] for e in r.report["events"]]
    check("gpu_lost" in kinds, "a gpu_lost event: %r" % kinds)
    g = r.report["gpus"][0]
    eq(g["util_avg_pct"], 60.0, "what was read before stays right")


def test_amd_gpu_run(wd):
    rocm = os.path.join(FAKES, "librocm_smi64.so.1")
    scenario = """
driver 5.2.3
device 0 uuid=0x1234abcd name="AMD Instinct MI250X" bus=0000:c1:00.0 mem_total=68702699520
unsupported 0 energy
at 0 0 util=70 mem_util=40 mem_used=4294967296 power=300000 temp=55 sm_clock=1700 mem_clock=1600
proc 0 pid=file:{pidfile} mem=2147483648 sm=65
"""
    env = gpu_env(wd, lib="/nonexistent", scenario=scenario)
    env["JOBSCOPE_ROCM_SMI_LIBRARY"] = rocm
    r = run(wd, gpu_cmd(wd, "0.8"), opts=["--interval", "100ms"], env=env)
    eq(r.rc, 0, "exit code: %s" % r.stderr)
    g = r.report["gpus"][0]
    eq(g["vendor"], "AMD", "vendor")
    eq(g["name"], "AMD Instinct MI250X", "name")
    eq(g["util_avg_pct"], 70.0, "util_avg_pct")
    eq(g["mem_used_peak_bytes"], 4 * GiB, "mem_used_peak_bytes")
    eq(g["device_power_avg_w"], 300.0, "power from the average power sensor (uW)")
    eq(g["pcie_rx_bytes"], None, "PCIe is not sampled on ROCm (the call blocks ~1 s)")
    proc = [p for p in r.report["processes"] if p["comm"] == "js-busy"][0]
    eq(proc["gpu_mem_peak_bytes"], 2 * GiB, "process VRAM")
    eq(proc["gpu_util_avg_pct"], 65.0, "process CU occupancy")


def test_no_gpus_no_gpu_fields(wd):
    env = dict(os.environ)
    env.update({"JOBSCOPE_NVML_LIBRARY": "/nonexistent", "JOBSCOPE_ROCM_SMI_LIBRARY": "/nonexistent"})
    r = run(wd, ["true"], env=env)
    eq(r.report["gpus"], [], "gpus")
    eq(r.report["gpus_not_used"], [], "gpus_not_used")
    eq(r.report["processes"][0]["gpu_mem_peak_bytes"], None, "null without GPU data")
    eq(r.stderr, "", "nothing said when there is no GPU library")


if __name__ == "__main__":
    run_tests(globals())
