"""CPU accounting on real workloads, with the issue's tolerances."""
import json

from harness import run, helper, run_tests, near, check, eq


def test_one_busy_child(wd):
    r = run(wd, [helper("busy"), "--threads", "1", "--seconds", "2"])
    eq(r.rc, 0, "exit code")
    truth = r.helper_json()
    cpu = r.report["cpu"]
    near(cpu["cores_avg"], 1.0, 0.10, "cores_avg")
    near(cpu["cpu_seconds"], truth["cpu_seconds"], 0.05, "cpu_seconds vs the child's getrusage")
    check(cpu["cores_peak"] >= cpu["cores_avg"] - 1e-9, "peak >= avg")
    check(cpu["cores_peak"] <= 1.25, "peak of one thread %r" % cpu["cores_peak"])
    eq(cpu["host_cores"] >= 1, True, "host_cores")
    near(cpu["efficiency_pct"], 100.0 * cpu["cores_avg"] / cpu["cores_allowed"], 0.01,
         "efficiency_pct = cores_avg / cores_allowed")


def test_two_busy_threads(wd):
    r = run(wd, [helper("busy"), "--threads", "2", "--seconds", "2"])
    eq(r.rc, 0, "exit code")
    cpu = r.report["cpu"]
    near(cpu["cores_avg"], 2.0, 0.10, "cores_avg")
    procs = r.report["processes"]
    eq(len(procs), 1, "one process")
    eq(procs[0]["threads_peak"], 3, "threads (main + 2 workers)")


def test_sleeping_child(wd):
    r = run(wd, [helper("busy"), "--sleep", "1.5"])
    eq(r.rc, 0, "exit code")
    cpu = r.report["cpu"]
    check(cpu["cores_avg"] < 0.05, "cores_avg %r < 0.05" % cpu["cores_avg"])
    near(r.report["run"]["duration_s"], 1.5, 0.2, "duration_s")


def test_cpu_of_a_shell_pipeline(wd):
    # the busy children are reaped by sh between ticks; their CPU must be there
    r = run(wd, ["sh", "-c", "%s --seconds 0.7; %s --seconds 0.7" % (helper("busy"), helper("busy"))],
            opts=["--interval", "1s"])
    eq(r.rc, 0, "exit code")
    truth = sum(json.loads(line)["cpu_seconds"] for line in r.stdout.splitlines()
                if line.startswith("{"))
    near(r.report["cpu"]["cpu_seconds"], truth, 0.05, "cpu_seconds of reaped grandchildren")
    # a child that lives less than one interval and is reaped by sh may be
    # missing from the process list; its CPU is not missing from the total
    comms = sorted(p["comm"] for p in r.report["processes"])
    check("sh" in comms, "the shell is listed: %r" % comms)


def test_sampler_measures_itself(wd):
    r = run(wd, [helper("busy"), "--sleep", "1"], opts=["--interval", "100ms"])
    s = r.report["sampler"]
    eq(s["interval_ms"], 100, "interval_ms")
    check(s["samples"] >= 9, "samples %r" % s["samples"])
    check(s["cpu_seconds"] is not None and s["cpu_seconds"] >= 0, "sampler cpu_seconds")
    check(s["cpu_seconds"] < 0.5, "sampler cost %r s" % s["cpu_seconds"])
    eq(s["lost_samples"], 0, "lost_samples")


if __name__ == "__main__":
    run_tests(globals())
