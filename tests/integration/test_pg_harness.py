"""The PostgreSQL side of the test harness, without a head: a private server
(pg_cluster.PgCluster) starts and stops, and head_harness reads a store in it
with the same SQL and gets the same Python values as from the SQLite file.

The store is copied, table by table, from a real `jobscope run` store into a
database of the private server (each SQLite column type as its PostgreSQL
counterpart); then the digests the head tests compare (head_side, agent_side),
node_id, integrity_ok, store_exec, a quoted "user" and report JSON read back
equal what SQLite gives.
"""
import os
import sqlite3

from harness import helper, jobscope, run_tests, check, eq
import head_harness as hh
import pg_cluster

PG_TYPES = {"INTEGER": "bigint", "REAL": "double precision", "TEXT": "text", "BLOB": "bytea"}


def copy_to_pg(src, url):
    """Every table of SQLite store src into the PostgreSQL database at url; their names."""
    con = sqlite3.connect(src)
    name = url.rsplit("/", 1)[1]
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                                        " AND name NOT LIKE 'sqlite_%'")]
    script = []
    for t in tables:
        cols = con.execute("PRAGMA table_info(%s)" % t).fetchall()
        ddl = ", ".join('"%s" %s' % (c[1], PG_TYPES.get((c[2] or "TEXT").upper(), "text"))
                        for c in cols)
        script.append('CREATE TABLE "%s" (%s);' % (t, ddl))
        rows = con.execute("SELECT * FROM %s" % t).fetchall()
        for i in range(0, len(rows), 500):
            script.append('INSERT INTO "%s" VALUES %s;' % (t, ",".join(
                "(%s)" % ",".join("'\\x%s'::bytea" % v.hex() if isinstance(v, bytes)
                                  else pg_cluster.quote(v) for v in r)
                for r in rows[i:i + 500])))
    con.close()
    # where a reader finds a PostgreSQL store's process samples (head_harness.proc_samples)
    script.append('CREATE VIEW proc_samples_all AS SELECT * FROM proc_samples;')
    hh.pg().script("\n".join(script), db=name)  # one psql for all of it
    return tables


def test_same_values_from_both_stores(wd):
    why = pg_cluster.missing()
    if why:
        print("SKIP: %s" % why)
        return
    src = wd.join("run.db")
    r = jobscope("run", "--db", src, "--", helper("busy"), "--seconds", "1", timeout=60)
    eq(r.returncode, 0, "jobscope run: " + r.stderr)
    url = hh.head_db(wd.join("copy.db"), backend="postgresql")
    check(hh.is_pg(url), url)
    check(not hh.store_exists(url), "a fresh database has no tables")
    tables = copy_to_pg(src, url)
    check(len(tables) > 10 and hh.store_exists(url), "tables copied: %r" % tables)
    host = hh.sql(src, "SELECT hostname FROM nodes")[0][0]
    eq(hh.node_id(url, host), hh.node_id(src, host), "node_id")
    for t in hh.COMPARE:
        a = hh.agent_side(src, t)
        eq(hh.head_side(url, src, t), a, "%s read from PostgreSQL vs SQLite" % t)
        check(a[0] > 0 or t in ("disk_samples", "net_samples"), "%s has rows" % t)
    for q in ('SELECT j.scheduler, j.job_id, j."user", j.reserved_cpus, count(*) FROM jobs j'
              ' GROUP BY j.scheduler, j.job_id, j."user", j.reserved_cpus ORDER BY 2',
              "SELECT s.cpu_ms, s.report_json FROM job_summaries s JOIN jobs j ON j.id = s.job_id"
              " ORDER BY s.job_id"):
        rows = hh.sql(src, q)
        check(rows, "rows for %s" % q)
        eq(hh.sql(url, q), rows, q)
    check(hh.integrity_ok(url), "integrity_ok")
    hh.store_exec(url, "INSERT INTO meta (key, value) VALUES (?, ?)", "it's?", None)
    eq(hh.sql(url, "SELECT key, value FROM meta WHERE key = ?", "it's?"), [("it's?", None)],
       "store_exec then sql, quotes and ? in a value")
    # the same path again is the same database; another path another one
    eq(hh.head_db(wd.join("copy.db"), backend="postgresql"), url, "a restarted head's db")
    other = hh.head_db(wd.join("other.db"), backend="postgresql")
    check(other != url and not hh.store_exists(other), "another head's db is empty")
    check(not os.path.exists(wd.join("copy.db")), "no SQLite file made for a PostgreSQL head")


if __name__ == "__main__":
    run_tests(globals())
