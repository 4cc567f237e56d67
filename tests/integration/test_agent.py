"""`jobscope agent`: attribution, reservations, endpoints, store, signals, faults."""
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import time

from harness import (FIXTURES, helper, jobscope, machine_cpus, run_tests, near, check, eq, scaled,
                     wait_for)
from agent_harness import Agent, sql, job_row, env_with, spawn, settle, proc_state

MiB = 1 << 20
GiB = 1 << 30
FAKES = os.environ.get("FAKES", "")


def report_json(db, key):
    r = jobscope("report", "--db", db, "--job", key, "--format", "json")
    eq(r.returncode, 0, "jobscope report --job %s: %s" % (key, r.stderr))
    return json.loads(r.stdout)


def check_gaps_are_real(db, key, interval_ms):
    """The job's CSV timeline (what every chart draws) has an empty row only where
    the agent's ticks, read from its store here, have a gap of 1.5 intervals or more:
    ticks ~1 interval apart but late or early by what the machine makes them put two
    in one bucket and none in the next, and that bucket is no gap."""
    r = jobscope("report", "--db", db, "--job", key, "--format", "csv")
    eq(r.returncode, 0, "jobscope report --job %s --format csv: %s" % (key, r.stderr))
    lines = r.stdout.splitlines()
    col = lines[0].split(",").index("host_mem_used_bytes")
    ticks = [t for (t,) in sql(db, "SELECT ts_ms FROM host_samples ORDER BY ts_ms")]
    for row in (l.split(",") for l in lines[1:]):
        if row[col] != "":
            continue
        start, span = int(row[1]), int(row[2])
        before = [t for t in ticks if t < start]
        after = [t for t in ticks if t >= start + span]
        check(before and after and after[0] - before[-1] >= 1.5 * interval_ms,
              "%s: an empty row at %d, ticks around it %s ms apart: no gap in the data" %
              (key, start, after[0] - before[-1] if before and after else "?"))
    return len(lines) - 1


def helper_json(out):
    for line in reversed(out.strip().splitlines()):
        if line.strip().startswith("{"):
            return json.loads(line)
    raise AssertionError("no JSON line in %r" % out)


def job_series(metrics, name, job_id):
    return [v for (n, labels), v in metrics.items()
            if n == name and ("job_id", job_id) in labels]


def wait_job_end(db, scheduler, job_id, timeout=15):
    def ended():
        row = job_row(db, scheduler, job_id)
        return row if row and row[2] else None
    return wait_for(ended, timeout=timeout, what="the end of job %s" % job_id)


# A command under a shell that reaps it, writes its stdout to a file and stays until
# the test writes a line to a FIFO: sh FIFO OUT CMD...  A process reaped between two
# ticks was last seen up to an interval before it ended; the agent makes its CPU
# exact from its parent's children's CPU, which it reads at the next tick: so the
# parent must still be there then (`jobscope run` and nsenter exit at once).
HOLD = 'fifo=$0 out=$1; shift; "$@" > "$out" || exit; read _ < "$fifo"'


def hold(fifo, out, cmd):
    """sh HOLD around cmd; fifo is made here."""
    os.mkfifo(fifo)
    return ["sh", "-c", HOLD, fifo, out] + list(cmd)


def helper_done(out):
    """The helper's JSON line once it wrote it to out, else None."""
    try:
        with open(out) as f:
            text = f.read()
    except OSError:
        return None
    return helper_json(text) if text.endswith("\n") else None


def release(fifo):
    """Lets the HOLD shell go: a line to its FIFO once it is reading."""
    def opened():
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: no reader yet
            return None
    fd = wait_for(opened, what="the shell reading %s" % fifo)
    try:
        os.write(fd, b"go\n")
    finally:
        os.close(fd)


def seen_then(db, job_id, cmd, env, prefix=()):
    """prefix + cmd as job slurm:job_id, let go once the agent's scans saw it: a shell
    that stops itself until the job is stored, then execs cmd under its pid.  (A job
    that ends before any scan saw it is no job; on a busy machine a scan comes late.)"""
    p = spawn(list(prefix) + ["sh", "-c", 'kill -STOP $$; exec "$@"', "sh"] + list(cmd),
              env=env)
    try:
        wait_for(lambda: proc_state(p.pid) == "T", what="the job's shell stopped")
        wait_for(lambda: job_row(db, "slurm", job_id), what="job %s seen" % job_id)
    finally:
        os.kill(p.pid, signal.SIGCONT)
    return p


def near_cpu(got, truth, what):
    """A job's CPU seconds as the agent stored them against the workload's getrusage:
    each process's CPU in /proc is cut to clock ticks (10 ms) twice (user, system),
    and a shell around the workload adds a few ms of its own."""
    check(got is not None and abs(got - truth) <= 0.05 * truth + 0.04,
          "%s: %r CPU-s, the workload's getrusage %.3f" % (what, got, truth))


