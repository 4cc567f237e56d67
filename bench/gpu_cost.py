#!/usr/bin/env python3
"""gpu_cost.py - GPU sampling cost per tick with the fake NVML and ROCm SMI.

Three measurements, all with the fake vendor libraries of tests/fakes (built
by the build, in build/tests/fakes/):

1. bench-gpu-cost (bench/gpu_cost.c) per library and per processes-per-device
   count: CPU per tick of what `jobscope run` does for GPUs each tick (every
   device sampled, its processes listed, events polled), library calls per
   tick, and the CPU of a replay of exactly those library calls made directly
   on the library; jobscope's own share = total - replay.  Many short rounds,
   the two loops alternating; medians.
2. callgrind (if valgrind is installed): the same two loops counted in
   instructions, which are exact where CPU time is noisy; shows that the
   library executes the same instructions in both loops, gives jobscope's own
   instructions per tick and the functions they are spent in.
3. end to end: `jobscope run --interval 100ms --report json -- js-busy --sleep S`
   with no GPU library and with the fake NVML at D x P, alternating; sampler
   CPU per sample from the report, and with the start-up left out (a run of
   --sleep 0 gives the start-up's CPU); with valgrind, where the difference
   goes, in instructions per tick by function.

Usage: bench/gpu_cost.py [--devices 8] [--nvml-procs 0,50,125] [--rocm-procs 0,50]
           [--rounds 41] [--loop-ms 100] [--e2e-procs 50] [--e2e-reps 3]
           [--e2e-seconds 10] [--no-callgrind] [--json F] [--markdown F] [--summary F]
Run from the repository root after bench/run-all.sh has built build/bench-gpu-cost
(`bash bench/run-all.sh --only gpu` builds it, then runs this).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH = "build/bench-gpu-cost"
JOBSCOPE = "build/jobscope"
BUSY = "build/tests/js-busy"
FAKES = "build/tests/fakes"
LIBS = {"nvml": f"{FAKES}/libnvidia-ml.so.1", "rocm": f"{FAKES}/librocm_smi64.so.1"}
LIB_VARS = {"nvml": "JOBSCOPE_NVML_LIBRARY", "rocm": "JOBSCOPE_ROCM_SMI_LIBRARY"}
NAMES = {"nvml": "fake NVML", "rocm": "fake ROCm SMI"}
TARGET_US = 1000.0  # jobscope's own CPU per tick, library excluded
# bench-gpu-cost's functions that stand for jobscope's
OWN_LABELS = {"jobscope_tick": "sample_gpus' loop"}


def scenario(vendor, ndev, nproc):
    """Every metric on every device, NVLink and GPM on (NVML: a Hopper), nproc processes per device."""
    lines = [f"# {vendor}: {ndev} devices x {nproc} processes, everything supported",
             "driver 535.104.05" if vendor == "nvml" else "driver 6.1.2"]
    for d in range(ndev):
        if vendor == "nvml":
            lines.append(f"device {d} mem_total=85899345920 power_limit=400000 nvlinks=12 gpm=1")
        else:
            lines.append(f"device {d} uuid=0x{0x1000 + d:x} bus=0000:{d + 3:02x}:00.0 "
                         "mem_total=68719476736")
    for d in range(ndev):
        lines.append(f"at 0 {d} util=50 mem_util=30 mem_used=10737418240 pcie_tx_kbps=1000 "
                     "pcie_rx_kbps=2000 nvlink_tx_kib=100 nvlink_rx_kib=200 power=250000 "
                     "energy=1000 temp=60 sm_clock=1400 mem_clock=1500 throttle=0 "
                     "ecc_sbe=0 ecc_dbe=0" +
                     (" sm_active=61.5 sm_occupancy=40 tensor=25 dfma=0 hmma=25 imma=0 dram=33"
                      " fp64=0 fp32=45 fp16=10 gr_active=70 viol_power=0.5 pcie_replay=0"
                      " remapped_corr=0 remapped_unc=0" if vendor == "nvml" else ""))
    for d in range(ndev):
        for i in range(nproc):
            lines.append(f"proc {d} pid={100000 + d * nproc + i} mem=1073741824 sm=10 memutil=5")
    return "\n".join(lines) + "\n"


def env_for(vendor, scn):
    """Only the library asked for (the other one: a path that is not there)."""
    env = dict(os.environ)
    env.pop("FAKE_GPU_SCENARIO", None)
    for v, var in LIB_VARS.items():
        env[var] = os.path.abspath(LIBS[v]) if v == vendor else "/nonexistent"
    if scn:
        env["FAKE_GPU_SCENARIO"] = scn
    return env


def env_prefix(vendor, scn):
    parts = []
    for v, var in LIB_VARS.items():
        parts.append(f"{var}={LIBS[v] if v == vendor else '/nonexistent'}")
    if scn:
        parts.insert(0, f"FAKE_GPU_SCENARIO={scn}")
    return " ".join(parts)


def run(argv, env, what):
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"gpu_cost: {what}: {shlex.join(argv)} exited {p.returncode}:\n"
                 f"{p.stderr[-2000:]}{p.stdout[-2000:]}")
    return p


def host_busy_s():
    v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def children_cpu_s():
    t = os.times()
    return t.children_user + t.children_system


def quartiles(v):
    if len(v) < 4:
        return min(v), max(v)
    q = statistics.quantiles(v, n=4)
    return q[0], q[2]


# ---- 1. bench-gpu-cost ----

def bench_row(vendor, ndev, nproc, args, tmp, commands):
    scn = os.path.join(tmp, f"{vendor}-{ndev}x{nproc}.scn")
    with open(scn, "w") as f:
        f.write(scenario(vendor, ndev, nproc))
    env = env_for(vendor, scn)
    out = os.path.join(tmp, f"{vendor}-{ndev}x{nproc}.json")
    # calibrate: ticks per loop so that one loop takes about --loop-ms
    run([BENCH, "--backend", vendor, "--ticks", "5", "--rounds", "1", "--warmup", "5",
         "--json", out], env, "calibration")
    per_tick_ns = statistics.median(json.load(open(out))["total_cpu_ns"])
    ticks = max(3, min(5000, int(args.loop_ms * 1e6 / max(per_tick_ns, 1))))
    argv = [BENCH, "--backend", vendor, "--ticks", str(ticks), "--rounds", str(args.rounds),
            "--warmup", "20", "--json", out]
    commands.append((nproc, f"{env_prefix(vendor, '$TMP/' + os.path.basename(scn))} "
                     f"{shlex.join(argv)}".replace(out, f"$TMP/{os.path.basename(out)}")))
    p = run(argv, env, f"{vendor} {ndev}x{nproc}")
    print(p.stdout.splitlines()[0], flush=True)
    print(p.stdout.splitlines()[-1], flush=True)
    r = json.load(open(out))
    us = {k: [x / 1000 for x in r[k]] for k in
          ("total_cpu_ns", "total_wall_ns", "library_cpu_ns", "own_cpu_ns")}
    row = {"vendor": vendor, "devices": ndev, "procs_per_device": nproc, "scenario": scn,
           "ticks_per_round": ticks, "rounds": args.rounds, "raw": r,
           "calls_per_tick": r["calls_per_tick"], "procs_per_tick": r["procs_per_tick"],
           "total_us": statistics.median(us["total_cpu_ns"]),
           "wall_us": statistics.median(us["total_wall_ns"]),
           "library_us": statistics.median(us["library_cpu_ns"]),
           "own_us": statistics.median(us["own_cpu_ns"]),
           "own_us_iqr": quartiles(us["own_cpu_ns"])}
    if args.callgrind:
        row["callgrind"] = callgrind_row(vendor, env, scn, per_tick_ns, tmp,
                                         commands, nproc)
    return row


# ---- 2. callgrind ----

ANNOTATE_LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*?)\s+\[(.*)\]\s*$")


def annotate(path, inclusive=False):
    """{(function, object): Ir} of a callgrind output file (exclusive, or inclusive), total."""
    p = subprocess.run(["callgrind_annotate", "--threshold=100",
                        f"--inclusive={'yes' if inclusive else 'no'}", path],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    funcs, total = {}, None
    for line in p.stdout.splitlines():
        if "PROGRAM TOTALS" in line:
            total = int(line.split()[0].replace(",", ""))
            continue
        m = ANNOTATE_LINE.match(line)
        if m:
            fn = m.group(2).split(":", 1)[-1]
            key = (fn, os.path.basename(m.group(3)))
            funcs[key] = funcs.get(key, 0) + int(m.group(1).replace(",", ""))
    if total is None:
        sys.exit(f"gpu_cost: no totals in {path}")
    return funcs, total


def callgrind_row(vendor, env, scn, per_tick_ns, tmp, commands, tag):
    """Instructions per tick of the jobscope loop and of the replay loop."""
    ticks = max(3, min(200, int(50e6 / max(per_tick_ns, 1))))
    res = {"ticks": ticks}
    lib = os.path.basename(LIBS[vendor])
    bench = os.path.basename(BENCH)
    for mode in ("jobscope", "replay"):
        out = os.path.join(tmp, f"callgrind-{vendor}-{mode}.out")
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                "--collect-atstart=no", f"--toggle-collect=bench_{mode}_ticks",
                BENCH, "--backend", vendor, "--mode", mode, "--ticks", str(ticks),
                "--warmup", "2"]
        commands.append((tag, f"{env_prefix(vendor, '$TMP/' + os.path.basename(scn))} "
                         f"{shlex.join(argv)}".replace(out, f"$TMP/{os.path.basename(out)}")))
        run(argv, env, f"callgrind {vendor} {mode}")
        funcs, total = annotate(out)
        res[mode] = {"total": total,
                     "library": sum(v for (f, o), v in funcs.items() if o == lib),
                     "bench_object": sum(v for (f, o), v in funcs.items() if o == bench),
                     "funcs": funcs}
    js, rp = res["jobscope"], res["replay"]
    # the replay's own code (its loop, argument set-up) is not the library's
    res["library_ir"] = (rp["total"] - rp["bench_object"]) / ticks
    res["own_ir"] = (js["total"] - rp["total"] + rp["bench_object"]) / ticks
    res["total_ir"] = js["total"] / ticks
    res["library_object_ratio"] = js["library"] / rp["library"] if rp["library"] else None
    # where jobscope's own instructions go: what the jobscope loop runs beyond the replay
    delta = {}
    for key in set(js["funcs"]) | set(rp["funcs"]):
        f, o = key
        if o == bench and (f.startswith("bench_") or "replay" in f):
            continue
        d = js["funcs"].get(key, 0) - (rp["funcs"].get(key, 0) if o != bench else 0)
        if d > 0:
            delta[f"{f} [{o}]"] = d / ticks
    res["own_top"] = sorted(delta.items(), key=lambda kv: -kv[1])[:8]
    libtop = {f"{f}": v / ticks for (f, o), v in rp["funcs"].items() if o == lib}
    res["library_top"] = sorted(libtop.items(), key=lambda kv: -kv[1])[:5]
    for mode in ("jobscope", "replay"):
        del res[mode]["funcs"]
    print(f"callgrind {vendor}: {res['total_ir']:.0f} Ir/tick, library {res['library_ir']:.0f}, "
          f"jobscope's own {res['own_ir']:.0f} (library object jobscope/replay "
          f"{res['library_object_ratio']:.6f})", flush=True)
    return res


# ---- 3. end to end ----

def store_bytes(db):
    return sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p))


def e2e(args, tmp, commands):
    ndev, nproc = args.devices, args.e2e_procs
    scn = os.path.join(tmp, f"e2e-nvml-{ndev}x{nproc}.scn")
    with open(scn, "w") as f:
        f.write(scenario("nvml", ndev, nproc))
    sides = {"none": env_for(None, None), "nvml": env_for("nvml", scn)}
    res = {s: {"cpu_s": [], "samples": [], "start_cpu_s": [], "start_samples": [],
               "store_bytes": []} for s in sides}
    order = []
    for i in range(args.e2e_reps):
        order += ["none", "nvml"] if i % 2 == 0 else ["nvml", "none"]
    k = 0
    for side in order:
        for sleep in (args.e2e_seconds, 0):
            k += 1
            db = os.path.join(tmp, f"e2e-{k}.db")
            rep = os.path.join(tmp, f"e2e-{k}.json")
            argv = [JOBSCOPE, "run", "--interval", "100ms", "--report", "json",
                    "--report-file", rep, "--db", db, "--", BUSY, "--sleep", f"{sleep:g}"]
            if k <= 4:  # one of each kind
                pre = (env_prefix("nvml", "$TMP/" + os.path.basename(scn)) if side == "nvml"
                       else env_prefix(None, None))
                commands.append(("e2e", f"{pre} {shlex.join(argv)}"
                                 .replace(rep, "$TMP/report.json").replace(db, "$TMP/store.db")))
            run(argv, sides[side], f"end to end ({side})")
            s = json.load(open(rep))["sampler"]
            r = res[side]
            if sleep:
                r["cpu_s"].append(s["cpu_seconds"])
                r["samples"].append(s["samples"])
                r["store_bytes"].append(store_bytes(db))
            else:
                r["start_cpu_s"].append(s["cpu_seconds"])
                r["start_samples"].append(s["samples"])
        print(f"end to end {side}: {res[side]['cpu_s'][-1]:.3f} s CPU, "
              f"{res[side]['samples'][-1]} samples", flush=True)
    for side, r in res.items():
        per = [c / n for c, n in zip(r["cpu_s"], r["samples"])]
        marg = [(c - c0) / (n - n0) for c, n, c0, n0 in
                zip(r["cpu_s"], r["samples"], r["start_cpu_s"], r["start_samples"])]
        r["ms_per_tick"] = statistics.median(per) * 1000
        r["ms_per_tick_no_start"] = statistics.median(marg) * 1000
        r["start_ms"] = statistics.median(r["start_cpu_s"]) * 1000
        r["store_kib_per_tick"] = statistics.median(
            b / n for b, n in zip(r["store_bytes"], r["samples"])) / 1024
    return {"devices": ndev, "procs_per_device": nproc, "order": order, "sides": res}


E2E_FUNCS = [  # where a tick of `jobscope run` goes, inclusive instructions
    ("tick", "the whole tick"),
    ("store_put_gpu_proc", "store: GPU process rows"),
    ("store_put_gpu_sample", "store: GPU sample rows"),
    ("store_tick_commit", "store: the tick's commit"),
    ("sample_gpus", "sample_gpus (library and backend)"),
    ("summary_add_gpu_proc", "summary: GPU processes"),
    ("summary_add_gpu", "summary: GPUs"),
    ("ptree_scan", "process tree scan"),
]


def e2e_callgrind(args, tmp, commands):
    """Instructions per tick of `jobscope run`, by function, with and without the GPUs."""
    scn = os.path.join(tmp, f"e2e-nvml-{args.devices}x{args.e2e_procs}.scn")
    res = {}
    for side, env in (("none", env_for(None, None)), ("nvml", env_for("nvml", scn))):
        out = os.path.join(tmp, f"callgrind-run-{side}.out")
        rep = os.path.join(tmp, f"callgrind-run-{side}.json")
        db = os.path.join(tmp, f"callgrind-run-{side}.db")
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", JOBSCOPE, "run",
                "--interval", "100ms", "--report", "json", "--report-file", rep, "--db", db,
                "--", BUSY, "--sleep", "3"]
        pre = (env_prefix("nvml", "$TMP/" + os.path.basename(scn)) if side == "nvml"
               else env_prefix(None, None))
        commands.append(("e2e", f"{pre} {shlex.join(argv)}".replace(out, "$TMP/callgrind.out")
                         .replace(rep, "$TMP/report.json").replace(db, "$TMP/store.db")))
        run(argv, env, f"callgrind of jobscope run ({side})")
        samples = json.load(open(rep))["sampler"]["samples"]
        funcs, _ = annotate(out, inclusive=True)
        by = {}
        for (f, o), v in funcs.items():
            if o == os.path.basename(JOBSCOPE):
                by[f] = max(by.get(f, 0), v)
        res[side] = {"samples": samples,
                     "per_tick": {f: by.get(f, 0) / samples for f, _ in E2E_FUNCS}}
    print(f"callgrind jobscope run: tick {res['none']['per_tick']['tick']:.0f} Ir without GPUs, "
          f"{res['nvml']['per_tick']['tick']:.0f} with", flush=True)
    return res


# ---- report ----

def markdown(rows, ee, args, commands, other_load, took):
    L = [f"Command: `{shlex.join(['python3'] + sys.argv)}` (took {took:.0f} s; load from "
         f"other processes meanwhile: {other_load:.2f} cores)", "",
         "Scenario: every metric supported on every device, NVLink on (12 links, read with "
         "one all-links field query), NVML's GPM on (a Hopper: 11 activity metrics in one "
         "MetricsGet, the violation counters and the PCIe replay counter in one field query, "
         "remapped rows), P processes per device with memory and utilization "
         "(pids 100000+, not running: the tick lists them but matches none to the job's "
         "tree); no events due.  The fakes are the build's, build/tests/fakes/.", "",
         "### Per tick: jobscope's GPU sampling vs the library calls alone", "",
         "`total` is the CPU of one tick of sample_gpus() (every device: gpu_set_sample, "
         "processes; every library: events); `library` the CPU of the same library calls "
         "replayed directly on the library; `own` = total − library, the median over "
         f"{args.rounds} alternating rounds (interquartile range in brackets).  "
         "Instructions from callgrind: jobscope's own = the tick's instructions minus the "
         "replay's library instructions.", "",
         "| library | devices × processes | library calls / tick | total µs / tick | "
         "library µs / tick | **own µs / tick** | own instructions / tick | "
         "target: own < 1 ms |",
         "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cg = r.get("callgrind")
        lo, hi = r["own_us_iqr"]
        ir = f"{cg['own_ir'] / 1000:.0f} k of {cg['total_ir'] / 1000:.0f} k" if cg else "–"
        ok = "met" if r["own_us"] < TARGET_US else "**missed**"
        L.append(f"| {NAMES[r['vendor']]} | {r['devices']} × {r['procs_per_device']} | "
                 f"{r['calls_per_tick']:.0f} | {r['total_us']:.1f} | {r['library_us']:.1f} | "
                 f"**{r['own_us']:.1f}** [{lo:.1f}, {hi:.1f}] | {ir} | {ok} |")
    L += [""]
    main = [r for r in rows if r["procs_per_device"] == args.e2e_procs and r.get("callgrind")]
    # how fast jobscope's own code runs where it can be timed apart from the library
    ref = next((r for r in main if r["vendor"] == "nvml" and r["own_us"] > 0), None)
    rate = ref["callgrind"]["own_ir"] / ref["own_us"] if ref else None
    for r in main:
        cg = r["callgrind"]
        own = ", ".join(f"{OWN_LABELS.get(f.split(' [')[0], f.split(' [')[0])} "
                        f"{v / 1000:.1f} k" for f, v in cg["own_top"][:6])
        lib = ", ".join(f"{f} {v / 1000:.0f} k" for f, v in cg["library_top"][:4])
        L.append(f"- {NAMES[r['vendor']]}, {r['devices']} × {r['procs_per_device']}: "
                 f"jobscope's own instructions per tick go to {own}; the library's to {lib}.  "
                 f"The library runs {cg['library_object_ratio']:.4f} × the replay's "
                 f"instructions in its own code when jobscope calls it (1: the replay does "
                 f"the same work).  {r['ticks_per_round']} ticks per round, "
                 f"{cg['ticks']} under callgrind.")
        share = r["library_us"] / r["total_us"] if r["total_us"] else 0
        if rate and r is not ref and share > 0.9:
            lo, hi = r["own_us_iqr"]
            L.append(f"  The library is {share * 100:.1f} % of this tick, so the timed "
                     f"difference is noisy (median {r['own_us']:.1f} µs, IQR [{lo:.1f}, "
                     f"{hi:.1f}]); the instruction count is exact: {cg['own_ir'] / 1000:.0f} k "
                     f"instructions are about {cg['own_ir'] / rate:.0f} µs at the rate "
                     f"jobscope's own code runs in the {NAMES[ref['vendor']]} row "
                     f"({rate:.0f} instructions per µs).")
    L += ["", f"### End to end: `jobscope run` with and without the fake NVML "
              f"({ee['devices']} × {ee['procs_per_device']})", "",
          f"`jobscope run --interval 100ms --report json -- js-busy --sleep "
          f"{args.e2e_seconds:g}`, {args.e2e_reps} runs of each side alternating; medians.  "
          "Sampler CPU is the report's sampler.cpu_seconds (jobscope's getrusage at the "
          "end, in ms); `start-up left out` subtracts a run of `--sleep 0` (start, "
          "open the store and the libraries, two ticks, end) and divides by the "
          "remaining samples.", "",
          "| | samples | sampler CPU (s) | ms / tick (cpu_seconds / samples) | "
          "ms / tick, start-up left out | start-up (ms) | store growth (KiB / tick) |",
          "|---|---|---|---|---|---|---|"]
    sd = ee["sides"]
    for side, label in (("none", "no GPU library"),
                        ("nvml", f"fake NVML, {ee['devices']} × {ee['procs_per_device']}")):
        r = sd[side]
        L.append(f"| {label} | {statistics.median(r['samples']):.0f} | "
                 f"{statistics.median(r['cpu_s']):.3f} | {r['ms_per_tick']:.2f} | "
                 f"{r['ms_per_tick_no_start']:.2f} | {r['start_ms']:.0f} | "
                 f"{r['store_kib_per_tick']:.1f} |")
    d1 = sd["nvml"]["ms_per_tick"] - sd["none"]["ms_per_tick"]
    d2 = sd["nvml"]["ms_per_tick_no_start"] - sd["none"]["ms_per_tick_no_start"]
    L.append(f"| **difference: the GPUs' full cost** | | | **{d1:.2f}** | **{d2:.2f}** | "
             f"{sd['nvml']['start_ms'] - sd['none']['start_ms']:.0f} | "
             f"{sd['nvml']['store_kib_per_tick'] - sd['none']['store_kib_per_tick']:.1f} |")
    lib = next((r["library_us"] for r in rows if r["vendor"] == "nvml"
                and r["procs_per_device"] == ee["procs_per_device"]), None)
    if lib is not None:
        L += ["", f"Of the difference, about {lib / 1000:.2f} ms per tick is spent inside the "
              f"library (the replay figure above), so jobscope's own share of the GPUs' full "
              f"cost, store included, is about {d1 - lib / 1000:.2f} ms per tick "
              f"({d2 - lib / 1000:.2f} with the start-up left out)."]
    cg = ee.get("callgrind")
    if cg:
        n, g = cg["none"]["per_tick"], cg["nvml"]["per_tick"]
        L += ["", "Where the difference goes, in instructions per tick (callgrind, inclusive, "
              "`jobscope run` as above with `--sleep 3`; the run's start and end are in "
              "neither):", "",
              "| | no GPU library | fake NVML | difference |", "|---|---|---|---|"]
        for f, label in E2E_FUNCS:
            L.append(f"| {label} (`{f}`) | {n[f] / 1000:.0f} k | {g[f] / 1000:.0f} k | "
                     f"{(g[f] - n[f]) / 1000:+.0f} k |")
    L += ["", "Runs (sampler CPU s / samples): " + "; ".join(
        f"{side} " + ", ".join(f"{c:.3f}/{n}" for c, n in zip(sd[side]['cpu_s'],
                                                              sd[side]['samples']))
        for side in ("none", "nvml")), "",
        f"Commands of the {args.devices} × {args.e2e_procs} rows and of the end-to-end runs "
        "($TMP is a temporary directory; gpu_cost.py writes the scenario files there, see "
        "scenario() in it; the other rows differ only in the scenario and --ticks, all "
        "commands are in the JSON):", "", "```"]
    L += [c for tag, c in commands if tag in (args.e2e_procs, "e2e")] + ["```"]
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--nvml-procs", default="0,50,125",
                    help="processes per device for the fake NVML, one row each")
    ap.add_argument("--rocm-procs", default="0,50",
                    help="the same for the fake ROCm SMI (whose cost grows as the square)")
    ap.add_argument("--e2e-procs", type=int, default=50, help="processes per device, end to end")
    ap.add_argument("--rounds", type=int, default=41, help="alternating rounds per row")
    ap.add_argument("--loop-ms", type=float, default=100, help="CPU of one loop of a round")
    ap.add_argument("--e2e-reps", type=int, default=3)
    ap.add_argument("--e2e-seconds", type=float, default=10)
    ap.add_argument("--no-callgrind", dest="callgrind", action="store_false")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--summary", help="write the rows for RESULTS.md's summary table here")
    args = ap.parse_args()
    procs = {v: [int(x) for x in getattr(args, f"{v}_procs").split(",") if x]
             for v in ("nvml", "rocm")}
    for exe in (BENCH, JOBSCOPE, BUSY, *LIBS.values()):
        if not os.path.exists(exe):
            sys.exit(f"gpu_cost: {exe} is missing: run `bash bench/run-all.sh --only gpu`")
    if args.callgrind and not shutil.which("valgrind"):
        print("gpu_cost: no valgrind: instruction counts left out", file=sys.stderr)
        args.callgrind = False

    t0, h0, c0 = time.monotonic(), host_busy_s(), children_cpu_s()
    commands = []
    with tempfile.TemporaryDirectory(prefix="jobscope-gpu-bench-") as tmp:
        rows = [bench_row(v, args.devices, p, args, tmp, commands)
                for v in ("nvml", "rocm") for p in procs[v]]
        ee = e2e(args, tmp, commands)
        if args.callgrind:
            ee["callgrind"] = e2e_callgrind(args, tmp, commands)
    took = time.monotonic() - t0
    other_load = max(0.0, (host_busy_s() - h0 - (children_cpu_s() - c0)) / took)

    md = markdown(rows, ee, args, commands, other_load, took)
    print()
    print(md)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "rows": rows, "e2e": ee, "commands": commands,
                       "other_load_cores": other_load, "took_s": took}, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md)
    if args.summary:
        with open(args.summary, "w") as f:
            f.write(summary_rows(rows, ee, args))


def summary_rows(rows, ee, args):
    """Rows of the summary table of RESULTS.md: | benchmark | measured | target | |."""
    L = []
    main = [r for r in rows if r["procs_per_device"] == args.e2e_procs]
    for r in main:
        ok = "met" if r["own_us"] < TARGET_US else "**missed**"
        cg = r.get("callgrind")
        ir = f"; {cg['own_ir'] / 1000:.0f} k instructions" if cg else ""
        L.append(f"| GPU CPU per tick without the library's, {NAMES[r['vendor']]} "
                 f"{r['devices']}×{r['procs_per_device']} | {r['own_us']:.0f} µs "
                 f"(total {r['total_us']:.0f} µs{ir}) | < 1 ms | {ok} |")
    if main:
        calls = " / ".join(f"{r['calls_per_tick']:.0f}" for r in main)
        names = " / ".join(NAMES[r["vendor"]] for r in main)
        L.append(f"| GPU library calls per tick, {names} | {calls} | (reported) | |")
    sd = ee["sides"]
    d = sd["nvml"]["ms_per_tick"] - sd["none"]["ms_per_tick"]
    lib = next((r["library_us"] for r in rows if r["vendor"] == "nvml"
                and r["procs_per_device"] == ee["procs_per_device"]), None)
    note = f" ({lib / 1000:.2f} of it in the library)" if lib is not None else ""
    L.append(f"| `jobscope run` 100 ms, sampler CPU per tick: fake NVML "
             f"{ee['devices']}×{ee['procs_per_device']} − no GPU (store included) | "
             f"+{d:.2f} ms{note} | (reported) | |")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
