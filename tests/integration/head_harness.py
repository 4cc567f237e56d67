"""Starting heads and agents that stream to them, and comparing their stores.

The head's store is a SQLite file by default.  With JOBSCOPE_TEST_HEAD_DB=postgresql
in the environment (the *_pg tests in tests/meson.build) every Head keeps its store in
PostgreSQL instead: one private server per test process (pg_cluster.PgCluster, started
at the first Head, stopped at exit), one database per head db path: fresh the first
time a path is used in the process, the same database when a head is started again on
that path.  Head.db is then the database's postgresql:// URL (through the server's
unix socket for a head in a network namespace of its own), and sql(), store_exists()
and the digests below read it with psql through the same SQL (write "user" quoted).
Tests that make no sense there (a corrupted or full SQLite file) call skip_on_pg().
"""
import atexit
import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

from harness import JOBSCOPE, scaled, wait_for
import agent_harness
import pg_cluster

BACKEND = os.environ.get("JOBSCOPE_TEST_HEAD_DB", "sqlite") or "sqlite"
if BACKEND not in ("sqlite", "postgresql"):
    sys.exit("JOBSCOPE_TEST_HEAD_DB=%r: sqlite or postgresql" % BACKEND)
PG = BACKEND == "postgresql"

# what a read of a store still being created raises, on either backend
StoreError = (sqlite3.OperationalError, pg_cluster.PgError)

_cluster = None
_made = set()  # databases created in this process
_checked = set()  # their URLs where a head was seen to make its tables (Head._check_pg)
_heads = []  # every Head started, so none outlives the test process


def _at_exit():
    """Heads a failed test left running are killed; then the server is stopped."""
    for h in _heads:
        if h.proc.poll() is None:
            h.proc.kill()
            h.proc.wait()
    if _cluster is not None:
        _cluster.stop()


atexit.register(_at_exit)


def pg():
    """This process's PostgreSQL server, started at the first call."""
    global _cluster
    if _cluster is None:
        c = pg_cluster.PgCluster("jobscope")
        try:
            c.start()
        except pg_cluster.PgUnavailable as e:
            # a *_pg test without PostgreSQL: meson's "skipped", with the reason
            print("SKIP: PostgreSQL unavailable: %s" % e.reason, flush=True)
            sys.exit(77)
        _cluster = c
    return _cluster


def pg_db_for(path, socket=False):
    """The URL of the database that stands for head db path (created when new); with
    socket, through the server's unix socket (a head in a network namespace)."""
    name = "h_" + hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:20]
    c = pg()
    if name not in _made:  # made once; a head started again on path finds it as it was
        c.create_db(name, fresh=True)
        _made.add(name)
    return c.socket_url_of(name) if socket else c.url_of(name)


def is_pg(db):
    return isinstance(db, str) and db.startswith("postgresql://")


def _pg_name(url):
    return urllib.parse.urlsplit(url).path.lstrip("/")


def proc_samples(db):
    """Where a store's process samples all are, for a reader outside jobscope: on
    PostgreSQL proc_samples_all (proc_samples' rows and the sets' the head writes,
    proc_sample_sets); in a SQLite file the table (its _all views over packs are made
    by jobscope's own connections)."""
    return "proc_samples_all" if is_pg(db) else "proc_samples"


def sql(db, query, *args):
    """The rows of query on a store: a SQLite file (an agent's, a head's) or a head's
    PostgreSQL database (its URL), as the same Python values."""
    if is_pg(db):
        return pg().query(query, *args, db=_pg_name(db))
    return agent_harness.sql(db, query, *args)


def store_exists(db):
    """Whether the head has created its store (its agents table, on PostgreSQL)."""
    if is_pg(db):
        return bool(pg().psql("SELECT to_regclass('agents') IS NOT NULL AND"
                              " to_regclass('host_samples') IS NOT NULL", db=_pg_name(db))
                    == [("t",)])
    return os.path.exists(db)


def skip_on_pg(why):
    """True (and says why) when the head's store is PostgreSQL: the caller returns."""
    if PG:
        print("SKIP on postgresql: %s" % why, flush=True)
    return PG

# the values compared per table: every column but the store's own ids and seq
COMPARE = {
    "host_samples": "ts_ms, cpu_user_ms, cpu_system_ms, cpu_idle_ms, mem_available_bytes,"
                    " load1_milli, disk_read_bytes, net_rx_bytes",
    "cpu_samples": "ts_ms, cpu, user_ms, system_ms, idle_ms",
    "disk_samples": "ts_ms, disk, read_bytes, write_bytes",
    "net_samples": "ts_ms, iface, rx_bytes, tx_bytes",
    "proc_samples": "ts_ms, state, threads, user_ms, system_ms, rss_bytes, read_bytes",
    "job_samples": "ts_ms, nprocs, user_ms, system_ms, rss_bytes",
}


