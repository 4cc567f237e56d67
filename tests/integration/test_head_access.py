#!/usr/bin/env python3
"""Who may see what (issue 31): a head closed by default, each user their own
jobs by MUNGE credential or through a trusted proxy's user header, admins all,
and docs/http-api.md's access table walked with every kind of caller.

The jobs are real: processes of users nobody and daemon, each with a
SLURM_JOB_ID in its environment, seen by an agent that streams to the head.
Credentials come from a private munged (munge_harness)."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import JOBSCOPE, check, eq, jobscope, run_tests, scaled, wait_for  # noqa: E402
from head_harness import Head, sql, start_agent, stop_agent  # noqa: E402
from munge_harness import Munged  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOBODY_JOB, DAEMON_JOB = "7101", "7102"


def request(port, path, method="GET", headers=None, body=None, source="127.0.0.1",
            host="127.0.0.1", timeout=10):
    """(status, headers, body) of one request from address source; a stream's body unread."""
    c = http.client.HTTPConnection(host, port, timeout=scaled(timeout),
                                   source_address=(source, 0))
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        stream = r.getheader("Content-Type", "").startswith("text/event-stream")
        data = b"" if stream else r.read()
        return r.status, r.headers, data
    finally:
        c.close()


def as_json(answer):
    status, _, body = answer
    eq(status, 200, "status of %r" % body[:200])
    return json.loads(body)


def token(wd, name, value):
    path = wd.join(name)
    with open(path, "w") as f:
        f.write(value + "\n")
    return path


def job_processes():
    """A sleeping job of nobody and one of daemon, known by SLURM_JOB_ID."""
    return [subprocess.Popen(["runuser", "-u", user, "--", "env", "SLURM_JOB_ID=" + jid,
                              "sleep", "600"], stdin=subprocess.DEVNULL)
            for user, jid in (("nobody", NOBODY_JOB), ("daemon", DAEMON_JOB))]


def jobs_at_head(db):
    rows = sql(db, "SELECT job_id, \"user\" FROM jobs WHERE scheduler = 'slurm'")
    return sorted(tuple(r) for r in rows)


def history_keys(doc):
    """The Slurm jobs of a history by job (a user's login sessions are jobs too)."""
    return sorted(r["key"] for r in doc["rows"] if r["key"].startswith("slurm:"))


class Cluster:
    """munged, a head with tokens, MUNGE and a trusted proxy, an agent, two users' jobs."""

    def __init__(self, wd):
        self.munge = Munged(wd)
        self.tokens = {"agent": "agent-secret", "admin": "admin-secret", "reader": "read-secret"}
        self.procs = job_processes()
        self.head = Head(wd, addr="0.0.0.0", extra=[
            "--token-file", token(wd, "agent.token", self.tokens["agent"]),
            "--admin-token-file", token(wd, "admin.token", self.tokens["admin"]),
            "--read-token-file", token(wd, "read.token", self.tokens["reader"]),
            "--auth", "munge", "--munge-socket", self.munge.socket,
            "--trusted-proxy", "127.0.0.1", "--admins", "root"])
        self.port = self.head.port
        self.agent, _, _, self.agent_err = start_agent(
            wd, self.head, "n1", extra=["--token-file", wd.join("agent.token")],
            url="http://127.0.0.1:%d" % self.port)
        wait_for(lambda: jobs_at_head(self.head.db) == [(NOBODY_JOB, "nobody"),
                                                        (DAEMON_JOB, "daemon")],
                 timeout=60, what="both users' jobs at the head")

    def stop(self):
        for p in self.procs:
            p.kill()
            p.wait()
        stop_agent(self.agent, self.agent_err)
        self.head.kill(signal.SIGTERM)
        self.munge.stop()

    def cli(self, user, *args):
        """jobscope run as user, its MUNGE credentials from the private munged."""
        argv = ["runuser", "-u", user, "--", "env", "JOBSCOPE_MUNGE_SOCKET=" + self.munge.socket,
                JOBSCOPE] + list(args)
        return subprocess.run(argv, capture_output=True, text=True, timeout=scaled(60))


