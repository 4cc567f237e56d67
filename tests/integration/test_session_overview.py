"""A session's overview picture and its requests' timings, on stores written here.

- `jobscope report --session S --plot F.png` writes F.png: one line per GPU
  of every node ("host:index") in each panel (utilization, memory, PCIe),
  each in its own colour, drawn at its value, and broken where its node sent
  nothing, never across;
- the requests posted in a session's window (the head's requests table) in
  `report --session` (a table per app) and `export --session` ("requests"),
  with nearest-rank percentiles in ms, exactly; those outside the window left
  out.
"""
import json
import re
import sqlite3

from harness import jobscope, run_tests, check, eq
from png_harness import png_size, line_row, colour_pixels

# plot.c's layout: 1200 wide; header, event band and time axis, then 180 px a panel.
# The first panel's plot area is rows 94-236 (142 px), x 86-1176.
PLOT_WIDTH, PLOT_FIXED_H, PANEL_H = 1200, 56 + 16 + 30, 180
AREA_TOP, AREA_H, AREA_X0, AREA_W = 94, 142, 86, 1090
PALETTE = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40)]
T0, STEP, TICKS = 1767571200000, 100, 600
GiB = 1 << 30


def plot_env(wd):
    import os
    supp = wd.join("lsan.supp")
    with open(supp, "w") as f:
        f.write("leak:libfontconfig.so\n")
    env = dict(os.environ)
    env["LSAN_OPTIONS"] = ":".join(o for o in (env.get("LSAN_OPTIONS"), "suppressions=" + supp,
                                               "print_suppressions=0") if o)
    return env


def new_store(wd, name):
    db = wd.join(name)
    r = jobscope("run", "--db", db, "--", "true")
    eq(r.returncode, 0, "a store: " + r.stderr)
    return db


def x_of(t_s):
    return AREA_X0 + t_s / (TICKS * STEP / 1000.0) * AREA_W


