"""`jobscope gpus` against the fake vendor libraries the build makes."""
import json
import os

from harness import jobscope, run_tests, check, eq

FAKES = os.environ.get("FAKES", "")
NVML = os.path.join(FAKES, "libnvidia-ml.so.1")
NVML_OLD = os.path.join(FAKES, "libnvidia-ml-old.so")
ROCM = os.path.join(FAKES, "librocm_smi64.so.1")
NOWHERE = "/nonexistent/libnothing.so"

SCENARIO = """
driver 535.104.05
device 0 uuid=GPU-11111111-2222-3333-4444-555555555555 name="NVIDIA A100-SXM4-80GB" bus=00000000:07:00.0 mem_total=85899345920 power_limit=400000 nvlinks=12
device 1 uuid=GPU-66666666-7777-8888-9999-000000000000 name="NVIDIA A100-SXM4-80GB" bus=00000000:0F:00.0 mem_total=85899345920 power_limit=400000 nvlinks=12
unsupported 1 power ecc
at 0 0 util=10 mem_used=1073741824 power=90000
at 0 1 util=20 mem_used=2147483648
"""


def env_for(wd, nvml=NOWHERE, rocm=NOWHERE, scenario=SCENARIO):
    path = wd.join("scenario.scn")
    with open(path, "w") as f:
        f.write(scenario)
    env = dict(os.environ)
    env.update({"JOBSCOPE_NVML_LIBRARY": nvml, "JOBSCOPE_ROCM_SMI_LIBRARY": rocm,
                "FAKE_GPU_SCENARIO": path})
    return env


def test_no_gpu_library(wd):
    p = jobscope("gpus", env=env_for(wd))
    eq(p.returncode, 0, "exit code")
    check("no GPUs found" in p.stdout, p.stdout)
    eq(p.stdout.splitlines()[1:], ["NVIDIA: %s not found" % NOWHERE,
                                   "AMD: %s not found" % NOWHERE], "each vendor's line")
    eq(p.stderr, "", "nothing on stderr")
    p = jobscope("gpus", "--json", env=env_for(wd))
    out = json.loads(p.stdout)
    eq((out["libraries"], out["gpus"]), ([], []), "no library, no GPU")
    eq([(v["vendor"], v["backend"], v["library"], v["state"], v["gpu_count"], v["detail"])
        for v in out["vendors"]],
       [("NVIDIA", "nvml", NOWHERE, "absent", 0, None), ("AMD", "rocm", NOWHERE, "absent", 0, None)],
       "vendors")


def test_nvidia_gpus(wd):
    p = jobscope("gpus", "--json", env=env_for(wd, nvml=NVML))
    eq(p.returncode, 0, "exit code: %s" % p.stderr)
    out = json.loads(p.stdout)
    eq([lib["backend"] for lib in out["libraries"]], ["nvml"], "libraries")
    eq(out["libraries"][0]["driver_version"], "535.104.05", "driver version")
    eq(len(out["gpus"]), 2, "two GPUs")
    g0, g1 = out["gpus"]
    eq(g0["index"], 0, "index")
    eq(g0["uuid"], "GPU-11111111-2222-3333-4444-555555555555", "uuid")
    eq(g0["name"], "NVIDIA A100-SXM4-80GB", "name")
    eq(g0["pci_bus_id"], "00000000:07:00.0", "bus id")
    eq(g0["mem_total_bytes"], 85899345920, "memory")
    eq(g0["power_limit_mw"], 400000, "power limit")
    eq(g0["nvlink_count"], 12, "NVLink links")
    check("power" in g0["supported"] and "ecc" in g0["supported"], g0["supported"])
    check("power" not in g1["supported"] and "ecc" not in g1["supported"],
          "unsupported metrics are off for GPU 1 only: %r" % g1["supported"])
    check("util" in g1["supported"], "the rest of GPU 1 still works")
    p = jobscope("gpus", env=env_for(wd, nvml=NVML))
    check("GPU 0  NVIDIA A100-SXM4-80GB" in p.stdout, p.stdout)
    check("power limit 400 W" in p.stdout, p.stdout)


