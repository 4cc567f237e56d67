"""CUDA tables on a cluster: js-cuda-app -> hook -> agent -> head, exact, no loss.

A real agent (--cuda-socket) streams to a real head.  js-cuda-app processes
run as Slurm jobs (SLURM_JOB_ID in their environment, as attribution by
environment works here) with the hook's two variables, CUDA_INJECTION64_PATH
and JOBSCOPE_CUDA_SOCKET, and the fake libcupti.  Without a session that
asks, a process is told "off": the head holds its row, state off, and no
tables.  With `jobscope session start --cuda`, the head holds every count,
total, minimum, maximum and spread the scenario made, under the job of the
process's pid; the head killed in the middle of a run (the second half of
the program's work, its exit and its final snapshot come while it is away)
and started again: still exact, the same rows as the agent's.  After the
session stops, a new process is told "off" again.
"""
import json
import os
import signal
import subprocess

from harness import jobscope, run_tests, check, eq, scaled, wait_for
from agent_harness import Agent, env_with, proc_state
from head_harness import Head, start_agent, stop_agent, caught_up, sql, store_exists
from test_cuda import MAIN, APP, CUPTI, HOOK, main_expect, check_rows, check_json, scenario

# MAIN's work without its init, ctx and exit lines
BODY = "\n".join(line for line in MAIN.splitlines()
                 if line and line not in ("init", "ctx") and not line.startswith("exit"))

# app() holds each process until the agent saw it; it lives a while after (its life
# scaled as a deadline is): test_cuda_always sees it connected meanwhile
OFF_APP = "init\nctx\nsleep ms=%d\n%s\nexit code=0\n" % (scaled(1500), BODY)
# the test stops the process during the long sleep, once the agent holds the first
# half, and kills the head: the second half comes while it is away
SPLIT_APP = "init\nctx\n%s\nsleep ms=%d\n%s\nsleep ms=600\nexit code=0\n" % (
    BODY, scaled(3000), BODY)


def session(head, *args):
    r = jobscope("session", *args, "--head", head.url)
    eq(r.returncode, 0, "jobscope session %s: %s" % (" ".join(args), r.stdout + r.stderr))
    return r.stdout


