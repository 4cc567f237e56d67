"""App metrics through `jobscope run` and `jobscope agent`: real StatsD senders, exact rows.

The sender is Debian's python3-statsd (`statsd.StatsClient`, which reads
nothing itself: the script builds it from STATSD_HOST and STATSD_PORT as
`statsd.defaults.env` does), a raw DogStatsD socket for tags, events and
sample rates, and `jobscope mark` / `jobscope metric` from a shell.  What the
store holds is summed over its ticks and compared with what was sent: every
counter total, timer count, minimum and maximum, the last gauge, and each
marker, in order.  The agent attributes Unix datagrams to the sender's job by
the kernel's pid (SO_PASSCRED) and UDP lines by their job tag.
"""
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from harness import run, jobscope, run_tests, check, eq, wait_for, JOBSCOPE
from agent_harness import Agent, env_with, job_row, sql, proc_state

# a shell's wait, without a deadline of its own, for a file the test makes
UNTIL = 'until [ -e "%s" ]; do sleep 0.02; done'
# the same in python
PY_UNTIL = "while not os.path.exists(%r): time.sleep(0.02)\n"

PY = sys.executable
# Debian's python3, where python3-statsd is installed (./dev deps)
DEBIAN_PY = "/usr/bin/python3"
# the senders that need nothing but the standard library: Debian's python without
# site (some 15 ms of CPU to start, where the test's own python may take 100)
LIGHT_PY = [DEBIAN_PY, "-S"] if os.path.exists(DEBIAN_PY) else [PY]

# python3-statsd, its env defaults, and a DogStatsD socket of our own
SENDER = r"""
import os, socket, sqlite3, subprocess, sys, time
from statsd.defaults.env import statsd as c   # STATSD_HOST / STATSD_PORT
JS, DB = sys.argv[1], sys.argv[2]

for i in range(500):
    c.incr("frames")                 # frames:1|c
c.incr("frames", 20)                 # frames:20|c
for ms in (4, 8, 15, 16, 23, 42):
    c.timing("step", ms)             # step:N|ms
c.gauge("loss", 2.5)
c.gauge("loss", 0.75)
c.gauge("queue", 10)
c.gauge("queue", -3, delta=True)     # queue:-3|g
c.set("users", "ann")
c.set("users", "bob")
c.set("users", "ann")
subprocess.run([JS, "mark", "train", "--text", "epoch 1"], check=True)
d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dst = (os.environ["STATSD_HOST"], int(os.environ["STATSD_PORT"]))
d.sendto(b"tokens:10|c|@0.5|#model:big,gpu:0\ntokens:4|c|#gpu:0,model:big", dst)
d.sendto(b"lat:1:2:3|h|#gpu:0", dst)
d.sendto(b"garbage\nnope:|c\nx:1|zz\n:1|c\nok:1|c", dst)
u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
u.sendto(b"viaunix:7|c", os.environ["JOBSCOPE_STATSD_SOCKET"])
# a tick stored the frames so far: the 5 below are stored at a later time
def stored():
    try:
        con = sqlite3.connect("file:%s?mode=ro" % DB, uri=True, timeout=10)
        try:
            return con.execute("SELECT 1 FROM app_samples WHERE name = 'frames'").fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return []
while not stored():
    time.sleep(0.02)
subprocess.run([JS, "metric", "frames", "5"], check=True)
subprocess.run([JS, "mark", "eval"], check=True)
"""


def app_totals(db, job=None):
    """{(name, type, tags): [count, sum, min, max, last]} over every tick of the job."""
    q = ("SELECT name, type, tags, count, sum, min, max, last FROM app_samples"
         + (" WHERE job_id = ?" if job else "") + " ORDER BY ts_ms, seq")
    out = {}
    for name, typ, tags, count, total, mn, mx, last in sql(db, q, *([job] if job else [])):
        t = out.setdefault((name, typ, tags), [0.0, 0.0, None, None, None])
        t[0] += count
        t[1] += total or 0.0
        t[2] = mn if t[2] is None else min(t[2], mn if mn is not None else t[2])
        t[3] = mx if t[3] is None else max(t[3], mx if mx is not None else t[3])
        t[4] = last
    return out


