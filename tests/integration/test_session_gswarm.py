"""`jobscope export --format gswarm`: the file gswarm-profiler's head writes
when a run stops, which gswarm's `gsprof stat` (stat.py) reads.

  - the golden files (tests/fixtures/gswarm, written by the unit test
    test_session_gswarm from rows it put through the store API) are what
    Python's json.dumps(indent=2) writes for the same object, byte for byte;
    stat.py's reading of them works; their values are those the unit test's
    rows give (worked out here by hand);
  - a real head and three agents (node-a: two fake GPUs, GPU 1's utilization
    and PCIe NOT_SUPPORTED; node-b: no GPU; node-c: not in the session), a
    session at 200 ms and requests recorded at the head: `export --db` and
    `export --head` write the same bytes, every frame holds node-a's two GPUs
    and nothing of node-c, every value is the one this test reads from the
    head's store by gswarm's rules, and the requests in the window are in
    request_time_info in the order they came.
"""
import datetime
import json
import os
import subprocess

from harness import jobscope, run_tests, check, eq, wait_for

from head_harness import Head, start_agent, stop_agent, held, sql, store_exists, store_exec

FAKES = os.environ.get("FAKES", "")
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "gswarm")
SCENARIO = """driver 535.104.05
device 0 uuid=GPU-00000000-0000-0000-0000-000000000000 name="NVIDIA A100" bus=00000000:07:00.0 mem_total=85899345920 power_limit=400000 nvlinks=0
device 1 uuid=GPU-11111111-1111-1111-1111-111111111111 name="NVIDIA A100" bus=00000000:0F:00.0 mem_total=85899345920 power_limit=400000 nvlinks=0
unsupported 1 util
unsupported 1 pcie
at 0 0 util=60 mem_used=12884901888 power=200000 pcie_rx_kbps=1000 pcie_tx_kbps=500
at 0 1 util=10 mem_used=1073741824 power=80000
"""
GPU_KEYS = ("gpu_util", "gpu_memory", "dram_bandwidth", "dram_bandwidth_rx", "dram_bandwidth_tx")


def stat_reads(doc):
    """What gswarm's stat.py does with the file (lines 13-24): the GPU count
    from the first frame, then float() of three lists for every frame."""
    frames = doc["frames"]
    num_gpus = len(frames[0]["gpu_id"])
    series = {k: [[] for _ in range(num_gpus)] for k in ("gpu_util", "gpu_memory",
                                                         "dram_bandwidth")}
    for frame in frames:
        for i in range(num_gpus):
            for k in series:
                series[k][i].append(float(frame[k][i]))
    return num_gpus, series


