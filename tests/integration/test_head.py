"""`jobscope head` and `jobscope agent --head`: streaming with nothing lost.

Two agents (each its own store and agent id) stream to a head on loopback.
The head is killed with SIGKILL in the middle and started again; an agent
is restarted while the head is down.  Afterwards the head holds exactly the
rows each agent sampled: per table, the same number of rows and the same
checksum over their values (ids and seq, which are each store's own, left
out), nothing lost and nothing twice.
"""
import hashlib
import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

from harness import JOBSCOPE, helper, jobscope, run_tests, check, eq, scaled, wait_for

from head_harness import (COMPARE, Head, node_id, agent_side, head_side, start_agent,
                          stop_agent, held, caught_up, sql, store_exists, skip_on_pg, head_db,
                          StoreError, get_metrics)

def host_rows(db, host=None, after_seq=0):
    """Host rows of a store: an agent's (after seq after_seq), or a head's of node host."""
    if host is None:
        return sql(db, "SELECT count(*) FROM host_samples WHERE seq > ?", after_seq)[0][0]
    return sql(db, "SELECT count(*) FROM host_samples h JOIN nodes n ON n.id = h.node_id"
                   " WHERE n.hostname = ?", host)[0][0]


def top_seq(db):
    return sql(db, "SELECT coalesce(max(seq), 0) FROM host_samples")[0][0]


def job_seen(agent_db, job_id):
    """Whether the agent has seen Slurm job job_id (a row in its store's jobs)."""
    try:
        return bool(sql(agent_db, "SELECT 1 FROM jobs WHERE scheduler = 'slurm' AND job_id = ?",
                        job_id))
    except StoreError:
        return False  # a store still being created


def test_nothing_lost_across_head_kill_and_agent_restart(wd):
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    head = Head(wd)
    a1, db1, _, e1 = start_agent(wd, head, "node-a")
    a2, db2, _, e2 = start_agent(wd, head, "node-b")
    try:
        wait_for(lambda: store_exists(head.db) and
                 len(sql(head.db, "SELECT * FROM agents")) == 2, timeout=20,
                 what="both agents streaming")
        # the head killed in the middle of a stream: each node's rows are arriving
        wait_for(lambda: all(host_rows(head.db, h) >= 5 for h in ("node-a", "node-b")),
                 timeout=20, what="5 ticks of each node at the head")
        port = head.port
        eq(head.kill(signal.SIGKILL), -signal.SIGKILL, "head killed")
        # the agents keep sampling into their stores meanwhile: the head lacks 5 ticks
        # of each (a tick is 100 ms) before node-b is stopped
        tops = [top_seq(db1), top_seq(db2)]
        wait_for(lambda: all(host_rows(db, after_seq=t) >= 5 for db, t in zip((db1, db2), tops)),
                 timeout=20, what="5 ticks in each agent's store while the head is down")
        eq(stop_agent(a2, e2), 0, "node-b stopped while the head is down")
        top2 = top_seq(db2)
        a2, db2, _, e2 = start_agent(wd, head, "node-b")
        # the restarted agent samples into the same store before the head is back
        wait_for(lambda: host_rows(db2, after_seq=top2) >= 5, timeout=20,
                 what="5 ticks of the restarted node-b while the head is down")
        head = Head(wd, port=port, name="head2")
        wait_for(caught_up(head.db, db1, db2), timeout=30,
                 what="the head to catch up after its restart")
    finally:
        eq(stop_agent(a1, e1), 0, "node-a exit")
        eq(stop_agent(a2, e2), 0, "node-b exit")
    wait_for(lambda: held(head.db, db1) and held(head.db, db2), timeout=30,
             what="the last ticks")
    eq(head.kill(signal.SIGTERM), 0, "head exit")
    for adb in (db1, db2):
        for table in COMPARE:
            a, h = agent_side(adb, table), head_side(head.db, adb, table)
            eq(h, a, "%s of %s: (rows, checksum) at the head vs the agent"
               % (table, os.path.basename(adb)))
            check(a[0] > 0 or table in ("disk_samples", "net_samples"),
                  "%s has rows" % table)
    clients = sql(head.db, "SELECT count(*) FROM agents")[0][0]
    eq(clients, 2, "two agents")
    # jobs and summaries went along
    for adb in (db1, db2):
        ended = sql(adb, "SELECT count(*) FROM job_summaries")[0][0]
        host = sql(adb, "SELECT hostname FROM nodes")[0][0]
        eq(sql(head.db, "SELECT count(*) FROM job_summaries s JOIN jobs j ON j.id = s.job_id"
                        " JOIN nodes n ON n.id = j.node_id WHERE n.hostname = ?", host)[0][0],
           ended, "job summaries of %s" % host)


FAKES = os.environ.get("FAKES", "")
SCENARIO = """driver 535.104.05
device 0 uuid=GPU-00000000-0000-0000-0000-000000000000 name="NVIDIA A100" bus=00000000:07:00.0 mem_total=85899345920 power_limit=400000 nvlinks=0
device 1 uuid=GPU-11111111-1111-1111-1111-111111111111 name="NVIDIA A100" bus=00000000:0F:00.0 mem_total=85899345920 power_limit=400000 nvlinks=0
at 0 0 util=60 mem_used=12884901888 power=200000 pcie_rx_kbps=1000 pcie_tx_kbps=500
at 0 1 util=10 mem_used=1073741824 power=80000
"""


def session(head, *args):
    r = jobscope("session", *args, "--head", head.url)
    return r.returncode, r.stdout + r.stderr