def test_closed_by_default(wd):
    r = jobscope("head", "--db", wd.join("h.db"), "--listen", "0.0.0.0:0", "--exit-after", "5s")
    eq(r.returncode, 2, "exit of a head on 0.0.0.0 without a token (%s)" % r.stderr)
    check("--insecure" in r.stderr and "--token-file" in r.stderr,
          "the refusal names --insecure and --token-file: %r" % r.stderr)
    check(not os.path.exists(wd.join("h.db")), "a refused head makes no store")
    # loopback stays open for a try-out on one machine
    head = Head(wd, name="lo")
    eq(as_json(request(head.port, "/api/v1/whoami"))["sees"], "all", "loopback, anonymous")
    head.kill(signal.SIGTERM)
    # --insecure: served, and said at start and in /status
    head = Head(wd, db=wd.join("i.db"), addr="0.0.0.0", name="insecure", extra=["--insecure"])
    check("--insecure" in open(head.log).read(), "the warning in the log")
    st = as_json(request(head.port, "/status"))
    eq(st["insecure"], True, "/status insecure")
    check(st["warnings"] and "--insecure" in st["warnings"][0], "/status warnings: %r" %
          st["warnings"])
    as_json(request(head.port, "/api/v1/jobs"))
    head.kill(signal.SIGTERM)


def test_agent_api_closed_off_loopback(wd):
    def agent(extra):
        log = wd.join("agent%d.log" % len(extra))
        with open(log, "w") as errf:
            p = subprocess.Popen([JOBSCOPE, "agent", "--db", wd.join("a%d.db" % len(extra)),
                                  "--listen", "0.0.0.0:0", "--interval", "200ms"] + extra,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=errf)
        port = wait_for(lambda: re.findall(r"listening on [0-9.]+:(\d+)", open(log).read()),
                        timeout=30, what="the agent's listening line")
        return p, int(port[-1])

    p, port = agent([])
    try:
        wait_for(lambda: request(port, "/metrics")[0] == 200, timeout=20, what="/metrics")
        status, headers, _ = request(port, "/api/v1/node")
        eq(status, 401, "the agent's API off loopback without a token")
        check("Bearer" in (headers.get("WWW-Authenticate") or ""), "WWW-Authenticate")
        eq(request(port, "/ui/events?topics=node")[0], 401, "its event stream")
        eq(request(port, "/ui/")[0], 200, "its pages (no data in them)")
    finally:
        p.terminate()
        p.wait()
    p, port = agent(["--read-token-file", token(wd, "r.token", "agent-read")])
    try:
        eq(request(port, "/api/v1/node", headers={"Authorization": "Bearer nope"})[0], 403,
           "a wrong token")
        wait_for(lambda: request(port, "/api/v1/node",
                                 headers={"Authorization": "Bearer agent-read"})[0] == 200,
                 timeout=20, what="the API with the read token")
    finally:
        p.terminate()
        p.wait()


