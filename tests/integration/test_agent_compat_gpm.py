"""What the SMs did, on the agent's /metrics: jobscope's own families and the
--compat dcgm,jobstats series, from the fake NVML library's GPM, violation
counters, PCIe replays, remapped rows and MIG instances (tests/fakes).

The scenario (written here, the figures of issue 33): GPU 0 and GPU 1 read
SM active 61.5 %, occupancy 40 %, tensor 25 % (HMMA 25, DFMA and IMMA 0),
DRAM 33 %, FP64 0, FP32 45 %, FP16 10 %, graphics engine 70 %, and are held
back by power half of the time (viol_power=0.5: the counter grows 0.5 s per
s); GPU 2 is in MIG mode with two instances (GPU instances 1 and 2) of their
own GPM figures; GPU 3 has no GPM (`unsupported 3 gpm`) though its `at` line
gives GPM values.  Job 4301 has GPU 0 to itself; jobs 4302 and 4303 share
GPU 1 at SM 30 % and 60 % (memory 1 and 2 GiB: the same 1:2 whichever the
split goes by), so each gets a third and two thirds of GPU 1's activity;
job 4304 runs on MIG instance 1 of GPU 2.  The minor numbers (4..7) differ
from the indices: dcgm-exporter's `device` is "nvidia" and the index (its
DCGM GPU id), the jobstats exporter's minor_number the minor number.

What is checked comes from the scenario (the percent figures, /100 for the
ratios the peers write), from the exporters' code (names, labels, units:
docs/compat.md says where) and, for the violation counter, from the time the
test measures: the agent's tick timestamps and its own tick durations bound
when the driver was read.  The exposition is parsed strictly (parse_expo)
and given to promtool when the machine has it.
"""
import os
import re
import time

from agent_harness import Agent, env_with, spawn
from harness import check, eq, helper, run_tests, stop, tail, wait_for
from test_agent_prometheus import promtool_check

FAKES = os.environ.get("FAKES", "")
NVML = os.path.join(FAKES, "libnvidia-ml.so.1")
GiB = 1 << 30
DRIVER = "580.65.06"
H100 = "NVIDIA H100 80GB HBM3"
UUID = ["GPU-0a0a0a0a-1111-2222-3333-444444444444", "GPU-1b1b1b1b-1111-2222-3333-444444444444",
        "GPU-2c2c2c2c-1111-2222-3333-444444444444", "GPU-3d3d3d3d-1111-2222-3333-444444444444"]
BUS = ["00000000:19:00.0", "00000000:3B:00.0", "00000000:4C:00.0", "00000000:5D:00.0"]
MIG1 = "MIG-aaaa1111-1111-2222-3333-444444444444"
MIG2 = "MIG-bbbb2222-1111-2222-3333-444444444444"
# the scenario's GPM figures, percent
GPM = {"sm_active": 61.5, "sm_occupancy": 40, "tensor": 25, "dfma": 0, "hmma": 25, "imma": 0,
       "dram": 33, "fp64": 0, "fp32": 45, "fp16": 10, "gr_active": 70}
MIG1_GPM = {"sm_active": 20, "sm_occupancy": 10, "tensor": 5, "dfma": 0, "hmma": 5, "imma": 0,
            "dram": 12, "fp64": 0, "fp32": 8, "fp16": 0, "gr_active": 30}
VIOL_POWER = 0.5  # of each second, the power violation counter's growth


def gpm_words(v):
    return " ".join("%s=%s" % kv for kv in sorted(v.items()))


SCENARIO = """driver {driver}
device 0 uuid={u0} name="{h100}" bus={b0} mem_total=85899345920 minor=4 gpm=1
device 1 uuid={u1} name="{h100}" bus={b1} mem_total=85899345920 minor=5 gpm=1
device 2 uuid={u2} name="{h100}" bus={b2} mem_total=85899345920 minor=6 gpm=1
device 3 uuid={u3} name="NVIDIA A100-SXM4-80GB" bus={b3} mem_total=85899345920 minor=7
unsupported 3 gpm
mig 2 gi=1 ci=0 profile=1g.10gb uuid={m1} mem_total=10200547328
mig 2 gi=2 ci=0 profile=3g.40gb uuid={m2} mem_total=42949672960
at 0 0 util=80 mem_used=2147483648 power=300000 temp=50 {gpm} viol_power={vp} viol_thermal=0 pcie_replay=7 remapped_corr=2 remapped_unc=1 remap_pending=0 remap_failed=0
at 0 1 util=90 mem_used=3221225472 power=350000 temp=55 {gpm} viol_power={vp} viol_thermal=0
at 0 2 power=200000 temp=45
at 0 2/1 mem_used=1073741824 {mig1}
at 0 2/2 mem_used=0 sm_active=0 sm_occupancy=0 tensor=0 dram=0 fp32=0 gr_active=0
at 0 3 util=50 mem_used=0 power=100000 temp=40 {gpm}
proc 0 pid=file:{a} mem=2147483648 sm=60
proc 1 pid=file:{b} mem=1073741824 sm=30
proc 1 pid=file:{c} mem=2147483648 sm=60
proc 2/1 pid=file:{d} mem=1073741824 sm=40
"""

