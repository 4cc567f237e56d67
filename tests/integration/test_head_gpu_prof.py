"""What the SMs did, from an agent's store to its head's (schema 16).

An agent on the fake NVML (a GPU with GPM and a power violation of half the
time, a GPU in MIG mode with one instance) streams to a head (SQLite, or
PostgreSQL as test_head_gpu_prof_pg).  Afterwards:

- the head holds the agent's gpu_samples with every new column as the
  agent stored it (per device by uuid, ts_ms and every figure);
- those figures are the scenario's: SM active 61.5 %, occupancy 40 %,
  tensor 25 %, DRAM 33 %, FP32 45 % ... in percent x 100, the power
  violation counter growing 0.5 s per s, the PCIe replays and remapped
  rows as given; the MIG instance's own GPM figures;
- the devices: the MIG instance with its parent's uuid, GPU and compute
  instance ids and profile, its parent in MIG mode;
- the agent's rollups: SM active's average 61.5, and the power throttle
  seconds of all the 1-minute buckets the counter's own growth over the
  rows the agent stored.
"""
import os
import subprocess

from harness import run_tests, check, eq, scaled, wait_for

from head_harness import (Head, start_agent, stop_agent, held, sql, store_exists)

FAKES = os.environ.get("FAKES", "")

SCENARIO = """driver 580.65.06
device 0 uuid=GPU-aaaa name="NVIDIA H100 80GB HBM3" bus=00000000:07:00.0 mem_total=85899345920 gpm=1
device 1 uuid=GPU-bbbb name="NVIDIA H200" bus=00000000:0F:00.0 mem_total=150754820096 power_limit=700000 gpm=1
mig 0 gi=1 ci=0 profile=1g.10gb uuid=MIG-aaaa-1 mem_total=10200547328
at 0 1 util=70 mem_used=1073741824 power=300000 sm_active=61.5 sm_occupancy=40 tensor=25 dfma=0 hmma=25 imma=0 dram=33 fp64=0 fp32=45 fp16=10 gr_active=70
at 0 1 viol_power=0.5 viol_thermal=0 pcie_replay=3 remapped_corr=2 remapped_unc=0 remap_pending=0 remap_failed=0
at 0 0/1 mem_used=2147483648 sm_active=12.5 sm_occupancy=10 tensor=0 dram=5 fp32=8 gr_active=20
"""

# the figures the scenario gives GPU-bbbb, in the store's percent x 100
BBBB = {"gr_active_pct100": 7000, "sm_active_pct100": 6150, "sm_occupancy_pct100": 4000,
        "tensor_active_pct100": 2500, "dfma_tensor_active_pct100": 0,
        "hmma_tensor_active_pct100": 2500, "imma_tensor_active_pct100": 0,
        "dram_active_pct100": 3300, "fp64_active_pct100": 0, "fp32_active_pct100": 4500,
        "fp16_active_pct100": 1000, "pcie_replays": 3, "remapped_rows_corr": 2,
        "remapped_rows_unc": 0, "remap_pending": 0, "remap_failed": 0}
MIG1 = {"gr_active_pct100": 2000, "sm_active_pct100": 1250, "sm_occupancy_pct100": 1000,
        "tensor_active_pct100": 0, "dram_active_pct100": 500, "fp32_active_pct100": 800}
# every column schema 16 added to gpu_samples (facts.h's GPU_PROF_COLUMNS)
PROF = ["gr_active_pct100", "sm_active_pct100", "sm_occupancy_pct100", "tensor_active_pct100",
        "dfma_tensor_active_pct100", "hmma_tensor_active_pct100", "imma_tensor_active_pct100",
        "dram_active_pct100", "fp64_active_pct100", "fp32_active_pct100", "fp16_active_pct100",
        "viol_power_ns", "viol_thermal_ns", "viol_sync_boost_ns", "viol_board_limit_ns",
        "viol_low_util_ns", "viol_reliability_ns", "viol_app_clocks_ns", "viol_base_clocks_ns",
        "viol_sw_thermal_ns", "viol_hw_thermal_ns", "viol_hw_power_brake_ns", "pcie_replays",
        "remapped_rows_corr", "remapped_rows_unc", "remap_pending", "remap_failed"]


def gpu_rows(db, host=None):
    """Every GPU sample of a store (of node host at a head), by device uuid and time."""
    where = ""
    args = ()
    if host:
        where = " WHERE d.node_id = (SELECT id FROM nodes WHERE hostname = ?)"
        args = (host,)
    rows = sql(db, "SELECT d.uuid, g.ts_ms, g.util_pct, " + ", ".join("g." + c for c in PROF)
               + " FROM gpu_samples g JOIN devices d ON d.id = g.device_id" + where
               + " ORDER BY d.uuid, g.ts_ms", *args)
    return [tuple(None if v is None else (v if i == 0 else int(v)) for i, v in enumerate(r))
            for r in rows]


