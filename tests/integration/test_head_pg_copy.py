"""The head's ingest into PostgreSQL by COPY or by INSERT ... unnest (src/store/ingest.c).

A head on PostgreSQL writes each fact table of a batch with one COPY ... FROM STDIN
in text format when it has more than 64 new rows (copy_facts_of), else with one
INSERT ... SELECT FROM unnest() of an array literal per column, sent ahead in the
pipeline (unnest_facts_of); every field escaped by src/db/pg.c.  Both ways are
checked here: a batch of one or two rows a table, and one of 70.

- Text with tabs, newlines, carriage returns, backslashes (a `\\N` and a `\\.` among
  them), quotes and non-ASCII UTF-8, in a process's command line and in every fact
  table with a text column, arrives as the agent sent it, on PostgreSQL as on a
  SQLite head; so do NULLs, negative integers (a counter above 2^63 arrives as its
  two's complement), 2^53 and reals to the last bit.
- A batch that fails midway, its first tables sent already and a later one refused
  (an id the batch does not hold or a value its column cannot take, found by the
  head; a NULL in a NOT NULL column, found by the server when the pipeline is read),
  is answered 400 and leaves nothing: no row, no cursor, no seq used; the agent sends
  it again corrected and it is stored once, and a copy of it sent again adds nothing.
  Batches of other agents committed in the same moments are stored.
- The fact tables have no primary key and a BRIN index on seq (src/store/pgschema.c);
  a database made with the keys (before) loses them to the first head that opens it,
  which says so, and the agent's rows go on arriving once each.
- Values of another type than their column's are taken or refused alike on both
  backends (the INSERT's arrays go in PostgreSQL's binary format: converted by the
  head): an integral real and a number written as text into an integer column, an
  integer into a real column, numbers into a text column; a fraction into an integer
  column, or words, is refused (400) and leaves nothing.
- The head remembers that an agent's row in `agents` is there and sends no INSERT for
  it again; deleted by hand, it is made again at the next batch, whose rows are stored
  once (sent again, they add nothing).
- A batch's process samples are stored as sets (proc_sample_sets: a row of arrays for
  each job and UTC day, cut before a page fills; a job's fewer than 8 samples of a day
  as rows of proc_samples): proc_samples_all reads them back as sent, in the batch's
  order, each with its own seq, as a SQLite head holds them; a set is in its day's
  partition, in its page (LZ4-compressed where the server has LZ4), never out of line.  A store made before
  the sets gets them from the first head that opens it, which says so; its rows in
  proc_samples stay readable beside the new.
- The head's connection to the database killed again and again while an agent
  streams (pg_terminate_backend, most likely in the middle of a COPY): no batch is
  half stored, the agent sends again what was not acknowledged, and the head holds
  every row of the agent exactly once.
"""
import json
import threading
import time
import urllib.error
import urllib.request

from harness import run_tests, check, eq, scaled, wait_for
import head_harness as hh
from head_harness import Head, start_agent, stop_agent, caught_up, agent_side, head_side

TRICKY = ('tab\there nl\nthere cr\rthere back\\slash \\N \\. \\\\t "double" \'single\''
          ' caf\u00e9 \u2713 \u65e5\u672c \U0001F600 end\\')
TS = 1700000000000


def _batch(agent, host, from_seq, to_seq, tables):
    return json.dumps({"version": 1, "agent_id": agent,
                       "node": {"hostname": host, "cores": 4, "mem_total_bytes": 8 << 30},
                       "from_seq": from_seq, "to_seq": to_seq,
                       "tables": {name: {"columns": cols, "rows": rows}
                                  for name, (cols, rows) in tables.items()}}).encode()