def test_slurm_env_job_reservation_and_usage(wd):
    """A job known only by SLURM_* variables: identity, reservation, exact CPU, memory peak."""
    a = Agent(wd, interval="100ms")
    try:
        env = env_with(SLURM_JOB_ID=901, SLURM_CPUS_ON_NODE=2, SLURM_MEM_PER_NODE=512,
                       SLURM_JOB_NAME="train-42")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        busy = seen_then(a.db, "901", [helper("busy"), "--seconds", "1", "--threads", "1"], env)
        mem = spawn([helper("memtouch"), "--mib", "96", "--hold", "2"], env=env)
        wait_for(lambda: job_series(a.metrics(), "jobscope_job_processes", "901"),
                 what="job 901 in /metrics")
        m = a.metrics()
        eq(job_series(m, "jobscope_job_reserved_cpus", "901"), [2.0], "reserved cpus")
        eq(job_series(m, "jobscope_job_reserved_memory_bytes", "901"), [512.0 * MiB],
           "reserved memory")
        eq(job_series(m, "jobscope_job_reserved_gpus", "901"), [0.0], "reserved GPUs")
        live = a.json("/api/v1/jobs/slurm:901")
        eq(live["scheduler"], "slurm", "scheduler")
        eq(live["live"], True, "live")
        eq(live["reservation"]["source"], "slurm_env", "reservation source")
        eq(live["name"], "train-42", "the job's name: SLURM_JOB_NAME")
        check(live["key"].startswith("slurm:901:"), "key %r" % live["key"])
        check(any(j["job_id"] == "901" for j in a.json("/api/v1/jobs")["jobs"]),
              "/api/v1/jobs lists job 901")
        # reaped one at a time, with ticks between: the agent sees each one's end in
        # its parent's (this process's) children's CPU, and makes its CPU exact
        rc1, out1, _ = settle(busy)
        a.wait_ticks(2)
        rc2, out2, _ = settle(mem)
        eq((rc1, rc2), (0, 0), "workloads")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # the two workloads are the only children reaped meanwhile
        truth_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        truth_rss = helper_json(out2)["maxrss_bytes"]
        wait_job_end(a.db, "slurm", "901")
        wait_for(lambda: not job_series(a.metrics(), "jobscope_job_processes", "901"),
                 what="job 901 gone from /metrics")
        ended = a.json("/api/v1/jobs/slurm:901")
        eq(ended["live"], False, "ended job from the store")
        check(ended["summary"] is not None, "the ended job has its summary")
    finally:
        eq(a.stop(), 0, "agent exit status")
    rep = report_json(a.db, "slurm:901")
    eq(rep["run"]["scheduler"], "slurm", "report scheduler")
    eq(rep["run"]["name"], "train-42", "report name: SLURM_JOB_NAME")
    res = rep["reservation"]
    eq(res["cpus"], 2.0, "reservation cpus")
    eq(res["memory_bytes"], 512 * MiB, "reservation memory")
    # memtouch's own CPU is small; both workloads are the job
    print("job 901: %.3f CPU-s stored, %.3f by getrusage" % (rep["cpu"]["cpu_seconds"], truth_cpu))
    near_cpu(rep["cpu"]["cpu_seconds"], truth_cpu, "job CPU seconds vs the workload's")
    near(res["memory_peak_bytes"], truth_rss, 0.10, "job memory peak vs the workload's RSS")
    near(res["memory_efficiency_pct"], 100.0 * truth_rss / (512 * MiB), 0.10, "memory eff")
    check(res["cpu_efficiency_pct"] is not None and res["cpu_efficiency_pct"] > 0,
          "cpu efficiency %r" % res["cpu_efficiency_pct"])
    summ = sql(a.db, "SELECT s.cpu_ms, s.rss_peak_bytes FROM job_summaries s JOIN jobs j"
               " ON j.id = s.job_id WHERE j.scheduler = 'slurm' AND j.job_id = '901'")
    eq(len(summ), 1, "one summary row")
    near_cpu(summ[0][0] / 1000.0, truth_cpu, "summary cpu")
    check(check_gaps_are_real(a.db, "slurm:901", 100) >= 10, "rows in job 901's timeline")


def test_jobs_view_rendered_when_asked(wd):
    """The jobs' objects are rendered at a tick only when asked since the one
    before; a request after ticks nobody asked them of gets them rendered then,
    from the last tick: a process that tick saw is in them."""
    a = Agent(wd, interval="1s")
    procs = []
    try:
        env = env_with(SLURM_JOB_ID=9700)
        procs.append(spawn(["sleep", "120"], env=env))
        wait_for(lambda: job_series(a.metrics(), "jobscope_job_processes", "9700") == [1.0],
                 what="job 9700 with one process in /metrics")
        eq(sorted(p["pid"] for p in a.json("/api/v1/jobs/slurm:9700")["processes"]),
           [procs[0].pid], "the job's process")
        # ticks with /metrics alone read: the views they publish have no jobs
        a.wait_ticks(2)
        procs.append(spawn(["sleep", "120"], env=env))
        wait_for(lambda: job_series(a.metrics(), "jobscope_job_processes", "9700") == [2.0],
                 what="job 9700 with two processes in /metrics")
        live = a.json("/api/v1/jobs/slurm:9700")
        eq(live["live"], True, "live")
        eq(sorted(p["pid"] for p in live["processes"]), sorted(p.pid for p in procs),
           "both processes, rendered when asked")
        page = [j for j in a.json("/api/v1/jobs")["jobs"] if j["job_id"] == "9700"]
        eq(len(page), 1, "the page lists the job")
        eq(sorted(p["pid"] for p in page[0]["processes"]), sorted(p.pid for p in procs),
           "with its live processes")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        eq(a.stop(), 0, "agent exit status")


def test_jobs_view_between_ticks(wd):
    """At 30 s, no tick comes while the requests are answered: the first view has
    no jobs' objects, so each request gets them rendered for it between ticks."""
    env = env_with(SLURM_JOB_ID=9701)
    proc = spawn(["sleep", "120"], env=env)
    a = Agent(wd, interval="30s")
    try:
        eq(a.ticks(), 1, "the first tick alone")
        live = a.json("/api/v1/jobs/slurm:9701")
        eq([p["pid"] for p in live["processes"]], [proc.pid], "the job's process")
        page = [j for j in a.json("/api/v1/jobs")["jobs"] if j["job_id"] == "9701"]
        eq([p["pid"] for p in page[0]["processes"]], [proc.pid], "in the page too")
        eq(a.ticks(), 1, "still the first tick")
    finally:
        proc.kill()
        proc.wait()
        eq(a.stop(), 0, "agent exit status")
    rows = sql(a.db, "SELECT count(*) FROM jobs WHERE job_id = '9701'")
    eq(rows[0][0], 1, "the job stored")


