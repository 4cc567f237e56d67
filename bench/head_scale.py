#!/usr/bin/env python3
"""head_scale.py - 2,000 paced agents against jobscope head, Prometheus and VictoriaMetrics.

bench-agents-sim (bench/agents_sim.c, built here with cc) plays N agents
(default 2,000), each on its own keep-alive connection, each sending one
batch a second, the phases spread evenly over the second, the first ticks
over a ramp.  The same load, with the same values, goes to three receivers
one after the other, each started fresh on 127.0.0.1 with a temporary store:

  head        jobscope head --listen 127.0.0.1:0 --db TMP/head.db: one batch
              per node-tick (POST /api/v1/ingest, docs/wire.md), as an agent
              sends it when current
  prometheus  /usr/bin/prometheus --web.enable-remote-write-receiver:
              one remote-write request per node-tick (protobuf, snappy), one
              series per value
  victoria    /usr/bin/victoria-metrics: the same remote-write requests

After a warm-up (every agent's first sight), one window (default 60 s,
--quick 15 s): each request's latency (send to full answer: p50/p99/max),
errors, ticks due against ticks acknowledged, the server's CPU (utime+stime
of /proc/PID/stat, all threads), peak RSS, values/s and values per
CPU-second.  Checked: the head's p99 < 100 ms at N agents with every tick
acknowledged; derived: the nodes one head takes within --budget-cores.
Then the data is counted back from each server (/clients, PromQL).
--steps runs the head alone at other agent counts (how many it holds).

Usage: bench/head_scale.py [--build build] [--agents 2000] [--duration 60 | --quick]
           [--warmup 10] [--ramp 5] [--gpus 8] [--procs 4] [--jobs 1] [--cpus 0]
           [--disks 1] [--nets 1] [--servers head,prometheus,victoria]
           [--steps 250,500,1000] [--step-duration 15] [--budget-cores 1.5]
           [--head-arg ARG ...] [--head-env VAR=VALUE ...] [--json F] [--markdown F]
Run from the repository root after `ninja -C BUILD jobscope`; needs cc,
libsnappy-dev, libzstd-dev and the `prometheus` and `victoria-metrics`
packages (a missing server is skipped and said so).  Exits 0 whether the
targets are met or not; 1 if the benchmark cannot run.
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_cost import cmdline, free_port, read_text, stop, wait_for  # noqa: E402
from head_ingest import prometheus_version  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SIM_SRC = os.path.join(HERE, "agents_sim.c")
PROMETHEUS = "/usr/bin/prometheus"
VICTORIA = "/usr/bin/victoria-metrics"
TARGET_P99_MS = 100.0
NAMES = {"head": "jobscope head", "prometheus": "Prometheus", "victoria": "VictoriaMetrics"}


def sim_build_cmd(build):
    return ["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o",
            os.path.join(build, "bench-agents-sim"), SIM_SRC, "-lsnappy", "-lzstd", "-lm"]


def build_sim(build):
    """The simulator, rebuilt when its source is newer."""
    out = os.path.join(build, "bench-agents-sim")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(SIM_SRC):
        cmd = sim_build_cmd(build)
        print("head_scale: " + cmdline(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True)
    return out


def shape_args(args):
    return ["--gpus", str(args.gpus), "--procs", str(args.procs), "--jobs", str(args.jobs),
            "--cpus", str(args.cpus), "--disks", str(args.disks), "--nets", str(args.nets)]


SERVER_NICE = -5   # the server before other work on a shared machine
SIM_NICE = -10     # the simulator before the server: it times the server, not its own wait


def raise_nofile():
    """The soft fd limit up to the hard one (as a unit's LimitNOFILE would)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def server_setup():
    raise_nofile()
    try:
        os.nice(SERVER_NICE)
    except OSError:
        pass


def sim_setup():
    raise_nofile()
    try:
        os.nice(SIM_NICE)
    except OSError:
        pass


def nice_of(pid):
    try:
        return int(read_text(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()[16])
    except (OSError, ValueError, IndexError):
        return None


def run_sim(args, sim, proto, port, pid, tmp, agents, warmup, duration):
    out = os.path.join(tmp, f"sim-{proto}-{agents}.json")
    argv = [sim, "--head" if proto == "head" else "--remote-write", "--port", str(port),
            "--pid", str(pid), "--agents", str(agents), "--warmup", f"{warmup:g}",
            "--duration", f"{duration:g}", "--ramp", f"{args.ramp:g}", "--drain",
            f"{args.drain:g}", "--json", out] + shape_args(args)
    if proto == "head" and args.head_encoding:
        argv += ["--encoding", args.head_encoding]
    timeout = warmup + duration + args.drain + 120
    sim = subprocess.Popen(argv, preexec_fn=sim_setup)
    time.sleep(0.2)
    nice = nice_of(sim.pid)
    try:
        rc = sim.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        sim.kill()
        sim.wait()
        raise RuntimeError(f"bench-agents-sim still running after {timeout:g} s")
    if rc != 0:
        raise RuntimeError(f"bench-agents-sim exited {rc}")
    with open(out) as f:
        res = json.load(f)
    res["sim_nice"] = nice
    res["argv"] = cmdline(argv).replace(tmp, "TMP")
    return res


# ---- the servers ----

def start_head(args, jobscope, tmp, name):
    errf = os.path.join(tmp, f"{name}.err")
    db = os.path.join(tmp, f"{name}.db")
    argv = [jobscope, "head", "--listen", "127.0.0.1:0", "--db", db] + args.head_arg
    env = dict(os.environ, **dict(kv.split("=", 1) for kv in args.head_env))
    with open(errf, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env,
                                preexec_fn=server_setup)

    def port():
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", read_text(errf))
        return int(m.group(1)) if m else None

    port = wait_for(port, proc, 30, "jobscope head")
    shown = " ".join(args.head_env + [cmdline(argv).replace(tmp, "TMP")])
    return proc, port, errf, shown, [db, db + "-wal"]


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read()


def ready(url, want=None):
    try:
        status, body = http_get(url, timeout=2)
        return status == 200 and (want is None or want in body)
    except OSError:
        return False


def start_prometheus(args, tmp):
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 15s\n  evaluation_interval: 15s\n"
                "scrape_configs: []\n")
    port = free_port()
    data = os.path.join(tmp, "prom-data")
    argv = [PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}", "--web.enable-remote-write-receiver",
            # its default, 512, would leave the other agents in the listen queue
            f"--web.max-connections={max(512, args.agents + 64)}"]
    errf = os.path.join(tmp, "prometheus.err")
    with open(errf, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err,
                                preexec_fn=server_setup)
    wait_for(lambda: ready(f"http://127.0.0.1:{port}/-/ready"), proc, 60, "prometheus")
    return proc, port, errf, cmdline(argv).replace(tmp, "TMP"), [data]


