#!/usr/bin/env python3
"""Golden tests: `jobscope report` on a fixed store (js-mkstore --scenario
golden: five Slurm jobs with known shapes on a 16-core, 2-GPU node) prints
exactly the text, JSON and CSV kept in tests/golden/, and names each job's
class, period and trend.  UPDATE_GOLDEN=1 rewrites the files (then read the
diff before committing it)."""
import atexit
import json
import re
import shutil
import sqlite3
import subprocess
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import (Workdir, check, eq, helper, jobscope, near, run_tests,  # noqa: E402
                     scaled)

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden")
ENV = dict(os.environ, TZ="UTC", LC_ALL="C")
WINDOW = ["--since", "2026-01-01T00:00:00Z", "--until", "2026-01-08T00:00:00Z"]

# job -> (job type, bottleneck) the golden scenario is built to show
CLASSES = {
    "1001": ("training", "gpu"),
    "1002": ("batch", "cpu"),
    "1003": ("idle", "idle"),
    "1004": ("batch", None),
    "1005": ("batch", "io"),
}


_made = []  # the golden store, made once for every case: (its Workdir, its path)


def golden_store(wd):
    """A copy of the golden store of its own for this case (one case changes it)."""
    if not _made:
        keep = Workdir()
        atexit.register(keep.close)
        made = keep.join("golden.db")
        r = subprocess.run([helper("mkstore"), "--db", made, "--scenario", "golden"],
                           capture_output=True, text=True, timeout=scaled(120))
        eq(r.returncode, 0, "js-mkstore (stderr %s)" % r.stderr)
        _made.append(made)
    db = wd.join("golden.db")
    shutil.copyfile(_made[0], db)
    return db


def report(db, *args):
    r = jobscope("report", "--db", db, *args, env=ENV)
    eq(r.returncode, 0, "report %s exit (stderr %s)" % (" ".join(args), r.stderr))
    return r.stdout


def compare(name, text):
    path = os.path.join(GOLDEN, name)
    if os.environ.get("UPDATE_GOLDEN"):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return
    check(os.path.exists(path), "golden file %s (UPDATE_GOLDEN=1 makes it)" % path)
    with open(path) as f:
        want = f.read()
    if text != want:
        got = path + ".got"
        with open(got, "w") as f:
            f.write(text)
        raise AssertionError("%s differs from the golden file: diff -u %s %s"
                             % (name, path, got))


def test_each_job_text_json_csv(wd):
    db = golden_store(wd)
    for job in sorted(CLASSES):
        compare("job-%s.txt" % job, report(db, "--job", "slurm:" + job))
        compare("job-%s.json" % job, report(db, "--job", "slurm:" + job, "--format", "json"))
        compare("job-%s.csv" % job, report(db, "--job", "slurm:" + job, "--format", "csv"))


def test_history_text_json_csv(wd):
    db = golden_store(wd)
    for by in ("user", "node", "job", "hour", "weekday"):
        compare("history-%s.txt" % by, report(db, "--by", by, *WINDOW))
        compare("history-%s.json" % by, report(db, "--by", by, "--format", "json", *WINDOW))
        compare("history-%s.csv" % by, report(db, "--by", by, "--format", "csv", *WINDOW))


