"""The job page of a job that ended, on the agent's dashboard and on the head's, in
headless Chromium: both show the job's state "ended", its name, node, user and
command, and its CPU seconds and memory as each server's own JSON API gives them
(the agent: /api/v1/jobs/KEY's summary, the report it stored; the head: the
report of /api/v1/report?format=json&job=KEY, which its page reads).

One head, one agent (a UTS namespace of its own, so a node name of its own) and a
Slurm-like job of about a second of CPU and 48 MiB that ends by itself.
"""
import decimal
import json
import re
import sys
import subprocess
import urllib.parse

from harness import run_tests, check, eq, wait_for, slurm_env
from head_harness import Head, start_agent, stop_agent
from cdp_harness import Browser, have_chromium
from test_web import get, load, text, clean, shoot, skip_browser, can_unshare

NODE = "webjob-a"
JOB_ID = "97%d" % 4242
JOB_NAME = "ended-train"
# about a second of CPU, 48 MiB touched, then it ends
JOB = """
import time
b = bytearray(48 << 20)
for i in range(0, len(b), 4096):
    b[i] = 1
t = time.process_time()
while time.process_time() - t < 1.0:
    pass
time.sleep(0.5)
"""


def num(v):
    """app.js's num(): Intl.NumberFormat("en", {maximumFractionDigits: 1})"""
    d = decimal.Decimal(repr(v)).quantize(decimal.Decimal("0.1"), decimal.ROUND_HALF_UP)
    s = "{:,.1f}".format(d)
    return s[:-2] if s.endswith(".0") else s


def nbytes(v):
    """app.js's bytes()"""
    units, i = ["B", "KiB", "MiB", "GiB", "TiB"], 0
    while abs(v) >= 1024 and i < len(units) - 1:
        v /= 1024.0
        i += 1
    return num(v) + " " + units[i]


def api(base, path):
    st, _, body, _ = get(base + path)
    return st, (json.loads(body) if st == 200 else None)


def ended_with_summary(base):
    def ok(key):
        st, one = api(base, "/api/v1/jobs/" + urllib.parse.quote(key, safe=":"))
        return st == 200 and one["job"].get("end_ms") is not None and \
            one["summary"] is not None and one
    return ok


def agent_url(log):
    port = wait_for(lambda: (re.findall(r"agent: listening on [0-9.]+:(\d+)",
                                        open(log).read()) or [None])[-1],
                    timeout=15, what="the agent's listening line")
    return "http://127.0.0.1:%s" % port


def shown(b):
    return {k: text(b, sel) for k, sel in (
        ("state", "#card-state .value"), ("user", "#card-user .value"),
        ("node", "#card-node .value"), ("cpu", "#card-cpu .value"),
        ("rss", "#card-rss .value"), ("wait", "#card-wait .value"), ("name", "#job-name"),
        ("command", "#job-command"))}


def wait_text(report):
    """The wait card of an ended job: the report's mean wait for a CPU (app.js)."""
    c = report["analysis"]["contention"]
    if c["wait_cores_avg"] is None:
        return "—"
    return num(c["wait_cores_avg"]) + " cores" + (" (contended)" if c["cpu_contended"] else "")


def test_job_page_of_an_ended_job_agent_and_head(wd):
    if not can_unshare():
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    if not have_chromium():
        skip_browser("the job pages")
        return
    head = Head(wd)
    agent = start_agent(wd, head, NODE, extra=["--listen", "127.0.0.1:0"])
    job = b = None
    try:
        a = agent_url(agent[2])
        wait_for(lambda: get(a + "/api/v1/node")[0] == 200, timeout=15, what="the agent's first tick")
        job = subprocess.Popen([sys.executable, "-S", "-c", JOB],
                               env=slurm_env(SLURM_JOB_ID=JOB_ID, SLURM_CPUS_ON_NODE=1,
                                             SLURM_JOB_NAME=JOB_NAME),
                               stdout=subprocess.DEVNULL)

        def key_of():
            st, page = api(a, "/api/v1/jobs?state=all&limit=100")
            keys = [j["key"] for j in (page or {}).get("jobs", []) if j["job_id"] == JOB_ID]
            return keys[0] if keys else None
        key = wait_for(key_of, timeout=20, what="the job at the agent")
        eq(job.wait(timeout=60), 0, "the job")
        # each server's answer once the job ended there and has its summary
        ajob = wait_for(lambda: ended_with_summary(a)(key), timeout=30,
                        what="the job ended at the agent, with its summary")
        hjob = wait_for(lambda: ended_with_summary(head.url)(key), timeout=30,
                        what="the job ended at the head, with its summary")
        st, hrep = api(head.url, "/api/v1/report?format=json&job=" + urllib.parse.quote(key))
        eq(st, 200, "the head's report of the job")
        # the agent's answer has the head's shape, and the older fields at the top still
        eq(ajob["job"]["state"], "ended", "agent API: state")
        eq((ajob["state"], ajob["key"], ajob["name"]), ("ended", key, JOB_NAME),
           "agent API: the older fields")
        eq(ajob["processes"], [], "agent API: no live process")
        eq((ajob["job"]["name"], hjob["job"]["name"]), (JOB_NAME, JOB_NAME), "the job's name")
        want = {
            "agent": {"state": "ended", "user": ajob["job"]["user"], "node": NODE,
                      "cpu": num(ajob["summary"]["cpu"]["cpu_seconds"]),
                      "rss": nbytes(ajob["summary"]["memory"]["rss_peak_bytes"]),
                      "wait": wait_text(ajob["summary"]),
                      "name": JOB_NAME, "command": ajob["job"]["command"]},
            "head": {"state": "ended", "user": hjob["job"]["user"], "node": NODE,
                     "cpu": num(hrep["cpu"]["cpu_seconds"]),
                     "rss": nbytes(hrep["memory"]["rss_peak_bytes"]),
                     "wait": wait_text(hrep),
                     "name": JOB_NAME, "command": hjob["job"]["command"]},
        }
        check(ajob["summary"]["cpu"]["cpu_seconds"] >= 0.9, "about a second of CPU: %r"
              % ajob["summary"]["cpu"])
        check(ajob["summary"]["memory"]["rss_peak_bytes"] >= 48 << 20, "48 MiB: %r"
              % ajob["summary"]["memory"])
        b = Browser(wd.path)
        b.size(1280, 900)
        for server, base in (("agent", a), ("head", head.url)):
            load(b, base + "/ui/job?key=" + urllib.parse.quote(key),
                 "document.body.dataset.jobState == 'ended'", server + " job page")
            got = shown(b)
            eq(got, want[server], "%s's job page: the API's figures" % server)
            check(text(b, "#job-end") != "still running", "%s: an end time" % server)
            eq(text(b, "#card-duration .label"), "Ran for", "%s: the duration's label" % server)
            clean(b, server + " job page")
            shoot(b, wd, "job-ended-" + server)
    finally:
        if b:
            b.close()
        if job and job.poll() is None:
            job.kill()
            job.wait()
        stop_agent(agent[0], agent[3])
        head.kill()


if __name__ == "__main__":
    run_tests(globals())
