"""Quiet when nothing is wrong: the GPU libraries on a machine without their GPUs.

Both fakes in their `no_gpu` mode behave like the real libraries there
(tests/fakes/scenario.h): fake ROCm SMI's rsmi_init prints the real
library's two lines on stderr and returns INIT_ERROR (this machine has no
amdgpu driver: /sys/module/amdgpu is absent), fake NVML's nvmlInit_v2
returns DRIVER_NOT_LOADED.  `jobscope run`, `jobscope gpus` and `jobscope
agent` must print neither that chatter nor a warning; --verbose shows it at
debug level; `jobscope gpus` states the fact per vendor; a library that
truly fails still warns, with what it printed.
"""
import json
import os
import subprocess
import sys

from harness import jobscope, run, run_tests, check, eq, wait_for, scaled
from agent_harness import Agent

FAKES = os.environ.get("FAKES", "")
NVML = os.path.join(FAKES, "libnvidia-ml.so.1")
ROCM = os.path.join(FAKES, "librocm_smi64.so.1")

# what the real librocm_smi64 writes on a machine without an AMD GPU
CHATTER = ["Failed to open drm root directory /sys/class/drm.: No such file or directory",
           "Exception caught: rsmi_init."]
SAID = " | ".join(CHATTER)


def gpu_env(wd, scenario="no_gpu\n"):
    path = wd.join("scenario.scn")
    with open(path, "w") as f:
        f.write(scenario)
    env = dict(os.environ)
    env.update({"JOBSCOPE_NVML_LIBRARY": NVML, "JOBSCOPE_ROCM_SMI_LIBRARY": ROCM,
                "FAKE_GPU_SCENARIO": path})
    return env


def no_gpu_chatter(text, what):
    for needle in ["Failed to open drm", "Exception caught", "rsmi_init", "warning",
                   "ROCm", "NVIDIA", "AMD", "Driver Not Loaded"]:
        check(needle not in text, "%s: %r in %r" % (what, needle, text))


def test_fake_really_chatters(wd):
    # the test means something only if the fake does print: run it bare
    code = ("import ctypes, sys; lib = ctypes.CDLL(%r); "
            "sys.exit(lib.rsmi_init(ctypes.c_uint64(0)))" % ROCM)
    env = gpu_env(wd)
    # a sanitized build's fake needs its runtime first in python too (python's
    # own leaks are not the fake's)
    ldd = subprocess.run(["ldd", ROCM], capture_output=True, text=True).stdout
    runtimes = [l.split("=>")[1].split()[0] for l in ldd.splitlines()
                if "=>" in l and ("libasan" in l or "libubsan" in l)]
    if runtimes:
        env.update(LD_PRELOAD=":".join(runtimes), ASAN_OPTIONS="detect_leaks=0")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    eq(p.returncode, 8, "rsmi_init's answer: RSMI_STATUS_INIT_ERROR")
    eq(p.stderr.splitlines(), CHATTER, "the real library's lines")
    eq(p.stdout, "", "nothing on stdout")


def test_run_is_quiet(wd):
    r = run(wd, ["true"], env=gpu_env(wd))
    eq(r.rc, 0, "exit code: %s" % r.stderr)
    eq(r.stderr, "", "jobscope run -- true says nothing")
    eq(r.report["gpus"], [], "no GPUs")
    eq(r.report["processes"][0]["gpu_mem_peak_bytes"], None, "unknown, not 0")


def test_run_verbose_shows_chatter(wd):
    env = gpu_env(wd)
    db = wd.join("store.db")
    p = jobscope("--verbose", "run", "--db", db, "--report", "json", "--report-file",
                 wd.join("r.json"), "--", "true", env=env)
    eq(p.returncode, 0, "exit code: %s" % p.stderr)
    lines = p.stderr.splitlines()
    check("jobscope: debug: rocm: the library said: " + SAID in lines, p.stderr)
    check("jobscope: debug: NVIDIA: %s found, no driver loaded: no NVIDIA GPU "
          "(nvmlInit: Driver Not Loaded, 9)" % NVML in lines, p.stderr)
    check(any(l.startswith("jobscope: debug: AMD: %s found, no amdgpu driver loaded: no AMD GPU "
                           "(rsmi_init: RSMI_STATUS_INIT_ERROR" % ROCM) for l in lines), p.stderr)
    check(not any("warning" in l for l in lines), "no warning: %r" % p.stderr)
    # the raw chatter never reaches the terminal, not even with --verbose
    check(not any(l in CHATTER for l in lines), "raw lines: %r" % p.stderr)


