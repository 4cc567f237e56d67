#!/usr/bin/env python3
"""The Debian package and the OCI image built from the tree, and the agent run
from that image as the DaemonSet runs it (deploy/kubernetes/agent-daemonset.yaml).

1. `dpkg-buildpackage -us -uc -b` in a copy of the tree (git's files): jobscope
   (binary, man pages, completions, the agent's and head's units, installed
   and not enabled) and jobscope-cuda-hook; lintian says nothing of them.
2. deploy/build-image.sh makes the OCI archive from the .deb (mmdebstrap from
   Debian's archive, podman import + save), in a private podman store.
3. `podman load` of the archive (as a CRI-O site loads it; no registry) and
   `podman run` of the agent: host PID namespace, privileged, the host's
   /proc and /sys read-only under /host with --sysroot=/host, a writable
   /var/lib/jobscope, a read-only root; its /metrics on loopback answers
   jobscope_* series, and a process of this test shows up as a job with its
   CPU series.
4. The same under containerd, as a containerd site runs it: `ctr -n k8s.io
   images import` of the archive into a private containerd
   (cri_harness.py), which must name it as the manifests' `image:` does,
   then the DaemonSet's pod through CRI as the kubelet asks for it: a
   sandbox in the node's PID and network namespaces, a privileged container
   from that image with a read-only root and the DaemonSet's arguments, the
   host's /proc and /sys bound read-only at /host/proc and /host/sys, a
   writable /var/lib/jobscope and /tmp; the same checks on its /metrics, the
   port read from the container's CRI log.

The package and the image are kept in argv[1]/k8s-image/<hash of the
package's sources>/, so a second run with the same sources reuses them.

argv[1]: the build directory.
"""
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

from harness import run_tests, check, eq, scaled, wait_for
import cri_harness

BUILD = sys.argv[1] if len(sys.argv) > 1 else ""
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = ["dpkg-buildpackage", "dh", "lintian", "mmdebstrap", "podman", "runc", "git"]


def tree_files():
    p = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", "-z"],
                       capture_output=True, check=True)
    return sorted(f for f in p.stdout.decode().split("\0")
                  if f and os.path.isfile(os.path.join(ROOT, f)))


def tree_hash(files):
    """The package's sources: tests/ is left out (debian/rules builds with
    -Dtests=false), so editing a test does not rebuild the package and image."""
    h = hashlib.sha256()
    for f in files:
        if f.startswith("tests/"):
            continue
        h.update(f.encode() + b"\0")
        with open(os.path.join(ROOT, f), "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()[:16]


def version():
    return re.search(r"version\s*:\s*'([^']+)'",
                     open(os.path.join(ROOT, "meson.build")).read()).group(1)


FILES = None
CACHE = None


def cache_dir():
    global FILES, CACHE
    if CACHE is None:
        FILES = tree_files()
        CACHE = os.path.join(BUILD, "k8s-image", tree_hash(FILES))
        os.makedirs(CACHE, exist_ok=True)
    return CACHE


def debs():
    """The package's .deb files (built now, or by an earlier run of the same tree)."""
    out = cache_dir()
    stamp = os.path.join(out, "debs.done")
    if not os.path.exists(stamp):
        src = os.path.join(out, "src", "jobscope-" + version())
        shutil.rmtree(os.path.join(out, "src"), ignore_errors=True)
        os.makedirs(src)
        for f in FILES:
            os.makedirs(os.path.dirname(os.path.join(src, f)), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, f), os.path.join(src, f))
        p = subprocess.run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=src,
                           capture_output=True, text=True, timeout=scaled(900))
        eq(p.returncode, 0, "dpkg-buildpackage: %s" % (p.stdout + p.stderr)[-3000:])
        for f in glob.glob(os.path.join(out, "src", "*.*")):
            if f.endswith((".deb", ".changes", ".buildinfo")):
                shutil.move(f, out)
        shutil.rmtree(os.path.join(out, "src"))
        open(stamp, "w").close()
    found = {os.path.basename(f).split("_")[0]: f
             for f in glob.glob(os.path.join(out, "*.deb")) if "-dbgsym_" not in f}
    return found


