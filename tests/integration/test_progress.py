"""Progress on a terminal (src/common/progress.c): `jobscope report`, `jobscope
export` and the agent's catch-up after an outage draw a line on stderr when
it is a terminal (a pty here), and erase it at the end; through a pipe, or
with NO_PROGRESS=1, stderr holds none of it.

JOBSCOPE_PROGRESS_DELAY_MS=0 makes the meter draw from its first step, so
the small stores of a test show a line (a person sees none for work
quicker than 300 ms).
"""
import os
import pty
import re
import select
import sqlite3
import subprocess
import time

from harness import (JOBSCOPE, free_port, helper, jobscope, run_tests, check, eq, scaled, stop,
                     wait_for)
from agent_harness import sql as agent_sql
from head_harness import head_db, sql, start_agent, stop_agent, store_exists

ERASE = "\r\x1b[K"
LINE = re.compile(r"\r\x1b\[K([^\r]*)")
# a catch-up's line, then the erase with no line after it
FINISHED = re.compile(r"catching up: [^\r]*\r\x1b\[K(?!jobscope agent: catching up)")


def no_delay(**extra):
    # and no report checkpoint: `jobscope run` leaves one at the job's end,
    # after which a report has no row left to replay (a store an agent is
    # still writing has them)
    env = dict(os.environ, JOBSCOPE_PROGRESS_DELAY_MS="0", JOBSCOPE_NO_CKPT="1")
    env.pop("NO_PROGRESS", None)
    env.update(extra)
    return env


