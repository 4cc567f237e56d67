"""The head's jobs page, node page, history links and running-job use, in headless Chromium.

test_web's cluster (a head, two agents with fake GPUs in UTS namespaces of their
own, a running Slurm-like job) plus a job that ends by itself (about half a
second of CPU on its one reserved core), seen by both agents.  Checked against
the head's own JSON API:
- /ui/jobs: the jobs of the range (/api/v1/jobs) with the report's --by job
  efficiencies and idle hours; the search box, sorting by a column, the job
  links, and the state (since, until, q, sort) kept in the URL and read back;
- /ui/history: a row by user and by node opens /ui/jobs on that user's or
  node's jobs of the same window, a row by hour that hour's jobs;
- /ui/: the running jobs' use (cores, CPU efficiency, resident memory, GPU
  utilization) as /api/v1/jobs?state=running gives it;
- /ui/node?name=: a chart each of CPU, memory, load, network, disk and the GPUs
  (a legend entry per GPU), its sample count the API's, and no chart text cut
  at the chart's edge;
as an anonymous caller of an open head, and with a read token typed in.  And
behind a login proxy (--trusted-proxy, the user in X-Remote-User, set in the
browser as the proxy would): a user's page is "My jobs" with their jobs alone
(nobody's and root's jobs, each seen only by its user), an admin's all of
them.  No console message.
"""
import decimal
import json
import os
import subprocess
import sys
import time
import urllib.parse

from harness import run_tests, check, eq, wait_for, slurm_env
from cdp_harness import Browser, have_chromium
from test_web import (Cluster, USER, JOB_ID, READ, WINDOWS, get, load, text, shoot, clean,
                      skip_browser, can_unshare)

ENDED_ID = "96%d" % (os.getpid() % 100000)
# about half a second of CPU, then it ends
ENDED = """
import time
t = time.process_time()
while time.process_time() - t < 0.5:
    pass
time.sleep(1.0)
"""


def fmt(v, digits):
    """app.js's Intl.NumberFormat("en", {maximumFractionDigits: digits})"""
    q = decimal.Decimal(1).scaleb(-digits)
    d = decimal.Decimal(repr(v)).quantize(q, decimal.ROUND_HALF_EVEN if False else
                                          decimal.ROUND_HALF_UP)
    s = "{:,.{}f}".format(d, digits)
    if digits:
        s = s.rstrip("0").rstrip(".")
    return "0" if s == "-0" else s


def pct(v):
    return "—" if v is None else fmt(v, 1) + " %"


def nbytes(v):
    if v is None:
        return "—"
    units, i = ["B", "KiB", "MiB", "GiB", "TiB"], 0
    while abs(v) >= 1024 and i < len(units) - 1:
        v /= 1024.0
        i += 1
    return fmt(v, 1) + " " + units[i]


def api(c, path):
    st, _, body, _ = get(c.head.url + path, c.token, headers=c.headers)
    eq(st, 200, path)
    return json.loads(body)


def search(b, what):
    b.eval("(() => { const q = document.querySelector('#q'); q.value = %s;"
           " q.dispatchEvent(new Event('input')); })()" % json.dumps(what))


def rows(b):
    return b.eval("[...document.querySelectorAll('#jobs-list tbody tr[data-key]')].map(tr =>"
                  " Object.fromEntries([...tr.cells].map(td => [td.dataset.col,"
                  " td.textContent.trim()])))")


def expected(c, query):
    """The jobs page's rows as the API gives them: {(key, node): {col: text}} (both agents
    see the same processes: a key on two nodes)."""
    jobs = api(c, "/api/v1/jobs?limit=1000&" + query)["jobs"]
    rep = {r["key"]: r for r in
           api(c, "/api/v1/report?by=job&format=json&" + query)["rows"]}
    out = {}
    for j in jobs:
        r = rep.get("%s:%s@%s" % (j["scheduler"], j["job_id"], j["node"]), {})
        use = j["use"] or {}

        def known(*vs):
            return next((v for v in vs if v is not None), None)
        out[(j["key"], j["node"])] = {
            "key": j["key"], "user": j["user"], "node": j["node"], "state": j["state"],
            "cpu": pct(known(r.get("cpu_efficiency_pct"), j["cpu_efficiency_pct"],
                             use.get("cpu_efficiency_pct"))),
            "gpu": pct(r.get("gpu_efficiency_pct")),
            "mem": pct(known(r.get("mem_efficiency_pct"), j["mem_efficiency_pct"])),
            "idle_core_h": "—" if r.get("core_hours_idle") is None else
            fmt(r["core_hours_idle"], 2),
            "idle_gpu_h": "—" if r.get("gpu_hours_idle") is None else
            fmt(r["gpu_hours_idle"], 2)}
    return out


