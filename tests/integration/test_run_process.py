"""The launched command's life: exit codes, signals, timeouts, forks, stdio."""
import json
import os
import re
import signal
import subprocess
import time

from harness import (JOBSCOPE, run, helper, jobscope, run_tests, wait_for, near, check, eq,
                     scaled)


def test_true(wd):
    r = run(wd, ["true"])
    eq(r.rc, 0, "exit code")
    run_ = r.report["run"]
    eq(run_["exit_code"], 0, "exit_code")
    eq(run_["signal"], None, "signal")
    eq(run_["timed_out"], False, "timed_out")
    check(r.report["sampler"]["samples"] >= 2, "a sample at start and one at exit")
    check(r.report["cpu"]["cpu_seconds"] is not None, "cpu_seconds known")
    eq(r.report["run"]["command"], "true", "command")


def test_exit_codes(wd):
    for code in (0, 1, 3, 42, 255):
        r = run(wd, ["sh", "-c", "exit %d" % code])
        eq(r.rc, code, "jobscope's exit code for exit %d" % code)
        eq(r.report["run"]["exit_code"], code, "report exit_code")


def test_killed_by_signal(wd):
    r = run(wd, ["sh", "-c", "kill -USR1 $$"])
    eq(r.rc, 128 + signal.SIGUSR1, "status for SIGUSR1")
    eq(r.report["run"]["signal"], int(signal.SIGUSR1), "signal")
    eq(r.report["run"]["exit_code"], None, "exit_code is null when killed")
    eq(r.report["run"]["status"], 128 + signal.SIGUSR1, "status")


def test_command_not_found(wd):
    p = jobscope("run", "--db", wd.join("s.db"), "--", "/no/such/program", "x")
    eq(p.returncode, 127, "exit code")
    check("cannot run '/no/such/program'" in p.stderr, "message: %r" % p.stderr)
    check("No such file" in p.stderr, "reason in message")
    p = jobscope("run", "--db", wd.join("s.db"), "--", "no-such-command-jobscope")
    eq(p.returncode, 127, "exit code via PATH")


def test_command_not_executable(wd):
    path = wd.join("script")
    with open(path, "w") as f:
        f.write("#!/bin/sh\necho hi\n")
    os.chmod(path, 0o644)
    p = jobscope("run", "--db", wd.join("s.db"), "--", path)
    eq(p.returncode, 126, "exit code")
    check("Permission denied" in p.stderr, "message: %r" % p.stderr)


def test_timeout(wd):
    start = time.monotonic()
    r = run(wd, [helper("busy"), "--sleep", "30"], opts=["--timeout", "1s"])
    elapsed = time.monotonic() - start
    eq(r.rc, 128 + signal.SIGTERM, "status after SIGTERM")
    check(elapsed < scaled(10), "stopped in time (%.1fs)" % elapsed)
    eq(r.report["run"]["timed_out"], True, "timed_out")
    kinds = [e["kind"] for e in r.report["events"]]
    check("timeout" in kinds, "timeout event in %r" % kinds)
    # not before the timeout, no later than this test saw the run end, and the
    # SIGTERM's effect (a sleeper dies at once) well within half a second
    duration = r.report["run"]["duration_s"]
    check(1.0 - 0.01 <= duration <= min(elapsed, 1.0 + scaled(0.5)) + 0.01,
          "duration_s %r: the 1 s timeout, this test's %.3f s" % (duration, elapsed))


def test_timeout_kill_after(wd):
    # a command that ignores SIGTERM gets SIGKILL after --kill-after
    r = run(wd, ["sh", "-c", "trap '' TERM; %s --sleep 30" % helper("busy")],
            opts=["--timeout", "500ms", "--kill-after", "500ms"])
    eq(r.rc, 128 + signal.SIGKILL, "status after SIGKILL")
    eq(r.report["run"]["timed_out"], True, "timed_out")
    # SIGTERM at 0.5 s, ignored; SIGKILL 0.5 s later
    duration = r.report["run"]["duration_s"]
    check(1.0 - 0.01 <= duration < scaled(5), "duration %r" % duration)
    check(any(e["kind"] == "timeout" and "SIGKILL" in e["message"] for e in r.report["events"]),
          "the timeout event says SIGKILL was sent")


def test_double_fork_grandchild_counted(wd):
    gc_report = wd.join("gc.json")
    r = run(wd, [helper("doublefork"), "--seconds", "1.5", "--report", gc_report])
    eq(r.rc, 0, "exit code")
    with open(gc_report) as f:
        gc = json.load(f)
    gc_pid = r.helper_json()["grandchild_pid"]
    procs = {p["pid"]: p for p in r.report["processes"]}
    check(gc_pid in procs, "grandchild %d listed in %r" % (gc_pid, sorted(procs)))
    # a process's own CPU is /proc's: user and system time each in whole clock ticks
    # (10 ms), each rounded down; the grandchild's getrusage is exact
    ours, its = procs[gc_pid]["cpu_seconds"], gc["grandchild_cpu_seconds"]
    check(abs(ours - its) <= 0.10 * its + 0.02,
          "grandchild cpu %r, its own getrusage %r (10%% and two clock ticks)" % (ours, its))
    check(r.report["cpu"]["cpu_seconds"] >= gc["grandchild_cpu_seconds"] * 0.95,
          "the run's CPU includes the grandchild's")
    check(r.report["run"]["duration_s"] >= 1.4, "the run waited for the grandchild")