def test_old_driver(wd):
    p = jobscope("gpus", "--json", env=env_for(wd, nvml=NVML_OLD))
    eq(p.returncode, 0, "exit code: %s" % p.stderr)
    out = json.loads(p.stdout)
    eq(len(out["gpus"]), 2, "two GPUs through the old entry points")
    check("mem_used" in out["gpus"][0]["supported"], "memory through GetMemoryInfo v1")
    check("throttle_reasons" in out["gpus"][0]["supported"], "throttle through the old name")


def test_missing_symbols(wd):
    # a library without two entry points: those metrics off, the rest works
    nosyms = os.path.join(FAKES, "libnvidia-ml-nosyms.so")
    p = jobscope("gpus", "--json", env=env_for(wd, nvml=nosyms))
    eq(p.returncode, 0, "exit code: %s" % p.stderr)
    g0 = json.loads(p.stdout)["gpus"][0]
    check("power" not in g0["supported"], "no power without nvmlDeviceGetPowerUsage: %r"
          % g0["supported"])
    check("temperature" not in g0["supported"], "no temperature: %r" % g0["supported"])
    for metric in ("util", "mem_used", "energy", "pcie", "process_memory"):
        check(metric in g0["supported"], "%s still there: %r" % (metric, g0["supported"]))
    eq(g0["power_limit_mw"], 400000, "the power limit comes from another entry point")


def test_driver_not_loaded(wd):
    # no NVIDIA GPU here: a fact, not a warning (tests/integration/test_gpu_quiet.py)
    p = jobscope("gpus", "--json", env=env_for(wd, nvml=NVML, scenario="init_error 9\n"))
    eq(p.returncode, 0, "jobscope goes on without GPUs")
    eq(json.loads(p.stdout)["gpus"], [], "no GPUs")
    eq(json.loads(p.stdout)["vendors"][0]["state"], "no_gpu", "NVIDIA's state")
    eq(p.stderr, "", "no warning")


def test_driver_fails(wd):
    p = jobscope("gpus", "--json", env=env_for(wd, nvml=NVML, scenario="init_error 18\n"))
    eq(p.returncode, 0, "jobscope goes on without GPUs")
    eq(json.loads(p.stdout)["gpus"], [], "no GPUs")
    warnings = [l for l in p.stderr.splitlines() if "warning" in l]
    eq(len(warnings), 1, "exactly one warning: %r" % p.stderr)
    check("NVML/RM version mismatch. (18)" in warnings[0], warnings[0])
    eq(json.loads(p.stdout)["vendors"][0]["state"], "failed", "NVIDIA's state")


H100_MIG = """
driver 580.65.06
device 0 uuid=GPU-aaaa name="NVIDIA H100 80GB HBM3" bus=00000000:07:00.0 mem_total=85899345920 gpm=1
device 1 uuid=GPU-bbbb name="NVIDIA H100 80GB HBM3" bus=00000000:0F:00.0 mem_total=85899345920 gpm=1 gpm_ids=1,2,3,5,10
device 2 uuid=GPU-cccc name="NVIDIA A100-SXM4-80GB" bus=00000000:17:00.0 mem_total=85899345920
unsupported 2 viol_fields remap
mig 0 gi=1 ci=0 profile=1g.10gb uuid=MIG-aaaa-1 mem_total=10200547328
mig 0 gi=5 ci=0 profile=3g.40gb uuid=MIG-aaaa-5 mem_total=40802189312
"""

GPM_ALL = ["gr_active", "sm_active", "sm_occupancy", "tensor_active", "dfma_tensor_active",
           "hmma_tensor_active", "imma_tensor_active", "dram_active", "fp64_active",
           "fp32_active", "fp16_active"]
# the eight reasons nvmlDeviceGetViolationStatus gives, then the three only the fields give
THROTTLE_OLD = ["throttle_power", "throttle_thermal", "throttle_sync_boost",
                "throttle_board_limit", "throttle_low_util", "throttle_reliability",
                "throttle_app_clocks", "throttle_base_clocks"]
THROTTLE_ALL = THROTTLE_OLD + ["throttle_sw_thermal", "throttle_hw_thermal",
                               "throttle_hw_power_brake"]


