"""A real containerd (Debian's, its CRI plugin built in) on a private root,
state and socket, driven through CRI as the kubelet drives it
(../shared/reference/kubernetes.md, "Running a real CRI pod").

The image is made here: one layer of busybox-static's /bin/busybox and
symlinks, as an OCI layout tar imported with ctr; it serves as the pause
image too (its entrypoint sleeps).  CRI messages are protobuf encoded by
hand (the few fields used, numbered as in the CRI's api.proto) and sent
through Debian's python3-grpcio, raw bytes in and out, by /usr/bin/python3
(the tests' interpreter may lack the module).

Pods can also be asked for as the kubelet asks for a DaemonSet's such as
jobscope's agent (test_k8s_image.py): the node's PID namespace (hostPID),
privileged sandbox and container, a read-only root, bind mounts (hostPath
and emptyDir volumes), arguments after the image's entrypoint and a CRI log
file; import_image() loads another image (an OCI archive) with `ctr -n
k8s.io images import`, as a site loads one into a node.

Everything made is removed by close(): the pods, the containerd process
(by its PID), the kubepods cgroups it made and the directories the shim
keeps whatever the state directory is (/run/containerd/runc/k8s.io,
/run/containerd/s) when they were not there before and are empty (another
test's shims may be using them).
"""
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import tarfile
import time
import uuid

from harness import wait_for
from rw_proto import read_varint, varint  # protobuf's varints, written and read

SYSTEM_PY = "/usr/bin/python3"
BUSYBOX = "/bin/busybox"
IMAGE = "docker.io/library/jsbusybox:1"


def unavailable():
    """Why a CRI pod cannot run here, or None."""
    if os.geteuid() != 0:
        return "not root"
    for path in (shutil.which("containerd"), shutil.which("ctr"), shutil.which("runc"),
                 BUSYBOX, SYSTEM_PY):
        if not path or not os.path.exists(path):
            return "missing %s" % path
    r = subprocess.run([SYSTEM_PY, "-c", "import grpc"], capture_output=True)
    if r.returncode != 0:
        return "no python3-grpcio for %s" % SYSTEM_PY
    return None


# --- protobuf, by hand --------------------------------------------------------

def pb_int(field, n):
    return varint(field << 3) + varint(n & 0xFFFFFFFFFFFFFFFF)


def pb_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(field << 3 | 2) + varint(len(data)) + data


def pb_map(field, d):
    return b"".join(pb_bytes(field, pb_bytes(1, k) + pb_bytes(2, v)) for k, v in d.items())


def pb_first_string(data, field):
    """The first length-delimited field `field` of a message, decoded."""
    i = 0
    while i < len(data):
        key, i = read_varint(data, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            _, i = read_varint(data, i)
        elif wt == 2:
            n, i = read_varint(data, i)
            if f == field:
                return data[i:i + n].decode()
            i += n
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        else:
            raise ValueError("wire type %d" % wt)
    return None


_CALL = r"""
import sys, grpc
sock, method = sys.argv[1], sys.argv[2]
body = sys.stdin.buffer.read()
ch = grpc.insecure_channel("unix://" + sock)
call = ch.unary_unary(method, request_serializer=None, response_deserializer=None)
try:
    out = call(body, timeout=60)
except grpc.RpcError as e:
    sys.stderr.write("%s: %s\n" % (e.code(), e.details()))
    sys.exit(1)
sys.stdout.buffer.write(out)
"""


# --- the image ----------------------------------------------------------------

def _blob(layout, data):
    digest = hashlib.sha256(data).hexdigest()
    path = os.path.join(layout, "blobs", "sha256", digest)
    with open(path, "wb") as f:
        f.write(data)
    return {"digest": "sha256:" + digest, "size": len(data)}


def make_image(path):
    """An OCI layout tar of one layer: /bin/busybox and its symlinks (no hard
    links: they lose their mode in the layer)."""
    layout = path + ".d"
    os.makedirs(os.path.join(layout, "blobs", "sha256"), exist_ok=True)
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as t:
        for d in ("bin", "tmp", "proc", "sys", "dev", "etc"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            t.addfile(info)
        with open(BUSYBOX, "rb") as f:
            data = f.read()
        info = tarfile.TarInfo("bin/busybox")
        info.size, info.mode = len(data), 0o755
        t.addfile(info, io.BytesIO(data))
        for name in ("sh", "sleep", "cat", "true"):
            info = tarfile.TarInfo("bin/" + name)
            info.type, info.linkname = tarfile.SYMTYPE, "busybox"
            t.addfile(info)
    layer = layer.getvalue()
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": ["PATH=/bin"], "Entrypoint": ["/bin/sleep"], "Cmd": ["1000000"]},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }).encode()
    cfg = _blob(layout, config)
    lay = _blob(layout, layer)
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": dict(cfg, mediaType="application/vnd.oci.image.config.v1+json"),
        "layers": [dict(lay, mediaType="application/vnd.oci.image.layer.v1.tar")],
    }).encode()
    man = _blob(layout, manifest)
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [dict(
            man, mediaType="application/vnd.oci.image.manifest.v1+json",
            annotations={"io.containerd.image.name": IMAGE,
                         "org.opencontainers.image.ref.name": "1"})]}, f)
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    with tarfile.open(path, "w") as t:
        for name in ("oci-layout", "index.json", "blobs"):
            t.add(os.path.join(layout, name), arcname=name)
    shutil.rmtree(layout)
    return path