def gaps(db, host, t0, t1):
    """Time between consecutive host rows of a node in [t0, t1], ms."""
    nid = node_id(db, host)
    ts = [r[0] for r in sql(db, "SELECT ts_ms FROM host_samples WHERE node_id = ? AND"
                                " ts_ms BETWEEN ? AND ? ORDER BY ts_ms", nid, t0, t1)]
    d = sorted(b - a for a, b in zip(ts, ts[1:]))
    return d[len(d) // 2] if d else None


def test_sessions_set_intervals_survive_restart_and_export(wd):
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    scn = wd.join("gpu.scn")
    with open(scn, "w") as f:
        f.write(SCENARIO)
    os.environ.update({"JOBSCOPE_NVML_LIBRARY": os.path.join(FAKES, "libnvidia-ml.so.1"),
                       "FAKE_GPU_SCENARIO": scn})
    head = Head(wd)
    agents = [start_agent(wd, head, n, extra=["--interval", "1s"]) for n in ("node-a", "node-b")]
    try:
        wait_for(lambda: store_exists(head.db) and
                 len(sql(head.db, "SELECT * FROM agents")) == 2, timeout=20,
                 what="both agents streaming")
        rc, out = session(head, "start", "s1", "--interval", "200ms")
        eq(rc, 0, "start s1: " + out)
        rc, out = session(head, "start", "s1")
        eq(rc, 1, "s1 twice is refused: " + out)
        check("already active" in out, out)
        rc, out = session(head, "start", "s2", "--interval", "100ms", "--nodes", "node-a")
        eq(rc, 0, "start s2: " + out)
        check("no agent" not in out, "node-a streams here: no warning: " + out)
        # a node no agent of the head is on: started, and said at once
        rc, out = session(head, "start", "s9", "--nodes", "node-a,nosuchnode")
        eq(rc, 0, "start s9: " + out)
        check("no agent of node nosuchnode streams to this head: it will send nothing" in out,
              out)
        rc, out = session(head, "stop", "s9")
        eq(rc, 0, "stop s9: " + out)
        s2_start = sql(head.db, "SELECT start_ms FROM sessions WHERE name = 's2'")[0][0]

        def rows_since(host, ms):
            return sql(head.db, "SELECT count(*) FROM host_samples h JOIN nodes n"
                       " ON n.id = h.node_id WHERE n.hostname = ? AND ts_ms >= ?", host, ms)[0][0]
        # ticks in the window checked below (from a tick or so after s2 began, when
        # the agents have heard of the sessions): node-a at 100 ms, node-b at 200 ms
        wait_for(lambda: rows_since("node-a", s2_start + 1500) >= 10 and
                 rows_since("node-b", s2_start + 1500) >= 5, timeout=30,
                 what="node-a's and node-b's ticks at the sessions' intervals")
        port = head.port
        eq(head.kill(signal.SIGKILL), -signal.SIGKILL, "head killed in the middle")
        head = Head(wd, port=port, name="head2")
        t_restart = int(time.time() * 1000)
        rc, out = session(head, "list", "--json")
        listed = json.loads(out)
        eq(listed["active_sessions"], 2, "both sessions survived the restart: %r" % listed)
        # the sessions' intervals go on after the restart (the window spans it)
        wait_for(lambda: rows_since("node-a", t_restart) >= 10 and
                 rows_since("node-b", t_restart) >= 5, timeout=30,
                 what="node-a's and node-b's ticks after the head's restart")
        rc, out = session(head, "stop", "s2")
        eq(rc, 0, "stop s2 by name: " + out)
        s2_end = sql(head.db, "SELECT end_ms FROM sessions WHERE name = 's2'")[0][0]
        # s1 alone a while: node-a's ticks go on after s2's end
        wait_for(lambda: rows_since("node-a", s2_end + 500) >= 3, timeout=30,
                 what="node-a's ticks after s2 stopped")
        rc, out = session(head, "stop")
        eq(rc, 0, "stop the rest: " + out)
        s1_end = sql(head.db, "SELECT end_ms FROM sessions WHERE name = 's1'")[0][0]
        # back to 1 s: three ticks (two gaps) in the window checked below
        wait_for(lambda: rows_since("node-a", s1_end + 2000) >= 3, timeout=30,
                 what="three ticks of node-a from 2 s after the sessions' end")
        t_stop = int(time.time() * 1000)
    finally:
        for proc, _, _, errf in agents:
            eq(stop_agent(proc, errf), 0, "agent exit")
        del os.environ["JOBSCOPE_NVML_LIBRARY"], os.environ["FAKE_GPU_SCENARIO"]
    dbs = [a[1] for a in agents]
    wait_for(lambda: all(held(head.db, d) for d in dbs), timeout=30, what="the head current")
    eq(head.kill(signal.SIGTERM), 0, "head exit")
    s1 = sql(head.db, "SELECT start_ms, end_ms FROM sessions WHERE name = 's1'")[0]
    s2 = sql(head.db, "SELECT start_ms, end_ms FROM sessions WHERE name = 's2'")[0]
    # the agents sampled at the sessions' intervals (after a tick or so to hear of them)
    g = gaps(head.db, "node-a", s2[0] + 1500, s2[1])
    check(g is not None and g <= 150, "node-a at 100ms during s2: median gap %r" % g)
    g = gaps(head.db, "node-b", s2[0] + 1500, s2[1])
    check(g is not None and 150 <= g <= 300, "node-b at 200ms during s1 only: %r" % g)
    g = gaps(head.db, "node-a", s1[1] + 2000, t_stop)
    check(g is not None and g >= 900, "back to 1s after: %r" % g)
    # the export: every sample of every node in s1's window, GPUs and host figures
    r = jobscope("export", "--session", "s1", "--db", head.db)
    eq(r.returncode, 0, "export: " + r.stderr)
    exp = json.loads(r.stdout)
    want = sql(head.db, "SELECT count(*) FROM host_samples WHERE ts_ms BETWEEN ? AND ?", *s1)[0][0]
    eq(exp["frame_count"], want, "a frame for every tick of every node in the window")
    eq(len(exp["frames"]), want, "frames")
    f = exp["frames"][-1]
    eq(len(f["gpu_id"]), 2, "two GPUs in each frame")
    eq(f["gpu_util"], [60, 10], "GPU util")
    eq(f["gpu_memory"], [12884901888, 1073741824], "GPU memory")
    check(f["cpu_util"] is None or 0 <= f["cpu_util"] <= 100, "host CPU %")
    check(f["mem_used"] > 0, "host memory")
    eq(sorted(exp["summary_by_node"]), ["node-a", "node-b"], "both nodes")
    eq(exp["units"]["gpu_util"], "percent, 0-100", "units named")
    r = jobscope("report", "--session", "s1", "--db", head.db)
    eq(r.returncode, 0, "report --session: " + r.stderr)
    check("jobscope session s1" in r.stdout and "node-a" in r.stdout and "node-b" in r.stdout
          and "NVIDIA A100" in r.stdout, r.stdout)
    # every tick each agent sampled in the window is a frame (the head's restart lost
    # none), and a gap is only where an agent itself sampled nothing: a busy machine
    # can stall an agent for seconds (its store's fsync on a loaded disk), and the
    # export says so truthfully
    eq(sum(sql(d, "SELECT count(*) FROM host_samples WHERE ts_ms BETWEEN ? AND ?", *s1)[0][0]
           for d in dbs), exp["frame_count"], "the agents' own ticks in s1's window")
    agent_db = dict(zip(("node-a", "node-b"), dbs))
    for g in exp["gaps"]:
        eq((g["cause"], sql(agent_db[g["node"]], "SELECT count(*) FROM host_samples WHERE"
                                                  " ts_ms > ? AND ts_ms < ?",
                            g["from_ms"], g["to_ms"])[0][0]), ("no_samples", 0),
           "a gap of the export where the agent sampled (cause, its rows): %r" % g)
    if exp["gaps"]:
        print("the agents stalled (no tick) in s1: %r" % exp["gaps"])
    r = jobscope("export", "--session", "s2", "--db", head.db, "--format", "csv")
    eq(r.returncode, 0, "csv: " + r.stderr)
    rows = r.stdout.strip().splitlines()
    want2 = sql(head.db, "SELECT count(*) FROM host_samples h JOIN nodes n ON n.id = h.node_id"
                         " WHERE n.hostname = 'node-a' AND ts_ms BETWEEN ? AND ?", *s2)[0][0]
    eq(len(rows) - 1, 2 * want2, "csv: a row per frame and GPU, node-a only")
    check(all(",node-a," in row for row in rows[1:]), "only node-a")


def test_read_endpoints(wd):
    """/status, /clients, /metrics/latest, /metrics and the /api/v1 queries."""
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    read = wd.join("read-token")
    with open(read, "w") as f:
        f.write("reader\n")
    scn = wd.join("gpu.scn")
    with open(scn, "w") as f:
        f.write(SCENARIO)
    os.environ.update({"JOBSCOPE_NVML_LIBRARY": os.path.join(FAKES, "libnvidia-ml.so.1"),
                       "FAKE_GPU_SCENARIO": scn})
    head = Head(wd)
    head.proc.kill()
    head.proc.wait()
    head.errf.close()
    args = [JOBSCOPE, "head", "--db", head.db, "--listen", "127.0.0.1:0",
            "--read-token-file", read]
    errf = open(wd.join("head-r.log"), "w")
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=errf)

    def port():
        m = re.findall(r"listening on 127\.0\.0\.1:(\d+)", open(wd.join("head-r.log")).read())
        return int(m[-1]) if m else None
    head.port = wait_for(port, what="listening")
    head.url = "http://127.0.0.1:%d" % head.port
    agent, adb, _, aerr = start_agent(wd, head, "node-q")
    try:
        job = subprocess.Popen(["sleep", "60"], env=dict(os.environ, SLURM_JOB_ID="4242",
                                                         SLURM_CPUS_ON_NODE="1"))
        # the job ends once the agent has seen it
        try:
            wait_for(lambda: os.path.exists(adb) and job_seen(adb, "4242"), timeout=20,
                     what="job 4242 seen by the agent")
        finally:
            job.kill()
            job.wait()
        wait_for(caught_up(head.db, adb), timeout=20, what="rows at the head")

        def get(path, token="reader"):
            req = urllib.request.Request(head.url + path)
            if token:
                req.add_header("Authorization", "Bearer " + token)
            try:
                with urllib.request.urlopen(req, timeout=scaled(5)) as r:
                    return r.status, r.headers.get("Content-Type"), r.read().decode()
            except urllib.error.HTTPError as e:
                return e.code, e.headers.get("Content-Type"), e.read().decode()
        eq(get("/api/v1/nodes", token=None)[0], 401, "reads need the read token")
        eq(get("/api/v1/nodes", token="nope")[0], 403, "a wrong one is refused")
        # healthy, connected: the head heard from the agent within 3 of its intervals
        # (300 ms), which a busy machine stretches at times; asked until it says so
        def nodes_healthy():
            st, _, body = get("/api/v1/nodes")
            eq(st, 200, body)
            nodes = json.loads(body)["nodes"]
            return nodes if nodes and all(n["healthy"] for n in nodes) else None
        nodes = wait_for(nodes_healthy, timeout=20, what="the node healthy at the head")
        eq([n["node"] for n in nodes], ["node-q"], "nodes")
        eq(nodes[0]["gpus"], 2, "two GPUs")
        gpus = json.loads(get("/api/v1/gpus")[2])["gpus"]
        eq([(g["index"], g["util_pct"]) for g in gpus], [(0, 60), (1, 10)], "GPUs now")
        status = wait_for(lambda: [st for st in [json.loads(get("/status")[2])]
                                   if st["connected_clients"]], timeout=20,
                          what="a connected client in /status")[0]
        eq(status["is_profiling"], False, "not profiling")
        eq(len(status["connected_clients"]), 1, "one connected client")
        # gswarm's shapes (docs/gswarm.md): gpu_info by client, total_gpus
        client = status["connected_clients"][0]
        eq(status["total_gpus"], 2, "its GPUs")
        eq([(g["id"], g["physical_idx"], g["hostname"]) for g in status["gpu_info"][client]],
           [("node-q:%d:%s" % (i, gpus[i]["name"]), i, "node-q") for i in (0, 1)],
           "gpu_info[client]")
        eq((status["freq"], status["output_filename"], status["frame_id_counter"]),
           (100, "", 0), "freq (the agent's interval), no session file, no frame")
        # client_data holds the clients connected when it is asked (heard from within 3
        # of their intervals), as /status: asked until it holds this one again
        latest = wait_for(lambda: [l for l in [json.loads(get("/metrics/latest")[2])]
                                   if client in l["client_data"]], timeout=20,
                          what="the client in /metrics/latest's client_data")[0]
        check("timestamp" in latest and latest["nodes"][0]["node"] == "node-q", "latest")
        mine = latest["client_data"][client]
        eq([(m["physical_idx"], m["gpu_util"]) for m in mine["gpus_metrics"]],
           [(0, 0.6), (1, 0.1)], "client_data: utilization as gswarm's fractions")
        st, ctype, text = get("/metrics")
        eq(ctype, "text/plain; version=0.0.4; charset=utf-8", "Prometheus content type")
        check('jobscope_gpu_utilization_percent{node="node-q",gpu="0"' in text, text[:300])
        # the CPU modes, made from a host row's raw counters: user + nice and
        # system + irq + softirq of one of node-q's rows at the head, in seconds
        def series_value(name):
            m = re.search(r'^%s\{node="node-q"\} (\S+)$' % re.escape(name), text, re.M)
            check(m, "%s for node-q in /metrics" % name)
            return float(m.group(1))
        rows = sql(head.db, "SELECT cpu_user_ms + cpu_nice_ms,"
                   " cpu_system_ms + cpu_irq_ms + cpu_softirq_ms, cpu_idle_ms"
                   " FROM host_samples h JOIN nodes n ON n.id = h.node_id"
                   " WHERE n.hostname = 'node-q'")
        got = (series_value("jobscope_node_cpu_user_seconds_total"),
               series_value("jobscope_node_cpu_system_seconds_total"),
               series_value("jobscope_node_cpu_idle_seconds_total"))
        # each family is its own query of the latest row: a tick may land between two, so
        # each value is checked against the rows on its own
        for k, what in enumerate(("user + nice", "system + irq + softirq", "idle")):
            check(any(abs(got[k] - r[k] / 1000.0) < 1e-9 for r in rows),
                  "CPU %s seconds %r: a host row's, in seconds (last rows: %r)" %
                  (what, got[k], rows[-3:]))
        # healthy: it sent within 3 of its intervals (300 ms) of the read; on a loaded
        # machine one read may fall in a longer pause: read again until one does not
        wait_for(lambda: re.search(r'^jobscope_head_agent_healthy\{node="node-q"\} 1$',
                                   get("/metrics")[2], re.M), timeout=20,
                 what="node-q healthy in /metrics")
        if os.path.exists("/usr/bin/promtool"):
            p = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                               capture_output=True)
            check(p.returncode in (0, 3), "promtool: %s" % p.stdout + p.stderr)
        # the agent goes on streaming: the head holds n0 rows before the answer, n1 after
        n0 = sql(head.db, "SELECT count(*) FROM host_samples")[0][0]
        series = json.loads(get("/api/v1/series?node=node-q&metric=load1_milli&since=1h")[2])
        n1 = sql(head.db, "SELECT count(*) FROM host_samples")[0][0]
        check(n0 <= len(series["points"]) <= n1,
              "every sample of the series: %d points, %d..%d rows" % (len(series["points"]), n0, n1))
        g0 = json.loads(get("/api/v1/series?node=node-q&metric=util_pct&gpu=0")[2])
        check(g0["points"] and all(p["value"] == 60 for p in g0["points"]), "GPU series")
        eq(get("/api/v1/series?node=node-q&metric=x;drop")[0], 400, "unknown metric")
        eq(get("/api/v1/jobs?since=yesterday")[0], 400, "bad since")
        def job4242():
            # ended at the head: the agent may see the end a tick after the
            # rows held above, and the summary comes in the batch of the end
            jobs = json.loads(get("/api/v1/jobs?node=node-q&user=root")[2])["jobs"]
            return [j for j in jobs if j["job_id"] == "4242" and j["end_ms"] is not None]
        j = wait_for(job4242, timeout=15, what="job 4242 ended at the head")[0]
        eq(j["scheduler"], "slurm", "scheduler")
        one = json.loads(get("/api/v1/jobs/" + j["key"])[2])
        eq(one["job"]["job_id"], "4242", "one job by key")
        check(one["summary"] is not None and "cpu" in one["summary"], "with its summary")
        eq(get("/api/v1/jobs/slurm:999999")[0], 404, "no such job")
        eq(get("/api/v1/sessions/none")[0], 404, "no such session")
        def clients():
            r = jobscope("clients", "--head", head.url, "--token-file", read)
            eq(r.returncode, 0, r.stderr)
            return r if "node-q" in r.stdout and "yes" in r.stdout else None
        wait_for(clients, timeout=20, what="`jobscope clients` to list node-q healthy")
        r = jobscope("status", "--head", head.url, "--token-file", read)
        eq(r.returncode, 0, r.stderr)
        check("not profiling" in r.stdout and "node-q" in r.stdout, r.stdout)
        r = jobscope("status", "--head", head.url)
        eq(r.returncode, 1, "no token: refused")
        check("401" in r.stderr, r.stderr)
    finally:
        eq(stop_agent(agent, aerr), 0, "agent exit")
        proc.terminate()
        proc.wait(timeout=20)
        errf.close()
        del os.environ["JOBSCOPE_NVML_LIBRARY"], os.environ["FAKE_GPU_SCENARIO"]