def _post(head, body):
    req = urllib.request.Request(head.url + "/api/v1/ingest", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=scaled(20)) as r:
            return r.status, {"acked_seq": json.loads(r.read())["acked_seq"]}
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def _tricky_tables():
    """A job, its process and a row of every fact table with text, TRICKY in each text."""
    return {
        "jobs": (["id", "node_id", "scheduler", "job_id", "start_ms", "name", "command",
                  "user", "uid", "pid"],
                 [[7, 3, "local", "j\t1", TS, TRICKY, TRICKY, "\u00fcser", 1000, 4242]]),
        "procs": (["id", "node_id", "job_id", "pid", "ppid", "start_ms", "uid", "comm",
                   "cmdline"],
                  [[9, 3, 7, 4242, 1, TS, 1000, "x\ty\\z", TRICKY]]),
        "host_samples": (["seq", "node_id", "ts_ms", "load1_milli", "cpu_user_ms",
                          "mem_free_bytes", "disk_reads"],
                         [[1, 3, TS, -1, 9007199254740992, None, -9007199254740992]]),
        "proc_samples": (["seq", "proc_id", "job_id", "ts_ms", "state", "threads", "rss_bytes"],
                         [[2, 9, 7, TS, TRICKY, 3, None]]),
        "events": (["seq", "node_id", "job_id", "ts_ms", "kind", "pid", "value", "message"],
                   [[3, 3, 7, TS, TRICKY, 4242, -5, TRICKY],
                    [4, 3, None, TS, "plain", None, None, None]]),
        "marks": (["seq", "job_id", "ts_ms", "name", "value", "text"],
                  [[5, 7, TS, TRICKY, 0.1, TRICKY],
                   [6, 7, TS + 1, "m", 1.2345678901234567e-300, ""]]),
        "fs_samples": (["seq", "node_id", "ts_ms", "mount", "used_bytes", "total_bytes"],
                       [[7, 3, TS, TRICKY, 1, 2]]),
        "proc_libs": (["seq", "proc_id", "ts_ms", "name", "version", "path"],
                      [[8, 9, TS, TRICKY, None, TRICKY]]),
    }


# what is read back of each table: the columns the batch set, by the head's row order
READ_BACK = [
    ("jobs", "SELECT scheduler, job_id, name, command, \"user\", uid, pid FROM jobs"),
    ("procs", "SELECT pid, comm, cmdline FROM procs"),
    ("host_samples", "SELECT ts_ms, load1_milli, cpu_user_ms, mem_free_bytes, disk_reads"
                     " FROM host_samples"),
    ("proc_samples", "SELECT state, threads, rss_bytes FROM {proc_samples}"),
    ("events", "SELECT kind, pid, value, message, job_id IS NULL FROM events ORDER BY seq"),
    ("marks", "SELECT name, value, text FROM marks ORDER BY seq"),
    ("fs_samples", "SELECT mount, used_bytes, total_bytes FROM fs_samples"),
    ("proc_libs", "SELECT name, version, path FROM proc_libs"),
]


def _many_rows(tables, n):
    """The tables' fact rows each made n rows (seqs 1..), so that they go by COPY."""
    out, seq = {}, 0
    for name, (cols, rows) in tables.items():
        if "seq" not in cols:
            out[name] = (cols, rows)
            continue
        many, ts = [], cols.index("ts_ms")
        for k in range(n):
            for r in rows:
                seq += 1
                row = list(r)
                row[0], row[ts] = seq, r[ts] + k
                many.append(row)
        out[name] = (cols, many)
    return out, seq


# array literals' own syntax in text: braces, commas, quotes, the word NULL, spaces
ARRAYISH = ['{a,b}', 'NULL', '', ' ', '"', '\\', '{"x": [1, 2]}', 'a,b', 'NULL ']


