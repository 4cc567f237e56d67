"""gswarm-profiler's HTTP client against our head (docs/gswarm.md).

A small client of our own does what gswarm's does (its `gsprof http-status`,
`http-profile`, `http-stop`, its later `gswarm profiler sessions`, and POST
/profiling/record): it reads the fields its code reads, with the types its
code needs, and keys on `success` as it does.  The cluster: a head with
--session-dir, node-a with two fake GPUs (GPU 1's utilization and PCIe
NOT_SUPPORTED) and node-b with no GPU at all, each an agent in its own UTS
namespace.
"""
import json
import os
import subprocess
import urllib.error
import urllib.request

from harness import JOBSCOPE, jobscope, run_tests, check, eq, wait_for
from head_harness import Head, head_db, held, sql, start_agent, stop_agent, store_exec

FAKES = os.environ.get("FAKES", "")
SCENARIO = """driver 535.104.05
device 0 uuid=GPU-0000000a-0000-0000-0000-000000000000 name="NVIDIA A100" bus=00000000:07:00.0 mem_total=85899345920 power_limit=400000 nvlinks=0
device 1 uuid=GPU-0000000a-1111-1111-1111-111111111111 name="NVIDIA A100" bus=00000000:0F:00.0 mem_total=85899345920 power_limit=400000 nvlinks=0
unsupported 1 util pcie
at 0 0 util=60 mem_used=21474836480 power=200000 pcie_rx_kbps=1000 pcie_tx_kbps=500
at 0 1 mem_used=1073741824 power=80000
"""
NAME = "run 1/\u03b1"          # a space, a slash and a Greek letter
FILE = "run 1%2F\u03b1"        # its file in --session-dir
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class GswarmClient:
    """What gswarm's HTTP client does with each answer (requests' raise_for_status)."""

    def __init__(self, url):
        self.url = url

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def ok(self, method, path, body=None):
        status, doc = self.call(method, path, body)
        eq(status, 200, "%s %s: raise_for_status passes (%r)" % (method, path, doc))
        return doc

    def http_status(self):
        """gsprof http-status: nine fields, read as its code reads them."""
        d = self.ok("GET", "/status")
        types = {"freq": int, "enable_bandwidth_profiling": bool, "enable_nvlink_profiling": bool,
                 "is_profiling": bool, "output_filename": str, "frame_id_counter": int,
                 "connected_clients": list, "total_gpus": int, "gpu_info": dict}
        for key, t in types.items():
            check(key in d, "/status has %s" % key)
            check(type(d[key]) is t, "/status %s is %s: %r" % (key, t.__name__, d[key]))
        check(all(type(c) is str for c in d["connected_clients"]), "client ids are strings")
        lines = ["Frequency: %dms" % int(d["freq"]), "Output Filename: %s" % d["output_filename"],
                 "Frame Counter: %d" % d["frame_id_counter"], "Total GPUs: %d" % d["total_gpus"],
                 "Connected Clients: %d" % len(d["connected_clients"])]
        return d, lines

    def http_profile(self, name):
        return self.ok("POST", "/profiling/start", {"name": name})

    def http_stop(self, name=None):
        return self.ok("POST", "/profiling/stop", {"name": name} if name else {})

    def sessions(self):
        """gswarm profiler sessions: name, 'Active' if session.get('active'), frames."""
        d = self.ok("GET", "/profiling/sessions")
        return [(s["name"], "Active" if s.get("active") else "Completed", s.get("frames"))
                for s in d.get("sessions", [])]