def test_gpus_states_the_fact(wd):
    p = jobscope("gpus", env=gpu_env(wd))
    eq(p.returncode, 0, "exit code")
    eq(p.stderr, "", "nothing on stderr")
    eq(p.stdout.splitlines(),
       ["no GPUs found",
        "NVIDIA: %s found, no driver loaded: no NVIDIA GPU" % NVML,
        "AMD: %s found, no amdgpu driver loaded: no AMD GPU" % ROCM], "the text")
    p = jobscope("gpus", "--json", env=gpu_env(wd))
    eq(p.stderr, "", "nothing on stderr (JSON)")
    out = json.loads(p.stdout)
    eq((out["libraries"], out["gpus"]), ([], []), "nothing opened")
    eq([(v["vendor"], v["library"], v["state"], v["gpu_count"], v["detail"]) for v in out["vendors"]],
       [("NVIDIA", NVML, "no_gpu", 0, "no driver loaded: no NVIDIA GPU"),
        ("AMD", ROCM, "no_gpu", 0, "no amdgpu driver loaded: no AMD GPU")], "vendors")
    eq(out["vendors"][1]["summary"], "%s found, no amdgpu driver loaded: no AMD GPU" % ROCM,
       "the text line")
    # --verbose, the command's own option: the chatter at debug level, stdout unchanged
    p = jobscope("gpus", "--verbose", env=gpu_env(wd))
    check("jobscope: debug: rocm: the library said: " + SAID in p.stderr.splitlines(), p.stderr)
    check("no amdgpu driver loaded: no AMD GPU" in p.stdout, p.stdout)


def test_gpus_zero_devices(wd):
    # libraries that start and count no device: "no GPU" too, no warning
    p = jobscope("gpus", env=gpu_env(wd, scenario="driver 5.2.3\n"))
    eq(p.stderr, "", "nothing on stderr")
    eq(p.stdout.splitlines()[1:], ["NVIDIA: %s found, no NVIDIA GPU" % NVML,
                                   "AMD: %s found, no AMD GPU" % ROCM], "the text")


def test_agent_is_quiet(wd):
    agent = Agent(wd, interval="100ms", env=gpu_env(wd))
    try:
        wait_for(lambda: agent.ticks() >= 2, timeout=15, what="two ticks")
        eq(agent.json("/api/v1/node").get("gpus", []), [], "no GPUs")
    finally:
        agent.proc.terminate()
        agent.proc.wait(timeout=scaled(15))
    text = agent.stderr()
    check("listening on 127.0.0.1:" in text, text)
    no_gpu_chatter(text, "the agent's stderr")


def test_failing_library_still_warns(wd):
    # ROCm: an init error that is not "no device" (a permission problem), with its chatter
    scenario = 'init_say "open /dev/kfd: Permission denied"\ninit_error 4\n'
    p = jobscope("gpus", env=gpu_env(wd, scenario))
    eq(p.returncode, 0, "jobscope goes on")
    warnings = [l for l in p.stderr.splitlines() if "warning" in l]
    eq(len(warnings), 2, "one warning per library: %r" % p.stderr)
    rocm = [w for w in warnings if "ROCm" in w][0]
    check("cannot initialise ROCm SMI ('%s'): RSMI_STATUS_PERMISSION" % ROCM in rocm, rocm)
    check(rocm.endswith("; it said: open /dev/kfd: Permission denied"), rocm)
    nvml = [w for w in warnings if "NVIDIA" in w][0]
    check(nvml.endswith("; it said: open /dev/kfd: Permission denied"), nvml)
    check("Permission denied" not in p.stderr.replace(rocm, "").replace(nvml, ""),
          "the chatter only inside the warnings: %r" % p.stderr)
    check("AMD: %s found, cannot start: RSMI_STATUS_PERMISSION" % ROCM in p.stdout, p.stdout)
    # `jobscope run` warns the same way
    r = run(wd, ["true"], env=gpu_env(wd, scenario))
    eq(r.rc, 0, "the run goes on")
    eq(len([l for l in r.stderr.splitlines() if "warning" in l]), 2, r.stderr)
    check("; it said: open /dev/kfd: Permission denied" in r.stderr, r.stderr)


if __name__ == "__main__":
    run_tests(globals())
