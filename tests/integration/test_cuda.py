"""`jobscope run --cuda`: program -> hook -> jobscope -> store -> report, exact.

js-cuda-app "uses CUDA" through the fake libcuda.so.1 as a scenario says; the
fake driver loads the real hook (build/libjobscope-cuda.so) through
CUDA_INJECTION64_PATH as NVIDIA's does, and the fake libcupti.so delivers one
activity record per scripted operation, through CUPTI's real buffer ABI, with
the scripted durations and sizes.  Every count, total, minimum, maximum and
standard deviation in the store and the reports is checked against the
scenario; so are the kill -9 path, a missing CUPTI, another profiler holding
CUPTI, a program that never initialises CUDA, and a garbage-speaking peer.
"""
import json
import math
import os
import subprocess

from harness import run, helper, jobscope, run_tests, check, eq, wait_for, JOBSCOPE
from agent_harness import sql

FAKES = os.environ.get("FAKES", "")
CUPTI = os.path.join(FAKES, "libcupti.so")
HOOK = os.path.join(os.path.dirname(JOBSCOPE), "libjobscope-cuda.so")
APP = helper("cuda-app")

K_FILL = ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5"
          "ArrayIPcLi1EEEEEviT0_T1_")
K_FILL_NAME = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
               "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
               "at::detail::Array<char*, 1>)")
K_SAXPY = "_Z5saxpyifPKfPf"
K_SAXPY_NAME = "saxpy(int, float, float const*, float*)"
# not a C++ name: kept as it is (a C kernel, extern "C")
K_PLAIN = "relu_kernel"


def cuda_env(**extra):
    env = dict(os.environ)
    env.pop("CUDA_INJECTION64_PATH", None)
    env.update({"JOBSCOPE_CUPTI_LIBRARY": CUPTI, "JOBSCOPE_CUDA_HOOK": HOOK})
    env.update(extra)
    return env


class Expect:
    """The tables a scenario must give: {(kind, name): [durations], sizes}."""

    def __init__(self):
        self.dur = {}
        self.size = {}

    def add(self, kind, name, dur, size=None, times=1):
        for _ in range(times):
            self.dur.setdefault((kind, name), []).append(dur)
            if size is not None:
                self.size.setdefault((kind, name), []).append(size)


def stddev(values):
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def scenario(wd, text, name="scn"):
    path = wd.join(name)
    with open(path, "w") as f:
        f.write(text)
    return path


# One process: 4 API names, 3 kernels (one demangled template, one plain C++
# function, one C name), copies both ways, a memset.
MAIN = """init
ctx
api runtime cudaMalloc_v3020 dur=1200
api runtime cudaMalloc_v3020 dur=2400
api driver cuMemAlloc_v2 dur=700
x 3 kernel name=%s dur=5000 launch=3000
kernel name=%s dur=7000 launch=1000
kernel name=%s dur=100 launch=2000
kernel name=%s dur=300
memcpy kind=HtoD bytes=1048576 dur=100000
memcpy kind=HtoD bytes=2097152 dur=150000
memcpy kind=DtoH bytes=4096 dur=2500
memset bytes=4096 dur=800
exit code=0
""" % (K_FILL, K_SAXPY, K_SAXPY, K_PLAIN)


def main_expect(times=1):
    e = Expect()
    e.add("api", "cudaMalloc", 1200, times=times)
    e.add("api", "cudaMalloc", 2400, times=times)
    e.add("api", "cuMemAlloc_v2", 700, times=times)
    e.add("api", "cudaLaunchKernel", 3000, times=3 * times)
    e.add("api", "cudaLaunchKernel", 1000, times=times)
    e.add("api", "cudaLaunchKernel", 2000, times=times)
    e.add("kernel", K_FILL_NAME, 5000, times=3 * times)
    e.add("kernel", K_SAXPY_NAME, 7000, times=times)
    e.add("kernel", K_SAXPY_NAME, 100, times=times)
    e.add("kernel", K_PLAIN, 300, times=times)
    e.add("memcpy", "[CUDA memcpy HtoD]", 100000, 1048576, times=times)
    e.add("memcpy", "[CUDA memcpy HtoD]", 150000, 2097152, times=times)
    e.add("memcpy", "[CUDA memcpy DtoH]", 2500, 4096, times=times)
    e.add("memset", "[CUDA memset]", 800, 4096, times=times)
    return e


