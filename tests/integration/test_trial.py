"""jobscope trial on programs whose scaling is known (docs/trial.md).

A program that scales perfectly must show a speedup above 1.5 at 2 CPUs
(2.0 ideal) and a serial one below 1.3 (1.0 ideal): that ideal is the point,
so each such trial runs in harness.machine_cpus(), where the trial's
programs get the CPUs they are placed on whatever else the machine runs.
Where the helpers measure the same thing themselves (their items of work per
second, their counter, their CPU time read from /proc), the trial's figures
are compared with that as well.
"""
import json
import os
import re
import signal
import socket
import struct
import subprocess
import time

from harness import (helper, jobscope, machine_cpus, plot_env, run_tests, near, check, eq,
                     scaled, wait_for)

# Each run's length: long enough that jobscope run's start (under ASan, a tenth
# of a second on one CPU) is a small part of the CPU-seconds per second measured:
# in machine_cpus, 0.97 to 0.98 at 1 CPU and speedups of 1.88 to 1.95 at 2, as
# at 2 s and 3 s.
DURATION_S = 1.5
DURATION = "%gs" % DURATION_S


def trial(*args, timeout=180, env=None):
    proc = jobscope("trial", *args, timeout=timeout, env=env)
    return proc


def trial_json(cmd, *opts, cpus_made_certain=None):
    """A trial in JSON; with cpus_made_certain (what for), in machine_cpus()."""
    args = ("--format", "json", "--duration", DURATION) + opts + ("--",) + tuple(cmd)
    if cpus_made_certain:
        with machine_cpus(cpus_made_certain):
            proc = trial(*args)
    else:
        proc = trial(*args)
    eq(proc.returncode, 0, "exit code (stderr: %s)" % proc.stderr[-2000:])
    doc = json.loads(proc.stdout)  # stdout holds the result alone: CMD's went to stderr
    return doc, proc


def helper_lines(stderr):
    """The helpers' own JSON lines, one per run, in the order the runs went."""
    return [json.loads(l) for l in stderr.splitlines() if l.startswith('{"threads"')]


def by_cpus(doc):
    return {p["cpus"]: p for p in doc["placements"]}


def consistent(doc):
    """What every result must satisfy whatever the program: figures derived right."""
    pl = doc["placements"]
    base = min(pl, key=lambda p: p["n"])
    for p in pl:
        check(p["throughput"] is not None and p["throughput"] > 0,
              "throughput at %r: %r" % (p["n"], p["throughput"]))
        runs = [r["throughput"] for r in p["runs"]]
        near(p["throughput"], sum(runs) / len(runs), 1e-4, "throughput = mean of runs")
        near(p["speedup"], p["throughput"] / base["throughput"], 1e-3, "speedup")
        near(p["efficiency"], p["speedup"] / (p["n"] / base["n"]), 1e-3, "efficiency")
        for r in p["runs"]:
            # ended by --duration: SIGTERM then, the helper gone within its 0.2 s report step
            check(DURATION_S - 0.5 < r["wall_s"] < DURATION_S + scaled(3),
                  "run wall_s %r for --duration %s" % (r["wall_s"], DURATION))
            # one CPU-second per second and CPU of its affinity at most
            check(r["throughput"] <= 1.05 * p["cpus"], "run throughput %r on %d CPUs"
                  % (r["throughput"], p["cpus"]))
    fit = doc["fits"][0]
    runs = [r for p in pl for r in p["runs"]]
    eq(fit["contended_runs"], sum(r["cpu_contended"] for r in runs), "contended runs counted")
    if fit["verdict"] == "no-fit":
        # runs that did not have their CPUs (a loaded machine) are left out of the fit: no
        # law when fewer than two placements are left, and the fit says why
        usable = {p["n"] for p in pl for r in p["runs"]
                  if not r["cpu_contended"] and (r["throughput"] or 0) > 0}
        check(len(usable) < 2, "no-fit with runs at %r uncontended" % sorted(usable))
        eq((fit["p"], fit["recommended"]), (None, None), "no law without a fit")
        return fit
    check(fit["verdict"] in ("fits", "does-not-fit", "falls"), "verdict %r" % fit["verdict"])
    check(0 <= fit["p"] <= 1, "p %r in [0, 1]" % fit["p"])
    check(fit["rms_rel_err"] is not None and fit["rms_rel_err"] >= 0, "rms_rel_err")
    eq(fit["fits"], fit["verdict"] == "fits", "fits")
    if fit["verdict"] == "fits":
        check(fit["recommended"] is not None and fit["recommended"] >= 1, "recommended")
    else:
        eq(fit["recommended"], None, "no recommendation without a fit")
    eq([q["n"] for q in fit["predicted"]], [4, 8], "predictions at 2x and 4x the largest tried")
    return fit


