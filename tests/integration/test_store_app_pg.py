"""App metrics and markers of a store in PostgreSQL (schema 10): the unit
test test_store_app's round trip, markers, tick and streaming cases run
again against a private server (pg_cluster), and what they left read back
with psql: the sketch text and the marker as written.

argv[1]: the built test_store_app.  Skipped (77) without PostgreSQL.
"""
import os
import re
import subprocess
import sys

from harness import run_tests, check, eq, scaled
from head_harness import pg  # one private server, stopped at exit

UNIT = sys.argv[1] if len(sys.argv) > 1 else None


def test_unit_cases_on_postgresql(wd):
    url = pg().create_db("app1")
    env = dict(os.environ, JOBSCOPE_TEST_PG_URL=url, CMOCKA_MESSAGE_OUTPUT="stdout")
    r = subprocess.run([UNIT], env=env, capture_output=True, text=True, timeout=scaled(120))
    eq(r.returncode, 0, "test_store_app on PostgreSQL:\n" + r.stdout + r.stderr)
    ran = [int(n) for n in re.findall(r"Running (\d+) test\(s\)", r.stdout)]
    eq(len(ran), 2, "the SQLite and the PostgreSQL groups ran:\n" + r.stdout)
    check(ran[1] >= 4 and r.stdout.count("[       OK ]") == sum(ran),
          "every PostgreSQL case passed:\n" + r.stdout)
    rows = pg().query("SELECT DISTINCT type, count, sum FROM app_samples WHERE name = 'step'",
                      db="app1")
    eq([(t, float(c), float(s)) for t, c, s in rows], [("timer", 100.0, 5050.0)],
       "the timer's rows")
    rows = pg().query("SELECT DISTINCT sketch FROM app_samples WHERE name = 'step'", db="app1")
    eq(len(rows), 1, "one sketch text for the timer's rows: %r" % rows)
    check(re.fullmatch(r"z=2;p=(-?\d+:[0-9.e+]+,)+-?\d+:[0-9.e+]+;n=\d+:0\.5", rows[0][0]),
          "sketch text: zeros, positives, the one negative: %r" % rows[0][0])
    rows = pg().query("SELECT DISTINCT name, text FROM marks WHERE name = 'eval'", db="app1")
    eq([tuple(r) for r in rows], [("eval", 'epoch 1 "done"')], "the marker")


if __name__ == "__main__":
    run_tests(globals())
