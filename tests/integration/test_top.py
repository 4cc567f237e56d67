"""`jobscope top` in a real terminal (tmux): a recorded store replayed step by step, a live
agent (a Slurm job that runs, is opened, followed and ends; the agent killed and started
again on its port), a head with two agents for --head --job, resize, and --batch."""
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import time

from harness import helper, jobscope, run_tests, eq, check, wait_for
from agent_harness import Agent, env_with, spawn, sql, proc_state

MiB = 1 << 20


def fmt_bytes(b):
    """src/top/layout.c's top_fmt_bytes"""
    units, u = "BKMGTP", 0
    while b >= 1024 and u < 5:
        b /= 1024.0
        u += 1
    if u == 0:
        return "%.0fB" % b
    return ("%.1f%s" if b < 10 else "%.0f%s") % (b, units[u])


class Tmux:
    """One tmux server of the test's own (-L), one window running cmd."""

    def __init__(self, wd, cmd, width=100, height=30, env=None):
        if not shutil.which("tmux"):
            raise AssertionError("tmux is not installed (./dev's PKGS_TEST)")
        self.sock = "jstop-%d-%s" % (os.getpid(), os.path.basename(wd.path))
        self.env = dict(env or os.environ)
        self.env.pop("TMUX", None)
        self.env["TERM"] = "xterm-256color"
        # the pane keeps the exit status: remain-on-exit shows a crash instead of a blank
        self.tm("new-session", "-d", "-x", str(width), "-y", str(height), "-s", "t",
                "sh", "-c", cmd + '; echo "EXITED $?"; sleep 60')

    def tm(self, *args):
        r = subprocess.run(["tmux", "-L", self.sock] + list(args), capture_output=True,
                           text=True, env=self.env, timeout=20)
        eq(r.returncode, 0, "tmux %s: %s" % (" ".join(args), r.stderr))
        return r.stdout

    def screen(self):
        return self.tm("capture-pane", "-p", "-t", "t")

    def keys(self, *keys):
        self.tm("send-keys", "-t", "t", *keys)

    def wait(self, pred, what, timeout=15, exits=False):
        """The screen once pred holds for it and a second capture a moment later is the
        same: tmux can be caught halfway through a frame (on a loaded machine a new
        screen's header was seen above the old screen's footer and rows)."""
        last = [""]

        def ok():
            first = self.screen()
            check(exits or "EXITED" not in first, "jobscope top exited:\n" + first)
            last[0] = first
            if not pred(first):
                return False
            time.sleep(0.05)  # not a wait: the gap between the two captures compared
            last[0] = self.screen()
            return last[0] == first
        try:
            wait_for(ok, timeout=timeout, what=what)
            return last[0]
        except AssertionError:
            raise AssertionError("%s; the screen:\n%s" % (what, last[0]))

    def wait_text(self, text, timeout=15):
        return self.wait(lambda s: text in s, "%r on screen" % text, timeout,
                         exits=text.startswith("EXITED"))

    def close(self):
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True)


def line_with(screen, text):
    for ln in screen.splitlines():
        if text in ln:
            return ln.rstrip()
    raise AssertionError("no line with %r in:\n%s" % (text, screen))


NAME = "memtouch-64"  # the run's name: the jobs list shows a job by it, first


def record(wd):
    """A store of `jobscope run --name memtouch-64` on js-memtouch: 64 MiB held 2 s, sampled
    every 200 ms."""
    db = wd.join("run.db")
    r = subprocess.run([os.environ["JOBSCOPE"], "run", "--db", db, "-i", "200ms", "-r", "none",
                        "--name", NAME, "--", helper("memtouch"), "--mib", "64", "--hold", "2"],
                       capture_output=True, text=True, timeout=60)
    eq(r.returncode, 0, "jobscope run: %s" % r.stderr)
    return db


def rows(db, q, *args):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return con.execute(q, args).fetchall()
    finally:
        con.close()


