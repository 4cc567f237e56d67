"""`jobscope agent --compat jobstats,dcgm` under a real Prometheus: the
queries Princeton's jobstats runs, word for word (jobstats.py:368-395 at
dfc9aa0), give the figures the agent's store holds; dcgm-exporter's series
carry its labels and units, and a GPU two jobs share gives each job its
split, never a copy of the device's value.

The GPUs are the fake NVML library (tests/fakes) on a scenario written
here: job 4242 reserves GPUs 0 and 1 (SLURM_JOB_GPUS=0,1) and uses only
GPU 0; jobs 4243 and 4244 both reserve GPU 2 and use it at SM 30% and 60%.
The minor numbers (4, 5, 6) differ from the indices, as jobstats keys its
GPUs by minor_number.  Prometheus scrapes every second with
evaluation_interval 1s (the subquery trap of the reference: with the 1m
default, jobstats' [Ns:] subqueries come back empty for a short job) and a
target label cluster, as jobstats' Prometheus does.

Without the prometheus binary the test prints "SKIP: ..." and passes.
"""
import json
import os
import subprocess
import time
import urllib.parse

from agent_harness import Agent, sql
from harness import check, eq, helper, http_get, run_tests, slurm_env, stop, tail, wait_for
from prom_harness import PROMETHEUS, PrometheusProcess
from test_agent_prometheus import answer_ms, match_ticks

FAKES = os.environ.get("FAKES", "")
NVML = os.path.join(FAKES, "libnvidia-ml.so.1")
CLUSTER = "tc"
GiB = 1 << 30
MiB = 1 << 20
BUSY_SECONDS = 3

SCENARIO = """driver 580.65.06
device 0 uuid=GPU-0c0c0c0c-1111-2222-3333-444444444444 name="NVIDIA H100 80GB HBM3" bus=00000000:19:00.0 mem_total=85899345920 minor=4
device 1 uuid=GPU-1d1d1d1d-1111-2222-3333-444444444444 name="NVIDIA H100 80GB HBM3" bus=00000000:3B:00.0 mem_total=85899345920 minor=5
device 2 uuid=GPU-2e2e2e2e-1111-2222-3333-444444444444 name="NVIDIA H100 80GB HBM3" bus=00000000:4C:00.0 mem_total=85899345920 minor=6
at 0 0 util=60 mem_util=25 mem_used=2147483648 power=250000 temp=55 sm_clock=1755 mem_clock=2619
at 0 1 util=0 mem_util=0 mem_used=0 power=69000 temp=31 sm_clock=345 mem_clock=2619
at 0 2 util=90 mem_util=40 mem_used=3221225472 power=300000 temp=61 sm_clock=1980 mem_clock=2619
proc 0 pid=file:{a} mem=2147483648 sm=60
proc 2 pid=file:{b} mem=1073741824 sm=30
proc 2 pid=file:{c} mem=2147483648 sm=60
"""


class Prometheus(PrometheusProcess):
    """A private Prometheus scraping the agent each second, as jobstats' does."""

    def __init__(self, wd, target_port):
        super().__init__(wd, "global:\n"
                             "  scrape_interval: 1s\n"
                             "  scrape_timeout: 1s\n"
                             "  evaluation_interval: 1s\n"
                             "scrape_configs:\n"
                             "  - job_name: jobscope\n"
                             "    static_configs:\n"
                             "      - targets: ['127.0.0.1:%d']\n"
                             "        labels: {cluster: %s}\n" % (target_port, CLUSTER))

    def query(self, expr, at_s=None):
        """The result vector of an instant query (at at_s, epoch seconds)."""
        params = {"query": expr}
        if at_s is not None:
            params["time"] = "%.3f" % at_s
        status, _h, body = http_get(self.url + "/api/v1/query?" + urllib.parse.urlencode(params))
        reply = json.loads(body)
        if status != 200 or reply.get("status") != "success":
            raise AssertionError("query %r: %d %s" % (expr, status, body))
        eq(reply["data"]["resultType"], "vector", "result type of %r" % expr)
        return reply["data"]["result"]

    def raw(self, expr, window="120s"):
        """{frozenset(labels): [(ts_ms, value)]} of every scraped sample expr selects."""
        status, _h, body = http_get(self.url + "/api/v1/query?" + urllib.parse.urlencode(
            {"query": "%s[%s]" % (expr, window)}))
        reply = json.loads(body)
        check(status == 200 and reply.get("status") == "success", "query %s: %s" % (expr, body))
        return {frozenset(r["metric"].items()):
                [(round(float(t) * 1000), float(v)) for t, v in r["values"]]
                for r in reply["data"]["result"]}