def stored(db, pid=None):
    """{(kind, name): row} of one process (pid) or of every process, from the store."""
    rows = sql(db, "SELECT pid, kind, name, count, total_ns, min_ns, max_ns, m2_ns2, bytes, "
                   "min_bytes, max_bytes, m2_bytes2 FROM cuda_stats WHERE pid > 0")
    out = {}
    for r in rows:
        if pid is None or r[0] == pid:
            out.setdefault(r[0], {})[(r[1], r[2])] = r[3:]
    return out


def check_rows(got, e, what):
    eq(sorted(got), sorted(e.dur), "%s: the names" % what)
    for key, durs in e.dur.items():
        count, total, mn, mx, m2, nbytes, bmin, bmax, bm2 = got[key]
        eq(count, len(durs), "%s %s count" % (what, key))
        eq(total, sum(durs), "%s %s total_ns" % (what, key))
        eq(mn, min(durs), "%s %s min_ns" % (what, key))
        eq(mx, max(durs), "%s %s max_ns" % (what, key))
        check(abs(m2 - stddev(durs) ** 2 * (len(durs) - 1)) < 1e-6 * max(1, m2),
              "%s %s m2 %r" % (what, key, m2))
        sizes = e.size.get(key)
        if sizes:
            eq(nbytes, sum(sizes), "%s %s bytes" % (what, key))
            eq(bmin, min(sizes), "%s %s min_bytes" % (what, key))
            eq(bmax, max(sizes), "%s %s max_bytes" % (what, key))
            check(abs(bm2 - stddev(sizes) ** 2 * (len(sizes) - 1)) < 1e-6 * max(1, bm2),
                  "%s %s m2_bytes %r" % (what, key, bm2))


KEYS = {"api": "api", "kernel": "kernels", "memcpy": "memory", "memset": "memory"}


def check_json(table_set, e, what):
    """A report's JSON tables (job or process) against the scenario's values."""
    got = {}
    for key in ("api", "kernels", "memory"):
        for row in table_set[key]:
            got[(row["kind"], row["name"])] = row
    eq(sorted(got), sorted(e.dur), "%s: the names" % what)
    totals = {}
    for (kind, name), durs in e.dur.items():
        totals[KEYS[kind]] = totals.get(KEYS[kind], 0) + sum(durs)
    for (kind, name), durs in e.dur.items():
        row = got[(kind, name)]
        w = "%s %s %s" % (what, kind, name)
        eq(row["count"], len(durs), w + " count")
        eq(row["total_ns"], sum(durs), w + " total_ns")
        eq(row["min_ns"], min(durs), w + " min_ns")
        eq(row["max_ns"], max(durs), w + " max_ns")
        check(abs(row["avg_ns"] - sum(durs) / len(durs)) < 1e-3, w + " avg_ns %r" % row["avg_ns"])
        check(abs(row["stddev_ns"] - stddev(durs)) < 1e-3, w + " stddev_ns %r" % row["stddev_ns"])
        check(abs(row["time_pct"] - 100.0 * sum(durs) / totals[KEYS[kind]]) < 1e-3,
              w + " time_pct %r" % row["time_pct"])
        sizes = e.size.get((kind, name))
        if sizes:
            eq(row["bytes"], sum(sizes), w + " bytes")
            eq(row["min_bytes"], min(sizes), w + " min_bytes")
            eq(row["max_bytes"], max(sizes), w + " max_bytes")
            check(abs(row["stddev_bytes"] - stddev(sizes)) < 1e-1, w + " stddev_bytes")
            check(abs(row["gb_per_s"] - sum(sizes) / sum(durs)) < 1e-3,
                  w + " gb_per_s %r" % row["gb_per_s"])


def without_wall(cuda):
    """The tables without what depends on when the wall time was read."""
    text = json.dumps(cuda, sort_keys=True)
    cuda = json.loads(text)
    cuda.pop("wall_ns", None)
    for tables in [cuda["job"]] + cuda["processes"]:
        for row in tables["kernels"]:
            row.pop("wall_pct", None)
    return cuda


def procs(db):
    return {r[0]: r[1:] for r in sql(db, "SELECT pid, state, message, contexts, dropped, final "
                                         "FROM cuda_procs")}