def test_text_and_numbers_arrive_as_sent(wd):
    heads = [Head(wd, db=wd.join("copy-%s.db" % b), name="head-" + b, backend=b)
             for b in ("postgresql", "sqlite")]
    try:
        body = _batch("copy1", "cn1", 0, 8, _tricky_tables())
        for h in heads:
            eq(_post(h, body), (200, {"acked_seq": 8}), "the batch's answer")
        pg, lite = (h.db for h in heads)
        got = {t: hh.sql(pg, q.format(proc_samples=hh.proc_samples(pg))) for t, q in READ_BACK}
        eq(got["procs"], [(4242, "x\ty\\z", TRICKY)], "the command line at PostgreSQL")
        eq(got["jobs"], [("local", "j\t1", TRICKY, TRICKY, "\u00fcser", 1000, 4242)], "jobs")
        eq(got["host_samples"], [(TS, -1, 9007199254740992, None, -9007199254740992)],
           "host_samples")
        eq(got["proc_samples"], [(TRICKY, 3, None)], "proc_samples")
        eq([r[:4] for r in got["events"]], [(TRICKY, 4242, -5, TRICKY),
                                           ("plain", None, None, None)], "events")
        eq(got["marks"], [(TRICKY, 0.1, TRICKY), ("m", 1.2345678901234567e-300, "")], "marks")
        eq(got["fs_samples"], [(TRICKY, 1, 2)], "fs_samples")
        eq(got["proc_libs"], [(TRICKY, None, TRICKY)], "proc_libs")
        for t, q in READ_BACK:  # and the same as a SQLite head holds
            eq([tuple(bool(v) if isinstance(v, bool) else v for v in r)
                for r in hh.sql(lite, q.format(proc_samples=hh.proc_samples(lite)))],
               [tuple(int(v) if isinstance(v, bool) else v for v in r) for r in got[t]],
               "%s on both backends" % t)
        # the same by COPY: 70 rows a fact table; and text that looks like an array
        many, last = _many_rows(_tricky_tables(), 70)
        arrayish = {"events": (["seq", "node_id", "job_id", "ts_ms", "kind", "message"],
                               [[i + 1, 3, None, TS + i, v, v]
                                for i, v in enumerate(ARRAYISH)])}
        for h in heads:
            eq(_post(h, _batch("copy2", "cn2", 0, last, many)), (200, {"acked_seq": last}),
               "the batch of 70 rows a table")
            eq(_post(h, _batch("copy3", "cn3", 0, len(ARRAYISH), arrayish)),
               (200, {"acked_seq": len(ARRAYISH)}), "the batch of array-like text")
        # the 70-row batch (COPY; the process samples in sets) and the array-like text (INSERT ... unnest), as sent,
        # on both backends
        for db in (pg, lite):
            eq(hh.sql(db, "SELECT count(*), min(state), max(state) FROM %s s JOIN"
                      " procs p ON p.id = s.proc_id JOIN nodes n ON n.id = p.node_id"
                      " WHERE n.hostname = 'cn2'" % hh.proc_samples(db)), [(70, TRICKY, TRICKY)],
               "proc_samples by COPY (PostgreSQL: in sets)")
            eq(hh.sql(db, "SELECT kind, message FROM events e JOIN nodes n ON n.id = e.node_id"
                      " WHERE n.hostname = 'cn3' ORDER BY e.ts_ms"),
               [(v, v) for v in ARRAYISH], "array-like text")
    finally:
        for h in heads:
            eq(h.kill(15), 0, "head exit")


def _counts(db):
    return {t: hh.sql(db, "SELECT count(*) FROM %s"
                      % (hh.proc_samples(db) if t == "proc_samples" else t))[0][0]
            for t in ("host_samples", "cpu_samples", "proc_samples", "events")}


def _midway(events_pid=4242, proc_id=9, events_kind="k"):
    """A batch of 4 tables: host_samples and cpu_samples first (their rows go through),
    then proc_samples (proc_id) and events (pid, kind), any of which can be made bad."""
    return {
        "jobs": (["id", "node_id", "scheduler", "job_id", "start_ms"],
                 [[7, 3, "local", "mid", TS]]),
        "procs": (["id", "node_id", "job_id", "pid", "start_ms", "cmdline"],
                  [[9, 3, 7, 4242, TS, "a\tb"]]),
        "host_samples": (["seq", "node_id", "ts_ms", "load1_milli"],
                         [[1, 3, TS, 10], [5, 3, TS + 1000, 11]]),
        "cpu_samples": (["seq", "node_id", "ts_ms", "cpu", "user_ms"],
                        [[2, 3, TS, 0, 100]]),
        "proc_samples": (["seq", "proc_id", "job_id", "ts_ms", "state", "threads"],
                         [[3, proc_id, 7, TS, "R", 1]]),
        "events": (["seq", "node_id", "job_id", "ts_ms", "kind", "pid"],
                   [[4, 3, 7, TS, events_kind, events_pid]]),
    }


