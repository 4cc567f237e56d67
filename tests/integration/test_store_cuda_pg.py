"""The CUDA tables of a store in PostgreSQL (schema 9): the unit test
test_store_cuda's round trip, replace, tick and merge cases run again against
a private server (pg_cluster), and a schema-8 database upgraded by the first
writer that opens it (the two tables made, its version 9).

argv[1]: the built test_store_cuda.  Skipped (77) without PostgreSQL.
"""
import os
import re
import subprocess
import sys

from harness import run_tests, check, eq, scaled
from head_harness import pg  # one private server, stopped at exit

UNIT = sys.argv[1] if len(sys.argv) > 1 else None
def unit(url):
    env = dict(os.environ, JOBSCOPE_TEST_PG_URL=url, CMOCKA_MESSAGE_OUTPUT="stdout")
    return subprocess.run([UNIT], env=env, capture_output=True, text=True,
                          timeout=scaled(120))


def test_unit_cases_on_postgresql(wd):
    url = pg().create_db("cuda1")
    r = unit(url)
    eq(r.returncode, 0, "test_store_cuda on PostgreSQL:\n" + r.stdout + r.stderr)
    # two groups (SQLite, then PostgreSQL): every case of both ran and passed
    ran = [int(n) for n in re.findall(r"Running (\d+) test\(s\)", r.stdout)]
    eq(len(ran), 2, "the SQLite and the PostgreSQL groups ran:\n" + r.stdout)
    check(ran[1] >= 4 and r.stdout.count("[       OK ]") == sum(ran),
          "every PostgreSQL case passed:\n" + r.stdout)
    # what the round trip left: the 4,000-byte name and a count above 2^62, as written
    rows = pg().query("SELECT DISTINCT length(name), count, bytes FROM cuda_stats"
                      " WHERE pid = 4242 AND kind = 'memcpy'", db="cuda1")
    eq(len(rows), 1, "the memcpy rows of pid 4242 (round trip, tick) are the same")
    eq([int(v) for v in rows[0]], [18, (1 << 62) + 3, (1 << 62) + 12345], "memcpy row")
    rows = pg().query("SELECT max(length(name)) FROM cuda_stats WHERE kind = 'kernel'", db="cuda1")
    eq(int(rows[0][0]), 4000, "the 4,000-byte kernel name")


def test_schema_8_upgraded(wd):
    url = pg().create_db("cuda2")
    r = unit(url)
    eq(r.returncode, 0, "first run:\n" + r.stdout)
    pg().psql("DROP TABLE cuda_stats; DROP TABLE cuda_procs; DROP TABLE app_samples; DROP INDEX marks_job_ts;"
              " DROP TABLE energy_samples; DROP TABLE proc_libs;"
              " ALTER TABLE job_samples DROP COLUMN cpu_wait_ms; ALTER TABLE jobs DROP COLUMN sluid;"
              " ALTER TABLE sessions DROP COLUMN owner;"
              " ALTER TABLE jobs DROP COLUMN k8s_owner; ALTER TABLE jobs DROP COLUMN k8s_owner_label;"
              " UPDATE meta SET value = '8' WHERE key = 'schema_version'", db="cuda2")
    eq(pg().query("SELECT to_regclass('cuda_procs') IS NULL", db="cuda2")[0][0], 1,
       "tables dropped")
    r = unit(url)
    eq(r.returncode, 0, "a writer upgrades schema 8:\n" + r.stdout + r.stderr)
    eq(pg().query("SELECT value FROM meta WHERE key = 'schema_version'", db="cuda2")[0][0], str(18),
       "schema_version")
    eq(int(pg().query("SELECT count(*) FROM cuda_procs", db="cuda2")[0][0]) > 0, True,
       "rows written after the upgrade")


if __name__ == "__main__":
    run_tests(globals())
