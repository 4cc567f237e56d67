"""Shared helpers for jobscope's integration tests.

Each test script defines functions named test_*; run_tests() runs them in
order, prints one line per test and a closing "N passed, N failed" line,
and exits non-zero if any failed.  Tests start the real binary (from
$JOBSCOPE) and the helper workloads (from $HELPERS), each in a private
temporary directory, with deadlines instead of bare sleeps.
"""
import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

JOBSCOPE = os.environ.get("JOBSCOPE", "")
HELPERS = os.environ.get("HELPERS", "")
FIXTURES = os.environ.get("FIXTURES", "")


def _time_scale():
    text = os.environ.get("JOBSCOPE_TEST_TIME_SCALE") or "1"
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0.1 <= value <= 100:
        sys.exit("JOBSCOPE_TEST_TIME_SCALE=%r: a factor from 0.1 to 100" % text)
    return value


# One factor for every deadline a test waits on (JOBSCOPE_TEST_TIME_SCALE, 1 by
# default; a slow or loaded machine raises it): the time a condition may take to
# come true, never a time slept before asserting.  wait_for, run, jobscope and
# stop scale their own timeouts; a test's other deadlines go through scaled().
TIME_SCALE = _time_scale()


def scaled(seconds):
    """seconds of deadline, scaled by JOBSCOPE_TEST_TIME_SCALE."""
    return seconds * TIME_SCALE


class Workdir:
    """A temporary directory removed at the end of a test (kept, and named on
    stderr, with JOBSCOPE_TEST_KEEP=1: its logs and stores, to look into)."""

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="jobscope-it-")

    def join(self, *parts):
        return os.path.join(self.path, *parts)

    def close(self):
        if os.environ.get("JOBSCOPE_TEST_KEEP") == "1":
            sys.stderr.write("kept: %s\n" % self.path)
            return
        shutil.rmtree(self.path, ignore_errors=True)


def helper(name):
    return os.path.join(HELPERS, "js-" + name)


class Result:
    def __init__(self, proc, stdout, stderr, report_path):
        self.rc = proc.returncode
        self.stdout = stdout
        self.stderr = stderr
        self.report = None
        if report_path and os.path.exists(report_path):
            with open(report_path) as f:
                text = f.read()
            if text.strip():
                self.report = json.loads(text)

    def helper_json(self):
        """The helper's one JSON line on stdout."""
        for line in reversed(self.stdout.strip().splitlines()):
            line = line.strip()
            if line.startswith("{"):
                return json.loads(line)
        raise AssertionError("no JSON line in the helper's stdout: %r" % self.stdout)


def run(wd, cmd, *, opts=(), db=None, timeout=120, stdin=subprocess.DEVNULL, env=None,
        report="json"):
    """jobscope run [opts] --report json --report-file F -- cmd; returns a Result."""
    report_path = wd.join("report-%d.json" % time.monotonic_ns())
    args = [JOBSCOPE, "run", "--db", db or wd.join("store.db")]
    if report == "json":
        args += ["--report", "json", "--report-file", report_path]
    args += list(opts) + ["--"] + list(cmd)
    proc = subprocess.Popen(args, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    timeout = scaled(timeout)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError("jobscope run did not finish in %ss: %s" % (timeout, err))
    return Result(proc, out, err, report_path if report == "json" else None)


def plot_env(env=None):
    """The environment for a command that plots: under ASan, fontconfig's
    process-wide caches (allocated once when cairo first picks a font,
    never freed) are not counted as leaks; every other leak still is."""
    supp = os.path.join(tempfile.gettempdir(), "jobscope-lsan-fontconfig.supp")
    with open(supp, "w") as f:
        f.write("leak:libfontconfig.so\n")
    env = dict(env if env is not None else os.environ)
    env["LSAN_OPTIONS"] = ":".join(o for o in (env.get("LSAN_OPTIONS"), "suppressions=" + supp,
                                               "print_suppressions=0") if o)
    return env


def jobscope(*args, timeout=60, input=None, env=None):
    proc = subprocess.run([JOBSCOPE] + list(args), capture_output=True, text=True,
                          timeout=scaled(timeout), input=input, env=env)
    return proc


def wait_for(predicate, timeout=10.0, what="condition"):
    """predicate's first true value, polled until timeout (scaled) seconds have passed."""
    timeout = scaled(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, what))