def test_batch_failing_midway_leaves_nothing(wd):
    head = Head(wd, db=wd.join("mid.db"), name="head", backend="postgresql")
    try:
        db = head.db
        seq0 = hh.sql(db, "SELECT coalesce(max(CAST(value AS bigint)), 0) FROM meta"
                      " WHERE key = 'next_seq'")[0][0]
        # found by the head: proc_id 99 is not in the batch
        st, msg = _post(head, _batch("mid1", "mn1", 0, 5, _midway(proc_id=99)))
        eq(st, 400, "a batch naming a process it does not hold")
        check("proc_id 99 is not in the batch" in msg, msg)
        # found by the head too: a pid that is not an integer (the arrays go in binary)
        st, msg = _post(head, _batch("mid1", "mn1", 0, 5, _midway(events_pid="x4242")))
        eq(st, 400, "a batch with a value its column refuses")
        check("x4242" in msg, msg)
        # found by the server, at the commit: events.kind is NOT NULL
        st, msg = _post(head, _batch("mid1", "mn1", 0, 5, _midway(events_kind=None)))
        eq(st, 400, "a batch with a NULL its column refuses")
        check("kind" in msg and "null" in msg.lower(), msg)
        eq(_counts(db), {"host_samples": 0, "cpu_samples": 0, "proc_samples": 0, "events": 0},
           "nothing of the refused batches")
        eq(hh.sql(db, "SELECT acked_seq FROM agents WHERE agent_id = 'mid1'"), [],
           "no cursor for the refused batches")
        # the agent sends it again, corrected; and once more, as after a lost answer
        good = _batch("mid1", "mn1", 0, 5, _midway())
        eq(_post(head, good), (200, {"acked_seq": 5}), "the corrected batch")
        eq(_post(head, good), (200, {"acked_seq": 5}), "the same batch again")
        eq(_counts(db), {"host_samples": 2, "cpu_samples": 1, "proc_samples": 1, "events": 1},
           "the corrected batch once")
        # the seqs the refused batches drew were given back: the stored rows' are the next
        eq(hh.sql(db, "SELECT min(seq), max(seq), count(*) FROM (SELECT seq FROM host_samples"
                  " UNION ALL SELECT seq FROM cpu_samples UNION ALL SELECT seq FROM"
                  " proc_samples_all UNION ALL SELECT seq FROM events) s")[0],
           (seq0 or 1, (seq0 or 1) + 4, 5), "the seqs of the stored rows")
        # bad and good batches of several agents at once (likely one group): each its own
        out = {}

        def send(name, body):
            out[name] = _post(head, body)[0]
        bodies = {"g%d" % i: _batch("g%d" % i, "gn%d" % i, 0, 5, _midway()) for i in range(4)}
        bodies.update({"b%d" % i: _batch("b%d" % i, "bn%d" % i, 0, 5, _midway(proc_id=98))
                       for i in range(3)})
        threads = [threading.Thread(target=send, args=kv) for kv in bodies.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        eq(out, {k: 200 if k[0] == "g" else 400 for k in bodies}, "each batch's answer")
        eq(_counts(db), {"host_samples": 10, "cpu_samples": 5, "proc_samples": 5, "events": 5},
           "the good batches' rows, once each")
    finally:
        eq(head.kill(15), 0, "head exit")


def _stop_and_compare(head, proc, adb, errf):
    """Stops the agent, waits for the head to hold its last rows (those after the
    mark, up to its last tick), compares its rows with the head's (each once, seqs
    distinct) and stops the head."""
    try:
        eq(stop_agent(proc, errf), 0, "agent exit")
        wait_for(lambda: hh.held(head.db, adb), timeout=30, what="the agent's last rows")
        for t in ("host_samples", "cpu_samples", "proc_samples", "job_samples"):
            eq(head_side(head.db, adb, t), agent_side(adb, t), t)
        eq(hh.sql(head.db, "SELECT count(*), count(DISTINCT seq) FROM host_samples")[0],
           (hh.sql(adb, "SELECT count(*) FROM host_samples")[0][0],) * 2,
           "host_samples once each, seqs distinct")
    finally:
        if proc.poll() is None:
            stop_agent(proc, errf)
        eq(head.kill(15), 0, "head exit")


# the partitioned fact tables (facts.h: FACT_TIMED): FACT_TABLES but the gap records
TIMED = [t for t in hh.FACT_TABLES if t != "gaps"]


def _layout(name):
    """(fact tables with a primary key, fact tables with a BRIN index on seq, the meta row)."""
    keyed = hh.pg().query("SELECT count(*) FROM pg_constraint c JOIN pg_class t"
                          " ON t.oid = c.conrelid WHERE c.contype = 'p' AND t.relname IN (%s)"
                          % ", ".join("'%s'" % t for t in TIMED), db=name)[0][0]
    brin = hh.pg().query("SELECT count(*) FROM pg_indexes WHERE tablename IN (%s)"
                         " AND indexdef LIKE '%%USING brin (seq)%%'"
                         % ", ".join("'%s'" % t for t in TIMED), db=name)[0][0]
    meta = hh.pg().query("SELECT value FROM meta WHERE key = 'fact_seq_index'", db=name)
    return keyed, brin, meta[0][0] if meta else None


def test_fact_tables_keyless_with_brin(wd):
    head = Head(wd, db=wd.join("layout.db"), name="head-layout", backend="postgresql")
    name = hh._pg_name(head.db)
    eq(_layout(name), (0, len(TIMED), "brin"), "a new store: (keyed, BRIN on seq, meta)")
    proc, adb, _, errf = start_agent(wd, head, "layout")
    try:
        wait_for(caught_up(head.db, adb), timeout=60, what="the agent's first rows")
        port = head.port
        eq(head.kill(15), 0, "head exit")
        # the store as a head before this change made it: keys (seq, ts_ms), no BRIN
        hh.pg().script("".join('DROP INDEX "%s_seq"; ALTER TABLE "%s" ADD PRIMARY KEY'
                               ' (seq, ts_ms);\n' % (t, t) for t in TIMED)
                       + "DELETE FROM meta WHERE key = 'fact_seq_index';\n", db=name)
        eq(_layout(name), (len(TIMED), 0, None), "the store made old")
        head = Head(wd, db=wd.join("layout.db"), port=port, name="head-layout2",
                    backend="postgresql")
        check("the fact tables' keys replaced by BRIN indexes on seq" in open(head.log).read(),
              "the change said: " + open(head.log).read())
        eq(_layout(name), (0, len(TIMED), "brin"), "the old store changed")
        # the agent, which streamed on to nobody meanwhile, catches up, each row once
        wait_for(caught_up(head.db, adb), timeout=60, what="the agent's rows at the new head")
    except BaseException:
        if proc.poll() is None:
            stop_agent(proc, errf)
        raise
    _stop_and_compare(head, proc, adb, errf)


CONVERTED = {
    "host_samples": (["seq", "node_id", "ts_ms", "load1_milli", "cpu_user_ms", "disk_reads"],
                     [[1, 3, TS, 2.0, "12", -7]]),
    "marks": (["seq", "job_id", "ts_ms", "name", "value", "text"],
              [[2, None, TS, 42, 5, 0.5]]),
}


def test_values_converted_as_columns_take(wd):
    heads = [Head(wd, db=wd.join("conv-%s.db" % b), name="conv-" + b, backend=b)
             for b in ("postgresql", "sqlite")]
    try:
        for h in heads:
            eq(_post(h, _batch("conv", "cv1", 0, 2, CONVERTED)), (200, {"acked_seq": 2}),
               "the batch of converted values")
            eq(hh.sql(h.db, "SELECT load1_milli, cpu_user_ms, disk_reads FROM host_samples"),
               [(2, 12, -7)], "integer columns")
            eq(hh.sql(h.db, "SELECT name, value, text FROM marks"), [("42", 5.0, "0.5")],
               "a text column and a real one")
            for bad in (1.5, "twelve", "12abc"):
                host = (CONVERTED["host_samples"][0],
                        [[3, 3, TS + 1, bad, 1, 1]])
                code, why = _post(h, _batch("conv", "cv1", 2, 3, {"host_samples": host}))
                eq(code, 400, "%r into an integer column: the answer (%s)" % (bad, why))
            eq(hh.sql(h.db, "SELECT count(*) FROM host_samples"), [(1,)], "nothing stored")
    finally:
        for h in heads:
            eq(h.kill(15), 0, "head exit")


def _shifted(tables, by):
    """The tables with every fact row's seq moved up by `by`: the agent's next batch."""
    return {name: (cols, [[v + by if c == "seq" else v for c, v in zip(cols, r)] for r in rows])
            for name, (cols, rows) in tables.items()}


def test_agent_row_deleted(wd):
    head = Head(wd, db=wd.join("agentrow.db"), name="head", backend="postgresql")
    try:
        first = _tricky_tables()
        eq(_post(head, _batch("rowgone", "cn9", 0, 8, first)), (200, {"acked_seq": 8}),
           "the first batch")
        eq(_post(head, _batch("rowgone", "cn9", 8, 16, _shifted(first, 8))),
           (200, {"acked_seq": 16}), "the second batch (the agent's row known)")
        hh.pg().psql("DELETE FROM agents WHERE agent_id = 'rowgone'", db=hh._pg_name(head.db))
        third = _batch("rowgone", "cn9", 16, 24, _shifted(first, 16))
        for n, what in enumerate(("the third batch, the agent's row deleted",
                                  "the third batch again"), 1):
            eq(_post(head, third), (200, {"acked_seq": 24}), what)
            eq(hh.sql(head.db, "SELECT acked_seq, batches FROM agents"
                      " WHERE agent_id = 'rowgone'"), [(24, n)], "the agent's row made again")
        eq(hh.sql(head.db, "SELECT count(*), count(DISTINCT ts_ms), min(seq) < max(seq)"
                  " FROM host_samples"), [(3, 1, True)], "each batch's host sample once")
        eq(hh.sql(head.db, "SELECT count(*) FROM proc_samples_all"), [(3,)], "process samples")
    finally:
        eq(head.kill(15), 0, "head exit")


def test_connection_killed_mid_copy(wd):
    head = Head(wd, db=wd.join("kill.db"), name="head", backend="postgresql")
    proc, adb, _, errf = start_agent(wd, head, "copykill")
    try:
        name = hh._pg_name(head.db)
        wait_for(lambda: hh.held(head.db, adb), timeout=30, what="the agent's first rows")
        killed = 0
        deadline = time.monotonic() + scaled(8)
        while time.monotonic() < deadline:
            rows = hh.pg().psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                                " WHERE datname = '%s' AND pid <> pg_backend_pid()"
                                " AND application_name NOT LIKE 'psql%%'" % name, db=name)
            killed += int(rows[0][0])
            time.sleep(0.15)
        check(killed >= 5, "connections killed: %d" % killed)
        wait_for(caught_up(head.db, adb), timeout=60, what="the head holding the agent's rows")
    except BaseException:
        if proc.poll() is None:
            stop_agent(proc, errf)
        raise
    _stop_and_compare(head, proc, adb, errf)