def test_new_processes_in_a_pid_namespace(wd):
    """An agent in a pid namespace of its own (a container, a pod without hostPID) sees
    a process that starts after its first ticks, with its CPU: the kernel's process
    events name pids as the first namespace numbers them, so there the agent lists
    /proc each tick instead (it used to wait for events that named other processes)."""
    if os.geteuid() != 0 or not shutil.which("nsenter"):
        print("SKIP: a pid namespace needs root and nsenter")
        return
    a = Agent(wd, interval="100ms",
              wrap=["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"])
    inner = None
    try:
        a.wait_ticks(3)
        # the agent is the unshare's child, PID 1 of the namespace to enter
        with open("/proc/%d/task/%d/children" % (a.proc.pid, a.proc.pid)) as f:
            inner = int(f.read().split()[0])
        fifo, out = wd.join("go"), wd.join("busy.json")
        p = spawn(["nsenter", "-t", str(inner), "-p", "-m", "--", "env", "SLURM_JOB_ID=977"]
                  + hold(fifo, out, [helper("busy"), "--seconds", "1"]), env=env_with())
        truth = wait_for(lambda: helper_done(out), timeout=30, what="js-busy's JSON line")
        a.wait_ticks(2)  # a tick that saw the shell after it reaped js-busy
        release(fifo)
        rc, _, err = settle(p)
        eq(rc, 0, "the job in the agent's namespace: %s" % err)
        truth = truth["cpu_seconds"]
        wait_job_end(a.db, "slurm", "977")
    finally:
        if inner:
            os.kill(inner, signal.SIGTERM)  # unshare passes no signal on
        eq(a.stop(), 0, "agent exit status")
    got = report_json(a.db, "slurm:977")["cpu"]["cpu_seconds"]
    print("job 977: %.3f CPU-s stored, %.3f by the helper's getrusage" % (got, truth))
    near_cpu(got, truth, "job 977's CPU")


def test_stop_while_the_head_never_answers(wd):
    """SIGTERM while a batch is in flight to a head that took the request and never
    answers: the agent gives up its 2 s flush and the transfer at once and exits (it
    waited out the transfer's 30 s timeout), its rows kept in its store."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    srv.settimeout(scaled(20))
    a = Agent(wd, extra=["--head", "http://127.0.0.1:%d" % srv.getsockname()[1]])
    conn = None
    try:
        conn, _ = srv.accept()
        conn.settimeout(scaled(20))
        check(conn.recv(65536).startswith(b"POST /api/v1/ingest"), "the agent's first batch")
        start = time.monotonic()
        rc = a.stop()
        took = time.monotonic() - start
    finally:
        a.kill()
        if conn:
            conn.close()
        srv.close()
    eq(rc, 0, "the agent's exit status")
    # not scaled: the bound is what the fix promises (the flush's 2 s and libcurl's
    # next look at the transfer, about a second), far under the 30 s it took before
    check(took < 12, "the agent took %.1f s to stop" % took)
    check(sql(a.db, "SELECT count(*) FROM host_samples")[0][0] > 0, "its rows kept")


def test_run_id_attribution(wd):
    """Processes of a `jobscope run` are the run's job in the agent, with their CPU (the
    workload's own getrusage)."""
    a = Agent(wd, interval="100ms")
    try:
        fifo, out = wd.join("go"), wd.join("busy.json")
        r = spawn([os.environ["JOBSCOPE"], "run", "--db", wd.join("run.db"), "--report", "none",
                   "--"] + hold(fifo, out, [helper("busy"), "--seconds", "1"]), env=env_with())
        truth = wait_for(lambda: helper_done(out), timeout=30, what="js-busy's JSON line")
        a.wait_ticks(2)  # a tick that saw the shell after it reaped js-busy
        release(fifo)
        rc, _, err = settle(r)
        eq(rc, 0, "jobscope run: %s" % err)
        run_id = sql(wd.join("run.db"), "SELECT job_id FROM jobs")[0][0]
        row = wait_job_end(a.db, "run", run_id)
        check(row is not None, "the agent saw run %s as a job" % run_id)
        rep = report_json(a.db, "run:%s" % run_id)
        print("run %s: %.3f CPU-s stored, %.3f by js-busy's getrusage"
              % (run_id, rep["cpu"]["cpu_seconds"], truth["cpu_seconds"]))
        near_cpu(rep["cpu"]["cpu_seconds"], truth["cpu_seconds"],
                 "the run's CPU as the agent saw it")
    finally:
        a.stop()


