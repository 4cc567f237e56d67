#!/usr/bin/env python3
"""`jobscope report --k8s-job NS/NAME`: a store holding pods of two owners on two
nodes (real samples from `jobscope run`, made pods and moved to a second node by
SQL as an agent's --cri-socket and a head's ingest would leave them); the group's
figures are the sum of its pods' own reports, from --db and from a head."""
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import check, eq, helper, jobscope, run, run_tests  # noqa: E402
from head_harness import Head  # noqa: E402

LABEL = "training.kubeflow.org/job-name"
# (run id, pod UID, name, node, owner)
PODS = [(1, "uid-a0", "ml/bert-worker-0", "gpu-a", "ml/bert"),
        (2, "uid-b1", "ml/bert-worker-1", "gpu-b", "ml/bert"),
        (3, "uid-a2", "ml/gpt-0", "gpu-a", "ml/gpt"),
        (4, "uid-b3", "ml/gpt-1", "gpu-b", "ml/gpt")]


def make_store(wd):
    db = wd.join("store.db")
    for i, _ in enumerate(PODS):
        r = run(wd, [helper("busy"), "--seconds", "0.%d" % (4 + i)], db=db)
        eq(r.rc, 0, "run %d: %s" % (i + 1, r.stderr))
    con = sqlite3.connect(db)
    con.execute("UPDATE nodes SET hostname = 'gpu-a'")
    con.execute("INSERT INTO nodes (hostname, cores, mem_total_bytes, boot_ms)"
                " SELECT 'gpu-b', cores, mem_total_bytes, boot_ms FROM nodes")
    for row, uid, name, node, owner in PODS:
        con.execute("UPDATE jobs SET scheduler = 'k8s', job_id = ?, name = ?, k8s_owner = ?,"
                    " k8s_owner_label = ?, node_id = (SELECT id FROM nodes WHERE hostname = ?)"
                    " WHERE id = ?", (uid, name, owner, LABEL, node, row))
    con.commit()
    con.close()
    return db


def report(*args):
    r = jobscope("report", *args)
    eq(r.returncode, 0, "report %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


def check_group(group, own, owner):
    """group: --k8s-job's JSON; own(key): that pod's own report's JSON."""
    mine = [p for p in PODS if p[4] == owner]
    eq(group["k8s_job"], owner, "the group")
    eq(group["owner_label"], LABEL, "its label")
    eq(group["pods"], len(mine), "its pods")
    eq(group["nodes"], 2, "its nodes")
    eq(sorted(p["name"] for p in group["pods_list"]), sorted(p[2] for p in mine), "its pods' names")
    cpu = mem = 0.0
    for p in group["pods_list"]:
        r = own(p["key"])
        eq(p["cpu_seconds"], r["cpu"]["cpu_seconds"], "%s: its own report's CPU" % p["name"])
        eq(p["memory_peak_bytes"], r["memory"]["rss_peak_bytes"],
           "%s: its own report's memory peak" % p["name"])
        eq(p["node"], r["run"]["host"], "%s: its node" % p["name"])
        cpu += r["cpu"]["cpu_seconds"]
        mem += r["memory"]["rss_peak_bytes"]
    check(cpu > 0, "the pods burned CPU (%.3f s)" % cpu)
    check(abs(group["total"]["cpu_seconds"] - cpu) < 0.002,
          "the group's CPU %.3f is its pods' %.3f" % (group["total"]["cpu_seconds"], cpu))
    eq(group["total"]["memory_peak_bytes_sum"], mem, "the group's memory: its pods' peaks summed")


def test_group_from_store_and_head(wd):
    db = make_store(wd)
    for owner in ("ml/bert", "ml/gpt"):
        group = json.loads(report("--db", db, "--k8s-job", owner, "--format", "json"))
        check_group(group, lambda key: json.loads(report("--db", db, "--job", key,
                                                         "--format", "json")), owner)
    text = report("--db", db, "--k8s-job", "ml/bert")
    check("ml/bert-worker-0" in text and "ml/bert-worker-1" in text and "gpu-b" in text
          and "2 pods on 2 nodes" in text, "the text names the pods and nodes:\n" + text)
    head = Head(wd, db=db)
    try:
        remote = json.loads(report("--head", head.url, "--k8s-job", "ml/bert", "--format", "json"))
        local = json.loads(report("--db", db, "--k8s-job", "ml/bert", "--format", "json"))
        eq(remote["total"], local["total"], "a head answers the same")
        eq(remote["pods_list"], local["pods_list"], "a head lists the same pods")
        r = jobscope("report", "--head", head.url, "--k8s-job", "ml/none")
        eq(r.returncode, 1, "an owner without pods: exit 1 (%s)" % r.stderr)
    finally:
        head.kill()


def test_errors(wd):
    db = make_store(wd)
    for args in (["--k8s-job", "ml/bert", "--node", "gpu-a"],
                 ["--k8s-job", "ml/bert", "--format", "csv"],
                 ["--k8s-job", "ml/bert", "--job", "k8s:uid-a0"]):
        r = jobscope("report", "--db", db, *args)
        eq(r.returncode, 2, "%s: usage error (%s)" % (args, r.stderr))
    r = jobscope("report", "--db", db, "--k8s-job", "no-slash")
    eq(r.returncode, 2, "a bad group name: usage error (%s)" % r.stderr)
    r = jobscope("report", "--db", db, "--k8s-job", "ml/none")
    eq(r.returncode, 1, "no such owner: exit 1")
    check("no pod of k8s job 'ml/none'" in r.stderr, r.stderr)


if __name__ == "__main__":
    run_tests(globals())