def wait_progress(predicate, progress, stall=60.0, cap=600.0, what="condition"):
    """predicate's first true value, polled for as long as progress() (any comparable
    value: rows held, a cursor) keeps moving: it fails after stall (scaled) seconds
    without a change, or cap (scaled) seconds in all.  For a catch-up whose speed is
    the machine's: on a busy one it is slower, never stuck."""
    stall, cap = scaled(stall), scaled(cap)
    start = last_move = time.monotonic()
    last = progress()
    while True:
        value = predicate()
        if value:
            return value
        now = time.monotonic()
        seen = progress()
        if seen != last:
            last, last_move = seen, now
        if now - last_move > stall:
            raise AssertionError("no progress for %.1fs waiting for %s (at %r)" %
                                 (stall, what, last))
        if now - start > cap:
            raise AssertionError("timed out after %.1fs waiting for %s (still moving, at %r)"
                                 % (cap, what, last))
        time.sleep(0.05)


def near(actual, expected, rel, what):
    if actual is None:
        raise AssertionError("%s is null, expected ~%r" % (what, expected))
    if abs(actual - expected) > rel * abs(expected):
        raise AssertionError("%s = %r, expected %r within %d%%" % (what, actual, expected,
                                                                    round(rel * 100)))


def eq(actual, expected, what):
    if actual != expected:
        raise AssertionError("%s = %r, expected %r" % (what, actual, expected))


def check(cond, what):
    if not cond:
        raise AssertionError(what)


# loopback only, whatever proxy the environment names
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_get(url, timeout=5):
    """(status, headers, body) of a GET; HTTP errors are answers too."""
    try:
        with _opener.open(url, timeout=timeout) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def http_open(req, timeout=30):
    """urllib's open of a Request, through the proxy-less opener."""
    return _opener.open(req, timeout=timeout)


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def slurm_env(**kv):
    """This environment without any SLURM_ variable of its own, plus kv."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SLURM_") and k != "JOBSCOPE_RUN_ID"}
    env.update({k: str(v) for k, v in kv.items()})
    return env


def stop(proc, sig=signal.SIGTERM, timeout=15):
    """Stops one process we started, by its PID; returns its exit code."""
    if proc is None:
        return None
    if proc.poll() is None:
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            pass
    timeout = scaled(timeout)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        raise AssertionError("pid %d did not stop in %ss" % (proc.pid, timeout))


def tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


# -- the machine's CPUs for a test that needs them ---------------------------

CPU_LOCK = os.path.join(tempfile.gettempdir(), "jobscope-test-cpus.lock")
CGROUP_V1_CPU = "/sys/fs/cgroup/cpu"
CGROUP_V2 = "/sys/fs/cgroup"
CGROUP_DIR = "jobscope-test"
V1_SHARES = 262144   # cpu.shares' maximum: 256 times a task of nice 0
V2_WEIGHT = 10000    # cpu.weight's maximum: 100 times the default


def _cgroup_roots():
    """(hierarchy, root directory, weight file, weight) of a CPU controller we can use."""
    if os.path.exists(os.path.join(CGROUP_V1_CPU, "cpu.shares")):
        return "v1", CGROUP_V1_CPU, "cpu.shares", V1_SHARES
    try:
        with open(os.path.join(CGROUP_V2, "cgroup.controllers")) as f:
            if "cpu" in f.read().split():
                return "v2", CGROUP_V2, "cpu.weight", V2_WEIGHT
    except OSError:
        pass
    return None


def _own_cgroup(hierarchy):
    """This process's cgroup in that hierarchy, as a path below its root."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _id, controllers, path = line.rstrip("\n").split(":", 2)
            if (hierarchy == "v1" and "cpu" in controllers.split(",")) or \
                    (hierarchy == "v2" and _id == "0"):
                return path
    return "/"


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _favoured_cgroup():
    """A new cgroup with the highest CPU weight, or (None, why)."""
    roots = _cgroup_roots()
    if roots is None:
        return None, "no cgroup CPU controller"
    hierarchy, root, weight_file, weight = roots
    parent = os.path.join(root, CGROUP_DIR)
    try:
        os.makedirs(parent, exist_ok=True)
        if hierarchy == "v2":
            _write(os.path.join(root, "cgroup.subtree_control"), "+cpu")
            _write(os.path.join(parent, "cgroup.subtree_control"), "+cpu")
            _write(os.path.join(parent, weight_file), str(weight))
        else:
            _write(os.path.join(parent, weight_file), str(weight))
        # what earlier tests left (empty ones only: rmdir refuses the others)
        for name in os.listdir(parent):
            if os.path.isdir(os.path.join(parent, name)):
                try:
                    os.rmdir(os.path.join(parent, name))
                except OSError:
                    pass
        cg = os.path.join(parent, secrets.token_hex(6))
        os.mkdir(cg)
        _write(os.path.join(cg, weight_file), str(weight))
        return (hierarchy, root, cg), None
    except OSError as e:
        return None, "cannot make a cgroup under %s: %s" % (parent, e.strerror)


