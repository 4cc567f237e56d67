"""Schema 16's GPU columns in a store in PostgreSQL: the unit test
test_store_gpu's round trip and streaming cases run again against a private
server (pg_cluster), what they left read back with psql (the figures as
written, NULL where a bit was clear, the MIG instance's parent), and a
schema-15 database (job_summaries without schema 17's columns either)
upgraded by the first writer that opens it (the columns added, the
gpu_samples_all view made again with them, its version 17).

argv[1]: the built test_store_gpu.  Skipped (77) without PostgreSQL.
"""
import os
import re
import subprocess
import sys

from harness import run_tests, check, eq, scaled
from head_harness import pg  # one private server, stopped at exit

UNIT = sys.argv[1] if len(sys.argv) > 1 else None

# test_store_gpu.c's sample_of(): tick 0 has every figure, tick 1 none,
# tick 2 the violations and remapped rows, tick 3 SM active, tensor and replays
PROF = ["gr_active_pct100", "sm_active_pct100", "sm_occupancy_pct100", "tensor_active_pct100",
        "dfma_tensor_active_pct100", "hmma_tensor_active_pct100", "imma_tensor_active_pct100",
        "dram_active_pct100", "fp64_active_pct100", "fp32_active_pct100", "fp16_active_pct100",
        "viol_power_ns", "viol_thermal_ns", "viol_sync_boost_ns", "viol_board_limit_ns",
        "viol_low_util_ns", "viol_reliability_ns", "viol_app_clocks_ns", "viol_base_clocks_ns",
        "viol_sw_thermal_ns", "viol_hw_thermal_ns", "viol_hw_power_brake_ns", "pcie_replays",
        "remapped_rows_corr", "remapped_rows_unc", "remap_pending", "remap_failed"]
# schema 17's columns of job_summaries
SUMMARY = ["sm_active_avg_pct", "sm_occupancy_avg_pct", "tensor_active_avg_pct",
           "dram_active_avg_pct", "fp64_active_avg_pct", "fp32_active_avg_pct",
           "fp16_active_avg_pct", "throttle_power_s", "throttle_thermal_s"]
DEVICE = ["prof_supported", "mig_enabled", "mig", "mig_parent_uuid", "gpu_instance_id",
          "compute_instance_id", "mig_profile"]


def unit(url):
    env = dict(os.environ, JOBSCOPE_TEST_PG_URL=url, CMOCKA_MESSAGE_OUTPUT="stdout")
    return subprocess.run([UNIT], env=env, capture_output=True, text=True,
                          timeout=scaled(180))


def all_passed(r, what):
    eq(r.returncode, 0, what + ":\n" + r.stdout + r.stderr)
    ran = [int(n) for n in re.findall(r"Running (\d+) test\(s\)", r.stdout)]
    eq(len(ran), 2, "the SQLite and the PostgreSQL groups ran:\n" + r.stdout)
    check(ran[1] >= 2 and r.stdout.count("[       OK ]") == sum(ran),
          "every PostgreSQL case passed:\n" + r.stdout)


