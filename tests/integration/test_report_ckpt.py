#!/usr/bin/env python3
"""Report checkpoints: a report restored from a job's checkpoint plus the rows
after it is byte for byte the report of a whole replay (JOBSCOPE_NO_CKPT=1),
whoever made the checkpoint and wherever it stands in the job: `jobscope run`
(its live state, on fake GPUs), `jobscope compact` (mid-job, on the golden
store's GPUs, processes and events), the agent (while the job runs, across an
interval change, and the job-end summary).  A corrupt checkpoint is said so and
replayed around."""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import (JOBSCOPE, check, eq, helper, jobscope, run, run_tests, scaled,  # noqa: E402
                     stop, tail, wait_for)
from agent_harness import Agent, env_with, job_row, spawn  # noqa: E402
from head_harness import (Head, skip_on_pg, start_agent, stop_agent, sql,  # noqa: E402
                          store_exists)
from test_run_gpu import gpu_cmd, gpu_env  # noqa: E402

MKSTORE = os.path.join(os.path.dirname(JOBSCOPE), "tests", "js-mkstore")
GOLDEN_JOBS = ["1001", "1002", "1003", "1004", "1005"]


def no_head_here():
    """True (and says so) in the *_pg run of this test: a case without a head is the
    same on either head store, and the SQLite run has it."""
    return skip_on_pg("no head in this case: the SQLite run has it")


def reports(db, *args, full=False):
    """The text and JSON reports, from the checkpoint (or a whole replay with full)."""
    env = dict(os.environ)
    env.pop("JOBSCOPE_NO_CKPT", None)
    if full:
        env["JOBSCOPE_NO_CKPT"] = "1"
    out = []
    for fmt in ("text", "json"):
        r = jobscope("report", "--db", db, "--format", fmt, *args, env=env)
        eq(r.returncode, 0, "report %s exit (stderr: %s)" % (fmt, r.stderr))
        check("checkpoint" not in r.stderr, "no checkpoint warning: %s" % r.stderr)
        out.append(r.stdout)
    return out


def same_reports(db, *args):
    full = reports(db, *args, full=True)
    ckpt = reports(db, *args)
    eq(ckpt[0], full[0], "text report from the checkpoint")
    eq(ckpt[1], full[1], "JSON report from the checkpoint")
    return full


def ckpts(db):
    """{job row: (seq, ts_ms, bytes)} of report_ckpts."""
    return {r[0]: r[1:] for r in sql(db, "SELECT job_id, seq, ts_ms, length(data)"
                                     " FROM report_ckpts")}


def max_seq(db):
    return max(sql(db, "SELECT coalesce(max(seq), 0) FROM %s" % t)[0][0]
               for t in ("host_samples", "job_samples", "proc_samples", "events",
                         "gpu_samples", "gpu_proc_samples"))


def compact(db, rows=None, *args):
    env = dict(os.environ)
    if rows:
        env["JOBSCOPE_CKPT_ROWS"] = str(rows)
    r = jobscope("compact", "--db", db, *args, env=env)
    eq(r.returncode, 0, "compact exit (stderr: %s)" % r.stderr)
    return r


def test_run_saves_its_live_state(wd):
    if no_head_here():
        return
    db = wd.join("run.db")
    r = run(wd, gpu_cmd(wd, "1.5"), db=db, opts=["--interval", "100ms"], env=gpu_env(wd))
    eq(r.rc, 0, "run exit: %s" % r.stderr)
    c = ckpts(db)
    eq(list(c), [1], "the run's checkpoint")
    # it covers every row of the run: the report replays none
    eq(c[1][0], max_seq(db), "checkpoint seq = the store's last row")
    text, js = same_reports(db)
    rep = json.loads(js)
    eq(len(rep["gpus"]), 1, "the GPU the run used")
    eq(rep["gpus"][0]["util_avg_pct"], 60.0, "its utilization")
    check(len(rep["processes"]) >= 1, "processes: %r" % rep["processes"])

    # a corrupt checkpoint: said so, and the same report from a whole replay
    con = __import__("sqlite3").connect(db)
    con.execute("UPDATE report_ckpts SET data = substr(data, 1, 200)")
    con.commit()
    con.close()
    r2 = jobscope("report", "--db", db, "--format", "json")
    eq(r2.returncode, 0, "report exit")
    check("report checkpoint of job 1" in r2.stderr and "not usable" in r2.stderr,
          "warned: %s" % r2.stderr)
    eq(r2.stdout, js, "the whole replay's report")


def test_compact_mid_job_golden_store(wd):
    if no_head_here():
        return
    db = wd.join("golden.db")
    r = subprocess.run([MKSTORE, "--db", db, "--quiet"], capture_output=True, text=True,
                       timeout=scaled(120))
    eq(r.returncode, 0, "js-mkstore: %s" % r.stderr)
    want = {j: reports(db, "--job", "slurm:" + j, full=True) for j in GOLDEN_JOBS}
    eq(ckpts(db), {}, "no checkpoints before compact")
    # checkpoints a few rows in, mid-job, mid-tick: then one step further each time
    prev = {}
    for rows in (1, 777, 5000, 20000):
        compact(db, rows)
        now = ckpts(db)
        eq(sorted(now), [1, 2, 3, 4, 5], "a checkpoint per job")
        for job, (seq, ts, size) in now.items():
            check(seq > prev.get(job, (0,))[0] or rows == 20000,
                  "job %d moved on: %s after %s" % (job, seq, prev.get(job)))
            check(size > 500, "a blob of %d bytes" % size)
        prev = now
        for j in GOLDEN_JOBS:
            got = reports(db, "--job", "slurm:" + j)
            eq(got[0], want[j][0], "text of job %s after compact with %d rows" % (j, rows))
            eq(got[1], want[j][1], "JSON of job %s after compact with %d rows" % (j, rows))
    # to the end: every checkpoint covers its job's last row; nothing more is due
    compact(db)
    last = ckpts(db)
    r = compact(db)
    eq(ckpts(db), last, "a second compact changes nothing")
    check("0 report checkpoints made" in r.stderr, "nothing due: %s" % r.stderr)
    for j in GOLDEN_JOBS:
        eq(reports(db, "--job", "slurm:" + j), want[j], "job %s from its final checkpoint" % j)
    # usage
    r = jobscope("compact", "--db", wd.join("missing.db"))
    eq(r.returncode, 2, "a store that is not there")
    check(not os.path.exists(wd.join("missing.db")), "not created")
    r = jobscope("compact", "--db", db, "--older-than", "soon")
    eq(r.returncode, 2, "bad --older-than")