def test_gpu_figures_reach_the_head(wd):
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    scn = wd.join("gpu.scn")
    with open(scn, "w") as f:
        f.write(SCENARIO)
    os.environ.update({"JOBSCOPE_NVML_LIBRARY": os.path.join(FAKES, "libnvidia-ml.so.1"),
                       "FAKE_GPU_SCENARIO": scn})
    head = Head(wd)
    proc, adb, _, errf = start_agent(wd, head, "gpm-node", extra=["--interval", "200ms"])
    try:
        def enough():
            if not store_exists(head.db):
                return False
            try:
                n = sql(head.db, "SELECT count(*) FROM gpu_samples g JOIN devices d"
                        " ON d.id = g.device_id WHERE d.uuid = 'GPU-bbbb'"
                        " AND g.sm_active_pct100 IS NOT NULL")
            except Exception:
                return False  # the head's tables still being made
            return int(n[0][0]) >= 15
        wait_for(enough, timeout=scaled(60), what="15 GPU-bbbb samples with GPM at the head")
    finally:
        eq(stop_agent(proc, errf), 0, "agent exit")
        del os.environ["JOBSCOPE_NVML_LIBRARY"], os.environ["FAKE_GPU_SCENARIO"]
    wait_for(lambda: held(head.db, adb), timeout=scaled(30), what="the head current")

    # the head's rows are the agent's, every column of them
    agent = gpu_rows(adb)
    at_head = gpu_rows(head.db, "gpm-node")
    eq(len(at_head), len(agent), "as many GPU rows at the head as the agent stored")
    eq(at_head, agent, "the same GPU rows, every schema 16 column")

    # ... and they are the scenario's
    cols = ["uuid", "ts_ms", "util_pct"] + PROF
    by_dev = {}
    for r in agent:
        by_dev.setdefault(r[0], []).append(dict(zip(cols, r)))
    eq(sorted(by_dev), ["GPU-aaaa", "GPU-bbbb", "MIG-aaaa-1"], "three devices sampled")
    b = by_dev["GPU-bbbb"]
    # GPM needs two samples: a device's first may have none, every later one has them
    gpm = [r for r in b if r["sm_active_pct100"] is not None]
    check(len(gpm) >= len(b) - 1, "GPU-bbbb's samples with GPM: %d of %d" % (len(gpm), len(b)))
    for r in b[1:]:
        eq({k: r[k] for k in BBBB}, BBBB, "GPU-bbbb's figures at %d" % r["ts_ms"])
    for r in b:
        eq([r[c] for c in ("viol_thermal_ns", "viol_sync_boost_ns")], [0, 0],
           "no thermal throttling")
    # the power violation: half of the time, counted in ns by the fake from its own clock
    first, last = b[0], b[-1]
    rate = (last["viol_power_ns"] - first["viol_power_ns"]) / ((last["ts_ms"] - first["ts_ms"]) * 1e6)
    check(0.4 < rate < 0.6, "viol_power_ns grows 0.5 s per s: %.3f" % rate)
    m = by_dev["MIG-aaaa-1"]
    for r in m[1:]:
        eq({k: r[k] for k in MIG1}, MIG1, "the MIG instance's own GPM at %d" % r["ts_ms"])

    # the devices at the head
    devs = sql(head.db, "SELECT uuid, prof_supported <> 0, mig_enabled, mig, mig_parent_uuid,"
               " gpu_instance_id, compute_instance_id, mig_profile FROM devices"
               " WHERE node_id = (SELECT id FROM nodes WHERE hostname = 'gpm-node')"
               " ORDER BY uuid")
    devs = [(u, bool(p) and p not in ("f", "false"), int(e), int(mg), pu,
             None if gi is None else int(gi), None if ci is None else int(ci), prof)
            for u, p, e, mg, pu, gi, ci, prof in devs]
    eq(devs, [("GPU-aaaa", True, 1, 0, None, None, None, None),
              ("GPU-bbbb", True, 0, 0, None, None, None, None),
              ("MIG-aaaa-1", True, 0, 1, "GPU-aaaa", 1, 0, "1g.10gb")], "the devices' rows")

    # the head's series API gives them too (GPU-bbbb is index 1)
    pts = head.get("/api/v1/series?node=gpm-node&metric=sm_active_pct100&gpu=1")["points"]
    eq([(p["ts_ms"], p["value"]) for p in pts], [(r["ts_ms"], r["sm_active_pct100"]) for r in b],
       "the series is GPU-bbbb's rows")
    # GPU 0 is in MIG mode: its series is its own, its instance's by the instance's uuid
    pts = head.get("/api/v1/series?node=gpm-node&metric=sm_active_pct100&gpu=0")["points"]
    eq([p["ts_ms"] for p in pts], [r["ts_ms"] for r in by_dev["GPU-aaaa"]], "GPU 0's series")
    pts = head.get("/api/v1/series?node=gpm-node&metric=sm_active_pct100&gpu=MIG-aaaa-1")["points"]
    eq([(p["ts_ms"], p["value"]) for p in pts], [(r["ts_ms"], r["sm_active_pct100"]) for r in m],
       "the MIG instance's series, by its uuid")

    # the agent's rollups (flushed at its exit): SM active's average, the throttle seconds
    dev_b = sql(adb, "SELECT id FROM devices WHERE uuid = 'GPU-bbbb'")[0][0]
    rows = sql(adb, "SELECT sum(n), min(avg), max(avg) FROM rollups WHERE tier_ms = 3600000"
               " AND entity = 'gpu' AND entity_id = ? AND metric = 'sm_active_pct'", dev_b)
    check(abs(rows[0][1] - 61.5) < 1e-9 and abs(rows[0][2] - 61.5) < 1e-9,
          "sm_active_pct avg 61.5: %r" % rows)
    # each sample with GPM after another (the first has no interval to weigh it by)
    check(len(gpm) - 1 <= rows[0][0] <= len(gpm), "%r samples rolled up of %d" % (rows, len(gpm)))
    rows = sql(adb, "SELECT sum(avg * n) FROM rollups WHERE tier_ms = 60000 AND entity = 'gpu'"
               " AND entity_id = ? AND metric = 'throttle_power_s'", dev_b)
    want = (last["viol_power_ns"] - first["viol_power_ns"]) / 1e9
    check(abs(rows[0][0] - want) < 1e-6,
          "throttle_power_s of the minutes %r = the counter's growth %r" % (rows[0][0], want))
    head.kill()


if __name__ == "__main__":
    run_tests(globals())
