"""`jobscope runs` and `jobscope report` over a store written by `jobscope run`."""
import json
import subprocess

from harness import JOBSCOPE, run, helper, jobscope, run_tests, check, eq, scaled



def test_report_replays_the_live_report(wd):
    db = wd.join("store.db")
    r = run(wd, [helper("busy"), "--threads", "2", "--seconds", "0.5"], db=db,
            opts=["--name", "replay", "--interval", "100ms"])
    eq(r.rc, 0, "exit code")
    p = jobscope("report", "--db", db, "--format", "json", str(r.report["run"]["id"]))
    eq(p.returncode, 0, "report exit: %s" % p.stderr)
    replay = json.loads(p.stdout)
    for section in ("run", "cpu", "memory", "io", "network", "host", "processes", "events",
                    "sampler", "timeline"):
        eq(replay[section], r.report[section], "section %s replayed identically" % section)


def test_runs_lists_runs(wd):
    db = wd.join("store.db")
    run(wd, ["true"], db=db, opts=["--name", "first"])
    run(wd, ["sh", "-c", "exit 3"], db=db)
    p = jobscope("runs", "--db", db)
    eq(p.returncode, 0, "runs exit")
    lines = p.stdout.strip().splitlines()
    eq(len(lines), 3, "header and two runs: %r" % p.stdout)
    check("first" in lines[1] and "exit 0" in lines[1], lines[1])
    check("exit 3" in lines[2] and "sh -c exit 3" in lines[2], lines[2])
    p = jobscope("runs", "--db", db, "--json")
    runs = json.loads(p.stdout)
    eq([x["id"] for x in runs], [1, 2], "ids")
    eq(runs[1]["exit_code"], 3, "exit_code")


def test_report_selection(wd):
    db = wd.join("store.db")
    run(wd, ["true"], db=db)
    p = jobscope("report", "--db", db)
    eq(p.returncode, 0, "one run: no id needed (%s)" % p.stderr)
    check("jobscope run 1" in p.stdout, p.stdout)
    run(wd, ["sh", "-c", "exit 5"], db=db)
    p = jobscope("report", "--db", db)
    eq(p.returncode, 2, "two runs and no id")
    check("say which" in p.stderr, p.stderr)
    p = jobscope("report", "--db", db, "last", "--format", "json")
    eq(json.loads(p.stdout)["run"]["exit_code"], 5, "'last' is the newest run")
    p = jobscope("report", "--db", db, "99")
    eq(p.returncode, 1, "no such run")
    check("no run 99" in p.stderr, p.stderr)
    out = wd.join("r.txt")
    p = jobscope("report", "--db", db, "1", "-o", out)
    eq(p.returncode, 0, "-o")
    with open(out) as f:
        check("jobscope run 1" in f.read(), "report written to -o")


def test_report_missing_store(wd):
    p = jobscope("report", "--db", wd.join("nothing.db"), "1")
    eq(p.returncode, 2, "exit code")
    check("nothing.db" in p.stderr, p.stderr)


def test_default_store_location(wd):
    env = {"HOME": wd.path, "PATH": "/usr/bin:/bin"}
    p = jobscope("run", "--report", "none", "--", "true", env=env)
    eq(p.returncode, 0, "run with the default store: %s" % p.stderr)
    p = jobscope("runs", env=env)
    check("true" in p.stdout, p.stdout)
    import os
    check(os.path.exists(wd.join(".local", "share", "jobscope", "jobscope.db")), "default path")
    env["XDG_DATA_HOME"] = wd.join("xdg")
    jobscope("run", "--report", "none", "--", "true", env=env)
    check(os.path.exists(wd.join("xdg", "jobscope", "jobscope.db")), "XDG_DATA_HOME path")