def app(wd, sock, job_id, text, name, db):
    """js-cuda-app as job job_id, once the agent (its store db) saw its pid in the job:
    a shell that stops itself until the agent's scans saw it, then execs the program
    under the same pid.  (The agent stores a process's tables under the job it saw
    its pid in; one that ended before any scan saw it has none, and on a busy
    machine a scan may come late.)"""
    env = env_with(SLURM_JOB_ID=job_id, CUDA_INJECTION64_PATH=HOOK,
                   JOBSCOPE_CUDA_SOCKET=sock, JOBSCOPE_CUPTI_LIBRARY=CUPTI)
    p = subprocess.Popen(["sh", "-c", 'kill -STOP $$; exec "$0" "$@"', APP,
                          scenario(wd, text, name)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    def seen():
        try:
            return sql(db, "SELECT 1 FROM jobs WHERE scheduler = 'slurm' AND job_id = ?",
                       str(job_id))
        except Exception:  # noqa: BLE001 - a store still being created
            return None
    try:
        wait_for(lambda: proc_state(p.pid) == "T", what="the job's shell stopped")
        wait_for(seen, timeout=20, what="the agent to see job %s" % job_id)
    finally:
        os.kill(p.pid, signal.SIGCONT)
    return p


def finish(p):
    _, err = p.communicate(timeout=60)
    eq(p.returncode, 0, "js-cuda-app exit: %s" % err.decode(errors="replace"))


def cuda_proc(db, job_id, pid):
    """(state, final, contexts, dropped) of the process's row under the Slurm job, or None."""
    try:
        r = sql(db, "SELECT c.state, c.final, c.contexts, c.dropped FROM cuda_procs c"
                    " JOIN jobs j ON j.id = c.job_id WHERE j.scheduler = 'slurm'"
                    " AND j.job_id = ? AND c.pid = ?", str(job_id), pid)
    except Exception:  # noqa: BLE001 - a store still being created
        return None
    return tuple(r[0]) if r else None


def cuda_stats(db, job_id, pid):
    """{(kind, name): (count, total_ns, min_ns, max_ns, m2_ns2, bytes, ...)} of one process."""
    rows = sql(db, "SELECT s.kind, s.name, s.count, s.total_ns, s.min_ns, s.max_ns, s.m2_ns2,"
                   " s.bytes, s.min_bytes, s.max_bytes, s.m2_bytes2 FROM cuda_stats s"
                   " JOIN jobs j ON j.id = s.job_id WHERE j.scheduler = 'slurm'"
                   " AND j.job_id = ? AND s.pid = ?", str(job_id), pid)
    return {(r[0], r[1]): tuple(r[2:]) for r in rows}


def log_has(path, text):
    with open(path) as f:
        return text in f.read()


def test_cuda_tables_through_the_head(wd):
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    sock = wd.join("cuda.sock")
    head = Head(wd)
    port = head.port
    agent, adb, alog, errf = start_agent(wd, head, "node-c", extra=["--cuda-socket", sock])
    try:
        wait_for(lambda: store_exists(head.db) and
                 len(sql(head.db, "SELECT * FROM agents")) == 1, timeout=60,
                 what="the agent streaming")
        eq(oct(os.stat(sock).st_mode & 0o777), "0o666", "the socket: any user's jobs connect")
        check(log_has(alog, "recording while a session asks"), "the agent's CUDA line")

        # no session: told off, a row that says so, no tables
        p = app(wd, sock, 7100, OFF_APP, "off", adb)
        finish(p)
        wait_for(lambda: cuda_proc(head.db, 7100, p.pid) is not None, timeout=20,
                 what="the off process's row at the head")
        state = cuda_proc(head.db, 7100, p.pid)
        eq(state[0], "off", "state without a session: %r" % (state,))
        eq(cuda_stats(head.db, 7100, p.pid), {}, "no tables without a session")
        eq(cuda_stats(adb, 7100, p.pid), {}, "none in the agent's store either")
        off_pid = p.pid

        # a session asks: recorded, streamed, exact
        out = session(head, "start", "gpu-prof", "--cuda")
        check("started" in out.lower(), "session start: %r" % out)
        listing = jobscope("session", "list", "--head", head.url).stdout
        check(any("gpu-prof" in line and " yes " in line for line in listing.splitlines()),
              "the listing says CUDA: %r" % listing)
        wait_for(lambda: log_has(alog, "CUDA tables on for a profiling session"), timeout=15,
                 what="the agent told")
        p = app(wd, sock, 7101, SPLIT_APP, "split", adb)
        half = main_expect(1)

        def first_half(db):
            got = cuda_stats(db, 7101, p.pid)
            return sorted(got) == sorted(half.dur) and got[("api", "cuMemAlloc_v2")][0] == 1
        # stopped in its long sleep once the agent holds the first half: nothing more
        # comes until the head is away, however slowly the first half reaches it
        wait_for(lambda: first_half(adb), timeout=20, what="the first half at the agent")
        os.kill(p.pid, signal.SIGSTOP)
        try:
            wait_for(lambda: first_half(head.db), timeout=20, what="the first half at the head")
            check_rows(cuda_stats(head.db, 7101, p.pid), half, "the first half at the head")
            check_rows(cuda_stats(adb, 7101, p.pid), half,
                       "only the first half (the process stopped in its long sleep)")
            # the head away while the program does the rest, exits and sends its last
            # snapshot
            eq(head.kill(), -9, "head killed")
        finally:
            os.kill(p.pid, signal.SIGCONT)
        finish(p)
        wait_for(lambda: (cuda_proc(adb, 7101, p.pid) or (None, 0))[1] == 1, timeout=20,
                 what="the final snapshot in the agent's store")
        # a few ticks more while the head is away
        ticks = sql(adb, "SELECT count(*) FROM host_samples")[0][0]
        wait_for(lambda: sql(adb, "SELECT count(*) FROM host_samples")[0][0] >= ticks + 5,
                 what="five more ticks in the agent's store")
        head = Head(wd, port=port, name="head2")
        # the agent samples on: the head holds what it had once the final snapshot was in
        current = caught_up(head.db, adb)
        wait_for(lambda: current() and (cuda_proc(head.db, 7101, p.pid) or (None, 0))[1] == 1,
                 timeout=30, what="the head current again")
        whole = main_expect(2)
        check_rows(cuda_stats(head.db, 7101, p.pid), whole, "at the head after its restart")
        check_rows(cuda_stats(adb, 7101, p.pid), whole, "in the agent's store")
        eq(cuda_stats(head.db, 7101, p.pid), cuda_stats(adb, 7101, p.pid),
           "the head's rows are the agent's")
        eq(cuda_proc(head.db, 7101, p.pid), ("ok", 1, 1, 0), "state, final, contexts, dropped")
        eq(cuda_proc(head.db, 7100, off_pid)[0], "off", "the off process is still off")
        # the job's report from the head, over HTTP: its tables exact
        rep = jobscope("report", "--head", head.url, "--job", "slurm:7101", "--format", "json")
        eq(rep.returncode, 0, "jobscope report --head: %s" % rep.stderr)
        cuda = json.loads(rep.stdout)["cuda"]
        check_json(cuda["job"], whole, "the head's report, job")
        eq([q["pid"] for q in cuda["processes"]], [p.pid], "the head's report, processes")
        text = jobscope("report", "--head", head.url, "--job", "slurm:7101").stdout
        check("CUDA Kernel Statistics:" in text, "the text report has the tables:\n" + text)

        # the session stops: a new process is told off
        session(head, "stop", "gpu-prof")
        wait_for(lambda: log_has(alog, "CUDA tables off"), timeout=15, what="the agent told off")
        p = app(wd, sock, 7102, OFF_APP, "after", adb)
        finish(p)
        wait_for(lambda: cuda_proc(head.db, 7102, p.pid) is not None, timeout=20,
                 what="the process after the session at the head")
        eq(cuda_proc(head.db, 7102, p.pid)[0], "off", "off after the session")
        eq(cuda_stats(head.db, 7102, p.pid), {}, "no tables after the session")
    finally:
        eq(stop_agent(agent, errf), 0, "agent exit")
    eq(head.kill(15), 0, "head exit")


def test_cuda_always(wd):
    """--cuda-always: recorded without a head or a session, in the agent's store."""
    sock = wd.join("cuda.sock")
    a = Agent(wd, interval="100ms", extra=["--cuda-socket", sock, "--cuda-always"])
    try:
        eq(a.json("/api/v1/node")["cuda"],
           {"socket": sock, "recording": True, "connected": 0, "seen": 0}, "node's cuda")
        p = app(wd, sock, 7200, OFF_APP, "always", a.db)
        wait_for(lambda: a.json("/api/v1/node")["cuda"]["connected"] == 1, timeout=10,
                 what="the process connected")
        finish(p)
        wait_for(lambda: (cuda_proc(a.db, 7200, p.pid) or (None, 0))[1] == 1, timeout=20,
                 what="the final snapshot")
        check_rows(cuda_stats(a.db, 7200, p.pid), main_expect(1), "--cuda-always")
        eq(cuda_proc(a.db, 7200, p.pid), ("ok", 1, 1, 0), "state, final, contexts, dropped")
        wait_for(lambda: a.json("/api/v1/node")["cuda"]["connected"] == 0, timeout=10,
                 what="the process gone")
        eq(a.json("/api/v1/node")["cuda"]["seen"], 1, "one process said hello")
    finally:
        eq(a.stop(), 0, "agent exit")


def test_off_leaves_cupti_free(wd):
    """A process told "off" never took CUPTI: its own profiler subscribes after init."""
    sock = wd.join("cuda.sock")
    a = Agent(wd, interval="100ms", extra=["--cuda-socket", sock])
    try:
        # other_profiler after init: cuptiSubscribe in the program itself, as
        # torch.profiler's Kineto does; js-cuda-app exits 1 if it is refused
        p = app(wd, sock, 7300, "init\nctx\nsleep ms=%d\nother_profiler\nexit code=0\n"
                % scaled(800), "free", a.db)
        finish(p)
        wait_for(lambda: cuda_proc(a.db, 7300, p.pid) is not None, timeout=20,
                 what="the process's row")
        eq(cuda_proc(a.db, 7300, p.pid)[0], "off", "state")
    finally:
        eq(a.stop(), 0, "agent exit")


def test_bad_socket_path(wd):
    """A --cuda-socket that cannot be made: the agent says so and exits 2 (setup)."""
    r = jobscope("agent", "--db", wd.join("b.db"), "--listen", "none", "--exit-after", "1s",
                 "--cuda-socket", wd.join("no/such/dir/cuda.sock"))
    eq(r.returncode, 2, "exit status: %s" % r.stderr)
    check("cannot listen on" in r.stderr, "the message: %r" % r.stderr)


if __name__ == "__main__":
    run_tests(globals())