def head_db(path, backend=None, socket=False):
    """What a head started on db path gets as --db: the path, or on PostgreSQL the URL
    of the database that stands for it."""
    if (backend or BACKEND) == "postgresql":
        return pg_db_for(path, socket)
    return path


class Head:
    def __init__(self, wd, db=None, port=0, token_file=None, name="head", netns=None,
                 addr="127.0.0.1", extra=(), wrap=(), backend=None):
        self.path = db or wd.join("head.db")
        self.db = head_db(self.path, backend, socket=bool(netns))
        self.log = wd.join(name + ".log")
        self.errf = open(self.log, "a")
        self.addr = addr
        args = (["ip", "netns", "exec", netns] if netns else []) + list(wrap) + [
            JOBSCOPE, "head", "--db", self.db, "--listen", "%s:%d" % (addr, port)] + list(extra)
        if token_file:
            args += ["--token-file", token_file]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self.errf, cwd=wd.path)
        _heads.append(self)
        self.port = wait_for(self._port, timeout=15, what="the head's listening line")
        self.url = "http://%s:%d" % (addr, self.port)
        if is_pg(self.db) and self.db not in _checked:
            self._check_pg()
            _checked.add(self.db)

    def _check_pg(self):
        """A head that took the URL for a file name (a jobscope without PostgreSQL) fails
        the test here, said so, rather than later as rows that never arrive."""
        try:
            wait_for(lambda: store_exists(self.db), timeout=15,
                     what="the head's tables in PostgreSQL")
        except AssertionError:
            self.proc.kill()
            self.proc.wait(timeout=scaled(20))
            self.errf.close()
            raise AssertionError("the head does not keep its store in PostgreSQL: no tables in"
                                 " %s 15 s (scaled) after it listened (a jobscope without --db"
                                 " postgresql://?); its log: %s" % (self.db, open(self.log).read()))

    def _port(self):
        if self.proc.poll() is not None:
            raise AssertionError("the head exited: %s" % open(self.log).read())
        m = re.findall(r"head: listening on [0-9.]+:(\d+)", open(self.log).read())
        return int(m[-1]) if m else None

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=scaled(5)) as r:
            return json.loads(r.read())

    def post(self, path, body, token=None):
        req = urllib.request.Request(self.url + path, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=scaled(10)) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def kill(self, sig=signal.SIGKILL):
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=scaled(20))
        except subprocess.TimeoutExpired:
            # where it hangs, said in the failure: its threads' stacks (where gdb is
            # installed) and its log, then killed so that the test ends
            stacks = "(no gdb here for its threads' stacks)"
            if shutil.which("gdb"):
                r = subprocess.run(["gdb", "-batch", "-p", str(self.proc.pid), "-ex",
                                    "thread apply all bt"], capture_output=True, text=True,
                                   timeout=120)
                stacks = r.stdout[-20000:]
            self.proc.kill()
            self.proc.wait()
            self.errf.close()
            raise AssertionError("the head did not exit within %.0f s of signal %d; its "
                                 "threads:\n%s\nits log:\n%s"
                                 % (scaled(20), sig, stacks, open(self.log).read()[-4000:]))
        self.errf.close()
        return rc


def get_metrics(url):
    """{series: value} of url's /metrics (a head's or an agent's); a series with labels
    is keyed by its name and labels as written."""
    out = {}
    with urllib.request.urlopen(url + "/metrics", timeout=scaled(5)) as r:
        for line in r.read().decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
    return out


def node_id(db, hostname):
    return sql(db, "SELECT id FROM nodes WHERE hostname = ?", hostname)[0][0]


def in_order(rows):
    """rows sorted in Python, NULL (None) first in every column: SQLite puts NULLs first
    in ORDER BY, PostgreSQL last, so the SQL order is not the same on both."""
    return sorted(rows, key=lambda r: tuple((v is not None, v) for v in r))


def rows_digest(rows):
    rows = in_order(rows)
    return len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()[:16]


def digest(db, table, where, args=(), source=None):
    return rows_digest(sql(db, "SELECT %s FROM %s %s" % (COMPARE[table], source or table, where),
                           *args))


def agent_side(db, table):
    return digest(db, table, "")