def test_store_replay_steps_keys_resize(wd):
    """--db --at: the figures of the store's samples at that time, exact; [ and ] step one
    tick; Enter opens the job's process; s, /, u, h; 60 columns drop columns, 30 says so."""
    db = record(wd)
    (job, start, end, cores, interval) = rows(
        db, "SELECT id, start_ms, end_ms, cores_allowed, interval_ms FROM jobs")[0]
    samples = rows(db, "SELECT ts_ms, user_ms + system_ms, rss_bytes FROM job_samples"
                   " WHERE job_id = ? ORDER BY ts_ms", job)
    check(len(samples) >= 6, "samples: %r" % samples)
    # a tick in the middle, while the 64 MiB are held, and the one before it
    i = len(samples) // 2
    (t0, c0, _), (t1, c1, rss1) = samples[i - 1], samples[i]
    key = "run:%d:%d" % (job, start)
    t = Tmux(wd, "%s top --db %s --at %d" % (os.environ["JOBSCOPE"], db, t1))
    try:
        scr = t.wait_text(NAME)
        row = line_with(scr, NAME)
        cpu = "%.2f/%d" % ((c1 - c0) / float(t1 - t0), cores)
        eq(row.split()[2:4], [cpu, "%s/-" % fmt_bytes(rss1)], "the job's row: " + row)
        check(rss1 >= 64 * MiB, "RSS %d while the 64 MiB are held" % rss1)
        eq(row.split()[4], "-/-", "no GPUs: '-', not 0")
        check(time.strftime("%H:%M:%S", time.localtime(t1 / 1000.0)) in scr.splitlines()[0],
              "the time shown: " + scr.splitlines()[0])
        # one tick back: the previous sample's time and figures
        t.keys("[")
        prev = time.strftime("%H:%M:%S", time.localtime((t1 - interval) / 1000.0))
        scr = t.wait(lambda s: prev in s.splitlines()[0], "one tick back")
        t.keys("]")
        t.wait(lambda s: time.strftime("%H:%M:%S", time.localtime(t1 / 1000.0))
               in s.splitlines()[0], "one tick forward")
        # the job: its process with its RSS of that tick
        pid, prss = rows(db, "SELECT p.pid, s.rss_bytes FROM procs p JOIN proc_samples s"
                         " ON s.proc_id = p.id WHERE p.job_id = ? AND s.ts_ms <= ?"
                         " ORDER BY s.ts_ms DESC LIMIT 1", job, t1)[0]
        t.keys("Enter")
        scr = t.wait(lambda s: "PID USER" in s and "Esc back" in s, "the job's screen")
        prow = line_with(scr, " %d " % pid)
        check("js-memtouch" in prow and fmt_bytes(prss) in prow, "process row: " + prow)
        check(("MEM %s of -" % fmt_bytes(rss1)) in scr, "job figures:\n" + scr)
        t.keys("Escape")
        t.wait_text("1 job")
        t.keys("s")
        t.wait_text("sort mem")
        t.keys("u")
        t.keys("n", "o", "b", "o", "d", "y", "Enter")
        t.wait_text("no job matches the filter")
        t.keys("u", "Enter")
        t.wait_text(NAME)
        t.keys("/")
        t.keys("j", "s", "-", "m", "e", "m", "Enter")
        check(NAME in t.wait_text("/js-mem"), "the search finds it by its command")
        t.keys("h")
        t.wait_text("jobscope top: keys")
        t.keys("x")
        t.wait_text("VERDICT")
        # narrower: the verdict and GPU columns go; CPU and memory stay
        t.tm("resize-window", "-t", "t", "-x", "60", "-y", "20")
        scr = t.wait(lambda s: "VERDICT" not in s and "MEM used/res" in s, "60 columns")
        check(all(len(ln.rstrip()) <= 60 for ln in scr.splitlines()), scr)
        eq(line_with(scr, NAME).split()[3], "%s/-" % fmt_bytes(rss1), "memory at 60")
        t.tm("resize-window", "-t", "t", "-x", "30", "-y", "20")
        t.wait_text("too small: 30x20, need 40x5")
        t.tm("resize-window", "-t", "t", "-x", "100", "-y", "30")
        t.wait_text("VERDICT")
        t.keys("q")
        t.wait_text("EXITED 0")
    finally:
        t.close()
    # the same screen as text
    r = jobscope("top", "--db", db, "--at", str(t1), "--batch", "--width", "100",
                 "--height", "8")
    eq(r.returncode, 0, r.stderr)
    eq(line_with(r.stdout, NAME).split()[2], cpu, "--batch: " + r.stdout)
    # --job in each of its forms opens the job: its process at that tick
    for form in (key, "run:%d" % job, str(job)):
        r = jobscope("top", "--db", db, "--at", str(t1), "--job", form, "--batch")
        eq(r.returncode, 0, r.stderr)
        check("js-memtouch" in line_with(r.stdout, " %d " % pid), "--job %s: %s" % (form, r.stdout))
    r = jobscope("top", "--db", wd.join("none.db"))
    eq(r.returncode, 2, "a store that is not there: %s" % r.stderr)