def jobstats_queries(jobid, diff):
    """jobstats.py's seven queries for one job over its last diff seconds."""
    sel = "{cluster='%s',jobid='%s',step='',task=''}" % (CLUSTER, jobid)
    gsel = "{cluster='%s',jobid='%s'}" % (CLUSTER, jobid)
    return {
        "total_memory": "max_over_time(cgroup_memory_total_bytes%s[%ds])" % (sel, diff),
        "used_memory": "max_over_time(((cgroup_memory_rss_bytes%s+cgroup_memory_shmem_bytes%s)"
                       " or 1*cgroup_memory_rss_bytes%s)[%ds:])" % (sel, sel, sel, diff),
        "total_time": "max_over_time(cgroup_cpu_total_seconds%s[%ds])" % (sel, diff),
        "cpus": "max_over_time(cgroup_cpus%s[%ds])" % (sel, diff),
        "gpu_total_memory": "max_over_time(nvidia_gpu_memory_total_bytes%s[%ds:])" % (gsel, diff),
        "gpu_used_memory": "max_over_time(nvidia_gpu_memory_used_bytes%s[%ds:])" % (gsel, diff),
        "gpu_utilization": "avg_over_time((nvidia_gpu_duty_cycle%s or "
                           "(nvidia_gpu_graphics_util_percent%s * 100))[%ds:])"
                           % (gsel, gsel, diff),
    }


def get_data_out(result):
    """What jobstats' get_data_out keeps of a result (jobstats.py:308-330):
    {node: value} for job series, {node: {minor_number: value}} for GPU ones;
    a GPU series without minor_number would be a scalar there (its crash)."""
    out = {}
    for r in result:
        node = r["metric"]["instance"].split(":")[0]
        v = float(r["value"][1])
        if "minor_number" in r["metric"]:
            out.setdefault(node, {})[r["metric"]["minor_number"]] = v
        else:
            check(node not in out, "two job series for node %s: %r" % (node, result))
            out[node] = v
    return out


def spawn_job(wd, name, jobid, gpus, cpus, mem_mb):
    pid_file = wd.join(name + ".pid")
    env = slurm_env(SLURM_JOB_ID=jobid, SLURM_CPUS_ON_NODE=cpus, SLURM_MEM_PER_NODE=mem_mb,
                    SLURM_JOB_GPUS=gpus)
    # js-busy's own getrusage in NAME.json
    cmd = 'echo $$ > "%s"; "%s" --seconds %d > "%s"; exec "%s" --sleep 120' % (
        pid_file, helper("busy"), BUSY_SECONDS, wd.join(name + ".json"), helper("busy"))
    return subprocess.Popen(["sh", "-c", cmd], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, env=env), pid_file


def busy_phase_over(pid_file):
    """Whether the job's shell (its pid in pid_file) has exec'd js-busy --sleep."""
    try:
        with open(pid_file) as f:
            pid = int(f.read())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return b"--sleep" in f.read().split(b"\0")
    except (OSError, ValueError):
        return False


def energy_by_job(dcgm_energy):
    """{hpc_job: mJ} of GPU 2's DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION series."""
    return {r["metric"].get("hpc_job"): float(r["value"][1]) for r in dcgm_energy
            if r["metric"]["gpu"] == "2"}