def test_tables_exact(wd):
    db = wd.join("s.db")
    r = run(wd, [APP, scenario(wd, MAIN)], db=db, opts=["--cuda"], env=cuda_env())
    eq(r.rc, 0, "exit code: %s" % r.stderr)
    rows = stored(db)
    eq(len(rows), 1, "one CUDA process: %r" % list(rows))
    pid = list(rows)[0]
    check_rows(rows[pid], main_expect(), "pid %d" % pid)
    p = procs(db)
    eq(p[pid][0], "ok", "the process's state")
    eq(p[pid][2], 1, "contexts created")
    eq(p[pid][3], 0, "no record dropped")
    eq(p[pid][4], 1, "the final snapshot (sent at exit) is the stored one")
    eq(p[0][0], "ok", "the run's own note: %r" % (p[0],))
    # the run's own report, and the same tables replayed from the store
    cuda = r.report["cuda"]
    check_json(cuda["job"], main_expect(), "run report, job")
    eq(len(cuda["processes"]), 1, "one process in the report")
    check_json(cuda["processes"][0], main_expect(), "run report, pid")
    eq(cuda["processes"][0]["pid"], pid, "the process's pid")
    eq(cuda["notes"], [], "no notes")
    rep = jobscope("report", "--db", db, "1", "--format", "json")
    eq(rep.returncode, 0, "jobscope report: %s" % rep.stderr)
    eq(without_wall(json.loads(rep.stdout)["cuda"]), without_wall(cuda),
       "jobscope report gives the run's tables")
    text = jobscope("report", "--db", db, "1").stdout
    for line in ("CUDA API Statistics:", "CUDA Kernel Statistics:",
                 "CUDA Memory Operation Statistics (by time):",
                 "CUDA Memory Operation Statistics (by size in MB):",
                 " Time(%)  Total Time (ns)  Num Calls  Average  Minimum  Maximum  StdDev  Name",
                 "    73.6           12,000          5  2,400.0    1,000    3,000   894.4  "
                 "cudaLaunchKernel",
                 "     4.3              700          1    700.0      700      700     0.0  "
                 "cuMemAlloc_v2",
                 "    31.7            7,100          2  3,550.0      100    7,000  4,879.0  "):
        check(line in text, "the text report has %r:\n%s" % (line, text))
    check(K_FILL_NAME in text and K_SAXPY_NAME in text, "demangled names in the text")


def test_two_processes(wd):
    """Two CUDA processes of one run: each its own tables, the job's their merge."""
    db = wd.join("s.db")
    scn = scenario(wd, MAIN)
    cmd = ["sh", "-c", "%s %s & %s %s; wait" % (APP, scn, APP, scn)]
    r = run(wd, cmd, db=db, opts=["--cuda"], env=cuda_env())
    eq(r.rc, 0, "exit code: %s" % r.stderr)
    rows = stored(db)
    eq(len(rows), 2, "two CUDA processes: %r" % list(rows))
    for pid, got in rows.items():
        check_rows(got, main_expect(), "pid %d" % pid)
    cuda = r.report["cuda"]
    check_json(cuda["job"], main_expect(times=2), "the job's tables (both processes merged)")
    eq(sorted(p["pid"] for p in cuda["processes"]), sorted(rows), "both processes reported")
    for p in cuda["processes"]:
        check_json(p, main_expect(), "pid %d" % p["pid"])


def test_kill9_keeps_what_was_sent(wd):
    """A process killed with SIGKILL: everything of its intervals before the kill is stored."""
    db = wd.join("s.db")
    scn = scenario(wd, """init
ctx
x 5 kernel name=%s dur=2000 launch=500
memcpy kind=DtoD bytes=8192 dur=4000
sleep ms=1500
kill9
""" % K_SAXPY)
    r = run(wd, [APP, scn], db=db, opts=["--cuda", "--interval", "200ms"], env=cuda_env())
    eq(r.rc, 128 + 9, "killed by SIGKILL: %s" % r.stderr)
    e = Expect()
    e.add("kernel", K_SAXPY_NAME, 2000, times=5)
    e.add("api", "cudaLaunchKernel", 500, times=5)
    e.add("memcpy", "[CUDA memcpy DtoD]", 4000, 8192)
    rows = stored(db)
    eq(len(rows), 1, "one process")
    pid = list(rows)[0]
    check_rows(rows[pid], e, "killed pid")
    eq(procs(db)[pid][4], 0, "no final snapshot: it was killed")