class Pty:
    """A process whose stderr is a terminal (stdout: a file); what it wrote there."""

    def __init__(self, args, env, stdout):
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=stdout,
                                     stderr=slave, env=env)
        os.close(slave)
        self.data = b""

    def read(self, timeout=0.1):
        r, _, _ = select.select([self.master], [], [], timeout)
        if r:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                chunk = b""
            self.data += chunk
            return bool(chunk)
        return True

    def text(self):
        return self.data.decode(errors="replace")

    def wait(self, timeout=120):
        timeout = scaled(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.read() and self.proc.poll() is not None:
                break
        rc = self.proc.wait(timeout=max(1, deadline - time.monotonic()))
        os.close(self.master)
        return rc


def under_pty(wd, args, env):
    """(exit code, stderr as the terminal got it, stdout's bytes)."""
    out = wd.join("stdout-%d" % time.monotonic_ns())
    with open(out, "wb") as f:
        t = Pty(args, env, f)
        rc = t.wait()
    return rc, t.text(), open(out, "rb").read()


def job_store(wd):
    db = wd.join("store.db")
    # a second of rows at 50 ms; the job sleeps (its rows are what counts, not its CPU)
    r = subprocess.run([JOBSCOPE, "run", "--db", db, "-i", "50ms", "--report-file",
                        wd.join("run-report.txt"), "--", helper("busy"), "--sleep", "1"],
                       capture_output=True, text=True, timeout=scaled(60))
    eq(r.returncode, 0, "jobscope run: %s" % r.stderr)
    return db


def progress_lines(text, label):
    return [m for m in LINE.findall(text) if m.startswith(label)]


def test_report_on_a_terminal(wd):
    db = job_store(wd)
    rc, err, out = under_pty(wd, [JOBSCOPE, "report", "--db", db], no_delay())
    eq(rc, 0, "report exit code (%r)" % err)
    lines = progress_lines(err, "jobscope report: ")
    check(lines, "no progress line in %r" % err)
    # the first row replayed draws at once: one row, a percent of the job's time
    check(re.fullmatch(r"jobscope report: \d+%, 1 rows(, \S+ left)?", lines[0]), lines[0])
    for line in lines:
        check(re.fullmatch(r"jobscope report: \d+%, [\d,]+ rows(, \S+ left)?", line), line)
    # erased at the end: the terminal's line is empty; nothing else was said
    check(err.endswith(ERASE), "not erased: %r" % err[-80:])
    eq(LINE.sub("", err), "", "stderr besides the progress")
    # the report itself went to stdout, whole, with nothing of the progress in it
    check(b"\x1b" not in out and len(out) > 200, out[:300])
    # the same report through a pipe: the same bytes, and no progress at all
    p = jobscope("report", "--db", db, env=no_delay())
    eq(p.returncode, 0, "report exit code")
    eq(p.stderr, "", "stderr through a pipe")
    eq(p.stdout.encode(), out, "the report on stdout")


def test_history_report_on_a_terminal(wd):
    db = job_store(wd)
    rc, err, out = under_pty(wd, [JOBSCOPE, "report", "--db", db, "--by", "user",
                                  "--since", "1h"], no_delay())
    eq(rc, 0, "report exit code (%r)" % err)
    lines = progress_lines(err, "jobscope report: ")
    # the history's one job, read: no total known yet
    check(lines and re.fullmatch(r"jobscope report: 1 jobs, \d+s", lines[0]), err)
    check(err.endswith(ERASE), "not erased: %r" % err[-80:])
    p = jobscope("report", "--db", db, "--by", "user", "--since", "1h", env=no_delay())
    eq((p.returncode, p.stderr), (0, ""), "through a pipe")


def test_no_progress_env_and_default_delay(wd):
    db = job_store(wd)
    rc, err, _ = under_pty(wd, [JOBSCOPE, "report", "--db", db],
                           no_delay(NO_PROGRESS="1"))
    eq((rc, err), (0, ""), "NO_PROGRESS=1 on a terminal")
    # without the test's delay: a report this quick shows nothing at all
    env = no_delay()
    env.pop("JOBSCOPE_PROGRESS_DELAY_MS")
    rc, err, _ = under_pty(wd, [JOBSCOPE, "report", "--db", db], env)
    eq((rc, err), (0, ""), "a quick report on a terminal")


class Head:
    def __init__(self, wd, port=0):
        self.db = head_db(wd.join("head.db"))
        self.admin = wd.join("admin-token")
        with open(self.admin, "w") as f:
            f.write("admin-secret\n")
        self.log = wd.join("head-%d.log" % time.monotonic_ns())
        self.errf = open(self.log, "w")
        self.proc = subprocess.Popen(
            [JOBSCOPE, "head", "--db", self.db, "--listen", "127.0.0.1:%d" % port,
             "--admin-token-file", self.admin],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.errf)
        port = wait_for(self._port, timeout=15, what="the head's listening line")
        self.url = "http://127.0.0.1:%d" % port

    def _port(self):
        if self.proc.poll() is not None:
            raise AssertionError("the head exited: %s" % open(self.log).read())
        m = re.findall(r"listening on 127\.0\.0\.1:(\d+)", open(self.log).read())
        return int(m[-1]) if m else None

    def stop(self):
        stop(self.proc)
        self.errf.close()


def test_export_on_a_terminal(wd):
    head = Head(wd)
    try:
        proc, agent_db, _, errf = start_agent(wd, head, "node-p")
        try:
            wait_for(lambda: store_exists(head.db) and sql(head.db, "SELECT * FROM agents"),
                     timeout=60, what="the agent streaming")
            r = jobscope("session", "start", "s1", "--head", head.url, "--token-file", head.admin)
            eq(r.returncode, 0, "session start: %s" % r.stderr)
            start_ms = sql(head.db, "SELECT start_ms FROM sessions WHERE name = 's1'")[0][0]
            # frames for the session: the head holds the agent's ticks past the first
            # second of its window (gswarm's frame clock ticks once a second)
            wait_for(lambda: sql(head.db, "SELECT count(*) FROM host_samples WHERE ts_ms > ?",
                                 start_ms + 1000)[0][0] > 0, timeout=20,
                     what="the head to hold a tick of the session's second second")
            r = jobscope("session", "stop", "s1", "--head", head.url, "--token-file", head.admin)
            eq(r.returncode, 0, "session stop: %s" % r.stderr)
        finally:
            stop_agent(proc, errf)
    finally:
        head.stop()
    for fmt in ("json", "csv", "gswarm"):
        args = [JOBSCOPE, "export", "--db", head.db, "--session", "s1", "--format", fmt]
        rc, err, out = under_pty(wd, args, no_delay())
        eq(rc, 0, "export %s exit code (%r)" % (fmt, err))
        lines = progress_lines(err, "jobscope export: ")
        check(lines, "%s: no progress line in %r" % (fmt, err))
        # the first frame draws at once
        check(re.fullmatch(r"jobscope export: (\d+%, )?1 frames(, \S+( left)?)?", lines[0]),
              "%s: %r" % (fmt, lines[0]))
        check(err.endswith(ERASE), "%s: not erased: %r" % (fmt, err[-80:]))
        eq(LINE.sub("", err), "", "%s: stderr besides the progress" % fmt)
        p = subprocess.run(args, capture_output=True, env=no_delay(), timeout=scaled(60))
        eq((p.returncode, p.stderr), (0, b""), "%s through a pipe" % fmt)
        if fmt != "json":  # json's frames hold no time of the export: equal bytes
            eq(p.stdout, out, "%s: the export on stdout" % fmt)
        else:
            eq(len(p.stdout), len(out), "json: the export's length")


def stored_ticks(db):
    """The host rows in an agent's store (0 while it is being made)."""
    try:
        return agent_sql(db, "SELECT count(*) FROM host_samples")[0][0]
    except sqlite3.Error:
        return 0


def test_agent_catch_up_on_a_terminal(wd):
    # the agent first, its head down: its rows pile up; then the head comes
    port = free_port()
    db = wd.join("node-c.db")
    agent = Pty(["unshare", "--uts", "sh", "-c", 'hostname node-c && exec "$@"', "node-c",
                 JOBSCOPE, "agent", "--db", db, "--interval", "100ms", "--listen", "none",
                 "--head", "http://127.0.0.1:%d" % port], no_delay(), subprocess.DEVNULL)
    head = None
    try:
        wait_for(lambda: agent.read() and "retrying" in agent.text(), timeout=20,
                 what="the agent retrying its head")
        # a backlog to catch up on: rows of ten ticks that the head has not had
        wait_for(lambda: agent.read() and stored_ticks(db) >= 10, timeout=20,
                 what="ten ticks stored by the agent")
        head = Head(wd, port)
        wait_for(lambda: agent.read() and FINISHED.search(agent.text()), timeout=30,
                 what="a catch-up drawn and erased")
    finally:
        agent.proc.terminate()
        agent.wait(timeout=30)
        if head:
            head.stop()
    text = agent.text()
    lines = progress_lines(text, "jobscope agent: catching up: ")
    check(lines, "no catch-up line in %r" % text[-2000:])
    # the head's answer to hello: nothing of the backlog sent yet
    eq(lines[0], "jobscope agent: catching up: 0%, 0 rows", "the first line")
    for line in lines:
        check(re.fullmatch(r"jobscope agent: catching up: \d+%, [\d,]+ rows(, \S+ left)?", line),
              line)
    # erased once current: an erase that no line follows
    check(FINISHED.search(text), text[-500:])


if __name__ == "__main__":
    run_tests(globals())