JOB_FIELDS = ["key", "node", "scheduler", "job_id", "name", "sluid", "user", "command", "start_ms",
              "end_ms", "state", "reservation_source", "reserved_cpus", "reserved_mem_bytes",
              "reserved_gpus", "cpu_ms", "cpu_efficiency_pct", "rss_peak_bytes",
              "mem_efficiency_pct", "gpus_used", "gpu_util_avg_pct", "gpu_energy_mj",
              "sm_active_avg_pct", "sm_occupancy_avg_pct", "tensor_active_avg_pct",
              "dram_active_avg_pct", "fp64_active_avg_pct", "fp32_active_avg_pct",
              "fp16_active_avg_pct", "throttle_power_s", "throttle_thermal_s", "use"]
USE_FIELDS = ["ts_ms", "cpu_ms", "cores", "cpu_efficiency_pct", "rss_bytes", "gpu_util_pct"]


def stored_jobs(db, where="", args=()):
    """The head's jobs (not sessions) as /api/v1/jobs lists them, from SQL, in its order."""
    rows = sql(db, "SELECT j.scheduler || ':' || j.job_id || ':' || j.start_ms, n.hostname,"
               " j.scheduler, j.job_id, j.name, j.sluid, j.\"user\", j.command, j.start_ms, j.end_ms,"
               " CASE WHEN j.end_ms IS NULL THEN 'running' ELSE 'ended' END,"
               " j.reservation_source, round(j.reserved_cpus, 3), j.reserved_mem_bytes,"
               " j.reserved_gpus, s.cpu_ms, round(s.cpu_efficiency_pct, 3), s.rss_peak_bytes,"
               " round(s.mem_efficiency_pct, 3), s.gpus_used, round(s.gpu_util_avg_pct, 3),"
               " s.gpu_energy_mj, round(s.sm_active_avg_pct, 3), round(s.sm_occupancy_avg_pct, 3),"
               " round(s.tensor_active_avg_pct, 3), round(s.dram_active_avg_pct, 3),"
               " round(s.fp64_active_avg_pct, 3), round(s.fp32_active_avg_pct, 3),"
               " round(s.fp16_active_avg_pct, 3), round(s.throttle_power_s, 3),"
               " round(s.throttle_thermal_s, 3) FROM jobs j JOIN nodes n ON n.id = j.node_id"
               " LEFT JOIN job_summaries s ON s.job_id = j.id"
               " WHERE j.scheduler <> 'session' %s ORDER BY j.start_ms DESC, j.id DESC" % where,
               *args)
    # "use" is a running job's (null once it ended: its summary has the figures)
    return [dict(zip(JOB_FIELDS, tuple(r) + (None,))) for r in rows]


