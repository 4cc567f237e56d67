"""A head on PostgreSQL whose primary dies: failover to a synchronous standby.

Two PostgreSQL 15 servers on loopback (pg_cluster.PgCluster and PgStandby): a
primary and a standby made from it by pg_basebackup -R, streaming, named in the
primary's synchronous_standby_names (a commit returns once the standby has it).
The head is given both in one libpq connection string with
target_session_attrs=read-write.  Two agents stream to it; the primary is killed
with SIGKILL mid-stream, and the standby promoted (pg_ctl promote).  The head stays
up, answers 503 while it has no database (its log and /status say why), finds the
promoted standby through the same string, and the agents, resending from what was
acknowledged, catch up: every row each agent holds is in the new primary exactly
once (host_samples: count, distinct (node, seq) and distinct (node, ts_ms) all equal
the agent's count; the compared tables' values the same).

Only this set-up is tested: one streaming standby, promoted by hand (as Patroni
would).  docs/postgresql.md says what it takes of a site.
"""
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request

from harness import JOBSCOPE, run_tests, check, eq, scaled, wait_for, wait_progress
import head_harness as hh
import pg_cluster

TABLES = ("host_samples", "cpu_samples", "proc_samples", "job_samples")


def _servers():
    """A primary and its synchronous standby, or a skip (exit 77) without PostgreSQL."""
    primary = pg_cluster.PgCluster("failover", replication=True)
    try:
        primary.start()
    except pg_cluster.PgUnavailable as e:
        print("SKIP: PostgreSQL unavailable: %s" % e.reason, flush=True)
        raise SystemExit(77)
    standby = pg_cluster.PgStandby(primary, "jobscope_standby")
    try:
        standby.start()
        primary.sync_standby("jobscope_standby")
    except Exception:
        standby.stop()
        primary.stop()
        raise
    return primary, standby


class _Head:
    """jobscope head on the URL (not head_harness.Head: its PostgreSQL is the harness's
    own server, and it reads the URL as one server's)."""

    def __init__(self, wd, url):
        self.log = wd.join("head.log")
        self.errf = open(self.log, "a")
        self.proc = subprocess.Popen([JOBSCOPE, "head", "--db", url, "--listen", "127.0.0.1:0"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self.errf, cwd=wd.path)
        self.port = wait_for(self._port, timeout=30, what="the head's listening line")
        self.url = "http://127.0.0.1:%d" % self.port

    def _port(self):
        if self.proc.poll() is not None:
            raise AssertionError("the head exited: %s" % open(self.log).read())
        text = open(self.log).read()
        at = text.rfind("head: listening on 127.0.0.1:")
        if at < 0:
            return None
        return int(text[at:].split(":")[2].split()[0])

    def status(self):
        """/status: (HTTP status, body text)."""
        try:
            with urllib.request.urlopen(self.url + "/status", timeout=scaled(10)) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=scaled(30))
        self.errf.close()
        return rc


def _q(server, query, *args):
    return server.query(query, *args)


def _acked(server, agent_db):
    """The agent's acknowledged seq in server's database (None: not there, or no server)."""
    aid = hh.sql(agent_db, "SELECT value FROM meta WHERE key = 'agent_id'")
    if not aid:
        return None
    try:
        cur = _q(server, "SELECT acked_seq FROM agents WHERE agent_id = ?", aid[0][0])
    except pg_cluster.PgError:
        return None
    return cur[0][0] if cur else None


def _caught_up(server, agent_dbs):
    """wait_for's predicate: server holds every row each agent had when first looked at
    (its highest seq of any table then: hh.caught_up, on this server)."""
    marks = {}

    def pred():
        try:
            for db in agent_dbs:
                if db not in marks:
                    marks[db] = hh.top_seq(db)
                cur = _acked(server, db)
                if cur is None or cur < marks[db]:
                    return False
        except hh.StoreError:
            return False  # an agent's store still being created
        return True
    return pred


def _holds_all(server, agent_db):
    try:
        cur = _acked(server, agent_db)
        return cur is not None and cur >= hh.top_seq(agent_db)
    except hh.StoreError:
        return False


def _head_digest(server, agent_db, table):
    """The server's rows of the agent's node in table (head_harness.head_side's)."""
    host = hh.sql(agent_db, "SELECT hostname FROM nodes")[0][0]
    nid = _q(server, "SELECT id FROM nodes WHERE hostname = ?", host)[0][0]
    if table in ("host_samples", "cpu_samples"):
        where = "WHERE node_id = %d" % nid
    elif table == "proc_samples":
        where = "WHERE proc_id IN (SELECT id FROM procs WHERE node_id = %d)" % nid
    else:
        where = "WHERE job_id IN (SELECT id FROM jobs WHERE node_id = %d)" % nid
    source = "proc_samples_all" if table == "proc_samples" else table  # with the sets'
    return hh.rows_digest(_q(server, "SELECT %s FROM %s %s" % (hh.COMPARE[table], source, where)))