def test_endpoints_and_metrics_format(wd):
    a = Agent(wd, interval="100ms")
    try:
        body = a.get("/metrics")
        eq(a.last_content_type, "text/plain; version=0.0.4; charset=utf-8", "content type")
        families = {}
        for line in body.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, typ = line.split(" ", 3)
                families[name] = typ
            elif line.startswith("# HELP "):
                continue
            else:
                name = re.match(r"^[a-z0-9_]+", line).group(0)
                check(name in families, "%s has a TYPE line before its samples" % name)
                check(name.startswith("jobscope_"), "prefix: %s" % name)
                check("nan" not in line.lower().split(" ")[-1], "no NaN sample: %s" % line)
                if families[name] == "counter":
                    check(name.endswith("_total"), "counter name ends in _total: %s" % name)
        for n in ("jobscope_node_cpu_seconds_total", "jobscope_node_memory_total_bytes",
                  "jobscope_agent_ticks_total", "jobscope_job_cpu_seconds_total"):
            check(n in families, "family %s present" % n)
        eq(families["jobscope_node_cpu_seconds_total"], "counter", "cpu is a counter")
        node = a.json("/api/v1/node")
        eq(node["node"], os.uname().nodename, "node name")
        check(node["host"]["cpus"] == os.cpu_count(), "cpus")
        check(node["agent"]["interval_ms"] == 100, "interval")
        gpus = a.json("/api/v1/gpus")
        eq(gpus["gpus"], [], "no GPU here")
        err = a.json("/api/v1/nope", expect=404)
        check("error" in err, "JSON error body")
        a.json("/api/v1/jobs/slurm:424242:1", expect=404)
        # a method the agent does not take
        import urllib.request
        req = urllib.request.Request(a.url + "/metrics", data=b"x", method="POST")
        try:
            urllib.request.urlopen(req, timeout=5)
            raise AssertionError("POST /metrics was accepted")
        except urllib.error.HTTPError as e:
            check(e.code in (405, 413), "POST refused: %d" % e.code)
    finally:
        eq(a.stop(), 0, "agent exit status")


def page_through(a, query, limit):
    """Every job of /api/v1/jobs?query, limit at a time: (jobs, pages)."""
    jobs, pages, cursor, cursors = [], 0, None, set()
    while True:
        body = a.json("/api/v1/jobs?%s&limit=%d%s" % (query, limit,
                                                     "&cursor=" + cursor if cursor else ""))
        pages += 1
        check(len(body["jobs"]) <= limit, "a page of at most %d" % limit)
        jobs += body["jobs"]
        cursor = body["next"]
        if cursor is None:
            return jobs, pages
        check(len(body["jobs"]) == limit, "only the last page is short")
        check(cursor not in cursors, "page %d ends where an earlier one did: %s" % (pages, cursor))
        cursors.add(cursor)