def test_jobs_list_pages_and_filters(wd):
    """GET /api/v1/jobs at the head, on a store of 405 known jobs (js-mkstore) and an agent
    streaming a running job: every field as stored, state, filters, pages of 1 and 100 each
    job once in order (also while new jobs arrive), and 400 for a bad parameter."""
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    if skip_on_pg("the head's store is made beforehand by js-mkstore, a SQLite file"):
        return
    db = wd.join("head.db")
    r = subprocess.run([helper("mkstore"), "--db", db, "--scenario", "golden",
                        "--history-days", "2"], capture_output=True, text=True, timeout=120)
    eq(r.returncode, 0, "js-mkstore: %s" % r.stderr)
    head = Head(wd, db=db)
    agent = running = None

    def get(path):
        try:
            with urllib.request.urlopen(head.url + path, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def page_through(query, limit, between=None):
        jobs, cursor, cursors = [], None, set()
        while True:
            st, body = get("/api/v1/jobs?%s&limit=%d%s" % (query, limit,
                                                            "&cursor=" + cursor if cursor else ""))
            eq(st, 200, body)
            check(len(body["jobs"]) <= limit, "at most %d a page" % limit)
            jobs += body["jobs"]
            cursor = body["next"]
            if cursor is None:
                return jobs
            check(len(body["jobs"]) == limit, "only the last page is short")
            check(cursor not in cursors, "a page ends where an earlier one did: %s" % cursor)
            cursors.add(cursor)
            if between:
                between()

    def keys(jobs):
        return [j["key"] for j in jobs]

    try:
        want = stored_jobs(db)
        eq(len(want), 405, "jobs in the synthetic store")
        st, body = get("/api/v1/jobs?limit=10000")
        eq(st, 200, body)
        eq(body["next"], None, "one page holds them all")
        eq(len(body["jobs"]), 405, "jobs")
        eq(sorted(set(tuple(j) for j in body["jobs"])), [tuple(JOB_FIELDS)],
           "each job's fields, in order")
        eq(body["jobs"], want, "every job, every field, as stored, newest first")
        check(len({j["start_ms"] for j in want}) < 405, "two jobs start in the same ms")
        st, body = get("/api/v1/jobs")
        eq((len(body["jobs"]), body["jobs"], isinstance(body["next"], str)),
           (100, want[:100], True), "the default page: the newest 100")
        eq(keys(page_through("", 1)), keys(want), "limit=1: each job once, in order")
        eq(keys(page_through("state=all", 100)), keys(want), "limit=100: each job once")
        eq(keys(page_through("", 7)), keys(want), "limit=7: each job once")

        # filters, each against the same question put to SQL
        user = want[0]["user"]
        node = want[-1]["node"]
        eq(get("/api/v1/jobs?limit=10000&user=" + user)[1]["jobs"],
           stored_jobs(db, "AND j.user = ?", (user,)), "user=")
        eq(keys(page_through("node=" + node, 3)), keys(stored_jobs(db, "AND n.hostname = ?",
                                                                   (node,))), "node=, paged")
        mid = want[200]
        since, until = want[300]["end_ms"], mid["start_ms"]
        overlap = stored_jobs(db, "AND j.end_ms >= ? AND j.start_ms <= ?", (since, until))
        check(0 < len(overlap) < 405, "a window that some jobs overlap")
        eq(keys(get("/api/v1/jobs?limit=10000&since=%d&until=%d" % (since, until))[1]["jobs"]),
           keys(overlap), "since= and until= in ms")
        rfc = lambda ms: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + \
            ".%03dZ" % (ms % 1000)
        eq(keys(get("/api/v1/jobs?limit=10000&since=%s&until=%s" % (rfc(since), rfc(until)))[1]
                ["jobs"]), keys(overlap), "since= and until= in RFC 3339")
        eq(keys(page_through("user=%s&node=%s&state=ended" % (user, want[0]["node"]), 1)),
           keys(stored_jobs(db, "AND j.user = ? AND n.hostname = ?", (user, want[0]["node"]))),
           "user=, node= and state= together, paged")
        eq(get("/api/v1/jobs?state=running"), (200, {"jobs": [], "next": None}),
           "state=running: none yet")
        eq(get("/api/v1/jobs?user=nobody-here"), (200, {"jobs": [], "next": None}), "no such user")
        for q, msg in (("cursor=nope", "cursor: the \"next\" of an earlier page, as it was"),
                       ("cursor=j1.1.1x", "cursor: the \"next\" of an earlier page, as it was"),
                       ("state=done", "state: running, ended or all"),
                       ("limit=0", "limit: a whole number from 1 to 10000"),
                       ("limit=ten", "limit: a whole number from 1 to 10000"),
                       ("until=yesterday",
                        "since/until: ms since the epoch, RFC 3339, or an age (2h, 7d)"),
                       ("since=%d&until=%d" % (until, since), "since must not come after until")):
            eq(get("/api/v1/jobs?" + q), (400, {"error": msg, "status": 400}), q)

        # a running job, streamed by an agent: state running, then ended with its summary
        agent, adb, _, aerr = start_agent(wd, head, "node-j")
        running = subprocess.Popen(["sleep", "60"], env=dict(os.environ, SLURM_JOB_ID="9701"))

        def at_head(state):
            st, body = get("/api/v1/jobs?node=node-j&state=" + state)
            return [j for j in body["jobs"] if j["job_id"] == "9701"]
        j = wait_for(lambda: at_head("running"), timeout=20, what="9701 running at the head")[0]
        eq((j["state"], j["end_ms"], j["cpu_ms"], j["node"]), ("running", None, None, "node-j"),
           "the running job at the head")
        j = wait_for(lambda: [x for x in at_head("running") if x["use"]], timeout=20,
                     what="9701's use at the head")[0]
        eq(list(j["use"]), USE_FIELDS, "a running job's use: its fields")
        last = sql(db, "SELECT s.ts_ms, s.user_ms + s.system_ms, s.rss_bytes FROM job_samples s"
                   " JOIN jobs j ON j.id = s.job_id WHERE j.job_id = '9701'"
                   " ORDER BY s.ts_ms DESC LIMIT 1")[0]
        check(j["use"]["ts_ms"] <= last[0], "use: a stored row's time")
        check(j["use"]["rss_bytes"] > 0 and j["use"]["cpu_ms"] >= 0, "use: %r" % j["use"])
        eq(j["use"]["gpu_util_pct"], None, "use: no GPU process, no GPU utilization")
        eq(at_head("ended"), [], "not ended yet")
        running.kill()
        running.wait()
        j = wait_for(lambda: [x for x in at_head("ended") if x["cpu_ms"] is not None],
                     timeout=20, what="9701 ended at the head with its summary")[0]
        eq(j, stored_jobs(db, "AND n.hostname = 'node-j' AND j.job_id = '9701'")[0],
           "the ended job, as the head stored it")
        eq(at_head("running"), [], "no longer running")

        # paging while the agent streams new jobs: each job there at the start comes once
        before = keys(stored_jobs(db))
        n = [0]

        def add_job():
            n[0] += 1
            jid = "97%02d" % (n[0] + 1)
            job = subprocess.Popen(["sleep", "60"], env=dict(os.environ, SLURM_JOB_ID=jid))
            # it ends once the agent has seen it (a job it never sampled is no job)
            try:
                wait_for(lambda: job_seen(adb, jid), timeout=20,
                         what="job %s seen by the agent" % jid)
            finally:
                job.kill()
                job.wait()
            wait_for(lambda: sql(db, "SELECT 1 FROM jobs WHERE job_id = ? AND end_ms IS NOT NULL",
                                 jid), timeout=20, what="job %s at the head" % jid)
        got = keys(page_through("", 100, between=add_job))
        check(n[0] >= 4, "jobs were added while paging (%d)" % n[0])
        eq(len(got), len(set(got)), "no job twice")
        eq([k for k in got if k in set(before)], before, "every job there at the start, in order")
    finally:
        if running and running.poll() is None:
            running.kill()
            running.wait()
        if agent:
            eq(stop_agent(agent, aerr), 0, "agent exit")
        head.kill(signal.SIGTERM)


def test_tls(wd):
    """--tls-cert/--tls-key: HTTPS only; an agent trusting the CA streams, one that does not, not."""
    cert, key = wd.join("cert.pem"), wd.join("key.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1", "-addext",
                        "subjectAltName=IP:127.0.0.1"], capture_output=True)
    if r.returncode != 0:
        print("SKIP: no openssl to make a certificate")
        return
    db = head_db(wd.join("tls-head.db"))
    log = wd.join("tls-head.log")
    errf = open(log, "w")
    proc = subprocess.Popen([JOBSCOPE, "head", "--db", db, "--listen", "127.0.0.1:0",
                             "--tls-cert", cert, "--tls-key", key], stderr=errf,
                            stdout=subprocess.DEVNULL)
    try:
        def port():
            m = re.findall(r"listening on 127\.0\.0\.1:(\d+)", open(log).read())
            return int(m[-1]) if m else None
        p = wait_for(port, what="listening")
        url = "https://127.0.0.1:%d" % p
        good = subprocess.Popen([JOBSCOPE, "agent", "--db", wd.join("good.db"), "--listen",
                                 "none", "--interval", "100ms", "--head", url, "--ca-file", cert],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        bad = subprocess.Popen([JOBSCOPE, "agent", "--db", wd.join("bad.db"), "--listen", "none",
                                "--interval", "100ms", "--head", url],
                               stdout=subprocess.DEVNULL, stderr=open(wd.join("bad.log"), "w"))
        try:
            up = caught_up(db, wd.join("good.db"))
            wait_for(lambda: store_exists(db) and up(), timeout=20,
                     what="the agent that trusts the CA streams over HTTPS")
            wait_for(lambda: "certificate" in open(wd.join("bad.log")).read().lower(),
                     timeout=20, what="the other to say why it cannot stream (the certificate)")
            eq(len(sql(db, "SELECT * FROM agents")), 1, "only the trusting agent got in")
        finally:
            for a in (good, bad):
                a.terminate()
            rcs = []
            for a in (good, bad):
                try:
                    rcs.append(a.wait(timeout=20))
                except subprocess.TimeoutExpired:
                    a.kill()
                    rcs.append(a.wait())
            eq(rcs, [0, 0], "agents exit")
        r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                            "http://127.0.0.1:%d/" % p], capture_output=True, text=True)
        check(r.stdout != "200", "plain HTTP is not served: %r" % r.stdout)
    finally:
        proc.terminate()
        eq(proc.wait(timeout=20), 0, "head exit")
        errf.close()