@contextlib.contextmanager
def machine_cpus(what, timeout=900):
    """The block runs with the machine's CPUs as far as a test can make that certain.

    For a test whose point is an ideal (a verdict that must fire for a CPU-bound job,
    a speedup of two threads on two CPUs) and that an independent measurement of the
    same run cannot replace.  Two things:
    - a lock (flock on CPU_LOCK) that every such block of every test takes: no two of
      them run at once, whatever runs side by side;
    - this process, and so every process it starts inside the block, is moved into a
      cgroup with the highest CPU weight (cgroup v1 cpu.shares 262144, v2 cpu.weight
      10000), so that other work on the machine (other tests, busy loops beside the
      suite) gets less than 1 % of a CPU the block's processes want.
    Processes started before the block (an agent) stay where they were: start inside
    it what must keep up.  Yields what was granted: {"cgroup": path or None, "why": ...}.
    Without a usable cgroup (not root, no CPU controller) only the lock is taken and
    the block says so on stdout."""
    fd = os.open(CPU_LOCK, os.O_CREAT | os.O_RDWR, 0o666)
    deadline = time.monotonic() + scaled(timeout)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise AssertionError("another test held the machine's CPUs for %.0f s"
                                         % scaled(timeout))
                time.sleep(0.05)
        cg, why = _favoured_cgroup() if os.geteuid() == 0 else (None, "not root")
        if cg is None:
            print("%s: the machine's CPUs are not made certain (%s): other load counts"
                  % (what, why), flush=True)
            yield {"cgroup": None, "why": why}
            return
        hierarchy, root, path = cg
        back = os.path.join(root, _own_cgroup(hierarchy).lstrip("/"), "cgroup.procs")
        _write(os.path.join(path, "cgroup.procs"), str(os.getpid()))
        try:
            yield {"cgroup": path, "why": None}
        finally:
            _write(back, str(os.getpid()))
            try:
                os.rmdir(path)  # refused while a process started inside still runs
            except OSError:
                pass
    finally:
        os.close(fd)  # the lock goes with the descriptor


def run_tests(namespace):
    if not JOBSCOPE or not os.path.exists(JOBSCOPE):
        print("JOBSCOPE is not set to the built binary", file=sys.stderr)
        sys.exit(2)
    tests = [(n, f) for n, f in namespace.items() if n.startswith("test_") and callable(f)]
    only = os.environ.get("ONLY")
    passed = failed = 0
    for name, fn in tests:
        if only and only not in name:
            continue
        wd = Workdir()
        start = time.monotonic()
        try:
            fn(wd)
        except Exception:  # noqa: BLE001 - a test failure of any kind
            failed += 1
            print("FAIL %s (%.1fs)" % (name, time.monotonic() - start))
            traceback.print_exc(file=sys.stdout)
        else:
            passed += 1
            print("ok   %s (%.1fs)" % (name, time.monotonic() - start))
        finally:
            wd.close()
        sys.stdout.flush()
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)