def same_as_api(b, c, query):
    """The page's rows (reloaded until no job changed in between) equal the API's."""
    last = {}

    def ok():
        b.eval("document.body.dataset.loaded = '';"
               "document.querySelector('#jobs-form').requestSubmit()")
        b.wait("document.body.dataset.loaded == 'jobs'", what="the jobs page again")
        shown = {(r["key"], r["node"]): {k: r[k] for k in ("key", "user", "node", "state", "cpu", "gpu", "mem",
                                              "idle_core_h", "idle_gpu_h") if k in r}
                 for r in rows(b)}
        want = expected(c, query)
        if "user" not in next(iter(shown.values()), {"user": 1}):
            for v in want.values():
                del v["user"]
        last.update(shown=shown, want=want)
        return shown == want
    try:
        wait_for(ok, timeout=30, what="the jobs page as the API")
    except AssertionError:
        eq(last.get("shown"), last.get("want"), "jobs page: the API's jobs and figures")


def start_ended_job():
    return subprocess.Popen([sys.executable, "-S", "-c", ENDED],
                            env=slurm_env(SLURM_JOB_ID=ENDED_ID, SLURM_CPUS_ON_NODE=1),
                            stdout=subprocess.DEVNULL)


def ready(c):
    """Both jobs on both nodes, the ended one (started once the agents sample) with its
    summary; returns the ended job's process."""
    wait_for(lambda: len(c.jobs()) == 2, timeout=30, what="the running job on both nodes")
    proc = start_ended_job()

    def ended():
        proc.poll()  # reaped: a zombie is a process still
        js = [j for j in api(c, "/api/v1/jobs?state=ended&limit=1000")["jobs"]
              if j["job_id"] == ENDED_ID and j["cpu_ms"] is not None]
        return len(js) == 2 and js
    try:
        wait_for(ended, timeout=40, what="the ended job's summary on both nodes")
    except AssertionError:
        print([j for j in api(c, "/api/v1/jobs?limit=1000")["jobs"]])
        raise
    return proc


def jobs_page(b, c, wd, tag):
    head = c.head.url
    since = int(time.time() * 1000) - 3600 * 1000
    query = "since=%d" % since
    load(b, head + "/ui/jobs?" + query, "document.body.dataset.loaded == 'jobs'", "jobs")
    eq(text(b, "#title"), "Jobs", "jobs page: title (the head shows all)")
    eq(b.eval("document.querySelector('#nav-jobs').textContent"), "Jobs", "nav: Jobs")
    same_as_api(b, c, query)
    keys = sorted(r["key"] for r in rows(b))
    check(len(keys) >= 4, "the running and the ended job on both nodes: %r" % keys)
    # each row links to its job's page
    links = b.eval("[...document.querySelectorAll('#jobs-list tbody tr[data-key]')].map(tr =>"
                   " [tr.dataset.key, tr.querySelector('td[data-col=key] a').getAttribute('href')])")
    eq(sorted(links), sorted([k, "/ui/job?key=" + urllib.parse.quote(k, safe="")] for k in keys),
       "job links")
    shoot(b, wd, "jobs-%s" % tag)
    # search: by node, then by the ended job's id; the URL keeps it
    search(b, "web-b")
    shown = rows(b)
    eq(sorted((r["key"], r["node"]) for r in shown),
       sorted(k for k, v in expected(c, query).items() if v["node"] == "web-b"),
       "search web-b: the jobs of web-b")
    check("q=web-b" in b.eval("location.search"), "the search in the URL")
    search(b, ":%s:" % ENDED_ID)  # in its key alone (an id may be in a start time's digits)
    eq({(r["node"], r["state"]) for r in rows(b)}, {("web-a", "ended"), ("web-b", "ended")},
       "search by id: the ended job on both nodes")
    search(b, "")
    # sort: node ascending, then descending; idle core-hours, most first
    for col, first, desc in (("node", "ascending", False), ("node", "descending", True),
                             ("idle_core_h", "descending", True)):
        b.eval("document.querySelector('button[data-sort=%s]').click()" % col)
        eq(b.eval("document.querySelector('button[data-sort=%s]').parentNode"
                  ".getAttribute('aria-sort')" % col), first, "sorted by %s" % col)
        vals = [r[col] for r in rows(b)]
        if col == "node":
            eq(vals, sorted(vals, reverse=desc), "rows by node, %s" % first)
        else:
            nums = [float(v.replace(",", "")) for v in vals if v != "—"]
            eq(nums, sorted(nums, reverse=True), "rows by idle core-hours, most first")
            check(vals[len(nums):] == ["—"] * (len(vals) - len(nums)), "unknown last")
        check(("sort=" + ("-" if desc else "") + col) in b.eval("location.search"),
              "the sort in the URL")
    # the URL's state read back: since, q and sort
    load(b, head + "/ui/jobs?%s&q=%%3A%s%%3A&sort=-cpu" % (query, ENDED_ID),
         "document.body.dataset.loaded == 'jobs'", "jobs from a link")
    eq((b.eval("document.querySelector('#since').value"), b.eval("document.querySelector('#q').value")),
       (str(since), ":%s:" % ENDED_ID), "since and q from the URL")
    eq(b.eval("document.querySelector('button[data-sort=cpu]').parentNode.getAttribute('aria-sort')"),
       "descending", "sort from the URL")
    eq({r["key"] for r in rows(b)}, {k for k in keys if (":%s:" % ENDED_ID) in k},
       "q from the URL")
    # a preset: the last hour
    b.eval("const r = document.querySelector('#range'); r.value = '1h';"
           "document.body.dataset.loaded = ''; r.dispatchEvent(new Event('change'))")
    b.wait("document.body.dataset.loaded == 'jobs'", what="the last hour")
    check("since=1h" in b.eval("location.search"), "the preset in the URL")
    clean(b, "jobs at %s px" % tag)


