"""The agent against a real Slurm (slurm-wlm + munge, one private node on loopback).

Two batch jobs burn a known amount of CPU and touch a known amount of memory
under CPU and memory reservations; the agent must attribute their processes to
the right job ids (from their cgroups), with the reservation, and measure
CPU, CPU efficiency and memory peak within 10% of what the jobs measured of
themselves.
"""
import os
import re
import sys
import tempfile

from harness import helper, jobscope, run_tests, near, check, eq, wait_for
from agent_harness import Agent, sql, job_row
from slurm_cluster import SlurmCluster, SlurmUnavailable

MiB = 1 << 20
EPILOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "slurm",
                      "epilog.sh")

# The script measures itself: wall time, and the CPU of every child it
# reaped (the shell's `times`, second line: children's user and system).
SCRIPT = """#!/bin/bash
start=$(date +%s.%N)
{busy} --seconds {seconds} --threads 1 > /dev/null &
{memtouch} --mib {mib} --hold {seconds} > /dev/null &
wait
end=$(date +%s.%N)
echo "wall $start $end"
times
"""


def parse_times(text):
    """bash `times`: '0m0.001s 0m0.002s' (shell) then the children's line."""
    lines = [l for l in text.splitlines() if re.match(r"^\d+m[\d.]+s \d+m[\d.]+s$", l)]
    def secs(t):
        m, s = re.match(r"(\d+)m([\d.]+)s", t).groups()
        return int(m) * 60 + float(s)
    user, system = lines[1].split()
    return secs(user) + secs(system)


def wall(text):
    m = re.search(r"^wall ([\d.]+) ([\d.]+)$", text, re.M)
    return float(m.group(2)) - float(m.group(1))


def report(db, key):
    import json
    r = jobscope("report", "--db", db, "--job", key, "--format", "json")
    eq(r.returncode, 0, "report --job %s: %s" % (key, r.stderr))
    return json.loads(r.stdout)


def test_real_slurm_jobs(wd):
    tmp = tempfile.mkdtemp(prefix="jobscope-slurm-")
    # deploy/slurm/epilog.sh as the cluster's Epilog, pointed at this agent's store
    epilog = os.path.join(tmp, "epilog.sh")
    with open(epilog, "w") as f:
        f.write("#!/bin/sh\nexport JOBSCOPE=%s JOBSCOPE_AGENT_DB=%s\nexec %s\n"
                % (os.environ["JOBSCOPE"], wd.join("agent.db"), EPILOG))
    os.chmod(epilog, 0o755)
    cluster = SlurmCluster(tmp, extra_conf="Epilog=%s\n" % epilog)
    try:
        cluster.start()
    except SlurmUnavailable as e:
        print("SKIP test_real_slurm_jobs: Slurm cannot start here: %s" % e)
        return
    agent = None
    try:
        agent = Agent(wd, interval="250ms")
        jobs = {}
        for cpus, mem, seconds, mib in ((2, 400, 4, 200), (1, 320, 3, 192)):
            script = SCRIPT.format(busy=helper("busy"), memtouch=helper("memtouch"),
                                   seconds=seconds, mib=mib)
            jid = cluster.sbatch(script, "--cpus-per-task=%d" % cpus, "--mem=%dM" % mem)
            jobs[jid] = (cpus, mem, seconds, mib)
        for jid in jobs:
            eq(cluster.wait_job(jid, timeout=90), "COMPLETED", "job %d state" % jid)

        for jid, (cpus, mem, seconds, mib) in jobs.items():
            out = cluster.output(jid)
            truth_cpu = parse_times(out)
            truth_wall = wall(out)
            wait_for(lambda: (job_row(agent.db, "slurm", str(jid)) or [0, 0, None])[2],
                     timeout=20, what="the agent to see job %d end" % jid)
            row = job_row(agent.db, "slurm", str(jid))
            eq(row[3], float(cpus), "job %d reserved CPUs" % jid)
            eq(row[4], mem * MiB, "job %d reserved memory" % jid)
            eq(row[5], "slurm_env", "job %d reservation source" % jid)
            cg = sql(agent.db, "SELECT cgroup FROM jobs WHERE id = ?", row[0])[0][0]
            check(cg and re.search(r"/slurm_[^/]+/uid_0/job_%d$" % jid, cg),
                  "job %d's cgroup is the job level: %r" % (jid, cg))
            # every process the job ran is the job's
            comms = {c for (c,) in sql(agent.db, "SELECT comm FROM procs WHERE job_id = ?",
                                       row[0])}
            check({"js-busy", "js-memtouch"} <= comms, "job %d processes: %r" % (jid, comms))
            rep = report(agent.db, "slurm:%d" % jid)
            res = rep["reservation"]
            near(rep["cpu"]["cpu_seconds"], truth_cpu, 0.10, "job %d CPU seconds" % jid)
            # efficiency over the script's own wall time, as the truth
            truth_eff = 100.0 * truth_cpu / (cpus * truth_wall)
            near(res["cpu_efficiency_pct"], truth_eff, 0.10, "job %d CPU efficiency" % jid)
            near(res["memory_peak_bytes"], mib * MiB, 0.10, "job %d memory peak" % jid)
            near(res["memory_efficiency_pct"], 100.0 * mib / mem, 0.10,
                 "job %d memory efficiency" % jid)
            check(res["cgroup_memory_peak_bytes"] is None or
                  res["cgroup_memory_peak_bytes"] >= mib * MiB * 0.9,
                  "cgroup peak %r" % res["cgroup_memory_peak_bytes"])
            # the epilog appended the job's report to its output file
            check("jobscope job slurm:%d" % jid in out and "Reserved" in out,
                  "job %d's output ends with its report: %r" % (jid, out[-600:]))
            print("job %d: cpu %.2fs (truth %.2fs), eff %.1f%% (truth %.1f%%), peak %.0f MiB"
                  % (jid, rep["cpu"]["cpu_seconds"], truth_cpu, res["cpu_efficiency_pct"],
                     truth_eff, res["memory_peak_bytes"] / MiB))
    finally:
        if agent:
            agent.stop()
        cluster.stop()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    run_tests(globals())
