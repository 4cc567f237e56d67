"""A real Prometheus scraping a real `jobscope agent`: what Prometheus stores
is exactly what the agent stored in its own SQLite store, tick by tick.

The agent runs on 127.0.0.1, a free port, a private store, one tick a
second; Prometheus (/usr/bin/prometheus, Debian package `prometheus`) on
another free loopback port scrapes it every second into a private TSDB.  A
js-busy with a Slurm environment (SLURM_JOB_ID=4242, SLURM_CPUS_ON_NODE=1,
SLURM_MEM_PER_NODE=100) burns CPU until Prometheus has scraped it four times;
then the samples Prometheus kept are compared with the store's job_samples and
host_samples rows.

The agent ticks each second, not each 100 ms as other tests' agents do: the
comparison is tick by tick, a scrape for (nearly) every tick, which a faster
agent would turn into a scrape for one tick in ten; and what the test waits on
is Prometheus's scrapes, which a faster agent would not bring sooner.

Without the prometheus binary the Prometheus test prints "SKIP: ..." and
passes, as the other integration tests do for what the machine lacks.
"""
import json
import os
import pwd
import re
import resource
import signal
import subprocess
import urllib.parse

from agent_harness import sql
from harness import (JOBSCOPE, check, eq, helper, http_get, run_tests, slurm_env, stop, tail,
                     wait_for)
from prom_harness import PROMETHEUS, PrometheusProcess

PROMTOOL = "/usr/bin/promtool"
PROM_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
INTERVAL_MS = 1000
JOB_ID = "4242"
RESERVED_MEM = 100 * 1048576
JOB_SCRAPES = 4           # the job runs until Prometheus has scraped it this often


class Agent:
    def __init__(self, wd):
        self.db = wd.join("agent.db")
        self.log = wd.join("agent.log")
        self.errf = open(self.log, "w")
        self.proc = subprocess.Popen(
            [JOBSCOPE, "agent", "--db", self.db, "--listen", "127.0.0.1:0",
             "--interval", "%dms" % INTERVAL_MS, "--exit-after", "120s"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.errf,
            env=slurm_env())
        self.port = wait_for(self._port, timeout=15, what="the agent's listening line")
        self.url = "http://127.0.0.1:%d" % self.port

    def _port(self):
        text = tail(self.log, 1000)
        m = re.search(r"jobscope: agent: listening on 127\.0\.0\.1:(\d+)", text)
        if m:
            return int(m.group(1))
        if self.proc.poll() is not None:
            raise AssertionError("the agent exited with %s: %s" % (self.proc.returncode, text))
        return None

    def metrics(self):
        """(Content-Type, body) of /metrics, once the first tick is rendered."""
        def ready():
            status, headers, body = http_get(self.url + "/metrics")
            return (headers.get("Content-Type"), body) if status == 200 else None
        return wait_for(ready, timeout=10, what="GET /metrics answering 200")

    def body_with(self, text):
        """The /metrics body if it has text, else None."""
        body = self.metrics()[1]
        return body if text in body else None

    def stop(self):
        try:
            return stop(self.proc)
        finally:
            self.errf.close()


class Prometheus(PrometheusProcess):
    def __init__(self, wd, target_port):
        super().__init__(wd, "global:\n"
                             "  scrape_interval: 1s\n"
                             "  scrape_timeout: 1s\n"
                             "  evaluation_interval: 1m\n"
                             "scrape_configs:\n"
                             "  - job_name: jobscope\n"
                             "    static_configs:\n"
                             "      - targets: ['127.0.0.1:%d']\n" % target_port)

    def query(self, expr, at_ms=None):
        """result of an instant query, at at_ms (epoch ms) or now."""
        params = {"query": expr}
        if at_ms is not None:
            params["time"] = "%d.%03d" % divmod(at_ms, 1000)
        status, _h, body = http_get(self.url + "/api/v1/query?" + urllib.parse.urlencode(params))
        reply = json.loads(body)
        if status != 200 or reply.get("status") != "success":
            raise AssertionError("query %r: %d %s" % (expr, status, body))
        return reply["data"]

    def vector(self, expr, at_ms=None):
        data = self.query(expr, at_ms)
        eq(data["resultType"], "vector", "result type of %r" % expr)
        return data["result"]

    def raw(self, expr, window="120s"):
        """[(ts_ms, value)] of the one series expr selects: every scraped sample."""
        data = self.query("%s[%s]" % (expr, window))
        eq(data["resultType"], "matrix", "result type of a range selector")
        eq(len(data["result"]), 1, "series for %s: %r" % (expr, data["result"]))
        return [(round(float(t) * 1000), float(v)) for t, v in data["result"][0]["values"]]


def promtool_check(body):
    """(rc, output) of `promtool check metrics` on body; None without promtool."""
    if not os.path.exists(PROMTOOL):
        return None
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=body, capture_output=True,
                       text=True, timeout=30)
    return p.returncode, (p.stdout + p.stderr).strip()


