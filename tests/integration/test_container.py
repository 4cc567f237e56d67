"""Containers and frameworks: `jobscope run -- podman run ...` follows the container's
processes (conmon is reparented to jobscope, the child subreaper), and a process's
frameworks are found in its maps, also when it loads them after it started."""
import json
import os
import re
import shutil
import sys

from harness import (jobscope, run, run_tests, check, eq, FIXTURES)
from agent_harness import sql

BUSYBOX = shutil.which("busybox") or "/bin/busybox"
LOOPS = 1000000  # about 1.7 CPU-seconds of busybox sh here


def podman_cmd(wd, *args):
    return ["podman", "--runtime", "runc", "--cgroup-manager=cgroupfs", "run", "--rm",
            "--ulimit", "host", "--rootfs", wd.join("rootfs")] + list(args)


def podman_env(wd):
    conf = wd.join("containers.conf")
    with open(conf, "w") as f:
        f.write("[containers]\ndefault_ulimits = []\n")
    rootfs = wd.join("rootfs")
    for d in ("bin", "proc", "sys", "dev", "etc", "tmp"):
        os.makedirs(os.path.join(rootfs, d), exist_ok=True)
    shutil.copy(BUSYBOX, os.path.join(rootfs, "bin", "busybox"))
    env = dict(os.environ)
    env["CONTAINERS_CONF"] = conf
    return env


def podman_usable():
    """Why podman cannot run a container here, or None."""
    for prog in ("podman", "runc"):
        if not shutil.which(prog):
            return "%s is not installed" % prog
    if not os.path.exists(BUSYBOX):
        return "no static busybox (apt-get install busybox-static)"
    return None


def shell_cpu_s(stdout):
    """busybox sh's `times`: its own user and system time, first line."""
    m = re.search(r"(\d+)m([\d.]+)s (\d+)m([\d.]+)s", stdout)
    check(m is not None, "times output in %r" % stdout)
    return (int(m.group(1)) * 60 + float(m.group(2)) +
            int(m.group(3)) * 60 + float(m.group(4)))


def test_podman_container_cpu(wd):
    env = podman_env(wd)
    script = "i=0; while [ $i -lt %d ]; do i=$((i+1)); done; times" % LOOPS
    r = run(wd, podman_cmd(wd, "/bin/busybox", "sh", "-c", script),
            opts=["--interval", "250ms"], env=env, timeout=180)
    eq(r.rc, 0, "podman's exit code (stderr: %s)" % r.stderr[-2000:])
    loop_s = shell_cpu_s(r.stdout)
    check(loop_s >= 0.5, "the container's shell burned CPU: %.2fs" % loop_s)
    # the whole job: at least what the shell inside the container says it used
    job_s = r.report["cpu"]["cpu_seconds"]
    check(job_s >= loop_s - 0.05,
          "job CPU %.2fs counts the container's %.2fs" % (job_s, loop_s))
    procs = r.report["processes"]
    inside = [p for p in procs if "while [ $i -lt" in (p["cmdline"] or "")
              and p["comm"] != "podman"]
    check(inside, "the container's shell is listed: %r" %
          [(p["comm"], p["cmdline"][:40]) for p in procs])
    shell = max(inside, key=lambda p: p["cpu_seconds"] or 0)
    check(abs(shell["cpu_seconds"] - loop_s) <= 0.05,
          "the shell's CPU %.2fs is what it says, %.2fs" % (shell["cpu_seconds"], loop_s))
    comms = {p["comm"] for p in procs}
    check("conmon" in comms, "conmon, the container's monitor, is in the tree: %r" % comms)


def test_late_framework_found(wd):
    """A Python process that "imports torch" (maps a file of the torch package) 1.5 s
    after it started: the sampler reads its maps again and finds it, with its version.
    The sampler reads again the maps of a process whose CPU grew, at 1 s, 2 s, 4 s ...
    after the last read (src/sample/ptree.c): the process lives 3 s more, using a
    little CPU all along (a few %, not a core: a loaded machine gives it that)."""
    site = wd.join("venv/lib/python3/site-packages")
    os.makedirs(os.path.join(site, "torch", "lib"))
    os.makedirs(os.path.join(site, "nvidia", "nccl", "lib"))
    with open(os.path.join(site, "torch", "version.py"), "w") as f:
        f.write("__version__ = '2.9.1+cu999'\n")
    for lib in ("torch/lib/libtorch_cpu.so", "nvidia/nccl/lib/libnccl.so.2.21.5"):
        with open(os.path.join(site, lib), "wb") as f:
            f.write(b"\0" * 4096)
    prog = ("import mmap, time, sys\n"
            "time.sleep(1.5)\n"
            "maps = []\n"
            "for lib in sys.argv[2:]:\n"
            "    f = open(sys.argv[1] + '/' + lib, 'rb')\n"
            "    maps.append(mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ))\n"
            "end = time.time() + 3\n"
            "while time.time() < end:\n"
            "    sum(range(50000))\n"
            "    time.sleep(0.02)\n")
    r = run(wd, [sys.executable, "-c", prog, site, "torch/lib/libtorch_cpu.so",
                 "nvidia/nccl/lib/libnccl.so.2.21.5"], opts=["--interval", "200ms"])
    eq(r.rc, 0, "exit code (stderr: %s)" % r.stderr[-2000:])
    p = jobscope("report", "--db", wd.join("store.db"), "--format", "json")
    eq(p.returncode, 0, "report: %s" % p.stderr)
    libs = {(l["name"], l["version"]): l for l in json.loads(p.stdout)["libs"]}
    pyver = "%d.%d" % sys.version_info[:2]
    check(("pytorch", "2.9.1+cu999") in libs, "pytorch from its version.py: %r" % list(libs))
    check(("nccl", "2.21.5") in libs, "nccl from its file name: %r" % list(libs))
    check(("python", pyver) in libs, "python %s: %r" % (pyver, list(libs)))
    eq(libs[("pytorch", "2.9.1+cu999")]["processes"], 1, "one process loaded torch")
    check(libs[("nccl", "2.21.5")]["path"].endswith("nvidia/nccl/lib/libnccl.so.2.21.5"),
          "the file it was seen in")
    text = jobscope("report", "--db", wd.join("store.db")).stdout
    check("\n  Frameworks " in text and "pytorch 2.9.1+cu999 (1 process)" in text,
          "the text report's Frameworks line: %r" %
          [l for l in text.splitlines() if "Frameworks" in l])
    html = jobscope("report", "--db", wd.join("store.db"), "--format", "html").stdout
    check('<section id="libs">' in html and "<td>2.9.1+cu999</td>" in html,
          "the HTML page's libraries table")
    hist = jobscope("report", "--db", wd.join("store.db"), "--by", "framework",
                    "--format", "json")
    eq(hist.returncode, 0, "history by framework: %s" % hist.stderr)
    keys = [row["key"] for row in json.loads(hist.stdout)["rows"]]
    eq(keys, ["pytorch"], "the job counts as a PyTorch job")