def own_speedup(lines):
    """The helper's own items/s at 2 CPUs over that at 1, from its lines of runs that
    went round the placements 1, 2, 1, 2, ..."""
    rates = [l["items_per_s"] for l in lines]
    return sum(rates[1::2]) / sum(rates[0::2])


def test_threads_scale_linearly(wd):
    doc, proc = trial_json([helper("scale_threads")], "--vary", "cpus=1,2", "--repeat", "2",
                           cpus_made_certain="a trial of a program that scales")
    eq(doc["resource"], "cpus", "resource")
    eq(doc["repeat"], 2, "repeat")
    pl = by_cpus(doc)
    eq(sorted(pl), [1, 2], "placements")
    eq(pl[1]["source"], "cpu", "source without --metric")
    # one CPU of affinity, and all of it: about one CPU-second per second
    check(0.6 < pl[1]["throughput"] <= 1.05, "1 CPU: %r CPU-s/s" % pl[1]["throughput"])
    check(pl[2]["speedup"] > 1.5, "2 CPUs: speedup %r > 1.5" % pl[2]["speedup"])
    check(pl[2]["efficiency"] > 0.75, "efficiency %r" % pl[2]["efficiency"])
    fit = consistent(doc)
    eq(fit["verdict"], "fits", "verdict")
    check(fit["p"] > 0.65, "p %r near 1" % fit["p"])
    # the helper's own count of work agrees with the CPU it was measured to get
    lines = helper_lines(proc.stderr)
    eq([l["threads"] for l in lines], [1, 2, 1, 2], "threads per run, runs interleaved")
    own = own_speedup(lines)
    near(pl[2]["speedup"], own, 0.15, "speedup vs the helper's items/s ratio %r" % own)


def test_serial_recommends_one_cpu(wd):
    doc, proc = trial_json([helper("scale_serial")], "--vary", "cpus=1,2",
                           cpus_made_certain="a trial of a serial program")
    lines = helper_lines(proc.stderr)
    eq([l["threads"] for l in lines], [1, 1], "one thread whatever it got")
    pl = by_cpus(doc)
    check(pl[2]["speedup"] < 1.3, "serial: speedup %r < 1.3" % pl[2]["speedup"])
    check(pl[2]["efficiency"] < 0.65, "efficiency %r" % pl[2]["efficiency"])
    own = own_speedup(lines)
    near(pl[2]["speedup"], own, 0.15, "speedup vs the helper's items/s ratio %r" % own)
    fit = consistent(doc)
    eq(fit["verdict"], "fits", "verdict")
    check(fit["p"] < 0.3, "p %r near 0" % fit["p"])
    eq(fit["recommended"], 1, "recommended CPUs")


def test_membound_is_reported_as_measured(wd):
    # whether two streams beat one depends on the memory system: only consistency.
    # In machine_cpus all the same: the helper fills its 128 MiB before it handles
    # SIGTERM, and at 2 s a loaded CPU had not (the run ended without its line)
    doc, proc = trial_json([helper("scale_membound"), "--mb", "128"], "--vary", "cpus=1,2",
                           cpus_made_certain="a trial of a memory-bound program")
    consistent(doc)
    lines = helper_lines(proc.stderr)
    eq([l["threads"] for l in lines], [1, 2], "threads per run")
    print("  membound: helper items/s %r, trial speedup %r, verdict %s" % (
        [l["items_per_s"] for l in lines], by_cpus(doc)[2]["speedup"], doc["fits"][0]["verdict"]))