def test_profiling_and_mig(wd):
    """GPM and throttle metrics per device; a MIG GPU followed by its MIG devices."""
    p = jobscope("gpus", "--json", env=env_for(wd, nvml=NVML, scenario=H100_MIG))
    eq(p.returncode, 0, "exit code: %s" % p.stderr)
    gpus = json.loads(p.stdout)["gpus"]
    nv = [v for v in json.loads(p.stdout)["vendors"] if v["vendor"] == "NVIDIA"][0]
    eq((nv["gpu_count"], nv["mig_device_count"]), (3, 2), "GPUs and MIG devices counted apart")
    check(nv["summary"].endswith(": 3 GPUs, 2 MIG devices"), "summary %r" % nv["summary"])
    text = jobscope("gpus", env=env_for(wd, nvml=NVML, scenario=H100_MIG)).stdout
    check(": 3 GPUs, 2 MIG devices" in text.splitlines()[0], "the text's first line %r" % text)
    eq([(g["index"], g["uuid"], g["mig"]) for g in gpus],
       [(0, "GPU-aaaa", False), (0, "MIG-aaaa-1", True), (0, "MIG-aaaa-5", True),
        (1, "GPU-bbbb", False), (2, "GPU-cccc", False)], "each MIG device after its GPU")
    g0, m1, m5, g1, g2 = gpus
    # in MIG mode: no utilization and no processes of its own; remapped rows NOT_SUPPORTED
    eq((g0["mig_mode"], g0["mig_devices"]), (True, 2), "GPU 0 in MIG mode")
    eq(g0["profiling"], GPM_ALL + THROTTLE_ALL + ["pcie_replays"], "GPU 0's profiling")
    check("util" not in g0["supported"] and "process_memory" not in g0["supported"],
          g0["supported"])
    eq([(m["mig_parent"], m["mig_parent_uuid"], m["gpu_instance_id"],
         m["compute_instance_id"], m["mig_profile"], m["mem_total_bytes"], m["name"],
         m["pci_bus_id"]) for m in (m1, m5)],
       [(0, "GPU-aaaa", 1, 0, "1g.10gb", 10200547328, "NVIDIA H100 80GB HBM3 MIG 1g.10gb",
         "00000000:07:00.0"),
        (0, "GPU-aaaa", 5, 0, "3g.40gb", 40802189312, "NVIDIA H100 80GB HBM3 MIG 3g.40gb",
         "00000000:07:00.0")], "the MIG devices")
    eq(m1["supported"], ["mem_used", "process_memory"], "a MIG device's metrics")
    eq(m1["profiling"], GPM_ALL, "GPM per GPU instance")
    # GPU 1 gives five GPM metrics; which ones is known from its first two samples, so
    # `gpus` (which takes none) lists every GPM metric while the driver says GPM works
    eq((g1["mig_mode"], g1["mig_devices"]), (False, 0), "GPU 1 not in MIG mode")
    eq(g1["profiling"], GPM_ALL + THROTTLE_ALL + ["pcie_replays", "remapped_rows"],
       "GPU 1's profiling")
    # no GPM, the fields refused: the old call's eight reasons, no remapped rows
    eq(g2["profiling"], THROTTLE_OLD + ["pcie_replays"], "GPU 2's profiling")

    p = jobscope("gpus", env=env_for(wd, nvml=NVML, scenario=H100_MIG))
    eq(p.returncode, 0, "exit code: %s" % p.stderr)
    check("GPU 0 MIG 1g.10gb (GPU instance 1, compute instance 0)  "
          "NVIDIA H100 80GB HBM3 MIG 1g.10gb  MIG-aaaa-1" in p.stdout, p.stdout)
    check("  MIG mode: 2 MIG devices follow\n" in p.stdout, p.stdout)
    check("  profiling: " + " ".join(THROTTLE_OLD + ["pcie_replays"]) + "\n" in p.stdout,
          p.stdout)


def test_amd_gpus(wd):
    scenario = ("driver 5.2.3\ndevice 0 uuid=0x1234abcd name=\"AMD Instinct MI250X\" "
                "bus=0000:c1:00.0 mem_total=68702699520\n")
    p = jobscope("gpus", "--json", env=env_for(wd, rocm=ROCM, scenario=scenario))
    eq(p.returncode, 0, "exit code: %s" % p.stderr)
    out = json.loads(p.stdout)
    eq([lib["backend"] for lib in out["libraries"]], ["rocm"], "libraries")
    eq(len(out["gpus"]), 1, "one GPU")
    eq(out["gpus"][0]["name"], "AMD Instinct MI250X", "name")
    eq(out["gpus"][0]["mem_total_bytes"], 68702699520, "memory")


if __name__ == "__main__":
    run_tests(globals())