def test_compact_under_a_live_agent(wd):
    """`jobscope compact` on the store of an agent that writes it and streams it to a
    head.  It used to delete the agent's -wal and -shm (the agent's own header check had
    dropped its lock on the file, so compact took itself for the last connection): the
    agent's shutdown then said "disk I/O error".  Now the agent keeps writing, stops
    clean, and its store holds every row: whole, as many host rows as ticks it counted,
    and the same rows as the head got."""
    import sqlite3
    import agent_harness
    head = Head(wd)
    agent = agent_harness.Agent(wd, extra=["--head", head.url])
    try:
        agent.wait_ticks(30, timeout=60)
        r = jobscope("compact", "--db", agent.db, timeout=600)  # a hang's net: under ASan beside a busy suite it took over 120 s
        eq(r.returncode, 0, "compact exit: %s" % r.stderr)
        check(re.search(r"compact: [1-9]\d* rows packed", r.stderr),
              "compact packed rows the head holds: %s" % r.stderr)
        for side in ("-wal", "-shm"):
            check(os.path.exists(agent.db + side), "the agent's %s is still there" % side)
        agent.wait_ticks(20, timeout=60)  # it keeps writing
        ticks = agent.ticks()
    finally:
        rc = agent.stop()
    eq(rc, 0, "agent exit")
    bad = [l for l in agent.stderr().splitlines()
           if re.search(r"I/O error|not closed cleanly|cannot", l)]
    eq(bad, [], "the agent's complaints")
    try:
        wait_for(lambda: held(head.db, agent.db), timeout=30, what="the head holding every row")
    finally:
        head.kill(signal.SIGTERM)
    r = jobscope("compact", "--db", agent.db, "--unpack", timeout=120)
    eq(r.returncode, 0, "unpack exit: %s" % r.stderr)
    con = sqlite3.connect(agent.db)
    try:
        eq(con.execute("PRAGMA integrity_check").fetchall(), [("ok",)], "integrity_check")
        rows = con.execute("SELECT count(*) FROM host_samples").fetchone()[0]
    finally:
        con.close()
    # the last tick at SIGTERM, and those between the last look and the signal, come on top
    check(ticks <= rows <= ticks + scaled(50), "host rows %d for %d ticks seen" % (rows, ticks))
    eq(head_side(head.db, agent.db, "host_samples"), agent_side(agent.db, "host_samples"),
       "the head's rows and the agent's")


