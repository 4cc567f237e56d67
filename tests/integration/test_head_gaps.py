"""A head away for longer than the agent's raw retention.

An agent streams to a head; the head is killed and stays away longer than
the agent's raw retention (2 s), then comes back.  Retention must not have
deleted a row the head did not hold: every row the agent wrote reaches the
head (per table, the rows of the outage by count and checksum, and in all
the head holds exactly one row per seq the agent used).

With a size cap too small for the outage, the cap deletes rows the head
never got: the loss is counted at both ends (the agent's /api/v1/node and
/metrics, the head's /clients), the head holds exactly every other row, and
the gap shows in the session export and in the report of a job that ran
through it.
"""
import json
import os
import re
import signal
import subprocess
import time
import urllib.request

from harness import jobscope, run_tests, check, eq, scaled, wait_for
from agent_harness import env_with, spawn
from head_harness import (COMPARE, Head, node_id, start_agent, stop_agent, sql, store_exists,
                          StoreError, rows_digest, get_metrics, proc_samples)

# every table keyed by seq, and how a head finds a node's rows in it
FACTS = {
    "host_samples": "node_id = :n",
    "cpu_samples": "node_id = :n",
    "disk_samples": "node_id = :n",
    "net_samples": "node_id = :n",
    "proc_samples": "proc_id IN (SELECT id FROM procs WHERE node_id = :n)",
    "job_samples": "job_id IN (SELECT id FROM jobs WHERE node_id = :n)",
    "events": "node_id = :n OR job_id IN (SELECT id FROM jobs WHERE node_id = :n)",
    "marks": "job_id IN (SELECT id FROM jobs WHERE node_id = :n)",
    "gpu_samples": "device_id IN (SELECT id FROM devices WHERE node_id = :n)",
    "gpu_proc_samples": "device_id IN (SELECT id FROM devices WHERE node_id = :n)",
    "fs_samples": "node_id = :n",
    "app_samples": "job_id IN (SELECT id FROM jobs WHERE node_id = :n)",
    "energy_samples": "node_id = :n",
    "proc_libs": "proc_id IN (SELECT id FROM procs WHERE node_id = :n)",
}


# An agent's store starts at about 300K (its tables and indexes) and grows by about
# 8K a second here (a tick every 100 ms, the few processes of the test's own pid
# namespace): the cap is passed some 10 s after the head leaves, not 40 s as at 600K.
SIZE_CAP = "400K"


def can_unshare():
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return False
    return True


def head_rows(head_db, host, table, extra="", args=()):
    nid = node_id(head_db, host)
    where = FACTS[table].replace(":n", str(nid))
    source = proc_samples(head_db) if table == "proc_samples" else table  # with the sets'
    return sql(head_db, "SELECT count(*) FROM %s WHERE (%s) %s" % (source, where, extra),
               *args)[0][0]


def head_fact_rows(head_db, host):
    return sum(head_rows(head_db, host, t) for t in FACTS)


def max_seq(agent_db):
    return sql(agent_db, "SELECT max(s) FROM (%s)" % " UNION ALL ".join(
        "SELECT max(seq) AS s FROM %s" % t for t in list(FACTS) + ["gaps"]))[0][0]


def held(head_db, agent_db):
    """Whether the head holds every seq of the agent, gap records included."""
    try:
        aid = sql(agent_db, "SELECT value FROM meta WHERE key = 'agent_id'")
        cur = aid and sql(head_db, "SELECT acked_seq FROM agents WHERE agent_id = ?", aid[0][0])
        return bool(cur) and cur[0][0] >= (max_seq(agent_db) or 0)
    except StoreError:
        return False  # a store still being created


def caught_up(head_db, agent_db):
    """A predicate for wait_for: whether the head holds every seq the agent had used when
    the predicate first read its store (gap records included), so that an agent still
    sampling (a tick every 100 ms) does not move the mark while the head catches up."""
    mark = []

    def pred():
        try:
            if not mark:
                aid = sql(agent_db, "SELECT value FROM meta WHERE key = 'agent_id'")
                if not aid:
                    return False
                mark.append((aid[0][0], max_seq(agent_db) or 0))
            aid, top = mark[0]
            cur = sql(head_db, "SELECT acked_seq FROM agents WHERE agent_id = ?", aid)
            return bool(cur) and cur[0][0] >= top
        except StoreError:
            return False  # a store still being created
    return pred


def store_bytes(agent_db):
    """The pages in use in an agent's store, in bytes (what its size cap counts)."""
    return sql(agent_db, "SELECT (p.page_count - f.freelist_count) * s.page_size FROM"
                         " pragma_page_count() p, pragma_freelist_count() f,"
                         " pragma_page_size() s")[0][0]


def host_rows(db, where="", *args):
    return sql(db, "SELECT count(*) FROM host_samples %s" % where, *args)[0][0]


def digest(db, table, where, args):
    source = proc_samples(db) if table == "proc_samples" else table  # a head's: the sets'
    return rows_digest(sql(db, "SELECT %s FROM %s WHERE %s" % (COMPARE[table], source, where),
                           *args))


