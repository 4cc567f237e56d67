"""`jobscope agent --k8s-annotate` against an HTTPS recorder standing in for the API server.

No API server runs here.  The recorder (python's ssl, a CA and a server
certificate made by openssl for 127.0.0.1) checks what a real one would: the
TLS client verifies its CA, the bearer token, the paths, PATCH, the merge-patch
content type and ?fieldManager=jobscope; it answers scripted statuses (500,
429 with Retry-After, 401 until the token file holds a new token, 404, 403)
and records every body.  Each recorded body is then applied with the real
`kubectl patch --local --type merge` to a pod or node manifest, and the
annotations that result are checked.

The agent samples a sysroot with a burstable pod (the cgroup fixture of
test_agent_sysroot.py: cpu.max 1.5 cores, memory.max 512 MiB).  Pod names
("NAMESPACE/POD" from the container runtime) are another change's work: here
the hidden --k8s-test-pod-names gives the pod its name; a second pod has none
and must be left alone, said once.
"""
import functools
import http.server
import json
import os
import re
import socket
import ssl
import subprocess
import threading
import time

from harness import JOBSCOPE, run_tests, check, eq, wait_for, stop
import fake_node
from fake_node import skeleton

POD_UID = "1234abcd-5678-90ab-cdef-0123456789ab"
POD_SLICE = ("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice"
             % POD_UID.replace("-", "_"))
NONAME_UID = "99999999-5678-90ab-cdef-0123456789ab"
NONAME_SLICE = ("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod%s.slice"
                % NONAME_UID.replace("-", "_"))
CID = "0123456789abcdef" * 4
POD_PATH = "/api/v1/namespaces/bar-ns/pods/bar-pod-7"
TOKENS = ["token-one-AAAA", "token-two-BBBB", "token-three-CC"]


def make_root(wd):
    root = skeleton(wd.join("root"), "v2")
    add_proc = functools.partial(fake_node.add_proc, read_bytes=0, write_bytes=0)  # no I/O
    add_proc(root, 1, 0, "init", "0::/init.scope\n")
    add_proc(root, 500, 1, "containerd-shim", "0::/system.slice/containerd.service\n")
    add_proc(root, 510, 500, "python", "0::%s/cri-containerd-%s.scope\n" % (POD_SLICE, CID))
    add_proc(root, 520, 500, "nameless", "0::%s/cri-containerd-%s.scope\n"
             % (NONAME_SLICE, "f" * 64))
    return root


def openssl(*args):
    r = subprocess.run(["openssl"] + list(args), capture_output=True, text=True, timeout=60)
    eq(r.returncode, 0, "openssl %s: %s" % (" ".join(args), r.stderr))


def make_ca(wd, name):
    key, crt = wd.join(name + ".key"), wd.join(name + ".crt")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", crt,
            "-days", "2", "-subj", "/CN=" + name)
    return key, crt


def make_server_cert(wd, ca_key, ca_crt):
    key, csr, crt, ext = (wd.join("srv.key"), wd.join("srv.csr"), wd.join("srv.crt"),
                          wd.join("srv.ext"))
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
            "-subj", "/CN=kubernetes")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial",
            "-out", crt, "-days", "2", "-extfile", ext)
    return key, crt


class Recorder:
    """The API server's stand-in: checks each PATCH, answers from a script, records it."""

    def __init__(self, wd, token):
        self.lock = threading.Lock()
        self.token = token        # the one it accepts
        self.script = []          # (status, headers, path substring or None), used in order
        self.records = []         # dicts: t, path, query, token, ctype, body, status
        self.handshake_errors = 0
        ca_key, self.ca = make_ca(wd, "ca")
        key, crt = make_server_cert(wd, ca_key, self.ca)
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_PATCH(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n).decode()
                path, _, query = self.path.partition("?")
                auth = self.headers.get("Authorization", "")
                token = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
                with rec.lock:
                    status, headers = 200, {}
                    if token != rec.token:
                        status = 401
                    else:
                        for i, (st, hd, where) in enumerate(rec.script):
                            if where is None or where in path:
                                status, headers = st, hd
                                del rec.script[i]
                                break
                    rec.records.append({"t": time.monotonic(), "path": path, "query": query,
                                        "token": token, "body": body, "status": status,
                                        "ctype": self.headers.get("Content-Type")})
                answer = json.dumps({"kind": "Status" if status >= 300 else "Pod",
                                     "code": status}).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def do_GET(self):
                self.send_error(405)

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                with rec.lock:
                    rec.handshake_errors += 1

        self.srv = Server(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(crt, key)
        self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True,
                                          do_handshake_on_connect=False)
        self.url = "https://127.0.0.1:%d" % self.srv.server_address[1]
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def get(self):
        with self.lock:
            return list(self.records)

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def start_agent(wd, root, rec, token_file, ca, name="agent", interval="1s"):
    log = open(wd.join(name + ".log"), "w")
    args = [JOBSCOPE, "agent", "--sysroot", root, "--db", wd.join(name + ".db"),
            "--interval", "200ms", "--listen", "none", "--k8s-annotate", "--k8s-api", rec.url,
            "--k8s-token-file", token_file, "--k8s-ca-file", ca,
            "--k8s-annotate-interval", interval,
            "--k8s-test-pod-names", "%s=bar-ns/bar-pod-7" % POD_UID]
    env = dict(os.environ, NODE_NAME="node-a")
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=log, env=env), wd.join(name + ".log")