def test_wrong_token_refused_then_healed(wd):
    """An agent whose token the head refuses (403) says so once, naming --token-file and
    the head, does not ask again for a minute (the old loop asked at 0.5, 1, 2, 4 s...),
    keeps its rows, shows it in /api/v1/node and /metrics; a right token written to its
    file heals it without a restart, and the head then holds every row."""
    import agent_harness
    head_tok, agent_tok = wd.join("head-token"), wd.join("agent-token")
    with open(head_tok, "w") as f:
        f.write("right\n")
    with open(agent_tok, "w") as f:
        f.write("wrong\n")
    head = Head(wd, token_file=head_tok)
    agent = agent_harness.Agent(wd, extra=["--head", head.url, "--token-file", agent_tok])
    try:
        def refused():
            h = agent.json("/api/v1/node")["head"]
            return h if h and h.get("refused") else None
        h = wait_for(refused, timeout=20, what="the head's refusal in /api/v1/node")
        eq(h["connected"], False, "connected while refused")
        check("--token-file" in h["last_error"] and agent_tok in h["last_error"]
              and "403" in h["last_error"], "last_error names the option: %r" % h["last_error"])
        failures = h["failures"]
        # 3 s (30 ticks) on: no request more (a retry loop would have made 3 or 4)
        agent.wait_ticks(30, timeout=60)
        h = agent.json("/api/v1/node")["head"]
        eq((h["failures"], h["refused"]), (failures, True), "requests while refused")
        m = agent.metrics()
        eq(m[("jobscope_agent_head_refused", frozenset())], 1.0, "head_refused")
        eq(m[("jobscope_agent_head_up", frozenset())], 0.0, "head_up")
        eq(m[("jobscope_agent_head_failures_total", frozenset())], float(failures), "failures")
        said = [l for l in agent.stderr().splitlines() if "refuses the token" in l]
        eq(len(said), 1, "refusal lines in the agent's log: %r" % said)
        check(head.url in said[0] and "warning" not in said[0],
              "the line names the head, as an error: %r" % said[0])
        check(top_seq(agent.db) > 0, "the agent keeps its rows meanwhile")
        # the operator fixes the file: the agent sends again well before its minute
        with open(agent_tok, "w") as f:
            f.write("right\n")
        wait_for(lambda: agent.json("/api/v1/node")["head"]["connected"], timeout=20,
                 what="the agent connected with the new token")
        wait_for(caught_up(head.db, agent.db), timeout=30, what="the head holding every row")
        h = agent.json("/api/v1/node")["head"]
        eq(h["refused"], False, "refused once healed")
        eq(agent.metrics()[("jobscope_agent_head_refused", frozenset())], 0.0, "healed metric")
        check("the token changed: trying again" in agent.stderr(), agent.stderr()[-2000:])
    finally:
        rc = agent.stop()
        head.kill(signal.SIGTERM)
    eq(rc, 0, "agent exit")
    check(held(head.db, agent.db), "the head holds every row after the agent stopped")


