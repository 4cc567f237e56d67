"""The head on SQLite and the head on PostgreSQL answer the same bytes.

One agent streams to a tee on loopback that hands every request to two heads, one
with its store in a SQLite file and one in PostgreSQL (a private server,
pg_cluster.PgCluster), and answers the agent with the first head's answer once both
answered the same: the same batches reach both stores in the same order.  Then every
job's report (text and JSON), the history reports (--by user, node, job, hour,
weekday), `jobscope status` and the /api/v1 answers (jobs, a job, nodes, gpus, series)
are compared byte for byte between the heads, with only the heads' URLs and the
moments the heads themselves stamp (when they last heard from the agent, their
uptime) masked; and a job's CPU time at both heads equals the agent's own store.

JOBSCOPE_TEST_BACKENDS=sqlite,sqlite runs the same comparison between two SQLite heads
(a check of the test itself).
"""
import http.server
import json
import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from harness import helper, jobscope, run_tests, check, eq, scaled, tail, wait_for
from agent_harness import env_with, spawn
from head_harness import Head, start_agent, stop_agent, held, caught_up, sql, store_exists

BACKENDS = os.environ.get("JOBSCOPE_TEST_BACKENDS", "sqlite,postgresql").split(",")
HOP = {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "expect"}


class Tee:
    """An HTTP server on 127.0.0.1 that sends each request to every head in turn and
    answers with the first head's answer; a difference in status or body between
    the heads is kept in .diffs (and answered 502, so the agent sends again)."""

    def __init__(self, heads):
        self.heads = heads
        self.diffs = []
        self.requests = 0
        self.log = []  # each request: when, what, each head's answer and how long it took
        self.t0 = time.monotonic()
        self.slowest = 0.0
        tee = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _any(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                hdrs = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
                t0 = time.monotonic()
                # to every head at once: the agent waits for the slowest, not the sum
                answers = [None] * len(tee.heads)

                def send(i):
                    t = time.monotonic()
                    answers[i] = tee._send(tee.heads[i], self.command, self.path, body, hdrs) \
                        + (time.monotonic() - t,)
                sends = [threading.Thread(target=send, args=(i,)) for i in range(len(tee.heads))]
                for th in sends:
                    th.start()
                for th in sends:
                    th.join()
                tee.requests += 1
                tee.slowest = max([tee.slowest] + [a[3] for a in answers])
                tee.log.append("%.1f s: %s %s (%d bytes): %s" % (
                    t0 - tee.t0, self.command, self.path, len(body or b""),
                    ", ".join("%d in %.2f s" % (a[0], a[3]) for a in answers)))
                first = answers[0]
                status = first[0]
                for other in answers[1:]:
                    if (other[0], other[2]) != (first[0], first[2]):
                        tee.diffs.append((self.command, self.path, answers))
                        status = 502
                self.send_response(status)
                for k, v in first[1]:
                    if k.lower() not in HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(first[2])))
                self.end_headers()
                self.wfile.write(first[2])

            do_GET = do_POST = do_PUT = do_DELETE = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @staticmethod
    def _send(head, method, path, body, hdrs):
        req = urllib.request.Request(head.url + path, data=body, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=scaled(30)) as r:
                return r.status, r.getheaders(), r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.items(), e.read()
        except OSError as e:
            return 599, [], repr(e).encode()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def masked(text, head, others):
    """text with the heads' URLs and ports put as HEAD, their stores (a path, a URL) as
    STORE, and the moments the head itself stamps (first and last contact, start, lag
    measured now) as T."""
    for h in [head] + others:
        text = text.replace(h.url, "HEAD").replace("127.0.0.1:%d" % h.port, "HEAD")
        text = text.replace(h.db, "STORE")
    text = re.sub(r'"(first_seen_ms|last_seen_ms|last_ok_ms|now_ms|uptime_s|uptime_ms|started_ms|'
                  r'lag_ms|age_ms|since_ms|seen_ms|heads_now_ms)": *-?[0-9.]+', r'"\1": T', text)
    # /status's heads: each its own (HOST:PID:START, its pid); the lease's expiry is
    # PostgreSQL's (a file's head holds it for ever)
    text = re.sub(r'"(head_id|upkeep_lease)": *"[^"]*"', r'"\1": "HEADID"', text)
    text = re.sub(r'"id": *"[^"]*"(,\s*"hostname")', r'"id": "HEADID"\1', text)
    text = re.sub(r'"pid": *[0-9]+(,\s*"started_ms")', r'"pid": P\1', text)
    text = re.sub(r'"lease_expires_ms": *(?:null|[0-9]+),\s*', '', text)
    text = re.sub(r"(last seen|up|uptime|lag|ago)[ :]+[0-9][0-9.]*\s*(ms|s|m|h|d)?",
                  r"\1 T", text)
    return text