def test_text_and_plot(wd):
    png = wd.join("trial.png")
    # a law is fitted on runs that had their CPUs (contended ones are left out)
    with machine_cpus("a trial whose law is printed"):
        proc = trial("--duration", "1s", "--vary", "cpus=1,2", "--plot", png, "--",
                     helper("scale_serial"), env=plot_env())
    eq(proc.returncode, 0, "exit code: %s" % proc.stderr[-2000:])
    out = proc.stdout
    check(out.startswith("jobscope trial: "), "text header: %r" % out[:80])
    check("throughput: CPU-seconds per second" in out, "unit line")
    check("Amdahl's law: p = " in out, "fit line: %r" % out)
    check("recommendation: " in out, "recommendation line")
    # the helper runs until stopped: its runs were ended by the trial's --duration,
    # which the exit column says ("stop"), not the SIGTERM's 143
    table = out.split("  cpus ", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    rows = [l.split() for l in table]
    eq([r[6] for r in rows], ["stop", "stop"], "exit column: %r" % rows)
    with open(png, "rb") as f:
        head = f.read(24)
    eq(head[:8], b"\x89PNG\r\n\x1a\n", "PNG signature")
    eq(struct.unpack(">II", head[16:24]), (960, 420), "PNG size")


def test_contended_runs_are_marked(wd):
    """Beside as many busy loops as the machine has CPUs, a program that scales gets
    less than its CPUs: each run says cpu_contended, its group counts them and
    leaves them out of the fit (so no law), stderr says so."""
    ncpu = len(os.sched_getaffinity(0))
    loops = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(ncpu)]
    try:
        proc = trial("--format", "json", "--duration", DURATION, "--vary", "cpus=1,2", "--",
                     helper("scale_threads"))
    finally:
        for p in loops:
            p.kill()
            p.wait()
    eq(proc.returncode, 0, "exit code (stderr: %s)" % proc.stderr[-2000:])
    doc = json.loads(proc.stdout)
    runs = [r for p in doc["placements"] for r in p["runs"]]
    eq([r["cpu_contended"] for r in runs], [True] * len(runs), "every run contended")
    eq(doc["fits"][0]["contended_runs"], len(runs), "contended runs")
    # runs that measured the machine are left out of the fit: no law from them
    eq((doc["fits"][0]["verdict"], doc["fits"][0]["p"], doc["fits"][0]["recommended"]),
       ("no-fit", None, None), "the fit over contended runs only")
    check("measured under CPU contention" in proc.stderr, proc.stderr[-1000:])


def test_one_placement_no_fit(wd):
    proc = trial("--format", "json", "--duration", "1s", "--vary", "cpus=1", "--",
                 helper("scale_serial"))
    eq(proc.returncode, 0, "exit code")
    doc = json.loads(proc.stdout)
    fit = doc["fits"][0]
    eq(fit["verdict"], "no-fit", "verdict")
    eq((fit["p"], fit["rms_rel_err"], fit["recommended"]), (None, None, None), "nulls")
    eq(doc["placements"][0]["speedup"], 1, "speedup of the only placement")
    eq(fit["predicted"][0]["speedup"], None, "no prediction")


def test_memory_limit_applied_or_said_not_to_be(wd):
    proc = trial("--format", "json", "--duration", "1s", "--vary", "mem=64M", "--",
                 helper("scale_serial"))
    eq(proc.returncode, 0, "exit code: %s" % proc.stderr[-2000:])
    p = json.loads(proc.stdout)["placements"][0]
    eq(p["mem_bytes"], 64 << 20, "mem_bytes")
    eq(p["cpus"], None, "cpus not placed")
    try:
        with open("/sys/fs/cgroup/cgroup.controllers") as f:
            v2_memory = "memory" in f.read().split()
    except OSError:
        v2_memory = False
    if v2_memory:
        # where a cgroup can be made, it must have been; where not, the reason is given
        check(p["mem_limit_applied"] or p["mem_limit_note"], "applied, or why not")
    else:
        eq(p["mem_limit_applied"], False, "no v2 memory controller here: not applied")
        check("no cgroup v2 memory controller" in p["mem_limit_note"],
              "note: %r" % p["mem_limit_note"])
    eq(json.loads(proc.stdout)["fits"], [], "no fit: neither cpus nor gpus varied")


# the fake NVML: GPU 0 at 60% SM utilization, the trial's command on it
GPU_SCENARIO = """
driver 535.104.05
device 0 uuid=GPU-00000000-0000-0000-0000-000000000000 name="NVIDIA A100-SXM4-80GB" bus=00000000:07:00.0 mem_total=85899345920 power_limit=400000
device 1 uuid=GPU-11111111-1111-1111-1111-111111111111 name="NVIDIA A100-SXM4-80GB" bus=00000000:0F:00.0 mem_total=85899345920 power_limit=400000
at 0 0 util=60 mem_used=1073741824 power=200000
at 0 1 util=0 mem_used=0 power=60000
proc 0 pid=file:{pidfile} mem=1073741824 sm=60
"""