def test_tokens_and_bad_batches(wd):
    tok = wd.join("token")
    with open(tok, "w") as f:
        f.write("s3cret\n")
    head = Head(wd, token_file=tok)
    try:
        hello = json.dumps({"version": 1, "agent_id": "x1", "node": {"hostname": "n1"},
                            "from_seq": 0, "to_seq": 0}).encode()
        st, body = head.post("/api/v1/ingest", hello)
        eq(st, 401, "no token: %r" % body)
        st, body = head.post("/api/v1/ingest", hello, token="wrong")
        eq(st, 403, "wrong token: %r" % body)
        st, body = head.post("/api/v1/ingest", hello, token="s3cret")
        eq((st, body.get("acked_seq")), (200, 0), "hello")
        bad = [
            b"not json",
            b"[]",
            json.dumps({"version": 2}).encode(),
            json.dumps({"version": 1, "agent_id": "x1", "node": {"hostname": "n1"},
                        "from_seq": 5, "to_seq": 1}).encode(),
            json.dumps({"version": 1, "agent_id": "x1", "node": {"hostname": "n1"},
                        "from_seq": 0, "to_seq": 3, "tables": {"host_samples": {
                            "columns": ["seq", "ts_ms", "evil; DROP TABLE jobs"],
                            "rows": [[1, 2, 3]]}}}).encode(),
            json.dumps({"version": 1, "agent_id": "x1", "node": {"hostname": "n1"},
                        "from_seq": 0, "to_seq": 3, "tables": {"host_samples": {
                            "columns": ["seq", "ts_ms", "no_such_column"],
                            "rows": [[1, 2, 3]]}}}).encode(),
            json.dumps({"version": 1, "agent_id": "x1", "node": {"hostname": "n1"},
                        "from_seq": 0, "to_seq": 3, "tables": {"proc_samples": {
                            "columns": ["seq", "proc_id", "ts_ms"],
                            "rows": [[1, 99, 3]]}}}).encode(),
            json.dumps({"version": 1, "agent_id": "x1", "node": {"hostname": "n1"},
                        "from_seq": 0, "to_seq": 3, "tables": {"host_samples": {
                            "columns": ["seq", "ts_ms"], "rows": [[1, "text"]]}}}).encode(),
        ]
        for b in bad:
            st, body = head.post("/api/v1/ingest", b, token="s3cret")
            eq(st, 400, "bad batch %r -> %r" % (b[:80], body))
            check("error" in body, "JSON error")
        eq(sql(head.db, "SELECT count(*) FROM host_samples")[0][0], 0, "nothing written")
        eq(sql(head.db, "SELECT acked_seq FROM agents WHERE agent_id = 'x1'")[0][0], 0,
           "cursor unchanged")
        # malformed session calls: each a 400 with a JSON error, nothing started
        for body in [b"[", b"[]", b'{"name": 5}', b'{"name": "a\\u0001b"}', b'{"name": "a\\u0000b"}',
                     b'{"name": "\xff"}', b'{"name": "a\\u0085b"}',
                     b'{"interval_ms": 50}', b'{"interval_ms": 1.5e9}', b'{"interval_ms": "1s"}',
                     b'{"nodes": [1]}', b'{"nodes": ["a,b"]}', b'{"nodes": {"a": 1}}',
                     b'{"name": "' + b"x" * 200 + b'"}']:
            st, body_ = head.post("/profiling/start", body, token="s3cret")
            eq((st, body_.get("success")), (400, False), "start %r -> %r" % (body, body_))
        st, body_ = head.post("/profiling/start", b'{"name": "ok"}')
        eq(st, 401, "starting needs the admin token")
        eq(sql(head.db, "SELECT count(*) FROM sessions")[0][0], 0, "no session started")
        st, body_ = head.post("/profiling/stop", b'{"name": 7}', token="s3cret")
        eq(st, 400, "stop with a bad name")
        # a body over the cap is refused before it is read
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", head.port, timeout=10)
        c.putrequest("POST", "/api/v1/ingest")
        c.putheader("Content-Length", str(65 << 20))
        c.putheader("Authorization", "Bearer s3cret")
        c.endheaders()  # the body is never sent: the answer comes first
        r = c.getresponse()
        eq(r.status, 413, "too large")
        c.close()
        # a batch sent twice is taken once
        one = json.dumps({"version": 1, "agent_id": "x1", "node": {"hostname": "n1"},
                          "from_seq": 0, "to_seq": 2, "tables": {"host_samples": {
                              "columns": ["seq", "node_id", "ts_ms", "load1_milli"],
                              "rows": [[1, 7, 1000, 5], [2, 7, 2000, 6]]}}}).encode()
        for _ in range(2):
            st, body = head.post("/api/v1/ingest", one, token="s3cret")
            eq((st, body.get("acked_seq")), (200, 2), "batch taken")
        eq(sql(head.db, "SELECT count(*), sum(load1_milli) FROM host_samples")[0], (2, 11),
           "the rows once")
        # zstd bodies: taken; garbage refused; a bomb stops at the cap
        if subprocess.run(["zstd", "--version"], capture_output=True).returncode == 0:
            def zpost(raw):
                z = subprocess.run(["zstd", "-q", "-c"], input=raw, capture_output=True).stdout
                req = urllib.request.Request(head.url + "/api/v1/ingest", data=z, method="POST",
                                             headers={"Content-Type": "application/json",
                                                      "Content-Encoding": "zstd",
                                                      "Authorization": "Bearer s3cret"})
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        return r.status
                except urllib.error.HTTPError as e:
                    return e.code
            eq(zpost(hello), 200, "a zstd hello")
            eq(zpost(b"\0" * (80 << 20)), 413, "80 MiB of zeros, compressed: over the cap")
            req = urllib.request.Request(head.url + "/api/v1/ingest", data=b"not zstd",
                                         method="POST", headers={"Content-Encoding": "zstd",
                                                                 "Authorization": "Bearer s3cret"})
            try:
                urllib.request.urlopen(req, timeout=10)
                raise AssertionError("garbage zstd accepted")
            except urllib.error.HTTPError as e:
                eq(e.code, 400, "garbage zstd")
    finally:
        head.kill(signal.SIGTERM)


