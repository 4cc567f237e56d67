"""A head on PostgreSQL when the database fails, and its retention.

- The server killed with SIGKILL (all its backends at once) while agents
  stream: the head answers no batch it could not commit, stays up, finds the
  server again once it is back (crash recovery), and in the end holds every
  row of every agent exactly once: the agents' stores and the head's
  database hold the same rows, compared row by row.  The same on a server
  whose default is synchronous_commit off.
- The server stopped for longer (a restart of the database): the same.
- --retention: the head drops the day partitions (the process samples' sets'
  too) that ended before the cutoff and deletes older rows of the default
  partitions (a set once its last sample is older), and keeps the rest, jobs
  included.
- A database of another application (tables of its own, no jobscope meta)
  is refused with exit 2 and left as it was.
"""
import os
import subprocess
import time

from harness import JOBSCOPE, run_tests, check, eq, scaled, wait_for
import head_harness as hh
from head_harness import Head, start_agent, stop_agent, held, caught_up, agent_side, head_side

TABLES = ("host_samples", "cpu_samples", "proc_samples", "job_samples")


def _pg_head(wd, name="head", extra=()):
    return Head(wd, db=wd.join(name + ".db"), name=name, backend="postgresql", extra=extra)


def _same_rows(head, agents):
    for db in agents:
        for t in TABLES:
            eq(head_side(head.db, db, t), agent_side(db, t), "%s of %s" % (t, db))
        # exactly once: no seq of the agent's twice at the head (the head's seq is its own)
        n_agent = hh.sql(db, "SELECT count(*) FROM host_samples")[0][0]
        host = hh.sql(db, "SELECT hostname FROM nodes")[0][0]
        n_head = hh.sql(head.db, "SELECT count(*) FROM host_samples h JOIN nodes n"
                        " ON n.id = h.node_id WHERE n.hostname = ?", host)[0][0]
        eq(n_head, n_agent, "host_samples rows of %s at the head" % host)


def _outage(wd, down_s, how, early=False):
    """early: the server goes as soon as the head stored its first processes (rows
    for processes new to the head are being committed when it goes)."""
    pg = hh.pg()
    head = _pg_head(wd)
    agents = [start_agent(wd, head, "pgnode%d" % i) for i in range(2)]
    if early:
        wait_for(lambda: hh.store_exists(head.db) and
                 hh.sql(head.db, "SELECT count(*) FROM procs")[0][0] > 0, timeout=30,
                 what="the head's first processes")
    else:
        wait_for(caught_up(head.db, *[a[1] for a in agents]), timeout=30,
                 what="the head holding the agents' first rows")
    t_down = time.monotonic()
    seen = os.path.getsize(head.log)
    if how == "kill":
        pg.kill9()
    else:
        subprocess.run(["runuser", "-u", "postgres", "--",
                        os.path.join(hh.pg_cluster.PG_BIN, "pg_ctl"), "stop", "-D", pg.data,
                        "-m", "fast", "-w"], check=True, capture_output=True)
        pg.proc.wait(timeout=scaled(20))
    # the agents' next batches find the database away
    wait_for(lambda: "cannot" in open(head.log).read()[seen:], timeout=30,
             what="the head to say it cannot write")
    # not a wait: the database stays away down_s in all
    time.sleep(max(0.0, down_s - (time.monotonic() - t_down)))
    check(head.proc.poll() is None, "the head stays up while its database is down")
    pg.restart()
    # the agents resend from what was acknowledged (after their back-off)
    try:
        wait_for(caught_up(head.db, *[a[1] for a in agents]), timeout=90,
                 what="the head holding every row after the outage")
    except AssertionError:
        raise AssertionError("the head's log: %s\nan agent's: %s"
                             % (open(head.log).read()[-3000:], open(agents[0][2]).read()[-2000:]))
    for proc, db, log_, errf in agents:
        eq(stop_agent(proc, errf), 0, "agent exit")
    wait_for(lambda: all(held(head.db, a[1]) for a in agents), timeout=30,
             what="the agents' last ticks")
    _same_rows(head, [a[1] for a in agents])
    eq(head.kill(15), 0, "head exit after SIGTERM")


def test_server_killed_mid_stream(wd):
    _outage(wd, 2.0, "kill")


