"""proc_libs and energy_samples in a PostgreSQL store (a head's): the store cases
of the unit tests test_libs and test_rapl run again against a private server
(pg_cluster), each in a database of its own.

argv[1:]: the built test_libs and test_rapl.  Skipped (77) without PostgreSQL.
"""
import os
import subprocess
import sys

from harness import run_tests, eq, scaled
from head_harness import pg  # one private server, stopped at exit

UNITS = sys.argv[1:]


def test_unit_cases_on_postgresql(wd):
    for i, exe in enumerate(UNITS):
        url = pg().create_db("libs%d" % i)
        env = dict(os.environ, JOBSCOPE_TEST_PG_URL=url, CMOCKA_MESSAGE_OUTPUT="stdout")
        r = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=scaled(120))
        eq(r.returncode, 0, "%s on PostgreSQL:\n%s%s" % (os.path.basename(exe), r.stdout,
                                                          r.stderr))


if __name__ == "__main__":
    if not UNITS:
        print("usage: test_libs_pg.py TEST_LIBS TEST_RAPL", file=sys.stderr)
        sys.exit(2)
    run_tests(globals())
