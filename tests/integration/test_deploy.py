#!/usr/bin/env python3
"""deploy/slurm/taskprolog.sh finds the CUDA hook where `meson install` puts it.

`meson install --tags runtime` into a temporary destdir: the hook's path there
(relative to the destdir) matches one of the places the TaskProlog looks in (its
own glob list, read from the script), and the binary's compiled-in hook directory
(JOBSCOPE_HOOK_DIR, `jobscope run --cuda`'s default) is that same directory.  Then
the script itself, pointed at the installed hook and at a listening socket, exports
CUDA_INJECTION64_PATH and JOBSCOPE_CUDA_SOCKET; with no socket, or a job that set
CUDA_INJECTION64_PATH itself, it exports nothing of the kind.

argv[1]: the build directory (meson install runs there, --no-rebuild).
"""
import fnmatch
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

from harness import run_tests, check, eq, scaled

BUILD = sys.argv[1] if len(sys.argv) > 1 else ""
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROLOG = os.path.join(ROOT, "deploy", "slurm", "taskprolog.sh")


def install(dest):
    p = subprocess.run(["meson", "install", "-C", BUILD, "--no-rebuild", "--tags", "runtime",
                        "--destdir", dest], capture_output=True, text=True, timeout=scaled(120))
    eq(p.returncode, 0, "meson install: %s" % (p.stdout + p.stderr)[-2000:])
    found = []
    for root, _, files in os.walk(dest):
        found += ["/" + os.path.relpath(os.path.join(root, f), dest) for f in files
                  if f == "libjobscope-cuda.so"]
    return found


def prolog_globs():
    """The paths the TaskProlog tries, in its order (its `for h in ...` list)."""
    text = open(PROLOG).read()
    m = re.search(r"for h in (.*?); do", text, re.S)
    check(m, "the TaskProlog's search list")
    return m.group(1).replace("\\\n", " ").split()


def run_prolog(env):
    p = subprocess.run(["sh", PROLOG], capture_output=True, text=True, env=env,
                       timeout=scaled(30))
    eq(p.returncode, 0, "taskprolog.sh: %s" % p.stderr)
    return dict(re.findall(r"^export (\w+)=(.*)$", p.stdout, re.M))


def test_the_prolog_finds_the_installed_hook(wd):
    dest = tempfile.mkdtemp(prefix="jobscope-deploy-")
    try:
        found = install(dest)
        eq(len(found), 1, "the hook installed once: %r" % found)
        hook = found[0]
        globs = prolog_globs()
        check(any(fnmatch.fnmatchcase(hook, g) for g in globs),
              "the installed hook %s is among the TaskProlog's places %r" % (hook, globs))
        # the binary's default (jobscope run --cuda) is the same directory
        with open(os.path.join(BUILD, "jobscope"), "rb") as f:
            binary = f.read()
        check(os.path.dirname(hook).encode() + b"\0" in binary,
              "the binary's JOBSCOPE_HOOK_DIR is %s" % os.path.dirname(hook))

        sock_path = os.path.join(dest, "cuda.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(sock_path)
        srv.listen(1)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "JOBSCOPE_CUDA_HOOK": dest + hook, "JOBSCOPE_CUDA_SOCKET": sock_path,
               "JOBSCOPE_STATSD_SOCKET": os.path.join(dest, "no-statsd.sock")}
        eq(run_prolog(env), {"CUDA_INJECTION64_PATH": dest + hook,
                             "JOBSCOPE_CUDA_SOCKET": sock_path}, "the exports")
        eq(run_prolog(dict(env, CUDA_INJECTION64_PATH="/opt/nsys/libinject.so")), {},
           "a job's own CUDA_INJECTION64_PATH is kept")
        srv.close()
        os.unlink(sock_path)
        eq(run_prolog(env), {}, "no agent socket: nothing exported")
    finally:
        shutil.rmtree(dest, ignore_errors=True)


if __name__ == "__main__":
    run_tests(globals())