def test_no_cupti(wd):
    db = wd.join("s.db")
    r = run(wd, [APP, scenario(wd, MAIN)], db=db, opts=["--cuda"],
            env=cuda_env(JOBSCOPE_CUPTI_LIBRARY="/nonexistent/libcupti.so"))
    eq(r.rc, 0, "the program runs on: %s" % r.stderr)
    p = procs(db)
    pids = [pid for pid in p if pid]
    eq(len(pids), 1, "the process said hello: %r" % p)
    eq(p[pids[0]][0], "no_cupti", "state")
    check("/nonexistent/libcupti.so" in p[pids[0]][1], "the note names what was tried: %r"
          % p[pids[0]][1])
    eq(stored(db), {}, "no tables")
    notes = r.report["cuda"]["notes"]
    check(any(n.startswith("pid %d: libcupti not found" % pids[0]) for n in notes),
          "the report says why: %r" % notes)


def test_other_profiler_holds_cupti(wd):
    """A profiler subscribed first (as nsys or ncu would be): the hook backs off."""
    db = wd.join("s.db")
    scn = scenario(wd, "other_profiler\n" + MAIN)
    r = run(wd, [APP, scn], db=db, opts=["--cuda"], env=cuda_env())
    eq(r.rc, 0, "the program runs on: %s" % r.stderr)
    p = procs(db)
    pids = [pid for pid in p if pid]
    eq(len(pids), 1, "one process")
    eq(p[pids[0]][0], "busy", "state")
    check("another profiler" in p[pids[0]][1], "note: %r" % p[pids[0]][1])
    eq(stored(db), {}, "no tables")
    notes = r.report["cuda"]["notes"]
    check(any("pid %d: another profiler holds CUPTI" % pids[0] in n for n in notes),
          "the report says why: %r" % notes)


def test_no_context(wd):
    """CUDA initialised but no context made: nothing to count, and the report says so."""
    db = wd.join("s.db")
    r = run(wd, [APP, scenario(wd, "init\nexit code=0\n")], db=db, opts=["--cuda"],
            env=cuda_env())
    eq(r.rc, 0, "exit code: %s" % r.stderr)
    p = procs(db)
    pids = [pid for pid in p if pid]
    eq(p[pids[0]][0], "ok", "state")
    eq(p[pids[0]][2], 0, "no context")
    notes = r.report["cuda"]["notes"]
    check(any("pid %d" % pids[0] in n and "no CUDA context" in n for n in notes),
          "the report says so: %r" % notes)


def test_injection_already_set(wd):
    """CUDA_INJECTION64_PATH set by someone else (nsys sets it): --cuda backs off."""
    db = wd.join("s.db")
    r = run(wd, ["true"], db=db, opts=["--cuda"],
            env=cuda_env(CUDA_INJECTION64_PATH="/opt/nsys/libToolsInjection64.so"))
    eq(r.rc, 0, "exit code")
    p = procs(db)
    eq(list(p), [0], "only the run's note")
    eq(p[0][0], "busy", "state")
    check("/opt/nsys/libToolsInjection64.so" in p[0][1], "note: %r" % p[0][1])
    check("--cuda: CUDA_INJECTION64_PATH is already set" in r.stderr, "said: %r" % r.stderr)


def test_site_hook_taken_over(wd):
    """CUDA_INJECTION64_PATH already naming our hook (a site's TaskProlog): the run takes over."""
    db = wd.join("s.db")
    r = run(wd, [APP, scenario(wd, MAIN)], db=db, opts=["--cuda"],
            env=cuda_env(CUDA_INJECTION64_PATH="/usr/lib/jobscope/libjobscope-cuda.so",
                         JOBSCOPE_CUDA_SOCKET="/run/jobscope/cuda.sock"))
    eq(r.rc, 0, "exit code: %s" % r.stderr)
    rows = stored(db)
    eq(len(rows), 1, "the run's own socket got the process: %r" % list(rows))
    check_rows(list(rows.values())[0], main_expect(), "the process")
    eq(procs(db)[0][0], "ok", "the run's note")


def test_no_cuda_in_the_run(wd):
    db = wd.join("s.db")
    r = run(wd, ["sh", "-c", "exit 3"], db=db, opts=["--cuda"], env=cuda_env())
    eq(r.rc, 3, "exit code")
    p = procs(db)
    eq(list(p), [0], "only the run's note")
    eq(p[0][0], "off", "state")
    check("no process of the run initialised CUDA" in p[0][1], "note: %r" % p[0][1])
    check(any("no process of the run initialised CUDA" in n for n in r.report["cuda"]["notes"]),
          "the report says so: %r" % r.report["cuda"]["notes"])


