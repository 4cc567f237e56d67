"""`jobscope run` on a (fake) Hopper with GPM: what the SMs did and how long power held the
GPU back, per GPU in the run's report and again from the store, the job's part on a GPU
shared with another job's process, and a job on a MIG slice.

The expected values are the scenario's (the fake NVML implements GPM from NVIDIA's header:
each nvmlGpmMetricsGet between two samples gives the exact time average of the scenario's
step function over the interval between them; violation counters are the integral of the
scenario's fraction), or arithmetic in this file on the rows the fake's values were stored
in; never outputs of jobscope's own code kept from an earlier run."""
import json
import os
import signal
import time

from harness import run, helper, jobscope, run_tests, check, eq, scaled
from agent_harness import sql
from head_harness import Head

FAKES = os.environ.get("FAKES", "")
NVML = os.path.join(FAKES, "libnvidia-ml.so.1")
GiB = 1 << 30
INTERVAL_S = 0.1
CALL_LAG_S = 0.05  # between jobscope taking a reading's time and the library being called

ACTIVITY = {  # the "Done when" figures, percent
    "sm_active": 61.5, "sm_occupancy": 40.0, "tensor_active": 25.0, "dram_active": 33.0,
    "fp32_active": 45.0,
    # and the rest the scenario gives
    "hmma_tensor_active": 25.0, "dfma_tensor_active": 0.0, "imma_tensor_active": 0.0,
    "fp64_active": 0.0, "fp16_active": 10.0, "gr_active": 70.0,
}
POWER_FRACTION = 0.5  # of each second held back by power
POWER_W = 200.0

GPM = ("at 0 0 sm_active=61.5 sm_occupancy=40 tensor=25 dfma=0 hmma=25 imma=0 dram=33 fp64=0"
       " fp32=45 fp16=10 gr_active=70\n"
       "at 0 0 viol_power=0.5 viol_thermal=0 viol_sync_boost=0 viol_board_limit=0"
       " viol_low_util=0 viol_reliability=0 viol_app_clocks=0 viol_base_clocks=0"
       " viol_sw_thermal=0 viol_hw_thermal=0 viol_hw_power_brake=0\n")

# One H100 with GPM; its energy counter off, so that the device's energy is power x time
# at a constant 200 W: device_energy_j / 200 W is the time the readings cover.
SCENARIO = """
driver 550.54.15
device 0 uuid=GPU-aaaa name="NVIDIA H100 80GB HBM3" bus=00000000:07:00.0 mem_total=85899345920 power_limit=700000 gpm=1
unsupported 0 energy
at 0 0 util=90 mem_util=30 mem_used=12884901888 power=200000 temp=60 sm_clock=1980 mem_clock=2619
""" + GPM + """proc 0 pid=file:{pidfile} mem=8589934592 sm=80
"""


def close_to(actual, expected, tol, what):
    """actual within tol of expected (absolute): the report writes 2 decimals."""
    if actual is None or abs(actual - expected) > tol:
        raise AssertionError("%s = %r, expected %r within %g" % (what, actual, expected, tol))


def gpu_env(wd, scenario):
    path = wd.join("scenario.scn")
    with open(path, "w") as f:
        f.write(scenario.replace("{pidfile}", wd.join("pid")))
    env = dict(os.environ)
    env.update({"JOBSCOPE_NVML_LIBRARY": NVML, "JOBSCOPE_ROCM_SMI_LIBRARY": "/nonexistent",
                "FAKE_GPU_SCENARIO": path})
    return env


def gpu_cmd(wd, seconds):
    # the command writes its pid where the fake reads the process list from, then sleeps
    # at least `seconds` (nanosleep) however loaded the machine
    return ["sh", "-c", "echo $$ > %s; exec %s --sleep %s" % (wd.join("pid"), helper("busy"),
                                                             seconds)]


def timed_run(wd, cmd, db, env, report="json"):
    """The run, and its wall time as this test measures it around the process."""
    t0 = time.monotonic()
    r = run(wd, cmd, db=db, opts=["--interval", "%dms" % (INTERVAL_S * 1000)], env=env,
            report=report)
    return r, time.monotonic() - t0


def replay(db, run_id, fmt="json"):
    p = jobscope("report", "--db", db, "--format", fmt, str(run_id))
    eq(p.returncode, 0, "jobscope report exit (stderr %s)" % p.stderr)
    return json.loads(p.stdout) if fmt == "json" else p.stdout