def agent_port(log):
    m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(log).read())
    return int(m.group(1)) if m else None


def get_json(url):
    with urllib.request.urlopen(url, timeout=scaled(5)) as r:
        return json.loads(r.read())


def test_head_away_longer_than_retention(wd):
    if not can_unshare():
        return
    head = Head(wd)
    proc, adb, log, errf = start_agent(wd, head, "node-r", extra=["--retention-raw", "2s"])
    try:
        up = caught_up(head.db, adb)
        wait_for(lambda: store_exists(head.db) and up() and
                 sql(head.db, "SELECT count(*) FROM agents")[0][0] == 1, timeout=60,
                 what="the agent streaming")
        # the head killed in the middle of a stream: its rows are arriving
        nid = node_id(head.db, "node-r")
        wait_for(lambda: host_rows(head.db, "WHERE node_id = ?", nid) >= 5, timeout=20,
                 what="5 ticks at the head")
        port = head.port
        t_kill = int(time.time() * 1000)
        eq(head.kill(signal.SIGKILL), -signal.SIGKILL, "head killed")

        # away twice the raw retention and more (the agent runs a retention step every
        # 500 ms): until the agent's oldest row is 4 s old, and it holds 25 ticks or
        # more sampled while the head was surely away (a tick in flight at either end
        # aside: 1 s off each end).  A retention that took rows the head lacks keeps
        # the oldest at 2 s: this times out.
        def away_long_enough():
            now = int(time.time() * 1000)
            oldest = sql(adb, "SELECT min(ts_ms) FROM host_samples")[0][0]
            return (now - oldest > 4000 and
                    host_rows(adb, "WHERE ts_ms BETWEEN ? AND ?", t_kill + 1000, now - 1000)
                    >= 25 and now)
        t_snap = wait_for(away_long_enough, timeout=30,
                          what="the agent to keep 4 s of rows the head lacks, with 25 ticks")
        oldest = sql(adb, "SELECT min(ts_ms) FROM host_samples")[0][0]
        check(oldest <= t_kill + 1000,
              "the agent kept what the head lacks: oldest row %.1fs old, the head left "
              "%.1fs ago" % ((t_snap - oldest) / 1000, (t_snap - t_kill) / 1000))
        # the rows sampled while the head was surely away, as the agent holds them now
        win = (t_kill + 1000, t_snap - 1000)
        want = {t: digest(adb, t, "ts_ms BETWEEN ? AND ?", win) for t in COMPARE}
        check(want["host_samples"][0] >= 25, "25 ticks or more in the window: %r"
              % (want["host_samples"],))
        head = Head(wd, port=port, name="head2")
        wait_for(caught_up(head.db, adb), timeout=30, what="the head to catch up")
        # once the head holds them, age takes the old rows as before
        wait_for(lambda: sql(adb, "SELECT min(ts_ms) FROM host_samples")[0][0] >
                 int(time.time() * 1000) - 4000, timeout=20,
                 what="the agent to age out what the head now holds")
    finally:
        eq(stop_agent(proc, errf), 0, "agent exit")
    wait_for(lambda: held(head.db, adb), timeout=30, what="the last ticks")
    eq(head.kill(signal.SIGTERM), 0, "head exit")
    nid = node_id(head.db, "node-r")
    for t in COMPARE:
        got = digest(head.db, t, "(%s) AND ts_ms BETWEEN ? AND ?" % FACTS[t].replace(
            ":n", str(nid)), win)
        eq(got, want[t], "%s sampled while the head was away: (rows, checksum) at the head"
           % t)
    # one row at the head per seq the agent ever used: not one lost, not one twice
    eq(head_fact_rows(head.db, "node-r"), max_seq(adb), "rows at the head = the agent's seqs")
    eq(sql(adb, "SELECT count(*) FROM gaps")[0][0], 0, "no gap at the agent")
    eq(sql(head.db, "SELECT count(*) FROM gaps")[0][0], 0, "no gap at the head")


