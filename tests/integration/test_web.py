"""The web dashboard (/ui/ on the head and, read-only, on the agent) in headless Chromium.

A real head fed by two agents (UTS namespaces of their own, fake NVML with two
GPUs each) and a running job (a process with SLURM_JOB_ID in its environment).
Every page is loaded at 1280 and 390 px wide: it must render its data (the
nodes, GPUs and the job, with the API's own figures) with no console message
at all (an exception, console.error, a failed load or a CSP violation); a new
tick's value must arrive over the event stream without a reload; starting and
stopping a session from the page needs the admin token (401 without, done
with); every export download answers with its content type.  Screenshots are
written to the test's work dir (KEEP_SCREENSHOTS=DIR copies them there).

Without Chromium the browser cases are skipped with a message, unless $CI is
set: then they fail.  The event stream's limits (a bound on streams, a client
that goes away freed, the read token) are checked with plain sockets.
"""
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from harness import run_tests, check, eq, wait_for, scaled, slurm_env
from head_harness import Head, start_agent, stop_agent
from cdp_harness import Browser, have_chromium

FAKES = os.environ.get("FAKES", "")
KEEP = os.environ.get("KEEP_SCREENSHOTS", "")
WINDOWS = [(1280, 900), (390, 844)]
ADMIN = "admin-secret-0123456789"
READ = "read-secret-0123456789"
USER = pwd.getpwuid(os.getuid()).pw_name
JOB_ID = "98%d" % (os.getpid() % 100000)
SCENARIO = """driver 535.104.05
device 0 uuid=GPU-00000000-0000-0000-0000-000000000000 name="NVIDIA A100" bus=00000000:07:00.0 mem_total=85899345920 power_limit=400000 nvlinks=0
device 1 uuid=GPU-11111111-1111-1111-1111-111111111111 name="NVIDIA A100" bus=00000000:0F:00.0 mem_total=85899345920 power_limit=400000 nvlinks=0
at 0 0 util=60 mem_used=12884901888 power=200000 temp=61
at 0 1 util=3 mem_used=1073741824 power=80000 temp=40
"""
# The running job: a fifth of a core (20 ms busy in every 100), so that its CPU
# seconds grow while the test runs, and not a whole core for the test's minute
JOB = """
import time
while True:
    t = time.monotonic()
    while time.monotonic() - t < 0.02:
        pass
    time.sleep(0.08)
"""
EXPORT_TYPES = {"json": "application/json", "csv": "text/csv", "text": "text/plain",
                "gswarm": "application/json"}


def skip_browser(what):
    if os.environ.get("CI"):
        raise AssertionError("no Chromium at %s (CI is set)" % what)
    print("SKIP: no Chromium: %s" % what)


def can_unshare():
    return subprocess.run(["unshare", "--uts", "true"]).returncode == 0


def get(url, token=None, timeout=10, headers=None):
    """(status, content type, body bytes)"""
    req = urllib.request.Request(url, headers=headers or {})
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=scaled(timeout)) as r:
            return r.status, r.headers.get("Content-Type"), r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read(), dict(e.headers)


class Cluster:
    """A head (admin token, optionally a read token), two agents with fake GPUs, a job."""

    def __init__(self, wd, read_token=False, head_extra=(), headers=None):
        scn = wd.join("gpu.scn")
        with open(scn, "w") as f:
            f.write(SCENARIO)
        os.environ.update({"JOBSCOPE_NVML_LIBRARY": os.path.join(FAKES, "libnvidia-ml.so.1"),
                           "FAKE_GPU_SCENARIO": scn})
        with open(wd.join("admin.token"), "w") as f:
            f.write(ADMIN + "\n")
        extra = ["--admin-token-file", wd.join("admin.token")]
        if read_token:
            with open(wd.join("read.token"), "w") as f:
                f.write(READ + "\n")
            extra += ["--read-token-file", wd.join("read.token")]
        self.head = Head(wd, extra=extra + list(head_extra))
        self.headers = headers  # what the tests' own API calls carry (a proxy's user)
        self.job = subprocess.Popen([sys.executable, "-S", "-c", JOB],
                                    env=slurm_env(SLURM_JOB_ID=JOB_ID, SLURM_CPUS_ON_NODE=1,
                                                  SLURM_JOB_GPUS="1"),
                                    stdout=subprocess.DEVNULL)
        self.agents = [start_agent(wd, self.head, n, extra=["--listen", "127.0.0.1:0"])
                       for n in ("web-a", "web-b")]  # at 100 ms
        self.token = READ if read_token else None

    def jobs(self):
        st, _, body, _ = get(self.head.url + "/api/v1/jobs?state=running&limit=10000", self.token,
                             headers=self.headers)
        eq(st, 200, "jobs list")
        return [j for j in json.loads(body)["jobs"] if j["job_id"] == JOB_ID]

    def agent_url(self, i):
        import re
        log = self.agents[i][2]
        port = wait_for(lambda: (re.findall(r"agent: listening on [0-9.]+:(\d+)",
                                            open(log).read()) or [None])[-1],
                        timeout=15, what="the agent's listening line")
        return "http://127.0.0.1:%s" % port

    def close(self):
        self.job.kill()
        self.job.wait()
        for proc, _, _, errf in self.agents:
            stop_agent(proc, errf)
        self.head.kill()
        del os.environ["JOBSCOPE_NVML_LIBRARY"], os.environ["FAKE_GPU_SCENARIO"]