def history_links(b, c, wd, tag):
    head = c.head.url
    load(b, head + "/ui/history", "document.body.dataset.loaded == 'history'", "history")
    h = api(c, "/api/v1/report?by=user&since=7d&format=json")
    href = b.eval("document.querySelector('#history-table tbody a').getAttribute('href')")
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(href).query)
    eq((q["user"], len(q["since"]), len(q["until"])), ([USER], 1, 1), "a user row's link")
    check(abs(int(q["until"][0]) - h["until_ms"]) < 60000, "the link's until: the report's")
    shoot(b, wd, "history-links-%s" % tag)
    load(b, head + href, "document.body.dataset.loaded == 'jobs'", "a user's jobs")
    shown = rows(b)
    check(shown and all(r["user"] == USER for r in shown), "the user's jobs: %r" % shown)
    eq(b.eval("document.querySelector('#user').value"), USER, "the user filter")
    # by node: web-a's jobs
    load(b, head + "/ui/history", "document.body.dataset.loaded == 'history'", "history")
    b.eval("document.body.dataset.loaded = ''; document.querySelector('#by').value = 'node';"
           "document.querySelector('#history-form').requestSubmit()")
    b.wait("document.body.dataset.loaded == 'history'", what="history by node")
    href = b.eval("[...document.querySelectorAll('#history-table tbody a')]"
                  ".find(a => a.textContent == 'web-a').getAttribute('href')")
    check("node=web-a" in href, href)
    load(b, head + href, "document.body.dataset.loaded == 'jobs'", "a node's jobs")
    shown = rows(b)
    check(shown and all(r["node"] == "web-a" for r in shown), "web-a's jobs: %r" % shown)
    # by hour: that hour's jobs
    load(b, head + "/ui/history", "document.body.dataset.loaded == 'history'", "history")
    b.eval("document.body.dataset.loaded = ''; document.querySelector('#by').value = 'hour';"
           "document.querySelector('#history-form').requestSubmit()")
    b.wait("document.body.dataset.loaded == 'history'", what="history by hour")
    a = b.eval("[...document.querySelectorAll('#history-table tbody a')].map(a =>"
               " [a.textContent, a.getAttribute('href')])[0]")
    check("hour=" + a[0] in a[1], "an hour row's link: %r" % a)
    load(b, head + a[1], "document.body.dataset.loaded == 'jobs'", "an hour's jobs")
    check(len(rows(b)) >= 1, "the hour's jobs")
    check(("hour " + a[0]) in text(b, "#jobs-filter"), "the page says which hour")
    clean(b, "history links at %s px" % tag)