def settled_frame(db, start_ms, period_ms, gs):
    """The number k (from 1) of the session's latest frame, once it is past its second
    (k >= 2) and the head holds every figure it takes: rows of each node (host, root
    filesystem) and of each GPU after its time, so none can come later, and a row of
    each at most 3 intervals (300 ms) before it, as gswarm's frame wants them fresh.
    None until then (a frame whose rows a busy machine held up is passed over for
    the next)."""
    listed = dict((n, f) for n, _state, f in gs.sessions())
    k = listed.get(NAME, 0)
    t = start_ms + k * period_ms
    if k < 2:
        return None
    series = []
    for host in ("node-a", "node-b"):
        for table in ("host_samples", "fs_samples"):
            series.append("SELECT %%s(s.ts_ms) FROM %s s JOIN nodes n ON n.id = s.node_id"
                          " WHERE n.hostname = '%s' AND s.ts_ms %%s ?" % (table, host))
    for idx in (0, 1):
        series.append("SELECT %%s(s.ts_ms) FROM gpu_samples s JOIN devices d"
                      " ON d.id = s.device_id JOIN nodes n ON n.id = d.node_id"
                      " WHERE n.hostname = 'node-a' AND d.idx = %d AND s.ts_ms %%s ?" % idx)
    for q in series:
        if sql(db, q % ("min", ">"), t)[0][0] is None:
            return None  # not yet past the frame at the head
        before = sql(db, q % ("max", "<="), t)[0][0]
        if before is None or t - before > 300:
            return None  # not fresh: the next frame, then
    return k


