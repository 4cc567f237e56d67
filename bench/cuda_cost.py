#!/usr/bin/env python3
"""cuda_cost.py - what the CUDA hook costs per activity record, on the fakes.

js-cuda-app's `bench kernels=N` launches N kernels (8 names, cycling) through
the fake libcuda; the fake libcupti writes one CONCURRENT_KERNEL record per
launch into the consumer's buffers, as CUPTI does.  The same program runs
three ways, alternating, and prints its own time per kernel:

  bare   no injection: the fake driver's loop alone (no records are made);
  floor  bench/cuda_floor.c: CUPTI's least consumer (records read, summed, dropped);
  hook   libjobscope-cuda.so under `jobscope run --cuda` (records aggregated,
         snapshots sent to jobscope at each full buffer, interval and exit).

hook - floor is the hook's own cost per record (the aggregation, the name
lookup, the snapshots); floor - bare is the fake's cost of making and handing
over a record, which the real CUPTI replaces with its own.  On a real GPU the
comparison that matters is a training step's wall time with and without the
hook (docs/gpu.md); here, the hook's cost per record is also shown as a
share of a kernel of 5 us, 20 us and 100 us (a training step's kernels mostly
lie in that range): what it would add to a step made of such kernels if the
GPU waited on it.

Time on a shared 2-core machine is noisy, so (with valgrind installed) the
consumers are also counted in instructions with callgrind: the instructions
executed inside each consumer's library, at two record counts, the
difference divided by the extra records = its exact cost per record, for
kernel records (`bench kernels=N`) and for API records (`x N api runtime
cudaLaunchKernel_v7000`, one array slot per callback id).

Usage: bench/cuda_cost.py [--kernels 2000000] [--rounds 7] [--no-callgrind] [--json F]
           [--markdown F]
Run from the repository root with an optimized build in build/.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

JOBSCOPE = "build/jobscope"
APP = "build/tests/js-cuda-app"
CUPTI = "build/tests/fakes/libcupti.so"
HOOK = "build/libjobscope-cuda.so"
FLOOR = "build/bench-cuda-floor.so"


def build_floor():
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-Isrc",
                    "-o", FLOOR, "bench/cuda_floor.c", "-ldl"], check=True)


def one(mode, scenario, tmp):
    env = dict(os.environ)
    env.pop("CUDA_INJECTION64_PATH", None)
    env["JOBSCOPE_CUPTI_LIBRARY"] = os.path.abspath(CUPTI)
    env["LD_LIBRARY_PATH"] = os.path.abspath("build/tests/fakes")
    cmd = [APP, scenario]
    if mode == "floor":
        env["CUDA_INJECTION64_PATH"] = os.path.abspath(FLOOR)
    elif mode == "hook":
        env["JOBSCOPE_CUDA_HOOK"] = os.path.abspath(HOOK)
        cmd = [JOBSCOPE, "run", "--cuda", "--report", "none", "--db",
               os.path.join(tmp, "bench.db"), "--"] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    m = re.search(r"bench: (\d+) kernels in (\d+) ns", out.stdout)
    if not m:
        sys.exit("no bench line from js-cuda-app (%s): %s %s" % (mode, out.stdout, out.stderr))
    return int(m.group(2)) / int(m.group(1))


RECEIVER = r"""
import os, socket, struct, sys, threading
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
print('ready', flush=True)
def serve(c):
    c.sendall(struct.pack('<I', 8) + b'on\t1000\n')
    while c.recv(1 << 20): pass
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


def instructions(lib, scenario, sock):
    """Instructions executed inside lib (callgrind), the program running scenario."""
    out = scenario + ".cg"
    env = dict(os.environ)
    env.update({"JOBSCOPE_CUPTI_LIBRARY": os.path.abspath(CUPTI),
                "LD_LIBRARY_PATH": os.path.abspath("build/tests/fakes"),
                "CUDA_INJECTION64_PATH": os.path.abspath(lib), "JOBSCOPE_CUDA_SOCKET": sock})
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, APP,
                    scenario], env=env, capture_output=True, check=True)
    ann = subprocess.run(["callgrind_annotate", "--threshold=100", out], capture_output=True,
                         text=True, check=True).stdout
    total = 0
    for line in ann.splitlines():
        m = re.match(r"\s*([\d,]+)\s.*\[(.*)\]\s*$", line)
        if m and os.path.basename(m.group(2)) == os.path.basename(lib):
            total += int(m.group(1).replace(",", ""))
    return total


