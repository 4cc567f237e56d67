"""Shared helpers for jobscope's integration tests.

Each test script defines functions named test_*; run_tests() runs them in
order, prints one line per test and a closing "N passed, N failed" line,
and exits non-zero if any failed.  Tests start the real binary (from
$JOBSCOPE) and the helper workloads (from $HELPERS), each in a private
temporary directory, with deadlines instead of bare sleeps.
"""
import json
import os
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


class Workdir:
    """A temporary directory removed at the end of a test."""

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="jobscope-it-")

    def join(self, *parts):
        return os.path.join(self.path, *parts)

    def close(self):
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
                          timeout=timeout, input=input, env=env)
    return proc


def wait_for(predicate, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, what))


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