def test_run_python_statsd_exact(wd):
    script = wd.join("sender.py")
    with open(script, "w") as f:
        f.write(SENDER)
    r = run(wd, [DEBIAN_PY, script, JOBSCOPE, wd.join("store.db")], opts=["--interval", "100ms"])
    eq(r.rc, 0, "exit: %s" % r.stderr)
    db = wd.join("store.db")
    t = app_totals(db)
    eq(t[("frames", "counter", "")][:2], [502.0, 525.0], "frames: increments and total")
    step = t[("step", "timer", "")]
    eq((step[0], step[1], step[2], step[3]), (6.0, 108.0, 4.0, 42.0), "step timer")
    eq(t[("loss", "gauge", "")][4], 0.75, "loss gauge: the last value")
    eq(t[("queue", "gauge", "")][4], 7.0, "queue gauge: 10 then -3")
    eq(t[("users", "set", "")][4], 2.0, "users set: distinct members")
    # @0.5 doubles the first line; tag order is canonical, so both lines are one series
    eq(t[("tokens", "counter", "gpu:0,model:big")][:2], [3.0, 24.0], "tokens, sampled and tagged")
    lat = t[("lat", "histogram", "gpu:0")]
    eq((lat[0], lat[1], lat[2], lat[3]), (3.0, 6.0, 1.0, 3.0), "a multi-value histogram line")
    eq(t[("viaunix", "counter", "")][:2], [1.0, 7.0], "through JOBSCOPE_STATSD_SOCKET")
    eq(t[("ok", "counter", "")][:2], [1.0, 1.0], "the good line after bad ones")
    check(not any(k[0] in ("garbage", "nope", "x", "") for k in t), "bad lines are not stored")
    marks = sql(db, "SELECT name, text FROM marks ORDER BY ts_ms, seq")
    eq(marks, [("train", "epoch 1"), ("eval", None)], "markers, in order")
    times = sql(db, "SELECT count(DISTINCT ts_ms) FROM app_samples WHERE name = 'frames'")[0][0]
    check(times >= 2, "frames rows at %d tick times (expected the 500 and the 5 apart)" % times)
    ev = sql(db, "SELECT value, message FROM events WHERE kind = 'statsd_dropped'")
    eq(len(ev), 1, "one statsd_dropped event")
    eq(ev[0][0], 4, "four bad lines counted: %s" % ev[0][1])
    # phases start at the markers; what was sent before a marker counts in the phase it ends
    ph = r.report["app"]["phases"]
    eq([p["name"] for p in ph], ["train", "eval"], "phases")

    def phase_sum(p, name):
        return sum(m["sum"] for m in p["metrics"] if m["name"] == name and m["count"])

    eq(phase_sum(ph[0], "frames"), 5.0, "frames in the train phase: the 5 sent before eval")
    eq(phase_sum(ph[0], "tokens"), 24.0, "tokens in the train phase")
    eq(phase_sum(ph[1], "frames"), 0, "nothing after the eval marker")
    # the rows belong to the run's job
    jobs = sql(db, "SELECT DISTINCT job_id FROM app_samples")
    eq(jobs, sql(db, "SELECT id FROM jobs WHERE scheduler = 'run'"), "the run's job")


def test_run_env_and_no_statsd(wd):
    show = LIGHT_PY + ["-c", "import os; print(os.environ.get('STATSD_HOST'), "
            "os.environ.get('STATSD_PORT'), os.environ.get('JOBSCOPE_STATSD_SOCKET'))"]
    env = dict(os.environ, STATSD_HOST="198.51.100.7", STATSD_PORT="9999")
    env.pop("JOBSCOPE_STATSD_SOCKET", None)
    r = run(wd, show, opts=["--no-statsd"], env=env)
    eq(r.stdout.split(), ["198.51.100.7", "9999", "None"], "--no-statsd leaves them alone")
    env["STATSD_HOST"] = "127.0.0.1"
    env["STATSD_PORT"] = "9"  # discard: the relay's datagrams go nowhere
    r = run(wd, show, env=env)
    host, port, sock = r.stdout.split()
    eq(host, "127.0.0.1", "STATSD_HOST")
    check(port.isdigit() and port != "9", "STATSD_PORT is a fresh port: %s" % port)
    check(sock.endswith("/statsd.sock") and not os.path.exists(sock),
          "JOBSCOPE_STATSD_SOCKET %s, removed after the run" % sock)