def callgrind(tmp):
    """{(consumer, kind): instructions per record}, from two record counts."""
    sock = os.path.join(tmp, "recv.sock")
    recv = subprocess.Popen([sys.executable, "-c", RECEIVER, sock], stdout=subprocess.PIPE,
                            text=True)
    recv.stdout.readline()
    res = {}
    try:
        for kind, line in (("kernel", "bench kernels=%d"),
                           ("api", "x %d api runtime cudaLaunchKernel_v7000 dur=1000")):
            counts = {}
            for n in (50000, 150000):
                scn = os.path.join(tmp, "cg-%s-%d" % (kind, n))
                with open(scn, "w") as f:
                    f.write("init\nctx\n" + line % n + "\nexit code=0\n")
                for name, lib in (("hook", HOOK), ("floor", FLOOR)):
                    counts[(name, n)] = instructions(lib, scn, sock)
            for name in ("hook", "floor"):
                res[(name, kind)] = (counts[(name, 150000)] - counts[(name, 50000)]) / 100000
    finally:
        recv.kill()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", type=int, default=2000000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    build_floor()
    ns = {"bare": [], "floor": [], "hook": []}
    with tempfile.TemporaryDirectory(prefix="jobscope-cuda-bench-") as tmp:
        scenario = os.path.join(tmp, "scn")
        with open(scenario, "w") as f:
            f.write("init\nctx\nbench kernels=%d\nexit code=0\n" % a.kernels)
        for _ in range(a.rounds):
            for mode in ns:
                ns[mode].append(one(mode, scenario, tmp))
        cg = None
        if not a.no_callgrind and shutil.which("valgrind"):
            cg = callgrind(tmp)
    med = {k: statistics.median(v) for k, v in ns.items()}
    hook_own = med["hook"] - med["floor"]
    res = {"kernels": a.kernels, "rounds": a.rounds, "ns_per_kernel": med,
           "hook_own_ns_per_record": hook_own,
           "hook_over_floor": med["hook"] / med["floor"],
           "share_of_kernel": {us: hook_own / (us * 1000) for us in (5, 20, 100)}}
    lines = [
        "| consumer | ns per kernel launch (median of %d) |" % a.rounds,
        "|---|---|",
        "| none (bare: the fake driver alone) | %.1f |" % med["bare"],
        "| floor (records read and dropped) | %.1f |" % med["floor"],
        "| libjobscope-cuda.so under `jobscope run --cuda` | %.1f |" % med["hook"],
        "",
        "The hook's own cost: **%.1f ns per record** (hook - floor); hook / floor = %.2f." % (
            hook_own, res["hook_over_floor"]),
        "As a share of a kernel's time: %.3f%% of a 5 us kernel, %.3f%% of 20 us, %.4f%% of 100 us." % (
            100 * res["share_of_kernel"][5], 100 * res["share_of_kernel"][20],
            100 * res["share_of_kernel"][100]),
    ]
    if cg:
        res["instructions_per_record"] = {"%s_%s" % k: v for k, v in cg.items()}
        lines += [
            "",
            "Instructions per record inside the consumer (callgrind, 150,000 - 50,000 records):",
            "",
            "| record | libjobscope-cuda.so | floor | hook - floor |",
            "|---|---|---|---|",
        ]
        for kind in ("kernel", "api"):
            lines.append("| %s | %.1f | %.1f | %.1f |" % (
                kind, cg[("hook", kind)], cg[("floor", kind)],
                cg[("hook", kind)] - cg[("floor", kind)]))
    print("\n".join(lines))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