# --- containerd ---------------------------------------------------------------

CGROUP_ROOT = "/sys/fs/cgroup"
SHIM_DIRS = ("/run/containerd/runc/k8s.io", "/run/containerd/s", "/run/containerd/runc",
             "/run/containerd")


def _cgroup_hierarchies():
    if os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers")):
        return [CGROUP_ROOT]
    return [os.path.join(CGROUP_ROOT, d) for d in sorted(os.listdir(CGROUP_ROOT))
            if os.path.isdir(os.path.join(CGROUP_ROOT, d)) and not os.path.islink(
                os.path.join(CGROUP_ROOT, d))]


def _rmdir_tree(path):
    """Removes a cgroup directory and those under it, deepest first."""
    if not os.path.isdir(path):
        return
    for root, dirs, _ in os.walk(path, topdown=False):
        for d in dirs:
            try:
                os.rmdir(os.path.join(root, d))
            except OSError:
                pass
    try:
        os.rmdir(path)
    except OSError:
        pass


class Containerd:
    """containerd on wd's private root, state and socket; CRI calls on it."""

    def __init__(self, wd):
        self.wd = wd.join("ctd")
        os.makedirs(self.wd, exist_ok=True)
        self.sock = os.path.join(self.wd, "ctd.sock")
        self.pods = []
        self.had = {d: os.path.exists(d) for d in SHIM_DIRS}
        self.had_cgroups = {h: os.path.exists(os.path.join(h, "kubepods"))
                            for h in _cgroup_hierarchies()}
        self.had_qos = {(h, q): os.path.exists(os.path.join(h, "kubepods", q))
                        for h in self.had_cgroups for q in ("besteffort", "burstable")}
        w = self.wd
        config = subprocess.run(["containerd", "config", "default"], capture_output=True,
                                text=True, check=True).stdout
        for old, new in (
                ('root = "/var/lib/containerd"', 'root = "%s/root"' % w),
                ('state = "/run/containerd"', 'state = "%s/state"' % w),
                ('address = "/run/containerd/containerd.sock"', 'address = "%s"' % self.sock),
                ('sandbox_image = "registry.k8s.io/pause:3.6"', 'sandbox_image = "%s"' % IMAGE),
                ('conf_dir = "/etc/cni/net.d"', 'conf_dir = "%s/cni"' % w),
                ('path = "/opt/containerd"', 'path = "%s/opt"' % w),
                ("disable_apparmor = false", "disable_apparmor = true"),
                ("restrict_oom_score_adj = false", "restrict_oom_score_adj = true")):
            if old not in config:
                raise AssertionError("containerd's default config has no %r" % old)
            config = config.replace(old, new)
        with open(os.path.join(w, "config.toml"), "w") as f:
            f.write(config)
        self.log = open(os.path.join(w, "containerd.log"), "w")
        self.proc = subprocess.Popen(["containerd", "--config", os.path.join(w, "config.toml")],
                                     stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: self.proc.poll() is None and os.path.exists(self.sock) and
                     self._version_ok(), timeout=30, what="containerd's CRI socket")
            image = make_image(os.path.join(w, "image.tar"))
            subprocess.run(["ctr", "--address", self.sock, "-n", "k8s.io", "images", "import",
                            "--no-unpack", image], check=True, capture_output=True)
        except BaseException:
            self.close()
            raise

    def _version_ok(self):
        try:
            self.call("/runtime.v1.RuntimeService/Version", b"")
            return True
        except AssertionError:
            return False

    def call(self, method, body):
        r = subprocess.run([SYSTEM_PY, "-c", _CALL, self.sock, method], input=body,
                           capture_output=True, timeout=90)
        if r.returncode != 0:
            raise AssertionError("CRI %s: %s" % (method, r.stderr.decode(errors="replace")))
        return r.stdout

    def containerd_log(self):
        with open(os.path.join(self.wd, "containerd.log")) as f:
            return f.read()

    @staticmethod
    def cgroup_parent(qos, uid):
        return ("/kubepods/pod%s" % uid if qos == "guaranteed"
                else "/kubepods/%s/pod%s" % (qos, uid))

    def import_image(self, archive, base_name=None):
        """`ctr -n k8s.io images import` of an OCI archive, as a site loads an
        image into a node's containerd (unpacked: the kubelet's pods need the
        snapshot).  Returns the names containerd lists for it."""
        before = set(self.images())
        args = ["ctr", "--address", self.sock, "-n", "k8s.io", "images", "import"]
        if base_name:
            args += ["--base-name", base_name]
        r = subprocess.run(args + [archive], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise AssertionError("ctr images import %s: %s" % (archive, r.stderr[-2000:]))
        return sorted(set(self.images()) - before)

    def images(self):
        """The image names in containerd's k8s.io namespace."""
        r = subprocess.run(["ctr", "--address", self.sock, "-n", "k8s.io", "images", "ls", "-q"],
                           capture_output=True, text=True, check=True, timeout=60)
        return r.stdout.split()

    @staticmethod
    def _namespaces(pid_node):
        # network NODE always (no CNI here); pid NODE for hostPID pods
        return pb_int(1, 2) + (pb_int(2, 2) if pid_node else b"")

    def run_pod(self, namespace, name, containers, qos="besteffort", uid=None, labels=None,
                host_pid=False, privileged=False, log_dir=None):
        """A pod: its sandbox, then each (name, command, resources) container
        created and started.  host_pid: the node's PID namespace (hostPID:
        true); privileged: the sandbox may hold privileged containers (the
        kubelet says so when one of the pod's containers is); log_dir: the
        sandbox's log directory (a container's log_path is under it).
        Returns a dict: uid, sandbox, containers {name: id}."""
        uid = uid or str(uuid.uuid4())
        meta = pb_bytes(1, name) + pb_bytes(2, uid) + pb_bytes(3, namespace) + pb_int(4, 0)
        security = (pb_bytes(1, self._namespaces(host_pid)) +
                    (pb_int(6, 1) if privileged else b""))
        linux = pb_bytes(1, self.cgroup_parent(qos, uid)) + pb_bytes(2, security)
        sandbox_config = (pb_bytes(1, meta) +
                          (pb_bytes(3, log_dir) if log_dir else b"") +
                          pb_map(6, dict(labels or {}, **{"io.kubernetes.pod.name": name})) +
                          pb_bytes(8, linux))
        out = self.call("/runtime.v1.RuntimeService/RunPodSandbox", pb_bytes(1, sandbox_config))
        sandbox = pb_first_string(out, 1)
        pod = {"uid": uid, "sandbox": sandbox, "containers": {}, "config": sandbox_config,
               "qos": qos, "host_pid": host_pid}
        self.pods.append(pod)
        for c in containers:
            self.add_container(pod, *c)
        return pod

    def add_container(self, pod, name, command, resources=None, attempt=0, image=IMAGE,
                      args=(), mounts=(), privileged=False, readonly_rootfs=False,
                      log_path=None):
        """command: the entrypoint (empty: the image's); args: its arguments;
        mounts: (host_path, container_path, readonly) bind mounts, as the
        kubelet turns hostPath and emptyDir volumes into; log_path: relative
        to the pod's log_dir."""
        res = b""
        if resources:
            res = pb_bytes(1, pb_int(1, resources.get("cpu_period", 100000)) +
                           pb_int(2, resources.get("cpu_quota", 0)) +
                           pb_int(4, resources.get("memory", 0)))
        security = b""
        if privileged or readonly_rootfs or pod.get("host_pid"):
            # the kubelet repeats the pod's namespaces in each container's context
            security = ((pb_int(2, 1) if privileged else b"") +
                        pb_bytes(3, self._namespaces(pod.get("host_pid"))) +
                        (pb_int(7, 1) if readonly_rootfs else b""))
        linux = res + (pb_bytes(2, security) if security else b"")
        config = (pb_bytes(1, pb_bytes(1, name) + pb_int(2, attempt)) +
                  pb_bytes(2, pb_bytes(1, image)) +
                  b"".join(pb_bytes(3, a) for a in command) +
                  b"".join(pb_bytes(4, a) for a in args) +
                  b"".join(pb_bytes(7, pb_bytes(1, cpath) + pb_bytes(2, hpath) +
                                    (pb_int(3, 1) if ro else b""))
                           for hpath, cpath, ro in mounts) +
                  (pb_bytes(11, log_path) if log_path else b"") +
                  (pb_bytes(15, linux) if linux else b""))
        out = self.call("/runtime.v1.RuntimeService/CreateContainer",
                        pb_bytes(1, pod["sandbox"]) + pb_bytes(2, config) +
                        pb_bytes(3, pod["config"]))
        cid = pb_first_string(out, 1)
        self.call("/runtime.v1.RuntimeService/StartContainer", pb_bytes(1, cid))
        pod["containers"][name] = cid
        return cid

    def stop_container(self, cid):
        self.call("/runtime.v1.RuntimeService/StopContainer", pb_bytes(1, cid) + pb_int(2, 0))
        self.call("/runtime.v1.RuntimeService/RemoveContainer", pb_bytes(1, cid))

    def remove_pod(self, pod):
        self.call("/runtime.v1.RuntimeService/StopPodSandbox", pb_bytes(1, pod["sandbox"]))
        self.call("/runtime.v1.RuntimeService/RemovePodSandbox", pb_bytes(1, pod["sandbox"]))
        if pod in self.pods:
            self.pods.remove(pod)
        for h in self.had_cgroups:
            _rmdir_tree(os.path.join(h, self.cgroup_parent(pod["qos"], pod["uid"]).lstrip("/")))

    def close(self):
        for pod in list(self.pods):
            try:
                self.remove_pod(pod)
            except Exception:  # noqa: BLE001 - cleaning up whatever state it is in
                self.pods.remove(pod)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        # shims outlive containerd only while their tasks run: give them a moment
        deadline = time.monotonic() + 10
        for h, had in self.had_cgroups.items():
            for q in ("besteffort", "burstable"):
                if not self.had_qos[(h, q)]:
                    _rmdir_tree(os.path.join(h, "kubepods", q))
            if not had:
                while time.monotonic() < deadline and os.path.exists(
                        os.path.join(h, "kubepods")):
                    _rmdir_tree(os.path.join(h, "kubepods"))
                    if os.path.exists(os.path.join(h, "kubepods")):
                        time.sleep(0.2)
        # only when empty: another test's shims may keep theirs there meanwhile
        for d in SHIM_DIRS:
            if not self.had[d] and os.path.isdir(d):
                try:
                    os.rmdir(d)
                except OSError:
                    print("cri_harness: %s left: %s" % (d, os.listdir(d)))
        subprocess.run(["umount", "-R", os.path.join(self.wd, "state")], capture_output=True)
        subprocess.run(["umount", "-R", os.path.join(self.wd, "root")], capture_output=True)