def cluster_use(b, c, wd, tag):
    head = c.head.url
    load(b, head + "/ui/", "document.querySelector('#jobs-table a[href*=\"%s\"]')" % JOB_ID,
         "cluster")
    last = {}

    def ok():
        shown = b.eval("[...document.querySelectorAll('#jobs-table tbody tr')].map(tr =>"
                       " [tr.cells[0].textContent, tr.querySelector('.use-cores').textContent,"
                       " tr.querySelector('.use-eff').textContent,"
                       " tr.querySelector('.use-rss').textContent,"
                       " tr.querySelector('.use-gpu').textContent])")
        want = []
        for j in api(c, "/api/v1/jobs?state=running&limit=10000")["jobs"]:
            u = j["use"] or {}
            want.append([j["key"], "—" if u.get("cores") is None else fmt(u["cores"], 2),
                         pct(u.get("cpu_efficiency_pct")), nbytes(u.get("rss_bytes")),
                         pct(u.get("gpu_util_pct"))])
        last.update(shown=sorted(shown), want=sorted(want))
        return last["shown"] == last["want"] and all(w[3] != "—" for w in want)
    try:
        wait_for(ok, timeout=30, what="the running jobs' use as the API's")
    except AssertionError:
        eq(last.get("shown"), last.get("want"), "cluster: running jobs' use")
    # node names link to their page
    eq(sorted(b.eval("[...document.querySelectorAll('#nodes-table tbody a')].map(a =>"
                     " a.getAttribute('href'))")),
       ["/ui/node?name=web-a", "/ui/node?name=web-b"], "node links")
    shoot(b, wd, "cluster-use-%s" % tag)
    clean(b, "cluster at %s px" % tag)


def node_page(b, c, wd, tag):
    head = c.head.url
    now = int(time.time() * 1000)
    since, until = now - 3600 * 1000, now
    load(b, head + "/ui/node?name=web-a&since=%d&until=%d" % (since, until),
         "document.body.dataset.loaded == 'node'", "node")
    for cid in ("chart-cpu", "chart-mem", "chart-load", "chart-net", "chart-disk", "chart-gpus"):
        check(b.eval("!!document.querySelector('#%s svg path.line')" % cid), "%s drawn" % cid)
    eq(b.eval("[...document.querySelectorAll('#chart-gpus .legend li')].map(l => l.textContent)"),
       ["GPU 0", "GPU 1"], "a legend entry per GPU")
    eq(b.eval("[...document.querySelectorAll('#chart-net .legend li')].map(l => l.textContent)"),
       ["received", "sent"], "network legend")
    units = b.eval("[...document.querySelectorAll('#node-charts svg text.unit')]"
                   ".map(t => t.textContent)")
    eq(units, ["% of the node's CPU", "bytes", "runnable tasks", "bytes per second",
               "bytes per second", "% utilization"], "each chart's unit")
    n = len(api(c, "/api/v1/series?node=web-a&metric=load1_milli&since=%d&until=%d"
                % (since, until))["points"])
    check(n > 0 and (" %d samples" % n) in text(b, "#node-summary"),
          "the sample count: %d, %r" % (n, text(b, "#node-summary")))
    # every label inside its chart: none cut at an edge
    cut = b.eval("[...document.querySelectorAll('svg.chart text')].filter(t => {"
                 " const b = t.getBBox(), vb = t.ownerSVGElement.viewBox.baseVal;"
                 " return b.x < -0.5 || b.y < -0.5 || b.x + b.width > vb.width + 0.5 ||"
                 " b.y + b.height > vb.height + 0.5; }).map(t => t.textContent)")
    eq(cut, [], "chart labels cut at the edge")
    shoot(b, wd, "node-%s" % tag)
    clean(b, "node at %s px" % tag)


def test_jobs_node_history_anonymous(wd):
    if not can_unshare():
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    if not have_chromium():
        skip_browser("the jobs page")
        return
    c = Cluster(wd)
    ended = b = None
    try:
        ended = ready(c)
        b = Browser(wd.path)
        for width, height in WINDOWS:
            b.size(width, height)
            tag = "%d" % width
            jobs_page(b, c, wd, tag)
            cluster_use(b, c, wd, tag)
            node_page(b, c, wd, tag)
            history_links(b, c, wd, tag)
    finally:
        if ended:
            ended.wait()
        if b:
            b.close()
        c.close()


