"""`jobscope report` on a real run's store with app metrics, markers and
RAPL rows put in its schema-10 tables (app_samples, marks, energy_samples)
as the run and the agent write them: the text tables, the JSON report's
"app" member (null for what is missing), the HTML section with a chart per
metric, a plot panel per metric, and energy per unit of work across a RAPL
counter's wrap.  A run without them reports "app": null and no app text."""
import json
import math
import re
import os
import sqlite3

from harness import run, jobscope, plot_env, run_tests, check, eq
from png_harness import png_size

GAMMA = (1 + 0.01) / (1 - 0.01)


def key(v):
    """The sketch's bucket of v > 0 (app/appstat.h)."""
    return math.ceil(math.log(v) / math.log(GAMMA))


def stored_run(wd, app=True, name="store.db"):
    db = wd.join(name)
    r = run(wd, ["sleep", "1.5"], db=db, opts=["--interval", "100ms"])
    eq(r.rc, 0, "jobscope run: " + r.stderr)
    job = r.report["run"]["id"]
    if not app:
        return db, job, None
    con = sqlite3.connect(db)
    ticks = [t for (t,) in con.execute(
        "SELECT ts_ms FROM job_samples WHERE job_id = ? ORDER BY ts_ms", (job,))]
    check(len(ticks) >= 8, "ticks: %r" % ticks)
    node, start, end = con.execute("SELECT node_id, start_ms, end_ms FROM jobs WHERE id = ?",
                                   (job,)).fetchone()
    seq = 10000000
    for i, t in enumerate(ticks):
        # frames: 5 a tick; lat: three values of 10 ms a tick, 40 ms after the first third
        v = 10.0 if i < len(ticks) // 3 else 40.0
        rows = [("frames", "counter", "", 1, 5, 5, 5, 5, None),
                ("lat", "timer", "route:/a", 3, 3 * v, v, v, v, "p=%d:3" % key(v)),
                ("depth", "gauge", "", 1, i, i, i, i, None)]
        for name, typ, tags, count, s, mn, mx, last, sk in rows:
            seq += 1
            con.execute("INSERT INTO app_samples (seq, job_id, ts_ms, name, type, tags, count,"
                        " sum, min, max, last, sketch) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                        (seq, job, t, name, typ, tags, count, s, mn, mx, last, sk))
    mid = ticks[len(ticks) // 2 - 1]
    for t, name in ((start, "warmup"), (mid, "steady")):
        seq += 1
        con.execute("INSERT INTO marks (seq, job_id, ts_ms, name, value, text)"
                    " VALUES (?, ?, ?, ?, NULL, NULL)", (seq, job, t, name))
    # RAPL: package-0 gains 2 J from start to end across its wrap at 100 J
    for t, uj in ((start, 99000000), (end, 1000000)):
        seq += 1
        con.execute("INSERT INTO energy_samples (seq, node_id, ts_ms, zone, energy_uj, max_uj)"
                    " VALUES (?, ?, ?, 'package-0', ?, 100000000)", (seq, node, t, uj))
    con.commit()
    con.close()
    return db, job, (ticks, start, end, mid)


def test_text_json_html(wd):
    db, job, (ticks, start, end, mid) = stored_run(wd)
    n = len(ticks)
    wall_s = (end - start) / 1000.0

    j = jobscope("report", "--db", db, "--format", "json", str(job))
    eq(j.returncode, 0, "json: " + j.stderr)
    app = json.loads(j.stdout)["app"]
    names = [(m["name"], m["type"]) for m in app["metrics"]]
    eq(names, [("depth", "gauge"), ("frames", "counter"), ("lat", "timer")], "metrics by name")
    depth, frames, lat = app["metrics"]
    eq((frames["count"], frames["sum"]), (n, 5 * n), "frames")
    check(abs(frames["rate_per_s"] - 5 * n / wall_s) < 1e-5, "rate %r" % frames["rate_per_s"])
    eq((frames["p50"], frames["last"], frames["unit"]), (None, None, None), "nulls of a counter")
    eq(depth["last"], n - 1, "the gauge's last value")
    eq(depth["rate_per_s"], None, "a gauge has no rate")
    eq((lat["unit"], lat["tags"], lat["count"], lat["min"], lat["max"]),
       ("ms", "route:/a", 3 * n, 10, 40), "lat")
    check(abs(lat["p50"] - 40) <= 0.4, "p50 %r" % lat["p50"])  # 2/3 of the values are 40
    check(abs(lat["p99"] - 40) <= 0.4, "p99 %r" % lat["p99"])

    phases = app["phases"]
    eq([p["name"] for p in phases], ["warmup", "steady"], "phases")
    eq((phases[0]["start_ms"], phases[0]["end_ms"], phases[1]["end_ms"]), (start, mid, end),
       "phase bounds")
    f0 = [m for m in phases[0]["metrics"] if m["name"] == "frames"][0]
    f1 = [m for m in phases[1]["metrics"] if m["name"] == "frames"][0]
    eq((f0["sum"], f1["sum"]), (5 * (n // 2), 5 * (n - n // 2)), "frames per phase")
    l1 = [m for m in phases[1]["metrics"] if m["name"] == "lat"][0]
    check(abs(l1["p50"] - 40) <= 0.4, "phase 2 p50 %r" % l1["p50"])
    check(phases[0]["cpu_cores_mean"] is not None and phases[0]["rss_peak_bytes"] > 0,
          "phase 1 CPU and memory: %r" % phases[0])
    eq(phases[0]["gpu_util_mean_pct"], None, "no GPU: null")

    e = app["energy_per_unit"]
    check(abs(e["host_energy_j"] - 2.0) < 1e-9, "host energy %r" % e["host_energy_j"])
    eq(e["gpu_energy_j"], None, "no GPU energy")
    c = e["counters"][0]
    eq(c["name"], "frames", "energy per frame")
    check(abs(c["host_j_per_unit"] - 2.0 / (5 * n)) < 1e-6, "J/frame %r" % c["host_j_per_unit"])
    eq(c["gpu_j_per_unit"], None, "no GPU: null")

    t = jobscope("report", "--db", db, str(job))
    eq(t.returncode, 0, "text: " + t.stderr)
    out = t.stdout
    check("\n  Application metrics\n" in out, out)
    check(re.search(r"\n    lat\{route:/a\} +timer +%d +%d +10 +40 +%s +" % (3 * n, 3 * (10 * (n // 3) + 40 * (n - n // 3)), "[0-9.]+"), out), out)
    check("\n  Phases (from the program's markers)\n" in out and "    2 steady:" in out, out)
    check("\n  Energy per unit of work\n" in out and
          "host energy (RAPL, top-level zones): 2 J\n" in out, out)

    h = jobscope("report", "--db", db, "--format", "html", str(job))
    eq(h.returncode, 0, "html: " + h.stderr)
    check('<section id="app">' in h.stdout, "html section")
    for i in range(3):
        check('id="chart-app-%d"' % i in h.stdout, "chart of metric %d" % i)
    check("<td>lat{route:/a}</td>" in h.stdout, "the timer's row")


def test_plot_panels(wd):
    """The plot gains a panel per metric: the same run is taller with them."""
    db, job, _ = stored_run(wd, app=False)
    env = plot_env()
    before = wd.join("before.png")
    p = jobscope("report", "--db", db, "--plot", before, str(job), env=env)
    eq(p.returncode, 0, "plot: " + p.stderr)
    db2, job2, _ = stored_run(wd, app=True, name="app.db")
    after = wd.join("after.png")
    p = jobscope("report", "--db", db2, "--plot", after, str(job2), env=env)
    eq(p.returncode, 0, "plot: " + p.stderr)
    w0, h0 = png_size(before)
    w1, h1 = png_size(after)
    eq(w0, w1, "the same width")
    check(h1 > h0, "three panels more: %d > %d" % (h1, h0))


def test_no_app(wd):
    db, job, _ = stored_run(wd, app=False)
    j = jobscope("report", "--db", db, "--format", "json", str(job))
    eq(j.returncode, 0, "json: " + j.stderr)
    eq(json.loads(j.stdout)["app"], None, '"app": null')
    t = jobscope("report", "--db", db, str(job))
    check("Application metrics" not in t.stdout and "Phases" not in t.stdout, t.stdout)


if __name__ == "__main__":
    run_tests(globals())
