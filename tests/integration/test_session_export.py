"""A profiling session read from anywhere: `jobscope export --head` and
`jobscope report --session` (text, JSON, CSV, plots per device).

A head on loopback with a read token and an admin token, two agents (each
its own node in a UTS namespace, each with two fake GPUs) and a session run
and stopped.  Then:
  - `export --head` writes the very bytes `export --db` writes (JSON, CSV),
    and `report --session --head` those of `report --session --db`;
  - failures each say why, exit 1 (2 for usage) and leave -o alone: no head
    there, no token (401), a wrong one (403), no such session (404), a
    server that is not a head (200 with a page, 404 with a page);
  - `report --session --plot F.png`: one PNG per device, with the PNG
    signature and the size the picture is drawn at (from its panels);
    --format json: the export, with every device;
  - every other selector, html, and --plot with --head beside --session:
    exit 2 and a message, never ignored.
"""
import http.server
import json
import os
import re
import subprocess
import threading

from harness import JOBSCOPE, free_port, jobscope, run_tests, check, eq, wait_for
from head_harness import head_db, start_agent, stop_agent, held, sql, store_exists
from png_harness import png_size, line_row, colour_pixels

FAKES = os.environ.get("FAKES", "")
SCENARIO = """driver 535.104.05
device 0 uuid=GPU-00000000-0000-0000-0000-000000000000 name="NVIDIA A100" bus=00000000:07:00.0 mem_total=85899345920 power_limit=400000 nvlinks=0
device 1 uuid=GPU-11111111-1111-1111-1111-111111111111 name="NVIDIA A100" bus=00000000:0F:00.0 mem_total=85899345920 power_limit=400000 nvlinks=0
at 0 0 util=60 mem_used=12884901888 power=200000 pcie_rx_kbps=1000 pcie_tx_kbps=500
at 0 1 util=10 mem_used=1073741824 power=80000
"""
# plot.c's layout: header, event band and time axis, then 180 px a panel drawn
PLOT_WIDTH, PLOT_FIXED_H, PANEL_H, NO_DATA_H = 1200, 56 + 16 + 30, 180, 120


class TokenHead:
    """A head that wants a read token for reads and an admin token for sessions."""

    def __init__(self, wd):
        self.db = head_db(wd.join("head.db"))
        self.read, self.admin = wd.join("read-token"), wd.join("admin-token")
        with open(self.read, "w") as f:
            f.write("reader-secret\n")
        with open(self.admin, "w") as f:
            f.write("admin-secret\n")
        self.log = wd.join("head.log")
        self.errf = open(self.log, "w")
        self.proc = subprocess.Popen(
            [JOBSCOPE, "head", "--db", self.db, "--listen", "127.0.0.1:0",
             "--read-token-file", self.read, "--admin-token-file", self.admin],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.errf)
        self.port = wait_for(self._port, timeout=15, what="the head's listening line")
        self.url = "http://127.0.0.1:%d" % self.port

    def _port(self):
        if self.proc.poll() is not None:
            raise AssertionError("the head exited: %s" % open(self.log).read())
        m = re.findall(r"listening on 127\.0\.0\.1:(\d+)", open(self.log).read())
        return int(m[-1]) if m else None

    def stop(self):
        self.proc.terminate()
        rc = self.proc.wait(timeout=20)
        self.errf.close()
        return rc


class NotAHead:
    """A web server that is not a jobscope head: every GET answers status with a page."""

    def __init__(self, status):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the stdlib's name
                body = b"<html><body>a login page</body></html>"
                self.send_response(status)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass
        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def env_without_token():
    return {k: v for k, v in os.environ.items() if k != "JOBSCOPE_TOKEN_FILE"}


def plot_env(wd):
    """Under ASan, fontconfig's process-wide caches (allocated once when cairo
    first picks a font, never freed) are not counted as leaks."""
    supp = wd.join("lsan.supp")
    with open(supp, "w") as f:
        f.write("leak:libfontconfig.so\n")
    env = env_without_token()
    env["LSAN_OPTIONS"] = ":".join(o for o in (env.get("LSAN_OPTIONS"), "suppressions=" + supp,
                                               "print_suppressions=0") if o)
    return env