def ages(text):
    """The text table's ages ("723ms", "2s": since the head last heard) as T, with the
    spaces before them that right-align them in their column ("  723ms", "    2s")."""
    return re.sub(r" +\d+(?:\.\d+)?(?:ms|s|m|h|d)(?= )", " T", text)


def both(heads, fn, what, mask=lambda t: t):
    """fn(head) at each head, masked, and the same: the first's."""
    outs = [mask(masked(fn(h), h, heads)) for h in heads]
    for h, o in zip(heads[1:], outs[1:]):
        eq(o, outs[0], "%s: the %s head vs the %s head" % (what, h.backend, heads[0].backend))
    return outs[0]


def cli(*args):
    r = jobscope(*args, timeout=60)
    return "rc=%d\n%s\n--stderr--\n%s" % (r.returncode, r.stdout, r.stderr)


def api(h, path):
    try:
        with urllib.request.urlopen(h.url + path, timeout=scaled(10)) as r:
            return "%d %s" % (r.status, r.read().decode())
    except urllib.error.HTTPError as e:
        return "%d %s" % (e.code, e.read().decode())


def test_reports_byte_identical_between_backends(wd):
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    heads = []
    tee = proc = None
    jobs = []
    try:
        for b in BACKENDS:
            tag = "%s-%d" % (b, len(heads))
            h = Head(wd, db=wd.join("head-%s.db" % tag), name="head-" + tag, backend=b)
            h.backend = b
            heads.append(h)
        tee = Tee(heads)
        proc, adb, log, errf = start_agent(wd, None, "node-a", url=tee.url)
        wait_for(lambda: tee.requests >= 2, timeout=20, what="the agent streaming to the tee")
        # two Slurm jobs: one spinning 2 threads for 2 s, one asleep for 1 s.  Each is
        # reaped (by this process) a second apart, the sleeper first: a process that
        # ended between two of the agent's ticks gets its final CPU time from its
        # parent's cutime only when it is the only child the parent reaped meanwhile
        # (ptree.c's settle_ended), and then the spinning job's CPU time is exact
        jobs = [spawn([helper("busy"), "--seconds", "2", "--threads", "2"],
                      env=env_with(SLURM_JOB_ID=5101)),
                spawn([helper("busy"), "--sleep", "1"], env=env_with(SLURM_JOB_ID=5102))]
        outs = [j.communicate(timeout=scaled(30))[0] for j in reversed(jobs)][::-1]
        eq([j.returncode for j in jobs], [0, 0], "the jobs' exit")
        # what the spinning job measured of itself (getrusage)
        own_ms = json.loads(outs[0].strip().splitlines()[-1])["cpu_seconds"] * 1000
        wait_for(lambda: sql(adb, "SELECT count(*) FROM job_summaries s JOIN jobs j"
                                  " ON j.id = s.job_id WHERE j.scheduler = 'slurm'"
                                  " AND j.job_id IN ('5101', '5102')")[0][0] == 2,
                 timeout=30, what="both jobs ended at the agent")
        # the heads current before the agent stops: its exit sends what is left within
        # 2 s, the last tick then, not a backlog
        for h in heads:
            wait_for(caught_up(h.db, adb), timeout=30,
                     what="the %s head to catch up with the agent" % h.backend)
        eq(stop_agent(proc, errf), 0, "agent exit")
        proc = None
        for h in heads:
            try:
                wait_for(lambda: store_exists(h.db) and held(h.db, adb), timeout=30,
                         what="every row at the %s head" % h.backend)
            except AssertionError as e:
                raise AssertionError("%s: %d requests through the tee, the last: %s\nthe"
                                     " agent's log: %s\nthe heads' logs: %s" % (
                                         e, tee.requests, "\n".join(tee.log[-10:]), tail(log),
                                         "\n".join(tail(x.log) for x in heads)))
        eq(tee.diffs, [], "the heads answered every batch the same")
        # the hello and batches: as many as the agent's ticks found the heads free for
        # (a busy machine makes fewer, larger ones)
        check(tee.requests >= 3, "batches went through the tee: %d" % tee.requests)
        print("%d requests through the tee, the slowest %.2f s" % (tee.requests, tee.slowest))

        # the jobs' lists, then every job's report and API answer
        listed = json.loads(both(heads, lambda h: api(h, "/api/v1/jobs?limit=100"),
                                 "GET /api/v1/jobs").split(" ", 1)[1])
        keys = [j["key"] for j in listed["jobs"]]
        check(any(k.startswith("slurm:5101:") for k in keys) and
              any(k.startswith("slurm:5102:") for k in keys), "both jobs listed: %r" % keys)
        for key in keys:
            both(heads, lambda h: api(h, "/api/v1/jobs/" + urllib.parse.quote(key, safe=":")),
                 "GET /api/v1/jobs/" + key)
            for fmt in ("text", "json", "csv"):
                out = both(heads, lambda h: cli("report", "--head", h.url, "--job", key,
                                                "--format", fmt),
                           "report --job %s --format %s" % (key, fmt))
                check(out.startswith("rc=0"), "report %s %s: %s" % (key, fmt, out[:300]))
        # history, every grouping, over one fixed window
        until = int(time.time() * 1000)
        since = str(until - 3600 * 1000)
        until = str(until)
        for by in ("user", "node", "job", "hour", "weekday"):
            for fmt in ("text", "json"):
                out = both(heads, lambda h: cli("report", "--head", h.url, "--since", since,
                                                "--until", until, "--by", by, "--format", fmt),
                           "report (the last hour) --by %s --format %s" % (by, fmt))
                check(out.startswith("rc=0"), "history by %s: %s" % (by, out[:300]))
        both(heads, lambda h: cli("report", "--head", h.url, "--node", "node-a", "--since", since,
                                  "--until", until),
             "report --node node-a")
        # the head and its agents
        for args in ([], ["--json"]):
            out = both(heads, lambda h: cli("status", "--head", h.url, *args),
                       "status %s" % " ".join(args), mask=ages)
            check(out.startswith("rc=0"), "status: %s" % out[:300])
        both(heads, lambda h: api(h, "/api/v1/nodes"), "GET /api/v1/nodes")
        both(heads, lambda h: api(h, "/api/v1/gpus"), "GET /api/v1/gpus")
        for metric in ("cpu_user_ms", "mem_available_bytes", "load1_milli"):
            out = both(heads, lambda h: api(h, "/api/v1/series?node=node-a&metric=" + metric),
                       "GET /api/v1/series " + metric)
            check(out.startswith("200 ") and len(json.loads(out[4:])["points"]) > 10,
                  "series %s has points: %s" % (metric, out[:200]))

        # exact values: the spinning job's CPU time at each head is the agent's own
        want = sql(adb, "SELECT s.cpu_ms FROM job_summaries s JOIN jobs j ON j.id = s.job_id"
                        " WHERE j.job_id = '5101'")[0][0]
        check(want is not None and abs(want - own_ms) <= 0.1 * own_ms + 300,
              "the agent's cpu_ms %r of job 5101, which measured %.0f ms itself" % (want, own_ms))
        for h in heads:
            eq(sql(h.db, "SELECT s.cpu_ms FROM job_summaries s JOIN jobs j ON j.id = s.job_id"
                         " WHERE j.job_id = '5101'")[0][0], want,
               "job 5101's cpu_ms in the %s head's store" % h.backend)
            got = [j for j in json.loads(api(h, "/api/v1/jobs?limit=100")[4:])["jobs"]
                   if j["job_id"] == "5101"]
            eq([j["cpu_ms"] for j in got], [want], "cpu_ms in the %s head's jobs list"
               % h.backend)
            eq(sql(h.db, 'SELECT DISTINCT "user" FROM jobs WHERE job_id IN (\'5101\', \'5102\')'),
               sql(adb, 'SELECT DISTINCT "user" FROM jobs WHERE job_id IN (\'5101\', \'5102\')'),
               "the jobs' user at the %s head" % h.backend)
    finally:
        if proc is not None:
            stop_agent(proc, errf)
        for j in jobs:
            if j.poll() is None:
                j.kill()
                j.wait()
        if tee:
            tee.close()
        for h in heads:
            if h.proc.poll() is None:
                eq(h.kill(15), 0, "the %s head's exit" % h.backend)


if __name__ == "__main__":
    run_tests(globals())