def test_run_relays_to_the_sites_statsd(wd):
    """STATSD_HOST/PORT set before the run: the lines still reach that server."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind(("127.0.0.1", 0))
    srv.settimeout(10)
    got = []

    def listen():
        try:
            while True:
                got.append(srv.recv(65536))
                if b"done:1|c" in got[-1]:
                    return
        except OSError:
            pass

    th = threading.Thread(target=listen)
    th.start()
    env = dict(os.environ, STATSD_HOST="127.0.0.1", STATSD_PORT=str(srv.getsockname()[1]))
    send = ("import os, socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
            "d = (os.environ['STATSD_HOST'], int(os.environ['STATSD_PORT'])); "
            "s.sendto(b'relayed:3|c', d); s.sendto(b'done:1|c', d)")
    r = run(wd, LIGHT_PY + ["-c", send], env=env)
    th.join(15)
    srv.close()
    eq(r.rc, 0, "exit")
    eq(got, [b"relayed:3|c", b"done:1|c"], "what the site's server received")
    eq(app_totals(wd.join("store.db"))[("relayed", "counter", "")][:2], [1.0, 3.0],
       "and the run stored it")


def test_mark_and_metric_refuse_bad_input(wd):
    env = dict(os.environ, JOBSCOPE_STATSD_SOCKET=wd.join("nobody.sock"))
    r = jobscope("metric", "a|b", "1", env=env)
    eq(r.returncode, 2, "a name with | is a usage error: %s" % r.stderr)
    r = jobscope("metric", "frames", "nan", env=env)
    eq(r.returncode, 2, "nan is not a value: %s" % r.stderr)
    r = jobscope("metric", "--type", "bogus", "frames", "1", env=env)
    eq(r.returncode, 2, "bad --type")
    r = jobscope("mark", env=env)
    eq(r.returncode, 2, "mark without a name")
    r = jobscope("metric", "frames", "1", env=env)
    eq(r.returncode, 1, "no socket there: exit 1 (%s)" % r.stderr)
    check("nobody.sock" in r.stderr, "the error names the socket: %s" % r.stderr)


def test_agent_attributes_by_pid_and_by_tag(wd):
    sock = wd.join("statsd.sock")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    a = Agent(wd, interval="100ms",
              extra=["--statsd-socket", sock, "--statsd-udp", "127.0.0.1:%d" % port])
    p = None
    try:
        wait_for(lambda: os.path.exists(sock), what="the agent's StatsD socket")
        eq(oct(os.stat(sock).st_mode & 0o777), "0o666", "the socket is open to every job")
        # a Slurm job whose shell sends with `jobscope metric` and `jobscope mark`
        # (short-lived senders: attributed through their parent), and over UDP by tag;
        # it sends once the agent saw it (go.1), and stays until its rows are stored
        # (go.2)
        go = wd.join("go")
        script = ("%s; %s metric frames 40; %s mark phase2; %s metric --type timer step 12.5;"
                  " echo 'tagged:2|c|#job:4711' > /dev/udp/127.0.0.1/%d;"
                  " echo 'untagged:1|c' > /dev/udp/127.0.0.1/%d; %s"
                  % (UNTIL % (go + ".1"), JOBSCOPE, JOBSCOPE, JOBSCOPE, port, port,
                     UNTIL % (go + ".2")))
        env = env_with(SLURM_JOB_ID="4711", JOBSCOPE_STATSD_SOCKET=sock)
        p = subprocess.Popen(["bash", "-c", script], env=env)
        wait_for(lambda: job_row(a.db, "slurm", "4711"), what="the agent to see job 4711")
        open(go + ".1", "w").close()

        def job_rows():
            rows = sql(a.db, "SELECT a.name, a.type, sum(a.count), sum(a.sum) FROM app_samples a"
                       " JOIN jobs j ON j.id = a.job_id WHERE j.scheduler = 'slurm'"
                       " AND j.job_id = '4711' GROUP BY a.name, a.type ORDER BY a.name")
            return rows if len(rows) == 3 else None

        rows = wait_for(job_rows, timeout=15, what="the job's app rows")
        wait_for(lambda: a.metrics().get(("jobscope_agent_app_lines_total",
                                          frozenset({("result", "untagged")}))),
                 what="the untagged UDP line counted")
        open(go + ".2", "w").close()
        eq(p.wait(timeout=30), 0, "the job's script")
        eq(rows, [("frames", "counter", 1.0, 40.0), ("step", "timer", 1.0, 12.5),
                  ("tagged", "counter", 1.0, 2.0)], "the job's app rows")
        marks = sql(a.db, "SELECT m.name FROM marks m JOIN jobs j ON j.id = m.job_id"
                    " WHERE j.job_id = '4711'")
        eq(marks, [("phase2",)], "the marker, under the job")
        # frames was sent before the marker (by another process): stored no later than it
        fts = sql(a.db, "SELECT max(ts_ms) FROM app_samples WHERE name = 'frames'")[0][0]
        mts = sql(a.db, "SELECT ts_ms FROM marks WHERE name = 'phase2'")[0][0]
        check(fts <= mts, "frames stored at %d, after the marker at %d" % (fts, mts))
        sts = sql(a.db, "SELECT min(ts_ms) FROM app_samples WHERE name = 'step'")[0][0]
        check(sts > mts, "step, sent after the marker, stored at %d > %d" % (sts, mts))
        m = a.metrics()
        eq(m.get(("jobscope_agent_app_lines_total", frozenset({("result", "untagged")}))), 1.0,
           "the untagged UDP line is counted")
        check(sql(a.db, "SELECT count(*) FROM app_samples WHERE name = 'untagged'")[0][0] == 0,
              "and not stored")
    finally:
        if p and p.poll() is None:
            p.kill()
            p.wait()
        a.stop()


def test_agent_metrics_exposition(wd):
    sock = wd.join("statsd.sock")
    a = Agent(wd, interval="100ms", extra=["--statsd-socket", sock])
    p = None
    try:
        wait_for(lambda: os.path.exists(sock), what="the agent's StatsD socket")
        go = wd.join("go")
        # the job stays until its series are read
        script = ("import os, socket, time\n"
                  "u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
                  "for v in range(1, 101): u.sendto(b'step:%d|ms|#k:v' % v, '" + sock + "')\n"
                  "u.sendto(b'frames:5|c\\nframes:6|c\\nqueue:9|g', '" + sock + "')\n"
                  + PY_UNTIL % go)
        p = subprocess.Popen(LIGHT_PY + ["-c", script], env=env_with(SLURM_JOB_ID="99"))

        def series():
            m = a.metrics()
            lab = {("job_id", "99"), ("scheduler", "slurm")}
            got = {}
            for (name, labels), v in m.items():
                if name.startswith("jobscope_app_") and lab <= labels:
                    d = dict(labels)
                    got[(name, d.get("metric"), d.get("quantile"))] = v
            # every line sent: the steps and, in a datagram after them, frames and queue
            return got if got.get(("jobscope_app_summary_count", "step", None)) == 100 and \
                ("jobscope_app_counter_total", "frames", None) in got and \
                ("jobscope_app_gauge", "queue", None) in got else None

        got = wait_for(series, timeout=15, what="the job's app series on /metrics")
        eq(got[("jobscope_app_counter_total", "frames", None)], 11.0, "counter total")
        eq(got[("jobscope_app_gauge", "queue", None)], 9.0, "gauge")
        eq(got[("jobscope_app_summary_count", "step", None)], 100.0, "timer count")
        eq(got[("jobscope_app_summary_sum", "step", None)], 5050.0, "timer sum")
        p50 = got[("jobscope_app_summary", "step", "0.5")]
        check(abs(p50 - 50) <= 1.01, "p50 of 1..100 within 1%% of a value near 50: %r" % p50)
        p99 = got[("jobscope_app_summary", "step", "0.99")]
        check(abs(p99 - 99) <= 1.99, "p99 of 1..100: %r" % p99)
        open(go, "w").close()
        eq(p.wait(timeout=30), 0, "the sender")
    finally:
        if p and p.poll() is None:
            p.kill()
            p.wait()
        a.stop()


def test_agent_metrics_follow_the_jobs(wd):
    """Two jobs' series on /metrics, 300 of one (the table grows); the other job
    ends: its series leave /metrics, the 300 stay; the store keeps every row."""
    sock = wd.join("statsd.sock")
    a = Agent(wd, interval="100ms", extra=["--statsd-socket", sock])
    short = long_ = None
    try:
        wait_for(lambda: os.path.exists(sock), what="the agent's StatsD socket")
        # each sends, then stays until its file is made (the long one is killed)
        send = ("import os, socket, sys, time\n"
                "u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
                "time.sleep(0.5)  # not a wait: the agent's scans see it before it sends\n"
                "for i in range(int(sys.argv[1])):\n"
                "    u.sendto(b'c%d:1|c' % i, '" + sock + "')\n"
                "while not os.path.exists(sys.argv[2]): time.sleep(0.02)\n")
        go = wd.join("go")
        short = subprocess.Popen(LIGHT_PY + ["-c", send, "2", go],
                                 env=env_with(SLURM_JOB_ID="301"))
        long_ = subprocess.Popen(LIGHT_PY + ["-c", send, "300", go + ".never"],
                                 env=env_with(SLURM_JOB_ID="302"))

        def series(job):
            return {dict(l).get("metric") for (n, l), v in a.metrics().items()
                    if n == "jobscope_app_counter_total" and ("job_id", job) in l}

        wait_for(lambda: len(series("301")) == 2 and len(series("302")) == 300, timeout=15,
                 what="both jobs' series on /metrics")
        open(go, "w").close()
        eq(short.wait(timeout=30), 0, "the short job")
        wait_for(lambda: not series("301"), timeout=15, what="the ended job's series gone")
        eq(series("302"), {"c%d" % i for i in range(300)}, "the running job's series stay")
        eq(sql(a.db, "SELECT count(DISTINCT a.name) FROM app_samples a JOIN jobs j"
                     " ON j.id = a.job_id WHERE j.job_id = '301'")[0][0], 2, "stored")
    finally:
        for q in (short, long_):
            if q and q.poll() is None:
                q.kill()
                q.wait()
        a.stop()


def test_agent_keeps_a_sender_while_others_are_forgotten(wd):
    """One sender's relative gauge ("+1" forty times, 0.1 s apart) ends at
    40 while forty short-lived senders of the same job come and are
    forgotten beside it: the agent's index of senders, rebuilt as they go,
    still finds the long one (a new sender would start its gauge at 0)."""
    sock = wd.join("statsd.sock")
    a = Agent(wd, interval="100ms", extra=["--statsd-socket", sock])
    p = None
    try:
        wait_for(lambda: os.path.exists(sock), what="the agent's StatsD socket")
        go = wd.join("go")
        # it stays until its gauge at 40 is stored
        long_ = ("import os, socket, time\n"
                 "u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
                 "time.sleep(0.5)  # not a wait: the agent's scans see it before it sends\n"
                 "for i in range(40):\n"
                 "    u.sendto(b'g:+1|g', '" + sock + "')\n"
                 "    time.sleep(0.1)  # not a wait: the short senders come meanwhile\n"
                 + PY_UNTIL % go)
        short = ("import socket\n"
                 "socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'x:1|c', '"
                 + sock + "')\n")
        env = env_with(SLURM_JOB_ID="303")
        p = subprocess.Popen(LIGHT_PY + ["-c", long_], env=env)
        for _ in range(4):
            # each short sender, gone at once after its datagram, is attributed by the
            # process table when the agent reads its datagram after it was reaped: it
            # starts as a shell that stops itself until a scan saw it (as the job's)
            shorts = [subprocess.Popen(["sh", "-c", 'kill -STOP $$; exec "$@"', "sh"]
                                       + LIGHT_PY + ["-c", short], env=env)
                      for _ in range(10)]
            for q in shorts:
                wait_for(lambda: proc_state(q.pid) == "T", what="a short sender stopped")
            for q in shorts:
                wait_for(lambda: sql(a.db, "SELECT 1 FROM procs WHERE pid = ?", q.pid),
                         what="a scan that saw short sender %d" % q.pid)
                os.kill(q.pid, signal.SIGCONT)
            eq([q.wait(timeout=30) for q in shorts], [0] * 10, "short senders")
            time.sleep(0.5)  # not a wait: the ended senders are forgotten meanwhile
        q = ("SELECT a.name, a.last, a.sum FROM app_samples a JOIN jobs j ON j.id = a.job_id"
             " WHERE j.job_id = '303' ORDER BY a.seq")
        # the gauge may reach 40 before the last short senders' datagrams are stored (a
        # loaded machine takes longer over the rounds than the long sender's 4 s): both
        last = []

        def stored():
            r = sql(a.db, q)
            last[:] = r
            return ([x[1] for x in r if x[0] == "g"][-1:] == [40.0] and
                    sum(x[2] for x in r if x[0] == "x") >= 40.0 and r)
        try:
            rows = wait_for(stored, timeout=15, what="the gauge at 40 and the 40 counts stored")
        except AssertionError:
            rows = last
        open(go, "w").close()
        eq(p.wait(timeout=30), 0, "the long sender")
        eq(sum(x[2] for x in rows if x[0] == "x"), 40.0, "the short senders' counts")
        gauges = [x[1] for x in rows if x[0] == "g"]
        eq(gauges, sorted(gauges), "the gauge never went back")
    finally:
        if p and p.poll() is None:
            p.kill()
            p.wait()
        a.stop()


# A python that forks a python: the child waits for a file under its parent's name and
# environment, then execs python with SLURM_JOB_ID to send one line and exit.
FORK_EXEC_SEND = r"""
import os, sys, time
sock, go, job = sys.argv[1:4]
# it stays a moment after its datagram (not a wait): the agent reads a sender's job
# from its environment when the datagram comes, and a sender already reaped then has
# only the job the scans saw, its parent's; the next scan is still 2 s away
send = ("import socket, time\n"
        "socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'x:1|c', %r)\n"
        "time.sleep(0.5)\n" % sock)
