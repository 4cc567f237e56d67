"""Starting and talking to a real `jobscope agent` in tests."""
import json
import os
import re
import signal
import sys
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request

from harness import JOBSCOPE, scaled, wait_for


class Agent:
    """`jobscope agent` on 127.0.0.1, a port of the kernel's choice, a private store,
    sampling each 100 ms unless told otherwise (docs/testing.md)."""

    def __init__(self, wd, interval="100ms", db=None, extra=(), env=None, name="agent",
                 log_file=None, wrap=()):
        self.db = db or wd.join("agent.db")
        self.log = wd.join(name + ".log")
        self.log_file = log_file  # --log-file: where the agent's messages go instead
        if log_file:
            extra = list(extra) + ["--log-file", log_file]
        self.errf = open(self.log, "w")
        # wrap: a command the agent runs under (unshare ...)
        args = list(wrap) + [JOBSCOPE, "agent", "--db", self.db, "--interval", interval,
                             "--listen", "127.0.0.1:0"] + list(extra)
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self.errf, env=env)
        self.port = wait_for(self._port, timeout=15, what="the agent's listening line")
        self.url = "http://127.0.0.1:%d" % self.port

    def _port(self):
        if self.proc.poll() is not None:
            raise AssertionError("the agent exited with %s: %s" % (self.proc.returncode,
                                                                   self.stderr()))
        text = self.stderr()
        if self.log_file and os.path.exists(self.log_file):
            with open(self.log_file) as f:
                text += f.read()
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", text)
        return int(m.group(1)) if m else None

    def stderr(self):
        with open(self.log) as f:
            return f.read()

    def get(self, path, expect=200):
        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as r:
                body = r.read().decode()
                status, ctype = r.status, r.headers.get("Content-Type")
        except urllib.error.HTTPError as e:
            body = e.read().decode()
            status, ctype = e.code, e.headers.get("Content-Type")
        if expect is not None and status != expect:
            raise AssertionError("GET %s: %d, expected %d: %s" % (path, status, expect, body))
        self.last_content_type = ctype
        return body

    def json(self, path, expect=200):
        return json.loads(self.get(path, expect))

    def metrics(self):
        """{(name, frozenset(labels)): value} of /metrics."""
        out = {}
        for line in self.get("/metrics").splitlines():
            if not line or line.startswith("#"):
                continue
            m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
            if not m:
                raise AssertionError("not a Prometheus sample line: %r" % line)
            labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
            out[(m.group(1), labels)] = float(m.group(4))
        return out

    def ticks(self):
        return self.json("/api/v1/node")["agent"]["ticks"]

    def wait_ticks(self, n, timeout=20):
        start = self.ticks()
        wait_for(lambda: self.ticks() >= start + n, timeout=timeout, what="%d ticks" % n)

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Its exit code, once it stopped within timeout (scaled) seconds."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        timeout = scaled(timeout)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            raise AssertionError("the agent did not stop in %ss" % timeout)
        finally:
            self.errf.close()
        if rc not in (0, -signal.SIGKILL):
            # what the agent said, for a failure that did not show itself elsewhere
            sys.stderr.write("agent exited %s; its stderr:\n%s\n" % (rc, self.stderr()[-4000:]))
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if not self.errf.closed:
            self.errf.close()


def sql(db, query, *args):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=10)
    try:
        return con.execute(query, args).fetchall()
    finally:
        con.close()


def job_row(db, scheduler, job_id):
    rows = sql(db, "SELECT id, start_ms, end_ms, reserved_cpus, reserved_mem_bytes,"
               " reservation_source, user FROM jobs WHERE scheduler = ? AND job_id = ?"
               " ORDER BY id DESC", scheduler, job_id)
    return rows[0] if rows else None


def env_with(**kv):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("SLURM_") or k == "JOBSCOPE_RUN_ID":
            del env[k]
    env.update({k: str(v) for k, v in kv.items()})
    return env


def spawn(cmd, env=None):
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def proc_state(pid):
    """The state letter of /proc/PID/stat ('T': stopped, 'Z': a zombie), or None once
    the process is reaped."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def settle(proc, timeout=60):
    """(exit code, stdout, stderr) of proc, once it ended within timeout (scaled) seconds."""
    out, err = proc.communicate(timeout=scaled(timeout))
    return proc.returncode, out, err


def wait_exit(proc, timeout):
    """proc's exit code once it ended, or None after timeout (scaled) seconds."""
    deadline = time.monotonic() + scaled(timeout)
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    return proc.poll()


def cgroup2_mount():
    """Where the cgroup2 hierarchy is mounted (a hybrid machine's unified one), or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            if right.split()[0] == "cgroup2":
                return left.split()[4]
    return None


def remove_cgroup_tree(top):
    """Removes a test's cgroup directories, deepest first (each must be empty of
    processes by then)."""
    for dirpath, _, _ in sorted(os.walk(top), key=lambda w: -len(w[0])):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass


def kill_pg(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