def test_concurrent_runs_share_a_store(wd):
    # three runs writing to one store at once (e.g. the default store from
    # three terminals): no sample lost, each replays to its own report
    db = wd.join("store.db")
    procs = []
    for i in range(3):
        out = wd.join("r%d.json" % i)
        procs.append((out, subprocess.Popen(
            [JOBSCOPE, "run", "--db", db, "--interval", "50ms", "--report", "json",
             "--report-file", out, "--", helper("spawnstorm"), "--count", "200"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)))
    for out, p in procs:
        _, err = p.communicate(timeout=scaled(120))
        eq(p.returncode, 0, "exit code (%s)" % err)
        eq(err, "", "no warnings")
        with open(out) as f:
            live = json.load(f)
        eq(live["sampler"]["lost_samples"], 0, "lost_samples")
        r = jobscope("report", "--db", db, "--format", "json", str(live["run"]["id"]))
        eq(json.loads(r.stdout)["cpu"], live["cpu"], "run %d replayed" % live["run"]["id"])


def test_schema_1_store_is_read_then_upgraded(wd):
    import sqlite3
    db = wd.join("store.db")
    first = run(wd, ["true"], db=db)
    # make it a schema-1 store, as jobscope 0.1's first release wrote them
    con = sqlite3.connect(db)
    v3_columns = {"jobs": ["step", "cgroup", "qos", "reservation_source", "reserved_cpus",
                           "reserved_mem_bytes", "reserved_gpus", "reserved_gpu_list"],
                  "job_samples": ["cg_cpu_ms", "cg_mem_bytes", "cg_mem_peak_bytes"]}
    con.executescript("DROP TABLE app_samples; DROP TABLE energy_samples; DROP TABLE proc_libs; DROP INDEX marks_job_ts;"
                      "DROP TABLE cuda_stats; DROP TABLE cuda_procs; DROP TABLE rw_cursors; DROP TABLE requests; DROP TABLE fs_samples; DROP TABLE report_ckpts; DROP TABLE packs; DROP TABLE gaps; DROP INDEX jobs_start; DROP TABLE sessions; DROP TABLE agents; DROP TABLE rollups; DROP TABLE job_summaries; DROP INDEX jobs_end;" +
                      "".join("ALTER TABLE %s DROP COLUMN %s;" % (t, c)
                              for t, cols in v3_columns.items() for c in cols) +
                      "DROP TABLE gpu_proc_samples; DROP TABLE gpu_samples; DROP TABLE devices;"
                      "ALTER TABLE events DROP COLUMN gpu_index;"
                      "ALTER TABLE job_samples DROP COLUMN cpu_wait_ms; ALTER TABLE jobs DROP COLUMN sluid;"
                      "ALTER TABLE procs DROP COLUMN container;"
                      "ALTER TABLE jobs DROP COLUMN k8s_owner; ALTER TABLE jobs DROP COLUMN k8s_owner_label;"
                      " PRAGMA user_version = 1;")
    con.close()
    p = jobscope("report", "--db", db, "--format", "json", "1")
    eq(p.returncode, 0, "a schema-1 store is read as it is: %s" % p.stderr)
    eq(json.loads(p.stdout)["cpu"], first.report["cpu"], "same report")
    con = sqlite3.connect(db)
    eq(con.execute("pragma user_version").fetchone()[0], 1, "reading did not upgrade it")
    con.close()
    second = run(wd, ["true"], db=db)
    eq(second.rc, 0, "a run upgrades it")
    con = sqlite3.connect(db)
    eq(con.execute("pragma user_version").fetchone()[0], 18, "upgraded to the current schema")
    con.close()
    p = jobscope("report", "--db", db, "--format", "json", "1")
    eq(json.loads(p.stdout)["events"], first.report["events"], "old run intact")


def test_schema_17_rollups_are_rebuilt_clustered(wd):
    """Schema 18: the rollups, a rowid table with two indexes before, become a
    table without rowid in (tier, time, series) order, every row as it was."""
    import sqlite3
    db = wd.join("store.db")
    eq(run(wd, ["true"], db=db).rc, 0, "a run")
    rows = [(60000, 1, "host", 0, "load1", 60000 * k, k, 0.5 * k, 0.75 * k, 1.0 * k)
            for k in range(1, 6)]
    rows += [(3600000, 1, "job", 7, "cpu_cores", 0, 60, 0.0, 1.25, None)]
    con = sqlite3.connect(db)
    con.executescript(
        "DROP TABLE rollups;"
        "CREATE TABLE rollups (id INTEGER PRIMARY KEY, tier_ms INTEGER NOT NULL,"
        " node_id INTEGER NOT NULL, entity TEXT NOT NULL, entity_id INTEGER NOT NULL,"
        " metric TEXT NOT NULL, ts_ms INTEGER NOT NULL, n INTEGER NOT NULL,"
        " min REAL, avg REAL, max REAL,"
        " UNIQUE (tier_ms, node_id, entity, entity_id, metric, ts_ms)) STRICT;"
        "CREATE INDEX rollups_tier_ts ON rollups (tier_ms, ts_ms);"
        "PRAGMA user_version = 17;")
    # written newest first: the order the rows come back in is the table's, not the writes'
    con.executemany("INSERT INTO rollups (tier_ms, node_id, entity, entity_id, metric, ts_ms,"
                    " n, min, avg, max) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows[::-1])
    con.commit()
    con.close()
    eq(run(wd, ["true"], db=db).rc, 0, "a run upgrades it")
    con = sqlite3.connect(db)
    eq(con.execute("pragma user_version").fetchone()[0], 18, "schema 18")
    sql = con.execute("SELECT sql FROM sqlite_schema WHERE name = 'rollups'").fetchone()[0]
    check("WITHOUT ROWID" in sql and "id INTEGER PRIMARY KEY" not in sql, sql)
    eq(con.execute("SELECT count(*) FROM sqlite_schema WHERE tbl_name = 'rollups'"
                   " AND type = 'index'").fetchone()[0], 0, "no index beside the table")
    eq(con.execute("SELECT tier_ms, node_id, entity, entity_id, metric, ts_ms, n, min, avg, max"
                   " FROM rollups").fetchall(), rows, "the same rows, by tier and time")
    # the agent's upsert finds its bucket on the new key
    con.execute("INSERT INTO rollups (tier_ms, node_id, entity, entity_id, metric, ts_ms, n,"
                " min, avg, max) VALUES (60000, 1, 'host', 0, 'load1', 60000, 1, 0.25, 0.25,"
                " 0.25) ON CONFLICT (tier_ms, node_id, entity, entity_id, metric, ts_ms)"
                " DO UPDATE SET n = rollups.n + excluded.n")
    eq(con.execute("SELECT count(*), max(n) FROM rollups WHERE ts_ms = 60000").fetchone(),
       (1, 2), "one bucket, merged")
    con.close()


if __name__ == "__main__":
    run_tests(globals())