def start_cluster(wd, extra=()):
    scn = wd.join("gpu.scn")
    with open(scn, "w") as f:
        f.write(SCENARIO)
    head = Head(wd, extra=["--session-dir", wd.path] + list(extra))
    os.environ.update({"JOBSCOPE_NVML_LIBRARY": os.path.join(FAKES, "libnvidia-ml.so.1"),
                       "FAKE_GPU_SCENARIO": scn})
    a = start_agent(wd, head, "node-a")  # at 100 ms
    os.environ["JOBSCOPE_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1"
    b = start_agent(wd, head, "node-b")
    del os.environ["FAKE_GPU_SCENARIO"]
    return head, [a, b]


def test_gswarm_client_against_head(wd):
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    head, agents = start_cluster(wd)
    gs = GswarmClient(head.url)
    try:
        st, lines = wait_for(lambda: (lambda r: r if len(r[0]["connected_clients"]) == 2
                                      and r[0]["total_gpus"] == 2 else None)(gs.http_status()),
                             timeout=20, what="both agents connected")
        eq((st["is_profiling"], st["output_filename"], st["frame_id_counter"]), (False, "", 0),
           "nothing profiled yet")
        eq(st["freq"], 100, "freq: the agents' interval in ms")
        by_host = {v[0]["hostname"] if v else None: (k, v) for k, v in st["gpu_info"].items()}
        eq(sorted(st["gpu_info"]), sorted(st["connected_clients"]), "gpu_info by client id")
        a_id, a_gpus = by_host["node-a"]
        eq([(g["id"], g["name"], g["physical_idx"], g["hostname"]) for g in a_gpus],
           [("node-a:%d:NVIDIA A100" % i, "NVIDIA A100", i, "node-a") for i in (0, 1)],
           "node-a's GPUs as gswarm names them")
        b_id = [c for c in st["connected_clients"] if c != a_id][0]
        eq(st["gpu_info"][b_id], [], "node-b has no GPU")

        # /clients: gswarm's "gpus" per client
        clients = {c["client_id"]: c for c in gs.ok("GET", "/clients")["clients"]}
        eq([g["id"] for g in clients[a_id]["gpus"]], [g["id"] for g in a_gpus], "/clients gpus")
        eq((clients[b_id]["gpu_count"], clients[b_id]["gpus"]), (0, []), "/clients node-b")

        # /metrics/latest: gswarm's client_data, in its units
        def latest():
            d = gs.ok("GET", "/metrics/latest")
            cd = d.get("client_data", {})
            # node-b's first host row may come a batch after its hello: wait for it too
            return d if a_id in cd and b_id in cd and len(cd[a_id]["gpus_metrics"]) == 2 \
                and cd[b_id]["system_metrics"]["dram_util"] > 0 else None
        d = wait_for(latest, timeout=10, what="client_data of both nodes")
        ours = {(g["node"], g["index"]): g for g in d["gpus"]}
        g0, g1 = d["client_data"][a_id]["gpus_metrics"]
        eq((g0["physical_idx"], g0["name"], g0["gpu_util"]), (0, "NVIDIA A100", 0.6),
           "GPU 0: utilization as a 0-1 fraction")
        eq(g0["mem_util"], round(21474836480 / 85899345920, 6), "GPU 0: memory used / total")
        # gswarm's rx is nvitop's first value, the GPU's transmit; KiB/s
        eq((g0["dram_bw_gbps_rx"], g0["dram_bw_gbps_tx"]),
           (round(ours[("node-a", 0)]["pcie_tx_bps"] / 1024, 6),
            round(ours[("node-a", 0)]["pcie_rx_bps"] / 1024, 6)), "GPU 0: PCIe in KiB/s")
        check(ours[("node-a", 0)]["pcie_tx_bps"] > 0, "a PCIe figure to compare")
        eq(ours[("node-a", 1)]["util_pct"], None, "our own field says NOT_SUPPORTED: null")
        eq((g1["gpu_util"], g1["dram_bw_gbps_rx"]), (0.0, 0.0),
           "gswarm's payload has no null: 0.0, as its client sends")
        sysm = d["client_data"][b_id]["system_metrics"]
        check(type(sysm["dram_util"]) is float and 0 < sysm["dram_util"] < 100,
              "node-b's DRAM use in percent: %r" % sysm)
        eq(d["client_data"][b_id]["gpus_metrics"], [], "node-b: no GPU metrics")

        # http-profile, twice; then a second session of another name runs beside it
        r = gs.http_profile(NAME)
        eq((r["success"], r["message"], r["output_file"]),
           (True, "Profiling started.", FILE + ".json"), "started")
        r = gs.http_profile(NAME)
        eq((r["success"], r["message"], r["output_file"]),
           (False, "Profiling is already active.", ""), "the same name again: success false")
        st, _ = gs.http_status()
        eq((st["is_profiling"], st["output_filename"]), (True, FILE + ".json"), "profiling")

        # per-request timings, as gswarm's later head takes them
        for q, p in ((0.5, 1.25), (0.25, 2.0)):
            r = gs.ok("POST", "/profiling/record",
                      {"app_name": "llm", "queue_time": q, "processing_time": p,
                       "other_time": {"prefill": 0.125}})
            eq((r["success"], r["message"]), (True, "Time consumption recorded successfully"),
               "recorded")
        r = gs.ok("POST", "/record_time", {"app_name": "llm", "queue_time": 1,
                                          "processing_time": 3})
        eq(r["success"], True, "the earlier path too")
        for body, want in (({"app_name": "llm", "queue_time": 1}, 422),
                           ({"app_name": "llm", "queue_time": "x", "processing_time": 1}, 422),
                           ({"app_name": "llm", "queue_time": -1, "processing_time": 1}, 400),
                           ({"app_name": "", "queue_time": 1, "processing_time": 1}, 400),
                           ({"app_name": "llm", "queue_time": 1, "processing_time": 1,
                             "other_time": {"x": "y"}}, 422)):
            status, doc = gs.call("POST", "/profiling/record", body)
            eq((status, doc.get("success")), (want, False), "record %r -> %r" % (body, doc))
            check(doc.get("detail"), "it says why: %r" % doc)

        # two frames or more, the last with every figure (settled_frame): the one checked
        period = sql(head.db, "SELECT interval_ms FROM sessions WHERE name = ?", NAME)[0][0] \
            or 1000
        start = sql(head.db, "SELECT start_ms FROM sessions WHERE name = ?", NAME)[0][0]
        k = wait_for(lambda: settled_frame(head.db, start, period, gs), timeout=20,
                     what="a frame with every figure at the head")
        listed = dict((n, (state, frames)) for n, state, frames in gs.sessions())
        check(listed[NAME][0] == "Active" and listed[NAME][1] >= 2,
              "gswarm's lister: active, with frames: %r" % listed)
        # the agents stop first, each sending the head what it lacks as it goes: no row
        # of the window can reach the head after the stop (a busy machine's head holds
        # some back for a second or more), so the file written at the stop is what any
        # later export of the session writes
        for proc, _, _, errf in agents:
            eq(stop_agent(proc, errf), 0, "agent exit")
        wait_for(lambda: all(held(head.db, adb) for _, adb, _, _ in agents), timeout=30,
                 what="every row of the agents at the head")
        r = gs.http_stop(NAME)
        eq((r["success"], r["message"], r["output_file"]),
           (True, "Profiling stopped. Data saved to %s" % wd.join(FILE + ".json"), None),
           "stopped")
        r = gs.http_stop()
        eq((r["success"], r["message"]), (False, "Profiling is not active."), "nothing to stop")
        listed = dict((n, (state, frames)) for n, state, frames in gs.sessions())
        eq(listed[NAME][0], "Completed", "gswarm's lister: completed")
        st, _ = gs.http_status()
        eq((st["is_profiling"], st["output_filename"], st["frame_id_counter"]),
           (False, FILE + ".json", listed[NAME][1]), "the last run's file and frames")

        # the files a gswarm user looks for, written at the stop
        with open(wd.join(FILE + ".json"), "rb") as f:
            raw = f.read()
        doc = json.loads(raw)
        eq(len(doc["frames"]), listed[NAME][1], "one frame per period, as many as listed")
        r = subprocess.run([JOBSCOPE, "export", "--session", NAME, "--db", head.db, "--format",
                            "gswarm"], capture_output=True)
        eq(r.stdout, raw, "the file at the stop is the export of the stopped session")
        eq(doc["request_time_info"],
           {"llm": [{"queue_time": 0.5, "processing_time": 1.25, "other_times": {"prefill": 0.125}},
                    {"queue_time": 0.25, "processing_time": 2.0, "other_times": {"prefill": 0.125}},
                    {"queue_time": 1.0, "processing_time": 3.0, "other_times": {}}]},
           "the requests recorded during the session")
        last = doc["frames"][k - 1]
        eq(last["gpu_id"], ["node-a:0:NVIDIA A100", "node-a:1:NVIDIA A100"], "every GPU")
        eq((last["gpu_util"], last["dram_bandwidth_rx"][1]), (["0.60", "0.00"], "0.00"),
           "fractions in strings; NOT_SUPPORTED is 0.00")
        eq(len(last["disk_util"]), 2, "both nodes' root filesystem use (fs_samples)")
        st_fs = os.statvfs("/")
        used = (st_fs.f_blocks - st_fs.f_bfree) * st_fs.f_frsize
        pct = 100.0 * used / (used + st_fs.f_bavail * st_fs.f_frsize)
        check(all(abs(float(v) - pct) < 1.0 for v in last["disk_util"]),
              "disk_util is psutil's percent of / (%.2f): %r" % (pct, last["disk_util"]))
        with open(wd.join(FILE + ".png"), "rb") as f:
            eq(f.read(8), PNG_SIGNATURE, "the session's plot")
        # a name whose file would be too long: cut, and told apart by a hash
        for name in ("/" * 100, "/" * 99 + "."):
            r = gs.http_profile(name)
            eq(r["success"], True, "a long name starts")
            check(len(r["output_file"].encode()) <= 255 and "~" in r["output_file"],
                  "its file name fits: %r" % r["output_file"])
            eq(gs.http_stop(name)["success"], True, "and stops")
            check(os.path.exists(wd.join(r["output_file"])), "its file is there")
        check(len([f for f in os.listdir(wd.path) if f.startswith("%2F%2F")]) == 4,
              "two names, two files each: %r" % os.listdir(wd.path))
        # and the name (space, slash, letter) goes through a URL too
        r = jobscope("export", "--session", NAME, "--head", head.url, "--format", "gswarm")
        eq(r.returncode, 0, r.stderr)
        eq(json.loads(r.stdout)["frames"], doc["frames"], "export --head: the same frames")
    finally:
        for proc, _, _, errf in agents:
            if proc.returncode is None:
                eq(stop_agent(proc, errf), 0, "agent exit")
        del os.environ["JOBSCOPE_NVML_LIBRARY"]
        head.kill(15)


def _node_batch(k, t0, ticks, step_ms):
    """Node long-k's batch: 8 GPUs, its host and root filesystem, a row each step_ms
    from t0, ticks of them, as an agent sends them (docs/wire.md)."""
    devices = [[g + 1, 1, "NVIDIA", g, "GPU-%08x-%04x-0000-0000-000000000000" % (k, g),
                "NVIDIA H100 80GB HBM3", 85899345920] for g in range(8)]
    gpu, host, fs, seq = [], [], [], 0
    for i in range(ticks):
        ts = t0 + i * step_ms
        seq += 1
        host.append([seq, 1, ts, 540000000000, 270000000000 - 1000000 * (i % 50)])
        seq += 1
        fs.append([seq, 1, ts, "/", 300000000000 + 4096 * i, 900000000000])
        for g in range(8):
            seq += 1
            gpu.append([seq, g + 1, ts, (i * 7 + g * 13 + k) % 101,
                        1073741824 * ((i + g) % 80), 1000000 + 4096 * ((i * g) % 997),
                        2000000 + 3072 * ((i + k) % 991)])
    return seq, json.dumps({
        "version": 1, "agent_id": "long-%02d" % k, "interval_ms": step_ms,
        "node": {"hostname": "long-%02d" % k, "cores": 8, "mem_total_bytes": 540000000000},
        "from_seq": 0, "to_seq": seq,
        "tables": {
            "devices": {"columns": ["id", "node_id", "vendor", "idx", "uuid", "name",
                                    "mem_total_bytes"], "rows": devices},
            "host_samples": {"columns": ["seq", "node_id", "ts_ms", "mem_total_bytes",
                                         "mem_available_bytes"], "rows": host},
            "fs_samples": {"columns": ["seq", "node_id", "ts_ms", "mount", "used_bytes",
                                       "total_bytes"], "rows": fs},
            "gpu_samples": {"columns": ["seq", "device_id", "ts_ms", "util_pct",
                                        "mem_used_bytes", "pcie_rx_bps", "pcie_tx_bps"],
                            "rows": gpu}}}).encode()


def test_long_session_files(wd):
    """A session's files written as they are rendered, not held whole: 8 nodes of 8 GPUs
    (a row each 200 ms), a 100 ms session over a minute of their rows (files of several
    MiB, past the 1 MiB a writer holds at most).  The file the stop writes is the very bytes `jobscope
    export --format gswarm` writes to stdout, to -o and over HTTP; the JSON and CSV
    exports are the same to stdout and to -o.  A stop whose file cannot be written says
    so (not "Data saved"), and the session is still in the store; an export whose
    output fills up exits 1 and says why."""
    sdir = wd.join("sessions")
    os.makedirs(sdir)
    head = Head(wd, extra=["--session-dir", sdir])
    gs = GswarmClient(head.url)
    try:
        r = gs.ok("POST", "/profiling/start", {"name": "long", "interval_ms": 100})
        eq(r["success"], True, "started")
        start = sql(head.db, "SELECT start_ms FROM sessions WHERE name = 'long'")[0][0]
        # a minute of every node's rows before now, and the session moved back over them
        for k in range(8):
            seq, body = _node_batch(k, start - 61000, 310, 200)
            req = urllib.request.Request(head.url + "/api/v1/ingest", data=body,
                                         method="POST",
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=60) as resp:
                eq(json.loads(resp.read())["acked_seq"], seq, "node %d's batch held" % k)
        store_exec(head.db, "UPDATE sessions SET start_ms = ? WHERE name = 'long'",
                   start - 60000)
        r = gs.ok("POST", "/profiling/stop", {"name": "long"})
        eq((r["success"], r["message"]),
           (True, "Profiling stopped. Data saved to %s/long.json" % sdir), "stopped")
        with open(os.path.join(sdir, "long.json"), "rb") as f:
            data = f.read()
        check(len(data) > 2 * 1048576, "a file of several MiB: %d bytes" % len(data))
        doc = json.loads(data)
        s = sql(head.db, "SELECT start_ms, end_ms FROM sessions WHERE name = 'long'")[0]
        eq(len(doc["frames"]), (s[1] - s[0]) // 100, "a frame each 100 ms of the session")
        eq(doc["frames"][-1]["frame_id"], len(doc["frames"]), "the last frame's id")
        check(all(len(fr["gpu_id"]) == 64 for fr in doc["frames"]), "64 GPUs in each frame")
        eq(sorted(doc["summary_by_client"]), ["long-%02d" % k for k in range(8)], "clients")
        # the same bytes from the store, from the head, to stdout and to a file
        for args in (("--db", head.db), ("--head", head.url)):
            r = subprocess.run([JOBSCOPE, "export", "--session", "long", "--format",
                                "gswarm"] + list(args), capture_output=True, timeout=120)
            eq(r.returncode, 0, r.stderr)
            check(r.stdout == data, "export %s to stdout: the stop's file" % args[0])
        out = wd.join("long.gswarm.json")
        r = jobscope("export", "--db", head.db, "--session", "long", "--format", "gswarm",
                     "-o", out, timeout=120)
        eq(r.returncode, 0, r.stderr)
        with open(out, "rb") as f:
            check(f.read() == data, "export -o: the stop's file")
        check(not os.path.exists(out + ".tmp"), "no temporary file left")
        for fmt in ("json", "csv"):
            r = subprocess.run([JOBSCOPE, "export", "--db", head.db, "--session", "long",
                                "--format", fmt], capture_output=True, timeout=120)
            eq(r.returncode, 0, r.stderr)
            check(len(r.stdout) > 1048576, "%s: past the 1 MiB held" % fmt)
            r2 = jobscope("export", "--db", head.db, "--session", "long", "--format", fmt,
                          "-o", wd.join("long." + fmt), timeout=120)
            eq(r2.returncode, 0, r2.stderr)
            with open(wd.join("long." + fmt), "rb") as f:
                check(f.read() == r.stdout, "%s: -o and stdout the same bytes" % fmt)
        with open(wd.join("long.json"), "rb") as f:
            eq(json.load(f)["session_frames"], len(doc["frames"]), "the JSON export reads")

        # an output that fills up: exit 1, said, for the file and for stdout
        r = jobscope("export", "--db", head.db, "--session", "long", "--format", "gswarm",
                     "-o", "/dev/full", timeout=120)
        eq(r.returncode, 1, "a full output")
        check("No space left on device" in r.stderr, r.stderr)
        with open("/dev/full", "w") as full:
            r = subprocess.run([JOBSCOPE, "export", "--db", head.db, "--session", "long"],
                               stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
        eq(r.returncode, 1, "stdout full")
        check("No space left on device" in r.stderr, r.stderr)

        # a file that cannot be written: the stop says so, the session is kept
        os.makedirs(os.path.join(sdir, "blocked.json.tmp"))
        eq(gs.ok("POST", "/profiling/start", {"name": "blocked"})["success"], True, "started")
        r = gs.ok("POST", "/profiling/stop", {"name": "blocked"})
        eq(r["success"], True, "the session stopped")
        check("could not be saved to %s/blocked.json" % sdir in r["message"] and
              "Data saved" not in r["message"], r["message"])
        eq(r["stopped"], 1, "one stopped")
        check(not os.path.exists(os.path.join(sdir, "blocked.json")), "no file")
        r = jobscope("export", "--db", head.db, "--session", "blocked", "--format", "gswarm")
        eq(r.returncode, 0, "the session is in the store: " + r.stderr)
    finally:
        head.kill(15)


def test_session_dir_must_be_writable(wd):
    r = jobscope("head", "--db", head_db(wd.join("h.db")), "--listen", "127.0.0.1:0",
                 "--session-dir", wd.join("nope"))
    eq(r.returncode, 2, "a setup error")
    check("--session-dir" in r.stderr, r.stderr)


run_tests(globals())