def write_token(path, token, keep_stat=False):
    """keep_stat: the same inode, size and mtime, so only a 401 can tell it changed."""
    st = os.stat(path) if keep_stat else None
    with open(path, "r+" if keep_stat else "w") as f:
        f.write(token + "\n")
    if st:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    else:
        os.utime(path, ns=(time.time_ns() + 10**9,) * 2)  # a new mtime even at coarse clocks


def bump_cpu(root):
    """The pod's process used more CPU and its cgroup's memory peak rose: its figures move.

    The CPU alone need not move a figure: the pod's average comes from its cgroup
    (the fixture's constant total) and a 95th percentile of mostly idle samples
    can stay where it was when one more spike comes.  The peak, raised by a MiB
    each time, moves memory-peak-bytes at every bump."""
    p = os.path.join(root, "proc", "510", "stat")
    with open(p) as f:
        fields = f.read().split(" ")
    fields[13] = str(int(fields[13]) + 300)
    with open(p, "w") as f:
        f.write(" ".join(fields))
    p = os.path.join(root, "sys", "fs", "cgroup", POD_SLICE.lstrip("/"), "memory.peak")
    with open(p) as f:
        peak = int(f.read())
    with open(p, "w") as f:
        f.write("%d\n" % (peak + (1 << 20)))


def kubectl_apply(wd, kind, bodies):
    """The bodies applied in order by the real kubectl to a manifest: its annotations."""
    path = wd.join(kind + ".yaml")
    if kind == "pod":
        doc = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "bar-pod-7", "namespace": "bar-ns",
                            "annotations": {"other.io/keep": "yes"}},
               "spec": {"containers": [{"name": "trainer", "image": "busybox"}]}}
    else:
        doc = {"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": "node-a", "annotations": {"other.io/keep": "yes"}}}
    with open(path, "w") as f:
        json.dump(doc, f)
    for body in bodies:
        r = subprocess.run(["kubectl", "patch", "--local", "-f", path, "--type", "merge",
                            "-p", body, "-o", "json"], capture_output=True, text=True,
                           timeout=60)
        eq(r.returncode, 0, "kubectl patch --local %s: %s" % (body, r.stderr))
        with open(path, "w") as f:
            f.write(r.stdout)
    with open(path) as f:
        return json.load(f)["metadata"].get("annotations", {})


def check_request(r):
    check(r["path"] == POD_PATH or r["path"] == "/api/v1/nodes/node-a",
          "a pod or node path: %s" % r["path"])
    eq(r["query"], "fieldManager=jobscope", "the field manager")
    eq(r["ctype"], "application/merge-patch+json", "the content type")
    body = json.loads(r["body"])
    eq(list(body), ["metadata"], "only metadata is patched")
    eq(list(body["metadata"]), ["annotations"], "only annotations are patched")
    for k, v in body["metadata"]["annotations"].items():
        check(re.fullmatch(r"jobscope\.io/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", k),
              "annotation name %r" % k)
        check(v is None or isinstance(v, str), "%s: a string or null: %r" % (k, v))