def test_users_see_their_own(wd):
    cl = Cluster(wd)
    try:
        port = cl.port
        # anonymous: 401, told how to prove who it is
        status, headers, _ = request(port, "/api/v1/jobs")
        eq(status, 401, "an anonymous read")
        check("Munge" in headers.get_all("WWW-Authenticate"), "WWW-Authenticate: Munge")

        # MUNGE, through the CLI: nobody's history holds nobody's job alone, root's both
        r = cl.cli("nobody", "report", "--head", "http://127.0.0.1:%d" % port, "--by", "job",
                   "--format", "json")
        eq(r.returncode, 0, "nobody's report (%s)" % r.stderr)
        eq(history_keys(json.loads(r.stdout)), ["slurm:%s@n1" % NOBODY_JOB],
           "nobody's history by job")
        r = cl.cli("root", "report", "--head", "http://127.0.0.1:%d" % port, "--by", "job",
                   "--format", "json")
        eq(r.returncode, 0, "root's report (%s)" % r.stderr)
        keys = history_keys(json.loads(r.stdout))
        check("slurm:%s@n1" % NOBODY_JOB in keys and "slurm:%s@n1" % DAEMON_JOB in keys,
              "root (an admin) sees both: %r" % keys)
        r = cl.cli("nobody", "report", "--head", "http://127.0.0.1:%d" % port, "--job",
                   "slurm:" + DAEMON_JOB)
        check(r.returncode != 0 and "slurm:%s" % DAEMON_JOB not in r.stdout,
              "daemon's job is not there for nobody: %r %r" % (r.stdout, r.stderr))
        r = cl.cli("nobody", "report", "--head", "http://127.0.0.1:%d" % port, "--user",
                   "daemon")
        check(r.returncode != 0 and "own" in r.stderr, "another user's history: %r" % r.stderr)

        # MUNGE, by hand: a credential decodes once
        cred = cl.munge.cred("nobody")
        who = as_json(request(port, "/api/v1/whoami", headers={"Authorization": "Munge " + cred}))
        eq((who["user"], who["role"], who["auth"], who["sees"]),
           ("nobody", "user", "munge", "own"), "whoami by MUNGE")
        eq(request(port, "/api/v1/jobs", headers={"Authorization": "Munge " + cred})[0], 401,
           "a replayed credential")
        jobs = as_json(request(port, "/api/v1/jobs",
                               headers={"Authorization": "Munge " + cl.munge.cred("nobody")}))
        eq(sorted((j["job_id"], j["user"]) for j in jobs["jobs"] if j["scheduler"] == "slurm"),
           [(NOBODY_JOB, "nobody")], "nobody's /api/v1/jobs")
        eq(request(port, "/metrics",
                   headers={"Authorization": "Munge " + cl.munge.cred("nobody")})[0], 403,
           "every user's series are not a user's")

        # the proxy: its user header from 127.0.0.1 only
        def proxied(path, user, source="127.0.0.1"):
            # a history report replays each running job the user sees (root: every job of
            # the node); on PostgreSQL a replay is many small queries, and under ASan on a
            # busy machine root's took more than 10 s twice (0.45 s in a release build)
            return request(port, path, headers={"X-Remote-User": user}, source=source,
                           timeout=60 if "/report" in path else 10)

        doc = as_json(proxied("/api/v1/report?by=job&format=json", "nobody"))
        eq(history_keys(doc), ["slurm:%s@n1" % NOBODY_JOB], "nobody's history by proxy")
        doc = as_json(proxied("/api/v1/report?by=job&format=json", "daemon"))
        eq(history_keys(doc), ["slurm:%s@n1" % DAEMON_JOB], "daemon's history by proxy")
        doc = as_json(proxied("/api/v1/report?by=job&format=json", "root"))
        check({"slurm:%s@n1" % NOBODY_JOB, "slurm:%s@n1" % DAEMON_JOB} <= set(history_keys(doc)),
              "root (in --admins) by proxy sees both")
        key = [j["key"] for j in jobs["jobs"] if j["job_id"] == NOBODY_JOB][0]
        eq(proxied("/api/v1/jobs/" + key, "daemon")[0], 404, "nobody's job, asked by daemon")
        eq(as_json(proxied("/api/v1/jobs/" + key, "nobody"))["job"]["user"], "nobody",
           "nobody's job, asked by nobody")
        eq(proxied("/api/v1/jobs", "nobody", source="127.0.0.2")[0], 401,
           "the header from an address that is not the proxy's")
        eq(proxied("/api/v1/jobs", "no body")[0], 403, "a header that is no user name")
        # a session a user starts is theirs: listed for them and admins, its export their jobs
        def post(path, user, body):
            return request(port, path, "POST", {"X-Remote-User": user,
                                                "Content-Type": "application/json"},
                           json.dumps(body).encode())

        status, _, body = post("/profiling/start", "nobody", {"name": "nobodys", "nodes": "n1"})
        eq((status, json.loads(body)["success"]), (200, True), "nobody starts a session")
        names = lambda user: [x["name"] for x in  # noqa: E731
                              as_json(proxied("/profiling/sessions", user))["sessions"]]
        eq(names("nobody"), ["nobodys"], "nobody's sessions")
        eq(names("daemon"), [], "daemon's sessions")
        check("nobodys" in names("root"), "an admin sees every session")
        eq([x["owner"] for x in as_json(proxied("/profiling/sessions", "root"))["sessions"]
            if x["name"] == "nobodys"], ["nobody"], "the session's owner")
        eq(proxied("/api/v1/sessions/nobodys", "daemon")[0], 404, "nobody's session, to daemon")
        eq(proxied("/api/v1/sessions/nobodys/export", "daemon")[0], 404, "its export, to daemon")
        export = as_json(proxied("/api/v1/sessions/nobodys/export?format=json", "root"))
        eq(sorted({(j["job_id"], j["user"]) for j in export["jobs"]
                   if j["scheduler"] == "slurm"}), [(NOBODY_JOB, "nobody")],
           "a user's session lists their jobs alone, whoever reads it")
        status, _, body = post("/profiling/stop", "daemon", {"name": "nobodys"})
        eq(status, 403, "daemon stops nobody's session (%r)" % body)
        status, _, body = post("/profiling/stop", "nobody", {})
        eq((status, json.loads(body).get("stopped")), (200, 1), "nobody stops theirs")

        # a stream's re-asks are the caller of the request that opened it
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=scaled(10))
        c.request("GET", "/ui/events?topics=jobs", headers={"X-Remote-User": "nobody"})
        r = c.getresponse()
        eq(r.status, 200, "nobody's event stream")
        first = b""
        while b"\n\n" not in first:
            first += r.read1(65536)
        c.close()
        data = json.loads("".join(line[6:] for line in first.decode().splitlines()
                                  if line.startswith("data: ")))
        eq(sorted(j["user"] for j in data["jobs"]), ["nobody"], "the stream's running jobs")
    finally:
        cl.stop()