def test_jobs_list_states_filters_and_paging(wd):
    """/api/v1/jobs: the store's ended jobs (state ended, their totals) with the running one's
    live figures, each once in order a page at a time, filters, and 400 for a bad parameter."""
    a = Agent(wd, interval="100ms")
    host = os.uname().nodename
    mine = {}
    running = None
    try:
        for n, jid in enumerate(["9611", "9612", "9613", "9614"]):
            rc, _, err = settle(seen_then(a.db, jid, ["sleep", "0.3"],
                                          env_with(SLURM_JOB_ID=jid)))
            eq(rc, 0, err)
            mine[jid] = wait_job_end(a.db, "slurm", jid)
            if n == 1:
                # 9611 and 9612 ended before it; 9613 and 9614 start after it
                between_ms = int(time.time() * 1000) + 150
                time.sleep(0.3)  # not a wait: puts between_ms between two jobs' times
        # a job of another user: it is slurm:9615 only once it runs as nobody
        rc, _, err = settle(seen_then(a.db, "9615", ["sleep", "0.3"], env_with(), prefix=[
            "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "env",
            "SLURM_JOB_ID=9615"]))
        eq(rc, 0, err)
        mine["9615"] = wait_job_end(a.db, "slurm", "9615")
        running = spawn(["sleep", "60"], env=env_with(SLURM_JOB_ID=9616))

        def mine_in(jobs):
            return {j["job_id"]: j for j in jobs
                    if j["scheduler"] == "slurm" and j["job_id"] in ("9611", "9612", "9613",
                                                                     "9614", "9615", "9616")}

        def live_9616():
            got = mine_in(a.json("/api/v1/jobs?state=running")["jobs"])
            return got.get("9616") if got.get("9616", {}).get("live") else None
        live = wait_for(live_9616, what="job 9616 running and live in /api/v1/jobs")
        row = job_row(a.db, "slurm", "9616")
        eq((live["state"], live["end_ms"], live["store_id"], live["totals"]),
           ("running", None, row[0], None), "the running job")
        eq(live["start_ms"], row[1], "its start, as stored")
        check(isinstance(live["usage"], dict) and live["usage"]["processes"] == 1,
              "its live usage: %r" % live["usage"])
        # its threads' wait for a CPU over the last tick (schedstat): a process asleep
        # waits for none, however busy the machine (its start may have, a tick before)
        wait_for(lambda: (live_9616() or {}).get("usage", {}).get("cpu_wait_cores") == 0,
                 timeout=15, what="job 9616's cpu_wait_cores 0 (asleep)")

        # ended jobs: from the store, with their summary's totals
        def summaries():
            return sql(a.db, "SELECT j.job_id, s.cpu_ms, s.rss_peak_bytes FROM job_summaries s"
                       " JOIN jobs j ON j.id = s.job_id WHERE j.scheduler = 'slurm'"
                       " AND j.job_id BETWEEN '9611' AND '9615'")
        sums = {r[0]: r[1:] for r in wait_for(lambda: len(summaries()) == 5 and summaries(),
                                              what="five summaries")}
        ended = mine_in(a.json("/api/v1/jobs?state=ended&limit=10000")["jobs"])
        eq(sorted(ended), ["9611", "9612", "9613", "9614", "9615"], "state=ended: the ended ones")
        for jid, j in ended.items():
            eq((j["state"], j["live"], j["key"], j["start_ms"], j["end_ms"], j["store_id"]),
               ("ended", False, "slurm:%s:%d" % (jid, mine[jid][1]), mine[jid][1], mine[jid][2],
                mine[jid][0]), "ended job %s" % jid)
            eq((j["usage"], j["gpus"]), (None, None), "no usage now for %s" % jid)
            eq((j["totals"]["cpu_ms"], j["totals"]["rss_peak_bytes"]), sums[jid],
               "totals of %s (its summary)" % jid)
        eq(ended["9615"]["user"], "nobody", "user of 9615")
        eq(ended["9611"]["user"], "root", "user of 9611")
        check(all(j["state"] == "running" for j in a.json("/api/v1/jobs?state=running")["jobs"]),
              "state=running: only running jobs")
        check(all(j["state"] == "ended" for j in a.json("/api/v1/jobs?state=ended")["jobs"]),
              "state=ended: only ended jobs")
        eq(sorted(mine_in(a.json("/api/v1/jobs?state=running")["jobs"])), ["9616"],
           "state=running: of mine, the running one")

        # filters
        got = a.json("/api/v1/jobs?user=nobody&limit=10000")["jobs"]
        eq(sorted(mine_in(got)), ["9615"], "user=nobody")
        check(all(j["user"] == "nobody" for j in got), "user=nobody: only nobody's")
        got = a.json("/api/v1/jobs?user=root&limit=10000")["jobs"]
        eq(sorted(mine_in(got)), ["9611", "9612", "9613", "9614", "9616"], "user=root")
        eq(sorted(mine_in(a.json("/api/v1/jobs?until=%d&limit=10000" % between_ms)["jobs"])),
           ["9611", "9612"], "until= between the second and the third")
        eq(sorted(mine_in(a.json("/api/v1/jobs?since=%d&limit=10000" % between_ms)["jobs"])),
           ["9613", "9614", "9615", "9616"], "since= between the second and the third")
        eq(sorted(mine_in(a.json("/api/v1/jobs?since=1h&limit=10000")["jobs"])),
           ["9611", "9612", "9613", "9614", "9615", "9616"], "since=1h")
        eq(sorted(mine_in(a.json("/api/v1/jobs?node=%s&limit=10000" % host)["jobs"])),
           ["9611", "9612", "9613", "9614", "9615", "9616"], "node= this node")
        eq(a.json("/api/v1/jobs?node=elsewhere"), {"node": host, "jobs": [], "next": None},
           "node= another node")

        # a page at a time: each job once, newest first, the row id breaking ties
        whole = a.json("/api/v1/jobs?limit=10000")
        eq(whole["next"], None, "one page holds them all")
        for limit in (1, 2):
            jobs, pages = page_through(a, "state=all", limit)
            order = [(j["start_ms"], j["store_id"]) for j in jobs]
            eq(len(set(order)), len(order), "limit=%d: no job twice" % limit)
            eq(order, sorted(order, reverse=True), "limit=%d: newest first" % limit)
            eq([j["job_id"] for j in jobs if j["job_id"] in mine_in(jobs)],
               ["9616", "9615", "9614", "9613", "9612", "9611"], "limit=%d: mine in order" % limit)
            check(pages >= len(jobs) // limit, "limit=%d: %d pages" % (limit, pages))
            # what was stored before the first page is every job of the pass
            check({(j["start_ms"], j["store_id"]) for j in whole["jobs"]} <= set(order),
                  "limit=%d: every job stored before the pass" % limit)
        first = a.json("/api/v1/jobs?limit=1")
        eq(len(first["jobs"]), 1, "limit=1: one job")
        check(isinstance(first["next"], str) and first["next"], "and a next cursor")

        # bad parameters
        for q, msg in (("cursor=nope", "cursor: the \"next\" of an earlier page, as it was"),
                       ("cursor=j1.5.0", "cursor: the \"next\" of an earlier page, as it was"),
                       ("state=live", "state: running, ended or all"),
                       ("limit=0", "limit: a whole number from 1 to 10000"),
                       ("limit=10001", "limit: a whole number from 1 to 10000"),
                       ("since=yesterday",
                        "since/until: ms since the epoch, RFC 3339, or an age (2h, 7d)"),
                       ("since=1h&until=2h", "since must not come after until")):
            eq(a.json("/api/v1/jobs?" + q, expect=400), {"error": msg, "status": 400}, q)

        # one ended job by key: the list's object and its stored report
        one = a.json("/api/v1/jobs/slurm:9612")
        eq((one["state"], one["live"], one["store_id"]), ("ended", False, mine["9612"][0]),
           "one ended job")
        check(one["summary"] is not None and one["totals"] is not None, "with its summary")

        # the running job ends: it is listed as ended, in its place
        running.kill()
        running.wait()
        end = wait_job_end(a.db, "slurm", "9616")
        j = wait_for(lambda: mine_in(a.json("/api/v1/jobs?state=ended")["jobs"]).get("9616"),
                     what="9616 listed as ended")
        eq((j["state"], j["live"], j["end_ms"]), ("ended", False, end[2]), "9616 ended")
    finally:
        if running and running.poll() is None:
            running.kill()
            running.wait()
        eq(a.stop(), 0, "agent exit status")


def test_sigterm_flushes_and_restart_reuses_job(wd):
    # 300 ms, not 100: the tick taken at the signal is told from the regular ones by
    # its time (within 50 ms of it), which a 100 ms interval would often match by chance
    a = Agent(wd, interval="300ms")
    env = env_with(SLURM_JOB_ID=902, SLURM_CPUS_ON_NODE=1)
    sleeper = spawn(["sleep", "30"], env=env)
    try:
        wait_for(lambda: job_row(a.db, "slurm", "902"), what="job 902 stored")
        a.wait_ticks(2)
        ticks = a.ticks()
        t_stop = time.time() * 1000
        eq(a.stop(), 0, "exit status after SIGTERM")
        check("storing the last tick" in a.stderr(), "says it stores the last tick")
        last = sql(a.db, "SELECT max(ts_ms) FROM host_samples")[0][0]
        check(last >= t_stop - 50, "the last tick was taken at the signal (%d vs %d)"
              % (last, t_stop))
        check(sql(a.db, "SELECT count(*) FROM host_samples")[0][0] >= ticks, "every tick kept")
        b = Agent(wd, interval="100ms", name="agent2")
        try:
            b.wait_ticks(2)
            rows = sql(a.db, "SELECT count(*) FROM jobs WHERE scheduler='slurm' AND job_id='902'")
            eq(rows[0][0], 1, "the restarted agent reopened job 902's row, no duplicate")
        finally:
            b.stop()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_kill9_loses_at_most_a_tick(wd):
    a = Agent(wd, interval="100ms")
    a.wait_ticks(5)
    before = a.ticks()
    a.kill()
    stored = sql(a.db, "SELECT count(*) FROM host_samples")[0][0]
    check(stored >= before - 1, "stored %d ticks of the %d reported" % (stored, before))
    eq(sql(a.db, "PRAGMA integrity_check")[0][0], "ok", "integrity after kill -9")
    b = Agent(wd, interval="100ms", name="agent2")
    try:
        b.wait_ticks(3)
    finally:
        eq(b.stop(), 0, "restarted agent exit")
    seqs = sql(a.db, "SELECT count(*), count(DISTINCT seq) FROM host_samples")[0]
    eq(seqs[0], seqs[1], "seq unique across the restart")


def test_fork_storm(wd):
    """Processes appearing and vanishing every few ms: no tick lost, nothing crashes,
    and the agent keeps its pace through them.  Keeping pace is the point, and it
    needs CPU for the agent: both run with the machine's CPUs (a busy machine would
    delay the ticks whatever the agent does)."""
    with machine_cpus("test_fork_storm"):
        a = Agent(wd, interval="100ms")
        try:
            a.wait_ticks(1)
            t0, k0 = time.monotonic(), a.ticks()
            # 1,800 processes (600 chains of 3), each about 1 ms of CPU
            storm = spawn([helper("spawnstorm"), "--count", "600", "--depth", "2"],
                          env=env_with(SLURM_JOB_ID=903))
            rc, out, err = settle(storm, timeout=120)
            eq(rc, 0, "storm: %s" % err)
            dt, k1 = time.monotonic() - t0, a.ticks()
            check(k1 - k0 >= int(dt / 0.1 * 0.8), "ticks kept pace: %d in %.1fs"
                  % (k1 - k0, dt))
            node = a.json("/api/v1/node")
            eq(node["agent"]["lost_ticks"], 0, "no tick lost")
            check(a.proc.poll() is None, "agent alive")
        finally:
            eq(a.stop(), 0, "agent exit status")
    eq(sql(a.db, "PRAGMA integrity_check")[0][0], "ok", "integrity")


def test_sighup_reopens_log(wd):
    log = wd.join("agent-file.log")
    a = Agent(wd, interval="100ms", log_file=log)
    try:
        os.rename(log, log + ".1")  # what logrotate does
        a.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: os.path.exists(log) and "log file reopened" in open(log).read(),
                 what="a new log file after SIGHUP")
        a.wait_ticks(2)
        check(a.proc.poll() is None, "SIGHUP does not stop the agent")
    finally:
        eq(a.stop(), 0, "exit")
    check("storing the last tick" in open(log).read(), "later messages go to the new file")