def test_gpm_values_end_to_end(wd):
    db = wd.join("store.db")
    seconds = 3.0
    r, wall_s = timed_run(wd, gpu_cmd(wd, seconds), db, gpu_env(wd, SCENARIO))
    eq(r.rc, 0, "exit code: %s" % r.stderr)
    gpus = r.report["gpus"]
    eq(len(gpus), 1, "one GPU: %r" % gpus)
    g = gpus[0]
    eq(g["uuid"], "GPU-aaaa", "uuid")
    eq(g["mig"], None, "a whole GPU, not a MIG slice")
    # a constant step function: every interval's average is the scenario's value, and so
    # is any time-weighted average of them (0.1 would do; the report's 2 decimals are exact)
    for name, pct in ACTIVITY.items():
        close_to(g[name + "_avg_pct"], pct, 1e-9, name + "_avg_pct")
        eq(g["device_" + name + "_avg_pct"], g[name + "_avg_pct"],
           "alone on the GPU: the job's part is the device's (%s)" % name)
    # power held it back half of each second from the library's start on: half the time
    # between the first and the last reading.  That time, independently of the throttle
    # arithmetic, is the device's energy over its constant 200 W - which also counts the part
    # of the interval before the first reading since the command started (at most two
    # intervals, docs/gpu.md), the first reading saying nothing of GPM or throttling before
    # it: so throttle_power_s lies in [half (span - 2 intervals), half span].  The span is
    # timed by jobscope's clock at each reading, the counter by the library's clock when it
    # is called, a little later: on a loaded machine (under ASan, 1.508 s against a 3.011 s
    # span was seen) the thread can be held between the two, at the first reading and the
    # last, for up to CALL_LAG_S each
    span_s = g["device_energy_j"] / POWER_W
    lag = POWER_FRACTION * 2 * CALL_LAG_S
    check(POWER_FRACTION * (span_s - 2 * INTERVAL_S) - lag <= g["throttle_power_s"]
          <= POWER_FRACTION * span_s + lag,
          "throttle_power_s %r: half of the %.3f s the readings cover" %
          (g["throttle_power_s"], span_s))
    # and against the run as this test timed it: the readings lie within the process's life
    # (at most the wall time measured around it), and cover the command's sleep but for an
    # interval at either end and what a loaded machine delays the first tick by (scaled)
    check(POWER_FRACTION * (seconds - 2 * INTERVAL_S - scaled(0.2)) <= g["throttle_power_s"]
          <= POWER_FRACTION * wall_s,
          "throttle_power_s %r: about half the run (%.3f s measured around it, the command "
          "slept %.1f s)" % (g["throttle_power_s"], wall_s, seconds))
    for reason in ("thermal", "sync_boost", "board_limit", "low_util", "reliability",
                   "app_clocks", "base_clocks", "sw_thermal", "hw_thermal", "hw_power_brake"):
        eq(g["throttle_%s_s" % reason], 0.0, "throttle_%s_s: counted, 0" % reason)
    # the job-level aggregate: its one GPU
    gpu = r.report["analysis"]["efficiency"]["gpu"]
    close_to(gpu["sm_active_avg_pct"], 61.5, 1e-9, "analysis.efficiency.gpu.sm_active_avg_pct")
    eq(gpu["throttle_power_s"], g["throttle_power_s"], "analysis.efficiency.gpu.throttle_power_s")
    kinds = {v["kind"]: v for v in r.report["verdicts"]}
    check("gpu_power_throttled" in kinds, "a power-throttling verdict: %r" % list(kinds))
    eq(kinds["gpu_power_throttled"]["evidence"]["throttle_power_s"], g["throttle_power_s"],
       "the verdict's evidence")
    # the store holds the same: the replayed report equals the live one
    again = replay(db, r.report["run"]["id"])
    eq(again["gpus"], r.report["gpus"], "replayed gpus")
    eq(again["analysis"]["efficiency"]["gpu"], r.report["analysis"]["efficiency"]["gpu"],
       "replayed analysis.efficiency.gpu")
    # a whole replay, no checkpoint
    env = dict(os.environ, JOBSCOPE_NO_CKPT="1")
    p = jobscope("report", "--db", db, "--format", "json", str(r.report["run"]["id"]), env=env)
    eq(json.loads(p.stdout)["gpus"], r.report["gpus"], "replayed without a checkpoint")
    text = replay(db, r.report["run"]["id"], "text")
    check("SM active 61.5%" in text, "the text report names it: %s" % text)
    check("throttled by power " in text, "and the throttling: %s" % text)
    csv = replay(db, r.report["run"]["id"], "csv")
    check("gpu0_sm_active_pct" in csv.splitlines()[0], "a CSV column: %s" % csv[:300])


