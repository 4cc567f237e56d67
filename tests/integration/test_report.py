#!/usr/bin/env python3
"""`jobscope report` on real workloads: each report names the right class,
period and trend; history by user, node, job, hour and weekday; the same
report from a head; clear errors for questions that make no sense."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import (JOBSCOPE, check, eq, helper, jobscope, near, run,  # noqa: E402
                     run_tests)
from head_harness import Head, skip_on_pg  # noqa: E402


def report(db, *args):
    r = jobscope("report", "--db", db, *args)
    eq(r.returncode, 0, "report exit (stderr: %s)" % r.stderr)
    return r.stdout


def report_json(db, *args):
    return json.loads(report(db, "--format", "json", *args))


def kinds(rep):
    return [v["kind"] for v in rep["verdicts"]]


def profile(wd, cmd, interval="100ms", rc=0):
    db = wd.join("run.db")
    r = run(wd, cmd, opts=("--interval", interval), db=db)
    eq(r.rc, rc, "run exit (stderr: %s)" % r.stderr)
    return db, report_json(db)


def test_periodic_workload_is_training_with_its_period(wd):
    # busy 60% of every 1.5 s with 64 MiB touched, then idle with it freed
    db, rep = profile(wd, [helper("pattern"), "--period", "1.5", "--seconds", "15",
                           "--mib", "64"])
    a = rep["analysis"]
    near(a["period_s"], 1.5, 0.05, "period")
    check(a["period_confidence"] >= 0.5, "confidence %s" % a["period_confidence"])
    eq(a["cyclic"], True, "cyclic pattern flag")
    eq(a["job_type"], "training", "job type (%s)" % a["job_type_reason"])
    check("period" in kinds(rep), "a period verdict: %s" % kinds(rep))
    text = report(db)
    check(text.index("Verdicts") < text.index("  CPU "), "verdicts come first")
    check("Period    1.5" in text, "period line in text:\n" + text)


def test_io_bound_writer(wd):
    # synchronous 4 KiB writes: the job waits on storage most of the time
    target = wd.join("io.bin")
    db, rep = profile(wd, ["timeout", "12", "dd", "if=/dev/zero", "of=" + target,
                           "bs=4k", "count=1000000", "oflag=dsync", "status=none"],
                      interval="200ms", rc=124)
    a = rep["analysis"]
    eq(a["bottleneck"], "io", "bottleneck (%s)" % a["bottleneck_reason"])
    check(a["job_type"] != "training", "not training")
    check("bottleneck" in kinds(rep), "a bottleneck verdict")


def test_cpu_bound_workload(wd):
    # one thread spinning on the one core it may use (jobscope and all)
    db = wd.join("cpu.db")
    r = subprocess.run(["taskset", "-c", "0", JOBSCOPE, "run", "--db", db, "--interval",
                        "200ms", "--report", "none", "--", helper("busy"), "--seconds", "12",
                        "--threads", "1"], capture_output=True, text=True, timeout=120)
    eq(r.returncode, 0, "run exit (stderr: %s)" % r.stderr)
    rep = report_json(db)
    a = rep["analysis"]
    eq(a["bottleneck"], "cpu", "bottleneck (%s)" % a["bottleneck_reason"])
    eq(a["job_type"], "batch", "job type (%s)" % a["job_type_reason"])
    eq(a["efficiency"]["cpu"]["cores_reserved"], 1, "cores it could use")
    eq(a["efficiency"]["cpu"]["cores_from"], "affinity", "cores from")
    check(a["scaling"]["cpu"].startswith("more cores may help"), a["scaling"]["cpu"])
    eq(a["period_s"], None, "no period in a flat load")


def test_slow_memory_leak_forecast(wd):
    # 20 MiB/s, never freed: the forecast gives the time to the host's memory
    db, rep = profile(wd, [helper("pattern"), "--leak", "20", "--seconds", "12"])
    t = rep["analysis"]["trend"]["memory"]
    eq(t["growing"], True, "memory growing")
    near(t["slope_bytes_per_s"], 20 * 1024 * 1024, 0.10, "leak rate")
    limit = rep["memory"]["host_total_bytes"]
    eq(t["limit_bytes"], limit, "the limit is the host's memory (nothing reserved)")
    near(t["time_to_limit_s"], (limit - t["level_bytes"]) / (20 * 1024 * 1024), 0.10,
     "time to exhaustion")
    check("mem_growing" in kinds(rep), "a leak verdict: %s" % kinds(rep))
    v = [v for v in rep["verdicts"] if v["kind"] == "mem_growing"][0]
    check("out of memory" in v["message"], v["message"])
    check(v["evidence"]["time_to_limit_s"] > 0, "evidence carries the forecast")


def test_too_short_to_judge(wd):
    db, rep = profile(wd, ["true"])
    a = rep["analysis"]
    eq(a["too_short"], True, "too short")
    eq(a["bottleneck"], None, "no bottleneck guessed")
    eq(a["job_type"], None, "no job type guessed")
    eq(a["period_s"], None, "no period")
    eq(kinds(rep), ["too_short"], "the one verdict says so")


def two_runs(wd):
    db = wd.join("two.db")
    for secs in ("2", "3"):
        r = run(wd, [helper("busy"), "--seconds", secs], opts=("--interval", "200ms"), db=db)
        eq(r.rc, 0, "run exit")
    return db


def test_history_by_user_hour_weekday_and_job(wd):
    db = two_runs(wd)
    cpu = [json.loads(report(db, str(i), "--format", "json"))["cpu"]["cpu_seconds"]
       for i in (1, 2)]
    h = report_json(db, "--by", "user", "--since", "1d")
    eq(h["kind"], "history", "kind")
    eq(len(h["rows"]), 1, "one user")
    row = h["rows"][0]
    eq(row["jobs"], 2, "jobs")
    near(row["core_hours_used"], sum(cpu) / 3600, 0.02, "core-hours used")
    check(row["core_hours_idle"] >= 0, "idle never negative")
    eq(row["gpu_hours_used"], None, "no GPU: null, not 0")
    eq(h["total"]["jobs"], 2, "total jobs")
    by_hour = report_json(db, "--by", "hour", "--since", "1d")
    near(sum(r["core_hours_used"] for r in by_hour["rows"]), sum(cpu) / 3600, 0.02,
     "hours add up to the total")
    wk = report_json(db, "--by", "weekday", "--since", "2d")
    check(all(r["key"] in ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
          for r in wk["rows"]), "weekday names: %s" % wk["rows"])
    user = os.environ.get("USER") or subprocess.run(
    ["id", "-un"], capture_output=True, text=True).stdout.strip()
    jobs = report_json(db, "--user", user)
    eq(jobs["by"], "job", "--user alone lists jobs")
    eq(len(jobs["rows"]), 2, "two jobs")
    csv = report(db, "--by", "node", "--format", "csv").splitlines()
    check(csv[0].startswith("node,jobs,wall_hours,core_hours_reserved"), csv[0])
    eq(len(csv), 3, "header, one node, total")
    text = report(db, "--by", "user")
    check("core-h" in text and "total" in text, text)
    html = report(db, "--by", "user", "--format", "html")
    check(html.startswith("<!DOCTYPE html>") and "<script" not in html, "history HTML")
    nobody = report_json(db, "--user", "nobody-at-all")
    eq(nobody["rows"], [], "no jobs: no rows")
    eq(nobody["total"]["jobs"], 0, "no jobs")


def test_job_csv_rows_per_bucket(wd):
    db = two_runs(wd)
    lines = report(db, "1", "--format", "csv").splitlines()
    head = lines[0].split(",")
    eq(head[:3], ["time", "ts_ms", "span_ms"], "CSV header")
    check("cores" in head and "rss_bytes" in head, "metric columns: %s" % head)
    check(len(lines) >= 10, "a row per sample: %d" % len(lines))
    check(all(len(l.split(",")) == len(head) for l in lines), "same width")


def test_bad_questions_are_usage_errors(wd):
    db = two_runs(wd)
    for args, what in ((["--by", "month"], "bad --by"),
                       (["--since", "yesterday"], "bad --since"),
                       (["--since", "1h", "--until", "2h"], "since after until"),
                       (["1", "--by", "user"], "a run id and --by"),
                       (["--by", "user", "--plot", wd.join("x.png")], "--plot history"),
                       (["--plot", wd.join("x.bmp")], "plot extension"),
                       (["--format", "xml"], "bad format"),
                       ([], "two runs, none named")):
        r = jobscope("report", "--db", db, *args)
        eq(r.returncode, 2, "%s: exit (stderr %s)" % (what, r.stderr))
        check(r.stderr.strip(), "%s: a message" % what)
    r = jobscope("report", "--db", db, "--job", "slurm:999")
    eq(r.returncode, 1, "unknown job")
    check("no job" in r.stderr, r.stderr)


def test_report_from_a_head(wd):
    if skip_on_pg("the head serves a SQLite store made by jobscope run, copied"):
        return
    db = two_runs(wd)
    head_db = wd.join("head.db")
    shutil.copy(db, head_db)
    head = Head(wd, db=head_db)
    try:
        for args in ((["last"]), (["2", "--format", "json"]),
                     (["--by", "user", "--since", "1d", "--format", "csv"])):
            local = report(head_db, *args)
            remote = jobscope("report", "--head", head.url, *args)
            eq(remote.returncode, 0, "head report exit: %s" % remote.stderr)
            if "--by" in args:
                # the window ends at "now", a few ms apart: compare the shape
                eq(remote.stdout.splitlines()[0], local.splitlines()[0], "CSV header")
                eq(len(remote.stdout.splitlines()), len(local.splitlines()), "rows")
            else:
                eq(remote.stdout, local, "the head's report is the store's")
        r = jobscope("report", "--head", head.url, "--job", "slurm:424242")
        eq(r.returncode, 1, "unknown job from a head")
        check("no job" in r.stderr, r.stderr)
    finally:
        head.kill()


if __name__ == "__main__":
    run_tests(globals())