def test_agent_checkpoints_and_job_end(wd):
    """The agent makes checkpoints while a job runs; an interval change (a
    restart at another interval) in the middle; the job-end summary and the
    report from the checkpoint are the whole replay's."""
    if no_head_here():
        return
    db = wd.join("agent.db")
    env = env_with(SLURM_JOB_ID="7301")
    # the job runs until the test ends it: the interval change is within it however
    # long the checkpoints and reports before it take
    job = spawn([helper("pattern"), "--period", "1", "--seconds", "300", "--mib", "32"],
                env=env)
    a = Agent(wd, interval="200ms", db=db, extra=["--report-checkpoint", "1s"])
    try:
        row = wait_for(lambda: job_row(db, "slurm", "7301"), timeout=15, what="job stored")
        # the agent's own checkpoint of the running job, and a later one
        first = wait_for(lambda: ckpts(db).get(row[0]), timeout=20, what="a checkpoint")
        wait_for(lambda: ckpts(db).get(row[0], first)[0] > first[0], timeout=20,
                 what="the checkpoint brought up to date")
        a.stop()  # no rows come while the two reports are made
        check(ckpts(db)[row[0]][0] < max_seq(db), "a checkpoint mid-job")
        running = same_reports(db, "--job", "slurm:7301")
        eq(json.loads(running[1])["run"]["end_ms"], None, "the job still runs")
        a = Agent(wd, interval="300ms", db=db, extra=["--report-checkpoint", "1s"],
                  name="agent2")
        a.wait_ticks(2)  # the job sampled at the new interval
        eq(stop(job), -signal.SIGTERM, "the workload ended by the test")
        wait_for(lambda: job_row(db, "slurm", "7301")[2], timeout=15, what="job end")
        wait_for(lambda: sql(db, "SELECT 1 FROM job_summaries WHERE job_id = ?", row[0]),
                 timeout=15, what="the job-end summary")
        # ended: the agent brings its checkpoint to the end
        wait_for(lambda: ckpts(db)[row[0]][1] >= sql(
            db, "SELECT max(ts_ms) FROM job_samples WHERE job_id = ?", row[0])[0][0],
            timeout=20, what="the final checkpoint")
    finally:
        a.stop()
        stop(job, signal.SIGKILL)
    text, js = same_reports(db, "--job", "slurm:7301")
    rep = json.loads(js)
    iv = [e["value"] for e in rep["events"] if e["kind"] == "interval"]
    eq(iv[-1:], [300], "the interval change within the job (%r)" % iv)
    summary = json.loads(sql(db, "SELECT report_json FROM job_summaries WHERE job_id = ?",
                             row[0])[0][0])
    for k in ("cpu", "memory", "io", "timeline", "processes", "events", "analysis", "verdicts"):
        eq(summary[k], rep[k], "the job-end summary's %s" % k)
    check("checkpoint" not in a.stderr(), "no checkpoint warning: %s" % a.stderr())


def test_head_checkpoints_its_store(wd):
    """A head keeps report checkpoints of its own store (on its own thread, saved
    through its writer); its reports from them are the whole replay's."""
    head = Head(wd, extra=["--report-checkpoint", "1s"])
    # the job runs until the test ends it: still running when the head checkpoints it
    job = spawn([helper("pattern"), "--period", "1", "--seconds", "300", "--mib", "16"],
                env=env_with(SLURM_JOB_ID="7302"))
    proc, adb, _, errf = start_agent(wd, head, "node-h")
    try:
        row = wait_for(lambda: sql(head.db, "SELECT id FROM jobs WHERE scheduler = 'slurm'"
                                   " AND job_id = '7302'") if store_exists(head.db) else None,
                       timeout=60, what="the job at the head")[0][0]
        # the head looks for jobs due every 10 s (head.c's HEAD_REPORTS_EVERY_S), and a
        # job is due once its rows span the 1 s lag: two looks, and the replay, at most
        try:
            first = wait_for(lambda: ckpts(head.db).get(row), timeout=45,
                             what="the head's checkpoint of the running job")
        except AssertionError as e:
            span = sql(head.db, "SELECT count(*), min(ts_ms), max(ts_ms) FROM job_samples"
                       " WHERE job_id = ?", row)
            raise AssertionError("%s; the job's rows at the head (count, first, last): %r;"
                                 " the head's log:\n%s" % (e, span, tail(head.log)))
        check(first[0] > 0 and first[2] > 500, "a checkpoint: %r" % (first,))
    finally:
        eq(stop_agent(proc, errf), 0, "agent exit")
        stop(job)
    # the agent gone, nothing more comes: the two reports are made of the same rows
    same_reports(head.db, "--job", "slurm:7302")
    head.kill(signal.SIGTERM)


if __name__ == "__main__":
    run_tests(globals())