def device_row(db, uuid):
    rows = sql(db, "SELECT id FROM devices WHERE uuid = ?", uuid)
    eq(len(rows), 1, "one device row for %s" % uuid)
    return rows[0][0]


def share_by_rule(mine, others):
    """The job's share of one interval by attrib/gpu_share.h's rule, from the stored rows
    of the reading that ends it: (sm, mem) of the job's processes and of the others."""
    sm_all = mine[0] + others[0]
    if sm_all > 0:
        return mine[0] / sm_all
    mem_all = mine[1] + others[1]
    if mem_all > 0:
        return mine[1] / mem_all
    return 1.0 if others == (0, 0) else None


def test_shared_gpu_split(wd):
    """The command (80 % of the SM samples) and another job's process (pid 1, 20 %): its
    part of each activity is the device's times its share of each interval."""
    db = wd.join("store.db")
    scenario = SCENARIO + "proc 0 pid=1 mem=2147483648 sm=20\n"
    r, _ = timed_run(wd, gpu_cmd(wd, "2"), db, gpu_env(wd, scenario))
    eq(r.rc, 0, "exit code: %s" % r.stderr)
    g = r.report["gpus"][0]
    for name, pct in ACTIVITY.items():
        close_to(g["device_" + name + "_avg_pct"], pct, 1e-9, "device_%s_avg_pct" % name)
    # the expected part from the stored rows: each reading's processes (the job's with a
    # proc_id; the others summed in one row with pid 0), each interval's length
    dev = device_row(db, "GPU-aaaa")
    ts = [t for (t,) in sql(db, "SELECT ts_ms FROM gpu_samples WHERE device_id = ? ORDER BY ts_ms",
                            dev)]
    weighted, ms = 0.0, 0
    for prev, cur in zip(ts, ts[1:]):
        rows = sql(db, "SELECT proc_id IS NOT NULL, COALESCE(sm_util_pct, 0),"
                       " COALESCE(mem_bytes, 0) FROM gpu_proc_samples"
                       " WHERE device_id = ? AND ts_ms = ?", dev, cur)
        mine = tuple(sum(r[k] for r in rows if r[0]) for k in (1, 2))
        others = tuple(sum(r[k] for r in rows if not r[0]) for k in (1, 2))
        if not any(r[0] for r in rows):
            continue  # not the job's time on the device
        share = share_by_rule(mine, others)
        check(share is not None, "something to split by at %d" % cur)
        weighted += share * (cur - prev)
        ms += cur - prev
    check(ms > 0, "intervals with the job on the GPU")
    mean_share = weighted / ms
    check(0.5 < mean_share <= 0.8 + 1e-9, "the job's share about 80 %%: %r" % mean_share)
    # the report rounds to 2 decimals
    for name, pct in ACTIVITY.items():
        close_to(g[name + "_avg_pct"], pct * mean_share, 0.005 + 1e-9,
                 "%s_avg_pct: the job's part" % name)
    # a throttled device is slow for everyone on it: not split
    check(g["throttle_power_s"] > 0, "throttle_power_s %r" % g["throttle_power_s"])
    again = replay(db, r.report["run"]["id"])
    eq(again["gpus"], r.report["gpus"], "replayed gpus")