def test_classes_period_and_forecast(wd):
    db = golden_store(wd)
    reps = {j: json.loads(report(db, "--job", "slurm:" + j, "--format", "json"))
            for j in CLASSES}
    for job, (jtype, bottleneck) in CLASSES.items():
        a = reps[job]["analysis"]
        eq(a["job_type"], jtype, "job %s type (%s)" % (job, a["job_type_reason"]))
        eq(a["bottleneck"], bottleneck, "job %s bottleneck (%s)" % (job, a["bottleneck_reason"]))
    # 1001: GPU 0 busy 5 s of every 7.5 s; GPU 1 reserved and idle
    a = reps["1001"]["analysis"]
    near(a["period_s"], 7.5, 0.05, "1001 period")
    eq(a["cyclic"], True, "1001 cyclic")
    eq(a["efficiency"]["gpu"]["reserved"], 2, "1001 GPUs reserved")
    eq(a["efficiency"]["gpu"]["touched"], 1, "1001 GPUs touched")
    v = {x["kind"]: x for x in reps["1001"]["verdicts"]}
    eq(v["gpus_unused"]["message"], "used 1 of 2 GPUs", "1001 verdict")
    eq(v["gpus_unused"]["advice"], "request 1 GPU, not 2", "1001 advice")
    # 1003: 64 GiB and a GPU reserved, 1 GiB and no GPU used
    v = {x["kind"]: x for x in reps["1003"]["verdicts"]}
    check("gpu_unused" in v and v["gpu_unused"]["severity"] == "critical", "1003: %s" % v)
    # the peak plus 25 %, up to a 256 MiB step (1 to 16 GiB), from the verdict's own evidence
    peak = v["mem_over_requested"]["evidence"]["mem_peak_bytes"]
    mib = -(-peak * 1.25 // (256 << 20)) * 256
    want = "--mem=%dG " % (mib // 1024) if mib % 1024 == 0 else "--mem=%dM " % mib
    check(want in v["mem_over_requested"]["advice"],
          "%s: %s" % (want, v["mem_over_requested"]["advice"]))
    eq(reps["1003"]["verdicts"][0]["severity"], "critical", "the most severe first")
    # 1004: a slow leak against its 8 GiB: the forecast follows the line
    t = reps["1004"]["analysis"]["trend"]["memory"]
    eq(t["growing"], True, "1004 memory growing")
    eq(t["limit_bytes"], 8 * 1024 ** 3, "1004 limit: its reservation")
    near(t["time_to_limit_s"], (t["limit_bytes"] - t["level_bytes"]) / t["slope_bytes_per_s"],
         0.01, "1004 time to the limit")
    check("mem_growing" in [x["kind"] for x in reps["1004"]["verdicts"]], "1004 leak verdict")
    # 1002: CPU-bound at its 4 cores; no period in a flat load
    a = reps["1002"]["analysis"]
    check(a["scaling"]["cpu"].startswith("more cores may help"), a["scaling"]["cpu"])
    eq(a["period_s"], None, "1002 no period")
    # history adds up: the jobs' CPU over the window
    h = json.loads(report(db, "--by", "user", "--format", "json", *WINDOW))
    cpu_h = sum(r["cpu"]["cpu_seconds"] for r in reps.values()) / 3600
    near(h["total"]["core_hours_used"], cpu_h, 0.001, "core-hours used")
    eq(h["total"]["jobs"], 5, "jobs")
    eq(h["rows"][0]["key"], "carol", "the most idle GPU-hours first")


def test_html_trend_says_what_text_says(wd):
    # one decision (memory_trend_steady) for both: a line that explains
    # little of the series has no rate, in the page as in the text
    db = golden_store(wd)
    want = {
        "1001": ["no steady trend", "no steady trend"],
        "1002": ["no steady trend", "\u2014 (not judged)"],
        "1003": ["no steady trend", "\u2014 (not judged)"],
        "1004": ["+6.00 GiB/h over the second half of the job (r\u00b2 1.00), reaches its "
                 "limit (8.00 GiB) in ~50m 04s", "\u2014 (not judged)"],
        "1005": ["no steady trend", "\u2014 (not judged)"],
    }
    for job, rows in want.items():
        page = report(db, "--job", "slurm:" + job, "--format", "html")
        got = [re.search(r"<dt>%s</dt>\n<dd>(.*?)</dd>" % term, page).group(1)
               for term in ("Memory trend", "GPU memory trend")]
        eq(got, rows, "job %s trend rows" % job)
        check("flat" not in "".join(got), "no 'flat' beside a rate")
        text = report(db, "--job", "slurm:" + job)
        eq(page.count("no steady trend"), text.count("no steady trend"),
           "job %s: the page and the text agree" % job)


def test_expired_samples_report_from_summary(wd):
    # retention removed job 1001's samples: the summary kept at its end answers
    db = golden_store(wd)
    before = report(db, "--job", "slurm:1001", "--format", "json")
    con = sqlite3.connect(db)
    row = con.execute("SELECT id FROM jobs WHERE job_id = '1001'").fetchone()[0]
    con.execute("DELETE FROM job_samples WHERE job_id = ?", (row,))
    con.execute("DELETE FROM proc_samples WHERE job_id = ?", (row,))
    con.commit()
    con.close()
    eq(report(db, "--job", "slurm:1001", "--format", "json"), before,
       "the JSON kept at the job's end")
    text = report(db, "--job", "slurm:1001")
    check("its samples have expired" in text, text)
    check("used 1 of 2 GPUs" in text and "request 1 GPU, not 2" in text, text)
    check("Job type  training" in text, text)
    r = jobscope("report", "--db", db, "--job", "slurm:1001", "--format", "csv", env=ENV)
    eq(r.returncode, 2, "CSV of an expired job")
    check("only its summary is kept" in r.stderr, r.stderr)


if __name__ == "__main__":
    run_tests(globals())