def test_overview_one_line_per_gpu(wd):
    """Nodes alpha and beta, two GPUs each at 20, 40, 60 and 80% busy, 60 s at
    100 ms; beta sends nothing from 20 s to 32 s."""
    db = new_store(wd, "gpus.db")
    util = {("alpha", 0): 20, ("alpha", 1): 40, ("beta", 0): 60, ("beta", 1): 80}
    con = sqlite3.connect(db)
    dev = {}
    for n, host in enumerate(("alpha", "beta")):
        con.execute("INSERT INTO nodes (id, hostname, cores, mem_total_bytes) VALUES"
                    " (?, ?, 8, 8589934592)", (900 + n, host))
        for idx in (0, 1):
            cur = con.execute(
                "INSERT INTO devices (node_id, vendor, idx, uuid, name, mem_total_bytes,"
                " supported) VALUES (?, 'NVIDIA', ?, ?, 'NVIDIA A100', ?, 0)",
                (900 + n, idx, "GPU-%s-%d" % (host, idx), 80 * GiB))
            dev[(host, idx)] = cur.lastrowid
    seq = 1000000
    for i in range(TICKS + 1):
        ts = T0 + i * STEP
        for n, host in enumerate(("alpha", "beta")):
            if host == "beta" and 200 <= i < 320:
                continue
            seq += 1
            con.execute("INSERT INTO host_samples (seq, node_id, ts_ms, cpu_user_ms, cpu_idle_ms,"
                        " cpu_nice_ms, cpu_system_ms, cpu_iowait_ms, cpu_irq_ms, cpu_softirq_ms,"
                        " cpu_steal_ms, mem_total_bytes, mem_available_bytes)"
                        " VALUES (?, ?, ?, ?, ?, 0, 0, 0, 0, 0, 0, 8589934592, 4294967296)",
                        (seq, 900 + n, ts, 50 * i, 50 * i))
            for idx in (0, 1):
                seq += 1
                con.execute("INSERT INTO gpu_samples (seq, device_id, ts_ms, util_pct,"
                            " mem_used_bytes, pcie_rx_bps, pcie_tx_bps) VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (seq, dev[(host, idx)], ts, util[(host, idx)],
                             util[(host, idx)] * GiB // 10, 1000000 * (idx + 1), 500000))
    con.execute("INSERT INTO sessions (name, start_ms, end_ms) VALUES ('g', ?, ?)",
                (T0, T0 + TICKS * STEP))
    con.commit()
    con.close()
    out = wd.join("g.png")
    r = jobscope("report", "--session", "g", "--db", db, "--plot", out, "-o", "/dev/null",
                 env=plot_env(wd))
    eq(r.returncode, 0, r.stderr)
    listed = re.findall(r"jobscope: plot (\S+)", r.stderr)
    eq(listed[0], out, "the overview first, at the path itself")
    eq(len(listed), 1 + 2 * 3, "then a picture per node and per GPU")
    # utilization, memory, PCIe (no NVLink measured: that panel is left out)
    eq(png_size(out), (PLOT_WIDTH, PLOT_FIXED_H + 3 * PANEL_H), "three panels")
    order = [("alpha", 0), ("alpha", 1), ("beta", 0), ("beta", 1)]
    for k, gpu in enumerate(order):
        colour = PALETTE[k]
        # where both nodes ran: before the gap and after it
        for x0, x1 in ((int(x_of(1)), int(x_of(18))), (int(x_of(34)), int(x_of(59)))):
            y = line_row(out, colour, AREA_TOP, AREA_TOP + AREA_H, x0, x1)
            want = AREA_TOP + AREA_H - util[gpu] / 100 * AREA_H
            check(abs(y - want) <= 2, "%s:%d at row %d, not %.0f (%d%%), x %d-%d"
                  % (gpu[0], gpu[1], y, want, util[gpu], x0, x1))
        inside = colour_pixels(out, colour, AREA_TOP, AREA_TOP + AREA_H,
                               int(x_of(21)), int(x_of(31)))
        if gpu[0] == "beta":
            eq(inside, 0, "beta:%d: nothing drawn across its node's gap" % gpu[1])
        else:
            check(inside > 100, "alpha:%d drawn on meanwhile (%d px)" % (gpu[1], inside))
    # memory: 2, 4, 6 and 8 GiB on the second panel
    for k, gpu in enumerate(order):
        y = line_row(out, PALETTE[k], AREA_TOP + PANEL_H, AREA_TOP + PANEL_H + AREA_H,
                     int(x_of(1)), int(x_of(18)))
        check(AREA_TOP + PANEL_H <= y <= AREA_TOP + PANEL_H + AREA_H,
              "%s:%d has a memory line (row %d)" % (gpu[0], gpu[1], y))


def test_overview_without_gpus(wd):
    """A session whose nodes have no GPU: each node's CPU and memory instead."""
    db = new_store(wd, "cpu.db")
    con = sqlite3.connect(db)
    con.execute("INSERT INTO nodes (id, hostname, cores, mem_total_bytes) VALUES"
                " (900, 'big', 8, 8589934592)")
    for i in range(TICKS + 1):
        con.execute("INSERT INTO host_samples (seq, node_id, ts_ms, cpu_user_ms, cpu_idle_ms,"
                    " cpu_nice_ms, cpu_system_ms, cpu_iowait_ms, cpu_irq_ms, cpu_softirq_ms,"
                    " cpu_steal_ms, mem_total_bytes, mem_available_bytes)"
                    " VALUES (?, 900, ?, ?, ?, 0, 0, 0, 0, 0, 0, 8589934592, 4294967296)",
                    (1000000 + i, T0 + i * STEP, 25 * i, 75 * i))
    con.execute("INSERT INTO sessions (name, start_ms, end_ms) VALUES ('c', ?, ?)",
                (T0, T0 + TICKS * STEP))
    con.commit()
    con.close()
    out = wd.join("c.png")
    r = jobscope("report", "--session", "c", "--db", db, "--plot", out, "-o", "/dev/null",
                 env=plot_env(wd))
    eq(r.returncode, 0, r.stderr)
    eq(png_size(out), (PLOT_WIDTH, PLOT_FIXED_H + 2 * PANEL_H), "CPU and memory")
    y = line_row(out, PALETTE[0], AREA_TOP, AREA_TOP + AREA_H, int(x_of(1)), int(x_of(59)))
    check(abs(y - (AREA_TOP + AREA_H - 0.25 * AREA_H)) <= 2, "25%% busy at row %d" % y)


def test_requests_in_report_and_export(wd):
    db = new_store(wd, "req.db")
    con = sqlite3.connect(db)
    con.execute("INSERT INTO sessions (name, start_ms, end_ms) VALUES ('r', ?, ?)",
                (T0, T0 + 60000))
    rows = []
    for i in range(1, 21):  # queue 1..20 ms, processing 10..200 ms, prefill 5..100 ms
        rows.append((T0 + 1000 * i, "llm", i / 1000, i / 100,
                     json.dumps({"prefill": i / 200, "note": "text is not a time"})))
    rows.append((T0 + 30000, "asr", 0.5, 2.0, None))
    rows.append((T0 + 30001, "asr", 1.5, 1.0, "not json"))
    rows.append((T0 - 1, "llm", 9.0, 9.0, None))          # before the window
    rows.append((T0 + 60001, "asr", 9.0, 9.0, None))      # after it
    con.executemany("INSERT INTO requests (ts_ms, app, queue_s, processing_s, other)"
                    " VALUES (?, ?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    r = jobscope("export", "--session", "r", "--db", db)
    eq(r.returncode, 0, r.stderr)
    req = json.loads(r.stdout)["requests"]
    eq(sorted(req), ["asr", "llm"], "both apps")
    eq(req["llm"]["count"], 20, "the window's requests only")
    # nearest rank: p50 of 20 is the 10th, p95 the 19th, p99 the 20th
    eq(req["llm"]["queue_ms"], {"p50": 10.0, "p95": 19.0, "p99": 20.0, "max": 20.0}, "queue")
    eq(req["llm"]["processing_ms"], {"p50": 100.0, "p95": 190.0, "p99": 200.0, "max": 200.0},
       "processing")
    eq(req["llm"]["other_ms"], {"prefill": {"count": 20, "p50": 50.0, "p95": 95.0, "p99": 100.0,
                                            "max": 100.0}}, "other: numbers only")
    eq(req["asr"], {"count": 2, "queue_ms": {"p50": 500.0, "p95": 1500.0, "p99": 1500.0,
                                             "max": 1500.0},
                    "processing_ms": {"p50": 1000.0, "p95": 2000.0, "p99": 2000.0, "max": 2000.0},
                    "other_ms": {}}, "asr")
    r = jobscope("report", "--session", "r", "--db", db)
    eq(r.returncode, 0, r.stderr)
    text = r.stdout
    check("Requests (ms; percentiles nearest-rank)" in text, text)
    check("  llm: 20 requests\n" in text and "  asr: 2 requests\n" in text, text)
    check(re.search(r"\n    queue +20 +10\.000 +19\.000 +20\.000 +20\.000\n", text), text)
    check(re.search(r"\n    processing +20 +100\.000 +190\.000 +200\.000 +200\.000\n", text), text)
    check(re.search(r"\n    prefill +20 +50\.000 +95\.000 +100\.000 +100\.000\n", text), text)
    check("note" not in text, "text values are not times")


run_tests(globals())