def test_dropped_records(wd):
    db = wd.join("s.db")
    run(wd, [APP, scenario(wd, MAIN)], db=db, opts=["--cuda"],
        env=cuda_env(FAKE_CUPTI_DROPPED="5"))
    p = procs(db)
    pids = [pid for pid in p if pid]
    eq(p[pids[0]][3], 5, "records CUPTI dropped")


PEER = """import os, socket, struct, sys, time
def frame(t):
    b = t.encode(); return struct.pack('<I', len(b)) + b
def connect():
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ['JOBSCOPE_CUDA_SOCKET'])
    return s
"""


def peer_script(wd, name, body):
    """A Python peer of the run's socket (frame() and connect() given), run inside CMD."""
    path = wd.join(name)
    with open(path, "w") as f:
        f.write(PEER + body)
    return path


def test_garbage_peer(wd):
    """A peer that breaks the protocol is cut off; the real process's tables are exact."""
    db = wd.join("s.db")
    script = peer_script(wd, "garbage.py", """for payload in [b'\\xff\\xff\\xff\\xff', frame('snap\\t1\\t0\\t0\\t0\\n'),
                frame('hello\\t1\\t1\\tok\\t0\\t\\n') + frame('snap\\tx\\n'),
                frame('hello\\t1\\t1\\tok\\t0\\t\\n') + b'\\x10\\x00\\x00\\x00half']:
    s = connect()
    s.sendall(payload)
    s.close()
""")
    cmd = ["sh", "-c", "python3 %s && exec %s %s" % (script, APP, scenario(wd, MAIN))]
    r = run(wd, cmd, db=db, opts=["--cuda"], env=cuda_env())
    eq(r.rc, 0, "exit code: %s" % r.stderr)
    rows = stored(db)
    eq(len(rows), 1, "only the real process has tables: %r" % list(rows))
    check_rows(list(rows.values())[0], main_expect(), "the real process")
    check("broke the protocol" in r.stderr, "the cut-off peers are reported: %r" % r.stderr)


def test_memory_bound(wd):
    """Peers that send frames and never finish them hold at most 64 MiB: the rest are cut off."""
    db = wd.join("s.db")
    script = peer_script(wd, "flood.py", """socks = []
for i in range(6):  # 6 x 15 MiB of frames of 16 MiB that never end
    s = connect()
    s.sendall(frame('hello\\t1\\t%d\\tok\\t0\\t\\n' % os.getpid()))
    s.sendall(struct.pack('<I', 16 << 20))
    try:
        s.sendall(b'x' * (15 << 20))
    except OSError:
        pass  # cut off
    socks.append(s)
time.sleep(1)
""")
    cmd = ["sh", "-c", "python3 %s & %s %s; wait" % (script, APP, scenario(wd, MAIN))]
    r = run(wd, cmd, db=db, opts=["--cuda"], env=cuda_env())
    eq(r.rc, 0, "exit code: %s" % r.stderr)
    check("MiB of unread frames" in r.stderr, "the cut-off is reported: %r" % r.stderr)
    rows = stored(db)
    eq(len(rows), 1, "the real process's tables: %r" % list(rows))
    check_rows(list(rows.values())[0], main_expect(), "the real process")


def test_receiver_killed(wd):
    """jobscope killed with SIGKILL under the program: the program finishes, unharmed."""
    db = wd.join("s.db")
    marker = wd.join("done")
    scn = scenario(wd, """init
ctx
x 3 kernel name=%s dur=2000 launch=500
sleep ms=2500
x 3 kernel name=%s dur=2000 launch=500
exit code=0
""" % (K_SAXPY, K_SAXPY))
    # snapshots every 100 ms: the first is stored well inside the program's sleep
    proc = subprocess.Popen([JOBSCOPE, "run", "--db", db, "--cuda", "--interval", "100ms",
                             "--report", "none", "--",
                             "sh", "-c", "%s %s && touch %s" % (APP, scn, marker)],
                            env=cuda_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    def first_snapshot():
        try:
            return sql(db, "SELECT count(*) FROM cuda_stats")[0][0] > 0
        except Exception:  # the store is not made yet
            return False

    wait_for(first_snapshot, 10, "the first snapshot stored")
    proc.kill()
    proc.wait()
    check(not os.path.exists(marker), "jobscope was killed under the program, not after it")
    wait_for(lambda: os.path.exists(marker), 15, "the program to finish on its own")


if __name__ == "__main__":
    run_tests(globals())