def test_config_file_and_bad_options(wd):
    cfg = wd.join("agent.conf")
    with open(cfg, "w") as f:
        f.write("# jobscope agent\ninterval = 300ms\nretention-raw = 2d\n")
    a = Agent(wd, interval="1s", extra=["--config", cfg, "--interval", "250ms"])
    try:
        eq(a.json("/api/v1/node")["agent"]["interval_ms"], 250, "command line beats config")
    finally:
        a.stop()
    with open(cfg, "w") as f:
        f.write("interval = 300ms\nno-such-thing = 1\n")
    r = jobscope("agent", "--config", cfg, "--db", wd.join("x.db"))
    eq(r.returncode, 2, "bad config: usage error")
    check("unknown setting 'no-such-thing'" in r.stderr and ":2:" in r.stderr,
          "names the line: %r" % r.stderr)
    # the shipped deploy/agent.conf, its commented compat line in, works as it is
    with open(os.path.join(FIXTURES, "..", "..", "deploy", "agent.conf")) as f:
        shipped = f.read()
    check("retention-1h = 2y" in shipped and "#compat = jobstats,dcgm" in shipped,
          "the shipped config's lines")
    with open(cfg, "w") as f:
        for line in shipped.replace("#compat", "compat").splitlines():
            if not line.startswith(("db ", "log-file ", "listen ")):
                f.write(line + "\n")
    r = jobscope("agent", "--config", cfg, "--db", wd.join("z.db"), "--listen", "none",
                 "--exit-after", "300ms")
    eq(r.returncode, 0, "deploy/agent.conf: %s" % r.stderr)
    for bad in (["--interval", "10ms"], ["--max-db-size", "lots"], ["--listen", "nowhere"],
                ["--retention-raw", "x"], ["--compat", "jobstat"], ["--compat", ""],
                ["--compat", "dcgm,"]):
        r = jobscope("agent", "--db", wd.join("y.db"), *bad)
        eq(r.returncode, 2, "%s: exit 2 (%s)" % (bad, r.stderr))
    # a store that is not ours is refused, untouched
    junk = wd.join("junk.db")
    with open(junk, "wb") as f:
        f.write(b"not a database" * 100)
    r = jobscope("agent", "--db", junk, "--listen", "none", "--exit-after", "1s")
    eq(r.returncode, 2, "foreign store refused: %s" % r.stderr)
    with open(junk, "rb") as f:
        eq(f.read(), b"not a database" * 100, "foreign file untouched")