ACCESS = {"PUBLIC": "anonymous", "USER": "user", "READER": "reader", "INGEST": "agent",
          "ADMIN": "admin", "OWNER": "owner"}
MACROS = {"WEB_EVENTS": "/ui/events", "WEB_PREFIX": "/ui/"}


def code_routes():
    """(method, path, prefix, access) of each row of the head's route table, in order."""
    text = open(os.path.join(ROOT, "src", "head", "routes.c")).read()
    table = text[text.index("head_routes[] = {"):]
    table = table[:table.index("{NULL")]
    out = []
    for m in re.finditer(r'\{"(GET|POST)", ("[^"]+"|\w+), (true|false), HTTP_ACCESS_(\w+),',
                         table):
        path = m.group(2).strip('"') if m.group(2).startswith('"') else MACROS[m.group(2)]
        out.append((m.group(1), path, m.group(3) == "true", ACCESS[m.group(4)]))
    check(len(out) >= 20, "the head's route table: %d rows" % len(out))
    return out


def route_of(code, method, path):
    """The route the server takes for method and path: the first that matches."""
    for r in code:
        if r[0] == method and (r[1] == path or (r[2] and path.startswith(r[1]) and
                                                len(path) > len(r[1]))):
            return r
    return None


def doc_routes():
    """(method, path, access) of each row of docs/http-api.md's access table."""
    text = open(os.path.join(ROOT, "docs", "http-api.md")).read()
    rows = re.findall(r"^\| `(GET|POST) (/\S*)` \| (anonymous|user|reader|agent|admin|owner) \|",
                      text, re.M)
    check(len(rows) >= 20, "docs/http-api.md's access table: %d rows" % len(rows))
    return set(rows)


def concrete(path):
    return (path.replace("KEY", "slurm:1").replace("NAME", "nosuch")
            .replace("/ui/static/FILE", "/ui/static/app.js"))


def test_access_table(wd):
    docs = doc_routes()
    code = code_routes()
    # each documented route is the code's, with the same access; each route of the
    # code has a row
    taken = set()
    for method, path, access in docs:
        r = route_of(code, method, concrete(path))
        check(r, "docs/http-api.md's %s %s is no route of the head" % (method, path))
        eq(access, r[3], "the access of %s %s (docs/http-api.md against routes.c)" %
           (method, path))
        taken.add(r)
    for r in code:
        check(r in taken, "docs/http-api.md has no row for %s %s" % (r[0], r[1]))
    cl = Cluster(wd)
    t = cl.tokens
    callers = {
        "anonymous": ({}, {"anonymous"}),
        "user": ({"X-Remote-User": "nobody"}, {"anonymous", "user", "owner"}),
        "reader": ({"Authorization": "Bearer " + t["reader"]}, {"anonymous", "user", "reader"}),
        "agent": ({"Authorization": "Bearer " + t["agent"]}, {"anonymous", "agent"}),
        "admin": ({"Authorization": "Bearer " + t["admin"]},
                  {"anonymous", "user", "reader", "admin", "owner"}),
        "admin user": ({"X-Remote-User": "root"},
                       {"anonymous", "user", "reader", "admin", "owner"}),
    }
    bodies = {"/profiling/start": b'{"name": "walk"}', "/profiling/stop": b'{"name": "walk"}',
              "/api/v1/ingest": b"not a batch",
              "/profiling/record": b'{"app_name": "a", "queue_time": 1, "processing_time": 1}',
              "/record_time": b'{"app_name": "a", "queue_time": 1, "processing_time": 1}'}
    try:
        for method, path, access in sorted(docs):
            for name, (headers, may) in callers.items():
                url = concrete(path) + ("?topics=nodes" if path == "/ui/events" else "")
                status, _, body = request(cl.port, url, method, dict(headers),
                                          bodies.get(path) if method == "POST" else None)
                if access in may:
                    check(status not in (401, 403), "%s %s (%s) as %s: %d %r" %
                          (method, path, access, name, status, body[:200]))
                else:
                    eq(status, 401 if name == "anonymous" else 403,
                       "%s %s (%s) as %s (%r)" % (method, path, access, name, body[:200]))
        # an unknown path asks who reads first
        eq(request(cl.port, "/api/v1/nosuch")[0], 401, "an unknown path, anonymous")
        eq(request(cl.port, "/api/v1/nosuch", headers={"X-Remote-User": "nobody"})[0], 404,
           "an unknown path, a user")
    finally:
        cl.stop()


if __name__ == "__main__":
    run_tests(globals())