def test_no_wait(wd):
    # the grandchild spins for 20 s and writes its report at its end: the report's
    # absence when the run is over proves the run did not wait, however loaded the
    # machine; the grandchild is stopped then
    gc_report = wd.join("gc.json")
    r = run(wd, [helper("doublefork"), "--seconds", "20", "--report", gc_report],
            opts=["--no-wait"])
    gc_pid = r.helper_json()["grandchild_pid"] if r.rc == 0 else None
    try:
        eq(r.rc, 0, "exit code")
        check(not os.path.exists(gc_report), "the run waited for the grandchild")
        check(r.report["run"]["duration_s"] < 20, "did not wait: %r"
              % r.report["run"]["duration_s"])
    finally:
        if gc_pid:
            try:
                os.kill(gc_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def shell_times_s(stdout):
    """sh's `times`: its own CPU seconds plus its reaped children's (user and system)."""
    m = re.findall(r"(\d+)m([\d.]+)s (\d+)m([\d.]+)s", stdout)
    check(len(m) == 2, "times output in %r" % stdout)
    return sum(int(a) * 60 + float(b) + int(c) * 60 + float(d) for a, b, c, d in m)


def test_spawn_storm(wd):
    # 1,500 processes (500 chains of 3) exiting between two reads of their files
    r = run(wd, ["sh", "-c", "%s --count 500 --depth 2; times" % helper("spawnstorm")],
            opts=["--interval", "50ms"])
    eq(r.rc, 0, "exit code")
    check(len(r.report["processes"]) >= 50, "processes seen: %d" % len(r.report["processes"]))
    # none of their CPU is lost: the kernel's count (sh's `times`, its own and its
    # children's, each figure cut to 10 ms) is the run's
    truth = shell_times_s(r.stdout)
    got = r.report["cpu"]["cpu_seconds"]
    check(truth - 0.005 <= got <= truth + 0.045,
          "cpu_seconds %r, the kernel's count of the storm %r" % (got, truth))
    eq(r.report["sampler"]["lost_samples"], 0, "lost_samples")


def test_stdio_passthrough(wd):
    p = subprocess.run([JOBSCOPE, "run", "--db", wd.join("s.db"), "--report", "none", "--",
                        "sh", "-c", "cat; echo err >&2"],
                       input="hello through\n", capture_output=True, text=True,
                       timeout=scaled(60))
    eq(p.returncode, 0, "exit code")
    eq(p.stdout, "hello through\n", "stdout untouched")
    eq(p.stderr, "err\n", "stderr untouched (no report)")


def test_text_report_on_stderr(wd):
    p = subprocess.run([JOBSCOPE, "run", "--db", wd.join("s.db"), "--name", "demo", "--",
                        "sh", "-c", "echo out"], capture_output=True, text=True,
                       timeout=scaled(60))
    eq(p.stdout, "out\n", "stdout is the command's alone")
    check('jobscope run 1 "demo": sh -c echo out' in p.stderr, "report header: %r" % p.stderr)
    for word in ("CPU", "Memory", "I/O", "Processes", "Sampler", "jobscope report 1"):
        check(word in p.stderr, "%s in the text report" % word)


def test_run_id_in_environment(wd):
    r = run(wd, ["sh", "-c", "echo \"{\\\"id\\\": $JOBSCOPE_RUN_ID}\""])
    eq(r.helper_json()["id"], r.report["run"]["id"], "JOBSCOPE_RUN_ID")


def default_signals():
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)


def test_signals_forwarded(wd):
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        ready = wd.join("ready-%d" % sig)
        script = "trap 'echo got; exit 7' %s; touch %s; while :; do sleep 0.05; done" % (
            sig.name[3:], ready)
        # a runner started under nohup, or in the background, passes SIGHUP or SIGINT on
        # ignored, and an ignored signal can be neither trapped by sh nor read by jobscope:
        # the test sets the defaults back
        proc = subprocess.Popen([JOBSCOPE, "run", "--db", wd.join("s.db"), "--report", "none",
                                 "--", "sh", "-c", script], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True,
                                preexec_fn=default_signals)
        wait_for(lambda: os.path.exists(ready), what="the command to start")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=scaled(30))
        eq(proc.returncode, 7, "%s reached the command (stderr %r)" % (sig.name, err))
        eq(out, "got\n", "the command's trap ran")


if __name__ == "__main__":
    run_tests(globals())