pid = os.fork()
if pid == 0:
    while not os.path.exists(go):
        time.sleep(0.01)
    os.execve(sys.executable, [sys.executable] + sys.flags.no_site * ["-S"] + ["-c", send],
              dict(os.environ, SLURM_JOB_ID=job))
print(pid, flush=True)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_agent_sender_seen_only_before_its_exec(wd):
    """A sender the agent's scans saw only before its exec, in its parent's job, that
    execs into job 304, sends and is gone before the next scan: its line is job 304's,
    the job the process named itself when its datagram came."""
    sock, go = wd.join("statsd.sock"), wd.join("go")
    a = Agent(wd, interval="2s", extra=["--statsd-socket", sock])
    holder = subprocess.Popen(LIGHT_PY + ["-c", "import time; time.sleep(60)"],
                              env=env_with(SLURM_JOB_ID="304"))
    forker = None
    try:
        wait_for(lambda: os.path.exists(sock), what="the agent's StatsD socket")
        forker = subprocess.Popen(LIGHT_PY + ["-c", FORK_EXEC_SEND, sock, go, "304"],
                                  env=env_with(), stdout=subprocess.PIPE, text=True)
        child = int(forker.stdout.readline())
        wait_for(lambda: sql(a.db, "SELECT 1 FROM procs WHERE pid = ?", child)
                 and sql(a.db, "SELECT 1 FROM jobs WHERE job_id = '304'"),
                 timeout=20, what="a scan that saw the child before its exec, and job 304")
        eq(sql(a.db, "SELECT j.scheduler FROM procs p JOIN jobs j ON j.id = p.job_id"
                     " WHERE p.pid = ?", child), [("session",)],
           "the child, before its exec, is in its parent's job")
        ticks = a.ticks()
        wait_for(lambda: a.ticks() > ticks, timeout=20, what="a tick")
        open(go, "w").close()  # a tick just went: the next is about 2 s away
        eq(forker.wait(timeout=30), 0, "the forking python and its child")
        q = ("SELECT j.scheduler, j.job_id, sum(a.sum) FROM app_samples a JOIN jobs j"
             " ON j.id = a.job_id WHERE a.name = 'x' GROUP BY j.id")
        eq(wait_for(lambda: sql(a.db, q), timeout=20, what="the line stored"),
           [("slurm", "304", 1.0)], "the line's job")
    finally:
        holder.kill()
        holder.wait()
        if forker and forker.poll() is None:
            forker.kill()
        a.stop()