def test_mig_slice(wd):
    """The command on MIG instance 0/1 (1g.10gb), another process on 0/2: the job used the
    slice, not the GPU; its figures are the slice's own (the parent's and the other
    slice's differ on purpose)."""
    db = wd.join("store.db")
    scenario = """
driver 550.54.15
device 0 uuid=GPU-aaaa name="NVIDIA H100 80GB HBM3" bus=00000000:07:00.0 mem_total=85899345920 power_limit=700000 gpm=1
unsupported 0 energy
at 0 0 util=90 mem_used=12884901888 power=200000 sm_active=90 tensor=80 dram=70
mig 0 gi=1 ci=0 profile=1g.10gb uuid=MIG-aaaa-1 mem_total=10200547328
mig 0 gi=2 ci=0 profile=1g.10gb uuid=MIG-aaaa-2 mem_total=10200547328
at 0/1 0 mem_used=2147483648 sm_active=30 sm_occupancy=20 tensor=12.5 dram=40 fp32=15
at 0/2 0 mem_used=1073741824 sm_active=5 sm_occupancy=1 tensor=0 dram=2 fp32=1
proc 0/1 pid=file:{pidfile} mem=2147483648
proc 0/2 pid=1 mem=1073741824
"""
    r, _ = timed_run(wd, gpu_cmd(wd, "1.5"), db, gpu_env(wd, scenario))
    eq(r.rc, 0, "exit code: %s" % r.stderr)
    gpus = r.report["gpus"]
    eq([x["uuid"] for x in gpus], ["MIG-aaaa-1"], "the job's slice, alone: %r" % gpus)
    g = gpus[0]
    eq(g["mig"]["profile"], "1g.10gb", "the slice's profile")
    eq(g["mig"]["gpu_instance_id"], 1, "its GPU instance")
    eq(g["mig"]["compute_instance_id"], 0, "its compute instance")
    eq(g["mig"]["parent_index"], 0, "its parent's index")
    eq(g["mig"]["parent_uuid"], "GPU-aaaa", "its parent")
    eq(g["mem_total_bytes"], 10200547328, "the slice's memory")
    unused = {x["uuid"]: x for x in r.report["gpus_not_used"]}
    eq(sorted(unused), ["GPU-aaaa", "MIG-aaaa-2"], "the parent and the other slice: not used")
    check("MIG mode" in unused["GPU-aaaa"]["note"], "the parent's note: %r" % unused["GPU-aaaa"])
    eq(unused["MIG-aaaa-2"]["mig"]["gpu_instance_id"], 2, "the other slice named")
    for name, pct in (("sm_active", 30.0), ("sm_occupancy", 20.0), ("tensor_active", 12.5),
                      ("dram_active", 40.0), ("fp32_active", 15.0)):
        close_to(g[name + "_avg_pct"], pct, 1e-9, "%s: the slice's own" % name)
        eq(g["device_" + name + "_avg_pct"], g[name + "_avg_pct"],
           "alone on its slice: no split (%s)" % name)
    again = replay(db, r.report["run"]["id"])
    eq(again["gpus"], r.report["gpus"], "replayed gpus")
    text = replay(db, r.report["run"]["id"], "text")
    check("MIG 1g.10gb, GPU instance 1, compute instance 0, of GPU 0" in text,
          "the text report names the slice: %s" % text)


def test_no_gpm_is_null(wd):
    """A driver without GPM and violation counters: null, never 0."""
    scenario = SCENARIO.replace(" gpm=1", "") + "unsupported 0 viol\n"
    r, _ = timed_run(wd, gpu_cmd(wd, "0.6"), wd.join("store.db"), gpu_env(wd, scenario))
    eq(r.rc, 0, "exit code: %s" % r.stderr)
    g = r.report["gpus"][0]
    for name in ACTIVITY:
        eq(g[name + "_avg_pct"], None, name + "_avg_pct")
        eq(g["device_" + name + "_avg_pct"], None, "device_" + name + "_avg_pct")
    eq(g["throttle_power_s"], None, "throttle_power_s")
    eq(g["throttle_thermal_s"], None, "throttle_thermal_s")


# a second job's GPU: other figures, and no power throttling
SCENARIO_B = (SCENARIO.replace("sm_active=61.5", "sm_active=20").replace("tensor=25", "tensor=5")
              .replace("hmma=25", "hmma=5").replace("viol_power=0.5", "viol_power=0"))


