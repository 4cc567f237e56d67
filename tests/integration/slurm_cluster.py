"""A private single-node Slurm cluster for jobscope's integration tests.

    cluster = SlurmCluster(tmpdir)          # tmpdir: an empty private directory
    cluster.start()                         # raises SlurmUnavailable(reason)
    jobid = cluster.sbatch("#!/bin/sh\\nsleep 1\\n", "--cpus-per-task=1", "--mem=200M")
    state = cluster.wait_job(jobid, timeout=30)   # "COMPLETED", "FAILED", ...
    text = cluster.output(jobid)
    cluster.stop()

Everything lives under tmpdir: a private munged (own key, own socket) and a
slurmctld and slurmd (as root, SlurmUser=root) on free loopback ports, with
proctrack/cgroup, task/cgroup,task/affinity, jobacct_gather/cgroup,
ConstrainCores/ConstrainRAMSpace and no slurmdbd.  Job cgroups are
/sys/fs/cgroup/<controller>/slurm_<nodename>/uid_0/job_<id>/step_<step>/task_<n>
(Debian's build puts the node name in the v1 root).  SlurmctldHost must be
this machine's real short hostname (slurmctld refuses otherwise); NodeName
is free, slurmd gets -N.  gpus=N adds N fake GPUs (GRES only: device nodes
c 195:i under tmpdir), so jobs get SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES.

The daemons run in the foreground as children of this process and are
stopped by PID.  slurmd runs under a small subreaper (see _REAPER): the
slurmstepd processes that daemonize away from slurmd are adopted and reaped
there rather than lingering as zombies under PID 1, and stop() can find
them exactly (children of the reaper).  reap=False gives the plain layout
(slurmstepd's parent is PID 1).  One cluster per nodename at a time: job
ids restart at 1 and the cgroup paths would collide.

Stdlib only; needs root, cgroup v1 controllers under /sys/fs/cgroup, and
the Debian packages slurm-wlm and munge.  Run this file directly for a
self-check that prints what a batch job sees.
"""
import atexit
import os
import pwd
import random
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

from harness import scaled, tail

SBIN_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
CGROUP_ROOT = "/sys/fs/cgroup"
FINAL_STATES = {
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
    "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED",
}


class SlurmUnavailable(Exception):
    """Slurm or munge is missing, or the private cluster could not start."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason



def _mem_total_mb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    return 1024


def _parse_scontrol(text):
    """'Key=Value Key2=Value two ...' (scontrol show -o) -> dict."""
    out = {}
    for part in re.split(r"\s+(?=[A-Za-z][A-Za-z0-9_:/]*=)", text.strip()):
        key, sep, value = part.partition("=")
        if sep:
            out[key] = value
    return out


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def _server_port(taken=()):
    """A free loopback port below the kernel's ephemeral range.  slurmctld and slurmd
    take their ports from slurm.conf, not port 0; a port the kernel handed out once
    (free_port) may be any client's next one, on a machine where tests run side by
    side, where no client is given a port below that range."""
    lo = _ephemeral_range()[0]
    while True:
        port = random.randrange(10000, lo if lo > 11000 else 30000)
        if port in taken:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue


def _processes():
    """(pid, ppid, comm, state) of every process, from /proc/PID/stat."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out.append((int(entry), int(fields[1]), comm, fields[0]))
    return out


# Runs slurmd as its child, as a child subreaper (PR_SET_CHILD_SUBREAPER), so
# the slurmstepd processes that daemonize away from slurmd are adopted and
# reaped here instead of becoming zombies under a PID 1 that does not reap.
# On SIGTERM: SIGTERM slurmd, wait for it (SIGKILL after 10 s), then SIGKILL
# any adopted process still alive and reap everything; exit with slurmd's status.
_REAPER = r"""
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(36, 1, 0, 0, 0) != 0:   # PR_SET_CHILD_SUBREAPER
    sys.exit("reaper: prctl(PR_SET_CHILD_SUBREAPER) failed")
stop = []
signal.signal(signal.SIGTERM, lambda s, f: stop.append(s))
signal.signal(signal.SIGINT, lambda s, f: stop.append(s))
main = os.fork()
if main == 0:
    os.execv(sys.argv[1], sys.argv[1:])
status = None
term_at = None
def children():
    me = str(os.getpid())
    out = []
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                st = open("/proc/%s/stat" % e).read()
            except OSError:
                continue
            if st[st.rindex(")") + 2:].split()[1] == me:
                out.append(int(e))
    return out
while True:
    while True:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            sys.exit(0 if status is None else os.waitstatus_to_exitcode(status) & 255)
        if pid == 0:
            break
        if pid == main:
            status = st
            term_at = term_at or time.monotonic()
    now = time.monotonic()
    if stop and term_at is None:
        term_at = now
        os.kill(main, signal.SIGTERM)
    if status is None and term_at is not None and now - term_at > 10:
        os.kill(main, signal.SIGKILL)
    if status is not None:
        for pid in children():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    time.sleep(0.05)
"""