def test_jobs_and_node_with_read_token(wd):
    if not can_unshare():
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    if not have_chromium():
        skip_browser("the jobs page with a read token")
        return
    c = Cluster(wd, read_token=True)
    ended = b = None
    try:
        ended = ready(c)
        b = Browser(wd.path)
        b.size(*WINDOWS[0])
        b.navigate(c.head.url + "/ui/jobs?since=1h")
        b.wait("document.querySelector('#status').textContent.startsWith('401')",
               what="the jobs page asking for the token")
        b.eval("window.__same_page = 1; document.querySelector('#token').value = %s;"
               "document.querySelector('#token-form').requestSubmit()" % json.dumps(READ))
        b.wait("document.body.dataset.loaded == 'jobs' &&"
               " document.querySelectorAll('#jobs-list tbody tr[data-key]').length >= 4",
               what="the jobs once the token is given")
        eq(b.eval("window.__same_page"), 1, "no reload")
        b.console.clear()
        same_as_api(b, c, "since=1h")
        shoot(b, wd, "jobs-token-1280")
        clean(b, "jobs with the read token")
        # the token stays for the tab: the node page and the cluster's use
        node_page(b, c, wd, "token-1280")
        cluster_use(b, c, wd, "token-1280")
    finally:
        if ended:
            ended.wait()
        if b:
            b.close()
        c.close()


def test_my_jobs_through_proxy(wd):
    if not can_unshare():
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    if not have_chromium():
        skip_browser("my jobs through a proxy")
        return
    admin = {"X-Remote-User": "daemon"}  # in --admins
    c = Cluster(wd, head_extra=["--trusted-proxy", "127.0.0.1", "--admins", "daemon"],
                headers=admin)
    nobody_id = "97%d" % (os.getpid() % 100000)
    mine = subprocess.Popen(["runuser", "-u", "nobody", "--", "env", "SLURM_JOB_ID=" + nobody_id,
                             "SLURM_CPUS_ON_NODE=1", "sleep", "600"], stdin=subprocess.DEVNULL)
    b = None
    try:
        wait_for(lambda: len(c.jobs()) == 2, timeout=30, what="root's job on both nodes")
        wait_for(lambda: len([j for j in api(c, "/api/v1/jobs?limit=1000")["jobs"]
                              if j["job_id"] == nobody_id]) == 2,
                 timeout=30, what="nobody's job on both nodes")
        b = Browser(wd.path)
        b.size(*WINDOWS[0])
        for user, title, sees in (("nobody", "My jobs", "own"), ("root", "My jobs", "own"),
                                  ("daemon", "Jobs", "all")):
            hdr = {"X-Remote-User": user}
            b.call("Network.setExtraHTTPHeaders", {"headers": hdr})
            load(b, c.head.url + "/ui/jobs?since=1h",
                 "document.body.dataset.loaded == 'jobs'", "jobs as %s" % user)
            eq(text(b, "#title"), title, "the jobs page's title for %s" % user)
            check(user in (text(b, "#whoami") or ""), "the header names %s: %r" %
                  (user, text(b, "#whoami")))
            st, _, body, _ = get(c.head.url + "/api/v1/jobs?since=1h&limit=1000", headers=hdr)
            eq(st, 200, "the API as %s" % user)
            jobs = json.loads(body)["jobs"]
            eq(sorted((r["key"], r["node"]) for r in rows(b)),
               sorted((j["key"], j["node"]) for j in jobs), "%s's rows: the API's" % user)
            users = {j["user"] for j in jobs}
            if sees == "own":
                eq(users, {user}, "%s's jobs are theirs alone" % user)
                eq(b.eval("!!document.querySelector('button[data-sort=user]')"), False,
                   "no user column on my jobs")
                eq(b.eval("document.querySelector('#user-filter').getBoundingClientRect().width"),
                   0, "no user filter on my jobs")
            else:
                check({"nobody", "root"} <= users, "an admin sees every user's: %r" % users)
            shoot(b, wd, "jobs-proxy-%s" % user)
            clean(b, "jobs as %s through the proxy" % user)
        # without the proxy's header the head asks who is there
        b.call("Network.setExtraHTTPHeaders", {"headers": {}})
        b.navigate(c.head.url + "/ui/jobs?since=1h")
        b.wait("document.querySelector('#status').textContent.startsWith('401')",
               what="the jobs page without a user: 401")
        b.console.clear()
    finally:
        mine.kill()
        mine.wait()
        if b:
            b.close()
        c.close()


if __name__ == "__main__":
    run_tests(globals())
