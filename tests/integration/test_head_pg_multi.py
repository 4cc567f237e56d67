"""Several heads on one PostgreSQL database serve as one (docs/postgresql.md, Several heads).

- An agent streaming to head 2 is in head 1's /clients and /metrics/latest.
- A session started on head 1 is listed active by head 2, and an agent that
  streams to head 2 takes its interval (an `interval` event in its store);
  stopped on head 2, head 1 lists it stopped and the agent goes back.  One
  name started on both heads at once is started once.
- Two agents streaming at once, one to each head, and one of them restarted
  on the other head: every row once (the head's host_samples of each node are
  the agent's, counted and compared; every seq of the database once, though
  two heads drew them).
- The same batch sent to both heads at once, again and again: each answers
  the cursor the database holds, and the rows are applied once.
- The upkeep lease: one head holds it (both /status say which, and its log);
  killed with SIGKILL, the other takes it within the lease, and remote write
  goes on from the cursor in the database.
- A head beside one of an older jobscope (which took the database for itself)
  exits 2; a second head on one SQLite file still exits 2.
"""
import http.server
import json
import subprocess
import threading
import time
import urllib.error
import urllib.request

from harness import JOBSCOPE, jobscope, run_tests, check, eq, scaled, wait_for
import head_harness as hh
from head_harness import Head, start_agent, stop_agent, caught_up, agent_side, head_side

LEASE = "3s"


def _heads(wd, n=2, extra=()):
    """n heads on the database that stands for wd's multi.db."""
    return [Head(wd, db=wd.join("multi.db"), name="head%d" % i, backend="postgresql",
                 extra=("--lease", LEASE) + tuple(extra)) for i in range(1, n + 1)]


def _stop(heads):
    for h in heads:
        if h.proc.poll() is None:
            eq(h.kill(15), 0, "head exit")


def _sessions(head):
    return {s["name"]: s for s in head.get("/profiling/sessions")["sessions"]}


def _intervals(db, host):
    """The node's interval events' values in seq order ([] while its store is being made)."""
    try:
        return [v for (v,) in hh.sql(db, "SELECT value FROM events WHERE kind = 'interval'"
                                     " AND job_id IS NULL AND node_id = ? ORDER BY seq",
                                     hh.node_id(db, host))]
    except Exception:  # sqlite3's errors, or no nodes row yet
        return []


def _session(head, *args):
    r = jobscope("session", *args, "--head", head.url)
    eq(r.returncode, 0, "jobscope session %s: %s" % (" ".join(args), r.stdout + r.stderr))