def test_group_commit_at_most_every_10ms(wd):
    """Batches streaming in from many agents at once go into at most one transaction
    (one fsync) every 10 ms (head/ingest.c INGEST_COMMIT_EVERY_MS): the head's own
    counters against the time this test measured around them, and every batch
    answered."""
    head = Head(wd)
    try:
        def hello(i):
            return json.dumps({"version": 1, "agent_id": "g%d" % i,
                               "node": {"hostname": "g%d" % i}, "from_seq": 0,
                               "to_seq": 0}).encode()
        answered = [0] * 16
        failed = []
        stop = threading.Event()

        def sender(i):
            c = http.client.HTTPConnection("127.0.0.1", head.port, timeout=scaled(10))
            try:
                while not stop.is_set():
                    c.request("POST", "/api/v1/ingest", body=hello(i),
                              headers={"Content-Type": "application/json"})
                    r = c.getresponse()
                    r.read()
                    if r.status != 200:
                        failed.append(r.status)
                        return
                    answered[i] += 1
            except OSError as e:
                failed.append(repr(e))
            finally:
                c.close()
        threads = [threading.Thread(target=sender, args=(i,)) for i in range(16)]
        # the window: from before the first reading of the counters to after the last
        t0 = time.monotonic()
        m0 = get_metrics(head.url)
        for t in threads:
            t.start()
        time.sleep(2.0)  # a stream for a while, not a wait for a condition
        stop.set()
        for t in threads:
            t.join()
        m1 = get_metrics(head.url)
        elapsed = time.monotonic() - t0
        b0, b1 = m0["jobscope_head_batches_total"], m1["jobscope_head_batches_total"]
        g0, g1 = m0["jobscope_head_commit_groups_total"], m1["jobscope_head_commit_groups_total"]
        eq(failed, [], "every batch answered 200")
        eq(b1 - b0, sum(answered), "batches counted: those answered")
        groups = g1 - g0
        print("%d batches in %d groups in %.2f s" % (b1 - b0, groups, elapsed))
        if b1 - b0 <= elapsed / 0.010:
            # a loaded machine (a PostgreSQL head under ASan beside two busy loops: 142
            # batches in 3.4 s) commits slower than the cap by itself: the bound holds
            # but says nothing of the rule, which an idle run shows (16 senders: 3,185
            # batches in 200 groups in 2 s; 3,583 groups without the rule)
            print("the batches came slower than the cap allows groups: the rule untested")
        check(groups <= elapsed / 0.010 + 1,
              "%d groups in %.2f s: at most one every 10 ms" % (groups, elapsed))
    finally:
        eq(head.kill(signal.SIGTERM), 0, "head exit")


run_tests(globals())