def test_retention_and_size_cap(wd):
    started_ms = time.time() * 1000
    a = Agent(wd, interval="100ms", extra=["--retention-raw", "1s"])
    try:
        # ticks over 5 s: without retention, rows 5 s old would be there
        wait_for(lambda: (sql(a.db, "SELECT max(ts_ms) FROM host_samples")[0][0] or 0)
                 >= started_ms + 5000, timeout=30, what="5 s of ticks")
        # measured from the agent's own newest tick, not the clock: a retention step
        # runs each 250 ms of tick times (a quarter of the limit), and deletes what is
        # older than 1 s then; a tick late on a busy machine delays the step with it
        oldest, newest = sql(a.db, "SELECT min(ts_ms), max(ts_ms) FROM host_samples")[0]
        check(oldest >= newest - 3000, "raw rows older than the limit are gone (oldest %.1fs"
              " before the newest)" % ((newest - oldest) / 1000))
        eq(sql(a.db, "SELECT count(*) FROM proc_samples WHERE ts_ms < ?", newest - 4000)[0][0],
           0, "old process rows gone")
    finally:
        a.stop()
    b = Agent(wd, interval="100ms", db=wd.join("capped.db"), extra=["--max-db-size", "250K"],
              name="capped")
    try:
        # the file passes 250K after a few dozen ticks; then the oldest rows go
        wait_for(lambda: (sql(b.db, "SELECT min(seq) FROM host_samples")[0][0] or 0) > 1,
                 timeout=60, what="the oldest rows to go, to keep under the cap")
        b.wait_ticks(20)
        used = sql(b.db, "SELECT (page_count - freelist_count) * page_size FROM"
                   " pragma_page_count, pragma_freelist_count, pragma_page_size")[0][0]
        check(used <= 350 * 1024, "used %d bytes with a 250K cap" % used)
        eq(sql(b.db, "SELECT count(*) FROM jobs WHERE end_ms IS NULL")[0][0] > 0, True,
           "jobs are never deleted")
    finally:
        b.stop()


def test_rollups_written(wd):
    a = Agent(wd, interval="100ms")
    a.wait_ticks(15)
    eq(a.stop(), 0, "exit")
    rows = sql(a.db, "SELECT tier_ms, sum(n), min(min), max(max), count(*) FROM rollups"
               " WHERE entity = 'host' AND metric = 'cpu_busy_pct' GROUP BY tier_ms")
    eq(sorted(r[0] for r in rows), [60000, 3600000], "both tiers")
    # every interval between two ticks, except one too short to see the host's CPU
    # counters move (/proc/stat counts in 10 ms steps): the SIGTERM tick right after a
    # regular one, or on a busy machine a late tick and the timer's next, on time: no
    # busy % for it, not 0.  The stored host rows say which intervals those were.
    cpu = sql(a.db, "SELECT cpu_user_ms + cpu_nice_ms + cpu_system_ms + cpu_irq_ms"
              " + cpu_softirq_ms + cpu_steal_ms + cpu_idle_ms + cpu_iowait_ms"
              " FROM host_samples ORDER BY ts_ms, seq")
    moved = sum(1 for (c0,), (c1,) in zip(cpu, cpu[1:]) if c1 > c0)
    check(moved >= len(cpu) // 2, "the host's CPU counters moved in %d of %d intervals"
          % (moved, len(cpu) - 1))
    for tier, n, lo, hi, _ in rows:
        eq(n, moved, "tier %d: a busy %% for every interval in which the host's CPU counters"
           " moved (of %d)" % (tier, len(cpu) - 1))
        check(0 <= lo <= hi <= 100, "cpu busy in 0..100: %r..%r" % (lo, hi))
    mem = sql(a.db, "SELECT min, avg, max FROM rollups WHERE metric = 'mem_used_bytes'"
              " AND tier_ms = 3600000")
    check(mem and all(r[0] <= r[1] <= r[2] for r in mem), "min <= avg <= max: %r" % mem)


def test_unprivileged_marks_missing(wd):
    """As nobody: root's process I/O cannot be read and is null, never 0."""
    if os.getuid() != 0:
        return
    d = wd.join("nobody")
    os.mkdir(d)
    shutil.chown(d, "nobody")
    os.chmod(wd.path, 0o755)
    log = os.path.join(d, "agent.log")
    errf = open(log, "w")
    proc = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                             os.environ["JOBSCOPE"], "agent",
                             "--db", os.path.join(d, "agent.db"), "--interval", "100ms",
                             "--listen", "127.0.0.1:0"], stderr=errf, stdout=subprocess.DEVNULL)
    try:
        def port():
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(log).read())
            return int(m.group(1)) if m else None
        p = wait_for(port, timeout=15, what="listening line")
        import urllib.request

        def jobs():
            with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/jobs?state=running" % p,
                                        timeout=5) as r:
                return json.loads(r.read())["jobs"]
        js = wait_for(lambda: [j for j in jobs() if j["user"] == "root"], what="root's jobs")
        # the agent runs as nobody: root's /proc/PID/io is unreadable
        check(all(j["usage"]["read_bytes"] is None for j in js),
              "root's I/O is null, never 0, for nobody: %r" % [j["usage"] for j in js])
    finally:
        proc.terminate()
        rc = proc.wait(timeout=20)
        errf.close()
        eq(rc, 0, "agent as nobody exits 0 (its stderr: %r)" % open(log).read()[-4000:])


def mapped_libraries(pid):
    with open("/proc/%d/maps" % pid) as f:
        return {os.path.basename(line.split()[5]) for line in f
                if len(line.split()) >= 6 and ".so" in line.split()[5]}


