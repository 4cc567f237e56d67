"""The agent against a real Slurm (slurm-wlm + munge, one private node on loopback).

Two batch jobs burn CPU and touch a known amount of memory under CPU and
memory reservations; the agent must attribute their processes to the right job
ids (from their cgroups), with the reservation, and measure CPU and memory peak
within 10% of what the jobs measured of themselves (the shell's `times`,
memtouch's getrusage), and CPU efficiency as that CPU over the job's time,
which holds the script's own wall time.
"""
import json
import os
import re
import secrets
import sys
import tempfile
import time

from harness import helper, jobscope, run_tests, near, check, eq, wait_for
from agent_harness import Agent, sql, job_row
from slurm_cluster import SlurmCluster, SlurmUnavailable

MiB = 1 << 20
EPILOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "slurm",
                      "epilog.sh")

# The script measures itself: wall time, its own CPU and that of every child
# it reaped (the shell's `times`: its own user and system, then its children's),
# and memtouch prints its own getrusage (maxrss_bytes).
SCRIPT = """#!/bin/bash
start=$(date +%s.%N)
{busy} --seconds {seconds} --threads 1 > /dev/null &
{memtouch} --mib {mib} --hold {seconds} &
wait
end=$(date +%s.%N)
echo "wall $start $end"
times
"""


def parse_times(text):
    """bash `times`: '0m0.001s 0m0.002s' (the shell's own) then the children's line:
    the CPU seconds of both."""
    lines = [l for l in text.splitlines() if re.match(r"^\d+m[\d.]+s \d+m[\d.]+s$", l)]
    def secs(t):
        m, s = re.match(r"(\d+)m([\d.]+)s", t).groups()
        return int(m) * 60 + float(s)
    return sum(secs(t) for line in lines[:2] for t in line.split())


def wall(text):
    """(start, end) of the script's own clock, epoch seconds."""
    m = re.search(r"^wall ([\d.]+) ([\d.]+)$", text, re.M)
    return float(m.group(1)), float(m.group(2))


def memtouch_rss(text):
    """memtouch's maxrss_bytes, from its JSON line in the job's output."""
    for line in text.splitlines():
        if line.startswith("{") and "maxrss_bytes" in line:
            return json.loads(line)["maxrss_bytes"]
    raise AssertionError("no memtouch JSON line in %r" % text[-600:])


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
    # a node name of its own: job ids start at 1 in every cluster, and the job cgroups
    # (/slurm_<node>/uid_0/job_<id>) are the machine's
    cluster = SlurmCluster(tmp, nodename="js" + secrets.token_hex(3),
                           extra_conf="Epilog=%s\n" % epilog)
    try:
        cluster.start()
    except SlurmUnavailable as e:
        print("SKIP test_real_slurm_jobs: Slurm cannot start here: %s" % e)
        return
    agent = None
    try:
        agent = Agent(wd, interval="100ms")
        jobs = {}
        submitted = time.time()
        for cpus, mem, seconds, mib in ((2, 400, 3, 200), (1, 320, 2, 192)):
            script = SCRIPT.format(busy=helper("busy"), memtouch=helper("memtouch"),
                                   seconds=seconds, mib=mib)
            jid = cluster.sbatch(script, "--cpus-per-task=%d" % cpus, "--mem=%dM" % mem)
            jobs[jid] = (cpus, mem, seconds, mib)
        for jid in jobs:
            eq(cluster.wait_job(jid, timeout=90), "COMPLETED", "job %d state" % jid)

        for jid, (cpus, mem, seconds, mib) in jobs.items():
            out = cluster.output(jid)
            truth_cpu = parse_times(out)
            script_start, script_end = wall(out)
            truth_rss = memtouch_rss(out)
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
            cpu = rep["cpu"]["cpu_seconds"]
            # the script's CPU and slurmstepd's few ms, which no `times` holds
            check(abs(cpu - truth_cpu) <= 0.10 * truth_cpu + 0.05,
                  "job %d CPU seconds %r, the script's `times` %.3f" % (jid, cpu, truth_cpu))
            # efficiency: that CPU over the job's time, from its first process's start
            # (after the submission, before the script's first date) to the tick that
            # saw its last one gone (after the script's last date): a time that holds
            # the script's own, and more (slurmstepd before and after it, the epilog)
            start_ms, end_ms = rep["run"]["start_ms"], rep["run"]["end_ms"]
            check(submitted * 1000 - 20 <= start_ms <= script_start * 1000 + 20,
                  "job %d starts at %d, between its submission at %.0f and the script's"
                  " start at %.0f" % (jid, start_ms, submitted * 1000, script_start * 1000))
            check(end_ms >= script_end * 1000 - 20, "job %d ends at %d, after the script's end"
                  " at %.0f" % (jid, end_ms, script_end * 1000))
            eff = res["cpu_efficiency_pct"]
            check(abs(eff - 100.0 * cpu / (cpus * (end_ms - start_ms) / 1000.0)) <= 0.06,
                  "job %d CPU efficiency %r: its CPU %r over %d cores and %d ms"
                  % (jid, eff, cpu, cpus, end_ms - start_ms))
            truth_eff = 100.0 * truth_cpu / (cpus * (script_end - script_start))
            check(eff <= truth_eff * 1.10 + 1.0, "job %d CPU efficiency %r, at most the"
                  " script's CPU over its own wall time (%.1f%%)" % (jid, eff, truth_eff))
            near(res["memory_peak_bytes"], truth_rss, 0.10, "job %d memory peak" % jid)
            near(res["memory_efficiency_pct"], 100.0 * truth_rss / (mem * MiB), 0.10,
                 "job %d memory efficiency" % jid)
            check(res["cgroup_memory_peak_bytes"] is None or
                  res["cgroup_memory_peak_bytes"] >= truth_rss * 0.9,
                  "cgroup peak %r" % res["cgroup_memory_peak_bytes"])
            # the epilog appended the job's report to its output file
            check("jobscope job slurm:%d" % jid in out and "Reserved" in out,
                  "job %d's output ends with its report: %r" % (jid, out[-600:]))
            print("job %d: cpu %.2fs (truth %.2fs), eff %.1f%% (over the script's wall %.1f%%),"
                  " %d ms (script %.0f ms), peak %.0f MiB (truth %.0f MiB)"
                  % (jid, cpu, truth_cpu, eff, truth_eff, end_ms - start_ms,
                     (script_end - script_start) * 1000, res["memory_peak_bytes"] / MiB,
                     truth_rss / MiB))
    finally:
        if agent:
            agent.stop()
        cluster.stop()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    run_tests(globals())
