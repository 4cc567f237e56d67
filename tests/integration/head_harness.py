"""Starting heads and agents that stream to them, and comparing their stores."""
import hashlib
import json
import os
import re
import signal
import subprocess
import urllib.error
import urllib.request

from harness import JOBSCOPE, wait_for
from agent_harness import sql

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


class Head:
    def __init__(self, wd, db=None, port=0, token_file=None, name="head", netns=None,
                 addr="127.0.0.1", extra=(), wrap=()):
        self.db = db or wd.join("head.db")
        self.log = wd.join(name + ".log")
        self.errf = open(self.log, "a")
        self.addr = addr
        args = (["ip", "netns", "exec", netns] if netns else []) + list(wrap) + [
            JOBSCOPE, "head", "--db", self.db, "--listen", "%s:%d" % (addr, port)] + list(extra)
        if token_file:
            args += ["--token-file", token_file]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self.errf)
        self.port = wait_for(self._port, timeout=15, what="the head's listening line")
        self.url = "http://%s:%d" % (addr, self.port)

    def _port(self):
        if self.proc.poll() is not None:
            raise AssertionError("the head exited: %s" % open(self.log).read())
        m = re.findall(r"head: listening on [0-9.]+:(\d+)", open(self.log).read())
        return int(m[-1]) if m else None

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=5) as r:
            return json.loads(r.read())

    def post(self, path, body, token=None):
        req = urllib.request.Request(self.url + path, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def kill(self, sig=signal.SIGKILL):
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=20)
        self.errf.close()
        return rc


def node_id(db, hostname):
    return sql(db, "SELECT id FROM nodes WHERE hostname = ?", hostname)[0][0]


def digest(db, table, where, args=()):
    rows = sql(db, "SELECT %s FROM %s %s ORDER BY ts_ms, %s" % (COMPARE[table], table, where,
                                                              COMPARE[table]), *args)
    return len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()[:16]


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
                      (nid,))
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


def stop_agent(proc, errf):
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=30)
    errf.close()
    return rc


def held(head_db, agent_db):
    """Whether the head holds every row of the agent (by its cursor)."""
    import sqlite3
    try:
        aid = sql(agent_db, "SELECT value FROM meta WHERE key = 'agent_id'")
        if not aid:
            return False
        cur = sql(head_db, "SELECT acked_seq FROM agents WHERE agent_id = ?", aid[0][0])
        top = sql(agent_db, "SELECT max(seq) FROM host_samples")[0][0] or 0
    except sqlite3.OperationalError:
        return False  # a store still being created
    return bool(cur) and cur[0][0] >= top