def start_victoria(args, tmp):
    port = free_port()
    data = os.path.join(tmp, "vm-data")
    # latencyOffset 0: the count read back after the run sees the newest samples
    argv = [VICTORIA, f"-storageDataPath={data}", f"-httpListenAddr=127.0.0.1:{port}",
            "-search.latencyOffset=0s"]
    errf = os.path.join(tmp, "victoria.err")
    with open(errf, "w") as err:
        proc = subprocess.Popen(argv, stdout=err, stderr=subprocess.STDOUT,
                                preexec_fn=server_setup)
    wait_for(lambda: ready(f"http://127.0.0.1:{port}/health", b"OK"), proc, 60,
             "victoria-metrics")
    return proc, port, errf, cmdline(argv).replace(tmp, "TMP"), [data]


def package_version(pkg):
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def du(paths):
    total = 0
    for p in paths:
        if os.path.isfile(p):
            total += os.path.getsize(p)
        for dp, _, fs in os.walk(p):
            for f in fs:
                try:
                    total += os.path.getsize(os.path.join(dp, f))
                except OSError:
                    pass
    return total


def log_problems(kind, errf):
    lines = read_text(errf).splitlines()
    if kind == "head":
        return [ln for ln in lines if "listening on" not in ln
                and "Terminated received: exiting" not in ln][:20]
    if kind == "prometheus":
        # writes still in flight when it is stopped fail on the closed WAL: not the run's
        stop_at = next((i for i, ln in enumerate(lines) if "Received SIGTERM" in ln),
                       len(lines))
        return [ln for ln in lines[:stop_at]
                if "level=error" in ln or "level=warn" in ln][:10]
    return [ln for ln in lines if "\terror\t" in ln or "\twarn\t" in ln
            or "\tfatal\t" in ln or "\tpanic\t" in ln][:10]