def test_history_by_job(wd):
    """Three runs into one store (61.5 % SM active and throttled, 20 % and not, no GPM):
    `report --by job` lists each job with its own figures, as its own report has them
    (the stored summary's columns against the job's report, an independent path), and
    null where the driver gave none; text and CSV name them."""
    db = wd.join("store.db")
    want = {}  # run id -> the scenario's SM active, tensor active (None: no GPM)
    for scenario, seconds, figures in ((SCENARIO, "1.5", (61.5, 25.0)),
                                       (SCENARIO_B, "1.5", (20.0, 5.0)),
                                       (SCENARIO.replace(" gpm=1", "") + "unsupported 0 viol\n",
                                        "0.6", (None, None))):
        r, _ = timed_run(wd, gpu_cmd(wd, seconds), db, gpu_env(wd, scenario))
        eq(r.rc, 0, "exit code: %s" % r.stderr)
        want[r.report["run"]["id"]] = figures
    p = jobscope("report", "--db", db, "--by", "job", "--since", "1d", "--format", "json")
    eq(p.returncode, 0, "report --by job exit (stderr %s)" % p.stderr)
    rows = json.loads(p.stdout)["rows"]
    eq(len(rows), 3, "a row per job: %r" % [x["key"] for x in rows])
    seen = {}
    for row in rows:
        key = row["key"].rsplit("@", 1)[0]
        q = jobscope("report", "--db", db, "--job", key, "--format", "json")
        eq(q.returncode, 0, "report --job %s exit (stderr %s)" % (key, q.stderr))
        job = json.loads(q.stdout)
        gpu = job["analysis"]["efficiency"]["gpu"]
        for name in ("sm_active", "sm_occupancy", "tensor_active", "dram_active", "fp64_active",
                     "fp32_active", "fp16_active"):
            eq(row[name + "_avg_pct"], gpu[name + "_avg_pct"],
               "%s: %s_avg_pct as its own report has it" % (key, name))
        for name in ("throttle_power_s", "throttle_thermal_s"):
            eq(row[name], gpu[name], "%s: %s as its own report has it" % (key, name))
        seen[job["run"]["id"]] = (row["sm_active_avg_pct"], row["tensor_active_avg_pct"])
    eq(sorted(seen), sorted(want), "the runs' rows")
    for run_id, (sm, tensor) in want.items():
        if sm is None:
            eq(seen[run_id], (None, None), "run %d without GPM: null" % run_id)
            continue
        close_to(seen[run_id][0], sm, 1e-9, "run %d sm_active_avg_pct" % run_id)
        close_to(seen[run_id][1], tensor, 1e-9, "run %d tensor_active_avg_pct" % run_id)
    # the total: each GPM job weighted by its GPU-hours, the job without GPM left out
    total = json.loads(p.stdout)["total"]
    check(20.0 < total["sm_active_avg_pct"] < 61.5, "total between the two: %r" % total)
    p = jobscope("report", "--db", db, "--by", "job", "--since", "1d", "--format", "csv")
    eq(p.returncode, 0, "csv exit (stderr %s)" % p.stderr)
    check("sm_active_avg_pct" in p.stdout.splitlines()[0], "a CSV column: %s" % p.stdout)
    p = jobscope("report", "--db", db, "--by", "job", "--since", "1d")
    eq(p.returncode, 0, "text exit (stderr %s)" % p.stderr)
    check("SM active and tensor active" in p.stdout, "the text table's columns: %s" % p.stdout)

    # a head on that store: /api/v1/report's rows and /api/v1/jobs' summaries say the same
    head = Head(wd, db=db, backend="sqlite")
    try:
        doc = head.get("/api/v1/report?by=job&since=1d&format=json")
        eq({x["key"]: x["sm_active_avg_pct"] for x in doc["rows"]},
           {x["key"]: x["sm_active_avg_pct"] for x in rows}, "/api/v1/report's rows")
        jobs = head.get("/api/v1/jobs?since=1d")["jobs"]
        eq(len(jobs), 3, "the head lists the three runs: %r" % jobs)
        by_key = {x["key"].rsplit("@", 1)[0]: x for x in rows}
        for j in jobs:
            row = by_key["%s:%s" % (j["scheduler"], j["job_id"])]
            for name in ("sm_active_avg_pct", "tensor_active_avg_pct", "throttle_power_s"):
                if row[name] is None:
                    eq(j[name], None, "/api/v1/jobs %s %s" % (j["key"], name))
                else:  # 3 decimals there, 2 in the report
                    close_to(j[name], row[name], 0.005 + 1e-9,
                             "/api/v1/jobs %s %s" % (j["key"], name))
    finally:
        head.kill(signal.SIGTERM)


if __name__ == "__main__":
    run_tests(globals())
