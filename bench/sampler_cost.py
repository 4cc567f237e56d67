#!/usr/bin/env python3
"""sampler_cost.py - CPU time per sampling tick: jobscope vs the floor vs pidstat.

For each process count N, `jobscope run` samples `js-sleepers --count N`
(N idle children).  Once they all exist, bench-floor (bare /proc reads, the
least any sampler can do) and `pidstat -u -r -d -p ALL 1` start beside it,
all three at the same interval.  After a settling period (so that first
sight of the N processes, the costly tick, is left out) each process's CPU
time is read at the start and end of one window W and divided by the ticks
in W.  Repeated --reps times; the medians are reported.

CPU time is read two ways, both from /proc/PID of the measured process:
  stat       utime+stime (fields 14, 15), in clock ticks (1/CLK_TCK s)
  schedstat  the first field, nanoseconds on a CPU (sum_exec_runtime)
The stat figures move in 10 ms steps, which over a 20-tick window is coarse
for a sampler that spends a few ms per tick; schedstat is exact (summed over
the threads; all three samplers are single-threaded today).

Usage: bench/sampler_cost.py [--counts 100,1000] [--reps 3] [--window 20]
           [--interval-ms 1000] [--no-pidstat] [--json F] [--markdown F]
Run from the repository root after `ninja -C build` and after building
build/bench-floor (bench/run-all.sh does both).
"""
import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
JOBSCOPE = "build/jobscope"
SLEEPERS = "build/tests/js-sleepers"
FLOOR = "build/bench-floor"
PIDSTAT_ARGS = ["-u", "-r", "-d", "-p", "ALL"]


def read_text(path):
    with open(path) as f:
        return f.read()


def stat_cpu_ticks(pid):
    """(utime, stime) of pid, in clock ticks."""
    text = read_text(f"/proc/{pid}/stat")
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)