# ---- what each server holds afterwards ----

def count_head(port, layout):
    _, body = http_get(f"http://127.0.0.1:{port}/clients", timeout=30)
    cl = json.loads(body)
    clients = cl.get("clients", [])
    return {"clients": cl.get("total_clients", len(clients)),
            "rows": sum(c.get("rows", 0) for c in clients),
            "node_ticks": sum(c.get("rows", 0) for c in clients)
            // layout["fact_rows_per_node_tick"]}


def count_promql(kind, port, expected):
    """Samples of one series per node (host_samples_cpu_user_ms): node-ticks stored.
    VictoriaMetrics makes the newest samples searchable a moment after a flush: read
    again, for up to 15 s, until the count reaches what was acknowledged or stops moving."""
    base = f"http://127.0.0.1:{port}"

    def query(expr):
        # evaluated a minute ahead, so the range [1h] holds every sample the run sent
        q = urllib.parse.urlencode({"query": expr, "time": f"{time.time() + 60:.3f}"})
        _, body = http_get(f"{base}/api/v1/query?{q}", timeout=120)
        r = json.loads(body)["data"]["result"]
        return int(float(r[0]["value"][1])) if r else 0

    if kind == "victoria":
        http_get(base + "/internal/force_flush", timeout=60)
    seen, end = [], time.monotonic() + 15
    while True:
        seen.append(query("sum(count_over_time(host_samples_cpu_user_ms[1h]))"))
        if (seen[-1] >= expected or time.monotonic() > end
                or (len(seen) >= 3 and seen[-1] == seen[-3])):
            break
        time.sleep(1)
    return {"node_ticks": seen[-1],
            "clients": query("count(count_over_time(host_samples_cpu_user_ms[1h]))")}


def phase(args, kind, sim, jobscope, tmp, agents, warmup, duration, name=None):
    """One server: started fresh, loaded, counted back, stopped."""
    proc = None
    name = name or kind
    try:
        if kind == "head":
            proc, port, errf, argv, paths = start_head(args, jobscope, tmp, name)
        elif kind == "prometheus":
            proc, port, errf, argv, paths = start_prometheus(args, tmp)
        else:
            proc, port, errf, argv, paths = start_victoria(args, tmp)
        res = run_sim(args, sim, "head" if kind == "head" else "rw", port, proc.pid, tmp,
                      agents, warmup, duration)
        res["server_argv"] = argv
        res["server_nice"] = nice_of(proc.pid)
        res["alive"] = proc.poll() is None
        try:
            res["stored"] = (count_head(port, res["layout"]) if kind == "head"
                             else count_promql(kind, port, res["ticks_acked_total"]))
        except (OSError, ValueError, KeyError, IndexError) as e:
            res["stored"] = {"error": f"{type(e).__name__}: {e}"}
    finally:
        stop(proc, timeout=60)
    res["exit"] = proc.returncode
    res["log"] = log_problems(kind, errf)
    res["store_bytes"] = du(paths)
    return res


def run(args, tmp):
    jobscope = os.path.join(args.build, "jobscope")
    sim = build_sim(args.build)
    lay = json.loads(subprocess.run([sim, "--layout"] + shape_args(args), check=True,
                                    capture_output=True, text=True).stdout)["layout"]
    res = {"layout": lay, "servers": {}, "steps": [],
           "versions": {"prometheus": prometheus_version(),
                        "victoria": "victoria-metrics " + package_version("victoria-metrics")},
           "sim_build": cmdline(sim_build_cmd(args.build))}
    print(f"head_scale: {args.agents} agents, {lay['values_per_node_tick']} values in "
          f"{lay['fact_rows_per_node_tick']} rows per node-tick", file=sys.stderr)
    for kind in args.servers:
        print(f"head_scale: {NAMES[kind]}", file=sys.stderr)
        try:
            res["servers"][kind] = phase(args, kind, sim, jobscope, tmp, args.agents,
                                         args.warmup, args.duration)
        except (RuntimeError, subprocess.SubprocessError, OSError) as e:
            res["servers"][kind] = {"error": str(e)}
    for n in args.steps:
        print(f"head_scale: jobscope head, {n} agents", file=sys.stderr)
        try:
            r = phase(args, "head", sim, jobscope, tmp, n, args.step_warmup, args.step_duration,
                      name=f"head-{n}")
        except (RuntimeError, subprocess.SubprocessError, OSError) as e:
            r = {"agents": n, "error": str(e)}
        res["steps"].append(r)
    return res


# ---- the figures ----

def passed(r, agents):
    """The check at this load: p99 < 100 ms, every tick due in the window acknowledged,
    no errors."""
    if "error" in r or not r.get("latency_samples"):
        return False
    return (r["lat_p99_ms"] is not None and r["lat_p99_ms"] < TARGET_P99_MS
            and r["ticks_acked"] == r["ticks_due"] and sum(r["errors"].values()) == 0
            and r["agents_all_acked"] == agents)


def summarize(args, res):
    vpn = res["layout"]["values_per_node_tick"]
    s = {}
    for kind, r in res["servers"].items():
        if "error" in r:
            continue
        cpu = r["server"]["cpu_s"]
        s[kind] = {
            "pass": passed(r, args.agents),
            "values_per_cpu_s": r["server"]["values_per_cpu_s"],
            # CPU per node at 1 s: a node sends one tick a second
            "cpu_ms_per_node_tick": cpu / r["node_ticks"] * 1000 if r["node_ticks"] else None,
            "nodes_by_cpu": (args.budget_cores * r["node_ticks"] / cpu
                             * (r["interval_ms"] / 1000.0)) if cpu else None,
        }
    h = res["servers"].get("head", {})
    for kind in ("prometheus", "victoria"):
        if kind in s and "head" in s and s[kind]["values_per_cpu_s"]:
            s["head_vs_" + kind] = {
                "values_per_cpu_s": s["head"]["values_per_cpu_s"] / s[kind]["values_per_cpu_s"],
                "p99": (h["lat_p99_ms"] / res["servers"][kind]["lat_p99_ms"]
                        if h.get("lat_p99_ms") and res["servers"][kind].get("lat_p99_ms")
                        else None),
            }
    # how many agents the head holds: the largest count that passed, measured
    held = [(args.agents, passed(h, args.agents))] if h and "error" not in h else []
    held += [(r["agents"], passed(r, r["agents"])) for r in res["steps"] if "error" not in r]
    ok = [n for n, p in held if p]
    s["head_held_agents"] = max(ok) if ok else None
    s["head_failed_agents"] = min([n for n, p in held if not p], default=None)
    if "head" in s:
        # by CPU only if the head kept up with the whole load: else its ceiling is not CPU
        s["nodes_per_head"] = (s["head"]["nodes_by_cpu"] if s["head"]["pass"]
                               else s["head_held_agents"])
        s["nodes_per_head_basis"] = "cpu" if s["head"]["pass"] else "measured"
    s["values_per_node_tick"] = vpn
    res["summary"] = s
    return s


def f1(v, fmt="{:.1f}"):
    return "-" if v is None else fmt.format(v)


def server_row(name, r):
    if "error" in r:
        return f"| {name} | **did not run**: {r['error']} | | | | | | | | |"
    sv = r["server"]
    err = sum(r["errors"].values())
    kinds = ", ".join(f"{k} {v}" for k, v in r["errors"].items() if v)
    return (f"| {name} | {r['agents_ever_acked']} / {r['agents_all_acked']} | "
            f"{r['ticks_acked']:,} / {r['ticks_due']:,} | {r['values_per_s']:,.0f} | "
            f"{f1(sv['cpu_s'], '{:.2f}')} ({f1(sv['user_s'], '{:.2f}')}/"
            f"{f1(sv['sys_s'], '{:.2f}')}) | {f1(sv['cores'], '{:.2f}')} | "
            f"**{f1(sv['values_per_cpu_s'], '{:,.0f}')}** | "
            f"{sv['hwm_kib'] / 1024:.0f} MiB | {f1(r['lat_p50_ms'])} / **{f1(r['lat_p99_ms'])}**"
            f" / {f1(r['lat_max_ms'])} | {f1(r['lag_p99_ms'])} | {err}"
            + (f" ({kinds})" if kinds else "") + " |")


def report(args, res):
    lay, s, sv = res["layout"], res["summary"], res["servers"]
    vpn = lay["values_per_node_tick"]
    L = [f"Command: `{cmdline(['python3'] + sys.argv)}`", ""]
    L.append(
        f"{args.agents} simulated agents, each on its own keep-alive connection (over "
        f"{-(-args.agents // 250)} loopback source addresses, ≤ 250 each), each sending one "
        "batch a second, the agents' phases spread evenly over the second, their first ticks "
        f"over {args.ramp:g} s.  A node-tick: 1 host row, {lay['gpus']} GPUs, "
        f"{lay['procs']} changed processes, {lay['jobs']} job row(s), {lay['disks']} disk, "
        f"{lay['nets']} interface" + (f", {lay['cpus']} CPUs" if lay["cpus"] else
                                      " (no per-CPU rows: `--cpus N` adds 8 values each)")
        + f": {lay['fact_rows_per_node_tick']} fact rows holding **{vpn} values** (" +
        ", ".join(f"{t} {n}" for t, n in lay["values_by_table"].items()) +
        f"), {args.agents * vpn:,} values a second in all.  To the head: one batch per "
        f"node-tick, {lay['head_batch_bytes'] / 1024:.1f} KiB of JSON with its "
        f"{lay['dim_rows_per_batch']} dimension rows (identity: the agent compresses only "
        "above 64 KiB).  To Prometheus and VictoriaMetrics: the same values as one "
        f"remote-write request per node-tick, one series each, {lay['rw_protobuf_bytes'] / 1024:.1f}"
        f" KiB of protobuf, {lay['rw_snappy_bytes'] / 1024:.1f} KiB snappy-compressed "
        "(libsnappy).")
    L.append("")
    L.append("```")
    for kind, r in sv.items():
        if "server_argv" in r:
            L.append(r["server_argv"])
    first = next((r for r in sv.values() if "argv" in r), None)
    if first:
        L.append(first["argv"].replace("--remote-write", "--head|--remote-write"))
    L.append("```")
    L.append("")
    L.append(
        f"The receivers one after the other, each fresh.  {args.warmup:g} s of warm-up (every "
        f"agent's first sight), then a window of {args.duration:g} s; requests still out at "
        f"its end get {args.drain:g} s to answer.  Latency: from the request's first byte "
        "written to the last byte of the answer; lag: from the tick falling due to that "
        "answer (latency plus any wait behind the agent's previous request).  An agent never "
        "has two requests out; on a failure it closes, backs off 0.5 s doubling to 30 s, and "
        "resends (the agent's own policy), with a 5 s connect and 30 s answer timeout.  CPU: "
        "utime+stime of /proc/PID/stat over the window, all threads; peak RSS: VmHWM.  "
        f"Simulator: bench/agents_sim.c (one epoll loop) at nice {SIM_NICE}, so that it "
        "times the server and not its own wait for a core; each server at nice "
        f"{SERVER_NICE}, before other work on this shared machine (\"other load\" below), and "
        "with its soft fd limit raised to the hard one.")
    L.append("")
    L.append("| receiver | agents answered / all ticks answered | ticks acked / due in window "
             "| values/s | CPU s (user/sys) | cores | values per CPU-second | peak RSS "
             "| latency p50 / p99 / max ms | lag p99 ms | errors |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for kind in sv:
        L.append(server_row(NAMES[kind], sv[kind]))
    L.append("")
    L.append("| | values per CPU-second | p99 latency |")
    L.append("|---|---|---|")
    for kind in ("prometheus", "victoria"):
        c = s.get("head_vs_" + kind)
        if c:
            L.append(f"| head / {NAMES[kind]} | {c['values_per_cpu_s']:.2f} × | "
                     f"{f1(c['p99'], '{:.2f}')} × |")
    L.append("")
    h = sv.get("head", {})
    L.append("| check | measured | target | |")
    L.append("|---|---|---|---|")
    if h and "error" not in h:
        ok = s["head"]["pass"]
        L.append(f"| head at {args.agents} agents: p99 latency | {f1(h['lat_p99_ms'])} ms | "
                 f"< {TARGET_P99_MS:g} ms | {'PASS' if h['lat_p99_ms'] is not None and h['lat_p99_ms'] < TARGET_P99_MS else 'FAIL'} |")
        L.append(f"| head at {args.agents} agents: ticks acknowledged | {h['ticks_acked']:,} of "
                 f"{h['ticks_due']:,}, {h['agents_all_acked']} agents all, "
                 f"{sum(h['errors'].values())} errors | all, 0 errors | "
                 f"{'PASS' if ok else 'FAIL'} |")
        L.append(f"| nodes per head ({lay['gpus']} GPUs, {vpn} values a second each) | "
                 f"{f1(s.get('nodes_per_head'), '{:,.0f}')} ({s.get('nodes_per_head_basis')}) | "
                 "(reported) | |")
    L.append("")
    if h and "error" not in h:
        hs = s["head"]
        L.append(
            f"**Nodes per head.**  The head spent {f1(hs['cpu_ms_per_node_tick'], '{:.2f}')} ms "
            f"of CPU per node-tick ({h['server']['cores']:.2f} cores for "
            f"{h['node_ticks_per_s']:.0f} node-ticks a second), so a budget of "
            f"{args.budget_cores:g} of this machine's {h['ncpus']} cores would take "
            f"{f1(hs['nodes_by_cpu'], '{:,.0f}')} such nodes at 1 s.  "
            + ("The head kept up with the whole load at p99 < 100 ms, so that figure stands "
               "(an extrapolation from CPU, with no headroom)."
               if hs["pass"] else
               "But the head did **not** keep up with the load (see the checks), so its "
               "ceiling is not its CPU: the figure given is the largest agent count measured "
               "to pass, " + (f"{s['head_held_agents']:,}" if s["head_held_agents"]
                              else "none of those tried") + "."))
        L.append("")
        ff = h.get("first_failure")
        text = (f"**How many agents the head held.**  {h['max_connected']} connections open "
                f"at most, {h['agents_ever_acked']} of {args.agents} agents ever answered; ")
        if ff:
            text += (f"the first failure ({ff['kind']}) came {ff['after_s']:.1f} s in, with "
                     f"{ff['connected']} connections open and {ff['agents_ever_acked']} agents "
                     "answered so far.")
        else:
            text += "no connection failed, timed out or was refused."
        if h["in_flight_at_end"]:
            text += (f"  {h['in_flight_at_end']} requests were still unanswered "
                     f"{h['drain_s']:.0f} s after the window (sent, never answered: a "
                     "connection the kernel accepted into the listen queue is not one the "
                     "server serves); "
                     f"{h['agents_none_acked']} agents had no tick of the window answered.")
        errs = {k: v for k, v in h["errors_total"].items() if v}
        if errs:
            text += ("  Errors over the whole run: " + ", ".join(f"{k} {v}" for k, v in errs.items())
                     + " (last messages: " + "; ".join(f"{k}: {v}" for k, v in
                                                      h["error_messages"].items()) + ").")
        L.append(text)
        L.append("")
    if res["steps"]:
        L.append("The head alone at other agent counts (each a fresh head; "
                 f"{args.step_warmup:g} s warm-up, {args.step_duration:g} s window):")
        L.append("")
        L.append("| agents | answered / all ticks answered | ticks acked / due | p50 / p99 ms "
                 "| lag p99 ms | head cores | errors (in window) | first failure | |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for r in res["steps"]:
            if "error" in r:
                L.append(f"| {r['agents']} | did not run: {r['error']} | | | | | | | |")
                continue
            ff = r.get("first_failure")
            L.append(f"| {r['agents']} | {r['agents_ever_acked']} / {r['agents_all_acked']} | "
                     f"{r['ticks_acked']:,} / {r['ticks_due']:,} | {f1(r['lat_p50_ms'])} / "
                     f"{f1(r['lat_p99_ms'])} | {f1(r['lag_p99_ms'])} | "
                     f"{f1(r['server']['cores'], '{:.2f}')} | {sum(r['errors'].values())} | "
                     + (f"{ff['kind']} at {ff['after_s']:.1f} s, {ff['connected']} open"
                        if ff else "none")
                     + f" | {'PASS' if passed(r, r['agents']) else 'FAIL'} |")
        L.append("")
    # the other figures, and what the servers hold afterwards
    notes = []
    for kind, r in sv.items():
        if "error" in r:
            continue
        st = r.get("stored", {})
        held = (f"holds {st.get('node_ticks', '?'):,} node-ticks of {st.get('clients', '?')} "
                f"nodes (the simulator had {r['ticks_acked_total']:,} acknowledged)"
                if "error" not in st else f"count failed: {st['error']}")
        notes.append(
            f"{NAMES[kind]}: {r['server']['threads']} threads, nice {r.get('server_nice')}, "
            f"{f1(r['server']['minflt_per_request'], '{:.0f}')} minor faults per request, "
            f"{r['mib_per_s']:.1f} MiB/s in, store {r['store_bytes'] / 2**20:.0f} MiB at the end; "
            f"{held}; simulator {r['simulator_cores']:.2f} cores, other load "
            f"{r['other_load_cores']:.2f} cores of {r['ncpus']}; exit {r['exit']}.")
    L.append("  ".join(notes) + f"  Versions: {res['versions']['prometheus']}; "
             f"{res['versions']['victoria']}.")
    problems = []
    for kind, r in sv.items():
        if r.get("log"):
            problems.append(f"{kind} log: " + " | ".join(r["log"][:5]))
        if r.get("exit") not in (0, None):
            problems.append(f"{kind}: exit status {r['exit']} after SIGTERM")
    if problems:
        L += ["", "Problems seen:", ""] + [f"- {x}" for x in problems]
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="meson build directory (default build)")
    ap.add_argument("--agents", type=int, default=2000)
    ap.add_argument("--duration", type=float, default=60, help="window, seconds (default 60)")
    ap.add_argument("--warmup", type=float, default=10, help="seconds before the window")
    ap.add_argument("--ramp", type=float, default=5, help="first ticks spread over S seconds")
    ap.add_argument("--drain", type=float, default=5,
                    help="seconds the answers still out at the window's end get")
    ap.add_argument("--quick", action="store_true",
                    help="15 s window, 6 s warm-up; 10 s windows for --steps")
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--procs", type=int, default=4, help="processes that changed, per tick")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--cpus", type=int, default=0, help="per-CPU rows per tick (default 0)")
    ap.add_argument("--disks", type=int, default=1)
    ap.add_argument("--nets", type=int, default=1)
    ap.add_argument("--servers", default="head,prometheus,victoria",
                    help="which receivers, in order (head, prometheus, victoria)")
    ap.add_argument("--steps", default="",
                    help="also the head alone at these agent counts, e.g. 250,500,1000")
    ap.add_argument("--step-duration", type=float, default=15)
    ap.add_argument("--step-warmup", type=float, default=6)
    ap.add_argument("--budget-cores", type=float, default=1.5,
                    help="cores of this machine given to the head (default 1.5)")
    ap.add_argument("--head-encoding", choices=["auto", "identity", "zstd"], default="",
                    help="the head's batches: as the agent (auto: zstd above 64 KiB), or forced")
    ap.add_argument("--head-arg", action="append", default=[], metavar="ARG",
                    help="one more argument for `jobscope head` (repeat), e.g. "
                         "--head-arg=--max-conns-per-ip --head-arg=512")
    ap.add_argument("--head-env", action="append", default=[], metavar="VAR=VALUE")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    if args.quick:
        args.duration, args.warmup, args.step_duration = 15, 6, 10
    args.servers = [x for x in args.servers.split(",") if x]
    if any(x not in NAMES for x in args.servers):
        ap.error("--servers: head, prometheus, victoria")
    args.steps = [int(x) for x in args.steps.split(",") if x]
    if any("=" not in kv for kv in args.head_env):
        ap.error("--head-env takes VAR=VALUE")
    if args.warmup < args.ramp + 1:
        ap.error("--warmup must be at least --ramp + 1 s")
    if ("head" in args.servers or args.steps) and not os.path.exists(
            os.path.join(args.build, "jobscope")):
        sys.exit(f"head_scale: {args.build}/jobscope missing: ninja -C {args.build}")
    for kind, path, pkg in (("prometheus", PROMETHEUS, "prometheus"),
                            ("victoria", VICTORIA, "victoria-metrics")):
        if kind in args.servers and not os.access(path, os.X_OK):
            print(f"head_scale: {path} missing (apt-get install {pkg}): skipped",
                  file=sys.stderr)
            args.servers.remove(kind)
    with tempfile.TemporaryDirectory(prefix="jobscope-scale-bench-") as tmp:
        try:
            res = run(args, tmp)
        except (RuntimeError, subprocess.SubprocessError, OSError) as e:
            sys.exit(f"head_scale: {e}")
    summarize(args, res)
    md = report(args, res)
    print(md)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "result": res}, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md)


if __name__ == "__main__":
    main()