def test_screen_without_ncurses(wd):
    # ncurses is loaded when the screen starts (the agent, the same binary, maps none of it):
    # without it, one line that says what to install, or --batch
    db = record(wd)
    t = Tmux(wd, "JOBSCOPE_NCURSES_LIBRARY=/nonexistent/libncursesw.so.6 %s top --db %s"
             % (os.environ["JOBSCOPE"], db))
    try:
        screen = t.wait_text("EXITED")
        check("EXITED 1" in screen, screen)
        check("jobscope: top: the screen needs libncursesw6" in screen and
              "apt-get install libncursesw6, or use --batch" in screen, screen)
    finally:
        t.close()


def test_batch_on_a_source_that_is_not_there(wd):
    # the screen says so, the exit status says the source could not be used (1), and
    # the message names the address, not "the head" for an agent
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    url = "http://127.0.0.1:%d" % s.getsockname()[1]
    s.close()
    r = jobscope("top", "--batch", "--agent", url)
    eq(r.returncode, 1, "exit status (stderr: %s)" % r.stderr)
    check("cannot reach %s" % url in r.stdout, r.stdout)
    check("cannot reach %s:" % url in r.stderr and "the head" not in r.stderr, r.stderr)


def test_live_agent_job_ends_and_agent_restarts(wd):
    """--agent: a Slurm job's reservation and processes, opened and followed while it
    ends; the agent killed (a clear message, top keeps running) and started again on the
    same port (top picks it up)."""
    sock = wd.join("statsd.sock")
    a = Agent(wd, interval="100ms", extra=["--statsd-socket", sock])
    port = a.port  # the kernel's choice; the agent started again takes it again
    t = None
    app = mem = None
    try:
        env = env_with(SLURM_JOB_ID=4242, SLURM_CPUS_ON_NODE=2, SLURM_MEM_PER_NODE=512,
                       SLURM_JOB_NAME="train-4242")
        # the job runs until the test ends it (killed), however long the steps take
        mem = spawn([helper("memtouch"), "--mib", "96", "--hold", "120"], env=env)
        wait_for(lambda: any(j["job_id"] == "4242" and j.get("live")
                             for j in a.json("/api/v1/jobs?state=running")["jobs"]),
                 what="job 4242 live")
        t = Tmux(wd, "%s top --agent %s" % (os.environ["JOBSCOPE"], a.url))
        scr = t.wait_text("train-4242")  # the job's name, first
        row = line_with(scr, "train-4242")
        check(row.split()[2].endswith("/2") and row.split()[3].endswith("/512M"),
              "reserved 2 cores and 512 MiB: " + row)
        # the node's login sessions are listed too: find the job
        t.keys("/")
        t.keys("4", "2", "4", "2", "Enter")
        t.wait_text("/4242")
        t.keys("Enter")
        scr = t.wait_text(" %d " % mem.pid)
        prow = line_with(scr, " %d " % mem.pid)
        check("js-memtouch" in prow, prow)
        # once its 96 MiB are touched, the screen shows the agent's figure for it (read
        # with each screen: while memtouch touches, both move)
        def agents_figure(s):
            rss = [p["rss_bytes"] for p in a.json("/api/v1/jobs/slurm:4242")["processes"]
                   if p["pid"] == mem.pid]
            return rss and rss[0] >= 96 * MiB and \
                line_with(s, " %d " % mem.pid).split()[3] == fmt_bytes(rss[0])
        scr = t.wait(agents_figure, "memtouch's 96 MiB, as the agent has them")
        live = a.json("/api/v1/jobs/slurm:4242")
        eq(live["usage"]["rss_bytes"] >= 96 * MiB, True, "the job's RSS")
        # app metrics the job sends to the agent's StatsD socket: its totals on the screen
        # (the shell sends once the agent saw it: a `jobscope metric` gone before the
        # agent read its datagram is its nearest known ancestor's; it stays until the
        # screen showed them)
        js = os.environ["JOBSCOPE"]
        go = wd.join("go")
        app = spawn(["bash", "-c", 'until [ -e "$0.1" ]; do sleep 0.02; done;'
                     ' "$1" metric steps 5; "$1" metric steps 5;'
                     ' "$1" metric --type gauge loss 0.25; "$1" metric --type timer step_ms 10;'
                     ' "$1" metric --type timer step_ms 30; until [ -e "$0.2" ]; do sleep 0.02;'
                     ' done', go, js], env=dict(env, JOBSCOPE_STATSD_SOCKET=sock))
        wait_for(lambda: sql(a.db, "SELECT 1 FROM procs WHERE pid = ?", app.pid),
                 what="a scan that saw the job's sender")
        open(go + ".1", "w").close()
        want = [("steps", "counter", 2.0, None, None), ("loss", "gauge", 1.0, None, 0.25),
                ("step_ms", "timer", 2.0, 40.0, None)]
        got = wait_for(lambda: (lambda g: sorted(g) == sorted(want) and g)(
            [(x["name"], x["type"], x["count"], x.get("sum") if x["type"] == "timer" else None,
              x.get("last")) for x in a.json("/api/v1/jobs/slurm:4242").get("app") or []]),
            timeout=15, what="the job's app metrics at the agent (%r)" % [
                (j["key"], j.get("app")) for j in a.json("/api/v1/jobs?state=running")["jobs"]
                if j["job_id"] == "4242"])
        check(got, "app metrics")
        t.wait(lambda s: any(l.startswith("app:") and "steps=10.00" in l and "loss=0.25" in l
                             and "step_ms=20.00" in l for l in s.splitlines()),
               "the job's app metrics on its screen")
        open(go + ".2", "w").close()
        eq(app.wait(timeout=30), 0, "the job's sender")  # reaped: no zombie left in the job
        t.keys("f")
        t.wait_text("[follow]")
        mem.kill()
        mem.wait(timeout=30)
        # it ended while shown: the store's row says so
        t.wait(lambda s: "ended" in s.splitlines()[1], "the job shown as ended", timeout=20)
        t.keys("Escape")
        t.wait_text("no job matches the filter")
        a.kill()
        scr = t.wait_text("cannot reach %s: retrying" % a.url)
        a = Agent(wd, interval="100ms", name="agent2", db=wd.join("agent2.db"),
                  extra=["--listen", "127.0.0.1:%d" % port])
        t.wait(lambda s: "cannot reach" not in s and "no job matches" in s, "the agent back")
        t.keys("q")
        t.wait_text("EXITED 0")
    finally:
        if t:
            t.close()
        for p in (app, mem):
            if p:
                p.kill()
                p.wait()
        a.kill()