def run_bytes(wd, name, *args, env=None):
    """jobscope ARGS -o FILE: (exit code, stderr, the file's bytes or None)."""
    out = wd.join(name)
    r = jobscope(*args, "-o", out, env=env or env_without_token())
    data = open(out, "rb").read() if os.path.exists(out) else None
    return r.returncode, r.stderr, data


def ticks_since(adb, start_ms):
    """An agent's ticks since start_ms that hold a row of each of its GPUs."""
    return sql(adb, "SELECT count(*) FROM host_samples h WHERE h.ts_ms >= ? AND"
                    " (SELECT count(*) FROM gpu_samples g WHERE g.ts_ms = h.ts_ms) = 2",
               start_ms)[0][0]


def run_session(wd):
    """A head, two agents with two GPUs each, session s1 run ten ticks and stopped,
    and session empty (a node that does not exist); the agents stopped and
    every row at the head.  Returns the head, still running."""
    scn = wd.join("gpu.scn")
    with open(scn, "w") as f:
        f.write(SCENARIO)
    os.environ.update({"JOBSCOPE_NVML_LIBRARY": os.path.join(FAKES, "libnvidia-ml.so.1"),
                       "FAKE_GPU_SCENARIO": scn})
    head = TokenHead(wd)
    agents = [start_agent(wd, head, n) for n in ("node-a", "node-b")]
    try:
        wait_for(lambda: store_exists(head.db) and
                 len(sql(head.db, "SELECT * FROM agents")) == 2, timeout=20,
                 what="both agents streaming")
        for args in (["start", "s1"], ["start", "empty", "--nodes", "no-such-node"]):
            r = jobscope("session", *args, "--head", head.url, "--token-file", head.admin)
            eq(r.returncode, 0, "session %s: %s" % (args, r.stderr))
        # a line's worth in every picture: ten ticks of each node, and of its GPUs, in s1
        start = sql(head.db, "SELECT start_ms FROM sessions WHERE name = 's1'")[0][0]
        wait_for(lambda: all(ticks_since(adb, start) >= 10 for _, adb, _, _ in agents),
                 timeout=20, what="ten ticks of each node in the session")
        r = jobscope("session", "stop", "--head", head.url, "--token-file", head.admin)
        eq(r.returncode, 0, "session stop: " + r.stderr)
    finally:
        for proc, _, _, errf in agents:
            eq(stop_agent(proc, errf), 0, "agent exit")
        del os.environ["JOBSCOPE_NVML_LIBRARY"], os.environ["FAKE_GPU_SCENARIO"]
    wait_for(lambda: all(held(head.db, a[1]) for a in agents), timeout=30,
             what="every row at the head")
    return head