def schedstat_ns(pid):
    """Nanoseconds on a CPU, summed over the threads of pid (live ones)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(read_text(f"/proc/{pid}/task/{tid}/schedstat").split()[0])
        except FileNotFoundError:
            pass
    return total


def status_kib(pid, key):
    for line in read_text(f"/proc/{pid}/status").splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return None


def host_cpu():
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    v = [int(x) for x in read_text("/proc/stat").splitlines()[0].split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    total = sum(v[:8])  # guest time is already in user
    return total - idle, total


def snapshot(pids):
    snap = {"t": time.monotonic(), "host": host_cpu()}
    for name, pid in pids.items():
        snap[name] = (stat_cpu_ticks(pid), schedstat_ns(pid))
    return snap


def wait_for_file(path, proc, deadline_s):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if os.path.exists(path):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.02)
    return False


def store_bytes(db):
    return sum(os.path.getsize(db + s) for s in ("", "-wal", "-shm") if os.path.exists(db + s))


def cmdline(argv):
    return shlex.join(str(a) for a in argv)


def measure(n, interval_ms, window_s, with_pidstat, tmp):
    """One run: start everything, measure one window, tear down."""
    interval_s = interval_ms / 1000.0
    settle_s = max(2.5, 2 * interval_s + 0.5)
    ticks = window_s / interval_s
    db = os.path.join(tmp, f"store-{n}-{interval_ms}.db")
    report = os.path.join(tmp, f"report-{n}-{interval_ms}.json")
    ready = os.path.join(tmp, f"ready-{n}-{interval_ms}")
    errlog = os.path.join(tmp, f"jobscope-{n}-{interval_ms}.err")
    for f in (db, db + "-wal", db + "-shm", report, ready):
        if os.path.exists(f):
            os.unlink(f)
    # The children start sleeping while the others are still being forked
    # (up to a second for 1000 on a busy machine): they must outlive the floor.
    floor_s = int(settle_s + window_s) + 1
    sleep_s = floor_s + 2
    interval_arg = f"{interval_ms}ms" if interval_ms % 1000 else f"{interval_ms // 1000}s"
    js_argv = [JOBSCOPE, "run", "--interval", interval_arg, "--report", "json",
               "--report-file", report, "--db", db, "--",
               SLEEPERS, "--count", n, "--seconds", f"{sleep_s:g}", "--ready-file", ready]
    env = dict(os.environ, LC_ALL="C")
    run = {"n": n, "interval_ms": interval_ms, "window_s": window_s, "ticks": ticks,
           "settle_s": settle_s}
    with open(errlog, "w") as err:
        js = subprocess.Popen([str(a) for a in js_argv], stdout=subprocess.DEVNULL,
                              stderr=err, env=env)
    others = []
    try:
        t_start = time.monotonic()
        if not wait_for_file(ready, js, 60):
            raise RuntimeError(f"js-sleepers never became ready; see {errlog}: "
                               + read_text(errlog)[-500:])
        run["fork_s"] = time.monotonic() - t_start
        floor_argv = [FLOOR, "--root", js.pid, "--interval-ms", interval_ms,
                      "--seconds", floor_s]
        floor = subprocess.Popen([str(a) for a in floor_argv], stdout=subprocess.PIPE,
                                 text=True)
        others.append(floor)
        pids = {"jobscope": js.pid, "floor": floor.pid}
        argvs = {"jobscope": cmdline(js_argv), "floor": cmdline(floor_argv)}
        if with_pidstat:
            ps_argv = ["pidstat"] + PIDSTAT_ARGS + [int(interval_s)]
            ps = subprocess.Popen([str(a) for a in ps_argv], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, env=env)
            others.append(ps)
            pids["pidstat"] = ps.pid
            argvs["pidstat"] = "LC_ALL=C " + cmdline(ps_argv) + " >/dev/null"
        run["argv"] = argvs

        time.sleep(settle_s)
        s0 = snapshot(pids)
        load0 = read_text("/proc/loadavg").split()[0]
        time.sleep(window_s)
        s1 = snapshot(pids)
        run["jobscope_hwm_kib"] = status_kib(js.pid, "VmHWM")
        run["jobscope_rss_kib"] = status_kib(js.pid, "VmRSS")
        run["loadavg1_start"] = float(load0)
        run["loadavg1_end"] = float(read_text("/proc/loadavg").split()[0])

        elapsed = s1["t"] - s0["t"]
        run["elapsed_s"] = elapsed
        ours_ns = 0
        for name in pids:
            d_user = s1[name][0][0] - s0[name][0][0]
            d_sys = s1[name][0][1] - s0[name][0][1]
            d_ns = s1[name][1] - s0[name][1]
            ours_ns += d_ns
            run[name] = {
                "stat_ms_per_tick": (d_user + d_sys) * 1000.0 / CLK_TCK / ticks,
                "stat_user_ms_per_tick": d_user * 1000.0 / CLK_TCK / ticks,
                "stat_sys_ms_per_tick": d_sys * 1000.0 / CLK_TCK / ticks,
                "stat_clock_ticks": d_user + d_sys,
                "sched_ms_per_tick": d_ns / 1e6 / ticks,
            }
        busy = (s1["host"][0] - s0["host"][0]) / CLK_TCK
        # cores kept busy by everything but the samplers (the sleepers sleep)
        run["other_load_cores"] = max(0.0, (busy - ours_ns / 1e9) / elapsed)
        run["host_busy_cores"] = busy / elapsed
        # pidstat runs until told; the floor ends by itself a second from now
        if with_pidstat:
            ps.send_signal(signal.SIGINT)
        outs = [p.communicate(timeout=30)[0] for p in others]
        js.wait(timeout=sleep_s + 60)
    finally:
        for p in others:
            if p.poll() is None:
                p.kill()
                p.wait()
        if js.poll() is None:
            js.terminate()  # passed on to js-sleepers, whose children follow it
            try:
                js.wait(timeout=15)
            except subprocess.TimeoutExpired:
                js.kill()
                js.wait()

    floor_out = (outs[0] or "").strip().splitlines()
    if floor_out:
        run["floor_summary"] = json.loads(floor_out[-1])
    run["jobscope_exit"] = js.returncode
    run["store_bytes"] = store_bytes(db)
    if os.path.exists(report):
        rep = json.loads(read_text(report))
        run["jobscope_samples"] = rep.get("sampler", {}).get("samples")
        run["jobscope_lost_samples"] = rep.get("sampler", {}).get("lost_samples")
        run["jobscope_processes"] = len(rep.get("processes", []))
    desc = run.get("floor_summary", {}).get("last_descendants")
    if desc is not None and desc != n + 1:
        print(f"warning: the floor saw {desc} descendants, expected {n + 1}",
              file=sys.stderr)
    for f in (db, db + "-wal", db + "-shm", report, ready):
        if os.path.exists(f):
            os.unlink(f)
    return run


def med(runs, *path):
    vals = []
    for r in runs:
        v = r
        for k in path:
            v = v[k]
        vals.append(v)
    return statistics.median(vals)


def summarize(runs, tools):
    """Median per tool and of the per-run (paired) ratios."""
    s = {}
    for t in tools:
        s[t] = {k: med(runs, t, k) for k in ("stat_ms_per_tick", "sched_ms_per_tick",
                                             "stat_user_ms_per_tick", "stat_sys_ms_per_tick")}
    for other in tools[1:]:
        for k in ("stat_ms_per_tick", "sched_ms_per_tick"):
            ratios = [r["jobscope"][k] / r[other][k] if r[other][k] > 0 else float("inf")
                      for r in runs]
            s.setdefault("ratio_" + other, {})[k] = statistics.median(ratios)
            s["ratio_" + other][k + "_all"] = ratios
    s["other_load_cores"] = [r["other_load_cores"] for r in runs]
    s["jobscope_hwm_kib"] = max(r["jobscope_hwm_kib"] for r in runs)
    s["store_bytes"] = statistics.median(r["store_bytes"] for r in runs)
    s["samples"] = statistics.median(r.get("jobscope_samples") or 0 for r in runs)
    return s


TARGETS = {"floor": 1.5, "pidstat": 0.33}


def verdict(ratio, target):
    return "met" if ratio <= target else "**missed**"


def markdown(args, results):
    lines = []
    tools = ["jobscope", "floor"] + ([] if args.no_pidstat else ["pidstat"])
    lines.append(f"Command: `{cmdline([sys.executable.split('/')[-1]] + sys.argv)}`")
    lines.append("")
    first = results[0]["runs"][0]["argv"]
    lines.append("Per run, side by side (N and the file names vary):")
    lines.append("")
    lines.append("```")
    for t in tools:
        lines.append(first[t])
    lines.append("```")
    lines.append("")
    lines.append(f"Interval {args.interval_ms} ms; window {args.window} s "
                 f"({args.window * 1000 / args.interval_ms:g} ticks) after "
                 f"{results[0]['runs'][0]['settle_s']:g} s of settling; {args.reps} runs per N; "
                 "medians.  CPU ms per tick from utime+stime in /proc/PID/stat "
                 "(10 ms steps) and from /proc/PID/schedstat (ns).")
    lines.append("")
    hdr = "| N procs | " + " | ".join(f"{t} ms/tick (stat / sched)" for t in tools)
    for o in tools[1:]:
        hdr += f" | jobscope/{o} (stat / sched)"
    lines.append(hdr + " |")
    lines.append("|---" * (1 + len(tools) + len(tools) - 1) + "|")
    for res in results:
        s = res["summary"]
        row = f"| {res['n']} | " + " | ".join(
            f"{s[t]['stat_ms_per_tick']:.2f} / {s[t]['sched_ms_per_tick']:.2f}" for t in tools)
        for o in tools[1:]:
            r = s["ratio_" + o]
            row += f" | {r['stat_ms_per_tick']:.2f} / {r['sched_ms_per_tick']:.2f}"
        lines.append(row + " |")
    lines.append("")
    lines.append("User / system split of the stat figures, ms per tick: " + "; ".join(
        f"N={res['n']}: " + ", ".join(
            f"{t} {res['summary'][t]['stat_user_ms_per_tick']:.2f} / "
            f"{res['summary'][t]['stat_sys_ms_per_tick']:.2f}" for t in tools)
        for res in results))
    lines.append("")
    lines.append("Per-run ratios (sched) and the load from other processes during each window "
                 "(cores kept busy by anything but the samplers):")
    lines.append("")
    for res in results:
        s = res["summary"]
        parts = []
        for o in tools[1:]:
            parts.append(f"jobscope/{o} " + ", ".join(
                f"{x:.2f}" for x in s["ratio_" + o]["sched_ms_per_tick_all"]))
        parts.append("other load " + ", ".join(f"{x:.2f}" for x in s["other_load_cores"]))
        parts.append("processes on the host " + ", ".join(
            str(r.get("floor_summary", {}).get("last_scanned", "?")) for r in res["runs"]))
        lines.append(f"- N={res['n']}: " + "; ".join(parts))
    lines.append("")
    lines.append("Targets (on the schedstat medians; stat in brackets):")
    lines.append("")
    for res in results:
        s = res["summary"]
        for o in tools[1:]:
            if not args.check_targets:
                continue
            r = s["ratio_" + o]
            lines.append(f"- N={res['n']}: jobscope/{o} = {r['sched_ms_per_tick']:.2f} "
                         f"[{r['stat_ms_per_tick']:.2f}], target ≤ {TARGETS[o]}: "
                         f"{verdict(r['sched_ms_per_tick'], TARGETS[o])}")
    for res in results:
        s = res["summary"]
        hwm = s["jobscope_hwm_kib"]
        line = (f"- N={res['n']}: jobscope peak RSS (VmHWM at the end of the window, "
                f"max of the runs) {hwm / 1024:.1f} MiB")
        if res["n"] >= 1000 and args.check_targets:
            line += f", target ≤ 10 MiB: {verdict(hwm / 1024, 10)}"
        line += (f"; store after the run {s['store_bytes'] / 1024:.0f} KiB "
                 f"({s['samples']:.0f} ticks in the whole run)")
        lines.append(line)
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--counts", default="100,1000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--window", type=int, default=20, help="seconds")
    ap.add_argument("--interval-ms", type=int, default=1000)
    ap.add_argument("--no-pidstat", action="store_true")
    ap.add_argument("--no-targets", dest="check_targets", action="store_false")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    if not args.no_pidstat and args.interval_ms % 1000:
        ap.error("pidstat takes whole seconds: use --no-pidstat below 1000 ms")
    for exe in (JOBSCOPE, SLEEPERS, FLOOR):
        if not os.access(exe, os.X_OK):
            sys.exit(f"sampler_cost: {exe} is missing: run ./dev bench (or bench/run-all.sh)")

    tools = ["jobscope", "floor"] + ([] if args.no_pidstat else ["pidstat"])
    results = []
    with tempfile.TemporaryDirectory(prefix="jobscope-bench-") as tmp:
        for n in (int(x) for x in args.counts.split(",")):
            runs = []
            for rep in range(args.reps):
                r = measure(n, args.interval_ms, args.window, not args.no_pidstat, tmp)
                runs.append(r)
                print(f"N={n} run {rep + 1}/{args.reps}: " + "  ".join(
                    f"{t} {r[t]['sched_ms_per_tick']:.2f} ({r[t]['stat_ms_per_tick']:.2f})"
                    for t in tools) + f" ms/tick;  other load {r['other_load_cores']:.2f} "
                    f"cores; jobscope HWM {r['jobscope_hwm_kib']} KiB, exit "
                    f"{r['jobscope_exit']}", flush=True)
            results.append({"n": n, "runs": runs, "summary": summarize(runs, tools)})

    md = markdown(args, results)
    print()
    print(md)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md)


if __name__ == "__main__":
    main()
