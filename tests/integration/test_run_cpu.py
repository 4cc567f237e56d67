"""CPU accounting on real workloads, with the issue's tolerances.

Every figure is compared with an independent measurement of the same run: the
helper's own getrusage and wall clock (its JSON line) and the wall clock this
test reads around `jobscope run`, never with what the workload aimed at (one
busy thread is one core only on an idle machine)."""
import json
import re
import time

from harness import run, helper, run_tests, near, check, eq, machine_cpus


def timed_run(wd, cmd, **kw):
    """(Result, the wall seconds this test saw `jobscope run` take)."""
    start = time.monotonic()
    r = run(wd, cmd, **kw)
    return r, time.monotonic() - start


def check_duration(duration_s, at_least, outer_wall_s, what):
    # the run lasts at least as long as its command did by its own clock, and no
    # longer than `jobscope run` as this test timed it (both in ms, hence the 0.01)
    check(at_least - 0.01 <= duration_s <= outer_wall_s + 0.01,
          "%s: duration_s %r not within [%.3f, %.3f]" % (what, duration_s, at_least,
                                                          outer_wall_s))


def check_cpu_of_busy(r, outer_wall_s):
    """cpu_seconds against js-busy's getrusage; cores_avg is those over the run's duration."""
    truth = r.helper_json()
    cpu = r.report["cpu"]
    near(cpu["cpu_seconds"], truth["cpu_seconds"], 0.05, "cpu_seconds vs the child's getrusage")
    check_duration(r.report["run"]["duration_s"], truth["wall_seconds"], outer_wall_s, "js-busy")
    near(cpu["cores_avg"], truth["cpu_seconds"] / r.report["run"]["duration_s"], 0.05,
         "cores_avg vs the child's CPU seconds over the run's duration")
    check(cpu["cores_peak"] >= cpu["cores_avg"] - 1e-9, "peak >= avg")
    return truth, cpu


def test_one_busy_child(wd):
    r, wall = timed_run(wd, [helper("busy"), "--threads", "1", "--seconds", "1"])
    eq(r.rc, 0, "exit code")
    truth, cpu = check_cpu_of_busy(r, wall)
    # a single thread never runs on more than one core; the 25 % are the sampler's
    # own timing (a window's clock and CPU reads are not one instant)
    check(cpu["cores_peak"] <= 1.25, "peak of one thread %r" % cpu["cores_peak"])
    eq(cpu["host_cores"] >= 1, True, "host_cores")
    # the report gives efficiency_pct to 0.1 and cores_avg to 0.001 (0.05 % of 2 cores)
    want = 100.0 * cpu["cores_avg"] / cpu["cores_allowed"]
    check(abs(cpu["efficiency_pct"] - want) <= 0.05 + 0.05 / cpu["cores_allowed"] + 1e-9,
          "efficiency_pct = cores_avg / cores_allowed: %r, %r" % (cpu["efficiency_pct"], want))


def test_two_busy_threads(wd):
    # samples every 100 ms: several see the workers, which live 1 s
    r, wall = timed_run(wd, [helper("busy"), "--threads", "2", "--seconds", "1"],
                        opts=["--interval", "100ms"])
    eq(r.rc, 0, "exit code")
    # the CPU of both workers is the process's (getrusage RUSAGE_SELF counts every thread)
    check_cpu_of_busy(r, wall)
    procs = r.report["processes"]
    eq(len(procs), 1, "one process")
    eq(procs[0]["threads_peak"], 3, "threads (main + 2 workers)")


def test_sleeping_child(wd):
    r, wall = timed_run(wd, [helper("busy"), "--sleep", "1"])
    eq(r.rc, 0, "exit code")
    cpu = r.report["cpu"]
    # a sleeper's CPU is its start and exit, a few ms whatever else the machine runs
    check(abs(cpu["cpu_seconds"] - r.helper_json()["cpu_seconds"]) <= 0.005,
          "cpu_seconds %r vs the child's getrusage %r" % (cpu["cpu_seconds"],
                                                          r.helper_json()["cpu_seconds"]))
    check(cpu["cores_avg"] < 0.05, "cores_avg %r < 0.05" % cpu["cores_avg"])
    # nanosleep sleeps at least the time asked for
    check_duration(r.report["run"]["duration_s"], 1.0, wall, "js-busy --sleep 1")


def test_cpu_of_a_shell_pipeline(wd):
    # the busy children are reaped by sh between ticks; their CPU must be there
    # sh's `times` at the end: its own CPU and its reaped children's, as the kernel
    # charged them (their exits included: under ASan each one's leak check)
    r = run(wd, ["sh", "-c", "%s --seconds 0.7; %s --seconds 0.7; times >&2"
                 % (helper("busy"), helper("busy"))], opts=["--interval", "1s"])
    eq(r.rc, 0, "exit code")
    truth = sum(json.loads(line)["cpu_seconds"] for line in r.stdout.splitlines()
                if line.startswith("{"))
    times = [float(m) * 60 + float(sec) for m, sec in
             re.findall(r"\b(\d+)m([0-9.]+)s\b", r.stderr)][-4:]
    eq(len(times), 4, "sh's times: %r" % r.stderr[-300:])
    # at least what the helpers counted themselves (before their exits); at most the
    # kernel's account of sh and its children, each of its four figures cut to 10 ms
    got = r.report["cpu"]["cpu_seconds"]
    check(truth - 0.005 <= got <= sum(times) + 0.04,
          "cpu_seconds of reaped grandchildren %r: the helpers' getrusage %r, sh's times %r"
          % (got, truth, times))
    # a child that lives less than one interval and is reaped by sh may be
    # missing from the process list; its CPU is not missing from the total
    comms = sorted(p["comm"] for p in r.report["processes"])
    check("sh" in comms, "the shell is listed: %r" % comms)


def test_sampler_measures_itself(wd):
    # the point is the sampler keeping its interval, an ideal: the run gets the
    # machine's CPUs so that a loaded machine does not make it skip ticks
    with machine_cpus("test_sampler_measures_itself"):
        r = run(wd, [helper("busy"), "--sleep", "1"], opts=["--interval", "100ms"])
    s = r.report["sampler"]
    eq(s["interval_ms"], 100, "interval_ms")
    check(s["samples"] >= 9, "samples %r" % s["samples"])
    check(s["cpu_seconds"] is not None and s["cpu_seconds"] >= 0, "sampler cpu_seconds")
    check(s["cpu_seconds"] < 0.5, "sampler cost %r s" % s["cpu_seconds"])
    eq(s["lost_samples"], 0, "lost_samples")


if __name__ == "__main__":
    run_tests(globals())