def test_gpus_placement_and_gpu_work(wd):
    scenario = wd.join("scenario.scn")
    with open(scenario, "w") as f:
        f.write(GPU_SCENARIO.replace("{pidfile}", wd.join("pid")))
    env = dict(os.environ, JOBSCOPE_NVML_LIBRARY=os.path.join(os.environ["FAKES"],
                                                              "libnvidia-ml.so.1"),
               JOBSCOPE_ROCM_SMI_LIBRARY="/nonexistent", FAKE_GPU_SCENARIO=scenario)
    cmd = "echo $$ > %s; echo \"$CUDA_VISIBLE_DEVICES\" >> %s; exec %s --seconds 1.5" % (
        wd.join("pid"), wd.join("cvd"), helper("busy"))
    # the helper spins a CPU: beside other work its runs would be contended, and left
    # out of the fit
    with machine_cpus("a trial of a GPU job whose law is checked"):
        proc = trial("--format", "json", "--duration", "3s", "--interval", "100ms", "--vary",
                     "gpus=1,2", "--", "sh", "-c", cmd, env=env)
    eq(proc.returncode, 0, "exit code: %s" % proc.stderr[-2000:])
    with open(wd.join("cvd")) as f:
        eq(f.read().split(), ["0", "0,1"], "CUDA_VISIBLE_DEVICES of each run")
    doc = json.loads(proc.stdout)
    eq(doc["resource"], "gpus", "resource")
    for p in doc["placements"]:
        eq(p["source"], "gpu", "source: the job used a GPU")
        # mean SM utilization x GPUs used: the fake shows one GPU at 60% whatever is asked
        near(p["throughput"], 0.6, 1e-6, "GPU work at gpus=%d" % p["gpus"])
        eq(p["cpus"], None, "cpus not placed")
    fit = doc["fits"][0]
    eq((fit["verdict"], fit["p"], fit["recommended"]), ("fits", 0, 1), "a GPU job that does not scale")


def descendant_named(root, comm):
    """The pid of a process named comm below pid root, or None."""
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
        except OSError:
            continue
        if stat[stat.index("(") + 1:stat.rindex(")")] != comm:
            continue
        p = int(pid)
        while p > 1:
            try:
                with open("/proc/%d/stat" % p) as f:
                    p = int(f.read().rsplit(")", 1)[1].split()[1])  # its parent
            except OSError:
                break
            if p == root:
                return int(pid)
    return None


