"""Packs (docs/store.md, schema 6): rows packed by `jobscope run`, the agent and
`jobscope compact` read exactly as plain rows; unpacked they are the same rows;
a corrupt pack is a clear error."""
import json
import os
import shutil
import sqlite3
import subprocess

from harness import JOBSCOPE, run, helper, jobscope, run_tests, check, eq, wait_for
from agent_harness import Agent

FACTS = ["host_samples", "cpu_samples", "disk_samples", "net_samples", "proc_samples",
         "job_samples", "gpu_samples", "gpu_proc_samples", "fs_samples"]
PLAIN = {"JOBSCOPE_NO_CKPT": "1"}  # reports replay every row (no report checkpoint)


def env(extra):
    e = dict(os.environ)
    e.update(extra)
    return e


def rows(db, table):
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT * FROM %s ORDER BY seq" % table).fetchall()
    finally:
        con.close()


def count(db, sql):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


def report(db, fmt, extra=None):
    p = jobscope("report", "--db", db, "--format", fmt, "last", env=env(extra or PLAIN))
    eq(p.returncode, 0, "report exit: %s" % p.stderr)
    return p.stdout


def plain_store(wd):
    """A run with a few processes, kept plain (--pack-after 0): 2 s of rows, some CPU."""
    db = wd.join("plain.db")
    r = run(wd, ["sh", "-c", "%s --threads 2 --seconds 0.5 & %s --count 5 --seconds 2; wait"
                 % (helper("busy"), helper("sleepers"))],
            db=db, opts=["--interval", "50ms", "--pack-after", "0"])
    eq(r.rc, 0, "run exit: %s" % r.stderr)
    eq(count(db, "SELECT count(*) FROM packs"), 0, "--pack-after 0 packs nothing")
    check(count(db, "SELECT count(*) FROM proc_samples") > 20, "process rows written")
    return db


def test_compact_packs_and_reads_the_same(wd):
    plain = plain_store(wd)
    packed = wd.join("packed.db")
    shutil.copy(plain, packed)
    p = jobscope("compact", "--db", packed, "--older-than", "0")
    eq(p.returncode, 0, "compact exit: %s" % p.stderr)
    for t in FACTS:
        eq(count(packed, "SELECT count(*) FROM %s" % t), 0, "%s: every row packed" % t)
    check(count(packed, "SELECT count(*) FROM packs") > 0, "packs written")
    check(os.path.getsize(packed) < os.path.getsize(plain),
          "packed file smaller: %d vs %d" % (os.path.getsize(packed), os.path.getsize(plain)))
    for fmt in ("json", "text", "csv"):
        eq(report(packed, fmt), report(plain, fmt), "%s report from packs" % fmt)
    # and from the report checkpoint compact made before packing
    eq(report(packed, "json", {}), report(plain, "json"), "report from its checkpoint")
    # unpacked: the very rows, seq for seq
    p = jobscope("compact", "--db", packed, "--unpack")
    eq(p.returncode, 0, "unpack exit: %s" % p.stderr)
    eq(count(packed, "SELECT count(*) FROM packs"), 0, "no packs left")
    for t in FACTS:
        eq(rows(packed, t), rows(plain, t), "%s unpacked" % t)


def test_fs_rows_left_plain_by_an_older_store_are_packed(wd):
    """fs_samples was never packed before 2026-11-30: a store packed then has
    its root file system rows plain below the cut; the next step packs them all."""
    plain = plain_store(wd)
    db = wd.join("older.db")
    shutil.copy(plain, db)
    eq(jobscope("compact", "--db", db, "--older-than", "0").returncode, 0, "compact")
    n = count(plain, "SELECT count(*) FROM fs_samples")
    check(n > 10, "root file system rows written: %d" % n)
    # as an older jobscope left it: every other table packed, fs_samples plain
    con = sqlite3.connect(db)
    con.execute("DELETE FROM packs WHERE tbl = 'fs_samples'")
    con.execute("ATTACH ? AS p", (plain,))
    con.execute("INSERT INTO fs_samples SELECT * FROM p.fs_samples")
    con.commit()
    con.close()
    p = jobscope("compact", "--db", db, "--older-than", "0")
    eq(p.returncode, 0, "compact again: %s" % p.stderr)
    eq(count(db, "SELECT count(*) FROM fs_samples"), 0, "the plain rows below the cut packed")
    eq(count(db, "SELECT sum(nrows) FROM packs WHERE tbl = 'fs_samples'"), n, "all of them")
    eq(report(db, "json"), report(plain, "json"), "the report")
    eq(jobscope("compact", "--db", db, "--unpack").returncode, 0, "unpack")
    eq(rows(db, "fs_samples"), rows(plain, "fs_samples"), "the same rows back")