def test_export_and_report_over_http(wd):
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    head = run_session(wd)
    try:
        tok = ["--token-file", head.read]
        # the same bytes from the head as from its store, JSON and CSV
        for fmt in ("json", "csv"):
            rc, err, local = run_bytes(wd, "db." + fmt, "export", "--session", "s1",
                                       "--db", head.db, "--format", fmt)
            eq(rc, 0, "export --db %s: %s" % (fmt, err))
            rc, err, remote = run_bytes(wd, "head." + fmt, "export", "--session", "s1",
                                        "--head", head.url, "--format", fmt, *tok)
            eq(rc, 0, "export --head %s: %s" % (fmt, err))
            check(len(local) > 1000, "a real export (%d bytes)" % len(local))
            check(remote == local, "export --head %s is byte for byte export --db's" % fmt)
        exp = json.loads(open(wd.join("db.json")).read())
        devices = sorted(exp["summary_by_device"])
        eq(devices, ["node-a:0:NVIDIA A100", "node-a:1:NVIDIA A100",
                     "node-b:0:NVIDIA A100", "node-b:1:NVIDIA A100"], "every device")
        want = sql(head.db, "SELECT count(*) FROM host_samples WHERE ts_ms BETWEEN ? AND ?",
                   *sql(head.db, "SELECT start_ms, end_ms FROM sessions WHERE name = 's1'")[0])[0][0]
        eq(exp["frame_count"], want, "a frame per tick of each node")
        # the token from $JOBSCOPE_TOKEN_FILE, to stdout
        r = jobscope("export", "--session", "s1", "--head", head.url,
                     env=dict(env_without_token(), JOBSCOPE_TOKEN_FILE=head.read))
        eq(r.returncode, 0, r.stderr)
        eq(r.stdout.encode(), open(wd.join("db.json"), "rb").read(), "stdout, token from env")
        # the head from $JOBSCOPE_HEAD, as `session` and `status` take it
        r = jobscope("export", "--session", "s1",
                     env=dict(env_without_token(), JOBSCOPE_TOKEN_FILE=head.read,
                              JOBSCOPE_HEAD=head.url))
        eq(r.returncode, 0, r.stderr)
        eq(r.stdout.encode(), open(wd.join("db.json"), "rb").read(), "the head from env")

        # report --session: text, json, csv the same from the head as from the store
        for fmt in ("text", "json", "csv"):
            rc, err, local = run_bytes(wd, "r-db." + fmt, "report", "--session", "s1",
                                       "--db", head.db, "--format", fmt)
            eq(rc, 0, "report --session --db %s: %s" % (fmt, err))
            rc, err, remote = run_bytes(wd, "r-head." + fmt, "report", "--session", "s1",
                                        "--head", head.url, "--format", fmt, *tok)
            eq(rc, 0, "report --session --head %s: %s" % (fmt, err))
            check(remote == local, "report --session --head %s = --db" % fmt)
            if fmt != "text":
                check(local == open(wd.join("db." + fmt), "rb").read(),
                      "report --session --format %s is the export" % fmt)
        text = open(wd.join("r-db.text")).read()
        check(text.startswith("jobscope session s1:") and "node-a:1:NVIDIA A100" in text, text)

        # plots per device: the node's and each GPU's, their names on stderr
        r = jobscope("report", "--session", "s1", "--db", head.db, "--plot", wd.join("s1.png"),
                     "-o", wd.join("s1.txt"), env=plot_env(wd))
        eq(r.returncode, 0, r.stderr)
        listed = re.findall(r"jobscope: plot (\S+)", r.stderr)
        want_files = [wd.join("s1-%s.png" % d) for d in
                      ("node-a-host", "node-a-gpu0", "node-a-gpu1", "node-b-host", "node-b-gpu0",
                       "node-b-gpu1")]
        eq(listed, [wd.join("s1.png")] + want_files, "the overview, one picture per device")
        eq(open(wd.join("s1.txt")).read(), text, "and the report itself")
        for node in ("node-a", "node-b"):
            frames = [f for f in exp["frames"] if f["node"] == node]
            # panels drawn: those with a value (CPU, memory, storage, network; GPU
            # utilization, memory, PCIe for GPU 0 only, power)
            has = lambda *keys: any(f[k] is not None for f in frames for k in keys)
            panels = sum([has("cpu_util"), has("mem_used"), has("disk_read", "disk_write"),
                          has("net_rx", "net_tx")])
            check(panels >= 2, "%s: CPU and memory at least" % node)
            eq(png_size(wd.join("s1-%s-host.png" % node)),
               (PLOT_WIDTH, PLOT_FIXED_H + PANEL_H * panels), "%s picture" % node)
            for gpu in (0, 1):
                had = lambda *keys: any(f[k][gpu] is not None for f in frames for k in keys)
                panels = sum([had("gpu_util"), had("gpu_memory"),
                              had("pcie_rx", "pcie_tx", "nvlink_rx", "nvlink_tx"),
                              had("gpu_power")])
                eq(panels, 4, "%s GPU %d: utilization, memory, PCIe, power" % (node, gpu))
                eq(png_size(wd.join("s1-%s-gpu%d.png" % (node, gpu))),
                   (PLOT_WIDTH, PLOT_FIXED_H + PANEL_H * panels), "%s GPU %d" % (node, gpu))
        for f in want_files:
            check(os.path.getsize(f) > 5000, "%s is a drawing" % f)
        # the utilization drawn where it was: GPU 0 at 60%, GPU 1 at 10% of the first
        # panel's 0-100% axis (plot area from y 94, 142 px high; the first colour)
        for gpu, util in ((0, 60), (1, 10)):
            y = line_row(wd.join("s1-node-a-gpu%d.png" % gpu), (31, 119, 180), 94, 236, 300, 1100)
            check(abs(y - (94 + 142 - util / 100 * 142)) <= 2,
                  "GPU %d's line at row %d for %d%%" % (gpu, y, util))
        # a session without a frame: the one picture says so
        r = jobscope("report", "--session", "empty", "--db", head.db, "--plot",
                     wd.join("e.png"), env=plot_env(wd))
        eq(r.returncode, 0, r.stderr)
        eq(re.findall(r"jobscope: plot (\S+)", r.stderr), [wd.join("e.png")], "one file")
        eq(png_size(wd.join("e.png")), (PLOT_WIDTH, PLOT_FIXED_H + NO_DATA_H), "no data")
    finally:
        eq(head.stop(), 0, "head exit")