def test_unit_cases_on_postgresql(wd):
    url = pg().create_db("gpu1")
    all_passed(unit(url), "test_store_gpu on PostgreSQL")
    # tick 0 of the parent GPU (util 90): every figure as sample_of() wrote it
    rows = pg().query("SELECT DISTINCT sm_active_pct100, tensor_active_pct100, fp64_active_pct100,"
                      " viol_power_ns, viol_hw_power_brake_ns, remapped_rows_unc, remap_pending"
                      " FROM gpu_samples WHERE util_pct = 90 AND viol_power_ns IS NOT NULL",
                      db="gpu1")
    eq([tuple(int(v) for v in r) for r in rows],
       [(6150, 2500, 10000, (1 << 62), -1, 0, 1)],
       "tick 0's figures (viol_hw_power_brake_ns: UINT64_MAX, as bigint -1)")
    # tick 1 (util 91): none of them
    rows = pg().query("SELECT DISTINCT "
                      + ", ".join("CASE WHEN %s IS NULL THEN 1 ELSE 0 END" % c for c in PROF)
                      + " FROM gpu_samples WHERE util_pct = 91", db="gpu1")
    eq([tuple(int(v) for v in r) for r in rows], [tuple([1] * len(PROF))],
       "tick 1: every figure NULL")
    # tick 2 (util 92): the violations, not GPM
    rows = pg().query("SELECT DISTINCT CASE WHEN sm_active_pct100 IS NULL THEN 1 ELSE 0 END,"
                      " viol_thermal_ns FROM gpu_samples WHERE util_pct = 92"
                      " AND viol_thermal_ns IS NOT NULL", db="gpu1")
    eq([(int(r[0]), int(r[1])) for r in rows], [(1, 1500000000)], "tick 2: no GPM, violations")
    rows = pg().query("SELECT DISTINCT mig_parent_uuid, gpu_instance_id, compute_instance_id,"
                      " mig_profile FROM devices WHERE mig = 1 AND prof_supported <> 0", db="gpu1")
    eq([(r[0], int(r[1]), int(r[2]), r[3]) for r in rows], [("GPU-aaaa", 1, 0, "1g.10gb")],
       "the MIG instance's row")
    rows = pg().query("SELECT DISTINCT max_mem_bytes FROM gpu_proc_samples WHERE pid = 4242"
                      " AND max_mem_bytes IS NOT NULL", db="gpu1")
    eq(sorted(int(r[0]) for r in rows), [(5 << 30) + k for k in range(4)], "the job's peaks")


def test_schema_15_upgraded(wd):
    url = pg().create_db("gpu2")
    all_passed(unit(url), "first run")
    pg().psql("DROP VIEW gpu_samples_all; DROP VIEW gpu_proc_samples_all;"
              + "".join(" ALTER TABLE gpu_samples DROP COLUMN %s;" % c for c in PROF)
              + " ALTER TABLE gpu_proc_samples DROP COLUMN max_mem_bytes;"
              + "".join(" ALTER TABLE devices DROP COLUMN %s;" % c for c in DEVICE)
              + "".join(" ALTER TABLE job_summaries DROP COLUMN %s;" % c for c in SUMMARY)
              + " CREATE VIEW gpu_samples_all AS SELECT * FROM gpu_samples;"
              " CREATE VIEW gpu_proc_samples_all AS SELECT * FROM gpu_proc_samples;"
              " UPDATE meta SET value = '15' WHERE key = 'schema_version'", db="gpu2")
    eq(int(pg().query("SELECT count(*) FROM information_schema.columns WHERE"
                      " table_name = 'gpu_samples_all' AND column_name = 'sm_active_pct100'",
                      db="gpu2")[0][0]), 0, "a schema-15 database: its view without them")
    # the unit cases again: a writer upgrades it, then their rows replay through the view
    all_passed(unit(url), "a writer upgrades schema 15")
    eq(pg().query("SELECT value FROM meta WHERE key = 'schema_version'", db="gpu2")[0][0], "18",
       "schema_version")
    eq(int(pg().query("SELECT count(*) FROM information_schema.columns WHERE"
                      " table_name = 'job_summaries' AND column_name IN (%s)"
                      % ", ".join("'%s'" % c for c in SUMMARY), db="gpu2")[0][0]),
       len(SUMMARY), "schema 17's summary columns added")
    eq(int(pg().query("SELECT count(*) FROM information_schema.columns WHERE"
                      " table_name = 'gpu_samples_all' AND column_name = 'remap_failed'",
                      db="gpu2")[0][0]), 1, "the view made again with the new columns")
    # tick 0 of the parent: the first run's 4 rows (round trip, streamed from a schema 16
    # and a schema 15 agent, the summary case's job) lost their figures; the second run's
    # 3 of 4 have them (not the schema 15 agent's)
    rows = pg().query("SELECT count(*) FILTER (WHERE sm_active_pct100 IS NULL),"
                      " count(*) FILTER (WHERE sm_active_pct100 = 6150)"
                      " FROM gpu_samples WHERE util_pct = 90", db="gpu2")
    eq(tuple(int(v) for v in rows[0]), (5, 3), "tick 0's rows: NULL, 6150")


if __name__ == "__main__":
    run_tests(globals())