def shoot(b, wd, name):
    png = b.screenshot(wd.join(name + ".png"))
    check(os.path.getsize(png) > 1000, "screenshot %s is a picture" % name)
    if KEEP:
        os.makedirs(KEEP, exist_ok=True)
        shutil.copy(png, os.path.join(KEEP, name + ".png"))


def clean(b, what):
    eq(list(b.console), [], "console messages on %s" % what)


def load(b, url, ready, what):
    b.console.clear()
    b.navigate(url)
    b.wait(ready, what=what + " rendered")
    b.settle()  # late messages (a failed image, a CSP report) come after the load


def text(b, selector):
    return b.eval("(document.querySelector(%s) || {}).textContent" % json.dumps(selector))


def test_dashboard_pages_live_and_sessions(wd):
    if not can_unshare():
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    if not have_chromium():
        skip_browser("the dashboard")
        return
    c = Cluster(wd)
    b = None
    try:
        head = c.head.url
        wait_for(lambda: len(c.jobs()) == 2, timeout=30, what="the job on both agents' nodes")
        # both agents see the one process, but each dates its start from its
        # own reading of the boot time: the two keys' start ms may differ by one
        keys = {j["node"]: j["key"] for j in c.jobs()}
        key = keys["web-a"]
        st, _, body, _ = get(head + "/api/v1/gpus")
        gpus = json.loads(body)["gpus"]
        wait_for(lambda: len(json.loads(get(head + "/api/v1/gpus")[2])["gpus"]) == 4, timeout=20,
                 what="four GPUs on the head")
        b = Browser(wd.path)
        for width, height in WINDOWS:
            b.size(width, height)
            tag = "%d" % width
            # cluster: both nodes, four GPUs at the scenario's utilization, the job
            load(b, head + "/ui/", "document.querySelectorAll('#gpus-table tbody tr').length == 4"
                 " && document.querySelectorAll('#nodes-table tbody tr').length == 2"
                 " && document.querySelector('#jobs-table a[href*=\"%s\"]')" % JOB_ID,
                 "cluster")
            nodes = b.eval("[...document.querySelectorAll('#nodes-table tbody tr td:first-child')]"
                           ".map(t => t.textContent).sort()")
            eq(nodes, ["web-a", "web-b"], "cluster page: nodes")
            utils = b.eval("[...document.querySelectorAll('#gpus-table meter')].map(m => m.value)"
                           ".sort((a, b) => a - b)")
            eq(utils, [3, 3, 60, 60], "cluster page: GPU utilizations (the scenario's)")
            # the job reserved GPU 1 (SLURM_JOB_GPUS), at 3 % on both nodes: held idle
            b.wait("document.querySelectorAll('#idle-table tbody tr').length == 2 && "
                   "document.querySelector('#idle-table meter')", what="the held-idle table")
            idle = b.eval("[...document.querySelectorAll('#idle-table tbody tr')].map(tr =>"
                          " [...tr.cells].map(c => c.textContent.trim()))")
            eq(sorted(idle), sorted([[keys["web-a"], USER, "web-a", "1", "3 %"],
                                     [keys["web-b"], USER, "web-b", "1", "3 %"]]),
               "cluster page: GPUs held idle")
            check(b.eval("getComputedStyle(document.body).fontFamily.length > 0"), "CSS applied")
            clean(b, "cluster at %d px" % width)
            shoot(b, wd, "cluster-%s" % tag)
            # a job: its figures live, the report below
            load(b, head + "/ui/job?key=" + key,
                 "document.querySelector('#card-state') && document.querySelector('#report iframe')",
                 "job")
            eq(text(b, "#card-state .value"), "running", "job page: state")
            # the head's /api/v1/jobs/KEY picks the node whose key it is (both, when
            # the keys are the same); the page shows that one
            api_job = json.loads(get(head + "/api/v1/jobs/" + key)[2])["job"]
            eq(text(b, "#card-node .value"), api_job["node"], "job page: node")
            eq(text(b, "#job-command"), api_job["command"], "job page: command")
            b.eval("window.__same_page = 1")
            n0 = int(b.eval("document.body.dataset.events"))
            cpu0 = text(b, "#card-cpu .value")
            b.wait("Number(document.body.dataset.events) > %d && "
                   "document.querySelector('#card-cpu .value').textContent != %s"
                   % (n0 + 1, json.dumps(cpu0)), timeout=30, what="a new CPU figure over SSE")
            eq(b.eval("window.__same_page"), 1, "updated without a reload")
            clean(b, "job at %d px" % width)
            shoot(b, wd, "job-%s" % tag)
            # history
            load(b, head + "/ui/history", "document.body.dataset.loaded == 'history'", "history")
            # the agents keep sending the jobs that end on this machine: page and API agree
            # once no job ended between the page's request and the test's
            last = {}

            def history_is_the_apis():
                b.eval("document.body.dataset.loaded = '';"
                       "document.querySelector('#history-form').requestSubmit()")
                b.wait("document.body.dataset.loaded == 'history'", what="history again")
                last["shown"] = b.eval(
                    "[...document.querySelectorAll('#history-table tbody tr')].map(tr =>"
                    " [tr.cells[0].textContent, tr.cells[1].textContent])")
                h = json.loads(get(head + "/api/v1/report?by=user&since=7d&format=json")[2])
                last["api"] = [[r["key"], "{:,}".format(r["jobs"])] for r in h["rows"]] + [
                    ["total", "{:,}".format(h["total"]["jobs"])]]
                return last["shown"] == last["api"]
            try:
                wait_for(history_is_the_apis, timeout=30, what="the history page")
            except AssertionError:
                eq(last.get("shown"), last.get("api"), "history page: the API's rows")
            clean(b, "history at %d px" % width)
            shoot(b, wd, "history-%s" % tag)
            # sessions
            load(b, head + "/ui/sessions", "document.querySelector('#sessions-table')", "sessions")
            clean(b, "sessions at %d px" % width)
            shoot(b, wd, "sessions-%s" % tag)
            # the agent's read-only pages
            agent = c.agent_url(0)
            load(b, agent + "/ui/", "document.querySelectorAll('#gpus-table tbody tr').length == 2"
                 " && document.querySelector('#jobs-table a[href*=\"%s\"]')" % JOB_ID, "agent node")
            eq(text(b, "#card-node .value"), "web-a", "agent page: its node")
            check(b.eval("!document.querySelector('#token-form')"), "the agent has no token form")
            clean(b, "agent node at %d px" % width)
            shoot(b, wd, "agent-node-%s" % tag)
            load(b, agent + "/ui/job?key=" + key, "document.querySelector('#card-cpu')",
                 "agent job")
            eq(text(b, "#card-state .value"), "running", "agent job page: state")
            clean(b, "agent job at %d px" % width)
        # keyboard: the first Tab reaches the skip link, and every control is a link, button or field
        load(b, head + "/ui/sessions", "document.querySelector('#sessions-table')", "sessions")
        b.call("Input.dispatchKeyEvent", {"type": "keyDown", "key": "Tab", "code": "Tab",
                                          "windowsVirtualKeyCode": 9})
        b.call("Input.dispatchKeyEvent", {"type": "keyUp", "key": "Tab", "code": "Tab",
                                          "windowsVirtualKeyCode": 9})
        eq(b.eval("document.activeElement.className"), "skip", "Tab reaches the skip link first")
        eq(b.eval("[...document.querySelectorAll('[onclick], div[tabindex], span[tabindex]')]"
                  ".length"), 0, "no mouse-only controls")
        sessions_with_token(b, c, wd)
    finally:
        if b:
            b.close()
        c.close()