def test_session_on_one_head_is_on_all(wd):
    h1, h2 = _heads(wd)
    agent, adb, _, errf = start_agent(wd, h2, "node-s", extra=["--interval", "1s"])
    try:
        wait_for(lambda: _intervals(adb, "node-s")[-1:] == [1000],
                 timeout=scaled(20), what="the agent's first interval")
        # head 1 never took a batch of it, and shows it live all the same
        wait_for(lambda: "node-s" in json.dumps(h1.get("/metrics/latest")["nodes"]),
                 timeout=scaled(10), what="head 1's /metrics/latest with node-s")
        eq([c["hostname"] for c in h1.get("/clients")["clients"]], ["node-s"],
           "head 1's /clients")
        _session(h1, "start", "s1", "--interval", "200ms")
        s = _sessions(h2)
        check("s1" in s and s["s1"]["active"], "head 2 lists s1 active: %r" % s)
        wait_for(lambda: _intervals(adb, "node-s")[-1:] == [200], timeout=scaled(20),
                 what="the agent (on head 2) sampling at the session's interval")
        st2 = h2.get("/status")
        check(st2["is_profiling"] and [a["name"] for a in st2["active_sessions"]] == ["s1"],
              "head 2's /status: %r" % st2["active_sessions"])
        _session(h2, "stop", "s1")
        check(not _sessions(h1)["s1"]["active"], "head 1 lists s1 stopped")
        wait_for(lambda: _intervals(adb, "node-s")[-1:] == [1000], timeout=scaled(20),
                 what="the agent back at its own interval")
        eq(_intervals(adb, "node-s")[-3:], [1000, 200, 1000], "the agent's interval events")
        # one name started on both heads at once: one of them starts it
        for k in range(30):
            out = [None, None]

            def start(i, h, name="dup%d" % k):
                out[i] = h.post("/profiling/start", json.dumps({"name": name}).encode())
            threads = [threading.Thread(target=start, args=(i, h))
                       for i, h in enumerate((h1, h2))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            eq(sorted(o[1]["success"] for o in out), [False, True], "dup%d: %r" % (k, out))
            eq(hh.sql(h1.db, "SELECT count(*) FROM sessions WHERE name = ? AND end_ms IS NULL",
                      "dup%d" % k), [(1,)], "dup%d active once" % k)
    finally:
        stop_agent(agent, errf)
        _stop([h1, h2])


def _seqs_once(db):
    """Every seq of the database's fact tables once: two heads drew them from one counter."""
    tables = ("host_samples", "cpu_samples", "proc_samples_all", "job_samples", "events")
    union = " UNION ALL ".join("SELECT seq FROM %s" % t for t in tables)
    n, d = hh.sql(db, "SELECT count(*), count(DISTINCT seq) FROM (%s) s" % union)[0]
    check(n > 0, "rows in the database")
    eq(d, n, "distinct seqs of %d fact rows" % n)


def _once(head, adb):
    for t in ("host_samples", "cpu_samples", "job_samples"):
        eq(head_side(head.db, adb, t), agent_side(adb, t), "%s of %s" % (t, adb))
    host = hh.sql(adb, "SELECT hostname FROM nodes")[0][0]
    n_agent = hh.sql(adb, "SELECT count(*) FROM host_samples")[0][0]
    n, d = hh.sql(head.db, "SELECT count(*), count(DISTINCT ts_ms) FROM host_samples h"
                  " JOIN nodes n ON n.id = h.node_id WHERE n.hostname = ?", host)[0]
    eq((n, d), (n_agent, n_agent), "host_samples of %s at the heads (rows, distinct times)"
       % host)


def test_agents_on_both_heads_land_once(wd):
    h1, h2 = _heads(wd)
    a, adb, _, aerr = start_agent(wd, h1, "node-a")
    b, bdb, _, berr = start_agent(wd, h2, "node-b")
    try:
        wait_for(lambda: hh.store_exists(adb) and hh.store_exists(bdb) and
                 hh.acked_total(h1.db) and
                 hh.sql(h1.db, "SELECT count(*) FROM agents WHERE acked_seq > 20")[0][0] == 2,
                 timeout=scaled(30), what="both agents streaming")
        # node-a moves to head 2, and resends from the cursor the database holds
        eq(stop_agent(a, aerr), 0, "agent a exit")
        seen = hh.sql(adb, "SELECT count(*) FROM host_samples")[0][0]
        a, adb, _, aerr = start_agent(wd, h2, "node-a")
        wait_for(lambda: hh.sql(adb, "SELECT count(*) FROM host_samples")[0][0] > seen + 10,
                 timeout=scaled(30), what="agent a sampling again")
        # and node-b moves to head 1
        eq(stop_agent(b, berr), 0, "agent b exit")
        b, bdb, _, berr = start_agent(wd, h1, "node-b")
        wait_for(caught_up(h1.db, adb, bdb), timeout=scaled(30), what="the heads catching up")
    finally:
        eq(stop_agent(a, aerr), 0, "agent a exit")
        eq(stop_agent(b, berr), 0, "agent b exit")
    wait_for(caught_up(h1.db, adb, bdb), timeout=scaled(30), what="the last rows")
    _stop([h1, h2])
    _once(h1, adb)
    _once(h1, bdb)
    _seqs_once(h1.db)


def _post(head, body, out, i):
    req = urllib.request.Request(head.url + "/api/v1/ingest", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=scaled(20)) as r:
            out[i] = (r.status, json.loads(r.read()).get("acked_seq"))
    except urllib.error.HTTPError as e:
        out[i] = (e.code, e.read())


def test_same_batch_raced_on_two_heads(wd):
    h1, h2 = _heads(wd)
    try:
        seq, ts = 0, 1700000000000
        for k in range(20):
            rows = [[seq + r + 1, 1, ts + (seq + r) * 100, seq + r] for r in range(50)]
            body = json.dumps({"version": 1, "agent_id": "race1", "node": {"hostname": "rn"},
                               "from_seq": seq, "to_seq": seq + 50, "tables": {
                                   "host_samples": {
                                       "columns": ["seq", "node_id", "ts_ms", "load1_milli"],
                                       "rows": rows}}}).encode()
            out = [None, None]
            threads = [threading.Thread(target=_post, args=(h, body, out, i))
                       for i, h in enumerate((h1, h2))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            seq += 50
            eq(out, [(200, seq), (200, seq)], "batch %d's answers" % k)
        eq(hh.sql(h1.db, "SELECT count(*), count(DISTINCT ts_ms), sum(load1_milli)"
                  " FROM host_samples")[0], (1000, 1000, sum(range(1000))), "the rows once")
        eq(hh.sql(h1.db, "SELECT acked_seq FROM agents WHERE agent_id = 'race1'"), [(1000,)],
           "the cursor")
    finally:
        _stop([h1, h2])


def _holder(head):
    st = head.get("/status")
    return st["upkeep_lease"], st


def test_lease_taken_over_when_holder_dies(wd):
    h1, h2 = _heads(wd, extra=("--retention", "30d"))
    try:
        wait_for(lambda: _holder(h1)[0] is not None, timeout=scaled(20),
                 what="a head holding the lease")
        holder, st1 = _holder(h1)
        eq(_holder(h2)[0], holder, "both heads name the same holder")
        ids = sorted(h["id"] for h in st1["heads"])
        eq(len(ids), 2, "head 1 knows both heads: %r" % st1["heads"])
        eq(sorted(h["id"] for h in h2.get("/status")["heads"]), ids, "head 2 knows both")
        first, other = (h1, h2) if st1["head_id"] == holder else (h2, h1)
        r = jobscope("status", "--head", other.url)
        eq(r.returncode, 0, "jobscope status: %s" % r.stderr)
        check("2 heads on this database" in r.stdout and
              "head %s at 127.0.0.1:%d, holds the upkeep lease" % (holder, first.port) in r.stdout
              and "127.0.0.1:%d, this one\n" % other.port in r.stdout, r.stdout)
        eq(_holder(other)[1]["head_id"] != holder, True, "the other head is not the holder")
        wait_for(lambda: "holds the upkeep lease" in open(first.log).read(),
                 timeout=scaled(10), what="the holder's log line")
        check("holds the upkeep lease" not in open(other.log).read(), "only the holder runs it")
        first.kill(9)
        t0 = time.monotonic()
        wait_for(lambda: _holder(other)[0] == _holder(other)[1]["head_id"],
                 timeout=scaled(3 + 6), what="the other head taking the lease over")
        took = time.monotonic() - t0
        check(took < scaled(3 + 4), "taken over in %.1f s (lease 3 s)" % took)
        wait_for(lambda: "holds the upkeep lease" in open(other.log).read(), timeout=scaled(5),
                 what="the new holder's log line")
    finally:
        _stop([h1, h2])


class _FakeWrite(http.server.BaseHTTPRequestHandler):
    """A remote-write receiver that takes every request (204) and counts them."""
    count = 0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).count += 1
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_remote_write_moves_with_the_lease(wd):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FakeWrite)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/api/v1/write" % srv.server_address[1]
    h1, h2 = _heads(wd, extra=("--remote-write", url, "--rw-batch", "1s"))
    agent = None
    try:
        wait_for(lambda: _holder(h1)[0] is not None, timeout=scaled(20),
                 what="a head holding the lease")
        holder = _holder(h1)[0]
        first, other = (h1, h2) if h1.get("/status")["head_id"] == holder else (h2, h1)
        # the agent streams to the head that does not hold the lease
        agent, adb, _, errf = start_agent(wd, other, "node-rw")

        def cursor():
            try:
                r = hh.sql(h1.db, "SELECT acked_seq FROM rw_cursors WHERE url = ?", url)
            except hh.StoreError:
                return 0
            return r[0][0] if r else 0
        wait_for(lambda: cursor() > 50, timeout=scaled(30),
                 what="the holder's remote write moving its cursor")
        check("remote write to " in open(first.log).read(), "the holder runs remote write")
        check("remote write to " not in open(other.log).read(), "the other head does not")
        first.kill(9)
        c0, n0 = cursor(), _FakeWrite.count
        wait_for(lambda: cursor() > c0 + 50 and _FakeWrite.count > n0, timeout=scaled(30),
                 what="the new holder's remote write going on from the cursor")
        check("remote write to " in open(other.log).read(), "the new holder's remote write")
    finally:
        if agent:
            stop_agent(agent, errf)
        _stop([h1, h2])
        srv.shutdown()