def test_head_job_across_two_nodes(wd):
    """--head --job: one Slurm job seen by two agents (two UTS namespaces) on one screen:
    both nodes' rows, its reservation summed; the head killed: a clear message."""
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    from head_harness import Head, start_agent
    head = Head(wd)
    env = env_with(SLURM_JOB_ID=777, SLURM_CPUS_ON_NODE=3, SLURM_MEM_PER_NODE=1024)
    job = spawn([helper("memtouch"), "--mib", "32", "--hold", "30"], env=env)
    # the busy process is the job's from the start: a shell with the job's environment,
    # started before the agents and stopped until the test wants its CPU, then exec'd.
    # (Started later by Popen, an agent's scan could catch it between fork and exec,
    # with the test's environment: its process row would stay with that job, as the
    # agent keeps a process row with the job it was first seen in.)
    busy = spawn(["sh", "-c", 'kill -STOP $$; exec "$0" --seconds 60', helper("busy")],
                 env=env)
    wait_for(lambda: proc_state(busy.pid) == "T", timeout=10, what="the busy shell stopped")
    agents = [start_agent(wd, head, n) for n in ("topn1", "topn2")]
    t = None
    try:
        def both():
            jobs = head.get("/api/v1/jobs?state=running")["jobs"]
            return sorted(j["node"] for j in jobs if j["job_id"] == "777") == ["topn1", "topn2"]
        wait_for(both, timeout=30, what="job 777 on both nodes at the head")
        t = Tmux(wd, "%s top --head %s --job slurm:777" % (os.environ["JOBSCOPE"], head.url))
        scr = t.wait(lambda s: "topn1,topn2" in s or "topn2,topn1" in s, "both nodes")
        check("of 6.0 cores" in scr and "of 2.0G" in scr,
              "3 cores and 1 GiB on each of two nodes:\n" + scr)
        # its processes, as the head's store has them from each agent (both agents see
        # the same processes here: rows per node, each with its node): memtouch and the
        # stopped shell that becomes the busy one
        key = [j["key"] for j in head.get("/api/v1/jobs?state=running")["jobs"]
               if j["job_id"] == "777"][0]

        def procs():
            return head.get("/api/v1/jobs/" + key)["processes"]
        wait_for(lambda: [(p["node"], p["rss_bytes"] >= 32 * MiB) for p in procs()
                          if p["pid"] == job.pid] == [("topn1", True), ("topn2", True)],
                 timeout=15, what="memtouch's 32 MiB at the head from both nodes")
        ps = procs()
        eq(sorted((p["node"], p["pid"]) for p in ps),
           sorted((n, pid) for n in ("topn1", "topn2") for pid in (job.pid, busy.pid)),
           "the head's processes of the job, by node")
        every = ps
        ps = [p for p in ps if p["pid"] == job.pid]
        scr = t.wait(lambda s: all(any(fmt_bytes(p["rss_bytes"]) in l and p["node"] in l
                                       for l in s.splitlines() if (" %d " % job.pid) in l)
                                   for p in ps), "the job's process on each node, with its RSS")
        check("js-memtouch" in line_with(scr, " %d " % job.pid), scr)
        # running: the head's jobs list has no usage yet, so the job's line sums its
        # processes on each node: memory at once, CPU from two refreshes of a process
        # that uses some (a sleeping one sends no new sample: its CPU stays "-")
        check(re.search(r"MEM %s of 2\.0G" % re.escape(fmt_bytes(sum(p["rss_bytes"] for p in every))),
                        scr), "the job's memory, its processes' on both nodes:\n" + scr)
        busy.send_signal(signal.SIGCONT)
        # how much of a core it gets is the machine's to say: some, from its samples
        try:
            scr = t.wait(lambda s: (lambda m: m and float(m.group(1)) > 0)(
                re.search(r"CPU (\d+\.\d+) of 6\.0 cores", s)),
                "the job's CPU from its processes", timeout=30)
        except AssertionError as e:
            # what the head had of the job, and what the agents said
            logs = "".join("\n%s:\n%s\nits processes of pid %d: %r" % (
                a[2], open(a[2]).read()[-2000:], busy.pid,
                sql(a[1], "SELECT p.comm, p.start_ms, p.end_ms, j.scheduler, j.job_id,"
                    " j.start_ms, j.end_ms FROM procs p LEFT JOIN jobs j ON j.id = p.job_id"
                    " WHERE p.pid = ?", busy.pid)) for a in agents)
            raise AssertionError("%s\nbusy: pid %d, alive %s\nthe head's processes: %r%s" % (
                e, busy.pid, busy.poll() is None, procs(), logs))
        check(re.search(r"CPU \d+\.\d+ of 6\.0 cores \(\d+%\)", scr), scr)
        t.keys("Escape")  # --head --job: the job's screen stays
        t.keys("h")
        t.wait_text("jobscope top: keys")
        t.keys("x")
        head.kill()
        t.wait_text("cannot reach %s: retrying" % head.url)
        t.keys("q")
        t.wait_text("EXITED 0")
    finally:
        if t:
            t.close()
        for p in (job, busy):
            if p:
                p.kill()
                p.wait()
        for proc, _, _, errf in agents:
            proc.kill()
            proc.wait()
            errf.close()


if __name__ == "__main__":
    run_tests(globals())