# ---- a strict reader of the text format 0.0.4 ----

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL_NAME = r"[a-zA-Z_][a-zA-Z0-9_]*"


def parse_labels(text, line):
    """{name: value} of a label set's inside, refusing anything the format does not allow."""
    out, i = {}, 0
    while i < len(text):
        m = re.compile(LABEL_NAME + '="').match(text, i)
        check(m, "bad label at %d in %r" % (i, line))
        name = m.group(0)[:-2]
        i = m.end()
        value = []
        while True:
            check(i < len(text), "unterminated label value in %r" % line)
            c = text[i]
            if c == "\\":
                esc = text[i + 1:i + 2]
                check(esc in ("\\", '"', "n"), "bad escape \\%s in %r" % (esc, line))
                value.append("\n" if esc == "n" else esc)
                i += 2
            elif c == '"':
                i += 1
                break
            else:
                check(c != "\n", "newline in a label value: %r" % line)
                value.append(c)
                i += 1
        check(name not in out, "label %s twice in %r" % (name, line))
        out[name] = "".join(value)
        if i < len(text):
            check(text[i] == ",", "no comma after a label in %r" % line)
            i += 1
            check(i < len(text), "a trailing comma in %r" % line)
    return out


def parse_expo(body):
    """(samples {(name, frozenset(labels)): float}, families {name: (type, help)}) of a
    /metrics body: every family's HELP and TYPE once, before its samples, its samples
    together, no sample twice, every value a number."""
    samples, fams, done, cur = {}, {}, set(), None
    check(body.endswith("\n"), "the body ends with a newline")
    for line in body[:-1].split("\n"):
        check(line, "an empty line in the body")
        if line.startswith("# HELP "):
            name, _, text = line[7:].partition(" ")
            check(re.fullmatch(NAME, name), "HELP of a bad name: %r" % line)
            check(name not in fams and name not in done, "family %s twice" % name)
            if cur:
                done.add(cur)
            cur = name
            fams[name] = [None, text]
            continue
        if line.startswith("# TYPE "):
            name, _, typ = line[7:].partition(" ")
            check(name == cur and fams[name][0] is None, "TYPE %r not after its HELP" % line)
            check(typ in ("counter", "gauge", "summary", "histogram", "untyped"),
                  "type %r" % line)
            fams[name][0] = typ
            continue
        check(not line.startswith("#"), "a comment that is no HELP or TYPE: %r" % line)
        m = re.fullmatch(r"(%s)(?:\{(.*)\})? (\S+)" % NAME, line)
        check(m, "not a sample line: %r" % line)
        name, labels, value = m.group(1), parse_labels(m.group(2) or "", line), m.group(3)
        base = cur
        if cur and fams[cur][0] in ("summary", "histogram"):
            base = re.sub(r"_(sum|count|bucket)$", "", name)
        check(cur is not None and fams[cur][0] is not None and (name == cur or base == cur),
              "sample %r outside its family (now %s)" % (line, cur))
        key = (name, frozenset(labels.items()))
        check(key not in samples, "sample twice: %r" % line)
        try:
            samples[key] = float(value)
        except ValueError:
            raise AssertionError("not a number: %r" % line)
    return samples, {n: tuple(v) for n, v in fams.items()}


def series(samples, name, without=(), **want):
    """{frozenset(labels): value} of name's samples whose labels include want and
    have none of the names in without."""
    return {labels: v for (n, labels), v in samples.items()
            if n == name and all((k, str(x)) in labels for k, x in want.items())
            and not any(k in without for k, _v in labels)}


def one(samples, name, what, without=(), **want):
    """(labels dict, value) of the one sample of name with those labels."""
    found = series(samples, name, without, **want)
    eq(len(found), 1, "%s: one %s series with %r: %r" % (what, name, want, found))
    (labels, v), = found.items()
    return dict(labels), v