def test_export_head_failures(wd):
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    head = run_session(wd)
    wrong = wd.join("wrong-token")
    with open(wrong, "w") as f:
        f.write("not-it\n")
    page200, page404 = NotAHead(200), NotAHead(404)
    try:
        out = wd.join("kept.json")
        cases = [
            # (what, args, exit code, words in the message)
            ("no head there", ["--head", "http://127.0.0.1:%d" % free_port(), "--session", "s1",
                               "--token-file", head.read], 1, "cannot reach http://127.0.0.1:"),
            ("no token", ["--head", head.url, "--session", "s1"], 1,
             "wants its read token (401"),
            ("a wrong token", ["--head", head.url, "--session", "s1", "--token-file", wrong], 1,
             "refused the token (403: wrong token)"),
            ("no such session", ["--head", head.url, "--session", "nope", "--token-file",
                                 head.read], 1, "no session 'nope' on the head at"),
            ("not a head (200)", ["--head", page200.url, "--session", "s1"], 1,
             "is not a jobscope head's session export (HTTP 200, Content-Type 'text/html')"),
            ("not a head (404)", ["--head", page404.url, "--session", "s1"], 1,
             "answered 404 (not in a jobscope head's words): is it a jobscope head?"),
            ("not a session name", ["--head", head.url, "--session", "a\tb"], 2,
             "'a\tb' is not a session's name"),
            ("no token file", ["--head", head.url, "--session", "s1", "--token-file",
                               wd.join("missing")], 2, "missing"),
            ("--db and --head", ["--head", head.url, "--db", head.db, "--session", "s1"], 2,
             "--db or --head, not both"),
        ]
        for fmt in ("json", "csv"):
            for what, args, code, words in cases:
                with open(out, "w") as f:
                    f.write("kept\n")
                r = jobscope("export", *args, "--format", fmt, "-o", out,
                             env=env_without_token())
                eq(r.returncode, code, "%s (%s): exit (stderr %r)" % (what, fmt, r.stderr))
                check(words in r.stderr, "%s (%s): %r in %r" % (what, fmt, words, r.stderr))
                eq(open(out).read(), "kept\n", "%s (%s): -o untouched" % (what, fmt))
        # report --session --head fails the same way
        r = jobscope("report", "--head", head.url, "--session", "s1", env=env_without_token())
        eq(r.returncode, 1, "report --session --head without a token")
        check("wants its read token (401" in r.stderr, r.stderr)
        # the endpoint itself: format checked, the read token needed
        import urllib.request
        import urllib.error
        req = urllib.request.Request(head.url + "/api/v1/sessions/s1/export?format=xml",
                                     headers={"Authorization": "Bearer reader-secret"})
        try:
            urllib.request.urlopen(req, timeout=10)
            raise AssertionError("format=xml answered 200")
        except urllib.error.HTTPError as e:
            eq(e.code, 400, "format=xml")
            eq(json.loads(e.read())["error"], "format: json (default), csv, text or gswarm", "why")
        req = urllib.request.Request(head.url + "/api/v1/sessions/s1",
                                     headers={"Authorization": "Bearer reader-secret"})
        with urllib.request.urlopen(req, timeout=10) as r:
            eq(json.loads(r.read())["name"], "s1", "/api/v1/sessions/NAME still the session")
    finally:
        page200.close()
        page404.close()
        eq(head.stop(), 0, "head exit")