def test_agent_libs_and_energy(wd):
    """The agent on a fixture root (tests/fixtures/sysroot_libs): every process's
    libraries once, and the RAPL zones each tick, through the same tick writer."""
    root = wd.join("root")
    shutil.copytree(os.path.join(FIXTURES, "sysroot_libs"), root, symlinks=True)
    shutil.copytree(os.path.join(FIXTURES, "cgroup", "v2", "sys"), os.path.join(root, "sys"),
                    dirs_exist_ok=True)
    for pid in (500, 600, 700, 800):
        d = os.path.join(root, "proc", str(pid))
        with open(os.path.join(d, "cgroup"), "w") as f:
            f.write("0::/user.slice/user-1000.slice/session-3.scope\n")
        with open(os.path.join(d, "environ"), "wb") as f:
            f.write(b"JOBSCOPE_RUN_ID=77\0")
    db = wd.join("agent.db")
    r = jobscope("agent", "--sysroot", root, "--db", db, "--listen", "none",
                 "--interval", "100ms", "--exit-after", "450ms", timeout=60)
    eq(r.returncode, 0, "agent: %s" % r.stderr)
    rows = sql(db, "SELECT p.pid, l.name, coalesce(l.version, '') FROM proc_libs l"
               " JOIN procs p ON p.id = l.proc_id ORDER BY p.pid, l.name")
    eq([r for r in rows if r[0] == 500],
       [(500, "cublas", "12.4.5.8"), (500, "cuda-runtime", "12.4.127"), (500, "cudnn", "9.1.0"),
        (500, "nccl", "2.21.5"), (500, "openmpi", ""), (500, "python", "3.11"),
        (500, "pytorch", "2.3.0+cu121")], "pid 500's libraries, each once")
    eq([r for r in rows if r[0] == 600],
       [(600, "jax", "0.4.23"), (600, "mpich", ""), (600, "onnxruntime", "1.17.1"),
        (600, "python", "3.12"), (600, "tensorflow", "2.15.1")], "pid 600's libraries")
    zones = sql(db, "SELECT zone, count(*), min(energy_uj), max(max_uj) FROM energy_samples"
                " GROUP BY zone ORDER BY zone")
    # each tick: as many readings of each zone as the ticks' host rows (a loaded
    # machine may give the agent fewer ticks in its 450 ms, never a zone fewer readings)
    ticks = sql(db, "SELECT count(*) FROM host_samples")[0][0]
    check(ticks >= 2 and len(zones) == 4 and all(z[1] == ticks for z in zones),
          "4 zones, each tick (%d): %r" % (ticks, zones))
    eq([(z[0], z[2]) for z in zones],
       [("package-0", 123456789), ("package-0/core", 99), ("package-0/dram", 4567890),
        ("psys", 18446744073709551000 - (1 << 64))], "zones and counters (INTEGER bits)")
    job = sql(db, "SELECT id FROM jobs WHERE scheduler = 'run' AND job_id = '77'")
    check(job, "the run's job")
    p = jobscope("report", "--db", db, "--format", "json", str(job[0][0]))
    eq(p.returncode, 0, "report: %s" % p.stderr)
    libs = {(l["name"], l["version"]): l["processes"] for l in json.loads(p.stdout)["libs"]}
    eq(libs.get(("pytorch", "2.3.0+cu121")), 1, "the job's report lists pytorch: %r" % libs)


if __name__ == "__main__":
    tests = dict(globals())
    why = podman_usable()
    if why:
        print("SKIP test_podman_container_cpu: podman cannot run here: %s" % why)
        del tests["test_podman_container_cpu"]
    run_tests(tests)