def test_head_of_an_older_jobscope_refused(wd):
    """An older head held key APP_ID + 1 alone (one head per database) and drew seqs of
    its own: a head of ours beside it exits 2 and says why."""
    url = hh.pg_db_for(wd.join("old.db"))
    name, key = hh._pg_name(url), 0x4A53434F + 1
    hh.pg().psql("SELECT pg_advisory_lock(%d)" % key, db=name)  # held by the harness's psql
    try:
        r = subprocess.run([JOBSCOPE, "head", "--db", url, "--listen", "127.0.0.1:0"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=scaled(30))
        eq(r.returncode, 2, "exit code beside an older head")
        check("older jobscope" in r.stderr, r.stderr)
    finally:
        hh.pg().psql("SELECT pg_advisory_unlock(%d)" % key, db=name)


def test_second_sqlite_head_exits_2(wd):
    head = Head(wd, db=wd.join("one.db"), name="one", backend="sqlite")
    try:
        r = subprocess.run([JOBSCOPE, "head", "--db", head.db, "--listen", "127.0.0.1:0"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=scaled(30))
        eq(r.returncode, 2, "exit code of a second head on the same file")
        check("one head per SQLite file" in r.stderr, r.stderr)
        check(head.proc.poll() is None, "the first head goes on")
    finally:
        eq(head.kill(15), 0, "head exit")


run_tests(globals())
