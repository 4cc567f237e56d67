"""`jobscope agent`: a Kubernetes pod by name, read on the node.

A real containerd (Debian's, its CRI plugin; cri_harness.py) runs pods as
the kubelet asks for them: the agent finds each container's OCI bundle
through the shim's working directory and names the pod's job
"NAMESPACE/POD", lists its real containers (not the sandbox), gives it
its first container's command (not the pause process's), labels its
series with namespace and pod, and stores each process's container.
Without CAP_SYS_PTRACE nothing resolves: no names, one warning.
Pod removal ends the job.
"""
import os
import re
import subprocess

from harness import run_tests, eq, check, wait_for
from agent_harness import Agent, sql, cgroup2_mount
import cri_harness

BUSY = ["/bin/sh", "-c", "while :; do :; done"]
PAUSE = "/bin/sleep 1000000"


def skip_reason():
    why = cri_harness.unavailable()
    if why:
        print("SKIP: no CRI pod here: %s" % why)
    return why


def pod_job(a, uid, named=True):
    def found():
        for j in a.json("/api/v1/jobs")["jobs"]:
            if j["scheduler"] == "k8s" and j["job_id"] == uid and j.get("live") and (
                    not named or j.get("name")) and (
                    not named or j["k8s"]["containers"]):
                return j
        return None
    return wait_for(found, timeout=30, what="pod %s in /api/v1/jobs" % uid)


def test_pod_named_by_its_bundles(wd):
    if skip_reason():
        return
    ctd = cri_harness.Containerd(wd)
    a = Agent(wd, extra=["--cri-socket", ctd.sock])
    try:
        pod = ctd.run_pod("bar-ns", "bar-pod-7", [("trainer", BUSY)],
                          labels={"batch.kubernetes.io/job-name": "bar-job"})
        cid = pod["containers"]["trainer"]
        j = pod_job(a, pod["uid"])
        eq(j["name"], "bar-ns/bar-pod-7", "the job's name")
        owner = {"label": "batch.kubernetes.io/job-name", "name": "bar-job"}
        j = wait_for(lambda: a.json("/api/v1/jobs/k8s:" + pod["uid"])
                     if pod_job(a, pod["uid"])["k8s"]["owner"] else None,
                     what="the owner hint from ListPodSandbox")
        eq(j["k8s"], {"namespace": "bar-ns", "pod": "bar-pod-7", "uid": pod["uid"],
                      "qos": "besteffort", "containers": [{"name": "trainer", "id": cid}],
                      "owner": owner}, "the job's k8s object (the owner: a hint)")
        check(j["command"] != PAUSE and "while" in j["command"],
              "the command is the trainer's, not the pause process's: %r" % j["command"])
        one = a.json("/api/v1/jobs/k8s:" + pod["uid"])
        eq(one["k8s"]["pod"], "bar-pod-7", "/api/v1/jobs/KEY's k8s")
        procs = {p["comm"]: p for p in one["processes"]}
        check("sh" in procs and "sleep" in procs, "the pod's processes: %s" % sorted(procs))
        eq(procs["sh"].get("container"), "trainer", "the trainer's process carries its name")
        eq(procs["sleep"].get("container"), None, "the sandbox's process has no container")

        def series():
            m = re.search(r'^jobscope_job_cpu_seconds_total\{([^}]*job_id="%s"[^}]*)\} '
                          % pod["uid"], a.get("/metrics"), re.M)
            return m.group(1) if m else None
        labels = wait_for(series, what="the pod's CPU series")
        check('namespace="bar-ns"' in labels and 'pod="bar-pod-7"' in labels,
              "namespace and pod labels: %s" % labels)

        def stored():
            rows = sql(a.db, "SELECT p.comm, p.container, j.name FROM procs p"
                             " JOIN jobs j ON j.id = p.job_id WHERE j.job_id = ?", pod["uid"])
            return rows if any(r[0] == "sh" and r[1] == "trainer" for r in rows) else None
        rows = wait_for(stored, what="the trainer's process stored with its container")
        eq({r[2] for r in rows}, {"bar-ns/bar-pod-7"}, "the stored job's name")
        # schema 15: the owner stored with the job (`report --k8s-job bar-ns/bar-job`)
        owner_row = wait_for(lambda: sql(a.db, "SELECT k8s_owner, k8s_owner_label FROM jobs"
                                               " WHERE job_id = ? AND k8s_owner IS NOT NULL",
                                         pod["uid"]) or None,
                             what="the pod's owner stored")
        eq(owner_row, [("bar-ns/bar-job", "batch.kubernetes.io/job-name")], "the stored owner")

        # the container restarts: same name, a new ID; the pod is the same job
        ctd.stop_container(cid)
        cid2 = ctd.add_container(pod, "trainer", BUSY, attempt=1)

        def restarted():
            j2 = a.json("/api/v1/jobs/k8s:" + pod["uid"])
            return j2 if j2["k8s"]["containers"] == [{"name": "trainer", "id": cid2}] else None
        j2 = wait_for(restarted, what="the restarted container's new ID")
        eq(j2["key"], j["key"], "the same job")

        ctd.remove_pod(pod)

        def ended():
            rows = sql(a.db, "SELECT end_ms FROM jobs WHERE scheduler = 'k8s' AND job_id = ?",
                       pod["uid"])
            return rows and rows[0][0]
        wait_for(ended, timeout=30, what="the pod's job ended")
        check("cannot read the names" not in a.stderr(), "no warning: %s" % a.stderr())
    finally:
        try:
            eq(a.stop(), 0, "agent exit status")
        finally:
            ctd.close()


