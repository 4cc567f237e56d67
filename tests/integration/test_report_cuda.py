"""`jobscope report` replays a run's CUDA tables from the store: rows put in
the schema-9 tables (cuda_procs, cuda_stats) of a real run's store come out
as Nsight's text tables, the JSON report's "cuda" member and the HTML page's
section, with the job's note and a process another profiler kept from CUPTI;
a run without them reports "cuda": null and no CUDA text."""
import json
import sqlite3

from harness import run, jobscope, run_tests, check, eq

PROCS = [  # job_id, pid, state, message, cupti_version, contexts, dropped, seq, final, updated_ms
    (0, "off", "--cuda was asked but CUDA_INJECTION64_PATH was already set by another profiler",
     None, None, None, None, 0),
    (4242, "ok", None, 18, 1, 0, 5, 1),
    (4343, "busy", "CUPTI is in use by nsys", None, 0, 0, 1, 1),
]
STATS = [  # pid, kind, name, count, total_ns, min_ns, max_ns, m2_ns2, bytes, min, max, m2_bytes2
    (4242, "api", "cudaMalloc", 3, 220183283, 19070, 220135021, 3.2299202648955504e16,
     None, None, None, None),
    (4242, "kernel", "void k<float>(float*, int) \u00fc", 4, 6600, 1500, 1800, 50000.0,
     None, None, None, None),
    (4242, "memcpy", "[CUDA memcpy HtoD]", 2, 400000, 150000, 250000, 5e9,
     100663296, 33554432, 67108864, 5.62949953421312e14),
]


def stored_run(wd):
    db = wd.join("store.db")
    r = run(wd, ["true"], db=db)
    eq(r.rc, 0, "jobscope run true: " + r.stderr)
    job = r.report["run"]["id"]
    con = sqlite3.connect(db)
    # seq: a fact seq of its own (unique), above every row the run wrote
    for i, p in enumerate(PROCS):
        con.execute("INSERT INTO cuda_procs (seq, job_id, pid, state, message, cupti_version,"
                    " contexts, dropped, snap_seq, final, updated_ms)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)", (1000000 + i, job) + p)
    for s in STATS:
        con.execute("INSERT INTO cuda_stats VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (job,) + s)
    con.commit()
    con.close()
    return db, job


def test_text_json_html(wd):
    db, job = stored_run(wd)
    t = jobscope("report", "--db", db, str(job))
    eq(t.returncode, 0, "report: " + t.stderr)
    out = t.stdout
    check("CUDA      2 processes with the CUDA hook" in out, out)
    check("  note: --cuda was asked but CUDA_INJECTION64_PATH was already set by another "
          "profiler\n  note: pid 4343: CUPTI is in use by nsys\n" in out, out)
    check(" Time(%)  Total Time (ns)  Num Calls       Average  Minimum      Maximum         StdDev"
          "  Name\n" in out, out)
    check("   100.0      220,183,283          3  73,394,427.7   19,070  220,135,021  127,081,081.7"
          "  cudaMalloc\n" in out, out)
    check("  void k<float>(float*, int) \u00fc\n" in out, out)
    check(" 100.663      2   50.332   33.554   67.109  23.727  251.658  [CUDA memcpy HtoD]\n"
          in out, out)
    check("Process 4343 (CUDA busy" in out and "(no rows: CUPTI is in use by nsys)" in out, out)

    j = jobscope("report", "--db", db, "--format", "json", str(job))
    eq(j.returncode, 0, "json: " + j.stderr)
    cuda = json.loads(j.stdout)["cuda"]
    eq(cuda["state"], "off", "the job's state")
    eq([p["pid"] for p in cuda["processes"]], [4242, 4343], "processes by pid")
    eq(cuda["processes"][1]["state"], "busy", "pid 4343")
    k = cuda["job"]["kernels"][0]
    eq((k["name"], k["count"], k["total_ns"], k["min_ns"], k["max_ns"], k["avg_ns"]),
       ("void k<float>(float*, int) \u00fc", 4, 6600, 1500, 1800, 1650), "kernel row")
    m = cuda["job"]["memory"][0]
    eq((m["bytes"], m["min_bytes"], m["max_bytes"], m["gb_per_s"]),
       (100663296, 33554432, 67108864, 251.658), "memcpy row")
    eq(cuda["job"]["api"][0]["stddev_ns"], 127081081.694, "cudaMalloc stddev")

    h = jobscope("report", "--db", db, "--format", "html", str(job))
    eq(h.returncode, 0, "html: " + h.stderr)
    check('<section id="cuda">' in h.stdout, "html section")
    check("<code>void k&lt;float&gt;(float*, int) \u00fc</code>" in h.stdout, "escaped name")


def test_no_tables(wd):
    db = wd.join("store.db")
    r = run(wd, ["true"], db=db)
    eq(r.report["cuda"], None, "jobscope run's own JSON: cuda null")
    j = jobscope("report", "--db", db, "--format", "json", str(r.report["run"]["id"]))
    eq(json.loads(j.stdout)["cuda"], None, "replayed: cuda null")
    t = jobscope("report", "--db", db, str(r.report["run"]["id"]))
    check("CUDA" not in t.stdout, t.stdout)


if __name__ == "__main__":
    run_tests(globals())
