"""A job's GPU energy over its whole life, first and last intervals included.

The reported case: a job alone on a 350 W GPU for 2 s, sampled every 200 ms,
starting to use it between two samples, was given 315 W (the interval in
which it appeared went to nobody).  Each interval's energy is now split by
the process utilization samples the driver returns for that window.

The fake GPU (tests/fakes/scenario.h) draws 0 W but while the job's process
is on it (`power=` of the process: 350 W), from +X to +Y seconds after that
process's own start, and its energy counter is the exact integral: the
device's energy over the job's life is 700 J to the mJ, whatever the phase
of the ticks.  The process lives past its GPU use, so the end of its GPU use
is exact too.
"""
import json
import os
import time

from harness import run, helper, jobscope, run_tests, near, check, eq, wait_for, scaled
from agent_harness import Agent, sql, job_row, env_with, spawn, settle

FAKES = os.environ.get("FAKES", "")
NVML = os.path.join(FAKES, "libnvidia-ml.so.1")
GiB = 1 << 30
JOULES = 350.0 * 2.0


def scenario(wd, gpu_from, gpu_until):
    path = wd.join("gpu.scn")
    with open(path, "w") as f:
        f.write("""driver 535.104.05
device 0 uuid=GPU-00000000-0000-0000-0000-000000000000 name="NVIDIA A100-SXM4-80GB" bus=00000000:07:00.0 mem_total=85899345920 power_limit=400000 nvlinks=0 proc_sample_ms=100
at 0 0 util=90 mem_used=8589934592 power=0
proc 0 pid=file:%s mem=8589934592 sm=90 from=+%s until=+%s power=350000
""" % (wd.join("pid"), gpu_from, gpu_until))
    return {"JOBSCOPE_NVML_LIBRARY": NVML, "JOBSCOPE_ROCM_SMI_LIBRARY": "/nonexistent",
            "FAKE_GPU_SCENARIO": path}


def sleeper(wd, seconds):
    # the command writes its pid where the fake reads the process from; it sleeps
    # (the fake's GPU needs no CPU), at least that long however loaded the machine
    return ["sh", "-c", "echo $$ > %s; exec %s --sleep %s" % (wd.join("pid"), helper("busy"),
                                                             seconds)]


def until_told(wd):
    """A command that writes its pid like sleeper() and lives until the test writes
    a line to the FIFO it returns; then it exits 0."""
    fifo = wd.join("go")
    os.mkfifo(fifo)
    return ["sh", "-c", "echo $$ > %s; read line < %s" % (wd.join("pid"), fifo)], fifo


def tell(fifo):
    """The line until_told()'s command waits for (it must be reading the FIFO)."""
    def opened():
        try:
            return [os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)]  # a list: fd 0 is true
        except OSError:  # ENXIO: no reader yet
            return None
    fd = wait_for(opened, timeout=10, what="the job to read its FIFO")[0]
    try:
        os.write(fd, b"go\n")
    finally:
        os.close(fd)


def test_run_job_alone_whole_life(wd):
    """`jobscope run`: on the GPU from 0.5 s to 2.5 s after its start, 200 ms ticks."""
    env = dict(os.environ)
    env.update(scenario(wd, "0.5", "2.5"))
    db = wd.join("store.db")
    r = run(wd, sleeper(wd, "3"), db=db, opts=["--interval", "200ms"], env=env)
    eq(r.rc, 0, "exit code: %s" % r.stderr)
    g = r.report["gpus"][0]
    near(g["device_energy_j"], JOULES, 0.001, "the device's energy over the run")
    near(g["energy_j"], g["device_energy_j"], 0.01, "the job's share: all of it")
    eq(g["energy_unattributed_j"], 0.0, "nothing unattributed")
    rows = sql(db, "SELECT gpu_energy_mj FROM job_summaries WHERE job_id = ?", r.report["run"]["id"])
    eq(len(rows), 1, "one job summary")
    near(rows[0][0], JOULES * 1000, 0.01, "job summary gpu_energy_mj")
    # the window's samples are stored: the replayed report splits the same way
    p = jobscope("report", "--db", db, "--format", "json", str(r.report["run"]["id"]))
    eq(p.returncode, 0, "report: %s" % p.stderr)
    eq(json.loads(p.stdout)["gpus"], r.report["gpus"], "replayed GPU section")


def test_agent_job_alone_whole_life(wd):
    """The agent: a Slurm job's process on the GPU from its start for 2 s, 200 ms ticks."""
    env = env_with(**scenario(wd, "0", "2"))
    a = Agent(wd, interval="200ms", env=env)
    job = None
    try:
        a.wait_ticks(2)
        time.sleep(0.1)  # not a wait: it puts the job's start half way between two ticks
        # the job lives until told: past its GPU use and the ticks that split it,
        # however long a loaded machine makes them
        cmd, go = until_told(wd)
        job = spawn(cmd, env=env_with(SLURM_JOB_ID=905, SLURM_CPUS_ON_NODE=1))
        lab = ("job_id", "905")

        def energies():
            m = a.metrics()
            dev = [v for (n, l), v in m.items() if n == "jobscope_gpu_energy_joules_total"]
            mine = [v for (n, l), v in m.items()
                    if n == "jobscope_job_gpu_energy_joules_total" and lab in l]
            return dev, mine

        # the GPU use is over (the device's counter is at 700 J) and one more
        # tick has split its last interval; the job's process still runs
        wait_for(lambda: energies()[0] == [JOULES], timeout=20, what="the GPU use to end")
        a.wait_ticks(2)
        check(job.poll() is None, "the job is still live")
        dev, mine = energies()
        eq(len(mine), 1, "the job's energy on its GPU: %r" % mine)
        near(mine[0], JOULES, 0.01, "the job's live energy (/metrics)")
        tell(go)
        rc, out, err = settle(job, timeout=scaled(60))
        eq(rc, 0, "the job: %s" % err)

        def ended():
            row = job_row(a.db, "slurm", "905")
            return row if row and row[2] else None
        row = wait_for(ended, timeout=20, what="the job's end")
        wait_for(lambda: sql(a.db, "SELECT gpu_energy_mj FROM job_summaries WHERE job_id = ?",
                             row[0]), timeout=20, what="the job's summary")
    finally:
        if job is not None and job.poll() is None:
            job.kill()
            job.wait()
        a.stop()
    # the device's energy over the job's life, from the store's readings
    before = sql(a.db, "SELECT max(energy_mj) FROM gpu_samples WHERE ts_ms <= ?", row[1])[0][0]
    after = sql(a.db, "SELECT max(energy_mj) FROM gpu_samples WHERE ts_ms <= ?", row[2])[0][0]
    eq(after - before, JOULES * 1000, "the device's energy over the job's life, mJ")
    got = sql(a.db, "SELECT gpu_energy_mj FROM job_summaries WHERE job_id = ?", row[0])[0][0]
    readings = "job %r; GPU readings (ts_ms, power_mw, energy_mj) %r; processes %r" % (
        row, sql(a.db, "SELECT ts_ms, power_mw, energy_mj FROM gpu_samples"),
        sql(a.db, "SELECT ts_ms, pid, job_id, sm_util_pct FROM gpu_proc_samples"))
    near(got, after - before, 0.01, "job summary gpu_energy_mj (%s)" % readings)
    rep = json.loads(jobscope("report", "--db", a.db, "--job", "slurm:905", "--format",
                              "json").stdout)
    near(rep["gpus"][0]["energy_j"], JOULES, 0.01, "the job report's energy_j")


run_tests(globals())