def test_jobstats_and_dcgm_through_prometheus(wd):
    if not os.path.exists(PROMETHEUS):
        print("SKIP: %s is not installed (Debian package 'prometheus')" % PROMETHEUS)
        return
    jobs, agent, prom = [], None, None
    pids = [wd.join(n + ".pid") for n in ("a", "b", "c")]
    scenario = wd.join("gpus.scn")
    with open(scenario, "w") as f:
        f.write(SCENARIO.format(a=pids[0], b=pids[1], c=pids[2]))
    env = slurm_env(JOBSCOPE_NVML_LIBRARY=NVML, JOBSCOPE_ROCM_SMI_LIBRARY="/nonexistent",
                    FAKE_GPU_SCENARIO=scenario)
    try:
        agent = Agent(wd, interval="100ms", env=env, extra=("--compat", "jobstats,dcgm"))
        prom = Prometheus(wd, agent.port)
        wait_for(lambda: prom.query('up{job="jobscope"} == 1'), timeout=15,
                 what="Prometheus's first scrape of the agent")
        start = time.time()
        jobs.append(spawn_job(wd, "a", "4242", "0,1", 2, 512)[0])
        jobs.append(spawn_job(wd, "b", "4243", "2", 1, 256)[0])
        jobs.append(spawn_job(wd, "c", "4244", "2", 1, 256)[0])
        # the two jobs sharing GPU 2, both there: the energy each gets from now on
        # is its split of the device's (before, one may have been there alone)
        energy = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
        energy_from = wait_for(lambda: (lambda e: "4243" in e and "4244" in e and e)(
            energy_by_job(prom.query(energy))), timeout=15,
            what="both jobs on GPU 2 in Prometheus")
        # each job's own split of GPU 2 is asked of the scrapes from now on: before, one
        # of them may have been there alone, with the whole device's duty cycle
        both_at = time.time()
        # the busy phase over, and Prometheus holding a scrape of a tick after it: the
        # job's final CPU (it sleeps on), and at least a scrape each second it burned
        wait_for(lambda: all(busy_phase_over(p) for p in pids), timeout=BUSY_SECONDS + 30,
                 what="the jobs' busy phase over")
        over_ms = time.time() * 1000
        wait_for(lambda: (lambda r: len(r) == 1 and (lambda v: len(v) >= BUSY_SECONDS + 2 and
                                                     v[-1][0] > over_ms + 1100)(
            list(r.values())[0]))(prom.raw("cgroup_cpu_total_seconds{jobid='4242'}")),
            timeout=15, what="a scrape of job 4242's CPU after its busy phase")
        end = time.time()
        diff = int(end - start) + 1

        # ---- jobstats, word for word ----
        res = {k: get_data_out(prom.query(q, at_s=end))
               for k, q in jobstats_queries("4242", diff).items()}
        sample_body = agent.get("/metrics")
        raw = {fam: prom.raw("%s{jobid='4242'}" % fam)
               for fam in ("cgroup_cpu_total_seconds", "cgroup_memory_rss_bytes")}
        (_l, durations), = prom.raw('scrape_duration_seconds{job="jobscope"}').items()
        # each series' last scrape within 5 s: a job's split of the shared GPU is left
        # out of a tick whose driver call had no new process sample (NVML samples every
        # period; the agent ticks at 100 ms), and Prometheus marks it stale until the
        # next; an instant query there would miss it (docs/compat.md)
        dcgm = {fam: prom.query("last_over_time(%s[5s])" % fam) for fam in
                ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE",
                 "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_MEM_COPY_UTIL")}
        shared = {(fam, j): get_data_out(prom.query(
            "max_over_time(%s{cluster='%s',jobid='%s'}[%ds:])" % (fam, CLUSTER, j,
                                                                 int(end - both_at)),
            at_s=end)) for fam in ("nvidia_gpu_duty_cycle", "nvidia_gpu_memory_used_bytes")
            for j in ("4243", "4244")}
    except BaseException:
        for name, obj in (("agent", agent), ("prometheus", prom)):
            if obj is not None:
                print("--- %s log (tail) ---\n%s" % (name, tail(obj.log)))
        raise
    finally:
        for p in jobs:
            stop(p)
        prom_rc = prom.stop() if prom else None
        agent_rc = agent.stop() if agent else None
    eq(agent_rc, 0, "the agent's exit code on SIGTERM")
    check(prom_rc is not None, "Prometheus stopped")

    node = next(iter(res["cpus"]))
    eq(node, "127.0.0.1", "jobstats' node: the instance label up to ':'")
    db = agent.db
    (row_id, st_cpus, st_mem), = sql(db, "SELECT id, reserved_cpus, reserved_mem_bytes FROM jobs"
                                         " WHERE scheduler = 'slurm' AND job_id = '4242'")
    js = sql(db, "SELECT ts_ms, user_ms, system_ms, cg_cpu_ms, rss_bytes FROM job_samples"
             " WHERE job_id = ? ORDER BY ts_ms, seq", row_id)
    cpu_rows = [(ts, max(u + s, cg or 0) / 1000.0) for ts, u, s, cg, _r in js]
    rss_rows = [(ts, float(r)) for ts, _u, _s, _c, r in js]
    print("jobstats' figures for 4242: %r" % res)

    # CPU and memory: the store's
    eq(res["cpus"], {node: st_cpus}, "cpus (cgroup_cpus) = jobs.reserved_cpus")
    eq(st_cpus, 2.0, "jobs.reserved_cpus")
    eq(res["total_memory"], {node: float(st_mem)}, "total_memory = jobs.reserved_mem_bytes")
    eq(st_mem, 512 * MiB, "jobs.reserved_mem_bytes")
    (labels, cpu), = raw["cgroup_cpu_total_seconds"].items()
    (_l, rss), = raw["cgroup_memory_rss_bytes"].items()
    check(len(cpu) >= BUSY_SECONDS + 2, "scrapes of the job: %r" % cpu)
    ticks = [ts for (ts,) in sql(db, "SELECT ts_ms FROM host_samples ORDER BY ts_ms, seq")]
    match_ticks(cpu, cpu_rows, ticks, answer_ms(durations), "cgroup_cpu_total_seconds")
    match_ticks(rss, rss_rows, ticks, answer_ms(durations), "cgroup_memory_rss_bytes")
    final_cpu = cpu_rows[-1][1]
    # what js-busy measured of itself (its shell reaped it and lives on as js-busy
    # --sleep: the agent makes the ended process's CPU exact from its parent's); the
    # shell's few ms and /proc's 10 ms clock ticks
    with open(wd.join("a.json")) as f:
        busy_cpu = json.loads(f.read())["cpu_seconds"]
    check(abs(final_cpu - busy_cpu) <= 0.05 * busy_cpu + 0.04,
          "the job's CPU %r, js-busy's getrusage %.3f: %r" % (final_cpu, busy_cpu, cpu_rows))
    # jobstats' max over the window: the last scrape by the query's time, which
    # match_ticks above found to be the stored CPU as of one of the agent's ticks (the
    # job's CPU can still grow after: js-busy --sleep starting on a loaded machine)
    eq(res["total_time"], {node: max(v for t, v in cpu if t <= end * 1000)},
       "total_time (max of cgroup_cpu_total_seconds) = the last scrape's, a stored value")
    eq(res["used_memory"], {node: max(v for _t, v in rss)},
       "used_memory: no shmem series (no cgroup), so jobstats' 'or 1*rss' branch: the max RSS")
    check(res["used_memory"][node] in set(v for _t, v in rss_rows),
          "used_memory is a stored rss_bytes value")
    check(dict(labels).get("cluster") == CLUSTER, "the cluster target label: %r" % labels)

    # GPUs: one series per reserved GPU, keyed by minor number; the idle one reads 0
    devs = dict(sql(db, "SELECT uuid, id FROM devices"))
    total = {d: float(m) for d, m in sql(db, "SELECT uuid, mem_total_bytes FROM devices")}
    g0 = "GPU-0c0c0c0c-1111-2222-3333-444444444444"
    g1 = "GPU-1d1d1d1d-1111-2222-3333-444444444444"
    eq(res["gpu_total_memory"], {node: {"4": total[g0], "5": total[g1]}},
       "GPU total memory of GPUs 0 and 1 (minor 4 and 5) = devices.mem_total_bytes")
    used = {u: [float(r[0]) for r in sql(db, "SELECT mem_used_bytes FROM gpu_samples"
                                            " WHERE device_id = ?", devs[u])] for u in (g0, g1)}
    util = {u: [float(r[0]) for r in sql(db, "SELECT util_pct FROM gpu_samples"
                                            " WHERE device_id = ?", devs[u])] for u in (g0, g1)}
    eq(res["gpu_used_memory"], {node: {"4": max(used[g0]), "5": max(used[g1])}},
       "GPU used memory = the store's gpu_samples.mem_used_bytes")
    eq((max(used[g0]), max(used[g1])), (2.0 * GiB, 0.0), "stored GPU memory")
    eq(res["gpu_utilization"], {node: {"4": 60.0, "5": 0.0}},
       "GPU utilization: 60% on GPU 0; the reserved GPU 1 was not used (0, not missing)")
    eq((set(util[g0]), set(util[g1])), ({60.0}, {0.0}), "stored GPU utilization")

    # jobstats' view of the shared GPU 2 (minor 6): each job its own split
    for j, sm, mem in (("4243", 30.0, 1.0 * GiB), ("4244", 60.0, 2.0 * GiB)):
        eq(shared[("nvidia_gpu_duty_cycle", j)], {node: {"6": sm}},
           "duty cycle of job %s on the shared GPU: its processes' SM utilization" % j)
        eq(shared[("nvidia_gpu_memory_used_bytes", j)], {node: {"6": mem}},
           "GPU memory of job %s on the shared GPU: its processes'" % j)

    # ---- dcgm-exporter's names, units and labels ----
    def by_gpu(fam):
        out = {}
        for r in dcgm[fam]:
            m = r["metric"]
            key = (m["gpu"], m.get("hpc_job"))
            check(key not in out, "two %s series for %r" % (fam, key))
            out[key] = float(r["value"][1])
            eq(m.get("modelName"), "NVIDIA H100 80GB HBM3", "modelName of %s" % fam)
            check(m.get("Hostname"), "the Hostname label of %s: %r" % (fam, m))
            # "nvidia" and the DCGM GPU id, the NVML index, not the minor number
            # (dcgm-exporter's toMetric: fmt.Sprintf("nvidia%d", mi.DeviceInfo.GPU))
            eq(m.get("device"), "nvidia" + m["gpu"], "device (nvidia<index>)")
            eq(m.get("DCGM_FI_DRIVER_VERSION"), "580.65.06", "driver version label")
            check(m.get("UUID", "").startswith("GPU-") and m.get("pci_bus_id"),
                  "UUID and pci_bus_id labels: %r" % m)
        return out
    util = by_gpu("DCGM_FI_DEV_GPU_UTIL")
    eq(util, {("0", "4242"): 60.0, ("1", "4242"): 0.0, ("2", None): 90.0,
              ("2", "4243"): 30.0, ("2", "4244"): 60.0},
       "DCGM_FI_DEV_GPU_UTIL: a job's own GPUs labelled hpc_job; the shared one split")
    fb = by_gpu("DCGM_FI_DEV_FB_USED")
    eq(fb, {("0", "4242"): 2048.0, ("1", "4242"): 0.0, ("2", None): 3072.0,
            ("2", "4243"): 1024.0, ("2", "4244"): 2048.0}, "DCGM_FI_DEV_FB_USED in MiB")
    power = by_gpu("DCGM_FI_DEV_POWER_USAGE")
    eq((power[("0", "4242")], power[("1", "4242")], power[("2", None)]), (250.0, 69.0, 300.0),
       "DCGM_FI_DEV_POWER_USAGE in W")
    eq((power[("2", "4243")], power[("2", "4244")]), (100.0, 200.0),
       "the shared GPU's power split by SM share (30:60 of 300 W), not copied")
    copy = by_gpu("DCGM_FI_DEV_MEM_COPY_UTIL")
    eq(copy, {("0", "4242"): 25.0, ("1", "4242"): 0.0, ("2", None): 40.0},
       "DCGM_FI_DEV_MEM_COPY_UTIL: a device figure, not split")
    energy = by_gpu("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
    check(energy[("2", "4243")] > 0 and energy[("2", "4244")] > 0 and
          energy[("2", "4243")] + energy[("2", "4244")] <= energy[("2", None)],
          "the jobs' energy on the shared GPU is a split of the device's (mJ): %r" % energy)
    # what each got while both were there (a tick may have seen one job alone first)
    grown = {j: energy[("2", j)] - energy_from[j] for j in ("4243", "4244")}
    check(grown["4243"] > 0 and abs(grown["4244"] / grown["4243"] - 2.0) < 0.1,
          "split 2:1 by SM share: %r since %r" % (energy, energy_from))
    check("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter" in sample_body and
          "# TYPE nvidia_gpu_duty_cycle gauge" in sample_body and
          "# TYPE cgroup_cpu_total_seconds gauge" in sample_body, "the families' types")


if __name__ == "__main__":
    run_tests(globals())
