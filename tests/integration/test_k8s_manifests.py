#!/usr/bin/env python3
"""deploy/kubernetes: every document validates against the Kubernetes API's own
schemas (npm kubernetes-models; the ServiceMonitor against
@kubernetes-models/prometheus-operator's), and holds what jobscope needs of it.

The npm packages are installed once, at pinned versions, into the build
directory (argv[1]/k8s-node-modules); offline from then on.  No node, or no
npm and no installed copy: SKIP, saying why.  tests/k8s/validate.mjs parses
and validates; the checks of the agent's DaemonSet (hostPID, privileged, the
read-only host mounts under --sysroot, NODE_NAME, tolerations, priority), the
head's token, the RBAC rules, the selectors and the image name are here.

argv[1]: the build directory.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

from harness import jobscope, run_tests, check, eq, scaled

BUILD = sys.argv[1] if len(sys.argv) > 1 else ""
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MANIFESTS = sorted(glob.glob(os.path.join(ROOT, "deploy", "kubernetes", "*.yaml")))
VALIDATE = os.path.join(ROOT, "tests", "k8s", "validate.mjs")
# pinned: a new schema release must not turn the suite red by itself
NPM_PACKAGES = ["kubernetes-models@5.1.0", "@kubernetes-models/prometheus-operator@6.0.0",
                "js-yaml@4.1.0"]
PREFIX = os.path.join(BUILD, "k8s-node-modules")
MODULES = os.path.join(PREFIX, "node_modules")
STAMP = os.path.join(PREFIX, "installed")


def npm_ready():
    """None when the packages are there (installing them if need be), else why not."""
    if not shutil.which("node"):
        return "node is not installed (apt-get install nodejs)"
    want = " ".join(NPM_PACKAGES)
    if os.path.exists(STAMP) and open(STAMP).read() == want:
        return None
    if not shutil.which("npm"):
        return "npm is not installed (apt-get install npm) and %s has no copy" % PREFIX
    os.makedirs(PREFIX, exist_ok=True)
    with open(os.path.join(PREFIX, "package.json"), "w") as f:
        f.write('{"private": true}\n')
    try:
        p = subprocess.run(["npm", "install", "--prefix", PREFIX, "--no-audit", "--no-fund",
                            "--no-save", "--loglevel=error"] + NPM_PACKAGES,
                           capture_output=True, text=True, timeout=scaled(300))
    except subprocess.TimeoutExpired:
        return "npm install timed out (is the npm registry reachable?)"
    if p.returncode != 0:
        return "npm install failed: %s" % (p.stdout + p.stderr).strip()[-500:]
    with open(STAMP, "w") as f:
        f.write(want)
    return None


def validate(files):
    p = subprocess.run(["node", VALIDATE, MODULES] + files, capture_output=True, text=True,
                       timeout=scaled(120))
    rows = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    return p.returncode, rows, p.stderr


_docs = None


def docs():
    global _docs
    if _docs is None:
        rc, rows, err = validate(MANIFESTS)
        errors = [r["error"] for r in rows if "error" in r]
        eq(errors, [], "every document validates (stderr: %s)" % err[-1000:])
        eq(rc, 0, "validate.mjs's exit (stderr: %s)" % err[-1000:])
        _docs = [r["doc"] for r in rows]
    return _docs


def one(kind, name):
    found = [d for d in docs() if d["kind"] == kind and d["metadata"]["name"] == name]
    eq(len(found), 1, "one %s %s" % (kind, name))
    return found[0]


def version():
    m = re.search(r"version\s*:\s*'([^']+)'", open(os.path.join(ROOT, "meson.build")).read())
    return m.group(1)


def list_options(cmd):
    p = jobscope(cmd, "--list-options")
    eq(p.returncode, 0, "%s --list-options" % cmd)
    return {o.rstrip("=") for o in p.stdout.split()}


def check_args(cmd, args):
    """Every option the manifest passes is one `jobscope CMD` takes (--sysroot: hidden)."""
    known = list_options(cmd) | {"--sysroot"}
    for a in args[1:]:
        if a.startswith("--"):
            check(a.split("=")[0] in known, "jobscope %s takes %s" % (cmd, a))


def test_every_document_validates(wd):
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in docs())
    eq(kinds, sorted([
        ("ClusterRole", "jobscope-annotate"), ("ClusterRoleBinding", "jobscope-head-annotate"),
        ("DaemonSet", "jobscope-agent"), ("Deployment", "jobscope-head"),
        ("Namespace", "jobscope"), ("PersistentVolumeClaim", "jobscope-head-store"),
        ("Service", "jobscope-agent"), ("Service", "jobscope-head"),
        ("ServiceAccount", "jobscope-agent"), ("ServiceAccount", "jobscope-head"),
        ("ServiceMonitor", "jobscope-agent"), ("ServiceMonitor", "jobscope-head")]),
       "the manifests' documents")


def test_the_validator_rejects_a_wrong_document(wd):
    """The schemas are really applied: a wrong type and a missing field are caught."""
    bad = wd.join("bad.yaml")
    with open(bad, "w") as f:
        f.write("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\n"
                "spec:\n  selector: {matchLabels: {a: b}}\n  template:\n"
                "    spec:\n      hostPID: \"yes\"\n      containers: [{name: c}]\n"
                "---\napiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\n"
                "metadata: {name: y}\nspec: {endpoints: [{port: 9464}]}\n"
                "---\napiVersion: v1\nkind: Service\nmetadata: {name: z}\n"
                "spec: {ports: [{name: p}]}\n")
    rc, rows, err = validate([bad])
    eq(rc, 1, "validate.mjs fails (stderr: %s)" % err)
    errors = [r.get("error", "") for r in rows]
    eq(len([e for e in errors if e]), 3, "each bad document is refused: %r" % errors)
    check("hostPID" in errors[0], "the DaemonSet's hostPID type: %r" % errors[0])


def test_agent_daemonset(wd):
    ds = one("DaemonSet", "jobscope-agent")
    pod = ds["spec"]["template"]["spec"]
    eq(pod.get("hostPID"), True, "hostPID")
    eq(pod.get("automountServiceAccountToken"), False, "no ServiceAccount token")
    eq(pod.get("priorityClassName"), "system-node-critical", "priorityClassName")
    eq(pod.get("tolerations"), [{"operator": "Exists"}], "every taint tolerated")
    eq(len(pod["containers"]), 1, "one container")
    c = pod["containers"][0]
    eq(c["securityContext"].get("privileged"), True, "privileged")
    eq(c["image"], "localhost/jobscope:%s" % version(), "the image build-image.sh makes")
    eq(c["imagePullPolicy"], "Never", "no registry to pull from")
    env = {e["name"]: e for e in c["env"]}
    eq(env["NODE_NAME"].get("valueFrom"), {"fieldRef": {"fieldPath": "spec.nodeName"}},
       "NODE_NAME from spec.nodeName")
    eq(c["args"][0], "agent", "runs the agent")
    check_args("agent", c["args"])
    opts = dict(a[2:].split("=", 1) for a in c["args"][1:] if "=" in a)
    root = opts["sysroot"]
    vols = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}

    def host_path(mount_path):
        m = mounts.get(mount_path)
        check(m, "a mount at %s" % mount_path)
        return vols[m["name"]].get("hostPath", {}).get("path"), m.get("readOnly", False)

    # the host's /proc and /sys, read-only, where --sysroot reads them
    eq(host_path(root + "/proc"), ("/proc", True), "host /proc under the sysroot")
    eq(host_path(root + "/sys"), ("/sys", True), "host /sys under the sysroot")
    eq(host_path("/var/lib/kubelet/pod-resources"), ("/var/lib/kubelet/pod-resources", True),
       "the kubelet's pod-resources directory, read-only")
    eq(host_path("/var/lib/jobscope"), ("/var/lib/jobscope", False), "a writable store")
    check(opts["db"].startswith("/var/lib/jobscope/"), "the store in /var/lib/jobscope")
    # its head's token from the Secret the head reads it from
    tok = mounts[os.path.dirname(opts["token-file"])]
    eq(vols[tok["name"]]["secret"]["secretName"], "jobscope-tokens", "the agents' token")
    check(opts["head"].startswith("http://jobscope-head.jobscope.svc:"), "the head's Service")


def test_head_deployment(wd):
    dep = one("Deployment", "jobscope-head")
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    eq(c["image"], "localhost/jobscope:%s" % version(), "the same image")
    eq(c["args"][0], "head", "runs the head")
    check_args("head", c["args"])
    opts = dict(a[2:].split("=", 1) for a in c["args"][1:] if "=" in a)
    check(not opts["listen"].startswith("127."), "off loopback")
    check("insecure" not in c["args"], "not --insecure")
    vols = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    for key in ("token-file", "read-token-file"):
        m = mounts[os.path.dirname(opts[key])]
        eq(vols[m["name"]]["secret"]["secretName"], "jobscope-tokens", "--%s's Secret" % key)
    eq(dep["spec"]["strategy"]["type"], "Recreate", "one writer of the store at a time")
    eq(pod["serviceAccountName"], "jobscope-head", "the annotating ServiceAccount")


def test_rbac_is_get_patch_on_pods_and_nodes(wd):
    role = one("ClusterRole", "jobscope-annotate")
    eq(role["rules"], [{"apiGroups": [""], "resources": ["pods", "nodes"],
                        "verbs": ["get", "patch"]}], "the only rule")
    b = one("ClusterRoleBinding", "jobscope-head-annotate")
    eq(b["roleRef"]["name"], "jobscope-annotate", "binds the role")
    eq(b["subjects"], [{"kind": "ServiceAccount", "name": "jobscope-head",
                        "namespace": "jobscope"}], "to the head only")


def test_services_and_monitors_select_the_pods(wd):
    for comp, owner_kind in (("agent", "DaemonSet"), ("head", "Deployment")):
        owner = one(owner_kind, "jobscope-" + comp)
        labels = owner["spec"]["template"]["metadata"]["labels"]
        ports = {p["name"] for p in owner["spec"]["template"]["spec"]["containers"][0]["ports"]}
        svc = one("Service", "jobscope-" + comp)
        check(svc["spec"]["selector"].items() <= labels.items(), "%s Service selects" % comp)
        for p in svc["spec"]["ports"]:
            check(p["targetPort"] in ports, "%s Service's port %s" % (comp, p["targetPort"]))
        sm = one("ServiceMonitor", "jobscope-" + comp)
        check(sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items(),
              "%s ServiceMonitor selects its Service" % comp)
        for e in sm["spec"]["endpoints"]:
            check(e["port"] in {p["name"] for p in svc["spec"]["ports"]}, "endpoint port")
    # the head's /metrics is for readers: the readers' token from the same Secret
    head_sm = one("ServiceMonitor", "jobscope-head")
    eq(head_sm["spec"]["endpoints"][0]["bearerTokenSecret"],
       {"name": "jobscope-tokens", "key": "read.token"}, "the head's scrape token")


if __name__ == "__main__":
    why = npm_ready()
    if why:
        print("SKIP test_k8s_manifests: %s" % why)
        sys.exit(77)
    run_tests(dict(globals()))