def test_package_contents(wd):
    d = debs()
    eq(sorted(d), ["jobscope", "jobscope-cuda-hook"], "the binary packages")
    files = subprocess.run(["dpkg-deb", "-c", d["jobscope"]], capture_output=True,
                           text=True, check=True).stdout
    for path in ("./usr/bin/jobscope", "./lib/systemd/system/jobscope-agent.service",
                 "./lib/systemd/system/jobscope-head.service", "./usr/share/man/man1/jobscope.1.gz",
                 "./usr/share/man/man1/jobscope-agent.1.gz",
                 "./usr/share/bash-completion/completions/jobscope", "./etc/jobscope/agent.conf",
                 "./etc/logrotate.d/jobscope"):
        check(re.search(r" %s$" % re.escape(path), files, re.M), "jobscope ships %s" % path)
    hook = subprocess.run(["dpkg-deb", "-c", d["jobscope-cuda-hook"]], capture_output=True,
                          text=True, check=True).stdout
    check(re.search(r" \./usr/lib/[^/]+/jobscope/libjobscope-cuda\.so$", hook, re.M),
          "the hook in the multiarch directory: %s" % hook)
    # installed, not enabled nor started: enable only if it was enabled before
    ctl = wd.join("control")
    subprocess.run(["dpkg-deb", "-e", d["jobscope"], ctl], check=True)
    postinst = open(os.path.join(ctl, "postinst")).read()
    check("deb-systemd-invoke" not in postinst, "nothing started")
    eq(postinst.count("deb-systemd-helper enable"),
       postinst.count("deb-systemd-helper --quiet was-enabled"), "enabled only if it was")
    unit = subprocess.run(["dpkg-deb", "--fsys-tarfile", d["jobscope"]], capture_output=True,
                          check=True).stdout
    check(b"ExecStart=/usr/bin/jobscope agent" in unit, "the unit runs /usr/bin/jobscope")


def test_lintian_is_clean(wd):
    debs()
    changes = glob.glob(os.path.join(cache_dir(), "*.changes"))
    eq(len(changes), 1, "one .changes")
    p = subprocess.run(["lintian", "--fail-on", "error,warning", changes[0]],
                       capture_output=True, text=True, timeout=scaled(300))
    tags = [l for l in p.stdout.splitlines() if re.match(r"^[EWIPNX]: ", l)]
    eq(tags, [], "lintian's tags (stderr: %s)" % p.stderr[-500:])
    eq(p.returncode, 0, "lintian's exit")


def podman_env(wd):
    """A private store (vfs: no overlay inside whatever runs this) and config."""
    root = wd.join("podman")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "storage.conf"), "w") as f:
        f.write('[storage]\ndriver = "vfs"\nrunroot = "%s/run"\ngraphroot = "%s/graph"\n'
                % (root, root))
    with open(os.path.join(root, "containers.conf"), "w") as f:
        f.write("[containers]\ndefault_ulimits = []\n")
    env = dict(os.environ)
    env["CONTAINERS_STORAGE_CONF"] = os.path.join(root, "storage.conf")
    env["CONTAINERS_CONF"] = os.path.join(root, "containers.conf")
    return env


def podman(env, *args, timeout=120, check_rc=True):
    p = subprocess.run(["podman", "--runtime", "runc", "--cgroup-manager=cgroupfs"] + list(args),
                       capture_output=True, text=True, env=env, timeout=scaled(timeout))
    if check_rc:
        eq(p.returncode, 0, "podman %s: %s" % (args[0], p.stderr[-2000:]))
    return p