def test_annotations_statuses_and_kubectl(wd):
    root = make_root(wd)
    token_file = wd.join("token")
    write_token(token_file, TOKENS[0])
    rec = Recorder(wd, TOKENS[0])
    # the first answers: a 500 (a second's wait), then a 429 asking for 2 s
    rec.script = [(500, {}, None), (429, {"Retry-After": "2"}, None)]
    agent, log = start_agent(wd, root, rec, token_file, rec.ca)
    try:
        wait_for(lambda: [r for r in rec.get() if r["status"] == 200 and r["path"] == POD_PATH]
                 and [r for r in rec.get() if r["status"] == 200 and "nodes" in r["path"]],
                 timeout=30, what="the pod and the node patched after a 500 and a 429")
        recs = rec.get()
        eq([r["status"] for r in recs[:3]], [500, 429, 200], "the answers in order")
        check(recs[1]["t"] - recs[0]["t"] >= 0.9, "a 500 waits about a second: %.2f s"
              % (recs[1]["t"] - recs[0]["t"]))
        check(recs[2]["t"] - recs[1]["t"] >= 1.9, "Retry-After: 2 is honoured: %.2f s"
              % (recs[2]["t"] - recs[1]["t"]))
        eq(recs[2]["path"], recs[1]["path"], "the same object tried again")

        # the token file is rewritten in place, same size and mtime: a 401 makes it read
        write_token(token_file, TOKENS[1], keep_stat=True)
        with rec.lock:
            rec.token = TOKENS[1]
        n = len(rec.get())
        bump_cpu(root)
        wait_for(lambda: [r for r in rec.get()[n:] if r["status"] == 200 and
                          r["token"] == TOKENS[1]], timeout=20,
                 what="a patch with the new token after a 401")
        new = rec.get()[n:]
        eq([(r["status"], r["token"]) for r in new[:2]], [(401, TOKENS[0]), (200, TOKENS[1])],
           "a 401, then the token read again")

        # a projected token replaced (its mtime moves): read before the next request, no 401
        write_token(token_file, TOKENS[2])
        with rec.lock:
            rec.token = TOKENS[2]
        n = len(rec.get())
        bump_cpu(root)
        wait_for(lambda: [r for r in rec.get()[n:] if r["path"] == POD_PATH], timeout=20,
                 what="the next pod patch")
        eq([(r["status"], r["token"]) for r in rec.get()[n:]][:1], [(200, TOKENS[2])],
           "the changed file read before the request")

        # the pod is gone: 404, and no more patches for it
        with rec.lock:
            rec.script = [(404, {}, "/pods/")]
        n = len(rec.get())
        bump_cpu(root)
        wait_for(lambda: [r for r in rec.get()[n:] if r["status"] == 404], timeout=20,
                 what="the 404")
        bump_cpu(root)
        time.sleep(3)
        after = [r for r in rec.get()[n:] if r["path"] == POD_PATH]
        eq([r["status"] for r in after], [404], "nothing more for a pod that is gone")
        # the node's figures did not move: patched once
        eq([r["status"] for r in rec.get() if "nodes" in r["path"]], [200],
           "a node whose figures did not move is patched once")
    finally:
        stop(agent)
        rec.close()
    recs = rec.get()
    for r in recs:
        check_request(r)
    # 200 ms apart as sent; as received, network jitter may shorten one gap a little
    gaps = [b["t"] - a["t"] for a, b in zip(recs, recs[1:])]
    check(min(gaps) >= 0.12, "requests paced: %s" % gaps)
    check(all(b["t"] - a["t"] >= 0.9 for a, b in zip(recs, recs[5:])),
          "at most 5 requests a second: %s" % gaps)
    with open(log) as f:
        text = f.read()
    eq(text.count("has no name"), 1, "the pod without a name said once:\n" + text)
    check(NONAME_UID not in "".join(r["path"] for r in recs), "the nameless pod left alone")

    # what the server holds: the bodies it accepted, in order
    pod = kubectl_apply(wd, "pod", [r["body"] for r in recs
                                    if r["path"] == POD_PATH and r["status"] == 200])
    eq(pod.get("other.io/keep"), "yes", "another's annotation kept")
    eq(pod.get("jobscope.io/cpu-limit-cores"), "1.50", "the pod's CPU limit (cpu.max)")
    eq(pod.get("jobscope.io/memory-limit-bytes"), str(512 << 20), "its memory limit")
    for k in ("cpu-cores-avg", "cpu-efficiency-pct", "memory-peak-bytes", "verdicts",
              "updated"):
        check("jobscope.io/" + k in pod, "pod annotation %s: %s" % (k, pod))
    # the CPU bump_cpu added shows at its sample (the cgroup's total is the fixture's)
    check(float(pod["jobscope.io/cpu-cores-p95"]) > 0, "CPU used: %s" % pod)
    check(int(pod["jobscope.io/memory-peak-bytes"]) > 498073600,
          "the raised memory peak: %s" % pod)
    check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", pod["jobscope.io/updated"]),
          "updated is RFC 3339")
    node = kubectl_apply(wd, "node", [r["body"] for r in recs
                                      if "nodes" in r["path"] and r["status"] == 200])
    eq(node.get("other.io/keep"), "yes", "the node's own annotation kept")
    for k in ("cpu-cores", "memory-total-bytes", "memory-used-bytes", "gpus"):
        check("jobscope.io/" + k in node, "node annotation %s: %s" % (k, node))


def test_forbidden_turns_it_off(wd):
    root = make_root(wd)
    token_file = wd.join("token")
    write_token(token_file, TOKENS[0])
    rec = Recorder(wd, TOKENS[0])
    rec.script = [(403, {}, None)]
    agent, log = start_agent(wd, root, rec, token_file, rec.ca)
    try:
        wait_for(lambda: rec.get(), timeout=20, what="a first request")
        bump_cpu(root)
        time.sleep(3)
        eq([r["status"] for r in rec.get()], [403], "nothing after a 403")
    finally:
        eq(stop(agent), 0, "the agent exits cleanly")
        rec.close()
    with open(log) as f:
        text = f.read()
    eq(text.count("403 Forbidden"), 1, "one warning:\n" + text)


def test_ca_is_verified(wd):
    root = make_root(wd)
    token_file = wd.join("token")
    write_token(token_file, TOKENS[0])
    rec = Recorder(wd, TOKENS[0])
    _, other_ca = make_ca(wd, "other-ca")
    agent, log = start_agent(wd, root, rec, token_file, other_ca)
    try:
        wait_for(lambda: "next try" in open(log).read(), timeout=20,
                 what="a failed request logged")
    finally:
        stop(agent)
        rec.close()
    eq(rec.get(), [], "no request reaches a server the CA does not vouch for")
    check(re.search(r"certificate|SSL", open(log).read()), "the log says why")


run_tests(globals())