def test_maps_no_drawing_or_client_library(wd):
    """A node's agent maps neither cairo (and X11, fontconfig, png...) nor
    libcurl (and its TLS libraries); with --head it loads libcurl."""
    a = Agent(wd, interval="100ms")
    try:
        a.wait_ticks(2)
        libs = mapped_libraries(a.proc.pid)
        check(any(l.startswith("libsqlite3") for l in libs), "sqlite is mapped: %r" % libs)
        for name in ("libcairo", "libX11", "libxcb", "libfontconfig", "libpng", "libpixman",
                     "libcurl", "libssl", "libcrypto", "libkrb5", "libldap"):
            check(not any(l.startswith(name) for l in libs),
                  "%s not mapped without a plot or a head: %r" % (name, sorted(libs)))
    finally:
        a.stop()
    # nothing listens there: the sender retries, libcurl is loaded all the same
    b = Agent(wd, interval="100ms", db=wd.join("head.db"), name="with-head",
              extra=["--head", "http://127.0.0.1:9"])
    try:
        b.wait_ticks(1)
        libs = mapped_libraries(b.proc.pid)
        check(any(l.startswith("libcurl") for l in libs), "libcurl mapped with --head")
        check(not any(l.startswith("libcairo") for l in libs), "still no cairo")
    finally:
        b.stop()


def test_full_disk(wd):
    """A full disk: ticks are counted lost, the endpoints go on, nothing crashes."""
    mnt = wd.join("mnt")
    os.mkdir(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt]).returncode != 0:
        print("SKIP: cannot mount a tmpfs here (needs root)")
        return
    try:
        a = Agent(wd, interval="100ms", db=os.path.join(mnt, "agent.db"))
        try:
            a.wait_ticks(3)
            fill = os.path.join(mnt, "fill")
            subprocess.run(["dd", "if=/dev/zero", "of=" + fill, "bs=64k"],
                           stderr=subprocess.DEVNULL)
            wait_for(lambda: a.json("/api/v1/node")["agent"]["lost_ticks"] > 0,
                     what="lost ticks on a full disk")
            m = a.metrics()
            check(m[("jobscope_agent_lost_ticks_total", frozenset())] > 0, "lost ticks metric")
            os.unlink(fill)
            lost = a.json("/api/v1/node")["agent"]["lost_ticks"]
            stored = sql(a.db, "SELECT count(*) FROM host_samples")[0][0]
            wait_for(lambda: sql(a.db, "SELECT count(*) FROM host_samples")[0][0] > stored + 2,
                     what="storing again once there is room")
            check(a.json("/api/v1/node")["agent"]["lost_ticks"] <= lost + 1, "no more losses")
            check("cannot store the samples of a tick" in a.stderr(), "warned")
        finally:
            eq(a.stop(), 0, "exit status after a full disk")
        eq(sql(a.db, "PRAGMA integrity_check")[0][0], "ok", "integrity")
    finally:
        subprocess.run(["umount", "-l", mnt])


def test_gpu_job_share(wd):
    """A job's process on a (fake) GPU: its memory and SM share per job in /metrics."""
    nvml = os.path.join(FAKES, "libnvidia-ml.so.1")
    pidfile = wd.join("pid")
    scn = wd.join("gpu.scn")
    with open(scn, "w") as f:
        f.write("""driver 535.104.05
device 0 uuid=GPU-00000000-0000-0000-0000-000000000000 name="NVIDIA A100-SXM4-80GB" bus=00000000:07:00.0 mem_total=85899345920 power_limit=400000 nvlinks=0
at 0 0 util=60 mem_used=12884901888 power=200000 temp=61
proc 0 pid=file:%s mem=8589934592 sm=80
proc 0 pid=1 mem=2147483648 sm=20
""" % pidfile)
    env = env_with(JOBSCOPE_NVML_LIBRARY=nvml, JOBSCOPE_ROCM_SMI_LIBRARY="/nonexistent",
                   FAKE_GPU_SCENARIO=scn)
    a = Agent(wd, interval="100ms", env=env)
    try:
        # a sleeping job that stays while its figures are read (the fake GPU gives it
        # its share whatever it does), killed after
        job = spawn(["sh", "-c", "echo $$ > %s; exec %s --sleep 60" % (pidfile, helper("busy"))],
                    env=env_with(SLURM_JOB_ID=904, SLURM_CPUS_ON_NODE=1,
                                 SLURM_JOB_GPUS="0"))
        lab = ("job_id", "904")

        def gpu_mem():
            m = a.metrics()
            return [v for (n, l), v in m.items()
                    if n == "jobscope_job_gpu_memory_bytes" and lab in l]
        eq(wait_for(gpu_mem, what="the job's GPU memory"), [8.0 * GiB], "job GPU memory")

        def sm_share():  # the driver's utilization samples may come a tick after its memory
            return [v for (n, l), v in a.metrics().items()
                    if n == "jobscope_job_gpu_sm_utilization_percent" and lab in l]
        eq(wait_for(sm_share, what="the job's SM share"), [80.0], "job SM share")
        m = a.metrics()
        eq([v for (n, l), v in m.items() if n == "jobscope_gpu_utilization_percent"], [60.0],
           "device util")
        eq(job_series(m, "jobscope_job_reserved_gpus", "904"), [1.0], "reserved GPUs")
        g = a.json("/api/v1/gpus")["gpus"][0]
        check(any(k.startswith("slurm:904:") for k in g["jobs"]), "GPU lists the job")
        job.kill()
        settle(job)
        wait_job_end(a.db, "slurm", "904")
    finally:
        a.stop()
    rep = report_json(a.db, "slurm:904")
    eq(rep["reservation"]["gpus"], 1, "reserved 1 GPU")
    eq(rep["reservation"]["gpus_used"], 1, "used 1 GPU")
    eq(len(rep["gpus"]), 1, "report GPU section")


run_tests(globals())