class SlurmCluster:
    def __init__(self, tmpdir, nodename="vm", cpus=None, real_memory_mb=None,
                 cgroup_plugin="autodetect", min_job_age=300, extra_conf="",
                 extra_cgroup_conf="", reap=True, gpus=0):
        self.dir = os.path.abspath(tmpdir)
        self.nodename = nodename
        # slurmctld refuses to run unless SlurmctldHost names this host
        # ("This host (vm/vm) not a valid controller"); NodeName is free
        # (slurmd gets -N), it only names the cgroup root slurm_<nodename>.
        self.ctld_host = socket.gethostname().split(".")[0]
        self.cpus = cpus or len(os.sched_getaffinity(0))
        self.real_memory_mb = real_memory_mb or max(256, _mem_total_mb() * 9 // 10)
        self.cgroup_plugin = cgroup_plugin
        self.min_job_age = min_job_age
        self.extra_conf = extra_conf
        self.extra_cgroup_conf = extra_cgroup_conf
        self.reap = reap
        self.gpus = gpus
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.munge_dir = os.path.join(self.dir, "munge")
        self.munge_socket = os.path.join(self.munge_dir, "munge.sock")
        self.log_dir = os.path.join(self.dir, "log")
        self.job_dir = os.path.join(self.dir, "jobs")
        self.procs = {}          # name -> Popen (munged, slurmctld, slurmd)
        self.ctld_port = self.slurmd_port = None
        self.start_seconds = None
        self._script_seq = 0

    # ---------------------------------------------------------------- setup
    def _check_prerequisites(self):
        if os.geteuid() != 0:
            raise SlurmUnavailable("not root")
        for prog in ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo"):
            if not shutil.which(prog, path=SBIN_PATH):
                raise SlurmUnavailable("%s not installed" % prog)
        try:
            pwd.getpwnam("munge")
        except KeyError:
            raise SlurmUnavailable("no munge user")
        if not os.path.isdir(os.path.join(CGROUP_ROOT, "memory")) or \
                not os.path.isdir(os.path.join(CGROUP_ROOT, "freezer")):
            raise SlurmUnavailable("cgroup v1 memory/freezer controllers not mounted")

    def _write(self, name, text, mode=0o644):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def _write_config(self):
        d, n = self.dir, self.nodename
        self._write("slurm.conf", f"""\
ClusterName=jobscope-test
SlurmctldHost={self.ctld_host}(127.0.0.1)
SlurmctldPort={self.ctld_port}
SlurmdPort={self.slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/slurmd-%n
SlurmctldPidFile={d}/state/slurmctld.pid
SlurmdPidFile={d}/spool/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig={d}/plugstack.conf
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
JobAcctGatherType=jobacct_gather/cgroup
JobAcctGatherFrequency=task=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge={self.min_job_age}
KillWait=5
InactiveLimit=0
SlurmdTimeout=60
{"GresTypes=gpu" if self.gpus else ""}
NodeName={n} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={self.real_memory_mb} \
{"Gres=gpu:%d " % self.gpus if self.gpus else ""}State=UNKNOWN
PartitionName=test Nodes={n} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
{self.extra_conf}""")
        self._write("cgroup.conf", f"""\
CgroupPlugin={self.cgroup_plugin}
ConstrainCores=yes
ConstrainRAMSpace=yes
{self.extra_cgroup_conf}""")
        self._write("plugstack.conf", "")
        if self.gpus:
            # Fake GPUs for the GRES bookkeeping only (SLURM_JOB_GPUS,
            # CUDA_VISIBLE_DEVICES): slurmd wants character devices, so these
            # are nodes c 195:i (NVIDIA's major) under tmpdir; nothing opens them.
            os.makedirs(os.path.join(d, "dev"), exist_ok=True)
            for i in range(self.gpus):
                path = os.path.join(d, "dev", "nvidia%d" % i)
                if not os.path.exists(path):
                    os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(195, i))
            self._write("gres.conf", "AutoDetect=off\nName=gpu File=%s/dev/nvidia[0-%d]\n"
                        % (d, self.gpus - 1))

    def _start_munged(self):
        os.makedirs(self.munge_dir, exist_ok=True)
        pw = pwd.getpwnam("munge")
        os.chown(self.munge_dir, pw.pw_uid, pw.pw_gid)
        os.chmod(self.munge_dir, 0o755)     # munged refuses a socket dir not world-x
        key = os.path.join(self.munge_dir, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chown(key, pw.pw_uid, pw.pw_gid)
        os.chmod(key, 0o400)
        out = open(os.path.join(self.log_dir, "munged.out"), "wb")
        self.procs["munged"] = subprocess.Popen(
            [shutil.which("munged", path=SBIN_PATH), "--foreground",
             "--socket=" + self.munge_socket, "--key-file=" + key,
             "--pid-file=" + os.path.join(self.munge_dir, "munged.pid"),
             "--log-file=" + os.path.join(self.munge_dir, "munged.log"),
             "--seed-file=" + os.path.join(self.munge_dir, "seed")],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            user=pw.pw_uid, group=pw.pw_gid, extra_groups=[], cwd=self.munge_dir,
            start_new_session=True)
        out.close()

    def _start_daemon(self, name, argv, reaper=False):
        if reaper:
            argv = [sys.executable, "-c", _REAPER] + argv
        out = open(os.path.join(self.log_dir, name + ".out"), "wb")
        self.procs[name] = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            env=self.env(), cwd=self.dir, start_new_session=True)
        out.close()

    def _logs(self, name):
        files = {"munged": [os.path.join(self.munge_dir, "munged.log"),
                            os.path.join(self.log_dir, "munged.out")],
                 "slurmctld": [os.path.join(self.log_dir, "slurmctld.log"),
                               os.path.join(self.log_dir, "slurmctld.out")],
                 "slurmd": [os.path.join(self.log_dir, "slurmd-%s.log" % self.nodename),
                            os.path.join(self.log_dir, "slurmd.out")]}[name]
        return "".join("--- %s\n%s" % (p, tail(p, 20)) for p in files if os.path.exists(p))

    def _wait_until(self, what, pred, deadline, daemons):
        while True:
            for name in daemons:
                p = self.procs.get(name)
                if p is not None and p.poll() is not None:
                    raise SlurmUnavailable("%s exited with %s while waiting for %s\n%s"
                                           % (name, p.returncode, what, self._logs(name)))
            if pred():
                return
            if time.monotonic() > deadline:
                raise SlurmUnavailable("timed out waiting for %s\n%s" % (
                    what, "".join(self._logs(n) for n in daemons)))
            time.sleep(0.05)

    def _munge_ready(self):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(self.munge_socket)
                return True
            except OSError:
                return False

    def _ctld_up(self):
        try:
            return "UP" in self.run("scontrol", "ping", timeout=5, check=False).stdout
        except subprocess.TimeoutExpired:  # another server holds the port: slurmctld exits
            return False

    def _node_state(self):
        try:
            r = self.run("sinfo", "-h", "-n", self.nodename, "-o", "%T", timeout=5, check=False)
        except subprocess.TimeoutExpired:
            return ""
        return r.stdout.strip() if r.returncode == 0 else ""

    def start(self, timeout=20, attempts=3):
        """Starts the daemons; again on other ports when a port was taken meanwhile."""
        for attempt in range(attempts):
            try:
                return self._start(timeout)
            except SlurmUnavailable as e:
                if "Address already in use" not in e.reason or attempt == attempts - 1:
                    raise
                for sub in ("state", "log", "munge", "spool"):  # what the failed start left
                    shutil.rmtree(os.path.join(self.dir, sub), ignore_errors=True)
        return self

    def _start(self, timeout):
        t0 = time.monotonic()
        deadline = t0 + scaled(timeout)
        self._check_prerequisites()
        os.chmod(self.dir, 0o755)           # munge user must traverse it
        for sub in ("state", "spool", "spool/slurmd-" + self.nodename, "log", "jobs"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        self.ctld_port = _server_port()
        self.slurmd_port = _server_port(taken=(self.ctld_port,))
        self._write_config()
        atexit.register(self.stop)          # in case a test forgets; stop() unregisters
        try:
            self._start_munged()
            self._wait_until("munged socket", self._munge_ready, deadline, ["munged"])
            self._start_daemon("slurmctld", [shutil.which("slurmctld", path=SBIN_PATH),
                                             "-D", "-f", self.conf])
            self._wait_until("slurmctld", self._ctld_up, deadline, ["munged", "slurmctld"])
            self._start_daemon("slurmd", [shutil.which("slurmd", path=SBIN_PATH),
                                          "-D", "-f", self.conf, "-N", self.nodename],
                               reaper=self.reap)
            self._wait_until("node %s idle" % self.nodename,
                             lambda: self._node_state() == "idle",
                             deadline, ["munged", "slurmctld", "slurmd"])
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    # --------------------------------------------------------------- clients
    def env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = self.conf
        env["PATH"] = SBIN_PATH + (":" + env["PATH"] if env.get("PATH") else "")
        return env

    def run(self, *cmd, timeout=30, check=True):
        r = subprocess.run(list(cmd), env=self.env(), stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr))
        return r

    def sbatch(self, script_text, *args):
        """Submits script_text; returns the job id.  Output goes to output_path(jobid)."""
        self._script_seq += 1
        script = os.path.join(self.job_dir, "script-%d.sh" % self._script_seq)
        with open(script, "w") as f:
            f.write(script_text)
        os.chmod(script, 0o755)
        r = self.run("sbatch", "--parsable", "--chdir=" + self.job_dir,
                     "--output=" + os.path.join(self.job_dir, "slurm-%j.out"),
                     *args, script)
        return int(r.stdout.strip().split(";")[0])

    def output_path(self, jobid):
        return os.path.join(self.job_dir, "slurm-%d.out" % jobid)

    def output(self, jobid):
        with open(self.output_path(jobid), errors="replace") as f:
            return f.read()

    def job_info(self, jobid):
        """scontrol show job as a dict, or {} once the job is unknown."""
        r = self.run("scontrol", "show", "job", "-o", str(jobid), timeout=10, check=False)
        return _parse_scontrol(r.stdout) if r.returncode == 0 else {}

    def job_state(self, jobid):
        state = self.job_info(jobid).get("JobState", "UNKNOWN")
        return state

    def wait_job(self, jobid, timeout=60, states=FINAL_STATES):
        """Polls until the job reaches one of states; returns it (raises on timeout,
        scaled)."""
        deadline = time.monotonic() + scaled(timeout)
        while True:
            state = self.job_state(jobid)
            if state in states:
                return state
            if time.monotonic() > deadline:
                raise TimeoutError("job %d still %s after %ss" % (jobid, state, timeout))
            time.sleep(0.1)

    def job_cgroup(self, jobid, controller="memory", uid=0):
        """/sys/fs/cgroup/<controller>/slurm_<node>/uid_<uid>/job_<id> (may not exist)."""
        return os.path.join(CGROUP_ROOT, controller, "slurm_" + self.nodename,
                            "uid_%d" % uid, "job_%d" % jobid)

    # ------------------------------------------------------------------ stop
    def _own_stepds(self):
        """PIDs of this cluster's slurmstepd processes (zombies included when reaping).

        With the reaper they are its children; without it (their parent is
        then PID 1) they are recognised by SLURM_CONF in their environment.
        """
        p = self.procs.get("slurmd")
        if p is None:
            return []
        if self.reap:
            return [pid for pid, ppid, comm, _st in _processes()
                    if ppid == p.pid and comm.startswith("slurmstepd")]
        mark = b"SLURM_CONF=" + self.conf.encode()
        pids = []
        for pid, _ppid, comm, st in _processes():
            if comm.startswith("slurmstepd") and st != "Z":
                try:
                    with open("/proc/%d/environ" % pid, "rb") as f:
                        if mark in f.read().split(b"\0"):
                            pids.append(pid)
                except OSError:
                    pass
        return pids

    def slurmd_pid(self):
        """PID of slurmd itself (a child of the reaper process when reaping)."""
        p = self.procs.get("slurmd")
        if p is None or not self.reap:
            return p.pid if p is not None else None
        for pid, ppid, comm, _st in _processes():
            if ppid == p.pid and comm == "slurmd":
                return pid
        return None

    def _stop_proc(self, name, timeout=10):
        p = self.procs.get(name)
        if p is None or p.poll() is not None:
            return
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)

    def stop(self, timeout=20):
        """Cancels all jobs, waits (bounded) for their steps, stops the daemons by PID.

        slurmd runs under the reaper, which on SIGTERM stops slurmd, then
        SIGKILLs and reaps any slurmstepd still alive, so nothing is left.
        """
        deadline = time.monotonic() + scaled(timeout)
        ctld = self.procs.get("slurmctld")
        slurmd = self.procs.get("slurmd")
        if ctld is not None and ctld.poll() is None:
            self.run("scancel", "--user=root", timeout=5, check=False)
            while slurmd is not None and slurmd.poll() is None and time.monotonic() < deadline:
                jobs = self.run("squeue", "-h", "-o", "%i", timeout=5, check=False)
                if jobs.returncode != 0 or not jobs.stdout.strip():
                    break
                time.sleep(0.1)
        while slurmd is not None and slurmd.poll() is None and self._own_stepds() and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        leftover = [] if self.reap else self._own_stepds()
        self._stop_proc("slurmd", timeout=15)
        for pid in leftover:                # the reaper does this itself
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._stop_proc("slurmctld")
        self._stop_proc("munged")
        started = bool(self.procs)
        self.procs.clear()
        atexit.unregister(self.stop)
        if started:
            self._remove_cgroups()

    def _remove_cgroups(self):
        """rmdir the (empty) slurm_<node> cgroup trees left in each v1 controller."""
        try:
            controllers = os.listdir(CGROUP_ROOT)
        except OSError:
            return
        for c in controllers:
            top = os.path.join(CGROUP_ROOT, c, "slurm_" + self.nodename)
            if not os.path.isdir(top):
                continue
            for root, dirs, _files in os.walk(top, topdown=False):
                for d in dirs:
                    try:
                        os.rmdir(os.path.join(root, d))
                    except OSError:
                        pass
            try:
                os.rmdir(top)
            except OSError:
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