def head_side(db, agent_db, table):
    """The head's rows of the node the agent's store belongs to."""
    host = sql(agent_db, "SELECT hostname FROM nodes")[0][0]
    nid = node_id(db, host)
    if table in ("host_samples", "cpu_samples", "disk_samples", "net_samples"):
        return digest(db, table, "WHERE node_id = ?", (nid,))
    if table == "proc_samples":
        return digest(db, table, "WHERE proc_id IN (SELECT id FROM procs WHERE node_id = ?)",
                      (nid,), source=proc_samples(db))
    return digest(db, table, "WHERE job_id IN (SELECT id FROM jobs WHERE node_id = ?)", (nid,))


def start_agent(wd, head, name, extra=(), netns=None, url=None):
    """An agent in a UTS namespace of its own, so it is a node of its own
    (and in network namespace netns, when given)."""
    db = wd.join(name + ".db")
    log = wd.join(name + ".log")
    errf = open(log, "a")
    args = (["ip", "netns", "exec", netns] if netns else []) + [
        "unshare", "--uts", "sh", "-c",
        'hostname "$0" && exec "$@"', name, JOBSCOPE, "agent", "--db", db,
        "--interval", "100ms", "--listen", "none", "--head", url or head.url] + list(extra)
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=errf)
    return proc, db, log, errf


def stop_agent(proc, errf, timeout=30):
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=scaled(timeout))
    errf.close()
    return rc


def held(head_db, agent_db):
    """Whether the head holds every row of the agent (by its cursor) now.  For an agent
    that has stopped: while one runs, each tick (100 ms) adds rows the head gets a
    moment later, and on a busy machine that moment may never come when the test
    looks; wait_for(caught_up(...)) then."""
    try:
        aid = sql(agent_db, "SELECT value FROM meta WHERE key = 'agent_id'")
        if not aid:
            return False
        cur = sql(head_db, "SELECT acked_seq FROM agents WHERE agent_id = ?", aid[0][0])
        top = sql(agent_db, "SELECT max(seq) FROM host_samples")[0][0] or 0
    except StoreError:
        return False  # a store still being created
    return bool(cur) and cur[0][0] >= top



# the agent's tables whose rows go to the head by seq (src/store/ingest.c's ingest_facts)
FACT_TABLES = ("host_samples", "cpu_samples", "disk_samples", "net_samples", "proc_samples",
               "job_samples", "events", "marks", "gpu_samples", "gpu_proc_samples", "gaps",
               "fs_samples", "app_samples", "energy_samples", "proc_libs")


def top_seq(agent_db):
    """The highest seq of any row the agent's store holds for the head."""
    have = {r[0] for r in sql(agent_db, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    return max([sql(agent_db, "SELECT max(seq) FROM %s" % t)[0][0] or 0
                for t in FACT_TABLES if t in have] or [0])


def caught_up(head_db, *agent_dbs):
    """A predicate for wait_for: whether the head holds every row each agent had stored
    when the predicate first read that agent's store (its highest seq then, of every
    table: a marker or an app row can come after a tick's host row), so that agents
    still sampling do not move the mark while the head catches up to it."""
    marks = {}

    def pred():
        try:
            for db in agent_dbs:
                if db not in marks:
                    aid = sql(db, "SELECT value FROM meta WHERE key = 'agent_id'")
                    if not aid:
                        return False
                    marks[db] = (aid[0][0], top_seq(db))
                aid, top = marks[db]
                cur = sql(head_db, "SELECT acked_seq FROM agents WHERE agent_id = ?", aid)
                if not cur or cur[0][0] < top:
                    return False
        except StoreError:
            return False  # a store still being created
        return True
    return pred


def acked_total(head_db):
    """Every agent's acknowledged seq at the head, added up: how far a catch-up is."""
    try:
        return sql(head_db, "SELECT coalesce(sum(acked_seq), 0) FROM agents")[0][0]
    except StoreError:
        return None


def store_exec(db, query, *args):
    """Runs one statement that writes (? bound to args) on a head's store, committed."""
    if is_pg(db):
        pg().psql(pg_cluster.bind(query, args), db=_pg_name(db))
        return
    con = sqlite3.connect(db, timeout=10)
    try:
        with con:
            con.execute(query, args)
    finally:
        con.close()


def integrity_ok(db):
    """Whether the head's store reads whole: SQLite's integrity_check, or on PostgreSQL
    every table and partition scanned without an error."""
    if is_pg(db):
        tables = pg().psql("SELECT c.relname FROM pg_class c JOIN pg_namespace n"
                           " ON n.oid = c.relnamespace WHERE n.nspname = 'public'"
                           " AND c.relkind IN ('r', 'p')", db=_pg_name(db))
        pg().script("".join('SELECT count(*) FROM "%s";\n' % t for (t,) in tables),
                    db=_pg_name(db))
        return True
    return sql(db, "PRAGMA integrity_check")[0][0] == "ok"
