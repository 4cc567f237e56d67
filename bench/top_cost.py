#!/usr/bin/env python3
"""top_cost.py - what `jobscope top` costs per refresh against htop.

With N sleeping processes (js-sleepers, default 1000) in one Slurm job
(SLURM_JOB_ID=31337) and a `jobscope agent --interval 1s` on loopback, three
viewers run side by side in tmux (100x30) for the same window (default 60 s):

  top-jobs   jobscope top --agent URL             (the jobs screen)
  top-job    jobscope top --agent URL --job 31337 (the job's screen: all N
             processes come over HTTP each second, as a tree)
  htop       htop -d 10                           (1 s refresh)

CPU of one viewer = delta of utime+stime of its process (/proc/PID/stat)
over the window, per refresh (window / 1 s) and as % of one core.  The
agent's own cost is bench/agent_cost.py's; here it is reported beside them.

Usage: bench/top_cost.py [--build build] [--duration 60] [--count 1000]
           [--markdown F]
Run from the repository root after `ninja -C BUILD`; needs tmux and htop.
Exits 0 whether the target is met or not; 1 if it cannot run.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HZ = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def tmux(sock, *args):
    return subprocess.run(["tmux", "-L", sock] + list(args), capture_output=True, text=True,
                          check=True).stdout


def pane_child(sock, name, comm):
    """The pid of the viewer running in tmux window name."""
    shell = int(tmux(sock, "display-message", "-p", "-t", name, "#{pane_pid}").strip())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for pid in [shell] + [int(p) for p in os.listdir("/proc") if p.isdigit()]:
            try:
                with open("/proc/%d/stat" % pid) as f:
                    st = f.read()
                with open("/proc/%d/comm" % pid) as f:
                    c = f.read().strip()
            except OSError:
                continue
            ppid = int(st.rsplit(")", 1)[1].split()[1])
            if c == comm and (pid == shell or ppid == shell):
                return pid
        time.sleep(0.1)
    raise SystemExit("no %s in tmux window %s" % (comm, name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--settle", type=float, default=5)
    ap.add_argument("--markdown")
    a = ap.parse_args()
    js = os.path.abspath(os.path.join(a.build, "jobscope"))
    sleepers = os.path.abspath(os.path.join(a.build, "tests", "js-sleepers"))
    for tool in ("tmux", "htop"):
        if not shutil.which(tool):
            sys.exit("top_cost: %s is not installed (./dev deps)" % tool)
    tmp = tempfile.mkdtemp(prefix="top-cost-")
    sock = "topcost%d" % os.getpid()
    env = dict(os.environ, SLURM_JOB_ID="31337", SLURM_CPUS_ON_NODE="1")
    sl = subprocess.Popen([sleepers, "--count", str(a.count), "--seconds",
                           str(int(a.duration + a.settle + 60))], env=env,
                          stdout=subprocess.DEVNULL)
    agent_log = open(os.path.join(tmp, "agent.log"), "w")
    agent = subprocess.Popen([js, "agent", "--interval", "1s", "--db",
                              os.path.join(tmp, "a.db"), "--listen", "127.0.0.1:0"],
                             stderr=agent_log, stdout=subprocess.DEVNULL)
    url = None
    for _ in range(150):
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(agent_log.name).read())
        if m:
            url = "http://127.0.0.1:%s" % m.group(1)
            break
        time.sleep(0.1)
    if not url:
        sys.exit("top_cost: the agent did not listen")
    viewers = {
        "top-jobs": ("jobscope", "%s top --agent %s" % (js, url)),
        "top-job": ("jobscope", "%s top --agent %s --job 31337" % (js, url)),
        "htop": ("htop", "htop -d 10"),
    }
    tenv = dict(os.environ, TERM="xterm-256color")
    tenv.pop("TMUX", None)
    first = True
    for name, (_, cmd) in viewers.items():
        args = (["new-session", "-d", "-s", "cost"] if first else ["new-window", "-t", "cost"])
        subprocess.run(["tmux", "-L", sock] + args + ["-n", name, "-x", "100", "-y", "30", cmd]
                       if first else ["tmux", "-L", sock] + args + ["-n", name, cmd],
                       env=tenv, check=True)
        first = False
    try:
        pids = {n: pane_child(sock, "cost:" + n, comm) for n, (comm, _) in viewers.items()}
        pids["agent"] = agent.pid
        time.sleep(a.settle)
        before = {n: cpu_s(p) for n, p in pids.items()}
        t0 = time.monotonic()
        time.sleep(a.duration)
        wall = time.monotonic() - t0
        after = {n: cpu_s(p) for n, p in pids.items()}
        screen = tmux(sock, "capture-pane", "-p", "-t", "cost:top-job")
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
        agent.terminate()
        agent.wait()
        sl.terminate()
        sl.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    shown = len(re.findall(r"^\s+\d+ ", screen, re.M))
    res = {n: (after[n] - before[n]) for n in pids}
    lines = ["| viewer (1 s refresh, %d processes in the job) | CPU %% of a core |"
             " ms per refresh | / htop |" % a.count, "|---|---|---|---|"]
    for n in ("top-jobs", "top-job", "htop", "agent"):
        pct = 100 * res[n] / wall
        per = 1000 * res[n] / wall
        ratio = "%.2f" % (res[n] / res["htop"]) if res["htop"] > 0 else "-"
        lines.append("| %s | %.2f | %.2f | %s |" % (n if n != "agent" else
                                                     "(the agent, for scale)", pct, per, ratio))
    lines.append("")
    lines.append("Window %.0f s; the job screen showed %d process rows.  Target: `jobscope top`"
                 " <= 1%% of a core: %s." % (wall, shown, "met" if max(
                     res["top-jobs"], res["top-job"]) / wall <= 0.01 else "NOT met"))
    text = "\n".join(lines) + "\n"
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