def _exactly_once(server, agent_db):
    host = hh.sql(agent_db, "SELECT hostname FROM nodes")[0][0]
    n_agent = hh.sql(agent_db, "SELECT count(*) FROM host_samples")[0][0]
    check(n_agent > 0, "the agent %s stored rows" % host)
    counts = _q(server, "SELECT count(*), count(DISTINCT (h.node_id, h.seq)),"
                " count(DISTINCT (h.node_id, h.ts_ms)) FROM host_samples h JOIN nodes n"
                " ON n.id = h.node_id WHERE n.hostname = ?", host)[0]
    eq(counts, (n_agent, n_agent, n_agent),
       "host_samples of %s in the new primary: count, distinct (node, seq), distinct"
       " (node, ts_ms) against the agent's count" % host)
    for t in TABLES:
        eq(_head_digest(server, agent_db, t), hh.agent_side(agent_db, t),
           "%s of %s" % (t, host))


def test_primary_killed_standby_promoted(wd):
    primary, standby = _servers()
    head, agents = None, []
    try:
        url = ("postgresql://postgres@127.0.0.1:%d,127.0.0.1:%d/failover"
               "?target_session_attrs=read-write&connect_timeout=5"
               % (primary.port, standby.port))
        head = _Head(wd, url)
        wait_for(lambda: primary.psql("SELECT to_regclass('agents') IS NOT NULL") == [("t",)],
                 timeout=30, what="the head's tables in the primary")
        agents = [hh.start_agent(wd, head, "fonode%d" % i) for i in range(2)]
        dbs = [a[1] for a in agents]
        wait_for(_caught_up(primary, dbs), timeout=60,
                 what="the primary holding the agents' first rows")
        # mid-stream: the agents go on sampling (every 100 ms) and sending
        seen = os.path.getsize(head.log)
        before = {db: _acked(primary, db) for db in dbs}
        agent_seen = [os.path.getsize(a[2]) for a in agents]
        primary.kill9()
        # the head answers 503 and says why, in its log and /status; it stays up
        wait_for(lambda: "lost the connection" in open(head.log).read()[seen:], timeout=30,
                 what="the head's log saying it lost the database")
        code, body = wait_for(lambda: (lambda r: r if r[0] == 503 else None)(head.status()),
                              timeout=30, what="/status answering 503 without a database")
        # libpq's reason: the primary refuses, the standby is read-only
        check("the store cannot be read" in body and "connection to server at" in body, body)
        wait_for(lambda: any("HTTP 503" in open(a[2]).read()[at:]
                             for a, at in zip(agents, agent_seen)), timeout=30,
                 what="an agent's batch answered 503")
        check(head.proc.poll() is None, "the head stays up while it has no database")
        standby.promote()
        # the agents resend from what was acknowledged (after their back-off)
        try:
            wait_progress(_caught_up(standby, dbs),
                          lambda: [_acked(standby, db) for db in dbs], stall=60, cap=300,
                          what="the promoted standby holding every row")
        except AssertionError:
            raise AssertionError("the head's log: %s\nan agent's: %s"
                                 % (open(head.log).read()[-4000:],
                                    open(agents[0][2]).read()[-2000:]))
        for db in dbs:
            check(_acked(standby, db) > (before[db] or 0), "the agent of %s moved on" % db)
        check("connected again" in open(head.log).read()[seen:], open(head.log).read()[seen:])
        code, body = wait_for(lambda: (lambda r: r if r[0] == 200 else None)(head.status()),
                              timeout=30, what="/status answering 200 again")
        for proc, db, log_, errf in agents:
            eq(hh.stop_agent(proc, errf), 0, "agent exit")
        agents = []
        wait_for(lambda: all(_holds_all(standby, db) for db in dbs), timeout=30,
                 what="the agents' last ticks")
        for db in dbs:
            _exactly_once(standby, db)
        eq(head.stop(), 0, "head exit after SIGTERM")
        head = None
    finally:
        for proc, db, log_, errf in agents:
            proc.kill()
            proc.wait()
        if head is not None and head.proc.poll() is None:
            head.proc.kill()
            head.proc.wait()
        standby.stop()
        primary.stop()


run_tests(globals())