def sessions_with_token(b, c, wd):
    head = c.head.url

    def click(selector):
        b.eval("document.querySelector(%s).click()" % json.dumps(selector))

    def action(want):
        return b.wait("document.body.dataset.lastAction == %s" % json.dumps(want),
                      what="the page's answer " + want)

    b.size(*WINDOWS[0])
    load(b, head + "/ui/sessions", "document.querySelector('#sessions-table')", "sessions")
    b.console.clear()
    b.eval("document.querySelector('#session-name').value = 'web1'")
    click("#start")
    action("start:401")
    b.settle()
    check("401" in text(b, "#status"), "the page says the token is needed: %r" % text(b, "#status"))
    eq([s["name"] for s in json.loads(get(head + "/profiling/sessions")[2])["sessions"]], [],
       "no session started without the token")
    # the browser logs the refused request itself: that one message, nothing else
    refused = list(b.console)
    check(len(refused) == 1 and "401" in refused[0], "console: %r" % b.console)
    b.console.clear()
    b.eval("document.querySelector('#token').value = %s;"
           "document.querySelector('#token-form').requestSubmit()" % json.dumps(ADMIN))
    click("#start")
    action("start:200")
    listed = json.loads(get(head + "/profiling/sessions")[2])["sessions"]
    eq([(s["name"], s["is_active"]) for s in listed], [("web1", True)], "web1 started")
    b.wait("document.querySelector('[data-stop=\"web1\"]')", what="the Stop button over SSE")
    shoot(b, wd, "sessions-active-1280")
    # forget the token: stop is refused
    click("#token-clear")
    click("[data-stop=\"web1\"]")
    action("stop:401")
    eq(json.loads(get(head + "/profiling/sessions")[2])["active_sessions"], 1, "still active")
    b.console.clear()
    b.eval("document.querySelector('#token').value = %s;"
           "document.querySelector('#token-form').requestSubmit()" % json.dumps(ADMIN))
    b.eval("document.body.dataset.lastAction = ''")
    click("[data-stop=\"web1\"]")
    action("stop:200")
    eq(json.loads(get(head + "/profiling/sessions")[2])["active_sessions"], 0, "web1 stopped")
    b.wait("!document.querySelector('[data-stop=\"web1\"]')", what="the list updated")
    # every export format: the type the head's export gives it
    for fmt, ctype in EXPORT_TYPES.items():
        got = b.eval("(async () => { const r = await fetch(document.querySelector("
                     "'[data-export=\"%s\"]').dataset.href); await r.blob();"
                     " return [r.status, r.headers.get('Content-Type')]; })()" % fmt)
        eq(got[0], 200, "export %s" % fmt)
        check(got[1].startswith(ctype), "export %s: %s, not %s" % (fmt, got[1], ctype))
    click("[data-export=\"csv\"]")
    b.wait("document.querySelector('#status').textContent.startsWith('downloaded web1.csv (text/csv')",
           what="the CSV download")
    b.settle()
    clean(b, "sessions with the token")


