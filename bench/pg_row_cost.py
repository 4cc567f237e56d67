#!/usr/bin/env python3
"""pg_row_cost.py - what PostgreSQL's server spends to take one batch of process
samples, by table layout: the floor under the head's ingest on PostgreSQL
(bench/RESULTS.md section 13).

A cluster of its own (head_ingest.PgCluster: initdb in a temporary directory,
default durability), N transactions (default 2000) of 200 rows each, the rows of
proc_samples (4 jobs of 50 processes), fed by psql from a file, each layout twice,
interleaved:

  c  one row into a one-column table: a transaction and its commit, nothing else
  a  proc_samples as the head makes it: partitioned by ts_ms, key (seq, ts_ms),
     index (job_id); COPY text
  n  the same table with no key and no index
  k  no key, one index (job_id, seq)
  r  the head's layout since 2026-11-30: no key; a BRIN index on seq (a summary
     per 128 pages) and the b-tree (job_id)
  y  layout r fed by COPY's binary format (each field its length and its bytes)
  d  layout r, the COPY into its partition (d_default) rather than the parent: no
     routing of each row, no routing set up for each statement
  b  a row per job and batch, each column an array (50 values), key (min_seq,
     ts_ms), index (job_id, max_seq); COPY text

Measured: the cluster's CPU (utime+stime of the postmaster, its children and its
reaped children) over each file, per batch; the table's size with its indexes.

Usage: [LAYOUTS=cankrbyd] python3 bench/pg_row_cost.py [N]   (as root: the cluster runs as
postgres; LAYOUTS: which layouts, in this order, each twice)
"""
import glob, os, sys, random, struct, subprocess, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from head_ingest import PgCluster as Postgres, PG_BIN
N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
random.seed(1)
pg = Postgres().start()
try:
    url = pg.createdb("exp")
    cols = ["user_ms", "system_ms", "child_user_ms", "child_system_ms", "rss_bytes", "hwm_bytes",
            "swap_bytes", "read_bytes", "write_bytes"]
    ddl = f"""
CREATE TABLE a (seq bigint NOT NULL, proc_id bigint NOT NULL, job_id bigint, ts_ms bigint NOT NULL,
  state text, threads bigint, {', '.join(c + ' bigint' for c in cols)},
  PRIMARY KEY (seq, ts_ms)) PARTITION BY RANGE (ts_ms);
CREATE INDEX a_job ON a (job_id);
CREATE TABLE a_default PARTITION OF a DEFAULT;
CREATE TABLE n (seq bigint NOT NULL, proc_id bigint NOT NULL, job_id bigint, ts_ms bigint NOT NULL,
  state text, threads bigint, {', '.join(c + ' bigint' for c in cols)}) PARTITION BY RANGE (ts_ms);
CREATE TABLE n_default PARTITION OF n DEFAULT;
CREATE TABLE k (seq bigint NOT NULL, proc_id bigint NOT NULL, job_id bigint, ts_ms bigint NOT NULL,
  state text, threads bigint, {', '.join(c + ' bigint' for c in cols)}) PARTITION BY RANGE (ts_ms);
CREATE INDEX k_job ON k (job_id, seq);
CREATE TABLE k_default PARTITION OF k DEFAULT;
CREATE TABLE r (seq bigint NOT NULL, proc_id bigint NOT NULL, job_id bigint, ts_ms bigint NOT NULL,
  state text, threads bigint, {', '.join(c + ' bigint' for c in cols)}) PARTITION BY RANGE (ts_ms);
CREATE INDEX r_seq ON r USING brin (seq) WITH (autosummarize = on);
CREATE INDEX r_job ON r (job_id);
CREATE TABLE r_default PARTITION OF r DEFAULT;
CREATE TABLE d (seq bigint NOT NULL, proc_id bigint NOT NULL, job_id bigint, ts_ms bigint NOT NULL,
  state text, threads bigint, {', '.join(c + ' bigint' for c in cols)}) PARTITION BY RANGE (ts_ms);
CREATE INDEX d_seq ON d USING brin (seq) WITH (autosummarize = on);
CREATE INDEX d_job ON d (job_id);
CREATE TABLE d_default PARTITION OF d DEFAULT;
CREATE TABLE y (seq bigint NOT NULL, proc_id bigint NOT NULL, job_id bigint, ts_ms bigint NOT NULL,
  state text, threads bigint, {', '.join(c + ' bigint' for c in cols)}) PARTITION BY RANGE (ts_ms);
CREATE INDEX y_seq ON y USING brin (seq) WITH (autosummarize = on);
CREATE INDEX y_job ON y (job_id);
CREATE TABLE y_default PARTITION OF y DEFAULT;
CREATE TABLE c (x bigint);
CREATE TABLE b (job_id bigint, ts_ms bigint NOT NULL, min_seq bigint NOT NULL, max_seq bigint NOT NULL,
  seq bigint[], proc_id bigint[], state text[], threads bigint[], {', '.join(c + ' bigint[]' for c in cols)},
  PRIMARY KEY (min_seq, ts_ms)) PARTITION BY RANGE (ts_ms);
CREATE INDEX b_job ON b (job_id, max_seq);
CREATE TABLE b_default PARTITION OF b DEFAULT;
"""
    pg.query("exp", ddl)
    seq = 0
    fa = open("/tmp/jobscope-pg-row-cost-a.sql", "w"); fb = open("/tmp/jobscope-pg-row-cost-b.sql", "w")
    fy = open("/tmp/jobscope-pg-row-cost-y.sql", "w")
    for t in range(N):
        ts = 1700000000000 + t * 1000
        rows = []
        for p in range(200):
            seq += 1
            rows.append([seq, 1000 + p, 1 + p // 50, ts, "S", 4] + [random.randrange(1 << 40) for _ in cols])
        fa.write("BEGIN;\nCOPY a FROM STDIN;\n")
        for r in rows:
            fa.write("\t".join(str(v) for v in r) + "\n")
        fa.write("\\.\nCOMMIT;\n")
        fb.write("BEGIN;\nCOPY b FROM STDIN;\n")
        for j in range(4):
            part = rows[j * 50:(j + 1) * 50]
            arr = lambda k: "{" + ",".join(str(r[k]) for r in part) + "}"
            line = [str(j + 1), str(ts), str(part[0][0]), str(part[-1][0]), arr(0), arr(1), arr(4), arr(5)] + [arr(6 + i) for i in range(len(cols))]
            fb.write("\t".join(line) + "\n")
        fb.write("\\.\nCOMMIT;\n")
        # binary: a file per batch (psql's \\copy ... FROM FILE WITH (FORMAT binary))
        blob = bytearray(b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0))
        for r in rows:
            blob += struct.pack("!h", len(r))
            for v in r:
                if isinstance(v, str):
                    blob += struct.pack("!i", len(v)) + v.encode()
                else:
                    blob += struct.pack("!iq", 8, v)
        blob += struct.pack("!h", -1)
        bpath = f"/tmp/jobscope-pg-row-cost-y{t}.bin"
        with open(bpath, "wb") as f:
            f.write(blob)
        fy.write(f"BEGIN;\n\\copy y FROM '{bpath}' WITH (FORMAT binary)\nCOMMIT;\n")
    fa.close(); fb.close(); fy.close()
    body = open("/tmp/jobscope-pg-row-cost-a.sql").read()
    open("/tmp/jobscope-pg-row-cost-n.sql", "w").write(body.replace("COPY a FROM", "COPY n FROM"))
    open("/tmp/jobscope-pg-row-cost-k.sql", "w").write(body.replace("COPY a FROM", "COPY k FROM"))
    open("/tmp/jobscope-pg-row-cost-r.sql", "w").write(body.replace("COPY a FROM", "COPY r FROM"))
    open("/tmp/jobscope-pg-row-cost-d.sql", "w").write(body.replace("COPY a FROM", "COPY d_default FROM"))
    open("/tmp/jobscope-pg-row-cost-c.sql", "w").write("BEGIN;\nINSERT INTO c VALUES (1);\nCOMMIT;\n" * N)
    order = os.environ.get("LAYOUTS", "cankrby")
    for name in order + order:
        pg.query("exp", f"TRUNCATE {name}; CHECKPOINT")
        c0 = pg.cpu(); t0 = time.time()
        subprocess.run(pg.as_pg + [f"{PG_BIN}/psql", "-q", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "postgres",
                                    "-d", "exp", "-X", "-f", f"/tmp/jobscope-pg-row-cost-{name}.sql"], check=True,
                       stdout=subprocess.DEVNULL)
        c1 = pg.cpu()
        ticks = (c1[0] - c0[0]) + (c1[1] - c0[1])
        size = pg.query("exp", f"SELECT pg_total_relation_size(CASE WHEN '{name}' = 'c' THEN 'c' ELSE '{name}_default' END)")
        print(f"{name}: server CPU {ticks / os.sysconf('SC_CLK_TCK'):.2f} s for {N} batches of 200 rows "
              f"({ticks / os.sysconf('SC_CLK_TCK') / N * 1000:.3f} ms/batch), wall {time.time() - t0:.1f} s, table+indexes {int(size) >> 20} MiB")
finally:
    pg.stop()
    for name in "abnkcryd":
        try:
            os.remove(f"/tmp/jobscope-pg-row-cost-{name}.sql")
        except OSError:
            pass
    for path in glob.glob("/tmp/jobscope-pg-row-cost-y*.bin"):
        os.remove(path)