def no_null(x, where="file"):
    check(x is not None, "a null in " + where)
    if isinstance(x, dict):
        for k, v in x.items():
            no_null(v, "%s.%s" % (where, k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            no_null(v, "%s[%d]" % (where, i))


def check_shape(data, what):
    """The checks that hold for any export: Python's own layout, stat.py's
    reading, one GPU list in every frame, strings where gswarm has strings."""
    text = data.decode("ascii")  # ensure_ascii: nothing else
    doc = json.loads(text)
    eq(json.dumps(doc, indent=2), text, "%s laid out as json.dumps(indent=2)" % what)
    eq(list(doc), ["frames", "summary_by_device", "summary_by_client", "request_time_info"],
       "%s: its keys" % what)
    no_null(doc, what)
    frames = doc["frames"]
    for n, f in enumerate(frames, 1):
        eq(list(f), ["frame_id", "time", "gpu_id", "gpu_util", "gpu_memory", "dram_util",
                     "disk_util", "dram_bandwidth", "dram_bandwidth_rx", "dram_bandwidth_tx",
                     "gpu_bandwidth"], "%s frame %d: its keys" % (what, n))
        eq(f["frame_id"], n, "%s frame %d: frame_id" % (what, n))
        eq(datetime.datetime.fromisoformat(f["time"]).isoformat(), f["time"],
           "%s frame %d: a naive isoformat() time" % (what, n))
        eq(f["gpu_id"], frames[0]["gpu_id"], "%s frame %d: the GPU list" % (what, n))
        for k in GPU_KEYS:
            eq(len(f[k]), len(f["gpu_id"]), "%s frame %d: %s per GPU" % (what, n, k))
            check(all(isinstance(v, str) for v in f[k]), "%s frame %d: %s strings" % (what, n, k))
        for i in range(len(f["gpu_id"])):
            rx, tx = f["dram_bandwidth_rx"][i], f["dram_bandwidth_tx"][i]
            eq(f["dram_bandwidth"][i], str(float(rx) + float(tx)),
               "%s frame %d GPU %d: dram_bandwidth as gswarm sums it" % (what, n, i))
            for k in ("gpu_util", "gpu_memory", "dram_bandwidth_rx", "dram_bandwidth_tx"):
                eq(f[k][i], "%.2f" % float(f[k][i]), "%s frame %d: %s %%.2f" % (what, n, k))
        eq(len(f["dram_util"]), len(f["disk_util"]), "%s frame %d: dram and disk" % (what, n))
        eq(f["gpu_bandwidth"], [], "%s frame %d: gpu_bandwidth" % (what, n))
    if frames:
        num_gpus, series = stat_reads(doc)
        eq(num_gpus, len(frames[0]["gpu_id"]), what + ": stat.py's GPU count")
        eq(len(series["gpu_util"][0]) if num_gpus else len(frames), len(frames),
           what + ": stat.py's points")
        eq(list(doc["summary_by_device"]), frames[0]["gpu_id"], what + ": summary_by_device")
    for dev, s in doc["summary_by_device"].items():
        eq(list(s), ["avg_gpu_util", "avg_gpu_memory"], "%s: %s's summary" % (what, dev))
    for node, s in doc["summary_by_client"].items():
        eq(list(s), ["avg_dram_util", "avg_disk_util"], "%s: %s's summary" % (what, node))
    for app, reqs in doc["request_time_info"].items():
        for r in reqs:
            eq(list(r), ["queue_time", "processing_time", "other_times"], what + ": a request")
            check(isinstance(r["queue_time"], float) and isinstance(r["processing_time"], float),
                  what + ": request times are floats")
            check(all(isinstance(v, float) for v in r["other_times"].values()),
                  what + ": other_times are floats")
    return doc


def test_golden_files(wd):
    docs = {}
    for name in ("busy", "whole", "empty"):
        with open(os.path.join(GOLDEN, name + ".json"), "rb") as f:
            docs[name] = check_shape(f.read(), name + ".json")
    busy = docs["busy"]
    a100 = "NVIDIA A100-SXM4-80GB"
    gamma = "gamma:0:Tesla \u00c4\"x\" \U0001f680"
    eq(len(busy["frames"]), 5, "busy: 5 s at 1 s a frame")
    eq([f["time"] for f in busy["frames"]],
       ["2023-11-14T22:13:2%d.250000" % k for k in range(1, 6)], "busy: frame times (TZ=UTC)")
    eq(busy["frames"][0]["gpu_id"], ["alpha:0:" + a100, "alpha:1:" + a100, gamma],
       "busy: GPUs by node then index; beta has none; old is not in the window")
    # alpha 0 at T0 + k s: util 90 - 10k %, memory (40 + k)/2 GiB of 80 (nvitop rounds
    # to 0.1 %), PCIe rx 1234567 + 1024k B/s, tx 333333 B/s: swapped, in KiB/s
    eq([f["gpu_util"][0] for f in busy["frames"]], ["0.80", "0.70", "0.60", "0.50", "0.40"],
       "busy: alpha 0's utilization, a fraction")
    eq([f["gpu_memory"][0] for f in busy["frames"]],
       ["%.2f" % (round(100 * (40 + k) / 2 / 80, 1) / 100) for k in range(1, 6)],
       "busy: alpha 0's memory fraction")
    eq([f["dram_bandwidth_rx"][0] for f in busy["frames"]], ["325.52"] * 5,
       "busy: dram_bandwidth_rx is the PCIe tx")
    eq([f["dram_bandwidth_tx"][0] for f in busy["frames"]],
       ["%.2f" % ((1234567 + 1024 * k) / 1024) for k in range(1, 6)],
       "busy: dram_bandwidth_tx is the PCIe rx")
    # alpha 1: utilization NOT_SUPPORTED, PCIe too: 0.00 as gswarm's client writes
    eq({(f["gpu_util"][1], f["gpu_memory"][1], f["dram_bandwidth"][1]) for f in busy["frames"]},
       {("0.00", "0.10", "0.0")}, "busy: alpha 1")
    # gamma's last row is at T0 + 2.1 s: frame 5 (T0 + 5.25 s) is past 3 intervals
    eq([f["gpu_util"][2] for f in busy["frames"]], ["0.50"] * 4 + ["0.00"],
       "busy: gamma, then its agent gone")
    eq([f["dram_bandwidth"][2] for f in busy["frames"]], ["3.0"] * 4 + ["0.0"],
       "busy: gamma's bandwidth (1 + 2 KiB/s)")
    # dram/disk: alpha and beta (gamma has no filesystem row: in neither list)
    eq([f["dram_util"] for f in busy["frames"]],
       [["%.2f" % round(100 * (4 * 2**30 + k * 100 * 2**20) / (16 * 2**30), 1),
         "%.2f" % round(100 * (k + 1) * 123456789 / (8 * 2**30), 1)] for k in range(1, 6)],
       "busy: dram_util, percent")
    eq([f["disk_util"] for f in busy["frames"]],
       [["%.2f" % (40 + k), "33.30"] for k in range(1, 6)], "busy: disk_util, percent")
    eq(busy["summary_by_device"]["alpha:0:" + a100], {"avg_gpu_util": "0.60",
                                                     "avg_gpu_memory": "0.27"},
       "busy: alpha 0's averages")
    eq(busy["summary_by_device"][gamma]["avg_gpu_util"], "0.50",
       "busy: gamma's average over the frames it had a reading")
    eq(list(busy["summary_by_client"]), ["alpha", "beta"], "busy: summary_by_client")
    eq(busy["request_time_info"], {
        "serve": [
            {"queue_time": 0.1, "processing_time": 1.25,
             "other_times": {"tokenize": 0.01, "decode": 2.0}},
            {"queue_time": 0.0, "processing_time": 1 / 3, "other_times": {}},
            {"queue_time": 1e16, "processing_time": 123456.789,
             "other_times": {"x": 3.0, "y": 2.5}}],
        "batch-\u00fc": [
            {"queue_time": 1e-05, "processing_time": 12345678901234567890.0,
             "other_times": {}},
            {"queue_time": 1e17, "processing_time": 0.0001, "other_times": {}}]},
        "busy: request_time_info, in the window, by first arrival")
    eq(docs["whole"]["frames"][0]["time"], "2023-11-14T22:13:21",
       "whole: a whole second has no fraction, as isoformat() writes it")
    eq(list(docs["whole"]["request_time_info"]), ["early", "serve", "batch-\u00fc"],
       "whole: apps by their first request")
    eq(docs["empty"], {"frames": [], "summary_by_device": {}, "summary_by_client": {},
                       "request_time_info": {}}, "empty")


def expected_frames(db, start_ms, end_ms, period_ms, iv_ms, node):
    """gswarm's frames for node's GPUs, from the head's store: each GPU's
    latest row at or before the frame time, 0.00 when none is 3 intervals fresh.
    And for each frame, whether every GPU had a fresh row."""
    devs = sql(db, "SELECT d.id, d.idx, d.name, d.mem_total_bytes FROM devices d"
               " JOIN nodes n ON n.id = d.node_id WHERE n.hostname = ? ORDER BY d.idx", node)
    out, all_fresh = [], []
    t = start_ms + period_ms
    while t <= end_ms:
        f = {k: [] for k in ("gpu_id",) + GPU_KEYS}
        frame_fresh = True
        for dev_id, idx, name, total in devs:
            row = sql(db, "SELECT ts_ms, util_pct, mem_used_bytes, pcie_rx_bps, pcie_tx_bps"
                      " FROM gpu_samples WHERE device_id = ? AND ts_ms <= ?"
                      " ORDER BY ts_ms DESC, seq DESC LIMIT 1", dev_id, t)
            fresh = row and t - row[0][0] <= 3 * iv_ms
            frame_fresh = frame_fresh and fresh
            _, util, used, rx, tx = row[0] if fresh else (0, None, None, None, None)
            f["gpu_id"].append("%s:%d:%s" % (node, idx, name))
            f["gpu_util"].append("%.2f" % (util / 100 if util is not None else 0))
            f["gpu_memory"].append("%.2f" % (round(100 * used / total, 1) / 100
                                             if used is not None else 0))
            f["dram_bandwidth_rx"].append("%.2f" % (tx / 1024 if tx is not None else 0))
            f["dram_bandwidth_tx"].append("%.2f" % (rx / 1024 if rx is not None else 0))
            f["dram_bandwidth"].append(str(float(f["dram_bandwidth_rx"][-1]) +
                                           float(f["dram_bandwidth_tx"][-1])))
        f["time"] = datetime.datetime.fromtimestamp(t // 1000).replace(
            microsecond=t % 1000 * 1000).isoformat()
        out.append(f)
        all_fresh.append(bool(frame_fresh))
        t += period_ms
    return out, all_fresh


def test_live_head(wd):
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    scn = wd.join("gpu.scn")
    with open(scn, "w") as f:
        f.write(SCENARIO)
    head = Head(wd)
    agents = []
    saved = dict(os.environ)
    try:
        os.environ.update({"JOBSCOPE_NVML_LIBRARY": os.path.join(FAKES, "libnvidia-ml.so.1"),
                           "FAKE_GPU_SCENARIO": scn})
        agents.append(start_agent(wd, head, "node-a"))
        os.environ.clear()
        os.environ.update(saved)  # the suite's: no GPU library that loads
        agents.append(start_agent(wd, head, "node-b"))
        agents.append(start_agent(wd, head, "node-c"))
        wait_for(lambda: store_exists(head.db) and
                 len(sql(head.db, "SELECT * FROM agents")) == 3, timeout=20,
                 what="three agents streaming")
        r = jobscope("session", "start", "g1", "--interval", "200ms", "--nodes",
                     "node-a,node-b", "--head", head.url)
        eq(r.returncode, 0, "session start: " + r.stderr)
        # ten of node-a's ticks at 200 ms in the window, each with both GPUs' rows
        start = sql(head.db, "SELECT start_ms FROM sessions WHERE name = 'g1'")[0][0]
        adb = agents[0][1]
        wait_for(lambda: sql(adb, "SELECT count(*) FROM host_samples h WHERE h.ts_ms > ? AND"
                                  " (SELECT count(*) FROM gpu_samples g"
                                  " WHERE g.ts_ms = h.ts_ms) = 2", start)[0][0] >= 10,
                 timeout=20, what="ten ticks of node-a in the session")
        r = jobscope("session", "stop", "g1", "--head", head.url)
        eq(r.returncode, 0, "session stop: " + r.stderr)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        for proc, _, _, errf in agents:
            eq(stop_agent(proc, errf), 0, "agent exit")
    wait_for(lambda: all(held(head.db, a[1]) for a in agents), timeout=30,
             what="every row at the head")
    start_ms, end_ms = sql(head.db, "SELECT start_ms, end_ms FROM sessions WHERE name = 'g1'")[0]
    # requests as the head records them (gswarm's POST /profiling/record): one
    # before the window, three in it (two apps), one after
    for ts, app, q, p, other in ((start_ms - 1, "before", 1.0, 1.0, None),
                                 (start_ms + 10, "infer", 0.5, 2.0, '{"prefill": 0.25}'),
                                 (start_ms + 20, "train", 0.125, 7.0, None),
                                 (start_ms + 30, "infer", 0.75, 3.5, '{"prefill": "x"}'),
                                 (end_ms + 1, "after", 1.0, 1.0, None)):
        store_exec(head.db, "INSERT INTO requests (ts_ms, app, queue_s, processing_s, other)"
                   " VALUES (?, ?, ?, ?, ?)", ts, app, q, p, other)

    outs = {}
    for src in (["--db", head.db], ["--head", head.url]):
        out = wd.join("g1-%s.json" % src[0][2:])
        r = jobscope("export", "--session", "g1", "--format", "gswarm", *src, "-o", out)
        eq(r.returncode, 0, "export %s: %s" % (src[0], r.stderr))
        outs[src[0]] = open(out, "rb").read()
    eq(outs["--head"], outs["--db"], "export --head writes what export --db writes")
    doc = check_shape(outs["--db"], "g1")
    frames = doc["frames"]
    eq(len(frames), (end_ms - start_ms) // 200, "g1: a frame every 200 ms of the window")
    want, fresh = expected_frames(head.db, start_ms, end_ms, 200, 200, "node-a")
    for n, (got, exp) in enumerate(zip(frames, want), 1):
        for k in exp:
            eq(got[k], exp[k], "g1 frame %d: %s" % (n, k))
    # the scenario's values in the last frame that had fresh rows of both GPUs (an
    # agent that a busy machine held up for 3 intervals leaves a frame without)
    check(any(fresh), "a frame with fresh rows of both GPUs: %r" % fresh)
    last = [f for f, ok in zip(frames, fresh) if ok][-1]
    eq(last["gpu_id"], ["node-a:0:NVIDIA A100", "node-a:1:NVIDIA A100"],
       "g1: node-a's GPUs; node-b has none, node-c is not in the session")
    eq(last["gpu_util"], ["0.60", "0.00"], "g1: GPU 1's utilization is NOT_SUPPORTED")
    eq(last["dram_bandwidth_rx"], ["500.00", "0.00"], "g1: nvitop's tx as rx, KiB/s")
    eq(last["dram_bandwidth"], ["1500.0", "0.0"], "g1: rx + tx")
    eq(doc["summary_by_device"]["node-a:0:NVIDIA A100"],
       {"avg_gpu_util": "0.60", "avg_gpu_memory": "0.15"}, "g1: GPU 0's averages")
    fs = sql(head.db, "SELECT count(*) FROM fs_samples")[0][0]
    if fs == 0:  # agents that send no root filesystem figures: no dram/disk pair
        check(all(f["dram_util"] == [] for f in frames), "g1: no fs rows, no dram_util")
        eq(doc["summary_by_client"], {}, "g1: summary_by_client without fs rows")
    else:
        check(set(doc["summary_by_client"]) <= {"node-a", "node-b"},
              "g1: summary_by_client has only the session's nodes")
    eq(doc["request_time_info"], {
        "infer": [{"queue_time": 0.5, "processing_time": 2.0, "other_times": {"prefill": 0.25}},
                  {"queue_time": 0.75, "processing_time": 3.5, "other_times": {}}],
        "train": [{"queue_time": 0.125, "processing_time": 7.0, "other_times": {}}]},
        "g1: the window's requests, as they came")
    r = jobscope("export", "--session", "g1", "--format", "gswarmx", "--db", head.db)
    eq(r.returncode, 2, "a bad --format")
    check("json, csv or gswarm" in r.stderr, "the message names the formats: " + r.stderr)
    head.kill()


run_tests(globals())