def test_run_packs_as_it_goes(wd):
    db = wd.join("store.db")
    # 3 s of rows, a fixed amount of CPU in them
    r = run(wd, ["sh", "-c", "%s --work 100 & %s --sleep 3; wait" % (helper("busy"), helper("busy"))],
            db=db, opts=["--interval", "50ms", "--pack-after", "1s"])
    eq(r.rc, 0, "run exit: %s" % r.stderr)
    check(count(db, "SELECT count(*) FROM packs WHERE tbl = 'host_samples'") > 0,
          "host rows packed during the run")
    check(count(db, "SELECT count(*) FROM host_samples") > 0, "the last second stays rows")
    # every seq once, packs below rows
    con = sqlite3.connect(db)
    lo = con.execute("SELECT min(seq) FROM host_samples").fetchone()[0]
    hi = con.execute("SELECT max(seq_hi) FROM packs").fetchone()[0]
    con.close()
    check(hi < lo, "packed seqs (up to %d) below the rows' (from %d)" % (hi, lo))
    live = json.loads(report(db, "json"))
    eq(live["cpu"], r.report["cpu"], "the report replayed over packs is the live one")
    eq(live["timeline"], r.report["timeline"], "timeline")


def test_agent_packs_what_ages(wd):
    a = Agent(wd, interval="100ms", extra=["--pack-after", "1s"])
    rows_key = ("jobscope_agent_packed_rows_total", frozenset())
    try:
        wait_for(lambda: a.metrics()[rows_key] > 0, timeout=20, what="rows packed by the agent")

        def between_packs():
            # the agent packs as it ticks: the node view is compared with /metrics
            # read before and after it, when both reads say the same
            before = a.metrics()
            node = a.json("/api/v1/node")["agent"]
            after = a.metrics()
            return (before, node) if before[rows_key] == after[rows_key] else None
        m, node = wait_for(between_packs, timeout=20, what="two reads of /metrics between packs")
        check(m[("jobscope_agent_packed_bytes_total", frozenset())] > 0, "pack bytes counted")
        eq(node["packed_rows"], int(m[rows_key]), "the node view and /metrics agree")
    finally:
        a.stop()
    packed = count(a.db, "SELECT sum(nrows) FROM packs")
    check(packed >= node["packed_rows"], "the store holds the packed rows")
    check(count(a.db, "SELECT count(*) FROM packs WHERE tbl = 'host_samples'") > 0,
          "the agent packed host rows")
    check(count(a.db, "SELECT count(*) FROM packs WHERE tbl = 'proc_samples'") > 0,
          "and process rows")
    check(count(a.db, "SELECT count(*) FROM packs WHERE tbl = 'fs_samples'") > 0,
          "and the root file system's")


def test_corrupt_pack_is_an_error(wd):
    plain = plain_store(wd)
    db = wd.join("bad.db")
    shutil.copy(plain, db)
    eq(jobscope("compact", "--db", db, "--older-than", "0").returncode, 0, "compact")
    con = sqlite3.connect(db)
    con.execute("UPDATE packs SET data = substr(data, 1, length(data) / 2)"
                " WHERE tbl = 'job_samples'")
    con.commit()
    con.close()
    p = jobscope("report", "--db", db, "last", env=env(PLAIN))
    check(p.returncode not in (0, -11, -6), "a clear failure, not a crash: %d" % p.returncode)
    check("corrupt" in p.stderr, p.stderr)


if __name__ == "__main__":
    run_tests(globals())