def raw_stream(port, path, token=None):
    """An event stream opened on a plain socket: (socket, status line, head bytes)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=scaled(10))
    req = "GET %s HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n" % path
    if token:
        req += "Authorization: Bearer %s\r\n" % token
    s.sendall((req + "\r\n").encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    STREAM_LEFT[s] = rest  # events that came with the head
    return s, head.split(b"\r\n", 1)[0].decode(), head


STREAM_LEFT = {}  # a stream's bytes read past the last event returned (one recv may hold several)


def read_event(s, name, timeout=10):
    """Reads the stream until an event of that name; returns its data."""
    timeout = scaled(timeout)
    deadline = time.monotonic() + timeout
    buf = STREAM_LEFT.pop(s, b"")
    s.settimeout(1)
    while True:
        text_ = buf.decode(errors="replace").replace("\r\n", "\n")
        marker = "event: %s\n" % name
        if marker in text_:
            rest = text_.split(marker, 1)[1]
            if "\n\n" in rest:
                block, after = rest.split("\n\n", 1)
                STREAM_LEFT[s] = after.encode()
                # chunked transfer: the chunk sizes are lines of hex between the data lines
                return "\n".join(l[6:] for l in block.split("\n") if l.startswith("data: "))
        if time.monotonic() >= deadline:
            break
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        if not chunk:
            break
        buf += chunk
    raise AssertionError("no %s event in %d s: %r" % (name, timeout, buf[-500:]))


def test_event_stream_access_and_limits(wd):
    if not can_unshare():
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    c = Cluster(wd, read_token=True)
    socks = []
    try:
        head = c.head.url
        port = c.head.port
        # pages hold no data: public, with the policy; the data needs the read token
        st, ctype, body, hdrs = get(head + "/ui/")
        eq(st, 200, "/ui/ without a token")
        check(ctype.startswith("text/html"), ctype)
        eq(hdrs.get("Content-Security-Policy", "").split(";")[0], "default-src 'self'", "CSP")
        for asset, ctype_ in (("app.js", "text/javascript"), ("app.css", "text/css")):
            st, ctype, body, _ = get(head + "/ui/static/" + asset)
            eq(st, 200, asset)
            check(ctype.startswith(ctype_), "%s: %s" % (asset, ctype))
        eq(get(head + "/ui/static/nope.js")[0], 404, "unknown asset")
        eq(get(head + "/ui/nope")[0], 404, "unknown page")
        eq(json.loads(get(head + "/", READ)[2])["message"], "jobscope head", "/ stays gswarm's")
        eq(get(head + "/ui/events?topics=nodes")[0], 401, "events without the read token")
        eq(get(head + "/ui/events?topics=nodes", "wrong")[0], 403, "events with a wrong token")
        for bad in ("", "topics=", "topics=nodes,", "topics=bogus", "topics=job",
                    "topics=job&job=a%20b", "topics=nodes,nodes", "topics=node"):
            eq(get(head + "/ui/events?" + bad, READ)[0], 400, "events?" + bad)
        # a stream: the head's own answer, the same as the API's
        wait_for(lambda: len(c.jobs()) == 2, timeout=30, what="the job on both nodes")
        if have_chromium():
            # the page without the read token says so; typed in, the data comes, no reload
            b = Browser(wd.path)
            try:
                b.size(*WINDOWS[0])
                b.navigate(head + "/ui/")
                b.wait("document.querySelector('#status').textContent.startsWith('401')",
                       what="the page asking for the token")
                b.settle()
                refused = list(b.console)
                check(all("401" in m for m in refused) and len(refused) == 1,
                      "console: only the refused stream: %r" % b.console)
                b.console.clear()
                b.eval("window.__same_page = 1; document.querySelector('#token').value = %s;"
                       "document.querySelector('#token-form').requestSubmit()" % json.dumps(READ))
                b.wait("document.querySelectorAll('#nodes-table tbody tr').length == 2",
                       what="the nodes once the token is given")
                b.settle()
                eq(b.eval("window.__same_page"), 1, "no reload")
                clean(b, "the cluster with the read token")
            finally:
                b.close()
        else:
            skip_browser("the read token in the page")
        s, status, hdr = raw_stream(port, "/ui/events?topics=nodes,gpus", READ)
        socks.append(s)
        check(status.endswith("200 OK"), status)
        check(b"text/event-stream" in hdr, hdr)
        nodes = json.loads(read_event(s, "nodes"))
        eq(sorted(n["node"] for n in nodes["nodes"]), ["web-a", "web-b"], "nodes event")
        gpus = json.loads(read_event(s, "gpus"))
        eq(len(gpus["gpus"]), 4, "gpus event")
        # the next tick's figures come without asking again
        # (an event comes when anything in the answer changes, e.g. a node's health on a busy
        # machine; the one awaited shows a node seen later)
        seen = {n["node"]: n["last_seen_ms"] for n in nodes["nodes"]}
        deadline = time.monotonic() + 30
        while True:
            later = json.loads(read_event(s, "nodes"))
            if any(n["last_seen_ms"] > seen[n["node"]] for n in later["nodes"]):
                break
            check(time.monotonic() < deadline,
                  "a later nodes event: %r, last %r" % (seen, later["nodes"]))
        # the agent serves its events without a token
        agent = c.agent_url(0)
        st, _, _, _ = get(agent + "/ui/")
        eq(st, 200, "agent page")
        a, status, _ = raw_stream(int(agent.rsplit(":", 1)[1]), "/ui/events?topics=node")
        check(status.endswith("200 OK"), "agent events: " + status)
        eq(json.loads(read_event(a, "node"))["node"], "web-a", "agent node event")
        a.close()
        # at most 32 streams: the 33rd is refused
        while len(socks) < 32:
            s, status, _ = raw_stream(port, "/ui/events?topics=gpus", READ)
            check(status.endswith("200 OK"), "stream %d: %s" % (len(socks) + 1, status))
            socks.append(s)
        s, status, _ = raw_stream(port, "/ui/events?topics=gpus", READ)
        check(" 503 " in status, "the 33rd stream: %s" % status)
        s.close()
        # clients that go away are freed (found at the next write, a ping at the latest)
        for s in socks:
            s.close()
        socks = []

        def refilled():
            while len(socks) < 32:
                s, status, _ = raw_stream(port, "/ui/events?topics=gpus", READ)
                if not status.endswith("200 OK"):
                    s.close()
                    return False
                socks.append(s)
            return True
        # every one freed within the ping interval (15 s) and a watch pass
        wait_for(refilled, timeout=25, what="32 streams again after the clients left")
    finally:
        for s in socks:
            s.close()
        c.close()


if __name__ == "__main__":
    run_tests(globals())