def image_archive(wd, env):
    out = os.path.join(cache_dir(), "jobscope-%s.oci.tar" % version())
    if not os.path.exists(out):
        p = subprocess.run([os.path.join(ROOT, "deploy", "build-image.sh"), "--out", out + ".part",
                            debs()["jobscope"]], capture_output=True, text=True, env=env,
                           timeout=scaled(600))
        eq(p.returncode, 0, "build-image.sh: %s" % (p.stdout + p.stderr)[-3000:])
        os.rename(out + ".part", out)
    return out


def test_agent_runs_from_the_image(wd):
    env = podman_env(wd)
    archive = image_archive(wd, env)
    image = "localhost/jobscope:%s" % version()
    podman(env, "rmi", "-f", image, check_rc=False)
    p = podman(env, "load", "-q", "-i", archive)
    check(image in p.stdout, "the archive names %s: %s" % (image, p.stdout))
    # a process of this test, its own session: a job the agent must see
    marker = subprocess.Popen(["python3", "-c", "import time\nwhile True: sum(range(10000)); "
                               "time.sleep(0.01)", "jobscope-k8s-image-marker"],
                              start_new_session=True)
    store = wd.join("store")
    os.makedirs(store)
    name = "jobscope-k8s-image-%d" % os.getpid()
    try:
        podman(env, "run", "-d", "--name", name, "--privileged", "--pid=host", "--network=host",
               "--ulimit", "host", "--read-only", "--tmpfs", "/tmp",
               "-v", "/proc:/host/proc:ro", "-v", "/sys:/host/sys:ro",
               "-v", "%s:/var/lib/jobscope" % store, image,
               "agent", "--sysroot=/host", "--listen=127.0.0.1:0", "--interval=250ms",
               "--db=/var/lib/jobscope/agent.db")

        def port():
            logs = podman(env, "logs", name, check_rc=False)
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", logs.stdout + logs.stderr)
            if not m:
                time.sleep(0.2)  # a podman process per try: not at the poll's pace
            return int(m.group(1)) if m else None
        url = "http://127.0.0.1:%d" % wait_for(port, timeout=30, what="the agent's port")

        def marker_job():
            with urllib.request.urlopen(url + "/api/v1/jobs", timeout=5) as r:
                jobs = json.load(r)["jobs"]
            for j in jobs:
                if "jobscope-k8s-image-marker" in (j.get("command") or "") and \
                        (j["usage"]["cpu_seconds"] or 0) > 0:
                    return j
            return None
        job = wait_for(marker_job, timeout=30, what="the test's process as a job")
        with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
            metrics = r.read().decode()
        for series in ("jobscope_agent_ticks_total", "jobscope_node_cpus",
                       "jobscope_job_cpu_seconds_total"):
            check(re.search(r"^%s[{ ]" % series, metrics, re.M), "/metrics has %s" % series)
        check(re.search(r'^jobscope_job_cpu_seconds_total\{[^}]*job_id="%s"'
                        % re.escape(job["job_id"]), metrics, re.M),
              "the marker's CPU series (job %s)" % job["job_id"])
        check(os.path.exists(os.path.join(store, "agent.db")), "the store in /var/lib/jobscope")
    finally:
        podman(env, "rm", "-f", "-t", "5", name, check_rc=False)
        marker.kill()
        marker.wait()
        podman(env, "rmi", "-f", image, check_rc=False)