def test_two_containers_guaranteed(wd):
    if skip_reason():
        return
    ctd = cri_harness.Containerd(wd)
    a = Agent(wd)
    try:
        res = {"cpu_quota": 50000, "memory": 64 << 20}
        pod = ctd.run_pod("ml", "train-0", [("loader", ["/bin/sleep", "500"], res),
                                            ("trainer", BUSY, res)], qos="guaranteed")

        def both():
            j = pod_job(a, pod["uid"])
            return j if len(j["k8s"]["containers"]) == 2 else None
        j = wait_for(both, timeout=30, what="both containers")
        eq(j["name"], "ml/train-0", "name")
        eq(j["k8s"]["qos"], "guaranteed", "qos")
        eq(sorted((c["name"], c["id"]) for c in j["k8s"]["containers"]),
           sorted(pod["containers"].items()), "the real containers, not the sandbox")
        eq(j["command"], "/bin/sleep 500", "the first container's command")
    finally:
        try:
            eq(a.stop(), 0, "agent exit status")
        finally:
            ctd.close()


def test_no_ptrace_no_names(wd):
    if skip_reason():
        return
    ctd = cri_harness.Containerd(wd)
    a = Agent(wd, wrap=["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace",
                        "--"])
    try:
        pod = ctd.run_pod("bar-ns", "bar-pod-8", [("trainer", BUSY)])
        j = pod_job(a, pod["uid"], named=False)
        a.wait_ticks(3)
        j = a.json("/api/v1/jobs/k8s:" + pod["uid"])
        eq(j["name"], None, "no name is guessed")
        eq(j["k8s"], {"namespace": None, "pod": None, "uid": pod["uid"], "qos": "besteffort",
                      "containers": [], "owner": None}, "k8s without names")
        log = a.stderr()
        eq(log.count("cannot read the names"), 1, "one warning: %s" % log)
        check("CAP_SYS_PTRACE" in log, "the warning names the cause: %s" % log)
    finally:
        try:
            eq(a.stop(), 0, "agent exit status")
        finally:
            ctd.close()


def test_agent_in_its_own_cgroup_namespace(wd):
    """The agent in a cgroup namespace rooted below the hierarchy's root sees
    the pod at 0::/../kubepods/...: the job's cgroup is read from the root."""
    if skip_reason():
        return
    mnt = cgroup2_mount()
    if not mnt:
        print("SKIP: no cgroup2 hierarchy")
        return
    own = os.path.join(mnt, "jstest-cgns-%d" % os.getpid())
    os.mkdir(own)
    ctd = cri_harness.Containerd(wd)
    a = None
    try:
        a = Agent(wd, wrap=["sh", "-c", 'echo $$ >"$0/cgroup.procs" && exec unshare --cgroup "$@"',
                            own])
        with open("/proc/%d/cgroup" % a.proc.pid) as f:
            check("0::/jstest-cgns-" in f.read(), "the agent is in its own cgroup")
        pod = ctd.run_pod("bar-ns", "bar-pod-9", [("trainer", BUSY)])
        path = "/kubepods/besteffort/pod" + pod["uid"]

        def with_cgroup():
            j = pod_job(a, pod["uid"])
            return j if j["usage"].get("cgroup_cpu_seconds") is not None else None
        wait_for(with_cgroup, timeout=30, what="the pod's cgroup figures")
        j = a.json("/api/v1/jobs/k8s:" + pod["uid"])
        seen = subprocess.run(["nsenter", "--cgroup", "-t", str(a.proc.pid), "cat",
                               "/proc/%d/cgroup" % j["processes"][0]["pid"]
                               if j.get("processes") else "/proc/self/cgroup"],
                              capture_output=True, text=True).stdout
        check("0::/../kubepods/besteffort/pod" in seen, "the agent's view: %r" % seen)
        eq(j["cgroup"], path, "the job's cgroup, from the hierarchy's root")
        eq(j["name"], "bar-ns/bar-pod-9", "named as from the host's namespace")
    finally:
        try:
            if a:
                eq(a.stop(), 0, "agent exit status")
        finally:
            ctd.close()
            os.rmdir(own)


if __name__ == "__main__":
    run_tests(globals())