def check_promtool(body):
    res = promtool_check(body)
    if res is None:
        print("SKIP: %s is not installed: /metrics not linted" % PROMTOOL)
        return
    rc, out = res
    # 0: clean; 3: parsed, with lint findings (naming conventions); 1: errors
    check(rc in (0, 3), "promtool check metrics failed (rc %d):\n%s\n--- body ---\n%s"
          % (rc, out, body))
    for line in out.splitlines():
        print("promtool lint: %s" % line)
    if rc == 0:
        print("promtool check metrics: clean")


def metric_lines(body):
    """{(name, frozenset(labels)): value text} of an exposition body."""
    out = {}
    for line in body.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        check(m, "not a Prometheus sample line: %r" % line)
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out[(m.group(1), labels)] = m.group(4)
    return out


def test_metrics_endpoint(wd):
    """Content-Type, a job's series, and promtool's verdict on the real body."""
    agent = Agent(wd)
    busy = None
    try:
        # a job that stays until its series are read (killed at the end)
        busy = subprocess.Popen([helper("busy"), "--sleep", "60"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=slurm_env(SLURM_JOB_ID=JOB_ID, SLURM_CPUS_ON_NODE=1,
                                              SLURM_MEM_PER_NODE=100))

        body = wait_for(lambda: agent.body_with('job_id="%s"' % JOB_ID), timeout=10,
                        what="job %s in /metrics" % JOB_ID)
        ctype = agent.metrics()[0]
        eq(ctype, PROM_CONTENT_TYPE, "Content-Type of /metrics")
        check(body.endswith("\n"), "the body ends with a newline")
        lines = metric_lines(body)
        user = pwd.getpwuid(os.getuid()).pw_name
        labels = frozenset({("job_id", JOB_ID), ("scheduler", "slurm"), ("user", user)})
        for name, want in (("jobscope_job_reserved_memory_bytes", str(RESERVED_MEM)),
                           ("jobscope_job_reserved_cpus", "1"),
                           ("jobscope_job_processes", "1")):
            eq(lines.get((name, labels)), want, "%s%s" % (name, dict(labels)))
        check(("jobscope_job_cpu_seconds_total", labels) in lines, "the job's CPU series")
        for fam in ("jobscope_node_cpu_seconds_total", "jobscope_node_memory_total_bytes",
                    "jobscope_job_cpu_seconds_total", "jobscope_agent_ticks_total"):
            check("# TYPE %s " % fam in body and "# HELP %s " % fam in body,
                  "HELP and TYPE of %s" % fam)
        check_promtool(body)
    finally:
        if busy is not None:
            stop(busy, signal.SIGKILL)
            busy.communicate()
        eq(agent.stop(), 0, "the agent's exit code on SIGTERM")


def answer_ms(durations):
    """{T: ms}: how long after its stamp T each scrape's answer came at the latest
    (Prometheus's own scrape_duration_seconds, [(T, s)], and 100 ms more)."""
    return {t: v * 1000 + 100 for t, v in durations}


def match_ticks(samples, rows, ticks, answered, what):
    """Every scraped (T, v) must be the value as of a tick the agent's answer can
    have come from.  The agent's ticks run one after another, each taking its ts_ms
    as it starts and publishing its /metrics body as it ends: so by T (Prometheus
    stamps a scrape as it starts it) the tick before the last one started by T has
    published, and the answer, by T + answered[T], comes from no tick started after
    that.  However late ticks are on a busy machine, the value is one of those
    ticks'.  rows: [(ts_ms, value)] of the series, sorted, a row where it changed
    (job_samples) or at every tick; ticks: every tick's ts_ms (host_samples),
    sorted; answered: answer_ms().  Returns how many samples were not the value as
    of the last tick started by T (a later tick's, or an earlier one's)."""
    check(rows, "no stored rows for %s" % what)

    def value_at(ts):
        vals = [val for rts, val in rows if rts <= ts]
        return vals[-1] if vals else None
    other = 0
    for t, v in samples:
        started = [ts for ts in ticks if ts <= t]
        check(started, "%s scraped at %d, before the agent's first tick" % (what, t))
        latest = [ts for ts in ticks if ts <= t + answered.get(t, 100)]
        window = [ts for ts in ticks if started[max(len(started) - 2, 0)] <= ts <= latest[-1]]
        ok = [value_at(ts) for ts in window]
        check(v in ok, "%s scraped at %d = %r: not the stored value as of a tick that"
              " started from %d to %d (%r)\nrows: %r"
              % (what, t, v, window[0], window[-1], ok, rows))
        if v != value_at(started[-1]):
            other += 1
    return other


def test_prometheus_matches_store(wd):
    if not os.path.exists(PROMETHEUS):
        print("SKIP: %s is not installed (Debian package 'prometheus')" % PROMETHEUS)
        return
    agent = prom = busy = None
    try:
        agent = Agent(wd)
        ctype, body = agent.metrics()
        eq(ctype, PROM_CONTENT_TYPE, "Content-Type of /metrics")
        prom = Prometheus(wd, agent.port)

        def target_up():
            r = prom.vector('up{job="jobscope"}')
            return r and r[0]["value"][1] == "1"
        wait_for(target_up, timeout=10, what="Prometheus's first scrape of the agent")

        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        busy = subprocess.Popen([helper("busy"), "--seconds", "120"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=slurm_env(SLURM_JOB_ID=JOB_ID, SLURM_CPUS_ON_NODE=1,
                                              SLURM_MEM_PER_NODE=100))
        sel = '{job_id="%s"}' % JOB_ID
        # the body while the job runs goes to promtool, job series and all
        body = wait_for(lambda: agent.body_with('job_id="%s"' % JOB_ID), timeout=10,
                        what="job %s in /metrics" % JOB_ID)
        # however many scrapes a busy machine makes fail: the job ends after enough
        wait_for(lambda: (lambda r: r and len(r[0]["values"]) >= JOB_SCRAPES)(
            prom.query("jobscope_job_cpu_seconds_total%s[120s]" % sel)["result"]),
            timeout=JOB_SCRAPES + 20, what="%d scrapes of the job" % JOB_SCRAPES)
        stop(busy)
        busy.communicate()
        busy = None
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        busy_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        # Prometheus has every value of the job once its series went stale
        # (the agent drops an ended job from /metrics)
        wait_for(lambda: not prom.vector("jobscope_job_cpu_seconds_total" + sel),
                 timeout=10, what="the job's series to go stale in Prometheus")

        cpu = prom.raw("jobscope_job_cpu_seconds_total" + sel)
        mem_total = prom.raw("jobscope_node_memory_total_bytes")
        node_user = prom.raw('jobscope_node_cpu_seconds_total{mode="user"}')
        reserved = prom.raw("jobscope_job_reserved_memory_bytes" + sel)
        reserved_cpus = prom.raw("jobscope_job_reserved_cpus" + sel)
        tick_max = max(v for _t, v in prom.raw("jobscope_agent_tick_duration_seconds"))
        up = prom.raw('up{job="jobscope"}')
        answered = answer_ms(prom.raw('scrape_duration_seconds{job="jobscope"}'))
        # instant queries at the scrape times give back those very samples
        for t, v in cpu:
            got = prom.vector("jobscope_job_cpu_seconds_total" + sel, at_ms=t)
            eq(len(got), 1, "one series at %d" % t)
            eq(float(got[0]["value"][1]), v, "instant query at %d" % t)
            labels = got[0]["metric"]
            eq(labels.get("scheduler"), "slurm", "scheduler label")
            eq(labels.get("user"), pwd.getpwuid(os.getuid()).pw_name, "user label")
            got = prom.vector("jobscope_job_reserved_memory_bytes" + sel, at_ms=t)
            eq([float(g["value"][1]) for g in got], [float(RESERVED_MEM)],
               "reserved memory at %d" % t)
        mem_at = {t: [float(g["value"][1]) for g in prom.vector(
            "jobscope_node_memory_total_bytes", at_ms=t)] for t, _v in cpu}
    except BaseException:
        for name, obj in (("agent", agent), ("prometheus", prom)):
            if obj is not None:
                print("--- %s log (tail) ---\n%s" % (name, tail(obj.log)))
        raise
    finally:
        if busy is not None:
            stop(busy, signal.SIGKILL)
            busy.communicate()
        prom_rc = prom.stop() if prom else None
        agent_rc = agent.stop() if agent else None
    eq(agent_rc, 0, "the agent's exit code on SIGTERM")
    check(prom_rc is not None, "Prometheus stopped")
    check_promtool(body)

    # ---- the store, read after the agent stopped ----
    jobs = sql(agent.db, "SELECT id, reserved_cpus, reserved_mem_bytes, end_ms FROM jobs"
               " WHERE scheduler = 'slurm' AND job_id = ?", JOB_ID)
    eq(len(jobs), 1, "one stored job %s" % JOB_ID)
    row_id, st_cpus, st_mem, end_ms = jobs[0]
    eq(st_mem, RESERVED_MEM, "jobs.reserved_mem_bytes")
    eq(st_cpus, 1.0, "jobs.reserved_cpus")
    check(end_ms is not None, "the job's end is stored")
    js = sql(agent.db, "SELECT ts_ms, user_ms, system_ms, cg_cpu_ms FROM job_samples"
             " WHERE job_id = ? ORDER BY ts_ms, seq", row_id)
    # /metrics: (user_ms + system_ms) / 1000, or the cgroup's CPU when larger
    # (there is no Slurm cgroup here: cg_cpu_ms is NULL)
    rows = [(ts, max(u + s, cg or 0) / 1000.0) for ts, u, s, cg in js]
    hosts = sql(agent.db, "SELECT ts_ms, mem_total_bytes, cpu_user_ms FROM host_samples"
                " ORDER BY ts_ms, seq")

    ticks = [ts for ts, _m, _u in hosts]
    print("stored job rows: %s" % ", ".join("%d:%r" % r for r in rows))
    print("scraped job samples: %s" % ", ".join("%d:%r" % s for s in cpu))

    check(len(cpu) >= JOB_SCRAPES, "at least %d scrapes of the job: %r" % (JOB_SCRAPES, cpu))
    eq(sorted(cpu), cpu, "timestamps in order")
    for (_t0, a), (_t1, b) in zip(cpu, cpu[1:]):
        check(b >= a, "a counter going down: %r" % cpu)
    stored_values = set(v for _t, v in rows)
    for t, v in cpu:
        check(v in stored_values, "scraped %r at %d is no stored value %r" % (v, t, rows))
    lee_job = match_ticks(cpu, rows, ticks, answered, "jobscope_job_cpu_seconds_total")
    lee_host = match_ticks(node_user, [(ts, u / 1000.0) for ts, _m, u in hosts], ticks,
                           answered, 'jobscope_node_cpu_seconds_total{mode="user"}')
    match_ticks(mem_total, [(ts, float(m)) for ts, m, _u in hosts], ticks, answered,
                "jobscope_node_memory_total_bytes")
    for t, vals in mem_at.items():
        before = [float(m) for ts, m, _u in hosts if ts <= t]
        eq(vals, before[-1:], "jobscope_node_memory_total_bytes at %d vs host_samples" % t)
    # every scrape the agent answered while the job was live has the job, the last
    # one too: from the first tick's body (published before the next tick started)
    # to the end row's tick (the job is gone from the body it publishes), as the
    # scrape's answer came (Prometheus's own up and scrape_duration_seconds: a busy
    # machine makes scrapes fail, and late, and then there is none to compare)
    first_ts = rows[0][0]
    final_ts, final_v = rows[-1]
    published = min(ts for ts in ticks if ts > first_ts)
    live_scrapes = [t for t, v in up if v == 1 and t >= published and
                    t + answered[t] < final_ts]
    missing = sorted(set(live_scrapes) - set(t for t, _v in cpu))
    eq(missing, [], "scrapes answered while the job was live, without the job's series"
       " (the job's from %d to %d)" % (first_ts, final_ts))
    last_t, last_v = cpu[-1]
    last_row_ts = max(ts for ts, v in rows if v == last_v)
    # one thread cannot use more CPU than the wall time between the two rows (the
    # last row holds its CPU until it ended, the earlier one from its tick's read on)
    check(0 <= final_v - last_v <= (final_ts - last_row_ts) / 1000.0 + 0.02,
          "final stored %r at %d vs last scraped %r (row at %d): more CPU than one thread"
          " can use" % (final_v, final_ts, last_v, last_row_ts))
    for t, v in reserved:
        eq(v, float(RESERVED_MEM), "scraped reserved memory at %d" % t)
    for t, v in reserved_cpus:
        eq(v, 1.0, "scraped reserved cpus at %d" % t)
    eq(len(reserved), len(cpu), "reserved memory scraped with every CPU sample")
    print("%d scrapes of the job, %d of the node; %d+%d of them an earlier or later tick's"
          " than the last one started (ticks take <= %.1f ms); final stored CPU %.3f s,"
          " js-busy's getrusage %.3f s"
          % (len(cpu), len(node_user), lee_job, lee_host, tick_max * 1000, final_v, busy_cpu))


if __name__ == "__main__":
    run_tests(globals())