DAY_MS = 86400000
DAY_B = (TS // DAY_MS + 1) * DAY_MS  # the UTC day after TS's


def _sets_batch(from_seq=0, jobs=True):
    """Process samples of two jobs and of none, over two UTC days, interleaved: job 7's
    300 rows (more than one set holds), job 8's eight on TS's day (a set: PROC_SET_MIN)
    and two on the next, two of no job on the next (too few for a set: rows); TRICKY and
    other text in state.  jobs False: the rows without a job_id column (as the sets do
    not take them)."""
    rows = []
    for k in range(300):
        rows.append([9, 7, TS + 10 * k, TRICKY if k % 50 == 0 else "R", k, None if k % 7 else k])
        if k in (10, 11, 12, 13, 14, 15, 16, 30):
            rows.append([10, 8, TS + 10 * k, "S", 1, 4096])
        if k in (40, 50):
            rows.append([10, 8, DAY_B + k, "D", 2, 8192])
            rows.append([11, None, DAY_B + k, "Z" * k, 3, None])
    seq = from_seq
    out = []
    for r in rows:
        seq += 1
        out.append([seq] + r if jobs else [seq, r[0]] + r[2:])
    tables = {
        "jobs": (["id", "node_id", "scheduler", "job_id", "start_ms"],
                 [[7, 3, "slurm", "j7", TS], [8, 3, "slurm", "j8", TS]]),
        "procs": (["id", "node_id", "job_id", "pid", "ppid", "start_ms", "comm"],
                  [[9, 3, 7, 4242, 1, TS, "a"], [10, 3, 8, 4243, 1, TS, "b"],
                   [11, 3, None, 4244, 1, TS, "c"]]),
        "proc_samples": (["seq", "proc_id"] + (["job_id"] if jobs else [])
                         + ["ts_ms", "state", "threads", "rss_bytes"], out),
    }
    return tables, seq, [(r[1] + 4233, {7: "j7", 8: "j8"}.get(r[2]) if jobs else None)
                         + tuple(r[3 if jobs else 2:]) for r in out]


# the process samples as the batch had them: pid, job, time, state, threads, rss
AS_SENT = ("SELECT p.pid, j.job_id, s.ts_ms, s.state, s.threads, s.rss_bytes FROM {} s"
           " JOIN procs p ON p.id = s.proc_id LEFT JOIN jobs j ON j.id = s.job_id"
           " ORDER BY s.seq")


def test_process_samples_in_sets(wd):
    heads = [Head(wd, db=wd.join("sets-%s.db" % b), name="sets-" + b, backend=b)
             for b in ("postgresql", "sqlite")]
    try:
        tables, last, sent = _sets_batch()
        for h in heads:
            for what in ("the batch", "the same batch again"):
                eq(_post(h, _batch("sets1", "sn1", 0, last, tables)),
                   (200, {"acked_seq": last}), what)
        pg, lite = (h.db for h in heads)
        # every row as sent, in the batch's order (seq), once; the same on both backends
        eq(hh.sql(pg, AS_SENT.format("proc_samples_all")), sent, "proc_samples_all")
        eq(hh.sql(lite, AS_SENT.format("proc_samples")), sent, "proc_samples at a SQLite head")
        eq(hh.sql(pg, "SELECT count(*), count(DISTINCT seq), max(seq) - min(seq) + 1"
                  " FROM proc_samples_all")[0], (len(sent),) * 3, "seqs: distinct, in one run")
        # a job's samples of a day fewer than PROC_SET_MIN (8) are rows
        eq(hh.sql(pg, "SELECT p.pid, s.ts_ms FROM proc_samples s JOIN procs p"
                  " ON p.id = s.proc_id ORDER BY s.seq"),
           [(pid, ts) for pid, job, ts, *_ in sent if ts >= DAY_B],
           "rows outside the sets: job 8's two of the second day, the two of no job")
        # a set: one job, one UTC day, its times' bounds, stored in its page as it is
        eq(hh.sql(pg, "SELECT j.job_id, s.ts_lo / %d, count(*) FROM proc_sample_sets s"
                  " LEFT JOIN jobs j ON j.id = s.job_id GROUP BY 1, 2 ORDER BY 1, 2" % DAY_MS),
           [("j7", TS // DAY_MS, 3), ("j8", TS // DAY_MS, 1)],
           "sets by (job, day): job 7's 300 rows cut in three (PROC_SET_BYTES)")
        eq(hh.sql(pg, "SELECT count(*) FROM proc_sample_sets WHERE ts_lo / %d <> ts_hi / %d"
                  " OR ts_lo <> (SELECT min(t) FROM unnest(ts_ms) t)"
                  " OR ts_hi <> (SELECT max(t) FROM unnest(ts_ms) t)" % (DAY_MS, DAY_MS)),
           [(0,)], "sets whose ts_lo, ts_hi are not their rows' first and last day and time")
        eq(hh.sql(pg, "SELECT count(*) FROM proc_sample_sets s WHERE tableoid::regclass::text"
                  " <> 'proc_sample_sets_d' || to_char(to_timestamp(s.ts_lo / 1000)"
                  " AT TIME ZONE 'UTC', 'YYYYMMDD')"), [(0,)], "sets outside their day's partition")
        size = hh.sql(pg, "SELECT max(pg_column_size(s.*)) FROM proc_sample_sets s")[0][0]
        check(size < 8160, "the largest set: %d bytes, a page holds 8160" % size)
        # compressed by LZ4 where the server has it: job 7's sets (over 2 KiB), not the others
        lz4 = hh.sql(pg, "SELECT count(*) FROM pg_settings WHERE"
                     " name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)")[0][0]
        eq(hh.sql(pg, "SELECT j.job_id, pg_column_compression(s.seq), count(*)"
                  " FROM proc_sample_sets s LEFT JOIN jobs j ON j.id = s.job_id"
                  " GROUP BY 1, 2 ORDER BY 1, 2"),
           [("j7", "lz4" if lz4 else None, 3), ("j8", None, 1)],
           "sets compressed (the server %s LZ4)" % ("has" if lz4 else "lacks"))
        eq(hh.sql(pg, "SELECT count(*) FROM pg_class c JOIN pg_class t"
                  " ON t.oid = c.reltoastrelid WHERE c.relname LIKE 'proc_sample_sets_d%'"
                  " AND pg_relation_size(t.oid) > 0"), [(0,)], "sets stored out of line (TOAST)")
        # a job's rows through the sets' job index, as the reports read them
        eq(hh.sql(pg, "SELECT count(*) FROM proc_samples_all WHERE job_id ="
                  " (SELECT id FROM jobs WHERE job_id = 'j8')"), [(10,)], "job 8's rows")
    finally:
        for h in heads:
            eq(h.kill(15), 0, "head exit")


def test_store_before_sets_made_so(wd):
    head = Head(wd, db=wd.join("old.db"), name="old1", backend="postgresql")
    name = hh._pg_name(head.db)
    try:
        # rows without a job_id column: the sets do not take them, COPYed into proc_samples
        tables, last, sent_a = _sets_batch(jobs=False)
        eq(_post(head, _batch("old", "on1", 0, last, tables)), (200, {"acked_seq": last}),
           "the batch without job_id")
        eq(hh.sql(head.db, "SELECT count(*) FROM proc_samples"), [(len(sent_a),)],
           "rows COPYed to proc_samples")
        eq(hh.sql(head.db, AS_SENT.format("proc_samples_all")), sent_a, "all of them")
        port = head.port
        eq(head.kill(15), 0, "head exit")
        # the store as a head before the sets made it
        hh.pg().script("CREATE OR REPLACE VIEW proc_samples_all AS SELECT * FROM proc_samples;\n"
                       "DROP TABLE proc_sample_sets;\n"
                       "DELETE FROM meta WHERE key = 'proc_sample_sets';\n", db=name)
        head = Head(wd, db=wd.join("old.db"), port=port, name="old2", backend="postgresql")
        check("process samples stored in sets from now on" in open(head.log).read(),
              "the change said: " + open(head.log).read())
        eq(hh.sql(head.db, "SELECT value FROM meta WHERE key = 'proc_sample_sets'"), [("1",)],
           "the meta row")
        tables, top, sent_b = _sets_batch(from_seq=last)
        eq(_post(head, _batch("old", "on1", last, top, tables)), (200, {"acked_seq": top}),
           "the next batch")
        eq(hh.sql(head.db, "SELECT count(*) FROM proc_samples"), [(len(sent_a) + 4,)],
           "proc_samples' rows: the old ones and the new groups too small for a set")
        eq(hh.sql(head.db, "SELECT count(*) FROM proc_sample_sets"), [(4,)], "the new sets")
        eq(hh.sql(head.db, AS_SENT.format("proc_samples_all")), sent_a + sent_b,
           "the old rows and the new, in order")
    finally:
        eq(head.kill(15), 0, "head exit")


run_tests(globals())