def _cmdline(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


def test_agent_runs_under_containerd(wd):
    """The image imported into containerd as docs/kubernetes-install.md says,
    and the agent run from it through CRI as the kubelet runs the DaemonSet's
    pod: hostPID, hostNetwork, privileged, read-only root, the host's /proc
    and /sys read-only under /host, /var/lib/jobscope and /tmp writable."""
    why = cri_harness.unavailable()
    if why:
        print("SKIP: no CRI pod here: %s" % why)
        return
    archive = image_archive(wd, podman_env(wd))
    image = "localhost/jobscope:%s" % version()
    ctd = cri_harness.Containerd(wd)
    marker = None
    try:
        # the archive's org.opencontainers.image.ref.name is the whole reference:
        # no --base-name needed; the CRI plugin adds the image's ID as a name too
        names = ctd.import_image(archive)
        eq([n for n in names if not n.startswith("sha256:")], [image],
           "the name containerd keeps (the manifests' image:): %s" % names)
        marker = subprocess.Popen(["python3", "-c", "import time\nwhile True: sum(range(10000)); "
                                   "time.sleep(0.01)", "jobscope-k8s-ctd-marker"],
                                  start_new_session=True)
        store, tmp, logs = wd.join("ctd-store"), wd.join("ctd-tmp"), wd.join("ctd-logs")
        for d in (store, tmp, logs):
            os.makedirs(d)
        pod = ctd.run_pod("jobscope", "jobscope-agent-x7k2p", [], qos="burstable",
                          labels={"app.kubernetes.io/name": "jobscope",
                                  "app.kubernetes.io/component": "agent"},
                          host_pid=True, privileged=True, log_dir=logs)
        ctd.add_container(pod, "agent", [], image=image, privileged=True, readonly_rootfs=True,
                          args=["agent", "--sysroot=/host", "--listen=127.0.0.1:0",
                                "--interval=250ms", "--db=/var/lib/jobscope/agent.db",
                                "--max-db-size=2G"],
                          mounts=[("/proc", "/host/proc", True), ("/sys", "/host/sys", True),
                                  (store, "/var/lib/jobscope", False), (tmp, "/tmp", False)],
                          log_path="agent/0.log")
        log = os.path.join(logs, "agent", "0.log")

        def port():
            text = open(log).read() if os.path.exists(log) else ""
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", text)
            return int(m.group(1)) if m else None
        url = "http://127.0.0.1:%d" % wait_for(port, timeout=30, what="the agent's port in its "
                                               "CRI log")

        def marker_job():
            with urllib.request.urlopen(url + "/api/v1/jobs", timeout=5) as r:
                jobs = json.load(r)["jobs"]
            for j in jobs:
                if "jobscope-k8s-ctd-marker" in (j.get("command") or "") and \
                        (j["usage"]["cpu_seconds"] or 0) > 0:
                    return j
            return None
        job = wait_for(marker_job, timeout=30, what="the test's process as a job")
        with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
            metrics = r.read().decode()
        for series in ("jobscope_agent_ticks_total", "jobscope_node_cpus",
                       "jobscope_job_cpu_seconds_total"):
            check(re.search(r"^%s[{ ]" % series, metrics, re.M), "/metrics has %s" % series)
        check(re.search(r'^jobscope_job_cpu_seconds_total\{[^}]*job_id="%s"'
                        % re.escape(job["job_id"]), metrics, re.M),
              "the marker's CPU series (job %s)" % job["job_id"])
        check(os.path.exists(os.path.join(store, "agent.db")), "the store in /var/lib/jobscope")
        # its mounts, seen from here (the node's PID namespace): read-only as asked
        agent = [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p).startswith(
            b"/usr/bin/jobscope\0agent\0--sysroot=/host\0")]
        eq(len(agent), 1, "one agent process in the node's PID namespace")
        opts = {}
        for line in open("/proc/%s/mountinfo" % agent[0]):
            f = line.split()
            opts[f[4]] = f[5].split(",")
        for path, mode in (("/", "ro"), ("/host/proc", "ro"), ("/host/sys", "ro"),
                           ("/var/lib/jobscope", "rw"), ("/tmp", "rw")):
            check(mode in opts.get(path, []), "%s mounted %s: %s" % (path, mode, opts.get(path)))
    finally:
        if marker:
            marker.kill()
            marker.wait()
        ctd.close()


if __name__ == "__main__":
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing or os.geteuid() != 0:
        print("SKIP test_k8s_image: %s" % ("not root" if not missing else
                                           "not installed: " + ", ".join(missing)))
        sys.exit(77)
    run_tests(dict(globals()))