SELF_CHECK_SCRIPT = """\
#!/bin/bash
echo "== self: pid $$ ppid $PPID"
echo "== /proc/self/cgroup"; cat /proc/self/cgroup
echo "== SLURM_ env"; env | grep ^SLURM_ | sort
echo "== parent $PPID: $(tr '\\0' ' ' < /proc/$PPID/cmdline)"
cat /proc/$PPID/cgroup
sleep 0.2 & echo "== child $! ppid $(awk '{print $4}' /proc/$!/stat)"; wait
echo "== job cgroup limits"
cg=$(awk -F: '$2=="memory"{print $3}' /proc/self/cgroup)
echo "memory.limit_in_bytes $(cat /sys/fs/cgroup/memory${cg%%/step_*}/memory.limit_in_bytes)"
cs=$(awk -F: '$2=="cpuset"{print $3}' /proc/self/cgroup)
echo "cpuset.cpus $(cat /sys/fs/cgroup/cpuset${cs%%/step_*}/cpuset.cpus)"
echo "Cpus_allowed_list $(awk '/Cpus_allowed_list/{print $2}' /proc/self/status)"
sleep 2
"""


def _show_running(cluster, jobid):
    """While the job sleeps: slurmd's and slurmstepd's cgroups, the job's cgroup dirs."""
    pids = [("slurmd", cluster.slurmd_pid())] + \
        [("slurmstepd", pid) for pid in cluster._own_stepds()]
    for name, pid in pids:
        try:
            with open("/proc/%d/cgroup" % pid) as f:
                lines = [l for l in f.read().splitlines() if ":memory:" in l or
                         ":cpuacct:" in l or ":cpuset:" in l or ":freezer:" in l]
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode().strip()
        except (OSError, TypeError):
            continue
        print("== %s pid %d (%s): %s" % (name, pid, cmd, "  ".join(lines)))
    for controller in ("memory", "cpuacct", "cpuset", "freezer"):
        top = cluster.job_cgroup(jobid, controller)
        dirs = sorted(os.path.relpath(root, top) for root, _d, _f in os.walk(top))
        print("== %s job_%d dirs: %s" % (controller, jobid, " ".join(dirs) or "(none)"))


def main():
    tmp = tempfile.mkdtemp(prefix="jobscope-slurm-")
    cluster = SlurmCluster(tmp)
    try:
        try:
            cluster.start()
        except SlurmUnavailable as e:
            print("SKIP: slurm unavailable: %s" % e.reason)
            return 0
        print("cluster up in %.2fs (ctld port %d, slurmd port %d, %s)"
              % (cluster.start_seconds, cluster.ctld_port, cluster.slurmd_port, tmp))
        jobid = cluster.sbatch(SELF_CHECK_SCRIPT, "--cpus-per-task=1", "--mem=200M")
        print("submitted job %d" % jobid)
        if cluster.wait_job(jobid, 30, states=FINAL_STATES | {"RUNNING"}) == "RUNNING":
            time.sleep(0.5)                 # let the script reach its final sleep
            _show_running(cluster, jobid)
        state = cluster.wait_job(jobid, timeout=60)
        print("job %d: %s; job cgroup still there: %s" % (
            jobid, state, os.path.isdir(cluster.job_cgroup(jobid))))
        print(cluster.output(jobid), end="")
        return 0 if state == "COMPLETED" else 1
    finally:
        cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