def test_long_session_plot_keeps_gaps(wd):
    """4,400 frames of one node (4 times the points a series is drawn with) at
    50% CPU, and a minute without any in the middle: the line is at 50% on
    both sides and broken over the minute, never drawn across it."""
    db = wd.join("long.db")
    r = jobscope("run", "--db", db, "--", "true")
    eq(r.returncode, 0, "a store: " + r.stderr)
    import sqlite3
    t0, step = 1767571200000, 100
    con = sqlite3.connect(db)
    con.execute("INSERT INTO nodes (id, hostname, cores, mem_total_bytes) VALUES"
                " (900, 'big', 8, 8589934592)")
    rows, busy = [], 0
    for i in range(5600):
        if 2000 <= i < 2600:
            continue  # the agent was away for a minute
        busy += 50
        rows.append((900, t0 + i * step, busy, busy, 8589934592, 4294967296))
    con.executemany("INSERT INTO host_samples (node_id, ts_ms, cpu_user_ms, cpu_idle_ms,"
                    " cpu_nice_ms, cpu_system_ms, cpu_iowait_ms, cpu_irq_ms, cpu_softirq_ms,"
                    " cpu_steal_ms, mem_total_bytes, mem_available_bytes)"
                    " VALUES (?, ?, ?, ?, 0, 0, 0, 0, 0, 0, ?, ?)", rows)
    con.execute("INSERT INTO sessions (name, start_ms, end_ms) VALUES ('long', ?, ?)",
                (t0, t0 + 5599 * step))
    con.commit()
    con.close()
    r = jobscope("export", "--session", "long", "--db", db)
    eq(r.returncode, 0, r.stderr)
    exp = json.loads(r.stdout)
    eq(exp["frame_count"], 5000, "frames")
    eq([(g["from_ms"] - t0, g["to_ms"] - t0) for g in exp["gaps"]], [(199900, 260000)], "gap")
    r = jobscope("report", "--session", "long", "--db", db, "--plot", wd.join("l.png"),
                 "-o", "/dev/null", env=plot_env(wd))
    eq(r.returncode, 0, r.stderr)
    path = wd.join("l-big-host.png")
    eq(re.findall(r"jobscope: plot (\S+)", r.stderr), [wd.join("l.png"), path],
       "the overview, the node's picture")
    # x of t: 86 + t / 559.9 s * 1090 px; the minute away is x 475-592
    for x0, x1 in ((100, 460), (610, 1160)):
        y = line_row(path, (31, 119, 180), 94, 236, x0, x1)
        check(abs(y - (94 + 142 - 0.5 * 142)) <= 2, "50%% at row %d (x %d-%d)" % (y, x0, x1))
    eq(colour_pixels(path, (31, 119, 180), 94, 236, 482, 586), 0, "nothing drawn over the gap")
    # the overview (no GPU: the node's CPU first) breaks there too
    for x0, x1 in ((100, 460), (610, 1160)):
        y = line_row(wd.join("l.png"), (31, 119, 180), 94, 236, x0, x1)
        check(abs(y - (94 + 142 - 0.5 * 142)) <= 2, "overview: 50%% at row %d" % y)
    eq(colour_pixels(wd.join("l.png"), (31, 119, 180), 94, 236, 482, 586), 0,
       "overview: nothing drawn over the gap")


def test_session_option_combinations(wd):
    # no head needed: each is refused before the store is read (or made)
    db = wd.join("none.db")
    for extra, words in [
        (["--job", "slurm:1"], "--session NAME is the whole question"),
        (["7"], "--session NAME is the whole question"),
        (["last"], "--session NAME is the whole question"),
        (["--user", "u"], "--session NAME is the whole question"),
        (["--node", "n"], "--session NAME is the whole question"),
        (["--since", "2h"], "--session NAME is the whole question"),
        (["--until", "1h"], "--session NAME is the whole question"),
        (["--by", "user"], "--session NAME is the whole question"),
        (["--format", "html"], "--format html is for a job or history"),
        (["--head", "http://127.0.0.1:1", "--plot", wd.join("x.png")],
         "--plot needs a store (--db)"),
        (["--plot", wd.join("x.gif")], "the file must end in .png, .pdf or .svg"),
        (["--token-file", wd.join("t")], "--token-file is a head's token: with --head"),
    ]:
        r = jobscope("report", "--session", "s1", "--db", db, *extra, env=env_without_token())
        if "--head" in extra:
            r = jobscope("report", "--session", "s1", *extra, env=env_without_token())
        eq(r.returncode, 2, "report --session %s: exit (stderr %r)" % (extra, r.stderr))
        check(words in r.stderr, "%r: %r in %r" % (extra, words, r.stderr))
        check(not os.path.exists(db), "nothing opened or made")
    r = jobscope("export", "--session", "s1", "--db", db, "--token-file", wd.join("t"))
    eq(r.returncode, 2, "export --db --token-file")
    check("--token-file is a head's token: with --head" in r.stderr, r.stderr)


if __name__ == "__main__":
    run_tests(globals())