def test_size_cap_loss_counted_at_both_ends(wd):
    if not can_unshare():
        return
    head = Head(wd)
    job = spawn(["sleep", "120"], env=env_with(SLURM_JOB_ID=4711))
    proc, adb, log, errf = start_agent(wd, head, "node-c",
                                       extra=["--max-db-size", SIZE_CAP,
                                              "--listen", "127.0.0.1:0"])
    try:
        url = "http://127.0.0.1:%d" % wait_for(lambda: agent_port(log), timeout=15,
                                                what="the agent's port")
        up = caught_up(head.db, adb)
        wait_for(lambda: store_exists(head.db) and up() and
                 sql(head.db, "SELECT count(*) FROM jobs WHERE job_id = '4711'")[0][0],
                 timeout=60, what="the agent streaming, with job 4711")
        r = jobscope("session", "start", "cap", "--head", head.url)
        eq(r.returncode, 0, "session start: " + r.stdout + r.stderr)
        # (the view of the first tick is rendered before the sender starts)
        node = wait_for(lambda: get_json(url + "/api/v1/node")["head"], timeout=10,
                        what="the head in /api/v1/node")
        eq((node["lost_rows"], node["gaps"], node["last_gap"]), (0, 0, None),
           "nothing lost while the head is there")
        eq(get_metrics(url)["jobscope_agent_lost_rows_total"], 0, "metric: 0 lost")
        port = head.port
        eq(head.kill(signal.SIGKILL), -signal.SIGKILL, "head killed")
        t = time.monotonic()
        print("the agent's store held %.0fK when the head left (the cap: %s)"
              % (store_bytes(adb) / 1024, SIZE_CAP))
        # the store passes the cap while the head is away: the cap takes unsent rows
        wait_for(lambda: get_json(url + "/api/v1/node")["head"]["gaps"] >= 3, timeout=90,
                 what="the size cap to delete rows the head lacks")
        print("three gap records %.1f s after the head left" % (time.monotonic() - t))
        head = Head(wd, port=port, name="head2")
        t = time.monotonic()
        wait_for(caught_up(head.db, adb), timeout=60, what="the head to catch up")
        print("the head caught up in %.1f s" % (time.monotonic() - t))
        r = jobscope("session", "stop", "cap", "--head", head.url)
        eq(r.returncode, 0, "session stop: " + r.stdout + r.stderr)
        job.kill()
        job.wait()
        node = get_json(url + "/api/v1/node")["head"]
        metrics = get_metrics(url)
    finally:
        eq(stop_agent(proc, errf), 0, "agent exit")
        if job.poll() is None:
            job.kill()
    wait_for(lambda: held(head.db, adb), timeout=30, what="the last ticks")
    # the agent: its counters, its records, its metric
    lost = sql(adb, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'lost_rows_total'")[0][0]
    ngaps = sql(adb, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'gaps_total'")[0][0]
    check(lost > 0, "rows lost: %r" % lost)
    eq(sql(adb, "SELECT sum(rows), count(*) FROM gaps")[0], (lost, ngaps),
       "the agent's gap records add up to its counter")
    check(node["lost_rows"] <= lost and node["lost_rows"] > 0,
          "/api/v1/node lost_rows %r (of %r at the end)" % (node["lost_rows"], lost))
    eq(metrics["jobscope_agent_lost_rows_total"], float(node["lost_rows"]),
       "the metric says what /api/v1/node says")
    last = node["last_gap"]
    eq(last["reason"], "size_cap", "last gap's reason")
    check(last["rows"] > 0 and last["from_ms"] <= last["to_ms"], "last gap %r" % last)
    # the head: the same records, and exactly every row that was not lost
    clients = head.get("/clients")["clients"]
    eq([(c["hostname"], c["lost_rows"], c["gaps"]) for c in clients], [("node-c", lost, ngaps)],
       "/clients counts the loss")
    eq(head_fact_rows(head.db, "node-c") + lost + ngaps, max_seq(adb),
       "head rows + rows lost + gap records = every seq the agent used")
    nid = node_id(head.db, "node-c")
    eq(sql(head.db, "SELECT sum(rows), count(*) FROM gaps WHERE node_id = ?", nid)[0],
       (lost, ngaps), "the head holds every gap record")
    # the session export: the loss in its gaps, with its rows
    r = jobscope("export", "--session", "cap", "--db", head.db)
    eq(r.returncode, 0, "export: " + r.stderr)
    gaps = [g for g in json.loads(r.stdout)["gaps"] if g["cause"] == "size_cap"]
    check(gaps, "the export shows the loss: %r" % json.loads(r.stdout)["gaps"])
    eq(sum(g["lost_rows"] for g in gaps), lost, "the export's gaps hold every lost row")
    eq(sum(g["records"] for g in gaps), ngaps, "... from every record")
    check(all(g["node"] == "node-c" and g["from_ms"] <= g["to_ms"] for g in gaps), "%r" % gaps)
    # steps that follow each other are one stretch of loss, not one gap per step
    check(len(gaps) < ngaps, "%d records merged into %d gaps" % (ngaps, len(gaps)))
    r = jobscope("report", "--session", "cap", "--db", head.db)
    eq(r.returncode, 0, "report --session: " + r.stderr)
    check("rows lost by the agent's size cap" in r.stdout, r.stdout)
    # the job that ran through it: its report says so, text and JSON
    r = jobscope("report", "--db", head.db, "--job", "slurm:4711", "--format", "json")
    eq(r.returncode, 0, "report --job: " + r.stderr)
    v = [v for v in json.loads(r.stdout)["verdicts"] if v["kind"] == "lost_rows"]
    eq(len(v), 1, "one lost_rows verdict: %r" % v)
    eq(v[0]["evidence"]["lost_rows"], lost, "the verdict's count")
    eq(v[0]["evidence"]["gap_records"], ngaps, "the verdict's records")
    check(v[0]["message"].startswith("%d rows lost by the agent's size cap between " % lost),
          v[0]["message"])
    r = jobscope("report", "--db", head.db, "--job", "slurm:4711")
    eq(r.returncode, 0, "report --job text: " + r.stderr)
    check("%d rows lost by the agent's size cap between" % lost in r.stdout, r.stdout)
    eq(head.kill(signal.SIGTERM), 0, "head exit")


run_tests(globals())