def test_agent_streams_app_rows_to_the_head(wd):
    """The agent's app rows and markers reach the head, the same rows under the same job."""
    from head_harness import Head, start_agent, stop_agent, caught_up, store_exists
    from head_harness import sql as hsql

    head = Head(wd)
    sock = wd.join("statsd.sock")
    agent, adb, _, errf = start_agent(wd, head, "node-app", extra=["--statsd-socket", sock])
    p = None
    try:
        wait_for(lambda: os.path.exists(sock), what="the agent's StatsD socket")
        # the job sends once the agent saw it (go.1) and stays until its rows are
        # stored (go.2)
        go = wd.join("go")
        script = ("%s; for i in 1 2 3; do %s metric --type timer step $i; done;"
                  " %s mark done --text 'all 3'; %s"
                  % (UNTIL % (go + ".1"), JOBSCOPE, JOBSCOPE, UNTIL % (go + ".2")))
        p = subprocess.Popen(["bash", "-c", script],
                             env=env_with(SLURM_JOB_ID="31337", JOBSCOPE_STATSD_SOCKET=sock))
        wait_for(lambda: store_exists(adb) and job_row(adb, "slurm", "31337"),
                 what="the agent to see job 31337")
        open(go + ".1", "w").close()
        q = ("SELECT a.name, a.type, sum(a.count), sum(a.sum), min(a.min), max(a.max)"
             " FROM app_samples a JOIN jobs j ON j.id = a.job_id WHERE j.job_id = '31337'"
             " GROUP BY a.name, a.type")
        eq(wait_for(lambda: len(sql(adb, q)) == 1 and sql(adb, q)[0][2] == 3.0 and sql(adb, q),
                    timeout=15, what="the agent's three timer lines"),
           [("step", "timer", 3.0, 6.0, 1.0, 3.0)], "the agent's rows")
        wait_for(lambda: sql(adb, "SELECT 1 FROM marks WHERE name = 'done'"),
                 what="the agent's marker")
        open(go + ".2", "w").close()
        eq(p.wait(timeout=30), 0, "the job's script")
        current = caught_up(head.db, adb)  # what the agent, sampling on, had by now
        wait_for(lambda: current() and hsql(head.db, q) == sql(adb, q), timeout=20,
                 what="the head holding the agent's rows")
        eq(hsql(head.db, q), sql(adb, q), "the same as the agent's")
        mq = ("SELECT m.name, m.text FROM marks m JOIN jobs j ON j.id = m.job_id"
              " WHERE j.job_id = '31337'")
        eq(hsql(head.db, mq), [("done", "all 3")], "the marker on the head")
        sk = "SELECT sketch FROM app_samples WHERE name = 'step' ORDER BY seq"
        eq([r[0] for r in hsql(head.db, sk)], [r[0] for r in sql(adb, sk)], "sketches, as text")
    finally:
        if p and p.poll() is None:
            p.kill()
            p.wait()
        stop_agent(agent, errf)
        head.kill()


if __name__ == "__main__":
    run_tests(globals())