def near_exact(actual, expected, what):
    """Equal to the double nearest the figure, but for the %.15g the agent prints."""
    check(abs(actual - expected) <= 1e-12 * max(1.0, abs(expected)),
          "%s: %r, expected %r" % (what, actual, expected))


def spawn_job(wd, name, env):
    pid_file = wd.join(name + ".pid")
    cmd = 'echo $$ > "%s"; exec "%s" --sleep 120' % (pid_file, helper("busy"))
    return spawn(["sh", "-c", cmd], env=env), pid_file


def view(agent):
    """(samples, families, node, tick) of one tick's view: /metrics and /api/v1/node
    answered from the same rendered view (the same tick count)."""
    def same():
        node = agent.json("/api/v1/node")
        body = agent.get("/metrics")
        samples, fams = parse_expo(body)
        ticks = samples.get(("jobscope_agent_ticks_total", frozenset()))
        return (samples, fams, node, body) if ticks == node["agent"]["ticks"] else None
    return wait_for(same, timeout=20, what="/metrics and /api/v1/node of the same tick")


def test_gpm_violations_mig_compat(wd):
    if not os.path.exists(NVML):
        raise AssertionError("no fake NVML at %r ($FAKES)" % NVML)
    pids = {n: wd.join(n + ".pid") for n in "abcd"}
    scn = wd.join("gpus.scn")
    with open(scn, "w") as f:
        f.write(SCENARIO.format(driver=DRIVER, h100=H100, u0=UUID[0], u1=UUID[1], u2=UUID[2],
                                u3=UUID[3], b0=BUS[0], b1=BUS[1], b2=BUS[2], b3=BUS[3],
                                m1=MIG1, m2=MIG2, gpm=gpm_words(GPM), mig1=gpm_words(MIG1_GPM),
                                vp=VIOL_POWER, **pids))
    gpu_env = {"JOBSCOPE_NVML_LIBRARY": NVML, "JOBSCOPE_ROCM_SMI_LIBRARY": "/nonexistent",
               "FAKE_GPU_SCENARIO": scn}
    jobs, agent = [], None
    launched = time.time()
    try:
        agent = Agent(wd, interval="250ms", env=env_with(**gpu_env),
                      extra=("--compat", "dcgm,jobstats"))
        listening = time.time()  # the library was loaded and initialised before this
        for name, job, extra in (("a", 4301, {"SLURM_JOB_GPUS": "0"}),
                                 ("b", 4302, {"SLURM_JOB_GPUS": "1"}),
                                 ("c", 4303, {"SLURM_JOB_GPUS": "1"}),
                                 ("d", 4304, {"CUDA_VISIBLE_DEVICES": MIG1})):
            env = env_with(SLURM_JOB_ID=job, SLURM_CPUS_ON_NODE=1, SLURM_MEM_PER_NODE=64,
                           **extra)
            jobs.append(spawn_job(wd, name, env)[0])

        # every job's process on its device (/api/v1/gpus lists the jobs there now)
        # and GPM figures read; then two more ticks, so that the window the figures
        # and the processes' utilization samples cover has all of them throughout
        where = {UUID[0]: ["4301"], UUID[1]: ["4302", "4303"], MIG1: ["4304"]}

        def all_there():
            on = {g["uuid"]: sorted(k.split(":")[1] for k in g["jobs"])
                  for g in agent.json("/api/v1/gpus")["gpus"]}
            samples, _f, _n, _b = view(agent)
            return (all(on.get(u) == j for u, j in where.items()) and
                    series(samples, "DCGM_FI_PROF_SM_ACTIVE", GPU_I_ID=1) and
                    series(samples, "DCGM_FI_PROF_SM_ACTIVE", gpu=0)) or None
        wait_for(all_there, timeout=30, what="each job on its GPU, and GPM figures")
        agent.wait_ticks(2)
        first = view(agent)
        time.sleep(2.0)
        second = view(agent)
        gpus = agent.json("/api/v1/gpus")["gpus"]
    except BaseException:
        if agent is not None:
            print("--- agent log (tail) ---\n%s" % tail(agent.log))
        raise
    finally:
        for p in jobs:
            stop(p)
        rc = agent.stop() if agent else None
    eq(rc, 0, "the agent's exit code on SIGTERM")

    samples, fams, node, body = first
    host = node["node"]
    # promtool parses the body (0: clean, 3: parsed with lint findings: the peers'
    # names, camelCase labels and counters without _total, are what they are)
    res = promtool_check(body)
    if res is None:
        print("SKIP: promtool is not installed: /metrics not checked by it")
    else:
        check(res[0] in (0, 3), "promtool check metrics: rc %d\n%s" % res)
        print("promtool check metrics: rc %d, %d lint findings"
              % (res[0], len(res[1].splitlines())))
    uid = str(os.getuid())

    # ---- dcgm-exporter: labels, ratios, one job's GPU, a shared one, MIG ----
    labels, v = one(samples, "DCGM_FI_PROF_SM_ACTIVE", "GPU 0", gpu=0)
    eq(labels, {"gpu": "0", "UUID": UUID[0], "pci_bus_id": BUS[0], "device": "nvidia0",
                "modelName": H100, "Hostname": host, "DCGM_FI_DRIVER_VERSION": DRIVER,
                "hpc_job": "4301"}, "dcgm-exporter's labels of job 4301's GPU")
    eq(v, 0.615, "DCGM_FI_PROF_SM_ACTIVE of GPU 0 (61.5 %)")
    dcgm = {"DCGM_FI_PROF_SM_ACTIVE": "sm_active", "DCGM_FI_PROF_SM_OCCUPANCY": "sm_occupancy",
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "tensor", "DCGM_FI_PROF_DRAM_ACTIVE": "dram",
            "DCGM_FI_PROF_PIPE_FP64_ACTIVE": "fp64", "DCGM_FI_PROF_PIPE_FP32_ACTIVE": "fp32",
            "DCGM_FI_PROF_PIPE_FP16_ACTIVE": "fp16", "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gr_active",
            "DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE": "hmma",
            "DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE": "dfma",
            "DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE": "imma"}
    for fam, key in dcgm.items():
        eq(fams[fam][0], "gauge", "%s's type" % fam)
        _l, v = one(samples, fam, "GPU 0", gpu=0, hpc_job=4301)
        near_exact(v, GPM[key] / 100.0, "%s of GPU 0" % fam)
        # the shared GPU 1: the device's own series, then each job's part
        _l, v = one(samples, fam, "GPU 1", without=("hpc_job",), gpu=1)
        near_exact(v, GPM[key] / 100.0, "%s of GPU 1, the device" % fam)
        for job, part in (("4302", 1 / 3), ("4303", 2 / 3)):
            _l, v = one(samples, fam, "job %s on GPU 1" % job, gpu=1, hpc_job=job)
            near_exact(v, part * GPM[key] / 100.0, "%s: job %s's part of GPU 1" % (fam, job))
        # a GPU without GPM has none of them, not 0
        eq(series(samples, fam, gpu=3), {}, "%s of GPU 3 (no GPM)" % fam)
    eq(one(samples, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "GPU 0", gpu=0)[1], 0.25,
       "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE of GPU 0 (25 %)")
    device_series = [dict(l) for l in series(samples, "DCGM_FI_PROF_SM_ACTIVE", gpu=1)]
    eq(sorted(d.get("hpc_job", "") for d in device_series), ["", "4302", "4303"],
       "GPU 1's series: the device's without a job, and each job's")
    eq(one(samples, "DCGM_FI_DEV_GPU_UTIL", "GPU 3", gpu=3)[1], 50.0,
       "GPU 3's other series are there (DCGM_FI_DEV_GPU_UTIL)")

    # MIG: the parent's gpu, UUID, pci_bus_id, device and modelName, the instance's
    # GPU_I_PROFILE and GPU_I_ID (dcgm-exporter's toMetric)
    labels, v = one(samples, "DCGM_FI_PROF_SM_ACTIVE", "MIG 2/1", GPU_I_ID=1)
    eq(labels, {"gpu": "2", "UUID": UUID[2], "pci_bus_id": BUS[2], "device": "nvidia2",
                "modelName": H100, "GPU_I_PROFILE": "1g.10gb", "GPU_I_ID": "1",
                "Hostname": host, "DCGM_FI_DRIVER_VERSION": DRIVER, "hpc_job": "4304"},
       "dcgm-exporter's labels of a MIG instance")
    near_exact(v, 0.20, "DCGM_FI_PROF_SM_ACTIVE of MIG instance 1 (its own 20 %)")
    near_exact(one(samples, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "MIG 2/1", GPU_I_ID=1)[1], 0.05,
               "tensor of MIG instance 1")
    labels, v = one(samples, "DCGM_FI_PROF_SM_ACTIVE", "MIG 2/2", GPU_I_ID=2)
    eq((labels["GPU_I_PROFILE"], "hpc_job" in labels, v), ("3g.40gb", False, 0.0),
       "MIG instance 2: its profile, no job, SM active 0")
    eq(one(samples, "DCGM_FI_DEV_FB_USED", "MIG 2/1", GPU_I_ID=1)[1], 1024.0,
       "DCGM_FI_DEV_FB_USED of MIG instance 1, MiB")

    # violations (ns), replays, remapped rows: dcgm-exporter's fields and units
    eq(fams["DCGM_FI_DEV_POWER_VIOLATION"][0], "counter", "DCGM_FI_DEV_POWER_VIOLATION's type")
    check("(in ns)" in fams["DCGM_FI_DEV_POWER_VIOLATION"][1], "its HELP says ns")
    eq(one(samples, "DCGM_FI_DEV_THERMAL_VIOLATION", "GPU 0", gpu=0)[1], 0.0,
       "thermal violation of GPU 0: none")
    for fam, want in (("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 7.0),
                      ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", 2.0),
                      ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 1.0),
                      ("DCGM_FI_DEV_ROW_REMAP_FAILURE", 0.0)):
        eq(one(samples, fam, "GPU 0", gpu=0)[1], want, "%s of GPU 0" % fam)

    # ---- jobstats' exporter: its GPM series, ratios under _percent names ----
    nv = {"nvidia_gpu_sm_util_percent": "sm_active",
          "nvidia_gpu_sm_occupancy_percent": "sm_occupancy",
          "nvidia_gpu_any_tensor_util_percent": "tensor",
          "nvidia_gpu_dram_bw_util_percent": "dram", "nvidia_gpu_fp64_util_percent": "fp64",
          "nvidia_gpu_fp32_util_percent": "fp32", "nvidia_gpu_fp16_util_percent": "fp16",
          "nvidia_gpu_graphics_util_percent": "gr_active"}
    for fam, key in nv.items():
        labels, v = one(samples, fam, "GPU 0", uuid=UUID[0])
        eq(labels, {"ordinal": "0", "minor_number": "4", "uuid": UUID[0], "name": H100,
                    "GPU_I_ID": "", "jobid": "4301", "userid": uid},
           "the jobstats exporter's labels of %s" % fam)
        near_exact(v, GPM[key] / 100.0, "%s of GPU 0" % fam)
        near_exact(one(samples, fam, "GPU 1", uuid=UUID[1], jobid="")[1], GPM[key] / 100.0,
                   "%s of GPU 1, the device" % fam)
        for job, part in (("4302", 1 / 3), ("4303", 2 / 3)):
            near_exact(one(samples, fam, "job %s" % job, uuid=UUID[1], jobid=job)[1],
                       part * GPM[key] / 100.0, "%s: job %s's part of GPU 1" % (fam, job))
        eq(series(samples, fam, uuid=UUID[3]), {}, "%s of GPU 3 (no GPM)" % fam)
    mig_name = [g["name"] for g in gpus if g["uuid"] == MIG1]
    eq(len(mig_name), 1, "MIG instance 1 in /api/v1/gpus: %r" % gpus)
    labels, v = one(samples, "nvidia_gpu_sm_util_percent", "MIG 2/1", uuid=MIG1)
    eq(labels, {"ordinal": "2", "minor_number": "6", "uuid": MIG1, "name": mig_name[0],
                "GPU_I_ID": "1", "jobid": "4304", "userid": uid},
       "the jobstats exporter's labels of a MIG instance")
    near_exact(v, 0.20, "nvidia_gpu_sm_util_percent of MIG instance 1")
    eq(samples[("nvidia_gpu_num_devices", frozenset())], 4.0, "nvidia_gpu_num_devices: GPUs")
    for u in (UUID[2], MIG1, MIG2):
        eq(series(samples, "nvidia_gpu_duty_cycle", uuid=u), {},
           "no duty cycle for a GPU in MIG mode or its instances (%s)" % u)

    # ---- jobscope's own families: percent, per device and per job ----
    own = {"jobscope_gpu_sm_active_percent": "sm_active",
           "jobscope_gpu_sm_occupancy_percent": "sm_occupancy",
           "jobscope_gpu_tensor_active_percent": "tensor",
           "jobscope_gpu_dram_active_percent": "dram", "jobscope_gpu_fp64_active_percent": "fp64",
           "jobscope_gpu_fp32_active_percent": "fp32", "jobscope_gpu_fp16_active_percent": "fp16",
           "jobscope_gpu_graphics_active_percent": "gr_active",
           "jobscope_gpu_hmma_tensor_active_percent": "hmma"}
    for fam, key in own.items():
        labels, v = one(samples, fam, "GPU 0", uuid=UUID[0])
        eq(labels, {"gpu": "0", "uuid": UUID[0]}, "%s's labels" % fam)
        near_exact(v, GPM[key], "%s of GPU 0" % fam)
        eq(series(samples, fam, gpu=3), {}, "%s of GPU 3 (no GPM)" % fam)
        labels, v = one(samples, fam, "MIG 2/1", uuid=MIG1)
        eq(labels, {"gpu": "2", "uuid": MIG1, "gpu_instance_id": "1",
                    "compute_instance_id": "0", "mig_profile": "1g.10gb"},
           "%s's labels of a MIG instance" % fam)
        near_exact(v, MIG1_GPM[key], "%s of MIG instance 1" % fam)
        job_fam = fam.replace("jobscope_gpu_", "jobscope_job_gpu_")
        if key in ("dfma", "hmma", "imma"):
            continue
        for job, dev, part in (("4301", UUID[0], 1.0), ("4302", UUID[1], 1 / 3),
                               ("4303", UUID[1], 2 / 3)):
            near_exact(one(samples, job_fam, "job %s" % job, job_id=job, uuid=dev)[1],
                       part * GPM[key], "%s of job %s" % (job_fam, job))
        near_exact(one(samples, job_fam, "job 4304", job_id="4304", uuid=MIG1)[1],
                   MIG1_GPM[key], "%s of job 4304: its MIG slice's own" % job_fam)
    eq(fams["jobscope_gpu_throttle_seconds_total"][0], "counter", "throttle's type")
    for fam, labels, want in (("jobscope_gpu_pcie_replays_total", {}, 7.0),
                              ("jobscope_gpu_remapped_rows_total", {"error": "correctable"}, 2.0),
                              ("jobscope_gpu_remapped_rows_total", {"error": "uncorrectable"},
                               1.0),
                              ("jobscope_gpu_row_remap_pending", {}, 0.0),
                              ("jobscope_gpu_row_remap_failed", {}, 0.0)):
        eq(one(samples, fam, "GPU 0", uuid=UUID[0], **labels)[1], want, "%s of GPU 0" % fam)

    # ---- the power violation counter: the fake's integral over the agent's time ----
    # The fake's counter is VIOL_POWER x the seconds since the library's init, read
    # at the tick's GPU sampling: after the tick's timestamp ts, before ts plus the
    # tick's own duration (jobscope_agent_tick_duration_seconds of the same view).
    # The init came after the test launched the agent and before it was listening.
    readings = []
    for samples, _f, node, _b in (first, second):
        ts = node["ts_ms"] / 1000.0
        dur = samples[("jobscope_agent_tick_duration_seconds", frozenset())]
        _l, ns = one(samples, "DCGM_FI_DEV_POWER_VIOLATION", "GPU 0", gpu=0)
        _l, s = one(samples, "jobscope_gpu_throttle_seconds_total", "GPU 0", uuid=UUID[0],
                    reason="power")
        near_exact(s, ns / 1e9, "jobscope_gpu_throttle_seconds_total is DCGM's ns in seconds")
        since_init = ns / 1e9 / VIOL_POWER
        # (+1 ms: ts_ms is whole milliseconds)
        check(ts - listening <= since_init <= ts + 0.001 + dur - launched,
              "power violation %.6f s: %.6f s since the fake's init, which is in [%.3f, %.3f]"
              % (ns / 1e9, since_init, ts - listening, ts + dur - launched))
        readings.append((ts, dur, ns / 1e9))
    (ts1, d1, v1), (ts2, d2, v2) = readings
    check(ts2 - ts1 >= 1.5, "two views %.3f s apart" % (ts2 - ts1))
    # between two readings the counter grew VIOL_POWER x the time between the reads,
    # which is the time between the ticks give or take each read's place in its tick
    grown = (v2 - v1) / VIOL_POWER
    check(abs(grown - (ts2 - ts1)) <= d1 + d2 + 0.002,
          "the counter grew %.6f s of power violation over %.6f s of ticks (tolerance %.3f s:"
          " the two ticks' durations)" % (v2 - v1, ts2 - ts1, d1 + d2 + 0.002))


if __name__ == "__main__":
    run_tests(globals())