def cpu_seconds_of(pid):
    """utime + stime of a live process, as the kernel counts them in /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_sigterm_reports_the_runs_done(wd):
    env = dict(os.environ, TMPDIR=wd.path)
    start = time.monotonic()
    proc = subprocess.Popen([os.environ["JOBSCOPE"], "trial", "--format", "json", "--duration",
                             "60s", "--vary", "cpus=1,2", "--", helper("scale_serial")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        pid = wait_for(lambda: descendant_named(proc.pid, "js-scale_serial"), timeout=20,
                       what="the first run's helper")
        seen = time.monotonic()
        # half a CPU-second of work in the run, and so ticks of jobscope run's samples
        wait_for(lambda: cpu_seconds_of(pid) >= 0.5, timeout=30, what="the helper's work")
        read = time.monotonic()
        before = cpu_seconds_of(pid)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=scaled(30))
    t1 = time.monotonic()
    check(t1 - t0 < scaled(10), "stopped in %.1fs" % (t1 - t0))
    eq(proc.returncode, 128 + signal.SIGTERM, "exit status: %s" % err[-2000:])
    check("stopped by signal 15" in err, "said so: %r" % err[-500:])
    doc = json.loads(out)
    pl = by_cpus(doc)
    eq(len(pl[1]["runs"]), 1, "the run under way was stopped and measured")
    run = pl[1]["runs"][0]
    # it ran from before the helper was seen until the signal, within the trial's life
    check(t0 - seen - 0.01 < run["wall_s"] < t1 - start + 0.01,
          "it ran until the signal: %r, the helper seen %.2f s before it, the trial lived"
          " %.2f s" % (run, t0 - seen, t1 - start))
    # its CPU-seconds: what /proc showed before the signal, and at most one CPU's
    # worth (its affinity) from then until the trial ended
    cpu = pl[1]["throughput"] * run["wall_s"]
    check(before - 0.02 <= cpu <= before + (t1 - read) + 0.02,
          "its throughput %r over %r s: %.3f CPU-s, /proc showed %.3f before the signal"
          " and %.2f s passed until the trial ended" % (pl[1]["throughput"], run["wall_s"], cpu,
                                                        before, t1 - read))
    check(pl[1]["throughput"] <= 1.05, "one CPU-second per second at most: %r"
          % pl[1]["throughput"])
    eq((pl[2]["runs"], pl[2]["throughput"]), ([], None), "the next placement never ran")
    eq(doc["fits"][0]["verdict"], "no-fit", "one placement measured: no fit")
    eq([d for d in os.listdir(wd.path) if d.startswith("jobscope-trial-")], [],
       "the stores' directory removed")


def test_usage_errors(wd):
    ncpu = len(os.sched_getaffinity(0))
    proc = trial("--vary", "cpus=%d" % (ncpu + 1), "--", "true")
    eq(proc.returncode, 2, "more CPUs than allowed")
    check("may use %d CPU" % ncpu in proc.stderr, "message: %r" % proc.stderr)
    for bad in (["--vary", "disks=1"], ["--vary", "cpus=0"], ["--vary", "mem=lots"],
                ["--vary", "cpus=1", "--vary", "cpus=2"], ["--repeat", "0", "--vary", "cpus=1"],
                ["--min-efficiency", "1.5", "--vary", "cpus=1"], ["--plot", "x.gif", "--vary",
                                                                  "cpus=1"], []):
        proc = trial(*bad, "--", "true")
        eq(proc.returncode, 2, "usage error for %r" % bad)
        check(proc.stderr.startswith("jobscope: "), "message for %r: %r" % (bad, proc.stderr))
    eq(trial("--vary", "cpus=1").returncode, 2, "no command")


def test_messages_name_trials_options(wd):
    """What a trial's runs say names trial's options, never `run`'s: a run its
    --duration ends, and a command that leaves a process running behind it."""
    own = {o.rstrip("=") for o in jobscope("trial", "--list-options").stdout.split()}
    proc = trial("--vary", "cpus=1", "--duration", "600ms", "--kill-after", "1s", "--",
                 "sh", "-c", "sleep 30 & exit 0")
    eq(proc.returncode, 0, "exit code (stderr: %s)" % proc.stderr[-2000:])
    check("--duration reached" in proc.stderr, proc.stderr)
    check("at most --duration" in proc.stderr, proc.stderr)
    named = set(re.findall(r"--[a-z][a-z-]*", proc.stderr))
    eq(named - own, set(), "options trial's messages name that trial lacks: " + proc.stderr)


def test_helper_sends_its_count_by_statsd(wd):
    """The helpers' counter reaches a StatsD server whole: what --metric reads."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    env = dict(os.environ, STATSD_HOST="127.0.0.1", STATSD_PORT=str(sock.getsockname()[1]))
    proc = subprocess.run([helper("scale_serial"), "--seconds", "1"], env=env,
                          capture_output=True, text=True, timeout=scaled(30))
    eq(proc.returncode, 0, "exit code")
    own = json.loads(proc.stdout)
    # the helper has ended: every datagram it sent is in the socket's queue (loopback)
    sock.setblocking(False)
    total = datagrams = 0
    try:
        while True:
            line = sock.recv(512).decode()
            check(line.startswith("work.items:") and line.endswith("|c"), "line %r" % line)
            total += int(line[len("work.items:"):-2])
            datagrams += 1
    except BlockingIOError:
        pass
    finally:
        sock.close()
    eq(total, own["items"], "counter sum vs the items it printed")
    check(datagrams >= 4, "one datagram per 200 ms: %d" % datagrams)


def test_metric_rate(wd):
    """--metric: the StatsD counter the helper sends, through `jobscope run`."""
    doc, proc = trial_json([helper("scale_threads")], "--vary", "cpus=1,2", "--metric",
                           "work.items", cpus_made_certain="a trial by a program's counter")
    lines = helper_lines(proc.stderr)
    pl = by_cpus(doc)
    for p, own in zip([pl[1], pl[2]], lines):
        eq(p["source"], "metric", "source")
        # counter sum / the run's wall time (which includes jobscope run's start)
        near(p["throughput"], own["items"] / p["runs"][0]["wall_s"], 0.10,
             "work.items/s at %d CPUs" % p["cpus"])
    check(pl[2]["speedup"] > 1.5, "speedup %r" % pl[2]["speedup"])


run_tests(globals())