def test_server_killed_with_commits_not_synchronous(wd):
    """A site's server whose default is synchronous_commit off: the head's own session
    commits synchronously all the same (it acknowledges what it committed), so the
    server's crash loses nothing the agents were told was stored.  (With the server's
    default, a kill while the first processes were stored lost 150 to 190 of some 250
    process rows of an agent in 3 runs of 4: the head had acknowledged them.)"""
    pg = hh.pg()
    pg.psql("ALTER SYSTEM SET synchronous_commit = off")
    pg.psql("SELECT pg_reload_conf()")
    try:
        # a reload reaches the sessions when they next look (a signal)
        wait_for(lambda: pg.psql("SHOW synchronous_commit") == [("off",)], timeout=10,
                 what="the server's default to be off")
        _outage(wd, 2.0, "kill", early=True)
    finally:
        pg.psql("ALTER SYSTEM RESET synchronous_commit")
        pg.psql("SELECT pg_reload_conf()")


def test_server_restarted(wd):
    _outage(wd, 4.0, "stop")


def test_retention_drops_partitions(wd):
    head = _pg_head(wd, "ret")
    eq(head.kill(15), 0, "head exit")
    db = head.db
    day = 86400000
    old = 1577836800000  # 2020-01-01T00:00:00Z
    now = int(time.time() * 1000)
    hh.store_exec(db, "INSERT INTO nodes (hostname) VALUES ('oldnode')")
    nid = hh.node_id(db, "oldnode")
    hh.store_exec(db, 'CREATE TABLE host_samples_d20200101 PARTITION OF host_samples'
                  ' FOR VALUES FROM (%d) TO (%d)' % (old, old + day))
    hh.store_exec(db, "INSERT INTO jobs (node_id, scheduler, job_id, start_ms) VALUES"
                  " (?, 'slurm', '7', ?)", nid, old)
    for seq, ts in ((1, old + 5), (2, old + 6), (3, 5000), (4, now - 1000)):
        hh.store_exec(db, "INSERT INTO host_samples (seq, node_id, ts_ms) VALUES (?, ?, ?)",
                      seq, nid, ts)
    # the process samples' sets: one in the old day's partition, two in the default one
    hh.store_exec(db, 'CREATE TABLE proc_sample_sets_d20200101 PARTITION OF proc_sample_sets'
                  ' FOR VALUES FROM (%d) TO (%d)' % (old, old + day))
    for seq, lo, hi in ((5, old + 5, old + 7), (6, 5000, 5001), (7, now - 2000, now - 1000)):
        hh.store_exec(db, "INSERT INTO proc_sample_sets (ts_lo, ts_hi, seq, ts_ms) VALUES"
                      " (?, ?, ARRAY[?, ?]::bigint[], ARRAY[?, ?]::bigint[])",
                      lo, hi, seq, seq + 100, lo, hi)
    head = Head(wd, db=wd.join("ret.db"), name="ret2", backend="postgresql",
                extra=("--retention", "30d"))
    wait_for(lambda: "retention:" in open(head.log).read(), timeout=20,
             what="the retention's log line")
    eq(head.kill(15), 0, "head exit")
    check("2 day partitions dropped, 2 rows deleted" in open(head.log).read(),
          open(head.log).read())
    eq(hh.sql(db, "SELECT seq FROM host_samples ORDER BY seq"), [(4,)], "rows kept")
    eq(hh.sql(db, "SELECT seq FROM proc_samples_all ORDER BY seq"), [(7,), (107,)],
       "process samples kept (the sets')")
    eq(hh.sql(db, "SELECT count(*) FROM pg_class WHERE relname IN ('host_samples_d20200101',"
                  " 'proc_sample_sets_d20200101')"),
       [(0,)], "the old day's partitions are gone")
    eq(hh.sql(db, "SELECT job_id FROM jobs"), [("7",)], "jobs are kept")


def test_foreign_database_refused(wd):
    pg = hh.pg()
    url = pg.create_db("foreign_app")
    pg.psql("CREATE TABLE jobs (a int)", db="foreign_app")
    r = subprocess.run([JOBSCOPE, "head", "--db", url, "--listen", "127.0.0.1:0"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=scaled(30))
    eq(r.returncode, 2, "exit code")
    check("is not a jobscope store" in r.stderr, r.stderr)
    eq(pg.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'",
               db="foreign_app"), [("1",)], "nothing created there")


run_tests(globals())
